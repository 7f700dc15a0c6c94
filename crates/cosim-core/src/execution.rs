//! A run: initialise the system, let the master advance it to the stop time,
//! feed the observers, and always end cleanly (terminate every subsystem,
//! flush every output) whether the run completes, fails or is interrupted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::error::{CoreError, Result};
use crate::indicators::{EnergyAccount, ErrorIndicator};
use crate::master::{Master, MasterStats, QuietRows, QuietSteps, StepReport};
use crate::observer::{Next, Observer, Sampling, StepContext};
use crate::output::OutputsHandle;
use crate::subsystem::CallCounters;
use crate::system::System;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Reached the stop time.
    Completed,
    /// An FMU ended the simulation before the stop time (FMI 2 Discard
    /// with `fmi2Terminated`, FMI 3 `terminateSimulation`): a normal end,
    /// at the FMU's last successful time ([`RunSummary::ended_by`]).
    Terminated,
    /// Stopped by an error.
    Error,
    /// Stopped by Ctrl-C / SIGTERM.
    Interrupted,
}

/// Per-bond figures in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct BondSummary {
    /// Bond name.
    pub name: String,
    /// Cumulative residual energy at the end, J.
    pub cumulative_residual_energy: f64,
    /// Cumulative transmitted energy at the end, J.
    pub cumulative_transmitted_energy: f64,
}

/// Per-subsystem call counts in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct SubsystemSummary {
    /// Subsystem name.
    pub name: String,
    /// Calls made.
    pub calls: CallCounters,
    /// Wall-clock time spent stepping it (setting inputs, `doStep`,
    /// reading outputs), s, when measured ([`System::enable_step_timing`],
    /// `cosim run -v`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_wall_time_s: Option<f64>,
}

/// The JSON run summary.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// How the run ended.
    pub status: RunStatus,
    /// The error message, when it failed; what ended it, when an FMU did.
    pub message: Option<String>,
    /// The FMU that ended the simulation, when one did.
    pub ended_by: Option<EndedBy>,
    /// The master.
    pub master: String,
    /// Start time.
    pub t_start: f64,
    /// Stop time requested.
    pub t_stop: f64,
    /// Last communication point reached.
    pub t_reached: f64,
    /// Wall-clock duration of the stepping loop, s.
    pub wall_time_s: f64,
    /// Wall-clock duration of initialization, s.
    pub init_time_s: f64,
    /// Initialization completed (else no step was made and the outputs
    /// hold only their headers).
    pub initialized: bool,
    /// Accepted macro steps, rejections, iterations.
    pub stats: MasterStats,
    /// Mean accepted macro step, s.
    pub mean_step: f64,
    /// Largest indicator value over accepted steps (NaN if none).
    pub max_indicator: f64,
    /// Smallest accepted macro step, s (NaN if none; the last step,
    /// shortened to hit the stop time, counts too).
    pub min_step: f64,
    /// Largest accepted macro step, s (NaN if none).
    pub max_step: f64,
    /// Total FMU calls.
    pub calls: CallCounters,
    /// Calls per subsystem.
    pub subsystems: Vec<SubsystemSummary>,
    /// Final energies per bond.
    pub bonds: Vec<BondSummary>,
    /// When the trace wrote its rows (none without a trace):
    /// `"every_step"`, `{"decimation": n}` or `{"interval": s}`.
    pub sampling: Option<Sampling>,
    /// Real-time pacing, when the run was paced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_time: Option<RealTimeSummary>,
}

/// How a paced run kept up with the wall clock.
#[derive(Debug, Clone, Serialize)]
pub struct RealTimeSummary {
    /// The factor asked for (simulated s per wall-clock s).
    pub target_factor: f64,
    /// The factor achieved over the stepping loop.
    pub achieved_factor: f64,
    /// How far the run fell behind the wall clock at worst, s (0: never).
    pub max_lag_s: f64,
    /// The simulated time at which it was furthest behind.
    pub max_lag_at: f64,
}

