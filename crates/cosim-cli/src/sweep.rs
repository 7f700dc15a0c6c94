//! `cosim sweep`: batch runs of a scenario over step sizes, tolerances,
//! masters or parameters (`docs/sweep.md`), and `cosim sweep merge`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use cosim_sweep::slurm::{self, Phase, Submission};
use cosim_sweep::{Options, Outcome, Record, ShardArg, Status, SweepSpec, Threshold};

use crate::console::{count, out, say, shown};
use crate::interrupt::Interrupt;
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
    /// Runs at the same time, each job a worker process taking run after
    /// run (default and 0: one per core; at most 1024).
    #[arg(short, long, value_name = "N", value_parser = crate::run::thread_count)]
    jobs: Option<usize>,
    /// Run only the K-th of N slices (runs whose index is K-1 modulo N);
    /// writes summary.shard-K-of-N.csv for `cosim sweep merge`. `auto`:
    /// from a Slurm job array (SLURM_ARRAY_TASK_ID, _MIN, _MAX or _COUNT);
    /// `auto/N`: N shards, K from SLURM_ARRAY_TASK_ID (1..N) or a Kubernetes
    /// indexed Job's JOB_COMPLETION_INDEX (0..N-1).
    #[arg(long, value_name = "K/N|auto|auto/N")]
    shard: Option<ShardArg>,
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
    /// Keep no file of a run: its metrics are computed from its rows in
    /// memory, its row of the summary is all that is written (no run
    /// directory, trace, logs or summary.json).
    #[arg(long)]
    prune: bool,
    /// Instantiate every run's FMUs anew instead of resetting and reusing
    /// the instances of the run before (for an FMU whose fmi2Reset /
    /// fmi3Reset does not give back a new instance's state).
    #[arg(long)]
    fresh_instances: bool,
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
    /// Run the sweep on a cluster: a Slurm job array of shards (each
    /// `cosim sweep --shard auto/N`) and a merge job after it; waits for
    /// the merged summary.
    Submit(SubmitArgs),
}

