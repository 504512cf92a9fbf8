//! `loads_pickle`: standard pickle streams -> Python objects, through the checked program.
//!
//! The pure-Rust machine (`bytewright_graph::pickle`) validates the whole stream first;
//! only then does this adapter create objects, running the program on a value stack. Each
//! call it makes is one fixed operation chosen by the machine, never a payload callable.

use std::ptr::addr_of_mut;

use bytewright_graph::pickle::{
    self as core, globals::TABLE, Build, Call, ClassKind, Global, Instr,
};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

use super::classes::AllowedClasses;
use super::config::{self, Config};
use super::errors::{read_error, unpickling};

const KIND_DICT: u8 = 1;
const KIND_TUPLE: u8 = 3;
const KIND_ENUM: u8 = 4;

/// Python objects of the table globals and the slow-path helpers, from `_legacy.py`.
struct LegacyConfig {
    /// Parallel to `TABLE`; `None` for globals that are never called directly.
    objects: Vec<Option<Py<PyAny>>>,
    enum_member: Py<PyAny>,
    set_state: Py<PyAny>,
    uuid_state: Py<PyAny>,
    new_tuple: Py<PyAny>,
    /// `allow=` iterable -> dict.
    allow_map: Py<PyAny>,
}

static LEGACY: PyOnceLock<LegacyConfig> = PyOnceLock::new();

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(legacy_configure, m)?)?;
    m.add_function(wrap_pyfunction!(loads_pickle, m)?)?;
    m.add_function(wrap_pyfunction!(loads_pickle_at, m)?)?;
    m.add_function(wrap_pyfunction!(legacy_check, m)?)?;
    Ok(())
}

/// Called once by `bytewright.pickle._legacy` at import.
#[pyfunction]
fn legacy_configure(
    py: Python<'_>,
    objects: &Bound<'_, PyDict>,
    enum_member: Py<PyAny>,
    set_state: Py<PyAny>,
    uuid_state: Py<PyAny>,
    new_tuple: Py<PyAny>,
    allow_map: Py<PyAny>,
) -> PyResult<()> {
    let mut table = Vec::with_capacity(TABLE.len());
    for (module, name, _) in TABLE {
        table.push(
            objects
                .get_item(format!("{module}.{name}"))?
                .map(Bound::unbind),
        );
    }
    let _ = LEGACY.set(
        py,
        LegacyConfig {
            objects: table,
            enum_member,
            set_state,
            uuid_state,
            new_tuple,
            allow_map,
        },
    );
    Ok(())
}

fn legacy(py: Python<'_>) -> PyResult<&'static LegacyConfig> {
    LEGACY
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("import bytewright.pickle first"))
}

/// The declared field count and set of a class, `None` when any attribute is a field.
type DeclaredFields<'py> = Option<(usize, Bound<'py, PyAny>)>;

/// Resolves `classes=` and `allow=` names for the machine, lazily and without imports.
struct Resolver<'py> {
    cfg: &'static Config,
    classes: AllowedClasses<'py>,
    allow: Option<Bound<'py, PyDict>>,
    found: Vec<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)>,
    /// Per found class: `Some(declared field count or None)` when its state can be
    /// written straight into the instance `__dict__` (plain `__dict__` classes).
    dict_fields: Vec<Option<DeclaredFields<'py>>>,
    extras: Vec<Bound<'py, PyAny>>,
    names: Vec<String>,
    extra_names: Vec<String>,
    error: Option<PyErr>,
}

