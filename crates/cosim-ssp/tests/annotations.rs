//! libcosim's OSP annotations in SSP files (namespace
//! `http://opensimulationplatform.com/SSP/OSPAnnotations`, annotation type
//! `com.opensimulationplatform`): `<osp:FixedStepAlgorithm baseStepSize
//! numWorkerThreads>` in `<ssd:DefaultExperiment>` sets the master step
//! and its worker threads, `<osp:StepSizeHint value>` on a component its
//! step multiple, rounded as libcosim rounds it; other annotations are
//! notes. On the project's B1 quarter car FMUs, as `.ssd` and `.ssp`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
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

fn fmu(name: &str) -> PathBuf {
    fmu_kit::dist::ensure_built().expect("building the project FMUs");
    root().join("fmus/dist/fmi2").join(format!("{name}.fmu"))
}

/// `tests/data/osp_annotations.ssd`: B1 with baseStepSize 1e-4,
/// numWorkerThreads 2, a StepSizeHint of 2.5e-4 on the wheel, stop 0.01.
fn ssd_text() -> String {
    std::fs::read_to_string(data("osp_annotations.ssd")).unwrap()
}

/// The SSD text with absolute FMU paths, edited, written to `dir`.
fn edited(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    fmu("Gain");
    let fmus = root().join("fmus/dist/fmi2");
    let text = ssd_text().replace("../../../../fmus/dist/fmi2", &fmus.display().to_string());
    let p = dir.join("SystemStructure.ssd");
    std::fs::write(&p, edit(text)).unwrap();
    p
}

/// The (edited) SSD packaged as an `.ssp`: SystemStructure.ssd at the
/// root, the FMUs in resources/.
fn package(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let ssd = edit(ssd_text()).replace("../../../../fmus/dist/fmi2/", "resources/");
    let path = dir.join("b1 osp.ssp");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    zip.add_directory("resources/", opts).unwrap();
    for m in ["QuarterCarChassis", "QuarterCarWheelSuspension"] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmu(m)).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    path
}

