//! Python adapters for the object-graph (pickle) core: `bytewright.pickle`'s native half.

mod builder;
pub(crate) mod classes;
pub(crate) mod config;
mod encoder;
pub(crate) mod errors;
pub(crate) mod infocache;
mod kept;
mod keys;
mod memo;
mod ptrmap;
mod resolved;
mod small;

use bytewright_graph::{integrity, record, Header, Limits, Reader, Writer};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3::Borrowed;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fastcall;
use builder::Builder;
use classes::AllowedClasses;
use encoder::{Chunk, Chunks, Encoder, Walker};
use kept::Kept;

/// Inputs and outputs from this size on are validated, signed and copied with the GIL
/// released.
pub(crate) const RELEASE_GIL_FROM: usize = 64 * 1024;

/// The largest output buffer a thread keeps for its next `dumps`.
const SPARE_MAX: usize = 256 * 1024;

/// The buffer of the last `dumps`, reused by the next one (no allocation and no regrowing
/// for a record no larger than the last). A plain static rather than a thread-local: it is
/// only touched with the GIL held, and a thread-local costs a call to find on every `dumps`.
struct Spare(std::cell::UnsafeCell<Vec<u8>>);

// SAFETY: the buffer is only taken or put back with the GIL held (every `dumps` holds it
// there), so no two threads touch it at once.
unsafe impl Sync for Spare {}

static SPARE: Spare = Spare(std::cell::UnsafeCell::new(Vec::new()));

/// The spare buffer as a writer; a nested `dumps` (a hook that pickles) finds it taken
/// (empty) and allocates its own. The GIL is held.
#[inline(always)]
fn take_spare(_py: Python<'_>) -> Writer {
    // SAFETY: the GIL is held (`_py`), so this is the only access to the buffer.
    Writer::reusing(unsafe { std::mem::take(&mut *SPARE.0.get()) })
}

/// Keeps `buf` for the next `dumps` unless it is large (whatever was kept, a nested call's
/// buffer, is freed).
#[inline(always)]
fn give_back(_py: Python<'_>, buf: Vec<u8>) {
    if buf.capacity() <= SPARE_MAX {
        // SAFETY: the GIL is held (`_py`), so this is the only access to the buffer.
        let old = unsafe { std::mem::replace(&mut *SPARE.0.get(), buf) };
        if old.capacity() != 0 {
            drop_buffer(old);
        }
    }
}

#[cold]
fn drop_buffer(buf: Vec<u8>) {
    drop(buf);
}

/// A new bytes object holding `data` (NULL with an exception set on failure); large data is
/// copied with the GIL released, so other threads run meanwhile.
pub(crate) fn new_bytes(py: Python<'_>, data: &[u8]) -> *mut ffi::PyObject {
    new_bytes_inline(py, data)
}

/// [`new_bytes`], inline.
#[inline(always)]
fn new_bytes_inline(py: Python<'_>, data: &[u8]) -> *mut ffi::PyObject {
    let n = data.len() as ffi::Py_ssize_t;
    if data.len() < RELEASE_GIL_FROM {
        // SAFETY: data is a live slice; plain constructor.
        return unsafe { ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), n) };
    }
    // SAFETY: a new, uninitialised bytes object of `n` bytes, filled below.
    let p = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), n) };
    if !p.is_null() {
        // Addresses as integers: the closure runs without the GIL and must be Send.
        // SAFETY: p is a new bytes object of n bytes.
        let dst = p as usize + std::mem::offset_of!(ffi::PyBytesObject, ob_sval);
        let src = data.as_ptr() as usize;
        crate::cpython::without_gil(py, move || {
            crate::alloc::prefault(dst as *mut u8, n as usize);
            // SAFETY: nobody else references the new object yet, and `data` (immutable
            // bytes of an object the caller holds, or memory of its own) outlives the call.
            unsafe { bytewright_graph::copy::copy(dst as *mut u8, src as *const u8, n as usize) }
        });
    }
    p
}

