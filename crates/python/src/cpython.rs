//! The one place that knows CPython internals, each next to its portable fallback.
//!
//! # Assumptions, stated once
//!
//! - **Int digits** (`small_i64`, `small_int`): on CPython 3.11 built with 30-bit digits an
//!   `int` is a `PyVarObject` whose `ob_size` is its sign times its digit count, followed by
//!   that many `u32` digits. 3.12 changed the layout, so only 3.11 reads them.
//! - **List internals** (`new_list_to_fill`, `list_push`, `list_extend`): `PyListObject`
//!   holds `ob_item` and `allocated` after its `PyVarObject` header, items are allocated
//!   with `PyMem_*`, and `ob_size` is the length. True of CPython 3.11 to 3.13 with the GIL
//!   (not of the free-threaded build).
//! - **Dict entries** (`dict_next`, as `pycore_dict.h` of 3.11 lays them out): a dict's
//!   keys object has its entries after its index array (`dk_indices`, `1 <<
//!   dk_log2_index_bytes` bytes), each a `PyDictKeyEntry` (hash, key, value) when `dk_kind`
//!   is 0, else a `PyDictUnicodeEntry` (key, value). A combined table (`ma_values` NULL)
//!   holds its pairs in order in its first `dk_nentries` entries, a deleted one with a NULL
//!   value; a split table holds `ma_used` values in `ma_values`, the insertion order as
//!   value indices in the bytes before them (the j-th at byte `-3 - j`). This is what
//!   `_PyDict_Next` reads, so iteration (and its tolerance of changes) is the same. Only
//!   3.11 reads them (the layout was checked against its headers only).
//! - **Bytes written in place** (`bytes_writer`, `bytes_result`): `dumps` fills a new
//!   bytes object through `PyBytes_AS_STRING`, grows it with `_PyBytes_Resize`, and when
//!   little would be freed cuts it to its record by setting `ob_size` and the terminating
//!   NUL itself (what `_PyBytes_Resize` sets, without reallocating), before anyone else
//!   sees it. The portable path builds the record in a buffer of its own and copies it.
//! - **Private functions** (`new_dict`, `int_from_le_bytes`, `int_to_le_bytes`,
//!   `u64_of_large`, `has_data_descriptor`): `_PyDict_NewPresized`, `_PyType_Lookup`,
//!   `_PyLong_NumBits` and `_PyLong_FromByteArray` are exported with the signatures below by
//!   CPython 3.11 to 3.13; `_PyLong_AsByteArray` gained an argument in 3.13, so only 3.11
//!   and 3.12 call it.
//!
//! - **Classes made from a spec** (`new_class`, CPython 3.11): a Struct class whose
//!   namespace holds only its fields' slots, its own `__init__`, plain attributes and the
//!   names a class statement adds is made by `PyType_FromSpecWithBases` (with its base's
//!   `tp_dealloc`, `tp_traverse` and `tp_clear`, and the slots in sorted order at the offsets
//!   `type.__new__` gives them), then given the metaclass, name, qualified name, `ht_slots`
//!   and namespace `type.__new__` would give it, and `__init__` set through `type.__setattr__`
//!   (which wires `tp_init`). `type.__new__` spends most of its time looking up some ninety
//!   special method names along the new class's MRO to fill its slots; a class made from a
//!   spec inherits them from its base instead, which gives the same slots when the namespace
//!   defines none of those names (the condition checked). The metaclass must have `type`'s
//!   instance size (the object is allocated as a `type` and then given it), no `mro` of its
//!   own, the base no `__init_subclass__`, and no value but a property a `__set_name__`
//!   (a property's is called, as `type.__new__` calls it). 3.11 only: the heap type's
//!   fields set here (`ht_name`, `ht_qualname`, `ht_slots`, `tp_name` pointing into
//!   `ht_name`) are laid out as pyo3's 3.11 declaration says, and later versions change how
//!   types are made from specs. `tests/wire/test_class_from_spec.py` compares each such
//!   class with the one `type.__new__` makes from the same namespace.
//!
//! Which of these hold is decided once, when `bytewright._native` is imported ([`init`]).
//! On any other interpreter or version, and whenever the environment holds
//! `BYTEWRIGHT_PORTABLE=1` at that moment, every helper here takes its portable path, which
//! uses only the public C API (`make test` runs the Python suite both ways). The results
//! are the same either way; only speed differs.
//!
//! `_PyBytes_Resize` is documented public API despite its name (every version has it); it is
//! declared here because pyo3 keeps its own declaration private. The public, non-limited
//! API (type slots such as `tp_flags`, `PyUnicode_New` with `PyUnicode_1BYTE_DATA`,
//! `PyTuple_SET_ITEM`, member slot offsets) is used where it is needed.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::exceptions::PyMemoryError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyType};

extern "C" {
    fn _PyDict_NewPresized(minused: ffi::Py_ssize_t) -> *mut ffi::PyObject;
    fn _PyType_Lookup(ty: *mut ffi::PyTypeObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject;
    fn _PyLong_NumBits(v: *mut ffi::PyObject) -> usize;
    fn _PyLong_FromByteArray(
        bytes: *const u8,
        n: usize,
        little_endian: c_int,
        is_signed: c_int,
    ) -> *mut ffi::PyObject;
    // The 3.11/3.12 signature (3.13 added `with_exceptions`).
    fn _PyLong_AsByteArray(
        v: *mut ffi::PyObject,
        bytes: *mut u8,
        n: usize,
        little_endian: c_int,
        is_signed: c_int,
    ) -> c_int;
    /// Public C API (bytesobject.h): resizes a bytes object only its creator references.
    pub fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, newsize: ffi::Py_ssize_t) -> c_int;
}

/// Ints are read from their 30-bit digits.
static INT_DIGITS: AtomicBool = AtomicBool::new(false);
/// List internals are written and the private functions above (but `_PyLong_AsByteArray`)
/// are called.
static INTERNALS: AtomicBool = AtomicBool::new(false);
/// `dumps` writes its record straight into the bytes object it returns (see
/// [`bytes_writer`]).
static BYTES_IN_PLACE: AtomicBool = AtomicBool::new(false);
/// Dict pairs are read from a combined table's entries (CPython 3.11 layout).
static DICT_ENTRIES: AtomicBool = AtomicBool::new(false);
/// `_PyLong_AsByteArray` is called with its 3.11/3.12 signature.
static INT_TO_BYTES: AtomicBool = AtomicBool::new(false);
/// Struct classes are made from a spec (see [`new_class`]).
static CLASS_FROM_SPEC: AtomicBool = AtomicBool::new(false);
/// How many classes [`new_class`] made from a spec (what a test checks).
static CLASSES_FROM_SPEC: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The environment variable that forces every portable path.
pub const PORTABLE_ENV: &str = "BYTEWRIGHT_PORTABLE";