fn import(path: &Path) -> cosim_ssp::Import {
    fmu("Gain");
    cosim_ssp::import(path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn overrides(dir: &Path) -> Overrides {
    Overrides {
        out: Some(dir.to_path_buf()),
        ..Overrides::default()
    }
}

/// Runs the system with `o` (its `out` set to a new directory).
fn run_with(path: &Path, o: Overrides) -> (tempfile::TempDir, Outcome) {
    fmu("Gain");
    let dir = tempfile::tempdir().unwrap();
    let o = Overrides {
        out: Some(dir.path().to_path_buf()),
        ..o
    };
    let imported = cosim_ssp::prepare(path, &o, None).unwrap_or_else(|e| panic!("{e}"));
    let outcome = runner::run(imported.prepared, Vec::new(), None).unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    (dir, outcome)
}

fn run(path: &Path) -> (tempfile::TempDir, Outcome) {
    run_with(path, Overrides::default())
}

fn trace(dir: &tempfile::TempDir) -> Table {
    Table::read(&dir.path().join("trace.csv")).unwrap()
}

fn do_steps(outcome: &Outcome, name: &str) -> u64 {
    outcome
        .summary
        .subsystems
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no subsystem {name}"))
        .calls
        .do_step
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

/// (line, column) of the first `needle` in `text`, 1-based, column of its
/// first character.
fn position(text: &str, needle: &str) -> (usize, usize) {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("'{needle}' not in the text"));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = at - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Every step of the trace is `h` (within rounding), from 0 to `stop`.
fn assert_steps(t: &Table, h: f64, stop: f64) {
    let time = t.time();
    assert_eq!(time.first(), Some(&0.0));
    assert!((time.last().unwrap() - stop).abs() < 1e-12, "{time:?}");
    assert_eq!(time.len(), (stop / h).round() as usize + 1, "{time:?}");
    for w in time.windows(2) {
        assert!((w[1] - w[0] - h).abs() < 1e-12, "a step of {}", w[1] - w[0]);
    }
}

// ---------------------------------------------------------------------
// osp:FixedStepAlgorithm

#[test]
fn fixed_step_algorithm_sets_the_step_and_the_threads() {
    let imp = import(&data("osp_annotations.ssd"));
    let toml = imp.toml();
    assert!(
        toml.contains("[master]\nstep = 0.0001  # osp_annotations.ssd:47\nthreads = 2  # osp_annotations.ssd:47\n"),
        "{toml}"
    );
    let n = find(imp.diagnostics(), "the step of the system is 0.0001 s");
    assert_eq!(n.severity, Severity::Note);
    let (l, c) = position(&ssd_text(), "1e-4\" numWorkerThreads");
    assert_eq!((n.line, n.column), (Some(l), Some(c)));
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    let resolved = imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resolved.master.step, 1e-4);
    assert_eq!(resolved.master.threads, 2);
    // The run: 100 steps of 1e-4 s (the FMUs' default step is 1e-3 s).
    let (dir, outcome) = run(&data("osp_annotations.ssd"));
    assert_steps(&trace(&dir), 1e-4, 0.01);
    assert_eq!(outcome.summary.stats.macro_steps, 100);
    assert_eq!(do_steps(&outcome, "chassis"), 100);
    // --threads and --step still win.
    let o = Overrides {
        step: Some(5e-4),
        ..Overrides::default()
    };
    let (dir, _) = run_with(&data("osp_annotations.ssd"), o);
    assert_steps(&trace(&dir), 5e-4, 0.01);
    let p = cosim_ssp::prepare(
        &data("osp_annotations.ssd"),
        &overrides(tempfile::tempdir().unwrap().path()),
        Some(1),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.prepared.resolved.master.threads, 1);
}

#[test]
fn packaged_ssp_steps_like_the_ssd() {
    let dir = tempfile::tempdir().unwrap();
    let ssp = package(dir.path(), |t| t);
    let imp = import(&ssp);
    assert!(imp.toml().contains("step = 0.0001"), "{}", imp.toml());
    assert!(imp.toml().contains("threads = 2"), "{}", imp.toml());
    let (from_ssp, ssp_outcome) = run(&ssp);
    let (from_ssd, ssd_outcome) = run(&data("osp_annotations.ssd"));
    let (a, b) = (trace(&from_ssp), trace(&from_ssd));
    assert_steps(&a, 1e-4, 0.01);
    assert_eq!(a.names, b.names);
    for name in a.names.iter() {
        assert_eq!(a.column(name), b.column(name), "{name}");
    }
    assert_eq!(
        do_steps(&ssp_outcome, "wheel"),
        do_steps(&ssd_outcome, "wheel")
    );
}

/// libcosim's demo.ssp has stopTime="2e-4" and baseStepSize="1e-4": two
/// steps of 1e-4 s, not one of 2e-4 s (the end cut short a step of the
/// FMUs' default 1e-3 s when the annotation was not read).
#[test]
fn two_steps_of_the_base_step_to_a_stop_time_of_two_base_steps() {
    let dir = tempfile::tempdir().unwrap();
    let short = |t: String| t.replace("stopTime=\"0.01\"", "stopTime=\"2e-4\"");
    let ssd = edited(dir.path(), short);
    let ssp = package(dir.path(), short);
    for path in [ssd, ssp] {
        let (out, outcome) = run(&path);
        assert_eq!(trace(&out).time(), &[0.0, 1e-4, 2e-4], "{}", path.display());
        assert_eq!(outcome.summary.stats.macro_steps, 2);
        let steps = std::fs::read_to_string(out.path().join("steps.csv")).unwrap();
        assert_eq!(steps.lines().count(), 3, "{steps}");
    }
}

#[test]
fn worker_threads_as_libcosim_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    // 0: libcosim's pool has no worker, every step is inline: threads = 1.
    let p = edited(dir.path(), |t| {
        t.replace("numWorkerThreads=\"2\"", "numWorkerThreads=\"0\"")
    });
    let imp = import(&p);
    assert!(imp.toml().contains("threads = 1"), "{}", imp.toml());
    find(imp.diagnostics(), "numWorkerThreads=\"0\"");
    // Absent: every core, cosim's default; no threads key.
    let p = edited(dir.path(), |t| t.replace(" numWorkerThreads=\"2\"", ""));
    let imp = import(&p);
    assert!(!imp.toml().contains("threads"), "{}", imp.toml());
    // Not a number: libcosim ignores it; a warning here.
    let p = edited(dir.path(), |t| {
        t.replace("numWorkerThreads=\"2\"", "numWorkerThreads=\"two\"")
    });
    let imp = import(&p);
    assert!(!imp.toml().contains("threads"), "{}", imp.toml());
    let w = find(imp.diagnostics(), "numWorkerThreads=\"two\"");
    assert_eq!(w.severity, Severity::Warning);
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!((w.line, w.column), {
        let (l, c) = position(&text, "two\"");
        (Some(l), Some(c))
    });
}

#[test]
fn algorithm_errors_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let check = |from: &str, to: &str, needle: &str, message: &str| {
        let p = edited(dir.path(), |t| t.replace(from, to));
        let text = std::fs::read_to_string(&p).unwrap();
        let e = cosim_ssp::import(&p, &ImportOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{to}: no error"));
        let d = e
            .errors()
            .find(|d| d.message.contains(message))
            .unwrap_or_else(|| panic!("no '{message}' in {e}"));
        let (l, c) = position(&text, needle);
        assert_eq!((d.line, d.column), (Some(l), Some(c)), "{e}");
        e.to_string()
    };
    let text = check(
        "baseStepSize=\"1e-4\"",
        "baseStepSize=\"fast\"",
        "fast\"",
        "attribute baseStepSize=\"fast\" of <osp:FixedStepAlgorithm> is not a finite number",
    );
    assert!(text.contains("SystemStructure.ssd:47:49: error"), "{text}");
    check(
        "baseStepSize=\"1e-4\"",
        "baseStepSize=\"-1e-4\"",
        "-1e-4\"",
        "baseStepSize=\"-1e-4\" of <osp:FixedStepAlgorithm> must be positive",
    );
    check(
        "baseStepSize=\"1e-4\"",
        "baseStepSize=\"1e-10\"",
        "1e-10\"",
        "below libcosim's time resolution of 1 ns",
    );
    check(
        "baseStepSize=\"1e-4\" ",
        "",
        "osp:FixedStepAlgorithm numWorkerThreads",
        "<osp:FixedStepAlgorithm> is missing the required attribute 'baseStepSize'",
    );
    check(
        "value=\"2.5e-4\"",
        "value=\"-2.5e-4\"",
        "-2.5e-4\"",
        "component 'wheel': the step size hint -0.00025 s is negative",
    );
    check(
        "value=\"2.5e-4\"",
        "value=\"soon\"",
        "soon\"",
        "attribute value=\"soon\" of <osp:StepSizeHint> is not a finite number",
    );
}

#[test]
fn other_algorithms_are_not_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let p = edited(dir.path(), |t| {
        t.replace(
            "<osp:FixedStepAlgorithm baseStepSize=\"1e-4\" numWorkerThreads=\"2\"/>",
            "<osp:EccoAlgorithm/>",
        )
    });
    let text = std::fs::read_to_string(&p).unwrap();
    let imp = import(&p);
    let u = &imp.unsupported()[0];
    assert_eq!(u.element.as_deref(), Some("osp:EccoAlgorithm"));
    assert_eq!(u.line, Some(position(&text, "<osp:EccoAlgorithm").0));
    assert!(
        u.message.contains("define only <osp:FixedStepAlgorithm>"),
        "{}",
        u.message
    );
    // cosim convert writes the rest; cosim run refuses it.
    assert!(imp.toml().contains("# NOT CONVERTED"));
    let e = cosim_ssp::prepare(&p, &overrides(dir.path()), None)
        .err()
        .expect("a run must refuse an algorithm it cannot map");
    assert!(e.to_string().contains("osp:EccoAlgorithm"), "{e}");
}

