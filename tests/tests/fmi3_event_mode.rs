//! FMI 3 Co-Simulation event mode end to end (docs/events.md), on the
//! kit's strict event-mode FMUs: `Ticker` (time events at k period,
//! announced through `nextEventTime`), `Ballistic` (state events located
//! exactly, early return) and `SampleHold` (y takes u in Event Mode). The
//! trace is checked against the models' closed forms
//! (`cosim_models::reference`), the calls against the call log, and the
//! scenarios that cannot have event mode against their errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_models::reference::{ballistic_bounces, ballistic_state, ticker_count};
use cosim_tests::{cosim, fmi3};

const G: f64 = 9.81;
const E: f64 = 0.7;
const H0: f64 = 1.0;
const PERIOD: f64 = 0.35;

/// A trace: its header's columns and its rows of numbers.
struct Trace {
    columns: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl Trace {
    fn read(dir: &Path) -> Trace {
        let text = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
        let mut lines = text.lines();
        let columns = lines
            .next()
            .unwrap()
            .split(',')
            .map(str::to_string)
            .collect();
        let rows = lines
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        Trace { columns, rows }
    }

    fn column(&self, name: &str) -> Vec<f64> {
        let i = self
            .columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.columns));
        self.rows.iter().map(|r| r[i]).collect()
    }

    fn times(&self) -> Vec<f64> {
        self.column("time [s]")
    }
}

/// The time `t` on the run's 1 ns grid, as the trace prints it.
fn on_grid(t: f64) -> f64 {
    (t * 1e9).round() / 1e9
}

/// Writes `toml` as `dir/name` and runs it with the FMI call log; returns
/// the process output, the output directory and the call log's text.
fn run(dir: &Path, name: &str, toml: &str) -> (Output, PathBuf, String) {
    let scenario = dir.join(name);
    std::fs::write(&scenario, toml).unwrap();
    let out = dir.join(format!("{name}.out"));
    let calls = dir.join(format!("{name}.calls.log"));
    let output = cosim(&[
        "run",
        "--no-progress",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--log-fmi-calls",
        calls.to_str().unwrap(),
    ]);
    let log = std::fs::read_to_string(&calls).unwrap_or_default();
    (output, out, log)
}

#[track_caller]
fn ok(output: &Output) {
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains("Illegal call sequence"), "{err}");
}

/// `cosim run` failed, saying each of `keys`; returns stderr.
#[track_caller]
fn refused(output: &Output, keys: &[&str]) -> String {
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for k in keys {
        assert!(err.contains(k), "missing {k:?} in:\n{err}");
    }
    err
}

fn fmu(model: &str) -> String {
    fmi3(model).to_str().unwrap().to_string()
}

fn master(kind: &str, step: f64, stop: f64, extra: &str) -> String {
    format!("[simulation]\nstop = {stop}\n\n[master]\nkind = \"{kind}\"\nstep = {step}\n{extra}\n")
}

fn subsystem(name: &str, model: &str, extra: &str) -> String {
    format!(
        "[[subsystems]]\nname = \"{name}\"\nfmu = \"{}\"\n{extra}\n",
        fmu(model)
    )
}

/// The instantiation line of `instance` in a call log.
fn instantiation<'a>(log: &'a str, instance: &str) -> &'a str {
    log.lines()
        .find(|l| l.contains(&format!("] {instance}: fmi3InstantiateCoSimulation(")))
        .unwrap_or_else(|| panic!("no instantiation of {instance} in:\n{log}"))
}

/// Every trace row of `Ballistic` (columns `ball.*`) equals the closed
/// form at its time, and every bounce before the end has a row at its
/// time (on the 1 ns grid) where `rows_at_bounces`.
#[track_caller]
fn assert_ballistic(trace: &Trace, rows_at_bounces: bool) {
    let bounces = ballistic_bounces(H0, G, E, 1e-6, 1000);
    let times = trace.times();
    let (h, v, n) = (
        trace.column("ball.h"),
        trace.column("ball.v"),
        trace.column("ball.bounces"),
    );
    for (i, &t) in times.iter().enumerate() {
        // (The row's time is the event's on the 1 ns grid; the FMU's
        // values are those at the exact event time.)
        let exact = bounces
            .iter()
            .map(|&(tb, _)| tb)
            .find(|&tb| on_grid(tb) == t)
            .unwrap_or(t);
        let (h_ref, v_ref, n_ref) = ballistic_state(H0, G, &bounces, exact);
        assert!(
            (h[i] - h_ref).abs() <= 1e-12,
            "h at {t}: {} vs {h_ref}",
            h[i]
        );
        assert!(
            (v[i] - v_ref).abs() <= 1e-12,
            "v at {t}: {} vs {v_ref}",
            v[i]
        );
        assert_eq!(n[i], n_ref as f64, "bounces at {t}");
    }
    let end = *times.last().unwrap();
    for &(tb, _) in bounces.iter().filter(|&&(tb, _)| tb < end) {
        assert_eq!(
            times.contains(&on_grid(tb)),
            rows_at_bounces,
            "a row at the bounce at {tb}: {times:?}"
        );
    }
}

