//! The raw loop: the floor of the benchmark.
//!
//! A minimal FMI 2.0 importer that makes exactly the FFI calls a Jacobi
//! master must make per macro step, in the same order, and nothing else:
//! for each FMU one batched `fmi2SetReal` of its connected inputs (when it
//! has any), `fmi2DoStep`, one batched `fmi2GetReal` of its connected
//! outputs (when it has any); then every connection `u = gain * y + offset`
//! from flat index arrays. No error context, no observers, no NaN checks,
//! no energy account: only a status comparison per call.
//!
//! Setup (not timed): each distinct `.fmu` file is extracted once with the
//! `zip` crate into a temporary directory and its library loaded once with
//! `libloading` (as `cosim` and libcosim do); every instance is
//! instantiated, set up (`fmi2SetupExperiment`), given its parameters and
//! start values, initialised (enter/exit initialization mode) and its outputs
//! exchanged once. Only the stepping loop is timed.
//!
//! The callback struct passes a logger that does nothing ([`no_log`]): the
//! project's FMUs accept a NULL logger, but others refuse to instantiate
//! without one (the Modelica Reference FMUs' `fmi2Instantiate` returns
//! NULL), and logging is off anyway, so it is called at most on an error.
//!
//! Any FMI 2.0 FMU that runs under the fixed-step Jacobi master can be
//! benchmarked (`--scenario`, [`crate::custom`]): only the connected
//! `Real` inputs are set and the connected `Real` outputs read, whatever
//! else the FMU has; its scalar `Real` and `Integer` parameters and start
//! values are set before initialization as `cosim` sets them.
#![allow(unsafe_code)]

use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use libloading::Library;

use crate::plan::Plan;

type Component = *mut c_void;
type Status = c_int;
const OK: Status = 0;
const WARNING: Status = 1;

/// `fmi2CallbackFunctions`: every function pointer as a nullable pointer.
#[repr(C)]
struct CallbackFunctions {
    logger: Option<Logger>,
    allocate_memory: Option<unsafe extern "C" fn(usize, usize) -> *mut c_void>,
    free_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    step_finished: *const c_void,
    component_environment: *mut c_void,
}

/// `fmi2CallbackLogger` without its variadic tail: the logger ignores every
/// argument, so it needs none of the variadic ones (a C-variadic function
/// cannot be defined in stable Rust; on the Linux ABIs the benchmark runs on,
/// a variadic call passes the fixed arguments as a plain call does, and the
/// callee reads no more of them).
type Logger =
    unsafe extern "C" fn(*mut c_void, *const c_char, Status, *const c_char, *const c_char);

/// The logger the raw loop hands over: ignores every message.
unsafe extern "C" fn no_log(
    _env: *mut c_void,
    _instance: *const c_char,
    _status: Status,
    _category: *const c_char,
    _message: *const c_char,
) {
}

unsafe extern "C" {
    fn calloc(n: usize, size: usize) -> *mut c_void;
    fn free(p: *mut c_void);
}

type Instantiate = unsafe extern "C" fn(
    *const c_char,
    c_int,
    *const c_char,
    *const c_char,
    *const CallbackFunctions,
    c_int,
    c_int,
) -> Component;
type SetupExperiment = unsafe extern "C" fn(Component, c_int, f64, f64, c_int, f64) -> Status;
type ComponentOnly = unsafe extern "C" fn(Component) -> Status;
type FreeInstance = unsafe extern "C" fn(Component);
type GetReal = unsafe extern "C" fn(Component, *const c_uint, usize, *mut f64) -> Status;
type SetReal = unsafe extern "C" fn(Component, *const c_uint, usize, *const f64) -> Status;
type SetInteger = unsafe extern "C" fn(Component, *const c_uint, usize, *const c_int) -> Status;
type DoStep = unsafe extern "C" fn(Component, f64, f64, c_int) -> Status;

/// The FMI 2.0 functions of one loaded library.
#[derive(Clone, Copy)]
struct Functions {
    instantiate: Instantiate,
    setup_experiment: SetupExperiment,
    enter_initialization_mode: ComponentOnly,
    exit_initialization_mode: ComponentOnly,
    terminate: ComponentOnly,
    free_instance: FreeInstance,
    get_real: GetReal,
    set_real: SetReal,
    set_integer: SetInteger,
    do_step: DoStep,
}

