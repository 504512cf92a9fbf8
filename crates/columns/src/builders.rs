//! Growing column buffers, one per layout node, and their conversion to Arrow arrays.

use std::sync::Arc;

use arrow_array::{make_array, ArrayRef};
use arrow_buffer::{
    bit_util, BooleanBuffer, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer,
    NullBufferBuilder,
};
use arrow_data::{ArrayData, ArrayDataBuilder};
use arrow_schema::DataType;

use crate::layout::{Layout, NodeId, Shape};

/// The values of one column.
#[derive(Debug)]
pub enum Buf {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    /// IEEE half floats, as their bits.
    F16(Vec<u16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(BooleanBufferBuilder),
    Fixed {
        size: usize,
        data: Vec<u8>,
    },
    /// Binary, text and raw columns: value `i` is `data[offsets[i]..offsets[i + 1]]`.
    Var {
        offsets: Offsets,
        data: Vec<u8>,
    },
    /// Lists: item range `offsets[i]..offsets[i + 1]` of the child.
    List {
        offsets: Offsets,
    },
    /// Structs, fixed-size lists and unions keep their rows in their children (a union's
    /// first child holds the variant of each row).
    Rows,
}

/// The offsets of a variable-size column, kept at the width Arrow gets: 32 bits while they
/// fit, 64 bits from the value that passes `i32::MAX` on (that switch copies them once). They
/// start at 0 and never decrease.
#[derive(Debug)]
pub enum Offsets {
    Small(Vec<i32>),
    Large(Vec<i64>),
}

impl Offsets {
    /// `[0]`, with room for `rows` more.
    pub fn new(rows: usize) -> Offsets {
        let mut v = Vec::with_capacity(rows.saturating_add(1));
        v.push(0);
        Offsets::Small(v)
    }

    /// Appends the end of the next value (once per variable-size value decoded: in line,
    /// the switch to 64 bits out of it).
    #[inline(always)]
    pub fn push(&mut self, end: usize) {
        match self {
            Offsets::Small(v) if end <= i32::MAX as usize => v.push(end as i32),
            _ => self.push_wide(end),
        }
    }

    /// [`Offsets::push`] of an offset past `i32::MAX`, or to 64-bit offsets.
    #[cold]
    #[inline(never)]
    fn push_wide(&mut self, end: usize) {
        match self {
            Offsets::Large(v) => v.push(end as i64),
            Offsets::Small(_) => self.widen().push(end as i64),
        }
    }

    /// Appends `n` empty values.
    #[inline]
    pub fn pad(&mut self, n: usize) {
        match self {
            Offsets::Small(v) => {
                let last = *v.last().expect("offsets start with 0");
                v.resize(v.len() + n, last);
            }
            Offsets::Large(v) => {
                let last = *v.last().expect("offsets start with 0");
                v.resize(v.len() + n, last);
            }
        }
    }

    /// The end of the last value.
    #[inline]
    pub fn last(&self) -> usize {
        match self {
            Offsets::Small(v) => v.last().map_or(0, |&o| o as usize),
            Offsets::Large(v) => v.last().map_or(0, |&o| o as usize),
        }
    }

    pub fn is_large(&self) -> bool {
        matches!(self, Offsets::Large(_))
    }

    /// The offsets of `len` rows where value `k` is row `rows[k]` (increasing) and the
    /// other rows are empty.
    fn spread(&self, rows: &[usize], len: usize) -> Offsets {
        fn go<O: Copy>(v: &[O], rows: &[usize], len: usize) -> Vec<O> {
            let mut out = Vec::with_capacity(len + 1);
            let mut last = v[0];
            out.push(last);
            for (k, &r) in rows.iter().enumerate() {
                out.resize(r + 1, last);
                last = v[k + 1];
                out.push(last);
            }
            out.resize(len + 1, last);
            out
        }
        match self {
            Offsets::Small(v) => Offsets::Small(go(v, rows, len)),
            Offsets::Large(v) => Offsets::Large(go(v, rows, len)),
        }
    }

    /// Makes room for `more` offsets, unless that is more than `max` bytes.
    fn reserve(&mut self, more: usize, max: usize) {
        match self {
            Offsets::Small(v) if more.saturating_mul(4) <= max => v.reserve_exact(more),
            Offsets::Large(v) if more.saturating_mul(8) <= max => v.reserve_exact(more),
            _ => {}
        }
    }

