//! Messages of one size made of plain numbers: each column is a strided copy of the input.
//!
//! When every message has the same size and holds only numbers, bools and fixed bytes
//! (nested structs of the same kind included), a field sits at the same offset of every
//! message. Its column is then one pass over the input that moves `width` bytes per row
//! (reversing them for the other byte order), with no VM and no per-row dispatch. On
//! several threads, rows are decoded in chunks (multiples of 64 rows, so bool bitmaps never
//! share a byte) that the pool's threads take in turn.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayData;

use bytewright_wire::program::{Konst, Node, Program, Scalar, Step, StructProg};

use crate::layout::{Layout, NodeId, Shape};
use crate::pool;

/// One column of the plan.
#[derive(Debug, Clone)]
struct Leaf {
    node: NodeId,
    /// Offset in the message.
    off: usize,
    scalar: Scalar,
    /// The wire bytes every row must hold (a constant field).
    konst: Option<Vec<u8>>,
    /// The field indices from the root struct down to this field.
    path: Vec<u16>,
}

/// The strided plan of a program, when it has one.
#[derive(Debug, Clone)]
pub struct Plan {
    pub size: usize,
    leaves: Vec<Leaf>,
    /// Whether packing the leaves writes every byte of a message (no padding, no bit
    /// groups to merge into), so the output needs no zeros first.
    writes_all: bool,
}

impl Plan {
    /// The plan of `prog`, or `None` when messages vary in size or hold anything but
    /// numbers, bools, fixed bytes and structs of those (or carry checksums).
    pub fn new(prog: &Program, layout: &Layout) -> Option<Plan> {
        let size = prog.static_size.filter(|&s| s > 0)?;
        let Node::Struct(root) = prog.root else {
            return None;
        };
        let mut leaves = Vec::new();
        walk(
            prog,
            layout,
            root,
            layout.root,
            0,
            &mut Vec::new(),
            &mut leaves,
        )?;
        let writes_all = writes_all(size, &leaves);
        Some(Plan {
            size,
            leaves,
            writes_all,
        })
    }

    /// Whether [`Plan::pack`] writes every byte of its output: when it does not, the output
    /// must be zeroed first (padding, and the bits of a group no field sets).
    pub fn writes_every_byte(&self) -> bool {
        self.writes_all
    }
}

/// Whether the leaves, packed, cover every byte of a `size`-byte message by themselves.
/// Bit fields merge into their group's bytes, so those count as not written.
fn writes_all(size: usize, leaves: &[Leaf]) -> bool {
    let mut hit = vec![false; size];
    for l in leaves {
        if matches!(l.scalar, Scalar::Bits { .. }) {
            continue;
        }
        let end = (l.off + l.scalar.size()).min(size);
        hit[l.off.min(end)..end].fill(true);
    }
    hit.iter().all(|&h| h)
}

fn walk(
    prog: &Program,
    layout: &Layout,
    index: u32,
    node: NodeId,
    base: usize,
    path: &mut Vec<u16>,
    out: &mut Vec<Leaf>,
) -> Option<()> {
    let sp: &StructProg = &prog.structs[index as usize];
    if !sp.checksums.is_empty() {
        return None;
    }
    let children = &layout.node(node).children;
    let mut pos = base;
    for step in &sp.steps {
        match step {
            Step::Run(run) => {
                for it in &run.items {
                    let Some(f) = it.field else { continue };
                    match it.scalar {
                        Scalar::Int { .. } | Scalar::Float { .. } | Scalar::Bytes(_) => {}
                        Scalar::Bool | Scalar::Bits { .. } if it.konst.is_none() => {}
                        _ => return None,
                    }
                    let konst = match &it.konst {
                        None => None,
                        Some(k) => Some(konst_bytes(k, &it.scalar)?),
                    };
                    let mut p = path.clone();
                    p.push(f);
                    out.push(Leaf {
                        node: children[f as usize],
                        off: pos + it.off,
                        scalar: it.scalar,
                        konst,
                        path: p,
                    });
                }
                pos += run.size;
            }
            Step::Align(n) => pos += (n - (pos - base) % n) % n,
            Step::Field(fs) => {
                let Node::Struct(i) = fs.node else {
                    return None;
                };
                if fs.when.is_some() || fs.window.is_some() || fs.konst.is_some() {
                    return None;
                }
                let child = children[fs.field as usize];
                if !matches!(layout.node(child).shape, Shape::Struct { .. }) {
                    return None;
                }
                path.push(fs.field);
                walk(prog, layout, i, child, pos, path, out)?;
                path.pop();
                pos += prog.structs[i as usize].static_size?;
            }
        }
    }
    Some(())
}

