//! Small records of plain data (lists, tuples, dicts, ints, floats, strs, bytes, None and
//! bools, shared or not), built in one recursive pass straight from the bytes: no reader
//! events, no frame stack, no per-thread storage. A loads of a few objects costs mostly
//! its allocations.
//!
//! The pass is only an accelerator. It takes bodies so short that no [`Limits`] bound can
//! be reached, and gives up (returning `None`, with every object it made released and no
//! exception set) at the first byte that is not in its grammar or not valid; the general
//! builder then reads the record from its start and gives the value or the exact error.
//! What it accepts, the general reader accepts with the same value.
//!
//! For a `Decoder` it also makes the instances of its kept classes (see `kept`) whose
//! records hold exactly the declared fields: the instance is allocated as the general
//! builder allocates it and each field stored as it stores it. It gives up at a class
//! with a finalizer (an instance it released on giving up would run it), and at an
//! instance inside a dict key or a shared value there once it has made one (hashing one
//! may run its code).

use bytewright_graph::tags::*;
use bytewright_graph::{varint, Limits};
use std::mem::MaybeUninit;

use pyo3::ffi;

use super::builder::{new_str, plain_fields_looked_up};
use super::kept::{Kept, KeptClass};
use super::keys;
use crate::cpython::{self, list_push};

/// Longest body the pass takes (a body it gives up on was read at most this far).
pub const SMALL_BODY_MAX: usize = 1024;

/// Shared values one record may hold in the pass (more: the general builder).
const MEMO_SLOTS: usize = 64;

/// Nesting the pass follows on the C stack (deeper: the general builder).
const MAX_NESTING: u32 = 64;

/// Class definitions one record may hold in the pass (more: the general builder).
const CLASS_SLOTS: usize = 8;

/// Whether the pass may read `body` under `limits`: a value takes at least one byte, so a
/// body no longer than every count and length limit cannot reach one (nesting, items,
/// container length, str and bytes length, class and field names). `objects`: a root
/// OBJECT record may be tried (a decoder with kept classes).
#[inline(always)]
pub fn eligible(body: &[u8], limits: &Limits, objects: bool) -> bool {
    let n = body.len() as u64;
    // The root's tag (after its SHARE): a record of a class or of anything else outside
    // the grammar goes to the general builder at once.
    let first = match body {
        [SHARE, tag, ..] | [tag, ..] if *tag != SHARE => *tag,
        _ => return false,
    };
    (FIXED_LEN[usize::from(first)] != 0
        || matches!(first, SHORT_LIST..=0x8f | LIST | TUPLE | DICT | STR | BYTES)
        || (objects && first == OBJECT))
        && body.len() <= SMALL_BODY_MAX
        && n <= limits.max_depth
        && n <= limits.max_items
        && n <= limits.max_container_len
        && n <= limits.max_str_len
        && n <= limits.max_bytes_len
}

struct Small<'a> {
    buf: &'a [u8],
    pos: usize,
    in_place: bool,
    /// The decoder's kept classes, if any.
    kept: Option<&'a Kept>,
    /// The record's class entries so far (the first `class_count` are set).
    classes: [MaybeUninit<&'a KeptClass>; CLASS_SLOTS],
    class_count: usize,
    /// A dict key is being read.
    in_key: bool,
    /// Owned references to the shared values, by memo slot; NULL until a tuple is complete.
    /// The first `slots` are set.
    memo: [MaybeUninit<*mut ffi::PyObject>; MEMO_SLOTS],
    slots: usize,
}

/// The pass gave up (see the module documentation).
struct GiveUp;

type Made = Result<*mut ffi::PyObject, GiveUp>;

