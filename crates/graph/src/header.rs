//! The record header: magic, format version, flags and body length.

use crate::error::ReadError;
use crate::integrity::TAG_LEN;
use crate::varint;

/// First two bytes of every record.
pub const MAGIC: [u8; 2] = *b"BW";
/// The only format version this crate reads and writes.
pub const VERSION: u8 = 1;
/// Flag bit: a 32-byte HMAC-SHA256 tag follows the body.
pub const FLAG_SIGNED: u8 = 0x01;
const KNOWN_FLAGS: u8 = FLAG_SIGNED;
/// Longest possible header: magic, version, flags and a 10-byte varint.
pub const MAX_HEADER_LEN: usize = 4 + 10;

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub flags: u8,
    pub body_len: u64,
    /// Bytes the header itself occupies.
    pub header_len: usize,
}

impl Header {
    pub fn signed(&self) -> bool {
        self.flags & FLAG_SIGNED != 0
    }

    /// Length of the whole record: header, body and tag.
    pub fn record_len(&self) -> u64 {
        let tag = if self.signed() { TAG_LEN as u64 } else { 0 };
        (self.header_len as u64)
            .saturating_add(self.body_len)
            .saturating_add(tag)
    }

    /// Writes a header for a body of `body_len` bytes.
    pub fn write(out: &mut Vec<u8>, flags: u8, body_len: u64) {
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(flags);
        varint::put(out, body_len);
    }

    /// The header bytes for a body of `body_len` bytes, without allocating.
    pub fn encode(flags: u8, body_len: u64) -> ([u8; MAX_HEADER_LEN], usize) {
        let mut out = [0u8; MAX_HEADER_LEN];
        out[..2].copy_from_slice(&MAGIC);
        out[2] = VERSION;
        out[3] = flags;
        let mut n = 4;
        let mut v = body_len;
        while v >= 0x80 {
            out[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        out[n] = v as u8;
        (out, n + 1)
    }

    /// Parses the header at the start of `buf`, enforcing magic, version and flags.
    pub fn parse(buf: &[u8]) -> Result<Header, ReadError> {
        if buf.len() < 2 || buf[..2] != MAGIC {
            if buf.is_empty() {
                return Err(ReadError::truncated(0, "empty input: no record to read"));
            }
            if MAGIC.starts_with(buf) {
                return Err(truncated(buf.len()));
            }
            return Err(ReadError::malformed(
                0,
                format!(
                    "not a bytewright.pickle record: the input looks like {}",
                    describe(buf)
                ),
            ));
        }
        let version = *buf.get(2).ok_or_else(|| truncated(2))?;
        if version != VERSION {
            return Err(ReadError::malformed(
                2,
                format!(
                    "unsupported format version {version} (this release reads version {VERSION})"
                ),
            ));
        }
        let flags = *buf.get(3).ok_or_else(|| truncated(3))?;
        if flags & !KNOWN_FLAGS != 0 {
            return Err(ReadError::malformed(
                3,
                format!("unknown header flags 0x{flags:02x}"),
            ));
        }
        let mut pos = 4;
        let body_len = varint::get(buf, &mut pos).ok_or_else(|| {
            // Cut short (every byte read says more follows), or too long to be a length.
            if pos >= buf.len() && buf[4..].iter().all(|b| b & 0x80 != 0) {
                truncated(buf.len())
            } else {
                ReadError::malformed(4, "truncated or invalid record length in the header")
            }
        })?;
        Ok(Header {
            flags,
            body_len,
            header_len: pos,
        })
    }
}

fn truncated(offset: usize) -> ReadError {
    ReadError::truncated(offset, "truncated record: the input ends inside its header")
}

/// A short human description of input that is not one of our records.
pub fn describe(buf: &[u8]) -> String {
    match buf {
        [] => "empty input".to_string(),
        [0x80, proto, ..] => {
            format!("a standard pickle stream (protocol {proto}), which this module never loads; read it with pickle.loads_pickle")
        }
        [b'(' | b']' | b'}' | b'c' | b'I' | b'N' | b'S' | b'V', ..] if buf.ends_with(b".") => {
            "a standard pickle stream (protocol 0 or 1), which this module never loads; read it with pickle.loads_pickle".to_string()
        }
        _ => {
            let head = &buf[..buf.len().min(8)];
            if head
                .iter()
                .all(|b| (0x20..0x7f).contains(b) || b.is_ascii_whitespace())
            {
                format!("text starting with {:?}", String::from_utf8_lossy(head))
            } else {
                let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
                format!("binary data starting with {}", hex.join(" "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut out = Vec::new();
        Header::write(&mut out, FLAG_SIGNED, 300);
        let h = Header::parse(&out).unwrap();
        assert_eq!(
            h,
            Header {
                flags: FLAG_SIGNED,
                body_len: 300,
                header_len: 6
            }
        );
        assert_eq!(h.record_len(), 6 + 300 + 32);
    }

    #[test]
    fn rejects_bad_headers() {
        assert!(Header::parse(b"").is_err());
        assert!(Header::parse(b"B")
            .unwrap_err()
            .message
            .contains("truncated"));
        assert!(Header::parse(b"\x80\x05\x95")
            .unwrap_err()
            .message
            .contains("pickle"));
        assert!(Header::parse(b"BW\x02\x00\x00")
            .unwrap_err()
            .message
            .contains("version 2"));
        assert!(Header::parse(b"BW\x01\x02\x00")
            .unwrap_err()
            .message
            .contains("flags"));
        assert!(Header::parse(b"BW\x01\x00")
            .unwrap_err()
            .message
            .contains("truncated"));
    }
}
