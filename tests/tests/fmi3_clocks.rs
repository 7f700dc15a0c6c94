//! FMI 3 Clocks in Co-Simulation end to end (docs/events.md, *Clocks*):
//! the kit's strict `ClockedController`, a PI controller partition on a
//! constant periodic input Clock `tick` (T = 0.1 s; clocked input `x`,
//! clocked output `u`), coupled to the kit's `Integrator` plant
//! (x' = u). At every tick cosim enters Event Mode, activates the Clock,
//! sets x, reads u, updates; between ticks u holds and x is not set. The
//! trace is checked against the sampled system computed by hand: with u
//! held over each interval the integrator is exact, so
//! x_(k+1) = x_k + T u_k, I_k = I_(k-1) + T x_k, u_k = -(kp x_k + ki I_k).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_tests::{cosim, fmi3};

const T: f64 = 0.1;
const KP: f64 = 2.0;
const KI: f64 = 1.0;
const X0: f64 = 1.0;

/// The trace's columns and rows.
fn trace(dir: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

/// x_k and u_k of the sampled loop for k = 0..n.
fn sampled(n: usize) -> Vec<(f64, f64)> {
    let (mut x, mut integral) = (X0, 0.0);
    let mut out = Vec::new();
    for _ in 0..=n {
        integral += T * x;
        let u = -(KP * x + KI * integral);
        out.push((x, u));
        x += T * u;
    }
    out
}

/// A run of a scenario: what `cosim run` said, its trace, its FMI calls.
struct Run {
    header: Vec<String>,
    rows: Vec<Vec<f64>>,
    calls: String,
}

impl Run {
    /// The index of trace column `name`.
    fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name}: {:?}", self.header))
    }
}

/// Writes `body` after a fixed-step master of `step` to 1 s as `dir/name`
/// and runs it with the FMI call log; the output and, where it succeeded,
/// the trace and calls.
fn run(dir: &Path, name: &str, step: f64, body: &str) -> (std::process::Output, Option<Run>) {
    let scenario = dir.join(name);
    std::fs::write(
        &scenario,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nkind = \"fixed-step\"\nstep = {step}\n\n{body}"
        ),
    )
    .unwrap();
    let out = dir.join(format!("{name}.out"));
    let log = dir.join(format!("{name}.calls.log"));
    let output = cosim(&[
        "run",
        "--no-progress",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        &format!("--log-fmi-calls={}", log.display()),
    ]);
    if output.status.code() != Some(0) {
        return (output, None);
    }
    let (header, rows) = trace(&out);
    let calls = std::fs::read_to_string(&log).unwrap();
    (
        output,
        Some(Run {
            header,
            rows,
            calls,
        }),
    )
}

/// [`run`], which must succeed with no call refused.
#[track_caller]
fn run_ok(dir: &Path, name: &str, step: f64, body: &str) -> Run {
    let (output, run) = run(dir, name, step, body);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains("Illegal call sequence"), "{err}");
    run.unwrap()
}

/// A subsystem table.
fn subsystem(name: &str, model: &str, extra: &str) -> String {
    format!(
        "[[subsystems]]\nname = \"{name}\"\nfmu = \"{}\"\n{extra}\n\n",
        fmi3(model).display()
    )
}

/// A connection table.
fn connection(from: &str, to: &str) -> String {
    format!("[[connections]]\nfrom = \"{from}\"\nto = \"{to}\"\n\n")
}

