//! Python adapters for the columnar core: `bw.Table`, its columns and schema, and the
//! codec's `unpack_table` / `iter_tables` / `pack_table`.
//!
//! Tables are immutable Arrow record batches shared by reference; they leave through the
//! Arrow PyCapsule interface (`__arrow_c_stream__`, `__arrow_c_array__`,
//! `__arrow_c_schema__`) so pyarrow, polars and DuckDB take them without copying.

mod convert;
mod export;
mod input;
mod pack;
mod reader;
pub mod source;

pub use pack::{pack_table, pack_table_bytes};

use std::os::raw::c_int;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, FieldRef, SchemaRef};
use pyo3::exceptions::{PyBufferError, PyIndexError, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::{ffi, IntoPyObjectExt};

use std::collections::HashMap;

use bytewright_columns::enums::{name_enums, EnumNames};
use bytewright_columns::layout::NodeId;
use bytewright_columns::{Columnar, Failure, Request};

pub use reader::TableReader;

/// The number of threads `threads=None` means for `len` bytes: one below 1 MiB, else up to
/// the machine's cores (one per MiB).
pub fn auto_threads(threads: Option<usize>, len: usize) -> usize {
    match threads {
        Some(t) => t.max(1),
        None if len < 1 << 20 => 1,
        None => cores().min(len >> 20).max(1),
    }
}

/// The machine's cores, asked once: on Linux the standard library reads the cgroup's CPU
/// quota files every time (seven reads and three opens), which cost a table of a few MiB
/// as much as a tenth of its decode.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A columnar failure as the Python exception of `bytewright.errors`.
pub fn raise(py: Python<'_>, f: Failure) -> PyErr {
    match f {
        Failure::Decode(e) => {
            let e = e.map_host(|b| pyo3::exceptions::PyRuntimeError::new_err(b.0));
            crate::wire::errors::raise(py, e, crate::wire::errors::Mode::Unpack)
        }
        Failure::Arrow(e) => pyo3::exceptions::PyRuntimeError::new_err(format!(
            "bytewright built an invalid Arrow array (a bug, please report it): {e}"
        )),
        Failure::Bug(m) => pyo3::exceptions::PyRuntimeError::new_err(format!(
            "bytewright's column builder failed (a bug, please report it): {m}"
        )),
    }
}

/// Decodes `data[offset..]` on threads with the GIL released; with `enums`, enum fields
/// become dictionaries of member names.
pub fn decode(
    py: Python<'_>,
    columnar: &Columnar,
    data: &[u8],
    req: Request,
    enums: Option<&HashMap<NodeId, EnumNames>>,
) -> PyResult<Table> {
    let t = py
        .detach(|| columnar.decode(data, req))
        .map_err(|f| raise(py, f))?;
    let t = match enums {
        Some(e) => py
            .detach(|| name_enums(&columnar.layout, t, e))
            .map_err(|e| raise(py, Failure::Arrow(e)))?,
        None => t,
    };
    Ok(Table::new(t.schema, t.batches))
}

/// The enum fields of a typed codec's structs, by column: what `enum_names=True` names.
pub fn enum_columns(
    py: Python<'_>,
    columnar: &Columnar,
    structs: &[crate::wire::structs::StructInfo],
) -> PyResult<HashMap<NodeId, EnumNames>> {
    let members = py.import("bytewright.schema")?.getattr("enum_members")?;
    let mut out = HashMap::new();
    for node in &columnar.layout.nodes {
        let bytewright_columns::Shape::Struct { sink_id, .. } = node.shape else {
            continue;
        };
        let Some(info) = structs.get(sink_id as usize) else {
            continue;
        };
        for (f, &child) in node.children.iter().enumerate() {
            let Some(Some(decoder)) = info.decoders.get(f) else {
                continue;
            };
            let got = members.call1((decoder.bind(py),))?;
            if got.is_none() {
                continue;
            }
            let (flag, list): (bool, Vec<(i128, String)>) = got.extract()?;
            out.insert(
                child,
                EnumNames {
                    flag,
                    members: list,
                },
            );
        }
    }
    Ok(out)
}

/// A decoded table: one column per field, immutable, cheap to pass around.
#[pyclass(frozen, module = "bytewright", name = "Table")]
pub struct Table {
    schema: SchemaRef,
    batches: Arc<[RecordBatch]>,
    rows: usize,
}

impl Table {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Table {
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        Table {
            schema,
            batches: batches.into(),
            rows,
        }
    }

    pub fn schema_ref(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    fn index(&self, key: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(name) = key.extract::<String>() {
            return self.schema.index_of(&name).map_err(|_| {
                PyKeyError::new_err(format!(
                    "no column '{name}'; the columns are {:?}",
                    self.schema
                        .fields()
                        .iter()
                        .map(|f| f.name().as_str())
                        .collect::<Vec<_>>()
                ))
            });
        }
        if let Ok(i) = key.extract::<isize>() {
            let n = self.schema.fields().len() as isize;
            let j = if i < 0 { i + n } else { i };
            if (0..n).contains(&j) {
                return Ok(j as usize);
            }
            return Err(PyIndexError::new_err(format!(
                "column index {i} out of range for {n} columns"
            )));
        }
        Err(PyTypeError::new_err("a column is named by a str or an int"))
    }

    fn column_at(&self, i: usize) -> Column {
        Column::new(
            self.schema.fields()[i].clone(),
            self.batches.iter().map(|b| b.column(i).clone()).collect(),
        )
    }
}

#[pymethods]
impl Table {
    fn __len__(&self) -> usize {
        self.rows
    }

    /// The number of rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.rows
    }

    /// The number of columns.
    #[getter]
    fn num_columns(&self) -> usize {
        self.schema.fields().len()
    }

    /// The column names, in field order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The Arrow schema (it implements `__arrow_c_schema__`).
    #[getter]
    fn schema(&self) -> TableSchema {
        TableSchema {
            schema: self.schema.clone(),
        }
    }

    /// The row batches the table is made of (one per decoding thread).
    #[getter]
    fn num_chunks(&self) -> usize {
        self.batches.len()
    }

    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<Column> {
        Ok(self.column_at(self.index(key)?))
    }

    fn __contains__(&self, name: &str) -> bool {
        self.schema.index_of(name).is_ok()
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(PyList::new(py, self.column_names())?
            .try_iter()?
            .into_any()
            .unbind())
    }

    /// Exports the table as an Arrow C stream (the Arrow PyCapsule interface).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = requested_schema;
        export::stream(py, self.schema.clone(), self.batches.to_vec())
    }

    /// Exports the schema as an Arrow C schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        export::schema(py, &self.schema)
    }

    /// `{name: [values]}`, the values as pyarrow's `to_pydict` gives them.
    fn to_pydict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for i in 0..self.schema.fields().len() {
            let col = self.column_at(i);
            out.set_item(self.schema.field(i).name(), col.to_pylist(py)?)?;
        }
        Ok(out)
    }

    /// One dict per row, as pyarrow's `to_pylist` gives them.
    fn to_pylist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let rows = PyList::empty(py);
        for b in self.batches.iter() {
            for r in 0..b.num_rows() {
                let row = PyDict::new(py);
                for (f, c) in self.schema.fields().iter().zip(b.columns()) {
                    row.set_item(f.name(), convert::value(py, c.as_ref(), r)?)?;
                }
                rows.append(row)?;
            }
        }
        Ok(rows)
    }

    /// One table holding the rows of `tables` in order (no copy: their chunks are shared).
    /// Every table must have the same schema.
    #[staticmethod]
    fn concat(tables: Vec<PyRef<'_, Table>>) -> PyResult<Table> {
        let Some(first) = tables.first() else {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "Table.concat needs at least one table",
            ));
        };
        let schema = first.schema.clone();
        let mut batches = Vec::new();
        for (i, t) in tables.iter().enumerate() {
            if t.schema != schema {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "table {i} has another schema than table 0"
                )));
            }
            batches.extend(t.batches.iter().filter(|b| b.num_rows() > 0).cloned());
        }
        if batches.is_empty() {
            batches.push(first.batches[0].clone());
        }
        Ok(Table::new(schema, batches))
    }

    /// The table as a `pyarrow.Table` (no copy).
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert_with(slf, "to_arrow", None)
    }

    /// The table as a `polars.DataFrame` (no copy).
    fn to_polars<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert_with(slf, "to_polars", None)
    }

    /// The table as a `pandas.DataFrame` (through pyarrow when it is installed; the options
    /// go to `pyarrow.Table.to_pandas`, e.g. `types_mapper=pandas.ArrowDtype`).
    #[pyo3(signature = (**options))]
    fn to_pandas<'py>(
        slf: &Bound<'py, Self>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        convert_with(slf, "to_pandas", options)
    }

    /// `{name: numpy.ndarray}`: numbers without nulls without copying, other columns as
    /// object arrays.
    fn to_numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert_with(slf, "to_numpy", None)
    }

    fn __repr__(&self) -> String {
        let cols: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), type_name(f.data_type())))
            .collect();
        format!(
            "bytewright.Table: {} rows, {} columns\n{}",
            self.rows,
            cols.len(),
            cols.join("\n")
        )
    }
}

