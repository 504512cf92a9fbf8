//! The pack VM: values read through a [`Source`] -> bytes in an [`Output`].

use crate::digest::DigestValue;
use crate::env::{Scratch, Slots};
use crate::error::{At, Error, Kind, Result};
use crate::expr::{Expr, SlotRef, Value};
use crate::host::{Full, Output, Source, SourceError};
use crate::program::*;
use crate::sums::{self, Ranges};
use crate::unpack::show_value;

/// A derivation as run items hold it (in line) and field steps (boxed): [`Enc::item`] reads
/// it only on its derivation path, so a run item passes a plain reference.
pub(crate) trait DeriveRef {
    fn get(&self) -> Option<&Derive>;
}

impl DeriveRef for Option<Derive> {
    #[inline(always)]
    fn get(&self) -> Option<&Derive> {
        self.as_ref()
    }
}

impl DeriveRef for Option<Box<Derive>> {
    #[inline(always)]
    fn get(&self) -> Option<&Derive> {
        self.as_deref()
    }
}

/// Packs `value` as the program's root type.
pub fn pack<S: Source, O: Output>(
    prog: &Program,
    src: &S,
    out: &mut O,
    value: &S::Value,
) -> Result<(), S::Error> {
    pack_with(prog, &mut Scratch::new(), src, out, value)
}

/// [`pack`] with reusable working memory.
pub fn pack_with<S: Source, O: Output>(
    prog: &Program,
    scratch: &mut Scratch,
    src: &S,
    out: &mut O,
    value: &S::Value,
) -> Result<(), S::Error> {
    scratch.reset();
    let mut e = Enc {
        depth: 0,
        base: out.pos(),
        kinds: &mut scratch.kinds,
        p: prog,
        src,
        out,
        env: &mut scratch.slots,
        pending: &mut scratch.pending,
    };
    e.node(&prog.root, value)
}

/// The pack VM's state; field kinds encode through it (see [`crate::kinds`]).
pub struct Enc<'p, 's, 'o, 'w, S: Source, O: Output> {
    /// Structs entered and not yet left.
    pub(crate) depth: u32,
    /// Where the outermost value starts (DNS compression pointers count from there).
    pub(crate) base: usize,
    /// The field kinds' per-message state.
    pub(crate) kinds: &'w mut crate::kinds::PackState,
    pub(crate) p: &'p Program,
    pub(crate) src: &'s S,
    pub(crate) out: &'o mut O,
    env: &'w mut Slots,
    pending: &'w mut Vec<(usize, usize, Option<i128>)>,
}

#[inline(always)]
fn write_uint(dst: &mut [u8], v: u64, width: u8, big: bool) {
    match (width, big) {
        (1, _) => dst[0] = v as u8,
        (2, true) => dst[..2].copy_from_slice(&(v as u16).to_be_bytes()),
        (2, false) => dst[..2].copy_from_slice(&(v as u16).to_le_bytes()),
        (4, true) => dst[..4].copy_from_slice(&(v as u32).to_be_bytes()),
        (4, false) => dst[..4].copy_from_slice(&(v as u32).to_le_bytes()),
        (8, true) => dst[..8].copy_from_slice(&v.to_be_bytes()),
        (8, false) => dst[..8].copy_from_slice(&v.to_le_bytes()),
        (w, true) => {
            for (i, b) in dst[..w as usize].iter_mut().enumerate() {
                *b = (v >> (8 * (w as usize - 1 - i))) as u8;
            }
        }
        (w, false) => {
            for (i, b) in dst[..w as usize].iter_mut().enumerate() {
                *b = (v >> (8 * i)) as u8;
            }
        }
    }
}

