//! Measurements and the Markdown report.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Who ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Contender {
    /// The raw FFI loop (one thread).
    Raw,
    /// `cosim`, `threads = 1`.
    #[value(name = "cosim-1")]
    CosimOne,
    /// `cosim`, `threads = 0` (all cores).
    #[value(name = "cosim-all")]
    CosimAll,
    /// libcosim, worker pool empty (steps inline).
    #[value(name = "libcosim-0")]
    LibcosimZero,
    /// libcosim, default worker pool (hardware threads - 1).
    #[value(name = "libcosim-default")]
    LibcosimDefault,
}

/// Repeated runs of one contender on one scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    /// Who.
    pub contender: Contender,
    /// Timed macro steps per run.
    pub steps: u64,
    /// Threads used (cosim: worker threads; libcosim: threads of the process).
    pub threads: usize,
    /// Wall time of each run's stepping loop, s.
    pub seconds: Vec<f64>,
}

impl Measurement {
    /// No runs yet.
    pub fn new(contender: Contender, steps: u64) -> Self {
        Measurement {
            contender,
            steps,
            threads: 1,
            seconds: Vec::new(),
        }
    }

    /// Adds a run.
    pub fn push(&mut self, seconds: f64) {
        self.seconds.push(seconds);
    }

    /// Median wall time per macro step, ns.
    pub fn ns_per_step(&self) -> f64 {
        median(&self.seconds) / self.steps.max(1) as f64 * 1e9
    }

    fn range_per_step(&self) -> (f64, f64) {
        let per = |s: f64| s / self.steps.max(1) as f64 * 1e9;
        let min = self.seconds.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self
            .seconds
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (per(min), per(max))
    }
}

/// The median (mean of the two middle values for an even count); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// One speed scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedRow {
    /// Benchmark id (a `--scenario` file's stem for the user's own).
    pub id: String,
    /// What it is.
    pub what: String,
    /// FMU instances.
    pub fmus: usize,
    /// Connections.
    pub connections: usize,
    /// Every contender's runs.
    pub measurements: Vec<Measurement>,
}

impl SpeedRow {
    fn get(&self, c: Contender) -> Option<&Measurement> {
        self.measurements
            .iter()
            .find(|m| m.contender == c && !m.seconds.is_empty())
    }

    /// ns per macro step per FMU of a contender.
    pub fn per_fmu(&self, c: Contender) -> Option<f64> {
        self.get(c)
            .map(|m| m.ns_per_step() / self.fmus.max(1) as f64)
    }

