//! `AperiodicClocks` (FMI 3 only, Co-Simulation with event mode and
//! Clocks): time-based input Clocks whose timing the FMU decides, which
//! the importer reads with `fmi3GetIntervalDecimal` /
//! `fmi3GetShiftDecimal` and schedules itself (the FMU announces no
//! `nextEventTime` for them: FMI 3.0 sec. 2.3.5, time events are
//! announced by `nextEventTime` or by the Clocks' intervals and shifts).
//!
//! Input Clocks (no `intervalDecimal` / `shiftDecimal` in the model
//! description):
//! - `sample` (vr 1): `fixed` periodic; interval = the fixed parameter
//!   `period` (vr 4, start 0.25 s), shift = the fixed parameter `offset`
//!   (vr 5, start 0.1 s), read in Initialization Mode
//!   (`fmi3IntervalChanged` the first time, `fmi3IntervalUnchanged` after
//!   and always once initialized): ticks at offset + k period, k = 0, 1,
//!   ... (0.1, 0.35, 0.6, 0.85, 1.1, ... by default);
//! - `burst` (vr 2): `changing`; T_0 = 0.1 (read in Initialization Mode),
//!   and after its i-th activation (i = 1, 2, ...) the next interval
//!   T_i = 0.1 (i + 1), read in that Event Mode (`fmi3IntervalChanged`
//!   once, then `fmi3IntervalUnchanged`): the k-th activation at
//!   t_k = 0.05 k (k + 1), i.e. 0.1, 0.3, 0.6, 1.0, 1.5, 2.1, ...;
//! - `delayed` (vr 3): `countdown`; every activation of `burst` arms it
//!   with the fixed parameter `delay` (vr 6, start 0.05 s; 0 <= delay <
//!   0.2, shorter than every interval of `burst`, so each arming ticks
//!   before the next one): `fmi3IntervalNotYetKnown` while not armed,
//!   `fmi3IntervalChanged` and `delay` when read in the Event Mode of the
//!   arming (then `fmi3IntervalUnchanged`), the activation at t_k + delay
//!   (0.15, 0.35, 0.65, 1.05, 1.55, ... by default; delay = 0: in the same
//!   Event Mode, in a later super-dense instant, after the update of
//!   `burst`).
//!
//! Clocked outputs, each the partition's output equation while its Clock
//! is active (read after `fmi3SetClock`, before or after other sets, until
//! `fmi3UpdateDiscreteStates` deactivates the Clock; 0 before the first
//! activation):
//! - `sample_n` (vr 7, Int32, by `sample`): the activations of `sample`
//!   so far, this one included;
//! - `burst_n` (vr 8, Int32) and `burst_t` (vr 9, Float64), by `burst`:
//!   the activations of `burst` so far and the time of the last;
//! - `delayed_n` (vr 10, Int32) and `delayed_t` (vr 11, Float64), by
//!   `delayed`: the same for `delayed`.
//!
//! The clocked locals `sample_count`, `burst_count`, `delayed_count`
//! (vr 12, 13, 14, Int32, start 0) are the partitions' states, committed
//! by the update (the output equation gives count + 1).
//!
//! The importer at each activation time t, in Event Mode: `fmi3SetClock`
//! on the Clocks due at t, reads their clocked outputs,
//! `fmi3UpdateDiscreteStates`, then reads `fmi3GetIntervalDecimal` of
//! `burst` (if it ticked) and `delayed` (always), and activates `delayed`
//! again in the same Event Mode if its interval is 0. The FMU refuses an
//! activation off these times, or before the importer read the interval
//! that announced it. The steps only advance time (no state events, no
//! early return).
//!
//! By default up to t = 1: sample at 0.1, 0.35, 0.6, 0.85 (sample_n 1..4);
//! burst at 0.1, 0.3, 0.6, 1.0 (burst_n 1..4, burst_t the time);
//! delayed at 0.15, 0.35, 0.65 (delayed_n 1..3).
//!
//! Reference: [`crate::reference::aperiodic_clocks`] (the activation
//! times from period, offset and delay).

