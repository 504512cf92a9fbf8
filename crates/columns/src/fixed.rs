//! Messages of one size made of plain numbers: each column is a strided copy of the input.
//!
//! When every message has the same size and holds only numbers, bools and fixed bytes
//! (nested structs of the same kind included), a field sits at the same offset of every
//! message. Its column is then one pass over the input that moves `width` bytes per row
//! (reversing them for the other byte order), with no VM and no per-row dispatch. Rows are
//! split across threads in blocks of 64, so bool bitmaps never share a byte.

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayData;

use bytewright_wire::program::{Konst, Node, Program, Scalar, Step, StructProg};

use crate::layout::{Layout, NodeId, Shape};

/// One column of the plan.
#[derive(Debug, Clone)]
struct Leaf {
    node: NodeId,
    /// Offset in the message.
    off: usize,
    scalar: Scalar,
    /// The wire bytes every row must hold (a constant field).
    konst: Option<Vec<u8>>,
}

/// The strided plan of a program, when it has one.
#[derive(Debug, Clone)]
pub struct Plan {
    pub size: usize,
    leaves: Vec<Leaf>,
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
        walk(prog, layout, root, layout.root, 0, &mut leaves)?;
        Some(Plan { size, leaves })
    }
}

fn walk(
    prog: &Program,
    layout: &Layout,
    index: u32,
    node: NodeId,
    base: usize,
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
                    out.push(Leaf {
                        node: children[f as usize],
                        off: pos + it.off,
                        scalar: it.scalar,
                        konst,
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
                walk(prog, layout, i, child, pos, out)?;
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

/// Decodes `rows` messages at `start` into per-leaf column buffers, using `threads`
/// threads. Returns the buffers, or the index of the first row that holds a bad value.
pub fn run(
    plan: &Plan,
    input: &[u8],
    start: usize,
    rows: usize,
    threads: usize,
) -> Result<Vec<Buffer>, Stop> {
    let mut bufs: Vec<MutableBuffer> = plan
        .leaves
        .iter()
        .map(|l| match col_width(&l.scalar) {
            0 => MutableBuffer::from_len_zeroed(rows.div_ceil(8)),
            w => MutableBuffer::from_len_zeroed(rows * w),
        })
        .collect();
    let threads = threads.clamp(1, rows.div_ceil(64).max(1));
    let per = rows.div_ceil(threads).div_ceil(64) * 64;
    // Each thread gets its rows' part of every column.
    let mut parts: Vec<Vec<&mut [u8]>> = (0..threads).map(|_| Vec::new()).collect();
    for (leaf, buf) in plan.leaves.iter().zip(bufs.iter_mut()) {
        let w = col_width(&leaf.scalar);
        let mut rest: &mut [u8] = buf.as_slice_mut();
        for part in parts.iter_mut() {
            let take = match w {
                0 => (per / 8).min(rest.len()),
                w => (per * w).min(rest.len()),
            };
            let (a, b) = rest.split_at_mut(take);
            part.push(a);
            rest = b;
        }
    }
    let bad = if threads == 1 {
        let part = parts.pop().unwrap_or_default();
        block(plan, input, start, 0, rows, part)
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .into_iter()
                .enumerate()
                .map(|(t, part)| {
                    let first = t * per;
                    let n = per.min(rows.saturating_sub(first));
                    scope.spawn(move || block(plan, input, start, first, n, part))
                })
                .collect();
            let mut bad: Option<usize> = None;
            for h in handles {
                match h.join() {
                    Ok(Some(r)) => bad = Some(bad.map_or(r, |b| b.min(r))),
                    Ok(None) => {}
                    Err(_) => return Err(Stop::Panicked),
                }
            }
            Ok(bad)
        })?
    };
    match bad {
        Some(row) => Err(Stop::BadRow(row)),
        None => Ok(bufs.into_iter().map(Buffer::from).collect()),
    }
}

/// Decodes rows `first..first + n` into `out` (one slice per leaf, starting at row `first`).
/// Returns the first row holding a bad value.
fn block(
    plan: &Plan,
    input: &[u8],
    start: usize,
    first: usize,
    n: usize,
    mut out: Vec<&mut [u8]>,
) -> Option<usize> {
    let stride = plan.size;
    let mut bad: Option<usize> = None;
    if n == 0 {
        return None;
    }
    let base = start + first * stride;
    for (leaf, dst) in plan.leaves.iter().zip(out.iter_mut()) {
        let at = base + leaf.off;
        // Only the rows before a bad row already found matter.
        let n = bad.map_or(n, |b| b - first);
        let found = match leaf.scalar {
            Scalar::Int { width: 1, .. } => copy::<1>(input, at, stride, n, dst, false),
            Scalar::Int { width: 2, big, .. } | Scalar::Float { width: 2, big } => {
                copy::<2>(input, at, stride, n, dst, big != HOST_BIG)
            }
            Scalar::Int { width: 4, big, .. } | Scalar::Float { width: 4, big } => {
                copy::<4>(input, at, stride, n, dst, big != HOST_BIG)
            }
            Scalar::Int { width: 8, big, .. } | Scalar::Float { width: 8, big } => {
                copy::<8>(input, at, stride, n, dst, big != HOST_BIG)
            }
            Scalar::Int {
                width: 3,
                big,
                signed,
            } => {
                int24(input, at, stride, n, dst, big, signed);
                None
            }
            Scalar::Bytes(w) => {
                for r in 0..n {
                    let s = at + r * stride;
                    dst[r * w..(r + 1) * w].copy_from_slice(&input[s..s + w]);
                }
                None
            }
            Scalar::Bool => bools(input, at, stride, n, dst),
            Scalar::Bits { .. } => {
                bits(input, at, stride, n, dst, &leaf.scalar);
                None
            }
            _ => None,
        };
        let mut found = found.map(|r| first + r);
        if let Some(k) = &leaf.konst {
            if let Some(r) = (0..n).find(|r| {
                let s = at + r * stride;
                input[s..s + k.len()] != k[..]
            }) {
                found = Some(found.map_or(first + r, |f| f.min(first + r)));
            }
        }
        if let Some(r) = found {
            bad = Some(bad.map_or(r, |b| b.min(r)));
        }
    }
    bad
}

#[inline(always)]
fn copy<const W: usize>(
    input: &[u8],
    at: usize,
    stride: usize,
    n: usize,
    dst: &mut [u8],
    swap: bool,
) -> Option<usize> {
    let src = &input[at..];
    let dst = &mut dst[..n * W];
    if swap {
        for (r, d) in dst.chunks_exact_mut(W).enumerate() {
            let mut b: [u8; W] = src[r * stride..r * stride + W].try_into().expect("W bytes");
            b.reverse();
            d.copy_from_slice(&b);
        }
    } else {
        for (r, d) in dst.chunks_exact_mut(W).enumerate() {
            d.copy_from_slice(&src[r * stride..r * stride + W]);
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
