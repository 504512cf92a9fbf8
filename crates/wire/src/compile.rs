//! Schema description -> program: name resolution, slot assignment, derived fields,
//! coalescing of adjacent fixed fields, static and minimum sizes.

use std::sync::Arc;

use crate::expr::{self, Compiled, Expr, SlotRef, Value};
use crate::program::*;
use crate::schema::{BitOrder, ConstDesc, FieldDesc, LenDesc, Order, Schema, StructDesc, TypeDesc};

pub use crate::error::{closest, SchemaError, SchemaErrorKind};

/// The largest alignment `align=` accepts.
pub const MAX_ALIGN: u64 = 4096;

/// The rule for `align=` (of a struct or of a field): a whole number of bytes from 1 to
/// [`MAX_ALIGN`]. `n` is None when the value is not an integer at all; `shown` is the value as
/// the user wrote it. The Python frontend calls this too, to reject a bad class keyword early.
pub fn check_align(n: Option<i128>, shown: &str) -> Result<u64, String> {
    match n {
        Some(n) if (1..=i128::from(MAX_ALIGN)).contains(&n) => Ok(n as u64),
        _ => Err(format!(
            "align= must be an int between 1 and {MAX_ALIGN}, got {shown}"
        )),
    }
}

const PAD: u16 = u16::MAX;
/// Marks an alignment step while a struct is being built.
const ALIGN: u16 = u16::MAX - 1;

struct Declared {
    /// The field's name, shared with the struct's field names.
    name: Arc<str>,
    field: u16,
    step: usize,
}

struct Frame {
    name: Arc<str>,
    /// Index of the struct being built in [`Compiler::structs`].
    index: u32,
    /// Checksum fields declared so far: (field index, description).
    sums: Vec<(u16, crate::schema::ChecksumDesc)>,
    declared: Vec<Declared>,
    /// Field index held by each slot.
    slots: Vec<u16>,
    steps: Vec<FieldStep>,
}

struct Compiler<'a> {
    /// Compiled programs whose root struct is the description with the given id.
    parts: &'a [(u32, &'a Program)],
    frames: Vec<Frame>,
    structs: Vec<Option<StructProg>>,
    /// (description id, struct index) of structs being compiled, for recursive references.
    in_progress: Vec<(u32, u32)>,
    limits: Limits,
    /// The name `resolve` did not find, for the typed error of the expression holding it.
    unknown_name: Option<String>,
}

/// Where a bit field sits in its group.
#[derive(Clone, Copy)]
struct BitPlace {
    group: u8,
    shift: u8,
    first: bool,
    lsb: bool,
}

/// Compiles a schema into a program.
pub fn compile(schema: &Schema) -> Result<Program, SchemaError> {
    compile_with(schema, &[])
}

/// Compiles a schema some of whose structs are compiled already: each `(id, program)` of
/// `parts` says the struct description with that `id` is the root struct of `program`
/// (compiled from the same description with its ids renumbered from 0, under the same
/// limits), so it costs a copy instead of a second compile. The result is the program
/// `compile` gives.
pub fn compile_with(schema: &Schema, parts: &[(u32, &Program)]) -> Result<Program, SchemaError> {
    let limits = Limits {
        max_count: schema.limits.max_count,
        max_len: schema.limits.max_len,
        max_depth: schema.limits.max_depth.min(crate::schema::HARD_MAX_DEPTH),
    };
    let mut c = Compiler {
        parts,
        frames: Vec::with_capacity(4),
        structs: Vec::with_capacity(4),
        in_progress: Vec::with_capacity(4),
        limits,
        unknown_name: None,
    };
    let root = c.node(&schema.root, Order::Big, "")?;
    let mut structs: Vec<StructProg> = c
        .structs
        .into_iter()
        .map(|s| s.expect("every struct is finished"))
        .collect();
    structs.shrink_to_fit(); // a codec keeps its program
    let min_size = node_min(&root, &structs[..]);
    let static_size = node_static(&root, &structs[..]);
    Ok(Program {
        structs,
        root,
        limits,
        min_size,
        static_size,
    })
}

