//! HMAC-SHA256 signing and constant-time verification of records.
//!
//! Keying HMAC hashes two blocks (the inner and outer padded keys) before any data. Each
//! thread keeps the keyed state of the last key it used, so a caller that signs many small
//! records with one key pays those two blocks once, not per record.

use std::cell::RefCell;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Length of the tag appended to a signed record.
pub const TAG_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// Keys longer than this are keyed anew on every call rather than kept per thread.
const KEEP_KEY_MAX: usize = 256;

thread_local! {
    /// The last key this thread used and its keyed HMAC state (cloned per call).
    static KEYED: RefCell<Option<(Vec<u8>, HmacSha256)>> = const { RefCell::new(None) };
}

fn new_keyed(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length, so construction cannot fail.
    match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    }
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A MAC keyed with `key`: this thread's kept state when the key is the last one used.
fn keyed(key: &[u8]) -> HmacSha256 {
    if key.len() > KEEP_KEY_MAX {
        return new_keyed(key);
    }
    let kept = KEYED.try_with(|slot| {
        let mut slot = slot.try_borrow_mut().ok()?;
        if let Some((k, mac)) = slot.as_ref() {
            if same_key(k, key) {
                return Some(mac.clone());
            }
        }
        let mac = new_keyed(key);
        *slot = Some((key.to_vec(), mac.clone()));
        Some(mac)
    });
    match kept {
        Ok(Some(mac)) => mac,
        _ => new_keyed(key),
    }
}

/// The tag of `data` under `key`.
pub fn sign(key: &[u8], data: &[u8]) -> [u8; TAG_LEN] {
    let mut mac = keyed(key);
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Whether `tag` is the tag of `data` under `key`, compared in constant time.
pub fn verify(key: &[u8], data: &[u8], tag: &[u8]) -> bool {
    let mut mac = keyed(key);
    mac.update(data);
    mac.verify_slice(tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(tag: &[u8]) -> String {
        tag.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn rfc4231_case_2() {
        let tag = sign(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&tag),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(verify(b"Jefe", b"what do ya want for nothing?", &tag));
        assert!(!verify(b"Jefe", b"what do ya want for nothing!", &tag));
        assert!(!verify(
            b"Jefe",
            b"what do ya want for nothing?",
            &tag[..31]
        ));
    }

    #[test]
    fn kept_keys_give_the_tags_of_fresh_ones() {
        // RFC 4231 case 6: a 131-byte key (hashed first); case 2 again after it, and keys
        // that differ only in length or in their last byte.
        let long = [0xaau8; 131];
        let data = b"Test Using Larger Than Block-Size Key - Hash Key First";
        let want = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
        for _ in 0..2 {
            assert_eq!(hex(&sign(&long, data)), want);
            assert_eq!(
                hex(&sign(b"Jefe", b"what do ya want for nothing?")),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            );
        }
        let a = sign(b"key-a", b"data");
        assert_ne!(a, sign(b"key-b", b"data"));
        // HMAC pads short keys with zeros: a trailing zero byte is the same key.
        assert_eq!(a, sign(b"key-a\0", b"data"));
        assert_ne!(a, sign(b"key-", b"data"));
        assert_eq!(a, sign(b"key-a", b"data"));
        assert!(verify(b"key-a", b"data", &a));
        assert!(!verify(b"key-b", b"data", &a));
        let huge = vec![7u8; KEEP_KEY_MAX + 1];
        assert_eq!(sign(&huge, b"x"), sign(&huge, b"x"));
        assert!(verify(&huge, b"x", &sign(&huge, b"x")));
    }
}
