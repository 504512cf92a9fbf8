//! Resolving the names a pickle uses beyond the fixed table: `classes=` and `allow=`.

use std::ffi::CString;

use bytewright_pickle_reader::{self as core, ClassKind, Global, Python2Str};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use crate::graph::classes::AllowedClasses;
use crate::graph::config::Config;
use crate::graph::infocache::{self, KIND_DICT, KIND_ENUM, KIND_TUPLE};

/// Classes with at most this many declared fields are matched one by one (no set).
pub(super) const FEW_FIELDS: usize = 16;

/// Which `BUILD` states of a plain `__dict__` class go straight into the instance dict.
pub(super) enum DictFields<'py> {
    /// Any str keys that are not dunder names (the class declares no fields).
    Any,
    /// Exactly its declared fields, compared one by one.
    Named(Declared<'py>),
    /// Exactly the fields of its `field_set`, of this size.
    Set(usize, Bound<'py, PyAny>),
}

/// The declared fields of a plain `__dict__` class, and what this call learnt of them.
pub(super) struct Declared<'py> {
    pub(super) names: Vec<Bound<'py, PyString>>,
    /// Key objects met in states (a memoized key comes back for every instance) and the
    /// field each one is; held, so their addresses are never reused meanwhile.
    pub(super) seen: Vec<(Bound<'py, PyAny>, usize)>,
    /// No name is a data descriptor of the class: checked while no code could run, so it
    /// holds for as long as none runs (while the stream is still being checked).
    pub(super) plain: bool,
}

/// A class from `classes=` that the pickle names.
pub(super) struct Found<'py> {
    pub(super) cls: Bound<'py, PyType>,
    pub(super) info: Bound<'py, PyAny>,
    pub(super) kind: ClassKind,
    /// `Some` when its state may be written straight into the instance `__dict__`.
    pub(super) fields: Option<DictFields<'py>>,
    /// Its instances run no code when dropped (no `__del__`), so a blank one may be made
    /// while the rest of the stream is still being checked.
    pub(super) quiet: bool,
    /// Its `__new__` is `object.__new__` (a blank instance runs no code of the class).
    pub(super) plain_new: bool,
    /// It defines `__setstate__`: its `BUILD`s call it.
    pub(super) setstate: bool,
}

/// Resolves `classes=` and `allow=` names for the machine, lazily and without imports.
pub(super) struct Resolver<'py> {
    pub(super) cfg: &'static Config,
    pub(super) classes: AllowedClasses<'py>,
    pub(super) allow: Option<Bound<'py, PyDict>>,
    pub(super) found: Vec<Found<'py>>,
    pub(super) names: Vec<String>,
    pub(super) extras: Vec<Bound<'py, PyAny>>,
    pub(super) extra_names: Vec<String>,
    pub(super) error: Option<PyErr>,
    /// How Python 2 str is read when not pickle's default (ASCII, strict).
    pub(super) codec: Option<Box<Codec>>,
}

/// How Python 2 str is read, and for `Decode` the codec's name and error handler (both
/// checked by `_pickle_reader._python2_codec` to be ones Python ships).
pub(super) struct Codec {
    pub(super) mode: Python2Str,
    pub(super) name: CString,
    pub(super) errors: CString,
}

impl<'py> Resolver<'py> {
    pub(super) fn new(
        py: Python<'py>,
        cfg: &'static Config,
        classes: Option<Bound<'py, PyAny>>,
        allow: Option<Bound<'py, PyDict>>,
    ) -> Self {
        Self {
            cfg,
            classes: AllowedClasses::new(classes.unwrap_or_else(|| PyTuple::empty(py).into_any())),
            allow: allow.filter(|a| !a.is_empty()),
            found: Vec::new(),
            names: Vec::new(),
            extras: Vec::new(),
            extra_names: Vec::new(),
            error: None,
            codec: None,
        }
    }

    /// Python 2 str bytes decoded with the `encoding=` codec: a new str, or NULL with the
    /// codec's exception set.
    pub(super) fn decode(&self, bytes: &[u8]) -> *mut ffi::PyObject {
        let Some(Codec { name, errors, .. }) = self.codec.as_deref() else {
            // SAFETY: a live slice; ASCII needs no codec lookup.
            return unsafe {
                ffi::PyUnicode_DecodeASCII(
                    bytes.as_ptr().cast(),
                    bytes.len() as isize,
                    c"strict".as_ptr(),
                )
            };
        };
        // SAFETY: a live slice and two NUL-terminated names; the codec is one of the
        // standard library's `encodings` (already looked up, so found in the cache).
        unsafe {
            ffi::PyUnicode_Decode(
                bytes.as_ptr().cast(),
                bytes.len() as isize,
                name.as_ptr(),
                errors.as_ptr(),
            )
        }
    }

