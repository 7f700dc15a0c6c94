//! The `cosim` command line: exit statuses, messages, outputs kept on
//! failure, inspect and check on everything the project ships.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_tests::{Table, cosim, fmi2, fmus, root};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scenario with a Faulty integrator fed back through a gain.
fn faulty_scenario(dir: &Path, mode: i32, fail_at: f64) -> std::path::PathBuf {
    let text = format!(
        r#"[simulation]
stop = 1.0

[master]
step = 0.01

[[subsystems]]
name = "faulty"
fmu = "{faulty}"
parameters = {{ fail_mode = {mode}, fail_at = {fail_at}, x0 = 1.0 }}

[[subsystems]]
name = "gain"
fmu = "{gain}"
parameters = {{ k = -0.5 }}

[[connections]]
from = "faulty.x"
to = "gain.u"

[[connections]]
from = "gain.y"
to = "faulty.u"
"#,
        faulty = fmi2("Faulty").display(),
        gain = fmi2("Gain").display(),
    );
    let path = dir.join("faulty.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_fmu_error_mid_run_stops_cleanly_with_the_trace_up_to_that_time() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), 1, 0.305);
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // Names the FMU instance, the function, the status and the time, and
    // quotes the FMU's own log line.
    assert!(err.contains("FMU instance 'faulty'"), "{err}");
    assert!(
        err.contains("fmi2DoStep returned Error at t = 0.3"),
        "{err}"
    );
    assert!(err.contains("fail_at = 0.305"), "{err}");
    // The trace holds every completed row: t = 0, 0.01, ..., 0.3.
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    let t = trace.time();
    assert_eq!(t.len(), 31, "rows: {t:?}");
    assert!((t[30] - 0.3).abs() < 1e-12);
    // x' = -0.5 x from x0 = 1: the completed rows are right, not garbage.
    let x = trace.column("faulty.x").unwrap();
    assert!(
        (x[30] - (-0.5f64 * 0.3).exp()).abs() < 5e-3,
        "x(0.3) = {}",
        x[30]
    );
    // The summary says what happened.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["status"], "error");
    assert!((summary["t_reached"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert!(summary["message"].as_str().unwrap().contains("fmi2DoStep"));
}

#[test]
fn a_nan_output_stops_the_run_naming_subsystem_variable_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), 3, 0.105);
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("subsystem 'faulty': variable 'x' is NaN at t = 0.11"),
        "{err}"
    );
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_eq!(trace.time().len(), 11);
    assert!(
        trace
            .column("faulty.x")
            .unwrap()
            .iter()
            .all(|v| v.is_finite())
    );
}

#[test]
fn the_nan_policy_can_be_set_to_warn() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), 3, 0.105);
    let text = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("step = 0.01", "step = 0.01\nnonfinite = \"warn\"");
    std::fs::write(&scenario, text).unwrap();
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("variable 'x' is NaN"), "{err}");
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_eq!(trace.time().len(), 101);
}