/// The FMU that ended a run by asking to terminate.
#[derive(Debug, Clone, Serialize)]
pub struct EndedBy {
    /// The subsystem (a path through nested systems: `outer.inner`).
    pub subsystem: String,
    /// Its last successful time, where the run ended.
    pub t: f64,
}

/// Settings of a run.
pub struct Execution {
    /// The system (built, not yet initialised).
    pub system: System,
    /// The master.
    pub master: Box<dyn Master>,
    /// The observers.
    pub observers: Vec<Box<dyn Observer>>,
    /// Start time.
    pub t_start: f64,
    /// Stop time.
    pub t_stop: f64,
    /// Set from a signal handler to stop at the next macro step.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Indicators computed and logged alongside the master, for diagnosis.
    pub diagnostics: Vec<Box<dyn ErrorIndicator>>,
    /// The timed events of the run (carried out by the subsystems they
    /// change): a master that chooses its step ends one at each event
    /// time, and each is logged when it takes effect.
    pub events: crate::events::EventSchedule,
    /// Real-time pacing: simulated time advances at this factor times the
    /// wall clock (`None`: as fast as it can).
    pub real_time: Option<f64>,
}

/// From when one of `observers` is due ([`Observer::due`]): the first
/// communication point in ticks and the first macro step number (the
/// step that reaches either; `(i64::MAX, u64::MAX)` for none).
fn next_due(observers: &[Box<dyn Observer>], quiet_rows: &[usize], sys: &System) -> (i64, u64) {
    observers
        .iter()
        .enumerate()
        .filter(|(i, _)| !quiet_rows.contains(i))
        .map(|(_, o)| o.due(sys).bounds())
        .fold((i64::MAX, u64::MAX), |(t, n), (ot, on)| {
            (t.min(ot), n.min(on))
        })
}

impl Execution {
    /// Runs to the stop time. Returns the summary and the error, if any; on
    /// error every completed step is already in the outputs.
    pub fn run(self) -> (RunSummary, Option<CoreError>) {
        self.run_with_outputs(None)
    }

    /// Runs to the stop time with the run's output files (`outputs`, which
    /// the observers write through): the run loop records its progress in
    /// them after every step (for a watchdog's
    /// [`OutputsHandle::summary_now`]), closes the files after the last
    /// row, before the FMUs are terminated, and writes the summary file
    /// last. A write failure stops the run with
    /// [`CoreError::OutputWrite`]; a summary that cannot be written makes
    /// the returned summary say so (status error).
    pub fn run_with_outputs(
        mut self,
        outputs: Option<&OutputsHandle>,
    ) -> (RunSummary, Option<CoreError>) {
        if self.real_time.is_some() {
            // Which subsystem takes the time, when the run falls behind.
            self.system.enable_step_timing();
        }
        let mut run = RunState {
            energy: EnergyAccount::new(&self.system),
            progress: Progress::default(),
            diagnostic_values: vec![f64::NAN; self.diagnostics.len()],
            macro_steps: 0,
            advance_failed: false,
            init_time: 0.0,
            initialized: false,
            init_start: Instant::now(),
            loop_start: Instant::now(),
        };
        if let Some(o) = outputs {
            let s = self.summary(&run, None, 0.0);
            o.set_summary_template(&s, false);
        }
        // With a worker pool, the whole loop runs on one of its workers:
        // a pooled Jacobi step then starts and ends on a worker (which
        // steps a share itself) instead of waking a sleeping caller.
        let pool = self.system.worker_pool();
        let mut body = || -> Result<()> {
            self.initialize(&mut run, outputs)?;
            self.step_to_stop(&mut run, outputs)
        };
        let result = match pool {
            Some(pool) => pool.install(body),
            None => body(),
        };
        let wall = run.loop_start.elapsed().as_secs_f64();
        self.finish(&run, result.err(), wall, outputs)
    }

