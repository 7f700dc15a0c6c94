//! `CountdownPartitions` (FMI 3 only, Scheduled Execution only): three
//! model partitions (a periodic, a triggered and a countdown input Clock)
//! and a triggered output Clock, announced through Clock Update Mode. The
//! behaviour of the Modelica Reference FMUs' `Clocks` model, written here
//! from its description (without its CPU-burning loop).
//!
//! The FMU has no `<CoSimulation>` (and no `<ModelExchange>`): the
//! importer instantiates it with `fmi3InstantiateScheduledExecution`,
//! with a `clockUpdate` callback (else instantiation fails: the FMU has an
//! output and a countdown Clock), and in Clock Activation Mode calls
//! `fmi3ActivateModelPartition(clock, t)`.
//!
//! Input Clocks:
//! - `inClock1` (vr 1): `constant` periodic, interval 1 s, shift 0,
//!   `priority` 0: ticks at t = 0, 1, 2, ...;
//! - `inClock2` (vr 2): `triggered`, `priority` 1: whenever the importer
//!   likes, at most once per time instant;
//! - `inClock3` (vr 3): `countdown`, `priority` 2: ticks only where the
//!   FMU armed it.
//!
//! Output Clock `outClock` (vr 4, triggered). Int32 variables:
//! `inClock1Ticks` (vr 5, clocked by inClock1), `inClock2Ticks` (vr 6, by
//! inClock2), `inClock3Ticks` (vr 7, unclocked), `totalInClockTicks`
//! (vr 8, by inClock1, inClock2, inClock3), `result2` (vr 9, by
//! inClock2), `output3` (vr 11, by inClock3), all 0 before the first
//! activation of their Clocks; input `input2` (vr 10, unclocked, start 0).
//!
//! The partitions (each activation one run; total = totalInClockTicks):
//! - inClock1 at t: inClock1Ticks += 1, total += 1; if floor(t) = 4 it
//!   arms inClock3 with interval 0 (inClock3 is to tick at the same t);
//! - inClock2: inClock2Ticks += 1, total += 1, result2 += input2, then
//!   input2 := 0 (a value set counts once; reading input2 gives 0 after);
//! - inClock3: inClock3Ticks += 1, output3 := 1000, total += 1 (its arming
//!   is used up: fmi3GetIntervalDecimal answers fmi3IntervalNotYetKnown
//!   again);
//! - every partition ticks outClock when total is then a multiple of 5
//!   (the Reference FMU's `outClock = !outClock && total % 5 == 0`: here
//!   outClock is always inactive when a partition starts, as Clock Update
//!   Mode ends with it deactivated).
//!
//! A partition that ticked outClock or armed inClock3 calls the
//! importer's `clockUpdate` before `fmi3ActivateModelPartition` returns;
//! inside it the importer reads `fmi3GetClock(outClock)` (true once per
//! tick) and `fmi3GetIntervalDecimal(inClock3)` (fmi3IntervalChanged and
//! 0 right after the arming, then fmi3IntervalUnchanged until inClock3
//! ticks; fmi3IntervalNotYetKnown while not armed). `fmi3GetClock` is
//! refused outside Clock Update Mode; an activation of inClock3 anywhere
//! but at the arming time, or before the importer read its interval, is
//! refused.
//!
//! The Reference FMUs' example (`scs_synchronous`): inClock1 every second
//! for t = 0, ..., 9, inClock2 at t = 0, 1, 8, 9 (after inClock1),
//! inClock3 where armed (t = 4, after inClock1), input2 never set
//! (result2 = 0 throughout). The values after the activations at each t
//! (output3 0 before t = 4, 1000 from t = 4 on):
//!
//! | t | activations | inClock1Ticks | inClock2Ticks | inClock3Ticks | total | outClock | clockUpdate |
//! |---|-------------|---------------|---------------|---------------|-------|----------|-------------|
//! | 0 | 1, 2        | 1             | 1             | 0             | 2     |          |             |
//! | 1 | 1, 2        | 2             | 2             | 0             | 4     |          |             |
//! | 2 | 1           | 3             | 2             | 0             | 5     | tick (1) | outClock    |
//! | 3 | 1           | 4             | 2             | 0             | 6     |          |             |
//! | 4 | 1, 3        | 5             | 2             | 1             | 8     |          | inClock3 armed (by 1) |
//! | 5 | 1           | 6             | 2             | 1             | 9     |          |             |
//! | 6 | 1           | 7             | 2             | 1             | 10    | tick (1) | outClock    |
//! | 7 | 1           | 8             | 2             | 1             | 11    |          |             |
//! | 8 | 1, 2        | 9             | 3             | 1             | 13    |          |             |
//! | 9 | 1, 2        | 10            | 4             | 1             | 15    | tick (2) | outClock    |
//!
//! outClock ticks three times: at t = 2 and 6 in inClock1's partition
//! (total 5, 10), at t = 9 in inClock2's (total 15). With input2 set to
//! 10 t + 1 before each activation of inClock2, result2 is 1, 12, 93, 184
//! after those at t = 0, 1, 8, 9.
//!
//! Reference: [`crate::reference::countdown_partitions`] (the values after
//! each activation, from the activations and the input2 set before them)
//! and [`crate::reference::countdown_partitions_schedule`] (the example's
//! activations).