/// The value of `body` (a new reference), or `None` when the general builder must read it.
/// The GIL is held; no Python code runs.
pub fn build(body: &[u8], kept: Option<&Kept>) -> Option<*mut ffi::PyObject> {
    let mut s = Small {
        buf: body,
        pos: 0,
        in_place: cpython::internals(),
        kept,
        classes: [MaybeUninit::uninit(); CLASS_SLOTS],
        class_count: 0,
        in_key: false,
        memo: [MaybeUninit::uninit(); MEMO_SLOTS],
        slots: 0,
    };
    let out = s.value(0);
    for p in &s.memo[..s.slots] {
        // SAFETY: set by `share`: an owned reference, or NULL.
        unsafe { ffi::Py_XDECREF(p.assume_init()) };
    }
    match out {
        Ok(v) if s.pos == body.len() => Some(v),
        Ok(v) => {
            // Trailing bytes: the general reader says where.
            // SAFETY: v is a new reference we own.
            unsafe { ffi::Py_DECREF(v) };
            None
        }
        Err(GiveUp) => {
            // An allocation or a dict insert failed (or a str was not UTF-8): the general
            // builder meets the same and raises it in full.
            // SAFETY: plain calls with the GIL held.
            unsafe {
                if !ffi::PyErr_Occurred().is_null() {
                    ffi::PyErr_Clear();
                }
            }
            None
        }
    }
}

/// A new reference or NULL, as `Made` (`GiveUp` on NULL).
#[inline(always)]
fn made(p: *mut ffi::PyObject) -> Made {
    if p.is_null() {
        Err(GiveUp)
    } else {
        Ok(p)
    }
}

