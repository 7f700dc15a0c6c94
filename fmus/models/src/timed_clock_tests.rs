//! The models with Clocks whose timing the FMU decides: `AperiodicClocks`
//! (Co-Simulation with event mode: a fixed Clock without
//! intervalDecimal, a changing and a countdown Clock) driven as an
//! importer that schedules them from `fmi3GetIntervalDecimal`, and
//! `CountdownPartitions` (Scheduled Execution with Clock Update Mode)
//! through the instance API and the C exports, against the references of
//! [`crate::reference`].

use fmu_kit::instance::{INTERVAL_CHANGED, INTERVAL_NOT_YET_KNOWN, INTERVAL_UNCHANGED, Mode};
use fmu_kit::testing::{activate_partition, get, get_int, instance, set, set_int};
use fmu_kit::{Capabilities, FmiVersion, Instance, Status, Vr};

use crate::reference::{
    CountdownPartition, CountdownValues, aperiodic_clocks, countdown_partitions,
    countdown_partitions_schedule,
};
use crate::{aperiodic_clocks as ac, countdown_partitions as cp, spec};

fn ok<T>(r: Result<T, fmu_kit::instance::Fail>) -> T {
    r.unwrap_or_else(|e| panic!("{}", e.message))
}

fn refused<T: std::fmt::Debug>(r: Result<T, fmu_kit::instance::Fail>, needle: &str) {
    match r {
        Ok(x) => panic!("accepted ({x:?}), expected a refusal with {needle:?}"),
        Err(e) => assert!(e.message.contains(needle), "{}", e.message),
    }
}

/// `fmi3GetIntervalDecimal` of one Clock: (interval, qualifier).
fn interval(inst: &mut Instance, vr: Vr) -> (f64, i32) {
    let (mut x, mut q) = ([f64::NAN], [-1]);
    ok(inst.get_intervals(&[vr], &mut x, &mut q));
    (x[0], q[0])
}

// ------------------------------------------------------ AperiodicClocks

