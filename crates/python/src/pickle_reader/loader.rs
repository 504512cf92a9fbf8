//! The machine's host while a standard pickle is read: builds plain values as they pass,
//! defers the rest, and runs what was deferred once the whole stream has passed.

use std::ptr::addr_of_mut;

use bytewright_pickle_reader::{self as core, Build, Call, Global, Instr, Step};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use super::resolver::{Declared, DictFields, Found, Resolver, FEW_FIELDS};
use super::{table_object, Buffers, Helpers};
use crate::cpython;
use crate::graph::config::Config;
use crate::graph::errors::{locate, unpickling};

/// A new str of ASCII text: one compact string and one copy. Shorter than 2 bytes, the
/// decoder hands out CPython's cached strings. NULL with an exception set on failure.
#[inline]
fn ascii_str(s: &[u8]) -> *mut ffi::PyObject {
    if s.len() >= 2 {
        // SAFETY: the caller checked s is ASCII.
        return unsafe { cpython::new_ascii_str(s) };
    }
    // SAFETY: s is a live slice of ASCII bytes.
    unsafe { ffi::PyUnicode_DecodeASCII(s.as_ptr().cast(), s.len() as isize, c"strict".as_ptr()) }
}

/// A new str from UTF-8 with surrogates allowed (ASCII on the fast path).
#[inline(never)]
fn new_str(s: &[u8]) -> *mut ffi::PyObject {
    if s.is_ascii() {
        return ascii_str(s);
    }
    // SAFETY: s is a live slice; CPython validates the UTF-8.
    unsafe {
        ffi::PyUnicode_DecodeUTF8(
            s.as_ptr().cast(),
            s.len() as isize,
            c"surrogatepass".as_ptr(),
        )
    }
}

/// A key whose hashing and comparing run no Python code: str, int, float, bytes, bool,
/// None, or a tuple of those.
#[inline]
fn inert_key(p: *mut ffi::PyObject, nested: bool) -> bool {
    // SAFETY: p is a live object; only its type and (for a tuple) its items are read.
    unsafe {
        let t = ffi::Py_TYPE(p);
        if t == addr_of_mut!(ffi::PyUnicode_Type)
            || t == addr_of_mut!(ffi::PyLong_Type)
            || t == addr_of_mut!(ffi::PyFloat_Type)
            || t == addr_of_mut!(ffi::PyBytes_Type)
            || t == addr_of_mut!(ffi::PyBool_Type)
            || p == ffi::Py_None()
        {
            return true;
        }
        if !nested && t == addr_of_mut!(ffi::PyTuple_Type) {
            let n = ffi::PyTuple_GET_SIZE(p);
            return (0..n).all(|i| inert_key(ffi::PyTuple_GET_ITEM(p, i), true));
        }
        false
    }
}

/// The index in `names` of the exact str `key` (a field name), if it is one.
#[inline]
fn field_index(decl: &mut Declared<'_>, key: *mut ffi::PyObject) -> Option<usize> {
    if let Some((_, i)) = decl.seen.iter().find(|(k, _)| k.as_ptr() == key) {
        return Some(*i);
    }
    let i = name_index(&decl.names, key)?;
    if decl.seen.len() < 2 * FEW_FIELDS {
        // SAFETY: key is live; the Bound holds a reference of its own.
        let held = unsafe { Bound::from_borrowed_ptr(decl.names[i].py(), key) };
        decl.seen.push((held, i));
    }
    Some(i)
}

