//! OSP system structures as libcosim reads them (issue 17, item 1), and
//! `cosim convert` that converts what only a run would refuse (item 4),
//! on the project's own FMUs written in libcosim's format.
//!
//! libcosim's quarter-truck ECCO example (its tests/data/fmi2/quarter_truck)
//! marks the variables of its two power-bond connections with `causality`
//! attributes opposite to the FMUs' (`chassis.velocity` "input",
//! `wheel.in_vel` "output"), has no `<EndTime>`, and its FMUs declare no
//! units and no DefaultExperiment. The same shape is built here from the B1
//! reticulation B FMUs with their units and DefaultExperiment removed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cosim_core::metrics::Table;
use cosim_scenario::{Overrides, runner};
use cosim_ssp::{Diagnostic, ImportOptions, Severity};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

fn fmu(name: &str) -> PathBuf {
    fmu_kit::dist::ensure_built().expect("building the project FMUs");
    root().join("fmus/dist/fmi2").join(format!("{name}.fmu"))
}

/// Removes every `name="..."` attribute from `text`.
fn drop_attribute(text: &str, name: &str) -> String {
    let pat = format!(" {name}=\"");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&pat) {
        out.push_str(&rest[..i]);
        let after = &rest[i + pat.len()..];
        let end = after.find('"').expect("closing quote");
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Removes the element `<name ...>...</name>` or `<name .../>` from `text`.
fn drop_element(text: &str, name: &str) -> String {
    let Some(start) = text.find(&format!("<{name}")) else {
        return text.to_string();
    };
    let close = format!("</{name}>");
    let end = match text[start..].find(&close) {
        Some(e) => start + e + close.len(),
        None => start + text[start..].find("/>").expect("element end") + 2,
    };
    format!("{}{}", &text[..start], &text[end..])
}

/// A copy of the project's FMU `model` at `dst` as libcosim's quarter-truck
/// FMUs are: no units, no quantities, no DefaultExperiment.
fn libcosim_like_fmu(model: &str, dst: &Path) {
    let src = std::fs::File::open(fmu(model)).unwrap();
    let mut zin = zip::ZipArchive::new(src).unwrap();
    let mut zout = zip::ZipWriter::new(std::fs::File::create(dst).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for i in 0..zin.len() {
        let mut entry = zin.by_index(i).unwrap();
        let name = entry.name().unwrap().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        if name == "modelDescription.xml" {
            let mut md = String::from_utf8(bytes).unwrap();
            for a in ["unit", "displayUnit", "quantity"] {
                md = drop_attribute(&md, a);
            }
            md = drop_element(&md, "UnitDefinitions");
            md = drop_element(&md, "DefaultExperiment");
            bytes = md.into_bytes();
        }
        zout.start_file(name, opts).unwrap();
        zout.write_all(&bytes).unwrap();
    }
    zout.finish().unwrap();
}

const ECCO: &str = "    <EccoConfiguration>
        <SafetyFactor>0.8</SafetyFactor>
        <StepSize>1e-4</StepSize>
        <MinimumStepSize>1e-4</MinimumStepSize>
        <MaximumStepSize>1e-2</MaximumStepSize>
        <MinimumChangeRate>0.2</MinimumChangeRate>
        <MaximumChangeRate>1.5</MaximumChangeRate>
        <ProportionalGain>0.2</ProportionalGain>
        <IntegralGain>0.15</IntegralGain>
        <RelativeTolerance>9.5367431640625e-07</RelativeTolerance>
        <AbsoluteTolerance>0.0007152557373046875</AbsoluteTolerance>
    </EccoConfiguration>
";

/// B1 reticulation B in the form of libcosim's quarter-truck example:
/// `<Algorithm>ecco</Algorithm>`, a `BaseStepSize` ECCO ignores, initial
/// values, no `<EndTime>`, two connections forming the bond "wheelchassis"
/// with the `causality` attributes `marks` (four values, in file order:
/// `chassis.F_c`, `wheel.F`, `wheel.v_w`, `chassis.v_w`; `None`: no
/// attribute). `chassis` and `wheel` are the FMUs in `dir`.
fn quarter_truck_form(dir: &Path, marks: [Option<&str>; 4], chassis: &str, wheel: &str) -> PathBuf {
    let m = |i: usize| match marks[i] {
        Some(c) => format!(" causality=\"{c}\""),
        None => String::new(),
    };
    let text = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<OspSystemStructure xmlns="http://opensimulationplatform.com/MSMI/OSPSystemStructure" version="0.1">
    <BaseStepSize>0.0001</BaseStepSize>
    <Algorithm>ecco</Algorithm>
    <Simulators>
        <Simulator name="chassis" source="{chassis}">
            <InitialValues>
                <InitialValue variable="m_c">
                    <Real value="400"/>
                </InitialValue>
            </InitialValues>
        </Simulator>
        <Simulator name="wheel" source="{wheel}">
            <InitialValues>
                <InitialValue variable="m_w">
                    <Real value="40"/>
                </InitialValue>
            </InitialValues>
        </Simulator>
    </Simulators>
    <Connections>
        <VariableConnection powerBond="wheelchassis">
            <Variable simulator="chassis" name="F_c"{}/>
            <Variable simulator="wheel" name="F"{}/>
        </VariableConnection>
        <VariableConnection powerBond="wheelchassis">
            <Variable simulator="wheel" name="v_w"{}/>
            <Variable simulator="chassis" name="v_w"{}/>
        </VariableConnection>
    </Connections>
{ECCO}</OspSystemStructure>
"#,
        m(0),
        m(1),
        m(2),
        m(3)
    );
    let p = dir.join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    p
}

/// libcosim's marks: opposite to the FMUs in both connections, as
/// `chassis.velocity` "input" / `wheel.in_vel` "output" in its example.
const SWAPPED: [Option<&str>; 4] = [Some("input"), Some("output"), Some("input"), Some("output")];

/// A directory with the libcosim-like FMUs (no units, no
/// DefaultExperiment) and the quarter-truck form with `marks`.
fn unitless_system(marks: [Option<&str>; 4]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    libcosim_like_fmu(
        "QuarterCarChassisSuspension",
        &dir.path().join("Chassis.fmu"),
    );
    libcosim_like_fmu("QuarterCarWheel", &dir.path().join("Wheel.fmu"));
    let p = quarter_truck_form(dir.path(), marks, "Chassis.fmu", "Wheel.fmu");
    (dir, p)
}

fn import(path: &Path) -> cosim_ssp::Import {
    cosim_ssp::import(path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn find<'a>(ds: &'a [Diagnostic], text: &str) -> &'a Diagnostic {
    ds.iter()
        .find(|d| d.message.contains(text))
        .unwrap_or_else(|| {
            panic!(
                "no diagnostic with '{text}' among:\n{}",
                ds.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
}

/// Runs an OSP system through `cosim_ssp::prepare` (as `cosim run`).
fn run_system(path: &Path, stop: Option<f64>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let overrides = Overrides {
        stop,
        out: Some(dir.path().to_path_buf()),
        ..Overrides::default()
    };
    let imported = cosim_ssp::prepare(path, &overrides, None).unwrap_or_else(|e| panic!("{e}"));
    let outcome = runner::run(imported.prepared, Vec::new(), None).unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    dir
}

fn trace(dir: &tempfile::TempDir) -> Table {
    Table::read(&dir.path().join("trace.csv")).unwrap()
}

// ---------------------------------------------------------------------
// Item 1: power bonds, directions and stop times as libcosim reads them

#[test]
fn libcosim_quarter_truck_form_runs_with_the_bond_roles_libcosim_reads() {
    let (_dir, osp) = unitless_system(SWAPPED);
    let imp = import(&osp);
    let toml = imp.toml();
    println!("{toml}");
    // The data direction is the FMUs', not the attributes'.
    assert!(
        toml.contains("from = \"chassis.F_c\"\nto = \"wheel.F\""),
        "{toml}"
    );
    assert!(
        toml.contains("from = \"wheel.v_w\"\nto = \"chassis.v_w\""),
        "{toml}"
    );
    // libcosim's port a: the simulator of the first connection's variable
    // marked "input" (chassis.F_c), with output_a, the second connection's
    // variable marked "output" (chassis.v_w).
    assert!(
        toml.contains(
            "name = \"wheelchassis\"\nports = [\n  { input = \"chassis.v_w\", output = \"chassis.F_c\" },\n  { input = \"wheel.F\", output = \"wheel.v_w\" },\n]\nintended = true"
        ),
        "{toml}"
    );
    // The file declares the bond: no units needed, only a note.
    let n = find(imp.diagnostics(), "needs no units");
    assert_eq!(n.severity, Severity::Note);
    assert!(
        imp.diagnostics()
            .iter()
            .all(|d| d.severity == Severity::Note)
    );
    // No <EndTime>, no DefaultExperiment: no stop in the scenario, and a
    // run asks for one, naming --stop.
    assert!(!toml.contains("stop ="), "{toml}");
    let dir = tempfile::tempdir().unwrap();
    let e = cosim_ssp::prepare(
        &osp,
        &Overrides {
            out: Some(dir.path().to_path_buf()),
            ..Overrides::default()
        },
        None,
    )
    .err()
    .expect("no stop time");
    let d = e.errors().next().unwrap();
    assert!(d.message.starts_with("no stop time"), "{e}");
    assert_eq!(
        d.help.as_deref(),
        Some("give it in <EndTime> or with --stop <seconds>")
    );

    // Run with --stop: the same run as the B1-B ECCO system with units,
    // EndTime and marks as the FMUs declare them.
    let a = run_system(&osp, Some(4.0));
    let b = run_system(
        &root().join("crates/cosim-ssp/tests/data/osp_b1_ecco"),
        None,
    );
    let (ta, tb) = (trace(&a), trace(&b));
    assert_eq!(ta.time(), tb.time(), "different steps");
    assert!(ta.time().len() > 100);
    // The same columns, but without units in their names.
    assert_eq!(ta.names.len(), tb.names.len());
    for (na, nb) in ta.names.iter().zip(&tb.names).skip(1) {
        assert!(nb.starts_with(na.as_str()), "{na} / {nb}");
        assert_eq!(ta.column(na), tb.column(nb), "{na} differs");
    }
    let steps = |d: &tempfile::TempDir| {
        std::fs::read_to_string(d.path().join("steps.csv"))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').take(3).collect::<Vec<_>>().join(","))
            .collect::<Vec<_>>()
    };
    assert_eq!(steps(&a), steps(&b));
}

#[test]
fn bond_ports_follow_libcosims_reading_of_the_causality_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let (chassis, wheel) = (fmu("QuarterCarChassisSuspension"), fmu("QuarterCarWheel"));
    let (c, w) = (chassis.to_str().unwrap(), wheel.to_str().unwrap());
    let ports = |imp: &cosim_ssp::Import| {
        let toml = imp.toml();
        let i = toml.find("ports = [").expect("a bond");
        toml[i..].lines().nth(1).unwrap().trim().to_string()
    };
    // Marked as the FMUs declare: port a is the simulator of the first
    // connection's "input", the wheel.
    let asis = [Some("output"), Some("input"), Some("output"), Some("input")];
    let imp = import(&quarter_truck_form(dir.path(), asis, c, w));
    assert_eq!(
        ports(&imp),
        "{ input = \"wheel.F\", output = \"wheel.v_w\" },"
    );
    // Units that show the pair: nothing to note, not `intended`.
    assert!(!imp.toml().contains("intended"));
    // Swapped as in libcosim's example: the chassis.
    let imp = import(&quarter_truck_form(dir.path(), SWAPPED, c, w));
    assert_eq!(
        ports(&imp),
        "{ input = \"chassis.v_w\", output = \"chassis.F_c\" },"
    );
    // One connection marked: the other follows it.
    let one = [Some("input"), Some("output"), None, None];
    let imp = import(&quarter_truck_form(dir.path(), one, c, w));
    assert_eq!(
        ports(&imp),
        "{ input = \"chassis.v_w\", output = \"chassis.F_c\" },"
    );
    let n = find(imp.diagnostics(), "which libcosim requires");
    assert_eq!((n.severity, n.line), (Severity::Note, Some(26)));

    // The two connections disagree: libcosim would pair chassis.F_c with
    // wheel.v_w (not a port); cosim pairs each simulator's own variables.
    let mixed = [Some("input"), Some("output"), Some("output"), Some("input")];
    let imp = import(&quarter_truck_form(dir.path(), mixed, c, w));
    let d = find(imp.diagnostics(), "disagree");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.line, Some(27));
    assert!(
        d.message.contains("'chassis.F_c'") && d.message.contains("'wheel.v_w'"),
        "{d}"
    );
    assert_eq!(
        ports(&imp),
        "{ input = \"chassis.v_w\", output = \"chassis.F_c\" },"
    );
    imp.resolve(&imp.scenario().unwrap()).unwrap();

    // Errors at the attribute: the same mark twice, a value libcosim refuses.
    let twice = [Some("input"), Some("input"), None, None];
    let e = cosim_ssp::import(
        &quarter_truck_form(dir.path(), twice, c, w),
        &ImportOptions::default(),
    )
    .unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(24), Some(61)), "{e}");
    assert!(d.message.contains("both variables"), "{e}");
    let typo = [Some("inpt"), Some("output"), None, None];
    let e = cosim_ssp::import(
        &quarter_truck_form(dir.path(), typo, c, w),
        &ImportOptions::default(),
    )
    .unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(23), Some(65)), "{e}");
    assert_eq!(d.help.as_deref(), Some("did you mean 'input'?"));
}

