//! Schema compiler and pack/unpack VM for bytewright wire codecs.
//!
//! Pure Rust: a [`schema::Schema`] (plain data) is compiled once into an immutable
//! [`program::Program`]; [`unpack::unpack`] and [`pack::pack`] run it against a host's
//! [`host::Sink`] / [`host::Source`] (Python objects in the extension, a value tree in tests).

pub mod compile;
pub mod digest;
mod env;
pub use env::Scratch;
pub mod error;
pub mod expr;
pub mod host;
pub mod kinds;
pub mod pack;
pub mod pick;
pub mod program;
pub mod schema;
mod sums;
pub mod unpack;

pub use compile::{compile, SchemaError};
pub use error::{Error, Kind, Seg};
pub use program::Program;
pub use schema::Schema;

/// Renders bytes the way Python's `repr` would, for error messages.
pub fn show_bytes(b: &[u8]) -> String {
    let mut s = String::from("b'");
    for &c in b.iter().take(64) {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\'' => s.push_str("\\'"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    if b.len() > 64 {
        s.push_str("...");
    }
    s.push('\'');
    s
}
