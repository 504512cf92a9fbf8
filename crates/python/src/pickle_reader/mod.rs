//! `loads_pickle`: standard pickle streams -> Python objects, in one checked pass.
//!
//! The pure-Rust machine (`bytewright_pickle_reader`) checks each opcode, then hands the
//! checked instruction to this adapter (its `Sink`), which builds plain values at once on
//! a value stack. Anything that could run code or be observed (calls, most `BUILD`s,
//! hashing objects that are not plain values) is deferred: the machine records it and
//! everything after it, and the adapter runs that rest only once the whole stream has
//! passed. Each call it makes is one fixed operation chosen by the machine, never a
//! payload callable.

mod loader;
mod resolver;

use bytewright_pickle_reader::{
    self as core,
    globals::{CONSTANTS, EXCEPTIONS, TABLE},
    Global,
};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use crate::graph::config;
use crate::graph::errors::read_error;
use crate::graph::{input_bytes, limits_from, Held};
use loader::Loader;
use resolver::{Codec, Resolver};

/// The Python helpers of the slow paths, from `bytewright.pickle._pickle_reader`.
pub(crate) struct Helpers {
    pub(crate) enum_member: Py<PyAny>,
    pub(crate) set_state: Py<PyAny>,
    pub(crate) uuid_state: Py<PyAny>,
    pub(crate) exception_state: Py<PyAny>,
    pub(crate) new_tuple: Py<PyAny>,
    pub(crate) attrs_state: Py<PyAny>,
    pub(crate) build_state: Py<PyAny>,
    pub(crate) append_items: Py<PyAny>,
    pub(crate) add_items: Py<PyAny>,
    pub(crate) reconstructor: Py<PyAny>,
    /// `allow=` iterable -> dict.
    pub(crate) allow_map: Py<PyAny>,
    /// `(encoding, errors)` -> `(mode, codec name, errors, ascii_text)`.
    pub(crate) python2_codec: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

/// The Python object of each `TABLE` entry, imported by its name on first use.
static TABLE_OBJECTS: [PyOnceLock<Py<PyAny>>; TABLE.len()] =
    [const { PyOnceLock::new() }; TABLE.len()];

/// The same for the builtins that are only ever values (`CONSTANTS`).
static CONSTANT_OBJECTS: [PyOnceLock<Py<PyAny>>; CONSTANTS.len()] =
    [const { PyOnceLock::new() }; CONSTANTS.len()];
static EXCEPTION_OBJECTS: [PyOnceLock<Py<PyAny>>; EXCEPTIONS.len()] =
    [const { PyOnceLock::new() }; EXCEPTIONS.len()];

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    LOADS_PICKLE.add_to(m, loads_pickle_trampoline)?;
    m.add_function(wrap_pyfunction!(loads_pickle_at, m)?)?;
    m.add_function(wrap_pyfunction!(loads_pickle_carrying, m)?)?;
    m.add_function(wrap_pyfunction!(check_pickle, m)?)?;
    m.add_function(wrap_pyfunction!(pickle_extent, m)?)?;
    Ok(())
}

/// The helpers, imported by name on the first call (see the crate documentation).
fn helpers(py: Python<'_>) -> PyResult<&'static Helpers> {
    HELPERS.get_or_try_init(py, || {
        let m = py.import("bytewright.pickle._pickle_reader")?;
        let get = |name: &str| -> PyResult<Py<PyAny>> { Ok(m.getattr(name)?.unbind()) };
        Ok(Helpers {
            enum_member: get("_enum_member")?,
            set_state: get("_set_state")?,
            uuid_state: get("_uuid_state")?,
            exception_state: get("_exception_state")?,
            new_tuple: get("_new_tuple")?,
            attrs_state: get("_attrs_state")?,
            build_state: get("_build_state")?,
            append_items: get("_append_items")?,
            add_items: get("_add_items")?,
            reconstructor: get("_reconstructor")?,
            allow_map: get("_allow_map")?,
            python2_codec: get("_python2_codec")?,
        })
    })
}

/// The Python object of a table global, imported by its canonical name (also for the
/// globals the reader never calls itself, whose one allowed use is performed directly, so
/// that a memo carried to the next pickle holds what pickle's would); `None` for
/// `Ellipsis`, which is only ever a value.
pub(crate) fn table_object<'py>(
    py: Python<'py>,
    g: Global,
) -> PyResult<Option<&'py Bound<'py, PyAny>>> {
    if matches!(g, Global::Ellipsis | Global::NewObjFn | Global::NewObjExFn) {
        return Ok(None);
    }
    if let Global::Exception(i) = g {
        let i = usize::from(i);
        let Some(name) = EXCEPTIONS.get(i) else {
            return Ok(None);
        };
        return EXCEPTION_OBJECTS[i].import(py, "builtins", name).map(Some);
    }
    if let Global::Constant(i) = g {
        let i = usize::from(i);
        let Some(name) = CONSTANTS.get(i) else {
            return Ok(None);
        };
        return CONSTANT_OBJECTS[i].import(py, "builtins", name).map(Some);
    }
    let Some(i) = TABLE.iter().position(|(_, _, t)| *t == g) else {
        return Ok(None);
    };
    let (module, name, _) = TABLE[i];
    TABLE_OBJECTS[i].import(py, module, name).map(Some)
}