/// Encodes an integer into a scalar slot after a range check (ints, bools and bit fields;
/// a bit field is merged into the bytes its group shares).
#[inline(always)]
pub fn encode_int(dst: &mut [u8], s: &Scalar, v: i128) -> std::result::Result<(), String> {
    match *s {
        Scalar::Int { width, big, signed } => {
            // In range iff the bits above the width are all zero (unsigned) or all equal to
            // the sign bit (signed).
            let bits = u32::from(width) * 8;
            let ok = if signed {
                (v >> (bits - 1)) == 0 || (v >> (bits - 1)) == -1
            } else {
                v >> bits == 0
            };
            if !ok {
                let (lo, hi) = s.int_range().expect("int");
                return Err(format!(
                    "{v} does not fit {} (range {lo}..={hi})",
                    s.describe()
                ));
            }
            write_uint(dst, v as u64, width, big);
            Ok(())
        }
        Scalar::Bool => {
            if !(0..=1).contains(&v) {
                return Err(format!("{v} is not a bool"));
            }
            dst[0] = v as u8;
            Ok(())
        }
        Scalar::Bits {
            group,
            shift,
            width,
            lsb,
            ..
        } => {
            let (lo, hi) = s.int_range().expect("bits");
            if v < lo || v > hi {
                return Err(format!(
                    "{v} does not fit {} (range {lo}..={hi})",
                    s.describe()
                ));
            }
            // Read-modify-write: the other fields of the group share these bytes.
            let mask = ((1u128 << width) - 1) << shift;
            let cur = crate::unpack::read_group(dst, group, lsb);
            let new = (cur & !mask) | (((v as u128) << shift) & mask);
            let n = group as usize;
            for (i, b) in dst[..n].iter_mut().enumerate() {
                let k = if lsb { i } else { n - 1 - i };
                *b = (new >> (8 * k)) as u8;
            }
            Ok(())
        }
        _ => Err(format!("an integer cannot be packed as {}", s.describe())),
    }
}

