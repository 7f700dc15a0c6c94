//! The Co-Simulation models with events (`Ticker`, `Ballistic`,
//! `SampleHold`) through the kit's instance API (the code path of the C
//! exports minus pointer handling): the call sequence of the Reference
//! FMUs' `cs_event_mode.c` (FMI 3, `eventModeUsed`), with and without
//! early return, without Event Mode (FMI 3 `eventModeUsed = false`, FMI 2),
//! FMU states across an event; compared with [`crate::reference`].

use fmu_kit::testing::{get, get_bool, get_int, instance, set};
use fmu_kit::{Capabilities, EventUpdate, FmiVersion, Instance, Status, Vr};

use crate::reference::{ballistic_bounces, ballistic_state, ticker_count};
use crate::{ballistic, sample_hold, spec, ticker};

fn ok<T>(r: Result<T, fmu_kit::instance::Fail>) -> T {
    r.unwrap_or_else(|e| panic!("{}", e.message))
}

fn refused<T: std::fmt::Debug>(r: Result<T, fmu_kit::instance::Fail>, needle: &str) {
    match r {
        Ok(x) => panic!("accepted ({x:?}), expected a refusal with {needle:?}"),
        Err(e) => assert!(e.message.contains(needle), "{}", e.message),
    }
}

/// How an importer runs the model.
#[derive(Debug, Clone, Copy, PartialEq)]
enum How {
    /// FMI 3, `eventModeUsed = true`, `earlyReturnAllowed` as given.
    EventMode { early: bool },
    /// FMI 3 without Event Mode.
    Fmi3Plain,
    /// FMI 2.
    Fmi2,
}

/// An instance of `name` initialized with `params` (`set_u`: the input u
/// of `SampleHold` before initialization), as `how` asks: with Event Mode
/// in the initial Event Mode, else in Step Mode.
fn start(name: &str, how: How, params: &[(Vr, f64)]) -> Instance {
    let s = spec(name).unwrap_or_else(|| panic!("{name}"));
    let version = match how {
        How::Fmi2 => FmiVersion::Fmi2,
        _ => FmiVersion::Fmi3,
    };
    let (mut inst, _log) = instance(s, version, Capabilities::full(s, version));
    if let How::EventMode { early } = how {
        ok(inst.set_event_mode_used(true));
        inst.set_early_return_allowed(early);
    } else if version == FmiVersion::Fmi3 {
        inst.set_early_return_allowed(true);
    }
    ok(inst.setup_experiment(0.0, Some(s.experiment.stop_time)));
    ok(inst.enter_initialization());
    for &(vr, x) in params {
        ok(set(&mut inst, &[vr], &[x]));
    }
    ok(inst.exit_initialization());
    inst
}

/// The event iteration of `cs_event_mode.c`: updates until
/// `discreteStatesNeedUpdate = false`; the last update.
fn update(inst: &mut Instance) -> EventUpdate {
    for _ in 0..100 {
        let u = ok(inst.update_discrete_states());
        if !u.discrete_states_need_update {
            return u;
        }
    }
    panic!("the event iteration does not converge");
}

/// One `fmi3DoStep` as `cs_event_mode.c` does it: (eventHandlingNeeded,
/// earlyReturn, lastSuccessfulTime).
fn do_step(inst: &mut Instance, t: f64, h: f64) -> (bool, bool, f64) {
    assert_eq!(ok(inst.step(t, h, true, None)), Status::Ok);
    (
        inst.event_handling_needed(),
        inst.early_return(),
        inst.last_successful_time(),
    )
}

/// An event a run met: its time, whether the step returned early there,
/// and `values` read before and after the update.
#[derive(Debug)]
struct Met {
    t: f64,
    early: bool,
    before: Vec<f64>,
    after: Vec<f64>,
    next_event_time: Option<f64>,
}

/// The sequence of `cs_event_mode.c` from the initial Event Mode to
/// `stop`, steps of `h`; `read` reads the observed values. Returns the
/// events met and the values at each communication point (time, values).
fn cs_event_mode(
    inst: &mut Instance,
    h: f64,
    stop: f64,
    read: &dyn Fn(&mut Instance) -> Vec<f64>,
) -> (Vec<Met>, Vec<(f64, Vec<f64>)>) {
    update(inst);
    ok(inst.enter_step_mode());
    let mut t = 0.0;
    let mut met = Vec::new();
    let mut points = Vec::new();
    loop {
        points.push((t, read(inst)));
        if t + h > stop + 1e-12 {
            break;
        }
        let (event, early, last) = do_step(inst, t, h);
        assert!(
            early == (last < t + h),
            "earlyReturn {early} at {last}, step to {}",
            t + h
        );
        t = last;
        if event {
            let before = read(inst);
            // The strict rules: no step before Event Mode.
            refused(inst.step(t, h, true, None), "enter Event Mode");
            ok(inst.enter_event_mode());
            let u = update(inst);
            let after = read(inst);
            ok(inst.enter_step_mode());
            met.push(Met {
                t,
                early,
                before,
                after,
                next_event_time: u.next_event_time,
            });
        }
    }
    (met, points)
}

