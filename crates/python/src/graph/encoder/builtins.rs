//! Classes as values, the builtins table, builtin exceptions and instances of subclasses of
//! builtin types (docs/format.md: CLASS, BUILTIN, EXCEPTION and DERIVED records). Off the
//! walker's fast paths: reached only from `Encoder::other` and `Encoder::class_instance`.

use std::ptr::addr_of_mut;
use std::rc::Rc;

use bytewright_graph::tags::{self, base};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

use super::{Encoder, R};
use crate::graph::config::Config;
use crate::graph::errors::{EncodeError, Step};
use crate::graph::infocache;

/// A mapping's (key, value) pairs.
type Pairs<'py> = Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>;

/// An exception's attributes, cause, context and `__suppress_context__`.
type ExceptionState<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
);

/// The builtin type of a `DERIVED` base code (null for `base::EXCEPTION`, whose type is
/// the class's own first builtin base, and for any other code).
pub(crate) fn base_type(cfg: &Config, code: u8) -> *mut ffi::PyTypeObject {
    match code {
        base::DICT => addr_of_mut!(ffi::PyDict_Type),
        base::LIST => addr_of_mut!(ffi::PyList_Type),
        base::SET => addr_of_mut!(ffi::PySet_Type),
        base::FROZENSET => addr_of_mut!(ffi::PyFrozenSet_Type),
        base::TUPLE => addr_of_mut!(ffi::PyTuple_Type),
        base::STR => addr_of_mut!(ffi::PyUnicode_Type),
        base::BYTES => addr_of_mut!(ffi::PyBytes_Type),
        base::INT => addr_of_mut!(ffi::PyLong_Type),
        base::FLOAT => addr_of_mut!(ffi::PyFloat_Type),
        base::BYTEARRAY => addr_of_mut!(ffi::PyByteArray_Type),
        base::COMPLEX => addr_of_mut!(ffi::PyComplex_Type),
        base::ORDERED_DICT => cfg.ordered_dict.as_ptr().cast(),
        base::DEFAULT_DICT => cfg.default_dict.as_ptr().cast(),
        base::DEQUE => cfg.deque.as_ptr().cast(),
        _ => std::ptr::null_mut(),
    }
}

/// The `DERIVED` base code of a class whose ClassInfo is `info` (0: its builtin base, if
/// any, is not one a record can hold).
pub(crate) fn base_code(cfg: &Config, info: &Bound<'_, PyAny>) -> PyResult<u8> {
    let builtin = info.getattr("builtin_base")?;
    // SAFETY: reads the flags of a live object's type (and of it, if it is a class).
    if unsafe { ffi::PyExceptionClass_Check(builtin.as_ptr()) } != 0 {
        return Ok(base::EXCEPTION);
    }
    Ok((1..=base::LAST)
        .find(|&code| builtin.as_ptr() == base_type(cfg, code).cast())
        .unwrap_or(0))
}

/// The `defaultdict` factory code of `factory`: its index in the fixed table, else
/// [`tags::FACTORY_VALUE`] for a class (written as a value of its own); `None` for anything
/// else.
pub(crate) fn factory_code(cfg: &Config, factory: &Bound<'_, PyAny>) -> Option<u8> {
    let py = factory.py();
    if let Some(code) = cfg.factories.bind(py).iter().position(|f| f.is(factory)) {
        return u8::try_from(code).ok();
    }
    // SAFETY: reads the flags of a live object's type.
    (unsafe { ffi::PyType_Check(factory.as_ptr()) } != 0).then_some(tags::FACTORY_VALUE)
}

impl<'py> Encoder<'py> {
    /// Writes `obj` if it is a class, an instance of a builtin exception class or
    /// `NotImplemented`; `None` when it is none of these.
    pub(super) fn builtin_value(&mut self, obj: &Bound<'py, PyAny>) -> Option<R> {
        let ptr = obj.as_ptr();
        // SAFETY: obj is live; these read its type's flags only.
        let (is_type, is_exception) = unsafe {
            (
                ffi::PyType_Check(ptr) != 0,
                ffi::PyExceptionInstance_Check(ptr) != 0,
            )
        };
        if is_type {
            return Some(self.class_value(obj));
        }
        if is_exception {
            // Only the builtin classes: a subclass of yours is a class of its own.
            let name = self.builtin_name(obj.get_type().as_any())?;
            return Some(self.exception(obj, &name));
        }
        // SAFETY: the address of the NotImplemented singleton, only compared.
        if ptr == unsafe { ffi::Py_NotImplemented() } {
            let name = self.builtin_name(obj)?;
            return Some(self.builtin(obj, &name));
        }
        None
    }

