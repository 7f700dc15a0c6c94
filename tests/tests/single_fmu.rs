//! `cosim run Model.fmu` (and `check`, `convert`): one FMU run directly,
//! as fmusim and `fmpy simulate` do, through a scenario made for it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_tests::{Table, cosim, fmi2, fmi3};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts exit status `code`, no panic, and every key word in stderr.
#[track_caller]
fn status(out: &Output, code: i32, keys: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for k in keys {
        assert!(err.contains(k), "missing {k:?} in:\n{err}");
    }
    err
}

/// A copy of `fmu` in `dir` (outputs then go to `dir/out/<stem>`).
fn copy(fmu: &Path, dir: &Path) -> PathBuf {
    let to = dir.join(fmu.file_name().unwrap());
    std::fs::copy(fmu, &to).unwrap();
    to
}

/// `cosim run <fmu> --no-progress <args>`.
fn run(fmu: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", s(fmu), "--no-progress"];
    all.extend_from_slice(args);
    cosim(&all)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

#[test]
fn an_fmu_runs_with_its_default_experiment_every_output_traced_fmi2_and_fmi3() {
    for fmu in [fmi2("Integrator"), fmi3("Integrator")] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = copy(&fmu, dir.path());
        let out = run(&fmu, &["--set", "x0=1.5"]);
        let err = status(&out, 0, &["input u of the FMU keeps its start value"]);
        assert!(!err.contains("power bonds"), "{err}");
        // Outputs next to the FMU, as for a scenario: out/<stem>.
        let outputs = dir.path().join("out").join("Integrator");
        for file in ["trace.csv", "steps.csv", "summary.json"] {
            assert!(outputs.join(file).is_file(), "{file} missing: {err}");
        }
        let trace = Table::read(&outputs.join("trace.csv")).unwrap();
        assert_eq!(trace.names, ["time", "Integrator.x"]);
        // DefaultExperiment 0 .. 10 s, stepSize 0.01: 1001 rows.
        let t = trace.time();
        assert_eq!((t.len(), t[0], t[1], t[1000]), (1001, 0.0, 0.01, 10.0));
        assert!(
            trace
                .column("Integrator.x")
                .unwrap()
                .iter()
                .all(|&x| x == 1.5)
        );
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(outputs.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["status"], "completed", "{summary}");
    }
}

#[test]
fn every_option_changes_the_run_as_its_name_says() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = copy(&fmi2("Integrator"), dir.path());
    let input = dir.path().join("u.csv");
    std::fs::write(&input, "time,u\n0,2\n10,2\n").unwrap();
    let out_dir = dir.path().join("elsewhere");
    let out = run(
        &fmu,
        &[
            "--start",
            "1",
            "--stop",
            "3",
            "--step",
            "0.1",
            "--output-interval",
            "0.5",
            "--output-variables",
            "x",
            "Integrator.u",
            "--set",
            "x0=1",
            "--input-file",
            s(&input),
            "-o",
            s(&out_dir),
        ],
    );
    let err = status(&out, 0, &[]);
    assert!(!err.contains("keeps its start value"), "{err}");
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_eq!(trace.names, ["time", "Integrator.x", "Integrator.u"]);
    assert_eq!(trace.time(), [1.0, 1.5, 2.0, 2.5, 3.0]);
    // x' = u = 2 from x(1) = 1.
    for (t, x) in trace
        .time()
        .iter()
        .zip(trace.column("Integrator.x").unwrap())
    {
        assert!(close(*x, 1.0 + 2.0 * (t - 1.0)), "x({t}) = {x}");
    }
    assert!(
        trace
            .column("Integrator.u")
            .unwrap()
            .iter()
            .all(|&u| u == 2.0)
    );
    let steps = Table::read(&out_dir.join("steps.csv")).unwrap();
    assert_eq!(steps.time().len(), 20, "{:?}", steps.names);
    assert!(!dir.path().join("out").exists());
}

#[test]
fn the_long_out_option_and_the_start_of_a_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = copy(&fmi3("Integrator"), dir.path());
    let out_dir = dir.path().join("o");
    let out = run(
        &fmu,
        &[
            "--out",
            s(&out_dir),
            "--start",
            "9.5",
            "--output-variables",
            "u",
        ],
    );
    status(&out, 0, &[]);
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_eq!(trace.names, ["time", "Integrator.u"]);
    assert_eq!(trace.time().first(), Some(&9.5));
    assert_eq!(trace.time().len(), 51);
    // --start is new for scenario files too.
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "[[subsystems]]\nname = \"i\"\nfmu = \"{}\"\n",
            s(&fmi2("Integrator"))
        ),
    )
    .unwrap();
    let out = cosim(&[
        "run",
        s(&scenario),
        "--no-progress",
        "--start",
        "9",
        "-o",
        s(&out_dir),
    ]);
    status(&out, 0, &[]);
    let trace = Table::read(&out_dir.join("trace.csv")).unwrap();
    assert_eq!((trace.time()[0], trace.time().len()), (9.0, 101));
}

