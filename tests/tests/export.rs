//! `cosim export` end to end (docs/export.md): a system packed as one FMU
//! runs in cosim, FMPy and libcosim as the system runs itself, the bits
//! the same at the same communication points; its parameters, two
//! instances in one process, an inner FMU's error, and bad exports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosim_tests::libcosim::{self, Trace, compare_exact};

/// The exposed variables of the B3 nest: S1's coupling, and states to trace.
const NEST_EXPOSES: &[&str] = &[
    "s2.x1", "s2.v1", "s2.l12", "s2.x2", "s2.v2", "s3.x3", "s3.v3",
];

fn text_of(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `cosim export SYSTEM -o OUT --fmi FMI` with `extra` arguments.
fn export(system: &Path, out: &Path, fmi: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "export",
        system.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--fmi",
        fmi,
    ];
    args.extend(extra);
    cosim_tests::cosim(&args)
}

/// scenarios/b3_three_mass_nest.toml exported as `dir/Nest<fmi>.fmu`,
/// with `extra` arguments after the nest's exposes.
fn exported_nest(dir: &Path, fmi: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(format!("Nest{fmi}.fmu"));
    let mut args: Vec<&str> = NEST_EXPOSES.iter().flat_map(|e| ["--expose", e]).collect();
    args.extend(extra);
    let o = export(
        &cosim_tests::scenario("b3_three_mass_nest.toml"),
        &out,
        fmi,
        &args,
    );
    assert!(o.status.success(), "cosim export failed:\n{}", text_of(&o));
    out
}

/// `cosim run` of `scenario` into `out` (quiet), asserting success.
fn run(scenario: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--no-progress",
        "-q",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = cosim_tests::cosim(&args);
    assert!(
        o.status.success(),
        "cosim run {} failed:\n{}",
        scenario.display(),
        text_of(&o)
    );
    o
}

/// Asserts that FMPy's simulation of `fmu` (`tests/python/export_check.py`,
/// output interval `interval`) gives cosim's `trace` at every row, bit for
/// bit, and that it compared `rows` rows (any number when `None`).
fn assert_fmpy_gives(fmu: &Path, trace: &Path, interval: &str, rows: Option<usize>) {
    // (FMPy's extraction, removed even when the simulation raises.)
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(cosim_tests::python())
        .arg(cosim_tests::root().join("tests/python/export_check.py"))
        .args([fmu, trace])
        .arg(interval)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let expected = match rows {
        Some(n) => format!("{n} rows, 0 differing"),
        None => " rows, 0 differing".to_string(),
    };
    assert!(
        o.status.success() && out.contains(&expected),
        "{}: {}",
        fmu.display(),
        text_of(&o)
    );
}

/// `python -c script args...` with the project's Python, its output. Its
/// temporary directory (`TMPDIR`) is removed after it: FMPy leaves its
/// extraction of an FMU there when a simulation raises, and a script's own
/// `extract` is never removed.
fn python_c(script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let tmp = tempfile::tempdir().unwrap();
    Command::new(cosim_tests::python())
        .arg("-c")
        .arg(script)
        .args(args.iter().map(|a| a.as_ref()))
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap()
}

