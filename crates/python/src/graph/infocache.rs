//! What `describe(cls)` said about the classes recently used, so a small payload does not
//! pay a Python call (and five attribute reads) per class per `dumps` or `loads`.
//!
//! The cache holds only weak references (to the class and to its ClassInfo), is keyed by
//! the caller's classes (never by anything read from the input) and is bounded. A
//! ClassInfo is immutable once built, and `describe` keeps one per class for the class's
//! lifetime, so a hit gives exactly what calling `describe` again would.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytewright_graph::writer::{class_definition, ClassDefinition};
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
    pub version: u64,
    /// Declared fields; `None`: any attribute.
    pub declared: Option<Vec<Bound<'py, PyString>>>,
    /// Its pickling hooks (`ClassInfo.setstate`, `getstate`, `restores`): it defines
    /// `__setstate__` (loads_pickle calls it); bytewright.pickle writes its `__getstate__`
    /// and restores through its `__setstate__` (both the user's own).
    pub setstate: bool,
    pub restores: bool,
    /// The builtin type it subclasses (its name), if any.
    pub builtin_base: Option<String>,
}

/// What the encoder needs of a class, shared by every `dumps` that meets it (no
/// allocation per call).
pub struct Facts {
    pub kind: u8,
    pub name: String,
    pub version: u64,
    pub has_dict: bool,
    /// Declared fields; `None`: any attribute.
    pub declared: Option<Vec<Py<PyString>>>,
    /// The class definition of a record holding exactly the declared fields, in order
    /// (`None` when the class declares none, or a name is not valid UTF-8).
    pub definition: Option<ClassDefinition>,
    /// Its slots (mangled names), also when it has a `__dict__` too.
    pub slots: Vec<Py<PyString>>,
    /// See [`Described`].
    pub setstate: bool,
    pub getstate: bool,
    pub restores: bool,
    pub builtin_base: Option<String>,
}

struct Entry {
    /// The class's address: compared before its weak reference is read, so a lookup
    /// reads the weak reference of the one entry that may be its class's, not of each.
    addr: usize,
    cls: Py<PyWeakrefReference>,
    info: Py<PyWeakrefReference>,
    facts: Rc<Facts>,
    /// The encoder found this class to be written as a class of yours (not a builtin,
    /// not one of the standard library's reducers) when the reducers table held this many
    /// entries (see [`plain_facts`]); -1: not yet.
    plain: Cell<isize>,
}

/// The cache. A plain static rather than a thread-local (which costs a call to find on
/// every lookup): it is only touched with the GIL held (see [`with_cache`]), so no two
/// threads touch it at once, and the `Rc`s it shares are only cloned and dropped so.
struct Cache(RefCell<Vec<Entry>>);

// SAFETY: only reached through `with_cache`, which needs the GIL held.
unsafe impl Sync for Cache {}

static CACHE: Cache = Cache(RefCell::new(Vec::new()));

/// Runs `f` on the cache; `_py` proves the GIL is held.
#[inline(always)]
fn with_cache<R>(_py: Python<'_>, f: impl FnOnce(&RefCell<Vec<Entry>>) -> R) -> R {
    f(&CACHE.0)
}

/// `describe(cls)`, from the cache when both the class and its ClassInfo are alive.
pub fn describe<'py>(cfg: &Config, cls: &Bound<'py, PyType>) -> PyResult<Described<'py>> {
    let (info, facts) = described(cfg, cls)?;
    let py = cls.py();
    Ok(Described {
        info,
        kind: facts.kind,
        version: facts.version,
        declared: facts
            .declared
            .as_ref()
            .map(|d| d.iter().map(|n| n.bind(py).clone()).collect()),
        setstate: facts.setstate,
        restores: facts.restores,
        builtin_base: facts.builtin_base.clone(),
    })
}

/// The encoder's view of `describe(cls)`: shared, and built once per class.
pub fn facts(cfg: &Config, cls: &Bound<'_, PyType>) -> PyResult<Rc<Facts>> {
    described(cfg, cls).map(|(_, facts)| facts)
}

