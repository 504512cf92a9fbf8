//! Python adapters for the wire codec core: the `Codec` class.

pub(crate) mod buffer;
mod bulk;
mod classbuild;
mod describe;
pub(crate) mod errors;
mod explain;
mod sink;
pub(crate) mod source;
pub(crate) mod structs;

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::PyMemoryError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use bytewright_columns::{Columnar, Request};
use bytewright_wire::compile::compile_with;
use bytewright_wire::host::{Output, SliceOutput};
use bytewright_wire::{compile, pack, unpack, Program, Schema, Scratch};

use buffer::{BytesOut, InBuf};
use errors::{raise, Mode};
use sink::PySink;
use source::PySource;
use structs::{Converters, StructInfo};

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Runs `f` with this thread's VM working memory (a fresh one if a call re-enters).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::new()),
    })
}

/// One struct's adapter info as the frontend passes it: (class or None, field names,
/// defaults, decoders, encoders).
type StructArg<'py> = (
    Option<Bound<'py, PyType>>,
    Vec<Bound<'py, PyString>>,
    Vec<Py<PyAny>>,
    Converters,
    Converters,
);

/// A compiled codec: immutable, thread-safe, picklable.
#[pyclass(frozen, module = "bytewright._native", name = "Codec")]
pub struct Codec {
    prog: Arc<Program>,
    structs: Vec<StructInfo>,
    typed: bool,
    /// The description the program was compiled from (a codec's persisted form).
    schema: Arc<Schema>,
    /// The last packed size, so `pack` usually allocates once.
    size_hint: AtomicUsize,
    /// `pack_many`'s fast lane, when the root is a struct of plain integers.
    flat: Option<bulk::FlatInts>,
    /// The column layout, built on first columnar use.
    columnar: OnceLock<Arc<Columnar>>,
    /// The same with no checksum verified (`unpack_table(verify_checksums=False)`).
    unverified: OnceLock<Arc<Columnar>>,
}

impl Codec {
    /// The codec of a compiled schema, its struct infos checked against the program.
    fn build(
        py: Python<'_>,
        schema: Arc<Schema>,
        prog: Program,
        infos: Vec<StructInfo>,
        typed: bool,
    ) -> PyResult<Self> {
        for s in &prog.structs {
            let info = infos.get(s.sink_id as usize).ok_or_else(|| {
                errors::schema_error(
                    py,
                    format!("{}: no struct info for id {}", s.name, s.sink_id),
                )
            })?;
            if info.keys.len() != s.fields.len() {
                return Err(errors::schema_error(
                    py,
                    format!("{}: struct info has the wrong field count", s.name),
                ));
            }
        }
        let hint = prog.static_size.unwrap_or(prog.min_size);
        let flat = bulk::flat_ints(&prog, &infos);
        Ok(Codec {
            columnar: OnceLock::new(),
            unverified: OnceLock::new(),
            flat,
            prog: Arc::new(prog),
            structs: infos,
            typed,
            schema,
            size_hint: AtomicUsize::new(hint),
        })
    }

    /// The struct infos as `Codec(...)` takes them (for pickling and `to_bytes`).
    fn struct_args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let conv = |v: &[Option<Py<PyAny>>]| -> PyResult<Bound<'py, PyAny>> {
            if v.is_empty() {
                Ok(py.None().into_bound(py))
            } else {
                Ok(PyList::new(py, v.iter().map(|c| c.as_ref().map(|c| c.bind(py))))?.into_any())
            }
        };
        let items = self
            .structs
            .iter()
            .map(|s| {
                let cls = if self.typed {
                    s.class.as_ref().map(|c| c.bind(py))
                } else {
                    None
                };
                (
                    cls,
                    PyList::new(py, s.keys.iter().map(|k| k.bind(py)))?,
                    PyList::new(py, s.defaults.iter().map(|d| d.bind(py)))?,
                    conv(&s.decoders)?,
                    conv(&s.encoders)?,
                )
                    .into_pyobject(py)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The codec's columnar machinery (layout and strided plan), built once.
    fn columnar(&self) -> &Arc<Columnar> {
        self.columnar
            .get_or_init(|| Arc::new(Columnar::new(self.prog.clone())))
    }

    /// The root struct's name, for messages.
    fn root_name(&self) -> String {
        match &self.prog.root {
            bytewright_wire::program::Node::Struct(i) => {
                self.prog.structs[*i as usize].name.to_string()
            }
            _ => "value".into(),
        }
    }

    fn unpack_at<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        offset: usize,
    ) -> Result<(Bound<'py, PyAny>, usize), Box<bytewright_wire::Error<PyErr>>> {
        let mut sink = PySink {
            py,
            structs: &self.structs,
            typed: self.typed,
        };
        with_scratch(|w| unpack::unpack_with(&self.prog, w, &mut sink, data, offset))
    }
}