/// [`new_bytes`] for a record of `dumps`: most records are copied with two overlapping
/// moves instead of a call to memcpy.
#[inline(always)]
fn record_bytes(py: Python<'_>, data: &[u8]) -> *mut ffi::PyObject {
    let n = data.len() as ffi::Py_ssize_t;
    if data.len() <= 32 {
        // SAFETY: a new, uninitialised bytes object of `n` bytes, filled below before
        // anyone else sees it.
        unsafe {
            let p = ffi::PyBytes_FromStringAndSize(std::ptr::null(), n);
            if !p.is_null() {
                let dst = p
                    .cast::<u8>()
                    .add(std::mem::offset_of!(ffi::PyBytesObject, ob_sval));
                bytewright_graph::writer::copy_small(data, dst);
            }
            return p;
        }
    }
    new_bytes(py, data)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    DUMPS.add_to(m, dumps_trampoline)?;
    LOADS.add_to(m, loads_trampoline)?;
    m.add_class::<Decoder>()?;
    install_decoder_loads(m.py())?;
    m.add_function(wrap_pyfunction!(graph_record_len, m)?)?;
    infocache::register(m)?;
    Ok(())
}

#[inline(always)]
fn key_bytes(key: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<u8>>> {
    match key.filter(|k| !k.is_none()) {
        None => Ok(None),
        Some(key) => given_key_bytes(key).map(Some),
    }
}

#[inline(never)]
fn given_key_bytes(key: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let bytes = if let Ok(b) = key.cast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else if let (false, Ok(buffer)) = (
        key.is_instance_of::<pyo3::types::PyString>(),
        PyBuffer::<u8>::get(key),
    ) {
        buffer.to_vec(key.py())?
    } else {
        return Err(PyTypeError::new_err(format!(
            "hmac_key must be bytes-like, not {}",
            key.get_type().name()?
        )));
    };
    if bytes.is_empty() {
        return Err(PyValueError::new_err("hmac_key must not be empty"));
    }
    Ok(bytes)
}

fastcall::fast_function! {
    static DUMPS: [3] = {
        name: c"pickle_dumps",
        positional: "obj",
        also_positional: 1,
        keywords: ["protocol", "hmac_key", "deterministic"],
        doc: c"pickle_dumps(obj, protocol=None, *, hmac_key=None, deterministic=False)\n--\n\nSerialize `obj` to one record. `protocol` is accepted for call-shape compatibility.",
        body: dumps_args,
    };
    [direct = dumps_one] trampoline dumps_trampoline;
}

/// `dumps(obj)`, the plain call, for [`fastcall::enter_one`]: what [`dumps_args`] does
/// with no keyword given, returning the new bytes object (NULL with the error raised).
fn dumps_one(py: Python<'_>, obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
    let cfg = match config::get(py) {
        Ok(cfg) => cfg,
        Err(e) => return raised(py, e),
    };
    let hint = LAST_RECORD.load(Ordering::Relaxed);
    let out = crate::cpython::bytes_for_writer(py, hint.cap());
    if out.is_null() {
        return dumps_one_portable(py, obj);
    }
    dumps_plain(py, cfg, obj, out, hint)
}

/// [`dumps_one`] on the portable path (no bytes object written in place).
#[cold]
#[inline(never)]
fn dumps_one_portable(py: Python<'_>, obj: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: `obj` is the caller's live argument.
    let obj = unsafe { Borrowed::from_ptr(py, obj) };
    match dumps(py, &obj, None, false) {
        Ok(out) => out.into_ptr(),
        Err(e) => raised(py, e),
    }
}

/// NULL with `e` raised.
#[cold]
#[inline(never)]
fn raised(py: Python<'_>, e: PyErr) -> *mut ffi::PyObject {
    e.restore(py);
    std::ptr::null_mut()
}

fn dumps_args<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    [_protocol, hmac_key, deterministic]: [Option<&Bound<'py, PyAny>>; 3],
) -> PyResult<Bound<'py, PyAny>> {
    let deterministic = match deterministic {
        None => false,
        // SAFETY: comparing addresses with the interpreter's own singletons.
        Some(d) if d.as_ptr() == unsafe { ffi::Py_False() } => false,
        Some(d) if d.as_ptr() == unsafe { ffi::Py_True() } => true,
        Some(d) => d.extract::<bool>().map_err(|_| {
            PyTypeError::new_err(format!(
                "deterministic must be a bool, not {}",
                d.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?,
    };
    if !deterministic && hmac_key.is_none_or(|k| k.is_none()) {
        let cfg = config::get(py)?;
        let hint = LAST_RECORD.load(Ordering::Relaxed);
        let out = crate::cpython::bytes_for_writer(py, hint.cap());
        if !out.is_null() {
            let done = dumps_plain(py, cfg, obj.as_ptr(), out, hint);
            // SAFETY: a new bytes object, or NULL with an exception set.
            return unsafe { Bound::from_owned_ptr_or_err(py, done) };
        }
    }
    dumps(py, obj, hmac_key, deterministic).map(Bound::into_any)
}

/// Serialize `obj` to one record.
#[inline(never)]
fn dumps<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    hmac_key: Option<&Bound<'py, PyAny>>,
    deterministic: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let cfg = config::get(py)?;
    let key = key_bytes(hmac_key)?;
    let hint = LAST_RECORD.load(Ordering::Relaxed);
    let (w, in_place) = match crate::cpython::bytes_writer(py, hint.cap(), hint.head()) {
        Some(w) => (w, true),
        None => (take_spare(py), false),
    };
    let mut enc = Walker::new(Encoder::new(py, cfg, deterministic, w));
    enc.encode_root(obj.as_ptr())
        .map_err(|e| e.into_py(py, cfg))?;
    if deterministic {
        // Second pass: share only what the first pass met twice, never what merely has
        // outside references, so equal graphs give equal bytes in any process.
        let (mut w, _, shared) = enc.take_output();
        w.restart();
        enc = Walker::new(Encoder::new(py, cfg, deterministic, w));
        enc.share_only(shared);
        enc.encode_root(obj.as_ptr())
            .map_err(|e| e.into_py(py, cfg))?;
    }
    if in_place {
        return finish_walker_in_bytes(py, &mut enc, key.as_deref());
    }
    let out = match enc.undeferred_output() {
        // The common case: finished, copied out and handed back in place.
        Some(w) if key.is_none() || w.body_len() < RELEASE_GIL_FROM => {
            let start = w.finish_in_place(key.as_deref());
            let out = record_bytes(py, w.record(start));
            give_back(py, w.take_buffer());
            out
        }
        _ => {
            let (writer, chunks, _) = enc.take_output();
            if !chunks.is_empty() {
                return assemble(py, writer, &chunks, key.as_deref());
            }
            let (buf, start) = py.detach(|| writer.finish(key.as_deref()));
            let out = new_bytes(py, &buf[start..]);
            give_back(py, buf);
            out
        }
    };
    // SAFETY: a new bytes object, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, out).map(|b| b.cast_into_unchecked()) }
}

/// [`dumps`] of the common call (no key, not deterministic) into `out`, a new bytes
/// object of the size `hint` gives, returned with the record in it (NULL with the error
/// raised): the writer is built in the encoder, and no key or second pass is looked at.
#[inline(always)]
fn dumps_plain(
    py: Python<'_>,
    cfg: &'static config::Config,
    obj: *mut ffi::PyObject,
    out: *mut ffi::PyObject,
    hint: LastRecord,
) -> *mut ffi::PyObject {
    // SAFETY: `out` is a new bytes object of that size, given to the writer alone.
    let w = unsafe { crate::cpython::bytes_object_writer(out, hint.cap(), hint.head()) };
    let mut enc = Walker::new(Encoder::new(py, cfg, false, w));
    if let Err(e) = enc.encode_root(obj) {
        return raised(py, e.into_py(py, cfg));
    }
    finish_walker_ptr(py, &mut enc, None)
}

/// The record of an encoder that wrote into a bytes object of its own
/// ([`crate::cpython::bytes_writer`]), finished in that object (signed with `key`).
#[inline(always)]
fn finish_walker_in_bytes<'py>(
    py: Python<'py>,
    enc: &mut Walker<'py>,
    key: Option<&[u8]>,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = finish_walker_ptr(py, enc, key);
    // SAFETY: a new bytes object, or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, out).map(|b| b.cast_into_unchecked()) }
}

/// [`finish_walker_in_bytes`] as the new bytes object, or NULL with an exception set.
#[inline(always)]
fn finish_walker_ptr<'py>(
    py: Python<'py>,
    enc: &mut Walker<'py>,
    key: Option<&[u8]>,
) -> *mut ffi::PyObject {
    match enc.undeferred_output() {
        Some(w) => finish_in_bytes(py, w, key, None),
        None => {
            let (mut w, chunks, _) = enc.take_output();
            finish_in_bytes(py, &mut w, key, Some(&chunks))
        }
    }
}

/// The size of the last record `dumps` wrote in place and the length of its header: the
/// next one starts with a bytes object that large (most programs write records of much
/// the same size again and again), with that much room for its header.
#[derive(Clone, Copy)]
struct LastRecord(usize);

impl LastRecord {
    /// Records up to this size size the next one's bytes object; larger ones give this.
    const MAX_HINT: usize = 16 << 20;

    const fn new(len: usize, head: usize) -> Self {
        let len = if len > Self::MAX_HINT {
            Self::MAX_HINT
        } else {
            len
        };
        Self(len << 4 | head)
    }

    /// The capacity to start the next record with: a little more than the last one (the
    /// writer reserves room for a whole short str before it writes one).
    #[inline(always)]
    fn cap(self) -> usize {
        let len = self.0 >> 4;
        len + len / 32 + 64
    }

    /// At most 14 (a header's longest), as the writer requires: said here so that the
    /// compiler drops the writer's check (and the copy of the writer its panic path needs).
    #[inline(always)]
    fn head(self) -> usize {
        (self.0 & 15).min(bytewright_graph::header::MAX_HEADER_LEN)
    }
}

/// The last in-place record (see [`LastRecord`]); a guess, so relaxed loads and stores.
static LAST_RECORD: AtomicLastRecord = AtomicLastRecord(AtomicUsize::new(LastRecord::new(0, 5).0));

struct AtomicLastRecord(AtomicUsize);

impl AtomicLastRecord {
    #[inline(always)]
    fn load(&self, order: Ordering) -> LastRecord {
        LastRecord(self.0.load(order))
    }

    #[inline(always)]
    fn store(&self, v: LastRecord, order: Ordering) {
        self.0.store(v.0, order);
    }
}

/// Completes a record built in place in a bytes object (see `cpython::bytes_writer`):
/// header, deferred data copied into the room left for it, tag; returns the bytes object
/// (NULL with an exception set on failure). Large data is copied and signed with the GIL
/// released.
#[inline(always)]
fn finish_in_bytes(
    py: Python<'_>,
    w: &mut Writer,
    key: Option<&[u8]>,
    chunks: Option<&Chunks<'_>>,
) -> *mut ffi::PyObject {
    let (len, shift) = w.finish_front(key.is_some());
    if let Some(chunks) = chunks.filter(|c| !c.is_empty()) {
        fill_chunks(py, w, chunks, shift);
    }
    let mut total = len;
    if let Some(key) = key {
        let record = w.record(0);
        let tag = if len >= RELEASE_GIL_FROM {
            crate::cpython::without_gil(py, || integrity::sign(key, record))
        } else {
            integrity::sign(key, record)
        };
        w.push_tag(&tag);
        total += integrity::TAG_LEN;
    }
    LAST_RECORD.store(LastRecord::new(total, w.head()), Ordering::Relaxed);
    crate::cpython::bytes_result(py, w).unwrap_or(std::ptr::null_mut())
}

/// Copies each deferred chunk into the room its writer left for it (at its position
/// moved by `shift`), with the GIL released when there is much to copy.
#[cold]
fn fill_chunks(py: Python<'_>, w: &mut Writer, chunks: &Chunks<'_>, shift: isize) {
    let base = w.as_mut_ptr() as usize;
    // (destination, data, length) of each chunk: plain integers, so the copy can run
    // without the GIL (the data is immutable and its owners outlive the call).
    let piece = |c: &Chunk<'_>| {
        (
            base + c.at.wrapping_add_signed(shift),
            c.data as usize,
            c.len,
        )
    };
    match chunks.single() {
        // The common case (one large str or bytes): nothing to allocate.
        Some(c) => copy_pieces(py, &[piece(c)]),
        None => copy_pieces(py, &chunks.iter().map(piece).collect::<Vec<_>>()),
    }
}