#[derive(clap::Args, Debug, Clone)]
struct SubmitArgs {
    /// The sweep file.
    #[arg(value_name = "SWEEP")]
    sweep: PathBuf,
    /// Submit to Slurm with sbatch (the only engine here; Kubernetes and CI
    /// matrices: docs/sweep.md).
    #[arg(long, required = true)]
    slurm: bool,
    /// How many shards: tasks of the job array.
    #[arg(long, value_name = "N")]
    shards: usize,
    /// Output directory, which must be on a filesystem that this machine
    /// and every compute node share: the shards write their runs and
    /// summaries there, the merge the summary; scripts and logs go to
    /// DIR/slurm/.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Slurm partition (sbatch --partition).
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    /// Time limit of each task and of the merge (sbatch --time: MINUTES,
    /// H:MM:SS, D-HH:MM:SS).
    #[arg(long, value_name = "TIME")]
    time: Option<String>,
    /// CPUs of each task (sbatch --cpus-per-task); a shard runs that many
    /// runs at a time.
    #[arg(long, value_name = "N")]
    cpus_per_task: Option<usize>,
    /// At most M tasks running at once (the array's %M).
    #[arg(long, value_name = "M")]
    throttle: Option<usize>,
    /// Another sbatch option for both jobs, as one word
    /// (--sbatch-arg=--account=proj; repeatable).
    #[arg(long = "sbatch-arg", value_name = "OPTION", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// Job name (default: cosim-<sweep file stem>; the merge job's gets -merge).
    #[arg(long, value_name = "NAME")]
    job_name: Option<String>,
    /// The cosim executable the jobs run, as the compute nodes see it
    /// (default: this one).
    #[arg(long, value_name = "PATH")]
    cosim: Option<PathBuf>,
    /// Shards keep no file of a run (as `cosim sweep --prune`).
    #[arg(long)]
    prune: bool,
    /// A threshold checked by the merge (as for `cosim sweep`; repeatable).
    #[arg(long = "fail-if", value_name = "METRIC OP VALUE")]
    fail_if: Vec<Threshold>,
    /// The merge draws no plot.
    #[arg(long)]
    no_plot: bool,
    /// Print the batch scripts; submit nothing.
    #[arg(long)]
    dry_run: bool,
    /// Submit and return: print the job ids and the merge command.
    #[arg(long)]
    no_wait: bool,
    /// Seconds between two squeue polls while waiting.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    poll: f64,
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

/// The command that starts a worker process of the sweep: this `cosim`,
/// `sweep-worker`, with the same verbosity.
fn worker_command(quiet: bool, verbose: u8) -> Result<cosim_sweep::WorkerCommand> {
    let program = std::env::current_exe()
        .map_err(|e| bad_input(format!("error: the path of this cosim executable: {e}")))?;
    let mut args: Vec<std::ffi::OsString> = vec!["sweep-worker".into()];
    if quiet {
        args.push("-q".into());
    }
    args.extend((0..verbose).map(|_| "-v".into()));
    Ok(cosim_sweep::WorkerCommand {
        program,
        args,
        env: Vec::new(),
    })
}

/// Runs `cosim sweep`.
pub fn run(args: &Args, quiet: bool, verbose: u8) -> Result<()> {
    match &args.command {
        Some(Command::Merge(m)) => return merge(m),
        Some(Command::Submit(s)) => return submit(s, quiet),
        None => {}
    }
    let Some(path) = &args.sweep else {
        return Err(bad_input("error: give a sweep file"));
    };
    let shard = match &args.shard {
        None => None,
        Some(arg) => {
            let r = arg
                .resolve(|name| std::env::var(name).ok())
                .map_err(|e| bad_input(format!("error: {e}")))?;
            if !r.source.is_empty() && !quiet {
                say!("shard {}/{} (from {})", r.shard.k, r.shard.n, r.source);
            }
            Some(r.shard)
        }
    };
    let spec = SweepSpec::load(path).map_err(bad_input)?;
    // The FMUs the check opens are the ones the runs use: extracted once.
    let _keep = cosim_fmi::reuse::keep_open();
    let warnings = cosim_sweep::check(&spec).map_err(bad_input)?;
    for w in warnings.iter().filter(|_| !quiet) {
        say!("{w}");
    }
    let total = spec.grid_len();
    cosim_sweep::check_metrics(&spec, &args.fail_if).map_err(bad_input)?;
    if args.check {
        let mine = (0..total)
            .filter(|&i| shard.is_none_or(|s| s.owns(i)))
            .count();
        say!(
            "{}: ok ({}, {}{}, scenario {})",
            shown(path).display(),
            count(spec.axes.len(), "axis", "axes"),
            count(total, "run", "runs"),
            shard.map_or(String::new(), |s| format!(
                ", {mine} in shard {}/{}",
                s.k, s.n
            )),
            shown(&spec.scenario).display()
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
    // SIGINT / SIGTERM: runs not started are skipped, running ones stop
    // at their next macro step, and the summary lists them all (a second
    // signal ends at once).
    let interrupt = Interrupt::install()
        .map_err(|e| anyhow::anyhow!("installing the handlers of SIGINT and SIGTERM: {e}"))?;
    cosim_isolation::watch_interrupt(interrupt.flag());
    let options = Options {
        jobs: args.jobs,
        shard,
        out: args.out.clone(),
        fail_if: args.fail_if.clone(),
        plot: !args.no_plot,
        refine: !args.no_refine,
        prune: args.prune,
        interrupt: Some(interrupt.flag()),
        // Each run in a worker process: an FMU that crashes or calls
        // exit() costs its run, not the sweep.
        worker: Some(worker_command(quiet, verbose)?),
        fresh_instances: args.fresh_instances,
    };
    if shard.is_some() && spec.refine.is_some() && !args.no_refine {
        say!("note: [sweep.refine] is skipped in a shard (the bisection needs every run's result)");
    }
    let started = Instant::now();
    // The bisection's stages, when it runs (the progress lines name them).
    let stages = spec
        .refine
        .filter(|_| !args.no_refine && shard.is_none())
        .map_or(0, |r| r.iterations);
    let progress = Progress::new(!args.no_progress && !quiet, stages);
    let outcome = cosim_sweep::run(&spec, &options, &progress).map_err(bad_input)?;
    progress.finish();
    if !quiet {
        report(&outcome, Some(started.elapsed().as_secs_f64()));
    }
    if let Some(signal) = interrupt.signal_name() {
        say!(
            "interrupted by {signal}: the summary lists the runs interrupted and those not started ({})",
            shown(&outcome.summary_path).display()
        );
        return Err(anyhow::Error::new(Failed(interrupt.exit_status())));
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

/// `cosim sweep submit --slurm`.
fn submit(a: &SubmitArgs, quiet: bool) -> Result<()> {
    let (sub, runs) = submission(a, quiet)?;
    if a.dry_run {
        out!(
            "# {}: sbatch --parsable {}\n{}\n# {}: sbatch --parsable --dependency=afterok:<the array's job id> {}\n{}",
            sub.array_script_path().display(),
            sub.array_script_path().display(),
            sub.array_script(),
            sub.merge_script_path().display(),
            sub.merge_script_path().display(),
            sub.merge_script()
        )?;
        return Ok(());
    }
    let ids = slurm::submit(&sub).map_err(|e| bad_input(format!("error: {e}")))?;
    say!(
        "submitted: job array {} ({} of {}; logs {}), merge job {} after it",
        ids.array,
        count(sub.shards, "shard", "shards"),
        count(runs, "run", "runs"),
        sub.dir()
            .join(format!("shard-{}_K.log", ids.array))
            .display(),
        ids.merge
    );
    if a.no_wait {
        say!("  follow: squeue -j {},{}", ids.array, ids.merge);
        say!("  cancel: scancel {} {}", ids.array, ids.merge);
        say!(
            "  the merge job runs once every shard has succeeded ({}): {}",
            sub.merge_log(&ids.merge).display(),
            sub.merge_command()
        );
        out!("{} {}\n", ids.array, ids.merge)?;
        return Ok(());
    }
    if !quiet {
        say!(
            "  waiting (Ctrl-C stops the waiting, not the jobs: scancel {} {})",
            ids.array,
            ids.merge
        );
    }
    let finished = wait_for_jobs(&sub, &ids, a.poll, quiet)?;
    report_finished(&sub, &ids, &finished, quiet)
}

/// The submission `a` asks for, checked (the sweep, its thresholds, the
/// shard count, the paths made absolute), and the sweep's number of runs.
fn submission(a: &SubmitArgs, quiet: bool) -> Result<(Submission, usize)> {
    let spec = SweepSpec::load(&a.sweep).map_err(bad_input)?;
    let warnings = cosim_sweep::check(&spec).map_err(bad_input)?;
    for w in warnings.iter().filter(|_| !quiet) {
        say!("{w}");
    }
    cosim_sweep::check_metrics(&spec, &a.fail_if).map_err(bad_input)?;
    let runs = spec.grid_len();
    if a.shards == 0 || a.shards > runs {
        return Err(bad_input(format!(
            "error: --shards {}: the sweep has {}, so 1 to {runs} {}",
            a.shards,
            count(runs, "run", "runs"),
            if runs == 1 { "shard" } else { "shards" }
        )));
    }
    if !(a.poll.is_finite() && a.poll > 0.0) {
        return Err(bad_input(format!(
            "error: --poll {}: a positive number of seconds",
            a.poll
        )));
    }
    let absolute = |p: &std::path::Path| {
        std::path::absolute(p).map_err(|e| bad_input(format!("error: {}: {e}", p.display())))
    };
    let cosim = match &a.cosim {
        Some(p) => absolute(p)?,
        None => std::env::current_exe()
            .map_err(|e| bad_input(format!("error: the path of this cosim executable: {e}")))?,
    };
    let stem = a
        .sweep
        .file_stem()
        .map_or_else(|| "sweep".into(), |s| s.to_string_lossy().into_owned());
    let mut merge_args = Vec::new();
    for t in &a.fail_if {
        merge_args.extend(["--fail-if".to_string(), t.to_string()]);
    }
    if a.no_plot {
        merge_args.push("--no-plot".into());
    }
    let sub = Submission {
        sweep: absolute(&a.sweep)?,
        out: absolute(&a.out)?,
        shards: a.shards,
        job_name: a.job_name.clone().unwrap_or(format!("cosim-{stem}")),
        partition: a.partition.clone(),
        time: a.time.clone(),
        cpus_per_task: a.cpus_per_task,
        throttle: a.throttle,
        sbatch_args: a.sbatch_args.clone(),
        cosim,
        prune: a.prune,
        merge_args,
    };
    sub.validate()
        .map_err(|e| bad_input(format!("error: {e}")))?;
    Ok((sub, runs))
}

/// Waits for the submitted jobs, showing their progress every `poll`
/// seconds and each failed shard with the end of its log.
fn wait_for_jobs(
    sub: &Submission,
    ids: &slurm::Submitted,
    poll: f64,
    quiet: bool,
) -> Result<slurm::Finished> {
    let mut line = StatusLine::new(!quiet);
    let finished = slurm::wait(
        sub,
        ids,
        std::time::Duration::from_secs_f64(poll),
        &mut |event| match event {
            slurm::Event::Poll {
                tasks,
                merge,
                elapsed,
            } => {
                let count = |p: Phase| tasks.iter().filter(|t| t.phase == p).count();
                let secs = elapsed.as_secs();
                line.show(
                    &format!(
                        "slurm: {}/{} shards done, {} running, {} waiting, {} failed; merge job {} {}",
                        count(Phase::Done),
                        tasks.len(),
                        count(Phase::Running),
                        count(Phase::Waiting),
                        count(Phase::Failed),
                        ids.merge,
                        merge
                    ),
                    &format!(" [{}:{:02}]", secs / 60, secs % 60),
                );
            }
            slurm::Event::TaskFailed { task, log } => {
                line.break_line();
                say!(
                    "error: shard {}/{} (task {}_{}) {}{}; log: {}",
                    task.k,
                    sub.shards,
                    ids.array,
                    task.k,
                    task.state,
                    task.wait_status
                        .filter(|&w| w != 0)
                        .map_or(String::new(), |w| format!(
                            ", {}",
                            slurm::describe_wait_status(w)
                        )),
                    log.display()
                );
                let tail = slurm::tail(&log, 10);
                for l in tail.lines() {
                    say!("  | {l}");
                }
            }
            slurm::Event::SqueueFailed(e) => {
                line.break_line();
                say!("warning: {e} (trying again)");
            }
        },
    )
    .map_err(|e| {
        line.break_line();
        say!("error: {e}");
        anyhow::Error::new(Failed(exit::RUN_FAILED))
    })?;
    line.break_line();
    Ok(finished)
}

/// What the finished jobs did: the failed shards and how to rerun them,
/// else the merge job's log and its verdict as the exit status.
fn report_finished(
    sub: &Submission,
    ids: &slurm::Submitted,
    finished: &slurm::Finished,
    quiet: bool,
) -> Result<()> {
    if !finished.failed.is_empty() {
        let list: Vec<String> = finished.failed.iter().map(ToString::to_string).collect();
        say!(
            "error: {} of {} failed ({}); the merge job {} is cancelled",
            list.len(),
            count(sub.shards, "shard", "shards"),
            list.join(", "),
            ids.merge
        );
        say!(
            "  rerun them: sbatch --array={} {}",
            list.join(","),
            sub.array_script_path().display()
        );
        say!("  then merge: {}", sub.merge_command());
        return Err(anyhow::Error::new(Failed(exit::RUN_FAILED)));
    }
    let log = std::fs::read_to_string(&finished.merge_log).unwrap_or_default();
    if finished.merged() {
        if !quiet {
            for l in log.lines() {
                say!("{l}");
            }
        }
        return Ok(());
    }
    for l in log.lines() {
        say!("{l}");
    }
    say!(
        "error: the merge job {} ended {}{}; log: {}",
        ids.merge,
        finished.merge_state,
        finished
            .merge_wait_status
            .filter(|&w| w != 0)
            .map_or(String::new(), |w| format!(
                " ({})",
                slurm::describe_wait_status(w)
            )),
        finished.merge_log.display()
    );
    // The merge's own verdict: 1 a threshold failed, 2 bad input.
    let code = match finished.merge_wait_status {
        Some(w) if w & 0x7f == 0 && matches!((w >> 8) & 0xff, 1 | 2) => ((w >> 8) & 0xff) as u8,
        _ => exit::RUN_FAILED,
    };
    Err(anyhow::Error::new(Failed(code)))
}

/// The waiting's progress line: rewritten in place on a terminal, a new
/// line when it changes otherwise.
struct StatusLine {
    enabled: bool,
    terminal: bool,
    last: String,
    open: bool,
}

impl StatusLine {
    fn new(enabled: bool) -> Self {
        StatusLine {
            enabled,
            terminal: std::io::stderr().is_terminal(),
            last: String::new(),
            open: false,
        }
    }

    /// Shows `text` (and `clock`, which alone does not make a new line).
    fn show(&mut self, text: &str, clock: &str) {
        if !self.enabled {
            return;
        }
        if self.terminal {
            use std::io::Write;
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[K{text}{clock}");
            let _ = e.flush();
            self.open = true;
        } else if text != self.last {
            say!("{text}{clock}");
        }
        text.clone_into(&mut self.last);
    }

    /// Ends the line in place, before another message.
    fn break_line(&mut self) {
        if self.open {
            say!("");
            self.open = false;
        }
    }
}

fn report(outcome: &Outcome, wall: Option<f64>) {
    let c = outcome.meta.counts;
    let runs = c.ok + c.diverged + c.error + c.interrupted;
    let time = wall.map_or(String::new(), |w| format!(" in {w:.1} s"));
    let interrupted = if c.interrupted > 0 {
        format!(", {} interrupted", c.interrupted)
    } else {
        String::new()
    };
    say!(
        "sweep: {} ({} ok, {} diverged, {} failed{interrupted}){time}",
        count(runs, "run", "runs"),
        c.ok,
        c.diverged,
        c.error
    );
    say!("  summary: {}", shown(&outcome.summary_path).display());
    if let Some(p) = &outcome.plot_path {
        say!("  plot:    {}", shown(p).display());
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
            if *s == "error" || *s == "crashed" {
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
        "error: {} {} the thresholds: {}",
        count(runs.len(), "run", "runs"),
        if runs.len() == 1 { "fails" } else { "fail" },
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

/// Progress over the runs: a bar on a terminal, a line per run otherwise
/// (`run 18/21 (bisection 2/5) <name> <status> (<time> s)`: the runs made,
/// of those planned so far, counting the bisection's stages to come at
/// their most).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    done: std::sync::atomic::AtomicUsize,
    total: std::sync::atomic::AtomicUsize,
    plain: bool,
    /// The bisection's stages (0: none).
    stages: u32,
}

impl Progress {
    fn new(enabled: bool, stages: u32) -> Self {
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
            stages,
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl cosim_sweep::Progress for Progress {
    fn planned(&self, total: usize) {
        use std::sync::atomic::Ordering;
        self.total.store(total, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    fn finished(&self, r: &Record) {
        use std::sync::atomic::Ordering;
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let total = self.total.load(Ordering::Relaxed);
        let status = r.status.as_str();
        let stage = if r.planned.stage > 0 {
            format!(" (bisection {}/{})", r.planned.stage, self.stages)
        } else {
            String::new()
        };
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(format!("{}{stage} {status}", r.name));
        } else if self.plain {
            let why = if r.status == Status::Ok || r.message.is_empty() {
                String::new()
            } else {
                format!(": {}", r.message)
            };
            say!(
                "run {done}/{total}{stage} {} {status} ({:.2} s){why}",
                r.name,
                r.wall_time_s
            );
        }
    }
}
