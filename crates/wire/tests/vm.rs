//! The compiler and both VMs driven from Rust alone, through a plain value tree.

mod common;

use common::*;

// ---- tests ----

#[test]
fn scalars_both_orders_exact_bytes() {
    for (order, big) in [("big", true), ("little", false)] {
        let p = prog(st(
            0,
            "S",
            Some(order),
            vec![
                f("a", i(1, false)),
                f("b", i(2, false)),
                f("c", i(3, false)),
                f("d", i(4, true)),
                f("e", i(8, false)),
                f("g", i(3, true)),
                f("h", json!({"t": "float", "width": 4})),
                f("k", json!({"t": "float", "width": 8})),
                f("m", json!({"t": "bool"})),
            ],
        ));
        let v = map(&[
            ("a", int(0xAB)),
            ("b", int(0x0102)),
            ("c", int(0x030405)),
            ("d", int(-2)),
            ("e", int(u64::MAX as i128)),
            ("g", int(-(1 << 23))),
            ("h", Val::Float(1.5)),
            ("k", Val::Float(-0.25)),
            ("m", Val::Bool(true)),
        ]);
        let mut want = vec![0xAB];
        let be = |b: &[u8]| -> Vec<u8> {
            if big {
                b.to_vec()
            } else {
                b.iter().rev().copied().collect()
            }
        };
        want.extend(be(&0x0102u16.to_be_bytes()));
        want.extend(be(&[3, 4, 5]));
        want.extend(be(&(-2i32).to_be_bytes()));
        want.extend(be(&u64::MAX.to_be_bytes()));
        want.extend(be(&[0x80, 0, 0]));
        want.extend(be(&1.5f32.to_be_bytes()));
        want.extend(be(&(-0.25f64).to_be_bytes()));
        want.push(1);
        assert_eq!(round_trip(&p, &v), want);
        assert_eq!(p.static_size, Some(want.len()));
        assert_eq!(do_unpack(&p, &want).unwrap().0, v);
    }
}

#[test]
fn field_order_override_and_nested_inheritance() {
    let inner = st(1, "Inner", None, vec![f("v", u16t())]);
    let p = prog(st(
        0,
        "Outer",
        Some("little"),
        vec![
            f(
                "a",
                json!({"t": "int", "width": 2, "signed": false, "order": "big"}),
            ),
            f("inner", inner),
        ],
    ));
    let v = map(&[("a", int(0x0102)), ("inner", map(&[("v", int(0x0304))]))]);
    assert_eq!(round_trip(&p, &v), vec![1, 2, 4, 3]);
}

#[test]
fn out_of_range_is_invalid_with_path() {
    let p = prog(st(0, "S", None, vec![f("a", u8t())]));
    let e = do_pack(&p, &map(&[("a", int(256))])).unwrap_err();
    assert_eq!(e.path(), "a");
    assert!(matches!(e.kind, Kind::Invalid(_)));
    let e = do_pack(&p, &map(&[])).unwrap_err();
    assert_eq!(e.message(), "a: missing field");
}

#[test]
fn derived_length_and_count() {
    let p = prog(st(
        0,
        "M",
        None,
        vec![
            f("n", u8t()),
            f("data", json!({"t": "bytes", "len": name("n")})),
            f("c", u16t()),
            f(
                "xs",
                json!({"t": "array", "item": u8t(), "count": name("c")}),
            ),
        ],
    ));
    assert!(p.structs[0].derived[0] && p.structs[0].derived[2]);
    let v = map(&[("data", bytes(b"abc")), ("xs", Val::List(vec![int(7)]))]);
    let data = do_pack(&p, &v).unwrap();
    assert_eq!(data, b"\x03abc\x00\x01\x07");
    let (back, _) = do_unpack(&p, &data).unwrap();
    assert_eq!(
        back,
        map(&[
            ("n", int(3)),
            ("data", bytes(b"abc")),
            ("c", int(1)),
            ("xs", Val::List(vec![int(7)]))
        ])
    );
    // Supplied and wrong.
    let v = map(&[
        ("n", int(2)),
        ("data", bytes(b"abc")),
        ("xs", Val::List(vec![])),
    ]);
    let e = do_pack(&p, &v).unwrap_err();
    assert_eq!(e.path(), "n");
    // Out of range: 300 bytes with a u8 length.
    let v = map(&[("data", bytes(&[0; 300])), ("xs", Val::List(vec![]))]);
    let e = do_pack(&p, &v).unwrap_err();
    assert_eq!(e.path(), "n");
    assert!(
        e.message().contains("300") || e.message().contains("range"),
        "{}",
        e.message()
    );
    // A bad consumer value is blamed on the consumer, not the length field.
    let v = map(&[("data", int(1)), ("xs", Val::List(vec![]))]);
    assert_eq!(do_pack(&p, &v).unwrap_err().path(), "data");
}