fn count(inst: &mut Instance) -> Vec<f64> {
    vec![ok(get_int(inst, ticker::COUNT)) as f64]
}

#[test]
fn ticker_time_events_with_early_return_are_exact() {
    let period = 0.35;
    let mut inst = start("Ticker", How::EventMode { early: true }, &[]);
    let (met, points) = cs_event_mode(&mut inst, 0.1, 2.0, &count);
    let times: Vec<f64> = met.iter().map(|m| m.t).collect();
    let exact: Vec<f64> = (1..=5).map(|k| k as f64 * period).collect();
    assert_eq!(times, exact);
    for (k, m) in met.iter().enumerate() {
        let k = (k + 1) as f64;
        assert!(m.early, "{m:?}");
        assert_eq!(m.before, [k - 1.0], "{m:?}");
        assert_eq!(m.after, [k], "{m:?}");
        assert_eq!(m.next_event_time, Some((k + 1.0) * period));
    }
    for (t, c) in &points {
        assert_eq!(c[0], ticker_count(period, *t), "t = {t}");
    }
}

#[test]
fn ticker_without_early_return_handles_inner_events_in_the_step() {
    let period = 0.35;
    let mut inst = start("Ticker", How::EventMode { early: false }, &[]);
    let (met, points) = cs_event_mode(&mut inst, 0.1, 2.0, &count);
    // Only the ticks on the communication grid are signalled (0.7 and
    // 1.4, reached within the tolerance); 0.35, 1.05, 1.75 are handled
    // inside the steps.
    let times: Vec<f64> = met.iter().map(|m| m.t).collect();
    assert_eq!(times.len(), 2, "{met:?}");
    for (m, k) in met.iter().zip([2.0, 4.0]) {
        assert!((m.t - k * period).abs() < 1e-12, "{m:?}");
        assert!(!m.early);
        assert_eq!(m.before, [k - 1.0]);
        assert_eq!(m.after, [k]);
    }
    for (t, c) in &points {
        assert_eq!(c[0], ticker_count(period, *t), "t = {t}");
    }
    // The grid is kept: every step ends at t + h.
    assert_eq!(points.len(), 21);
}

#[test]
fn ticker_without_event_mode_counts_the_same() {
    let period = 0.35;
    for how in [How::Fmi3Plain, How::Fmi2] {
        let mut inst = start("Ticker", how, &[]);
        let mut t = 0.0;
        for _ in 0..20 {
            let st = ok(inst.step(t, 0.1, false, None));
            assert_eq!(st, Status::Ok);
            assert!(!inst.event_handling_needed());
            assert!(!inst.early_return());
            t = inst.last_successful_time();
            assert_eq!(
                ok(get_int(&mut inst, ticker::COUNT)) as f64,
                ticker_count(period, t),
                "{how:?} t = {t}"
            );
        }
        assert!((t - 2.0).abs() < 1e-12);
        // No Event Mode for this importer.
        refused(
            inst.check_cs_event_call("fmi3EnterEventMode", !0),
            "eventModeUsed = fmi3False",
        );
    }
    // A time event on the grid: the step ends there, the tick handled.
    let mut inst = start("Ticker", How::Fmi3Plain, &[(ticker::PERIOD, 0.25)]);
    ok(inst.step(0.0, 0.25, false, None));
    assert_eq!(ok(get_int(&mut inst, ticker::COUNT)), 1);
    assert_eq!(inst.next_event_time(), Some(0.5));
}

fn ballistic_values(inst: &mut Instance) -> Vec<f64> {
    let hv = ok(get(inst, &[ballistic::H, ballistic::V]));
    vec![
        hv[0],
        hv[1],
        ok(get_int(inst, ballistic::BOUNCES)) as f64,
        f64::from(u8::from(ok(get_bool(inst, ballistic::RESTING)))),
    ]
}