    /// Initializes the master, the system, the diagnostics and the
    /// observers, and records the initialization time (in the summary
    /// template of `outputs` too).
    fn initialize(&mut self, run: &mut RunState, outputs: Option<&OutputsHandle>) -> Result<()> {
        self.master.check(&self.system)?;
        self.system.initialize(self.t_start, Some(self.t_stop))?;
        self.master.start(&mut self.system)?;
        // Steps read only the values the coupling uses when nothing
        // else reads the others after every step (System::read_needed_only).
        if self.master.reads_coupled_only() && self.diagnostics.is_empty() {
            self.system.read_needed_only();
        }
        for d in &mut self.diagnostics {
            d.start(&self.system);
        }
        if self.system.has_strings() {
            self.system.read_strings()?;
        }
        for o in &mut self.observers {
            o.start(&self.system)?;
        }
        run.init_time = run.init_start.elapsed().as_secs_f64();
        run.initialized = true;
        if let Some(o) = outputs {
            let s = self.summary(run, None, 0.0);
            o.set_summary_template(&s, true);
        }
        Ok(())
    }

    /// The run loop: macro steps until the stop time, each followed by
    /// what the run does after it ([`Execution::after_step`]) or, when
    /// there is nothing of the kind, only the bookkeeping (the quiet
    /// path).
    fn step_to_stop(&mut self, run: &mut RunState, outputs: Option<&OutputsHandle>) -> Result<()> {
        run.loop_start = Instant::now();
        let base = self.system.time_base();
        let (stop, t_stop) = (
            base.round(self.t_stop),
            base.seconds(base.round(self.t_stop)),
        );
        // A master that chooses its step ends one on every output point
        // an observer asks for (the trace's interval); a fixed-step
        // master keeps its grid, which a scenario's interval divides.
        let to_points = self.master.fixed_step().is_none();
        // The events of each step, for the step log (no allocation
        // once the first event's text fits).
        let mut event_text = String::new();
        // The report of each macro step (written in place by the master).
        let mut report = StepReport::simple(f64::NAN, f64::NAN);
        // Steps with nothing to do but the run's own bookkeeping: no
        // event, diagnostic, power bond or pacing (those act after
        // every step), and no observer due ([`Observer::due`]: a run
        // with its outputs off, a sampled trace between two rows, the
        // progress display between two updates). The loop goes from such
        // a step's report straight to the next step; `quiet_until` is
        // the first communication point (ticks) and macro step number at
        // which an observer is due.
        let can_be_quiet = self.events.is_empty()
            && self.diagnostics.is_empty()
            && self.real_time.is_none()
            && self.system.bonds().is_empty();
        // Observers whose rows show a few numbers (a trace) write them on
        // the quiet path, those values read by every step: they do not
        // make a step leave it.
        let mut quiet_rows: Vec<usize> = Vec::new();
        let macro_step = self.master.fixed_step();
        for (i, o) in self.observers.iter().enumerate() {
            if can_be_quiet
                && let Some(columns) = o.quiet_columns(macro_step)
                && self.system.read_every_step(columns)
            {
                quiet_rows.push(i);
            }
        }
        // (With no observer but those every step is quiet: one test of a
        // flag.)
        let always_quiet = can_be_quiet && self.observers.len() == quiet_rows.len();
        let mut quiet_until = if can_be_quiet {
            next_due(&self.observers, &quiet_rows, &self.system)
        } else {
            (i64::MIN, 0)
        };
        while self.system.ticks() < stop {
            if let Some(flag) = &self.interrupt
                && flag.load(Ordering::Relaxed)
            {
                return Err(CoreError::Interrupted {
                    t: self.system.time(),
                });
            }
            // A stretch of quiet steps in one go, where the master can.
            // (A master that ends its steps on output points takes them
            // one by one.)
            let mut failed = None;
            if can_be_quiet && !to_points {
                let mut quiet = QuietSteps {
                    limit: if always_quiet {
                        u64::MAX
                    } else {
                        quiet_until.1.saturating_sub(run.macro_steps + 1)
                    },
                    until: if always_quiet {
                        i64::MAX
                    } else {
                        quiet_until.0
                    },
                    macro_steps: run.macro_steps,
                    interrupt: self
                        .interrupt
                        .as_deref()
                        .unwrap_or(&crate::master::NEVER_INTERRUPTED),
                    outputs,
                    rows: QuietRows::new(&mut self.observers, &quiet_rows),
                    step: StepReport::simple(f64::NAN, f64::NAN),
                    due: (!always_quiet).then_some(quiet_until),
                    due_taken: false,
                };
                let outcome =
                    self.master
                        .advance_quiet(&mut self.system, t_stop, &mut quiet, &mut report);
                if quiet.macro_steps > run.macro_steps {
                    run.progress.note(&report);
                    run.macro_steps = quiet.macro_steps;
                }
                if let Some(e) = quiet.rows.failed.take() {
                    return Err(e);
                }
                let due_taken = quiet.due_taken;
                // (The observers' borrow ends here.)
                drop(quiet);
                match outcome {
                    Some(Ok(())) if due_taken => {
                        // The stretch's last step is the one an observer
                        // is due after: what a step taken alone gets.
                        let t_step = report.t;
                        self.after_step(run, &mut report, t_step, &mut event_text)?;
                        quiet_until = next_due(&self.observers, &quiet_rows, &self.system);
                        run.macro_steps += 1;
                        if let Some(o) = outputs {
                            o.record_step(self.system.time(), run.macro_steps);
                        }
                        continue;
                    }
                    Some(Ok(())) => continue,
                    Some(Err(e)) => failed = Some(e),
                    None => {}
                }
            }
            let t_step = self.system.time();
            let now = self.system.ticks();
            let mut target = stop;
            if to_points {
                for o in &self.observers {
                    if let Some(p) = o.next_point()
                        && p > now
                        && p < target
                    {
                        target = p;
                    }
                }
            }
            if to_points
                && let Some(te) = self.events.next_after(t_step)
                && base.round(te) > now
                && base.round(te) < target
            {
                target = base.round(te);
            }
            // A time event an FMU announced (FMI 3 event mode) ends the
            // step, for every master.
            if let Some(te) = self.system.next_event_ticks()
                && te < target
            {
                target = te;
            }
            let t_target = if target == stop {
                t_stop
            } else {
                base.seconds(target)
            };
            let mut ended = None;
            let outcome = match failed {
                Some(e) => Err(e),
                None => self
                    .master
                    .advance_into(&mut self.system, t_target, &mut report),
            };
            match outcome {
                Ok(()) => {}
                Err(CoreError::TerminatedByFmu {
                    subsystem,
                    function,
                    t,
                }) => {
                    // A normal end: the last row at the FMU's last
                    // successful time, then the run stops.
                    self.system.end_at_fmu_termination(t)?;
                    ended = Some(CoreError::TerminatedByFmu {
                        subsystem,
                        function,
                        t,
                    });
                    report = StepReport::simple(t_step, base.span(t_step, t));
                }
                Err(e) => {
                    run.advance_failed = true;
                    return Err(e);
                }
            }
            if always_quiet
                || (self.system.ticks() < quiet_until.0 && run.macro_steps + 1 < quiet_until.1)
            {
                run.progress.note(&report);
                if !quiet_rows.is_empty() {
                    let mut rows = QuietRows::new(&mut self.observers, &quiet_rows);
                    let (t, ticks) = (self.system.time(), self.system.ticks());
                    let published = self.system.published();
                    rows.write((t, ticks), run.macro_steps + 1, &report, &published);
                    if let Some(e) = rows.failed {
                        return Err(e);
                    }
                }
            } else {
                self.after_step(run, &mut report, t_step, &mut event_text)?;
                if can_be_quiet {
                    quiet_until = next_due(&self.observers, &quiet_rows, &self.system);
                }
            }
            run.macro_steps += 1;
            if let Some(o) = outputs {
                o.record_step(self.system.time(), run.macro_steps);
            }
            if let Some(ended) = ended {
                return Err(ended);
            }
        }
        Ok(())
    }