impl core::Resolve for &mut Resolver<'_> {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, core::ResolveFailed> {
        let full = format!("{module}.{name}");
        let r = (|| -> PyResult<Option<Global>> {
            if let Some(cls) = self.classes.get(self.cfg, &full)? {
                let py = cls.py();
                let info = self.cfg.describe.bind(py).call1((&cls,))?;
                let kind: u8 = info.getattr("kind")?.extract()?;
                let kind = match kind {
                    KIND_TUPLE => ClassKind::Tuple,
                    KIND_ENUM => ClassKind::Enum,
                    _ => ClassKind::Object,
                };
                let direct = if info.getattr("kind")?.extract::<u8>()? == KIND_DICT {
                    let set = info.getattr("field_set")?;
                    Some(if set.is_none() {
                        None
                    } else {
                        Some((set.len()?, set))
                    })
                } else {
                    None
                };
                self.dict_fields.push(direct);
                self.found.push((cls.into_any(), Some(info)));
                self.names.push(full);
                return Ok(Some(Global::Class(self.found.len() as u32 - 1, kind)));
            }
            if let Some(allow) = &self.allow {
                if let Some(obj) = allow.get_item(&full)? {
                    self.extras.push(obj);
                    self.extra_names.push(full);
                    return Ok(Some(Global::Extra(self.extras.len() as u32 - 1)));
                }
            }
            Ok(None)
        })();
        r.map_err(|e| {
            self.error = Some(e);
            core::ResolveFailed
        })
    }

    fn name_of(&self, global: Global) -> Option<String> {
        match global {
            Global::Class(i, _) => self.names.get(i as usize).cloned(),
            Global::Extra(i) => self.extra_names.get(i as usize).cloned(),
            _ => None,
        }
    }
}

fn input_bytes<'a>(data: &'a Bound<'_, PyAny>, copy: &'a mut Vec<u8>) -> PyResult<&'a [u8]> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes());
    }
    if !data.is_instance_of::<PyString>() {
        if let Ok(buffer) = PyBuffer::<u8>::get(data) {
            // bytearray and memoryview may change under us: read a private copy.
            *copy = buffer.to_vec(data.py())?;
            return Ok(copy);
        }
    }
    Err(PyTypeError::new_err(format!(
        "loads_pickle() takes bytes, bytearray or memoryview, not {}",
        data.get_type().name()?
    )))
}

/// `allow=` as a name -> callable dict (`None` when empty), normalised by `_legacy.py`.
fn allow_dict<'py>(
    lcfg: &LegacyConfig,
    allow: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(allow) = allow.filter(|a| !a.is_none()) else {
        return Ok(None);
    };
    let dict = match allow.cast::<PyDict>() {
        Ok(d) if d.is_exact_instance_of::<PyDict>() => d.clone(),
        _ => {
            let normal = lcfg.allow_map.bind(allow.py()).call1((&allow,))?;
            if normal.is_none() {
                return Ok(None);
            }
            normal.cast_into::<PyDict>()?
        }
    };
    Ok((!dict.is_empty()).then_some(dict))
}

/// Read a standard pickle (protocols 0-5) without running code from it.
///
/// Builds what `pickle.loads` would for the types `bytewright.pickle` supports and for
/// `classes=`; anything else raises `UnpicklingError` before any object is created.
#[pyfunction]
#[pyo3(signature = (data, *, classes=None, allow=None, limits=None))]
fn loads_pickle<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let lcfg = legacy(py)?;
    legacy_loads(py, data, classes, allow_dict(lcfg, allow)?, limits)
}

/// `loads_pickle` that also returns where the pickle ended (just after `STOP`), so a
/// file reader can leave the file positioned at the next pickle.
#[pyfunction]
#[pyo3(signature = (data, *, classes=None, allow=None, limits=None))]
fn loads_pickle_at<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let lcfg = legacy(py)?;
    let mut end = 0;
    let value = legacy_loads_inner(
        py,
        data,
        classes,
        allow_dict(lcfg, allow)?,
        limits,
        &mut end,
    )?;
    Ok((value, end))
}

fn legacy_loads<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyDict>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut end = 0;
    legacy_loads_inner(py, data, classes, allow, limits, &mut end)
}

fn legacy_loads_inner<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyDict>>,
    limits: Option<&Bound<'py, PyAny>>,
    end: &mut usize,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config::get(py)?;
    let lcfg = legacy(py)?;
    let limits = super::limits_from(cfg, limits)?;
    let mut copy = Vec::new();
    let input = input_bytes(data, &mut copy)?;
    let mut resolver = Resolver {
        cfg,
        classes: AllowedClasses::new(classes.unwrap_or_else(|| PyTuple::empty(py).into_any())),
        allow: allow.filter(|a| !a.is_empty()),
        found: Vec::new(),
        dict_fields: Vec::new(),
        extras: Vec::new(),
        names: Vec::new(),
        extra_names: Vec::new(),
        error: None,
    };
    let mut scratch = SCRATCH.with(|s| s.take()).unwrap_or_default();
    let checked = core::check_in(input, limits, &mut resolver, &mut scratch);
    let program = match checked {
        Ok(p) => p,
        Err(e) => {
            keep(scratch);
            return Err(match resolver.error.take() {
                Some(err) => err,
                None => read_error(py, cfg, &e),
            });
        }
    };
    *end = program.end;
    let result = Run::new(py, cfg, lcfg, &resolver, program.memo_slots).run(input, &program.instrs);
    scratch.recycle(program);
    keep(scratch);
    result
}

