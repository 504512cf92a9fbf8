//! Errors of the reader, header and integrity check.

use std::fmt;

/// What went wrong, which decides the Python exception class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes are not a valid record (`UnpicklingError`).
    Malformed,
    /// A configured limit was exceeded (`LimitError`).
    Limit,
    /// The HMAC tag is missing, unexpected or wrong (`IntegrityError`).
    Integrity,
    /// The input ends where more must follow (`TruncatedError`, also an `EOFError`).
    Truncated,
    /// An argument with a bad value, where `pickle` raises `ValueError`.
    Value,
    /// An operation on the wrong type, where `pickle` raises `TypeError`.
    Type,
    /// A number too large, where `pickle` raises `OverflowError`.
    Overflow,
}

/// A decoding failure with the byte offset where it was noticed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    pub kind: ErrorKind,
    pub offset: usize,
    pub message: String,
}

impl ReadError {
    pub fn malformed(offset: usize, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Malformed,
            offset,
            message: message.into(),
        }
    }

    pub fn limit(offset: usize, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Limit,
            offset,
            message: message.into(),
        }
    }

    /// An error of the given kind (the kinds `pickle` itself distinguishes).
    pub fn of(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Self {
        Self {
            kind,
            offset,
            message: message.into(),
        }
    }

    pub fn truncated(offset: usize, message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Truncated, offset, message)
    }

    pub fn integrity(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Integrity,
            offset: 0,
            message: message.into(),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for ReadError {}
