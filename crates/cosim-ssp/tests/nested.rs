//! Nested SSP systems (`<ssd:System>` inside `<ssd:Elements>`) as nested
//! scenarios (hierarchical co-simulation): the B3 three-mass benchmark in
//! hierarchical form runs bit for bit like its TOML scenario, a two-level
//! nesting maps connectors, transformations, parameters and steps through
//! both levels, and errors inside nested systems point at their SSD line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_core::metrics::Table;
use cosim_scenario::Overrides;
use cosim_scenario::runner::{self, Outcome};
use cosim_ssp::{Diagnostic, ImportOptions, Severity};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn fmus() -> PathBuf {
    fmu_kit::dist::ensure_built().expect("building the project FMUs");
    root().join("fmus/dist/fmi2")
}

fn import(path: &Path) -> cosim_ssp::Import {
    fmus();
    cosim_ssp::import(path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn overrides(dir: &Path) -> Overrides {
    Overrides {
        out: Some(dir.to_path_buf()),
        ..Overrides::default()
    }
}

fn check(outcome: Outcome) -> Outcome {
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    outcome
}

/// Runs an SSP system; returns the output directory and the outcome.
fn run_system(path: &Path, o: &Overrides) -> Outcome {
    fmus();
    let imported = cosim_ssp::prepare(path, o, None).unwrap_or_else(|e| panic!("{e}"));
    check(runner::run(imported.prepared, Vec::new(), None).unwrap())
}

/// Runs a TOML scenario.
fn run_toml(path: &Path, o: &Overrides) -> Outcome {
    fmus();
    let prepared = runner::prepare(path, o, None).unwrap_or_else(|e| panic!("{e}"));
    check(runner::run(prepared, Vec::new(), None).unwrap())
}

fn trace(dir: &Path) -> Table {
    Table::read(&dir.join("trace.csv")).unwrap()
}

/// The same columns, in the same order, with the same values bit for bit.
fn assert_identical(a: &Table, b: &Table) {
    assert_eq!(a.names, b.names, "different columns");
    assert_eq!(a.time(), b.time(), "different time points");
    for name in a.names.iter().skip(1) {
        let (x, y) = (a.column(name).unwrap(), b.column(name).unwrap());
        let same = x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
        assert!(same && x.len() == y.len(), "column {name} differs");
    }
}

fn same_files(a: &Path, b: &Path, files: &[&str]) {
    for f in files {
        let x = std::fs::read_to_string(a.join(f)).unwrap();
        let y = std::fs::read_to_string(b.join(f)).unwrap();
        assert!(x.lines().count() > 2, "{f} is empty");
        assert_eq!(x, y, "{f} differs");
    }
}

fn last(t: &Table, name: &str) -> f64 {
    *t.column(name)
        .unwrap_or_else(|| panic!("no column {name}: {:?}", t.names))
        .last()
        .unwrap()
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

/// A fixture in `dir` with absolute FMU paths and `edit` applied.
fn edited(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(data(name))
        .unwrap()
        .replace("../../../../fmus/dist/fmi2", &fmus().display().to_string());
    let p = dir.join(name);
    std::fs::write(&p, edit(text)).unwrap();
    p
}

/// Every output of the three FMUs, as the import lists them.
const B3_OUTPUTS: &str = "variables = [\"s1.x1\", \"s1.v1\", \"nest.s2.x2\", \"nest.s2.v2\", \"nest.s2.l12\", \"nest.s3.x3\", \"nest.s3.v3\", \"nest.s3.l23\"]\n";

/// `scenarios/b3_three_mass_hierarchical.toml` with absolute FMU paths and
/// the trace variables of the import (every FMU output).
fn b3_toml(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("scenarios/b3_three_mass_hierarchical.toml"))
        .unwrap()
        .replace("../fmus/dist/fmi2", &fmus().display().to_string());
    let at = text
        .find("variables = [")
        .expect("the scenario names its variables");
    let p = dir.join("b3_hierarchical.toml");
    std::fs::write(&p, format!("{}{B3_OUTPUTS}", &text[..at])).unwrap();
    p
}

// ---------------------------------------------------------------------
// B3 three-mass oscillator, hierarchical

#[test]
fn b3_hierarchical_ssd_maps_onto_a_nested_system() {
    let imp = import(&data("b3_hierarchical.ssd"));
    assert!(imp.unsupported().is_empty(), "{:?}", imp.unsupported());
    let toml = imp.toml();
    println!("{toml}");
    for part in [
        // The top level: the FMUs' common DefaultExperiment stepSize.
        "[master]\nstep = 0.1  # the DefaultExperiment stepSize of every FMU\n",
        "[[subsystems]]  # b3_hierarchical.ssd:35\nname = \"nest\"\n",
        // The nested system's interface: what its connectors lead to.
        "exposes = [\n  \"s2.x1\",  # b3_hierarchical.ssd:58\n  \"s2.v1\",  # b3_hierarchical.ssd:59\n  \"s2.l12\",  # b3_hierarchical.ssd:60\n]\n",
        // Its own step, from OMSimulator's annotation.
        "[subsystems.system.master]\nstep = 0.025  # b3_hierarchical.ssd:69\n",
        "[[subsystems.system.subsystems]]  # b3_hierarchical.ssd:42\nname = \"s2\"\n",
        // Parameters: the nested system's binding, the top level's by
        // hierarchical name and by prefix.
        "[subsystems.system.subsystems.parameters]\nc12 = 0.1  # b3_hierarchical.ssd:50\nd12 = 0.4  # b3_hierarchical.ssd:51\n",
        "[subsystems.system.subsystems.parameters]\nc23 = 1.0  # b3_hierarchical.ssd:81\nd23 = 1.0  # b3_hierarchical.ssd:82\nc3 = 10.0  # b3_hierarchical.ssd:91\nd3 = 2.0  # b3_hierarchical.ssd:92\n",
        "[[subsystems.system.connections]]  # b3_hierarchical.ssd:61\nfrom = \"s3.l23\"\nto = \"s2.l23\"\n",
        // The top level's connections to the nested system's connectors.
        "[[connections]]  # b3_hierarchical.ssd:99\nfrom = \"nest.s2.l12\"\nto = \"s1.l12\"\n",
        "[[connections]]  # b3_hierarchical.ssd:100\nfrom = \"s1.x1\"\nto = \"nest.s2.x1\"\n",
        "[[connections]]  # b3_hierarchical.ssd:101\nfrom = \"s1.v1\"\nto = \"nest.s2.v1\"\n",
        "\"nest.s3.l23\",\n]\n",
    ] {
        assert!(toml.contains(part), "missing {part:?}");
    }
    let note = find(
        imp.diagnostics(),
        "the step of nested system 'nest' is 0.025 s",
    );
    assert_eq!(
        (note.severity, note.line, note.column),
        (Severity::Note, Some(69), Some(69))
    );
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    let resolved = imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resolved.subsystems.len(), 2);
    assert_eq!(resolved.connections.len(), 3);
    assert_eq!(
        (resolved.start, resolved.stop, resolved.master.step),
        (0.0, 25.0, 0.1)
    );
    assert_eq!(resolved.outputs.variables.len(), 8);
}

#[test]
fn b3_hierarchical_ssd_runs_like_the_toml_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("ssd"), dir.path().join("toml"));
    let ssd = run_system(&data("b3_hierarchical.ssd"), &overrides(&a));
    let toml = run_toml(&b3_toml(dir.path()), &overrides(&b));
    let (ta, tb) = (trace(&a), trace(&b));
    assert_identical(&ta, &tb);
    same_files(&a, &b, &["energy.csv", "energy.nest.csv", "steps.csv"]);
    // 250 steps of H1 = 0.1 s; the nest takes four of H2 = 0.025 s in each.
    assert_eq!(ta.time().len(), 251);
    assert_eq!(ta.time().last(), Some(&25.0));
    assert_eq!(ta.names.len(), 9);
    for outcome in [&ssd, &toml] {
        let nest = outcome
            .summary
            .subsystems
            .iter()
            .find(|s| s.name == "nest")
            .unwrap();
        assert_eq!(
            nest.calls.do_step,
            2 * 4 * 250,
            "two FMUs, four inner steps"
        );
    }
    // The masses move (initial positions 1, 2, 3 m, at rest).
    assert_eq!(ta.column("nest.s3.x3").map(|c| c[0]), Some(3.0));
    let x1 = last(&ta, "s1.x1");
    assert!(x1.is_finite() && x1 != 1.0, "{x1}");
    println!(
        "s1.x1(25) = {x1}, nest.s3.x3(25) = {}",
        last(&ta, "nest.s3.x3")
    );
}