/// Keeps the scratch for the next call on this thread, unless it grew too large.
fn keep(scratch: Box<core::Scratch>) {
    if scratch.held_bytes() <= KEEP_SCRATCH_BYTES {
        SCRATCH.with(|s| s.set(Some(scratch)));
    }
}

const KEEP_SCRATCH_BYTES: usize = 16 << 20;

thread_local! {
    /// Buffers of the checker, reused across calls (taken out while in use, so a nested
    /// call from Python code during a build simply starts with fresh ones).
    static SCRATCH: std::cell::Cell<Option<Box<core::Scratch>>> = const { std::cell::Cell::new(None) };
}

/// Check a standard pickle without building anything: `None` if `loads_pickle` would
/// accept its structure, else the rejection message.
#[pyfunction]
#[pyo3(signature = (data, *, classes=None, allow=None, limits=None))]
fn legacy_check<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<String>> {
    let cfg = config::get(py)?;
    let allow = allow_dict(legacy(py)?, allow)?;
    let limits = super::limits_from(cfg, limits)?;
    let mut copy = Vec::new();
    let input = input_bytes(data, &mut copy)?;
    let mut resolver = Resolver {
        cfg,
        classes: AllowedClasses::new(classes.unwrap_or_else(|| PyTuple::empty(py).into_any())),
        allow,
        found: Vec::new(),
        dict_fields: Vec::new(),
        extras: Vec::new(),
        names: Vec::new(),
        extra_names: Vec::new(),
        error: None,
    };
    match core::check(input, limits, &mut resolver) {
        Ok(_) => Ok(None),
        Err(e) => match resolver.error.take() {
            Some(err) => Err(err),
            None => Ok(Some(e.to_string())),
        },
    }
}

struct Run<'py, 'r> {
    py: Python<'py>,
    cfg: &'static Config,
    lcfg: &'static LegacyConfig,
    resolver: &'r Resolver<'py>,
    stack: Vec<Bound<'py, PyAny>>,
    memo: Vec<Option<Bound<'py, PyAny>>>,
    empty_tuple: Bound<'py, PyTuple>,
}

impl<'py, 'r> Run<'py, 'r> {
    fn new(
        py: Python<'py>,
        cfg: &'static Config,
        lcfg: &'static LegacyConfig,
        resolver: &'r Resolver<'py>,
        memo_slots: usize,
    ) -> Self {
        let mut memo = Vec::new();
        memo.resize_with(memo_slots, || None);
        Self {
            py,
            cfg,
            lcfg,
            resolver,
            stack: Vec::with_capacity(32),
            memo,
            empty_tuple: PyTuple::empty(py),
        }
    }

    fn fail(&self, message: String, cause: Option<PyErr>) -> PyErr {
        unpickling(self.py, self.cfg, message, cause)
    }

    fn wrap<T>(&self, what: &str, r: PyResult<T>) -> PyResult<T> {
        r.map_err(|e| {
            if e.is_instance(self.py, self.cfg.unpickling_error.bind(self.py)) {
                e
            } else {
                self.fail(format!("could not rebuild {what}: {e}"), Some(e))
            }
        })
    }

    #[inline]
    fn owned(&self, what: &str, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: ptr is a new reference returned by a CPython constructor, or NULL with an
        // exception set.
        let r = unsafe { Bound::from_owned_ptr_or_err(self.py, ptr) };
        self.wrap(what, r)
    }

