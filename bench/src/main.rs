//! `cosim-bench`: the speed benchmark of issue 10.
//!
//! Runs, in one invocation and on the same FMU files (`fmus/dist/fmi2`),
//! the scenarios of `bench/scenarios/` with every contender:
//!
//! - `raw`: a minimal FMI 2.0 loop making only the FFI calls a Jacobi master
//!   must make ([`raw`]): the floor;
//! - `cosim` in process through the library, with 1 worker thread and with
//!   all cores ([`cosim`]);
//! - libcosim's fixed-step algorithm through libcosimpy, with its worker
//!   pool empty and at its default size (`bench/peer/libcosim_bench.py`).
//!
//! Every contender is timed over its stepping loop only (FMU loading,
//! instantiation and initialization excluded); the figure is the median
//! over repeated runs, in nanoseconds per macro step per FMU. It also
//! measures the cost of writing the trace with every variable traced.
//! Output: a Markdown report (default `bench/results/latest.md`), also
//! printed. Timings are figures, never pass/fail.
//!
//! `--scenario FILE` (repeatable) adds the user's own scenario file as a
//! speed benchmark (id: its file stem) run by the same contenders, to
//! measure the floor on any FMI 2.0 FMUs ([`custom`]).
//!
//!     cargo run --release -p cosim-bench -- [--quick] [--out FILE] [--only chain]
//!         [--scenario my.toml ... [--steps N]]

mod cosim;
mod custom;
mod peer;
mod plan;
mod raw;
mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use cosim_scenario::Overrides;

use crate::report::{Contender, Measurement, Report, SpeedRow, StartupRow, TraceRow};

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "cosim-bench",
    about = "Speed of cosim against libcosim and a raw FFI loop"
)]
struct Args {
    /// Shorter runs and fewer repetitions (about a minute in all).
    #[arg(long)]
    quick: bool,
    /// Where to write the Markdown report (`-`: nowhere). Default:
    /// bench/results/latest.md, or bench/results/quick.md with --quick.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only these benchmarks: an exact id selects that one, any other
    /// string every id containing it (`--only chain,heavy`). Selects among
    /// the built-in benchmarks; `--scenario` files always run.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Also benchmark this scenario file (repeatable): a speed benchmark
    /// with the file's stem as its id, run by the same contenders, e.g. to
    /// measure the floor on one's own FMUs. It must be something the raw
    /// loop can run (FMI 2.0 FMUs, fixed-step Jacobi, extrapolation 0, Real
    /// connections; anything else is refused by name). With --scenario and
    /// no --only, no built-in benchmark runs.
    #[arg(long = "scenario", value_name = "FILE")]
    scenarios: Vec<PathBuf>,
    /// Macro steps of each --scenario benchmark. Default: the scenario's
    /// own start to stop time (at most 20000 with --quick).
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Leave out the libcosim contenders.
    #[arg(long)]
    no_libcosim: bool,
    /// Only these contenders (default: all). The trace-cost measurement
    /// always runs cosim on 1 thread.
    #[arg(long, value_enum, value_delimiter = ',')]
    contenders: Vec<Contender>,
    /// Python interpreter with libcosimpy for the libcosim peer.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Least runs per contender for the raw loop and cosim (the figure is
    /// their median; short runs are repeated until they add up to 1 s,
    /// 0.2 s with --quick, at most 50). Default 5, 3 with --quick.
    #[arg(long)]
    repeats: Option<usize>,
    /// Run the whole benchmark in this many processes, one after the
    /// other, and pool their runs: each figure is the median over the runs
    /// of every process. What an FMU's calls cost can differ from one
    /// process to the next (where its instance lies in memory, say), so a
    /// ratio decided by a few percent wants more than one.
    #[arg(long, default_value_t = 1, value_name = "N")]
    rounds: usize,
    /// (For --rounds: write what was measured as JSON to this file.)
    #[arg(long, hide = true, value_name = "FILE")]
    emit_json: Option<PathBuf>,
    /// Only build the project's FMUs and install the CGain FMUs into
    /// fmus/dist/c (for `cosim run bench/scenarios/...`), then exit.
    #[arg(long)]
    install: bool,
    /// Write each benchmark's plan (the JSON the libcosim peer reads) into
    /// this directory and exit.
    #[arg(long)]
    write_plans: Option<PathBuf>,
}