/// b3_three_mass_hierarchical.toml with its nest (inline, the system of
/// b3_three_mass_nest.toml) replaced by the FMU `fmu`, written into `dir`.
fn hierarchical_with(fmu: &Path, dir: &Path) -> PathBuf {
    let original = cosim_tests::scenario("b3_three_mass_hierarchical.toml");
    let text = std::fs::read_to_string(&original).unwrap();
    let nest = text
        .find("exposes = [")
        .expect("the nest's exposes in b3_three_mass_hierarchical.toml");
    let end = nest
        + text[nest..]
            .find("\n[[connections]]")
            .expect("the top level's connections after the nest");
    let text = format!(
        "{}fmu = {:?}\n{}",
        &text[..nest],
        fmu.display().to_string(),
        &text[end..]
    )
    .replace("../fmus/dist", &cosim_tests::fmus().display().to_string());
    assert!(!text.contains("subsystems.system"), "{text}");
    let path = dir.join("hierarchical_exported.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The nest of B3's hierarchical co-simulation, exported (FMI 2.0 and 3.0)
/// and put in its place, gives the hierarchical run's trace byte for
/// byte: the FMU's master steps the nest as the nested level does.
#[test]
fn an_exported_nest_gives_the_bits_of_the_nest_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("nested");
    run(
        &cosim_tests::scenario("b3_three_mass_hierarchical.toml"),
        &nested,
        &[],
    );
    let expected = std::fs::read(nested.join("trace.csv")).unwrap();
    for fmi in ["2", "3"] {
        let fmu = exported_nest(dir.path(), fmi, &[]);
        let scenario = hierarchical_with(&fmu, dir.path());
        let out = dir.path().join(format!("exported{fmi}"));
        run(&scenario, &out, &[]);
        let got = std::fs::read(out.join("trace.csv")).unwrap();
        assert!(
            got == expected,
            "FMI {fmi}: the exported nest's trace differs from the nested run's:\n{}\n---\n{}",
            String::from_utf8_lossy(&got[..got.len().min(600)]),
            String::from_utf8_lossy(&expected[..expected.len().min(600)])
        );
    }
}

/// An exposed parameter set by the importer reaches the inner FMU, and two
/// instances of one exported FMU in one process keep to their own values:
/// each equals the system run directly with that value.
#[test]
fn two_instances_with_their_own_parameters_run_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = exported_nest(dir.path(), "2", &["--parameter", "s3.c3"]);
    let scenario = dir.path().join("two.toml");
    let fmu_path = fmu.display().to_string();
    std::fs::write(
        &scenario,
        format!(
            "[simulation]\nstop = 5.0\n\n[master]\nstep = 0.1\n\n\
             [[subsystems]]\nname = \"a\"\nfmu = {fmu_path:?}\n\n\
             [[subsystems]]\nname = \"b\"\nfmu = {fmu_path:?}\nparameters = {{ \"s3.c3\" = 20.0 }}\n\n\
             [outputs]\nvariables = [\"a.s3.x3\", \"b.s3.x3\"]\n"
        ),
    )
    .unwrap();
    let both = dir.path().join("both");
    run(&scenario, &both, &[]);
    let both = Trace::read(&both.join("trace.csv"));
    let nest = cosim_tests::scenario("b3_three_mass_nest.toml");
    for (column, c3) in [("a.s3.x3", "10.0"), ("b.s3.x3", "20.0")] {
        let out = dir.path().join(format!("direct_{c3}"));
        let set = format!("s3.c3={c3}");
        run(
            &nest,
            &out,
            &[
                "--stop",
                "5",
                "--set",
                &set,
                "--output-interval",
                "0.1",
                "--output-variables",
                "s3.x3",
            ],
        );
        let direct = Trace::read(&out.join("trace.csv"));
        let (ours, theirs) = (both.values(column), direct.values("s3.x3"));
        assert_eq!(ours.len(), theirs.len(), "{column}");
        for (k, (x, y)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(x.to_bits(), y.to_bits(), "{column} row {k}: {x} vs {y}");
        }
    }
    // The two values differ: the parameter does reach each instance.
    assert_ne!(both.values("a.s3.x3"), both.values("b.s3.x3"));
}

/// An inner FMU's Error becomes the exported FMU's Error, with the inner
/// FMU's message on the importer's logger; the importer's outputs keep the
/// steps before it.
#[test]
fn an_inner_error_reaches_the_importer_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("faulty.toml");
    std::fs::write(
        &system,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\n\n\
             [[subsystems]]\nname = \"f\"\nfmu = {:?}\nparameters = {{ fail_at = 0.45, fail_mode = 1 }}\n",
            cosim_tests::fmi2("Faulty").display().to_string()
        ),
    )
    .unwrap();
    let fmu = dir.path().join("Faulty.fmu");
    let o = export(&system, &fmu, "3", &[]);
    assert!(o.status.success(), "{}", text_of(&o));
    let out = dir.path().join("out");
    let o = cosim_tests::cosim(&[
        "run",
        "--no-progress",
        fmu.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text_of(&o));
    let said = text_of(&o);
    assert!(
        said.contains("fmi3DoStep returned Error at t = 0.4")
            && said.contains("Faulty: fail_at = 0.45 reached in the step from 0.4 to 0.5"),
        "{said}"
    );
    let trace = Trace::read(&out.join("trace.csv"));
    assert_eq!(trace.times().last().copied(), Some(0.4), "{said}");
}