#[test]
fn ballistic_bounces_are_the_closed_form_ones() {
    /// The bounces with the defaults (the 43rd rebound, 4.43 m/s * 0.7^43
    /// = 9e-7 m/s, is below 1e-6 m/s: at rest at t = 2.5586).
    const N: usize = 43;
    let (h0, g, e) = (1.0, 9.81, 0.7);
    let exact = ballistic_bounces(h0, g, e, ballistic::V_REST, 10_000);
    assert_eq!(exact.len(), N, "{:?}", exact.last());
    let mut inst = start("Ballistic", How::EventMode { early: true }, &[]);
    let (met, points) = cs_event_mode(&mut inst, 0.01, 3.0, &ballistic_values);
    assert_eq!(met.len(), exact.len());
    assert!((met[0].t - (2.0 * h0 / g).sqrt()).abs() <= 1e-15);
    let v1 = (2.0 * g * h0).sqrt();
    let mut impact = v1;
    for (k, (m, (tb, up))) in met.iter().zip(&exact).enumerate() {
        assert!(
            (m.t - tb).abs() <= 1e-12,
            "bounce {}: {} vs {tb}",
            k + 1,
            m.t
        );
        // Before: on the ground, falling, k bounces so far.
        assert_eq!(m.before[0], 0.0, "bounce {}", k + 1);
        assert!(
            (m.before[1] + impact).abs() <= 1e-9 * v1,
            "{m:?} impact {impact}"
        );
        assert_eq!(m.before[2], k as f64);
        // After: the rebound, one more bounce.
        assert!((m.after[1] - up).abs() <= 1e-9 * v1, "{m:?} rebound {up}");
        assert_eq!(m.after[2], (k + 1) as f64);
        assert_eq!(m.after[3], f64::from(u8::from(*up == 0.0)));
        assert_eq!(m.next_event_time, None);
        impact = *up;
    }
    for (t, x) in &points {
        let (h, v, n) = ballistic_state(h0, g, &exact, *t);
        assert!((x[0] - h).abs() <= 1e-9, "t = {t}: h {} vs {h}", x[0]);
        assert!((x[1] - v).abs() <= 1e-9, "t = {t}: v {} vs {v}", x[1]);
        assert_eq!(x[2], n as f64, "t = {t}");
    }
    // At rest by the end.
    assert_eq!(
        points.last().map(|p| p.1.clone()),
        Some(vec![0.0, 0.0, N as f64, 1.0])
    );
}

#[test]
fn ballistic_without_early_return_or_event_mode_gives_the_same_values() {
    let (h0, g, e) = (1.0, 9.81, 0.7);
    let exact = ballistic_bounces(h0, g, e, ballistic::V_REST, 10_000);
    for how in [How::EventMode { early: false }, How::Fmi3Plain, How::Fmi2] {
        let mut inst = start("Ballistic", how, &[]);
        let h = 0.01;
        let (met, points) = if matches!(how, How::EventMode { .. }) {
            cs_event_mode(&mut inst, h, 3.0, &ballistic_values)
        } else {
            let mut points = vec![(0.0, ballistic_values(&mut inst))];
            let mut t = 0.0;
            for _ in 0..300 {
                ok(inst.step(t, h, false, None));
                assert!(!inst.event_handling_needed() && !inst.early_return());
                t = inst.last_successful_time();
                points.push((t, ballistic_values(&mut inst)));
            }
            (Vec::new(), points)
        };
        // The bounces all fall inside steps: none is signalled.
        assert!(met.is_empty(), "{how:?}: {met:?}");
        assert_eq!(points.len(), 301, "{how:?}");
        for (t, x) in &points {
            assert!(
                (t - (t / h).round() * h).abs() < 1e-9,
                "{how:?}: off the grid at {t}"
            );
            let (hh, v, n) = ballistic_state(h0, g, &exact, *t);
            assert!(
                (x[0] - hh).abs() <= 1e-9,
                "{how:?} t = {t}: h {} vs {hh}",
                x[0]
            );
            assert!(
                (x[1] - v).abs() <= 1e-9,
                "{how:?} t = {t}: v {} vs {v}",
                x[1]
            );
            assert_eq!(x[2], n as f64, "{how:?} t = {t}");
        }
    }
}

#[test]
fn sample_hold_samples_only_in_event_mode() {
    use sample_hold::{U, Y};
    let y = |inst: &mut Instance| ok(get(inst, &[Y]))[0];
    let mut inst = start("SampleHold", How::EventMode { early: true }, &[(U, 2.0)]);
    // The initial Event Mode samples u.
    let u = update(&mut inst);
    assert_eq!(u, EventUpdate::default());
    assert_eq!(y(&mut inst), 2.0);
    ok(inst.enter_step_mode());
    // Step Mode: u changes, y holds.
    let mut t = 0.0;
    for k in 1..=3 {
        ok(set(&mut inst, &[U], &[f64::from(k) * 10.0]));
        let (event, early, last) = do_step(&mut inst, t, 0.1);
        assert!(!event && !early);
        t = last;
        assert_eq!(y(&mut inst), 2.0);
    }
    // Event Mode at a communication point: u is sampled.
    ok(inst.enter_event_mode());
    ok(set(&mut inst, &[U], &[-4.5]));
    update(&mut inst);
    assert_eq!(y(&mut inst), -4.5);
    ok(inst.enter_step_mode());
    ok(set(&mut inst, &[U], &[7.0]));
    do_step(&mut inst, t, 0.1);
    assert_eq!(y(&mut inst), -4.5);
    // Entering Event Mode with nothing to do changes nothing.
    ok(inst.enter_event_mode());
    update(&mut inst);
    assert_eq!(y(&mut inst), 7.0);
    ok(inst.enter_step_mode());
    ok(inst.enter_event_mode());
    update(&mut inst);
    assert_eq!(y(&mut inst), 7.0);
}

