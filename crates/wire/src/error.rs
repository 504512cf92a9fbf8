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

/// What a [`SchemaError`] is about, so a frontend can act on it without reading the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaErrorKind {
    /// The description is invalid in some other way (the message says how).
    Invalid,
    /// An expression names a field that is not in scope (not an earlier field of its struct
    /// or of an enclosing one).
    UnknownName,
    /// A checksum's `over=` names a field its struct does not have.
    UnknownField,
    /// A value outside a fixed set of choices (a checksum algorithm's name).
    UnknownValue,
}

impl SchemaErrorKind {
    /// The kind as the Python `SchemaError.kind` attribute spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaErrorKind::Invalid => "invalid",
            SchemaErrorKind::UnknownName => "unknown_name",
            SchemaErrorKind::UnknownField => "unknown_field",
            SchemaErrorKind::UnknownValue => "unknown_value",
        }
    }
}

/// A problem in the schema, found at compile time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub kind: SchemaErrorKind,
    /// The dotted field path, e.g. `Frame.records` (empty when the description as a whole is
    /// at fault).
    pub path: String,
    /// The unknown name or value, for the kinds that have one.
    pub name: Option<String>,
    /// The nearest valid name or value (see [`closest`]), when one is close enough.
    pub suggestion: Option<String>,
    /// The full message: the path, the problem and the suggestion.
    pub message: String,
}

impl SchemaError {
    /// A problem with the description as a whole (no field path).
    pub fn invalid(message: impl Into<String>) -> Self {
        SchemaError {
            kind: SchemaErrorKind::Invalid,
            path: String::new(),
            name: None,
            suggestion: None,
            message: message.into(),
        }
    }

    /// A problem at `path`: the message is `path: detail`, plus `; did you mean 'x'?` when
    /// there is a suggestion.
    pub fn at(
        kind: SchemaErrorKind,
        path: String,
        detail: impl std::fmt::Display,
        name: Option<String>,
        suggestion: Option<String>,
    ) -> Self {
        let mut message = format!("{path}: {detail}");
        if let Some(s) = &suggestion {
            let _ = write!(message, "; did you mean '{s}'?");
        }
        SchemaError {
            kind,
            path,
            name,
            suggestion,
            message,
        }
    }
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SchemaError {}

/// The option nearest to `word`, if any is near enough: the one "did you mean" rule of every
/// schema error (the Python frontend calls it too).
///
/// Nearness is the edit distance counting insertions, deletions, substitutions and swaps of
/// two adjacent characters; an option is near enough within two edits, or three for a word
/// of six characters or more. The first of equally near options wins.
pub fn closest<S: AsRef<str>>(word: &str, options: impl IntoIterator<Item = S>) -> Option<String> {
    let w: Vec<char> = word.chars().collect();
    let limit = if w.len() >= 6 { 3 } else { 2 };
    options
        .into_iter()
        .map(|o| {
            let o = o.as_ref();
            (
                edit_distance(&w, &o.chars().collect::<Vec<_>>()),
                o.to_string(),
            )
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, o)| o)
}

/// The optimal string alignment distance between `a` and `b`.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    // Rows i - 2, i - 1 and i of the usual table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let mut d = (prev[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(prev[j] + 1)
                .min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn closest_suggests_near_names_only() {
        let options = ["len", "count", "size", "max_len", "max_count", "byteorder"];
        assert_eq!(closest("lenght", options).as_deref(), Some("len"));
        assert_eq!(closest("max_cnt", options).as_deref(), Some("max_count"));
        assert_eq!(closest("byteordr", options).as_deref(), Some("byteorder"));
        assert_eq!(closest("zzz", options), None);
        // A swap of two adjacent characters is one edit.
        assert_eq!(
            closest("littel", ["big", "little"]).as_deref(),
            Some("little")
        );
        assert_eq!(closest("bgi", ["big", "little"]).as_deref(), Some("big"));
        assert_eq!(closest("lbs", ["msb", "lsb"]).as_deref(), Some("lsb"));
        assert_eq!(
            closest("payload_lne", ["payload", "payload_len"]).as_deref(),
            Some("payload_len")
        );
        // Short names: two edits are always near; the first of equals wins.
        assert_eq!(closest("m", ["n", "x"]).as_deref(), Some("n"));
        assert_eq!(closest("item_len", ["data"]), None);
        assert_eq!(closest("payload_len", ["payload"]), None);
        assert_eq!(closest("zz", ["len"]), None);
        assert_eq!(closest("", Vec::<String>::new()), None);
    }
}
