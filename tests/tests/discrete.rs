//! Discrete coupling: FMI 2 Integer and Boolean (FMI 3 Int32 and Boolean)
//! connections, on the thermostat of scenarios/thermostat.toml (a room with
//! an exact-exponential heat balance, a hysteresis controller).
//!
//! The expected trace is computed here from the models' equations, for the
//! master's schedule (Jacobi or a Gauss-Seidel order, inputs held over each
//! step), and every row of the trace must match it: temperatures to 1e-12
//! relative, every discrete value exactly. The libcosim run of the same
//! system (tests/python/osp/thermostat) must give the same temperatures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use cosim_tests::{Table, run, scenario};

/// Parameters given to both models by every run (the FMUs' defaults are not
/// relied on).
const SET: &[&str] = &[
    "room.T_amb=10",
    "room.tau=60",
    "room.P_unit=12",
    "room.T0=15",
    "controller.T_low=19",
    "controller.T_high=21",
    "controller.T_boost=16",
];
const T_AMB: f64 = 10.0;
const TAU: f64 = 60.0;
const P_UNIT: f64 = 12.0;
const T0: f64 = 15.0;
const T_LOW: f64 = 19.0;
const T_HIGH: f64 = 21.0;
const T_BOOST: f64 = 16.0;
/// The controller starts with the heater on (its `on_start` default).
const ON_START: bool = true;
const STEP: f64 = 0.5;
const STOP: f64 = 600.0;

/// One trace row of the thermostat: what each column must hold.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    /// room.T at the row.
    t_room: f64,
    /// Inputs the room used over the step ending at the row.
    room_on: bool,
    room_level: i32,
    /// The temperature the controller used over the step ending at the row.
    t_seen: f64,
    /// Controller outputs at the row.
    on: bool,
    level: i32,
    switches: i32,
}

fn room_step(t: f64, on: bool, level: i32, h: f64) -> f64 {
    let q = if on { f64::from(level) * P_UNIT } else { 0.0 };
    let te = T_AMB + q;
    te + (t - te) * (-h / TAU).exp()
}

/// The controller at the end of a step over which it saw `t`.
fn controller_step(on: bool, switches: i32, t: f64) -> (bool, i32, i32) {
    let (on_new, sw) = if on && t > T_HIGH {
        (false, switches + 1)
    } else if !on && t < T_LOW {
        (true, switches + 1)
    } else {
        (on, switches)
    };
    (on_new, if t < T_BOOST { 2 } else { 1 }, sw)
}

fn level_at(t: f64) -> i32 {
    if t < T_BOOST { 2 } else { 1 }
}

/// The expected rows, Jacobi (`room_first = None`) or Gauss-Seidel with the
/// controller first (`Some(false)`: the room sees the controller's new
/// outputs in the same step).
fn expected(gauss_seidel_controller_first: bool) -> Vec<Row> {
    let n = (STOP / STEP).round() as usize;
    let mut rows = Vec::with_capacity(n + 1);
    let (mut t, mut on, mut level, mut sw) = (T0, ON_START, level_at(T0), 0);
    rows.push(Row {
        t_room: t,
        room_on: on,
        room_level: level,
        t_seen: t,
        on,
        level,
        switches: sw,
    });
    for _ in 0..n {
        let (on_new, level_new, sw_new) = controller_step(on, sw, t);
        let (room_on, room_level) = if gauss_seidel_controller_first {
            (on_new, level_new)
        } else {
            (on, level)
        };
        let t_new = room_step(t, room_on, room_level, STEP);
        rows.push(Row {
            t_room: t_new,
            room_on,
            room_level,
            t_seen: t,
            on: on_new,
            level: level_new,
            switches: sw_new,
        });
        (t, on, level, sw) = (t_new, on_new, level_new, sw_new);
    }
    rows
}

fn column<'a>(trace: &'a Table, name: &str) -> &'a [f64] {
    trace
        .column(name)
        .unwrap_or_else(|| panic!("the trace has no column '{name}'"))
}

/// Every row of `trace` against `want`.
fn assert_trace(trace: &Table, want: &[Row], what: &str) {
    let time = trace.time();
    assert_eq!(time.len(), want.len(), "{what}: number of rows");
    let cols = [
        "room.T",
        "room.heater_on",
        "room.level",
        "controller.T",
        "controller.heater_on",
        "controller.level",
        "controller.switches",
    ]
    .map(|c| column(trace, c));
    for (k, w) in want.iter().enumerate() {
        let t = time[k];
        let close = |got: f64, want: f64| (got - want).abs() <= 1e-12 * want.abs();
        assert!(
            close(cols[0][k], w.t_room),
            "{what}, t = {t}: room.T = {}, expected {}",
            cols[0][k],
            w.t_room
        );
        assert!(
            close(cols[3][k], w.t_seen),
            "{what}, t = {t}: controller.T = {}, expected {}",
            cols[3][k],
            w.t_seen
        );
        let discrete = [
            ("room.heater_on", cols[1][k], f64::from(u8::from(w.room_on))),
            ("room.level", cols[2][k], f64::from(w.room_level)),
            (
                "controller.heater_on",
                cols[4][k],
                f64::from(u8::from(w.on)),
            ),
            ("controller.level", cols[5][k], f64::from(w.level)),
            ("controller.switches", cols[6][k], f64::from(w.switches)),
        ];
        for (name, got, want) in discrete {
            assert_eq!(got, want, "{what}, t = {t}: {name}");
        }
    }
}

