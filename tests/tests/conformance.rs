//! FMI conformance (issue 16): every master, in every isolation mode,
//! drives the project's FMUs, which refuse every call the FMI 2 and FMI 3
//! state machines forbid ("Illegal call sequence"); the kit variants that
//! reproduce real exporters' behaviour (parameters reset in
//! `fmi2SetupExperiment`, outputs frozen after
//! `noSetFMUStatePriorToCurrentPoint = false`, a crash at process exit,
//! FMUs that end their own simulation) run as FMPy and libcosim run them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_tests::{fmus, run_logged, scenario, with_master};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Runs a scenario to `stop` with `--isolation <isolation>`; it must
/// complete with no call refused by the strict FMUs.
fn completes_without_an_illegal_call(path: &Path, stop: &str, isolation: &str, what: &str) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = run_logged(
        path,
        out_dir.path(),
        &["--stop", stop, "--isolation", isolation],
    );
    let err = stderr(&out);
    assert!(
        out.status.success(),
        "{what} (--isolation {isolation}) failed:\n{err}"
    );
    assert!(
        !err.contains("Illegal call sequence"),
        "{what} (--isolation {isolation}): an FMU refused a call:\n{err}"
    );
    assert_eq!(
        summary(out_dir.path())["status"],
        "completed",
        "{what} (--isolation {isolation})"
    );
}

/// Every master, with the strict FMUs, in process and in host processes.
#[test]
fn every_master_follows_the_state_machines_in_every_isolation_mode() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nepce = d.join("nepce");
    let gauss = d.join("gauss_seidel");
    let affine = d.join("affine");
    for p in [&nepce, &gauss, &affine] {
        std::fs::create_dir_all(p).unwrap();
    }
    let cases: Vec<(PathBuf, &str, &str)> = vec![
        (
            scenario("b1_quarter_car_a.toml"),
            "0.2",
            "fixed-step, Jacobi",
        ),
        (
            with_master(
                "b1_quarter_car_a.toml",
                "kind = \"fixed-step\"\nstep = 1e-3\nscheme = \"gauss-seidel\"\nextrapolation = 1",
                &gauss,
            ),
            "0.2",
            "fixed-step, Gauss-Seidel",
        ),
        (
            scenario("b1_quarter_car_a_fmi3.toml"),
            "0.2",
            "fixed-step, FMI 3",
        ),
        (scenario("thermostat.toml"), "60", "fixed-step, discrete"),
        (scenario("b5_mass_spring.toml"), "0.5", "fixed-step"),
        (scenario("b1_quarter_car_a_ecco.toml"), "0.2", "ecco"),
        (
            scenario("b1_quarter_car_b_nonlinear_predictor_corrector.toml"),
            "0.2",
            "predictor-corrector",
        ),
        (
            with_master("b1_quarter_car_a.toml", "kind = \"nepce\"", &nepce),
            "0.2",
            "nepce",
        ),
        (scenario("b2_richardson.toml"), "0.05", "richardson"),
        (scenario("b4_two_mass_ifosmondi.toml"), "0.05", "ifosmondi"),
        (
            with_master(
                "b4_two_mass_ifosmondi.toml",
                "kind = \"iterative-affine\"\nstep = 2e-3",
                &affine,
            ),
            "0.05",
            "iterative-affine",
        ),
        (
            scenario("b3_three_mass_hierarchical.toml"),
            "1",
            "nested (hierarchical)",
        ),
    ];
    for (path, stop, what) in &cases {
        for isolation in ["none", "process"] {
            completes_without_an_illegal_call(path, stop, isolation, what);
        }
    }
}

// ----- scenarios written by the tests -----------------------------------

/// The path of a quirk build in `fmus/dist/quirks/`.
fn quirk(file: &str) -> PathBuf {
    fmus().join("quirks").join(file)
}

