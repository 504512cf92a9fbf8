//! The decoding sink that appends straight to columns.
//!
//! The VM tells the sink where each value goes through its layout notifications: entering
//! a field or an item, or choosing a union's case, points `target` at the column the next
//! struct or list fills. Scalars arrive as small values and are appended when the VM stores
//! them (`set_field`, `push`). Values stored as raw wire bytes (recursion, self-describing
//! kinds) switch the sink to raw mode, which ignores everything until the value ends and
//! then appends its bytes.
//!
//! The runs of a struct that never gets a null row (fixed-size fields that arrive together;
//! the struct is never null, or is a union's case or a conditional struct, which hold rows
//! only for the values decoded: see [`crate::layout::LNode::null_rows`]) are kept as they
//! arrived, row after row, and moved to their columns a column at a time every
//! [`STAGE_ROWS`] rows: one copy of the run's bytes per row, then one tight loop per column
//! (bit fields and flags included), instead of one dispatch per field per row.

use bytewright_wire::host::Sink;

use crate::builders::{Buf, Col, Cols};
use bytewright_wire::program::{Run, Scalar};

use crate::layout::{Layout, NodeId, Shape};

/// A decoded value on its way to a column.
#[derive(Debug, Clone)]
pub enum CVal {
    U(u64),
    I(i64),
    F(f64),
    B(bool),
    /// Bytes or valid UTF-8 of the input, by position.
    In {
        at: usize,
        len: usize,
    },
    /// Latin-1 text of the input, by position (transcoded when stored).
    Latin1 {
        at: usize,
        len: usize,
    },
    /// Text that is not in the input (e.g. a decompressed DNS name).
    Owned(Box<str>),
    /// Already in its column (structs, lists) or nothing to store (raw mode).
    Done,
    Null,
}

/// A value the layout has no place for: a bug in the layout or the VM, reported as an error
/// rather than a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bug(pub String);

/// Raw mode: a value stored as its wire bytes.
#[derive(Debug, Clone, Copy)]
struct Raw {
    node: NodeId,
    start: usize,
    /// Fields and items entered inside the value and not left yet.
    depth: u32,
}

pub struct ColumnSink<'a> {
    pub layout: &'a Layout,
    /// The columns (without the rows still staged: see [`ColumnSink::cols_mut`]).
    cols: Cols,
    input: &'a [u8],
    /// The column that the next struct, list or union value fills.
    pub target: NodeId,
    /// The case each union column chose for the value being decoded.
    chosen: Vec<usize>,
    raw: Option<Raw>,
    /// Whether any column holds half floats (runs with one go field by field).
    half_floats: bool,
    /// The writers of each struct column's runs, made the first time a run is met.
    writers: Vec<Vec<RunWriter>>,
}

impl<'a> ColumnSink<'a> {
    pub fn new(layout: &'a Layout, input: &'a [u8], cap: usize) -> Self {
        ColumnSink {
            layout,
            cols: Cols::new(layout, cap),
            input,
            target: layout.root,
            chosen: vec![0; layout.nodes.len()],
            raw: None,
            half_floats: layout
                .nodes
                .iter()
                .any(|n| matches!(n.shape, Shape::Float { bytes: 2 })),
            writers: (0..layout.nodes.len()).map(|_| Vec::new()).collect(),
        }
    }

    /// Stores a whole message's value (the root has no field to store it through).
    #[inline]
    pub fn store_root(&mut self, v: CVal) -> Result<(), Bug> {
        let root = self.layout.root;
        // A struct is in its columns when it ends.
        if matches!(v, CVal::Done)
            && matches!(self.layout.nodes[root as usize].shape, Shape::Struct { .. })
        {
            return Ok(());
        }
        self.store(root, v)
    }

    /// The columns, every staged row moved to them.
    pub fn cols_mut(&mut self) -> &mut Cols {
        self.unstage();
        &mut self.cols
    }

    /// The finished columns, every staged row moved to them.
    pub fn into_cols(mut self) -> Cols {
        self.unstage();
        self.cols
    }

    /// Moves every staged run row to its columns.
    fn unstage(&mut self) {
        for runs in &mut self.writers {
            for r in runs.iter_mut() {
                if let Some(st) = &mut r.stage {
                    unstage(&mut self.cols, &r.writers, st);
                }
            }
        }
    }

    #[inline]
    fn at_of(&self, b: &[u8]) -> Option<usize> {
        let base = self.input.as_ptr() as usize;
        let p = b.as_ptr() as usize;
        (p >= base && p + b.len() <= base + self.input.len()).then(|| p - base)
    }

    /// Points `target` at `node`, entering raw mode at `at` when it stores raw bytes.
    #[inline]
    fn aim(&mut self, node: NodeId, at: usize) {
        self.target = node;
        if matches!(self.layout.nodes[node as usize].shape, Shape::Raw) {
            self.raw = Some(Raw {
                node,
                start: at,
                depth: 0,
            });
        }
    }