/// Copies each (destination, data, length) piece of [`fill_chunks`].
fn copy_pieces(py: Python<'_>, pieces: &[(usize, usize, usize)]) {
    let copy = || {
        for &(dst, data, len) in pieces {
            crate::alloc::prefault(dst as *mut u8, len);
            // SAFETY: the writer left `len` bytes of room at `dst` for this chunk (nothing
            // else is written there), and `data` points at `len` bytes of an immutable
            // str/bytes kept alive by its chunk's owner for the whole call.
            unsafe { bytewright_graph::copy::copy(dst as *mut u8, data as *const u8, len) };
        }
    };
    if pieces.iter().map(|p| p.2).sum::<usize>() >= RELEASE_GIL_FROM {
        crate::cpython::without_gil(py, copy);
    } else {
        copy();
    }
}

/// Builds the output of a record with deferred chunks: every byte is copied exactly
/// once, into a bytes object of the final size.
fn assemble<'py>(
    py: Python<'py>,
    writer: Writer,
    chunks: &Chunks<'py>,
    key: Option<&[u8]>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (buf, start) = writer.finish_header(key.is_some());
    let tag = if key.is_some() { integrity::TAG_LEN } else { 0 };
    let total = (buf.len() - start) + chunks.iter().map(|c| c.len).sum::<usize>() + tag;
    // SAFETY: a new, uninitialised bytes object of `total` bytes that only we reference;
    // every byte is written below before it is returned.
    let out = unsafe {
        let p = ffi::PyBytes_FromStringAndSize(std::ptr::null(), total as ffi::Py_ssize_t);
        Bound::from_owned_ptr_or_err(py, p)?.cast_into_unchecked::<PyBytes>()
    };
    // SAFETY: the bytes object owns `total` writable bytes and is not shared yet.
    let dst = unsafe {
        std::slice::from_raw_parts_mut(ffi::PyBytes_AsString(out.as_ptr()).cast::<u8>(), total)
    };
    // (position in buf, data address, data length) of each chunk: plain integers, so the
    // copy can run without the GIL (the data is immutable and its owners outlive it).
    let pieces: Vec<(usize, usize, usize)> = chunks
        .iter()
        .map(|c| (c.at, c.data as usize, c.len))
        .collect();
    let fill = move || {
        crate::alloc::prefault(dst.as_mut_ptr(), dst.len());
        let mut o = 0;
        let mut prev = start;
        for &(at, data, len) in &pieces {
            let head = &buf[prev..at];
            dst[o..o + head.len()].copy_from_slice(head);
            o += head.len();
            // SAFETY: `data` points at `len` bytes of an immutable str/bytes kept alive by
            // its chunk's owner for the whole call.
            let data = unsafe { std::slice::from_raw_parts(data as *const u8, len) };
            dst[o..o + data.len()].copy_from_slice(data);
            o += data.len();
            prev = at;
        }
        let tail = &buf[prev..];
        dst[o..o + tail.len()].copy_from_slice(tail);
        o += tail.len();
        if let Some(key) = key {
            let (record, tag_out) = dst.split_at_mut(o);
            tag_out.copy_from_slice(&integrity::sign(key, record));
        }
        buf
    };
    let buf = if total >= RELEASE_GIL_FROM {
        py.detach(fill)
    } else {
        fill()
    };
    give_back(py, buf);
    Ok(out)
}