#[test]
fn bad_scenarios_exit_with_status_2_and_a_located_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let gain = fmi2("Gain");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 1.0\n[master]\nstep = 0.1\n[[subsystems]]\nname = \"g\"\nfmu = \"{}\"\n[[connections]]\nfrom = \"g.yy\"\nto = \"g.u\"\n",
            gain.display()
        ),
    )
    .unwrap();
    let out = cosim(&["run", path.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml:9:"), "{err}");
    assert!(
        err.contains("'yy'") && err.contains("did you mean 'y'"),
        "{err}"
    );

    let out = cosim(&["run", dir.path().join("missing.toml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.toml"), "{}", stderr(&out));
}

#[test]
fn a_missing_fmu_names_the_scenario_line_and_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    std::fs::write(
        &path,
        "[simulation]\nstop = 1.0\n[master]\nstep = 0.1\n[[subsystems]]\nname = \"g\"\nfmu = \"nowhere/Gain.fmu\"\n",
    )
    .unwrap();
    let out = cosim(&["check", path.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("s.toml:7:") && err.contains("nowhere/Gain.fmu"),
        "{err}"
    );
}

#[test]
fn check_accepts_every_shipped_scenario() {
    let mut failures = Vec::new();
    for entry in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = cosim(&["check", path.to_str().unwrap()]);
            if !out.status.success() {
                failures.push(format!("{}: {}", path.display(), stderr(&out)));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn inspect_works_on_every_fmu_the_project_builds() {
    for dir in ["fmi2", "fmi3", "variants"] {
        let d = fmus().join(dir);
        let out = cosim(&["inspect", d.to_str().unwrap()]);
        assert!(out.status.success(), "{dir}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Power-bond candidates") || text.contains("Model:"));
        let out = cosim(&["inspect", "--json", d.to_str().unwrap()]);
        assert!(out.status.success());
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(json.as_array().unwrap().len() >= 5);
    }
    // B1: the force/velocity pair on each side.
    let out = cosim(&[
        "inspect",
        "--json",
        fmi2("QuarterCarWheelSuspension").to_str().unwrap(),
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &json["bond_candidates"][0];
    assert_eq!(c["input_name"], "v_c");
    assert_eq!(c["output_name"], "F_c");
    assert_eq!(c["domain"], "Translational");
}

/// `cosim inspect` on the kit's Model Exchange FMUs (FMI 2 and 3) and on
/// a quarter-car half that has both interfaces: the interface `cosim run`
/// uses (and the run agrees), the default solver, the continuous states
/// with their derivatives and nominals, the event indicators and the
/// capabilities that matter to the integrator.
#[test]
fn inspect_shows_the_model_exchange_interface_and_what_runs() {
    let json_of = |fmu: &Path| -> serde_json::Value {
        let out = cosim(&["inspect", "--json", fmu.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let states = |json: &serde_json::Value| -> Vec<(String, String, f64)> {
        json["model_exchange_interface"]["continuous_states"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["state"].as_str().unwrap().to_string(),
                    x["derivative"].as_str().unwrap().to_string(),
                    x["nominal"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let owned = |v: &[(&str, &str, f64)]| -> Vec<(String, String, f64)> {
        v.iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), *c))
            .collect()
    };
    for version in ["fmi2", "fmi3"] {
        let me = fmus().join("me").join(version);
        let ball = me.join("BouncingBallME.fmu");
        let out = cosim(&["inspect", ball.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        for needle in [
            "Interfaces:     ModelExchange (BouncingBallME)\n",
            "Runs in cosim:  yes: Model Exchange, integrated by cosim's solver (BDF, relative tolerance 1e-5: cosim's default; the FMU's DefaultExperiment gives no tolerance)",
            "\nModel Exchange\n",
            "continuous states:              2\n",
            "event indicators:               1\n",
            "needs completedIntegratorStep:  no\n",
            "get/set state:                  yes\n",
            "directional derivatives:        yes\n",
            "\nContinuous states (2)\n",
        ] {
            assert!(
                text.contains(needle),
                "{version}: missing {needle:?} in:\n{text}"
            );
        }
        assert!(!text.contains("\nCo-Simulation\n"), "{text}");
        let json = json_of(&ball);
        assert_eq!(json["runs_as"]["interface"], "model-exchange");
        assert!(json["runs_as"]["other"].is_null());
        assert!(json["co_simulation"].is_null());
        assert_eq!(
            states(&json),
            owned(&[("h", "der(h)", 1.0), ("v", "der(v)", 1.0)])
        );
        let rob = json_of(&me.join("Robertson.fmu"));
        assert_eq!(
            states(&rob),
            owned(&[
                ("y1", "der(y1)", 1.0),
                ("y2", "der(y2)", 1e-5),
                ("y3", "der(y3)", 1.0)
            ])
        );
        assert_eq!(
            rob["model_exchange_interface"]["number_of_event_indicators"],
            0
        );
        // Step events need completedIntegratorStep; time events do not.
        let step = json_of(&me.join("StepEvents.fmu"));
        assert_eq!(
            step["model_exchange_interface"]["needs_completed_integrator_step"],
            true
        );
        let time = json_of(&me.join("TimeEvents.fmu"));
        assert_eq!(
            time["model_exchange_interface"]["needs_completed_integrator_step"],
            false
        );
        // Every FMU of the directory, as a list.
        let out = cosim(&["inspect", "--json", me.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let all = all.as_array().unwrap();
        assert_eq!(all.len(), 4);
        assert!(
            all.iter()
                .all(|r| r["runs_as"]["interface"] == "model-exchange"),
            "{all:?}"
        );

        // Both interfaces: Co-Simulation, and the option for the other.
        let chassis = fmus().join(version).join("QuarterCarChassis.fmu");
        let out = cosim(&["inspect", chassis.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.contains("Runs in cosim:  yes: Co-Simulation; `--interface me` (a scenario's interface = \"model-exchange\") runs its Model Exchange interface instead, integrated by cosim's solver (BDF, relative tolerance 1e-5"),
            "{text}"
        );
        assert!(
            text.contains("\nCo-Simulation\n") && text.contains("\nModel Exchange\n"),
            "{text}"
        );
        let json = json_of(&chassis);
        assert_eq!(json["runs_as"]["interface"], "co-simulation");
        assert_eq!(json["runs_as"]["other"], "--interface me");
        assert_eq!(
            states(&json),
            owned(&[("z_c", "v_c", 1.0), ("v_c", "der(v_c)", 1.0)])
        );
        // What inspect says is what `cosim run` does: the solver's
        // figures only where Model Exchange runs.
        let dir = tempfile::tempdir().unwrap();
        for (args, me_runs) in [(vec![], false), (vec!["--interface", "me"], true)] {
            let o = dir.path().join(format!("o{}", args.len()));
            let mut all = vec![
                "run",
                chassis.to_str().unwrap(),
                "--stop",
                "0.01",
                "--no-progress",
                "-o",
                o.to_str().unwrap(),
            ];
            all.extend(args);
            let out = cosim(&all);
            assert!(out.status.success(), "{}", stderr(&out));
            let summary: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(o.join("summary.json")).unwrap())
                    .unwrap();
            assert_eq!(
                summary["subsystems"][0]["calls"]["solver"].is_object(),
                me_runs,
                "{summary}"
            );
        }
    }
}

#[test]
fn run_reports_the_bonds_it_uses_and_writes_all_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosim(&[
        "run",
        "scenarios/b1_quarter_car_a.toml",
        "--stop",
        "0.1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("chassis.F~wheel.v_c (discovered)") && err.contains("chassis.F [N]"),
        "{err}"
    );
    for f in ["trace.csv", "energy.csv", "steps.csv", "summary.json"] {
        assert!(dir.path().join(f).is_file(), "{f} missing");
    }
    // Header: time [s] first, then subsystem.variable [unit].
    let header = std::fs::read_to_string(dir.path().join("trace.csv")).unwrap();
    let first = header.lines().next().unwrap();
    assert!(
        first.starts_with("time [s],chassis.F [N],chassis.v_c [m/s]"),
        "{first}"
    );
    // Full round-trip precision: values parse back to the exact f64 the
    // library computed in a run of the same scenario.
    let lib = cosim_tests::run(
        &root().join("scenarios/b1_quarter_car_a.toml"),
        &[],
        Some(0.1),
        None,
    );
    assert_eq!(
        lib.trace().columns,
        Table::read(&dir.path().join("trace.csv")).unwrap().columns
    );
}

#[test]
fn set_overrides_a_parameter_and_threads_do_not_change_results() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "0.2",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let o = cosim(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        Table::read(&out.join("trace.csv")).unwrap()
    };
    let one = run(&a, &["--threads", "1"]);
    let two = run(&b, &["--threads", "2"]);
    assert_eq!(
        one.columns, two.columns,
        "traces differ between 1 and 2 threads"
    );
    let heavy = run(&dir.path().join("c"), &["--set", "chassis.m_c=800"]);
    assert_ne!(heavy.column("chassis.v_c"), one.column("chassis.v_c"));
}

#[test]
fn check_reports_an_algebraic_loop_with_the_variables_on_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.toml");
    let gain = fmi2("Gain");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 1.0\n[master]\nstep = 0.1\n\
             [[subsystems]]\nname = \"a\"\nfmu = \"{g}\"\n\
             [[subsystems]]\nname = \"b\"\nfmu = \"{g}\"\nparameters = {{ k = 0.5 }}\n\
             [[connections]]\nfrom = \"a.y\"\nto = \"b.u\"\n\
             [[connections]]\nfrom = \"b.y\"\nto = \"a.u\"\n",
            g = gain.display()
        ),
    )
    .unwrap();
    let out = cosim(&["check", path.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("algebraic loop: a.u -> a.y -> b.u -> b.y -> a.u"),
        "{err}"
    );
    assert!(
        err.contains("feed-through: a.y depends directly on u"),
        "{err}"
    );
}

#[test]
fn extrapolation_falls_back_to_zoh_with_one_warning_naming_the_fmu() {
    // FMI 3.0 co-simulation has no input derivatives; the FMI 3 builds
    // without intermediate update cannot take polynomial inputs at all:
    // with extrapolation order 1 each is warned about once and held (ZOH),
    // so the trace equals the ZOH run.
    fmus();
    let dir = tempfile::tempdir().unwrap();
    let variant = |model: &str| {
        fmu_kit::dist::variant_path(model, fmu_kit::Variant::NoIntermediateUpdate)
            .display()
            .to_string()
    };
    let text = std::fs::read_to_string(root().join("scenarios/b1_quarter_car_a_fmi3.toml"))
        .unwrap()
        .replace("step = 1e-3", "step = 1e-3\nextrapolation = 1")
        .replace(
            "../fmus/dist/fmi3/QuarterCarChassis.fmu",
            &variant("QuarterCarChassis"),
        )
        .replace(
            "../fmus/dist/fmi3/QuarterCarWheelSuspension.fmu",
            &variant("QuarterCarWheelSuspension"),
        );
    assert!(!text.contains("../fmus/dist"), "{text}");
    let path = dir.path().join("fmi3_m1.toml");
    std::fs::write(&path, text).unwrap();
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        path.to_str().unwrap(),
        "--stop",
        "0.05",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    for sub in ["'chassis'", "'wheel'"] {
        let warnings = err
            .lines()
            .filter(|l| l.contains(sub) && l.contains("cannot interpolate inputs"))
            .count();
        assert_eq!(warnings, 1, "{sub}: {err}");
    }
    assert!(
        err.contains("QuarterCarChassis-fmi3-no-intermediate-update.fmu"),
        "the warning names the FMU file: {err}"
    );
    let zoh = cosim_tests::run(
        &root().join("scenarios/b1_quarter_car_a_fmi3.toml"),
        &[],
        Some(0.05),
        None,
    );
    assert_eq!(
        Table::read(&out_dir.join("trace.csv")).unwrap().columns,
        zoh.trace().columns
    );
}

#[test]
fn compare_prints_column_errors_and_the_bond_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let out = cosim(&[
        "run",
        "scenarios/b1_quarter_car_a.toml",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = dir.path().join("trace.csv");
    let energy = dir.path().join("energy.csv");
    let reference = fmus().join("references/b1_linear.csv");
    let out = cosim(&[
        "compare",
        trace.to_str().unwrap(),
        reference.to_str().unwrap(),
        "--map",
        "chassis.z_c=z_c",
        "--energy",
        energy.to_str().unwrap(),
        "--reference-power",
        "F_c*v_c",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let columns = json["columns"].as_array().unwrap();
    let z_c = columns
        .iter()
        .find(|c| c["column"] == "chassis.z_c")
        .unwrap();
    assert_eq!(z_c["reference"], "z_c");
    assert!(z_c["max_abs"].as_f64().unwrap() < 1e-3);
    // wheel.v_w matches v_w by suffix; chassis.v_c / wheel.v_c are ambiguous.
    assert!(columns.iter().any(|c| c["column"] == "wheel.v_w"));
    assert!(!columns.iter().any(|c| c["reference"] == "v_c"));
    let bond = &json["bond"];
    assert_eq!(bond["name"], "chassis.F~wheel.v_c");
    assert_eq!(bond["steps"], 4000);
    let dp = bond["mean_abs_power_error"].as_f64().unwrap();
    // What the same co-simulation, computed from the model equations
    // (cosim_tests::b1_jacobi), gives against the reference (F_c v_c,
    // the reference's rows interpolated at each communication point).
    let r = Table::read(&reference).unwrap();
    let (f, v) = (
        r.names.iter().position(|n| n == "F_c").unwrap(),
        r.names.iter().position(|n| n == "v_c").unwrap(),
    );
    let points = cosim_tests::b1_jacobi::run(false, 1e-3, [10, 10], 4.0);
    let expected = points
        .iter()
        .map(|q| (q.transmitted - r.interpolate(f, q.t) * r.interpolate(v, q.t)).abs())
        .sum::<f64>()
        / points.len() as f64;
    assert!(
        (dp - expected).abs() < 1e-6 * expected,
        "mean |dP| {dp}, the model equations give {expected}"
    );
    // A reference column that does not exist is named.
    let out = cosim(&[
        "compare",
        trace.to_str().unwrap(),
        reference.to_str().unwrap(),
        "--energy",
        energy.to_str().unwrap(),
        "--reference-power",
        "F_c*v_x",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no column 'v_x'"), "{}", stderr(&out));
}

#[test]
fn summary_alone_goes_into_a_new_directory() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "[simulation]\nstop = 0.1\n[master]\nstep = 0.01\n\
             [[subsystems]]\nname = \"g\"\nfmu = \"{}\"\n\
             [outputs]\ntrace = false\nenergy_log = false\nstep_log = false\n",
            fmi2("Gain").display()
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("new").join("dir");
    let out = cosim(&[
        "run",
        "-q",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["stats"]["macro_steps"], 10);
}

/// Log lines redirected to a file or a pipe (a CI log) carry no ANSI
/// colour codes; `CLICOLOR_FORCE` brings them back.
#[test]
fn redirected_messages_have_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = faulty_scenario(dir.path(), 1, 0.305);
    let out_dir = dir.path().join("out");
    let args = [
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ];
    fmus();
    let plain = std::process::Command::new(cosim_tests::cosim_bin())
        .args(args)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let err = stderr(&plain);
    // The FMU's Error is logged through the log subscriber.
    assert!(err.contains("ERROR"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let forced = std::process::Command::new(cosim_tests::cosim_bin())
        .args(args)
        .env("CLICOLOR_FORCE", "1")
        .output()
        .unwrap();
    assert!(stderr(&forced).contains('\u{1b}'));
}

/// `cosim compare --rtol --atol` is a regression test: exit 1 naming the
/// column, the time and the values out of tolerance, 0 when every value
/// is within; columns not compared (ambiguous, unmatched) are listed.
#[test]
fn compare_with_tolerances_fails_naming_the_column_time_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, step: &str| {
        let out_dir = dir.path().join(name);
        let out = cosim(&[
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--stop",
            "0.5",
            "--step",
            step,
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        out_dir.join("trace.csv")
    };
    let (fine, coarse) = (run("fine", "0.001"), run("coarse", "0.002"));
    let compare = |a: &Path, b: &Path, extra: &[&str]| {
        let mut args = vec!["compare", a.to_str().unwrap(), b.to_str().unwrap()];
        args.extend_from_slice(extra);
        cosim(&args)
    };
    // A run against itself: within any tolerance.
    let same = compare(&fine, &fine, &["--rtol", "0", "--atol", "0"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(String::from_utf8_lossy(&same.stdout).contains("every compared value within"));
    // Halving the step moves the chassis force by much more than 1e-6.
    let diff = compare(&coarse, &fine, &["--rtol", "1e-6"]);
    let text = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert_eq!(diff.status.code(), Some(1), "{text}{}", stderr(&diff));
    let line = text
        .lines()
        .find(|l| l.starts_with("out of tolerance: chassis.F (chassis.F):"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("first at t = ") && line.contains(" vs "),
        "{line}"
    );
    // The same as JSON, still failing.
    let json = compare(&coarse, &fine, &["--rtol", "1e-6", "--json"]);
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(!v["out_of_tolerance"].as_array().unwrap().is_empty());
    // Against the reference: ambiguous and unmatched columns are listed.
    let reference = fmus().join("references/b1_linear.csv");
    let out = compare(&fine, &reference, &[]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "reference column 'v_c' not compared: ambiguous between chassis.v_c, wheel.v_c"
        ),
        "{err}"
    );
    assert!(err.contains("trace columns not compared: "), "{err}");
}

/// `cosim compare` compares only where the reference has values (beyond
/// its ends it would be held), and says how many trace points it left
/// out; a file whose time decreases is refused, naming the file and row.
#[test]
fn compare_stays_within_the_reference_and_refuses_time_going_back() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.csv");
    std::fs::write(&trace, "time,x\n0,0\n1,1\n2,2\n3,3\n4,4\n").unwrap();
    let short = dir.path().join("short.csv");
    std::fs::write(&short, "time,x\n0,0\n2,2\n").unwrap();
    let out = cosim(&[
        "compare",
        trace.to_str().unwrap(),
        short.to_str().unwrap(),
        "--json",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "note: 2 time points of the trace are outside the reference's time range [0, 2]"
        ),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["columns"][0]["points"], 3, "{v}");
    assert_eq!(v["columns"][0]["max_abs"], 0.0, "{v}");
    assert_eq!(
        (v["from"].as_f64(), v["until"].as_f64()),
        (Some(0.0), Some(2.0))
    );
    // (Held at 2 beyond the reference, 3 and 4 would deviate by 1 and 2.)
    let strict = cosim(&[
        "compare",
        trace.to_str().unwrap(),
        short.to_str().unwrap(),
        "--atol",
        "0",
    ]);
    assert_eq!(strict.status.code(), Some(0), "{}", stderr(&strict));
    let back = dir.path().join("back.csv");
    std::fs::write(&back, "time,x\n0,1\n0.5,1\n0.2,3\n").unwrap();
    let out = cosim(&["compare", trace.to_str().unwrap(), back.to_str().unwrap()]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("back.csv")
            && err.contains("row 4: time 0.2 is before the time of the row above (0.5)"),
        "{err}"
    );
}

/// `-v` says what the master decided and where the time went; `-vv` adds
/// the FMI call log.
#[test]
fn verbose_runs_report_the_master_decisions_and_the_fmi_calls() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let run = |flag: &str| {
        cosim(&[
            flag,
            "run",
            "scenarios/b1_quarter_car_a_ecco.toml",
            "--stop",
            "0.2",
            "--no-progress",
            "--out",
            out_dir.to_str().unwrap(),
        ])
    };
    let v = run("-v");
    let err = stderr(&v);
    assert!(v.status.success(), "{err}");
    let master = err
        .lines()
        .find(|l| l.starts_with("master ecco: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        master.contains(" macro steps of ") && master.contains(" rejected"),
        "{master}"
    );
    for sub in ["chassis", "wheel"] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("  {sub}: ")) && l.contains(" s in its steps (")),
            "{err}"
        );
    }
    assert!(!err.contains("fmi2DoStep("), "-v has no call log: {err}");
    let vv = run("-vv");
    let err = stderr(&vv);
    assert!(vv.status.success(), "{err}");
    assert!(
        err.contains("[OK] chassis: fmi2DoStep(currentCommunicationPoint=0,"),
        "{err}"
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert!(s["min_step"].as_f64().unwrap() <= s["max_step"].as_f64().unwrap());
    assert!(s["subsystems"][0]["step_wall_time_s"].as_f64().unwrap() > 0.0);
}

/// Without a terminal, `cosim run` says its progress in a line every 10 %
/// of the run, at the first communication point at or past each (the
/// progress display asks to be called only there, `Observer::due`, so the
/// steps between go the run loop's quiet path): the same lines whether
/// every step writes outputs or none does. The thermostat: 1200 steps of
/// 0.5 s (lines at every 256th step past each tenth before), and 10 steps
/// of 0.11 s to 1.1 s, where a share of the run computed in seconds falls
/// short of some tenths (0.99 / 1.1 is 0.8999...).
#[test]
fn progress_is_said_at_every_tenth_of_the_run_with_or_without_outputs() {
    let dir = tempfile::tempdir().unwrap();
    for (step, stop) in [(0.5, 600.0_f64), (0.11, 1.1)] {
        let sub = dir.path().join(format!("{step}"));
        std::fs::create_dir_all(&sub).unwrap();
        let master = format!("kind = \"fixed-step\"\nstep = {step}");
        let scenario = cosim_tests::with_master("thermostat.toml", &master, &sub);
        let text = std::fs::read_to_string(&scenario).unwrap();
        let quiet = sub.join("quiet.toml");
        let off = "[outputs]\ntrace = false\nstep_log = false\nenergy_log = false\n";
        std::fs::write(&quiet, text.replace("[outputs]\n", off)).unwrap();
        let expected: Vec<String> = (1..=10)
            .map(|k| {
                // The tenth's communication point, as the run's time base
                // (nanoseconds) gives it.
                let t = ((stop * 1e9).round() as i64 * k / 10) as f64 / 1e9;
                format!("progress: t = {t} ({} %)", 10 * k)
            })
            .collect();
        for (k, file) in [&scenario, &quiet].into_iter().enumerate() {
            let out_dir = sub.join(format!("out{k}"));
            let stop = stop.to_string();
            let out = cosim(&[
                "run",
                file.to_str().unwrap(),
                "--stop",
                &stop,
                "--out",
                out_dir.to_str().unwrap(),
            ]);
            let (err, text) = (stderr(&out), String::from_utf8_lossy(&out.stdout));
            assert!(out.status.success(), "{}: {err}", file.display());
            let said: Vec<&str> = err
                .lines()
                .chain(text.lines())
                .filter(|l| l.starts_with("progress:"))
                .collect();
            assert_eq!(said, expected, "{}: {err}", file.display());
            assert_eq!(out_dir.join("trace.csv").exists(), file == &scenario);
        }
    }
}

/// `cosim inspect scenario.toml` (and `cosim check`) name the interface
/// each FMU subsystem runs where its FMU has Model Exchange, with the
/// solver settings in effect, at every level.
#[test]
fn inspect_of_a_scenario_names_the_interface_each_subsystem_runs() {
    let dir = tempfile::tempdir().unwrap();
    let me = fmus().join("me").join("fmi3");
    let scenario = dir.path().join("mixed.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"[simulation]
stop = 1.0

[master]
step = 0.01

[[subsystems]]
name = "steps"
fmu = "{steps}"

[[subsystems]]
name = "chassis"
fmu = "{chassis}"
interface = "model-exchange"

[subsystems.solver]
method = "rk45"
relative_tolerance = 1e-6
max_step = 0.005

[[subsystems]]
name = "plain"
fmu = "{gain}"

[[subsystems]]
name = "nest"

[subsystems.system.master]
step = 0.01

[[subsystems.system.subsystems]]
name = "wheel"
fmu = "{wheel}"
"#,
            steps = me.join("TimeEvents.fmu").display(),
            chassis = fmi2("QuarterCarChassis").display(),
            gain = fmi2("Gain").display(),
            wheel = fmi2("QuarterCarWheel").display(),
        ),
    )
    .unwrap();
    let expected = [
        "interfaces:\n",
        "  steps: Model Exchange, integrated by cosim's solver (bdf, relative tolerance 1e-5, absolute tolerance 1e-5 times each state's nominal)\n",
        "  chassis: Model Exchange, integrated by cosim's solver (rk45, relative tolerance 1e-6, absolute tolerance 1e-6 times each state's nominal, max step 0.005 s)\n",
        "  nest.wheel: Co-Simulation (its FMU has Model Exchange too: interface = \"model-exchange\" or --interface me runs it)\n",
    ];
    let out = cosim(&["check", scenario.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "check: {err}");
    for line in expected {
        assert!(err.contains(line), "check: missing {line:?} in:\n{err}");
    }
    // Gain has Co-Simulation only: nothing to choose, not listed.
    assert!(!err.contains("  plain:"), "{err}");
    // inspect: each subsystem with its FMU and the interface it runs (the
    // Co-Simulation only Gain too), on standard output, level by level.
    let out = cosim(&["inspect", scenario.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(out.status.success(), "inspect: {}", stderr(&out));
    for line in [
        format!(
            "    steps: FMU {} (TimeEvents, FMI 3.0), Model Exchange, integrated by cosim's solver (bdf, relative tolerance 1e-5, absolute tolerance 1e-5 times each state's nominal)\n",
            me.join("TimeEvents.fmu").display()
        ),
        format!(
            "    chassis: FMU {} (QuarterCarChassis, FMI 2.0), Model Exchange, integrated by cosim's solver (rk45, relative tolerance 1e-6, absolute tolerance 1e-6 times each state's nominal, max step 0.005 s)\n",
            fmi2("QuarterCarChassis").display()
        ),
        format!(
            "    plain: FMU {} (Gain, FMI 2.0), Co-Simulation\n",
            fmi2("Gain").display()
        ),
        "    nest: nested system, level nest below\n".to_string(),
        "\nlevel nest (nested system 'nest'): 1 subsystem, 0 connections, 0 power bonds\n  subsystems:\n".to_string(),
        format!(
            "    wheel: FMU {} (QuarterCarWheel, FMI 2.0), Co-Simulation (its FMU has Model Exchange too: interface = \"model-exchange\" or --interface me runs it)\n",
            fmi2("QuarterCarWheel").display()
        ),
    ] {
        assert!(text.contains(&line), "inspect: missing {line:?} in:\n{text}");
    }
    // --interface me at every level: refused for the FMU without it ...
    let out = cosim(&["check", scenario.to_str().unwrap(), "--interface", "me"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error: in command-line argument '--interface me': subsystem 'plain' runs the FMU's Model Exchange interface, which the FMU does not declare"),
        "{err}"
    );
    // ... and taken in the nest once that one is gone.
    let text = std::fs::read_to_string(&scenario).unwrap();
    let start = text.find("[[subsystems]]\nname = \"plain\"").unwrap();
    let end = start + text[start..].find("\n\n").unwrap() + 2;
    let without = dir.path().join("without_plain.toml");
    std::fs::write(&without, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let out = cosim(&["check", without.to_str().unwrap(), "--interface", "me"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("  nest.wheel: Model Exchange, integrated by cosim's solver (bdf, relative tolerance 1e-5"),
        "{err}"
    );
    // A scenario of Co-Simulation only FMUs has no such lines.
    let out = cosim(&["check", "scenarios/b5_mass_spring.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("interfaces:"), "{}", stderr(&out));
}

/// The Model Exchange example of docs/scenario.md, as it is written there
/// (FMU paths from `scenarios/`): it runs, the chassis and the ball
/// through cosim's solver, the wheel through its own Co-Simulation; the
/// quarter car as the Co-Simulation run of the same system (to the
/// solver's tolerance), the ball in free fall until its first contact.
#[test]
fn the_model_exchange_example_of_the_scenario_docs_runs() {
    let doc = std::fs::read_to_string(root().join("docs/scenario.md")).unwrap();
    let at = doc
        .find("The B1 quarter car with its chassis through the FMU's Model Exchange")
        .expect("the example's paragraph");
    let body = &doc[at..];
    let start = body.find("```toml\n").unwrap() + "```toml\n".len();
    let example = &body[start..start + body[start..].find("```").unwrap()];
    let dist = fmus().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let me = dir.path().join("me.toml");
    std::fs::write(&me, example.replace("../fmus/dist", &dist)).unwrap();
    let out_me = dir.path().join("me");
    let out = cosim(&[
        "run",
        me.to_str().unwrap(),
        "--no-progress",
        "-o",
        out_me.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_me.join("summary.json")).unwrap())
            .unwrap();
    let integrated: Vec<(&str, bool)> = summary["subsystems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["calls"]["solver"].is_object(),
            )
        })
        .collect();
    assert_eq!(
        integrated,
        [("chassis", true), ("wheel", false), ("ball", true)]
    );
    // The same system with every FMU through Co-Simulation (the ball,
    // which has no other interface, left out).
    let ball = example.find("[[subsystems]]\nname = \"ball\"").unwrap();
    let connections = example.find("[[connections]]").unwrap();
    let cs_text = format!("{}{}", &example[..ball], &example[connections..]).replace(
        "interface = \"model-exchange\"",
        "interface = \"co-simulation\"",
    );
    let solver = cs_text.find("[subsystems.solver]").unwrap();
    let next = solver + cs_text[solver..].find("\n\n").unwrap();
    let cs_text =
        format!("{}{}", &cs_text[..solver], &cs_text[next..]).replace("../fmus/dist", &dist);
    let cs = dir.path().join("cs.toml");
    std::fs::write(&cs, cs_text).unwrap();
    let out_cs = dir.path().join("cs");
    let out = cosim(&[
        "run",
        cs.to_str().unwrap(),
        "--no-progress",
        "-o",
        out_cs.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let a = Table::read(&out_me.join("trace.csv")).unwrap();
    let b = Table::read(&out_cs.join("trace.csv")).unwrap();
    assert_eq!(a.time(), b.time());
    for name in ["chassis.v_c", "wheel.F_c"] {
        let (x, y) = (a.column(name).unwrap(), b.column(name).unwrap());
        let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = x
            .iter()
            .zip(y)
            .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        // The solver's error, grown over 3000 coupled steps (measured
        // 1e-5 of the largest value; it shrinks with the tolerance).
        assert!(err < 1e-4 * scale, "{name}: {err} against {scale}");
    }
    // The ball: h = 1 - g t^2 / 2 until it first touches the floor.
    let (t, h) = (a.time(), a.column("ball.h").unwrap());
    let contact = (2.0f64 / 9.81).sqrt();
    for (&t, &h) in t.iter().zip(h).filter(|(t, _)| **t < contact) {
        assert!(
            (h - (1.0 - 9.81 * t * t / 2.0)).abs() < 1e-6,
            "h({t}) = {h}"
        );
    }
    assert!(*a.column("ball.contacts").unwrap().last().unwrap() >= 3.0);
}

/// Issue 43, item 6: `cosim inspect scenario.toml` writes its report to
/// standard output (`> file` keeps it) and shows what `cosim check` does
/// not: every level, the routes, the power bonds and the step plan.
#[test]
fn inspect_of_a_scenario_prints_its_levels_routes_bonds_and_step_plan() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("inspect.txt");
    fmus();
    let status = std::process::Command::new(cosim_tests::cosim_bin())
        .args(["inspect", "scenarios/b3_three_mass_hierarchical.toml"])
        .current_dir(root())
        .stdout(std::fs::File::create(&file).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&file).unwrap();
    let fmu = |m: &str| fmi2(m).display().to_string();
    let expected = format!(
        "scenarios/b3_three_mass_hierarchical.toml: 2 levels, t = 0 .. 25 s

level top: 2 subsystems (1 nested system), 3 connections, 1 power bond
  subsystems:
    s1: FMU {s1} (ThreeMassS1, FMI 2.0), Co-Simulation
    nest: nested system, level nest below
  routes (output -> input; a gain or offset as in `input = gain * output + offset`):
    nest.s2.l12 -> s1.l12
    s1.x1 -> nest.s2.x1
    s1.v1 -> nest.s2.v1
  power bonds:
    s1.l12~nest.s2.v1 (discovered): s1.l12 [N] / s1.v1 [m/s] <-> nest.s2.v1 [m/s] / nest.s2.l12 [N] (gains 1 into s1, 1 into nest); translational bond found from units/quantities of both FMUs
  step plan:
    master fixed-step: macro step 0.1 s
    order: Jacobi: every subsystem steps at once, from the outputs of the step before
    inputs: extrapolated with order 0 (held over the step)
    s1: every macro step
    nest: every macro step, in 4 steps of 0.025 s of its own master (level nest)
  feed-through:
    nest.s2.l12 depends directly on nest.s2.x1, nest.s2.v1
  algebraic loops: none
  zero-stability: structurally zero: no loop through direct feed-through, rho(D) = 0, ||D||inf = 0.5

level nest (nested system 'nest'): 2 subsystems, 3 connections, 1 power bond
  subsystems:
    s2: FMU {s2} (ThreeMassS2, FMI 2.0), Co-Simulation
    s3: FMU {s3} (ThreeMassS3, FMI 2.0), Co-Simulation
  routes (output -> input; a gain or offset as in `input = gain * output + offset`):
    (from the level above) -> s2.x1
    (from the level above) -> s2.v1
    s3.l23 -> s2.l23
    s2.x2 -> s3.x2
    s2.v2 -> s3.v2
    s2.l12 -> (the level above)
  power bonds:
    s2.l23~s3.v2 (discovered): s2.l23 [N] / s2.v2 [m/s] <-> s3.v2 [m/s] / s3.l23 [N]
  step plan:
    master fixed-step: macro step 0.025 s
    order: Jacobi: every subsystem steps at once, from the outputs of the step before
    inputs: extrapolated with order 0 (held over the step)
    s2: every macro step
    s3: every macro step
  feed-through:
    s2.l12 depends directly on s2.x1, s2.v1
    s3.l23 depends directly on s3.x2, s3.v2
  algebraic loops: none
  zero-stability: structurally zero: no loop through direct feed-through, rho(D) = 0, ||D||inf = 2
",
        s1 = fmu("ThreeMassS1"),
        s2 = fmu("ThreeMassS2"),
        s3 = fmu("ThreeMassS3"),
    );
    assert_eq!(text, expected);
    // `check` reports on standard error, and none of this.
    let check = cosim(&["check", "scenarios/b3_three_mass_hierarchical.toml"]);
    assert!(check.status.success(), "{}", stderr(&check));
    assert_eq!(stdout(&check), "");
    for part in ["routes", "step plan", "level nest", "s3.l23 -> s2.l23"] {
        assert!(!stderr(&check).contains(part), "{}", stderr(&check));
    }
    // A scenario's report is text: --json is for FMUs.
    let json = cosim(&[
        "inspect",
        "--json",
        "scenarios/b3_three_mass_hierarchical.toml",
    ]);
    assert_eq!(json.status.code(), Some(2));
    assert_eq!(
        stderr(&json),
        "error: --json is for FMUs; for a scenario, `cosim inspect` prints its structure as text\n"
    );
}

/// Routes through a function with gains, a Gauss-Seidel order derived from
/// the connections and a step multiple, as `cosim inspect` shows them; an
/// OSP system's vector sums; `inspect --help` names every input it takes.
#[test]
fn inspect_shows_routes_through_functions_and_the_gauss_seidel_plan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.toml");
    std::fs::write(
        &path,
        format!(
            r#"[simulation]
stop = 1.0

[master]
step = 1e-3
scheme = "gauss-seidel"
extrapolation = 1

[[subsystems]]
name = "chassis"
fmu = "{chassis}"
step_multiple = 2

[[subsystems]]
name = "wheel"
fmu = "{wheel}"

[[subsystems]]
name = "g"
fmu = "{gain}"
start = {{ u = 1.0 }}

[[functions]]
name = "forces"
kind = "sum"
inputs = 2

[[connections]]
from = "wheel.F_c"
to = "forces.in[0]"

[[connections]]
from = "g.y"
to = "forces.in[1]"
gain = 0.5

[[connections]]
from = "forces.out"
to = "chassis.F"
gain = -1.0

[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"
offset = 0.25
"#,
            chassis = fmi2("QuarterCarChassis").display(),
            wheel = fmi2("QuarterCarWheelSuspension").display(),
            gain = fmi2("Gain").display(),
        ),
    )
    .unwrap();
    let out = cosim(&["inspect", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        format!(
            "{}: 1 level, t = 0 .. 1 s\n\nlevel top: 3 subsystems, 1 function, 4 connections, 0 power bonds\n",
            path.display()
        ),
        "    forces: function sum of 2 inputs\n".to_string(),
        "    chassis.v_c -> wheel.v_c (offset 0.25)\n".to_string(),
        "    wheel.F_c, g.y (gain 0.5) -> forces.out (sum) -> chassis.F (gain -1)\n".to_string(),
        "  power bonds: none\n".to_string(),
        "  step plan:
    master fixed-step: macro step 0.001 s
    order: Gauss-Seidel: g, chassis, wheel, one after the other, each from the newest outputs (derived from the connections: producers first)
    inputs: extrapolated with order 1 (linear)
    chassis: every 2nd macro step (step 0.002 s)
    wheel: every macro step
    g: every macro step
  feed-through:
    wheel.F_c depends directly on wheel.v_c
  algebraic loops: none
"
        .to_string(),
    ] {
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    // An OSP system: a vector sum, one route per component.
    let osp = root().join("tests/python/osp/functions");
    let out = cosim(&["inspect", osp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "    vsum: function vector-sum of 2 inputs of 3 components each\n",
        "    d1.x, d2.x -> sum.out (sum) -> g.u\n",
        "    w1.y1, w2.y1 -> vsum.out[0] (vector-sum) -> w3.u1\n",
        "    w1.y3, w2.y3 -> vsum.out[2] (vector-sum) -> w3.u3\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // The help names every input.
    let help = stdout(&cosim(&["inspect", "--help"]));
    assert!(
        help.contains("What to inspect: an FMU (.fmu file or unpacked FMU directory), a directory of .fmu files, a scenario (.toml), an SSP (.ssp package or .ssd file) or OSP (OspSystemStructure.xml, or a directory holding it or a SystemStructure.ssd) system"),
        "{help}"
    );
    assert!(
        help.contains("the routes (which output feeds which input, through which functions, gains and offsets;"),
        "{help}"
    );
}

/// The cells of the variable table row of `name` in `cosim inspect`'s text.
fn variable_row(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&name) && w.len() > 2 && w[2].parse::<u32>().is_ok())
        .unwrap_or_else(|| panic!("no row of {name} in:\n{text}"))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Issue 43, item 6: FMI 2 variables are of FMI 2's types (`Real`,
/// `Integer`, `Boolean`, `String`), in the text and the JSON; FMI 3's keep
/// their own names.
#[test]
fn inspect_names_fmi2_types_as_fmi2_does() {
    let text = |fmu: &Path| {
        let out = cosim(&["inspect", fmu.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let gain = text(&fmi2("Gain"));
    assert_eq!(variable_row(&gain, "u")[..2], ["u", "Real"]);
    assert_eq!(variable_row(&gain, "y")[..2], ["y", "Real"]);
    assert!(!gain.contains("Float64"), "{gain}");
    let faulty = text(&fmi2("Faulty"));
    assert_eq!(
        variable_row(&faulty, "fail_mode")[..2],
        ["fail_mode", "Integer"]
    );
    let thermostat = text(&fmi2("ThermostatController"));
    assert_eq!(
        variable_row(&thermostat, "heater_on")[..2],
        ["heater_on", "Boolean"]
    );
    let greeting = text(&fmi2("Greeting"));
    assert_eq!(variable_row(&greeting, "name")[..2], ["name", "String"]);
    // The continuous states' table too.
    let chassis = text(&fmi2("QuarterCarChassis"));
    assert!(
        chassis
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["z_c", "v_c", "Real", "m", "1", "(default)"]),
        "{chassis}"
    );
    let out = cosim(&["inspect", "--json", fmi2("Gain").to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let types: Vec<&str> = json["variables"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["variables"].as_array().unwrap())
        .map(|v| v["var_type"].as_str().unwrap())
        .collect();
    // (u, y, k, time: Real; busy_work: Integer.)
    assert!(
        types.contains(&"Real") && types.contains(&"Integer"),
        "{types:?}"
    );
    assert!(
        types.iter().all(|t| ["Real", "Integer"].contains(t)),
        "{types:?}"
    );
    let fmi3 = text(&cosim_tests::fmi3("Gain"));
    assert_eq!(variable_row(&fmi3, "u")[..2], ["u", "Float64"]);
}

/// Issue 43, item 7: `--log-fmi-calls calls.log`, with a space as fmusim's
/// users write it, logs to the file; a scenario after the option is the
/// scenario (the log on standard error); another word is refused, saying
/// to write `=`.
#[test]
fn log_fmi_calls_takes_a_log_file_after_a_space() {
    let dir = tempfile::tempdir().unwrap();
    let gain = fmi2("Gain");
    let log = dir.path().join("calls.log");
    let out = cosim(&[
        "run",
        gain.to_str().unwrap(),
        "--stop",
        "0.02",
        "--out",
        dir.path().join("o1").to_str().unwrap(),
        "--log-fmi-calls",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.starts_with(
            "[OK] Gain: fmi2Instantiate(instanceName=\"Gain\", fmuType=1 /* fmi2CoSimulation */"
        ),
        "{calls}"
    );
    assert!(calls.contains("[OK] Gain: fmi2DoStep("), "{calls}");
    assert!(!stderr(&out).contains("fmi2DoStep"), "{}", stderr(&out));
    // Before the FMU: the same.
    let txt = dir.path().join("calls.TXT");
    let out = cosim(&[
        "run",
        "--log-fmi-calls",
        txt.to_str().unwrap(),
        gain.to_str().unwrap(),
        "--stop",
        "0.02",
        "--out",
        dir.path().join("o2").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&txt)
            .unwrap()
            .contains("fmi2DoStep")
    );
    // The FMU after the option: the option alone, the log on standard error.
    let out = cosim(&[
        "run",
        "--log-fmi-calls",
        gain.to_str().unwrap(),
        "--stop",
        "0.02",
        "--out",
        dir.path().join("o3").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[OK] Gain: fmi2DoStep("),
        "{}",
        stderr(&out)
    );
    // Neither: refused before anything runs, with the hint.
    let out = cosim(&[
        "run",
        gain.to_str().unwrap(),
        "--log-fmi-calls",
        "calls",
        "--out",
        dir.path().join("o4").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: --log-fmi-calls calls: is 'calls' the file of the FMI call log or the scenario? For the log, write --log-fmi-calls=calls (with a space, the file's name must end in .log or .txt); --log-fmi-calls alone logs to standard error\n"
    );
    assert!(!dir.path().join("o4").exists());
    let help = stdout(&cosim(&["run", "--help"]));
    assert!(
        help.contains("`--log-fmi-calls=FILE`, or `--log-fmi-calls FILE` when FILE's name ends in .log or .txt"),
        "{help}"
    );
}

/// Issue 43, item 7: `cosim run Model.fmu -o result.csv` writes the trace
/// to result.csv, as fmusim's `--output-file` does, and nothing else (no
/// directory named result.csv, no summary beside it, no lock left in the
/// temporary directory); `--plot` draws result.svg beside it. A scenario's
/// `-o x.csv` is still its output directory, with a warning.
#[test]
fn a_single_fmu_run_writes_its_trace_to_o_file_csv() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    fmus();
    let run = |args: &[&str]| {
        std::process::Command::new(cosim_tests::cosim_bin())
            .args(args)
            .current_dir(&work)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap()
    };
    let gain = fmi2("Gain");
    let out = run(&[
        "run",
        gain.to_str().unwrap(),
        "--stop",
        "0.03",
        "--set",
        "k=2",
        "--set",
        "u=1.5",
        "--no-progress",
        "-o",
        "result.csv",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let csv = work.join("result.csv");
    assert!(csv.is_file(), "result.csv is not a file");
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "time [s],Gain.y\n0.0,3.0\n0.01,3.0\n0.02,3.0\n0.03,3.0\n"
    );
    assert!(
        err.contains("done: t = 0.03 reached in 3 macro steps (")
            && err.ends_with(" s); trace in result.csv\n"),
        "{err}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["result.csv"]);
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "left in TMPDIR"
    );
    // Into a new directory, with the plot beside it.
    let out = run(&[
        "run",
        gain.to_str().unwrap(),
        "--stop",
        "0.03",
        "--no-progress",
        "--plot",
        "-o",
        "sub/r.CSV",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(work.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["r.CSV", "r.svg"]);
    assert!(
        stderr(&out).contains("plot: sub/r.svg ("),
        "{}",
        stderr(&out)
    );
    // An existing directory stays a directory.
    std::fs::create_dir(work.join("d.csv")).unwrap();
    let out = run(&[
        "run",
        gain.to_str().unwrap(),
        "--stop",
        "0.03",
        "--no-progress",
        "-o",
        "d.csv",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(work.join("d.csv/trace.csv").is_file());
    assert!(work.join("d.csv/summary.json").is_file());
    // A scenario: the directory, as asked, and a warning.
    let out = run(&[
        "run",
        root()
            .join("scenarios/b1_quarter_car_a.toml")
            .to_str()
            .unwrap(),
        "--stop",
        "0.01",
        "--no-progress",
        "-o",
        "s.csv",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(work.join("s.csv/trace.csv").is_file());
    assert!(
        stderr(&out).contains("warning: -o s.csv: a scenario's outputs go into a directory of that name (trace.csv, energy.csv, steps.csv, summary.json); only a single FMU's run writes its trace alone to FILE.csv\n"),
        "{}",
        stderr(&out)
    );
    let help = stdout(&run(&["run", "--help"]));
    assert!(
        help.contains("For a single FMU, `-o FILE.csv` (a name ending in .csv that is not a directory) writes the trace alone to FILE.csv, as fmusim's --output-file does: no energy log, step log or summary"),
        "{help}"
    );
}

/// Issue 43, item 8: counts agree with their nouns (`1 subsystem`, `1 power
/// bond`, `1 macro step`), paths are shown normalised (`a/../b` is `b`),
/// and the top-level help says `convert` takes FMUs too.
#[test]
fn counts_agree_with_their_nouns_and_paths_are_shown_normalised() {
    let dir = tempfile::tempdir().unwrap();
    // One subsystem, no connection, no bond.
    let gain = fmi2("Gain");
    let out = cosim(&["check", gain.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.ends_with(&format!(
            "{}: ok (1 subsystem, 0 connections, 0 power bonds, master fixed-step, t = 0 .. 10)\n",
            gain.display()
        )),
        "{err}"
    );
    // Two subsystems, one bond.
    let out = cosim(&["check", "scenarios/b1_quarter_car_a.toml"]);
    let err = stderr(&out);
    assert!(
        err.ends_with("scenarios/b1_quarter_car_a.toml: ok (2 subsystems, 2 connections, 1 power bond, master fixed-step, t = 0 .. 4)\n"),
        "{err}"
    );
    // One macro step, into a path with `..` in it, shown normalised.
    let out_dir = dir.path().join("a").join("..").join("b");
    let out = cosim(&[
        "run",
        "scenarios/sweeps/../b1_quarter_car_a.toml",
        "--stop",
        "0.001",
        "--no-progress",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("done: t = 0.001 reached in 1 macro step ("),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            " s); outputs in {}\n",
            dir.path().join("b").display()
        )),
        "{err}"
    );
    assert!(!err.contains("/../"), "{err}");
    // The top-level help: convert takes FMUs.
    let help = stdout(&cosim(&["--help"]));
    assert!(
        help.contains("convert  Convert an SSP (.ssp, .ssd) or OSP (OspSystemStructure.xml) system description, or an FMU (the scenario `cosim run Model.fmu` runs), into a cosim TOML scenario"),
        "{help}"
    );
}