impl Compiler<'_> {
    /// The dotted path of `field` in the struct being compiled.
    fn path(&self, field: &str) -> String {
        let mut path: Vec<&str> = self.frames.iter().map(|f| &*f.name).collect();
        if !field.is_empty() {
            path.push(field);
        }
        path.join(".")
    }

    fn err(&self, field: &str, msg: impl std::fmt::Display) -> SchemaError {
        SchemaError::at(SchemaErrorKind::Invalid, self.path(field), msg, None, None)
    }

    /// An unknown name (or, with [`SchemaErrorKind::UnknownValue`], value) at `field`, with
    /// the nearest of `known` as the suggestion.
    fn unknown(
        &self,
        kind: SchemaErrorKind,
        field: &str,
        msg: impl std::fmt::Display,
        name: &str,
        known: impl IntoIterator<Item = String>,
    ) -> SchemaError {
        let suggestion = closest(name, known);
        SchemaError::at(
            kind,
            self.path(field),
            msg,
            Some(name.to_string()),
            suggestion,
        )
    }

    fn resolve(&mut self, name: &str) -> Result<SlotRef, String> {
        let depth = self.frames.len();
        for up in 0..depth {
            let frame = &mut self.frames[depth - 1 - up];
            let Some(d) = frame.declared.iter().rev().find(|d| &*d.name == name) else {
                continue;
            };
            let step = &mut frame.steps[d.step];
            match &step.node {
                Node::Scalar(
                    Scalar::Int { .. } | Scalar::Bool | Scalar::Bytes(_) | Scalar::Bits { .. },
                )
                | Node::Bytes { .. }
                | Node::Varint { .. } => {}
                _ => return Err(format!("field '{name}' cannot be used in an expression: only integer, bool and bytes fields can")),
            }
            let slot = match step.slot {
                Some(s) => s,
                None => {
                    let s = u16::try_from(frame.slots.len())
                        .map_err(|_| "too many referenced fields".to_string())?;
                    frame.slots.push(d.field);
                    step.slot = Some(s);
                    s
                }
            };
            return Ok(SlotRef {
                up: up as u16,
                idx: slot,
            });
        }
        // The expression parser passes errors on as text: the name is kept aside for
        // `expr` to build the typed error.
        self.unknown_name = Some(name.to_string());
        Err(format!(
            "unknown field '{name}' in expression (expressions may use earlier fields of this struct or of an enclosing struct)"
        ))
    }

    fn expr(&mut self, field: &str, v: &serde_json::Value) -> Result<Expr, SchemaError> {
        self.unknown_name = None;
        let mut resolve = |n: &str| self.resolve(n);
        let r = expr::parse(v, &mut resolve);
        r.map_err(|m| match self.unknown_name.take() {
            Some(name) => {
                let known: Vec<String> = self
                    .frames
                    .iter()
                    .flat_map(|f| f.declared.iter().map(|d| d.name.to_string()))
                    .collect();
                self.unknown(SchemaErrorKind::UnknownName, field, m, &name, known)
            }
            None => self.err(field, m),
        })
    }

    fn len(&mut self, field: &str, d: &LenDesc) -> Result<Len, SchemaError> {
        Ok(match d {
            LenDesc::Fixed(n) => Len::Fixed(*n),
            LenDesc::Rest => Len::Rest,
            LenDesc::Expr(v) => match self.expr(field, v)? {
                Expr::Const(Value::Int(n)) => Len::Fixed(
                    u64::try_from(n)
                        .map_err(|_| self.err(field, "a length must not be negative"))?,
                ),
                e => Len::Expr(e.into()),
            },
        })
    }

    fn node(&mut self, ty: &TypeDesc, order: Order, field: &str) -> Result<Node, SchemaError> {
        let big = |o: Option<Order>| o.unwrap_or(order) == Order::Big;
        Ok(match ty {
            TypeDesc::Int {
                width,
                signed,
                order: o,
            } => {
                if !matches!(width, 1 | 2 | 3 | 4 | 8) {
                    return Err(self.err(
                        field,
                        format!("integer width {width} is not supported (1, 2, 3, 4 or 8 bytes)"),
                    ));
                }
                Node::Scalar(Scalar::Int {
                    width: *width,
                    signed: *signed,
                    big: big(*o),
                })
            }
            TypeDesc::Float { width, order: o } => {
                if !matches!(width, 2 | 4 | 8) {
                    return Err(self.err(
                        field,
                        format!("float width {width} is not supported (2, 4 or 8 bytes)"),
                    ));
                }
                Node::Scalar(Scalar::Float {
                    width: *width,
                    big: big(*o),
                })
            }
            TypeDesc::Bool => Node::Scalar(Scalar::Bool),
            TypeDesc::Bits { .. } => {
                return Err(self.err(field, "bit fields can only be fields of a struct"))
            }
            TypeDesc::Varint { zigzag } => Node::Varint { zigzag: *zigzag },
            TypeDesc::Kind(k) => Node::Kind(k.clone()),
            TypeDesc::Ref { id } => match self.in_progress.iter().rev().find(|(d, _)| d == id) {
                Some((_, index)) => Node::Struct(*index),
                None => return Err(self.err(field, format!("reference to unknown struct id {id}"))),
            },
            TypeDesc::Registry {
                field: tag_name,
                cases,
                default,
            } => self.registry(field, tag_name, cases, default.as_deref(), order)?,
            TypeDesc::Pad { n } => Node::Scalar(Scalar::Pad(*n as usize)),
            TypeDesc::Bytes { len, max } => {
                let max = max.unwrap_or(self.limits.max_len);
                match self.len(field, len)? {
                    Len::Fixed(n) if n <= max => Node::Scalar(Scalar::Bytes(n as usize)),
                    Len::Fixed(n) => {
                        return Err(
                            self.err(field, format!("fixed length {n} exceeds the limit {max}"))
                        )
                    }
                    len => Node::Bytes { len, max },
                }
            }
            TypeDesc::Str { len, encoding, max } => Node::Str {
                len: self.len(field, len)?,
                enc: *encoding,
                max: max.unwrap_or(self.limits.max_len),
            },
            TypeDesc::Cstr { max, encoding } => Node::Cstr {
                max: *max,
                enc: *encoding,
            },
            TypeDesc::Struct(s) => match self.parts.iter().position(|(id, _)| *id == s.id) {
                Some(part) => Node::Struct(self.splice(field, part, s.id)?),
                None => Node::Struct(self.structure(s, order)?),
            },
            TypeDesc::Array { item, count, max } => {
                let count = self.len(field, count)?;
                let item = self.node(item, order, field)?;
                let item_min = node_min(&item, &self.structs[..]);
                let max = max.unwrap_or(self.limits.max_count);
                if let Len::Fixed(n) = count {
                    if n > max {
                        return Err(
                            self.err(field, format!("fixed count {n} exceeds the limit {max}"))
                        );
                    }
                }
                Node::Array {
                    item: Box::new(item),
                    count,
                    max,
                    item_min,
                }
            }
            TypeDesc::Union {
                tag,
                cases,
                default,
            } => {
                let tag = self.expr(field, tag)?;
                let mut out = Vec::with_capacity(cases.len());
                for case in cases {
                    let v = match &case.tag {
                        ConstDesc::Int(i) => Value::Int(*i),
                        ConstDesc::Bytes(b) => Value::Bytes(b.as_slice().into()),
                    };
                    if out.iter().any(|(t, _)| *t == v) {
                        return Err(self.err(field, format!("duplicate union tag {v:?}")));
                    }
                    out.push((v, self.node(&case.ty, order, field)?));
                }
                let default = match default {
                    Some(d) => Some(Box::new(self.node(d, order, field)?)),
                    None => None,
                };
                let pick = crate::pick::Pick::of(&tag, &out, default.is_some());
                Node::Union {
                    tag: tag.into(),
                    cases: out,
                    default,
                    pick,
                }
            }
        })
    }

    /// Resolves the checksum fields of a finished struct and marks them in its runs.
    /// `within` names the struct (its frame is closed by now), for the error paths.
    fn checksums(
        &self,
        within: &str,
        sums: &[(u16, crate::schema::ChecksumDesc)],
        names: &[Arc<str>],
        steps: &mut [Step],
    ) -> Result<Vec<Checksum>, SchemaError> {
        use crate::digest::Algo;
        use crate::schema::AlgoDesc;
        let mut out = Vec::new();
        for (field, desc) in sums {
            let fname = &*format!("{within}.{}", names[*field as usize]);
            let algo = match &desc.algo {
                AlgoDesc::Name(n) => Algo::from_name(n).ok_or_else(|| {
                    let known = Algo::names().iter().map(|s| s.to_string());
                    self.unknown(
                        SchemaErrorKind::UnknownValue,
                        fname,
                        format!("unknown checksum algorithm '{n}'"),
                        n,
                        known,
                    )
                })?,
                AlgoDesc::Crc(p) => {
                    let a = Algo::Crc(*p);
                    a.validate().map_err(|m| self.err(fname, m))?;
                    a
                }
            };
            let item = steps.iter_mut().find_map(|s| match s {
                Step::Run(r) => r.items.iter_mut().find(|it| it.field == Some(*field)),
                _ => None,
            });
            let Some(item) = item else {
                return Err(self.err(
                    fname,
                    "a checksum field must be a fixed-size integer or bytes field",
                ));
            };
            // Integer checksums go into unsigned integers (a signed field would read back
            // a value that no longer matches), digests into bytes of their length.
            let fits = match item.scalar {
                Scalar::Int {
                    width,
                    signed: false,
                    ..
                } => algo.is_integer() && width as usize == algo.output_len(),
                Scalar::Bytes(n) => !algo.is_integer() && n == algo.output_len(),
                _ => false,
            };
            if !fits {
                return Err(self.err(
                    fname,
                    format!(
                        "this checksum is {} {} bytes: declare the field as {}",
                        if algo.is_integer() {
                            "an integer of"
                        } else {
                            "a digest of"
                        },
                        algo.output_len(),
                        if algo.is_integer() {
                            format!("a {}-bit unsigned integer", algo.output_len() * 8)
                        } else {
                            format!("bytes of length {}", algo.output_len())
                        }
                    ),
                ));
            }
            item.sum = true;
            let scalar = item.scalar;
            let over = match &desc.over {
                None => None,
                Some(list) => Some(
                    list.iter()
                        .map(|n| {
                            names
                                .iter()
                                .position(|x| &**x == n)
                                .map(|i| i as u16)
                                .ok_or_else(|| {
                                    let known = names.iter().map(|s| s.to_string());
                                    self.unknown(
                                        SchemaErrorKind::UnknownField,
                                        fname,
                                        format!("checksum over unknown field '{n}'"),
                                        n,
                                        known,
                                    )
                                })
                        })
                        .collect::<Result<Vec<u16>, SchemaError>>()?,
                ),
            };
            out.push(Checksum {
                field: *field,
                scalar,
                algo,
                over,
                verify: desc.verify,
            });
        }
        let out = self.sum_order(within, out, names)?;
        for s in steps.iter_mut() {
            if let Step::Run(r) = s {
                if r.items.iter().any(|it| it.sum) {
                    r.plain = false;
                }
            }
        }
        Ok(out)
    }

    /// Orders checksums so that each one is computed after every other checksum whose
    /// field it covers (pack writes them in this order; a covered checksum must hold its
    /// final bytes by then, or verification would see different bytes).
    fn sum_order(
        &self,
        within: &str,
        mut left: Vec<Checksum>,
        names: &[Arc<str>],
    ) -> Result<Vec<Checksum>, SchemaError> {
        let covers = |a: &Checksum, b: &Checksum| {
            a.field != b.field && a.over.as_ref().is_none_or(|o| o.contains(&b.field))
        };
        let mut out = Vec::with_capacity(left.len());
        while !left.is_empty() {
            let Some(i) =
                (0..left.len()).find(|&i| left.iter().all(|other| !covers(&left[i], other)))
            else {
                let a = &left[0];
                let b = left.iter().find(|b| covers(a, b)).expect("a cycle");
                return Err(self.err(
                    &format!("{within}.{}", names[a.field as usize]),
                    format!(
                        "the checksums '{}' and '{}' cover each other's bytes",
                        names[a.field as usize], names[b.field as usize]
                    ),
                ));
            };
            out.push(left.remove(i));
        }
        Ok(out)
    }

    /// Subclass dispatch: the tag is a constant field at the same fixed offset in every case.
    fn registry(
        &mut self,
        field: &str,
        tag_name: &str,
        cases: &[crate::schema::CaseDesc],
        default: Option<&TypeDesc>,
        order: Order,
    ) -> Result<Node, SchemaError> {
        let mut out = Vec::with_capacity(cases.len());
        let mut place: Option<(usize, Scalar)> = None;
        for case in cases {
            let v = match &case.tag {
                ConstDesc::Int(i) => Value::Int(*i),
                ConstDesc::Bytes(b) => Value::Bytes(b.as_slice().into()),
            };
            if out.iter().any(|(t, _, _)| *t == v) {
                return Err(self.err(field, format!("two variants share the tag {v:?}")));
            }
            let node = self.node(&case.ty, order, field)?;
            let Node::Struct(si) = node else {
                return Err(self.err(field, "registry variants must be structs"));
            };
            let Some(sp) = self.structs[si as usize].as_ref() else {
                // A variant still being compiled, because it contains this registry
                // (recursion): its tag field's index comes from its frame, and the other
                // variants give the tag's place.
                let frame = self
                    .frames
                    .iter()
                    .find(|f| f.index == si)
                    .expect("an unfinished struct is being compiled");
                let fidx = frame
                    .declared
                    .iter()
                    .find(|d| *d.name == *tag_name)
                    .map(|d| d.field)
                    .ok_or_else(|| {
                        self.err(
                            field,
                            format!("variant {}: no tag field '{tag_name}'", frame.name),
                        )
                    })?;
                out.push((v, node, fidx));
                continue;
            };
            let (off, scalar, fidx) = tag_place(sp, tag_name).ok_or_else(|| {
                self.err(
                    field,
                    format!("variant {}: the tag field '{tag_name}' must be a fixed-size field at a fixed offset", sp.name),
                )
            })?;
            if place.is_some_and(|p| p != (off, scalar)) {
                return Err(self.err(
                    field,
                    format!(
                        "variant {}: the tag field '{tag_name}' is placed differently",
                        sp.name
                    ),
                ));
            }
            place = Some((off, scalar));
            out.push((v, node, fidx));
        }
        let default = match default {
            Some(d) => Some(Box::new(self.node(d, order, field)?)),
            None => None,
        };
        let Some((tag_off, tag)) = place else {
            return Err(self.err(
                field,
                if out.is_empty() {
                    "a registry needs at least one variant"
                } else {
                    "a registry that contains itself needs a variant that does not"
                },
            ));
        };
        Ok(Node::Registry {
            tag_off,
            tag,
            cases: out,
            default,
        })
    }

    /// Structs finished so far, for size computations (unfinished ones count as unknown).
    fn structure(&mut self, desc: &StructDesc, inherited: Order) -> Result<u32, SchemaError> {
        let order = desc.order.unwrap_or(inherited);
        let index = self.structs.len();
        self.structs.push(None);
        let n = desc.fields.len();
        self.frames.push(Frame {
            name: desc.name.clone(),
            index: index as u32,
            sums: Vec::new(),
            declared: Vec::with_capacity(n),
            slots: Vec::new(),
            steps: Vec::with_capacity(n),
        });
        self.in_progress.push((desc.id, index as u32));
        let places = self.bit_plan(desc)?;
        let mut names: Vec<Arc<str>> = Vec::with_capacity(n);
        for (i, f) in desc.fields.iter().enumerate() {
            let place = places.get(i).copied().flatten();
            if let Some(a) = f.align {
                self.align_step(a, f.name.as_deref().unwrap_or(""))?;
            }
            self.field(f, order, &mut names, place)?;
        }
        if let Some(a) = desc.align {
            self.align_step(a, "")?;
        }
        self.in_progress.pop();
        let frame = self.frames.pop().expect("pushed above");
        let mut steps = frame.steps;
        derive_fields(&mut steps, &frame.slots);
        let derived = {
            let mut d = vec![false; names.len()];
            for s in &steps {
                if s.derive.is_some() && s.field < ALIGN {
                    d[s.field as usize] = true;
                }
            }
            d
        };
        let mut steps = coalesce(steps);
        let checksums = self.checksums(&frame.name, &frame.sums, &names, &mut steps)?;
        let mut derived = derived;
        for c in &checksums {
            derived[c.field as usize] = true;
        }
        let mut prog = StructProg {
            sink_id: desc.id,
            name: desc.name.clone(),
            fields: names,
            derived,
            n_slots: frame.slots.len() as u16,
            steps,
            min_size: 0,
            static_size: None,
            checksums,
        };
        prog.min_size = struct_min(&prog, &self.structs[..]);
        prog.static_size = struct_static(&prog, &self.structs[..]);
        self.structs[index] = Some(prog);
        Ok(index as u32)
    }

    /// Copies the structs of compiled part `part` after those compiled so far, its struct
    /// ids starting at `id`; the index of its root struct.
    fn splice(&mut self, field: &str, part: usize, id: u32) -> Result<u32, SchemaError> {
        let p = self.parts[part].1;
        let Node::Struct(root) = p.root else {
            return Err(self.err(field, "a part must be a compiled struct"));
        };
        if p.limits != self.limits {
            return Err(self.err(field, "a part must be compiled with the same limits"));
        }
        let base =
            u32::try_from(self.structs.len()).map_err(|_| self.err(field, "too many structs"))?;
        let first = p.structs[root as usize].sink_id;
        for s in &p.structs {
            let mut s = s.clone();
            s.sink_id = (s.sink_id.checked_sub(first))
                .and_then(|k| k.checked_add(id))
                .ok_or_else(|| self.err(field, "a part's struct ids are out of order"))?;
            for step in &mut s.steps {
                if let Step::Field(f) = step {
                    renumber(&mut f.node, base);
                }
            }
            self.structs.push(Some(s));
        }
        Ok(base + root)
    }

    fn align_step(&mut self, n: u64, field: &str) -> Result<(), SchemaError> {
        check_align(Some(i128::from(n)), &n.to_string()).map_err(|m| self.err(field, m))?;
        let frame = self.frames.last_mut().expect("inside a struct");
        frame.steps.push(FieldStep {
            field: ALIGN,
            node: Node::Scalar(Scalar::Pad(n as usize)),
            when: None,
            window: None,
            slot: None,
            konst: None,
            derive: None,
            fills: Vec::new(),
        });
        Ok(())
    }

    /// Groups adjacent bit fields and places each one in its group (by field index; empty
    /// when the struct has no bit field).
    fn bit_plan(&self, desc: &StructDesc) -> Result<Vec<Option<BitPlace>>, SchemaError> {
        if !desc
            .fields
            .iter()
            .any(|f| matches!(f.ty, TypeDesc::Bits { .. }))
        {
            return Ok(Vec::new());
        }
        let mut out: Vec<Option<BitPlace>> = vec![None; desc.fields.len()];
        let mut i = 0;
        while i < desc.fields.len() {
            if !matches!(desc.fields[i].ty, TypeDesc::Bits { .. }) {
                i += 1;
                continue;
            }
            let start = i;
            let mut widths = Vec::new();
            while i < desc.fields.len() {
                let f = &desc.fields[i];
                let TypeDesc::Bits { width, .. } = f.ty else {
                    break;
                };
                let name = f.name.as_deref().unwrap_or("");
                if !(1..=64).contains(&width) {
                    return Err(
                        self.err(name, format!("bit width {width} must be between 1 and 64"))
                    );
                }
                if f.when.is_some() || f.size.is_some() || (i > start && f.align.is_some()) {
                    return Err(self.err(
                        name,
                        "a bit field cannot be conditional, windowed or aligned",
                    ));
                }
                widths.push(u32::from(width));
                i += 1;
            }
            let total: u32 = widths.iter().sum();
            let first = desc.fields[start].name.as_deref().unwrap_or("");
            if !total.is_multiple_of(8) || total > 128 {
                return Err(self.err(
                    first,
                    format!(
                        "adjacent bit fields must fill whole bytes (at most 16): these {} fields total {total} bits",
                        widths.len()
                    ),
                ));
            }
            let mut acc = 0u32;
            for (k, w) in widths.iter().enumerate() {
                let shift = match desc.bitorder {
                    BitOrder::Msb => total - acc - w,
                    BitOrder::Lsb => acc,
                };
                out[start + k] = Some(BitPlace {
                    group: (total / 8) as u8,
                    shift: shift as u8,
                    first: k == 0,
                    lsb: desc.bitorder == BitOrder::Lsb,
                });
                acc += w;
            }
        }
        Ok(out)
    }

    fn field(
        &mut self,
        f: &FieldDesc,
        order: Order,
        names: &mut Vec<Arc<str>>,
        place: Option<BitPlace>,
    ) -> Result<(), SchemaError> {
        let fname: &str = f.name.as_deref().unwrap_or_default();
        if let Some(n) = &f.name {
            if names.iter().any(|x| **x == **n) {
                return Err(self.err(n, "duplicate field name"));
            }
        }
        let when = match &f.when {
            Some(w) => Some(self.expr(fname, w)?),
            None => None,
        };
        let window = match &f.size {
            Some(w) => Some(self.expr(fname, w)?),
            None => None,
        };
        let node = match (&f.ty, place) {
            (
                TypeDesc::Bits {
                    width,
                    signed,
                    boolean,
                },
                Some(p),
            ) => {
                if *boolean && *width != 1 {
                    return Err(self.err(fname, "a bool bit field is 1 bit wide"));
                }
                Node::Scalar(Scalar::Bits {
                    group: p.group,
                    shift: p.shift,
                    width: *width,
                    signed: *signed,
                    lsb: p.lsb,
                    first: p.first,
                    boolean: *boolean,
                })
            }
            _ => self.node(&f.ty, order, fname)?,
        };
        let konst = match f.konst.as_deref() {
            None => None,
            Some(ConstDesc::Int(v)) => match node {
                Node::Scalar(s @ (Scalar::Int { .. } | Scalar::Bits { .. })) => {
                    let (lo, hi) = s.int_range().expect("int scalar");
                    if *v < lo || *v > hi {
                        return Err(
                            self.err(fname, format!("constant {v} does not fit {}", s.describe()))
                        );
                    }
                    Some(Konst::Int(*v))
                }
                Node::Scalar(Scalar::Bool) if (0..=1).contains(v) => Some(Konst::Int(*v)),
                _ => return Err(self.err(fname, "an integer constant needs an integer field")),
            },
            Some(ConstDesc::Bytes(b)) => match node {
                Node::Scalar(Scalar::Bytes(n)) if n == b.len() => {
                    Some(Konst::Bytes(b.as_slice().into()))
                }
                Node::Scalar(Scalar::Bytes(n)) => {
                    return Err(self.err(
                        fname,
                        format!("constant of {} bytes in a field of {n} bytes", b.len()),
                    ))
                }
                _ => {
                    return Err(self.err(fname, "a bytes constant needs a fixed-length bytes field"))
                }
            },
        };
        let is_pad = matches!(node, Node::Scalar(Scalar::Pad(_)));
        if is_pad != f.name.is_none() {
            return Err(self.err(fname, "padding is unnamed and every other field is named"));
        }
        if is_pad && (when.is_some() || window.is_some()) {
            return Err(self.err(fname, "padding cannot be conditional or windowed"));
        }
        if f.checksum.is_some() && (when.is_some() || window.is_some() || konst.is_some()) {
            return Err(self.err(
                fname,
                "a checksum field cannot be conditional, windowed or constant",
            ));
        }
        let field = if is_pad {
            PAD
        } else {
            let i = u16::try_from(names.len()).map_err(|_| self.err(fname, "too many fields"))?;
            names.push(f.name.clone().unwrap_or_else(|| fname.into()));
            i
        };
        let frame = self.frames.last_mut().expect("inside a struct");
        if let Some(c) = &f.checksum {
            frame.sums.push((field, (**c).clone()));
        }
        frame.steps.push(FieldStep {
            field,
            node,
            when: when.map(|w| Box::new(Compiled::from(w))),
            window: window.map(|w| Box::new(Compiled::from(w))),
            slot: None,
            konst,
            derive: None,
            fills: Vec::new(),
        });
        if field != PAD {
            frame.declared.push(Declared {
                name: names[field as usize].clone(),
                field,
                step: frame.steps.len() - 1,
            });
        }
        Ok(())
    }
}