#[test]
fn a_clocked_controller_samples_its_plant_at_its_ticks() {
    let dir = tempfile::tempdir().unwrap();
    let reference = sampled(10);
    // On the grid (0.1), finer (0.05), and off it (0.03: every tick ends a
    // step of its own).
    let body = subsystem("ctrl", "ClockedController", "")
        + &subsystem(
            "plant",
            "Integrator",
            &format!("parameters = {{ x0 = {X0} }}"),
        )
        + &connection("plant.x", "ctrl.x")
        + &connection("ctrl.u", "plant.u");
    for step in [0.1, 0.05, 0.03] {
        let r = run_ok(dir.path(), &format!("loop_{step}.toml"), step, &body);
        let rows = &r.rows;
        let (t, u, x) = (r.col("time [s]"), r.col("ctrl.u"), r.col("plant.x"));
        for (k, &(xk, uk)) in reference.iter().enumerate() {
            let tk = (k as f64 * T * 1e9).round() / 1e9;
            let row = rows
                .iter()
                .find(|r| r[t] == tk)
                .unwrap_or_else(|| panic!("step {step}: no row at the tick {tk}"));
            assert!(
                (row[x] - xk).abs() <= 1e-12,
                "step {step}: x at {tk}: {} vs {xk}",
                row[x]
            );
            assert!(
                (row[u] - uk).abs() <= 1e-12,
                "step {step}: u at {tk}: {} vs {uk}",
                row[u]
            );
        }
        // Between the ticks u holds u_k, and x moves with it.
        for row in rows {
            let k = ((row[t] / T) + 1e-9).floor() as usize;
            let (xk, uk) = reference[k.min(10)];
            assert!((row[u] - uk).abs() <= 1e-12, "step {step}: u at {}", row[t]);
            let dt = row[t] - k as f64 * T;
            assert!(
                (row[x] - (xk + dt * uk)).abs() <= 1e-9,
                "step {step}: x at {}",
                row[t]
            );
        }
        // The calls at every tick: Event Mode, the Clock, x set, u read,
        // the update, Step Mode.
        let calls = &r.calls;
        let ticks = calls
            .lines()
            .filter(|l| l.contains("] ctrl: fmi3SetClock("))
            .count();
        assert_eq!(ticks, 11, "step {step}: ticks at 0, 0.1, ... 1.0:\n{calls}");
    }
}

#[test]
fn an_output_clock_is_read_at_the_event_and_its_clocked_output_with_it() {
    // ThresholdTrigger ticks its output Clock `crossed` at the end of the
    // step whose input (the value set at its start) first reaches the
    // threshold: x = t (an Integrator of the constant 1), threshold 0.45,
    // steps of 0.1: x_4 = 0.4 < 0.45 <= x_5 = 0.5, so the step from 0.5
    // ends with the tick, at 0.6. `count` (clocked by it) is read there.
    let dir = tempfile::tempdir().unwrap();
    let body = subsystem("ramp", "Integrator", "start = { u = 1.0 }")
        + &subsystem(
            "trig",
            "ThresholdTrigger",
            "parameters = { threshold = 0.45 }",
        )
        + &connection("ramp.x", "trig.x");
    let r = run_ok(dir.path(), "trigger.toml", 0.1, &body);
    let (t, count) = (r.col("time [s]"), r.col("trig.count"));
    for row in &r.rows {
        let expected = if row[t] >= 0.6 - 1e-9 { 1.0 } else { 0.0 };
        assert_eq!(row[count], expected, "count at {}: {:?}", row[t], r.rows);
    }
    let ticked: Vec<&str> = r
        .calls
        .lines()
        .filter(|l| l.contains("] trig: fmi3GetClock(") && l.contains("values={1}"))
        .collect();
    assert_eq!(ticked.len(), 1, "{}", r.calls);
    // The tick's Event Mode follows the step that ended at 0.6.
    let at = r.calls.find(ticked[0]).unwrap();
    let last_step = r.calls[..at]
        .lines()
        .rev()
        .find(|l| l.contains("] trig: fmi3DoStep("))
        .unwrap();
    assert!(
        last_step.contains("currentCommunicationPoint=0.5")
            && last_step.contains("eventHandlingNeeded=1"),
        "{last_step}"
    );
}

