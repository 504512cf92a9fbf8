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
    /// `STRING`: a quoted Python 2 str literal with C escapes (checked by [`crate::text`]).
    StringText(&'a [u8]),
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
            STRING => {
                let line = self.line("STRING")?;
                check(line.len() as u64, limits_str, "STRING")?;
                Op::StringText(line)
            }
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

/// How far a pickle read from a stream extends: what the next opcode still needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// The pickle ends just before this offset (after its `STOP`).
    Stop(usize),
    /// The opcode at `at` needs `n` more bytes than the input holds (a `FRAME` needs its
    /// whole frame).
    Bytes { at: usize, n: u64 },
    /// The opcode at `at` needs the rest of a line.
    Line { at: usize },
    /// The opcode at `at` cannot be read (the reader says why).
    Bad { at: usize },
}

/// How an opcode's argument is laid out.
enum Layout {
    Fixed(usize),
    Lines(usize),
    /// A little-endian length of this many bytes, then that many bytes.
    Counted(usize),
    Frame,
}

fn layout(code: u8) -> Option<Layout> {
    use Layout::*;
    Some(match code {
        MARK | STOP | POP | POP_MARK | DUP | NONE | BINPERSID | REDUCE | APPEND | BUILD | DICT
        | EMPTY_DICT | APPENDS | LIST | EMPTY_LIST | OBJ | SETITEM | TUPLE | EMPTY_TUPLE
        | SETITEMS | NEWOBJ | TUPLE1 | TUPLE2 | TUPLE3 | NEWTRUE | NEWFALSE | EMPTY_SET
        | ADDITEMS | FROZENSET | NEWOBJ_EX | STACK_GLOBAL | MEMOIZE | NEXT_BUFFER
        | READONLY_BUFFER => Fixed(0),
        FLOAT | INT | LONG | PERSID | STRING | UNICODE | GET | PUT => Lines(1),
        GLOBAL | INST => Lines(2),
        BININT1 | BINGET | BINPUT | PROTO | EXT1 => Fixed(1),
        BININT2 | EXT2 => Fixed(2),
        BININT | LONG_BINGET | LONG_BINPUT | EXT4 => Fixed(4),
        BINFLOAT => Fixed(8),
        SHORT_BINSTRING | SHORT_BINUNICODE | SHORT_BINBYTES | LONG1 => Counted(1),
        BINSTRING | BINUNICODE | BINBYTES | LONG4 => Counted(4),
        BINUNICODE8 | BINBYTES8 | BYTEARRAY8 => Counted(8),
        FRAME => Frame,
        _ => return None,
    })
}

/// Scans opcode extents from `pos` (an opcode boundary) without checking anything else,
/// so a stream reader can read exactly one pickle: up to its `STOP` and no further.
pub fn extent(data: &[u8], mut pos: usize) -> Extent {
    loop {
        let at = pos;
        let Some(&code) = data.get(at) else {
            return Extent::Bytes { at, n: 1 };
        };
        let rest = (data.len() - at - 1) as u64;
        let need = |n: u64| Extent::Bytes { at, n: n - rest };
        let len = match layout(code) {
            None => return Extent::Bad { at },
            Some(Layout::Fixed(n)) => n as u64,
            Some(Layout::Lines(k)) => {
                let mut end = at + 1;
                for _ in 0..k {
                    match data[end..].iter().position(|&b| b == b'\n') {
                        Some(i) => end += i + 1,
                        None => return Extent::Line { at },
                    }
                }
                (end - at - 1) as u64
            }
            Some(Layout::Counted(w)) => {
                if rest < w as u64 {
                    return need(w as u64);
                }
                let mut buf = [0u8; 8];
                buf[..w].copy_from_slice(&data[at + 1..at + 1 + w]);
                let n = u64::from_le_bytes(buf);
                // LONG4 and BINSTRING lengths are signed: the reader rejects a negative one.
                if w == 4 && matches!(code, LONG4 | BINSTRING) && n >= 1 << 31 {
                    return Extent::Bad { at };
                }
                (w as u64).saturating_add(n)
            }
            Some(Layout::Frame) => {
                if rest < 8 {
                    return need(8);
                }
                let mut buf = [0u8; 8];
                buf.copy_from_slice(&data[at + 1..at + 9]);
                let n = u64::from_le_bytes(buf);
                // The frame's opcodes are scanned one by one, once all of it is here.
                if n > rest - 8 {
                    return need(8u64.saturating_add(n));
                }
                8
            }
        };
        if len > rest {
            return need(len);
        }
        pos = at + 1 + len as usize;
        if code == STOP {
            return Extent::Stop(pos);
        }
    }
}