/// Decides, once at import, which fast paths this interpreter allows.
pub fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let portable = std::env::var_os(PORTABLE_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    let sys = py.import("sys")?;
    let cpython = sys
        .getattr("implementation")?
        .getattr("name")?
        .extract::<String>()?
        == "cpython";
    let free_threaded = sys
        .getattr("abiflags")
        .and_then(|f| f.extract::<String>())
        .is_ok_and(|f| f.contains('t'));
    let version = py.version_info();
    let (minor, known) = (
        version.minor,
        version.major == 3 && cpython && !free_threaded,
    );
    let digits_30 = sys
        .getattr("int_info")?
        .getattr("bits_per_digit")?
        .extract::<u32>()?
        == 30;
    let fast = known && !portable;
    INT_DIGITS.store(fast && minor == 11 && digits_30, Ordering::Relaxed);
    INTERNALS.store(fast && (11..=13).contains(&minor), Ordering::Relaxed);
    DICT_ENTRIES.store(fast && minor == 11, Ordering::Relaxed);
    BYTES_IN_PLACE.store(fast, Ordering::Relaxed);
    INT_TO_BYTES.store(fast && (11..=12).contains(&minor), Ordering::Relaxed);
    CLASS_FROM_SPEC.store(fast && minor == 11, Ordering::Relaxed);
    m.add_function(wrap_pyfunction!(fast_paths, m)?)?;
    m.add_function(wrap_pyfunction!(new_class, m)?)?;
    m.add_function(wrap_pyfunction!(class_layout, m)?)?;
    m.add_function(wrap_pyfunction!(classes_from_spec, m)?)?;
    Ok(())
}

/// Which CPython fast paths this process uses (all `False` on the portable paths).
#[pyfunction]
fn fast_paths(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("int_digits", INT_DIGITS.load(Ordering::Relaxed))?;
    d.set_item("list_internals", internals())?;
    d.set_item("private_functions", internals())?;
    d.set_item("int_to_bytes", INT_TO_BYTES.load(Ordering::Relaxed))?;
    d.set_item("dict_entries", DICT_ENTRIES.load(Ordering::Relaxed))?;
    d.set_item("bytes_in_place", BYTES_IN_PLACE.load(Ordering::Relaxed))?;
    d.set_item("class_from_spec", CLASS_FROM_SPEC.load(Ordering::Relaxed))?;
    Ok(d)
}

/// Whether list internals may be written and the private functions called.
#[inline(always)]
pub fn internals() -> bool {
    INTERNALS.load(Ordering::Relaxed)
}

// ---- dicts ----

/// The head of a CPython 3.11 `PyDictObject`.
#[repr(C)]
struct DictObject311 {
    ob_base: ffi::PyObject,
    ma_used: ffi::Py_ssize_t,
    ma_version_tag: u64,
    ma_keys: *mut DictKeys311,
    ma_values: *mut std::ffi::c_void,
}

/// The head of a CPython 3.11 `PyDictKeysObject` (its index array follows).
#[repr(C)]
struct DictKeys311 {
    dk_refcnt: ffi::Py_ssize_t,
    dk_log2_size: u8,
    dk_log2_index_bytes: u8,
    dk_kind: u8,
    dk_version: u32,
    dk_usable: ffi::Py_ssize_t,
    dk_nentries: ffi::Py_ssize_t,
}

/// `dk_kind` of a table whose entries hold a hash (any other kind holds only strs, and
/// its entries no hash).
const DICT_KEYS_GENERAL: u8 = 0;

/// `PyDict_Next`: the pair at or after `*pos` (borrowed references), advancing `*pos` past
/// it; `false` at the end. Tables are read in place (see the module comment).
///
/// # Safety
/// `d` is a live dict (or subclass) and the GIL is held.
#[inline(always)]
pub unsafe fn dict_next(
    d: *mut ffi::PyObject,
    pos: &mut ffi::Py_ssize_t,
    key: &mut *mut ffi::PyObject,
    value: &mut *mut ffi::PyObject,
) -> bool {
    if !DICT_ENTRIES.load(Ordering::Relaxed) {
        return ffi::PyDict_Next(d, pos, key, value) != 0;
    }
    // Everything is read afresh on every call: the caller's code may change the dict.
    let dict = d.cast::<DictObject311>();
    let keys = (*dict).ma_keys;
    let entries = keys
        .cast::<u8>()
        .add(std::mem::size_of::<DictKeys311>() + (1usize << (*keys).dk_log2_index_bytes));
    let mut i = *pos;
    let values = (*dict).ma_values.cast::<*mut ffi::PyObject>();
    if !values.is_null() {
        // A split table: the `ma_used` values in insertion order, the order given by the
        // bytes before the values (entry j at byte -3 - j).
        if i < 0 || i >= (*dict).ma_used {
            return false;
        }
        let index = usize::from(*values.cast::<u8>().offset(-3 - i));
        let [k, _] = *entries.cast::<[*mut ffi::PyObject; 2]>().add(index);
        (*pos, *key, *value) = (i + 1, k, *values.add(index));
        return true;
    }
    let n = (*keys).dk_nentries;
    if (*keys).dk_kind != DICT_KEYS_GENERAL {
        let entries = entries.cast::<[*mut ffi::PyObject; 2]>();
        while i < n {
            let [k, v] = *entries.offset(i);
            i += 1;
            if !v.is_null() {
                (*pos, *key, *value) = (i, k, v);
                return true;
            }
        }
    } else {
        let entries = entries.cast::<(ffi::Py_hash_t, *mut ffi::PyObject, *mut ffi::PyObject)>();
        while i < n {
            let (_, k, v) = *entries.offset(i);
            i += 1;
            if !v.is_null() {
                (*pos, *key, *value) = (i, k, v);
                return true;
            }
        }
    }
    *pos = i;
    false
}

// ---- ints ----

