//! The safe object-graph format behind `bytewright.pickle`.
//!
//! Pure Rust, no Python: the [`Writer`] primitives used by the encoder, the validating
//! pull [`Reader`] used by the decoder (and fuzzed on its own), the decoding [`Limits`],
//! the record [`header`] and HMAC-SHA256 [`integrity`]. `docs/format.md` is the spec.

mod buf;
pub mod copy;
pub mod error;
pub mod header;
pub mod integrity;
pub mod limits;
pub mod reader;
pub mod record;
pub mod tags;
pub mod varint;
pub mod writer;

pub use buf::{OutOfMemory, Storage};
pub use error::{ErrorKind, ReadError};
pub use header::{Header, FLAG_SIGNED, MAGIC, VERSION};
pub use limits::Limits;
pub use reader::{ClassDef, Event, Reader, ReaderBuffers};
pub use writer::Writer;
