//! Input buffers (any C-contiguous buffer) and the growable `bytes` output of `pack`.

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;

use bytewright_wire::host::{Full, Output};

use crate::cpython::_PyBytes_Resize;

/// A borrowed view of a Python buffer, released on drop.
pub struct InBuf {
    view: Option<Box<ffi::Py_buffer>>,
    ptr: *const u8,
    len: usize,
}

impl InBuf {
    pub fn new(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Self> {
        let p = obj.as_ptr();
        // SAFETY: bytes expose their storage directly while `obj` lives; other objects go through
        // the buffer protocol, whose export keeps the memory valid (and unresizable) until release.
        unsafe {
            if !writable && ffi::PyBytes_Check(p) != 0 {
                return Ok(InBuf {
                    view: None,
                    ptr: ffi::PyBytes_AS_STRING(p).cast(),
                    len: ffi::PyBytes_Size(p) as usize,
                });
            }
            if ffi::PyObject_CheckBuffer(p) == 0 {
                return Err(PyTypeError::new_err(format!(
                    "expected a bytes-like object, got {}",
                    obj.get_type().name()?
                )));
            }
            let mut view: Box<ffi::Py_buffer> = Box::new(std::mem::zeroed());
            let flags = if writable {
                ffi::PyBUF_WRITABLE
            } else {
                ffi::PyBUF_SIMPLE
            };
            if ffi::PyObject_GetBuffer(p, &mut *view, flags) != 0 {
                let e = PyErr::fetch(obj.py());
                return Err(PyBufferError::new_err(format!(
                    "need a C-contiguous buffer: {e}"
                )));
            }
            let (ptr, len) = (view.buf as *const u8, view.len as usize);
            Ok(InBuf {
                view: Some(view),
                ptr,
                len,
            })
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: ptr/len describe memory kept alive by the bytes object or the buffer export.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: only constructed writable through a PyBUF_WRITABLE export.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
    }
}

impl Drop for InBuf {
    fn drop(&mut self) {
        if let Some(v) = self.view.as_mut() {
            // SAFETY: releasing the export obtained in `new`; the GIL is held by our callers.
            unsafe { ffi::PyBuffer_Release(&mut **v) };
        }
    }
}

/// Writes straight into a `bytes` object, growing it in place, so `pack` copies data once.
pub struct BytesOut {
    obj: *mut ffi::PyObject,
    len: usize,
    cap: usize,
    /// Never resized: `grow` past `cap` fails instead (see [`BytesOut::bounded`]).
    bounded: bool,
}

impl BytesOut {
    pub fn new(py: Python<'_>, cap: usize) -> PyResult<Self> {
        let cap = cap.max(16);
        // SAFETY: a fresh, uninitialised bytes object of `cap` bytes that only we reference.
        let obj =
            unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), cap as ffi::Py_ssize_t) };
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(BytesOut {
            obj,
            len: 0,
            cap,
            bounded: false,
        })
    }

    /// A bytes object of exactly `cap` bytes that never grows (growing past it is `Full`).
    /// Resizing calls the interpreter's allocator; without it, filling the object only
    /// writes its storage, so this one may be filled with the GIL released.
    pub fn bounded(py: Python<'_>, cap: usize) -> PyResult<Self> {
        let mut out = BytesOut::new(py, cap)?;
        out.bounded = true;
        Ok(out)
    }

    /// Shrinks to the written length and hands the object over.
    pub fn finish(mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // SAFETY: resizing our own unshared bytes object; on failure it is freed and set NULL.
        unsafe {
            if _PyBytes_Resize(&mut self.obj, self.len as ffi::Py_ssize_t) != 0 {
                self.obj = std::ptr::null_mut();
                return Err(PyErr::fetch(py));
            }
            let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
            Ok(Bound::from_owned_ptr(py, obj).unbind())
        }
    }

    /// Forgets the bytes written after `len` (a fast path that gave up).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    fn data(&mut self) -> *mut u8 {
        // SAFETY: obj is a live bytes object while self exists.
        unsafe { ffi::PyBytes_AS_STRING(self.obj).cast_mut().cast() }
    }
}

impl Drop for BytesOut {
    fn drop(&mut self) {
        // SAFETY: we own the only reference (or it is NULL).
        unsafe { ffi::Py_XDECREF(self.obj) };
    }
}

impl Output for BytesOut {
    #[inline]
    fn pos(&self) -> usize {
        self.len
    }

    #[inline]
    fn grow(&mut self, n: usize) -> Result<usize, Full> {
        if self.len + n > self.cap {
            if self.bounded {
                return Err(Full {
                    need: n,
                    cap: self.cap - self.len,
                });
            }
            let new_cap = (self.cap * 2).max(self.len + n);
            // SAFETY: resizing our own unshared bytes object.
            if unsafe { _PyBytes_Resize(&mut self.obj, new_cap as ffi::Py_ssize_t) } != 0 {
                // SAFETY: clearing the MemoryError; the caller reports it.
                unsafe { ffi::PyErr_Clear() };
                self.obj = std::ptr::null_mut();
                return Err(Full {
                    need: n,
                    cap: self.cap - self.len,
                });
            }
            self.cap = new_cap;
        }
        let at = self.len;
        self.len += n;
        Ok(at)
    }

    #[inline]
    fn slot(&mut self, at: usize, n: usize) -> &mut [u8] {
        assert!(at + n <= self.len, "slot inside grown bytes");
        // SAFETY: [at, at+n) lies within the grown part of the object's storage.
        unsafe { std::slice::from_raw_parts_mut(self.data().add(at), n) }
    }

    fn rewind(&mut self, pos: usize) {
        self.truncate(pos);
    }
}