impl<'p, S: Source, O: Output> Enc<'p, '_, '_, '_, S, O> {
    #[inline]
    pub(crate) fn src_err(&self, e: SourceError<S::Error>) -> Box<Error<S::Error>> {
        match e {
            SourceError::Type(m) => Error::invalid(m, self.out.pos()),
            SourceError::Host(h) => Error::new(Kind::Host(h), self.out.pos()),
        }
    }

    /// Reserves `n` bytes and returns their position; the caller writes all of them.
    #[inline]
    pub(crate) fn grow(&mut self, n: usize) -> Result<usize, S::Error> {
        let at = self.out.pos();
        match self.out.grow(n) {
            Ok(p) => Ok(p),
            Err(Full { need, cap }) => Err(Error::new(Kind::Full { need, cap }, at)),
        }
    }

    #[inline]
    pub(crate) fn put(&mut self, data: &[u8]) -> Result<(), S::Error> {
        let at = self.grow(data.len())?;
        self.out.slot(at, data.len()).copy_from_slice(data);
        Ok(())
    }

    /// Writes a value given as its wire bytes, once they decode as exactly one `node`.
    fn raw(&mut self, node: &'p Node, v: &S::Value) -> Result<(), S::Error> {
        let b = self.src.raw(v).unwrap_or_default();
        if let Err(e) = crate::unpack::check_node(self.p, node, b) {
            return Err(self.invalid(format!(
                "the raw bytes given for this value do not decode as one: {} (at byte {})",
                e.message(),
                e.offset
            )));
        }
        self.put(b)
    }

    pub(crate) fn invalid(&self, msg: impl Into<String>) -> Box<Error<S::Error>> {
        Error::invalid(msg, self.out.pos())
    }

    fn eval_int(&self, e: &Expr, what: &str) -> Result<i128, S::Error> {
        e.eval_int(self.env)
            .map_err(|err| self.invalid(format!("cannot compute the {what}: {err}")))
    }

    /// Checks a measured length or count against its declaration.
    fn check_len(&self, len: &Len, actual: usize, max: u64, what: &str) -> Result<(), S::Error> {
        if actual as u64 > max {
            return Err(self.invalid(format!("the {what} {actual} exceeds the limit {max}")));
        }
        let expected = match len {
            Len::Rest => return Ok(()),
            Len::Fixed(n) => *n as i128,
            Len::Expr(e) => self.eval_int(e, what)?,
        };
        if expected != actual as i128 {
            return Err(self.invalid(format!(
                "the {what} is {actual}, but the schema says {expected}"
            )));
        }
        Ok(())
    }

    /// Writes a scalar read from the source at `at` (already grown); returns its value for a
    /// slot when `want` is set (else `Absent`, so the common case builds nothing).
    #[inline(always)]
    fn scalar_value(
        &mut self,
        s: &Scalar,
        v: &S::Value,
        at: usize,
        want: bool,
    ) -> Result<Value, S::Error> {
        match *s {
            Scalar::Int { .. } | Scalar::Bits { boolean: false, .. } => {
                let i = self.src.int(v).map_err(|e| self.src_err(e))?;
                let m = encode_int(self.out.slot(at, s.span()), s, i);
                m.map_err(|m| self.invalid(m))?;
                Ok(if want { Value::Int(i) } else { Value::Absent })
            }
            Scalar::Bits { boolean: true, .. } => {
                let b = self.src.bool(v).map_err(|e| self.src_err(e))?;
                let m = encode_int(self.out.slot(at, s.span()), s, i128::from(b));
                m.map_err(|m| self.invalid(m))?;
                Ok(if want {
                    Value::Int(i128::from(b))
                } else {
                    Value::Absent
                })
            }
            Scalar::Bool => {
                let b = self.src.bool(v).map_err(|e| self.src_err(e))?;
                self.out.slot(at, 1)[0] = u8::from(b);
                Ok(if want {
                    Value::Int(i128::from(b))
                } else {
                    Value::Absent
                })
            }
            Scalar::Float { width, big } => {
                let f = self.src.float(v).map_err(|e| self.src_err(e))?;
                if width == 2 {
                    let Some(h) = f64_to_f16(f) else {
                        return Err(self.invalid(format!("{f} is too large for f16")));
                    };
                    write_uint(self.out.slot(at, 2), u64::from(h), 2, big);
                } else if width == 4 {
                    let g = f as f32;
                    if g.is_infinite() && f.is_finite() {
                        return Err(self.invalid(format!("{f:?} is too large for f32")));
                    }
                    write_uint(self.out.slot(at, 4), u64::from(g.to_bits()), 4, big);
                } else {
                    write_uint(self.out.slot(at, 8), f.to_bits(), 8, big);
                }
                Ok(Value::Absent)
            }
            Scalar::Bytes(n) => {
                let b = self.src.bytes(v).map_err(|e| self.src_err(e))?;
                if b.len() != n {
                    return Err(
                        self.invalid(format!("expected exactly {n} bytes, got {}", b.len()))
                    );
                }
                self.out.slot(at, n).copy_from_slice(b);
                Ok(if want {
                    Value::Bytes(b.into())
                } else {
                    Value::Absent
                })
            }
            Scalar::Pad(n) => {
                self.out.slot(at, n).fill(0);
                Ok(Value::Absent)
            }
        }
    }

    fn node(&mut self, node: &'p Node, v: &S::Value) -> Result<(), S::Error> {
        match node {
            Node::Scalar(s) => {
                let at = self.grow(s.size())?;
                self.scalar_value(s, v, at, false).map(|_| ())
            }
            Node::Bytes { len, max } => {
                let b = self.src.bytes(v).map_err(|e| self.src_err(e))?;
                self.check_len(len, b.len(), *max, "length")?;
                self.put(b)
            }
            Node::Str { len, enc, max } => {
                let t = self.src.text(v, *enc).map_err(|e| self.src_err(e))?;
                self.check_len(len, t.len(), *max, "length")?;
                self.put(&t)
            }
            Node::Cstr { max, enc } => {
                let t = self.src.text(v, *enc).map_err(|e| self.src_err(e))?;
                if t.contains(&0) {
                    return Err(self.invalid("NUL-terminated text cannot contain a NUL character"));
                }
                if t.len() as u64 > *max {
                    return Err(self.invalid(format!(
                        "{} bytes exceed the maximum length of {max}",
                        t.len()
                    )));
                }
                self.put(&t)?;
                self.put(&[0])
            }
            Node::Struct(_) | Node::Kind(_) if self.src.raw(v).is_some() => self.raw(node, v),
            Node::Struct(i) => self.structure(*i, v),
            Node::Array {
                item, count, max, ..
            } => {
                let n = self.src.len(v).map_err(|e| self.src_err(e))?;
                self.check_len(count, n, *max, "count")?;
                for i in 0..n {
                    let it = self
                        .src
                        .item(v, i)
                        .map_err(|e| self.src_err(e))
                        .at_index(i)?;
                    self.node(item, &it).at_index(i)?;
                }
                Ok(())
            }
            Node::Kind(k) => k.encode(self, v),
            Node::Varint { zigzag } => {
                let i = self.src.int(v).map_err(|e| self.src_err(e))?;
                self.varint(i, *zigzag)
            }
            Node::Registry { cases, default, .. } => {
                let mut chosen = None;
                for (tag, node, fidx) in cases {
                    let Node::Struct(si) = node else { continue };
                    let sp = &self.p.structs[*si as usize];
                    let hit = match self.src.is_struct(v, sp.sink_id) {
                        Some(hit) => hit,
                        // A mapping: its tag field decides.
                        None => match self.src.field(v, sp.sink_id, *fidx) {
                            Ok(Some(t)) => match tag {
                                Value::Int(want) => self.src.int(&t).is_ok_and(|i| i == *want),
                                Value::Bytes(want) => {
                                    self.src.bytes(&t).is_ok_and(|b| b == &**want)
                                }
                                _ => false,
                            },
                            _ => false,
                        },
                    };
                    if hit {
                        chosen = Some(node);
                        break;
                    }
                }
                match chosen.or(default.as_deref()) {
                    Some(n) => self.node(n, v),
                    None => Err(self.invalid("the value matches no registered variant")),
                }
            }
            Node::Union {
                tag,
                cases,
                default,
                ..
            } => {
                let t = tag
                    .eval(self.env)
                    .map_err(|e| self.invalid(format!("cannot compute the union tag: {e}")))?;
                let chosen = cases
                    .iter()
                    .find(|(c, _)| *c == t)
                    .map(|(_, n)| n)
                    .or(default.as_deref());
                let Some(n) = chosen else {
                    return Err(self.invalid(format!("unknown union tag {}", show_value(&t))));
                };
                if let Node::Struct(si) = n {
                    let sp = &self.p.structs[*si as usize];
                    // Wire bytes (a union stored raw in a table) are checked as the chosen
                    // struct when written.
                    if self.src.raw(v).is_none() && self.src.is_struct(v, sp.sink_id) == Some(false)
                    {
                        return Err(self.invalid(format!(
                            "the tag {} selects {}, but the value is not a {}",
                            show_value(&t),
                            sp.name,
                            sp.name
                        )));
                    }
                }
                self.node(n, v)
            }
        }
    }

    fn varint(&mut self, v: i128, zigzag: bool) -> Result<(), S::Error> {
        let u: u64 = if zigzag {
            let Ok(i) = i64::try_from(v) else {
                return Err(self.invalid(format!("{v} does not fit a signed varint (64 bits)")));
            };
            ((i << 1) ^ (i >> 63)) as u64
        } else {
            match u64::try_from(v) {
                Ok(u) => u,
                Err(_) => return Err(self.invalid(format!("{v} does not fit an unsigned varint"))),
            }
        };
        let mut buf = [0u8; 10];
        let mut n = 0;
        let mut x = u;
        loop {
            let b = (x & 0x7f) as u8;
            x >>= 7;
            if x == 0 {
                buf[n] = b;
                n += 1;
                break;
            }
            buf[n] = b | 0x80;
            n += 1;
        }
        self.put(&buf[..n])
    }

    /// The value of a derived field, computed from its consumer (look-ahead measures).
    fn derived(
        &mut self,
        d: &Derive,
        slot: u16,
        obj: &S::Value,
        sp: &'p StructProg,
    ) -> Result<i128, S::Error> {
        let cname = &sp.fields[d.consumer as usize];
        let cv = self
            .src
            .field(obj, sp.sink_id, d.consumer)
            .map_err(|e| self.src_err(e))
            .at_sibling(cname)?;
        let Some(cv) = cv else {
            return Err(self.invalid("missing field")).at_sibling(cname);
        };
        let measured = match &d.measure {
            Measure::ByteLen(None) => self.src.bytes(&cv).map(<[u8]>::len),
            Measure::ByteLen(Some(enc)) => self.src.text(&cv, *enc).map(|t| t.len()),
            Measure::Count => self.src.len(&cv),
            Measure::Window => unreachable!("window sizes are back-patched"),
        }
        .map_err(|e| self.src_err(e))
        .at_sibling(cname)?;
        let target = SlotRef { up: 0, idx: slot };
        match d.expr.solve(target, measured as i128, self.env) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(self.invalid(format!(
                "cannot be derived: no integer value makes the {} of '{cname}' equal {measured}",
                measure_name(&d.measure)
            ))),
            Err(e) => Err(self.invalid(format!("cannot be derived: {e}"))),
        }
    }

    /// Packs one integer-like item of a struct (a run item or a scalar field step).
    #[allow(clippy::too_many_arguments)]
    fn item(
        &mut self,
        s: &Scalar,
        field: u16,
        slot: Option<u16>,
        konst: &Option<Konst>,
        derive: &impl DeriveRef,
        obj: &S::Value,
        sp: &'p StructProg,
        at: usize,
    ) -> Result<(), S::Error> {
        let given = self
            .src
            .field(obj, sp.sink_id, field)
            .map_err(|e| self.src_err(e))?;
        if let Some(k) = konst {
            let kv = match k {
                Konst::Int(i) => Value::Int(*i),
                Konst::Bytes(b) => Value::Bytes(b.clone()),
            };
            if let Some(g) = &given {
                let gv = self.scalar_value(s, g, at, true)?;
                if gv != kv {
                    return Err(Error::invalid(
                        format!(
                            "must be the constant {}, got {}",
                            show_value(&kv),
                            show_value(&gv)
                        ),
                        at,
                    ));
                }
            } else {
                match &kv {
                    Value::Int(i) => {
                        let m = encode_int(self.out.slot(at, s.span()), s, *i);
                        m.map_err(|m| self.invalid(m))?;
                    }
                    Value::Bytes(b) => self.out.slot(at, b.len()).copy_from_slice(b),
                    _ => {}
                }
            }
            if let Some(slot) = slot {
                self.env.set(slot, kv);
            }
            return Ok(());
        }
        if let Some(d) = derive.get() {
            let slot = slot.expect("a derived field has a slot");
            let given = match &given {
                Some(g) => Some(self.src.int(g).map_err(|e| self.src_err(e))?),
                None => None,
            };
            if d.measure == Measure::Window {
                if !matches!(s, Scalar::Bits { .. }) {
                    self.out.slot(at, s.size()).fill(0);
                }
                let abs = self.env.abs(slot);
                self.pending.push((abs, at, given));
                self.env.set(slot, Value::Pending);
                return Ok(());
            }
            let v = self.derived(d, slot, obj, sp)?;
            if let Some(g) = given {
                if g != v {
                    return Err(self.invalid(format!(
                        "is {g}, but '{}' needs {v} (leave it out to have it derived)",
                        sp.fields[d.consumer as usize]
                    )));
                }
            }
            let m = encode_int(self.out.slot(at, s.span()), s, v);
            m.map_err(|m| self.invalid(format!("the derived value {m}")))?;
            self.env.set(slot, Value::Int(v));
            return Ok(());
        }
        let Some(g) = given else {
            return Err(self.invalid("missing field"));
        };
        let val = self.scalar_value(s, &g, at, slot.is_some())?;
        if let Some(slot) = slot {
            self.env.set(slot, val);
        }
        Ok(())
    }

    /// A run of plain numbers: fetch, convert and write each, with nothing else to check.
    #[inline]
    fn plain_run(&mut self, run: &Run, obj: &S::Value, sp: &'p StructProg) -> Result<(), S::Error> {
        let base = self.run_start(run)?;
        for it in &run.items {
            let f = it.field.unwrap_or(0);
            let v = match self.src.field(obj, sp.sink_id, f) {
                Ok(Some(v)) => v,
                Ok(None) => {
                    return Err(self.invalid("missing field")).at_field(&sp.fields[f as usize])
                }
                Err(e) => return Err(self.src_err(e)).at_field(&sp.fields[f as usize]),
            };
            if let (Scalar::Int { width, signed, big }, None) = (it.scalar, it.slot) {
                // The common case, kept lean: an integer nothing else refers to.
                let i = match self.src.int(&v) {
                    Ok(i) => i,
                    Err(e) => return Err(self.src_err(e)).at_field(&sp.fields[f as usize]),
                };
                let bits = u32::from(width) * 8;
                let fits = if signed {
                    (i >> (bits - 1)) == 0 || (i >> (bits - 1)) == -1
                } else {
                    i >> bits == 0
                };
                if fits {
                    write_uint(
                        self.out.slot(base + it.off, width as usize),
                        i as u64,
                        width,
                        big,
                    );
                    continue;
                }
            }
            let val = self.scalar_value(&it.scalar, &v, base + it.off, it.slot.is_some());
            let val = val.at_field(&sp.fields[f as usize])?;
            if let Some(slot) = it.slot {
                self.env.set(slot, val);
            }
        }
        Ok(())
    }

    /// Reserves a run's bytes; bit groups start from zero since their fields are OR-ed in.
    #[inline]
    fn run_start(&mut self, run: &Run) -> Result<usize, S::Error> {
        let base = self.grow(run.size)?;
        if run
            .items
            .iter()
            .any(|it| matches!(it.scalar, Scalar::Bits { .. }))
        {
            self.out.slot(base, run.size).fill(0);
        }
        Ok(base)
    }

    fn structure(&mut self, index: u32, obj: &S::Value) -> Result<(), S::Error> {
        let p = self.p;
        let sp = &p.structs[index as usize];
        if self.depth >= p.limits.max_depth {
            return Err(self.invalid(format!(
                "nesting deeper than {} structs (the depth limit; is the value cyclic?)",
                p.limits.max_depth
            )));
        }
        self.depth += 1;
        let start = self.out.pos();
        self.env.push(sp.n_slots);
        let pending_mark = self.pending.len();
        let mut ranges = (!sp.checksums.is_empty()).then(|| Ranges::new(sp.fields.len()));
        for step in &sp.steps {
            match step {
                Step::Align(n) => {
                    let pad = (n - (self.out.pos() - start) % n) % n;
                    let at = self.grow(pad)?;
                    self.out.slot(at, pad).fill(0);
                }
                Step::Run(run) if run.plain => {
                    let base = self.out.pos();
                    self.plain_run(run, obj, sp)?;
                    if let Some(r) = ranges.as_mut() {
                        r.run(run, base);
                    }
                }
                Step::Run(run) => {
                    let base = self.run_start(run)?;
                    for it in &run.items {
                        let at = base + it.off;
                        match it.field {
                            None => self.out.slot(at, it.scalar.size()).fill(0),
                            // Written once the whole struct is packed.
                            Some(_) if it.sum => self.out.slot(at, it.scalar.span()).fill(0),
                            Some(f) => self
                                .item(&it.scalar, f, it.slot, &it.konst, &it.derive, obj, sp, at)
                                .at_field(&sp.fields[f as usize])?,
                        }
                    }
                    if let Some(r) = ranges.as_mut() {
                        r.run(run, base);
                    }
                }
                Step::Field(fs) => {
                    let a = self.out.pos();
                    self.field(fs, obj, sp)
                        .at_field(&sp.fields[fs.field as usize])?;
                    if let Some(r) = ranges.as_mut() {
                        r.set(fs.field, a, self.out.pos());
                    }
                }
            }
        }
        if let Some(r) = &ranges {
            self.write_sums(sp, obj, start, r)?;
        }
        self.pending.truncate(pending_mark);
        self.env.pop();
        self.depth -= 1;
        Ok(())
    }

    /// Computes and writes each checksum of a packed struct; a supplied value must agree.
    fn write_sums(
        &mut self,
        sp: &'p StructProg,
        obj: &S::Value,
        start: usize,
        r: &Ranges,
    ) -> Result<(), S::Error> {
        let end = self.out.pos();
        for cs in &sp.checksums {
            let value = sums::compute(cs, self.out.slot(0, end), start, end, &r.0);
            let (at, n) = (r.0[cs.field as usize].0, cs.scalar.span());
            let name = &sp.fields[cs.field as usize];
            let given = self
                .src
                .field(obj, sp.sink_id, cs.field)
                .map_err(|e| self.src_err(e))
                .at_field(name)?;
            if let Some(g) = given {
                let same = match &value {
                    DigestValue::Int(v) => self.src.int(&g).is_ok_and(|i| i == i128::from(*v)),
                    DigestValue::Bytes(d) => self.src.bytes(&g).is_ok_and(|b| b == d.as_slice()),
                };
                if !same {
                    return Err(Error::invalid(
                        format!(
                            "does not match the computed checksum {} (leave it out to have it computed)",
                            sums::show(&value, cs.algo.output_len())
                        ),
                        at,
                    ))
                    .at_field(name);
                }
            }
            sums::write(cs, &value, self.out.slot(at, n));
        }
        Ok(())
    }

    fn field(
        &mut self,
        fs: &'p FieldStep,
        obj: &S::Value,
        sp: &'p StructProg,
    ) -> Result<(), S::Error> {
        if let Some(w) = &fs.when {
            let present = w
                .eval(self.env)
                .map_err(|e| self.invalid(format!("cannot compute the condition: {e}")))?
                .truthy();
            if !present {
                if let Some(slot) = fs.slot {
                    self.env.set(slot, Value::Absent);
                }
                return Ok(());
            }
        }
        let start = self.out.pos();
        if let Node::Scalar(s) = &fs.node {
            let at = self.grow(s.size())?;
            self.item(s, fs.field, fs.slot, &fs.konst, &fs.derive, obj, sp, at)?;
        } else if let (Node::Varint { zigzag }, Some(d)) = (&fs.node, &fs.derive) {
            let slot = fs.slot.expect("a derived field has a slot");
            let v = self.derived(d, slot, obj, sp)?;
            let given = self
                .src
                .field(obj, sp.sink_id, fs.field)
                .map_err(|e| self.src_err(e))?;
            if let Some(g) = given {
                let g = self.src.int(&g).map_err(|e| self.src_err(e))?;
                if g != v {
                    return Err(self.invalid(format!(
                        "is {g}, but '{}' needs {v} (leave it out to have it derived)",
                        sp.fields[d.consumer as usize]
                    )));
                }
            }
            self.varint(v, *zigzag)?;
            self.env.set(slot, Value::Int(v));
        } else {
            let v = self
                .src
                .field(obj, sp.sink_id, fs.field)
                .map_err(|e| self.src_err(e))?;
            let Some(v) = v else {
                return Err(self.invalid("missing field"));
            };
            self.node(&fs.node, &v)?;
            if let Some(slot) = fs.slot {
                let val = if let Node::Varint { .. } = fs.node {
                    // A varint in an expression (not a derived length): its value, as unpack.
                    Value::Int(self.src.int(&v).map_err(|e| self.src_err(e))?)
                } else {
                    // A variable-length bytes field used as a tag or in an expression.
                    Value::Bytes(self.src.bytes(&v).map_err(|e| self.src_err(e))?.into())
                };
                self.env.set(slot, val);
            }
        }
        if let Some(w) = &fs.window {
            let size = (self.out.pos() - start) as i128;
            for fill in &fs.fills {
                self.fill(fill, size, sp)?;
            }
            let expected = self.eval_int(w, "window size")?;
            if expected != size {
                return Err(self.invalid(format!(
                    "packed to {size} bytes, but its window is {expected} bytes"
                )));
            }
        }
        Ok(())
    }

    /// Back-patches a window-derived field now that the window's size is known.
    fn fill(&mut self, fill: &Fill, size: i128, sp: &'p StructProg) -> Result<(), S::Error> {
        let abs = self.env.abs(fill.slot);
        let Some(&(_, pos, given)) = self.pending.iter().rev().find(|(a, _, _)| *a == abs) else {
            return Ok(());
        };
        let name = &sp.fields[fill.field as usize];
        self.env.set_abs(abs, Value::Absent);
        let target = SlotRef {
            up: 0,
            idx: fill.slot,
        };
        let v = match fill.expr.solve(target, size, self.env) {
            Ok(Some(v)) => v,
            Ok(None) => {
                return Err(self.invalid(format!("no integer value makes the window {size} bytes")))
                    .at_sibling(name)
            }
            Err(e) => return Err(self.invalid(format!("cannot be derived: {e}"))).at_sibling(name),
        };
        if let Some(g) = given {
            if g != v {
                return Err(Error::invalid(
                    format!("is {g}, but the window packed to a size that needs {v} (leave it out to have it derived)"),
                    pos,
                ))
                .at_sibling(name);
            }
        }
        encode_int(self.out.slot(pos, fill.scalar.span()), &fill.scalar, v)
            .map_err(|m| Error::invalid(format!("the derived value {m}"), pos))
            .at_sibling(name)?;
        self.env.set_abs(abs, Value::Int(v));
        Ok(())
    }
}

