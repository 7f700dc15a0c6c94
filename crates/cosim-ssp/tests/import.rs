//! SSP and OSP import: every mapped element, what is reported as not
//! mapped, located errors, and runs compared with the equivalent TOML
//! scenarios, on the project's own FMUs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cosim_core::metrics::Table;
use cosim_scenario::Overrides;
use cosim_scenario::runner;
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

fn import(path: &Path) -> cosim_ssp::Import {
    fmu("Gain");
    cosim_ssp::import(path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn overrides(dir: &Path, stop: Option<f64>) -> Overrides {
    Overrides {
        stop,
        out: Some(dir.to_path_buf()),
        ..Overrides::default()
    }
}

/// Runs an SSP/OSP system through `cosim_ssp::prepare`; returns the output
/// directory.
fn run_system(path: &Path, stop: Option<f64>) -> tempfile::TempDir {
    fmu("Gain");
    let dir = tempfile::tempdir().unwrap();
    let imported = cosim_ssp::prepare(path, &overrides(dir.path(), stop), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = runner::run(imported.prepared, Vec::new(), None).unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    dir
}

/// Runs a TOML scenario; returns the output directory.
fn run_toml(path: &Path, stop: Option<f64>) -> tempfile::TempDir {
    fmu("Gain");
    let dir = tempfile::tempdir().unwrap();
    let prepared =
        runner::prepare(path, &overrides(dir.path(), stop), None).unwrap_or_else(|e| panic!("{e}"));
    let outcome = runner::run(prepared, Vec::new(), None).unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    dir
}

fn trace(dir: &tempfile::TempDir) -> Table {
    Table::read(&dir.path().join("trace.csv")).unwrap()
}

/// Every column of `a` is in `b` with exactly the same values at the same
/// times; returns how many columns were compared.
fn assert_same_columns(a: &Table, b: &Table) -> usize {
    assert_eq!(a.time(), b.time(), "different time points");
    let mut n = 0;
    for name in a.names.iter().skip(1) {
        let x = a.column(name).unwrap();
        let y = b
            .column(name)
            .unwrap_or_else(|| panic!("column {name} missing: {:?}", b.names));
        assert_eq!(x, y, "column {name} differs");
        n += 1;
    }
    assert!(n > 0);
    n
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

// ---------------------------------------------------------------------
// SSD

#[test]
fn ssd_quarter_car_maps_every_element() {
    let imp = import(&data("quarter_car.ssd"));
    assert_eq!(imp.format(), cosim_ssp::Format::Ssp);
    let toml = imp.toml();
    println!("{toml}");
    for line in [
        "start = 0.0  # quarter_car.ssd:56",
        "stop = 4.0  # quarter_car.ssd:56",
        "name = \"chassis\"",
        "m_c = 400.0  # quarter_car.ssd:22",
        "k_c = 15000.0  # wheel.ssv:7",
        "micro_steps = 10  # wheel.ssv:10",
        "from = \"wheel.F_c\"\nto = \"chassis.F\"\ngain = -1.0",
        "from = \"chassis.v_c\"\nto = \"wheel.v_c\"\n",
        // OMSimulator's FixedStepMaster annotation gives the step.
        "[master]\nstep = 0.001  # quarter_car.ssd:51",
    ] {
        assert!(toml.contains(line), "missing {line:?}");
    }
    assert!(!toml.contains("not_a_variable"));
    assert!(imp.unsupported().is_empty());
    let ds = imp.diagnostics();
    let a = find(
        ds,
        "the step of the system is 0.001 s, from OMSimulator's FixedStepMaster",
    );
    assert_eq!(
        (a.severity, a.line, a.column),
        (Severity::Note, Some(51), Some(90))
    );
    assert!(
        !ds.iter()
            .any(|d| d.message.contains("ignored: tool-specific"))
    );
    let k = find(ds, "'k_c' converted from [kN/m] to [N/m]");
    assert_eq!(k.line, Some(7));
    let w = find(ds, "'not_a_variable' names no variable of 'wheel'");
    assert_eq!((w.severity, w.line), (Severity::Warning, Some(11)));
    assert!(w.file.ends_with("wheel.ssv"));
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    let resolved = imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resolved.subsystems.len(), 2);
    assert_eq!(resolved.connections.len(), 2);
    assert_eq!((resolved.start, resolved.stop), (0.0, 4.0));
}

#[test]
fn ssd_quarter_car_runs_like_the_toml_scenario() {
    let ssd = trace(&run_system(&data("quarter_car.ssd"), None));
    let toml = trace(&run_toml(
        &root().join("scenarios/b1_quarter_car_a.toml"),
        None,
    ));
    assert_eq!(ssd.time().len(), 4001);
    let n = assert_same_columns(&ssd, &toml);
    println!("{n} columns identical");
}

#[test]
fn ssd_units_transformations_and_system_bindings() {
    let imp = import(&data("units.ssd"));
    let toml = imp.toml();
    println!("{toml}");
    // The system's bindings override the component's, the prefix applies.
    assert!(toml.contains("k = 3.0  # units.ssd:31"));
    assert!(toml.contains("k = 2.0  # units.ssd:22"));
    assert!(!toml.contains("k = 100.0"));
    // The value bound to the system input reaches the element input.
    assert!(toml.contains("[subsystems.start]\nu = 36.0"));
    // km/h -> m/s, then factor 2, offset 1; written from the input end.
    assert!(toml.contains(
        "from = \"first.y\"\nto = \"second.u\"\ngain = 0.5555555555555556\noffset = 1.0\nunit_mismatch = true"
    ));
    assert!(toml.contains("name = \"third_stage\""));
    let ds = imp.diagnostics();
    find(ds, "'third stage' is called 'third_stage'");
    find(ds, "becomes the start value of 'first.u'");
    find(ds, "only exposes 'third_stage.y'");
    let out = trace(&run_system(&data("units.ssd"), None));
    assert_eq!(last(&out, "first.y"), 108.0);
    let second = 2.0 * (108.0 * 2.0 / 3.6 + 1.0);
    assert!((last(&out, "second.y") - second).abs() < 1e-12);
    assert!((last(&out, "third_stage.y") - second).abs() < 1e-12);
}

/// The quarter car as an .ssp: SystemStructure.ssd and resources/.
fn quarter_car_ssp(dir: &Path) -> PathBuf {
    quarter_car_ssp_with(dir, "quarter car.ssp", &[])
}

/// The quarter car as an .ssp named `name`, with `extra` entries at the end.
fn quarter_car_ssp_with(dir: &Path, name: &str, extra: &[(&str, &[u8])]) -> PathBuf {
    let ssd = std::fs::read_to_string(data("quarter_car.ssd"))
        .unwrap()
        .replace("../../../../fmus/dist/fmi2/", "resources/")
        .replace("source=\"wheel.ssv\"", "source=\"resources/wheel.ssv\"");
    let path = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    zip.add_directory("resources/", opts).unwrap();
    zip.start_file("resources/wheel.ssv", opts).unwrap();
    zip.write_all(&std::fs::read(data("wheel.ssv")).unwrap())
        .unwrap();
    for m in ["QuarterCarChassis", "QuarterCarWheelSuspension"] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmu(m)).unwrap()).unwrap();
    }
    for (n, bytes) in extra {
        zip.start_file(*n, opts).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    path
}

/// An .ssp holding two copies of `resources/wheel.ssv`, the second being
/// `copy` (written as `resources/wheel.ss2`, then renamed in the bytes:
/// the zip writer refuses duplicate names).
fn quarter_car_with_two_ssv(dir: &Path, name: &str, copy: &[u8]) -> PathBuf {
    let (alias, real) = ("resources/wheel.ss2", "resources/wheel.ssv");
    let path = quarter_car_ssp_with(dir, name, &[(alias, copy)]);
    let mut bytes = std::fs::read(&path).unwrap();
    let at: Vec<usize> = (0..=bytes.len() - alias.len())
        .filter(|&i| &bytes[i..i + alias.len()] == alias.as_bytes())
        .collect();
    assert_eq!(at.len(), 2, "the local header and the central directory");
    for i in at {
        bytes[i..i + alias.len()].copy_from_slice(real.as_bytes());
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

/// As in an FMU: two identical copies of an entry are one entry; copies
/// that differ are refused, naming the entry.
#[test]
fn an_ssp_with_identical_copies_of_an_entry_runs_and_one_with_differing_copies_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ssv = std::fs::read(data("wheel.ssv")).unwrap();
    let same = quarter_car_with_two_ssv(dir.path(), "same.ssp", &ssv);
    let from_ssp = trace(&run_system(&same, None));
    let from_ssd = trace(&run_system(&data("quarter_car.ssd"), None));
    assert_same_columns(&from_ssp, &from_ssd);

    let mut other = ssv.clone();
    let at = other.len() / 2;
    other[at] ^= 1;
    let differ = quarter_car_with_two_ssv(dir.path(), "differ.ssp", &other);
    let e = cosim_ssp::import(&differ, &ImportOptions::default()).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("differ.ssp"), "{e}");
    assert!(
        e.contains(&format!(
            "entry 'resources/wheel.ssv': {}",
            cosim_fmi::archive::DUPLICATE
        )),
        "{e}"
    );
}

#[test]
fn ssp_package_runs_like_the_ssd() {
    let dir = tempfile::tempdir().unwrap();
    let ssp = quarter_car_ssp(dir.path());
    let imp = import(&ssp);
    let w = find(imp.diagnostics(), "'not_a_variable'");
    assert!(
        w.file.ends_with("quarter car.ssp/resources/wheel.ssv"),
        "{}",
        w.file.display()
    );
    let from_ssp = trace(&run_system(&ssp, None));
    let from_ssd = trace(&run_system(&data("quarter_car.ssd"), None));
    assert_same_columns(&from_ssp, &from_ssd);
    // Extracting for `cosim convert`: relative paths into the directory.
    let out = dir.path().join("converted");
    let opts = ImportOptions {
        toml_path: Some(out.join("qc.toml")),
        extract_to: Some(out.join("qc")),
        ..ImportOptions::default()
    };
    let imp = cosim_ssp::import(&ssp, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        imp.toml()
            .contains("fmu = \"qc/resources/QuarterCarChassis.fmu\"")
    );
    assert!(out.join("qc/resources/QuarterCarChassis.fmu").is_file());
    imp.scenario().unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn ssp_package_is_extracted_safely() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, entries: &[(&str, &[u8])]| {
        let path = dir.path().join(name);
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        for (n, bytes) in entries {
            zip.start_file(*n, opts).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
        path
    };
    let slip = write(
        "slip.ssp",
        &[("SystemStructure.ssd", b"<x/>"), ("../evil.txt", b"boo")],
    );
    let e = cosim_ssp::import(&slip, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("zip slip"), "{e}");
    assert!(!dir.path().join("evil.txt").exists());
    // Two names that are one once `\` is read as a separator: the second
    // used to overwrite the first.
    let twice = write(
        "twice.ssp",
        &[
            ("SystemStructure.ssd", b"<x/>"),
            ("resources/a.txt", b"a"),
            ("resources\\a.txt", b"b"),
        ],
    );
    let e = cosim_ssp::import(&twice, &ImportOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("entry 'resources\\a.txt': duplicate entry"),
        "{e}"
    );
    // A name the file system cannot hold: the entry, not the deleted
    // temporary path.
    let long = format!("resources/{}.txt", "n".repeat(300));
    let too_long = write(
        "long.ssp",
        &[("SystemStructure.ssd", b"<x/>"), (long.as_str(), b"a")],
    );
    let e = cosim_ssp::import(&too_long, &ImportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "entry '{long}': the name is too long for the file system"
        )),
        "{e}"
    );
    assert!(!e.contains("cosim-ssp-"), "{e}");
    let no_ssd = write("empty.ssp", &[("resources/a.txt", b"a")]);
    let e = cosim_ssp::import(&no_ssd, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("no SystemStructure.ssd"), "{e}");
    let not_zip = dir.path().join("text.ssp");
    std::fs::write(&not_zip, "not a zip").unwrap();
    let e = cosim_ssp::import(&not_zip, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("not a valid zip archive"), "{e}");
    // A source leaving the package.
    let outside = write(
        "outside.ssp",
        &[(
            "SystemStructure.ssd",
            br#"<ssd:SystemStructureDescription xmlns:ssd="x" version="1.0" name="o">
  <ssd:System name="s"><ssd:Elements>
    <ssd:Component name="a" source="../../a.fmu"/>
  </ssd:Elements></ssd:System>
</ssd:SystemStructureDescription>"#,
        )],
    );
    let e = cosim_ssp::import(&outside, &ImportOptions::default()).unwrap_err();
    let d = e.errors().next().unwrap();
    assert!(d.message.contains("outside the .ssp"), "{e}");
    assert_eq!(d.line, Some(3));
}

