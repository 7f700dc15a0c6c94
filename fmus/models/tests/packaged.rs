//! Loads the PACKAGED `.fmu` files from `fmus/dist` (built on demand by
//! `fmu_kit::dist::ensure_built`) with plain `libloading` calls and runs full
//! FMI 2 and FMI 3 cycles through the C ABI.
// This test drives a C ABI: raw function pointers and extern "C" callbacks.
#![allow(unsafe_code)]
#![allow(clippy::too_many_arguments)]
// Test helpers outside #[test] functions may panic on setup failures.
#![allow(clippy::expect_used, clippy::panic, clippy::type_complexity)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fmu_kit::{FmiVersion, Variant, dist};
use libloading::{Library, Symbol};

mod common;

use common::{Callbacks2, attr, logged, logger2, logger3};

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

fn dist_dir() -> PathBuf {
    dist::ensure_built().expect("fmus/dist is built")
}

// ---------------------------------------------------------- C function types

type Inst = *mut c_void;
/// A function of the instance alone: fmi2/fmi3 Enter/ExitInitializationMode,
/// Terminate, Reset, fmi3EnterContinuousTimeMode, ...
type Status0 = unsafe extern "C" fn(Inst) -> c_int;
/// fmi2FreeInstance / fmi3FreeInstance.
type FreeInstance = unsafe extern "C" fn(Inst);
/// fmi2GetFMUstate, fmi2FreeFMUstate, fmi3GetFMUState, fmi3FreeFMUState.
type StateOut = unsafe extern "C" fn(Inst, *mut *mut c_void) -> c_int;
/// fmi2SetFMUstate / fmi3SetFMUState.
type StateIn = unsafe extern "C" fn(Inst, *mut c_void) -> c_int;

/// fmi2Instantiate.
type Instantiate2 = unsafe extern "C" fn(
    *const c_char,
    c_int,
    *const c_char,
    *const c_char,
    *const Callbacks2,
    c_int,
    c_int,
) -> Inst;
/// fmi2SetupExperiment.
type SetupExperiment2 = unsafe extern "C" fn(Inst, c_int, f64, f64, c_int, f64) -> c_int;
/// fmi2Get<T> (T = fmi2Real, fmi2Integer, fmi2Boolean).
type Get2<T> = unsafe extern "C" fn(Inst, *const u32, usize, *mut T) -> c_int;
/// fmi2Set<T>.
type Set2<T> = unsafe extern "C" fn(Inst, *const u32, usize, *const T) -> c_int;
/// fmi2DoStep.
type DoStep2 = unsafe extern "C" fn(Inst, f64, f64, c_int) -> c_int;
/// fmi2SetRealInputDerivatives.
type SetInputDerivatives2 =
    unsafe extern "C" fn(Inst, *const u32, usize, *const c_int, *const f64) -> c_int;
/// fmi2GetRealOutputDerivatives.
type GetOutputDerivatives2 =
    unsafe extern "C" fn(Inst, *const u32, usize, *const c_int, *mut f64) -> c_int;

/// fmi3IntermediateUpdateCallback.
type IntermediateUpdate =
    unsafe extern "C" fn(*mut c_void, f64, bool, bool, bool, bool, *mut bool, *mut f64);
/// fmi3InstantiateCoSimulation.
type Instantiate3 = unsafe extern "C" fn(
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
    Option<IntermediateUpdate>,
) -> Inst;
/// fmi3EnterInitializationMode.
type EnterInitializationMode3 = unsafe extern "C" fn(Inst, bool, f64, f64, bool, f64) -> c_int;
/// fmi3Get<T> (T = fmi3Float64, fmi3Int32, fmi3Boolean, ...).
type Get3<T> = unsafe extern "C" fn(Inst, *const u32, usize, *mut T, usize) -> c_int;
/// fmi3Set<T>.
type Set3<T> = unsafe extern "C" fn(Inst, *const u32, usize, *const T, usize) -> c_int;
/// fmi3DoStep.
type DoStep3 =
    unsafe extern "C" fn(Inst, f64, f64, bool, *mut bool, *mut bool, *mut bool, *mut f64) -> c_int;
/// fmi3SerializedFMUStateSize.
type SerializedStateSize3 = unsafe extern "C" fn(Inst, *mut c_void, *mut usize) -> c_int;
/// fmi3SerializeFMUState.
type SerializeState3 = unsafe extern "C" fn(Inst, *mut c_void, *mut u8, usize) -> c_int;
/// fmi3DeserializeFMUState.
type DeserializeState3 = unsafe extern "C" fn(Inst, *const u8, usize, *mut *mut c_void) -> c_int;

// ----------------------------------------------------------------- instances

/// An FMI version: the names of the functions both versions have with the
/// same C signature.
trait Version {
    /// Get, Set and FreeFMUstate (FMI 2) / FMUState (FMI 3), FreeInstance.
    const FNS: [&'static str; 4];
}

enum V2 {}
enum V3 {}

impl Version for V2 {
    const FNS: [&'static str; 4] = [
        "fmi2GetFMUstate",
        "fmi2SetFMUstate",
        "fmi2FreeFMUstate",
        "fmi2FreeInstance",
    ];
}

impl Version for V3 {
    const FNS: [&'static str; 4] = [
        "fmi3GetFMUState",
        "fmi3SetFMUState",
        "fmi3FreeFMUState",
        "fmi3FreeInstance",
    ];
}

/// An instance of a packaged FMU, freed on drop.
struct Instance<'a, V: Version> {
    fmu: &'a Fmu,
    i: Inst,
    /// FMI 3 made by [`Fmi3::with_importer`]: the test importer's callback
    /// environment (boxed: its address is the instance's).
    env: Option<Box<Importer3>>,
    version: PhantomData<V>,
}

/// An FMI 2 instance.
type Fmi2<'a> = Instance<'a, V2>;
/// An FMI 3 instance; made by [`Fmi3::with_importer`], it has the test
/// importer's intermediate update callback.
type Fmi3<'a> = Instance<'a, V3>;

impl<'a, V: Version> Instance<'a, V> {
    /// Takes ownership of the live instance `i` of `fmu`.
    fn new(fmu: &'a Fmu, i: Inst, env: Option<Box<Importer3>>) -> Self {
        Instance {
            fmu,
            i,
            env,
            version: PhantomData,
        }
    }
    /// Calls `name`, a function of the instance alone ([`Status0`]).
    fn call(&self, name: &str) -> c_int {
        // SAFETY: FMI signature.
        unsafe { self.fmu.sym::<Status0>(name)(self.i) }
    }
    fn get_state(&self, s: &mut *mut c_void) -> c_int {
        // SAFETY: s points to one FMU-state slot.
        unsafe { self.fmu.sym::<StateOut>(V::FNS[0])(self.i, s) }
    }
    fn set_state(&self, s: *mut c_void) -> c_int {
        // SAFETY: FMI signature.
        unsafe { self.fmu.sym::<StateIn>(V::FNS[1])(self.i, s) }
    }
    fn free_state(&self, s: &mut *mut c_void) -> c_int {
        // SAFETY: s points to one FMU-state slot.
        unsafe { self.fmu.sym::<StateOut>(V::FNS[2])(self.i, s) }
    }
}

impl<V: Version> Drop for Instance<'_, V> {
    fn drop(&mut self) {
        // SAFETY: frees our instance once; `drop` runs before the fields'
        // drops, so `env` outlives the instance.
        unsafe { self.fmu.sym::<FreeInstance>(V::FNS[3])(self.i) }
    }
}

// ------------------------------------------------------------ FMI 2 instance

