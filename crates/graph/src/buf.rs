//! The writer's byte buffer: either a `Vec<u8>`'s memory, or memory a caller owns and
//! knows how to grow ([`Storage`]: for `bytewright.pickle`, a Python bytes object filled in
//! place, so the finished record needs no copy).

use std::ptr::NonNull;

/// The unwind payload of a writer whose own memory (a `Vec`'s) could not grow: writes
/// cannot fail, so they unwind with this (no panic hook runs) and the caller catches it
/// and reports running out of memory. A [`Storage`]'s `grow` may unwind with it too.
pub struct OutOfMemory;

/// How to grow and release memory the writer does not own.
pub struct Storage {
    /// Grows the memory of `*ctx` to hold at least `min_cap` bytes, keeping its first `len`,
    /// and returns the new data address and capacity (updating `*ctx` if it moved). It does
    /// not return on failure: it aborts, as a `Vec` does when memory runs out, or unwinds
    /// after setting `*ctx` to what `release` then gets (the writer is not used again).
    ///
    /// # Safety
    /// `*ctx` is memory of this storage, `len` bytes of it written.
    pub grow: unsafe fn(ctx: &mut *mut (), len: usize, min_cap: usize) -> (NonNull<u8>, usize),
    /// Releases the memory of `ctx` (a writer dropped before its output was taken).
    ///
    /// # Safety
    /// `ctx` is memory of this storage, not used after.
    pub release: unsafe fn(ctx: *mut ()),
}

/// Bytes written so far (`len`) in memory of `cap` bytes.
pub(crate) struct Buf {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
    /// `None`: the memory is a `Vec<u8>`'s (dangling when `cap` is 0).
    storage: Option<&'static Storage>,
    ctx: *mut (),
}

// SAFETY: the buffer owns its memory alone (a Vec's, or an object no one else references
// yet); a storage's functions are only called through `&mut self`, by whoever holds the
// writer (the caller keeps any lock they need, such as the GIL, while it writes).
unsafe impl Send for Buf {}
// SAFETY: shared references only read the bytes.
unsafe impl Sync for Buf {}