#[test]
fn linear_and_non_invertible_expressions() {
    let ip = prog(st(
        0,
        "Ip",
        None,
        vec![
            f("hdr_len", u8t()),
            f(
                "body",
                json!({"t": "bytes", "len": {"expr": ["bin", "-", ["bin", "*", ["name", "hdr_len"], ["int", 4]], ["int", 20]]}}),
            ),
        ],
    ));
    let data = do_pack(&ip, &map(&[("body", bytes(&[9; 8]))])).unwrap();
    assert_eq!(data[0], 7);
    assert!(do_pack(&ip, &map(&[("body", bytes(&[9; 7]))])).is_err());

    let img = prog(st(
        0,
        "Img",
        None,
        vec![
            f("w", u16t()),
            f("h", u16t()),
            f(
                "px",
                json!({"t": "array", "item": u8t(), "count": {"expr": ["bin", "*", ["name", "w"], ["name", "h"]]}}),
            ),
        ],
    ));
    let px = Val::List((0..6).map(int).collect());
    let ok = map(&[("w", int(2)), ("h", int(3)), ("px", px.clone())]);
    assert_eq!(
        round_trip(&img, &ok),
        b"\x00\x02\x00\x03\x00\x01\x02\x03\x04\x05"
    );
    let bad = map(&[("w", int(2)), ("h", int(2)), ("px", px)]);
    assert!(matches!(
        do_pack(&img, &bad).unwrap_err().kind,
        Kind::Invalid(_)
    ));
    // Neither factor can be derived: leaving them out is an error.
    let px = Val::List((0..6).map(int).collect());
    assert!(do_pack(&img, &map(&[("px", px)])).is_err());
}

#[test]
fn u64_max_in_expression() {
    let p = prog(st(
        0,
        "B",
        None,
        vec![
            f("big", i(8, false)),
            f(
                "x",
                json!({"t": "bytes", "len": {"expr": ["bin", "-", ["name", "big"], ["int", 18446744073709551614u64]]}}),
            ),
        ],
    ));
    let v = map(&[("big", int(u64::MAX as i128)), ("x", bytes(b"z"))]);
    assert_eq!(round_trip(&p, &v), b"\xff\xff\xff\xff\xff\xff\xff\xffz");
    // Constants beyond 64 bits travel as decimal strings.
    let q = prog(st(
        0,
        "C",
        None,
        vec![
            f("a", u8t()),
            json!({"name": "b", "type": u8t(), "when": ["bin", "==", ["bin", "+", ["name", "a"], ["int", "36893488147419103232"]], ["int", "36893488147419103233"]]}),
        ],
    ));
    assert_eq!(
        do_unpack(&q, b"\x01\x09").unwrap().0,
        map(&[("a", int(1)), ("b", int(9))])
    );
    assert_eq!(
        do_unpack(&q, b"\x02").unwrap().0,
        map(&[("a", int(2)), ("b", Val::None)])
    );
}

#[test]
fn window_derived_and_errors_with_paths() {
    let inner = st(
        1,
        "Inner",
        None,
        vec![
            f("a", u16t()),
            f("rest", json!({"t": "bytes", "len": "rest"})),
        ],
    );
    let fixed = st(2, "Fixed", None, vec![f("a", u16t())]);
    let p = prog(st(
        0,
        "W",
        None,
        vec![
            f("size", u8t()),
            json!({"name": "inner", "type": inner, "size": ["name", "size"]}),
            f("size2", u8t()),
            json!({"name": "fixed", "type": fixed, "size": ["name", "size2"]}),
        ],
    ));
    let v = map(&[
        ("inner", map(&[("a", int(1)), ("rest", bytes(b"xy"))])),
        ("fixed", map(&[("a", int(2))])),
    ]);
    let data = do_pack(&p, &v).unwrap();
    assert_eq!(data, b"\x04\x00\x01xy\x02\x00\x02");
    round_trip(&p, &do_unpack(&p, &data).unwrap().0);
    // Overrun: the window is too small for Inner.a.
    let e = do_unpack(&p, b"\x01\x00\x02\x00\x02").unwrap_err();
    assert_eq!(e.path(), "inner.a");
    assert_eq!(e.offset, 1);
    assert!(!e.is_incomplete());
    assert_eq!(
        e.message(),
        "inner.a: needs 2 bytes at offset 1, 1 left in the window"
    );
    // Underrun: the window is larger than Fixed.
    let e = do_unpack(&p, b"\x02\x00\x01\x03\x00\x02\x00").unwrap_err();
    assert_eq!(e.path(), "fixed");
    // A wrong supplied size is blamed on the size field.
    let mut bad = v.clone();
    if let Val::Map(m) = &mut bad {
        m.push(("size".into(), int(3)));
    }
    let e = do_pack(&p, &bad).unwrap_err();
    assert_eq!(e.path(), "size");
}

