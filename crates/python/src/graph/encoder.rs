//! The object walker: Python object graph -> one record, in a single native call.
//!
//! Exact type pointers pick the fast paths. Only objects whose reference count shows a
//! second owner can be shared, so only those touch the memo (the walker holds its own
//! reference to every child it visits, hence the threshold of two).

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::addr_of_mut;
use std::rc::Rc;

use bytewright_graph::writer::{self, minimal_le, ATOM_ROOM};
use bytewright_graph::{tags, Writer};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use pyo3::Borrowed;

use super::config::Config;
use super::errors::{EncodeError, Step};
use super::infocache::{self, Facts, KIND_DICT, KIND_ENUM, KIND_SLOTS, KIND_TUPLE};
use super::memo::Memo;
use super::ptrmap::PtrMap;
use crate::cpython;

pub(super) mod builtins;

/// Deepest nesting the encoder writes; well inside the decoder's default `max_depth`.
pub const MAX_DEPTH: u32 = 1000;

/// str and bytes data from this size on is copied once, straight into the output.
const DEFER_FROM: usize = 16 * 1024;

/// Lists of this many items on are written in runs of atoms ([`Encoder::atom_run`]); a
/// run's set-up costs more than it saves on fewer.
const RUNS_FROM: ffi::Py_ssize_t = 16;

/// How many items ahead a run of list atoms asks for an item's header to be fetched.
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: ffi::Py_ssize_t = 6;

/// Large immutable data to copy into the output at `at` (a position in the writer's
/// buffer); `_owner` is held only to keep that memory alive.
pub struct Chunk<'py> {
    pub at: usize,
    pub data: *const u8,
    pub len: usize,
    pub _owner: Bound<'py, PyAny>,
}

/// The deferred chunks of a record, in output order. The first is kept in line: most
/// records defer at most one large str or bytes, and a vector would allocate for it.
pub struct Chunks<'py> {
    first: Option<Chunk<'py>>,
    more: Vec<Chunk<'py>>,
}

impl<'py> Chunks<'py> {
    #[inline(always)]
    pub const fn new() -> Self {
        Self {
            first: None,
            more: Vec::new(),
        }
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Whether dropping these would release nothing.
    #[inline(always)]
    fn is_vacant(&self) -> bool {
        self.first.is_none() && self.more.capacity() == 0
    }

    fn push(&mut self, chunk: Chunk<'py>) {
        if self.first.is_none() {
            self.first = Some(chunk);
        } else {
            self.more.push(chunk);
        }
    }

    /// The only chunk, if there is exactly one.
    #[inline(always)]
    pub fn single(&self) -> Option<&Chunk<'py>> {
        if self.more.is_empty() {
            self.first.as_ref()
        } else {
            None
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Chunk<'py>> {
        self.first.iter().chain(self.more.iter())
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Chunk<'py>> {
        self.first.iter_mut().chain(self.more.iter_mut())
    }
}

type R = Result<(), EncodeError>;

/// One layout of a class's records: the field names in the order values are written.
struct Shape<'py> {
    index: u32,
    names: Vec<Bound<'py, PyString>>,
}

struct ClassEntry<'py> {
    /// Held so that its address (the key of the entry) is not reused during the call.
    ty: Bound<'py, PyAny>,
    /// How its instances are written: `facts.kind`, or [`KIND_DERIVED`].
    kind: u8,
    facts: Rc<Facts>,
    /// The class index of the shape of exactly the declared fields (the commonest, so
    /// kept apart from `shapes`, which then need no allocation).
    declared_shape: Option<u32>,
    /// Any other shapes.
    shapes: Vec<Shape<'py>>,
}

/// [`Encoder::root_slot`] before the root has a memo slot.
const NO_SLOT: u32 = u32::MAX;

/// The writer kind of a class of yours that subclasses a builtin type (a DERIVED record).
const KIND_DERIVED: u8 = u8::MAX;
/// What an encoder allocates, kept between calls so that writing a small
/// graph of class instances allocates nothing but its result: the storage of two empty
/// vectors, each as its pointer and capacity (0: none kept; its pointer is then unused).
struct Scratch {
    classes: *mut ClassEntry<'static>,
    classes_cap: usize,
    fields: *mut (*mut ffi::PyObject, *mut ffi::PyObject),
    fields_cap: usize,
}

/// Storage beyond this many entries (after an unusual graph) is freed rather than kept.
const SCRATCH_KEEP: usize = 256;

/// The kept [`Scratch`]. A plain static rather than a thread-local (which costs a call to
/// find on every `dumps` of a class instance): it is only taken or put back with the GIL
/// held, so no two threads touch it at once; a call that finds it taken (a nested one, or
/// another thread's while the first released the GIL) allocates its own.
struct ScratchSlot(std::cell::UnsafeCell<Scratch>);

// SAFETY: only touched with the GIL held (see `adopt_scratch` and `keep_scratch`).
unsafe impl Sync for ScratchSlot {}

static SCRATCH: ScratchSlot = ScratchSlot(std::cell::UnsafeCell::new(Scratch {
    classes: std::ptr::null_mut(),
    classes_cap: 0,
    fields: std::ptr::null_mut(),
    fields_cap: 0,
}));

/// Up to this many classes a record's class lookup scans a list; beyond, a map.
const FEW_CLASSES: usize = 8;

/// An encoder that, when it ends holding nothing (see [`Encoder::is_vacant`]), skips the
/// drop of each of its parts; otherwise it is dropped as usual, on every path out.
pub struct Walker<'py>(std::mem::ManuallyDrop<Encoder<'py>>);

impl<'py> Walker<'py> {
    #[inline(always)]
    pub fn new(enc: Encoder<'py>) -> Self {
        Self(std::mem::ManuallyDrop::new(enc))
    }
}

impl<'py> std::ops::Deref for Walker<'py> {
    type Target = Encoder<'py>;
    #[inline(always)]
    fn deref(&self) -> &Encoder<'py> {
        &self.0
    }
}

impl<'py> std::ops::DerefMut for Walker<'py> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Encoder<'py> {
        &mut self.0
    }
}

impl Drop for Walker<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // Most graphs that share anything share a few strs (dict keys, constants): release
        // those in line (nothing to do for the others), and skip the full drop if nothing
        // else is held.
        self.0.memo.release_inline();
        if !self.0.is_vacant() {
            drop_encoder(&mut self.0);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_encoder(enc: &mut std::mem::ManuallyDrop<Encoder<'_>>) {
    // SAFETY: called once, from the walker's own drop; the encoder is not used after.
    unsafe { std::mem::ManuallyDrop::drop(enc) }
}

pub struct Encoder<'py> {
    py: Python<'py>,
    cfg: &'static Config,
    w: Writer,
    memo: Memo,
    /// The object being pickled (null: none yet). The caller holds it for the whole call,
    /// so when it is shared it is remembered here, not in `memo` (see [`Encoder::encode_root`]).
    root: *mut ffi::PyObject,
    /// `root`'s memo slot, once it has one ([`NO_SLOT`] before).
    root_slot: u32,
    next_slot: u32,
    /// The maps few records need, allocated together on first use (see [`Rare`]).
    rare: Option<Box<Rare>>,
    classes: Vec<ClassEntry<'py>>,
    next_class: u32,
    deterministic: bool,
    use_memo: bool,
    /// Deferred str/bytes data, in output order (none in set-ordering sub-encoders).
    chunks: Chunks<'py>,
    defer: bool,
    depth: u32,
    /// The (name, value) pairs of the instances being written, innermost last; each entry
    /// holds a reference to both (released when its instance is done).
    fields: Vec<(*mut ffi::PyObject, *mut ffi::PyObject)>,
}

/// What only records with many classes, or deterministic ones, need: kept out of line so
/// that every other `dumps` neither builds nor checks them.
#[derive(Default)]
struct Rare {
    /// Type address -> index in `classes`, once there are more than [`FEW_CLASSES`].
    class_index: PtrMap<usize>,
    /// Deterministic mode, first pass: objects actually met twice (or inside themselves).
    seen_twice: PtrMap<()>,
    /// Deterministic mode, second pass: only these objects may be shared, so the output
    /// does not depend on references from outside the graph.
    only_shared: Option<PtrMap<()>>,
}

