//! Helpers for the end-to-end tests: the project's FMUs (built on demand),
//! the `cosim` binary, running a scenario through the library, and reading
//! outputs back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod b1_adaptive;
pub mod b1_jacobi;
pub mod b1_richardson;
pub mod b2_extrapolation;
pub mod b2_richardson;
pub mod b3_jacobi;
pub mod b4_reference;
pub mod libcosim;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosim_core::execution::RunSummary;
pub use cosim_core::metrics::Table;
use cosim_scenario::Overrides;
use cosim_scenario::runner;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The Python interpreter of the tests that drive peer tools (FMPy,
/// libcosim, PythonFMU): `$PYTHON` if set (`cargo xtask test` sets it),
/// else the project's environment `.venv/bin/python` if it exists (made by
/// `cargo xtask test` with the packages of `tests/python/requirements.txt`,
/// so a plain `cargo test` works after it). Never the system's `python3`:
/// fails, saying to run `cargo xtask test`, when neither is there.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let venv = root().join(".venv").join("bin").join("python");
    assert!(
        venv.exists(),
        "this test needs the project's Python environment {} (FMPy, libcosimpy, \
         PythonFMU): run `cargo xtask test`, which creates it and runs every test \
         (or set PYTHON to an interpreter with the packages of \
         tests/python/requirements.txt)",
        venv.display()
    );
    venv
}

/// An FMU of `fmu` as a subsystem named `name`: its variable `input` as
/// its input slot and `output` as its observed slot, with real and
/// integer parameters set.
pub fn fmu_subsystem(
    fmu: &cosim_fmi::Fmu,
    name: &str,
    (input, output): (&str, &str),
    reals: &[(&str, f64)],
    ints: &[(&str, i32)],
) -> cosim_core::FmuSubsystem {
    use cosim_core::{FmuSubsystem, SlotVar};
    let md = fmu.model_description();
    let find = |n: &str| md.variables.iter().position(|v| v.name == n).unwrap();
    let mut sub = FmuSubsystem::instantiate(
        fmu,
        name,
        &[SlotVar::scalar(find(input))],
        &[SlotVar::scalar(find(output))],
        1,
        &cosim_fmi::InstantiateOptions::default(),
    )
    .unwrap();
    for (n, v) in reals {
        let vr = md.variables[find(n)].value_reference;
        sub.instance_mut().set_f64(&[vr], &[*v]).unwrap();
    }
    for (n, v) in ints {
        let vr = md.variables[find(n)].value_reference;
        sub.instance_mut().set_i32(&[vr], &[*v]).unwrap();
    }
    sub
}

/// Makes sure `fmus/dist` is built and current; returns it.
pub fn fmus() -> PathBuf {
    fmu_kit::dist::ensure_built().expect("building the project FMUs (cargo xtask fmus)")
}

/// A packaged FMI 2.0 FMU of the project.
pub fn fmi2(model: &str) -> PathBuf {
    fmus().join("fmi2").join(format!("{model}.fmu"))
}

/// A packaged FMI 3.0 FMU of the project.
pub fn fmi3(model: &str) -> PathBuf {
    fmus().join("fmi3").join(format!("{model}.fmu"))
}

/// A reference CSV written by `cargo xtask fmus`.
pub fn reference(name: &str) -> Table {
    Table::read(&fmus().join("references").join(format!("{name}.csv"))).expect("reference CSV")
}

/// A scenario file of `scenarios/`.
pub fn scenario(name: &str) -> PathBuf {
    root().join("scenarios").join(name)
}

/// A copy of scenario `file` (of `scenarios/`) in `dir` whose `[master]`
/// table is `master` (the TOML body, without the header), with its FMU
/// paths made absolute.
pub fn with_master(file: &str, master: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(scenario(file)).expect("reading the scenario");
    let start = text.find("[master]").expect("a [master] table");
    let end = start + text[start..].find("\n[[").expect("a table after [master]");
    let text = format!("{}[master]\n{master}\n{}", &text[..start], &text[end..])
        .replace("../fmus/dist", &fmus().display().to_string());
    let path = dir.join(format!("{}.toml", file.trim_end_matches(".toml")));
    std::fs::write(&path, text).expect("writing the scenario copy");
    path
}

