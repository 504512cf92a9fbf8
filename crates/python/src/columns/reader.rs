//! `iter_tables`: tables of at most `rows` rows from a file, a path or byte chunks, in
//! bounded memory. A message cut by a chunk boundary waits for the next chunk.

use std::sync::Arc;

use pyo3::exceptions::{PyStopIteration, PyTypeError};
use pyo3::prelude::*;

use std::collections::HashMap;

use bytewright_columns::enums::{name_enums, EnumNames};
use bytewright_columns::layout::NodeId;
use bytewright_columns::{Columnar, Failure, Request};
use bytewright_wire::Seg;

use super::{auto_threads, raise, Table};
use crate::wire::buffer::InBuf;

/// Where the bytes come from.
enum From {
    /// An object with `read(n)`; `owned` when `iter_tables` opened it (it closes it).
    File { obj: Py<PyAny>, owned: bool },
    /// An iterator of bytes-like chunks.
    Chunks(Py<PyAny>),
}

/// An iterator of `bw.Table` batches (see `X.iter_tables`).
#[pyclass(module = "bytewright", name = "TableReader")]
pub struct TableReader {
    columnar: Arc<Columnar>,
    from: Option<From>,
    buf: Vec<u8>,
    /// Bytes of `buf` already decoded.
    start: usize,
    /// Stream offset of `buf[0]`, and rows yielded so far (for error offsets and rows).
    base: usize,
    rows_done: usize,
    rows: usize,
    threads: Option<usize>,
    /// Bytes per row seen so far, to size reads.
    per_row: f64,
    /// Enum columns to name (`enum_names=True`).
    enums: Option<HashMap<NodeId, EnumNames>>,
}

/// The smallest read (larger reads follow the rows asked for).
const MIN_READ: usize = 1 << 20;

impl TableReader {
    pub fn new(
        py: Python<'_>,
        columnar: Arc<Columnar>,
        source: &Bound<'_, PyAny>,
        rows: usize,
        threads: Option<usize>,
        enums: Option<HashMap<NodeId, EnumNames>>,
    ) -> PyResult<TableReader> {
        if rows == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "rows must be at least 1",
            ));
        }
        let os = py.import("os")?;
        let from = if source.is_instance_of::<pyo3::types::PyString>()
            || source.is_instance(&os.getattr("PathLike")?)?
        {
            let f = py
                .import("builtins")?
                .getattr("open")?
                .call1((source, "rb"))?;
            From::File {
                obj: f.unbind(),
                owned: true,
            }
        } else if source.hasattr("read")? {
            From::File {
                obj: source.clone().unbind(),
                owned: false,
            }
        } else if InBuf::new(source, false).is_ok() {
            // One buffer: a single chunk.
            let one = pyo3::types::PyList::new(py, [source])?;
            From::Chunks(one.try_iter()?.into_any().unbind())
        } else if source.hasattr("__iter__")? {
            From::Chunks(source.try_iter()?.into_any().unbind())
        } else {
            return Err(PyTypeError::new_err(
                "iter_tables reads a path, a binary file object or an iterable of bytes chunks",
            ));
        };
        let per_row = columnar.prog.min_size.max(1) as f64;
        Ok(TableReader {
            columnar,
            from: Some(from),
            buf: Vec::new(),
            start: 0,
            base: 0,
            rows_done: 0,
            rows,
            threads,
            per_row,
            enums,
        })
    }

    /// Reads more input; returns false at the end of it.
    fn fill(&mut self, py: Python<'_>) -> PyResult<bool> {
        // Keep only the undecoded tail.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.base += self.start;
            self.start = 0;
        }
        let want = ((self.rows as f64 * self.per_row * 1.1) as usize)
            .saturating_sub(self.buf.len())
            .max(MIN_READ);
        let chunk = match &self.from {
            None => return Ok(false),
            Some(From::File { obj, .. }) => obj.bind(py).call_method1("read", (want,))?,
            Some(From::Chunks(it)) => match it.bind(py).call_method0("__next__") {
                Ok(c) => c,
                Err(e) if e.is_instance_of::<PyStopIteration>(py) => {
                    self.close(py)?;
                    return Ok(false);
                }
                Err(e) => return Err(e),
            },
        };
        let data = InBuf::new(&chunk, false)?;
        let bytes = data.as_slice();
        if bytes.is_empty() {
            if let Some(From::File { .. }) = &self.from {
                self.close(py)?;
                return Ok(false);
            }
            return Ok(true);
        }
        self.buf.extend_from_slice(bytes);
        Ok(true)
    }

    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(From::File { obj, owned: true }) = self.from.take() {
            obj.bind(py).call_method0("close")?;
        }
        Ok(())
    }

    /// A failure with its rows and offsets made absolute in the whole stream.
    fn fail(&self, py: Python<'_>, f: Failure) -> PyErr {
        let f = match f {
            Failure::Decode(mut e) => {
                e.offset += self.base;
                if let Some(Seg::Index(r)) = e.rev_path.last_mut() {
                    *r += self.rows_done;
                }
                Failure::Decode(e)
            }
            other => other,
        };
        raise(py, f)
    }
}

#[pymethods]
impl TableReader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Table>> {
        loop {
            let eof = self.from.is_none();
            let (rows, end) = {
                let (columnar, buf, start, want) =
                    (&self.columnar, &self.buf, self.start, self.rows);
                py.detach(|| columnar.whole(buf, start, want))
                    .map_err(|f| self.fail(py, f))?
            };
            if rows == self.rows || (eof && rows > 0) {
                let threads = auto_threads(self.threads, end - self.start);
                let req = Request {
                    offset: self.start,
                    count: Some(rows),
                    threads,
                };
                let (columnar, buf, enums) = (&self.columnar, &self.buf, &self.enums);
                let t = py
                    .detach(|| {
                        let t = columnar.decode(buf, req)?;
                        match enums {
                            Some(e) => name_enums(&columnar.layout, t, e).map_err(Failure::Arrow),
                            None => Ok(t),
                        }
                    })
                    .map_err(|f| self.fail(py, f))?;
                self.per_row = (end - self.start) as f64 / rows as f64;
                self.start = end;
                self.rows_done += rows;
                return Ok(Some(Table::new(t.schema, t.batches)));
            }
            if eof {
                if self.start == self.buf.len() {
                    return Ok(None);
                }
                // A message the input cuts off: decode it to report where.
                let req = Request {
                    offset: self.start,
                    count: None,
                    threads: 1,
                };
                let (columnar, buf) = (&self.columnar, &self.buf);
                return match py.detach(|| columnar.decode(buf, req)) {
                    Err(f) => Err(self.fail(py, f)),
                    Ok(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(
                        "the input ends inside a message that then decoded (a bug)",
                    )),
                };
            }
            self.fill(py)?;
        }
    }

    /// Closes the file `iter_tables` opened (when it was given a path).
    fn close_source(&mut self, py: Python<'_>) -> PyResult<()> {
        self.close(py)
    }
}