/// A constant's wire bytes.
fn konst_bytes(k: &Konst, s: &Scalar) -> Option<Vec<u8>> {
    match (k, s) {
        (Konst::Bytes(b), Scalar::Bytes(_)) => Some(b.to_vec()),
        (Konst::Int(v), Scalar::Int { width, big, .. }) => {
            let w = *width as usize;
            let le = v.to_le_bytes();
            let mut b = le[..w].to_vec();
            if *big {
                b.reverse();
            }
            Some(b)
        }
        _ => None,
    }
}

/// The bytes one row of a leaf takes in its column (0 for bit-packed bools).
fn col_width(s: &Scalar) -> usize {
    match *s {
        Scalar::Int { width, .. } => width.next_power_of_two() as usize,
        Scalar::Float { width, .. } => width as usize,
        Scalar::Bytes(n) => n,
        Scalar::Bool | Scalar::Bits { boolean: true, .. } => 0,
        Scalar::Bits { width, .. } => (width.div_ceil(8)).next_power_of_two() as usize,
        Scalar::Pad(_) => 0,
    }
}

const HOST_BIG: bool = cfg!(target_endian = "big");

/// Why the strided copy stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// This row holds a bad value (the VM then reports it).
    BadRow(usize),
    Panicked,
}

/// Bytes of a column not yet written.
type Raw<'a> = &'a mut [MaybeUninit<u8>];

/// Decodes `rows` messages at `start` into per-leaf column buffers, using `threads`
/// threads. Returns the buffers, or the index of the first row that holds a bad value.
pub fn run(
    plan: &Plan,
    input: &[u8],
    start: usize,
    rows: usize,
    threads: usize,
) -> Result<Vec<Buffer>, Stop> {
    let lens: Vec<usize> = plan
        .leaves
        .iter()
        .map(|l| match col_width(&l.scalar) {
            0 => rows.div_ceil(8),
            w => rows * w,
        })
        .collect();
    // Columns are left unwritten until the threads fill them: no pass of zeros before the
    // copy.
    let mut bufs: Vec<MutableBuffer> = lens
        .iter()
        .map(|&n| MutableBuffer::with_capacity(n))
        .collect();
    let threads = threads.clamp(1, rows.div_ceil(64).max(1));
    let chunk = chunk_rows(rows, threads);
    let cols: Vec<Column> = plan
        .leaves
        .iter()
        .zip(bufs.iter_mut())
        .zip(&lens)
        .map(|((leaf, buf), &len)| Column {
            ptr: buf.spare().as_mut_ptr(),
            len,
            width: col_width(&leaf.scalar),
        })
        .collect();
    // Columns larger than the caches are written around them (see `copy`).
    let stream = lens.iter().sum::<usize>() >= STREAM_FROM;
    // The first bad row found so far (rows past it need not be decoded).
    let bad = AtomicUsize::new(usize::MAX);
    let task = |i: usize| {
        let first = i * chunk;
        if first >= bad.load(Ordering::Relaxed) {
            return;
        }
        let n = chunk.min(rows - first);
        // SAFETY: task `i` alone takes rows `first..first + n` (chunks do not overlap, and
        // start on a multiple of 64 rows, so bitmaps do not share a byte), each column
        // outlives the tasks (`pool::run` returns after the last one), and `Column::part`
        // stays inside the column's `len` bytes.
        let out = cols.iter().map(|c| unsafe { c.part(first, n) }).collect();
        let found = block(plan, input, start, first, n, out, stream);
        if stream {
            // Streamed stores are not ordered with the others: make them visible before the
            // task reports done.
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a store fence has no precondition (SSE2 is part of x86_64).
            unsafe {
                std::arch::x86_64::_mm_sfence()
            };
        }
        if let Some(r) = found {
            bad.fetch_min(r, Ordering::Relaxed);
        }
    };
    pool::run(rows.div_ceil(chunk), threads - 1, &task).map_err(|_| Stop::Panicked)?;
    match bad.into_inner() {
        usize::MAX => Ok(bufs
            .into_iter()
            .zip(lens)
            .map(|(mut b, len)| {
                // SAFETY: without a bad row every task wrote all of its part of every
                // column, and the parts cover the first `len` bytes.
                unsafe { b.set_len(len) };
                Buffer::from(b)
            })
            .collect()),
        // Every chunk before the one holding the first bad row was decoded in full, so
        // the least row found is the first bad one.
        row => Err(Stop::BadRow(row)),
    }
}

/// The rows of one task: every row in one when on one thread; else small enough that a
/// thread woken late, or preempted, leaves the others its share (about 8 tasks per thread),
/// and a multiple of 64.
fn chunk_rows(rows: usize, threads: usize) -> usize {
    if threads == 1 {
        return rows.max(1);
    }
    rows.div_ceil(threads * 8).max(4096).next_multiple_of(64)
}

