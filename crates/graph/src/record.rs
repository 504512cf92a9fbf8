//! Opening a whole record: header, size limit, framing and integrity, before any decoding.

use crate::error::ReadError;
use crate::header::Header;
use crate::integrity::{self, TAG_LEN};
use crate::limits::Limits;

/// Checks everything outside the body and returns the body.
///
/// Order matters: size first (cheap, bounds all work), then framing, then the HMAC tag,
/// all before a single body byte is interpreted.
pub fn open<'a>(
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