/// Exports that cannot be made are refused, each saying what is wrong.
#[test]
fn bad_exports_are_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let nest = cosim_tests::scenario("b3_three_mass_nest.toml");
    let out = dir.path().join("x.fmu");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--expose", "s2.x9"],
            "subsystem 's2' of nested system 'b3_three_mass_nest' has no variable 'x9'",
        ),
        (
            &["--expose", "s2.l23"],
            "'s2.l23' is fed by a connection or an input file inside nested system",
        ),
        (
            &["--parameter", "s2.x1"],
            "cannot export parameter 's2.x1': it is not a scalar numeric or Boolean parameter (causality input",
        ),
        (&["--parameter", "s9.c"], "the system has no subsystem 's9'"),
        (
            &["--name", "3d"],
            "--name 3d: the model identifier must be a C identifier",
        ),
    ];
    for (args, expected) in cases {
        let o = export(&nest, &out, "2", args);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(text_of(&o).contains(expected), "{args:?}:\n{}", text_of(&o));
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
    let o = Command::new(cosim_tests::cosim_bin())
        .args([
            "export",
            nest.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .env("COSIM_FMU_LIBRARY", dir.path().join("missing.so"))
        .output()
        .unwrap();
    assert!(
        !o.status.success() && text_of(&o).contains("missing.so is missing"),
        "{}",
        text_of(&o)
    );
}

/// The exported B3 nest passes FMPy's validation and, simulated by FMPy
/// (FMI 2.0 and 3.0), gives at every communication point the bits of the
/// system run directly by cosim; libcosim runs the exported FMU beside S1
/// from an OSP file step for step as cosim runs the same file, and as
/// cosim runs the system with the nest inline.
#[test]
fn fmpy_and_libcosim_run_an_exported_system_as_cosim_does() {
    let dir = tempfile::tempdir().unwrap();
    let direct = dir.path().join("direct");
    run(
        &cosim_tests::scenario("b3_three_mass_nest.toml"),
        &direct,
        &[
            "--output-interval",
            "0.1",
            "--output-variables",
            "s3.x3",
            "s2.l12",
        ],
    );
    for fmi in ["2", "3"] {
        let fmu = exported_nest(dir.path(), fmi, &[]);
        assert_fmpy_gives(&fmu, &direct.join("trace.csv"), "0.1", Some(251));
    }
    // libcosim imports FMI 2.0 only.
    let fmu = exported_nest(dir.path(), "2", &[]);
    let osp = dir.path().join("osp");
    std::fs::create_dir_all(&osp).unwrap();
    std::fs::write(
        osp.join("OspSystemStructure.xml"),
        osp_system(&cosim_tests::fmi2("ThreeMassS1"), &fmu, None),
    )
    .unwrap();
    let (theirs, _) = libcosim::run(&osp, 25.0, false, dir.path());
    let columns: Vec<String> = theirs
        .header
        .iter()
        .filter(|h| *h != "time" && !h.ends_with(".time"))
        .cloned()
        .collect();
    let ours_dir = dir.path().join("ours");
    let mut args = vec!["--output-variables"];
    args.extend(columns.iter().map(String::as_str));
    run(&osp, &ours_dir, &args);
    let ours = Trace::read(&ours_dir.join("trace.csv"));
    // (Each FMU's `time` variable is a column of libcosim's only.)
    let cmp = compare_exact(&ours, &theirs, &["nest.time", "s1.time"]);
    assert!(cmp.values > 1000, "{} values compared", cmp.values);
    assert_eq!(cmp.n_differing, 0, "{:?}", cmp.differing);
    // And as cosim runs the system directly: the nest inline in
    // b3_three_mass_hierarchical.toml.
    let direct_dir = dir.path().join("direct_hierarchical");
    run(
        &cosim_tests::scenario("b3_three_mass_hierarchical.toml"),
        &direct_dir,
        &args,
    );
    let direct = Trace::read(&direct_dir.join("trace.csv"));
    let cmp = compare_exact(&direct, &theirs, &["nest.time", "s1.time"]);
    assert!(cmp.values > 1000, "{} values compared", cmp.values);
    assert_eq!(cmp.n_differing, 0, "{:?}", cmp.differing);
}

/// The B3 nest under ECCO (its S2-S3 bond found from the units, steps of
/// 0.1 ms to 50 ms), exported, run by libcosim's fixed-step master at
/// 0.1 s beside S1 as cosim runs the same OSP file, value for value; the
/// nest's energy log, asked for by the exported String parameter
/// `cosim.energy_log_dir`, is written at every inner step (more than the
/// outer steps) by both, byte for byte the same.
#[test]
fn libcosim_runs_an_exported_ecco_system_at_a_coarser_step_logging_its_energy() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(cosim_tests::scenario("b3_three_mass_nest.toml"))
        .unwrap()
        .replace("../fmus/dist", &cosim_tests::fmus().display().to_string())
        .replace(
            "[master]\nstep = 0.025             # H2\n",
            "[master]\nkind = \"ecco\"\ntolerance = 1e-4\n\n[master.controller]\ndt_min = 1e-4\ndt_max = 0.05\n",
        );
    assert!(text.contains("\"ecco\""), "{text}");
    let system = dir.path().join("nest_ecco.toml");
    std::fs::write(&system, text).unwrap();
    let fmu = dir.path().join("NestEcco.fmu");
    let o = export(
        &system,
        &fmu,
        "2",
        &[
            "--expose", "s2.x1", "--expose", "s2.v1", "--expose", "s2.l12", "--expose", "s3.x3",
        ],
    );
    assert!(o.status.success(), "{}", text_of(&o));
    let s1 = cosim_tests::fmi2("ThreeMassS1");
    let mut traces = Vec::new();
    let mut logs = Vec::new();
    for who in ["libcosim", "cosim"] {
        let osp = dir.path().join(format!("osp_{who}"));
        let energy = dir.path().join(format!("energy_{who}"));
        std::fs::create_dir_all(&osp).unwrap();
        std::fs::write(
            osp.join("OspSystemStructure.xml"),
            osp_system(&s1, &fmu, Some(&energy)),
        )
        .unwrap();
        if who == "libcosim" {
            traces.push(libcosim::run(&osp, 25.0, false, dir.path()).0);
        } else {
            let columns: Vec<String> = traces[0]
                .header
                .iter()
                .filter(|h| *h != "time" && !h.ends_with(".time"))
                .cloned()
                .collect();
            let out = dir.path().join("ours_ecco");
            let mut args = vec!["--output-variables"];
            args.extend(columns.iter().map(String::as_str));
            run(&osp, &out, &args);
            traces.push(Trace::read(&out.join("trace.csv")));
        }
        // (Named after the importer's instance, `nest` in the OSP file.)
        logs.push(std::fs::read_to_string(energy.join("energy.nest.csv")).unwrap());
    }
    let cmp = compare_exact(&traces[1], &traces[0], &["nest.time", "s1.time"]);
    assert!(cmp.values > 1000, "{} values compared", cmp.values);
    assert_eq!(cmp.n_differing, 0, "{:?}", cmp.differing);
    assert_eq!(logs[0], logs[1], "the energy logs differ");
    let rows = logs[0].lines().count() - 1;
    assert!(
        rows > 2 * 250,
        "{rows} inner steps logged for 250 outer steps:\n{}",
        &logs[0][..logs[0].len().min(800)]
    );
    assert!(
        logs[0]
            .lines()
            .next()
            .unwrap()
            .contains("s2.l23~s3.v2.cumulative_residual_energy [J]"),
        "{}",
        logs[0].lines().next().unwrap()
    );
}

/// An OSP system of S1 and the exported nest, coupled as B3 scenario 1,
/// fixed step 0.1 s; with `energy`, the nest's energy log directory.
fn osp_system(s1: &Path, nest: &Path, energy: Option<&Path>) -> String {
    let nest_values = energy.map_or(String::new(), |d| {
        format!(
            "<InitialValues><InitialValue variable=\"cosim.energy_log_dir\"><String value=\"{}\"/></InitialValue></InitialValues>",
            d.display()
        )
    });
    let connection = |from: (&str, &str), to: (&str, &str)| {
        format!(
            "    <VariableConnection><Variable simulator=\"{}\" name=\"{}\"/><Variable simulator=\"{}\" name=\"{}\"/></VariableConnection>\n",
            from.0, from.1, to.0, to.1
        )
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
         <OspSystemStructure xmlns=\"http://opensimulationplatform.com/MSMI/OSPSystemStructure\" version=\"0.1\">\n\
         <StartTime>0.0</StartTime>\n<EndTime>25.0</EndTime>\n<BaseStepSize>0.1</BaseStepSize>\n<Algorithm>fixedStep</Algorithm>\n\
         <Simulators>\n\
         <Simulator name=\"s1\" source=\"{}\"><InitialValues>\
         <InitialValue variable=\"c1\"><Real value=\"0.01\"/></InitialValue>\
         <InitialValue variable=\"d1\"><Real value=\"0.1\"/></InitialValue>\
         </InitialValues></Simulator>\n\
         <Simulator name=\"nest\" source=\"{}\">{nest_values}</Simulator>\n\
         </Simulators>\n<Connections>\n{}{}{}</Connections>\n</OspSystemStructure>\n",
        s1.display(),
        nest.display(),
        connection(("nest", "s2.l12"), ("s1", "l12")),
        connection(("s1", "x1"), ("nest", "s2.x1")),
        connection(("s1", "v1"), ("nest", "s2.v1")),
    )
}

/// A system whose FMUs run in host processes (`isolation = "process"`)
/// exports with the host program: in FMPy (not cosim) an inner FMU's
/// segmentation fault kills its host only, and the importer gets Error
/// with a message naming the subsystem, the call and the signal. Without
/// the fault the isolated system gives the bits of the same system run
/// in-process.
#[test]
fn isolated_inner_fmus_run_in_hosts_shipped_in_the_fmu() {
    let dir = tempfile::tempdir().unwrap();
    let system = |isolation: &str, fail_at: f64| {
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\nisolation = {isolation:?}\n\n\
             [[subsystems]]\nname = \"f\"\nfmu = {:?}\nparameters = {{ fail_at = {fail_at:?}, fail_mode = 4 }}\n\n\
             [[subsystems]]\nname = \"g\"\nfmu = {:?}\n\n\
             [[connections]]\nfrom = \"g.x\"\nto = \"f.u\"\n",
            cosim_tests::fmi2("Faulty").display().to_string(),
            cosim_tests::fmi2("Integrator").display().to_string(),
        )
    };
    let mut outputs = Vec::new();
    // (fail_at -1: never.)
    for (name, isolation, fail_at) in [
        ("crash", "process", 0.45),
        ("isolated", "process", -1.0),
        ("inline", "none", -1.0),
    ] {
        let toml = dir.path().join(format!("{name}.toml"));
        std::fs::write(&toml, system(isolation, fail_at)).unwrap();
        let fmu = dir.path().join(format!("{name}.fmu"));
        let o = export(&toml, &fmu, "3", &[]);
        assert!(o.status.success(), "{}", text_of(&o));
        let o = python_c(
            "import sys, fmpy\n\
                 said = []\n\
                 try:\n    r = fmpy.simulate_fmu(sys.argv[1], output_interval=0.1, debug_logging=True, logger=lambda *a: said.append(a[-1].decode()))\n    print('values', [repr(float(x)) for x in r['f.x']])\n\
                 except Exception as e:\n    print('error', e)\n\
                 print('logged', *said, sep='\\n')\n",
            &[&fmu],
        );
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "{name}: {}", text_of(&o));
        outputs.push(out);
    }
    let crash = &outputs[0];
    assert!(
        crash.contains("error fmi3DoStep failed")
            && crash.contains("subsystem 'crash.f': fmi2DoStep at t = 0.4")
            && crash.contains("died of a segmentation fault (SIGSEGV)"),
        "{crash}"
    );
    let values = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("values"))
            .unwrap_or_else(|| panic!("no values: {out}"))
            .to_string()
    };
    assert_eq!(values(&outputs[1]), values(&outputs[2]));
}

