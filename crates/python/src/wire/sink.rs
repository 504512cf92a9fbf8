//! Builds Python objects while the unpack VM walks the bytes: dicts or typed instances.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use super::structs::StructInfo;
use bytewright_wire::host::Sink;

static EXT_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `bytewright.types.ExtType`, the Python form of a MessagePack extension value.
pub fn ext_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    EXT_TYPE.import(py, "bytewright.types", "ExtType")
}

pub struct PySink<'a, 'py> {
    pub py: Python<'py>,
    pub structs: &'a [StructInfo],
    pub typed: bool,
}

pub struct PyStruct<'py> {
    obj: Bound<'py, PyAny>,
    sid: u32,
}

impl<'py> PySink<'_, 'py> {
    #[inline]
    fn own(&self, p: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: `p` is a new reference or NULL with an exception set.
        unsafe { Bound::from_owned_ptr_or_err(self.py, p) }
    }

    /// A field's wire value as the Python value stored for it (through its decoder, if any).
    #[inline]
    fn decoded(
        &self,
        s: &PyStruct<'py>,
        field: u16,
        v: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.structs[s.sid as usize].decoders.get(field as usize) {
            Some(Some(decode)) => decode.bind(self.py).call1((v,)),
            _ => Ok(v),
        }
    }

    /// Stores a Python value (already converted) into a struct being built.
    #[inline]
    fn store(&mut self, s: &mut PyStruct<'py>, field: u16, v: Bound<'py, PyAny>) -> PyResult<()> {
        let info = &self.structs[s.sid as usize];
        if self.typed && info.class.is_some() {
            let off = info.offsets[field as usize];
            // SAFETY: `off` is the offset of an object member slot of this exact type (checked at
            // codec construction); the slot is NULL (fresh instance) or already owned, so the old
            // value is released.
            unsafe {
                let slot = s
                    .obj
                    .as_ptr()
                    .cast::<u8>()
                    .offset(off)
                    .cast::<*mut ffi::PyObject>();
                let old = std::mem::replace(&mut *slot, v.into_ptr());
                ffi::Py_XDECREF(old);
            }
            return Ok(());
        }
        let key = info.keys[field as usize].as_ptr();
        // SAFETY: dict, str key and value are live; SetItem does not steal.
        if unsafe { ffi::PyDict_SetItem(s.obj.as_ptr(), key, v.as_ptr()) } != 0 {
            return Err(PyErr::fetch(self.py));
        }
        Ok(())
    }
}

