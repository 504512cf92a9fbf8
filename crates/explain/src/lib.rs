//! The field tree of a decoded message: what `bw.explain` shows.
//!
//! [`explain`] runs the wire VM ([`bytewright_wire::unpack`]) with an [`ExplainSink`], a sink
//! that wraps the host's own sink (so values are exactly the ones `unpack` builds) and
//! follows the VM's layout notifications to record, for every field and item, where it
//! sits in the bytes, its declared kind and what the program says about it (derived,
//! constant, checksum, padding, conditional, window). The tree is kept in the sink, not in
//! the values being built, so a decode that fails still leaves every node decoded so far;
//! the failure is attached to the node its path names, and the bytes not decoded become
//! one node of their own.
//!
//! Pure Rust: tested with a plain value tree (tests/), adapted to Python in
//! `crates/python/src/wire/explain.rs`.

mod describe;
mod sink;
mod tree;

pub use describe::{describe_node, show_expr};
pub use sink::{ExplainSink, Host};
pub use tree::{Bits, Explained, Failure, Mark, Name, Node};

use bytewright_wire::{unpack, Program};

/// Decodes one value of `prog`'s root type at `buf[offset..]` through `host`, recording the
/// field tree. With `whole`, bytes after the value are a failure (as `unpack` treats them).
/// Never fails itself: a decode error is the result's [`Explained::failure`].
pub fn explain<H: Host>(
    prog: &Program,
    host: H,
    buf: &[u8],
    offset: usize,
    whole: bool,
) -> Explained<H::Value, H::Error>
where
    H::Value: Clone,
{
    let mut sink = ExplainSink::new(prog, host, offset.min(buf.len()));
    let r = unpack::unpack(prog, &mut sink, buf, offset);
    sink.finish(r, buf.len(), whole)
}
