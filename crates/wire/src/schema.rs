//! The schema description: what a frontend hands to the compiler.
//!
//! It is plain data (JSON via serde), so the core can be driven and tested from Rust alone,
//! and so a compiled codec can be rebuilt from its description in another process.

use serde::Deserialize;

/// Byte order of a multi-byte number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Big,
    Little,
}

/// Text encodings of `str` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Encoding {
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "ascii")]
    Ascii,
    #[serde(rename = "latin-1")]
    Latin1,
}

/// Where a length or count comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LenDesc {
    /// A constant.
    Fixed(u64),
    /// An expression over earlier fields (a bare field name is the common case).
    Expr(serde_json::Value),
    /// The rest of the enclosing region (window or buffer).
    Rest,
}

/// A wire type.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
pub enum TypeDesc {
    Int {
        width: u8,
        signed: bool,
        #[serde(default)]
        order: Option<Order>,
    },
    Float {
        width: u8,
        #[serde(default)]
        order: Option<Order>,
    },
    Bool,
    /// A bit field inside a group of adjacent bit fields (see [`StructDesc::bitorder`]).
    Bits {
        width: u8,
        #[serde(default)]
        signed: bool,
        /// Decode as a bool (width 1).
        #[serde(default)]
        boolean: bool,
    },
    /// LEB128; `zigzag` maps signed values as protobuf does.
    Varint {
        #[serde(default)]
        zigzag: bool,
    },
    Bytes {
        len: LenDesc,
        #[serde(default)]
        max: Option<u64>,
    },
    Str {
        len: LenDesc,
        encoding: Encoding,
        #[serde(default)]
        max: Option<u64>,
    },
    /// NUL-terminated text of at most `max` bytes before the NUL.
    Cstr {
        max: u64,
        encoding: Encoding,
    },
    /// Unnamed zero padding.
    Pad {
        n: u64,
    },
    Struct(StructDesc),
    Array {
        item: Box<TypeDesc>,
        count: LenDesc,
        #[serde(default)]
        max: Option<u64>,
    },
    Union {
        tag: serde_json::Value,
        cases: Vec<CaseDesc>,
        #[serde(default)]
        default: Option<Box<TypeDesc>>,
    },
    /// A struct being defined (recursion): refers to the enclosing struct with this `id`.
    Ref {
        id: u32,
    },
    /// Subclass dispatch: every case is a struct that starts with the same fields, `field`
    /// among them at a fixed offset; its value selects the case.
    Registry {
        field: String,
        cases: Vec<CaseDesc>,
        #[serde(default)]
        default: Option<Box<TypeDesc>>,
    },
    /// A field kind with a format of its own (see [`crate::kinds`]).
    #[serde(untagged)]
    Kind(crate::kinds::Kind),
}

/// How adjacent bit fields are laid out in their group of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BitOrder {
    /// Network order: the group is a big-endian number, the first field its top bits.
    #[default]
    Msb,
    /// C-compiler order: the group is a little-endian number, the first field its low bits.
    Lsb,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StructDesc {
    /// Identifies the struct to the frontend's sink and source (e.g. which class to build).
    pub id: u32,
    pub name: String,
    #[serde(default)]
    pub order: Option<Order>,
    #[serde(default)]
    pub bitorder: BitOrder,
    /// Pads the struct's end to a multiple of this many bytes.
    #[serde(default)]
    pub align: Option<u64>,
    pub fields: Vec<FieldDesc>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FieldDesc {
    /// `None` for unnamed padding.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub ty: TypeDesc,
    /// A constant (magic) written on pack and verified on unpack.
    #[serde(default, rename = "const")]
    pub konst: Option<ConstDesc>,
    /// The field is present only when this predicate over earlier fields holds.
    #[serde(default)]
    pub when: Option<serde_json::Value>,
    /// The field is confined to a window of exactly this many bytes.
    #[serde(default)]
    pub size: Option<serde_json::Value>,
    /// Zero padding before the field so it starts at a multiple of this many bytes
    /// from the start of its struct.
    #[serde(default)]
    pub align: Option<u64>,
    /// The field holds a checksum or digest, computed on pack and verified on unpack.
    #[serde(default)]
    pub checksum: Option<ChecksumDesc>,
}

/// A checksum or digest over named fields of the struct, or over the whole struct; the
/// field's own bytes count as zeros.
#[derive(Debug, Clone, Deserialize)]
pub struct ChecksumDesc {
    pub algo: AlgoDesc,
    #[serde(default)]
    pub over: Option<Vec<String>>,
    #[serde(default = "yes")]
    pub verify: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AlgoDesc {
    Name(String),
    Crc(crate::digest::CrcParams),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "ConstRepr")]
pub enum ConstDesc {
    Int(i128),
    Bytes(Vec<u8>),
}

/// The JSON form of a constant. Integers go through `serde_json::Value` because a constant
/// nested in an internally tagged type is buffered by serde, which cannot hold an `i128`;
/// beyond 64 bits the frontend sends decimal digits as a string.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ConstRepr {
    Int(serde_json::Value),
    Bytes(Vec<u8>),
}

impl TryFrom<ConstRepr> for ConstDesc {
    type Error = String;

    fn try_from(r: ConstRepr) -> Result<Self, String> {
        match r {
            ConstRepr::Bytes(b) => Ok(ConstDesc::Bytes(b)),
            ConstRepr::Int(v) => value_to_i128(&v)
                .map(ConstDesc::Int)
                .ok_or_else(|| format!("invalid integer constant {v}")),
        }
    }
}

/// An integer from a JSON number, or from a decimal string when it exceeds 64 bits.
pub fn value_to_i128(v: &serde_json::Value) -> Option<i128> {
    match v {
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct CaseDesc {
    pub tag: ConstDesc,
    #[serde(rename = "type")]
    pub ty: TypeDesc,
}

/// Limits for untrusted input.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct LimitsDesc {
    #[serde(default = "default_max_count")]
    pub max_count: u64,
    #[serde(default = "default_max_len")]
    pub max_len: u64,
    #[serde(default = "default_max_depth")]
    pub max_depth: u32,
}

pub const DEFAULT_MAX_COUNT: u64 = 16 * 1024 * 1024;
pub const DEFAULT_MAX_LEN: u64 = 64 * 1024 * 1024;
pub const DEFAULT_MAX_DEPTH: u32 = 64;
/// The deepest nesting any codec allows, whatever its limits say: keeps the VM's native
/// stack use bounded.
pub const HARD_MAX_DEPTH: u32 = 1000;

fn default_max_depth() -> u32 {
    DEFAULT_MAX_DEPTH
}

fn default_max_count() -> u64 {
    DEFAULT_MAX_COUNT
}
fn default_max_len() -> u64 {
    DEFAULT_MAX_LEN
}

impl Default for LimitsDesc {
    fn default() -> Self {
        LimitsDesc {
            max_count: DEFAULT_MAX_COUNT,
            max_len: DEFAULT_MAX_LEN,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// A whole schema: the root type and the codec-wide limits.
#[derive(Debug, Clone, Deserialize)]
pub struct Schema {
    pub root: TypeDesc,
    #[serde(default)]
    pub limits: LimitsDesc,
}

impl Schema {
    pub fn from_json(text: &str) -> Result<Schema, String> {
        serde_json::from_str(text).map_err(|e| format!("invalid schema description: {e}"))
    }
}
