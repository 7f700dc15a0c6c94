//! `cosim run` and `cosim convert` on SSP (.ssd, .ssp) and OSP
//! (OspSystemStructure.xml) systems: a direct run equals the run of the
//! converted TOML scenario, and equals the project's TOML scenario of the
//! same benchmark; what cannot be mapped and malformed files are reported
//! by file, line and column.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_core::metrics::{compare_columns, match_columns};
use cosim_tests::{Table, cosim, fmi2, fmus, reference, root, scenario};

const DATA: &str = "crates/cosim-ssp/tests/data";

fn data(name: &str) -> String {
    format!("{DATA}/{name}")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "cosim failed ({:?}):\n{}{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// `cosim run <input> --out <dir>`, checked.
fn run(input: &str, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "run",
        input,
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    ok(&cosim(&args));
}

fn same_files(a: &Path, b: &Path) {
    for f in ["trace.csv", "energy.csv", "steps.csv"] {
        let x = std::fs::read_to_string(a.join(f)).unwrap();
        let y = std::fs::read_to_string(b.join(f)).unwrap();
        assert!(x.lines().count() > 2, "{f} is empty");
        assert_eq!(
            x,
            y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Every column of `a`'s trace is in `b`'s, equal at every time point.
/// The trace of `a` has exactly the columns `columns` (with `time`), and
/// the trace of `b` has them too, at the same rows, with the same values
/// (`b` may show more: the project's scenario traces every variable, an
/// SSD or OSP run what its connectors carry).
fn same_columns(a: &Path, b: &Path, columns: &[&str]) {
    let (ta, tb) = (
        Table::read(&a.join("trace.csv")).unwrap(),
        Table::read(&b.join("trace.csv")).unwrap(),
    );
    let mut names: Vec<&str> = ta.names.iter().skip(1).map(String::as_str).collect();
    names.sort_unstable();
    let mut expected = columns.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected, "the columns of {}", a.display());
    assert!(ta.time().len() > 1, "a trace without rows");
    assert_eq!(ta.time(), tb.time(), "the rows differ");
    for name in columns {
        let (x, y) = (ta.column(name).unwrap(), tb.column(name));
        assert_eq!(
            Some(x),
            y,
            "column {name} differs (or is missing in {})",
            b.display()
        );
    }
}

#[test]
fn run_ssd_equals_run_of_its_toml_conversion() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("converted/quarter_car.toml");
    let out = cosim(&[
        "convert",
        &data("quarter_car.ssd"),
        "--to",
        "toml",
        "-o",
        &path(&toml),
    ]);
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("(2 subsystems, 2 connections"), "{stderr}");
    assert!(
        stderr.contains("wheel.ssv:11:26: warning: parameter 'not_a_variable'"),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(written.contains("gain = -1.0"), "{written}");
    // FMU paths are relative to the TOML file.
    assert!(
        !written.contains(&format!("\"{}", root().display())),
        "{written}"
    );
    run(&path(&toml), &tmp.path().join("a"), &[]);
    run(&data("quarter_car.ssd"), &tmp.path().join("b"), &[]);
    same_files(&tmp.path().join("a"), &tmp.path().join("b"));
    // And both equal the project's scenario of the same benchmark.
    run(
        "scenarios/b1_quarter_car_a.toml",
        &tmp.path().join("c"),
        &[],
    );
    same_columns(
        &tmp.path().join("b"),
        &tmp.path().join("c"),
        &["chassis.v_c", "wheel.F_c"],
    );
}

/// The quarter car as an .ssp package.
fn quarter_car_ssp(dir: &Path) -> PathBuf {
    let ssd = std::fs::read_to_string(root().join(data("quarter_car.ssd")))
        .unwrap()
        .replace("../../../../fmus/dist/fmi2/", "resources/")
        .replace("source=\"wheel.ssv\"", "source=\"resources/wheel.ssv\"");
    let p = dir.join("quarter_car.ssp");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    zip.start_file("resources/wheel.ssv", opts).unwrap();
    zip.write_all(&std::fs::read(root().join(data("wheel.ssv"))).unwrap())
        .unwrap();
    for m in ["QuarterCarChassis", "QuarterCarWheelSuspension"] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmi2(m)).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    p
}

#[test]
fn run_ssp_package_equals_run_of_its_conversion() {
    let tmp = tempfile::tempdir().unwrap();
    let ssp = quarter_car_ssp(tmp.path());
    run(&path(&ssp), &tmp.path().join("a"), &[]);
    let toml = tmp.path().join("conv/qc.toml");
    let out = cosim(&["convert", &path(&ssp), "-o", &path(&toml)]);
    ok(&out);
    assert!(
        tmp.path()
            .join("conv/quarter_car/resources/QuarterCarChassis.fmu")
            .is_file(),
        "{}",
        text(&out.stderr)
    );
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(written.contains("fmu = \"quarter_car/resources/QuarterCarChassis.fmu\""));
    run(&path(&toml), &tmp.path().join("b"), &[]);
    same_files(&tmp.path().join("a"), &tmp.path().join("b"));
    // `cosim check` accepts the package too.
    ok(&cosim(&["check", &path(&ssp)]));
}

#[test]
fn run_osp_directory_equals_the_toml_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    run(
        "tests/python/osp/b1_quarter_car_a",
        &tmp.path().join("a"),
        &["--stop", "4"],
    );
    run(
        "scenarios/b1_quarter_car_a.toml",
        &tmp.path().join("b"),
        &[],
    );
    same_columns(
        &tmp.path().join("a"),
        &tmp.path().join("b"),
        &["chassis.v_c", "wheel.F_c"],
    );
}