/// The `cosim` binary of this build profile, rebuilt if stale (once per
/// test process; cargo answers in a fraction of a second when it is current).
pub fn cosim_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // target/<profile>/deps/<test> -> target/<profile>/cosim
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target profile directory");
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let status = Command::new(env!("CARGO"))
            // (cosim-fmu: the library `cosim export` packs, beside `cosim`.)
            .args(["build", "--quiet", "-p", "cosim-cli", "-p", "cosim-fmu"])
            .args(["--profile", profile])
            .current_dir(root())
            .status()
            .expect("running cargo build -p cosim-cli -p cosim-fmu");
        assert!(
            status.success(),
            "cargo build -p cosim-cli -p cosim-fmu failed"
        );
        let bin = profile_dir.join(format!("cosim{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.exists(), "{} missing after cargo build", bin.display());
        bin
    })
    .clone()
}

/// Runs `cosim` with `args` (FMUs built first) and returns its output.
pub fn cosim(args: &[&str]) -> Output {
    fmus();
    Command::new(cosim_bin())
        .args(args)
        .current_dir(root())
        .output()
        .expect("running cosim")
}

/// What the fault tests log: warnings, and each subsystem's termination
/// (`subsystem 'x' terminated` / `failed: not terminated`).
pub const TERMINATION_LOG: &str = "warn,cosim_core::system=debug";

/// `cosim run --no-progress <extra> <scenario> --out <out>` with the
/// termination log on (see [`TERMINATION_LOG`]).
pub fn run_logged(scenario: &Path, out: &Path, extra: &[&str]) -> Output {
    fmus();
    Command::new(cosim_bin())
        .args(["run", "--no-progress"])
        .args(extra)
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .env("COSIM_LOG", TERMINATION_LOG)
        .current_dir(root())
        .output()
        .expect("running cosim")
}

/// The result of [`run`].
pub struct Run {
    /// The run summary.
    pub summary: RunSummary,
    /// The error message, if the run failed.
    pub error: Option<String>,
    /// The output directory (kept alive with the run).
    pub dir: tempfile::TempDir,
}

impl Run {
    /// The trace.
    pub fn trace(&self) -> Table {
        Table::read(&self.dir.path().join("trace.csv")).expect("trace.csv")
    }

    /// The energy log.
    pub fn energy(&self) -> Table {
        Table::read(&self.dir.path().join("energy.csv")).expect("energy.csv")
    }

    /// The step log.
    pub fn steps(&self) -> Table {
        // (Without the text column of the timed events.)
        Table::read_skipping_text(&self.dir.path().join("steps.csv"))
            .expect("steps.csv")
            .0
    }
}

/// Runs a scenario through the library (as `cosim run` does) with
/// `--set`-style assignments and optional stop time and step, writing the
/// outputs into a fresh temporary directory.
pub fn run(scenario: &Path, set: &[&str], stop: Option<f64>, step: Option<f64>) -> Run {
    run_observed(scenario, set, (stop, step), Vec::new())
}

/// [`run`] with every step taken the full way, no quiet path
/// ([`cosim_core::observer::StepsOneByOne`]): the reference the quiet
/// path is compared with.
pub fn run_one_by_one(scenario: &Path, set: &[&str], stop: Option<f64>, step: Option<f64>) -> Run {
    let extra: Vec<Box<dyn cosim_core::observer::Observer>> =
        vec![Box::new(cosim_core::observer::StepsOneByOne)];
    run_observed(scenario, set, (stop, step), extra)
}

/// [`run`] with `extra` observers.
fn run_observed(
    scenario: &Path,
    set: &[&str],
    (stop, step): (Option<f64>, Option<f64>),
    extra: Vec<Box<dyn cosim_core::observer::Observer>>,
) -> Run {
    fmus();
    let dir = tempfile::tempdir().expect("temporary output directory");
    let overrides = Overrides {
        set: set.iter().map(|s| s.to_string()).collect(),
        stop,
        step,
        out: Some(dir.path().to_path_buf()),
        ..Overrides::default()
    };
    let prepared = runner::prepare(scenario, &overrides, None).unwrap_or_else(|e| panic!("{e}"));
    let outcome = runner::run(prepared, extra, None).unwrap_or_else(|e| panic!("{e}"));
    Run {
        summary: outcome.summary,
        error: outcome.error.map(|e| e.to_string()),
        dir,
    }
}