/// The exported String parameter `cosim.fmi_call_log` logs every FMI call
/// made on the inner FMUs, in the format of `--log-fmi-calls`, each inner
/// instance named after the importer's instance (`nest.s2`).
#[test]
fn the_fmi_call_log_of_the_inner_fmus_is_written_where_the_parameter_says() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = exported_nest(dir.path(), "2", &[]);
    let log = dir.path().join("calls.log");
    let scenario = dir.path().join("logged.toml");
    std::fs::write(
        &scenario,
        format!(
            "[simulation]\nstop = 0.2\n\n[master]\nstep = 0.1\n\n\
             [[subsystems]]\nname = \"nest\"\nfmu = {:?}\nparameters = {{ \"cosim.fmi_call_log\" = {:?} }}\n",
            fmu.display().to_string(),
            log.display().to_string()
        ),
    )
    .unwrap();
    run(&scenario, &dir.path().join("out"), &[]);
    let text = std::fs::read_to_string(&log).unwrap();
    for expected in [
        "nest.s2: fmi2Instantiate(",
        "nest.s3: fmi2DoStep(",
        "nest.s2: fmi2Terminate(",
    ] {
        assert!(text.contains(expected), "{expected} not in:\n{text}");
    }
    // Inner steps of 0.025 s: four per step of the importer, two steps.
    let steps = text
        .lines()
        .filter(|l| l.contains("] nest.s3: fmi2DoStep("))
        .count();
    assert_eq!(steps, 8, "{text}");
}