use fmu_kit::{
    DependencyKind, EventModel, EventStep, EventUpdate, Initial, Inputs, IntervalVariability,
    LogLevel, Model, ModelSpec, PeriodicTiming, StepError, Values, VarType, Variable, Vr,
};

/// Input Clock (fixed, interval `period`, shift `offset`).
pub const SAMPLE: Vr = 1;
/// Input Clock (changing): intervals 0.1, 0.2, 0.3, ...
pub const BURST: Vr = 2;
/// Input Clock (countdown): armed with `delay` by each activation of burst.
pub const DELAYED: Vr = 3;
/// Fixed parameter: the interval of sample (s).
pub const PERIOD: Vr = 4;
/// Fixed parameter: the shift of sample (s).
pub const OFFSET: Vr = 5;
/// Fixed parameter: the countdown of delayed (s), 0 <= delay < 0.2.
pub const DELAY: Vr = 6;
/// Clocked output (by sample, Int32): its activations so far.
pub const SAMPLE_N: Vr = 7;
/// Clocked output (by burst, Int32): its activations so far.
pub const BURST_N: Vr = 8;
/// Clocked output (by burst): the time of its last activation.
pub const BURST_T: Vr = 9;
/// Clocked output (by delayed, Int32): its activations so far.
pub const DELAYED_N: Vr = 10;
/// Clocked output (by delayed): the time of its last activation.
pub const DELAYED_T: Vr = 11;
/// Clocked local (by sample, Int32): the activations committed.
pub const SAMPLE_COUNT: Vr = 12;
/// Clocked local (by burst, Int32): the activations committed.
pub const BURST_COUNT: Vr = 13;
/// Clocked local (by delayed, Int32): the activations committed.
pub const DELAYED_COUNT: Vr = 14;

/// The step of burst's intervals: T_i = BURST_STEP (i + 1).
pub const BURST_STEP: f64 = 0.1;
/// The bound of `delay` (exclusive): burst's shortest interval after an
/// arming, T_1.
pub const DELAY_BOUND: f64 = 2.0 * BURST_STEP;

/// The three partitions: (Clock, count output, committed count).
const PARTITIONS: [(Vr, Vr, Vr); 3] = [
    (SAMPLE, SAMPLE_N, SAMPLE_COUNT),
    (BURST, BURST_N, BURST_COUNT),
    (DELAYED, DELAYED_N, DELAYED_COUNT),
];

/// The spec.
pub fn spec() -> ModelSpec {
    let mut s = ModelSpec::new(
        "AperiodicClocks",
        "Time-based Clocks timed by the FMU (FMI 3): sample (fixed, interval period, shift offset), burst (changing: 0.1, 0.2, 0.3, ...), delayed (countdown: delay after each burst)",
        build,
    )
    .var(Variable::input_clock(
        SAMPLE,
        "sample",
        IntervalVariability::Fixed,
        "Fixed periodic Clock: interval period, shift offset (fmi3GetIntervalDecimal / fmi3GetShiftDecimal)",
    ))
    .var(Variable::input_clock(
        BURST,
        "burst",
        IntervalVariability::Changing,
        "Changing Clock: T_0 = 0.1, T_i = 0.1 (i + 1) after its i-th activation",
    ))
    .var(Variable::input_clock(
        DELAYED,
        "delayed",
        IntervalVariability::Countdown,
        "Countdown Clock: armed with delay by each activation of burst",
    ))
    .var(Variable::parameter(PERIOD, "period", 0.25, "Interval of sample").unit(fmu_kit::units::S))
    .var(Variable::parameter(OFFSET, "offset", 0.1, "Shift of sample").unit(fmu_kit::units::S))
    .var(
        Variable::parameter(DELAY, "delay", 0.05, "Countdown of delayed after each burst (0 <= delay < 0.2)")
            .unit(fmu_kit::units::S),
    );
    s = clocked_outputs(s);
    for (clock, _, count) in PARTITIONS {
        let name = match clock {
            SAMPLE => "sample_count",
            BURST => "burst_count",
            _ => "delayed_count",
        };
        s = s.var(
            Variable::local(count, name, "Clocked state: the activations committed")
                .typed(VarType::Integer)
                .clocked_by(&[clock])
                .initial(Initial::Exact)
                .start(0.0),
        );
    }
    s.experiment(0.0, 2.0, 0.05)
        .interpolate_inputs(false)
        .directional_derivatives(false)
        .event_mode()
}

