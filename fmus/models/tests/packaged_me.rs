//! The PACKAGED Model Exchange FMUs (`fmus/dist/me/`, and the quarter car
//! halves of `fmus/dist/fmi2`, `fmi3`, which have both interfaces), loaded
//! with `libloading` and driven through their C ABI in the Model Exchange
//! calling sequence by the kit's test importer (fixed-step RK4, state
//! events located by bisection: `fmu_kit::testing::model_exchange`),
//! against the references of `cosim_models::reference`; and the strict
//! state machine of the packaged binary.
// This test drives a C ABI: raw function pointers and extern "C" callbacks.
#![allow(unsafe_code)]
#![allow(clippy::expect_used, clippy::panic)]

use std::ffi::{CString, c_char, c_int, c_void};
use std::path::Path;

use cosim_models::reference::{self, QuarterCar};
use cosim_models::{bouncing_ball, quarter_car, robertson, step_events, time_events};
use fmu_kit::testing::model_exchange::{
    Connection, Coupled, EventKind, MeFmu, Run, Settings, simulate,
};
use fmu_kit::{EventUpdate, FmiVersion, StepEvent, dist};
use libloading::Library;

mod common;

use common::{Callbacks2, attr, logged, logger2, logger3};

#[repr(C)]
#[derive(Default)]
struct EventInfo2 {
    new_discrete_states_needed: c_int,
    terminate_simulation: c_int,
    nominals_changed: c_int,
    values_changed: c_int,
    next_event_time_defined: c_int,
    next_event_time: f64,
}

type Inst = *mut c_void;

/// A packaged FMU, unpacked, its library loaded.
struct Fmu {
    _dir: tempfile::TempDir,
    lib: Library,
    version: FmiVersion,
    token: CString,
    xml: String,
}

impl Fmu {
    fn open(path: &Path) -> Fmu {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        zip::ZipArchive::new(file)
            .expect("zip")
            .extract(dir.path())
            .expect("extract");
        let xml = std::fs::read_to_string(dir.path().join("modelDescription.xml")).expect("xml");
        let version = if xml.contains("fmiVersion=\"2.0\"") {
            FmiVersion::Fmi2
        } else {
            FmiVersion::Fmi3
        };
        let token = CString::new(attr(
            &xml,
            match version {
                FmiVersion::Fmi2 => "guid",
                FmiVersion::Fmi3 => "instantiationToken",
            },
        ))
        .expect("token");
        let id = attr(&xml, "modelIdentifier");
        let so = dir
            .path()
            .join("binaries")
            .join(version.platform_dir())
            .join(format!("{id}.so"));
        // SAFETY: loading our own FMU library; its initializers are Rust's.
        let lib = unsafe { Library::new(&so) }.unwrap_or_else(|e| panic!("{}: {e}", so.display()));
        Fmu {
            _dir: dir,
            lib,
            version,
            token,
            xml,
        }
    }

    /// The function `name` of type `T` (its FMI signature).
    fn f<T: Copy>(&self, name: &str) -> T {
        // SAFETY: the caller names T as `name`'s FMI signature.
        *unsafe { self.lib.get::<T>(name.as_bytes()) }.unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// `fmi2Instantiate` with `fmu_type` (0 Model Exchange, 1
    /// Co-Simulation), the test logger, logging off.
    fn instantiate2(&self, fmu_type: c_int) -> Inst {
        let cb = Callbacks2 {
            logger: logger2 as *const c_void,
            allocate: std::ptr::null(),
            free: std::ptr::null(),
            step_finished: std::ptr::null(),
            env: std::ptr::null_mut(),
        };
        type Instantiate2 = unsafe extern "C" fn(
            *const c_char,
            c_int,
            *const c_char,
            *const c_char,
            *const Callbacks2,
            c_int,
            c_int,
        ) -> Inst;
        let f: Instantiate2 = self.f("fmi2Instantiate");
        // SAFETY: valid strings and callbacks (read during the call).
        unsafe {
            f(
                c"me".as_ptr(),
                fmu_type,
                self.token.as_ptr(),
                std::ptr::null(),
                &cb,
                0,
                0,
            )
        }
    }

    fn name(&self, two: &str) -> String {
        match self.version {
            FmiVersion::Fmi2 => two.to_string(),
            FmiVersion::Fmi3 => two.replacen("fmi2", "fmi3", 1),
        }
    }
}

/// A Model Exchange instance of a packaged FMU; freed on drop.
struct Me<'a> {
    fmu: &'a Fmu,
    i: Inst,
    /// The number of continuous states and event indicators.
    n: (usize, usize),
    /// The Real (Float64) variables `observe` reads.
    observed: Vec<u32>,
}