    fn best(&self, cs: &[Contender]) -> Option<(Contender, f64)> {
        cs.iter()
            .filter_map(|&c| self.per_fmu(c).map(|x| (c, x)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// cosim (1 thread) over the raw loop.
    pub fn cosim_over_raw(&self) -> Option<f64> {
        Some(self.per_fmu(Contender::CosimOne)? / self.per_fmu(Contender::Raw)?)
    }

    /// Best cosim configuration over best libcosim configuration.
    pub fn cosim_over_libcosim(&self) -> Option<f64> {
        let c = self.best(&[Contender::CosimOne, Contender::CosimAll])?;
        let l = self.best(&[Contender::LibcosimZero, Contender::LibcosimDefault])?;
        Some(c.1 / l.1)
    }

    /// One line for the progress output.
    pub fn summary_line(&self) -> String {
        let mut s = format!("  {}: ns/step/FMU", self.id);
        for m in &self.measurements {
            let _ = write!(
                s,
                "  {} {:.0}",
                short(m.contender),
                m.ns_per_step() / self.fmus.max(1) as f64
            );
        }
        s
    }
}

/// One trace-cost measurement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceRow {
    /// Benchmark id.
    pub id: String,
    /// What it is.
    pub what: String,
    /// FMU instances.
    pub fmus: usize,
    /// Columns of the trace (time included).
    pub columns: usize,
    /// Size of the trace file, bytes.
    pub bytes: u64,
    /// cosim, 1 thread, trace off.
    pub off: Measurement,
    /// cosim, 1 thread, every variable traced every step.
    pub on: Measurement,
}

impl TraceRow {
    /// Marginal cost of one trace row, ns (median on - median off).
    pub fn ns_per_row(&self) -> f64 {
        self.on.ns_per_step() - self.off.ns_per_step()
    }

    /// One line for the progress output.
    pub fn summary_line(&self) -> String {
        format!(
            "  {}: off {:.0} ns/step, on {:.0} ns/step, {:.0} ns per row of {} columns",
            self.id,
            self.off.ns_per_step(),
            self.on.ns_per_step(),
            self.ns_per_row(),
            self.columns
        )
    }
}

/// Startup: preparing a scenario (load, extract, instantiate) and
/// initialising it.
#[derive(Debug, Serialize, Deserialize)]
pub struct StartupRow {
    /// Benchmark id.
    pub id: String,
    /// What it is.
    pub what: String,
    /// FMU instances.
    pub fmus: usize,
    /// Seconds to load the scenario, extract, load and instantiate, per run.
    pub prepare: Vec<f64>,
    /// Seconds to initialise, per run.
    pub initialize: Vec<f64>,
}

impl StartupRow {
    /// One line for the progress output.
    pub fn summary_line(&self) -> String {
        format!(
            "{}: load, extract, instantiate {:.1} ms, initialise {:.2} ms ({} FMUs, median of {})",
            self.id,
            median(&self.prepare) * 1e3,
            median(&self.initialize) * 1e3,
            self.fmus,
            self.prepare.len()
        )
    }
}

/// Everything measured in one invocation (or pooled from several:
/// [`Report::merge`]).
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    quick: bool,
    repeats: usize,
    /// Processes whose runs are pooled (`--rounds`).
    rounds: usize,
    libcosim_repeats: usize,
    libcosim: Option<String>,
    notes: Vec<String>,
    /// Speed scenarios.
    pub speed: Vec<SpeedRow>,
    /// Trace-cost measurements.
    pub trace: Vec<TraceRow>,
    /// Startup measurements.
    pub startup: Vec<StartupRow>,
    /// Wall time of the whole invocation.
    pub elapsed: Duration,
    /// `/proc/loadavg` (1, 5, 15 min) at the start and at the end.
    load: [Option<String>; 2],
}

/// The load averages of `/proc/loadavg`.
fn loadavg() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn short(c: Contender) -> &'static str {
    match c {
        Contender::Raw => "raw",
        Contender::CosimOne => "cosim-1",
        Contender::CosimAll => "cosim-all",
        Contender::LibcosimZero => "libcosim-0",
        Contender::LibcosimDefault => "libcosim-default",
    }
}

fn fmt_ns(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 100_000.0 => format!("{:.0} us", v / 1000.0),
        Some(v) if v >= 10_000.0 => format!("{:.1} us", v / 1000.0),
        Some(v) => format!("{v:.0}"),
        None => "-".into(),
    }
}

fn fmt_ratio(x: Option<f64>) -> String {
    match x {
        Some(v) if v < 0.1 => format!("{v:.3}"),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let rustc =
        std::process::Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "rustc ?".into());
    format!("{cpu}, {cores} cores available, Linux {kernel}, {rustc}")
}

/// The commit the benchmark was built from, and whether the crates it
/// measures had uncommitted changes.
fn revision() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        None => "unknown revision".into(),
        Some(head) => match git(&["status", "--porcelain", "--", "crates", "fmus"]) {
            Some(changes) if !changes.is_empty() => {
                format!("commit {head} with uncommitted changes in crates/ or fmus/")
            }
            _ => format!("commit {head}"),
        },
    }
}

impl Report {
    /// An empty report.
    pub fn new(quick: bool, repeats: usize, libcosim_repeats: usize) -> Self {
        Report {
            quick,
            repeats,
            rounds: 1,
            libcosim_repeats,
            libcosim: None,
            notes: Vec::new(),
            speed: Vec::new(),
            trace: Vec::new(),
            startup: Vec::new(),
            elapsed: Duration::ZERO,
            load: [loadavg(), None],
        }
    }

    /// Records the end of the invocation.
    pub fn finish(&mut self, elapsed: Duration) {
        self.elapsed = elapsed;
        self.load[1] = loadavg();
    }

