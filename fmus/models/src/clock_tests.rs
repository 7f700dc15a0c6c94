//! The models with FMI 3 Clocks (`ClockedController`, `ThresholdTrigger`,
//! `ClockedCounter`, `Partitions`) through the kit's instance API: the
//! call sequence at each tick (Event Mode at t_k, `fmi3SetClock`, clocked
//! inputs set, clocked outputs read, `fmi3UpdateDiscreteStates`,
//! `fmi3EnterStepMode`), or in Scheduled Execution the partitions'
//! activations (`fmi3ActivateModelPartition`), against the hand-computed
//! references of [`crate::reference`].

use fmu_kit::testing::{get, get_int, instance, set};
use fmu_kit::{Capabilities, FmiVersion, Instance, Status, Vr};

use crate::reference::{
    Partition, clocked_controller, clocked_counter, partitions, partitions_schedule,
    threshold_ticks,
};
use crate::{
    clocked_controller as cc, clocked_counter as ck, partitions as pt, spec,
    threshold_trigger as tt,
};

fn ok<T>(r: Result<T, fmu_kit::instance::Fail>) -> T {
    r.unwrap_or_else(|e| panic!("{}", e.message))
}

fn refused<T: std::fmt::Debug>(r: Result<T, fmu_kit::instance::Fail>, needle: &str) {
    match r {
        Ok(x) => panic!("accepted ({x:?}), expected a refusal with {needle:?}"),
        Err(e) => assert!(e.message.contains(needle), "{}", e.message),
    }
}

