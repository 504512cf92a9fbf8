//! The compiled, immutable program that the pack and unpack VMs run.

use std::sync::Arc;

use crate::expr::{Compiled, Expr, Value};
pub use crate::schema::Encoding;

/// A fixed-size scalar read or written at a known offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    Int {
        width: u8,
        signed: bool,
        big: bool,
    },
    Float {
        width: u8,
        big: bool,
    },
    Bool,
    Bytes(usize),
    Pad(usize),
    /// A bit field: `width` bits at `shift` of a `group`-byte number (big-endian unless
    /// `lsb`). Every field of a group has the group's offset; the first one owns its bytes.
    Bits {
        group: u8,
        shift: u8,
        width: u8,
        signed: bool,
        lsb: bool,
        first: bool,
        boolean: bool,
    },
}

impl Scalar {
    pub fn size(&self) -> usize {
        match *self {
            Scalar::Int { width, .. } | Scalar::Float { width, .. } => width as usize,
            Scalar::Bool => 1,
            Scalar::Bytes(n) | Scalar::Pad(n) => n,
            Scalar::Bits { group, first, .. } => {
                if first {
                    group as usize
                } else {
                    0
                }
            }
        }
    }

    /// The bytes this scalar reads or writes at its offset (a whole group for bit fields).
    pub fn span(&self) -> usize {
        match *self {
            Scalar::Bits { group, .. } => group as usize,
            s => s.size(),
        }
    }

    /// The inclusive range of an integer scalar.
    pub fn int_range(&self) -> Option<(i128, i128)> {
        let (bits, signed) = match *self {
            Scalar::Int { width, signed, .. } => (u32::from(width) * 8, signed),
            Scalar::Bits { width, signed, .. } => (u32::from(width), signed),
            Scalar::Bool => (1, false),
            _ => return None,
        };
        Some(if signed {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        })
    }

    pub fn describe(&self) -> String {
        match *self {
            Scalar::Int { width, signed, .. } => {
                format!("{}{}", if signed { "i" } else { "u" }, u32::from(width) * 8)
            }
            Scalar::Float { width, .. } => format!("f{}", u32::from(width) * 8),
            Scalar::Bool => "bool".into(),
            Scalar::Bytes(n) => format!("{n} bytes"),
            Scalar::Pad(n) => format!("{n} padding bytes"),
            Scalar::Bits { width, signed, .. } => {
                format!("a {}{width}-bit field", if signed { "signed " } else { "" })
            }
        }
    }
}

/// A length or count.
#[derive(Debug, Clone, PartialEq)]
pub enum Len {
    Fixed(u64),
    Expr(Compiled),
    /// Up to the end of the enclosing region.
    Rest,
}

/// A constant that a field must hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Konst {
    Int(i128),
    Bytes(Arc<[u8]>),
}

/// How the value of a derived field is obtained on pack.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    /// The byte length of a later bytes/str field.
    ByteLen(Option<Encoding>),
    /// The item count of a later array.
    Count,
    /// The packed size of a later window; written after it, by back-patching.
    Window,
}

/// This field is computed on pack from a later field (the consumer) whose length, count or
/// window size is `expr`, solved for this field.
#[derive(Debug, Clone, PartialEq)]
pub struct Derive {
    pub consumer: u16,
    pub measure: Measure,
    pub expr: Expr,
}

/// A window-derived field to back-patch after its consumer is packed.
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    pub field: u16,
    pub slot: u16,
    pub scalar: Scalar,
    pub expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Scalar(Scalar),
    Bytes {
        len: Len,
        max: u64,
    },
    Str {
        len: Len,
        enc: Encoding,
        max: u64,
    },
    Cstr {
        max: u64,
        enc: Encoding,
    },
    /// Index into [`Program::structs`].
    Struct(u32),
    Array {
        item: Box<Node>,
        count: Len,
        max: u64,
        item_min: usize,
    },
    Union {
        tag: Compiled,
        cases: Vec<(Value, Node)>,
        default: Option<Box<Node>>,
        /// The case chosen from the fields the tag reads, without evaluating it, for
        /// the tags of the common shapes (see [`crate::pick`]).
        pick: Option<crate::pick::Pick>,
    },
    /// A field kind with a format of its own (see [`crate::kinds`]).
    Kind(crate::kinds::Kind),
    /// LEB128 (zigzag-mapped when signed).
    Varint {
        zigzag: bool,
    },
    /// Subclass dispatch on the scalar at `tag_off` from the start; each case is a struct
    /// (with the index of its tag field, which holds the tag as a constant).
    Registry {
        tag_off: usize,
        tag: Scalar,
        cases: Vec<(Value, Node, u16)>,
        default: Option<Box<Node>>,
    },
}

/// One item of a coalesced run of fixed-size fields.
#[derive(Debug, Clone, PartialEq)]
pub struct RunItem {
    pub off: usize,
    pub scalar: Scalar,
    /// `None` for padding.
    pub field: Option<u16>,
    pub slot: Option<u16>,
    pub konst: Option<Konst>,
    pub derive: Option<Derive>,
    /// This field holds one of the struct's checksums (written after the struct is packed).
    pub sum: bool,
}

