//! `cosim sweep`: batch runs of a scenario over step sizes, tolerances,
//! masters or parameters (`docs/sweep.md`), and `cosim sweep merge`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use cosim_sweep::{Options, Outcome, Record, Shard, Status, SweepSpec, Threshold};

use crate::console::{out, say};
use crate::run::{Failed, exit};

/// Arguments of `cosim sweep`.
#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// The sweep file (a `[sweep]` table naming the scenario), or a
    /// scenario with a `[sweep]` table of its own.
    #[arg(required = true, value_name = "SWEEP")]
    sweep: Option<PathBuf>,
    /// Runs at the same time (default: one per core).
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
    /// Run only the K-th of N slices (runs whose index is K-1 modulo N);
    /// writes summary.shard-K-of-N.csv for `cosim sweep merge`.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Output directory, replacing the sweep file's `out`.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Fail (exit status 1) when a summary row satisfies the condition,
    /// e.g. 'mean_abs_power_error > 1.5', 'max_abs:chassis.v_c > 1e-2',
    /// 'status != ok' (repeatable; adds to the sweep file's fail_if).
    #[arg(long = "fail-if", value_name = "METRIC OP VALUE")]
    fail_if: Vec<Threshold>,
    /// Do not draw the plot.
    #[arg(long)]
    no_plot: bool,
    /// Skip the bisection of the stability limit ([sweep.refine]).
    #[arg(long)]
    no_refine: bool,
    /// Delete each run's trace, energy log and step log once its metrics
    /// are in the summary (keeps its summary.json).
    #[arg(long)]
    prune: bool,
    /// Check the sweep and the first run's scenario with its FMUs, and list
    /// the runs, without running them.
    #[arg(long)]
    check: bool,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

#[derive(clap::Subcommand, Debug, Clone)]
enum Command {
    /// Join shard summaries (summary.shard-K-of-N.csv, with their .json
    /// sidecars) into one summary identical to an unsharded sweep's.
    Merge(MergeArgs),
}

#[derive(clap::Args, Debug, Clone)]
struct MergeArgs {
    /// The shard summaries.
    #[arg(required = true, value_name = "SHARD_SUMMARY")]
    inputs: Vec<PathBuf>,
    /// The merged summary CSV.
    #[arg(short, long, value_name = "CSV")]
    output: PathBuf,
    /// The plot (default: the sweep's plot file name beside the output).
    #[arg(long, value_name = "SVG")]
    plot: Option<PathBuf>,
    /// Do not draw the plot.
    #[arg(long)]
    no_plot: bool,
    /// Fail when a row satisfies the condition (as for `cosim sweep`).
    #[arg(long = "fail-if", value_name = "METRIC OP VALUE")]
    fail_if: Vec<Threshold>,
}

fn bad_input(msg: impl std::fmt::Display) -> anyhow::Error {
    say!("{msg}");
    anyhow::Error::new(Failed(exit::BAD_INPUT))
}

/// Runs `cosim sweep`.
pub fn run(args: &Args, quiet: bool) -> Result<()> {
    if let Some(Command::Merge(m)) = &args.command {
        return merge(m);
    }
    let Some(path) = &args.sweep else {
        return Err(bad_input("error: give a sweep file"));
    };
    let spec = SweepSpec::load(path).map_err(bad_input)?;
    let warnings = cosim_sweep::check(&spec).map_err(bad_input)?;
    for w in warnings.iter().filter(|_| !quiet) {
        say!("{w}");
    }
    let total = spec.grid_len();
    cosim_sweep::check_metrics(&spec, &args.fail_if).map_err(bad_input)?;
    if args.check {
        let shard = args.shard;
        let mine = (0..total)
            .filter(|&i| shard.is_none_or(|s| s.owns(i)))
            .count();
        say!(
            "{}: ok ({} axes, {total} runs{}, scenario {})",
            path.display(),
            spec.axes.len(),
            shard.map_or(String::new(), |s| format!(
                ", {mine} in shard {}/{}",
                s.k, s.n
            )),
            spec.scenario.display()
        );
        for i in (0..total).filter(|&i| shard.is_none_or(|s| s.owns(i))) {
            let planned = cosim_sweep::Planned {
                index: i,
                stage: 0,
                values: spec.grid_values(i),
            };
            out!("{}\n", cosim_sweep::runs::run_name(&spec, &planned))?;
        }
        return Ok(());
    }
    let options = Options {
        jobs: args.jobs,
        shard: args.shard,
        out: args.out.clone(),
        fail_if: args.fail_if.clone(),
        plot: !args.no_plot,
        refine: !args.no_refine,
        prune: args.prune,
        interrupt: None,
    };
    if args.shard.is_some() && spec.refine.is_some() && !args.no_refine {
        say!("note: [sweep.refine] is skipped in a shard (the bisection needs every run's result)");
    }
    let started = Instant::now();
    let progress = Progress::new(!args.no_progress && !quiet);
    let outcome = cosim_sweep::run(&spec, &options, &progress).map_err(bad_input)?;
    progress.finish();
    if !quiet {
        report(&outcome, Some(started.elapsed().as_secs_f64()));
    }
    violations(&outcome)
}

