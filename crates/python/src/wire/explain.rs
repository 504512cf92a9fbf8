//! `Codec._explain` (behind `bytewright.explain`): the field tree of one message, as plain
//! Python tuples for `bytewright._explain` to wrap.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use bytewright_explain::{explain, Failure, Name};
use bytewright_wire::{Kind, Program};

use super::errors::{decode_error, raise, Mode};
use super::sink::PySink;
use super::structs::StructInfo;

/// One node: `(parent, name, kind, start, end, bits, marks, notes, struct_name, has_value,
/// value)`, where `name` is a field name, an item index, or None for the message, its
/// padding and the rest (told apart by their marks).
type NodeTuple<'py> = Bound<'py, PyTuple>;

fn node_tuple<'py>(
    py: Python<'py>,
    n: bytewright_explain::Node<Bound<'py, PyAny>>,
) -> PyResult<NodeTuple<'py>> {
    let name: Bound<'py, PyAny> = match &n.name {
        Name::Field(f) => f.as_ref().into_pyobject(py)?.into_any(),
        Name::Index(i) => i.into_pyobject(py)?.into_any(),
        Name::Root | Name::Padding | Name::Rest => py.None().into_bound(py),
    };
    let bits = n.bits.map(|b| (b.group, b.shift, b.width, b.lsb));
    let marks: Vec<&str> = n.marks.iter().map(|m| m.as_str()).collect();
    let has_value = n.value.is_some();
    let value = n.value.unwrap_or_else(|| py.None().into_bound(py));
    (
        n.parent,
        name,
        n.kind,
        n.start,
        n.end,
        bits,
        PyTuple::new(py, marks)?,
        PyTuple::new(py, n.notes)?,
        n.struct_name.as_deref(),
        has_value,
        value,
    )
        .into_pyobject(py)
}

/// The error `unpack` raises for bytes after a whole message.
pub fn trailing_error(py: Python<'_>, len: usize, end: usize, root: &str) -> PyErr {
    decode_error(
        py,
        format!(
            "{} trailing bytes after the {root} message ends at offset {end} (unpack_from reads a message followed by other data)",
            len - end,
        ),
        "",
        end,
    )
}

/// `(nodes, end, error, needed, failed, rest)`: the node tuples (the message first, every
/// parent before its children), where the message ends (None if it did not decode), the
/// `DecodeError` that `unpack` raises for these bytes (or None), the further bytes short
/// data needs (or None), and the indexes of the failed node and of the undecoded rest.
#[allow(clippy::too_many_arguments)]
pub fn explain_py<'py>(
    py: Python<'py>,
    prog: &Program,
    structs: &[StructInfo],
    typed: bool,
    data: &[u8],
    offset: usize,
    whole: bool,
    root: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let sink = PySink { py, structs, typed };
    let ex = explain(prog, sink, data, offset, whole);
    let (error, needed, failed) = match ex.failure {
        None => (None, None, None),
        Some(Failure::Trailing { end }) => (
            Some(trailing_error(py, data.len(), end, root).into_value(py)),
            None,
            ex.rest,
        ),
        Some(Failure::Decode { error, node }) => {
            let needed = match error.kind {
                Kind::Short {
                    need,
                    left,
                    at_end: true,
                } => Some(need.saturating_sub(left).max(1)),
                _ => None,
            };
            let err = raise(py, *error, Mode::Unpack);
            // Not a decode error (out of memory, an interrupt): raise it, as unpack would.
            if !err.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
                return Err(err);
            }
            (Some(err.into_value(py)), needed, Some(node))
        }
    };
    let nodes = PyList::empty(py);
    for n in ex.nodes {
        nodes.append(node_tuple(py, n)?)?;
    }
    (nodes, ex.end, error, needed, failed, ex.rest).into_pyobject(py)
}
