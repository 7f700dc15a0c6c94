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
    run_to(dir, name, 1.0, step, body)
}

/// [`run`] to `stop`.
fn run_to(
    dir: &Path,
    name: &str,
    stop: f64,
    step: f64,
    body: &str,
) -> (std::process::Output, Option<Run>) {
    let scenario = dir.join(name);
    std::fs::write(
        &scenario,
        format!(
            "[simulation]\nstop = {stop}\n\n[master]\nkind = \"fixed-step\"\nstep = {step}\n\n{body}"
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
    run_ok_to(dir, name, 1.0, step, body)
}

/// [`run_to`], which must succeed with no call refused.
#[track_caller]
fn run_ok_to(dir: &Path, name: &str, stop: f64, step: f64, body: &str) -> Run {
    let (output, run) = run_to(dir, name, stop, step, body);
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
fn a_clocked_controller_run_as_scheduled_execution_samples_its_plant_alike() {
    // ClockedController declares Co-Simulation and Scheduled Execution:
    // `interface = "scheduled-execution"` activates its partition at each
    // tick (x set before, u read after, no step), which gives the same
    // sampled loop as event mode, to the last bit.
    let dir = tempfile::tempdir().unwrap();
    let plant = subsystem(
        "plant",
        "Integrator",
        &format!("parameters = {{ x0 = {X0} }}"),
    );
    let wiring = connection("plant.x", "ctrl.x") + &connection("ctrl.u", "plant.u");
    let event_mode = subsystem("ctrl", "ClockedController", "") + &plant + &wiring;
    let scheduled = subsystem(
        "ctrl",
        "ClockedController",
        "interface = \"scheduled-execution\"",
    ) + &plant
        + &wiring;
    for step in [0.1, 0.03] {
        let a = run_ok(dir.path(), &format!("cs_{step}.toml"), step, &event_mode);
        let b = run_ok(dir.path(), &format!("se_{step}.toml"), step, &scheduled);
        assert_eq!(a.header, b.header);
        assert_eq!(a.rows, b.rows, "step {step}");
        assert!(b.calls.contains("ctrl: fmi3InstantiateScheduledExecution("));
        assert!(!b.calls.contains("ctrl: fmi3DoStep("), "{}", b.calls);
        let activations = b
            .calls
            .lines()
            .filter(|l| l.contains("ctrl: fmi3ActivateModelPartition("))
            .count();
        assert_eq!(activations, 11, "step {step}");
    }
    // An FMU without the interface: the error names the subsystem and
    // what the FMU declares.
    let body = subsystem("plant", "Integrator", "interface = \"scheduled-execution\"");
    let (out, _) = run(dir.path(), "no_se.toml", 0.1, &body);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("subsystem 'plant' runs the FMU's Scheduled Execution interface, which the FMU does not declare (it declares <CoSimulation> only)"),
        "{err}"
    );
    assert!(err.contains("no_se.toml:"), "{err}");
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
fn clocks_and_scheduled_execution_run_in_host_processes_as_in_process() {
    // `--isolation process` puts every FMU in a host: Clocks, Clock
    // connections, Scheduled Execution and Clock Update Mode run there, and
    // each trace is the in-process one, byte for byte. `cosim check`
    // (hosts for all) accepts them without keeping any in this process.
    let root = cosim_tests::root();
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "clocks_trigger",
        "scheduled_partitions",
        "scheduled_countdown",
    ] {
        let scenario = root.join(format!("scenarios/{name}.toml"));
        let trace = |isolation: &[&str]| {
            let out = dir.path().join(format!("{name}{}", isolation.len()));
            let mut args = vec!["run", "--no-progress", scenario.to_str().unwrap()];
            args.extend_from_slice(isolation);
            args.extend_from_slice(&["--out", out.to_str().unwrap()]);
            let output = cosim(&args);
            let err = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(0), "{name}: {err}");
            assert!(!err.contains("runs in this process"), "{name}: {err}");
            std::fs::read(out.join("trace.csv")).unwrap()
        };
        assert_eq!(trace(&[]), trace(&["--isolation", "process"]), "{name}");
        let out = cosim(&["check", scenario.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {err}");
        assert!(!err.contains("runs in this process"), "{name}: {err}");
    }
    // The controller loop with the controller alone in a host.
    let body = |isolation: &str| {
        subsystem("ctrl", "ClockedController", isolation)
            + &subsystem(
                "plant",
                "Integrator",
                &format!("parameters = {{ x0 = {X0} }}"),
            )
            + &connection("plant.x", "ctrl.x")
            + &connection("ctrl.u", "plant.u")
    };
    let here = run_ok(dir.path(), "loop.toml", 0.03, &body(""));
    let hosted = run_ok(
        dir.path(),
        "loop_hosted.toml",
        0.03,
        &body("isolation = \"process\""),
    );
    assert_eq!(here.rows, hosted.rows);
    for calls in [&here.calls, &hosted.calls] {
        assert_eq!(calls.matches("ctrl: fmi3SetClock(").count(), 11, "{calls}");
    }
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

/// Whether `t` is on the grid of `k * 1e-9` within rounding: `a == b`.
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn scheduled_execution_runs_countdown_and_output_clocks_in_clock_update_mode() {
    // Two kit `CountdownPartitions` (the behaviour of the Reference FMUs'
    // `Clocks`): inClock1 ticks every second; the partition of inClock1
    // at t = 4 arms the countdown Clock inClock3 with interval 0 and
    // ticks the output Clock outClock whenever the activations so far
    // (`totalInClockTicks`) reach a multiple of 5; both are said in Clock
    // Update Mode, inside fmi3ActivateModelPartition. a's outClock
    // triggers b's inClock2, whose partition adds b's input2 (a's total)
    // to result2.
    //
    // a: total = k + 1 (+1 from t = 4, inClock3): 5 at t = 4 (partition
    // 1, before partition 3), 10 at t = 8: outClock ticks at 4 and 8.
    // b: also inClock2 at 4 and 8 (after its own partitions there):
    // total 5 at t = 4 (tick), 6, 7; 10 at t = 7 (tick); result2 = 6
    // (a's total at 4), then 16.
    let dir = tempfile::tempdir().unwrap();
    let body = subsystem("a", "CountdownPartitions", "")
        + &subsystem("b", "CountdownPartitions", "")
        + &connection("a.outClock", "b.inClock2")
        + &connection("a.totalInClockTicks", "b.input2")
        + "[outputs]\nvariables = [\"a.*\", \"b.*\"]\n";
    let r = run_ok_to(dir.path(), "countdown.toml", 9.0, 0.5, &body);
    assert_eq!(r.rows.len(), 19, "{:?}", r.rows);
    let at = |row: &[f64], name: &str| row[r.col(name)];
    for row in &r.rows {
        let t = row[0];
        let k = (t + 1e-9).floor();
        let (from4, from8) = (f64::from(u8::from(k >= 4.0)), f64::from(u8::from(k >= 8.0)));
        let tick = |times: &[f64]| f64::from(u8::from(times.iter().any(|&x| same(x, t))));
        let want_a = [
            ("a.inClock1Ticks", k + 1.0),
            ("a.inClock2Ticks", 0.0),
            ("a.inClock3Ticks", from4),
            ("a.totalInClockTicks", k + 1.0 + from4),
            ("a.output3", 1000.0 * from4),
            ("a.result2", 0.0),
            ("a.outClock", tick(&[4.0, 8.0])),
        ];
        let want_b = [
            ("b.inClock1Ticks", k + 1.0),
            ("b.inClock2Ticks", from4 + from8),
            ("b.inClock3Ticks", from4),
            ("b.totalInClockTicks", k + 1.0 + 2.0 * from4 + from8),
            ("b.result2", 6.0 * from4 + 10.0 * from8),
            ("b.outClock", tick(&[4.0, 7.0])),
            ("b.inClock2", tick(&[4.0, 8.0])),
        ];
        for (name, want) in want_a.iter().chain(&want_b) {
            assert_eq!(at(row, name), *want, "{name} at t = {t}: {row:?}");
        }
    }
    // The call sequence: Clock Update Mode inside the activations that
    // armed inClock3 or ticked outClock; the countdown's partition after
    // inClock1's at t = 4, b's inClock2 after both.
    let calls = &r.calls;
    assert!(!calls.contains("fmi3DoStep("), "{calls}");
    let at4: Vec<&str> = calls
        .lines()
        .filter(|l| l.contains("fmi3ActivateModelPartition(") && l.contains("activationTime=4"))
        .collect();
    let names: Vec<(&str, &str)> = at4
        .iter()
        .map(|l| {
            let who = if l.contains("] a: ") { "a" } else { "b" };
            let clock = ["inClock1", "inClock2", "inClock3"]
                .into_iter()
                .find(|c| l.contains(&format!("/* {c} */")))
                .unwrap_or("?");
            (who, clock)
        })
        .collect();
    assert_eq!(
        names,
        [
            ("a", "inClock1"),
            ("a", "inClock3"),
            ("b", "inClock1"),
            ("b", "inClock3"),
            ("b", "inClock2")
        ],
        "{at4:#?}"
    );
    let updates = |function: &str| {
        calls
            .lines()
            .filter(|l| l.contains(function) && l.contains("in Clock Update Mode"))
            .count()
    };
    // (a: at 4 (countdown armed and outClock) and 8; b: at 4 and 7.)
    assert_eq!(updates("a: fmi3GetClock("), 2, "{calls}");
    assert_eq!(updates("b: fmi3GetClock("), 2, "{calls}");
    assert!(updates("a: fmi3GetIntervalDecimal(") >= 1, "{calls}");
}

/// The activations of the kit's `AperiodicClocks` up to `stop`: `sample`
/// (fixed, interval 0.25 and shift 0.1 from the FMU), `burst`
/// (changing: 0.1, then intervals 0.2, 0.3, ...) and `delayed` (countdown,
/// armed by each burst with `delay`).
fn aperiodic_ticks(stop: f64, delay: f64) -> [Vec<f64>; 3] {
    let sample: Vec<f64> = (0..)
        .map(|j| 0.1 + 0.25 * f64::from(j))
        .take_while(|&t| t <= stop + 1e-9)
        .collect();
    let mut burst = vec![0.1];
    while let Some(&last) = burst.last() {
        let next = last + 0.1 * (burst.len() as f64 + 1.0);
        if next > stop + 1e-9 {
            break;
        }
        burst.push(next);
    }
    let delayed = burst
        .iter()
        .map(|b| b + delay)
        .filter(|&t| t <= stop + 1e-9)
        .collect();
    [sample, burst, delayed]
}

#[test]
fn fixed_changing_and_countdown_clocks_tick_where_the_fmu_says() {
    // The FMU gives `sample`'s interval and shift (no intervalDecimal),
    // `burst`'s next interval after each activation, and arms `delayed`
    // at each burst; cosim asks them with fmi3GetIntervalDecimal /
    // fmi3GetShiftDecimal and activates each Clock exactly there (the
    // strict FMU refuses any other time), on the grid and off it. With
    // delay = 0 the countdown ticks in the burst's own instant.
    let dir = tempfile::tempdir().unwrap();
    for (step, delay) in [(0.05, 0.05), (0.03, 0.05), (0.05, 0.0)] {
        let body = subsystem(
            "c",
            "AperiodicClocks",
            &format!("parameters = {{ delay = {delay} }}"),
        ) + "[outputs]\nvariables = [\"c.*\"]\n";
        let name = format!("aperiodic_{step}_{delay}.toml");
        let r = run_ok(dir.path(), &name, step, &body);
        let [sample, burst, delayed] = aperiodic_ticks(1.0, delay);
        let count = |ticks: &[f64], t: f64| ticks.iter().filter(|&&x| x <= t + 1e-9).count() as f64;
        let last = |ticks: &[f64], t: f64| {
            ticks
                .iter()
                .copied()
                .rfind(|&x| x <= t + 1e-9)
                .unwrap_or(0.0)
        };
        for ticks in [&sample, &burst, &delayed] {
            for &tk in ticks {
                assert!(
                    r.rows.iter().any(|row| same(row[0], tk)),
                    "step {step}: no row at the tick {tk}"
                );
            }
        }
        for row in &r.rows {
            let t = row[0];
            let is = |ticks: &[f64]| f64::from(u8::from(ticks.iter().any(|&x| same(x, t))));
            let want = [
                ("c.sample", is(&sample)),
                ("c.sample_n", count(&sample, t)),
                ("c.burst", is(&burst)),
                ("c.burst_n", count(&burst, t)),
                ("c.burst_t [s]", last(&burst, t)),
                ("c.delayed", is(&delayed)),
                ("c.delayed_n", count(&delayed, t)),
                ("c.delayed_t [s]", last(&delayed, t)),
            ];
            for (col, want) in want {
                let got = row[r.col(col)];
                assert!(
                    (got - want).abs() <= 1e-9,
                    "step {step}, delay {delay}: {col} at {t}: {got} vs {want}"
                );
            }
        }
        let calls = &r.calls;
        assert!(calls.contains("c: fmi3GetShiftDecimal("), "{calls}");
        let sets = calls
            .lines()
            .filter(|l| l.contains("c: fmi3SetClock("))
            .count();
        assert!(sets >= 1, "{calls}");
    }
}

#[test]
fn scheduled_execution_under_a_master_that_handles_no_events_is_refused() {
    // Its partitions run only at events: a master that rolls back (here
    // IFOSMONDI) would never activate them, so the scenario is refused,
    // naming the subsystem, its line and the masters that do.
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("se_ifosmondi.toml");
    std::fs::write(
        &scenario,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nkind = \"ifosmondi\"\nstep = 0.1\n\n{}",
            subsystem("p", "Partitions", "")
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = cosim(&[
        "run",
        "--no-progress",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("se_ifosmondi.toml:8:1: error: subsystem 'p' runs its FMU's Scheduled Execution interface")
            && err.contains("the ifosmondi master does not handle those events"),
        "{err}"
    );
}
