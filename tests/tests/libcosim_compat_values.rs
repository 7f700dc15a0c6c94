//! libcosim compatibility: initial values and SSP parameter sets.
//!
//! Systems written in libcosim's formats on the project's FMI 2.0 FMUs, run
//! unchanged by `cosim run` and by libcosim (`tests/python/libcosim_run.py`,
//! libcosimpy), compared value by value, bit for bit, at every macro step:
//!
//! - `tests/python/osp/initial_values`: OSP `<InitialValue>`s of type Real,
//!   Integer, Boolean and String on parameters and on inputs that are not
//!   connected, and two values for one variable (libcosim keeps the last).
//!   The Strings (on the `Greeting` FMU: `prefix`, `name`) are traced by
//!   neither tool; they show in the FMU's numeric outputs `length` and
//!   `checksum` of `message = prefix + ", " + name`;
//! - `tests/python/ssp/parameters/SystemStructure.ssd`, as a directory and
//!   packaged as a `.ssp`: inline and `.ssv` parameter sets of Real,
//!   Integer and Boolean values, Real/Integer/Boolean connections, two
//!   `ssc:LinearTransformation`s, libcosim's `osp:FixedStepAlgorithm`;
//! - `tests/python/ssp/parameters/skipped.ssd`: values libcosim skips with
//!   a warning (another type than the variable's, a local variable, an
//!   unknown name), which cosim skips too.
//!
//! Every Real, Integer and Boolean variable libcosim lists (parameters
//! included) is traced by both; libcosim's `<sim>.time` columns (FMIL lists
//! the independent variable) are not compared. The figures are in
//! docs/ssp.md ("Compatibility with libcosim: initial values and SSP"),
//! checked here (`COSIM_BLESS_DOCS=1` rewrites them).
//!
//! Needs libcosimpy (`cargo xtask test` installs it into .venv/).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

use cosim_models::greeting;
use cosim_tests::libcosim::{self, Comparison, Trace, compare_exact};
use cosim_tests::{cosim, fmi2, root};

/// libcosim's macro step in every case, ns.
const STEP_NS: i64 = 1_000_000;

/// What one case gave.
struct Outcome {
    cosim: Trace,
    libcosim: Trace,
    steps: usize,
    cmp: Comparison,
    /// cosim's standard error (its warnings).
    stderr: String,
}

/// Runs `system` in libcosim, then in cosim tracing every variable
/// libcosim's trace has, and compares the two.
fn run_both(system: &Path, stop: f64, ssp: bool, dir: &Path) -> Outcome {
    std::fs::create_dir_all(dir).unwrap();
    let (theirs, steps) = libcosim::run(system, stop, ssp, dir);
    assert!(
        steps.iter().all(|&s| s == STEP_NS),
        "{}: libcosim's steps are not all {STEP_NS} ns: {steps:?}",
        system.display()
    );
    let skip: Vec<&str> = theirs
        .header
        .iter()
        .map(String::as_str)
        .filter(|h| h.ends_with(".time"))
        .collect();
    let variables: Vec<&str> = theirs
        .header
        .iter()
        .map(String::as_str)
        .filter(|h| *h != "time" && !skip.contains(h))
        .collect();
    let out = dir.join("cosim");
    let (system_arg, out_arg, stop_arg) = (
        system.display().to_string(),
        out.display().to_string(),
        stop.to_string(),
    );
    let mut args = vec![
        "run",
        &system_arg,
        "--stop",
        &stop_arg,
        "-o",
        &out_arg,
        "--no-progress",
        "--output-variables",
    ];
    args.extend(&variables);
    let res = cosim(&args);
    let stderr = String::from_utf8_lossy(&res.stderr).into_owned();
    assert!(
        res.status.success(),
        "cosim run {} failed:\n{stderr}",
        system.display()
    );
    let ours = Trace::read(&out.join("trace.csv"));
    let cmp = compare_exact(&ours, &theirs, &skip);
    assert_eq!(cmp.rows, steps.len() + 1, "{}", system.display());
    assert_eq!(cmp.columns, variables.len(), "{}", system.display());
    assert!(
        cmp.n_differing == 0,
        "{}: {} of {} values differ from libcosim's:\n{}",
        system.display(),
        cmp.n_differing,
        cmp.values,
        cmp.differing.join("\n")
    );
    Outcome {
        cosim: ours,
        libcosim: theirs,
        steps: steps.len(),
        cmp,
        stderr,
    }
}