/// Largest absolute difference between a trace column and a reference
/// column over the trace's time points.
pub fn max_abs_error(trace: &Table, column: &str, reference: &Table, ref_column: &str) -> f64 {
    let y = trace
        .column(column)
        .unwrap_or_else(|| panic!("trace has no column {column}: {:?}", trace.names));
    let c = reference
        .names
        .iter()
        .position(|n| n == ref_column)
        .unwrap_or_else(|| {
            panic!(
                "reference has no column {ref_column}: {:?}",
                reference.names
            )
        });
    trace
        .time()
        .iter()
        .zip(y)
        .map(|(&t, &v)| (v - reference.interpolate(c, t)).abs())
        .fold(0.0, f64::max)
}

/// B4's accuracy measure (ifosmondi2019 sec. 4): the mean relative error
/// (mean |error| / max |reference|) of the coupling variables x1, v1 and f2
/// against the monolithic reference, averaged.
pub fn b4_mean_relative_error(r: &Run) -> f64 {
    use cosim_core::metrics::{compare_columns, match_columns};
    let trace = r.trace();
    let reference = reference("b4");
    let pairs: Vec<_> = match_columns(&trace, &reference, &[])
        .into_iter()
        .filter(|(_, c)| ["x1", "v1", "f2"].contains(&c.as_str()))
        .collect();
    assert_eq!(pairs.len(), 3, "{pairs:?}");
    let errors =
        compare_columns(&trace, &reference, &pairs, f64::NEG_INFINITY, f64::INFINITY).unwrap();
    errors.iter().map(|e| e.mean_relative).sum::<f64>() / errors.len() as f64
}

/// Least-squares slope of log(error) against log(step).
pub fn loglog_slope(steps: &[f64], errors: &[f64]) -> f64 {
    let xs: Vec<f64> = steps.iter().map(|h| h.ln()).collect();
    let ys: Vec<f64> = errors.iter().map(|e| e.ln()).collect();
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    sxy / sxx
}

/// Checks that the block `<!-- generated:NAME -->` ... `<!-- end:NAME -->`
/// of `docs/DOC` holds `text` (the figures a test just computed), so that a
/// figure in the docs is what the build gives. With `COSIM_BLESS_DOCS=1`
/// the block is rewritten instead.
pub fn check_doc_block(doc: &str, name: &str, text: &str) {
    check_block_in(&root().join("docs").join(doc), name, text);
}

/// [`check_doc_block`] on any file (`doc` in messages is its name).
pub fn check_block_in(path: &Path, name: &str, text: &str) {
    let doc = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let path = path.to_path_buf();
    let doc_text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let begin = format!("<!-- generated:{name} -->\n");
    let end = format!("<!-- end:{name} -->");
    let b = doc_text
        .find(&begin)
        .unwrap_or_else(|| panic!("{} has no line {begin:?}", path.display()))
        + begin.len();
    let e = b + doc_text[b..]
        .find(&end)
        .unwrap_or_else(|| panic!("{} has no {end:?} after {begin:?}", path.display()));
    let text = if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    };
    if std::env::var_os("COSIM_BLESS_DOCS").is_some_and(|v| v == "1") {
        let new = format!("{}{}{}", &doc_text[..b], text, &doc_text[e..]);
        std::fs::write(&path, new).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    assert!(
        doc_text[b..e] == text,
        "{doc} block '{name}' differs from what this build gives; rerun this test with \
         COSIM_BLESS_DOCS=1 to rewrite it, and review the change.\n--- in the docs:\n{}--- from the build:\n{}",
        &doc_text[b..e],
        text
    );
}

