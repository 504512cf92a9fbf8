//! The validating pull reader: turns a record body into a flat stream of [`Event`]s.
//!
//! It checks everything that does not need Python: tags, lengths, nesting, memo
//! references, class definitions and every [`Limits`] bound, each before the caller
//! could allocate for it. It never recurses, so nesting depth costs heap, not stack.

use crate::error::ReadError;
use crate::limits::Limits;
use crate::tags::*;
use crate::varint;

/// A class definition met in the record; referred to later by its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassDef<'a> {
    /// Module-qualified name, UTF-8.
    pub name: &'a [u8],
    pub version: u64,
    /// How many fields it names.
    pub field_count: usize,
    /// The definition as encoded (name, version and field names): equal bytes, equal
    /// definition, so a caller may key what it derives from one by these.
    pub encoded: &'a [u8],
    /// Where in `encoded` the field names start.
    fields_at: usize,
}

impl<'a> ClassDef<'a> {
    /// Field names, UTF-8, never dunder names (read back from the checked encoding).
    pub fn fields(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + Clone + 'a {
        let (encoded, mut pos) = (self.encoded, self.fields_at);
        (0..self.field_count).map(move |_| {
            // The reader checked every length and name when it met the definition.
            let n = varint::get(encoded, &mut pos).unwrap_or(0) as usize;
            let field = encoded.get(pos..pos + n).unwrap_or_default();
            pos += n;
            field
        })
    }
}

/// Where a [`ClassDef`] lies in the body (kept between records with no borrow of one).
#[derive(Clone, Copy)]
struct ClassAt {
    name: (usize, usize),
    version: u64,
    field_count: usize,
    encoded: (usize, usize),
    fields_at: usize,
}

/// A class definition an earlier record held, checked then: the same bytes again need only
/// the limits checked (a record of a class usually comes after many of the same class).
struct KnownClass {
    encoded: Box<[u8]>,
    /// `ClassAt` with its positions relative to the definition's start.
    at: ClassAt,
    /// Its longest name (class or field), for the `max_str_len` limit.
    longest_name: u64,
}

/// Definitions kept for [`KnownClass`], and the longest kept.
const KNOWN_CLASSES: usize = 8;
const KNOWN_CLASS_MAX_LEN: usize = 256;