/// The value of an exact int of at most two 30-bit digits (magnitude below 2**60), read
/// from its digits; `None` for larger ints or on the portable path (read it another way).
///
/// # Safety
/// `p` is a live exact `int` and the GIL is held.
#[inline(always)]
pub unsafe fn small_i64(p: *mut ffi::PyObject) -> Option<i64> {
    if !INT_DIGITS.load(Ordering::Relaxed) {
        return None;
    }
    // Only digits that ob_size says exist are read.
    let size = (*p.cast::<ffi::PyVarObject>()).ob_size;
    let digits = digits_of(p);
    let magnitude = match size.unsigned_abs() {
        0 => 0,
        1 => i64::from(*digits),
        2 => i64::from(*digits) | (i64::from(*digits.add(1)) << 30),
        _ => return None,
    };
    Some(if size < 0 { -magnitude } else { magnitude })
}

/// [`small_i64`] extended to three digits (magnitude below 2**90).
///
/// # Safety
/// `p` is a live exact `int` and the GIL is held.
#[inline(always)]
pub unsafe fn small_int(p: *mut ffi::PyObject) -> Option<i128> {
    if let Some(v) = small_i64(p) {
        return Some(i128::from(v));
    }
    if !INT_DIGITS.load(Ordering::Relaxed) {
        return None;
    }
    let size = (*p.cast::<ffi::PyVarObject>()).ob_size;
    if size.unsigned_abs() != 3 {
        return None;
    }
    let digits = digits_of(p);
    let d = |i: usize| i128::from(*digits.add(i));
    let magnitude = d(0) | (d(1) << 30) | (d(2) << 60);
    Some(if size < 0 { -magnitude } else { magnitude })
}

/// The digit array of a 3.11 int (right after its PyVarObject header).
#[inline(always)]
unsafe fn digits_of(p: *mut ffi::PyObject) -> *const u32 {
    p.cast::<u8>()
        .add(std::mem::size_of::<ffi::PyVarObject>())
        .cast::<u32>()
}

/// Whether an int is below zero, through the public API (3.12+ no longer keep an int's
/// sign in `ob_size`).
///
/// # Safety
/// `p` is a live `int` and the GIL is held.
pub unsafe fn int_is_negative(p: *mut ffi::PyObject) -> bool {
    let mut overflow: c_int = 0;
    let v = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
    overflow < 0 || (overflow == 0 && v < 0)
}

/// The value of a positive int above `i64::MAX` when it fits 64 bits; `None` (no exception
/// set) when it does not.
///
/// # Safety
/// `p` is a live `int` greater than `i64::MAX` and the GIL is held.
pub unsafe fn u64_of_large(p: *mut ffi::PyObject) -> Option<u64> {
    if internals() {
        // Positive and at most 64 bits: the mask is the value.
        return (_PyLong_NumBits(p) <= 64).then(|| ffi::PyLong_AsUnsignedLongLongMask(p));
    }
    let v = ffi::PyLong_AsUnsignedLongLong(p);
    if v == u64::MAX && !ffi::PyErr_Occurred().is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    Some(v)
}

/// A new int from little-endian two's complement bytes (NULL with an exception set on
/// failure).
pub fn int_from_le_bytes(py: Python<'_>, bytes: &[u8]) -> *mut ffi::PyObject {
    if internals() {
        // SAFETY: `bytes` is a live slice of bytes.len() bytes.
        return unsafe { _PyLong_FromByteArray(bytes.as_ptr(), bytes.len(), 1, 1) };
    }
    let r = (|| -> PyResult<Bound<'_, PyAny>> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("signed", true)?;
        py.get_type::<PyInt>().call_method(
            "from_bytes",
            (PyBytes::new(py, bytes), "little"),
            Some(&kwargs),
        )
    })();
    match r {
        Ok(v) => v.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// The little-endian two's complement bytes of an int, one sign bit to spare (as many as
/// `int.to_bytes(bit_length // 8 + 1, "little", signed=True)` gives).
///
/// # Safety
/// `p` is a live exact `int` and the GIL is held.
pub unsafe fn int_to_le_bytes(py: Python<'_>, p: *mut ffi::PyObject) -> PyResult<Vec<u8>> {
    if INT_TO_BYTES.load(Ordering::Relaxed) {
        let n = _PyLong_NumBits(p) / 8 + 1;
        let mut buf = vec![0u8; n];
        if _PyLong_AsByteArray(p, buf.as_mut_ptr(), n, 1, 1) < 0 {
            return Err(PyErr::fetch(py));
        }
        return Ok(buf);
    }
    let int = Bound::from_borrowed_ptr(py, p);
    let bits: usize = int.call_method0("bit_length")?.extract()?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("signed", true)?;
    let bytes = int.call_method("to_bytes", (bits / 8 + 1, "little"), Some(&kwargs))?;
    Ok(bytes.cast_into::<PyBytes>()?.as_bytes().to_vec())
}

// ---- dicts and types ----

/// A new empty dict with room for `n` items (NULL with an exception set on failure).
#[inline]
pub fn new_dict(n: usize) -> *mut ffi::PyObject {
    // SAFETY: plain constructors.
    unsafe {
        if internals() {
            _PyDict_NewPresized(n as ffi::Py_ssize_t)
        } else {
            ffi::PyDict_New()
        }
    }
}

/// Whether `ty` or a base class has a data descriptor called `name`, found without running
/// any code; `None` when that cannot be told without running code (the portable path), so
/// the caller must assume it may.
///
/// # Safety
/// `ty` is a live type and `name` a live exact str; the GIL is held.
#[inline]
pub unsafe fn has_data_descriptor(
    ty: *mut ffi::PyTypeObject,
    name: *mut ffi::PyObject,
) -> Option<bool> {
    if !internals() {
        return None;
    }
    // A borrowed reference (or NULL) found along the MRO; no code runs, no exception is set.
    let attr = _PyType_Lookup(ty, name);
    Some(!attr.is_null() && (*ffi::Py_TYPE(attr)).tp_descr_set.is_some())
}

/// The byte offset of the writable object member slot (``__slots__``) called `name` that
/// `ty`'s attribute lookup finds, for an instance of `ty` (the descriptor belongs to `ty` or a
/// base class); `None` if it is anything else, or on the portable path.
///
/// # Safety
/// `ty` is a live type and `name` a live exact str; the GIL is held.
#[inline]
pub unsafe fn member_slot(ty: *mut ffi::PyTypeObject, name: *mut ffi::PyObject) -> Option<isize> {
    if !internals() {
        return None;
    }
    // A borrowed reference (or NULL) found along the MRO; no code runs, no exception is set.
    let attr = _PyType_Lookup(ty, name);
    if attr.is_null() || ffi::Py_TYPE(attr) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
        return None;
    }
    let d = attr.cast::<ffi::PyMemberDescrObject>();
    let m = &*(*d).d_member;
    // From structmember.h: T_OBJECT_EX is 16, READONLY is 1.
    if m.type_code != 16 || m.flags & 1 != 0 {
        return None;
    }
    let owner = (*d).d_common.d_type;
    if owner != ty && ffi::PyType_IsSubtype(ty, owner) == 0 {
        return None; // a descriptor copied from an unrelated class: not this layout
    }
    Some(m.offset)
}

