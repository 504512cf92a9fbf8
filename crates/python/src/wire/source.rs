//! Reads the values to pack from Python objects: typed instances (member slots), dicts,
//! other mappings, or objects with attributes.

use std::borrow::Cow;
use std::cell::Cell;

use pyo3::ffi;
use pyo3::prelude::*;

use super::sink::ext_type;
use super::structs::StructInfo;
use bytewright_wire::host::{Dyn, Source, SourceError};
use bytewright_wire::program::Encoding;

pub struct PySource<'a, 'py> {
    pub py: Python<'py>,
    pub structs: &'a [StructInfo],
    /// The dict read last and the position after the entry it gave: fields are read in
    /// declaration order, which is usually the dict's order, so the next entry is tried
    /// before a hash lookup.
    cursor: Cell<(*mut ffi::PyObject, ffi::Py_ssize_t)>,
}

impl<'a, 'py> PySource<'a, 'py> {
    pub fn new(py: Python<'py>, structs: &'a [StructInfo]) -> Self {
        PySource {
            py,
            structs,
            cursor: Cell::new((std::ptr::null_mut(), 0)),
        }
    }

    /// The next entry of `dict` after the cursor, when its key is `key`.
    ///
    /// # Safety
    /// `dict` must be a live dict and `key` a live str; the GIL is held.
    #[inline]
    unsafe fn next_entry(
        &self,
        dict: *mut ffi::PyObject,
        key: *mut ffi::PyObject,
    ) -> Option<*mut ffi::PyObject> {
        let (d, pos) = self.cursor.get();
        let mut pos = if d == dict { pos } else { 0 };
        let mut k = std::ptr::null_mut();
        let mut v = std::ptr::null_mut();
        if ffi::PyDict_Next(dict, &mut pos, &mut k, &mut v) == 0 {
            return None;
        }
        // Identity first (interned keys); else an exact str with the same text.
        let same = k == key || (ffi::PyUnicode_CheckExact(k) != 0 && str_eq(k, key));
        if same {
            self.cursor.set((dict, pos));
            Some(v)
        } else {
            None
        }
    }
}