impl<'a> Small<'a> {
    #[inline(always)]
    fn byte(&mut self) -> Result<u8, GiveUp> {
        let b = *self.buf.get(self.pos).ok_or(GiveUp)?;
        self.pos += 1;
        Ok(b)
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, GiveUp> {
        varint::get(self.buf, &mut self.pos).ok_or(GiveUp)
    }

    /// `n` bytes of data (a str's or a bytes'), after its tag and length.
    #[inline(always)]
    fn data(&mut self, n: u64) -> Result<&[u8], GiveUp> {
        let end = (self.pos as u64).checked_add(n).ok_or(GiveUp)?;
        let s = self.buf.get(self.pos..end as usize).ok_or(GiveUp)?;
        self.pos = end as usize;
        Ok(s)
    }

    /// A child count, `per_item` bytes at least each, that the body can hold.
    #[inline(always)]
    fn count(&self, n: u64, per_item: u64) -> Result<usize, GiveUp> {
        if n.saturating_mul(per_item) > (self.buf.len() - self.pos) as u64 {
            return Err(GiveUp);
        }
        Ok(n as usize)
    }

    /// The item count after container `tag` (a varint after the `long` form, in the tag
    /// after `short` + n), checked against what the body can hold at `per_item` bytes each.
    #[inline(always)]
    fn len_of(&mut self, tag: u8, long: u8, short: u8, per_item: u64) -> Result<usize, GiveUp> {
        let n = if tag == long {
            self.varint()?
        } else {
            u64::from(tag - short)
        };
        self.count(n, per_item)
    }

    /// Takes the next memo slot for `p` (NULL: a tuple still being filled); its index.
    #[inline(always)]
    fn share(&mut self, p: *mut ffi::PyObject) -> Result<usize, GiveUp> {
        if self.slots == MEMO_SLOTS {
            return Err(GiveUp);
        }
        if !p.is_null() {
            // SAFETY: p is live; the memo holds a reference of its own.
            unsafe { ffi::Py_INCREF(p) };
        }
        self.memo[self.slots].write(p);
        self.slots += 1;
        Ok(self.slots - 1)
    }

    /// One value (a SHARE prefix included), as a new reference.
    fn value(&mut self, depth: u32) -> Made {
        let mut tag = self.byte()?;
        let shared = tag == SHARE;
        if shared {
            tag = self.byte()?;
        }
        let fixed = usize::from(FIXED_LEN[usize::from(tag)]);
        // SAFETY (every arm): plain constructors returning a new reference or NULL; the
        // containers are ours alone until returned.
        let value = unsafe {
            if fixed != 0 {
                let at = self.pos - 1;
                let enc = self.buf.get(at..at + fixed).ok_or(GiveUp)?;
                self.pos = at + fixed;
                match tag {
                    SHORT_STR..=SHORT_STR_LAST => made(new_str(&enc[1..]))?,
                    NONE => {
                        ffi::Py_INCREF(ffi::Py_None());
                        ffi::Py_None()
                    }
                    TRUE => {
                        ffi::Py_INCREF(ffi::Py_True());
                        ffi::Py_True()
                    }
                    FALSE => {
                        ffi::Py_INCREF(ffi::Py_False());
                        ffi::Py_False()
                    }
                    FLOAT64 | FLOAT32 => made(ffi::PyFloat_FromDouble(
                        float_value(tag, enc).ok_or(GiveUp)?,
                    ))?,
                    _ => made(ffi::PyLong_FromLongLong(int_value(tag, enc).ok_or(GiveUp)?))?,
                }
            } else {
                match tag {
                    SHORT_LIST..=0x6f | LIST => {
                        let n = self.len_of(tag, LIST, SHORT_LIST, 1)?;
                        return self.list(n, shared, depth);
                    }
                    SHORT_DICT..=0x8f | DICT => {
                        let n = self.len_of(tag, DICT, SHORT_DICT, 2)?;
                        return self.dict(n, shared, depth);
                    }
                    SHORT_TUPLE..=0x7f | TUPLE => {
                        let n = self.len_of(tag, TUPLE, SHORT_TUPLE, 1)?;
                        return self.tuple(n, shared, depth);
                    }
                    STR => {
                        let n = self.varint()?;
                        made(new_str(self.data(n)?))?
                    }
                    BYTES => {
                        let n = self.varint()?;
                        let s = self.data(n)?;
                        made(ffi::PyBytes_FromStringAndSize(
                            s.as_ptr().cast(),
                            s.len() as ffi::Py_ssize_t,
                        ))?
                    }
                    OBJECT => return self.object(shared, depth),
                    REF if !shared => {
                        // A shared value inside a dict key may be (or hold) an instance
                        // made here: hashing it runs its code, so the general builder
                        // reads the record (then the hash runs once).
                        if self.in_key && self.class_count > 0 {
                            return Err(GiveUp);
                        }
                        let slot = self.varint()?;
                        let p = self.memo[..self.slots]
                            .get(usize::try_from(slot).map_err(|_| GiveUp)?)
                            .ok_or(GiveUp)?
                            .assume_init();
                        if p.is_null() {
                            return Err(GiveUp);
                        }
                        ffi::Py_INCREF(p);
                        p
                    }
                    _ => return Err(GiveUp),
                }
            }
        };
        if shared {
            if let Err(e) = self.share(value) {
                // SAFETY: our new reference.
                unsafe { ffi::Py_DECREF(value) };
                return Err(e);
            }
        }
        Ok(value)
    }

    /// A dict's key: a short str (shared or not) through the key table (see `keys`), any
    /// other value as `value` reads it.
    #[inline(always)]
    fn key(&mut self, depth: u32) -> Made {
        let at = self.pos;
        let shared = self.buf.get(at) == Some(&SHARE);
        let tag_at = at + usize::from(shared);
        match self.buf.get(tag_at) {
            Some(&tag) if (SHORT_STR + 1..=SHORT_STR_LAST).contains(&tag) => {
                let n = usize::from(tag - SHORT_STR);
                let s = self.buf.get(tag_at + 1..tag_at + 1 + n).ok_or(GiveUp)?;
                let key = made(keys::key_str(s))?;
                self.pos = tag_at + 1 + n;
                if shared {
                    if let Err(e) = self.share(key) {
                        // SAFETY: our new reference.
                        unsafe { ffi::Py_DECREF(key) };
                        return Err(e);
                    }
                }
                Ok(key)
            }
            _ => self.key_value(depth),
        }
    }

    /// A dict key that is not a short str.
    #[inline(always)]
    fn key_value(&mut self, depth: u32) -> Made {
        let was = std::mem::replace(&mut self.in_key, true);
        let key = self.value(depth);
        self.in_key = was;
        key
    }

    /// The class entry of an OBJECT record (its class ref), when it is a kept class the
    /// pass may build.
    #[inline(always)]
    fn class(&mut self) -> Result<&'a KeptClass, GiveUp> {
        let r = self.varint()?;
        let class = if r == 0 {
            let kept = self.kept.ok_or(GiveUp)?;
            let class = kept.starting(&self.buf[self.pos..]).ok_or(GiveUp)?;
            if self.class_count == CLASS_SLOTS {
                return Err(GiveUp);
            }
            self.classes[self.class_count].write(class);
            self.class_count += 1;
            self.pos += class.encoded.len();
            class
        } else {
            let index = usize::try_from(r - 1).map_err(|_| GiveUp)?;
            // SAFETY: the first `class_count` entries are set.
            unsafe {
                self.classes[..self.class_count]
                    .get(index)
                    .ok_or(GiveUp)?
                    .assume_init()
            }
        };
        if !class.small {
            return Err(GiveUp);
        }
        Ok(class)
    }

