//! A small Model Exchange importer for tests: a fixed-step integrator
//! (explicit Euler or classical RK4) that follows the FMI calling sequence
//! (FMI 2.0 sec. 3.2.4, FMI 3.0 sec. 3.3) on any binding of an FMU
//! ([`MeFmu`]: the C exports, a packaged `.fmu`, an [`Instance`]):
//!
//! 1. (after initialization, in Event Mode) the event iteration: the
//!    discrete-state update until it needs no other, then Continuous-Time
//!    Mode;
//! 2. each step from t to t + h, shortened to end on the stop time and on
//!    the next time event the FMU announced; the stages set the time and
//!    the states and read the derivatives;
//! 3. a change of sign of an event indicator (from > 0 to <= 0 or back)
//!    between the step's ends is a state event: the step is cut by
//!    bisection on its length until the crossing is bracketed within the
//!    root tolerance, and ends just after it;
//! 4. `completedIntegratorStep` after every accepted step; a step event
//!    (`enterEventMode`), a state event or a reached time event enter
//!    Event Mode, run the event iteration, read the states again (they may
//!    have been re-initialized) and go back to Continuous-Time Mode.
//!
//! It is not a solver for production (no error control, no stiff method):
//! with small steps it reproduces analytic references to the tests'
//! tolerances.

use crate::instance::{Instance, MeCall};
use crate::model::{VarType, Vr};
use crate::model_exchange::{EventUpdate, StepEvent};

/// The Model Exchange calls the driver makes. Errors are the failing
/// call's description.
pub trait MeFmu {
    /// `fmi*SetTime`.
    fn set_time(&mut self, t: f64) -> Result<(), String>;
    /// `fmi*SetContinuousStates`.
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<(), String>;
    /// `fmi*GetContinuousStates`.
    fn continuous_states(&mut self) -> Result<Vec<f64>, String>;
    /// `fmi2GetDerivatives` / `fmi3GetContinuousStateDerivatives`.
    fn derivatives(&mut self) -> Result<Vec<f64>, String>;
    /// `fmi*GetEventIndicators`.
    fn event_indicators(&mut self) -> Result<Vec<f64>, String>;
    /// `fmi*CompletedIntegratorStep` (with `noSetFMUStatePriorToCurrentPoint = true`).
    fn completed_integrator_step(&mut self) -> Result<StepEvent, String>;
    /// `fmi*EnterEventMode`.
    fn enter_event_mode(&mut self) -> Result<(), String>;
    /// `fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates`.
    fn update_discrete_states(&mut self) -> Result<EventUpdate, String>;
    /// `fmi*EnterContinuousTimeMode`.
    fn enter_continuous_time_mode(&mut self) -> Result<(), String>;
    /// The values recorded at each accepted step besides the states (the
    /// binding's choice; none by default).
    fn observe(&mut self) -> Result<Vec<f64>, String> {
        Ok(Vec::new())
    }
    /// `fmi2GetReal` / `fmi3GetFloat64` (for [`Coupled`]; none by default).
    fn get_reals(&mut self, vrs: &[Vr]) -> Result<Vec<f64>, String> {
        let _ = vrs;
        Err("this binding reads no values".into())
    }
    /// `fmi2SetReal` / `fmi3SetFloat64` (for [`Coupled`]; none by default).
    fn set_reals(&mut self, vrs: &[Vr], values: &[f64]) -> Result<(), String> {
        let _ = (vrs, values);
        Err("this binding sets no values".into())
    }
}

/// `u[to] = gain * y[from]` between two FMUs of a [`Coupled`] system:
/// (index of the FMU, value reference).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Connection {
    /// The source: an output.
    pub from: (usize, Vr),
    /// The destination: an input.
    pub to: (usize, Vr),
    /// The gain.
    pub gain: f64,
}

/// Several Model Exchange FMUs integrated as one ODE (the monolithic
/// system of a co-simulation's subsystems): the state vector is theirs
/// end to end, and the connections are resolved, in the order given,
/// whenever states are set and before derivatives or event indicators
/// are read (so an output that depends on an input must come after the
/// connection that sets that input: no algebraic loops here).
pub struct Coupled<'a> {
    /// The FMUs.
    pub fmus: Vec<&'a mut dyn MeFmu>,
    /// The connections, in evaluation order.
    pub connections: Vec<Connection>,
    /// The number of states of each FMU (learned from the first
    /// [`MeFmu::continuous_states`]).
    sizes: Vec<usize>,
}

impl<'a> Coupled<'a> {
    /// The system of `fmus` with `connections`.
    pub fn new(fmus: Vec<&'a mut dyn MeFmu>, connections: Vec<Connection>) -> Self {
        Coupled {
            fmus,
            connections,
            sizes: Vec::new(),
        }
    }

