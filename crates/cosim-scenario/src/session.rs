//! Step-wise control of a prepared scenario (the Python package's
//! `cosim.Simulation`): initialise, advance one macro step or up to a time,
//! read and write variables by name between steps, terminate.
//!
//! A [`Session`] drives the same system and master as [`crate::runner::run`]
//! does, with the same steps (the master's `advance` towards the stop time
//! or a requested time), but writes no outputs: the caller reads what it
//! wants between steps. The energy account of the power bonds is kept as
//! the run loop keeps it.

use std::collections::HashMap;

use cosim_core::CoreError;
use cosim_core::System;
use cosim_core::indicators::EnergyAccount;
use cosim_core::master::{Master, StepReport};

use crate::runner::Prepared;

/// Where a variable's value lives in the system's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// An observed slot (an output or another traced variable) of a
    /// subsystem: its published value.
    Observed {
        /// The subsystem.
        subsystem: usize,
        /// The observed slot.
        slot: usize,
    },
    /// A coupled input of a subsystem: the value it was last set to.
    Input {
        /// The subsystem.
        subsystem: usize,
        /// The input slot.
        slot: usize,
    },
    /// A value traced as text (a String, a Binary as hexadecimal digits,
    /// an FMU's Int64 or UInt64 exactly: `cosim_core::traced_text`), read
    /// from the FMU when asked for.
    Text {
        /// The subsystem.
        subsystem: usize,
        /// Its index among the subsystem's traced texts.
        index: usize,
    },
}

/// A scenario being stepped from outside.
pub struct Session {
    system: System,
    master: Box<dyn Master>,
    energy: EnergyAccount,
    t_start: f64,
    t_stop: f64,
    names: HashMap<String, Slot>,
    started: bool,
    ended: Option<String>,
    failed: bool,
    closed: bool,
    /// An FMU ended the simulation in the last step (which the master,
    /// whose step it ended early, does not count).
    terminated: bool,
}

/// The error of a session: an engine error, or a request it cannot do.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The engine (an FMU, the master) failed.
    #[error("{0}")]
    Core(#[from] CoreError),
    /// A time outside the run, a step after the end.
    #[error("{0}")]
    Request(String),
}

impl Session {
    /// A session on a prepared scenario (its FMUs instantiated, not yet
    /// initialised: [`Session::start`] does that, or the first step).
    pub fn new(prepared: Prepared) -> Session {
        let Prepared {
            resolved, assembly, ..
        } = prepared;
        let system = assembly.system;
        let mut names = HashMap::new();
        for (s, sub) in system.subsystems().iter().enumerate() {
            let info = sub.info();
            for (slot, p) in info.inputs.iter().enumerate() {
                names
                    .entry(format!("{}.{}", info.name, p.name))
                    .or_insert(Slot::Input { subsystem: s, slot });
            }
            // An observed value wins over an input of the same name, and
            // a text (exact) over both.
            for (slot, p) in info.observed.iter().enumerate() {
                names.insert(
                    format!("{}.{}", info.name, p.name),
                    Slot::Observed { subsystem: s, slot },
                );
            }
            for (index, name) in sub.traced_strings().iter().enumerate() {
                names.insert(
                    format!("{}.{name}", info.name),
                    Slot::Text {
                        subsystem: s,
                        index,
                    },
                );
            }
        }
        let energy = EnergyAccount::new(&system);
        Session {
            system,
            master: assembly.master,
            energy,
            t_start: resolved.start,
            t_stop: resolved.stop,
            names,
            started: false,
            ended: None,
            failed: false,
            terminated: false,
            closed: false,
        }
    }

    /// Initialises the FMUs and starts the master (once; later calls do
    /// nothing).
    ///
    /// # Errors
    ///
    /// The master cannot drive the system, an FMU fails to initialise.
    pub fn start(&mut self) -> Result<(), SessionError> {
        if self.started {
            return Ok(());
        }
        self.check_not_ended()?;
        self.started = true;
        let r = (|| {
            self.master.check(&self.system)?;
            self.system.initialize(self.t_start, Some(self.t_stop))?;
            self.master.start(&mut self.system)?;
            if self.system.has_strings() {
                self.system.read_strings()?;
            }
            Ok::<(), CoreError>(())
        })();
        r.map_err(|e| self.fail(e))
    }

