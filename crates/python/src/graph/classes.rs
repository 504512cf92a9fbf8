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

    /// The `classes=` argument as given.
    pub fn given(&self) -> &Bound<'py, PyAny> {
        &self.given
    }

    fn map(&mut self, cfg: &Config) -> PyResult<&Bound<'py, PyDict>> {
        if self.map.is_none() {
            let py = self.given.py();
            let map = if let Ok(d) = self.given.cast::<PyDict>() {
                d.clone()
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

    /// The class in a list or tuple whose `module.qualname` is `name`, compared without
    /// building anything; `Err(())` when `classes=` is some other kind of iterable.
    fn find_in_sequence(&self, name: &str) -> Result<PyResult<Option<Bound<'py, PyType>>>, ()> {
        let items = if let Ok(list) = self.given.cast::<PyList>() {
            list.iter().collect::<Vec<_>>()
        } else if let Ok(tuple) = self.given.cast::<PyTuple>() {
            tuple.iter().collect::<Vec<_>>()
        } else {
            return Err(());
        };
        for item in items {
            let Ok(ty) = item.cast_into::<PyType>() else {
                return Ok(Err(pyo3::exceptions::PyTypeError::new_err(
                    "classes= must hold classes",
                )));
            };
            let matches = (|| -> PyResult<bool> {
                let qualname = ty.qualname()?;
                let qualname = qualname.to_str()?;
                let Some(module) = name
                    .strip_suffix(qualname)
                    .and_then(|m| m.strip_suffix('.'))
                else {
                    return Ok(false);
                };
                Ok(ty.module()?.to_str()? == module)
            })();
            match matches {
                Ok(true) => return Ok(Ok(Some(ty))),
                Ok(false) => {}
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(None))
    }

    /// The allowed class recorded under `name`, if any.
    pub fn get(&mut self, cfg: &Config, name: &str) -> PyResult<Option<Bound<'py, PyType>>> {
        if self.map.is_none() {
            if let Ok(found) = self.find_in_sequence(name) {
                return found;
            }
        }
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
