//! Arbitrary bytes into the pure-Rust wire VM. The first byte picks a schema: below 0x80 one
//! of the bundled formats' schemas (fuzz/schemas/*.json, generated from the Python
//! declarations), otherwise a schema built from the next input bytes (structs, integers,
//! bit fields, lengths and counts from earlier fields, windows, unions, conditions, varints,
//! text, MessagePack, DNS names, checksums). The rest is unpacked. Refusals must be typed
//! errors (no panic, hang or host error); accepted input must re-pack, and for canonical
//! schemas (no padding, floats, MessagePack or compressed names) to the very same bytes.
//! The explain sink (crates/explain) runs the same program: its result must be unpack's
//! (the same value, or the same error at the same path), its tree well formed.
#![no_main]

#[path = "wire_host.rs"]
mod wire_host;

use std::sync::OnceLock;

use bytewright_wire::{compile, pack, unpack, Kind, Program, Schema};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value as J};
use wire_host::Host;

/// (name, schema JSON, canonical): what `fuzz/schemas/generate.py` writes.
const BUNDLED: &[(&str, &str, bool)] = &[
    ("png", include_str!("../schemas/png.json"), true),
    ("pcap", include_str!("../schemas/pcap.json"), true),
    (
        "pcap_packet",
        include_str!("../schemas/pcap_packet.json"),
        true,
    ),
    (
        "pcapng_le",
        include_str!("../schemas/pcapng_le.json"),
        false,
    ),
    (
        "pcapng_be",
        include_str!("../schemas/pcapng_be.json"),
        false,
    ),
    ("ethernet", include_str!("../schemas/ethernet.json"), true),
    ("linux_sll", include_str!("../schemas/linux_sll.json"), true),
    ("ipv4", include_str!("../schemas/ipv4.json"), true),
    ("ipv6", include_str!("../schemas/ipv6.json"), true),
    (
        "tcp_options",
        include_str!("../schemas/tcp_options.json"),
        true,
    ),
    ("dns", include_str!("../schemas/dns.json"), false),
    ("msgpack", include_str!("../schemas/msgpack.json"), false),
];

fn bundled() -> &'static [(Program, bool)] {
    static P: OnceLock<Vec<(Program, bool)>> = OnceLock::new();
    P.get_or_init(|| {
        BUNDLED
            .iter()
            .map(|(name, text, canonical)| {
                let schema = Schema::from_json(text).unwrap_or_else(|e| panic!("{name}: {e}"));
                let prog = compile(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
                (prog, *canonical)
            })
            .collect()
    })
}

/// Reads schema choices from the input.
struct Gen<'a> {
    data: &'a [u8],
    pos: usize,
    next_id: u32,
    canonical: bool,
}

impl Gen<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn int_type(&mut self) -> J {
        let b = self.byte();
        let width = [1, 2, 3, 4, 8][usize::from(b % 5)];
        let order = if b & 0x10 != 0 { "little" } else { "big" };
        json!({"t": "int", "width": width, "signed": b & 0x20 != 0, "order": order})
    }

    /// A length or count: fixed, an earlier integer field, or the rest of the region.
    fn len(&mut self, ints: &[String]) -> J {
        let b = self.byte();
        match (b % 3, ints.is_empty()) {
            (0, _) => json!({"fixed": u64::from(b >> 4)}),
            (1, false) => json!({"expr": ["name", ints[usize::from(b >> 2) % ints.len()]]}),
            _ => json!("rest"),
        }
    }

    fn leaf(&mut self, ints: &[String]) -> J {
        let b = self.byte();
        match b % 9 {
            0 => self.int_type(),
            1 => json!({"t": "bytes", "len": self.len(ints)}),
            2 => {
                let enc = ["utf-8", "ascii", "latin-1"][usize::from(b >> 4) % 3];
                json!({"t": "str", "len": self.len(ints), "encoding": enc})
            }
            3 => json!({"t": "varint", "zigzag": b & 0x10 != 0}),
            4 => json!({"t": "cstr", "max": u64::from(b >> 4), "encoding": "ascii"}),
            5 => json!({"t": "bool"}),
            6 => {
                self.canonical = false;
                let width = [2, 4, 8][usize::from(b >> 4) % 3];
                json!({"t": "float", "width": width})
            }
            7 => {
                self.canonical = false;
                json!({"t": "msgpack"})
            }
            _ => {
                self.canonical = false;
                json!({"t": "dnsname", "compress": b & 0x10 != 0})
            }
        }
    }

    fn structure(&mut self, depth: u32) -> J {
        let id = self.next_id;
        self.next_id += 1;
        let n = 1 + usize::from(self.byte() % 6);
        let mut fields: Vec<J> = Vec::new();
        let mut ints: Vec<String> = Vec::new();
        for i in 0..n {
            let name = format!("f{i}");
            let b = self.byte();
            let mut field = match b % 8 {
                0 | 1 => {
                    ints.push(name.clone());
                    json!({"name": name, "type": self.int_type()})
                }
                2 => {
                    // A bit group of one or two bytes.
                    let total = if b & 0x80 != 0 { 16 } else { 8 };
                    let mut left = total;
                    let mut k = 0;
                    while left > 0 {
                        let w = (1 + u32::from(self.byte() % 7)).min(left);
                        let bname = format!("{name}_{k}");
                        ints.push(bname.clone());
                        fields.push(json!({"name": bname, "type": {"t": "bits", "width": w}}));
                        left -= w;
                        k += 1;
                    }
                    continue;
                }
                3 if depth < 3 => {
                    let item = if b & 0x40 != 0 {
                        self.structure(depth + 1)
                    } else {
                        self.int_type()
                    };
                    json!({"name": name, "type": {"t": "array", "item": item, "count": self.len(&ints), "max": 64}})
                }
                4 if depth < 3 => json!({"name": name, "type": self.structure(depth + 1)}),
                5 if !ints.is_empty() && depth < 3 => {
                    let tag = &ints[usize::from(b >> 4) % ints.len()];
                    let a = self.structure(depth + 1);
                    let c = self.leaf(&ints);
                    json!({"name": name, "type": {"t": "union", "tag": ["name", tag],
                        "cases": [{"tag": {"int": 0}, "type": a}, {"tag": {"int": 1}, "type": c}],
                        "default": {"t": "bytes", "len": "rest"}}})
                }
                6 if b & 0x80 != 0 => {
                    self.canonical = false;
                    json!({"name": null, "type": {"t": "pad", "n": u64::from(b >> 4) % 4}})
                }
                6 => {
                    let (algo, width) = [
                        ("crc32", 4),
                        ("adler32", 4),
                        ("crc16-modbus", 2),
                        ("internet", 2),
                    ][usize::from(b >> 4) % 4];
                    json!({"name": name, "type": {"t": "int", "width": width, "signed": false},
                        "checksum": {"algo": algo, "over": null}})
                }
                _ => json!({"name": name, "type": self.leaf(&ints)}),
            };
            let extra = self.byte();
            if extra & 0x03 == 1 && !ints.is_empty() {
                // A window size is back-patched on pack, so nothing else may read its field
                // (the core reports such a schema's pack as "not known yet").
                let w = ints.remove(usize::from(extra >> 2) % ints.len());
                let quoted = format!("[\"name\",\"{w}\"]");
                let read = field.to_string().contains(&quoted)
                    || fields.iter().any(|f| f.to_string().contains(&quoted));
                if !read {
                    field["size"] = json!(["name", w]);
                }
            } else if extra & 0x03 == 2 && !ints.is_empty() {
                let w = &ints[usize::from(extra >> 2) % ints.len()];
                field["when"] = json!(["bin", "&", ["name", w], ["int", 1]]);
            }
            fields.push(field);
        }
        let order = if self.byte() & 1 != 0 {
            "little"
        } else {
            "big"
        };
        json!({"t": "struct", "id": id, "name": format!("S{id}"), "order": order, "fields": fields})
    }
}

