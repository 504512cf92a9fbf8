//! The iterative object builder: reader events -> Python objects, in a single native call.
//!
//! An explicit frame stack (never the C stack) holds the containers being filled. Mutable
//! containers exist before their children (so cycles through them work); tuples,
//! frozensets and the like are made after, and their memo slot is empty until then.

use std::ptr::addr_of_mut;
use std::sync::Arc;

use bytewright_graph::reader::{FloatRun, IntRun};
use bytewright_graph::{ClassDef, Event, Limits, Reader, ReaderBuffers};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use super::classes::AllowedClasses;
use super::config::Config;
use super::encoder::builtins::{base_code, base_type};
use super::errors::{locate, read_error, unpickling};
use super::infocache::{self, KIND_DICT, KIND_ENUM, KIND_TUPLE};
use super::kept::Kept;
use super::resolved::{self, Resolved};
use crate::cpython::{self, list_push};

mod made;

/// A new str from strict UTF-8 (NULL with an exception set on failure). ASCII text (the
/// common case) is checked with a word-wide scan and then copied with one memcpy into a
/// new compact string, skipping the general decoder; 0 and 1 bytes use CPython's
/// cached strings.
#[inline(always)]
pub(super) fn new_str(s: &[u8]) -> *mut ffi::PyObject {
    if s.len() >= super::RELEASE_GIL_FROM {
        return new_large_str(s);
    }
    if s.len() >= 2 && s.is_ascii() {
        // SAFETY: s is ASCII.
        return unsafe { cpython::new_ascii_str(s) };
    }
    new_str_general(s)
}

/// `new_str` for large text: ASCII is checked and copied with the GIL released, in one
/// hand-over (each costs a thousand instructions or more): the str is made first, as if
/// the text were ASCII, and dropped again when it is not.
#[inline(never)]
fn new_large_str(s: &[u8]) -> *mut ffi::PyObject {
    // SAFETY: the builder runs attached to the interpreter (it creates objects throughout).
    let py = unsafe { Python::assume_attached() };
    let n = s.len();
    // SAFETY: plain constructor of a str of n ASCII characters, filled below.
    let p = unsafe { ffi::PyUnicode_New(n as ffi::Py_ssize_t, 127) };
    if p.is_null() {
        return p;
    }
    // Addresses as integers: the closure runs without the GIL and must be Send. `s` is
    // the caller's input (immutable bytes, or a private copy), alive for the whole call.
    // SAFETY: p is a new compact ASCII str of n characters.
    let (src, dst) = (s.as_ptr() as usize, unsafe { ffi::PyUnicode_1BYTE_DATA(p) }
        as usize);
    let ascii = cpython::without_gil(py, move || {
        // SAFETY: src points at n live bytes (see above).
        let text = unsafe { std::slice::from_raw_parts(src as *const u8, n) };
        if !text.is_ascii() {
            return false;
        }
        crate::alloc::prefault(dst as *mut u8, n);
        // SAFETY: nobody else references the new str yet; src holds n bytes.
        unsafe { bytewright_graph::copy::copy(dst as *mut u8, src as *const u8, n) };
        true
    });
    if ascii {
        return p;
    }
    // SAFETY: p is the new str made above, referenced only here.
    unsafe { ffi::Py_DECREF(p) };
    new_str_general(s)
}

/// `new_str` for text that is not ASCII or is shorter than two bytes.
#[inline(never)]
fn new_str_general(s: &[u8]) -> *mut ffi::PyObject {
    if s.len() == 1 && s[0] < 0x80 {
        // SAFETY: plain constructor; CPython hands out its cached one-character string.
        return unsafe { ffi::PyUnicode_FromOrdinal(i32::from(s[0])) };
    }
    // SAFETY: s is a live slice; the decoder validates the UTF-8.
    unsafe { ffi::PyUnicode_DecodeUTF8(s.as_ptr().cast(), s.len() as isize, c"strict".as_ptr()) }
}

/// A new reference to the object of an atom from `Reader::atom_run` (NULL with an
/// exception set on failure), and what it is, for error messages. A `SharedStr` also takes
/// the next memo slot.
#[inline(always)]
fn new_atom<'py>(
    py: Python<'py>,
    event: Event<'_>,
    memo: &mut Vec<Option<Bound<'py, PyAny>>>,
) -> (*mut ffi::PyObject, &'static str) {
    // SAFETY: plain constructors returning a new reference or NULL; the singletons are
    // live and get a new reference of their own.
    unsafe {
        match event {
            Event::Int(v) => (ffi::PyLong_FromLongLong(v), "int"),
            Event::Float(f) => (ffi::PyFloat_FromDouble(f), "float"),
            Event::Str(s) => (new_str(s), "str"),
            Event::SharedStr(s) => {
                let p = new_str(s);
                if !p.is_null() {
                    remember(py, memo, p);
                }
                (p, "str")
            }
            Event::Bool(b) => {
                let p = if b { ffi::Py_True() } else { ffi::Py_False() };
                ffi::Py_INCREF(p);
                (p, "bool")
            }
            Event::None => {
                let p = ffi::Py_None();
                ffi::Py_INCREF(p);
                (p, "None")
            }
            Event::Ref(slot) => match memo.get(slot) {
                Some(Some(v)) => {
                    ffi::Py_INCREF(v.as_ptr());
                    (v.as_ptr(), "a reference")
                }
                _ => {
                    ffi::PyErr_SetString(
                        ffi::PyExc_ValueError,
                        c"reference to a memo slot before its value is complete".as_ptr(),
                    );
                    (std::ptr::null_mut(), "a reference")
                }
            },
            _ => {
                ffi::PyErr_SetString(
                    ffi::PyExc_ValueError,
                    c"unexpected event in a run of atoms".as_ptr(),
                );
                (std::ptr::null_mut(), "a value")
            }
        }
    }
}

/// Appends the floats of a `Reader::float_run` to a list being filled.
#[inline(never)]
fn fill_list_with_floats<const IN_PLACE: bool>(
    py: Python<'_>,
    list: *mut ffi::PyObject,
    filled: &mut isize,
    floats: FloatRun<'_>,
) -> PyResult<()> {
    // Inlined into the run's loop (a call per float would cost more than the float).
    floats.try_for_each(
        #[inline(always)]
        |value| {
            // SAFETY: plain constructor; a new reference or NULL with an exception set.
            let item = unsafe { ffi::PyFloat_FromDouble(value) };
            if item.is_null() {
                return Err(PyErr::fetch(py));
            }
            // SAFETY: the list is live and `item` a new reference.
            if unsafe { list_push::<IN_PLACE>(list, filled, item) }.is_err() {
                return Err(PyErr::fetch(py));
            }
            Ok(())
        },
    )
}

