//! `bytewright._native`: thin PyO3 adapters over the pure-Rust cores.
//!
//! `wire` adapts `bytewright-wire` (codecs), `graph` adapts `bytewright-graph`
//! (`bytewright.pickle`), `pickle_reader` adapts `bytewright-pickle-reader`
//! (`loads_pickle`). Each registers its own classes and functions; nothing here knows a
//! format detail.
//!
//! Python objects reach the native side one way: the Rust code imports them by module and
//! name the first time it needs them (pyo3's `PyOnceLock`: `graph::config`,
//! `pickle_reader::helpers`, the wire errors), never through a configuration call made by
//! the Python package. So no entry point depends on which Python module was imported first
//! or on a configuration call having run, a failed import leaves nothing half set up (it is
//! raised and retried on the next call), importing `bytewright` imports nothing native code
//! does not use, and the names the Rust code relies on are written next to the code that
//! uses them. After the first call a look-up is one once-cell read, as a pushed value was.

use pyo3::prelude::*;

mod alloc;
mod columns;
mod cpython;
mod fastcall;
mod graph;
mod pickle_reader;
mod wire;

#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    cpython::init(m)?;
    wire::register(m)?;
    columns::register(m)?;
    graph::register(m)?;
    pickle_reader::register(m)?;
    Ok(())
}