#[inline]
fn name_index(names: &[Bound<'_, PyString>], key: *mut ffi::PyObject) -> Option<usize> {
    // SAFETY: key and the names are live exact strs: comparing runs no code, cannot fail.
    unsafe {
        let len = ffi::PyUnicode_GET_LENGTH(key);
        names.iter().position(|name| {
            name.as_ptr() == key
                || (ffi::PyUnicode_GET_LENGTH(name.as_ptr()) == len
                    && ffi::PyUnicode_Compare(name.as_ptr(), key) == 0)
        })
    }
}

/// A `BUILD` state that holds exactly the declared fields of a plain `__dict__` class,
/// stored as instance attributes under the class's own (interned) names, as pickle's
/// `inst.__dict__[name] = value` would, without making the instance dict. `false`
/// (nothing written) when a key is not a field or the class has a data descriptor of
/// that name (setting it would run code).
fn set_declared_fields(
    obj: *mut ffi::PyObject,
    state: &Bound<'_, PyDict>,
    decl: &mut Declared<'_>,
    streaming: bool,
) -> PyResult<bool> {
    if state.len() != decl.names.len() {
        return Ok(false);
    }
    let check = !(streaming && decl.plain);
    let mut fields = [(0usize, std::ptr::null_mut::<ffi::PyObject>()); FEW_FIELDS];
    let mut n = 0;
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: iterating a live dict that nothing changes meanwhile; keys and values are
    // borrowed from it, and it stays alive (on the value stack) until the writes are done.
    // obj is a live instance; looking its class's attributes up runs no code.
    unsafe {
        let ty = ffi::Py_TYPE(obj);
        while ffi::PyDict_Next(state.as_ptr(), &mut pos, &mut key, &mut value) != 0 {
            if ffi::PyUnicode_CheckExact(key) == 0 || n == FEW_FIELDS {
                return Ok(false);
            }
            let Some(i) = field_index(decl, key) else {
                return Ok(false);
            };
            // A data descriptor would run code when set (and where the class cannot be
            // looked up without running code, neither is assumed safe).
            if check && cpython::has_data_descriptor(ty, decl.names[i].as_ptr()) != Some(false) {
                return Ok(false);
            }
            fields[n] = (i, value);
            n += 1;
        }
        // The keys are distinct and as many as the names: every name was checked.
        decl.plain |= streaming;
        for &(i, value) in &fields[..n] {
            // No data descriptor of this name (checked above): a plain store into the
            // instance's attributes, which runs no code.
            if ffi::PyObject_GenericSetAttr(obj, decl.names[i].as_ptr(), value) < 0 {
                return Err(PyErr::fetch(state.py()));
            }
        }
    }
    Ok(true)
}

/// `dict.update(state)` with each key interned, as pickle's `BUILD` writes attribute
/// names (`state`'s keys are exact strs). The key objects themselves are left as they
/// are, so a key that is also a value elsewhere keeps its identity there; once interned
/// (an equal one was not), a memoized key needs no lookup for the next instance.
fn set_interned(dict: *mut ffi::PyObject, state: &Bound<'_, PyDict>) -> Result<(), ()> {
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: iterating a live dict that nothing changes meanwhile (inserting exact str
    // keys into another dict runs no code); the interned name is an owned reference.
    unsafe {
        while ffi::PyDict_Next(state.as_ptr(), &mut pos, &mut key, &mut value) != 0 {
            let mut name = key;
            ffi::Py_INCREF(name);
            ffi::PyUnicode_InternInPlace(&mut name);
            let rc = ffi::PyDict_SetItem(dict, name, value);
            ffi::Py_DECREF(name);
            if rc < 0 {
                return Err(());
            }
        }
    }
    Ok(())
}

/// True when every key of `state` is an exact str that `fits`.
fn state_keys<'py>(
    state: &Bound<'py, PyDict>,
    mut fits: impl FnMut(&Bound<'py, PyAny>) -> PyResult<bool>,
) -> PyResult<bool> {
    let py = state.py();
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: iterating a live dict that nothing changes meanwhile (`fits` only reads);
    // the borrowed key is wrapped with a reference of its own.
    while unsafe { ffi::PyDict_Next(state.as_ptr(), &mut pos, &mut key, &mut value) } != 0 {
        // SAFETY: a live borrowed key of the dict.
        let k = unsafe { Bound::from_borrowed_ptr(py, key) };
        if !k.is_exact_instance_of::<PyString>() || !fits(&k)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The resolved names and the value being built: the machine's host as resolver and sink.
pub(super) struct Loader<'py> {
    pub(super) py: Python<'py>,
    pub(super) cfg: &'static Config,
    pub(super) helpers: &'static Helpers,
    /// `Limits.max_bytes_len`: what `bytes(n)` may allocate.
    pub(super) max_bytes_len: u64,
    pub(super) res: Resolver<'py>,
    /// The value stack and the memo (by slot): each entry is an owned reference.
    pub(super) stack: Vec<*mut ffi::PyObject>,
    pub(super) memo: Vec<*mut ffi::PyObject>,
}

impl core::Resolve for Loader<'_> {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, core::ResolveFailed> {
        self.res.resolve(module, name)
    }

    fn name_of(&self, global: Global) -> Option<String> {
        self.res.name_of(global)
    }

    fn has_setstate(&self, class: u32) -> bool {
        self.res.has_setstate(class)
    }

    fn plain_new(&self, class: u32) -> bool {
        self.res.plain_new(class)
    }

    fn python2_str(&self) -> core::Python2Str {
        self.res.python2_str()
    }

    fn decodes(&mut self, bytes: &[u8]) -> bool {
        self.res.decodes(bytes)
    }
}

impl core::Sink for Loader<'_> {
    /// The hot atoms inline (small: each emit site keeps only its own), the rest out of line.
    #[inline(always)]
    fn step(&mut self, instr: Instr, data: &[u8]) -> Step {
        // SAFETY (constructors): plain CPython constructors, new reference or NULL.
        let p = match instr {
            Instr::Int(v) => unsafe { ffi::PyLong_FromLongLong(v) },
            Instr::Float(f) => unsafe { ffi::PyFloat_FromDouble(f) },
            Instr::Str(s) => new_str(s.of(data)),
            Instr::EmptyList => unsafe { ffi::PyList_New(0) },
            Instr::EmptyDict => unsafe { ffi::PyDict_New() },
            Instr::None | Instr::Bool(_) => {
                // SAFETY: live singletons; the stack takes a new reference.
                self.push_ref(unsafe {
                    match instr {
                        Instr::Bool(true) => ffi::Py_True(),
                        Instr::Bool(false) => ffi::Py_False(),
                        _ => ffi::Py_None(),
                    }
                });
                return Step::Done;
            }
            Instr::Put(slot) if (slot as usize) == self.memo.len() => {
                if let Some(&top) = self.stack.last() {
                    // SAFETY: top is live; the memo owns the new reference.
                    unsafe { ffi::Py_INCREF(top) };
                    self.memo.push(top);
                    return Step::Done;
                }
                return self.step_slow(instr, data);
            }
            Instr::Get(slot) => match self.memo.get(slot as usize) {
                Some(&p) => {
                    self.push_ref(p);
                    return Step::Done;
                }
                None => return self.step_slow(instr, data),
            },
            Instr::SetItems(n) => return self.set_items(n as usize, data),
            Instr::Append(n) => return self.append(n as usize, data),
            _ => return self.step_slow(instr, data),
        };
        if p.is_null() {
            return self.step_failed(instr);
        }
        self.stack.push(p);
        Step::Done
    }
}