/// What [`input_bytes`] keeps alive for the bytes it hands out: a private copy of a buffer
/// that may change, or the export of a memoryview of a bytes object, read in place.
#[derive(Default)]
pub(crate) struct Held {
    copy: Vec<u8>,
    view: Option<PyBuffer<u8>>,
}

/// The bytes of a `data` argument: bytes as they are, and a memoryview of bytes (a slice of
/// a larger message, say) in place, since the data of a bytes object never changes; a
/// bytearray, a memoryview of one and any other buffer, which may change under us (another
/// thread writes to it while this one has handed over the GIL), as a private copy in `held`.
/// `function` names the caller in the error.
#[inline(always)]
pub(crate) fn input_bytes<'a>(
    data: &'a Bound<'_, PyAny>,
    held: &'a mut Held,
    function: &str,
) -> PyResult<&'a [u8]> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    input_buffer(data, held, function)
}

/// [`input_bytes`] for anything but bytes.
#[inline(never)]
fn input_buffer<'a>(
    data: &'a Bound<'_, PyAny>,
    held: &'a mut Held,
    function: &str,
) -> PyResult<&'a [u8]> {
    if !data.is_instance_of::<pyo3::types::PyString>() {
        if let Ok(buffer) = PyBuffer::<u8>::get(data) {
            if views_bytes(data, &buffer) {
                let view = held.view.insert(buffer);
                if view.len_bytes() == 0 {
                    return Ok(&[]);
                }
                // SAFETY: a C-contiguous buffer of `len_bytes` bytes from a bytes object,
                // whose data never changes or moves; the export held in `held` keeps the
                // memoryview from being released (its `release()` refuses while a buffer
                // is exported), and so the bytes object alive, as long as the slice.
                return Ok(unsafe {
                    std::slice::from_raw_parts(view.buf_ptr().cast::<u8>(), view.len_bytes())
                });
            }
            held.copy = buffer.to_vec(data.py())?;
            return Ok(&held.copy);
        }
    }
    Err(PyTypeError::new_err(format!(
        "{function}() takes bytes, bytearray or memoryview, not {}",
        data.get_type().name()?
    )))
}