fn described<'py>(
    cfg: &Config,
    cls: &Bound<'py, PyType>,
) -> PyResult<(Bound<'py, PyAny>, Rc<Facts>)> {
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
    let definition = declared.as_ref().and_then(|names| {
        let utf8: Vec<&str> = names
            .iter()
            .map(|n| n.to_str().ok())
            .collect::<Option<_>>()?;
        Some(class_definition(
            name.as_bytes(),
            version,
            utf8.iter().map(|n| n.as_bytes()),
        ))
    });
    let facts = Rc::new(Facts {
        kind,
        name,
        version,
        has_dict,
        declared: declared.map(|d| d.into_iter().map(Bound::unbind).collect()),
        definition,
        slots: slots.into_iter().map(Bound::unbind).collect(),
        setstate,
        getstate,
        restores,
        builtin_base,
    });
    put(cls, &info, &facts);
    Ok((info, facts))
}

fn get<'py>(cls: &Bound<'py, PyType>) -> Option<(Bound<'py, PyAny>, Rc<Facts>)> {
    let py = cls.py();
    with_cache(py, |cache| {
        // Upgrading weak references and cloning references run no Python code (the
        // temporary strong references never drop an object to zero: each referent is
        // alive, held elsewhere), so this borrow cannot be re-entered.
        let cache = cache.try_borrow().ok()?;
        let addr = cls.as_ptr() as usize;
        for e in cache.iter().filter(|e| e.addr == addr) {
            let Some(c) = e.cls.bind(py).upgrade() else {
                continue;
            };
            if !c.is(cls) {
                continue;
            }
            let info = e.info.bind(py).upgrade()?;
            return Some((info, Rc::clone(&e.facts)));
        }
        None
    })
}

/// Remembers a description; drops dead entries and this class's old one, then the
/// oldest when full.
fn put(cls: &Bound<'_, PyType>, info: &Bound<'_, PyAny>, facts: &Rc<Facts>) {
    let py = cls.py();
    let (Ok(wcls), Ok(winfo)) = (PyWeakrefReference::new(cls), PyWeakrefReference::new(info))
    else {
        // Not weakly referenceable: simply not cached.
        drop(PyErr::take(py));
        return;
    };
    let entry = Entry {
        addr: cls.as_ptr() as usize,
        cls: wcls.unbind(),
        info: winfo.unbind(),
        facts: Rc::clone(facts),
        plain: Cell::new(-1),
    };
    // Entries removed here are dropped after the borrow ends: dropping a reference may
    // run arbitrary code (a weakref callback), which could re-enter this cache.
    let evicted: Vec<Entry> = with_cache(py, |cache| {
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

/// The facts of `cls` if the encoder marked it ([`mark_plain`]) as a class of yours while
/// the reducers table held `stamp` entries: its instances then go straight to the class
/// writer, past the checks for builtins and reducers (which depend on the class alone, and
/// on that table, to which the library only adds). `cls` is a live type the caller holds.
#[inline]
pub fn plain_facts(
    py: Python<'_>,
    cls: *mut pyo3::ffi::PyObject,
    stamp: isize,
) -> Option<Rc<Facts>> {
    with_cache(py, |cache| {
        // As in `get`: nothing here runs Python code.
        let cache = cache.try_borrow().ok()?;
        let addr = cls as usize;
        let e = cache
            .iter()
            .find(|e| e.addr == addr && e.plain.get() == stamp)?;
        // The entry is this class's only if its class is alive (a class that died may
        // have left its address to this one).
        let c = e.cls.bind(py).upgrade()?;
        if c.as_ptr() != cls {
            return None;
        }
        Some(Rc::clone(&e.facts))
    })
}

/// Marks `cls` (a live type) as a class of yours while the reducers table holds `stamp`
/// entries (see [`plain_facts`]); nothing if it has no cache entry.
pub fn mark_plain(cls: &Bound<'_, PyType>, stamp: isize) {
    let py = cls.py();
    with_cache(py, |cache| {
        let Ok(cache) = cache.try_borrow() else {
            return;
        };
        let addr = cls.as_ptr() as usize;
        for e in cache.iter().filter(|e| e.addr == addr) {
            if e.cls.bind(py).upgrade().is_some_and(|c| c.is(cls)) {
                e.plain.set(stamp);
            }
        }
    });
}
