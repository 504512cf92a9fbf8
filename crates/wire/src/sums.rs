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
        for it in &run.items {
            if let Some(f) = it.field {
                let at = base + it.off;
                self.0[f as usize] = (at, at + it.scalar.span());
            }
        }
    }

    pub fn set(&mut self, field: u16, start: usize, end: usize) {
        self.0[field as usize] = (start, end);
    }
}

/// The checksum of `data[start..end]` (the whole struct) or of the covered fields, with the
/// checksum field's own bytes taken as zeros.
pub(crate) fn compute(
    cs: &Checksum,
    data: &[u8],
    start: usize,
    end: usize,
    ranges: &Ranges,
) -> DigestValue {
    let mut h = cs.algo.hasher();
    let (fs, fe) = ranges.0[cs.field as usize];
    match &cs.over {
        None => {
            h.update(&data[start..fs]);
            h.update_zeros(fe - fs);
            h.update(&data[fe..end]);
        }
        Some(fields) => {
            for (i, &f) in fields.iter().enumerate() {
                let (a, b) = ranges.0[f as usize];
                // Bit fields of one group share its bytes: cover them once.
                if a < b && fields[..i].iter().any(|&g| ranges.0[g as usize] == (a, b)) {
                    continue;
                }
                if f == cs.field {
                    h.update_zeros(b - a);
                } else {
                    h.update(&data[a..b]);
                }
            }
        }
    }
    h.finish()
}

/// The checksum as stored in its field's bytes.
pub(crate) fn stored(cs: &Checksum, data: &[u8], ranges: &Ranges) -> DigestValue {
    let (fs, fe) = ranges.0[cs.field as usize];
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
