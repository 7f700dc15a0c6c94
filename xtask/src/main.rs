//! `cargo xtask <task>`: project chores that need Rust code.
//!
//! - `fmus`: builds `cosim-models` (release), strips the library, packages
//!   every model as FMI 2 (`fmus/dist/fmi2/<Model>.fmu`; not the models with
//!   FMI 3 only variable types, `ModelSpec::supports`) and FMI 3
//!   (`fmus/dist/fmi3/<Model>.fmu`; the Model Exchange only models in
//!   `fmus/dist/me/fmi2/` and `me/fmi3/`, `fmu_kit::dist::packaged_path`),
//!   the FMI 2 and FMI 3 capability variants
//!   of `cosim_models::VARIANT_MODELS` (`fmu_kit::dist::variant_path`: FMI 2
//!   in `fmus/dist/variants/<Model>-<suffix>.fmu`, FMI 3 in
//!   `fmus/dist/fmi3/<Model>-fmi3-<suffix>.fmu`), the quirk builds of
//!   `cosim_models::QUIRK_VARIANTS` (`fmus/dist/quirks/`), removes `.fmu`
//!   files of those folders that it did not write (left from older layouts),
//!   and the reference CSVs (`fmus/dist/references/`); then writes
//!   `fmus/dist/.stamp`. Idempotent; holds `fmus/dist/.lock` while working
//!   (unless its caller already does, see `fmu_kit::dist`).
//! - `references`: only the reference CSVs.
//! - `catalog`: prints the per-model variable tables of `fmus/README.md`.
//! - `demo`: `fmus`, then builds `cosim` (release) and runs the demo
//!   scenario `scenarios/b1_quarter_car_a.toml` into `out/demo/`.
//! - `test [ARGS]`: every test. Makes sure of the project's Python
//!   environment `.venv/` (`venv::ensure`: created with `python3 -m venv`,
//!   `tests/python/requirements.txt` installed into it when they changed),
//!   then runs `cargo test --workspace ARGS` (without `--workspace` when
//!   ARGS choose the packages) with `PYTHON` set to the venv's interpreter;
//!   without ARGS, then the Python package's tests (`test-python`); exits
//!   with a failure status when any failed.
//! - `test-python`: the Python package `cosim` (`pypkg`): builds its wheel
//!   with maturin, installs it into `.venv/`, runs pytest on
//!   `tests/python/cosim_py/`.
//! - `venv`: only the environment; prints its interpreter's path on stdout
//!   (for scripts: `PYTHON="$(cargo xtask venv)"`).
//! - `memcheck`: the kit's own tests (its C layer: pointer checks, the
//!   instance table, calls that hold an instance without a reference
//!   count) under valgrind's memcheck; fails on any invalid memory access.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cosim_models::reference::{self, QuarterCar, ThreeMass, TwoMass};
use fmu_kit::{FmiVersion, PackageRequest, Variant, dist, package};

mod pypkg;
mod venv;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("fmus") => fmus(),
        Some("references") => references(&dist::references_dir()).map(|_| ()),
        Some("catalog") => {
            print!("{}", catalog());
            Ok(())
        }
        Some("demo") => demo(),
        Some("test") => test(&args[1..]),
        Some("test-python") => test_python(),
        Some("memcheck") => memcheck(),
        Some("venv") => {
            venv::ensure(&dist::workspace_root()).map(|py| println!("{}", py.display()))
        }
        _ => {
            eprintln!(
                "usage: cargo xtask fmus | references | catalog | demo | test [cargo test arguments] | test-python | venv | memcheck"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e}");
        std::process::exit(1);
    }
}