/// Whether `item` is of a type [`Encoder::atom_run`] writes (it may still leave it: a long
/// str, a shared one, a large int).
///
/// # Safety
/// `item` is a live object.
#[inline(always)]
unsafe fn may_start_run(item: *mut ffi::PyObject) -> bool {
    // SAFETY: as the caller guarantees.
    let ty = unsafe { ffi::Py_TYPE(item) };
    ty == addr_of_mut!(ffi::PyLong_Type)
        || ty == addr_of_mut!(ffi::PyUnicode_Type)
        || ty == addr_of_mut!(ffi::PyFloat_Type)
        || ty == addr_of_mut!(ffi::PyBool_Type)
        || item == unsafe { ffi::Py_None() }
}

/// `e` at item `i` of a list: out of line, so that the loop of a short list carries no
/// error path of its own.
#[cold]
#[inline(never)]
fn at_index(e: EncodeError, i: ffi::Py_ssize_t) -> EncodeError {
    e.at(Step::Index(i as usize))
}

fn type_name(obj: *mut ffi::PyObject) -> String {
    // SAFETY: obj is a live object; tp_name is a NUL-terminated C string owned by its type.
    unsafe {
        CStr::from_ptr((*ffi::Py_TYPE(obj)).tp_name)
            .to_string_lossy()
            .into_owned()
    }
}

fn is_dunder(name: &[u8]) -> bool {
    name.len() >= 4 && name.starts_with(b"__") && name.ends_with(b"__")
}

fn key_step(key: *mut ffi::PyObject) -> Step {
    // SAFETY: key is a live object and the GIL is held.
    unsafe {
        let ty = ffi::Py_TYPE(key);
        if ty == addr_of_mut!(ffi::PyUnicode_Type) {
            let mut n: ffi::Py_ssize_t = 0;
            let p = ffi::PyUnicode_AsUTF8AndSize(key, &mut n);
            if !p.is_null() {
                let s = std::slice::from_raw_parts(p as *const u8, n as usize);
                return Step::Key(format!("{:?}", String::from_utf8_lossy(s)));
            }
            ffi::PyErr_Clear();
        } else if ty == addr_of_mut!(ffi::PyLong_Type) {
            let v = ffi::PyLong_AsLongLong(key);
            if v != -1 || ffi::PyErr_Occurred().is_null() {
                return Step::Key(v.to_string());
            }
            ffi::PyErr_Clear();
        }
    }
    Step::Key(format!("<{}>", type_name(key)))
}

impl<'py> Encoder<'py> {
    /// An encoder writing into `w`.
    #[inline(always)]
    pub fn new(py: Python<'py>, cfg: &'static Config, deterministic: bool, w: Writer) -> Self {
        Self {
            py,
            cfg,
            w,
            memo: Memo::default(),
            root: std::ptr::null_mut(),
            root_slot: NO_SLOT,
            next_slot: 0,
            rare: None,
            classes: Vec::new(),
            next_class: 0,
            deterministic,
            use_memo: true,
            chunks: Chunks::new(),
            defer: true,
            depth: 0,
            fields: Vec::new(),
        }
    }