    fn lookup(&mut self, module: &str, name: &str) -> PyResult<Option<Global>> {
        // A name read again (protocols 0-1 repeat GLOBAL) is resolved once per call.
        let same = |n: &String| joins(n.as_bytes(), module.as_bytes(), name.as_bytes());
        if let Some(i) = self.names.iter().position(same) {
            return Ok(Some(Global::Class(i as u32, self.found[i].kind)));
        }
        if let Some(i) = self.extra_names.iter().position(same) {
            return Ok(Some(Global::Extra(i as u32)));
        }
        if let Some(cls) = self.classes.get_parts(self.cfg, module, name)? {
            let full = format!("{module}.{name}");
            let d = infocache::describe(self.cfg, &cls)?;
            let kind = match d.kind {
                KIND_TUPLE => ClassKind::Tuple,
                KIND_ENUM => ClassKind::Enum,
                _ => ClassKind::Object,
            };
            let fields = if d.kind == KIND_DICT {
                Some(match d.declared {
                    None => DictFields::Any,
                    Some(names) if names.len() <= FEW_FIELDS => DictFields::Named(Declared {
                        names,
                        seen: Vec::new(),
                        plain: false,
                    }),
                    Some(names) => DictFields::Set(names.len(), d.info.getattr("field_set")?),
                })
            } else {
                None
            };
            // SAFETY: a live type object; reading three slots (and object's tp_new).
            let (quiet, plain_new) = unsafe {
                let t = cls.as_type_ptr();
                let object_new = (*std::ptr::addr_of_mut!(pyo3::ffi::PyBaseObject_Type)).tp_new;
                (
                    (*t).tp_finalize.is_none() && (*t).tp_del.is_none(),
                    (*t).tp_new.map(|f| f as usize) == object_new.map(|f| f as usize),
                )
            };
            self.found.push(Found {
                cls,
                info: d.info,
                kind,
                fields,
                quiet,
                plain_new,
                setstate: d.setstate,
            });
            self.names.push(full);
            return Ok(Some(Global::Class(self.found.len() as u32 - 1, kind)));
        }
        if let Some(allow) = &self.allow {
            let full = format!("{module}.{name}");
            if let Some(obj) = allow.get_item(&full)? {
                self.extras.push(obj);
                self.extra_names.push(full);
                return Ok(Some(Global::Extra(self.extras.len() as u32 - 1)));
            }
        }
        Ok(None)
    }
}

/// True when `full` is `module.name` (compared in place, nothing built).
#[inline]
pub(crate) fn joins(full: &[u8], module: &[u8], name: &[u8]) -> bool {
    full.len() == module.len() + 1 + name.len()
        && full[module.len()] == b'.'
        && full.starts_with(module)
        && full.ends_with(name)
}

impl core::Resolve for Resolver<'_> {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, core::ResolveFailed> {
        self.lookup(module, name).map_err(|e| {
            self.error = Some(e);
            core::ResolveFailed
        })
    }

    fn has_setstate(&self, class: u32) -> bool {
        self.found.get(class as usize).is_some_and(|f| f.setstate)
    }

    fn plain_new(&self, class: u32) -> bool {
        self.found.get(class as usize).is_some_and(|f| f.plain_new)
    }

    fn python2_str(&self) -> Python2Str {
        self.codec.as_ref().map_or(Python2Str::Ascii, |c| c.mode)
    }

    fn decodes(&mut self, bytes: &[u8]) -> bool {
        let p = self.decode(bytes);
        if p.is_null() {
            // SAFETY: the codec's exception is pending (the resolver runs within a call
            // from Python); the machine raises its own.
            unsafe { ffi::PyErr_Clear() };
            return false;
        }
        // SAFETY: a new reference, given up.
        unsafe { ffi::Py_DECREF(p) };
        true
    }

    fn name_of(&self, global: Global) -> Option<String> {
        match global {
            Global::Class(i, _) => self.names.get(i as usize).cloned(),
            Global::Extra(i) => self.extra_names.get(i as usize).cloned(),
            _ => None,
        }
    }
}