/// What a benchmark measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Every contender, tracing off.
    Speed,
    /// `cosim` only: this file (trace on) against `base` (trace off).
    Trace {
        /// The id of the same system with tracing off.
        base: &'static str,
    },
    /// `cosim` only: the time to load the scenario, extract and load the
    /// FMUs and instantiate them, then to initialise them.
    Startup {
        /// The scenario (an id of bench/scenarios/).
        scenario: &'static str,
    },
}

/// One benchmark.
#[derive(Debug, Clone, Copy)]
struct Bench {
    /// Id, also the scenario file stem in bench/scenarios/.
    id: &'static str,
    /// What it is, for the report.
    what: &'static str,
    /// Macro steps of a full run.
    steps: u64,
    /// Macro steps with --quick.
    quick_steps: u64,
    kind: Kind,
}

const BENCHES: &[Bench] = &[
    Bench {
        id: "chain_3",
        what: "chain of 3 CGain FMUs (C, y = u), 1 ms, no `variables` list",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_3_vars",
        what: "chain_3 with `variables` = two outputs",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_3_sampled",
        what: "chain_3 with a trace of every output at an interval of 0.1 s (a row every 100 steps)",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_10",
        what: "chain of 10 CGain FMUs, 1 ms, no `variables` list",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_10_vars",
        what: "chain_10 with `variables` = two outputs",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_100",
        what: "chain of 100 CGain FMUs, 1 ms, no `variables` list",
        steps: 100_000,
        quick_steps: 5_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_100_vars",
        what: "chain_100 with `variables` = two outputs",
        steps: 100_000,
        quick_steps: 5_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "kit_chain_10",
        what: "chain_10 on the kit's Gain (Rust, fmus/kit) instead of CGain",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "b1_quarter_car",
        what: "B1 quarter car, reticulation A (2 FMUs, 2 connections, one bond), 1 ms",
        steps: 1_000_000,
        quick_steps: 50_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "wide_200",
        what: "two Wide FMUs, 200 connections each way, 1 ms",
        steps: 100_000,
        quick_steps: 10_000,
        kind: Kind::Speed,
    },
    Bench {
        id: "heavy_2",
        what: "chain of 2 Gain FMUs with busy_work (about 55 us per doStep)",
        steps: 4_000,
        quick_steps: 500,
        kind: Kind::Speed,
    },
    Bench {
        id: "heavy_4",
        what: "chain of 4 Gain FMUs with busy_work (about 55 us per doStep)",
        steps: 4_000,
        quick_steps: 500,
        kind: Kind::Speed,
    },
    Bench {
        id: "chain_10_trace",
        what: "chain_10, every variable traced (21 columns), a row every step",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Trace { base: "chain_10" },
    },
    Bench {
        id: "wide_200_trace",
        what: "wide_200, every variable traced (801 columns), a row every step",
        steps: 5_000,
        quick_steps: 1_000,
        kind: Kind::Trace { base: "wide_200" },
    },
    Bench {
        id: "b1_default",
        what: "b1_quarter_car with the outputs a scenario has by default: every output traced, the step log and the energy log, a row every step",
        steps: 100_000,
        quick_steps: 20_000,
        kind: Kind::Trace {
            base: "b1_quarter_car",
        },
    },
    Bench {
        id: "startup_100",
        what: "load the scenario, extract, load and instantiate 100 CGain FMUs (chain_100), then initialise them",
        steps: 1,
        quick_steps: 1,
        kind: Kind::Startup {
            scenario: "chain_100",
        },
    },
];

/// A benchmark to run: a built-in one or a `--scenario` file.
#[derive(Debug, Clone)]
struct Job {
    /// Id (built-in: the file stem in bench/scenarios/; `--scenario`: the
    /// file's stem).
    id: String,
    /// What it is, for the report.
    what: String,
    /// The scenario file.
    path: PathBuf,
    /// Macro steps of a run.
    steps: u64,
    kind: Kind,
}

