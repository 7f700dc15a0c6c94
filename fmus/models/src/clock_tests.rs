//! The models with FMI 3 Clocks (`ClockedController`, `ThresholdTrigger`,
//! `ClockedCounter`) through the kit's instance API: the call sequence at each tick (Event
//! Mode at t_k, `fmi3SetClock`, clocked inputs set, clocked outputs read,
//! `fmi3UpdateDiscreteStates`, `fmi3EnterStepMode`), against the
//! hand-computed references of [`crate::reference`].

use fmu_kit::testing::{get, get_int, instance, set};
use fmu_kit::{Capabilities, FmiVersion, Instance, Status, Vr};

use crate::reference::{clocked_controller, clocked_counter, threshold_ticks};
use crate::{clocked_controller as cc, clocked_counter as ck, spec, threshold_trigger as tt};

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
