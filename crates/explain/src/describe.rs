//! What the program says about each field, in words: declared kinds, marks and notes.

use std::sync::Arc;

use bytewright_wire::expr::{BinOp, Expr, UnOp, Value};
use bytewright_wire::program::{
    Derive, Encoding, Konst, Len, Measure, Node, Program, Scalar, Step, StructProg,
};
use bytewright_wire::show_bytes;

use crate::tree::{Bits, Mark};

/// What a struct's field is, before any byte is read.
#[derive(Debug, Clone)]
pub(crate) struct FieldMeta<'p> {
    pub kind: String,
    /// The value's program node (`None` for fixed-size scalars, which have no inside).
    pub node: Option<&'p Node>,
    pub bits: Option<Bits>,
    pub marks: Vec<Mark>,
    pub notes: Vec<String>,
}

/// The fields of every struct of a program, by struct index and field index.
pub(crate) fn fields_of(p: &Program) -> Vec<Vec<FieldMeta<'_>>> {
    p.structs.iter().map(|sp| struct_fields(p, sp)).collect()
}

fn struct_fields<'p>(p: &'p Program, sp: &'p StructProg) -> Vec<FieldMeta<'p>> {
    let mut out: Vec<FieldMeta<'p>> = sp
        .fields
        .iter()
        .map(|_| FieldMeta {
            kind: String::new(),
            node: None,
            bits: None,
            marks: Vec::new(),
            notes: Vec::new(),
        })
        .collect();
    for step in &sp.steps {
        match step {
            Step::Run(run) => {
                for it in &run.items {
                    let Some(f) = it.field else { continue };
                    let m = &mut out[f as usize];
                    m.kind = describe_scalar(&it.scalar);
                    if let Scalar::Bits {
                        group,
                        shift,
                        width,
                        lsb,
                        ..
                    } = it.scalar
                    {
                        m.bits = Some(Bits {
                            group,
                            shift,
                            width,
                            lsb,
                        });
                    }
                    konst(m, &it.konst);
                    derive(m, it.derive.as_ref(), sp);
                }
            }
            Step::Field(fs) => {
                let m = &mut out[fs.field as usize];
                m.kind = describe_node(p, &fs.node);
                m.node = match fs.node {
                    Node::Scalar(_) => None,
                    _ => Some(&fs.node),
                };
                if let Node::Kind(_) = fs.node {
                    m.marks.push(Mark::Opaque);
                }
                if let Some(w) = &fs.when {
                    m.marks.push(Mark::Conditional);
                    m.notes.push(format!("when={}", show_expr(w)));
                }
                if let Some(w) = &fs.window {
                    m.marks.push(Mark::Window);
                    m.notes.push(format!("size={}", show_expr(w)));
                }
                if let Some(note) = length_note(&fs.node) {
                    m.notes.push(note);
                }
                konst(m, &fs.konst);
                derive(m, fs.derive.as_deref(), sp);
            }
            Step::Align(_) => {}
        }
    }
    for cs in &sp.checksums {
        let m = &mut out[cs.field as usize];
        m.marks.push(Mark::Checksum);
        let algo = cs.algo.name().unwrap_or("crc");
        let over = match &cs.over {
            None => "the struct".to_string(),
            Some(fields) if fields.len() > 4 => format!(
                "{} fields, {} to {}",
                fields.len(),
                sp.fields[fields[0] as usize],
                sp.fields[fields[fields.len() - 1] as usize]
            ),
            Some(fields) => fields
                .iter()
                .map(|&f| sp.fields[f as usize].to_string())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let check = if cs.verify { "" } else { ", not verified" };
        m.notes.push(format!("{algo} over {over}{check}"));
    }
    for (f, d) in sp.derived.iter().enumerate() {
        if *d && !out[f].marks.contains(&Mark::Derived) {
            out[f].marks.push(Mark::Derived);
        }
    }
    out
}

fn konst(m: &mut FieldMeta<'_>, k: &Option<Konst>) {
    if let Some(k) = k {
        m.marks.push(Mark::Constant);
        m.notes.push(match k {
            Konst::Int(i) => format!("= {i}"),
            Konst::Bytes(b) => format!("= {}", show_bytes(b)),
        });
    }
}

fn derive(m: &mut FieldMeta<'_>, d: Option<&Derive>, sp: &StructProg) {
    if let Some(d) = d {
        m.marks.push(Mark::Derived);
        let of = &sp.fields[d.consumer as usize];
        m.notes.push(match d.measure {
            Measure::ByteLen(_) => format!("length of {of}"),
            Measure::Count => format!("count of {of}"),
            Measure::Window => format!("size of {of}"),
        });
    }
}

fn length_note(node: &Node) -> Option<String> {
    let (len, what) = match node {
        Node::Bytes { len, .. } | Node::Str { len, .. } => (len, "len"),
        Node::Array { count, .. } => (count, "count"),
        _ => return None,
    };
    // As the field was declared: `len=length - 8`, `count=REST`.
    match len {
        Len::Expr(e) => Some(format!("{what}={}", show_expr(e))),
        Len::Rest => Some(format!("{what}=REST")),
        Len::Fixed(_) => None,
    }
}

fn describe_scalar(s: &Scalar) -> String {
    match *s {
        Scalar::Int {
            width: 1, signed, ..
        } => (if signed { "i8" } else { "u8" }).into(),
        Scalar::Int { width, signed, big } => format!(
            "{}{} {}",
            if signed { "i" } else { "u" },
            u32::from(width) * 8,
            if big { "be" } else { "le" }
        ),
        Scalar::Float { width, big } => {
            format!(
                "f{} {}",
                u32::from(width) * 8,
                if big { "be" } else { "le" }
            )
        }
        Scalar::Bool => "bool".into(),
        Scalar::Bytes(n) => format!("bytes[{n}]"),
        Scalar::Pad(n) => format!("padding[{n}]"),
        Scalar::Bits {
            width,
            signed,
            boolean,
            ..
        } => {
            if boolean {
                "flag".into()
            } else {
                format!("{}bits[{width}]", if signed { "signed " } else { "" })
            }
        }
    }
}

fn encoding(e: Encoding) -> &'static str {
    match e {
        Encoding::Utf8 => "utf-8",
        Encoding::Ascii => "ascii",
        Encoding::Latin1 => "latin-1",
    }
}