impl<'a> Fmi2<'a> {
    fn instantiate(fmu: &'a Fmu) -> Self {
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
            fmu.sym::<Instantiate2>("fmi2Instantiate")(
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
        Fmi2::new(fmu, c, None)
    }
    /// Setup, enter and exit initialization mode, each returning fmi2OK.
    fn initialize(&self) {
        assert_eq!(self.setup(), 0);
        assert_eq!(self.call("fmi2EnterInitializationMode"), 0);
        assert_eq!(self.call("fmi2ExitInitializationMode"), 0);
    }
    fn setup(&self) -> c_int {
        self.setup_stop(None)
    }
    /// fmi2SetupExperiment from 0, with a stop time if given.
    fn setup_stop(&self, stop: Option<f64>) -> c_int {
        let f = self.fmu.sym::<SetupExperiment2>("fmi2SetupExperiment");
        // SAFETY: FMI signature.
        unsafe {
            f(
                self.i,
                0,
                0.0,
                0.0,
                c_int::from(stop.is_some()),
                stop.unwrap_or(0.0),
            )
        }
    }
    fn set(&self, vr: u32, x: f64) -> c_int {
        // SAFETY: one-element arrays.
        unsafe { self.fmu.sym::<Set2<f64>>("fmi2SetReal")(self.i, &vr, 1, &x) }
    }
    /// fmi2GetReal of one value: the status and the value.
    fn get_real(&self, vr: u32) -> (c_int, f64) {
        let mut x = f64::NAN;
        // SAFETY: one-element arrays.
        let status = unsafe { self.fmu.sym::<Get2<f64>>("fmi2GetReal")(self.i, &vr, 1, &mut x) };
        (status, x)
    }
    fn get(&self, vr: u32) -> f64 {
        let (status, x) = self.get_real(vr);
        assert_eq!(status, 0);
        x
    }
    /// fmi2DoStep with noSetFMUStatePriorToCurrentPoint = true (as FMPy
    /// and libcosim call it).
    fn step(&self, t: f64, h: f64) -> c_int {
        self.step_flag(t, h, true)
    }
    /// fmi2DoStep with the given noSetFMUStatePriorToCurrentPoint.
    fn step_flag(&self, t: f64, h: f64, no_set_prior: bool) -> c_int {
        // SAFETY: FMI signature.
        unsafe { self.fmu.sym::<DoStep2>("fmi2DoStep")(self.i, t, h, c_int::from(no_set_prior)) }
    }
    /// fmi2SetRealInputDerivatives: `vrs`, `orders` and `values` of one length.
    fn set_der(&self, vrs: &[u32], orders: &[c_int], values: &[f64]) -> c_int {
        assert!(orders.len() == vrs.len() && values.len() == vrs.len());
        let f = self
            .fmu
            .sym::<SetInputDerivatives2>("fmi2SetRealInputDerivatives");
        // SAFETY: three arrays of vrs.len() elements.
        unsafe {
            f(
                self.i,
                vrs.as_ptr(),
                vrs.len(),
                orders.as_ptr(),
                values.as_ptr(),
            )
        }
    }
    /// fmi2GetRealOutputDerivatives of one value: the status and the value.
    fn get_der(&self, vr: u32, order: c_int) -> (c_int, f64) {
        let f = self
            .fmu
            .sym::<GetOutputDerivatives2>("fmi2GetRealOutputDerivatives");
        let mut d = f64::NAN;
        // SAFETY: one-element arrays.
        let status = unsafe { f(self.i, &vr, 1, &order, &mut d) };
        (status, d)
    }
    fn get_int(&self, vr: u32) -> c_int {
        let mut x = c_int::MIN;
        // SAFETY: one-element arrays.
        let status =
            unsafe { self.fmu.sym::<Get2<c_int>>("fmi2GetInteger")(self.i, &vr, 1, &mut x) };
        assert_eq!(status, 0);
        x
    }
    fn get_bool(&self, vr: u32) -> c_int {
        let mut x = -1;
        // SAFETY: one-element arrays.
        let status =
            unsafe { self.fmu.sym::<Get2<c_int>>("fmi2GetBoolean")(self.i, &vr, 1, &mut x) };
        assert_eq!(status, 0);
        x
    }
    fn set_int(&self, vr: u32, x: c_int) -> c_int {
        // SAFETY: one-element arrays.
        unsafe { self.fmu.sym::<Set2<c_int>>("fmi2SetInteger")(self.i, &vr, 1, &x) }
    }
    fn set_bool(&self, vr: u32, x: c_int) -> c_int {
        // SAFETY: one-element arrays.
        unsafe { self.fmu.sym::<Set2<c_int>>("fmi2SetBoolean")(self.i, &vr, 1, &x) }
    }
}

// ------------------------------------------------------------ FMI 3 instance

/// The test importer's state (its `instanceEnvironment`).
struct Importer3 {
    /// The FMU's own fmi3SetFloat64.
    set: Set3<f64>,
    inst: std::sync::atomic::AtomicPtr<c_void>,
    /// `(t0, [(vr, [u, u', u'', u'''])])`: the inputs' polynomials.
    polys: Mutex<(f64, Vec<(u32, [f64; 4])>)>,
    times: Mutex<Vec<f64>>,
    failed_sets: std::sync::atomic::AtomicUsize,
}

/// The importer's `fmi3IntermediateUpdateCallback`: sets every input to
/// its polynomial at the intermediate update time.
unsafe extern "C" fn importer3_update(
    env: *mut c_void,
    time: f64,
    set_requested: bool,
    _get_allowed: bool,
    _step_finished: bool,
    _can_return_early: bool,
    _early: *mut bool,
    _early_time: *mut f64,
) {
    // SAFETY: `env` is the test's `Importer3`, alive while its instance is.
    let env = unsafe { &*(env as *const Importer3) };
    env.times.lock().expect("times").push(time);
    if !set_requested {
        return;
    }
    let (t0, polys) = env.polys.lock().expect("polys").clone();
    let i = env.inst.load(std::sync::atomic::Ordering::SeqCst);
    for (vr, c) in polys {
        let tau = time - t0;
        let u = c[0] + tau * (c[1] + tau * (c[2] / 2.0 + tau * c[3] / 6.0));
        // SAFETY: the FMU's fmi3SetFloat64 on its live instance; one-element arrays.
        if unsafe { (env.set)(i, &vr, 1, &u, 1) } != 0 {
            env.failed_sets
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl<'a> Fmi3<'a> {
    /// fmi3InstantiateCoSimulation of `fmu`: not visible, logging on through
    /// `logger3`, no Event Mode, early return as `early_return_allowed`
    /// says, no required intermediate variables. NULL if refused.
    ///
    /// # Safety
    /// If `update` is `Some`, `env` must be what `update` expects and stay
    /// valid while the instance lives.
    unsafe fn instantiate_raw(
        fmu: &Fmu,
        name: &CStr,
        token: &CStr,
        early_return_allowed: bool,
        env: *mut c_void,
        update: Option<IntermediateUpdate>,
    ) -> Inst {
        let f = fmu.sym::<Instantiate3>("fmi3InstantiateCoSimulation");
        // SAFETY: valid strings; the logger is a plain function; `env` is the
        // caller's contract.
        unsafe {
            f(
                name.as_ptr(),
                token.as_ptr(),
                std::ptr::null(),
                false,
                true,
                false,
                early_return_allowed,
                std::ptr::null(),
                0,
                env,
                logger3 as *const c_void,
                update,
            )
        }
    }
    /// [`Fmi3::instantiate_raw`] without callback or environment.
    fn try_instantiate(fmu: &Fmu, name: &CStr, token: &CStr) -> Inst {
        // SAFETY: no callback, so nothing uses the NULL environment.
        unsafe { Self::instantiate_raw(fmu, name, token, false, std::ptr::null_mut(), None) }
    }
    /// An instance of `fmu` with its own token, without callback.
    fn instantiate(fmu: &'a Fmu, name: &CStr) -> Self {
        Self::instantiate_early(fmu, name, false)
    }
    /// [`Fmi3::instantiate`] with `earlyReturnAllowed` as given.
    fn instantiate_early(fmu: &'a Fmu, name: &CStr, early_return_allowed: bool) -> Self {
        // SAFETY: no callback, so nothing uses the NULL environment.
        let i = unsafe {
            Self::instantiate_raw(
                fmu,
                name,
                &fmu.token(),
                early_return_allowed,
                std::ptr::null_mut(),
                None,
            )
        };
        assert!(!i.is_null());
        Fmi3::new(fmu, i, None)
    }
    /// An instance with the test importer's callback, initialized.
    fn with_importer(fmu: &'a Fmu) -> Self {
        let env = Box::new(Importer3 {
            set: *fmu.sym::<Set3<f64>>("fmi3SetFloat64"),
            inst: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            polys: Mutex::new((0.0, Vec::new())),
            times: Mutex::new(Vec::new()),
            failed_sets: std::sync::atomic::AtomicUsize::new(0),
        });
        let env_ptr = &*env as *const Importer3 as *mut c_void;
        // SAFETY: the environment is the `Importer3` that `importer3_update`
        // expects; it lives in the returned value and outlives the instance
        // (see `Drop`).
        let i = unsafe {
            Self::instantiate_raw(
                fmu,
                c"iu3",
                &fmu.token(),
                false,
                env_ptr,
                Some(importer3_update),
            )
        };
        assert!(!i.is_null());
        env.inst.store(i, std::sync::atomic::Ordering::SeqCst);
        let s = Fmi3::new(fmu, i, Some(env));
        assert_eq!(s.enter(), 0);
        assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
        s
    }
    /// The test importer of [`Fmi3::with_importer`].
    fn importer(&self) -> &Importer3 {
        self.env.as_deref().expect("made with the test importer")
    }
    /// fmi3EnterInitializationMode without tolerance or stop time, from 0.
    fn enter(&self) -> c_int {
        self.enter_stop(None)
    }
    /// fmi3EnterInitializationMode from 0, with a stop time if given.
    fn enter_stop(&self, stop: Option<f64>) -> c_int {
        let f = self
            .fmu
            .sym::<EnterInitializationMode3>("fmi3EnterInitializationMode");
        // SAFETY: FMI signature.
        unsafe { f(self.i, false, 0.0, 0.0, stop.is_some(), stop.unwrap_or(0.0)) }
    }
    fn set(&self, vr: u32, x: f64) -> c_int {
        // SAFETY: one-element arrays.
        unsafe { self.fmu.sym::<Set3<f64>>("fmi3SetFloat64")(self.i, &vr, 1, &x, 1) }
    }
    /// The getter `name`, of element type `T`, for `vrs`: the status and
    /// the values (`init` where nothing was written).
    fn get_values<T: Copy, const N: usize>(
        &self,
        name: &str,
        vrs: [u32; N],
        init: T,
    ) -> (c_int, [T; N]) {
        let mut out = [init; N];
        // SAFETY: `name` is an FMI 3 getter of `T` (the typed callers below);
        // arrays of N elements.
        let status =
            unsafe { self.fmu.sym::<Get3<T>>(name)(self.i, vrs.as_ptr(), N, out.as_mut_ptr(), N) };
        (status, out)
    }
    /// fmi3GetFloat64 of `vrs` with `n` values (the elements of arrays):
    /// the status and the values.
    fn get_f64_elements(&self, vrs: &[u32], n: usize) -> (c_int, Vec<f64>) {
        let mut out = vec![f64::NAN; n];
        // SAFETY: arrays of the lengths passed.
        let status = unsafe {
            self.fmu.sym::<Get3<f64>>("fmi3GetFloat64")(
                self.i,
                vrs.as_ptr(),
                vrs.len(),
                out.as_mut_ptr(),
                n,
            )
        };
        (status, out)
    }
    /// fmi3SetFloat64 of `vrs` with the values `vals` (the elements of arrays).
    fn set_f64_elements(&self, vrs: &[u32], vals: &[f64]) -> c_int {
        // SAFETY: arrays of the lengths passed.
        unsafe {
            self.fmu.sym::<Set3<f64>>("fmi3SetFloat64")(
                self.i,
                vrs.as_ptr(),
                vrs.len(),
                vals.as_ptr(),
                vals.len(),
            )
        }
    }
    fn get_f64s<const N: usize>(&self, vrs: [u32; N]) -> (c_int, [f64; N]) {
        self.get_values("fmi3GetFloat64", vrs, f64::NAN)
    }
    fn get_bools<const N: usize>(&self, vrs: [u32; N]) -> (c_int, [bool; N]) {
        self.get_values("fmi3GetBoolean", vrs, false)
    }
    fn get_i32s<const N: usize>(&self, vrs: [u32; N]) -> (c_int, [i32; N]) {
        self.get_values("fmi3GetInt32", vrs, 0)
    }
    /// The setter `name`, of element type `T`, for `vrs` and `vals`.
    fn set_values<T: Copy, const N: usize>(
        &self,
        name: &str,
        vrs: [u32; N],
        vals: [T; N],
    ) -> c_int {
        // SAFETY: `name` is an FMI 3 setter of `T` (the callers name it with
        // its type); arrays of N elements.
        unsafe { self.fmu.sym::<Set3<T>>(name)(self.i, vrs.as_ptr(), N, vals.as_ptr(), N) }
    }
    fn get(&self, vr: u32) -> f64 {
        let (status, [x]) = self.get_f64s([vr]);
        assert_eq!(status, 0);
        x
    }
    /// fmi3DoStep: the status and lastSuccessfulTime.
    fn step_last(&self, t: f64, h: f64) -> (c_int, f64) {
        let (status, _, _, last) = self.do_step(t, h, false);
        (status, last)
    }
    /// fmi3DoStep with the given noSetFMUStatePriorToCurrentPoint: the
    /// status, terminateSimulation, earlyReturn and lastSuccessfulTime.
    fn do_step(&self, t: f64, h: f64, no_set_prior: bool) -> (c_int, bool, bool, f64) {
        let f = self.fmu.sym::<DoStep3>("fmi3DoStep");
        let (mut e, mut term, mut early, mut last) = (false, false, false, 0.0);
        // SAFETY: valid out-pointers.
        let status = unsafe {
            f(
                self.i,
                t,
                h,
                no_set_prior,
                &mut e,
                &mut term,
                &mut early,
                &mut last,
            )
        };
        assert!(!e, "eventHandlingNeeded is never set");
        (status, term, early, last)
    }
    fn step(&self, t: f64, h: f64) -> c_int {
        self.step_last(t, h).0
    }
    /// The bytes of FMU state `s` (fmi3SerializedFMUStateSize and
    /// fmi3SerializeFMUState, each returning fmi3OK).
    fn serialize_state(&self, s: *mut c_void) -> Vec<u8> {
        let size = self
            .fmu
            .sym::<SerializedStateSize3>("fmi3SerializedFMUStateSize");
        let serialize = self.fmu.sym::<SerializeState3>("fmi3SerializeFMUState");
        let mut n = 0usize;
        // SAFETY: one writable size.
        assert_eq!(unsafe { size(self.i, s, &mut n) }, 0);
        let mut bytes = vec![0u8; n];
        // SAFETY: `bytes` has the n writable elements passed.
        assert_eq!(unsafe { serialize(self.i, s, bytes.as_mut_ptr(), n) }, 0);
        bytes
    }
    /// A new FMU state from `bytes` (fmi3DeserializeFMUState returning fmi3OK).
    fn deserialize_state(&self, bytes: &[u8]) -> *mut c_void {
        let f = self.fmu.sym::<DeserializeState3>("fmi3DeserializeFMUState");
        let mut s: *mut c_void = std::ptr::null_mut();
        // SAFETY: `bytes.len()` readable bytes, one FMU-state slot.
        assert_eq!(unsafe { f(self.i, bytes.as_ptr(), bytes.len(), &mut s) }, 0);
        s
    }
    fn times(&self) -> Vec<f64> {
        self.importer().times.lock().expect("times").clone()
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
    assert_eq!(s.set_der(&[U], &[1], &[2.0]), 0);
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
    let (status, d) = s.get_der(X, 1);
    assert_eq!(status, 0);
    assert_eq!(d, 0.5);
    assert_eq!(s.free_state(&mut st), 0);
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
    s.initialize();
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
    assert_eq!(s.setup(), 0);
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
    assert_eq!(s.set_der(&[1], &[1], &[2.0]), 3);
    assert!(logged(
        "capability canInterpolateInputs is disabled in this build"
    ));
}

#[test]
fn fmi2_bad_parameter_is_an_error_with_a_message() {
    use cosim_models::quarter_car::chassis::M_C;
    let fmu = Fmu::open(&dist_dir().join("fmi2").join("QuarterCarChassis.fmu"));
    let s = Fmi2::instantiate(&fmu);
    assert_eq!(s.setup(), 0);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.set(M_C, -1.0), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 3);
    assert!(logged(
        "fmi2ExitInitializationMode: m_c must be > 0, got -1"
    ));
    assert_eq!(s.step(0.0, 1e-3), 3);
    let micro = Fmu::open(&dist_dir().join("fmi2").join("QuarterCarWheel.fmu"));
    let s = Fmi2::instantiate(&micro);
    assert_eq!(s.setup(), 0);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    let status = s.set_int(cosim_models::quarter_car::wheel::MICRO_STEPS, 0);
    assert_eq!(status, 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 3);
    assert!(logged("micro_steps must be >= 1, got 0"));
}

#[test]
fn fmi3_chassis_full_cycle_with_serialized_state() {
    use cosim_models::quarter_car::chassis::{F, V_C, Z_C};
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("QuarterCarChassis.fmu"));
    assert!(fmu.xml.contains("fmiVersion=\"3.0\""));
    let s = Fmi3::instantiate(&fmu, c"i3");
    assert_eq!(s.enter(), 0);
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    assert_eq!(s.set(F, 400.0), 0);
    let (status, last) = s.step_last(0.0, 0.5);
    assert_eq!(status, 0);
    assert_eq!(last, 0.5);
    let (status, vz) = s.get_f64s([V_C, Z_C]);
    assert_eq!(status, 0);
    assert_eq!(vz, [0.5, 0.125]);
    let mut st: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st), 0);
    let bytes = s.serialize_state(st);
    assert_eq!(s.step(0.5, 0.5), 0);
    let (status, after) = s.get_f64s([V_C, Z_C]);
    assert_eq!(status, 0);
    let mut st2 = s.deserialize_state(&bytes);
    assert_eq!(s.set_state(st2), 0);
    assert_eq!(s.step(0.5, 0.5), 0);
    let (status, again) = s.get_f64s([V_C, Z_C]);
    assert_eq!(status, 0);
    assert_eq!(after.map(f64::to_bits), again.map(f64::to_bits));
    assert_eq!(s.free_state(&mut st), 0);
    assert_eq!(s.free_state(&mut st2), 0);
    // Model exchange is exported and refused.
    assert_eq!(s.call("fmi3EnterContinuousTimeMode"), 3);
    assert_eq!(s.call("fmi3Terminate"), 0);
    assert!(logged("model exchange is not supported"));
}

#[test]
fn packaged_fmus_refuse_illegal_call_sequences() {
    use cosim_models::generic::integrator::{U, X, X0};
    let fmu = Fmu::open(&dist_dir().join("fmi2").join("Integrator.fmu"));
    let s = Fmi2::instantiate(&fmu);
    // fmi2SetupExperiment is required before fmi2EnterInitializationMode.
    assert_eq!(s.call("fmi2EnterInitializationMode"), 3);
    assert!(logged(
        "fmi2EnterInitializationMode: Illegal call sequence: fmi2SetupExperiment was not called"
    ));
    assert_eq!(s.set(X0, 1.0), 0, "a start value, in Instantiated");
    assert_eq!(s.setup_stop(Some(1.0)), 0);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.set(U, 2.0), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
    assert_eq!(s.set(X0, 5.0), 3, "a fixed parameter, in stepComplete");
    assert!(logged(
        "fmi2SetReal: Illegal call sequence: parameter x0 (vr 3, variability fixed, initial exact) cannot be set in state stepComplete"
    ));
    assert_eq!(s.set(X, 5.0), 3, "an output with initial calculated");
    let mut st: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st), 0);
    assert_eq!(s.step_flag(0.0, 0.5, false), 0);
    assert_eq!(s.step_flag(0.5, 0.25, true), 0);
    // The state at t = 0 is before the promise at t = 0.5.
    assert_eq!(s.set_state(st), 3);
    assert!(logged(
        "noSetFMUStatePriorToCurrentPoint was true at t = 0.5"
    ));
    assert_eq!(
        s.step_flag(0.5, 0.25, true),
        3,
        "not where the last step ended"
    );
    assert!(logged(
        "fmi2DoStep: Illegal call sequence: currentCommunicationPoint 0.5 differs from the FMU time 0.75"
    ));
    assert_eq!(s.step_flag(0.75, 0.5, true), 3, "past the stop time 1");
    assert!(logged("ends after the stop time 1 (stopTimeDefined = true"));
    assert_eq!(s.step_flag(0.75, 0.25, true), 0);
    assert_eq!(
        s.get(X),
        3.0,
        "1 + 2 * 1: the refused calls changed nothing"
    );
    assert_eq!(s.free_state(&mut st), 0);
    assert_eq!(s.call("fmi2Terminate"), 0);
    assert_eq!(s.step(1.0, 0.1), 3);
    assert!(logged(
        "fmi2DoStep: Illegal call sequence: called in state Terminated"
    ));
    assert_eq!(s.get(X), 3.0, "getters work after fmi2Terminate");
    // FMI 3: Terminate in Initialization Mode, a stop time, the same promise.
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("Integrator.fmu"));
    let s = Fmi3::instantiate(&fmu, c"strict3");
    assert_eq!(s.enter_stop(Some(1.0)), 0);
    assert_eq!(s.call("fmi3Terminate"), 3);
    assert!(logged(
        "fmi3Terminate: Illegal call sequence: called in state Initialization Mode"
    ));
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    assert_eq!(s.get_state(&mut st), 0);
    assert_eq!(s.do_step(0.0, 0.5, true).0, 0);
    assert_eq!(s.do_step(0.5, 0.5, true).0, 0);
    assert_eq!(s.do_step(1.0, 0.5, true).0, 3);
    assert!(logged(
        "fmi3DoStep: Illegal call sequence: the step from 1 to 1.5 ends after the stop time 1"
    ));
    assert_eq!(s.set_state(st), 3);
    assert!(logged(
        "where fmi3DoStep was called with noSetFMUStatePriorToCurrentPoint = true"
    ));
    assert_eq!(s.free_state(&mut st), 0);
    assert_eq!(s.call("fmi3Terminate"), 0);
}

