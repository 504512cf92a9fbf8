//! Resolving `classes=` lazily: only a payload that holds class records pays for it.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use super::config::Config;

/// The `classes=` argument, turned into a name -> class dict on first use.
pub struct AllowedClasses<'py> {
    given: Bound<'py, PyAny>,
    map: Option<Bound<'py, PyDict>>,
}

impl<'py> AllowedClasses<'py> {
    pub fn new(given: Bound<'py, PyAny>) -> Self {
        Self { given, map: None }
    }

    fn map(&mut self, cfg: &Config) -> PyResult<&Bound<'py, PyDict>> {
        if self.map.is_none() {
            let py = self.given.py();
            let map = if let Ok(d) = self.given.cast::<PyDict>() {
                d.clone()
            } else if self.given.is_instance_of::<PyList>()
                || self.given.is_instance_of::<PyTuple>()
            {
                let d = PyDict::new(py);
                for cls in self.given.try_iter()? {
                    let cls = cls?;
                    let ty = cls.cast::<PyType>().map_err(|_| {
                        pyo3::exceptions::PyTypeError::new_err(format!(
                            "classes= must hold classes, not {cls}"
                        ))
                    })?;
                    let name = format!("{}.{}", ty.module()?, ty.qualname()?);
                    d.set_item(name, ty)?;
                }
                d
            } else {
                cfg.class_map
                    .bind(py)
                    .call1((&self.given,))?
                    .cast_into::<PyDict>()?
            };
            self.map = Some(map);
        }
        match &self.map {
            Some(map) => Ok(map),
            None => unreachable!(),
        }
    }

    /// The allowed class recorded under `name`, if any.
    pub fn get(&mut self, cfg: &Config, name: &str) -> PyResult<Option<Bound<'py, PyType>>> {
        match self.map(cfg)?.get_item(name)? {
            None => Ok(None),
            Some(cls) => cls.cast_into::<PyType>().map(Some).map_err(|e| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "classes[{name:?}] is not a class: {e}"
                ))
            }),
        }
    }
}