/// `allow=` as a name -> callable dict (`None` when empty), normalised by `_pickle_reader.py`.
fn allow_dict<'py>(
    helpers: &Helpers,
    allow: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(allow) = allow.filter(|a| !a.is_none()) else {
        return Ok(None);
    };
    let dict = match allow.cast::<PyDict>() {
        Ok(d) if d.is_exact_instance_of::<PyDict>() => d.clone(),
        _ => {
            let normal = helpers.allow_map.bind(allow.py()).call1((&allow,))?;
            if normal.is_none() {
                return Ok(None);
            }
            normal.cast_into::<PyDict>()?
        }
    };
    Ok((!dict.is_empty()).then_some(dict))
}

crate::fastcall::fast_function! {
    static LOADS_PICKLE: [5] = {
        name: c"loads_pickle",
        positional: "data",
        keywords: ["classes", "allow", "limits", "encoding", "errors"],
        doc: c"loads_pickle(data, *, classes=None, allow=None, limits=None, encoding='ASCII', errors='strict')\n--\n\nRead a standard pickle (protocols 0-5) without running code from it.\n\nBuilds what `pickle.loads` would for the types `bytewright.pickle` supports and for\n`classes=`; anything else raises `UnpicklingError` before any code runs.",
        body: loads_pickle,
    };
    trampoline loads_pickle_trampoline;
}

/// Read a standard pickle (protocols 0-5) without running code from it (the body of
/// `loads_pickle`, whose arguments `fastcall` parses).
fn loads_pickle<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    [classes, allow, limits, encoding, errors]: [Option<&Bound<'py, PyAny>>; 5],
) -> PyResult<Bound<'py, PyAny>> {
    let helpers = helpers(py)?;
    let python2 = python2_codec(py, helpers, encoding, errors)?;
    let mut end = 0;
    read_pickle_carrying(
        py,
        data,
        classes.cloned(),
        allow_dict(helpers, allow.cloned())?,
        limits,
        &mut end,
        None,
        python2,
    )
}

/// How Python 2 str is read, from pickle's `encoding=` and `errors=` (`None`: ASCII,
/// strict). Only codecs and error handlers Python ships are accepted (see
/// `_pickle_reader._python2_codec`).
type Python2 = Option<Box<Codec>>;

#[inline(always)]
fn python2_codec<'py>(
    py: Python<'py>,
    helpers: &Helpers,
    encoding: Option<&Bound<'py, PyAny>>,
    errors: Option<&Bound<'py, PyAny>>,
) -> PyResult<Python2> {
    if encoding.is_none_or(|e| e.is_none()) && errors.is_none_or(|e| e.is_none()) {
        return Ok(None);
    }
    python2_codec_given(py, helpers, encoding, errors)
}

#[inline(never)]
fn python2_codec_given<'py>(
    py: Python<'py>,
    helpers: &Helpers,
    encoding: Option<&Bound<'py, PyAny>>,
    errors: Option<&Bound<'py, PyAny>>,
) -> PyResult<Python2> {
    let given =
        |a: Option<&Bound<'py, PyAny>>| a.map_or_else(|| py.None().into_bound(py), |a| a.clone());
    let (encoding, errors) = (given(encoding), given(errors));
    let (mode, name, handler, ascii_text): (u8, String, String, bool) = helpers
        .python2_codec
        .bind(py)
        .call1((encoding, errors))?
        .extract()?;
    let mode = match mode {
        0 => return Ok(None),
        1 => core::Python2Str::Bytes,
        _ => core::Python2Str::Decode { ascii_text },
    };
    let c = |s: String| {
        std::ffi::CString::new(s).map_err(|_| PyTypeError::new_err("embedded NUL in a codec name"))
    };
    Ok(Some(Box::new(Codec {
        mode,
        name: c(name)?,
        errors: c(handler)?,
    })))
}