#[test]
fn osp_ecco_run_equals_run_of_its_conversion() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("ecco.toml");
    ok(&cosim(&[
        "convert",
        &data("osp_b1_ecco"),
        "--to",
        "toml",
        "-o",
        &path(&toml),
    ]));
    run(&path(&toml), &tmp.path().join("a"), &[]);
    run(
        &data("osp_b1_ecco/OspSystemStructure.xml"),
        &tmp.path().join("b"),
        &[],
    );
    same_files(&tmp.path().join("a"), &tmp.path().join("b"));
    let summary = std::fs::read_to_string(tmp.path().join("b/summary.json")).unwrap();
    assert!(summary.contains("\"suspension\""), "{summary}");
}

#[test]
fn run_refuses_unsupported_elements_and_convert_lists_them() {
    let out = cosim(&["run", &data("unsupported.ssd"), "--stop", "0.1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches(": error: ").count(), 8, "{stderr}");
    assert!(
        stderr.contains("unsupported.ssd:34:12: error: <ssd:Component name=\"model\"> cannot be mapped: components of type 'text/x-modelica' are not supported"),
        "{stderr}"
    );
    assert!(
        stderr.contains("unsupported.ssd:44:10: error: <ssc:BooleanMappingTransformation>"),
        "{stderr}"
    );

    let out = cosim(&["convert", &data("unsupported.ssd"), "--to", "toml"]);
    ok(&out);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("# NOT CONVERTED"), "{stdout}");
    assert!(
        stdout.contains("#   unsupported.ssd:48: <ssd:SignalDictionary name=\"Bus\">"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("8 element(s) could not be converted"),
        "{stderr}"
    );
    // -q: the same scenario, no notes or warnings.
    let quiet = cosim(&["-q", "convert", &data("unsupported.ssd"), "--to", "toml"]);
    ok(&quiet);
    assert_eq!(text(&quiet.stdout), stdout);
    assert_eq!(text(&quiet.stderr), "");

    let out = cosim(&["run", &data("osp_unsupported"), "--stop", "0.1"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "OspSystemStructure.xml:28:6: error: <PlugSocketConnections> cannot be mapped: this is the superseded MSMI format"
        ),
        "{stderr}"
    );
}

#[test]
fn malformed_input_is_reported_with_line_and_column() {
    for command in ["run", "check", "convert"] {
        let out = cosim(&[command, &data("malformed.ssd")]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("malformed.ssd:7:5: error: found </ssd:Elements> where </ssd:Component> was expected"),
            "{command}: {stderr}"
        );
    }
    // A misspelt connector: the scenario layer's message, in the SSD.
    let tmp = tempfile::tempdir().unwrap();
    let ssd = std::fs::read_to_string(root().join(data("quarter_car.ssd")))
        .unwrap()
        .replace(
            "../../../../fmus/dist/fmi2",
            &fmi2("Gain").parent().unwrap().display().to_string(),
        )
        .replacen("endConnector=\"v_c\"", "endConnector=\"vc\"", 1);
    std::fs::copy(root().join(data("wheel.ssv")), tmp.path().join("wheel.ssv")).unwrap();
    let p = tmp.path().join("SystemStructure.ssd");
    std::fs::write(&p, ssd).unwrap();
    let out = cosim(&["run", &path(tmp.path())]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("SystemStructure.ssd:46:56: error: subsystem 'wheel' (QuarterCarWheelSuspension) has no variable 'vc'"),
        "{stderr}"
    );
    assert!(stderr.contains("= help: did you mean 'v_c'?"), "{stderr}");
}

/// `scenarios/b3_three_mass_hierarchical.toml` with absolute FMU paths and
/// the trace variables the import of `b3_hierarchical.ssd` writes (every
/// output of every FMU, nested ones included).
fn b3_hierarchical_toml(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(scenario("b3_three_mass_hierarchical.toml"))
        .unwrap()
        .replace("../fmus/dist", &fmus().display().to_string());
    let at = text.find("variables = [").unwrap();
    let p = dir.join("b3_hierarchical.toml");
    std::fs::write(
        &p,
        format!(
            "{}variables = [\"s1.x1\", \"s1.v1\", \"nest.s2.x2\", \"nest.s2.v2\", \"nest.s2.l12\", \"nest.s3.x3\", \"nest.s3.v3\", \"nest.s3.l23\"]\n",
            &text[..at]
        ),
    )
    .unwrap();
    p
}

#[test]
fn nested_ssd_runs_like_its_conversion_and_the_hierarchical_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let ssd = data("b3_hierarchical.ssd");
    let toml = tmp.path().join("converted/b3.toml");
    let out = cosim(&["convert", &ssd, "--to", "toml", "-o", &path(&toml)]);
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("(2 subsystems, 3 connections"), "{stderr}");
    assert!(
        stderr.contains(
            "b3_hierarchical.ssd:69:69: note: the step of nested system 'nest' is 0.025 s"
        ),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&toml).unwrap();
    for part in [
        "[[subsystems]]  # b3_hierarchical.ssd:35\nname = \"nest\"\nexposes = [\n",
        "[subsystems.system.master]\nstep = 0.025",
        "[[subsystems.system.subsystems]]  # b3_hierarchical.ssd:43\nname = \"s3\"\nfmu = \"",
        "from = \"s1.x1\"\nto = \"nest.s2.x1\"",
    ] {
        assert!(written.contains(part), "missing {part:?} in\n{written}");
    }
    // The direct run, the run of the conversion and the run of the
    // project's hierarchical scenario: the same files, byte for byte.
    let (a, b, c) = (
        tmp.path().join("ssd"),
        tmp.path().join("conv"),
        tmp.path().join("toml"),
    );
    run(&ssd, &a, &[]);
    run(&path(&toml), &b, &[]);
    run(&path(&b3_hierarchical_toml(tmp.path())), &c, &[]);
    same_files(&a, &b);
    same_files(&a, &c);
    for dir in [&b, &c] {
        let x = std::fs::read_to_string(a.join("energy.nest.csv")).unwrap();
        let y = std::fs::read_to_string(dir.join("energy.nest.csv")).unwrap();
        assert_eq!(x, y, "energy.nest.csv differs");
    }
    // It is hafner's hierarchical scenario 1: max error of the six states
    // 2.14e-2 (Table 2).
    let trace = Table::read(&a.join("trace.csv")).unwrap();
    assert_eq!(trace.time().len(), 251);
    let reference = reference("b3_scenario1");
    let pairs = match_columns(&trace, &reference, &[]);
    assert_eq!(pairs.len(), 6, "{pairs:?}");
    let max = compare_columns(&trace, &reference, &pairs, f64::NEG_INFINITY, f64::INFINITY)
        .unwrap()
        .iter()
        .map(|e| e.max_abs)
        .fold(0.0, f64::max);
    println!("nested SSD, B3 scenario 1: max error {max:.3e} (hafner: 2.14e-2)");
    // The same co-simulation from the model equations (to the rounding),
    // and hafner's figure (within a factor 2).
    let rows = cosim_tests::b3_jacobi::hierarchical(
        &cosim_tests::b3_jacobi::Params::scenario(1),
        0.1,
        0.025,
        25.0,
    );
    let expected = cosim_tests::b3_jacobi::max_error(&rows, &reference);
    assert!(
        (max - expected).abs() <= 1e-9 * expected,
        "max error {max}, the model equations give {expected}"
    );
    assert!(max > 2.14e-2 / 2.0 && max < 2.14e-2 * 2.0, "{max}");
    let summary = std::fs::read_to_string(a.join("summary.json")).unwrap();
    assert!(summary.contains("\"nest\""), "{summary}");
    // `cosim check` accepts it (on a copy: checking a nested system
    // creates its energy log in the default output directory).
    let copy = tmp.path().join("b3_hierarchical.ssd");
    std::fs::write(
        &copy,
        std::fs::read_to_string(root().join(&ssd))
            .unwrap()
            .replace("../../../../fmus/dist", &fmus().display().to_string()),
    )
    .unwrap();
    ok(&cosim(&["check", &path(&copy)]));
}

