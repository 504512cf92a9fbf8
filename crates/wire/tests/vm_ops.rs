//! The VM's ops beyond plain scalars and containers (bit fields, varints, F16, alignment,
//! checksums, registries, recursion) driven from Rust alone, through the same plain value
//! tree as vm.rs.

mod common;

use common::*;

fn err_of(r: Result<impl std::fmt::Debug, Box<Error<String>>>) -> Box<Error<String>> {
    r.expect_err("must fail")
}

fn bits(width: u8, signed: bool) -> J {
    json!({"t": "bits", "width": width, "signed": signed})
}

fn flag() -> J {
    json!({"t": "bits", "width": 1, "boolean": true})
}

fn bst(bitorder: &str, fields: Vec<J>) -> J {
    json!({"t": "struct", "id": 0, "name": "B", "bitorder": bitorder, "fields": fields})
}

// ---- bit fields ----

#[test]
fn bits_msb_first_exact_bytes() {
    let p = prog(bst(
        "msb",
        vec![
            f("version", bits(4, false)),
            f("ihl", bits(4, false)),
            f("dscp", bits(6, false)),
            f("ecn", bits(2, false)),
        ],
    ));
    assert_eq!(p.static_size, Some(2));
    let v = map(&[
        ("version", int(4)),
        ("ihl", int(5)),
        ("dscp", int(46)),
        ("ecn", int(1)),
    ]);
    assert_eq!(round_trip(&p, &v), vec![0x45, 0xb9]);
}

#[test]
fn bits_lsb_first_802154_frame_control() {
    let p = prog(bst(
        "lsb",
        vec![
            f("frame_type", bits(3, false)),
            f("security", flag()),
            f("pending", flag()),
            f("ack", flag()),
            f("pan_comp", flag()),
            f("reserved", bits(3, false)),
            f("dst_mode", bits(2, false)),
            f("version", bits(2, false)),
            f("src_mode", bits(2, false)),
        ],
    ));
    let (v, end) = do_unpack(&p, &[0x61, 0x88]).unwrap();
    assert_eq!(end, 2);
    assert_eq!(
        v,
        map(&[
            ("frame_type", int(1)),
            ("security", Val::Bool(false)),
            ("pending", Val::Bool(false)),
            ("ack", Val::Bool(true)),
            ("pan_comp", Val::Bool(true)),
            ("reserved", int(0)),
            ("dst_mode", int(2)),
            ("version", int(0)),
            ("src_mode", int(2)),
        ])
    );
    assert_eq!(do_pack(&p, &v).unwrap(), vec![0x61, 0x88]);
}

#[test]
fn bits_signed_and_wide_groups() {
    let p = prog(bst(
        "msb",
        vec![
            f("a", bits(64, false)),
            f("b", bits(60, true)),
            f("c", bits(4, true)),
        ],
    ));
    assert_eq!(p.static_size, Some(16));
    let v = map(&[
        ("a", int(u64::MAX.into())),
        ("b", int(-(1 << 59))),
        ("c", int(-1)),
    ]);
    let mut want = vec![0xff; 8];
    want.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0x0f]);
    assert_eq!(round_trip(&p, &v), want);
    let e = err_of(do_pack(
        &p,
        &map(&[("a", int(0)), ("b", int(1 << 59)), ("c", int(0))]),
    ));
    assert_eq!(e.path(), "b");
    assert!(e.message().contains("does not fit"), "{}", e.message());
}

#[test]
fn bits_compile_errors() {
    let e = compile_err(bst("msb", vec![f("a", bits(3, false)), f("b", u8t())]));
    assert!(e.contains("whole bytes"), "{e}");
    let e = compile_err(bst("msb", vec![f("a", bits(65, false))]));
    assert!(e.contains("between 1 and 64"), "{e}");
    let e = compile_err(bst(
        "msb",
        vec![f("a", bits(0, false)), f("b", bits(8, false))],
    ));
    assert!(e.contains("between 1 and 64"), "{e}");
    let e = compile_err(bst(
        "msb",
        vec![
            f("a", json!({"t": "bits", "width": 2, "boolean": true})),
            f("b", bits(6, false)),
        ],
    ));
    assert!(e.contains("1 bit wide"), "{e}");
    let e = compile_err(bst(
        "msb",
        vec![
            f("n", u8t()),
            json!({"name": "a", "type": bits(8, false), "when": name("n")}),
        ],
    ));
    assert!(e.contains("cannot be conditional"), "{e}");
}