/// A column's unwritten bytes, shared by the tasks that fill its parts.
struct Column {
    ptr: *mut MaybeUninit<u8>,
    len: usize,
    /// Bytes per row (0: a bitmap).
    width: usize,
}

// SAFETY: the tasks only make slices of disjoint parts of the column (see `Column::part`).
unsafe impl Sync for Column {}

impl Column {
    /// The bytes of rows `first..first + n` (`first` a multiple of 8).
    ///
    /// # Safety
    /// The column's memory must still be borrowed, and no other live slice may cover
    /// these rows.
    unsafe fn part<'a>(&self, first: usize, n: usize) -> Raw<'a> {
        let (lo, hi) = match self.width {
            0 => (first / 8, (first + n).div_ceil(8)),
            w => (first * w, (first + n) * w),
        };
        let (lo, hi) = (lo.min(self.len), hi.min(self.len));
        // SAFETY: `lo..hi` lies inside the column's `len` bytes, which the caller borrows
        // for the slice's lifetime, and no other slice covers them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(lo), hi - lo) }
    }
}

/// A fresh buffer's capacity, not yet written.
trait Spare {
    fn spare(&mut self) -> Raw<'_>;
}

impl Spare for MutableBuffer {
    fn spare(&mut self) -> Raw<'_> {
        let cap = self.capacity();
        // SAFETY: the allocation holds `capacity` bytes, borrowed mutably with `self`;
        // `MaybeUninit` asks nothing of their contents.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr().cast(), cap) }
    }
}

/// The first `n` bytes of `dst`, zeroed, for the kernels that set bits or write through
/// slices (the plain copies write every byte themselves).
fn zeroed(dst: &mut [MaybeUninit<u8>], n: usize) -> &mut [u8] {
    let d = &mut dst[..n];
    d.fill(MaybeUninit::new(0));
    // SAFETY: every byte of `d` was just written; `MaybeUninit<u8>` has the layout of `u8`.
    unsafe { &mut *(d as *mut [MaybeUninit<u8>] as *mut [u8]) }
}

/// Tables whose columns take this many bytes or more are written with streaming stores.
/// An ordinary store first reads the line it writes into the cache (a third stream of
/// memory traffic besides the input and the output), which for columns larger than the
/// caches only evicts what is still to be read; a streaming store writes whole lines
/// without reading them. Smaller tables stay in the cache for whoever reads them next.
const STREAM_FROM: usize = 16 << 20;

/// Writes the first rows of [`copy`] (as many as fill whole 16-byte units) with streaming
/// stores, gathering `16 / W` rows per store; returns how many rows it wrote.
///
/// # Safety
/// `src.add(r * stride)` is readable for `W` bytes for every row `r < n`, `out` is valid
/// for `n * W` writes and 16-byte aligned.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stream_rows<const W: usize>(
    src: *const u8,
    stride: usize,
    n: usize,
    out: *mut u8,
    swap: bool,
) -> usize {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let per = 16 / W;
    let units = n / per;
    // SAFETY: as the caller guarantees; unit u gathers rows u*per..(u+1)*per < n into a
    // local and stores it at out + 16*u, inside the n*W bytes and aligned.
    unsafe {
        for u in 0..units {
            let mut v = [0u8; 16];
            for j in 0..per {
                let mut b =
                    std::ptr::read_unaligned(src.add((u * per + j) * stride).cast::<[u8; W]>());
                if swap {
                    b.reverse();
                }
                std::ptr::write_unaligned(v.as_mut_ptr().add(j * W).cast::<[u8; W]>(), b);
            }
            _mm_stream_si128(
                out.add(u * 16).cast::<__m128i>(),
                _mm_loadu_si128(v.as_ptr().cast::<__m128i>()),
            );
        }
    }
    units * per
}

/// Rows decoded leaf by leaf at a time: their input stays in cache while every leaf reads
/// it (a multiple of 8, so bool bitmaps start on a byte).
const CACHE_ROWS: usize = 2048;

/// Decodes rows `first..first + n` into `out` (one slice per leaf, starting at row `first`).
/// Returns the first row holding a bad value.
fn block(
    plan: &Plan,
    input: &[u8],
    start: usize,
    first: usize,
    n: usize,
    mut out: Vec<Raw<'_>>,
    stream: bool,
) -> Option<usize> {
    let stride = plan.size;
    let mut done = 0;
    while done < n {
        let k = CACHE_ROWS.min(n - done);
        let base = start + (first + done) * stride;
        let mut bad: Option<usize> = None;
        for (leaf, dst) in plan.leaves.iter().zip(out.iter_mut()) {
            let dst = match col_width(&leaf.scalar) {
                0 => &mut dst[done / 8..],
                w => &mut dst[done * w..],
            };
            // Only the rows before a bad row already found matter.
            let k = bad.unwrap_or(k);
            if let Some(r) = leaf_rows(leaf, input, base + leaf.off, stride, k, dst, stream) {
                bad = Some(bad.map_or(r, |b| b.min(r)));
            }
        }
        if let Some(r) = bad {
            return Some(first + done + r);
        }
        done += k;
    }
    None
}