/// `explain` over the same program agrees with `unpack`, and its tree nests.
fn check_explain(
    p: &Program,
    data: &[u8],
    want: &Result<(wire_host::Val, usize), Box<bytewright_wire::Error<String>>>,
) {
    use bytewright_explain::{explain, Failure, Mark};
    let ex = explain(p, Host::new(p), data, 0, false);
    match (want, &ex.failure) {
        (Ok((v, end)), None) => {
            assert_eq!(ex.end, Some(*end));
            // Debug text: NaN is itself there.
            let got = ex.nodes[0].value.as_ref().expect("the message has its value");
            assert_eq!(format!("{got:?}"), format!("{v:?}"));
        }
        (Err(e), Some(Failure::Decode { error, node })) => {
            assert_eq!(**error, **e);
            assert!(ex.nodes[*node].has(Mark::Failed));
        }
        (want, got) => panic!("explain disagrees with unpack: {want:?} vs {got:?}"),
    }
    for n in &ex.nodes {
        for &c in &n.children {
            let cn = &ex.nodes[c];
            assert!(cn.start >= n.start && cn.end.unwrap_or(0) <= data.len());
            if let (Some(a), Some(b)) = (n.end, cn.end) {
                assert!(cn.has(Mark::Rest) || b <= a, "a child ends after its parent");
            }
        }
    }
}

fn check(p: &Program, canonical: bool, data: &[u8], schema: &str) {
    let mut h = Host::new(p);
    let got = unpack::unpack(p, &mut h, data, 0);
    check_explain(p, data, &got);
    match got {
        Ok((value, end)) => {
            assert!(end <= data.len());
            let mut out = Vec::new();
            match pack::pack(p, &Host::new(p), &mut out, &value) {
                Ok(()) if canonical => assert!(
                    out == data[..end],
                    "re-packs to other bytes:\n in  {:02x?}\n out {:02x?}\n schema {schema}",
                    &data[..end],
                    out
                ),
                Ok(()) => {}
                Err(e) if canonical => panic!(
                    "accepted input does not re-pack: {}\n value {value:?}\n schema {schema}",
                    e.message()
                ),
                Err(e) => assert!(!matches!(e.kind, Kind::Host(_)), "{}", e.message()),
            }
        }
        Err(e) => {
            assert!(
                !matches!(e.kind, Kind::Host(_)),
                "a host error: {}",
                e.message()
            );
            assert!(e.offset <= data.len(), "offset {} past the input", e.offset);
            let _ = e.message();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel < 0x80 {
        let all = bundled();
        let (p, canonical) = &all[usize::from(sel) % all.len()];
        check(p, *canonical, rest, BUNDLED[usize::from(sel) % all.len()].0);
        return;
    }
    let mut g = Gen {
        data: rest,
        pos: 0,
        next_id: 0,
        canonical: true,
    };
    let root = g.structure(0);
    let body = rest.get(g.pos..).unwrap_or(&[]);
    let text =
        json!({"root": root, "limits": {"max_count": 256, "max_len": 4096, "max_depth": 16}})
            .to_string();
    let Ok(schema) = Schema::from_json(&text) else {
        return;
    };
    if let Ok(p) = compile(&schema) {
        check(&p, g.canonical, body, &text);
    }
});