    /// See [`Buf::fit`].
    fn fit(&mut self) {
        let (cap, len, item) = match self {
            Offsets::Small(v) => (v.capacity(), v.len(), 4),
            Offsets::Large(v) => (v.capacity(), v.len(), 8),
        };
        if cap > 2 * len && cap * item > FIT_FROM {
            match self {
                Offsets::Small(v) => v.shrink_to_fit(),
                Offsets::Large(v) => v.shrink_to_fit(),
            }
        }
    }

    /// Switches to 64-bit offsets.
    #[cold]
    fn widen(&mut self) -> &mut Vec<i64> {
        if let Offsets::Small(v) = self {
            let mut wide = Vec::with_capacity(v.capacity());
            wide.extend(v.iter().map(|&o| i64::from(o)));
            *self = Offsets::Large(wide);
        }
        match self {
            Offsets::Large(v) => v,
            Offsets::Small(_) => unreachable!("just widened"),
        }
    }

    /// The Arrow buffer, 64-bit when `large` (another batch of the table needs them).
    fn into_buffer(mut self, large: bool) -> Buffer {
        if large {
            self.widen();
        }
        match self {
            Offsets::Small(v) => Buffer::from_vec(v),
            Offsets::Large(v) => Buffer::from_vec(v),
        }
    }
}

/// One column being built.
#[derive(Debug)]
pub struct Col {
    pub buf: Buf,
    pub valid: NullBufferBuilder,
    pub len: usize,
    /// A sparse node's rows (see [`crate::layout::LNode::sparse`]): for each value, the row
    /// of the parent it belongs to (increasing). Empty for the other nodes, whose value `k`
    /// belongs to row `k` of their parent.
    pub sel: Vec<usize>,
}

impl Col {
    pub fn new(shape: &Shape, cap: usize) -> Col {
        let buf = match shape {
            Shape::Int { bytes, signed } => match (bytes, signed) {
                (1, true) => Buf::I8(Vec::with_capacity(cap)),
                (2, true) => Buf::I16(Vec::with_capacity(cap)),
                (4, true) => Buf::I32(Vec::with_capacity(cap)),
                (8, true) => Buf::I64(Vec::with_capacity(cap)),
                (1, false) => Buf::U8(Vec::with_capacity(cap)),
                (2, false) => Buf::U16(Vec::with_capacity(cap)),
                (4, false) => Buf::U32(Vec::with_capacity(cap)),
                _ => Buf::U64(Vec::with_capacity(cap)),
            },
            Shape::Float { bytes: 2 } => Buf::F16(Vec::with_capacity(cap)),
            Shape::Float { bytes: 4 } => Buf::F32(Vec::with_capacity(cap)),
            Shape::Float { .. } => Buf::F64(Vec::with_capacity(cap)),
            Shape::Bool => Buf::Bool(BooleanBufferBuilder::new(cap)),
            Shape::FixedBinary(n) => Buf::Fixed {
                size: *n,
                data: Vec::with_capacity(cap.saturating_mul(*n)),
            },
            Shape::Binary | Shape::Text | Shape::Raw => Buf::Var {
                offsets: Offsets::new(cap),
                data: Vec::new(),
            },
            Shape::List { fixed: None, .. } => Buf::List {
                offsets: Offsets::new(cap),
            },
            Shape::List { .. } | Shape::Struct { .. } | Shape::Union { .. } => Buf::Rows,
        };
        Col {
            buf,
            valid: NullBufferBuilder::new(cap),
            len: 0,
            sel: Vec::new(),
        }
    }

    /// Appends `n` default values marked null (the children of rows-columns are the
    /// caller's business).
    pub fn push_nulls(&mut self, n: usize) {
        match &mut self.buf {
            Buf::I8(v) => zeros(v, n),
            Buf::I16(v) => zeros(v, n),
            Buf::I32(v) => zeros(v, n),
            Buf::I64(v) => zeros(v, n),
            Buf::U8(v) => zeros(v, n),
            Buf::U16(v) | Buf::F16(v) => zeros(v, n),
            Buf::U32(v) => zeros(v, n),
            Buf::U64(v) => zeros(v, n),
            Buf::F32(v) => zeros(v, n),
            Buf::F64(v) => zeros(v, n),
            Buf::Bool(b) => b.append_n(n, false),
            Buf::Fixed { size, data } => data.resize(data.len() + *size * n, 0),
            Buf::Var { offsets, .. } | Buf::List { offsets } => offsets.pad(n),
            Buf::Rows => {}
        }
        self.valid.append_n_nulls(n);
        self.len += n;
    }