fn convert_with<'py>(
    slf: &Bound<'py, Table>,
    name: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    slf.py()
        .import("bytewright._table_convert")?
        .getattr(name)?
        .call((slf,), options)
}

/// A table's Arrow schema: `pyarrow.schema(s)` and `polars` take it through
/// `__arrow_c_schema__`.
#[pyclass(frozen, module = "bytewright", name = "TableSchema")]
pub struct TableSchema {
    pub schema: SchemaRef,
}

#[pymethods]
impl TableSchema {
    /// The column names.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// `{name: Arrow type name}`.
    #[getter]
    fn types<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for f in self.schema.fields() {
            d.set_item(f.name(), type_name(f.data_type()))?;
        }
        Ok(d)
    }

    fn __len__(&self) -> usize {
        self.schema.fields().len()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<TableSchema>()
            .is_ok_and(|o| o.get().schema == self.schema)
    }

    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        export::schema(py, &self.schema)
    }

    fn __repr__(&self) -> String {
        self.schema
            .fields()
            .iter()
            .map(|f| {
                format!(
                    "{}: {}{}",
                    f.name(),
                    type_name(f.data_type()),
                    if f.is_nullable() { "" } else { " not null" }
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One column of a table: its chunks (one per decoding thread), a NumPy-ready buffer when
/// it is one chunk of fixed-width numbers without nulls.
#[pyclass(frozen, module = "bytewright", name = "Column")]
pub struct Column {
    field: FieldRef,
    chunks: Vec<ArrayRef>,
    len: usize,
    /// The buffer protocol's shape and strides (stable storage for `Py_buffer`).
    shape: [ffi::Py_ssize_t; 1],
    strides: [ffi::Py_ssize_t; 1],
}

impl Column {
    fn new(field: FieldRef, chunks: Vec<ArrayRef>) -> Column {
        let len = chunks.iter().map(|c| c.len()).sum();
        let item = buffer_format(field.data_type()).map_or(1, |(_, w)| w);
        Column {
            field,
            chunks,
            len,
            shape: [len as ffi::Py_ssize_t],
            strides: [item as ffi::Py_ssize_t],
        }
    }

    /// The one array of the column (chunks are concatenated, which copies).
    fn array(&self) -> PyResult<ArrayRef> {
        match self.chunks.len() {
            1 => Ok(self.chunks[0].clone()),
            0 => Ok(arrow_array::new_empty_array(self.field.data_type())),
            _ => {
                let parts: Vec<&dyn Array> = self.chunks.iter().map(|c| c.as_ref()).collect();
                arrow_select::concat::concat(&parts)
                    .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("concat: {e}")))
            }
        }
    }

    /// Whether the buffer protocol can expose the column without copying.
    fn zero_copy(&self) -> bool {
        buffer_format(self.field.data_type()).is_some()
            && self.chunks.len() == 1
            && self.chunks[0].null_count() == 0
    }
}

/// The `struct` format character and item size of fixed-width Arrow types.
fn buffer_format(dt: &DataType) -> Option<(&'static std::ffi::CStr, usize)> {
    Some(match dt {
        DataType::Int8 => (c"b", 1),
        DataType::Int16 => (c"h", 2),
        DataType::Int32 => (c"i", 4),
        DataType::Int64 => (c"q", 8),
        DataType::UInt8 => (c"B", 1),
        DataType::UInt16 => (c"H", 2),
        DataType::UInt32 => (c"I", 4),
        DataType::UInt64 => (c"Q", 8),
        DataType::Float16 => (c"e", 2),
        DataType::Float32 => (c"f", 4),
        DataType::Float64 => (c"d", 8),
        _ => return None,
    })
}

/// A short Arrow type name, as pyarrow spells it.
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Int8 => "int8".into(),
        DataType::Int16 => "int16".into(),
        DataType::Int32 => "int32".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::UInt32 => "uint32".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float16 => "halffloat".into(),
        DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Boolean => "bool".into(),
        DataType::Binary => "binary".into(),
        DataType::LargeBinary => "large_binary".into(),
        DataType::FixedSizeBinary(n) => format!("fixed_size_binary[{n}]"),
        DataType::Utf8 => "string".into(),
        DataType::LargeUtf8 => "large_string".into(),
        DataType::List(f) => format!("list<item: {}>", type_name(f.data_type())),
        DataType::LargeList(f) => format!("large_list<item: {}>", type_name(f.data_type())),
        DataType::FixedSizeList(f, n) => {
            format!("fixed_size_list<item: {}>[{n}]", type_name(f.data_type()))
        }
        DataType::Struct(fields) => format!(
            "struct<{}>",
            fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), type_name(f.data_type())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Dictionary(k, v) => {
            format!(
                "dictionary<values={}, indices={}>",
                type_name(v),
                type_name(k)
            )
        }
        other => other.to_string(),
    }
}

