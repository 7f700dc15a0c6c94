//! Timed events (issue 25): `[[events]]` and libcosim's scenario files
//! override, bias and reset inputs and outputs at given times, under every
//! master, in every isolation mode and at every nesting level; the step log
//! names them (docs/scenario.md, Events).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_tests::{Run, Table, cosim, fmus, run, scenario};

/// `file` from `scenarios/` with `extra` appended (tables at the end) and
/// `replace` applied, written into `dir`.
fn with(dir: &Path, name: &str, file: &str, replace: &[(&str, &str)], extra: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(scenario(file))
        .unwrap()
        .replace("../fmus/dist", &fmus().display().to_string());
    for (a, b) in replace {
        assert!(text.contains(a), "{file} has no {a:?}");
        text = text.replace(a, b);
    }
    text.push_str(extra);
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const B5_EVENTS: &str = r#"
[[events]]
time = 1.0
variable = "spring.F"
action = "override"
value = 0.0

[[events]]
time = 1.5
variable = "mass.F"
action = "bias"
value = 10.0

[[events]]
time = 2.0
variable = "spring.F"
action = "reset"
"#;

fn row(t: &Table, time: f64) -> usize {
    t.time()
        .iter()
        .position(|&x| (x - time).abs() < 1e-9)
        .unwrap_or_else(|| panic!("no row at t = {time}"))
}

fn col<'a>(t: &'a Table, name: &str) -> &'a [f64] {
    t.column(name).unwrap_or_else(|| panic!("no column {name}"))
}

/// The events column of the step log, by row.
fn step_events(r: &Run) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(r.dir.path().join("steps.csv")).unwrap();
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let time: f64 = line.split(',').next().unwrap().parse().unwrap();
        let last = line.rsplit(',').next().unwrap().trim_matches('"');
        if !last.is_empty() {
            out.push((time, last.to_string()));
        }
    }
    out
}

/// B5 (fixed step 0.1 s): an output override shows in the trace at the
/// event's row and reaches the other FMU; an input bias adds to what the
/// connection gives from the step that starts at its time (the FMU reports
/// it after that step, as every coupled input); a reset ends the override
/// (the output is the FMU's own again: F = -k x). The step log names each
/// event at the step that ends at its time.
#[test]
fn override_bias_and_reset_take_effect_at_their_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = with(dir.path(), "b5.toml", "b5_mass_spring.toml", &[], B5_EVENTS);
    let r = run(&path, &[], Some(2.5), None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    let (f, x, mf) = (col(&t, "spring.F"), col(&t, "spring.x"), col(&t, "mass.F"));
    // Before the override the spring's force is its own, -k x (k = 1).
    let i09 = row(&t, 0.9);
    assert_eq!(f[i09], -x[i09]);
    assert_ne!(f[i09], 0.0);
    // From t = 1.0 to the reset: 0, whatever x is.
    for time in [1.0, 1.2, 1.9] {
        let i = row(&t, time);
        assert_eq!(f[i], 0.0, "spring.F at {time}");
        assert_ne!(x[i], 0.0);
    }
    // The mass gets the overridden force at its next step...
    assert_eq!(mf[row(&t, 1.1)], 0.0);
    // ... and the bias from the step that starts at 1.5: 0 + 10.
    assert_eq!(mf[row(&t, 1.5)], 0.0);
    assert_eq!(mf[row(&t, 1.6)], 10.0);
    // After the reset: the FMU's own force again, and the bias on top.
    let i2 = row(&t, 2.0);
    assert_eq!(f[i2], -x[i2]);
    assert_eq!(mf[row(&t, 2.1)], f[i2] + 10.0);
    assert_eq!(
        step_events(&r),
        [
            (1.0, "override spring.F = 0".to_string()),
            (1.5, "bias mass.F + 10".to_string()),
            (2.0, "reset spring.F".to_string()),
        ]
    );
}

