//! `ClockedController` (FMI 3 only, Co-Simulation with event mode and
//! Clocks): a periodic controller partition, the clocked PI controller of
//! the standard's table of Clock types (FMI 3.0 sec. 2.2.9.2).
//!
//! The input Clock `tick` is `constant` periodic: interval T = 0.1 s, shift
//! 0 (`priority` 1, for Scheduled Execution), so it ticks at
//! t_k = t_start + k T, k = 0, 1, 2, ... (the first tick is in the Event
//! Mode that ends initialization). At tick k the importer, in Event Mode
//! at t_k:
//! 1. activates it: `fmi3SetClock(tick, true)`;
//! 2. sets the clocked input `x` (x_k);
//! 3. reads the clocked output `u`: u_k = -(kp x_k + ki I_k), with
//!    I_k = I_{k-1} + T x_k (I_{-1} = 0: the clocked state `I` before the
//!    first tick);
//! 4. `fmi3UpdateDiscreteStates` (the partition's state update I := I_k;
//!    the kit deactivates `tick`), then `fmi3EnterStepMode`.
//!
//! `u` keeps u_k until the next tick (0 before the first). `x`, `u` and `I`
//! can be read (x and u set: x only) only while `tick` is active, or in
//! Initialization Mode. Without Clocks' Event Mode nothing happens: the
//! model has no events of its own, its steps only advance time.
//!
//! Scheduled Execution (`fmi3InstantiateScheduledExecution`, Clock
//! Activation Mode after initialization): set x_k, then
//! `fmi3ActivateModelPartition(tick, t_k)` computes u_k and I_k at once;
//! read u_k after it (not after a set without an activation in between).
//!
//! Reference: [`crate::reference::clocked_controller`] (u_k from the
//! x_k, kp, ki and T); kp = 2, ki = 1 by default, so u_0 = -2.1 x_0, and
//! u_k = -(2 x_k + 0.1 (x_0 + ... + x_k)).

use fmu_kit::{
    DependencyKind, EventModel, EventStep, EventUpdate, Inputs, IntervalVariability, LogLevel,
    Model, ModelSpec, StepError, Values, Variable, Vr,
};

/// Input Clock: the controller's sample tick (constant, T = 0.1 s).
pub const TICK: Vr = 1;
/// Clocked input (by `tick`): the control error x_k.
pub const X: Vr = 2;
/// Clocked output (by `tick`): the control u_k = -(kp x_k + ki I_k).
pub const U: Vr = 3;
/// Parameter: the proportional gain kp.
pub const KP: Vr = 4;
/// Parameter: the integral gain ki.
pub const KI: Vr = 5;
/// Clocked local (by `tick`): the clocked state I_k = I_{k-1} + T x_k
/// (its value after the last update).
pub const I: Vr = 6;

/// The interval of `tick` (its `intervalDecimal`).
pub const INTERVAL: f64 = 0.1;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "ClockedController",
        "Clocked PI controller partition (FMI 3 Clocks): at each tick of the constant Clock tick (T = 0.1 s), u = -(kp x + ki I) with I := I + T x",
        build,
    )
    .var(
        Variable::input_clock(
            TICK,
            "tick",
            IntervalVariability::Constant,
            "Sample Clock of the controller partition (constant, interval 0.1 s, shift 0)",
        )
        .interval(INTERVAL)
        .shift(0.0)
        .priority(1),
    )
    .var(
        Variable::input(X, "x", 0.0, "Control error x_k, sampled at the ticks").clocked_by(&[TICK]),
    )
    .var(
        Variable::output(U, "u", "Control u_k = -(kp x_k + ki I_k)")
            .clocked_by(&[TICK])
            .depends_on(&[
                (TICK, DependencyKind::Dependent),
                (X, DependencyKind::Dependent),
            ]),
    )
    .var(Variable::parameter(KP, "kp", 2.0, "Proportional gain"))
    .var(Variable::parameter(KI, "ki", 1.0, "Integral gain"))
    .var(
        Variable::local(I, "I", "Clocked state: the integral I_k = I_{k-1} + T x_k")
            .clocked_by(&[TICK])
            .initial(fmu_kit::Initial::Exact)
            .start(0.0),
    )
    .experiment(0.0, 1.0, 0.1)
    .interpolate_inputs(false)
    .directional_derivatives(false)
    .event_mode()
    .scheduled_execution()
}

struct ClockedController {
    kp: f64,
    ki: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(ClockedController {
        kp: v.finite("kp", KP)?,
        ki: v.finite("ki", KI)?,
    }))
}

impl ClockedController {
    /// u_k and I_k from x_k and I_{k-1}.
    fn law(&self, x: f64, i_prev: f64) -> (f64, f64) {
        let i = i_prev + INTERVAL * x;
        (-(self.kp * x + self.ki * i), i)
    }
}

impl Model for ClockedController {
    fn init(&mut self, _v: &mut Values) {}

    /// The output equation of the partition, while `tick` is active.
    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        if v.bool(TICK) {
            v[U] = self.law(v[X], v[I]).0;
        }
    }

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for ClockedController {
    fn step_until_event(
        &mut self,
        _t: f64,
        t_end: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        Ok(EventStep::completed(t_end))
    }

    /// The state update of the partition, while `tick` is active.
    fn update_discrete_states(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        if v.bool(TICK) {
            let (u, i) = self.law(v[X], v[I]);
            v[U] = u;
            v[I] = i;
        }
        EventUpdate::default()
    }
}
