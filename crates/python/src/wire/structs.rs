//! What the adapter knows about each struct of a schema: keys, defaults, and for typed
//! codecs the class and the byte offsets of its member slots.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};
use pyo3::{PyTraverseError, PyVisit};

/// Per-field converters of a struct (decoders or encoders), or None.
pub type Converters = Option<Vec<Option<Py<PyAny>>>>;

pub struct StructInfo {
    /// Interned field names, by field index.
    pub keys: Vec<Py<PyString>>,
    /// The value of an absent conditional field, by field index.
    pub defaults: Vec<Py<PyAny>>,
    pub class: Option<Py<PyType>>,
    /// Byte offsets of the class's member slots, by field index (typed codecs only).
    pub offsets: Vec<isize>,
    /// Converters from wire values to Python values and back, by field index (typed only).
    pub decoders: Vec<Option<Py<PyAny>>>,
    pub encoders: Vec<Option<Py<PyAny>>>,
}

impl StructInfo {
    /// Visits every object the info holds (its owner's `__traverse__`: a class refers to its
    /// codec, which refers back to the class, so the collector must see these references).
    pub fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for k in &self.keys {
            visit.call(k)?;
        }
        for d in &self.defaults {
            visit.call(d)?;
        }
        visit.call(&self.class)?;
        for c in self.decoders.iter().chain(&self.encoders) {
            visit.call(c)?;
        }
        Ok(())
    }
}

/// Visits every object of a converter list (see `StructInfo::traverse`).
pub fn traverse_converters(c: &Converters, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    for c in c.iter().flatten() {
        visit.call(c)?;
    }
    Ok(())
}

// From CPython's structmember.h (stable since 3.0; Py_T_OBJECT_EX in 3.12+).
const T_OBJECT_EX: i32 = 16;
const READONLY: i32 = 1;

/// `cls.__dict__[name]` when the class itself defines `name` (a field of the class, not of
/// a base: its slot's descriptor is there), without `getattr`'s walk of the metaclass's and
/// the class's MROs (a new class misses the type attribute cache on every name).
fn own_attr<'py>(
    cls: &Bound<'py, PyType>,
    name: &Bound<'py, PyString>,
) -> Option<Bound<'py, PyAny>> {
    let py = cls.py();
    // SAFETY: `tp_dict` of a type is NULL or a dict the type owns while we hold the type;
    // the item it gives is a borrowed reference into that dict, taken as a new reference
    // at once. A lookup error (none for a str key) is cleared: `getattr` then decides.
    unsafe {
        let dict = (*cls.as_type_ptr()).tp_dict;
        if dict.is_null() {
            return None;
        }
        let item = ffi::PyDict_GetItemWithError(dict, name.as_ptr());
        if item.is_null() {
            let _ = PyErr::take(py);
            return None;
        }
        Some(Bound::from_borrowed_ptr(py, item))
    }
}

/// The offset of the member slot `name` of `cls`, which must be a writable object slot.
fn member_offset(cls: &Bound<'_, PyType>, name: &Bound<'_, PyString>) -> PyResult<isize> {
    let descr = match own_attr(cls, name) {
        Some(d) => d,
        None => cls.getattr(name)?,
    };
    // SAFETY: we only read PyMemberDescrObject fields after checking the descriptor's type.
    unsafe {
        if ffi::Py_TYPE(descr.as_ptr()) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
            return Err(PyTypeError::new_err(format!(
                "{}.{name} is not a slot (bytewright.Struct classes store fields in __slots__)",
                cls.name()?
            )));
        }
        let d = descr.as_ptr().cast::<ffi::PyMemberDescrObject>();
        let m = &*(*d).d_member;
        if m.type_code != T_OBJECT_EX || m.flags & READONLY != 0 {
            return Err(PyTypeError::new_err(format!(
                "{}.{name} is not a writable object slot",
                cls.name()?
            )));
        }
        let owner = (*d).d_common.d_type;
        if ffi::PyType_IsSubtype(cls.as_ptr().cast(), owner) == 0 {
            return Err(PyTypeError::new_err(format!(
                "{}.{name} belongs to another class",
                cls.name()?
            )));
        }
        Ok(m.offset)
    }
}

/// `name`, interned (field names usually are already: then this is a flag check).
fn interned(name: Bound<'_, PyString>) -> Bound<'_, PyString> {
    let py = name.py();
    let mut ptr = name.into_ptr();
    // SAFETY: `ptr` is an owned reference to a str; PyUnicode_InternInPlace leaves an owned
    // reference in it (the interned string, or the same one).
    unsafe {
        ffi::PyUnicode_InternInPlace(&mut ptr);
        Bound::from_owned_ptr(py, ptr).cast_into_unchecked()
    }
}

impl StructInfo {
    /// The same info (a struct of a compiled part, in a codec that reuses it).
    pub fn clone_ref(&self, py: Python<'_>) -> Self {
        let all = |v: &[Option<Py<PyAny>>]| -> Vec<Option<Py<PyAny>>> {
            v.iter()
                .map(|c| c.as_ref().map(|c| c.clone_ref(py)))
                .collect()
        };
        StructInfo {
            keys: self.keys.iter().map(|k| k.clone_ref(py)).collect(),
            defaults: self.defaults.iter().map(|d| d.clone_ref(py)).collect(),
            class: self.class.as_ref().map(|c| c.clone_ref(py)),
            offsets: self.offsets.clone(),
            decoders: all(&self.decoders),
            encoders: all(&self.encoders),
        }
    }

    pub fn new(
        class: Option<Bound<'_, PyType>>,
        names: Vec<Bound<'_, PyString>>,
        defaults: Vec<Py<PyAny>>,
        converters: (Converters, Converters),
        typed: bool,
    ) -> PyResult<Self> {
        if defaults.len() != names.len() {
            return Err(PyTypeError::new_err("one default per field is required"));
        }
        let keys: Vec<Bound<'_, PyString>> = names.into_iter().map(interned).collect();
        let offsets = match (&class, typed) {
            (Some(cls), true) => keys
                .iter()
                .map(|n| member_offset(cls, n))
                .collect::<PyResult<_>>()?,
            _ => Vec::new(),
        };
        Ok(StructInfo {
            keys: keys.into_iter().map(Bound::unbind).collect(),
            defaults,
            class: class.map(Bound::unbind),
            offsets,
            decoders: if typed {
                converters.0.unwrap_or_default()
            } else {
                Vec::new()
            },
            encoders: if typed {
                converters.1.unwrap_or_default()
            } else {
                Vec::new()
            },
        })
    }
}