    /// Pools `other`'s runs (another process's, on the same benchmarks)
    /// into this report's: every contender's runs of a benchmark are put
    /// together, so that a figure is the median over the runs of every
    /// process. The load averages span both (this one's start, `other`'s
    /// end).
    pub fn merge(&mut self, other: Report) {
        self.rounds += other.rounds;
        for row in other.speed {
            match self.speed.iter_mut().find(|r| r.id == row.id) {
                None => self.speed.push(row),
                Some(r) => {
                    for m in row.measurements {
                        match r
                            .measurements
                            .iter_mut()
                            .find(|x| x.contender == m.contender)
                        {
                            None => r.measurements.push(m),
                            Some(x) => {
                                x.threads = x.threads.max(m.threads);
                                x.seconds.extend(m.seconds);
                            }
                        }
                    }
                }
            }
        }
        for row in other.trace {
            match self.trace.iter_mut().find(|r| r.id == row.id) {
                None => self.trace.push(row),
                Some(r) => {
                    r.off.seconds.extend(row.off.seconds);
                    r.on.seconds.extend(row.on.seconds);
                }
            }
        }
        for row in other.startup {
            match self.startup.iter_mut().find(|r| r.id == row.id) {
                None => self.startup.push(row),
                Some(r) => {
                    r.prepare.extend(row.prepare);
                    r.initialize.extend(row.initialize);
                }
            }
        }
        if self.libcosim.is_none() {
            self.libcosim = other.libcosim;
        }
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        let [_, end] = other.load;
        self.load[1] = end;
    }

    /// Adds a note at the end.
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Records the libcosim version seen.
    pub fn libcosim_version(&mut self, v: &str) {
        self.libcosim = Some(v.to_string());
    }

    fn threads_of(&self, c: Contender) -> Option<usize> {
        self.speed
            .iter()
            .flat_map(|r| &r.measurements)
            .filter(|m| m.contender == c)
            .map(|m| m.threads)
            .max()
    }

