//! What the VMs need from their host: a sink that builds decoded values, a source that
//! reads values to pack, and an output buffer. The Python adapter implements them over
//! Python objects; the tests implement them over a plain Rust value tree.

use std::borrow::Cow;

use crate::program::Encoding;

/// Builds decoded values. Every method may fail with a host error (e.g. out of memory).
///
/// Three groups of methods: values (scalars, structs, lists), self-describing values (used
/// by field kinds such as MessagePack, see [`crate::kinds`]), and layout notifications (where
/// each field and item sits, for sinks that follow the layout: the column builders and
/// `explain`). Layout notifications default to no-ops, which compile away for object sinks.
pub trait Sink {
    type Value;
    type Struct;
    type List;
    type Map;
    type Error;

    /// Whether the sink keeps what it is given. A sink that only finds where messages end
    /// (`false`) lets the VM skip what cannot change a message's size: scalar values, text
    /// validation, constants, checksums and the inside of windows. Its output is the end
    /// offset alone; a decode that keeps values then checks everything.
    const KEEPS_VALUES: bool = true;

    fn uint(&mut self, v: u64) -> Result<Self::Value, Self::Error>;
    fn int(&mut self, v: i64) -> Result<Self::Value, Self::Error>;
    fn float(&mut self, v: f64) -> Result<Self::Value, Self::Error>;
    fn bool(&mut self, v: bool) -> Result<Self::Value, Self::Error>;
    fn bytes(&mut self, v: &[u8]) -> Result<Self::Value, Self::Error>;
    /// Validated text; `ascii` tells that every byte is below 0x80.
    fn str(&mut self, v: &str, ascii: bool) -> Result<Self::Value, Self::Error>;
    /// Latin-1 text: each byte is one code point.
    fn latin1(&mut self, v: &[u8]) -> Result<Self::Value, Self::Error>;

    fn begin_struct(&mut self, sink_id: u32) -> Result<Self::Struct, Self::Error>;
    fn set_field(
        &mut self,
        s: &mut Self::Struct,
        field: u16,
        v: Self::Value,
    ) -> Result<(), Self::Error>;
    /// A conditional field that is not present: the host supplies its default.
    fn absent_field(&mut self, s: &mut Self::Struct, field: u16) -> Result<(), Self::Error>;
    fn end_struct(&mut self, s: Self::Struct) -> Result<Self::Value, Self::Error>;

    // --- Self-describing values (field kinds that carry their own types) ---

    /// The null value.
    fn none(&mut self) -> Result<Self::Value, Self::Error>;
    /// An extension value: a type code and its bytes (e.g. a MessagePack ext).
    fn ext(&mut self, code: i8, data: &[u8]) -> Result<Self::Value, Self::Error>;
    /// A self-describing map; `cap` is bounded by the remaining input.
    fn begin_map(&mut self, cap: usize) -> Result<Self::Map, Self::Error>;
    fn map_insert(
        &mut self,
        m: &mut Self::Map,
        k: Self::Value,
        v: Self::Value,
    ) -> Result<(), Self::Error>;
    fn end_map(&mut self, m: Self::Map) -> Result<Self::Value, Self::Error>;

    /// `cap` is a capacity hint already bounded by the remaining input.
    fn begin_list(&mut self, cap: usize) -> Result<Self::List, Self::Error>;
    fn push(&mut self, l: &mut Self::List, v: Self::Value) -> Result<(), Self::Error>;
    fn end_list(&mut self, l: Self::List) -> Result<Self::Value, Self::Error>;

    // --- Layout notifications (no-ops by default) ---