/// A copy of the FMI 2 Gain FMU without a DefaultExperiment.
fn gain_without_default_experiment(path: &Path) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(fmi2("Gain")).unwrap()).unwrap();
    let mut writer = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).unwrap();
        let name = entry.name().unwrap().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if name == "modelDescription.xml" {
            let text = String::from_utf8(bytes).unwrap();
            let start = text.find("<DefaultExperiment").unwrap();
            let end = start + text[start..].find("/>").unwrap() + 2;
            bytes = format!("{}{}", &text[..start], &text[end..]).into_bytes();
        }
        writer
            .start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        writer.write_all(&bytes).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn without_a_default_experiment_one_second_in_steps_of_a_millisecond() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("NoExperiment.fmu");
    gain_without_default_experiment(&fmu);
    let out = run(&fmu, &[]);
    status(&out, 0, &[]);
    let trace = Table::read(&dir.path().join("out/NoExperiment/trace.csv")).unwrap();
    let t = trace.time();
    assert_eq!((t.len(), t[1], t[1000]), (1001, 0.001, 1.0));
    // The stop time follows --start.
    let out = run(&fmu, &["--start", "5", "-o", s(&dir.path().join("late"))]);
    status(&out, 0, &[]);
    let trace = Table::read(&dir.path().join("late/trace.csv")).unwrap();
    assert_eq!((trace.time()[0], *trace.time().last().unwrap()), (5.0, 6.0));
}

#[test]
fn convert_writes_the_scenario_that_gives_the_same_trace() {
    for fmu in [fmi2("Integrator"), fmi3("Integrator")] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = copy(&fmu, dir.path());
        let input = dir.path().join("ramp.csv");
        std::fs::write(&input, "time,u\n0,0\n1,1\n2,-1\n").unwrap();
        let options = [
            "--stop",
            "2",
            "--step",
            "0.05",
            "--set",
            "x0=0.25",
            "--input-file",
            s(&input),
            "--output-interval",
            "0.1",
            "--output-variables",
            "x",
            "u",
        ];
        let scenario = dir.path().join("grown").join("s.toml");
        let mut args = vec!["convert", s(&fmu), "-o", s(&scenario)];
        args.extend_from_slice(&options);
        status(&cosim(&args), 0, &[]);
        let text = std::fs::read_to_string(&scenario).unwrap();
        // Commented, with paths relative to the scenario file.
        for key in [
            "# cosim scenario for the FMU",
            "fmu = \"../Integrator.fmu\"",
            "file = \"../ramp.csv\"",
            "columns = { \"Integrator.u\" = \"u\" }",
            "parameters = { x0 = 0.25 }",
            "# Parameters",
            "interval = 0.1",
            "kind = \"fixed-step\"",
        ] {
            assert!(text.contains(key), "{key:?} missing:\n{text}");
        }
        assert!(!text.contains(s(dir.path())), "an absolute path:\n{text}");
        let from_scenario = dir.path().join("a");
        status(
            &cosim(&[
                "run",
                s(&scenario),
                "--no-progress",
                "-o",
                s(&from_scenario),
            ]),
            0,
            &[],
        );
        let direct = dir.path().join("b");
        let mut args = vec!["-o", s(&direct)];
        args.extend_from_slice(&options);
        status(&run(&fmu, &args), 0, &[]);
        let a = std::fs::read_to_string(from_scenario.join("trace.csv")).unwrap();
        let b = std::fs::read_to_string(direct.join("trace.csv")).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.lines().count(), 22, "{a}");
    }
}