#[test]
fn b3_hierarchical_converted_toml_runs_like_the_ssd() {
    let dir = tempfile::tempdir().unwrap();
    let toml_path = dir.path().join("conv/b3.toml");
    std::fs::create_dir_all(toml_path.parent().unwrap()).unwrap();
    let opts = ImportOptions {
        toml_path: Some(toml_path.clone()),
        extract_to: None,
        ..ImportOptions::default()
    };
    let imp =
        cosim_ssp::import(&data("b3_hierarchical.ssd"), &opts).unwrap_or_else(|e| panic!("{e}"));
    // Relative FMU paths, at every level.
    assert!(
        imp.toml()
            .contains("fmu = \"../../../../../fmus/dist/fmi2/ThreeMassS3.fmu\"")
            || imp.toml().contains("fmus/dist/fmi2/ThreeMassS3.fmu\""),
        "{}",
        imp.toml()
    );
    std::fs::write(&toml_path, imp.toml()).unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run_toml(&toml_path, &overrides(&a));
    run_system(&data("b3_hierarchical.ssd"), &overrides(&b));
    same_files(
        &a,
        &b,
        &["trace.csv", "energy.csv", "energy.nest.csv", "steps.csv"],
    );
    assert_identical(&trace(&a), &trace(&b));
}

