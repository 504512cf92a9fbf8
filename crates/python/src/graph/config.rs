//! Python objects the adapter needs, handed over once by `bytewright.pickle` at import.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

pub struct Config {
    pub pickling_error: Py<PyType>,
    pub unpickling_error: Py<PyType>,
    pub integrity_error: Py<PyType>,
    pub limit_error: Py<PyType>,
    /// `describe(cls) -> ClassInfo`.
    pub describe: Py<PyAny>,
    /// `type -> (kind, reducer)` for standard-library value types.
    pub reducers: Py<PyDict>,
    /// `kind -> builder`.
    pub builders: Py<PyDict>,
    /// defaultdict factories; the index is the format code.
    pub factories: Py<PyTuple>,
    pub ordered_dict: Py<PyType>,
    pub counter: Py<PyType>,
    pub default_dict: Py<PyType>,
    pub deque: Py<PyType>,
    /// `pickle.Limits`.
    pub limits_type: Py<PyType>,
    /// `class_map(classes) -> dict[str, type]`, for `classes=` that is not a dict, list or tuple.
    pub class_map: Py<PyAny>,
}

static CONFIG: PyOnceLock<Config> = PyOnceLock::new();

pub fn get(py: Python<'_>) -> PyResult<&'static Config> {
    CONFIG
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("import bytewright.pickle first"))
}

/// Called once by `bytewright.pickle` at import.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn graph_configure(
    py: Python<'_>,
    errors: (Py<PyType>, Py<PyType>, Py<PyType>, Py<PyType>),
    describe: Py<PyAny>,
    reducers: Py<PyDict>,
    builders: Py<PyDict>,
    factories: Py<PyTuple>,
    collections: (Py<PyType>, Py<PyType>, Py<PyType>, Py<PyType>),
    limits_type: Py<PyType>,
    class_map: Py<PyAny>,
) -> PyResult<()> {
    let config = Config {
        pickling_error: errors.0,
        unpickling_error: errors.1,
        integrity_error: errors.2,
        limit_error: errors.3,
        describe,
        reducers,
        builders,
        factories,
        ordered_dict: collections.0,
        counter: collections.1,
        default_dict: collections.2,
        deque: collections.3,
        limits_type,
        class_map,
    };
    // A second import (e.g. importlib.reload) keeps the first configuration.
    let _ = CONFIG.set(py, config);
    Ok(())
}
