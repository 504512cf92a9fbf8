//! The field tree against the plain decode of the same program: same values, same errors,
//! and every byte of a decoded message in exactly one leaf.

use std::collections::HashMap;
use std::sync::Arc;

use bytewright_explain::{explain, Explained, Failure, Host, Mark, Name};
use bytewright_wire::host::Sink;
use bytewright_wire::{compile, unpack, Error, Program, Schema};
use serde_json::{json, Value as J};

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i128),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    Str(String),
    List(Vec<Val>),
    Map(Vec<(String, Val)>),
    None,
}

/// A plain value-tree sink; with `double`, it converts every integer field of a struct
/// (as a Python enum converter would), to see that nodes show converted values.
struct Tree {
    names: HashMap<u32, Vec<Arc<str>>>,
    double: bool,
}

impl Tree {
    fn new(p: &Program) -> Tree {
        Tree {
            names: p
                .structs
                .iter()
                .map(|s| (s.sink_id, s.fields.clone()))
                .collect(),
            double: false,
        }
    }
}

impl Sink for Tree {
    type Value = Val;
    type Struct = (u32, Vec<(String, Val)>);
    type List = Vec<Val>;
    type Map = Vec<(String, Val)>;
    type Error = String;

    fn uint(&mut self, v: u64) -> Result<Val, String> {
        Ok(Val::Int(v.into()))
    }
    fn int(&mut self, v: i64) -> Result<Val, String> {
        Ok(Val::Int(v.into()))
    }
    fn float(&mut self, v: f64) -> Result<Val, String> {
        Ok(Val::Float(v))
    }
    fn bool(&mut self, v: bool) -> Result<Val, String> {
        Ok(Val::Bool(v))
    }
    fn bytes(&mut self, v: &[u8]) -> Result<Val, String> {
        Ok(Val::Bytes(v.to_vec()))
    }
    fn str(&mut self, v: &str, _ascii: bool) -> Result<Val, String> {
        Ok(Val::Str(v.to_string()))
    }
    fn latin1(&mut self, v: &[u8]) -> Result<Val, String> {
        Ok(Val::Str(v.iter().map(|&b| char::from(b)).collect()))
    }
    fn begin_struct(&mut self, sink_id: u32) -> Result<Self::Struct, String> {
        Ok((sink_id, Vec::new()))
    }
    fn set_field(&mut self, s: &mut Self::Struct, field: u16, v: Val) -> Result<(), String> {
        let v = self.field_value(s, field, v)?;
        self.store_field(s, field, v)
    }
    fn absent_field(&mut self, s: &mut Self::Struct, field: u16) -> Result<(), String> {
        self.store_field(s, field, Val::None)
    }
    fn end_struct(&mut self, s: Self::Struct) -> Result<Val, String> {
        Ok(Val::Map(s.1))
    }
    fn none(&mut self) -> Result<Val, String> {
        Ok(Val::None)
    }
    fn ext(&mut self, code: i8, data: &[u8]) -> Result<Val, String> {
        Ok(Val::List(vec![
            Val::Int(code.into()),
            Val::Bytes(data.to_vec()),
        ]))
    }
    fn begin_map(&mut self, cap: usize) -> Result<Self::Map, String> {
        Ok(Vec::with_capacity(cap))
    }
    fn map_insert(&mut self, m: &mut Self::Map, k: Val, v: Val) -> Result<(), String> {
        m.push((format!("{k:?}"), v));
        Ok(())
    }
    fn end_map(&mut self, m: Self::Map) -> Result<Val, String> {
        Ok(Val::Map(m))
    }
    fn begin_list(&mut self, cap: usize) -> Result<Vec<Val>, String> {
        Ok(Vec::with_capacity(cap))
    }
    fn push(&mut self, l: &mut Vec<Val>, v: Val) -> Result<(), String> {
        l.push(v);
        Ok(())
    }
    fn end_list(&mut self, l: Vec<Val>) -> Result<Val, String> {
        Ok(Val::List(l))
    }
}

impl Host for Tree {
    fn field_value(&mut self, _s: &Self::Struct, _f: u16, v: Val) -> Result<Val, String> {
        Ok(match v {
            Val::Int(i) if self.double => Val::Int(i * 2),
            v => v,
        })
    }
    fn store_field(&mut self, s: &mut Self::Struct, field: u16, v: Val) -> Result<(), String> {
        let name = self.names[&s.0][field as usize].to_string();
        s.1.push((name, v));
        Ok(())
    }
    fn absent_value(&mut self, _s: &Self::Struct, _f: u16) -> Option<Val> {
        Some(Val::None)
    }
}