#[test]
fn convert_without_options_and_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = copy(&fmi2("ThermostatRoom"), dir.path());
    let out = cosim(&["convert", s(&fmu)]);
    status(&out, 0, &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("stop = 600.0"), "{text}");
    assert!(text.contains("step = 1.0"), "{text}");
    assert!(
        text.contains("# variables = [\"ThermostatRoom.*\"]"),
        "{text}"
    );
    // Runs as it is (absolute FMU path on standard output).
    let scenario = dir.path().join("room.toml");
    std::fs::write(&scenario, &text).unwrap();
    let a = dir.path().join("a");
    status(
        &cosim(&["run", s(&scenario), "--no-progress", "-o", s(&a)]),
        0,
        &[],
    );
    let b = dir.path().join("b");
    status(&run(&fmu, &["-o", s(&b)]), 0, &[]);
    assert_eq!(
        std::fs::read_to_string(a.join("trace.csv")).unwrap(),
        std::fs::read_to_string(b.join("trace.csv")).unwrap()
    );
    // Converting an FMU checks the options as `run` does ...
    let out = cosim(&["convert", s(&fmu), "--stop", "-1"]);
    status(&out, 2, &["--stop -1", "not after the start time"]);
    // ... most of which are for FMUs only (a system takes --stop and
    // --step).
    let ssd = cosim_tests::root().join("crates/cosim-ssp/tests/data/quarter_car.ssd");
    let out = cosim(&["convert", s(&ssd), "--output-interval", "0.1"]);
    status(&out, 2, &["are for converting an FMU"]);
}

#[test]
fn check_runs_on_an_fmu() {
    let out = cosim(&["check", s(&fmi3("Integrator"))]);
    let err = status(&out, 0, &["ok (1 subsystem, "]);
    assert!(err.contains("t = 0 .. 10"), "{err}");
}

#[test]
fn options_that_do_not_fit_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = copy(&fmi2("Integrator"), dir.path());
    let out = run(&fmu, &["--start", "20"]);
    status(
        &out,
        2,
        &["'--start 20'", "is not before the stop time 10 s"],
    );
    let out = run(&fmu, &["--set", "x9=1"]);
    status(
        &out,
        2,
        &["'--set x9=1'", "no variable 'x9'", "did you mean 'x0'?"],
    );
    let out = run(&fmu, &["--output-variables", "q*"]);
    status(&out, 2, &["--output-variables q*", "matches no variable"]);
    let out = run(&fmu, &["--output-interval", "0"]);
    status(&out, 2, &["--output-interval 0", "positive"]);
    let missing = dir.path().join("missing.fmu");
    let out = run(&missing, &[]);
    status(&out, 2, &["missing.fmu", "does not exist"]);
    assert!(!dir.path().join("out").exists());
}

