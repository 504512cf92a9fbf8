//! HMAC-SHA256 signing and constant-time verification of records.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Length of the tag appended to a signed record.
pub const TAG_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

fn keyed(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length, so construction cannot fail.
    match HmacSha256::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC takes keys of any length"),
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

    #[test]
    fn rfc4231_case_2() {
        let tag = sign(b"Jefe", b"what do ya want for nothing?");
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
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
}