/// The benchmarks `args` select: the built-in ones `--only` picks (all of
/// them when there is neither `--only` nor `--scenario`), then the
/// `--scenario` files.
fn select(args: &Args) -> Result<Vec<Job>> {
    let builtin = BENCHES.iter().filter(|b| {
        if args.only.is_empty() {
            return args.scenarios.is_empty();
        }
        args.only
            .iter()
            .any(|o| b.id == o || (!BENCHES.iter().any(|x| x.id == o) && b.id.contains(o.as_str())))
    });
    let mut jobs: Vec<Job> = builtin
        .map(|b| Job {
            id: b.id.to_string(),
            what: b.what.to_string(),
            path: scenario_path(b.id),
            steps: steps_of(b, args.quick),
            kind: b.kind,
        })
        .collect();
    if !args.only.is_empty() && jobs.is_empty() {
        bail!("--only {:?} selects no benchmark", args.only);
    }
    for file in &args.scenarios {
        let c = custom::custom(file, args.steps, args.quick)?;
        if let Some(j) = jobs.iter().find(|j| j.id == c.id) {
            bail!(
                "--scenario {}: its id `{}` is already the id of {} (rename the file)",
                file.display(),
                c.id,
                j.path.display()
            );
        }
        jobs.push(Job {
            what: format!("`{}` (--scenario)", c.path.display()),
            id: c.id,
            path: c.path,
            steps: c.steps,
            kind: Kind::Speed,
        });
    }
    Ok(jobs)
}

/// Most FMU steps (macro steps x FMUs) one libcosim run takes: libcosim
/// costs microseconds per FMU step, so its runs of the long scenarios are
/// shortened (the figure is per step; the report gives the steps run).
const LIBCOSIM_FMU_STEPS: u64 = 1_000_000;

/// Most runs of one contender (raw loop, cosim) on one scenario.
const MAX_RUNS: usize = 50;
const LIBCOSIM_FMU_STEPS_QUICK: u64 = 100_000;

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The overrides of a speed benchmark's cosim runs: `steps` macro steps,
/// every output file into `out`.
fn speed_overrides(plan: &plan::Plan, steps: u64, out: &Path) -> Overrides {
    Overrides {
        out: Some(out.to_path_buf()),
        ..plan::overrides_for(plan.start, plan.step, steps)
    }
}