impl Functions {
    fn load(lib: &Library) -> Result<Self> {
        /// Resolves one symbol as a function pointer of type `T`.
        fn sym<T: Copy>(lib: &Library, name: &str) -> Result<T> {
            // SAFETY: every call site names an FMI 2.0 function together
            // with the signature the standard gives it.
            let s = unsafe { lib.get::<T>(name.as_bytes()) }
                .with_context(|| format!("missing FMI function {name}"))?;
            Ok(*s)
        }
        Ok(Functions {
            instantiate: sym(lib, "fmi2Instantiate")?,
            setup_experiment: sym(lib, "fmi2SetupExperiment")?,
            enter_initialization_mode: sym(lib, "fmi2EnterInitializationMode")?,
            exit_initialization_mode: sym(lib, "fmi2ExitInitializationMode")?,
            terminate: sym(lib, "fmi2Terminate")?,
            free_instance: sym(lib, "fmi2FreeInstance")?,
            get_real: sym(lib, "fmi2GetReal")?,
            set_real: sym(lib, "fmi2SetReal")?,
            set_integer: sym(lib, "fmi2SetInteger")?,
            do_step: sym(lib, "fmi2DoStep")?,
        })
    }
}

fn check(status: Status, what: &str, fmu: &str) -> Result<()> {
    if status == OK || status == WARNING {
        Ok(())
    } else {
        bail!("{fmu}: {what} returned status {status}")
    }
}

/// One instance with its slot arrays.
struct Slot {
    f: Functions,
    c: Component,
    name: String,
    in_vrs: Vec<c_uint>,
    u: Vec<f64>,
    out_vrs: Vec<c_uint>,
    y: Vec<f64>,
}

/// A compiled connection: `fmus[dst].u[dst_slot] = gain * fmus[src].y[src_slot] + offset`.
#[derive(Clone, Copy)]
struct Route {
    src: usize,
    src_slot: usize,
    dst: usize,
    dst_slot: usize,
    gain: f64,
    offset: f64,
}

/// Extracted and loaded libraries, kept alive while instances exist
/// (fields drop in order: the libraries are unloaded before their
/// directories are removed).
struct Loaded {
    /// (`.fmu` file, its library, its extraction directory).
    libs: Vec<(PathBuf, Library, PathBuf)>,
    _dirs: Vec<tempfile::TempDir>,
}

fn extract(fmu: &Path) -> Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("cosim-bench-raw-")
        .tempdir()
        .context("temporary directory")?;
    let file = std::fs::File::open(fmu).with_context(|| format!("open {}", fmu.display()))?;
    let mut zip = zip::ZipArchive::new(file).with_context(|| format!("read {}", fmu.display()))?;
    zip.extract(dir.path())
        .with_context(|| format!("extract {}", fmu.display()))?;
    Ok(dir)
}

/// What one run of the raw loop gives.
#[derive(Debug)]
pub struct RawRun {
    /// Wall time of the stepping loop.
    pub elapsed: Duration,
    /// Per FMU: the connected outputs at the end, as (value reference, value).
    pub outputs: Vec<Vec<(u32, f64)>>,
}