/// Moves the struct indices of `node` up by `base` (a spliced part's structs follow others).
fn renumber(node: &mut Node, base: u32) {
    match node {
        Node::Struct(i) => *i += base,
        Node::Array { item, .. } => renumber(item, base),
        Node::Union { cases, default, .. } => {
            for (_, n) in cases {
                renumber(n, base);
            }
            if let Some(d) = default {
                renumber(d, base);
            }
        }
        Node::Registry { cases, default, .. } => {
            for (_, n, _) in cases {
                renumber(n, base);
            }
            if let Some(d) = default {
                renumber(d, base);
            }
        }
        Node::Scalar(_)
        | Node::Bytes { .. }
        | Node::Str { .. }
        | Node::Cstr { .. }
        | Node::Kind(_)
        | Node::Varint { .. } => {}
    }
}

/// Marks each integer field that a later length, count or window can compute.
fn derive_fields(steps: &mut [FieldStep], slots: &[u16]) {
    let step_of_field =
        |steps: &[FieldStep], field: u16| steps.iter().position(|s| s.field == field);
    for c in 0..steps.len() {
        let mut candidates: Vec<(Expr, Measure)> = Vec::new();
        match &steps[c].node {
            Node::Bytes {
                len: Len::Expr(e), ..
            } => candidates.push((e.expr.clone(), Measure::ByteLen(None))),
            Node::Str {
                len: Len::Expr(e),
                enc,
                ..
            } => candidates.push((e.expr.clone(), Measure::ByteLen(Some(*enc)))),
            Node::Array {
                count: Len::Expr(e),
                ..
            } => candidates.push((e.expr.clone(), Measure::Count)),
            _ => {}
        }
        if let Some(w) = &steps[c].window {
            candidates.push((w.expr.clone(), Measure::Window));
        }
        for (e, measure) in candidates {
            let mut local: Vec<SlotRef> = Vec::new();
            e.visit_slots(&mut |s, _| {
                if s.up == 0 && !local.contains(&s) {
                    local.push(s);
                }
            });
            let eligible: Vec<(SlotRef, usize)> = local
                .iter()
                .filter_map(|s| {
                    let f = step_of_field(steps, slots[s.idx as usize])?;
                    let st = &steps[f];
                    // A conditional field is derived only from a consumer under the same
                    // condition: both are present (or absent) together.
                    let numeric = match st.node {
                        Node::Scalar(Scalar::Int { .. } | Scalar::Bits { boolean: false, .. }) => {
                            true
                        }
                        // A varint cannot hold a back-patched placeholder.
                        Node::Varint { .. } => measure != Measure::Window,
                        _ => false,
                    };
                    let plain = numeric
                        && st.when == steps[c].when
                        && st.konst.is_none()
                        && st.derive.is_none()
                        && f < c
                        && e.invertible_in(*s);
                    plain.then_some((*s, f))
                })
                .collect();
            // Look-ahead derivations solve at the derived field, so the rest must be known
            // there: of `big - k + n`, only `n` (the later field) can be derived.
            let eligible: Vec<(SlotRef, usize)> = if measure == Measure::Window {
                eligible
            } else {
                eligible
                    .into_iter()
                    .filter(|&(target, f)| {
                        local.iter().all(|s| {
                            *s == target
                                || step_of_field(steps, slots[s.idx as usize])
                                    .is_some_and(|p| p < f)
                        })
                    })
                    .collect()
            };
            let [(target, f)] = eligible[..] else {
                continue;
            };
            let scalar = match steps[f].node {
                Node::Scalar(sc) => sc,
                Node::Varint { .. } => Scalar::Int {
                    width: 8,
                    signed: false,
                    big: true,
                },
                _ => continue,
            };
            if measure == Measure::Window {
                steps[c].fills.push(Fill {
                    field: steps[f].field,
                    slot: target.idx,
                    scalar,
                    expr: e.clone(),
                });
            }
            steps[f].derive = Some(Box::new(Derive {
                consumer: steps[c].field,
                measure,
                expr: e,
            }));
        }
    }
}