fn scenario_path(id: &str) -> PathBuf {
    bench_dir().join("scenarios").join(format!("{id}.toml"))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("cosim-bench: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    fmu_kit::dist::ensure_built().context("building the FMUs (cargo xtask fmus)")?;
    cosim_cgain::install().context("installing the CGain FMUs into fmus/dist/c")?;
    if args.install {
        return Ok(());
    }
    let selected = select(&args)?;

    if let Some(dir) = &args.write_plans {
        std::fs::create_dir_all(dir)?;
        for b in selected.iter().filter(|b| b.kind == Kind::Speed) {
            let p = plan::plan(&b.path, b.steps)?;
            let file = dir.join(format!("{}.json", b.id));
            std::fs::write(&file, serde_json::to_string_pretty(&p)?)?;
            println!("{}", file.display());
        }
        return Ok(());
    }

    if args.rounds > 1 {
        return run_rounds(&args, started);
    }

    let repeats = args
        .repeats
        .unwrap_or(if args.quick { 3 } else { 5 })
        .max(1);
    let libcosim_repeats = if args.quick { 1 } else { 3 };
    let mut report = Report::new(args.quick, repeats, libcosim_repeats);
    let plans_dir = tempfile::Builder::new()
        .prefix("cosim-bench-plans-")
        .tempdir()?;
    let wanted = |c: Contender| args.contenders.is_empty() || args.contenders.contains(&c);
    let mut libcosim_ok = !args.no_libcosim;
    if args.no_libcosim {
        report.note("libcosim left out (--no-libcosim).".into());
    }

    for b in &selected {
        let steps = b.steps;
        let path = &b.path;
        match b.kind {
            Kind::Speed => {
                eprintln!("{}: {} steps", b.id, steps);
                let plan = plan::plan(path, steps)
                    .with_context(|| format!("{}: {}", b.id, path.display()))?;
                // (Into a temporary directory: a scenario with outputs on
                // writes there.)
                let out = tempfile::Builder::new()
                    .prefix("cosim-bench-out-")
                    .tempdir()?;
                let overrides = speed_overrides(&plan, steps, out.path());
                let mut m: Vec<Measurement> =
                    [Contender::Raw, Contender::CosimOne, Contender::CosimAll]
                        .into_iter()
                        .filter(|&c| wanted(c))
                        .map(|c| Measurement::new(c, steps))
                        .collect();
                // Rounds over the contenders until each has `repeats` runs
                // and at least `min_total` seconds of them (short runs are
                // noisy), at most MAX_RUNS.
                let min_total = if args.quick { 0.2 } else { 1.0 };
                loop {
                    let mut ran = false;
                    for mm in &mut m {
                        let total: f64 = mm.seconds.iter().sum();
                        let n = mm.seconds.len();
                        if n >= MAX_RUNS || (n >= repeats && total >= min_total) {
                            continue;
                        }
                        ran = true;
                        let threads = match mm.contender {
                            Contender::Raw => {
                                let r = raw::run(&plan)?;
                                if r.outputs.iter().flatten().any(|(_, v)| !v.is_finite()) {
                                    bail!("{}: the raw loop ended with a non-finite output", b.id);
                                }
                                mm.push(r.elapsed.as_secs_f64());
                                continue;
                            }
                            Contender::CosimOne => 1,
                            _ => 0,
                        };
                        let r = cosim::run(path, &overrides, threads)?;
                        if r.steps != steps {
                            bail!("{}: cosim took {} steps, not {steps}", b.id, r.steps);
                        }
                        mm.threads = r.threads;
                        mm.push(r.elapsed.as_secs_f64());
                    }
                    if !ran {
                        break;
                    }
                }
                if libcosim_ok {
                    let cap = if args.quick {
                        LIBCOSIM_FMU_STEPS_QUICK
                    } else {
                        LIBCOSIM_FMU_STEPS
                    };
                    let lc_steps = steps.min((cap / plan.fmus.len() as u64).max(100));
                    let file = plans_dir.path().join(format!("{}.json", b.id));
                    std::fs::write(&file, serde_json::to_string(&plan)?)?;
                    for (contender, workers) in [
                        (Contender::LibcosimZero, "0"),
                        (Contender::LibcosimDefault, "default"),
                    ] {
                        if !wanted(contender) {
                            continue;
                        }
                        match peer::run(&args.python, &file, workers, lc_steps, libcosim_repeats) {
                            Ok(out) => {
                                report.libcosim_version(&out.libcosim);
                                let mut lm = Measurement::new(contender, out.steps);
                                lm.threads = out.threads;
                                for s in out.seconds {
                                    lm.push(s);
                                }
                                m.push(lm);
                            }
                            Err(e) => {
                                eprintln!("libcosim peer failed, left out from here on: {e:#}");
                                report.note(format!("libcosim left out: {e:#}"));
                                libcosim_ok = false;
                                break;
                            }
                        }
                    }
                }
                let row = SpeedRow {
                    id: b.id.clone(),
                    what: b.what.clone(),
                    fmus: plan.fmus.len(),
                    connections: plan.connections.len(),
                    measurements: m,
                };
                eprintln!("{}", row.summary_line());
                report.speed.push(row);
            }
            Kind::Trace { base } => {
                eprintln!("{}: {} steps", b.id, steps);
                let base_path = scenario_path(base);
                let p = plan::plan(&base_path, steps)?;
                let out = tempfile::Builder::new()
                    .prefix("cosim-bench-trace-")
                    .tempdir()?;
                let mut overrides = plan::overrides_for(p.start, p.step, steps);
                let mut off = Measurement::new(Contender::CosimOne, steps);
                let mut on = Measurement::new(Contender::CosimOne, steps);
                for _ in 0..repeats {
                    overrides.out = None;
                    off.push(cosim::run(&base_path, &overrides, 1)?.elapsed.as_secs_f64());
                    overrides.out = Some(out.path().to_path_buf());
                    on.push(cosim::run(path, &overrides, 1)?.elapsed.as_secs_f64());
                }
                // Every CSV file the run wrote (the trace, and the logs
                // where they are on).
                let (mut columns, mut bytes) = (0, 0);
                for csv in csv_files(out.path())? {
                    columns += trace_columns(&csv)?;
                    bytes += std::fs::metadata(&csv)?.len();
                }
                let row = TraceRow {
                    id: b.id.clone(),
                    what: b.what.clone(),
                    fmus: p.fmus.len(),
                    columns,
                    bytes,
                    off,
                    on,
                };
                eprintln!("{}", row.summary_line());
                report.trace.push(row);
            }
            Kind::Startup { scenario } => {
                eprintln!("{}: {scenario}", b.id);
                let p = plan::plan(&scenario_path(scenario), 1)?;
                let overrides = plan::overrides_for(p.start, p.step, 1);
                let mut row = StartupRow {
                    id: b.id.clone(),
                    what: b.what.clone(),
                    fmus: p.fmus.len(),
                    prepare: Vec::new(),
                    initialize: Vec::new(),
                };
                for _ in 0..repeats {
                    let (prepare, init) = cosim::startup(&scenario_path(scenario), &overrides)?;
                    row.prepare.push(prepare.as_secs_f64());
                    row.initialize.push(init.as_secs_f64());
                }
                eprintln!("{}", row.summary_line());
                report.startup.push(row);
            }
        }
    }
    report.finish(started.elapsed());
    if let Some(file) = &args.emit_json {
        std::fs::write(file, serde_json::to_string(&report)?)
            .with_context(|| format!("writing {}", file.display()))?;
    }
    write_report(&args, &report)
}

/// `--rounds N`: runs this benchmark with the same options in N child
/// processes, one after the other, and writes the report of their runs
/// pooled ([`Report::merge`]).
fn run_rounds(args: &Args, started: Instant) -> Result<()> {
    let exe = std::env::current_exe().context("locating the cosim-bench executable")?;
    let dir = tempfile::Builder::new()
        .prefix("cosim-bench-rounds-")
        .tempdir()?;
    let passed = child_args(std::env::args_os().skip(1));
    let mut pooled: Option<Report> = None;
    for i in 1..=args.rounds {
        eprintln!("round {i} of {}", args.rounds);
        let json = dir.path().join(format!("round-{i}.json"));
        let status = std::process::Command::new(&exe)
            .args(&passed)
            .args(["--out", "-", "--emit-json"])
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("starting {}", exe.display()))?;
        if !status.success() {
            bail!("round {i} of {}: cosim-bench {status}", args.rounds);
        }
        let text = std::fs::read_to_string(&json)
            .with_context(|| format!("round {i}: reading {}", json.display()))?;
        let report: Report = serde_json::from_str(&text)
            .with_context(|| format!("round {i}: {}", json.display()))?;
        match &mut pooled {
            None => pooled = Some(report),
            Some(p) => p.merge(report),
        }
    }
    let mut report = pooled.context("no round ran")?;
    report.finish(started.elapsed());
    write_report(args, &report)
}

