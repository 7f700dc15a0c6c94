//! How much a run will write: the size of its trace, energy log and step
//! log estimated from their columns and rows before the first step, and
//! the warning a run gives when that exceeds 1 GB (`docs/outputs.md`).
//!
//! Rows: one per macro step in the energy and step logs; in the trace one
//! per step, per N-th step (`decimation`) or per output point
//! (`interval`), plus the first and last rows. A fixed-step run's steps
//! are known; an adaptive master's lie between the simulated span over its
//! largest step and over its smallest (`dt_max`, `dt_min`; two steps per
//! accepted double step for Richardson), and an iterative master's are
//! estimated at its base step (more if steps are halved). Every number is
//! counted at [`BYTES_PER_NUMBER`] bytes: the shortest round-trip form of
//! an `f64` (17 significant digits at most, a sign, a point, an exponent)
//! and its separator, as measured on the traces of B1. The energy logs of
//! nested systems (`energy.<nest>.csv`) are not counted.
//!
//! The warning at the start is given when the outputs will surely exceed
//! the threshold (an adaptive master: even at its largest step). A run
//! without it is watched instead: the writer thread warns once when the
//! files it has written pass the threshold
//! ([`cosim_core::output::OutputsHandle::warn_above`]).

use cosim_core::time::TimeBase;

use crate::assemble::Assembly;
use crate::{MasterKind, ResolvedScenario, Sampling, ScenarioError};

/// Bytes a number takes in a CSV file, with its separator (B1's trace
/// averages 18.5, its energy log 15.6).
pub const BYTES_PER_NUMBER: f64 = 19.0;

/// The default size above which a run warns, in bytes (1 GB).
pub const WARNING_BYTES: f64 = 1e9;

/// The environment variable that replaces [`WARNING_BYTES`] (a number of
/// bytes, e.g. `COSIM_OUTPUT_WARNING_BYTES=1e6`; tests use it).
pub const WARNING_ENV: &str = "COSIM_OUTPUT_WARNING_BYTES";

/// One output file's estimated size.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEstimate {
    /// The file name (relative to the output directory).
    pub name: String,
    /// Columns.
    pub columns: usize,
    /// Rows at the fewest and at the most steps.
    pub rows: (f64, f64),
}

impl FileEstimate {
    /// Bytes at the fewest and at the most steps.
    pub fn bytes(&self) -> (f64, f64) {
        let per_row = self.columns as f64 * BYTES_PER_NUMBER;
        (self.rows.0 * per_row, self.rows.1 * per_row)
    }
}

/// The outputs of a run, estimated.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputEstimate {
    /// The trace, energy log and step log the run writes.
    pub files: Vec<FileEstimate>,
    /// Macro steps, fewest and most.
    pub steps: (f64, f64),
    /// What sets the number of steps, for the message ("at the fixed step
    /// 0.001 s", "between dt_max = 0.01 s and dt_min = 0.0001 s").
    pub why: String,
    /// The simulated span, s.
    pub span: f64,
}

impl OutputEstimate {
    /// Total bytes at the fewest and at the most steps.
    pub fn bytes(&self) -> (f64, f64) {
        self.files
            .iter()
            .map(FileEstimate::bytes)
            .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y))
    }
}