/// Whether two ready str objects hold the same text (same length, kind and code units).
///
/// # Safety
/// Both must be live, exact str objects.
#[inline]
unsafe fn str_eq(a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> bool {
    let n = ffi::PyUnicode_GET_LENGTH(a);
    if n != ffi::PyUnicode_GET_LENGTH(b) || ffi::PyUnicode_KIND(a) != ffi::PyUnicode_KIND(b) {
        return false;
    }
    let bytes = n as usize * ffi::PyUnicode_KIND(a) as usize;
    let (pa, pb) = (
        ffi::PyUnicode_DATA(a).cast::<u8>(),
        ffi::PyUnicode_DATA(b).cast::<u8>(),
    );
    std::slice::from_raw_parts(pa, bytes) == std::slice::from_raw_parts(pb, bytes)
}

/// An exact `int`'s value when it fits 64 bits (signed or unsigned), without the slow
/// byte-array path for values above 2**63.
///
/// # Safety
/// `p` must be a live `int`; the GIL is held. On `None` an exception may be set (only for
/// failures other than "out of range").
#[inline]
pub(crate) unsafe fn long_to_i128(p: *mut ffi::PyObject) -> Option<i128> {
    if ffi::PyLong_CheckExact(p) != 0 {
        if let Some(v) = crate::cpython::small_int(p) {
            // Up to 90 bits: what does not fit 64 is "out of range", as below.
            return (i128::from(i64::MIN)..=i128::from(u64::MAX))
                .contains(&v)
                .then_some(v);
        }
    }
    let mut overflow = 0;
    let x = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
    if overflow == 0 {
        if x == -1 && !ffi::PyErr_Occurred().is_null() {
            return None;
        }
        return Some(i128::from(x));
    }
    if overflow > 0 {
        return crate::cpython::u64_of_large(p).map(i128::from);
    }
    None
}

type SResult<T> = Result<T, SourceError<PyErr>>;

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

impl<'py> PySource<'_, 'py> {
    /// A field's value as stored, before any converter.
    #[inline]
    fn raw_field(
        &self,
        obj: &Bound<'py, PyAny>,
        sid: u32,
        field: u16,
    ) -> SResult<Option<Bound<'py, PyAny>>> {
        let info = &self.structs[sid as usize];
        let p = obj.as_ptr();
        // SAFETY: all pointers are live objects; borrowed results are increfed before use.
        unsafe {
            if let Some(cls) = &info.class {
                let exact = ffi::Py_TYPE(p) == cls.as_ptr().cast();
                let inst = exact
                    || (ffi::PyTuple_Check(p) == 0
                        && ffi::PyDict_Check(p) == 0
                        && ffi::PyType_IsSubtype(ffi::Py_TYPE(p), cls.as_ptr().cast()) != 0);
                if !info.offsets.is_empty() && inst {
                    let slot = *p
                        .cast::<u8>()
                        .offset(info.offsets[field as usize])
                        .cast::<*mut ffi::PyObject>();
                    if slot.is_null() || slot == ffi::Py_None() {
                        return Ok(None);
                    }
                    return Ok(Some(Bound::from_borrowed_ptr(self.py, slot)));
                }
            }
            let key = info.keys[field as usize].as_ptr();
            if ffi::PyTuple_Check(p) != 0 {
                // A tuple lists every named field in declaration order.
                let n = ffi::PyTuple_GET_SIZE(p) as usize;
                if n != info.keys.len() {
                    return Err(SourceError::Type(format!(
                        "a tuple for this struct needs {} items (every named field in order), got {n}",
                        info.keys.len()
                    )));
                }
                let v = ffi::PyTuple_GET_ITEM(p, field as ffi::Py_ssize_t);
                if v == ffi::Py_None() {
                    return Ok(None);
                }
                return Ok(Some(Bound::from_borrowed_ptr(self.py, v)));
            }
            if ffi::PyDict_Check(p) != 0 {
                let v = match self.next_entry(p, key) {
                    Some(v) => v,
                    None => ffi::PyDict_GetItemWithError(p, key),
                };
                if v.is_null() {
                    if !ffi::PyErr_Occurred().is_null() {
                        return Err(self.host());
                    }
                    return Ok(None);
                }
                if v == ffi::Py_None() {
                    return Ok(None);
                }
                return Ok(Some(Bound::from_borrowed_ptr(self.py, v)));
            }
            if ffi::PyMapping_Check(p) != 0
                && ffi::PyUnicode_Check(p) == 0
                && ffi::PySequence_Check(p) == 0
            {
                let v = ffi::PyObject_GetItem(p, key);
                if v.is_null() {
                    if ffi::PyErr_ExceptionMatches(ffi::PyExc_KeyError) != 0 {
                        ffi::PyErr_Clear();
                        return Ok(None);
                    }
                    return Err(self.host());
                }
                let v = Bound::from_owned_ptr(self.py, v);
                return Ok((!v.is_none()).then_some(v));
            }
            let v = ffi::PyObject_GetAttr(p, key);
            if v.is_null() {
                if ffi::PyErr_ExceptionMatches(ffi::PyExc_AttributeError) != 0 {
                    ffi::PyErr_Clear();
                    if ffi::PyList_Check(p) != 0
                        || ffi::PyTuple_Check(p) != 0
                        || ffi::PyUnicode_Check(p) != 0
                    {
                        return Err(SourceError::Type(format!(
                            "expected a mapping or an object with attributes, got {}",
                            type_name(obj)
                        )));
                    }
                    return Ok(None);
                }
                return Err(self.host());
            }
            let v = Bound::from_owned_ptr(self.py, v);
            Ok((!v.is_none()).then_some(v))
        }
    }

    fn host(&self) -> SourceError<PyErr> {
        SourceError::Host(PyErr::fetch(self.py))
    }

    /// Turns a pending Python exception into a type error with its message.
    fn type_from_pending(&self, what: &str) -> SourceError<PyErr> {
        let e = PyErr::fetch(self.py);
        SourceError::Type(format!("{what}: {e}"))
    }
}