/// One step of the body. A container event with a non-zero length is followed by that
/// many child values (two per pair for dict-like ones) and then [`Event::End`];
/// with length zero nothing follows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event<'a> {
    None,
    Bool(bool),
    Ellipsis,
    Int(i64),
    /// Little-endian two's complement, at least one byte.
    BigInt(&'a [u8]),
    Float(f64),
    Complex(f64, f64),
    /// UTF-8 (not yet validated: the caller's decoder does that).
    Str(&'a [u8]),
    /// A `Str` that takes the next memo slot (a `Share` then a `Str`); only
    /// [`Reader::atom_run`] gives this, for a shared short str inside a run.
    SharedStr(&'a [u8]),
    /// UTF-8 with surrogates allowed ("surrogatepass").
    StrSurrogates(&'a [u8]),
    Bytes(&'a [u8]),
    ByteArray(&'a [u8]),
    List(usize),
    Tuple(usize),
    Dict(usize),
    Set(usize),
    FrozenSet(usize),
    OrderedDict(usize),
    Counter(usize),
    /// `len` pairs, then the factory when `factory` is [`FACTORY_VALUE`].
    DefaultDict {
        factory: u8,
        len: usize,
    },
    Deque {
        maxlen: Option<u64>,
        len: usize,
    },
    /// Three children: start, stop, step.
    Range,
    /// Three children: start, stop, step.
    Slice,
    /// One child, the argument tuple.
    Std(u64),
    /// `len` children, the values of the class's fields in order.
    Object {
        class: usize,
        len: usize,
    },
    /// One child, the member name.
    Enum {
        class: usize,
    },
    /// A registered class itself (no children).
    Class {
        class: usize,
    },
    /// The value of the builtins table of this name (no children).
    Builtin(&'a [u8]),
    /// A builtin exception of the class of this name: the argument tuple, then
    /// [`Event::End`], then the state, then [`Event::End`]. Its memo slot is usable from
    /// the first `End` on.
    Exception(&'a [u8]),
    /// An instance of a subclass of a builtin type (`base`, a [`base`] code). Mutable
    /// bases: `len` items (pairs for dict-like ones), the factory if `factory` is
    /// [`FACTORY_VALUE`], the state, then [`Event::End`]; the memo slot is usable at once.
    /// The others: one value (of the base type, or an exception's arguments),
    /// [`Event::End`], the state, [`Event::End`]; the memo slot is usable from the first
    /// `End` on. `factory` is the defaultdict factory code (base `DEFAULT_DICT`), else 0.
    Derived {
        class: usize,
        base: u8,
        factory: u8,
        len: usize,
    },
    /// An instance of a subclass of `collections.deque` (base code [`base::DEQUE`]): as
    /// [`Event::Derived`] of a mutable base, with the deque's `maxlen`.
    DerivedDeque {
        class: usize,
        maxlen: Option<u64>,
        len: usize,
    },
    /// The next value takes the next memo slot.
    Share,
    Ref(usize),
    /// One child, decoded and then replaced by the value of memo slot.
    Replace(usize),
    End,
}

const NO_SLOT: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Root,
    Container,
    Replace,
}

#[derive(Clone, Copy)]
struct Frame {
    remaining: u64,
    kind: FrameKind,
    /// Memo slot to mark filled when this frame closes (values built after their children).
    fills: u32,
    /// For `Replace`: the slot that must be filled when the frame closes.
    target: u32,
}

/// Reads one record body (the bytes between header and tag).
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    limits: Limits,
    stack: Vec<Frame>,
    items: u64,
    /// Per memo slot: whether its value exists yet.
    memo: Vec<bool>,
    classes: Vec<ClassAt>,
    known: Vec<KnownClass>,
    pending_share: bool,
    after_replace: bool,
}

/// A `match` on the tag `$tag` of the value at the front of `$enc` (tag first): first the
/// arms the lane passes after `else $miss`, then one arm per fixed-size atom tag, each giving
/// the atom's encoded length and event, and `$miss` (`break`, `return None`) for any other
/// tag, an encoding cut short, or a short str longer than `$max_str`. Every lane of the
/// reader decodes fixed-size atoms through this one definition. It is a macro so that each
/// lane keeps a single match (one dispatch per value) whose arms also tell the consumer each
/// event's variant: a function returning an `Option` cost two more dispatches per atom.
macro_rules! fixed_atom {
    (
        $tag:expr, $enc:expr, $max_str:expr, else $miss:expr
        $(, $pat:pat $(if $guard:expr)? => $arm:expr)* $(,)?
    ) => {{
        let (tag, enc): (u8, &[u8]) = ($tag, $enc);
        macro_rules! int {
            ($t:expr) => {
                match int_value($t, enc) {
                    Some(v) => (fixed_len($t), Event::Int(v)),
                    None => $miss,
                }
            };
        }
        macro_rules! float {
            ($t:expr) => {
                match float_value($t, enc) {
                    Some(v) => (fixed_len($t), Event::Float(v)),
                    None => $miss,
                }
            };
        }
        match tag {
            $($pat $(if $guard)? => $arm,)*
            0..=SMALL_INT_MAX => (fixed_len(0), Event::Int(i64::from(tag))),
            SHORT_STR..=SHORT_STR_LAST => {
                let n = usize::from(tag - SHORT_STR);
                if n as u64 > $max_str {
                    $miss
                }
                match enc.get(1..1 + n) {
                    Some(s) => (1 + n, Event::Str(s)),
                    None => $miss,
                }
            }
            NONE => (fixed_len(NONE), Event::None),
            FALSE => (fixed_len(FALSE), Event::Bool(false)),
            TRUE => (fixed_len(TRUE), Event::Bool(true)),
            UINT8 => int!(UINT8),
            NEG8 => int!(NEG8),
            UINT16 => int!(UINT16),
            NEG16 => int!(NEG16),
            INT32 => int!(INT32),
            FLOAT64 => float!(FLOAT64),
            FLOAT32 => float!(FLOAT32),
            _ => $miss,
        }
    }};
}

/// [`fixed_atom!`] as a function: `None` for anything but a whole fixed-size atom.
#[inline(always)]
fn fixed_atom(tag: u8, enc: &[u8], max_str: u64) -> Option<(usize, Event<'_>)> {
    Some(fixed_atom!(tag, enc, max_str, else return None))
}

/// The floats [`Reader::float_run`] took: their encodings, each a `FLOAT64` or `FLOAT32`.
#[derive(Clone, Copy, Debug, Default)]
pub struct FloatRun<'a>(&'a [u8]);

impl<'a> FloatRun<'a> {
    /// The encodings, as read.
    pub fn bytes(self) -> &'a [u8] {
        self.0
    }

    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    /// Hands each float to `f`, in order, until it fails.
    #[inline(always)]
    pub fn try_for_each<E>(self, mut f: impl FnMut(f64) -> Result<(), E>) -> Result<(), E> {
        let mut rest = self.0;
        // The next float's position is known from its tag alone, so the loop starts each
        // float without waiting for the previous one's value.
        while let Some(&tag) = rest.first() {
            let (value, len) = if tag == FLOAT32 {
                (float_value(FLOAT32, rest), fixed_len(FLOAT32))
            } else {
                (float_value(FLOAT64, rest), fixed_len(FLOAT64))
            };
            let Some(value) = value else {
                break; // not reached: a run holds whole encodings only
            };
            rest = &rest[len..];
            f(value)?;
        }
        Ok(())
    }
}

/// The ints [`Reader::int_run`] took: encodings of one width, all of `tag`'s encoding
/// (`SMALL_INT_MAX` stands for every small int).
#[derive(Clone, Copy, Debug, Default)]
pub struct IntRun<'a> {
    tag: u8,
    bytes: &'a [u8],
}

impl<'a> IntRun<'a> {
    /// The encoding the ints share, and their encodings as read.
    pub fn parts(self) -> (u8, &'a [u8]) {
        (self.tag, self.bytes)
    }

    pub fn is_empty(self) -> bool {
        self.bytes.is_empty()
    }

    /// Hands each int to `f`, in order, until it fails: one loop per encoding, each
    /// decoding a known width.
    #[inline(always)]
    pub fn try_for_each<E>(self, f: impl FnMut(i64) -> Result<(), E>) -> Result<(), E> {
        #[inline(always)]
        fn each<E, const TAG: u8>(
            bytes: &[u8],
            mut f: impl FnMut(i64) -> Result<(), E>,
        ) -> Result<(), E> {
            for enc in bytes.chunks_exact(fixed_len(TAG)) {
                if let Some(v) = int_value(TAG, enc) {
                    f(v)?;
                }
            }
            Ok(())
        }
        match self.tag {
            UINT8 => each::<E, UINT8>(self.bytes, f),
            NEG8 => each::<E, NEG8>(self.bytes, f),
            UINT16 => each::<E, UINT16>(self.bytes, f),
            NEG16 => each::<E, NEG16>(self.bytes, f),
            INT32 => each::<E, INT32>(self.bytes, f),
            _ => each::<E, SMALL_INT_MAX>(self.bytes, f),
        }
    }
}

/// A reader's working storage, kept between records so that small records allocate nothing.
#[derive(Default)]
pub struct ReaderBuffers {
    stack: Vec<Frame>,
    memo: Vec<bool>,
    classes: Vec<ClassAt>,
    /// Class definitions checked in earlier records (at most [`KNOWN_CLASSES`]).
    known: Vec<KnownClass>,
}

impl ReaderBuffers {
    /// Bytes of capacity held (a caller keeping buffers around bounds this).
    pub fn held_bytes(&self) -> usize {
        self.stack.capacity() * std::mem::size_of::<Frame>()
            + self.memo.capacity()
            + self.classes.capacity() * std::mem::size_of::<ClassAt>()
            + KNOWN_CLASSES * (std::mem::size_of::<KnownClass>() + KNOWN_CLASS_MAX_LEN)
    }
}

impl<'a> Reader<'a> {
    pub fn new(body: &'a [u8], limits: Limits) -> Self {
        Self::with_buffers(body, limits, ReaderBuffers::default())
    }

    /// A reader that works in `buffers` (from [`Reader::take_buffers`] of an earlier one).
    pub fn with_buffers(body: &'a [u8], limits: Limits, buffers: ReaderBuffers) -> Self {
        let root = Frame {
            remaining: 1,
            kind: FrameKind::Root,
            fills: NO_SLOT,
            target: NO_SLOT,
        };
        let ReaderBuffers {
            mut stack,
            mut memo,
            mut classes,
            known,
        } = buffers;
        stack.clear();
        memo.clear();
        classes.clear();
        if stack.capacity() == 0 {
            stack.reserve(16);
        }
        stack.push(root);
        Self {
            buf: body,
            pos: 0,
            limits,
            stack,
            items: 0,
            memo,
            classes,
            known,
            pending_share: false,
            after_replace: false,
        }
    }

    /// The working storage, emptied, for the next reader; this one is left with none.
    pub fn take_buffers(&mut self) -> ReaderBuffers {
        let mut stack = std::mem::take(&mut self.stack);
        let mut memo = std::mem::take(&mut self.memo);
        let mut classes = std::mem::take(&mut self.classes);
        stack.clear();
        memo.clear();
        classes.clear();
        ReaderBuffers {
            stack,
            memo,
            classes,
            known: std::mem::take(&mut self.known),
        }
    }

    /// Byte offset of the next unread byte in the body.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// The class defined with index `index` (always valid for an index from an event).
    pub fn class(&self, index: usize) -> Option<ClassDef<'a>> {
        let at = self.classes.get(index)?;
        let buf: &'a [u8] = self.buf;
        Some(ClassDef {
            name: buf.get(at.name.0..at.name.1)?,
            version: at.version,
            field_count: at.field_count,
            encoded: buf.get(at.encoded.0..at.encoded.1)?,
            fields_at: at.fields_at,
        })
    }

    /// Reads the whole body, discarding events: full validation without building.
    pub fn validate(mut self) -> Result<(), ReadError> {
        self.check()
    }

    /// [`Reader::validate`] in place, so that the caller can take the reader's storage
    /// back ([`Reader::take_buffers`]) for the next reader.
    pub fn check(&mut self) -> Result<(), ReadError> {
        loop {
            self.skip_atoms();
            if self.next_event()?.is_none() {
                return Ok(());
            }
        }
    }

    /// For tests and fuzzing: reads `body` through the runs a builder takes
    /// ([`Reader::float_run`], [`Reader::int_run`], [`Reader::atom_run_to_number`]) and
    /// event by event; `Err` says how the two differ. They must give the same values (a
    /// run's `SharedStr` as the `Share` and `Str` of `next_event`), or the same error.
    pub fn runs_self_check(body: &[u8], limits: Limits) -> Result<(), String> {
        let show = |e: &Event<'_>| match e {
            Event::Float(f) => format!("Float({:x})", f.to_bits()),
            e => format!("{e:?}"),
        };
        let read = |runs: bool| -> Result<Vec<String>, String> {
            let mut r = Reader::new(body, limits);
            let mut out = Vec::new();
            loop {
                loop {
                    if !runs {
                        break;
                    }
                    let at = r.offset();
                    let floats = r.float_run();
                    let _ = floats.try_for_each(|v| {
                        out.push(show(&Event::Float(v)));
                        Ok::<(), ()>(())
                    });
                    let ints = r.int_run();
                    let (tag, encodings) = ints.parts();
                    let len = fixed_len(tag);
                    if encodings.len() % len.max(1) != 0 {
                        return Err(format!("a run of {tag:#x} cut inside an int"));
                    }
                    for e in encodings.chunks_exact(len.max(1)) {
                        let same = if tag == SMALL_INT_MAX {
                            e[0] <= SMALL_INT_MAX
                        } else {
                            e[0] == tag
                        };
                        if !same {
                            return Err(format!("tag {:#x} in a run of {tag:#x}", e[0]));
                        }
                    }
                    let _ = ints.try_for_each(|v| {
                        out.push(show(&Event::Int(v)));
                        Ok::<(), ()>(())
                    });
                    r.atom_run_to_number(|e| {
                        match e {
                            Event::SharedStr(s) => {
                                out.push(show(&Event::Share));
                                out.push(show(&Event::Str(s)));
                            }
                            e => out.push(show(&e)),
                        }
                        true
                    });
                    if r.offset() == at {
                        break;
                    }
                }
                match r.next_event() {
                    Ok(Some(e)) => out.push(show(&e)),
                    Ok(None) => return Ok(out),
                    Err(e) => return Err(format!("{} at {}", e.message, e.offset)),
                }
            }
        };
        let (plain, through_runs) = (read(false), read(true));
        if plain == through_runs {
            Ok(())
        } else {
            Err(format!(
                "event by event: {plain:?}\nthrough runs: {through_runs:?}"
            ))
        }
    }

    /// `atom_run` without events, for `validate`: skips the fixed-size atoms (and short
    /// strs within the limit) that are direct children of the innermost open container,
    /// with the same bounds; everything else, and every error, is left to `next_event`.
    fn skip_atoms(&mut self) {
        let Some(budget) = self.run_budget() else {
            return;
        };
        let buf = self.buf;
        let max_str = self.limits.max_str_len.min(SHORT_STR_MAX_LEN as u64) as usize;
        let check_str = max_str < SHORT_STR_MAX_LEN;
        let mut pos = self.pos;
        let mut n = 0u64;
        while n < budget {
            let Some(&tag) = buf.get(pos) else {
                break;
            };
            let len = usize::from(FIXED_LEN[usize::from(tag)]);
            if len == 0
                || (check_str
                    && usize::from(tag.wrapping_sub(SHORT_STR)) <= SHORT_STR_MAX_LEN
                    && len - 1 > max_str)
            {
                break;
            }
            if buf.len() - pos < len {
                break;
            }
            pos += len;
            n += 1;
            // A run of the same tag (a list of floats, say): the next position is known
            // without waiting for the table lookup, so the loads overlap.
            while n < budget && buf.len() - pos >= len && buf[pos] == tag {
                pos += len;
                n += 1;
            }
        }
        self.end_run(n, pos);
    }

    /// How many children a run may take now (at most the open container's remaining
    /// children and the item limit's remainder); `None` when no run may start: a SHARE is
    /// pending or the innermost frame is not an open container.
    #[inline(always)]
    fn run_budget(&self) -> Option<u64> {
        if self.pending_share {
            return None;
        }
        let top = self.stack.last()?;
        if top.kind != FrameKind::Container {
            return None;
        }
        Some(
            top.remaining
                .min(self.limits.max_items.saturating_sub(self.items)),
        )
    }

    /// Accounts for a run of `n` children that ended at `pos`.
    #[inline(always)]
    fn end_run(&mut self, n: u64, pos: usize) {
        if n == 0 {
            return;
        }
        if let Some(top) = self.stack.last_mut() {
            top.remaining -= n;
        }
        self.items += n;
        self.pos = pos;
        self.after_replace = false;
    }

    fn err(&self, message: impl Into<String>) -> ReadError {
        ReadError::malformed(self.pos, message)
    }

    fn truncated(&self) -> ReadError {
        ReadError::malformed(self.pos, "truncated record: the body ends inside a value")
    }

    #[inline(always)]
    fn byte(&mut self) -> Result<u8, ReadError> {
        let b = *self.buf.get(self.pos).ok_or_else(|| self.truncated())?;
        self.pos += 1;
        Ok(b)
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| self.truncated())?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, ReadError> {
        varint::get(self.buf, &mut self.pos).ok_or_else(|| self.err("invalid or truncated varint"))
    }

    fn remaining_bytes(&self) -> u64 {
        (self.buf.len() - self.pos) as u64
    }

    /// Reads a length for `what`, checked against `max` and the bytes left.
    fn data_len(&mut self, max: u64, what: &str) -> Result<usize, ReadError> {
        let n = self.varint()?;
        if n > max {
            return Err(ReadError::limit(
                self.pos,
                format!("{what} of {n} bytes exceeds the limit of {max}"),
            ));
        }
        if n > self.remaining_bytes() {
            return Err(self.truncated());
        }
        Ok(n as usize)
    }

    /// Checks a child count (`per_item` bytes at least each) before anyone allocates for it.
    #[inline(always)]
    fn check_len(&self, n: u64, per_item: u64) -> Result<usize, ReadError> {
        if n > self.limits.max_container_len {
            return Err(ReadError::limit(
                self.pos,
                format!(
                    "container of {n} items exceeds the limit of {}",
                    self.limits.max_container_len
                ),
            ));
        }
        if n.saturating_mul(per_item) > self.remaining_bytes() {
            return Err(self.err(format!(
                "container claims {n} items but the body is too short"
            )));
        }
        Ok(n as usize)
    }

    #[inline(always)]
    fn counted_len(&mut self, per_item: u64) -> Result<usize, ReadError> {
        let n = self.varint()?;
        self.check_len(n, per_item)
    }

    fn push(&mut self, children: u64, fills: u32) -> Result<(), ReadError> {
        if self.stack.len() as u64 > self.limits.max_depth {
            return Err(ReadError::limit(
                self.pos,
                format!("nesting deeper than the limit of {}", self.limits.max_depth),
            ));
        }
        self.stack.push(Frame {
            remaining: children,
            kind: FrameKind::Container,
            fills,
            target: NO_SLOT,
        });
        Ok(())
    }

    /// Opens a container with `children` child values. `prefix` says whether its memo slot
    /// (if shared) is usable before its children (mutable containers) or only after.
    #[inline(always)]
    fn open(&mut self, children: u64, prefix: bool) -> Result<(), ReadError> {
        let slot = self.take_share(prefix);
        if children == 0 {
            if let Some(s) = slot {
                self.memo[s as usize] = true;
            }
            return Ok(());
        }
        self.push(
            children,
            if prefix {
                NO_SLOT
            } else {
                slot.unwrap_or(NO_SLOT)
            },
        )
    }

    /// Allocates the pending memo slot, if any; filled now when `filled`.
    #[inline(always)]
    fn take_share(&mut self, filled: bool) -> Option<u32> {
        if !self.pending_share {
            return None;
        }
        self.pending_share = false;
        let slot = self.memo.len() as u32;
        self.memo.push(filled);
        Some(slot)
    }

    fn class_ref(&mut self) -> Result<usize, ReadError> {
        let r = self.varint()?;
        if r == 0 {
            if let Some(index) = self.known_class() {
                return Ok(index);
            }
            let start = self.pos;
            let name = self.name("class name")?;
            let name_end = self.pos;
            let version = self.varint()?;
            let n = self.counted_len(1)?;
            let fields_at = self.pos - start;
            for _ in 0..n {
                let field = self.name("field name")?;
                if field.len() >= 4 && field.starts_with(b"__") && field.ends_with(b"__") {
                    return Err(self.err(format!(
                        "class {} names the dunder field {:?}",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(field)
                    )));
                }
            }
            let at = ClassAt {
                name: (name_end - name.len(), name_end),
                version,
                field_count: n,
                encoded: (start, self.pos),
                fields_at,
            };
            self.classes.push(at);
            self.keep_known(at);
            Ok(self.classes.len() - 1)
        } else {
            let index = r - 1;
            if index >= self.classes.len() as u64 {
                return Err(self.err(format!("reference to undefined class #{index}")));
            }
            Ok(index as usize)
        }
    }

    /// A definition at the read position whose bytes are those of one checked in an
    /// earlier record, within this reader's limits: taken whole, with no parsing.
    #[inline]
    fn known_class(&mut self) -> Option<usize> {
        let rest = &self.buf[self.pos..];
        let known = self.known.iter().find(|k| rest.starts_with(&k.encoded))?;
        // The bytes are the same, so every check but the limits gave the same answer.
        if known.longest_name > self.limits.max_str_len
            || known.at.field_count as u64 > self.limits.max_container_len
        {
            return None;
        }
        let start = self.pos;
        let at = known.at;
        self.classes.push(ClassAt {
            name: (start + at.name.0, start + at.name.1),
            encoded: (start, start + at.encoded.1),
            ..at
        });
        self.pos += at.encoded.1;
        Some(self.classes.len() - 1)
    }

    /// Remembers a definition just checked (see [`KnownClass`]).
    fn keep_known(&mut self, at: ClassAt) {
        let encoded = &self.buf[at.encoded.0..at.encoded.1];
        if encoded.len() > KNOWN_CLASS_MAX_LEN {
            return;
        }
        let start = at.encoded.0;
        let relative = ClassAt {
            name: (at.name.0 - start, at.name.1 - start),
            encoded: (0, encoded.len()),
            ..at
        };
        let def = ClassDef {
            name: &self.buf[at.name.0..at.name.1],
            version: at.version,
            field_count: at.field_count,
            encoded,
            fields_at: at.fields_at,
        };
        let longest_name = def
            .fields()
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0)
            .max(def.name.len());
        if self.known.len() >= KNOWN_CLASSES {
            self.known.remove(0);
        }
        self.known.push(KnownClass {
            encoded: encoded.into(),
            at: relative,
            longest_name: longest_name as u64,
        });
    }

    fn name(&mut self, what: &str) -> Result<&'a [u8], ReadError> {
        let n = self.data_len(self.limits.max_str_len, what)?;
        let s = self.take(n)?;
        if n == 0 || std::str::from_utf8(s).is_err() {
            return Err(self.err(format!("{what} is empty or not UTF-8")));
        }
        Ok(s)
    }

    /// The next event, or `None` once the root value is complete.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<Event<'a>>, ReadError> {
        if let Some(event) = self.next_atom() {
            return Ok(Some(event));
        }
        self.next_event_general()
    }

    /// Fast path for the common case: a fixed-size atom inside an open container, with
    /// no memo or limit bookkeeping due. `None` sends the caller to the general path,
    /// which handles every case (including these) with full checks.
    #[inline(always)]
    fn next_atom(&mut self) -> Option<Event<'a>> {
        if self.items >= self.limits.max_items {
            return None;
        }
        let depth = self.stack.len() as u64;
        let top = self.stack.last_mut()?;
        if top.remaining == 0 {
            // The common close: a container with no memo slot to fill.
            if top.kind == FrameKind::Container && top.fills == NO_SLOT {
                self.stack.pop();
                return Some(Event::End);
            }
            return None;
        }
        let rest = self.buf.get(self.pos..)?;
        let (&tag, data) = rest.split_first()?;
        let mut open = 0u64;
        let (len, event) = fixed_atom!(tag, rest, self.limits.max_str_len, else return None,
            // Short lists and dicts (filled in place, so their memo slot is usable at
            // once); every bound the general path checks is checked here too.
            0x60..=0x6f | 0x80..=0x8f => {
                let is_list = tag < SHORT_TUPLE;
                let n = u64::from(tag & 0x0f);
                open = if is_list { n } else { 2 * n };
                if n > self.limits.max_container_len
                    || open > data.len() as u64
                    || (open > 0 && depth > self.limits.max_depth)
                {
                    return None;
                }
                let event = if is_list {
                    Event::List(n as usize)
                } else {
                    Event::Dict(n as usize)
                };
                (1, event)
            },
            SHARE if !self.pending_share => {
                // A prefix, not a value: no child or item is counted.
                self.pending_share = true;
                self.pos += 1;
                return Some(Event::Share);
            },
            REF if !self.pending_share => {
                let mut pos = self.pos + 1;
                let slot = varint::get(self.buf, &mut pos)?;
                if !*self.memo.get(usize::try_from(slot).ok()?)? {
                    return None;
                }
                (pos - self.pos, Event::Ref(slot as usize))
            },
        );
        top.remaining -= 1;
        self.items += 1;
        self.pos += len;
        self.after_replace = false;
        self.take_share(true);
        if open > 0 {
            self.stack.push(Frame {
                remaining: open,
                kind: FrameKind::Container,
                fills: NO_SLOT,
                target: NO_SLOT,
            });
        }
        Some(event)
    }

    /// Reads a run of fixed-size atoms (ints, floats, None, bools and short strs) that
    /// (or references to finished values, or shared short strs as `SharedStr`)
    /// are direct children of the innermost open container, handing each to `sink` as the
    /// event [`Reader::next_event`] would give, with the same checks. It stops, leaving
    /// everything else to `next_event`, at any other tag, at the container's end, at the
    /// item limit, or after an atom for which `sink` returns `false`.
    #[inline]
    pub fn atom_run(&mut self, sink: impl FnMut(Event<'a>) -> bool) {
        self.atom_run_impl::<false>(sink);
    }

    /// Whether the next value certainly starts no run of atoms (it is a container, a
    /// record or another value that only [`Reader::next_event`] reads, or the body is
    /// done): every run (`atom_run`, `float_run`, `int_run`) would return at once, taking
    /// nothing, so a caller may skip them. One byte is looked at; `false` says nothing.
    #[inline(always)]
    pub fn no_run_next(&self) -> bool {
        const SHORT_CONTAINER_LAST: u8 = SHORT_DICT + SHORT_CONTAINER_MAX as u8;
        match self.buf.get(self.pos) {
            Some(&tag) => {
                matches!(tag, SHORT_LIST..=SHORT_CONTAINER_LAST)
                    || (tag >= LIST && tag != SHARE && tag != REF)
            }
            None => true,
        }
    }

    /// `atom_run` that also stops before a float or a fixed-size int, for a caller that
    /// takes those through [`Reader::float_run`] and [`Reader::int_run`].
    #[inline]
    pub fn atom_run_to_number(&mut self, sink: impl FnMut(Event<'a>) -> bool) {
        self.atom_run_impl::<true>(sink);
    }

    #[inline(always)]
    fn atom_run_impl<const STOP_AT_NUMBER: bool>(
        &mut self,
        mut sink: impl FnMut(Event<'a>) -> bool,
    ) {
        let Some(budget) = self.run_budget() else {
            return;
        };
        let buf: &'a [u8] = self.buf;
        let max_str = self.limits.max_str_len;
        // The unread bytes and the values still allowed, each one number kept across the
        // sink's calls (rather than a position and a count against the budget): the
        // callers' loops run short of registers.
        let Some(mut rest) = buf.get(self.pos..) else {
            return;
        };
        let mut left = budget;
        while left > 0 {
            let Some((&tag, data)) = rest.split_first() else {
                break;
            };
            if STOP_AT_NUMBER && is_fixed_number(tag) {
                break;
            }
            let (len, event) = fixed_atom!(tag, rest, max_str, else break,
                // A shared short str (dict keys, mostly): the marker and the str together,
                // as one `SharedStr`.
                SHARE => match data.first() {
                    Some(&t @ SHORT_STR..=SHORT_STR_LAST) => {
                        match fixed_atom!(t, data, max_str, else break) {
                            (n, Event::Str(s)) => {
                                self.memo.push(true);
                                (1 + n, Event::SharedStr(s))
                            }
                            _ => break,
                        }
                    }
                    _ => break,
                },
                // A reference to a finished value, with a one- or two-byte slot number;
                // anything else (and every error) is left to the general path.
                REF => {
                    let (slot, len) = match *data {
                        [b, ..] if b < 0x80 => (usize::from(b), 2),
                        [b0, b1, ..] if b1 < 0x80 => {
                            (usize::from(b0 & 0x7f) | usize::from(b1) << 7, 3)
                        }
                        _ => break,
                    };
                    if self.memo.get(slot) != Some(&true) {
                        break;
                    }
                    (len, Event::Ref(slot))
                },
            );
            debug_assert!(len <= rest.len());
            // SAFETY: every atom above was read from `rest` whole (each arm checks that its
            // encoding lies within `rest` before it gives its length), so `len` bytes remain.
            rest = unsafe { rest.get_unchecked(len..) };
            left -= 1;
            if !sink(event) {
                break;
            }
        }
        self.end_run(budget - left, buf.len() - rest.len());
    }

    /// The floats at the front of the innermost open container, consumed (each a FLOAT64
    /// or FLOAT32), with the same bounds as `atom_run`. Empty when the next child is
    /// anything else. Out of line: its scan is laid out on its own registers, not on
    /// those of the caller's loop (one call per run).
    #[inline(never)]
    pub fn float_run(&mut self) -> FloatRun<'a> {
        let Some(budget) = self.run_budget() else {
            return FloatRun::default();
        };
        let buf = self.buf;
        let start = self.pos;
        let mut pos = start;
        let mut n = 0u64;
        while n < budget {
            match buf.get(pos) {
                Some(&FLOAT64) if buf.len() - pos >= fixed_len(FLOAT64) => {
                    pos += fixed_len(FLOAT64)
                }
                Some(&FLOAT32) if buf.len() - pos >= fixed_len(FLOAT32) => {
                    pos += fixed_len(FLOAT32)
                }
                _ => break,
            }
            n += 1;
        }
        self.end_run(n, pos);
        FloatRun(&buf[start..pos])
    }

    /// The ints at the front of the innermost open container that share one encoding
    /// (every one-byte small int counts as one), consumed, with the same bounds as
    /// `atom_run`. Empty when the next child is not such an int.
    #[inline(always)]
    pub fn int_run(&mut self) -> IntRun<'a> {
        let buf = self.buf;
        let start = self.pos;
        let Some(&first) = buf.get(start) else {
            return IntRun::default();
        };
        let tag = match first {
            0..=SMALL_INT_MAX => SMALL_INT_MAX,
            UINT8..=INT32 => first,
            _ => return IntRun::default(),
        };
        let len = fixed_len(tag);
        let Some(budget) = self.run_budget() else {
            return IntRun::default();
        };
        let mut pos = start;
        let mut n = 0u64;
        if tag == SMALL_INT_MAX {
            while n < budget && buf.get(pos).is_some_and(|&t| t <= SMALL_INT_MAX) {
                pos += 1;
                n += 1;
            }
        } else {
            // At most as many as the input holds whole: one bound, checked once per int.
            let bound = budget.min(((buf.len() - pos) / len) as u64);
            while n < bound && buf[pos] == tag {
                pos += len;
                n += 1;
            }
        }
        self.end_run(n, pos);
        IntRun {
            tag,
            bytes: &buf[start..pos],
        }
    }

    #[inline(never)]
    fn next_event_general(&mut self) -> Result<Option<Event<'a>>, ReadError> {
        let Some(top) = self.stack.last_mut() else {
            return Ok(None);
        };
        if top.remaining == 0 {
            let frame = *top;
            self.stack.pop();
            return self.close(frame);
        }
        let offset = self.pos;
        let tag = self.byte()?;
        if tag == SHARE {
            if self.pending_share {
                return Err(ReadError::malformed(
                    offset,
                    "SHARE must be followed by a value",
                ));
            }
            self.pending_share = true;
            return Ok(Some(Event::Share));
        }
        if self.after_replace && tag == REPLACE {
            return Err(ReadError::malformed(
                offset,
                "REPLACE may not wrap another REPLACE",
            ));
        }
        self.after_replace = false;
        // The value starts: it is one child of the open frame.
        if let Some(top) = self.stack.last_mut() {
            top.remaining -= 1;
        }
        self.items += 1;
        if self.items > self.limits.max_items {
            return Err(ReadError::limit(
                offset,
                format!("more than the limit of {} objects", self.limits.max_items),
            ));
        }
        let event = match tag {
            0..=SMALL_INT_MAX
            | SHORT_STR..=SHORT_STR_LAST
            | NONE
            | FALSE
            | TRUE
            | UINT8..=INT32
            | FLOAT64
            | FLOAT32 => {
                if let SHORT_STR..=SHORT_STR_LAST = tag {
                    let n = tag - SHORT_STR;
                    if u64::from(n) > self.limits.max_str_len {
                        return Err(ReadError::limit(
                            offset,
                            format!("str of {n} bytes exceeds the limit"),
                        ));
                    }
                }
                let Some((len, event)) = fixed_atom(tag, &self.buf[offset..], u64::MAX) else {
                    return Err(self.truncated());
                };
                self.pos = offset + len;
                self.atom(event)
            }
            0x60..=0x6f => {
                let n = usize::from(tag - SHORT_LIST);
                self.check_len(n as u64, 1)?;
                self.open(n as u64, true)?;
                Event::List(n)
            }
            0x70..=0x7f => {
                let n = usize::from(tag - SHORT_TUPLE);
                self.check_len(n as u64, 1)?;
                self.open(n as u64, false)?;
                Event::Tuple(n)
            }
            0x80..=0x8f => {
                let n = usize::from(tag - SHORT_DICT);
                self.check_len(n as u64, 2)?;
                self.open(2 * n as u64, true)?;
                Event::Dict(n)
            }
            ELLIPSIS => self.atom(Event::Ellipsis),
            BIGINT => {
                let max = self.limits.max_int_bytes();
                let n = self.varint()?;
                if n > max {
                    return Err(ReadError::limit(
                        offset,
                        format!(
                            "int of {n} bytes exceeds the limit of {} digits",
                            self.limits.max_int_digits
                        ),
                    ));
                }
                if n == 0 {
                    return Err(ReadError::malformed(offset, "int of zero bytes"));
                }
                let s = self.take(n as usize)?;
                if n <= 8 {
                    let fill = if s[s.len() - 1] & 0x80 != 0 { 0xff } else { 0 };
                    let mut a = [fill; 8];
                    a[..s.len()].copy_from_slice(s);
                    self.atom(Event::Int(i64::from_le_bytes(a)))
                } else {
                    self.atom(Event::BigInt(s))
                }
            }
            COMPLEX => {
                let re = f64::from_le_bytes(self.array()?);
                let im = f64::from_le_bytes(self.array()?);
                self.atom(Event::Complex(re, im))
            }
            STR => {
                let n = self.data_len(self.limits.max_str_len, "str")?;
                let s = self.take(n)?;
                self.atom(Event::Str(s))
            }
            STR_SURROGATES => {
                let n = self.data_len(self.limits.max_str_len, "str")?;
                let s = self.take(n)?;
                self.atom(Event::StrSurrogates(s))
            }
            BYTES => {
                let n = self.data_len(self.limits.max_bytes_len, "bytes")?;
                let s = self.take(n)?;
                self.atom(Event::Bytes(s))
            }
            BYTEARRAY => {
                let n = self.data_len(self.limits.max_bytes_len, "bytearray")?;
                let s = self.take(n)?;
                self.atom(Event::ByteArray(s))
            }
            LIST => {
                let n = self.counted_len(1)?;
                self.open(n as u64, true)?;
                Event::List(n)
            }
            TUPLE => {
                let n = self.counted_len(1)?;
                self.open(n as u64, false)?;
                Event::Tuple(n)
            }
            DICT | ORDERED_DICT | COUNTER => {
                let n = self.counted_len(2)?;
                self.open(2 * n as u64, true)?;
                match tag {
                    DICT => Event::Dict(n),
                    ORDERED_DICT => Event::OrderedDict(n),
                    _ => Event::Counter(n),
                }
            }
            SET => {
                let n = self.counted_len(1)?;
                self.open(n as u64, true)?;
                Event::Set(n)
            }
            FROZENSET => {
                let n = self.counted_len(1)?;
                self.open(n as u64, false)?;
                Event::FrozenSet(n)
            }
            DEFAULT_DICT => {
                let factory = self.byte()?;
                let n = self.counted_len(2)?;
                // A factory that is a value of its own comes after the pairs.
                let factory_value = u64::from(factory == FACTORY_VALUE);
                self.open(2 * n as u64 + factory_value, true)?;
                Event::DefaultDict { factory, len: n }
            }
            DEQUE => {
                let m = self.varint()?;
                let n = self.counted_len(1)?;
                self.open(n as u64, true)?;
                Event::Deque {
                    maxlen: m.checked_sub(1),
                    len: n,
                }
            }
            RANGE => {
                self.open(3, false)?;
                Event::Range
            }
            SLICE => {
                self.open(3, false)?;
                Event::Slice
            }
            STD => {
                let kind = self.varint()?;
                self.open(1, false)?;
                Event::Std(kind)
            }
            OBJECT => {
                let class = self.class_ref()?;
                let n = self.classes[class].field_count;
                self.check_len(n as u64, 1)?;
                self.open(n as u64, true)?;
                Event::Object { class, len: n }
            }
            ENUM => {
                let class = self.class_ref()?;
                if self.classes[class].field_count != 0 {
                    return Err(ReadError::malformed(offset, "an enum class has no fields"));
                }
                self.open(1, false)?;
                Event::Enum { class }
            }
            CLASS | BUILTIN | EXCEPTION | DERIVED => self.value_record(tag, offset)?,
            REF => {
                if self.pending_share {
                    return Err(ReadError::malformed(offset, "a reference cannot be shared"));
                }
                let slot = self.varint()?;
                match self.memo.get(slot as usize) {
                    Some(true) => Event::Ref(slot as usize),
                    Some(false) => {
                        return Err(ReadError::malformed(
                            offset,
                            format!("reference to memo slot {slot} before its value is complete"),
                        ))
                    }
                    None => {
                        return Err(ReadError::malformed(
                            offset,
                            format!("reference to unknown memo slot {slot}"),
                        ))
                    }
                }
            }
            REPLACE => {
                if self.pending_share {
                    return Err(ReadError::malformed(
                        offset,
                        "a replaced value cannot be shared",
                    ));
                }
                let slot = self.varint()?;
                if slot >= self.memo.len() as u64 + self.remaining_bytes() {
                    return Err(ReadError::malformed(
                        offset,
                        format!("replacement by unknown memo slot {slot}"),
                    ));
                }
                if self.stack.len() as u64 > self.limits.max_depth {
                    return Err(ReadError::limit(
                        offset,
                        format!("nesting deeper than the limit of {}", self.limits.max_depth),
                    ));
                }
                self.stack.push(Frame {
                    remaining: 1,
                    kind: FrameKind::Replace,
                    fills: NO_SLOT,
                    target: slot as u32,
                });
                self.after_replace = true;
                Event::Replace(slot as usize)
            }
            _ => {
                return Err(ReadError::malformed(
                    offset,
                    format!("unknown tag 0x{tag:02x}"),
                ))
            }
        };
        Ok(Some(event))
    }

    /// The records of classes, builtins, exceptions and builtin subclasses (kept out of
    /// the dispatch above, off the paths of the common values).
    #[cold]
    #[inline(never)]
    fn value_record(&mut self, tag: u8, offset: usize) -> Result<Event<'a>, ReadError> {
        let record = match tag {
            CLASS => "CLASS",
            BUILTIN => "BUILTIN",
            EXCEPTION => "EXCEPTION",
            _ => "DERIVED",
        };
        // Every error names the record (the offset says where in it).
        self.value_record_body(tag, offset).map_err(|mut e| {
            e.message = format!("{record} record at byte {offset}: {}", e.message);
            e
        })
    }

    fn value_record_body(&mut self, tag: u8, offset: usize) -> Result<Event<'a>, ReadError> {
        let bad = |message: String| ReadError::malformed(offset, message);
        match tag {
            CLASS | DERIVED => {
                let class = self.class_ref()?;
                if self.classes[class].field_count != 0 {
                    return Err(bad("the class entry of this record has no fields".into()));
                }
                if tag == CLASS {
                    return Ok(self.atom(Event::Class { class }));
                }
                let code = self.byte()?;
                if code == 0 || code > base::LAST {
                    return Err(bad(format!("unknown builtin base code {code}")));
                }
                if code == base::DEQUE {
                    let m = self.varint()?;
                    let len = self.counted_len(1)?;
                    // The items, then the state.
                    self.open_frames(len as u64 + 1, None)?;
                    return Ok(Event::DerivedDeque {
                        class,
                        maxlen: m.checked_sub(1),
                        len,
                    });
                }
                if base::is_mutable(code) {
                    let factory = if code == base::DEFAULT_DICT {
                        self.byte()?
                    } else {
                        0
                    };
                    let per_item = match code {
                        base::DICT | base::ORDERED_DICT | base::DEFAULT_DICT => 2,
                        _ => 1,
                    };
                    let len = self.counted_len(per_item)?;
                    // The items (two values per dict entry), a factory that is a value of
                    // its own, then the state.
                    let factory_value = u64::from(factory == FACTORY_VALUE);
                    self.open_frames(per_item * len as u64 + factory_value + 1, None)?;
                    Ok(Event::Derived {
                        class,
                        base: code,
                        factory,
                        len,
                    })
                } else {
                    self.open_frames(1, Some(1))?;
                    Ok(Event::Derived {
                        class,
                        base: code,
                        factory: 0,
                        len: 1,
                    })
                }
            }
            BUILTIN => {
                let name = self.name("the name")?;
                Ok(self.atom(Event::Builtin(name)))
            }
            _ => {
                let name = self.name("the class name")?;
                self.open_frames(1, Some(1))?;
                Ok(Event::Exception(name))
            }
        }
    }

    /// Opens a record of `children` values. With `first = Some(n)`, `n` values come
    /// before them, in a frame of their own whose end makes the pending memo slot usable
    /// (the value is made from them); else the slot is usable at once.
    fn open_frames(&mut self, children: u64, first: Option<u64>) -> Result<(), ReadError> {
        match first {
            None => {
                let slot = self.take_share(true);
                debug_assert!(slot.is_none() || children > 0);
                self.push(children, NO_SLOT)
            }
            Some(n) => {
                let slot = self.take_share(false).unwrap_or(NO_SLOT);
                self.push(children, NO_SLOT)?;
                self.push(n, slot)
            }
        }
    }

    #[inline(always)]
    fn atom(&mut self, event: Event<'a>) -> Event<'a> {
        self.take_share(true);
        event
    }

    fn close(&mut self, frame: Frame) -> Result<Option<Event<'a>>, ReadError> {
        match frame.kind {
            FrameKind::Root => {
                if self.pos != self.buf.len() {
                    return Err(self.err(format!(
                        "{} trailing bytes after the root value",
                        self.buf.len() - self.pos
                    )));
                }
                Ok(None)
            }
            FrameKind::Container => {
                if frame.fills != NO_SLOT {
                    self.memo[frame.fills as usize] = true;
                }
                Ok(Some(Event::End))
            }
            FrameKind::Replace => {
                if !self
                    .memo
                    .get(frame.target as usize)
                    .copied()
                    .unwrap_or(false)
                {
                    return Err(self.err(format!(
                        "replacement by memo slot {} that was never filled",
                        frame.target
                    )));
                }
                Ok(Some(Event::End))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Header;
    use crate::writer::Writer;

    fn body(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::default();
        f(&mut w);
        let (buf, start) = w.finish(None);
        let h = Header::parse(&buf[start..]).unwrap();
        buf[start + h.header_len..].to_vec()
    }

    fn events(body: &[u8]) -> Result<Vec<Event<'_>>, ReadError> {
        let mut r = Reader::new(body, Limits::default());
        let mut out = Vec::new();
        while let Some(e) = r.next_event()? {
            out.push(e);
        }
        Ok(out)
    }

    #[test]
    fn reads_nested_containers() {
        let b = body(|w| {
            w.list(2);
            w.int(1);
            w.dict(1);
            w.str(b"k");
            w.float(0.5);
        });
        assert_eq!(
            events(&b).unwrap(),
            vec![
                Event::List(2),
                Event::Int(1),
                Event::Dict(1),
                Event::Str(b"k"),
                Event::Float(0.5),
                Event::End,
                Event::End
            ]
        );
    }

    #[test]
    fn no_run_next_only_where_every_run_takes_nothing() {
        let mut skipped = Vec::new();
        for tag in 0..=u8::MAX {
            // A list of one item whose first byte is `tag`, with bytes enough for any
            // fixed-size encoding after it.
            let mut b = vec![SHORT_LIST + 1, tag];
            b.extend_from_slice(&[0x01; 16]);
            let mut r = Reader::new(&b, Limits::default());
            assert_eq!(r.next_event().unwrap(), Some(Event::List(1)));
            if !r.no_run_next() {
                continue;
            }
            skipped.push(tag);
            let at = r.offset();
            assert!(r.float_run().is_empty(), "tag {tag:#x}");
            assert!(r.int_run().is_empty(), "tag {tag:#x}");
            let mut taken = 0;
            r.atom_run(|_| {
                taken += 1;
                true
            });
            assert_eq!((taken, r.offset()), (0, at), "tag {tag:#x}");
        }
        // Containers, records and the other values only `next_event` reads.
        for tag in [
            SHORT_LIST,
            SHORT_TUPLE + 3,
            SHORT_DICT + 15,
            LIST,
            DICT,
            OBJECT,
            LAST,
        ] {
            assert!(skipped.contains(&tag), "tag {tag:#x}");
        }
        // Atoms, shares and references are always tried.
        for tag in [0, SHORT_STR, NONE, FLOAT64, SHARE, REF] {
            assert!(!skipped.contains(&tag), "tag {tag:#x}");
        }
        // The end of the body (the root complete) takes no run either.
        let b = [0x05];
        let mut r = Reader::new(&b, Limits::default());
        assert_eq!(r.next_event().unwrap(), Some(Event::Int(5)));
        assert!(r.no_run_next());
    }

    #[test]
    fn atom_runs_give_the_same_events() {
        let b = body(|w| {
            w.list(12);
            w.int(1);
            w.int(-1);
            w.int(200);
            w.int(-300);
            w.int(70000);
            w.int(-70000);
            w.float(0.1);
            w.float(0.5);
            w.str(b"abc");
            w.tuple(0);
            w.tag(TRUE);
            w.tag(NONE);
        });
        let expected = events(&b).unwrap();
        let mut r = Reader::new(&b, Limits::default());
        let mut got = Vec::new();
        loop {
            r.atom_run(|e| {
                got.push(e);
                true
            });
            match r.next_event().unwrap() {
                Some(e) => got.push(e),
                None => break,
            }
        }
        assert_eq!(got, expected);
        // The item limit still applies inside a run.
        let limits = Limits {
            max_items: 5,
            ..Limits::default()
        };
        let mut r = Reader::new(&b, limits);
        let mut n = 0;
        let err = loop {
            r.atom_run(|_| {
                n += 1;
                true
            });
            match r.next_event() {
                Ok(Some(_)) => n += 1,
                Ok(None) => panic!("limit not enforced"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind, crate::ErrorKind::Limit);
        assert!(n <= 5);
    }

    /// `b` validates; every cut of it is an error that `validate` reports as the event
    /// reader does; every byte flip gets the same answer from both; the runs self-check
    /// holds throughout.
    fn valid_and_every_cut_and_flip_agrees(b: &[u8]) {
        Reader::new(b, Limits::default()).validate().unwrap();
        Reader::runs_self_check(b, Limits::default()).unwrap();
        for cut in 0..b.len() {
            assert!(events(&b[..cut]).is_err());
            let got = Reader::new(&b[..cut], Limits::default()).validate();
            assert_eq!(got, events(&b[..cut]).map(|_| ()));
        }
        for i in 0..b.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut m = b.to_vec();
                m[i] ^= flip;
                let plain = events(&m).map(|_| ());
                assert_eq!(Reader::new(&m, Limits::default()).validate(), plain);
                Reader::runs_self_check(&m, Limits::default()).unwrap();
            }
        }
    }

    /// Every event, reading atom runs wherever the reader offers them (a run's
    /// `SharedStr` given as the `Share` and `Str` that `next_event` gives).
    fn events_with_runs(b: &[u8]) -> Result<Vec<Event<'_>>, ReadError> {
        let mut r = Reader::new(b, Limits::default());
        let mut got = Vec::new();
        loop {
            r.atom_run(|e| {
                if let Event::SharedStr(s) = e {
                    got.extend([Event::Share, Event::Str(s)]);
                } else {
                    got.push(e);
                }
                true
            });
            match r.next_event()? {
                Some(e) => got.push(e),
                None => return Ok(got),
            }
        }
    }

    #[test]
    fn atom_runs_read_references_with_the_same_checks() {
        // 200 shared strs, then a list of references with one- and two-byte slot numbers.
        let b = body(|w| {
            w.list(201);
            for i in 0..200u32 {
                w.share();
                w.str(format!("s{i}").as_bytes());
            }
            w.list(4);
            w.reference(0);
            w.reference(127);
            w.reference(128);
            w.reference(199);
        });
        let expected = events(&b).unwrap();
        assert_eq!(events_with_runs(&b).unwrap(), expected);
        assert!(expected.contains(&Event::Ref(199)));
        // A reference to an unfinished tuple or an unknown slot fails the same way in a run.
        for bad in [
            body(|w| {
                w.share();
                w.tuple(2);
                w.int(1);
                w.reference(0);
            }),
            body(|w| {
                w.list(2);
                w.int(1);
                w.reference(300);
            }),
        ] {
            let plain = events(&bad).unwrap_err();
            let runs = events_with_runs(&bad).unwrap_err();
            assert_eq!((plain.offset, plain.message), (runs.offset, runs.message));
        }
    }

    #[test]
    fn validate_agrees_with_reading_on_every_flip_and_cut() {
        let b = body(|w| {
            w.list(9);
            w.int(5);
            w.int(-300);
            w.int(70000);
            w.float(0.1);
            w.str(b"abcdef");
            w.tag(NONE);
            w.share();
            w.str(b"shared");
            w.reference(0);
            w.dict(1);
            w.str(b"k");
            w.float(2.5);
        });
        let outcome = |b: &[u8]| events(b).map(|_| ()).map_err(|e| (e.offset, e.message));
        let check = |b: &[u8]| {
            let got = Reader::new(b, Limits::default())
                .validate()
                .map_err(|e| (e.offset, e.message));
            assert_eq!(got, outcome(b), "body {b:?}");
        };
        check(&b);
        for cut in 0..b.len() {
            check(&b[..cut]);
        }
        for i in 0..b.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut m = b.clone();
                m[i] ^= flip;
                check(&m);
            }
        }
        // Limits hold inside skipped runs too.
        for limits in [
            Limits {
                max_items: 4,
                ..Limits::default()
            },
            Limits {
                max_str_len: 3,
                ..Limits::default()
            },
        ] {
            let plain = {
                let mut r = Reader::new(&b, limits);
                loop {
                    match r.next_event() {
                        Ok(Some(_)) => {}
                        Ok(None) => break Ok(()),
                        Err(e) => break Err((e.offset, e.message)),
                    }
                }
            };
            assert!(plain.is_err());
            let got = Reader::new(&b, limits)
                .validate()
                .map_err(|e| (e.offset, e.message));
            assert_eq!(got, plain);
        }
    }

    #[test]
    fn number_runs_and_atom_runs_give_the_same_values() {
        let b = body(|w| {
            w.list(20);
            w.float(0.1);
            w.float(0.5); // 4-byte encoding
            w.float(-2.3);
            w.int(7);
            w.int(8);
            w.int(-1);
            w.int(-2);
            w.int(200);
            w.int(-300);
            w.int(300);
            w.int(70000);
            w.int(-70000);
            w.int(1 << 40); // a BIGINT: not in a run
            w.int(63);
            w.str(b"x");
            w.float(f64::NAN);
            w.float(1e300);
            w.list(0);
            w.float(3.25);
            w.float(0.2);
        });
        Reader::runs_self_check(&b, Limits::default()).unwrap();
        let tight = Limits {
            max_items: 9,
            max_str_len: 0,
            ..Limits::default()
        };
        Reader::runs_self_check(&b, tight).unwrap();
        for cut in 0..b.len() {
            Reader::runs_self_check(&b[..cut], Limits::default()).unwrap();
        }
        // The item limit stops a float run too.
        let limits = Limits {
            max_items: 2,
            ..Limits::default()
        };
        let mut r = Reader::new(&b, limits);
        assert_eq!(r.next_event().unwrap(), Some(Event::List(20)));
        assert_eq!(r.float_run().bytes().len(), 9);
    }

    #[test]
    fn memo_references_must_be_complete() {
        let b = body(|w| {
            w.share();
            w.list(1);
            w.reference(0);
        });
        assert!(events(&b).is_ok());
        let b = body(|w| {
            w.share();
            w.tuple(1);
            w.reference(0);
        });
        assert!(events(&b)
            .unwrap_err()
            .message
            .contains("before its value is complete"));
        let b = body(|w| w.reference(3));
        assert!(events(&b).is_err());
    }

    #[test]
    fn rejects_trailing_unknown_and_huge_counts() {
        assert!(events(&[0x90, 0x90])
            .unwrap_err()
            .message
            .contains("trailing"));
        assert!(events(&[0xff]).unwrap_err().message.contains("unknown tag"));
        assert!(events(&[LIST, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert!(events(&[]).is_err());
    }

    #[test]
    fn deep_nesting_is_a_limit_error() {
        let mut b = vec![SHORT_LIST + 1; 1_000_000];
        b.push(NONE);
        let err = events(&b).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::Limit);
    }

    #[test]
    fn class_definitions_and_references() {
        let b = body(|w| {
            w.list(2);
            w.class_new(OBJECT, b"m.P", 2, [&b"x"[..], b"y"].into_iter());
            w.int(1);
            w.int(2);
            w.class_ref(OBJECT, 0);
            w.int(3);
            w.int(4);
        });
        let mut r = Reader::new(&b, Limits::default());
        let mut n = 0;
        while let Some(e) = r.next_event().unwrap() {
            if let Event::Object { class, len } = e {
                assert_eq!((class, len), (0, 2));
                n += 1;
            }
        }
        assert_eq!(n, 2);
        let def = r.class(0).unwrap();
        assert_eq!((def.name, def.version), (&b"m.P"[..], 2));
        assert_eq!(def.fields().collect::<Vec<_>>(), [&b"x"[..], b"y"]);
        assert_eq!(def.fields().len(), 2);
        let b = body(|w| w.class_new(OBJECT, b"m.P", 1, [&b"__dict__"[..]].into_iter()));
        assert!(events(&b).unwrap_err().message.contains("dunder"));
    }

    #[test]
    fn a_definition_met_in_an_earlier_record_reads_the_same_within_the_limits() {
        let record = |fields: &[&[u8]]| {
            body(|w| {
                w.list(2);
                w.class_new(OBJECT, b"m.Point", 7, fields.iter().copied());
                for _ in fields {
                    w.int(1);
                }
                w.class_new(OBJECT, b"m.Other", 1, [&b"a"[..]].into_iter());
                w.int(2);
            })
        };
        let read = |b: &[u8], limits: Limits, buffers: ReaderBuffers| {
            let mut r = Reader::with_buffers(b, limits, buffers);
            let mut events = Vec::new();
            let outcome = loop {
                match r.next_event() {
                    Ok(Some(e)) => events.push(format!("{e:?}")),
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            let defs: Vec<_> = (0..2)
                .filter_map(|i| r.class(i))
                .map(|d| {
                    (
                        d.name.to_vec(),
                        d.version,
                        d.fields().map(<[u8]>::to_vec).collect::<Vec<_>>(),
                        d.encoded.to_vec(),
                    )
                })
                .collect();
            (outcome.map(|()| (events, defs)), r.take_buffers())
        };
        let fields: [&[u8]; 3] = [b"x", b"yy", b"zzz"];
        let b = record(&fields);
        let (first, buffers) = read(&b, Limits::default(), ReaderBuffers::default());
        let first = first.unwrap();
        assert_eq!(
            first.1[0].2,
            [b"x".to_vec(), b"yy".to_vec(), b"zzz".to_vec()]
        );
        // Read again with the definitions known: the same events and definitions.
        let (again, buffers) = read(&b, Limits::default(), buffers);
        assert_eq!(again.unwrap(), first);
        // A known definition is still held to tighter limits.
        let names = Limits {
            max_str_len: 6,
            ..Limits::default()
        };
        let (tight, buffers) = read(&b, names, buffers);
        assert!(tight.unwrap_err().message.contains("exceeds the limit"));
        let count = Limits {
            max_container_len: 2,
            ..Limits::default()
        };
        let (tight, buffers) = read(&b, count, buffers);
        assert!(tight.unwrap_err().message.contains("exceeds the limit"));
        // A definition that only starts like a known one is read in full.
        let b = record(&[b"x", b"yy"]);
        let (other, _) = read(&b, Limits::default(), buffers);
        assert_eq!(other.unwrap().1[0].2, [b"x".to_vec(), b"yy".to_vec()]);
    }

    #[test]
    fn fixed_atoms_are_decoded_by_one_function_in_every_lane() {
        // For every tag: the fixed-size atoms (and only they) decode, to the length
        // `fixed_len` and the table give, and to the event the general path gives; with a
        // payload cut short, none decodes.
        let payload = b"\x85\x01\xfe\x7f\x40\x09\x21\xfb\x54\x44\x2d, and text up to 31 bytes";
        for tag in 0..=255u8 {
            let mut enc = vec![tag];
            enc.extend_from_slice(payload);
            let len = fixed_len(tag);
            match fixed_atom(tag, &enc, u64::MAX) {
                Some((n, event)) => {
                    assert_eq!(n, len, "tag {tag:#x}");
                    let show = |e: Option<Event<'_>>| match e {
                        Some(Event::Float(f)) => format!("Float({:x})", f.to_bits()),
                        e => format!("{e:?}"),
                    };
                    let mut r = Reader::new(&enc[..n], Limits::default());
                    assert_eq!(show(r.next_event_general().unwrap()), show(Some(event)));
                    if n > 1 {
                        assert!(fixed_atom(tag, &enc[..n - 1], u64::MAX).is_none());
                    }
                    assert_eq!(usize::from(FIXED_LEN[usize::from(tag)]), n);
                    assert_eq!(
                        is_fixed_number(tag),
                        matches!(event, Event::Int(_) | Event::Float(_))
                    );
                }
                None => assert_eq!(len, 0, "tag {tag:#x}"),
            }
        }
    }

    #[test]
    fn class_builtin_exception_and_derived_records() {
        // [CLASS m.D, BUILTIN int, shared EXCEPTION ValueError(("x",), (None, None, REF
        // itself, False)), shared DERIVED dict m.D {"self": REF itself} state {}, DERIVED
        // tuple m.D (1,) state {"a": 2}]
        let b = body(|w| {
            w.list(5);
            w.class_new(CLASS, b"m.D", 1, std::iter::empty());
            w.builtin(b"int");
            w.share();
            w.exception(b"ValueError");
            w.tuple(1);
            w.str(b"x");
            w.tuple(4);
            w.tag(NONE);
            w.tag(NONE);
            w.reference(0);
            w.tag(FALSE);
            w.share();
            w.class_ref(DERIVED, 0);
            w.derived_base(base::DICT, 1);
            w.str(b"self");
            w.reference(1);
            w.dict(0);
            w.class_ref(DERIVED, 0);
            w.derived_base(base::TUPLE, 0);
            w.tuple(1);
            w.int(1);
            w.dict(1);
            w.str(b"a");
            w.int(2);
        });
        let ev = events(&b).unwrap();
        assert_eq!(ev[1], Event::Class { class: 0 });
        assert_eq!(ev[2], Event::Builtin(b"int"));
        assert_eq!(ev[4], Event::Exception(b"ValueError"));
        assert!(ev.contains(&Event::Derived {
            class: 0,
            base: base::DICT,
            factory: 0,
            len: 1
        }));
        assert!(ev.contains(&Event::Derived {
            class: 0,
            base: base::TUPLE,
            factory: 0,
            len: 1
        }));
        // 1 list, 2 tuples and 2 frames of the exception, 1 frame of the dict subclass,
        // 2 frames, 1 tuple and 1 dict of the tuple subclass.
        assert_eq!(ev.iter().filter(|e| **e == Event::End).count(), 10);
        Reader::new(&b, Limits::default()).validate().unwrap();
        Reader::runs_self_check(&b, Limits::default()).unwrap();
        for cut in 0..b.len() {
            assert!(events(&b[..cut]).is_err());
            Reader::runs_self_check(&b[..cut], Limits::default()).unwrap();
        }
        for i in 0..b.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut m = b.clone();
                m[i] ^= flip;
                let _ = events(&m);
                Reader::runs_self_check(&m, Limits::default()).unwrap();
            }
        }
    }

    #[test]
    fn derived_mappings_exceptions_and_factory_values() {
        // [shared DEFAULT_DICT (FACTORY_VALUE) {1: REF itself}, factory CLASS m.F;
        //  shared DERIVED defaultdict m.D (FACTORY_VALUE) {"k": REF itself}, factory BUILTIN
        //  list, state {}; DERIVED defaultdict m.D (code 1) {}, state {};
        //  DERIVED OrderedDict m.D {"a": 1}, state {}; shared DERIVED exception m.D ("x",),
        //  state (REF itself, None, None, False); DERIVED bytearray m.D, DERIVED complex m.D]
        let b = body(|w| {
            w.list(7);
            w.share();
            w.default_dict(FACTORY_VALUE, 1);
            w.int(1);
            w.reference(0);
            w.class_new(CLASS, b"m.F", 1, std::iter::empty());
            w.share();
            w.class_new(DERIVED, b"m.D", 1, std::iter::empty());
            w.derived_default_dict(FACTORY_VALUE, 1);
            w.str(b"k");
            w.reference(1);
            w.builtin(b"list");
            w.dict(0);
            w.class_ref(DERIVED, 1);
            w.derived_default_dict(1, 0);
            w.dict(0);
            w.class_ref(DERIVED, 1);
            w.derived_base(base::ORDERED_DICT, 1);
            w.str(b"a");
            w.int(1);
            w.dict(0);
            w.share();
            w.class_ref(DERIVED, 1);
            w.derived_base(base::EXCEPTION, 0);
            w.tuple(1);
            w.str(b"x");
            w.tuple(4);
            w.reference(2);
            w.tag(NONE);
            w.tag(NONE);
            w.tag(FALSE);
            w.class_ref(DERIVED, 1);
            w.derived_base(base::BYTEARRAY, 0);
            w.bytearray(b"ab");
            w.dict(0);
            w.class_ref(DERIVED, 1);
            w.derived_base(base::COMPLEX, 0);
            w.complex(1.0, 2.0);
            w.dict(0);
        });
        let ev = events(&b).unwrap();
        assert!(ev.contains(&Event::DefaultDict {
            factory: FACTORY_VALUE,
            len: 1
        }));
        for (base, factory, len) in [
            (base::DEFAULT_DICT, FACTORY_VALUE, 1),
            (base::DEFAULT_DICT, 1, 0),
            (base::ORDERED_DICT, 0, 1),
            (base::EXCEPTION, 0, 1),
            (base::BYTEARRAY, 0, 1),
            (base::COMPLEX, 0, 1),
        ] {
            let e = Event::Derived {
                class: 1,
                base,
                factory,
                len,
            };
            assert!(ev.contains(&e), "{e:?} missing from {ev:?}");
        }
        valid_and_every_cut_and_flip_agrees(&b);
        // Without the factory value the pairs would end the record early: the reader
        // counts it as a child.
        let short = body(|w| {
            w.default_dict(FACTORY_VALUE, 0);
        });
        assert!(events(&short).unwrap_err().message.contains("truncated"));
        // A reference to an exception from inside its own arguments is refused.
        let b = body(|w| {
            w.share();
            w.class_new(DERIVED, b"m.E", 1, std::iter::empty());
            w.derived_base(base::EXCEPTION, 0);
            w.tuple(1);
            w.reference(0);
            w.tuple(0);
        });
        assert!(events(&b)
            .unwrap_err()
            .message
            .contains("before its value is complete"));
    }

    #[test]
    fn derived_deques_carry_their_maxlen() {
        // [shared DERIVED deque m.Q maxlen 2 [1, REF itself] state {"a": 1},
        //  DERIVED deque m.Q maxlen None [] state {}]
        let b = body(|w| {
            w.list(2);
            w.share();
            w.class_new(DERIVED, b"m.Q", 1, std::iter::empty());
            w.derived_deque(Some(2), 2);
            w.int(1);
            w.reference(0);
            w.dict(1);
            w.str(b"a");
            w.int(1);
            w.class_ref(DERIVED, 0);
            w.derived_deque(None, 0);
            w.dict(0);
        });
        assert_eq!(&b[b.len() - 6..], &[DERIVED, 1, base::DEQUE, 0, 0, 0x80]);
        let ev = events(&b).unwrap();
        for e in [
            Event::DerivedDeque {
                class: 0,
                maxlen: Some(2),
                len: 2,
            },
            Event::DerivedDeque {
                class: 0,
                maxlen: None,
                len: 0,
            },
        ] {
            assert!(ev.contains(&e), "{e:?} missing from {ev:?}");
        }
        valid_and_every_cut_and_flip_agrees(&b);
        // A lying item count is refused before anything is allocated for it.
        let b = body(|w| {
            w.class_new(DERIVED, b"m.Q", 1, std::iter::empty());
            w.derived_deque(Some(1), 1 << 40);
        });
        assert!(events(&b).is_err());
    }

    #[test]
    fn an_exception_or_immutable_derived_value_is_usable_after_its_first_child() {
        // A reference to the exception from inside its own arguments: not yet made.
        let b = body(|w| {
            w.share();
            w.exception(b"ValueError");
            w.tuple(1);
            w.reference(0);
            w.tuple(0);
        });
        let err = events(&b).unwrap_err();
        assert!(
            err.message.contains("before its value is complete"),
            "{err}"
        );
        let b = body(|w| {
            w.share();
            w.class_new(DERIVED, b"m.T", 1, std::iter::empty());
            w.derived_base(base::TUPLE, 0);
            w.tuple(1);
            w.reference(0);
            w.dict(0);
        });
        assert!(events(&b).is_err());
        // From its state it may.
        let b = body(|w| {
            w.share();
            w.class_new(DERIVED, b"m.T", 1, std::iter::empty());
            w.derived_base(base::TUPLE, 0);
            w.tuple(0);
            w.dict(1);
            w.str(b"me");
            w.reference(0);
        });
        assert!(events(&b).is_ok());
    }

    #[test]
    fn malformed_new_records_name_the_record_and_offset() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                body(|w| {
                    w.class_new(DERIVED, b"m.D", 1, std::iter::empty());
                    w.derived_base(0, 0);
                }),
                "DERIVED record at byte 0: unknown builtin base code 0",
            ),
            (
                body(|w| {
                    w.class_new(DERIVED, b"m.D", 1, std::iter::empty());
                    w.derived_base(base::LAST + 1, 0);
                }),
                "DERIVED record at byte 0: unknown builtin base code 16",
            ),
            (
                body(|w| w.class_new(CLASS, b"m.D", 1, [&b"x"[..]].into_iter())),
                "CLASS record at byte 0: the class entry of this record has no fields",
            ),
            (
                body(|w| {
                    w.class_new(DERIVED, b"m.D", 1, [&b"x"[..]].into_iter());
                    w.derived_base(base::LIST, 0);
                    w.dict(0);
                }),
                "DERIVED record at byte 0: the class entry of this record has no fields",
            ),
            (
                vec![BUILTIN, 0],
                "BUILTIN record at byte 0: the name is empty or not UTF-8",
            ),
            (
                vec![EXCEPTION, 1, 0xff],
                "EXCEPTION record at byte 0: the class name is empty or not UTF-8",
            ),
            (
                vec![CLASS, 1],
                "CLASS record at byte 0: reference to undefined class #0",
            ),
        ];
        for (b, message) in cases {
            let err = events(&b).unwrap_err();
            assert!(err.message.contains(message), "{err} lacks {message:?}");
            assert_eq!(
                Reader::new(&b, Limits::default()).validate().unwrap_err(),
                err
            );
        }
        // A lying item count is refused before anything is allocated for it.
        let b = body(|w| {
            w.class_new(DERIVED, b"m.D", 1, std::iter::empty());
            w.derived_base(base::DICT, 1 << 40);
        });
        assert!(events(&b).is_err());
        // Every tag past the last is reserved.
        for tag in LAST + 1..=0xff {
            let err = events(&[tag]).unwrap_err();
            assert!(err.message.contains("unknown tag"), "{err}");
        }
        // Depth counts the two frames of an exception.
        let mut deep = Vec::new();
        for _ in 0..100 {
            deep.extend_from_slice(&[EXCEPTION, 1, b'E']);
        }
        let limits = Limits {
            max_depth: 50,
            ..Limits::default()
        };
        let mut r = Reader::new(&deep, limits);
        let err = loop {
            match r.next_event() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("depth not limited"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind, crate::ErrorKind::Limit);
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_or_valid() {
        let b = body(|w| {
            w.share();
            w.list(3);
            w.str(b"hello world, a longer string here");
            w.tuple(2);
            w.int(-70000);
            w.float(0.1);
            w.reference(0);
        });
        assert!(events(&b).is_ok());
        for cut in 0..b.len() {
            assert!(events(&b[..cut]).is_err());
        }
        for i in 0..b.len() {
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                let _ = events(&c);
            }
        }
    }
}