/// Merges adjacent unconditional fixed-size fields into runs.
fn coalesce(steps: Vec<FieldStep>) -> Vec<Step> {
    // Runs and the step list are sized exactly (programs live as long as their codecs):
    // a step joins a run when it is an unconditional, unwindowed scalar; an alignment that
    // is not padding is dropped and leaves a run open.
    let joins = |s: &FieldStep| {
        s.field != ALIGN
            && matches!(s.node, Node::Scalar(_))
            && s.when.is_none()
            && s.window.is_none()
    };
    let skipped =
        |s: &FieldStep| s.field == ALIGN && !matches!(s.node, Node::Scalar(Scalar::Pad(_)));
    let mut n_out = 0;
    let mut in_run = false;
    for s in steps.iter().filter(|s| !skipped(s)) {
        if !joins(s) {
            n_out += 1;
            in_run = false;
        } else if !in_run {
            n_out += 1;
            in_run = true;
        }
    }
    let mut out: Vec<Step> = Vec::with_capacity(n_out);
    let mut rest = steps.into_iter();
    while let Some(s) = rest.next() {
        if s.field == ALIGN {
            if let Node::Scalar(Scalar::Pad(n)) = s.node {
                out.push(Step::Align(n));
            }
            continue;
        }
        let fixed = match s.node {
            Node::Scalar(sc) if s.when.is_none() && s.window.is_none() => Some(sc),
            _ => None,
        };
        match fixed {
            Some(scalar) => {
                let item = RunItem {
                    off: 0,
                    scalar,
                    field: (s.field != PAD).then_some(s.field),
                    slot: s.slot,
                    konst: s.konst,
                    derive: s.derive.map(|d| *d),
                    sum: false,
                };
                if let Some(Step::Run(run)) = out.last_mut() {
                    // Later fields of a bit group share the group's offset.
                    let off = match scalar {
                        Scalar::Bits {
                            group,
                            first: false,
                            ..
                        } => run.size - group as usize,
                        _ => run.size,
                    };
                    run.items.push(RunItem { off, ..item });
                    run.size += scalar.size();
                } else {
                    let more = rest.as_slice().iter().filter(|s| !skipped(s));
                    let n = 1 + more.take_while(|s| joins(s)).count();
                    let mut items = Vec::with_capacity(n);
                    items.push(item);
                    out.push(Step::Run(Run {
                        size: scalar.size(),
                        items,
                        plain: false,
                        checked: Vec::new(),
                    }));
                }
            }
            None => out.push(Step::Field(s)),
        }
    }
    for step in &mut out {
        if let Step::Run(run) = step {
            run.plain = run.items.iter().all(|it| {
                it.field.is_some()
                    && it.konst.is_none()
                    && it.derive.is_none()
                    && matches!(
                        it.scalar,
                        Scalar::Int { .. } | Scalar::Float { .. } | Scalar::Bool
                    )
            });
            let checked = |it: &RunItem| {
                it.slot.is_some() || it.konst.is_some() || matches!(it.scalar, Scalar::Bool)
            };
            // Exactly as many as there are (a codec keeps them; most runs have one or none).
            run.checked = Vec::with_capacity(run.items.iter().filter(|it| checked(it)).count());
            for (i, it) in run.items.iter().enumerate() {
                if checked(it) {
                    run.checked.push(Check::of(i as u32, it));
                }
            }
        }
    }
    out
}

