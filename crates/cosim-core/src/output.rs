//! The output files of a run and the thread that writes them.
//!
//! The stepping thread never formats or writes a CSV row: an observer
//! copies the row's numbers into a preallocated queue ([`Outputs`]) and
//! goes on. A writer thread takes the whole queue (swapping it with an
//! empty one of the same capacity, so nothing is allocated per step),
//! formats the rows and writes each file's new rows with one `write`.
//! It does so every [`WRITE_PERIOD`], or sooner when the queue is half
//! full, so completed rows reach the disk even while a step hangs inside
//! an FMU. A full queue makes the stepping thread wait for the writer
//! (the disk sets the pace, memory stays bounded).
//!
//! Every file always ends on a complete row: rows are written whole, and
//! a write that fails part way (a full device, a file size limit) is cut
//! back to the last complete row (`set_len`). The first failure closes
//! that file and makes every later row refused, so the run stops at its
//! next step with [`CoreError::OutputWrite`] (the file, the OS error, the
//! time of its last complete row); the other files are written up to that
//! step and stay whole.
//!
//! The summary is written atomically: a temporary file in the same
//! directory, renamed over `summary.json`. Its space is reserved when the
//! run starts, so that a device that fills up during the run still takes
//! the summary (the reserve is overwritten in place, which needs no new
//! blocks).
//!
//! A file whose rows are numbers only (a trace without String columns)
//! has a queue of its own instead, a wait-free single-producer ring
//! ([`RowRing`], `output/row_ring.rs`): a row is copied in and published
//! with one release store, no lock, so a trace written every step costs a few
//! nanoseconds a row; the writer drains the rings with the queue, by the
//! same rules (every [`WRITE_PERIOD`], sooner when a ring is half full, a
//! full one makes the stepping thread wait), and a row in a ring is as
//! safe from a hung step as one in the queue.
//!
//! [`OutputsHandle`] is the same set of outputs seen from another thread:
//! a watchdog that finds the stepping thread stuck in an FMU call can
//! write every queued row, close the files and write the summary
//! ([`OutputsHandle::finish_now`]) without waiting for the call.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{CoreError, Result};
use crate::execution::{RunStatus, RunSummary};
use crate::metrics::{Table, TableBuilder};
use crate::placement::{KeepOff, current_cpu};

mod row_ring;

/// How often the writer thread writes the rows queued, at the latest.
pub const WRITE_PERIOD: Duration = Duration::from_millis(200);

/// Numbers the queue holds (at least; more when a row is wider than a
/// quarter of this).
const QUEUE_VALUES: usize = 1 << 15;

/// Numbers a file's own ring holds (at least; more for rows wider than a
/// 64th of this): 1 MiB, touched only as rows fill it. The writer is woken
/// when it is half full, and each wake-up costs the stepping thread some
/// microseconds (a syscall, an interrupt to the other processor): with a
/// trace of two numbers a row written every step, builds with a ring of
/// 2^15 numbers stepped 2-5 % slower than with this one (the benchmark's
/// chain of 10, 2 * 10^6 steps, alternating runs), 2^12 about 10 %.
const RING_VALUES: usize = 1 << 17;

/// How one CSV column is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Column {
    /// A number in full `f64` round-trip precision; NaN (no value) as an
    /// empty cell, which a spreadsheet reads as blank rather than turning
    /// the column into text; `inf` and `-inf` for the infinite.
    Float,
    /// A discrete value carried exactly in the `f64`, as an integer (`3`,
    /// not `3.0`; Booleans 0 and 1).
    Integer,
    /// Always this text (the value is ignored).
    Text(&'static str),
    /// A string value given with the row (the number is ignored), quoted
    /// as CSV quotes text: `"a, ""b"""`.
    Str,
    /// A text given with the row (the number is ignored), written as it
    /// is: hexadecimal digits of a Binary value, an Int64 or UInt64 in
    /// decimal ([`crate::traced_text`]). Quoted as [`Column::Str`] should
    /// it hold a comma, a quote or a line break.
    Raw,
}

/// A write that failed, kept to report it to every caller.
#[derive(Debug, Clone)]
struct Failure {
    path: PathBuf,
    kind: std::io::ErrorKind,
    os: Option<i32>,
    text: String,
    /// The first field of the file's last complete row (NaN: none).
    t: f64,
}

impl Failure {
    fn new(path: &Path, error: &std::io::Error, t: f64) -> Failure {
        Failure {
            path: path.to_path_buf(),
            kind: error.kind(),
            os: error.raw_os_error(),
            text: error.to_string(),
            t,
        }
    }

    fn to_error(&self) -> CoreError {
        let error = match self.os {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(self.kind, self.text.clone()),
        };
        CoreError::OutputWrite {
            path: self.path.clone(),
            error,
            t: self.t,
        }
    }
}

/// Where a file's rows are kept besides (or instead of) the file: in
/// memory, as the file reads back ([`OutputsHandle::keep_table`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// In memory and in the file.
    AlsoInMemory,
    /// In memory only: no file is created.
    InMemoryOnly,
}

/// One CSV file: rows formatted into a buffer, written whole.
pub(crate) struct CsvFile {
    path: PathBuf,
    /// `None` once closed (after the last row, or after a failure), and
    /// for a file kept in memory only.
    file: Option<File>,
    /// Rows are taken: false once closed or failed.
    open: bool,
    /// The rows as the file reads back, where kept.
    table: Option<TableBuilder>,
    columns: Box<[Column]>,
    /// Formatted rows not yet written (complete rows only).
    buf: Vec<u8>,
    /// Bytes of the file, all complete rows.
    len: u64,
    /// The first field of the last complete row in the file.
    last_time: f64,
    number: zmij::Buffer,
    integer: itoa::Buffer,
}

impl CsvFile {
    /// Creates (truncates) the file and its directory, and writes the
    /// header. Failing to create either is an error now.
    pub(crate) fn create(path: &Path, header: &[String], columns: Vec<Column>) -> Result<Self> {
        Self::create_kept(path, header, columns, None)
    }