/// The expected run must exercise what it claims: boost, hysteresis in
/// both directions, several switches.
fn assert_exercised(want: &[Row]) {
    let last = want.last().unwrap();
    assert!(last.switches >= 4, "only {} switches", last.switches);
    assert!(want.iter().any(|r| r.level == 2) && want.iter().any(|r| r.level == 1));
    assert!(want.iter().any(|r| r.on) && want.iter().any(|r| !r.on));
}

/// scenarios/thermostat.toml with its FMUs replaced by the FMI 3.0 builds
/// and `extra` TOML appended to `[master]`.
fn variant(dir: &Path, fmi3: bool, master_extra: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(scenario("thermostat.toml")).unwrap();
    let dist = cosim_tests::fmus();
    let version = if fmi3 { "fmi3" } else { "fmi2" };
    text = text.replace(
        "\"../fmus/dist/fmi2/",
        &format!("\"{}/", dist.join(version).display()),
    );
    text = text.replace("extrapolation = 0\n", &format!("{master_extra}\n"));
    let path = dir.join(format!("thermostat_{version}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn jacobi_trace_matches_the_models_equations_fmi2_and_fmi3() {
    let want = expected(false);
    assert_exercised(&want);
    let dir = tempfile::tempdir().unwrap();
    for fmi3 in [false, true] {
        let s = variant(dir.path(), fmi3, "extrapolation = 0");
        let r = run(&s, SET, None, None);
        assert!(r.error.is_none(), "{:?}", r.error);
        let what = if fmi3 { "FMI 3.0" } else { "FMI 2.0" };
        assert_trace(&r.trace(), &want, what);
    }
}

#[test]
fn discrete_inputs_are_held_whatever_the_extrapolation_order() {
    // The room interpolates inputs, so with extrapolation 2 it would get
    // input derivatives, and its inputs are all discrete: a derivative set
    // on one is an FMU error, a value moved off the held one breaks the
    // recurrence.
    let want = expected(false);
    let dir = tempfile::tempdir().unwrap();
    let s = variant(dir.path(), false, "extrapolation = 2");
    let r = run(&s, SET, None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_trace(&r.trace(), &want, "Jacobi, extrapolation 2");
}

#[test]
fn gauss_seidel_passes_fresh_discrete_values_unchanged() {
    // Controller first: the room steps with the controller's new outputs.
    // With extrapolation 1 a fresh float input would be interpolated
    // through its new value; a discrete one must be the new value itself.
    let want = expected(true);
    assert_ne!(want, expected(false), "the schedules must differ");
    let dir = tempfile::tempdir().unwrap();
    let s = variant(
        dir.path(),
        false,
        "scheme = \"gauss-seidel\"\norder = [\"controller\", \"room\"]\nextrapolation = 1",
    );
    let text = std::fs::read_to_string(&s)
        .unwrap()
        .replace("scheme = \"jacobi\"\n", "");
    std::fs::write(&s, text).unwrap();
    let r = run(&s, SET, None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_trace(&r.trace(), &want, "Gauss-Seidel, controller first");
}

#[test]
fn trace_writes_discrete_values_as_integers() {
    let dir = tempfile::tempdir().unwrap();
    let s = variant(dir.path(), false, "extrapolation = 0");
    let r = run(&s, SET, Some(2.0), None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let text = std::fs::read_to_string(r.dir.path().join("trace.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cell = |name: &str| {
        let c = header
            .iter()
            .position(|h| cosim_core::metrics::strip_unit(h) == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
        first[c]
    };
    assert_eq!(cell("controller.heater_on"), "1");
    assert_eq!(cell("controller.level"), "2");
    assert_eq!(cell("controller.switches"), "0");
    assert_eq!(cell("room.T").parse::<f64>().unwrap(), T0);
}

#[test]
fn libcosim_runs_the_same_discrete_coupling() {
    let want = expected(false);
    let dir = tempfile::tempdir().unwrap();
    // Our run, from the TOML scenario and from the OSP file libcosim reads.
    let ours = run(&scenario("thermostat.toml"), SET, None, None);
    assert!(ours.error.is_none(), "{:?}", ours.error);
    assert_trace(&ours.trace(), &want, "cosim");
    let osp = cosim_tests::root().join("tests/python/osp/thermostat");
    // libcosim: the FMUs' parameter defaults are the values of SET.
    let out = dir.path().join("libcosim.csv");
    let res = Command::new(cosim_tests::python())
        .arg(cosim_tests::root().join("tests/python/libcosim_b1.py"))
        .arg(&out)
        .args([
            "--stop",
            &STOP.to_string(),
            "--step",
            &STEP.to_string(),
            "--osp",
        ])
        .arg(&osp)
        .output()
        .expect("running tests/python/libcosim_b1.py");
    assert!(
        res.status.success(),
        "libcosim_b1.py failed (libcosimpy installed? `cargo xtask test` installs it into .venv/):\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let theirs = Table::read(&out).unwrap();
    let trace = ours.trace();
    // 0.5 s is exact in binary and in nanoseconds: both masters hand the
    // FMUs the same communication points, so the temperatures (which carry
    // every Boolean and Integer value the room received) are bit-identical.
    for name in ["room.T", "controller.T"] {
        assert_eq!(column(&theirs, name), column(&trace, name), "{name}");
    }
    assert_eq!(theirs.time(), trace.time());
}

#[test]
fn osp_file_runs_like_the_toml_scenario() {
    let osp = cosim_tests::root().join("tests/python/osp/thermostat/OspSystemStructure.xml");
    let dir = tempfile::tempdir().unwrap();
    let out = cosim_tests::cosim(&[
        "run",
        osp.to_str().unwrap(),
        "--stop",
        "600",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = Table::read(&dir.path().join("trace.csv")).unwrap();
    let want = expected(false);
    // The OSP run traces every output; compare what it has.
    for (name, k) in [("room.T", 0usize), ("controller.switches", 1)] {
        let col = column(&trace, name);
        assert_eq!(col.len(), want.len());
        for (i, w) in want.iter().enumerate() {
            let expect = if k == 0 {
                w.t_room
            } else {
                f64::from(w.switches)
            };
            assert!(
                (col[i] - expect).abs() <= 1e-12 * expect.abs().max(1.0),
                "{name} row {i}"
            );
        }
    }
}

#[test]
fn process_isolation_carries_discrete_values_bit_identically() {
    // Both FMUs in child processes: the host sorts the slots by FMI type
    // on its side, the shared-memory channel carries them as f64.
    let want = expected(false);
    let dir = tempfile::tempdir().unwrap();
    let s = variant(
        dir.path(),
        false,
        "extrapolation = 0\nisolation = \"process\"",
    );
    let out_dir = dir.path().join("out");
    let mut args = vec![
        "run",
        s.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ];
    for set in SET {
        args.extend(["--set", set]);
    }
    let out = cosim_tests::cosim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_trace(&trace, &want, "isolated");
}

#[test]
fn gain_on_a_boolean_connection_is_an_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = variant(dir.path(), false, "extrapolation = 0");
    let text = std::fs::read_to_string(&s).unwrap().replace(
        "to = \"room.heater_on\"\n",
        "to = \"room.heater_on\"\ngain = 2.0\n",
    );
    std::fs::write(&s, text.clone()).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("gain = 2.0"))
        .unwrap()
        + 1;
    let out = cosim_tests::cosim(&["check", s.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'gain' and 'offset' apply to floating-point connections only")
            && err.contains("controller.heater_on")
            && err.contains("Boolean")
            && err.contains(&format!(":{line}:")),
        "{err}"
    );
}

#[test]
fn a_nest_exposes_discrete_outputs_and_passes_them_through_unchanged() {
    // The controller inside a nested system (same step), the room outside:
    // Boolean and Integer values cross the nest boundary as they are, so
    // the trace is the flat Jacobi trace.
    let want = expected(false);
    let dir = tempfile::tempdir().unwrap();
    let dist = cosim_tests::fmus().join("fmi2");
    let scenario = dir.path().join("nested.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"[simulation]
stop = {STOP}

[master]
step = {STEP}

[[subsystems]]
name = "room"
fmu = "{room}"

[[subsystems]]
name = "ctl"
exposes = ["controller.T", "controller.heater_on", "controller.level"]

[subsystems.system.master]
step = {STEP}

[[subsystems.system.subsystems]]
name = "controller"
fmu = "{controller}"

[[connections]]
from = "room.T"
to = "ctl.controller.T"

[[connections]]
from = "ctl.controller.heater_on"
to = "room.heater_on"

[[connections]]
from = "ctl.controller.level"
to = "room.level"

[outputs]
variables = ["room.T", "room.heater_on", "room.level", "ctl.controller.switches"]
"#,
            room = dist.join("ThermostatRoom.fmu").display(),
            controller = dist.join("ThermostatController.fmu").display(),
        ),
    )
    .unwrap();
    let set: Vec<&str> = SET
        .iter()
        .copied()
        .filter(|s| s.starts_with("room."))
        .collect();
    let r = run(&scenario, &set, None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let trace = r.trace();
    let (t, on, level, sw) = (
        column(&trace, "room.T"),
        column(&trace, "room.heater_on"),
        column(&trace, "room.level"),
        column(&trace, "ctl.controller.switches"),
    );
    assert_eq!(t.len(), want.len());
    for (k, w) in want.iter().enumerate() {
        assert!(
            (t[k] - w.t_room).abs() <= 1e-12 * w.t_room,
            "row {k}: room.T"
        );
        assert_eq!(
            on[k],
            f64::from(u8::from(w.room_on)),
            "row {k}: room.heater_on"
        );
        assert_eq!(level[k], f64::from(w.room_level), "row {k}: room.level");
        assert_eq!(sw[k], f64::from(w.switches), "row {k}: switches");
    }
}