#[pymethods]
impl Codec {
    /// The objects the codec holds (its structs' classes, names, defaults and converters):
    /// a class and its codec refer to each other, a cycle the collector must see to free.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for s in &self.structs {
            s.traverse(&visit)?;
        }
        Ok(())
    }

    /// A codec from its schema description (JSON) and, by struct id, each struct's adapter
    /// info (class or None, field names, defaults, decoders, encoders). Struct classes get
    /// theirs from `compile_struct`.
    #[new]
    #[pyo3(signature = (schema, structs, typed=false))]
    fn new(
        py: Python<'_>,
        schema: &str,
        structs: &Bound<'_, PyAny>,
        typed: bool,
    ) -> PyResult<Self> {
        let schema = Schema::from_json(schema).map_err(|m| errors::schema_error(py, m))?;
        let items: Vec<Bound<'_, PyAny>> = structs.extract()?;
        let infos = items
            .iter()
            .map(|item| {
                let (cls, names, defaults, dec, enc): StructArg<'_> = item.extract()?;
                StructInfo::new(cls, names, defaults, (dec, enc), typed)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let prog = compile(&schema).map_err(|e| errors::compile_error(py, e))?;
        Codec::build(py, Arc::new(schema), prog, infos, typed)
    }

    /// `Codec[T]` in annotations (what it unpacks), as for any generic class.
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let alias = cls.py().import("types")?.getattr("GenericAlias")?;
        alias.call1((cls, item))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let c = slf.get();
        let args = (c.schema.to_json(), c.struct_args(py)?, c.typed).into_pyobject(py)?;
        Ok((slf.get_type(), args))
    }

    /// The codec as bytes, to rebuild it elsewhere with `Codec.from_bytes` (dict codecs only).
    fn to_bytes(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let f = py.import("bytewright._persist")?.getattr("dumps")?;
        Ok(
            f.call1((self.schema.to_json(), self.struct_args(py)?, self.typed))?
                .unbind(),
        )
    }

    /// Rebuilds a codec from `to_bytes` output, compiling it natively.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let f = py.import("bytewright._persist")?.getattr("loads")?;
        let r = f
            .call1((data,))
            .map_err(|e| errors::schema_error(py, e.to_string()))?;
        let (schema, structs): (String, Bound<'_, PyAny>) = r.extract()?;
        Codec::new(py, &schema, &structs, false)
    }

    /// The packed size when every message has the same size, else None.
    #[getter]
    fn static_size(&self) -> Option<usize> {
        self.prog.static_size
    }

    /// The smallest possible packed size.
    #[getter]
    fn min_size(&self) -> usize {
        self.prog.min_size
    }

    /// Whether unpack builds typed instances (True) or dicts and lists (False).
    #[getter]
    fn typed(&self) -> bool {
        self.typed
    }

    /// Names of the fields of struct `sink_id` that pack computes when they are left out.
    fn derived_fields(&self, sink_id: u32) -> Vec<String> {
        self.prog
            .structs
            .iter()
            .find(|s| s.sink_id == sink_id)
            .map(|s| {
                s.fields
                    .iter()
                    .zip(&s.derived)
                    .filter(|(_, d)| **d)
                    .map(|(n, _)| n.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The schema description this codec was compiled from (JSON).
    #[getter]
    fn schema(&self) -> String {
        self.schema.to_json()
    }

    /// Packs a value into a new bytes object.
    fn pack(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let src = PySource::new(py, &self.structs);
        let mut out = BytesOut::new(py, self.size_hint.load(Ordering::Relaxed))?;
        match with_scratch(|w| pack::pack_with(&self.prog, w, &src, &mut out, value)) {
            Ok(()) => {
                self.size_hint
                    .store(bytewright_wire::host::Output::pos(&out), Ordering::Relaxed);
                out.finish(py)
            }
            Err(e) => Err(raise(py, *e, Mode::PackGrowable)),
        }
    }

    /// Packs a value straight into a writable buffer at `offset`; returns the end offset.
    #[pyo3(signature = (buffer, value, offset=0))]
    fn pack_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        offset: usize,
    ) -> PyResult<usize> {
        let mut buf = InBuf::new(buffer, true)?;
        let slice = buf.as_mut_slice();
        if offset > slice.len() {
            return Err(errors::pack_error(
                py,
                format!(
                    "offset {offset} is past the end of the {}-byte buffer",
                    slice.len()
                ),
                "",
            ));
        }
        let src = PySource::new(py, &self.structs);
        let mut out = SliceOutput::new(slice, offset);
        match with_scratch(|w| pack::pack_with(&self.prog, w, &src, &mut out, value)) {
            Ok(()) => Ok(out.end()),
            Err(e) => Err(raise(py, *e, Mode::Pack)),
        }
    }

    /// Packs many values back to back into one bytes object, in one call. Items are
    /// typed instances, mappings, or tuples listing every named field in order.
    fn pack_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let src = PySource::new(py, &self.structs);
        let per = self.size_hint.load(Ordering::Relaxed).max(1);
        let hint = items.len().unwrap_or(1).max(1);
        let mut out = BytesOut::new(py, per.saturating_mul(hint))?;
        let mut scratch = Scratch::new();
        let mut one = |i: usize, item: &Bound<'_, PyAny>| -> PyResult<()> {
            if let Some(flat) = &self.flat {
                let at = Output::pos(&out);
                if Output::grow(&mut out, flat.size).is_err() {
                    return Err(PyMemoryError::new_err("cannot grow the output buffer"));
                }
                if flat.pack(item, Output::slot(&mut out, at, flat.size)) {
                    return Ok(());
                }
                out.truncate(at);
            }
            pack::pack_with(&self.prog, &mut scratch, &src, &mut out, item).map_err(|mut e| {
                e.rev_path.push(bytewright_wire::Seg::Index(i));
                raise(py, *e, Mode::PackGrowable)
            })
        };
        for (i, item) in items.try_iter()?.enumerate() {
            one(i, &item?)?;
        }
        out.finish(py)
    }

    /// Unpacks a buffer of back-to-back messages into a list, in one call.
    fn iter_unpack<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let buf = InBuf::new(data, false)?;
        let bytes = buf.as_slice();
        let out = PyList::empty(py);
        let mut offset = 0;
        let mut i = 0;
        while offset < bytes.len() {
            match self.unpack_at(py, bytes, offset) {
                Ok((v, end)) => {
                    if end == offset {
                        return Err(errors::decode_error(
                            py,
                            format!("[{i}]: a message of zero bytes cannot be iterated"),
                            "",
                            offset,
                        ));
                    }
                    out.append(v)?;
                    offset = end;
                }
                Err(mut e) => {
                    e.rev_path.push(bytewright_wire::Seg::Index(i));
                    return Err(raise(py, *e, Mode::Unpack));
                }
            }
            i += 1;
        }
        Ok(out)
    }

    /// Unpacks exactly one value: trailing bytes are an error.
    fn unpack<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let buf = InBuf::new(data, false)?;
        let bytes = buf.as_slice();
        match self.unpack_at(py, bytes, 0) {
            Ok((v, end)) if end == bytes.len() => Ok(v),
            Ok((_, end)) => Err(explain::trailing_error(
                py,
                bytes.len(),
                end,
                &self.root_name(),
            )),
            Err(e) => Err(raise(py, *e, Mode::Unpack)),
        }
    }

    /// Unpacks one value at `offset`; returns (value, end offset).
    #[pyo3(signature = (data, offset=0))]
    fn unpack_from<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offset: usize,
    ) -> PyResult<(Bound<'py, PyAny>, usize)> {
        let buf = InBuf::new(data, false)?;
        self.unpack_at(py, buf.as_slice(), offset)
            .map_err(|e| raise(py, *e, Mode::Unpack))
    }

    /// The field tree of one message at `offset`, as the plain tuples `bytewright.explain`
    /// wraps (private: `bw.explain(codec, data)` is the API). With `whole`, bytes after it
    /// are the error `unpack` raises. Never raises a `DecodeError`: it is returned with the
    /// tree decoded up to it.
    #[pyo3(name = "_explain", signature = (data, offset=0, whole=true))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offset: usize,
        whole: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let buf = InBuf::new(data, false)?;
        explain::explain_py(
            py,
            &self.prog,
            &self.structs,
            self.typed,
            buf.as_slice(),
            offset,
            whole,
            &self.root_name(),
        )
    }

    /// Like `unpack_from`, but returns a falsy `Incomplete` (with `.needed`) when the
    /// buffer ends before the message does.
    #[pyo3(signature = (data, offset=0))]
    fn parse<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        offset: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let buf = InBuf::new(data, false)?;
        match self.unpack_at(py, buf.as_slice(), offset) {
            Ok(pair) => Ok(pair.into_pyobject(py)?.into_any()),
            Err(e) if e.is_incomplete() => errors::incomplete(py, &e),
            Err(e) => Err(raise(py, *e, Mode::Unpack)),
        }
    }

    /// Decodes back-to-back messages into a `bw.Table`: one column per field, with no
    /// Python object per record. `count` asks for exactly that many messages; `threads`
    /// (default: one per MiB up to the cores) splits the work; `verify_checksums=False`
    /// keeps checksum fields as stored without checking them.
    #[pyo3(signature = (data, *, count=None, offset=0, threads=None, enum_names=false, verify_checksums=true))]
    #[allow(clippy::too_many_arguments)]
    fn unpack_table(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        count: Option<usize>,
        offset: usize,
        threads: Option<usize>,
        enum_names: bool,
        verify_checksums: bool,
    ) -> PyResult<crate::columns::Table> {
        let buf = InBuf::new(data, false)?;
        let bytes = buf.as_slice();
        let req = Request {
            offset,
            count,
            threads: crate::columns::auto_threads(threads, bytes.len().saturating_sub(offset)),
        };
        let enums = if enum_names {
            Some(crate::columns::enum_columns(
                py,
                self.columnar(),
                &self.structs,
            )?)
        } else {
            None
        };
        let columnar = if verify_checksums {
            self.columnar()
        } else {
            self.unverified
                .get_or_init(|| Arc::new(self.columnar().without_checksums()))
        };
        crate::columns::decode(py, columnar, bytes, req, enums.as_ref())
    }

    /// Tables of at most `rows` rows from a path, a binary file object or an iterable of
    /// bytes chunks, in bounded memory.
    #[pyo3(signature = (source, *, rows=65536, threads=None, enum_names=false))]
    fn iter_tables(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        rows: usize,
        threads: Option<usize>,
        enum_names: bool,
    ) -> PyResult<crate::columns::TableReader> {
        let enums = if enum_names {
            Some(crate::columns::enum_columns(
                py,
                self.columnar(),
                &self.structs,
            )?)
        } else {
            None
        };
        crate::columns::TableReader::new(py, self.columnar().clone(), source, rows, threads, enums)
    }

    /// Walks back-to-back messages from `offset` without decoding them, reading only what
    /// their sizes depend on: `(count, end)`, the number of whole messages that start before
    /// `stop` (default: the end of `data`) and where the last of them ends. A message that
    /// the end of `data` cuts off is not counted, so chunks of a stream can be walked.
    #[pyo3(signature = (data, *, offset=0, stop=None))]
    fn scan_messages(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        offset: usize,
        stop: Option<usize>,
    ) -> PyResult<(usize, usize)> {
        let buf = InBuf::new(data, false)?;
        let bytes = buf.as_slice();
        if offset > bytes.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "offset {offset} is past the end of the {}-byte buffer",
                bytes.len()
            )));
        }
        let columnar = self.columnar();
        let stop = stop.unwrap_or(usize::MAX);
        py.detach(|| columnar.whole_before(bytes, offset, usize::MAX, stop))
            .map_err(|f| crate::columns::raise(py, f))
    }

    /// The Arrow schema of the tables this codec decodes (no data needed).
    #[getter]
    fn table_schema(&self) -> crate::columns::TableSchema {
        let c = self.columnar();
        crate::columns::TableSchema {
            schema: c.schema(&vec![false; c.layout.nodes.len()]),
        }
    }

    /// Packs every row of a table back to back: the bytes that packing each row alone
    /// gives, concatenated.
    fn pack_table(&self, py: Python<'_>, table: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        crate::columns::pack_table_bytes(py, self.columnar(), &self.prog, &self.structs, table)
    }

    /// Packs every row of a table into a writable buffer at `offset`; returns the end offset.
    fn pack_table_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        offset: usize,
        table: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let mut buf = InBuf::new(buffer, true)?;
        let slice = buf.as_mut_slice();
        if offset > slice.len() {
            return Err(errors::pack_error(
                py,
                format!(
                    "offset {offset} is past the end of the {}-byte buffer",
                    slice.len()
                ),
                "",
            ));
        }
        let mut out = SliceOutput::new(slice, offset);
        crate::columns::pack_table(
            py,
            self.columnar(),
            &self.prog,
            &self.structs,
            table,
            &mut out,
            Mode::Pack,
        )?;
        Ok(out.end())
    }

    fn __repr__(&self) -> String {
        let root = self.root_name();
        format!(
            "<bytewright.Codec {root} ({})>",
            if self.typed { "typed" } else { "dicts" }
        )
    }
}