/// Appends the ints of a `Reader::int_run` to a list being filled.
#[inline(never)]
fn fill_list_with_ints<const IN_PLACE: bool>(
    py: Python<'_>,
    list: *mut ffi::PyObject,
    filled: &mut isize,
    ints: IntRun<'_>,
) -> PyResult<()> {
    // Inlined into each width's loop (a call per int would cost more than the int).
    ints.try_for_each(
        #[inline(always)]
        |value| {
            // SAFETY: plain constructor; a new reference or NULL with an exception set. The
            // ints of a run take at most 32 bits, so they fit a C long everywhere.
            let item = unsafe { ffi::PyLong_FromLong(value as std::os::raw::c_long) };
            if item.is_null() {
                return Err(PyErr::fetch(py));
            }
            // SAFETY: the list is live and `item` a new reference.
            if unsafe { list_push::<IN_PLACE>(list, filled, item) }.is_err() {
                return Err(PyErr::fetch(py));
            }
            Ok(())
        },
    )
}

/// Lists at least this long take runs of floats through `fill_list_with_floats`.
const FLOAT_RUN_FROM: isize = 16;

/// Gives the next memo slot to a shared atom of a run (kept out of line so the run's
/// loop stays small enough to inline).
#[cold]
#[inline(never)]
fn remember<'py>(
    py: Python<'py>,
    memo: &mut Vec<Option<Bound<'py, PyAny>>>,
    item: *mut ffi::PyObject,
) {
    // SAFETY: item is a live object (a new reference the caller still holds); the memo
    // takes a reference of its own.
    memo.push(Some(unsafe { Bound::from_borrowed_ptr(py, item) }));
}

/// What failed while a run was taken into a container, and its error.
type RunFailure = Option<(&'static str, PyErr)>;

/// Fills a list straight from the reader's runs of atoms (`room` items still to come):
/// `IN_PLACE` writes its slots directly ([`cpython::internals`] said so, checked once per
/// run rather than per item).
#[inline(always)]
fn fill_list<'py, const IN_PLACE: bool>(
    py: Python<'py>,
    reader: &mut Reader<'_>,
    memo: &mut Vec<Option<Bound<'py, PyAny>>>,
    list: *mut ffi::PyObject,
    filled_at: &mut isize,
    room: isize,
    failed: &mut RunFailure,
) {
    // The count in a local while the run lasts (written back once): the loop then keeps
    // it in a register rather than going through the frame.
    let mut count = *filled_at;
    let filled = &mut count;
    // The same sink at both call sites below, each its own closure (the float loop reads
    // `filled` and `failed` between runs).
    macro_rules! sink {
        () => {
            |event| {
                let (item, what) = new_atom(py, event, memo);
                if item.is_null() {
                    *failed = Some((what, PyErr::fetch(py)));
                    return false;
                }
                // SAFETY: the list is live and `item` a new reference.
                match unsafe { list_push::<IN_PLACE>(list, filled, item) } {
                    Ok(()) => true,
                    Err(()) => {
                        *failed = Some(("a list", PyErr::fetch(py)));
                        false
                    }
                }
            }
        };
    }
    if room < FLOAT_RUN_FROM {
        reader.atom_run(sink!());
        *filled_at = count;
        return;
    }
    // Long lists: runs of floats and same-width ints go through loops of their own, which
    // start each number without waiting to decode the previous tag.
    loop {
        let floats = reader.float_run();
        if !floats.is_empty() {
            let mut n = *filled;
            let r = fill_list_with_floats::<IN_PLACE>(py, list, &mut n, floats);
            *filled = n;
            if let Err(e) = r {
                *failed = Some(("float", e));
                break;
            }
        }
        let ints = reader.int_run();
        if !ints.is_empty() {
            let mut n = *filled;
            let r = fill_list_with_ints::<IN_PLACE>(py, list, &mut n, ints);
            *filled = n;
            if let Err(e) = r {
                *failed = Some(("int", e));
                break;
            }
        }
        let at = reader.offset();
        reader.atom_run_to_number(sink!());
        if failed.is_some() || reader.offset() == at {
            break;
        }
    }
    *filled_at = count;
}

/// [`fill_list`] through the public list API only (the portable path).
#[cold]
#[inline(never)]
fn fill_list_portable<'py>(
    py: Python<'py>,
    reader: &mut Reader<'_>,
    memo: &mut Vec<Option<Bound<'py, PyAny>>>,
    list: *mut ffi::PyObject,
    filled: &mut isize,
    room: isize,
    failed: &mut RunFailure,
) {
    fill_list::<false>(py, reader, memo, list, filled, room, failed);
}

/// Whether no field name of `obj`'s class is a data descriptor (found without running
/// code; `false` when that cannot be told). Kept in `r` while the class has no attribute
/// of a field's name and its version tag stays the same.
#[inline]
pub(super) fn plain_fields(obj: &Bound<'_, PyAny>, r: &Resolved) -> bool {
    // SAFETY: obj is a live instance.
    let ty = unsafe { ffi::Py_TYPE(obj.as_ptr()) };
    let known = r.no_class_attrs.get();
    // SAFETY: ty is the live type of a live instance; reading its tag runs no code.
    if known != 0 && unsafe { cpython::type_version(ty) } == known {
        return true;
    }
    plain_fields_looked_up(ty, r)
}

#[cold]
#[inline(never)]
pub(super) fn plain_fields_looked_up(ty: *mut ffi::PyTypeObject, r: &Resolved) -> bool {
    // SAFETY: ty is a live type and each name a live exact str; the lookups run no code.
    unsafe {
        if r.names
            .iter()
            .all(|name| cpython::lacks_attribute(ty, name.as_ptr()) == Some(true))
        {
            // Read after the lookups, which give the type a tag if it had none.
            r.no_class_attrs.set(cpython::type_version(ty));
            return true;
        }
        r.no_class_attrs.set(0);
        r.names
            .iter()
            .all(|name| cpython::has_data_descriptor(ty, name.as_ptr()) == Some(false))
    }
}

enum Collect {
    Range,
    Slice,
    Std(u64),
    Enum(usize),
}

enum Frame<'py> {
    List {
        obj: Bound<'py, PyAny>,
        filled: isize,
        /// How many items the record declares.
        len: isize,
    },
    Tuple {
        obj: Bound<'py, PyAny>,
        filled: isize,
        slot: Option<usize>,
    },
    Dict {
        obj: Bound<'py, PyAny>,
        key: Option<Bound<'py, PyAny>>,
    },
    /// Dict subclasses (OrderedDict, Counter, defaultdict), filled through `__setitem__`.
    Mapping {
        obj: Bound<'py, PyAny>,
        key: Option<Bound<'py, PyAny>>,
    },
    Set {
        obj: Bound<'py, PyAny>,
    },
    FrozenSet {
        obj: Bound<'py, PyAny>,
        slot: Option<usize>,
    },
    Deque {
        obj: Bound<'py, PyAny>,
    },
    Collect {
        what: Collect,
        values: Vec<Bound<'py, PyAny>>,
        slot: Option<usize>,
    },
    Object {
        class: usize,
        obj: Option<Bound<'py, PyAny>>,
        /// The instance `__dict__` of a dict-based class, written directly (never
        /// through descriptors), as pickle does.
        dict: Option<Bound<'py, PyAny>>,
        values: Vec<Bound<'py, PyAny>>,
        filled: usize,
        slot: Option<usize>,
    },
    Replace {
        target: usize,
    },
    /// The first value of an exception (its arguments) or of an instance of an immutable
    /// builtin subclass (its base value), from which it is made; the frame below is its
    /// `Made`.
    Seed {
        value: Option<Bound<'py, PyAny>>,
    },
    /// An exception or an instance of a builtin subclass: its items (mutable bases), a
    /// defaultdict's factory if it is a value of its own, then its state.
    Made {
        made: Made<'py>,
        /// `None` until its `Seed` is complete.
        obj: Option<Bound<'py, PyAny>>,
        slot: Option<usize>,
        /// Item values still to come (two per dict entry).
        items: usize,
        /// The state; while items come, a dict entry's key waiting for its value.
        state: Option<Bound<'py, PyAny>>,
        /// A defaultdict's factory (when `factory_due`, the value after the items); the
        /// arguments an exception of yours was made from.
        extra: Option<Bound<'py, PyAny>>,
        factory_due: bool,
    },
}