    /// An instance of a kept class, its fields stored as the general builder stores those
    /// of a record with exactly the declared fields (a plain store into its instance dict).
    fn object(&mut self, shared: bool, depth: u32) -> Made {
        if self.in_key {
            return Err(GiveUp);
        }
        let class = self.class()?;
        let r = &*class.resolved;
        let n = self.count(r.names.len() as u64, 1)?;
        let ty = r.cls.as_ptr().cast::<ffi::PyTypeObject>();
        // SAFETY: a live type (the decoder holds it); reading its slots runs no code.
        if unsafe { (*ty).tp_finalize.is_some() || (*ty).tp_del.is_some() } {
            return Err(GiveUp);
        }
        // SAFETY: object.__new__(cls), as the general builder calls it: the base allocator
        // of a Python-defined class whose bases are all Python classes (checked by
        // describe); no code of the class runs. The empty tuple is a new reference.
        let obj = made(unsafe {
            let base = std::ptr::addr_of_mut!(ffi::PyBaseObject_Type);
            let args = ffi::PyTuple_New(0);
            let obj = match ((*base).tp_new, args.is_null()) {
                (Some(tp_new), false) => tp_new(ty, args, std::ptr::null_mut()),
                _ => std::ptr::null_mut(),
            };
            ffi::Py_XDECREF(args);
            obj
        })?;
        if shared {
            self.share(obj).map_err(|_| Self::drop_container(obj))?;
        }
        self.enter(obj, n, depth)?;
        // Only when no field name is a data descriptor of the class (then the store below
        // is a plain one into the instance dict, running no code).
        let known = r.no_class_attrs.get();
        // SAFETY: a live type; reading its tag and looking names up run no code.
        let plain = unsafe {
            (known != 0 && cpython::type_version(ty) == known) || plain_fields_looked_up(ty, r)
        };
        if !plain {
            return Err(Self::drop_container(obj));
        }
        for name in &r.names {
            let value = self
                .value(depth + 1)
                .map_err(|_| Self::drop_container(obj))?;
            // SAFETY: generic attribute store of an exact str name on a live instance whose
            // class has no attribute of that name; the instance takes its own reference.
            let rc = unsafe {
                let rc = ffi::PyObject_GenericSetAttr(obj, name.as_ptr(), value);
                ffi::Py_DECREF(value);
                rc
            };
            if rc < 0 {
                return Err(Self::drop_container(obj));
            }
        }
        Ok(obj)
    }