#[test]
fn errors_inside_a_nested_ssd_system_name_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let ssd = std::fs::read_to_string(root().join(data("b3_hierarchical.ssd")))
        .unwrap()
        .replace(
            "../../../../fmus/dist/fmi2",
            &fmi2("Gain").parent().unwrap().display().to_string(),
        )
        .replacen("startConnector=\"l23\"", "startConnector=\"l233\"", 1);
    let p = tmp.path().join("b3.ssd");
    std::fs::write(&p, ssd).unwrap();
    for command in ["run", "check", "convert"] {
        let out = cosim(&[command, &path(&p)]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(
                "b3.ssd:61:61: error: subsystem 's3' (ThreeMassS3) has no variable 'l233'"
            ),
            "{command}: {stderr}"
        );
        assert!(stderr.contains("= help: did you mean 'l23'?"), "{stderr}");
    }
}

/// B1 reticulation B as libcosim's quarter-truck ECCO example writes it:
/// the `causality` attributes of the two power-bond connections opposite
/// to the FMUs', no `<EndTime>` (issue 17, item 1).
fn quarter_truck_form(dir: &Path) -> PathBuf {
    let text = format!(
        r#"<OspSystemStructure version="0.1">
    <Algorithm>ecco</Algorithm>
    <Simulators>
        <Simulator name="chassis" source="{}"/>
        <Simulator name="wheel" source="{}"/>
    </Simulators>
    <Connections>
        <VariableConnection powerBond="wheelchassis">
            <Variable simulator="chassis" name="F_c" causality="input"/>
            <Variable simulator="wheel" name="F" causality="output"/>
        </VariableConnection>
        <VariableConnection powerBond="wheelchassis">
            <Variable simulator="wheel" name="v_w" causality="input"/>
            <Variable simulator="chassis" name="v_w" causality="output"/>
        </VariableConnection>
    </Connections>
    <EccoConfiguration>
        <SafetyFactor>0.8</SafetyFactor>
        <StepSize>1e-4</StepSize>
        <MinimumStepSize>1e-4</MinimumStepSize>
        <MaximumStepSize>1e-2</MaximumStepSize>
        <MinimumChangeRate>0.2</MinimumChangeRate>
        <MaximumChangeRate>1.5</MaximumChangeRate>
        <ProportionalGain>0.2</ProportionalGain>
        <IntegralGain>0.15</IntegralGain>
        <RelativeTolerance>1e-6</RelativeTolerance>
        <AbsoluteTolerance>1e-3</AbsoluteTolerance>
    </EccoConfiguration>
</OspSystemStructure>
"#,
        fmi2("QuarterCarChassisSuspension").display(),
        fmi2("QuarterCarWheel").display()
    );
    let p = dir.join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn libcosim_power_bond_roles_run_and_convert() {
    let tmp = tempfile::tempdir().unwrap();
    let osp = quarter_truck_form(tmp.path());
    // No <EndTime>: the FMUs' DefaultExperiment stop (10 s).
    let out = cosim(&["check", &path(&osp)]);
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("t = 0 .. 10"), "{stderr}");
    assert!(stderr.contains("wheelchassis (declared)"), "{stderr}");
    let toml = tmp.path().join("qt.toml");
    let out = cosim(&["convert", &path(&osp), "-o", &path(&toml)]);
    ok(&out);
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(!written.contains("stop"), "{written}");
    assert!(
        written.contains("  { input = \"chassis.v_w\", output = \"chassis.F_c\" },\n  { input = \"wheel.F\", output = \"wheel.v_w\" },"),
        "{written}"
    );
    run(&path(&osp), &tmp.path().join("a"), &["--stop", "0.5"]);
    run(&path(&toml), &tmp.path().join("b"), &["--stop", "0.5"]);
    same_files(&tmp.path().join("a"), &tmp.path().join("b"));
}

