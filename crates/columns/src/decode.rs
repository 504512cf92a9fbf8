//! Back-to-back messages -> a table: the driver of the column sink, the strided plan and
//! the threads.
//!
//! Rows are split across threads. Messages of one size split at row boundaries. Messages
//! of varying size split at byte positions, and no thread scans for the boundaries first:
//! thread 0 decodes from the real start up to the first message that starts at or after
//! its region's end; every other thread guesses where a message starts in its region (the
//! first position from which several messages decode in a row) and decodes from there,
//! keeping where its first rows start. Then the boundaries are
//! followed in order: where the previous region ended is a real boundary, and if it is one
//! of the guessed row starts, the guess decoded the real messages from that row on (the
//! decode of a message depends only on where it starts), so the rows before it are
//! dropped. If not, the messages up to the next guessed start (or to the region's end) are
//! decoded there, on the calling thread. A guess that is not on a boundary usually meets
//! the real ones within a few messages; a format where it never does decodes at the speed
//! of one thread, never wrongly. The rows come out in input order whatever the thread
//! count, and the first bad message in input order is the error.
//!
//! Every run sizes its columns once, after its first [`SAMPLE_ROWS`] rows, for the rows its
//! region holds at the rate those rows took input, so a large table's buffers are
//! allocated at about their final size instead of doubling their way there.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, Schema, SchemaRef};

use bytewright_wire::error::{Error, Kind, Seg};
use bytewright_wire::host::Discard;
use bytewright_wire::unpack::unpack_with;
use bytewright_wire::{Program, Scratch};

use crate::builders::Cols;
use crate::fixed::{self, Plan};
use crate::layout::Layout;
use crate::pool;
use crate::sink::{Bug, ColumnSink};

/// Why a table could not be built.
#[derive(Debug)]
pub enum Failure {
    /// Bad or short input; the path starts with the row index, the offset is absolute.
    /// (It never holds a host error: the column sink's own errors are `Bug`s.)
    Decode(Box<Error<Bug>>),
    /// Arrow refused the columns, or a value had no column (a bug: report it).
    Arrow(ArrowError),
    Bug(String),
}

impl From<ArrowError> for Failure {
    fn from(e: ArrowError) -> Self {
        Failure::Arrow(e)
    }
}

type DecodeResult<T> = Result<T, Failure>;

/// Messages that must decode in a row from a guessed position before a thread decodes its
/// rows from there.
const SYNC_MESSAGES: usize = 8;
/// Bytes a thread may go through looking for a boundary (at least; an eighth of its region
/// for large regions) before it leaves its region to the real boundaries.
const SYNC_BUDGET: usize = 1 << 20;
/// Messages measured from the real start before the threads guess boundaries: the largest of
/// them, times [`SIZE_SLACK`], bounds a message while a guess is checked (see
/// [`Columnar::sync`]).
const SIZE_SAMPLE: usize = 64;
const SIZE_SLACK: usize = 4;

/// Rows decoded before the columns are sized for the whole region from what those rows
/// hold (see [`Cols::reserve_for`]).
const SAMPLE_ROWS: usize = 1024;

/// Sizes `cols` for the rest of a region of `region` bytes from its first `done` rows,
/// which took `bytes` of it; `exact` is the number of rows when it is known.
fn size_for(cols: &mut Cols, done: usize, bytes: usize, region: usize, exact: Option<usize>) {
    let total = match exact {
        Some(n) => n,
        None if bytes == 0 => return,
        None => (done as u128 * region as u128 / bytes as u128).min(usize::MAX as u128) as usize,
    };
    // A column a sample overstates (lists far longer in the first rows) is capped at
    // eight bytes of column per byte of input, and grows from there if it must.
    cols.reserve_for(done, total, exact.is_some(), region.saturating_mul(8));
}

/// The rows of a guessed run whose starts are kept to meet the real boundaries: a guess
/// off the boundaries meets them within a few messages, and one that has not met them by
/// then is treated as one that never does (its region is decoded from the real
/// boundaries), so a run does not keep 8 bytes per row for the one comparison.
const KEPT_STARTS: usize = 4096;