/// Runs `plan` once.
pub fn run(plan: &Plan) -> Result<RawRun> {
    let mut loaded = Loaded {
        libs: Vec::new(),
        _dirs: Vec::new(),
    };
    let mut fns = Vec::with_capacity(plan.fmus.len());
    for f in &plan.fmus {
        let idx = match loaded.libs.iter().position(|(p, _, _)| *p == f.path) {
            Some(i) => i,
            None => {
                let dir = extract(&f.path)?;
                let so = dir
                    .path()
                    .join("binaries")
                    .join("linux64")
                    .join(format!("{}.so", f.model_identifier));
                // SAFETY: loading runs the library's initialisers; the FMUs
                // benchmarked are the project's own or the user's (`--scenario`).
                let lib = unsafe { Library::new(&so) }
                    .with_context(|| format!("load {}", so.display()))?;
                let root = dir.path().to_path_buf();
                loaded._dirs.push(dir);
                loaded.libs.push((f.path.clone(), lib, root));
                loaded.libs.len() - 1
            }
        };
        let (_, lib, root) = &loaded.libs[idx];
        fns.push((Functions::load(lib)?, root.join("resources")));
    }

    let callbacks = CallbackFunctions {
        logger: Some(no_log),
        allocate_memory: Some(calloc),
        free_memory: Some(free),
        step_finished: std::ptr::null(),
        component_environment: std::ptr::null_mut(),
    };
    let mut slots: Vec<Slot> = Vec::with_capacity(plan.fmus.len());
    // Time in integer nanoseconds, as cosim (and libcosim) keep it.
    let ns = |t: f64| (t * 1e9).round() as i64;
    let (start_ns, h_ns) = (ns(plan.start), ns(plan.step));
    let point = |n: u64| (start_ns + n as i64 * h_ns) as f64 / 1e9;
    let stop = point(plan.steps);
    let result = (|| -> Result<RawRun> {
        for (pf, (f, resources)) in plan.fmus.iter().zip(&fns) {
            let name = CString::new(pf.name.as_str())?;
            let guid = CString::new(pf.guid.as_str())?;
            let uri = CString::new(format!("file://{}", resources.display()))?;
            // SAFETY: NUL-terminated strings and a callback struct that
            // outlive the instance (`callbacks` lives until the end of `run`).
            let c = unsafe {
                (f.instantiate)(
                    name.as_ptr(),
                    1,
                    guid.as_ptr(),
                    uri.as_ptr(),
                    &callbacks,
                    0,
                    0,
                )
            };
            if c.is_null() {
                bail!("{}: fmi2Instantiate returned NULL", pf.name);
            }
            slots.push(Slot {
                f: *f,
                c,
                name: pf.name.clone(),
                in_vrs: Vec::new(),
                u: Vec::new(),
                out_vrs: Vec::new(),
                y: Vec::new(),
            });
            let s = slots.last_mut().context("slot")?;
            // The standard's order: setup first, then parameters and start
            // values (some exporters reset parameters in the setup).
            // SAFETY: live instance.
            let st = unsafe { (s.f.setup_experiment)(s.c, 0, 0.0, plan.start, 1, stop) };
            check(st, "fmi2SetupExperiment", &s.name)?;
            for v in &pf.values {
                let vr = [v.vr];
                let status = if v.kind == "integer" {
                    let x = [v.value as c_int];
                    // SAFETY: one value reference and one value.
                    unsafe { (s.f.set_integer)(s.c, vr.as_ptr(), 1, x.as_ptr()) }
                } else {
                    let x = [v.value];
                    // SAFETY: one value reference and one value.
                    unsafe { (s.f.set_real)(s.c, vr.as_ptr(), 1, x.as_ptr()) }
                };
                check(status, "setting a start value", &s.name)?;
            }
        }
        // Slots: inputs in connection order; outputs deduplicated.
        let mut routes = Vec::with_capacity(plan.connections.len());
        for c in &plan.connections {
            let src = &mut slots[c.from_fmu];
            let src_slot = match src.out_vrs.iter().position(|&v| v == c.from_vr) {
                Some(i) => i,
                None => {
                    src.out_vrs.push(c.from_vr);
                    src.y.push(0.0);
                    src.out_vrs.len() - 1
                }
            };
            let dst = &mut slots[c.to_fmu];
            dst.in_vrs.push(c.to_vr);
            dst.u.push(0.0);
            routes.push(Route {
                src: c.from_fmu,
                src_slot,
                dst: c.to_fmu,
                dst_slot: dst.in_vrs.len() - 1,
                gain: c.gain,
                offset: c.offset,
            });
        }
        for s in &slots {
            // SAFETY: live instance.
            let st = unsafe { (s.f.enter_initialization_mode)(s.c) };
            check(st, "fmi2EnterInitializationMode", &s.name)?;
        }
        for s in &slots {
            // SAFETY: live instance.
            let st = unsafe { (s.f.exit_initialization_mode)(s.c) };
            check(st, "fmi2ExitInitializationMode", &s.name)?;
        }
        for s in &mut slots {
            if !s.out_vrs.is_empty() {
                // SAFETY: out_vrs and y have the same length.
                let st = unsafe {
                    (s.f.get_real)(s.c, s.out_vrs.as_ptr(), s.out_vrs.len(), s.y.as_mut_ptr())
                };
                check(st, "fmi2GetReal", &s.name)?;
            }
        }
        exchange(&mut slots, &routes);

        let started = Instant::now();
        for n in 0..plan.steps {
            // Communication points n h in whole nanoseconds and the step
            // between them, as cosim's fixed-step master.
            let t = point(n);
            let dt = point(n + 1) - t;
            for s in slots.iter_mut() {
                // SAFETY: live instance; each vr array has the length of
                // its value array (all three calls).
                unsafe {
                    if !s.in_vrs.is_empty()
                        && (s.f.set_real)(s.c, s.in_vrs.as_ptr(), s.in_vrs.len(), s.u.as_ptr())
                            > WARNING
                    {
                        bail!("{}: fmi2SetReal failed at t = {t}", s.name);
                    }
                    if (s.f.do_step)(s.c, t, dt, 1) > WARNING {
                        bail!("{}: fmi2DoStep failed at t = {t}", s.name);
                    }
                    if !s.out_vrs.is_empty()
                        && (s.f.get_real)(
                            s.c,
                            s.out_vrs.as_ptr(),
                            s.out_vrs.len(),
                            s.y.as_mut_ptr(),
                        ) > WARNING
                    {
                        bail!("{}: fmi2GetReal failed at t = {t}", s.name);
                    }
                }
            }
            exchange(&mut slots, &routes);
        }
        let elapsed = started.elapsed();
        for s in &slots {
            // SAFETY: live instance.
            let st = unsafe { (s.f.terminate)(s.c) };
            check(st, "fmi2Terminate", &s.name)?;
        }
        let outputs = slots
            .iter()
            .map(|s| s.out_vrs.iter().copied().zip(s.y.iter().copied()).collect())
            .collect();
        Ok(RawRun { elapsed, outputs })
    })();
    for s in &slots {
        // SAFETY: live instance, freed once; the library is still loaded.
        unsafe { (s.f.free_instance)(s.c) };
    }
    drop(loaded);
    result
}