/// Adjacent fixed-size fields, checked for bounds once.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub size: usize,
    pub items: Vec<RunItem>,
    /// Every item is a named number without constant or derivation: pack takes a fast path.
    pub plain: bool,
    /// The items that unpack still reads when the sink stores the run's values itself:
    /// those with a slot, a constant or a bool to check.
    pub checked: Vec<Check>,
}

/// An item of a run that unpack reads even when the sink stores the run's values: how to
/// read it, and what to do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// The item's index in [`Run::items`].
    pub item: u32,
    pub off: usize,
    pub peek: Peek,
    pub slot: Option<u16>,
    /// The constant the value must equal (for [`Peek::Num`]).
    pub konst: Option<u64>,
}

/// How a checked item is read: a closed form for the unsigned numbers and bit fields of up
/// to 8 bytes (what headers' lengths and tags are), the general read of the item otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peek {
    /// `(number >> shift) & mask` of the number of up to 8 bytes at the item's offset,
    /// or 0 or 1 when `boolean`: an unsigned integer (shift 0, every bit) or an unsigned
    /// bit field of its group.
    Num {
        read: Width,
        shift: u8,
        mask: u64,
        boolean: bool,
    },
    /// Everything else (signed, floats, bools, bytes, wider groups): the item's own read.
    General,
}

/// The bytes of a [`Peek::Num`] and their order: one match picks both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    One,
    Be2,
    Le2,
    Be4,
    Le4,
    Be8,
    Le8,
    /// Another number of bytes (at most 8), big-endian.
    Be(u8),
    /// Another number of bytes (at most 8), little-endian.
    Le(u8),
}

impl Width {
    /// `n` bytes (at most 8), big-endian unless `lsb`.
    pub fn of(n: u8, lsb: bool) -> Width {
        match (n, lsb) {
            (1, _) => Width::One,
            (2, false) => Width::Be2,
            (2, true) => Width::Le2,
            (4, false) => Width::Be4,
            (4, true) => Width::Le4,
            (8, false) => Width::Be8,
            (8, true) => Width::Le8,
            (n, false) => Width::Be(n),
            (n, true) => Width::Le(n),
        }
    }
}

impl Check {
    /// The check of item `item` of a run.
    pub fn of(item: u32, it: &RunItem) -> Check {
        let konst = match &it.konst {
            None => Ok(None),
            Some(Konst::Int(v)) => u64::try_from(*v).map(Some).map_err(|_| ()),
            Some(Konst::Bytes(_)) => Err(()),
        };
        let peek = match (it.scalar, konst) {
            (_, Err(())) => Peek::General,
            (
                Scalar::Int {
                    width: width @ (1 | 2 | 4 | 8),
                    signed: false,
                    big,
                },
                _,
            ) => Peek::Num {
                read: Width::of(width, !big),
                shift: 0,
                mask: u64::MAX,
                boolean: false,
            },
            (
                Scalar::Bits {
                    group,
                    shift,
                    width,
                    signed: false,
                    lsb,
                    boolean,
                    ..
                },
                _,
            ) if group <= 8 && width < 64 => Peek::Num {
                read: Width::of(group, lsb),
                shift,
                mask: (1u64 << width) - 1,
                boolean,
            },
            _ => Peek::General,
        };
        Check {
            item,
            off: it.off,
            peek,
            slot: it.slot,
            konst: konst.ok().flatten(),
        }
    }
}

/// A field that is not part of a run: variable size, conditional or windowed.
///
/// What most such fields lack (a condition, a window, a derivation) is boxed, so a step
/// stays small: every struct's steps and every copy of a nested struct's program hold them.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldStep {
    pub field: u16,
    pub node: Node,
    pub when: Option<Box<Compiled>>,
    pub window: Option<Box<Compiled>>,
    pub slot: Option<u16>,
    pub konst: Option<Konst>,
    pub derive: Option<Box<Derive>>,
    /// Window-derived fields that this field's packed size determines.
    pub fills: Vec<Fill>,
}

#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // steps live in a Vec built once; boxing would add a hop per field
pub enum Step {
    Run(Run),
    Field(FieldStep),
    /// Zero padding up to a multiple of this many bytes from the start of the struct.
    Align(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructProg {
    /// The frontend's id for this struct (which class or key set to use).
    pub sink_id: u32,
    pub name: Arc<str>,
    /// Named fields, by field index.
    pub fields: Vec<Arc<str>>,
    /// Fields computed on pack when the caller leaves them out.
    pub derived: Vec<bool>,
    pub n_slots: u16,
    pub steps: Vec<Step>,
    pub min_size: usize,
    pub static_size: Option<usize>,
    /// Checksums verified after the struct is read and written after it is packed.
    pub checksums: Vec<Checksum>,
}

/// A checksum field of a struct and what it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Checksum {
    pub field: u16,
    pub scalar: Scalar,
    pub algo: crate::digest::Algo,
    /// The fields covered, in order; `None` for the whole struct.
    pub over: Option<Vec<u16>>,
    pub verify: bool,
}

/// Codec-wide limits for untrusted input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_count: u64,
    pub max_len: u64,
    /// Deepest nesting of structs (recursive types).
    pub max_depth: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub structs: Vec<StructProg>,
    pub root: Node,
    pub limits: Limits,
    pub min_size: usize,
    pub static_size: Option<usize>,
}