/// Rows decoded from a position guessed to be a message boundary.
struct Guess {
    cols: Cols,
    /// Where each of the first [`KEPT_STARTS`] rows starts.
    starts: Vec<usize>,
    rows: usize,
    /// Where the last row ends (or the message that did not decode starts).
    end: usize,
    failed: bool,
}

/// What one thread of a variable-size decode gives.
enum Part {
    /// Thread 0's rows, from the real start: its columns, rows and where they end.
    First { cols: Cols, rows: usize, end: usize },
    /// A later thread's rows, from where it guessed a message starts.
    Guessed(Guess),
}

/// A decoded table: its schema and its rows, in one batch per thread that decoded them.
#[derive(Debug, Clone)]
pub struct Table {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl Table {
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// What to decode.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Where the first message starts.
    pub offset: usize,
    /// Exactly this many messages; `None` decodes until the data ends.
    pub count: Option<usize>,
    /// Threads to use (1 or more).
    pub threads: usize,
}

/// A codec's columnar machinery: its program, layout and strided plan.
#[derive(Debug, Clone)]
pub struct Columnar {
    pub prog: Arc<Program>,
    pub layout: Layout,
    pub plan: Option<Plan>,
}

fn at_row(mut e: Box<Error<Bug>>, row: usize) -> Failure {
    e.rev_path.push(Seg::Index(row));
    Failure::Decode(e)
}

/// The end of one message at `pos`, or its error.
fn scan_one(
    prog: &Program,
    scratch: &mut Scratch,
    input: &[u8],
    pos: usize,
) -> Result<usize, Box<Error<Infallible>>> {
    unpack_with(prog, scratch, &mut Discard::<false>, input, pos).map(|(_, end)| end)
}

/// The error of the message at `pos` (checked fully), with its row.
fn error_at(prog: &Program, input: &[u8], pos: usize, row: usize) -> Failure {
    match unpack_with(prog, &mut Scratch::new(), &mut Discard::<true>, input, pos) {
        Err(e) => at_row(Box::new(e.map_host(|never| match never {})), row),
        Ok((_, end)) if end == pos => zero_size(pos, row),
        // The scan or the strided copy found a problem the full check does not: never
        // expected, but say where rather than return wrong data.
        Ok(_) => at_row(
            Error::invalid("the message could not be decoded consistently", pos),
            row,
        ),
    }
}

/// A decode error of the column sink: its own errors are bugs, the rest keep their path.
fn host_free(e: Box<Error<Bug>>, row: usize) -> Failure {
    match e.kind {
        Kind::Host(b) => Failure::Bug(b.0),
        _ => at_row(e, row),
    }
}

fn zero_size(pos: usize, row: usize) -> Failure {
    at_row(
        Error::invalid(
            "a message of zero bytes cannot be repeated into a table",
            pos,
        ),
        row,
    )
}

impl Columnar {
    pub fn new(prog: Arc<Program>) -> Columnar {
        let layout = Layout::new(&prog);
        let plan = Plan::new(&prog, &layout);
        Columnar { prog, layout, plan }
    }

    /// The same machinery with no checksum verified: for bulk reads that keep packets with
    /// wrong checksums (a capture's offloaded ones), where per-record `unpack` verifies.
    pub fn without_checksums(&self) -> Columnar {
        let mut prog = (*self.prog).clone();
        for s in &mut prog.structs {
            for c in &mut s.checksums {
                c.verify = false;
            }
        }
        Columnar {
            prog: Arc::new(prog),
            layout: self.layout.clone(),
            plan: self.plan.clone(),
        }
    }