#[test]
fn unsupported_ssd_elements_are_reported_by_name_and_line() {
    let imp = import(&data("unsupported.ssd"));
    let got: Vec<(Option<&str>, usize)> = imp
        .unsupported()
        .iter()
        .map(|d| (d.element.as_deref(), d.line.unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("ssd:ParameterMapping"), 23),
            (Some("ssd:Component"), 34),
            (Some("ssd:Component"), 36),
            (Some("ssd:Component"), 37),
            (Some("ssd:SignalDictionaryReference"), 38),
            (Some("ssd:Connection"), 42),
            (Some("ssc:BooleanMappingTransformation"), 44),
            (Some("ssd:SignalDictionary"), 48),
        ]
    );
    // Inside a nested system too.
    let nested = &imp.unsupported()[1];
    assert!(nested.message.contains("<ssd:Component name=\"model\">"));
    assert!(
        nested
            .message
            .contains("components of type 'text/x-modelica' are not supported")
    );
    assert!(imp.unsupported().iter().all(Diagnostic::is_error));
    // The TOML lists them and holds the rest, which is a valid scenario.
    let toml = imp.toml();
    assert!(toml.contains("# NOT CONVERTED"));
    assert!(
        toml.contains("#   unsupported.ssd:34: <ssd:Component name=\"model\"> cannot be mapped")
    );
    assert!(toml.contains("[[subsystems]]  # unsupported.ssd:31\nname = \"sub\"\n"));
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    let resolved = imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resolved.connections.len(), 1);
    assert_eq!(resolved.subsystems.len(), 3);
    // A run refuses the system, naming every element.
    let dir = tempfile::tempdir().unwrap();
    let e = cosim_ssp::prepare(
        &data("unsupported.ssd"),
        &overrides(dir.path(), Some(0.1)),
        None,
    )
    .err()
    .expect("a run of a system with unsupported elements must fail");
    assert_eq!(e.errors().count(), 8);
    let text = e.to_string();
    assert!(
        text.contains("unsupported.ssd:34:12: error: <ssd:Component name=\"model\">"),
        "{text}"
    );
    assert!(text.contains("cosim convert"), "{text}");
}

