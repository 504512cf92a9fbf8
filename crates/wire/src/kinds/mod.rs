//! Field kinds with a format of their own: the extension point of the VMs.
//!
//! The core vocabulary (numbers, bytes, text, structs, arrays, unions, windows) is the VMs'
//! own. A *kind* is everything else: a value whose wire form has rules no declaration can
//! express, such as a self-describing MessagePack value or a compressed DNS name. Each kind
//! is one file here implementing [`FieldKind`]; the list below makes it part of the schema
//! (`{"t": "<name>", ...}`), of both VMs and of the column builders.
//!
//! Adding a kind touches three files: its own module here, one line in the list below, and
//! the declaration users write in `python/bytewright/types.py` (a `bytewright.types.Kind`
//! subclass). See `docs/architecture.md`.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::host::{Output, Sink, Source};
use crate::pack::Enc;
use crate::unpack::Dec;

pub mod dnsname;
pub mod msgpack;

/// How the column builders store a kind's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// UTF-8 text: the kind's decoder hands the sink text.
    Text,
    /// The value's own bytes, as they are on the wire (binary).
    Raw,
}

/// What a kind implements. The decoder and encoder are the VMs themselves, so a kind reads
/// and writes through the same bounds checks, limits and error paths as the core vocabulary.
pub trait FieldKind {
    /// The kind's name: its schema tag, and what `explain` shows as the declared kind.
    const NAME: &'static str;

    /// The fewest bytes a value takes.
    fn min_size(&self) -> usize;

    /// How the column builders store its values.
    fn column(&self) -> Column;

    /// Decodes one value at the decoder's position.
    fn decode<S: Sink>(&self, d: &mut Dec<'_, '_, '_, S>) -> Result<S::Value, S::Error>;

    /// Encodes one value at the encoder's position.
    fn encode<S: Source, O: Output>(
        &self,
        e: &mut Enc<'_, '_, '_, '_, S, O>,
        v: &S::Value,
    ) -> Result<(), S::Error>;
}

/// Per-message state that kinds keep while packing (e.g. the DNS names written so far).
#[derive(Default)]
pub struct PackState {
    pub(crate) dnsname: dnsname::Table,
}

impl PackState {
    pub(crate) fn clear(&mut self) {
        self.dnsname.clear();
    }
}

macro_rules! field_kinds {
    ($($(#[$doc:meta])* $variant:ident($module:ident::$ty:ident),)*) => {
        /// A field of one of the kinds below (the schema's `{"t": "<name>", ...}`, read as a
        /// `TypeDesc`; the derive reads the fields after the tag).
        #[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
        #[serde(remote = "Self", rename_all = "lowercase")]
        pub enum Kind {
            $($(#[$doc])* $variant($module::$ty),)*
        }

        impl Kind {
            /// The schema tags of the kinds.
            pub const NAMES: &'static [&'static str] = &[$(<$module::$ty as FieldKind>::NAME,)*];

            pub fn name(&self) -> &'static str {
                match self { $(Kind::$variant(_) => <$module::$ty as FieldKind>::NAME,)* }
            }

            pub fn min_size(&self) -> usize {
                match self { $(Kind::$variant(k) => k.min_size(),)* }
            }

            pub fn column(&self) -> Column {
                match self { $(Kind::$variant(k) => k.column(),)* }
            }

            #[inline]
            pub(crate) fn decode<S: Sink>(
                &self,
                d: &mut Dec<'_, '_, '_, S>,
            ) -> Result<S::Value, S::Error> {
                match self { $(Kind::$variant(k) => k.decode(d),)* }
            }

            #[inline]
            pub(crate) fn encode<S: Source, O: Output>(
                &self,
                e: &mut Enc<'_, '_, '_, '_, S, O>,
                v: &S::Value,
            ) -> Result<(), S::Error> {
                match self { $(Kind::$variant(k) => k.encode(e, v),)* }
            }
        }
    };
}

// The kinds. Adding one: its module above and one line here.
field_kinds! {
    /// A self-describing MessagePack value.
    Msgpack(msgpack::Msgpack),
    /// A DNS domain name (RFC 1035), compressed on pack when asked.
    Dnsname(dnsname::DnsName),
}