use fmu_kit::{
    DependencyKind, EventModel, EventStep, EventUpdate, Inputs, IntervalVariability, LogLevel,
    Model, ModelSpec, StepError, Values, Variable, Vr,
};

/// Input Clock (constant, interval 1 s, shift 0, priority 0).
pub const IN_CLOCK1: Vr = 1;
/// Input Clock (triggered, priority 1).
pub const IN_CLOCK2: Vr = 2;
/// Input Clock (countdown, priority 2): armed by inClock1 at floor(t) = 4.
pub const IN_CLOCK3: Vr = 3;
/// Output Clock (triggered): ticks where total becomes a multiple of 5.
pub const OUT_CLOCK: Vr = 4;
/// Clocked output (by inClock1, Int32): its activations.
pub const IN_CLOCK1_TICKS: Vr = 5;
/// Clocked output (by inClock2, Int32): its activations.
pub const IN_CLOCK2_TICKS: Vr = 6;
/// Output (unclocked, Int32): the activations of inClock3.
pub const IN_CLOCK3_TICKS: Vr = 7;
/// Clocked output (by the three input Clocks, Int32): all activations.
pub const TOTAL_IN_CLOCK_TICKS: Vr = 8;
/// Clocked output (by inClock2, Int32): the sum of the input2 consumed.
pub const RESULT2: Vr = 9;
/// Input (unclocked, Int32, start 0): consumed by inClock2's partition.
pub const INPUT2: Vr = 10;
/// Clocked output (by inClock3, Int32): 1000 once inClock3 ticked.
pub const OUTPUT3: Vr = 11;

/// The interval of inClock1.
pub const IN_CLOCK1_INTERVAL: f64 = 1.0;
/// The floor(t) at which inClock1's partition arms inClock3.
pub const ARMING_SECOND: f64 = 4.0;
/// The interval inClock3 is armed with (0: in the same time instant).
pub const COUNTDOWN: f64 = 0.0;
/// output3 after inClock3's partition.
pub const OUTPUT3_VALUE: f64 = 1000.0;

