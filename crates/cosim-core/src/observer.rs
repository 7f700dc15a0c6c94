//! Observers record a run: the trace CSV, the per-bond energy log, the step
//! log. They see the system after initialization and after the accepted
//! macro steps at which they are due ([`Observer::due`]: every one, unless
//! an observer says otherwise), never a rejected attempt.
//!
//! Observers copy each row's numbers to the run's writer thread
//! ([`crate::output`]), which formats them (full `f64` round-trip
//! precision, shortest representation, `.` decimal separator; counts as
//! integers; a value that is not a number as an empty cell) and writes
//! them whole: nothing is formatted or written on the stepping thread, and
//! every file ends on a complete row whatever stops the run.
//!
//! One time convention in every file (`docs/outputs.md`): a row is at the
//! END of the step it describes (`time [s]`), the step logs add its start
//! (`t_start [s]`) and size (`step [s]`); every header names its unit.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::error::{CoreError, Result};
use crate::indicators::EnergyAccount;
use crate::master::{StepFields, StepReport};
use crate::output::{Column, CsvFile, OutputsHandle, RowRing};
use crate::system::System;

/// The observed values at the end of a macro step, by subsystem and
/// observed slot ([`Observer::quiet_row`]): the published ones, or those
/// a quiet run's step just read.
pub trait ObservedValues {
    /// Observed slot `slot` of subsystem `subsystem`.
    fn observed(&self, subsystem: usize, slot: usize) -> f64;

    /// The values of `columns` ((subsystem, observed slot) pairs) written
    /// into `row`, which has room for them: one call per row, not one per
    /// column (a row is written after every quiet step; this default is
    /// compiled for each implementation, its `observed` calls inlined).
    fn observed_into(&self, columns: &[(usize, usize)], row: &mut [f64]) {
        for (v, &(s, k)) in row.iter_mut().zip(columns) {
            *v = self.observed(s, k);
        }
    }
}

/// The rows an observer writes after every quiet step, written by the run
/// loop straight into the observer's ring ([`Observer::direct_rows`]):
/// each the time, then the values of `columns`; the observer's count of
/// steps and its last row kept as its own [`Observer::quiet_row`] keeps
/// them.
pub struct DirectRows<'a> {
    ring: &'a mut RowRing,
    columns: &'a [(usize, usize)],
    /// Room for a row (its width from the header row on), where the ring
    /// has none.
    row: &'a mut [f64],
    steps: &'a mut u64,
    last_written: &'a mut Option<i64>,
}

impl std::fmt::Debug for DirectRows<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectRows")
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl DirectRows<'_> {
    /// The row after accepted macro step number `macro_step`, which
    /// ended at `t` (`ticks`), its values from `values`. (Inlined into the
    /// quiet run's loop, where `values` is the step's own buffers.)
    #[inline(always)]
    pub fn write<V: ObservedValues + ?Sized>(
        &mut self,
        (t, ticks): (f64, i64),
        macro_step: u64,
        values: &V,
    ) -> Result<()> {
        *self.steps = macro_step;
        let columns = self.columns;
        self.ring.push_with(self.row, |cells| {
            if let Some((time, rest)) = cells.split_first() {
                time.store(t.to_bits(), Ordering::Relaxed);
                for (cell, &(s, k)) in rest.iter().zip(columns) {
                    cell.store(values.observed(s, k).to_bits(), Ordering::Relaxed);
                }
            }
        })?;
        *self.last_written = Some(ticks);
        Ok(())
    }
}

/// What a run of quiet steps does after each of them
/// ([`crate::master::QuietSteps`]): told where the step ended and given
/// the values it read, it says whether to go on. Generic over where those
/// values are (the held run's own buffers, a host's record, the published
/// ones), so that a row is gathered from them without a call.
pub trait AfterStep {
    /// After a step that ended at `t` (`ticks`), having read `values`.
    fn after_step<V: ObservedValues>(&mut self, t: f64, ticks: i64, values: &V) -> bool;
}

impl<A: AfterStep + ?Sized> AfterStep for &mut A {
    #[inline(always)]
    fn after_step<V: ObservedValues>(&mut self, t: f64, ticks: i64, values: &V) -> bool {
        (**self).after_step(t, ticks, values)
    }
}

/// What observers get after an accepted macro step.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    /// The step the master took.
    pub report: &'a StepReport,
    /// Residual and transmitted energy per bond, after the step.
    pub energy: &'a EnergyAccount,
    /// Values of the diagnostic indicators computed alongside the master,
    /// in the order they were configured.
    pub diagnostics: &'a [f64],
    /// The timed events that took effect in this step, `; `-separated
    /// (empty when none).
    pub events: &'a str,
    /// The accepted macro steps of the run, this one included (1 after
    /// the first). (Inside a nested system: the inner steps taken,
    /// counting again those taken again after an outer rollback.)
    pub macro_step: u64,
}

