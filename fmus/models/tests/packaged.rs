//! Loads the PACKAGED `.fmu` files from `fmus/dist` (built on demand by
//! `fmu_kit::dist::ensure_built`) with plain `libloading` calls and runs full
//! FMI 2 and FMI 3 cycles through the C ABI.
// This test drives a C ABI: raw function pointers and extern "C" callbacks.
#![allow(unsafe_code)]
#![allow(clippy::too_many_arguments)]
// Test helpers outside #[test] functions may panic on setup failures.
#![allow(clippy::expect_used, clippy::panic, clippy::type_complexity)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fmu_kit::{FmiVersion, Variant, dist};
use libloading::{Library, Symbol};

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn logged(needle: &str) -> bool {
    LOG.lock()
        .is_ok_and(|l| l.iter().any(|m| m.contains(needle)))
}

/// Stand-in for the C-variadic fmi2 logger; on x86-64 System V a variadic
/// call passes its arguments like this prototyped one. The kit always calls
/// it with format "%s" and the message as the one variadic argument.
extern "C" fn logger2(
    _env: *mut c_void,
    _name: *const c_char,
    _status: c_int,
    _category: *const c_char,
    fmt: *const c_char,
    msg: *const c_char,
) {
    // SAFETY: the FMU passes NUL-terminated strings.
    let (fmt, msg) = unsafe { (CStr::from_ptr(fmt), CStr::from_ptr(msg)) };
    assert_eq!(fmt.to_bytes(), b"%s");
    if let Ok(mut l) = LOG.lock() {
        l.push(msg.to_string_lossy().into_owned());
    }
}

extern "C" fn logger3(
    _env: *mut c_void,
    _status: c_int,
    _category: *const c_char,
    msg: *const c_char,
) {
    // SAFETY: the FMU passes a NUL-terminated string.
    let msg = unsafe { CStr::from_ptr(msg) };
    if let Ok(mut l) = LOG.lock() {
        l.push(msg.to_string_lossy().into_owned());
    }
}

#[repr(C)]
struct Callbacks2 {
    logger: *const c_void,
    allocate: *const c_void,
    free: *const c_void,
    step_finished: *const c_void,
    env: *mut c_void,
}

/// An unpacked FMU with its library loaded.
struct Fmu {
    _dir: tempfile::TempDir,
    lib: Library,
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
        let id = attr(&xml, "modelIdentifier");
        let platform = if xml.contains("fmiVersion=\"2.0\"") {
            "linux64"
        } else {
            "x86_64-linux"
        };
        let so = dir
            .path()
            .join("binaries")
            .join(platform)
            .join(format!("{id}.so"));
        // SAFETY: loading our own FMU library; its initializers are Rust's.
        let lib = unsafe { Library::new(&so) }.unwrap_or_else(|e| panic!("{}: {e}", so.display()));
        Fmu {
            _dir: dir,
            lib,
            xml,
        }
    }

    fn sym<T>(&self, name: &str) -> Symbol<'_, T> {
        // SAFETY: the type T is the FMI signature of `name`.
        unsafe { self.lib.get(name.as_bytes()) }.unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn token(&self) -> CString {
        let key = if self.xml.contains("fmiVersion=\"2.0\"") {
            "guid"
        } else {
            "instantiationToken"
        };
        CString::new(attr(&self.xml, key)).expect("token")
    }
}

fn attr(xml: &str, name: &str) -> String {
    let key = format!("{name}=\"");
    let start = xml.find(&key).map(|i| i + key.len()).expect("attribute");
    xml[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_string()
}

fn dist_dir() -> PathBuf {
    dist::ensure_built().expect("fmus/dist is built")
}

type Inst = *mut c_void;
type Status0 = unsafe extern "C" fn(Inst) -> c_int;
type GetReal2 = unsafe extern "C" fn(Inst, *const u32, usize, *mut f64) -> c_int;
type SetReal2 = unsafe extern "C" fn(Inst, *const u32, usize, *const f64) -> c_int;
type State2 = unsafe extern "C" fn(Inst, *mut *mut c_void) -> c_int;
type SetState2 = unsafe extern "C" fn(Inst, *mut c_void) -> c_int;

struct Fmi2<'a> {
    fmu: &'a Fmu,
    c: Inst,
}

