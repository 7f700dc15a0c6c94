//! A nested co-simulation as a subsystem of the level above (hafner sec.
//! 2-3; docs/algorithms.md).
//!
//! A [`NestedSystem`] owns a [`System`] and its own [`Master`]: stepping it
//! over `[t, t + H]` runs the inner master from `t` to exactly `t + H` with
//! its own steps. Its inputs are inner inputs fed from outside (held over
//! the outer step), its observed values inner outputs and other inner
//! variables. Saving its state saves every inner subsystem's state, the
//! inner coupled values and the inner master's state, so any master of the
//! level above, including those that roll back, can drive it. Nesting
//! depth is unbounded: an inner subsystem can itself be a nested system.

use cosim_fmi::StepOutcome;

use crate::error::{CoreError, Result};
use crate::indicators::EnergyAccount;
use crate::master::{Master, StepReport};
use crate::observer::{Observer, StepContext};
use crate::subsystem::{CallCounters, RollbackTo, StateId, Subsystem, SubsystemInfo};
use crate::system::{BufferSnapshot, System};

struct Saved {
    states: Vec<StateId>,
    buffers: BufferSnapshot,
    master: Box<dyn Master>,
    energy: EnergyAccount,
    /// Inner macro steps taken, and each observer's rows, at the save.
    macro_steps: u64,
    rows: Vec<u64>,
}

/// A co-simulation that is a subsystem of the level above.
pub struct NestedSystem {
    info: SubsystemInfo,
    system: System,
    master: Box<dyn Master>,
    /// Nest input slot -> inner (subsystem, input slot).
    inputs: Vec<(usize, usize)>,
    /// Nest observed slot -> inner (subsystem, observed slot).
    observed: Vec<(usize, usize)>,
    energy: EnergyAccount,
    observers: Vec<Box<dyn Observer>>,
    initializing: bool,
    saved: Vec<Option<Saved>>,
    t_stop: Option<f64>,
    /// An inner subsystem's Jacobian (reused: the predictor/corrector's lag
    /// correction reads it every macro step).
    inner_jacobian: Vec<f64>,
    /// Inner macro steps taken (for the observers' `StepContext`; restored
    /// with a state, so steps taken back are not counted).
    macro_steps: u64,
}

impl std::fmt::Debug for NestedSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedSystem")
            .field("name", &self.info.name)
            .field("system", &self.system)
            .finish()
    }
}

impl NestedSystem {
    /// Wraps `system`, driven by `master`. `inputs[i]` is the inner
    /// (subsystem, input slot) the nest's input slot `i` feeds; `observed[k]`
    /// the inner (subsystem, observed slot) its observed slot `k` reads.
    /// `observers` (e.g. an energy log of the inner bonds) see every inner
    /// step.
    pub fn new(
        info: SubsystemInfo,
        system: System,
        master: Box<dyn Master>,
        inputs: Vec<(usize, usize)>,
        observed: Vec<(usize, usize)>,
        observers: Vec<Box<dyn Observer>>,
    ) -> Result<Self> {
        let bad_input = inputs
            .iter()
            .any(|&(s, i)| s >= system.len() || i >= system.subsystems()[s].info().inputs.len());
        let bad_observed = observed
            .iter()
            .any(|&(s, k)| s >= system.len() || k >= system.subsystems()[s].info().observed.len());
        if bad_input
            || bad_observed
            || inputs.len() != info.inputs.len()
            || observed.len() != info.observed.len()
        {
            return Err(CoreError::Config(format!(
                "nested system '{}': its slots do not match the inner subsystems",
                info.name
            )));
        }
        master.check(&system)?;
        let energy = EnergyAccount::new(&system);
        // The outer master may take inner steps back (restore a state):
        // the observers hold their rows until no step before them can be.
        let mut observers = observers;
        for o in &mut observers {
            o.hold_rows();
        }
        Ok(NestedSystem {
            info,
            system,
            master,
            inputs,
            observed,
            energy,
            observers,
            initializing: false,
            saved: Vec::new(),
            t_stop: None,
            inner_jacobian: Vec::new(),
            macro_steps: 0,
        })
    }

    /// Has the observers write the rows no restore can take back any
    /// more: those before the earliest state saved and not freed (all,
    /// when none is).
    fn keep_rows(&mut self) -> Result<()> {
        for (i, o) in self.observers.iter_mut().enumerate() {
            let upto = self
                .saved
                .iter()
                .flatten()
                .filter_map(|s| s.rows.get(i).copied())
                .min()
                .unwrap_or_else(|| o.position());
            o.keep(upto)?;
        }
        Ok(())
    }