/// An FMI 3 `AperiodicClocks` instance with `eventModeUsed`, in
/// Initialization Mode (start 0, stop 10), with `params` set.
fn aperiodic_in_init(params: &[(Vr, f64)]) -> Instance {
    let s = spec("AperiodicClocks").unwrap_or_else(|| panic!("AperiodicClocks"));
    let (mut inst, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    ok(inst.set_event_mode_used(true));
    ok(inst.setup_experiment(0.0, Some(10.0)));
    ok(inst.enter_initialization());
    for &(vr, x) in params {
        ok(set(&mut inst, &[vr], &[x]));
    }
    inst
}

fn update(inst: &mut Instance) {
    assert!(!ok(inst.update_discrete_states()).discrete_states_need_update);
}

/// One activation seen by the importer: the Clock, the time, the
/// clocked count and (burst, delayed) the clocked time.
type Seen = (Vr, f64, i32, f64);

/// An importer's schedule of `AperiodicClocks`: the next activation of
/// each Clock as `fmi3GetIntervalDecimal` / `fmi3GetShiftDecimal` told.
struct Schedule {
    sample: f64,
    period: f64,
    burst: f64,
    delayed: Option<f64>,
}

impl Schedule {
    /// What Initialization Mode tells: sample's interval and shift,
    /// burst's T_0, delayed not armed.
    fn read(inst: &mut Instance) -> Schedule {
        let (period, q) = interval(inst, ac::SAMPLE);
        assert_eq!(q, INTERVAL_CHANGED);
        let mut shift = [f64::NAN];
        ok(inst.get_shifts(&[ac::SAMPLE], &mut shift));
        let (t0, q) = interval(inst, ac::BURST);
        assert_eq!((t0, q), (0.1, INTERVAL_CHANGED));
        assert_eq!(interval(inst, ac::DELAYED).1, INTERVAL_NOT_YET_KNOWN);
        Schedule {
            sample: shift[0],
            period,
            burst: t0,
            delayed: None,
        }
    }

    /// The earliest next activation.
    fn next(&self) -> f64 {
        self.sample
            .min(self.burst)
            .min(self.delayed.unwrap_or(f64::INFINITY))
    }

    /// The Clocks due at `t`.
    fn due(&self, t: f64) -> Vec<Vr> {
        let at = |x: f64| (x - t).abs() < 1e-9;
        [
            (ac::SAMPLE, self.sample),
            (ac::BURST, self.burst),
            (ac::DELAYED, self.delayed.unwrap_or(f64::NAN)),
        ]
        .into_iter()
        .filter(|&(_, x)| at(x))
        .map(|(c, _)| c)
        .collect()
    }
}

/// One super-dense instant at `t`: the `due` Clocks activated, their
/// clocked outputs read (`seen`), the update, then the intervals read and
/// the schedule moved on.
fn activate_due(inst: &mut Instance, s: &mut Schedule, due: &[Vr], seen: &mut Vec<Seen>) {
    let t = inst.time();
    ok(inst.set_clocks(due, &vec![true; due.len()]));
    for &c in due {
        let (n, at) = match c {
            ac::SAMPLE => (ac::SAMPLE_N, None),
            ac::BURST => (ac::BURST_N, Some(ac::BURST_T)),
            _ => (ac::DELAYED_N, Some(ac::DELAYED_T)),
        };
        let at = at.map_or(f64::NAN, |vr| ok(get(inst, &[vr]))[0]);
        seen.push((c, t, ok(get_int(inst, n)) as i32, at));
    }
    update(inst);
    if due.contains(&ac::SAMPLE) {
        s.sample += s.period;
    }
    if due.contains(&ac::BURST) {
        let (x, q) = interval(inst, ac::BURST);
        assert_eq!(q, INTERVAL_CHANGED, "burst's next interval, once");
        assert_eq!(interval(inst, ac::BURST), (x, INTERVAL_UNCHANGED));
        s.burst += x;
    }
    s.delayed = match interval(inst, ac::DELAYED) {
        (x, INTERVAL_CHANGED) => Some(t + x),
        (_, INTERVAL_UNCHANGED) => s.delayed,
        _ => None,
    };
}

/// `AperiodicClocks` with `params` up to `t_end`, steps of at most `h`
/// (ending at each activation): the activations seen.
fn run_aperiodic(params: &[(Vr, f64)], h: f64, t_end: f64) -> Vec<Seen> {
    let mut inst = aperiodic_in_init(params);
    let mut s = Schedule::read(&mut inst);
    ok(inst.exit_initialization());
    update(&mut inst);
    ok(inst.enter_step_mode());
    let mut seen = Vec::new();
    while s.next() <= t_end + 1e-9 {
        let target = s.next();
        while inst.time() < target - 1e-9 {
            let t = inst.time();
            assert_eq!(ok(inst.step(t, h.min(target - t), true, None)), Status::Ok);
            assert!(!inst.event_handling_needed() && !inst.early_return());
        }
        ok(inst.enter_event_mode());
        // Again while a Clock is due now (delayed armed with 0).
        loop {
            let due = s.due(inst.time());
            if due.is_empty() {
                break;
            }
            activate_due(&mut inst, &mut s, &due, &mut seen);
        }
        ok(inst.enter_step_mode());
    }
    seen
}

/// The activations of one Clock: (time, n, clocked time).
fn of(seen: &[Seen], clock: Vr) -> Vec<(f64, i32, f64)> {
    seen.iter()
        .filter(|x| x.0 == clock)
        .map(|x| (x.1, x.2, x.3))
        .collect()
}

/// The activations of `clock` are at `times`, counted 1, 2, ..., with
/// the clocked time (if any) the activation time.
fn check_times(seen: &[Seen], clock: Vr, times: &[f64]) {
    let got = of(seen, clock);
    assert_eq!(got.len(), times.len(), "{clock}: {got:?} vs {times:?}");
    for (k, ((t, n, at), r)) in got.iter().zip(times).enumerate() {
        assert!((t - r).abs() < 1e-9, "{clock}: {got:?} vs {times:?}");
        assert_eq!(*n as usize, k + 1);
        assert!(at.is_nan() || at == t, "{at} at {t}");
    }
}

#[test]
fn aperiodic_clocks_tick_where_their_intervals_say() {
    for (params, h, t_end) in [
        (vec![], 0.05, 2.0),
        (
            vec![(ac::PERIOD, 0.3), (ac::OFFSET, 0.0), (ac::DELAY, 0.0)],
            0.1,
            3.0,
        ),
        (vec![(ac::DELAY, 0.15)], 0.2, 3.5),
    ] {
        let value =
            |vr: Vr, default: f64| params.iter().find(|p| p.0 == vr).map_or(default, |p| p.1);
        let seen = run_aperiodic(&params, h, t_end);
        let r = aperiodic_clocks(
            value(ac::PERIOD, 0.25),
            value(ac::OFFSET, 0.1),
            value(ac::DELAY, 0.05),
            t_end,
        );
        check_times(&seen, ac::SAMPLE, &r.sample);
        check_times(&seen, ac::BURST, &r.burst);
        check_times(&seen, ac::DELAYED, &r.delayed);
    }
    // By hand, the defaults up to t = 1 (the module docs).
    let r = aperiodic_clocks(0.25, 0.1, 0.05, 1.0);
    let round = |v: &[f64]| -> Vec<f64> { v.iter().map(|x| (x * 100.0).round() / 100.0).collect() };
    assert_eq!(round(&r.sample), [0.1, 0.35, 0.6, 0.85]);
    assert_eq!(round(&r.burst), [0.1, 0.3, 0.6, 1.0]);
    assert_eq!(round(&r.delayed), [0.15, 0.35, 0.65]);
}

#[test]
fn aperiodic_clocks_delay_zero_ticks_in_the_burst_event_mode() {
    let seen = run_aperiodic(&[(ac::DELAY, 0.0)], 0.05, 0.7);
    // At 0.1, 0.3, 0.6: burst, then delayed in the same Event Mode.
    let order: Vec<(Vr, f64)> = seen
        .iter()
        .filter(|x| x.0 != ac::SAMPLE)
        .map(|x| (x.0, (x.1 * 100.0).round() / 100.0))
        .collect();
    assert_eq!(
        order,
        [
            (ac::BURST, 0.1),
            (ac::DELAYED, 0.1),
            (ac::BURST, 0.3),
            (ac::DELAYED, 0.3),
            (ac::BURST, 0.6),
            (ac::DELAYED, 0.6)
        ]
    );
}

#[test]
fn aperiodic_clocks_rules() {
    let mut inst = aperiodic_in_init(&[]);
    // The FMU gives sample's interval and shift; the importer sets none.
    refused(
        inst.set_intervals(&[ac::SAMPLE], &[0.5]),
        "is fixed without intervalDecimal",
    );
    refused(
        inst.set_shifts(&[ac::SAMPLE], &[0.0]),
        "the importer never sets them",
    );
    refused(
        inst.get_shifts(&[ac::BURST], &mut [0.0]),
        "is changing: only periodic Clocks",
    );
    // A period set in Initialization Mode is the one read.
    ok(set(&mut inst, &[ac::PERIOD], &[0.5]));
    assert_eq!(interval(&mut inst, ac::SAMPLE), (0.5, INTERVAL_CHANGED));
    assert_eq!(interval(&mut inst, ac::SAMPLE), (0.5, INTERVAL_UNCHANGED));
    // Clocked outputs: 0 in Initialization Mode.
    assert_eq!(ok(get_int(&mut inst, ac::BURST_N)), 0);
    ok(inst.exit_initialization());
    // burst's T_0 not read: no activation, even at its time.
    update(&mut inst);
    ok(inst.enter_step_mode());
    assert_eq!(ok(inst.step(0.0, 0.1, true, None)), Status::Ok);
    ok(inst.enter_event_mode());
    refused(
        inst.set_clocks(&[ac::BURST], &[true]),
        "has an interval the importer did not read",
    );
    assert_eq!(interval(&mut inst, ac::BURST), (0.1, INTERVAL_CHANGED));
    refused(
        inst.set_clocks(&[ac::DELAYED], &[true]),
        "is not armed (fmi3GetIntervalDecimal answers fmi3IntervalNotYetKnown)",
    );
    refused(get_int(&mut inst, ac::BURST_N), "with its Clocks inactive");
    // The fixed Clock: unchanged once initialized; 0.1 is its tick.
    assert_eq!(interval(&mut inst, ac::SAMPLE), (0.5, INTERVAL_UNCHANGED));
    ok(inst.set_clocks(&[ac::SAMPLE, ac::BURST], &[true, true]));
    assert_eq!(ok(get_int(&mut inst, ac::SAMPLE_N)), 1);
    assert_eq!(ok(get_int(&mut inst, ac::BURST_N)), 1);
    assert!((ok(get(&mut inst, &[ac::BURST_T]))[0] - 0.1).abs() < 1e-12);
    update(&mut inst);
    assert_eq!(interval(&mut inst, ac::DELAYED), (0.05, INTERVAL_CHANGED));
    refused(
        inst.set_clocks(&[ac::DELAYED], &[true]),
        "ticks next at t = 0.15",
    );
    ok(inst.enter_step_mode());
    // delay >= 0.2 is refused (an arming could be replaced before it
    // ticks).
    let mut bad = aperiodic_in_init(&[(ac::DELAY, 0.2)]);
    refused(bad.exit_initialization(), "delay must be < 0.2");
}

// ------------------------------------------------------ CountdownPartitions

/// A Scheduled Execution instance of `CountdownPartitions` in Clock
/// Activation Mode (start 0).
fn countdown_started() -> Instance {
    let s = spec("CountdownPartitions").unwrap_or_else(|| panic!("CountdownPartitions"));
    let (mut inst, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    ok(inst.set_scheduled_execution(fmu_kit::instance::Preemption::default()));
    ok(inst.setup_experiment(0.0, Some(10.0)));
    ok(inst.enter_initialization());
    assert_eq!(ok(get_int(&mut inst, cp::TOTAL_IN_CLOCK_TICKS)), 0);
    assert_eq!(
        interval(&mut inst, cp::IN_CLOCK3),
        (0.0, INTERVAL_NOT_YET_KNOWN)
    );
    ok(inst.exit_initialization());
    assert_eq!(inst.mode(), Mode::ClockActivation);
    inst
}

fn clock_of(p: CountdownPartition) -> Vr {
    match p {
        CountdownPartition::InClock1 => cp::IN_CLOCK1,
        CountdownPartition::InClock2 => cp::IN_CLOCK2,
        CountdownPartition::InClock3 => cp::IN_CLOCK3,
    }
}

/// What the importer's `clockUpdate` saw: (outClock, inClock3's interval
/// and qualifier).
type Update = (bool, (f64, i32));

/// One activation as the Reference FMUs' example makes it: input2 set
/// before (if given), the activation, in Clock Update Mode outClock and
/// inClock3's interval read. Returns what the callback saw, if it was
/// called.
fn countdown_activation(
    inst: &mut Instance,
    t: f64,
    p: CountdownPartition,
    input2: Option<i32>,
) -> Option<Update> {
    if let Some(x) = input2 {
        ok(set_int(inst, cp::INPUT2, x));
    }
    let mut saw = None;
    let entered = ok(activate_partition(inst, clock_of(p), t, |inst| {
        let mut out = [false];
        ok(inst.get_clocks(&[cp::OUT_CLOCK], &mut out));
        let mut again = [true];
        ok(inst.get_clocks(&[cp::OUT_CLOCK], &mut again));
        assert!(!again[0], "true once per tick");
        saw = Some((out[0], interval(inst, cp::IN_CLOCK3)));
    }));
    assert_eq!(entered, saw.is_some());
    saw
}

/// The values readable after an activation of `p` (the others as in
/// `prev`): unclocked ones always, clocked ones after their Clock ran.
fn read_values(inst: &mut Instance, prev: &CountdownValues, ran: &[bool; 3]) -> CountdownValues {
    let mut read = |vr: Vr, ok_to_read: bool, old: i32| {
        if ok_to_read {
            ok(get_int(inst, vr)) as i32
        } else {
            refused(get_int(inst, vr), "can be read only after");
            old
        }
    };
    CountdownValues {
        in_clock1_ticks: read(cp::IN_CLOCK1_TICKS, ran[0], prev.in_clock1_ticks),
        in_clock2_ticks: read(cp::IN_CLOCK2_TICKS, ran[1], prev.in_clock2_ticks),
        in_clock3_ticks: read(cp::IN_CLOCK3_TICKS, true, prev.in_clock3_ticks),
        total: read(cp::TOTAL_IN_CLOCK_TICKS, true, prev.total),
        result2: read(cp::RESULT2, ran[1], prev.result2),
        output3: read(cp::OUTPUT3, ran[2], prev.output3),
        out_clock: false,
        armed: false,
    }
}

/// Runs the Reference FMUs' example (inClock3 where the callback says it
/// is armed, at once: interval 0), with `input2(t)` set before each
/// activation of inClock2: the values after each activation, with the
/// outClock ticks and armings the callbacks saw.
fn run_countdown(
    input2: impl Fn(f64) -> Option<i32>,
) -> Vec<(f64, CountdownPartition, Option<i32>, CountdownValues)> {
    let mut inst = countdown_started();
    let mut out = Vec::new();
    let mut prev = CountdownValues::default();
    let mut ran = [false; 3];
    for (t, p) in countdown_partitions_schedule(10)
        .into_iter()
        .filter(|x| x.1 != CountdownPartition::InClock3)
    {
        let mut queue = vec![p];
        while let Some(p) = queue.pop() {
            let set = (p == CountdownPartition::InClock2)
                .then(|| input2(t))
                .flatten();
            let saw = countdown_activation(&mut inst, t, p, set);
            ran[clock_of(p) as usize - 1] = true;
            let mut v = read_values(&mut inst, &prev, &ran);
            if let Some((tick, (x, q))) = saw {
                v.out_clock = tick;
                v.armed = q == INTERVAL_CHANGED;
                if v.armed {
                    assert_eq!(x, cp::COUNTDOWN);
                    queue.push(CountdownPartition::InClock3);
                }
            }
            prev = v;
            out.push((t, p, set, v));
        }
    }
    out
}

#[test]
fn countdown_partitions_follow_the_reference_example() {
    let got = run_countdown(|_| None);
    let activations: Vec<(f64, CountdownPartition, Option<i32>)> =
        got.iter().map(|x| (x.0, x.1, x.2)).collect();
    // The schedule the callbacks made is the example's.
    let schedule: Vec<(f64, CountdownPartition)> = got.iter().map(|x| (x.0, x.1)).collect();
    assert_eq!(schedule, countdown_partitions_schedule(10));
    let values: Vec<CountdownValues> = got.iter().map(|x| x.3).collect();
    assert_eq!(values, countdown_partitions(&activations));
    // The table of the module docs: after the activations at each t.
    let at = |t: f64| {
        got.iter()
            .rfind(|x| x.0 == t)
            .map(|x| {
                let v = x.3;
                (
                    v.in_clock1_ticks,
                    v.in_clock2_ticks,
                    v.in_clock3_ticks,
                    v.total,
                )
            })
            .unwrap_or_default()
    };
    let table: Vec<(i32, i32, i32, i32)> = (0..10).map(|t| at(f64::from(t))).collect();
    assert_eq!(
        table,
        [
            (1, 1, 0, 2),
            (2, 2, 0, 4),
            (3, 2, 0, 5),
            (4, 2, 0, 6),
            (5, 2, 1, 8),
            (6, 2, 1, 9),
            (7, 2, 1, 10),
            (8, 2, 1, 11),
            (9, 3, 1, 13),
            (10, 4, 1, 15)
        ]
    );
    let ticks: Vec<(f64, CountdownPartition)> = got
        .iter()
        .filter(|x| x.3.out_clock)
        .map(|x| (x.0, x.1))
        .collect();
    assert_eq!(
        ticks,
        [
            (2.0, CountdownPartition::InClock1),
            (6.0, CountdownPartition::InClock1),
            (9.0, CountdownPartition::InClock2)
        ]
    );
    assert!(got.iter().all(|x| x.3.result2 == 0));
    assert_eq!(got.last().map(|x| x.3.output3), Some(1000));
}

#[test]
fn countdown_partitions_consume_input2() {
    let got = run_countdown(|t| Some(10 * t as i32 + 1));
    let activations: Vec<(f64, CountdownPartition, Option<i32>)> =
        got.iter().map(|x| (x.0, x.1, x.2)).collect();
    let values: Vec<CountdownValues> = got.iter().map(|x| x.3).collect();
    assert_eq!(values, countdown_partitions(&activations));
    let result2: Vec<i32> = got
        .iter()
        .filter(|x| x.1 == CountdownPartition::InClock2)
        .map(|x| x.3.result2)
        .collect();
    assert_eq!(result2, [1, 12, 93, 184]);
}

#[test]
fn countdown_partitions_refusals() {
    let mut inst = countdown_started();
    // Output Clocks are read in Clock Update Mode only.
    refused(
        inst.get_clocks(&[cp::OUT_CLOCK], &mut [false]),
        "Clock Update Mode only",
    );
    // inClock3 is not armed.
    refused(inst.activate_partition(cp::IN_CLOCK3, 0.0), "is not armed");
    for k in 0..4 {
        countdown_activation(&mut inst, f64::from(k), CountdownPartition::InClock1, None);
    }
    // t = 4: total 5 and inClock3 armed: Clock Update Mode until the
    // importer's callback returned, only the Clock functions there.
    assert!(ok(inst.activate_partition(cp::IN_CLOCK1, 4.0)));
    assert_eq!(inst.mode(), Mode::ClockUpdate);
    refused(
        get_int(&mut inst, cp::TOTAL_IN_CLOCK_TICKS),
        "not in state Clock Update Mode",
    );
    refused(
        inst.activate_partition(cp::IN_CLOCK3, 4.0),
        "called in state Clock Update Mode",
    );
    let mut out = [false];
    ok(inst.get_clocks(&[cp::OUT_CLOCK], &mut out));
    assert!(out[0], "total 5");
    ok(inst.exit_clock_update());
    refused(inst.exit_clock_update(), "Clock Update Mode ends");
    // The callback did not read inClock3's interval.
    refused(
        inst.activate_partition(cp::IN_CLOCK3, 4.0),
        "was armed, and the importer did not read its interval",
    );
    // Read in Clock Activation Mode: then it ticks at once.
    assert_eq!(interval(&mut inst, cp::IN_CLOCK3), (0.0, INTERVAL_CHANGED));
    refused(
        inst.activate_partition(cp::IN_CLOCK3, 4.5),
        "ticks next at t = 4",
    );
    assert!(!ok(inst.activate_partition(cp::IN_CLOCK3, 4.0)));
    assert_eq!(ok(get_int(&mut inst, cp::OUTPUT3)), 1000);
    refused(inst.activate_partition(cp::IN_CLOCK3, 4.0), "is not armed");
    // Triggered: once per time instant.
    assert!(!ok(inst.activate_partition(cp::IN_CLOCK2, 4.0)));
    refused(
        inst.activate_partition(cp::IN_CLOCK2, 4.0),
        "is not after its last activation at 4",
    );
    assert_eq!(ok(get_int(&mut inst, cp::TOTAL_IN_CLOCK_TICKS)), 7);
    refused(inst.do_step(4.0, 1.0), "no steps");
}

#[test]
fn countdown_partitions_model_description() {
    let s = spec("CountdownPartitions").unwrap_or_else(|| panic!("CountdownPartitions"));
    assert!(s.scheduled_execution_only && !s.has_co_simulation() && s.needs_clock_update());
    assert!(!s.supports(FmiVersion::Fmi2));
    let x3 = fmu_kit::xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "CountdownPartitions",
    );
    for needle in [
        "<ScheduledExecution modelIdentifier=\"CountdownPartitions\"",
        "intervalVariability=\"constant\" priority=\"0\" intervalDecimal=\"1.0\" shiftDecimal=\"0.0\"/>",
        "<Clock name=\"inClock2\" valueReference=\"2\"",
        "intervalVariability=\"triggered\" priority=\"1\"/>",
        "<Clock name=\"inClock3\" valueReference=\"3\"",
        "intervalVariability=\"countdown\" priority=\"2\"/>",
        "<Clock name=\"outClock\" valueReference=\"4\"",
        "causality=\"output\" variability=\"discrete\" intervalVariability=\"triggered\"/>",
        "<Output valueReference=\"4\" dependencies=\"1 2 3\"",
        "<Int32 name=\"totalInClockTicks\" valueReference=\"8\"",
        "clocks=\"1 2 3\"",
        "<Int32 name=\"input2\" valueReference=\"10\"",
        "causality=\"input\" variability=\"discrete\" start=\"0\"/>",
    ] {
        assert!(x3.contains(needle), "{needle} in {x3}");
    }
    assert!(!x3.contains("<CoSimulation"), "{x3}");
    let a = spec("AperiodicClocks").unwrap_or_else(|| panic!("AperiodicClocks"));
    let xa = fmu_kit::xml::model_description(
        a,
        FmiVersion::Fmi3,
        &Capabilities::full(a, FmiVersion::Fmi3),
        "AperiodicClocks",
    );
    for needle in [
        "intervalVariability=\"fixed\"/>",
        "intervalVariability=\"changing\"/>",
        "intervalVariability=\"countdown\"/>",
        "hasEventMode=\"true\"",
    ] {
        assert!(xa.contains(needle), "{needle} in {xa}");
    }
    assert!(!xa.contains("intervalDecimal"), "{xa}");
}

/// `CountdownPartitions` through the library's C exports (`crate::ffi`),
/// with an importer's `clockUpdate` that calls back into the FMU: the
/// one place of these tests with `unsafe` (FMI calls, as an importer
/// makes them).
#[allow(unsafe_code)]
mod c_api {
    use super::*;
    use std::ffi::c_void;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// The importer's environment: the instance and what its callback saw
    /// (with the statuses of its two calls).
    struct Env {
        instance: AtomicPtr<c_void>,
        seen: Mutex<Vec<(Update, [i32; 2])>>,
    }

    extern "C" fn log(
        _env: *mut c_void,
        _status: std::ffi::c_int,
        _category: *const std::ffi::c_char,
        _msg: *const std::ffi::c_char,
    ) {
    }

    /// `fmi3ClockUpdateCallback`: reads outClock and inClock3's interval.
    extern "C" fn clock_update(env: *mut c_void) {
        // SAFETY: `env` is the test's `Env`, which outlives the instance.
        let env = unsafe { &*(env as *const Env) };
        let i = env.instance.load(Ordering::SeqCst);
        let (mut out, mut x, mut q) = (false, f64::NAN, -1);
        // SAFETY: a live instance (inside its fmi3ActivateModelPartition),
        // one value each.
        let st = unsafe {
            [
                crate::ffi::fmi3GetClock(i, &cp::OUT_CLOCK, 1, &mut out),
                crate::ffi::fmi3GetIntervalDecimal(i, &cp::IN_CLOCK3, 1, &mut x, &mut q),
            ]
        };
        if let Ok(mut s) = env.seen.lock() {
            s.push(((out, (x, q)), st));
        }
    }

    fn instantiate(env: &Env, callback: Option<extern "C" fn(*mut c_void)>) -> *mut c_void {
        let s = spec("CountdownPartitions").unwrap_or_else(|| panic!("CountdownPartitions"));
        let token = std::ffi::CString::new(fmu_kit::caps::token(
            s,
            FmiVersion::Fmi3,
            &Capabilities::full(s, FmiVersion::Fmi3),
        ))
        .unwrap_or_default();
        let callback = callback.map_or(std::ptr::null_mut(), |f| f as *mut c_void);
        // SAFETY: valid strings, a valid logger and callback; `env`
        // outlives the instance.
        unsafe {
            crate::ffi::fmi3InstantiateScheduledExecution(
                c"countdown-partitions".as_ptr(),
                token.as_ptr(),
                std::ptr::null(),
                false,
                true,
                std::ptr::from_ref(env).cast_mut().cast(),
                Some(log),
                callback,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        }
    }

    #[test]
    fn countdown_partitions_through_the_c_functions() {
        let env = Env {
            instance: AtomicPtr::new(std::ptr::null_mut()),
            seen: Mutex::new(Vec::new()),
        };
        assert!(instantiate(&env, None).is_null(), "clockUpdate is needed");
        let i = instantiate(&env, Some(clock_update));
        assert!(!i.is_null());
        env.instance.store(i, Ordering::SeqCst);
        let take = || {
            env.seen
                .lock()
                .map(|mut s| std::mem::take(&mut *s))
                .unwrap_or_default()
        };
        // SAFETY: a live instance, valid pointers; freed once.
        unsafe {
            use crate::ffi::*;
            assert_eq!(
                fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
                0
            );
            assert_eq!(fmi3ExitInitializationMode(i), 0);
            let mut armed = Vec::new();
            for (t, p) in countdown_partitions_schedule(10)
                .into_iter()
                .filter(|x| x.1 != CountdownPartition::InClock3)
            {
                assert_eq!(fmi3ActivateModelPartition(i, clock_of(p), t), 0);
                for ((_, (x, q)), st) in take() {
                    assert_eq!(st, [0, 0]);
                    if q == INTERVAL_CHANGED {
                        armed.push(t + x);
                        assert_eq!(fmi3ActivateModelPartition(i, cp::IN_CLOCK3, t + x), 0);
                    }
                }
            }
            assert_eq!(armed, [4.0]);
            let vrs = [
                cp::IN_CLOCK1_TICKS,
                cp::IN_CLOCK2_TICKS,
                cp::IN_CLOCK3_TICKS,
                cp::TOTAL_IN_CLOCK_TICKS,
                cp::RESULT2,
                cp::OUTPUT3,
            ];
            let mut v = [-1i32; 6];
            assert_eq!(fmi3GetInt32(i, vrs.as_ptr(), 6, v.as_mut_ptr(), 6), 0);
            assert_eq!(v, [10, 4, 1, 15, 0, 1000]);
            // Outside Clock Update Mode: refused.
            let mut out = false;
            assert_eq!(fmi3GetClock(i, &cp::OUT_CLOCK, 1, &mut out), 3);
            fmi3FreeInstance(i);
        }
    }
}
