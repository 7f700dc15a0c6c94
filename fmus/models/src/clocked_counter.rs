//! `ClockedCounter` (FMI 3 only, Co-Simulation with event mode and
//! Clocks): a partition on a triggered input Clock, the receiving end of
//! a triggered output Clock elsewhere (e.g. `ThresholdTrigger.crossed`).
//!
//! The input Clock `trigger` is `triggered`: no timing known in advance,
//! the importer activates it with `fmi3SetClock` in Event Mode whenever it
//! likes (typically when another FMU's output Clock ticked). At the k-th
//! activation (k = 1, 2, ...) the importer, in Event Mode:
//! 1. activates it: `fmi3SetClock(trigger, true)`;
//! 2. sets the clocked input `value` (v_k);
//! 3. reads the clocked outputs `n` = k (this activation counted) and
//!    `held` = v_k;
//! 4. `fmi3UpdateDiscreteStates` commits them (the clocked state `count`
//!    := k; the kit deactivates `trigger`).
//!
//! Between activations nothing changes: `n` and `held` keep their values
//! (0 before the first activation), the steps only advance time (the model
//! has no events of its own). `value`, `n`, `held` and `count` can be
//! read (`value` set) only while `trigger` is active, or in Initialization
//! Mode (`value` also in Instantiated: its start value). A `value` set in
//! Initialization Mode is no activation: `held` stays 0 until the first.
//!
//! The outputs are the partition's output equation, evaluated whenever the
//! importer reads while `trigger` is active (n = count + 1, held = value:
//! the same however often it reads or sets `value`); the update counts the
//! activation once.

use fmu_kit::{
    DependencyKind, EventModel, EventStep, EventUpdate, Initial, Inputs, IntervalVariability,
    LogLevel, Model, ModelSpec, StepError, Values, VarType, Variable, Vr,
};

/// Input Clock (triggered): activated by the importer.
pub const TRIGGER: Vr = 1;
/// Clocked input (by `trigger`): the value sampled at an activation.
pub const VALUE: Vr = 2;
/// Clocked output (by `trigger`, Int32): the number of activations so
/// far, the current one included.
pub const N: Vr = 3;
/// Clocked output (by `trigger`): `value` at the last activation.
pub const HELD: Vr = 4;
/// Clocked local (by `trigger`, Int32): the activations committed by
/// `fmi3UpdateDiscreteStates` (n after the last update).
pub const COUNT: Vr = 5;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "ClockedCounter",
        "Triggered input Clock partition (FMI 3 Clocks): at each activation of trigger, n counts it and held := value",
        build,
    )
    .var(Variable::input_clock(
        TRIGGER,
        "trigger",
        IntervalVariability::Triggered,
        "Triggered input Clock, activated by the importer (fmi3SetClock in Event Mode)",
    ))
    .var(
        Variable::input(VALUE, "value", 0.0, "Value sampled at each activation")
            .clocked_by(&[TRIGGER]),
    )
    .var(
        Variable::int_output(N, "n", "Number of activations of trigger so far")
            .clocked_by(&[TRIGGER])
            .depends_on(&[(TRIGGER, DependencyKind::Dependent)]),
    )
    .var(
        Variable::output(HELD, "held", "value at the last activation (0 before the first)")
            .clocked_by(&[TRIGGER])
            .depends_on(&[
                (TRIGGER, DependencyKind::Dependent),
                (VALUE, DependencyKind::Dependent),
            ]),
    )
    .var(
        Variable::local(
            COUNT,
            "count",
            "Clocked state: the activations committed by the updates",
        )
        .typed(VarType::Integer)
        .clocked_by(&[TRIGGER])
        .initial(Initial::Exact)
        .start(0.0),
    )
    .experiment(0.0, 1.0, 0.1)
    .interpolate_inputs(false)
    .directional_derivatives(false)
    .event_mode()
}

struct ClockedCounter;

fn build(_v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(ClockedCounter))
}

impl Model for ClockedCounter {
    fn init(&mut self, v: &mut Values) {
        v[N] = 0.0;
        v[HELD] = 0.0;
        v[COUNT] = 0.0;
    }

    /// The output equation of the partition, while `trigger` is active.
    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        if v.bool(TRIGGER) {
            v[N] = v[COUNT] + 1.0;
            v[HELD] = v[VALUE];
        }
    }

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for ClockedCounter {
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

    /// The state update of the partition, while `trigger` is active.
    fn update_discrete_states(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        if v.bool(TRIGGER) {
            v[COUNT] += 1.0;
            v[N] = v[COUNT];
            v[HELD] = v[VALUE];
        }
        EventUpdate::default()
    }
}
