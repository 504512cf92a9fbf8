//! The encoder's memo: object address -> memo slot, holding a reference to each key.
//!
//! Most graphs share a handful of objects, so the first entries live in a small table in
//! line (no allocation): open addressing over [`BUCKETS`] buckets with a bit per bucket
//! saying whether it is used, so a lookup costs a multiply and a probe or two whether it
//! finds its key or not (an unused bucket ends the search). Entries that find no free
//! bucket within [`PROBES`] of their home spill into a hash map.

use std::mem::MaybeUninit;

use pyo3::ffi;

use super::ptrmap::PtrMap;

/// Buckets of the table in line (the bits of [`Memo::used`]).
const BUCKETS: usize = 32;
/// Buckets a key may sit past its home before it spills into the map.
const PROBES: usize = 4;

pub struct Memo {
    /// Bit `i` set: bucket `i` holds a key and its slot. The others are never read (left
    /// uninitialised, as every `dumps` builds a memo and most graphs put little in it).
    used: u32,
    keys: [MaybeUninit<usize>; BUCKETS],
    slots: [MaybeUninit<u32>; BUCKETS],
    /// Allocated on the first spill (a `None` costs one store to make and one test to
    /// check for every `dumps`, an empty map four and three).
    spill: Option<Box<PtrMap<u32>>>,
}

impl Default for Memo {
    #[inline(always)]
    fn default() -> Self {
        Self {
            used: 0,
            keys: [MaybeUninit::uninit(); BUCKETS],
            slots: [MaybeUninit::uninit(); BUCKETS],
            spill: None,
        }
    }
}

/// The bucket a key is looked for first: the top bits of its address times a large odd
/// constant (objects sit on 16-byte boundaries, in pools of equal sizes: the low bits
/// alone would crowd a few buckets).
#[inline(always)]
fn home(key: usize) -> usize {
    ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BUCKETS.trailing_zeros())) as usize
}

impl Memo {
    /// Whether nothing was ever remembered (no reference held, no map allocated).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.used == 0 && self.spill.is_none()
    }

    #[inline]
    pub fn get(&self, obj: *mut ffi::PyObject) -> Option<u32> {
        let key = obj as usize;
        let mut i = home(key);
        for _ in 0..PROBES {
            if self.used & (1 << i) == 0 {
                // Keys never leave the table: one looked for here would have taken this
                // bucket (or one before it).
                return None;
            }
            // SAFETY: bucket `i` is used, so its key and slot are initialised (`insert`).
            if unsafe { self.keys[i].assume_init() } == key {
                return Some(unsafe { self.slots[i].assume_init() });
            }
            i = (i + 1) % BUCKETS;
        }
        self.get_spilled(key)
    }

    /// [`Memo::get`] for a key whose buckets are all taken by others.
    #[inline(never)]
    fn get_spilled(&self, key: usize) -> Option<u32> {
        match &self.spill {
            Some(spill) if !spill.is_empty() => spill.get(&key).copied(),
            _ => None,
        }
    }

    /// Remembers `obj` (which must be live, with the GIL held) under `slot`.
    #[inline(always)]
    pub fn insert(&mut self, obj: *mut ffi::PyObject, slot: u32) {
        // SAFETY: obj is live and the GIL is held; the new reference keeps the address
        // from being reused while it is a key, and is released in Drop.
        unsafe { ffi::Py_INCREF(obj) };
        let key = obj as usize;
        let mut i = home(key);
        for _ in 0..PROBES {
            if self.used & (1 << i) == 0 {
                self.keys[i] = MaybeUninit::new(key);
                self.slots[i] = MaybeUninit::new(slot);
                self.used |= 1 << i;
                return;
            }
            i = (i + 1) % BUCKETS;
        }
        self.spill_insert(obj, slot);
    }

    /// Remembers `obj` under `slot` (as [`Memo::insert`]) if its first bucket is free,
    /// which also shows it is not remembered yet (keys never leave the table: it would
    /// have taken that bucket); `false`, and nothing done, otherwise.
    #[inline(always)]
    pub fn insert_at_home(&mut self, obj: *mut ffi::PyObject, slot: u32) -> bool {
        let key = obj as usize;
        let i = home(key);
        if self.used & (1 << i) != 0 {
            return false;
        }
        // SAFETY: as in `insert`.
        unsafe { ffi::Py_INCREF(obj) };
        self.keys[i] = MaybeUninit::new(key);
        self.slots[i] = MaybeUninit::new(slot);
        self.used |= 1 << i;
        true
    }

    /// The slot of `obj` if it is remembered; otherwise remembers it under `slot` (as
    /// [`Memo::insert`]) and gives `None`. One probe of the table serves both.
    #[inline(always)]
    pub fn get_or_insert(&mut self, obj: *mut ffi::PyObject, slot: u32) -> Option<u32> {
        let key = obj as usize;
        let mut i = home(key);
        for _ in 0..PROBES {
            if self.used & (1 << i) == 0 {
                // Keys never leave the table: `obj` is not in it or in the map.
                // SAFETY: obj is live and the GIL is held; the new reference keeps the
                // address from being reused while it is a key, and is released in Drop.
                unsafe { ffi::Py_INCREF(obj) };
                self.keys[i] = MaybeUninit::new(key);
                self.slots[i] = MaybeUninit::new(slot);
                self.used |= 1 << i;
                return None;
            }
            // SAFETY: bucket `i` is used, so its key and slot are initialised.
            if unsafe { self.keys[i].assume_init() } == key {
                return Some(unsafe { self.slots[i].assume_init() });
            }
            i = (i + 1) % BUCKETS;
        }
        self.spilled_get_or_insert(obj, slot)
    }

    /// [`Memo::get_or_insert`] for a key whose buckets are all taken by others.
    #[inline(never)]
    fn spilled_get_or_insert(&mut self, obj: *mut ffi::PyObject, slot: u32) -> Option<u32> {
        if let Some(found) = self.get_spilled(obj as usize) {
            return Some(found);
        }
        // SAFETY: as in `insert`: the map's key holds this reference.
        unsafe { ffi::Py_INCREF(obj) };
        self.spill_insert(obj, slot);
        None
    }

    #[inline(never)]
    fn spill_insert(&mut self, obj: *mut ffi::PyObject, slot: u32) {
        let spill = self.spill.get_or_insert_with(Box::default);
        if let Some(old) = spill.insert(obj as usize, slot) {
            // Already a key: keep a single reference.
            let _ = old;
            // SAFETY: we just took a second reference to the same live object.
            unsafe { ffi::Py_DECREF(obj) };
        }
    }

    /// Releases the references of the table in line (the cheap part of dropping the memo),
    /// so that an encoder holding nothing else need not run its full drop.
    #[inline(always)]
    pub fn release_inline(&mut self) {
        let mut used = std::mem::replace(&mut self.used, 0);
        while used != 0 {
            let i = used.trailing_zeros() as usize;
            used &= used - 1;
            // SAFETY: every used bucket's key holds one reference taken in `insert`; no
            // bucket is used now, so none is released twice. The GIL is held (the memo
            // lives in a native call).
            unsafe { ffi::Py_DECREF(self.keys[i].assume_init() as *mut ffi::PyObject) };
        }
    }
}

impl Drop for Memo {
    fn drop(&mut self) {
        self.release_inline();
        let Some(spill) = &self.spill else {
            return;
        };
        // SAFETY: every key holds one reference taken in `insert`; the memo only lives
        // inside a native call, with the GIL held.
        unsafe {
            for &key in spill.keys() {
                ffi::Py_DECREF(key as *mut ffi::PyObject);
            }
        }
    }
}