/// An input no connection feeds keeps its start value until an event
/// changes it, and gets it back at the reset.
#[test]
fn an_unconnected_input_keeps_its_start_value_until_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"[simulation]
stop = 1.0
[master]
step = 0.1
[[subsystems]]
name = "g"
fmu = "{gain}"
parameters = {{ k = 3.0 }}
start = {{ u = 0.5 }}
[[events]]
time = 0.3
variable = "g.u"
action = "override"
value = 2.0
[[events]]
time = 0.6
variable = "g.u"
action = "reset"
[outputs]
variables = ["g.y"]
"#,
        gain = cosim_tests::fmi2("Gain").display()
    );
    let path = dir.path().join("g.toml");
    std::fs::write(&path, text).unwrap();
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    let y = col(&t, "g.y");
    assert_eq!(y[row(&t, 0.3)], 1.5);
    assert_eq!(y[row(&t, 0.4)], 6.0);
    assert_eq!(y[row(&t, 0.6)], 6.0);
    assert_eq!(y[row(&t, 0.7)], 1.5);
}

/// A libcosim scenario file, JSON and YAML (the structure of libcosim's
/// `tests/data/scenarios/scenario1`: defaults for model, variable and
/// action, events that give only what differs, `end`), changes the run as
/// the same events in `[[events]]` do; at `end` every variable an event
/// changed is reset, as libcosim does.
#[test]
fn libcosim_scenario_files_json_and_yaml_run_as_events() {
    let dir = tempfile::tempdir().unwrap();
    // The example of docs/scenario.md, shown there as it is.
    let json = scenario("b5_mass_spring_events.json");
    let text = std::fs::read_to_string(&json).unwrap();
    let doc = std::fs::read_to_string(cosim_tests::root().join("docs/scenario.md")).unwrap();
    assert!(
        doc.contains(&format!("```json\n{text}```")),
        "docs/scenario.md does not show {}",
        json.display()
    );
    let yaml = dir.path().join("events.yml");
    std::fs::write(
        &yaml,
        "description: the same in YAML\ndefaults:\n  model: spring\n  variable: F\n  action: override\nevents:\n  - time: 1.0\n    value: 0.0\n  - time: 1.5\n    model: mass\n    variable: F\n    action: bias\n    value: 10.0\nend: 2.0\n",
    )
    .unwrap();
    let plain = with(dir.path(), "b5.toml", "b5_mass_spring.toml", &[], "");
    // The same as [[events]] with a reset of both at `end`.
    let toml = with(
        dir.path(),
        "b5_events.toml",
        "b5_mass_spring.toml",
        &[],
        &format!(
            "{B5_EVENTS}\n[[events]]\ntime = 2.0\nvariable = \"mass.F\"\naction = \"reset\"\n"
        ),
    );
    let mut traces = Vec::new();
    for (path, extra) in [
        (&plain, vec!["--scenario", json.to_str().unwrap()]),
        (&plain, vec!["--scenario", yaml.to_str().unwrap()]),
        (&toml, vec![]),
    ] {
        let out = dir.path().join(format!("o{}", traces.len()));
        let mut args = vec![
            "run",
            path.to_str().unwrap(),
            "--stop",
            "2.5",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = cosim(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        traces.push(std::fs::read(out.join("trace.csv")).unwrap());
    }
    assert!(traces[0] == traces[1], "JSON and YAML differ");
    assert!(
        traces[0] == traces[2],
        "the JSON file differs from [[events]]"
    );
}

/// Errors point at the event: an unknown model or variable in a scenario
/// file at its line and column, with the nearest name; a value of the
/// wrong type; an action without a value.
#[test]
fn event_errors_name_the_place_and_the_nearest_name() {
    let dir = tempfile::tempdir().unwrap();
    let plain = with(dir.path(), "b5.toml", "b5_mass_spring.toml", &[], "");
    let check = |name: &str, content: &str, expect: &[&str]| {
        let file = dir.path().join(name);
        std::fs::write(&file, content).unwrap();
        let o = cosim(&[
            "run",
            plain.to_str().unwrap(),
            "--scenario",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        for e in expect {
            assert!(err.contains(e), "{name}: no {e:?} in {err}");
        }
    };
    check(
        "model.json",
        "{\n  \"events\": [\n    { \"time\": 1, \"model\": \"sprng\", \"variable\": \"F\", \"action\": \"override\", \"value\": 1 }\n  ]\n}\n",
        &[
            "model.json:3:",
            "no subsystem 'sprng'",
            "did you mean 'spring'?",
        ],
    );
    check(
        "variable.yml",
        "events:\n  - time: 1\n    model: spring\n    variable: Fx\n    action: bias\n    value: 1\n",
        &[
            "variable.yml:4:",
            "has no variable 'Fx'",
            "did you mean 'F'?",
        ],
    );
    check(
        "novalue.yml",
        "events:\n  - time: 1\n    model: spring\n    variable: F\n    action: override\n",
        &["novalue.yml:", "needs a 'value'"],
    );
    // Values that are no finite number, refused where they are written
    // (they used to reach the FMU, which was blamed for the NaN).
    for (name, value) in [
        ("nan.json", "NaN"),
        ("nan_text.json", "\"NaN\""),
        ("inf.json", "-Infinity"),
        ("huge.json", "1e999"),
        ("yaml_inf.yml", ".inf"),
        ("yaml_nan.yml", ".NaN"),
    ] {
        let text = if name.ends_with(".json") {
            format!(
                "{{\n  \"events\": [\n    {{ \"time\": 1, \"model\": \"spring\", \"variable\": \"F\", \"action\": \"override\",\n      \"value\": {value} }}\n  ]\n}}\n"
            )
        } else {
            format!(
                "events:\n  - time: 1\n    model: spring\n    variable: F\n    action: bias\n    value: {value}\n"
            )
        };
        let line = if name.ends_with(".json") { 4 } else { 6 };
        check(
            name,
            &text,
            &[
                &format!("{name}:{line}:"),
                &format!("'value' {} is not a finite number", value.trim_matches('"')),
            ],
        );
    }
    let nan = with(
        dir.path(),
        "nan.toml",
        "b5_mass_spring.toml",
        &[],
        "\n[[events]]\ntime = 1.0\nvariable = \"spring.F\"\naction = \"override\"\nvalue = nan\n",
    );
    let o = cosim(&["check", nan.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("nan.toml:") && err.contains("'value' nan is not a finite number"),
        "{err}"
    );
    // In [[events]]: a Boolean for a Real, at the value.
    let bad = with(
        dir.path(),
        "bad.toml",
        "b5_mass_spring.toml",
        &[],
        "\n[[events]]\ntime = 1.0\nvariable = \"spring.F\"\naction = \"override\"\nvalue = true\n",
    );
    let o = cosim(&["check", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.toml:")
            && err.contains("'spring.F' is a Float64 variable; the event's value is true"),
        "{err}"
    );
}

/// An adaptive master ends a macro step exactly at each event time; the
/// output override shows from that row on.
#[test]
fn an_adaptive_master_ends_a_step_at_each_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = with(
        dir.path(),
        "b5e.toml",
        "b5_mass_spring.toml",
        &[(
            "step = 0.1",
            "kind = \"ecco\"\nstep = 0.01\ntolerance = 1e-3",
        )],
        &B5_EVENTS.replace("time = 1.0", "time = 1.0537"),
    );
    let r = run(&path, &[], Some(2.5), None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let steps = r.steps();
    for te in [1.0537, 1.5, 2.0] {
        assert!(steps.time().contains(&te), "no step ends at {te}");
    }
    let t = r.trace();
    let f = col(&t, "spring.F");
    let i = row(&t, 1.0537);
    assert_eq!(f[i], 0.0);
    assert_ne!(f[i - 1], 0.0);
}

/// Under Richardson (which restores FMU states and steps again) and
/// IFOSMONDI (which iterates every macro step from saved states), an output
/// override holds from its time on and not before, whatever the masters
/// repeat.
#[test]
fn masters_that_restore_states_keep_every_event() {
    let dir = tempfile::tempdir().unwrap();
    for (file, var, te, stop) in [
        ("b2_richardson.toml", "chassis.x_c", 0.05, 0.1),
        ("b4_two_mass_ifosmondi.toml", "s1.x1", 0.3, 0.6),
    ] {
        let extra = format!(
            "\n[[events]]\ntime = {te}\nvariable = \"{var}\"\naction = \"override\"\nvalue = 0.125\n"
        );
        let path = with(dir.path(), file, file, &[], &extra);
        let r = run(&path, &[], Some(stop), None);
        assert!(r.error.is_none(), "{file}: {:?}", r.error);
        let t = r.trace();
        let x = col(&t, var);
        let mut before = 0;
        for (time, v) in t.time().iter().zip(x) {
            if *time + 1e-12 >= te {
                assert_eq!(*v, 0.125, "{file}: {var} at {time}");
            } else {
                assert_ne!(*v, 0.125, "{file}: {var} at {time}");
                before += 1;
            }
        }
        assert!(before > 2, "{file}: rows before the event");
        assert!(
            t.time().iter().any(|&time| (time - te).abs() < 1e-12),
            "{file}: no row at {te}"
        );
    }
}

/// The same events in a host process give the same files; an event inside
/// a nested system (`nest.s2.x2`) changes that system's variable.
#[test]
fn events_in_host_processes_and_nested_systems() {
    let dir = tempfile::tempdir().unwrap();
    let path = with(dir.path(), "b5.toml", "b5_mass_spring.toml", &[], B5_EVENTS);
    let a = run(&path, &[], Some(2.5), None);
    let isolated = dir.path().join("iso");
    let o = cosim(&[
        "run",
        path.to_str().unwrap(),
        "--stop",
        "2.5",
        "--isolation",
        "process",
        "--out",
        isolated.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["trace.csv", "steps.csv"] {
        assert!(
            std::fs::read(a.dir.path().join(f)).unwrap()
                == std::fs::read(isolated.join(f)).unwrap(),
            "{f} differs in a host process"
        );
    }

    let nested = with(
        dir.path(),
        "b3.toml",
        "b3_three_mass_hierarchical.toml",
        &[],
        "\n[[events]]\ntime = 1.0\nvariable = \"nest.s2.x2\"\naction = \"override\"\nvalue = 0.5\n",
    );
    let r = run(&nested, &[], Some(2.0), None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    let x2 = col(&t, "nest.s2.x2");
    assert_ne!(x2[row(&t, 0.9)], 0.5);
    assert_eq!(x2[row(&t, 1.0)], 0.5);
    assert_eq!(x2[row(&t, 2.0)], 0.5);
    assert!(
        step_events(&r)
            .iter()
            .any(|(time, e)| *time == 1.0 && e == "override nest.s2.x2 = 0.5")
    );
}

/// Real-time pacing: 2 s of simulated time at factor 1 take at least 2 s
/// of wall-clock time (a lower bound only), and the summary gives the
/// factor asked and achieved. The same from `[simulation] real_time`.
#[test]
fn a_paced_run_takes_at_least_its_simulated_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = with(dir.path(), "b5.toml", "b5_mass_spring.toml", &[], "");
    let out = dir.path().join("o");
    let started = std::time::Instant::now();
    let o = cosim(&[
        "run",
        path.to_str().unwrap(),
        "--stop",
        "2",
        "--real-time",
        "--out",
        out.to_str().unwrap(),
    ]);
    let wall = started.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(wall >= 2.0, "2 s at factor 1 took {wall} s");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let rt = &summary["real_time"];
    assert_eq!(rt["target_factor"], 1.0);
    assert!(rt["achieved_factor"].as_f64().unwrap() <= 1.0, "{rt}");
    assert!(err.contains("real time: "), "{err}");

    // From the scenario, at factor 4: 2 s in at least 0.5 s.
    let path = with(
        dir.path(),
        "b5rt.toml",
        "b5_mass_spring.toml",
        &[("stop = 20.0", "stop = 2.0\nreal_time = 4.0")],
        "",
    );
    let started = std::time::Instant::now();
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(started.elapsed().as_secs_f64() >= 0.5);
    let rt = r.summary.real_time.as_ref().unwrap();
    assert_eq!(rt.target_factor, 4.0);
    // A factor that is not positive is refused, naming the argument.
    let o = cosim(&["run", path.to_str().unwrap(), "--real-time", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--real-time") && err.contains("positive"),
        "{err}"
    );
}

/// A paced run that cannot keep up says by how much it fell behind and
/// which subsystem took the time (here a Gain made slow on purpose).
#[test]
fn a_run_that_falls_behind_real_time_names_the_slow_subsystem() {
    let dir = tempfile::tempdir().unwrap();
    let gain = cosim_tests::fmi2("Gain");
    let text = format!(
        r#"[simulation]
stop = 0.5
[master]
step = 0.01
[[subsystems]]
name = "fast"
fmu = "{gain}"
[[subsystems]]
name = "slow"
fmu = "{gain}"
parameters = {{ busy_work = 5000000 }}
[[connections]]
from = "fast.y"
to = "slow.u"
"#,
        gain = gain.display()
    );
    let path = dir.path().join("slow.toml");
    std::fs::write(&path, text).unwrap();
    let o = cosim(&[
        "run",
        path.to_str().unwrap(),
        "--real-time",
        "1000",
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning: the run fell behind real time by up to")
            && err.contains("subsystem 'slow' took the most time"),
        "{err}"
    );
}

/// A bias on an output that only the trace reads (read at the rows that
/// show it, not at every step) is added once to each value, not once per
/// step.
#[test]
fn a_bias_on_a_traced_only_output_is_added_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"[simulation]
stop = 2.0
[master]
step = 0.1
[[subsystems]]
name = "g"
fmu = "{gain}"
parameters = {{ k = 2.0 }}
start = {{ u = 1.0 }}
[[events]]
time = 0.5
variable = "g.y"
action = "bias"
value = 5.0
[outputs]
variables = ["g.y"]
interval = 0.5
"#,
        gain = cosim_tests::fmi2("Gain").display()
    );
    let path = dir.path().join("g.toml");
    std::fs::write(&path, text).unwrap();
    let r = run(&path, &[], None, None);
    assert!(r.error.is_none(), "{:?}", r.error);
    let t = r.trace();
    let y = col(&t, "g.y");
    assert_eq!(t.time(), [0.0, 0.5, 1.0, 1.5, 2.0]);
    assert_eq!(y, [2.0, 7.0, 7.0, 7.0, 7.0]);
}

/// A libcosim scenario file applies to an SSP system as to a scenario.
#[test]
fn a_scenario_file_applies_to_an_ssp_system() {
    let dir = tempfile::tempdir().unwrap();
    cosim_tests::fmus();
    let yml = dir.path().join("ev.yml");
    std::fs::write(
        &yml,
        "events:\n  - time: 0.5\n    model: wheel\n    variable: F_c\n    action: override\n    value: 100\n",
    )
    .unwrap();
    let ssd = cosim_tests::root().join("crates/cosim-ssp/tests/data/quarter_car.ssd");
    let out = dir.path().join("o");
    let o = cosim(&[
        "run",
        ssd.to_str().unwrap(),
        "--scenario",
        yml.to_str().unwrap(),
        "--stop",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = Table::read(&out.join("trace.csv")).unwrap();
    let f = col(&t, "wheel.F_c");
    assert_ne!(f[row(&t, 0.499)], 100.0);
    assert_eq!(f[row(&t, 0.5)], 100.0);
    assert_eq!(f[row(&t, 1.0)], 100.0);
}

/// A fixed-step master applies an event between two of its points at the
/// next one and says so; an event after the stop time is a warning; a
/// parameter and a bias on a Boolean are refused at the event.
#[test]
fn off_grid_late_and_refused_events_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = with(
        dir.path(),
        "b5.toml",
        "b5_mass_spring.toml",
        &[],
        "\n[[events]]\ntime = 1.05\nvariable = \"spring.F\"\naction = \"override\"\nvalue = 0.0\n\n[[events]]\ntime = 99.0\nvariable = \"spring.F\"\naction = \"reset\"\n",
    );
    let out = dir.path().join("o");
    let o = cosim(&[
        "run",
        path.to_str().unwrap(),
        "--stop",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("the event at t = 1.05 s on 'spring.F' is between two communication points of the fixed step 0.1 s: it takes effect at t = 1.1 s"),
        "{err}"
    );
    assert!(
        err.contains(
            "the event at t = 99 s on 'spring.F' is after the stop time 2 s: it never takes effect"
        ),
        "{err}"
    );
    let t = Table::read(&out.join("trace.csv")).unwrap();
    let f = col(&t, "spring.F");
    assert_ne!(f[row(&t, 1.0)], 0.0);
    assert_eq!(f[row(&t, 1.1)], 0.0);

    for (name, event, expect) in [
        (
            "param.toml",
            "variable = \"spring.k\"\naction = \"override\"\nvalue = 2.0",
            "'spring.k' is a parameter",
        ),
        (
            "bool.toml",
            "variable = \"controller.heater_on\"\naction = \"bias\"\nvalue = true",
            "'controller.heater_on' is a Boolean: a bias has no meaning for it",
        ),
    ] {
        let file = if name == "bool.toml" {
            "thermostat.toml"
        } else {
            "b5_mass_spring.toml"
        };
        let path = with(
            dir.path(),
            name,
            file,
            &[],
            &format!("\n[[events]]\ntime = 1.0\n{event}\n"),
        );
        let o = cosim(&["check", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}:")) && err.contains(expect),
            "{name}: {err}"
        );
    }
}