/// Where every inner FMU can save its state, so can the exported FMU
/// (`canGetAndSetFMUstate`): masters that roll back (Richardson) or
/// iterate (IFOSMONDI) drive the exported B3 nest as they drive the nest
/// itself, to the byte.
#[test]
fn masters_that_roll_back_drive_an_exported_nest_as_the_nest_itself() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = exported_nest(dir.path(), "2", &[]);
    let md = std::process::Command::new("unzip")
        .args(["-p", fmu.to_str().unwrap(), "modelDescription.xml"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&md.stdout).contains("canGetAndSetFMUstate=\"true\""),
        "{}",
        String::from_utf8_lossy(&md.stdout)
    );
    let exported = std::fs::read_to_string(hierarchical_with(&fmu, dir.path())).unwrap();
    let nested = std::fs::read_to_string(cosim_tests::scenario("b3_three_mass_hierarchical.toml"))
        .unwrap()
        .replace("../fmus/dist", &cosim_tests::fmus().display().to_string());
    for (name, master) in [
        (
            "richardson",
            "kind = \"richardson\"\natol = 1e-5\nrtol = 1e-4\n[master.controller]\ndt_min = 1e-3\ndt_max = 0.1\n",
        ),
        (
            "ifosmondi",
            "kind = \"ifosmondi\"\nstep = 0.1\neps_abs = 1e-6\neps_rel = 1e-6\n",
        ),
    ] {
        let mut traces = Vec::new();
        for (which, text) in [("nested", &nested), ("exported", &exported)] {
            let text = text
                .replacen(
                    "[master]\nstep = 0.1               # H1\n",
                    &format!("[master]\n{master}\n"),
                    1,
                )
                .replace("stop = 25.0", "stop = 5.0");
            assert!(text.contains(name), "{text}");
            let path = dir.path().join(format!("{name}_{which}.toml"));
            std::fs::write(&path, text).unwrap();
            let out = dir.path().join(format!("{name}_{which}"));
            run(&path, &out, &[]);
            traces.push(std::fs::read_to_string(out.join("trace.csv")).unwrap());
        }
        assert!(traces[0].lines().count() > 10, "{}", traces[0]);
        let first = traces[0]
            .lines()
            .zip(traces[1].lines())
            .position(|(a, b)| a != b);
        assert!(
            first.is_none() && traces[0].len() == traces[1].len(),
            "{name}: the traces differ from row {first:?}:\n{:?}\n{:?}",
            first.and_then(|k| traces[0].lines().nth(k)),
            first.and_then(|k| traces[1].lines().nth(k))
        );
    }
}