#[test]
fn malformed_files_are_reported_with_line_and_column() {
    let e = cosim_ssp::import(&data("malformed.ssd"), &ImportOptions::default()).unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(7), Some(5)));
    assert!(
        d.message
            .contains("the <ssd:Component> opened on line 6 is not closed")
    );
    assert!(d.file.ends_with("tests/data/malformed.ssd"));
    assert!(e.to_string().contains("malformed.ssd:7:5: error:"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, text: &[u8], line: usize, column: usize, what: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let e = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_err();
        let d = e.errors().next().unwrap();
        assert_eq!((d.line, d.column), (Some(line), Some(column)), "{e}");
        assert!(d.message.contains(what), "{e}");
    };
    check(
        "attr.ssd",
        b"<a>\n  <b x=1/>\n</a>",
        2,
        8,
        "malformed attribute in <b>: attribute value must be enclosed",
    );
    check(
        "root.xml",
        b"<?xml version=\"1.0\"?>\n<Model/>",
        2,
        2,
        "the root element is <Model>",
    );
    check("empty.ssd", b"", 1, 1, "no root element");
    check(
        "number.xml",
        b"<OspSystemStructure version=\"0.1\">\n  <BaseStepSize>fast</BaseStepSize>\n  <Simulators/>\n</OspSystemStructure>",
        2,
        17,
        "must hold a finite number",
    );
    check("utf8.ssd", b"<a>\n\xff</a>", 2, 1, "invalid UTF-8");
    let p = dir.path().join("utf16.ssd");
    std::fs::write(&p, b"\xff\xfe<\0a\0/\0>\0").unwrap();
    let e = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_err();
    assert!(e.to_string().contains("UTF-16"), "{e}");
}