    /// Appends a default value and marks it null (the children of rows-columns are the
    /// caller's business).
    pub fn push_null(&mut self) {
        match &mut self.buf {
            Buf::I8(v) => v.push(0),
            Buf::I16(v) => v.push(0),
            Buf::I32(v) => v.push(0),
            Buf::I64(v) => v.push(0),
            Buf::U8(v) => v.push(0),
            Buf::U16(v) | Buf::F16(v) => v.push(0),
            Buf::U32(v) => v.push(0),
            Buf::U64(v) => v.push(0),
            Buf::F32(v) => v.push(0.0),
            Buf::F64(v) => v.push(0.0),
            Buf::Bool(b) => b.append(false),
            Buf::Fixed { size, data } => data.resize(data.len() + *size, 0),
            Buf::Var { offsets, .. } | Buf::List { offsets } => offsets.pad(1),
            Buf::Rows => {}
        }
        self.valid.append_null();
        self.len += 1;
    }

    /// Whether the column needs 64-bit offsets.
    pub fn large(&self) -> bool {
        match &self.buf {
            Buf::Var { offsets, .. } | Buf::List { offsets } => offsets.is_large(),
            _ => false,
        }
    }
}

impl Buf {
    /// Makes room for `more` values, and `data` more bytes of variable-size values, unless
    /// that is more than `max` bytes for one buffer (the buffer then grows as it is filled).
    fn reserve(&mut self, more: usize, data: usize, max: usize) {
        fn room<T>(v: &mut Vec<T>, more: usize, max: usize) {
            if more.saturating_mul(size_of::<T>()) <= max {
                v.reserve_exact(more);
            }
        }
        match self {
            Buf::I8(v) => room(v, more, max),
            Buf::I16(v) => room(v, more, max),
            Buf::I32(v) => room(v, more, max),
            Buf::I64(v) => room(v, more, max),
            Buf::U8(v) => room(v, more, max),
            Buf::U16(v) | Buf::F16(v) => room(v, more, max),
            Buf::U32(v) => room(v, more, max),
            Buf::U64(v) => room(v, more, max),
            Buf::F32(v) => room(v, more, max),
            Buf::F64(v) => room(v, more, max),
            Buf::Bool(b) => {
                if more / 8 <= max {
                    b.reserve(more);
                }
            }
            Buf::Fixed { size, data } => room(data, more.saturating_mul(*size), max),
            Buf::Var {
                offsets,
                data: bytes,
            } => {
                offsets.reserve(more, max);
                room(bytes, data, max);
            }
            Buf::List { offsets } => offsets.reserve(more, max),
            Buf::Rows => {}
        }
    }

    /// Gives back the capacity of a buffer holding less than half of it (a size estimate
    /// that came out too high), so no finished buffer is more than twice its contents.
    fn fit(&mut self) {
        fn fit<T>(v: &mut Vec<T>) {
            if v.capacity() > 2 * v.len() && v.capacity() * size_of::<T>() > FIT_FROM {
                v.shrink_to_fit();
            }
        }
        match self {
            Buf::I8(v) => fit(v),
            Buf::I16(v) => fit(v),
            Buf::I32(v) => fit(v),
            Buf::I64(v) => fit(v),
            Buf::U8(v) => fit(v),
            Buf::U16(v) | Buf::F16(v) => fit(v),
            Buf::U32(v) => fit(v),
            Buf::U64(v) => fit(v),
            Buf::F32(v) => fit(v),
            Buf::F64(v) => fit(v),
            Buf::Fixed { data, .. } => fit(data),
            Buf::Var { offsets, data } => {
                offsets.fit();
                fit(data);
            }
            Buf::List { offsets } => offsets.fit(),
            Buf::Bool(_) | Buf::Rows => {}
        }
    }
}

/// Buffers below this many bytes of capacity keep it when finished (giving back a few KiB
/// costs more than it saves).
const FIT_FROM: usize = 1 << 16;

/// Appends `n` zeros: most gaps a union's variant leaves are a row or two, where a
/// `memset` call costs more than the stores.
#[inline]
fn zeros<T: Copy + Default>(v: &mut Vec<T>, n: usize) {
    if n <= 2 {
        for _ in 0..n {
            v.push(T::default());
        }
    } else {
        v.resize(v.len() + n, T::default());
    }
}

/// The columns of one chunk of rows, one per layout node.
pub struct Cols {
    pub cols: Vec<Col>,
    /// Zeroed memory the columns no row reached share (see [`Cols::finish`]).
    zeros: Buffer,
}

/// Where a node's values go in its array: value `k` is row `rows[k]` (increasing) of `len`
/// rows, and `present` marks those rows; the other rows are null.
struct Placement {
    rows: Vec<usize>,
    len: usize,
    present: NullBuffer,
}

impl Placement {
    fn new(rows: Vec<usize>, len: usize) -> Placement {
        let mut bits = MutableBuffer::from_len_zeroed(len.div_ceil(8));
        for &r in &rows {
            bit_util::set_bit(bits.as_slice_mut(), r);
        }
        let present = NullBuffer::new(BooleanBuffer::new(bits.into(), 0, len));
        Placement { rows, len, present }
    }