/// fmi2GetStatus / fmi2GetRealStatus / fmi2GetBooleanStatus of `s`:
/// (fmi2DoStepStatus, fmi2LastSuccessfulTime, fmi2Terminated).
fn fmi2_statuses(s: &Fmi2) -> (c_int, f64, c_int) {
    type StatusFn<T> = unsafe extern "C" fn(Inst, c_int, *mut T) -> c_int;
    let (mut st, mut last, mut term) = (-1, f64::NAN, -1);
    // SAFETY: FMI signatures, one out-value each.
    unsafe {
        assert_eq!(
            s.fmu.sym::<StatusFn<c_int>>("fmi2GetStatus")(s.i, 0, &mut st),
            0
        );
        assert_eq!(
            s.fmu.sym::<StatusFn<f64>>("fmi2GetRealStatus")(s.i, 2, &mut last),
            0
        );
        assert_eq!(
            s.fmu.sym::<StatusFn<c_int>>("fmi2GetBooleanStatus")(s.i, 3, &mut term),
            0
        );
    }
    (st, last, term)
}

#[test]
fn packaged_terminating_requests_termination_the_fmi2_and_fmi3_way() {
    use cosim_models::generic::terminating::{T_END, U, Y};
    let fmu = Fmu::open(&dist_dir().join("fmi2").join("Terminating.fmu"));
    let s = Fmi2::instantiate(&fmu);
    assert_eq!(s.setup(), 0);
    assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    assert_eq!(s.set(T_END, 0.3), 0);
    assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
    assert_eq!(s.set(U, 2.0), 0);
    assert_eq!(s.step(0.0, 0.2), 0);
    assert_eq!(fmi2_statuses(&s), (0, 0.2, 0));
    // The step over t_end: fmi2Discard, fmi2Terminated, stopped at t_end.
    assert_eq!(s.step(0.2, 0.2), 2);
    assert_eq!(fmi2_statuses(&s), (2, 0.3, 1));
    assert!((s.get(Y) - 0.6).abs() < 1e-15, "y(t_end) = 2 * 0.3");
    // The instance has logging off: a termination request is no failure,
    // so its message is not sent (with logging on it is, kit tests).
    assert!(!logged("Terminating: t_end = 0.3 reached"));
    assert_eq!(s.step(0.3, 0.1), 3);
    assert!(logged(
        "fmi2DoStep: Illegal call sequence: called in state stepFailed (the FMU requested termination at t = 0.3)"
    ));
    assert_eq!(s.call("fmi2Terminate"), 0);
    assert!((s.get(Y) - 0.6).abs() < 1e-15);
    drop(s);
    // FMI 3: early return where allowed, else fmi3Discard; both with
    // terminateSimulation and lastSuccessfulTime = t_end.
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("Terminating.fmu"));
    assert!(fmu.xml.contains("mightReturnEarlyFromDoStep=\"true\""));
    for (allowed, status, early) in [(true, 0, true), (false, 2, false)] {
        let s = Fmi3::instantiate_early(&fmu, c"term3", allowed);
        assert_eq!(s.enter(), 0);
        assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
        assert_eq!(s.do_step(0.0, 0.25, true), (0, false, false, 0.25));
        assert_eq!(s.do_step(0.25, 0.5, true), (status, true, early, 0.5));
        assert_eq!(s.get(Y), 0.5, "y(t_end) = 1 * 0.5");
        assert_eq!(s.do_step(0.5, 0.25, true).0, 3);
        assert_eq!(s.call("fmi3Terminate"), 0);
    }
    // A step that ends on t_end: fmi3OK, no early return.
    let s = Fmi3::instantiate(&fmu, c"term3b");
    assert_eq!(s.enter(), 0);
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    assert_eq!(s.do_step(0.0, 0.5, true), (0, true, false, 0.5));
    assert_eq!(s.call("fmi3Terminate"), 0);
}