/// The quarter car SSD in a temporary directory with `edit` applied.
fn edited_quarter_car(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let fmus = root().join("fmus/dist/fmi2");
    let text = std::fs::read_to_string(data("quarter_car.ssd"))
        .unwrap()
        .replace("../../../../fmus/dist/fmi2", &fmus.display().to_string());
    std::fs::copy(data("wheel.ssv"), dir.join("wheel.ssv")).unwrap();
    let p = dir.join("SystemStructure.ssd");
    std::fs::write(&p, edit(text)).unwrap();
    p
}

#[test]
fn scenario_errors_point_into_the_ssd() {
    fmu("Gain");
    let dir = tempfile::tempdir().unwrap();
    let p = edited_quarter_car(dir.path(), |t| {
        t.replacen("startConnector=\"F_c\"", "startConnector=\"F_cc\"", 1)
    });
    let e = cosim_ssp::prepare(&p, &overrides(dir.path(), None), None)
        .err()
        .expect("unknown variable");
    let d = e.errors().next().unwrap();
    println!("{e}");
    assert_eq!((d.line, d.column), (Some(41), Some(60)));
    assert_eq!(
        d.message,
        "subsystem 'wheel' (QuarterCarWheelSuspension) has no variable 'F_cc'"
    );
    assert_eq!(d.help.as_deref(), Some("did you mean 'F_c'?"));
    assert!(
        e.to_string()
            .contains("41 |       <ssd:Connection startElement=\"wheel\" startConnector=\"F_cc\"")
    );

    // An unknown element, with the nearest name.
    let p = edited_quarter_car(dir.path(), |t| {
        t.replacen("endElement=\"chassis\"", "endElement=\"chasis\"", 1)
    });
    let e = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!(d.line, Some(42));
    assert!(
        d.message.contains("the system has no element 'chasis'"),
        "{e}"
    );
    assert_eq!(d.help.as_deref(), Some("did you mean 'chassis'?"));

    // Two connections into one input: TOML line numbers become SSD lines.
    let p = edited_quarter_car(dir.path(), |t| {
        t.replacen(
            "startElement=\"chassis\" startConnector=\"v_c\"",
            "startElement=\"wheel\" startConnector=\"F_c\"",
            1,
        )
        .replacen(
            "endElement=\"wheel\" endConnector=\"v_c\"/>",
            "endElement=\"chassis\" endConnector=\"F\"/>",
            1,
        )
    });
    let e = cosim_ssp::prepare(&p, &overrides(dir.path(), None), None)
        .err()
        .expect("input fed twice");
    let d = e.errors().next().unwrap();
    assert!(
        d.message
            .contains("is fed by two connections (lines 41 and 45)"),
        "{e}"
    );

    // A command-line override names the argument.
    let p = edited_quarter_car(dir.path(), |t| t);
    let mut o = overrides(dir.path(), None);
    o.set = vec!["chasis.m_c=1".into()];
    let e = cosim_ssp::prepare(&p, &o, None).err().expect("bad --set");
    let d = e.errors().next().unwrap();
    assert_eq!(d.argument.as_deref(), Some("--set chasis.m_c=1"));
    assert_eq!(d.help.as_deref(), Some("did you mean 'chassis'?"));
}