    /// Field `field` of the struct `s` is present and starts at `at` (after its condition
    /// held and its alignment padding). Its value follows, then [`Sink::leave_field`], then
    /// [`Sink::set_field`].
    #[inline(always)]
    fn enter_field(&mut self, _s: &mut Self::Struct, _field: u16, _at: usize) {}
    /// The field entered last in `s` ends at `end`. Not called when decoding fails inside it.
    #[inline(always)]
    fn leave_field(&mut self, _s: &mut Self::Struct, _field: u16, _end: usize) {}
    /// Item `index` of the list `l` starts at `at`; its value follows, then
    /// [`Sink::leave_item`], then [`Sink::push`].
    #[inline(always)]
    fn enter_item(&mut self, _l: &mut Self::List, _index: usize, _at: usize) {}
    /// The item entered last in `l` ends at `end`.
    #[inline(always)]
    fn leave_item(&mut self, _l: &mut Self::List, _index: usize, _end: usize) {}
    /// A tagged union or registry chose its case, whose value starts at `at`: an index into
    /// its cases, or the number of cases for its default.
    #[inline(always)]
    fn choose(&mut self, _case: usize, _at: usize) {}
    /// A run of adjacent fixed-size fields of `s` starts at `at`; `bytes` are all of them.
    /// A sink that stores their values itself (reading `run.items`) returns true: the VM
    /// then skips their layout notifications and `set_field`s, and only checks constants
    /// and bools and keeps the values that expressions refer to.
    #[inline(always)]
    fn run(
        &mut self,
        _s: &mut Self::Struct,
        _run: &crate::program::Run,
        _at: usize,
        _bytes: &[u8],
    ) -> bool {
        false
    }
    /// `n` bytes of padding (declared or for alignment) at `at` in the struct `s`.
    #[inline(always)]
    fn padding(&mut self, _s: &mut Self::Struct, _at: usize, _n: usize) {}
}

/// Why a source value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError<E> {
    /// The value has the wrong type or cannot be represented; the text says why.
    Type(String),
    Host(E),
}

/// What a self-describing value is (MessagePack pack).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dyn {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str,
    Bytes,
    List,
    Map,
    Ext,
}

/// Reads the values to pack.
pub trait Source {
    type Value: Clone;
    type Error;

    /// The value of a named field of a struct value; `None` when missing (or `None`).
    fn field(
        &self,
        obj: &Self::Value,
        sink_id: u32,
        field: u16,
    ) -> Result<Option<Self::Value>, SourceError<Self::Error>>;
    fn int(&self, v: &Self::Value) -> Result<i128, SourceError<Self::Error>>;
    fn float(&self, v: &Self::Value) -> Result<f64, SourceError<Self::Error>>;
    fn bool(&self, v: &Self::Value) -> Result<bool, SourceError<Self::Error>>;
    fn bytes<'a>(&self, v: &'a Self::Value) -> Result<&'a [u8], SourceError<Self::Error>>;
    fn text<'a>(
        &self,
        v: &'a Self::Value,
        enc: Encoding,
    ) -> Result<Cow<'a, [u8]>, SourceError<Self::Error>>;
    fn len(&self, v: &Self::Value) -> Result<usize, SourceError<Self::Error>>;
    fn item(&self, v: &Self::Value, i: usize) -> Result<Self::Value, SourceError<Self::Error>>;
    /// The kind of a self-describing value.
    fn kind(&self, v: &Self::Value) -> Result<Dyn, SourceError<Self::Error>>;
    /// The (key, value) pairs of a map value, in order.
    #[allow(clippy::type_complexity)]
    fn entries(
        &self,
        v: &Self::Value,
    ) -> Result<Vec<(Self::Value, Self::Value)>, SourceError<Self::Error>>;
    /// The type code and the data (a bytes value) of an extension value.
    fn ext(&self, v: &Self::Value) -> Result<(i8, Self::Value), SourceError<Self::Error>>;
    /// Whether a value is an instance of the struct `sink_id`; `None` when it cannot tell
    /// (e.g. a plain mapping).
    fn is_struct(&self, v: &Self::Value, sink_id: u32) -> Option<bool>;
    /// A struct or field-kind value given as its own wire bytes (a table column that stores
    /// recursive or self-describing values raw). The VM checks that they decode as that
    /// value before writing them.
    #[inline(always)]
    fn raw(&self, _v: &Self::Value) -> Option<&[u8]> {
        None
    }
}