/// The FMI name of each call (FMI 2 form; `Fmu::name` makes FMI 3's).
fn status(s: c_int, what: &str) -> Result<(), String> {
    if s == 0 {
        Ok(())
    } else {
        Err(format!("{what} returned {s}"))
    }
}

impl<'a> Me<'a> {
    /// Instantiated (Model Exchange), initialized with `params` set in
    /// Initialization Mode: in Event Mode.
    fn new(fmu: &'a Fmu, n: (usize, usize), params: &[(u32, f64)], observed: &[u32]) -> Self {
        let i = match fmu.version {
            FmiVersion::Fmi2 => fmu.instantiate2(0),
            FmiVersion::Fmi3 => {
                type Instantiate3 = unsafe extern "C" fn(
                    *const c_char,
                    *const c_char,
                    *const c_char,
                    bool,
                    bool,
                    *mut c_void,
                    *const c_void,
                ) -> Inst;
                let f: Instantiate3 = fmu.f("fmi3InstantiateModelExchange");
                // SAFETY: valid strings; the logger ignores the environment.
                unsafe {
                    f(
                        c"me".as_ptr(),
                        fmu.token.as_ptr(),
                        std::ptr::null(),
                        false,
                        true,
                        std::ptr::null_mut(),
                        logger3 as *const c_void,
                    )
                }
            }
        };
        assert!(!i.is_null(), "Model Exchange instantiation failed");
        let me = Me {
            fmu,
            i,
            n,
            observed: observed.to_vec(),
        };
        // SAFETY: a live instance, FMI signatures.
        unsafe {
            match fmu.version {
                FmiVersion::Fmi2 => {
                    type Setup = unsafe extern "C" fn(Inst, c_int, f64, f64, c_int, f64) -> c_int;
                    let setup: Setup = fmu.f("fmi2SetupExperiment");
                    assert_eq!(setup(i, 0, 0.0, 0.0, 0, 0.0), 0);
                    assert_eq!(me.call0("fmi2EnterInitializationMode"), 0);
                }
                FmiVersion::Fmi3 => {
                    type Enter = unsafe extern "C" fn(Inst, bool, f64, f64, bool, f64) -> c_int;
                    let enter: Enter = fmu.f("fmi3EnterInitializationMode");
                    assert_eq!(enter(i, false, 0.0, 0.0, false, 0.0), 0);
                }
            }
        }
        let vrs: Vec<u32> = params.iter().map(|p| p.0).collect();
        let xs: Vec<f64> = params.iter().map(|p| p.1).collect();
        me.set_reals(&vrs, &xs).expect("parameters");
        assert_eq!(me.call0("fmi2ExitInitializationMode"), 0);
        me
    }

    /// A function of the instance alone (FMI 2 name).
    fn call0(&self, two: &str) -> c_int {
        type F = unsafe extern "C" fn(Inst) -> c_int;
        let f: F = self.fmu.f(&self.fmu.name(two));
        // SAFETY: FMI signature, a live instance.
        unsafe { f(self.i) }
    }

    /// A vector getter (FMI 2 name) of `n` values.
    fn vector(&self, two: &str, n: usize) -> Result<Vec<f64>, String> {
        type F = unsafe extern "C" fn(Inst, *mut f64, usize) -> c_int;
        let name = if self.fmu.version == FmiVersion::Fmi3 && two == "fmi2GetDerivatives" {
            "fmi3GetContinuousStateDerivatives".to_string()
        } else {
            self.fmu.name(two)
        };
        let f: F = self.fmu.f(&name);
        let mut out = vec![0.0; n];
        // SAFETY: an array of n values.
        status(unsafe { f(self.i, out.as_mut_ptr(), n) }, &name)?;
        Ok(out)
    }

    fn set_reals(&self, vrs: &[u32], x: &[f64]) -> Result<(), String> {
        // SAFETY: arrays of the given lengths.
        let s = unsafe {
            match self.fmu.version {
                FmiVersion::Fmi2 => {
                    type F = unsafe extern "C" fn(Inst, *const u32, usize, *const f64) -> c_int;
                    self.fmu.f::<F>("fmi2SetReal")(self.i, vrs.as_ptr(), vrs.len(), x.as_ptr())
                }
                FmiVersion::Fmi3 => {
                    type F =
                        unsafe extern "C" fn(Inst, *const u32, usize, *const f64, usize) -> c_int;
                    self.fmu.f::<F>("fmi3SetFloat64")(
                        self.i,
                        vrs.as_ptr(),
                        vrs.len(),
                        x.as_ptr(),
                        x.len(),
                    )
                }
            }
        };
        status(s, "set")
    }
}