impl<'py> Sink for PySink<'_, 'py> {
    type Value = Bound<'py, PyAny>;
    type Struct = PyStruct<'py>;
    type List = Vec<Bound<'py, PyAny>>;
    type Map = Bound<'py, PyAny>;
    type Error = PyErr;

    #[inline]
    fn uint(&mut self, v: u64) -> PyResult<Self::Value> {
        // SAFETY: plain constructor call with the GIL held.
        self.own(unsafe { ffi::PyLong_FromUnsignedLongLong(v) })
    }
    #[inline]
    fn int(&mut self, v: i64) -> PyResult<Self::Value> {
        // SAFETY: as above.
        self.own(unsafe { ffi::PyLong_FromLongLong(v) })
    }
    #[inline]
    fn float(&mut self, v: f64) -> PyResult<Self::Value> {
        // SAFETY: as above.
        self.own(unsafe { ffi::PyFloat_FromDouble(v) })
    }
    #[inline]
    fn bool(&mut self, v: bool) -> PyResult<Self::Value> {
        // SAFETY: as above.
        self.own(unsafe { ffi::PyBool_FromLong(v.into()) })
    }
    #[inline]
    fn bytes(&mut self, v: &[u8]) -> PyResult<Self::Value> {
        // SAFETY: copies `v.len()` bytes from a valid slice.
        self.own(unsafe {
            ffi::PyBytes_FromStringAndSize(v.as_ptr().cast(), v.len() as ffi::Py_ssize_t)
        })
    }
    #[inline]
    fn str(&mut self, v: &str, ascii: bool) -> PyResult<Self::Value> {
        if ascii {
            // SAFETY: the VM validated that every byte is ASCII.
            return self.own(unsafe { crate::cpython::new_ascii_str(v.as_bytes()) });
        }
        // SAFETY: valid UTF-8 slice.
        self.own(unsafe {
            ffi::PyUnicode_FromStringAndSize(v.as_ptr().cast(), v.len() as ffi::Py_ssize_t)
        })
    }
    #[inline]
    fn latin1(&mut self, v: &[u8]) -> PyResult<Self::Value> {
        // SAFETY: latin-1 decoding accepts every byte.
        self.own(unsafe {
            ffi::PyUnicode_DecodeLatin1(
                v.as_ptr().cast(),
                v.len() as ffi::Py_ssize_t,
                std::ptr::null(),
            )
        })
    }

    #[inline]
    fn begin_struct(&mut self, sid: u32) -> PyResult<Self::Struct> {
        let info = &self.structs[sid as usize];
        let obj = match (&info.class, self.typed) {
            (Some(cls), true) => {
                let tp = cls.as_ptr().cast::<ffi::PyTypeObject>();
                // SAFETY: `tp` is a live heap type whose layout was checked when the codec was
                // built; tp_alloc zero-fills every slot.
                self.own(unsafe { ((*tp).tp_alloc.expect("heap types have tp_alloc"))(tp, 0) })?
            }
            _ => self.own(crate::cpython::new_dict(info.keys.len()))?,
        };
        Ok(PyStruct { obj, sid })
    }

    #[inline]
    fn set_field(&mut self, s: &mut Self::Struct, field: u16, v: Self::Value) -> PyResult<()> {
        let v = self.decoded(s, field, v)?;
        self.store(s, field, v)
    }

    fn absent_field(&mut self, s: &mut Self::Struct, field: u16) -> PyResult<()> {
        // The default is a Python value already: no decoder applies to it.
        let v = self.structs[s.sid as usize].defaults[field as usize]
            .bind(self.py)
            .clone();
        self.store(s, field, v)
    }

    #[inline]
    fn end_struct(&mut self, s: Self::Struct) -> PyResult<Self::Value> {
        Ok(s.obj)
    }

    #[inline]
    fn none(&mut self) -> PyResult<Self::Value> {
        Ok(self.py.None().into_bound(self.py))
    }

    fn ext(&mut self, code: i8, data: &[u8]) -> PyResult<Self::Value> {
        let data = self.bytes(data)?;
        ext_type(self.py)?.call1((code, data))
    }

    #[inline]
    fn begin_map(&mut self, _cap: usize) -> PyResult<Self::Map> {
        // SAFETY: plain constructor call.
        self.own(unsafe { ffi::PyDict_New() })
    }

    #[inline]
    fn map_insert(&mut self, m: &mut Self::Map, k: Self::Value, v: Self::Value) -> PyResult<()> {
        // SAFETY: live dict, key and value; SetItem does not steal.
        if unsafe { ffi::PyDict_SetItem(m.as_ptr(), k.as_ptr(), v.as_ptr()) } != 0 {
            return Err(PyErr::fetch(self.py));
        }
        Ok(())
    }

    #[inline]
    fn end_map(&mut self, m: Self::Map) -> PyResult<Self::Value> {
        Ok(m)
    }

    #[inline]
    fn begin_list(&mut self, cap: usize) -> PyResult<Self::List> {
        Ok(Vec::with_capacity(cap))
    }
    #[inline]
    fn push(&mut self, l: &mut Self::List, v: Self::Value) -> PyResult<()> {
        l.push(v);
        Ok(())
    }
    fn end_list(&mut self, l: Self::List) -> PyResult<Self::Value> {
        // SAFETY: PyList_New(n) then exactly n SET_ITEMs, each stealing a new reference.
        unsafe {
            let list = ffi::PyList_New(l.len() as ffi::Py_ssize_t);
            if list.is_null() {
                return Err(PyErr::fetch(self.py));
            }
            for (i, v) in l.into_iter().enumerate() {
                ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, v.into_ptr());
            }
            self.own(list)
        }
    }
}

/// `explain` shows the values `unpack` stores: converted by the fields' decoders.
impl<'py> bytewright_explain::Host for PySink<'_, 'py> {
    fn field_value(
        &mut self,
        s: &Self::Struct,
        field: u16,
        v: Self::Value,
    ) -> PyResult<Self::Value> {
        self.decoded(s, field, v)
    }
    fn store_field(&mut self, s: &mut Self::Struct, field: u16, v: Self::Value) -> PyResult<()> {
        self.store(s, field, v)
    }
    fn absent_value(&mut self, s: &Self::Struct, field: u16) -> Option<Self::Value> {
        Some(
            self.structs[s.sid as usize].defaults[field as usize]
                .bind(self.py)
                .clone(),
        )
    }
}
