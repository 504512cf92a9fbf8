//! Arrow values -> Python objects, as pyarrow's `to_pylist` gives them.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::Array;
use arrow_schema::DataType;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyNone};

use super::obj;

/// The Python value of row `i` of `arr`.
pub fn value(py: Python<'_>, arr: &dyn Array, i: usize) -> PyResult<Py<PyAny>> {
    if arr.is_null(i) {
        return Ok(PyNone::get(py).to_owned().into_any().unbind());
    }
    match arr.data_type() {
        DataType::Int8 => obj(py, arr.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => obj(py, arr.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => obj(py, arr.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => obj(py, arr.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => obj(py, arr.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => obj(py, arr.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => obj(py, arr.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => obj(py, arr.as_primitive::<UInt64Type>().value(i)),
        DataType::Float16 => obj(py, f64::from(arr.as_primitive::<Float16Type>().value(i))),
        DataType::Float32 => obj(py, f64::from(arr.as_primitive::<Float32Type>().value(i))),
        DataType::Float64 => obj(py, arr.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => obj(py, arr.as_boolean().value(i)),
        DataType::FixedSizeBinary(_) => {
            obj(py, PyBytes::new(py, arr.as_fixed_size_binary().value(i)))
        }
        DataType::Binary => obj(py, PyBytes::new(py, arr.as_binary::<i32>().value(i))),
        DataType::LargeBinary => obj(py, PyBytes::new(py, arr.as_binary::<i64>().value(i))),
        DataType::Utf8 => obj(py, arr.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => obj(py, arr.as_string::<i64>().value(i)),
        DataType::Struct(fields) => {
            let s = arr.as_struct();
            let d = PyDict::new(py);
            for (f, c) in fields.iter().zip(s.columns()) {
                d.set_item(f.name(), value(py, c.as_ref(), i)?)?;
            }
            obj(py, d)
        }
        DataType::List(_) => list(py, &arr.as_list::<i32>().value(i)),
        DataType::LargeList(_) => list(py, &arr.as_list::<i64>().value(i)),
        DataType::FixedSizeList(_, _) => list(py, &arr.as_fixed_size_list().value(i)),
        DataType::Dictionary(k, _) if **k == DataType::Int8 => {
            let d = arr.as_dictionary::<Int8Type>();
            value(py, d.values().as_ref(), d.keys().value(i) as usize)
        }
        DataType::Dictionary(k, _) if **k == DataType::Int32 => {
            let d = arr.as_dictionary::<Int32Type>();
            value(py, d.values().as_ref(), d.keys().value(i) as usize)
        }
        other => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "no Python value for Arrow type {other}"
        ))),
    }
}

fn list(py: Python<'_>, items: &arrow_array::ArrayRef) -> PyResult<Py<PyAny>> {
    let out = PyList::empty(py);
    for k in 0..items.len() {
        out.append(value(py, items.as_ref(), k)?)?;
    }
    obj(py, out)
}
