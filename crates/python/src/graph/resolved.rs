//! Payload classes resolved against `classes=`, kept per thread: a `loads` that meets a
//! class definition this thread resolved before, against the same `classes=` tuple, finds
//! it with one comparison of the definition's bytes instead of a name lookup, a
//! `describe` and a comparison of the field names.
//!
//! Only an exact tuple is a key. The cache holds a reference to it, so its address is not
//! reused while it is a key, and neither it nor its classes can change meanwhile. The
//! class's ClassInfo is the one `describe` keeps for the class's lifetime (see
//! `infocache`), so a hit gives exactly what resolving again would.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};

/// A payload class resolved against `classes=`.
pub struct Resolved {
    pub info: Py<PyAny>,
    pub cls: Py<PyType>,
    pub kind: u8,
    /// The name the record gives.
    pub name: String,
    /// The version the record was written at.
    pub version: u64,
    /// The record's field names (the class's own interned strs when they match).
    pub names: Vec<Py<PyString>>,
    /// Same version and exactly the declared fields: set them directly.
    pub fast: bool,
    /// The version tag (`cpython::type_version`) `cls` had when none of its field names
    /// was an attribute of it or a base (0: not known to be so).
    pub no_class_attrs: TypeTag,
    /// The class defines `__setstate__`: its instances get their state through it, once
    /// the whole record has been read.
    pub setstate: bool,
    /// The builtin type it subclasses (its name), if any, and that type's `DERIVED` base
    /// code (0: none a record can hold).
    pub builtin_base: Option<String>,
    pub base_code: u8,
    /// The record its instances come in: `RECORD_OBJECT`, `RECORD_ENUM` or
    /// `RECORD_DERIVED` (builder.rs).
    pub record: u8,
}

/// A type version tag remembered in a [`Resolved`] (shared between threads through a
/// `Decoder`, so an atomic; every access is relaxed: a stale value only costs a lookup).
pub struct TypeTag(AtomicU32);

impl TypeTag {
    pub const fn new(tag: u32) -> Self {
        Self(AtomicU32::new(tag))
    }

    #[inline(always)]
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline(always)]
    pub fn set(&self, tag: u32) {
        self.0.store(tag, Ordering::Relaxed);
    }
}

/// Definitions kept per thread; the oldest goes first.
const CAPACITY: usize = 16;

/// Definitions longer than this are resolved per call, not kept.
const KEEP_DEFINITION_MAX: usize = 4096;

struct Entry {
    classes: Py<PyAny>,
    encoded: Box<[u8]>,
    resolved: Arc<Resolved>,
}

thread_local! {
    static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Whether resolutions against `classes` may be kept (an exact tuple).
pub fn keyable(classes: &Bound<'_, PyAny>) -> bool {
    classes.is_exact_instance_of::<PyTuple>()
}

/// The class this thread resolved for the definition `encoded` against `classes`.
pub fn get(classes: &Bound<'_, PyAny>, encoded: &[u8]) -> Option<Arc<Resolved>> {
    let key = classes.as_ptr();
    CACHE
        .try_with(|cache| {
            // Comparing pointers and bytes and cloning an Arc run no Python code, so this
            // borrow cannot be re-entered.
            let cache = cache.try_borrow().ok()?;
            cache
                .iter()
                .rev()
                .find(|e| e.classes.as_ptr() == key && *e.encoded == *encoded)
                .map(|e| Arc::clone(&e.resolved))
        })
        .ok()
        .flatten()
}

/// Keeps `resolved` for the definition `encoded` against `classes` (an exact tuple).
pub fn put(classes: &Bound<'_, PyAny>, encoded: &[u8], resolved: &Arc<Resolved>) {
    if encoded.len() > KEEP_DEFINITION_MAX {
        return;
    }
    let entry = Entry {
        classes: classes.clone().unbind(),
        encoded: encoded.into(),
        resolved: Arc::clone(resolved),
    };
    // An entry removed here is dropped after the borrow ends: dropping the last reference
    // to a tuple may run arbitrary code, which could re-enter this cache.
    let evicted = CACHE.try_with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return Some(entry);
        };
        let old = (cache.len() >= CAPACITY).then(|| cache.remove(0));
        cache.push(entry);
        old
    });
    drop(evicted);
}