    /// The validity of the placed rows: `present`, less the values that are null.
    fn nulls(&self, dense: Option<NullBuffer>) -> NullBuffer {
        let Some(dense) = dense else {
            return self.present.clone();
        };
        let mut bits = MutableBuffer::from_len_zeroed(self.len.div_ceil(8));
        for (k, &r) in self.rows.iter().enumerate() {
            if dense.is_valid(k) {
                bit_util::set_bit(bits.as_slice_mut(), r);
            }
        }
        NullBuffer::new(BooleanBuffer::new(bits.into(), 0, self.len))
    }

    /// The values placed in their rows, zeros elsewhere.
    fn scatter<T: Copy + Default>(&self, v: Vec<T>) -> Vec<T> {
        let mut out = vec![T::default(); self.len];
        for (&r, x) in self.rows.iter().zip(v) {
            out[r] = x;
        }
        out
    }

    /// Values of `size` bytes placed in their rows, zeros elsewhere.
    fn scatter_bytes(&self, v: &[u8], size: usize) -> Vec<u8> {
        let mut out = vec![0u8; self.len * size];
        for (r, x) in self.rows.iter().zip(v.chunks_exact(size.max(1))) {
            out[r * size..(r + 1) * size].copy_from_slice(x);
        }
        out
    }

    /// The items of a fixed-size list of `k` placed with their lists.
    fn items(&self, k: usize) -> Placement {
        let rows = self.rows.iter().flat_map(|&r| r * k..(r + 1) * k).collect();
        Placement::new(rows, self.len * k)
    }
}

impl Cols {
    /// Columns for about `cap` rows. Only the columns every row fills get that room up
    /// front: a nullable column (a union's variant, a conditional field) may never get a
    /// row, and reserving it anyway costs more than growing it (a capture's layout has
    /// hundreds, and the first write to a large block has the kernel clear a whole huge
    /// page, up to 2 MiB, per column).
    pub fn new(layout: &Layout, cap: usize) -> Cols {
        Cols {
            cols: layout
                .nodes
                .iter()
                .map(|n| Col::new(&n.shape, if n.nullable { 0 } else { cap }))
                .collect(),
            zeros: Buffer::from_vec(Vec::<u8>::new()),
        }
    }

    /// Appends a null row to `id`, and to what it holds that has a value in every row of
    /// it (a struct's fields, a union's variant column, a fixed-size list's items); sparse
    /// children need nothing (see [`crate::layout::LNode::sparse`]).
    pub fn push_null(&mut self, layout: &Layout, id: NodeId) {
        self.cols[id as usize].push_null();
        let node = layout.node(id);
        match node.shape {
            Shape::Struct { .. } | Shape::Union { .. } => {
                for &c in &node.children {
                    if !layout.node(c).sparse {
                        self.push_null(layout, c);
                    }
                }
            }
            Shape::List {
                item,
                fixed: Some(k),
            } => {
                for _ in 0..k {
                    self.push_null(layout, item);
                }
            }
            _ => {}
        }
    }

