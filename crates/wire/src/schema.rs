//! The schema description: what a frontend hands to the compiler.
//!
//! It is plain data (JSON via serde), so the core can be driven and tested from Rust alone,
//! and so a compiled codec can be rebuilt from its description in another process.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Byte order of a multi-byte number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    Big,
    Little,
}

/// Text encodings of `str` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Encoding {
    #[serde(rename = "utf-8")]
    Utf8,
    #[serde(rename = "ascii")]
    Ascii,
    #[serde(rename = "latin-1")]
    Latin1,
}

/// Where a length or count comes from.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LenDesc {
    /// A constant.
    Fixed(u64),
    /// An expression over earlier fields (a bare field name is the common case).
    Expr(serde_json::Value),
    /// The rest of the enclosing region (window or buffer).
    Rest,
}

/// A wire type: `{"t": "<name>", ...}`. Its `Deserialize` (at the end of this file) reads the
/// tag, then the variant's fields in the same pass; the derive below is that second step.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(remote = "Self", rename_all = "lowercase")]
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
    #[serde(skip)]
    Kind(crate::kinds::Kind),
}

/// How adjacent bit fields are laid out in their group of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BitOrder {
    /// Network order: the group is a big-endian number, the first field its top bits.
    #[default]
    Msb,
    /// C-compiler order: the group is a little-endian number, the first field its low bits.
    Lsb,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct StructDesc {
    /// Identifies the struct to the frontend's sink and source (e.g. which class to build).
    pub id: u32,
    /// Shared (a reused description is copied by reference count, not byte by byte).
    pub name: Arc<str>,
    #[serde(default)]
    pub order: Option<Order>,
    #[serde(default)]
    pub bitorder: BitOrder,
    /// Pads the struct's end to a multiple of this many bytes.
    #[serde(default)]
    pub align: Option<u64>,
    /// Shared too: a reused struct's fields are copied only when they hold a struct id
    /// that moves (see [`TypeDesc::shift_ids`]).
    pub fields: Arc<Vec<FieldDesc>>,
}

/// What most fields lack (a constant, a condition, a window, a checksum) is boxed: a class
/// keeps its fields' descriptions, so the common field stays small.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct FieldDesc {
    /// `None` for unnamed padding.
    #[serde(default)]
    pub name: Option<Arc<str>>,
    #[serde(rename = "type")]
    pub ty: TypeDesc,
    /// A constant (magic) written on pack and verified on unpack.
    #[serde(default, rename = "const")]
    pub konst: Option<Box<ConstDesc>>,
    /// The field is present only when this predicate over earlier fields holds.
    #[serde(default)]
    pub when: Option<Box<serde_json::Value>>,
    /// The field is confined to a window of exactly this many bytes.
    #[serde(default)]
    pub size: Option<Box<serde_json::Value>>,
    /// Zero padding before the field so it starts at a multiple of this many bytes
    /// from the start of its struct.
    #[serde(default)]
    pub align: Option<u64>,
    /// The field holds a checksum or digest, computed on pack and verified on unpack.
    #[serde(default)]
    pub checksum: Option<Box<ChecksumDesc>>,
}

/// A checksum or digest over named fields of the struct, or over the whole struct; the
/// field's own bytes count as zeros.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum AlgoDesc {
    Name(String),
    Crc(crate::digest::CrcParams),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct CaseDesc {
    pub tag: ConstDesc,
    #[serde(rename = "type")]
    pub ty: TypeDesc,
}

/// Limits for untrusted input.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Schema {
    pub root: TypeDesc,
    #[serde(default)]
    pub limits: LimitsDesc,
}

impl Schema {
    pub fn from_json(text: &str) -> Result<Schema, String> {
        serde_json::from_str(text).map_err(|e| format!("invalid schema description: {e}"))
    }

    /// The JSON text `from_json` reads back as an equal schema (a codec's persisted form).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a schema is plain data")
    }
}

impl TypeDesc {
    /// Whether the type holds a struct id (a struct, or a reference to one).
    pub fn has_ids(&self) -> bool {
        match self {
            TypeDesc::Struct(_) | TypeDesc::Ref { .. } => true,
            TypeDesc::Array { item, .. } => item.has_ids(),
            TypeDesc::Union { cases, default, .. } | TypeDesc::Registry { cases, default, .. } => {
                cases.iter().any(|c| c.ty.has_ids())
                    || default.as_ref().is_some_and(|d| d.has_ids())
            }
            _ => false,
        }
    }