impl<'a> Fmi2<'a> {
    fn instantiate(fmu: &'a Fmu) -> Self {
        let inst: Symbol<
            unsafe extern "C" fn(
                *const c_char,
                c_int,
                *const c_char,
                *const c_char,
                *const Callbacks2,
                c_int,
                c_int,
            ) -> Inst,
        > = fmu.sym("fmi2Instantiate");
        let cb = Callbacks2 {
            logger: logger2 as *const c_void,
            allocate: std::ptr::null(),
            free: std::ptr::null(),
            step_finished: std::ptr::null(),
            env: std::ptr::null_mut(),
        };
        let tok = fmu.token();
        // SAFETY: valid strings and callback struct (read during the call only).
        let c = unsafe {
            inst(
                c"packaged".as_ptr(),
                1,
                tok.as_ptr(),
                std::ptr::null(),
                &cb,
                0,
                0,
            )
        };
        assert!(!c.is_null(), "fmi2Instantiate failed");
        Fmi2 { fmu, c }
    }
    fn call(&self, name: &str) -> c_int {
        // SAFETY: FMI signature.
        unsafe { self.fmu.sym::<Status0>(name)(self.c) }
    }
    fn setup(&self) -> c_int {
        let f: Symbol<unsafe extern "C" fn(Inst, c_int, f64, f64, c_int, f64) -> c_int> =
            self.fmu.sym("fmi2SetupExperiment");
        // SAFETY: FMI signature.
        unsafe { f(self.c, 0, 0.0, 0.0, 0, 0.0) }
    }
    fn set(&self, vr: u32, x: f64) -> c_int {
        // SAFETY: one-element arrays.
        unsafe { self.fmu.sym::<SetReal2>("fmi2SetReal")(self.c, &vr, 1, &x) }
    }
    fn get(&self, vr: u32) -> f64 {
        let mut x = f64::NAN;
        // SAFETY: one-element arrays.
        let status = unsafe { self.fmu.sym::<GetReal2>("fmi2GetReal")(self.c, &vr, 1, &mut x) };
        assert_eq!(status, 0);
        x
    }
    fn step(&self, t: f64, h: f64) -> c_int {
        let f: Symbol<unsafe extern "C" fn(Inst, f64, f64, c_int) -> c_int> =
            self.fmu.sym("fmi2DoStep");
        // SAFETY: FMI signature.
        unsafe { f(self.c, t, h, 1) }
    }
    fn get_state(&self, s: &mut *mut c_void) -> c_int {
        // SAFETY: s points to one FMU-state slot.
        unsafe { self.fmu.sym::<State2>("fmi2GetFMUstate")(self.c, s) }
    }
    fn set_state(&self, s: *mut c_void) -> c_int {
        // SAFETY: FMI signature.
        unsafe { self.fmu.sym::<SetState2>("fmi2SetFMUstate")(self.c, s) }
    }
}

impl Drop for Fmi2<'_> {
    fn drop(&mut self) {
        let f: Symbol<unsafe extern "C" fn(Inst)> = self.fmu.sym("fmi2FreeInstance");
        // SAFETY: frees our instance once.
        unsafe { f(self.c) }
    }
}

