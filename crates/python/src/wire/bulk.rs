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
    signed: bool,
    big: bool,
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
                slots.push(Slot {
                    off: it.off,
                    width,
                    signed,
                    big,
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
                let Some(x) = long_to_i128(v) else {
                    ffi::PyErr_Clear();
                    return false;
                };
                let bits = u32::from(s.width) * 8;
                let fits = if s.signed {
                    (x >> (bits - 1)) == 0 || (x >> (bits - 1)) == -1
                } else {
                    x >> bits == 0
                };
                if !fits {
                    return false;
                }
                let b = (x as u64).to_le_bytes();
                let w = s.width as usize;
                let out = &mut dst[s.off..s.off + w];
                if s.big {
                    for (k, o) in out.iter_mut().enumerate() {
                        *o = b[w - 1 - k];
                    }
                } else {
                    out.copy_from_slice(&b[..w]);
                }
            }
        }
        true
    }
}