#[test]
fn fmi3_refuses_an_fmi2_token_and_unknown_models() {
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("Gain.fmu"));
    let fmi2 = Fmu::open(&dist_dir().join("fmi2").join("Gain.fmu"));
    let tok2 = fmi2.token();
    assert!(Fmi3::try_instantiate(&fmu, c"x", &tok2).is_null());
    let unknown = c"cosim:NoSuchModel:fmi3:s1z1d1i0v1j1u0:0123456789abcdef";
    assert!(Fmi3::try_instantiate(&fmu, c"x", unknown).is_null());
    assert!(logged("is for fmi2 but was given to the fmi3 interface"));
    assert!(logged("no model \"NoSuchModel\""));
}

#[test]
fn every_packaged_fmu_declares_its_variant() {
    let dir = dist_dir();
    for spec in cosim_models::registry() {
        for v in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
            // (Model Exchange only models in me/.)
            let p = dist::packaged_path(v, spec);
            // A model with FMI 3 only types (TypeMirror), structural
            // parameters (StructuralGain) or arrays (StateSpace) has no
            // FMI 2 build.
            assert_eq!(p.exists(), spec.supports(v), "{}", p.display());
        }
    }
    for name in ["TypeMirror", "StructuralGain", "StateSpace"] {
        assert!(!dir.join("fmi2").join(format!("{name}.fmu")).exists());
        assert!(dir.join("fmi3").join(format!("{name}.fmu")).exists());
    }
    for name in cosim_models::VARIANT_MODELS {
        for v in Variant::RESTRICTED
            .into_iter()
            .chain(Variant::FMI3_RESTRICTED)
        {
            assert!(dist::variant_path(name, v).exists(), "{name} {v:?}");
        }
    }
    // Quirk builds: in quirks/, the full build's XML but for the
    // identifier and the token, whose sixth field names the quirk.
    for (name, v) in cosim_models::QUIRK_VARIANTS {
        let path = dist::variant_path(name, v);
        assert_eq!(path.parent(), Some(dir.join("quirks").as_path()));
        let quirky = Fmu::open(&path);
        let version = v.version().expect("a quirk build has a version");
        let full = Fmu::open(&dist::fmu_path(version, name));
        let (tq, tf) = (quirky.token(), full.token());
        let tag = v.quirk().map(fmu_kit::Quirk::tag).unwrap_or_default();
        assert_eq!(
            tq.to_str().ok(),
            Some(format!("{}:{tag}", tf.to_string_lossy()).as_str())
        );
        let id = format!("{name}_{}", v.suffix().replace('-', "_"));
        let normalize = |xml: &str, tok: &CStr, id: &str| {
            xml.replace(&*tok.to_string_lossy(), "TOKEN")
                .replace(&format!("modelIdentifier=\"{id}\""), "ID")
        };
        assert_eq!(
            normalize(&quirky.xml, &tq, &id),
            normalize(&full.xml, &tf, name),
            "{}",
            path.display()
        );
    }
    assert!(dir.join("references").join("b1_linear.csv").exists());
}

#[test]
fn packaged_resets_in_setup_runs_with_default_parameters() {
    use cosim_models::generic::integrator::{X, X0};
    use cosim_models::quarter_car::chassis::{F, M_C, V_C};
    let full = Fmu::open(&dist::fmu_path(FmiVersion::Fmi2, "Integrator"));
    let quirky = Fmu::open(&dist::variant_path("Integrator", Variant::ResetsInSetup));
    for (fmu, x0) in [(&full, 2.0), (&quirky, 0.0)] {
        // A master that sets parameters before fmi2SetupExperiment (legal).
        let s = Fmi2::instantiate(fmu);
        assert_eq!(s.set(X0, 2.0), 0);
        s.initialize();
        assert_eq!(s.get(X), x0);
        // Set after it, the parameter stays.
        let s = Fmi2::instantiate(fmu);
        assert_eq!(s.setup(), 0);
        assert_eq!(s.set(X0, 2.0), 0);
        assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
        assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
        assert_eq!(s.get(X), 2.0);
    }
    // The chassis: m_c = 800 set first is lost in the quirk build, so
    // F = 400 accelerates the default 400 kg at 1 m/s^2 instead of 0.5.
    let full = Fmu::open(&dist::fmu_path(FmiVersion::Fmi2, "QuarterCarChassis"));
    let quirky = Fmu::open(&dist::variant_path(
        "QuarterCarChassis",
        Variant::ResetsInSetup,
    ));
    for (fmu, v_c) in [(&full, 0.25), (&quirky, 0.5)] {
        let s = Fmi2::instantiate(fmu);
        assert_eq!(s.set(M_C, 800.0), 0);
        s.initialize();
        assert_eq!(s.set(F, 400.0), 0);
        assert_eq!(s.step(0.0, 0.5), 0);
        assert_eq!(s.get(V_C), v_c);
    }
}

