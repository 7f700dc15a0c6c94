//! `cosim run` and `cosim check`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use cosim_core::System;
use cosim_core::execution::RunStatus;
use cosim_core::observer::{Due, Next, Observer, StepContext};
use cosim_core::structure::LevelStability;
use cosim_core::watchdog::{Hang, Timeouts, Watchdog};
use cosim_fmi::CallLogTarget;
use cosim_scenario::ResolvedScenario;
use cosim_scenario::assemble::{Assembly, AssemblyReport, BondSource};
use cosim_scenario::runner::{self, Prepared};
use cosim_scenario::{FmuInterface, Isolation, Overrides, SolverMethod, SolverSpec};

use crate::console::{count, say};
use crate::ending;
use crate::interrupt::Interrupt;

/// Arguments shared by `run` and `check`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The scenario file (TOML), an SSP (.ssp, .ssd) or OSP
    /// (OspSystemStructure.xml, or its directory) system description, or
    /// an FMU (.fmu) to run on its own (its DefaultExperiment, every
    /// output traced).
    pub scenario: PathBuf,
    /// Set a parameter or start value: `--set chassis.m_c=500` (repeatable;
    /// a String's or Binary's value is the text after `=`, a Binary's in
    /// hexadecimal digits).
    #[arg(long = "set", value_name = "SUB.VAR=VALUE")]
    pub set: Vec<String>,
    /// Stop time, overriding the scenario.
    #[arg(long, allow_negative_numbers = true)]
    pub stop: Option<f64>,
    /// Macro step (initial step for adaptive masters), overriding the scenario.
    #[arg(long, allow_negative_numbers = true)]
    pub step: Option<f64>,
    /// Output directory, overriding the scenario. For a single FMU,
    /// `-o FILE.csv` (a name ending in .csv that is not a directory)
    /// writes the trace alone to FILE.csv, as fmusim's --output-file does:
    /// no energy log, step log or summary.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Start time, overriding the scenario (an FMU: its DefaultExperiment).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub start: Option<f64>,
    /// Write a trace row every this many seconds, overriding `[outputs]
    /// interval` (default: every step).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub output_interval: Option<f64>,
    /// The traced variables, overriding `[outputs] variables`: names or
    /// globs, `sub.var` in a scenario, the variable alone for an FMU
    /// (`--output-variables x 'v*'`; default: every output).
    #[arg(long, value_name = "GLOB", num_args = 1..)]
    pub output_variables: Vec<String>,
    /// A CSV of time and values feeding inputs (repeatable): header `time`,
    /// then the inputs (`sub.var`; for an FMU the variable alone), as
    /// fmusim and FMPy read it. Floats of continuous variability are
    /// interpolated linearly; the others (discrete Floats, integers,
    /// Booleans, Binaries as hexadecimal digits, Strings) held at the last
    /// row. Int64 and UInt64 values exactly, over their whole range.
    #[arg(long, value_name = "FILE")]
    pub input_file: Vec<PathBuf>,
    /// A libcosim scenario file (JSON or YAML, repeatable): timed events
    /// that override, bias or reset inputs and outputs (`description`,
    /// `defaults`, `events`, `end`; docs/scenario.md, Events), added to the
    /// scenario's `[[events]]`, for TOML, SSP and OSP systems alike.
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario_file: Vec<PathBuf>,
    /// Pace the run to the wall clock: simulated time advances at FACTOR
    /// times real time (1 when given alone; 2: twice as fast), overriding
    /// `[simulation] real_time`. The progress line and the summary give the
    /// factor achieved; a run that falls behind says by how much and which
    /// subsystem took the time. Rows reach the output files as they are
    /// produced (`tail -f trace.csv` follows the run).
    #[arg(long, value_name = "FACTOR", num_args = 0..=1, default_missing_value = "1")]
    pub real_time: Option<f64>,
    /// Worker threads for Jacobi stepping (0 = all cores, at most 1024),
    /// overriding the scenario.
    #[arg(long, value_parser = thread_count)]
    pub threads: Option<usize>,
    /// Where every FMU runs, at every level, overriding each `isolation` of
    /// the scenario: `process` loads each in a host process (an FMU that
    /// crashes or hangs then fails the run cleanly; the FMUs share at most
    /// `[master] isolation_hosts` hosts), `none` in this one.
    #[arg(long, value_parser = ["none", "process"])]
    pub isolation: Option<String>,
    /// Which interface every FMU runs, at every level, overriding each
    /// `interface` of the scenario: `cs` (Co-Simulation, the default where
    /// the FMU has it) or `me` (Model Exchange, integrated by cosim's
    /// solver); an FMU without it is an error. An FMU with only Model
    /// Exchange runs it without this option.
    #[arg(long, value_parser = ["cs", "me"])]
    pub interface: Option<String>,
    /// The solver of every Model Exchange FMU, overriding `[subsystems.solver]
    /// method`: `bdf` (stiff models; the default) or `rk45` (an embedded
    /// explicit Runge-Kutta pair).
    #[arg(long, value_parser = ["bdf", "rk45"])]
    pub solver: Option<String>,
    /// The relative tolerance of every Model Exchange FMU's solver,
    /// overriding `[subsystems.solver] relative_tolerance` (default: the
    /// FMU's DefaultExperiment tolerance, else 1e-5).
    #[arg(long, value_name = "TOL", allow_negative_numbers = true)]
    pub relative_tolerance: Option<f64>,
    /// Log every FMI call (arguments, variable names, status; one line per
    /// call, fmusim style) to standard error, or to FILE:
    /// `--log-fmi-calls=FILE`, or `--log-fmi-calls FILE` when FILE's name
    /// ends in .log or .txt (a scenario or FMU after the option is the
    /// command's input, and any other word is refused as ambiguous). Every
    /// FMU, every level, every isolation mode.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "-"
    )]
    pub log_fmi_calls: Option<PathBuf>,
    /// Longest FMU call in this process outside initialization, s
    /// (default 600; 0: no limit): a call that has not returned by then
    /// ends the run (outputs and summary written, exit status 1) without
    /// waiting for it. Overrides `[master] step_timeout`; isolated FMUs
    /// have `isolation_timeout`.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub step_timeout: Option<f64>,
    /// The same for the calls of initialization, which may take long for
    /// a big model (default 3600; 0: no limit). Overrides `[master]
    /// init_timeout`.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub init_timeout: Option<f64>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// `run` only: first check the scenario as `cosim check` does (structure,
    /// zero-stability of every level), then run it.
    #[arg(long)]
    pub check: bool,
    /// `run` only: after the run, plot the trace to plot.svg beside it
    /// (as `cosim plot` does).
    #[arg(long)]
    pub plot: bool,
}

