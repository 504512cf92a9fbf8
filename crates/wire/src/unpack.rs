//! The unpack VM: bytes -> values, built directly through a [`Sink`].

use crate::env::{Scratch, Slots};
use crate::error::{At, Error, Kind, Result};
use crate::expr::{Compiled, EvalError, Value};
use crate::host::Sink;
use crate::program::*;
use crate::sums;

/// Decodes one value of the program's root type from `buf[offset..]`.
/// Returns the value and the end offset. Trailing bytes are the caller's business.
pub fn unpack<S: Sink>(
    prog: &Program,
    sink: &mut S,
    buf: &[u8],
    offset: usize,
) -> Result<(S::Value, usize), S::Error> {
    unpack_with(prog, &mut Scratch::new(), sink, buf, offset)
}

/// [`unpack`] with reusable working memory.
pub fn unpack_with<S: Sink>(
    prog: &Program,
    scratch: &mut Scratch,
    sink: &mut S,
    buf: &[u8],
    offset: usize,
) -> Result<(S::Value, usize), S::Error> {
    scratch.reset();
    if offset > buf.len() {
        return Err(Error::invalid(
            format!(
                "offset {offset} is past the end of the {}-byte buffer",
                buf.len()
            ),
            offset,
        ));
    }
    let mut d = Dec {
        p: prog,
        buf,
        pos: offset,
        end: buf.len(),
        at_end: true,
        env: &mut scratch.slots,
        ranges: &mut scratch.ranges,
        depth: 0,
        base: offset,
        sink,
    };
    let v = d.node(&prog.root)?;
    Ok((v, d.pos))
}

/// Checks that `buf` holds exactly one value of `node`, decoded alone (outside any message:
/// what it refers to in enclosing structs is absent).
pub fn check_node(prog: &Program, node: &Node, buf: &[u8]) -> Result<(), std::convert::Infallible> {
    let mut scratch = Scratch::new();
    let mut sink = crate::host::Discard::<true>;
    let mut d = Dec {
        p: prog,
        buf,
        pos: 0,
        end: buf.len(),
        at_end: true,
        env: &mut scratch.slots,
        ranges: &mut scratch.ranges,
        depth: 0,
        base: 0,
        sink: &mut sink,
    };
    d.node(node)?;
    if d.pos != buf.len() {
        return Err(Error::invalid(
            format!("{} bytes after the value ends", buf.len() - d.pos),
            d.pos,
        ));
    }
    Ok(())
}

/// The unpack VM's state; field kinds decode through it (see [`crate::kinds`]).
pub struct Dec<'p, 'b, 's, S: Sink> {
    pub(crate) p: &'p Program,
    pub(crate) buf: &'b [u8],
    pub(crate) pos: usize,
    /// End of the current region (a window, or the buffer).
    pub(crate) end: usize,
    /// Whether `end` is the end of the input, so running short means "incomplete".
    at_end: bool,
    env: &'s mut Slots,
    /// Field ranges of the structs whose checksums are verified (a stack of frames).
    ranges: &'s mut Vec<(usize, usize)>,
    /// Structs (and self-describing arrays and maps) entered and not yet left.
    pub(crate) depth: u32,
    /// Where the outermost value starts (DNS compression pointers count from there).
    pub(crate) base: usize,
    pub(crate) sink: &'s mut S,
}

enum Raw<'b> {
    U(u64),
    I(i64),
    F(f64),
    B(bool),
    Bytes(&'b [u8]),
}

#[inline(always)]
fn read_uint(b: &[u8], width: u8, big: bool) -> u64 {
    match (width, big) {
        (1, _) => u64::from(b[0]),
        (2, true) => u64::from(u16::from_be_bytes([b[0], b[1]])),
        (2, false) => u64::from(u16::from_le_bytes([b[0], b[1]])),
        (4, true) => u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        (4, false) => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        (8, true) => u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
        (8, false) => u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        (w, true) => b[..w as usize]
            .iter()
            .fold(0u64, |a, &x| (a << 8) | u64::from(x)),
        (w, false) => b[..w as usize]
            .iter()
            .rev()
            .fold(0u64, |a, &x| (a << 8) | u64::from(x)),
    }
}

