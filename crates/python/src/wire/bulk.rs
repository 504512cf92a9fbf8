//! `pack_many`'s fast lane: when the root struct is one run of plain integers (the bulk-record
//! case), a tuple of ints is written without the VM. Anything else, or any value the lane
//! does not take, goes through the VM, which also produces the errors.

use pyo3::ffi;
use pyo3::prelude::*;

use bytewright_wire::program::{Node, Program, Scalar, Step};

use super::source::long_to_i128;
use super::structs::StructInfo;

struct Slot {
    off: usize,
    width: u8,
    big: bool,
    /// The field's range.
    min: i128,
    max: i128,
}

pub struct FlatInts {
    pub size: usize,
    slots: Vec<Slot>,
}

/// The fast lane for this program, if its root is a struct of plain integers only.
pub fn flat_ints(prog: &Program, infos: &[StructInfo]) -> Option<FlatInts> {
    let Node::Struct(root) = prog.root else {
        return None;
    };
    let sp = &prog.structs[root as usize];
    let [Step::Run(run)] = sp.steps.as_slice() else {
        return None;
    };
    let info = infos.get(sp.sink_id as usize)?;
    if !run.plain || !sp.checksums.is_empty() || info.encoders.iter().any(Option::is_some) {
        return None;
    }
    let mut slots = Vec::with_capacity(run.items.len());
    for (i, it) in run.items.iter().enumerate() {
        match (it.scalar, it.field) {
            (Scalar::Int { width, signed, big }, Some(f))
                if f as usize == i && it.slot.is_none() =>
            {
                if !matches!(width, 1 | 2 | 3 | 4 | 8) {
                    return None;
                }
                let bits = u32::from(width) * 8;
                let (min, max) = if signed {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                slots.push(Slot {
                    off: it.off,
                    width,
                    big,
                    min,
                    max,
                })
            }
            _ => return None,
        }
    }
    (slots.len() == sp.fields.len()).then_some(FlatInts {
        size: run.size,
        slots,
    })
}

impl FlatInts {
    /// Writes `item` into `dst` (`self.size` bytes) when it is a tuple of in-range ints;
    /// `false` leaves the item to the VM.
    pub fn pack(&self, item: &Bound<'_, PyAny>, dst: &mut [u8]) -> bool {
        let p = item.as_ptr();
        // SAFETY: type and size checks before reading the tuple's items, which `item` keeps alive.
        unsafe {
            if ffi::PyTuple_CheckExact(p) == 0
                || ffi::PyTuple_GET_SIZE(p) as usize != self.slots.len()
            {
                return false;
            }
            for (i, s) in self.slots.iter().enumerate() {
                let v = ffi::PyTuple_GET_ITEM(p, i as ffi::Py_ssize_t);
                if ffi::PyLong_CheckExact(v) == 0 {
                    return false;
                }
                let x = match crate::cpython::small_int(v) {
                    Some(x) => x,
                    None => match long_to_i128(v) {
                        Some(x) => x,
                        None => {
                            ffi::PyErr_Clear();
                            return false;
                        }
                    },
                };
                if x < s.min || x > s.max {
                    return false;
                }
                // Two's complement of the value, cut to the field's width below.
                let x = x as u64;
                let at = s.off;
                match (s.width, s.big) {
                    (1, _) => dst[at] = x as u8,
                    (2, false) => dst[at..at + 2].copy_from_slice(&(x as u16).to_le_bytes()),
                    (2, true) => dst[at..at + 2].copy_from_slice(&(x as u16).to_be_bytes()),
                    (4, false) => dst[at..at + 4].copy_from_slice(&(x as u32).to_le_bytes()),
                    (4, true) => dst[at..at + 4].copy_from_slice(&(x as u32).to_be_bytes()),
                    (8, false) => dst[at..at + 8].copy_from_slice(&x.to_le_bytes()),
                    (8, true) => dst[at..at + 8].copy_from_slice(&x.to_be_bytes()),
                    (_, false) => dst[at..at + 3].copy_from_slice(&x.to_le_bytes()[..3]),
                    (_, true) => dst[at..at + 3].copy_from_slice(&x.to_be_bytes()[5..]),
                }
            }
        }
        true
    }
}