fn measure_name(m: &Measure) -> &'static str {
    match m {
        Measure::ByteLen(_) => "length",
        Measure::Count => "count",
        Measure::Window => "size",
    }
}

/// Double to IEEE 754 half precision, rounding half to even; `None` when too large.
pub fn f64_to_f16(x: f64) -> Option<u16> {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        return Some(sign | 0x7e00);
    }
    if x.is_infinite() {
        return Some(sign | 0x7c00);
    }
    let a = x.abs();
    if a == 0.0 {
        return Some(sign);
    }
    // a = f * 2^e with 1 <= f < 2
    let (mut f, mut e) = frexp(a);
    f *= 2.0;
    e -= 1;
    if e >= 16 {
        return None;
    } else if e < -25 {
        f = 0.0;
        e = 0;
    } else if e < -14 {
        f *= 2f64.powi(14 + e);
        e = 0;
    } else {
        e += 15;
        f -= 1.0;
    }
    f *= 1024.0;
    let mut bits = f as u16;
    let rest = f - f64::from(bits);
    if rest > 0.5 || (rest == 0.5 && bits % 2 == 1) {
        bits += 1;
        if bits == 1024 {
            bits = 0;
            e += 1;
            if e == 31 {
                return None;
            }
        }
    }
    Some(sign | ((e as u16) << 10) | bits)
}

/// `x = m * 2^e` with `0.5 <= m < 1`, for finite positive `x`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        let (m, e) = frexp(x * 2f64.powi(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, exp - 1022)
}
