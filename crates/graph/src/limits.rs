//! Decoding limits, all checked before anything is allocated.

/// Upper bounds for one record. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Size of the whole record, header and tag included.
    pub max_bytes: u64,
    /// Open containers at once.
    pub max_depth: u64,
    /// Values in the record, containers and atoms alike.
    pub max_items: u64,
    /// Items of one container (pairs for dicts).
    pub max_container_len: u64,
    /// UTF-8 bytes of one str (also class and field names).
    pub max_str_len: u64,
    /// Length of one bytes or bytearray.
    pub max_bytes_len: u64,
    /// Decimal digits of one int.
    pub max_int_digits: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 1 << 30,
            max_depth: 2_000,
            max_items: 1 << 30,
            max_container_len: 1 << 30,
            max_str_len: 1 << 30,
            max_bytes_len: 1 << 30,
            max_int_digits: 2_500_000_000,
        }
    }
}

impl Limits {
    /// Largest two's-complement byte length an int may have: 8 bits are 2.408 digits.
    pub fn max_int_bytes(&self) -> u64 {
        self.max_int_digits.saturating_mul(1000) / 2408 + 1
    }
}