/// The command-line arguments for a child of `--rounds`: all but
/// `--rounds`, `--out` and `--emit-json` (and their values).
fn child_args(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for a in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let text = a.to_string_lossy();
        let own = ["--rounds", "--out", "--emit-json"];
        if own.contains(&text.as_ref()) {
            skip_value = true;
        } else if !own.iter().any(|o| text.starts_with(&format!("{o}="))) {
            out.push(a);
        }
    }
    out
}

/// Prints the report and writes it to `--out` (default
/// bench/results/latest.md, or quick.md with --quick; `-`: nowhere).
fn write_report(args: &Args, report: &Report) -> Result<()> {
    let text = report.markdown();
    println!("{text}");
    let out = args.out.clone().unwrap_or_else(|| {
        bench_dir()
            .join("results")
            .join(if args.quick { "quick.md" } else { "latest.md" })
    });
    if out != Path::new("-") {
        if let Some(dir) = out.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&out, text)?;
        eprintln!("report written to {}", out.display());
    }
    Ok(())
}

fn steps_of(b: &Bench, quick: bool) -> u64 {
    if quick { b.quick_steps } else { b.steps }
}

/// Number of columns of a CSV file's header.
/// The CSV files in `dir` (none is an error: the run wrote nothing).
fn csv_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "csv") {
            files.push(path);
        }
    }
    if files.is_empty() {
        bail!("{}: the run wrote no CSV file", dir.display());
    }
    files.sort();
    Ok(files)
}