/// Which call of an observer a question is about ([`Observer::wants_values`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The coming [`Observer::step`], after accepted macro step number n
    /// (`StepContext::macro_step`).
    Step(u64),
    /// The coming [`Observer::finish`].
    Finish,
}

/// When an observer next has something to do after a macro step
/// ([`Observer::due`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// After every accepted macro step.
    EveryStep,
    /// After the first accepted macro step that ends at or after this
    /// time, in ticks of the system's time base (`i64::MAX`: only at the
    /// end of the run, [`Observer::finish`]).
    From(i64),
    /// After accepted macro step number n (`StepContext::macro_step`).
    AtStep(u64),
}

impl Due {
    /// The earliest point this is reached: (time in ticks, macro step
    /// number); due after the first step that reaches either.
    pub fn bounds(self) -> (i64, u64) {
        match self {
            Due::EveryStep => (i64::MIN, 0),
            Due::From(t) => (t, u64::MAX),
            Due::AtStep(n) => (i64::MAX, n),
        }
    }
}

/// Receives the system state after initialization and after accepted
/// macro steps (those at which it is due, [`Observer::due`]).
pub trait Observer: Send {
    /// After initialization, at the start time.
    fn start(&mut self, sys: &System) -> Result<()>;
    /// After an accepted macro step: at least after each step at which
    /// [`Observer::due`] says it has something to do, and possibly after
    /// others (it then does nothing, or what it would have done had it
    /// been called after every step).
    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> Result<()>;
    /// At the end of the run, successful or not: write the last row if
    /// needed and flush.
    fn finish(&mut self, sys: &System) -> Result<()>;

    /// The next communication point this observer needs the run to reach
    /// exactly, in ticks of the system's time base (after the current
    /// time), if any: the trace's next output point. Masters that choose
    /// their step end a step there ([`crate::master::Master::fixed_step`]).
    fn next_point(&self) -> Option<i64> {
        None
    }

    /// After which coming macro steps this observer has something to do.
    /// Where the run could go on without calling any observer (no event,
    /// diagnostic, power bond or pacing), the run loop asks after
    /// [`Observer::start`] and after each round of [`Observer::step`]
    /// calls, and calls none of them until one is due. Default: every
    /// step (an observer that counts the calls of `step` must say so).
    /// Nested systems call their observers after every inner step.
    fn due(&self, _sys: &System) -> Due {
        Due::EveryStep
    }

    /// Called by a nested system on its observers when it is built: the
    /// inner steps it reports may be taken back (its outer master restores
    /// an earlier state to reject a step, or to iterate), so rows are to be
    /// held until [`Observer::keep`] says they stay. Default: nothing (an
    /// observer that ignores this writes the rows of steps taken back too).
    fn hold_rows(&mut self) {}

    /// Rows produced so far, held or written: a position for
    /// [`Observer::take_back`] and [`Observer::keep`].
    fn position(&self) -> u64 {
        0
    }

    /// Forgets the held rows from `position` on: the steps that produced
    /// them were taken back.
    fn take_back(&mut self, _position: u64) {}

    /// Writes the held rows before `position`: no step before it can be
    /// taken back any more.
    fn keep(&mut self, _position: u64) -> Result<()> {
        Ok(())
    }

    /// How this observer samples the run, for the summary (the trace).
    fn sampling(&self) -> Option<Sampling> {
        None
    }

    /// The observed values, as (subsystem, observed slot), that this
    /// observer's rows show, when that is all they show (numbers: no
    /// String, no function value): the run can then keep to its quiet
    /// path with it (a trace of a few columns every step costs those
    /// values, not a step of every FMU the slow way), reading these values
    /// every step and calling [`Observer::quiet_row`] after each quiet
    /// step instead of [`Observer::step`]. `None` (default): called as
    /// [`Observer::due`] says. `macro_step`: the master's fixed step (s),
    /// where it has one (the quiet path needs it: other masters step to
    /// the output points one by one).
    fn quiet_columns(&self, _macro_step: Option<f64>) -> Option<&[(usize, usize)]> {
        None
    }

    /// After accepted macro step number `macro_step` (`report`: its start
    /// and size), ending at `t` (in ticks `ticks`), taken on the quiet
    /// path: for an observer with [`Observer::quiet_columns`], what
    /// [`Observer::step`] would do, with those columns' values from
    /// `values`.
    fn quiet_row(
        &mut self,
        _at: (f64, i64),
        _macro_step: u64,
        _report: &StepReport,
        _values: &dyn ObservedValues,
    ) -> Result<()> {
        Ok(())
    }