fn len_min(len: &Len) -> u64 {
    match len {
        Len::Fixed(n) => *n,
        _ => 0,
    }
}

/// The sizes of structs by index: of a finished program, or of the structs compiled so far
/// (a struct still being compiled counts as empty and variable).
pub(crate) trait StructSizes {
    fn min_size(&self, i: u32) -> usize;
    fn static_size(&self, i: u32) -> Option<usize>;
}

impl StructSizes for [StructProg] {
    fn min_size(&self, i: u32) -> usize {
        self.get(i as usize).map_or(0, |s| s.min_size)
    }
    fn static_size(&self, i: u32) -> Option<usize> {
        self.get(i as usize)?.static_size
    }
}

impl StructSizes for [Option<StructProg>] {
    fn min_size(&self, i: u32) -> usize {
        self.get(i as usize)
            .and_then(Option::as_ref)
            .map_or(0, |s| s.min_size)
    }
    fn static_size(&self, i: u32) -> Option<usize> {
        self.get(i as usize)?.as_ref()?.static_size
    }
}

pub(crate) fn node_min<S: StructSizes + ?Sized>(node: &Node, structs: &S) -> usize {
    match node {
        Node::Scalar(s) => s.size(),
        Node::Bytes { len, .. } | Node::Str { len, .. } => len_min(len) as usize,
        Node::Cstr { .. } => 1,
        Node::Struct(i) => structs.min_size(*i),
        Node::Array {
            count, item_min, ..
        } => (len_min(count) as usize).saturating_mul(*item_min),
        Node::Union { cases, default, .. } => cases
            .iter()
            .map(|(_, n)| n)
            .chain(default.as_deref())
            .map(|n| node_min(n, structs))
            .min()
            .unwrap_or(0),
        Node::Registry { cases, default, .. } => cases
            .iter()
            .map(|(_, n, _)| n)
            .chain(default.as_deref())
            .map(|n| node_min(n, structs))
            .min()
            .unwrap_or(0),
        Node::Varint { .. } => 1,
        Node::Kind(k) => k.min_size(),
    }
}