// ---------------------------------------------------------------------
// Two levels

/// `two_level.ssd` written by hand as a scenario.
const TWO_LEVEL_TOML: &str = r#"
[simulation]
stop = 0.1

[master]
step = 0.01

[[subsystems]]
name = "src"
fmu = "FMUS/Gain.fmu"
parameters = { k = 1.5 }
start = { u = 2.0 }

[[subsystems]]
name = "outer"
exposes = ["inner.g2.u", "inner.g3.u", "g1.y"]

[subsystems.system.master]
step = 0.01

[[subsystems.system.subsystems]]
name = "inner"
exposes = ["g2.u", "g3.u", "g2.y"]

[subsystems.system.subsystems.system.master]
step = 0.01

[[subsystems.system.subsystems.system.subsystems]]
name = "g2"
fmu = "FMUS/Gain.fmu"
parameters = { k = 3.0 }

[[subsystems.system.subsystems.system.subsystems]]
name = "g3"
fmu = "FMUS/Gain.fmu"

[[subsystems.system.subsystems]]
name = "g1"
fmu = "FMUS/Gain.fmu"
parameters = { k = 2.0 }

[[subsystems.system.connections]]
from = "inner.g2.y"
to = "g1.u"

[[subsystems]]
name = "sink"
fmu = "FMUS/Gain.fmu"

[[connections]]
from = "src.y"
to = "outer.inner.g2.u"
gain = 0.5

[[connections]]
from = "src.y"
to = "outer.inner.g3.u"
offset = 1.0

[[connections]]
from = "outer.g1.y"
to = "sink.u"

[outputs]
variables = ["src.y", "outer.inner.g2.y", "outer.inner.g3.y", "outer.g1.y", "sink.y"]
"#;

