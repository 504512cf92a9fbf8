//! `pack_table`: every row of a table packed back to back, as `pack` packs one value.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use bytewright_wire::host::Output;
use bytewright_wire::pack::pack_with;
use bytewright_wire::program::{Node, Program};
use bytewright_wire::{Scratch, Seg};

use super::input::{read, Input};
use super::source::{needs_python, plan_struct, Column, Lit, Plan, TableSource, V};
use crate::wire::buffer::BytesOut;
use crate::wire::errors::{raise, Mode};
use crate::wire::source::PySource;
use crate::wire::structs::StructInfo;
use arrow_array::Array;
use bytewright_columns::fixed::{PackInput, Plan as FixedPlan};
use bytewright_columns::Columnar;

type Failed = (Box<bytewright_wire::Error<PyErr>>, usize);

fn rows_of<O: Output>(
    prog: &Program,
    plan: &Plan<'_, '_>,
    rows: usize,
    src: &TableSource<'_, '_>,
    out: &mut O,
) -> Result<(), Failed> {
    let mut scratch = Scratch::new();
    for r in 0..rows {
        pack_with(prog, &mut scratch, src, out, &V::At(plan, r)).map_err(|e| (e, r))?;
    }
    Ok(())
}

/// Moves a value that holds no Python object across `detach`.
struct NoPython<T>(T);
// SAFETY: only built for plans without Python objects and sources without a Python source
// (`needs_python` is false), so nothing in it touches the interpreter. An output that is
// a `bytes` object is a bounded `BytesOut`, which never resizes, so filling it only
// writes the object's storage.
unsafe impl<T> Send for NoPython<T> {}

/// The root struct's field names, to refuse columns that are not fields.
fn field_names(prog: &Program) -> Option<Vec<String>> {
    match &prog.root {
        Node::Struct(i) => Some(
            prog.structs[*i as usize]
                .fields
                .iter()
                .map(|f| f.to_string())
                .collect(),
        ),
        _ => None,
    }
}

fn check_columns(py: Python<'_>, prog: &Program, given: &[String]) -> PyResult<()> {
    if let Some(fields) = field_names(prog) {
        if let Some(g) = given.iter().find(|g| !fields.contains(g)) {
            return Err(crate::wire::errors::pack_error(
                py,
                format!("unknown column '{g}': the fields are {}", fields.join(", ")),
                g,
            ));
        }
    }
    Ok(())
}

/// Packs every row of `table` into a new `bytes` object. Messages of one size are written
/// straight into it (its size is known from the row count); others grow a buffer that is
/// copied once at the end.
pub fn pack_table_bytes(
    py: Python<'_>,
    columnar: &Columnar,
    prog: &Program,
    structs: &[StructInfo],
    table: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let input = read(table)?;
    if let Some(size) = prog.static_size {
        let rows = match &input {
            Input::Batches(b) => b.iter().map(|b| b.num_rows()).sum(),
            Input::Columns { rows, .. } => *rows,
        };
        let len = rows.checked_mul(size).ok_or_else(|| {
            pyo3::exceptions::PyMemoryError::new_err(format!(
                "{rows} messages of {size} bytes do not fit in memory"
            ))
        })?;
        // Every message takes exactly `size` bytes, so the object never needs to grow.
        let mut out = BytesOut::bounded(py, len)?;
        pack_input(py, columnar, prog, structs, input, &mut out, Mode::Pack)?;
        return out.finish(py);
    }
    let mut out: Vec<u8> = Vec::new();
    pack_input(py, columnar, prog, structs, input, &mut out, Mode::Pack)?;
    Ok(PyBytes::new(py, &out).into_any().unbind())
}

/// Packs every row of `table` into `out`. Rows are numbered in errors (`[row].field`).
pub fn pack_table<O: Output>(
    py: Python<'_>,
    columnar: &Columnar,
    prog: &Program,
    structs: &[StructInfo],
    table: &Bound<'_, PyAny>,
    out: &mut O,
    mode: Mode,
) -> PyResult<()> {
    pack_input(py, columnar, prog, structs, read(table)?, out, mode)
}