/// A Model Exchange only FMU wrapped as Co-Simulation (`cosim export
/// Model.fmu --interface cs`): FMPy's co-simulation of it (FMI 2.0 and
/// 3.0) gives `cosim run Model.fmu` (cosim's solver, the same step) bit for
/// bit, and stays close to FMPy's own Model Exchange run (CVode; its
/// rows at the communication points, events rows left out), with as
/// many bounces.
#[test]
fn a_model_exchange_fmu_wrapped_as_co_simulation_runs_in_fmpy_as_in_cosim() {
    let dir = tempfile::tempdir().unwrap();
    let model = cosim_tests::fmus().join("me/fmi2/BouncingBallME.fmu");
    let direct = dir.path().join("direct.csv");
    run(&model, &direct, &["--output-interval", "0.01"]);
    for fmi in ["2", "3"] {
        let fmu = dir.path().join(format!("BouncingBall{fmi}.fmu"));
        let o = export(&model, &fmu, fmi, &["--interface", "cs"]);
        assert!(o.status.success(), "{}", text_of(&o));
        assert_fmpy_gives(&fmu, &direct, "0.01", Some(301));
    }
    let o = python_c(
        "import sys, fmpy\n\
             me = fmpy.simulate_fmu(sys.argv[1], fmi_type='ModelExchange', output_interval=0.01)\n\
             cs = fmpy.simulate_fmu(sys.argv[2], output_interval=0.01)\n\
             at = {round(float(r['time']), 9): float(r['h']) for r in me}\n\
             print('max_dh', max(abs(at[round(float(r['time']), 9)] - float(r['h'])) for r in cs))\n\
             print('contacts', me['contacts'][-1], cs['contacts'][-1])\n",
        &[&model, &dir.path().join("BouncingBall2.fmu")],
    );
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{}", text_of(&o));
    let max_dh: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("max_dh "))
        .unwrap()
        .parse()
        .unwrap();
    // (6.9e-5 when written: the two solvers' tolerances apart.)
    assert!(max_dh < 2e-4, "{out}");
    let contacts = out.lines().find(|l| l.starts_with("contacts")).unwrap();
    let c: Vec<&str> = contacts.split_whitespace().collect();
    assert_eq!(c[1], c[2], "{out}");
}

/// An OSP and an SSP system export as they run: FMPy's simulation of the
/// exported FMU gives `cosim run` of the system file at every point (every
/// free input and every output exposed; an input's start value the one the
/// system gives it, here from the SSP's parameter values).
#[test]
fn ssp_and_osp_systems_export_and_run_as_the_system_files_do() {
    let dir = tempfile::tempdir().unwrap();
    let root = cosim_tests::root();
    for system in [
        root.join("tests/python/osp/b1_quarter_car_a"),
        root.join("tests/python/ssp/parameters"),
    ] {
        let name = system.file_name().unwrap().to_string_lossy().to_string();
        let direct = dir.path().join(format!("{name}_direct"));
        run(&system, &direct, &["--output-interval", "0.1"]);
        let fmu = dir.path().join(format!("{name}.fmu"));
        let o = export(&system, &fmu, "2", &[]);
        assert!(o.status.success(), "{name}: {}", text_of(&o));
        assert_fmpy_gives(&fmu, &direct.join("trace.csv"), "0.1", None);
    }
}

/// An inner FMU that ends the simulation (`Terminating`, at 0.55 s, inside
/// an importer step of 0.1 s) ends the exported FMU's step there: cosim
/// importing the FMI 2.0 and the FMI 3.0 export ends its run normally at
/// 0.55 s, status `terminated`, the last row the inner FMU's value there.
#[test]
fn an_inner_fmu_ending_the_simulation_ends_the_exported_fmus_run_there() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("term.toml");
    std::fs::write(
        &system,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.05\n\n\
             [[subsystems]]\nname = \"term\"\nfmu = {:?}\nparameters = {{ t_end = 0.55 }}\nstart = {{ u = 1.0 }}\n",
            cosim_tests::fmi2("Terminating").display().to_string()
        ),
    )
    .unwrap();
    for fmi in ["2", "3"] {
        let fmu = dir.path().join(format!("Term{fmi}.fmu"));
        let o = export(&system, &fmu, fmi, &["--expose", "term.y"]);
        assert!(o.status.success(), "{}", text_of(&o));
        let out = dir.path().join(format!("out{fmi}"));
        let o = run(&fmu, &out, &["--step", "0.1"]);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(
            summary["status"],
            "terminated",
            "FMI {fmi}: {}",
            text_of(&o)
        );
        assert_eq!(summary["t_reached"], 0.55, "FMI {fmi}: {summary}");
        let trace = Trace::read(&out.join("trace.csv"));
        assert_eq!(trace.times().last().copied(), Some(0.55), "FMI {fmi}");
        let y = *trace.values(&format!("Term{fmi}.term.y")).last().unwrap();
        assert!((y - 0.55).abs() < 1e-12, "FMI {fmi}: y = {y}");
    }
}

/// The exported FMU's C layer is the kit's, strict about the standard's
/// state machine: FMPy's `fmi2DoStep` before initialization is refused
/// with Error and a message naming the call and the state.
#[test]
fn the_exported_fmu_refuses_an_illegal_call_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = exported_nest(dir.path(), "2", &[]);
    let o = python_c(
        "import sys\n\
             from fmpy import read_model_description, extract\n\
             from fmpy.fmi2 import FMU2Slave\n\
             md = read_model_description(sys.argv[1])\n\
             s = FMU2Slave(guid=md.guid, unzipDirectory=extract(sys.argv[1]), modelIdentifier=md.coSimulation.modelIdentifier, instanceName='x')\n\
             s.instantiate(loggingOn=True)\n\
             try:\n    s.doStep(0.0, 0.1)\n    print('accepted')\n\
             except Exception as e:\n    print('refused:', e)\n",
        &[&fmu],
    );
    let said = text_of(&o);
    assert!(
        said.contains("fmi2DoStep: Illegal call sequence: called in state Instantiated")
            && said.contains("refused: fmi2DoStep failed with status 3 (error)"),
        "{said}"
    );
}