    /// Leaving a field or item at `end`: finishes raw mode when its value ends here.
    #[inline(always)]
    fn leave(&mut self, end: usize) {
        if self.raw.is_some() {
            self.leave_raw(end);
        }
    }

    /// [`ColumnSink::leave`] in raw mode.
    #[inline(never)]
    fn leave_raw(&mut self, end: usize) {
        if let Some(r) = &mut self.raw {
            if r.depth > 0 {
                r.depth -= 1;
                return;
            }
            let r = *r;
            self.raw = None;
            let col = &mut self.cols.cols[r.node as usize];
            if let Buf::Var { offsets, data } = &mut col.buf {
                data.extend_from_slice(&self.input[r.start..end]);
                offsets.push(data.len());
            }
            col.valid.append_non_null();
            col.len += 1;
        }
    }

    /// Stores a value in column `id`.
    fn store(&mut self, id: NodeId, v: CVal) -> Result<(), Bug> {
        let layout = self.layout;
        match layout.nodes[id as usize].shape {
            Shape::Union { .. } => return self.store_union(id, v),
            // Appended whole when its value ended (whatever the value decoded to).
            Shape::Raw => return Ok(()),
            _ => {}
        }
        let col = &mut self.cols.cols[id as usize];
        match v {
            CVal::Done => return Ok(()),
            CVal::Null => {
                self.cols.push_null(layout, id);
                return Ok(());
            }
            _ => {}
        }
        match (&mut col.buf, v) {
            (Buf::I8(c), CVal::I(x)) => c.push(x as i8),
            (Buf::I16(c), CVal::I(x)) => c.push(x as i16),
            (Buf::I32(c), CVal::I(x)) => c.push(x as i32),
            (Buf::I64(c), CVal::I(x)) => c.push(x),
            (Buf::U8(c), CVal::U(x)) => c.push(x as u8),
            (Buf::U16(c), CVal::U(x)) => c.push(x as u16),
            (Buf::U32(c), CVal::U(x)) => c.push(x as u32),
            (Buf::U64(c), CVal::U(x)) => c.push(x),
            (Buf::I8(c), CVal::U(x)) => c.push(x as i8),
            (Buf::I16(c), CVal::U(x)) => c.push(x as i16),
            (Buf::I32(c), CVal::U(x)) => c.push(x as i32),
            (Buf::I64(c), CVal::U(x)) => c.push(x as i64),
            (Buf::U8(c), CVal::I(x)) => c.push(x as u8),
            (Buf::U16(c), CVal::I(x)) => c.push(x as u16),
            (Buf::U32(c), CVal::I(x)) => c.push(x as u32),
            (Buf::U64(c), CVal::I(x)) => c.push(x as u64),
            (Buf::F16(c), CVal::F(x)) => c.push(half::f16::from_f64(x).to_bits()),
            (Buf::F32(c), CVal::F(x)) => c.push(x as f32),
            (Buf::F64(c), CVal::F(x)) => c.push(x),
            (Buf::Bool(c), CVal::B(x)) => c.append(x),
            (Buf::Fixed { data, .. }, CVal::In { at, len }) => {
                data.extend_from_slice(&self.input[at..at + len])
            }
            (Buf::Var { offsets, data }, CVal::In { at, len }) => {
                data.extend_from_slice(&self.input[at..at + len]);
                offsets.push(data.len());
            }
            (Buf::Var { offsets, data }, CVal::Latin1 { at, len }) => {
                for &c in &self.input[at..at + len] {
                    let mut b = [0u8; 2];
                    data.extend_from_slice(char::from(c).encode_utf8(&mut b).as_bytes());
                }
                offsets.push(data.len());
            }
            (Buf::Var { offsets, data }, CVal::Owned(t)) => {
                data.extend_from_slice(t.as_bytes());
                offsets.push(data.len());
            }
            (buf, v) => {
                let kind = match buf {
                    Buf::Var { .. } => "variable-size".to_string(),
                    other => format!("{:?}", std::mem::discriminant(other)),
                };
                return Err(Bug(format!(
                    "a {v:?} value has no place in a {kind} column"
                )));
            }
        }
        col.valid.append_non_null();
        col.len += 1;
        Ok(())
    }

    /// Stores a value that is already in its columns ([`CVal::Done`]) in column `id`: only
    /// the unions on the way to it (a union, the union that is its chosen case...) get their
    /// row here, as [`ColumnSink::store`] would give them.
    #[inline(always)]
    fn done(&mut self, mut id: NodeId) {
        let layout = self.layout;
        loop {
            let node = &layout.nodes[id as usize];
            if !matches!(node.shape, Shape::Union { .. }) {
                return;
            }
            let case = self.chosen[id as usize];
            let vcol = &mut self.cols.cols[node.children[0] as usize];
            if let Buf::I8(keys) = &mut vcol.buf {
                keys.push(case as i8);
            }
            vcol.valid.append_non_null();
            vcol.len += 1;
            let col = &mut self.cols.cols[id as usize];
            col.valid.append_non_null();
            col.len += 1;
            id = node.children[1 + case];
        }
    }