fn pack_input<O: Output>(
    py: Python<'_>,
    columnar: &Columnar,
    prog: &Program,
    structs: &[StructInfo],
    input: Input<'_>,
    out: &mut O,
    mode: Mode,
) -> PyResult<()> {
    let root = match &prog.root {
        Node::Struct(i) => *i,
        _ => {
            return Err(PyTypeError::new_err(
                "pack_table packs tables of struct messages (this codec's root is a registry: pack a table per variant)",
            ))
        }
    };
    let mut done = 0usize;
    let run = |plan: &Plan<'_, '_>, rows: usize, out: &mut O, done: usize| -> PyResult<()> {
        if let Some(fixed) = &columnar.plan {
            if let Some(inputs) = strided_inputs(fixed, plan) {
                let at = out.pos();
                let n = rows * fixed.size;
                if let Ok(p) = out.grow(n) {
                    let job = NoPython((fixed, &inputs, &mut *out));
                    let ok = py
                        .detach(move || {
                            let job = job;
                            let (fixed, inputs, out) = job.0;
                            let slot = out.slot(p, n);
                            if !fixed.writes_every_byte() {
                                slot.fill(0);
                            }
                            NoPython(fixed.pack(inputs, rows, slot).is_ok())
                        })
                        .0;
                    if ok {
                        return Ok(());
                    }
                    // A row the strided path cannot write: the VM reports it.
                    out.rewind(at);
                }
            }
        }
        let result = if needs_python(plan) {
            let src = TableSource {
                py_src: Some(PySource::new(py, structs)),
            };
            rows_of(prog, plan, rows, &src, out)
        } else {
            let src = TableSource { py_src: None };
            let job = NoPython((prog, plan, &src, out));
            py.detach(move || {
                let job = job;
                let (prog, plan, src, out) = job.0;
                NoPython(rows_of(prog, plan, rows, src, out))
            })
            .0
        };
        result.map_err(|(mut e, r)| {
            e.rev_path.push(Seg::Index(done + r));
            raise(py, *e, mode_copy(&mode))
        })
    };
    match input {
        Input::Batches(batches) => {
            if let Some(b) = batches.first() {
                let names: Vec<String> = b
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                check_columns(py, prog, &names)?;
            }
            for batch in &batches {
                let cols = |name: &str| batch.column_by_name(name).map(Column::Arrow);
                let plan = plan_struct(prog, structs, root, None, &cols, py)?;
                run(&plan, batch.num_rows(), out, done)?;
                done += batch.num_rows();
            }
        }
        Input::Columns {
            names,
            arrow,
            python,
            rows,
        } => {
            check_columns(py, prog, &names)?;
            let cols = |name: &str| {
                let i = names.iter().position(|n| n == name)?;
                match (&arrow[i], &python[i]) {
                    (Some(a), _) => Some(Column::Arrow(a)),
                    (None, Some(p)) => Some(Column::Py(p.clone())),
                    _ => None,
                }
            };
            let plan = plan_struct(prog, structs, root, None, &cols, py)?;
            run(&plan, rows, out, 0)?;
        }
    }
    Ok(())
}

/// Each strided leaf's input, found by its field path, when every one is an Arrow column, a
/// default or a constant.
fn strided_inputs<'a>(fixed: &'a FixedPlan, plan: &'a Plan<'a, '_>) -> Option<Vec<PackInput<'a>>> {
    let mut inputs = Vec::new();
    for (i, path) in fixed.leaf_paths().enumerate() {
        let mut p = plan;
        for &f in path {
            let Plan::Struct { fields, arr, .. } = p else {
                return None;
            };
            if arr.is_some_and(|s| s.null_count() > 0) {
                return None;
            }
            p = fields.get(f as usize)?;
        }
        inputs.push(match p {
            Plan::Leaf(a) => PackInput::Array(*a),
            Plan::Default(Lit::Int(v)) => PackInput::Int(*v),
            Plan::Default(Lit::Bool(b)) => PackInput::Int(i128::from(*b)),
            Plan::Default(Lit::Float(f)) => PackInput::Float(*f),
            Plan::Default(Lit::Bytes(b)) => PackInput::Bytes(b),
            Plan::Missing => PackInput::Bytes(fixed.leaf_konst(i)?),
            _ => return None,
        });
    }
    Some(inputs)
}

fn mode_copy(m: &Mode) -> Mode {
    match m {
        Mode::Unpack => Mode::Unpack,
        Mode::Pack => Mode::Pack,
        Mode::PackGrowable => Mode::PackGrowable,
    }
}
