//! Slot values of referenced fields, one frame per struct being packed or unpacked.

use crate::expr::{Env, SlotRef, Value};

#[derive(Default)]
pub(crate) struct Slots {
    /// The slots of every frame, `..len`; what lies past `len` is left over from frames
    /// popped earlier (kept so that pushing again allocates and drops nothing).
    vals: Vec<Value>,
    /// The end of the current frame's slots.
    len: usize,
    /// Where each frame's slots start, the current frame's last.
    bases: Vec<usize>,
    /// The current frame's base (`bases.last()`, kept at hand for the hot `set`).
    top: usize,
}

impl Slots {
    /// Forgets every frame (after an error left some pushed). The slots' storage stays for
    /// the next message: a frame pushed later starts with its slots absent (`push`) or
    /// writes each before reading it (`push_unset`).
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.bases.clear();
        self.top = 0;
    }

    /// A frame of `n` slots, each absent.
    #[inline]
    pub fn push(&mut self, n: u16) {
        self.push_unset(n);
        for v in &mut self.vals[self.top..self.len] {
            *v = Value::Absent;
        }
    }

    /// A frame of `n` slots holding whatever they held before: for the unpack VM, which
    /// writes every slot before it is read (a slot is an earlier field's value, stored as
    /// the field is read, and an absent conditional field stores `Absent`).
    #[inline]
    pub fn push_unset(&mut self, n: u16) {
        self.top = self.len;
        self.bases.push(self.top);
        self.len += n as usize;
        if self.vals.len() < self.len {
            // Not `resize`: its clones of the fill value each match on it.
            let more = self.len - self.vals.len();
            self.vals
                .extend(std::iter::repeat_with(|| Value::Absent).take(more));
        }
    }

    #[inline]
    pub fn pop(&mut self) {
        let b = self.bases.pop().expect("balanced frames");
        self.len = b;
        self.top = self.bases.last().copied().unwrap_or(0);
    }

    /// The absolute index of a slot of the current frame.
    #[inline]
    pub fn abs(&self, idx: u16) -> usize {
        debug_assert!(!self.bases.is_empty(), "inside a frame");
        self.top + idx as usize
    }

    #[inline]
    pub fn set(&mut self, idx: u16, v: Value) {
        let i = self.abs(idx);
        self.vals[i] = v;
    }

    /// Sets a slot of the current frame to an integer.
    #[inline]
    pub fn set_int(&mut self, idx: u16, v: i128) {
        let i = self.abs(idx);
        match &mut self.vals[i] {
            // Most slots hold integers: overwrite in place, nothing to drop.
            Value::Int(old) => *old = v,
            other => *other = Value::Int(v),
        }
    }

    #[inline]
    pub fn set_abs(&mut self, abs: usize, v: Value) {
        self.vals[abs] = v;
    }
}

impl Env for Slots {
    #[inline(always)]
    fn get(&self, s: SlotRef) -> &Value {
        // A value decoded alone (outside its message) has no enclosing frames: what it
        // refers to there is absent.
        static ABSENT: Value = Value::Absent;
        if s.up == 0 && !self.bases.is_empty() {
            return self.vals.get(self.top + s.idx as usize).unwrap_or(&ABSENT);
        }
        let Some(i) = self.bases.len().checked_sub(1 + s.up as usize) else {
            return &ABSENT;
        };
        self.vals
            .get(self.bases[i] + s.idx as usize)
            .unwrap_or(&ABSENT)
    }
}

/// Working memory of the VMs, reusable across calls so a hot loop allocates nothing.
#[derive(Default)]
pub struct Scratch {
    pub(crate) slots: Slots,
    /// Window-derived fields written as placeholders: (absolute slot, position, given value).
    pub(crate) pending: Vec<(usize, usize, Option<i128>)>,
    /// Byte ranges of the fields of the structs whose checksums are being verified, one
    /// frame per struct (see [`crate::sums`]).
    pub(crate) ranges: Vec<(usize, usize)>,
    /// The field kinds' state for the message being packed.
    pub(crate) kinds: crate::kinds::PackState,
}

impl Scratch {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub(crate) fn reset(&mut self) {
        self.slots.clear();
        self.pending.clear();
        self.ranges.clear();
        self.kinds.clear();
    }
}