    /// As [`CsvFile::create`], its rows also (or only) kept in memory.
    pub(crate) fn create_kept(
        path: &Path,
        header: &[String],
        columns: Vec<Column>,
        kept: Option<Kept>,
    ) -> Result<Self> {
        let table = kept.map(|_| TableBuilder::new(header));
        if kept == Some(Kept::InMemoryOnly) {
            return Ok(CsvFile {
                path: path.to_path_buf(),
                file: None,
                open: true,
                table,
                columns: columns.into_boxed_slice(),
                buf: Vec::new(),
                len: 0,
                last_time: f64::NAN,
                number: zmij::Buffer::new(),
                integer: itoa::Buffer::new(),
            });
        }
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|error| CoreError::Output {
                path: dir.to_path_buf(),
                error,
            })?;
        }
        let file = File::create(path).map_err(|error| CoreError::Output {
            path: path.to_path_buf(),
            error,
        })?;
        let mut buf = Vec::with_capacity(1 << 16);
        for (i, name) in header.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            quote_field(name, &mut buf);
        }
        buf.push(b'\n');
        let mut csv = CsvFile {
            path: path.to_path_buf(),
            file: Some(file),
            open: true,
            table,
            columns: columns.into_boxed_slice(),
            buf,
            len: 0,
            last_time: f64::NAN,
            number: zmij::Buffer::new(),
            integer: itoa::Buffer::new(),
        };
        // The header at once: a run whose process dies before the writer's
        // first write (an FMU's segfault) leaves a file that reads as a
        // table without rows, not an empty one.
        csv.write_out().map_err(|f| match f.to_error() {
            CoreError::OutputWrite { path, error, .. } => CoreError::Output { path, error },
            other => other,
        })?;
        Ok(csv)
    }

    /// Number of columns.
    pub(crate) fn width(&self) -> usize {
        self.columns.len()
    }

    /// Appends one row (one value per column) to the buffer. Rows of a
    /// closed file are dropped.
    #[cfg(test)]
    pub(crate) fn format_row(&mut self, values: &[f64]) {
        self.format_row_text(values, &mut std::iter::empty());
    }

    /// As [`CsvFile::format_row`], the cells of [`Column::Str`] and
    /// [`Column::Raw`] columns taken from `texts` in order.
    pub(crate) fn format_row_text(
        &mut self,
        values: &[f64],
        texts: &mut dyn Iterator<Item = &str>,
    ) {
        if !self.open {
            return;
        }
        let to_file = self.file.is_some();
        for (i, (column, &v)) in self.columns.iter().zip(values).enumerate() {
            if let Some(table) = &mut self.table {
                match column {
                    Column::Float => table.push_number(i, v),
                    // (What the integer's text reads back as.)
                    Column::Integer => table.push_number(i, v as i64 as f64),
                    Column::Text(s) => table.push_text(i, s),
                    Column::Str | Column::Raw => {}
                }
            }
            if let Column::Str | Column::Raw = column {
                let text = texts.next().unwrap_or("");
                if let Some(table) = &mut self.table {
                    table.push_text(i, text);
                }
                if !to_file {
                    continue;
                }
                if i > 0 {
                    self.buf.push(b',');
                }
                if matches!(column, Column::Raw)
                    && !text
                        .bytes()
                        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
                {
                    self.buf.extend_from_slice(text.as_bytes());
                    continue;
                }
                self.buf.push(b'"');
                for &b in text.as_bytes() {
                    if b == b'"' {
                        self.buf.push(b'"');
                    }
                    self.buf.push(b);
                }
                self.buf.push(b'"');
                continue;
            }
            if !to_file {
                continue;
            }
            if i > 0 {
                self.buf.push(b',');
            }
            let text = match column {
                Column::Float if v.is_finite() => self.number.format_finite(v),
                Column::Float if v.is_nan() => "",
                Column::Float if v > 0.0 => "inf",
                Column::Float => "-inf",
                Column::Integer => self.integer.format(v as i64),
                Column::Text(s) => s,
                Column::Str | Column::Raw => "",
            };
            self.buf.extend_from_slice(text.as_bytes());
        }
        if to_file {
            self.buf.push(b'\n');
        }
    }

    /// The rows kept in memory (once): its path and the table, `None`
    /// where the file would not read back as one.
    fn take_table(&mut self) -> Option<(PathBuf, Option<Table>)> {
        let table = self.table.take()?;
        Some((self.path.clone(), table.finish()))
    }

    /// Bytes formatted and not yet written.
    pub(crate) fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Writes the buffered rows. On failure the file is cut back to its
    /// last complete row and closed; the failure is returned (once).
    fn write_out(&mut self) -> std::result::Result<(), Failure> {
        let Some(file) = self.file.as_mut() else {
            self.buf.clear();
            return Ok(());
        };
        let mut written = 0;
        let mut error = None;
        while written < self.buf.len() {
            match file.write(&self.buf[written..]) {
                Ok(0) => {
                    error = Some(std::io::Error::from(std::io::ErrorKind::WriteZero));
                    break;
                }
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        // The rows wholly written; a partial one is cut away.
        let complete = self.buf[..written]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        if let Some(t) = last_row_time(&self.buf[..complete]) {
            self.last_time = t;
        }
        self.len += complete as u64;
        self.buf.clear();
        match error {
            None => Ok(()),
            Some(e) => {
                if complete < written {
                    let _ = file.set_len(self.len);
                }
                self.file = None;
                self.open = false;
                Err(Failure::new(&self.path, &e, self.last_time))
            }
        }
    }

    /// Writes what is buffered and closes the file.
    fn close(&mut self) -> std::result::Result<(), Failure> {
        let result = self.write_out();
        self.file = None;
        self.open = false;
        result
    }

    /// For a file written from the stepping thread (no writer thread):
    /// writes the buffered rows now.
    pub(crate) fn flush_direct(&mut self) -> Result<()> {
        self.write_out().map_err(|f| f.to_error())
    }
}

/// The stepping thread's end of a file's own queue
/// ([`OutputsHandle::add_csv_ring`]): rows of numbers, each published
/// whole with one release store.
pub struct RowRing {
    producer: row_ring::RowProducer,
    shared: Arc<Shared>,
    /// Rows pushed since the last look at how full the ring is.
    since_look: u32,
}

impl std::fmt::Debug for RowRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowRing")
            .field("rows", &self.producer.rows())
            .finish_non_exhaustive()
    }
}

impl RowRing {
    /// Queues one row (one value per column). Waits only when the ring
    /// is full; refused as [`OutputsHandle::push_row`] is. (Inlined into
    /// the row's writer, the rare parts out of line: the call, its
    /// register saves and its general cases cost more than the copy of a
    /// row of a few numbers, every step of a traced quiet run.)
    #[inline(always)]
    pub fn push(&mut self, values: &[f64]) -> Result<()> {
        if self.shared.refusing.load(Ordering::Relaxed) {
            return Err(self.refusal());
        }
        if !self.producer.try_push(values) {
            self.wait_for_room(values)?;
        }
        // Every 64 rows, a look (an atomic load) at how full it is.
        self.since_look += 1;
        if self.since_look >= 64 {
            self.look();
        }
        Ok(())
    }