#[test]
fn connection_direction_comes_from_the_fmus_and_the_algorithm_name_is_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let (m, s) = (fmu("Mass"), fmu("Spring"));
    let text = format!(
        r#"<OspSystemStructure version="0.1">
    <EndTime>1.0</EndTime>
    <BaseStepSize>1e-3</BaseStepSize>
    <Algorithm>FixedStep</Algorithm>
    <Simulators>
        <Simulator name="mass" source="{}"/>
        <Simulator name="spring" source="{}"/>
    </Simulators>
    <Connections>
        <VariableConnection>
            <Variable simulator="mass" name="v" causality="input"/>
            <Variable simulator="spring" name="v" causality="output"/>
        </VariableConnection>
        <VariableConnection>
            <Variable simulator="mass" name="F"/>
            <Variable simulator="spring" name="F"/>
        </VariableConnection>
    </Connections>
</OspSystemStructure>
"#,
        m.display(),
        s.display()
    );
    let p = dir.path().join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    let imp = import(&p);
    let toml = imp.toml();
    assert!(toml.contains("kind = \"fixed-step\""), "{toml}");
    assert!(
        toml.contains("from = \"mass.v\"\nto = \"spring.v\""),
        "{toml}"
    );
    assert!(
        toml.contains("from = \"spring.F\"\nto = \"mass.F\""),
        "{toml}"
    );
    // The contrary attributes are noted where they are written.
    let n = find(imp.diagnostics(), "'mass.v' is marked causality=\"input\"");
    assert_eq!(
        (n.severity, n.line, n.column),
        (Severity::Note, Some(11), Some(60))
    );
    find(
        imp.diagnostics(),
        "'spring.v' is marked causality=\"output\"",
    );
    let resolved = imp.resolve(&imp.scenario().unwrap()).unwrap();
    assert_eq!(resolved.connections.len(), 2);
    run_system(&p, Some(0.01));
}