// ---------------------------------------------------------------------
// osp:StepSizeHint

/// The wheel's `step_multiple` in the TOML (1 when not written) and the
/// warning about the hint, if any, for a hint and a base step.
fn multiple(dir: &Path, base: &str, hint: &str) -> (u32, Option<Diagnostic>) {
    let p = edited(dir, |t| {
        t.replace("baseStepSize=\"1e-4\"", &format!("baseStepSize=\"{base}\""))
            .replace("value=\"2.5e-4\"", &format!("value=\"{hint}\""))
    });
    let imp = import(&p);
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    let resolved = imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let wheel = resolved
        .subsystems
        .iter()
        .find(|s| s.name == "wheel")
        .unwrap();
    let chassis = resolved
        .subsystems
        .iter()
        .find(|s| s.name == "chassis")
        .unwrap();
    assert_eq!(chassis.step_multiple, 1);
    let warning = imp
        .diagnostics()
        .iter()
        .find(|d| d.severity == Severity::Warning && d.message.contains("step size hint"))
        .cloned();
    (wheel.step_multiple, warning)
}

/// libcosim (`calculate_decimation_factor`): both durations in whole
/// nanoseconds (`x * 1e9` rounded toward zero), the hint divided by the
/// base step rounded down, at least 1; 0 (no hint) is 1; a warning when
/// the hint is not a multiple of the base step.
#[test]
fn step_hints_give_the_multiples_libcosim_gives() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, u32, bool)] = &[
        // base, hint, multiple, warned
        ("1e-4", "1e-4", 1, false),
        ("1e-4", "1e-3", 10, false),
        // 3e-4 / 1e-4 is 2.9999999999999996 in floating point; libcosim
        // divides nanoseconds: 300000 / 100000 = 3.
        ("1e-4", "3e-4", 3, false),
        ("1e-4", "2.5e-4", 2, true),
        ("1e-4", "3.99e-4", 3, true),
        // Smaller than the base step: every step, with a warning.
        ("1e-4", "5e-5", 1, true),
        ("1e-4", "0", 1, false),
        // 1.3e-4 * 1e9 is 129999.99999999999: 129999 ns for libcosim, so
        // 12 steps of 1e-5 s (and its warning), not 13.
        ("1e-5", "1.3e-4", 12, true),
    ];
    for &(base, hint, k, warned) in cases {
        let (got, warning) = multiple(dir.path(), base, hint);
        assert_eq!(got, k, "base {base}, hint {hint}");
        assert_eq!(
            warning.is_some(),
            warned,
            "base {base}, hint {hint}: {warning:?}"
        );
    }
    let (_, w) = multiple(dir.path(), "1e-4", "2.5e-4");
    let w = w.unwrap();
    assert_eq!(
        w.message,
        "component 'wheel': the step size hint 0.00025 s is not a multiple of the step 0.0001 s; it steps every 2 steps (0.0002 s), as libcosim does (the hint divided by the step, rounded down, at least 1)"
    );
    assert_eq!((w.line, w.column), {
        let (l, c) = position(&ssd_text(), "2.5e-4\"");
        (Some(l), Some(c))
    });
}