    /// [`RowRing::push`] of a row of numbers of the ring's width that
    /// `fill` writes straight into the ring's cells (a number's bits in
    /// each, relaxed; a trace's row on the quiet path,
    /// [`crate::observer::DirectRows`]). Where the ring is full, `fill`
    /// writes into `row` (the ring's width) instead, which then waits for
    /// room.
    #[inline(always)]
    pub fn push_with(&mut self, row: &mut [f64], fill: impl Fn(&[AtomicU64])) -> Result<()> {
        if self.shared.refusing.load(Ordering::Relaxed) {
            return Err(self.refusal());
        }
        if !self.producer.try_push_with(&fill) {
            let cells: smallvec::SmallVec<[AtomicU64; 16]> =
                row.iter().map(|_| AtomicU64::new(0)).collect();
            fill(&cells);
            for (v, c) in row.iter_mut().zip(&cells) {
                *v = f64::from_bits(c.load(Ordering::Relaxed));
            }
            self.wait_for_room(row)?;
        }
        self.since_look += 1;
        if self.since_look >= 64 {
            self.look();
        }
        Ok(())
    }

    /// Wakes the writer if the ring is half full: once per half-full
    /// ring, not at every look until it has drained it, since a wake-up
    /// costs the stepping thread microseconds (a syscall, an interrupt to
    /// the other processor). The writer clears the flag when it looks at
    /// the rings; a wake-up lost between its look and its wait is made up
    /// by `wait_for_room`, which wakes it under the lock.
    #[inline(never)]
    fn look(&mut self) {
        self.since_look = 0;
        if self.producer.look() * 2 < self.producer.rows()
            && !self.shared.ring_wake.swap(true, Ordering::Relaxed)
        {
            self.shared.wake_writer_for_rows();
        }
    }

    /// Why rows are refused: the write failure, or the files closed.
    #[cold]
    fn refusal(&self) -> CoreError {
        match &lock(&self.shared.state).failure {
            Some(f) => f.to_error(),
            None => closed_error(&self.shared.dir),
        }
    }

    /// A full ring: wakes the writer and waits until the row fits.
    #[cold]
    #[inline(never)]
    fn wait_for_room(&mut self, values: &[f64]) -> Result<()> {
        let mut st = lock(&self.shared.state);
        loop {
            if self.shared.refusing.load(Ordering::Relaxed) {
                drop(st);
                return Err(self.refusal());
            }
            if self.producer.try_push(values) {
                return Ok(());
            }
            st.producers_waiting += 1;
            self.shared.ring_wake.store(true, Ordering::Relaxed);
            self.shared.wake_writer_for_rows();
            // (With a timeout: the writer may have drained the ring
            // between the try and the wait.)
            st = self
                .shared
                .producer_wake
                .wait_timeout(st, Duration::from_millis(5))
                .map_or_else(|e| e.into_inner().0, |(g, _)| g);
            st.producers_waiting -= 1;
        }
    }
}

/// The first field of the last row of `rows` (complete rows), as a
/// number (the time, in every file cosim writes).
fn last_row_time(rows: &[u8]) -> Option<f64> {
    let body = rows.strip_suffix(b"\n")?;
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let row = &body[start..];
    let end = row.iter().position(|&b| b == b',').unwrap_or(row.len());
    std::str::from_utf8(&row[..end]).ok()?.parse().ok()
}

/// A header field, quoted when it needs to be (RFC 4180).
fn quote_field(s: &str, out: &mut Vec<u8>) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        for b in s.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// Rows waiting for the writer: their numbers back to back, and per row
/// its file and width.
#[derive(Default)]
struct Batch {
    values: Vec<f64>,
    /// Per row: its file, its number of values and of texts.
    rows: Vec<(u32, u32, u32)>,
    /// The texts of the rows' text cells ([`Column::Str`], [`Column::Raw`]),
    /// one after another.
    text: String,
    /// The end of each text in `text`.
    text_ends: Vec<usize>,
}