/// A thread count on the command line (`--threads`, `sweep --jobs`): 0
/// (all cores) to the limit of the scenario key `threads`, refused with
/// that key's message beyond it (a pool of 99999 threads would start).
pub fn thread_count(text: &str) -> std::result::Result<usize, String> {
    use cosim_scenario::defaults::MAX_THREADS;
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a whole number of threads, not '{text}'"))?;
    match i64::try_from(n) {
        Ok(k) if k <= MAX_THREADS => Ok(n),
        _ => Err(format!("must be between 0 and {MAX_THREADS}, not {n}")),
    }
}

/// Exit statuses other than success (0).
pub mod exit {
    /// The run started and failed (FMU error, divergence).
    pub const RUN_FAILED: u8 = 1;
    /// Bad input: scenario, FMU, arguments.
    pub const BAD_INPUT: u8 = 2;
    // Interrupted by SIGINT / SIGTERM: 130 / 143 (see `interrupt`).
}

/// A failure with its exit status (the message is already printed).
#[derive(Debug)]
pub struct Failed(pub u8);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for Failed {}

fn bad_input(msg: impl std::fmt::Display) -> anyhow::Error {
    say!("{msg}");
    anyhow::Error::new(Failed(exit::BAD_INPUT))
}

/// What preparing a scenario says on standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Say {
    /// Nothing (`-q`).
    Nothing,
    /// The warnings of reading and resolving only (`cosim inspect`, whose
    /// report shows the rest on standard output).
    Warnings,
    /// The warnings, the power bonds found and the algebraic loops.
    Everything,
}

impl Say {
    fn from_quiet(quiet: bool) -> Say {
        if quiet { Say::Nothing } else { Say::Everything }
    }
}

/// Loads, resolves and assembles a scenario; prints warnings and, unless
/// quiet, what the assembly found.
fn prepare(args: &RunArgs, quiet: bool) -> Result<Prepared> {
    prepare_in(args, Say::from_quiet(quiet), None)
}

