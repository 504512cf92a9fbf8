//! The encoder's memo: object address -> memo slot, holding a reference to each key.
//!
//! Most graphs share a handful of objects, so the first entries live in an inline array
//! (no allocation, a short linear scan); only larger graphs spill into a hash map.

use std::mem::MaybeUninit;

use pyo3::ffi;

use super::ptrmap::PtrMap;

const INLINE: usize = 16;
/// The inline entries [`Memo::get`] scans in line; the rest are scanned out of line (most
/// graphs share fewer, and a short scan the compiler can see whole is the cheapest).
const FIRST: usize = 8;

pub struct Memo {
    /// The first `len` entries are written; the rest are never read (left uninitialised,
    /// as every `dumps` builds a memo and most graphs put nothing in it).
    inline: [MaybeUninit<(usize, u32)>; INLINE],
    len: usize,
    spill: PtrMap<u32>,
}

impl Default for Memo {
    fn default() -> Self {
        Self {
            inline: [MaybeUninit::uninit(); INLINE],
            len: 0,
            spill: PtrMap::default(),
        }
    }
}

impl Memo {
    /// Whether nothing was ever remembered (no reference held, no map allocated).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.spill.capacity() == 0
    }

    #[inline]
    pub fn get(&self, obj: *mut ffi::PyObject) -> Option<u32> {
        let key = obj as usize;
        for entry in &self.inline[..self.len.min(FIRST)] {
            // SAFETY: the first `len` entries are initialised (see `insert`).
            let (k, slot) = unsafe { entry.assume_init() };
            if k == key {
                return Some(slot);
            }
        }
        if self.len <= FIRST {
            None
        } else {
            self.get_more(key)
        }
    }

    /// [`Memo::get`] past the first [`FIRST`] entries.
    #[inline(never)]
    fn get_more(&self, key: usize) -> Option<u32> {
        for entry in &self.inline[FIRST..self.len] {
            // SAFETY: the first `len` entries are initialised (see `insert`).
            let (k, slot) = unsafe { entry.assume_init() };
            if k == key {
                return Some(slot);
            }
        }
        if self.spill.is_empty() {
            None
        } else {
            self.spill.get(&key).copied()
        }
    }

    /// Remembers `obj` (which must be live, with the GIL held) under `slot`.
    #[inline(always)]
    pub fn insert(&mut self, obj: *mut ffi::PyObject, slot: u32) {
        // SAFETY: obj is live and the GIL is held; the new reference keeps the address
        // from being reused while it is a key, and is released in Drop.
        unsafe { ffi::Py_INCREF(obj) };
        if self.len < INLINE {
            self.inline[self.len] = MaybeUninit::new((obj as usize, slot));
            self.len += 1;
        } else {
            self.spill_insert(obj, slot);
        }
    }

    #[inline(never)]
    fn spill_insert(&mut self, obj: *mut ffi::PyObject, slot: u32) {
        if let Some(old) = self.spill.insert(obj as usize, slot) {
            // Already a key: keep a single reference.
            let _ = old;
            // SAFETY: we just took a second reference to the same live object.
            unsafe { ffi::Py_DECREF(obj) };
        }
    }
}

impl Memo {
    /// Releases the inline entries now (the cheap part of dropping the memo), so that an
    /// encoder holding nothing else need not run its full drop.
    #[inline(always)]
    pub fn release_inline(&mut self) {
        let len = std::mem::replace(&mut self.len, 0);
        // SAFETY: every inline key holds one reference taken in `insert`; `len` is zero
        // now, so none is released twice. The GIL is held (the memo lives in a native call).
        unsafe {
            for entry in &self.inline[..len] {
                // The first `len` entries are initialised (see `insert`).
                ffi::Py_DECREF(entry.assume_init().0 as *mut ffi::PyObject);
            }
        }
    }
}

impl Drop for Memo {
    fn drop(&mut self) {
        // SAFETY: every key holds one reference taken in `insert`; the memo only lives
        // inside a native call, with the GIL held.
        unsafe {
            for entry in &self.inline[..self.len] {
                // The first `len` entries are initialised (see `insert`).
                ffi::Py_DECREF(entry.assume_init().0 as *mut ffi::PyObject);
            }
            if self.spill.is_empty() {
                return;
            }
            for &key in self.spill.keys() {
                ffi::Py_DECREF(key as *mut ffi::PyObject);
            }
        }
    }
}