/// Builds the FMUs and the `cosim` binary, then runs the demo scenario.
fn demo() -> io::Result<()> {
    fmus()?;
    let root = dist::workspace_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // Cargo's own progress: the first build takes minutes.
    // (cosim-fmu: the library `cosim export` packs, beside `cosim`.)
    eprintln!("xtask: building cosim (cargo build --release -p cosim-cli -p cosim-fmu)");
    let status = Command::new(&cargo)
        .args(["build", "--release", "-p", "cosim-cli", "-p", "cosim-fmu"])
        .current_dir(&root)
        .status()?;
    if !status.success() {
        return Err(io::Error::other("building cosim failed"));
    }
    let status = Command::new(root.join("target/release/cosim"))
        .args([
            "run",
            "scenarios/b1_quarter_car_a.toml",
            "--out",
            "out/demo",
        ])
        .current_dir(&root)
        .status()?;
    if !status.success() {
        return Err(io::Error::other(format!("the demo run failed ({status})")));
    }
    eprintln!(
        "demo: trace, energy log, step log and summary are in {}",
        root.join("out/demo").display()
    );
    Ok(())
}

/// `cargo test --workspace ARGS` with `PYTHON` set to the project's venv
/// (made or brought up to date first); without ARGS, then the Python
/// package's tests ([`test_python`]); exits with a failure status when
/// any failed.
fn test(args: &[String]) -> io::Result<()> {
    let root = dist::workspace_root();
    let python = venv::ensure(&root)?;
    eprintln!("xtask: PYTHON={}", python.display());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let tmp = test_tmp(&root)?;
    let status = Command::new(&cargo)
        .args(venv::cargo_test_args(args))
        .env("PYTHON", &python)
        .env("TMPDIR", &tmp)
        .current_dir(&root)
        .status()?;
    // The Python package's tests run after the Rust tests, also when those
    // failed (they are independent); ARGS choosing tests skip them.
    let python_ok = !args.is_empty() || pypkg::test(&root, &python, &tmp)?;
    left_in(&tmp);
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    if !python_ok {
        eprintln!(
            "xtask: the Python package's tests failed ({})",
            pypkg::TESTS
        );
        std::process::exit(1);
    }
    Ok(())
}

/// The tests' temporary directory (`TMPDIR`), `target/test-tmp/<pid>`:
/// what a test leaves behind (a `TempDir` held in a `static`, which is
/// never dropped; FMPy's extraction when a simulation raises) stays
/// there until the next run instead of piling up in `/tmp`. The
/// directories of runs no longer running are removed; one of a run still
/// going (a `test-python` beside a `test`) is left alone.
fn test_tmp(root: &Path) -> io::Result<PathBuf> {
    let base = root.join("target/test-tmp");
    fs::create_dir_all(&base)?;
    for entry in fs::read_dir(&base)?.flatten() {
        let alive = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let path = entry.path();
            let removed = match entry.file_type() {
                Ok(t) if t.is_dir() => fs::remove_dir_all(&path),
                _ => fs::remove_file(&path),
            };
            if let Err(e) = removed
                && e.kind() != io::ErrorKind::NotFound
            {
                return Err(e);
            }
        }
    }
    let tmp = base.join(std::process::id().to_string());
    fs::create_dir_all(&tmp)?;
    Ok(tmp)
}

/// Says what the tests left in `tmp` (so that a leak is seen).
fn left_in(tmp: &Path) {
    let left: Vec<String> = fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !left.is_empty() {
        eprintln!(
            "xtask: the tests left {} entries in {} (removed by the next run): {}",
            left.len(),
            tmp.display(),
            left.join(" ")
        );
    }
}