/// Any master inside: the B3 nest under ECCO, the predictor/corrector,
/// Richardson and IFOSMONDI, exported and put in the place of the same
/// nest inline, gives the hierarchical run's trace byte for byte (5 s);
/// and so does the exported fixed-step nest run by cosim in a host process
/// (`--isolation process`).
#[test]
fn any_master_inside_and_an_isolated_export_give_the_nests_bits() {
    let dir = tempfile::tempdir().unwrap();
    let fmus = cosim_tests::fmus().display().to_string();
    let hierarchical =
        std::fs::read_to_string(cosim_tests::scenario("b3_three_mass_hierarchical.toml"))
            .unwrap()
            .replace("../fmus/dist", &fmus)
            .replace("stop = 25.0", "stop = 5.0");
    let nest = std::fs::read_to_string(cosim_tests::scenario("b3_three_mass_nest.toml"))
        .unwrap()
        .replace("../fmus/dist", &fmus);
    let controller = "dt_min = 1e-4\ndt_max = 0.05\n";
    let masters = [
        ("fixed-step", "step = 0.025\n".to_string(), String::new()),
        (
            "ecco",
            "kind = \"ecco\"\ntolerance = 1e-4\n".into(),
            controller.into(),
        ),
        (
            "predictor-corrector",
            "kind = \"predictor-corrector\"\ntolerance = 1e-3\n".into(),
            controller.into(),
        ),
        (
            "richardson",
            "kind = \"richardson\"\natol = 1e-4\nrtol = 1e-3\n".into(),
            controller.into(),
        ),
        (
            "ifosmondi",
            "kind = \"ifosmondi\"\nstep = 0.025\neps_abs = 1e-6\neps_rel = 1e-6\n".into(),
            String::new(),
        ),
    ];
    for (kind, master, controller) in &masters {
        let with_controller = |table: &str| match controller.is_empty() {
            true => String::new(),
            false => format!("[{table}.controller]\n{controller}"),
        };
        let inline = hierarchical.replacen(
            "[subsystems.system.master]\nstep = 0.025             # H2, divides H1\n",
            &format!(
                "[subsystems.system.master]\n{master}{}",
                with_controller("subsystems.system.master")
            ),
            1,
        );
        assert!(inline.contains(master.as_str()), "{inline}");
        let system = nest.replacen(
            "[master]\nstep = 0.025             # H2\n",
            &format!("[master]\n{master}{}", with_controller("master")),
            1,
        );
        assert!(system.contains(master.as_str()), "{system}");
        let system_path = dir.path().join(format!("nest_{kind}.toml"));
        std::fs::write(&system_path, system).unwrap();
        let fmu = dir.path().join(format!("Nest_{kind}.fmu"));
        let mut args: Vec<&str> = NEST_EXPOSES.iter().flat_map(|e| ["--expose", e]).collect();
        args.extend(["--name", "nest"]);
        let o = export(&system_path, &fmu, "2", &args);
        assert!(o.status.success(), "{kind}: {}", text_of(&o));
        let inline_path = dir.path().join(format!("inline_{kind}.toml"));
        std::fs::write(&inline_path, &inline).unwrap();
        let exported_text = std::fs::read_to_string(hierarchical_with(&fmu, dir.path()))
            .unwrap()
            .replace("stop = 25.0", "stop = 5.0");
        let exported_path = dir.path().join(format!("exported_{kind}.toml"));
        std::fs::write(&exported_path, exported_text).unwrap();
        let mut runs = vec![
            (inline_path, Vec::new()),
            (exported_path.clone(), Vec::new()),
        ];
        if *kind == "fixed-step" {
            runs.push((exported_path, vec!["--isolation", "process"]));
        }
        let traces: Vec<String> = runs
            .iter()
            .enumerate()
            .map(|(k, (path, extra))| {
                let out = dir.path().join(format!("{kind}_{k}"));
                run(path, &out, extra);
                std::fs::read_to_string(out.join("trace.csv")).unwrap()
            })
            .collect();
        assert!(traces[0].lines().count() > 40, "{kind}: {}", traces[0]);
        for (k, t) in traces.iter().enumerate().skip(1) {
            let first = traces[0].lines().zip(t.lines()).position(|(a, b)| a != b);
            assert!(
                first.is_none() && t.len() == traces[0].len(),
                "{kind}, run {k}: differs from the inline nest at row {first:?}:\n{:?}\n{:?}",
                first.and_then(|r| traces[0].lines().nth(r)),
                first.and_then(|r| t.lines().nth(r))
            );
        }
    }
}