// ---- schema helpers ----

fn int(width: u8) -> J {
    json!({"t": "int", "width": width, "signed": false})
}
fn f(name: &str, ty: J) -> J {
    json!({"name": name, "type": ty})
}
fn st(id: u32, name: &str, fields: Vec<J>) -> J {
    json!({"t": "struct", "id": id, "name": name, "order": "big", "fields": fields})
}
fn name(n: &str) -> J {
    json!({"expr": ["name", n]})
}
fn prog(root: J) -> Program {
    let s = Schema::from_json(&json!({ "root": root }).to_string()).expect("valid description");
    compile(&s).expect("compiles")
}

fn run(p: &Program, buf: &[u8]) -> Explained<Val, String> {
    explain(p, Tree::new(p), buf, 0, true)
}

fn plain(p: &Program, buf: &[u8]) -> Result<(Val, usize), Box<Error<String>>> {
    unpack::unpack(p, &mut Tree::new(p), buf, 0)
}

/// The value at a node's path in the plain decode's value.
fn value_at<'v>(ex: &Explained<Val, String>, i: usize, root: &'v Val) -> Option<&'v Val> {
    let mut chain = Vec::new();
    let mut at = i;
    while let Some(p) = ex.nodes[at].parent {
        chain.push(at);
        at = p;
    }
    let mut v = root;
    for &n in chain.iter().rev() {
        v = match (&ex.nodes[n].name, v) {
            (Name::Field(f), Val::Map(m)) => &m.iter().find(|(k, _)| **k == **f)?.1,
            (Name::Index(k), Val::List(l)) => l.get(*k)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Checks what must hold of every tree of a decoded message.
fn check_tree(p: &Program, buf: &[u8]) -> Explained<Val, String> {
    let ex = run(p, buf);
    let (want, end) = plain(p, buf).expect("the sample decodes");
    assert!(ex.failure.is_none(), "{:?}", ex.failure);
    assert_eq!(ex.end, Some(end));
    assert_eq!(ex.nodes[0].value.as_ref(), Some(&want));
    for (i, n) in ex.nodes.iter().enumerate() {
        let (s, e) = (
            n.start,
            n.end.expect("every node of a decoded message ends"),
        );
        assert!(s <= e && e <= buf.len(), "{}: {s}..{e}", ex.path(i));
        // Every node's value is the plain decode's value at its path.
        if !n.has(Mark::Padding) {
            assert_eq!(
                n.value.as_ref(),
                value_at(&ex, i, &want),
                "value of {}",
                ex.path(i)
            );
        }
        // Children lie inside their parent, in order (bit fields share their group).
        let mut at = s;
        for &c in &n.children {
            let cn = &ex.nodes[c];
            assert!(cn.start >= s && cn.end.unwrap() <= e, "{}", ex.path(c));
            if cn.bits.is_none() {
                assert!(cn.start >= at, "{} overlaps", ex.path(c));
            }
            at = at.max(cn.end.unwrap());
        }
    }
    // Every byte of the message is in exactly one leaf (bit fields share theirs).
    let mut covered = vec![0u32; buf.len()];
    let mut bits = std::collections::HashSet::new();
    for n in ex.nodes.iter().filter(|n| n.children.is_empty()) {
        for (i, c) in covered[n.start..n.end.unwrap()].iter_mut().enumerate() {
            if n.bits.is_none() || bits.insert(n.start + i) {
                *c += 1;
            }
        }
    }
    assert!(covered[..end].iter().all(|&c| c == 1), "{covered:?}");
    ex
}

fn node<'a>(ex: &'a Explained<Val, String>, path: &str) -> &'a bytewright_explain::Node<Val> {
    let i = ex
        .find(path)
        .unwrap_or_else(|| panic!("no node {path}: {:?}", paths(ex)));
    &ex.nodes[i]
}

fn paths(ex: &Explained<Val, String>) -> Vec<String> {
    (0..ex.nodes.len()).map(|i| ex.path(i)).collect()
}

fn chunk() -> J {
    st(
        1,
        "Chunk",
        vec![
            f("length", int(4)),
            f("type", json!({"t": "bytes", "len": {"fixed": 4}})),
            f("data", json!({"t": "bytes", "len": name("length")})),
            json!({"name": "crc", "type": int(4), "checksum": {"algo": "crc32", "over": ["type", "data"]}}),
        ],
    )
}