    /// For an observer with [`Observer::quiet_columns`] that writes a row
    /// after every step, each a time and those columns' values: the run
    /// loop's direct way to its rows for a stretch of quiet steps, in
    /// place of [`Observer::quiet_row`] (a row then costs the copy of its
    /// values, not a call through the observer and a row gathered
    /// first). `None` (default): [`Observer::quiet_row`].
    fn direct_rows(&mut self) -> Option<DirectRows<'_>> {
        None
    }

    /// Whether the coming call `next` (a [`Observer::step`] after the
    /// step that just ended, the run at `sys.ticks()`, or
    /// [`Observer::finish`]) writes String values: the run then reads them
    /// first ([`System::read_strings`]), and only then.
    fn wants_strings(&self, _sys: &System, _next: Next) -> bool {
        false
    }

    /// Whether the coming call `next` (a [`Observer::step`] or
    /// [`Observer::finish`]) may read observed values other than those the
    /// coupling uses: the run then reads them first
    /// ([`System::read_rest`], when the system reads only what is needed,
    /// [`System::read_needed_only`]). Default true (an observer may read
    /// anything); the trace says so only for the rows it writes, and
    /// observers that read no observed value say false.
    fn wants_values(&self, _sys: &System, _next: Next) -> bool {
        true
    }
}

/// When the trace writes a row (in the summary: `"every_step"`,
/// `{"decimation": n}`, `{"interval": s}`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Every accepted macro step.
    EveryStep,
    /// Every n-th accepted macro step.
    Decimation(u64),
    /// At `t0 + k * interval` exactly (a whole number of ticks): masters
    /// that choose their step end a step on each of these points, and a
    /// fixed step must divide the interval, so every row is a
    /// communication point (no interpolation).
    Interval(f64),
}

/// A trace with a row at least every this many macro steps writes them on
/// the quiet path ([`Observer::quiet_columns`]): its values read by every
/// step cost less than leaving the quiet path for every row.
const DENSE_ROWS: u64 = 8;

/// How often rows written from the stepping thread (no writer thread:
/// [`EnergyLog::deferred`]) are written out, at the latest.
const DIRECT_PERIOD: Duration = Duration::from_millis(500);

/// Where an observer's rows go: the run's writer thread, or (for the
/// energy logs of nested systems, created before the run's outputs) a
/// file written from the stepping thread itself.
enum Sink {
    Writer {
        outputs: OutputsHandle,
        file: u32,
    },
    /// Rows of numbers only, through the file's own ring.
    Ring(Box<RowRing>),
    Direct(Box<DirectFile>),
}

/// A CSV file written from the stepping thread, whole rows at a time.
struct DirectFile {
    file: CsvFile,
    last_write: Instant,
    rows_since_check: u32,
}

impl Sink {
    fn writer(
        outputs: &OutputsHandle,
        path: &Path,
        header: &[String],
        columns: Vec<Column>,
    ) -> Result<Self> {
        Ok(Sink::Writer {
            file: outputs.add_csv(path, header, columns)?,
            outputs: outputs.clone(),
        })
    }

    fn ring(
        outputs: &OutputsHandle,
        path: &Path,
        header: &[String],
        columns: Vec<Column>,
    ) -> Result<Self> {
        Ok(Sink::Ring(Box::new(
            outputs.add_csv_ring(path, header, columns)?,
        )))
    }

    fn direct(path: &Path, header: &[String], columns: Vec<Column>) -> Result<Self> {
        Ok(Sink::Direct(Box::new(DirectFile {
            file: CsvFile::create(path, header, columns)?,
            last_write: Instant::now(),
            rows_since_check: 0,
        })))
    }

    #[inline]
    fn push(&mut self, values: &[f64]) -> Result<()> {
        match self {
            Sink::Ring(r) => r.push(values),
            _ => self.push_text(values, &[]),
        }
    }

    /// A row whose [`Column::Str`] cells are `texts`, in column order.
    fn push_text(&mut self, values: &[f64], texts: &[String]) -> Result<()> {
        match self {
            Sink::Writer { outputs, file } => outputs.push_row_text(*file, values, texts),
            // (Only numbers go to a ring: a trace with text has none.)
            Sink::Ring(r) => r.push(values),
            Sink::Direct(d) => {
                d.file
                    .format_row_text(values, &mut texts.iter().map(String::as_str));
                // Checking the clock on every row would cost more than the row.
                d.rows_since_check += 1;
                if d.rows_since_check >= 64 {
                    d.rows_since_check = 0;
                    if d.file.pending() >= 1 << 16 || d.last_write.elapsed() >= DIRECT_PERIOD {
                        d.last_write = Instant::now();
                        d.file.flush_direct()?;
                    }
                }
                Ok(())
            }
        }
    }

