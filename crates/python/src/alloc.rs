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
//! On Linux, blocks of 1 MiB and more are mapped by the allocator itself, in whole 2 MiB
//! units, and a freed one is kept for reuse ([`big`]): a table decoded again and again, on one thread or
//! several, then writes into pages that are already mapped instead of taking a fault per
//! page every call (the faults of two threads also contend in the kernel, which was most of
//! why two threads did not decode twice as fast). On other Unix systems large blocks come
//! from the C library (`posix_memalign`, `realloc`, `free`).
//!
//! On Linux, blocks below 64 KiB come from mimalloc (the allocator pydantic-core and polars
//! ship in their extensions too) instead of the C library's `malloc`. Defining a Struct class
//! compiles its program into a few hundred small blocks that live as long as the class, and
//! glibc served most of them from its slow path, from memory freed in between by other
//! sizes: mimalloc's size-segregated pages made the build-cost workload (the telemetry
//! classes defined, then one pack) about 4% cheaper. A block freed on another thread goes
//! back to the pages of the thread that made it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{c_int, c_void};

/// Blocks from this size up are aligned and advised (NumPy advises from here too).
const HUGE_FROM: usize = 4 << 20;
/// The huge page size of x86-64 and of arm64 with 4 KiB pages.
const HUGE_PAGE: usize = 2 << 20;
/// The alignment `malloc` and `realloc` guarantee on 64-bit targets.
#[cfg(all(unix, not(target_os = "linux")))]
const MALLOC_ALIGN: usize = 16;