    /// Takes the kept class and field storage, when the graph meets its first
    /// class (graphs of builtins never touch it). A nested call (a `__getstate__` that
    /// pickles) finds the slot empty and allocates.
    #[cold]
    fn adopt_scratch(&mut self) {
        // SAFETY: the GIL is held (the encoder lives in a native call), so this is the only
        // access to the slot.
        let s = unsafe { &mut *SCRATCH.0.get() };
        // Only called while `classes` has no storage (nothing to drop); `fields` may.
        debug_assert_eq!(self.classes.capacity(), 0);
        if s.classes_cap != 0 {
            // SAFETY: the storage came from an emptied `Vec<ClassEntry>` of this capacity
            // (see `keep_scratch`), and lifetimes do not change a type's layout; the slot
            // gives it up here.
            let classes = unsafe {
                Vec::from_raw_parts(s.classes.cast::<ClassEntry<'py>>(), 0, s.classes_cap)
            };
            s.classes_cap = 0;
            std::mem::forget(std::mem::replace(&mut self.classes, classes));
        }
        if s.fields_cap != 0 && self.fields.capacity() == 0 {
            // SAFETY: as above, from an emptied vector of fields of this capacity.
            let fields = unsafe { Vec::from_raw_parts(s.fields, 0, s.fields_cap) };
            s.fields_cap = 0;
            std::mem::forget(std::mem::replace(&mut self.fields, fields));
        }
    }

    /// What was written: the record so far, its deferred chunks, and (deterministic mode)
    /// the objects met twice. The class and field storage is kept for the next call; the
    /// rest of the walker's state is released when it is dropped. Taken out in place
    /// (moving a whole encoder out by value copies it).
    #[inline(always)]
    pub fn take_output(&mut self) -> (Writer, Chunks<'py>, PtrMap<()>) {
        let out = (
            std::mem::replace(&mut self.w, Writer::empty()),
            std::mem::replace(&mut self.chunks, Chunks::new()),
            self.rare
                .as_mut()
                .map(|r| std::mem::take(&mut r.seen_twice))
                .unwrap_or_default(),
        );
        if self.classes.capacity() != 0 || self.fields.capacity() != 0 {
            self.keep_scratch();
        }
        out
    }

    /// The record written so far, when no data was deferred (see [`Encoder::take_output`]
    /// otherwise). The class and field storage is kept for the next call first.
    #[inline(always)]
    pub fn undeferred_output(&mut self) -> Option<&mut Writer> {
        if !self.chunks.is_empty() {
            return None;
        }
        if self.classes.capacity() != 0 || self.fields.capacity() != 0 {
            self.keep_scratch();
        }
        Some(&mut self.w)
    }

    /// Whether dropping this encoder would release nothing: no memo entry and no storage
    /// of any kind (every graph without shared objects or classes, once its output is
    /// taken).
    #[inline(always)]
    fn is_vacant(&self) -> bool {
        self.memo.is_empty()
            && self.w.is_unallocated()
            && self.rare.is_none()
            && self.classes.capacity() == 0
            && self.chunks.is_vacant()
            && self.fields.capacity() == 0
    }

    /// The rare maps, allocated on first use.
    #[cold]
    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Deterministic mode, second pass: only the objects in `shared` (those the first pass
    /// met twice) may be shared.
    pub fn share_only(&mut self, shared: PtrMap<()>) {
        self.rare().only_shared = Some(shared);
    }

    /// Keeps the class and field storage for the next call (see [`Scratch`]).
    #[cold]
    fn keep_scratch(&mut self) {
        // Released in place: releasing the classes may run code (a weakref callback) that
        // pickles, with an encoder of its own (it may fill the slot first). Each entry is
        // released field by field in line: its shapes (most often none) only when it has
        // some, not through a call to drop every entry's vector.
        let n = self.classes.len();
        // SAFETY: the entries are read out below, each once; none is read through the vector
        // again (its length is 0 from here).
        unsafe { self.classes.set_len(0) };
        let base = self.classes.as_ptr();
        for i in 0..n {
            // SAFETY: `i < n`, the entries' count before the length was cleared.
            let ClassEntry {
                ty, facts, shapes, ..
            } = unsafe { std::ptr::read(base.add(i)) };
            drop(ty);
            drop(facts);
            if shapes.capacity() != 0 {
                drop(shapes);
            } else {
                std::mem::forget(shapes);
            }
        }
        // Plain pointers: each entry's references were released when its instance was done.
        self.fields.clear();
        // SAFETY: the GIL is held, so this is the only access to the slot (read only now:
        // the releases above may have run a nested call that filled it). Storage the slot
        // cannot take stays with the encoder, whose drop frees it.
        let s = unsafe { &mut *SCRATCH.0.get() };
        let cap = self.classes.capacity();
        if s.classes_cap == 0 && cap <= SCRATCH_KEEP {
            // The vector is empty (see above): only its storage is kept, for `adopt_scratch`.
            s.classes = self.classes.as_mut_ptr().cast::<ClassEntry<'static>>();
            s.classes_cap = cap;
            std::mem::forget(std::mem::take(&mut self.classes));
        }
        let cap = self.fields.capacity();
        if s.fields_cap == 0 && cap <= SCRATCH_KEEP {
            s.fields = self.fields.as_mut_ptr();
            s.fields_cap = cap;
            std::mem::forget(std::mem::take(&mut self.fields));
        }
    }

    fn enter(&mut self) -> R {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(EncodeError::new(format!(
                "nesting deeper than {MAX_DEPTH} levels cannot be pickled"
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Starts a value that may be shared. `None`: a reference was written instead.
    /// `Some(slot)`: write the value; `slot` is its memo slot if it is shared.
    /// `prefix` values are remembered now (before their children, so cycles through
    /// them work); the others only by [`Encoder::memo_end`].
    ///
    /// Only the reference-count test is inlined into every container's writer: most
    /// containers have no second owner, and the memo lookup behind it would otherwise make
    /// each of them save and restore the registers it needs.
    #[inline(always)]
    fn memo_begin(&mut self, obj: *mut ffi::PyObject, prefix: bool) -> Option<Option<u32>> {
        // SAFETY: obj is live; reading its reference count has no side effects.
        let refs = unsafe { ffi::Py_REFCNT(obj) };
        if !self.may_share(refs) {
            return Some(None);
        }
        self.memo_begin_shared(obj, prefix)
    }

    /// Whether a value with `refs` references may be shared: it has an owner besides its
    /// container (or the caller, for the root) and the walker's own reference, and the
    /// memo is on.
    #[inline(always)]
    fn may_share(&self, refs: ffi::Py_ssize_t) -> bool {
        refs > 2 && self.use_memo
    }

    /// [`Encoder::memo_begin`] for a value with a second owner: a reference, or a new slot.
    #[inline(never)]
    fn memo_begin_shared(&mut self, obj: *mut ffi::PyObject, prefix: bool) -> Option<Option<u32>> {
        self.memo_begin_shared_inline(obj, prefix)
    }

    /// [`Encoder::memo_begin_shared`] in line, for the small writers of shared atoms.
    #[inline(always)]
    fn memo_begin_shared_inline(
        &mut self,
        obj: *mut ffi::PyObject,
        prefix: bool,
    ) -> Option<Option<u32>> {
        if let Some(only) = self.rare.as_ref().and_then(|r| r.only_shared.as_ref()) {
            if !only.contains_key(&(obj as usize)) {
                return Some(None);
            }
        }
        if prefix && obj != self.root {
            // Looked up and, when new, remembered in one probe of the memo.
            let slot = self.next_slot;
            if let Some(found) = self.memo.get_or_insert(obj, slot) {
                if self.deterministic {
                    self.rare().seen_twice.insert(obj as usize, ());
                }
                self.w.reference(found);
                return None;
            }
            self.next_slot += 1;
            self.w.share();
            return Some(Some(slot));
        }
        if let Some(slot) = self.lookup(obj) {
            if self.deterministic {
                self.rare().seen_twice.insert(obj as usize, ());
            }
            self.w.reference(slot);
            return None;
        }
        let slot = self.next_slot;
        self.next_slot += 1;
        self.w.share();
        if prefix {
            self.remember(obj, slot);
        }
        Some(Some(slot))
    }

    /// The memo slot of `obj`, if it was remembered.
    #[inline(always)]
    fn lookup(&self, obj: *mut ffi::PyObject) -> Option<u32> {
        if obj == self.root {
            return (self.root_slot != NO_SLOT).then_some(self.root_slot);
        }
        self.memo.get(obj)
    }

    /// Encodes `obj`, the object being pickled (the caller holds it until the encoder is
    /// done).
    #[inline(always)]
    pub fn encode_root(&mut self, obj: *mut ffi::PyObject) -> R {
        self.root = obj;
        // SAFETY: obj is live (the caller holds it); its type and count are only read.
        let (ty, refs) = unsafe { (ffi::Py_TYPE(obj), ffi::Py_REFCNT(obj)) };
        let list = ty == addr_of_mut!(ffi::PyList_Type);
        if (list || ty == addr_of_mut!(ffi::PyDict_Type))
            && self.may_share(refs)
            && self.rare.is_none()
        {
            // A shared list or dict at the root, in line: what `memo_begin` does for it
            // when nothing is remembered yet (no lookup can find it): the first slot.
            debug_assert!(self.next_slot == 0 && self.root_slot == NO_SLOT);
            self.next_slot = 1;
            self.root_slot = 0;
            self.w.share();
            return if list {
                self.list_items(obj)
            } else {
                self.dict_items(obj, tags::DICT)
            };
        }
        // SAFETY: comparing addresses with the interpreter's singleton.
        if obj == unsafe { ffi::Py_None() } {
            // `dumps(None)`, a sentinel: one tag, past the set-up of `encode`.
            self.w.tag(tags::NONE);
            return Ok(());
        }
        self.encode(obj)
    }

    #[inline(always)]
    fn remember(&mut self, obj: *mut ffi::PyObject, slot: u32) {
        if obj == self.root {
            // Held by the caller throughout: no memo entry, no reference to release.
            self.root_slot = slot;
        } else {
            self.memo.insert(obj, slot);
        }
    }

    /// Ends a value built after its children. If it was met again inside itself, that
    /// inner copy is the real one: wrap what was written in REPLACE of the inner slot.
    fn memo_end(&mut self, obj: *mut ffi::PyObject, slot: Option<u32>, mark: usize) {
        if let Some(slot) = slot {
            if let Some(inner) = self.lookup(obj) {
                if self.deterministic {
                    self.rare().seen_twice.insert(obj as usize, ());
                }
                let shift = self.w.replace_at(mark, inner);
                for chunk in self.chunks.iter_mut().filter(|c| c.at > mark) {
                    chunk.at += shift;
                }
            } else {
                self.remember(obj, slot);
            }
        }
    }

    /// Writes `obj` if it is an atom, and reports whether it did: ints and floats up to 64
    /// bits, `None`, bools, and ASCII strs and bytes short of [`DEFER_FROM`]. Those with an
    /// owner beyond their container and the `held` references the walker keeps go through
    /// the memo; none runs Python code, so the walker takes no reference to them.
    ///
    /// # Safety
    /// `obj` is live and the GIL is held.
    #[inline(always)]
    unsafe fn atom(&mut self, obj: *mut ffi::PyObject, held: ffi::Py_ssize_t) -> bool {
        // SAFETY: as the function contract.
        unsafe {
            match self.common_atom(obj, held) {
                Some(done) => done,
                None => self.other_atom(obj, held),
            }
        }
    }

    /// [`Encoder::atom`] for the commonest types, str, int and float: `None` if `obj` is
    /// of none of them, else whether it was written.
    ///
    /// # Safety
    /// As [`Encoder::atom`].
    #[inline(always)]
    unsafe fn common_atom(
        &mut self,
        obj: *mut ffi::PyObject,
        held: ffi::Py_ssize_t,
    ) -> Option<bool> {
        // SAFETY (whole block): see the function contract; each branch reads `obj` through
        // the API of its exact type.
        unsafe {
            let ty = ffi::Py_TYPE(obj);
            if ty == addr_of_mut!(ffi::PyUnicode_Type) {
                let Some(text) = cpython::ascii_text(obj) else {
                    return Some(false);
                };
                // A one-character str is never memoized (the reader's are singletons too).
                let unshared = text.len() <= 1 || ffi::Py_REFCNT(obj) <= 1 + held || !self.use_memo;
                if text.len() >= DEFER_FROM {
                    return Some(false);
                }
                if unshared {
                    self.w.str(text);
                    return Some(true);
                }
                self.shared_ascii(obj, text);
                return Some(true);
            }
            if ty == addr_of_mut!(ffi::PyLong_Type) {
                if let Some(v) = cpython::small_i64(obj) {
                    self.w.int(v);
                    return Some(true);
                }
                let mut overflow: c_int = 0;
                let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
                if overflow != 0 {
                    return Some(false);
                }
                self.w.int(v);
                return Some(true);
            }
            if ty == addr_of_mut!(ffi::PyFloat_Type) {
                self.w.float(ffi::PyFloat_AS_DOUBLE(obj));
                return Some(true);
            }
        }
        None
    }

    /// [`Encoder::atom`] past [`Encoder::common_atom`]: `None`, bools and bytes.
    ///
    /// # Safety
    /// As [`Encoder::atom`].
    #[inline(always)]
    unsafe fn other_atom(&mut self, obj: *mut ffi::PyObject, held: ffi::Py_ssize_t) -> bool {
        // SAFETY (whole block): see the function contract; each branch reads `obj` through
        // the API of its exact type.
        unsafe {
            let ty = ffi::Py_TYPE(obj);
            if obj == ffi::Py_None() {
                self.w.tag(tags::NONE);
                return true;
            }
            if ty == addr_of_mut!(ffi::PyBool_Type) {
                self.w.tag(if obj == ffi::Py_True() {
                    tags::TRUE
                } else {
                    tags::FALSE
                });
                return true;
            }
            if ty == addr_of_mut!(ffi::PyBytes_Type) {
                let n = ffi::Py_SIZE(obj) as usize;
                if n >= DEFER_FROM {
                    return false;
                }
                let data = std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(obj).cast::<u8>(), n);
                if ffi::Py_REFCNT(obj) <= 1 + held || !self.use_memo {
                    self.w.bytes(data);
                } else {
                    self.shared_bytes(obj, data);
                }
                return true;
            }
        }
        false
    }

    /// [`Encoder::atom`] for a short ASCII str with a second owner: a reference, or the
    /// text under a new memo slot (what [`Encoder::encode`] would write, without its
    /// dispatch: writing a str runs no Python code, so the walker takes no reference).
    #[inline(never)]
    fn shared_ascii(&mut self, obj: *mut ffi::PyObject, text: &[u8]) {
        if self.first_sharing(obj) {
            self.w.shared_str(text);
            return;
        }
        self.shared_ascii_again(obj, text);
    }

    /// [`Encoder::shared_ascii`] past its common case.
    #[cold]
    #[inline(never)]
    fn shared_ascii_again(&mut self, obj: *mut ffi::PyObject, text: &[u8]) {
        if self.memo_begin_shared_inline(obj, true).is_some() {
            self.w.str(text);
        }
    }

    /// [`Encoder::shared_ascii`] for short bytes.
    #[inline(never)]
    fn shared_bytes(&mut self, obj: *mut ffi::PyObject, data: &[u8]) {
        if self.first_sharing(obj) {
            self.w.shared_bytes(data);
            return;
        }
        self.shared_bytes_again(obj, data);
    }

    /// [`Encoder::shared_bytes`] past its common case.
    #[cold]
    #[inline(never)]
    fn shared_bytes_again(&mut self, obj: *mut ffi::PyObject, data: &[u8]) {
        if self.memo_begin_shared_inline(obj, true).is_some() {
            self.w.bytes(data);
        }
    }

    /// The common case of [`Encoder::memo_begin_shared_inline`] for a shared atom (not
    /// the root, so remembered before it is written): no sharing rules (no [`Rare`]
    /// maps) and its first memo bucket free, so it was not met before. Then it is
    /// remembered under a new slot (the caller writes the slot's mark and the value);
    /// otherwise nothing is done and `false` returned.
    #[inline(always)]
    fn first_sharing(&mut self, obj: *mut ffi::PyObject) -> bool {
        if self.rare.is_some() || obj == self.root || !self.memo.insert_at_home(obj, self.next_slot)
        {
            return false;
        }
        self.next_slot += 1;
        true
    }

    /// Encodes an item of a container that holds it: atoms directly, anything else under a
    /// reference of the walker's own (its encoding may run code that changes the container).
    ///
    /// # Safety
    /// `obj` is live and the GIL is held.
    #[inline(always)]
    unsafe fn item(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY (whole block): see the function contract.
        unsafe {
            if self.atom(obj, 0) {
                return Ok(());
            }
            self.held(obj)
        }
    }

    /// [`Encoder::item`] for an item of a short list or a tuple: a list among them is
    /// tested for before the rarer atoms, and written past [`Encoder::encode`]'s dispatch
    /// (the long lists of [`Encoder::list_in_runs`], whose other items are mostly dicts or
    /// instances, keep [`Encoder::item`]).
    ///
    /// # Safety
    /// `obj` is live and the GIL is held.
    #[inline(always)]
    unsafe fn short_item(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY (whole block): see the function contract.
        unsafe {
            match self.common_atom(obj, 0) {
                Some(true) => return Ok(()),
                Some(false) => {}
                None => {
                    if ffi::Py_TYPE(obj) == addr_of_mut!(ffi::PyList_Type) {
                        ffi::Py_INCREF(obj);
                        let r = self.item_list(obj);
                        ffi::Py_DECREF(obj);
                        return r;
                    }
                    if self.other_atom(obj, 0) {
                        return Ok(());
                    }
                }
            }
            self.held(obj)
        }
    }

    /// Encodes `obj` (not an atom) under a reference of the walker's own.
    ///
    /// # Safety
    /// `obj` is live and the GIL is held.
    #[inline(always)]
    unsafe fn held(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY: as the function contract; the reference taken is released after.
        unsafe {
            ffi::Py_INCREF(obj);
            let r = self.encode(obj);
            ffi::Py_DECREF(obj);
            r
        }
    }

    /// Encodes a child the walker holds its own reference to.
    pub fn encode(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY: obj is live (the caller holds a reference) and the GIL is held; every
        // branch reads it through the C API of its exact type.
        unsafe {
            let ty = ffi::Py_TYPE(obj);
            // Containers first: what reaches here is mostly what `atom` did not take.
            if ty == addr_of_mut!(ffi::PyList_Type) {
                return self.list(obj);
            }
            if ty == addr_of_mut!(ffi::PyDict_Type) {
                return self.dict(obj, tags::DICT);
            }
            if ty == addr_of_mut!(ffi::PyTuple_Type) {
                return self.tuple(obj);
            }
            if ty == addr_of_mut!(ffi::PyUnicode_Type) {
                return self.str(obj);
            }
            if ty == addr_of_mut!(ffi::PyLong_Type) {
                return self.int(obj);
            }
            if ty == addr_of_mut!(ffi::PyFloat_Type) {
                self.w.float(ffi::PyFloat_AS_DOUBLE(obj));
                return Ok(());
            }
            if obj == ffi::Py_None() {
                self.w.tag(tags::NONE);
                return Ok(());
            }
            if ty == addr_of_mut!(ffi::PyBool_Type) {
                self.w.tag(if obj == ffi::Py_True() {
                    tags::TRUE
                } else {
                    tags::FALSE
                });
                return Ok(());
            }
            if ty == addr_of_mut!(ffi::PyBytes_Type) {
                if self.memo_begin(obj, true).is_none() {
                    return Ok(());
                }
                let p = ffi::PyBytes_AsString(obj) as *const u8;
                let n = ffi::PyBytes_Size(obj) as usize;
                if n >= DEFER_FROM && self.defer {
                    // bytes are immutable; the data lives as long as the object we keep.
                    let at = self.w.bytes_deferred(n);
                    let owner = Bound::from_borrowed_ptr(self.py, obj);
                    self.chunks.push(Chunk {
                        at,
                        data: p,
                        len: n,
                        _owner: owner,
                    });
                } else {
                    self.w.bytes(std::slice::from_raw_parts(p, n));
                }
                return Ok(());
            }
            if ty == addr_of_mut!(ffi::PyByteArray_Type) {
                if self.memo_begin(obj, true).is_none() {
                    return Ok(());
                }
                let p = ffi::PyByteArray_AsString(obj) as *const u8;
                let n = ffi::PyByteArray_Size(obj) as usize;
                let data = if n == 0 {
                    &[][..]
                } else {
                    std::slice::from_raw_parts(p, n)
                };
                self.w.bytearray(data);
                return Ok(());
            }
            if ty == addr_of_mut!(ffi::PySet_Type) {
                return self.set(obj, tags::SET);
            }
            if ty == addr_of_mut!(ffi::PyFrozenSet_Type) {
                return self.set(obj, tags::FROZENSET);
            }
            if ty == addr_of_mut!(ffi::PyComplex_Type) {
                self.w.complex(
                    ffi::PyComplex_RealAsDouble(obj),
                    ffi::PyComplex_ImagAsDouble(obj),
                );
                return Ok(());
            }
            if obj == ffi::Py_Ellipsis() {
                self.w.tag(tags::ELLIPSIS);
                return Ok(());
            }
            if ty == addr_of_mut!(ffi::PyRange_Type) || ty == addr_of_mut!(ffi::PySlice_Type) {
                return self.range_or_slice(obj, ty == addr_of_mut!(ffi::PyRange_Type));
            }
        }
        self.other(obj)
    }

    fn str(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY: obj is a live exact str and the GIL is held.
        unsafe {
            if ffi::PyUnicode_GET_LENGTH(obj) > 1 && self.memo_begin(obj, true).is_none() {
                return Ok(());
            }
            let mut n: ffi::Py_ssize_t = 0;
            let p = match cpython::ascii_text(obj) {
                Some(text) => {
                    n = text.len() as ffi::Py_ssize_t;
                    text.as_ptr().cast::<std::os::raw::c_char>()
                }
                None => ffi::PyUnicode_AsUTF8AndSize(obj, &mut n),
            };
            if !p.is_null() {
                let n = n as usize;
                if n >= DEFER_FROM && self.defer {
                    // The UTF-8 buffer lives as long as the (immutable) str we keep.
                    let at = self.w.str_deferred(n);
                    let owner = Bound::from_borrowed_ptr(self.py, obj);
                    self.chunks.push(Chunk {
                        at,
                        data: p.cast(),
                        len: n,
                        _owner: owner,
                    });
                } else {
                    self.w.str(std::slice::from_raw_parts(p as *const u8, n));
                }
                return Ok(());
            }
            // Lone surrogates have no UTF-8 form: write their "surrogatepass" bytes.
            ffi::PyErr_Clear();
            let b =
                ffi::PyUnicode_AsEncodedString(obj, c"utf-8".as_ptr(), c"surrogatepass".as_ptr());
            let b = Bound::from_owned_ptr_or_err(self.py, b)
                .map_err(|e| EncodeError::caused("cannot encode str", e))?;
            let data = std::slice::from_raw_parts(
                ffi::PyBytes_AsString(b.as_ptr()) as *const u8,
                ffi::PyBytes_Size(b.as_ptr()) as usize,
            );
            self.w.str_surrogates(data);
        }
        Ok(())
    }

    #[inline(always)]
    fn int(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY: obj is a live exact int and the GIL is held.
        if let Some(v) = unsafe { cpython::small_i64(obj) } {
            self.w.int(v);
            return Ok(());
        }
        // SAFETY: obj is a live exact int and the GIL is held.
        unsafe {
            let mut overflow: c_int = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow);
            if overflow == 0 {
                self.w.int(v);
                return Ok(());
            }
            let buf = cpython::int_to_le_bytes(self.py, obj)
                .map_err(|e| EncodeError::caused("cannot convert int", e))?;
            self.w.bigint(minimal_le(&buf));
        }
        Ok(())
    }

    #[inline(always)]
    fn list(&mut self, obj: *mut ffi::PyObject) -> R {
        if self.memo_begin(obj, true).is_none() {
            return Ok(());
        }
        self.list_items(obj)
    }

    /// [`Encoder::list`] out of line, for a list that is an item of a list or tuple
    /// ([`Encoder::item`] tests for one before the rarer atoms): in line in
    /// [`Encoder::encode`], a list of a dict value or field costs no call of its own.
    #[inline(never)]
    fn item_list(&mut self, obj: *mut ffi::PyObject) -> R {
        self.list(obj)
    }

    /// [`Encoder::list`] after the memo: the header and the items.
    #[inline(always)]
    fn list_items(&mut self, obj: *mut ffi::PyObject) -> R {
        // SAFETY: obj is a live exact list; each item is read under a bounds check against
        // the current size and held by a new reference while it is encoded.
        unsafe {
            let n = ffi::PyList_GET_SIZE(obj);
            // Every item takes at least one byte: grow the output once, not repeatedly.
            self.w.list_with_room(n as usize);
            self.enter()?;
            if n >= RUNS_FROM {
                return self.list_in_runs(obj, n);
            }
            for i in 0..n {
                if i >= ffi::PyList_GET_SIZE(obj) {
                    return Err(EncodeError::new("list changed size during pickling"));
                }
                let item = ffi::PyList_GET_ITEM(obj, i);
                self.short_item(item).map_err(|e| at_index(e, i))?;
            }
            if ffi::PyList_GET_SIZE(obj) != n {
                return Err(EncodeError::new("list changed size during pickling"));
            }
        }
        self.leave();
        Ok(())
    }

    /// [`Encoder::list`] after its header, for a list of `n` items, [`RUNS_FROM`] or more:
    /// runs of atoms are written by [`Encoder::atom_run`], the rest one by one. Kept out of
    /// line so that the recursive [`Encoder::encode`] stays small.
    ///
    /// # Safety
    /// `obj` is a live exact list of `n` items and the GIL is held.
    #[inline(never)]
    unsafe fn list_in_runs(&mut self, obj: *mut ffi::PyObject, n: ffi::Py_ssize_t) -> R {
        // SAFETY: as `list`: each item is read under a bounds check against the current
        // size, atoms in runs in which no Python code runs, and anything else held by a
        // new reference while it is encoded.
        unsafe {
            let mut i = 0;
            while i < n {
                if i >= ffi::PyList_GET_SIZE(obj) {
                    return Err(EncodeError::new("list changed size during pickling"));
                }
                let mut item = ffi::PyList_GET_ITEM(obj, i);
                if may_start_run(item) {
                    i = self.atom_run(obj, i, n);
                    if i >= n {
                        break;
                    }
                    if i >= ffi::PyList_GET_SIZE(obj) {
                        return Err(EncodeError::new("list changed size during pickling"));
                    }
                    item = ffi::PyList_GET_ITEM(obj, i);
                }
                self.item(item).map_err(|e| e.at(Step::Index(i as usize)))?;
                i += 1;
            }
            if ffi::PyList_GET_SIZE(obj) != n {
                return Err(EncodeError::new("list changed size during pickling"));
            }
        }
        self.leave();
        Ok(())
    }

    /// Writes the items of list `obj` from index `i` on, up to `n` (or its current size),
    /// while they are atoms that [`Encoder::atom`] writes without the memo: ints of up to
    /// 32 bits, floats, unshared short ASCII strs, `None` and bools. Returns the index of
    /// the first item it left (or the end). Nothing here runs Python code, so the list
    /// cannot change meanwhile: its items and size are read once, and the output is written
    /// through a local pointer, its length stored once at the end.
    ///
    /// # Safety
    /// `obj` is a live exact list and the GIL is held.
    #[inline(always)]
    unsafe fn atom_run(
        &mut self,
        obj: *mut ffi::PyObject,
        mut i: ffi::Py_ssize_t,
        n: ffi::Py_ssize_t,
    ) -> ffi::Py_ssize_t {
        // SAFETY (whole block): items below `end` are live objects the list holds; each is
        // read through the layout of its exact type; the writes stay within the room that
        // `spare` reports, checked before each item.
        unsafe {
            let end = n.min(ffi::PyList_GET_SIZE(obj));
            let items = (*obj.cast::<ffi::PyListObject>()).ob_item;
            let use_memo = self.use_memo;
            let none = ffi::Py_None();
            let true_ = ffi::Py_True();
            let false_ = ffi::Py_False();
            let (mut p, mut room_end) = self.w.spare();
            while i < end {
                // Room for any atom but a str (checked again for a str longer than this).
                if (room_end as usize) - (p as usize) < writer::NUMBER_ROOM {
                    self.w.commit(p);
                    // Two bytes for each item left is a fair guess at what they take.
                    self.w.reserve(ATOM_ROOM + (end - i) as usize * 2);
                    (p, room_end) = self.w.spare();
                }
                #[cfg(target_arch = "x86_64")]
                if i + PREFETCH_AHEAD < end {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    _mm_prefetch::<_MM_HINT_T0>((*items.offset(i + PREFETCH_AHEAD)).cast());
                }
                let item = *items.offset(i);
                let ty = ffi::Py_TYPE(item);
                if ty == addr_of_mut!(ffi::PyLong_Type) {
                    let v = match cpython::small_i64(item) {
                        Some(v) => v,
                        None => {
                            let mut overflow: c_int = 0;
                            let v = ffi::PyLong_AsLongLongAndOverflow(item, &mut overflow);
                            if overflow != 0 {
                                break;
                            }
                            v
                        }
                    };
                    match writer::put_int(p, v) {
                        Some(next) => p = next,
                        None => {
                            self.w.commit(p);
                            self.w.int(v);
                            (p, room_end) = self.w.spare();
                        }
                    }
                } else if ty == addr_of_mut!(ffi::PyUnicode_Type) {
                    let Some(text) = cpython::ascii_text(item) else {
                        break;
                    };
                    // As `atom`: one-character strs are never memoized.
                    if text.len() > tags::SHORT_STR_MAX_LEN
                        || (text.len() > 1 && ffi::Py_REFCNT(item) > 1 && use_memo)
                    {
                        break;
                    }
                    if (room_end as usize) - (p as usize) < 1 + text.len() {
                        self.w.commit(p);
                        self.w.reserve(ATOM_ROOM + (end - i) as usize * 2);
                        (p, room_end) = self.w.spare();
                    }
                    p = writer::put_short_str(p, text);
                } else if ty == addr_of_mut!(ffi::PyFloat_Type) {
                    p = writer::put_float(p, ffi::PyFloat_AS_DOUBLE(item));
                } else if item == none {
                    p = writer::put_tag(p, tags::NONE);
                } else if item == true_ {
                    p = writer::put_tag(p, tags::TRUE);
                } else if item == false_ {
                    p = writer::put_tag(p, tags::FALSE);
                } else {
                    break;
                }
                i += 1;
            }
            self.w.commit(p);
            i
        }
    }

    /// Writes the pairs of an exact dict (or any dict subclass that keeps dict order).
    fn dict(&mut self, obj: *mut ffi::PyObject, tag: u8) -> R {
        if self.memo_begin(obj, true).is_none() {
            return Ok(());
        }
        self.dict_items(obj, tag)
    }

    /// [`Encoder::dict`] after the memo: the header and the pairs.
    #[inline(always)]
    fn dict_items(&mut self, obj: *mut ffi::PyObject, tag: u8) -> R {
        // SAFETY: obj is a live dict; dict_next (as PyDict_Next) tolerates mutation, and each key and
        // value is held by a new reference while it is encoded.
        unsafe {
            let n = ffi::PyDict_Size(obj);
            if tag == tags::DICT {
                self.w.dict(n as usize);
            } else {
                self.w.counted(tag, n as usize);
            }
            self.pairs(obj, n)?;
        }
        Ok(())
    }

    /// # Safety
    /// `obj` must be a live dict (or subclass) and the GIL held.
    unsafe fn pairs(&mut self, obj: *mut ffi::PyObject, n: ffi::Py_ssize_t) -> R {
        self.enter()?;
        let mut pos: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        let mut count = 0;
        // SAFETY (whole block): see the function contract.
        unsafe {
            while cpython::dict_next(obj, &mut pos, &mut key, &mut value) {
                count += 1;
                if count > n {
                    return Err(EncodeError::new("dict changed size during pickling"));
                }
                let key_done = self.atom(key, 0);
                if key_done && self.atom(value, 0) {
                    continue;
                }
                // The key is held too: it names the error, and the value's code may drop it.
                ffi::Py_INCREF(key);
                ffi::Py_INCREF(value);
                let r = if key_done { Ok(()) } else { self.encode(key) };
                // The value is held now: one reference of the walker's own.
                let r = r.and_then(|()| {
                    if self.atom(value, 1) {
                        Ok(())
                    } else {
                        self.encode(value)
                    }
                });
                if let Err(e) = r {
                    let step = key_step(key);
                    ffi::Py_DECREF(key);
                    ffi::Py_DECREF(value);
                    return Err(e.at(step));
                }
                ffi::Py_DECREF(key);
                ffi::Py_DECREF(value);
            }
        }
        if count != n {
            return Err(EncodeError::new("dict changed size during pickling"));
        }
        self.leave();
        Ok(())
    }

    fn tuple(&mut self, obj: *mut ffi::PyObject) -> R {
        let mark = self.w.mark();
        let Some(slot) = self.memo_begin(obj, false) else {
            return Ok(());
        };
        // SAFETY: obj is a live exact tuple; tuples never change size, and the tuple
        // holds its items alive while the walker holds the tuple.
        unsafe {
            let n = ffi::PyTuple_GET_SIZE(obj);
            self.w.tuple(n as usize);
            self.enter()?;
            for i in 0..n {
                let item = ffi::PyTuple_GET_ITEM(obj, i);
                self.short_item(item)
                    .map_err(|e| e.at(Step::Index(i as usize)))?;
            }
        }
        self.leave();
        self.memo_end(obj, slot, mark);
        Ok(())
    }

    /// The items of any iterable, each as an owned reference.
    fn items(&self, obj: &Bound<'py, PyAny>) -> Result<Vec<Bound<'py, PyAny>>, EncodeError> {
        let iter = obj
            .try_iter()
            .map_err(|e| EncodeError::caused("cannot iterate", e))?;
        iter.collect::<PyResult<Vec<_>>>()
            .map_err(|e| EncodeError::caused("cannot iterate", e))
    }

    fn set(&mut self, obj: *mut ffi::PyObject, tag: u8) -> R {
        let mark = self.w.mark();
        let prefix = tag == tags::SET;
        let Some(slot) = self.memo_begin(obj, prefix) else {
            return Ok(());
        };
        // SAFETY: obj is live and the GIL is held.
        let bound = unsafe { Bound::from_borrowed_ptr(self.py, obj) };
        let mut items = self.items(&bound)?;
        if self.deterministic {
            items = self.canonical_order(items)?;
        }
        self.w.counted(tag, items.len());
        self.enter()?;
        for (i, item) in items.iter().enumerate() {
            self.encode(item.as_ptr())
                .map_err(|e| e.at(Step::Index(i)))?;
        }
        self.leave();
        if !prefix {
            self.memo_end(obj, slot, mark);
        }
        Ok(())
    }

    /// Sorts set items by their own encoding, which does not depend on the hash seed.
    fn canonical_order(
        &self,
        items: Vec<Bound<'py, PyAny>>,
    ) -> Result<Vec<Bound<'py, PyAny>>, EncodeError> {
        let mut keyed = Vec::with_capacity(items.len());
        for item in items {
            let mut sub = Encoder::new(self.py, self.cfg, true, Writer::default());
            sub.use_memo = false;
            sub.defer = false;
            sub.depth = self.depth;
            sub.encode(item.as_ptr()).map_err(|e| {
                EncodeError::new(format!(
                    "deterministic=True cannot order this set item: {}",
                    e.message
                ))
            })?;
            let (buf, start) = sub.w.finish(None);
            keyed.push((buf[start..].to_vec(), item));
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(keyed.into_iter().map(|(_, item)| item).collect())
    }

    fn range_or_slice(&mut self, obj: *mut ffi::PyObject, is_range: bool) -> R {
        let mark = self.w.mark();
        let slot = if is_range {
            None
        } else {
            match self.memo_begin(obj, false) {
                None => return Ok(()),
                Some(slot) => slot,
            }
        };
        // SAFETY: obj is live and the GIL is held.
        let bound = unsafe { Bound::from_borrowed_ptr(self.py, obj) };
        self.w.tag(if is_range { tags::RANGE } else { tags::SLICE });
        self.enter()?;
        for name in ["start", "stop", "step"] {
            let part = bound
                .getattr(name)
                .map_err(|e| EncodeError::caused("cannot read range", e))?;
            self.encode(part.as_ptr())
                .map_err(|e| e.at(Step::Attr(name.to_string())))?;
        }
        self.leave();
        self.memo_end(obj, slot, mark);
        Ok(())
    }

    /// Everything without a fast path: collections, standard-library types, classes.
    fn other(&mut self, obj: *mut ffi::PyObject) -> R {
        let py = self.py;
        let cfg = self.cfg;
        // Borrowed, not a new reference: the memo's sharing test counts the references the
        // walker holds, and the caller's already keeps `obj` alive.
        // SAFETY: obj is live (the caller holds a reference) and the GIL is held.
        let bound = unsafe { Borrowed::from_ptr(py, obj) };
        // A class met before in this record: straight to its writer. (Only classes that
        // passed every check below are in the index.)
        // SAFETY: obj is live; its type pointer is only compared.
        if let Some(index) = self.known_class(unsafe { ffi::Py_TYPE(obj) }.cast()) {
            return self.class_instance(&bound, index);
        }
        // The size of the reducers table: a class found to be one of yours is known as
        // such while the table keeps it (entries are only ever added).
        // SAFETY: reading the size of a live dict.
        let stamp = unsafe { (*cfg.reducers.as_ptr().cast::<ffi::PyDictObject>()).ma_used };
        // A class of yours met in an earlier call: past the checks below, which depend on
        // the class alone (and that table).
        // SAFETY: obj is live; its type is held by it.
        if let Some(facts) = infocache::plain_facts(py, unsafe { ffi::Py_TYPE(obj) }.cast(), stamp)
        {
            let index = self.push_class(&bound.get_type(), facts);
            return self.class_instance(&bound, index);
        }
        if let Some(r) = self.builtin_value(&bound) {
            return r;
        }
        let ty = bound.get_type();
        if ty.is(cfg.ordered_dict.bind(py)) || ty.is(cfg.counter.bind(py)) {
            let tag = if ty.is(cfg.ordered_dict.bind(py)) {
                tags::ORDERED_DICT
            } else {
                tags::COUNTER
            };
            return self.mapping(&bound, tag, None);
        }
        if ty.is(cfg.default_dict.bind(py)) {
            return self.default_dict(&bound);
        }
        if ty.is(cfg.deque.bind(py)) {
            return self.deque(&bound);
        }
        if let Ok(Some(entry)) = cfg.reducers.bind(py).get_item(&ty) {
            return self.std(&bound, &entry);
        }
        // SAFETY: reading the flags of a live type object.
        let heap = unsafe { (*ffi::Py_TYPE(obj)).tp_flags } & ffi::Py_TPFLAGS_HEAPTYPE != 0;
        if !heap {
            return Err(EncodeError::new(format!(
                "cannot pickle '{}' object",
                type_name(obj)
            )));
        }
        let index = self.class_entry(&ty)?;
        infocache::mark_plain(&ty, stamp);
        self.class_instance(&bound, index)
    }

    /// Writes an instance of the class `classes[index]`.
    fn class_instance(&mut self, bound: &Bound<'py, PyAny>, index: usize) -> R {
        let obj = bound.as_ptr();
        match self.classes[index].kind {
            KIND_DICT | KIND_SLOTS => self.instance(bound, index),
            KIND_DERIVED => self.derived(bound, index),
            KIND_TUPLE => self.named_tuple(bound, index),
            KIND_ENUM => self.enum_member(bound, index),
            _ => Err(EncodeError::new(format!(
                "cannot pickle '{}' object",
                type_name(obj)
            ))),
        }
    }

    fn mapping(&mut self, obj: &Bound<'py, PyAny>, tag: u8, factory: Option<u8>) -> R {
        if self.memo_begin(obj.as_ptr(), true).is_none() {
            return Ok(());
        }
        let items = obj
            .call_method0("items")
            .map_err(|e| EncodeError::caused("cannot read items", e))?;
        let pairs = self.items(&items)?;
        match factory {
            Some(code) => self.w.default_dict(code, pairs.len()),
            None => self.w.counted(tag, pairs.len()),
        }
        self.enter()?;
        for pair in &pairs {
            let pair = pair
                .cast::<PyTuple>()
                .map_err(|_| EncodeError::new("items() must give pairs"))?;
            if pair.len() != 2 {
                return Err(EncodeError::new("items() must give pairs"));
            }
            let (k, v) = (pair.get_item(0), pair.get_item(1));
            let (k, v) = match (k, v) {
                (Ok(k), Ok(v)) => (k, v),
                _ => return Err(EncodeError::new("items() must give pairs")),
            };
            self.encode(k.as_ptr())
                .and_then(|()| self.encode(v.as_ptr()))
                .map_err(|e| e.at(key_step(k.as_ptr())))?;
        }
        self.leave();
        Ok(())
    }

    fn deque(&mut self, obj: &Bound<'py, PyAny>) -> R {
        if self.memo_begin(obj.as_ptr(), true).is_none() {
            return Ok(());
        }
        let maxlen = obj
            .getattr("maxlen")
            .map_err(|e| EncodeError::caused("bad deque", e))?;
        let maxlen: Option<u64> = maxlen
            .extract()
            .map_err(|_| EncodeError::new("bad deque maxlen"))?;
        let items = self.items(obj)?;
        self.w.deque(maxlen, items.len());
        self.enter()?;
        for (i, item) in items.iter().enumerate() {
            self.encode(item.as_ptr())
                .map_err(|e| e.at(Step::Index(i)))?;
        }
        self.leave();
        Ok(())
    }

    fn std(&mut self, obj: &Bound<'py, PyAny>, entry: &Bound<'py, PyAny>) -> R {
        let bad = |e| {
            EncodeError::caused(
                format!("cannot pickle '{}' object", type_name(obj.as_ptr())),
                e,
            )
        };
        let (kind, reducer): (u64, Bound<'py, PyAny>) = entry.extract().map_err(bad)?;
        let args = reducer.call1((obj,)).map_err(bad)?;
        if !args.is_exact_instance_of::<PyTuple>() {
            return Err(EncodeError::new("a reducer must return a tuple"));
        }
        let mark = self.w.mark();
        let Some(slot) = self.memo_begin(obj.as_ptr(), false) else {
            return Ok(());
        };
        self.w.std(kind);
        self.enter()?;
        self.encode(args.as_ptr())?;
        self.leave();
        self.memo_end(obj.as_ptr(), slot, mark);
        Ok(())
    }

    /// The index in `classes` of the type at `ty`, if this record met it already.
    #[inline]
    fn known_class(&self, ty: *mut ffi::PyObject) -> Option<usize> {
        if self.classes.len() <= FEW_CLASSES {
            self.classes.iter().position(|c| c.ty.as_ptr() == ty)
        } else {
            self.rare.as_ref()?.class_index.get(&(ty as usize)).copied()
        }
    }

    fn class_entry(&mut self, ty: &Bound<'py, pyo3::types::PyType>) -> Result<usize, EncodeError> {
        if let Some(i) = self.known_class(ty.as_ptr()) {
            return Ok(i);
        }
        let cannot = |e: PyErr| {
            let reason = e.value(ty.py()).to_string();
            let name = ty.qualname().map(|n| n.to_string()).unwrap_or_default();
            EncodeError::caused(format!("cannot pickle '{name}' object: {reason}"), e)
        };
        let facts = infocache::facts(self.cfg, ty).map_err(cannot)?;
        Ok(self.push_class(ty, facts))
    }

    /// Adds the class `ty`, of `facts`, to this record's classes; returns its index.
    fn push_class(&mut self, ty: &Bound<'py, pyo3::types::PyType>, facts: Rc<Facts>) -> usize {
        let kind = match facts.kind {
            KIND_DICT | KIND_SLOTS if facts.builtin_base.is_some() => KIND_DERIVED,
            kind => kind,
        };
        if self.classes.capacity() == 0 {
            self.adopt_scratch();
        }
        self.classes.push(ClassEntry {
            ty: ty.clone().into_any(),
            kind,
            facts,
            declared_shape: None,
            shapes: Vec::new(),
        });
        let index = self.classes.len() - 1;
        if self.classes.len() > FEW_CLASSES {
            let index_of = &mut self.rare.get_or_insert_with(Box::default).class_index;
            if index_of.is_empty() {
                for (i, c) in self.classes.iter().enumerate() {
                    index_of.insert(c.ty.as_ptr() as usize, i);
                }
            } else {
                index_of.insert(ty.as_ptr() as usize, index);
            }
        }
        index
    }

    /// Writes the class reference for a record of `names` (live strs), defining a new shape
    /// if needed.
    fn shape(
        &mut self,
        tag: u8,
        index: usize,
        names: impl ExactSizeIterator<Item = *mut ffi::PyObject> + Clone,
    ) -> R {
        let py = self.py;
        let entry = &mut self.classes[index];
        let facts = &*entry.facts;
        let same = |a: *mut ffi::PyObject, b: *mut ffi::PyObject| {
            // SAFETY: both are live strs (the shape or the class holds `a`, the caller `b`);
            // the GIL is held.
            a == b
                || unsafe { Borrowed::from_ptr(py, a) }
                    .eq(unsafe { Borrowed::from_ptr(py, b) })
                    .unwrap_or(false)
        };
        let declared = || {
            facts.declared.as_ref().is_some_and(|d| {
                d.len() == names.len()
                    && d.iter()
                        .zip(names.clone())
                        .all(|(a, b)| same(a.as_ptr(), b))
            })
        };
        if let Some(index) = entry.declared_shape {
            if declared() {
                self.w.class_ref(tag, index);
                return Ok(());
            }
        }
        for shape in &entry.shapes {
            let own = &shape.names;
            let matches = own.len() == names.len()
                && own
                    .iter()
                    .zip(names.clone())
                    .all(|(a, b)| same(a.as_ptr(), b));
            if matches {
                self.w.class_ref(tag, shape.index);
                return Ok(());
            }
        }
        // The declared fields in order: the class's definition, encoded once, kept in its facts.
        if let Some(definition) = &facts.definition {
            if declared() {
                self.w.class_new_defined(tag, definition);
                entry.declared_shape = Some(self.next_class);
                self.next_class += 1;
                return Ok(());
            }
        }
        let mut kept = Vec::with_capacity(names.len());
        for name in names {
            // SAFETY: name is a live str (checked by the caller) and the GIL is held; the
            // shape keeps a reference, so its address is not reused while it is compared.
            kept.push(unsafe {
                Bound::from_borrowed_ptr(py, name).cast_into_unchecked::<PyString>()
            });
        }
        let mut utf8 = Vec::with_capacity(kept.len());
        for name in &kept {
            let s = name
                .to_str()
                .map_err(|e| EncodeError::caused("bad field name", e))?;
            if is_dunder(s.as_bytes()) {
                return Err(EncodeError::new(format!(
                    "cannot pickle the dunder attribute {s:?} of a {}",
                    facts.name
                )));
            }
            utf8.push(s.as_bytes());
        }
        self.w
            .class_new(tag, facts.name.as_bytes(), facts.version, utf8.into_iter());
        entry.shapes.push(Shape {
            index: self.next_class,
            names: kept,
        });
        self.next_class += 1;
        Ok(())
    }

    fn instance(&mut self, obj: &Bound<'py, PyAny>, index: usize) -> R {
        if self.memo_begin(obj.as_ptr(), true).is_none() {
            return Ok(());
        }
        let base = self.fields.len();
        let r = self.instance_fields(obj.as_ptr(), index, base);
        // SAFETY: every entry from `base` on holds one reference to its name and its value.
        unsafe {
            for &(name, value) in &self.fields[base..] {
                ffi::Py_DECREF(name);
                ffi::Py_DECREF(value);
            }
        }
        self.fields.truncate(base);
        r
    }

    /// Collects an instance's fields into `self.fields[base..]` (each under references of
    /// their own, as their encoding may run code), then writes its shape and values.
    fn instance_fields(&mut self, obj: *mut ffi::PyObject, index: usize, base: usize) -> R {
        let py = self.py;
        let facts = Rc::clone(&self.classes[index].facts);
        if facts.getstate {
            self.state_fields(obj, index)?;
        }
        if !facts.getstate && facts.kind == KIND_SLOTS {
            for name in &facts.slots {
                // SAFETY: generic lookup on a live object with a str name; bypasses any
                // custom __getattribute__ of the class.
                let v = unsafe { ffi::PyObject_GenericGetAttr(obj, name.as_ptr()) };
                if v.is_null() {
                    let e = PyErr::fetch(py);
                    if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) {
                        continue;
                    }
                    return Err(EncodeError::caused("cannot read a slot", e));
                }
                // SAFETY: v is a new reference (kept by the entry); the name gets one.
                unsafe { ffi::Py_INCREF(name.as_ptr()) };
                self.fields.push((name.as_ptr(), v));
            }
        }
        if !facts.getstate && (facts.kind == KIND_DICT || facts.has_dict) {
            // SAFETY: obj is live and its type has an instance dict.
            let d = unsafe { ffi::PyObject_GenericGetDict(obj, std::ptr::null_mut()) };
            // SAFETY: d is a new reference or NULL with an exception set.
            let d = unsafe { Bound::from_owned_ptr_or_err(py, d) }
                .map_err(|e| EncodeError::caused("cannot read __dict__", e))?;
            let d = d
                .cast_into::<pyo3::types::PyDict>()
                .map_err(|_| EncodeError::new("__dict__ is not a dict"))?;
            let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: d is a live dict we hold; dict_next (as PyDict_Next) gives borrowed pointers, each
            // taken into a reference of the entry's own before anything else runs.
            unsafe {
                while cpython::dict_next(d.as_ptr(), &mut pos, &mut k, &mut v) {
                    if ffi::PyUnicode_Check(k) == 0 {
                        return Err(EncodeError::new("non-str attribute name"));
                    }
                    ffi::Py_INCREF(k);
                    ffi::Py_INCREF(v);
                    self.fields.push((k, v));
                }
            }
        }
        let n = self.fields.len() - base;
        let fields = std::mem::take(&mut self.fields);
        let r = self.shape(tags::OBJECT, index, fields[base..].iter().map(|&(k, _)| k));
        self.fields = fields;
        r?;
        self.enter()?;
        for i in base..base + n {
            let (name, value) = self.fields[i];
            // SAFETY: the entry holds a reference to the value (counted as `held`).
            if unsafe { self.atom(value, 1) } {
                continue;
            }
            self.encode(value).map_err(|e| {
                // SAFETY: the entry holds a reference to the name.
                e.at(Step::Attr(
                    unsafe { Borrowed::from_ptr(py, name) }.to_string(),
                ))
            })?;
        }
        self.leave();
        Ok(())
    }

    /// The fields of an instance whose class defines `__getstate__`: the dict it returns
    /// (`None`: no fields), pushed into `self.fields` under references of their own.
    fn state_fields(&mut self, obj: *mut ffi::PyObject, index: usize) -> R {
        let py = self.py;
        // SAFETY: obj is live (the caller holds a reference) and the GIL is held.
        let bound = unsafe { Borrowed::from_ptr(py, obj) };
        let state = bound
            .call_method0("__getstate__")
            .map_err(|e| EncodeError::caused("__getstate__ failed", e))?;
        if state.is_none() {
            return Ok(());
        }
        let Ok(state) = state.cast_into_exact::<pyo3::types::PyDict>() else {
            return Err(EncodeError::new(format!(
                "cannot pickle a {}: its __getstate__ must return a dict of fields (or None)",
                self.classes[index].facts.name
            )));
        };
        let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: state is a live dict we hold; dict_next (as PyDict_Next) gives borrowed pointers, each
        // taken into a reference of the entry's own before anything else runs.
        unsafe {
            while cpython::dict_next(state.as_ptr(), &mut pos, &mut k, &mut v) {
                if ffi::PyUnicode_Check(k) == 0 {
                    return Err(EncodeError::new(
                        "__getstate__ returned a non-str field name",
                    ));
                }
                ffi::Py_INCREF(k);
                ffi::Py_INCREF(v);
                self.fields.push((k, v));
            }
        }
        Ok(())
    }

    fn named_tuple(&mut self, obj: &Bound<'py, PyAny>, index: usize) -> R {
        let mark = self.w.mark();
        let Some(slot) = self.memo_begin(obj.as_ptr(), false) else {
            return Ok(());
        };
        let facts = Rc::clone(&self.classes[index].facts);
        let names = facts.declared.as_deref().unwrap_or_default();
        let tuple = obj
            .cast::<PyTuple>()
            .map_err(|_| EncodeError::new("namedtuple is not a tuple"))?;
        if tuple.len() != names.len() {
            return Err(EncodeError::new(
                "namedtuple length differs from its _fields",
            ));
        }
        self.shape(tags::OBJECT, index, names.iter().map(|n| n.as_ptr()))?;
        self.enter()?;
        for (i, item) in tuple.iter().enumerate() {
            self.encode(item.as_ptr())
                .map_err(|e| e.at(Step::Attr(names[i].bind(self.py).to_string())))?;
        }
        self.leave();
        self.memo_end(obj.as_ptr(), slot, mark);
        Ok(())
    }

    fn enum_member(&mut self, obj: &Bound<'py, PyAny>, index: usize) -> R {
        let name = obj
            .getattr("_name_")
            .map_err(|e| EncodeError::caused("enum member without a name", e))?;
        let is_member = self.classes[index].facts.kind == KIND_ENUM
            && name.is_exact_instance_of::<PyString>()
            && obj
                .get_type()
                .getattr("__members__")
                .and_then(|m| m.get_item(&name))
                .map(|m| m.is(obj))
                .unwrap_or(false);
        if !is_member {
            return Err(EncodeError::new(format!(
                "cannot pickle the enum value {}: only named members can be pickled",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            )));
        }
        self.shape(tags::ENUM, index, std::iter::empty())?;
        self.encode(name.as_ptr())
    }
}
