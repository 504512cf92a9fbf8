//! One-byte value tags. `docs/format.md` gives the meaning of each.
//!
//! [`FIXED_LEN`], [`int_value`] and [`float_value`] are the one place the fixed-size atoms
//! (small ints, `UINT8`..`INT32`, `FLOAT64`, `FLOAT32`, short strs, `None`, `False`,
//! `True`) are decoded: every lane of the reader and the builder's runs go through them.

/// `0x00..=0x3f`: the int `tag` itself.
pub const SMALL_INT_MAX: u8 = 0x3f;
/// `0x40..=0x5f`: a str of `tag - 0x40` UTF-8 bytes.
pub const SHORT_STR: u8 = 0x40;
pub const SHORT_STR_MAX_LEN: usize = 31;
pub const SHORT_STR_LAST: u8 = SHORT_STR + SHORT_STR_MAX_LEN as u8;
/// `0x60..=0x6f`: a list of `tag - 0x60` items.
pub const SHORT_LIST: u8 = 0x60;
/// `0x70..=0x7f`: a tuple of `tag - 0x70` items.
pub const SHORT_TUPLE: u8 = 0x70;
/// `0x80..=0x8f`: a dict of `tag - 0x80` pairs.
pub const SHORT_DICT: u8 = 0x80;
pub const SHORT_CONTAINER_MAX: usize = 15;

pub const NONE: u8 = 0x90;
pub const FALSE: u8 = 0x91;
pub const TRUE: u8 = 0x92;
pub const ELLIPSIS: u8 = 0x93;
pub const UINT8: u8 = 0x94;
pub const NEG8: u8 = 0x95;
pub const UINT16: u8 = 0x96;
pub const NEG16: u8 = 0x97;
pub const INT32: u8 = 0x98;
pub const BIGINT: u8 = 0x99;
pub const FLOAT64: u8 = 0x9a;
pub const FLOAT32: u8 = 0x9b;
pub const COMPLEX: u8 = 0x9c;
pub const STR: u8 = 0x9d;
pub const STR_SURROGATES: u8 = 0x9e;
pub const BYTES: u8 = 0x9f;
pub const BYTEARRAY: u8 = 0xa0;
pub const LIST: u8 = 0xa1;
pub const TUPLE: u8 = 0xa2;
pub const DICT: u8 = 0xa3;
pub const SET: u8 = 0xa4;
pub const FROZENSET: u8 = 0xa5;
pub const SHARE: u8 = 0xa6;
pub const REF: u8 = 0xa7;
pub const REPLACE: u8 = 0xa8;
pub const RANGE: u8 = 0xa9;
pub const SLICE: u8 = 0xaa;
pub const ORDERED_DICT: u8 = 0xab;
pub const COUNTER: u8 = 0xac;
pub const DEFAULT_DICT: u8 = 0xad;
pub const DEQUE: u8 = 0xae;
pub const STD: u8 = 0xaf;
pub const OBJECT: u8 = 0xb0;
pub const ENUM: u8 = 0xb1;
/// A registered class itself, as a value: a class ref (an entry of no fields).
pub const CLASS: u8 = 0xb2;
/// A value of the fixed builtins table (builtin types, exception classes,
/// `NotImplemented`): varint length, then its ASCII name.
pub const BUILTIN: u8 = 0xb3;
/// A builtin exception instance: its class's name (as `BUILTIN`), then two children: the
/// argument tuple and the state `(attributes, cause, context, suppress_context)`.
pub const EXCEPTION: u8 = 0xb4;
/// An instance of a registered subclass of a builtin type: a class ref (an entry of no
/// fields), a [`base`] code, then the base's items or value, then the state dict.
pub const DERIVED: u8 = 0xb5;
/// Highest defined tag; everything above is reserved and rejected.
pub const LAST: u8 = DERIVED;