#[test]
fn without_end_time_the_fmus_default_experiment_gives_the_stop() {
    // B1-B with the project's FMUs (DefaultExperiment stopTime 10 s) and
    // libcosim's marks, without <EndTime>.
    let dir = tempfile::tempdir().unwrap();
    let (c, w) = (fmu("QuarterCarChassisSuspension"), fmu("QuarterCarWheel"));
    let osp = quarter_truck_form(
        dir.path(),
        SWAPPED,
        c.to_str().unwrap(),
        w.to_str().unwrap(),
    );
    let imp = import(&osp);
    assert!(!imp.toml().contains("[simulation]"), "{}", imp.toml());
    let resolved = imp.resolve(&imp.scenario().unwrap()).unwrap();
    assert_eq!((resolved.start, resolved.stop), (0.0, 10.0));
    // cosim convert writes no stop either, and nothing to fix.
    let conv = imp.convert().unwrap();
    assert!(conv.before_run.is_empty());
    assert!(!conv.toml.contains("stop"), "{}", conv.toml);
}

// ---------------------------------------------------------------------
// Item 4: cosim convert converts what only a run would refuse

/// A Mass and a TwoMassS1 (DefaultExperiment stopTimes 10 s and 1 s), the
/// mass's velocity [m/s] into the force input [N] of the other, the mass's
/// force input not connected, and no `<EndTime>`.
fn run_only_problems(dir: &Path, end_time: &str) -> PathBuf {
    let text = format!(
        r#"<OspSystemStructure version="0.1">
    <BaseStepSize>1e-3</BaseStepSize>{end_time}
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
        fmu("Mass").display(),
        fmu("TwoMassS1").display()
    );
    let p = dir.join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn convert_writes_what_only_a_run_refuses_and_run_refuses_it_with_the_same_messages() {
    let dir = tempfile::tempdir().unwrap();
    let osp = run_only_problems(dir.path(), "");
    let toml_path = dir.path().join("out/s.toml");
    std::fs::create_dir_all(toml_path.parent().unwrap()).unwrap();
    let imp = cosim_ssp::import(
        &osp,
        &ImportOptions {
            toml_path: Some(toml_path.clone()),
            ..ImportOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Before: resolving refused it, and so did cosim convert.
    assert!(imp.resolve(&imp.scenario().unwrap()).is_err());
    let conv = imp.convert().unwrap_or_else(|e| panic!("{e}"));
    println!("{}", conv.toml);
    let messages: Vec<&str> = conv.before_run.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].starts_with("no stop time"), "{messages:?}");
    assert!(messages[1].starts_with("unit mismatch"), "{messages:?}");
    assert!(
        conv.before_run
            .iter()
            .all(|d| d.severity == Severity::Warning)
    );
    // Located in the OSP file: the unit mismatch at the input's variable.
    let unit = &conv.before_run[1];
    assert_eq!(unit.line, Some(10));
    // Help for the conversion's own output, never "run cosim convert".
    assert!(
        conv.before_run[0]
            .help
            .as_deref()
            .is_some_and(|h| h.contains("--stop <seconds> to cosim convert")),
        "{:?}",
        conv.before_run[0].help
    );
    for d in conv.before_run.iter().chain(&conv.warnings) {
        for n in &d.notes {
            assert!(!n.contains("cosim convert"), "{d}");
        }
    }
    assert!(
        unit.notes
            .iter()
            .any(|n| n.contains("this conversion writes")),
        "{unit}"
    );
    // The warnings: the unconnected input.
    let w = find(&conv.warnings, "not connected");
    assert!(w.message.contains("F"), "{w}");
    // All of it in the header; the scenario as the file describes it.
    let header: String = conv
        .toml
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(header.contains("# TO FIX BEFORE A RUN"), "{header}");
    assert!(
        header.contains("OspSystemStructure.xml: no stop time"),
        "{header}"
    );
    assert!(
        header.contains("OspSystemStructure.xml:10: unit mismatch"),
        "{header}"
    );
    assert!(header.contains("# WARNINGS:"), "{header}");
    assert!(header.contains("not connected"), "{header}");
    assert!(!conv.toml.lines().any(|l| l.starts_with("unit_mismatch")));
    assert!(!conv.toml.lines().any(|l| l.starts_with("stop")));
    assert!(conv.toml.contains("[simulation]  # no stop time"));
    assert!(conv.toml.contains("run with --stop <seconds>"));
    assert_eq!(conv.resolved.connections.len(), 1);

    // The written scenario: a run refuses it with the same messages, one
    // problem at a time, and its error line names --stop.
    std::fs::write(&toml_path, &conv.toml).unwrap();
    let overrides = Overrides {
        out: Some(dir.path().join("run")),
        ..Overrides::default()
    };
    let e = runner::prepare(&toml_path, &overrides, None)
        .err()
        .expect("no stop");
    let text = e.to_string();
    assert!(text.contains(messages[0]), "{text}");
    assert!(text.contains("run with --stop <seconds>"), "{text}");
    let with_stop = Overrides {
        stop: Some(0.1),
        ..overrides.clone()
    };
    let e = runner::prepare(&toml_path, &with_stop, None)
        .err()
        .expect("units");
    let text = e.to_string();
    let tail = messages[1].split(": ").next().unwrap();
    assert!(
        text.contains(tail) && text.contains("'a.v' is in m/s"),
        "{text}"
    );
    // And so does a run of the OSP file.
    let e = cosim_ssp::prepare(&osp, &overrides, None)
        .err()
        .expect("no stop");
    assert_eq!(e.errors().next().unwrap().message, messages[0]);
    let e = cosim_ssp::prepare(&osp, &with_stop, None)
        .err()
        .expect("units");
    assert_eq!(e.errors().next().unwrap().message, messages[1]);
}

#[test]
fn convert_writes_the_stop_and_step_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let osp = run_only_problems(dir.path(), "\n    <EndTime>2.0</EndTime>");
    let imp = cosim_ssp::import(
        &osp,
        &ImportOptions {
            stop: Some(0.5),
            step: Some(1e-4),
            ..ImportOptions::default()
        },
    )
    .unwrap();
    let conv = imp.convert().unwrap();
    assert!(
        conv.toml.contains("stop = 0.5  # --stop\n"),
        "{}",
        conv.toml
    );
    assert!(
        conv.toml.contains("step = 0.0001  # --step\n"),
        "{}",
        conv.toml
    );
    assert_eq!(conv.resolved.stop, 0.5);
    assert_eq!(conv.resolved.master.step, 1e-4);
    // Only the unit mismatch is left to fix.
    assert_eq!(conv.before_run.len(), 1);
    assert!(conv.before_run[0].message.starts_with("unit mismatch"));
}

#[test]
fn convert_still_refuses_what_is_wrong_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"<OspSystemStructure version="0.1">
    <Simulators>
        <Simulator name="a" source="{}"/>
        <Simulator name="b" source="{}"/>
    </Simulators>
    <Connections>
        <VariableConnection>
            <Variable simulator="a" name="vv"/>
            <Variable simulator="b" name="F"/>
        </VariableConnection>
    </Connections>
</OspSystemStructure>
"#,
        fmu("Mass").display(),
        fmu("Mass").display()
    );
    let p = dir.path().join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    let e = import(&p).convert().unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!(d.line, Some(8), "{e}");
    assert_eq!(d.help.as_deref(), Some("did you mean 'v'?"));
    assert!(d.notes.iter().all(|n| !n.contains("cosim convert")), "{e}");
}