impl Drop for Me<'_> {
    fn drop(&mut self) {
        type F = unsafe extern "C" fn(Inst);
        let f: F = self.fmu.f(&self.fmu.name("fmi2FreeInstance"));
        // SAFETY: frees our instance once.
        unsafe { f(self.i) }
    }
}

impl MeFmu for Me<'_> {
    fn set_time(&mut self, t: f64) -> Result<(), String> {
        type F = unsafe extern "C" fn(Inst, f64) -> c_int;
        let name = self.fmu.name("fmi2SetTime");
        let f: F = self.fmu.f(&name);
        // SAFETY: FMI signature.
        status(unsafe { f(self.i, t) }, &name)
    }
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<(), String> {
        type F = unsafe extern "C" fn(Inst, *const f64, usize) -> c_int;
        let name = self.fmu.name("fmi2SetContinuousStates");
        let f: F = self.fmu.f(&name);
        // SAFETY: an array of the given length.
        status(unsafe { f(self.i, x.as_ptr(), x.len()) }, &name)
    }
    fn continuous_states(&mut self) -> Result<Vec<f64>, String> {
        self.vector("fmi2GetContinuousStates", self.n.0)
    }
    fn derivatives(&mut self) -> Result<Vec<f64>, String> {
        self.vector("fmi2GetDerivatives", self.n.0)
    }
    fn event_indicators(&mut self) -> Result<Vec<f64>, String> {
        self.vector("fmi2GetEventIndicators", self.n.1)
    }
    fn completed_integrator_step(&mut self) -> Result<StepEvent, String> {
        let name = self.fmu.name("fmi2CompletedIntegratorStep");
        match self.fmu.version {
            FmiVersion::Fmi2 => {
                type F = unsafe extern "C" fn(Inst, c_int, *mut c_int, *mut c_int) -> c_int;
                let (mut e, mut t) = (0, 0);
                // SAFETY: valid out-pointers.
                let s = unsafe { self.fmu.f::<F>(&name)(self.i, 1, &mut e, &mut t) };
                status(s, &name)?;
                Ok(StepEvent {
                    enter_event_mode: e != 0,
                    terminate_simulation: t != 0,
                })
            }
            FmiVersion::Fmi3 => {
                type F = unsafe extern "C" fn(Inst, bool, *mut bool, *mut bool) -> c_int;
                let (mut e, mut t) = (false, false);
                // SAFETY: valid out-pointers.
                let s = unsafe { self.fmu.f::<F>(&name)(self.i, true, &mut e, &mut t) };
                status(s, &name)?;
                Ok(StepEvent {
                    enter_event_mode: e,
                    terminate_simulation: t,
                })
            }
        }
    }
    fn enter_event_mode(&mut self) -> Result<(), String> {
        status(self.call0("fmi2EnterEventMode"), "EnterEventMode")
    }
    fn update_discrete_states(&mut self) -> Result<EventUpdate, String> {
        match self.fmu.version {
            FmiVersion::Fmi2 => {
                type F = unsafe extern "C" fn(Inst, *mut EventInfo2) -> c_int;
                let mut info = EventInfo2::default();
                // SAFETY: a valid out-pointer to an fmi2EventInfo.
                let s = unsafe { self.fmu.f::<F>("fmi2NewDiscreteStates")(self.i, &mut info) };
                status(s, "fmi2NewDiscreteStates")?;
                Ok(EventUpdate {
                    discrete_states_need_update: info.new_discrete_states_needed != 0,
                    terminate_simulation: info.terminate_simulation != 0,
                    values_of_continuous_states_changed: info.values_changed != 0,
                    next_event_time: (info.next_event_time_defined != 0)
                        .then_some(info.next_event_time),
                })
            }
            FmiVersion::Fmi3 => {
                type F = unsafe extern "C" fn(
                    Inst,
                    *mut bool,
                    *mut bool,
                    *mut bool,
                    *mut bool,
                    *mut bool,
                    *mut f64,
                ) -> c_int;
                let (mut need, mut term, mut nom, mut val, mut def, mut next) =
                    (false, false, false, false, false, 0.0);
                // SAFETY: valid out-pointers.
                let s = unsafe {
                    self.fmu.f::<F>("fmi3UpdateDiscreteStates")(
                        self.i, &mut need, &mut term, &mut nom, &mut val, &mut def, &mut next,
                    )
                };
                status(s, "fmi3UpdateDiscreteStates")?;
                Ok(EventUpdate {
                    discrete_states_need_update: need,
                    terminate_simulation: term,
                    values_of_continuous_states_changed: val,
                    next_event_time: def.then_some(next),
                })
            }
        }
    }
    fn enter_continuous_time_mode(&mut self) -> Result<(), String> {
        status(
            self.call0("fmi2EnterContinuousTimeMode"),
            "EnterContinuousTimeMode",
        )
    }
    fn observe(&mut self) -> Result<Vec<f64>, String> {
        let vrs = self.observed.clone();
        self.get_reals(&vrs)
    }
    fn get_reals(&mut self, vrs: &[u32]) -> Result<Vec<f64>, String> {
        let mut out = vec![0.0; vrs.len()];
        // SAFETY: arrays of the given lengths.
        let s = unsafe {
            match self.fmu.version {
                FmiVersion::Fmi2 => {
                    type F = unsafe extern "C" fn(Inst, *const u32, usize, *mut f64) -> c_int;
                    self.fmu.f::<F>("fmi2GetReal")(
                        self.i,
                        vrs.as_ptr(),
                        vrs.len(),
                        out.as_mut_ptr(),
                    )
                }
                FmiVersion::Fmi3 => {
                    type F =
                        unsafe extern "C" fn(Inst, *const u32, usize, *mut f64, usize) -> c_int;
                    self.fmu.f::<F>("fmi3GetFloat64")(
                        self.i,
                        vrs.as_ptr(),
                        vrs.len(),
                        out.as_mut_ptr(),
                        out.len(),
                    )
                }
            }
        };
        status(s, "get")?;
        Ok(out)
    }
    fn set_reals(&mut self, vrs: &[u32], values: &[f64]) -> Result<(), String> {
        Me::set_reals(self, vrs, values)
    }
}