    /// Whether [`Session::start`] has run.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Why the session can step no more (an error, the end, termination),
    /// if it cannot.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    fn check_not_ended(&self) -> Result<(), SessionError> {
        match &self.ended {
            Some(why) => Err(SessionError::Request(format!(
                "the simulation has ended ({why}): no more steps"
            ))),
            None => Ok(()),
        }
    }

    /// Records that an error ended the session and hands it back.
    fn fail(&mut self, e: CoreError) -> SessionError {
        self.ended = Some(format!("error at t = {}", self.system.time()));
        self.failed = true;
        SessionError::Core(e)
    }

    /// The current communication point, s.
    pub fn time(&self) -> f64 {
        self.system.time()
    }

    /// The start time, s.
    pub fn start_time(&self) -> f64 {
        self.t_start
    }

    /// The stop time, s.
    pub fn stop_time(&self) -> f64 {
        self.t_stop
    }

    /// Accepted macro steps so far, as the run summary's
    /// `stats.macro_steps` counts them (a step an FMU ended early by asking
    /// to terminate included).
    pub fn macro_steps(&self) -> u64 {
        self.master.stats().macro_steps + u64::from(self.terminated)
    }

    /// The master's name.
    pub fn master(&self) -> &'static str {
        self.master.name()
    }

    /// Whether the time has reached `t` (on the system's time grid).
    pub fn reached(&self, t: f64) -> bool {
        let base = self.system.time_base();
        self.system.ticks() >= base.round(t)
    }

    /// Whether the stop time is reached.
    pub fn at_stop(&self) -> bool {
        self.reached(self.t_stop)
    }

    /// One macro step of the master towards `t_target` (at most the stop
    /// time; the first call initialises). Returns the step's report. An
    /// FMU that asks to terminate ends the session normally: the step ends
    /// at the FMU's last time and [`Session::ended`] says so.
    ///
    /// # Errors
    ///
    /// The stop time is already reached, the session has ended, `t_target`
    /// is not a time after the current one (on the time grid), an FMU or
    /// the master fails (the session then ends).
    pub fn step_towards(&mut self, t_target: f64) -> Result<StepReport, SessionError> {
        self.start()?;
        self.check_not_ended()?;
        if self.at_stop() {
            return Err(SessionError::Request(format!(
                "the simulation is at its stop time t = {}: no more steps",
                self.t_stop
            )));
        }
        let base = self.system.time_base();
        // (A target the time grid cannot tell from now would make a step
        // of no length, which the FMUs refuse, ending the session.)
        if !t_target.is_finite() || base.round(t_target) <= self.system.ticks() {
            return Err(SessionError::Request(format!(
                "t = {t_target} is not after the current time {}{}",
                self.system.time(),
                if t_target.is_finite() {
                    format!(" (on the time grid of {})", base.describe())
                } else {
                    String::new()
                }
            )));
        }
        let (stop_ticks, t_stop) = (
            base.round(self.t_stop),
            base.seconds(base.round(self.t_stop)),
        );
        let target = base.round(t_target).min(stop_ticks);
        let t_target = if target == stop_ticks {
            t_stop
        } else {
            base.seconds(target)
        };
        let t_step = self.system.time();
        match self.master.advance(&mut self.system, t_target) {
            Ok(report) => {
                self.energy.update(&self.system, report.dt);
                Ok(report)
            }
            Err(CoreError::TerminatedByFmu {
                subsystem,
                function,
                t,
            }) => {
                if let Err(e) = self.system.end_at_fmu_termination(t) {
                    return Err(self.fail(e));
                }
                let dt = base.span(t_step, t);
                self.energy.update(&self.system, dt);
                // A normal end, as in a run: the step counts, and no
                // more steps follow.
                self.terminated = true;
                self.ended = Some(format!(
                    "subsystem '{subsystem}' ended the simulation at t = {t} ({function} asked to terminate)"
                ));
                Ok(StepReport::simple(t_step, dt))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// One macro step towards the stop time.
    ///
    /// # Errors
    ///
    /// As [`Session::step_towards`].
    pub fn step(&mut self) -> Result<StepReport, SessionError> {
        self.step_towards(self.t_stop)
    }

    /// Steps until the time reaches `t` (the last step shortened to end on
    /// it), an FMU ends the simulation, or `keep_going` returns false
    /// (checked before each step). Returns the number of steps made.
    ///
    /// # Errors
    ///
    /// The session has ended, `t` is not a finite number, beyond the stop
    /// time or before the current time; as [`Session::step_towards`].
    pub fn run_until(
        &mut self,
        t: f64,
        mut keep_going: impl FnMut() -> bool,
    ) -> Result<u64, SessionError> {
        self.check_not_ended()?;
        let base = self.system.time_base();
        if !t.is_finite() {
            return Err(SessionError::Request(format!("t = {t} is not a time")));
        }
        if base.round(t) > base.round(self.t_stop) {
            return Err(SessionError::Request(format!(
                "t = {t} is beyond the stop time {} (give a later stop time when opening the simulation)",
                self.t_stop
            )));
        }
        if base.round(t) < self.system.ticks() {
            return Err(SessionError::Request(format!(
                "t = {t} is before the current time {}",
                self.system.time()
            )));
        }
        self.start()?;
        let mut n = 0;
        while !self.reached(t) && self.ended.is_none() {
            if !keep_going() {
                break;
            }
            self.step_towards(t)?;
            n += 1;
        }
        Ok(n)
    }

    /// Every name [`Session::get`] knows (`subsystem.variable`), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.names.keys().cloned().collect();
        v.sort();
        v
    }

    /// Where the value of `name` (`subsystem.variable`) lives, if the
    /// system has it in a slot (an output, a traced variable, a coupled
    /// input).
    pub fn slot(&self, name: &str) -> Option<Slot> {
        self.names.get(name).copied()
    }

    /// The value of `name` at the current communication point (before the
    /// first step: after initialisation).
    ///
    /// # Errors
    ///
    /// Initialisation fails (it runs on the first read), no slot holds
    /// `name` (the message names the nearest one).
    pub fn get(&mut self, name: &str) -> Result<f64, SessionError> {
        let Some(slot) = self.slot(name) else {
            return Err(SessionError::Request(self.unknown(name)));
        };
        self.start()?;
        Ok(match slot {
            Slot::Observed { subsystem, slot } => self.system.buffers()[subsystem].y[slot],
            Slot::Input { subsystem, slot } => self.system.buffers()[subsystem].u[slot],
            Slot::Text { .. } => {
                let text = self.get_text(name)?;
                text.parse::<f64>().map_err(|_| {
                    SessionError::Request(format!(
                        "'{name}' is text (\"{}\"), not a number: read it as text",
                        crate::read::shorten(&text)
                    ))
                })?
            }
        })
    }

    /// The value of `name` at the current communication point as its trace
    /// cell shows it: a value traced as text as it is (an Int64 or UInt64
    /// exactly, a Binary as hexadecimal digits), a number in full
    /// precision.
    ///
    /// # Errors
    ///
    /// As [`Session::get`].
    pub fn get_text(&mut self, name: &str) -> Result<String, SessionError> {
        let Some(slot) = self.slot(name) else {
            return Err(SessionError::Request(self.unknown(name)));
        };
        let Slot::Text { subsystem, index } = slot else {
            return Ok(cosim_core::text::number(self.get(name)?));
        };
        self.start()?;
        self.system.read_strings()?;
        Ok(self
            .system
            .strings(subsystem)
            .get(index)
            .cloned()
            .unwrap_or_default())
    }

    /// The message for a name no slot holds.
    pub fn unknown(&self, name: &str) -> String {
        let help = crate::nearest(name, self.names.keys().map(String::as_str))
            .map_or(String::new(), |n| format!(" (did you mean '{n}'?)"));
        format!(
            "no variable '{name}' in this simulation{help}: the outputs, the traced variables ([outputs] variables) and the coupled inputs can be read"
        )
    }

    /// The cumulative residual energy of each bond, J, by name.
    pub fn energy(&self) -> Vec<(String, f64, f64)> {
        self.system
            .bonds()
            .iter()
            .zip(self.energy.bonds())
            .map(|(b, e)| {
                (
                    b.name.clone(),
                    e.cumulative_residual_energy,
                    e.cumulative_transmitted_energy,
                )
            })
            .collect()
    }

    /// The figures of the solver of each Model Exchange subsystem so far
    /// (steps, evaluations, events; as in the run summary), by subsystem
    /// name; Co-Simulation subsystems are left out.
    pub fn solver_statistics(&self) -> Vec<(String, cosim_fmi::ModelExchangeStatistics)> {
        self.system
            .subsystems()
            .iter()
            .filter_map(|s| Some((s.info().name.clone(), s.counters().solver?)))
            .collect()
    }

    /// Terminates the FMUs (once; the session then takes no more steps).
    ///
    /// # Errors
    ///
    /// An FMU fails to terminate.
    pub fn terminate(&mut self) -> Result<(), SessionError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.ended = Some("closed".into());
        // Never initialised: nothing to terminate. After an FMU error the
        // standard allows only freeing it: nothing is terminated then
        // either (dropping the system frees the instances).
        if !self.started || self.failed {
            return Ok(());
        }
        self.system.terminate_all().map_err(SessionError::Core)
    }
}

impl Drop for Session {
    /// Terminates the FMUs if [`Session::terminate`] was not called (the
    /// system then frees them).
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}