    /// The rows are all handed over: a direct file writes them now; the
    /// writer thread's are written when the run closes its outputs.
    fn finish(&mut self) -> Result<()> {
        match self {
            Sink::Writer { .. } | Sink::Ring(_) => Ok(()),
            Sink::Direct(d) => d.file.flush_direct(),
        }
    }
}

/// A column of the trace whose cells are text read from a subsystem
/// ([`Subsystem::get_strings`](crate::Subsystem::get_strings)): a String,
/// or a value traced as text ([`crate::traced_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextColumn {
    /// Its position among all traced columns (time excluded).
    pub position: usize,
    /// The subsystem.
    pub subsystem: usize,
    /// Its index into the subsystem's traced texts ([`System::strings`]).
    pub index: usize,
    /// Written quoted ([`Column::Str`], a String) or as it is
    /// ([`Column::Raw`]).
    pub quoted: bool,
}

/// The trace: `time [s]` first, then one column per traced variable named
/// `subsystem.variable [unit]`; one row at the start time, then one per
/// sample (see [`Sampling`]) at the end of the step, and the last
/// communication point reached.
pub struct TraceWriter {
    sink: Sink,
    columns: Vec<(usize, usize)>,
    /// Text columns, by position.
    text_columns: Vec<TextColumn>,
    /// The row being gathered (reused).
    row: Vec<f64>,
    /// Its String cells (reused).
    texts: Vec<String>,
    sampling: Sampling,
    steps: u64,
    /// For [`Sampling::Interval`]: the start, the interval and the next
    /// output point, in ticks.
    t0: i64,
    interval: i64,
    next_output: i64,
    /// A communication point passed over an output point (a fixed step
    /// that does not divide the interval) was reported.
    warned: bool,
    /// Ticks of the last row written (none yet: `None`).
    last_written: Option<i64>,
    /// Its rows show numbers of subsystems only ([`Observer::quiet_columns`]).
    quiet: bool,
    /// The run's time base (for the warning of a missed output point).
    time_base: crate::time::TimeBase,
}

impl TraceWriter {
    /// Creates the file (written by the run's writer thread) and queues
    /// the header. `columns` are (subsystem, observed slot) pairs, or
    /// (`sys.len()`, k) for port value k of the system's functions
    /// ([`crate::function::Functions::values`]).
    pub fn create(
        outputs: &OutputsHandle,
        path: &Path,
        sys: &System,
        columns: Vec<(usize, usize)>,
        sampling: Sampling,
    ) -> Result<Self> {
        Self::create_named(outputs, path, sys, columns, &[], sampling)
    }

    /// As [`TraceWriter::create`], column `i` named `names[i]` (after the
    /// subsystem's name) where that is given, instead of its observed
    /// value's own name: a variable traced under an alias.
    pub fn create_named(
        outputs: &OutputsHandle,
        path: &Path,
        sys: &System,
        columns: Vec<(usize, usize)>,
        names: &[Option<String>],
        sampling: Sampling,
    ) -> Result<Self> {
        Self::create_with_text(outputs, path, sys, columns, names, Vec::new(), sampling)
    }

