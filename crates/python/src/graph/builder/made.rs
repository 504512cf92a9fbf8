//! Classes as values, the builtins table, builtin exceptions and instances of subclasses of
//! builtin types (CLASS, BUILTIN, EXCEPTION and DERIVED records).
//!
//! What runs while the record is read: the builtin types' own constructors (`cls(*args)`
//! of a builtin exception class, the base type's `tp_new`) and setters, never a method of
//! a class of yours. Once the whole record has been read and checked, a registered
//! class's `__setstate__` runs, as for OBJECT records, and an exception of yours gets
//! its `__init__(*args)` and `__setstate__(state)` as `pickle` gives them.

use bytewright_graph::tags::{base, FACTORY_VALUE};
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
        base::BYTEARRAY => "bytearray",
        base::COMPLEX => "complex",
        base::ORDERED_DICT => "OrderedDict",
        base::DEFAULT_DICT => "defaultdict",
        base::EXCEPTION => "exception",
        base::DEQUE => "deque",
        _ => "?",
    }
}

impl<'py> Builder<'py, '_> {
    /// The registered class of a CLASS record.
    #[cold]
    #[inline(never)]
    pub(super) fn class_value(&mut self, class: usize) -> PyResult<Bound<'py, PyAny>> {
        self.resolve_any(class)?;
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        Ok(r.cls.bind(self.py).clone().into_any())
    }

    /// The value of a BUILTIN record.
    #[cold]
    #[inline(never)]
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
    #[cold]
    #[inline(never)]
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
            extra: None,
            factory_due: false,
        });
        self.frames.push(Frame::Seed { value: None });
        Ok(())
    }

    /// Starts a DEFAULT_DICT record whose factory is a value of its own, after its `len`
    /// pairs: the defaultdict is made now (its items may refer to it), its factory set at
    /// the end.
    #[cold]
    #[inline(never)]
    pub(super) fn start_default_dict(&mut self, len: usize) -> PyResult<()> {
        let obj = self.wrap("defaultdict", self.cfg.default_dict.bind(self.py).call0())?;
        self.share_now(&obj);
        self.frames.push(Frame::Made {
            made: Made::DefaultDict,
            obj: Some(obj),
            slot: None,
            items: 2 * len,
            state: None,
            extra: None,
            factory_due: true,
        });
        Ok(())
    }

    /// The factory of a defaultdict record: a code of the fixed table, or the value that
    /// followed the items (`None` or a class: a builtin type or one of `classes=`).
    #[cold]
    #[inline(never)]
    fn factory(&self, code: u8, value: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if code != FACTORY_VALUE {
            return match self.cfg.factories.bind(py).get_item(usize::from(code)) {
                Ok(f) => Ok(f),
                Err(_) => Err(self.fail(format!("unknown defaultdict factory code {code}"), None)),
            };
        }
        match value {
            // Only BUILTIN and CLASS records (or references to them) give classes.
            // SAFETY: reads the flags of a live object's type.
            Some(f) if f.is_none() || unsafe { ffi::PyType_Check(f.as_ptr()) } != 0 => Ok(f),
            Some(f) => Err(self.fail(
                format!(
                    "a defaultdict's factory must be None or a class, not {}",
                    f.get_type()
                        .qualname()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ),
                None,
            )),
            None => Err(self.fail("a defaultdict record lacks its factory".into(), None)),
        }
    }

    /// Starts a DERIVED record: a mutable base's instance is made now (its items may refer
    /// to it), the others from the value that comes first.
    #[cold]
    #[inline(never)]
    pub(super) fn start_derived(
        &mut self,
        class: usize,
        code: u8,
        factory: u8,
        len: usize,
    ) -> PyResult<()> {
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
        let made = Made::Derived {
            class,
            base: code,
            factory,
        };
        if !base::is_mutable(code) {
            let slot = self.share_later();
            self.frames.push(Frame::Made {
                made,
                obj: None,
                slot,
                items: 0,
                state: None,
                extra: None,
                factory_due: false,
            });
            self.frames.push(Frame::Seed { value: None });
            return Ok(());
        }
        if code == base::DEFAULT_DICT && factory != FACTORY_VALUE {
            // An unknown code is refused before anything is made.
            self.factory(factory, None)?;
        }
        // SAFETY: the base type's own allocator with no arguments, for a class defined in
        // Python whose first builtin base is that type (checked above): it makes an empty
        // instance, as `dict.__new__(cls)` does, and runs no code of the class.
        let p = unsafe {
            match (*base_type(self.cfg, code)).tp_new {
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
        let per_item = match code {
            base::DICT | base::ORDERED_DICT | base::DEFAULT_DICT => 2,
            _ => 1,
        };
        self.frames.push(Frame::Made {
            made,
            obj: Some(obj),
            slot: None,
            items: per_item * len,
            state: None,
            extra: None,
            factory_due: code == base::DEFAULT_DICT && factory == FACTORY_VALUE,
        });
        Ok(())
    }

    /// Starts a DERIVED record of a deque subclass: the instance, made as for the other
    /// mutable bases, gets its `maxlen` from deque's own `__init__` (it is still empty, and
    /// no method of the class runs) before its items come.
    #[cold]
    #[inline(never)]
    pub(super) fn start_derived_deque(
        &mut self,
        class: usize,
        maxlen: Option<u64>,
        len: usize,
    ) -> PyResult<()> {
        let py = self.py;
        let Some(maxlen) = maxlen.map_or(Some(None), |m| isize::try_from(m).ok().map(Some)) else {
            return Err(self.fail("deque maxlen out of range".into(), None));
        };
        self.start_derived(class, base::DEQUE, 0, len)?;
        let Some(Frame::Made { obj: Some(obj), .. }) = self.frames.last() else {
            unreachable!()
        };
        let r = self
            .cfg
            .deque
            .bind(py)
            .getattr(pyo3::intern!(py, "__init__"))
            .and_then(|init| init.call1((obj, &self.empty_tuple, maxlen)));
        self.wrap("deque", r.map(drop))
    }

    /// Makes the exception or immutable instance of the `Made` frame on top from the value
    /// its `Seed` frame took.
    #[cold]
    #[inline(never)]
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
                Made::Derived { class, base, .. } => Ok((*class, *base)),
                Made::DefaultDict => {
                    return Err(self.fail("a defaultdict is made before its items".into(), None))
                }
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
                let what = format!("an instance of '{}'", r.name);
                if code == base::EXCEPTION {
                    return self.derived_exception(class, value);
                }
                if value.get_type().as_type_ptr() != base_type(self.cfg, code) {
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
                let cls = r.cls.bind(self.py).clone();
                let args = PyTuple::new(py, [value])?;
                if code == base::BYTEARRAY {
                    // bytearray's `__new__` makes it empty and its `__init__` fills it: both
                    // the base type's own, with a bytearray argument.
                    // SAFETY: bytearray's allocator and initializer for a class defined in
                    // Python whose first builtin base is bytearray (checked when resolved);
                    // the initializer copies the bytes of its bytearray argument.
                    let p = unsafe {
                        let ty = base_type(self.cfg, code);
                        match ((*ty).tp_new, (*ty).tp_init) {
                            (Some(new), Some(init)) => {
                                let p = new(
                                    cls.as_type_ptr(),
                                    self.empty_tuple.as_ptr(),
                                    std::ptr::null_mut(),
                                );
                                if !p.is_null() && init(p, args.as_ptr(), std::ptr::null_mut()) < 0
                                {
                                    ffi::Py_DECREF(p);
                                    std::ptr::null_mut()
                                } else {
                                    p
                                }
                            }
                            _ => std::ptr::null_mut(),
                        }
                    };
                    return self.owned(&what, p);
                }
                // SAFETY: the base type's own constructor, called as `base.__new__(cls,
                // value)` with a value of exactly that type: it copies the value into a new
                // instance of cls (a class defined in Python whose first builtin base is
                // that type) and runs no code of the class.
                let p = unsafe {
                    match (*base_type(self.cfg, code)).tp_new {
                        Some(new) => new(cls.as_type_ptr(), args.as_ptr(), std::ptr::null_mut()),
                        None => std::ptr::null_mut(),
                    }
                };
                self.owned(&what, p)
            }
        }
    }

    /// Makes an exception of yours from its arguments with its first builtin base's
    /// `__new__` (as `BaseException.__new__(cls, *args)`: no code of the class runs); its
    /// `__init__(*args)` runs once the whole record has been read.
    #[cold]
    #[inline(never)]
    fn derived_exception(
        &mut self,
        class: usize,
        value: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        let what = format!("an exception of class '{}'", r.name);
        let Ok(args) = value.cast_into_exact::<PyTuple>() else {
            return Err(self.fail(
                format!("DERIVED record: the arguments of {what} must be a tuple"),
                None,
            ));
        };
        let cls = r.cls.bind(self.py).clone();
        let base = r.info.bind(self.py).getattr("builtin_base");
        let base = self.wrap(&what, base)?;
        // SAFETY: reads the flags of a live object (and of it as a class).
        if unsafe { ffi::PyExceptionClass_Check(base.as_ptr()) } == 0 {
            return Err(self.fail(format!("cannot rebuild {what}: not an exception"), None));
        }
        // SAFETY: the allocator of a builtin exception class (the first builtin base of
        // cls, a class defined in Python), called as that class's `__new__(cls, *args)`:
        // it stores the arguments and runs no code of cls.
        let p = unsafe {
            let ty = base.as_ptr().cast::<ffi::PyTypeObject>();
            match (*ty).tp_new {
                Some(new) => new(cls.as_type_ptr(), args.as_ptr(), std::ptr::null_mut()),
                None => std::ptr::null_mut(),
            }
        };
        let obj = self.owned(&what, p)?;
        if let Some(Frame::Made { extra, .. }) = self.frames.last_mut() {
            *extra = Some(args.into_any());
        }
        Ok(obj)
    }

    /// Takes a value into the `Made` frame on top: the object its `Seed` made, an item, a
    /// defaultdict's factory, or the state.
    #[cold]
    #[inline(never)]
    pub(super) fn deliver_to_made(&mut self, value: Bound<'py, PyAny>) -> PyResult<()> {
        let py = self.py;
        let cfg = self.cfg;
        let Some(Frame::Made {
            made,
            obj,
            slot,
            items,
            state,
            extra,
            factory_due,
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
            if *factory_due {
                *factory_due = false;
                *extra = Some(value);
                return Ok(());
            }
            if matches!(made, Made::DefaultDict) {
                return Err(self.fail("a defaultdict record holds no state".into(), None));
            }
            if state.replace(value).is_some() {
                return Err(self.fail("a record holds one state".into(), None));
            }
            return Ok(());
        }
        *items -= 1;
        let code = match made {
            Made::Derived { base, .. } => *base,
            Made::DefaultDict => base::DEFAULT_DICT,
            Made::Exception(_) => 0,
        };
        let target = target.clone();
        let pair = if matches!(code, base::DICT | base::ORDERED_DICT | base::DEFAULT_DICT) {
            match state.take() {
                None => {
                    *state = Some(value);
                    return Ok(());
                }
                Some(k) => Some(k),
            }
        } else {
            None
        };
        let rc = match (code, pair) {
            (base::ORDERED_DICT, Some(k)) => {
                // OrderedDict's own `__setitem__` (which keeps its order), never an
                // override of yours.
                let r = cfg
                    .ordered_dict
                    .bind(py)
                    .getattr(pyo3::intern!(py, "__setitem__"))
                    .and_then(|f| f.call1((&target, k, &value)));
                return self.wrap("OrderedDict", r.map(drop));
            }
            // SAFETY: `target` is a live instance of a subclass of dict (a defaultdict
            // keeps its items as a dict does), list or set (made by that type's
            // allocator); the base type's own C API fills it, without calling methods the
            // class may override; each call takes its own references.
            (base::DICT | base::DEFAULT_DICT, Some(k)) => unsafe {
                ffi::PyDict_SetItem(target.as_ptr(), k.as_ptr(), value.as_ptr())
            },
            // SAFETY: as above.
            (base::LIST, None) => unsafe { ffi::PyList_Append(target.as_ptr(), value.as_ptr()) },
            // SAFETY: as above.
            (base::SET, None) => unsafe { ffi::PySet_Add(target.as_ptr(), value.as_ptr()) },
            (base::DEQUE, None) => {
                // deque's own `append` (which honours its maxlen), never an override.
                let r = cfg
                    .deque
                    .bind(py)
                    .getattr(pyo3::intern!(py, "append"))
                    .and_then(|f| f.call1((&target, &value)));
                return self.wrap("deque", r.map(drop));
            }
            _ => return Err(self.fail("items in a record that holds none".into(), None)),
        };
        if rc < 0 {
            let e = PyErr::fetch(py);
            return self.wrap(base_name(code), Err(e));
        }
        Ok(())
    }

    /// Gives a made exception or instance its state.
    #[cold]
    #[inline(never)]
    pub(super) fn finish_made(
        &mut self,
        made: Made<'py>,
        obj: Option<Bound<'py, PyAny>>,
        state: Option<Bound<'py, PyAny>>,
        extra: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if let (Made::DefaultDict, Some(obj)) = (&made, &obj) {
            let factory = self.factory(FACTORY_VALUE, extra)?;
            self.set_factory(obj, factory)?;
            return Ok(obj.clone());
        }
        let (Some(obj), Some(state)) = (obj, state) else {
            return Err(self.fail("a record ended before its state".into(), None));
        };
        match made {
            Made::DefaultDict => {
                return Err(self.fail("a defaultdict record holds no state".into(), None))
            }
            Made::Exception(cls) => {
                let what = format!(
                    "an exception of class '{}'",
                    cls.qualname().map(|n| n.to_string()).unwrap_or_default()
                );
                let r = self.cfg.restore_exception.bind(py).call1((&obj, state));
                self.wrap(&what, r)?;
            }
            Made::Derived {
                class,
                base: code,
                factory,
            } => {
                let Some(r) = &self.resolved[class] else {
                    unreachable!()
                };
                let info = r.info.bind(py).clone();
                let version = r.version;
                if code == base::EXCEPTION {
                    // Checked now; given to the exception (with its `__init__`) once the
                    // whole record has been read.
                    let what = format!("an exception of class '{}'", r.name);
                    let checked = info.call_method1("check_exception_state", (&state,));
                    self.wrap(&what, checked)?;
                    let Some(args) = extra else {
                        return Err(self.fail(format!("{what} lacks its arguments"), None));
                    };
                    let payload = PyTuple::new(py, [args, state])?;
                    self.restores.push((
                        info,
                        obj.clone(),
                        payload.into_any(),
                        version,
                        "restore_exception",
                    ));
                    return Ok(obj);
                }
                let Ok(state) = state.cast_into_exact::<PyDict>() else {
                    return Err(self.fail(
                        format!(
                            "DERIVED record of class '{}': its state must be a dict",
                            r.name
                        ),
                        None,
                    ));
                };
                let (setstate, name) = (r.setstate, r.name.clone());
                if code == base::DEFAULT_DICT {
                    let factory = self.factory(factory, extra)?;
                    self.set_factory(&obj, factory)?;
                }
                if setstate {
                    // As for OBJECT records: once the whole record has been read.
                    self.restores
                        .push((info, obj.clone(), state.into_any(), version, "restore"));
                } else {
                    let what = format!("an instance of '{name}'");
                    let built = info.call_method1("build", (&obj, state, version));
                    self.wrap(&what, built)?;
                }
            }
        }
        Ok(obj)
    }

    /// Sets a defaultdict's `default_factory` through defaultdict's own attribute, never
    /// an override of yours.
    #[cold]
    #[inline(never)]
    fn set_factory(&self, obj: &Bound<'py, PyAny>, factory: Bound<'py, PyAny>) -> PyResult<()> {
        let py = self.py;
        let r = self
            .cfg
            .default_dict
            .bind(py)
            .getattr(pyo3::intern!(py, "default_factory"))
            .and_then(|d| d.call_method1(pyo3::intern!(py, "__set__"), (obj, factory)));
        self.wrap("defaultdict", r.map(drop))
    }
}