#[test]
fn packaged_freezes_without_no_set_prior_keeps_the_first_step() {
    use cosim_models::generic::dahlquist::X;
    for v in [
        Variant::FreezesWithoutNoSetPrior,
        Variant::Fmi3FreezesWithoutNoSetPrior,
    ] {
        let fmu = Fmu::open(&dist::variant_path("Dahlquist", v));
        let h = 0.25;
        // x' = -x, x(0) = 1: x = exp(-t) with the promise; without it, x
        // stays at exp(-h) after the first step while time advances.
        let run = |no_set_prior: bool| -> Vec<f64> {
            let mut xs = Vec::new();
            if v == Variant::FreezesWithoutNoSetPrior {
                let s = Fmi2::instantiate(&fmu);
                s.initialize();
                for k in 0..4 {
                    assert_eq!(s.step_flag(k as f64 * h, h, no_set_prior), 0);
                    xs.push(s.get(X));
                }
            } else {
                let s = Fmi3::instantiate(&fmu, c"freeze3");
                assert_eq!(s.enter(), 0);
                assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
                for k in 0..4 {
                    let t = k as f64 * h;
                    assert_eq!(s.do_step(t, h, no_set_prior), (0, false, false, t + h));
                    xs.push(s.get(X));
                }
            }
            xs
        };
        let normal = run(true);
        for (k, x) in normal.iter().enumerate() {
            let exact = (-(k as f64 + 1.0) * h).exp();
            assert!((x - exact).abs() < 1e-14, "{v:?} {k}: {x} vs {exact}");
        }
        let frozen = run(false);
        assert_eq!(frozen, vec![normal[0]; 4], "{v:?}");
    }
}

/// The environment variable that makes [`crash_at_exit_child`] run.
const CHILD_ENV: &str = "COSIM_MODELS_CRASH_AT_EXIT_CHILD";

/// Helper of [`packaged_crashes_at_exit_kills_the_process_at_exit`]: runs
/// only as its child (with [`CHILD_ENV`] = the FMU's path).
#[test]
#[ignore = "a child process of packaged_crashes_at_exit_kills_the_process_at_exit"]
fn crash_at_exit_child() {
    use cosim_models::generic::integrator::{U, X};
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let fmu = Fmu::open(Path::new(&path));
    {
        let s = Fmi2::instantiate(&fmu);
        s.initialize();
        assert_eq!(s.set(U, 2.0), 0);
        assert_eq!(s.step(0.0, 0.5), 0);
        assert_eq!(s.get(X), 1.0);
        assert_eq!(s.call("fmi2Terminate"), 0);
        // Dropping the instance calls fmi2FreeInstance.
    }
    // Unloads the library (dlclose): the handler must survive it.
    drop(fmu);
    println!("child: the run finished normally");
}

#[test]
fn packaged_crashes_at_exit_kills_the_process_at_exit() {
    use std::os::unix::process::ExitStatusExt;
    dist_dir();
    let quirky = dist::variant_path("Integrator", Variant::CrashesAtExit);
    let full = dist::fmu_path(FmiVersion::Fmi2, "Integrator");
    for (path, crashes) in [(&quirky, true), (&full, false)] {
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "crash_at_exit_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, path)
            .output()
            .expect("child process");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("child: the run finished normally")
                && stdout.contains("test result: ok. 1 passed"),
            "{stdout}"
        );
        if crashes {
            assert_eq!(out.status.signal(), Some(SIGSEGV), "{:?}", out.status);
        } else {
            assert_eq!(out.status.code(), Some(0), "{:?}", out.status);
        }
    }
}

/// SIGSEGV on Linux.
const SIGSEGV: i32 = 11;

// ------------------------------------------------------------- thermostat

#[test]
fn fmi2_thermostat_fmus_declare_discrete_variables() {
    let dir = dist_dir();
    let room = Fmu::open(&dir.join("fmi2").join("ThermostatRoom.fmu"));
    for needle in [
        r#"<ScalarVariable name="heater_on" valueReference="1" description="Heater switched on (held over the step)" causality="input" variability="discrete">"#,
        r#"<Boolean start="false"/>"#,
        r#"<ScalarVariable name="level" valueReference="2" description="Heating level; heating q = level * P_unit while heater_on" causality="input" variability="discrete">"#,
        r#"<Integer start="1"/>"#,
        r#"<ScalarVariable name="T" valueReference="3" description="Room temperature" causality="output" variability="continuous" initial="calculated">"#,
        r#"<Real quantity="ThermodynamicTemperature" unit="degC"/>"#,
        r#"<BaseUnit K="1" offset="273.15"/>"#,
        r#"<Unknown index="4" dependencies="" dependenciesKind=""/>"#,
        r#"maxOutputDerivativeOrder="1""#,
        r#"canInterpolateInputs="true""#,
        r#"providesDirectionalDerivative="false""#,
    ] {
        assert!(room.xml.contains(needle), "ThermostatRoom: {needle}");
    }
    let ctl = Fmu::open(&dir.join("fmi2").join("ThermostatController.fmu"));
    for needle in [
        r#"<ScalarVariable name="heater_on" valueReference="2" description="Heater on (discrete state)" causality="output" variability="discrete" initial="calculated">"#,
        r#"<ScalarVariable name="switches" valueReference="4" description="Number of changes of heater_on" causality="output" variability="discrete" initial="calculated">"#,
        r#"<ScalarVariable name="on_start" valueReference="8" description="Heater state before the first step" causality="parameter" variability="fixed" initial="exact">"#,
        r#"<Boolean start="true"/>"#,
        r#"<Unknown index="3" dependencies="" dependenciesKind=""/>"#,
        r#"<Unknown index="4" dependencies="" dependenciesKind=""/>"#,
        r#"<Unknown index="5" dependencies="" dependenciesKind=""/>"#,
        r#"<Unknown index="3" dependencies="9"/>"#,
        r#"<Unknown index="4" dependencies="2 8"/>"#,
        r#"<Unknown index="5" dependencies=""/>"#,
        r#"maxOutputDerivativeOrder="0""#,
    ] {
        assert!(ctl.xml.contains(needle), "ThermostatController: {needle}");
    }
    assert!(!ctl.xml.contains("<Boolean start=\"1\""));
}

#[test]
fn fmi2_thermostat_closed_loop_through_the_c_abi() {
    use cosim_models::thermostat::{controller as c, room as r};
    let dir = dist_dir();
    let room_fmu = Fmu::open(&dir.join("fmi2").join("ThermostatRoom.fmu"));
    let ctl_fmu = Fmu::open(&dir.join("fmi2").join("ThermostatController.fmu"));
    let room = Fmi2::instantiate(&room_fmu);
    let ctl = Fmi2::instantiate(&ctl_fmu);
    for s in [&room, &ctl] {
        assert_eq!(s.setup(), 0);
        assert_eq!(s.call("fmi2EnterInitializationMode"), 0);
    }
    assert_eq!(room.set(r::P_UNIT, 12.0), 0);
    assert_eq!(room.get_bool(r::HEATER_ON), 0);
    assert_eq!(room.get_int(r::LEVEL), 1);
    assert_eq!(ctl.get_bool(c::ON_START), 1);
    for s in [&room, &ctl] {
        assert_eq!(s.call("fmi2ExitInitializationMode"), 0);
    }
    assert_eq!((ctl.get_bool(c::HEATER_ON), ctl.get_int(c::LEVEL)), (1, 2));
    // Type errors through the C ABI.
    let (st, _) = ctl.get_real(c::LEVEL);
    assert_eq!(st, 3);
    assert!(logged("variable level (vr 3) is of type Integer, not Real"));
    assert_eq!(room.set_bool(r::LEVEL, 1), 3);
    assert_eq!(room.set_int(r::HEATER_ON, 1), 3);
    assert_eq!(room.set_der(&[r::LEVEL], &[1], &[1.0]), 3);
    // The loop, 1 s steps, with an exact check of the room's first step.
    let (mut t, h) = (0.0, 1.0);
    let mut changes = 0;
    let mut state: *mut c_void = std::ptr::null_mut();
    let mut saved = None;
    for n in 0..300 {
        let temp = room.get(r::T);
        let (on, level) = (ctl.get_bool(c::HEATER_ON), ctl.get_int(c::LEVEL));
        assert_eq!(room.set_bool(r::HEATER_ON, on), 0);
        assert_eq!(room.set_int(r::LEVEL, level), 0);
        assert_eq!(ctl.set(c::T, temp), 0);
        assert_eq!(room.step(t, h), 0);
        // The controller's state is restored below: no promise not to.
        assert_eq!(ctl.step_flag(t, h, false), 0);
        t += h;
        if n == 0 {
            // T_e = 10 + 2 * 12 = 34 from T0 = 15.
            let exact = 34.0 + (15.0 - 34.0) * (-1.0f64 / 60.0).exp();
            assert!((room.get(r::T) - exact).abs() < 1e-13);
        }
        if ctl.get_bool(c::HEATER_ON) != on {
            changes += 1;
        }
        assert_eq!(ctl.get_int(c::SWITCHES), changes);
        if n == 150 {
            assert_eq!(ctl.get_state(&mut state), 0);
            saved = Some((ctl.get_bool(c::HEATER_ON), ctl.get_int(c::LEVEL), changes));
        }
    }
    assert!(changes >= 4, "{changes}");
    // Restoring the controller brings its discrete state back.
    assert_eq!(ctl.set_state(state), 0);
    let (on, level, sw) = saved.expect("state saved");
    assert_eq!(
        (
            ctl.get_bool(c::HEATER_ON),
            ctl.get_int(c::LEVEL),
            ctl.get_int(c::SWITCHES)
        ),
        (on, level, sw)
    );
    for s in [&room, &ctl] {
        assert_eq!(s.call("fmi2Terminate"), 0);
    }
}