    /// Gives up at a container opened at `depth` that holds children, when that is too
    /// deep to follow; releases `container` (our reference) whenever it gives up.
    #[inline(always)]
    fn enter(&self, container: *mut ffi::PyObject, n: usize, depth: u32) -> Result<(), GiveUp> {
        if n > 0 && depth >= MAX_NESTING {
            // SAFETY: our new reference (the memo holds its own, if shared).
            unsafe { ffi::Py_DECREF(container) };
            return Err(GiveUp);
        }
        Ok(())
    }

    /// Releases `container` (our reference) and gives up.
    #[cold]
    fn drop_container(container: *mut ffi::PyObject) -> GiveUp {
        // SAFETY: our new reference (the memo holds its own, if shared).
        unsafe { ffi::Py_DECREF(container) };
        GiveUp
    }

    #[inline(always)]
    fn list(&mut self, n: usize, shared: bool, depth: u32) -> Made {
        let in_place = self.in_place;
        let list = made(cpython::new_list_to_fill(n, in_place))?;
        if shared {
            self.share(list).map_err(|_| Self::drop_container(list))?;
        }
        self.enter(list, n, depth)?;
        let mut filled = 0isize;
        for _ in 0..n {
            let child = self
                .value(depth + 1)
                .map_err(|_| Self::drop_container(list))?;
            // SAFETY: a live list only we fill, and a new reference it takes.
            let pushed = unsafe {
                if in_place {
                    list_push::<true>(list, &mut filled, child)
                } else {
                    list_push::<false>(list, &mut filled, child)
                }
            };
            pushed.map_err(|()| Self::drop_container(list))?;
        }
        Ok(list)
    }

    #[inline(always)]
    fn dict(&mut self, n: usize, shared: bool, depth: u32) -> Made {
        let dict = made(cpython::new_dict(n))?;
        if shared {
            self.share(dict).map_err(|_| Self::drop_container(dict))?;
        }
        self.enter(dict, n, depth)?;
        for _ in 0..n {
            let key = if n <= keys::MAX_DICT_LEN {
                self.key(depth + 1)
            } else {
                self.key_value(depth + 1)
            }
            .map_err(|_| Self::drop_container(dict))?;
            let value = match self.value(depth + 1) {
                Ok(v) => v,
                Err(_) => {
                    // SAFETY: our reference to a key whose value never came.
                    unsafe { ffi::Py_DECREF(key) };
                    return Err(Self::drop_container(dict));
                }
            };
            // SAFETY: a live dict, key and value; the dict takes references of its own and
            // ours are released. A key is a str, int, float, bytes, None, bool or tuple of
            // these (an unhashable one fails): hashing it runs no Python code.
            let rc = unsafe {
                let rc = ffi::PyDict_SetItem(dict, key, value);
                ffi::Py_DECREF(key);
                ffi::Py_DECREF(value);
                rc
            };
            if rc < 0 {
                return Err(Self::drop_container(dict));
            }
        }
        Ok(dict)
    }

    #[inline(always)]
    fn tuple(&mut self, n: usize, shared: bool, depth: u32) -> Made {
        // SAFETY: a fresh tuple of n NULL slots, filled below before anyone sees it.
        let tuple = made(unsafe { ffi::PyTuple_New(n as ffi::Py_ssize_t) })?;
        // Its memo slot is usable only once it is complete (a reference from inside it
        // makes the general builder raise).
        let slot = if shared {
            Some(
                self.share(std::ptr::null_mut())
                    .map_err(|_| Self::drop_container(tuple))?,
            )
        } else {
            None
        };
        self.enter(tuple, n, depth)?;
        for i in 0..n {
            let child = self
                .value(depth + 1)
                .map_err(|_| Self::drop_container(tuple))?;
            // SAFETY: slot i of the fresh tuple, empty until now; it takes our reference.
            unsafe { ffi::PyTuple_SET_ITEM(tuple, i as ffi::Py_ssize_t, child) };
        }
        if let Some(slot) = slot {
            // SAFETY: the memo holds a reference of its own.
            unsafe { ffi::Py_INCREF(tuple) };
            self.memo[slot].write(tuple);
        }
        Ok(tuple)
    }
}