/// Writes a scenario: `[simulation]` from 0 to `stop`, the master table
/// body `master`, and `rest` (subsystems, connections, outputs).
fn write_scenario(dir: &Path, name: &str, stop: f64, master: &str, rest: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let text = format!("[simulation]\nstart = 0.0\nstop = {stop}\n\n[master]\n{master}\n\n{rest}");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `path` (with `extra` arguments); returns the output and the out dir.
fn run_in(path: &Path, extra: &[&str]) -> (Output, tempfile::TempDir) {
    let out_dir = tempfile::tempdir().unwrap();
    let out = run_logged(path, out_dir.path(), extra);
    (out, out_dir)
}

fn trace(dir: &Path) -> cosim_core::metrics::Table {
    cosim_core::metrics::Table::read(&dir.join("trace.csv")).unwrap()
}

/// One Integrator (x' = u) with x0 = 2 and u = 1 from `fmu`.
fn integrator(fmu: &Path) -> String {
    format!(
        "[[subsystems]]\nname = \"int\"\nfmu = \"{}\"\nparameters = {{ x0 = 2.0 }}\nstart = {{ u = 1.0 }}\n\n[outputs]\nvariables = [\"int.x\"]\n",
        fmu.display()
    )
}

// ----- parameters after fmi2SetupExperiment -----------------------------

/// An exporter in wide use resets every parameter to its start value in
/// `fmi2SetupExperiment`: parameters set before it are silently lost. The
/// kit variant does the same; cosim sets them after it.
#[test]
fn parameters_survive_an_fmu_that_resets_them_in_setup_experiment() {
    let fmu = quirk("Integrator-resets-in-setup.fmu");
    // What the variant does to a master that sets parameters first (the
    // standard allows it in Instantiated): x0 = 2 is gone.
    let f = cosim_fmi::Fmu::open(&fmu).unwrap();
    let md = f.model_description();
    let vr = |n: &str| md.variable_by_name(n).unwrap().1.value_reference;
    let mut inst = f
        .instantiate("early", &cosim_fmi::InstantiateOptions::default())
        .unwrap();
    inst.set_f64(&[vr("x0")], &[2.0]).unwrap();
    inst.setup_experiment(None, 0.0, Some(1.0)).unwrap();
    inst.enter_initialization_mode().unwrap();
    inst.exit_initialization_mode().unwrap();
    let mut x = [f64::NAN];
    inst.get_f64(&[vr("x")], &mut x).unwrap();
    assert_eq!(x[0], 0.0, "the variant should have reset x0");
    drop(inst);

    let dir = tempfile::tempdir().unwrap();
    let path = write_scenario(
        dir.path(),
        "reset",
        1.0,
        "kind = \"fixed-step\"\nstep = 0.1",
        &integrator(&fmu),
    );
    for isolation in ["none", "process"] {
        let (out, out_dir) = run_in(&path, &["--isolation", isolation]);
        assert!(out.status.success(), "{}", stderr(&out));
        let t = trace(out_dir.path());
        let x = t.column("int.x").unwrap();
        assert_eq!(x[0], 2.0, "--isolation {isolation}: x0 was lost");
        assert!((x[x.len() - 1] - 3.0).abs() < 1e-12, "{x:?}");
    }
}

// ----- noSetFMUStatePriorToCurrentPoint ----------------------------------

/// An exporter in wide use freezes its outputs after a doStep with
/// `noSetFMUStatePriorToCurrentPoint = false`. cosim passes true wherever
/// no earlier state will be restored, false only where one may be.
#[test]
fn no_set_prior_is_true_except_where_a_master_restores_an_earlier_state() {
    let dir = tempfile::tempdir().unwrap();
    for fmu in [
        "Integrator-freezes-without-no-set-prior.fmu",
        "Integrator-fmi3-freezes-without-no-set-prior.fmu",
    ] {
        let body = integrator(&quirk(fmu));
        // Masters that never restore, or restore only the state at the
        // start of the step just made (fixed-point iteration): true, so
        // x = 2 + t.
        for (name, master) in [
            ("fixed", "kind = \"fixed-step\"\nstep = 0.1"),
            ("nepce", "kind = \"nepce\"\nstep = 0.1"),
            ("ifosmondi", "kind = \"ifosmondi\"\nstep = 0.1"),
        ] {
            let path = write_scenario(dir.path(), name, 1.0, master, &body);
            let (out, out_dir) = run_in(&path, &[]);
            assert!(out.status.success(), "{fmu} {name}: {}", stderr(&out));
            let t = trace(out_dir.path());
            let (time, x) = (t.time(), t.column("int.x").unwrap());
            for (ti, xi) in time.iter().zip(x) {
                assert!(
                    (xi - (2.0 + ti)).abs() < 1e-9,
                    "{fmu} {name}: x({ti}) = {xi}"
                );
            }
        }
        // Richardson restores the state two steps back: false, and this
        // FMU then freezes after its first step (that is the FMU's doing;
        // the test shows where cosim passes false).
        let path = write_scenario(
            dir.path(),
            "richardson",
            1.0,
            "kind = \"richardson\"\nstep = 0.1",
            &body,
        );
        let (out, out_dir) = run_in(&path, &[]);
        assert!(out.status.success(), "{fmu} richardson: {}", stderr(&out));
        let t = trace(out_dir.path());
        let (time, x) = (t.time().to_vec(), t.column("int.x").unwrap().to_vec());
        // The first doStep is the first half of Richardson's first macro
        // step (to time[1]), made with false: x = 2 + time[1] / 2 after
        // it, then frozen there (every row after it, to the last bit).
        assert!(x.len() > 10, "{fmu} richardson: x = {x:?}");
        assert!(
            (x[1] - (2.0 + time[1] / 2.0)).abs() < 1e-12,
            "{fmu} richardson: x = {x:?} at {time:?}"
        );
        assert!(
            x[1..].iter().all(|v| v.to_bits() == x[1].to_bits()),
            "{fmu} richardson: x = {x:?}"
        );
        assert!(*time.last().unwrap() > 0.9, "{fmu} richardson: {time:?}");
    }
}

// ----- a crash in foreign code at process exit ---------------------------

/// FMUs built with PythonFMU crash in Python's finalisation at process
/// exit. The kit variant registers such a crash in fmi2FreeInstance; a
/// complete run still exits 0 with every output.
#[test]
fn a_crash_at_process_exit_after_a_complete_run_does_not_change_the_exit_status() {
    let fmu = quirk("Integrator-crashes-at-exit.fmu");
    let dir = tempfile::tempdir().unwrap();
    let path = write_scenario(
        dir.path(),
        "crash",
        1.0,
        "kind = \"fixed-step\"\nstep = 0.1",
        &integrator(&fmu),
    );
    for isolation in ["none", "process"] {
        let (out, out_dir) = run_in(&path, &["--isolation", isolation]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "--isolation {isolation}: {}",
            stderr(&out)
        );
        let x = trace(out_dir.path()).column("int.x").unwrap().to_vec();
        assert_eq!(x.len(), 11);
        assert_eq!(summary(out_dir.path())["status"], "completed");
    }
    // The variant does crash a process that exits normally after freeing
    // it: cosim's test binary, in a child, through the library directly.
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_at_exit_child", "--ignored", "--nocapture"])
        .env("COSIM_CRASH_AT_EXIT_CHILD", &fmu)
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        child.status.signal(),
        Some(11),
        "the variant did not crash its process at exit: {:?}\n{}",
        child.status,
        stderr(&child)
    );
}