    fn propagate(&mut self) -> Result<(), String> {
        for c in &self.connections {
            let y = self.fmus[c.from.0].get_reals(&[c.from.1])?;
            let u = c.gain * y.first().copied().unwrap_or(f64::NAN);
            self.fmus[c.to.0].set_reals(&[c.to.1], &[u])?;
        }
        Ok(())
    }

    fn concat(
        &mut self,
        f: impl Fn(&mut dyn MeFmu) -> Result<Vec<f64>, String>,
    ) -> Result<Vec<f64>, String> {
        let mut out = Vec::new();
        for fmu in &mut self.fmus {
            out.extend(f(&mut **fmu)?);
        }
        Ok(out)
    }
}

impl MeFmu for Coupled<'_> {
    fn set_time(&mut self, t: f64) -> Result<(), String> {
        for fmu in &mut self.fmus {
            fmu.set_time(t)?;
        }
        Ok(())
    }
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<(), String> {
        if self.sizes.iter().sum::<usize>() != x.len() {
            return Err(format!(
                "{} states given, the system has {:?}",
                x.len(),
                self.sizes
            ));
        }
        let mut at = 0;
        for (fmu, &n) in self.fmus.iter_mut().zip(&self.sizes) {
            fmu.set_continuous_states(&x[at..at + n])?;
            at += n;
        }
        self.propagate()
    }
    fn continuous_states(&mut self) -> Result<Vec<f64>, String> {
        let mut out = Vec::new();
        let mut sizes = Vec::new();
        for fmu in &mut self.fmus {
            let x = fmu.continuous_states()?;
            sizes.push(x.len());
            out.extend(x);
        }
        self.sizes = sizes;
        Ok(out)
    }
    fn derivatives(&mut self) -> Result<Vec<f64>, String> {
        self.propagate()?;
        self.concat(|f| f.derivatives())
    }
    fn event_indicators(&mut self) -> Result<Vec<f64>, String> {
        self.propagate()?;
        self.concat(|f| f.event_indicators())
    }
    fn completed_integrator_step(&mut self) -> Result<StepEvent, String> {
        let mut all = StepEvent::default();
        for fmu in &mut self.fmus {
            let e = fmu.completed_integrator_step()?;
            all.enter_event_mode |= e.enter_event_mode;
            all.terminate_simulation |= e.terminate_simulation;
        }
        Ok(all)
    }
    fn enter_event_mode(&mut self) -> Result<(), String> {
        for fmu in &mut self.fmus {
            fmu.enter_event_mode()?;
        }
        Ok(())
    }
    fn update_discrete_states(&mut self) -> Result<EventUpdate, String> {
        self.propagate()?;
        let mut all = EventUpdate::default();
        for fmu in &mut self.fmus {
            let u = fmu.update_discrete_states()?;
            all.discrete_states_need_update |= u.discrete_states_need_update;
            all.terminate_simulation |= u.terminate_simulation;
            all.values_of_continuous_states_changed |= u.values_of_continuous_states_changed;
            all.next_event_time = match (all.next_event_time, u.next_event_time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        Ok(all)
    }
    fn enter_continuous_time_mode(&mut self) -> Result<(), String> {
        for fmu in &mut self.fmus {
            fmu.enter_continuous_time_mode()?;
        }
        Ok(())
    }
    fn observe(&mut self) -> Result<Vec<f64>, String> {
        self.concat(|f| f.observe())
    }
}

/// The integration method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Explicit Euler.
    Euler,
    /// Classical fourth-order Runge-Kutta.
    Rk4,
}

/// What the driver does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The step size (steps end earlier at events and the stop time).
    pub step: f64,
    /// The stop time.
    pub stop: f64,
    /// The method.
    pub method: Method,
    /// How closely a state event is bracketed (its time is the right end).
    pub root_tolerance: f64,
}

impl Settings {
    /// RK4 with `step` to `stop`, state events located to 1e-12.
    pub fn rk4(step: f64, stop: f64) -> Self {
        Settings {
            step,
            stop,
            method: Method::Rk4,
            root_tolerance: 1e-12,
        }
    }
}

/// Why an event was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The event iteration after initialization.
    Initial,
    /// The time event the FMU announced.
    Time,
    /// An event indicator changed sign.
    State,
    /// `completedIntegratorStep` asked for one.
    Step,
}

/// The result of [`simulate`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Run {
    /// The time of each accepted step (and the start).
    pub times: Vec<f64>,
    /// The states there (after the events handled there).
    pub states: Vec<Vec<f64>>,
    /// [`MeFmu::observe`] there.
    pub observed: Vec<Vec<f64>>,
    /// Every event handled: (time, why; a state event that is also a
    /// step event is a state event).
    pub events: Vec<(f64, EventKind)>,
    /// Whether and when the FMU asked to terminate.
    pub terminated: Option<f64>,
    /// The number of accepted steps.
    pub steps: usize,
}