/// `memcheck`: builds the kit's unit tests and runs them under valgrind.
fn memcheck() -> io::Result<()> {
    let root = dist::workspace_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(&cargo)
        .args([
            "test",
            "-p",
            "fmu-kit",
            "--lib",
            "--no-run",
            "--message-format=json",
        ])
        .current_dir(&root)
        .stderr(Stdio::inherit())
        .output()?;
    if !built.status.success() {
        std::process::exit(built.status.code().unwrap_or(1));
    }
    let exe = String::from_utf8_lossy(&built.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| {
            m["reason"] == "compiler-artifact"
                && m["target"]["name"] == "fmu_kit"
                && m["profile"]["test"] == true
        })
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| io::Error::other("cargo built no test executable of fmu-kit"))?;
    let status = Command::new("valgrind")
        .args(["--quiet", "--error-exitcode=9"])
        .arg(&exe)
        .arg("--test-threads=2")
        .current_dir(&root)
        .status()
        .map_err(|e| {
            io::Error::other(format!(
                "valgrind: {e} (install it: apt-get install valgrind)"
            ))
        })?;
    if !status.success() {
        eprintln!("xtask: memcheck of {} failed", exe.display());
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

/// The Python package: wheel, install into the venv, pytest.
fn test_python() -> io::Result<()> {
    let root = dist::workspace_root();
    let python = venv::ensure(&root)?;
    if !pypkg::test(&root, &python, &test_tmp(&root)?)? {
        std::process::exit(1);
    }
    Ok(())
}

/// Holds `fmus/dist/.lock` unless the parent process does.
struct DistLock(Option<fs::File>);

impl DistLock {
    fn acquire(dist: &Path) -> io::Result<Self> {
        if std::env::var_os(dist::LOCK_HELD_ENV).is_some() {
            return Ok(DistLock(None));
        }
        fs::create_dir_all(dist)?;
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(dist.join(dist::LOCK))?;
        f.lock()?;
        Ok(DistLock(Some(f)))
    }
}

impl Drop for DistLock {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            let _ = f.unlock();
        }
    }
}

fn fmus() -> io::Result<()> {
    let root = dist::workspace_root();
    let dist_dir = dist::dist_dir();
    let _lock = DistLock::acquire(&dist_dir)?;
    let started = std::time::Instant::now();

    let built = build_library(&root)?;
    let lib = dist_dir.join("lib").join("libcosim_models.so");
    fs::create_dir_all(lib.parent().unwrap_or(&dist_dir))?;
    let tmp = lib.with_extension("so.tmp");
    fs::copy(&built, &tmp)?;
    strip(&tmp);
    fs::rename(&tmp, &lib)?;
    let size = fs::metadata(&lib)?.len();
    println!("library: {} ({} KiB)", lib.display(), size / 1024);

    let mut count = 0;
    let mut written = std::collections::HashSet::new();
    for spec in cosim_models::registry() {
        // A model with FMI 3 only variable types has no FMI 2 build.
        for version in [FmiVersion::Fmi2, FmiVersion::Fmi3]
            .into_iter()
            .filter(|v| spec.supports(*v))
        {
            let req = PackageRequest::variant(spec, version, Variant::Full);
            // Model Exchange only FMUs go to `me/`, apart from what tools
            // load as co-simulation FMUs.
            let out = dist::packaged_path(version, spec);
            package(&req, &lib, &out)?;
            written.insert(out);
            count += 1;
        }
    }
    for name in cosim_models::VARIANT_MODELS {
        let spec = cosim_models::spec(name).ok_or_else(|| {
            io::Error::other(format!("VARIANT_MODELS names unknown model {name}"))
        })?;
        let fmi2 = Variant::RESTRICTED.map(|v| (FmiVersion::Fmi2, v));
        let fmi3 = Variant::FMI3_RESTRICTED.map(|v| (FmiVersion::Fmi3, v));
        for (version, variant) in fmi2.into_iter().chain(fmi3) {
            let req = PackageRequest::variant(spec, version, variant);
            let out = dist::variant_path(name, variant);
            package(&req, &lib, &out)?;
            written.insert(out);
            count += 1;
        }
    }
    for (name, variant) in cosim_models::QUIRK_VARIANTS {
        let spec = cosim_models::spec(name).ok_or_else(|| {
            io::Error::other(format!("QUIRK_VARIANTS names unknown model {name}"))
        })?;
        let version = variant
            .version()
            .ok_or_else(|| io::Error::other(format!("{variant:?} has no FMI version")))?;
        let req = PackageRequest::variant(spec, version, variant);
        let out = dist::variant_path(name, variant);
        package(&req, &lib, &out)?;
        written.insert(out);
        count += 1;
    }
    println!("packaged {count} FMUs into {}", dist_dir.display());
    remove_stale_fmus(&dist_dir, &written)?;

    let n = references(&dist::references_dir())?;
    println!(
        "wrote {n} reference CSVs into {}",
        dist::references_dir().display()
    );

    fs::write(
        dist_dir.join(dist::STAMP),
        format!("{count} FMUs, {n} references\n"),
    )?;
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Removes the `.fmu` files in `fmi2/`, `fmi3/`, `me/fmi2/`, `me/fmi3/`,
/// `variants/` and `quirks/` that this run did not write (e.g. FMI 3
/// variants of an older layout in `variants/`, where FMI 2-only tools
/// would load them).
fn remove_stale_fmus(
    dist_dir: &Path,
    written: &std::collections::HashSet<PathBuf>,
) -> io::Result<()> {
    for sub in ["fmi2", "fmi3", "me/fmi2", "me/fmi3", "variants", "quirks"] {
        let Ok(entries) = fs::read_dir(dist_dir.join(sub)) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "fmu") && !written.contains(&path) {
                fs::remove_file(&path)?;
                println!("removed stale {}", path.display());
            }
        }
    }
    Ok(())
}