#[test]
fn fmi2_integrator_full_cycle_with_state_and_input_derivatives() {
    use cosim_models::generic::integrator::{U, X, X0};
    let fmu = Fmu::open(&dist_dir().join("fmi2").join("Integrator.fmu"));
    assert!(fmu.xml.contains("canInterpolateInputs=\"true\""));
    let s = Fmi2::instantiate(&fmu);
    assert_eq!(s.setup(), 0);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.set(X0, 1.0), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
    assert_eq!(s.set(U, 1.0), 0);
    let set_der: Symbol<
        unsafe extern "C" fn(Inst, *const u32, usize, *const c_int, *const f64) -> c_int,
    > = fmu.sym("fmi2SetRealInputDerivatives");
    // SAFETY: arrays of length 1.
    assert_eq!(unsafe { set_der(s.c, &U, 1, &1, &2.0) }, 0);
    assert_eq!(s.step(0.0, 1.0), 0);
    assert_eq!(s.get(X), 3.0); // 1 + int_0^1 (1 + 2t) dt
    let mut st: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st), 0);
    assert_eq!(s.set(U, 0.5), 0);
    assert_eq!(s.step(1.0, 0.5), 0);
    let first = s.get(X).to_bits();
    assert_eq!(s.set_state(st), 0);
    assert_eq!(s.set(U, 0.5), 0);
    assert_eq!(s.step(1.0, 0.5), 0);
    assert_eq!(s.get(X).to_bits(), first);
    // Output derivative: dx/dt = u.
    let get_der: Symbol<
        unsafe extern "C" fn(Inst, *const u32, usize, *const c_int, *mut f64) -> c_int,
    > = fmu.sym("fmi2GetRealOutputDerivatives");
    let mut d = 0.0;
    // SAFETY: arrays of length 1.
    assert_eq!(unsafe { get_der(s.c, &X, 1, &1, &mut d) }, 0);
    assert_eq!(d, 0.5);
    let free: Symbol<State2> = fmu.sym("fmi2FreeFMUstate");
    // SAFETY: frees our state.
    assert_eq!(unsafe { free(s.c, &mut st) }, 0);
    assert_eq!(s.call("fmi2Terminate"), 0);
}

#[test]
fn fmi2_nostate_variant_refuses_fmu_state() {
    let fmu = Fmu::open(
        &dist_dir()
            .join("variants")
            .join("QuarterCarChassis-nostate.fmu"),
    );
    assert!(fmu.xml.contains("canGetAndSetFMUstate=\"false\""));
    assert!(fmu.xml.contains("canSerializeFMUstate=\"false\""));
    assert!(
        fmu.xml
            .contains("modelIdentifier=\"QuarterCarChassis_nostate\"")
    );
    let s = Fmi2::instantiate(&fmu);
    assert_eq!(s.setup(), 0);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
    assert_eq!(s.step(0.0, 1e-3), 0);
    let mut st: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st), 3);
    assert!(st.is_null());
    assert!(logged(
        "capability canGetAndSetFMUstate is disabled in this build"
    ));
    // Still steps normally afterwards.
    assert_eq!(s.step(1e-3, 1e-3), 0);
    assert_eq!(s.call("fmi2Terminate"), 0);
}

#[test]
fn fmi2_variants_declare_and_refuse() {
    let dir = dist_dir();
    let fixed = Fmu::open(&dir.join("variants").join("TwoMassS1-fixedstep.fmu"));
    assert!(
        fixed
            .xml
            .contains("canHandleVariableCommunicationStepSize=\"false\"")
    );
    let s = Fmi2::instantiate(&fixed);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
    assert_eq!(s.step(0.0, 1e-3), 0);
    assert_eq!(s.step(1e-3, 2e-3), 3);
    assert!(logged(
        "capability canHandleVariableCommunicationStepSize is disabled in this build"
    ));
    let noderiv = Fmu::open(&dir.join("variants").join("B2WheelDD-noderiv.fmu"));
    assert!(noderiv.xml.contains("maxOutputDerivativeOrder=\"0\""));
    assert!(
        noderiv
            .xml
            .contains("providesDirectionalDerivative=\"false\"")
    );
    let nointerp = Fmu::open(
        &dir.join("variants")
            .join("QuarterCarWheelSuspension-nointerp.fmu"),
    );
    assert!(nointerp.xml.contains("canInterpolateInputs=\"false\""));
    let s = Fmi2::instantiate(&nointerp);
    let set_der: Symbol<
        unsafe extern "C" fn(Inst, *const u32, usize, *const c_int, *const f64) -> c_int,
    > = nointerp.sym("fmi2SetRealInputDerivatives");
    // SAFETY: arrays of length 1.
    assert_eq!(unsafe { set_der(s.c, &1, 1, &1, &2.0) }, 3);
    assert!(logged(
        "capability canInterpolateInputs is disabled in this build"
    ));
}