#[test]
fn state_events_end_the_fixed_step_at_the_event_and_the_grid_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let toml = master("fixed-step", 0.1, 1.5, "") + &subsystem("ball", "Ballistic", "");
    let (output, out, log) = run(dir.path(), "ball.toml", &toml);
    ok(&output);
    assert!(
        instantiation(&log, "ball").contains("eventModeUsed=1, earlyReturnAllowed=1"),
        "{log}"
    );
    // The cs_event_mode.c sequence: after initialization, and at each bounce.
    let calls: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split("] ball: ").nth(1))
        .map(|c| c.split('(').next().unwrap())
        .collect();
    let after_init = calls
        .iter()
        .position(|c| *c == "fmi3ExitInitializationMode")
        .unwrap();
    let first_step = calls.iter().position(|c| *c == "fmi3DoStep").unwrap();
    let event_calls = |from: usize, to: usize| -> Vec<&str> {
        calls[from..to]
            .iter()
            .copied()
            .filter(|c| !c.starts_with("fmi3Get"))
            .collect()
    };
    assert_eq!(
        event_calls(after_init + 1, first_step),
        ["fmi3UpdateDiscreteStates", "fmi3EnterStepMode"],
        "{calls:?}"
    );
    // At each bounce before 1.5 s (two): Event Mode after the step that
    // returned early, then on.
    let entered: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i] == "fmi3EnterEventMode")
        .collect();
    assert_eq!(entered.len(), 2, "{calls:?}");
    for &i in &entered {
        assert_eq!(calls[i - 1], "fmi3DoStep", "{calls:?}");
        assert_eq!(
            event_calls(i, i + 6),
            [
                "fmi3EnterEventMode",
                "fmi3UpdateDiscreteStates",
                "fmi3EnterStepMode"
            ],
            "{calls:?}"
        );
    }
    assert!(
        log.contains("earlyReturn=1, lastSuccessfulTime=0.451523640985"),
        "{log}"
    );
    let trace = Trace::read(&out);
    assert_ballistic(&trace, true);
    // The grid of 0.1 s goes on after each event: 0.4, the bounce, 0.5.
    let times = trace.times();
    let k = times.iter().position(|&t| t == 0.451523641).unwrap();
    assert_eq!(&times[k - 1..k + 2], [0.4, 0.451523641, 0.5]);
    assert_eq!(times.len(), 16 + 2, "{times:?}");
}

#[test]
fn adaptive_masters_end_their_steps_at_the_events() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["nepce", "predictor-corrector"] {
        let toml = master(kind, 0.05, 1.5, "") + &subsystem("ball", "Ballistic", "");
        let (output, out, _) = run(dir.path(), &format!("{kind}.toml"), &toml);
        ok(&output);
        assert_ballistic(&Trace::read(&out), true);
    }
}

#[test]
fn time_events_reach_the_other_fmus_at_their_time() {
    // Ticker's `last` (k period from the tick at k period on) feeds
    // SampleHold, which takes it in Event Mode: at each tick both change in
    // the same row (a super-dense instant). Two event-mode FMUs: no early
    // return, the ticks announced through nextEventTime end the steps.
    let dir = tempfile::tempdir().unwrap();
    for scheme in ["jacobi", "gauss-seidel"] {
        let toml = master("fixed-step", 0.1, 1.5, &format!("scheme = \"{scheme}\""))
            + &subsystem("tick", "Ticker", "")
            + &subsystem("hold", "SampleHold", "")
            + "[[connections]]\nfrom = \"tick.last\"\nto = \"hold.u\"\n";
        let (output, out, log) = run(dir.path(), &format!("{scheme}.toml"), &toml);
        ok(&output);
        for name in ["tick", "hold"] {
            assert!(
                instantiation(&log, name).contains("eventModeUsed=1, earlyReturnAllowed=0"),
                "{log}"
            );
        }
        let trace = Trace::read(&out);
        let times = trace.times();
        let mut expected: Vec<f64> = (0..=15).map(|i| on_grid(i as f64 * 0.1)).collect();
        expected.extend((1..=4).map(|k| on_grid(k as f64 * PERIOD)));
        expected.sort_by(f64::total_cmp);
        expected.dedup();
        assert_eq!(times, expected, "{scheme}");
        let (count, last, y) = (
            trace.column("tick.count"),
            trace.column("tick.last"),
            trace.column("hold.y"),
        );
        for (i, &t) in times.iter().enumerate() {
            let n = ticker_count(PERIOD, t);
            assert_eq!(count[i], n, "{scheme}: count at {t}");
            assert_eq!(last[i], n * PERIOD, "{scheme}: last at {t}");
            assert_eq!(y[i], last[i], "{scheme}: hold.y at {t}");
        }
    }
}