impl Batch {
    fn reserve(&mut self, cap: usize) {
        self.values.reserve(cap.saturating_sub(self.values.len()));
        self.rows.reserve(cap.saturating_sub(self.rows.len()));
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// The writer's end of a [`RowRing`].
struct RingReader {
    file: u32,
    consumer: row_ring::RowConsumer,
}

impl RingReader {
    /// Formats every row in the ring into its file.
    fn drain(&mut self, files: &mut [CsvFile], row: &mut Vec<f64>) {
        let mut file = files.get_mut(self.file as usize);
        self.consumer.drain(row, |values| {
            if let Some(f) = file.as_deref_mut() {
                f.format_row_text(values, &mut std::iter::empty());
            }
        });
    }
}

struct State {
    queue: Batch,
    /// Rings registered, not yet taken over by the writer.
    new_rings: Vec<RingReader>,
    /// Capacity of the queue, in numbers (and in rows).
    cap: usize,
    /// Files registered, not yet taken over by the writer.
    new_files: Vec<CsvFile>,
    files: u32,
    /// The writer was woken for a half-full queue.
    wake_sent: bool,
    producers_waiting: usize,
    flush_requested: u64,
    flush_done: u64,
    close_requested: bool,
    closed: bool,
    writer_gone: bool,
    failure: Option<Failure>,
    /// Warn once when the files pass this many bytes, with this advice
    /// (taken over by the writer).
    size_warning: Option<(u64, String)>,
    /// Files whose rows are kept in memory ([`OutputsHandle::keep_table`]).
    kept: Vec<(PathBuf, Kept)>,
    /// Their tables, once the files are closed.
    tables: Vec<(PathBuf, Option<Table>)>,
}

/// The summary file: its path, the reserved temporary file, the summary
/// to fall back on (for [`OutputsHandle::summary_now`]), and whether one
/// was written.
struct SummarySlot {
    path: Option<PathBuf>,
    reserve: Option<(PathBuf, File)>,
    template: Option<RunSummary>,
    stepping_since: Option<Instant>,
    written: bool,
    /// The status of the first summary written (or that would have been,
    /// without a summary file): the run had ended.
    ended: Option<RunStatus>,
}

struct Shared {
    state: Mutex<State>,
    /// Set with the state's `failure`, `close_requested` or `writer_gone`:
    /// a ring's producer looks at this, not the lock, for every row.
    refusing: AtomicBool,
    /// A ring is half full: the writer is to write now.
    ring_wake: AtomicBool,
    writer_wake: Condvar,
    /// The processor of the thread that last woke the writer (the
    /// stepping thread), which the writer keeps off
    /// ([`crate::placement`]); `usize::MAX` before the first.
    waker_cpu: AtomicUsize,
    producer_wake: Condvar,
    summary: Mutex<SummarySlot>,
    /// The last completed communication point, as `f64` bits.
    t_reached: AtomicU64,
    /// Accepted macro steps so far.
    macro_steps: AtomicU64,
    dir: PathBuf,
}

impl Shared {
    /// Wakes the writer for rows the calling (stepping) thread made, and
    /// tells it that thread's processor, to be kept off.
    fn wake_writer_for_rows(&self) {
        self.waker_cpu.store(current_cpu(), Ordering::Relaxed);
        self.writer_wake.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The output files of one run and their writer thread. Dropping it
/// writes every queued row and closes the files.
pub struct Outputs {
    handle: OutputsHandle,
}

/// Writer threads whose outputs are closed, each waiting for the outputs
/// of the next run: a process that makes run after run (a sweep's
/// worker) starts one thread, not one per run (its start and end were a
/// tenth of a short run's time).
static IDLE_WRITERS: Mutex<Vec<std::sync::mpsc::Sender<Arc<Shared>>>> = Mutex::new(Vec::new());

/// Hands `shared` to an idle writer thread, or starts one.
fn start_writer(shared: Arc<Shared>) -> std::io::Result<()> {
    let mut shared = shared;
    loop {
        let idle = lock(&IDLE_WRITERS).pop();
        let Some(writer) = idle else { break };
        match writer.send(shared) {
            Ok(()) => return Ok(()),
            // (Not waiting any more: try the next one.)
            Err(std::sync::mpsc::SendError(s)) => shared = s,
        }
    }
    let (tx, rx) = std::sync::mpsc::channel::<Arc<Shared>>();
    std::thread::Builder::new()
        .name("cosim-outputs".into())
        .spawn(move || {
            let mut placement = KeepOff::of_current_thread();
            let mut next = Some(shared);
            while let Some(outputs) = next.take() {
                write_loop(&outputs, &mut placement);
                drop(outputs);
                lock(&IDLE_WRITERS).push(tx.clone());
                next = rx.recv().ok();
            }
        })
        .map(drop)
}

/// The outputs of a run seen from any thread (clone it freely).
///
/// For a watchdog: while the stepping thread is stuck inside an FMU call,
/// [`OutputsHandle::summary_now`] gives the summary as far as the run got
/// and [`OutputsHandle::finish_now`] writes every queued row, closes the
/// files and writes that summary, without the stepping thread.
#[derive(Clone)]
pub struct OutputsHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OutputsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputsHandle")
            .field("dir", &self.shared.dir)
            .finish()
    }
}

impl Outputs {
    /// Starts the writer for outputs in `dir`, with the summary (if any)
    /// at `summary`. A summary left there by an earlier run is removed:
    /// a summary present after this run is this run's.
    pub fn new(dir: &Path, summary: Option<PathBuf>) -> Result<Outputs> {
        if let Some(path) = &summary {
            use std::io::ErrorKind::{NotADirectory, NotFound};
            match std::fs::remove_file(path) {
                Err(e) if !matches!(e.kind(), NotFound | NotADirectory) => {
                    return Err(CoreError::Output {
                        path: path.clone(),
                        error: e,
                    });
                }
                _ => {}
            }
        }
        let shared = Arc::new(Shared {
            refusing: AtomicBool::new(false),
            ring_wake: AtomicBool::new(false),
            state: Mutex::new(State {
                queue: Batch::default(),
                new_rings: Vec::new(),
                cap: QUEUE_VALUES,
                new_files: Vec::new(),
                files: 0,
                wake_sent: false,
                producers_waiting: 0,
                flush_requested: 0,
                flush_done: 0,
                close_requested: false,
                closed: false,
                writer_gone: false,
                failure: None,
                size_warning: None,
                kept: Vec::new(),
                tables: Vec::new(),
            }),
            writer_wake: Condvar::new(),
            waker_cpu: AtomicUsize::new(usize::MAX),
            producer_wake: Condvar::new(),
            summary: Mutex::new(SummarySlot {
                path: summary,
                reserve: None,
                template: None,
                stepping_since: None,
                written: false,
                ended: None,
            }),
            t_reached: AtomicU64::new(f64::NAN.to_bits()),
            macro_steps: AtomicU64::new(0),
            dir: dir.to_path_buf(),
        });
        lock(&shared.state).queue.reserve(QUEUE_VALUES);
        start_writer(Arc::clone(&shared)).map_err(|error| CoreError::Output {
            path: dir.to_path_buf(),
            error,
        })?;
        Ok(Outputs {
            handle: OutputsHandle { shared },
        })
    }

    /// A handle for other threads (and for the observers).
    pub fn handle(&self) -> OutputsHandle {
        self.handle.clone()
    }
}

impl std::ops::Deref for Outputs {
    type Target = OutputsHandle;
    fn deref(&self) -> &OutputsHandle {
        &self.handle
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        // (Returns once the writer has closed every file, or is gone.)
        let _ = self.handle.close_files();
    }
}

impl OutputsHandle {
    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Keeps the rows of the file at `path` in memory as it reads back
    /// (and, with [`Kept::InMemoryOnly`], creates no file): a sweep's
    /// metrics take them from [`OutputsHandle::take_tables`] instead of
    /// reading the file again. For files registered after this call.
    pub fn keep_table(&self, path: &Path, kept: Kept) {
        lock(&self.shared.state)
            .kept
            .push((path.to_path_buf(), kept));
    }

    /// The tables of the files kept in memory, once they are closed
    /// ([`OutputsHandle::close_files`]), each with its file's path; `None`
    /// for one whose file would not read back as a table of numbers
    /// ([`crate::metrics::Table::read`]). Taken once.
    pub fn take_tables(&self) -> Vec<(PathBuf, Option<Table>)> {
        std::mem::take(&mut lock(&self.shared.state).tables)
    }

    fn create_file(&self, path: &Path, header: &[String], columns: Vec<Column>) -> Result<CsvFile> {
        let kept = lock(&self.shared.state)
            .kept
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, k)| *k);
        CsvFile::create_kept(path, header, columns, kept)
    }

    /// Registers a CSV file (created now, header queued); its rows are
    /// pushed with [`OutputsHandle::push_row`] under the returned id.
    pub fn add_csv(&self, path: &Path, header: &[String], columns: Vec<Column>) -> Result<u32> {
        let file = self.create_file(path, header, columns)?;
        let mut st = lock(&self.shared.state);
        if st.close_requested {
            return Err(closed_error(&self.shared.dir));
        }
        let width = file.width();
        if width * 4 > st.cap {
            st.cap = width * 4;
            let cap = st.cap;
            st.queue.reserve(cap);
        }
        let id = st.files;
        st.files += 1;
        st.new_files.push(file);
        Ok(id)
    }

    /// Registers a CSV file of numbers only (created now, header written)
    /// whose rows go through a ring of their own ([`RowRing`]).
    pub fn add_csv_ring(
        &self,
        path: &Path,
        header: &[String],
        columns: Vec<Column>,
    ) -> Result<RowRing> {
        let rows = (RING_VALUES / header.len().max(1)).max(64);
        self.add_csv_ring_of(path, header, columns, rows)
    }