/// Whether neither `ty` nor a base class has an attribute called `name` (found without
/// running any code); `None` on the portable path.
///
/// # Safety
/// `ty` is a live type and `name` a live exact str; the GIL is held.
#[inline]
pub unsafe fn lacks_attribute(
    ty: *mut ffi::PyTypeObject,
    name: *mut ffi::PyObject,
) -> Option<bool> {
    if !internals() {
        return None;
    }
    Some(_PyType_Lookup(ty, name).is_null())
}

/// The attribute-cache version tag of `ty`; 0 when it has none (or on the portable path).
/// CPython drops a type's tag whenever an attribute of it or of a base changes, and never
/// hands out a tag twice, so while a type shows the same non-zero tag, every attribute
/// lookup on it gives what it gave before.
///
/// # Safety
/// `ty` is a live type; the GIL is held.
#[inline]
pub unsafe fn type_version(ty: *mut ffi::PyTypeObject) -> u32 {
    if !internals() || (*ty).tp_flags & ffi::Py_TPFLAGS_VALID_VERSION_TAG == 0 {
        return 0;
    }
    (*ty).tp_version_tag
}

// ---- lists ----

/// A new empty list to be filled with `n` items: with room for them already allocated when
/// it will be filled `in_place` (the caller read [`internals`]); NULL with an exception set
/// on failure.
#[inline]
pub fn new_list_to_fill(n: usize, in_place: bool) -> *mut ffi::PyObject {
    if !in_place {
        // SAFETY: plain constructor.
        return unsafe { ffi::PyList_New(0) };
    }
    // SAFETY: a fresh list of n NULL slots; its length is set to 0 at once, so it is a
    // valid empty list with n slots allocated.
    unsafe {
        let list = ffi::PyList_New(n as ffi::Py_ssize_t);
        if !list.is_null() {
            (*list.cast::<ffi::PyVarObject>()).ob_size = 0;
        }
        list
    }
}

/// Appends `item` (a new reference, always consumed) to a list being filled, which holds
/// `*filled` items when nothing else has touched it; `Err` with the exception set when the
/// list cannot grow. With `IN_PLACE` (the caller checked [`internals`]) the next slot is
/// written directly when nothing else has touched the list and room remains.
///
/// # Safety
/// `list` is a live list and `item` a new reference to a live object; the GIL is held.
#[inline(always)]
pub unsafe fn list_push<const IN_PLACE: bool>(
    list: *mut ffi::PyObject,
    filled: &mut isize,
    item: *mut ffi::PyObject,
) -> Result<(), ()> {
    if IN_PLACE {
        let raw = list.cast::<ffi::PyListObject>();
        if ffi::Py_SIZE(list) == *filled && *filled < (*raw).allocated {
            *(*raw).ob_item.offset(*filled) = item;
            *filled += 1;
            (*list.cast::<ffi::PyVarObject>()).ob_size = *filled;
            return Ok(());
        }
    }
    let rc = ffi::PyList_Append(list, item);
    ffi::Py_DECREF(item);
    if rc < 0 {
        return Err(());
    }
    *filled += 1;
    Ok(())
}

/// Moves the references in `items` to the end of the exact list `list`, growing it once:
/// on `Ok` the list owns them (the caller forgets them), on `Err` the caller still does.
///
/// # Safety
/// `list` is a live exact list that nothing else changes meanwhile (no Python code runs
/// here) and each item is an owned reference to a live object; the GIL is held.
pub unsafe fn list_extend(
    py: Python<'_>,
    list: *mut ffi::PyObject,
    items: &[*mut ffi::PyObject],
) -> PyResult<()> {
    let n = items.len();
    if n == 0 {
        return Ok(());
    }
    if !internals() {
        for &item in items {
            if ffi::PyList_Append(list, item) < 0 {
                return Err(PyErr::fetch(py));
            }
        }
        // The list took references of its own; the ones handed over are released.
        for &item in items {
            ffi::Py_DECREF(item);
        }
        return Ok(());
    }
    // The item array grows with the allocator lists use; only then are the n references
    // moved into the new slots and the size grown.
    let l = list.cast::<ffi::PyListObject>();
    let size = ffi::Py_SIZE(list) as usize;
    let need = size + n;
    if need > (*l).allocated as usize {
        let cap = need + (need >> 3) + 6;
        let bytes = cap
            .checked_mul(std::mem::size_of::<*mut ffi::PyObject>())
            .filter(|b| *b <= isize::MAX as usize)
            .ok_or_else(|| PyMemoryError::new_err("list too large"))?;
        let grown = ffi::PyMem_Realloc((*l).ob_item.cast(), bytes);
        if grown.is_null() {
            return Err(PyMemoryError::new_err("list too large"));
        }
        (*l).ob_item = grown.cast();
        (*l).allocated = cap as ffi::Py_ssize_t;
    }
    std::ptr::copy_nonoverlapping(items.as_ptr(), (*l).ob_item.add(size), n);
    (*list.cast::<ffi::PyVarObject>()).ob_size = need as ffi::Py_ssize_t;
    Ok(())
}

// ---- strs ----

/// A new compact ASCII str holding `s` (NULL with an exception set on failure): one
/// allocation and one copy into its 1-byte data area.
///
/// # Safety
/// `s` is ASCII (checked by the caller); the GIL is held.
#[inline(always)]
pub unsafe fn new_ascii_str(s: &[u8]) -> *mut ffi::PyObject {
    let p = ffi::PyUnicode_New(s.len() as ffi::Py_ssize_t, 127);
    if !p.is_null() {
        std::ptr::copy_nonoverlapping(s.as_ptr(), ffi::PyUnicode_1BYTE_DATA(p), s.len());
    }
    p
}

/// The text of a compact ASCII str (which is also its UTF-8), read in place; `None` for
/// every other str (read it with `PyUnicode_AsUTF8AndSize`). Public, non-limited API.
///
/// # Safety
/// `p` is a live exact str and the GIL is held; the slice lives as long as the str.
#[inline(always)]
pub unsafe fn ascii_text<'a>(p: *mut ffi::PyObject) -> Option<&'a [u8]> {
    if ffi::PyUnicode_IS_COMPACT_ASCII(p) == 0 {
        return None;
    }
    let n = ffi::PyUnicode_GET_LENGTH(p) as usize;
    Some(std::slice::from_raw_parts(
        ffi::PyUnicode_DATA(p).cast::<u8>(),
        n,
    ))
}

