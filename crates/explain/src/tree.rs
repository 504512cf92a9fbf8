//! The nodes of an explained message.

use std::sync::Arc;

use bytewright_wire::Error;

/// What a node is called in its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// The whole message.
    Root,
    /// A named field of a struct.
    Field(Arc<str>),
    /// An item of a list.
    Index(usize),
    /// Padding bytes of a struct (declared, or for alignment).
    Padding,
    /// The bytes after the last one decoded: after a failure, or after a whole message.
    Rest,
}

/// What the program says about a node (a set of these is a node's marks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// Computed on pack from a later field (a length, a count, a window size).
    Derived,
    /// Must hold a constant.
    Constant,
    /// Holds a checksum of its struct.
    Checksum,
    /// Padding (declared, or for alignment).
    Padding,
    /// A conditional field whose condition held.
    Conditional,
    /// A conditional field whose condition did not hold: no bytes, the default value.
    Absent,
    /// Decoded inside a window of a size given by an earlier field.
    Window,
    /// The field kind decodes it as a whole (e.g. MessagePack, a DNS name): no children.
    Opaque,
    /// Decoding failed here.
    Failed,
    /// Bytes after the last one decoded.
    Rest,
}

impl Mark {
    pub fn as_str(&self) -> &'static str {
        match self {
            Mark::Derived => "derived",
            Mark::Constant => "constant",
            Mark::Checksum => "checksum",
            Mark::Padding => "padding",
            Mark::Conditional => "conditional",
            Mark::Absent => "absent",
            Mark::Window => "window",
            Mark::Opaque => "opaque",
            Mark::Failed => "failed",
            Mark::Rest => "rest",
        }
    }
}

/// Where a bit field's bits are: `width` bits at `shift` (from the least significant bit) of
/// the number its `group` bytes hold, big-endian unless `lsb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bits {
    pub group: u8,
    pub shift: u8,
    pub width: u8,
    pub lsb: bool,
}

impl Bits {
    /// The bytes of the group that hold these bits: `(first, end)`, from the group's start.
    pub fn bytes(&self) -> (usize, usize) {
        let (lo, hi) = (
            usize::from(self.shift),
            usize::from(self.shift) + usize::from(self.width) - 1,
        );
        let g = usize::from(self.group);
        if self.lsb {
            // A little-endian number: bit k is in byte k / 8.
            (lo / 8, hi / 8 + 1)
        } else {
            // Big-endian: bit k (from the least significant) is in byte g - 1 - k / 8.
            (g - 1 - hi / 8, g - lo / 8)
        }
    }
}

/// One field, item, padding run or the whole message.
#[derive(Debug, Clone)]
pub struct Node<V> {
    pub parent: Option<usize>,
    pub name: Name,
    /// The declared kind, as the schema says it: `u16 be`, `bytes`, `list[Chunk]`, ...
    pub kind: String,
    /// Absolute offset of the first byte.
    pub start: usize,
    /// Absolute offset after the last byte; `None` when decoding failed inside it.
    pub end: Option<usize>,
    pub bits: Option<Bits>,
    pub marks: Vec<Mark>,
    /// What the marks refer to, in words: `length of data`, `= 4`, `crc32 over type, data`,
    /// `case 6: TCP`, `when flags & 1`.
    pub notes: Vec<String>,
    /// The struct a struct-valued node decoded as (the chosen case's, for unions).
    pub struct_name: Option<Arc<str>>,
    /// The decoded value, as the host's sink built it; `None` when it did not finish.
    pub value: Option<V>,
    pub children: Vec<usize>,
}

impl<V> Node<V> {
    pub(crate) fn new(parent: Option<usize>, name: Name, kind: String, start: usize) -> Self {
        Node {
            parent,
            name,
            kind,
            start,
            end: None,
            bits: None,
            marks: Vec::new(),
            notes: Vec::new(),
            struct_name: None,
            value: None,
            children: Vec::new(),
        }
    }

    pub fn has(&self, m: Mark) -> bool {
        self.marks.contains(&m)
    }

    pub(crate) fn mark(&mut self, m: Mark) {
        if !self.has(m) {
            self.marks.push(m);
        }
    }

    /// Bytes covered, when known.
    pub fn size(&self) -> Option<usize> {
        self.end.map(|e| e - self.start)
    }
}

/// Why the tree stops short.
#[derive(Debug)]
pub enum Failure<E> {
    /// The decode failed: the VM's error, exactly as `unpack` reports it, attached to `node`.
    Decode { error: Box<Error<E>>, node: usize },
    /// The message decoded but `whole` was asked and bytes follow it (from `end` on).
    Trailing { end: usize },
}

/// The field tree of one message.
#[derive(Debug)]
pub struct Explained<V, E> {
    /// `nodes[0]` is the message; every other node's parent comes before it.
    pub nodes: Vec<Node<V>>,
    /// Where the message ends, when it decoded.
    pub end: Option<usize>,
    pub failure: Option<Failure<E>>,
    /// The node of the bytes not decoded, if any.
    pub rest: Option<usize>,
}

impl<V, E> Explained<V, E> {
    /// The path of a node as errors write it: `records[3].payload`.
    pub fn path(&self, mut i: usize) -> String {
        let mut segs = Vec::new();
        loop {
            let n = &self.nodes[i];
            match &n.name {
                Name::Root => break,
                Name::Field(f) => segs.push(format!(".{f}")),
                Name::Index(k) => segs.push(format!("[{k}]")),
                Name::Padding => segs.push(".(padding)".into()),
                Name::Rest => segs.push(".(rest)".into()),
            }
            match n.parent {
                Some(p) => i = p,
                None => break,
            }
        }
        let s: String = segs.into_iter().rev().collect();
        s.strip_prefix('.').map(str::to_string).unwrap_or(s)
    }

    /// The node at a path (as [`Explained::path`] writes it), if any.
    pub fn find(&self, path: &str) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.path(i) == path)
    }
}