#[test]
fn the_library_runs_an_fmu_path_like_a_scenario() {
    let r = cosim_tests::run(&fmi2("Integrator"), &["x0=2"], Some(1.0), Some(0.25));
    assert!(r.error.is_none(), "{:?}", r.error);
    let trace = r.trace();
    assert_eq!(trace.time(), [0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(trace.column("Integrator.x").unwrap()[4], 2.0);
}

/// A copy of the FMU `fmu` in `dir` whose modelDescription.xml has its
/// text edited by `edit` (the other entries as they are).
fn repackaged(fmu: &Path, dir: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let to = dir.join(fmu.file_name().unwrap());
    let mut archive = zip::ZipArchive::new(std::fs::File::open(fmu).unwrap()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&to).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let name = entry.name().unwrap().to_string();
        if entry.is_dir() {
            zip.add_directory(name, opts).unwrap();
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if name == "modelDescription.xml" {
            let text = edit(&String::from_utf8(bytes).unwrap());
            bytes = text.into_bytes();
        }
        zip.start_file(name, opts).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    to
}

/// `cosim convert <fmu> <options> -o s.toml`, then `cosim run s.toml` and
/// `cosim run <fmu> <options>`: the scenario's text, and the two output
/// directories after checking that their traces are equal, byte for byte,
/// and so are the solver's figures in their summaries.
fn convert_and_run_both(dir: &Path, fmu: &Path, options: &[&str], tag: &str) -> (String, PathBuf) {
    let scenario = dir.join(format!("{tag}.toml"));
    let mut args = vec!["convert", s(fmu), "-o", s(&scenario)];
    args.extend_from_slice(options);
    status(&cosim(&args), 0, &[]);
    let text = std::fs::read_to_string(&scenario).unwrap();
    let from_scenario = dir.join(format!("{tag}-scenario"));
    status(
        &cosim(&[
            "run",
            s(&scenario),
            "--no-progress",
            "-o",
            s(&from_scenario),
        ]),
        0,
        &[],
    );
    let direct = dir.join(format!("{tag}-fmu"));
    let mut args = vec!["-o", s(&direct)];
    args.extend_from_slice(options);
    status(&run(fmu, &args), 0, &[]);
    let a = std::fs::read_to_string(from_scenario.join("trace.csv")).unwrap();
    let b = std::fs::read_to_string(direct.join("trace.csv")).unwrap();
    assert!(a.lines().count() > 10, "{tag}: {a}");
    assert_eq!(a, b, "{tag}: the converted scenario's trace differs");
    let solver = |d: &Path| -> serde_json::Value {
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap())
                .unwrap();
        j["subsystems"][0]["calls"]["solver"].clone()
    };
    assert_eq!(solver(&from_scenario), solver(&direct), "{tag}");
    (text, from_scenario)
}

/// The solver's figures of a run's summary.
fn solver_steps(out: &Path) -> u64 {
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    j["subsystems"][0]["calls"]["solver"]["steps"]
        .as_u64()
        .unwrap_or_else(|| panic!("no solver figures in {j}"))
}

#[track_caller]
fn has_lines(text: &str, lines: &[&str]) {
    for line in lines {
        assert!(
            text.lines().any(|l| l == *line),
            "missing the line {line:?} in:\n{text}"
        );
    }
}

/// `cosim convert` of a Model Exchange only FMU (FMI 2 and 3) writes
/// `interface = "model-exchange"` and the `[subsystems.solver]` in effect,
/// each setting saying where it comes from; the scenario runs as the FMU
/// does, with and without `--solver` and `--relative-tolerance`, and its
/// results are the time events' staircase integral.
#[test]
fn convert_of_a_model_exchange_fmu_writes_its_solver_and_runs_the_same() {
    for version in ["fmi2", "fmi3"] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = copy(
            &cosim_tests::fmus()
                .join("me")
                .join(version)
                .join("TimeEvents.fmu"),
            dir.path(),
        );
        let (text, out) = convert_and_run_both(dir.path(), &fmu, &[], "default");
        has_lines(
            &text,
            &[
                "interface = \"model-exchange\"     # the FMU has Model Exchange only, integrated by cosim's solver",
                "[subsystems.solver]",
                "method = \"bdf\"                   # the default (stiff models); \"rk45\": an explicit Runge-Kutta pair, for non-stiff ones",
                "relative_tolerance = 1e-5        # cosim's default; the FMU's DefaultExperiment gives no tolerance",
                "# absolute_tolerance = 1e-5      # default: the relative tolerance; times each state's nominal",
                "# max_step = ...                 # s; default: no limit",
                "# max_order = 5                  # the default and the only value: BDF orders 1 to 5",
            ],
        );
        // The solver table comes after the subsystem's keys and before
        // [outputs].
        let solver_at = text.find("[subsystems.solver]").unwrap();
        assert!(text.find("interface =").unwrap() < solver_at);
        assert!(solver_at < text.find("[outputs]").unwrap(), "{text}");
        // x = 0.25 n (n - 1) / 2 + n (t - 0.25 n), n = floor(t / 0.25).
        let trace = Table::read(&out.join("trace.csv")).unwrap();
        let x = trace.column("TimeEvents.x").unwrap();
        for (&t, &x) in trace.time().iter().zip(x) {
            let (_, want) = cosim_models::reference::time_events(0.25, t);
            assert!(
                (x - want).abs() < 1e-9,
                "{version}: x({t}) = {x}, not {want}"
            );
        }
        assert_eq!(*trace.time().last().unwrap(), 2.0);

        let options = ["--solver", "rk45", "--relative-tolerance", "1e-8"];
        let (text, rk) = convert_and_run_both(dir.path(), &fmu, &options, "rk45");
        has_lines(
            &text,
            &[
                "method = \"rk45\"                  # --solver",
                "relative_tolerance = 1e-8        # --relative-tolerance",
                "# absolute_tolerance = 1e-8      # default: the relative tolerance; times each state's nominal",
            ],
        );
        assert!(
            !text.contains("max_order"),
            "rk45 has no order to set:\n{text}"
        );
        // Another solver: other steps, the same staircase.
        assert_ne!(solver_steps(&rk), solver_steps(&out));
        let trace = Table::read(&rk.join("trace.csv")).unwrap();
        let x = trace.column("TimeEvents.x").unwrap();
        for (&t, &x) in trace.time().iter().zip(x) {
            let (_, want) = cosim_models::reference::time_events(0.25, t);
            assert!(
                (x - want).abs() < 1e-9,
                "{version} rk45: x({t}) = {x}, not {want}"
            );
        }

        // The DefaultExperiment's tolerance is the default, and says so.
        let tol_dir = dir.path().join("tol");
        std::fs::create_dir_all(&tol_dir).unwrap();
        let tolerant = repackaged(&fmu, &tol_dir, |xml| {
            assert!(xml.contains("<DefaultExperiment "), "{xml}");
            xml.replacen(
                "<DefaultExperiment ",
                "<DefaultExperiment tolerance=\"1e-7\" ",
                1,
            )
        });
        let (text, _) = convert_and_run_both(&tol_dir, &tolerant, &[], "tolerance");
        has_lines(
            &text,
            &["relative_tolerance = 1e-7        # the FMU's DefaultExperiment tolerance"],
        );
        let out = cosim(&["inspect", s(&tolerant)]);
        let inspected = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            inspected
                .contains("(BDF, relative tolerance 1e-7: the FMU's DefaultExperiment tolerance)"),
            "{inspected}"
        );
        // A Model Exchange only FMU has no Co-Simulation to convert to.
        let out = cosim(&["convert", s(&fmu), "--interface", "cs"]);
        status(
            &out,
            2,
            &[
                "--interface cs",
                "runs the FMU's Co-Simulation interface, which the FMU does not declare (it declares <ModelExchange> only)",
            ],
        );
    }
}

