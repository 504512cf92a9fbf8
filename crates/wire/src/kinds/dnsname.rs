//! DNS domain names (RFC 1035 section 4.1.4): labels with compression pointers.
//!
//! A name decodes to its text form, `www.example.com.` (always with the final dot; the root
//! is `.`), with bytes outside printable ASCII and the characters `.` and `\` inside a label
//! written as `\DDD`. Pointers are offsets from the start of the outermost value being
//! unpacked (the DNS message); each must point strictly backwards from the pointer itself,
//! so pointer loops are impossible, and a name is bounded to 127 labels and 255 bytes.
//! On pack, a compressing name reuses the longest suffix already written in this message.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{Column, FieldKind};
use crate::error::{Error, Result as VmResult};
use crate::host::{Output, Sink, Source};
use crate::pack::Enc;
use crate::program::Encoding;
use crate::unpack::Dec;

/// A DNS domain name, compressed on pack when `compress` is set.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct DnsName {
    #[serde(default)]
    pub compress: bool,
}

impl FieldKind for DnsName {
    const NAME: &'static str = "dnsname";

    fn min_size(&self) -> usize {
        1
    }

    fn column(&self) -> Column {
        Column::Text
    }

    fn decode<S: Sink>(&self, d: &mut Dec<'_, '_, '_, S>) -> VmResult<S::Value, S::Error> {
        match decode(d.buf, d.base, d.pos, d.end) {
            Ok((text, end)) => {
                d.pos = end;
                d.sink.str(&text, true).map_err(|e| d.host(e))
            }
            Err(DecodeFail::Short { need, .. }) => Err(d.short(need)),
            Err(DecodeFail::Invalid(m, at)) => Err(Error::invalid(m, at)),
        }
    }

    fn encode<S: Source, O: Output>(
        &self,
        e: &mut Enc<'_, '_, '_, '_, S, O>,
        v: &S::Value,
    ) -> VmResult<(), S::Error> {
        let t = e.src.text(v, Encoding::Ascii).map_err(|x| e.src_err(x))?;
        let (wire, starts) = encode(&t).map_err(|m| e.invalid(m))?;
        let at = e.out.pos() - e.base;
        let bytes = e.kinds.dnsname.compress(&wire, &starts, at, self.compress);
        e.put(&bytes)
    }
}

/// Longest name on the wire, terminating zero included (RFC 1035 section 3.1).
pub const MAX_WIRE: usize = 255;
/// Most labels a name of at most 255 bytes can hold (each at least two bytes).
pub const MAX_LABELS: usize = 127;

/// Why a name cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeFail {
    /// The name runs past the end of the region: `need` bytes at the offset, `left` there.
    Short { need: usize, left: usize },
    /// Malformed: the message and the absolute offset of the offending byte.
    Invalid(String, usize),
}

/// Decodes a name at `pos` (absolute) in `buf`, reading its in-place labels up to `end`.
/// Pointers are relative to `base`. Returns the text and the end of the in-place part.
pub fn decode(
    buf: &[u8],
    base: usize,
    pos: usize,
    end: usize,
) -> Result<(String, usize), DecodeFail> {
    let mut text = String::new();
    let mut at = pos;
    // The in-place part ends after the first pointer (or the terminating zero).
    let mut resume: Option<usize> = None;
    // Where the name may read: the region for the in-place part, the bytes before a
    // pointer once one is followed.
    let mut limit = end;
    let mut labels = 0usize;
    let mut wire = 1usize;
    loop {
        if at >= limit {
            return Err(short_or_bad(resume, at, limit, 1));
        }
        let len = buf[at] as usize;
        match len & 0xC0 {
            0x00 if len == 0 => {
                at += 1;
                break;
            }
            0x00 => {
                if at + 1 + len > limit {
                    return Err(short_or_bad(resume, at, limit, 1 + len));
                }
                labels += 1;
                wire += 1 + len;
                if labels > MAX_LABELS || wire > MAX_WIRE {
                    return Err(DecodeFail::Invalid(
                        format!("the name is longer than {MAX_WIRE} bytes"),
                        at,
                    ));
                }
                escape_label(&buf[at + 1..at + 1 + len], &mut text);
                text.push('.');
                at += 1 + len;
            }
            0xC0 => {
                if at + 2 > limit {
                    return Err(short_or_bad(resume, at, limit, 2));
                }
                let off = (usize::from(buf[at] & 0x3F) << 8) | usize::from(buf[at + 1]);
                let target = base + off;
                if target >= at {
                    return Err(DecodeFail::Invalid(
                        format!("the compression pointer to {off} does not point backwards"),
                        at,
                    ));
                }
                if resume.is_none() {
                    resume = Some(at + 2);
                }
                limit = at;
                at = target;
            }
            _ => {
                return Err(DecodeFail::Invalid(
                    format!("unsupported label type {len:#04x}"),
                    at,
                ))
            }
        }
    }
    if text.is_empty() {
        text.push('.');
    }
    Ok((text, resume.unwrap_or(at)))
}