    /// Sizes the columns for `total` rows from what the first `done` rows put in each
    /// (values per row, bytes per variable-size value), so that a large table's buffers are
    /// allocated once, at about their final size, instead of doubling (each doubling of a
    /// large buffer moves or copies it, and leaves it up to twice too large). With `exact`,
    /// `total` is the number of rows for certain, and a column of one value per row gets
    /// exactly that; otherwise every estimate gets a sixteenth more. No buffer reserves more
    /// than `max` bytes this way.
    pub fn reserve_for(&mut self, done: usize, total: usize, exact: bool, max: usize) {
        if done == 0 || total <= done {
            return;
        }
        let scale = |n: usize, sure: bool| -> usize {
            let s = (n as u128 * total as u128 / done as u128).min(usize::MAX as u128) as usize;
            if sure {
                s
            } else {
                s.saturating_add(s / 16)
            }
        };
        for col in &mut self.cols {
            if col.len == 0 {
                continue;
            }
            let more = scale(col.len, exact && col.len == done).saturating_sub(col.len);
            let data = match &col.buf {
                Buf::Var { data, .. } => scale(data.len(), false).saturating_sub(data.len()),
                _ => 0,
            };
            col.buf.reserve(more, data, max);
        }
    }

    /// Which variable-size nodes need 64-bit offsets.
    pub fn large(&self) -> Vec<bool> {
        self.cols.iter().map(Col::large).collect()
    }

    /// The finished Arrow array of node `id` with `rows` rows, nulls past the rows it got
    /// (consumes the buffers of it and its children).
    ///
    /// A node holds one value per row of its parent, except sparse nodes (a union's
    /// variants, conditional structs), which hold values only for the rows that reach them
    /// and record which: their arrays place each value in its row here, nulls elsewhere, so
    /// a row costs nothing in the columns it does not reach.
    pub fn finish(
        &mut self,
        layout: &Layout,
        id: NodeId,
        large: &[bool],
        rows: usize,
    ) -> Result<ArrayRef, arrow_schema::ArrowError> {
        Ok(make_array(
            self.finish_child(layout, id, large, rows, None)?,
        ))
    }

    /// The array of `id`, a child of a node whose values are placed by `parent` (`None`:
    /// value `k` in row `k`), with `rows` rows.
    fn finish_child(
        &mut self,
        layout: &Layout,
        id: NodeId,
        large: &[bool],
        rows: usize,
        parent: Option<&Placement>,
    ) -> Result<ArrayData, arrow_schema::ArrowError> {
        if !layout.node(id).sparse {
            return self.finish_data(layout, id, large, rows, parent);
        }
        let sel = std::mem::take(&mut self.cols[id as usize].sel);
        let at = match parent {
            None => sel,
            Some(p) => sel.iter().map(|&i| p.rows[i]).collect(),
        };
        if at.len() == rows {
            // Every row (the rows are distinct and increasing): value `k` is row `k`.
            return self.finish_data(layout, id, large, rows, None);
        }
        let place = Placement::new(at, rows);
        self.finish_data(layout, id, large, rows, Some(&place))
    }