    /// Stores a union's value: the chosen variant holds it, the others hold nulls.
    fn store_union(&mut self, id: NodeId, v: CVal) -> Result<(), Bug> {
        let layout = self.layout;
        let node = &layout.nodes[id as usize];
        if let CVal::Null = v {
            self.cols.push_null(layout, id);
            return Ok(());
        }
        let case = self.chosen[id as usize];
        let variant = node.children[0];
        if let Buf::I8(keys) = &mut self.cols.cols[variant as usize].buf {
            keys.push(case as i8);
        }
        let vcol = &mut self.cols.cols[variant as usize];
        vcol.valid.append_non_null();
        vcol.len += 1;
        // Only the chosen variant holds a value for this row (it recorded the row when it
        // was chosen); the others are null there.
        self.store(node.children[1 + case], v)?;
        let col = &mut self.cols.cols[id as usize];
        col.valid.append_non_null();
        col.len += 1;
        Ok(())
    }
}

impl Sink for ColumnSink<'_> {
    type Value = CVal;
    /// The struct's column.
    type Struct = NodeId;
    /// The list's column.
    type List = NodeId;
    type Map = ();
    type Error = Bug;

    #[inline]
    fn uint(&mut self, v: u64) -> Result<CVal, Bug> {
        Ok(CVal::U(v))
    }
    #[inline]
    fn int(&mut self, v: i64) -> Result<CVal, Bug> {
        Ok(CVal::I(v))
    }
    #[inline]
    fn float(&mut self, v: f64) -> Result<CVal, Bug> {
        Ok(CVal::F(v))
    }
    #[inline]
    fn bool(&mut self, v: bool) -> Result<CVal, Bug> {
        Ok(CVal::B(v))
    }
    #[inline]
    fn bytes(&mut self, v: &[u8]) -> Result<CVal, Bug> {
        Ok(match self.at_of(v) {
            Some(at) => CVal::In { at, len: v.len() },
            None => CVal::Owned(String::from_utf8_lossy(v).into()),
        })
    }
    #[inline]
    fn str(&mut self, v: &str, _ascii: bool) -> Result<CVal, Bug> {
        Ok(match self.at_of(v.as_bytes()) {
            Some(at) => CVal::In { at, len: v.len() },
            None => CVal::Owned(v.into()),
        })
    }
    #[inline]
    fn latin1(&mut self, v: &[u8]) -> Result<CVal, Bug> {
        Ok(match self.at_of(v) {
            Some(at) => CVal::Latin1 { at, len: v.len() },
            None => CVal::Owned(v.iter().map(|&c| char::from(c)).collect::<String>().into()),
        })
    }

    #[inline]
    fn begin_struct(&mut self, _sink_id: u32) -> Result<NodeId, Bug> {
        Ok(self.target)
    }
    #[inline(always)]
    fn set_field(&mut self, s: &mut NodeId, field: u16, v: CVal) -> Result<(), Bug> {
        if self.raw.is_none() {
            let c = self.layout.nodes[*s as usize].children[field as usize];
            // A struct, list or union that ended: in its columns already, but for the rows
            // of the unions it passes through.
            if let CVal::Done = v {
                self.done(c);
                return Ok(());
            }
            // Bytes of the input into a binary or text column: the common variable-size
            // field, without the general store's dispatch.
            if let CVal::In { at, len } = v {
                let plain = !matches!(
                    self.layout.nodes[c as usize].shape,
                    Shape::Raw | Shape::Union { .. }
                );
                let col = &mut self.cols.cols[c as usize];
                if let (true, Buf::Var { offsets, data }) = (plain, &mut col.buf) {
                    // Empty bytes (no options, no trailer: most) copy nothing, and a short
                    // payload is copied in line (see `push_row`), without a call.
                    if len != 0 {
                        push_row(data, &self.input[at..at + len]);
                    }
                    offsets.push(data.len());
                    col.valid.append_non_null();
                    col.len += 1;
                    return Ok(());
                }
            }
            self.store(c, v)?;
        }
        Ok(())
    }
    fn absent_field(&mut self, s: &mut NodeId, field: u16) -> Result<(), Bug> {
        if self.raw.is_none() {
            let c = self.layout.nodes[*s as usize].children[field as usize];
            // A sparse field records the rows it is present in: absent costs nothing.
            if !self.layout.nodes[c as usize].sparse {
                self.cols.push_null(self.layout, c);
            }
        }
        Ok(())
    }
    #[inline]
    fn end_struct(&mut self, s: NodeId) -> Result<CVal, Bug> {
        if self.raw.is_none() {
            let col = &mut self.cols.cols[s as usize];
            col.valid.append_non_null();
            col.len += 1;
        }
        Ok(CVal::Done)
    }

    fn none(&mut self) -> Result<CVal, Bug> {
        Ok(CVal::Null)
    }
    fn ext(&mut self, _code: i8, _data: &[u8]) -> Result<CVal, Bug> {
        // Self-describing values only ever arrive in raw mode.
        Ok(CVal::Done)
    }
    fn begin_map(&mut self, _cap: usize) -> Result<(), Bug> {
        Ok(())
    }
    fn map_insert(&mut self, _m: &mut (), _k: CVal, _v: CVal) -> Result<(), Bug> {
        Ok(())
    }
    fn end_map(&mut self, _m: ()) -> Result<CVal, Bug> {
        Ok(CVal::Done)
    }

    #[inline]
    fn begin_list(&mut self, _cap: usize) -> Result<NodeId, Bug> {
        Ok(self.target)
    }
    #[inline]
    fn push(&mut self, l: &mut NodeId, v: CVal) -> Result<(), Bug> {
        if self.raw.is_none() {
            let item = self.layout.nodes[*l as usize].children[0];
            if let CVal::Done = v {
                self.done(item);
                return Ok(());
            }
            self.store(item, v)?;
        }
        Ok(())
    }
    #[inline]
    fn end_list(&mut self, l: NodeId) -> Result<CVal, Bug> {
        if self.raw.is_none() {
            let item = self.layout.nodes[l as usize].children[0];
            let items = self.cols.cols[item as usize].len;
            let col = &mut self.cols.cols[l as usize];
            if let Buf::List { offsets } = &mut col.buf {
                offsets.push(items);
            }
            col.valid.append_non_null();
            col.len += 1;
        }
        Ok(CVal::Done)
    }

    fn run(&mut self, s: &mut NodeId, run: &Run, _at: usize, bytes: &[u8]) -> bool {
        if self.raw.is_some() {
            return true;
        }
        // Half floats go field by field through the VM (their column holds what the VM's
        // f64 rounds back to, NaN payloads included).
        if self.half_floats
            && run
                .items
                .iter()
                .any(|it| matches!(it.scalar, Scalar::Float { width: 2, .. }))
        {
            return false;
        }
        let key = run as *const Run as usize;
        let Self {
            writers,
            cols,
            layout,
            ..
        } = self;
        let runs = &mut writers[*s as usize];
        let at = match runs.iter().position(|r| r.key == key) {
            Some(i) => i,
            None => {
                let children = &layout.nodes[*s as usize].children;
                let ws: Box<[Writer]> = run
                    .items
                    .iter()
                    .filter_map(|it| {
                        let col = children[it.field? as usize];
                        Some(Writer {
                            off: it.off,
                            col,
                            put: put_of(&cols.cols[col as usize].buf, it.scalar),
                            scalar: it.scalar,
                        })
                    })
                    .collect();
                // Only a struct that never gets a null row (one that is never null, or a
                // union's case, or what they hold) gets no rows but its runs' in these
                // columns (a null struct pushes nulls into them), so only its runs wait.
                let stage = (!layout.nodes[*s as usize].null_rows
                    && run.size > 0
                    && run.size <= STAGE_MAX_RUN
                    && bytes.len() == run.size
                    && ws.iter().all(|w| !layout.nodes[w.col as usize].null_rows))
                .then(|| Stage {
                    size: run.size,
                    rows: Vec::with_capacity(run.size * STAGE_ROWS),
                });
                runs.push(RunWriter {
                    key,
                    writers: ws,
                    stage,
                });
                runs.len() - 1
            }
        };
        let r = &mut runs[at];
        if let Some(st) = &mut r.stage {
            if bytes.len() == st.size {
                push_row(&mut st.rows, bytes);
                if st.rows.len() >= st.size * STAGE_ROWS {
                    unstage(cols, &r.writers, st);
                }
                return true;
            }
            // Never expected (a run's bytes are its size): its rows so far go first.
            unstage(cols, &r.writers, st);
        }
        for w in r.writers.iter() {
            // The layout gives each of these scalars its own column type.
            let pushed = put(&mut cols.cols[w.col as usize], w, bytes);
            debug_assert!(pushed, "a plain scalar's column");
        }
        true
    }

    #[inline(always)]
    fn enter_field(&mut self, s: &mut NodeId, field: u16, at: usize) {
        match &mut self.raw {
            Some(r) => r.depth += 1,
            None => {
                let c = self.layout.nodes[*s as usize].children[field as usize];
                if self.layout.nodes[c as usize].sparse {
                    // A conditional struct: present in the row the struct is decoding.
                    let row = self.cols.cols[*s as usize].len;
                    self.cols.cols[c as usize].sel.push(row);
                }
                self.aim(c, at);
            }
        }
    }
    #[inline]
    fn leave_field(&mut self, _s: &mut NodeId, _field: u16, end: usize) {
        self.leave(end);
    }
    #[inline]
    fn enter_item(&mut self, l: &mut NodeId, _index: usize, at: usize) {
        match &mut self.raw {
            Some(r) => r.depth += 1,
            None => {
                let item = self.layout.nodes[*l as usize].children[0];
                self.aim(item, at);
            }
        }
    }
    #[inline]
    fn leave_item(&mut self, _l: &mut NodeId, _index: usize, end: usize) {
        self.leave(end);
    }
    #[inline(always)]
    fn choose(&mut self, case: usize, at: usize) {
        if self.raw.is_none() {
            let u = self.target;
            // The chosen case records the union's row; the other cases are not touched (their
            // nulls are laid out when the table is finished).
            let row = self.cols.cols[u as usize].len;
            let c = self.layout.nodes[u as usize].children[1 + case];
            self.cols.cols[c as usize].sel.push(row);
            self.chosen[u as usize] = case;
            self.aim(c, at);
        }
    }
}