/// What a `Made` frame makes.
enum Made<'py> {
    /// A builtin exception of this class.
    Exception(Bound<'py, PyType>),
    /// An instance of the resolved class `class`, whose builtin base has the code `base`
    /// (and, for a defaultdict, the factory code `factory`).
    Derived { class: usize, base: u8, factory: u8 },
    /// A defaultdict whose factory is a value of its own (it has no state).
    DefaultDict,
}

const RECORD_OBJECT: u8 = 0;
const RECORD_ENUM: u8 = 1;
const RECORD_DERIVED: u8 = 2;

/// A `__setstate__` call (or an exception's `__init__` and state) held back until the
/// whole record has been read: the class's `ClassInfo`, the instance, its fields (or
/// `(args, state)` for an exception) and the version they were written at, and the
/// `ClassInfo` method that gives it to the instance.
type Restore<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    u64,
    &'static str,
);

/// What a builder allocates, kept per thread between calls so that loading a small
/// record allocates nothing but its result. Always empty while stored.
pub(super) struct Scratch {
    reader: ReaderBuffers,
    frames: Vec<Frame<'static>>,
    memo: Vec<Option<Bound<'static, PyAny>>>,
}

impl Scratch {
    /// The reader storage, for a reader of its own (the check of a large record, which
    /// runs without the GIL: only these buffers, which hold no Python object, go there).
    pub(super) fn take_reader(&mut self) -> ReaderBuffers {
        std::mem::take(&mut self.reader)
    }

    /// Gives back what [`Scratch::take_reader`] took.
    pub(super) fn put_reader(&mut self, reader: ReaderBuffers) {
        // What it replaces is what `take_reader` left, which holds no storage.
        std::mem::forget(std::mem::replace(&mut self.reader, reader));
    }
}

/// This thread's kept storage for one call (`None` for the first call and a nested one),
/// handed to [`Builder::with_scratch`] or back to [`put_scratch`].
pub(super) fn take_scratch() -> Option<Scratch> {
    SCRATCH.with(std::cell::Cell::take)
}

/// Keeps storage from [`take_scratch`] for the next call.
#[cold]
pub(super) fn put_scratch(scratch: Option<Scratch>) {
    // At thread exit the slot may already be gone; then the storage is simply freed.
    let _ = SCRATCH.try_with(|slot| slot.set(scratch));
}

/// Storage beyond this (after an unusually large record) is freed rather than kept.
const SCRATCH_KEEP_BYTES: usize = 64 * 1024;

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
    /// The `resolved` storage of a builder, kept apart: only records with classes use it.
    static RESOLVED: std::cell::Cell<Vec<Option<Arc<Resolved>>>> =
        const { std::cell::Cell::new(Vec::new()) };
}

pub struct Builder<'py, 'a> {
    py: Python<'py>,
    cfg: &'static Config,
    /// Never dropped: `recycle` takes its storage, leaving nothing to free.
    reader: std::mem::ManuallyDrop<Reader<'a>>,
    classes: AllowedClasses<'py>,
    memo: Vec<Option<Bound<'py, PyAny>>>,
    pending_share: bool,
    frames: Vec<Frame<'py>>,
    /// Per class index of the record: its class, once a record of it was met. Never
    /// dropped: `recycle` takes it whenever it holds storage.
    resolved: std::mem::ManuallyDrop<Vec<Option<Arc<Resolved>>>>,
    empty_tuple: Bound<'py, PyTuple>,
    /// Lists are filled in place ([`cpython::internals`], read once per call).
    in_place: bool,
    /// `__setstate__` calls, made in order once the record has been read. Dropped by
    /// `recycle`, only when it holds storage.
    restores: std::mem::ManuallyDrop<Vec<Restore<'py>>>,
    /// A `Decoder`'s classes, resolved when it was made.
    kept: Option<&'a Kept>,
}

impl Drop for Builder<'_, '_> {
    fn drop(&mut self) {
        self.recycle();
    }
}

impl<'py, 'a> Builder<'py, 'a> {
    #[inline(always)]
    pub fn new(
        py: Python<'py>,
        cfg: &'static Config,
        body: &'a [u8],
        limits: Limits,
        classes: AllowedClasses<'py>,
    ) -> Self {
        // A nested call (a migration that loads) finds the slot empty and allocates anew.
        Self::with_scratch(py, cfg, body, limits, classes, take_scratch())
    }

    /// [`Builder::new`] in storage from [`take_scratch`].
    #[inline(always)]
    pub(super) fn with_scratch(
        py: Python<'py>,
        cfg: &'static Config,
        body: &'a [u8],
        limits: Limits,
        classes: AllowedClasses<'py>,
        scratch: Option<Scratch>,
    ) -> Self {
        let (reader, frames, memo) = match scratch {
            Some(s) => {
                let Scratch {
                    reader,
                    frames,
                    memo,
                } = s;
                // SAFETY: both vectors are empty (cleared before they were stored), and
                // lifetimes do not change a type's layout: only capacity is carried over.
                let (frames, memo) = unsafe {
                    (
                        std::mem::transmute::<Vec<Frame<'static>>, Vec<Frame<'py>>>(frames),
                        std::mem::transmute::<
                            Vec<Option<Bound<'static, PyAny>>>,
                            Vec<Option<Bound<'py, PyAny>>>,
                        >(memo),
                    )
                };
                (reader, frames, memo)
            }
            None => (ReaderBuffers::default(), Vec::with_capacity(8), Vec::new()),
        };
        Self {
            py,
            cfg,
            reader: std::mem::ManuallyDrop::new(Reader::with_buffers(body, limits, reader)),
            classes,
            memo,
            pending_share: false,
            frames,
            resolved: std::mem::ManuallyDrop::new(Vec::new()),
            empty_tuple: PyTuple::empty(py),
            in_place: cpython::internals(),
            restores: std::mem::ManuallyDrop::new(Vec::new()),
            kept: None,
        }
    }

    /// Takes a definition's class from `kept` when it is one of its (see `kept`).
    #[inline(always)]
    pub fn with_kept(mut self, kept: &'a Kept) -> Self {
        self.kept = Some(kept);
        self
    }