/// Whether `data` is a memoryview over a bytes object (its `obj`) whose `buffer` is one
/// read-only, C-contiguous run of memory.
fn views_bytes(data: &Bound<'_, PyAny>, buffer: &PyBuffer<u8>) -> bool {
    // SAFETY: a type check of a live object.
    if unsafe { ffi::PyMemoryView_Check(data.as_ptr()) } == 0
        || !buffer.readonly()
        || !buffer.is_c_contiguous()
    {
        return false;
    }
    data.getattr(pyo3::intern!(data.py(), "obj"))
        .is_ok_and(|base| base.is_instance_of::<PyBytes>())
}

/// The `pickle.Limits` a caller passed (or the defaults), shared by `loads` and `loads_pickle`.
#[inline(always)]
pub(crate) fn limits_from(
    cfg: &config::Config,
    limits: Option<&Bound<'_, PyAny>>,
) -> PyResult<Limits> {
    match limits.filter(|l| !l.is_none()) {
        None => Ok(Limits::default()),
        Some(limits) => limits_given(cfg, limits),
    }
}

/// [`limits_from`] for a `limits=` that was given.
#[inline(never)]
fn limits_given(cfg: &config::Config, limits: &Bound<'_, PyAny>) -> PyResult<Limits> {
    if !limits.is_instance(cfg.limits_type.bind(limits.py()))? {
        return Err(PyTypeError::new_err(format!(
            "limits must be a pickle.Limits, not {}",
            limits.get_type().name()?
        )));
    }
    let get = |name: &str| -> PyResult<u64> { limits.getattr(name)?.extract() };
    Ok(Limits {
        max_bytes: get("max_bytes")?,
        max_depth: get("max_depth")?,
        max_items: get("max_items")?,
        max_container_len: get("max_container_len")?,
        max_str_len: get("max_str_len")?,
        max_bytes_len: get("max_bytes_len")?,
        max_int_digits: get("max_int_digits")?,
    })
}