/// The spec.
pub fn spec() -> ModelSpec {
    let int_out = |vr, name, description, clocks: &[Vr], deps: &[Vr]| {
        let v = Variable::int_output(vr, name, description).depends_on(
            &deps
                .iter()
                .map(|&d| (d, DependencyKind::Dependent))
                .collect::<Vec<_>>(),
        );
        if clocks.is_empty() {
            v
        } else {
            v.clocked_by(clocks)
        }
    };
    let all = [IN_CLOCK1, IN_CLOCK2, IN_CLOCK3];
    ModelSpec::new(
        "CountdownPartitions",
        "Scheduled Execution with Clock Update Mode (as the Reference FMU Clocks): inClock1 (1 s) arms the countdown inClock3 at t = 4; outClock ticks where the total of activations is a multiple of 5",
        build,
    )
    .var(
        Variable::input_clock(
            IN_CLOCK1,
            "inClock1",
            IntervalVariability::Constant,
            "Periodic partition (constant, interval 1 s, shift 0, priority 0)",
        )
        .interval(IN_CLOCK1_INTERVAL)
        .shift(0.0)
        .priority(0),
    )
    .var(
        Variable::input_clock(
            IN_CLOCK2,
            "inClock2",
            IntervalVariability::Triggered,
            "Triggered partition (priority 1)",
        )
        .priority(1),
    )
    .var(
        Variable::input_clock(
            IN_CLOCK3,
            "inClock3",
            IntervalVariability::Countdown,
            "Countdown partition (priority 2), armed by inClock1 at t = 4 with interval 0",
        )
        .priority(2),
    )
    .var(
        Variable::output_clock(
            OUT_CLOCK,
            "outClock",
            "Ticks where totalInClockTicks becomes a multiple of 5",
        )
        .depends_on(&all.map(|c| (c, DependencyKind::Dependent))),
    )
    .var(int_out(IN_CLOCK1_TICKS, "inClock1Ticks", "Activations of inClock1", &[IN_CLOCK1], &[IN_CLOCK1]))
    .var(int_out(IN_CLOCK2_TICKS, "inClock2Ticks", "Activations of inClock2", &[IN_CLOCK2], &[IN_CLOCK2]))
    .var(int_out(IN_CLOCK3_TICKS, "inClock3Ticks", "Activations of inClock3", &[], &[IN_CLOCK3]))
    .var(int_out(TOTAL_IN_CLOCK_TICKS, "totalInClockTicks", "Activations of the three input Clocks", &all, &all))
    .var(int_out(RESULT2, "result2", "Sum of the input2 consumed by inClock2", &[IN_CLOCK2], &[IN_CLOCK2, INPUT2]))
    .var(Variable::int_input(INPUT2, "input2", 0, "Added to result2 by the next activation of inClock2, then 0"))
    .var(int_out(OUTPUT3, "output3", "1000 once inClock3 ticked", &[IN_CLOCK3], &[IN_CLOCK3]))
    .experiment(0.0, 10.0, 1.0)
    .interpolate_inputs(false)
    .directional_derivatives(false)
    .scheduled_execution_only()
}

/// The model: its state is in the values (the counters).
struct CountdownPartitions;

fn build(_v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(CountdownPartitions))
}

impl Model for CountdownPartitions {
    fn init(&mut self, _v: &mut Values) {}

    /// The outputs are the partitions' state: changed by the activations
    /// only ([`EventModel::update_discrete_states`]).
    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for CountdownPartitions {
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

    /// One partition (the kit activates one Clock at a time).
    fn update_discrete_states(
        &mut self,
        _t: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        if v.bool(IN_CLOCK1) {
            v[IN_CLOCK1_TICKS] += 1.0;
        } else if v.bool(IN_CLOCK2) {
            v[IN_CLOCK2_TICKS] += 1.0;
            v[RESULT2] += v[INPUT2];
            v[INPUT2] = 0.0;
        } else if v.bool(IN_CLOCK3) {
            v[IN_CLOCK3_TICKS] += 1.0;
            v[OUTPUT3] = OUTPUT3_VALUE;
        } else {
            return EventUpdate::default();
        }
        v[TOTAL_IN_CLOCK_TICKS] += 1.0;
        if v.int(TOTAL_IN_CLOCK_TICKS) % 5 == 0 {
            v.set_bool(OUT_CLOCK, true);
        }
        EventUpdate::default()
    }

    /// inClock1's partition at floor(t) = 4 arms inClock3 with 0.
    fn countdown_interval(&self, clock: Vr, t: f64, v: &Values) -> Option<f64> {
        (clock == IN_CLOCK3 && v.bool(IN_CLOCK1) && t.floor() == ARMING_SECOND).then_some(COUNTDOWN)
    }
}
