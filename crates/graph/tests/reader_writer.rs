//! Writer output read back event by event, and mutated bodies never panic the reader.

use bytewright_graph::tags::{ENUM, OBJECT, ORDERED_DICT, SET};
use bytewright_graph::{record, ErrorKind, Event, Header, Limits, Reader, Writer};

fn finish(w: Writer) -> Vec<u8> {
    let (buf, start) = w.finish(None);
    buf[start..].to_vec()
}

fn body(record_bytes: &[u8]) -> &[u8] {
    record::open(record_bytes, None, &Limits::default()).unwrap()
}

fn events(body: &[u8]) -> Result<Vec<Event<'_>>, bytewright_graph::ReadError> {
    let mut r = Reader::new(body, Limits::default());
    let mut out = Vec::new();
    while let Some(e) = r.next_event()? {
        out.push(e);
    }
    Ok(out)
}

fn rich() -> Vec<u8> {
    let mut w = Writer::default();
    w.list(12);
    w.int(-1);
    w.int(1 << 33);
    w.bigint(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    w.float(f64::NAN);
    w.complex(1.0, -0.0);
    w.str(b"a string longer than thirty-one bytes!");
    w.str_surrogates(b"\xed\xa0\x80");
    w.bytes(b"\x00\x01");
    w.share();
    w.counted(SET, 1);
    w.tuple(0);
    w.deque(Some(3), 1);
    w.reference(0);
    w.counted(ORDERED_DICT, 1);
    w.str(b"k");
    w.class_new(OBJECT, b"m.C", 2, [&b"a"[..]].into_iter());
    w.tag(bytewright_graph::tags::NONE);
    w.class_new(ENUM, b"m.E", 1, std::iter::empty());
    w.str(b"RED");
    finish(w)
}

#[test]
fn every_writer_form_reads_back() {
    let rec = rich();
    let ev = events(body(&rec)).unwrap();
    assert_eq!(ev[0], Event::List(12));
    assert_eq!(ev[1], Event::Int(-1));
    assert_eq!(ev[2], Event::Int(1 << 33));
    assert!(matches!(ev[3], Event::BigInt(b) if b.len() == 10));
    assert!(matches!(ev[4], Event::Float(f) if f.is_nan()));
    assert!(matches!(ev[5], Event::Complex(re, im) if re == 1.0 && im.is_sign_negative()));
    assert!(ev.contains(&Event::Deque {
        maxlen: Some(3),
        len: 1
    }));
    assert!(ev.contains(&Event::Ref(0)));
    assert!(ev.contains(&Event::Object { class: 0, len: 1 }));
    assert!(ev.contains(&Event::Enum { class: 1 }));
    assert_eq!(ev.iter().filter(|e| **e == Event::End).count(), 6);
}

#[test]
fn signed_records_verify_and_reject_tampering() {
    let mut w = Writer::default();
    w.str(b"signed");
    let (buf, start) = w.finish(Some(b"key"));
    let rec = &buf[start..];
    assert!(record::open(rec, Some(b"key"), &Limits::default()).is_ok());
    for i in 0..rec.len() {
        let mut t = rec.to_vec();
        t[i] ^= 0x20;
        assert!(
            record::open(&t, Some(b"key"), &Limits::default()).is_err(),
            "byte {i}"
        );
    }
}

#[test]
fn header_length_matches_the_record() {
    let rec = rich();
    let h = Header::parse(&rec).unwrap();
    assert_eq!(h.record_len() as usize, rec.len());
}

/// A small deterministic generator, so the test needs no extra crates.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn mutated_bodies_only_error() {
    let rec = rich();
    let base = body(&rec).to_vec();
    let mut rng = Lcg(7);
    for _ in 0..20_000 {
        let mut b = base.clone();
        for _ in 0..1 + rng.next() % 4 {
            let i = (rng.next() as usize) % b.len();
            match rng.next() % 3 {
                0 => b[i] = rng.next() as u8,
                1 => b.truncate(i),
                _ => b.insert(i, rng.next() as u8),
            }
            if b.is_empty() {
                break;
            }
        }
        let _ = events(&b);
    }
}

#[test]
fn limits_are_enforced() {
    let rec = rich();
    let b = body(&rec);
    let tight = |l: Limits| Reader::new(b, l).validate().unwrap_err().kind;
    assert_eq!(
        tight(Limits {
            max_items: 3,
            ..Limits::default()
        }),
        ErrorKind::Limit
    );
    assert_eq!(
        tight(Limits {
            max_container_len: 2,
            ..Limits::default()
        }),
        ErrorKind::Limit
    );
    assert_eq!(
        tight(Limits {
            max_str_len: 4,
            ..Limits::default()
        }),
        ErrorKind::Limit
    );
    assert_eq!(
        tight(Limits {
            max_bytes_len: 1,
            ..Limits::default()
        }),
        ErrorKind::Limit
    );
    assert_eq!(
        tight(Limits {
            max_int_digits: 5,
            ..Limits::default()
        }),
        ErrorKind::Limit
    );
    assert_eq!(
        tight(Limits {
            max_depth: 1,
            ..Limits::default()
        }),
        ErrorKind::Limit
    );
    assert!(Reader::new(b, Limits::default()).validate().is_ok());
}
