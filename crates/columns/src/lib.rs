//! Columnar decode and encode of bytewright wire formats.
//!
//! A compiled [`bytewright_wire::Program`] decodes back-to-back messages straight into Arrow
//! columns (one per field, nested fields as struct and list columns) and encodes Arrow
//! columns back into messages, with no per-record objects. Pure Rust: the Python adapter
//! releases the GIL around these calls.

pub mod builders;
pub mod decode;
pub mod enums;
pub mod fixed;
pub mod layout;
pub mod pool;
pub mod sink;

pub use decode::{Columnar, Failure, Request, Table};
pub use layout::{Layout, Shape};