/// How a scalar of a run goes to its column: chosen once per run (the first time the sink
/// meets it) from the column's type and the scalar's, so each value costs one dispatch.
#[derive(Debug, Clone, Copy)]
enum Put {
    /// One byte to a 1-byte integer column.
    Byte,
    /// 2, 4 or 8 bytes to an integer or float column of that width, in this byte order.
    Le2,
    Be2,
    Le4,
    Be4,
    Le8,
    Be8,
    /// Fixed bytes to a fixed-size binary column.
    Fixed(usize),
    /// An unsigned bit field of a group of at most 8 bytes to an integer column.
    Bits {
        group: u8,
        shift: u8,
        mask: u64,
        lsb: bool,
    },
    /// A one-bit boolean bit field of a group of at most 8 bytes to a boolean column.
    Flag {
        group: u8,
        shift: u8,
        lsb: bool,
    },
    /// Anything else (odd widths, signed or wider boolean bit fields): [`push_scalar`].
    Slow,
}

/// The `N` bytes at `off` of each row of `rows` (rows of `size` bytes, `size > 0`), in
/// order: a read per row without a bounds check per row (checked once here).
#[inline(always)]
fn fields<const N: usize>(
    rows: &[u8],
    size: usize,
    off: usize,
) -> impl Iterator<Item = [u8; N]> + '_ {
    let n = rows.len() / size;
    assert!(off + N <= size, "a run's scalar lies inside its row");
    let p = rows.as_ptr();
    (0..n).map(move |k| {
        // SAFETY: k < n = rows.len() / size, so k * size + off + N <= (k + 1) * size, which
        // is at most rows.len(): the N bytes read are inside `rows` (and [u8; N] has
        // alignment 1, so any address is aligned for it).
        unsafe { p.add(k * size + off).cast::<[u8; N]>().read() }
    })
}