#[test]
fn event_mode_false_instantiates_without_it_as_fmpy_does() {
    // The FMU then handles its ticks inside its steps: the count changes
    // at the first communication point after each tick, and no row is
    // added at the ticks.
    let dir = tempfile::tempdir().unwrap();
    let toml =
        master("fixed-step", 0.1, 1.5, "") + &subsystem("tick", "Ticker", "event_mode = false");
    let (output, out, log) = run(dir.path(), "off.toml", &toml);
    ok(&output);
    assert!(
        instantiation(&log, "tick").contains("eventModeUsed=0, earlyReturnAllowed=0"),
        "{log}"
    );
    assert!(!log.contains("fmi3EnterEventMode"), "{log}");
    let trace = Trace::read(&out);
    let times = trace.times();
    assert_eq!(times.len(), 16, "{times:?}");
    let count = trace.column("tick.count");
    for (i, &t) in times.iter().enumerate() {
        assert_eq!(count[i], ticker_count(PERIOD, t), "count at {t}");
    }
}

#[test]
fn two_fmus_with_events_handle_state_events_at_communication_points() {
    // With Ticker beside it, Ballistic may not return early: its bounces
    // are handled inside its steps (no row at them), its values at every
    // row still the closed form's; the ticks still end steps.
    let dir = tempfile::tempdir().unwrap();
    let toml = master("fixed-step", 0.1, 1.5, "")
        + &subsystem("ball", "Ballistic", "")
        + &subsystem("tick", "Ticker", "");
    let (output, out, log) = run(dir.path(), "two.toml", &toml);
    ok(&output);
    assert!(
        instantiation(&log, "ball").contains("eventModeUsed=1, earlyReturnAllowed=0"),
        "{log}"
    );
    let trace = Trace::read(&out);
    assert_ballistic(&trace, false);
    assert!(trace.times().contains(&0.35));
}

#[test]
fn an_fmu_in_a_host_process_uses_event_mode_as_in_process() {
    // Ballistic isolated: instantiated in its host with eventModeUsed and
    // earlyReturnAllowed, its early returns and Event Mode reach the
    // master over the host's channel, and the trace is the in-process one,
    // byte for byte, bounces included.
    let dir = tempfile::tempdir().unwrap();
    let toml =
        |extra: &str| master("fixed-step", 0.1, 1.5, "") + &subsystem("ball", "Ballistic", extra);
    let (output, in_process, _) = run(dir.path(), "here.toml", &toml(""));
    ok(&output);
    let (output, hosted, log) = run(dir.path(), "hosted.toml", &toml("isolation = \"process\""));
    ok(&output);
    assert!(
        instantiation(&log, "ball").contains("eventModeUsed=1, earlyReturnAllowed=1"),
        "{log}"
    );
    assert_eq!(
        log.matches("] ball: fmi3EnterEventMode(").count(),
        2,
        "{log}"
    );
    let trace = |dir: &Path| std::fs::read(dir.join("trace.csv")).unwrap();
    assert_eq!(trace(&in_process), trace(&hosted));
    assert_ballistic(&Trace::read(&hosted), true);
}

#[test]
fn event_mode_where_it_cannot_be_is_refused_naming_the_subsystem_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            master("richardson", 0.1, 1.0, "")
                + &subsystem("ball", "Ballistic", "event_mode = true"),
            "the richardson master does not handle FMU events",
        ),
        (
            master("fixed-step", 0.1, 1.0, "") + &subsystem("g", "Gain", "event_mode = true"),
            "its FMU does not declare hasEventMode",
        ),
    ];
    for (i, (toml, why)) in cases.iter().enumerate() {
        let (output, _, _) = run(dir.path(), &format!("bad{i}.toml"), toml);
        let err = refused(&output, &[why, "event_mode = true"]);
        assert!(err.contains(&format!("bad{i}.toml:")), "{err}");
    }
    // Without asking: those run without event mode.
    let toml = master("richardson", 0.1, 1.0, "") + &subsystem("ball", "Ballistic", "");
    let (output, out, log) = run(dir.path(), "richardson.toml", &toml);
    ok(&output);
    assert!(
        instantiation(&log, "ball").contains("eventModeUsed=0"),
        "{log}"
    );
    assert_ballistic(&Trace::read(&out), false);
}