fn struct_name(p: &Program, i: u32) -> Arc<str> {
    p.structs
        .get(i as usize)
        .map(|s| s.name.clone())
        .unwrap_or_else(|| "struct".into())
}

/// A program node's declared kind in a few words: `u16 be`, `bytes[6]`, `str utf-8`,
/// `list[Chunk]`, `Dot1Q | IPv4 | Raw`, `msgpack`.
pub fn describe_node(p: &Program, node: &Node) -> String {
    match node {
        Node::Scalar(s) => describe_scalar(s),
        Node::Bytes {
            len: Len::Fixed(n), ..
        } => format!("bytes[{n}]"),
        Node::Bytes { .. } => "bytes".into(),
        Node::Str {
            len: Len::Fixed(n),
            enc,
            ..
        } => format!("str[{n}] {}", encoding(*enc)),
        Node::Str { enc, .. } => format!("str {}", encoding(*enc)),
        Node::Cstr { enc, .. } => format!("cstr {}", encoding(*enc)),
        Node::Struct(i) => struct_name(p, *i).to_string(),
        Node::Array { item, count, .. } => match count {
            Len::Fixed(n) => format!("list[{}; {n}]", describe_node(p, item)),
            _ => format!("list[{}]", describe_node(p, item)),
        },
        Node::Union { cases, default, .. } => {
            alternatives(p, cases.iter().map(|(_, n)| n), default.as_deref())
        }
        Node::Registry { cases, default, .. } => {
            alternatives(p, cases.iter().map(|(_, n, _)| n), default.as_deref())
        }
        Node::Kind(k) => k.name().into(),
        Node::Varint { zigzag: false } => "varuint".into(),
        Node::Varint { zigzag: true } => "varint".into(),
    }
}

fn alternatives<'a>(
    p: &Program,
    cases: impl Iterator<Item = &'a Node>,
    default: Option<&'a Node>,
) -> String {
    let mut names: Vec<String> = Vec::new();
    for n in cases.chain(default) {
        let d = describe_node(p, n);
        if !names.contains(&d) {
            names.push(d);
        }
    }
    if names.len() > 6 {
        format!("one of {} kinds", names.len())
    } else {
        names.join(" | ")
    }
}

/// The tag a union or registry case stands for, as written in the schema.
pub(crate) fn show_tag(v: &Value) -> String {
    match v {
        Value::Int(i) if *i >= 256 => format!("{i} (0x{i:x})"),
        Value::Int(i) => i.to_string(),
        Value::Bytes(b) => show_bytes(b),
        Value::Absent => "absent".into(),
        Value::Pending => "pending".into(),
    }
}

/// An expression as Python source: `length - 8`, `ihl * 4 - 20`.
pub fn show_expr(e: &Expr) -> String {
    fn prec(e: &Expr) -> u8 {
        match e {
            Expr::Cond(..) => 0,
            Expr::LogicOr(..) => 1,
            Expr::LogicAnd(..) => 2,
            Expr::Un(UnOp::Not, _) => 3,
            Expr::Bin(op, ..) => match op {
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
                BinOp::Or => 5,
                BinOp::Xor => 6,
                BinOp::And => 7,
                BinOp::Shl | BinOp::Shr => 8,
                BinOp::Add | BinOp::Sub => 9,
                BinOp::Mul | BinOp::FloorDiv | BinOp::Mod => 10,
            },
            Expr::Un(..) => 11,
            Expr::Const(_) | Expr::Slot(..) => 12,
        }
    }
    fn sub(e: &Expr, min: u8) -> String {
        let s = show_expr(e);
        if prec(e) < min {
            format!("({s})")
        } else {
            s
        }
    }
    let p = prec(e);
    match e {
        Expr::Const(Value::Int(i)) => i.to_string(),
        Expr::Const(Value::Bytes(b)) => show_bytes(b),
        Expr::Const(_) => "None".into(),
        Expr::Slot(_, name) => name.to_string(),
        Expr::Un(op, a) => {
            let o = match op {
                UnOp::Neg => "-",
                UnOp::Invert => "~",
                UnOp::Not => "not ",
            };
            format!("{o}{}", sub(a, p))
        }
        Expr::Bin(op, a, b) => {
            let o = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::FloorDiv => "//",
                BinOp::Mod => "%",
                BinOp::Shl => "<<",
                BinOp::Shr => ">>",
                BinOp::And => "&",
                BinOp::Or => "|",
                BinOp::Xor => "^",
                BinOp::Eq => "==",
                BinOp::Ne => "!=",
                BinOp::Lt => "<",
                BinOp::Le => "<=",
                BinOp::Gt => ">",
                BinOp::Ge => ">=",
            };
            // Left-associative: the right operand binds tighter.
            format!("{} {o} {}", sub(a, p), sub(b, p + 1))
        }
        Expr::LogicAnd(a, b) => format!("{} and {}", sub(a, p), sub(b, p + 1)),
        Expr::LogicOr(a, b) => format!("{} or {}", sub(a, p), sub(b, p + 1)),
        Expr::Cond(c, a, b) => format!("{} if {} else {}", sub(a, 1), sub(c, 1), sub(b, 0)),
    }
}