fn telemetry() -> (Program, Vec<u8>) {
    let rec = st(
        2,
        "Record",
        None,
        vec![
            f("id", u32t()),
            f("payload_len", u16t()),
            f("payload", json!({"t": "bytes", "len": name("payload_len")})),
        ],
    );
    let frame = st(
        1,
        "Frame",
        None,
        vec![
            json!({"name": "magic", "type": {"t": "bytes", "len": {"fixed": 2}}, "const": {"bytes": [66, 87]}}),
            f("source_len", u8t()),
            f(
                "source",
                json!({"t": "str", "len": name("source_len"), "encoding": "utf-8"}),
            ),
            f("count", u16t()),
            f(
                "records",
                json!({"t": "array", "item": rec, "count": name("count")}),
            ),
            f("kind", u8t()),
            f(
                "body",
                json!({"t": "union", "tag": ["name", "kind"], "cases": [
                    {"tag": {"int": 1}, "type": u32t()},
                    {"tag": {"int": 2}, "type": {"t": "cstr", "max": 8, "encoding": "ascii"}}
                ], "default": {"t": "bytes", "len": "rest"}}),
            ),
        ],
    );
    let p = prog(st(
        0,
        "Env",
        None,
        vec![
            f("size", u32t()),
            json!({"name": "frame", "type": frame, "size": ["name", "size"]}),
        ],
    ));
    let records: Vec<Val> = (0..5)
        .map(|k| {
            map(&[
                ("id", int(1000 + k)),
                ("payload", Val::Bytes(vec![k as u8; 3 + k as usize])),
            ])
        })
        .collect();
    let v = map(&[(
        "frame",
        map(&[
            ("source", Val::Str("gw-é".into())),
            ("records", Val::List(records)),
            ("kind", int(2)),
            ("body", Val::Str("hi".into())),
        ]),
    )]);
    let data = do_pack(&p, &v).unwrap();
    (p, data)
}

#[test]
fn nested_error_path_and_offset() {
    let (p, data) = telemetry();
    round_trip(&p, &do_unpack(&p, &data).unwrap().0);
    // Records start after size(4) magic(2) source_len(1) source(5) count(2) = 14.
    // Record k is 6 + 3 + k bytes; records[3].payload starts at 14 + 9 + 10 + 11 + 6 = 50.
    let cut = &data[..50 + 2];
    let e = do_unpack(&p, cut).unwrap_err();
    // The window ends beyond the input: unpack blames the window, and it is incomplete.
    assert_eq!(e.path(), "frame");
    assert!(e.is_incomplete());
    // Patch the window size so the window ends exactly at the cut.
    let mut patched = cut.to_vec();
    patched[..4].copy_from_slice(&((cut.len() - 4) as u32).to_be_bytes());
    let e = do_unpack(&p, &patched).unwrap_err();
    assert_eq!(e.path(), "frame.records[3].payload");
    assert_eq!(e.offset, 50);
    assert_eq!(
        e.message(),
        "frame.records[3].payload: needs 6 bytes at offset 50, 2 left in the window"
    );
}

#[test]
fn truncations_and_flips_never_panic() {
    let (p, data) = telemetry();
    for cut in 0..data.len() {
        let e = do_unpack(&p, &data[..cut]).unwrap_err();
        assert!(e.is_incomplete(), "cut {cut}: {}", e.message());
    }
    for k in 0..data.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut d = data.clone();
            d[k] ^= mask;
            if let Ok((v, end)) = do_unpack(&p, &d) {
                assert!(end <= d.len());
                let again = do_pack(&p, &v).expect("what decodes packs");
                assert_eq!(again, d[..end]);
            }
        }
    }
}