    /// [`OutputsHandle::add_csv_ring`] with a ring of `rows` rows.
    fn add_csv_ring_of(
        &self,
        path: &Path,
        header: &[String],
        columns: Vec<Column>,
        rows: usize,
    ) -> Result<RowRing> {
        let file = self.create_file(path, header, columns)?;
        let (producer, consumer) = row_ring::row_ring(file.width(), rows);
        let mut st = lock(&self.shared.state);
        if st.close_requested {
            return Err(closed_error(&self.shared.dir));
        }
        let id = st.files;
        st.files += 1;
        st.new_files.push(file);
        st.new_rings.push(RingReader { file: id, consumer });
        Ok(RowRing {
            producer,
            shared: Arc::clone(&self.shared),
            since_look: 0,
        })
    }

    /// Queues one row of file `file` (one value per column). Nothing is
    /// allocated or formatted here; the call waits only when the queue is
    /// full. Refused with the write failure once a write has failed, and
    /// after [`OutputsHandle::close_files`].
    #[inline]
    pub fn push_row(&self, file: u32, values: &[f64]) -> Result<()> {
        self.push_row_text(file, values, &[])
    }

    /// As [`OutputsHandle::push_row`], with the texts of the row's text
    /// cells ([`Column::Str`], [`Column::Raw`]) in column order (copied into the queue's text
    /// buffer, which grows to the longest rows once).
    #[inline]
    pub fn push_row_text(&self, file: u32, values: &[f64], texts: &[String]) -> Result<()> {
        let n = values.len();
        let mut st = lock(&self.shared.state);
        loop {
            if let Some(f) = &st.failure {
                return Err(f.to_error());
            }
            if st.close_requested || st.writer_gone {
                return Err(closed_error(&self.shared.dir));
            }
            if st.queue.values.len() + n <= st.cap && st.queue.rows.len() < st.cap {
                break;
            }
            st.producers_waiting += 1;
            self.shared.wake_writer_for_rows();
            st = self
                .shared
                .producer_wake
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
            st.producers_waiting -= 1;
        }
        st.queue.values.extend_from_slice(values);
        for t in texts {
            st.queue.text.push_str(t);
            let end = st.queue.text.len();
            st.queue.text_ends.push(end);
        }
        st.queue.rows.push((file, n as u32, texts.len() as u32));
        if !st.wake_sent && st.queue.values.len() * 2 >= st.cap {
            st.wake_sent = true;
            drop(st);
            self.shared.wake_writer_for_rows();
        }
        Ok(())
    }

    /// Writes every row queued so far and waits until it is written.
    pub fn flush(&self) -> Result<()> {
        let mut st = lock(&self.shared.state);
        st.flush_requested += 1;
        let wanted = st.flush_requested;
        self.shared.wake_writer_for_rows();
        while st.flush_done < wanted && !st.closed && !st.writer_gone {
            st = self
                .shared
                .producer_wake
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        match &st.failure {
            Some(f) => Err(f.to_error()),
            None => Ok(()),
        }
    }

    /// Writes every row queued so far, closes every CSV file and refuses
    /// later rows; waits until done. The first write failure of the run,
    /// if any, is returned (every call returns it).
    pub fn close_files(&self) -> Result<()> {
        let mut st = lock(&self.shared.state);
        st.close_requested = true;
        self.shared.refusing.store(true, Ordering::Relaxed);
        self.shared.writer_wake.notify_one();
        while !st.closed && !st.writer_gone {
            st = self
                .shared
                .producer_wake
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        match &st.failure {
            Some(f) => Err(f.to_error()),
            None => Ok(()),
        }
    }

    /// Makes the writer thread warn once (a `tracing` warning) when the
    /// files it has written pass `bytes` in all, naming the size, the time
    /// of the last row and `advice`: for a run whose size could not be
    /// told before it started (an adaptive master).
    pub fn warn_above(&self, bytes: u64, advice: &str) {
        lock(&self.shared.state).size_warning = Some((bytes, advice.to_string()));
        self.shared.writer_wake.notify_one();
    }

    /// The stepping thread's progress: after each accepted step, its end
    /// time and the number of steps (two relaxed stores).
    #[inline]
    pub fn record_step(&self, t: f64, macro_steps: u64) {
        self.shared.t_reached.store(t.to_bits(), Ordering::Relaxed);
        self.shared
            .macro_steps
            .store(macro_steps, Ordering::Relaxed);
    }

    /// The last completed communication point and the number of accepted
    /// macro steps (NaN and 0 before the first).
    pub fn progress(&self) -> (f64, u64) {
        (
            f64::from_bits(self.shared.t_reached.load(Ordering::Relaxed)),
            self.shared.macro_steps.load(Ordering::Relaxed),
        )
    }

    /// The summary the run would have now (for [`Self::finish_now`]):
    /// what the run loop recorded when it started stepping (master, times,
    /// subsystems and their calls then, bonds), with `status`, `message`,
    /// the time and steps reached and the wall time since stepping began.
    /// `None` before the run loop started.
    pub fn summary_now(&self, status: RunStatus, message: Option<String>) -> Option<RunSummary> {
        let slot = lock(&self.shared.summary);
        let mut s = slot.template.clone()?;
        let (t, steps) = self.progress();
        s.status = status;
        s.message = message;
        if steps > 0 && t.is_finite() {
            s.t_reached = t;
            s.stats.macro_steps = steps;
            s.mean_step = (t - s.t_start) / steps as f64;
        }
        if let Some(since) = slot.stepping_since {
            s.wall_time_s = since.elapsed().as_secs_f64();
        }
        Some(s)
    }

    /// Ends every output now, from any thread, even while the stepping
    /// thread is stuck in an FMU call: writes every row queued so far
    /// (each file ends on its last complete row), closes the files,
    /// refuses any later row, and writes `summary` atomically. The first
    /// summary written wins: the run loop's own, should the call ever
    /// return, is not written over it. Returns once everything is on disk,
    /// with the first write failure if any.
    pub fn finish_now(&self, summary: &RunSummary) -> Result<()> {
        let closed = self.close_files();
        let mut summary = summary.clone();
        if let Err(e) = &closed
            && summary.status != RunStatus::Error
        {
            summary.status = RunStatus::Error;
            summary.message = Some(e.to_string());
        }
        let written = self.write_summary(&summary);
        closed.and(written.map(|_| ()))
    }

    /// The status of the summary written, once one is: the run had ended
    /// (every output and the summary on disk) and what remains is freeing
    /// its FMUs. `None` while the run goes on, and after a summary that
    /// could not be written.
    pub fn ended(&self) -> Option<RunStatus> {
        lock(&self.shared.summary).ended
    }

    /// Called by the run loop with the summary as it stands (before
    /// initialization, then when stepping starts): kept for
    /// [`Self::summary_now`], and the summary's space is reserved.
    pub fn set_summary_template(&self, summary: &RunSummary, stepping: bool) {
        let mut slot = lock(&self.shared.summary);
        if stepping {
            slot.stepping_since = Some(Instant::now());
        }
        if slot.reserve.is_none()
            && let Some(path) = slot.path.clone()
        {
            let size = serde_json::to_string_pretty(summary).map_or(0, |t| t.len());
            slot.reserve = reserve(&path, (4 * size).max(16 << 10));
        }
        slot.template = Some(summary.clone());
    }

    /// Writes the summary file atomically (a temporary file in the same
    /// directory, renamed), unless one was already written (then
    /// `Ok(false)`) or none is configured.
    pub fn write_summary(&self, summary: &RunSummary) -> Result<bool> {
        let mut slot = lock(&self.shared.summary);
        if slot.written {
            return Ok(false);
        }
        let Some(path) = slot.path.clone() else {
            slot.ended.get_or_insert(summary.status);
            return Ok(false);
        };
        let error = |error| CoreError::Output {
            path: path.clone(),
            error,
        };
        let text = serde_json::to_string_pretty(summary)
            .map_err(|e| error(std::io::Error::other(e)))?
            + "\n";
        let reserved = slot.reserve.take();
        let tmp = reserved
            .as_ref()
            .map_or_else(|| temporary_path(&path), |(p, _)| p.clone());
        let result = (|| {
            let mut file = match reserved {
                Some((_, file)) => file,
                None => {
                    if let Some(dir) = path.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    File::create(&tmp)?
                }
            };
            // Over the reserved blocks: no new space is needed.
            file.seek(SeekFrom::Start(0))?;
            file.write_all(text.as_bytes())?;
            file.set_len(text.len() as u64)?;
            drop(file);
            std::fs::rename(&tmp, &path)
        })();
        match result {
            Ok(()) => {
                slot.written = true;
                slot.ended.get_or_insert(summary.status);
                Ok(true)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(error(e))
            }
        }
    }
}

/// `1.0 GB`, `250 MB`: a size for messages (decimal units).
fn size_text(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

/// `.summary.json.tmp` beside `summary.json`.
fn temporary_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "summary".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp"))
}

/// Creates the summary's temporary file holding `size` bytes, so that the
/// summary can be written when the device is full. `None` when that
/// fails (the summary is then written without a reserve).
fn reserve(path: &Path, size: usize) -> Option<(PathBuf, File)> {
    let tmp = temporary_path(path);
    let attempt = || -> std::io::Result<File> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = File::create(&tmp)?;
        file.write_all(&vec![b' '; size])?;
        Ok(file)
    };
    match attempt() {
        Ok(file) => Some((tmp, file)),
        Err(_) => {
            let _ = std::fs::remove_file(&tmp);
            None
        }
    }
}

fn closed_error(dir: &Path) -> CoreError {
    CoreError::Output {
        path: dir.to_path_buf(),
        error: std::io::Error::other("the outputs were closed (the run was ended from outside)"),
    }
}

/// Marks the writer gone (waking anyone waiting on it) however its loop
/// ends.
struct Gone<'a>(&'a Shared);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).writer_gone = true;
        self.0.refusing.store(true, Ordering::Relaxed);
        self.0.producer_wake.notify_all();
    }
}

