//! Errors of the pack and unpack VMs, with the field path collected while unwinding.

use std::fmt::Write as _;
use std::sync::Arc;

/// One step of a field path: a field name or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Field(Arc<str>),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind<E> {
    /// The data ran out: `need` bytes at the offset, `left` available. When `at_end` is set the
    /// input itself ended (more bytes could complete it); otherwise an enclosing window ended.
    Short {
        need: usize,
        left: usize,
        at_end: bool,
    },
    /// Malformed input (unpack) or a value that cannot be packed (pack).
    Invalid(String),
    /// Text that is not valid in its encoding: the offending byte is at the error's offset.
    BadText { ascii: bool, byte: u8 },
    /// A length past both the limit and the end of the data: truncated data is the likelier
    /// cause, so the message says that first (it stays an error, never "incomplete").
    PastLimit {
        n: i128,
        left: usize,
        max: u64,
        at_end: bool,
    },
    /// The destination buffer of `pack_into` is too small.
    Full { need: usize, cap: usize },
    /// An error raised by the sink or source (e.g. out of memory).
    Host(E),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error<E> {
    pub kind: Kind<E>,
    /// Byte offset in the input (unpack) or output (pack) where the problem is.
    pub offset: usize,
    /// Innermost segment first (collected while unwinding); see [`Error::path`].
    pub rev_path: Vec<Seg>,
    /// How many of the next segments added while unwinding to leave out: set when an error
    /// is blamed on a sibling of the field being processed (e.g. the payload measured to
    /// derive its length field), so the path names the sibling alone.
    pub skip: u8,
}

pub type Result<T, E> = std::result::Result<T, Box<Error<E>>>;

impl<E> Error<E> {
    pub fn new(kind: Kind<E>, offset: usize) -> Box<Self> {
        Box::new(Error {
            kind,
            offset,
            rev_path: Vec::new(),
            skip: 0,
        })
    }

    pub fn invalid(msg: impl Into<String>, offset: usize) -> Box<Self> {
        Self::new(Kind::Invalid(msg.into()), offset)
    }

    fn push(&mut self, seg: Seg) {
        if self.skip > 0 {
            self.skip -= 1;
        } else {
            self.rev_path.push(seg);
        }
    }

    /// The path as a user writes it: `frame.records[3].payload`.
    pub fn path(&self) -> String {
        let mut s = String::new();
        for seg in self.rev_path.iter().rev() {
            match seg {
                Seg::Field(name) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(name);
                }
                Seg::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
            }
        }
        s
    }

    /// The same error with its host error (if any) mapped by `f`.
    pub fn map_host<F>(self, f: impl FnOnce(E) -> F) -> Error<F> {
        Error {
            kind: match self.kind {
                Kind::Short { need, left, at_end } => Kind::Short { need, left, at_end },
                Kind::Invalid(m) => Kind::Invalid(m),
                Kind::BadText { ascii, byte } => Kind::BadText { ascii, byte },
                Kind::PastLimit {
                    n,
                    left,
                    max,
                    at_end,
                } => Kind::PastLimit {
                    n,
                    left,
                    max,
                    at_end,
                },
                Kind::Full { need, cap } => Kind::Full { need, cap },
                Kind::Host(e) => Kind::Host(f(e)),
            },
            offset: self.offset,
            rev_path: self.rev_path,
            skip: self.skip,
        }
    }

    /// Whether more input could complete the message.
    pub fn is_incomplete(&self) -> bool {
        matches!(self.kind, Kind::Short { at_end: true, .. })
    }

    /// The problem without the path (host errors have no text of their own here).
    pub fn detail(&self) -> String {
        match &self.kind {
            Kind::Short { need, left, at_end } => format!(
                "needs {need} bytes at offset {}, {left} left{}",
                self.offset,
                if *at_end { "" } else { " in the window" }
            ),
            Kind::Invalid(m) => m.clone(),
            Kind::BadText { ascii: false, .. } => {
                format!("invalid utf-8 at offset {}", self.offset)
            }
            Kind::BadText { ascii: true, byte } => {
                format!("byte 0x{byte:02x} at offset {} is not ascii", self.offset)
            }
            Kind::PastLimit {
                n,
                left,
                max,
                at_end,
            } => format!(
                "the length {n} runs past the end of the {}: needs {n} bytes at offset {}, {left} left (and exceeds the limit {max})",
                if *at_end { "input" } else { "window" },
                self.offset
            ),
            Kind::Full { need, cap } => format!(
                "the destination buffer is too small: needs {need} bytes at offset {}, {cap} left",
                self.offset
            ),
            Kind::Host(_) => String::new(),
        }
    }

    /// `path: detail`, or the detail alone at the top level.
    pub fn message(&self) -> String {
        let p = self.path();
        if p.is_empty() {
            self.detail()
        } else {
            format!("{p}: {}", self.detail())
        }
    }
}

/// Adds a path segment to an error as it unwinds through a field or item.
pub(crate) trait At<T, E> {
    fn at_field(self, name: &Arc<str>) -> Result<T, E>;
    fn at_index(self, i: usize) -> Result<T, E>;
    /// Blames a sibling of the field being processed: the field's own segment, added next
    /// while unwinding, is left out.
    fn at_sibling(self, name: &Arc<str>) -> Result<T, E>;
}

impl<T, E> At<T, E> for Result<T, E> {
    #[inline]
    fn at_field(self, name: &Arc<str>) -> Result<T, E> {
        self.map_err(|mut e| {
            e.push(Seg::Field(name.clone()));
            e
        })
    }
    #[inline]
    fn at_index(self, i: usize) -> Result<T, E> {
        self.map_err(|mut e| {
            e.push(Seg::Index(i));
            e
        })
    }
    fn at_sibling(self, name: &Arc<str>) -> Result<T, E> {
        self.map_err(|mut e| {
            e.push(Seg::Field(name.clone()));
            e.skip += 1;
            e
        })
    }
}