impl<'py> Source for PySource<'_, 'py> {
    type Value = Bound<'py, PyAny>;
    type Error = PyErr;

    #[inline]
    fn field(&self, obj: &Self::Value, sid: u32, field: u16) -> SResult<Option<Self::Value>> {
        let v = self.raw_field(obj, sid, field)?;
        match (v, self.structs[sid as usize].encoders.get(field as usize)) {
            (Some(v), Some(Some(encode))) => match encode.bind(self.py).call1((&v,)) {
                Ok(e) => Ok(Some(e)),
                Err(e) => Err(SourceError::Type(format!("the converter failed: {e}"))),
            },
            (v, _) => Ok(v),
        }
    }

    #[inline]
    fn int(&self, v: &Self::Value) -> SResult<i128> {
        let p = v.as_ptr();
        // SAFETY: live object; errors are fetched right away.
        unsafe {
            if ffi::PyLong_Check(p) == 0 {
                if ffi::PyFloat_Check(p) != 0
                    || ffi::PyUnicode_Check(p) != 0
                    || ffi::PyBytes_Check(p) != 0
                {
                    return Err(SourceError::Type(format!(
                        "expected int, got {}",
                        type_name(v)
                    )));
                }
                // Integer-like objects (numpy integers, IntEnum members...) through __index__.
                let i = ffi::PyNumber_Index(p);
                if i.is_null() {
                    ffi::PyErr_Clear();
                    return Err(SourceError::Type(format!(
                        "expected int, got {}",
                        type_name(v)
                    )));
                }
                let i = Bound::from_owned_ptr(self.py, i);
                return self.int(&i);
            }
            match long_to_i128(p) {
                Some(v) => return Ok(v),
                None if !ffi::PyErr_Occurred().is_null() => return Err(self.host()),
                None => {}
            }
            if !crate::cpython::int_is_negative(p) {
                return Err(SourceError::Type(
                    "integer too large (more than 64 bits)".into(),
                ));
            }
            Err(SourceError::Type(
                "integer too small (more than 64 bits)".into(),
            ))
        }
    }

    #[inline]
    fn float(&self, v: &Self::Value) -> SResult<f64> {
        let p = v.as_ptr();
        // SAFETY: live object.
        unsafe {
            if ffi::PyFloat_Check(p) != 0 {
                return Ok(ffi::PyFloat_AS_DOUBLE(p));
            }
            if ffi::PyLong_Check(p) != 0 {
                let f = ffi::PyLong_AsDouble(p);
                if f == -1.0 && !ffi::PyErr_Occurred().is_null() {
                    return Err(self.type_from_pending("cannot convert to float"));
                }
                return Ok(f);
            }
        }
        Err(SourceError::Type(format!(
            "expected float, got {}",
            type_name(v)
        )))
    }

    #[inline]
    fn bool(&self, v: &Self::Value) -> SResult<bool> {
        let p = v.as_ptr();
        // SAFETY: comparing against the bool singletons.
        unsafe {
            if p == ffi::Py_True() {
                return Ok(true);
            }
            if p == ffi::Py_False() {
                return Ok(false);
            }
        }
        match self.int(v) {
            Ok(0) => Ok(false),
            Ok(1) => Ok(true),
            _ => Err(SourceError::Type(format!(
                "expected bool, got {}",
                type_name(v)
            ))),
        }
    }

    #[inline]
    fn bytes<'a>(&self, v: &'a Self::Value) -> SResult<&'a [u8]> {
        let p = v.as_ptr();
        // SAFETY: the slices borrow the object's storage, which `v` keeps alive; the VM copies
        // them before any other Python code can run.
        unsafe {
            if ffi::PyBytes_Check(p) != 0 {
                let n = ffi::PyBytes_Size(p) as usize;
                return Ok(std::slice::from_raw_parts(
                    ffi::PyBytes_AS_STRING(p).cast::<u8>(),
                    n,
                ));
            }
            if ffi::PyByteArray_Check(p) != 0 {
                let n = ffi::PyByteArray_Size(p) as usize;
                return Ok(std::slice::from_raw_parts(
                    ffi::PyByteArray_AsString(p).cast::<u8>(),
                    n,
                ));
            }
        }
        Err(SourceError::Type(format!(
            "expected bytes, got {}",
            type_name(v)
        )))
    }

    fn text<'a>(&self, v: &'a Self::Value, enc: Encoding) -> SResult<Cow<'a, [u8]>> {
        let p = v.as_ptr();
        // SAFETY: the UTF-8 buffer and the 1-byte data are owned by the (immutable) str.
        unsafe {
            if ffi::PyUnicode_Check(p) == 0 {
                return Err(SourceError::Type(format!(
                    "expected str, got {}",
                    type_name(v)
                )));
            }
            match enc {
                Encoding::Latin1 => {
                    if ffi::PyUnicode_KIND(p) == ffi::PyUnicode_1BYTE_KIND {
                        let n = ffi::PyUnicode_GET_LENGTH(p) as usize;
                        return Ok(Cow::Borrowed(std::slice::from_raw_parts(
                            ffi::PyUnicode_1BYTE_DATA(p),
                            n,
                        )));
                    }
                    Err(SourceError::Type(
                        "text has characters outside latin-1".into(),
                    ))
                }
                Encoding::Ascii | Encoding::Utf8 => {
                    if enc == Encoding::Ascii && ffi::PyUnicode_IS_ASCII(p) == 0 {
                        return Err(SourceError::Type("text has non-ascii characters".into()));
                    }
                    let mut n: ffi::Py_ssize_t = 0;
                    let s = ffi::PyUnicode_AsUTF8AndSize(p, &mut n);
                    if s.is_null() {
                        return Err(self.type_from_pending("text cannot be encoded as utf-8"));
                    }
                    Ok(Cow::Borrowed(std::slice::from_raw_parts(
                        s.cast::<u8>(),
                        n as usize,
                    )))
                }
            }
        }
    }

    #[inline]
    fn len(&self, v: &Self::Value) -> SResult<usize> {
        let p = v.as_ptr();
        // SAFETY: live object.
        unsafe {
            if ffi::PyList_Check(p) != 0 {
                return Ok(ffi::PyList_GET_SIZE(p) as usize);
            }
            if ffi::PyTuple_Check(p) != 0 {
                return Ok(ffi::PyTuple_GET_SIZE(p) as usize);
            }
            if ffi::PySequence_Check(p) == 0
                || ffi::PyUnicode_Check(p) != 0
                || ffi::PyBytes_Check(p) != 0
            {
                return Err(SourceError::Type(format!(
                    "expected a list, got {}",
                    type_name(v)
                )));
            }
            let n = ffi::PySequence_Size(p);
            if n < 0 {
                return Err(self.host());
            }
            Ok(n as usize)
        }
    }

    #[inline]
    fn item(&self, v: &Self::Value, i: usize) -> SResult<Self::Value> {
        let p = v.as_ptr();
        // SAFETY: bounds-checked accessors; borrowed items are increfed.
        unsafe {
            if ffi::PyList_Check(p) != 0 {
                if i >= ffi::PyList_GET_SIZE(p) as usize {
                    return Err(SourceError::Type(
                        "the list changed size while packing".into(),
                    ));
                }
                return Ok(Bound::from_borrowed_ptr(
                    self.py,
                    ffi::PyList_GET_ITEM(p, i as ffi::Py_ssize_t),
                ));
            }
            if ffi::PyTuple_Check(p) != 0 {
                return Ok(Bound::from_borrowed_ptr(
                    self.py,
                    ffi::PyTuple_GET_ITEM(p, i as ffi::Py_ssize_t),
                ));
            }
            let it = ffi::PySequence_GetItem(p, i as ffi::Py_ssize_t);
            if it.is_null() {
                return Err(self.host());
            }
            Ok(Bound::from_owned_ptr(self.py, it))
        }
    }

    fn kind(&self, v: &Self::Value) -> SResult<Dyn> {
        let p = v.as_ptr();
        // SAFETY: type checks on a live object.
        unsafe {
            if p == ffi::Py_None() {
                return Ok(Dyn::None);
            }
            if ffi::PyBool_Check(p) != 0 {
                return Ok(Dyn::Bool(p == ffi::Py_True()));
            }
            if ffi::PyLong_Check(p) != 0 {
                return self.int(v).map(Dyn::Int);
            }
            if ffi::PyFloat_Check(p) != 0 {
                return Ok(Dyn::Float(ffi::PyFloat_AS_DOUBLE(p)));
            }
            if ffi::PyUnicode_Check(p) != 0 {
                return Ok(Dyn::Str);
            }
            if ffi::PyBytes_Check(p) != 0 || ffi::PyByteArray_Check(p) != 0 {
                return Ok(Dyn::Bytes);
            }
            if ffi::PyDict_Check(p) != 0 {
                return Ok(Dyn::Map);
            }
            if ffi::PyTuple_Check(p) != 0 && ffi::PyTuple_CheckExact(p) == 0 {
                // bytewright.types.ExtType, or another library's ExtType (msgpack's): a
                // 2-tuple subclass of that name.
                let ext = ext_type(self.py).map_err(SourceError::Host)?;
                let named = v.get_type().name().is_ok_and(|n| n == "ExtType");
                if ffi::PyObject_TypeCheck(p, ext.as_ptr().cast()) != 0
                    || (named && ffi::PyTuple_GET_SIZE(p) == 2)
                {
                    return Ok(Dyn::Ext);
                }
            }
            if ffi::PyList_Check(p) != 0 || ffi::PyTuple_Check(p) != 0 {
                return Ok(Dyn::List);
            }
        }
        Err(SourceError::Type(format!(
            "cannot pack a {} as MessagePack",
            type_name(v)
        )))
    }

    fn entries(&self, v: &Self::Value) -> SResult<Vec<(Self::Value, Self::Value)>> {
        let p = v.as_ptr();
        let mut out = Vec::new();
        // SAFETY: iterating a live dict; borrowed items are increfed into Bound values.
        unsafe {
            let mut pos: ffi::Py_ssize_t = 0;
            let mut k = std::ptr::null_mut();
            let mut val = std::ptr::null_mut();
            while ffi::PyDict_Next(p, &mut pos, &mut k, &mut val) != 0 {
                out.push((
                    Bound::from_borrowed_ptr(self.py, k),
                    Bound::from_borrowed_ptr(self.py, val),
                ));
            }
        }
        Ok(out)
    }

    fn ext(&self, v: &Self::Value) -> SResult<(i8, Self::Value)> {
        let code: i64 = v
            .get_item(0)
            .and_then(|c| c.extract())
            .map_err(SourceError::Host)?;
        let data = v.get_item(1).map_err(SourceError::Host)?;
        let code = i8::try_from(code)
            .map_err(|_| SourceError::Type(format!("ext type code {code} is outside -128..127")))?;
        Ok((code, data))
    }

    fn is_struct(&self, v: &Self::Value, sid: u32) -> Option<bool> {
        let info = &self.structs[sid as usize];
        let cls = info.class.as_ref()?;
        let p = v.as_ptr();
        // SAFETY: live objects.
        unsafe {
            if ffi::PyDict_Check(p) != 0 {
                return None;
            }
            Some(ffi::PyObject_TypeCheck(p, cls.as_ptr().cast()) != 0)
        }
    }
}
