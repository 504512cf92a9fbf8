//! Classes as values, the builtins table, builtin exceptions and instances of subclasses of
//! builtin types (CLASS, BUILTIN, EXCEPTION and DERIVED records).
//!
//! What runs: the builtin types' own constructors (`cls(*args)` of a builtin exception
//! class, the base type's `tp_new`) and setters, never a method of a class of yours;
//! a registered class's `__setstate__` runs, as for OBJECT records, once the whole record
//! has been read.

use bytewright_graph::tags::base;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

use super::{base_type, Builder, Frame, Made};

/// The name of the builtin base of a `DERIVED` base code, for messages.
fn base_name(code: u8) -> &'static str {
    match code {
        base::DICT => "dict",
        base::LIST => "list",
        base::SET => "set",
        base::FROZENSET => "frozenset",
        base::TUPLE => "tuple",
        base::STR => "str",
        base::BYTES => "bytes",
        base::INT => "int",
        base::FLOAT => "float",
        _ => "?",
    }
}

impl<'py> Builder<'py, '_> {
    /// The registered class of a CLASS record.
    pub(super) fn class_value(&mut self, class: usize) -> PyResult<Bound<'py, PyAny>> {
        self.resolve_any(class)?;
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        Ok(r.cls.bind(self.py).clone().into_any())
    }

    /// The value of a BUILTIN record.
    pub(super) fn builtin(&self, name: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let name = String::from_utf8_lossy(name);
        match self.cfg.builtins.bind(self.py).get_item(&*name)? {
            Some(v) => Ok(v),
            None => Err(self.fail(
                format!("BUILTIN record: '{name}' is not in the builtins table"),
                None,
            )),
        }
    }

    /// Starts an EXCEPTION record: its arguments come first.
    pub(super) fn start_exception(&mut self, name: &[u8]) -> PyResult<()> {
        let text = String::from_utf8_lossy(name);
        let found = self.cfg.builtins.bind(self.py).get_item(&*text)?;
        let cls = found
            .and_then(|v| v.cast_into::<PyType>().ok())
            .filter(|cls| {
                cls.is_subclass_of::<pyo3::exceptions::PyBaseException>()
                    .unwrap_or(false)
            });
        let Some(cls) = cls else {
            return Err(self.fail(
                format!("EXCEPTION record: '{text}' is not a builtin exception class"),
                None,
            ));
        };
        let slot = self.share_later();
        self.frames.push(Frame::Made {
            made: Made::Exception(cls),
            obj: None,
            slot,
            items: 0,
            state: None,
        });
        self.frames.push(Frame::Seed { value: None });
        Ok(())
    }

    /// Starts a DERIVED record: a mutable base's instance is made now (its items may refer
    /// to it), the others from the value that comes first.
    pub(super) fn start_derived(&mut self, class: usize, code: u8, len: usize) -> PyResult<()> {
        self.resolve_any(class)?;
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        if r.base_code != code || code == 0 {
            let has = match &r.builtin_base {
                Some(b) => format!("subclasses the built-in type '{b}'"),
                None => "subclasses no built-in type".to_string(),
            };
            return Err(self.fail(
                format!(
                    "DERIVED record of class '{}' holds a {}, but the class {has}",
                    r.name,
                    base_name(code)
                ),
                None,
            ));
        }
        if !base::is_mutable(code) {
            let slot = self.share_later();
            self.frames.push(Frame::Made {
                made: Made::Derived { class, base: code },
                obj: None,
                slot,
                items: 0,
                state: None,
            });
            self.frames.push(Frame::Seed { value: None });
            return Ok(());
        }
        // SAFETY: the base type's own allocator with no arguments, for a class defined in
        // Python whose first builtin base is that type (checked above): it makes an empty
        // instance, as `dict.__new__(cls)` does, and runs no code of the class.
        let p = unsafe {
            match (*base_type(code)).tp_new {
                Some(new) => new(
                    r.cls.as_ptr().cast::<pyo3::ffi::PyTypeObject>(),
                    self.empty_tuple.as_ptr(),
                    std::ptr::null_mut(),
                ),
                None => std::ptr::null_mut(),
            }
        };
        let what = format!("an instance of '{}'", r.name);
        let obj = self.owned(&what, p)?;
        self.share_now(&obj);
        let per_item = if code == base::DICT { 2 } else { 1 };
        self.frames.push(Frame::Made {
            made: Made::Derived { class, base: code },
            obj: Some(obj),
            slot: None,
            items: per_item * len,
            state: None,
        });
        Ok(())
    }

    /// Makes the exception or immutable instance of the `Made` frame on top from the value
    /// its `Seed` frame took.
    pub(super) fn made_from(
        &mut self,
        value: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let Some(value) = value else {
            return Err(self.fail("a record lacks the value it is made from".into(), None));
        };
        let made = match self.frames.last() {
            Some(Frame::Made { made, .. }) => match made {
                Made::Exception(cls) => Err(cls.clone()),
                Made::Derived { class, base } => Ok((*class, *base)),
            },
            _ => return Err(self.fail("a value made outside its record".into(), None)),
        };
        match made {
            Err(cls) => {
                let what = format!(
                    "an exception of class '{}'",
                    cls.qualname().map(|n| n.to_string()).unwrap_or_default()
                );
                let Ok(args) = value.cast_into_exact::<PyTuple>() else {
                    return Err(self.fail(
                        format!("EXCEPTION record: the arguments of {what} must be a tuple"),
                        None,
                    ));
                };
                // A builtin exception class: its own constructor, as pickle calls it.
                let exc = cls.call1(args);
                self.wrap(&what, exc)
            }
            Ok((class, code)) => {
                let Some(r) = &self.resolved[class] else {
                    unreachable!()
                };
                if value.get_type().as_type_ptr() != base_type(code) {
                    return Err(self.fail(
                        format!(
                            "DERIVED record of class '{}': its value must be a {}, not {}",
                            r.name,
                            base_name(code),
                            value
                                .get_type()
                                .qualname()
                                .map(|n| n.to_string())
                                .unwrap_or_default()
                        ),
                        None,
                    ));
                }
                let what = format!("an instance of '{}'", r.name);
                let cls = r.cls.bind(self.py).clone();
                let args = PyTuple::new(py, [value])?;
                // SAFETY: the base type's own constructor, called as `base.__new__(cls,
                // value)` with a value of exactly that type: it copies the value into a new
                // instance of cls (a class defined in Python whose first builtin base is
                // that type) and runs no code of the class.
                let p = unsafe {
                    match (*base_type(code)).tp_new {
                        Some(new) => new(cls.as_type_ptr(), args.as_ptr(), std::ptr::null_mut()),
                        None => std::ptr::null_mut(),
                    }
                };
                self.owned(&what, p)
            }
        }
    }

    /// Takes a value into the `Made` frame on top: the object its `Seed` made, an item, or
    /// the state.
    pub(super) fn deliver_to_made(&mut self, value: Bound<'py, PyAny>) -> PyResult<()> {
        let py = self.py;
        let Some(Frame::Made {
            made,
            obj,
            slot,
            items,
            state,
        }) = self.frames.last_mut()
        else {
            unreachable!()
        };
        let Some(target) = obj else {
            let slot = slot.take();
            *obj = Some(value.clone());
            self.fill(slot, &value);
            return Ok(());
        };
        if *items == 0 {
            if state.replace(value).is_some() {
                return Err(self.fail("a record holds one state".into(), None));
            }
            return Ok(());
        }
        *items -= 1;
        let code = match made {
            Made::Derived { base, .. } => *base,
            Made::Exception(_) => 0,
        };
        let target = target.as_ptr();
        // SAFETY: `target` is a live instance of a subclass of the base type of `code`
        // (made by that type's allocator); the base type's own C API fills it, without
        // calling methods the class may override; each call takes its own references.
        let rc = unsafe {
            match code {
                base::DICT => match state.take() {
                    None => {
                        *state = Some(value);
                        return Ok(());
                    }
                    Some(k) => ffi::PyDict_SetItem(target, k.as_ptr(), value.as_ptr()),
                },
                base::LIST => ffi::PyList_Append(target, value.as_ptr()),
                base::SET => ffi::PySet_Add(target, value.as_ptr()),
                _ => return Err(self.fail("items in a record that holds none".into(), None)),
            }
        };
        if rc < 0 {
            let e = PyErr::fetch(py);
            return self.wrap(base_name(code), Err(e));
        }
        Ok(())
    }

    /// Gives a made exception or instance its state.
    pub(super) fn finish_made(
        &mut self,
        made: Made<'py>,
        obj: Option<Bound<'py, PyAny>>,
        state: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let (Some(obj), Some(state)) = (obj, state) else {
            return Err(self.fail("a record ended before its state".into(), None));
        };
        match made {
            Made::Exception(cls) => {
                let what = format!(
                    "an exception of class '{}'",
                    cls.qualname().map(|n| n.to_string()).unwrap_or_default()
                );
                let r = self.cfg.restore_exception.bind(py).call1((&obj, state));
                self.wrap(&what, r)?;
            }
            Made::Derived { class, .. } => {
                let Some(r) = &self.resolved[class] else {
                    unreachable!()
                };
                let Ok(state) = state.cast_into_exact::<PyDict>() else {
                    return Err(self.fail(
                        format!(
                            "DERIVED record of class '{}': its state must be a dict",
                            r.name
                        ),
                        None,
                    ));
                };
                if r.setstate {
                    // As for OBJECT records: once the whole record has been read.
                    self.restores.push((
                        r.info.bind(self.py).clone(),
                        obj.clone(),
                        state,
                        r.version,
                    ));
                } else {
                    let what = format!("an instance of '{}'", r.name);
                    let built = r
                        .info
                        .bind(self.py)
                        .call_method1("build", (&obj, state, r.version));
                    self.wrap(&what, built)?;
                }
            }
        }
        Ok(obj)
    }
}