/// Every connection, from flat index arrays.
#[inline]
fn exchange(slots: &mut [Slot], routes: &[Route]) {
    for r in routes {
        let v = r.gain * slots[r.src].y[r.src_slot] + r.offset;
        slots[r.dst].u[r.dst_slot] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan;

    /// The floor does the work cosim does: same calls, same numbers, bit
    /// for bit (B1 is sensitive to every rounding of the step size).
    #[test]
    fn raw_loop_reproduces_cosim_bit_for_bit() {
        fmu_kit::dist::ensure_built().unwrap();
        let file = crate::scenario_path("b1_quarter_car");
        let steps = 1500;
        let p = plan::plan(&file, steps).unwrap();
        let raw = run(&p).unwrap();

        let text = std::fs::read_to_string(&file).unwrap();
        let head = text.split("[outputs]").next().unwrap();
        let text = format!("{head}[outputs]\nvariables = [\"chassis.v_c\", \"wheel.F_c\"]\n");
        let mut scenario = cosim_scenario::Scenario::from_str(&text, &file).unwrap();
        let out = tempfile::tempdir().unwrap();
        let mut overrides = plan::overrides_for(p.start, p.step, steps);
        overrides.out = Some(out.path().to_path_buf());
        scenario.apply_overrides(&overrides).unwrap();
        let prepared = cosim_scenario::runner::prepare_scenario(&scenario, Some(1)).unwrap();
        let outcome = cosim_scenario::runner::run(prepared, Vec::new(), None).unwrap();
        assert!(outcome.error.is_none());
        let trace = std::fs::read_to_string(out.path().join("trace.csv")).unwrap();
        let last: Vec<f64> = trace
            .lines()
            .last()
            .unwrap()
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        assert!((last[0] - steps as f64 * p.step).abs() < 1e-9);
        // chassis: v_c is its only connected output; wheel: F_c.
        let v_c = raw.outputs[0][0].1;
        let f_c = raw.outputs[1][0].1;
        assert_eq!(
            v_c.to_bits(),
            last[1].to_bits(),
            "chassis.v_c {v_c} vs {}",
            last[1]
        );
        assert_eq!(
            f_c.to_bits(),
            last[2].to_bits(),
            "wheel.F_c {f_c} vs {}",
            last[2]
        );
        assert!(v_c != 0.0 && f_c != 0.0);
    }
}

#[cfg(test)]
mod cgain_tests {
    /// CGain (fmus/cgain, C) runs under cosim as FMI 2.0 and as FMI 3.0:
    /// a chain of two, g2.y = k2 k1 u1 exactly.
    #[test]
    fn cgain_runs_as_fmi2_and_fmi3() {
        let (fmi2, fmi3) = cosim_cgain::install().unwrap();
        for fmu in [fmi2, fmi3] {
            let dir = tempfile::tempdir().unwrap();
            let text = format!(
                r#"
[simulation]
start = 0.0
stop = 0.01
[master]
kind = "fixed-step"
step = 1e-3
[[subsystems]]
name = "g1"
fmu = "{fmu}"
parameters = {{ k = 2.0 }}
start = {{ u = 1.5 }}
[[subsystems]]
name = "g2"
fmu = "{fmu}"
parameters = {{ k = -0.5 }}
[[connections]]
from = "g1.y"
to = "g2.u"
[outputs]
dir = "{out}"
variables = ["g1.y", "g2.y"]
"#,
                fmu = fmu.display(),
                out = dir.path().display()
            );
            let file = dir.path().join("s.toml");
            std::fs::write(&file, &text).unwrap();
            let scenario = cosim_scenario::Scenario::load(&file).unwrap();
            let prepared = cosim_scenario::runner::prepare_scenario(&scenario, Some(1)).unwrap();
            let outcome = cosim_scenario::runner::run(prepared, Vec::new(), None).unwrap();
            assert!(
                outcome.error.is_none(),
                "{}: {:?}",
                fmu.display(),
                outcome.error
            );
            assert_eq!(outcome.summary.stats.macro_steps, 10);
            let trace = std::fs::read_to_string(dir.path().join("trace.csv")).unwrap();
            let last = trace.lines().last().unwrap();
            assert_eq!(last, "0.01,3.0,-1.5", "{}", fmu.display());
        }
    }
}