    /// What the run does after an accepted macro step from `t_step`
    /// (`report`) but the bookkeeping: logs the events that took effect,
    /// updates the energy account, notes the step, evaluates the
    /// diagnostics, reads what the observers' rows show and the steps
    /// left unread, paces a real-time run and hands the step to the
    /// observers.
    fn after_step(
        &mut self,
        run: &mut RunState,
        report: &mut StepReport,
        t_step: f64,
        event_text: &mut String,
    ) -> Result<()> {
        event_text.clear();
        // (The first step also names those in effect from the start.)
        let from = if run.macro_steps == 0 {
            f64::NEG_INFINITY
        } else {
            t_step
        };
        for (t, what) in self.events.between(from, self.system.time()) {
            tracing::info!("event at t = {t} s: {what}");
            if !event_text.is_empty() {
                event_text.push_str("; ");
            }
            event_text.push_str(what);
        }
        let energy_eps = run.energy.update(&self.system, report.dt);
        if report.indicator.is_nan() && !self.system.bonds().is_empty() {
            // Masters without an indicator of their own report the
            // energy indicator, so fixed-step runs can be judged.
            report.indicator = energy_eps;
        }
        run.progress.note(report);
        for (value, d) in run.diagnostic_values.iter_mut().zip(&mut self.diagnostics) {
            d.sample(&mut self.system)?;
            *value = d.evaluate(&self.system, report.t, report.dt);
        }
        let step = run.macro_steps + 1;
        // Values the steps left unread (System::read_needed_only)
        // and String values are read only for the rows that show
        // them.
        if self.system.reads_needed_only()
            && self
                .observers
                .iter()
                .any(|o| o.wants_values(&self.system, Next::Step(step)))
        {
            self.system.read_rest()?;
        }
        if self.system.has_strings()
            && self
                .observers
                .iter()
                .any(|o| o.wants_strings(&self.system, Next::Step(step)))
        {
            self.system.read_strings()?;
        }
        // A paced run writes each row when the wall clock reaches
        // its time.
        if let Some(factor) = self.real_time {
            let lag = pace(
                run.loop_start,
                (self.system.time() - self.t_start) / factor,
                self.interrupt.as_deref(),
            );
            if lag > run.progress.max_lag.0 {
                run.progress.max_lag = (lag, self.system.time());
            }
        }
        let ctx = StepContext {
            report,
            energy: &run.energy,
            diagnostics: &run.diagnostic_values,
            events: event_text,
            macro_step: step,
        };
        for o in &mut self.observers {
            o.step(&self.system, &ctx)?;
        }
        Ok(())
    }