/// `cosim convert --interface me` of an FMU with both interfaces (the
/// quarter car's chassis, FMI 2 and 3) writes the interface and the solver
/// and runs as `cosim run --interface me` does: v_c = F / m_c t for a
/// constant force. Without the option it writes Co-Simulation, which
/// runs without the solver.
#[test]
fn convert_with_interface_me_of_a_two_interface_fmu_runs_the_same() {
    for chassis in [fmi2("QuarterCarChassis"), fmi3("QuarterCarChassis")] {
        let dir = tempfile::tempdir().unwrap();
        let fmu = copy(&chassis, dir.path());
        let options = [
            "--interface",
            "me",
            "--solver",
            "rk45",
            "--relative-tolerance",
            "1e-7",
            "--stop",
            "1",
            "--set",
            "F=100",
        ];
        let (text, out) = convert_and_run_both(dir.path(), &fmu, &options, "me");
        has_lines(
            &text,
            &[
                "interface = \"model-exchange\"     # --interface me; \"co-simulation\" (the default) runs the FMU's own Co-Simulation",
                "method = \"rk45\"                  # --solver",
                "relative_tolerance = 1e-7        # --relative-tolerance",
                "start = { F = 100.0 }",
            ],
        );
        assert!(solver_steps(&out) > 0);
        let trace = Table::read(&out.join("trace.csv")).unwrap();
        let v = trace.column("QuarterCarChassis.v_c").unwrap();
        for (&t, &v) in trace.time().iter().zip(v) {
            assert!(
                (v - 0.25 * t).abs() < 1e-9,
                "v_c({t}) = {v}, not {}",
                0.25 * t
            );
        }
        // The default: Co-Simulation, named, no solver.
        let options = ["--stop", "1", "--set", "F=100"];
        let (text, cs) = convert_and_run_both(dir.path(), &fmu, &options, "cs");
        has_lines(
            &text,
            &[
                "interface = \"co-simulation\"      # the default where the FMU has it; \"model-exchange\" integrates the FMU's Model Exchange with cosim's solver ([subsystems.solver])",
            ],
        );
        assert!(!text.lines().any(|l| l == "[subsystems.solver]"), "{text}");
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(cs.join("summary.json")).unwrap())
                .unwrap();
        assert!(j["subsystems"][0]["calls"]["solver"].is_null(), "{j}");
        // The converted Co-Simulation scenario refuses a solver table:
        // the run's message, at the table.
        let scenario = dir.path().join("cs.toml");
        let grown = format!(
            "{}\n[subsystems.solver]\nmethod = \"rk45\"\n",
            std::fs::read_to_string(&scenario)
                .unwrap()
                .split("\n[outputs]")
                .next()
                .unwrap()
        );
        std::fs::write(&scenario, grown).unwrap();
        let out = cosim(&["check", s(&scenario)]);
        status(
            &out,
            2,
            &["[subsystems.solver] is for interface = \"model-exchange\""],
        );
    }
    // A Co-Simulation only FMU: no interface line, and --interface me is
    // refused as `cosim run` refuses it.
    let out = cosim(&["convert", s(&fmi2("Gain"))]);
    status(&out, 0, &[]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("interface"));
    let out = cosim(&["convert", s(&fmi2("Gain")), "--interface", "me"]);
    status(
        &out,
        2,
        &[
            "--interface me",
            "which the FMU does not declare (it declares <CoSimulation> only)",
        ],
    );
    let out = cosim(&["convert", s(&fmi2("Gain")), "--relative-tolerance", "0"]);
    status(&out, 2, &["--relative-tolerance 0", "must be in (0, 1)"]);
    // For systems, these options are refused as the other FMU options.
    let ssd = cosim_tests::root().join("crates/cosim-ssp/tests/data/quarter_car.ssd");
    let out = cosim(&["convert", s(&ssd), "--solver", "rk45"]);
    status(&out, 2, &["are for converting an FMU"]);
}