// ---------------------------------------------------------------------
// OSP

#[test]
fn osp_linear_transformation_runs_like_the_toml_scenario() {
    let osp = root().join("tests/python/osp/b1_quarter_car_a");
    let imp = import(&osp);
    assert_eq!(imp.format(), cosim_ssp::Format::Osp);
    assert!(imp.toml().contains(
        "[[connections]]  # OspSystemStructure.xml:33; through LinearTransformation 'minus_F_c'\nfrom = \"wheel.F_c\"\nto = \"chassis.F\"\ngain = -1.0"
    ));
    let from_osp = trace(&run_system(&osp, Some(4.0)));
    let from_toml = trace(&run_toml(
        &root().join("scenarios/b1_quarter_car_a.toml"),
        None,
    ));
    assert_same_columns(&from_osp, &from_toml);
}

#[test]
fn osp_ecco_configuration_and_power_bonds_map_onto_the_ecco_master() {
    let imp = import(&data("osp_b1_ecco"));
    let toml = imp.toml();
    println!("{toml}");
    for line in [
        "kind = \"ecco\"",
        "step = 0.0001",
        "discover_bonds = false",
        "tolerance = 9.5367431640625e-7",
        "energy_scale = 750.0",
        "energy_reference = \"largest-residual\"",
        "variant = \"libcosim\"",
        "alpha = 0.8",
        "dt_min = 0.0001",
        "dt_max = 0.01",
        "theta_min = 0.2",
        "theta_max = 1.5",
        "k_p = 0.2",
        "k_i = 0.15",
        "from = \"chassis.F_c\"\nto = \"wheel.F\"",
        "from = \"wheel.v_w\"\nto = \"chassis.v_w\"",
        "name = \"suspension\"",
    ] {
        assert!(toml.contains(line), "missing {line:?}");
    }
    let scenario = imp.scenario().unwrap();
    let resolved = imp.resolve(&scenario).unwrap();
    assert_eq!(resolved.bonds.len(), 1);
    let a = run_system(&data("osp_b1_ecco"), None);
    let b = run_toml(&data("b1_b_ecco.toml"), None);
    assert_same_columns(&trace(&a), &trace(&b));
    for file in ["energy.csv", "steps.csv"] {
        let x = std::fs::read_to_string(a.path().join(file)).unwrap();
        let y = std::fs::read_to_string(b.path().join(file)).unwrap();
        assert_eq!(x, y, "{file} differs");
    }
    let steps = trace(&a).time().len() - 1;
    println!("ECCO took {steps} steps");
    assert!(steps > 100 && steps < 40_000);
}