/// The child of the test above, run by it (`--ignored`): loads, runs
/// and frees the variant, then lets the test binary exit normally.
#[test]
#[ignore = "the child process of a_crash_at_process_exit_after_a_complete_run_does_not_change_the_exit_status, which runs it"]
fn crash_at_exit_child() {
    let fmu = std::env::var_os("COSIM_CRASH_AT_EXIT_CHILD")
        .expect("run by its parent test, which names the FMU in COSIM_CRASH_AT_EXIT_CHILD");
    let f = cosim_fmi::Fmu::open(Path::new(&fmu)).unwrap();
    let mut inst = f
        .instantiate("child", &cosim_fmi::InstantiateOptions::default())
        .unwrap();
    inst.setup_experiment(None, 0.0, None).unwrap();
    inst.enter_initialization_mode().unwrap();
    inst.exit_initialization_mode().unwrap();
    inst.do_step(0.0, 0.1, true).unwrap();
    inst.terminate().unwrap();
    drop(inst);
}

// ----- FMUs that end their own simulation --------------------------------

/// `Terminating` (y' = u, u = 1) asks to end the simulation at t_end: FMI 2
/// with Discard and fmi2Terminated, FMI 3 with terminateSimulation (OK when
/// t_end is a communication point, Discard when it falls inside a step,
/// early return being off). The run ends there normally.
#[test]
fn an_fmu_that_ends_the_simulation_ends_the_run_normally_at_its_last_successful_time() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["fmi2", "fmi3"] {
        let fmu = fmus().join(version).join("Terminating.fmu");
        // On a communication point (0.5) and inside a step (0.55).
        for (t_end, rows) in [(0.5, 6), (0.55, 7)] {
            let body = format!(
                "[[subsystems]]\nname = \"term\"\nfmu = \"{}\"\nparameters = {{ t_end = {t_end} }}\n\n[outputs]\nvariables = [\"term.y\"]\n",
                fmu.display()
            );
            let path = write_scenario(
                dir.path(),
                &format!("term_{version}"),
                1.0,
                "kind = \"fixed-step\"\nstep = 0.1",
                &body,
            );
            for isolation in ["none", "process"] {
                let what = format!("{version}, t_end = {t_end}, --isolation {isolation}");
                let (out, out_dir) = run_in(&path, &["--isolation", isolation]);
                let err = stderr(&out);
                assert_eq!(out.status.code(), Some(0), "{what}: {err}");
                assert!(
                    err.contains(&format!(
                        "subsystem 'term' ended the simulation at t = {t_end}"
                    )),
                    "{what}: {err}"
                );
                let t = trace(out_dir.path());
                let (time, y) = (t.time(), t.column("term.y").unwrap());
                assert_eq!(time.len(), rows, "{what}: {time:?}");
                assert_eq!(time[rows - 1], t_end, "{what}: the last row");
                assert!((y[rows - 1] - t_end).abs() < 1e-12, "{what}: y = {y:?}");
                let s = summary(out_dir.path());
                assert_eq!(s["status"], "terminated", "{what}");
                assert_eq!(s["ended_by"]["subsystem"], "term", "{what}");
                assert_eq!(s["ended_by"]["t"], t_end, "{what}");
                assert_eq!(s["t_reached"], t_end, "{what}");
            }
        }
    }
}