impl Loader<'_> {
    #[cold]
    #[inline(never)]
    fn step_failed(&mut self, instr: Instr) -> Step {
        let what = match instr {
            Instr::Int(_) => "int",
            Instr::Float(_) => "float",
            Instr::Str(_) => "str",
            Instr::EmptyList => "list",
            _ => "dict",
        };
        self.res.error = Some(self.fetch(what));
        Step::Failed
    }

    /// `SETITEMS` into a dict: at once when every key is an exact str (hashing and
    /// comparing one runs no code), else as `step_slow` decides.
    #[inline(never)]
    fn set_items(&mut self, n: usize, data: &[u8]) -> Step {
        let Some(t) = self.stack.len().checked_sub(2 * n + 1) else {
            return self.step_slow(Instr::SetItems(n as u32), data);
        };
        let (dict, pairs) = (self.stack[t], &self.stack[t + 1..]);
        // SAFETY: live objects (owned by the stack); only their types are read.
        let plain = unsafe {
            ffi::PyDict_CheckExact(dict) != 0
                && pairs
                    .chunks_exact(2)
                    .all(|pair| ffi::PyUnicode_CheckExact(pair[0]) != 0)
        };
        if !plain {
            return self.step_slow(Instr::SetItems(n as u32), data);
        }
        for pair in pairs.chunks_exact(2) {
            // SAFETY: an exact dict and exact str keys, all live (the stack owns them):
            // no code runs, and the stack is not changed meanwhile.
            if unsafe { ffi::PyDict_SetItem(dict, pair[0], pair[1]) } < 0 {
                self.res.error = Some(self.fetch("dict"));
                return Step::Failed;
            }
        }
        self.drop_from(t + 1);
        Step::Done
    }

    /// `APPENDS` into a list (the machine checked its kind).
    #[inline(never)]
    fn append(&mut self, n: usize, data: &[u8]) -> Step {
        let Some(t) = self.stack.len().checked_sub(n + 1) else {
            return self.step_slow(Instr::Append(n as u32), data);
        };
        let list = self.stack[t];
        match self.extend_list(t + 1, list) {
            Ok(()) => Step::Done,
            Err(e) => {
                self.res.error = Some(e);
                Step::Failed
            }
        }
    }

    #[inline(never)]
    fn step_slow(&mut self, instr: Instr, data: &[u8]) -> Step {
        let r = match instr {
            Instr::Build(Build::Fields(c)) => match self.build_fast(c, true) {
                Ok(true) => Ok(()),
                Ok(false) => return Step::Defer,
                Err(e) => Err(e),
            },
            Instr::Call(Call::Blank(c))
                if self.res.found.get(c as usize).is_some_and(|f| f.quiet) =>
            {
                self.blank_now(c)
            }
            Instr::Call(_)
            | Instr::Build(_)
            | Instr::AppendDeque(_)
            | Instr::AppendMethod(_)
            | Instr::AddMethod(_)
            | Instr::SetItemsMapping(_) => return Step::Defer,
            Instr::Dict(n) | Instr::SetItems(n) if !self.inert_keys(2 * n as usize, 2) => {
                return Step::Defer
            }
            Instr::AddItems(n) | Instr::FrozenSet(n) if !self.inert_keys(n as usize, 1) => {
                return Step::Defer
            }
            _ => self.exec(instr, data),
        };
        match r {
            Ok(()) => Step::Done,
            Err(e) => {
                self.res.error = Some(e);
                Step::Failed
            }
        }
    }
}

impl Drop for Loader<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<'py> Loader<'py> {
    /// Drops every reference held (objects may run code as they go: nothing of ours is
    /// borrowed meanwhile).
    fn clear(&mut self) {
        for p in self.stack.drain(..).chain(self.memo.drain(..)) {
            // SAFETY: each entry is an owned reference, given up exactly once here.
            unsafe { ffi::Py_DECREF(p) };
        }
    }

    /// Replaces `memo` by the memo the pickle left (`keys`: each key with its slot).
    pub(super) fn leave_memo(
        &self,
        memo: &Bound<'py, PyDict>,
        keys: &[(u64, u32)],
    ) -> PyResult<()> {
        memo.clear();
        for &(key, slot) in keys {
            let Some(&p) = self.memo.get(slot as usize) else {
                return Err(self.internal("memo slot without a value"));
            };
            // SAFETY: p is live (owned by the loader's memo); the Bound takes its own reference.
            memo.set_item(key, unsafe { Bound::from_borrowed_ptr(self.py, p) })?;
        }
        Ok(())
    }

    /// Drops what is held and gives the buffers back.
    pub(super) fn release(&mut self, bufs: &mut Buffers) {
        self.clear();
        bufs.stack = std::mem::take(&mut self.stack);
        bufs.memo = std::mem::take(&mut self.memo);
    }