fastcall::fast_function! {
    static LOADS: [3] = {
        name: c"pickle_loads",
        positional: "data",
        keywords: ["classes", "hmac_key", "limits"],
        doc: c"pickle_loads(data, *, classes=None, hmac_key=None, limits=None)\n--\n\nRebuild the object graph of one record; only `classes` may be instantiated.",
        body: loads_args,
    };
    trampoline loads_trampoline;
}

fn loads_args<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    [classes, hmac_key, limits]: [Option<&Bound<'py, PyAny>>; 3],
) -> PyResult<Bound<'py, PyAny>> {
    loads(py, data, classes, hmac_key, limits)
}

/// Rebuild the object graph of one record; only `classes` may be instantiated.
fn loads<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<&Bound<'py, PyAny>>,
    hmac_key: Option<&Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config::get(py)?;
    let limits = limits_from(cfg, limits)?;
    let key = key_bytes(hmac_key)?;
    let none_given;
    let classes = match classes {
        Some(classes) => classes,
        None => {
            none_given = PyTuple::empty(py).into_any();
            &none_given
        }
    };
    load_record(py, cfg, data, classes, key.as_deref(), &limits, None)
}

/// `loads` with its options already checked: `classes` as `classes=` takes it (a new
/// reference to it is only taken for the general builder).
#[inline(always)]
fn load_record<'py>(
    py: Python<'py>,
    cfg: &'static config::Config,
    data: &Bound<'py, PyAny>,
    classes: &Bound<'py, PyAny>,
    key: Option<&[u8]>,
    limits: &Limits,
    kept: Option<&Kept>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut held = Held::default();
    let input = input_bytes(data, &mut held, "loads")?;
    if input.len() >= RELEASE_GIL_FROM {
        // Unsigned: opening is reading the header (a signed record is verified with the
        // GIL released, in `load_large`).
        let opened = match key {
            None => {
                let opened = record::open(input, None, limits);
                if let Ok(body) = opened {
                    if let Some(value) = single_blob(py, body, limits) {
                        return Ok(value);
                    }
                }
                Some(opened)
            }
            Some(_) => None,
        };
        return load_large(py, cfg, input, opened, classes, key, *limits, kept);
    }
    let body = record::open(input, key, limits).map_err(|e| errors::read_error(py, cfg, &e))?;
    if small::eligible(body, limits, kept.is_some()) {
        if let Some(value) = small::build(body, kept) {
            // SAFETY: a new reference.
            return Ok(unsafe { Bound::from_owned_ptr(py, value) });
        }
    } else if let Some(value) = single_blob(py, body, limits) {
        // A str or bytes alone, too long for `small`: made at once, without the general
        // builder's set-up (about 90 ns, as much as copying 4 KB).
        return Ok(value);
    }
    let builder = Builder::new(py, cfg, body, *limits, AllowedClasses::new(classes.clone()));
    match kept {
        Some(kept) => builder.with_kept(kept).build(),
        None => builder.build(),
    }
}

