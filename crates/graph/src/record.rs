//! Opening a whole record: header, size limit, framing and integrity, before any decoding.

use crate::error::ReadError;
use crate::header::{Header, MAGIC, VERSION};
use crate::integrity::{self, TAG_LEN};
use crate::limits::Limits;

/// Checks everything outside the body and returns the body.
///
/// Order matters: size first (cheap, bounds all work), then framing, then the HMAC tag,
/// all before a single body byte is interpreted.
#[inline(always)]
pub fn open<'a>(
    input: &'a [u8],
    key: Option<&[u8]>,
    limits: &Limits,
) -> Result<&'a [u8], ReadError> {
    if key.is_none() {
        if let Some(body) = open_plain(input, limits) {
            return Ok(body);
        }
    }
    open_checked(input, key, limits)
}

/// The common record, read inline: unsigned (and no key given), its body length in at
/// most three bytes, and exactly as long as its header says. `None` leaves anything else,
/// every error among it, to [`open_checked`], which takes the same records the same way.
#[inline(always)]
fn open_plain<'a>(input: &'a [u8], limits: &Limits) -> Option<&'a [u8]> {
    let [m0, m1, VERSION, 0, b0, ref rest @ ..] = *input else {
        return None;
    };
    if [m0, m1] != MAGIC {
        return None;
    }
    let (body_len, header_len) = match (b0, rest) {
        (0..0x80, _) => (usize::from(b0), 5),
        (_, &[b1, ..]) if b1 < 0x80 => (usize::from(b0 & 0x7f) | usize::from(b1) << 7, 6),
        (_, &[b1, b2, ..]) if b2 < 0x80 => (
            usize::from(b0 & 0x7f) | usize::from(b1 & 0x7f) << 7 | usize::from(b2) << 14,
            7,
        ),
        _ => return None,
    };
    if header_len + body_len != input.len() || input.len() as u64 > limits.max_bytes {
        return None;
    }
    input.get(header_len..)
}

/// [`open`] in full.
#[inline(never)]
fn open_checked<'a>(
    input: &'a [u8],
    key: Option<&[u8]>,
    limits: &Limits,
) -> Result<&'a [u8], ReadError> {
    if input.len() as u64 > limits.max_bytes {
        return Err(ReadError::limit(
            0,
            format!(
                "input of {} bytes exceeds the limit of {}",
                input.len(),
                limits.max_bytes
            ),
        ));
    }
    let header = Header::parse(input)?;
    let total = header.record_len();
    if total > input.len() as u64 {
        return Err(ReadError::truncated(
            input.len(),
            format!(
                "truncated record: the header announces {total} bytes but {} are present",
                input.len()
            ),
        ));
    }
    if total < input.len() as u64 {
        return Err(ReadError::malformed(
            total as usize,
            format!(
                "{} trailing bytes after the record",
                input.len() as u64 - total
            ),
        ));
    }
    let body_end = input.len() - if header.signed() { TAG_LEN } else { 0 };
    match (header.signed(), key) {
        (true, None) => {
            return Err(ReadError::integrity(
                "the record is signed; pass hmac_key= to verify and load it",
            ))
        }
        (false, Some(_)) => {
            return Err(ReadError::integrity(
                "the record is not signed but hmac_key= was given; refusing unauthenticated data",
            ))
        }
        (true, Some(key)) => {
            if !integrity::verify(key, &input[..body_end], &input[body_end..]) {
                return Err(ReadError::integrity(
                    "HMAC check failed: the record was altered or the key is wrong",
                ));
            }
        }
        (false, None) => {}
    }
    Ok(&input[header.header_len..body_end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::writer::Writer;

    fn record(key: Option<&[u8]>) -> Vec<u8> {
        let mut w = Writer::default();
        w.str(b"payload");
        let (buf, start) = w.finish(key);
        buf[start..].to_vec()
    }

    #[test]
    fn signed_and_unsigned() {
        let l = Limits::default();
        assert_eq!(open(&record(None), None, &l).unwrap(), b"\x47payload");
        assert!(open(&record(Some(b"k")), Some(b"k"), &l).is_ok());
        assert_eq!(
            open(&record(Some(b"k")), None, &l).unwrap_err().kind,
            ErrorKind::Integrity
        );
        assert_eq!(
            open(&record(None), Some(b"k"), &l).unwrap_err().kind,
            ErrorKind::Integrity
        );
        assert_eq!(
            open(&record(Some(b"k")), Some(b"j"), &l).unwrap_err().kind,
            ErrorKind::Integrity
        );
        let mut tampered = record(Some(b"k"));
        tampered[6] ^= 1;
        assert_eq!(
            open(&tampered, Some(b"k"), &l).unwrap_err().kind,
            ErrorKind::Integrity
        );
    }

    #[test]
    fn the_inline_path_agrees_with_the_full_one() {
        let same = |input: &[u8], limits: &Limits| {
            let (a, b) = (open(input, None, limits), open_checked(input, None, limits));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{input:?}");
        };
        let l = Limits::default();
        // Body lengths at each varint width the inline path takes, and past it.
        for n in [
            0usize,
            1,
            127,
            128,
            300,
            16383,
            16384,
            (1 << 21) - 1,
            1 << 21,
        ] {
            let mut w = Writer::default();
            w.bytes(&vec![7u8; n.saturating_sub(4)]);
            let (buf, start) = w.finish(None);
            let r = &buf[start..];
            same(r, &l);
            assert!(open(r, None, &l).is_ok());
            same(&r[..r.len() - 1], &l);
            let mut longer = r.to_vec();
            longer.push(0);
            same(&longer, &l);
            let tight = Limits {
                max_bytes: r.len() as u64 - 1,
                ..Limits::default()
            };
            same(r, &tight);
        }
        // Every cut, every byte of the header changed, a non-minimal length.
        let r = record(None);
        for cut in 0..=r.len() {
            same(&r[..cut], &l);
        }
        for at in 0..6 {
            for v in 0..=255u8 {
                let mut t = r.clone();
                t[at] = v;
                same(&t, &l);
            }
        }
        let mut padded = r[..4].to_vec();
        padded.extend_from_slice(&[0x88, 0x00]);
        padded.extend_from_slice(&r[5..]);
        same(&padded, &l);
        assert!(open(&padded, None, &l).is_ok());
    }

    #[test]
    fn framing_and_size() {
        let l = Limits::default();
        let mut r = record(None);
        r.push(0);
        assert!(open(&r, None, &l).unwrap_err().message.contains("trailing"));
        assert!(open(&record(None)[..6], None, &l)
            .unwrap_err()
            .message
            .contains("truncated"));
        let small = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        assert_eq!(
            open(&record(None), None, &small).unwrap_err().kind,
            ErrorKind::Limit
        );
    }
}