    /// As [`TraceWriter::create_named`], with text columns besides
    /// (Strings, and the values traced as text: [`crate::traced_text`]),
    /// in increasing position; they are read from the FMUs only for the
    /// rows written ([`Observer::wants_strings`]).
    pub fn create_with_text(
        outputs: &OutputsHandle,
        path: &Path,
        sys: &System,
        columns: Vec<(usize, usize)>,
        names: &[Option<String>],
        text_columns: Vec<TextColumn>,
        sampling: Sampling,
    ) -> Result<Self> {
        let mut header = vec!["time [s]".to_string()];
        let mut kinds = vec![Column::Float];
        for (i, &(s, k)) in columns.iter().enumerate() {
            let (prefix, port) = match sys.subsystems().get(s) {
                Some(sub) => (Some(&sub.info().name), sub.info().observed.get(k)),
                None if s == sys.len() => (None, sys.functions().ports().get(k)),
                None => (None, None),
            };
            let Some(port) = port else {
                return Err(CoreError::Config(format!(
                    "trace column ({s}, {k}) names no observed value"
                )));
            };
            let own = names.get(i).and_then(Option::as_deref);
            let name = match prefix {
                Some(p) => format!("{p}.{}", own.unwrap_or(&port.name)),
                None => port.name.clone(),
            };
            header.push(match &port.unit {
                Some(u) if !u.is_empty() => format!("{name} [{u}]"),
                _ => name,
            });
            kinds.push(if port.discrete {
                Column::Integer
            } else {
                Column::Float
            });
        }
        for &TextColumn {
            position,
            subsystem: s,
            index: k,
            quoted,
        } in &text_columns
        {
            let (Some(sub), Some(name)) = (
                sys.subsystems().get(s),
                sys.subsystems()
                    .get(s)
                    .and_then(|sub| sub.traced_strings().get(k)),
            ) else {
                return Err(CoreError::Config(format!(
                    "trace text column ({s}, {k}) names no value traced as text"
                )));
            };
            // (+1: the time column.)
            let at = (position + 1).min(header.len());
            header.insert(at, format!("{}.{name}", sub.info().name));
            kinds.insert(at, if quoted { Column::Str } else { Column::Raw });
        }
        let quiet = text_columns.is_empty() && columns.iter().all(|&(s, _)| s < sys.len());
        // Numbers only: the file's own ring, no lock per row.
        let sink = if text_columns.is_empty() {
            Sink::ring(outputs, path, &header, kinds)?
        } else {
            Sink::writer(outputs, path, &header, kinds)?
        };
        Ok(TraceWriter {
            sink,
            row: Vec::with_capacity(columns.len() + text_columns.len() + 1),
            texts: vec![String::new(); text_columns.len()],
            text_columns,
            columns,
            sampling,
            steps: 0,
            t0: 0,
            interval: 0,
            next_output: i64::MAX,
            warned: false,
            last_written: None,
            quiet,
            time_base: sys.time_base(),
        })
    }

    /// Whether a row is written after macro step number `macro_step`,
    /// which ends at `now` (ticks): by the sampling.
    #[inline]
    fn writes_after(&mut self, macro_step: u64, now: i64) -> bool {
        // (The run's count, not this observer's calls: the run leaves out
        // the calls before it is due.)
        self.steps = macro_step;
        match self.sampling {
            Sampling::EveryStep => true,
            Sampling::Decimation(n) => self.steps.is_multiple_of(n.max(1)),
            Sampling::Interval(dt) => self.interval_reached(now, dt),
        }
    }

    /// Whether `now` (ticks) reached the next output point of the
    /// interval `dt`; if so, the point after it becomes the next.
    #[inline(never)]
    fn interval_reached(&mut self, now: i64, dt: f64) -> bool {
        if now < self.next_output {
            return false;
        }
        if now > self.next_output && !self.warned {
            // Only where the master does not end steps on the output
            // points and its grid misses them (a library caller;
            // scenarios refuse such an interval).
            self.warned = true;
            tracing::warn!(
                "trace: the communication point t = {} passed the output point t = {} (interval {dt} s): rows are written at the first communication point at or after each output point",
                self.time_base.seconds(now),
                self.time_base.seconds(self.next_output)
            );
        }
        let k = (now - self.t0) / self.interval + 1;
        self.next_output = self.t0.saturating_add(k.saturating_mul(self.interval));
        true
    }

    fn row(&mut self, sys: &System) -> Result<()> {
        let t = sys.time();
        let bufs = sys.buffers();
        let functions = sys.functions().values();
        self.row.clear();
        self.row.push(t);
        self.row.extend(
            self.columns
                .iter()
                .map(|&(s, k)| bufs.get(s).map_or_else(|| functions[k], |b| b.y[k])),
        );
        if self.text_columns.is_empty() {
            self.sink.push(&self.row)?;
        } else {
            for (text, c) in self.texts.iter_mut().zip(&self.text_columns) {
                // (A placeholder number: the writer writes the text.)
                self.row
                    .insert((c.position + 1).min(self.row.len()), f64::NAN);
                text.clone_from(
                    sys.strings(c.subsystem)
                        .get(c.index)
                        .unwrap_or(&String::new()),
                );
            }
            self.sink.push_text(&self.row, &self.texts)?;
        }
        self.last_written = Some(sys.ticks());
        Ok(())
    }
}

impl Observer for TraceWriter {
    fn start(&mut self, sys: &System) -> Result<()> {
        self.time_base = sys.time_base();
        if let Sampling::Interval(dt) = self.sampling {
            let base = sys.time_base();
            self.interval = base.exact_ticks(dt).filter(|&n| n > 0).ok_or_else(|| {
                CoreError::Config(format!(
                    "the output interval {dt} s is not a whole number of ticks of {} (the time resolution of this run)",
                    base.describe()
                ))
            })?;
            self.t0 = sys.ticks();
            self.next_output = self.t0.saturating_add(self.interval);
        }
        self.row(sys)
    }

    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> Result<()> {
        if self.writes_after(ctx.macro_step, sys.ticks()) {
            self.row(sys)
        } else {
            Ok(())
        }
    }