/// [`load_record`] for a large input (never one for `small`): it is opened (unless
/// `opened` holds the outcome already) and checked whole with the GIL released first, in
/// the reader storage this thread keeps for its builders (so the check allocates nothing),
/// which then goes on to the builder.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn load_large<'py>(
    py: Python<'py>,
    cfg: &'static config::Config,
    input: &[u8],
    opened: Option<Result<&[u8], bytewright_graph::ReadError>>,
    classes: &Bound<'py, PyAny>,
    key: Option<&[u8]>,
    limits: Limits,
    kept: Option<&Kept>,
) -> PyResult<Bound<'py, PyAny>> {
    // Unsigned: opening is reading the header (a signed record is verified below, with
    // the GIL released).
    let mut scratch = builder::take_scratch();
    let buffers = scratch.as_mut().map(builder::Scratch::take_reader);
    let (body, buffers) = crate::cpython::without_gil(py, move || {
        let buffers = buffers.unwrap_or_default();
        match opened.unwrap_or_else(|| record::open(input, key, &limits)) {
            Err(e) => (Err(e), buffers),
            Ok(body) => {
                // Never dropped: `take_buffers` leaves it nothing to free.
                let mut reader =
                    std::mem::ManuallyDrop::new(Reader::with_buffers(body, limits, buffers));
                let checked = reader.check().map(|()| body);
                (checked, reader.take_buffers())
            }
        }
    });
    if let Some(s) = scratch.as_mut() {
        s.put_reader(buffers);
    }
    let body = match body {
        Ok(body) => body,
        Err(e) => {
            builder::put_scratch(scratch);
            return Err(errors::read_error(py, cfg, &e));
        }
    };
    let classes = AllowedClasses::new(classes.clone());
    let builder = Builder::with_scratch(py, cfg, body, limits, classes, scratch);
    match kept {
        Some(kept) => builder.with_kept(kept).build(),
        None => builder.build(),
    }
}

/// The value of a record whose body is one bytes or str (the whole of a 1 MB blob, or one
/// of a few KiB too long for `small`): built straight away, its copy the only step made
/// with the GIL released when large; checking the rest would hand the GIL over once more
/// for nothing. `None` for any other body, and for one this cannot build (a str that is
/// not UTF-8, a limit exceeded), which the general path then reads and reports.
#[inline(always)]
fn single_blob<'py>(py: Python<'py>, body: &[u8], limits: &Limits) -> Option<Bound<'py, PyAny>> {
    use bytewright_graph::tags::{BYTES, STR};
    let (&tag, rest) = body.split_first()?;
    if tag | (BYTES ^ STR) != BYTES {
        return None;
    }
    cold_single_blob(py, tag, rest, limits)
}

#[inline(never)]
fn cold_single_blob<'py>(
    py: Python<'py>,
    tag: u8,
    rest: &[u8],
    limits: &Limits,
) -> Option<Bound<'py, PyAny>> {
    use bytewright_graph::tags::BYTES;
    // The length: up to three varint bytes inline (2 MiB; the header allows no more
    // unless it is longer), the general reader otherwise.
    let (n, pos) = match *rest {
        [b0 @ 0..0x80, ..] => (u64::from(b0), 1),
        [b0, b1 @ 0..0x80, ..] => (u64::from(b0 & 0x7f) | u64::from(b1) << 7, 2),
        [b0, b1, b2 @ 0..0x80, ..] => (
            u64::from(b0 & 0x7f) | u64::from(b1 & 0x7f) << 7 | u64::from(b2) << 14,
            3,
        ),
        _ => {
            let mut pos = 0;
            (bytewright_graph::varint::get(rest, &mut pos)?, pos)
        }
    };
    let max = if tag == BYTES {
        limits.max_bytes_len
    } else {
        limits.max_str_len
    };
    if n > max || limits.max_items == 0 || rest.len() - pos != usize::try_from(n).ok()? {
        return None;
    }
    let data = &rest[pos..];
    let p = if tag == BYTES {
        new_bytes_inline(py, data)
    } else {
        builder::new_str(data)
    };
    if p.is_null() {
        // The general path makes the same object again and reports its failure.
        // SAFETY: p is NULL with an exception set, dropped here.
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    // SAFETY: a new reference.
    Some(unsafe { Bound::from_owned_ptr(py, p) })
}