#[test]
fn osp_variable_group_connection_becomes_connections_and_a_bond() {
    let imp = import(&data("osp_groups"));
    let toml = imp.toml();
    println!("{toml}");
    assert!(toml.contains("from = \"chassis.F_c\"\nto = \"wheel.F\""));
    assert!(toml.contains("from = \"wheel.v_w\"\nto = \"chassis.v_w\""));
    assert!(toml.contains(
        "name = \"chassis.suspension_port~wheel.hub\"\nports = [\n  { input = \"chassis.v_w\", output = \"chassis.F_c\" },\n  { input = \"wheel.F\", output = \"wheel.v_w\" },\n]"
    ));
    assert!(toml.contains("m_c = 400.0"));
    assert!(toml.contains("micro_steps = 10"));
    // stepSize equal to the base step: no step multiple.
    assert!(!toml.contains("step_multiple"));
    let scenario = imp.scenario().unwrap();
    let resolved = imp.resolve(&scenario).unwrap();
    assert_eq!(resolved.bonds.len(), 1);
    assert!(!resolved.bonds[0].intended);
    let from_osp = trace(&run_system(&data("osp_groups"), None));
    let from_toml = trace(&run_toml(
        &root().join("scenarios/b1_quarter_car_b.toml"),
        None,
    ));
    assert_same_columns(&from_osp, &from_toml);
}

#[test]
fn unsupported_osp_elements_are_reported_by_name_and_line() {
    let imp = import(&data("osp_unsupported"));
    let got: Vec<(Option<&str>, usize)> = imp
        .unsupported()
        .iter()
        .map(|d| (d.element.as_deref(), d.line.unwrap()))
        .collect();
    // (Sum and VectorSum functions are mapped: tests/osp_functions.rs.)
    assert_eq!(
        got,
        vec![
            (Some("PlugSocketConnections"), 28),
            (Some("BondConnections"), 31),
        ]
    );
    assert!(
        imp.unsupported()[0]
            .message
            .contains("superseded MSMI format")
    );
    let toml = imp.toml();
    assert!(toml.contains("step_multiple = 2"));
    assert!(toml.contains("[subsystems.start]\nu = 1.5"));
    assert!(toml.contains("from = \"a.y\"\nto = \"b.u\"\ngain = 2.0"));
    let w = find(imp.diagnostics(), "not a multiple of the base step");
    assert_eq!(w.line, Some(8));
    let dir = tempfile::tempdir().unwrap();
    let e = cosim_ssp::prepare(
        &data("osp_unsupported"),
        &overrides(dir.path(), Some(0.1)),
        None,
    )
    .err()
    .expect("unsupported");
    assert_eq!(e.errors().count(), 2);
}