    /// Moves every struct id in the type up by `by` (a struct's description reused at
    /// another place among a schema's structs).
    pub fn shift_ids(&mut self, by: u32) {
        match self {
            TypeDesc::Struct(s) => {
                s.id += by;
                if s.fields.iter().any(|f| f.ty.has_ids()) {
                    for f in Arc::make_mut(&mut s.fields) {
                        f.ty.shift_ids(by);
                    }
                }
            }
            TypeDesc::Array { item, .. } => item.shift_ids(by),
            TypeDesc::Union { cases, default, .. } | TypeDesc::Registry { cases, default, .. } => {
                for c in cases {
                    c.ty.shift_ids(by);
                }
                if let Some(d) = default {
                    d.shift_ids(by);
                }
            }
            TypeDesc::Ref { id } => *id += by,
            _ => {}
        }
    }
}

// Writing a schema (a codec's persisted form): each type as `{"t": "<name>", ...}`, the
// form the reader below takes in one pass.

impl Serialize for TypeDesc {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let tagged = match self {
            TypeDesc::Kind(k) => crate::kinds::Kind::serialize(k, serde_json::value::Serializer),
            _ => TypeDesc::serialize(self, serde_json::value::Serializer),
        }
        .map_err(S::Error::custom)?;
        // {"name": {fields}} (or "name" for a variant without fields) -> {"t": "name", fields}
        let mut out = serde_json::Map::new();
        match tagged {
            serde_json::Value::String(tag) => {
                out.insert("t".into(), serde_json::Value::String(tag));
            }
            serde_json::Value::Object(map) => {
                for (tag, fields) in map {
                    out.insert("t".into(), serde_json::Value::String(tag));
                    match fields {
                        serde_json::Value::Object(fields) => out.extend(fields),
                        // A newtype variant (a struct): its fields are the map's.
                        other => return Err(S::Error::custom(format!("unexpected {other}"))),
                    }
                }
            }
            other => return Err(S::Error::custom(format!("unexpected {other}"))),
        }
        out.serialize(serializer)
    }
}

impl Serialize for ConstDesc {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            ConstDesc::Int(v) => {
                if let Ok(v) = i64::try_from(*v) {
                    map.serialize_entry("int", &v)?;
                } else if let Ok(v) = u64::try_from(*v) {
                    map.serialize_entry("int", &v)?;
                } else {
                    map.serialize_entry("int", &v.to_string())?;
                }
            }
            ConstDesc::Bytes(b) => map.serialize_entry("bytes", b)?,
        }
        map.end()
    }
}

// Reading a type description in one pass. serde's own internally tagged enums (`tag = "t"`)
// copy each map into a buffer before choosing the variant, at every level of nesting: most
// of the cost of building a codec. The frontend writes "t" first, so the tag is read, then
// the rest of the map goes straight to the variant's fields. A map whose "t" comes later
// (hand-written JSON, `serde_json::json!` sorts its keys) is gathered first, as before.

impl<'de> Deserialize<'de> for TypeDesc {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TypeVisitor)
    }
}

use serde::de::{self, IntoDeserializer};

struct TypeVisitor;

impl<'de> de::Visitor<'de> for TypeVisitor {
    type Value = TypeDesc;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a type description {\"t\": ...}")
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<TypeDesc, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Err(de::Error::missing_field("t"));
        };
        if first == "t" {
            let tag: String = map.next_value()?;
            return tagged(tag, map);
        }
        let mut rest = serde_json::Map::new();
        rest.insert(first, map.next_value()?);
        while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
            rest.insert(k, v);
        }
        let tag = match rest.remove("t") {
            Some(serde_json::Value::String(tag)) => tag,
            Some(other) => {
                return Err(de::Error::invalid_type(
                    de::Unexpected::Other(&other.to_string()),
                    &"a type name",
                ))
            }
            None => return Err(de::Error::missing_field("t")),
        };
        let rest = de::value::MapDeserializer::<_, serde_json::Error>::new(rest.into_iter());
        tagged(tag, rest).map_err(de::Error::custom)
    }
}