/// One instance run twice (FMPy's `simulate_fmu` with `fmu_instance`,
/// `fmi2Reset` between the runs) gives the same results twice: a reset
/// frees the system, the next initialization builds it afresh.
#[test]
fn a_reset_instance_runs_again_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = exported_nest(dir.path(), "2", &[]);
    let o = python_c(
        "import sys\n\
             from fmpy import read_model_description, extract, simulate_fmu\n\
             from fmpy.fmi2 import FMU2Slave\n\
             md = read_model_description(sys.argv[1])\n\
             d = extract(sys.argv[1])\n\
             s = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier, instanceName='x')\n\
             s.instantiate()\n\
             run = lambda: simulate_fmu(d, model_description=md, fmu_instance=s, stop_time=2.0, output_interval=0.1, output=['s3.x3'])\n\
             first = run()\n\
             s.reset()\n\
             runs = [first, run()]\n\
             s.freeInstance()\n\
             print('rows', len(runs[0]), 'same', runs[0].tobytes() == runs[1].tobytes(), 'moved', runs[0]['s3.x3'][-1] != runs[0]['s3.x3'][0])\n",
        &[&fmu],
    );
    let said = text_of(&o);
    assert!(said.contains("rows 21 same True moved True"), "{said}");
}

/// An exported FMU is an FMU like any other: the hierarchical B3 system
/// with the exported nest in its place, exported again (two engines in one
/// importer, one inside the other), runs in FMPy as cosim runs that system.
#[test]
fn a_system_holding_an_exported_fmu_exports_again() {
    let dir = tempfile::tempdir().unwrap();
    let nest = exported_nest(dir.path(), "2", &["--name", "nest"]);
    let outer = hierarchical_with(&nest, dir.path());
    let direct = dir.path().join("direct");
    run(
        &outer,
        &direct,
        &[
            "--output-interval",
            "0.1",
            "--output-variables",
            "s1.x1",
            "nest.s3.x3",
        ],
    );
    let fmu = dir.path().join("Outer.fmu");
    let o = export(
        &outer,
        &fmu,
        "3",
        &["--expose", "s1.x1", "--expose", "nest.s3.x3"],
    );
    assert!(o.status.success(), "{}", text_of(&o));
    assert_fmpy_gives(&fmu, &direct.join("trace.csv"), "0.1", Some(251));
}

/// What an inner FMU logs reaches the importer's logger with its instance
/// and category, and so do the system's warnings: `Faulty`'s warning that
/// its output becomes NaN, and the master's about the NaN (`nonfinite =
/// "warn"`), in FMPy's logger at the warning status.
#[test]
fn inner_messages_reach_the_importers_logger_with_instance_and_category() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("nan.toml");
    std::fs::write(
        &system,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\nnonfinite = \"warn\"\n\n\
             [[subsystems]]\nname = \"f\"\nfmu = {:?}\nparameters = {{ fail_at = 0.45, fail_mode = 3 }}\n",
            cosim_tests::fmi2("Faulty").display().to_string()
        ),
    )
    .unwrap();
    let fmu = dir.path().join("Nan.fmu");
    let o = export(&system, &fmu, "2", &[]);
    assert!(o.status.success(), "{}", text_of(&o));
    let o = python_c(
        "import sys, fmpy\n\
             said = []\n\
             fmpy.simulate_fmu(sys.argv[1], output_interval=0.1, debug_logging=True, logger=lambda c, i, s, cat, m: said.append(f'{s} {cat.decode()} {m.decode()}'))\n\
             print(*said, sep='\\n')\n",
        &[&fmu],
    );
    let said = text_of(&o);
    assert!(o.status.success(), "{said}");
    // fmi2Warning is status 1, the kit's category for it logStatusWarning;
    // the instance is FMPy's (the model identifier, `nan`): the FMU's own
    // message, then the system's warning about the value.
    for line in [
        "1 logStatusWarning [nan.f] logStatusWarning: Faulty: output x becomes NaN at fail_at = 0.45",
        "1 logStatusWarning subsystem 'nan.f': variable 'x' is NaN at t = 0.5",
    ] {
        assert!(said.contains(line), "{line} not in:\n{said}");
    }
}

/// The system's warnings are said at export, located in its file, once
/// each: an input neither fed inside nor exposed keeps its start value in
/// the FMU; an exposed one is no warning; the `[outputs]` an exported
/// system leaves out is not one either.
#[test]
fn the_systems_warnings_are_said_at_export() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("warned.toml");
    std::fs::write(
        &system,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\nscheme = \"gauss-seidel\"\nthreads = 2\n\n\
             [[subsystems]]\nname = \"f\"\nfmu = {:?}\nparameters = {{ fail_at = -1.0 }}\n\n\
             [outputs]\nvariables = [\"f.x\"]\n",
            cosim_tests::fmi2("Faulty").display().to_string()
        ),
    )
    .unwrap();
    let fmu = dir.path().join("w.fmu");
    for (exposes, unexposed) in [(&[][..], false), (&["--expose", "f.x"][..], true)] {
        let o = export(&system, &fmu, "2", exposes);
        let said = text_of(&o);
        assert!(o.status.success(), "{said}");
        let threads =
            "warned.toml:7:11: warning: 'threads' has no effect with scheme \"gauss-seidel\"";
        assert_eq!(said.matches(threads).count(), 1, "{said}");
        assert_eq!(
            said.contains(
                "warned.toml:9:1: warning: input of subsystem 'f' not connected and not exposed (keeps its start value): u"
            ),
            unexposed,
            "{exposes:?}: {said}"
        );
        assert!(!said.contains("[outputs]"), "{said}");
    }
}