/// Whether the calling thread (which holds the GIL) is the only thread state of its
/// interpreter. Every thread that runs Python has one, made before it first asks for the
/// GIL (`threading` makes it in the starting thread, under the GIL); a thread of C code
/// that is adding its own meanwhile (`PyGILState_Ensure`) only waits for this call as it
/// would behind any other one.
#[inline(always)]
fn only_thread() -> bool {
    // SAFETY: the GIL is held, so the interpreter and its state list are live; the list is
    // read, never changed (the public calls debuggers and faulthandler use). pyo3 refuses
    // to import this module in a subinterpreter, so this thread's is the main one.
    unsafe {
        let head = ffi::PyInterpreterState_ThreadHead(ffi::PyInterpreterState_Main());
        ffi::PyThreadState_Next(head).is_null()
    }
}

/// Runs `f` with the GIL released, as `Python::detach` does but without its bookkeeping
/// (pyo3's attach count, its pending reference counts), which costs about 50 instructions
/// a call, a call it makes out of line: for the copies and checks of large `loads` inputs
/// and outputs. The GIL is taken back when `f` returns or unwinds.
///
/// `f` must be plain Rust work that never touches Python (no pyo3 call at all: pyo3 still
/// counts this thread as attached while it runs); `Send` keeps Python objects out of its
/// captures.
///
/// A thread that is the interpreter's only one keeps the GIL: nobody could take it, and
/// handing it over and back costs several hundred instructions (about as much as a 1 MB
/// `loads` does besides its copy).
#[inline(always)]
pub fn without_gil<T>(_py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    if only_thread() {
        return f();
    }
    struct Reattach(*mut ffi::PyThreadState);
    impl Drop for Reattach {
        #[inline(always)]
        fn drop(&mut self) {
            // SAFETY: the thread state this thread released below, taken back once.
            unsafe { ffi::PyEval_RestoreThread(self.0) }
        }
    }
    // SAFETY: the GIL is held (`_py`); it is released here and taken back by the guard,
    // on return and on unwinding alike, and `f` never touches Python meanwhile (above).
    let _guard = Reattach(unsafe { ffi::PyEval_SaveThread() });
    f()
}

// ---- bytes written in place ----

/// The writer storage of a bytes object being filled (see [`bytes_writer`]).
static BYTES_STORAGE: bytewright_graph::Storage = bytewright_graph::Storage {
    grow: grow_bytes,
    release: release_bytes,
};

/// Grows the bytes object `*ctx` to at least `min_cap` bytes (`_PyBytes_Resize`, which
/// keeps its content; it may move).
///
/// # Safety
/// `*ctx` is a bytes object only the writer references, and the GIL is held.
unsafe fn grow_bytes(
    ctx: &mut *mut (),
    _len: usize,
    min_cap: usize,
) -> (std::ptr::NonNull<u8>, usize) {
    let mut obj = ctx.cast::<ffi::PyObject>();
    // SAFETY: an unshared bytes object (the caller's guarantee); on failure it is freed.
    if unsafe { _PyBytes_Resize(&mut obj, min_cap as ffi::Py_ssize_t) } != 0 {
        // A writer cannot report failure: unwind to the entry point, which raises the
        // MemoryError set by `_PyBytes_Resize` (see `fastcall::OutOfMemory`). The object
        // is already freed, so the writer is left holding none. No panic hook runs.
        *ctx = std::ptr::null_mut();
        std::panic::resume_unwind(Box::new(crate::fastcall::OutOfMemory));
    }
    *ctx = obj.cast();
    // SAFETY: a live bytes object of min_cap bytes.
    (unsafe { bytes_data(obj) }, min_cap)
}

/// Releases the bytes object of a writer dropped before its record was taken (none after
/// a failed [`grow_bytes`]).
///
/// # Safety
/// `ctx` is NULL or a bytes object only the writer references, and the GIL is held.
unsafe fn release_bytes(ctx: *mut ()) {
    // SAFETY: the writer's own (only) reference, if any.
    unsafe { ffi::Py_XDECREF(ctx.cast()) }
}

/// Where a bytes object's data starts.
///
/// # Safety
/// `obj` is a live bytes object.
#[inline(always)]
unsafe fn bytes_data(obj: *mut ffi::PyObject) -> std::ptr::NonNull<u8> {
    // SAFETY: a bytes object's data is never NULL.
    unsafe { std::ptr::NonNull::new_unchecked(ffi::PyBytes_AS_STRING(obj).cast_mut().cast::<u8>()) }
}

/// A writer that builds its record in a new bytes object of `cap` bytes, with `head` bytes
/// kept for the header; `None` on the portable path (or if the object cannot be made:
/// the caller's own buffer then reports the lack of memory as it would have).
/// [`bytes_result`] turns the finished writer into the object.
#[inline(always)]
pub fn bytes_writer(_py: Python<'_>, cap: usize, head: usize) -> Option<bytewright_graph::Writer> {
    if !BYTES_IN_PLACE.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: a new, uninitialised bytes object (at least 2 bytes: never a shared empty or
    // one-byte object), referenced by the writer alone; the GIL is held (`_py`).
    unsafe {
        let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), cap as ffi::Py_ssize_t);
        if obj.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(bytewright_graph::Writer::external(
            bytes_data(obj),
            cap,
            &BYTES_STORAGE,
            obj.cast(),
            head,
        ))
    }
}

/// [`bytes_writer`] in two steps, so that the writer can be built where it is used: a new
/// bytes object of `cap` bytes for a writer (NULL, with no exception set, on the portable
/// path or if it cannot be made), then [`bytes_object_writer`] over it.
#[inline(always)]
pub fn bytes_for_writer(_py: Python<'_>, cap: usize) -> *mut ffi::PyObject {
    if !BYTES_IN_PLACE.load(Ordering::Relaxed) {
        return std::ptr::null_mut();
    }
    // SAFETY: plain constructor; the GIL is held (`_py`).
    let obj = unsafe { ffi::PyBytes_FromStringAndSize(std::ptr::null(), cap as ffi::Py_ssize_t) };
    if obj.is_null() {
        // SAFETY: the GIL is held.
        unsafe { ffi::PyErr_Clear() };
    }
    obj
}