    fn quiet_columns(&self, macro_step: Option<f64>) -> Option<&[(usize, usize)]> {
        // A row every step, or nearly: a sparser trace is cheaper the old
        // way (quiet runs between its rows, its values read for the rows
        // only). An interval is as dense as the steps it spans (a
        // scenario's fixed step divides it).
        let dense = match self.sampling {
            Sampling::EveryStep => true,
            Sampling::Decimation(n) => n < DENSE_ROWS,
            Sampling::Interval(dt) => {
                macro_step.is_some_and(|h| h > 0.0 && (dt / h).round() < DENSE_ROWS as f64)
            }
        };
        (self.quiet && dense).then_some(&self.columns[..])
    }

    fn quiet_row(
        &mut self,
        (t, ticks): (f64, i64),
        macro_step: u64,
        _report: &StepReport,
        values: &dyn ObservedValues,
    ) -> Result<()> {
        if !self.writes_after(macro_step, ticks) {
            return Ok(());
        }
        // (The row has its width from the header row on: no pushes.)
        self.row.resize(self.columns.len() + 1, 0.0);
        if let Some((time, rest)) = self.row.split_first_mut() {
            *time = t;
            values.observed_into(&self.columns, rest);
        }
        self.sink.push(&self.row)?;
        self.last_written = Some(ticks);
        Ok(())
    }

    fn direct_rows(&mut self) -> Option<DirectRows<'_>> {
        match (&mut self.sink, self.sampling) {
            (Sink::Ring(ring), Sampling::EveryStep) if self.quiet => Some(DirectRows {
                ring,
                columns: &self.columns,
                row: {
                    self.row.resize(self.columns.len() + 1, 0.0);
                    &mut self.row
                },
                steps: &mut self.steps,
                last_written: &mut self.last_written,
            }),
            _ => None,
        }
    }

    fn finish(&mut self, sys: &System) -> Result<()> {
        // Always end the trace at the last accepted communication point;
        // nothing when the run never got past initialization (there are
        // no values to write, only the header).
        if self.last_written.is_some_and(|t| t != sys.ticks()) {
            self.row(sys)?;
        }
        self.sink.finish()
    }

    fn next_point(&self) -> Option<i64> {
        matches!(self.sampling, Sampling::Interval(_)).then_some(self.next_output)
    }

    fn due(&self, _sys: &System) -> Due {
        match self.sampling {
            Sampling::EveryStep => Due::EveryStep,
            Sampling::Decimation(n) => {
                let n = n.max(1);
                Due::AtStep((self.steps / n).saturating_add(1).saturating_mul(n))
            }
            Sampling::Interval(_) => Due::From(self.next_output),
        }
    }

    fn sampling(&self) -> Option<Sampling> {
        Some(self.sampling)
    }

    fn wants_strings(&self, sys: &System, next: Next) -> bool {
        if self.text_columns.is_empty() {
            return false;
        }
        self.wants_values(sys, next)
    }

    fn wants_values(&self, sys: &System, next: Next) -> bool {
        let Next::Step(step) = next else {
            return self.last_written.is_some_and(|t| t != sys.ticks());
        };
        // The condition `step` writes a row on.
        match self.sampling {
            Sampling::EveryStep => true,
            Sampling::Decimation(n) => step.is_multiple_of(n.max(1)),
            Sampling::Interval(_) => sys.ticks() >= self.next_output,
        }
    }
}

/// The energy log: per accepted step, at its end (`time [s]`, with
/// `t_start [s]` and `step [s]`), for each bond residual power and energy,
/// cumulative residual energy, transmitted power and energy, then the
/// energy indicator. Written only for a system with power bonds.
pub struct EnergyLog {
    sink: Option<Sink>,
    /// For [`EnergyLog::deferred`]: the file and header to create at the
    /// first step.
    pending: Option<(PathBuf, Vec<String>)>,
    row: Vec<f64>,
    /// In a nested system ([`Observer::hold_rows`]): the rows not yet
    /// kept, one after the other, and the position of the first.
    held: Option<(Vec<f64>, u64)>,
    /// Rows produced so far.
    rows: u64,
    /// Values per row.
    width: usize,
}

