//! What the adapter knows about each struct of a schema: keys, defaults, and for typed
//! codecs the class and the byte offsets of its member slots.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

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

// From CPython's structmember.h (stable since 3.0; Py_T_OBJECT_EX in 3.12+).
const T_OBJECT_EX: i32 = 16;
const READONLY: i32 = 1;

/// The offset of the member slot `name` of `cls`, which must be a writable object slot.
fn member_offset(cls: &Bound<'_, PyType>, name: &str) -> PyResult<isize> {
    let descr = cls.getattr(name)?;
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

impl StructInfo {
    pub fn new(
        py: Python<'_>,
        class: Option<Bound<'_, PyType>>,
        names: Vec<String>,
        defaults: Vec<Py<PyAny>>,
        converters: (Converters, Converters),
        typed: bool,
    ) -> PyResult<Self> {
        if defaults.len() != names.len() {
            return Err(PyTypeError::new_err("one default per field is required"));
        }
        let offsets = match (&class, typed) {
            (Some(cls), true) => names
                .iter()
                .map(|n| member_offset(cls, n))
                .collect::<PyResult<_>>()?,
            _ => Vec::new(),
        };
        Ok(StructInfo {
            keys: names
                .iter()
                .map(|n| PyString::intern(py, n).unbind())
                .collect(),
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