impl Buf {
    pub(crate) const fn new() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
            storage: None,
            ctx: std::ptr::null_mut(),
        }
    }

    pub(crate) fn from_vec(v: Vec<u8>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        Self {
            // SAFETY: a Vec's pointer is never null.
            ptr: unsafe { NonNull::new_unchecked(v.as_mut_ptr()) },
            len: v.len(),
            cap: v.capacity(),
            storage: None,
            ctx: std::ptr::null_mut(),
        }
    }

    /// A buffer in `cap` bytes at `ptr`, memory of `storage` named `ctx`.
    ///
    /// # Safety
    /// `ptr` is valid for `cap` writes, owned by `ctx` alone, until `storage` grows or
    /// releases it.
    pub(crate) unsafe fn external(
        ptr: NonNull<u8>,
        cap: usize,
        storage: &'static Storage,
        ctx: *mut (),
    ) -> Self {
        Self {
            ptr,
            len: 0,
            cap,
            storage: Some(storage),
            ctx,
        }
    }

    /// The memory as a Vec (for a buffer that is one), leaving this buffer empty.
    pub(crate) fn take_vec(&mut self) -> Vec<u8> {
        let this = std::mem::replace(self, Self::new());
        let this = std::mem::ManuallyDrop::new(this);
        match this.storage {
            None if this.cap != 0 => {
                // SAFETY: the parts of a Vec taken apart by `from_vec` (or grown as one).
                unsafe { Vec::from_raw_parts(this.ptr.as_ptr(), this.len, this.cap) }
            }
            None => Vec::new(),
            Some(_) => panic!("an external buffer is not a Vec"),
        }
    }

    /// The external memory (`ctx`) and how many bytes of it were written, leaving this
    /// buffer empty; `None` for a Vec's memory (left in place).
    pub(crate) fn take_external(&mut self) -> Option<(*mut (), usize)> {
        self.storage?;
        let out = (self.ctx, self.len);
        // The storage's memory is the caller's now: forget it without releasing it.
        std::mem::forget(std::mem::replace(self, Self::new()));
        Some(out)
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    #[inline(always)]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// # Safety
    /// The first `len` bytes are written and `len <= capacity`.
    #[inline(always)]
    pub(crate) unsafe fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.cap);
        self.len = len;
    }

    #[inline(always)]
    pub(crate) fn reserve(&mut self, additional: usize) {
        if self.cap - self.len < additional {
            self.grow(additional);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let need = self
            .len
            .checked_add(additional)
            .expect("writer buffer size overflows");
        match self.storage {
            None => {
                let mut v = self.take_vec();
                let grown = v.try_reserve(additional);
                *self = Self::from_vec(v);
                if grown.is_err() {
                    // A writer cannot report failure: unwind with the payload its caller
                    // turns into an error (the buffer is intact and freed as usual).
                    std::panic::resume_unwind(Box::new(OutOfMemory));
                }
            }
            Some(storage) => {
                let min_cap = need.max(self.cap.saturating_mul(2)).max(64);
                // SAFETY: ctx is this storage's memory, `len` bytes of it written.
                let (ptr, cap) = unsafe { (storage.grow)(&mut self.ctx, self.len, min_cap) };
                debug_assert!(cap >= need);
                self.ptr = ptr;
                self.cap = cap;
            }
        }
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, byte: u8) {
        if self.len == self.cap {
            self.grow(1);
        }
        // SAFETY: len < cap after the check above.
        unsafe { *self.ptr.as_ptr().add(self.len) = byte };
        self.len += 1;
    }

    /// # Safety
    /// `len < capacity` (room reserved).
    #[inline(always)]
    pub(crate) unsafe fn push_unchecked(&mut self, byte: u8) {
        debug_assert!(self.len < self.cap);
        // SAFETY: len < cap (the caller's guarantee).
        unsafe { *self.ptr.as_ptr().add(self.len) = byte };
        self.len += 1;
    }

    #[inline(always)]
    pub(crate) fn extend_from_slice(&mut self, data: &[u8]) {
        self.reserve(data.len());
        // SAFETY: room for data.len() bytes after len (reserved above); data is not in
        // this buffer (it is borrowed while the buffer is borrowed mutably).
        unsafe {
            let dst = self.ptr.as_ptr().add(self.len);
            if data.len() >= crate::copy::OWN_FROM {
                // Data of 4 KiB and up lands wherever the record's header leaves it, most
                // often placed unlike its source: `copy` then beats `memcpy`.
                crate::copy::copy(dst, data.as_ptr(), data.len());
            } else {
                std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
            }
        }
        self.len += data.len();
    }

    /// Empties the buffer, keeping its memory.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends `n` zero bytes.
    pub(crate) fn extend_zeros(&mut self, n: usize) {
        self.reserve(n);
        // SAFETY: room for n bytes after len (reserved above).
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr().add(self.len), 0, n) };
        self.len += n;
    }

    /// Appends `n` (at most 14) zero bytes, with two fixed stores rather than a call.
    #[inline(always)]
    pub(crate) fn zeros_up_to_14(&mut self, n: usize) {
        assert!(n <= 14);
        self.reserve(16);
        // SAFETY: room for 16 bytes after len (reserved above); only n of them are kept.
        unsafe {
            self.ptr
                .as_ptr()
                .add(self.len)
                .cast::<[u8; 16]>()
                .write_unaligned([0; 16])
        };
        self.len += n;
    }

    /// Inserts `data` at `at` (at most `len`), moving what follows.
    pub(crate) fn insert(&mut self, at: usize, data: &[u8]) {
        assert!(at <= self.len);
        self.reserve(data.len());
        // SAFETY: room for data.len() more bytes (reserved above); the move stays within
        // the buffer's capacity, and `data` is not in the buffer.
        unsafe {
            let p = self.ptr.as_ptr().add(at);
            std::ptr::copy(p, p.add(data.len()), self.len - at);
            std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len());
        }
        self.len += data.len();
    }

    /// Moves the bytes from `from` on to start at `to` instead (growing as needed).
    pub(crate) fn shift_tail(&mut self, from: usize, to: usize) {
        assert!(from <= self.len);
        let n = self.len - from;
        if to > from {
            self.reserve(to - from);
        }
        // SAFETY: both ranges lie within the capacity (reserved above when moving up).
        unsafe {
            let p = self.ptr.as_ptr();
            std::ptr::copy(p.add(from), p.add(to), n);
        }
        self.len = to + n;
    }

    /// Appends `n` bytes the caller fills in later, left as they are (see
    /// [`crate::Writer::str_deferred`]); no slice may cover them until then.
    pub(crate) fn skip(&mut self, n: usize) {
        self.reserve(n);
        self.len += n;
    }
}

impl Buf {
    /// The bytes from `from` on.
    ///
    /// Every byte of them must have been written: a range left by [`Buf::skip`] only once it
    /// is filled.
    #[inline(always)]
    pub(crate) fn slice(&self, from: usize) -> &[u8] {
        assert!(from <= self.len);
        // SAFETY: within the first len bytes, written (the caller's part, see above).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(from), self.len - from) }
    }

    /// The written bytes `from..to` (none of them skipped), to change in place.
    #[inline(always)]
    pub(crate) fn slice_mut(&mut self, from: usize, to: usize) -> &mut [u8] {
        assert!(from <= to && to <= self.len);
        // SAFETY: within the first len bytes, written; the buffer is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(from), to - from) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        match self.storage {
            None if self.cap != 0 => drop(self.take_vec()),
            None => {}
            // SAFETY: ctx is this storage's memory, not used after.
            Some(storage) => unsafe { (storage.release)(self.ctx) },
        }
    }
}