impl EnergyLog {
    /// Creates the file (written by the run's writer thread) and queues
    /// the header.
    pub fn create(outputs: &OutputsHandle, path: &Path, sys: &System) -> Result<Self> {
        let header = Self::header(sys);
        Ok(EnergyLog {
            row: Vec::with_capacity(header.len()),
            sink: Some(Sink::writer(
                outputs,
                path,
                &header,
                vec![Column::Float; header.len()],
            )?),
            pending: None,
            held: None,
            rows: 0,
            width: header.len(),
        })
    }

    /// An energy log whose file is created at the first accepted step and
    /// written from the stepping thread (whole rows, at least every half
    /// second): for nested systems, which are also initialised by `cosim
    /// check`, where nothing must be written.
    pub fn deferred(path: &Path, sys: &System) -> Self {
        let header = Self::header(sys);
        EnergyLog {
            sink: None,
            row: Vec::with_capacity(header.len()),
            held: None,
            rows: 0,
            width: header.len(),
            pending: Some((path.to_path_buf(), header)),
        }
    }

    fn header(sys: &System) -> Vec<String> {
        let mut header: Vec<String> = STEP_TIME_COLUMNS.iter().map(|s| s.to_string()).collect();
        for b in sys.bonds() {
            for col in [
                "residual_power [W]",
                "residual_energy [J]",
                "cumulative_residual_energy [J]",
                "transmitted_power [W]",
                "transmitted_energy [J]",
            ] {
                header.push(format!("{}.{col}", b.name));
            }
        }
        header.push("indicator [1]".into());
        header
    }

    fn sink(&mut self) -> Result<&mut Sink> {
        if self.sink.is_none()
            && let Some((path, header)) = self.pending.take()
        {
            let columns = vec![Column::Float; header.len()];
            self.sink = Some(Sink::direct(&path, &header, columns)?);
        }
        self.sink
            .as_mut()
            .ok_or_else(|| CoreError::Config("the energy log could not be created".into()))
    }
}

/// Watches every step the full way and writes nothing: a run with it
/// takes no quiet path. The reference the quiet path is compared with
/// (`COSIM_QUIET_PATH=0` for `cosim run`).
#[derive(Debug, Default)]
pub struct StepsOneByOne;

impl Observer for StepsOneByOne {
    fn start(&mut self, _sys: &System) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, _sys: &System, _ctx: &StepContext<'_>) -> Result<()> {
        Ok(())
    }

    fn finish(&mut self, _sys: &System) -> Result<()> {
        Ok(())
    }

    fn wants_values(&self, _sys: &System, _next: Next) -> bool {
        false
    }
}

impl Observer for EnergyLog {
    fn start(&mut self, _sys: &System) -> Result<()> {
        Ok(())
    }

    fn wants_values(&self, _sys: &System, _next: Next) -> bool {
        // The energy account's figures only (bonds are coupled outputs).
        false
    }

    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> Result<()> {
        let energy = ctx.energy;
        self.row.clear();
        self.row
            .extend_from_slice(&[sys.time(), ctx.report.t, ctx.report.dt]);
        for b in energy.bonds() {
            self.row.extend_from_slice(&[
                b.residual_power,
                b.residual_energy,
                b.cumulative_residual_energy,
                b.transmitted_power,
                b.transmitted_energy,
            ]);
        }
        self.row.push(energy.indicator());
        self.rows += 1;
        if let Some((held, _)) = &mut self.held {
            held.extend_from_slice(&self.row);
            return Ok(());
        }
        let row = std::mem::take(&mut self.row);
        let result = self.sink().and_then(|sink| sink.push(&row));
        self.row = row;
        result
    }

    fn finish(&mut self, _sys: &System) -> Result<()> {
        // What is still held is the run's last word.
        self.keep(self.rows)?;
        match &mut self.sink {
            Some(sink) => sink.finish(),
            None => Ok(()),
        }
    }

    fn hold_rows(&mut self) {
        self.held.get_or_insert((Vec::new(), self.rows));
    }

    fn position(&self) -> u64 {
        self.rows
    }

    fn take_back(&mut self, position: u64) {
        if let Some((held, first)) = &mut self.held
            && position >= *first
            && position < self.rows
        {
            held.truncate((position - *first) as usize * self.width);
            self.rows = position;
        }
    }

    fn keep(&mut self, position: u64) -> Result<()> {
        let Some((mut held, first)) = self.held.take() else {
            return Ok(());
        };
        let width = self.width.max(1);
        let upto = position.clamp(first, self.rows);
        let n = (upto - first) as usize * width;
        let mut result = Ok(());
        if n > 0 {
            result = self
                .sink()
                .and_then(|sink| held[..n].chunks(width).try_for_each(|row| sink.push(row)));
            held.drain(..n);
        }
        self.held = Some((held, upto));
        result
    }
}