#[test]
fn magic_mismatch_and_union_tags() {
    let (p, mut data) = telemetry();
    data[4] = b'X';
    let e = do_unpack(&p, &data).unwrap_err();
    assert_eq!(e.path(), "frame.magic");
    assert_eq!(e.offset, 4);
    assert!(matches!(e.kind, Kind::Invalid(_)));

    let u = prog(st(
        0,
        "U",
        None,
        vec![
            f("tag", json!({"t": "bytes", "len": {"fixed": 2}})),
            f(
                "body",
                json!({"t": "union", "tag": ["name", "tag"], "cases": [
                    {"tag": {"bytes": [65, 65]}, "type": u8t()},
                    {"tag": {"bytes": [66, 66]}, "type": u16t()}
                ]}),
            ),
        ],
    ));
    let v = map(&[("tag", bytes(b"BB")), ("body", int(0x0102))]);
    assert_eq!(round_trip(&u, &v), b"BB\x01\x02");
    let e = do_unpack(&u, b"CC\x01").unwrap_err();
    assert_eq!(e.path(), "body");
    assert_eq!(e.offset, 2);
}

#[test]
fn huge_count_fails_fast_without_allocating() {
    let p = prog(st(
        0,
        "C",
        None,
        vec![
            f("n", u32t()),
            f(
                "xs",
                json!({"t": "array", "item": u16t(), "count": name("n")}),
            ),
        ],
    ));
    let mut h = Host::new(&p);
    let buf = b"\xff\xff\xff\xff\x00\x01\x00\x02";
    let e = unpack::unpack(&p, &mut h, buf, 0).unwrap_err();
    assert!(e.path().starts_with("xs"), "{}", e.message());
    assert!(h.max_cap.get() <= buf.len(), "capacity {}", h.max_cap.get());
    // Within the limit but beyond the input: incomplete.
    let mut h = Host::new(&p);
    let e = unpack::unpack(&p, &mut h, b"\x00\x00\x10\x00\x00\x01", 0).unwrap_err();
    assert!(e.is_incomplete());
    assert!(h.max_cap.get() <= 1);
}

#[test]
fn limits_from_schema() {
    let root = st(
        0,
        "L",
        None,
        vec![
            f("n", u8t()),
            f(
                "xs",
                json!({"t": "array", "item": u8t(), "count": name("n"), "max": 2}),
            ),
        ],
    );
    let p = prog(root.clone());
    assert!(do_unpack(&p, b"\x02\x01\x02").is_ok());
    assert_eq!(do_unpack(&p, b"\x03\x01\x02\x03").unwrap_err().path(), "xs");
    let s = Schema::from_json(
        &json!({"root": st(0, "L", None, vec![
        f("n", u8t()),
        f("xs", json!({"t": "bytes", "len": name("n")})),
    ]), "limits": {"max_len": 1}})
        .to_string(),
    )
    .unwrap();
    let q = compile(&s).unwrap();
    assert!(do_unpack(&q, b"\x01a").is_ok());
    assert!(do_unpack(&q, b"\x02ab").is_err());
}

#[test]
fn enclosing_struct_reference() {
    let item = st(
        1,
        "Item",
        None,
        vec![f("data", json!({"t": "bytes", "len": name("item_len")}))],
    );
    let p = prog(st(
        0,
        "Box",
        None,
        vec![
            f("item_len", u8t()),
            f("n", u8t()),
            f(
                "items",
                json!({"t": "array", "item": item, "count": name("n")}),
            ),
        ],
    ));
    let v = map(&[
        ("item_len", int(2)),
        (
            "items",
            Val::List(vec![
                map(&[("data", bytes(b"ab"))]),
                map(&[("data", bytes(b"cd"))]),
            ]),
        ),
    ]);
    assert_eq!(round_trip(&p, &v), b"\x02\x02abcd");
}

#[test]
fn sizes() {
    let (p, _) = telemetry();
    assert_eq!(p.static_size, None);
    // size, magic, source_len, count and kind.
    assert_eq!(p.min_size, 4 + 2 + 1 + 2 + 1);
    let q = prog(st(
        0,
        "F",
        None,
        vec![
            f("a", u32t()),
            json!({"name": null, "type": {"t": "pad", "n": 3}}),
            f(
                "b",
                json!({"t": "array", "item": u16t(), "count": {"fixed": 3}}),
            ),
        ],
    ));
    assert_eq!(q.static_size, Some(13));
    assert_eq!(
        do_pack(
            &q,
            &map(&[
                ("a", int(1)),
                ("b", Val::List(vec![int(1), int(2), int(3)]))
            ])
        )
        .unwrap(),
        b"\x00\x00\x00\x01\x00\x00\x00\x00\x01\x00\x02\x00\x03"
    );
}