/// Running past the region is "short" in the in-place part, malformed behind a pointer.
fn short_or_bad(resume: Option<usize>, at: usize, limit: usize, need: usize) -> DecodeFail {
    match resume {
        None => DecodeFail::Short {
            need,
            left: limit.saturating_sub(at),
        },
        Some(_) => DecodeFail::Invalid("a compressed name runs into its own pointer".into(), at),
    }
}

fn escape_label(label: &[u8], out: &mut String) {
    for &c in label {
        match c {
            b'.' | b'\\' | 0..=0x20 | 0x7F..=0xFF => {
                let _ = write!(out, "\\{c:03}");
            }
            _ => out.push(c as char),
        }
    }
}

/// The uncompressed wire form of a text name (terminating zero included) and the offset of
/// each label within it. Accepts the name with or without its final dot, and `\DDD` and
/// `\X` escapes.
pub fn encode(text: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut wire = Vec::with_capacity(text.len() + 2);
    let mut starts: Vec<u8> = Vec::new();
    if text != b"." && !text.is_empty() {
        let mut i = 0;
        let mut label_at = 0usize;
        let mut open = true;
        wire.push(0);
        while i < text.len() {
            if wire.len() >= MAX_WIRE {
                return Err(format!("the name is longer than {MAX_WIRE} bytes"));
            }
            let c = text[i];
            match c {
                b'.' => {
                    close_label(&mut wire, &mut starts, label_at)?;
                    open = i + 1 < text.len();
                    if open {
                        label_at = wire.len();
                        wire.push(0);
                    }
                }
                b'\\' => {
                    let rest = &text[i + 1..];
                    if rest.len() >= 3 && rest[..3].iter().all(u8::is_ascii_digit) {
                        let v = rest[..3]
                            .iter()
                            .fold(0u32, |a, d| a * 10 + u32::from(d - b'0'));
                        if v > 255 {
                            return Err(format!("the escape \\{v} is not a byte"));
                        }
                        wire.push(v as u8);
                        i += 3;
                    } else if let Some(&x) = rest.first() {
                        wire.push(x);
                        i += 1;
                    } else {
                        return Err("the name ends with a lone backslash".into());
                    }
                }
                _ => wire.push(c),
            }
            i += 1;
        }
        if open {
            close_label(&mut wire, &mut starts, label_at)?;
        }
    }
    wire.push(0);
    if wire.len() > MAX_WIRE {
        return Err(format!(
            "the name is {} bytes on the wire, more than {MAX_WIRE}",
            wire.len()
        ));
    }
    Ok((wire, starts))
}

fn close_label(wire: &mut [u8], starts: &mut Vec<u8>, at: usize) -> Result<(), String> {
    let n = wire.len() - at - 1;
    if n == 0 {
        return Err("the name has an empty label".into());
    }
    if n > 63 {
        return Err(format!("a label is {n} bytes, more than 63"));
    }
    wire[at] = n as u8;
    starts.push(at as u8);
    Ok(())
}

/// The names written so far in the message being packed: each suffix's wire form and its
/// offset from the start of the message.
#[derive(Default)]
pub struct Table {
    suffixes: Vec<(Box<[u8]>, u16)>,
}

impl Table {
    pub fn clear(&mut self) {
        self.suffixes.clear();
    }