/// Evaluates `$body` with `$it` an iterator over the `group`-byte number (big-endian unless
/// `lsb`) at `off` of each row of `rows` (rows of `size` bytes): one loop per common group
/// width.
macro_rules! with_groups {
    ($rows:expr, $size:expr, $off:expr, $group:expr, $lsb:expr, |$it:ident| $body:expr) => {{
        let (rows, size, off, lsb): (&[u8], usize, usize, bool) = ($rows, $size, $off, $lsb);
        match ($group, lsb) {
            (1, _) => {
                let $it = fields::<1>(rows, size, off).map(|a| u64::from(a[0]));
                $body
            }
            (2, false) => {
                let $it = fields::<2>(rows, size, off).map(|a| u64::from(u16::from_be_bytes(a)));
                $body
            }
            (2, true) => {
                let $it = fields::<2>(rows, size, off).map(|a| u64::from(u16::from_le_bytes(a)));
                $body
            }
            (4, false) => {
                let $it = fields::<4>(rows, size, off).map(|a| u64::from(u32::from_be_bytes(a)));
                $body
            }
            (4, true) => {
                let $it = fields::<4>(rows, size, off).map(|a| u64::from(u32::from_le_bytes(a)));
                $body
            }
            (8, false) => {
                let $it = fields::<8>(rows, size, off).map(u64::from_be_bytes);
                $body
            }
            (8, true) => {
                let $it = fields::<8>(rows, size, off).map(u64::from_le_bytes);
                $body
            }
            (g, _) => {
                let g = usize::from(g);
                let $it = rows
                    .chunks_exact(size)
                    .map(move |r| read_uint(&r[off..off + g], lsb));
                $body
            }
        }
    }};
}

/// The unsigned number of up to 8 bytes `g`, big-endian unless `lsb`.
#[inline(always)]
fn read_uint(g: &[u8], lsb: bool) -> u64 {
    if lsb {
        g.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x))
    } else {
        g.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
    }
}

/// One named scalar of a run: where it is in the run, its column and how it goes there.
#[derive(Debug, Clone, Copy)]
struct Writer {
    off: usize,
    col: NodeId,
    put: Put,
    scalar: Scalar,
}

/// The writers of one run of a struct column, found by the run's address in the program.
struct RunWriter {
    key: usize,
    writers: Box<[Writer]>,
    /// The rows not yet in their columns, when the run's rows wait (see the module doc).
    stage: Option<Stage>,
}

/// Rows a staged run holds before they go to their columns: a few KiB, so the copy is
/// still in cache when each column reads it back.
const STAGE_ROWS: usize = 256;

/// The largest run whose rows wait (its stage holds 64 KiB at most); a larger run's
/// per-field dispatch is small next to moving its bytes.
const STAGE_MAX_RUN: usize = 256;