#[test]
fn an_output_clock_activates_a_connected_triggered_clock_and_ticks_are_traced() {
    // ThresholdTrigger's `crossed` (ticks at 0.6, as above) activates
    // ClockedCounter's triggered `trigger` in the same instant: its `n`
    // counts it and `held` takes `value` (the ramp, 0.6) there. The trace
    // shows each Clock as 1 at its tick and 0 elsewhere.
    let dir = tempfile::tempdir().unwrap();
    let body = subsystem("ramp", "Integrator", "start = { u = 1.0 }")
        + &subsystem(
            "trig",
            "ThresholdTrigger",
            "parameters = { threshold = 0.45 }",
        )
        + &subsystem("cnt", "ClockedCounter", "")
        + &connection("ramp.x", "trig.x")
        + &connection("trig.crossed", "cnt.trigger")
        + &connection("ramp.x", "cnt.value")
        + "[outputs]\nvariables = [\"trig.crossed\", \"cnt.trigger\", \"cnt.n\", \"cnt.held\"]\n";
    let (output, run) = run(dir.path(), "counter.toml", 0.1, &body);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!err.contains("no connection activates"), "{err}");
    let r = run.unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        r.header,
        [
            "time [s]",
            "trig.crossed",
            "cnt.trigger",
            "cnt.n",
            "cnt.held"
        ]
    );
    for row in &r.rows {
        let at_tick = (row[0] - 0.6).abs() < 1e-9;
        let after = row[0] > 0.6 - 1e-9;
        let tick = if at_tick { 1.0 } else { 0.0 };
        assert_eq!((row[1], row[2]), (tick, tick), "the Clocks at {}", row[0]);
        assert_eq!(row[3], if after { 1.0 } else { 0.0 }, "n at {}", row[0]);
        let held = if after { 0.6 } else { 0.0 };
        assert!(
            (row[4] - held).abs() <= 1e-12,
            "held at {}: {}",
            row[0],
            row[4]
        );
    }
}

#[test]
fn a_connection_to_a_clock_its_fmu_schedules_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let body = subsystem("trig", "ThresholdTrigger", "")
        + &subsystem("ctrl", "ClockedController", "")
        + &connection("trig.crossed", "ctrl.tick");
    let (output, _) = run(dir.path(), "bad.toml", 0.1, &body);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("bad.toml:") && err.contains("'ctrl.tick' is a constant input Clock"),
        "{err}"
    );
}

#[test]
fn a_scheduled_execution_fmu_has_its_partitions_activated_in_priority_order() {
    // The kit's Partitions (Scheduled Execution only): `fast` (0.1 s,
    // priority 1) and `slow` (0.2 s, priority 2). At 0, 0.2, 0.4, ... both
    // tick: fast is activated first, so `pair` (10 x the id before + the
    // id: fast 1, slow 2) is 12 after them, 21 after a lone fast tick.
    // `y` = gain slow_n, `gain` (clocked by slow) the ramp x = t set before
    // each slow activation.
    let dir = tempfile::tempdir().unwrap();
    let body = subsystem("ramp", "Integrator", "start = { u = 1.0 }")
        + &subsystem("p", "Partitions", "")
        + &connection("ramp.x", "p.gain")
        + "[outputs]\nvariables = [\"p.fast\", \"p.slow\", \"p.fast_n\", \"p.slow_n\", \"p.pair\", \"p.y\"]\n";
    let r = run_ok(dir.path(), "partitions.toml", 0.05, &body);
    assert_eq!(
        r.header,
        [
            "time [s]", "p.fast", "p.slow", "p.fast_n", "p.slow_n", "p.pair", "p.y"
        ]
    );
    for row in &r.rows {
        let t = row[0];
        let fast_n = (t / 0.1 + 1e-9).floor() + 1.0;
        let slow_n = (t / 0.2 + 1e-9).floor() + 1.0;
        let on_fast = ((t / 0.1).round() * 0.1 - t).abs() < 1e-9;
        let on_slow = ((t / 0.2).round() * 0.2 - t).abs() < 1e-9;
        // (The last activation before t was a lone fast one when fast_n
        // is even.)
        let pair = if (fast_n as i64) % 2 == 0 { 21.0 } else { 12.0 };
        let y = (slow_n - 1.0) * 0.2 * slow_n;
        let want = [
            f64::from(u8::from(on_fast)),
            f64::from(u8::from(on_slow)),
            fast_n,
            slow_n,
            pair,
        ];
        assert_eq!(&row[1..6], &want, "at {t}: {row:?}");
        assert!((row[6] - y).abs() <= 1e-12, "y at {t}: {} vs {y}", row[6]);
    }
    // The calls: no doStep, a fmi3ActivateModelPartition per tick, fast
    // before slow where both tick.
    let calls = &r.calls;
    assert!(
        calls.contains("fmi3InstantiateScheduledExecution("),
        "{calls}"
    );
    assert!(!calls.contains("] p: fmi3DoStep("), "{calls}");
    let activations: Vec<&str> = calls
        .lines()
        .filter(|l| l.contains("] p: fmi3ActivateModelPartition("))
        .collect();
    assert_eq!(activations.len(), 11 + 6, "{calls}");
    assert!(
        activations[0].contains("/* fast */") && activations[1].contains("/* slow */"),
        "{activations:?}"
    );
}