/// `loads_pickle` that also returns where the pickle ended (just after `STOP`), so a
/// file reader can leave the file positioned at the next pickle.
#[pyfunction]
#[pyo3(signature = (data, *, classes=None, allow=None, limits=None, encoding=None, errors=None))]
#[allow(clippy::too_many_arguments)]
fn loads_pickle_at<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
    encoding: Option<Bound<'py, PyAny>>,
    errors: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let helpers = helpers(py)?;
    let python2 = python2_codec(py, helpers, encoding.as_ref(), errors.as_ref())?;
    let mut end = 0;
    let value = read_pickle_carrying(
        py,
        data,
        classes,
        allow_dict(helpers, allow)?,
        limits,
        &mut end,
        None,
        python2,
    )?;
    Ok((value, end))
}

/// `loads_pickle_at` for the next pickle of a stream, with pickle's `Unpickler` memo
/// (`{key: value}`) that the earlier pickles left: read from `memo` and, once the pickle
/// loaded, replaced by the memo it leaves.
#[pyfunction]
#[pyo3(signature = (data, memo, *, classes=None, allow=None, limits=None, encoding=None, errors=None))]
#[allow(clippy::too_many_arguments)]
fn loads_pickle_carrying<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    memo: &Bound<'py, PyDict>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
    encoding: Option<Bound<'py, PyAny>>,
    errors: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, usize)> {
    let helpers = helpers(py)?;
    let python2 = python2_codec(py, helpers, encoding.as_ref(), errors.as_ref())?;
    let mut end = 0;
    let value = read_pickle_carrying(
        py,
        data,
        classes,
        allow_dict(helpers, allow)?,
        limits,
        &mut end,
        Some(memo),
        python2,
    )?;
    Ok((value, end))
}

/// What the machine may assume about a value of an earlier pickle's memo: its exact
/// builtin type, else nothing.
fn carried(value: &Bound<'_, PyAny>, text: &mut Vec<u8>) -> core::Carried {
    use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PySet, PyString};
    if let Ok(s) = value.cast_exact::<PyString>() {
        // Its text, for the checks that read a str (a global's name, an encoding).
        let (Ok(s), Ok(start)) = (s.to_str(), u32::try_from(text.len())) else {
            return core::Carried::Other;
        };
        let Ok(len) = u32::try_from(s.len()) else {
            return core::Carried::Other;
        };
        text.extend_from_slice(s.as_bytes());
        return core::Carried::Str { start, len };
    }
    if value.is_none() {
        core::Carried::None
    } else if value.is_exact_instance_of::<PyBool>() {
        core::Carried::Bool
    } else if value.is_exact_instance_of::<PyInt>() {
        core::Carried::Int
    } else if value.is_exact_instance_of::<PyFloat>() {
        core::Carried::Float
    } else if value.is_exact_instance_of::<PyBytes>() {
        core::Carried::Bytes
    } else if value.is_exact_instance_of::<PyList>() {
        core::Carried::List
    } else if value.is_exact_instance_of::<PyDict>() {
        core::Carried::Dict
    } else if value.is_exact_instance_of::<PySet>() {
        core::Carried::Set
    } else if let Some(g) = table_global(value) {
        core::Carried::Global(g)
    } else {
        core::Carried::Other
    }
}

/// The table global whose object `value` is, by identity (among those imported so far:
/// any other object cannot have come from the table).
fn table_global(value: &Bound<'_, PyAny>) -> Option<Global> {
    let py = value.py();
    let is = |o: Option<&Py<PyAny>>| o.is_some_and(|o| o.as_ptr() == value.as_ptr());
    if let Some(i) = TABLE_OBJECTS.iter().position(|o| is(o.get(py))) {
        return Some(TABLE[i].2);
    }
    if let Some(i) = EXCEPTION_OBJECTS.iter().position(|o| is(o.get(py))) {
        return Some(Global::Exception(u16::try_from(i).ok()?));
    }
    let i = CONSTANT_OBJECTS.iter().position(|o| is(o.get(py)))?;
    Some(Global::Constant(u16::try_from(i).ok()?))
}