/// Appends bytes to a buffer: 8 to 64 bytes (a run of headers staged, a short payload)
/// as two copies of a fixed size that overlap, in line, rather than a call to `memcpy`.
#[inline(always)]
fn push_row(rows: &mut Vec<u8>, b: &[u8]) {
    /// The `k` bytes at the start and the `k` at the end of `b` (`k <= b.len() <= 2k`)
    /// into the spare capacity of `rows`, which holds `b.len()` bytes more.
    #[inline(always)]
    fn ends<const K: usize>(rows: &mut Vec<u8>, b: &[u8]) {
        let n = b.len();
        let head: [u8; K] = b[..K].try_into().expect("K bytes");
        let tail: [u8; K] = b[n - K..].try_into().expect("K bytes");
        let len = rows.len();
        let dst = rows.spare_capacity_mut();
        assert!(dst.len() >= n);
        // SAFETY: `dst` holds at least `n` bytes (checked above), so both K-byte writes
        // (at 0 and at n - K, K <= n) stay inside it; together they write all of its first
        // `n` bytes (n <= 2K), which makes `len + n` bytes of `rows` initialized.
        unsafe {
            dst.as_mut_ptr().cast::<[u8; K]>().write_unaligned(head);
            dst.as_mut_ptr()
                .add(n - K)
                .cast::<[u8; K]>()
                .write_unaligned(tail);
            rows.set_len(len + n);
        }
    }
    rows.reserve(b.len());
    match b.len() {
        8..=16 => ends::<8>(rows, b),
        17..=32 => ends::<16>(rows, b),
        33..=64 => ends::<32>(rows, b),
        _ => rows.extend_from_slice(b),
    }
}

/// The rows of a run waiting for their columns: each row is the run's `size` bytes.
struct Stage {
    size: usize,
    rows: Vec<u8>,
}

/// Moves the staged rows of a run to their columns, a column at a time, and empties the
/// stage.
fn unstage(cols: &mut Cols, writers: &[Writer], st: &mut Stage) {
    if st.rows.is_empty() {
        return;
    }
    for w in writers {
        let pushed = put_rows(&mut cols.cols[w.col as usize], w, &st.rows, st.size);
        debug_assert!(pushed, "a plain scalar's column");
    }
    st.rows.clear();
}

/// Appends the scalar of `w` in every row of `rows` (rows of `size` bytes) to its column;
/// false when the column is not the scalar's.
fn put_rows(col: &mut Col, w: &Writer, rows: &[u8], size: usize) -> bool {
    let off = w.off;
    let n = rows.len() / size;
    macro_rules! num {
        ($n:expr, $from:ident, $($var:ident => $t:ty),+) => {
            match &mut col.buf {
                $(Buf::$var(v) => v.extend(fields::<$n>(rows, size, off).map(<$t>::$from)),)+
                _ => return false,
            }
        };
    }
    match w.put {
        Put::Byte => match &mut col.buf {
            Buf::U8(v) => v.extend(fields::<1>(rows, size, off).map(|a| a[0])),
            Buf::I8(v) => v.extend(fields::<1>(rows, size, off).map(|a| a[0] as i8)),
            _ => return false,
        },
        Put::Le2 => num!(2, from_le_bytes, U16 => u16, I16 => i16),
        Put::Be2 => num!(2, from_be_bytes, U16 => u16, I16 => i16),
        Put::Le4 => num!(4, from_le_bytes, U32 => u32, I32 => i32, F32 => f32),
        Put::Be4 => num!(4, from_be_bytes, U32 => u32, I32 => i32, F32 => f32),
        Put::Le8 => num!(8, from_le_bytes, U64 => u64, I64 => i64, F64 => f64),
        Put::Be8 => num!(8, from_be_bytes, U64 => u64, I64 => i64, F64 => f64),
        Put::Fixed(k) => match &mut col.buf {
            Buf::Fixed { data, .. } => {
                data.reserve(n * k);
                // The common sizes (addresses, hashes) as arrays: a copy of known size
                // rather than a call to `memcpy` per value.
                macro_rules! sizes {
                    ($($k:literal)+) => {
                        match k {
                            $($k => fields::<$k>(rows, size, off)
                                .for_each(|a| data.extend_from_slice(&a)),)+
                            _ => rows
                                .chunks_exact(size)
                                .for_each(|r| data.extend_from_slice(&r[off..off + k])),
                        }
                    };
                }
                sizes!(2 3 4 6 8 10 12 16 20 32);
            }
            _ => return false,
        },
        Put::Bits {
            group,
            shift,
            mask,
            lsb,
        } => {
            macro_rules! bits {
                ($($var:ident => $t:ty),+) => {
                    match &mut col.buf {
                        $(Buf::$var(v) => with_groups!(rows, size, off, group, lsb, |it| {
                            v.extend(it.map(|g| ((g >> shift) & mask) as $t))
                        }),)+
                        _ => return false,
                    }
                };
            }
            bits!(U8 => u8, U16 => u16, U32 => u32, U64 => u64);
        }
        Put::Flag { group, shift, lsb } => match &mut col.buf {
            Buf::Bool(v) => {
                v.reserve(n);
                with_groups!(rows, size, off, group, lsb, |it| {
                    it.for_each(|g| v.append((g >> shift) & 1 != 0))
                });
            }
            _ => return false,
        },
        Put::Slow => {
            // A row at a time (odd widths, signed bit fields).
            return rows.chunks_exact(size).all(|r| put(col, w, r));
        }
    }
    col.valid.append_n_non_nulls(n);
    col.len += n;
    true
}

