//! Python objects the adapter needs, imported by name the first time one is needed (the
//! one way objects reach the native side; see the crate documentation).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

pub struct Config {
    pub pickling_error: Py<PyType>,
    pub unpickling_error: Py<PyType>,
    pub integrity_error: Py<PyType>,
    pub limit_error: Py<PyType>,
    /// The `UnpicklingError` subclasses that are also `EOFError`, `ValueError`,
    /// `TypeError` and `OverflowError`.
    pub truncated_error: Py<PyType>,
    pub value_error: Py<PyType>,
    pub type_error: Py<PyType>,
    pub overflow_error: Py<PyType>,
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
    /// The builtins table (`name -> value`) of BUILTIN and EXCEPTION records, and its
    /// inverse (`value -> name`).
    pub builtins: Py<PyDict>,
    pub builtin_names: Py<PyDict>,
    /// `exception_state(exc) -> (args, state)` and `restore_exception(exc, state)`.
    pub exception_state: Py<PyAny>,
    pub restore_exception: Py<PyAny>,
    /// `pickle.Limits`.
    pub limits_type: Py<PyType>,
    /// `class_map(classes) -> dict[str, type]`, for `classes=` that is not a dict, list or tuple.
    pub class_map: Py<PyAny>,
}

static CONFIG: PyOnceLock<Config> = PyOnceLock::new();

/// The objects, imported on the first call (a failed import is raised and retried next time).
#[inline]
pub fn get(py: Python<'_>) -> PyResult<&'static Config> {
    CONFIG.get_or_try_init(py, || import(py))
}

#[cold]
fn import(py: Python<'_>) -> PyResult<Config> {
    let errors = py.import("bytewright.pickle._errors")?;
    let classes = py.import("bytewright.pickle._classes")?;
    let stdlib = py.import("bytewright.pickle._stdlib")?;
    let collections = py.import("collections")?;
    let limits = py.import("bytewright.pickle._limits")?;
    let get = |m: &Bound<'_, PyModule>, name: &str| -> PyResult<Py<PyAny>> {
        Ok(m.getattr(name)?.unbind())
    };
    let ty = |m: &Bound<'_, PyModule>, name: &str| -> PyResult<Py<PyType>> {
        Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
    };
    Ok(Config {
        pickling_error: ty(&errors, "PicklingError")?,
        unpickling_error: ty(&errors, "UnpicklingError")?,
        integrity_error: ty(&errors, "IntegrityError")?,
        limit_error: ty(&errors, "LimitError")?,
        truncated_error: ty(&errors, "TruncatedError")?,
        value_error: ty(&errors, "UnpicklingValueError")?,
        type_error: ty(&errors, "UnpicklingTypeError")?,
        overflow_error: ty(&errors, "UnpicklingOverflowError")?,
        describe: get(&classes, "describe")?,
        reducers: stdlib.getattr("REDUCERS")?.cast_into::<PyDict>()?.unbind(),
        builders: stdlib.getattr("BUILDERS")?.cast_into::<PyDict>()?.unbind(),
        factories: stdlib
            .getattr("DEFAULT_FACTORIES")?
            .cast_into::<PyTuple>()?
            .unbind(),
        builtins: stdlib.getattr("BUILTINS")?.cast_into::<PyDict>()?.unbind(),
        builtin_names: stdlib
            .getattr("BUILTIN_NAMES")?
            .cast_into::<PyDict>()?
            .unbind(),
        exception_state: get(&stdlib, "exception_state")?,
        restore_exception: get(&stdlib, "restore_exception")?,
        ordered_dict: ty(&collections, "OrderedDict")?,
        counter: ty(&collections, "Counter")?,
        default_dict: ty(&collections, "defaultdict")?,
        deque: ty(&collections, "deque")?,
        limits_type: ty(&limits, "Limits")?,
        class_map: get(&classes, "class_map")?,
    })
}
