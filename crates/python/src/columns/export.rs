//! Tables, columns and schemas out through the Arrow PyCapsule interface.

use arrow_array::ffi::{to_ffi, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator};
use arrow_schema::{FieldRef, SchemaRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

fn ffi_err(e: arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(format!("cannot export to Arrow: {e}"))
}

/// An `arrow_array_stream` capsule over the batches. The capsule owns the stream: a
/// consumer moves it out; otherwise dropping the capsule releases it.
pub fn stream<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'py, PyAny>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let s = FFI_ArrowArrayStream::new(Box::new(reader));
    Ok(PyCapsule::new_with_value(py, s, c"arrow_array_stream")?.into_any())
}

/// An `arrow_schema` capsule.
pub fn schema<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyAny>> {
    let s = FFI_ArrowSchema::try_from(schema.as_ref()).map_err(ffi_err)?;
    Ok(PyCapsule::new_with_value(py, s, c"arrow_schema")?.into_any())
}

/// The (`arrow_schema`, `arrow_array`) capsule pair of one array under its field.
pub fn array<'py>(
    py: Python<'py>,
    field: &FieldRef,
    arr: &ArrayRef,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (a, _) = to_ffi(&arr.to_data()).map_err(ffi_err)?;
    let s = FFI_ArrowSchema::try_from(field.as_ref()).map_err(ffi_err)?;
    Ok((
        PyCapsule::new_with_value(py, s, c"arrow_schema")?.into_any(),
        PyCapsule::new_with_value(py, a, c"arrow_array")?.into_any(),
    ))
}