/// `cargo build --release -p cosim-models`; returns the cdylib's path.
fn build_library(root: &Path) -> io::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "xtask: building the project's FMUs' library (cargo build --release -p cosim-models)"
    );
    let out = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--release",
            "-p",
            "cosim-models",
            "--message-format=json-render-diagnostics",
        ])
        .stderr(Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "cargo build of cosim-models failed: {}",
            out.status
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["target"]["name"] != "cosim_models" {
            continue;
        }
        if let Some(files) = msg["filenames"].as_array() {
            for f in files.iter().filter_map(|f| f.as_str()) {
                if f.ends_with(".so") {
                    return Ok(PathBuf::from(f));
                }
            }
        }
    }
    Err(io::Error::other(
        "cargo build did not report the cosim-models cdylib",
    ))
}

/// Strips symbols and debug info (the library is copied into every FMU).
/// The dynamic symbol table, which `dlsym` uses, is kept.
fn strip(path: &Path) {
    match Command::new("strip").arg("--strip-all").arg(path).status() {
        Ok(s) if s.success() => {}
        Ok(s) => eprintln!("xtask: warning: strip failed ({s}); packaging the unstripped library"),
        Err(e) => {
            eprintln!("xtask: warning: strip not available ({e}); packaging the unstripped library")
        }
    }
}

fn write_csv(dir: &Path, name: &str, tr: &reference::Trajectory) -> io::Result<()> {
    let path = dir.join(name);
    let tmp = path.with_extension("csv.tmp");
    fs::write(&tmp, tr.to_csv())?;
    fs::rename(tmp, path)
}