    /// The bytes to write for `wire` at message offset `at`: the labels before the longest
    /// suffix already known, then a pointer to it (or the whole name). Records the new
    /// suffixes when `compress` is set.
    pub fn compress(&mut self, wire: &[u8], starts: &[u8], at: usize, compress: bool) -> Vec<u8> {
        if !compress {
            return wire.to_vec();
        }
        let mut out = Vec::with_capacity(wire.len());
        for &s in starts {
            let suffix = &wire[s as usize..];
            if let Some(&(_, off)) = self.suffixes.iter().find(|(k, _)| &**k == suffix) {
                out.extend_from_slice(&(0xC000 | off).to_be_bytes());
                return out;
            }
            let here = at + out.len();
            if here < 0x4000 {
                self.suffixes.push((suffix.into(), here as u16));
            }
            let len = wire[s as usize] as usize;
            out.extend_from_slice(&wire[s as usize..s as usize + 1 + len]);
        }
        out.push(0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire_of(t: &str) -> Vec<u8> {
        encode(t.as_bytes()).unwrap().0
    }

    #[test]
    fn encodes_with_and_without_final_dot() {
        assert_eq!(wire_of("www.example.com"), b"\x03www\x07example\x03com\x00");
        assert_eq!(
            wire_of("www.example.com."),
            b"\x03www\x07example\x03com\x00"
        );
        assert_eq!(wire_of("."), b"\x00");
        assert_eq!(wire_of(""), b"\x00");
        assert_eq!(wire_of("a\\.b.c"), b"\x03a.b\x01c\x00");
        assert_eq!(wire_of("a\\046b\\000.c."), b"\x04a.b\x00\x01c\x00");
        assert_eq!(wire_of("a\\\\."), b"\x02a\\\x00");
    }

    #[test]
    fn rejects_bad_names() {
        assert!(encode(b"a..b").is_err());
        assert!(encode(b".a").is_err());
        assert!(encode(&[b'x'; 64]).is_err());
        let long = vec!["abcdefghi"; 26].join(".");
        assert!(encode(long.as_bytes()).is_err());
        assert!(encode(b"a\\999").is_err());
        assert!(encode(b"a\\").is_err());
    }

    #[test]
    fn decodes_pointers_backwards_only() {
        let msg = b"\x01a\x00\x01b\xc0\x00";
        assert_eq!(decode(msg, 0, 0, msg.len()).unwrap(), ("a.".into(), 3));
        assert_eq!(decode(msg, 0, 3, msg.len()).unwrap(), ("b.a.".into(), 7));
        // A pointer to itself, and a forward pointer.
        let looped = b"\x01a\xc0\x00";
        assert!(matches!(
            decode(looped, 0, 0, 4),
            Err(DecodeFail::Invalid(..))
        ));
        let fwd = b"\xc0\x02\x00";
        assert!(matches!(decode(fwd, 0, 0, 3), Err(DecodeFail::Invalid(..))));
        // A backward pointer to a label that runs into the pointer.
        let into = b"\x05ab\xc0\x00";
        assert!(matches!(
            decode(into, 0, 3, 5),
            Err(DecodeFail::Invalid(..))
        ));
        assert!(matches!(
            decode(b"\x03ab", 0, 0, 3),
            Err(DecodeFail::Short { need: 4, left: 3 })
        ));
        assert!(matches!(
            decode(b"\x40", 0, 0, 1),
            Err(DecodeFail::Invalid(..))
        ));
        assert_eq!(
            decode(b"\x03a.\xff\x00", 0, 0, 5).unwrap().0,
            "a\\046\\255."
        );
    }

    #[test]
    fn compresses_the_longest_known_suffix() {
        let mut t = Table::default();
        let (w, s) = encode(b"www.example.com").unwrap();
        assert_eq!(t.compress(&w, &s, 12, true), w);
        let (w2, s2) = encode(b"mail.example.com").unwrap();
        assert_eq!(t.compress(&w2, &s2, 40, true), b"\x04mail\xc0\x10");
        let (w3, s3) = encode(b"example.com").unwrap();
        assert_eq!(t.compress(&w3, &s3, 60, true), b"\xc0\x10");
        assert_eq!(t.compress(&w3, &s3, 60, false), w3);
        let (r, rs) = encode(b".").unwrap();
        assert_eq!(t.compress(&r, &rs, 70, true), b"\x00");
    }

    #[test]
    fn round_trips_escapes() {
        for t in ["a\\046b.c.", "x\\092y.", "\\000\\255.", "."] {
            let (w, _) = encode(t.as_bytes()).unwrap();
            assert_eq!(decode(&w, 0, 0, w.len()).unwrap().0, t);
        }
    }
}