    /// The schema of every table this codec decodes (no data needed).
    pub fn schema(&self, large: &[bool]) -> SchemaRef {
        let (names, cols) = self.layout.columns();
        let root = self.layout.node(self.layout.root);
        let union = matches!(root.shape, crate::layout::Shape::Union { .. });
        let fields: Vec<arrow_schema::Field> = names
            .iter()
            .zip(cols)
            .enumerate()
            .map(|(i, (n, &c))| {
                if union && i == 0 {
                    arrow_schema::Field::new(
                        crate::layout::VARIANT,
                        crate::layout::variant_type(),
                        false,
                    )
                } else {
                    self.layout.field(n, c, large)
                }
            })
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// Decodes back-to-back messages into a table. No partial table: the first bad message
    /// fails the whole call.
    pub fn decode(&self, input: &[u8], req: Request) -> DecodeResult<Table> {
        if req.offset > input.len() {
            return Err(Failure::Decode(Error::invalid(
                format!(
                    "offset {} is past the end of the {}-byte buffer",
                    req.offset,
                    input.len()
                ),
                req.offset,
            )));
        }
        match self.prog.static_size.filter(|&s| s > 0) {
            Some(size) => self.decode_fixed(input, req, size),
            None => self.decode_varying(input, req),
        }
    }

    /// How many whole messages `input[offset..]` holds, at most `max_rows`, and where the
    /// last of them ends. A message cut off by the end of the input is left out (more data
    /// may complete it); a malformed one is an error.
    pub fn whole(
        &self,
        input: &[u8],
        offset: usize,
        max_rows: usize,
    ) -> DecodeResult<(usize, usize)> {
        self.whole_before(input, offset, max_rows, usize::MAX)
    }

    /// Like `whole`, counting only the messages that start before `stop`: once the input
    /// reaches that far, the end returned is where the first message at or after `stop`
    /// starts. This finds split points in a stream without decoding any column.
    pub fn whole_before(
        &self,
        input: &[u8],
        offset: usize,
        max_rows: usize,
        stop: usize,
    ) -> DecodeResult<(usize, usize)> {
        let avail = input.len().saturating_sub(offset);
        if let Some(size) = self.prog.static_size.filter(|&s| s > 0) {
            let before = stop.saturating_sub(offset).div_ceil(size);
            let rows = (avail / size).min(max_rows).min(before);
            return Ok((rows, offset + rows * size));
        }
        let mut scratch = Scratch::new();
        let mut pos = offset;
        let mut rows = 0;
        while rows < max_rows && pos < input.len() && pos < stop {
            match scan_one(&self.prog, &mut scratch, input, pos) {
                Ok(end) if end > pos => pos = end,
                Ok(_) => return Err(zero_size(pos, rows)),
                Err(e) if e.is_incomplete() => break,
                Err(_) => return Err(error_at(&self.prog, input, pos, rows)),
            }
            rows += 1;
        }
        Ok((rows, pos))
    }

    fn decode_fixed(&self, input: &[u8], req: Request, size: usize) -> DecodeResult<Table> {
        let avail = input.len() - req.offset;
        let rows = match req.count {
            Some(n) => {
                if n.checked_mul(size).is_none_or(|need| need > avail) {
                    let row = avail / size;
                    return Err(error_at(&self.prog, input, req.offset + row * size, row));
                }
                n
            }
            None => {
                if !avail.is_multiple_of(size) {
                    let row = avail / size;
                    return Err(error_at(&self.prog, input, req.offset + row * size, row));
                }
                avail / size
            }
        };
        if let Some(plan) = &self.plan {
            return match fixed::run(plan, input, req.offset, rows, req.threads) {
                Err(fixed::Stop::Panicked) => {
                    Err(Failure::Bug("a decoding thread panicked".into()))
                }
                Ok(bufs) => {
                    let cols = fixed::arrays(plan, &self.layout, bufs, rows)?;
                    let schema = self.schema(&vec![false; self.layout.nodes.len()]);
                    Ok(Table {
                        batches: vec![batch(&schema, cols, rows)?],
                        schema,
                    })
                }
                Err(fixed::Stop::BadRow(row)) => {
                    Err(error_at(&self.prog, input, req.offset + row * size, row))
                }
            };
        }
        let threads = req.threads.clamp(1, rows.max(1));
        let per = rows.div_ceil(threads);
        let chunk = |t: usize| -> DecodeResult<(Cols, usize)> {
            let first = (t * per).min(rows);
            let n = per.min(rows - first);
            let start = req.offset + first * size;
            self.decode_rows(input, start, usize::MAX, Some(n), first)
                .map(|(cols, n, _)| (cols, n))
        };
        let parts = run_threads(threads, chunk)?;
        self.table(parts.into_iter().map(|(c, n)| (c, n, 0)).collect())
    }

    fn decode_varying(&self, input: &[u8], req: Request) -> DecodeResult<Table> {
        let mut stop = input.len();
        let mut scratch = Scratch::new();
        if let Some(n) = req.count {
            // The region that holds exactly `n` messages.
            let mut pos = req.offset;
            for row in 0..n {
                match scan_one(&self.prog, &mut scratch, input, pos) {
                    Ok(end) if end > pos => pos = end,
                    _ => return Err(error_at(&self.prog, input, pos, row)),
                }
            }
            stop = pos;
        }
        let span = stop - req.offset;
        // Below about 64 KiB per thread, threads cost more than they save.
        let threads = req.threads.clamp(1, (span / 65536).max(1));
        if threads == 1 {
            let (cols, rows, _) = self.decode_rows(input, req.offset, stop, req.count, 0)?;
            return self.table(vec![(cols, rows, 0)]);
        }
        let split = |t: usize| req.offset + span / threads * t;
        let region_end = |t: usize| if t + 1 == threads { stop } else { split(t + 1) };
        let cap = self.size_cap(input, req.offset, stop);
        // Thread 0 starts on a boundary; the others guess where messages start after
        // their split.
        let mut decoded = run_threads(threads, |t| {
            if t == 0 {
                let (cols, rows, end) =
                    self.decode_rows(input, req.offset, region_end(0), None, 0)?;
                Ok(Part::First { cols, rows, end })
            } else {
                Ok(Part::Guessed(self.decode_guess(
                    input,
                    split(t),
                    region_end(t),
                    cap,
                )))
            }
        })?
        .into_iter();
        let Some(Part::First { cols, rows, end }) = decoded.next() else {
            return Err(Failure::Bug(
                "the first thread did not decode from the start".into(),
            ));
        };
        let mut pos = end;
        let mut row = rows;
        let mut parts = vec![(cols, rows, 0)];
        let mut scratch = Scratch::new();
        for (t, part) in (1..).zip(decoded) {
            let Part::Guessed(guess) = part else {
                return Err(Failure::Bug("a later thread decoded from the start".into()));
            };
            // Follow the true boundaries from `pos` until one is where a guessed row
            // starts (from there on the guess decoded the real messages) or the region
            // ends (the guess never met them: its rows are dropped).
            let from = pos;
            let mut fixed = 0;
            let mut met = None;
            // (Only the first rows' starts are kept: past them, the guess is never met.)
            loop {
                if let Ok(j) = guess.starts.binary_search(&pos) {
                    met = Some(j);
                    break;
                }
                if pos >= region_end(t) {
                    break;
                }
                match scan_one(&self.prog, &mut scratch, input, pos) {
                    Ok(end) if end > pos => pos = end,
                    Ok(_) => return Err(zero_size(pos, row + fixed)),
                    Err(_) => return Err(error_at(&self.prog, input, pos, row + fixed)),
                }
                fixed += 1;
            }
            if fixed > 0 {
                let (cols, n, _) = self.decode_rows(input, from, pos, None, row)?;
                parts.push((cols, n, 0));
                row += n;
            }
            if let Some(j) = met {
                let real = guess.rows - j;
                if guess.failed {
                    // On the real boundaries, the message it stopped at is bad.
                    return Err(error_at(&self.prog, input, guess.end, row + real));
                }
                parts.push((guess.cols, guess.rows, j));
                row += real;
                pos = guess.end;
            }
        }
        self.table(parts)
    }

    /// The largest of the first [`SIZE_SAMPLE`] messages from the real start (`start`, before
    /// `stop`), times [`SIZE_SLACK`]: a bound on the messages of a guessed run. `None` when
    /// none decodes (thread 0 reports that message's error).
    fn size_cap(&self, input: &[u8], start: usize, stop: usize) -> Option<usize> {
        let mut scratch = Scratch::new();
        let mut pos = start;
        let mut largest = 0;
        for _ in 0..SIZE_SAMPLE {
            if pos >= stop {
                break;
            }
            match scan_one(&self.prog, &mut scratch, input, pos) {
                Ok(end) if end > pos => {
                    largest = largest.max(end - pos);
                    pos = end;
                }
                _ => break,
            }
        }
        (largest > 0).then(|| largest.saturating_mul(SIZE_SLACK))
    }

    /// The first position from `split` on where [`SYNC_MESSAGES`] messages in a row decode
    /// (or the input ends after at least one): likely a message boundary. A split inside a
    /// message usually fails within a few bytes of it (a length past the input, a bad
    /// constant), so the probe moves on byte by byte, within a budget of work; `None` when
    /// the budget runs out (the region is then decoded from the real boundaries).
    ///
    /// A format without constants decodes from almost any byte, and a guess off the
    /// boundaries reads lengths from the middle of messages: some huge, each jumping over
    /// many real messages before the guess meets the boundaries (all of them then decoded
    /// again, after the threads, by one thread). So a guess is first checked with `cap`:
    /// none of its messages may be larger than that (real messages seldom are, by far, than
    /// the first ones); only if no position passes within half the budget does the probe
    /// start again without it.
    fn sync(&self, input: &[u8], split: usize, stop: usize, cap: Option<usize>) -> Option<usize> {
        let budget = SYNC_BUDGET.max(stop.saturating_sub(split) / 8);
        if let Some(cap) = cap {
            if let Some(found) = self.probe(input, split, stop, cap, budget / 2) {
                return Some(found);
            }
        }
        self.probe(input, split, stop, usize::MAX, budget)
    }

    /// [`Self::sync`]'s probe, with messages at most `cap` bytes and `budget` bytes of work.
    fn probe(
        &self,
        input: &[u8],
        split: usize,
        stop: usize,
        cap: usize,
        mut budget: usize,
    ) -> Option<usize> {
        let mut scratch = Scratch::new();
        for cand in split..stop {
            let mut pos = cand;
            let mut good = 0;
            while good < SYNC_MESSAGES && pos < input.len() {
                match unpack_with(&self.prog, &mut scratch, &mut Discard::<true>, input, pos) {
                    Ok((_, end)) if end > pos && end - pos <= cap => pos = end,
                    _ => break,
                }
                good += 1;
            }
            if good == SYNC_MESSAGES || (good > 0 && pos == input.len()) {
                return Some(cand);
            }
            // The bytes the failed probe went through, and one for the probe itself.
            budget = budget.checked_sub(pos - cand + 1)?;
        }
        None
    }

    /// Decodes messages from where they seem to start after `split` (see [`Self::sync`]),
    /// which may not be a message boundary, while they start before `stop_at`, keeping
    /// where each row starts. A message that does not decode ends the run: whether that is
    /// an error depends on whether the run turns out to follow the real boundaries (and
    /// then its columns are never used).
    fn decode_guess(
        &self,
        input: &[u8],
        split: usize,
        stop_at: usize,
        cap: Option<usize>,
    ) -> Guess {
        let stop = stop_at.min(input.len());
        let Some(start) = self.sync(input, split, stop, cap) else {
            return Guess {
                cols: Cols::new(&self.layout, 0),
                starts: Vec::new(),
                rows: 0,
                end: split,
                failed: false,
            };
        };
        let region = stop.saturating_sub(start);
        let cap = (region / self.prog.min_size.max(1) / 4).min(SAMPLE_ROWS);
        let mut sink = ColumnSink::new(&self.layout, input, cap);
        let mut scratch = Scratch::new();
        let mut starts = Vec::with_capacity(cap.min(KEPT_STARTS));
        let mut rows = 0;
        let mut pos = start;
        let mut failed = false;
        while pos < stop {
            if rows == SAMPLE_ROWS {
                size_for(sink.cols_mut(), rows, pos - start, region, None);
            }
            sink.target = self.layout.root;
            let stored = match unpack_with(&self.prog, &mut scratch, &mut sink, input, pos) {
                Ok((v, end)) if end > pos => sink.store_root(v).is_ok().then_some(end),
                _ => None,
            };
            let Some(end) = stored else {
                failed = true;
                break;
            };
            if rows < KEPT_STARTS {
                starts.push(pos);
            }
            rows += 1;
            pos = end;
        }
        Guess {
            cols: sink.into_cols(),
            starts,
            rows,
            end: pos,
            failed,
        }
    }

    /// Decodes messages from `start` while they start before `stop_at` (and, with `limit`,
    /// at most that many). Rows are numbered from `first_row` in errors.
    fn decode_rows(
        &self,
        input: &[u8],
        start: usize,
        stop_at: usize,
        limit: Option<usize>,
        first_row: usize,
    ) -> DecodeResult<(Cols, usize, usize)> {
        let stop = stop_at.min(input.len());
        let region = stop.saturating_sub(start);
        let cap = match limit {
            Some(n) => n,
            None => region / self.prog.min_size.max(1) / 4,
        };
        let mut sink = ColumnSink::new(&self.layout, input, cap.min(SAMPLE_ROWS));
        let mut scratch = Scratch::new();
        let mut pos = start;
        let mut rows = 0usize;
        while pos < stop && limit.is_none_or(|n| rows < n) {
            if rows == SAMPLE_ROWS {
                size_for(sink.cols_mut(), rows, pos - start, region, limit);
            }
            sink.target = self.layout.root;
            match unpack_with(&self.prog, &mut scratch, &mut sink, input, pos) {
                Ok((v, end)) => {
                    if end == pos {
                        return Err(zero_size(pos, first_row + rows));
                    }
                    sink.store_root(v).map_err(|b| Failure::Bug(b.0))?;
                    pos = end;
                    rows += 1;
                }
                Err(e) => return Err(host_free(e, first_row + rows)),
            }
        }
        Ok((sink.into_cols(), rows, pos))
    }

    /// The table of per-thread column sets, in order, each without its first `skip` rows.
    fn table(&self, mut parts: Vec<(Cols, usize, usize)>) -> DecodeResult<Table> {
        // One schema for every batch: 64-bit offsets wherever any batch needs them.
        let mut large = vec![false; self.layout.nodes.len()];
        for (cols, _, _) in &parts {
            for (l, x) in large.iter_mut().zip(cols.large()) {
                *l |= x;
            }
        }
        let schema = self.schema(&large);
        let (_, roots) = self.layout.columns();
        let mut batches = Vec::with_capacity(parts.len());
        let union = matches!(
            self.layout.node(self.layout.root).shape,
            crate::layout::Shape::Union { .. }
        );
        for (cols, rows, skip) in parts.iter_mut() {
            let arrays = roots
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    if union && i == 0 {
                        cols.finish_variant(&self.layout, self.layout.root, *rows)
                    } else {
                        cols.finish(&self.layout, c, &large, *rows)
                    }
                })
                .collect::<Result<Vec<ArrayRef>, _>>()?;
            let b = batch(&schema, arrays, *rows)?;
            batches.push(if *skip > 0 {
                b.slice(*skip, *rows - *skip)
            } else {
                b
            });
        }
        if batches.len() > 1 {
            batches.retain(|b| b.num_rows() > 0);
            if batches.is_empty() {
                return self.table(vec![(Cols::new(&self.layout, 0), 0, 0)]);
            }
        }
        Ok(Table { schema, batches })
    }
}