fn png() -> Program {
    prog(st(
        0,
        "Png",
        vec![
            json!({"name": "signature", "type": {"t": "bytes", "len": {"fixed": 8}}, "const": {"bytes": [137, 80, 78, 71, 13, 10, 26, 10]}}),
            f(
                "chunks",
                json!({"t": "array", "item": chunk(), "count": "rest"}),
            ),
        ],
    ))
}

fn png_bytes(chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (ty, data) in chunks {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(*ty);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc32(&ty[..], data).to_be_bytes());
    }
    out
}

/// CRC-32 (IEEE) of a chunk's type and data, bit by bit: the test's own oracle.
fn crc32(ty: &[u8], data: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in ty.iter().chain(data) {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

#[test]
fn png_fields_offsets_and_marks() {
    let p = png();
    let buf = png_bytes(&[(b"IHDR", &[0; 13]), (b"IEND", &[])]);
    let ex = check_tree(&p, &buf);
    let sig = node(&ex, "signature");
    assert_eq!((sig.start, sig.end), (0, Some(8)));
    assert!(sig.has(Mark::Constant));
    assert_eq!(sig.kind, "bytes[8]");
    let len = node(&ex, "chunks[1].length");
    assert_eq!((len.start, len.end), (8 + 25, Some(8 + 25 + 4)));
    assert!(len.has(Mark::Derived), "{:?}", len.marks);
    assert!(
        len.notes.iter().any(|n| n == "length of data"),
        "{:?}",
        len.notes
    );
    let crc = node(&ex, "chunks[0].crc");
    assert!(crc.has(Mark::Checksum));
    assert_eq!(crc.notes, vec!["crc32 over type, data"]);
    assert_eq!(crc.kind, "u32 be");
    let chunks = node(&ex, "chunks");
    assert_eq!(chunks.kind, "list[Chunk]");
    assert_eq!(chunks.children.len(), 2);
    assert_eq!(
        ex.nodes[chunks.children[0]].struct_name.as_deref(),
        Some("Chunk")
    );
    let data = node(&ex, "chunks[0].data");
    assert_eq!(data.notes, vec!["len=length"]);
}

#[test]
fn a_checksum_mismatch_is_attached_to_its_field() {
    let p = png();
    let mut buf = png_bytes(&[(b"IHDR", &[1; 13]), (b"IEND", &[])]);
    buf[8 + 4 + 4 + 13] ^= 0xff; // the first chunk's CRC
    let ex = run(&p, &buf);
    let want = plain(&p, &buf).expect_err("the CRC is wrong");
    let Some(Failure::Decode { error, node: at }) = &ex.failure else {
        panic!("{:?}", ex.failure)
    };
    assert_eq!(**error, *want);
    assert_eq!(ex.path(*at), "chunks[0].crc");
    assert_eq!(ex.path(*at), want.path());
    assert!(ex.nodes[*at].has(Mark::Failed));
    // The field decoded: its bytes and value are there; the rest of the file is one node.
    assert_eq!(ex.nodes[*at].end, Some(8 + 25));
    let rest = &ex.nodes[ex.rest.expect("undecoded bytes")];
    assert_eq!((rest.start, rest.end), (8 + 25, Some(buf.len())));
    assert_eq!(rest.name, Name::Rest);
    assert!(node(&ex, "signature").value.is_some());
}

#[test]
fn short_data_keeps_the_partial_tree() {
    let p = png();
    let full = png_bytes(&[(b"IHDR", &[7; 13]), (b"IEND", &[])]);
    for cut in 0..full.len() {
        let buf = &full[..cut];
        let ex = run(&p, buf);
        let want = plain(&p, buf);
        match (&ex.failure, want) {
            (Some(Failure::Decode { error, node }), Err(want)) => {
                assert_eq!(**error, *want, "cut at {cut}");
                assert!(ex.nodes[*node].has(Mark::Failed));
                // The failing node is the one the error names, or an ancestor of an opaque one.
                assert_eq!(ex.path(*node), want.path(), "cut at {cut}");
                // Every node that ended did so inside the data.
                for n in &ex.nodes {
                    assert!(n.end.is_none_or(|e| e <= cut));
                }
                if let Some(r) = ex.rest {
                    assert_eq!(ex.nodes[r].end, Some(cut));
                }
            }
            // A cut at a chunk boundary is a shorter, valid file.
            (None, Ok((v, _))) => assert_eq!(ex.nodes[0].value.as_ref(), Some(&v)),
            (got, want) => panic!("cut at {cut}: {got:?} vs {want:?}"),
        }
    }
}

#[test]
fn trailing_bytes_are_a_failure_of_a_whole_message() {
    let p = prog(st(0, "S", vec![f("a", int(2))]));
    let ex = run(&p, &[0, 1, 2]);
    assert!(matches!(ex.failure, Some(Failure::Trailing { end: 2 })));
    let rest = &ex.nodes[ex.rest.unwrap()];
    assert_eq!((rest.start, rest.end), (2, Some(3)));
    // Not asked for the whole input: no failure, no rest.
    let ex = explain(&p, Tree::new(&p), &[9, 0, 1, 2], 1, false);
    assert!(ex.failure.is_none());
    assert_eq!(ex.end, Some(3));
    assert_eq!(node(&ex, "a").start, 1);
    assert_eq!(ex.nodes[0].start, 1);
}

#[test]
fn bit_fields_share_their_group() {
    let p = prog(st(
        0,
        "IPv4Head",
        vec![
            json!({"name": "version", "type": {"t": "bits", "width": 4}, "const": {"int": 4}}),
            f("ihl", json!({"t": "bits", "width": 4})),
            f("dscp", json!({"t": "bits", "width": 6})),
            f("ecn", json!({"t": "bits", "width": 2})),
            f("df", json!({"t": "bits", "width": 1, "boolean": true})),
            f("rest", json!({"t": "bits", "width": 7})),
        ],
    ));
    let ex = check_tree(&p, &[0x45, 0x02, 0x80]);
    // One 3-byte group; each field covers the bytes its bits are in.
    let v = node(&ex, "version");
    assert_eq!((v.start, v.end), (0, Some(1)));
    let b = v.bits.unwrap();
    assert_eq!((b.group, b.shift, b.width), (3, 20, 4));
    assert_eq!(
        (node(&ex, "dscp").start, node(&ex, "dscp").end),
        (1, Some(2))
    );
    assert_eq!((node(&ex, "ecn").start, node(&ex, "ecn").end), (1, Some(2)));
    assert_eq!(
        (node(&ex, "rest").start, node(&ex, "rest").end),
        (2, Some(3))
    );
    assert!(v.has(Mark::Constant));
    assert_eq!(v.value, Some(Val::Int(4)));
    let ihl = node(&ex, "ihl");
    assert_eq!(ihl.bits.unwrap().shift, 16);
    assert_eq!(ihl.value, Some(Val::Int(5)));
    assert_eq!(node(&ex, "df").kind, "flag");
    assert_eq!(node(&ex, "df").value, Some(Val::Bool(true)));
    assert_eq!(node(&ex, "ecn").value, Some(Val::Int(2)));
}

#[test]
fn unions_registries_and_windows() {
    // A message whose body is chosen by its first byte, inside a window of `size` bytes.
    let a = st(1, "A", vec![f("x", int(2))]);
    let b = st(
        2,
        "B",
        vec![f(
            "text",
            json!({"t": "str", "len": "rest", "encoding": "utf-8"}),
        )],
    );
    let p = prog(st(
        0,
        "Msg",
        vec![
            f("kind", int(1)),
            f("size", int(1)),
            json!({"name": "body", "size": ["name", "size"], "type": {"t": "union", "tag": ["name", "kind"], "cases": [{"tag": {"int": 1}, "type": a}, {"tag": {"int": 2}, "type": b}], "default": {"t": "bytes", "len": "rest"}}}),
            f("end", int(1)),
        ],
    ));
    let ex = check_tree(&p, &[1, 2, 0, 7, 0xff]);
    let body = node(&ex, "body");
    assert_eq!((body.start, body.end), (2, Some(4)));
    assert!(body.has(Mark::Window));
    assert_eq!(body.kind, "A | B | bytes");
    assert!(
        body.notes.contains(&"case 1: A".to_string()),
        "{:?}",
        body.notes
    );
    assert_eq!(body.struct_name.as_deref(), Some("A"));
    assert_eq!(node(&ex, "body.x").value, Some(Val::Int(7)));
    let ex = check_tree(&p, &[2, 3, b'a', b'b', b'c', 0]);
    assert_eq!(node(&ex, "body.text").value, Some(Val::Str("abc".into())));
    let ex = check_tree(&p, &[9, 1, 0xaa, 0]);
    assert!(node(&ex, "body")
        .notes
        .contains(&"default case: bytes".to_string()));
    // A window with unused bytes: the error is unpack's, at the field.
    let buf = [1, 3, 0, 7, 0, 0];
    let ex = run(&p, &buf);
    let want = plain(&p, &buf).unwrap_err();
    let Some(Failure::Decode { error, node: at }) = &ex.failure else {
        panic!()
    };
    assert_eq!(**error, *want);
    assert_eq!(ex.path(*at), "body");
}

#[test]
fn a_registry_names_its_variant() {
    let opt = |id: u32, name: &str, tag: i64, extra: Vec<J>| {
        let mut fields = vec![json!({"name": "kind", "type": int(1), "const": {"int": tag}})];
        fields.extend(extra);
        (tag, st(id, name, fields))
    };
    let (t1, nop) = opt(1, "Nop", 1, vec![]);
    let (t2, mss) = opt(2, "Mss", 2, vec![f("length", int(1)), f("mss", int(2))]);
    let unknown = st(
        3,
        "Unknown",
        vec![
            f("kind", int(1)),
            f("length", int(1)),
            f(
                "data",
                json!({"t": "bytes", "len": {"expr": ["bin", "-", ["name", "length"], ["int", 2]]}}),
            ),
        ],
    );
    let p = prog(st(
        0,
        "Options",
        vec![f(
            "options",
            json!({"t": "array", "count": "rest", "item": {"t": "registry", "field": "kind", "cases": [{"tag": {"int": t1}, "type": nop}, {"tag": {"int": t2}, "type": mss}], "default": unknown}}),
        )],
    ));
    let ex = check_tree(&p, &[1, 2, 4, 5, 0xb4, 9, 3, 0xee]);
    let o = node(&ex, "options[1]");
    assert_eq!(o.struct_name.as_deref(), Some("Mss"));
    assert!(o.notes.contains(&"tag 2: Mss".to_string()), "{:?}", o.notes);
    assert_eq!(node(&ex, "options[1].mss").value, Some(Val::Int(1460)));
    assert!(node(&ex, "options[1].kind").has(Mark::Constant));
    let u = node(&ex, "options[2]");
    assert_eq!(u.struct_name.as_deref(), Some("Unknown"));
    assert_eq!(node(&ex, "options[2].data").notes, vec!["len=length - 2"]);
}

#[test]
fn conditional_padding_alignment_and_absent_fields() {
    let p = prog(
        json!({"t": "struct", "id": 0, "name": "S", "order": "little", "fields": [
            f("flags", int(1)),
            {"type": {"t": "pad", "n": 1}},
            {"name": "extra", "type": int(2), "when": ["bin", "&", ["name", "flags"], ["int", 1]]},
            {"name": "tail", "type": int(4), "align": 4},
        ]}),
    );
    let ex = check_tree(&p, &[1, 0, 0x34, 0x12, 1, 0, 0, 0]);
    let extra = node(&ex, "extra");
    assert!(extra.has(Mark::Conditional) && !extra.has(Mark::Absent));
    assert_eq!(extra.notes, vec!["when=flags & 1"]);
    assert_eq!(extra.value, Some(Val::Int(0x1234)));
    let pads: Vec<_> = ex
        .nodes
        .iter()
        .filter(|n| n.name == Name::Padding)
        .collect();
    assert_eq!(pads.len(), 1);
    assert_eq!((pads[0].start, pads[0].end), (1, Some(2)));
    // Absent: no bytes, at the position where it would be; the alignment pads to 4.
    let ex = check_tree(&p, &[0, 0, 0, 0, 1, 0, 0, 0]);
    let extra = node(&ex, "extra");
    assert!(extra.has(Mark::Absent));
    assert_eq!((extra.start, extra.end), (2, Some(2)));
    assert_eq!(extra.value, Some(Val::None));
    let pads: Vec<_> = ex
        .nodes
        .iter()
        .filter(|n| n.name == Name::Padding)
        .collect();
    assert_eq!(pads.len(), 2);
    assert_eq!((pads[1].start, pads[1].end), (2, Some(4)));
    assert_eq!(node(&ex, "tail").start, 4);
}

#[test]
fn recursion_and_opaque_kinds() {
    // A tree node: a value and a list of children, each a tree node; a MessagePack note.
    let p = prog(
        json!({"t": "struct", "id": 0, "name": "T", "order": "big", "fields": [
            {"name": "v", "type": int(1)},
            {"name": "note", "type": {"t": "msgpack"}},
            {"name": "n", "type": int(1)},
            {"name": "kids", "type": {"t": "array", "count": {"expr": ["name", "n"]}, "item": {"t": "ref", "id": 0}}},
        ]}),
    );
    // T(1, [1,2], kids=[T(2, nil, []), T(3, {"a": 1}, [])])
    let buf = [
        1, 0x92, 1, 2, 2, //
        2, 0xc0, 0, //
        3, 0x81, 0xa1, b'a', 1, 0,
    ];
    let ex = check_tree(&p, &buf);
    let note = node(&ex, "note");
    assert!(note.has(Mark::Opaque));
    assert!(note.children.is_empty());
    assert_eq!(note.kind, "msgpack");
    assert_eq!((note.start, note.end), (1, Some(4)));
    assert_eq!(node(&ex, "kids[1].note").end, Some(13));
    assert_eq!(node(&ex, "kids[1]").struct_name.as_deref(), Some("T"));
    assert_eq!(node(&ex, "kids").kind, "list[T]");
    // An error inside a kind's value is attached to the kind's node.
    let mut bad = buf;
    bad[10] = 0xc1;
    let ex = run(&p, &bad);
    let want = plain(&p, &bad).unwrap_err();
    let Some(Failure::Decode { error, node: at }) = &ex.failure else {
        panic!()
    };
    assert_eq!(**error, *want);
    assert_eq!(ex.path(*at), "kids[1].note");
}

#[test]
fn nodes_show_the_values_the_host_stores() {
    let p = prog(st(0, "S", vec![f("a", int(1)), f("b", int(1))]));
    let mut host = Tree::new(&p);
    host.double = true;
    let ex = explain(&p, host, &[3, 4], 0, true);
    assert_eq!(node(&ex, "a").value, Some(Val::Int(6)));
    assert_eq!(
        ex.nodes[0].value,
        Some(Val::Map(vec![
            ("a".into(), Val::Int(6)),
            ("b".into(), Val::Int(8))
        ]))
    );
}

#[test]
fn a_constant_that_does_not_match_and_a_run_that_does_not_fit() {
    let p = prog(st(
        0,
        "S",
        vec![
            f("a", int(2)),
            json!({"name": "magic", "type": int(2), "const": {"int": 0xcafe}}),
            f("b", int(4)),
        ],
    ));
    let buf = [0, 1, 0xca, 0xff, 0, 0, 0, 0];
    let ex = run(&p, &buf);
    let want = plain(&p, &buf).unwrap_err();
    let Some(Failure::Decode { error, node: at }) = &ex.failure else {
        panic!()
    };
    assert_eq!(**error, *want);
    assert_eq!(ex.path(*at), "magic");
    assert_eq!(ex.nodes[*at].start, 2);
    // Decoding failed before the field's node began: it is made, with its declared kind.
    assert_eq!(ex.nodes[*at].kind, "u16 be");
    assert_eq!(ex.nodes[*at].end, None);
    assert_eq!(node(&ex, "a").value, Some(Val::Int(1)));
    let rest = &ex.nodes[ex.rest.unwrap()];
    assert_eq!((rest.start, rest.end), (2, Some(8)));
    // Short: the run is read as one piece; the field that does not fit is blamed.
    let ex = run(&p, &buf[..5]);
    let want = plain(&p, &buf[..5]).unwrap_err();
    let Some(Failure::Decode { error, node: at }) = &ex.failure else {
        panic!()
    };
    assert_eq!(**error, *want);
    assert_eq!(ex.path(*at), want.path());
}

#[test]
fn every_prefix_and_every_byte_flip_agrees_with_unpack() {
    // The union/window message and the PNG, each cut and corrupted everywhere.
    let p = png();
    let full = png_bytes(&[(b"IHDR", &[7; 13]), (b"tEXt", b"k\0v"), (b"IEND", &[])]);
    let mut cases = Vec::new();
    for i in 0..full.len() {
        cases.push(full[..i].to_vec());
        for x in [0x01u8, 0x80, 0xff] {
            let mut b = full.clone();
            b[i] ^= x;
            cases.push(b);
        }
    }
    for buf in cases {
        let ex = run(&p, &buf);
        match (plain(&p, &buf), &ex.failure) {
            (Ok((v, end)), None) => {
                assert_eq!(end, buf.len());
                assert_eq!(ex.nodes[0].value, Some(v));
            }
            (Ok((_, end)), Some(Failure::Trailing { end: e })) => assert_eq!(end, *e),
            (Err(want), Some(Failure::Decode { error, node })) => {
                assert_eq!(**error, *want);
                assert_eq!(ex.path(*node), want.path());
            }
            (want, got) => panic!("{want:?} vs {got:?}"),
        }
    }
}