fn put_of(buf: &Buf, s: Scalar) -> Put {
    match (buf, s) {
        (Buf::U8(_) | Buf::I8(_), Scalar::Int { width: 1, .. }) => Put::Byte,
        (Buf::U16(_) | Buf::I16(_), Scalar::Int { width: 2, big, .. }) => {
            if big {
                Put::Be2
            } else {
                Put::Le2
            }
        }
        (Buf::U32(_) | Buf::I32(_), Scalar::Int { width: 4, big, .. })
        | (Buf::F32(_), Scalar::Float { width: 4, big }) => {
            if big {
                Put::Be4
            } else {
                Put::Le4
            }
        }
        (Buf::U64(_) | Buf::I64(_), Scalar::Int { width: 8, big, .. })
        | (Buf::F64(_), Scalar::Float { width: 8, big }) => {
            if big {
                Put::Be8
            } else {
                Put::Le8
            }
        }
        (Buf::Fixed { size, .. }, Scalar::Bytes(n)) if *size == n => Put::Fixed(n),
        (
            Buf::U8(_) | Buf::U16(_) | Buf::U32(_) | Buf::U64(_),
            Scalar::Bits {
                group,
                shift,
                width,
                signed: false,
                lsb,
                boolean: false,
                ..
            },
        ) if group <= 8 && width < 64 => Put::Bits {
            group,
            shift,
            mask: (1u64 << width) - 1,
            lsb,
        },
        (
            Buf::Bool(_),
            Scalar::Bits {
                group,
                shift,
                width: 1,
                lsb,
                boolean: true,
                ..
            },
        ) if group <= 8 => Put::Flag { group, shift, lsb },
        _ => Put::Slow,
    }
}

/// Appends the scalar of `w` in `run` (the run's bytes) to its column; false when the
/// column is not the scalar's (nothing appended then).
#[inline(always)]
fn put(col: &mut Col, w: &Writer, run: &[u8]) -> bool {
    let b = &run[w.off..];
    macro_rules! num {
        ($n:expr, $from:ident, $($var:ident => $t:ty),+) => {{
            let a: [u8; $n] = b[..$n].try_into().expect("width");
            match &mut col.buf {
                $(Buf::$var(v) => v.push(<$t>::$from(a)),)+
                _ => return false,
            }
        }};
    }
    match w.put {
        Put::Byte => match &mut col.buf {
            Buf::U8(v) => v.push(b[0]),
            Buf::I8(v) => v.push(b[0] as i8),
            _ => return false,
        },
        Put::Le2 => num!(2, from_le_bytes, U16 => u16, I16 => i16),
        Put::Be2 => num!(2, from_be_bytes, U16 => u16, I16 => i16),
        Put::Le4 => num!(4, from_le_bytes, U32 => u32, I32 => i32, F32 => f32),
        Put::Be4 => num!(4, from_be_bytes, U32 => u32, I32 => i32, F32 => f32),
        Put::Le8 => num!(8, from_le_bytes, U64 => u64, I64 => i64, F64 => f64),
        Put::Be8 => num!(8, from_be_bytes, U64 => u64, I64 => i64, F64 => f64),
        Put::Fixed(n) => match &mut col.buf {
            Buf::Fixed { data, .. } => data.extend_from_slice(&b[..n]),
            _ => return false,
        },
        Put::Bits {
            group,
            shift,
            mask,
            lsb,
        } => {
            let v = (read_uint(&b[..group as usize], lsb) >> shift) & mask;
            match &mut col.buf {
                Buf::U8(c) => c.push(v as u8),
                Buf::U16(c) => c.push(v as u16),
                Buf::U32(c) => c.push(v as u32),
                Buf::U64(c) => c.push(v),
                _ => return false,
            }
        }
        Put::Flag { group, shift, lsb } => match &mut col.buf {
            Buf::Bool(v) => v.append((read_uint(&b[..group as usize], lsb) >> shift) & 1 != 0),
            _ => return false,
        },
        Put::Slow => return push_scalar(col, &w.scalar, b),
    }
    col.valid.append_non_null();
    col.len += 1;
    true
}