/// Writes the reference CSVs; returns how many.
fn references(dir: &Path) -> io::Result<usize> {
    fs::create_dir_all(dir)?;
    let b1_times = reference::grid(0.0, 10.0, 100_000);
    write_csv(
        dir,
        "b1_linear.csv",
        &reference::b1_linear(&QuarterCar::LINEAR, &b1_times),
    )?;
    let b1n_times = reference::grid(0.0, 2.0, 20_000);
    write_csv(
        dir,
        "b1_nonlinear.csv",
        &reference::b1_nonlinear(&QuarterCar::NONLINEAR, &b1n_times, 1e-6),
    )?;
    for (k, t_end) in [(1, 25.0), (2, 100.0), (3, 25.0)] {
        let times = reference::grid(0.0, t_end, (t_end * 1000.0) as usize);
        write_csv(
            dir,
            &format!("b3_scenario{k}.csv"),
            &reference::three_mass(&ThreeMass::scenario(k), &times),
        )?;
    }
    write_csv(
        dir,
        "b4.csv",
        &reference::two_mass(&TwoMass::DEFAULT, &reference::grid(0.0, 1.0, 100_000)),
    )?;
    let b5_times = reference::grid(0.0, 20.0, 20_000);
    write_csv(
        dir,
        "b5_undamped.csv",
        &reference::oscillator(1.0, 1.0, 0.0, 1.0, 0.0, &b5_times),
    )?;
    write_csv(
        dir,
        "b5_damped.csv",
        &reference::oscillator(1.0, 1.0, 0.1, 1.0, 0.0, &b5_times),
    )?;
    Ok(8)
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Markdown tables of every model's variables, from the registry.
fn catalog() -> String {
    use fmu_kit::{Capabilities, Causality, VarType};
    use std::fmt::Write as _;
    let mut out = String::new();
    for spec in cosim_models::registry() {
        let caps = Capabilities::full(spec, FmiVersion::Fmi2);
        let caps3 = Capabilities::full(spec, FmiVersion::Fmi3);
        let _ = writeln!(out, "### {}\n\n{}\n", spec.name, spec.description);
        let interp = if spec.supports(FmiVersion::Fmi2) {
            yes_no(caps.interpolate_inputs)
        } else {
            "n/a (FMI 3 only)"
        };
        let _ = writeln!(
            out,
            "maxOutputDerivativeOrder {}, directional derivatives {}, interpolates inputs (FMI 2) {}, intermediate update (FMI 3) {}, default experiment {} s to {} s, step {} s.\n",
            caps.max_output_derivative_order,
            yes_no(caps.directional_derivatives),
            interp,
            yes_no(caps3.intermediate_update),
            spec.experiment.start_time,
            spec.experiment.stop_time,
            spec.experiment.step_size
        );
        if let Some(me) = &spec.model_exchange {
            let name = |vr| spec.variable(vr).map_or("?", |v| v.name);
            let states: Vec<String> = me
                .states
                .iter()
                .map(|s| format!("{}' = {}", name(s.state), name(s.derivative)))
                .collect();
            let indicators: Vec<&str> = me.event_indicators.iter().map(|&z| name(z)).collect();
            let _ = writeln!(
                out,
                "Model Exchange{}: states {}; event indicators {}; completedIntegratorStep {}; directional derivatives {}.\n",
                if me.co_simulation {
                    " (beside Co-Simulation)"
                } else {
                    " only"
                },
                states.join(", "),
                if indicators.is_empty() {
                    "none".to_string()
                } else {
                    indicators.join(", ")
                },
                if me.needs_completed_integrator_step {
                    "needed"
                } else {
                    "not needed"
                },
                yes_no(caps.directional_derivatives && me.partial_derivatives),
            );
        }
        out.push_str("| vr | name | causality | unit | start | depends on | description |\n|---|---|---|---|---|---|---|\n");
        for v in spec.variables.iter().skip(1) {
            let deps = if v.causality == Causality::Output {
                // The inputs (feed-through): Model Exchange states among
                // the dependencies are listed on the model's line.
                let names: Vec<&str> = v
                    .dependencies
                    .iter()
                    .filter_map(|(d, _)| spec.variable(*d))
                    .filter(|x| x.causality == Causality::Input)
                    .map(|x| x.name)
                    .collect();
                if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                }
            } else {
                String::new()
            };
            let start = match (v.start, v.ty) {
                (Some(s), VarType::Boolean) => {
                    (if s != 0.0 { "true" } else { "false" }).to_string()
                }
                (Some(s), VarType::Real) => format!("{s}"),
                (Some(s), VarType::Float32) => format!("{}", s as f32),
                (Some(s), _) => format!("{}", s as i128),
                (None, _) => String::new(),
            };
            // FMI 2 names where FMI 2 has the type (`(Integer)`), else the
            // FMI 3 one (`(Int8)`); Real / Float64 goes without.
            let causality = match v.ty {
                VarType::Real => v.causality_name().to_string(),
                ty => format!("{} ({})", v.causality_name(), ty.fmi2_name()),
            };
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} | {} |",
                v.vr,
                v.name,
                causality,
                v.unit.map_or("", |u| u.name),
                start,
                deps,
                v.description
            );
        }
        out.push('\n');
    }
    out
}
