//! Core errors -> the Python exceptions of `bytewright.errors`.

use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyInt, PyType};

use bytewright_wire::compile::{check_align, closest, SchemaError};
use bytewright_wire::{Error, Kind};

pub enum Mode {
    Unpack,
    Pack,
    /// `pack` into a growing bytes object: running out of room is an allocation failure.
    PackGrowable,
}

static SCHEMA_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static PACK_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DECODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INCOMPLETE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyType>> {
    cell.import(py, "bytewright.errors", name)
}

fn build(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    args: impl for<'a> FnOnce(&Bound<'a, PyType>) -> PyResult<Bound<'a, PyAny>>,
) -> PyErr {
    match class(py, cell, name).and_then(args) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

pub fn schema_error(py: Python<'_>, msg: String) -> PyErr {
    build(py, &SCHEMA_ERROR, "SchemaError", |c| c.call1((msg,)))
}

/// The compiler's typed error as a `bytewright.SchemaError` with `kind`, `path`, `name` and
/// `suggestion` attributes.
pub fn compile_error(py: Python<'_>, e: SchemaError) -> PyErr {
    build(py, &SCHEMA_ERROR, "SchemaError", |c| {
        let kwargs = PyDict::new(c.py());
        kwargs.set_item("kind", e.kind.as_str())?;
        kwargs.set_item("name", e.name)?;
        kwargs.set_item("suggestion", e.suggestion)?;
        c.call((e.message, e.path), Some(&kwargs))
    })
}

/// `bytewright._native.suggest(name, options)`: the nearest option, or None (the rule of
/// every "did you mean" in schema errors, Rust's and Python's).
#[pyfunction]
fn suggest(name: &str, options: Vec<String>) -> Option<String> {
    closest(name, options)
}

/// `bytewright._native.check_align(value, where)`: the `align=` value as an int, or the
/// compiler's SchemaError for it (raised at class creation, before any compile).
#[pyfunction]
#[pyo3(name = "check_align", signature = (value, at))]
pub(crate) fn check_align_py(py: Python<'_>, value: &Bound<'_, PyAny>, at: &str) -> PyResult<u64> {
    // A bool is an int to Python but never an alignment.
    let n = if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        None
    } else {
        // Beyond i128 is out of range anyway.
        Some(value.extract::<i128>().unwrap_or(i128::MAX))
    };
    check_align(n, &value.repr()?.to_string())
        .map_err(|m| schema_error_at(py, format!("{at}: {m}"), at))
}

fn schema_error_at(py: Python<'_>, msg: String, path: &str) -> PyErr {
    build(py, &SCHEMA_ERROR, "SchemaError", |c| c.call1((msg, path)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(suggest, m)?)?;
    m.add_function(wrap_pyfunction!(check_align_py, m)?)?;
    Ok(())
}

pub fn pack_error(py: Python<'_>, msg: String, path: &str) -> PyErr {
    build(py, &PACK_ERROR, "PackError", |c| c.call1((msg, path)))
}

pub fn decode_error(py: Python<'_>, msg: String, path: &str, offset: usize) -> PyErr {
    build(py, &DECODE_ERROR, "DecodeError", |c| {
        c.call1((msg, path, offset))
    })
}

/// A `bytewright.Incomplete` telling how many more bytes the next step needs.
pub fn incomplete<'py>(py: Python<'py>, e: &Error<PyErr>) -> PyResult<Bound<'py, PyAny>> {
    let needed = match e.kind {
        Kind::Short { need, left, .. } => need.saturating_sub(left).max(1),
        _ => 1,
    };
    class(py, &INCOMPLETE, "Incomplete")?.call1((needed,))
}

pub fn raise(py: Python<'_>, e: Error<PyErr>, mode: Mode) -> PyErr {
    let path = e.path();
    match (&e.kind, &mode) {
        (Kind::Host(err), Mode::Unpack)
            if err.is_instance_of::<pyo3::exceptions::PyMemoryError>(py)
                || !err.is_instance_of::<pyo3::exceptions::PyException>(py) =>
        {
            match e.kind {
                Kind::Host(err) => err,
                _ => unreachable!(),
            }
        }
        (Kind::Host(err), Mode::Unpack) => {
            // A converter rejected a decoded value: the input is invalid for this schema.
            let text = err.to_string();
            let msg = if path.is_empty() {
                text
            } else {
                format!("{path}: {text}")
            };
            let exc = decode_error(py, msg, &path, e.offset);
            if let Kind::Host(cause) = e.kind {
                exc.set_cause(py, Some(cause));
            }
            exc
        }
        (Kind::Host(_), _) => {
            let msg = match &e.kind {
                Kind::Host(err) => {
                    let text = err.to_string();
                    if path.is_empty() {
                        text
                    } else {
                        format!("{path}: {text}")
                    }
                }
                _ => unreachable!(),
            };
            let exc = pack_error(py, msg, &path);
            if let Kind::Host(cause) = e.kind {
                exc.set_cause(py, Some(cause));
            }
            exc
        }
        (Kind::Full { .. }, Mode::PackGrowable) => {
            PyMemoryError::new_err("cannot grow the output buffer")
        }
        (_, Mode::Unpack) => decode_error(py, e.message(), &path, e.offset),
        _ => pack_error(py, e.message(), &path),
    }
}