fn batch(schema: &SchemaRef, cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
}

/// Runs `f(0..threads)`, on the pool's threads when more than one; the first failure in
/// row order wins. The calling thread takes part (it starts `f(0)` at once, with no wait for
/// a woken thread to be scheduled), and a part not yet started when a participant is free
/// is taken by it, so a late thread does not hold the others up.
fn run_threads<T: Send>(
    threads: usize,
    f: impl Fn(usize) -> DecodeResult<T> + Sync,
) -> DecodeResult<Vec<T>> {
    if threads == 1 {
        return Ok(vec![f(0)?]);
    }
    let results: Vec<Mutex<Option<DecodeResult<T>>>> =
        (0..threads).map(|_| Mutex::new(None)).collect();
    let task = |t: usize| {
        let r = f(t);
        *results[t].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    };
    let panicked = || Failure::Bug("a decoding thread panicked".into());
    pool::run(threads, threads - 1, &task).map_err(|_| panicked())?;
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(panicked()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytewright_wire::{compile, Schema};

    /// A record without constants (an id, a kind, then bytes after their big-endian length):
    /// almost every byte is the start of something that decodes.
    const RECORD: &str = r#"{"root": {"t": "struct", "id": 0, "name": "Rec", "order": "big", "fields": [
        {"name": "id", "type": {"t": "int", "width": 4, "signed": false}},
        {"name": "kind", "type": {"t": "int", "width": 1, "signed": false}},
        {"name": "n", "type": {"t": "int", "width": 2, "signed": false}},
        {"name": "payload", "type": {"t": "bytes", "len": {"expr": ["name", "n"]}}}]}}"#;

    /// `rows` records of 12 to 31 bytes of payload (varied bytes, as real data holds), and
    /// where each starts.
    fn records(rows: usize) -> (Vec<u8>, Vec<usize>) {
        let (mut data, mut starts) = (Vec::new(), Vec::new());
        for i in 0..rows {
            starts.push(data.len());
            let len = 12 + i % 20;
            data.extend_from_slice(&(10_000 + i as u32).to_be_bytes());
            data.push((i * 3 + 1) as u8);
            data.extend_from_slice(&(len as u16).to_be_bytes());
            data.extend((0..len).map(|j| ((i * 13 + j * 17 + 5) & 0xff) as u8));
        }
        (data, starts)
    }

    /// Real messages a guess from `from` jumps over before it meets a real boundary (all
    /// of them decoded again, by one thread, after the others).
    fn skipped(c: &Columnar, data: &[u8], starts: &[usize], from: usize) -> usize {
        let mut scratch = Scratch::new();
        let mut pos = from;
        while starts.binary_search(&pos).is_err() {
            match scan_one(&c.prog, &mut scratch, data, pos) {
                Ok(end) if end > pos => pos = end,
                _ => return starts.len() - starts.partition_point(|&s| s < from),
            }
        }
        starts.partition_point(|&s| s < pos) - starts.partition_point(|&s| s < from)
    }

    #[test]
    fn a_guess_inside_a_message_meets_the_boundaries_within_a_few_messages() {
        let schema = Schema::from_json(RECORD).expect("schema");
        let c = Columnar::new(Arc::new(compile(&schema).expect("compiles")));
        let (data, starts) = records(50_000);
        let cap = c.size_cap(&data, 0, data.len());
        assert_eq!(cap, Some((7 + 31) * SIZE_SLACK));
        let (mut with, mut without) = (0, 0);
        for k in 1..64 {
            let split = data.len() / 64 * k + k % 7;
            let found = c.sync(&data, split, data.len(), cap).expect("a boundary");
            let lost = skipped(&c, &data, &starts, found);
            // A false jump is at most the bound: a few messages.
            assert!(lost <= 8, "split {split}: {lost} messages skipped");
            with += lost;
            let found = c.sync(&data, split, data.len(), None).expect("a boundary");
            without += skipped(&c, &data, &starts, found);
        }
        // Without the bound, guesses jump over thousands of messages.
        assert!(with <= 63, "{with} messages skipped in all");
        assert!(without > 100 * with.max(1), "{without} vs {with}");
    }

    #[test]
    fn messages_larger_than_the_bound_still_sync_without_it() {
        // The first messages are small, the later ones far larger than the bound: the probe
        // with the bound finds nothing and the one without it takes over.
        let schema = Schema::from_json(RECORD).expect("schema");
        let c = Columnar::new(Arc::new(compile(&schema).expect("compiles")));
        let (mut data, _) = records(64);
        let from = data.len();
        let big = 4000;
        for i in 0..200u32 {
            data.extend_from_slice(&i.to_be_bytes());
            data.push(0xee);
            data.extend_from_slice(&(big as u16).to_be_bytes());
            data.extend((0..big).map(|j| (j * 7 + 3) as u8));
        }
        let cap = c.size_cap(&data, 0, data.len());
        assert!(cap.is_some_and(|b| b < big));
        let split = from + (7 + big) * 100 + 3;
        let unbounded = c.sync(&data, split, data.len(), None);
        assert!(unbounded.is_some());
        assert_eq!(c.sync(&data, split, data.len(), cap), unbounded);
    }
}