/// The writer of [`bytes_writer`] over `obj`, from [`bytes_for_writer`].
///
/// # Safety
/// `obj` is a non-NULL result of `bytes_for_writer(cap)`, given to the writer alone.
#[inline(always)]
pub unsafe fn bytes_object_writer(
    obj: *mut ffi::PyObject,
    cap: usize,
    head: usize,
) -> bytewright_graph::Writer {
    // SAFETY: as the caller guarantees (see `bytes_writer`).
    unsafe {
        bytewright_graph::Writer::external(bytes_data(obj), cap, &BYTES_STORAGE, obj.cast(), head)
    }
}

/// The bytes object of a finished [`bytes_writer`] writer, cut to the bytes written (only
/// its size is set when little would be freed: reallocating costs more than the spare
/// room); NULL with an exception set on failure. `None` for a writer with a buffer of
/// its own.
#[inline(always)]
pub fn bytes_result(
    _py: Python<'_>,
    w: &mut bytewright_graph::Writer,
) -> Option<*mut ffi::PyObject> {
    let (obj, len) = w.take_external()?;
    let obj = obj.cast::<ffi::PyObject>();
    // SAFETY: the writer's bytes object, now ours alone; `len` of its bytes are written.
    unsafe {
        let cap = ffi::Py_SIZE(obj) as usize;
        let spare = cap - len;
        // Tested in turn, the second only when the first holds (most records leave
        // little room: one compare and branch).
        if spare > 256 {
            return Some(cut_bytes(obj, len, spare));
        }
        // The size a bytes object reports, and its terminating NUL, as
        // `_PyBytes_Resize` would set them (its hash is not computed yet).
        (*obj.cast::<ffi::PyVarObject>()).ob_size = len as ffi::Py_ssize_t;
        *bytes_data(obj).as_ptr().add(len) = 0;
    }
    Some(obj)
}

/// [`bytes_result`] of a bytes object with more than 256 bytes of room beyond the `len`
/// written: reallocated to `len` if that frees more than an eighth of it, else only cut.
///
/// # Safety
/// As in `bytes_result`: `obj` is a bytes object only we reference, `len` of its bytes
/// written, `spare` more unused.
#[cold]
#[inline(never)]
unsafe fn cut_bytes(mut obj: *mut ffi::PyObject, len: usize, spare: usize) -> *mut ffi::PyObject {
    // SAFETY: as the caller guarantees.
    unsafe {
        if spare > len / 8 {
            if _PyBytes_Resize(&mut obj, len as ffi::Py_ssize_t) != 0 {
                return std::ptr::null_mut();
            }
        } else {
            (*obj.cast::<ffi::PyVarObject>()).ob_size = len as ffi::Py_ssize_t;
            *bytes_data(obj).as_ptr().add(len) = 0;
        }
    }
    obj
}

// ---- classes ----

/// The names a class statement (and `declare`) puts in a Struct class's namespace that no
/// type slot reads (besides the fields' `__slots__` and plain attributes); `__init__` is
/// wired to `tp_init` after the class is made.
const PLAIN_DUNDERS: [&str; 7] = [
    "__module__",
    "__qualname__",
    "__doc__",
    "__slots__",
    "__annotations__",
    "__match_args__",
    "__bw__",
];

/// `type.__new__(meta, name, bases, ns)`: a new class. On CPython 3.11 a Struct class (see
/// the module comment for which) is made from a spec, at a third of the cost; anything else,
/// and every class on the portable path, goes to `type.__new__`, which also reports every
/// error.
#[pyfunction]
pub fn new_class<'py>(
    meta: &Bound<'py, PyType>,
    name: &Bound<'py, PyAny>,
    bases: &Bound<'py, PyAny>,
    ns: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = meta.py();
    if CLASS_FROM_SPEC.load(Ordering::Relaxed) {
        if let Some(cls) = class_from_spec(meta, name, bases, ns)? {
            CLASSES_FROM_SPEC.fetch_add(1, Ordering::Relaxed);
            return Ok(cls);
        }
    }
    py.get_type::<PyType>()
        .call_method1(pyo3::intern!(py, "__new__"), (meta, name, bases, ns))
}

