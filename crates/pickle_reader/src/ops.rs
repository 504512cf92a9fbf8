//! The opcode decoder: one bounds-checked pickle opcode at a time, borrowing from the input.

use crate::opcodes::*;
use crate::text;
use crate::{ErrorKind, ReadError};

/// One decoded opcode of protocols 0 to 5. Text arguments are the raw line, without `\n`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op<'a> {
    Mark,
    Stop,
    Pop,
    PopMark,
    Dup,
    /// `FLOAT`: decimal text.
    FloatText(&'a [u8]),
    /// `INT`: decimal text (`00`/`01` mean False/True).
    IntText(&'a [u8]),
    /// `LONG`: decimal text with an optional trailing `L`.
    LongText(&'a [u8]),
    Int(i64),
    /// `LONG1`/`LONG4`: little-endian two's complement.
    LongBytes(&'a [u8]),
    Float(f64),
    None,
    Bool(bool),
    PersId,
    BinPersId,
    Reduce,
    /// `STRING`: a quoted Python 2 str literal (not supported).
    StringText,
    /// `BINSTRING`/`SHORT_BINSTRING`: Python 2 str bytes, read as ASCII like `pickle.loads`.
    String8(&'a [u8]),
    /// `UNICODE`: raw-unicode-escape text.
    UnicodeText(&'a [u8]),
    /// `BINUNICODE*`: UTF-8 with surrogates allowed.
    Unicode(&'a [u8]),
    Bytes(&'a [u8]),
    ByteArray(&'a [u8]),
    Append,
    Appends,
    Build,
    /// `GLOBAL`/`INST`: module and name.
    Global(&'a [u8], &'a [u8]),
    Inst(&'a [u8], &'a [u8]),
    StackGlobal,
    Dict,
    EmptyDict,
    SetItem,
    SetItems,
    /// `GET`/`BINGET`/`LONG_BINGET`.
    Get(u64),
    /// `PUT`/`BINPUT`/`LONG_BINPUT`.
    Put(u64),
    Memoize,
    List,
    EmptyList,
    Obj,
    Tuple,
    EmptyTuple,
    TupleN(u8),
    Proto(u8),
    NewObj,
    NewObjEx,
    Ext(u32),
    EmptySet,
    AddItems,
    FrozenSet,
    Frame(u64),
    NextBuffer,
    ReadOnlyBuffer,
}

/// Pulls opcodes out of a byte slice; every read is checked against the end.
pub struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Offset of the next opcode.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Moves past opcodes read without the decoder (`pos` is within the input).
    pub(crate) fn skip_to(&mut self, pos: usize) {
        debug_assert!(pos <= self.data.len());
        self.pos = pos.min(self.data.len());
    }

    /// Consumes a `MEMOIZE` (`Some(None)`: its key is implicit) or `BINPUT` (`Some(key)`)
    /// if one comes next; `None` otherwise.
    #[inline(always)]
    pub fn next_put(&mut self) -> Option<Option<u8>> {
        match self.data.get(self.pos) {
            Some(&MEMOIZE) => {
                self.pos += 1;
                Some(None)
            }
            Some(&BINPUT) if self.pos + 1 < self.data.len() => {
                let key = self.data[self.pos + 1];
                self.pos += 2;
                Some(Some(key))
            }
            _ => None,
        }
    }

    fn truncated(&self, what: &str) -> ReadError {
        ReadError::malformed(
            self.pos,
            format!("truncated pickle: the stream ends inside {what}"),
        )
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], ReadError> {
        let left = (self.data.len() - self.pos) as u64;
        if n > left {
            return Err(ReadError::malformed(
                self.pos,
                format!("{what} declares {n} bytes but only {left} remain"),
            ));
        }
        let s = &self.data[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    #[inline(always)]
    fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ReadError> {
        if self.data.len() - self.pos < N {
            return Err(self.truncated(what));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.data[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    fn line(&mut self, what: &str) -> Result<&'a [u8], ReadError> {
        let rest = &self.data[self.pos..];
        match rest.iter().position(|&b| b == b'\n') {
            Some(n) => {
                self.pos += n + 1;
                Ok(&rest[..n])
            }
            None => Err(self.truncated(what)),
        }
    }

    /// The next opcode; `Ok(None)` only at the very end of the input.
    #[inline(always)]
    pub fn next_op(
        &mut self,
        limits_str: u64,
        limits_bytes: u64,
    ) -> Result<Option<Op<'a>>, ReadError> {
        let Some(&code) = self.data.get(self.pos) else {
            return Ok(None);
        };
        let at = self.pos;
        self.pos += 1;
        let check = |n: u64, limit: u64, what: &str| -> Result<(), ReadError> {
            if n > limit {
                Err(ReadError::limit(
                    at,
                    format!("{what} of {n} bytes exceeds the limit of {limit}"),
                ))
            } else {
                Ok(())
            }
        };
        let op = match code {
            MARK => Op::Mark,
            STOP => Op::Stop,
            POP => Op::Pop,
            POP_MARK => Op::PopMark,
            DUP => Op::Dup,
            FLOAT => Op::FloatText(self.line("FLOAT")?),
            INT => Op::IntText(self.line("INT")?),
            LONG => Op::LongText(self.line("LONG")?),
            BININT => Op::Int(i64::from(i32::from_le_bytes(self.fixed("BININT")?))),
            BININT1 => Op::Int(i64::from(self.fixed::<1>("BININT1")?[0])),
            BININT2 => Op::Int(i64::from(u16::from_le_bytes(self.fixed("BININT2")?))),
            NONE => Op::None,
            PERSID => Op::PersId,
            BINPERSID => Op::BinPersId,
            REDUCE => Op::Reduce,
            STRING => Op::StringText,
            BINSTRING => {
                let n = u64::from(u32::from_le_bytes(self.fixed("BINSTRING")?));
                check(n, limits_str, "BINSTRING")?;
                Op::String8(self.take(n, "BINSTRING")?)
            }
            SHORT_BINSTRING => {
                let n = u64::from(self.fixed::<1>("SHORT_BINSTRING")?[0]);
                check(n, limits_str, "SHORT_BINSTRING")?;
                Op::String8(self.take(n, "SHORT_BINSTRING")?)
            }
            UNICODE => {
                let line = self.line("UNICODE")?;
                check(line.len() as u64, limits_str, "UNICODE")?;
                Op::UnicodeText(line)
            }
            BINUNICODE => {
                let n = u64::from(u32::from_le_bytes(self.fixed("BINUNICODE")?));
                check(n, limits_str, "BINUNICODE")?;
                Op::Unicode(self.take(n, "BINUNICODE")?)
            }
            SHORT_BINUNICODE => {
                let n = u64::from(self.fixed::<1>("SHORT_BINUNICODE")?[0]);
                check(n, limits_str, "SHORT_BINUNICODE")?;
                Op::Unicode(self.take(n, "SHORT_BINUNICODE")?)
            }
            BINUNICODE8 => {
                let n = u64::from_le_bytes(self.fixed("BINUNICODE8")?);
                check(n, limits_str, "BINUNICODE8")?;
                Op::Unicode(self.take(n, "BINUNICODE8")?)
            }
            BINBYTES => {
                let n = u64::from(u32::from_le_bytes(self.fixed("BINBYTES")?));
                check(n, limits_bytes, "BINBYTES")?;
                Op::Bytes(self.take(n, "BINBYTES")?)
            }
            SHORT_BINBYTES => {
                let n = u64::from(self.fixed::<1>("SHORT_BINBYTES")?[0]);
                check(n, limits_bytes, "SHORT_BINBYTES")?;
                Op::Bytes(self.take(n, "SHORT_BINBYTES")?)
            }
            BINBYTES8 => {
                let n = u64::from_le_bytes(self.fixed("BINBYTES8")?);
                check(n, limits_bytes, "BINBYTES8")?;
                Op::Bytes(self.take(n, "BINBYTES8")?)
            }
            BYTEARRAY8 => {
                let n = u64::from_le_bytes(self.fixed("BYTEARRAY8")?);
                check(n, limits_bytes, "BYTEARRAY8")?;
                Op::ByteArray(self.take(n, "BYTEARRAY8")?)
            }
            APPEND => Op::Append,
            APPENDS => Op::Appends,
            BUILD => Op::Build,
            GLOBAL => Op::Global(self.line("GLOBAL")?, self.line("GLOBAL")?),
            INST => Op::Inst(self.line("INST")?, self.line("INST")?),
            STACK_GLOBAL => Op::StackGlobal,
            DICT => Op::Dict,
            EMPTY_DICT => Op::EmptyDict,
            SETITEM => Op::SetItem,
            SETITEMS => Op::SetItems,
            GET => {
                let line = self.line("GET")?;
                Op::Get(text::memo_key(line, at, "GET")?)
            }
            BINGET => Op::Get(u64::from(self.fixed::<1>("BINGET")?[0])),
            LONG_BINGET => Op::Get(u64::from(u32::from_le_bytes(self.fixed("LONG_BINGET")?))),
            PUT => {
                let line = self.line("PUT")?;
                Op::Put(text::memo_key(line, at, "PUT")?)
            }
            BINPUT => Op::Put(u64::from(self.fixed::<1>("BINPUT")?[0])),
            LONG_BINPUT => Op::Put(u64::from(u32::from_le_bytes(self.fixed("LONG_BINPUT")?))),
            MEMOIZE => Op::Memoize,
            LIST => Op::List,
            EMPTY_LIST => Op::EmptyList,
            OBJ => Op::Obj,
            TUPLE => Op::Tuple,
            EMPTY_TUPLE => Op::EmptyTuple,
            TUPLE1 => Op::TupleN(1),
            TUPLE2 => Op::TupleN(2),
            TUPLE3 => Op::TupleN(3),
            BINFLOAT => Op::Float(f64::from_be_bytes(self.fixed("BINFLOAT")?)),
            PROTO => Op::Proto(self.fixed::<1>("PROTO")?[0]),
            NEWOBJ => Op::NewObj,
            NEWOBJ_EX => Op::NewObjEx,
            EXT1 => Op::Ext(u32::from(self.fixed::<1>("EXT1")?[0])),
            EXT2 => Op::Ext(u32::from(u16::from_le_bytes(self.fixed("EXT2")?))),
            EXT4 => Op::Ext(u32::from_le_bytes(self.fixed("EXT4")?)),
            NEWTRUE => Op::Bool(true),
            NEWFALSE => Op::Bool(false),
            LONG1 => {
                let n = u64::from(self.fixed::<1>("LONG1")?[0]);
                Op::LongBytes(self.take(n, "LONG1")?)
            }
            LONG4 => {
                let n = u64::from(u32::from_le_bytes(self.fixed("LONG4")?));
                Op::LongBytes(self.take(n, "LONG4")?)
            }
            EMPTY_SET => Op::EmptySet,
            ADDITEMS => Op::AddItems,
            FROZENSET => Op::FrozenSet,
            FRAME => {
                let n = u64::from_le_bytes(self.fixed("FRAME")?);
                let left = (self.data.len() - self.pos) as u64;
                if n > i64::MAX as u64 {
                    return Err(ReadError::of(
                        ErrorKind::Overflow,
                        at,
                        format!("FRAME length {n} exceeds the largest size a system has"),
                    ));
                }
                if n > left {
                    return Err(ReadError::malformed(
                        at,
                        format!("FRAME declares {n} bytes but only {left} remain"),
                    ));
                }
                Op::Frame(n)
            }
            NEXT_BUFFER => Op::NextBuffer,
            READONLY_BUFFER => Op::ReadOnlyBuffer,
            other => {
                return Err(ReadError::malformed(
                    at,
                    format!("invalid load key, unknown pickle opcode 0x{other:02x}"),
                ));
            }
        };
        Ok(Some(op))
    }
}

/// ASCII whitespace stripped from both ends (pickle's text arguments tolerate it).
pub fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}
