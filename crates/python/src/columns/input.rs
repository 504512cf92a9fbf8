//! What `pack_table` accepts, brought to Arrow arrays: Arrow PyCapsule objects (pyarrow,
//! polars, `bw.Table`, pandas), or mappings of column name to an Arrow array, a NumPy array
//! or a Python sequence.

use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{ArrayStreamReader, FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::ArrayReader;
use arrow_array::{make_array, Array, ArrayRef, RecordBatch, StructArray};
use arrow_buffer::Buffer;
use arrow_data::ArrayData;
use arrow_schema::DataType;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyMapping};

/// The input's rows: Arrow batches, or named columns of one length.
pub enum Input<'py> {
    Batches(Vec<RecordBatch>),
    Columns {
        names: Vec<String>,
        arrow: Vec<Option<ArrayRef>>,
        python: Vec<Option<Bound<'py, PyAny>>>,
        rows: usize,
    },
}

fn arrow_err(e: arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(format!("cannot read the Arrow data: {e}"))
}

fn capsule_ptr<T>(cap: &Bound<'_, PyAny>, name: &std::ffi::CStr) -> PyResult<*mut T> {
    let cap = cap.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err("the Arrow PyCapsule interface returned a non-capsule")
    })?;
    Ok(cap.pointer_checked(Some(name))?.as_ptr().cast::<T>())
}

/// Reads every batch of an object with `__arrow_c_stream__`.
fn from_stream(obj: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    let cap = obj.call_method0("__arrow_c_stream__")?;
    let ptr = capsule_ptr::<FFI_ArrowArrayStream>(&cap, c"arrow_array_stream")?;
    // SAFETY: the capsule holds a valid stream; `from_raw` moves it out and marks the
    // capsule's copy released, so its destructor does nothing.
    let reader = unsafe { RecordBatchStreamReader::from_raw(ptr) }.map_err(arrow_err)?;
    reader.collect::<Result<Vec<_>, _>>().map_err(arrow_err)
}

/// The chunks of an object whose `__arrow_c_stream__` streams arrays (a chunked array, a
/// polars Series), as one array.
fn from_array_stream(obj: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let cap = obj.call_method0("__arrow_c_stream__")?;
    let ptr = capsule_ptr::<FFI_ArrowArrayStream>(&cap, c"arrow_array_stream")?;
    // SAFETY: as in `from_stream`.
    let reader = unsafe { ArrayStreamReader::from_raw(ptr) }.map_err(arrow_err)?;
    let dt = reader.field().data_type().clone();
    let chunks = reader.collect::<Result<Vec<_>, _>>().map_err(arrow_err)?;
    match chunks.len() {
        0 => Ok(arrow_array::new_empty_array(&dt)),
        1 => Ok(chunks.into_iter().next().expect("one chunk")),
        _ => {
            let parts: Vec<&dyn Array> = chunks.iter().map(|c| c.as_ref()).collect();
            arrow_select::concat::concat(&parts).map_err(arrow_err)
        }
    }
}

/// The array of an object with `__arrow_c_array__`.
fn from_array(obj: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let pair = obj.call_method0("__arrow_c_array__")?;
    let (schema_cap, array_cap): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
    let sp = capsule_ptr::<FFI_ArrowSchema>(&schema_cap, c"arrow_schema")?;
    let ap = capsule_ptr::<FFI_ArrowArray>(&array_cap, c"arrow_array")?;
    // SAFETY: both capsules hold valid structs; the array is moved out (its release set to
    // NULL in the capsule) and the schema is only borrowed.
    let data = unsafe {
        let array = std::ptr::replace(ap, FFI_ArrowArray::empty());
        from_ffi(array, &*sp)
    }
    .map_err(arrow_err)?;
    Ok(make_array(data))
}

