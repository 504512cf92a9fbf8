//! Unsigned LEB128 varints (7 bits per byte, low group first, high bit = more).

/// The longest varint (a `u64`).
pub const MAX_LEN: usize = 10;

/// Appends `v` as a varint.
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Number of bytes `put` writes for `v`.
#[inline]
pub fn len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Reads a varint at `*pos`; `None` if truncated, longer than 10 bytes or above `u64::MAX`.
#[inline]
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *buf.get(*pos)?;
        *pos += 1;
        let group = u64::from(byte & 0x7f);
        if shift == 63 && group > 1 {
            return None;
        }
        value |= group << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edges() {
        for v in [
            0u64,
            1,
            127,
            128,
            255,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(out.len(), len(v));
            let mut pos = 0;
            assert_eq!(get(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
        }
    }

    #[test]
    fn rejects_truncated_and_overlong() {
        let mut pos = 0;
        assert_eq!(get(&[0x80], &mut pos), None);
        let mut pos = 0;
        assert_eq!(get(&[0xff; 11], &mut pos), None);
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02);
        let mut pos = 0;
        assert_eq!(get(&too_big, &mut pos), None);
    }
}