    /// After the loop (`error`: what stopped it, if anything): reads what
    /// a last row shows, lets the observers write it and flush, closes
    /// the files, terminates the subsystems (but one whose FMU failed)
    /// and writes the summary.
    fn finish(
        &mut self,
        run: &RunState,
        mut error: Option<CoreError>,
        wall: f64,
        outputs: Option<&OutputsHandle>,
    ) -> (RunSummary, Option<CoreError>) {
        // An interrupt seen by a subsystem that could not tell the time (a
        // host process killed by the signal while it loaded or sat idle)
        // happened at the run's time: its start before initialization.
        if let Some(CoreError::Interrupted { t }) = &mut error
            && t.is_nan()
        {
            *t = if run.initialized {
                self.system.time()
            } else {
                self.t_start
            };
        }
        // A last row written by `finish` shows the values of now: those a
        // step left unread are read, unless a failed step moved the
        // subsystems on (then they are NaN: never read at that point).
        if self.system.reads_needed_only()
            && self
                .observers
                .iter()
                .any(|o| o.wants_values(&self.system, Next::Finish))
        {
            if run.advance_failed {
                self.system.forget_rest();
            } else if let Err(e) = self.system.read_rest() {
                error.get_or_insert(e);
            }
        }
        // A last row written by `finish` shows the String values of now
        // (after a failure, those of the last row read).
        if error.is_none()
            && self.system.has_strings()
            && self
                .observers
                .iter()
                .any(|o| o.wants_strings(&self.system, Next::Finish))
            && let Err(e) = self.system.read_strings()
        {
            error = Some(e);
        }
        for o in &mut self.observers {
            if let Err(e) = o.finish(&self.system) {
                // (A failed write is refused again to every observer.)
                if error.as_ref().map(ToString::to_string) != Some(e.to_string()) {
                    tracing::error!("{e}");
                }
                error.get_or_insert(e);
            }
        }
        if let Some(o) = outputs
            && let Err(e) = o.close_files()
        {
            // Outputs that could not be written make the run a failure,
            // even one interrupted or ended by an FMU; after another
            // failure it is said too.
            match &error {
                None | Some(CoreError::Interrupted { .. } | CoreError::TerminatedByFmu { .. }) => {
                    error = Some(e);
                }
                Some(CoreError::OutputWrite { .. }) => {}
                Some(_) => tracing::error!("{e}"),
            }
        }
        // A subsystem whose FMU returned Error or Fatal is not terminated:
        // after Error the standard allows only freeing it (or a reset), after
        // Fatal no call at all (the binding refuses even the free). Every
        // other subsystem is terminated; all are freed when the system drops.
        let failed = error
            .as_ref()
            .and_then(|e| failed_subsystem(e, &self.system));
        if let Err(e) = self.system.terminate_all_except(failed)
            && error.is_none()
        {
            error = Some(e);
        }
        let mut summary = self.summary(run, error.as_ref(), wall);
        if let Some(o) = outputs
            && let Err(e) = o.write_summary(&summary)
        {
            // Said by the summary returned, since the file could not say it.
            summary.status = RunStatus::Error;
            summary.message = Some(e.to_string());
            error.get_or_insert(e);
        }
        (summary, error)
    }

