//! `Partitions` (FMI 3 only, Scheduled Execution only): two model
//! partitions on periodic input Clocks of different priorities, whose
//! clocked outputs show in which order the importer activated them.
//!
//! The FMU has no `<CoSimulation>` (and no `<ModelExchange>`):
//! `fmi3InstantiateCoSimulation` returns NULL, the importer instantiates
//! it with `fmi3InstantiateScheduledExecution` and, after
//! initialization, in Clock Activation Mode, calls
//! `fmi3ActivateModelPartition(clock, t)` for each tick of each Clock.
//!
//! The input Clocks are `constant` periodic, shift 0:
//! - `fast`: interval 0.1 s, `priority` 1, ticks at t = 0, 0.1, 0.2, ...;
//! - `slow`: interval 0.2 s, `priority` 2, ticks at t = 0, 0.2, 0.4, ...
//!
//! At t = 0 and every 0.2 s both tick: an importer that follows the
//! priorities (smaller value first, FMI 3.0 sec. 2.4.4) activates `fast`,
//! then `slow`. Each activation is one partition run; with id = 1 for an
//! activation of `fast`, 2 for one of `slow`, and p the id of the
//! activation before it (0 before the first), the activation sets
//! - `pair` = 10 p + id (clocked by both Clocks);
//! - `fast`: `fast_n` := `fast_n` + 1 (the activations of `fast` so far);
//! - `slow`: `slow_n` := `slow_n` + 1 and y := `gain` `slow_n` (`gain`
//!   the clocked input, set before the activation; start 1).
//!
//! In priority order the activations are f s | f | f s | f | f s ...
//! (t = 0 | 0.1 | 0.2 | 0.3 | 0.4 ...), and `pair` after each is 1, 12 |
//! 21 | 11, 12 | 21 | 11, 12 ...: 12 after the two activations of a
//! common tick (t = 0, 0.2, 0.4, ...), 21 after the single one of `fast`
//! at t = 0.1, 0.3, ... (it follows a slow). The wrong order at a common
//! tick (slow, then fast) leaves 21 instead of 12 there (and 11 at the
//! next fast-only tick). The FMU does not refuse an order: the values
//! tell it. The outputs are the partitions' state (`pair` keeps the last
//! id in its units digit), changed by the activations only: 0 before the
//! first activation of their Clocks (`y` 0 too).
//!
//! Reference: [`crate::reference::partitions`] (the outputs after each
//! activation, from the sequence of activations and the gains) and
//! [`crate::reference::partitions_schedule`] (the activations in priority
//! order up to a time).

use fmu_kit::{
    DependencyKind, EventModel, EventStep, EventUpdate, Inputs, IntervalVariability, LogLevel,
    Model, ModelSpec, StepError, Values, Variable, Vr,
};

/// Input Clock (constant, interval 0.1 s, shift 0, priority 1).
pub const FAST: Vr = 1;
/// Input Clock (constant, interval 0.2 s, shift 0, priority 2).
pub const SLOW: Vr = 2;
/// Clocked output (by `fast`, Int32): the activations of `fast` so far.
pub const FAST_N: Vr = 3;
/// Clocked output (by `slow`, Int32): the activations of `slow` so far.
pub const SLOW_N: Vr = 4;
/// Clocked output (by `fast` and `slow`, Int32): 10 p + id of the last
/// activation (id 1 fast, 2 slow; p the id of the one before, 0 none).
pub const PAIR: Vr = 5;
/// Clocked input (by `slow`): the gain of `y` (start 1).
pub const GAIN: Vr = 6;
/// Clocked output (by `slow`): `gain` * `slow_n` at the last activation
/// of `slow`.
pub const Y: Vr = 7;

/// The interval of `fast`.
pub const FAST_INTERVAL: f64 = 0.1;
/// The interval of `slow`.
pub const SLOW_INTERVAL: f64 = 0.2;
/// The priority of `fast` (higher: activated first).
pub const FAST_PRIORITY: u32 = 1;
/// The priority of `slow`.
pub const SLOW_PRIORITY: u32 = 2;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "Partitions",
        "Two Scheduled Execution partitions (FMI 3 Clocks fast, 0.1 s, priority 1, and slow, 0.2 s, priority 2): pair = 10 * previous id + id shows the activation order",
        build,
    )
    .var(
        Variable::input_clock(
            FAST,
            "fast",
            IntervalVariability::Constant,
            "Clock of the fast partition (constant, interval 0.1 s, shift 0, priority 1)",
        )
        .interval(FAST_INTERVAL)
        .shift(0.0)
        .priority(FAST_PRIORITY),
    )
    .var(
        Variable::input_clock(
            SLOW,
            "slow",
            IntervalVariability::Constant,
            "Clock of the slow partition (constant, interval 0.2 s, shift 0, priority 2)",
        )
        .interval(SLOW_INTERVAL)
        .shift(0.0)
        .priority(SLOW_PRIORITY),
    )
    .var(
        Variable::int_output(FAST_N, "fast_n", "Activations of fast so far")
            .clocked_by(&[FAST])
            .depends_on(&[(FAST, DependencyKind::Dependent)]),
    )
    .var(
        Variable::int_output(SLOW_N, "slow_n", "Activations of slow so far")
            .clocked_by(&[SLOW])
            .depends_on(&[(SLOW, DependencyKind::Dependent)]),
    )
    .var(
        Variable::int_output(
            PAIR,
            "pair",
            "10 * previous + id of the last activation (id 1 fast, 2 slow; previous the id of the activation before, 0 none)",
        )
        .clocked_by(&[FAST, SLOW])
        .depends_on(&[
            (FAST, DependencyKind::Dependent),
            (SLOW, DependencyKind::Dependent),
        ]),
    )
    .var(
        Variable::input(GAIN, "gain", 1.0, "Gain of y, set before an activation of slow")
            .clocked_by(&[SLOW]),
    )
    .var(
        Variable::output(Y, "y", "gain * slow_n at the last activation of slow")
            .clocked_by(&[SLOW])
            .depends_on(&[
                (SLOW, DependencyKind::Dependent),
                (GAIN, DependencyKind::Dependent),
            ]),
    )
    .experiment(0.0, 1.0, 0.1)
    .interpolate_inputs(false)
    .directional_derivatives(false)
    .scheduled_execution_only()
}

/// The model: its state is in the values (the clocked outputs).
struct Partitions;

fn build(_v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(Partitions))
}

impl Model for Partitions {
    fn init(&mut self, _v: &mut Values) {}

    /// The outputs are the partitions' state: changed by the activations
    /// only ([`EventModel::update_discrete_states`]).
    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for Partitions {
    fn step_until_event(
        &mut self,
        _t: f64,
        t_end: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        // Never called: Scheduled Execution has no steps.
        Ok(EventStep::completed(t_end))
    }

    /// One activation (the kit activates one Clock at a time).
    fn update_discrete_states(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let previous = v[PAIR] % 10.0;
        if v.bool(FAST) {
            v[FAST_N] += 1.0;
            v[PAIR] = 10.0 * previous + 1.0;
        } else if v.bool(SLOW) {
            v[SLOW_N] += 1.0;
            v[Y] = v[GAIN] * v[SLOW_N];
            v[PAIR] = 10.0 * previous + 2.0;
        }
        EventUpdate::default()
    }
}