#[pymethods]
impl Column {
    fn __len__(&self) -> usize {
        self.len
    }

    /// The column's name.
    #[getter]
    fn name(&self) -> String {
        self.field.name().clone()
    }

    /// The Arrow type name (as pyarrow spells it).
    #[getter]
    fn r#type(&self) -> String {
        type_name(self.field.data_type())
    }

    /// The number of null rows.
    #[getter]
    fn null_count(&self) -> usize {
        self.chunks.iter().map(|c| c.null_count()).sum()
    }

    /// The number of chunks (one per decoding thread).
    #[getter]
    fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    fn __getitem__(&self, py: Python<'_>, i: isize) -> PyResult<Py<PyAny>> {
        let n = self.len as isize;
        let mut j = if i < 0 { i + n } else { i };
        if !(0..n).contains(&j) {
            return Err(PyIndexError::new_err(format!(
                "row {i} out of range for {n} rows"
            )));
        }
        for c in &self.chunks {
            if (j as usize) < c.len() {
                return convert::value(py, c.as_ref(), j as usize);
            }
            j -= c.len() as isize;
        }
        unreachable!("the row is in a chunk")
    }

    /// The values, as pyarrow's `to_pylist` gives them.
    fn to_pylist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for c in &self.chunks {
            for r in 0..c.len() {
                out.append(convert::value(py, c.as_ref(), r)?)?;
            }
        }
        Ok(out)
    }

    /// Exports the column as one Arrow C array (chunks are concatenated).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let _ = requested_schema;
        export::array(py, &self.field, &self.array()?)
    }

    /// The column as a NumPy array: without copying for one chunk of fixed-width numbers
    /// without nulls; bools unpacked; anything else an object array of Python values.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let np = py.import("numpy")?;
        let this = slf.get();
        let arr = if this.zero_copy() {
            let (fmt, _) = buffer_format(this.field.data_type()).expect("fixed width");
            let a = np.call_method1("frombuffer", (slf, fmt.to_str().unwrap_or("B")))?;
            if copy == Some(true) {
                a.call_method0("copy")?
            } else {
                a
            }
        } else if matches!(this.field.data_type(), DataType::Boolean) && this.null_count() == 0 {
            let list = this.to_pylist(py)?;
            np.call_method1("array", (list, "bool"))?
        } else {
            let out = np.call_method1("empty", (this.len, "object"))?;
            let values = this.to_pylist(py)?;
            for (i, v) in values.iter().enumerate() {
                out.set_item(i, v)?;
            }
            out
        };
        match dtype {
            Some(d) if !d.is_none() => arr.call_method1("astype", (d,)),
            _ => Ok(arr),
        }
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let this = slf.get();
        if !this.zero_copy() {
            return Err(PyBufferError::new_err(format!(
                "column '{}' ({}) has no contiguous buffer: only one chunk of fixed-width numbers without nulls has one (use numpy.asarray, which copies)",
                this.field.name(),
                type_name(this.field.data_type())
            )));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("table columns are read-only"));
        }
        let (fmt, item) = buffer_format(this.field.data_type()).expect("fixed width");
        let data = this.chunks[0].to_data();
        let ptr = match data.buffers().first() {
            Some(b) => b.as_ptr().wrapping_add(data.offset() * item),
            None => std::ptr::NonNull::<u64>::dangling().as_ptr().cast(),
        };
        // SAFETY: `view` is the caller's Py_buffer; the memory belongs to an immutable Arrow
        // buffer that the column keeps alive, and `view.obj` holds a reference to the column
        // until the buffer is released. Shape and strides live in the (immovable) pyclass.
        unsafe {
            (*view).obj = slf.clone().into_any().into_ptr();
            (*view).buf = ptr as *mut std::os::raw::c_void;
            (*view).len = (this.len * item) as ffi::Py_ssize_t;
            (*view).readonly = 1;
            (*view).itemsize = item as ffi::Py_ssize_t;
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
                fmt.as_ptr() as *mut _
            } else {
                std::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
                this.shape.as_ptr() as *mut _
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
                this.strides.as_ptr() as *mut _
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    fn __repr__(&self) -> String {
        format!(
            "bytewright.Column {:?}: {} ({} rows, {} nulls)",
            self.field.name(),
            type_name(self.field.data_type()),
            self.len,
            self.null_count()
        )
    }
}

/// Turns a Python object into a `Py<PyAny>` (shared by the converters).
pub fn obj<'py, T: IntoPyObjectExt<'py>>(py: Python<'py>, v: T) -> PyResult<Py<PyAny>> {
    v.into_py_any(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Table>()?;
    m.add_class::<TableSchema>()?;
    m.add_class::<Column>()?;
    m.add_class::<TableReader>()?;
    Ok(())
}