    fn finish_data(
        &mut self,
        layout: &Layout,
        id: NodeId,
        large: &[bool],
        rows: usize,
        place: Option<&Placement>,
    ) -> Result<ArrayData, arrow_schema::ArrowError> {
        if self.cols[id as usize].len == 0 && rows > 0 {
            return self.null_data(layout, id, large, rows);
        }
        let node = layout.node(id);
        let dt = layout.data_type(id, large);
        let col = &mut self.cols[id as usize];
        if let Some(p) = place {
            if p.rows.len() != col.len {
                return Err(arrow_schema::ArrowError::InvalidArgumentError(format!(
                    "column {id} holds {} values for {} rows (a bug, please report it)",
                    col.len,
                    p.rows.len()
                )));
            }
        } else if col.len < rows {
            col.push_nulls(rows - col.len);
        }
        let len = place.map_or(col.len, |p| p.len);
        let nulls = match place {
            None => col.valid.finish(),
            Some(p) => Some(p.nulls(col.valid.finish())),
        };
        let mut buf = std::mem::replace(&mut col.buf, Buf::Rows);
        if place.is_none() {
            // Scattered columns get a new buffer of the right size anyway.
            buf.fit();
        }
        let b = ArrayData::builder(dt.clone()).len(len).nulls(nulls);
        macro_rules! prim {
            ($v:expr) => {
                b.add_buffer(Buffer::from_vec(match place {
                    None => $v,
                    Some(p) => p.scatter($v),
                }))
            };
        }
        let b = match buf {
            Buf::I8(v) => prim!(v),
            Buf::I16(v) => prim!(v),
            Buf::I32(v) => prim!(v),
            Buf::I64(v) => prim!(v),
            Buf::U8(v) => prim!(v),
            Buf::U16(v) | Buf::F16(v) => prim!(v),
            Buf::U32(v) => prim!(v),
            Buf::U64(v) => prim!(v),
            Buf::F32(v) => prim!(v),
            Buf::F64(v) => prim!(v),
            Buf::Bool(mut bits) => {
                let bits = bits.finish();
                match place {
                    None => b.add_buffer(bits.into_inner()),
                    Some(p) => {
                        let mut out = MutableBuffer::from_len_zeroed(p.len.div_ceil(8));
                        for (k, &r) in p.rows.iter().enumerate() {
                            if bits.value(k) {
                                bit_util::set_bit(out.as_slice_mut(), r);
                            }
                        }
                        b.add_buffer(out.into())
                    }
                }
            }
            Buf::Fixed { data, size } => b.add_buffer(Buffer::from_vec(match place {
                None => data,
                Some(p) => p.scatter_bytes(&data, size),
            })),
            Buf::Var { offsets, data } => {
                let offsets = match place {
                    None => offsets,
                    Some(p) => offsets.spread(&p.rows, p.len),
                };
                if matches!(node.shape, Shape::Text) && !utf8_values(&offsets, &data) {
                    // Never expected (text arrives validated): let Arrow say what is wrong.
                    return b
                        .add_buffer(offsets.into_buffer(large[id as usize]))
                        .add_buffer(Buffer::from_vec(data))
                        .build();
                }
                b.add_buffer(offsets.into_buffer(large[id as usize]))
                    .add_buffer(Buffer::from_vec(data))
            }
            Buf::List { offsets } => {
                let offsets = match place {
                    None => offsets,
                    Some(p) => offsets.spread(&p.rows, p.len),
                };
                // The items are placed by the offsets: item `i` is item `i` of the child.
                let items = offsets.last();
                let child = self.finish_child(layout, node.children[0], large, items, None)?;
                b.add_buffer(offsets.into_buffer(large[id as usize]))
                    .add_child_data(child)
            }
            Buf::Rows => match &node.shape {
                Shape::List { item, fixed } => {
                    let k = fixed.unwrap_or(1);
                    let items = place.map(|p| p.items(k));
                    let child = self.finish_child(layout, *item, large, len * k, items.as_ref())?;
                    b.add_child_data(child)
                }
                Shape::Union { names } => {
                    let variant = self.variant_data(node.children[0], names, len, place)?;
                    let mut b = b.add_child_data(variant);
                    for &c in &node.children[1..] {
                        b = b.add_child_data(self.finish_child(layout, c, large, len, place)?);
                    }
                    b
                }
                _ => {
                    let mut b = b;
                    for &c in &node.children {
                        b = b.add_child_data(self.finish_child(layout, c, large, len, place)?);
                    }
                    b
                }
            },
        };
        // SAFETY: the builders keep every column valid Arrow data as they go: each value
        // appended (a scalar, a value's bytes and its end offset, a list's end, a struct's
        // or union's row, a null) appends exactly one validity bit and bumps `len` once, so
        // the buffers hold `len` values and the bitmap `len` bits; offsets start at 0, never
        // decrease and end at the data's (or the child's) length, and fit their width (they
        // widen before passing `i32::MAX`); placed values (above) fill buffers of `len`
        // rows, one value per placed row, zeros and empty values elsewhere; children are
        // padded or placed above to the rows their parent needs; text was checked above;
        // variant keys are checked in `dictionary`. The buffers are Rust `Vec`s of the
        // column's type, so they are aligned.
        unsafe { unvalidated(b) }
    }

