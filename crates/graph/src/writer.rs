//! Encoder primitives: each call appends one tag and its inline data to one buffer.

use std::ptr::NonNull;

use crate::buf::{Buf, Storage};
use crate::header::{FLAG_SIGNED, MAGIC, MAX_HEADER_LEN, VERSION};
use crate::integrity;
use crate::tags::*;
use crate::varint;

/// Builds one record. Room for the longest header is kept in front of the body, so
/// [`Writer::finish`] only fills it in and the body is never moved.
///
/// Large str and bytes data may be *deferred*: the writer records only its tag and
/// length, and the caller copies the data once, straight into the final output
/// (see [`Writer::finish_header`]).
///
/// A writer may also build its record in memory its caller owns ([`Writer::external`]):
/// the record then starts at the front of that memory ([`Writer::finish_front`]), and
/// deferred data gets its room in the buffer, to be filled in place.
pub struct Writer {
    buf: Buf,
    deferred: usize,
    /// Where the body starts: the room kept for the header.
    head: usize,
    /// Deferred data is given room in the buffer (external memory) rather than counted.
    holes: bool,
}

impl Default for Writer {
    fn default() -> Self {
        Self::with_capacity(256)
    }
}

impl Writer {
    pub fn with_capacity(body: usize) -> Self {
        Self::reusing(Vec::with_capacity(MAX_HEADER_LEN + body))
    }

    /// A writer that builds its record in `buf` (emptied first), keeping its capacity: a
    /// caller that hands back the buffer [`Writer::finish`] returned allocates only once.
    pub fn reusing(buf: Vec<u8>) -> Self {
        let mut buf = Buf::from_vec(buf);
        buf.clear();
        buf.extend_zeros(MAX_HEADER_LEN);
        Self {
            buf,
            deferred: 0,
            head: MAX_HEADER_LEN,
            holes: false,
        }
    }

    /// A writer that builds its record in `cap` bytes at `ptr`, memory of `storage` named
    /// `ctx`, keeping `head` bytes in front of the body for the header (a guess:
    /// [`Writer::finish_front`] moves the body if the header turns out longer or shorter).
    ///
    /// # Safety
    /// `ptr` is valid for `cap` writes and owned by `ctx` alone, until `storage` grows or
    /// releases it; `head` is at least 5 and at most [`MAX_HEADER_LEN`].
    pub unsafe fn external(
        ptr: NonNull<u8>,
        cap: usize,
        storage: &'static Storage,
        ctx: *mut (),
        head: usize,
    ) -> Self {
        debug_assert!((5..=MAX_HEADER_LEN).contains(&head));
        // SAFETY: as the caller guarantees.
        let mut buf = unsafe { Buf::external(ptr, cap, storage, ctx) };
        buf.zeros_up_to_14(head);
        Self {
            buf,
            deferred: 0,
            head,
            holes: true,
        }
    }

    /// Empties the record, keeping the buffer (and its header room).
    pub fn restart(&mut self) {
        self.buf.clear();
        self.buf.extend_zeros(self.head);
        self.deferred = 0;
    }

    /// A writer with no buffer at all (it allocates on its first write): a placeholder
    /// for one taken out of a structure, which costs nothing to make or drop.
    pub const fn empty() -> Self {
        Self {
            buf: Buf::new(),
            deferred: 0,
            head: MAX_HEADER_LEN,
            holes: false,
        }
    }

    /// Whether the writer owns no memory (as [`Writer::empty`] makes it).
    #[inline]
    pub fn is_unallocated(&self) -> bool {
        self.buf.capacity() == 0
    }

    /// The buffer, for [`Writer::reusing`] (its content is of no use).
    pub fn into_buffer(mut self) -> Vec<u8> {
        self.buf.take_vec()
    }

    /// Bytes of body so far, deferred data included.
    #[inline]
    pub fn body_len(&self) -> usize {
        self.buf.len() - self.head + self.deferred
    }

    /// Reserves room for `additional` more body bytes.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Completes a record without deferred data; returns the buffer and where the
    /// record starts in it.
    pub fn finish(mut self, key: Option<&[u8]>) -> (Vec<u8>, usize) {
        let start = self.finish_in_place(key);
        (self.buf.take_vec(), start)
    }

    /// [`Writer::finish`] without moving the buffer: returns where the record starts; the
    /// record is then [`Writer::record`], and [`Writer::take_buffer`] takes the buffer.
    #[inline]
    pub fn finish_in_place(&mut self, key: Option<&[u8]>) -> usize {
        debug_assert_eq!(
            self.deferred, 0,
            "records with deferred data use finish_header"
        );
        self.make_room_for_header(false);
        let start = self.put_header(key.is_some());
        if let Some(key) = key {
            let tag = integrity::sign(key, self.buf.slice(start));
            self.buf.extend_from_slice(&tag);
        }
        start
    }

    /// Header length for the body written so far.
    #[inline(always)]
    fn header_len(&self) -> usize {
        let n = self.body_len();
        // Most records: a one-byte length, known without counting the varint's bytes.
        if n < 0x80 {
            return 5;
        }
        4 + varint::len(n as u64)
    }

    /// Moves the body so that the header fits in front of it (exactly, if `exact`);
    /// returns how far it moved.
    #[inline(always)]
    fn make_room_for_header(&mut self, exact: bool) -> isize {
        let h = self.header_len();
        if h > self.head || (exact && h != self.head) {
            return self.move_body(h);
        }
        0
    }