/// [`new_class`] from a spec, or `None` when the class is not one this path makes exactly
/// as `type.__new__` would.
fn class_from_spec<'py>(
    meta: &Bound<'py, PyType>,
    name: &Bound<'py, PyAny>,
    bases: &Bound<'py, PyAny>,
    ns: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    use pyo3::types::{PyString, PyTuple};
    let py = meta.py();
    let (Ok(name), Ok(bases), Ok(ns)) = (
        name.cast_exact::<PyString>(),
        bases.cast_exact::<PyTuple>(),
        ns.cast_exact::<PyDict>(),
    ) else {
        return Ok(None);
    };
    let (Ok(base), 1) = (bases.get_item(0), bases.len()) else {
        return Ok(None);
    };
    let Ok(base) = base.cast_into::<PyType>() else {
        return Ok(None);
    };
    let type_type = std::ptr::addr_of_mut!(ffi::PyType_Type);
    let (mt, bt) = (meta.as_type_ptr(), base.as_type_ptr());
    // SAFETY: `mt` and `bt` are live types (held by `meta` and `base`); reading their slots
    // and looking names up along their MROs (borrowed results, no code runs).
    let fits = unsafe {
        let heap = ffi::Py_TPFLAGS_HEAPTYPE | ffi::Py_TPFLAGS_BASETYPE | ffi::Py_TPFLAGS_HAVE_GC;
        (*mt).tp_basicsize == (*type_type).tp_basicsize
            && (*mt).tp_itemsize == (*type_type).tp_itemsize
            && ffi::PyType_IsSubtype(mt, type_type) != 0
            && _PyType_Lookup(mt, pyo3::intern!(py, "mro").as_ptr())
                == _PyType_Lookup(type_type, pyo3::intern!(py, "mro").as_ptr())
            && (*bt).tp_flags & heap == heap
            && (*bt).tp_itemsize == 0
            && (*bt).tp_dictoffset == 0
            && (*bt).tp_weaklistoffset == 0
            && (*bt).tp_dealloc.is_some()
            && (*bt).tp_traverse.is_some()
            && (*bt).tp_clear.is_some()
            && _PyType_Lookup(bt, pyo3::intern!(py, "__init_subclass__").as_ptr())
                == _PyType_Lookup(
                    std::ptr::addr_of_mut!(ffi::PyBaseObject_Type),
                    pyo3::intern!(py, "__init_subclass__").as_ptr(),
                )
    };
    if !fits {
        return Ok(None);
    }
    // The namespace: exact str keys; dunders only those no slot reads (and `__init__`); no
    // value with a `__set_name__`; `__slots__` a tuple of plain names none of which is a
    // key; `__qualname__` a str.
    let (Some(qualname), Some(slots)) = (
        ns.get_item(pyo3::intern!(py, "__qualname__"))?,
        ns.get_item(pyo3::intern!(py, "__slots__"))?,
    ) else {
        return Ok(None);
    };
    let (Ok(qualname), Ok(slots)) = (
        qualname.cast_into_exact::<PyString>(),
        slots.cast_into_exact::<PyTuple>(),
    ) else {
        return Ok(None);
    };
    if ns.get_item(pyo3::intern!(py, "__module__"))?.is_none() {
        return Ok(None);
    }
    let mut init = None;
    let mut named = Vec::new();
    let set_name = pyo3::intern!(py, "__set_name__");
    for (k, v) in ns.iter() {
        let Ok(k) = k.cast_into_exact::<PyString>() else {
            return Ok(None);
        };
        // A name that is not valid UTF-8 (a lone surrogate) is left to `type.__new__`.
        let Ok(key) = k.to_str() else {
            return Ok(None);
        };
        if key.starts_with("__") && key.ends_with("__") {
            if key == "__init__" {
                init = Some(v.clone());
            } else if !PLAIN_DUNDERS.contains(&key) {
                return Ok(None);
            }
        }
        // SAFETY: `v` is live; a borrowed result, no code runs.
        if !unsafe { _PyType_Lookup(ffi::Py_TYPE(v.as_ptr()), set_name.as_ptr()) }.is_null() {
            // A property only records its name (and cannot fail); any other is left to
            // `type.__new__`, which reports its errors its own way.
            if v.get_type().as_type_ptr() != std::ptr::addr_of_mut!(ffi::PyProperty_Type) {
                return Ok(None);
            }
            named.push((k.clone(), v.clone()));
        }
    }
    let mut names: Vec<Bound<'py, PyString>> = Vec::with_capacity(slots.len());
    for s in slots.iter() {
        let Ok(s) = s.cast_into_exact::<PyString>() else {
            return Ok(None);
        };
        let Ok(t) = s.to_str() else {
            return Ok(None);
        };
        // SAFETY: `s` is a live str.
        if t.starts_with("__")
            || unsafe { ffi::PyUnicode_IsIdentifier(s.as_ptr()) } != 1
            || ns.contains(&s)?
        {
            return Ok(None);
        }
        names.push(s);
    }
    // `type.__new__` sorts the slots (by code point) and lays them out in that order.
    names.sort_by(|a, b| a.to_str().unwrap_or("").cmp(b.to_str().unwrap_or("")));
    if names
        .windows(2)
        .any(|w| w[0].to_str().ok() == w[1].to_str().ok())
    {
        return Ok(None);
    }
    let sorted = PyTuple::new(py, &names)?;
    // `tp_doc`, as `type.__new__` sets it from a str docstring; one no C string holds (a
    // lone surrogate, which `type.__new__` refuses, or a NUL) is left to `type.__new__`.
    let doc = match ns.get_item(pyo3::intern!(py, "__doc__"))? {
        Some(d) => match d.cast_into_exact::<PyString>() {
            Ok(d) => match d.to_str().ok().and_then(|t| std::ffi::CString::new(t).ok()) {
                Some(c) => Some(c),
                None => return Ok(None),
            },
            Err(_) => None,
        },
        None => None,
    };
    // SAFETY: `bt` is live.
    let base_size = unsafe { (*bt).tp_basicsize };
    let word = std::mem::size_of::<*mut ffi::PyObject>() as ffi::Py_ssize_t;
    let mut members: Vec<ffi::PyMemberDef> = Vec::with_capacity(names.len() + 1);
    for (i, n) in sorted.iter().enumerate() {
        // SAFETY: `n` is an exact str held by `sorted` (kept as the class's `ht_slots`), so its
        // cached UTF-8 lives as long as the class.
        let utf8 = unsafe { ffi::PyUnicode_AsUTF8(n.as_ptr()) };
        if utf8.is_null() {
            return Err(PyErr::fetch(py));
        }
        members.push(ffi::PyMemberDef {
            name: utf8,
            type_code: ffi::Py_T_OBJECT_EX,
            offset: base_size + word * i as ffi::Py_ssize_t,
            flags: 0,
            doc: std::ptr::null(),
        });
    }
    members.push(ffi::PyMemberDef {
        name: std::ptr::null(),
        type_code: 0,
        offset: 0,
        flags: 0,
        doc: std::ptr::null(),
    });
    // SAFETY: `bt` is live; its slot functions are copied as they are.
    let mut spec_slots = unsafe {
        vec![
            ffi::PyType_Slot {
                slot: ffi::Py_tp_members,
                pfunc: members.as_mut_ptr().cast(),
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_dealloc,
                pfunc: (*bt)
                    .tp_dealloc
                    .map_or(std::ptr::null_mut(), |f| f as *mut _),
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_traverse,
                pfunc: (*bt)
                    .tp_traverse
                    .map_or(std::ptr::null_mut(), |f| f as *mut _),
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_clear,
                pfunc: (*bt).tp_clear.map_or(std::ptr::null_mut(), |f| f as *mut _),
            },
        ]
    };
    if let Some(doc) = &doc {
        spec_slots.push(ffi::PyType_Slot {
            slot: ffi::Py_tp_doc,
            pfunc: doc.as_ptr() as *mut _,
        });
    }
    spec_slots.push(ffi::PyType_Slot {
        slot: 0,
        pfunc: std::ptr::null_mut(),
    });
    // A dotted name (one without a dot warns); name, module and qualified name are set below.
    let spec_name = c"bytewright.Struct";
    let mut spec = ffi::PyType_Spec {
        name: spec_name.as_ptr(),
        basicsize: (base_size + word * names.len() as ffi::Py_ssize_t) as c_int,
        itemsize: 0,
        flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_BASETYPE | ffi::Py_TPFLAGS_HAVE_GC)
            as std::os::raw::c_uint,
        slots: spec_slots.as_mut_ptr(),
    };
    // SAFETY: the spec, its slots and members are live for the call (the members are copied
    // into the new type; their names live in `sorted`, kept below). The new type is then
    // completed before any other code sees it: its metaclass (allocated as a `type`, whose
    // instance size the metaclass shares, checked above; a reference of its own, as
    // `type.__new__` takes), its names (`tp_name` pointed at the spec's name until now),
    // `ht_slots`, and its namespace.
    unsafe {
        let cls = ffi::PyType_FromSpecWithBases(&mut spec, bases.as_ptr());
        if cls.is_null() {
            return Err(PyErr::fetch(py));
        }
        let cls = Bound::from_owned_ptr(py, cls);
        let ht = cls.as_ptr().cast::<ffi::PyHeapTypeObject>();
        ffi::Py_INCREF(mt.cast());
        (*cls.as_ptr()).ob_type = mt;
        let utf8 = ffi::PyUnicode_AsUTF8(name.as_ptr());
        if utf8.is_null() {
            return Err(PyErr::fetch(py));
        }
        let old = (*ht).ht_name;
        (*ht).ht_name = name.clone().into_ptr();
        (*ht).ht_type.tp_name = utf8;
        ffi::Py_XDECREF(old);
        let old = (*ht).ht_qualname;
        (*ht).ht_qualname = qualname.into_ptr();
        ffi::Py_XDECREF(old);
        let old = (*ht).ht_slots;
        (*ht).ht_slots = sorted.into_ptr();
        ffi::Py_XDECREF(old);
        // The namespace in `type.__new__`'s order: the class body's names (but
        // `__qualname__`), then the slots' descriptors, then `__doc__` if the body had none.
        let dict = Bound::from_borrowed_ptr(py, (*ht).ht_type.tp_dict).cast_into::<PyDict>()?;
        let mut descriptors = Vec::with_capacity(names.len());
        for n in &names {
            descriptors.push((n, dict.get_item(n)?));
        }
        dict.clear();
        let qualname_key = pyo3::intern!(py, "__qualname__");
        for (k, v) in ns.iter() {
            if k.as_ptr() != qualname_key.as_ptr() && !k.eq(qualname_key)? {
                dict.set_item(k, v)?;
            }
        }
        for (n, d) in descriptors {
            let Some(d) = d else {
                return Err(pyo3::exceptions::PySystemError::new_err(
                    "a slot has no descriptor",
                ));
            };
            dict.set_item(n, d)?;
        }
        if !ns.contains(pyo3::intern!(py, "__doc__"))? {
            dict.set_item(pyo3::intern!(py, "__doc__"), py.None())?;
        }
        ffi::PyType_Modified(cls.as_ptr().cast());
        for (k, v) in named {
            v.call_method1(set_name, (&cls, k))?;
        }
        if let Some(init) = init {
            let setattr = (*type_type).tp_setattro.expect("type has tp_setattro");
            if setattr(
                cls.as_ptr(),
                pyo3::intern!(py, "__init__").as_ptr(),
                init.as_ptr(),
            ) < 0
            {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(Some(cls))
    }
}

/// How many classes [`new_class`] has made from a spec in this process.
#[pyfunction]
fn classes_from_spec() -> usize {
    CLASSES_FROM_SPEC.load(Ordering::Relaxed)
}

/// What a test compares between a class `new_class` made from a spec and one
/// `type.__new__` made from the same namespace: its metaclass, flags, sizes, offsets, every
/// slot function and the slot tables, as integers.
#[pyfunction]
fn class_layout<'py>(cls: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyDict>> {
    let py = cls.py();
    let d = PyDict::new(py);
    let t = cls.as_type_ptr();
    macro_rules! f {
        ($($name:ident),*) => {
            // SAFETY: `t` is a live type; only addresses and numbers are read.
            unsafe { $( d.set_item(stringify!($name), (*t).$name.map_or(0usize, |f| f as usize))?; )* }
        };
    }
    // SAFETY: as above.
    unsafe {
        d.set_item("ob_type", ffi::Py_TYPE(t.cast()) as usize)?;
        d.set_item("tp_flags", (*t).tp_flags)?;
        d.set_item("tp_basicsize", (*t).tp_basicsize)?;
        d.set_item("tp_itemsize", (*t).tp_itemsize)?;
        d.set_item("tp_dictoffset", (*t).tp_dictoffset)?;
        d.set_item("tp_weaklistoffset", (*t).tp_weaklistoffset)?;
        d.set_item("tp_vectorcall_offset", (*t).tp_vectorcall_offset)?;
        d.set_item("tp_base", (*t).tp_base as usize)?;
        d.set_item(
            "tp_name",
            std::ffi::CStr::from_ptr((*t).tp_name)
                .to_string_lossy()
                .into_owned(),
        )?;
        // The slot tables, byte for byte (their function addresses).
        let heap = t.cast::<ffi::PyHeapTypeObject>();
        let tables: [(&str, *const u8, usize); 5] = [
            (
                "as_number",
                (&raw const (*heap).as_number).cast(),
                size_of::<ffi::PyNumberMethods>(),
            ),
            (
                "as_mapping",
                (&raw const (*heap).as_mapping).cast(),
                size_of::<ffi::PyMappingMethods>(),
            ),
            (
                "as_sequence",
                (&raw const (*heap).as_sequence).cast(),
                size_of::<ffi::PySequenceMethods>(),
            ),
            (
                "as_async",
                (&raw const (*heap).as_async).cast(),
                size_of::<ffi::PyAsyncMethods>(),
            ),
            (
                "as_buffer",
                (&raw const (*heap).as_buffer).cast(),
                size_of::<ffi::PyBufferProcs>(),
            ),
        ];
        for (name, p, n) in tables {
            d.set_item(name, PyBytes::new(py, std::slice::from_raw_parts(p, n)))?;
        }
        d.set_item(
            "ht_slots",
            Bound::from_borrowed_ptr_or_opt(py, (*heap).ht_slots),
        )?;
        let n = ffi::Py_SIZE(t.cast());
        let members = (*t).tp_members;
        let mut m = Vec::new();
        if !members.is_null() {
            let mut i = 0;
            while !(*members.add(i)).name.is_null() {
                let e = &*members.add(i);
                m.push((
                    std::ffi::CStr::from_ptr(e.name)
                        .to_string_lossy()
                        .into_owned(),
                    e.type_code,
                    e.offset,
                    e.flags,
                ));
                i += 1;
            }
        }
        d.set_item("members", m)?;
        d.set_item("ob_size", n)?;
    }
    f!(
        tp_dealloc,
        tp_getattr,
        tp_setattr,
        tp_repr,
        tp_hash,
        tp_call,
        tp_str,
        tp_getattro,
        tp_setattro,
        tp_traverse,
        tp_clear,
        tp_richcompare,
        tp_iter,
        tp_iternext,
        tp_descr_get,
        tp_descr_set,
        tp_init,
        tp_alloc,
        tp_new,
        tp_free,
        tp_is_gc,
        tp_del,
        tp_finalize,
        tp_vectorcall
    );
    Ok(d)
}