/// The step log: one row per accepted macro step, at its end (`time [s]`,
/// with `t_start [s]` and `step [s]`), with the figures the master
/// produces ([`StepFields`]) and every diagnostic indicator.
pub struct StepLog {
    sink: Sink,
    fields: StepFields,
    row: Vec<f64>,
    /// The text of the `events` column, when the run has events.
    events: Option<Vec<String>>,
}

/// The first columns of the step log and the energy log: the end of the
/// step, its start and its size.
const STEP_TIME_COLUMNS: [&str; 3] = ["time [s]", "t_start [s]", "step [s]"];

impl StepLog {
    /// Creates the file (written by the run's writer thread) and queues
    /// the header; `fields` are the figures the master produces on `sys`
    /// ([`crate::master::Master::step_fields`]), `diagnostics` names the
    /// indicators computed alongside the master.
    ///
    /// `indicator` is the master's own indicator; for a master without one
    /// (and without a residual), the energy indicator the run loop fills
    /// in on a system with power bonds, unless `indicator.energy` is
    /// logged anyway (the same values). With `events`, a last column
    /// `events` names the timed events that took effect in each step.
    pub fn create(
        outputs: &OutputsHandle,
        path: &Path,
        sys: &System,
        mut fields: StepFields,
        diagnostics: &[&str],
        events: bool,
    ) -> Result<Self> {
        let energy_fallback = !fields.indicator && !fields.residual && !sys.bonds().is_empty();
        fields.indicator |= energy_fallback && !diagnostics.contains(&"energy");
        let mut header: Vec<String> = STEP_TIME_COLUMNS.iter().map(|s| s.to_string()).collect();
        let mut columns = vec![Column::Float; header.len()];
        for (present, name, kind) in [
            (fields.indicator, "indicator [1]", Column::Float),
            (fields.rejections, "rejections [1]", Column::Integer),
            (fields.iterations, "iterations [1]", Column::Integer),
            (fields.residual, "residual [1]", Column::Float),
        ] {
            if present {
                header.push(name.to_string());
                columns.push(kind);
            }
        }
        for d in diagnostics {
            header.push(format!("indicator.{d} [1]"));
            columns.push(Column::Float);
        }
        if events {
            header.push("events".to_string());
            columns.push(Column::Str);
        }
        // Numbers only (no events column): the file's own ring.
        let sink = if events {
            Sink::writer(outputs, path, &header, columns)?
        } else {
            Sink::ring(outputs, path, &header, columns)?
        };
        Ok(StepLog {
            row: Vec::with_capacity(header.len()),
            sink,
            fields,
            events: events.then(|| vec![String::new()]),
        })
    }
}

impl Observer for StepLog {
    fn start(&mut self, _sys: &System) -> Result<()> {
        Ok(())
    }

    fn wants_values(&self, _sys: &System, _next: Next) -> bool {
        // The step report and the diagnostics only.
        false
    }

    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> Result<()> {
        self.push_row(sys.time(), ctx.report, ctx.diagnostics, ctx.events)
    }

    fn quiet_columns(&self, _macro_step: Option<f64>) -> Option<&[(usize, usize)]> {
        // Its rows show the step report only (the quiet path has no
        // diagnostic indicators); not the text of timed events.
        self.events.is_none().then_some(&[])
    }

    fn quiet_row(
        &mut self,
        (t, _ticks): (f64, i64),
        _macro_step: u64,
        report: &StepReport,
        _values: &dyn ObservedValues,
    ) -> Result<()> {
        self.push_row(t, report, &[], "")
    }

    fn finish(&mut self, _sys: &System) -> Result<()> {
        self.sink.finish()
    }
}

impl StepLog {
    /// The row of the step `report` that ended at `t`.
    fn push_row(
        &mut self,
        t: f64,
        report: &StepReport,
        diagnostics: &[f64],
        events: &str,
    ) -> Result<()> {
        let f = self.fields;
        self.row.clear();
        self.row.extend_from_slice(&[t, report.t, report.dt]);
        if f.indicator {
            self.row.push(report.indicator);
        }
        if f.rejections {
            self.row.push(f64::from(report.rejections));
        }
        if f.iterations {
            self.row.push(f64::from(report.iterations));
        }
        if f.residual {
            self.row.push(report.residual);
        }
        self.row.extend_from_slice(diagnostics);
        match &mut self.events {
            Some(texts) => {
                texts[0].clear();
                texts[0].push_str(events);
                // (A text column takes a place among the values too.)
                self.row.push(0.0);
                self.sink.push_text(&self.row, texts)
            }
            None => self.sink.push(&self.row),
        }
    }
}