    #[cold]
    #[inline(never)]
    fn move_body(&mut self, h: usize) -> isize {
        let shift = h as isize - self.head as isize;
        self.buf.shift_tail(self.head, h);
        self.head = h;
        shift
    }

    /// Completes the record at the front of the buffer, with the header of a signed record
    /// if `signed` (room for the tag is reserved, to be appended with [`Writer::push_tag`]).
    /// Returns the record's length (without a tag) and how far the body moved to make
    /// its header fit: positions [`Writer::str_deferred`] gave move with it.
    #[inline(always)]
    pub fn finish_front(&mut self, signed: bool) -> (usize, isize) {
        let flags = if signed { FLAG_SIGNED } else { 0 };
        let n = self.body_len();
        if n < 0x80 && self.head == 5 {
            // Most records: a short body behind room for exactly its header, which is
            // written with one constant and its length, in place.
            // SAFETY: the buffer starts with `head` (5) bytes kept for the header (every
            // writer is made, and restarted, with them).
            unsafe {
                self.buf
                    .as_mut_ptr()
                    .cast::<[u8; 5]>()
                    .write_unaligned([MAGIC[0], MAGIC[1], VERSION, flags, n as u8]);
            }
            if signed {
                self.buf.reserve(integrity::TAG_LEN);
            }
            return (self.buf.len(), 0);
        }
        let shift = self.make_room_for_header(true);
        let start = self.put_header(signed);
        debug_assert_eq!(start, 0);
        if signed {
            self.buf.reserve(integrity::TAG_LEN);
        }
        (self.buf.len(), shift)
    }

    /// The room kept for the header (after [`Writer::finish_front`], its length).
    #[inline]
    pub fn head(&self) -> usize {
        self.head
    }

    /// Appends the tag of a signed record (after [`Writer::finish_front`]).
    pub fn push_tag(&mut self, tag: &[u8]) {
        self.buf.extend_from_slice(tag);
    }

    /// Where the buffer starts, to fill the room of deferred data (see
    /// [`Writer::str_deferred`]) in place.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }

    /// The external memory (see [`Writer::external`]) and the bytes written to it,
    /// leaving the writer as [`Writer::empty`]; `None` (and the writer unchanged) for a
    /// writer with a buffer of its own.
    pub fn take_external(&mut self) -> Option<(*mut (), usize)> {
        let out = self.buf.take_external()?;
        self.deferred = 0;
        Some(out)
    }

    /// The finished record, from the start [`Writer::finish_in_place`] returned.
    #[inline]
    pub fn record(&self, start: usize) -> &[u8] {
        self.buf.slice(start)
    }

