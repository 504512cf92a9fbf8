//! Short dict keys kept from one `loads` to the next.
//!
//! Records of one program repeat the same keys (`"id"`, `"name"`, ...) call after call.
//! Each loads would otherwise allocate every key again and hash it again on insertion.
//! Instead, a key of at most [`MAX_KEY_LEN`] UTF-8 bytes read by the one-pass builder of
//! small records (`small`) is looked up in a small direct-mapped table of strs made by
//! earlier calls, by its bytes; a hit hands out that str (its hash already cached in it),
//! a miss makes the str and keeps it in the slot.
//!
//! Only keys of dicts of at most [`MAX_DICT_LEN`] entries go through the table: a wide dict
//! of distinct keys would only churn it. A str is immutable and equal to a fresh one with
//! the same bytes, so the only visible difference is that equal keys may be the same
//! object, as CPython's own interning makes them in many places. Keys the record shares
//! (SHARE/REF) keep their identity within the record: the memo holds the str handed out.
//!
//! The table holds at most [`SLOTS`] strs alive between calls (a few kilobytes). It is
//! only touched with the GIL held, which serializes every access.

use std::cell::UnsafeCell;

use pyo3::ffi;

use super::builder::new_str;

/// Longest key (in UTF-8 bytes) the table keeps.
pub const MAX_KEY_LEN: usize = 24;

/// Largest dict whose keys go through the table.
pub const MAX_DICT_LEN: usize = 256;

/// Table size (a power of two).
const SLOTS: usize = 512;

#[derive(Clone, Copy)]
struct Entry {
    /// An owned reference to the str whose UTF-8 is `bytes[..len]`, or NULL.
    obj: *mut ffi::PyObject,
    len: u8,
    bytes: [u8; MAX_KEY_LEN],
}

struct Table(UnsafeCell<[Entry; SLOTS]>);

// SAFETY: the table is only read or written with the GIL held (see the module
// documentation), so no two threads touch it at once.
unsafe impl Sync for Table {}

static TABLE: Table = Table(UnsafeCell::new(
    [Entry {
        obj: std::ptr::null_mut(),
        len: 0,
        bytes: [0; MAX_KEY_LEN],
    }; SLOTS],
));

/// The slot of a key of 1..=MAX_KEY_LEN bytes.
#[inline(always)]
fn slot_of(s: &[u8]) -> usize {
    let mut h = s.len() as u64;
    for chunk in s.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

/// A new reference to the str of the UTF-8 bytes `s` (NULL with an exception set if they
/// are not valid UTF-8 or memory runs out), taken from or kept in the table when `s` is
/// short enough. The GIL is held.
#[inline]
pub fn key_str(s: &[u8]) -> *mut ffi::PyObject {
    if s.is_empty() || s.len() > MAX_KEY_LEN {
        return new_str(s);
    }
    let slot = slot_of(s);
    // SAFETY: the GIL is held (the caller's contract), so this is the only access to the
    // table; `slot` is below SLOTS.
    unsafe {
        let entry = &mut (*TABLE.0.get())[slot];
        if !entry.obj.is_null() && usize::from(entry.len) == s.len() && entry.bytes[..s.len()] == *s
        {
            ffi::Py_INCREF(entry.obj);
            return entry.obj;
        }
        let p = new_str(s);
        if !p.is_null() {
            let old = entry.obj;
            ffi::Py_INCREF(p);
            entry.obj = p;
            entry.len = s.len() as u8;
            entry.bytes[..s.len()].copy_from_slice(s);
            // A str's deallocation runs no Python code.
            ffi::Py_XDECREF(old);
        }
        p
    }
}