#[test]
fn a_step_hint_makes_the_component_step_less_often() {
    // The wheel's hint 2.5e-4 s under the base step 1e-4 s: every 2 steps.
    let imp = import(&data("osp_annotations.ssd"));
    assert!(imp.toml().contains("name = \"wheel\"\nfmu = \""));
    assert!(
        imp.toml()
            .contains("step_multiple = 2  # osp_annotations.ssd:31"),
        "{}",
        imp.toml()
    );
    let (dir, outcome) = run(&data("osp_annotations.ssd"));
    assert_eq!(do_steps(&outcome, "chassis"), 100);
    assert_eq!(do_steps(&outcome, "wheel"), 50);
    let summary = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
    assert!(summary.contains("\"do_step\": 50"), "{summary}");
    // The hint is a multiple of the step given on the command line.
    let o = Overrides {
        step: Some(5e-5),
        ..Overrides::default()
    };
    let (_, outcome) = run_with(&data("osp_annotations.ssd"), o);
    assert_eq!(do_steps(&outcome, "chassis"), 200);
    assert_eq!(do_steps(&outcome, "wheel"), 40);
}

#[test]
fn a_step_hint_without_a_step_in_the_file_uses_the_fmus_default_step() {
    let dir = tempfile::tempdir().unwrap();
    // No algorithm: the FMUs' common default step (1e-3 s) is the base.
    let p = edited(dir.path(), |t| {
        let start = t.find("    <ssd:Annotations>\n      <ssc:Annotation type=\"com.opensimulationplatform\">\n        <osp:Algorithm>").unwrap();
        let end = t[start..].find("</ssd:Annotations>").unwrap() + start;
        let mut t = t.clone();
        t.replace_range(start..end + "</ssd:Annotations>\n".len(), "");
        t.replace("value=\"2.5e-4\"", "value=\"3e-3\"")
    });
    let imp = import(&p);
    assert!(!imp.toml().contains("[master]"), "{}", imp.toml());
    assert!(imp.toml().contains("step_multiple = 3"), "{}", imp.toml());
    let (_, outcome) = run(&p);
    assert_eq!(do_steps(&outcome, "chassis"), 10);
    assert_eq!(do_steps(&outcome, "wheel"), 4);
}

