//! Turning core and encoder failures into the module's exception classes.

use bytewright_graph::{ErrorKind, ReadError};
use pyo3::prelude::*;

use super::config::Config;

/// A decoding failure as the right `UnpicklingError` subclass.
pub fn read_error(py: Python<'_>, cfg: &Config, e: &ReadError) -> PyErr {
    let cls = match e.kind {
        ErrorKind::Malformed => &cfg.unpickling_error,
        ErrorKind::Limit => &cfg.limit_error,
        ErrorKind::Integrity => &cfg.integrity_error,
    };
    let message = if e.kind == ErrorKind::Integrity {
        e.message.clone()
    } else {
        e.to_string()
    };
    PyErr::from_type(cls.bind(py).clone(), message)
}

/// An `UnpicklingError` with `cause` (a Python exception raised while building) chained.
pub fn unpickling(py: Python<'_>, cfg: &Config, message: String, cause: Option<PyErr>) -> PyErr {
    let err = PyErr::from_type(cfg.unpickling_error.bind(py).clone(), message);
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