/// [`prepare`], with every FMU in `isolation` when given (whatever the
/// scenario and `--isolation` say).
fn prepare_in(args: &RunArgs, say: Say, isolation: Option<Isolation>) -> Result<Prepared> {
    let quiet = say == Say::Nothing;
    let overrides = Overrides {
        set: args.set.clone(),
        stop: args.stop,
        step: args.step,
        // `-o FILE.csv` of a single FMU: the trace's file, set after.
        out: if trace_file(args).is_some() {
            None
        } else {
            args.out.clone()
        },
        isolation: isolation.or(args.isolation.as_deref().map(|s| match s {
            "process" => Isolation::Process,
            _ => Isolation::None,
        })),
        log_fmi_calls: args.log_fmi_calls.as_deref().map(CallLogTarget::from_arg),
        step_timeout: args.step_timeout,
        init_timeout: args.init_timeout,
        start: args.start,
        output_interval: args.output_interval,
        output_variables: args.output_variables.clone(),
        input_files: args.input_file.clone(),
        scenario_files: args.scenario_file.clone(),
        real_time: args.real_time,
        interface: args.interface.as_deref().map(|s| match s {
            "me" => FmuInterface::ModelExchange,
            _ => FmuInterface::CoSimulation,
        }),
        solver: SolverSpec {
            method: args.solver.as_deref().map(|s| match s {
                "rk45" => SolverMethod::Rk45,
                _ => SolverMethod::Bdf,
            }),
            relative_tolerance: args.relative_tolerance,
            ..SolverSpec::default()
        },
    };
    let prepared = if cosim_ssp::is_system_structure(&args.scenario) {
        // SSP (.ssp, .ssd) or OSP (OspSystemStructure.xml) instead of TOML.
        let imported =
            cosim_ssp::prepare(&args.scenario, &overrides, args.threads).map_err(bad_input)?;
        for d in imported.diagnostics.iter().filter(|_| !quiet) {
            say!("{d}");
        }
        imported.prepared
    } else {
        refuse_sweep_file(&args.scenario)?;
        runner::prepare(&args.scenario, &overrides, args.threads).map_err(bad_input)?
    };
    if !quiet {
        for w in &prepared.resolved.warnings {
            say!("{w}");
        }
    }
    if say == Say::Everything {
        let r = &prepared.assembly.report;
        if r.bonds.is_empty() {
            // (One subsystem has no bonds to report.)
            if prepared.resolved.subsystems.len() > 1 {
                say!("power bonds: none");
            }
        } else {
            say!("power bonds:");
            for b in &r.bonds {
                let how = match b.source {
                    BondSource::Declared => "declared",
                    BondSource::Discovered => "discovered",
                };
                say!("  {} ({how}): {}", b.name, b.explanation);
            }
        }
        for l in &r.algebraic_loops {
            say!(
                "warning: algebraic loop: {l} (the explicit master runs it with delayed values; results depend on the step)"
            );
        }
    }
    Ok(prepared)
}

