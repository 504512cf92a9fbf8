//! Arbitrary bytes into the pure-Rust record opener and reader: errors are fine, panics,
//! hangs and crashes are not. The reader must also be deterministic, and reading through
//! its runs (atoms, floats, same-width ints: the builder's fast paths) must give the same
//! values, or the same error, as reading event by event.
#![no_main]

use bytewright_graph::{record, Limits, Reader};
use libfuzzer_sys::fuzz_target;

fn events(body: &[u8], limits: Limits) -> Result<usize, bytewright_graph::ReadError> {
    let mut reader = Reader::new(body, limits);
    let mut n = 0;
    while reader.next_event()?.is_some() {
        n += 1;
    }
    Ok(n)
}

fuzz_target!(|data: &[u8]| {
    let tight = Limits {
        max_depth: 8,
        max_items: 64,
        max_container_len: 16,
        ..Limits::default()
    };
    // As a whole record, unsigned and signed.
    if let Ok(body) = record::open(data, None, &Limits::default()) {
        let _ = Reader::new(body, Limits::default()).validate();
    }
    let _ = record::open(data, Some(b"key"), &Limits::default());
    // As a bare body, with default and tight limits; two reads must agree.
    let first = events(data, Limits::default());
    assert_eq!(first, events(data, Limits::default()));
    let _ = events(data, tight);
    assert_eq!(
        first.is_ok(),
        Reader::new(data, Limits::default()).validate().is_ok()
    );
    for limits in [Limits::default(), tight] {
        if let Err(diff) = Reader::runs_self_check(data, limits) {
            panic!("{diff}");
        }
    }
});