    /// The report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# cosim speed benchmark{}\n",
            if self.quick { " (--quick)" } else { "" }
        );
        let _ = writeln!(s, "Machine: {}.  ", machine());
        let _ = writeln!(s, "cosim: {}.  ", revision());
        let _ = writeln!(
            s,
            "Load average (1/5/15 min) at the start: {}, at the end: {} (other work on the machine inflates every figure, the parallel ones most).  ",
            self.load[0].as_deref().unwrap_or("?"),
            self.load[1].as_deref().unwrap_or("?")
        );
        let pooled = if self.rounds > 1 {
            format!(
                ", in each of {} processes (`--rounds {}`), every figure the median of all their runs pooled",
                self.rounds, self.rounds
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "libcosim: {}. Figures: the median of at least {} runs adding up to at least {} s (raw loop, cosim; at most 50 runs), of {} runs (libcosim){pooled}. Whole invocation: {:.0} s.\n",
            self.libcosim
                .as_deref()
                .map_or("not run".to_string(), |v| format!("{v} (libcosimpy)")),
            self.repeats,
            if self.quick { 0.2 } else { 1.0 },
            self.libcosim_repeats,
            self.elapsed.as_secs_f64()
        );
        let all = self
            .threads_of(Contender::CosimAll)
            .map_or("all cores".to_string(), |n| format!("all cores ({n})"));
        let lc0 = self
            .threads_of(Contender::LibcosimZero)
            .map_or(String::new(), |n| format!(" [{n} thr]"));
        let lcd = self
            .threads_of(Contender::LibcosimDefault)
            .map_or(String::new(), |n| format!(" [{n} thr]"));
        if !self.speed.is_empty() {
            let _ = writeln!(
                s,
                "## Nanoseconds per macro step per FMU (median; tracing off)\n"
            );
            let _ = writeln!(
                s,
                "| scenario | FMUs | conn. | steps | raw loop | cosim 1 thread | cosim {all} | libcosim 0 workers{lc0} | libcosim default{lcd} | cosim/raw | cosim/libcosim |"
            );
            let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
            for r in &self.speed {
                let lc_steps = r
                    .get(Contender::LibcosimZero)
                    .or(r.get(Contender::LibcosimDefault))
                    .map(|m| m.steps);
                let steps = match (r.get(Contender::Raw).map(|m| m.steps), lc_steps) {
                    (Some(a), Some(b)) if b < a => format!("{a} ({b})"),
                    (Some(a), _) => a.to_string(),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    r.id,
                    r.fmus,
                    r.connections,
                    steps,
                    fmt_ns(r.per_fmu(Contender::Raw)),
                    fmt_ns(r.per_fmu(Contender::CosimOne)),
                    fmt_ns(r.per_fmu(Contender::CosimAll)),
                    fmt_ns(r.per_fmu(Contender::LibcosimZero)),
                    fmt_ns(r.per_fmu(Contender::LibcosimDefault)),
                    fmt_ratio(r.cosim_over_raw()),
                    fmt_ratio(r.cosim_over_libcosim()),
                );
            }
            let _ = writeln!(
                s,
                "\nsteps: macro steps timed per run (libcosim's, in parentheses, where its runs were shortened). \
                 cosim/raw: cosim on 1 thread over the raw loop (both on one thread). \
                 cosim/libcosim: each in its best thread configuration. \
                 [n thr]: threads of the libcosim process while stepping.\n"
            );
            let heavy: Vec<&SpeedRow> = self
                .speed
                .iter()
                .filter(|r| r.id.starts_with("heavy"))
                .collect();
            if !heavy.is_empty() {
                let _ = writeln!(s, "## Parallel speed-up (heavy FMUs)\n");
                let _ = writeln!(
                    s,
                    "| scenario | cosim 1 thread, us/step | cosim {all}, us/step | speed-up | (fastest runs) | libcosim 0 workers, us/step | libcosim default, us/step | speed-up | (fastest runs) |"
                );
                let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|--:|");
                let us = |r: &SpeedRow, c| r.get(c).map(|m| m.ns_per_step() / 1000.0);
                let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
                for r in heavy {
                    let (c1, ca) = (us(r, Contender::CosimOne), us(r, Contender::CosimAll));
                    let (l0, ld) = (
                        us(r, Contender::LibcosimZero),
                        us(r, Contender::LibcosimDefault),
                    );
                    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                        (Some(a), Some(b)) => format!("{:.2}x", a / b),
                        _ => "-".into(),
                    };
                    let fastest = |c| r.get(c).map(|m| m.range_per_step().0);
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        r.id,
                        f(c1),
                        f(ca),
                        ratio(c1, ca),
                        ratio(fastest(Contender::CosimOne), fastest(Contender::CosimAll)),
                        f(l0),
                        f(ld),
                        ratio(l0, ld),
                        ratio(
                            fastest(Contender::LibcosimZero),
                            fastest(Contender::LibcosimDefault)
                        )
                    );
                }
                let _ = writeln!(
                    s,
                    "\nspeed-up: median time on one thread (libcosim: no worker) over median time on all cores (libcosim: its default pool); (fastest runs): the same with each contender's fastest run, less sensitive to other work on the machine.\n"
                );
            }
        }
        if !self.trace.is_empty() {
            let _ = writeln!(
                s,
                "## Trace cost (cosim, 1 thread, outputs on, a row every step)\n"
            );
            let _ = writeln!(
                s,
                "| scenario | columns | steps | trace off, ns/step | trace on, ns/step | ns per row | ns per value | rows/s (writing alone) | MB/s | rows/s (whole run) |"
            );
            let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
            for r in &self.trace {
                let per_row = r.ns_per_row();
                let on_s = median(&r.on.seconds);
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0} |",
                    r.id,
                    r.columns,
                    r.on.steps,
                    r.off.ns_per_step(),
                    r.on.ns_per_step(),
                    per_row,
                    per_row / r.columns.max(1) as f64,
                    1e9 / per_row,
                    r.bytes as f64 / r.on.steps.max(1) as f64 / per_row * 1e3,
                    r.on.steps as f64 / on_s,
                );
            }
            let _ = writeln!(
                s,
                "\ncolumns: of every CSV file written (the trace, and the step and energy logs where on). ns per row: the difference of the two medians (a row of each file). MB/s: bytes of CSV written per second of that difference. The files go to a temporary directory on the local disk.\n"
            );
        }
        if !self.startup.is_empty() {
            let _ = writeln!(s, "## Startup (cosim, 1 thread)\n");
            let _ = writeln!(
                s,
                "| benchmark | FMUs | load, extract, instantiate (ms) | per FMU (us) | initialise (ms) | runs | range, load to instantiate (ms) |"
            );
            let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|--:|");
            for r in &self.startup {
                let p = median(&r.prepare);
                let lo = r.prepare.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = r.prepare.iter().copied().fold(0.0, f64::max);
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.1} | {:.0} | {:.2} | {} | {:.1}-{:.1} |",
                    r.id,
                    r.fmus,
                    p * 1e3,
                    p * 1e6 / r.fmus.max(1) as f64,
                    median(&r.initialize) * 1e3,
                    r.prepare.len(),
                    lo * 1e3,
                    hi * 1e3,
                );
            }
            let _ = writeln!(
                s,
                "\nload, extract, instantiate: `runner::prepare_scenario` (read and resolve the scenario, extract each distinct .fmu once, load its library, instantiate every FMU and set its parameters), timed from reading the scenario file; initialise: the run summary's `init_time_s`. Medians.\n"
            );
            for r in &self.startup {
                let _ = writeln!(s, "- `{}`: {}", r.id, r.what);
            }
            let _ = writeln!(s);
        }
        if !self.speed.is_empty() {
            let _ = writeln!(
                s,
                "## Spread\n\nMinimum and maximum over the runs, ns per macro step per FMU.\n"
            );
            let _ = writeln!(
                s,
                "| scenario | raw loop | cosim 1 thread | cosim all cores | libcosim 0 workers | libcosim default |"
            );
            let _ = writeln!(s, "|---|--:|--:|--:|--:|--:|");
            for r in &self.speed {
                let cell = |c| {
                    r.get(c).map_or("-".to_string(), |m| {
                        let (a, b) = m.range_per_step();
                        let n = r.fmus.max(1) as f64;
                        format!("{:.0}-{:.0}", a / n, b / n)
                    })
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} |",
                    r.id,
                    cell(Contender::Raw),
                    cell(Contender::CosimOne),
                    cell(Contender::CosimAll),
                    cell(Contender::LibcosimZero),
                    cell(Contender::LibcosimDefault)
                );
            }
            let _ = writeln!(s);
            let _ = writeln!(s, "Scenarios:\n");
            for r in &self.speed {
                let _ = writeln!(s, "- `{}`: {}", r.id, r.what);
            }
            for r in &self.trace {
                let _ = writeln!(s, "- `{}`: {} ({} FMUs)", r.id, r.what, r.fmus);
            }
            let _ = writeln!(s);
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "Notes:\n");
            for n in &self.notes {
                let _ = writeln!(s, "- {n}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn merged_reports_pool_every_contenders_runs() {
        let row = |raw: Vec<f64>, cosim: Vec<f64>| SpeedRow {
            id: "chain".into(),
            what: "x".into(),
            fmus: 1,
            connections: 0,
            measurements: vec![
                Measurement {
                    contender: Contender::Raw,
                    steps: 1,
                    threads: 1,
                    seconds: raw,
                },
                Measurement {
                    contender: Contender::CosimOne,
                    steps: 1,
                    threads: 1,
                    seconds: cosim,
                },
            ],
        };
        let mut a = Report::new(false, 5, 3);
        a.speed.push(row(vec![1.0, 1.0, 1.0], vec![2.0, 2.0, 2.0]));
        a.note("same".into());
        let mut b = Report::new(false, 5, 3);
        b.speed
            .push(row(vec![3.0, 3.0, 3.0, 3.0], vec![3.0, 3.0, 3.0, 3.0]));
        b.speed.push(SpeedRow {
            id: "other".into(),
            ..row(vec![5.0], vec![6.0])
        });
        b.note("same".into());
        // Through JSON, as from a child process.
        let b: Report = serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap();
        a.merge(b);
        assert_eq!(a.rounds, 2);
        assert_eq!(a.speed.len(), 2);
        let chain = &a.speed[0];
        // Seven runs each: the medians are those of the pooled runs.
        assert_eq!(chain.get(Contender::Raw).unwrap().seconds.len(), 7);
        assert_eq!(chain.per_fmu(Contender::Raw), Some(3e9));
        assert_eq!(chain.per_fmu(Contender::CosimOne), Some(3e9));
        assert_eq!(a.speed[1].per_fmu(Contender::CosimOne), Some(6e9));
        assert_eq!(a.notes, ["same"]);
        assert!(
            a.markdown()
                .contains("in each of 2 processes (`--rounds 2`)")
        );
    }

    #[test]
    fn ratios_use_the_right_contenders() {
        let m = |c, s: f64| Measurement {
            contender: c,
            steps: 10,
            threads: 1,
            seconds: vec![s],
        };
        let row = SpeedRow {
            id: "x".into(),
            what: "x".into(),
            fmus: 2,
            connections: 1,
            measurements: vec![
                m(Contender::Raw, 1e-6),
                m(Contender::CosimOne, 2e-6),
                m(Contender::CosimAll, 4e-6),
                m(Contender::LibcosimZero, 100e-6),
                m(Contender::LibcosimDefault, 50e-6),
            ],
        };
        // 1e-6 s / 10 steps / 2 FMUs = 50 ns.
        assert!((row.per_fmu(Contender::Raw).unwrap_or(0.0) - 50.0).abs() < 1e-9);
        assert!((row.cosim_over_raw().unwrap_or(0.0) - 2.0).abs() < 1e-12);
        // best cosim (2e-6) over best libcosim (50e-6)
        assert!((row.cosim_over_libcosim().unwrap_or(0.0) - 0.04).abs() < 1e-12);
    }
}