    /// Pushes a new reference from a CPython constructor (NULL: its exception, with context).
    #[inline]
    fn push_new(&mut self, what: &str, ptr: *mut ffi::PyObject) -> PyResult<()> {
        let v = self.owned(what, ptr)?;
        self.stack.push(v);
        Ok(())
    }

    #[inline]
    fn pop(&mut self) -> PyResult<Bound<'py, PyAny>> {
        self.stack
            .pop()
            .ok_or_else(|| self.fail("internal: value stack underflow".into(), None))
    }

    #[inline]
    fn take(&mut self, n: usize) -> PyResult<std::vec::Drain<'_, Bound<'py, PyAny>>> {
        if n > self.stack.len() {
            return Err(self.fail("internal: value stack underflow".into(), None));
        }
        let at = self.stack.len() - n;
        Ok(self.stack.drain(at..))
    }

    fn top_index(&self, n: usize) -> PyResult<usize> {
        self.stack
            .len()
            .checked_sub(n + 1)
            .ok_or_else(|| self.fail("internal: value stack underflow".into(), None))
    }

    fn table_object(&self, g: Global) -> Option<Bound<'py, PyAny>> {
        let i = TABLE.iter().position(|(_, _, t)| *t == g)?;
        self.lcfg
            .objects
            .get(i)?
            .as_ref()
            .map(|o| o.bind(self.py).clone())
    }

    fn class(&self, c: u32) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        match self.resolver.found.get(c as usize) {
            Some((cls, Some(info))) => Ok((cls.clone(), info.clone())),
            _ => Err(self.fail("internal: unknown class index".into(), None)),
        }
    }

    fn blank(&self, cls: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let Ok(ty) = cls.cast::<PyType>() else {
            return Err(self.fail("internal: not a class".into(), None));
        };
        // SAFETY: object.__new__(cls): the base allocator; for a Python-defined class
        // (checked by describe) no user code runs.
        let p = unsafe {
            let base = addr_of_mut!(ffi::PyBaseObject_Type);
            match (*base).tp_new {
                Some(tp_new) => tp_new(
                    ty.as_ptr().cast(),
                    self.empty_tuple.as_ptr(),
                    std::ptr::null_mut(),
                ),
                None => std::ptr::null_mut(),
            }
        };
        self.owned("an instance", p)
    }

    fn run(mut self, input: &[u8], program: &[Instr]) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        for instr in program {
            match *instr {
                Instr::None => self.stack.push(py.None().into_bound(py)),
                Instr::Bool(b) => self
                    .stack
                    .push(pyo3::types::PyBool::new(py, b).to_owned().into_any()),
                Instr::Ellipsis => self.stack.push(py.Ellipsis().into_bound(py)),
                Instr::Int(v) => {
                    // SAFETY: plain constructor.
                    self.push_new("int", unsafe { ffi::PyLong_FromLongLong(v) })?;
                }
                Instr::LongBytes(b) => {
                    let b = b.of(input);
                    // SAFETY: b is a live slice of b.len() bytes.
                    let p = unsafe { ffi::_PyLong_FromByteArray(b.as_ptr(), b.len(), 1, 1) };
                    self.push_new("int", p)?;
                }
                Instr::LongText(t) => {
                    let t = t.of(input);
                    let text = std::ffi::CString::new(t)
                        .map_err(|_| self.fail("bad int text".into(), None))?;
                    // SAFETY: a NUL-terminated string of digits (checked by the machine).
                    let p =
                        unsafe { ffi::PyLong_FromString(text.as_ptr(), std::ptr::null_mut(), 10) };
                    self.push_new("int", p)?;
                }
                Instr::Float(f) => {
                    // SAFETY: plain constructor.
                    self.push_new("float", unsafe { ffi::PyFloat_FromDouble(f) })?;
                }
                Instr::Str(s) => {
                    let s = s.of(input);
                    // SAFETY: s is a live slice; CPython validates the UTF-8.
                    let p = unsafe {
                        ffi::PyUnicode_DecodeUTF8(
                            s.as_ptr().cast(),
                            s.len() as isize,
                            c"surrogatepass".as_ptr(),
                        )
                    };
                    self.push_new("str", p)?;
                }
                Instr::StrEscaped(s) => {
                    let s = s.of(input);
                    // SAFETY: s is a live slice.
                    let p = unsafe {
                        ffi::PyUnicode_DecodeRawUnicodeEscape(
                            s.as_ptr().cast(),
                            s.len() as isize,
                            std::ptr::null(),
                        )
                    };
                    self.push_new("str", p)?;
                }
                Instr::StrAscii(s) => {
                    let s = s.of(input);
                    // SAFETY: s is a live slice.
                    let p = unsafe {
                        ffi::PyUnicode_DecodeASCII(
                            s.as_ptr().cast(),
                            s.len() as isize,
                            c"strict".as_ptr(),
                        )
                    };
                    self.push_new("str", p)?;
                }
                Instr::Bytes(b) => {
                    let b = b.of(input);
                    // SAFETY: b is a live slice.
                    let p = unsafe {
                        ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as isize)
                    };
                    self.push_new("bytes", p)?;
                }
                Instr::ByteArray(b) => {
                    let b = b.of(input);
                    // SAFETY: b is a live slice.
                    let p = unsafe {
                        ffi::PyByteArray_FromStringAndSize(b.as_ptr().cast(), b.len() as isize)
                    };
                    self.push_new("bytearray", p)?;
                }
                Instr::EmptyList => {
                    // SAFETY: plain constructor.
                    self.push_new("list", unsafe { ffi::PyList_New(0) })?;
                }
                Instr::EmptyDict => {
                    // SAFETY: plain constructor.
                    self.push_new("dict", unsafe { ffi::PyDict_New() })?;
                }
                Instr::EmptySet => {
                    // SAFETY: plain constructor.
                    self.push_new("set", unsafe { ffi::PySet_New(std::ptr::null_mut()) })?;
                }
                Instr::List(n) => {
                    let n = n as usize;
                    let at = self.stack.len().checked_sub(n);
                    let at = at
                        .ok_or_else(|| self.fail("internal: value stack underflow".into(), None))?;
                    // SAFETY: a fresh list of n slots, each filled once below with a reference
                    // moved out of the stack (PyList_SET_ITEM steals it).
                    let list = self.owned("list", unsafe { ffi::PyList_New(n as isize) })?;
                    for (i, item) in self.stack.drain(at..).enumerate() {
                        // SAFETY: see above; i < n.
                        unsafe { ffi::PyList_SET_ITEM(list.as_ptr(), i as isize, item.into_ptr()) };
                    }
                    self.stack.push(list);
                }
                Instr::Tuple(n) => {
                    let v = if n == 0 {
                        self.empty_tuple.clone().into_any()
                    } else {
                        let items = self.take(n as usize)?;
                        PyTuple::new(py, items)?.into_any()
                    };
                    self.stack.push(v);
                }
                Instr::Dict(n) => {
                    let at = self.stack.len().checked_sub(2 * n as usize);
                    let at = at
                        .ok_or_else(|| self.fail("internal: value stack underflow".into(), None))?;
                    let dict = PyDict::new(py);
                    for pair in self.stack[at..].chunks(2) {
                        // SAFETY: live objects; a fresh dict.
                        if unsafe {
                            ffi::PyDict_SetItem(dict.as_ptr(), pair[0].as_ptr(), pair[1].as_ptr())
                        } < 0
                        {
                            return Err(self
                                .wrap::<()>("dict", Err(PyErr::fetch(py)))
                                .unwrap_err());
                        }
                    }
                    self.stack.truncate(at);
                    self.stack.push(dict.into_any());
                }
                Instr::FrozenSet(n) => {
                    let items = self.take(n as usize)?.collect::<Vec<_>>();
                    let r = pyo3::types::PyFrozenSet::new(py, &items);
                    let v = self.wrap("frozenset", r)?.into_any();
                    self.stack.push(v);
                }
                Instr::Append(n) => {
                    let t = self.top_index(n as usize)?;
                    let list = self.stack[t].as_ptr();
                    for item in &self.stack[t + 1..] {
                        // SAFETY: the machine checked that the target is a list; it stays on
                        // the stack (alive) while the items are appended.
                        if unsafe { ffi::PyList_Append(list, item.as_ptr()) } < 0 {
                            return Err(self
                                .wrap::<()>("list", Err(PyErr::fetch(py)))
                                .unwrap_err());
                        }
                    }
                    self.stack.truncate(t + 1);
                }
                Instr::AppendDeque(n) => {
                    let t = self.top_index(n as usize)?;
                    let deque = self.stack[t].clone();
                    let items = self.take(n as usize)?.collect::<Vec<_>>();
                    let r = deque.call_method1("extend", (PyList::new(py, items)?,));
                    self.wrap("deque", r)?;
                }
                Instr::SetItems(n) | Instr::SetItemsMapping(n) => {
                    let t = self.top_index(2 * n as usize)?;
                    let target = self.stack[t].as_ptr();
                    let exact = matches!(instr, Instr::SetItems(_));
                    for pair in self.stack[t + 1..].chunks(2) {
                        // SAFETY: the machine checked the target's kind: a dict, or a
                        // dict subclass from the table (OrderedDict, Counter, defaultdict);
                        // it stays on the stack (alive) meanwhile.
                        let rc = unsafe {
                            if exact {
                                ffi::PyDict_SetItem(target, pair[0].as_ptr(), pair[1].as_ptr())
                            } else {
                                ffi::PyObject_SetItem(target, pair[0].as_ptr(), pair[1].as_ptr())
                            }
                        };
                        if rc < 0 {
                            return Err(self
                                .wrap::<()>("dict", Err(PyErr::fetch(py)))
                                .unwrap_err());
                        }
                    }
                    self.stack.truncate(t + 1);
                }
                Instr::AddItems(n) => {
                    let t = self.top_index(n as usize)?;
                    let set = self.stack[t].clone();
                    let items = self.take(n as usize)?.collect::<Vec<_>>();
                    for item in items {
                        // SAFETY: the machine checked that the target is a set.
                        if unsafe { ffi::PySet_Add(set.as_ptr(), item.as_ptr()) } < 0 {
                            return Err(self.wrap::<()>("set", Err(PyErr::fetch(py))).unwrap_err());
                        }
                    }
                }
                Instr::Put(slot) => {
                    let top = self.stack.last().cloned();
                    match (self.memo.get_mut(slot as usize), top) {
                        (Some(cell), Some(top)) => *cell = Some(top),
                        _ => return Err(self.fail("internal: bad memo slot".into(), None)),
                    }
                }
                Instr::Get(slot) => {
                    let Some(Some(v)) = self.memo.get(slot as usize) else {
                        return Err(self.fail("internal: empty memo slot".into(), None));
                    };
                    let v = v.clone();
                    self.stack.push(v);
                }
                Instr::Pop(n) => {
                    self.take(n as usize)?;
                }
                Instr::Dup => {
                    let top = self
                        .stack
                        .last()
                        .cloned()
                        .ok_or_else(|| self.fail("internal: DUP".into(), None))?;
                    self.stack.push(top);
                }
                Instr::Global(g) => {
                    let obj = match g {
                        Global::Class(c, _) => self.class(c)?.0,
                        Global::Extra(c) => match self.resolver.extras.get(c as usize) {
                            Some(o) => o.clone(),
                            None => {
                                return Err(self.fail("internal: unknown allow= index".into(), None))
                            }
                        },
                        g => self
                            .table_object(g)
                            .unwrap_or_else(|| py.None().into_bound(py)),
                    };
                    self.stack.push(obj);
                }
                Instr::Call(call) => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let v = self.call(call, callable, args)?;
                    self.stack.push(v);
                }
                Instr::Build(build) => {
                    let state = self.pop()?;
                    let obj = self
                        .stack
                        .last()
                        .cloned()
                        .ok_or_else(|| self.fail("internal: BUILD".into(), None))?;
                    match build {
                        Build::Fields(c) => {
                            if self.set_dict_fast(c, &obj, &state)? {
                                continue;
                            }
                            let (_, info) = self.class(c)?;
                            let r = self.lcfg.set_state.bind(py).call1((info, obj, state));
                            self.wrap("an instance", r)?;
                        }
                        Build::Uuid => {
                            let r = self.lcfg.uuid_state.bind(py).call1((obj, state));
                            self.wrap("uuid.UUID", r)?;
                        }
                    }
                }
            }
        }
        let root = self
            .stack
            .pop()
            .ok_or_else(|| self.fail("internal: empty stack".into(), None))?;
        Ok(root)
    }

    /// BUILD of a plain `__dict__` class whose state is a dict of exactly its declared
    /// fields (or any non-dunder str keys when it declares none): written straight into
    /// the instance `__dict__`, as pickle does. `false` sends it to the general path.
    fn set_dict_fast(
        &self,
        c: u32,
        obj: &Bound<'py, PyAny>,
        state: &Bound<'py, PyAny>,
    ) -> PyResult<bool> {
        let Some(Some(direct)) = self.resolver.dict_fields.get(c as usize) else {
            return Ok(false);
        };
        let Ok(state) = state.cast::<PyDict>() else {
            return Ok(false);
        };
        if !state.is_exact_instance_of::<PyDict>() {
            return Ok(false);
        }
        if let Some((n, set)) = direct {
            if state.len() != *n {
                return Ok(false);
            }
            for key in state.keys() {
                if !key.is_exact_instance_of::<PyString>() || !set.contains(&key)? {
                    return Ok(false);
                }
            }
        } else {
            for key in state.keys() {
                if !key.is_exact_instance_of::<PyString>() {
                    return Ok(false);
                }
                let k = key.cast::<PyString>()?.to_str()?;
                if k.len() >= 4 && k.starts_with("__") && k.ends_with("__") {
                    return Ok(false);
                }
            }
        }
        // SAFETY: obj is a live instance of a class with a __dict__ (kind checked above);
        // the generic getter returns a new reference to it, creating it if needed.
        let dict = unsafe { ffi::PyObject_GenericGetDict(obj.as_ptr(), std::ptr::null_mut()) };
        let dict = self.owned("an instance", dict)?;
        // SAFETY: both are live dicts.
        if unsafe { ffi::PyDict_Update(dict.as_ptr(), state.as_ptr()) } < 0 {
            return Err(self
                .wrap::<()>("an instance", Err(PyErr::fetch(self.py)))
                .unwrap_err());
        }
        Ok(true)
    }

    fn call(
        &self,
        call: Call,
        callable: Bound<'py, PyAny>,
        args: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let Ok(args) = args.cast_into::<PyTuple>() else {
            return Err(self.fail("internal: call arguments are not a tuple".into(), None));
        };
        match call {
            Call::Std(g) => {
                let name = core::machine::global_name(g);
                let r = callable.call1(args);
                self.wrap(&name, r)
            }
            Call::ZoneInfoUnpickle => {
                let zi = self
                    .table_object(Global::ZoneInfo)
                    .ok_or_else(|| self.fail("internal: ZoneInfo".into(), None))?;
                self.wrap("zoneinfo.ZoneInfo", zi.getattr("_unpickle"))
            }
            Call::Latin1 => {
                let text = args.get_item(0)?;
                // SAFETY: the machine checked the argument is a str.
                let p = unsafe { ffi::PyUnicode_AsLatin1String(text.as_ptr()) };
                self.owned("bytes (latin-1)", p)
            }
            Call::Blank(c) => {
                let (cls, _) = self.class(c)?;
                self.blank(&cls)
            }
            Call::BlankUuid => {
                let uuid = self
                    .table_object(Global::Uuid)
                    .ok_or_else(|| self.fail("internal: UUID".into(), None))?;
                self.blank(&uuid)
            }
            Call::NamedTuple(c) | Call::NamedTupleFromState(c) => {
                let (cls, info) = self.class(c)?;
                let fields = if matches!(call, Call::NamedTuple(_)) {
                    args.into_any()
                } else {
                    args.get_item(2)?
                };
                let r = self.lcfg.new_tuple.bind(py).call1((info, cls, fields));
                self.wrap("a named tuple", r)
            }
            Call::EnumMember(c) => {
                let (cls, _) = self.class(c)?;
                let r = self
                    .lcfg
                    .enum_member
                    .bind(py)
                    .call1((cls, args.get_item(0)?));
                self.wrap("an enum member", r)
            }
            Call::Extra(_) => {
                let r = callable.call1(args);
                self.wrap("an allow= constructor", r)
            }
        }
    }
}