/// Appends the scalar at the start of `b` to its column; false when the column is not the
/// scalar's (nothing appended then).
#[inline]
fn push_scalar(col: &mut crate::builders::Col, s: &Scalar, b: &[u8]) -> bool {
    macro_rules! num {
        ($v:expr, $t:ty, $w:expr, $big:expr) => {{
            let a: [u8; $w] = b[..$w].try_into().expect("width");
            $v.push(if $big {
                <$t>::from_be_bytes(a)
            } else {
                <$t>::from_le_bytes(a)
            })
        }};
    }
    match (&mut col.buf, *s) {
        (Buf::U8(v), Scalar::Int { width: 1, .. }) => v.push(b[0]),
        (Buf::I8(v), Scalar::Int { width: 1, .. }) => v.push(b[0] as i8),
        (Buf::U16(v), Scalar::Int { width: 2, big, .. }) => num!(v, u16, 2, big),
        (Buf::I16(v), Scalar::Int { width: 2, big, .. }) => num!(v, i16, 2, big),
        (Buf::U32(v), Scalar::Int { width: 4, big, .. }) => num!(v, u32, 4, big),
        (Buf::I32(v), Scalar::Int { width: 4, big, .. }) => num!(v, i32, 4, big),
        (Buf::U64(v), Scalar::Int { width: 8, big, .. }) => num!(v, u64, 8, big),
        (Buf::I64(v), Scalar::Int { width: 8, big, .. }) => num!(v, i64, 8, big),
        (Buf::F32(v), Scalar::Float { width: 4, big }) => num!(v, f32, 4, big),
        (Buf::F64(v), Scalar::Float { width: 8, big }) => num!(v, f64, 8, big),
        (Buf::Bool(v), Scalar::Bool) => v.append(b[0] != 0),
        (Buf::Fixed { size, data }, Scalar::Bytes(n)) if *size == n => {
            data.extend_from_slice(&b[..n])
        }
        // Odd widths (24-bit and the like) and bit fields: the VM's value, in the column's
        // width.
        (buf, Scalar::Int { width, signed, big }) if width < 8 => {
            let g = &b[..width as usize];
            let u = if big {
                g.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
            } else {
                g.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x))
            };
            let shift = 64 - u32::from(width) * 8;
            let v = if signed {
                ((u << shift) as i64 >> shift) as u64
            } else {
                u
            };
            if !push_int(buf, v) {
                return false;
            }
        }
        (
            buf,
            Scalar::Bits {
                group,
                shift,
                width,
                signed,
                lsb,
                boolean,
                ..
            },
        ) => {
            let g = &b[..group as usize];
            let bits = if lsb {
                g.iter().rev().fold(0u128, |a, &x| (a << 8) | u128::from(x))
            } else {
                g.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x))
            };
            let v = (bits >> shift) & ((1u128 << width) - 1);
            match buf {
                Buf::Bool(c) if boolean => c.append(v != 0),
                _ if boolean => return false,
                _ => {
                    let v = if signed {
                        let s = 128 - u32::from(width);
                        (((v << s) as i128) >> s) as i64 as u64
                    } else {
                        v as u64
                    };
                    if !push_int(buf, v) {
                        return false;
                    }
                }
            }
        }
        _ => return false,
    }
    col.valid.append_non_null();
    col.len += 1;
    true
}

/// Appends an integer (its two's complement bits) to an integer column, truncated to the
/// column's width as the VM's values are; false for any other column.
#[inline]
fn push_int(buf: &mut Buf, v: u64) -> bool {
    match buf {
        Buf::I8(c) => c.push(v as i8),
        Buf::I16(c) => c.push(v as i16),
        Buf::I32(c) => c.push(v as i32),
        Buf::I64(c) => c.push(v as i64),
        Buf::U8(c) => c.push(v as u8),
        Buf::U16(c) => c.push(v as u16),
        Buf::U32(c) => c.push(v as u32),
        Buf::U64(c) => c.push(v),
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_row_appends_every_length() {
        let src: Vec<u8> = (0..100u8).collect();
        for n in 0..=100 {
            let mut rows = vec![0xAAu8; 3];
            push_row(&mut rows, &src[..n]);
            push_row(&mut rows, &src[100 - n..]);
            let mut want = vec![0xAAu8; 3];
            want.extend_from_slice(&src[..n]);
            want.extend_from_slice(&src[100 - n..]);
            assert_eq!(rows, want, "{n} bytes");
        }
    }

    #[test]
    fn fields_and_groups_read_each_row() {
        // Three rows of 7 bytes: the 2-byte number at 5, the 3-byte group at 1.
        let rows: Vec<u8> = (0..21u8).collect();
        let two: Vec<u16> = fields::<2>(&rows, 7, 5).map(u16::from_be_bytes).collect();
        assert_eq!(two, [0x0506, 0x0c0d, 0x1314]);
        let mut be = Vec::new();
        with_groups!(&rows, 7, 1, 3u8, false, |it| be.extend(it));
        assert_eq!(be, [0x010203, 0x08090a, 0x0f1011]);
        let mut le = Vec::new();
        with_groups!(&rows, 7, 1, 2u8, true, |it| le.extend(it));
        assert_eq!(le, [0x0201, 0x0908, 0x100f]);
    }

    #[test]
    #[should_panic(expected = "inside its row")]
    fn a_field_past_its_row_is_refused() {
        let rows = [0u8; 14];
        let _ = fields::<4>(&rows, 7, 4).count();
    }
}