    /// Runs what the sink deferred (the stream has passed), then returns the value. An
    /// error gets the offset of the opcode whose instruction raised it.
    pub(super) fn finish(
        &mut self,
        input: &[u8],
        program: &core::Program,
        limits: core::Limits,
    ) -> PyResult<Bound<'py, PyAny>> {
        for (i, instr) in program.instrs.iter().enumerate() {
            if let Err(e) = self.exec(*instr, input) {
                let e = self.locate_error(e, input, limits, program.first as usize + i);
                return Err(e);
            }
        }
        // The value is the top of the stack (pickle ignores anything below it).
        self.pop()
    }

    /// An error raised while running a deferred instruction, given the offset of the
    /// opcode behind it (attribute and message), unless it has one already.
    #[cold]
    pub(super) fn located(&self, err: PyErr, at: usize) -> PyErr {
        let value = err.value(self.py);
        if !value.getattr("offset").is_ok_and(|o| o.is_none()) {
            return err;
        }
        locate(self.py, &err, at);
        if let Ok(args) = value.getattr("args").and_then(|a| a.extract::<(String,)>()) {
            if !args.0.contains("(at byte ") {
                let _ = value.setattr("args", (format!("{} (at byte {at})", args.0),));
            }
        }
        err
    }

    /// Gives an error raised by instruction `index` of the stream its opcode's offset
    /// (found by checking the stream again: only errors pay for it).
    #[cold]
    fn locate_error(
        &mut self,
        e: PyErr,
        input: &[u8],
        limits: core::Limits,
        index: usize,
    ) -> PyErr {
        let offsets = core::offsets(input, limits, &mut self.res);
        match offsets.get(index) {
            Some(&at) => self.located(e, at as usize),
            None => e,
        }
    }

    fn fail(&self, message: String, cause: Option<PyErr>) -> PyErr {
        unpickling(self.py, self.cfg, message, cause)
    }

    #[cold]
    fn internal(&self, what: &str) -> PyErr {
        self.fail(format!("internal: {what}"), None)
    }

    fn wrap_err(&self, what: &str, e: PyErr) -> PyErr {
        if e.is_instance(self.py, self.cfg.unpickling_error.bind(self.py)) {
            e
        } else {
            self.fail(format!("could not rebuild {what}: {e}"), Some(e))
        }
    }

    fn wrap<T>(&self, what: &str, r: PyResult<T>) -> PyResult<T> {
        r.map_err(|e| self.wrap_err(what, e))
    }

    /// The pending Python exception, with context.
    #[cold]
    fn fetch(&self, what: &str) -> PyErr {
        self.wrap_err(what, PyErr::fetch(self.py))
    }

    /// Pushes a new reference from a CPython constructor (NULL: its exception).
    #[inline(always)]
    fn push_new(&mut self, what: &str, p: *mut ffi::PyObject) -> PyResult<()> {
        if p.is_null() {
            return Err(self.fetch(what));
        }
        self.stack.push(p);
        Ok(())
    }

    /// Pushes a new reference to a live object.
    #[inline(always)]
    fn push_ref(&mut self, p: *mut ffi::PyObject) {
        // SAFETY: p is live; the stack owns the new reference.
        unsafe { ffi::Py_INCREF(p) };
        self.stack.push(p);
    }

    fn pop(&mut self) -> PyResult<Bound<'py, PyAny>> {
        match self.stack.pop() {
            // SAFETY: the stack owned this reference; it moves into the Bound.
            Some(p) => Ok(unsafe { Bound::from_owned_ptr(self.py, p) }),
            None => Err(self.internal("value stack underflow")),
        }
    }

    fn top(&self) -> PyResult<Bound<'py, PyAny>> {
        match self.stack.last() {
            // SAFETY: a live object owned by the stack; the Bound takes its own reference.
            Some(p) => Ok(unsafe { Bound::from_borrowed_ptr(self.py, *p) }),
            None => Err(self.internal("value stack underflow")),
        }
    }

    /// Where the top `n` values start.
    #[inline(always)]
    fn split(&self, n: usize) -> PyResult<usize> {
        self.stack
            .len()
            .checked_sub(n)
            .ok_or_else(|| self.internal("value stack underflow"))
    }

    /// Where the top `n` values start, with the container they go into just below.
    #[inline(always)]
    fn split_into(&self, n: usize) -> PyResult<(usize, *mut ffi::PyObject)> {
        match self.stack.len().checked_sub(n + 1) {
            Some(t) => Ok((t + 1, self.stack[t])),
            None => Err(self.internal("value stack underflow")),
        }
    }

    /// Drops the values from `at` up.
    #[inline(always)]
    fn drop_from(&mut self, at: usize) {
        for p in self.stack.drain(at..) {
            // SAFETY: the stack owned these references.
            unsafe { ffi::Py_DECREF(p) };
        }
    }

    /// True when the top `n` values, every `step`-th from the first, are inert keys.
    fn inert_keys(&self, n: usize, step: usize) -> bool {
        match self.stack.len().checked_sub(n) {
            Some(at) => self.stack[at..].iter().step_by(step).all(|&p| {
                // SAFETY: p is live; only its type is read.
                let str_key = unsafe { ffi::PyUnicode_CheckExact(p) != 0 };
                str_key || inert_key(p, false)
            }),
            None => false,
        }
    }

    /// The Python object of a table global (`None` for those never called directly).
    fn table_object(&self, g: Global) -> PyResult<Option<Bound<'py, PyAny>>> {
        let r = table_object(self.py, g).map(|o| o.cloned());
        self.wrap(&core::machine::global_name(g), r)
    }

    fn class(&self, c: u32) -> PyResult<&Found<'py>> {
        self.res
            .found
            .get(c as usize)
            .ok_or_else(|| self.internal("unknown class index"))
    }

    fn blank(&self, ty: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
        let empty = PyTuple::empty(self.py);
        // SAFETY: object.__new__(cls): the base allocator; for a Python-defined class
        // (checked by describe) no user code runs.
        let p = unsafe {
            let base = addr_of_mut!(ffi::PyBaseObject_Type);
            match (*base).tp_new {
                Some(tp_new) => tp_new(ty.as_type_ptr(), empty.as_ptr(), std::ptr::null_mut()),
                None => std::ptr::null_mut(),
            }
        };
        if p.is_null() {
            return Err(self.fetch("an instance"));
        }
        // SAFETY: a new reference.
        Ok(unsafe { Bound::from_owned_ptr(self.py, p) })
    }

    /// `Call::Blank(c)` on the value stack (the class and its empty argument tuple, replaced
    /// by a blank instance), as `exec` performs it.
    fn blank_now(&mut self, c: u32) -> PyResult<()> {
        let (Some(found), Some(at)) = (
            self.res.found.get(c as usize),
            self.stack.len().checked_sub(2),
        ) else {
            return Err(self.internal("unknown class index"));
        };
        let obj = self.blank(&found.cls)?;
        self.drop_from(at);
        self.stack.push(obj.into_ptr());
        Ok(())
    }

    /// `bytes(n)` and `bytearray(n)` allocate `n` bytes: no more than `max_bytes_len`.
    fn sized(&self, b: core::Builtin, args: &Bound<'py, PyAny>) -> PyResult<()> {
        use pyo3::types::{PyBool, PyInt};
        if !matches!(b, core::Builtin::Bytes | core::Builtin::ByteArray) {
            return Ok(());
        }
        let Ok(first) = args.get_item(0) else {
            return Ok(());
        };
        if !(first.is_exact_instance_of::<PyInt>() || first.is_exact_instance_of::<PyBool>()) {
            return Ok(());
        }
        // Negative: the type's own ValueError; past an index-sized integer, its OverflowError.
        let n: i128 = first.extract().unwrap_or(i128::MAX);
        if n > i128::from(self.max_bytes_len) && n <= isize::MAX as i128 {
            let message = format!(
                "builtins.{}({n}) exceeds the limit of {} bytes (max_bytes_len)",
                if b == core::Builtin::Bytes {
                    "bytes"
                } else {
                    "bytearray"
                },
                self.max_bytes_len
            );
            return Err(PyErr::from_type(
                self.cfg.limit_error.bind(self.py).clone(),
                message,
            ));
        }
        Ok(())
    }

    /// `cls.__new__(cls, *args, **kwargs)` as pickle's `NEWOBJ`/`NEWOBJ_EX` make it: the
    /// class's `tp_new` slot, called directly.
    fn new_object(
        &self,
        cls: &Bound<'py, PyAny>,
        args: &Bound<'py, PyAny>,
        kwargs: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let type_error = |m: &str| {
            let e = pyo3::exceptions::PyTypeError::new_err(m.to_string());
            self.wrap_err("an instance", e)
        };
        let Ok(ty) = cls.cast::<PyType>() else {
            return Err(type_error("NEWOBJ class argument isn't a type object"));
        };
        if args.cast::<PyTuple>().is_err() {
            return Err(type_error("NEWOBJ expected an arg tuple"));
        }
        if kwargs.is_some_and(|k| k.cast::<PyDict>().is_err()) {
            return Err(type_error("NEWOBJ_EX kwargs argument should be a dict"));
        }
        // SAFETY: a live type object; its tp_new slot is called with a tuple and a dict
        // (or NULL), as CPython's own unpickler calls it.
        let p = unsafe {
            let t = ty.as_type_ptr();
            match (*t).tp_new {
                Some(tp_new) => tp_new(
                    t,
                    args.as_ptr(),
                    kwargs.map_or(std::ptr::null_mut(), |k| k.as_ptr()),
                ),
                None => return Err(type_error("NEWOBJ class argument has NULL tp_new")),
            }
        };
        if p.is_null() {
            return Err(self.fetch("an instance"));
        }
        // SAFETY: a new reference.
        Ok(unsafe { Bound::from_owned_ptr(py, p) })
    }

    /// Moves the top values into the exact list just below them, growing it once.
    fn extend_list(&mut self, at: usize, list: *mut ffi::PyObject) -> PyResult<()> {
        let n = self.stack.len() - at;
        // SAFETY: list is live; only its type is read.
        if unsafe { ffi::PyList_CheckExact(list) } == 0 {
            return Err(self.internal("APPENDS target is not a list"));
        }
        if n == 0 {
            return Ok(());
        }
        // SAFETY: list is an exact list (checked above) that only this call can see
        // change meanwhile (no Python code runs here); the stack owns the n references,
        // and forgets them once the list took them.
        unsafe {
            cpython::list_extend(self.py, list, &self.stack[at..])?;
            self.stack.set_len(at);
        }
        Ok(())
    }

    /// Performs one checked instruction on the value stack.
    fn exec(&mut self, instr: Instr, input: &[u8]) -> PyResult<()> {
        let py = self.py;
        match instr {
            // SAFETY (singletons): live objects; the stack takes a new reference.
            Instr::None => self.push_ref(unsafe { ffi::Py_None() }),
            Instr::Bool(b) => self.push_ref(unsafe {
                if b {
                    ffi::Py_True()
                } else {
                    ffi::Py_False()
                }
            }),
            Instr::Ellipsis => self.push_ref(unsafe { ffi::Py_Ellipsis() }),
            Instr::Int(v) => {
                // SAFETY: plain constructor.
                self.push_new("int", unsafe { ffi::PyLong_FromLongLong(v) })?;
            }
            Instr::LongBytes(b) => {
                let p = cpython::int_from_le_bytes(py, b.of(input));
                self.push_new("int", p)?;
            }
            Instr::LongText(t) => {
                let t = t.of(input);
                let text = std::ffi::CString::new(t)
                    .map_err(|_| self.fail("bad int text".into(), None))?;
                // SAFETY: a NUL-terminated string that the machine checked `int(text, 0)`
                // reads, as pickle's INT and LONG do.
                let p = unsafe { ffi::PyLong_FromString(text.as_ptr(), std::ptr::null_mut(), 0) };
                self.push_new("int", p)?;
            }
            Instr::Float(f) => {
                // SAFETY: plain constructor.
                self.push_new("float", unsafe { ffi::PyFloat_FromDouble(f) })?;
            }
            Instr::Str(s) => {
                let p = new_str(s.of(input));
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
            Instr::StrQuoted(s) => {
                // The machine checked that it decodes, to ASCII.
                let text = core::text::string_literal(s.of(input), 0)
                    .map_err(|e| self.fail(e.to_string(), None))?;
                let p = ascii_str(&text);
                self.push_new("str", p)?;
            }
            Instr::StrAscii(s) => {
                // The machine checked that it is ASCII.
                let p = ascii_str(s.of(input));
                self.push_new("str", p)?;
            }
            Instr::StrDecoded(s) => {
                let p = self.res.decode(s.of(input));
                self.push_new("str", p)?;
            }
            Instr::StrQuotedDecoded(s) | Instr::BytesQuoted(s) => {
                // The machine checked that the literal unescapes.
                let b = core::text::string_literal_bytes(s.of(input), 0)
                    .map_err(|e| self.fail(e.to_string(), None))?;
                let p = match instr {
                    Instr::BytesQuoted(_) => {
                        // SAFETY: b is a live vector.
                        unsafe {
                            ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as isize)
                        }
                    }
                    _ => self.res.decode(&b),
                };
                self.push_new("str", p)?;
            }
            Instr::Bytes(b) => {
                let b = b.of(input);
                // SAFETY: b is a live slice.
                let p =
                    unsafe { ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as isize) };
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
                let at = self.split(n as usize)?;
                // SAFETY: plain constructor.
                let list = unsafe { ffi::PyList_New(n as isize) };
                if list.is_null() {
                    return Err(self.fetch("list"));
                }
                for (i, item) in self.stack.drain(at..).enumerate() {
                    // SAFETY: a fresh list of n slots, each filled once with a reference
                    // moved out of the stack (PyList_SET_ITEM steals it).
                    unsafe { ffi::PyList_SET_ITEM(list, i as isize, item) };
                }
                self.stack.push(list);
            }
            Instr::Tuple(n) => {
                let at = self.split(n as usize)?;
                // SAFETY: plain constructor (the empty tuple for n == 0).
                let tuple = unsafe { ffi::PyTuple_New(n as isize) };
                if tuple.is_null() {
                    return Err(self.fetch("tuple"));
                }
                for (i, item) in self.stack.drain(at..).enumerate() {
                    // SAFETY: a fresh tuple of n slots, each filled once with a reference
                    // moved out of the stack (PyTuple_SET_ITEM steals it).
                    unsafe { ffi::PyTuple_SET_ITEM(tuple, i as isize, item) };
                }
                self.stack.push(tuple);
            }
            Instr::Dict(n) => {
                let at = self.split(2 * n as usize)?;
                let dict = cpython::new_dict(n as usize);
                if dict.is_null() {
                    return Err(self.fetch("dict"));
                }
                // SAFETY: a new reference, owned by this Bound.
                let dict = unsafe { Bound::from_owned_ptr(py, dict) };
                for pair in self.stack[at..].chunks_exact(2) {
                    // SAFETY: live objects; a fresh dict.
                    if unsafe { ffi::PyDict_SetItem(dict.as_ptr(), pair[0], pair[1]) } < 0 {
                        return Err(self.fetch("dict"));
                    }
                }
                self.drop_from(at);
                self.stack.push(dict.into_ptr());
            }
            Instr::FrozenSet(n) => {
                let at = self.split(n as usize)?;
                // SAFETY: plain constructor.
                let set = unsafe { ffi::PyFrozenSet_New(std::ptr::null_mut()) };
                if set.is_null() {
                    return Err(self.fetch("frozenset"));
                }
                // SAFETY: a new reference, owned by this Bound.
                let set = unsafe { Bound::from_owned_ptr(py, set) };
                for item in &self.stack[at..] {
                    // SAFETY: PySet_Add may fill a brand-new frozenset nobody else sees.
                    if unsafe { ffi::PySet_Add(set.as_ptr(), *item) } < 0 {
                        return Err(self.fetch("frozenset"));
                    }
                }
                self.drop_from(at);
                self.stack.push(set.into_ptr());
            }
            Instr::Append(n) => {
                let (at, list) = self.split_into(n as usize)?;
                self.extend_list(at, list)?;
            }
            Instr::AppendDeque(n) => {
                let at = self.split(n as usize)?;
                let items = PyList::empty(py);
                for p in self.stack.drain(at..) {
                    // SAFETY: the stack owned this reference; the Bound takes it over.
                    let item = unsafe { Bound::from_owned_ptr(py, p) };
                    items.append(item)?;
                }
                let deque = self.top()?;
                let r = deque.call_method1("extend", (items,));
                self.wrap("deque", r)?;
            }
            Instr::SetItems(n) | Instr::SetItemsMapping(n) => {
                let (at, target) = self.split_into(2 * n as usize)?;
                let exact = matches!(instr, Instr::SetItems(_));
                for pair in self.stack[at..].chunks_exact(2) {
                    // SAFETY: the machine checked the target's kind: a dict, or a dict
                    // subclass from the table (OrderedDict, Counter, defaultdict); it stays
                    // on the stack (alive) meanwhile.
                    let rc = unsafe {
                        if exact {
                            ffi::PyDict_SetItem(target, pair[0], pair[1])
                        } else {
                            ffi::PyObject_SetItem(target, pair[0], pair[1])
                        }
                    };
                    if rc < 0 {
                        return Err(self.fetch("dict"));
                    }
                }
                self.drop_from(at);
            }
            Instr::AppendMethod(n) | Instr::AddMethod(n) => {
                let at = self.split(n as usize)?;
                let items = PyList::empty(py);
                for p in self.stack.drain(at..) {
                    // SAFETY: the stack owned this reference; the Bound takes it over.
                    let item = unsafe { Bound::from_owned_ptr(py, p) };
                    items.append(item)?;
                }
                let target = self.top()?;
                let (helper, what) = match instr {
                    Instr::AppendMethod(_) => (&self.helpers.append_items, "APPENDS"),
                    _ => (&self.helpers.add_items, "ADDITEMS"),
                };
                let r = helper.bind(py).call1((target, items));
                self.wrap(what, r)?;
            }
            Instr::AddItems(n) => {
                let (at, set) = self.split_into(n as usize)?;
                for item in &self.stack[at..] {
                    // SAFETY: the machine checked that the target is a set; it stays on
                    // the stack (alive) meanwhile.
                    if unsafe { ffi::PySet_Add(set, *item) } < 0 {
                        return Err(self.fetch("set"));
                    }
                }
                self.drop_from(at);
            }
            Instr::Put(slot) => {
                let slot = slot as usize;
                let Some(&top) = self.stack.last() else {
                    return Err(self.internal("PUT on an empty stack"));
                };
                // SAFETY: top is live; the memo owns the new reference.
                unsafe { ffi::Py_INCREF(top) };
                if slot == self.memo.len() {
                    self.memo.push(top);
                } else if let Some(cell) = self.memo.get_mut(slot) {
                    let old = std::mem::replace(cell, top);
                    // SAFETY: the memo owned the reference it replaced.
                    unsafe { ffi::Py_DECREF(old) };
                } else {
                    // SAFETY: the reference taken above, unused.
                    unsafe { ffi::Py_DECREF(top) };
                    return Err(self.internal("bad memo slot"));
                }
            }
            Instr::Get(slot) => {
                let Some(&p) = self.memo.get(slot as usize) else {
                    return Err(self.internal("empty memo slot"));
                };
                self.push_ref(p);
            }
            Instr::Pop(n) => {
                let at = self.split(n as usize)?;
                self.drop_from(at);
            }
            Instr::Dup => {
                let Some(&top) = self.stack.last() else {
                    return Err(self.internal("DUP"));
                };
                self.push_ref(top);
            }
            Instr::Global(g) => {
                let obj = match g {
                    Global::Class(c, _) => self.class(c)?.cls.clone().into_any(),
                    Global::Extra(c) => match self.res.extras.get(c as usize) {
                        Some(o) => o.clone(),
                        None => return Err(self.internal("unknown allow= index")),
                    },
                    g => self
                        .table_object(g)?
                        .unwrap_or_else(|| py.None().into_bound(py)),
                };
                self.stack.push(obj.into_ptr());
            }
            Instr::Call(call) => {
                let kwargs = match call {
                    Call::NewEx(_) => Some(self.pop()?),
                    _ => None,
                };
                let args = self.pop()?;
                let callable = self.pop()?;
                let v = match call {
                    Call::New(_) | Call::NewEx(_) => {
                        self.new_object(&callable, &args, kwargs.as_ref())?
                    }
                    Call::NewBuiltin(b) => {
                        // `bytearray.__new__` makes an empty one whatever it is given.
                        if b == core::Builtin::Bytes {
                            self.sized(b, &args)?;
                        }
                        self.new_object(&callable, &args, None)?
                    }
                    _ => self.call(call, callable, args)?,
                };
                self.stack.push(v.into_ptr());
            }
            Instr::Build(build) => {
                if let Build::Fields(c) = build {
                    if self.build_fast(c, false)? {
                        return Ok(());
                    }
                }
                let state = self.pop()?;
                let obj = self.top()?;
                let r = match build {
                    Build::Fields(c) => {
                        let info = &self.class(c)?.info;
                        self.helpers.set_state.bind(py).call1((info, obj, state))
                    }
                    Build::Uuid => self.helpers.uuid_state.bind(py).call1((obj, state)),
                    Build::Exception => self.helpers.exception_state.bind(py).call1((obj, state)),
                    Build::Attrs => self.helpers.attrs_state.bind(py).call1((obj, state)),
                    Build::Generic => self.helpers.build_state.bind(py).call1((obj, state)),
                };
                let what = match build {
                    Build::Fields(_) | Build::Generic => "an instance",
                    Build::Uuid => "uuid.UUID",
                    Build::Exception => "an exception",
                    Build::Attrs => "an instance",
                };
                self.wrap(what, r)?;
            }
        }
        Ok(())
    }

    /// BUILD of a plain `__dict__` class whose state is a dict of exactly its declared
    /// fields (or any non-dunder str keys when it declares none): written straight into
    /// the instance `__dict__`, as pickle does, and the state popped. No code runs. `false`
    /// (nothing done) sends it to the general path.
    fn build_fast(&mut self, c: u32, streaming: bool) -> PyResult<bool> {
        let py = self.py;
        let Some(Some(fields)) = self.res.found.get_mut(c as usize).map(|f| &mut f.fields) else {
            return Ok(false);
        };
        let n = self.stack.len();
        if n < 2 {
            return Ok(false);
        }
        let (obj, state) = (self.stack[n - 2], self.stack[n - 1]);
        // SAFETY: a live object; only its type is read.
        if unsafe { ffi::PyDict_CheckExact(state) } == 0 {
            return Ok(false);
        }
        // SAFETY: state is live (owned by the stack) and an exact dict.
        let state = unsafe { Bound::from_borrowed_ptr(py, state) };
        let state = state.cast::<PyDict>()?;
        let fits = match fields {
            DictFields::Any => state_keys(state, |k| {
                let Ok(k) = k.cast_exact::<PyString>() else {
                    return Ok(false);
                };
                let Ok(k) = k.to_str() else {
                    return Ok(false);
                };
                Ok(!(k.len() >= 4 && k.starts_with("__") && k.ends_with("__")))
            })?,
            DictFields::Named(decl) => {
                let set = set_declared_fields(obj, state, decl, streaming);
                if !set.map_err(|e| self.wrap_err("an instance", e))? {
                    return Ok(false);
                }
                self.drop_from(n - 1);
                return Ok(true);
            }
            DictFields::Set(len, set) => {
                state.len() == *len && state_keys(state, |k| set.contains(k))?
            }
        };
        if !fits {
            return Ok(false);
        }
        // SAFETY: obj is a live instance of a class with a __dict__ (kind checked by
        // describe); the generic getter returns a new reference to it, creating it if needed.
        let dict = unsafe { ffi::PyObject_GenericGetDict(obj, std::ptr::null_mut()) };
        if dict.is_null() {
            return Err(self.fetch("an instance"));
        }
        // SAFETY: a new reference, owned by this Bound.
        let dict = unsafe { Bound::from_owned_ptr(py, dict) };
        if set_interned(dict.as_ptr(), state).is_err() {
            return Err(self.fetch("an instance"));
        }
        drop(dict);
        let at = n - 1;
        self.drop_from(at);
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
            return Err(self.internal("call arguments are not a tuple"));
        };
        match call {
            Call::Std(g) => {
                if let Global::Builtin(b) = g {
                    self.sized(b, args.as_any())?;
                }
                let name = core::machine::global_name(g);
                let r = callable.call1(args);
                self.wrap(&name, r)
            }
            Call::ZoneInfoUnpickle => {
                let zi = self
                    .table_object(Global::ZoneInfo)?
                    .ok_or_else(|| self.internal("ZoneInfo"))?;
                self.wrap("zoneinfo.ZoneInfo", zi.getattr("_unpickle"))
            }
            Call::Latin1 => {
                let text = args.get_item(0)?;
                // SAFETY: the machine checked the argument is a str.
                let p = unsafe { ffi::PyUnicode_AsLatin1String(text.as_ptr()) };
                if p.is_null() {
                    return Err(self.fetch("bytes (latin-1)"));
                }
                // SAFETY: a new reference.
                Ok(unsafe { Bound::from_owned_ptr(py, p) })
            }
            Call::Blank(c) => self.blank(&self.class(c)?.cls),
            Call::BlankUuid => {
                let uuid = self
                    .table_object(Global::Uuid)?
                    .ok_or_else(|| self.internal("UUID"))?;
                let Ok(ty) = uuid.cast_into::<PyType>() else {
                    return Err(self.internal("not a class"));
                };
                self.blank(&ty)
            }
            Call::NamedTuple(c) | Call::NamedTupleFromState(c) => {
                let found = self.class(c)?;
                let fields = if matches!(call, Call::NamedTuple(_)) {
                    args.into_any()
                } else {
                    args.get_item(2)?
                };
                let r = self
                    .helpers
                    .new_tuple
                    .bind(py)
                    .call1((&found.info, &found.cls, fields));
                self.wrap("a named tuple", r)
            }
            Call::EnumMember(c) => {
                let cls = &self.class(c)?.cls;
                let r = self
                    .helpers
                    .enum_member
                    .bind(py)
                    .call1((cls, args.get_item(0)?));
                self.wrap("an enum member", r)
            }
            Call::Extra(_) => {
                let r = callable.call1(args);
                self.wrap("an allow= constructor", r)
            }
            Call::Class(c) => {
                let name = self.res.names.get(c as usize).cloned().unwrap_or_default();
                let r = callable.call1(args);
                self.wrap(&name, r)
            }
            Call::NewObjFn(_) | Call::NewObjExFn(_) => {
                let cls = args.get_item(0)?;
                if let Call::NewObjFn(_) = call {
                    let rest = args.get_slice(1, args.len());
                    return self.new_object(&cls, rest.as_any(), None);
                }
                if args.len() != 3 {
                    return Err(self.internal("copyreg.__newobj_ex__ arguments"));
                }
                let (a, kw) = (args.get_item(1)?, args.get_item(2)?);
                self.new_object(&cls, &a, Some(&kw))
            }
            Call::Reconstruct(_) => {
                let r = self.helpers.reconstructor.bind(py).call1(args);
                self.wrap("copyreg._reconstructor", r)
            }
            Call::BlankStd(g) => {
                let cls = self
                    .table_object(g)?
                    .ok_or_else(|| self.internal("class"))?;
                let Ok(ty) = cls.cast_into::<PyType>() else {
                    return Err(self.internal("not a class"));
                };
                self.blank(&ty)
            }
            Call::New(_) | Call::NewEx(_) | Call::NewBuiltin(_) => {
                Err(self.internal("NEWOBJ routed as a call"))
            }
        }
    }
}