#[test]
fn osp_errors_are_located() {
    fmu("Gain");
    let dir = tempfile::tempdir().unwrap();
    let gain = fmu("Gain");
    let write = |body: &str| {
        let p = dir.path().join("OspSystemStructure.xml");
        let text = format!(
            "<OspSystemStructure version=\"0.1\">\n  <Simulators>\n    <Simulator name=\"alpha\" source=\"{}\"/>\n    <Simulator name=\"beta\" source=\"{}\"/>\n  </Simulators>\n{body}</OspSystemStructure>\n",
            gain.display(),
            gain.display()
        );
        std::fs::write(&p, text).unwrap();
        cosim_ssp::import(&p, &ImportOptions::default())
    };
    let e = write(
        "  <Connections>\n    <VariableConnection>\n      <Variable simulator=\"alpah\" name=\"y\"/>\n      <Variable simulator=\"beta\" name=\"u\"/>\n    </VariableConnection>\n  </Connections>\n",
    )
    .unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(8), Some(28)));
    assert_eq!(d.help.as_deref(), Some("did you mean 'alpha'?"));

    let e = write(
        "  <Connections>\n    <VariableGroupConnection>\n      <VariableGroup simulator=\"alpha\" name=\"port\"/>\n      <VariableGroup simulator=\"beta\" name=\"port\"/>\n    </VariableGroupConnection>\n  </Connections>\n",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("Gain_OspModelDescription.xml"),
        "{e}"
    );

    let e = write("  <Algorithm>ecco2</Algorithm>\n").unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!(d.line, Some(6));
    assert_eq!(d.help.as_deref(), Some("did you mean 'ecco'?"));

    // An ECCO setting outside cosim's range, reported at the element.
    let imp = write(
        "  <Algorithm>ecco</Algorithm>\n  <EccoConfiguration>\n    <MaximumChangeRate>0.5</MaximumChangeRate>\n  </EccoConfiguration>\n",
    )
    .unwrap();
    let e = imp.scenario().unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(8), Some(24)), "{e}");
    assert!(d.message.contains("theta_max"), "{e}");

    // The wrong variable of a connection, reported by the scenario layer.
    let imp = write(
        "  <Connections>\n    <VariableConnection>\n      <Variable simulator=\"alpha\" name=\"yy\"/>\n      <Variable simulator=\"beta\" name=\"u\"/>\n    </VariableConnection>\n  </Connections>\n",
    )
    .unwrap();
    let scenario = imp.scenario().unwrap();
    let e = imp.resolve(&scenario).unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!((d.line, d.column), (Some(8), Some(41)), "{e}");
    assert_eq!(d.help.as_deref(), Some("did you mean 'y'?"));
}

// ---------------------------------------------------------------------
// Scale

/// An SSD with `n` Gain components in a chain: `n - 1` connections, each
/// with a LinearTransformation, and an inline parameter set per component.
fn chain_ssd(n: usize) -> String {
    let gain = fmu("Gain");
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ssd:SystemStructureDescription xmlns:ssd=\"http://ssp-standard.org/SSP1/SystemStructureDescription\" xmlns:ssc=\"http://ssp-standard.org/SSP1/SystemStructureCommon\" xmlns:ssv=\"http://ssp-standard.org/SSP1/SystemStructureParameterValues\" version=\"1.0\" name=\"Chain\">\n  <ssd:System name=\"Chain\">\n    <ssd:Elements>\n",
    );
    for i in 0..n {
        let k = 1.0 + (i % 3) as f64 * 0.5;
        s.push_str(&format!(
            "      <ssd:Component name=\"g{i}\" source=\"{}\">\n        <ssd:Connectors>\n          <ssd:Connector name=\"u\" kind=\"input\"><ssc:Real/></ssd:Connector>\n          <ssd:Connector name=\"y\" kind=\"output\"><ssc:Real/></ssd:Connector>\n        </ssd:Connectors>\n        <ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues><ssv:ParameterSet version=\"1.0\" name=\"g{i}\"><ssv:Parameters><ssv:Parameter name=\"k\"><ssv:Real value=\"{k}\"/></ssv:Parameter></ssv:Parameters></ssv:ParameterSet></ssd:ParameterValues></ssd:ParameterBinding></ssd:ParameterBindings>\n      </ssd:Component>\n",
            gain.display()
        ));
    }
    s.push_str("    </ssd:Elements>\n    <ssd:Connections>\n");
    for i in 1..n {
        s.push_str(&format!(
            "      <ssd:Connection startElement=\"g{}\" startConnector=\"y\" endElement=\"g{i}\" endConnector=\"u\"><ssc:LinearTransformation factor=\"0.5\" offset=\"1\"/></ssd:Connection>\n",
            i - 1
        ));
    }
    s.push_str("    </ssd:Connections>\n  </ssd:System>\n  <ssd:DefaultExperiment startTime=\"0\" stopTime=\"0.05\"/>\n</ssd:SystemStructureDescription>\n");
    s
}