/// The unsigned number of `w` at the start of `b`.
#[inline(always)]
fn read_width(b: &[u8], w: Width) -> u64 {
    match w {
        Width::One => u64::from(b[0]),
        Width::Be2 => u64::from(u16::from_be_bytes(b[..2].try_into().expect("2 bytes"))),
        Width::Le2 => u64::from(u16::from_le_bytes(b[..2].try_into().expect("2 bytes"))),
        Width::Be4 => u64::from(u32::from_be_bytes(b[..4].try_into().expect("4 bytes"))),
        Width::Le4 => u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))),
        Width::Be8 => u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
        Width::Le8 => u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        Width::Be(n) => read_group(b, n, false) as u64,
        Width::Le(n) => read_group(b, n, true) as u64,
    }
}

/// A group of `n` bytes as a number: big-endian, or little-endian when `lsb`.
#[inline]
pub(crate) fn read_group(b: &[u8], n: u8, lsb: bool) -> u128 {
    let b = &b[..n as usize];
    if lsb {
        b.iter().rev().fold(0u128, |a, &x| (a << 8) | u128::from(x))
    } else {
        b.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x))
    }
}

/// IEEE 754 half precision to double (exact).
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    let neg = h & 0x8000 != 0;
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    let v = match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    };
    if neg {
        -v
    } else {
        v
    }
}

#[inline(always)]
fn read_scalar<'b>(s: &Scalar, b: &'b [u8]) -> std::result::Result<Option<Raw<'b>>, String> {
    Ok(Some(match *s {
        Scalar::Int { width, signed, big } => {
            let u = read_uint(b, width, big);
            if signed {
                let shift = 64 - u32::from(width) * 8;
                Raw::I(((u << shift) as i64) >> shift)
            } else {
                Raw::U(u)
            }
        }
        Scalar::Float { width: 2, big } => Raw::F(f16_to_f64(read_uint(b, 2, big) as u16)),
        Scalar::Float { width: 4, big } => {
            let bits = read_uint(b, 4, big) as u32;
            Raw::F(f64::from(f32::from_bits(bits)))
        }
        Scalar::Float { big, .. } => Raw::F(f64::from_bits(read_uint(b, 8, big))),
        Scalar::Bool => match b[0] {
            0 => Raw::B(false),
            1 => Raw::B(true),
            x => return Err(format!("invalid bool byte 0x{x:02x} (expected 0 or 1)")),
        },
        Scalar::Bytes(n) => Raw::Bytes(&b[..n]),
        Scalar::Pad(_) => return Ok(None),
        Scalar::Bits {
            group,
            shift,
            width,
            signed,
            lsb,
            boolean,
            ..
        } => {
            let mask = (1u128 << width) - 1;
            let v = (read_group(b, group, lsb) >> shift) & mask;
            if boolean {
                Raw::B(v != 0)
            } else if signed {
                let s = 128 - u32::from(width);
                Raw::I((((v << s) as i128) >> s) as i64)
            } else {
                Raw::U(v as u64)
            }
        }
    }))
}

fn slot_value(raw: &Raw<'_>) -> Value {
    match raw {
        Raw::U(u) => Value::Int(i128::from(*u)),
        Raw::I(i) => Value::Int(i128::from(*i)),
        Raw::B(b) => Value::Int(i128::from(*b)),
        Raw::Bytes(b) => Value::Bytes((*b).into()),
        Raw::F(_) => Value::Absent,
    }
}

fn konst_matches(k: &Konst, raw: &Raw<'_>) -> bool {
    match (k, raw) {
        (Konst::Int(v), Raw::U(u)) => *v == i128::from(*u),
        (Konst::Int(v), Raw::I(i)) => *v == i128::from(*i),
        (Konst::Int(v), Raw::B(b)) => *v == i128::from(*b),
        (Konst::Bytes(k), Raw::Bytes(b)) => **k == **b,
        _ => false,
    }
}

