//! Python adapters for the object-graph (pickle) core: `bytewright.pickle`'s native half.

mod builder;
mod config;
mod encoder;
mod errors;
mod ptrmap;

use bytewright_graph::{record, Header, Limits, Reader};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use builder::Builder;
use encoder::Encoder;

/// Inputs and outputs from this size on are validated and signed with the GIL released.
const RELEASE_GIL_FROM: usize = 64 * 1024;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(config::graph_configure, m)?)?;
    m.add_function(wrap_pyfunction!(graph_dumps, m)?)?;
    m.add_function(wrap_pyfunction!(graph_loads, m)?)?;
    m.add_function(wrap_pyfunction!(graph_record_len, m)?)?;
    Ok(())
}

/// Encodes `obj` as one record, signed when `key` is given.
#[pyfunction]
fn graph_dumps<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    key: Option<Vec<u8>>,
    deterministic: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let cfg = config::get(py)?;
    let mut enc = Encoder::new(py, cfg, deterministic);
    enc.encode(obj.as_ptr()).map_err(|e| e.into_py(py, cfg))?;
    let writer = std::mem::take(&mut enc.w);
    drop(enc);
    let (buf, start) = if key.is_some() && writer.body_len() >= RELEASE_GIL_FROM {
        py.detach(|| writer.finish(key.as_deref()))
    } else {
        writer.finish(key.as_deref())
    };
    Ok(PyBytes::new(py, &buf[start..]))
}

fn limits_from(t: Option<(u64, u64, u64, u64, u64, u64, u64)>) -> Limits {
    match t {
        None => Limits::default(),
        Some((a, b, c, d, e, f, g)) => Limits {
            max_bytes: a,
            max_depth: b,
            max_items: c,
            max_container_len: d,
            max_str_len: e,
            max_bytes_len: f,
            max_int_digits: g,
        },
    }
}

/// Decodes one record. `classes` maps record names to the classes allowed to appear.
#[pyfunction]
fn graph_loads<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    classes: &Bound<'py, PyDict>,
    key: Option<Vec<u8>>,
    limits: Option<(u64, u64, u64, u64, u64, u64, u64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let cfg = config::get(py)?;
    let limits = limits_from(limits);
    let copied: Vec<u8>;
    let input: &[u8] = if let Ok(b) = data.cast::<PyBytes>() {
        b.as_bytes()
    } else if let Ok(buffer) = PyBuffer::<u8>::get(data) {
        // bytearray and memoryview may change under us: decode a private copy.
        copied = buffer.to_vec(py)?;
        &copied
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "loads() takes bytes, bytearray or memoryview, not {}",
            data.get_type().name()?
        )));
    };
    let key = key.as_deref();
    let body = if input.len() >= RELEASE_GIL_FROM {
        py.detach(|| {
            let body = record::open(input, key, &limits)?;
            Reader::new(body, limits).validate()?;
            Ok(body)
        })
    } else {
        record::open(input, key, &limits)
    }
    .map_err(|e| errors::read_error(py, cfg, &e))?;
    Builder::new(py, cfg, Reader::new(body, limits), classes).build()
}

/// Total length of the record whose header starts `prefix` (for framed streams).
#[pyfunction]
fn graph_record_len(py: Python<'_>, prefix: &[u8]) -> PyResult<u64> {
    let cfg = config::get(py)?;
    Header::parse(prefix).map(|h| h.record_len()).map_err(|e| errors::read_error(py, cfg, &e))
}