    /// The summary of the run as it stands, ended by `error` (if any).
    fn summary(&self, run: &RunState, error: Option<&CoreError>, wall: f64) -> RunSummary {
        let (energy, progress) = (&run.energy, &run.progress);
        let mut stats = self.master.stats();
        if let Some(CoreError::TerminatedByFmu { .. }) = error {
            // The macro step in which an FMU ended the simulation is a
            // step of the run (it has its row), though the master's
            // advance returned the end instead of completing it; with at
            // least its one iteration (an iterative master counted its own).
            stats.macro_steps = stats.macro_steps.max(run.macro_steps);
            stats.iterations = stats.iterations.max(stats.macro_steps);
        }
        let status = match error {
            None => RunStatus::Completed,
            Some(CoreError::Interrupted { .. }) => RunStatus::Interrupted,
            Some(CoreError::TerminatedByFmu { .. }) => RunStatus::Terminated,
            Some(_) => RunStatus::Error,
        };
        let ended_by = match error {
            Some(CoreError::TerminatedByFmu { subsystem, t, .. }) => Some(EndedBy {
                subsystem: subsystem.clone(),
                t: *t,
            }),
            _ => None,
        };
        RunSummary {
            status,
            message: error.map(|e| e.to_string()),
            ended_by,
            master: self.master.name().to_string(),
            t_start: self.t_start,
            t_stop: self.t_stop,
            t_reached: self.system.time(),
            wall_time_s: wall,
            init_time_s: run.init_time,
            initialized: run.initialized,
            stats,
            // From the span rather than a sum of step sizes: no round-off
            // (0.001, not 0.0009999999999999176).
            mean_step: if stats.macro_steps > 0 {
                (self.system.time() - self.t_start) / stats.macro_steps as f64
            } else {
                f64::NAN
            },
            max_indicator: progress.max_indicator,
            min_step: progress.min_step,
            max_step: progress.max_step,
            calls: self.system.counters(),
            subsystems: self
                .system
                .subsystems()
                .iter()
                .zip(self.system.buffers())
                .map(|(s, b)| SubsystemSummary {
                    name: s.info().name.clone(),
                    calls: s.counters(),
                    step_wall_time_s: b.step_wall_time,
                })
                .collect(),
            bonds: self
                .system
                .bonds()
                .iter()
                .zip(energy.bonds())
                .map(|(b, e)| BondSummary {
                    name: b.name.clone(),
                    cumulative_residual_energy: e.cumulative_residual_energy,
                    cumulative_transmitted_energy: e.cumulative_transmitted_energy,
                })
                .collect(),
            sampling: self.observers.iter().find_map(|o| o.sampling()),
            real_time: self.real_time.map(|factor| RealTimeSummary {
                target_factor: factor,
                achieved_factor: if wall > 0.0 {
                    (self.system.time() - self.t_start) / wall
                } else {
                    f64::NAN
                },
                max_lag_s: progress.max_lag.0,
                max_lag_at: progress.max_lag.1,
            }),
        }
    }
}