/// With several FMUs, the others complete the macro step in which one
/// ended the simulation, whatever their order, with one thread as on the
/// worker pool and under Gauss-Seidel; the last step (0.48 to 0.5, cut at
/// the FMU's last successful time) is exact and counted, and the summary
/// agrees with the step log.
#[test]
fn the_other_fmus_complete_the_macro_step_in_which_one_ended_the_simulation() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["fmi2", "fmi3"] {
        let term = format!(
            "[[subsystems]]\nname = \"term\"\nfmu = \"{}\"\n\n",
            fmus().join(version).join("Terminating.fmu").display()
        );
        let int = format!(
            "[[subsystems]]\nname = \"int\"\nfmu = \"{}\"\nstart = {{ u = 1.0 }}\n\n",
            fmus().join(version).join("Integrator.fmu").display()
        );
        let coupling = "[[connections]]\nfrom = \"term.y\"\nto = \"gain.u\"\n\n";
        let gain = format!(
            "[[subsystems]]\nname = \"gain\"\nfmu = \"{}\"\n\n",
            fmus().join(version).join("Gain.fmu").display()
        );
        for (order, scheme, threads) in [
            ("term first", "", 1),
            ("term last", "", 1),
            ("term first", "", 2),
            ("term first", "scheme = \"gauss-seidel\"\n", 1),
        ] {
            let body = if order == "term first" {
                format!("{term}{int}{gain}{coupling}")
            } else {
                format!("{int}{gain}{term}{coupling}")
            };
            let what = format!("{version}, {order}, {scheme:?} threads = {threads}");
            let path = write_scenario(
                dir.path(),
                "several",
                1.0,
                &format!("kind = \"fixed-step\"\nstep = 0.03\nthreads = {threads}\n{scheme}"),
                &body,
            );
            let (out, out_dir) = run_in(&path, &[]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(0), "{what}: {err}");
            let t = trace(out_dir.path());
            let time = t.time();
            assert_eq!(*time.last().unwrap(), 0.5, "{what}");
            // The integrator completed the macro step from 0.48 to 0.51.
            let x = t.column("int.x").unwrap();
            assert!((x.last().unwrap() - 0.51).abs() < 1e-12, "{what}: {x:?}");
            let steps =
                cosim_core::metrics::Table::read(&out_dir.path().join("steps.csv")).unwrap();
            let step = steps.column("step").unwrap();
            assert_eq!(*step.last().unwrap(), 0.02, "{what}: the last step");
            let s = summary(out_dir.path());
            assert_eq!(s["stats"]["macro_steps"], step.len(), "{what}");
            assert!(
                s["mean_step"].as_f64().unwrap() <= s["max_step"].as_f64().unwrap(),
                "{what}: {s}"
            );
            assert_eq!(s["min_step"], 0.02, "{what}");
        }
    }
}

