//! Large copies of str and bytes data: the pickle format's `dumps` and `loads` of big
//! strings and buffers, whose time is one copy (the writer's data of 4 KiB and up, the
//! deferred chunks of `dumps` and the new objects of `loads`).
//!
//! glibc's `memcpy` moves blocks of a few KiB and up with `rep movsb`. On the AMD machines
//! `make bench` runs on, that instruction is about 10% slower when the source and the
//! destination are not equally placed within 32 bytes (100,000 bytes copied again and
//! again: 1.90 against 1.72 us with the loop below), which is most copies here: a bytes
//! object's data starts 32 bytes into its block, behind a record header of varying length.
//! [`copy`] moves such blocks with 32-byte loads from anywhere and 32-byte stores on 32-byte
//! boundaries instead. From 512 KiB up `memcpy` is kept: `loads` of 1 MiB of bytes (into a
//! new object each call) measured about 5% slower with the loop than with it.

/// Sizes [`copy`] moves itself when their placements differ: from where a loop of 128-byte
/// steps pays for its set-up, up to where it stopped beating `memcpy` (see above).
pub const OWN_FROM: usize = 4 << 10;
const OWN_TO: usize = 512 << 10;

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes, and the two do not overlap.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if (OWN_FROM..=OWN_TO).contains(&n)
        && (dst as usize ^ src as usize) & 31 != 0
        && std::arch::is_x86_feature_detected!("avx2")
    {
        // SAFETY: as the caller guarantees; AVX2 is present (checked just above).
        return unsafe { copy_avx2(dst, src, n) };
    }
    // SAFETY: as the caller guarantees.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
}

/// [`copy`] with AVX2: the first 32 bytes unaligned, then 32-byte stores on the boundaries
/// of the destination, four per step, and the last 32 bytes unaligned again (rewriting some
/// bytes with the same values).
///
/// # Safety
/// As [`copy`], with `n >= 128` and AVX2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_avx2(dst: *mut u8, src: *const u8, n: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_store_si256, _mm256_storeu_si256};
    // SAFETY: every load reads 32 bytes at an offset in 0..=n-32 of `src`, every store
    // writes 32 bytes at the same offset of `dst` (the caller's ranges, n >= 128); the
    // stores in the loops are at offsets where `dst` is 32-byte aligned.
    unsafe {
        let load = |at: usize| _mm256_loadu_si256(src.add(at).cast::<__m256i>());
        _mm256_storeu_si256(dst.cast::<__m256i>(), load(0));
        let mut at = (32 - (dst as usize & 31)) & 31;
        while at + 128 <= n {
            let (a, b, c, d) = (load(at), load(at + 32), load(at + 64), load(at + 96));
            _mm256_store_si256(dst.add(at).cast::<__m256i>(), a);
            _mm256_store_si256(dst.add(at + 32).cast::<__m256i>(), b);
            _mm256_store_si256(dst.add(at + 64).cast::<__m256i>(), c);
            _mm256_store_si256(dst.add(at + 96).cast::<__m256i>(), d);
            at += 128;
        }
        while at + 32 <= n {
            _mm256_store_si256(dst.add(at).cast::<__m256i>(), load(at));
            at += 32;
        }
        if at < n {
            _mm256_storeu_si256(dst.add(n - 32).cast::<__m256i>(), load(n - 32));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte arrives, and none past the end is touched, whatever the placements and
    /// around the sizes where the own loop starts and stops.
    #[test]
    fn copies_every_placement() {
        for n in [
            0,
            1,
            31,
            4095,
            OWN_FROM,
            OWN_FROM + 1,
            12_001,
            OWN_TO,
            OWN_TO + 1,
        ] {
            let src: Vec<u8> = (0..n + 64).map(|i| (i * 7 % 251) as u8).collect();
            for s in [0, 1, 5, 17, 31, 32] {
                for d in [0, 3, 8, 16, 29, 32] {
                    let mut dst = vec![0xAAu8; n + 64];
                    // SAFETY: both ranges lie inside their vectors (64 bytes of slack).
                    unsafe { copy(dst.as_mut_ptr().add(d), src.as_ptr().add(s), n) };
                    assert_eq!(&dst[d..d + n], &src[s..s + n], "n={n} s={s} d={d}");
                    assert!(dst[..d].iter().chain(&dst[d + n..]).all(|&b| b == 0xAA));
                }
            }
        }
    }
}