/// Decodes `n` rows of one leaf from `at` (the first row's field) into `dst`, writing
/// every byte of their part of the column; returns the first row holding a bad value.
fn leaf_rows(
    leaf: &Leaf,
    input: &[u8],
    at: usize,
    stride: usize,
    n: usize,
    dst: Raw<'_>,
    stream: bool,
) -> Option<usize> {
    let found = match leaf.scalar {
        Scalar::Int { width: 1, .. } => copy::<1>(input, at, stride, n, dst, false, stream),
        Scalar::Int { width: 2, big, .. } | Scalar::Float { width: 2, big } => {
            copy::<2>(input, at, stride, n, dst, big != HOST_BIG, stream)
        }
        Scalar::Int { width: 4, big, .. } | Scalar::Float { width: 4, big } => {
            copy::<4>(input, at, stride, n, dst, big != HOST_BIG, stream)
        }
        Scalar::Int { width: 8, big, .. } | Scalar::Float { width: 8, big } => {
            copy::<8>(input, at, stride, n, dst, big != HOST_BIG, stream)
        }
        Scalar::Int {
            width: 3,
            big,
            signed,
        } => {
            int24(input, at, stride, n, zeroed(dst, n * 4), big, signed);
            None
        }
        Scalar::Bytes(w) => {
            let dst = zeroed(dst, n * w);
            for r in 0..n {
                let s = at + r * stride;
                dst[r * w..(r + 1) * w].copy_from_slice(&input[s..s + w]);
            }
            None
        }
        Scalar::Bool => bools(input, at, stride, n, zeroed(dst, n.div_ceil(8))),
        Scalar::Bits { .. } => {
            let len = match col_width(&leaf.scalar) {
                0 => n.div_ceil(8),
                w => n * w,
            };
            bits(input, at, stride, n, zeroed(dst, len), &leaf.scalar);
            None
        }
        _ => {
            let len = n * col_width(&leaf.scalar);
            zeroed(dst, len);
            None
        }
    };
    let konst = leaf.konst.as_ref().and_then(|k| {
        (0..n).find(|r| {
            let s = at + r * stride;
            input[s..s + k.len()] != k[..]
        })
    });
    match (found, konst) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Moves `W` bytes per row from a strided input to a packed column, reversing them when
/// the wire's byte order is not the host's. This is the hot loop of fixed records: the
/// bounds are checked once for the whole block rather than per row.
#[inline(always)]
fn copy<const W: usize>(
    input: &[u8],
    at: usize,
    stride: usize,
    n: usize,
    dst: Raw<'_>,
    swap: bool,
    stream: bool,
) -> Option<usize> {
    if n == 0 {
        return None;
    }
    assert!(
        at + (n - 1) * stride + W <= input.len(),
        "rows inside the input"
    );
    assert!(dst.len() >= n * W, "room for the rows");
    let src = input.as_ptr();
    let out = dst.as_mut_ptr().cast::<u8>();
    #[cfg(target_arch = "x86_64")]
    let first = if stream && (out as usize).is_multiple_of(16) {
        // SAFETY: as the plain loops below, for the rows it writes (16 bytes at a time).
        unsafe { stream_rows::<W>(src.add(at), stride, n, out, swap) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let first = {
        let _ = stream;
        0
    };
    if swap {
        for r in first..n {
            // SAFETY: row r reads input[at + r*stride .. + W] and writes dst[r*W .. + W], both
            // inside the slices by the asserts above (r < n); unaligned reads and writes.
            unsafe {
                let mut b = std::ptr::read_unaligned(src.add(at + r * stride).cast::<[u8; W]>());
                b.reverse();
                std::ptr::write_unaligned(out.add(r * W).cast::<[u8; W]>(), b);
            }
        }
    } else {
        for r in first..n {
            // SAFETY: as above.
            unsafe {
                let b = std::ptr::read_unaligned(src.add(at + r * stride).cast::<[u8; W]>());
                std::ptr::write_unaligned(out.add(r * W).cast::<[u8; W]>(), b);
            }
        }
    }
    None
}

fn int24(
    input: &[u8],
    at: usize,
    stride: usize,
    n: usize,
    dst: &mut [u8],
    big: bool,
    signed: bool,
) {
    for r in 0..n {
        let s = at + r * stride;
        let b = &input[s..s + 3];
        let u = if big {
            u32::from_be_bytes([0, b[0], b[1], b[2]])
        } else {
            u32::from_le_bytes([b[0], b[1], b[2], 0])
        };
        let v = if signed {
            ((u << 8) as i32 >> 8) as u32
        } else {
            u
        };
        dst[r * 4..r * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
}

fn bools(input: &[u8], at: usize, stride: usize, n: usize, dst: &mut [u8]) -> Option<usize> {
    for r in 0..n {
        match input[at + r * stride] {
            0 => {}
            1 => dst[r / 8] |= 1 << (r % 8),
            _ => return Some(r),
        }
    }
    None
}

fn bits(input: &[u8], at: usize, stride: usize, n: usize, dst: &mut [u8], s: &Scalar) {
    let Scalar::Bits {
        group,
        shift,
        width,
        signed,
        lsb,
        boolean,
        ..
    } = *s
    else {
        return;
    };
    let w = col_width(s);
    let mask = (1u128 << width) - 1;
    for r in 0..n {
        let b = &input[at + r * stride..at + r * stride + group as usize];
        let g = if lsb {
            b.iter().rev().fold(0u128, |a, &x| (a << 8) | u128::from(x))
        } else {
            b.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x))
        };
        let v = (g >> shift) & mask;
        if boolean {
            if v != 0 {
                dst[r / 8] |= 1 << (r % 8);
            }
            continue;
        }
        let v = if signed {
            let k = 128 - u32::from(width);
            (((v << k) as i128) >> k) as u128
        } else {
            v
        };
        dst[r * w..(r + 1) * w].copy_from_slice(&v.to_le_bytes()[..w]);
    }
}

/// The Arrow arrays of the table's columns from the leaf buffers.
pub fn arrays(
    plan: &Plan,
    layout: &Layout,
    bufs: Vec<Buffer>,
    rows: usize,
) -> Result<Vec<ArrayRef>, arrow_schema::ArrowError> {
    let large = vec![false; layout.nodes.len()];
    let mut by_node: Vec<Option<Buffer>> = vec![None; layout.nodes.len()];
    for (leaf, b) in plan.leaves.iter().zip(bufs) {
        by_node[leaf.node as usize] = Some(b);
    }
    let (_, cols) = layout.columns();
    cols.iter()
        .map(|&c| Ok(make_array(data(layout, c, &mut by_node, rows, &large)?)))
        .collect()
}

fn data(
    layout: &Layout,
    id: NodeId,
    by_node: &mut [Option<Buffer>],
    rows: usize,
    large: &[bool],
) -> Result<ArrayData, arrow_schema::ArrowError> {
    let dt = layout.data_type(id, large);
    let b = ArrayData::builder(dt).len(rows);
    match by_node[id as usize].take() {
        Some(buf) => b.add_buffer(buf).build(),
        None => {
            let mut b = b;
            for &c in &layout.node(id).children {
                b = b.add_child_data(data(layout, c, by_node, rows, large)?);
            }
            b.build()
        }
    }
}

/// What one leaf of a strided pack reads.
pub enum PackInput<'a> {
    /// A column (any integer, float, bool or binary type that holds the field's values).
    Array(&'a dyn arrow_array::Array),
    /// One value for every row (a class default, or a constant).
    Int(i128),
    Float(f64),
    Bytes(&'a [u8]),
}

impl Plan {
    /// Each leaf's path of field indices from the root, in leaf order: the inputs of
    /// [`Plan::pack`] follow it.
    pub fn leaf_paths(&self) -> impl Iterator<Item = &[u16]> {
        self.leaves.iter().map(|l| l.path.as_slice())
    }

    /// Whether leaf `i` holds a constant (a missing column then writes it).
    pub fn leaf_konst(&self, i: usize) -> Option<&[u8]> {
        self.leaves[i].konst.as_deref()
    }

    /// Packs `rows` messages into `out` (`rows * size` bytes, zeroed first unless
    /// [`Plan::writes_every_byte`]), each leaf from its input. `Err(row)` names a row the
    /// fast path cannot write (a value out of range, a null, a type it does not take): the
    /// caller then packs through the VM, which reports the first bad row with its message.
    pub fn pack(&self, inputs: &[PackInput<'_>], rows: usize, out: &mut [u8]) -> Result<(), usize> {
        let stride = self.size;
        if inputs.len() != self.leaves.len()
            || rows.checked_mul(stride).is_none_or(|n| out.len() < n)
        {
            return Err(0);
        }
        let cols = self
            .leaves
            .iter()
            .zip(inputs)
            .map(|(leaf, input)| LeafInput::new(leaf, input, rows))
            .collect::<Result<Vec<_>, usize>>()?;
        // A block of rows at a time, every leaf in turn: the block's messages stay in cache
        // while each leaf writes its field into them.
        let mut lo = 0;
        while lo < rows {
            let hi = (lo + CACHE_ROWS).min(rows);
            for (leaf, col) in self.leaves.iter().zip(&cols) {
                pack_rows(leaf, col, stride, lo, hi, out)?;
                konst_rows(leaf, lo, hi, stride, out)?;
            }
            lo = hi;
        }
        Ok(())
    }
}

/// One leaf's input as [`Plan::pack`] reads it.
enum LeafInput<'a> {
    /// A column of exactly the field's integer type: its values' bytes, moved as they are
    /// (reversed for the other byte order).
    Plain {
        values: Buffer,
        w: usize,
        swap: bool,
    },
    Other(&'a PackInput<'a>),
}

impl<'a> LeafInput<'a> {
    /// Refuses integer columns with nulls (their first null row), and finds plain ones.
    fn new(leaf: &Leaf, input: &'a PackInput<'a>, rows: usize) -> Result<Self, usize> {
        let s = leaf.scalar;
        if let (Scalar::Int { .. } | Scalar::Bool | Scalar::Bits { .. }, PackInput::Array(a)) =
            (s, input)
        {
            if a.len() < rows {
                return Err(a.len());
            }
            if a.null_count() > 0 {
                return Err((0..rows).find(|&r| a.is_null(r)).unwrap_or(0));
            }
            if let Some(w) = same_int(&s, a.data_type()) {
                let data = a.to_data();
                let values = data.buffers()[0].slice(data.offset() * w);
                if values.len() < rows * w {
                    return Err(0);
                }
                let big = matches!(s, Scalar::Int { big: true, .. });
                return Ok(LeafInput::Plain {
                    values,
                    w,
                    swap: big != HOST_BIG,
                });
            }
        }
        Ok(LeafInput::Other(input))
    }
}

/// Packs one leaf of rows `lo..hi` into `out` (the messages from row 0).
fn pack_rows(
    leaf: &Leaf,
    col: &LeafInput<'_>,
    stride: usize,
    lo: usize,
    hi: usize,
    out: &mut [u8],
) -> Result<(), usize> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType;
    use bytewright_wire::pack::{encode_int, f64_to_f16};

    let input = match col {
        LeafInput::Plain { values, w, swap } => {
            let (w, n) = (*w, hi - lo);
            let src = &values.as_slice()[lo * w..hi * w];
            scatter(src, w, n, &mut out[lo * stride..], stride, leaf.off, *swap);
            return Ok(());
        }
        LeafInput::Other(input) => *input,
    };
    let s = leaf.scalar;
    let slot = |r: usize| -> std::ops::Range<usize> {
        let at = r * stride + leaf.off;
        at..at + s.span()
    };
    match (s, input) {
        (Scalar::Int { .. } | Scalar::Bool | Scalar::Bits { .. }, PackInput::Array(a)) => {
            macro_rules! ints {
                ($t:ty) => {{
                    let v = a.as_primitive::<$t>().values();
                    for r in lo..hi {
                        let at = slot(r);
                        encode_int(&mut out[at], &s, i128::from(v[r])).map_err(|_| r)?;
                    }
                }};
            }
            match a.data_type() {
                DataType::Int8 => ints!(Int8Type),
                DataType::Int16 => ints!(Int16Type),
                DataType::Int32 => ints!(Int32Type),
                DataType::Int64 => ints!(Int64Type),
                DataType::UInt8 => ints!(UInt8Type),
                DataType::UInt16 => ints!(UInt16Type),
                DataType::UInt32 => ints!(UInt32Type),
                DataType::UInt64 => ints!(UInt64Type),
                DataType::Boolean => {
                    let b = a.as_boolean();
                    for r in lo..hi {
                        let at = slot(r);
                        encode_int(&mut out[at], &s, i128::from(b.value(r))).map_err(|_| r)?;
                    }
                }
                _ => return Err(lo),
            }
        }
        (Scalar::Int { .. }, PackInput::Bytes(k)) if k.len() == s.size() => {
            // A constant's own wire bytes.
            for r in lo..hi {
                let at = r * stride + leaf.off;
                out[at..at + k.len()].copy_from_slice(k);
            }
        }
        (Scalar::Int { .. } | Scalar::Bool | Scalar::Bits { .. }, PackInput::Int(v)) => {
            for r in lo..hi {
                let at = slot(r);
                encode_int(&mut out[at], &s, *v).map_err(|_| r)?;
            }
        }
        (Scalar::Float { width, big }, input) => {
            let value = |r: usize| -> Option<f64> {
                match input {
                    PackInput::Float(f) => Some(*f),
                    PackInput::Int(i) => Some(*i as f64),
                    PackInput::Array(a) if a.is_valid(r) => match a.data_type() {
                        DataType::Float16 => Some(a.as_primitive::<Float16Type>().value(r).into()),
                        DataType::Float32 => Some(a.as_primitive::<Float32Type>().value(r).into()),
                        DataType::Float64 => Some(a.as_primitive::<Float64Type>().value(r)),
                        _ => None,
                    },
                    _ => None,
                }
            };
            for r in lo..hi {
                let f = value(r).ok_or(r)?;
                let bits: u64 = match width {
                    2 => u64::from(f64_to_f16(f).ok_or(r)?),
                    4 => {
                        let g = f as f32;
                        if g.is_infinite() && f.is_finite() {
                            return Err(r);
                        }
                        u64::from(g.to_bits())
                    }
                    _ => f.to_bits(),
                };
                let w = width as usize;
                let at = r * stride + leaf.off;
                let bytes = bits.to_le_bytes();
                let dst = &mut out[at..at + w];
                dst.copy_from_slice(&bytes[..w]);
                if big {
                    dst.reverse();
                }
            }
        }
        (Scalar::Bytes(n), input) => {
            for r in lo..hi {
                let b: &[u8] = match input {
                    PackInput::Bytes(b) => b,
                    PackInput::Array(a) if a.is_valid(r) => match a.data_type() {
                        DataType::FixedSizeBinary(_) => a.as_fixed_size_binary().value(r),
                        DataType::Binary => a.as_binary::<i32>().value(r),
                        DataType::LargeBinary => a.as_binary::<i64>().value(r),
                        _ => return Err(r),
                    },
                    _ => return Err(r),
                };
                if b.len() != n {
                    return Err(r);
                }
                let at = r * stride + leaf.off;
                out[at..at + n].copy_from_slice(b);
            }
        }
        _ => return Err(lo),
    }
    Ok(())
}

/// A constant field must hold its constant in every row written.
fn konst_rows(leaf: &Leaf, lo: usize, hi: usize, stride: usize, out: &[u8]) -> Result<(), usize> {
    if let Some(k) = &leaf.konst {
        if let Some(r) = (lo..hi).find(|r| {
            let at = r * stride + leaf.off;
            out[at..at + k.len()] != k[..]
        }) {
            return Err(r);
        }
    }
    Ok(())
}

/// The byte width of an integer column whose type matches an integer field exactly.
fn same_int(s: &Scalar, dt: &arrow_schema::DataType) -> Option<usize> {
    use arrow_schema::DataType as D;
    let Scalar::Int { width, signed, .. } = *s else {
        return None;
    };
    let ok = matches!(
        (width, signed, dt),
        (1, false, D::UInt8)
            | (2, false, D::UInt16)
            | (4, false, D::UInt32)
            | (8, false, D::UInt64)
            | (1, true, D::Int8)
            | (2, true, D::Int16)
            | (4, true, D::Int32)
            | (8, true, D::Int64)
    );
    ok.then_some(width as usize)
}

/// Writes `rows` values of `w` bytes from a packed column into strided messages.
fn scatter(
    src: &[u8],
    w: usize,
    rows: usize,
    out: &mut [u8],
    stride: usize,
    off: usize,
    swap: bool,
) {
    match (w, swap) {
        (1, _) => scatter_w::<1, false>(src, rows, out, stride, off),
        (2, false) => scatter_w::<2, false>(src, rows, out, stride, off),
        (2, true) => scatter_w::<2, true>(src, rows, out, stride, off),
        (4, false) => scatter_w::<4, false>(src, rows, out, stride, off),
        (4, true) => scatter_w::<4, true>(src, rows, out, stride, off),
        (_, false) => scatter_w::<8, false>(src, rows, out, stride, off),
        (_, true) => scatter_w::<8, true>(src, rows, out, stride, off),
    }
}

/// Rows a scatter reads before it writes them: see [`scatter_w`].
const SCATTER_BATCH: usize = 4;
// A batch of one-byte values is read as one four-byte word.
const _: () = assert!(SCATTER_BATCH == 4);

/// Writes `rows` values of `W` bytes from `src` (packed) into `out` at `off`, `off +
/// stride`, ... (each value's bytes reversed when `SWAP`).
///
/// A batch of [`SCATTER_BATCH`] values is read (as whole little-endian words) before any of
/// them is written. A loop that reads one value and writes it, row after row, put a read
/// right behind every write; on AMD Zen the processor's memory-dependence predictor came to
/// hold some of those reads back until the write before them was done, depending on where
/// the loop's code and the buffers happened to sit, which made the same loop up to four
/// times slower from one build to the next (`pack_table` of 200,000 `<IHHQ` rows: 255 us
/// or 370-1,190 us). Reading a batch first leaves at most one such wait per batch.
#[inline(always)]
fn scatter_w<const W: usize, const SWAP: bool>(
    src: &[u8],
    rows: usize,
    out: &mut [u8],
    stride: usize,
    off: usize,
) {
    if rows == 0 {
        return;
    }
    assert!(src.len() >= rows * W, "a value per row");
    assert!(
        off + (rows - 1) * stride + W <= out.len(),
        "rows inside the output"
    );
    let (s, o) = (src.as_ptr(), out.as_mut_ptr());
    let per_word = 8 / W; // values in one 8-byte word (W is 1, 2, 4 or 8)
    let mask = if W == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * W)) - 1
    };
    let batches = rows / SCATTER_BATCH;
    for b in 0..batches {
        let r0 = b * SCATTER_BATCH;
        let mut v = [0u64; SCATTER_BATCH];
        if SCATTER_BATCH * W < 8 {
            // One-byte values: the batch's four bytes as one word.
            // SAFETY: bytes r0 .. r0 + 4 lie inside `src` (asserted above).
            let x = u32::from_le_bytes(unsafe {
                std::ptr::read_unaligned(s.add(r0 * W).cast::<[u8; 4]>())
            });
            for (j, slot) in v.iter_mut().enumerate() {
                *slot = (u64::from(x) >> (8 * W * j)) & mask;
            }
        }
        for (k, word) in (0..SCATTER_BATCH * W / 8).enumerate() {
            // SAFETY: bytes (r0 * W + 8 * word) .. + 8 lie inside the first
            // `batches * SCATTER_BATCH * W` bytes of `src` (asserted above).
            let x = u64::from_le_bytes(unsafe {
                std::ptr::read_unaligned(s.add(r0 * W + 8 * word).cast::<[u8; 8]>())
            });
            for j in 0..per_word {
                v[k * per_word + j] = (x >> (8 * W * j)) & mask;
            }
        }
        // SAFETY: row r0's slot, in bounds by the assert above (r0 < rows).
        let mut dst = unsafe { o.add(off + r0 * stride) };
        for &x in &v {
            let bytes = x.to_le_bytes();
            let mut b = [0u8; W];
            b.copy_from_slice(&bytes[..W]);
            if SWAP {
                b.reverse();
            }
            // SAFETY: `dst` is row r's slot (r0 <= r < r0 + SCATTER_BATCH <= rows): W bytes
            // in bounds by the assert above; unaligned. After the batch's last row it may
            // point past the output, and is not used again.
            unsafe {
                std::ptr::write_unaligned(dst.cast::<[u8; W]>(), b);
                dst = dst.wrapping_add(stride);
            }
        }
    }
    for r in batches * SCATTER_BATCH..rows {
        // SAFETY: reads src[r*W .. + W] and writes out[off + r*stride .. + W], in bounds by
        // the asserts above; unaligned accesses.
        unsafe {
            let mut b = std::ptr::read_unaligned(s.add(r * W).cast::<[u8; W]>());
            if SWAP {
                b.reverse();
            }
            std::ptr::write_unaligned(o.add(off + r * stride).cast::<[u8; W]>(), b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scatter;

    /// What `scatter` must write: each row's value copied (reversed when swapped) into its
    /// slot, every other byte left alone.
    fn naive(
        src: &[u8],
        w: usize,
        rows: usize,
        out: &mut [u8],
        stride: usize,
        off: usize,
        swap: bool,
    ) {
        for r in 0..rows {
            let mut v = src[r * w..(r + 1) * w].to_vec();
            if swap {
                v.reverse();
            }
            out[off + r * stride..off + r * stride + w].copy_from_slice(&v);
        }
    }

    #[test]
    fn scatter_matches_a_copy_per_row_for_every_width_row_count_and_layout() {
        for w in [1usize, 2, 4, 8] {
            for swap in [false, true] {
                for rows in 0..=21usize {
                    for (stride, off) in [(w, 0), (16, 0), (16, 3), (13, 5), (w + 1, 1)] {
                        let src: Vec<u8> = (0..rows * w).map(|i| (i * 37 + 11) as u8).collect();
                        let len = if rows == 0 {
                            off + w
                        } else {
                            off + (rows - 1) * stride + w
                        };
                        let fill: Vec<u8> = (0..len + 7).map(|i| (i * 101 + 7) as u8).collect();
                        let (mut got, mut want) = (fill.clone(), fill);
                        scatter(&src, w, rows, &mut got, stride, off, swap && w > 1);
                        naive(&src, w, rows, &mut want, stride, off, swap && w > 1);
                        assert_eq!(
                            got, want,
                            "w={w} swap={swap} rows={rows} stride={stride} off={off}"
                        );
                    }
                }
            }
        }
    }
}