#[test]
fn sample_hold_without_event_mode_follows_u_at_each_communication_point() {
    use sample_hold::{U, Y};
    for how in [How::Fmi3Plain, How::Fmi2] {
        let mut inst = start("SampleHold", how, &[(U, 1.5)]);
        assert_eq!(ok(get(&mut inst, &[Y]))[0], 1.5, "{how:?}");
        let mut t = 0.0;
        for k in 0..5 {
            let u = f64::from(k) * 0.5 - 1.0;
            ok(set(&mut inst, &[U], &[u]));
            ok(inst.step(t, 0.2, false, None));
            t = inst.last_successful_time();
            // y after the step from t_i: the u set at t_i.
            assert_eq!(ok(get(&mut inst, &[Y]))[0], u, "{how:?} t = {t}");
        }
    }
}

#[test]
fn fmu_state_across_an_event_restores_the_pending_event_and_event_mode() {
    let mut inst = start("Ballistic", How::EventMode { early: true }, &[]);
    update(&mut inst);
    ok(inst.enter_step_mode());
    let (event, early, t1) = do_step(&mut inst, 0.0, 1.0);
    assert!(event && early);
    let before = ballistic_values(&mut inst);
    // Saved with the event pending (Step Mode).
    let pending = ok(inst.get_state(None));
    ok(inst.enter_event_mode());
    // Saved in Event Mode before the update.
    let in_event = ok(inst.get_state(None));
    update(&mut inst);
    let after = ballistic_values(&mut inst);
    assert_eq!(after[2], 1.0);
    ok(inst.enter_step_mode());
    let (event, _, t2) = do_step(&mut inst, t1, 1.0);
    assert!(event);
    let second = ballistic_values(&mut inst);

    // Back to the pending event: no step before Event Mode, then the
    // same bounce and the same next one.
    ok(inst.set_state(pending));
    assert!(inst.event_handling_needed());
    assert_eq!(ballistic_values(&mut inst), before);
    refused(inst.step(t1, 1.0, false, None), "enter Event Mode");
    ok(inst.enter_event_mode());
    update(&mut inst);
    assert_eq!(ballistic_values(&mut inst), after);
    ok(inst.enter_step_mode());
    assert_eq!(do_step(&mut inst, t1, 1.0), (true, true, t2));
    assert_eq!(ballistic_values(&mut inst), second);

    // Back into Event Mode: Step Mode only after the update.
    ok(inst.set_state(in_event));
    refused(inst.enter_step_mode(), "was not called in this Event Mode");
    update(&mut inst);
    assert_eq!(ballistic_values(&mut inst), after);
    ok(inst.enter_step_mode());
    assert_eq!(do_step(&mut inst, t1, 1.0), (true, true, t2));

    // The serialized state carries the pending event too.
    let bytes = {
        let n = ok(inst.serialized_size(pending));
        let mut b = vec![0u8; n];
        ok(inst.serialize(pending, &mut b));
        b
    };
    let copy = ok(inst.deserialize(&bytes, None));
    ok(inst.set_state(copy));
    assert!(inst.event_handling_needed());
    assert_eq!(ballistic_values(&mut inst), before);
}

#[test]
fn strict_event_mode_rules() {
    // Step Mode before the event iteration ended (a step in Event Mode:
    // the C layer's state check, `fmus/kit` tests).
    let mut inst = start("Ticker", How::EventMode { early: true }, &[]);
    refused(inst.enter_step_mode(), "was not called in this Event Mode");
    update(&mut inst);
    ok(inst.enter_step_mode());
    // A wrong communication point after an early return.
    let (event, early, last) = do_step(&mut inst, 0.0, 0.5);
    assert!(event && early && last == 0.35);
    ok(inst.enter_event_mode());
    update(&mut inst);
    ok(inst.enter_step_mode());
    refused(
        inst.step(0.5, 0.1, false, None),
        "differs from the FMU time",
    );
    assert_eq!(do_step(&mut inst, 0.35, 0.5), (true, true, 0.7));
    // eventModeUsed without event mode in the model is refused.
    let s = spec("Integrator").unwrap_or_else(|| panic!("Integrator"));
    let (mut plain, _) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    refused(plain.set_event_mode_used(true), "hasEventMode=false");
}