/// The clocked outputs of the spec.
fn clocked_outputs(s: ModelSpec) -> ModelSpec {
    let dep = |c: Vr| [(c, DependencyKind::Dependent)];
    s.var(
        Variable::int_output(SAMPLE_N, "sample_n", "Activations of sample so far")
            .clocked_by(&[SAMPLE])
            .depends_on(&dep(SAMPLE)),
    )
    .var(
        Variable::int_output(BURST_N, "burst_n", "Activations of burst so far")
            .clocked_by(&[BURST])
            .depends_on(&dep(BURST)),
    )
    .var(
        Variable::output(BURST_T, "burst_t", "Time of the last activation of burst")
            .discrete()
            .unit(fmu_kit::units::S)
            .clocked_by(&[BURST])
            .depends_on(&dep(BURST)),
    )
    .var(
        Variable::int_output(DELAYED_N, "delayed_n", "Activations of delayed so far")
            .clocked_by(&[DELAYED])
            .depends_on(&dep(DELAYED)),
    )
    .var(
        Variable::output(
            DELAYED_T,
            "delayed_t",
            "Time of the last activation of delayed",
        )
        .discrete()
        .unit(fmu_kit::units::S)
        .clocked_by(&[DELAYED])
        .depends_on(&dep(DELAYED)),
    )
}

struct AperiodicClocks {
    period: f64,
    offset: f64,
    delay: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    let delay = v.non_negative("delay", DELAY)?;
    if delay >= DELAY_BOUND {
        return Err(format!(
            "delay must be < {DELAY_BOUND} (burst's shortest interval after an arming), got {delay}"
        ));
    }
    Ok(Box::new(AperiodicClocks {
        period: v.positive("period", PERIOD)?,
        offset: v.non_negative("offset", OFFSET)?,
        delay,
    }))
}

impl Model for AperiodicClocks {
    fn init(&mut self, v: &mut Values) {
        for (_, n, _) in PARTITIONS {
            v[n] = 0.0;
        }
        v[BURST_T] = 0.0;
        v[DELAYED_T] = 0.0;
    }

    /// The output equations of the active partitions.
    fn outputs(&self, t: f64, v: &mut Values, _u: &Inputs) {
        for (clock, n, count) in PARTITIONS {
            if v.bool(clock) {
                v[n] = v[count] + 1.0;
            }
        }
        for (clock, at) in [(BURST, BURST_T), (DELAYED, DELAYED_T)] {
            if v.bool(clock) {
                v[at] = t;
            }
        }
    }

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for AperiodicClocks {
    /// No events of its own: the importer schedules the Clocks.
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

    /// The state updates of the active partitions.
    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        self.outputs(t, v, u);
        for (clock, _, count) in PARTITIONS {
            if v.bool(clock) {
                v[count] += 1.0;
            }
        }
        EventUpdate::default()
    }

    fn periodic_clock(&self, clock: Vr, _v: &Values) -> Option<PeriodicTiming> {
        (clock == SAMPLE).then_some(PeriodicTiming {
            interval: self.period,
            shift: self.offset,
        })
    }

    /// T_i = 0.1 (i + 1), i the activations of burst committed.
    fn changing_interval(&self, clock: Vr, _t: f64, v: &Values) -> Option<f64> {
        (clock == BURST).then(|| BURST_STEP * (v[BURST_COUNT] + 1.0))
    }

    /// Every activation of burst arms delayed with `delay`.
    fn countdown_interval(&self, clock: Vr, _t: f64, v: &Values) -> Option<f64> {
        (clock == DELAYED && v.bool(BURST)).then_some(self.delay)
    }
}