/// The checksum and digest algorithm names the core implements.
#[pyfunction]
fn checksum_names() -> Vec<&'static str> {
    bytewright_wire::digest::Algo::names().to_vec()
}

/// `bytewright._native.compile_struct(cls, typed, limits, registries=None, parts=None)`:
/// the codec of a Struct class, described natively (see `describe.rs`) and compiled; the
/// registry bases it embeds are appended to `registries`, and the codecs of nested classes
/// whose programs it copied to `parts`.
#[pyfunction]
#[pyo3(signature = (cls, typed, limits, registries=None, parts=None))]
fn compile_struct<'py>(
    cls: &Bound<'py, PyAny>,
    typed: bool,
    limits: &Bound<'py, PyAny>,
    registries: Option<&Bound<'py, PyList>>,
    parts: Option<&Bound<'py, PyList>>,
) -> PyResult<Codec> {
    let py = cls.py();
    let d = describe::describe(cls, limits)?;
    if let Some(out) = registries {
        for r in &d.registries {
            out.append(r)?;
        }
    }
    if let Some(out) = parts {
        for (_, c) in &d.parts {
            out.append(c)?;
        }
    }
    // The structs of reused parts take their codec's info as it is.
    let mut given: Vec<Option<StructInfo>> = d.infos.iter().map(|_| None).collect();
    for (first, codec) in &d.parts {
        let c = codec.get();
        if c.typed == typed {
            for (j, info) in c.structs.iter().enumerate() {
                if let Some(slot) = given.get_mut(*first as usize + j) {
                    *slot = Some(info.clone_ref(py));
                }
            }
        }
    }
    let programs: Vec<(u32, &Program)> = d
        .parts
        .iter()
        .map(|(id, c)| (*id, &*c.get().prog))
        .collect();
    let prog = compile_with(&d.schema, &programs).map_err(|e| errors::compile_error(py, e))?;
    let infos = d
        .infos
        .into_iter()
        .zip(given)
        .map(|(a, given)| match given {
            Some(info) => Ok(info),
            None => {
                // The class's cached description shares the arg: take its references.
                let names = a.names.iter().map(|n| n.bind(py).clone()).collect();
                let defaults = a.defaults.iter().map(|d| d.clone_ref(py)).collect();
                if typed {
                    let conv = |c: &structs::Converters| {
                        c.as_ref().map(|v| {
                            v.iter()
                                .map(|x| x.as_ref().map(|x| x.clone_ref(py)))
                                .collect()
                        })
                    };
                    StructInfo::new(
                        Some(a.cls.bind(py).clone()),
                        names,
                        defaults,
                        (conv(&a.decoders), conv(&a.encoders)),
                        true,
                    )
                } else {
                    StructInfo::new(None, names, defaults, (None, None), false)
                }
            }
        })
        .collect::<PyResult<Vec<_>>>()?;
    Codec::build(py, d.schema, prog, infos, typed)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile_struct, m)?)?;
    m.add_class::<Codec>()?;
    m.add_class::<describe::Fragment>()?;
    m.add_function(wrap_pyfunction!(checksum_names, m)?)?;
    errors::register(m)?;
    classbuild::register(m)?;
    Ok(())
}