#[test]
fn bits_as_derived_length() {
    let p = prog(bst(
        "msb",
        vec![
            f("kind", bits(4, false)),
            f("n", bits(4, false)),
            f("data", json!({"t": "bytes", "len": name("n")})),
        ],
    ));
    let wire = do_pack(&p, &map(&[("kind", int(3)), ("data", bytes(b"abc"))])).unwrap();
    assert_eq!(wire, b"\x33abc");
    let e = err_of(do_pack(
        &p,
        &map(&[("kind", int(3)), ("data", bytes(&[0; 16]))]),
    ));
    assert!(e.message().contains("16"), "{}", e.message());
    let e = err_of(do_unpack(&p, b"\x35ab"));
    assert!(e.is_incomplete());
}

// ---- varints ----

fn varint_prog(zigzag: bool) -> Program {
    prog(st(
        0,
        "V",
        None,
        vec![f("v", json!({"t": "varint", "zigzag": zigzag}))],
    ))
}

#[test]
fn varint_vectors() {
    let u = varint_prog(false);
    for (v, w) in [
        (0i128, &b"\x00"[..]),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (u64::MAX.into(), b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
    ] {
        assert_eq!(round_trip(&u, &map(&[("v", int(v))])), w, "{v}");
    }
    let z = varint_prog(true);
    for (v, w) in [
        (0i128, &b"\x00"[..]),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (i64::MIN.into(), b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
    ] {
        assert_eq!(round_trip(&z, &map(&[("v", int(v))])), w, "{v}");
    }
    assert!(do_pack(&u, &map(&[("v", int(-1))])).is_err());
    assert!(do_pack(&z, &map(&[("v", int(i128::from(i64::MAX) + 1))])).is_err());
}

#[test]
fn varint_malformed_and_truncated() {
    let u = varint_prog(false);
    for bad in [
        &b"\x80\x00"[..],
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
        b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
    ] {
        let e = err_of(do_unpack(&u, bad));
        assert!(!e.is_incomplete(), "{bad:?}");
        assert_eq!(e.path(), "v");
        assert_eq!(e.offset, 0);
    }
    for short in [&b""[..], b"\x80", b"\xff\xff\xff"] {
        assert!(err_of(do_unpack(&u, short)).is_incomplete(), "{short:?}");
    }
}

#[test]
fn varint_derived_length_and_count() {
    let p = prog(st(
        0,
        "V",
        None,
        vec![
            f("n", json!({"t": "varint"})),
            f("data", json!({"t": "bytes", "len": name("n")})),
            f("c", json!({"t": "varint"})),
            f(
                "items",
                json!({"t": "array", "item": u8t(), "count": name("c")}),
            ),
        ],
    ));
    let v = map(&[
        ("data", bytes(&[7; 200])),
        ("items", Val::List(vec![int(1), int(2)])),
    ]);
    let wire = do_pack(&p, &v).unwrap();
    let mut want = vec![0xc8, 0x01];
    want.extend_from_slice(&[7; 200]);
    want.extend_from_slice(&[2, 1, 2]);
    assert_eq!(wire, want);
    let (back, _) = do_unpack(&p, &wire).unwrap();
    assert_eq!(do_pack(&p, &back).unwrap(), wire);
}

// ---- F16 ----

#[test]
fn f16_values_and_overflow() {
    let p = prog(st(
        0,
        "H",
        None,
        vec![f("v", json!({"t": "float", "width": 2}))],
    ));
    for (x, w) in [
        (1.0f64, [0x3c, 0x00]),
        (-2.0, [0xc0, 0x00]),
        (65504.0, [0x7b, 0xff]),
        (2f64.powi(-24), [0x00, 0x01]),
        (2f64.powi(-25), [0x00, 0x00]),
        (f64::INFINITY, [0x7c, 0x00]),
        (1.0 + 2f64.powi(-11), [0x3c, 0x00]), // a tie: to even
        (1.0 + 3.0 * 2f64.powi(-11), [0x3c, 0x02]), // a tie: to even, upwards
    ] {
        assert_eq!(
            do_pack(&p, &map(&[("v", Val::Float(x))])).unwrap(),
            w,
            "{x}"
        );
    }
    let (v, _) = do_unpack(&p, &[0x7b, 0xff]).unwrap();
    assert_eq!(v, map(&[("v", Val::Float(65504.0))]));
    let e = err_of(do_pack(&p, &map(&[("v", Val::Float(65520.0))])));
    assert!(e.message().contains("too large for f16"), "{}", e.message());
}

// ---- alignment ----

#[test]
fn field_and_struct_alignment() {
    let p = prog(json!({
        "t": "struct", "id": 0, "name": "A", "align": 8,
        "fields": [
            f("a", u8t()),
            {"name": "b", "type": u32t(), "align": 4},
            f("c", u8t()),
        ]
    }));
    assert_eq!(p.static_size, Some(16));
    let v = map(&[("a", int(1)), ("b", int(2)), ("c", int(3))]);
    assert_eq!(
        round_trip(&p, &v),
        vec![1, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0]
    );
    let e = compile_err(json!({
        "t": "struct", "id": 0, "name": "A", "fields": [{"name": "b", "type": u8t(), "align": 0}]
    }));
    assert!(e.contains("between 1 and 4096"), "{e}");
}

// ---- checksums ----

fn crc32_ref(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn sum(algo: J, over: Option<Vec<&str>>) -> J {
    json!({"algo": algo, "over": over})
}

#[test]
fn checksum_over_fields_and_whole_struct() {
    let p = prog(st(
        0,
        "C",
        None,
        vec![
            json!({"name": "whole", "type": u32t(), "checksum": sum(json!("crc32"), None)}),
            f("n", u8t()),
            f("data", json!({"t": "bytes", "len": name("n")})),
            json!({"name": "crc", "type": u32t(), "checksum": sum(json!("crc32"), Some(vec!["data"]))}),
        ],
    ));
    let wire = do_pack(&p, &map(&[("data", bytes(b"123456789"))])).unwrap();
    assert_eq!(&wire[14..], &0xCBF4_3926u32.to_be_bytes());
    let mut zeroed = wire.clone();
    zeroed[..4].fill(0);
    assert_eq!(&wire[..4], &crc32_ref(&zeroed).to_be_bytes());
    let (v, _) = do_unpack(&p, &wire).unwrap();
    assert_eq!(do_pack(&p, &v).unwrap(), wire);
    let mut bad = wire.clone();
    bad[7] ^= 1;
    let e = err_of(do_unpack(&p, &bad));
    assert_eq!((e.path().as_str(), e.offset), ("crc", 14));
    assert!(e.message().contains("checksum mismatch"), "{}", e.message());
}

#[test]
fn checksum_supplied_value_is_checked() {
    let p = prog(st(
        0,
        "C",
        None,
        vec![
            f("a", u32t()),
            json!({"name": "crc", "type": i(2, false), "checksum": sum(json!("crc16-modbus"), None)}),
        ],
    ));
    let e = err_of(do_pack(&p, &map(&[("a", int(1)), ("crc", int(0))])));
    assert_eq!(e.path(), "crc");
    assert!(e.message().contains("does not match"), "{}", e.message());
}

#[test]
fn checksum_field_kinds_and_cycles() {
    let bytes4 = json!({"t": "bytes", "len": {"fixed": 4}});
    let e = compile_err(st(
        0,
        "C",
        None,
        vec![
            f("a", u8t()),
            json!({"name": "crc", "type": bytes4, "checksum": sum(json!("crc32"), None)}),
        ],
    ));
    assert!(e.contains("unsigned integer"), "{e}");
    let e = compile_err(st(
        0,
        "C",
        None,
        vec![
            f("a", u8t()),
            json!({"name": "crc", "type": i(4, true), "checksum": sum(json!("crc32"), None)}),
        ],
    ));
    assert!(e.contains("unsigned integer"), "{e}");
    let e = compile_err(st(
        0,
        "C",
        None,
        vec![
            json!({"name": "x", "type": u32t(), "checksum": sum(json!("crc32"), None)}),
            json!({"name": "y", "type": u32t(), "checksum": sum(json!("crc32c"), None)}),
        ],
    ));
    assert!(e.contains("cover each other"), "{e}");
    let custom =
        json!({"width": 8, "poly": 0x1ff, "init": 0, "refin": false, "refout": false, "xorout": 0});
    let e = compile_err(st(
        0,
        "C",
        None,
        vec![json!({"name": "x", "type": u8t(), "checksum": sum(custom, None)})],
    ));
    assert!(e.contains("does not fit"), "{e}");
}

// ---- registries ----

fn variant(id: u32, name: &str, extra: Vec<J>) -> J {
    let mut fields = vec![f("kind", u8t())];
    fields.extend(extra);
    st(id, name, None, fields)
}

#[test]
fn registry_dispatch() {
    let root = json!({
        "t": "registry", "field": "kind",
        "cases": [
            {"tag": {"int": 1}, "type": variant(0, "Ping", vec![f("nonce", u16t())])},
            {"tag": {"int": 2}, "type": variant(1, "Text", vec![f("n", u8t())])},
        ],
    });
    let p = prog(root.clone());
    let (v, end) = do_unpack(&p, b"\x01\x00\x07").unwrap();
    assert_eq!((v, end), (map(&[("kind", int(1)), ("nonce", int(7))]), 3));
    assert_eq!(
        do_pack(&p, &map(&[("kind", int(2)), ("n", int(9))])).unwrap(),
        b"\x02\x09"
    );
    let e = err_of(do_unpack(&p, b"\x05\x00"));
    assert!(e.message().contains("unknown tag 5"), "{}", e.message());
    assert!(err_of(do_unpack(&p, b"")).is_incomplete());
    assert!(do_pack(&p, &map(&[("kind", int(3))])).is_err());

    let mut with_default = root;
    with_default["default"] = variant(
        2,
        "Raw",
        vec![f("rest", json!({"t": "bytes", "len": "rest"}))],
    );
    let p = prog(with_default);
    let (v, _) = do_unpack(&p, b"\x05xy").unwrap();
    assert_eq!(v, map(&[("kind", int(5)), ("rest", bytes(b"xy"))]));
}

// ---- recursion ----

fn tree(limits: Option<J>) -> Program {
    let node = st(
        0,
        "Node",
        None,
        vec![
            f("n", u8t()),
            f(
                "kids",
                json!({"t": "array", "item": {"t": "ref", "id": 0}, "count": name("n")}),
            ),
        ],
    );
    let mut s = json!({ "root": node });
    if let Some(l) = limits {
        s["limits"] = l;
    }
    compile(&Schema::from_json(&s.to_string()).unwrap()).unwrap()
}

#[test]
fn recursion_depth_limits() {
    let p = tree(None);
    assert_eq!(p.limits.max_depth, 64);
    let chain = |d: usize| {
        let mut w = vec![1u8; d - 1];
        w.push(0);
        w
    };
    assert!(do_unpack(&p, &chain(64)).is_ok());
    let e = err_of(do_unpack(&p, &chain(65)));
    assert!(e.message().contains("depth limit"), "{}", e.message());
    assert!(!e.is_incomplete());
    // Whatever the schema asks, the VM stops at the hard cap: no stack overflow.
    let p = tree(Some(json!({"max_depth": 4_000_000_000u32})));
    assert_eq!(p.limits.max_depth, 1000);
    assert!(do_unpack(&p, &chain(1000)).is_ok());
    let e = err_of(do_unpack(&p, &chain(100_000)));
    assert!(e.message().contains("1000"), "{}", e.message());
    // Pack stops too, on values nested deeper than the limit.
    let mut v = map(&[("kids", Val::List(vec![]))]);
    for _ in 0..1001 {
        v = map(&[("kids", Val::List(vec![v]))]);
    }
    let e = err_of(do_pack(&p, &v));
    assert!(e.message().contains("depth limit"), "{}", e.message());
}

#[test]
fn recursive_registry_through_a_ref() {
    // Neg contains the registry it belongs to; the inner registry refers to Neg in progress.
    let lit = |id: u32| variant(id, "Lit", vec![f("v", u8t())]);
    let inner = json!({
        "t": "registry", "field": "kind",
        "cases": [
            {"tag": {"int": 1}, "type": lit(2)},
            {"tag": {"int": 2}, "type": {"t": "ref", "id": 1}},
        ],
    });
    let root = json!({
        "t": "registry", "field": "kind",
        "cases": [
            {"tag": {"int": 1}, "type": lit(0)},
            {"tag": {"int": 2}, "type": variant(1, "Neg", vec![f("arg", inner)])},
        ],
    });
    let p = prog(root);
    let v = map(&[
        ("kind", int(2)),
        (
            "arg",
            map(&[
                ("kind", int(2)),
                ("arg", map(&[("kind", int(1)), ("v", int(5))])),
            ]),
        ),
    ]);
    assert_eq!(round_trip(&p, &v), b"\x02\x02\x01\x05");
    let mut deep = vec![2u8; 100_000];
    deep.extend_from_slice(&[1, 0]);
    let e = err_of(do_unpack(&p, &deep));
    assert!(e.message().contains("depth limit"), "{}", e.message());
}

#[test]
fn truncated_static_array_asks_for_the_rest() {
    let p = prog(st(
        0,
        "A",
        None,
        vec![
            f("n", u8t()),
            f(
                "items",
                json!({"t": "array", "item": u16t(), "count": name("n")}),
            ),
        ],
    ));
    let e = err_of(do_unpack(&p, &[3, 0, 1, 0]));
    assert_eq!((e.path().as_str(), e.offset), ("items[1]", 3));
    match e.kind {
        Kind::Short { need, left, at_end } => assert_eq!((need, left, at_end), (4, 1, true)),
        ref k => panic!("expected a short read, got {k:?}"),
    }
}