/// Real-time pacing: waits until `due` seconds of wall-clock time have
/// passed since `start` (in slices, so that an interrupt is seen within
/// 50 ms). Returns how far behind the wall clock the run is, s (0 when it
/// had to wait).
fn pace(start: Instant, due: f64, interrupt: Option<&AtomicBool>) -> f64 {
    loop {
        let now = start.elapsed().as_secs_f64();
        if now >= due {
            return now - due;
        }
        if interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
            return 0.0;
        }
        std::thread::sleep(std::time::Duration::from_secs_f64((due - now).min(0.05)));
    }
}

/// What the run keeps from its start to its summary.
struct RunState {
    /// Residual and transmitted energy per bond.
    energy: EnergyAccount,
    progress: Progress,
    /// The diagnostic indicators' values after the last step.
    diagnostic_values: Vec<f64>,
    /// Accepted macro steps.
    macro_steps: u64,
    /// A step failed (the subsystems may have moved on from the last
    /// communication point).
    advance_failed: bool,
    /// How long initialization took, s (from the start of the run: the
    /// summary's reserve and the hand-off to the worker pool included).
    init_time: f64,
    initialized: bool,
    /// When the run started.
    init_start: Instant,
    /// When stepping began (the start of the run until then).
    loop_start: Instant,
}

/// What the loop accumulated over the steps, for the summary.
struct Progress {
    max_indicator: f64,
    min_step: f64,
    max_step: f64,
    /// Real-time pacing: the worst lag behind the wall clock and when.
    max_lag: (f64, f64),
}

impl Progress {
    /// Takes in the report of a completed macro step.
    #[inline]
    fn note(&mut self, report: &StepReport) {
        if self.min_step.is_nan() || report.dt < self.min_step {
            self.min_step = report.dt;
        }
        if self.max_step.is_nan() || report.dt > self.max_step {
            self.max_step = report.dt;
        }
        if report.indicator.is_finite()
            && (self.max_indicator.is_nan() || report.indicator > self.max_indicator)
        {
            self.max_indicator = report.indicator;
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            max_indicator: f64::NAN,
            min_step: f64::NAN,
            max_step: f64::NAN,
            max_lag: (0.0, f64::NAN),
        }
    }
}

/// The subsystem whose FMU returned Error or Fatal (or an invalid status,
/// treated as Fatal), or whose host process
/// died (process isolation), if that is what stopped the run (FMU instances
/// are named after their subsystem).
fn failed_subsystem(error: &CoreError, system: &System) -> Option<usize> {
    let name = match error {
        CoreError::Fmi(cosim_fmi::FmiError::Status {
            instance,
            status:
                cosim_fmi::Status::Error | cosim_fmi::Status::Fatal | cosim_fmi::Status::Invalid(_),
            ..
        }) => instance,
        CoreError::HostProcess { subsystem, .. } => subsystem,
        _ => return None,
    };
    system
        .subsystems()
        .iter()
        .position(|s| s.info().name == *name)
}