/// `bytewright.pickle.Decoder`: `loads` with its options checked once.
#[pyclass(frozen, module = "bytewright.pickle", name = "Decoder")]
pub struct Decoder {
    /// A tuple of classes, or a dict of its own.
    classes: Py<PyAny>,
    /// Its classes that declare their fields, resolved once (`None`: there are none).
    kept: Option<Kept>,
    key: Option<Vec<u8>>,
    limits: Limits,
    /// As given, for the repr.
    limits_given: Py<PyAny>,
}

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(signature = (*, classes = None, hmac_key = None, limits = None))]
    fn new(
        py: Python<'_>,
        classes: Option<&Bound<'_, PyAny>>,
        hmac_key: Option<&Bound<'_, PyAny>>,
        limits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let cfg = config::get(py)?;
        let limits_value = limits_from(cfg, limits)?;
        let key = key_bytes(hmac_key)?;
        // The checks `loads` makes on first use (class_map's), made now.
        let class_map = cfg.class_map.bind(py);
        let (classes, map) = match classes.filter(|c| !c.is_none()) {
            None => (PyTuple::empty(py).into_any(), None),
            // A list or tuple becomes a tuple, as `loads` takes it; any other iterable or
            // mapping is read once, into a dict of its own (class_map's copy).
            Some(c) if c.cast::<PyList>().is_ok() || c.cast::<PyTuple>().is_ok() => {
                let tuple = PyTuple::new(py, c.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
                let map = class_map.call1((&tuple,))?;
                (tuple.into_any(), Some(map))
            }
            Some(c) => {
                let map = class_map.call1((c,))?;
                (map.clone(), Some(map))
            }
        };
        let kept = match map {
            Some(map) => Kept::new(py, cfg, &classes, map.cast::<PyDict>()?),
            None => Kept::default(),
        };
        Ok(Self {
            classes: classes.unbind(),
            kept: (!kept.is_empty()).then_some(kept),
            key,
            limits: limits_value,
            limits_given: limits.map_or_else(|| py.None(), |l| l.clone().unbind()),
        })
    }

    /// The kept classes (see `kept`), as `(name, class)` pairs: for the tests.
    fn _kept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pairs = self.kept.iter().flat_map(Kept::classes).map(|r| {
            PyTuple::new(
                py,
                [
                    r.name.clone().into_pyobject(py)?.into_any(),
                    r.cls.bind(py).clone().into_any(),
                ],
            )
        });
        PyList::new(py, pairs.collect::<PyResult<Vec<_>>>()?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Decoder(classes={}, hmac_key={}, limits={})",
            self.classes.bind(py).repr()?,
            if self.key.is_some() { "<set>" } else { "None" },
            self.limits_given.bind(py).repr()?,
        ))
    }
}

impl Decoder {
    /// Rebuild the object graph of one record, as `loads` does with this decoder's options.
    #[inline(always)]
    fn loads<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let cfg = config::get(py)?;
        load_record(
            py,
            cfg,
            data,
            self.classes.bind(py),
            self.key.as_deref(),
            &self.limits,
            self.kept.as_ref(),
        )
    }
}

/// The C entry point of `Decoder.loads`.
unsafe extern "C" fn decoder_loads(
    slf: *mut ffi::PyObject,
    data: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a method with the GIL held.
    let py = unsafe { Python::assume_attached() };
    let body = || {
        // SAFETY: both are live for the call (CPython holds them); the descriptor checked
        // that `slf` is a Decoder (PyDescr_NewMethod binds the method to the type).
        let (slf, data) = unsafe {
            (
                Borrowed::from_ptr(py, slf).cast_unchecked::<Decoder>(),
                Borrowed::from_ptr(py, data),
            )
        };
        slf.get().loads(py, &data)
    };
    fastcall::run(py, body, || "Decoder.loads")
}

/// Puts `loads` into the Decoder type's dict as a `METH_O` method: CPython hands over the
/// one argument with no argument parsing (pyo3's general method wrapper costs about 200
/// instructions a call).
fn install_decoder_loads(py: Python<'_>) -> PyResult<()> {
    fastcall::add_method_o(
        &py.get_type::<Decoder>(),
        c"loads",
        c"loads($self, data, /)\n--\n\nRebuild the object graph of one record, as `loads` does with this decoder's options.",
        decoder_loads,
    )
}

/// Total length of the record whose header starts `prefix` (for framed streams).
#[pyfunction]
fn graph_record_len(py: Python<'_>, prefix: &[u8]) -> PyResult<u64> {
    let cfg = config::get(py)?;
    Header::parse(prefix)
        .map(|h| h.record_len())
        .map_err(|e| errors::read_error(py, cfg, &e))
}