pub(crate) fn node_static<S: StructSizes + ?Sized>(node: &Node, structs: &S) -> Option<usize> {
    match node {
        Node::Scalar(s) => Some(s.size()),
        Node::Bytes { .. }
        | Node::Str { .. }
        | Node::Cstr { .. }
        | Node::Union { .. }
        | Node::Registry { .. }
        | Node::Varint { .. }
        | Node::Kind(_) => None,
        Node::Struct(i) => structs.static_size(*i),
        Node::Array {
            item,
            count: Len::Fixed(n),
            ..
        } => node_static(item, structs)?.checked_mul(*n as usize),
        Node::Array { .. } => None,
    }
}

fn struct_min<S: StructSizes + ?Sized>(p: &StructProg, structs: &S) -> usize {
    p.steps
        .iter()
        .map(|s| match s {
            Step::Run(r) => r.size,
            Step::Align(_) => 0,
            Step::Field(f) if f.when.is_some() => 0,
            Step::Field(f) => match f.window.as_deref().map(|w| &w.expr) {
                Some(Expr::Const(Value::Int(n))) => usize::try_from(*n).unwrap_or(0),
                _ => node_min(&f.node, structs),
            },
        })
        .fold(0usize, usize::saturating_add)
}

fn struct_static<S: StructSizes + ?Sized>(p: &StructProg, structs: &S) -> Option<usize> {
    let mut total = 0usize;
    for s in &p.steps {
        total = total.checked_add(match s {
            Step::Run(r) => r.size,
            Step::Align(n) => (n - total % n) % n,
            Step::Field(f) if f.when.is_some() => return None,
            Step::Field(f) => match f.window.as_deref().map(|w| &w.expr) {
                Some(Expr::Const(Value::Int(n))) => usize::try_from(*n).ok()?,
                Some(_) => return None,
                None => node_static(&f.node, structs)?,
            },
        })?;
    }
    Some(total)
}

