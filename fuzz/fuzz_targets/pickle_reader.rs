//! Arbitrary bytes into the pure-Rust pickle checker (opcode decoder + stack/memo machine):
//! errors are fine, panics, hangs and crashes are not. Checking must be deterministic,
//! and with `classes=`-like names resolvable the same bytes must never panic either.
#![no_main]

use bytewright_graph::pickle::{check, ClassKind, Global, NoExtras, Resolve, ResolveFailed};
use bytewright_graph::Limits;
use libfuzzer_sys::fuzz_target;

/// Resolves every `m.C*` name to a class and `m.f*` to an allow= constructor.
struct Everything;

impl Resolve for Everything {
    fn resolve(&mut self, module: &str, name: &str) -> Result<Option<Global>, ResolveFailed> {
        Ok(match (module, name.as_bytes().first()) {
            ("m", Some(b'C')) => Some(Global::Class(0, ClassKind::Object)),
            ("m", Some(b'T')) => Some(Global::Class(1, ClassKind::Tuple)),
            ("m", Some(b'E')) => Some(Global::Class(2, ClassKind::Enum)),
            ("m", Some(b'f')) => Some(Global::Extra(0)),
            _ => None,
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let tight = Limits { max_depth: 8, max_items: 64, max_container_len: 16, ..Limits::default() };
    let first = check(data, Limits::default(), NoExtras).map(|p| p.instrs.len());
    assert_eq!(first, check(data, Limits::default(), NoExtras).map(|p| p.instrs.len()));
    let _ = check(data, tight, NoExtras);
    let _ = check(data, Limits::default(), Everything);
});