/// Inside a nested system the request ends the whole run, named by the
/// FMU's path; the other FMUs' rows hold their last completed step.
#[test]
fn a_terminating_fmu_inside_a_nested_system_ends_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "[[subsystems]]\nname = \"int\"\nfmu = \"{int}\"\n\n[[subsystems]]\nname = \"nest\"\nexposes = [\"term.y\"]\n\n[subsystems.system.master]\nstep = 0.05\n\n[[subsystems.system.subsystems]]\nname = \"term\"\nfmu = \"{term}\"\nparameters = {{ t_end = 0.35 }}\n\n[[connections]]\nfrom = \"nest.term.y\"\nto = \"int.u\"\n\n[outputs]\nvariables = [\"int.x\", \"nest.term.y\"]\n",
        int = fmus().join("fmi2").join("Integrator.fmu").display(),
        term = fmus().join("fmi3").join("Terminating.fmu").display(),
    );
    let path = write_scenario(
        dir.path(),
        "nested_term",
        1.0,
        "kind = \"fixed-step\"\nstep = 0.1",
        &body,
    );
    let (out, out_dir) = run_in(&path, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("subsystem 'nest.term' ended the simulation at t = 0.35"),
        "{err}"
    );
    let t = trace(out_dir.path());
    let time = t.time();
    assert_eq!(*time.last().unwrap(), 0.35, "{time:?}");
    let y = t.column("nest.term.y").unwrap();
    assert!((y[y.len() - 1] - 0.35).abs() < 1e-12, "{y:?}");
    assert_eq!(
        summary(out_dir.path())["ended_by"]["subsystem"],
        "nest.term"
    );
}

// ----- errors during initialization --------------------------------------

/// An FMU that fails while initializing: the run stops before any step,
/// no row is made up, the summary says so, and the FMUs still in
/// Initialization Mode are freed without fmi*Terminate (illegal there;
/// the strict FMUs would log "Illegal call sequence").
#[test]
fn an_error_in_initialization_writes_no_row_and_terminates_nothing_in_initialization_mode() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "[[subsystems]]\nname = \"bad\"\nfmu = \"{bad}\"\nparameters = {{ x0 = nan }}\n\n[[subsystems]]\nname = \"int\"\nfmu = \"{int}\"\n\n[outputs]\nvariables = [\"int.x\", \"bad.x\"]\n",
        bad = fmus().join("fmi2").join("Faulty.fmu").display(),
        int = fmus().join("fmi3").join("Integrator.fmu").display(),
    );
    let path = write_scenario(
        dir.path(),
        "init_error",
        1.0,
        "kind = \"fixed-step\"\nstep = 0.1",
        &body,
    );
    for isolation in ["none", "process"] {
        let (out, out_dir) = run_in(&path, &["--isolation", isolation]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "--isolation {isolation}: {err}");
        assert!(err.contains("x0"), "{err}");
        assert!(
            err.contains("initialization failed: no step was made"),
            "{err}"
        );
        assert!(!err.contains("Illegal call sequence"), "{err}");
        let text = std::fs::read_to_string(out_dir.path().join("trace.csv")).unwrap();
        assert_eq!(text.lines().count(), 1, "only the header: {text}");
        let s = summary(out_dir.path());
        assert_eq!(s["status"], "error");
        assert_eq!(s["initialized"], false);
    }
}

// ----- exact time ---------------------------------------------------------

