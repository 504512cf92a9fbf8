//! Arbitrary bytes into the pure-Rust pickle checker (opcode decoder + stack/memo machine):
//! errors are fine, panics, hangs and crashes are not. Checking must be deterministic,
//! and with `classes=`-like names resolvable the same bytes must never panic either. A sink
//! that builds everything at once (the machine's fast loop) must be handed exactly what a
//! recording one gets in its program, or fail with the same error.
#![no_main]

use bytewright_pickle_reader::{
    check, self_check, ClassKind, Global, Limits, NoExtras, Resolve, ResolveFailed,
};
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

fn same_both_ways(data: &[u8], limits: Limits) {
    if let Err(diff) = self_check(data, limits) {
        panic!("{diff}");
    }
}

fuzz_target!(|data: &[u8]| {
    let tight = Limits {
        max_depth: 8,
        max_items: 64,
        max_container_len: 16,
        max_str_len: 8,
        max_bytes_len: 8,
        ..Limits::default()
    };
    let first = check(data, Limits::default(), NoExtras).map(|p| p.instrs.len());
    assert_eq!(
        first,
        check(data, Limits::default(), NoExtras).map(|p| p.instrs.len())
    );
    let _ = check(data, tight, NoExtras);
    same_both_ways(data, Limits::default());
    same_both_ways(data, tight);
    let _ = check(data, Limits::default(), Everything);
});