#[test]
fn compile_errors() {
    let e = compile_err(st(
        0,
        "S",
        None,
        vec![
            f("payload_len", u8t()),
            f("payload", json!({"t": "bytes", "len": name("payload_lne")})),
        ],
    ));
    assert!(
        e.starts_with("S.payload: unknown field 'payload_lne'"),
        "{e}"
    );
    assert!(e.ends_with("did you mean 'payload_len'?"), "{e}");
    let e = compile_err(st(0, "S", None, vec![f("a", i(5, false))]));
    assert!(e.contains("S.a") && e.contains("width 5"), "{e}");
    let e = compile_err(st(0, "S", None, vec![f("a", u8t()), f("a", u8t())]));
    assert!(e.contains("duplicate field name"), "{e}");
    let e = compile_err(st(
        0,
        "S",
        None,
        vec![
            f("later", json!({"t": "bytes", "len": name("n")})),
            f("n", u8t()),
        ],
    ));
    assert!(e.contains("unknown field 'n'"), "{e}");
    let e = compile_err(st(
        0,
        "S",
        None,
        vec![json!({"name": "m", "type": u8t(), "const": {"bytes": [1]}})],
    ));
    assert!(e.contains("S.m"), "{e}");
    assert!(Schema::from_json("{\"root\": {\"t\": \"nope\"}}").is_err());
}

#[test]
fn conditional_length_is_derived_under_the_same_condition() {
    let when = json!(["bin", "&", ["name", "flags"], ["int", 2]]);
    let p = prog(st(
        0,
        "Opt",
        None,
        vec![
            f("flags", u8t()),
            json!({"name": "n", "type": u8t(), "when": when}),
            json!({"name": "name", "type": {"t": "str", "len": name("n"), "encoding": "ascii"}, "when": when}),
        ],
    ));
    assert!(p.structs[0].derived[1]);
    let v = map(&[("flags", int(2)), ("name", Val::Str("hi".into()))]);
    assert_eq!(round_trip(&p, &v), b"\x02\x02hi");
    let v = map(&[("flags", int(0)), ("name", Val::Str("hi".into()))]);
    assert_eq!(do_pack(&p, &v).unwrap(), b"\x00");
    assert_eq!(
        do_unpack(&p, b"\x00").unwrap().0,
        map(&[("flags", int(0)), ("n", Val::None), ("name", Val::None)])
    );
}

#[test]
fn an_absent_field_reads_absent_after_a_record_where_it_was_present() {
    // The unpack VM reuses slot storage across structs and messages: an absent conditional
    // field must read as absent, never as the value an earlier record left there.
    let rec = st(
        1,
        "Rec",
        None,
        vec![
            f("flags", u8t()),
            json!({"name": "n", "type": u8t(), "when": ["bin", "&", ["name", "flags"], ["int", 2]]}),
            f("data", json!({"t": "bytes", "len": name("n")})),
        ],
    );
    let p = prog(st(
        0,
        "Recs",
        None,
        vec![
            f("count", u8t()),
            f(
                "recs",
                json!({"t": "array", "item": rec, "count": name("count")}),
            ),
        ],
    ));
    let e = do_unpack(&p, b"\x02\x02\x01a\x00").unwrap_err();
    assert_eq!(
        (e.path(), e.offset, e.message()),
        (
            "recs[1].data".to_string(),
            5,
            "recs[1].data: cannot compute the length: field 'n' is not present".to_string()
        )
    );
    let one = st(
        1,
        "Rec",
        None,
        vec![
            f("flags", u8t()),
            json!({"name": "n", "type": u8t(), "when": ["bin", "&", ["name", "flags"], ["int", 2]]}),
            f("data", json!({"t": "bytes", "len": name("n")})),
        ],
    );
    let p = prog(one);
    let mut scratch = bytewright_wire::Scratch::new();
    let mut h = Host::new(&p);
    let (v, end) = unpack::unpack_with(&p, &mut scratch, &mut h, b"\x02\x01a", 0).unwrap();
    assert_eq!(end, 3);
    assert_eq!(
        v,
        map(&[("flags", int(2)), ("n", int(1)), ("data", bytes(b"a"))])
    );
    let e = unpack::unpack_with(&p, &mut scratch, &mut h, b"\x00", 0).unwrap_err();
    assert_eq!(
        (e.path(), e.offset, e.message()),
        (
            "data".to_string(),
            1,
            "data: cannot compute the length: field 'n' is not present".to_string()
        )
    );
}