fn me_fmu(version: FmiVersion, model: &str) -> Fmu {
    dist::ensure_built().expect("fmus/dist is built");
    Fmu::open(&dist::model_exchange_fmu_path(version, model))
}

fn both_fmu(version: FmiVersion, model: &str) -> Fmu {
    dist::ensure_built().expect("fmus/dist is built");
    let fmu = Fmu::open(&dist::fmu_path(version, model));
    assert!(fmu.xml.contains("<ModelExchange") && fmu.xml.contains("<CoSimulation"));
    fmu
}

fn run(me: &mut Me<'_>, settings: &Settings) -> Run {
    simulate(me, 0.0, settings).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn packaged_bouncing_ball_contacts_are_the_analytic_ones() {
    use bouncing_ball::{H, V};
    let exact = reference::bouncing_ball_contacts(1.0, 0.7, 9.81, 11);
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let fmu = me_fmu(version, "BouncingBallME");
        assert!(!fmu.xml.contains("<CoSimulation"), "Model Exchange only");
        let mut me = Me::new(&fmu, (2, 1), &[], &[H, V]);
        let r = run(&mut me, &Settings::rk4(1e-3, 3.0));
        let contacts = r.event_times(EventKind::State);
        assert_eq!(contacts.len(), 11, "{version:?}");
        for (t, x) in contacts.iter().zip(&exact) {
            assert!(
                (t - x).abs() < 1e-6,
                "{version:?}: contact at {t}, exactly {x}"
            );
        }
        assert_eq!(r.observed.last().map(|o| o[1]), Some(0.0), "at rest");
    }
}

#[test]
fn packaged_robertson_reaches_the_literature_values() {
    let fmu = me_fmu(FmiVersion::Fmi2, "Robertson");
    let mut me = Me::new(&fmu, (3, 0), &[], &[]);
    let r = run(&mut me, &Settings::rk4(5e-4, 40.0));
    for (a, b) in r.final_states().iter().zip(reference::ROBERTSON_T40) {
        assert!(((a - b) / b).abs() < 1e-7, "{a} vs {b}");
    }
    let _ = robertson::Y1;
}

#[test]
fn packaged_time_and_step_events() {
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let fmu = me_fmu(version, "TimeEvents");
        let mut me = Me::new(&fmu, (1, 0), &[], &[time_events::Y, time_events::X]);
        let r = run(&mut me, &Settings::rk4(0.01, 2.0));
        assert_eq!(r.event_times(EventKind::Time).len(), 8);
        for (t, yx) in r.times.iter().zip(&r.observed) {
            let (y, x) = reference::time_events(0.25, *t);
            assert!(
                yx[0] == y && (yx[1] - x).abs() < 1e-12,
                "{version:?}: t = {t}: {yx:?} vs ({y}, {x})"
            );
        }
        let fmu = me_fmu(version, "StepEvents");
        let mut me = Me::new(
            &fmu,
            (1, 0),
            &[(step_events::X_MAX, 0.255)],
            &[step_events::X],
        );
        let r = run(&mut me, &Settings::rk4(0.01, 1.0));
        assert_eq!(r.event_times(EventKind::Step).len(), 3, "{version:?}");
        for (t, x) in r.times.iter().zip(&r.observed) {
            let (xr, _) = reference::step_events(1.0, 0.255, 0.01, *t);
            assert!(
                (x[0] - xr).abs() < 1e-9,
                "{version:?}: x({t}) = {} vs {xr}",
                x[0]
            );
        }
    }
}