    fn saved(&self, id: StateId) -> Result<&Saved> {
        self.saved
            .get(id.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                CoreError::Config(format!(
                    "nested system '{}': unknown or freed state id {}",
                    self.info.name, id.0
                ))
            })
    }

    /// Puts the nest's input values into the inner coupled-input buffers.
    fn write_inputs(&mut self, values: &[f64]) {
        for (&(s, i), &v) in self.inputs.iter().zip(values) {
            self.system.buffers_mut(s).u[i] = v;
        }
    }
}

impl Subsystem for NestedSystem {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }

    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()> {
        self.initializing = true;
        self.t_stop = t_stop;
        self.system.enter_initialization(t0, t_stop)?;
        self.system.settle_initialization()?;
        Ok(())
    }

    fn allow_rollback(&mut self, _to: RollbackTo) -> Result<()> {
        // Inner steps start after the outer step's start: restoring the
        // nest to it restores every inner FMU to before its last step.
        self.system.allow_rollback(RollbackTo::Earlier)
    }

    fn exit_initialization(&mut self) -> Result<()> {
        self.initializing = false;
        self.system.exit_initialization()?;
        self.master.start(&mut self.system)?;
        self.energy.reset();
        for o in &mut self.observers {
            o.start(&self.system)?;
        }
        Ok(())
    }

    fn set_inputs(&mut self, values: &[f64]) -> Result<()> {
        self.write_inputs(values);
        if self.initializing {
            // Propagate through the inner system at once, as an FMU in
            // initialization mode would.
            let mut touched: Vec<usize> = self.inputs.iter().map(|&(s, _)| s).collect();
            touched.sort_unstable();
            touched.dedup();
            for s in touched {
                self.system.set_inputs_of(s)?;
            }
            self.system.settle_initialization()?;
            // The sweep recomputes inner inputs from inner outputs; the
            // exposed ones have no inner route and keep their values.
        }
        Ok(())
    }

    fn set_input_derivatives(&mut self, _order: u32, _values: &[f64]) -> Result<()> {
        Err(CoreError::Config(format!(
            "nested system '{}' holds its inputs over each outer step and takes no input derivatives",
            self.info.name
        )))
    }

    fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        // Outer communication points are on the same tick grid: `t + h`
        // is the next one up to the rounding of the step size.
        let base = self.system.time_base();
        let end = base.round(t + h);
        let t_end = base.seconds(end);
        if self.system.ticks() != base.round(t) {
            return Err(CoreError::Config(format!(
                "nested system '{}' is at t = {} but was asked to step from t = {t}",
                self.info.name,
                self.system.time()
            )));
        }
        // (Written in place by the master: no report copied out of a
        // returned `Result` every inner step.)
        let mut report = StepReport::simple(f64::NAN, f64::NAN);
        while self.system.ticks() < end {
            let t_inner = self.system.time();
            // (An inner FMU's time event or Clock tick ends an inner step,
            // as in the run loop.)
            let t_target = match self.system.next_event_ticks() {
                Some(te) if te < end => base.seconds(te),
                _ => t_end,
            };
            let ended = match self
                .master
                .advance_into(&mut self.system, t_target, &mut report)
            {
                Ok(()) => None,
                Err(CoreError::TerminatedByFmu {
                    subsystem,
                    function,
                    t: t_fmu,
                }) => {
                    // An inner FMU ended the simulation: the inner level ends
                    // there too (its observers get the last row), and the
                    // request goes up with the FMU's own name.
                    self.system.end_at_fmu_termination(t_fmu)?;
                    let ended = CoreError::TerminatedByFmu {
                        subsystem,
                        function,
                        t: t_fmu,
                    };
                    report = StepReport::simple(t_inner, t_fmu - t_inner);
                    Some(ended)
                }
                Err(e) => return Err(e),
            };
            self.energy.update(&self.system, report.dt);
            self.macro_steps += 1;
            let ctx = StepContext {
                report: &report,
                energy: &self.energy,
                diagnostics: &[],
                events: "",
                macro_step: self.macro_steps,
            };
            for o in &mut self.observers {
                o.step(&self.system, &ctx)?;
            }
            self.keep_rows()?;
            if let Some(ended) = ended {
                return Err(ended);
            }
        }
        // The inner master ends exactly on the outer communication point.
        self.system.set_time(t_end);
        Ok(StepOutcome::Completed)
    }

    fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
        let bufs = self.system.buffers();
        for (v, &(s, k)) in values.iter_mut().zip(&self.observed) {
            *v = bufs[s].y[k];
        }
        Ok(())
    }

    fn get_output_derivatives(&mut self, _order: u32, _values: &mut [f64]) -> Result<()> {
        Err(CoreError::Config(format!(
            "nested system '{}' provides no output derivatives",
            self.info.name
        )))
    }

    fn save_state(&mut self, reuse: Option<StateId>) -> Result<StateId> {
        let slot = match reuse {
            Some(id) if self.saved.get(id.0).is_some_and(Option::is_some) => id.0,
            Some(id) => {
                return Err(CoreError::Config(format!(
                    "nested system '{}': unknown or freed state id {}",
                    self.info.name, id.0
                )));
            }
            None => {
                self.saved.push(None);
                self.saved.len() - 1
            }
        };
        let mut states = match self.saved[slot].take() {
            Some(old) => old.states,
            None => Vec::new(),
        };
        self.system.save_states(&mut states)?;
        let mut buffers = BufferSnapshot::default();
        self.system.save_buffers(&mut buffers);
        self.saved[slot] = Some(Saved {
            states,
            buffers,
            master: self.master.clone_box(),
            energy: self.energy.clone(),
            macro_steps: self.macro_steps,
            rows: self.observers.iter().map(|o| o.position()).collect(),
        });
        // (A slot saved again may have held the earliest rows.)
        self.keep_rows()?;
        Ok(StateId(slot))
    }

    fn restore_state(&mut self, id: StateId) -> Result<()> {
        let saved = self.saved(id)?;
        let (states, buffers) = (saved.states.clone(), saved.buffers.clone());
        let (master, energy) = (saved.master.clone_box(), saved.energy.clone());
        self.macro_steps = saved.macro_steps;
        for i in 0..self.observers.len() {
            if let Some(&position) = self.saved(id)?.rows.get(i) {
                self.observers[i].take_back(position);
            }
        }
        self.master = master;
        self.energy = energy;
        self.system.restore_states(&states)?;
        self.system.restore_buffers(&buffers);
        Ok(())
    }

    fn free_state(&mut self, id: StateId) -> Result<()> {
        let states = self.saved(id)?.states.clone();
        self.system.free_states(&states)?;
        self.saved[id.0] = None;
        self.keep_rows()
    }

    fn terminate(&mut self) -> Result<()> {
        let mut first = None;
        for o in &mut self.observers {
            if let Err(e) = o.finish(&self.system) {
                first.get_or_insert(e);
            }
        }
        let term = self.system.terminate_all();
        match (first, term) {
            (Some(e), _) | (None, Err(e)) => Err(e),
            (None, Ok(())) => Ok(()),
        }
    }

    fn counters(&self) -> CallCounters {
        // What the FMUs inside were asked to do (and, for a strongly
        // coupled level, what its integrator did).
        let mut counters = self.system.counters();
        if let Some(solver) = self.master.stats().solver {
            counters.solver = Some(solver);
        }
        counters
    }

    fn feedthrough_jacobian(&mut self, jacobian: &mut [f64]) -> Result<bool> {
        let (n_out, n_in) = (self.info.n_outputs, self.inputs.len());
        if jacobian.len() != n_out * n_in {
            return Ok(false);
        }
        jacobian.iter_mut().for_each(|x| *x = 0.0);
        // An exposed output depends directly on an exposed input only
        // through its own inner subsystem's feed-through.
        for s in 0..self.system.len() {
            let info = self.system.subsystems()[s].info();
            let (no, ni) = (info.n_outputs, info.inputs.len());
            let involved = self.observed[..n_out].iter().any(|&(x, _)| x == s)
                && self.inputs.iter().any(|&(x, _)| x == s);
            if !involved || no == 0 || ni == 0 {
                continue;
            }
            let mut inner = std::mem::take(&mut self.inner_jacobian);
            inner.resize(no * ni, 0.0);
            let known = self
                .system
                .subsystem_mut(s)
                .feedthrough_jacobian(&mut inner);
            self.inner_jacobian = inner;
            if !known? {
                return Ok(false);
            }
            let inner = &self.inner_jacobian;
            for (o, &(so, oo)) in self.observed[..n_out].iter().enumerate() {
                for (k, &(si, ii)) in self.inputs.iter().enumerate() {
                    if so == s && si == s {
                        jacobian[o * n_in + k] = inner[oo * ni + ii];
                    }
                }
            }
        }
        Ok(true)
    }

    fn as_system(&mut self) -> Option<&mut System> {
        Some(&mut self.system)
    }
}