#[test]
fn a_step_hint_in_a_nested_system_is_a_multiple_of_its_step() {
    // B3 hierarchical: the nested system steps at 0.025 s (OMSimulator's
    // annotation); a hint of 0.05 s on s3 inside it: every 2 of its steps.
    let text = std::fs::read_to_string(data("b3_hierarchical.ssd")).unwrap();
    let fmus = root().join("fmus/dist/fmi2");
    let text = text.replace("../../../../fmus/dist/fmi2", &fmus.display().to_string());
    let edited_text = text.replacen(
        "ThreeMassS3.fmu\"/>",
        "ThreeMassS3.fmu\"><ssd:Annotations><ssc:Annotation type=\"com.opensimulationplatform\"><osp:StepSizeHint xmlns:osp=\"http://opensimulationplatform.com/SSP/OSPAnnotations\" value=\"0.05\"/></ssc:Annotation></ssd:Annotations></ssd:Component>",
        1,
    );
    assert_ne!(edited_text, text, "s3 in b3_hierarchical.ssd");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b3.ssd");
    std::fs::write(&p, edited_text).unwrap();
    let imp = import(&p);
    let toml = imp.toml();
    let inner = &toml[toml.find("name = \"s3\"").unwrap()..];
    let inner = &inner[..inner.find("[[").unwrap_or(inner.len())];
    assert!(inner.contains("step_multiple = 2"), "{toml}");
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------
// Other annotations

#[test]
fn other_annotations_are_notes_and_misplaced_osp_ones_warnings() {
    let imp = import(&data("osp_annotations.ssd"));
    let n = find(
        imp.diagnostics(),
        "annotation of type 'com.example.layout' ignored",
    );
    assert_eq!(n.severity, Severity::Note);
    assert_eq!(n.line, Some(position(&ssd_text(), "com.example.layout").0));
    // Nothing else: the OSP ones are read.
    assert!(
        imp.diagnostics()
            .iter()
            .all(|d| !d.message.contains("'com.opensimulationplatform' ignored")),
        "{:?}",
        imp.diagnostics()
    );
    // The algorithm on the system, and a step hint on the root: libcosim
    // reads neither there.
    let dir = tempfile::tempdir().unwrap();
    let p = edited(dir.path(), |t| {
        let alg = "<ssc:Annotation type=\"com.opensimulationplatform\">\n        <osp:Algorithm>\n          <osp:FixedStepAlgorithm baseStepSize=\"1e-4\" numWorkerThreads=\"2\"/>\n        </osp:Algorithm>\n      </ssc:Annotation>";
        assert!(t.contains(alg));
        t.replace(alg, "<ssc:Annotation type=\"org.example\"/>").replace(
            "  </ssd:System>",
            &format!("    <ssd:Annotations>{alg}</ssd:Annotations>\n  </ssd:System>\n  <ssd:Annotations><ssc:Annotation type=\"com.opensimulationplatform\"><osp:StepSizeHint value=\"1\"/></ssc:Annotation></ssd:Annotations>"),
        )
    });
    let imp = import(&p);
    assert!(!imp.toml().contains("step = 0.0001"), "{}", imp.toml());
    let w = find(
        imp.diagnostics(),
        "<osp:Algorithm> in <ssd:System> ignored: libcosim reads <osp:Algorithm> only in <ssd:DefaultExperiment>",
    );
    assert_eq!(w.severity, Severity::Warning);
    assert!(w.help.as_deref().unwrap().contains("DefaultExperiment"));
    let w = find(
        imp.diagnostics(),
        "<osp:StepSizeHint> in <ssd:SystemStructureDescription> ignored",
    );
    assert_eq!(w.severity, Severity::Warning);
    find(
        imp.diagnostics(),
        "annotation of type 'org.example' ignored",
    );
    // The OSP algorithm and OMSimulator's FixedStepMaster: libcosim's wins.
    let p = edited(dir.path(), |t| {
        t.replace(
            "  </ssd:System>",
            "    <ssd:Annotations><ssc:Annotation type=\"org.openmodelica\"><oms:Annotations xmlns:oms=\"x\"><oms:SimulationInformation><oms:FixedStepMaster stepSize=\"1e-3\"/></oms:SimulationInformation></oms:Annotations></ssc:Annotation></ssd:Annotations>\n  </ssd:System>",
        )
    });
    let imp = import(&p);
    assert!(imp.toml().contains("step = 0.0001"), "{}", imp.toml());
    let w = find(
        imp.diagnostics(),
        "OMSimulator's FixedStepMaster stepSize 0.001 s is not used",
    );
    assert_eq!(w.severity, Severity::Warning);
}