/// The builtin base of a `DERIVED` record. The mutable ones (dict, list, set, ordered dict,
/// defaultdict, deque) are followed by an item count and the items, the others by one value
/// (of the base type, or an exception's argument tuple).
pub mod base {
    pub const DICT: u8 = 1;
    pub const LIST: u8 = 2;
    pub const SET: u8 = 3;
    pub const FROZENSET: u8 = 4;
    pub const TUPLE: u8 = 5;
    pub const STR: u8 = 6;
    pub const BYTES: u8 = 7;
    pub const INT: u8 = 8;
    pub const FLOAT: u8 = 9;
    pub const BYTEARRAY: u8 = 10;
    pub const COMPLEX: u8 = 11;
    /// `collections.OrderedDict`.
    pub const ORDERED_DICT: u8 = 12;
    /// `collections.defaultdict`: a factory code byte before the item count (see
    /// [`super::FACTORY_VALUE`]).
    pub const DEFAULT_DICT: u8 = 13;
    /// A builtin exception class: the argument tuple, then a tuple of 4 (state, cause,
    /// context, suppress_context).
    pub const EXCEPTION: u8 = 14;
    /// `collections.deque`: a varint `m` before the item count, the `maxlen` (`None` if
    /// `m` is 0, else `m - 1`), set before the items are added.
    pub const DEQUE: u8 = 15;
    /// The highest code.
    pub const LAST: u8 = DEQUE;

    /// Whether the instance exists before its items (so its items may refer to it).
    pub const fn is_mutable(code: u8) -> bool {
        matches!(
            code,
            DICT | LIST | SET | ORDERED_DICT | DEFAULT_DICT | DEQUE
        )
    }
}

/// The `defaultdict` factory code (of a `DEFAULT_DICT` record, or a `DERIVED` record of
/// base `DEFAULT_DICT`) that says the factory is a value of its own, after the items (a
/// class or a builtin type). Codes below it index the fixed table of docs/format.md.
pub const FACTORY_VALUE: u8 = 0xff;

/// The encoded length (tag included) of a fixed-size atom; 0 for every other tag.
#[inline(always)]
pub const fn fixed_len(tag: u8) -> usize {
    match tag {
        0..=SMALL_INT_MAX | NONE | FALSE | TRUE => 1,
        SHORT_STR..=SHORT_STR_LAST => 1 + (tag - SHORT_STR) as usize,
        UINT8 | NEG8 => 2,
        UINT16 | NEG16 => 3,
        INT32 | FLOAT32 => 5,
        FLOAT64 => 9,
        _ => 0,
    }
}

/// [`fixed_len`] of every tag, for the lanes that skip atoms by table.
pub const FIXED_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut tag = 0;
    while tag < 256 {
        t[tag] = fixed_len(tag as u8) as u8;
        tag += 1;
    }
    t
};

/// Whether `tag` starts a fixed-size int (a small int, `UINT8`..`INT32`) or float.
#[inline(always)]
pub fn is_fixed_number(tag: u8) -> bool {
    tag <= SMALL_INT_MAX || (UINT8..=INT32).contains(&tag) || tag == FLOAT64 || tag == FLOAT32
}

/// The int of the fixed-size int encoding at the front of `enc` (tag first), read as the
/// encoding of `tag` (`SMALL_INT_MAX` stands for every small int, whose value is its tag).
/// `None` when `enc` ends inside the encoding or `tag` is not an int tag.
#[inline(always)]
pub fn int_value(tag: u8, enc: &[u8]) -> Option<i64> {
    Some(match tag {
        0..=SMALL_INT_MAX => i64::from(*enc.first()?),
        UINT8 => i64::from(*enc.get(1)?),
        NEG8 => -1 - i64::from(*enc.get(1)?),
        UINT16 => i64::from(u16::from_le_bytes(enc.get(1..3)?.try_into().ok()?)),
        NEG16 => -1 - i64::from(u16::from_le_bytes(enc.get(1..3)?.try_into().ok()?)),
        INT32 => i64::from(i32::from_le_bytes(enc.get(1..5)?.try_into().ok()?)),
        _ => return None,
    })
}

/// The float of the `FLOAT64` or `FLOAT32` encoding at the front of `enc` (tag first),
/// read as the encoding of `tag`; `None` when `enc` ends inside it or `tag` is neither.
#[inline(always)]
pub fn float_value(tag: u8, enc: &[u8]) -> Option<f64> {
    Some(match tag {
        FLOAT64 => f64::from_le_bytes(enc.get(1..9)?.try_into().ok()?),
        FLOAT32 => f64::from(f32::from_le_bytes(enc.get(1..5)?.try_into().ok()?)),
        _ => return None,
    })
}