fn merge(m: &MergeArgs) -> Result<()> {
    let plot = if m.no_plot {
        None
    } else {
        Some(m.plot.clone().unwrap_or_default())
    };
    let outcome =
        cosim_sweep::merge(&m.inputs, &m.output, plot.as_deref(), &m.fail_if).map_err(bad_input)?;
    report(&outcome, None);
    violations(&outcome)
}

fn report(outcome: &Outcome, wall: Option<f64>) {
    let c = outcome.meta.counts;
    let runs = c.ok + c.diverged + c.error;
    let time = wall.map_or(String::new(), |w| format!(" in {w:.1} s"));
    say!(
        "sweep: {runs} runs ({} ok, {} diverged, {} failed){time}",
        c.ok,
        c.diverged,
        c.error
    );
    say!("  summary: {}", outcome.summary_path.display());
    if let Some(p) = &outcome.plot_path {
        say!("  plot:    {}", p.display());
    }
    let fmt = |x: Option<f64>| x.map_or("-".to_string(), cosim_sweep::axis::format_float);
    for l in outcome.limits() {
        let group = if l.group.is_empty() {
            String::new()
        } else {
            format!(" ({})", l.group)
        };
        match (l.stable, l.unstable) {
            (_, None) => {}
            (None, Some(u)) => say!(
                "  {}{group}: diverged from {} on (no smaller value ran ok)",
                l.axis,
                fmt(Some(u))
            ),
            (Some(_), Some(_)) => say!(
                "  stability limit of {}{group}: ok up to {}, diverged from {}; estimate {}",
                l.axis,
                fmt(l.stable),
                fmt(l.unstable),
                fmt(l.estimate.map(cosim_sweep::axis::round_significant))
            ),
        }
    }
    if c.error > 0 {
        let status = outcome.summary.column("status").unwrap_or_default();
        let message = outcome.summary.column("message").unwrap_or_default();
        let run = outcome.summary.column("run").unwrap_or_default();
        for ((s, m), r) in status.iter().zip(&message).zip(&run) {
            if *s == "error" {
                say!("  failed: {r}: {m}");
            }
        }
    }
}

fn violations(outcome: &Outcome) -> Result<()> {
    if outcome.violations.is_empty() {
        return Ok(());
    }
    let runs: std::collections::BTreeSet<(u64, &str)> = outcome
        .violations
        .iter()
        .map(|v| (v.index.parse().unwrap_or(u64::MAX), v.run.as_str()))
        .collect();
    let runs: Vec<&str> = runs.into_iter().map(|(_, r)| r).collect();
    say!(
        "error: {} run(s) fail the thresholds: {}",
        runs.len(),
        runs.join(", ")
    );
    for v in &outcome.violations {
        say!(
            "  {}: run {} (index {}) has {}",
            v.threshold,
            v.run,
            v.index,
            if v.value.is_empty() {
                "no value".to_string()
            } else {
                v.value.clone()
            }
        );
    }
    // The failing rows, as CSV with the header.
    let mut rows: Vec<usize> = outcome.violations.iter().map(|v| v.row).collect();
    rows.sort_unstable();
    rows.dedup();
    let failing = cosim_sweep::Summary {
        columns: outcome.summary.columns.clone(),
        rows: rows
            .iter()
            .filter_map(|&r| outcome.summary.rows.get(r).cloned())
            .collect(),
    };
    if let Ok(text) = failing.to_csv() {
        // (The failure is what counts: a lost listing does not change it.)
        let _ = out!("{text}");
    }
    Err(anyhow::Error::new(Failed(exit::RUN_FAILED)))
}

/// Progress over the runs: a bar on a terminal, a line per run otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    done: std::sync::atomic::AtomicUsize,
    total: std::sync::atomic::AtomicUsize,
    plain: bool,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = (enabled && terminal).then(|| {
            let bar = indicatif::ProgressBar::new(0);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} runs [{elapsed_precise} < {eta_precise}] {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Progress {
            bar,
            done: Default::default(),
            total: Default::default(),
            plain: enabled && !terminal,
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl cosim_sweep::Progress for Progress {
    fn planned(&self, runs: usize) {
        use std::sync::atomic::Ordering;
        self.total.fetch_add(runs, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.inc_length(runs as u64);
        }
    }

    fn finished(&self, r: &Record) {
        use std::sync::atomic::Ordering;
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let total = self.total.load(Ordering::Relaxed);
        let status = r.status.as_str();
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(format!("{} {status}", r.name));
        } else if self.plain {
            let why = if r.status == Status::Ok || r.message.is_empty() {
                String::new()
            } else {
                format!(": {}", r.message)
            };
            say!(
                "run {done}/{total} {} {status} ({:.2} s){why}",
                r.name,
                r.wall_time_s
            );
        }
    }
}