    /// The class of the OBJECT record that starts `body`, resolved as a record's is: what
    /// a `Decoder` keeps (see `kept`).
    pub fn resolve_first(mut self) -> PyResult<Arc<Resolved>> {
        match self.reader.next_event() {
            Ok(Some(Event::Object { class, .. })) => {
                self.resolve_any(class)?;
                match self.resolved.get(class) {
                    Some(Some(r)) => Ok(Arc::clone(r)),
                    _ => unreachable!(),
                }
            }
            Ok(_) => Err(self.fail("not an object record".into(), None)),
            Err(e) => Err(read_error(self.py, self.cfg, &e)),
        }
    }

    /// Empties the working storage (releasing every reference it holds) and keeps it for
    /// the next call on this thread, unless it grew large.
    fn recycle(&mut self) {
        let mut frames = std::mem::take(&mut self.frames);
        let mut memo = std::mem::take(&mut self.memo);
        frames.clear();
        memo.clear();
        if self.restores.capacity() > 0 {
            // SAFETY: `recycle` runs once, from `drop`; the field is not used after.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.restores) };
        }
        if self.resolved.capacity() > 0 {
            let mut resolved = std::mem::take(&mut *self.resolved);
            resolved.clear();
            if resolved.capacity() <= 64 {
                let _ = RESOLVED.try_with(|slot| slot.set(resolved));
            }
        }
        let reader = self.reader.take_buffers();
        let held = reader.held_bytes()
            + frames.capacity() * std::mem::size_of::<Frame<'py>>()
            + memo.capacity() * std::mem::size_of::<Option<Bound<'py, PyAny>>>();
        if held > SCRATCH_KEEP_BYTES {
            return;
        }
        // SAFETY: both vectors were just cleared; only their capacity is kept (see `new`).
        let (frames, memo) = unsafe {
            (
                std::mem::transmute::<Vec<Frame<'py>>, Vec<Frame<'static>>>(frames),
                std::mem::transmute::<
                    Vec<Option<Bound<'py, PyAny>>>,
                    Vec<Option<Bound<'static, PyAny>>>,
                >(memo),
            )
        };
        let scratch = Scratch {
            reader,
            frames,
            memo,
        };
        // At thread exit the slot may already be gone; then the storage is simply freed.
        let _ = SCRATCH.try_with(|slot| slot.set(Some(scratch)));
    }

    fn fail(&self, message: String, cause: Option<PyErr>) -> PyErr {
        if let Some(cause) = &cause {
            // Our own helpers already raise the right class with a full message, and
            // KeyboardInterrupt or SystemExit must never be disguised as bad input.
            if cause.is_instance(self.py, self.cfg.unpickling_error.bind(self.py)) {
                locate(self.py, cause, self.reader.offset());
                return cause.clone_ref(self.py);
            }
            if !cause.is_instance_of::<pyo3::exceptions::PyException>(self.py) {
                return cause.clone_ref(self.py);
            }
        }
        let err = unpickling(
            self.py,
            self.cfg,
            format!("{message} (at byte {})", self.reader.offset()),
            cause,
        );
        locate(self.py, &err, self.reader.offset());
        err
    }

    fn wrap<T>(&self, what: &str, r: PyResult<T>) -> PyResult<T> {
        r.map_err(|e| {
            let text = e.value(self.py).to_string();
            self.fail(format!("cannot rebuild {what}: {text}"), Some(e))
        })
    }

    /// Takes ownership of a new reference from the C API (NULL: the pending exception).
    fn owned(&self, what: &str, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: ptr is a new reference or NULL with an exception set.
        let r = unsafe { Bound::from_owned_ptr_or_err(self.py, ptr) };
        self.wrap(what, r)
    }

    #[inline]
    fn share_now(&mut self, value: &Bound<'py, PyAny>) {
        if self.pending_share {
            self.pending_share = false;
            self.memo.push(Some(value.clone()));
        }
    }

    #[inline]
    fn share_later(&mut self) -> Option<usize> {
        if self.pending_share {
            self.pending_share = false;
            self.memo.push(None);
            Some(self.memo.len() - 1)
        } else {
            None
        }
    }

    fn fill(&mut self, slot: Option<usize>, value: &Bound<'py, PyAny>) {
        if let Some(slot) = slot {
            self.memo[slot] = Some(value.clone());
        }
    }