    /// `len` null rows of node `id`, for a column no row reached (a variant no packet of a
    /// capture holds): every buffer is a slice of one zeroed block, so hundreds of such
    /// columns cost neither memory nor time per row.
    fn null_data(
        &mut self,
        layout: &Layout,
        id: NodeId,
        large: &[bool],
        len: usize,
    ) -> Result<ArrayData, arrow_schema::ArrowError> {
        let node = layout.node(id);
        let dt = layout.data_type(id, large);
        let nulls = self.null_bits(len);
        let b = ArrayData::builder(dt.clone()).len(len).nulls(Some(nulls));
        let offsets = |z: &mut Self| z.zeros((len + 1) * if large[id as usize] { 8 } else { 4 });
        let b = match &node.shape {
            Shape::Int { .. } | Shape::Float { .. } => {
                let width = dt.primitive_width().unwrap_or(8);
                b.add_buffer(self.zeros(len * width))
            }
            Shape::Bool => b.add_buffer(self.zeros(len.div_ceil(8))),
            Shape::FixedBinary(n) => b.add_buffer(self.zeros(len * n)),
            Shape::Binary | Shape::Text | Shape::Raw => b
                .add_buffer(offsets(self))
                .add_buffer(Buffer::from_vec(Vec::<u8>::new())),
            Shape::List { item, fixed: None } => b
                .add_buffer(offsets(self))
                .add_child_data(self.null_data(layout, *item, large, 0)?),
            Shape::List {
                item,
                fixed: Some(k),
            } => b.add_child_data(self.null_data(layout, *item, large, len * k)?),
            Shape::Union { names } => {
                let keys = self.zeros(len);
                let nulls = self.null_bits(len);
                let mut b = b.add_child_data(dictionary(names, keys, Some(nulls), len)?);
                for &c in &node.children[1..] {
                    b = b.add_child_data(self.null_data(layout, c, large, len)?);
                }
                b
            }
            Shape::Struct { .. } => {
                let mut b = b;
                for &c in &node.children {
                    b = b.add_child_data(self.null_data(layout, c, large, len)?);
                }
                b
            }
        };
        // SAFETY: every row is null; each buffer is zeroed and as long as `len` rows of
        // the type need (zero offsets: empty values, zero keys: the first case, checked in
        // `dictionary`), and children hold the rows their parent needs.
        unsafe { unvalidated(b) }
    }

    /// A validity bitmap of `len` nulls.
    fn null_bits(&mut self, len: usize) -> NullBuffer {
        let bits = BooleanBuffer::new(self.zeros(len.div_ceil(8)), 0, len);
        // SAFETY: every bit is zero (a slice of the zeroed block), so all `len` are null;
        // `NullBuffer::new` would count them, once per column no row reached.
        unsafe { NullBuffer::new_unchecked(bits, len) }
    }

    /// `n` zero bytes, sliced from the block shared by every null column.
    fn zeros(&mut self, n: usize) -> Buffer {
        if self.zeros.len() < n {
            self.zeros = Buffer::from(MutableBuffer::from_len_zeroed(n.next_power_of_two()));
        }
        self.zeros.slice_with_length(0, n)
    }

    /// The finished variant column of the union `union` with `rows` rows.
    pub fn finish_variant(
        &mut self,
        layout: &Layout,
        union: NodeId,
        rows: usize,
    ) -> Result<ArrayRef, arrow_schema::ArrowError> {
        let node = layout.node(union);
        let Shape::Union { names } = &node.shape else {
            unreachable!("only unions have a variant column")
        };
        Ok(make_array(self.variant_data(
            node.children[0],
            names,
            rows,
            None,
        )?))
    }

