//! The extension's allocator: the system's, with large blocks backed by transparent huge
//! pages where the kernel offers them on request (`madvise` mode), as NumPy does for its
//! arrays.
//!
//! Column buffers, packed output and pickle buffers of many MiB are written once, front to
//! back, right after they are allocated. With 4 KiB pages the kernel takes one fault per
//! page to map and zero it, and those faults, not the decode, were most of the time of a
//! large `unpack_table` (64 MiB of columns: 16,384 faults), and they serialised the
//! threads that fill one table together. A 2 MiB page takes one fault per 512 of those.
//! Only blocks of at least [`HUGE_FROM`] bytes are advised, and only the whole 2 MiB pages
//! inside them, so the advice never reaches memory of another allocation.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks from this size up are advised (NumPy's threshold too).
const HUGE_FROM: usize = 4 << 20;

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, size: usize) {
    const PAGE: usize = 2 << 20;
    const MADV_HUGEPAGE: std::ffi::c_int = 14;
    unsafe extern "C" {
        fn madvise(
            addr: *mut std::ffi::c_void,
            len: usize,
            advice: std::ffi::c_int,
        ) -> std::ffi::c_int;
    }
    if ptr.is_null() || size < HUGE_FROM {
        return;
    }
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + size) / PAGE * PAGE;
    if end > start {
        // SAFETY: the range lies inside the block just allocated; the advice changes how
        // the kernel backs it, never its contents. A refusal (THP disabled) is harmless.
        unsafe {
            madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _size: usize) {}

pub struct Allocator;

// SAFETY: every call is forwarded to `System` unchanged; `advise` only adds a hint.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if layout.size() >= HUGE_FROM {
            advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if layout.size() >= HUGE_FROM {
            advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if new_size >= HUGE_FROM {
            advise(p, new_size);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}