/// `-v`: what the master decided and where the time went.
/// The factor a paced run achieved, and how far it fell behind and why.
fn report_real_time(s: &cosim_core::RunSummary, rt: &cosim_core::execution::RealTimeSummary) {
    use cosim_core::text::significant;
    say!(
        "  real time: {}x achieved ({}x asked)",
        significant(rt.achieved_factor, 3),
        significant(rt.target_factor, 3)
    );
    // Behind by more than a frame of a live display: say so, and who.
    if rt.max_lag_s > 0.05 {
        let slowest = s
            .subsystems
            .iter()
            .filter_map(|sub| Some((sub.name.as_str(), sub.step_wall_time_s?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let who = slowest.map_or(String::new(), |(name, t)| {
            format!(
                "; subsystem '{name}' took the most time ({} s of {} s stepping)",
                significant(t, 3),
                significant(s.wall_time_s, 3)
            )
        });
        say!(
            "warning: the run fell behind real time by up to {} s (at t = {} s){who}",
            significant(rt.max_lag_s, 3),
            rt.max_lag_at
        );
    }
}

fn report_decisions(s: &cosim_core::RunSummary) {
    use cosim_core::text::{number, significant};
    let st = &s.stats;
    say!(
        "master {}: {} of {} s on average (from {} to {} s), {} rejected, {}, {}",
        s.master,
        macro_steps(st.macro_steps),
        significant(s.mean_step, 6),
        number(s.min_step),
        number(s.max_step),
        st.rejected_steps,
        counted(st.iterations, "iteration", "iterations"),
        counted(st.halvings, "halving", "halvings")
    );
    say!(
        "  initialization {} s, stepping {} s",
        significant(s.init_time_s, 3),
        significant(s.wall_time_s, 3)
    );
    if let Some(m) = &st.solver {
        // A strongly coupled level: the master integrates its FMUs.
        say_solver(m);
    }
    for sub in &s.subsystems {
        let c = &sub.calls;
        let time = sub.step_wall_time_s.map_or(String::new(), |t| {
            format!(
                ", {} s in its steps ({} %)",
                significant(t, 3),
                significant(100.0 * t / s.wall_time_s.max(f64::MIN_POSITIVE), 3)
            )
        });
        say!(
            "  {}: {} doStep, {} set, {} get, {}, {}{time}",
            sub.name,
            c.do_step,
            c.set_inputs,
            c.get_outputs,
            counted(c.state_saves, "state save", "state saves"),
            counted(c.state_restores, "restore", "restores")
        );
        if let Some(m) = &c.solver {
            say_solver(m);
        }
    }
}

/// The figures of a Model Exchange integrator (a subsystem's, or a
/// strongly coupled level's).
fn say_solver(m: &cosim_fmi::ModelExchangeStatistics) {
    let e = &m.events;
    say!(
        "    Model Exchange solver: {} ({} rejected), {}, {}, {} ({}); events: {} state, {} time, {} step, {} input ({}); {}",
        counted(m.steps, "step", "steps"),
        m.rejected_steps,
        counted(
            m.derivative_evaluations,
            "derivative evaluation",
            "derivative evaluations"
        ),
        counted(m.jacobian_evaluations, "Jacobian", "Jacobians"),
        counted(
            m.event_indicator_evaluations,
            "event indicator evaluation",
            "event indicator evaluations"
        ),
        counted(
            m.root_finding_iterations,
            "root-finding iteration",
            "root-finding iterations"
        ),
        e.state_events,
        e.time_events,
        e.step_events,
        e.input_events,
        counted(e.event_iterations, "event iteration", "event iterations"),
        counted(e.restarts, "restart", "restarts")
    );
}

/// A sweep file given to `run` or `check`: say which command runs it,
/// instead of "unknown table 'sweep'".
fn refuse_sweep_file(path: &std::path::Path) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let is_sweep = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("[sweep]") || l.starts_with("[sweep.") || l.starts_with("[[sweep.")
    });
    if is_sweep {
        return Err(bad_input(format!(
            "{}: error: this is a sweep file (it has a [sweep] table): run it with `cosim sweep {}`",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// Creates (empties) the `--log-fmi-calls` file, once per command: the
/// FMUs of this process and of host processes then append to it. A file
/// that cannot be written is bad input, before anything runs.
fn start_call_log(args: &RunArgs) -> Result<()> {
    if let Some(arg) = &args.log_fmi_calls {
        let target = CallLogTarget::from_arg(arg);
        target.create().map_err(|e| {
            bad_input(format!(
                "error: --log-fmi-calls {target}: cannot write the FMI call log: {e}"
            ))
        })?;
    }
    Ok(())
}

/// `cosim check`: everything but stepping.
pub fn check(args: &RunArgs, quiet: bool) -> Result<()> {
    checking(args, |args| check_scenario(args, quiet))
}

/// Runs `what` (a check of `args`' scenario) as `cosim check` does: with
/// the call log started, Ctrl-C ending it at once, an interruption
/// reported as such.
pub fn checking(args: &RunArgs, what: impl FnOnce(&RunArgs) -> Result<()>) -> Result<()> {
    // Ctrl-C ends a check at once (it makes no steps to stop between),
    // leaving no extraction directory behind.
    let interrupt = Interrupt::install()
        .map_err(|e| bad_input(format!("error: cannot install the signal handlers: {e}")))?;
    cosim_isolation::watch_interrupt(interrupt.flag());
    let watched = interrupt.clone();
    std::thread::Builder::new()
        .name("cosim-check-interrupt".into())
        .spawn(move || {
            let flag = watched.flag();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
            ending::end_now(RunStatus::Interrupted, "interrupted", watched.exit_status())
        })
        .map_err(|e| bad_input(format!("error: cannot start a thread: {e}")))?;
    start_call_log(args)?;
    let result = what(args);
    // A signal that cut a host's call short made the check fail, and one
    // that came as it finished found nothing left to stop: either way the
    // check was interrupted (130 / 143), not refused as bad input (2) or
    // passed (0).
    if interrupt.flag().load(std::sync::atomic::Ordering::SeqCst) {
        ending::end_now(
            RunStatus::Interrupted,
            "interrupted",
            interrupt.exit_status(),
        )
    }
    result
}

/// What checking a scenario found: everything but stepping.
pub struct Checked {
    /// The scenario, resolved.
    pub resolved: ResolvedScenario,
    /// Its system, initialised and terminated (its structure stays).
    pub system: System,
    /// What assembly found (bonds, feed-through, loops, interfaces).
    pub report: AssemblyReport,
    /// The zero-stability of every level.
    pub stability: Vec<LevelStability>,
}

/// Checks a scenario once the call log is started. No FMU code runs in
/// this process: every FMU is initialised in a host process
/// (`--isolation process`), so a check cannot crash, hang or be taken
/// over by an FMU it checks (but one with FMI 3 Clocks or Scheduled
/// Execution, which hosts do not run yet: `assemble` warns).
pub fn check_structure(args: &RunArgs, say: Say) -> Result<Checked> {
    let Prepared {
        resolved, assembly, ..
    } = prepare_in(args, say, Some(Isolation::Process))?;
    let Assembly {
        mut system,
        master,
        report,
        ..
    } = assembly;
    master
        .check(&system)
        .map_err(|e| bad_input(format!("error: {e}")))?;
    let init = system.initialize(resolved.start, Some(resolved.stop));
    // Zero-stability of every level, with the FMUs' directional derivatives
    // at the initial point where they provide them (hafner eqs. 3, 10-12).
    let stability = match &init {
        Ok(_) => Some(cosim_core::structure::zero_stability(&mut system, "top")),
        Err(_) => None,
    };
    let term = system.terminate_all();
    init.map_err(|e| bad_input(format!("error: initialization failed: {e}")))?;
    term.map_err(|e| bad_input(format!("error: {e}")))?;
    let stability = stability
        .transpose()
        .map_err(|e| bad_input(format!("error: zero-stability check: {e}")))?
        .unwrap_or_default();
    Ok(Checked {
        resolved,
        system,
        report,
        stability,
    })
}

/// `cosim check` once the call log is started: [`check_structure`], then
/// what it found on standard error.
fn check_scenario(args: &RunArgs, quiet: bool) -> Result<()> {
    let Checked {
        resolved,
        system,
        report,
        stability,
    } = check_structure(args, Say::from_quiet(quiet))?;
    if !quiet {
        if !report.interfaces.is_empty() {
            say!("interfaces:");
            for line in &report.interfaces {
                say!("  {line}");
            }
        }
        for f in &report.feedthrough {
            say!("feed-through: {f}");
        }
        for level in &stability {
            say!("zero-stability of {level}");
        }
        let functions = system.functions().specs().len();
        say!(
            "{}: ok ({}, {}{}, {}, master {}, t = {} .. {})",
            crate::console::shown(&args.scenario).display(),
            count(system.len(), "subsystem", "subsystems"),
            if functions > 0 {
                format!("{}, ", count(functions, "function", "functions"))
            } else {
                String::new()
            },
            count(
                system.connections().len() + system.functions().links().len(),
                "connection",
                "connections"
            ),
            count(system.bonds().len(), "power bond", "power bonds"),
            resolved.master.kind,
            resolved.start,
            resolved.stop
        );
    }
    Ok(())
}

/// A failure before the run's first step: an interruption (130 / 143)
/// when a signal came meanwhile (it cuts the calls to FMUs in host
/// processes short, which then fail), else `e`.
fn unless_interrupted(e: anyhow::Error, interrupt: &Interrupt) -> anyhow::Error {
    if !interrupt.flag().load(std::sync::atomic::Ordering::SeqCst) {
        return e;
    }
    say!(
        "interrupted by {} before the first step",
        interrupt.signal_name().unwrap_or("a signal")
    );
    anyhow::Error::new(Failed(interrupt.exit_status()))
}

/// `cosim run`.
pub fn run(args: &RunArgs, quiet: bool, verbose: u8) -> Result<()> {
    // -vv: the FMI call log on standard error, unless it goes elsewhere.
    let mut with_log;
    let args = if verbose >= 2 && args.log_fmi_calls.is_none() {
        with_log = args.clone();
        with_log.log_fmi_calls = Some(PathBuf::from("-"));
        &with_log
    } else {
        args
    };
    // Installed before the FMUs are loaded: a signal during loading stops
    // the run before its first step, with the same clean ending.
    let interrupt = Interrupt::install()
        .map_err(|e| bad_input(format!("error: cannot install the signal handlers: {e}")))?;
    // An isolated FMU hanging in a call must not hold Ctrl-C up until its
    // isolation_timeout.
    cosim_isolation::watch_interrupt(interrupt.flag());
    // An FMU that ends the process with exit() mid-run: the outputs and
    // the summary are written, and the exit status is cosim's.
    cosim_fmi::ffi::on_foreign_exit(|| {
        ending::end_now(
            RunStatus::Error,
            "an FMU ended the process: it called exit() during the run",
            ending::FMU_EXITED,
        )
    });
    start_call_log(args)?;
    if args.check {
        check_scenario(args, quiet).map_err(|e| unless_interrupted(e, &interrupt))?;
    }
    let mut prepared = prepare(args, quiet).map_err(|e| unless_interrupted(e, &interrupt))?;
    // `-o FILE.csv` of a single FMU: the trace alone, into FILE.csv.
    let _remove = RemovePrivateDir;
    let trace_only = trace_file(args);
    if let Some(file) = &trace_only {
        trace_only_into(file, &mut prepared)?;
    } else {
        warn_csv_directory(args, quiet);
    }
    // Where messages say the outputs are.
    let place = match &trace_only {
        Some(file) => crate::console::shown(file),
        None => crate::console::shown(&prepared.resolved.outputs.dir),
    };
    if verbose >= 1 && !quiet {
        // -v reports the time spent in each subsystem's steps.
        prepared.assembly.system.enable_step_timing();
    }
    let mut plot = crate::plot::requested(args.plot, &args.scenario, &prepared)?;
    if let (Some(p), Some(_)) = (&mut plot, &trace_only) {
        // `-o result.csv`: `result.svg` beside it.
        p.svg = p.trace.with_extension("svg");
    }
    let (t0, t1) = (prepared.resolved.start, prepared.resolved.stop);
    let mut extra: Vec<Box<dyn Observer>> = Vec::new();
    // A progress bar would be torn by call-log lines on the same stream.
    let log_on_stderr = args
        .log_fmi_calls
        .as_deref()
        .is_some_and(|a| CallLogTarget::from_arg(a) == CallLogTarget::Stderr);
    if !quiet && !args.no_progress && !log_on_stderr {
        extra.push(Box::new(Progress::new(
            t0,
            t1,
            prepared.resolved.real_time.is_some(),
        )));
    }
    if std::env::var("COSIM_QUIET_PATH").is_ok_and(|v| v.trim() == "0") {
        // Every step the full way, for comparing the quiet path with it.
        extra.push(Box::new(cosim_core::observer::StepsOneByOne));
    }
    // Hung FMU calls in this process: after step_timeout (init_timeout in
    // initialization), or at once on Ctrl-C, the run ends without waiting
    // for them (ending.rs).
    let (step, init) = prepared.resolved.master.call_timeouts();
    let timeout = Timeouts { step, init };
    let limit =
        |d: Option<Duration>| d.map_or("none".to_string(), |d| format!("{} s", d.as_secs_f64()));
    tracing::info!(
        "watchdog of hung FMU calls: step_timeout {}, init_timeout {}",
        limit(step),
        limit(init)
    );
    let out_dir = place.clone();
    let flag = interrupt.flag();
    let signal = interrupt.clone();
    let mut watchdog = None;
    let mut outcome = runner::run_watched(prepared, extra, Some(interrupt.flag()), |outputs| {
        ending::watch(outputs, out_dir, interrupt.clone());
        let on_hang = Box::new(move |hang: Hang| {
            let (status, code) = if hang.interrupted {
                (RunStatus::Interrupted, signal.exit_status())
            } else {
                (RunStatus::Error, exit::RUN_FAILED)
            };
            ending::end_now(status, &hang.to_string(), code)
        });
        match Watchdog::start(timeout, Some(flag), on_hang) {
            Ok(w) => watchdog = Some(w),
            Err(e) => say!("warning: no watchdog of hung FMU calls: {e}"),
        }
    })
    .map_err(|e| bad_input(format!("error: {e}")))?;
    drop(watchdog);
    // The output directory stays this run's until the plot is written.
    let lock = outcome.lock.take();
    let summary = &outcome.summary;
    let result = report_outcome(
        summary,
        outcome.error,
        &interrupt,
        &Shown {
            place: &place,
            trace_only: trace_only.is_some(),
        },
        quiet,
        verbose,
    );
    let interrupted = summary.status == RunStatus::Interrupted;
    let result = crate::plot::after_run(plot, interrupted, quiet, result);
    drop(lock);
    result
}

/// Where a run's messages say its outputs are: the output directory, or
/// the trace file of `-o FILE.csv`.
struct Shown<'a> {
    place: &'a std::path::Path,
    trace_only: bool,
}

/// Says how the run ended (interrupted, completed or terminated by an FMU,
/// failed) and where its outputs are; the error carries the exit status.
fn report_outcome(
    summary: &cosim_core::RunSummary,
    error: Option<cosim_core::CoreError>,
    interrupt: &Interrupt,
    shown: &Shown<'_>,
    quiet: bool,
    verbose: u8,
) -> Result<()> {
    let place = shown.place;
    match (summary.status, error) {
        (RunStatus::Interrupted, _) => {
            say!(
                "interrupted by {} at t = {} after {}: FMUs terminated; the outputs hold every completed step ({})",
                interrupt.signal_name().unwrap_or("a signal"),
                summary.t_reached,
                macro_steps(summary.stats.macro_steps),
                place.display()
            );
            Err(anyhow::Error::new(Failed(interrupt.exit_status())))
        }
        (RunStatus::Completed | RunStatus::Terminated, _) => {
            if let Some(ended) = &summary.ended_by {
                // Said even with -q: the run ended before its stop time.
                say!(
                    "subsystem '{}' ended the simulation at t = {} (the FMU asked to terminate; stop time {})",
                    ended.subsystem,
                    ended.t,
                    summary.t_stop
                );
            }
            if !quiet {
                say!(
                    "done: t = {} reached in {} ({:.3} s); {} in {}",
                    summary.t_reached,
                    macro_steps(summary.stats.macro_steps),
                    summary.wall_time_s,
                    if shown.trace_only { "trace" } else { "outputs" },
                    place.display()
                );
                for b in &summary.bonds {
                    say!(
                        "  {}: cumulative residual energy {} J",
                        b.name,
                        b.cumulative_residual_energy
                    );
                }
                if let Some(rt) = &summary.real_time {
                    report_real_time(summary, rt);
                }
                if verbose >= 1 {
                    report_decisions(summary);
                }
            }
            Ok(())
        }
        (_, error) => {
            // A value the FMU refused while it was set during
            // initialization is bad input, like one refused while reading.
            let code = match &error {
                Some(cosim_core::CoreError::StartValue { .. }) => exit::BAD_INPUT,
                _ => exit::RUN_FAILED,
            };
            let write_failed = matches!(error, Some(cosim_core::CoreError::OutputWrite { .. }));
            let msg = error.map(|e| e.to_string()).unwrap_or_default();
            say!("error: {msg}");
            if write_failed {
                say!(
                    "the run stopped at t = {}; the other outputs hold the completed steps up to the failure, each ending on a complete row ({})",
                    summary.t_reached,
                    place.display()
                );
            } else if !summary.initialized {
                say!(
                    "initialization failed: no step was made ({})",
                    place.display()
                );
            } else {
                say!(
                    "the outputs hold every completed step up to t = {} ({})",
                    summary.t_reached,
                    place.display()
                );
            }
            Err(anyhow::Error::new(Failed(code)))
        }
    }
}

/// Removes the private output directory of `-o FILE.csv` (it holds the
/// run's lock only) when the run ends, however `run` returns.
struct RemovePrivateDir;

impl Drop for RemovePrivateDir {
    fn drop(&mut self) {
        ending::remove_private_dir();
    }
}

/// `1 macro step`, `3 macro steps`.
fn macro_steps(n: u64) -> String {
    counted(n, "macro step", "macro steps")
}

/// [`count`] of any unsigned count (a statistic's `u64`, `u32`).
fn counted(n: impl TryInto<usize>, one: &str, many: &str) -> String {
    count(n.try_into().unwrap_or(usize::MAX), one, many)
}

/// True for a path whose name ends in `.csv` (any case).
fn names_a_csv(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// `-o FILE.csv` on a single-FMU run (not an existing directory): the
/// file the trace alone goes to, as fmusim's `--output-file` writes it.
fn trace_file(args: &RunArgs) -> Option<PathBuf> {
    let out = args.out.as_ref()?;
    (names_a_csv(out) && cosim_scenario::single::is_fmu(&args.scenario) && !out.is_dir())
        .then(|| out.clone())
}

/// Makes `prepared` write its trace to `file` and nothing else (no energy
/// log, step log or summary): the output directory, which the run locks,
/// is a private one, removed after the run.
fn trace_only_into(file: &std::path::Path, prepared: &mut Prepared) -> Result<()> {
    let cannot = |e: std::io::Error| bad_input(format!("error: -o {}: {e}", file.display()));
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    let private = ending::private_dir().map_err(|e| {
        bad_input(format!(
            "error: cannot create a private directory for the run's lock: {e}"
        ))
    })?;
    let o = &mut prepared.resolved.outputs;
    o.dir = private;
    o.trace = Some(file.to_path_buf());
    o.energy_log = None;
    o.step_log = None;
    o.summary = None;
    Ok(())
}

/// `-o DIR.csv` of a scenario (not a single FMU): the directory is made
/// as asked, and a warning says so (a user of fmusim may expect a file).
fn warn_csv_directory(args: &RunArgs, quiet: bool) {
    let Some(out) = &args.out else { return };
    if quiet || !names_a_csv(out) || out.is_dir() {
        return;
    }
    say!(
        "warning: -o {}: a scenario's outputs go into a directory of that name (trace.csv, energy.csv, steps.csv, summary.json); only a single FMU's run writes its trace alone to FILE.csv",
        crate::console::shown(out).display()
    );
}

/// Progress over simulated time: a bar on a terminal, a line every 10 %
/// otherwise. It asks to be called only when it has something to show
/// ([`Observer::due`]), so a run between two updates takes the run loop's
/// quiet path.
struct Progress {
    t0: f64,
    t1: f64,
    bar: Option<indicatif::ProgressBar>,
    next_percent: u64,
    /// The start and stop times in ticks of the run's time base (from
    /// `start`).
    span: (i64, i64),
    /// The last macro step seen.
    step: u64,
    /// The wall clock and the macro step of the bar's last redraw.
    last_redraw: (Instant, u64),
    /// When the next update is due.
    due: Due,
    /// A paced run: the factor achieved is shown, from this start.
    real_time: Option<Instant>,
}

/// How often the bar is redrawn, at most.
const BAR_PERIOD: Duration = Duration::from_millis(100);
/// The most macro steps between two looks at the clock for the bar (a run
/// that slows down is still shown moving after at most this many).
const BAR_STEPS: u64 = 256;

impl Progress {
    fn new(t0: f64, t1: f64, real_time: bool) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(1000);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {percent:>3}% t = {msg} [{elapsed_precise} < {eta_precise}]",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Progress {
            t0,
            t1,
            bar,
            next_percent: 10,
            span: (0, 0),
            step: 0,
            last_redraw: (Instant::now(), 0),
            due: Due::EveryStep,
            real_time: real_time.then(Instant::now),
        }
    }

    /// The whole percent of the run done at `ticks` (in ticks, so a tenth
    /// is reached exactly at its communication point).
    fn percent(&self, ticks: i64) -> u64 {
        let (a, b) = self.span;
        if b <= a {
            return 100;
        }
        let done = i128::from(ticks.saturating_sub(a)) * 100 / i128::from(b - a);
        done.clamp(0, 100) as u64
    }

    /// The first communication point at which `percent` is `p` or more.
    fn point_of(&self, p: u64) -> i64 {
        let (a, b) = self.span;
        // (Not negative: b > a once started.)
        let share = (i128::from(b - a) * i128::from(p) + 99) / 100;
        i64::try_from(i128::from(a) + share).unwrap_or(i64::MAX)
    }

    fn update(&mut self, t: f64, ticks: i64, force: bool) {
        let pace = self.real_time.map_or(String::new(), |start| {
            let wall = start.elapsed().as_secs_f64();
            if wall > 0.0 {
                format!(" ({:.2}x real time)", (t - self.t0) / wall)
            } else {
                String::new()
            }
        });
        match &self.bar {
            Some(bar) => {
                let now = Instant::now();
                let (last, last_step) = self.last_redraw;
                let wall = now.duration_since(last);
                if force || wall >= BAR_PERIOD {
                    self.last_redraw = (now, self.step);
                    let frac = ((t - self.t0) / (self.t1 - self.t0)).clamp(0.0, 1.0);
                    bar.set_position((frac * 1000.0) as u64);
                    bar.set_message(format!("{t:.6}{pace}"));
                }
                // Due again after the steps the run takes in one period at
                // its pace since the last redraw.
                let rate = (self.step - last_step) as f64 / wall.as_secs_f64().max(1e-9);
                let ahead = ((rate * BAR_PERIOD.as_secs_f64()) as u64).clamp(1, BAR_STEPS);
                self.due = Due::AtStep(self.step.saturating_add(ahead));
            }
            None => {
                let percent = self.percent(ticks);
                if percent >= self.next_percent {
                    say!("progress: t = {t} ({percent} %){pace}");
                    self.next_percent = (percent / 10 + 1) * 10;
                }
                self.due = Due::From(self.point_of(self.next_percent));
            }
        }
    }
}

impl Observer for Progress {
    fn start(&mut self, sys: &System) -> cosim_core::Result<()> {
        let base = sys.time_base();
        self.span = (base.round(self.t0), base.round(self.t1));
        self.last_redraw = (Instant::now(), 0);
        self.update(sys.time(), sys.ticks(), true);
        Ok(())
    }

    fn step(&mut self, sys: &System, ctx: &StepContext<'_>) -> cosim_core::Result<()> {
        self.step = ctx.macro_step;
        // (Called after every step when the run has something else to do
        // after each: a step before the due point is nothing to show.)
        let (ticks, step) = self.due.bounds();
        if sys.ticks() >= ticks || self.step >= step {
            self.update(sys.time(), sys.ticks(), false);
        }
        Ok(())
    }

    fn finish(&mut self, sys: &System) -> cosim_core::Result<()> {
        self.update(sys.time(), sys.ticks(), true);
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        Ok(())
    }

    fn due(&self, _sys: &System) -> Due {
        self.due
    }

    fn wants_values(&self, _sys: &System, _next: Next) -> bool {
        // The time only.
        false
    }
}