#[test]
fn check_runs_fmus_with_clocks_in_its_own_process_saying_so() {
    // `cosim check` initialises every FMU in a host process, but hosts do
    // not run Clocks or Scheduled Execution yet: those FMUs are checked
    // here, each named in a warning; the others still in hosts.
    let root = cosim_tests::root();
    let out = cosim(&[
        "check",
        root.join("scenarios/scheduled_partitions.toml")
            .to_str()
            .unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("subsystem 'p' runs in this process, not in a host process as asked for the whole run: its FMU has Clocks or runs Scheduled Execution"),
        "{err}"
    );
    assert!(
        !err.contains("subsystem 'ramp' runs in this process"),
        "{err}"
    );
}

#[test]
fn a_nested_level_ends_its_steps_at_its_clock_ticks() {
    // The controller loop as a nested system stepped by 0.25 s (inner
    // steps of 0.25 s too): the ticks at 0.1, 0.2, 0.3, ... end inner
    // steps (the strict controller refuses an activation off its grid),
    // and the outer rows show the sampled loop in between ticks.
    let dir = tempfile::tempdir().unwrap();
    let inner = |table: &str, body: String| body.replace("[[subsystems]]", table);
    let body = format!(
        "[[subsystems]]\nname = \"nest\"\nexposes = [\"plant.x\", \"ctrl.u\"]\n\n\
         [subsystems.system.master]\nstep = 0.25\n\n{}{}",
        inner(
            "[[subsystems.system.subsystems]]",
            subsystem("ctrl", "ClockedController", "")
                + &subsystem(
                    "plant",
                    "Integrator",
                    &format!("parameters = {{ x0 = {X0} }}")
                )
        ),
        (connection("plant.x", "ctrl.x") + &connection("ctrl.u", "plant.u"))
            .replace("[[connections]]", "[[subsystems.system.connections]]"),
    );
    let r = run_ok(dir.path(), "nested.toml", 0.25, &body);
    let reference = sampled(10);
    let (t, x, u) = (
        r.col("time [s]"),
        r.col("nest.plant.x"),
        r.col("nest.ctrl.u"),
    );
    assert_eq!(r.rows.len(), 5, "{:?}", r.rows);
    for row in &r.rows {
        let k = ((row[t] / T) + 1e-9).floor() as usize;
        let (xk, uk) = reference[k];
        let dt = row[t] - k as f64 * T;
        assert!(
            (row[x] - (xk + dt * uk)).abs() <= 1e-9,
            "x at {}: {row:?}",
            row[t]
        );
        assert!((row[u] - uk).abs() <= 1e-12, "u at {}: {row:?}", row[t]);
    }
}
