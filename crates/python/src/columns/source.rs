//! `pack_table`: values to pack read from Arrow columns (and, for plain Python sequences,
//! from Python objects), through the pack VM's `Source`.
//!
//! The table's columns are matched with the program once: a plan tree mirrors the root
//! struct, naming for each field its Arrow array (by column name at every level), the
//! class default that stands in for a missing column, or a Python sequence. Values are
//! then read by (plan node, row) without any lookup by name.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::DataType;
use pyo3::prelude::*;

use bytewright_wire::host::{Dyn, Source, SourceError};
use bytewright_wire::program::{Encoding, Node, Program, Step};

use crate::wire::source::PySource;
use crate::wire::structs::StructInfo;

type SResult<T> = Result<T, SourceError<PyErr>>;

/// A literal default (a class default that needs no Python object while packing).
#[derive(Debug, Clone)]
pub enum Lit {
    Int(i128),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    Text(String),
}

/// Where one field's values come from.
pub enum Plan<'a, 'py> {
    /// A column of scalars, bytes or text (also raw wire bytes of recursive fields).
    Leaf(&'a dyn Array),
    /// A struct column (or the table itself, `arr` None), with a plan per field.
    Struct {
        arr: Option<&'a StructArray>,
        sink_id: u32,
        fields: Vec<Plan<'a, 'py>>,
    },
    /// A list column and the plan of its items.
    List {
        arr: &'a dyn Array,
        item: Box<Plan<'a, 'py>>,
    },
    /// A union column: the variant column and a plan per case.
    Union {
        arr: &'a StructArray,
        cases: Vec<Plan<'a, 'py>>,
    },
    /// A missing column with a default.
    Default(Lit),
    /// A missing column with a default that is a Python object.
    PyDefault(Bound<'py, PyAny>),
    /// A Python sequence: row `i` is its item `i`, read as the object codec reads it.
    Py(Bound<'py, PyAny>),
    /// A missing column (a derived field, or one the pack reports as missing).
    Missing,
}

/// A value to pack.
#[derive(Clone)]
pub enum V<'a, 'py> {
    At(&'a Plan<'a, 'py>, usize),
    Lit(&'a Lit),
    Py(Bound<'py, PyAny>),
}

/// The source over a plan. `py` is set when Python objects take part (the GIL is held).
pub struct TableSource<'a, 'py> {
    pub py_src: Option<PySource<'a, 'py>>,
}

fn type_err<T>(msg: impl Into<String>) -> SResult<T> {
    Err(SourceError::Type(msg.into()))
}

impl<'a, 'py: 'a> TableSource<'a, 'py> {
    fn pysrc(&self) -> &PySource<'a, 'py> {
        self.py_src
            .as_ref()
            .expect("Python values need the Python source")
    }
}

/// Builds the plan of struct `index` of `prog` from a struct array's (or table's) columns.
pub fn plan_struct<'a, 'py>(
    prog: &Program,
    structs: &[StructInfo],
    index: u32,
    arr: Option<&'a StructArray>,
    columns: &dyn Fn(&str) -> Option<Column<'a, 'py>>,
    py: Python<'py>,
) -> PyResult<Plan<'a, 'py>> {
    let sp = &prog.structs[index as usize];
    let info = &structs[sp.sink_id as usize];
    let mut nodes: Vec<Option<&Node>> = vec![None; sp.fields.len()];
    for step in &sp.steps {
        if let Step::Field(fs) = step {
            nodes[fs.field as usize] = Some(&fs.node);
        }
    }
    let mut fields = Vec::with_capacity(sp.fields.len());
    for (f, name) in sp.fields.iter().enumerate() {
        let plan = match columns(name) {
            Some(Column::Arrow(a)) => match nodes[f] {
                Some(node) => plan_node(prog, structs, node, a, py)?,
                None => Plan::Leaf(a.as_ref()),
            },
            Some(Column::Py(seq)) => Plan::Py(seq),
            None => {
                let d = info.defaults[f].bind(py);
                if d.is_none() {
                    Plan::Missing
                } else {
                    match lit(d) {
                        Some(l) => Plan::Default(l),
                        None => Plan::PyDefault(d.clone()),
                    }
                }
            }
        };
        fields.push(plan);
    }
    Ok(Plan::Struct {
        arr,
        sink_id: sp.sink_id,
        fields,
    })
}

/// A column of the input: an Arrow array, or a Python sequence.
pub enum Column<'a, 'py> {
    Arrow(&'a ArrayRef),
    Py(Bound<'py, PyAny>),
}

fn plan_node<'a, 'py>(
    prog: &Program,
    structs: &[StructInfo],
    node: &Node,
    arr: &'a ArrayRef,
    py: Python<'py>,
) -> PyResult<Plan<'a, 'py>> {
    Ok(match node {
        Node::Struct(i) => match arr.as_struct_opt() {
            Some(s) => {
                let cols = |name: &str| s.column_by_name(name).map(Column::Arrow);
                plan_struct(prog, structs, *i, Some(s), &cols, py)?
            }
            // Raw wire bytes of a recursive value, or a mismatch the pack reports.
            None => Plan::Leaf(arr.as_ref()),
        },
        Node::Array { item, .. } => {
            let child = match arr.data_type() {
                DataType::List(_) => arr.as_list::<i32>().values(),
                DataType::LargeList(_) => arr.as_list::<i64>().values(),
                DataType::FixedSizeList(_, _) => arr.as_fixed_size_list().values(),
                _ => return Ok(Plan::Leaf(arr.as_ref())),
            };
            Plan::List {
                arr: arr.as_ref(),
                item: Box::new(plan_node(prog, structs, item, child, py)?),
            }
        }
        Node::Union { cases, default, .. } => match arr.as_struct_opt() {
            Some(s) => {
                let nodes: Vec<&Node> = cases
                    .iter()
                    .map(|(_, n)| n)
                    .chain(default.as_deref())
                    .collect();
                union_plan(prog, structs, s, &nodes, py)?
            }
            None => Plan::Leaf(arr.as_ref()),
        },
        Node::Registry { cases, default, .. } => match arr.as_struct_opt() {
            Some(s) => {
                let nodes: Vec<&Node> = cases
                    .iter()
                    .map(|(_, n, _)| n)
                    .chain(default.as_deref())
                    .collect();
                union_plan(prog, structs, s, &nodes, py)?
            }
            None => Plan::Leaf(arr.as_ref()),
        },
        _ => Plan::Leaf(arr.as_ref()),
    })
}

fn union_plan<'a, 'py>(
    prog: &Program,
    structs: &[StructInfo],
    s: &'a StructArray,
    nodes: &[&Node],
    py: Python<'py>,
) -> PyResult<Plan<'a, 'py>> {
    let mut cases = Vec::with_capacity(nodes.len());
    // Variants are the columns after the variant column, in case order.
    for (k, node) in nodes.iter().enumerate() {
        let plan = match s.columns().get(k + 1) {
            Some(a) => plan_node(prog, structs, node, a, py)?,
            None => Plan::Missing,
        };
        cases.push(plan);
    }
    Ok(Plan::Union { arr: s, cases })
}

/// A Python default as a literal, when it is a plain value.
fn lit(d: &Bound<'_, PyAny>) -> Option<Lit> {
    use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString};
    if d.is_exact_instance_of::<PyBool>() {
        return d.extract().ok().map(Lit::Bool);
    }
    if d.is_exact_instance_of::<PyInt>() {
        return d.extract().ok().map(Lit::Int);
    }
    if d.is_exact_instance_of::<PyFloat>() {
        return d.extract().ok().map(Lit::Float);
    }
    if d.is_exact_instance_of::<PyBytes>() {
        return d.extract().ok().map(Lit::Bytes);
    }
    if d.is_exact_instance_of::<PyString>() {
        return d.extract().ok().map(Lit::Text);
    }
    None
}

/// Whether a plan needs Python objects while packing.
pub fn needs_python(p: &Plan<'_, '_>) -> bool {
    match p {
        Plan::Py(_) | Plan::PyDefault(_) => true,
        Plan::Struct { fields, .. } => fields.iter().any(needs_python),
        Plan::Union { cases, .. } => cases.iter().any(needs_python),
        Plan::List { item, .. } => needs_python(item),
        _ => false,
    }
}

fn int_of(a: &dyn Array, i: usize) -> Option<i128> {
    Some(match a.data_type() {
        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).into(),
        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).into(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).into(),
        DataType::UInt8 => a.as_primitive::<UInt8Type>().value(i).into(),
        DataType::UInt16 => a.as_primitive::<UInt16Type>().value(i).into(),
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).into(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).into(),
        DataType::Boolean => i128::from(a.as_boolean().value(i)),
        _ => return None,
    })
}

fn describe(a: &dyn Array) -> String {
    super::type_name(a.data_type())
}

/// The text of a string cell.
fn text_of(a: &dyn Array, i: usize) -> Option<&str> {
    match a.data_type() {
        DataType::Utf8 => Some(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(a.as_string::<i64>().value(i)),
        DataType::Utf8View => Some(a.as_string_view().value(i)),
        _ => None,
    }
}

fn bytes_of(a: &dyn Array, i: usize) -> Option<&[u8]> {
    match a.data_type() {
        DataType::Binary => Some(a.as_binary::<i32>().value(i)),
        DataType::LargeBinary => Some(a.as_binary::<i64>().value(i)),
        DataType::FixedSizeBinary(_) => Some(a.as_fixed_size_binary().value(i)),
        DataType::BinaryView => Some(a.as_binary_view().value(i)),
        _ => None,
    }
}

/// The value of `plan` at `row`: `None` for a null or a missing column; a union's row is
/// the value of its chosen variant.
fn cell<'a, 'py>(plan: &'a Plan<'a, 'py>, row: usize) -> SResult<Option<V<'a, 'py>>> {
    Ok(match plan {
        Plan::Missing => None,
        Plan::Default(l) => Some(V::Lit(l)),
        Plan::PyDefault(d) => Some(V::Py(d.clone())),
        Plan::Py(seq) => {
            let item = seq.get_item(row).map_err(SourceError::Host)?;
            (!item.is_none()).then_some(V::Py(item))
        }
        Plan::Leaf(a) => (!a.is_null(row)).then_some(V::At(plan, row)),
        Plan::Struct { arr: Some(s), .. } => (!s.is_null(row)).then_some(V::At(plan, row)),
        Plan::Struct { arr: None, .. } => Some(V::At(plan, row)),
        Plan::List { arr, .. } => (!arr.is_null(row)).then_some(V::At(plan, row)),
        Plan::Union { arr, cases } => {
            if arr.is_null(row) {
                return Ok(None);
            }
            let case = match arr.columns().first() {
                Some(v) if !v.is_null(row) => match v.data_type() {
                    DataType::Dictionary(_, _) => {
                        v.as_dictionary::<Int8Type>().keys().value(row) as usize
                    }
                    _ => match int_of(v.as_ref(), row) {
                        Some(k) => k as usize,
                        None => return type_err("the variant column must hold case numbers"),
                    },
                },
                _ => return type_err("a union row needs its variant"),
            };
            match cases.get(case) {
                Some(c) => cell(c, row)?,
                None => return type_err(format!("no variant number {case}")),
            }
        }
    })
}

impl<'a, 'py: 'a> Source for TableSource<'a, 'py> {
    type Value = V<'a, 'py>;
    type Error = PyErr;

    fn field(&self, obj: &Self::Value, sink_id: u32, field: u16) -> SResult<Option<Self::Value>> {
        let (plan, row) = match obj {
            V::At(p, r) => (*p, *r),
            V::Py(o) => {
                return Ok(self.pysrc().field(o, sink_id, field)?.map(V::Py));
            }
            V::Lit(_) => return type_err("expected a struct, got a plain value"),
        };
        let Plan::Struct { fields, arr, .. } = plan else {
            return type_err("expected a struct column");
        };
        if let Some(s) = arr {
            if s.is_null(row) {
                return Ok(None);
            }
        }
        let Some(f) = fields.get(field as usize) else {
            return Ok(None);
        };
        cell(f, row)
    }

    fn int(&self, v: &Self::Value) -> SResult<i128> {
        match v {
            V::At(Plan::Leaf(a), r) => match int_of(*a, *r) {
                Some(i) => Ok(i),
                None => type_err(format!("expected an integer column, got {}", describe(*a))),
            },
            V::Lit(Lit::Int(i)) => Ok(*i),
            V::Lit(Lit::Bool(b)) => Ok(i128::from(*b)),
            V::Py(o) => self.pysrc().int(o),
            _ => type_err("expected an integer"),
        }
    }

    fn float(&self, v: &Self::Value) -> SResult<f64> {
        match v {
            V::At(Plan::Leaf(a), r) => match a.data_type() {
                DataType::Float16 => Ok(a.as_primitive::<Float16Type>().value(*r).into()),
                DataType::Float32 => Ok(a.as_primitive::<Float32Type>().value(*r).into()),
                DataType::Float64 => Ok(a.as_primitive::<Float64Type>().value(*r)),
                _ => match int_of(*a, *r) {
                    Some(i) => Ok(i as f64),
                    None => type_err(format!("expected a float column, got {}", describe(*a))),
                },
            },
            V::Lit(Lit::Float(f)) => Ok(*f),
            V::Lit(Lit::Int(i)) => Ok(*i as f64),
            V::Py(o) => self.pysrc().float(o),
            _ => type_err("expected a float"),
        }
    }

    fn bool(&self, v: &Self::Value) -> SResult<bool> {
        match v {
            V::At(Plan::Leaf(a), r) => match a.data_type() {
                DataType::Boolean => Ok(a.as_boolean().value(*r)),
                _ => match int_of(*a, *r) {
                    Some(0) => Ok(false),
                    Some(1) => Ok(true),
                    Some(i) => type_err(format!("expected a bool, got {i}")),
                    None => type_err(format!("expected a bool column, got {}", describe(*a))),
                },
            },
            V::Lit(Lit::Bool(b)) => Ok(*b),
            V::Py(o) => self.pysrc().bool(o),
            _ => type_err("expected a bool"),
        }
    }

    fn bytes<'v>(&self, v: &'v Self::Value) -> SResult<&'v [u8]> {
        match v {
            V::At(Plan::Leaf(a), r) => match bytes_of(*a, *r) {
                Some(b) => Ok(b),
                None => type_err(format!("expected a binary column, got {}", describe(*a))),
            },
            V::Lit(Lit::Bytes(b)) => Ok(b),
            V::Py(o) => self.pysrc().bytes(o),
            _ => type_err("expected bytes"),
        }
    }

    fn text<'v>(&self, v: &'v Self::Value, enc: Encoding) -> SResult<Cow<'v, [u8]>> {
        let t: &str = match v {
            V::At(Plan::Leaf(a), r) => match text_of(*a, *r) {
                Some(t) => t,
                None => return type_err(format!("expected a string column, got {}", describe(*a))),
            },
            V::Lit(Lit::Text(t)) => t,
            V::Py(o) => return self.pysrc().text(o, enc),
            _ => return type_err("expected text"),
        };
        match enc {
            Encoding::Utf8 => Ok(Cow::Borrowed(t.as_bytes())),
            Encoding::Ascii => match t.bytes().position(|c| c >= 0x80) {
                None => Ok(Cow::Borrowed(t.as_bytes())),
                Some(i) => type_err(format!("{t:?} is not ascii (at character {i})")),
            },
            Encoding::Latin1 => t
                .chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect::<Option<Vec<u8>>>()
                .map(Cow::Owned)
                .ok_or_else(|| SourceError::Type(format!("{t:?} is not latin-1"))),
        }
    }

    fn len(&self, v: &Self::Value) -> SResult<usize> {
        match v {
            V::At(Plan::List { arr, .. }, r) => Ok(match arr.data_type() {
                DataType::List(_) => arr.as_list::<i32>().value_length(*r) as usize,
                DataType::LargeList(_) => arr.as_list::<i64>().value_length(*r) as usize,
                _ => arr.as_fixed_size_list().value_length() as usize,
            }),
            V::Py(o) => self.pysrc().len(o),
            V::At(Plan::Leaf(a), _) => {
                type_err(format!("expected a list column, got {}", describe(*a)))
            }
            _ => type_err("expected a list"),
        }
    }

    fn item(&self, v: &Self::Value, i: usize) -> SResult<Self::Value> {
        match v {
            V::At(Plan::List { arr, item }, r) => {
                let start = match arr.data_type() {
                    DataType::List(_) => arr.as_list::<i32>().value_offsets()[*r] as usize,
                    DataType::LargeList(_) => arr.as_list::<i64>().value_offsets()[*r] as usize,
                    _ => *r * arr.as_fixed_size_list().value_length() as usize,
                };
                cell(item, start + i)?
                    .ok_or_else(|| SourceError::Type(format!("item {i} of the list is null")))
            }
            V::Py(o) => self.pysrc().item(o, i).map(V::Py),
            _ => type_err("expected a list"),
        }
    }

    fn kind(&self, v: &Self::Value) -> SResult<Dyn> {
        match v {
            V::Py(o) => self.pysrc().kind(o),
            _ => type_err("a self-describing value needs its raw bytes or a Python value"),
        }
    }

    fn entries(&self, v: &Self::Value) -> SResult<Vec<(Self::Value, Self::Value)>> {
        match v {
            V::Py(o) => Ok(self
                .pysrc()
                .entries(o)?
                .into_iter()
                .map(|(k, v)| (V::Py(k), V::Py(v)))
                .collect()),
            _ => type_err("expected a map"),
        }
    }

    fn ext(&self, v: &Self::Value) -> SResult<(i8, Self::Value)> {
        match v {
            V::Py(o) => self.pysrc().ext(o).map(|(c, d)| (c, V::Py(d))),
            _ => type_err("expected an extension value"),
        }
    }

    fn is_struct(&self, v: &Self::Value, sink_id: u32) -> Option<bool> {
        match v {
            V::At(Plan::Struct { sink_id: s, .. }, _) => Some(*s == sink_id),
            V::At(Plan::Leaf(_), _) => Some(false),
            V::Py(o) => self.pysrc().is_struct(o, sink_id),
            _ => None,
        }
    }

    fn raw(&self, v: &Self::Value) -> Option<&[u8]> {
        match v {
            V::At(Plan::Leaf(a), r) => bytes_of(*a, *r),
            _ => None,
        }
    }
}