/// A Mass and a TwoMassS1 (DefaultExperiment stopTimes 10 s and 1 s), the
/// mass's velocity [m/s] into the other's force input [N], no `<EndTime>`.
fn run_only_problems(dir: &Path) -> PathBuf {
    let text = format!(
        r#"<OspSystemStructure version="0.1">
    <BaseStepSize>1e-3</BaseStepSize>
    <Simulators>
        <Simulator name="a" source="{}"/>
        <Simulator name="t" source="{}"/>
    </Simulators>
    <Connections>
        <VariableConnection>
            <Variable simulator="a" name="v"/>
            <Variable simulator="t" name="f2"/>
        </VariableConnection>
    </Connections>
</OspSystemStructure>
"#,
        fmi2("Mass").display(),
        fmi2("TwoMassS1").display()
    );
    let p = dir.join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn convert_always_converts_while_run_and_check_refuse_with_the_same_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let osp = run_only_problems(tmp.path());
    let no_stop = "no stop time: [simulation] has no 'stop', and the FMUs' DefaultExperiment stopTimes differ (a: 10 s, t: 1 s)";
    let units = "unit mismatch: 'a.v' is in m/s (m.s-1) but 't.f2' is in N (kg.m.s-2)";
    // run and check refuse it, one problem at a time.
    for command in ["run", "check"] {
        let out = cosim(&[command, &path(&osp)]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&format!("error: {no_stop}")), "{stderr}");
        assert!(stderr.contains("--stop <seconds>"), "{stderr}");
        let out = cosim(&[command, &path(&osp), "--stop", "0.1"]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!("OspSystemStructure.xml:10:43: error: {units}")),
            "{stderr}"
        );
    }
    // convert writes it, warns, and lists both in the scenario's header.
    let toml = tmp.path().join("s.toml");
    let out = cosim(&["convert", &path(&osp), "-o", &path(&toml)]);
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("warning: {no_stop}")), "{stderr}");
    assert!(
        stderr.contains(&format!("OspSystemStructure.xml:10:43: warning: {units}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: input of subsystem 'a' not connected"),
        "{stderr}"
    );
    assert!(
        stderr.contains("refuse the scenario as it stands: 2 problem(s)"),
        "{stderr}"
    );
    // Its notes refer to what it writes, not to another conversion.
    assert!(!stderr.contains("`cosim convert"), "{stderr}");
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(
        written.contains(&format!("#   OspSystemStructure.xml: {no_stop}")),
        "{written}"
    );
    assert!(
        written.contains(&format!("#   OspSystemStructure.xml:10: {units}")),
        "{written}"
    );
    // The written scenario: run and check refuse it with the same messages.
    for command in ["run", "check"] {
        let out = cosim(&[command, &path(&toml)]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(&format!("error: {no_stop}")), "{stderr}");
        assert!(stderr.contains("run with --stop <seconds>"), "{stderr}");
        let out = cosim(&[command, &path(&toml), "--stop", "0.1"]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert!(
            text(&out.stderr).contains(&format!("error: {units}")),
            "{command}"
        );
    }
    // --stop and --step go into the scenario.
    let out = cosim(&[
        "convert",
        &path(&osp),
        "--stop",
        "0.5",
        "--step",
        "1e-4",
        "-o",
        &path(&toml),
    ]);
    ok(&out);
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(written.contains("stop = 0.5  # --stop\n"), "{written}");
    assert!(written.contains("step = 0.0001  # --step\n"), "{written}");
    assert!(!written.contains(no_stop), "{written}");
    assert!(text(&out.stderr).contains("1 problem(s)"));
    // The options of an FMU only are refused for a system, by name.
    let out = cosim(&["convert", &path(&osp), "--set", "a.m=2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("are for converting an FMU (a system takes --stop and --step)"),
        "{}",
        text(&out.stderr)
    );
}

/// An SSP component's `implementation` picks the FMU's interface:
/// `"ModelExchange"` becomes `interface = "model-exchange"` (cosim's
/// solver integrates it), and a Model Exchange only FMU without the
/// attribute runs its Model Exchange interface. The SSD runs as its
/// conversion does, and as the project's B1 scenario with the chassis's
/// Model Exchange; an implementation the FMU does not declare is an error
/// at the attribute.
#[test]
fn ssp_implementation_picks_the_interface_and_model_exchange_fmus_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = fmus();
    let original = std::fs::read_to_string(root().join(data("quarter_car.ssd"))).unwrap();
    let ssd_text = original
        .replace("../../../../fmus/dist/", &format!("{}/", dist.display()))
        .replace(
            "<ssd:Component name=\"chassis\" ",
            "<ssd:Component name=\"chassis\" implementation=\"ModelExchange\" ",
        )
        .replace(
            "<ssd:Component name=\"wheel\" ",
            "<ssd:Component name=\"wheel\" implementation=\"any\" ",
        )
        .replace(
            "    </ssd:Elements>",
            &format!(
                "      <ssd:Component name=\"steps\" source=\"{}\"/>\n    </ssd:Elements>",
                dist.join("me/fmi3/TimeEvents.fmu").display()
            ),
        );
    assert_ne!(ssd_text, original);
    let ssd = tmp.path().join("qc.ssd");
    std::fs::write(&ssd, &ssd_text).unwrap();
    std::fs::copy(root().join(data("wheel.ssv")), tmp.path().join("wheel.ssv")).unwrap();
    let line = ssd_text
        .lines()
        .position(|l| l.contains("implementation=\"ModelExchange\""))
        .unwrap()
        + 1;

    let toml = tmp.path().join("qc.toml");
    ok(&cosim(&["convert", &path(&ssd), "-o", &path(&toml)]));
    let written = std::fs::read_to_string(&toml).unwrap();
    assert!(
        written.contains(&format!(
            "interface = \"model-exchange\"  # qc.ssd:{line}\n"
        )),
        "{written}"
    );
    // Only the chassis names an interface ("any" is the importer's choice).
    assert_eq!(written.matches("interface = ").count(), 1, "{written}");
    run(&path(&ssd), &tmp.path().join("a"), &[]);
    run(&path(&toml), &tmp.path().join("b"), &[]);
    same_files(&tmp.path().join("a"), &tmp.path().join("b"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("a/summary.json")).unwrap())
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
        [("chassis", true), ("wheel", false), ("steps", true)]
    );
    // The time events' staircase integral, x = 0.25 n (n - 1) / 2 + n (t - 0.25 n).
    let trace = Table::read(&tmp.path().join("a/trace.csv")).unwrap();
    let x = trace.column("steps.x").unwrap();
    for (&t, &x) in trace.time().iter().zip(x) {
        let n = (t / 0.25 + 1e-12).floor();
        let want = 0.25 * n * (n - 1.0) / 2.0 + n * (t - 0.25 * n);
        assert!((x - want).abs() < 1e-9, "x({t}) = {x}, not {want}");
    }
    // The project's B1 scenario with the chassis's Model Exchange: the
    // same quarter car, value for value.
    let b1 = std::fs::read_to_string(scenario("b1_quarter_car_a.toml"))
        .unwrap()
        .replace("../fmus/dist", &dist.display().to_string())
        .replace(
            "QuarterCarChassis.fmu\"\n",
            "QuarterCarChassis.fmu\"\ninterface = \"model-exchange\"\n",
        );
    assert!(b1.contains("interface = \"model-exchange\""), "{b1}");
    let b1_path = tmp.path().join("b1.toml");
    std::fs::write(&b1_path, b1).unwrap();
    run(&path(&b1_path), &tmp.path().join("c"), &[]);
    let b1 = Table::read(&tmp.path().join("c/trace.csv")).unwrap();
    assert_eq!(b1.time(), trace.time());
    for name in ["chassis.v_c", "wheel.F_c"] {
        assert!(b1.column(name).is_some(), "{name} missing: {:?}", b1.names);
        assert_eq!(b1.column(name), trace.column(name), "{name} differs");
    }

    // An implementation the FMU does not declare: an error at the attribute.
    let bad = tmp.path().join("bad.ssd");
    std::fs::write(
        &bad,
        ssd_text.replace(
            "<ssd:Component name=\"steps\" ",
            "<ssd:Component name=\"steps\" implementation=\"CoSimulation\" ",
        ),
    )
    .unwrap();
    for command in ["run", "convert"] {
        let out = cosim(&[command, &path(&bad)]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("error: component 'steps' asks for implementation 'CoSimulation', which its FMU (TimeEvents) does not declare (it declares <ModelExchange>)"),
            "{stderr}"
        );
        assert!(stderr.contains("bad.ssd:"), "{stderr}");
    }
}

