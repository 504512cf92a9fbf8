//! Arbitrary bytes into the pure-Rust record opener and reader: errors are fine, panics,
//! hangs and crashes are not. The reader must also be deterministic, and reading through
//! its runs (atoms, floats, same-width ints: the builder's fast paths) must give the same
//! values, or the same error, as reading event by event.
#![no_main]

use bytewright_graph::tags::{INT32, NEG16, NEG8, SMALL_INT_MAX, UINT16, UINT8};
use bytewright_graph::{record, Event, Limits, Reader};
use libfuzzer_sys::fuzz_target;

fn events(body: &[u8], limits: Limits) -> Result<usize, bytewright_graph::ReadError> {
    let mut reader = Reader::new(body, limits);
    let mut n = 0;
    while reader.next_event()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// Every event as text, plain or through the runs the builder takes.
fn described(body: &[u8], limits: Limits, runs: bool) -> Result<Vec<String>, String> {
    let mut reader = Reader::new(body, limits);
    let mut out = Vec::new();
    let show = |e: &Event<'_>| match e {
        Event::Float(f) => format!("Float({:x})", f.to_bits()),
        e => format!("{e:?}"),
    };
    loop {
        if runs {
            loop {
                let at = reader.offset();
                let mut floats = reader.float_run();
                while let Some((&tag, rest)) = floats.split_first() {
                    let n = if tag == bytewright_graph::tags::FLOAT32 {
                        4
                    } else {
                        8
                    };
                    let v = if n == 4 {
                        f64::from(f32::from_le_bytes(rest[..4].try_into().unwrap()))
                    } else {
                        f64::from_le_bytes(rest[..8].try_into().unwrap())
                    };
                    out.push(show(&Event::Float(v)));
                    floats = &rest[n..];
                }
                let (tag, ints) = reader.int_run();
                let len = match tag {
                    SMALL_INT_MAX => 1,
                    UINT8 | NEG8 => 2,
                    UINT16 | NEG16 => 3,
                    _ => 5,
                };
                for e in ints.chunks_exact(len) {
                    let v = if tag == SMALL_INT_MAX {
                        i64::from(e[0])
                    } else {
                        let mut a = [0u8; 8];
                        a[..len - 1].copy_from_slice(&e[1..]);
                        let v = i64::from_le_bytes(a);
                        match tag {
                            NEG8 | NEG16 => -1 - v,
                            INT32 => i64::from(v as u32 as i32),
                            _ => v,
                        }
                    };
                    out.push(show(&Event::Int(v)));
                }
                reader.atom_run_to_number(|e| {
                    match e {
                        Event::SharedStr(s) => {
                            out.push(show(&Event::Share));
                            out.push(show(&Event::Str(s)));
                        }
                        e => out.push(show(&e)),
                    }
                    true
                });
                if reader.offset() == at {
                    break;
                }
            }
        }
        match reader.next_event() {
            Ok(Some(e)) => out.push(show(&e)),
            Ok(None) => return Ok(out),
            Err(e) => return Err(format!("{} at {}", e.message, e.offset)),
        }
    }
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
        assert_eq!(
            described(data, limits, false),
            described(data, limits, true)
        );
    }
});
