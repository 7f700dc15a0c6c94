//! The `cosim` command line: exit statuses, messages, outputs kept on
//! failure, inspect and check on everything the project ships.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use cosim_tests::{Table, cosim, fmi2, fmus, root};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
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
    for command in ["inspect", "check"] {
        let out = cosim(&[command, scenario.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(out.status.success(), "{command}: {err}");
        for line in expected {
            assert!(err.contains(line), "{command}: missing {line:?} in:\n{err}");
        }
        // Gain has Co-Simulation only: nothing to choose, not listed.
        assert!(!err.contains("  plain:"), "{err}");
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
    let out = cosim(&["inspect", "scenarios/b5_mass_spring.toml"]);
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