/// Every value of column `name` in both traces is `want` (libcosim's
/// empty cells aside: its Booleans in row 0).
fn constant(o: &Outcome, name: &str, want: f64) {
    for (who, t) in [("cosim", &o.cosim), ("libcosim", &o.libcosim)] {
        for (k, x) in t.values(name).iter().enumerate() {
            assert!(
                (x.is_nan() && who == "libcosim") || x.to_bits() == want.to_bits(),
                "{who}: {name} row {k} is {x}, the file says {want}"
            );
        }
    }
}

fn last(o: &Outcome, name: &str) -> f64 {
    *o.cosim.values(name).last().unwrap()
}

/// `tests/python/ssp/parameters` packaged as a `.ssp`: the SSD with its
/// FMUs in `resources/`, the `.ssv` files beside it.
fn ssp_package(dir: &Path) -> PathBuf {
    let src = root().join("tests/python/ssp/parameters");
    let ssd = std::fs::read_to_string(src.join("SystemStructure.ssd"))
        .unwrap()
        .replace("../../../../fmus/dist/fmi2/", "resources/");
    let p = dir.join("parameters.ssp");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("SystemStructure.ssd", opts).unwrap();
    zip.write_all(ssd.as_bytes()).unwrap();
    for ssv in ["controller.ssv", "wheel.ssv"] {
        zip.start_file(ssv, opts).unwrap();
        zip.write_all(&std::fs::read(src.join(ssv)).unwrap())
            .unwrap();
    }
    for m in [
        "ThermostatRoom",
        "ThermostatController",
        "Gain",
        "QuarterCarChassis",
        "QuarterCarWheelSuspension",
    ] {
        zip.start_file(format!("resources/{m}.fmu"), opts).unwrap();
        zip.write_all(&std::fs::read(fmi2(m)).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    p
}

/// The OSP case: every initial value reached the FMU.
fn check_osp(o: &Outcome) {
    for (name, v) in [
        ("room.T_amb", 8.5),
        ("room.tau", 0.05),
        ("room.P_unit", 13.3),
        ("room.T0", 17.1),
        ("controller.T_low", 18.4),
        ("controller.T_high", 20.6),
        ("controller.T_boost", 17.7),
        ("controller.on_start", 0.0),
        ("controller2.on_start", 0.0),
        ("controller2.T", 16.25),
        ("room2.heater_on", 1.0),
        ("room2.level", 3.0),
        ("room2.tau", 0.2), // the second of its two initial values
        ("chassis.m_c", 350.0),
        ("chassis.d_c", 1234.5),
        ("chassis.micro_steps", 4.0),
        ("wheel.m_w", 45.0),
        ("wheel.k_w", 1.6e5),
        ("wheel.z_road", 0.07),
        ("wheel.micro_steps", 7.0),
    ] {
        constant(o, name, v);
    }
    // The Strings reached the FMU in both tools: length and checksum of
    // prefix + ", " + name, which differ from those of the FMU's start
    // values ("Hello, world").
    let default = greeting::message("Hello", "world");
    for (sim, prefix, name) in [
        ("greeting", "Grüß Gott", "world"),
        ("greeting2", "<Hi & 'all' \"welcome\">", "Zoë"),
    ] {
        let message = greeting::message(prefix, name);
        let length = message.chars().count() as f64;
        let checksum = greeting::checksum(&message);
        assert_ne!(length, default.chars().count() as f64, "{sim}");
        assert_ne!(checksum, greeting::checksum(&default), "{sim}");
        constant(o, &format!("{sim}.length"), length);
        constant(o, &format!("{sim}.checksum"), checksum);
    }
    assert_eq!(o.cosim.values("greeting.length")[0], 16.0);
    assert_eq!(o.cosim.values("greeting2.length")[0], 27.0);
    assert!(
        o.stderr
            .contains("warning: a second initial value of 'tau' on simulator 'room2'"),
        "{}",
        o.stderr
    );
    // The values act: the room starts at T0 and the thermostat switches
    // with the thresholds given; controller2 starts off (on_start "0") and
    // switches on once, its unconnected input held at 16.25 < T_low; room2
    // heats at level 3 towards 10 + 3 * 12 = 46 degC.
    assert_eq!(o.cosim.values("room.T")[0], 17.1);
    assert!(last(o, "controller.switches") >= 10.0);
    let on2 = o.cosim.values("controller2.heater_on");
    assert_eq!((on2[0], on2[1]), (0.0, 1.0));
    assert_eq!(last(o, "controller2.switches"), 1.0);
    assert!(last(o, "room2.T") > 40.0);
}

/// The SSP case (directory or package): the bound values and the linear
/// transformations.
fn check_ssp(o: &Outcome) {
    for (name, v) in [
        ("room.T_amb", 8.5),
        ("room.tau", 0.05),
        ("room.P_unit", 13.3),
        ("room.T0", 17.1),
        ("controller.T_low", 18.4),
        ("controller.T_high", 20.6),
        ("controller.T_boost", 17.7),
        ("controller.on_start", 0.0),
        ("room2.heater_on", 1.0),
        ("room2.level", 3.0),
        ("room2.tau", 0.2),
        ("chassis.m_c", 350.0),
        ("wheel.m_w", 45.0),
        ("wheel.k_w", 1.6e5),
        ("wheel.d_c", 1234.5),
        ("wheel.z_road", 0.07),
        ("wheel.micro_steps", 7.0),
    ] {
        constant(o, name, v);
    }
    // f.u = 32 + 1.8 room.T (libcosim: offset + factor * in) and
    // chassis.F = -wheel.F_c: after initialization from the initial
    // values, then over each step from the values at its start.
    // `offset + factor * in` with offset 0 turns -0.0 into 0.0.
    let linear = |offset: f64, factor: f64, x: f64| offset + factor * x;
    let (t, u) = (o.cosim.values("room.T"), o.cosim.values("f.u"));
    let (fc, f) = (o.cosim.values("wheel.F_c"), o.cosim.values("chassis.F"));
    for k in 0..t.len() {
        let j = k.saturating_sub(1);
        assert_eq!(u[k].to_bits(), linear(32.0, 1.8, t[j]).to_bits(), "row {k}");
        assert_eq!(
            f[k].to_bits(),
            linear(0.0, -1.0, fc[j]).to_bits(),
            "row {k}"
        );
    }
    assert!(last(o, "controller.switches") >= 10.0);
    assert!(last(o, "room2.T") > 40.0);
}

/// `skipped.ssd`: what libcosim skips keeps the FMU's start value, in
/// cosim too, each with a warning.
fn check_skipped(o: &Outcome) {
    for (name, v) in [
        ("chassis.m_c", 400.0),
        ("wheel.micro_steps", 10.0),
        ("wheel.n_d", 0.5),
        ("wheel.m_w", 45.0),
    ] {
        constant(o, name, v);
    }
    assert_eq!(o.cosim.values("chassis.z_c")[0], 0.0);
    for w in [
        "parameter 'm_c' is an integer but 'chassis.m_c' is of type Real: ignored",
        "parameter 'z_c': 'chassis.z_c' is a variable of causality local, neither a parameter nor an input: ignored",
        "parameter 'not_a_variable' names no variable of 'chassis'",
        "parameter 'micro_steps' is a real number but 'wheel.micro_steps' is of type Integer: ignored",
        "parameter 'n_d' is a boolean but 'wheel.n_d' is of type Real: ignored",
    ] {
        assert!(o.stderr.contains(w), "no warning {w:?} in:\n{}", o.stderr);
    }
}

#[test]
fn initial_values_and_ssp_parameter_sets_are_bit_identical_to_libcosim() {
    let tmp = tempfile::tempdir().unwrap();
    let osp = root().join("tests/python/osp/initial_values");
    let ssd = root().join("tests/python/ssp/parameters");
    let cases: [(&str, String, PathBuf, f64, bool); 4] = [
        (
            "OSP initial values",
            "`tests/python/osp/initial_values/OspSystemStructure.xml`".into(),
            osp,
            0.5,
            false,
        ),
        (
            "SSP parameter sets, directory",
            "`tests/python/ssp/parameters/SystemStructure.ssd`".into(),
            ssd.clone(),
            0.5,
            true,
        ),
        (
            "SSP parameter sets, package",
            "the same as a `.ssp` (FMUs in `resources/`)".into(),
            ssp_package(tmp.path()),
            0.5,
            true,
        ),
        (
            "SSP values libcosim skips",
            "`tests/python/ssp/parameters/skipped.ssd`".into(),
            ssd.join("skipped.ssd"),
            0.1,
            true,
        ),
    ];
    let mut table = String::from(
        "| case | file | steps | variables compared | values compared | differing values |\n|---|---|---|---|---|---|\n",
    );
    for (i, (case, file, system, stop, ssp)) in cases.iter().enumerate() {
        let o = run_both(system, *stop, *ssp, &tmp.path().join(format!("case{i}")));
        match i {
            0 => check_osp(&o),
            1 | 2 => check_ssp(&o),
            _ => check_skipped(&o),
        }
        table.push_str(&format!(
            "| {case} | {file} | {} | {} | {} | {} |\n",
            o.steps, o.cmp.columns, o.cmp.values, o.cmp.n_differing
        ));
    }
    cosim_tests::check_doc_block("ssp.md", "libcosim-compat-values", &table);
}