/// Estimates the outputs of an assembled scenario.
pub fn estimate(resolved: &ResolvedScenario, assembly: &Assembly) -> OutputEstimate {
    let m = &resolved.master;
    let span = resolved.stop - resolved.start;
    let ceil = |x: f64| x.ceil().max(1.0);
    let (steps, why) = match m.kind {
        MasterKind::FixedStep => {
            let base = TimeBase::choose(&[("step", m.step), ("span", span)]).unwrap_or_default();
            let n = match (base.exact_ticks(span), base.exact_ticks(m.step)) {
                (Some(s), Some(h)) if h > 0 => ((s + h - 1) / h) as f64,
                _ => ceil(span / m.step),
            };
            (
                (n, n),
                format!("at the fixed step {} s", cosim_core::text::number(m.step)),
            )
        }
        MasterKind::StronglyCoupled => {
            let n = ceil(span / m.step);
            (
                (n, n),
                format!(
                    "at the communication step {} s",
                    cosim_core::text::number(m.step)
                ),
            )
        }
        MasterKind::Ifosmondi | MasterKind::IterativeAffine => {
            let n = ceil(span / m.step);
            (
                (n, n),
                format!(
                    "at the base step {} s (more if steps are halved)",
                    cosim_core::text::number(m.step)
                ),
            )
        }
        kind => {
            let c = &m.controller;
            // Richardson's accepted unit is a double step.
            let per = if kind == MasterKind::Richardson {
                2.0
            } else {
                1.0
            };
            (
                (ceil(span / (per * c.dt_max)), ceil(span / (per * c.dt_min))),
                format!(
                    "between dt_max = {} s and dt_min = {} s",
                    cosim_core::text::number(c.dt_max),
                    cosim_core::text::number(c.dt_min)
                ),
            )
        }
    };
    let points = match resolved.outputs.sampling {
        Sampling::Interval(x) => Some(ceil(span / x)),
        _ => None,
    };
    // Steps shortened to end on output points: at most one more per point.
    let mut steps = steps;
    if let Some(p) = points
        && m.kind != MasterKind::FixedStep
    {
        steps.1 += p;
    }
    let name = |p: &std::path::Path| {
        p.strip_prefix(&resolved.outputs.dir)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut files = Vec::new();
    let o = &resolved.outputs;
    if let Some(path) = &o.trace {
        let rows = match o.sampling {
            Sampling::EveryStep => (steps.0 + 1.0, steps.1 + 1.0),
            Sampling::Decimation(n) => {
                let n = n.max(1) as f64;
                ((steps.0 / n).floor() + 2.0, (steps.1 / n).floor() + 2.0)
            }
            Sampling::Interval(_) => {
                let p = points.unwrap_or(1.0) + 1.0;
                (p.min(steps.0 + 1.0), p.min(steps.1 + 1.0))
            }
        };
        files.push(FileEstimate {
            name: name(path),
            columns: 1 + assembly.trace_columns.len() + assembly.trace_text_columns.len(),
            rows,
        });
    }
    let system = &assembly.system;
    if let Some(path) = &o.energy_log
        && !system.bonds().is_empty()
    {
        files.push(FileEstimate {
            name: name(path),
            columns: 3 + 5 * system.bonds().len() + 1,
            rows: steps,
        });
    }
    if let Some(path) = &o.step_log {
        let f = assembly.master.step_fields(system);
        let figures = [f.indicator, f.rejections, f.iterations, f.residual]
            .iter()
            .filter(|&&x| x)
            .count();
        files.push(FileEstimate {
            name: name(path),
            columns: 3 + figures + assembly.diagnostics.len(),
            rows: steps,
        });
    }
    OutputEstimate {
        files,
        steps,
        why,
        span,
    }
}

/// The size above which a run warns: [`WARNING_ENV`] when set to a
/// number, else [`WARNING_BYTES`].
pub fn warning_threshold() -> f64 {
    std::env::var(WARNING_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|x| *x >= 0.0)
        .unwrap_or(WARNING_BYTES)
}

/// `12 kB`, `570 MB`, `1.3 GB` (decimal units).
pub fn human_bytes(bytes: f64) -> String {
    let units = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    for (scale, unit) in units {
        if bytes >= scale {
            let x = bytes / scale;
            return if x < 10.0 {
                format!("{:.1} {unit}", x)
            } else {
                format!("{:.0} {unit}", x)
            };
        }
    }
    format!("{bytes:.0} B")
}

/// What to do about outputs that are too large (the `help` of the
/// warnings).
pub const ADVICE: &str = "write fewer trace rows with [outputs] interval = <seconds> or decimation = <n>, fewer columns with variables = [...], and leave out the per-step logs with energy_log = false and step_log = false";

/// The warning for outputs estimated above `threshold` bytes, if they
/// surely are (for an adaptive master: even at its largest step): the
/// estimate per file and how to write less.
pub fn warning(
    resolved: &ResolvedScenario,
    assembly: &Assembly,
    threshold: f64,
) -> Option<ScenarioError> {
    let e = estimate(resolved, assembly);
    let (low, high) = e.bytes();
    if low <= threshold {
        return None;
    }
    // A count and its noun, singular only for exactly one.
    let counted = |n: (f64, f64), one: &str, many: &str| {
        if n.0 == n.1 {
            format!("{:.0} {}", n.1, if n.1 == 1.0 { one } else { many })
        } else {
            format!("{:.0} to {:.0} {many}", n.0, n.1)
        }
    };
    let steps = counted(e.steps, "macro step", "macro steps");
    let total = if low == high {
        format!("about {}", human_bytes(high))
    } else {
        format!(
            "at least {} (at the largest steps; up to {} at the smallest)",
            human_bytes(low),
            human_bytes(high)
        )
    };
    let files: Vec<String> = e
        .files
        .iter()
        .map(|f| {
            let (lo, hi) = f.bytes();
            let rows = counted(f.rows, "row", "rows");
            let size = if lo == hi {
                human_bytes(hi)
            } else {
                format!("up to {}", human_bytes(hi))
            };
            format!(
                "{} {size} ({rows} x {})",
                f.name,
                cosim_core::text::count(f.columns, "column", "columns")
            )
        })
        .collect();
    Some(
        resolved
            .outputs_warning(format!(
                "the outputs of this run will take {total}, more than {}: {} ({steps} {} over {} s, about {:.0} bytes per number)",
                human_bytes(threshold),
                files.join(", "),
                e.why,
                cosim_core::text::number(e.span),
                BYTES_PER_NUMBER
            ))
            .with_help(ADVICE),
    )
}