/// The header and rows of a CSV file, every cell as written (split at
/// commas: for files without quoted commas).
pub fn csv_cells(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// Builds `tests/data/hostile_fmu` (a hand-written FMI 2.0 FMU in C whose
/// calls return status codes the kit's FMUs never return, and which
/// misbehaves on request in ways the kit never does: `hostile.c`) into
/// `<dir>/Hostile.fmu` with the system C compiler (`CC`, else `cc`).
pub fn hostile_fmu(dir: &Path) -> PathBuf {
    c_fmu(
        dir,
        "hostile_fmu",
        "hostile.c",
        "Hostile",
        "linux64",
        &["-pthread"],
    )
}

/// Builds `tests/data/feedthrough_fmu` (a hand-written FMI 3.0 FMU in C
/// whose outputs are its inputs: continuous and discrete Float64, Int64
/// and UInt64 over their whole range, Binary) into
/// `<dir>/Feedthrough.fmu` with the system C compiler (`CC`, else `cc`).
pub fn feedthrough_fmu(dir: &Path) -> PathBuf {
    c_fmu(
        dir,
        "feedthrough_fmu",
        "feedthrough.c",
        "Feedthrough",
        "x86_64-linux",
        &[],
    )
}

/// Compiles `tests/data/<src>/<c_file>` (with the C compiler flags
/// `flags` besides the usual ones) into a shared library and packs it with
/// the model description beside it into `<dir>/<model>.fmu`
/// (`binaries/<platform>/<model>.so`).
fn c_fmu(
    dir: &Path,
    src: &str,
    c_file: &str,
    model: &str,
    platform: &str,
    flags: &[&str],
) -> PathBuf {
    let src = root().join("tests/data").join(src);
    let lib = dir.join(format!("{model}.so"));
    compile_c(&src.join(c_file), &lib, flags);
    let fmu = dir.join(format!("{model}.fmu"));
    let md = std::fs::read(src.join("modelDescription.xml")).unwrap();
    pack_fmu(
        &fmu,
        &md,
        &[(format!("binaries/{platform}/{model}.so"), lib)],
    );
    fmu
}

/// Compiles the C file `c_file` into the shared library `lib` with the
/// system C compiler (`CC`, else `cc`), `flags` besides the usual ones.
fn compile_c(c_file: &Path, lib: &Path, flags: &[&str]) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-fvisibility=hidden"])
        .args(flags)
        .arg("-o")
        .arg(lib)
        .arg(c_file)
        .output()
        .unwrap_or_else(|e| panic!("running the C compiler {cc}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Packs the model description `md` and the libraries `libs` (archive
/// entry, file) into the FMU `fmu`.
fn pack_fmu(fmu: &Path, md: &[u8], libs: &[(String, PathBuf)]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(fmu).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    z.start_file("modelDescription.xml", opts).unwrap();
    std::io::Write::write_all(&mut z, md).unwrap();
    for (name, file) in libs {
        z.start_file(name.as_str(), opts).unwrap();
        std::io::Write::write_all(&mut z, &std::fs::read(file).unwrap()).unwrap();
    }
    z.finish().unwrap();
}

/// The interfaces [`bouncing_ball_fmu`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BallInterfaces {
    /// `<ModelExchange>` only, library `BouncingBallME`.
    ModelExchange,
    /// `<CoSimulation>` only, library `BouncingBallCS`.
    CoSimulation,
    /// Both, each in its own library.
    Both,
    /// Both in one library, `BouncingBall`, which both elements name.
    BothOneLibrary,
}

/// Builds `tests/data/me_fmu` (a hand-written bouncing ball in C, FMI 2.0
/// or 3.0 as `fmi` says, Model Exchange and/or Co-Simulation: its state
/// machine checked as the Reference FMUs check it) with the system C
/// compiler into `<dir>/BouncingBall<fmi>_<interfaces>[_without_<f>].fmu`.
/// The functions named in `omit` are left out of the libraries (for tests
/// of a missing function).
pub fn bouncing_ball_fmu(
    dir: &Path,
    fmi: u8,
    interfaces: BallInterfaces,
    omit: &[&str],
) -> PathBuf {
    let src = root().join("tests/data/me_fmu");
    let platform = if fmi == 2 { "linux64" } else { "x86_64-linux" };
    let me = ("BouncingBallME", "-DMODEL_EXCHANGE");
    let cs = ("BouncingBallCS", "-DCO_SIMULATION");
    let libs: Vec<(&str, Vec<&str>)> = match interfaces {
        BallInterfaces::ModelExchange => vec![(me.0, vec![me.1])],
        BallInterfaces::CoSimulation => vec![(cs.0, vec![cs.1])],
        BallInterfaces::Both => vec![(me.0, vec![me.1]), (cs.0, vec![cs.1])],
        BallInterfaces::BothOneLibrary => vec![("BouncingBall", vec![me.1, cs.1])],
    };
    let md = std::fs::read_to_string(src.join(format!("fmi{fmi}.xml"))).unwrap();
    let keep = |line: &str| {
        (interfaces != BallInterfaces::CoSimulation || !line.contains("<ModelExchange "))
            && (interfaces != BallInterfaces::ModelExchange || !line.contains("<CoSimulation "))
    };
    let mut md: String = md
        .lines()
        .filter(|l| keep(l))
        .map(|l| format!("{l}\n"))
        .collect();
    if interfaces == BallInterfaces::BothOneLibrary {
        md = md
            .replace("\"BouncingBallME\"", "\"BouncingBall\"")
            .replace("\"BouncingBallCS\"", "\"BouncingBall\"");
    }
    let version = format!("-DFMI_VERSION={fmi}");
    let renames: Vec<String> = omit.iter().map(|f| format!("-D{f}=omitted_{f}")).collect();
    let mut tag = format!("{fmi}_{interfaces:?}");
    for f in omit {
        tag.push_str("_without_");
        tag.push_str(f);
    }
    let built: Vec<(String, PathBuf)> = libs
        .iter()
        .map(|(id, defines)| {
            let lib = dir.join(format!("{id}{tag}.so"));
            let mut flags = vec![version.as_str()];
            flags.extend(defines);
            flags.extend(renames.iter().map(String::as_str));
            compile_c(&src.join("bouncing_ball.c"), &lib, &flags);
            (format!("binaries/{platform}/{id}.so"), lib)
        })
        .collect();
    let fmu = dir.join(format!("BouncingBall{tag}.fmu"));
    pack_fmu(&fmu, md.as_bytes(), &built);
    fmu
}

/// The coupling of every accepted step, checked from outside the master:
/// at every row of `trace` after the start, each input `u` within the
/// tolerance of eq. 27 (ifosmondi2019) of the output `y` feeding it,
/// `|u - y| < eps_rel |u| + eps_abs`, for `connections` as (u, y) column
/// names. Returns the largest `|u - y| / tolerance` (panics, naming `what`,
/// the row and the connection, where one is not below 1).
pub fn assert_coupled_within(
    trace: &Table,
    connections: &[(&str, &str)],
    (eps_abs, eps_rel): (f64, f64),
    what: &str,
) -> f64 {
    let column = |name: &str| {
        trace
            .column(name)
            .unwrap_or_else(|| panic!("{what}: the trace has no column {name}: {:?}", trace.names))
    };
    let mut worst: f64 = 0.0;
    for &(u_name, y_name) in connections {
        let (u, y) = (column(u_name), column(y_name));
        for k in 1..u.len() {
            let tolerance = eps_rel * u[k].abs() + eps_abs;
            let gap = (u[k] - y[k]).abs();
            worst = worst.max(gap / tolerance);
            assert!(
                gap < tolerance,
                "{what}: t = {}: |{u_name} - {y_name}| = {gap:e} >= {tolerance:e}",
                trace.time()[k]
            );
        }
    }
    worst
}

/// The processors a thread may run on, from its `status` under `/proc`
/// (`Cpus_allowed_list`, "0-2,4" -> [0, 1, 2, 4]): `entry` is
/// `"thread-self"`, a process id (its main thread) or `"self/task/<tid>"`.
pub fn cpus_allowed(entry: &str) -> Vec<usize> {
    let status = std::fs::read_to_string(format!("/proc/{entry}/status")).unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    let mut cpus = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

/// A directory that lives as long as this test process, for what a test
/// binary makes once and keeps in a `static` (a `TempDir` there is never
/// dropped, so it would stay in the system's temporary directory after
/// every run). It is `target/tmp/<name>-<pid>`, made empty; directories of
/// the same name left by processes no longer running are removed first, so
/// at most one per live process remains.
pub fn process_dir(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/tmp
    let base = exe
        .ancestors()
        .nth(3)
        .expect("target directory")
        .join("tmp");
    std::fs::create_dir_all(&base).expect("target/tmp");
    let prefix = format!("{name}-");
    for entry in std::fs::read_dir(&base).expect("target/tmp").flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = base.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a directory of this test process");
    dir
}

/// The error lines of a run's standard error (`error:` lines and those
/// naming a subsystem), host process ids masked (each run has its own):
/// what two runs of one failure, stepped two ways, must both say.
pub fn error_lines_pids_masked(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| l.starts_with("error:") || l.contains("subsystem '"))
        .map(|l| {
            let mut out = String::new();
            let mut rest = l;
            while let Some(i) = rest.find("(pid ") {
                out += &rest[..i + 5];
                rest = &rest[i + 5..];
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                out += "N";
                rest = &rest[digits..];
            }
            out + rest
        })
        .collect()
}