/// The type named `tag`, from the rest of its map.
fn tagged<'de, A: de::MapAccess<'de>>(tag: String, map: A) -> Result<TypeDesc, A::Error> {
    if crate::kinds::Kind::NAMES.contains(&tag.as_str()) {
        crate::kinds::Kind::deserialize(Tagged { tag, map }).map(TypeDesc::Kind)
    } else {
        TypeDesc::deserialize(Tagged { tag, map })
    }
}

/// A tag and the rest of its map, seen as an externally tagged enum value (what the derives
/// of [`TypeDesc`] and [`crate::kinds::Kind`] read).
struct Tagged<A> {
    tag: String,
    map: A,
}

impl<'de, A: de::MapAccess<'de>> de::Deserializer<'de> for Tagged<A> {
    type Error = A::Error;

    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, A: de::MapAccess<'de>> de::EnumAccess<'de> for Tagged<A> {
    type Error = A::Error;
    type Variant = Fields<A>;

    fn variant_seed<V: de::DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Fields<A>), A::Error> {
        let tag: de::value::StringDeserializer<A::Error> = self.tag.into_deserializer();
        Ok((seed.deserialize(tag)?, Fields(self.map)))
    }
}

/// The entries of a type's map after its tag: the variant's fields.
struct Fields<A>(A);

impl<'de, A: de::MapAccess<'de>> de::VariantAccess<'de> for Fields<A> {
    type Error = A::Error;

    fn unit_variant(mut self) -> Result<(), A::Error> {
        while self
            .0
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(())
    }

    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, A::Error> {
        seed.deserialize(de::value::MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: de::Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("a type description is a map"))
    }

    fn struct_variant<V: de::Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_written_as_json_reads_back_equal() {
        let text = serde_json::json!({"root": {"t": "struct", "id": 0, "name": "A", "order": "little",
            "bitorder": "lsb", "align": 4, "fields": [
            {"name": "n", "type": {"t": "int", "width": 2, "signed": false}},
            {"name": "b", "type": {"t": "bits", "width": 3, "signed": true, "boolean": false}},
            {"name": null, "type": {"t": "pad", "n": 1}},
            {"name": "v", "type": {"t": "varint", "zigzag": true}},
            {"name": "m", "type": {"t": "msgpack"}},
            {"name": "d", "type": {"t": "dnsname", "compress": false}},
            {"name": "big", "type": {"t": "int", "width": 8, "signed": false}, "const": {"int": "18446744073709551615"}},
            {"name": "neg", "type": {"t": "int", "width": 8, "signed": true}, "const": {"int": -5}},
            {"name": "s", "type": {"t": "str", "len": {"expr": ["name", "n"]}, "encoding": "latin-1", "max": 9},
             "when": ["==", ["name", "n"], ["int", 2]], "size": ["int", 4], "align": 2},
            {"name": "c", "type": {"t": "int", "width": 4, "signed": false},
             "checksum": {"algo": "crc32", "over": ["n"], "verify": false}},
            {"name": "arr", "type": {"t": "array", "item": {"t": "bytes", "len": {"fixed": 2}}, "count": "rest"}},
            {"name": "u", "type": {"t": "union", "tag": ["name", "n"], "cases": [
                {"tag": {"bytes": [1, 2]}, "type": {"t": "bool"}}], "default": {"t": "cstr", "max": 3, "encoding": "utf-8"}}},
            {"name": "r", "type": {"t": "registry", "field": "k", "cases": [
                {"tag": {"int": 1}, "type": {"t": "struct", "id": 1, "name": "B", "fields": [
                    {"name": "k", "type": {"t": "int", "width": 1, "signed": false}},
                    {"name": "self", "type": {"t": "ref", "id": 0}}]}}]}}]},
            "limits": {"max_count": 1, "max_len": 2, "max_depth": 3}})
        .to_string();
        let schema = Schema::from_json(&text).unwrap();
        let again = Schema::from_json(&schema.to_json()).unwrap();
        assert_eq!(again, schema);
        let mut shifted = schema.root.clone();
        shifted.shift_ids(3);
        let TypeDesc::Struct(s) = &shifted else {
            panic!()
        };
        assert_eq!(s.id, 3);
    }
}