#[test]
fn generated_system_with_1000_connections_imports_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("chain.ssd");
    std::fs::write(&p, chain_ssd(1001)).unwrap();
    let size = std::fs::metadata(&p).unwrap().len();
    // Import (XML, model description, TOML), scenario and resolution.
    let t0 = Instant::now();
    let imp = cosim_ssp::import(&p, &ImportOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let t_import = t0.elapsed();
    let scenario = imp.scenario().unwrap_or_else(|e| panic!("{e}"));
    let t_scenario = t0.elapsed();
    let resolved = imp.resolve(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let t_resolved = t0.elapsed();
    println!(
        "1000 connections ({size} bytes of SSD, {} bytes of TOML): import {:.1} ms, + scenario {:.1} ms, + resolve {:.1} ms (total {:.1} ms)",
        imp.toml().len(),
        t_import.as_secs_f64() * 1e3,
        (t_scenario - t_import).as_secs_f64() * 1e3,
        (t_resolved - t_scenario).as_secs_f64() * 1e3,
        t_resolved.as_secs_f64() * 1e3
    );
    assert_eq!(resolved.subsystems.len(), 1001);
    assert_eq!(resolved.connections.len(), 1000);
    assert!(
        resolved
            .connections
            .iter()
            .all(|c| c.gain == 0.5 && c.offset == 1.0)
    );
    // It runs: with every input at 0 and u = 0.5 y + 1 along the chain.
    let t1 = Instant::now();
    let mut o = overrides(dir.path(), Some(0.03));
    o.set = vec!["g0.u=2".into()];
    let imported = cosim_ssp::prepare(&p, &o, None).unwrap_or_else(|e| panic!("{e}"));
    let outcome = runner::run(imported.prepared, Vec::new(), None).unwrap();
    println!(
        "prepare and 3 steps of 1001 FMU instances: {:.0} ms",
        t1.elapsed().as_secs_f64() * 1e3
    );
    assert!(outcome.error.is_none());
    let t = Table::read(&dir.path().join("trace.csv")).unwrap();
    assert_eq!(t.names.len(), 1 + 1001);
    let y0 = last(&t, "g0.y");
    assert_eq!(y0, 2.0);
    let k1 = 1.5;
    assert_eq!(last(&t, "g1.y"), k1 * (0.5 * y0 + 1.0));
}

#[test]
fn truncated_and_corrupted_files_never_panic() {
    fmu("Gain");
    let dir = tempfile::tempdir().unwrap();
    let fmus = root().join("fmus/dist/fmi2").display().to_string();
    for name in [
        "quarter_car.ssd",
        "units.ssd",
        "b3_hierarchical.ssd",
        "two_level.ssd",
        "osp_groups/OspSystemStructure.xml",
    ] {
        let text = std::fs::read_to_string(data(name))
            .unwrap()
            .replace("../../../../../fmus/dist/fmi2", &fmus)
            .replace("../../../../fmus/dist/fmi2", &fmus);
        std::fs::copy(data("wheel.ssv"), dir.path().join("wheel.ssv")).unwrap();
        let file = dir.path().join(Path::new(name).file_name().unwrap());
        let mut cuts = 0;
        for cut in (0..text.len()).step_by(23) {
            let Some(part) = text.get(..cut) else {
                continue;
            };
            // Truncated, and with a byte flipped at the cut.
            for variant in [part.to_string(), format!("{part}\"<>&{}", &text[cut..])] {
                std::fs::write(&file, &variant).unwrap();
                if let Ok(imp) = cosim_ssp::import(&file, &ImportOptions::default())
                    && let Ok(s) = imp.scenario()
                {
                    let _ = imp.resolve(&s);
                }
                cuts += 1;
            }
        }
        println!("{name}: {cuts} variants imported without panicking");
    }
}