/// The writer thread: takes the queue when it is due, formats the rows,
/// writes each file's rows whole; on close, writes the rest and closes.
fn write_loop(shared: &Shared, placement: &mut KeepOff) {
    let _gone = Gone(shared);
    let mut files: Vec<CsvFile> = Vec::new();
    let mut rings: Vec<RingReader> = Vec::new();
    let mut ring_row: Vec<f64> = Vec::new();
    let mut batch = Batch::default();
    let mut last_write = Instant::now();
    let mut size_warning: Option<(u64, String)> = None;
    loop {
        let mut st = lock(&shared.state);
        loop {
            let work = !st.queue.is_empty()
                || !st.new_files.is_empty()
                || rings.iter().any(|r| r.consumer.waiting() > 0);
            let ring_wake = shared.ring_wake.swap(false, Ordering::Relaxed);
            // (A producer still counted as waiting after the swap has not
            // woken up yet: an empty queue is no reason to swap again.)
            let urgent = (work && (st.wake_sent || ring_wake || st.producers_waiting > 0))
                || st.flush_requested > st.flush_done
                || st.close_requested;
            let elapsed = last_write.elapsed();
            if urgent || (work && elapsed >= WRITE_PERIOD) {
                break;
            }
            let wait = if work {
                WRITE_PERIOD - elapsed
            } else {
                WRITE_PERIOD
            };
            st = shared
                .writer_wake
                .wait_timeout(st, wait)
                .map_or_else(|e| e.into_inner().0, |(g, _)| g);
        }
        if let Some(w) = st.size_warning.take() {
            size_warning = Some(w);
        }
        batch.reserve(st.cap);
        std::mem::swap(&mut st.queue, &mut batch);
        st.wake_sent = false;
        files.append(&mut st.new_files);
        rings.append(&mut st.new_rings);
        let flush = st.flush_requested;
        let close = st.close_requested;
        let producers = st.producers_waiting > 0;
        drop(st);
        if producers {
            shared.producer_wake.notify_all();
        }
        // (Moving off the stepping thread's processor before the work,
        // not under the lock.)
        placement.avoid(shared.waker_cpu.load(Ordering::Relaxed));

        let mut offset = 0;
        let mut text_index = 0;
        for &(file, n, n_text) in &batch.rows {
            let n = n as usize;
            let texts = text_index..text_index + n_text as usize;
            text_index = texts.end;
            if let Some(f) = files.get_mut(file as usize) {
                let mut parts = texts.map(|k| {
                    let start = if k == 0 { 0 } else { batch.text_ends[k - 1] };
                    &batch.text[start..batch.text_ends[k]]
                });
                f.format_row_text(&batch.values[offset..offset + n], &mut parts);
            }
            offset += n;
        }
        batch.values.clear();
        batch.rows.clear();
        batch.text.clear();
        batch.text_ends.clear();
        for r in &mut rings {
            r.drain(&mut files, &mut ring_row);
        }
        let mut failure = None;
        for f in &mut files {
            let result = if close { f.close() } else { f.write_out() };
            if let Err(e) = result {
                failure.get_or_insert(e);
            }
        }
        let tables: Vec<_> = if close {
            files.iter_mut().filter_map(CsvFile::take_table).collect()
        } else {
            Vec::new()
        };
        last_write = Instant::now();
        if let Some((limit, advice)) = &size_warning {
            let total: u64 = files.iter().map(|f| f.len).sum();
            if total > *limit {
                let t = files
                    .iter()
                    .map(|f| f.last_time)
                    .filter(|t| t.is_finite())
                    .fold(f64::NAN, f64::max);
                tracing::warn!(
                    "the outputs in {} have passed {} ({total} bytes) at t = {t} s, and grow with every step; {advice}",
                    shared.dir.display(),
                    size_text(*limit),
                );
                size_warning = None;
            }
        }

        let mut st = lock(&shared.state);
        if let Some(f) = failure
            && st.failure.is_none()
        {
            st.failure = Some(f);
            shared.refusing.store(true, Ordering::Relaxed);
        }
        st.flush_done = flush;
        if close {
            st.tables.extend(tables);
            st.closed = true;
        }
        drop(st);
        shared.producer_wake.notify_all();
        if close {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn header(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("c{i}")).collect()
    }

    fn bits(t: &Table) -> Vec<Vec<u64>> {
        t.columns
            .iter()
            .map(|c| c.iter().map(|v| v.to_bits()).collect())
            .collect()
    }

    #[test]
    fn a_table_kept_in_memory_is_its_file_read_back_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        let (on_disk, in_memory) = (dir.path().join("t.csv"), dir.path().join("m.csv"));
        let ring_path = dir.path().join("r.csv");
        let outputs = Outputs::new(dir.path(), None).unwrap();
        outputs.keep_table(&on_disk, Kept::AlsoInMemory);
        outputs.keep_table(&in_memory, Kept::InMemoryOnly);
        outputs.keep_table(&ring_path, Kept::AlsoInMemory);
        let header: Vec<String> = ["time [s]", "x [m]", "n", "s", "r", "k"]
            .map(String::from)
            .to_vec();
        let columns = vec![
            Column::Float,
            Column::Float,
            Column::Integer,
            Column::Str,
            Column::Raw,
            Column::Text("true"),
        ];
        let a = outputs.add_csv(&on_disk, &header, columns.clone()).unwrap();
        let b = outputs.add_csv(&in_memory, &header, columns).unwrap();
        let numbers = header[..3].to_vec();
        let mut ring = outputs
            .add_csv_ring(
                &ring_path,
                &numbers,
                vec![Column::Float, Column::Float, Column::Integer],
            )
            .unwrap();
        let rows = [
            ([0.0, 0.1, 3.0], ["1.5", "00"]),
            ([1.0 / 3.0, -0.0, -7.9], ["true", ""]),
            ([0.5, f64::NAN, 2f64.powi(60) + 4096.0], [" 2 ", "1e-3"]),
            ([0.5, f64::INFINITY, f64::NAN], ["false", "-0"]),
            ([1e300, f64::NEG_INFINITY, -1.0], ["", "4.9e-324"]),
            ([1e300, 5e-324, 0.0], ["2.5e0", "7"]),
        ];
        for (values, texts) in &rows {
            let v = [values[0], values[1], values[2], 0.0, 0.0, 0.0];
            let texts = texts.map(String::from);
            outputs.push_row_text(a, &v, &texts).unwrap();
            outputs.push_row_text(b, &v, &texts).unwrap();
            ring.push(values).unwrap();
        }
        outputs.close_files().unwrap();
        let tables = outputs.take_tables();
        assert_eq!(tables.len(), 3);
        assert!(
            !in_memory.exists(),
            "a file kept in memory only is not created"
        );
        let read = Table::read(&on_disk).unwrap();
        for (path, table) in &tables {
            let table = table.as_ref().unwrap();
            let file = if path == &ring_path {
                &ring_path
            } else {
                &on_disk
            };
            let read = Table::read(file).unwrap();
            assert_eq!(table.names, read.names, "{}", path.display());
            assert_eq!(bits(table), bits(&read), "{}", path.display());
        }
        // (The cells the file holds: the 2^60 + 4096 integer, a text.)
        assert_eq!(read.columns[2][2], 2f64.powi(60) + 4096.0);
        assert_eq!(read.columns[3][5], 2.5);
        assert!(outputs.take_tables().is_empty(), "taken once");
    }

    #[test]
    fn rows_written_into_a_ring_reach_the_file_whole_and_in_order_also_when_it_fills() {
        // A ring of 64 rows, filled faster than the writer drains it: rows
        // written into its cells, and rows waiting for room.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let outputs = Outputs::new(dir.path(), None).unwrap();
        let mut ring = outputs
            .add_csv_ring_of(&path, &header(3), vec![Column::Float; 3], 64)
            .unwrap();
        let value = |k: u64, c: usize| match c {
            0 => k as f64,
            1 => f64::from_bits(0x3ff0_0000_0000_0000 + k * 7919),
            _ => -(k as f64) / 3.0,
        };
        let mut row = [0.0; 3];
        for k in 0..5000u64 {
            if k % 2 == 0 {
                ring.push_with(&mut row, |cells| {
                    for (c, cell) in cells.iter().enumerate() {
                        cell.store(value(k, c).to_bits(), Ordering::Relaxed);
                    }
                })
                .unwrap();
            } else {
                ring.push(&[value(k, 0), value(k, 1), value(k, 2)]).unwrap();
            }
        }
        outputs.close_files().unwrap();
        let read = Table::read(&path).unwrap();
        assert_eq!(read.columns[0].len(), 5000);
        for k in 0..5000u64 {
            for c in 0..3 {
                assert_eq!(
                    read.columns[c][k as usize].to_bits(),
                    value(k, c).to_bits(),
                    "row {k} column {c}"
                );
            }
        }
    }

    #[test]
    fn a_kept_table_the_file_would_not_read_back_as_is_none() {
        for (values, text) in [
            // A text that is no number.
            ([0.0, 1.0], "abc"),
            // A time that is not finite.
            ([f64::NAN, 1.0], "1"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.csv");
            let outputs = Outputs::new(dir.path(), None).unwrap();
            outputs.keep_table(&path, Kept::AlsoInMemory);
            let f = outputs
                .add_csv(
                    &path,
                    &header(3),
                    vec![Column::Float, Column::Float, Column::Str],
                )
                .unwrap();
            outputs
                .push_row_text(f, &[0.0, 0.0, 0.0], &["2".into()])
                .unwrap();
            outputs
                .push_row_text(f, &[values[0], values[1], 0.0], &[text.into()])
                .unwrap();
            outputs.close_files().unwrap();
            assert!(Table::read(&path).is_err());
            assert!(outputs.take_tables()[0].1.is_none(), "{values:?} {text}");
        }
        // A time that goes back.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let outputs = Outputs::new(dir.path(), None).unwrap();
        outputs.keep_table(&path, Kept::AlsoInMemory);
        let f = outputs
            .add_csv(&path, &header(1), vec![Column::Float])
            .unwrap();
        outputs.push_row(f, &[1.0]).unwrap();
        outputs.push_row(f, &[0.5]).unwrap();
        outputs.close_files().unwrap();
        assert!(Table::read(&path).is_err());
        assert!(outputs.take_tables()[0].1.is_none());
    }

    #[test]
    fn rows_are_written_whole_and_in_order_per_file() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = Outputs::new(dir.path(), None).unwrap();
        let a = outputs
            .add_csv(
                &dir.path().join("a.csv"),
                &header(3),
                vec![Column::Float, Column::Integer, Column::Text("true")],
            )
            .unwrap();
        let b = outputs
            .add_csv(
                &dir.path().join("sub/b.csv"),
                &["time".into(), "x, \"y\"".into()],
                vec![Column::Float; 2],
            )
            .unwrap();
        for i in 0..100_000 {
            let t = f64::from(i) * 0.001;
            outputs.push_row(a, &[t, 3.0, 0.0]).unwrap();
            outputs.push_row(b, &[t, f64::NAN]).unwrap();
        }
        outputs.close_files().unwrap();
        let a = std::fs::read_to_string(dir.path().join("a.csv")).unwrap();
        let lines: Vec<&str> = a.lines().collect();
        assert_eq!(lines.len(), 100_001);
        assert_eq!(lines[0], "c0,c1,c2");
        assert_eq!(lines[1], "0.0,3,true");
        assert_eq!(lines[100_000], "99.999,3,true");
        let b = std::fs::read_to_string(dir.path().join("sub/b.csv")).unwrap();
        assert!(
            b.starts_with("time,\"x, \"\"y\"\"\"\n0.0,\n"),
            "{}",
            &b[..40]
        );
        assert!(b.ends_with("99.999,\n"));
        // Closed: later rows are refused.
        assert!(outputs.push_row(0, &[1.0, 1.0, 1.0]).is_err());
    }

    /// Every finite number is written in its shortest exact form: it reads
    /// back as the same `f64`, with as many significant digits as Rust's
    /// own shortest form (`{:e}`), plain from 1e-5 to below 1e16 and with
    /// an exponent outside.
    #[test]
    fn numbers_are_written_in_their_shortest_exact_form() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        let mut file = CsvFile::create(&path, &header(1), vec![Column::Float]).unwrap();
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            0.001,
            1e-5,
            9.999e-6,
            1e15,
            1e16,
            -2.5e300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            0.1 + 0.2,
        ];
        // Bit patterns from a xorshift generator: every exponent range.
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        while values.len() < 20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f64::from_bits(s);
            if x.is_finite() {
                values.push(x);
            }
        }
        for &v in &values {
            file.format_row(&[v]);
        }
        file.flush_direct().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(lines.len(), values.len());
        let digits = |s: &str| -> String {
            let mantissa = s.split(['e', 'E']).next().unwrap();
            let d: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            let d = d.trim_start_matches('0').trim_end_matches('0');
            if d.is_empty() { "0".into() } else { d.into() }
        };
        for (&v, line) in values.iter().zip(&lines) {
            let back: f64 = line.parse().unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{v:e} written as {line}");
            // As many significant digits as Rust's shortest form (the last
            // may differ where two are equally near).
            let (ours, rust) = (digits(line), digits(&format!("{v:e}")));
            assert_eq!(ours.len(), rust.len(), "{v:e} written as {line}");
            let a = v.abs();
            let plain = a == 0.0 || (1e-5..1e16).contains(&a);
            assert_eq!(!line.contains('e'), plain, "{v:e} written as {line}");
        }
        assert_eq!(&lines[..4], ["0.0", "-0.0", "1.0", "0.001"]);
        assert_eq!(lines[7], "1e+16");
    }

    #[test]
    fn rows_reach_the_file_within_the_write_period_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = Outputs::new(dir.path(), None).unwrap();
        let path = dir.path().join("a.csv");
        let id = outputs
            .add_csv(&path, &header(2), vec![Column::Float; 2])
            .unwrap();
        outputs.push_row(id, &[0.5, 1.0]).unwrap();
        // The stepping thread does nothing more (a step that hangs).
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(&path).unwrap();
            if text == "c0,c1\n0.5,1.0\n" {
                break;
            }
            assert!(Instant::now() < deadline, "{text:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_failed_write_is_cut_back_to_the_last_complete_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        let mut file = CsvFile::create(&path, &header(2), vec![Column::Float; 2]).unwrap();
        file.format_row(&[0.25, 1.0]);
        file.flush_direct().unwrap();
        // A full device: the write fails part way. A file opened read-only
        // refuses every write, which is the same from the file's view: the
        // complete rows stay, nothing after them.
        file.file = Some(File::open(&path).unwrap());
        file.format_row(&[0.5, 2.0]);
        let e = file.flush_direct().unwrap_err();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "c0,c1\n0.25,1.0\n");
        match e {
            CoreError::OutputWrite { path: p, t, .. } => {
                assert_eq!(p, path);
                assert_eq!(t, 0.25);
            }
            other => panic!("{other}"),
        }
        // Closed: later rows are dropped, not written.
        file.format_row(&[0.75, 3.0]);
        file.flush_direct().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "c0,c1\n0.25,1.0\n");
    }

    #[test]
    fn the_summary_is_written_once_atomically_and_the_first_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        std::fs::write(&path, "stale").unwrap();
        let outputs = Outputs::new(dir.path(), Some(path.clone())).unwrap();
        assert!(!path.exists(), "a stale summary is removed");
        let template = RunSummary {
            status: RunStatus::Completed,
            message: None,
            ended_by: None,
            master: "fixed-step".into(),
            t_start: 0.0,
            t_stop: 1.0,
            t_reached: 0.0,
            wall_time_s: 0.0,
            init_time_s: 0.0,
            initialized: true,
            stats: Default::default(),
            mean_step: f64::NAN,
            max_indicator: f64::NAN,
            min_step: f64::NAN,
            max_step: f64::NAN,
            calls: Default::default(),
            subsystems: Vec::new(),
            bonds: Vec::new(),
            sampling: None,
            real_time: None,
        };
        outputs.set_summary_template(&template, true);
        let tmp = dir.path().join(".summary.json.tmp");
        assert!(std::fs::metadata(&tmp).unwrap().len() >= 16 << 10);
        outputs.record_step(0.5, 5);
        let now = outputs
            .summary_now(RunStatus::Error, Some("hung".into()))
            .unwrap();
        assert_eq!((now.t_reached, now.stats.macro_steps), (0.5, 5));
        outputs.finish_now(&now).unwrap();
        assert!(!tmp.exists());
        let text = std::fs::read_to_string(&path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["status"], "error");
        assert_eq!(json["message"], "hung");
        // The run loop's own summary, later, is not written over it.
        assert!(!outputs.write_summary(&template).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
}
