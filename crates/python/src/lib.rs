//! `bytewright._native`: thin PyO3 adapters over the pure-Rust cores.
//!
//! `wire` adapts `bytewright-wire` (codecs), `graph` adapts `bytewright-graph` (pickle).
//! Each registers its own classes and functions; nothing here knows a format detail.

use pyo3::prelude::*;

mod columns;
mod fastcall;
mod graph;
mod pyint;
mod wire;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    pyint::init(m.py())?;
    wire::register(m)?;
    columns::register(m)?;
    graph::register(m)?;
    Ok(())
}