#[test]
fn fmi2_bad_parameter_is_an_error_with_a_message() {
    use cosim_models::quarter_car::chassis::M_C;
    let fmu = Fmu::open(&dist_dir().join("fmi2").join("QuarterCarChassis.fmu"));
    let s = Fmi2::instantiate(&fmu);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.set(M_C, -1.0), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 3);
    assert!(logged(
        "fmi2ExitInitializationMode: m_c must be > 0, got -1"
    ));
    assert_eq!(s.step(0.0, 1e-3), 3);
    let micro = Fmu::open(&dist_dir().join("fmi2").join("QuarterCarWheel.fmu"));
    let s = Fmi2::instantiate(&micro);
    let set_int: Symbol<unsafe extern "C" fn(Inst, *const u32, usize, *const c_int) -> c_int> =
        micro.sym("fmi2SetInteger");
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    // SAFETY: arrays of length 1.
    let status = unsafe { set_int(s.c, &cosim_models::quarter_car::wheel::MICRO_STEPS, 1, &0) };
    assert_eq!(status, 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 3);
    assert!(logged("micro_steps must be >= 1, got 0"));
}

#[test]
fn fmi3_chassis_full_cycle_with_serialized_state() {
    use cosim_models::quarter_car::chassis::{F, V_C, Z_C};
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("QuarterCarChassis.fmu"));
    assert!(fmu.xml.contains("fmiVersion=\"3.0\""));
    let inst: Symbol<
        unsafe extern "C" fn(
            *const c_char,
            *const c_char,
            *const c_char,
            bool,
            bool,
            bool,
            bool,
            *const u32,
            usize,
            *mut c_void,
            *const c_void,
            *mut c_void,
        ) -> Inst,
    > = fmu.sym("fmi3InstantiateCoSimulation");
    let tok = fmu.token();
    let null = std::ptr::null_mut();
    // SAFETY: valid strings; the callback outlives the instance.
    let i = unsafe {
        inst(
            c"i3".as_ptr(),
            tok.as_ptr(),
            std::ptr::null(),
            false,
            true,
            false,
            false,
            std::ptr::null(),
            0,
            null,
            logger3 as *const c_void,
            null,
        )
    };
    assert!(!i.is_null());
    let enter: Symbol<unsafe extern "C" fn(Inst, bool, f64, f64, bool, f64) -> c_int> =
        fmu.sym("fmi3EnterInitializationMode");
    let exit: Symbol<Status0> = fmu.sym("fmi3ExitInitializationMode");
    let set: Symbol<unsafe extern "C" fn(Inst, *const u32, usize, *const f64, usize) -> c_int> =
        fmu.sym("fmi3SetFloat64");
    let get: Symbol<unsafe extern "C" fn(Inst, *const u32, usize, *mut f64, usize) -> c_int> =
        fmu.sym("fmi3GetFloat64");
    let step: Symbol<
        unsafe extern "C" fn(
            Inst,
            f64,
            f64,
            bool,
            *mut bool,
            *mut bool,
            *mut bool,
            *mut f64,
        ) -> c_int,
    > = fmu.sym("fmi3DoStep");
    let get_state: Symbol<State2> = fmu.sym("fmi3GetFMUState");
    let set_state: Symbol<SetState2> = fmu.sym("fmi3SetFMUState");
    let size: Symbol<unsafe extern "C" fn(Inst, *mut c_void, *mut usize) -> c_int> =
        fmu.sym("fmi3SerializedFMUStateSize");
    let ser: Symbol<unsafe extern "C" fn(Inst, *mut c_void, *mut u8, usize) -> c_int> =
        fmu.sym("fmi3SerializeFMUState");
    let de: Symbol<unsafe extern "C" fn(Inst, *const u8, usize, *mut *mut c_void) -> c_int> =
        fmu.sym("fmi3DeserializeFMUState");
    let free_state: Symbol<State2> = fmu.sym("fmi3FreeFMUState");
    // SAFETY: every pointer below is valid for the call.
    unsafe {
        assert_eq!(enter(i, false, 0.0, 0.0, false, 0.0), 0);
        assert_eq!(exit(i), 0);
        let (mut e, mut term, mut early, mut last) = (false, false, false, 0.0);
        assert_eq!(set(i, &F, 1, &400.0, 1), 0);
        assert_eq!(
            step(i, 0.0, 0.5, false, &mut e, &mut term, &mut early, &mut last),
            0
        );
        assert_eq!(last, 0.5);
        let mut vz = [0.0; 2];
        assert_eq!(get(i, [V_C, Z_C].as_ptr(), 2, vz.as_mut_ptr(), 2), 0);
        assert_eq!(vz, [0.5, 0.125]);
        let mut st: *mut c_void = null;
        assert_eq!(get_state(i, &mut st), 0);
        let mut n = 0usize;
        assert_eq!(size(i, st, &mut n), 0);
        let mut bytes = vec![0u8; n];
        assert_eq!(ser(i, st, bytes.as_mut_ptr(), n), 0);
        assert_eq!(
            step(i, 0.5, 0.5, false, &mut e, &mut term, &mut early, &mut last),
            0
        );
        let mut after = [0.0; 2];
        assert_eq!(get(i, [V_C, Z_C].as_ptr(), 2, after.as_mut_ptr(), 2), 0);
        let mut st2: *mut c_void = null;
        assert_eq!(de(i, bytes.as_ptr(), n, &mut st2), 0);
        assert_eq!(set_state(i, st2), 0);
        assert_eq!(
            step(i, 0.5, 0.5, false, &mut e, &mut term, &mut early, &mut last),
            0
        );
        let mut again = [0.0; 2];
        assert_eq!(get(i, [V_C, Z_C].as_ptr(), 2, again.as_mut_ptr(), 2), 0);
        assert_eq!(after.map(f64::to_bits), again.map(f64::to_bits));
        assert_eq!(free_state(i, &mut st), 0);
        assert_eq!(free_state(i, &mut st2), 0);
        // Model exchange is exported and refused.
        let me: Symbol<Status0> = fmu.sym("fmi3EnterContinuousTimeMode");
        assert_eq!(me(i), 3);
        let term_fn: Symbol<Status0> = fmu.sym("fmi3Terminate");
        assert_eq!(term_fn(i), 0);
        let free: Symbol<unsafe extern "C" fn(Inst)> = fmu.sym("fmi3FreeInstance");
        free(i);
    }
    assert!(logged("model exchange is not supported"));
}