/// An FMI 3 instance of `name` with `eventModeUsed`, initialized with
/// `params`, in the initial Event Mode.
fn start(name: &str, early: bool, params: &[(Vr, f64)]) -> Instance {
    let s = spec(name).unwrap_or_else(|| panic!("{name}"));
    let (mut inst, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    ok(inst.set_event_mode_used(true));
    inst.set_early_return_allowed(early);
    ok(inst.setup_experiment(0.0, Some(10.0)));
    ok(inst.enter_initialization());
    for &(vr, x) in params {
        ok(set(&mut inst, &[vr], &[x]));
    }
    ok(inst.exit_initialization());
    inst
}

fn update(inst: &mut Instance) {
    for _ in 0..10 {
        if !ok(inst.update_discrete_states()).discrete_states_need_update {
            return;
        }
    }
    panic!("the event iteration does not converge");
}

fn step(inst: &mut Instance, t: f64, h: f64) -> bool {
    assert_eq!(ok(inst.step(t, h, true, None)), Status::Ok);
    assert!(!inst.early_return());
    inst.event_handling_needed()
}

/// x_k of the controller tests: a signal with sign changes.
fn x_at(k: usize) -> f64 {
    let t = k as f64 * 0.1;
    (3.0 * t).sin() + 0.25 - 0.1 * k as f64 % 3.0
}

/// The controller at ticks k = 0..n (steps of `h`, ticks every 0.1):
/// the u_k read at each tick, and u between the ticks unchanged.
fn run_controller(kp: f64, ki: f64, h: f64, n: usize) -> Vec<f64> {
    let mut inst = start("ClockedController", false, &[(cc::KP, kp), (cc::KI, ki)]);
    let per_tick = (cc::INTERVAL / h).round() as usize;
    let mut us = Vec::new();
    let mut t = 0.0;
    for k in 0..n {
        let tk = k as f64 * cc::INTERVAL;
        if k > 0 {
            ok(inst.enter_event_mode());
        }
        assert!((inst.time() - tk).abs() < 1e-9, "{} vs {tk}", inst.time());
        ok(inst.set_clocks(&[cc::TICK], &[true]));
        ok(set(&mut inst, &[cc::X], &[x_at(k)]));
        let u = ok(get(&mut inst, &[cc::U]))[0];
        // Read twice while active: the same (the output equation, no
        // state change).
        assert_eq!(ok(get(&mut inst, &[cc::U]))[0], u);
        us.push(u);
        update(&mut inst);
        // Deactivated by the update: u can no longer be read.
        refused(get(&mut inst, &[cc::U]), "is clocked by tick");
        ok(inst.enter_step_mode());
        for _ in 0..per_tick {
            assert!(!step(&mut inst, t, h), "no events of its own");
            t = inst.time();
            refused(get(&mut inst, &[cc::U]), "is clocked by tick");
        }
        t = tk + cc::INTERVAL;
    }
    us
}

#[test]
fn clocked_controller_matches_the_hand_computed_law() {
    let n = 12;
    let xs: Vec<f64> = (0..n).map(x_at).collect();
    for (kp, ki) in [(2.0, 1.0), (0.5, -3.0)] {
        for h in [0.1, 0.05, 0.025] {
            let us = run_controller(kp, ki, h, n);
            let reference = clocked_controller(kp, ki, cc::INTERVAL, &xs);
            assert_eq!(us.len(), reference.len());
            for (k, (u, r)) in us.iter().zip(&reference).enumerate() {
                assert!(
                    (u - r).abs() <= 1e-12 * r.abs().max(1.0),
                    "kp {kp} ki {ki} h {h} tick {k}: {u} vs {r}"
                );
            }
        }
    }
    // By hand, the defaults: x = 1, 1, -2: I = 0.1, 0.2, 0.0;
    // u = -(2 + 0.1), -(2 + 0.2), -(-4 + 0) = -2.1, -2.2, 4.
    let u = clocked_controller(2.0, 1.0, 0.1, &[1.0, 1.0, -2.0]);
    assert!(
        (u[0] + 2.1).abs() < 1e-15 && (u[1] + 2.2).abs() < 1e-15 && (u[2] - 4.0).abs() < 1e-15,
        "{u:?}"
    );
}

#[test]
fn clocked_controller_refuses_the_clocks_rules() {
    let mut inst = start("ClockedController", false, &[]);
    // Initial Event Mode at 0 (a tick): x cannot be set before the tick.
    refused(set(&mut inst, &[cc::X], &[1.0]), "is clocked by tick");
    refused(
        inst.set_clocks(&[cc::TICK], &[false]),
        "canBeDeactivated = false",
    );
    ok(inst.set_clocks(&[cc::TICK], &[true]));
    ok(set(&mut inst, &[cc::X], &[1.0]));
    update(&mut inst);
    // One update per Event Mode for a periodic Clock.
    refused(
        inst.set_clocks(&[cc::TICK], &[true]),
        "at most one update per Event Mode",
    );
    ok(inst.enter_step_mode());
    refused(inst.set_clocks(&[cc::TICK], &[true]), "Event Mode only");
    assert!(!step(&mut inst, 0.0, 0.05));
    // Event Mode at 0.05: no tick there.
    ok(inst.enter_event_mode());
    refused(
        inst.set_clocks(&[cc::TICK], &[true]),
        "its next tick is at t = 0.1",
    );
    update(&mut inst);
    ok(inst.enter_step_mode());
    assert!(!step(&mut inst, 0.05, 0.05));
    ok(inst.enter_event_mode());
    ok(inst.set_clocks(&[cc::TICK], &[true]));
    ok(set(&mut inst, &[cc::X], &[1.0]));
    assert!((ok(get(&mut inst, &[cc::U]))[0] + 2.2).abs() < 1e-12);
    // Intervals: constant, 0.1, unchanged; never set.
    let (mut x, mut q) = ([0.0], [0]);
    ok(inst.get_intervals(&[cc::TICK], &mut x, &mut q));
    assert_eq!((x[0], q[0]), (0.1, fmu_kit::instance::INTERVAL_UNCHANGED));
    refused(inst.set_intervals(&[cc::TICK], &[0.2]), "is constant");
}

#[test]
fn clocked_controller_fmu_state_holds_the_clocked_state() {
    let mut inst = start("ClockedController", false, &[]);
    ok(inst.set_clocks(&[cc::TICK], &[true]));
    ok(set(&mut inst, &[cc::X], &[1.0]));
    update(&mut inst);
    ok(inst.enter_step_mode());
    assert!(!step(&mut inst, 0.0, 0.1));
    ok(inst.enter_event_mode());
    ok(inst.set_clocks(&[cc::TICK], &[true]));
    let saved = ok(inst.get_state(None));
    ok(set(&mut inst, &[cc::X], &[1.0]));
    let u1 = ok(get(&mut inst, &[cc::U]))[0];
    update(&mut inst);
    ok(inst.set_state(saved));
    // Restored: the tick active again, I = 0.1 (not 0.2).
    ok(set(&mut inst, &[cc::X], &[1.0]));
    assert_eq!(ok(get(&mut inst, &[cc::U]))[0], u1);
    assert!((u1 + 2.2).abs() < 1e-12);
}

/// Runs `ThresholdTrigger` with x[i] set at each step start (steps of
/// `h`): the (time, count) of each tick seen through fmi3GetClock.
fn run_trigger(threshold: f64, x_init: f64, xs: &[f64], h: f64) -> Vec<(f64, i32)> {
    let mut inst = start(
        "ThresholdTrigger",
        true,
        &[(tt::THRESHOLD, threshold), (tt::X, x_init)],
    );
    // The initial Event Mode: crossed inactive, count unreadable.
    refused(get_int(&mut inst, tt::COUNT), "with its Clocks inactive");
    update(&mut inst);
    ok(inst.enter_step_mode());
    let mut ticks = Vec::new();
    for (i, &x) in xs.iter().enumerate() {
        let t = i as f64 * h;
        ok(set(&mut inst, &[tt::X], &[x]));
        refused(get_int(&mut inst, tt::COUNT), "is clocked by crossed");
        let event = step(&mut inst, t, h);
        if event {
            ok(inst.enter_event_mode());
            let mut c = [false];
            ok(inst.get_clocks(&[tt::CROSSED], &mut c));
            assert!(c[0], "an event without a tick at {}", inst.time());
            let count = ok(get_int(&mut inst, tt::COUNT)) as i32;
            // Once per activation.
            ok(inst.get_clocks(&[tt::CROSSED], &mut c));
            assert!(!c[0]);
            ticks.push((inst.time(), count));
            update(&mut inst);
            refused(get_int(&mut inst, tt::COUNT), "is clocked by crossed");
            ok(inst.enter_step_mode());
        }
    }
    ticks
}

#[test]
fn threshold_trigger_ticks_at_the_end_of_the_crossing_step() {
    let h = 0.1;
    let xs = [0.0, 0.2, 0.6, 0.7, 0.4, 0.5, 0.5, 0.1, 0.9, 1.0, 0.49, 0.51];
    let t: Vec<f64> = (0..=xs.len()).map(|i| i as f64 * h).collect();
    for (threshold, x_init) in [(0.5, 0.0), (0.5, 0.9), (0.05, 0.0)] {
        let ticks = run_trigger(threshold, x_init, &xs, h);
        let reference = threshold_ticks(threshold, x_init, &t, &xs);
        assert_eq!(ticks.len(), reference.len(), "{ticks:?} vs {reference:?}");
        for ((ta, ca), (tb, cb)) in ticks.iter().zip(&reference) {
            assert!(
                (ta - tb).abs() < 1e-9 && ca == cb,
                "{ticks:?} vs {reference:?}"
            );
        }
    }
    // By hand: threshold 0.5 from 0: ticks at 0.3 (x 0.6), 0.6 (0.5 after
    // 0.4), 0.9 (0.9 after 0.1), 1.2 (0.51 after 0.49).
    let ticks = threshold_ticks(0.5, 0.0, &t, &xs);
    let times: Vec<f64> = ticks.iter().map(|x| (x.0 * 10.0).round() / 10.0).collect();
    assert_eq!(times, [0.3, 0.6, 0.9, 1.2]);
    assert_eq!(ticks.last().map(|x| x.1), Some(4));
}

#[test]
fn threshold_trigger_rules() {
    let mut inst = start("ThresholdTrigger", false, &[]);
    let mut c = [false];
    // Output Clock: never set; input-only functions refused.
    refused(inst.set_clocks(&[tt::CROSSED], &[true]), "output Clock");
    refused(
        inst.get_intervals(&[tt::CROSSED], &mut [0.0], &mut [0]),
        "triggered",
    );
    ok(inst.get_clocks(&[tt::CROSSED], &mut c));
    assert!(!c[0]);
    update(&mut inst);
    ok(inst.enter_step_mode());
    refused(inst.get_clocks(&[tt::CROSSED], &mut c), "Event Mode only");
    ok(set(&mut inst, &[tt::X], &[1.0]));
    assert!(step(&mut inst, 0.0, 0.1));
    // The tick: no step before Event Mode.
    refused(inst.step(0.1, 0.1, true, None), "enter Event Mode");
}

#[test]
fn clocked_controller_in_scheduled_execution_matches_the_law() {
    let s = spec("ClockedController").unwrap_or_else(|| panic!("ClockedController"));
    let (mut inst, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    ok(inst.set_scheduled_execution(fmu_kit::instance::Preemption::default()));
    ok(inst.setup_experiment(0.0, Some(10.0)));
    ok(inst.enter_initialization());
    ok(inst.exit_initialization());
    assert_eq!(inst.mode(), fmu_kit::instance::Mode::ClockActivation);
    let n = 12;
    let xs: Vec<f64> = (0..n).map(x_at).collect();
    let reference = clocked_controller(2.0, 1.0, cc::INTERVAL, &xs);
    for (k, &x) in xs.iter().enumerate() {
        ok(set(&mut inst, &[cc::X], &[x]));
        // Before the partition ran (k = 0), or after a set without an
        // activation since.
        refused(get(&mut inst, &[cc::U]), "fmi3ActivateModelPartition");
        ok(inst.activate_partition(cc::TICK, k as f64 * cc::INTERVAL));
        let u = ok(get(&mut inst, &[cc::U]))[0];
        assert!(
            (u - reference[k]).abs() <= 1e-12 * reference[k].abs().max(1.0),
            "tick {k}: {u} vs {}",
            reference[k]
        );
    }
    refused(
        inst.activate_partition(cc::TICK, 1.15),
        "does not tick at t = 1.15",
    );
}

/// One activation of `ClockedCounter`'s triggered Clock (in Event Mode):
/// `fmi3SetClock(trigger)`, `value` set, `n` and `held` read,
/// `fmi3UpdateDiscreteStates`; returns (n, held).
fn counter_activation(inst: &mut Instance, value: f64) -> (i32, f64) {
    ok(inst.set_clocks(&[ck::TRIGGER], &[true]));
    ok(set(inst, &[ck::VALUE], &[value]));
    let n = ok(get_int(inst, ck::N)) as i32;
    let held = ok(get(inst, &[ck::HELD]))[0];
    // The output equation: the same however often it is read.
    assert_eq!(ok(get_int(inst, ck::N)) as i32, n);
    assert_eq!(ok(get(inst, &[ck::HELD]))[0], held);
    update(inst);
    // Deactivated by the update.
    refused(get_int(inst, ck::N), "with its Clocks inactive");
    refused(get(inst, &[ck::HELD]), "with its Clocks inactive");
    (n, held)
}

#[test]
fn clocked_counter_counts_the_activations_of_its_triggered_clock() {
    let h = 0.05;
    let times = [0.2, 0.35, 0.9];
    let values = [1.5, -2.0, 4.0];
    let mut inst = start("ClockedCounter", false, &[]);
    // The initial Event Mode at 0: no activation.
    refused(get_int(&mut inst, ck::N), "with its Clocks inactive");
    update(&mut inst);
    ok(inst.enter_step_mode());
    let mut seen = Vec::new();
    let mut t = 0.0;
    for (&ta, &v) in times.iter().zip(&values) {
        while t < ta - 1e-9 {
            assert!(!step(&mut inst, t, h), "no events of its own");
            t = inst.time();
            refused(get_int(&mut inst, ck::N), "is clocked by trigger");
            refused(
                set(&mut inst, &[ck::VALUE], &[9.0]),
                "is clocked by trigger",
            );
        }
        ok(inst.enter_event_mode());
        assert!((inst.time() - ta).abs() < 1e-9, "{} vs {ta}", inst.time());
        seen.push(counter_activation(&mut inst, v));
        ok(inst.enter_step_mode());
    }
    assert_eq!(seen, clocked_counter(&values));
    assert_eq!(seen, [(1, 1.5), (2, -2.0), (3, 4.0)]);
}

#[test]
fn clocked_counter_rules() {
    let s = spec("ClockedCounter").unwrap_or_else(|| panic!("ClockedCounter"));
    let (mut inst, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    ok(inst.set_event_mode_used(true));
    ok(inst.setup_experiment(0.0, Some(10.0)));
    // Instantiated: the clocked input's start value can be set.
    ok(set(&mut inst, &[ck::VALUE], &[7.0]));
    ok(inst.enter_initialization());
    // Initialization Mode: the clocked variables readable, 0 before the
    // first activation (a value set here is none); no fmi3SetClock.
    assert_eq!(ok(get_int(&mut inst, ck::N)), 0);
    assert_eq!(ok(get(&mut inst, &[ck::HELD]))[0], 0.0);
    refused(inst.set_clocks(&[ck::TRIGGER], &[true]), "Event Mode only");
    ok(inst.exit_initialization());
    // The initial Event Mode, trigger inactive: value not set, n and held
    // not read.
    refused(
        set(&mut inst, &[ck::VALUE], &[1.0]),
        "with its Clocks inactive",
    );
    refused(get_int(&mut inst, ck::N), "with its Clocks inactive");
    refused(get(&mut inst, &[ck::HELD]), "with its Clocks inactive");
    // An input Clock: not read with fmi3GetClock; triggered: no interval;
    // canBeDeactivated = false.
    refused(
        inst.get_clocks(&[ck::TRIGGER], &mut [false]),
        "is an input Clock",
    );
    refused(
        inst.get_intervals(&[ck::TRIGGER], &mut [0.0], &mut [0]),
        "triggered",
    );
    refused(
        inst.set_clocks(&[ck::TRIGGER], &[false]),
        "canBeDeactivated = false",
    );
    // An activation at t = 0: held is value (7, its start value) until set.
    ok(inst.set_clocks(&[ck::TRIGGER], &[true]));
    assert_eq!(ok(get_int(&mut inst, ck::N)), 1);
    assert_eq!(ok(get(&mut inst, &[ck::HELD]))[0], 7.0);
    // Set twice: one activation, held the last value.
    ok(set(&mut inst, &[ck::VALUE], &[1.0]));
    ok(set(&mut inst, &[ck::VALUE], &[2.5]));
    assert_eq!(ok(get_int(&mut inst, ck::N)), 1);
    assert_eq!(ok(get(&mut inst, &[ck::HELD]))[0], 2.5);
    update(&mut inst);
    refused(get_int(&mut inst, ck::N), "with its Clocks inactive");
    // Triggered: again in the same Event Mode (value kept: 2.5).
    ok(inst.set_clocks(&[ck::TRIGGER], &[true]));
    assert_eq!(ok(get_int(&mut inst, ck::N)), 2);
    assert_eq!(ok(get(&mut inst, &[ck::HELD]))[0], 2.5);
    update(&mut inst);
    ok(inst.enter_step_mode());
    // Step Mode: no fmi3SetClock, no clocked access.
    refused(inst.set_clocks(&[ck::TRIGGER], &[true]), "Event Mode only");
    refused(
        set(&mut inst, &[ck::VALUE], &[1.0]),
        "is clocked by trigger",
    );
    refused(get_int(&mut inst, ck::N), "is clocked by trigger");
    assert!(!step(&mut inst, 0.0, 0.1));
    // An Event Mode without an activation changes nothing.
    ok(inst.enter_event_mode());
    refused(get_int(&mut inst, ck::N), "with its Clocks inactive");
    update(&mut inst);
    ok(inst.enter_step_mode());
    assert!(!step(&mut inst, 0.1, 0.1));
    ok(inst.enter_event_mode());
    assert_eq!(counter_activation(&mut inst, -1.0), (3, -1.0));
}

#[test]
fn clocked_counter_fmu_state_across_an_activation() {
    let mut inst = start("ClockedCounter", false, &[]);
    update(&mut inst);
    ok(inst.enter_step_mode());
    assert!(!step(&mut inst, 0.0, 0.1));
    ok(inst.enter_event_mode());
    assert_eq!(counter_activation(&mut inst, 1.5), (1, 1.5));
    ok(inst.enter_step_mode());
    assert!(!step(&mut inst, 0.1, 0.1));
    ok(inst.enter_event_mode());
    // Saved before the second activation (trigger inactive) and during it
    // (trigger active, value -2 set).
    let before = ok(inst.get_state(None));
    ok(inst.set_clocks(&[ck::TRIGGER], &[true]));
    ok(set(&mut inst, &[ck::VALUE], &[-2.0]));
    let during = ok(inst.get_state(None));
    assert_eq!(ok(get_int(&mut inst, ck::N)), 2);
    update(&mut inst);

    // Before: one activation committed, trigger inactive.
    ok(inst.set_state(before));
    refused(get_int(&mut inst, ck::N), "with its Clocks inactive");
    assert_eq!(counter_activation(&mut inst, 4.0), (2, 4.0));

    // During (serialized and back): trigger active, value -2, the
    // activation not committed yet.
    let bytes = {
        let n = ok(inst.serialized_size(during));
        let mut b = vec![0u8; n];
        ok(inst.serialize(during, &mut b));
        b
    };
    let copy = ok(inst.deserialize(&bytes, None));
    for id in [during, copy] {
        ok(inst.set_state(id));
        assert_eq!(ok(get_int(&mut inst, ck::N)), 2);
        assert_eq!(ok(get(&mut inst, &[ck::HELD]))[0], -2.0);
        update(&mut inst);
        refused(get_int(&mut inst, ck::N), "with its Clocks inactive");
    }
    ok(inst.enter_step_mode());
    assert!(!step(&mut inst, 0.2, 0.1));
    ok(inst.enter_event_mode());
    assert_eq!(counter_activation(&mut inst, 4.0), (3, 4.0));
}

// ------------------------------------------------- Partitions (Scheduled Execution)

/// A Scheduled Execution instance of `Partitions`, in Clock Activation
/// Mode (start time 0); `gain` set to `gain0` in Initialization Mode if
/// given. Checks the clocked outputs read 0 in Initialization Mode.
fn partitions_started(gain0: Option<f64>) -> Instance {
    let s = spec("Partitions").unwrap_or_else(|| panic!("Partitions"));
    let (mut inst, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    ok(inst.set_scheduled_execution(fmu_kit::instance::Preemption::default()));
    ok(inst.setup_experiment(0.0, Some(10.0)));
    ok(inst.enter_initialization());
    for vr in [pt::FAST_N, pt::SLOW_N, pt::PAIR] {
        assert_eq!(ok(get_int(&mut inst, vr)), 0);
    }
    assert_eq!(ok(get(&mut inst, &[pt::Y, pt::GAIN])), [0.0, 1.0]);
    if let Some(g) = gain0 {
        ok(set(&mut inst, &[pt::GAIN], &[g]));
    }
    ok(inst.exit_initialization());
    assert_eq!(inst.mode(), fmu_kit::instance::Mode::ClockActivation);
    inst
}

fn clock_of(p: Partition) -> Vr {
    match p {
        Partition::Fast => pt::FAST,
        Partition::Slow => pt::SLOW,
    }
}

/// Runs `activations` (time, partition, the gain set before a slow one,
/// `None`: not set), reading after each the outputs whose Clocks ran:
/// (fast_n, slow_n, pair, y), -1 / NaN for the unreadable.
fn run_partitions(
    inst: &mut Instance,
    activations: &[(f64, Partition, Option<f64>)],
) -> Vec<(i32, i32, i32, f64)> {
    let (mut fast_ran, mut slow_ran) = (false, false);
    let mut out = Vec::new();
    for &(t, p, gain) in activations {
        if let Some(g) = gain {
            ok(set(inst, &[pt::GAIN], &[g]));
            // No get after a set before the next activation.
            refused(get_int(inst, pt::PAIR), "fmi3ActivateModelPartition");
        }
        ok(inst.activate_partition(clock_of(p), t));
        match p {
            Partition::Fast => fast_ran = true,
            Partition::Slow => slow_ran = true,
        }
        let fast_n = if fast_ran {
            ok(get_int(inst, pt::FAST_N)) as i32
        } else {
            refused(get_int(inst, pt::FAST_N), "can be read only after");
            -1
        };
        let (slow_n, y) = if slow_ran {
            (
                ok(get_int(inst, pt::SLOW_N)) as i32,
                ok(get(inst, &[pt::Y]))[0],
            )
        } else {
            refused(get_int(inst, pt::SLOW_N), "can be read only after");
            refused(get(inst, &[pt::Y]), "can be read only after");
            (-1, f64::NAN)
        };
        out.push((fast_n, slow_n, ok(get_int(inst, pt::PAIR)) as i32, y));
    }
    out
}

/// The reference with the unread values of [`run_partitions`] (-1, NaN)
/// where a Clock has not run yet, and the gains in effect (start 1).
fn partitions_expected(
    activations: &[(f64, Partition, Option<f64>)],
    gain0: f64,
) -> Vec<(i32, i32, i32, f64)> {
    let mut gain = gain0;
    let seq: Vec<(Partition, f64)> = activations
        .iter()
        .map(|&(_, p, g)| {
            if let Some(g) = g {
                gain = g;
            }
            (p, gain)
        })
        .collect();
    partitions(&seq)
        .into_iter()
        .map(|(f, s, pair, y)| {
            (
                if f == 0 { -1 } else { f },
                if s == 0 { -1 } else { s },
                pair,
                if s == 0 { f64::NAN } else { y },
            )
        })
        .collect()
}

fn same(a: &[(i32, i32, i32, f64)], b: &[(i32, i32, i32, f64)]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.0 == y.0 && x.1 == y.1 && x.2 == y.2 && (x.3.to_bits() == y.3.to_bits() || x.3 == y.3)
        })
}

#[test]
fn partitions_spec_and_model_description() {
    let s = spec("Partitions").unwrap_or_else(|| panic!("Partitions"));
    assert!(s.scheduled_execution && s.scheduled_execution_only);
    assert!(!s.has_co_simulation() && !s.has_model_exchange() && !s.event_mode);
    assert!(!s.supports(FmiVersion::Fmi2));
    let x3 = fmu_kit::xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "Partitions",
    );
    for needle in [
        "<ScheduledExecution modelIdentifier=\"Partitions\"",
        "<Clock name=\"fast\" valueReference=\"1\"",
        "intervalVariability=\"constant\" priority=\"1\" intervalDecimal=\"0.1\" shiftDecimal=\"0.0\"/>",
        "<Clock name=\"slow\" valueReference=\"2\"",
        "intervalVariability=\"constant\" priority=\"2\" intervalDecimal=\"0.2\" shiftDecimal=\"0.0\"/>",
        "<Int32 name=\"pair\" valueReference=\"5\"",
        "clocks=\"1 2\"",
        "<Float64 name=\"gain\" valueReference=\"6\"",
    ] {
        assert!(x3.contains(needle), "{needle} in {x3}");
    }
    assert!(!x3.contains("<CoSimulation"), "{x3}");
    assert!(!x3.contains("<ModelExchange"), "{x3}");
    // ClockedController's tick, a Scheduled Execution Clock too, has its
    // priority.
    let c = spec("ClockedController").unwrap_or_else(|| panic!("ClockedController"));
    let xc = fmu_kit::xml::model_description(
        c,
        FmiVersion::Fmi3,
        &Capabilities::full(c, FmiVersion::Fmi3),
        "ClockedController",
    );
    assert!(xc.contains(" priority=\"1\""), "{xc}");
    assert!(xc.contains("<CoSimulation "), "{xc}");
}

#[test]
fn partitions_in_priority_order_match_the_reference() {
    // Gains before some slow activations (the first with the start value 1).
    let schedule = partitions_schedule(1.0);
    assert_eq!(schedule.len(), 11 + 6);
    let mut j = 0;
    let activations: Vec<(f64, Partition, Option<f64>)> = schedule
        .iter()
        .map(|&(t, p)| {
            let gain = (p == Partition::Slow).then(|| {
                j += 1;
                0.5 * f64::from(j) - 1.25
            });
            (t, p, if j == 1 { None } else { gain })
        })
        .collect();
    let mut inst = partitions_started(None);
    let got = run_partitions(&mut inst, &activations);
    let expected = partitions_expected(&activations, 1.0);
    assert!(same(&got, &expected), "{got:?}\nvs\n{expected:?}");
    // By hand: pair after each activation f s | f | f s | f ...
    let pairs: Vec<i32> = got.iter().map(|x| x.2).collect();
    assert_eq!(pairs[..8], [1, 12, 21, 11, 12, 21, 11, 12]);
    // 12 after both at the common ticks 0, 0.2, ...
    for (k, w) in schedule.windows(2).enumerate() {
        if w[0].0 == w[1].0 {
            assert_eq!(pairs[k + 1], 12, "t = {}", w[0].0);
        }
    }
    // The last: t = 1.0, fast_n = 11, slow_n = 6, y = gain * 6 with the
    // last gain 0.5 * 6 - 1.25 = 1.75.
    assert_eq!(got.last().map(|x| (x.0, x.1, x.2)), Some((11, 6, 12)));
    assert_eq!(got.last().map(|x| x.3), Some(1.75 * 6.0));
    // The first slow activation used the start value 1.
    assert_eq!(got[1], (1, 1, 12, 1.0));

    // A gain set in Initialization Mode is the one of the first activation.
    let mut inst = partitions_started(Some(4.0));
    let first = [(0.0, Partition::Fast, None), (0.0, Partition::Slow, None)];
    assert_eq!(run_partitions(&mut inst, &first)[1], (1, 1, 12, 4.0));
}

#[test]
fn partitions_in_the_wrong_order_leave_21() {
    // slow before fast at the common ticks: the FMU runs them, pair tells.
    let activations = [
        (0.0, Partition::Slow, Some(2.0)),
        (0.0, Partition::Fast, None),
        (0.1, Partition::Fast, None),
        (0.2, Partition::Slow, None),
        (0.2, Partition::Fast, None),
        (0.3, Partition::Fast, None),
    ];
    let mut inst = partitions_started(None);
    let got = run_partitions(&mut inst, &activations);
    assert!(
        same(&got, &partitions_expected(&activations, 1.0)),
        "{got:?}"
    );
    let pairs: Vec<i32> = got.iter().map(|x| x.2).collect();
    assert_eq!(pairs, [2, 21, 11, 12, 21, 11]);
    assert_eq!(got[3], (2, 2, 12, 4.0));
}

#[test]
fn partitions_refusals() {
    let mut inst = partitions_started(None);
    // Before the first activation the clocked outputs are not readable.
    refused(get_int(&mut inst, pt::PAIR), "can be read only after");
    // Off the grid: fast at 0.15, slow at 0.1; before the start.
    refused(
        inst.activate_partition(pt::FAST, 0.15),
        "does not tick at t = 0.15",
    );
    refused(
        inst.activate_partition(pt::SLOW, 0.1),
        "does not tick at t = 0.1",
    );
    refused(
        inst.activate_partition(pt::FAST, -0.1),
        "not before the start time",
    );
    // Not a Clock.
    refused(inst.activate_partition(pt::PAIR, 0.0), "is no Clock");
    ok(inst.activate_partition(pt::FAST, 0.0));
    // Twice at one time (and earlier): strictly increasing per Clock.
    refused(
        inst.activate_partition(pt::FAST, 0.0),
        "is not after its last activation at 0",
    );
    ok(inst.activate_partition(pt::SLOW, 0.0));
    refused(
        inst.activate_partition(pt::SLOW, 0.0),
        "is not after its last activation at 0",
    );
    ok(inst.activate_partition(pt::FAST, 0.1));
    refused(
        inst.activate_partition(pt::FAST, 0.1),
        "is not after its last activation",
    );
    assert_eq!(ok(get_int(&mut inst, pt::PAIR)), 21);
    // No steps, no Event Mode, no fmi3SetClock in Scheduled Execution.
    refused(inst.do_step(0.1, 0.1), "no steps");
    refused(inst.step(0.1, 0.1, true, None), "no steps");
    refused(inst.enter_event_mode(), "no Event Mode");
    refused(
        inst.set_clocks(&[pt::FAST], &[true]),
        "Clocks are activated in Event Mode only",
    );
    // The refusals changed nothing.
    assert_eq!(ok(get_int(&mut inst, pt::FAST_N)), 2);
    assert_eq!(ok(get_int(&mut inst, pt::SLOW_N)), 1);

    // A Co-Simulation instance: no event mode to use, and without it the
    // Clocks refuse initialization.
    let s = spec("Partitions").unwrap_or_else(|| panic!("Partitions"));
    let (mut cs, _log) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    refused(cs.set_event_mode_used(true), "hasEventMode=false");
    ok(cs.setup_experiment(0.0, Some(1.0)));
    refused(cs.enter_initialization(), "eventModeUsed");
}

/// `Partitions` through the library's C exports (`crate::ffi`): the
/// one place of these tests with `unsafe` (FMI calls, as an importer
/// makes them).
#[allow(unsafe_code)]
mod c_api {
    use super::*;

    static LOG3: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

    extern "C" fn logger3(
        _env: *mut std::ffi::c_void,
        _status: std::ffi::c_int,
        _category: *const std::ffi::c_char,
        msg: *const std::ffi::c_char,
    ) {
        // SAFETY: the kit passes NUL-terminated strings.
        let m = unsafe { std::ffi::CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned();
        if let Ok(mut l) = LOG3.lock() {
            l.push(m);
        }
    }

    #[test]
    fn partitions_through_the_c_functions_scheduled_execution_only() {
        let s = spec("Partitions").unwrap_or_else(|| panic!("Partitions"));
        let token = std::ffi::CString::new(fmu_kit::caps::token(
            s,
            FmiVersion::Fmi3,
            &Capabilities::full(s, FmiVersion::Fmi3),
        ))
        .unwrap_or_default();
        // SAFETY: valid strings, no required variables, a valid logger.
        let cs = unsafe {
            crate::ffi::fmi3InstantiateCoSimulation(
                c"partitions-cs".as_ptr(),
                token.as_ptr(),
                std::ptr::null(),
                false,
                true,
                true,
                false,
                std::ptr::null(),
                0,
                std::ptr::null_mut(),
                Some(logger3),
                None,
            )
        };
        assert!(cs.is_null());
        assert!(
            LOG3.lock().is_ok_and(|l| l.iter().any(|m| m.contains(
                "fmi3InstantiateCoSimulation: this FMU supports Scheduled Execution only"
            ))),
            "{:?}",
            LOG3.lock().map(|l| l.clone())
        );
        // SAFETY: valid strings, a valid logger, no callbacks.
        let se = unsafe {
            crate::ffi::fmi3InstantiateScheduledExecution(
                c"partitions-se".as_ptr(),
                token.as_ptr(),
                std::ptr::null(),
                false,
                true,
                std::ptr::null_mut(),
                Some(logger3),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert!(!se.is_null());
        // SAFETY: a live instance, valid pointers; freed once.
        unsafe {
            use crate::ffi::*;
            assert_eq!(
                fmi3EnterInitializationMode(se, false, 0.0, 0.0, false, 0.0),
                0
            );
            assert_eq!(fmi3ExitInitializationMode(se), 0);
            assert_eq!(fmi3ActivateModelPartition(se, pt::FAST, 0.0), 0);
            assert_eq!(fmi3ActivateModelPartition(se, pt::SLOW, 0.0), 0);
            let vrs = [pt::FAST_N, pt::SLOW_N, pt::PAIR];
            let mut v = [-1i32; 3];
            assert_eq!(fmi3GetInt32(se, vrs.as_ptr(), 3, v.as_mut_ptr(), 3), 0);
            assert_eq!(v, [1, 1, 12]);
            // fmi3DoStep: refused (Error).
            let (mut event, mut term, mut early, mut last) = (false, false, false, 0.0);
            assert_eq!(
                fmi3DoStep(
                    se, 0.0, 0.1, false, &mut event, &mut term, &mut early, &mut last
                ),
                3
            );
            fmi3FreeInstance(se);
        }
    }
}