    /// The name of `value` in the builtins table, if it is there (by identity).
    fn builtin_name(&self, value: &Bound<'py, PyAny>) -> Option<String> {
        let py = self.py;
        let name = self.cfg.builtin_names.bind(py).get_item(value).ok()??;
        let same = self
            .cfg
            .builtins
            .bind(py)
            .get_item(&name)
            .ok()?
            .is_some_and(|v| v.is(value));
        if !same {
            return None;
        }
        name.extract().ok()
    }

    fn builtin(&mut self, obj: &Bound<'py, PyAny>, name: &str) -> R {
        if self.memo_begin(obj.as_ptr(), true).is_none() {
            return Ok(());
        }
        self.w.builtin(name.as_bytes());
        Ok(())
    }

    /// A class: a builtin one by name, one defined in Python as a class reference.
    fn class_value(&mut self, obj: &Bound<'py, PyAny>) -> R {
        if let Some(name) = self.builtin_name(obj) {
            return self.builtin(obj, &name);
        }
        let cls = obj
            .cast::<PyType>()
            .map_err(|_| EncodeError::new("not a class"))?;
        // SAFETY: reading the flags of a live type object.
        let heap = unsafe { (*cls.as_type_ptr()).tp_flags } & ffi::Py_TPFLAGS_HEAPTYPE != 0;
        if !heap {
            let name = cls.qualname().map(|n| n.to_string()).unwrap_or_default();
            return Err(EncodeError::new(format!(
                "cannot pickle the class '{name}': only the builtin classes and classes defined in Python can be pickled as values"
            )));
        }
        let index = self.class_entry(cls)?;
        if self.memo_begin(obj.as_ptr(), true).is_none() {
            return Ok(());
        }
        self.shape(tags::CLASS, index, std::iter::empty())
    }

    /// An instance of the builtin exception class `name`: its arguments, then its state.
    fn exception(&mut self, obj: &Bound<'py, PyAny>, name: &str) -> R {
        let ptr = obj.as_ptr();
        let py = self.py;
        let parts = self
            .cfg
            .exception_state
            .bind(py)
            .call1((obj,))
            .map_err(|e| EncodeError::caused(format!("cannot pickle the {name}"), e))?;
        let (args, state): (Bound<'py, PyAny>, ExceptionState<'py>) = parts
            .extract()
            .map_err(|e| EncodeError::caused(format!("cannot pickle the {name}"), e))?;
        let mark = self.w.mark();
        let Some(slot) = self.memo_begin(ptr, false) else {
            return Ok(());
        };
        self.w.exception(name.as_bytes());
        self.enter()?;
        self.encode(args.as_ptr())
            .map_err(|e| e.at(Step::Attr("args".into())))?;
        // Made from its arguments: from here on its state may refer to it.
        self.memo_end(ptr, slot, mark);
        self.w.tuple(4);
        let (attributes, cause, context, suppress) = state;
        for (part, step) in [
            (attributes, "__dict__"),
            (cause, "__cause__"),
            (context, "__context__"),
            (suppress, "__suppress_context__"),
        ] {
            self.encode(part.as_ptr())
                .map_err(|e| e.at(Step::Attr(step.into())))?;
        }
        self.leave();
        Ok(())
    }

    /// A defaultdict: its factory as a code of the fixed table, or (a class outside it) as
    /// a value of its own after the pairs.
    pub(super) fn default_dict(&mut self, obj: &Bound<'py, PyAny>) -> R {
        let factory = obj
            .getattr("default_factory")
            .map_err(|e| EncodeError::caused("bad defaultdict", e))?;
        let Some(code) = factory_code(self.cfg, &factory) else {
            return Err(EncodeError::new(format!(
                "cannot pickle a defaultdict whose default_factory is {}: only None and classes (builtin types such as list, dict, set, int, or classes you pass in classes= when loading) are allowed",
                factory.repr().map(|r| r.to_string()).unwrap_or_default()
            )));
        };
        if code != tags::FACTORY_VALUE {
            return self.mapping(obj, tags::DEFAULT_DICT, Some(code));
        }
        if self.memo_begin(obj.as_ptr(), true).is_none() {
            return Ok(());
        }
        let pairs = self.pairs_of(obj, None)?;
        self.w.default_dict(code, pairs.len());
        self.enter()?;
        self.write_pairs(&pairs)?;
        self.encode(factory.as_ptr())
            .map_err(|e| e.at(Step::Attr("default_factory".into())))?;
        self.leave();
        Ok(())
    }