    pub fn build(mut self) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let mut root = None;
        loop {
            if matches!(
                self.frames.last(),
                Some(
                    Frame::List { .. }
                        | Frame::Tuple { .. }
                        | Frame::Dict { .. }
                        | Frame::Object { obj: Some(_), .. }
                )
            ) && !self.reader.no_run_next()
            {
                self.atom_run()?;
            }
            let event = match self.reader.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(e) => return Err(read_error(py, self.cfg, &e)),
            };
            let value = match event {
                Event::Share => {
                    self.pending_share = true;
                    continue;
                }
                // A list or a dict (most containers) is its own value once complete: its
                // frame is taken apart where it lies, not moved out whole.
                Event::End => match self.frames.last_mut() {
                    Some(Frame::List { obj, .. }) => {
                        // SAFETY: `obj` is moved out of the last frame, which is then
                        // forgotten (a list frame owns nothing else).
                        unsafe {
                            let obj = std::ptr::read(obj);
                            self.frames.set_len(self.frames.len() - 1);
                            obj
                        }
                    }
                    Some(Frame::Dict { obj, key }) => {
                        // SAFETY: as for a list; a dict frame also owns its pending key
                        // (none in a well-formed record), dropped here.
                        unsafe {
                            let (obj, key) = (std::ptr::read(obj), std::ptr::read(key));
                            self.frames.set_len(self.frames.len() - 1);
                            drop(key);
                            obj
                        }
                    }
                    Some(_) => self.finish_last()?,
                    None => return Err(self.fail("unbalanced end of container".into(), None)),
                },
                Event::Int(v) => {
                    // SAFETY: plain constructor; returns a new reference or NULL.
                    let v = self.owned("int", unsafe { ffi::PyLong_FromLongLong(v) })?;
                    self.share_now(&v);
                    v
                }
                Event::SharedStr(s) => {
                    // Only atom runs give this; taken here all the same.
                    let v = self.str(s)?;
                    self.memo.push(Some(v.clone()));
                    v
                }
                Event::Str(s) => {
                    let v = self.str(s)?;
                    self.share_now(&v);
                    v
                }
                Event::List(n) => {
                    // An empty list that grows as its items are delivered, so it is a valid
                    // list at every moment.
                    let obj = self.owned("list", cpython::new_list_to_fill(n, self.in_place))?;
                    self.share_now(&obj);
                    if n > 0 {
                        self.frames.push(Frame::List {
                            obj,
                            filled: 0,
                            len: n as isize,
                        });
                        continue;
                    }
                    obj
                }
                Event::Dict(n) => {
                    // n is bounded by the body length.
                    let obj = self.owned("dict", cpython::new_dict(n))?;
                    self.share_now(&obj);
                    if n > 0 {
                        self.frames.push(Frame::Dict { obj, key: None });
                        continue;
                    }
                    obj
                }
                Event::Tuple(n) => {
                    let slot = self.share_later();
                    // SAFETY: a fresh tuple of n NULL slots, never exposed before it is full.
                    let obj = self.owned("tuple", unsafe { ffi::PyTuple_New(n as isize) })?;
                    if n > 0 {
                        self.frames.push(Frame::Tuple {
                            obj,
                            filled: 0,
                            slot,
                        });
                        continue;
                    }
                    self.fill(slot, &obj);
                    obj
                }
                Event::Float(f) => {
                    // SAFETY: plain constructor.
                    let v = self.owned("float", unsafe { ffi::PyFloat_FromDouble(f) })?;
                    self.share_now(&v);
                    v
                }
                Event::None | Event::Bool(_) | Event::Ellipsis => {
                    // SAFETY: the singletons are immortal for our purposes; we take a new reference.
                    let p = unsafe {
                        match event {
                            Event::None => ffi::Py_None(),
                            Event::Bool(true) => ffi::Py_True(),
                            Event::Bool(false) => ffi::Py_False(),
                            _ => ffi::Py_Ellipsis(),
                        }
                    };
                    // SAFETY: p is a live singleton.
                    let v = unsafe { Bound::from_borrowed_ptr(py, p) };
                    self.share_now(&v);
                    v
                }
                Event::BigInt(le) => {
                    let v = self.owned("int", cpython::int_from_le_bytes(py, le))?;
                    self.share_now(&v);
                    v
                }
                Event::Complex(re, im) => {
                    // SAFETY: plain constructor.
                    let v = self.owned("complex", unsafe { ffi::PyComplex_FromDoubles(re, im) })?;
                    self.share_now(&v);
                    v
                }
                Event::StrSurrogates(s) => {
                    // SAFETY: s is a live slice.
                    let p = unsafe {
                        ffi::PyUnicode_DecodeUTF8(
                            s.as_ptr().cast(),
                            s.len() as isize,
                            c"surrogatepass".as_ptr(),
                        )
                    };
                    let v = self.owned("str", p)?;
                    self.share_now(&v);
                    v
                }
                Event::Bytes(s) => {
                    let v = self.owned("bytes", super::new_bytes(py, s))?;
                    self.share_now(&v);
                    v
                }
                Event::ByteArray(s) => {
                    // SAFETY: s is a live slice.
                    let p = unsafe {
                        ffi::PyByteArray_FromStringAndSize(s.as_ptr().cast(), s.len() as isize)
                    };
                    let v = self.owned("bytearray", p)?;
                    self.share_now(&v);
                    v
                }
                Event::Set(n) => {
                    // SAFETY: plain constructor.
                    let obj = self.owned("set", unsafe { ffi::PySet_New(std::ptr::null_mut()) })?;
                    self.share_now(&obj);
                    if n > 0 {
                        self.frames.push(Frame::Set { obj });
                        continue;
                    }
                    obj
                }
                Event::FrozenSet(n) => {
                    let slot = self.share_later();
                    // SAFETY: plain constructor; filled with PySet_Add while we hold the only reference.
                    let obj = self.owned("frozenset", unsafe {
                        ffi::PyFrozenSet_New(std::ptr::null_mut())
                    })?;
                    if n > 0 {
                        self.frames.push(Frame::FrozenSet { obj, slot });
                        continue;
                    }
                    self.fill(slot, &obj);
                    obj
                }
                Event::OrderedDict(n) | Event::Counter(n) => {
                    let cls = if matches!(event, Event::OrderedDict(_)) {
                        &self.cfg.ordered_dict
                    } else {
                        &self.cfg.counter
                    };
                    let obj = self.wrap("mapping", cls.bind(py).call0())?;
                    self.share_now(&obj);
                    if n > 0 {
                        self.frames.push(Frame::Mapping { obj, key: None });
                        continue;
                    }
                    obj
                }
                Event::DefaultDict { factory, len } => {
                    if factory == bytewright_graph::tags::FACTORY_VALUE {
                        self.start_default_dict(len)?;
                        continue;
                    }
                    let Ok(factory) = self.cfg.factories.bind(py).get_item(usize::from(factory))
                    else {
                        return Err(
                            self.fail(format!("unknown defaultdict factory code {factory}"), None)
                        );
                    };
                    let obj = self.wrap(
                        "defaultdict",
                        self.cfg.default_dict.bind(py).call1((factory,)),
                    )?;
                    self.share_now(&obj);
                    if len > 0 {
                        self.frames.push(Frame::Mapping { obj, key: None });
                        continue;
                    }
                    obj
                }
                Event::Deque { maxlen, len } => {
                    let Some(maxlen) =
                        maxlen.map_or(Some(None), |m| isize::try_from(m).ok().map(Some))
                    else {
                        return Err(self.fail("deque maxlen out of range".into(), None));
                    };
                    let obj = self.wrap(
                        "deque",
                        self.cfg
                            .deque
                            .bind(py)
                            .call1((self.empty_tuple.clone(), maxlen)),
                    )?;
                    self.share_now(&obj);
                    if len > 0 {
                        self.frames.push(Frame::Deque { obj });
                        continue;
                    }
                    obj
                }
                Event::Range | Event::Slice | Event::Std(_) => {
                    let slot = self.share_later();
                    let what = match event {
                        Event::Range => Collect::Range,
                        Event::Slice => Collect::Slice,
                        Event::Std(kind) => Collect::Std(kind),
                        _ => unreachable!(),
                    };
                    self.frames.push(Frame::Collect {
                        what,
                        values: Vec::with_capacity(3),
                        slot,
                    });
                    continue;
                }
                Event::Enum { class } => {
                    let slot = self.share_later();
                    self.resolve(class, true)?;
                    self.frames.push(Frame::Collect {
                        what: Collect::Enum(class),
                        values: Vec::with_capacity(1),
                        slot,
                    });
                    continue;
                }
                Event::Object { class, len } => match self.object(class, len)? {
                    Some(obj) => obj,
                    None => continue,
                },
                Event::Ref(slot) => match self.memo.get(slot) {
                    Some(Some(v)) => v.clone(),
                    _ => {
                        return Err(self.fail(
                            format!("reference to memo slot {slot} before its value is complete"),
                            None,
                        ))
                    }
                },
                Event::Replace(target) => {
                    self.frames.push(Frame::Replace { target });
                    continue;
                }
                Event::Class { class } => {
                    let v = self.class_value(class)?;
                    self.share_now(&v);
                    v
                }
                Event::Builtin(name) => {
                    let v = self.builtin(name)?;
                    self.share_now(&v);
                    v
                }
                Event::Exception(name) => {
                    self.start_exception(name)?;
                    continue;
                }
                Event::Derived {
                    class,
                    base,
                    factory,
                    len,
                } => {
                    self.start_derived(class, base, factory, len)?;
                    continue;
                }
                Event::DerivedDeque { class, maxlen, len } => {
                    self.start_derived_deque(class, maxlen, len)?;
                    continue;
                }
            };
            if let Some(v) = self.deliver(value)? {
                root = Some(v);
            }
        }
        let root = root.ok_or_else(|| self.fail("the record holds no value".into(), None))?;
        if !self.restores.is_empty() {
            self.run_restores()?;
        }
        Ok(root)
    }

    /// The `__setstate__` calls held back: the whole record has been read and checked, so
    /// now the classes' own code runs.
    #[cold]
    #[inline(never)]
    fn run_restores(&mut self) -> PyResult<()> {
        for (info, obj, state, version, method) in std::mem::take(&mut *self.restores) {
            let r = info.call_method1(method, (&obj, state, version));
            let what = if method == "restore" {
                "an instance (__setstate__)"
            } else {
                "an exception (its __init__ and __setstate__)"
            };
            self.wrap(what, r)?;
        }
        Ok(())
    }

    /// A str from strict UTF-8.
    #[inline(always)]
    fn str(&self, s: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        self.owned("str", new_str(s))
    }

    /// Fills the innermost list or tuple straight from a run of atoms (see
    /// `Reader::atom_run`), skipping the per-event dispatch.
    fn atom_run(&mut self) -> PyResult<()> {
        let py = self.py;
        let mut failed: Option<(&'static str, PyErr)> = None;
        let Builder {
            reader,
            frames,
            memo,
            in_place,
            resolved,
            cfg,
            ..
        } = self;
        match frames.last_mut() {
            Some(Frame::List { obj, filled, len }) => {
                let (list, room) = (obj.as_ptr(), *len - *filled);
                if *in_place {
                    fill_list::<true>(py, reader, memo, list, filled, room, &mut failed);
                } else {
                    fill_list_portable(py, reader, memo, list, filled, room, &mut failed);
                }
            }
            Some(Frame::Tuple { obj, filled, .. }) => {
                let tuple = obj.as_ptr();
                reader.atom_run(|event| {
                    let (item, what) = new_atom(py, event, memo);
                    if item.is_null() {
                        failed = Some((what, PyErr::fetch(py)));
                        return false;
                    }
                    // SAFETY: as in `deliver`: the tuple is fresh and private, and the
                    // index is checked against its size.
                    unsafe {
                        if *filled < ffi::PyTuple_GET_SIZE(tuple) {
                            ffi::PyTuple_SET_ITEM(tuple, *filled, item);
                            *filled += 1;
                        } else {
                            ffi::Py_DECREF(item);
                        }
                    }
                    true
                });
            }
            Some(Frame::Dict { obj, key: key_at }) => {
                let dict = obj.as_ptr();
                // The pending key in a local while the run lasts (written back once).
                let mut key = key_at.take();
                reader.atom_run(|event| {
                    let (item, what) = new_atom(py, event, memo);
                    if item.is_null() {
                        failed = Some((what, PyErr::fetch(py)));
                        return false;
                    }
                    // SAFETY: item is a new reference, owned by the Bound from here on.
                    let item = unsafe { Bound::from_owned_ptr(py, item) };
                    match key.take() {
                        None => key = Some(item),
                        Some(k) => {
                            // SAFETY: a live dict, key and value; PyDict_SetItem takes its
                            // own references.
                            let rc =
                                unsafe { ffi::PyDict_SetItem(dict, k.as_ptr(), item.as_ptr()) };
                            if rc < 0 {
                                failed = Some(("a dict", PyErr::fetch(py)));
                                return false;
                            }
                        }
                    }
                    true
                });
                *key_at = key;
            }
            // The fields of a fast record (see `deliver`), set as they are read.
            Some(Frame::Object {
                class,
                obj: Some(obj),
                dict,
                filled,
                ..
            }) => {
                let Some(Some(r)) = resolved.get(*class) else {
                    return Ok(());
                };
                if !r.fast {
                    return Ok(());
                }
                let (obj, dict) = (obj.as_ptr(), dict.as_ref().map(|d| d.as_ptr()));
                let names = &r.names;
                let mut bad_field = None;
                reader.atom_run(|event| {
                    let Some(name) = names.get(*filled) else {
                        bad_field = Some(("too many field values".to_string(), None));
                        return false;
                    };
                    let (item, what) = new_atom(py, event, memo);
                    if item.is_null() {
                        failed = Some((what, PyErr::fetch(py)));
                        return false;
                    }
                    // SAFETY: item is a new reference, owned by the Bound from here on.
                    let item = unsafe { Bound::from_owned_ptr(py, item) };
                    // SAFETY: as in `deliver`: a live instance (or its dict), a str name.
                    let rc = unsafe {
                        match dict {
                            Some(d) => ffi::PyDict_SetItem(d, name.as_ptr(), item.as_ptr()),
                            None => ffi::PyObject_GenericSetAttr(obj, name.as_ptr(), item.as_ptr()),
                        }
                    };
                    if rc < 0 {
                        let e = PyErr::fetch(py);
                        let what = format!(
                            "cannot set field '{}' of class '{}': {}",
                            name.bind(py),
                            r.name,
                            e.value(py)
                        );
                        bad_field = Some((what, Some(e)));
                        return false;
                    }
                    *filled += 1;
                    true
                });
                if let Some((what, cause)) = bad_field {
                    return Err(unpickling(py, cfg, what, cause));
                }
            }
            _ => {}
        }
        match failed {
            Some((what, e)) => self.wrap(what, Err(e)),
            None => Ok(()),
        }
    }

    #[inline]
    fn resolve(&mut self, class: usize, want_enum: bool) -> PyResult<()> {
        self.resolve_any(class)?;
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        let want = if want_enum {
            RECORD_ENUM
        } else {
            RECORD_OBJECT
        };
        if r.record != want {
            return Err(self.wrong_record(class, want_enum));
        }
        Ok(())
    }

    #[cold]
    fn wrong_record(&self, class: usize, want_enum: bool) -> PyErr {
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        if let (false, Some(base)) = (want_enum, &r.builtin_base) {
            return self.fail(
                format!(
                    "record of class '{}' cannot be rebuilt from an OBJECT record: the class subclasses the built-in type '{base}'",
                    r.name
                ),
                None,
            );
        }
        let what = if want_enum {
            "an enum member"
        } else {
            "an object"
        };
        self.fail(
            format!(
                "record of class '{}' is {what}, but the class is not",
                r.name
            ),
            None,
        )
    }

    /// Resolves the class defined with index `class` against `classes=`, once.
    #[inline]
    fn resolve_any(&mut self, class: usize) -> PyResult<()> {
        if self.resolved.get(class).is_some_and(Option::is_some) {
            return Ok(());
        }
        self.resolve_new(class)
    }

    #[cold]
    #[inline(never)]
    fn resolve_new(&mut self, class: usize) -> PyResult<()> {
        if self.resolved.len() <= class {
            if self.resolved.capacity() == 0 {
                // A nested call finds the slot empty and allocates.
                *self.resolved = RESOLVED.try_with(std::cell::Cell::take).unwrap_or_default();
            }
            self.resolved.resize_with(class + 1, || None);
        }
        if self.resolved[class].is_none() {
            let def = self
                .reader
                .class(class)
                .ok_or_else(|| self.fail(format!("undefined class #{class}"), None))?;
            let encoded = def.encoded;
            if let Some(r) = self.kept.and_then(|k| k.get(encoded)) {
                self.resolved[class] = Some(Arc::clone(r));
                return Ok(());
            }
            let keyable = resolved::keyable(self.classes.given());
            let kept = if keyable {
                resolved::get(self.classes.given(), encoded)
            } else {
                None
            };
            let r = match kept {
                Some(r) => r,
                None => {
                    let r = Arc::new(self.resolve_def(&def)?);
                    if keyable {
                        resolved::put(self.classes.given(), encoded, &r);
                    }
                    r
                }
            };
            self.resolved[class] = Some(r);
        }
        Ok(())
    }

    fn resolve_def(&mut self, def: &ClassDef<'_>) -> PyResult<Resolved> {
        let py = self.py;
        let name = String::from_utf8_lossy(def.name).into_owned();
        let found = self.classes.get(self.cfg, &name)?;
        let cls = match found {
            Some(cls) => cls,
            None => {
                let short = name.rsplit('.').next().unwrap_or(&name);
                return Err(self.fail(
                    format!(
                        "record of class '{name}' is not allowed: pass classes=[{short}] (or classes={{'{name}': {short}}}) to allow it"
                    ),
                    None,
                ));
            }
        };
        let described = match infocache::describe(self.cfg, &cls) {
            Ok(d) => d,
            Err(e) => return self.wrap(&format!("class '{name}'"), Err(e)),
        };
        let infocache::Described {
            info,
            kind,
            version,
            declared,
            builtin_base,
            restores: setstate,
            ..
        } = described;
        let base_code = if builtin_base.is_some() {
            let code = base_code(self.cfg, &info);
            self.wrap(&format!("class '{name}'"), code)?
        } else {
            0
        };
        // Reuse the class's own (interned) field names when the record's match them.
        let same_fields = declared.as_ref().is_none_or(|declared| {
            declared.len() == def.field_count
                && declared
                    .iter()
                    .zip(def.fields())
                    .all(|(a, b)| a.to_str().is_ok_and(|a| a.as_bytes() == b))
        });
        let names: Vec<Bound<'py, PyString>> = match (&declared, same_fields) {
            (Some(declared), true) => declared.clone(),
            _ => def
                .fields()
                .map(|f| PyString::intern(py, &String::from_utf8_lossy(f)))
                .collect(),
        };
        let fast = def.version == version
            && same_fields
            && kind != KIND_TUPLE
            && kind != KIND_ENUM
            && !setstate;
        Ok(Resolved {
            info: info.unbind(),
            cls: cls.unbind(),
            kind,
            name,
            version: def.version,
            names: names.into_iter().map(Bound::unbind).collect(),
            fast,
            no_class_attrs: resolved::TypeTag::new(0),
            setstate: setstate && kind != KIND_TUPLE && kind != KIND_ENUM,
            record: if kind == KIND_ENUM {
                RECORD_ENUM
            } else if builtin_base.is_some() {
                RECORD_DERIVED
            } else {
                RECORD_OBJECT
            },
            builtin_base,
            base_code,
        })
    }

    /// Starts an object record; `Some` when it is complete already (no fields).
    fn object(&mut self, class: usize, len: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.resolve(class, false)?;
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        let (obj, slot) = if r.kind == KIND_TUPLE {
            (None, self.share_later())
        } else {
            // SAFETY: object.__new__(cls): the base allocator of a Python-defined class
            // whose bases are all Python classes (checked by describe); no user code runs.
            let p = unsafe {
                let base = addr_of_mut!(ffi::PyBaseObject_Type);
                match (*base).tp_new {
                    Some(tp_new) => tp_new(
                        r.cls.as_ptr().cast(),
                        self.empty_tuple.as_ptr(),
                        std::ptr::null_mut(),
                    ),
                    None => std::ptr::null_mut(),
                }
            };
            let obj = if p.is_null() {
                // The message is built only on failure: this runs once per record.
                let what = format!("an instance of '{}'", r.name);
                self.owned(&what, p)?
            } else {
                // SAFETY: p is a new reference.
                unsafe { Bound::from_owned_ptr(self.py, p) }
            };
            self.share_now(&obj);
            (Some(obj), None)
        };
        if len == 0 {
            return self.finish_object(class, obj, Vec::new(), slot).map(Some);
        }
        let resolved = self.resolved.get(class).and_then(Option::as_ref);
        let fast = resolved.is_some_and(|r| r.fast) && obj.is_some();
        let dict = match (&obj, resolved) {
            // With no data descriptor of a field's name on the class, setting the attribute
            // is the same plain store into its instance dict, and does not make the dict.
            (Some(o), Some(r)) if fast && r.kind == KIND_DICT && !plain_fields(o, r) => {
                // SAFETY: a live instance of a class with an instance dict; returns a new
                // reference or NULL with an exception set.
                let d = unsafe { ffi::PyObject_GenericGetDict(o.as_ptr(), std::ptr::null_mut()) };
                Some(self.owned("an instance __dict__", d)?)
            }
            _ => None,
        };
        let values = if fast {
            Vec::new()
        } else {
            Vec::with_capacity(len)
        };
        self.frames.push(Frame::Object {
            class,
            obj,
            dict,
            values,
            filled: 0,
            slot,
        });
        Ok(None)
    }

    fn finish_object(
        &mut self,
        class: usize,
        obj: Option<Bound<'py, PyAny>>,
        values: Vec<Bound<'py, PyAny>>,
        slot: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let Some(r) = &self.resolved[class] else {
            unreachable!()
        };
        if r.fast {
            if let Some(obj) = obj {
                // Its fields were set as they arrived (see `deliver`).
                return Ok(obj);
            }
        }
        let state = PyDict::new(py);
        for (name, value) in r.names.iter().zip(values) {
            state.set_item(name.bind(py), value)?;
        }
        if let (true, Some(obj)) = (r.setstate, &obj) {
            // Its slot was filled when the instance was made (not a tuple-like class).
            let obj = obj.clone().into_any();
            self.restores.push((
                r.info.bind(py).clone(),
                obj.clone(),
                state.into_any(),
                r.version,
                "restore",
            ));
            return Ok(obj);
        }
        let target = obj
            .map(Bound::into_any)
            .unwrap_or_else(|| py.None().into_bound(py));
        let what = format!("an instance of '{}'", r.name);
        let result = r
            .info
            .bind(py)
            .call_method1("build", (target, state, r.version));
        let result = self.wrap(&what, result)?;
        self.fill(slot, &result);
        Ok(result)
    }

    /// Completes the value of the last frame (one other than a list or a dict).
    #[inline(never)]
    fn finish_last(&mut self) -> PyResult<Bound<'py, PyAny>> {
        let Some(frame) = self.frames.pop() else {
            unreachable!("finish_last is called with a frame open")
        };
        self.finish(frame)
    }

    fn finish(&mut self, frame: Frame<'py>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match frame {
            Frame::List { obj, .. } | Frame::Dict { obj, .. } | Frame::Mapping { obj, .. } => obj,
            Frame::Set { obj } | Frame::Deque { obj } => obj,
            Frame::Tuple { obj, slot, .. } | Frame::FrozenSet { obj, slot } => {
                self.fill(slot, &obj);
                obj
            }
            Frame::Object {
                class,
                obj,
                values,
                slot,
                ..
            } => self.finish_object(class, obj, values, slot)?,
            Frame::Seed { value } => self.made_from(value)?,
            Frame::Made {
                made,
                obj,
                state,
                extra,
                ..
            } => self.finish_made(made, obj, state, extra)?,
            Frame::Replace { target } => match self.memo.get(target) {
                Some(Some(v)) => v.clone(),
                _ => {
                    return Err(self.fail(
                        format!("replacement by memo slot {target} that is not complete"),
                        None,
                    ))
                }
            },
            Frame::Collect { what, values, slot } => {
                let expected = match what {
                    Collect::Range | Collect::Slice => 3,
                    Collect::Std(_) | Collect::Enum(_) => 1,
                };
                if values.len() != expected {
                    return Err(self.fail(
                        format!("expected {expected} values, found {}", values.len()),
                        None,
                    ));
                }
                let value = match what {
                    Collect::Range => {
                        for v in &values {
                            if !v.is_exact_instance_of::<pyo3::types::PyInt>() {
                                return Err(self.fail("range bounds must be ints".into(), None));
                            }
                        }
                        let range = py.get_type::<pyo3::types::PyRange>();
                        self.wrap("range", range.call1(PyTuple::new(py, &values)?))?
                    }
                    Collect::Slice => {
                        // SAFETY: three live objects; PySlice_New takes its own references.
                        let p = unsafe {
                            ffi::PySlice_New(
                                values[0].as_ptr(),
                                values[1].as_ptr(),
                                values[2].as_ptr(),
                            )
                        };
                        self.owned("slice", p)?
                    }
                    Collect::Std(kind) => {
                        let args = values[0].cast::<PyTuple>().map_err(|_| {
                            self.fail("standard-library arguments must be a tuple".into(), None)
                        })?;
                        if !args.is_exact_instance_of::<PyTuple>() {
                            return Err(self
                                .fail("standard-library arguments must be a tuple".into(), None));
                        }
                        let Some(builder) = self.cfg.builders.bind(py).get_item(kind)? else {
                            return Err(
                                self.fail(format!("unknown standard-library kind {kind}"), None)
                            );
                        };
                        self.wrap("a standard-library value", builder.call1(args))?
                    }
                    Collect::Enum(class) => {
                        let Some(r) = &self.resolved[class] else {
                            unreachable!()
                        };
                        let member = r.info.bind(py).call_method1("member", (&values[0],));
                        self.wrap(&format!("a member of '{}'", r.name), member)?
                    }
                };
                self.fill(slot, &value);
                value
            }
        })
    }

    /// Hands a finished value to the open container; returns it if it is the root.
    #[inline]
    fn deliver(&mut self, value: Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(top) = self.frames.last_mut() else {
            return Ok(Some(value));
        };
        match top {
            Frame::List { obj, filled, .. } => {
                let list = obj.as_ptr();
                // SAFETY: the list is live and the pushed reference is ours.
                let pushed = unsafe {
                    if self.in_place {
                        list_push::<true>(list, filled, value.into_ptr())
                    } else {
                        list_push::<false>(list, filled, value.into_ptr())
                    }
                };
                if pushed.is_err() {
                    return Err(PyErr::fetch(self.py));
                }
            }
            Frame::Tuple { obj, filled, .. } => {
                // SAFETY: the tuple is fresh and private; the reader guarantees exactly
                // as many items as slots, and the index is checked anyway.
                unsafe {
                    if *filled < ffi::PyTuple_GET_SIZE(obj.as_ptr()) {
                        ffi::PyTuple_SET_ITEM(obj.as_ptr(), *filled, value.into_ptr());
                        *filled += 1;
                    }
                }
            }
            Frame::Dict { obj, key } => match key.take() {
                None => *key = Some(value),
                Some(k) => {
                    // SAFETY: a live dict, key and value; PyDict_SetItem takes its own references.
                    let rc =
                        unsafe { ffi::PyDict_SetItem(obj.as_ptr(), k.as_ptr(), value.as_ptr()) };
                    if rc < 0 {
                        let e = PyErr::fetch(self.py);
                        return self.wrap("a dict", Err(e));
                    }
                }
            },
            Frame::Mapping { obj, key } => match key.take() {
                None => *key = Some(value),
                Some(k) => {
                    let r = obj.set_item(k, value);
                    self.wrap("a mapping", r)?;
                }
            },
            Frame::Set { obj } | Frame::FrozenSet { obj, .. } => {
                // SAFETY: a live set, or a frozenset we hold the only reference to.
                let rc = unsafe { ffi::PySet_Add(obj.as_ptr(), value.as_ptr()) };
                if rc < 0 {
                    let e = PyErr::fetch(self.py);
                    return self.wrap("a set", Err(e));
                }
            }
            Frame::Deque { obj } => {
                let r = obj.call_method1("append", (value,));
                self.wrap("a deque", r)?;
            }
            Frame::Object {
                class,
                obj: Some(obj),
                dict,
                values,
                filled,
                ..
            } => {
                // Fast records (same version, exactly the declared fields) are set as
                // their values arrive; the others are collected for ClassInfo.build.
                match self.resolved.get(*class) {
                    Some(Some(r)) if r.fast => {
                        let Some(name) = r.names.get(*filled) else {
                            return Err(unpickling(
                                self.py,
                                self.cfg,
                                "too many field values".into(),
                                None,
                            ));
                        };
                        *filled += 1;
                        // SAFETY: generic attribute store (as object.__setattr__) of a str
                        // name on a live instance; bypasses a frozen dataclass's __setattr__.
                        let rc = unsafe {
                            match dict {
                                Some(d) => {
                                    ffi::PyDict_SetItem(d.as_ptr(), name.as_ptr(), value.as_ptr())
                                }
                                None => ffi::PyObject_GenericSetAttr(
                                    obj.as_ptr(),
                                    name.as_ptr(),
                                    value.as_ptr(),
                                ),
                            }
                        };
                        if rc < 0 {
                            let e = PyErr::fetch(self.py);
                            let what = format!(
                                "cannot set field '{}' of class '{}': {}",
                                name.bind(self.py),
                                r.name,
                                e.value(self.py)
                            );
                            return Err(unpickling(self.py, self.cfg, what, Some(e)));
                        }
                    }
                    _ => values.push(value),
                }
            }
            Frame::Collect { values, .. } | Frame::Object { values, .. } => values.push(value),
            Frame::Replace { .. } => drop(value),
            Frame::Seed { value: seed } => {
                if seed.replace(value).is_some() {
                    return Err(self.fail("a record takes one value to be made from".into(), None));
                }
            }
            Frame::Made { .. } => self.deliver_to_made(value)?,
        }
        Ok(None)
    }
}