/// Keeps a NumPy array alive while an Arrow buffer views its memory.
struct Owner(#[allow(dead_code)] Py<PyAny>);
// The array is only held (and released), never touched, so unwinding cannot see it in a
// broken state.
impl std::panic::RefUnwindSafe for Owner {}

/// A 1-D NumPy array of fixed-width numbers or bools as an Arrow array (no copy when it is
/// contiguous and in native byte order).
fn from_numpy(obj: &Bound<'_, PyAny>) -> PyResult<Option<ArrayRef>> {
    if !obj.hasattr("dtype")? || !obj.hasattr("__array_interface__")? {
        return Ok(None);
    }
    let dtype = obj.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let size: usize = dtype.getattr("itemsize")?.extract()?;
    let ndim: usize = obj.getattr("ndim")?.extract()?;
    let dt = match (kind.as_str(), size) {
        ("i", 1) => DataType::Int8,
        ("i", 2) => DataType::Int16,
        ("i", 4) => DataType::Int32,
        ("i", 8) => DataType::Int64,
        ("u", 1) => DataType::UInt8,
        ("u", 2) => DataType::UInt16,
        ("u", 4) => DataType::UInt32,
        ("u", 8) => DataType::UInt64,
        ("f", 2) => DataType::Float16,
        ("f", 4) => DataType::Float32,
        ("f", 8) => DataType::Float64,
        ("b", 1) => DataType::Boolean,
        _ => return Ok(None),
    };
    if ndim != 1 {
        return Err(PyValueError::new_err(format!(
            "a NumPy column must be 1-dimensional, got {ndim} dimensions"
        )));
    }
    let np = obj.py().import("numpy")?;
    // Native byte order and contiguous (a copy only when the array is not already), so
    // its memory holds the values as Arrow lays them out.
    let native = np.call_method1(
        "ascontiguousarray",
        (obj, dtype.call_method1("newbyteorder", ("=",))?),
    )?;
    let n: usize = native.len()?;
    let (addr, _): (usize, bool) = native
        .getattr("__array_interface__")?
        .get_item("data")?
        .extract()?;
    let data = if dt == DataType::Boolean {
        let bytes: Vec<u8> = native.call_method0("tobytes")?.extract()?;
        let bits = arrow_buffer::BooleanBuffer::collect_bool(n, |i| bytes[i] != 0);
        ArrayData::builder(dt).len(n).add_buffer(bits.into_inner())
    } else {
        let len = n * size;
        let buffer = match std::ptr::NonNull::new(addr as *mut u8) {
            // SAFETY: `addr` is the start of the contiguous array's `len` bytes; the owner
            // keeps the array (and so its memory) alive as long as the buffer.
            Some(ptr) if addr % size == 0 => unsafe {
                Buffer::from_custom_allocation(
                    ptr,
                    len,
                    std::sync::Arc::new(Owner(native.unbind())),
                )
            },
            _ => {
                let bytes: Vec<u8> = native.call_method0("tobytes")?.extract()?;
                Buffer::from_vec(bytes)
            }
        };
        ArrayData::builder(dt).len(n).add_buffer(buffer)
    };
    Ok(Some(make_array(data.build().map_err(arrow_err)?)))
}

/// Brings `table` to Arrow batches or named columns.
pub fn read<'py>(table: &Bound<'py, PyAny>) -> PyResult<Input<'py>> {
    if table.hasattr("__arrow_c_stream__")? {
        return Ok(Input::Batches(from_stream(table)?));
    }
    if table.hasattr("__arrow_c_array__")? {
        let arr = from_array(table)?;
        let s = arr
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "an Arrow array given as a table must be a struct array, got {}",
                    super::type_name(arr.data_type())
                ))
            })?
            .clone();
        return Ok(Input::Batches(vec![RecordBatch::from(s)]));
    }
    let mapping = if let Ok(m) = table.cast::<PyMapping>() {
        m.clone().into_any()
    } else if table.hasattr("columns")? && table.hasattr("to_dict")? {
        // A DataFrame-like object without the Arrow interface: its columns by name.
        let cols = table.getattr("columns")?;
        let d = pyo3::types::PyDict::new(table.py());
        for name in cols.try_iter()? {
            let name = name?;
            let series = table.get_item(&name)?;
            let values = if series.hasattr("to_numpy")? {
                series.call_method0("to_numpy")?
            } else {
                series
            };
            d.set_item(name.str()?, values)?;
        }
        d.into_any()
    } else {
        return Err(PyTypeError::new_err(format!(
            "pack_table takes an Arrow table or record batch (anything with __arrow_c_stream__ or __arrow_c_array__), a pandas DataFrame, or a mapping of column name to values, got {}",
            table.get_type().name()?
        )));
    };
    let mut names = Vec::new();
    let mut arrow = Vec::new();
    let mut python = Vec::new();
    let mut rows: Option<(usize, String)> = None;
    for item in mapping.call_method0("items")?.try_iter()? {
        let (name, values): (String, Bound<'py, PyAny>) = item?.extract()?;
        let (a, p, n) = if values.hasattr("__arrow_c_array__")? {
            let a = from_array(&values)?;
            let n = a.len();
            (Some(a), None, n)
        } else if values.hasattr("__arrow_c_stream__")? {
            let a = from_array_stream(&values)?;
            let n = a.len();
            (Some(a), None, n)
        } else if let Some(a) = from_numpy(&values)? {
            let n = a.len();
            (Some(a), None, n)
        } else {
            let n =
                values.len().map_err(|_| {
                    PyTypeError::new_err(format!(
                    "column '{name}': expected a sequence, a NumPy array or an Arrow array, got {}",
                    values.get_type().name().map(|s| s.to_string()).unwrap_or_default()
                ))
                })?;
            (None, Some(values), n)
        };
        if let Some((m, first)) = &rows {
            if *m != n {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "column '{name}' has {n} rows, but column '{first}' has {m}"
                )));
            }
        } else {
            rows = Some((n, name.clone()));
        }
        names.push(name);
        arrow.push(a);
        python.push(p);
    }
    Ok(Input::Columns {
        names,
        arrow,
        python,
        rows: rows.map_or(0, |(n, _)| n),
    })
}