    /// The buffer (for [`Writer::reusing`]), leaving the writer as [`Writer::empty`].
    #[inline]
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.deferred = 0;
        self.buf.take_vec()
    }

    /// Writes the header of a record with deferred data. The record is `buf[start..]`
    /// with each deferred chunk inserted at the position [`Writer::str_deferred`] or
    /// [`Writer::bytes_deferred`] returned, then the 32-byte tag if `signed`.
    pub fn finish_header(mut self, signed: bool) -> (Vec<u8>, usize) {
        debug_assert!(!self.holes, "external writers give deferred data its room");
        let start = self.put_header(signed);
        (self.buf.take_vec(), start)
    }

    /// Writes the header (as [`crate::header::Header::encode`] gives it) into the room kept in front of
    /// the body, byte by byte (no scratch array: this runs once per record, and a small
    /// record costs little more); returns where the record starts.
    #[inline(always)]
    fn put_header(&mut self, signed: bool) -> usize {
        let flags = if signed { FLAG_SIGNED } else { 0 };
        let mut v = self.body_len() as u64;
        let end = self.head;
        if v < 0x80 {
            // Most records: a one-byte length, written with one store.
            let start = end - 5;
            self.buf
                .slice_mut(start, end)
                .copy_from_slice(&[MAGIC[0], MAGIC[1], VERSION, flags, v as u8]);
            return start;
        }
        let start = end - 4 - varint::len(v);
        let head = self.buf.slice_mut(start, end);
        head[..4].copy_from_slice(&[MAGIC[0], MAGIC[1], VERSION, flags]);
        for byte in &mut head[4..] {
            *byte = (v as u8 & 0x7f) | if v >= 0x80 { 0x80 } else { 0 };
            v >>= 7;
        }
        start
    }

    /// Starts a str of `n` UTF-8 bytes supplied later; returns where they go.
    ///
    /// An external writer leaves room for them in its buffer (unwritten: they must be
    /// filled, at [`Writer::as_mut_ptr`] plus the position, before the record is used).
    pub fn str_deferred(&mut self, n: usize) -> usize {
        self.tag_len(STR, n as u64);
        self.defer(n)
    }

    #[inline]
    fn defer(&mut self, n: usize) -> usize {
        let at = self.buf.len();
        if self.holes {
            self.buf.skip(n);
        } else {
            self.deferred += n;
        }
        at
    }

    /// Starts a bytes of `n` bytes supplied later; returns where they go.
    pub fn bytes_deferred(&mut self, n: usize) -> usize {
        self.tag_len(BYTES, n as u64);
        self.defer(n)
    }

    #[inline]
    pub fn tag(&mut self, tag: u8) {
        self.buf.push(tag);
    }

    #[inline]
    fn tag_len(&mut self, tag: u8, n: u64) {
        self.buf.push(tag);
        put_varint(&mut self.buf, n);
    }

    /// An int that fits 64 bits, in its shortest form.
    #[inline]
    pub fn int(&mut self, v: i64) {
        if (0..=SMALL_INT_MAX as i64).contains(&v) {
            self.buf.push(v as u8);
        } else if (0..=0xff).contains(&v) {
            self.buf.extend_from_slice(&[UINT8, v as u8]);
        } else if (-0x100..0).contains(&v) {
            self.buf.extend_from_slice(&[NEG8, (-1 - v) as u8]);
        } else if (0..=0xffff).contains(&v) {
            let [a, b] = (v as u16).to_le_bytes();
            self.buf.extend_from_slice(&[UINT16, a, b]);
        } else if (-0x10000..0).contains(&v) {
            let [a, b] = ((-1 - v) as u16).to_le_bytes();
            self.buf.extend_from_slice(&[NEG16, a, b]);
        } else if let Ok(v32) = i32::try_from(v) {
            let [a, b, c, d] = v32.to_le_bytes();
            self.buf.extend_from_slice(&[INT32, a, b, c, d]);
        } else {
            let bytes = v.to_le_bytes();
            self.bigint(minimal_le(&bytes));
        }
    }

    /// An int given as little-endian two's-complement bytes (at least one).
    pub fn bigint(&mut self, le: &[u8]) {
        self.tag_len(BIGINT, le.len() as u64);
        self.buf.extend_from_slice(le);
    }

    /// A float; the 4-byte form is used only when it converts back bit for bit.
    #[inline]
    pub fn float(&mut self, f: f64) {
        let narrow = f as f32;
        if f64::from(narrow).to_bits() == f.to_bits() {
            let [a, b, c, d] = narrow.to_le_bytes();
            self.buf.extend_from_slice(&[FLOAT32, a, b, c, d]);
        } else {
            let mut out = [FLOAT64; 9];
            out[1..].copy_from_slice(&f.to_le_bytes());
            self.buf.extend_from_slice(&out);
        }
    }

    pub fn complex(&mut self, re: f64, im: f64) {
        self.buf.push(COMPLEX);
        self.buf.extend_from_slice(&re.to_le_bytes());
        self.buf.extend_from_slice(&im.to_le_bytes());
    }

    /// A str from its UTF-8 bytes.
    #[inline]
    pub fn str(&mut self, utf8: &[u8]) {
        if utf8.len() <= SHORT_STR_MAX_LEN {
            self.short(SHORT_STR + utf8.len() as u8, utf8);
        } else {
            self.tag_len(STR, utf8.len() as u64);
            self.buf.extend_from_slice(utf8);
        }
    }

    /// Appends `tag` and `data` (at most 31 bytes) with one capacity check and no call to
    /// `memcpy`: short strs are the commonest values, and a general copy costs more than
    /// the text itself.
    #[inline(always)]
    fn short(&mut self, tag: u8, data: &[u8]) {
        debug_assert!(data.len() <= SHORT_STR_MAX_LEN);
        self.buf.reserve(ATOM_ROOM);
        // SAFETY: ATOM_ROOM bytes of room after `len` (reserved above); `put_short` writes
        // 1 + data.len() of them, all before `set_len` exposes them.
        unsafe {
            let dst = self.buf.as_mut_ptr().add(self.buf.len());
            put_short(dst, tag, data);
            self.buf.set_len(self.buf.len() + 1 + data.len());
        }
    }

    /// Where the next byte goes and the end of the room reserved after it, for a caller
    /// that writes a run of atoms through a pointer of its own ([`put_int`],
    /// [`put_float`], [`put_short_str`], [`put_tag`]) and then [`Writer::commit`]s once.
    #[inline(always)]
    pub fn spare(&mut self) -> (*mut u8, *mut u8) {
        let cap = self.buf.capacity();
        let len = self.buf.len();
        let base = self.buf.as_mut_ptr();
        // SAFETY: len <= cap, both within (or one past) the buffer's memory.
        unsafe { (base.add(len), base.add(cap)) }
    }

    /// Ends a run begun at [`Writer::spare`]: the record now ends at `end`.
    ///
    /// # Safety
    /// `end` lies between the two pointers the last [`Writer::spare`] returned, no other
    /// call on this writer came between, and every byte up to `end` was written.
    #[inline(always)]
    pub unsafe fn commit(&mut self, end: *mut u8) {
        let base = self.buf.as_mut_ptr();
        // SAFETY: as the caller guarantees, `end` is within the buffer at or after `len`.
        unsafe { self.buf.set_len(end.offset_from(base) as usize) };
    }

    /// A str holding lone surrogates, from its UTF-8 "surrogatepass" bytes.
    pub fn str_surrogates(&mut self, bytes: &[u8]) {
        self.tag_len(STR_SURROGATES, bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    pub fn bytes(&mut self, data: &[u8]) {
        if data.len() <= SHORT_STR_MAX_LEN {
            // Short data: its length is one varint byte (below 0x80), written with the data
            // as a short str is (no call to memcpy).
            self.buf.reserve(1 + ATOM_ROOM);
            // SAFETY: 1 + ATOM_ROOM bytes of room after `len` (reserved above); the tag and
            // `put_short` write 2 + data.len() of them, all before `set_len` exposes them.
            unsafe {
                let dst = self.buf.as_mut_ptr().add(self.buf.len());
                *dst = BYTES;
                put_short(dst.add(1), data.len() as u8, data);
                self.buf.set_len(self.buf.len() + 2 + data.len());
            }
            return;
        }
        self.tag_len(BYTES, data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    pub fn bytearray(&mut self, data: &[u8]) {
        self.tag_len(BYTEARRAY, data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    #[inline(always)]
    fn short_or_long(&mut self, short: u8, long: u8, n: usize) {
        if n <= SHORT_CONTAINER_MAX {
            self.buf.push(short + n as u8);
        } else {
            self.tag_len(long, n as u64);
        }
    }

    /// Starts a list of `n` items.
    #[inline]
    pub fn list(&mut self, n: usize) {
        self.short_or_long(SHORT_LIST, LIST, n);
    }

    /// [`Writer::list`], with room reserved for `n` more bytes after it (every item takes
    /// at least one): one capacity check for both.
    #[inline(always)]
    pub fn list_with_room(&mut self, n: usize) {
        self.buf.reserve(n + 1 + varint::MAX_LEN);
        if n <= SHORT_CONTAINER_MAX {
            // SAFETY: room for at least one more byte (reserved above).
            unsafe { self.buf.push_unchecked(SHORT_LIST + n as u8) };
        } else {
            self.tag_len(LIST, n as u64);
        }
    }

    #[inline]
    pub fn tuple(&mut self, n: usize) {
        self.short_or_long(SHORT_TUPLE, TUPLE, n);
    }

    /// Starts a dict of `n` key/value pairs.
    #[inline]
    pub fn dict(&mut self, n: usize) {
        self.short_or_long(SHORT_DICT, DICT, n);
    }

    /// Starts a container whose tag is followed by its item count (set, frozenset,
    /// ordered dict, counter).
    pub fn counted(&mut self, tag: u8, n: usize) {
        self.tag_len(tag, n as u64);
    }

    pub fn default_dict(&mut self, factory: u8, n: usize) {
        self.buf.push(DEFAULT_DICT);
        self.buf.push(factory);
        put_varint(&mut self.buf, n as u64);
    }

    pub fn deque(&mut self, maxlen: Option<u64>, n: usize) {
        self.buf.push(DEQUE);
        put_varint(&mut self.buf, maxlen.map_or(0, |m| m.saturating_add(1)));
        put_varint(&mut self.buf, n as u64);
    }

    /// Marks the next value as shared: it takes the next memo slot.
    #[inline]
    pub fn share(&mut self) {
        self.buf.push(SHARE);
    }

    /// [`Writer::share`] then [`Writer::str`], in one call.
    pub fn shared_str(&mut self, utf8: &[u8]) {
        self.share();
        self.str(utf8);
    }

    /// [`Writer::share`] then [`Writer::bytes`], in one call.
    pub fn shared_bytes(&mut self, data: &[u8]) {
        self.share();
        self.bytes(data);
    }

    /// A second occurrence of the value in memo `slot`.
    #[inline]
    pub fn reference(&mut self, slot: u32) {
        if slot < 0x80 {
            // The commonest case (a shared key or name): one varint byte.
            self.buf.extend_from_slice(&[REF, slot as u8]);
        } else {
            self.tag_len(REF, u64::from(slot));
        }
    }

    /// Body offset where the next value starts (for [`Writer::replace_at`]).
    #[inline]
    pub fn mark(&self) -> usize {
        self.buf.len()
    }

    /// Wraps the value written from `mark` on: the reader decodes it for its side
    /// effects, then uses memo `slot` in its place (a tuple met again inside itself).
    /// Returns how many bytes were inserted at `mark`.
    pub fn replace_at(&mut self, mark: usize, slot: u32) -> usize {
        let mut prefix = vec![REPLACE];
        varint::put(&mut prefix, u64::from(slot));
        let n = prefix.len();
        self.buf.insert(mark, &prefix);
        n
    }

    /// `tag` (`OBJECT`, `ENUM`, `CLASS` or `DERIVED`) with a class defined earlier in this record.
    #[inline]
    pub fn class_ref(&mut self, tag: u8, index: u32) {
        self.tag_len(tag, u64::from(index) + 1);
    }

    /// `tag` (`OBJECT`, `ENUM`, `CLASS` or `DERIVED`) with a new class definition.
    pub fn class_new<'f>(
        &mut self,
        tag: u8,
        name: &[u8],
        version: u64,
        fields: impl ExactSizeIterator<Item = &'f [u8]>,
    ) {
        self.buf.push(tag);
        self.buf.push(0);
        put_class_definition(&mut self.buf, name, version, fields);
    }

    /// [`Writer::class_new`] with a definition from [`class_definition`], for a class
    /// whose records are written many times.
    pub fn class_new_defined(&mut self, tag: u8, definition: &ClassDefinition) {
        self.buf.push(tag);
        self.buf.push(0);
        self.buf.extend_from_slice(&definition.0);
    }

    /// A value of the builtins table (`BUILTIN`), by name.
    pub fn builtin(&mut self, name: &[u8]) {
        self.tag_len(BUILTIN, name.len() as u64);
        self.buf.extend_from_slice(name);
    }

    /// Starts a builtin exception of the class `name`; its argument tuple and its state
    /// follow.
    pub fn exception(&mut self, name: &[u8]) {
        self.tag_len(EXCEPTION, name.len() as u64);
        self.buf.extend_from_slice(name);
    }

    /// After the class ref of a `DERIVED` record: the base code, and for a mutable base
    /// the item count (`len` is ignored for the others).
    pub fn derived_base(&mut self, code: u8, len: usize) {
        debug_assert!(
            !matches!(code, base::DEFAULT_DICT | base::DEQUE),
            "defaultdicts and deques have their own"
        );
        self.buf.push(code);
        if base::is_mutable(code) {
            put_varint(&mut self.buf, len as u64);
        }
    }

    /// After the class ref of a `DERIVED` record of a defaultdict subclass: the base code,
    /// the factory code ([`FACTORY_VALUE`]: the factory follows the pairs) and the pair
    /// count.
    pub fn derived_default_dict(&mut self, factory: u8, len: usize) {
        self.buf.push(base::DEFAULT_DICT);
        self.buf.push(factory);
        put_varint(&mut self.buf, len as u64);
    }

    /// After the class ref of a `DERIVED` record of a deque subclass: the base code, the
    /// `maxlen` (as [`Self::deque`] writes it) and the item count.
    pub fn derived_deque(&mut self, maxlen: Option<u64>, len: usize) {
        self.buf.push(base::DEQUE);
        put_varint(&mut self.buf, maxlen.map_or(0, |m| m.saturating_add(1)));
        put_varint(&mut self.buf, len as u64);
    }

    /// A standard-library value of `kind`, followed by its argument tuple.
    pub fn std(&mut self, kind: u64) {
        self.tag_len(STD, kind);
    }
}

/// A class definition (name, version, field names) encoded once, to be written by
/// [`Writer::class_new_defined`] into any number of records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassDefinition(Vec<u8>);

impl ClassDefinition {
    /// The encoded definition: the bytes after a record's class ref 0, as a reader's
    /// `ClassDef::encoded` gives them back.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The definition [`Writer::class_new`] would write for these arguments.
pub fn class_definition<'f>(
    name: &[u8],
    version: u64,
    fields: impl ExactSizeIterator<Item = &'f [u8]>,
) -> ClassDefinition {
    let mut out = Vec::new();
    put_class_definition(&mut out, name, version, fields);
    ClassDefinition(out)
}

/// The room any single atom's raw writer ([`put_int`], [`put_float`], [`put_short_str`],
/// [`put_tag`]) needs after its destination (some store a few bytes past the value).
pub const ATOM_ROOM: usize = 1 + SHORT_STR_MAX_LEN;

// `Writer::bytes` writes the length of short data as its one varint byte.
const _: () = assert!(SHORT_STR_MAX_LEN < 0x80);

/// The room [`put_int`], [`put_float`] and [`put_tag`] need ([`put_short_str`] needs one
/// byte more than its text).
pub const NUMBER_ROOM: usize = 9;

/// Writes a one-byte value (`None`, a bool) at `dst`; returns where the next one goes.
///
/// # Safety
/// `dst` is valid for [`NUMBER_ROOM`] writes.
#[inline(always)]
pub unsafe fn put_tag(dst: *mut u8, tag: u8) -> *mut u8 {
    // SAFETY: as the caller guarantees.
    unsafe {
        *dst = tag;
        dst.add(1)
    }
}

/// Writes an int in its shortest form at `dst` and returns where the next value goes; or
/// writes nothing and returns `None` when it takes the long form (beyond 32 bits).
///
/// # Safety
/// `dst` is valid for [`NUMBER_ROOM`] writes.
#[inline(always)]
pub unsafe fn put_int(dst: *mut u8, v: i64) -> Option<*mut u8> {
    if (v as u64) <= u64::from(SMALL_INT_MAX) {
        // SAFETY: as the caller guarantees.
        unsafe { *dst = v as u8 };
        // SAFETY: within the room.
        return Some(unsafe { dst.add(1) });
    }
    // The magnitude forms store v (not negative) or -1 - v (negative): both are `m`.
    let neg = v < 0;
    let m = (v ^ (v >> 63)) as u64;
    if m > i32::MAX as u64 {
        return None;
    }
    let wide = m > 0xff;
    let int32 = m > 0xffff;
    // 1, 2 or 4 bytes after the tag, chosen without branches: INT32 stores v itself.
    let len = 1 + usize::from(wide) + 2 * usize::from(int32);
    let tag = if int32 {
        INT32
    } else {
        UINT8 + 2 * u8::from(wide) + u8::from(neg)
    };
    let payload = if int32 { v as u32 } else { m as u32 };
    // SAFETY: 5 bytes at dst are within the room; the unaligned store may write bytes past
    // the value's end, which the next value (or nothing, as the length ends before them)
    // replaces.
    unsafe {
        *dst = tag;
        dst.add(1)
            .cast::<[u8; 4]>()
            .write_unaligned(payload.to_le_bytes());
        Some(dst.add(1 + len))
    }
}

/// Writes a float at `dst` (the 4-byte form only when it converts back bit for bit);
/// returns where the next value goes.
///
/// # Safety
/// `dst` is valid for [`NUMBER_ROOM`] writes.
#[inline(always)]
pub unsafe fn put_float(dst: *mut u8, f: f64) -> *mut u8 {
    let narrow = f as f32;
    // A float an f32 holds exactly has its low 29 mantissa bits clear (an f32 has 29
    // fewer): testing those first skips the two conversions, a long chain of latency, for
    // most floats that need all 8 bytes.
    let maybe_narrow = f.to_bits() & ((1 << 29) - 1) == 0;
    // SAFETY: at most 9 bytes at dst, within the room.
    unsafe {
        if maybe_narrow && f64::from(narrow).to_bits() == f.to_bits() {
            *dst = FLOAT32;
            dst.add(1)
                .cast::<[u8; 4]>()
                .write_unaligned(narrow.to_le_bytes());
            dst.add(5)
        } else {
            *dst = FLOAT64;
            dst.add(1)
                .cast::<[u8; 8]>()
                .write_unaligned(f.to_le_bytes());
            dst.add(9)
        }
    }
}

/// Writes a str of at most [`SHORT_STR_MAX_LEN`] UTF-8 bytes at `dst`; returns where the
/// next value goes.
///
/// # Safety
/// `dst` is valid for `1 + utf8.len()` writes and `utf8.len() <= SHORT_STR_MAX_LEN`.
#[inline(always)]
pub unsafe fn put_short_str(dst: *mut u8, utf8: &[u8]) -> *mut u8 {
    // SAFETY: as the caller guarantees.
    unsafe {
        put_short(dst, SHORT_STR + utf8.len() as u8, utf8);
        dst.add(1 + utf8.len())
    }
}

/// Writes `tag` and `data` (at most 31 bytes) with no call to `memcpy`: short strs are
/// the commonest values, and a general copy costs more than the text itself.
///
/// # Safety
/// `dst` is valid for `1 + data.len()` writes, and `data.len() <= SHORT_STR_MAX_LEN`.
#[inline(always)]
unsafe fn put_short(dst: *mut u8, tag: u8, data: &[u8]) {
    debug_assert!(data.len() <= SHORT_STR_MAX_LEN);
    // SAFETY: as the caller guarantees.
    unsafe {
        *dst = tag;
        copy_small(data, dst.add(1));
    }
}

/// Copies `src` (at most 32 bytes) to `dst` with at most two overlapping moves of 16, 8
/// or 4 bytes, or three single bytes: no call to `memcpy`, whose set-up costs more than
/// copying a short text.
///
/// # Safety
/// `dst` is valid for `src.len()` writes and does not overlap `src`.
#[inline(always)]
pub unsafe fn copy_small(src: &[u8], dst: *mut u8) {
    let n = src.len();
    debug_assert!(n <= 32);
    let s = src.as_ptr();
    // SAFETY: every move below reads within `src` and writes within the first `n` bytes
    // of `dst` (the pairs overlap rather than pass the end).
    unsafe {
        if n >= 16 {
            std::ptr::copy_nonoverlapping(s, dst, 16);
            std::ptr::copy_nonoverlapping(s.add(n - 16), dst.add(n - 16), 16);
        } else if n >= 8 {
            std::ptr::copy_nonoverlapping(s, dst, 8);
            std::ptr::copy_nonoverlapping(s.add(n - 8), dst.add(n - 8), 8);
        } else if n >= 4 {
            std::ptr::copy_nonoverlapping(s, dst, 4);
            std::ptr::copy_nonoverlapping(s.add(n - 4), dst.add(n - 4), 4);
        } else if n > 0 {
            *dst = *s;
            *dst.add(n / 2) = *s.add(n / 2);
            *dst.add(n - 1) = *s.add(n - 1);
        }
    }
}

/// Where encoded bytes go: a writer's buffer, or a Vec.
trait Out {
    fn push(&mut self, byte: u8);
    fn extend_from_slice(&mut self, data: &[u8]);
}

impl Out for Vec<u8> {
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, data: &[u8]) {
        Vec::extend_from_slice(self, data);
    }
}

impl Out for Buf {
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        Buf::push(self, byte);
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, data: &[u8]) {
        Buf::extend_from_slice(self, data);
    }
}

/// [`varint::put`] into any [`Out`].
#[inline]
fn put_varint(out: &mut impl Out, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_class_definition<'f>(
    out: &mut impl Out,
    name: &[u8],
    version: u64,
    fields: impl ExactSizeIterator<Item = &'f [u8]>,
) {
    put_varint(out, name.len() as u64);
    out.extend_from_slice(name);
    put_varint(out, version);
    put_varint(out, fields.len() as u64);
    for field in fields {
        put_varint(out, field.len() as u64);
        out.extend_from_slice(field);
    }
}

/// Shortest little-endian two's-complement prefix that still has the right sign.
pub fn minimal_le(bytes: &[u8]) -> &[u8] {
    let mut n = bytes.len();
    while n > 1 {
        let top = bytes[n - 1];
        let below_sign = bytes[n - 2] & 0x80;
        if (top == 0 && below_sign == 0) || (top == 0xff && below_sign != 0) {
            n -= 1;
        } else {
            break;
        }
    }
    &bytes[..n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::default();
        f(&mut w);
        w.buf.slice(MAX_HEADER_LEN).to_vec()
    }

    #[test]
    fn ints_take_their_shortest_form() {
        assert_eq!(body(|w| w.int(5)), [5]);
        assert_eq!(body(|w| w.int(200)), [UINT8, 200]);
        assert_eq!(body(|w| w.int(-1)), [NEG8, 0]);
        assert_eq!(body(|w| w.int(-256)), [NEG8, 255]);
        assert_eq!(body(|w| w.int(65535)), [UINT16, 255, 255]);
        assert_eq!(body(|w| w.int(-65536)), [NEG16, 255, 255]);
        assert_eq!(body(|w| w.int(1 << 20)), [INT32, 0, 0, 16, 0]);
        assert_eq!(body(|w| w.int(1 << 40)), [BIGINT, 6, 0, 0, 0, 0, 0, 1]);
        assert_eq!(body(|w| w.int(i64::MIN)).len(), 10);
    }

    /// Where an int's encoded form changes (one byte, 8, 16 and 32 bits).
    const INT_EDGES: [i64; 8] = [0, 0x3f, 0x40, 0xff, 0x100, 0xffff, 0x10000, i32::MAX as i64];

    /// `e` and its neighbours, and their negations.
    fn around(e: i64) -> [i64; 6] {
        [e - 1, e, e + 1, -e - 1, -e, -e + 1]
    }

    #[test]
    fn ints_at_every_form_boundary_read_back_exactly() {
        for &e in &INT_EDGES {
            for v in around(e) {
                let enc = body(|w| w.int(v));
                let want = match v {
                    0..=0x3f => 1,
                    -0x100..=0xff => 2,
                    -0x10000..=0xffff => 3,
                    _ if i32::try_from(v).is_ok() => 5,
                    _ => continue,
                };
                assert_eq!(enc.len(), want, "{v}");
                assert_eq!(int_value(enc[0], &enc), Some(v), "{v}");
            }
        }
        let mut two = body(|w| {
            w.int(-300);
            w.float(0.1);
        });
        assert_eq!(two.drain(..3).collect::<Vec<_>>(), [NEG16, 43, 1]);
        assert_eq!(float_value(two[0], &two), Some(0.1));
    }

    #[test]
    fn bytes_of_every_short_length_and_past_it_are_tag_varint_data() {
        for n in 0..=(SHORT_STR_MAX_LEN + 140) {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let mut want = vec![BYTES];
            crate::varint::put(&mut want, n as u64);
            want.extend_from_slice(&data);
            assert_eq!(body(|w| w.bytes(&data)), want, "length {n}");
            // After other output, at any alignment.
            let mut both = vec![SHORT_STR + 1, b'x'];
            both.extend_from_slice(&want);
            assert_eq!(
                body(|w| {
                    w.str(b"x");
                    w.bytes(&data);
                }),
                both,
                "length {n}"
            );
        }
    }

    #[test]
    fn references_take_a_varint_slot() {
        assert_eq!(body(|w| w.reference(0)), [REF, 0]);
        assert_eq!(body(|w| w.reference(0x7f)), [REF, 0x7f]);
        assert_eq!(body(|w| w.reference(0x80)), [REF, 0x80, 1]);
        assert_eq!(body(|w| w.reference(300)), [REF, 0xac, 2]);
    }

    #[test]
    fn minimal_le_keeps_the_sign() {
        assert_eq!(minimal_le(&[0x80, 0, 0]), &[0x80, 0]);
        assert_eq!(minimal_le(&[0x7f, 0, 0]), &[0x7f]);
        assert_eq!(minimal_le(&[0xff, 0xff]), &[0xff]);
        assert_eq!(minimal_le(&[0x00, 0xff]), &[0x00, 0xff]);
    }

    #[test]
    fn short_strs_of_every_length_are_copied_exactly() {
        let text: Vec<u8> = (b'a'..=b'z').chain(b'A'..=b'Z').collect();
        for n in 0..=SHORT_STR_MAX_LEN {
            for offset in [0, 1, 3, 7] {
                let s = &text[offset..offset + n];
                let mut expected = vec![SHORT_STR + n as u8];
                expected.extend_from_slice(s);
                assert_eq!(body(|w| w.str(s)), expected, "length {n}");
            }
        }
        let mut two = body(|w| {
            w.str(b"abc");
            w.str(&text[..31]);
        });
        assert_eq!(two.drain(..4).collect::<Vec<_>>(), b"\x43abc");
        assert_eq!(two[0], SHORT_STR + 31);
        assert_eq!(&two[1..], &text[..31]);
    }

    /// Writes `v` through a raw writer into zeroed room and returns the bytes it claims.
    fn raw(put: impl FnOnce(*mut u8) -> Option<*mut u8>) -> Option<Vec<u8>> {
        let mut room = [0u8; ATOM_ROOM];
        let dst = room.as_mut_ptr();
        let end = put(dst)?;
        // SAFETY: the raw writers return a pointer within the room they were given.
        let n = unsafe { end.offset_from(dst) } as usize;
        Some(room[..n].to_vec())
    }

    #[test]
    fn raw_atoms_write_what_the_writer_writes() {
        let mut ints = vec![i64::MIN, i64::MAX];
        for e in INT_EDGES.into_iter().chain([1 << 40]) {
            ints.extend(around(e));
        }
        for v in ints {
            // SAFETY: the room holds ATOM_ROOM bytes.
            match raw(|dst| unsafe { put_int(dst, v) }) {
                Some(got) => assert_eq!(got, body(|w| w.int(v)), "{v}"),
                None => assert!(i32::try_from(v).is_err(), "{v}"),
            }
        }
        let floats = [
            0.0,
            -0.0,
            1.5,
            0.1,
            1e300,
            f64::INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_2000_0000), // a NaN whose payload an f32 keeps
            f64::from_bits(0x7ff0_0000_0000_0001), // one whose payload it loses
            f64::MIN_POSITIVE,
            f64::from(f32::MAX),
            f64::from(f32::from_bits(1)), // the least f32 subnormal
            f64::from(f32::from_bits(0x0040_0001)),
            f64::from(f32::from_bits(1)) / 2.0,
            f64::from(f32::MAX) * 2.0,
            1.0 + f64::EPSILON,
        ];
        for f in floats {
            // SAFETY: the room holds ATOM_ROOM bytes.
            let got = raw(|dst| Some(unsafe { put_float(dst, f) })).unwrap();
            assert_eq!(got, body(|w| w.float(f)), "{f}");
        }
        for n in 0..=SHORT_STR_MAX_LEN {
            let text: Vec<u8> = (0..n as u8).map(|i| b'a' + i % 26).collect();
            // SAFETY: the room holds ATOM_ROOM bytes, and the text at most 31.
            let got = raw(|dst| Some(unsafe { put_short_str(dst, &text) })).unwrap();
            assert_eq!(got, body(|w| w.str(&text)), "{n}");
        }
        for tag in [NONE, TRUE, FALSE] {
            // SAFETY: the room holds ATOM_ROOM bytes.
            assert_eq!(
                raw(|dst| Some(unsafe { put_tag(dst, tag) })).unwrap(),
                [tag]
            );
        }
    }

    #[test]
    fn floats_narrow_only_when_exact() {
        assert_eq!(body(|w| w.float(1.5)).len(), 5);
        assert_eq!(body(|w| w.float(0.1)).len(), 9);
        assert_eq!(body(|w| w.float(-0.0)), [FLOAT32, 0, 0, 0, 0x80]);
    }

    #[test]
    fn a_stored_class_definition_writes_the_same_bytes() {
        let fields = [&b"x"[..], b"yy", b""];
        let direct = body(|w| w.class_new(OBJECT, b"m.Point", 300, fields.into_iter()));
        let definition = class_definition(b"m.Point", 300, fields.into_iter());
        assert_eq!(body(|w| w.class_new_defined(OBJECT, &definition)), direct);
        assert_eq!(&direct[..4], &[OBJECT, 0, 7, b'm']);
    }

    #[test]
    fn finish_writes_the_header_encode_gives() {
        for n in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            for key in [None, Some(&b"k"[..])] {
                let mut w = Writer::default();
                w.bytes(&vec![7; n]);
                let body_len = w.body_len() as u64;
                let (buf, start) = w.finish(key);
                let flags = if key.is_some() { FLAG_SIGNED } else { 0 };
                let (header, len) = crate::header::Header::encode(flags, body_len);
                assert_eq!(start + len, MAX_HEADER_LEN, "body of {body_len} bytes");
                assert_eq!(&buf[start..MAX_HEADER_LEN], &header[..len]);
            }
        }
    }

    /// External memory for the tests: a boxed Vec (its length is its capacity).
    static TEST_STORAGE: Storage = Storage {
        grow: test_grow,
        release: test_release,
    };

    unsafe fn test_grow(ctx: &mut *mut (), _len: usize, min_cap: usize) -> (NonNull<u8>, usize) {
        // SAFETY: the tests' ctx is a leaked Box<Vec<u8>>.
        let v = unsafe { &mut *ctx.cast::<Vec<u8>>() };
        v.resize(min_cap, 0xAA);
        (NonNull::new(v.as_mut_ptr()).unwrap(), v.len())
    }

    unsafe fn test_release(ctx: *mut ()) {
        // SAFETY: the tests' ctx is a leaked Box<Vec<u8>>.
        drop(unsafe { Box::from_raw(ctx.cast::<Vec<u8>>()) });
    }

    fn external(cap: usize, head: usize) -> Writer {
        let mut v = Box::new(vec![0xAA_u8; cap]);
        let ptr = NonNull::new(v.as_mut_ptr()).unwrap();
        // SAFETY: the Vec's memory, owned by the leaked box named by ctx.
        unsafe { Writer::external(ptr, cap, &TEST_STORAGE, Box::into_raw(v).cast(), head) }
    }

    fn take(mut w: Writer) -> Vec<u8> {
        let (ctx, len) = w.take_external().unwrap();
        // SAFETY: the tests' ctx is a leaked Box<Vec<u8>>, now ours.
        let mut v = unsafe { Box::from_raw(ctx.cast::<Vec<u8>>()) };
        v.truncate(len);
        *v
    }

    #[test]
    fn an_external_record_starts_at_the_front_whatever_head_was_guessed() {
        for n in [0usize, 100, 127, 128, 300, 16_384, 70_000] {
            for key in [None, Some(&b"k"[..])] {
                let mut plain = Writer::default();
                plain.bytes(&vec![7; n]);
                let (buf, start) = plain.finish(key);
                let want = buf[start..].to_vec();
                for (cap, head) in [(16, 5), (8, 6), (100_000, 14), (32, 7)] {
                    let mut w = external(cap, head);
                    w.bytes(&vec![7; n]);
                    let (len, _) = w.finish_front(key.is_some());
                    if let Some(key) = key {
                        let tag = integrity::sign(key, w.record(0));
                        w.push_tag(&tag);
                    }
                    assert_eq!(w.head(), 4 + varint::len(len as u64 - w.head() as u64));
                    assert_eq!(take(w), want, "{n} bytes, head {head}");
                }
            }
        }
    }

    #[test]
    fn an_external_writer_leaves_room_for_deferred_data() {
        let data = vec![3u8; 20_000];
        let mut plain = Writer::default();
        plain.str(b"a");
        plain.bytes(&data);
        plain.int(1);
        let (buf, start) = plain.finish(None);
        let mut w = external(64, 5);
        w.str(b"a");
        let at = w.bytes_deferred(data.len());
        w.int(1);
        let (_, shift) = w.finish_front(false);
        let dst = at.wrapping_add_signed(shift);
        // SAFETY: the writer left data.len() bytes of room at dst.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), w.as_mut_ptr().add(dst), data.len())
        };
        assert_eq!(take(w), &buf[start..]);
        // Dropped before its output is taken: the storage releases its memory.
        let mut w = external(8, 5);
        w.restart();
        w.int(5);
        drop(w);
    }

    #[test]
    fn finish_writes_header_and_tag() {
        let mut w = Writer::default();
        w.tag(NONE);
        let (buf, start) = w.finish(Some(b"k"));
        let record = &buf[start..];
        assert_eq!(&record[..5], b"BW\x01\x01\x01");
        assert_eq!(record.len(), 5 + 1 + 32);
    }
}
