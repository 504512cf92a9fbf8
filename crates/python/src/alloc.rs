//! The extension's allocator: the system's, with large blocks backed by transparent huge
//! pages where the kernel offers them on request (`madvise` mode), as NumPy does for its
//! arrays.
//!
//! Column buffers, packed output and pickle buffers of many MiB are written once, front to
//! back, right after they are allocated. With 4 KiB pages the kernel takes one fault per
//! page to map and zero it, and those faults, not the decode, were most of the time of a
//! large `unpack_table` (64 MiB of columns: 16,384 faults), and they serialised the
//! threads that fill one table together. A 2 MiB page takes one fault per 512 of those.
//! Blocks of at least [`HUGE_FROM`] bytes start on a 2 MiB boundary, so every whole huge
//! page of the block can be one (an unaligned block leaves up to 2 MiB of small pages at
//! its start, all of which the thread filling the first rows faults on), and only the
//! whole 2 MiB pages inside a block are advised, so the advice never reaches memory of
//! another allocation.
//!
//! Large blocks come from the C library directly (`posix_memalign`, `realloc`, `free`),
//! which frees a block whichever of its functions made it; smaller ones from `System`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{c_int, c_void};

/// Blocks from this size up are aligned and advised (NumPy advises from here too).
const HUGE_FROM: usize = 4 << 20;
/// The huge page size of x86-64 and of arm64 with 4 KiB pages.
const HUGE_PAGE: usize = 2 << 20;
/// The alignment `malloc` and `realloc` guarantee on 64-bit targets.
const MALLOC_ALIGN: usize = 16;

#[cfg(unix)]
unsafe extern "C" {
    fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int;
    fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, size: usize) {
    const MADV_HUGEPAGE: c_int = 14;
    unsafe extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    if ptr.is_null() || size < HUGE_FROM {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + size) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: the range lies inside the block just allocated; the advice changes how
        // the kernel backs it, never its contents. A refusal (THP disabled) is harmless.
        unsafe {
            madvise(start as *mut c_void, end - start, MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _size: usize) {}

/// A large block on a huge-page boundary, advised.
#[cfg(unix)]
fn alloc_large(size: usize, align: usize) -> *mut u8 {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: the alignment is a power of two and a multiple of the pointer size.
    if unsafe { posix_memalign(&mut p, align.max(HUGE_PAGE), size) } != 0 {
        return std::ptr::null_mut();
    }
    let p = p.cast::<u8>();
    advise(p, size);
    p
}

pub struct Allocator;

// SAFETY: every call is forwarded to `System`; `advise` only adds a hint.
#[cfg(not(unix))]
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

// SAFETY: blocks below `HUGE_FROM` are `System`'s, unchanged. Large blocks come from the C
// allocator with at least the requested alignment (`posix_memalign`, or `realloc` only when
// `malloc`'s own alignment suffices), and are freed by `free`, which takes any of them;
// a block that moves between the two sizes is copied when its alignment needs it.
#[cfg(unix)]
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= HUGE_FROM {
            return alloc_large(layout.size(), layout.align());
        }
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // `calloc` takes fresh pages from the kernel without writing zeros: keep that (an
        // aligned block would need a pass of zeros in this thread), and only advise.
        let p = unsafe { System.alloc_zeroed(layout) };
        if layout.size() >= HUGE_FROM {
            advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.size() < HUGE_FROM && new_size < HUGE_FROM {
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if layout.align() <= MALLOC_ALIGN {
            // SAFETY: `ptr` came from the C allocator (`System` uses `malloc` for these
            // alignments, large blocks `posix_memalign` or `realloc`).
            let p = unsafe { realloc(ptr.cast(), new_size) }.cast::<u8>();
            advise(p, new_size);
            return p;
        }
        // SAFETY: the new layout is valid (same alignment, a size the caller asked for).
        let new =
            unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
        if !new.is_null() {
            // SAFETY: both blocks hold at least the smaller size and do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() >= HUGE_FROM {
            // SAFETY: a large block, made by the C allocator (see `alloc` and `realloc`).
            unsafe { free(ptr.cast()) };
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }
}