/// An OSP system of Model Exchange only FMUs (OSP has no interface
/// choice): they run their Model Exchange interface, directly and from the
/// conversion alike.
#[test]
fn osp_of_model_exchange_only_fmus_runs_as_its_conversion() {
    let tmp = tempfile::tempdir().unwrap();
    let dist = fmus();
    let dir = tmp.path().join("osp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("OspSystemStructure.xml"),
        format!(
            r#"<?xml version="1.0" encoding="utf-8"?>
<OspSystemStructure xmlns="http://opensimulationplatform.com/MSMI/OSPSystemStructure" version="0.1">
    <StartTime>0.0</StartTime>
    <EndTime>1.0</EndTime>
    <BaseStepSize>0.01</BaseStepSize>
    <Simulators>
        <Simulator name="steps" source="{}"/>
        <Simulator name="ball" source="{}"/>
    </Simulators>
</OspSystemStructure>
"#,
            dist.join("me/fmi3/TimeEvents.fmu").display(),
            dist.join("me/fmi2/BouncingBallME.fmu").display()
        ),
    )
    .unwrap();
    let toml = tmp.path().join("osp.toml");
    ok(&cosim(&["convert", &path(&dir), "-o", &path(&toml)]));
    run(&path(&dir), &tmp.path().join("a"), &[]);
    run(&path(&toml), &tmp.path().join("b"), &[]);
    let a = std::fs::read_to_string(tmp.path().join("a/trace.csv")).unwrap();
    assert_eq!(a.lines().count(), 102, "{a}");
    assert_eq!(
        a,
        std::fs::read_to_string(tmp.path().join("b/trace.csv")).unwrap()
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("a/summary.json")).unwrap())
            .unwrap();
    let events =
        |i: usize, kind: &str| summary["subsystems"][i]["calls"]["solver"]["events"][kind].as_u64();
    // Time events at 0.25, 0.5, 0.75 and 1; the ball's first contact
    // (h0 = 1 m, g = 9.81: t = 0.4515 s).
    assert_eq!(events(0, "time_events"), Some(4), "{summary}");
    assert_eq!(events(1, "state_events"), Some(1), "{summary}");
}
