//! A safe reader of standard pickle streams (protocols 0 to 5), pure Rust: the checker
//! behind `bytewright.pickle.loads_pickle`.
//!
//! [`ops`] decodes one bounds-checked opcode at a time; [`machine`] runs pickle's
//! stack/memo VM on kinds instead of objects and turns the stream into a checked [`Program`] in which only the [`globals`] table (plus what
//! `classes=`/`allow=` add) can be called. Nothing is imported, looked up or called here.
//! Errors and limits are those of `bytewright.pickle` (re-exported from `bytewright-graph`).

pub mod globals;
pub mod machine;
pub mod opcodes;
pub mod ops;
pub mod text;

pub use bytewright_graph::{ErrorKind, Limits, ReadError};
pub use globals::{Builtin, ClassKind, Global};
pub use machine::{
    check, check_in, check_in_carrying, offsets, self_check, self_check_with, Build, Call, Carried,
    Instr, Machine, NoExtras, Program, Python2Str, Recording, Resolve, ResolveFailed, Scratch,
    Sink, Span, Step,
};
pub use ops::{extent, Decoder, Extent, Op};