/// A step that is not a whole number of nanoseconds runs on a finer tick;
/// one that no tick represents is refused at [master].
#[test]
fn time_is_kept_in_ticks_fine_enough_for_the_step_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scenario(
        dir.path(),
        "ticks",
        0.25,
        "kind = \"fixed-step\"\nstep = 0.0009765625",
        &integrator(&fmus().join("fmi2").join("Integrator.fmu")),
    );
    let (out, out_dir) = run_in(&path, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = trace(out_dir.path());
    let time = t.time();
    assert_eq!(time.len(), 257);
    for (n, &ti) in time.iter().enumerate() {
        assert_eq!(ti, n as f64 / 1024.0, "row {n}");
    }

    let path = write_scenario(
        dir.path(),
        "third",
        1.0,
        "kind = \"fixed-step\"\nstep = 0.3333333333333333",
        &integrator(&fmus().join("fmi2").join("Integrator.fmu")),
    );
    let (out, _out_dir) = run_in(&path, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not a whole number of ticks at any resolution from 1 ns to 1 fs"),
        "{err}"
    );
    assert!(
        err.contains("third.toml:"),
        "the message names the file: {err}"
    );
}

// ----- the strict FMU itself ----------------------------------------------

/// The kit FMUs refuse what a wrong master would do: restoring a state
/// from before a step that promised no such restore.
#[test]
fn the_strict_fmu_refuses_a_restore_that_no_set_prior_ruled_out() {
    let f = cosim_fmi::Fmu::open(fmus().join("fmi2").join("Integrator.fmu")).unwrap();
    let mut inst = f
        .instantiate("strict", &cosim_fmi::InstantiateOptions::default())
        .unwrap();
    inst.setup_experiment(None, 0.0, None).unwrap();
    inst.enter_initialization_mode().unwrap();
    inst.exit_initialization_mode().unwrap();
    let at_start = inst.get_state(None).unwrap();
    inst.do_step(0.0, 0.1, true).unwrap();
    // Restoring the state at the last step's start is allowed...
    inst.set_state(at_start).unwrap();
    inst.do_step(0.0, 0.1, true).unwrap();
    inst.do_step(0.1, 0.1, true).unwrap();
    // ... one from before it is not.
    let err = inst.set_state(at_start).unwrap_err().to_string();
    assert!(err.contains("Illegal call sequence"), "{err}");
}

// ----- FMI 3 structural parameters ---------------------------------------

/// Structural parameters are set in Configuration Mode, the only state
/// the standard allows; the strict FMU refuses them anywhere else.
#[test]
fn structural_parameters_are_set_in_configuration_mode() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "[[subsystems]]\nname = \"gain\"\nfmu = \"{}\"\nparameters = {{ n = 3, k = 2.0 }}\nstart = {{ u = 1.5 }}\n\n[outputs]\nvariables = [\"gain.y\"]\n",
        fmus().join("fmi3").join("StructuralGain.fmu").display()
    );
    let path = write_scenario(
        dir.path(),
        "structural",
        0.3,
        "kind = \"fixed-step\"\nstep = 0.1",
        &body,
    );
    for isolation in ["none", "process"] {
        let log = dir.path().join(format!("calls-{isolation}.log"));
        let (out, out_dir) = run_in(
            &path,
            &[
                "--isolation",
                isolation,
                &format!("--log-fmi-calls={}", log.display()),
            ],
        );
        assert!(
            out.status.success(),
            "--isolation {isolation}: {}",
            stderr(&out)
        );
        let y = trace(out_dir.path()).column("gain.y").unwrap().to_vec();
        assert!(y.iter().all(|&y| y == 9.0), "y = k n u = 9: {y:?}");
        // The order of the calls.
        let text = std::fs::read_to_string(&log).unwrap();
        let at = |what: &str| {
            text.lines()
                .position(|l| l.contains(what))
                .unwrap_or_else(|| panic!("no {what} in\n{text}"))
        };
        let enter = at("fmi3EnterConfigurationMode(");
        let set_n = at("fmi3SetUInt64(");
        let exit = at("fmi3ExitConfigurationMode(");
        let set_k = at("fmi3SetFloat64(valueReferences={3}");
        let init = at("fmi3EnterInitializationMode(");
        assert!(
            enter < set_n && set_n < exit && exit < set_k && set_k < init,
            "{text}"
        );
    }
}