/// The fixed offset, scalar and field index of a named field, when everything before it has
/// a static size.
fn tag_place(sp: &StructProg, name: &str) -> Option<(usize, Scalar, u16)> {
    let fidx = sp.fields.iter().position(|f| &**f == name)? as u16;
    let mut off = 0usize;
    for step in &sp.steps {
        match step {
            Step::Run(run) => {
                if let Some(it) = run.items.iter().find(|it| it.field == Some(fidx)) {
                    return Some((off + it.off, it.scalar, fidx));
                }
                off += run.size;
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile_json(root: serde_json::Value) -> Result<Program, SchemaError> {
        let text = serde_json::json!({ "root": root }).to_string();
        compile(&Schema::from_json(&text).expect("a valid description"))
    }

    fn field(name: &str, ty: serde_json::Value) -> serde_json::Value {
        serde_json::json!({ "name": name, "type": ty })
    }

    #[test]
    fn schema_errors_are_typed() {
        let u8t = serde_json::json!({"t": "int", "width": 1, "signed": false});
        let e = compile_json(serde_json::json!({
            "t": "struct", "id": 0, "name": "S", "fields": [
                field("payload_len", u8t.clone()),
                field("payload", serde_json::json!({"t": "bytes", "len": {"expr": ["name", "payload_lne"]}})),
            ]
        }))
        .unwrap_err();
        assert_eq!(e.kind, SchemaErrorKind::UnknownName);
        assert_eq!(e.path, "S.payload");
        assert_eq!(e.name.as_deref(), Some("payload_lne"));
        assert_eq!(e.suggestion.as_deref(), Some("payload_len"));
        assert!(e
            .message
            .starts_with("S.payload: unknown field 'payload_lne' in expression"));
        assert!(e.message.ends_with("; did you mean 'payload_len'?"), "{e}");

        // A name nothing resembles: no suggestion, and the message says none.
        let e = compile_json(serde_json::json!({
            "t": "struct", "id": 0, "name": "S", "fields": [
                field("data", serde_json::json!({"t": "bytes", "len": {"expr": ["name", "n"]}})),
            ]
        }))
        .unwrap_err();
        assert_eq!(
            (e.kind, e.name.as_deref(), e.suggestion.as_deref()),
            (SchemaErrorKind::UnknownName, Some("n"), None)
        );
        assert!(!e.message.contains("did you mean"), "{e}");

        let e = compile_json(serde_json::json!({
            "t": "struct", "id": 0, "name": "S", "fields": [
                {"name": "a", "type": u8t, "align": 0},
            ]
        }))
        .unwrap_err();
        assert_eq!(
            (e.kind, e.path.as_str(), e.name.as_deref()),
            (SchemaErrorKind::Invalid, "S.a", None)
        );
        assert_eq!(
            e.message,
            "S.a: align= must be an int between 1 and 4096, got 0"
        );
    }

    #[test]
    fn a_part_compiles_to_the_program_written_out_in_full() {
        use serde_json::json;
        let u8t = json!({"t": "int", "width": 1, "signed": false});
        // A struct with a derived length and a nested struct of its own (ids 0 and 1).
        let inner = json!({"t": "struct", "id": 0, "name": "Rec", "fields": [
            field("n", u8t.clone()),
            field("data", json!({"t": "bytes", "len": {"expr": ["name", "n"]}})),
            field("pt", json!({"t": "struct", "id": 1, "name": "Pt", "fields": [
                field("x", json!({"t": "int", "width": 2, "signed": true})),
            ]})),
        ]});
        let renumbered = |v: &serde_json::Value, by: u64| {
            let text = v.to_string();
            let text = text
                .replace("\"id\":1", "\"id\":X")
                .replace("\"id\":0", &format!("\"id\":{by}"));
            serde_json::from_str::<serde_json::Value>(
                &text.replace("\"id\":X", &format!("\"id\":{}", by + 1)),
            )
            .unwrap()
        };
        let outer = |rec: serde_json::Value| {
            json!({"t": "struct", "id": 0, "name": "Outer", "fields": [
                field("count", u8t.clone()),
                field("recs", json!({"t": "array", "item": rec, "count": {"expr": ["name", "count"]}})),
                field("tail", u8t.clone()),
            ]})
        };
        let full = compile_json(outer(renumbered(&inner, 1))).unwrap();
        let part = compile_json(inner.clone()).unwrap();
        let text = json!({"root": outer(renumbered(&inner, 1))}).to_string();
        let spliced = compile_with(&Schema::from_json(&text).unwrap(), &[(1, &part)]).unwrap();
        assert_eq!(spliced, full);
        // A part compiled under other limits is a typed error.
        let limited =
            json!({"root": outer(renumbered(&inner, 1)), "limits": {"max_len": 5}}).to_string();
        let e = compile_with(&Schema::from_json(&limited).unwrap(), &[(1, &part)]).unwrap_err();
        assert!(e.message.contains("same limits"), "{e}");
    }

    #[test]
    fn the_align_rule() {
        assert_eq!(check_align(Some(1), "1"), Ok(1));
        assert_eq!(check_align(Some(4096), "4096"), Ok(4096));
        for bad in [0, -4, 4097, i128::MAX] {
            assert!(check_align(Some(bad), "x").is_err());
        }
        assert!(check_align(None, "'4'").unwrap_err().ends_with("got '4'"));
    }
}