fn trace_columns(path: &Path) -> Result<usize> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut header = String::new();
    std::io::BufReader::new(f).read_line(&mut header)?;
    Ok(header.trim_end().split(',').count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child of `--rounds` gets every option but `--rounds`, `--out` and
    /// `--emit-json` (which the parent sets), in both spellings.
    #[test]
    fn rounds_children_get_every_option_but_their_own() {
        let args = [
            "--rounds",
            "3",
            "--only",
            "chain_3",
            "--out=x.md",
            "--scenario",
            "a.toml",
            "--emit-json",
            "r.json",
            "--rounds=2",
            "--no-libcosim",
        ]
        .map(std::ffi::OsString::from);
        let got = child_args(args.into_iter());
        assert_eq!(
            got,
            ["--only", "chain_3", "--scenario", "a.toml", "--no-libcosim"]
                .map(std::ffi::OsString::from)
        );
    }

    /// A speed benchmark with its trace on (chain_3_sampled): the raw loop
    /// runs its plan (the trace is cosim's alone), and cosim writes the
    /// trace, a row every 0.1 s and one at the end, where the benchmark
    /// says.
    #[test]
    fn a_speed_benchmark_with_its_trace_on_writes_it_where_the_benchmark_says() {
        cosim_cgain::install().unwrap();
        let path = scenario_path("chain_3_sampled");
        let steps = 250;
        let plan = plan::plan(&path, steps).unwrap();
        assert_eq!((plan.fmus.len(), plan.connections.len()), (3, 2));
        raw::run(&plan).unwrap();
        let out = tempfile::tempdir().unwrap();
        let r = cosim::run(&path, &speed_overrides(&plan, steps, out.path()), 1).unwrap();
        assert_eq!(r.steps, steps);
        let trace = std::fs::read_to_string(out.path().join("trace.csv")).unwrap();
        let times: Vec<&str> = trace
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(times, ["0.0", "0.1", "0.2", "0.25"]);
    }

    /// `--scenario` is repeatable; without `--only` it runs alone, with
    /// `--only` beside the built-in benchmarks selected; a file that is not
    /// there, or whose id is already taken, is refused by name.
    #[test]
    fn scenario_option_selects_extra_benchmarks() {
        cosim_cgain::install().unwrap();
        let chain_3 = scenario_path("chain_3");
        let chain_10 = scenario_path("chain_10");
        let parse = |extra: &[&str]| {
            let mut argv = vec!["cosim-bench"];
            argv.extend_from_slice(extra);
            Args::try_parse_from(argv).unwrap()
        };
        let a = chain_3.to_str().unwrap();
        let b = chain_10.to_str().unwrap();
        let args = parse(&["--scenario", a, "--scenario", b, "--steps", "10"]);
        let jobs = select(&args).unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["chain_3", "chain_10"]);
        assert!(jobs.iter().all(|j| j.steps == 10 && j.kind == Kind::Speed));

        let args = parse(&["--only", "chain_100", "--scenario", a]);
        let jobs = select(&args).unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["chain_100", "chain_3"]);
        assert_eq!(jobs[1].steps, 100_000, "the file's own 0..100 s at 1 ms");

        let e = format!(
            "{:#}",
            select(&parse(&["--scenario", "nowhere.toml"])).unwrap_err()
        );
        assert!(e.contains("nowhere.toml"), "{e}");
        let e = format!(
            "{:#}",
            select(&parse(&["--only", "chain_3", "--scenario", a])).unwrap_err()
        );
        assert!(e.contains("already the id"), "{e}");
    }
}