#[cfg(all(unix, not(target_os = "linux")))]
unsafe extern "C" {
    fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int;
    fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

#[cfg(target_os = "linux")]
const MADV_HUGEPAGE: c_int = 14;

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
}

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, size: usize) {
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

#[cfg(all(unix, not(target_os = "linux")))]
fn advise(_ptr: *mut u8, _size: usize) {}

/// A large block on a huge-page boundary, advised.
#[cfg(all(unix, not(target_os = "linux")))]
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

// SAFETY (Unix other than Linux): blocks below `HUGE_FROM` are `System`'s, unchanged. Large blocks come from the C
// allocator with at least the requested alignment (`posix_memalign`, or `realloc` only when
// `malloc`'s own alignment suffices), and are freed by `free`, which takes any of them;
// a block that moves between the two sizes is copied when its alignment needs it.
#[cfg(all(unix, not(target_os = "linux")))]
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

/// mimalloc, through its plain entry points whenever they give the alignment asked for.
///
/// `mimalloc::MiMalloc` calls `mi_malloc_aligned` for every layout, which is as fast as
/// `mi_malloc` only up to 1 KiB: above that it takes an over-allocating slow path even for an
/// alignment of 8 or 16, and a compiled program's step vectors (16-aligned, a few KiB) went
/// through it on every class definition. Every mimalloc block of 16 bytes or more is
/// 16-aligned (its size classes are multiples of 16 from there) and smaller ones 8-aligned, so
/// `mi_malloc` serves those alignments; a block that comes back less aligned all the same
/// (a different mimalloc) is freed and asked for again through the aligned entry point.
#[cfg(target_os = "linux")]
struct Small;

#[cfg(target_os = "linux")]
unsafe extern "C" {
    /// mimalloc's usable size of a block (`libmimalloc-sys` declares it only with its
    /// `extended` feature; the library always has it).
    fn mi_usable_size(p: *const c_void) -> usize;
}

#[cfg(target_os = "linux")]
impl Small {
    /// Whether mimalloc's own alignment suffices for a block of `size` bytes.
    #[inline]
    fn plain(size: usize, align: usize) -> bool {
        align <= 8 || (align <= 16 && size >= 16)
    }

    /// `p` if it is aligned as asked, else (after freeing it) an aligned block from `aligned`.
    #[inline]
    fn checked(p: *mut u8, align: usize, aligned: impl FnOnce() -> *mut u8) -> *mut u8 {
        if (p as usize) & (align - 1) == 0 {
            return p;
        }
        // SAFETY: `p` is a live mimalloc block (null is aligned, so it never reaches here).
        unsafe { libmimalloc_sys::mi_free(p.cast()) };
        aligned()
    }

    /// A block of `layout` from `plain(size)` when that aligns it enough, else from
    /// `aligned(size, align)` (the allocating pair of [`Small::alloc`] or
    /// [`Small::alloc_zeroed`]).
    #[inline(always)]
    unsafe fn get(
        layout: Layout,
        plain: unsafe extern "C" fn(usize) -> *mut c_void,
        aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    ) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // SAFETY: plain allocation calls; the caller frees the block through `dealloc`.
        unsafe {
            if Self::plain(size, align) {
                let p = plain(size).cast::<u8>();
                Self::checked(p, align, || aligned(size, align).cast())
            } else {
                aligned(size, align).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `get` asks.
        unsafe {
            Self::get(
                layout,
                libmimalloc_sys::mi_malloc,
                libmimalloc_sys::mi_malloc_aligned,
            )
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `get` asks.
        unsafe {
            Self::get(
                layout,
                libmimalloc_sys::mi_zalloc,
                libmimalloc_sys::mi_zalloc_aligned,
            )
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys::{mi_free, mi_realloc_aligned};
        let align = layout.align();
        // SAFETY: `ptr` is a live mimalloc block of `layout`. It is kept when the new size
        // still fits it and uses at least half of it (as `mi_realloc` decides); otherwise a
        // new block is made as `alloc` makes one, the contents copied and the old block freed
        // (left as it was when no new block can be had, as `realloc` must).
        unsafe {
            if !Self::plain(new_size, align) {
                return mi_realloc_aligned(ptr.cast(), new_size, align).cast();
            }
            let usable = mi_usable_size(ptr.cast());
            if new_size <= usable && new_size >= usable / 2 && new_size > 0 {
                return ptr;
            }
            let new = self.alloc(Layout::from_size_align_unchecked(new_size, align));
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                mi_free(ptr.cast());
            }
            new
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` is a live mimalloc block.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }
}

/// Which allocator serves a block on Linux: mimalloc below [`SMALL_BELOW`] bytes, the C
/// library up to `big::FROM`, `big` above (and the C library for any alignment above a
/// huge page).
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Small,
    Libc,
    Big,
}

/// Blocks below this size are mimalloc's: the many small blocks of compiled programs and
/// descriptions, where it is faster. Larger ones (a column builder growing towards a MiB,
/// a thread's scratch) stay with the C library as before, whose `realloc` can often grow
/// them in place.
#[cfg(target_os = "linux")]
const SMALL_BELOW: usize = 64 << 10;

#[cfg(target_os = "linux")]
#[inline]
fn kind(size: usize, align: usize) -> Kind {
    if size < SMALL_BELOW && align <= HUGE_PAGE {
        Kind::Small
    } else if big::owns(size, align) {
        Kind::Big
    } else {
        Kind::Libc
    }
}

// SAFETY (Linux): every block is served by the allocator its layout names (`kind`), and a
// layout never changes between the calls that make a block and the call that frees it;
// `realloc` keeps a block with its allocator when the new size names the same one, and
// copies it into a new block of the other kind otherwise. mimalloc's and the C library's
// blocks honour the layout's alignment (`Small` aligns as asked; `System` uses `malloc` or
// `posix_memalign`).
#[cfg(target_os = "linux")]
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match kind(layout.size(), layout.align()) {
            Kind::Small => unsafe { Small.alloc(layout) },
            Kind::Libc => unsafe { System.alloc(layout) },
            Kind::Big => big::alloc(layout.size(), false),
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match kind(layout.size(), layout.align()) {
            Kind::Small => unsafe { Small.alloc_zeroed(layout) },
            Kind::Libc => unsafe { System.alloc_zeroed(layout) },
            Kind::Big => big::alloc(layout.size(), true),
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (was, will) = (
            kind(layout.size(), layout.align()),
            kind(new_size, layout.align()),
        );
        match (was, will) {
            (Kind::Small, Kind::Small) => unsafe { Small.realloc(ptr, layout, new_size) },
            (Kind::Libc, Kind::Libc) => unsafe { System.realloc(ptr, layout, new_size) },
            // SAFETY: `ptr` is a live block of `big` of `layout.size()` bytes.
            (Kind::Big, Kind::Big) => unsafe { big::realloc(ptr, layout.size(), new_size) },
            _ => {
                // SAFETY: the new layout is valid (same alignment, a size the caller asked
                // for); both blocks hold at least the smaller size and do not overlap.
                unsafe {
                    let new =
                        self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match kind(layout.size(), layout.align()) {
            Kind::Small => unsafe { Small.dealloc(ptr, layout) },
            Kind::Libc => unsafe { System.dealloc(ptr, layout) },
            // SAFETY: a live block of `big` of this size.
            Kind::Big => unsafe { big::free(ptr, layout.size()) },
        }
    }
}

/// Large blocks, mapped whole from the kernel on a 2 MiB boundary and advised for huge
/// pages, and a bounded cache of freed ones.
///
/// A block of `size` bytes is `span(size)` bytes of its own mapping, so freeing it needs
/// only its size. A freed block goes into the cache (up to [`CACHE_BYTES`] in `SLOTS`
/// blocks, unmapping the blocks cached longest ago to make room: the sizes freed last are the
/// ones the next calls ask for again). It is cached as it is, and marked `MADV_FREE` only
/// once it has waited [`DIRTY_FOR`] unused, or when more than [`DIRTY_BYTES`] wait unmarked
/// (the longest-waiting first): under memory pressure the kernel takes a marked block's
/// pages back without writing them anywhere (a page it took is a fresh zeroed page when the
/// block is used again; one it did not take is reused without a fault). Marking is not
/// free: the call walks the block's page table, and the first write to each of its pages
/// afterwards sets the page's dirty bit again, which cost a 200,000-row `unpack_table`
/// (3.2 MB of columns, freed and allocated again every call) about a fifth of its time.
/// A block reused soon after it was freed, as a table decoded again and again is, is never
/// marked. The cache is checked for blocks to mark when a block is freed or taken. An
/// allocation takes the smallest cached block that is large enough, split to the size it
/// needs (the rest stays cached). The cache is behind a try-lock: a thread that finds it
/// taken maps or unmaps directly, so no thread ever waits for another, and a child process
/// forked while the lock was held only loses the cache.
#[cfg(target_os = "linux")]
mod big {
    use std::cell::UnsafeCell;
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use super::{advise, madvise, HUGE_PAGE};

    /// Blocks from this size up are made here. Below [`super::HUGE_FROM`] they are not
    /// advised, but they are cached like the others: a table decoded on several threads
    /// has column buffers of a few MiB per thread, which the C allocator would take from
    /// the threads' arenas and hand back to the kernel when they are freed (each call then
    /// faulting on every page of them again). Rounding up to whole huge pages keeps every
    /// block at most twice its size.
    pub const FROM: usize = 1 << 20;

    /// The most bytes of freed blocks kept for reuse.
    pub const CACHE_BYTES: usize = 256 << 20;
    /// The most bytes of cached blocks not yet marked `MADV_FREE`.
    pub const DIRTY_BYTES: usize = 64 << 20;
    /// How long a cached block waits before it is marked `MADV_FREE`.
    pub const DIRTY_FOR: Duration = Duration::from_secs(1);
    /// Cached blocks at most.
    const SLOTS: usize = 32;

    const PROT_NONE: c_int = 0;
    const PROT_READ: c_int = 1;
    const PROT_WRITE: c_int = 2;
    const MAP_PRIVATE: c_int = 2;
    const MAP_ANONYMOUS: c_int = 0x20;
    const MADV_FREE: c_int = 8;
    const MREMAP_MAYMOVE: c_int = 1;
    const MREMAP_FIXED: c_int = 2;

    unsafe extern "C" {
        fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: i64,
        ) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> c_int;
        fn mremap(
            old: *mut c_void,
            old_len: usize,
            new_len: usize,
            flags: c_int,
            ...
        ) -> *mut c_void;
    }

    /// Whether a block of this layout is made here.
    #[inline]
    pub fn owns(size: usize, align: usize) -> bool {
        size >= FROM && align <= HUGE_PAGE
    }

    /// The bytes a block of `size` maps: whole huge pages.
    #[inline]
    fn span(size: usize) -> usize {
        size.next_multiple_of(HUGE_PAGE)
    }

    struct Cache {
        /// (start, length) of each cached block; length 0 marks a free slot.
        slots: [(usize, usize); SLOTS],
        /// When each slot's block was cached ([`Cache::clock`] then).
        ages: [u64; SLOTS],
        /// Since when each slot's block waits without `MADV_FREE` (`None`: marked).
        dirty: [Option<Instant>; SLOTS],
        clock: u64,
        bytes: usize,
        /// The bytes of the blocks not marked.
        dirty_bytes: usize,
    }

    impl Cache {
        /// Takes the first `len` bytes of cached block `i` (at least that long): returns
        /// where they start; the rest, if any, stays cached.
        fn cut(&mut self, i: usize, len: usize) -> usize {
            let (start, have) = self.slots[i];
            if self.dirty[i].is_some() {
                self.dirty_bytes -= len;
            }
            if have > len {
                self.slots[i] = (start + len, have - len);
            } else {
                self.slots[i] = (0, 0);
                self.dirty[i] = None;
            }
            self.bytes -= len;
            start
        }

        /// Empties slot `i`, returning its block.
        fn clear(&mut self, i: usize) -> (usize, usize) {
            let (s, l) = self.slots[i];
            self.slots[i] = (0, 0);
            self.bytes -= l;
            if self.dirty[i].take().is_some() {
                self.dirty_bytes -= l;
            }
            (s, l)
        }

        /// Marks `MADV_FREE` the blocks that waited [`DIRTY_FOR`], then the longest-waiting
        /// ones while more than [`DIRTY_BYTES`] wait unmarked; a block the kernel refuses
        /// to mark is unmapped.
        fn mark(&mut self, now: Instant) {
            loop {
                let oldest = (0..SLOTS)
                    .filter_map(|i| Some((self.dirty[i]?, i)))
                    .min_by_key(|&(t, _)| t);
                let Some((since, i)) = oldest else { return };
                if self.dirty_bytes <= DIRTY_BYTES && now.duration_since(since) < DIRTY_FOR {
                    return;
                }
                let (s, l) = self.slots[i];
                self.dirty[i] = None;
                self.dirty_bytes -= l;
                // SAFETY: a cached block is a whole unused range of this module's mappings
                // (the cache's lock is held, so no thread takes it meanwhile); MADV_FREE
                // keeps it mapped.
                if unsafe { madvise(s as *mut c_void, l, MADV_FREE) } != 0 {
                    self.clear(i);
                    // SAFETY: as above; the block just left the cache.
                    unsafe { munmap(s as *mut c_void, l) };
                }
            }
        }
    }

    struct Locked {
        busy: AtomicBool,
        cache: UnsafeCell<Cache>,
    }

    // SAFETY: `cache` is only reached while `busy` is held (see `with`).
    unsafe impl Sync for Locked {}

    static CACHE: Locked = Locked {
        busy: AtomicBool::new(false),
        cache: UnsafeCell::new(Cache {
            slots: [(0, 0); SLOTS],
            ages: [0; SLOTS],
            dirty: [None; SLOTS],
            clock: 0,
            bytes: 0,
            dirty_bytes: 0,
        }),
    };

    /// Tries to take the cache's lock this many times (spinning in between) before going
    /// without it: threads that free or allocate at the same moment wait a few hundred
    /// nanoseconds for each other instead of both mapping fresh memory, and a child forked
    /// while the lock was held only loses the cache.
    const TRIES: u32 = 256;

    /// Runs `f` on the cache unless another thread holds it for [`TRIES`] tries; `None`
    /// then.
    fn with<T>(f: impl FnOnce(&mut Cache) -> T) -> Option<T> {
        let mut tries = 0;
        while CACHE
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            tries += 1;
            if tries == TRIES {
                return None;
            }
            std::hint::spin_loop();
        }
        // SAFETY: this thread holds `busy`, so no other reference to the cache exists.
        let out = f(unsafe { &mut *CACHE.cache.get() });
        CACHE.busy.store(false, Ordering::Release);
        Some(out)
    }

    /// A cached block of exactly `len` bytes, if one large enough is cached.
    fn take(len: usize) -> Option<usize> {
        let now = Instant::now();
        with(|c| {
            let i = (0..SLOTS)
                .filter(|&i| c.slots[i].1 >= len)
                .min_by_key(|&i| c.slots[i].1);
            let got = i.map(|i| c.cut(i, len));
            c.mark(now);
            got
        })
        .flatten()
    }

    /// Takes `len` bytes from the front of the cached block that starts at `at`, if there
    /// is one that long: the block just before it then grows in place, with no system call
    /// (the pages are mapped, advised and usually still resident).
    fn take_at(at: usize, len: usize) -> bool {
        with(|c| {
            let Some(i) = (0..SLOTS).find(|&i| c.slots[i].0 == at && c.slots[i].1 >= len) else {
                return false;
            };
            c.cut(i, len);
            true
        })
        .unwrap_or(false)
    }

    /// Caches a freed block, unmapping the cached blocks freed longest ago when it would not
    /// fit otherwise (what was freed last is what the next calls are likely to ask for
    /// again); false if it still does not fit (the caller unmaps it).
    fn keep(start: usize, len: usize) -> bool {
        let now = Instant::now();
        with(|c| {
            c.clock += 1;
            while c.bytes + len > CACHE_BYTES || c.slots.iter().all(|s| s.1 != 0) {
                let Some(i) = (0..SLOTS)
                    .filter(|&i| c.slots[i].1 > 0)
                    .min_by_key(|&i| c.ages[i])
                else {
                    return false;
                };
                let (s, l) = c.clear(i);
                // SAFETY: a cached block is a whole unused range of this module's mappings.
                unsafe { munmap(s as *mut c_void, l) };
            }
            // Join the block to cached neighbours, so a block split by `take` is whole
            // again once all of it is back (the whole of it waits unmarked, as the block
            // just freed does: marking again what was marked is harmless).
            let (mut start, mut len) = (start, len);
            for i in 0..SLOTS {
                let (s, l) = c.slots[i];
                if l > 0 && (s + l == start || start + len == s) {
                    c.clear(i);
                    start = start.min(s);
                    len += l;
                }
            }
            let Some(i) = c.slots.iter().position(|s| s.1 == 0) else {
                return false;
            };
            c.slots[i] = (start, len);
            c.ages[i] = c.clock;
            c.dirty[i] = Some(now);
            c.bytes += len;
            c.dirty_bytes += len;
            c.mark(now);
            true
        })
        .unwrap_or(false)
    }

    /// A new private anonymous mapping with `prot`, one huge page longer than `len`:
    /// (where it starts, its length, the first huge-page boundary in it).
    fn reserve(len: usize, prot: c_int) -> Option<(usize, usize, usize)> {
        let over = len.checked_add(HUGE_PAGE)?;
        // SAFETY: an anonymous private mapping touches no existing memory.
        let p = unsafe {
            mmap(
                std::ptr::null_mut(),
                over,
                prot,
                MAP_PRIVATE | MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p as isize == -1 {
            return None;
        }
        let base = p as usize;
        Some((base, over, base.next_multiple_of(HUGE_PAGE)))
    }

    /// Unmaps the parts of the reservation `base..base + over` outside the block
    /// `start..start + len`, and advises the block.
    ///
    /// # Safety
    /// The reservation was made by [`reserve`] for `len` bytes, `start` is its boundary,
    /// and nothing lives in it outside the block.
    unsafe fn trim(base: usize, over: usize, start: usize, len: usize) -> *mut u8 {
        // SAFETY: both ranges are parts of the reservation, outside the block (caller).
        unsafe {
            if start > base {
                munmap(base as *mut c_void, start - base);
            }
            let tail = base + over - (start + len);
            if tail > 0 {
                munmap((start + len) as *mut c_void, tail);
            }
        }
        advise(start as *mut u8, len);
        start as *mut u8
    }

    /// `len` fresh bytes (a multiple of the huge page) on a huge-page boundary.
    fn map(len: usize) -> *mut u8 {
        match reserve(len, PROT_READ | PROT_WRITE) {
            // SAFETY: a reservation just made for `len` bytes, with nothing in it yet.
            Some((base, over, start)) => unsafe { trim(base, over, start, len) },
            None => std::ptr::null_mut(),
        }
    }

    /// Returns the pages of a block no longer in use to the cache or the kernel.
    ///
    /// # Safety
    /// `start..start + len` is a whole block (or the tail of one) of this module, unused.
    unsafe fn release(start: usize, len: usize) {
        if len == 0 {
            return;
        }
        if len <= CACHE_BYTES && keep(start, len) {
            return;
        }
        // SAFETY: the caller's range is ours and unused.
        unsafe { munmap(start as *mut c_void, len) };
    }

    /// A block of `size` bytes; zeroed when asked.
    pub fn alloc(size: usize, zeroed: bool) -> *mut u8 {
        let len = span(size);
        if let Some(start) = take(len) {
            let p = start as *mut u8;
            if zeroed {
                // SAFETY: the block is `len >= size` bytes of ours.
                unsafe { std::ptr::write_bytes(p, 0, size) };
            }
            return p;
        }
        // A fresh mapping is zeroed by the kernel.
        map(len)
    }

    /// Frees a block of `size` bytes.
    ///
    /// # Safety
    /// `ptr` is a live block of this module made for `size` bytes.
    pub unsafe fn free(ptr: *mut u8, size: usize) {
        unsafe { release(ptr as usize, span(size)) }
    }

    /// Resizes a block: in place when its mapping already covers the new size or can grow
    /// where it is; otherwise its pages move to a new place, and only if the kernel refuses
    /// that are its bytes copied to a new block.
    ///
    /// # Safety
    /// `ptr` is a live block of this module made for `old` bytes; `new` is a size it owns.
    pub unsafe fn realloc(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
        let (have, want) = (span(old), span(new));
        let start = ptr as usize;
        if want <= have {
            // SAFETY: the tail past the new span is part of this block and unused now.
            unsafe { release(start + want, have - want) };
            return ptr;
        }
        // Grow into the cached block that follows it, if any: a block that a cached one
        // was split for (see `take`) finds the rest of it there.
        if take_at(start + have, want - have) {
            return ptr;
        }
        // Grow where it is if the next pages are free (no MREMAP_MAYMOVE: the block keeps
        // its address, and with it its huge-page alignment).
        // SAFETY: the mapping is ours; without MAYMOVE nothing else can change.
        let grown = unsafe { mremap(ptr.cast(), have, want, 0) };
        if grown as usize == start {
            advise(ptr, want);
            return ptr;
        }
        // Otherwise move the pages (not their bytes) to a new place on a huge-page
        // boundary: no copy, and the old and new blocks are never resident at once.
        if let Some(p) = unsafe { relocate(ptr, have, want) } {
            return p;
        }
        let p = alloc(new, false);
        if !p.is_null() {
            // SAFETY: both blocks hold at least `old` bytes and do not overlap; the old
            // block is ours and no longer used.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, p, old);
                release(start, have);
            }
        }
        p
    }

    /// Moves a block's pages to a fresh `want`-byte place on a huge-page boundary, growing
    /// it; `None` (and nothing changed) if the kernel refuses.
    ///
    /// # Safety
    /// `ptr..ptr + have` is a live block of this module.
    unsafe fn relocate(ptr: *mut u8, have: usize, want: usize) -> Option<*mut u8> {
        let (base, over, target) = reserve(want, PROT_NONE)?;
        // SAFETY: MREMAP_FIXED replaces only `target..target + want`, which lies inside the
        // reservation just made; the block's pages move there whole.
        let moved = unsafe {
            mremap(
                ptr.cast(),
                have,
                want,
                MREMAP_MAYMOVE | MREMAP_FIXED,
                target as *mut c_void,
            )
        };
        if moved as usize != target {
            // SAFETY: the move failed, so the whole reservation is ours and unused.
            unsafe { munmap(base as *mut c_void, over) };
            return None;
        }
        // SAFETY: the block now fills `target..target + want`; the rest is reservation.
        Some(unsafe { trim(base, over, target, want) })
    }
}

/// Maps the pages of `len` bytes at `ptr`, memory the C library just gave a new Python object
/// that this thread is about to fill, in one system call instead of one fault per page.
///
/// A large bytes or str object comes from `malloc`, which often hands back memory that it
/// returned to the kernel a moment before (the C library trims a heap when an object of a
/// MiB or so is freed at its top). Filling it then takes a fault for each 4 KiB page, and
/// the faults of two threads contend in the kernel: most of the time of a 1 MB `loads` or
/// `dumps`, and why two threads did not run much faster than one. `MADV_POPULATE_WRITE`
/// maps the same pages in one call. Only when the range's last whole page is not resident
/// (one `mincore`): memory that is already mapped costs one cheap call and nothing else.
/// Only whole pages inside the range are touched, and populating never changes what
/// memory holds, so this is a pure hint: on a kernel without it (before 5.14), nothing
/// happens and the copy faults as before.
///
/// The look costs a system call (0.3 us here: more than the rest of a 100 KB `dumps`
/// besides its copy, and most of the gap to msgspec's one `memcpy`). A thread mostly finds
/// the same memory resident call after call (the C library mostly hands it the block it
/// freed last), so after each look that finds the memory resident it skips the look for
/// twice as many of its calls as the last time, up to [`SKIP_MAX`], and after one that
/// finds it not resident it looks on every call again. A call that skips the look and meets memory that is not resident faults on
/// its pages as it would without this.
#[cfg(target_os = "linux")]
pub(crate) fn prefault(ptr: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    const MADV_POPULATE_WRITE: c_int = 23;
    unsafe extern "C" {
        fn mincore(addr: *mut c_void, len: usize, vec: *mut u8) -> c_int;
    }
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize).saturating_add(len) / PAGE * PAGE;
    if end <= start {
        return;
    }
    let (skip, next) = LOOK.get();
    if skip > 0 {
        LOOK.set((skip - 1, next));
        return;
    }
    let mut resident = 0u8;
    // SAFETY: `end - PAGE..end` is a whole page inside the caller's allocation; `mincore`
    // only reports on it, into the one byte given. `madvise` maps whole pages inside the
    // allocation, keeping their contents; a refusal (old kernel) leaves them as they were.
    unsafe {
        if mincore((end - PAGE) as *mut c_void, PAGE, &mut resident) == 0 && resident & 1 == 1 {
            let next = (next * 2 + 1).min(SKIP_MAX);
            LOOK.set((next, next));
            return;
        }
        LOOK.set((0, 0));
        madvise(start as *mut c_void, end - start, MADV_POPULATE_WRITE);
    }
}

/// The most calls of a thread in a row that skip [`prefault`]'s look.
#[cfg(target_os = "linux")]
const SKIP_MAX: u32 = 255;

#[cfg(target_os = "linux")]
thread_local! {
    /// This thread's calls left to skip [`prefault`]'s look, and how many the last look
    /// that found the memory resident gave.
    static LOOK: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn prefault(_ptr: *mut u8, _len: usize) {}