impl Run {
    /// The times of the events of one kind.
    pub fn event_times(&self, kind: EventKind) -> Vec<f64> {
        self.events
            .iter()
            .filter(|e| e.1 == kind)
            .map(|e| e.0)
            .collect()
    }

    /// The last recorded states.
    pub fn final_states(&self) -> &[f64] {
        self.states.last().map_or(&[], Vec::as_slice)
    }
}

/// The event iteration: updates until no other is needed. Returns the
/// next time event and whether the FMU asked to terminate.
fn event_iteration(fmu: &mut dyn MeFmu) -> Result<(Option<f64>, bool), String> {
    for _ in 0..1000 {
        let u = fmu.update_discrete_states()?;
        if u.terminate_simulation {
            return Ok((u.next_event_time, true));
        }
        if !u.discrete_states_need_update {
            return Ok((u.next_event_time, false));
        }
    }
    Err("the event iteration did not converge in 1000 updates".into())
}

/// One step of `h` from (`t`, `x`) with the method; the stages set the
/// time and the states.
fn integrate(
    fmu: &mut dyn MeFmu,
    method: Method,
    t: f64,
    x: &[f64],
    h: f64,
) -> Result<Vec<f64>, String> {
    let mut f = |s: f64, y: &[f64]| -> Result<Vec<f64>, String> {
        fmu.set_time(s)?;
        fmu.set_continuous_states(y)?;
        fmu.derivatives()
    };
    let axpy =
        |a: f64, k: &[f64]| -> Vec<f64> { x.iter().zip(k).map(|(xi, ki)| xi + a * ki).collect() };
    match method {
        Method::Euler => Ok(axpy(h, &f(t, x)?)),
        Method::Rk4 => {
            let k1 = f(t, x)?;
            let k2 = f(t + h / 2.0, &axpy(h / 2.0, &k1))?;
            let k3 = f(t + h / 2.0, &axpy(h / 2.0, &k2))?;
            let k4 = f(t + h, &axpy(h, &k3))?;
            Ok((0..x.len())
                .map(|i| x[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
                .collect())
        }
    }
}

/// Whether an event indicator changed sign between `a` and `b`.
fn crossed(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).any(|(x, y)| (*x > 0.0) != (*y > 0.0))
}

/// Runs the FMU from `start` (just initialized: in Event Mode) to the stop
/// time or its request to terminate, as the module says.
pub fn simulate(fmu: &mut dyn MeFmu, start: f64, settings: &Settings) -> Result<Run, String> {
    let mut run = Run::default();
    let eps = 1e-12 * start.abs().max(settings.stop.abs()).max(1.0);
    let (mut next_event, terminate) = event_iteration(fmu)?;
    run.events.push((start, EventKind::Initial));
    let mut t = start;
    if terminate {
        run.terminated = Some(t);
        return Ok(run);
    }
    fmu.enter_continuous_time_mode()?;
    let mut x = fmu.continuous_states()?;
    let mut z = fmu.event_indicators()?;
    run.times.push(t);
    run.states.push(x.clone());
    run.observed.push(fmu.observe()?);
    while t < settings.stop - eps {
        let mut t1 = (t + settings.step).min(settings.stop);
        let time_event = next_event.filter(|&te| te <= t1 + eps);
        if let Some(te) = time_event {
            t1 = te.max(t);
        }
        let x1 = integrate(fmu, settings.method, t, &x, t1 - t)?;
        fmu.set_time(t1)?;
        fmu.set_continuous_states(&x1)?;
        let z1 = fmu.event_indicators()?;
        let (t_acc, x_acc, state_event) = if crossed(&z, &z1) {
            let (mut lo, mut hi) = (0.0, t1 - t);
            while hi - lo > settings.root_tolerance {
                let mid = 0.5 * (lo + hi);
                let xm = integrate(fmu, settings.method, t, &x, mid)?;
                fmu.set_time(t + mid)?;
                fmu.set_continuous_states(&xm)?;
                if crossed(&z, &fmu.event_indicators()?) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let xe = integrate(fmu, settings.method, t, &x, hi)?;
            fmu.set_time(t + hi)?;
            fmu.set_continuous_states(&xe)?;
            (t + hi, xe, true)
        } else {
            (t1, x1, false)
        };
        let step = fmu.completed_integrator_step()?;
        t = t_acc;
        x = x_acc;
        run.steps += 1;
        if step.terminate_simulation {
            run.terminated = Some(t);
            run.times.push(t);
            run.states.push(x.clone());
            run.observed.push(fmu.observe()?);
            return Ok(run);
        }
        let time_reached = time_event.is_some() && !state_event;
        let kind = if state_event {
            Some(EventKind::State)
        } else if time_reached {
            Some(EventKind::Time)
        } else if step.enter_event_mode {
            Some(EventKind::Step)
        } else {
            None
        };
        if let Some(kind) = kind {
            fmu.enter_event_mode()?;
            let (next, terminate) = event_iteration(fmu)?;
            run.events.push((t, kind));
            if terminate {
                run.terminated = Some(t);
                run.times.push(t);
                run.states.push(fmu.continuous_states()?);
                run.observed.push(fmu.observe()?);
                return Ok(run);
            }
            fmu.enter_continuous_time_mode()?;
            // A state or step event may leave the announced time event
            // standing: the FMU announces it again (or a new one).
            next_event = next;
            x = fmu.continuous_states()?;
        }
        z = fmu.event_indicators()?;
        run.times.push(t);
        run.states.push(x.clone());
        run.observed.push(fmu.observe()?);
    }
    Ok(run)
}

/// An [`Instance`] as an [`MeFmu`], each call checked as the C layer
/// checks it (`Instance::check_me_call`); `observe` reads the Real
/// variables `observed`.
#[derive(Debug)]
pub struct InstanceFmu<'a> {
    /// The instance (a Model Exchange instance).
    pub instance: &'a mut Instance,
    /// The variables [`MeFmu::observe`] reads.
    pub observed: Vec<Vr>,
}

impl InstanceFmu<'_> {
    fn call<T>(
        &mut self,
        call: MeCall,
        f: impl FnOnce(&mut Instance) -> crate::instance::R<T>,
    ) -> Result<T, String> {
        let name = call.name(self.instance.version);
        self.instance
            .check_me_call(call, "no Model Exchange")
            .and_then(|()| f(self.instance))
            .map_err(|e| format!("{name}: {}", e.message))
    }

    fn vector(&mut self, call: MeCall, n: usize) -> Result<Vec<f64>, String> {
        let mut out = vec![0.0; n];
        self.call(call, |inst| match call {
            MeCall::GetDerivatives => inst.get_derivatives(&mut out),
            MeCall::GetEventIndicators => inst.get_event_indicators(&mut out),
            _ => inst.get_continuous_states(&mut out),
        })?;
        Ok(out)
    }

    fn states_len(&self) -> usize {
        self.instance
            .spec
            .model_exchange
            .as_ref()
            .map_or(0, |me| me.states.len())
    }
}

