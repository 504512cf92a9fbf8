//! What `describe(cls)` said about the classes recently used, so a small payload does not
//! pay a Python call (and five attribute reads) per class per `dumps` or `loads`.
//!
//! The cache holds only weak references (to the class and to its ClassInfo), is keyed by
//! the caller's classes (never by anything read from the input) and is bounded. A
//! ClassInfo is immutable once built, and `describe` keeps one per class for the class's
//! lifetime, so a hit gives exactly what calling `describe` again would.

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyType, PyWeakrefMethods, PyWeakrefReference};

use super::config::Config;

const CAPACITY: usize = 32;

// Where a class keeps its state: `ClassInfo.kind`. Defined here only; `_native` exports
// them and `bytewright.pickle._classes` imports them from there.
/// In the instance `__dict__`.
pub const KIND_DICT: u8 = 1;
/// In slots (and maybe a `__dict__` too).
pub const KIND_SLOTS: u8 = 2;
/// A namedtuple / `typing.NamedTuple`.
pub const KIND_TUPLE: u8 = 3;
/// Enum members, written by name.
pub const KIND_ENUM: u8 = 4;

/// Adds the kinds to the module, for `bytewright.pickle._classes`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("KIND_DICT", KIND_DICT)?;
    m.add("KIND_SLOTS", KIND_SLOTS)?;
    m.add("KIND_TUPLE", KIND_TUPLE)?;
    m.add("KIND_ENUM", KIND_ENUM)?;
    Ok(())
}

/// The parts of a ClassInfo the native code reads.
pub struct Described<'py> {
    pub info: Bound<'py, PyAny>,
    pub kind: u8,
    pub name: String,
    pub version: u64,
    pub has_dict: bool,
    /// Declared fields; `None`: any attribute.
    pub declared: Option<Vec<Bound<'py, PyString>>>,
    /// Its slots (mangled names), also when it has a `__dict__` too.
    pub slots: Vec<Bound<'py, PyString>>,
    /// Its pickling hooks (`ClassInfo.setstate`, `getstate`, `restores`): it defines
    /// `__setstate__` (loads_pickle calls it); bytewright.pickle writes its `__getstate__`
    /// and restores through its `__setstate__` (both the user's own).
    pub setstate: bool,
    pub getstate: bool,
    pub restores: bool,
    /// The builtin type it subclasses (its name), if any.
    pub builtin_base: Option<String>,
}

struct Entry {
    cls: Py<PyWeakrefReference>,
    info: Py<PyWeakrefReference>,
    kind: u8,
    name: String,
    version: u64,
    has_dict: bool,
    declared: Option<Vec<Py<PyString>>>,
    slots: Vec<Py<PyString>>,
    setstate: bool,
    getstate: bool,
    restores: bool,
    builtin_base: Option<String>,
}

thread_local! {
    static CACHE: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// `describe(cls)`, from the cache when both the class and its ClassInfo are alive.
pub fn describe<'py>(cfg: &Config, cls: &Bound<'py, PyType>) -> PyResult<Described<'py>> {
    if let Some(hit) = get(cls) {
        return Ok(hit);
    }
    let py = cls.py();
    let info = cfg.describe.bind(py).call1((cls,))?;
    let kind: u8 = info.getattr("kind")?.extract()?;
    let name: String = info.getattr("name")?.extract()?;
    let version: u64 = info.getattr("version")?.extract()?;
    let has_dict: bool = info.getattr("has_dict")?.extract()?;
    let fields = info.getattr("fields")?;
    let declared: Option<Vec<Bound<'py, PyString>>> = if fields.is_none() {
        None
    } else {
        Some(fields.extract()?)
    };
    let slots: Vec<Bound<'py, PyString>> = info.getattr("slot_names")?.extract()?;
    let setstate: bool = info.getattr("setstate")?.extract()?;
    let getstate: bool = info.getattr("getstate")?.extract()?;
    let restores: bool = info.getattr("restores")?.extract()?;
    let base = info.getattr("builtin_base")?;
    let builtin_base = if base.is_none() {
        None
    } else {
        Some(base.getattr("__qualname__")?.extract()?)
    };
    let d = Described {
        info,
        kind,
        name,
        version,
        has_dict,
        declared,
        slots,
        setstate,
        getstate,
        restores,
        builtin_base,
    };
    put(cls, &d);
    Ok(d)
}

fn get<'py>(cls: &Bound<'py, PyType>) -> Option<Described<'py>> {
    let py = cls.py();
    CACHE.with(|cache| {
        // Upgrading weak references and cloning references run no Python code (the
        // temporary strong references never drop an object to zero: each referent is
        // alive, held elsewhere), so this borrow cannot be re-entered.
        let cache = cache.try_borrow().ok()?;
        for e in cache.iter() {
            let Some(c) = e.cls.bind(py).upgrade() else {
                continue;
            };
            if !c.is(cls) {
                continue;
            }
            let info = e.info.bind(py).upgrade()?;
            let declared = e
                .declared
                .as_ref()
                .map(|d| d.iter().map(|n| n.bind(py).clone()).collect());
            return Some(Described {
                info,
                kind: e.kind,
                name: e.name.clone(),
                version: e.version,
                has_dict: e.has_dict,
                declared,
                slots: e.slots.iter().map(|n| n.bind(py).clone()).collect(),
                setstate: e.setstate,
                getstate: e.getstate,
                restores: e.restores,
                builtin_base: e.builtin_base.clone(),
            });
        }
        None
    })
}

/// Remembers a description; drops dead entries and this class's old one, then the
/// oldest when full.
fn put(cls: &Bound<'_, PyType>, d: &Described<'_>) {
    let py = cls.py();
    let (Ok(wcls), Ok(winfo)) = (
        PyWeakrefReference::new(cls),
        PyWeakrefReference::new(&d.info),
    ) else {
        // Not weakly referenceable: simply not cached.
        drop(PyErr::take(py));
        return;
    };
    let entry = Entry {
        cls: wcls.unbind(),
        info: winfo.unbind(),
        kind: d.kind,
        name: d.name.clone(),
        version: d.version,
        has_dict: d.has_dict,
        declared: d
            .declared
            .as_ref()
            .map(|v| v.iter().map(|n| n.clone().unbind()).collect()),
        slots: d.slots.iter().map(|n| n.clone().unbind()).collect(),
        setstate: d.setstate,
        getstate: d.getstate,
        restores: d.restores,
        builtin_base: d.builtin_base.clone(),
    };
    // Entries removed here are dropped after the borrow ends: dropping a reference may
    // run arbitrary code (a weakref callback), which could re-enter this cache.
    let evicted: Vec<Entry> = CACHE.with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return vec![entry];
        };
        let mut evicted = Vec::new();
        let mut i = 0;
        while i < cache.len() {
            let keep = match (
                cache[i].cls.bind(py).upgrade(),
                cache[i].info.bind(py).upgrade(),
            ) {
                (Some(c), Some(_)) => !c.is(cls),
                _ => false,
            };
            if keep {
                i += 1;
            } else {
                evicted.push(cache.remove(i));
            }
        }
        if cache.len() >= CAPACITY {
            evicted.push(cache.remove(0));
        }
        cache.push(entry);
        evicted
    });
    drop(evicted);
}