#[test]
fn fmi3_thermostat_controller_boolean_int32_and_serialized_state() {
    use cosim_models::thermostat::controller::{HEATER_ON, LEVEL, SWITCHES, T};
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("ThermostatController.fmu"));
    for needle in [
        r#"<Boolean name="heater_on" valueReference="2" description="Heater on (discrete state)" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<Int32 name="level" valueReference="3" description="Heating level: 2 if T &lt; T_boost, else 1" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<Boolean name="on_start" valueReference="8" description="Heater state before the first step" causality="parameter" variability="fixed" initial="exact" start="true"/>"#,
        r#"<Output valueReference="2" dependencies="" dependenciesKind=""/>"#,
        r#"<InitialUnknown valueReference="3" dependencies="1 7"/>"#,
    ] {
        assert!(fmu.xml.contains(needle), "{needle}");
    }
    let room = Fmu::open(&dist_dir().join("fmi3").join("ThermostatRoom.fmu"));
    assert!(room.xml.contains(
        r#"<Boolean name="heater_on" valueReference="1" description="Heater switched on (held over the step)" causality="input" variability="discrete" start="false"/>"#
    ));
    assert!(room.xml.contains(r#"<Int32 name="level" valueReference="2" description="Heating level; heating q = level * P_unit while heater_on" causality="input" variability="discrete" start="1"/>"#));
    let s = Fmi3::instantiate(&fmu, c"ctl3");
    let outputs = || {
        let (status, b) = s.get_bools([HEATER_ON]);
        assert_eq!(status, 0);
        let (status, n) = s.get_i32s([LEVEL, SWITCHES]);
        assert_eq!(status, 0);
        (b[0], n[0], n[1])
    };
    let go = |t: f64, temp: f64| {
        assert_eq!(s.set(T, temp), 0);
        assert_eq!(s.step(t, 1.0), 0);
    };
    assert_eq!(s.enter(), 0);
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    assert_eq!(outputs(), (true, 2, 0));
    go(0.0, 22.0);
    assert_eq!(outputs(), (false, 1, 1));
    let mut st: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st), 0);
    let bytes = s.serialize_state(st);
    go(1.0, 18.0);
    assert_eq!(outputs(), (true, 1, 2));
    go(2.0, 15.0);
    assert_eq!(outputs(), (true, 2, 2));
    let mut st2 = s.deserialize_state(&bytes);
    assert_eq!(s.set_state(st2), 0);
    assert_eq!(outputs(), (false, 1, 1));
    // Wrong type through the FMI 3 getters.
    assert_eq!(s.get_f64s([HEATER_ON]).0, 3);
    assert_eq!(s.free_state(&mut st), 0);
    assert_eq!(s.free_state(&mut st2), 0);
    assert_eq!(s.call("fmi3Terminate"), 0);
    assert!(logged(
        "variable heater_on (vr 2) is of type Boolean, not Float64"
    ));
}

// ------------------------------------------------ FMI 3 intermediate update

fn input_poly(k: usize, vr: u32, h: f64) -> [f64; 4] {
    let p = (k as f64) * 0.9 + f64::from(vr) * 0.4;
    [
        0.05 * (1.0 + p.sin()),
        0.3 * p.cos() / h,
        -0.2 * p.sin() / (h * h),
        0.5 * (0.5 * p).cos() / (h * h * h),
    ]
}

/// `f3` with the test importer's callback and `f2`, both initialized.
fn side_by_side<'a>(f2: &'a Fmu, f3: &'a Fmu) -> (Fmi2<'a>, Fmi3<'a>) {
    let s3 = Fmi3::with_importer(f3);
    let s2 = Fmi2::instantiate(f2);
    s2.initialize();
    (s2, s3)
}

/// Sets the inputs `ins` of step `k` (of `h`, from 0) in both instances to
/// their [`input_poly`] values; in `s2` also their derivatives if
/// `derivatives`, in `s3`'s importer the polynomials. Returns the step's time.
fn set_inputs(s2: &Fmi2, s3: &Fmi3, ins: &[u32], k: usize, h: f64, derivatives: bool) -> f64 {
    let t = k as f64 * h;
    let polys: Vec<(u32, [f64; 4])> = ins.iter().map(|&vr| (vr, input_poly(k, vr, h))).collect();
    for (vr, c) in &polys {
        assert_eq!(s2.set(*vr, c[0]), 0);
        if derivatives {
            assert_eq!(s2.set_der(&[*vr; 3], &[1, 2, 3], &c[1..]), 0);
        }
        assert_eq!(s3.set(*vr, c[0]), 0);
    }
    *s3.importer().polys.lock().expect("polys") = (t, polys);
    t
}

fn observed_reals(name: &str) -> Vec<u32> {
    let spec = cosim_models::spec(name).expect("model");
    spec.variables
        .iter()
        .filter(|v| {
            v.ty == fmu_kit::VarType::Real
                && matches!(
                    v.causality,
                    fmu_kit::Causality::Output
                        | fmu_kit::Causality::Local
                        | fmu_kit::Causality::Input
                )
        })
        .map(|v| v.vr)
        .collect()
}

fn continuous_inputs(name: &str) -> Vec<u32> {
    let spec = cosim_models::spec(name).expect("model");
    spec.variables
        .iter()
        .filter(|v| v.is_continuous_real_input())
        .map(|v| v.vr)
        .collect()
}

#[test]
fn packaged_fmi3_with_intermediate_update_matches_fmi2_with_input_derivatives() {
    let dir = dist_dir();
    for name in [
        "TwoMassS1",
        "TwoMassS2",
        "QuarterCarChassis",
        "QuarterCarWheelSuspension",
        "Integrator",
    ] {
        let f3 = Fmu::open(&dir.join("fmi3").join(format!("{name}.fmu")));
        let f2 = Fmu::open(&dir.join("fmi2").join(format!("{name}.fmu")));
        assert!(
            f3.xml.contains("providesIntermediateUpdate=\"true\""),
            "{name}"
        );
        let (s2, s3) = side_by_side(&f2, &f3);
        let ins = continuous_inputs(name);
        let obs = observed_reals(name);
        let h = 1e-3;
        let mut scale = vec![0.0f64; obs.len()];
        for k in 0..10 {
            let t = set_inputs(&s2, &s3, &ins, k, h, true);
            assert_eq!(s2.step(t, h), 0);
            assert_eq!(s3.step(t, h), 0, "{name} step {k}");
            for (j, &vr) in obs.iter().enumerate() {
                let (x2, x3) = (s2.get(vr), s3.get(vr));
                scale[j] = scale[j].max(x2.abs()).max(1e-12);
                assert!(
                    (x2 - x3).abs() <= 1e-12 * scale[j],
                    "{name} step {k} vr {vr}: FMI 2 {x2} vs FMI 3 {x3}"
                );
            }
        }
        let times = s3.times();
        assert!(!times.is_empty(), "{name}: the callback was called");
        let last_t = 9.0 * h;
        assert!(
            times
                .iter()
                .all(|&s| (0.0..=last_t + h + 1e-15).contains(&s)),
            "{name}"
        );
        assert_eq!(
            *times.last().expect("times"),
            last_t + h,
            "{name}: ends at t + h"
        );
        assert_eq!(
            s3.importer()
                .failed_sets
                .load(std::sync::atomic::Ordering::SeqCst),
            0,
            "{name}"
        );
    }
}

#[test]
fn packaged_fmi3_variants_without_intermediate_update_never_call_back() {
    let dir = dist_dir();
    for name in cosim_models::VARIANT_MODELS {
        let path = dist::variant_path(name, Variant::NoIntermediateUpdate);
        assert_eq!(
            path.file_name().and_then(|f| f.to_str()),
            Some(format!("{name}-fmi3-no-intermediate-update.fmu").as_str())
        );
        // Beside the full FMI 3 builds: `variants/` is for FMI 2-only tools.
        assert_eq!(path.parent(), Some(dir.join("fmi3").as_path()));
        let f3 = Fmu::open(&path);
        assert!(f3.xml.contains("fmiVersion=\"3.0\""), "{name}");
        assert!(
            f3.xml.contains("providesIntermediateUpdate=\"false\""),
            "{name}"
        );
        assert!(!f3.xml.contains("intermediateUpdate=\"true\""), "{name}");
        assert!(
            f3.xml.contains(&format!(
                "modelIdentifier=\"{name}_fmi3_no_intermediate_update\""
            )),
            "{name}"
        );
        assert!(
            f3.token().to_string_lossy().contains(":fmi3:")
                && f3.token().to_string_lossy().contains("u0:")
        );
        if ![
            "TwoMassS1",
            "TwoMassS2",
            "QuarterCarChassis",
            "QuarterCarWheelSuspension",
        ]
        .contains(&name)
        {
            continue;
        }
        // Stepped with a callback: never called, inputs held exactly as the
        // FMI 2 build without input derivatives.
        let f2 = Fmu::open(&dir.join("fmi2").join(format!("{name}.fmu")));
        let (s2, s3) = side_by_side(&f2, &f3);
        let ins = continuous_inputs(name);
        let obs = observed_reals(name);
        let h = 1e-3;
        for k in 0..5 {
            let t = set_inputs(&s2, &s3, &ins, k, h, false);
            assert_eq!(s2.step(t, h), 0);
            assert_eq!(s3.step(t, h), 0);
            for &vr in &obs {
                assert_eq!(s2.get(vr).to_bits(), s3.get(vr).to_bits(), "{name} vr {vr}");
            }
        }
        assert!(s3.times().is_empty(), "{name}");
    }
}

