//! Observers record a run: the trace CSV, the per-bond energy log, the step
//! log. They see the system after initialization and after every accepted
//! macro step, never a rejected attempt.
//!
//! Files are written through buffered CSV writers, with numbers in full
//! `f64` round-trip precision (shortest representation, `.` decimal
//! separator). They are flushed at the end, on error, and at least every
//! half second of wall time, so a run that stops keeps every completed row.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{CoreError, Result};
use crate::indicators::EnergyAccount;
use crate::master::StepReport;
use crate::system::System;

/// What observers get after each accepted macro step.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    /// The step the master took.
    pub report: &'a StepReport,
    /// Residual and transmitted energy per bond, after the step.
    pub energy: &'a EnergyAccount,
    /// Values of the diagnostic indicators computed alongside the master,
    /// in the order they were configured.
    pub diagnostics: &'a [f64],
}

/// Receives the system state after initialization and each accepted step.
pub trait Observer: Send {
    /// After initialization, at the start time.
    fn start(&mut self, sys: &System) -> Result<()>;
    /// After each accepted macro step.
    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> Result<()>;
    /// At the end of the run, successful or not: write the last row if
    /// needed and flush.
    fn finish(&mut self, sys: &System) -> Result<()>;
}

/// When the trace writes a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Every accepted macro step.
    EveryStep,
    /// Every n-th accepted macro step.
    Decimation(u64),
    /// The first step at or after each multiple of this interval (no
    /// interpolation: rows are at communication points).
    Interval(f64),
}

const FLUSH_PERIOD: Duration = Duration::from_millis(500);

/// A CSV file written row by row with a reusable number buffer.
struct CsvFile {
    path: PathBuf,
    writer: csv::Writer<BufWriter<File>>,
    number: ryu::Buffer,
    integer: itoa::Buffer,
    last_flush: Instant,
    rows_since_check: u32,
}

impl CsvFile {
    fn create(path: &Path, header: &[String]) -> Result<Self> {
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
        let mut writer = csv::WriterBuilder::new()
            .flexible(false)
            .from_writer(BufWriter::with_capacity(1 << 16, file));
        writer
            .write_record(header)
            .map_err(|e| csv_error(path, e))?;
        Ok(CsvFile {
            path: path.to_path_buf(),
            writer,
            number: ryu::Buffer::new(),
            integer: itoa::Buffer::new(),
            last_flush: Instant::now(),
            rows_since_check: 0,
        })
    }

    fn field(&mut self, v: f64) -> Result<()> {
        let s = if v.is_finite() {
            self.number.format_finite(v)
        } else if v.is_nan() {
            "NaN"
        } else if v > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        self.writer
            .write_field(s)
            .map_err(|e| csv_error(&self.path, e))
    }

    /// A discrete value (carried exactly in the `f64`), written as an
    /// integer: `3`, not `3.0`; Booleans as 0 and 1.
    fn integer_field(&mut self, v: f64) -> Result<()> {
        let s = self.integer.format(v as i64);
        self.writer
            .write_field(s)
            .map_err(|e| csv_error(&self.path, e))
    }

    fn text(&mut self, s: &str) -> Result<()> {
        self.writer
            .write_field(s)
            .map_err(|e| csv_error(&self.path, e))
    }