    /// A union's variant column of `rows` rows (placed by `place`): the case index of each
    /// row, as a dictionary of case names.
    fn variant_data(
        &mut self,
        id: NodeId,
        names: &[Arc<str>],
        rows: usize,
        place: Option<&Placement>,
    ) -> Result<ArrayData, arrow_schema::ArrowError> {
        let col = &mut self.cols[id as usize];
        if place.is_none() && col.len < rows {
            col.push_nulls(rows - col.len);
        }
        let nulls = col.valid.finish();
        let keys = match std::mem::replace(&mut col.buf, Buf::Rows) {
            Buf::I8(v) => v,
            _ => unreachable!("a variant column holds i8 keys"),
        };
        match place {
            None => dictionary(names, Buffer::from_vec(keys), nulls, col.len),
            Some(p) => {
                if keys.len() != p.rows.len() {
                    return Err(arrow_schema::ArrowError::InvalidArgumentError(format!(
                        "variant column {id} holds {} keys for {} rows (a bug, please report it)",
                        keys.len(),
                        p.rows.len()
                    )));
                }
                let nulls = p.nulls(nulls);
                dictionary(names, Buffer::from_vec(p.scatter(keys)), Some(nulls), p.len)
            }
        }
    }
}

/// A variant column: `keys` index the case `names`.
fn dictionary(
    names: &[Arc<str>],
    keys: Buffer,
    nulls: Option<NullBuffer>,
    len: usize,
) -> Result<ArrayData, arrow_schema::ArrowError> {
    let mut offsets = vec![0i32];
    let mut text = Vec::new();
    for n in names {
        text.extend_from_slice(n.as_bytes());
        offsets.push(text.len() as i32);
    }
    let values = ArrayData::builder(DataType::Utf8)
        .len(names.len())
        .add_buffer(Buffer::from_vec(offsets))
        .add_buffer(Buffer::from_vec(text))
        .build()?;
    let b = ArrayData::builder(crate::layout::variant_type())
        .len(len)
        .nulls(nulls)
        .add_buffer(keys)
        .add_child_data(values);
    if names.is_empty() || names.len() > 128 {
        // Not a union the decoder makes (keys are case indexes, an `i8`): let Arrow check.
        return b.build();
    }
    // SAFETY: the keys are the `i8` case indexes `choose` stored (0 for null rows), all
    // below `names.len()`, which is at most 128 here; `len` keys and bits (see `finish_data`).
    unsafe { unvalidated(b) }
}

/// Builds array data without Arrow's validation, which reads every offset and key of
/// every column: for a capture's hundreds of columns that is more work than the decode.
/// Debug builds still validate fully, so the Rust tests check the callers' guarantees.
///
/// # Safety
/// `b` must describe valid Arrow data (buffer lengths, offsets, UTF-8, dictionary keys).
unsafe fn unvalidated(b: ArrayDataBuilder) -> Result<ArrayData, arrow_schema::ArrowError> {
    // SAFETY: the caller's guarantee.
    let data = unsafe { b.skip_validation(true) }.build()?;
    #[cfg(debug_assertions)]
    data.validate_full()?;
    Ok(data)
}

/// Whether every value of a text column is valid UTF-8: the whole buffer is, and no value
/// starts or ends inside a character.
fn utf8_values(offsets: &Offsets, data: &[u8]) -> bool {
    let inside = |o: usize| data.get(o).is_some_and(|&c| (c as i8) < -0x40);
    std::str::from_utf8(data).is_ok()
        && match offsets {
            Offsets::Small(v) => !v.iter().any(|&o| inside(o as usize)),
            Offsets::Large(v) => !v.iter().any(|&o| inside(o as usize)),
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_stay_32_bit_up_to_i32_max_then_widen_once() {
        let mut o = Offsets::new(4);
        o.push(3);
        o.push(i32::MAX as usize);
        assert!(!o.is_large());
        o.pad(1);
        o.push(i32::MAX as usize + 5);
        assert!(o.is_large());
        assert_eq!(o.last(), i32::MAX as usize + 5);
        let b = o.into_buffer(true);
        let want: Vec<i64> = vec![
            0,
            3,
            i32::MAX.into(),
            i32::MAX.into(),
            i64::from(i32::MAX) + 5,
        ];
        assert_eq!(b.typed_data::<i64>(), &want[..]);
    }

    #[test]
    fn small_offsets_widen_when_another_batch_needs_64_bits() {
        let mut o = Offsets::new(0);
        o.push(7);
        o.pad(2);
        assert_eq!(o.into_buffer(true).typed_data::<i64>(), &[0, 7, 7, 7]);
        let mut o = Offsets::new(0);
        o.push(7);
        assert_eq!(o.into_buffer(false).typed_data::<i32>(), &[0, 7]);
    }

    #[test]
    fn text_values_must_not_split_a_character() {
        let mut o = Offsets::new(2);
        o.push(1);
        o.push(3);
        assert!(utf8_values(&o, "aé".as_bytes()));
        let mut o = Offsets::new(2);
        o.push(2);
        o.push(3);
        assert!(!utf8_values(&o, "aé".as_bytes()));
        let mut o = Offsets::new(1);
        o.push(2);
        assert!(!utf8_values(&o, b"a\xff"));
    }
}
