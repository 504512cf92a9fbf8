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

    /// The first class of a list or tuple `classes=` for which `fits(qualname, class)`
    /// holds, read in place (nothing is built); `Err(())` when `classes=` is some other kind
    /// of iterable.
    fn find_in_sequence(
        &self,
        fits: impl Fn(&[u8], &Bound<'py, PyType>) -> PyResult<bool>,
    ) -> Result<PyResult<Option<Bound<'py, PyType>>>, ()> {
        let items: Vec<Bound<'py, PyAny>>;
        let items: &[Bound<'py, PyAny>] = if let Ok(tuple) = self.given.cast::<PyTuple>() {
            // A tuple's items never change: read in place.
            tuple.as_slice()
        } else if let Ok(list) = self.given.cast::<PyList>() {
            items = list.iter().collect();
            &items
        } else {
            return Err(());
        };
        for item in items {
            let Ok(ty) = item.cast::<PyType>() else {
                return Ok(Err(pyo3::exceptions::PyTypeError::new_err(
                    "classes= must hold classes",
                )));
            };
            let qualname = ty.qualname();
            match qualname.and_then(|q| fits(q.to_str()?.as_bytes(), ty)) {
                Ok(true) => return Ok(Ok(Some(ty.clone()))),
                Ok(false) => {}
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(None))
    }

    /// The class in a list or tuple whose `module.qualname` is `name`.
    fn find_named(&self, name: &str) -> Result<PyResult<Option<Bound<'py, PyType>>>, ()> {
        self.find_in_sequence(|qualname, ty| {
            let Some(module) = name
                .as_bytes()
                .strip_suffix(qualname)
                .and_then(|m| m.strip_suffix(b"."))
            else {
                return Ok(false);
            };
            Ok(ty.module()?.to_str()?.as_bytes() == module)
        })
    }

    /// The class in a list or tuple whose `module.qualname` is `module.name` (a class's
    /// module is read only when its qualname fits).
    fn find_parts(
        &self,
        module: &str,
        name: &str,
    ) -> Result<PyResult<Option<Bound<'py, PyType>>>, ()> {
        let (module, name) = (module.as_bytes(), name.as_bytes());
        self.find_in_sequence(|qualname, ty| {
            if !ends_joined(module, name, qualname) {
                return Ok(false);
            }
            let ty_module = ty.module()?;
            Ok(joined_eq(
                (ty_module.to_str()?.as_bytes(), qualname),
                (module, name),
            ))
        })
    }

    /// [`Self::get`] of `module.name`, given in two parts (joined only when needed).
    pub fn get_parts(
        &mut self,
        cfg: &Config,
        module: &str,
        name: &str,
    ) -> PyResult<Option<Bound<'py, PyType>>> {
        if self.map.is_none() {
            if let Ok(found) = self.find_parts(module, name) {
                return found;
            }
        }
        self.get(cfg, &format!("{module}.{name}"))
    }

    /// The allowed class recorded under `name`, if any.
    pub fn get(&mut self, cfg: &Config, name: &str) -> PyResult<Option<Bound<'py, PyType>>> {
        if self.map.is_none() {
            if let Ok(found) = self.find_named(name) {
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

/// True when `a.0 + "." + a.1` and `b.0 + "." + b.1` are the same text.
fn joined_eq(a: (&[u8], &[u8]), b: (&[u8], &[u8])) -> bool {
    if a.0.len() + a.1.len() != b.0.len() + b.1.len() {
        return false;
    }
    if a.0.len() == b.0.len() {
        return a.0 == b.0 && a.1 == b.1;
    }
    a.0.iter()
        .chain(b".")
        .chain(a.1)
        .eq(b.0.iter().chain(b".").chain(b.1))
}

/// True when `module + "." + name` ends with `"." + tail`.
fn ends_joined(module: &[u8], name: &[u8], tail: &[u8]) -> bool {
    use std::cmp::Ordering;
    match tail.len().cmp(&name.len()) {
        Ordering::Equal => tail == name,
        Ordering::Less => name.ends_with(tail) && name[name.len() - tail.len() - 1] == b'.',
        Ordering::Greater => {
            let (head, rest) = tail.split_at(tail.len() - name.len());
            rest == name
                && head.last() == Some(&b'.')
                && ends_joined_module(module, &head[..head.len() - 1])
        }
    }
}

/// True when `module` ends with `"." + tail`.
fn ends_joined_module(module: &[u8], tail: &[u8]) -> bool {
    module.len() > tail.len()
        && module.ends_with(tail)
        && module[module.len() - tail.len() - 1] == b'.'
}