#[test]
fn two_level_nesting_maps_connectors_parameters_and_steps() {
    let imp = import(&data("two_level.ssd"));
    let toml = imp.toml();
    println!("{toml}");
    for part in [
        "[[subsystems]]  # two_level.ssd:27\nname = \"outer\"\nexposes = [\n  \"inner.g2.u\",  # two_level.ssd:64\n  \"inner.g3.u\",  # two_level.ssd:64\n  \"g1.y\",  # two_level.ssd:66\n]\n",
        "[subsystems.system.master]\nstep = 0.01  # the step of the level above\n",
        "[[subsystems.system.subsystems]]  # two_level.ssd:33\nname = \"inner\"\nexposes = [\n  \"g2.u\",  # two_level.ssd:43\n  \"g3.u\",  # two_level.ssd:44\n  \"g2.y\",  # two_level.ssd:47\n]\n",
        "[subsystems.system.subsystems.system.master]\nstep = 0.01  # the step of the level above\n",
        "[[subsystems.system.subsystems.system.subsystems]]  # two_level.ssd:40\nname = \"g3\"\n",
        // The hierarchical name reaches two levels down.
        "[subsystems.system.subsystems.system.subsystems.parameters]\nk = 3.0  # two_level.ssd:76\n",
        // The nested system's binding with a prefix.
        "[subsystems.system.subsystems.parameters]\nk = 2.0  # two_level.ssd:57\n",
        // One connector, two inner inputs: 0.5 x, and 2 (0.5 x) + 1.
        "[[connections]]  # two_level.ssd:83\nfrom = \"src.y\"\nto = \"outer.inner.g2.u\"\ngain = 0.5\n",
        "[[connections]]  # two_level.ssd:83\nfrom = \"src.y\"\nto = \"outer.inner.g3.u\"\noffset = 1.0\n",
        "[[connections]]  # two_level.ssd:86\nfrom = \"outer.g1.y\"\nto = \"sink.u\"\n",
    ] {
        assert!(toml.contains(part), "missing {part:?}");
    }
    let a = find(
        imp.diagnostics(),
        "annotation of type 'com.example.diagram' ignored",
    );
    assert_eq!((a.severity, a.line), (Severity::Note, Some(89)));

    // src.y = 1.5 * 2; g2 = 3 * (0.5 * 3); g3 = 1 * (2 * 1.5 + 1);
    // g1 = 2 * g2; sink = g1.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("ssd"), dir.path().join("toml"));
    run_system(&data("two_level.ssd"), &overrides(&a));
    let t = trace(&a);
    assert_eq!(t.time().len(), 11);
    for (column, value) in [
        ("src.y", 3.0),
        ("outer.inner.g2.y", 4.5),
        ("outer.inner.g3.y", 4.0),
        ("outer.g1.y", 9.0),
        ("sink.y", 9.0),
    ] {
        assert_eq!(last(&t, column), value, "{column}");
    }
    let hand = dir.path().join("two_level.toml");
    std::fs::write(
        &hand,
        TWO_LEVEL_TOML.replace("FMUS", &fmus().display().to_string()),
    )
    .unwrap();
    run_toml(&hand, &overrides(&b));
    assert_identical(&t, &trace(&b));
    same_files(&a, &b, &["steps.csv"]);

    // --step reaches the nested systems that take the step of the level
    // above (their FMUs' 0.01 s would not divide 0.025 s).
    let c = dir.path().join("step");
    let o = Overrides {
        step: Some(0.025),
        ..overrides(&c)
    };
    run_system(&data("two_level.ssd"), &o);
    let t = trace(&c);
    // Communication points in integer nanoseconds: n * 25 ms exactly.
    let times: Vec<f64> = (0..5).map(|n| f64::from(n * 25) / 1000.0).collect();
    assert_eq!(t.time(), &times[..]);
    assert_eq!(last(&t, "sink.y"), 9.0);
}

// ---------------------------------------------------------------------
// Errors