#[test]
fn fmi3_refuses_an_fmi2_token_and_unknown_models() {
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("Gain.fmu"));
    let fmi2 = Fmu::open(&dist_dir().join("fmi2").join("Gain.fmu"));
    let inst: Symbol<
        unsafe extern "C" fn(
            *const c_char,
            *const c_char,
            *const c_char,
            bool,
            bool,
            bool,
            bool,
            *const u32,
            usize,
            *mut c_void,
            *const c_void,
            *mut c_void,
        ) -> Inst,
    > = fmu.sym("fmi3InstantiateCoSimulation");
    let null = std::ptr::null_mut();
    let tok2 = fmi2.token();
    // SAFETY: valid strings and callback.
    unsafe {
        assert!(
            inst(
                c"x".as_ptr(),
                tok2.as_ptr(),
                std::ptr::null(),
                false,
                true,
                false,
                false,
                std::ptr::null(),
                0,
                null,
                logger3 as *const c_void,
                null
            )
            .is_null()
        );
        let unknown = c"cosim:NoSuchModel:fmi3:s1z1d1i0v1j1:0123456789abcdef";
        assert!(
            inst(
                c"x".as_ptr(),
                unknown.as_ptr(),
                std::ptr::null(),
                false,
                true,
                false,
                false,
                std::ptr::null(),
                0,
                null,
                logger3 as *const c_void,
                null
            )
            .is_null()
        );
    }
    assert!(logged("is for fmi2 but was given to the fmi3 interface"));
    assert!(logged("no model \"NoSuchModel\""));
}

#[test]
fn every_packaged_fmu_declares_its_variant() {
    let dir = dist_dir();
    for spec in cosim_models::registry() {
        for v in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
            let p = dir.join(v.tag()).join(format!("{}.fmu", spec.name));
            assert!(p.exists(), "{}", p.display());
        }
    }
    for name in cosim_models::VARIANT_MODELS {
        for v in Variant::RESTRICTED {
            assert!(dist::variant_path(name, v).exists(), "{name} {v:?}");
        }
    }
    assert!(dir.join("references").join("b1_linear.csv").exists());
}