#[test]
fn packaged_fmi3_fmus_declare_intermediate_update_where_fmi2_interpolates() {
    let dir = dist_dir();
    // (Model Exchange only models have no co-simulation, so no intermediate update.)
    for spec in cosim_models::registry()
        .iter()
        .filter(|s| s.has_co_simulation())
    {
        let x3 = Fmu::open(&dir.join("fmi3").join(format!("{}.fmu", spec.name))).xml;
        // TypeMirror has no FMI 2 build (and interpolates nothing).
        let interp = spec.supports(FmiVersion::Fmi2)
            && Fmu::open(&dir.join("fmi2").join(format!("{}.fmu", spec.name)))
                .xml
                .contains("canInterpolateInputs=\"true\"");
        assert_eq!(interp, spec.can_interpolate_inputs, "{}", spec.name);
        assert!(
            x3.contains(&format!("providesIntermediateUpdate=\"{interp}\"")),
            "{}",
            spec.name
        );
        let n = continuous_inputs(spec.name).len();
        assert_eq!(
            x3.matches("intermediateUpdate=\"true\"").count(),
            if interp { n } else { 0 },
            "{}",
            spec.name
        );
        assert!(
            x3.contains(if interp { "u1:" } else { "u0:" }),
            "{}",
            spec.name
        );
    }
}

// ------------------------------------------------------------- TypeMirror

/// Every `y_*` (or `u_*`) of a TypeMirror, each read with its own getter.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mirror {
    f32: f32,
    i8: i8,
    u8: u8,
    i16: i16,
    u16: u16,
    u32: u32,
    i64: i64,
    u64: u64,
}

impl Mirror {
    /// Reads the variables `vrs` (in the order of `type_mirror::PAIRS`).
    fn read(s: &Fmi3, vrs: [u32; 8]) -> Mirror {
        fn ok<T>((st, [x]): (c_int, [T; 1])) -> T {
            assert_eq!(st, 0);
            x
        }
        Mirror {
            f32: ok(s.get_values("fmi3GetFloat32", [vrs[0]], f32::NAN)),
            i8: ok(s.get_values("fmi3GetInt8", [vrs[1]], 0)),
            u8: ok(s.get_values("fmi3GetUInt8", [vrs[2]], 0)),
            i16: ok(s.get_values("fmi3GetInt16", [vrs[3]], 0)),
            u16: ok(s.get_values("fmi3GetUInt16", [vrs[4]], 0)),
            u32: ok(s.get_values("fmi3GetUInt32", [vrs[5]], 0)),
            i64: ok(s.get_values("fmi3GetInt64", [vrs[6]], 0)),
            u64: ok(s.get_values("fmi3GetUInt64", [vrs[7]], 0)),
        }
    }
    /// Writes the variables `vrs`, each with its own setter.
    fn write(&self, s: &Fmi3, vrs: [u32; 8]) {
        assert_eq!(s.set_values("fmi3SetFloat32", [vrs[0]], [self.f32]), 0);
        assert_eq!(s.set_values("fmi3SetInt8", [vrs[1]], [self.i8]), 0);
        assert_eq!(s.set_values("fmi3SetUInt8", [vrs[2]], [self.u8]), 0);
        assert_eq!(s.set_values("fmi3SetInt16", [vrs[3]], [self.i16]), 0);
        assert_eq!(s.set_values("fmi3SetUInt16", [vrs[4]], [self.u16]), 0);
        assert_eq!(s.set_values("fmi3SetUInt32", [vrs[5]], [self.u32]), 0);
        assert_eq!(s.set_values("fmi3SetInt64", [vrs[6]], [self.i64]), 0);
        assert_eq!(s.set_values("fmi3SetUInt64", [vrs[7]], [self.u64]), 0);
    }
    /// The starts plus `k`.
    fn starts_plus(k: u8) -> Mirror {
        Mirror {
            f32: 0.5 + f32::from(k),
            i8: -3 + k as i8,
            u8: 200 + k,
            i16: -300 + i16::from(k),
            u16: 60000 + u16::from(k),
            u32: 4_000_000_000 + u32::from(k),
            i64: -5_000_000_000 + i64::from(k),
            u64: 9_000_000_000_000 + u64::from(k),
        }
    }
    fn sum(&self) -> f64 {
        f64::from(self.f32)
            + f64::from(self.i8)
            + f64::from(self.u8)
            + f64::from(self.i16)
            + f64::from(self.u16)
            + f64::from(self.u32)
            + self.i64 as f64
            + self.u64 as f64
    }
}

#[test]
fn packaged_type_mirror_loop_counts_up_through_the_typed_c_functions() {
    use cosim_models::type_mirror::{PAIRS, SUM, U_F32, U_I64, U_U8, X_F32};
    let ins: [u32; 8] = PAIRS.map(|p| p.u);
    let outs: [u32; 8] = PAIRS.map(|p| p.y);
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("TypeMirror.fmu"));
    for needle in [
        r#"<Float32 name="u_f32" valueReference="1""#,
        r#"<Int8 name="u_i8" valueReference="2""#,
        r#"<UInt8 name="u_u8" valueReference="3""#,
        r#"<Int16 name="u_i16" valueReference="4""#,
        r#"<UInt16 name="u_u16" valueReference="5""#,
        r#"<UInt32 name="u_u32" valueReference="6""#,
        r#"<Int64 name="u_i64" valueReference="7""#,
        r#"<UInt64 name="u_u64" valueReference="8""#,
        r#"causality="input" variability="discrete" start="9000000000000"/>"#,
        r#"<Float64 name="sum" valueReference="17""#,
        r#"<Float32 name="x_f32" valueReference="18""#,
    ] {
        assert!(fmu.xml.contains(needle), "{needle}");
    }
    // a.y_* -> b.u_*, b.y_* -> a.u_*, Jacobi, 1 s steps.
    let a = Fmi3::instantiate(&fmu, c"a");
    let b = Fmi3::instantiate(&fmu, c"b");
    for s in [&a, &b] {
        assert_eq!(s.enter(), 0);
        assert_eq!(Mirror::read(s, ins), Mirror::starts_plus(0));
        assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    }
    let mut saved: *mut c_void = std::ptr::null_mut();
    let mut at_5 = None;
    for k in 0..10u8 {
        let (ya, yb) = (Mirror::read(&a, outs), Mirror::read(&b, outs));
        assert_eq!(ya, Mirror::starts_plus(k + 1), "a after {k} steps");
        assert_eq!(yb, ya, "b after {k} steps");
        yb.write(&a, ins);
        ya.write(&b, ins);
        if k == 5 {
            assert_eq!(a.get_state(&mut saved), 0);
            at_5 = Some(ya);
        }
        let t = f64::from(k);
        assert_eq!(a.step(t, 1.0), 0);
        assert_eq!(b.step(t, 1.0), 0);
        // sum: the inputs held over the step; x_f32' = u_f32.
        assert_eq!(a.get(SUM), yb.sum());
    }
    assert_eq!(Mirror::read(&a, outs), Mirror::starts_plus(11));
    // x_f32 = sum over the steps of u_f32 * 1 = 1.5 + 2.5 + ... + 10.5.
    let (st, [x]) = a.get_values("fmi3GetFloat32", [X_F32], f32::NAN);
    assert_eq!((st, x), (0, 60.0));
    // Restoring the state of step 5 brings the inputs and outputs back.
    assert_eq!(a.set_state(saved), 0);
    assert_eq!(Mirror::read(&a, ins), at_5.expect("saved"));
    assert_eq!(Mirror::read(&a, outs), Mirror::starts_plus(6));
    assert_eq!(a.free_state(&mut saved), 0);
    // Errors through the C ABI, naming the variable.
    assert_eq!(a.set_values("fmi3SetInt64", [U_I64], [i64::MAX]), 3);
    assert!(logged(
        "value 9223372036854775807 of u_i64 (vr 7) cannot be stored exactly"
    ));
    assert_eq!(a.get_values("fmi3GetInt8", [U_U8], 0).0, 3);
    assert!(logged("variable u_u8 (vr 3) is of type UInt8, not Int8"));
    assert_eq!(a.get_f64s([U_F32]).0, 3);
    assert!(logged(
        "variable u_f32 (vr 1) is of type Float32, not Float64"
    ));
    // Saturation: u_u8 = 255 gives y_u8 = 255 after the step.
    assert_eq!(a.set_values("fmi3SetUInt8", [U_U8], [255u8]), 0);
    assert_eq!(a.step(5.0, 1.0), 0);
    assert_eq!(a.get_values("fmi3GetUInt8", [outs[2]], 0), (0, [255u8]));
    // The library's fmi2Instantiate refuses an FMI 2 token of the model.
    let spec = cosim_models::spec("TypeMirror").expect("model");
    let caps2 = fmu_kit::Capabilities::full(spec, FmiVersion::Fmi2);
    let tok2 = CString::new(fmu_kit::token(spec, FmiVersion::Fmi2, &caps2)).expect("token");
    let cb = Callbacks2 {
        logger: logger2 as *const c_void,
        allocate: std::ptr::null(),
        free: std::ptr::null(),
        step_finished: std::ptr::null(),
        env: std::ptr::null_mut(),
    };
    // SAFETY: valid strings and callbacks; fmi2Instantiate has this signature.
    let c = unsafe {
        fmu.sym::<Instantiate2>("fmi2Instantiate")(
            c"t2".as_ptr(),
            1,
            tok2.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        )
    };
    assert!(c.is_null());
    assert!(logged(
        "TypeMirror has no fmi2 build: u_f32 is of the FMI 3 only type Float32"
    ));
    for s in [&a, &b] {
        assert_eq!(s.call("fmi3Terminate"), 0);
    }
}