    fn end_row(&mut self) -> Result<()> {
        self.writer
            .write_record(None::<&[u8]>)
            .map_err(|e| csv_error(&self.path, e))?;
        // Checking the clock on every row would cost more than the row.
        self.rows_since_check += 1;
        if self.rows_since_check >= 64 {
            self.rows_since_check = 0;
            if self.last_flush.elapsed() >= FLUSH_PERIOD {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.last_flush = Instant::now();
        self.writer.flush().map_err(|error| CoreError::Output {
            path: self.path.clone(),
            error,
        })
    }
}

fn csv_error(path: &Path, e: csv::Error) -> CoreError {
    CoreError::Output {
        path: path.to_path_buf(),
        error: std::io::Error::other(e),
    }
}

/// The trace: `time` first, then one column per traced variable named
/// `subsystem.variable [unit]`.
pub struct TraceWriter {
    file: CsvFile,
    columns: Vec<(usize, usize)>,
    /// Per column: a discrete (integer, Boolean) variable.
    discrete: Vec<bool>,
    sampling: Sampling,
    steps: u64,
    next_output: f64,
    last_written_time: f64,
}

impl TraceWriter {
    /// Creates the file and writes the header. `columns` are (subsystem,
    /// observed slot) pairs.
    pub fn create(
        path: &Path,
        sys: &System,
        columns: Vec<(usize, usize)>,
        sampling: Sampling,
    ) -> Result<Self> {
        let mut header = vec!["time".to_string()];
        for &(s, k) in &columns {
            let info = sys.subsystems()[s].info();
            let port = &info.observed[k];
            header.push(match &port.unit {
                Some(u) if !u.is_empty() => format!("{}.{} [{}]", info.name, port.name, u),
                _ => format!("{}.{}", info.name, port.name),
            });
        }
        let discrete = columns
            .iter()
            .map(|&(s, k)| sys.subsystems()[s].info().observed[k].discrete)
            .collect();
        Ok(TraceWriter {
            file: CsvFile::create(path, &header)?,
            columns,
            discrete,
            sampling,
            steps: 0,
            next_output: f64::NEG_INFINITY,
            last_written_time: f64::NAN,
        })
    }

    fn row(&mut self, sys: &System) -> Result<()> {
        let t = sys.time();
        self.file.field(t)?;
        let bufs = sys.buffers();
        for (&(s, k), &discrete) in self.columns.iter().zip(&self.discrete) {
            let v = bufs[s].y[k];
            if discrete {
                self.file.integer_field(v)?;
            } else {
                self.file.field(v)?;
            }
        }
        self.last_written_time = t;
        self.file.end_row()
    }
}

impl Observer for TraceWriter {
    fn start(&mut self, sys: &System) -> Result<()> {
        if let Sampling::Interval(dt) = self.sampling {
            self.next_output = sys.time() + dt;
        }
        self.row(sys)
    }

    fn step(&mut self, sys: &System, _ctx: &StepContext<'_>) -> Result<()> {
        self.steps += 1;
        let write = match self.sampling {
            Sampling::EveryStep => true,
            Sampling::Decimation(n) => self.steps.is_multiple_of(n.max(1)),
            Sampling::Interval(dt) => {
                let t = sys.time();
                // Tolerate round-off on communication points that should
                // coincide with output points.
                if t >= self.next_output - 1e-9 * dt {
                    while self.next_output <= t + 1e-9 * dt {
                        self.next_output += dt;
                    }
                    true
                } else {
                    false
                }
            }
        };
        if write { self.row(sys) } else { Ok(()) }
    }

    fn finish(&mut self, sys: &System) -> Result<()> {
        // Always end the trace at the last accepted communication point;
        // nothing when the run never got past initialization (there are
        // no values to write, only the header).
        if !self.last_written_time.is_nan() && sys.time() != self.last_written_time {
            self.row(sys)?;
        }
        self.file.flush()
    }
}

/// The energy log: per step, for each bond, residual power and energy,
/// cumulative residual energy, transmitted power and energy.
pub struct EnergyLog {
    file: Option<CsvFile>,
    /// For [`EnergyLog::deferred`]: the file and header to create at the
    /// first step.
    pending: Option<(PathBuf, Vec<String>)>,
}

impl EnergyLog {
    /// Creates the file and writes the header.
    pub fn create(path: &Path, sys: &System) -> Result<Self> {
        Ok(EnergyLog {
            file: Some(CsvFile::create(path, &Self::header(sys))?),
            pending: None,
        })
    }

    /// An energy log whose file is created at the first accepted step:
    /// for nested systems, which are also initialised by `cosim check`,
    /// where nothing must be written.
    pub fn deferred(path: &Path, sys: &System) -> Self {
        EnergyLog {
            file: None,
            pending: Some((path.to_path_buf(), Self::header(sys))),
        }
    }

    fn header(sys: &System) -> Vec<String> {
        let mut header = vec!["time".to_string(), "step".to_string()];
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
        header.push("indicator".into());
        header
    }

    fn file(&mut self) -> Result<&mut CsvFile> {
        if self.file.is_none()
            && let Some((path, header)) = self.pending.take()
        {
            self.file = Some(CsvFile::create(&path, &header)?);
        }
        self.file
            .as_mut()
            .ok_or_else(|| CoreError::Config("the energy log could not be created".into()))
    }
}

impl Observer for EnergyLog {
    fn start(&mut self, _sys: &System) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> Result<()> {
        let energy = ctx.energy;
        let file = self.file()?;
        file.field(sys.time())?;
        file.field(ctx.report.dt)?;
        for b in energy.bonds() {
            file.field(b.residual_power)?;
            file.field(b.residual_energy)?;
            file.field(b.cumulative_residual_energy)?;
            file.field(b.transmitted_power)?;
            file.field(b.transmitted_energy)?;
        }
        file.field(energy.indicator())?;
        file.end_row()
    }

    fn finish(&mut self, _sys: &System) -> Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// The step log: one row per accepted macro step, with the master's
/// indicator and every diagnostic indicator.
pub struct StepLog {
    file: CsvFile,
}

impl StepLog {
    /// Creates the file and writes the header; `diagnostics` names the
    /// indicators computed alongside the master.
    pub fn create(path: &Path, diagnostics: &[&str]) -> Result<Self> {
        let mut header: Vec<String> = [
            "time",
            "step",
            "indicator",
            "accepted",
            "rejections",
            "iterations",
            "residual",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        header.extend(diagnostics.iter().map(|d| format!("indicator.{d}")));
        Ok(StepLog {
            file: CsvFile::create(path, &header)?,
        })
    }
}

impl Observer for StepLog {
    fn start(&mut self, _sys: &System) -> Result<()> {
        Ok(())
    }

    fn step(&mut self, _sys: &System, ctx: &StepContext<'_>) -> Result<()> {
        let report = ctx.report;
        self.file.field(report.t)?;
        self.file.field(report.dt)?;
        self.file.field(report.indicator)?;
        self.file.text("true")?;
        self.file.field(f64::from(report.rejections))?;
        self.file.field(f64::from(report.iterations))?;
        self.file.field(report.residual)?;
        for &d in ctx.diagnostics {
            self.file.field(d)?;
        }
        self.file.end_row()
    }

    fn finish(&mut self, _sys: &System) -> Result<()> {
        self.file.flush()
    }
}