#[test]
fn errors_inside_nested_systems_point_at_the_ssd_line() {
    let dir = tempfile::tempdir().unwrap();

    // A misspelt variable in a connection inside the nested system,
    // reported by the scenario layer.
    let p = edited(dir.path(), "b3_hierarchical.ssd", |t| {
        t.replacen("startConnector=\"l23\"", "startConnector=\"l233\"", 1)
    });
    let e = cosim_ssp::prepare(&p, &overrides(dir.path()), None)
        .err()
        .expect("unknown inner variable");
    println!("{e}");
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(61), Some(61)), "{e}");
    assert_eq!(
        d.message,
        "subsystem 's3' (ThreeMassS3) has no variable 'l233'"
    );
    assert_eq!(d.help.as_deref(), Some("did you mean 'l23'?"));
    assert!(
        e.to_string()
            .contains("61 |           <ssd:Connection startElement=\"s3\" startConnector=\"l233\"")
    );

    // A connector the nested system does not have, from the level above.
    let p = edited(dir.path(), "b3_hierarchical.ssd", |t| {
        t.replacen(
            "endElement=\"nest\" endConnector=\"x1\"",
            "endElement=\"nest\" endConnector=\"x\"",
            1,
        )
    });
    let e = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!(d.line, Some(100), "{e}");
    assert!(
        d.message
            .contains("nested system 'nest' has no connector 'x'"),
        "{e}"
    );
    assert_eq!(d.help.as_deref(), Some("did you mean 'x1'?"));

    // A step that does not divide the step of the level above: at the
    // nested system.
    let p = edited(dir.path(), "b3_hierarchical.ssd", |t| {
        t.replacen("stepSize=\"0.025\"", "stepSize=\"0.03\"", 1)
    });
    let e = cosim_ssp::prepare(&p, &overrides(dir.path()), None)
        .err()
        .expect("a step that does not divide");
    println!("{e}");
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(35), Some(8)), "{e}");
    assert_eq!(
        d.message,
        "the step 0.03 s of nested system 'nest' does not divide the step 0.1 s of the level above"
    );

    // Two levels down: an inner variable behind a connector, reported
    // where the connection inside the innermost system names it.
    let p = edited(dir.path(), "two_level.ssd", |t| {
        t.replacen(
            "endElement=\"g2\" endConnector=\"u\"",
            "endElement=\"g2\" endConnector=\"uu\"",
            1,
        )
    });
    let e = cosim_ssp::prepare(&p, &overrides(dir.path()), None)
        .err()
        .expect("unknown variable two levels down");
    println!("{e}");
    let d = e.errors().next().unwrap();
    assert_eq!(d.line, Some(43), "{e}");
    assert!(d.message.contains("'uu'"), "{e}");
    assert!(d.file.ends_with("two_level.ssd"), "{}", d.file.display());

    // A parameter for an inner component that has no such variable: a
    // warning at the parameter, as at the top level.
    let p = edited(dir.path(), "b3_hierarchical.ssd", |t| {
        t.replacen("name=\"nest.s3.d23\"", "name=\"nest.s3.d32\"", 1)
    });
    let imp = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let w = find(imp.diagnostics(), "'d32' names no variable of 's3'");
    assert_eq!((w.severity, w.line), (Severity::Warning, Some(82)));
    assert_eq!(w.help.as_deref(), Some("did you mean 'd23'?"));

    // Something not mapped inside a nested system: by name and line.
    let p = edited(dir.path(), "two_level.ssd", |t| {
        t.replacen(
            "<ssd:Component name=\"g3\"",
            "<ssd:SignalDictionaryReference name=\"bus\" dictionary=\"B\"/><ssd:Component name=\"g3\"",
            1,
        )
    });
    let imp = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let u = &imp.unsupported()[0];
    assert_eq!(
        (u.element.as_deref(), u.line),
        (Some("ssd:SignalDictionaryReference"), Some(40))
    );
    assert!(
        imp.toml()
            .contains("#   two_level.ssd:40: <ssd:SignalDictionaryReference name=\"bus\">")
    );
    assert!(cosim_ssp::prepare(&p, &overrides(dir.path()), None).is_err());
}