#[test]
fn packaged_quarter_car_halves_as_one_ode_are_the_monolithic_reference() {
    use quarter_car::{chassis as c, wheel_suspension as w};
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let (cf, wf) = (
            both_fmu(version, "QuarterCarChassis"),
            both_fmu(version, "QuarterCarWheelSuspension"),
        );
        let mut chassis = Me::new(&cf, (2, 0), &[], &[c::Z_C, c::V_C]);
        let mut wheel = Me::new(&wf, (3, 0), &[], &[w::Z_W, w::V_W]);
        let mut system = Coupled::new(
            vec![&mut chassis, &mut wheel],
            vec![
                Connection {
                    from: (0, c::V_C),
                    to: (1, w::V_C),
                    gain: 1.0,
                },
                Connection {
                    from: (1, w::F_C),
                    to: (0, c::F),
                    gain: -1.0,
                },
            ],
        );
        let r =
            simulate(&mut system, 0.0, &Settings::rk4(1e-4, 1.0)).unwrap_or_else(|e| panic!("{e}"));
        let tr = reference::b1_linear(&QuarterCar::LINEAR, &r.times);
        let cols = ["z_c", "v_c", "z_w", "v_w"].map(|n| tr.column(n).unwrap_or_default());
        for (i, o) in r.observed.iter().enumerate() {
            for (k, col) in cols.iter().enumerate() {
                assert!(
                    (o[k] - col[i]).abs() < 1e-9,
                    "{version:?}: t = {}: {o:?}",
                    r.times[i]
                );
            }
        }
    }
}

#[test]
fn packaged_model_exchange_state_machine_is_strict() {
    // FMI 2: no time in Event Mode but for a pure discrete-time FMU; no
    // Continuous-Time Mode before the event iteration.
    let fmu = me_fmu(FmiVersion::Fmi2, "BouncingBallME");
    let mut me = Me::new(&fmu, (2, 1), &[], &[]);
    assert!(me.set_time(0.1).is_err());
    assert!(logged(
        "fmi2SetTime: Illegal call sequence: called in state Event Mode"
    ));
    assert!(me.enter_continuous_time_mode().is_err());
    assert!(logged(
        "fmi2EnterContinuousTimeMode: Illegal call sequence: fmi2NewDiscreteStates was not called in this Event Mode"
    ));
    assert!(me.completed_integrator_step().is_err());
    assert!(logged(
        "fmi2CompletedIntegratorStep: Illegal call sequence: called in state Event Mode"
    ));
    me.update_discrete_states().expect("update");
    me.enter_continuous_time_mode()
        .expect("continuous-time mode");
    assert!(me.update_discrete_states().is_err());
    assert!(logged(
        "fmi2NewDiscreteStates: Illegal call sequence: called in state Continuous-Time Mode"
    ));
    // FMI 3: no fmi3SetTime in Event Mode at all; a co-simulation function
    // on a Model Exchange instance.
    let fmu = me_fmu(FmiVersion::Fmi3, "TimeEvents");
    let mut me = Me::new(&fmu, (1, 0), &[], &[]);
    assert!(me.set_time(0.0).is_err());
    assert!(logged(
        "fmi3SetTime: Illegal call sequence: called in state Event Mode"
    ));
    assert_eq!(me.call0("fmi3EnterStepMode"), 3);
    // A co-simulation instance of an FMU with both interfaces refuses the
    // Model Exchange functions.
    let cf = both_fmu(FmiVersion::Fmi2, "QuarterCarChassis");
    let cs = cf.instantiate2(1);
    assert!(!cs.is_null());
    type SetTime = unsafe extern "C" fn(Inst, f64) -> c_int;
    type Free = unsafe extern "C" fn(Inst);
    // SAFETY: a live instance, FMI signatures.
    unsafe {
        assert_eq!(cf.f::<SetTime>("fmi2SetTime")(cs, 0.0), 3);
        cf.f::<Free>("fmi2FreeInstance")(cs);
    }
    assert!(logged(
        "fmi2SetTime: model exchange is not supported by this instance"
    ));
}