#[test]
fn dns_names_compress_against_the_outermost_value() {
    let dn = |c: bool| json!({"t": "dnsname", "compress": c});
    let p = prog(st(
        0,
        "M",
        None,
        vec![
            f("id", u16t()),
            f("a", dn(true)),
            f("b", dn(true)),
            f("c", dn(false)),
            f("d", dn(true)),
        ],
    ));
    let v = map(&[
        ("id", int(7)),
        ("a", Val::Str("www.example.com.".into())),
        ("b", Val::Str("mail.example.com".into())),
        ("c", Val::Str("example.com".into())),
        ("d", Val::Str("www.example.com".into())),
    ]);
    let data = round_trip(&p, &v);
    let mut want = b"\x00\x07\x03www\x07example\x03com\x00".to_vec();
    want.extend(b"\x04mail\xc0\x06");
    want.extend(b"\x07example\x03com\x00");
    want.extend(b"\xc0\x02");
    assert_eq!(data, want);
    // Decoding at an offset: pointers count from where the outermost value starts.
    let mut shifted = b"junk".to_vec();
    shifted.extend(&data);
    let mut h = Host::new(&p);
    let (back, end) = unpack::unpack(&p, &mut h, &shifted, 4).expect("unpacks");
    assert_eq!(end, shifted.len());
    let Val::Map(fields) = back else { panic!() };
    assert_eq!(fields[4].1, Val::Str("www.example.com.".into()));
    // A pointer loop and a pointer past the data are malformed, a cut name is short.
    let one = prog(st(0, "N", None, vec![f("n", dn(true))]));
    for bad in [&b"\xc0\x00"[..], b"\x01a\xc0\x00", b"\xc0\x05"] {
        let e = do_unpack(&one, bad).unwrap_err();
        assert!(matches!(e.kind, Kind::Invalid(_)), "{bad:?}: {e:?}");
    }
    let e = do_unpack(&one, b"\x03ab").unwrap_err();
    assert!(matches!(e.kind, Kind::Short { .. }));
    // Text that is no name is a pack error.
    let e = do_pack(&one, &map(&[("n", Val::Str("a..b".into()))])).unwrap_err();
    assert!(matches!(e.kind, Kind::Invalid(_)));
}

#[test]
fn msgpack_values_round_trip() {
    let p = prog(json!({"t": "msgpack"}));
    let v = Val::List(vec![
        Val::None,
        Val::Bool(true),
        int(-33),
        int(1 << 40),
        Val::Float(1.5),
        Val::Str("hé".into()),
        bytes(b"\x00\x01"),
        map(&[("a", int(1)), ("b", Val::List(vec![]))]),
    ]);
    let mut out = Vec::new();
    let h = Host::new(&p);
    pack::pack(&p, &h, &mut out, &v).unwrap();
    assert_eq!(
        out,
        b"\x98\xc0\xc3\xd0\xdf\xcf\x00\x00\x01\x00\x00\x00\x00\x00\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\xa3h\xc3\xa9\xc4\x02\x00\x01\x82\xa1a\x01\xa1b\x90"
    );
    let mut h = Host::new(&p);
    let (back, end) = unpack::unpack(&p, &mut h, &out, 0).unwrap();
    assert_eq!(end, out.len());
    assert_eq!(back, v);
    // Truncations and flips never panic.
    for cut in 0..out.len() {
        let _ = unpack::unpack(&p, &mut h, &out[..cut], 0);
    }
    let deep = vec![0x91u8; 100_000];
    let e = unpack::unpack(&p, &mut h, &deep, 0).unwrap_err();
    assert!(e.message().contains("depth limit"), "{}", e.message());
}

#[test]
fn varint_in_a_condition_packs() {
    // A varint that a later `when=` reads (not a derived length) keeps its value on pack.
    let p = prog(st(
        0,
        "S",
        None,
        vec![
            f("n", json!({"t": "varint", "zigzag": true})),
            json!({"name": "x", "type": u8t(), "when": ["bin", "&", ["name", "n"], ["int", 1]]}),
        ],
    ));
    assert_eq!(
        round_trip(&p, &map(&[("n", int(-1)), ("x", int(7))])),
        vec![1, 7]
    );
    assert_eq!(round_trip(&p, &map(&[("n", int(2))])), vec![4]);
}
