//! Checksums and digests of struct fields: computed over byte ranges the VMs record.

use crate::digest::DigestValue;
use crate::program::{Checksum, Run, Scalar};

/// Byte range of each named field of one struct instance (empty for absent fields).
pub(crate) struct Ranges(pub Vec<(usize, usize)>);

impl Ranges {
    pub fn new(fields: usize) -> Self {
        Ranges(vec![(0, 0); fields])
    }

    /// Records the fields of a run that starts at `base`.
    pub fn run(&mut self, run: &Run, base: usize) {
        record_run(&mut self.0, run, base);
    }

    pub fn set(&mut self, field: u16, start: usize, end: usize) {
        self.0[field as usize] = (start, end);
    }
}

/// Records the fields of a run that starts at `base` in `ranges` (one entry per field).
#[inline]
pub(crate) fn record_run(ranges: &mut [(usize, usize)], run: &Run, base: usize) {
    for it in &run.items {
        if let Some(f) = it.field {
            let at = base + it.off;
            ranges[f as usize] = (at, at + it.scalar.span());
        }
    }
}

/// The checksum of `data[start..end]` (the whole struct) or of the covered fields, with the
/// checksum field's own bytes taken as zeros. `ranges` holds each field's byte range.
pub(crate) fn compute(
    cs: &Checksum,
    data: &[u8],
    start: usize,
    end: usize,
    ranges: &[(usize, usize)],
) -> DigestValue {
    let mut h = cs.algo.hasher();
    let (fs, fe) = ranges[cs.field as usize];
    match &cs.over {
        None => {
            h.update(&data[start..fs]);
            h.update_zeros(fe - fs);
            h.update(&data[fe..end]);
        }
        Some(fields) => {
            // Adjacent fields are fed as one range (a hasher gives the same result for any
            // split of its input); `reach` is where the furthest range so far ends.
            let (mut run_a, mut run_b, mut reach) = (0, 0, 0);
            for (i, &f) in fields.iter().enumerate() {
                let (a, b) = ranges[f as usize];
                // Bit fields of one group share its bytes: cover them once. Only a range
                // that starts before `reach` can equal an earlier one.
                if a < b && a < reach && fields[..i].iter().any(|&g| ranges[g as usize] == (a, b)) {
                    continue;
                }
                reach = reach.max(b);
                if f == cs.field {
                    h.update(&data[run_a..run_b]);
                    (run_a, run_b) = (0, 0);
                    h.update_zeros(b - a);
                } else if a == run_b {
                    run_b = b;
                } else {
                    h.update(&data[run_a..run_b]);
                    (run_a, run_b) = (a, b);
                }
            }
            h.update(&data[run_a..run_b]);
        }
    }
    h.finish()
}

/// The checksum as stored in its field's bytes.
pub(crate) fn stored(cs: &Checksum, data: &[u8], ranges: &[(usize, usize)]) -> DigestValue {
    let (fs, fe) = ranges[cs.field as usize];
    let b = &data[fs..fe];
    match cs.scalar {
        Scalar::Int { big, .. } => {
            let v = if big {
                b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
            } else {
                b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x))
            };
            DigestValue::Int(v)
        }
        _ => DigestValue::Bytes(b.to_vec()),
    }
}

/// Writes a computed checksum into its field's bytes.
pub(crate) fn write(cs: &Checksum, value: &DigestValue, dst: &mut [u8]) {
    match (value, cs.scalar) {
        (DigestValue::Int(v), Scalar::Int { big, width, .. }) => {
            let n = width as usize;
            for (i, b) in dst[..n].iter_mut().enumerate() {
                let k = if big { n - 1 - i } else { i };
                *b = (v >> (8 * k)) as u8;
            }
        }
        (DigestValue::Bytes(d), _) => dst[..d.len()].copy_from_slice(d),
        _ => {}
    }
}

pub(crate) fn show(v: &DigestValue, width: usize) -> String {
    match v {
        DigestValue::Int(i) => format!("0x{i:0w$x}", w = width * 2),
        DigestValue::Bytes(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}