impl MeFmu for InstanceFmu<'_> {
    fn set_time(&mut self, t: f64) -> Result<(), String> {
        self.call(MeCall::SetTime, |inst| inst.set_time(t))
    }
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<(), String> {
        self.call(MeCall::SetContinuousStates, |inst| {
            inst.set_continuous_states(x)
        })
    }
    fn continuous_states(&mut self) -> Result<Vec<f64>, String> {
        let n = self.states_len();
        self.vector(MeCall::GetContinuousStates, n)
    }
    fn derivatives(&mut self) -> Result<Vec<f64>, String> {
        let n = self.states_len();
        self.vector(MeCall::GetDerivatives, n)
    }
    fn event_indicators(&mut self) -> Result<Vec<f64>, String> {
        let n = self
            .instance
            .spec
            .model_exchange
            .as_ref()
            .map_or(0, |me| me.event_indicators.len());
        self.vector(MeCall::GetEventIndicators, n)
    }
    fn completed_integrator_step(&mut self) -> Result<StepEvent, String> {
        self.call(MeCall::CompletedIntegratorStep, |inst| {
            inst.completed_integrator_step(true)
        })
    }
    fn enter_event_mode(&mut self) -> Result<(), String> {
        self.call(MeCall::EnterEventMode, Instance::enter_event_mode)
    }
    fn update_discrete_states(&mut self) -> Result<EventUpdate, String> {
        self.call(
            MeCall::UpdateDiscreteStates,
            Instance::update_discrete_states,
        )
    }
    fn enter_continuous_time_mode(&mut self) -> Result<(), String> {
        self.call(
            MeCall::EnterContinuousTimeMode,
            Instance::enter_continuous_time_mode,
        )
    }
    fn observe(&mut self) -> Result<Vec<f64>, String> {
        let vrs = self.observed.clone();
        self.get_reals(&vrs)
    }
    fn get_reals(&mut self, vrs: &[Vr]) -> Result<Vec<f64>, String> {
        let mut out = vec![0.0; vrs.len()];
        self.instance
            .get(vrs, VarType::Real, &mut |i, x| out[i] = x)
            .map_err(|e| e.message)?;
        Ok(out)
    }
    fn set_reals(&mut self, vrs: &[Vr], values: &[f64]) -> Result<(), String> {
        self.instance
            .set(vrs, VarType::Real, values)
            .map_err(|e| e.message)
    }
}