#[allow(clippy::too_many_arguments)]
fn read_pickle_carrying<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyDict>>,
    limits: Option<&Bound<'py, PyAny>>,
    end: &mut usize,
    memo: Option<&Bound<'py, PyDict>>,
    python2: Python2,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config::get(py)?;
    let helpers = helpers(py)?;
    let limits = limits_from(cfg, limits)?;
    let mut held = Held::default();
    let input = input_bytes(data, &mut held, "loads_pickle")?;
    let mut bufs = BUFFERS.with(|s| s.take()).unwrap_or_default();
    let mut res = Resolver::new(py, cfg, classes, allow);
    res.codec = python2;
    let mut loader = Loader {
        py,
        cfg,
        helpers,
        max_bytes_len: limits.max_bytes_len,
        res,
        stack: std::mem::take(&mut bufs.stack),
        memo: std::mem::take(&mut bufs.memo),
    };
    let (mut seed, mut text) = (Vec::new(), Vec::new());
    if let Some(memo) = memo {
        for (key, value) in memo.iter() {
            let key: u64 = key.extract().map_err(|_| {
                PyTypeError::new_err("the memo's keys must be ints from 0 to 2**64 - 1")
            })?;
            seed.push((key, carried(&value, &mut text)));
            // The loader's memo owns a reference to each value, in slot order.
            loader.memo.push(value.into_ptr());
        }
    }
    let checked = match memo {
        Some(_) => {
            core::check_in_carrying(input, limits, &mut loader, &mut bufs.core, &seed, &text)
        }
        None => core::check_in(input, limits, &mut loader, &mut bufs.core),
    };
    let result = match checked {
        Ok(program) => {
            *end = program.end;
            let mut r = loader.finish(input, &program, limits);
            if let (true, Some(memo)) = (r.is_ok(), memo) {
                r = loader.leave_memo(memo, &program.memo_keys).and(r);
            }
            bufs.core.recycle(program);
            r
        }
        Err(e) => Err(match loader.res.error.take() {
            Some(err) => loader.located(err, e.offset),
            None => read_error(py, cfg, &e),
        }),
    };
    loader.release(&mut bufs);
    if bufs.held_bytes() <= KEEP_BUFFERS_BYTES {
        BUFFERS.with(|s| s.set(Some(bufs)));
    }
    result
}

/// Buffers kept between calls on a thread: only capacity, never content.
#[derive(Default)]
pub(crate) struct Buffers {
    core: core::Scratch,
    stack: Vec<*mut ffi::PyObject>,
    memo: Vec<*mut ffi::PyObject>,
}

impl Buffers {
    fn held_bytes(&self) -> usize {
        self.core.held_bytes() + (self.stack.capacity() + self.memo.capacity()) * 8
    }
}

const KEEP_BUFFERS_BYTES: usize = 16 << 20;

thread_local! {
    /// Taken out while in use, so a nested call from Python code during a build simply
    /// starts with fresh ones.
    static BUFFERS: std::cell::Cell<Option<Box<Buffers>>> = const { std::cell::Cell::new(None) };
}

/// How far the pickle at the start of `data` extends, scanning opcodes from `pos`:
/// `(0, end, 0)` when it ends at `end`; `(1, at, n)` when the opcode at `at` needs `n` more
/// bytes; `(2, at, 0)` when it needs the rest of a line; `(3, at, 0)` when it cannot be read.
#[pyfunction]
fn pickle_extent(data: &Bound<'_, PyAny>, pos: usize) -> PyResult<(u8, usize, u64)> {
    let mut held = Held::default();
    let input = input_bytes(data, &mut held, "pickle_extent")?;
    Ok(match core::extent(input, pos.min(input.len())) {
        core::Extent::Stop(end) => (0, end, 0),
        core::Extent::Bytes { at, n } => (1, at, n),
        core::Extent::Line { at } => (2, at, 0),
        core::Extent::Bad { at } => (3, at, 0),
    })
}

/// Check a standard pickle without building anything: `None` if `loads_pickle` would
/// accept its structure, else the rejection message.
#[pyfunction]
#[pyo3(signature = (data, *, classes=None, allow=None, limits=None))]
fn check_pickle<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: Option<Bound<'py, PyAny>>,
    allow: Option<Bound<'py, PyAny>>,
    limits: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<String>> {
    let cfg = config::get(py)?;
    let allow = allow_dict(helpers(py)?, allow)?;
    let limits = limits_from(cfg, limits)?;
    let mut held = Held::default();
    let input = input_bytes(data, &mut held, "loads_pickle")?;
    let mut resolver = Resolver::new(py, cfg, classes, allow);
    match core::check(input, limits, &mut resolver) {
        Ok(_) => Ok(None),
        Err(e) => match resolver.error.take() {
            Some(err) => Err(err),
            None => Ok(Some(e.to_string())),
        },
    }
}