// ------------------------------------- FMI 3 structural parameters (StructuralGain)

#[test]
fn packaged_structural_gain_takes_n_in_configuration_mode_only() {
    use cosim_models::structural_gain::{K, N, U, Y};
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("StructuralGain.fmu"));
    for needle in [
        r#"<Float64 name="u" valueReference="1" description="Input" causality="input" variability="continuous" start="0.0"/>"#,
        r#"<Float64 name="y" valueReference="2" description="Output y = k * n * u" causality="output" variability="continuous" initial="calculated"/>"#,
        r#"<Float64 name="k" valueReference="3" description="Gain (ordinary parameter)" causality="parameter" variability="fixed" initial="exact" start="1.0"/>"#,
        r#"<UInt64 name="n" valueReference="4" description="Integer gain factor &gt;= 1 (structural parameter: set in Configuration Mode only)" causality="structuralParameter" variability="fixed" initial="exact" min="1" start="1"/>"#,
        r#"<Output valueReference="2" dependencies="1" dependenciesKind="fixed"/>"#,
        r#"<InitialUnknown valueReference="2" dependencies="1 3 4"/>"#,
    ] {
        assert!(fmu.xml.contains(needle), "{needle}\n{}", fmu.xml);
    }
    let s = Fmi3::instantiate(&fmu, c"sg3");
    let set_n = |n: u64| s.set_values("fmi3SetUInt64", [N], [n]);
    let get_n = || s.get_values("fmi3GetUInt64", [N], u64::MAX);

    // Instantiated: n is refused, and there is no Configuration Mode to leave.
    assert_eq!(set_n(3), 3);
    assert!(logged(
        "fmi3SetUInt64: Illegal call sequence: structuralParameter n (vr 4, variability fixed, initial exact) \
         cannot be set in state Instantiated: structural parameters can only be set in Configuration Mode (fmi3EnterConfigurationMode)"
    ));
    assert_eq!(s.call("fmi3ExitConfigurationMode"), 3);

    // Configuration Mode: n only.
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 0);
    assert_eq!(get_n(), (0, [1]));
    assert_eq!(set_n(3), 0);
    assert_eq!(get_n(), (0, [3]));
    assert_eq!(s.set(U, 1.0), 3);
    assert_eq!(s.set(K, 2.0), 3);
    assert!(logged(
        "fmi3SetFloat64: Illegal call sequence: parameter k (vr 3, variability fixed, initial exact) cannot be set in state \
         Configuration Mode: only structural parameters can be set there"
    ));
    assert_eq!(s.get_f64s([Y]).0, 3);
    assert_eq!(s.enter(), 3);
    assert_eq!(s.step(0.0, 0.01), 3);
    let mut st: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st), 3);
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 3);
    assert_eq!(s.call("fmi3ExitConfigurationMode"), 0);

    // Back in Instantiated: k and u as usual; n no more.
    assert_eq!(s.set(K, 2.0), 0);
    assert_eq!(s.set(U, 1.5), 0);
    assert_eq!(s.enter(), 0);
    assert_eq!(set_n(4), 3);
    assert!(logged(
        "fmi3SetUInt64: Illegal call sequence: structuralParameter n (vr 4, variability fixed, initial exact) \
         cannot be set in state Initialization Mode: structural parameters can only be set in Configuration Mode"
    ));
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 3);
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);

    // Step Mode: y = k n u, with feed-through.
    assert_eq!(s.get(Y), 2.0 * 3.0 * 1.5);
    assert_eq!(s.step(0.0, 0.01), 0);
    assert_eq!(s.set(U, -1.0), 0);
    assert_eq!(s.get(Y), -6.0);
    assert_eq!(set_n(5), 3);
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 3);
    assert!(logged(
        "fmi3EnterConfigurationMode: Illegal call sequence: called in state Step Mode (Configuration Mode is entered from Instantiated only"
    ));
    assert_eq!(get_n(), (0, [3]));

    // The FMU state keeps n; a reset restores its start value.
    assert_eq!(s.get_state(&mut st), 0);
    let bytes = s.serialize_state(st);
    assert_eq!(s.call("fmi3Reset"), 0);
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 0);
    assert_eq!(get_n(), (0, [1]));
    assert_eq!(set_n(0), 0);
    assert_eq!(s.call("fmi3ExitConfigurationMode"), 0);
    assert_eq!(s.enter(), 0);
    // n = 0 is named when initialization ends.
    assert_eq!(s.call("fmi3ExitInitializationMode"), 3);
    assert!(logged("fmi3ExitInitializationMode: n must be >= 1, got 0"));
    let mut st2 = s.deserialize_state(&bytes);
    assert_eq!(s.set_state(st2), 0);
    assert_eq!(get_n(), (0, [3]));
    assert_eq!(s.get(Y), -6.0);
    assert_eq!(s.step(0.01, 0.01), 0);
    assert_eq!(s.free_state(&mut st), 0);
    assert_eq!(s.free_state(&mut st2), 0);
    assert_eq!(s.call("fmi3Terminate"), 0);
}

#[test]
fn packaged_fmus_without_structural_parameters_refuse_configuration_mode() {
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("Gain.fmu"));
    assert!(!fmu.xml.contains("structuralParameter"));
    let s = Fmi3::instantiate(&fmu, c"noconf3");
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 3);
    assert!(logged(
        "fmi3EnterConfigurationMode: this FMU has no structural parameters (causality=\"structuralParameter\"), so it has no Configuration Mode"
    ));
    assert_eq!(s.call("fmi3ExitConfigurationMode"), 3);
    // Nothing changed: the run goes on.
    assert_eq!(s.enter(), 0);
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    assert_eq!(s.step(0.0, 0.01), 0);
    assert_eq!(s.call("fmi3Terminate"), 0);
}

// ------------------------------------------ FMI 3 arrays (StateSpace)

#[test]
fn packaged_state_space_resizes_in_configuration_mode_and_integrates_exactly() {
    use cosim_models::state_space::{A, B, C, D, M, N, R, U, X, X0, Y};
    let fmu = Fmu::open(&dist_dir().join("fmi3").join("StateSpace.fmu"));
    for needle in [
        "<Float64 name=\"A\" valueReference=\"4\" description=\"Matrix coefficient A\" causality=\"parameter\" \
         variability=\"tunable\" initial=\"exact\" start=\"1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0\">\n      \
         <Dimension valueReference=\"2\"/>\n      <Dimension valueReference=\"2\"/>\n    </Float64>",
        "<Float64 name=\"u\" valueReference=\"9\" description=\"Input vector\" causality=\"input\" \
         variability=\"continuous\" start=\"1.0 2.0 3.0\">\n      <Dimension valueReference=\"1\"/>\n    </Float64>",
        "<Output valueReference=\"10\" dependencies=\"9\" dependenciesKind=\"dependent\"/>",
    ] {
        assert!(fmu.xml.contains(needle), "{needle}\n{}", fmu.xml);
    }
    let s = Fmi3::instantiate(&fmu, c"ss3");
    // n = 2, m = r = 1: the rotation x1' = x2, x2' = -x1 + u, y = x1.
    assert_eq!(s.call("fmi3EnterConfigurationMode"), 0);
    assert_eq!(s.set_values("fmi3SetUInt64", [M, N, R], [1u64, 2, 1]), 0);
    assert_eq!(s.call("fmi3ExitConfigurationMode"), 0);
    assert_eq!(
        s.set_f64_elements(
            &[A, B, C, D],
            &[0.0, 1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
        ),
        0
    );
    assert_eq!(s.set_f64_elements(&[X0], &[1.0, 0.0]), 0);
    // The sizes of this configuration, not the defaults: 3 values refused.
    assert_eq!(s.set_f64_elements(&[U], &[0.5, 0.5, 0.5]), 3);
    assert!(logged(
        "fmi3SetFloat64: Expected nValues = 1 but was 3: nValues must be the sum of the current sizes of the variables (u[1]: 1)"
    ));
    assert_eq!(s.set_f64_elements(&[U], &[0.5]), 0);
    assert_eq!(s.enter(), 0);
    assert_eq!(s.call("fmi3ExitInitializationMode"), 0);
    assert_eq!(s.get_f64_elements(&[Y, X], 3), (0, vec![1.0, 1.0, 0.0]));
    assert_eq!(s.get_f64_elements(&[Y, X], 4).0, 3);
    assert!(logged(
        "fmi3GetFloat64: Expected nValues = 3 but was 4: nValues must be the sum of the current sizes of the variables (y[1]: 1, x[2]: 2)"
    ));
    let mut t = 0.0;
    for _ in 0..100 {
        assert_eq!(s.step(t, 0.05), 0);
        t += 0.05;
    }
    // x1 = c + (1 - c) cos t, x2 = -(1 - c) sin t with c = 0.5, t = 5.
    let (st, x) = s.get_f64_elements(&[X], 2);
    assert_eq!(st, 0);
    let want = [0.5 + 0.5 * t.cos(), -0.5 * t.sin()];
    for (g, w) in x.iter().zip(want) {
        assert!((g - w).abs() < 1e-13, "{x:?} vs {want:?}");
    }
    // The FMU state carries the arrays.
    let mut st1: *mut c_void = std::ptr::null_mut();
    assert_eq!(s.get_state(&mut st1), 0);
    let bytes = s.serialize_state(st1);
    assert_eq!(s.step(t, 0.05), 0);
    let mut st2 = s.deserialize_state(&bytes);
    assert_eq!(s.set_state(st2), 0);
    assert_eq!(s.get_f64_elements(&[X], 2), (0, x));
    assert_eq!(s.free_state(&mut st1), 0);
    assert_eq!(s.free_state(&mut st2), 0);
    assert_eq!(s.call("fmi3Terminate"), 0);
}
