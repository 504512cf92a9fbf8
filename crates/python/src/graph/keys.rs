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

// A key's bytes fill three words at most (see `words_of`).
const _: () = assert!(MAX_KEY_LEN == 24);

/// The words of a key: its bytes read as little-endian 8-byte words, zero past its end.
type Words = [u64; MAX_KEY_LEN / 8];

#[derive(Clone, Copy)]
struct Entry {
    /// An owned reference to the str whose UTF-8 is the first `len` bytes of `words`, or
    /// NULL.
    obj: *mut ffi::PyObject,
    len: u8,
    words: Words,
}

struct Table(UnsafeCell<[Entry; SLOTS]>);

// SAFETY: the table is only read or written with the GIL held (see the module
// documentation), so no two threads touch it at once.
unsafe impl Sync for Table {}

static TABLE: Table = Table(UnsafeCell::new(
    [Entry {
        obj: std::ptr::null_mut(),
        len: 0,
        words: [0; MAX_KEY_LEN / 8],
    }; SLOTS],
));

/// The [`Words`] of a key of 1..=MAX_KEY_LEN bytes, read in place (whole words, then the
/// tail of under 8 bytes in at most two overlapping loads): no copy through memory, and
/// no loop (which the compiler would turn into a call to `memcpy`).
#[inline(always)]
fn words_of(s: &[u8]) -> Words {
    debug_assert!((1..=MAX_KEY_LEN).contains(&s.len()));
    let n = s.len();
    let p = s.as_ptr();
    // SAFETY: every load reads bytes of `s` only: word `i` is read when `8 * (i + 1) <= n`,
    // and the tail loads start at or after `8 * (n / 8)` and end at or before `n`.
    unsafe {
        let word = |i: usize| -> u64 {
            if 8 * (i + 1) <= n {
                u64::from_le(p.add(8 * i).cast::<u64>().read_unaligned())
            } else {
                0
            }
        };
        let mut w: Words = [word(0), word(1), word(2)];
        let rem = n % 8;
        if rem != 0 {
            let t = p.add(n - rem);
            // Overlapping loads put the same byte at the same place, so OR joins them.
            let tail = if rem >= 4 {
                let lo = u64::from(u32::from_le(t.cast::<u32>().read_unaligned()));
                let hi = u64::from(u32::from_le(t.add(rem - 4).cast::<u32>().read_unaligned()));
                lo | hi << ((rem - 4) * 8)
            } else {
                let first = u64::from(*t);
                let mid = u64::from(*t.add(rem / 2));
                let last = u64::from(*t.add(rem - 1));
                first | mid << (rem / 2 * 8) | last << ((rem - 1) * 8)
            };
            w[n / 8] = tail;
        }
        w
    }
}

/// The slot of a key of `len` bytes (1..=MAX_KEY_LEN) and [`Words`] `w`.
#[inline(always)]
fn slot_of(len: usize, w: &Words) -> usize {
    let mix = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    let mut h = mix(len as u64, w[0]);
    if len > 8 {
        h = mix(h, w[1]);
    }
    if len > 16 {
        h = mix(h, w[2]);
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
    let w = words_of(s);
    let slot = slot_of(s.len(), &w);
    // SAFETY: the GIL is held (the caller's contract), so this is the only access to the
    // table; `slot` is below SLOTS.
    unsafe {
        let entry = &mut (*TABLE.0.get())[slot];
        // Both word arrays are zero past the key's end: equal words and length, equal keys.
        let differ = (entry.words[0] ^ w[0]) | (entry.words[1] ^ w[1]) | (entry.words[2] ^ w[2]);
        if !entry.obj.is_null() && usize::from(entry.len) == s.len() && differ == 0 {
            ffi::Py_INCREF(entry.obj);
            return entry.obj;
        }
        let p = new_str(s);
        if !p.is_null() {
            let old = entry.obj;
            ffi::Py_INCREF(p);
            entry.obj = p;
            entry.len = s.len() as u8;
            entry.words = w;
            // A str's deallocation runs no Python code.
            ffi::Py_XDECREF(old);
        }
        p
    }
}