    /// The (key, value) pairs of a mapping, from `items` of the mapping's own class (or,
    /// with `via` given, of that base class, so an override of yours is not used).
    fn pairs_of(
        &self,
        obj: &Bound<'py, PyAny>,
        via: Option<&Bound<'py, PyAny>>,
    ) -> Result<Pairs<'py>, EncodeError> {
        let items = match via {
            Some(base) => base.getattr("items").and_then(|f| f.call1((obj,))),
            None => obj.call_method0("items"),
        }
        .map_err(|e| EncodeError::caused("cannot read items", e))?;
        let mut out = Vec::new();
        for pair in self.items(&items)? {
            let pair: (Bound<'py, PyAny>, Bound<'py, PyAny>) = pair
                .extract()
                .map_err(|_| EncodeError::new("items() must give pairs"))?;
            out.push(pair);
        }
        Ok(out)
    }

    fn write_pairs(&mut self, pairs: &[(Bound<'py, PyAny>, Bound<'py, PyAny>)]) -> R {
        for (k, v) in pairs {
            self.encode(k.as_ptr())
                .and_then(|()| self.encode(v.as_ptr()))
                .map_err(|e| e.at(super::key_step(k.as_ptr())))?;
        }
        Ok(())
    }

    /// An instance of a class of yours that subclasses a builtin type: its items (or its
    /// value), then its state.
    pub(super) fn derived(&mut self, obj: &Bound<'py, PyAny>, index: usize) -> R {
        let py = self.py;
        let ptr = obj.as_ptr();
        let facts = Rc::clone(&self.classes[index].facts);
        let cannot = |e: PyErr| EncodeError::caused(format!("cannot pickle a {}", facts.name), e);
        let info = infocache::describe(self.cfg, &obj.get_type())
            .map_err(cannot)?
            .info;
        let code = base_code(self.cfg, &info).map_err(cannot)?;
        if code == 0 {
            return Err(EncodeError::new(format!(
                "cannot pickle '{}' object: it subclasses the built-in type '{}', whose state bytewright.pickle cannot capture (it writes subclasses of dict, list, set, frozenset, tuple, str, bytes, bytearray, int, float, complex, OrderedDict, defaultdict, deque and of the builtin exceptions; loads_pickle reads pickle's own)",
                facts.name,
                facts.builtin_base.as_deref().unwrap_or("?"),
            )));
        }
        if code == base::EXCEPTION {
            return self.derived_exception(obj, index, &info);
        }
        let state = info.call_method1("derived_state", (obj,)).map_err(cannot)?;
        let mutable = base::is_mutable(code);
        // What a defaultdict's factory is written as (before anything is written).
        let factory = if code == base::DEFAULT_DICT {
            let factory = obj
                .getattr("default_factory")
                .map_err(|e| EncodeError::caused("bad defaultdict", e))?;
            let Some(fcode) = factory_code(self.cfg, &factory) else {
                return Err(EncodeError::new(format!(
                    "cannot pickle a {} whose default_factory is {}: only None and classes are allowed",
                    facts.name,
                    factory.repr().map(|r| r.to_string()).unwrap_or_default()
                )));
            };
            Some((fcode, factory))
        } else {
            None
        };
        // A deque's maxlen, read through deque's own attribute (before anything is written).
        let maxlen = if code == base::DEQUE {
            let maxlen = self
                .cfg
                .deque
                .bind(py)
                .getattr(pyo3::intern!(py, "maxlen"))
                .and_then(|m| m.call_method1(pyo3::intern!(py, "__get__"), (obj,)))
                .map_err(|e| EncodeError::caused("bad deque", e))?;
            let maxlen: Option<u64> = maxlen
                .extract()
                .map_err(|_| EncodeError::new("bad deque maxlen"))?;
            maxlen
        } else {
            None
        };
        let mark = self.w.mark();
        let Some(slot) = self.memo_begin(ptr, mutable) else {
            return Ok(());
        };
        self.shape(tags::DERIVED, index, std::iter::empty())?;
        self.enter()?;
        match code {
            base::DICT => {
                // SAFETY: obj is a live dict subclass instance; `pairs` reads it as a dict.
                unsafe {
                    let n = ffi::PyDict_Size(ptr);
                    self.w.derived_base(code, n as usize);
                    self.pairs(ptr, n)?;
                }
            }
            base::DEFAULT_DICT => {
                let Some((fcode, factory)) = factory else {
                    unreachable!()
                };
                // SAFETY: obj is a live dict subclass instance; `pairs` reads it as a dict
                // (a defaultdict keeps dict order).
                unsafe {
                    let n = ffi::PyDict_Size(ptr);
                    self.w.derived_default_dict(fcode, n as usize);
                    self.pairs(ptr, n)?;
                }
                if fcode == tags::FACTORY_VALUE {
                    self.encode(factory.as_ptr())
                        .map_err(|e| e.at(Step::Attr("default_factory".into())))?;
                }
            }
            base::ORDERED_DICT => {
                // The OrderedDict's own order (which `move_to_end` changes), not the dict's.
                let pairs = self.pairs_of(obj, Some(self.cfg.ordered_dict.bind(py).as_any()))?;
                self.w.derived_base(code, pairs.len());
                self.write_pairs(&pairs)?;
            }
            base::LIST => {
                // SAFETY: obj is a live list subclass instance; each item is read under a
                // bounds check against the current size (as `Encoder::list` does).
                unsafe {
                    let n = ffi::PyList_GET_SIZE(ptr);
                    self.w.derived_base(code, n as usize);
                    for i in 0..n {
                        if i >= ffi::PyList_GET_SIZE(ptr) {
                            return Err(EncodeError::new("list changed size during pickling"));
                        }
                        let item = ffi::PyList_GET_ITEM(ptr, i);
                        self.item(item).map_err(|e| e.at(Step::Index(i as usize)))?;
                    }
                }
            }
            base::DEQUE => {
                // Its items as pickle takes them (iterating it), in order.
                let items = self.items(obj)?;
                self.w.derived_deque(maxlen, items.len());
                for (i, item) in items.iter().enumerate() {
                    self.encode(item.as_ptr())
                        .map_err(|e| e.at(Step::Index(i)))?;
                }
            }
            base::SET => {
                let mut items = self.items(obj)?;
                if self.deterministic {
                    items = self.canonical_order(items)?;
                }
                self.w.derived_base(code, items.len());
                for (i, item) in items.iter().enumerate() {
                    self.encode(item.as_ptr())
                        .map_err(|e| e.at(Step::Index(i)))?;
                }
            }
            _ => {
                // The value as an object of the exact builtin type, made by the type's own
                // copy (no method of the subclass runs).
                // SAFETY: obj is a live instance of a subclass of the base type of `code`;
                // each constructor returns a new reference or NULL with an exception set.
                let copy = unsafe {
                    match code {
                        base::FROZENSET => ffi::PyFrozenSet_New(ptr),
                        base::TUPLE => ffi::PyTuple_GetSlice(ptr, 0, ffi::PyTuple_GET_SIZE(ptr)),
                        base::STR => ffi::PyUnicode_FromObject(ptr),
                        base::BYTES => ffi::PyBytes_FromStringAndSize(
                            ffi::PyBytes_AsString(ptr),
                            ffi::PyBytes_Size(ptr),
                        ),
                        base::BYTEARRAY => ffi::PyByteArray_FromObject(ptr),
                        base::INT => ffi::PyNumber_Index(ptr),
                        // Read from the complex itself (it is one), never via __complex__.
                        base::COMPLEX => ffi::PyComplex_FromDoubles(
                            ffi::PyComplex_RealAsDouble(ptr),
                            ffi::PyComplex_ImagAsDouble(ptr),
                        ),
                        _ => ffi::PyFloat_FromDouble(ffi::PyFloat_AsDouble(ptr)),
                    }
                };
                // SAFETY: a new reference or NULL with an exception set.
                let copy = unsafe { Bound::from_owned_ptr_or_err(py, copy) }.map_err(cannot)?;
                self.w.derived_base(code, 0);
                self.encode(copy.as_ptr())?;
                // Made from its value: from here on its state may refer to it.
                self.memo_end(ptr, slot, mark);
            }
        }
        self.encode(state.as_ptr())
            .map_err(|e| e.at(Step::Attr("__dict__".into())))?;
        self.leave();
        Ok(())
    }

    /// An instance of a class of yours that subclasses a builtin exception: what its
    /// `__reduce_ex__` gives (the arguments its class is called with, and its state), then
    /// its cause, context and `__suppress_context__`.
    fn derived_exception(
        &mut self,
        obj: &Bound<'py, PyAny>,
        index: usize,
        info: &Bound<'py, PyAny>,
    ) -> R {
        let ptr = obj.as_ptr();
        let py = self.py;
        let name = self.classes[index].facts.name.clone();
        let cannot = |e: PyErr| {
            let reason = e.value(py).to_string();
            EncodeError::caused(format!("cannot pickle a {name}: {reason}"), e)
        };
        let parts = info
            .call_method1("exception_reduction", (obj,))
            .map_err(cannot)?;
        let (args, state): (Bound<'py, PyAny>, Bound<'py, PyAny>) =
            parts.extract().map_err(cannot)?;
        let mark = self.w.mark();
        let Some(slot) = self.memo_begin(ptr, false) else {
            return Ok(());
        };
        self.shape(tags::DERIVED, index, std::iter::empty())?;
        self.w.derived_base(base::EXCEPTION, 0);
        self.enter()?;
        self.encode(args.as_ptr())
            .map_err(|e| e.at(Step::Attr("args".into())))?;
        // Made from its arguments: from here on its state may refer to it.
        self.memo_end(ptr, slot, mark);
        self.encode(state.as_ptr())
            .map_err(|e| e.at(Step::Attr("__dict__".into())))?;
        self.leave();
        Ok(())
    }
}
