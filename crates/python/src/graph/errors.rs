//! Turning core and encoder failures into the module's exception classes.

use bytewright_graph::{ErrorKind, ReadError};
use pyo3::exceptions::{PyEOFError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use super::config::Config;

/// A decoding failure as the right `UnpicklingError` subclass, its `offset` set.
pub fn read_error(py: Python<'_>, cfg: &Config, e: &ReadError) -> PyErr {
    let cls = match e.kind {
        ErrorKind::Malformed => &cfg.unpickling_error,
        ErrorKind::Limit => &cfg.limit_error,
        ErrorKind::Integrity => &cfg.integrity_error,
        ErrorKind::Truncated => &cfg.truncated_error,
        ErrorKind::Value => &cfg.value_error,
        ErrorKind::Type => &cfg.type_error,
        ErrorKind::Overflow => &cfg.overflow_error,
    };
    if e.kind == ErrorKind::Integrity {
        return PyErr::from_type(cls.bind(py).clone(), e.message.clone());
    }
    with_offset(cls.bind(py), e.to_string(), Some(e.offset))
}

/// An exception of `cls` (an `UnpicklingError` subclass) with its `offset` attribute.
fn with_offset(cls: &Bound<'_, PyType>, message: String, offset: Option<usize>) -> PyErr {
    let exc = match cls.call1((message,)) {
        Ok(exc) => exc,
        Err(e) => return e,
    };
    if let Some(offset) = offset {
        if let Err(e) = exc.setattr("offset", offset) {
            return e;
        }
    }
    PyErr::from_value(exc)
}

/// Sets the `offset` of an error raised while building a value at that offset, unless
/// it already has one.
pub fn locate(py: Python<'_>, err: &PyErr, offset: usize) {
    let value = err.value(py);
    if value.getattr("offset").is_ok_and(|o| o.is_none()) {
        let _ = value.setattr("offset", offset);
    }
}

/// An `UnpicklingError` with `cause` (a Python exception raised while building) chained;
/// where `cause` is an `EOFError`, `ValueError`, `TypeError` or `OverflowError`, the
/// error is also one, as `pickle.loads` would have raised it.
pub fn unpickling(py: Python<'_>, cfg: &Config, message: String, cause: Option<PyErr>) -> PyErr {
    let cls = match &cause {
        Some(c) if c.is_instance_of::<PyEOFError>(py) => &cfg.truncated_error,
        Some(c) if c.is_instance_of::<PyValueError>(py) => &cfg.value_error,
        Some(c) if c.is_instance_of::<PyTypeError>(py) => &cfg.type_error,
        Some(c) if c.is_instance_of::<PyOverflowError>(py) => &cfg.overflow_error,
        _ => &cfg.unpickling_error,
    };
    let err = with_offset(cls.bind(py), message, None);
    if let Some(cause) = cause {
        err.set_cause(py, Some(cause));
    }
    err
}

/// One step of the path from the root to the object that could not be pickled.
pub enum Step {
    Index(usize),
    Key(String),
    Attr(String),
}

/// An encoder failure; the path is collected while unwinding, so success pays nothing.
pub struct EncodeError {
    pub message: String,
    pub cause: Option<PyErr>,
    pub path: Vec<Step>,
}

impl EncodeError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cause: None,
            path: Vec::new(),
        }
    }

    pub fn caused(message: impl Into<String>, cause: PyErr) -> Self {
        Self {
            message: message.into(),
            cause: Some(cause),
            path: Vec::new(),
        }
    }

    pub fn at(mut self, step: Step) -> Self {
        self.path.push(step);
        self
    }

    pub fn into_py(self, py: Python<'_>, cfg: &Config) -> PyErr {
        if let Some(cause) = &self.cause {
            // KeyboardInterrupt and SystemExit pass through untouched.
            if !cause.is_instance_of::<pyo3::exceptions::PyException>(py) {
                return cause.clone_ref(py);
            }
        }
        let mut path = String::from("$");
        for step in self.path.iter().rev() {
            match step {
                Step::Index(i) => path.push_str(&format!("[{i}]")),
                Step::Key(k) => path.push_str(&format!("[{k}]")),
                Step::Attr(a) => path.push_str(&format!(".{a}")),
            }
        }
        let err = PyErr::from_type(
            cfg.pickling_error.bind(py).clone(),
            format!("{} (at {path})", self.message),
        );
        if let Some(cause) = self.cause {
            err.set_cause(py, Some(cause));
        }
        err
    }
}