/// A decoded scalar must equal its field's constant, if it has one.
#[inline(always)]
fn check_konst<E>(k: &Option<Konst>, raw: &Raw<'_>, at: usize) -> Result<(), E> {
    match k {
        Some(k) if !konst_matches(k, raw) => Err(konst_mismatch(k, raw, at)),
        _ => Ok(()),
    }
}

#[cold]
#[inline(never)]
fn konst_mismatch<E>(k: &Konst, raw: &Raw<'_>, at: usize) -> Box<Error<E>> {
    Error::invalid(
        format!(
            "expected the constant {}, found {}",
            show_konst(k),
            show_raw(raw)
        ),
        at,
    )
}

fn show_raw(raw: &Raw<'_>) -> String {
    match raw {
        Raw::U(u) => u.to_string(),
        Raw::I(i) => i.to_string(),
        Raw::F(f) => f.to_string(),
        Raw::B(b) => b.to_string(),
        Raw::Bytes(b) => crate::show_bytes(b),
    }
}

impl<'p, 'b, 's, S: Sink> Dec<'p, 'b, 's, S> {
    #[inline]
    pub(crate) fn host(&self, e: S::Error) -> Box<Error<S::Error>> {
        Error::new(Kind::Host(e), self.pos)
    }

    #[inline]
    pub(crate) fn short(&self, need: usize) -> Box<Error<S::Error>> {
        Error::new(
            Kind::Short {
                need,
                left: self.end - self.pos,
                at_end: self.at_end,
            },
            self.pos,
        )
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'b [u8], S::Error> {
        if n > self.end - self.pos {
            return Err(self.short(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn eval_err(&self, e: EvalError, what: &str) -> Box<Error<S::Error>> {
        Error::invalid(format!("cannot compute the {what}: {e}"), self.pos)
    }

    fn length(&self, len: &Len, max: u64, what: &str) -> Result<usize, S::Error> {
        let n = match len {
            Len::Fixed(n) => *n as i128,
            Len::Rest => return Ok(self.end - self.pos),
            Len::Expr(e) => match e.eval_i64(&*self.env) {
                Some(n) => i128::from(n),
                None => e
                    .eval_int(&*self.env)
                    .map_err(|err| self.eval_err(err, what))?,
            },
        };
        if n < 0 {
            return Err(Error::invalid(
                format!("the {what} is negative ({n})"),
                self.pos,
            ));
        }
        if n > i128::from(max) {
            let left = self.end - self.pos;
            // Past the end as well: say so first, since truncated data is the likelier
            // cause; it stays an error (never "incomplete") because of the limit.
            if what == "length" && n > left as i128 {
                return Err(Error::new(
                    Kind::PastLimit {
                        n,
                        left,
                        max,
                        at_end: self.at_end,
                    },
                    self.pos,
                ));
            }
            return Err(Error::invalid(
                format!("the {what} {n} exceeds the limit {max}"),
                self.pos,
            ));
        }
        Ok(n as usize)
    }

    #[inline(always)]
    fn emit(&mut self, raw: Raw<'b>) -> Result<S::Value, S::Error> {
        let r = match raw {
            Raw::U(u) => self.sink.uint(u),
            Raw::I(i) => self.sink.int(i),
            Raw::F(f) => self.sink.float(f),
            Raw::B(b) => self.sink.bool(b),
            Raw::Bytes(b) => self.sink.bytes(b),
        };
        r.map_err(|e| self.host(e))
    }

    /// Keeps a decoded scalar's value in its slot, for the expressions that refer to it.
    #[inline(always)]
    fn set_slot(&mut self, slot: u16, raw: &Raw<'_>) {
        match *raw {
            Raw::U(u) => self.env.set_int(slot, i128::from(u)),
            Raw::I(i) => self.env.set_int(slot, i128::from(i)),
            Raw::B(b) => self.env.set_int(slot, i128::from(b)),
            _ => self.env.set(slot, slot_value(raw)),
        }
    }

    fn node(&mut self, node: &'p Node) -> Result<S::Value, S::Error> {
        match node {
            Node::Scalar(s) => {
                let at = self.pos;
                let b = self.take(s.size())?;
                match read_scalar(s, b) {
                    Ok(Some(raw)) => self.emit(raw),
                    Ok(None) => unreachable!("padding is never a value node"),
                    Err(m) => Err(Error::invalid(m, at)),
                }
            }
            Node::Bytes { len, max } => {
                let n = self.length(len, *max, "length")?;
                let b = self.take(n)?;
                self.sink.bytes(b).map_err(|e| self.host(e))
            }
            Node::Str { len, enc, max } => {
                let n = self.length(len, *max, "length")?;
                let at = self.pos;
                let b = self.take(n)?;
                self.text(b, *enc, at)
            }
            Node::Cstr { max, enc } => {
                let avail = &self.buf[self.pos..self.end];
                let limit = avail.len().min(
                    usize::try_from(*max)
                        .unwrap_or(usize::MAX)
                        .saturating_add(1),
                );
                match avail[..limit].iter().position(|&c| c == 0) {
                    Some(n) => {
                        let at = self.pos;
                        let b = self.take(n + 1)?;
                        self.text(&b[..n], *enc, at)
                    }
                    None if (limit as u64) > *max => Err(Error::invalid(
                        format!("no NUL terminator within the maximum length of {max} bytes"),
                        self.pos,
                    )),
                    None => Err(self.short(avail.len() + 1)),
                }
            }
            Node::Struct(i) => self.structure(*i),
            Node::Array {
                item,
                count,
                max,
                item_min,
            } => self.array(item, count, *max, *item_min),
            Node::Kind(k) => k.decode(self),
            Node::Varint { zigzag } => {
                let (u, n) = self.varint()?;
                self.pos += n;
                let r = if *zigzag {
                    self.sink.int(((u >> 1) as i64) ^ -((u & 1) as i64))
                } else {
                    self.sink.uint(u)
                };
                r.map_err(|e| self.host(e))
            }
            Node::Registry {
                tag_off,
                tag,
                cases,
                default,
            } => {
                let need = tag_off + tag.span();
                if need > self.end - self.pos {
                    return Err(self.short(need));
                }
                let at = self.pos + tag_off;
                let raw = match read_scalar(tag, &self.buf[at..]) {
                    Ok(Some(raw)) => raw,
                    _ => return Err(Error::invalid("invalid registry tag", at)),
                };
                let t = slot_value(&raw);
                let case = cases.iter().position(|(v, _, _)| *v == t);
                let chosen = case.map(|i| &cases[i].1).or(default.as_deref());
                match chosen {
                    Some(n) => {
                        self.sink.choose(case.unwrap_or(cases.len()), self.pos);
                        self.node(n)
                    }
                    None => Err(Error::invalid(
                        format!("unknown tag {}", show_value(&t)),
                        at,
                    )),
                }
            }
            Node::Union {
                tag,
                cases,
                default,
                pick,
            } => {
                // Most tags are of a shape whose case is chosen from the fields it reads.
                if let Some(i) = pick.as_ref().and_then(|p| p.choose(&*self.env)) {
                    if let Some(n) = cases.get(i).map(|c| &c.1).or(default.as_deref()) {
                        self.sink.choose(i, self.pos);
                        return self.node(n);
                    }
                }
                // Most other tags are small integers: matched without building a `Value`.
                if let Some(t) = tag.eval_i64(&*self.env) {
                    let t = i128::from(t);
                    let case = cases
                        .iter()
                        .position(|(v, _)| matches!(v, Value::Int(x) if *x == t));
                    if let Some(n) = case.map(|i| &cases[i].1).or(default.as_deref()) {
                        self.sink.choose(case.unwrap_or(cases.len()), self.pos);
                        return self.node(n);
                    }
                }
                let t = tag
                    .eval(&*self.env)
                    .map_err(|e| self.eval_err(e, "union tag"))?;
                let case = cases.iter().position(|(v, _)| *v == t);
                match case.map(|i| &cases[i].1).or(default.as_deref()) {
                    Some(n) => {
                        self.sink.choose(case.unwrap_or(cases.len()), self.pos);
                        self.node(n)
                    }
                    None => Err(Error::invalid(
                        format!("unknown union tag {}", show_value(&t)),
                        self.pos,
                    )),
                }
            }
        }
    }

    /// Reads a LEB128 value at the current position: (value, byte length), without consuming.
    fn varint(&self) -> Result<(u64, usize), S::Error> {
        let mut v: u64 = 0;
        for i in 0..10 {
            if self.pos + i >= self.end {
                return Err(self.short(i + 1));
            }
            let b = self.buf[self.pos + i];
            let bits = u64::from(b & 0x7f);
            if i == 9 && b > 1 {
                return Err(Error::invalid("varint overflows 64 bits", self.pos));
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    return Err(Error::invalid(
                        "overlong varint (trailing zero byte)",
                        self.pos,
                    ));
                }
                return Ok((v, i + 1));
            }
        }
        Err(Error::invalid("varint longer than 10 bytes", self.pos))
    }

    pub(crate) fn text(
        &mut self,
        b: &[u8],
        enc: Encoding,
        at: usize,
    ) -> Result<S::Value, S::Error> {
        if !S::KEEPS_VALUES {
            // Validation cannot change where the text ends.
            return self.sink.bytes(b).map_err(|e| self.host(e));
        }
        let r = match enc {
            Encoding::Latin1 => self.sink.latin1(b),
            Encoding::Ascii => match b.iter().position(|&c| c >= 0x80) {
                Some(i) => {
                    return Err(Error::new(
                        Kind::BadText {
                            ascii: true,
                            byte: b[i],
                        },
                        at + i,
                    ))
                }
                // ascii is valid utf-8
                None => self
                    .sink
                    .str(std::str::from_utf8(b).unwrap_or_default(), true),
            },
            Encoding::Utf8 => match std::str::from_utf8(b) {
                Ok(s) => self.sink.str(s, s.is_ascii()),
                Err(e) => {
                    let i = e.valid_up_to();
                    return Err(Error::new(
                        Kind::BadText {
                            ascii: false,
                            byte: b[i],
                        },
                        at + i,
                    ));
                }
            },
        };
        r.map_err(|e| self.host(e))
    }

    fn array(
        &mut self,
        item: &'p Node,
        count: &Len,
        max: u64,
        item_min: usize,
    ) -> Result<S::Value, S::Error> {
        let mut list;
        if let Len::Rest = count {
            list = self.sink.begin_list(0).map_err(|e| self.host(e))?;
            let mut i = 0usize;
            while self.pos < self.end {
                if i as u64 >= max {
                    return Err(Error::invalid(
                        format!("more than {max} items (the count limit)"),
                        self.pos,
                    ));
                }
                let before = self.pos;
                self.sink.enter_item(&mut list, i, before);
                let v = self.node(item).at_index(i)?;
                self.sink.leave_item(&mut list, i, self.pos);
                self.sink.push(&mut list, v).map_err(|e| self.host(e))?;
                if self.pos == before {
                    return Err(Error::invalid(
                        "an array item that reads no bytes cannot fill a region",
                        self.pos,
                    ))
                    .at_index(i);
                }
                i += 1;
            }
        } else {
            let n = self.length(count, max, "count")?;
            let cap = n.min((self.end - self.pos) / item_min.max(1));
            list = self.sink.begin_list(cap).map_err(|e| self.host(e))?;
            // Items of one static size: running short asks for the whole rest of the array,
            // so an incremental reader does not re-parse the message once per item.
            let size = crate::compile::node_static(item, &self.p.structs[..]).filter(|&s| s > 0);
            if let (false, Some(size)) = (S::KEEPS_VALUES, size) {
                // Items of one size: the array's size is known without reading them.
                if self.end - self.pos < n.saturating_mul(size) {
                    return Err(self.short(n.saturating_mul(size)));
                }
                self.pos += n * size;
                return self.sink.end_list(list).map_err(|e| self.host(e));
            }
            for i in 0..n {
                if let Some(size) = size {
                    if self.end - self.pos < size {
                        return Err(self.short((n - i).saturating_mul(size))).at_index(i);
                    }
                }
                let at = self.pos;
                self.sink.enter_item(&mut list, i, at);
                let v = self.node(item).at_index(i)?;
                self.sink.leave_item(&mut list, i, self.pos);
                self.sink.push(&mut list, v).map_err(|e| self.host(e))?;
            }
        }
        self.sink.end_list(list).map_err(|e| self.host(e))
    }

    fn structure(&mut self, index: u32) -> Result<S::Value, S::Error> {
        let p = self.p;
        let sp = &p.structs[index as usize];
        if self.depth >= p.limits.max_depth {
            return Err(Error::invalid(
                format!(
                    "nesting deeper than {} structs (the depth limit)",
                    p.limits.max_depth
                ),
                self.pos,
            ));
        }
        self.depth += 1;
        let start = self.pos;
        // Every slot is written before it is read (`Slots::push_unset`).
        self.env.push_unset(sp.n_slots);
        let mut st = self
            .sink
            .begin_struct(sp.sink_id)
            .map_err(|e| self.host(e))?;
        // A sink that keeps no values leaves checksums to the decode that does. The field
        // ranges of this struct are `self.ranges[r0..]` (nested structs stack theirs above).
        let verify = S::KEEPS_VALUES && sp.checksums.iter().any(|c| c.verify);
        let r0 = self.ranges.len();
        if verify {
            self.ranges.resize(r0 + sp.fields.len(), (0, 0));
        }
        for step in &sp.steps {
            match step {
                Step::Align(n) => {
                    let pad = (n - (self.pos - start) % n) % n;
                    let at = self.pos;
                    self.take(pad)?;
                    if pad > 0 {
                        self.sink.padding(&mut st, at, pad);
                    }
                }
                Step::Run(run) => {
                    let base = self.pos;
                    self.run(run, sp, &mut st)?;
                    if verify {
                        sums::record_run(&mut self.ranges[r0..], run, base);
                    }
                }
                Step::Field(fs) => {
                    let a = self.pos;
                    self.field(fs, &mut st)
                        .at_field(&sp.fields[fs.field as usize])?;
                    if verify {
                        self.ranges[r0 + fs.field as usize] = (a, self.pos);
                    }
                }
            }
        }
        if verify {
            let r = &self.ranges[r0..];
            for cs in sp.checksums.iter().filter(|c| c.verify) {
                let want = sums::compute(cs, self.buf, start, self.pos, r);
                let got = sums::stored(cs, self.buf, r);
                if want != got {
                    let at = r[cs.field as usize].0;
                    let w = cs.algo.output_len();
                    return Err(Error::invalid(
                        format!(
                            "checksum mismatch: stored {}, computed {}",
                            sums::show(&got, w),
                            sums::show(&want, w)
                        ),
                        at,
                    ))
                    .at_field(&sp.fields[cs.field as usize]);
                }
            }
            self.ranges.truncate(r0);
        }
        self.env.pop();
        self.depth -= 1;
        self.sink.end_struct(st).map_err(|e| self.host(e))
    }

    fn run(
        &mut self,
        run: &'p Run,
        sp: &'p StructProg,
        st: &mut S::Struct,
    ) -> Result<(), S::Error> {
        let start = self.pos;
        let b = match self.take(run.size) {
            Ok(b) => b,
            Err(_) => return self.run_short(run, sp, start),
        };
        // A sink that stores the run's values itself leaves the VM the checks and the
        // values later fields refer to.
        let stored = S::KEEPS_VALUES && self.sink.run(st, run, start, b);
        if stored || !S::KEEPS_VALUES {
            // The VM only checks constants and bools and keeps the slots: `run.checked`
            // lists the items that have any of them.
            for c in &run.checked {
                // Finding where a message ends needs only the values later fields refer to.
                if !S::KEEPS_VALUES && c.slot.is_none() {
                    continue;
                }
                let v = match c.peek {
                    Peek::Num {
                        read,
                        shift,
                        mask,
                        boolean,
                    } => {
                        let v = (read_width(&b[c.off..], read) >> shift) & mask;
                        if boolean {
                            u64::from(v != 0)
                        } else {
                            v
                        }
                    }
                    Peek::General => {
                        let it = &run.items[c.item as usize];
                        self.run_item(it, sp, st, start, b, stored)?;
                        continue;
                    }
                };
                if c.konst.is_some_and(|k| k != v) {
                    // The general read says what is wrong.
                    let it = &run.items[c.item as usize];
                    self.run_item(it, sp, st, start, b, stored)?;
                    continue;
                }
                if let Some(slot) = c.slot {
                    self.env.set_int(slot, i128::from(v));
                }
            }
        } else {
            for it in &run.items {
                self.run_item(it, sp, st, start, b, false)?;
            }
        }
        Ok(())
    }

    /// The error of a run that does not fit in what is left from `start`: out of line, so
    /// the run's hot path keeps its registers.
    #[cold]
    #[inline(never)]
    fn run_short(
        &mut self,
        run: &'p Run,
        sp: &'p StructProg,
        start: usize,
    ) -> Result<(), S::Error> {
        let left = self.end - start;
        // A constant that fits and does not match makes the input invalid, not short.
        for it in run
            .items
            .iter()
            .take_while(|it| it.off + it.scalar.size() <= left)
        {
            let (Some(k), Some(f)) = (&it.konst, it.field) else {
                continue;
            };
            let b = &self.buf[start + it.off..];
            if let Ok(Some(raw)) = read_scalar(&it.scalar, b) {
                if !konst_matches(k, &raw) {
                    let msg = format!(
                        "expected the constant {}, found {}",
                        show_konst(k),
                        show_raw(&raw)
                    );
                    return Err(Error::invalid(msg, start + it.off))
                        .at_field(&sp.fields[f as usize]);
                }
            }
        }
        // Blame the first field that does not fit.
        let it = run
            .items
            .iter()
            .find(|it| it.off + it.scalar.span() > left)
            .expect("run exceeds input");
        self.pos = start + it.off;
        let e = self.short(it.scalar.span());
        self.pos = start;
        match it.field {
            Some(f) => Err(e).at_field(&sp.fields[f as usize]),
            None => Err(e),
        }
    }

    /// One item of a run whose bytes `b` start at `start`.
    #[inline(always)]
    fn run_item(
        &mut self,
        it: &'p RunItem,
        sp: &'p StructProg,
        st: &mut S::Struct,
        start: usize,
        b: &'b [u8],
        stored: bool,
    ) -> Result<(), S::Error> {
        // Finding where a message ends needs only the values later fields refer to.
        if !S::KEEPS_VALUES && it.slot.is_none() {
            return Ok(());
        }
        let at = start + it.off;
        let raw = match read_scalar(&it.scalar, &b[it.off..]) {
            Ok(Some(raw)) => raw,
            Ok(None) => {
                self.sink.padding(st, at, it.scalar.size());
                return Ok(());
            }
            Err(m) => {
                return Err(Error::invalid(m, at))
                    .at_field(&sp.fields[it.field.unwrap_or(0) as usize])
            }
        };
        let f = it.field.expect("only padding has no field");
        check_konst(&it.konst, &raw, at).at_field(&sp.fields[f as usize])?;
        if let Some(slot) = it.slot {
            self.set_slot(slot, &raw);
        }
        if stored {
            return Ok(());
        }
        self.sink.enter_field(st, f, at);
        let v = self.emit(raw)?;
        self.sink.leave_field(st, f, at + it.scalar.span());
        self.sink
            .set_field(st, f, v)
            .map_err(|e| self.host(e))
            .at_field(&sp.fields[f as usize])?;
        Ok(())
    }

    fn field(&mut self, fs: &'p FieldStep, st: &mut S::Struct) -> Result<(), S::Error> {
        if let Some(w) = &fs.when {
            let present = w
                .eval_truthy(&*self.env)
                .map_err(|e| self.eval_err(e, "condition"))?;
            if !present {
                if let Some(slot) = fs.slot {
                    self.env.set(slot, Value::Absent);
                }
                return self
                    .sink
                    .absent_field(st, fs.field)
                    .map_err(|e| self.host(e));
            }
        }
        self.sink.enter_field(st, fs.field, self.pos);
        let v = match &fs.window {
            Some(w) => self.window(w, fs)?,
            None => self.value(fs)?,
        };
        self.sink.leave_field(st, fs.field, self.pos);
        self.sink
            .set_field(st, fs.field, v)
            .map_err(|e| self.host(e))
    }

    /// A field's value, checking its constant and storing its slot.
    fn value(&mut self, fs: &'p FieldStep) -> Result<S::Value, S::Error> {
        if let Node::Scalar(s) = &fs.node {
            let at = self.pos;
            let b = self.take(s.size())?;
            let raw = match read_scalar(s, b) {
                Ok(Some(raw)) => raw,
                Ok(None) => unreachable!("padding is always in a run"),
                Err(m) => return Err(Error::invalid(m, at)),
            };
            check_konst(&fs.konst, &raw, at)?;
            if let Some(slot) = fs.slot {
                self.set_slot(slot, &raw);
            }
            return self.emit(raw);
        }
        if let (Node::Varint { zigzag }, Some(slot)) = (&fs.node, fs.slot) {
            let (u, n) = self.varint()?;
            self.pos += n;
            let (v, r) = if *zigzag {
                let i = ((u >> 1) as i64) ^ -((u & 1) as i64);
                (i128::from(i), self.sink.int(i))
            } else {
                (i128::from(u), self.sink.uint(u))
            };
            self.env.set_int(slot, v);
            return r.map_err(|e| self.host(e));
        }
        if let (Node::Bytes { len, max }, None) = (&fs.node, fs.slot) {
            // The commonest variable field, read here rather than through `node`; its
            // length without a call when it is the rest or a closed form within the limit.
            let n = match len {
                Len::Rest => self.end - self.pos,
                Len::Expr(e) => match e.eval_i64(&*self.env) {
                    Some(n) if n >= 0 && n as u64 <= *max => n as usize,
                    _ => self.length(len, *max, "length")?,
                },
                Len::Fixed(_) => self.length(len, *max, "length")?,
            };
            let b = self.take(n)?;
            return self.sink.bytes(b).map_err(|e| self.host(e));
        }
        if let Some(slot) = fs.slot {
            // A variable-length bytes field used as a tag.
            let start = self.pos;
            let v = self.node(&fs.node)?;
            self.env
                .set(slot, Value::Bytes(self.buf[start..self.pos].into()));
            return Ok(v);
        }
        self.node(&fs.node)
    }

    fn window(&mut self, w: &'p Compiled, fs: &'p FieldStep) -> Result<S::Value, S::Error> {
        let n = w
            .eval_int(&*self.env)
            .map_err(|e| self.eval_err(e, "window size"))?;
        if n < 0 {
            return Err(Error::invalid(
                format!("the window size is negative ({n})"),
                self.pos,
            ));
        }
        let left = self.end - self.pos;
        if n > left as i128 {
            let need = usize::try_from(n).unwrap_or(usize::MAX);
            return Err(self.short(need));
        }
        let n = n as usize;
        if !S::KEEPS_VALUES && fs.slot.is_none() {
            // The window's size is the field's size: the decode that keeps values checks
            // what is inside.
            let b = self.take(n)?;
            return self.sink.bytes(b).map_err(|e| self.host(e));
        }
        let (end, at_end) = (self.end, self.at_end);
        self.end = self.pos + n;
        self.at_end = false;
        let r = self.value(fs);
        let unused = self.end - self.pos;
        self.end = end;
        self.at_end = at_end;
        let v = r?;
        if unused != 0 {
            return Err(Error::invalid(
                format!("the {n}-byte window has {unused} unused bytes"),
                self.pos,
            ));
        }
        Ok(v)
    }
}

fn show_konst(k: &Konst) -> String {
    match k {
        Konst::Int(i) => i.to_string(),
        Konst::Bytes(b) => crate::show_bytes(b),
    }
}

pub(crate) fn show_value(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Bytes(b) => crate::show_bytes(b),
        Value::Absent => "absent".into(),
        Value::Pending => "pending".into(),
    }
}