/// A sink that keeps nothing. `Discard<true>` checks a message as fully as any decode (to
/// find its error); `Discard<false>` only finds where it ends (see [`Sink::KEEPS_VALUES`]).
pub struct Discard<const CHECK: bool>;

impl<const CHECK: bool> Sink for Discard<CHECK> {
    type Value = ();
    type Struct = ();
    type List = ();
    type Map = ();
    type Error = std::convert::Infallible;
    const KEEPS_VALUES: bool = CHECK;

    #[inline(always)]
    fn uint(&mut self, _: u64) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn int(&mut self, _: i64) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn float(&mut self, _: f64) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn bool(&mut self, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn bytes(&mut self, _: &[u8]) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn str(&mut self, _: &str, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn latin1(&mut self, _: &[u8]) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn begin_struct(&mut self, _: u32) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn set_field(&mut self, _: &mut (), _: u16, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn absent_field(&mut self, _: &mut (), _: u16) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn end_struct(&mut self, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn none(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn ext(&mut self, _: i8, _: &[u8]) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn begin_map(&mut self, _: usize) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn map_insert(&mut self, _: &mut (), _: (), _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn end_map(&mut self, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn begin_list(&mut self, _: usize) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn push(&mut self, _: &mut (), _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
    #[inline(always)]
    fn end_list(&mut self, _: ()) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The destination buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    pub need: usize,
    pub cap: usize,
}

/// Where packed bytes go.
pub trait Output {
    fn pos(&self) -> usize;
    /// Appends `n` bytes (of unspecified value: the caller fills all of them) and returns
    /// their position.
    fn grow(&mut self, n: usize) -> Result<usize, Full>;
    /// The `n` bytes at `at`, which must already have been grown.
    fn slot(&mut self, at: usize, n: usize) -> &mut [u8];
    /// Forgets everything written from `pos` on (a position `pos()` gave earlier).
    fn rewind(&mut self, pos: usize);
    /// Overwrites bytes already written.
    fn patch(&mut self, at: usize, data: &[u8]) {
        self.slot(at, data.len()).copy_from_slice(data);
    }
}

impl Output for Vec<u8> {
    #[inline]
    fn pos(&self) -> usize {
        self.len()
    }
    #[inline]
    fn grow(&mut self, n: usize) -> Result<usize, Full> {
        let p = self.len();
        self.resize(p + n, 0);
        Ok(p)
    }
    #[inline]
    fn slot(&mut self, at: usize, n: usize) -> &mut [u8] {
        &mut self[at..at + n]
    }
    fn rewind(&mut self, pos: usize) {
        self.truncate(pos);
    }
}

/// A caller's fixed buffer (`pack_into`): never grows.
pub struct SliceOutput<'a> {
    buf: &'a mut [u8],
    start: usize,
    pos: usize,
}

impl<'a> SliceOutput<'a> {
    /// Writes from `buf[start..]`; positions are relative to `start`.
    pub fn new(buf: &'a mut [u8], start: usize) -> Self {
        SliceOutput {
            buf,
            start,
            pos: start,
        }
    }
    /// The absolute end offset in the buffer.
    pub fn end(&self) -> usize {
        self.pos
    }
}

impl Output for SliceOutput<'_> {
    #[inline]
    fn pos(&self) -> usize {
        self.pos - self.start
    }
    #[inline]
    fn grow(&mut self, n: usize) -> Result<usize, Full> {
        let cap = self.buf.len().saturating_sub(self.pos);
        if n > cap {
            return Err(Full { need: n, cap });
        }
        let p = self.pos;
        self.pos += n;
        Ok(p - self.start)
    }
    #[inline]
    fn slot(&mut self, at: usize, n: usize) -> &mut [u8] {
        let at = at + self.start;
        &mut self.buf[at..at + n]
    }
    fn rewind(&mut self, pos: usize) {
        self.pos = self.start + pos;
    }
}
