//! FMI 3.0 intermediate update through the exported C functions: a Rust
//! `extern "C"` callback plays the importer, compared with the FMI 2 build
//! driven with the same polynomials as input derivatives, and with exact
//! solutions.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use super::intermediate::IntermediateUpdate;
use super::tests::{
    LOG3, fmi2DoStep, fmi2EnterInitializationMode, fmi2ExitInitializationMode, fmi2FreeInstance,
    fmi2GetReal, fmi2SetInteger, fmi2SetReal, fmi2SetRealInputDerivatives, fmi2SetupExperiment,
    fmi3EnterInitializationMode, fmi3ExitInitializationMode, fmi3FreeInstance, fmi3GetFMUState,
    fmi3GetFloat64, fmi3SetFloat64, fmi3SetInt32, fmi3Terminate, instantiate2_full,
    instantiate3_with, logged3, registry, rk, step3, token_c,
};
use crate::caps::{Capabilities, FmiVersion, Variant};
use crate::model::{ModelSpec, Vr};
use crate::xml;

/// What the test importer's callback works with (its `instanceEnvironment`).
#[derive(Default)]
struct Env {
    /// The instance, once instantiated.
    inst: AtomicPtr<c_void>,
    /// The input polynomial `(vr, t0, [u, u', u'', u'''])`; `None`: set nothing.
    poly: Mutex<Option<(Vr, f64, [f64; 4])>>,
    /// Every intermediateUpdateTime, in order.
    times: Mutex<Vec<f64>>,
    /// False once a callback came with flags other than the kit's.
    flags_ok: AtomicBool,
    /// Statuses of the callback's fmi3SetFloat64 calls.
    set_status: Mutex<Vec<c_int>>,
    /// Try illegal calls in the next callback.
    probe: AtomicBool,
    probe_results: Mutex<Vec<(&'static str, c_int)>>,
    /// Make, use and free another instance in the next callback.
    nested: AtomicBool,
    /// The nested instance and the statuses of its calls.
    nested_results: Mutex<(usize, Vec<c_int>)>,
}

impl Env {
    fn new() -> Box<Env> {
        let env = Box::<Env>::default();
        env.flags_ok.store(true, Ordering::SeqCst);
        env
    }
    fn ptr(&self) -> *mut c_void {
        self as *const Env as *mut c_void
    }
    fn set_poly(&self, vr: Vr, t0: f64, c: [f64; 4]) {
        if let Ok(mut p) = self.poly.lock() {
            *p = Some((vr, t0, c));
        }
    }
    fn times(&self) -> Vec<f64> {
        self.times.lock().map(|t| t.clone()).unwrap_or_default()
    }
    fn clear_times(&self) {
        if let Ok(mut t) = self.times.lock() {
            t.clear();
        }
    }
}

/// The importer's own evaluation of the Taylor polynomial (as
/// `cosim-fmi` does it; not the kit's Horner scheme).
fn importer_eval(c: &[f64; 4], tau: f64) -> f64 {
    c[0] + tau * (c[1] + tau * (c[2] / 2.0 + tau * c[3] / 6.0))
}

/// The test importer's `fmi3IntermediateUpdateCallback`.
unsafe extern "C" fn on_update(
    env: *mut c_void,
    time: f64,
    set_requested: bool,
    get_allowed: bool,
    step_finished: bool,
    can_return_early: bool,
    early_return_requested: *mut bool,
    early_return_time: *mut f64,
) {
    // SAFETY: `env` is the boxed `Env` the test passed at instantiation; it
    // outlives the instance.
    let env = unsafe { &*(env as *const Env) };
    if !(set_requested
        && !get_allowed
        && !step_finished
        && !can_return_early
        && !early_return_requested.is_null()
        && !early_return_time.is_null())
    {
        env.flags_ok.store(false, Ordering::SeqCst);
    }
    if let Ok(mut t) = env.times.lock() {
        t.push(time);
    }
    let inst = env.inst.load(Ordering::SeqCst);
    if env.probe.swap(false, Ordering::SeqCst) {
        probe(env, inst);
    }
    if env.nested.swap(false, Ordering::SeqCst) {
        nested(env);
    }
    let poly = env.poly.lock().ok().and_then(|p| *p);
    if let Some((vr, t0, c)) = poly {
        let u = importer_eval(&c, time - t0);
        // SAFETY: the instance is live (we are inside its fmi3DoStep);
        // one-element arrays.
        let status = unsafe { fmi3SetFloat64(inst, &vr, 1, &u, 1) };
        if let Ok(mut s) = env.set_status.lock() {
            s.push(status);
        }
    }
}

/// Illegal calls from inside the callback; each result is recorded.
fn probe(env: &Env, i: *mut c_void) {
    use rk::{A, K, U, X, Y};
    let mut r = Vec::new();
    let mut x = [0.0];
    // SAFETY: every pointer is valid for its call; the kit must refuse
    // these calls without touching the instance that fmi3DoStep holds.
    unsafe {
        r.push(("get", fmi3GetFloat64(i, [X].as_ptr(), 1, x.as_mut_ptr(), 1)));
        r.push(("set param", fmi3SetFloat64(i, &A, 1, &7.0, 1)));
        r.push(("set output", fmi3SetFloat64(i, &Y, 1, &7.0, 1)));
        r.push(("set unknown", fmi3SetFloat64(i, &99, 1, &7.0, 1)));
        r.push((
            "set mixed",
            fmi3SetFloat64(i, [U, A].as_ptr(), 2, [7.0, 7.0].as_ptr(), 2),
        ));
        r.push(("set null", fmi3SetFloat64(i, &U, 1, std::ptr::null(), 1)));
        r.push(("set int", fmi3SetInt32(i, &K, 1, &3, 1)));
        r.push(("step", step3(i, 0.0, 0.1)));
        let mut s: *mut c_void = std::ptr::null_mut();
        r.push(("state", fmi3GetFMUState(i, &mut s)));
        r.push(("terminate", fmi3Terminate(i)));
        fmi3FreeInstance(i);
    }
    if let Ok(mut p) = env.probe_results.lock() {
        *p = r;
    }
}

/// From inside the callback (a call of another instance under way on this
/// thread): another instance is made, used, freed and called again; each
/// status is recorded.
fn nested(env: &Env) {
    let mut r = Vec::new();
    let c = instantiate2_full(c"nested", spec("KitRk4"));
    let mut x = 0.0;
    // SAFETY: a live instance (then a freed one, which must be refused)
    // and one-element arrays.
    unsafe {
        r.push(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0));
        r.push(fmi2EnterInitializationMode(c));
        r.push(fmi2ExitInitializationMode(c));
        r.push(fmi2GetReal(c, &rk::X, 1, &mut x));
        fmi2FreeInstance(c);
        r.push(fmi2GetReal(c, &rk::X, 1, &mut x));
    }
    if let Ok(mut n) = env.nested_results.lock() {
        *n = (c as usize, r);
    }
}

fn spec(name: &str) -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == name)
        .unwrap_or(&registry()[0])
}

/// An FMI 3 instance of `model`, logging on, in Step Mode after setting
/// the parameters; `callback`: pass `on_update` with `env`.
fn fmi3(
    model: &str,
    caps: Capabilities,
    env: &Env,
    callback: bool,
    params: &[(Vr, f64)],
) -> *mut c_void {
    let tok = token_c(spec(model), FmiVersion::Fmi3, &caps);
    let cb: Option<IntermediateUpdate> = if callback { Some(on_update) } else { None };
    // SAFETY: valid strings, callbacks and environment (which outlives the instance).
    unsafe {
        let i = instantiate3_with(c"iu", &tok, false, &[], env.ptr(), cb);
        assert!(!i.is_null());
        env.inst.store(i, Ordering::SeqCst);
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
        for &(vr, x) in params {
            let st = if vr == rk::STEPS && model == "KitRk4" {
                fmi3SetInt32(i, &vr, 1, &(x as i32), 1)
            } else {
                fmi3SetFloat64(i, &vr, 1, &x, 1)
            };
            assert_eq!(st, 0);
        }
        assert_eq!(fmi3ExitInitializationMode(i), 0);
        i
    }
}

/// [`fmi3`] with every capability and `on_update`.
fn fmi3_full(model: &str, env: &Env, params: &[(Vr, f64)]) -> *mut c_void {
    let caps = Capabilities::full(spec(model), FmiVersion::Fmi3);
    fmi3(model, caps, env, true, params)
}

fn fmi2(model: &str, params: &[(Vr, f64)]) -> *mut c_void {
    let c = instantiate2_full(c"iu2", spec(model));
    assert!(!c.is_null());
    // SAFETY: a live instance and one-element arrays.
    unsafe {
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), 0);
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        for &(vr, x) in params {
            let st = if vr == rk::STEPS && model == "KitRk4" {
                fmi2SetInteger(c, &vr, 1, &(x as c_int))
            } else {
                fmi2SetReal(c, &vr, 1, &x)
            };
            assert_eq!(st, 0);
        }
        assert_eq!(fmi2ExitInitializationMode(c), 0);
        c
    }
}

fn get3(i: *mut c_void, vr: Vr) -> f64 {
    let mut x = f64::NAN;
    // SAFETY: one-element arrays.
    assert_eq!(unsafe { fmi3GetFloat64(i, &vr, 1, &mut x, 1) }, 0);
    x
}

fn get2(c: *mut c_void, vr: Vr) -> f64 {
    let mut x = f64::NAN;
    // SAFETY: one-element arrays.
    assert_eq!(unsafe { fmi2GetReal(c, &vr, 1, &mut x) }, 0);
    x
}

/// `fmi2SetRealInputDerivatives` of `vr`: orders 1, 2, 3 from `c[1..]`.
fn set_derivatives2(c2: *mut c_void, vr: Vr, c: &[f64; 4]) -> c_int {
    // SAFETY: arrays of length 3.
    unsafe {
        fmi2SetRealInputDerivatives(c2, [vr; 3].as_ptr(), 3, [1, 2, 3].as_ptr(), c[1..].as_ptr())
    }
}

/// The input polynomial `[u, u', u'', u''']` of step `k`.
fn poly(k: usize) -> [f64; 4] {
    let k = k as f64;
    [
        0.3 + 0.1 * k,
        -1.0 + 0.2 * k,
        4.0 - 0.5 * k,
        if (k as i64) % 2 == 0 { 12.0 } else { -9.0 },
    ]
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

/// The intermediate update times the kit's RK4 test model asks for in one
/// step: t, t + dt/2, t + dt, ..., t + h.
fn rk4_times(t: f64, h: f64, n: usize) -> Vec<f64> {
    let dt = h / n as f64;
    let mut v = vec![t];
    for i in 0..n {
        let (s, s_next) = rk::micro_step(t, h, n, i);
        v.push(s + 0.5 * dt);
        v.push(s_next);
    }
    v
}

#[test]
fn rk4_model_with_intermediate_update_matches_fmi2_input_derivatives() {
    use rk::{A, K, STEPS, U, W, X, Y};
    let s = spec("KitRk4");
    let caps = Capabilities::full(s, FmiVersion::Fmi3);
    assert!(caps.intermediate_update);
    let (h, n, w, k_in) = (0.1, 4usize, 0.5, 2);
    for a in [2.0, 0.0] {
        let params = [(A, a), (STEPS, n as f64)];
        let env = Env::new();
        let i3 = fmi3("KitRk4", caps, &env, true, &params);
        let c2 = fmi2("KitRk4", &params);
        let mut exact = 1.0;
        for k in 0..10 {
            let t = k as f64 * h;
            let c = poly(k);
            // SAFETY: valid one-element arrays; the polynomial's derivatives
            // follow the value (rule 1).
            unsafe {
                assert_eq!(fmi2SetReal(c2, [U, W].as_ptr(), 2, [c[0], w].as_ptr()), 0);
                assert_eq!(fmi2SetInteger(c2, &K, 1, &k_in), 0);
                assert_eq!(set_derivatives2(c2, U, &c), 0);
                assert_eq!(fmi2DoStep(c2, t, h, 1), 0);
                // FMI 3: the value at the communication point, the rest
                // through the callback; w is never set by the callback.
                assert_eq!(
                    fmi3SetFloat64(i3, [U, W].as_ptr(), 2, [c[0], w].as_ptr(), 2),
                    0
                );
                assert_eq!(fmi3SetInt32(i3, &K, 1, &k_in, 1), 0);
            }
            env.set_poly(U, t, c);
            env.clear_times();
            assert_eq!(step3(i3, t, h), 0);
            // One callback per distinct internal time, in order, the last at t + h.
            assert_eq!(env.times(), rk4_times(t, h, n), "step {k}");
            for vr in [X, Y, U, W] {
                let (x3, x2) = (get3(i3, vr), get2(c2, vr));
                assert!(close(x3, x2, 1e-12), "a {a} step {k} vr {vr}: {x3} vs {x2}");
            }
            // After the step: the last values set (u(t + h)), w held.
            assert!(close(get3(i3, U), importer_eval(&c, h), 1e-15));
            assert_eq!(get3(i3, W), w);
            // a = 0: x' = u + w + k, RK4 is Simpson's rule, exact for cubics.
            exact += c[0] * h
                + c[1] * h * h / 2.0
                + c[2] * h.powi(3) / 6.0
                + c[3] * h.powi(4) / 24.0
                + (w + f64::from(k_in)) * h;
            if a == 0.0 {
                assert!(close(get3(i3, X), exact, 1e-13), "step {k}");
            }
        }
        assert!(env.flags_ok.load(Ordering::SeqCst));
        assert!(
            env.set_status
                .lock()
                .is_ok_and(|s| !s.is_empty() && s.iter().all(|&x| x == 0))
        );
        // SAFETY: live instances, freed once.
        unsafe {
            fmi3FreeInstance(i3);
            fmi2FreeInstance(c2);
        }
    }
}

#[test]
fn exact_integrator_with_intermediate_update_matches_fmi2_and_the_exact_integral() {
    // KitTest: x' = u integrated exactly (`Inputs::integral`), y = p u.
    const U: Vr = 1;
    const Y: Vr = 2;
    const X: Vr = 3;
    let env = Env::new();
    let i3 = fmi3_full("KitTest", &env, &[]);
    let c2 = fmi2("KitTest", &[]);
    let h = 0.25;
    let mut exact = 0.0;
    for k in 0..12 {
        let t = k as f64 * h;
        let c = poly(k);
        // SAFETY: valid arrays.
        unsafe {
            assert_eq!(fmi2SetReal(c2, &U, 1, &c[0]), 0);
            assert_eq!(set_derivatives2(c2, U, &c), 0);
            assert_eq!(fmi2DoStep(c2, t, h, 1), 0);
            assert_eq!(fmi3SetFloat64(i3, &U, 1, &c[0], 1), 0);
        }
        env.set_poly(U, t, c);
        env.clear_times();
        assert_eq!(step3(i3, t, h), 0);
        // The cubic through four values: t + h {0, 1/4, 3/4, 1}; the last
        // one is the end of the step, so no further callback.
        assert_eq!(
            env.times(),
            vec![t, t + 0.25 * h, t + 0.75 * h, t + h],
            "step {k}"
        );
        exact += c[0] * h + c[1] * h * h / 2.0 + c[2] * h.powi(3) / 6.0 + c[3] * h.powi(4) / 24.0;
        let (x3, x2) = (get3(i3, X), get2(c2, X));
        assert!(close(x3, x2, 1e-12), "step {k}: {x3} vs {x2}");
        assert!(close(x3, exact, 1e-12), "step {k}: {x3} vs exact {exact}");
        // Feed-through after the step sees u(t + h) in both builds.
        assert!(close(get3(i3, Y), get2(c2, Y), 1e-12));
        assert!(close(get3(i3, U), importer_eval(&c, h), 1e-15));
    }
    assert!(env.flags_ok.load(Ordering::SeqCst));
    // SAFETY: live instances, freed once.
    unsafe {
        fmi3FreeInstance(i3);
        fmi2FreeInstance(c2);
    }
}

#[test]
fn without_callback_or_intermediate_update_the_inputs_are_held_bit_for_bit() {
    use rk::{A, STEPS, U, X, Y};
    let s = spec("KitRk4");
    let params = [(A, 2.0), (STEPS, 3.0)];
    let full = Capabilities::full(s, FmiVersion::Fmi3);
    let off = Capabilities::variant(s, FmiVersion::Fmi3, Variant::NoIntermediateUpdate);
    assert!(!off.intermediate_update);
    let null_env = Env::new();
    let i_null = fmi3("KitRk4", full, &null_env, false, &params);
    // The build without intermediate update never calls the callback it got.
    let off_env = Env::new();
    let i_off = fmi3("KitRk4", off, &off_env, true, &params);
    let c2 = fmi2("KitRk4", &params);
    let h = 0.05;
    for k in 0..8 {
        let t = k as f64 * h;
        let c = poly(k);
        off_env.set_poly(U, t, c);
        // SAFETY: valid arrays.
        unsafe {
            assert_eq!(fmi2SetReal(c2, &U, 1, &c[0]), 0);
            assert_eq!(fmi2DoStep(c2, t, h, 1), 0);
            for i in [i_null, i_off] {
                assert_eq!(fmi3SetFloat64(i, &U, 1, &c[0], 1), 0);
            }
        }
        assert_eq!(step3(i_null, t, h), 0);
        assert_eq!(step3(i_off, t, h), 0);
        for vr in [X, Y, U] {
            let zoh = get2(c2, vr).to_bits();
            assert_eq!(get3(i_null, vr).to_bits(), zoh, "step {k} vr {vr}");
            assert_eq!(get3(i_off, vr).to_bits(), zoh, "step {k} vr {vr}");
        }
    }
    assert!(off_env.times().is_empty() && null_env.times().is_empty());
    // SAFETY: live instances, freed once.
    unsafe {
        fmi3FreeInstance(i_null);
        fmi3FreeInstance(i_off);
        fmi2FreeInstance(c2);
    }
}

#[test]
fn inside_the_callback_only_setting_intermediate_inputs_is_allowed() {
    use rk::{A, STEPS, U, X};
    let env = Env::new();
    let i = fmi3_full("KitRk4", &env, &[(A, 1.0), (STEPS, 2.0)]);
    let c = [1.0, 2.0, 0.0, 0.0];
    env.set_poly(U, 0.0, c);
    env.probe.store(true, Ordering::SeqCst);
    assert_eq!(step3(i, 0.0, 0.1), 0, "the step itself succeeds");
    let results = env
        .probe_results
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    assert_eq!(results.len(), 10);
    for (what, status) in &results {
        assert_eq!(*status, 3, "{what} must be refused with fmi3Error");
    }
    for needle in [
        "fmi3GetFloat64: Illegal call sequence: called in Intermediate Update Mode",
        "fmi3SetFloat64: Illegal call sequence: variable a (vr 5) has no intermediateUpdate=\"true\" and cannot be set in Intermediate Update Mode",
        "fmi3SetFloat64: Illegal call sequence: variable y (vr 3) has no intermediateUpdate=\"true\"",
        "fmi3SetFloat64: unknown value reference 99 (Intermediate Update Mode",
        "fmi3SetFloat64: values is NULL",
        "fmi3SetInt32: Illegal call sequence: called in Intermediate Update Mode",
        "fmi3DoStep: Illegal call sequence: called in Intermediate Update Mode",
        "fmi3GetFMUState: Illegal call sequence: called in Intermediate Update Mode",
        "fmi3Terminate: Illegal call sequence: called in Intermediate Update Mode",
        "fmi3FreeInstance: Illegal call sequence: called in Intermediate Update Mode",
    ] {
        assert!(logged3(needle), "no log line {needle}");
    }
    // Nothing refused changed the instance: the parameter is unchanged, the
    // instance was not freed, and the values of the legal sets arrived.
    assert_eq!(get3(i, A), 1.0);
    assert!(get3(i, X).is_finite());
    assert!(close(get3(i, U), importer_eval(&c, 0.1), 1e-15));
    // The next communication point works as before.
    // SAFETY: one-element arrays.
    unsafe {
        assert_eq!(fmi3SetFloat64(i, &U, 1, &5.0, 1), 0);
    }
    assert_eq!(get3(i, U), 5.0);
    env.set_poly(U, 0.1, [5.0, 0.0, 0.0, 0.0]);
    assert_eq!(step3(i, 0.1, 0.1), 0);
    assert_eq!(get3(i, U), 5.0);
    // SAFETY: live instance, freed once (it survived the refused free).
    unsafe {
        assert_eq!(fmi3Terminate(i), 0);
        fmi3FreeInstance(i);
    }
    assert!(LOG3.lock().is_ok());
}

/// An instance made and freed by the importer while a call of another one
/// is under way on the same thread (from its callback) is found while it
/// lives and refused once freed, then and after the call.
#[test]
fn instances_made_and_freed_inside_a_callback_are_found_and_then_refused() {
    use rk::{A, STEPS, X};
    let env = Env::new();
    let i = fmi3_full("KitRk4", &env, &[(A, 1.0), (STEPS, 2.0)]);
    env.nested.store(true, Ordering::SeqCst);
    assert_eq!(step3(i, 0.0, 0.1), 0);
    let (c, statuses) = env
        .nested_results
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    assert_eq!(statuses, [0, 0, 0, 0, 3]);
    // After the step: the outer instance as before, the nested one gone.
    assert!(get3(i, X).is_finite());
    let mut x = 0.0;
    // SAFETY: a freed handle, which the kit must refuse; one-element arrays.
    assert_eq!(unsafe { fmi2GetReal(c as *mut c_void, &X, 1, &mut x) }, 3);
    // SAFETY: live instance, freed once.
    unsafe {
        assert_eq!(fmi3Terminate(i), 0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn required_intermediate_variables_must_be_intermediate_inputs() {
    use rk::{K, U, W, Y};
    let s = spec("KitRk4");
    let instantiate = |caps: Capabilities, required: &[Vr]| {
        let tok = token_c(s, FmiVersion::Fmi3, &caps);
        // SAFETY: valid strings and arrays; the instances are freed without
        // a step, so `on_update` never sees the NULL environment.
        unsafe {
            instantiate3_with(
                c"req",
                &tok,
                false,
                required,
                std::ptr::null_mut(),
                Some(on_update),
            )
        }
    };
    let full = Capabilities::full(s, FmiVersion::Fmi3);
    let i = instantiate(full, &[U, W]);
    assert!(!i.is_null());
    // SAFETY: live instance.
    unsafe { fmi3FreeInstance(i) };
    assert!(instantiate(full, &[U, Y]).is_null());
    assert!(logged3(
        "requiredIntermediateVariables: y (vr 3) has no intermediateUpdate"
    ));
    assert!(instantiate(full, &[K]).is_null());
    assert!(instantiate(full, &[42]).is_null());
    assert!(logged3(
        "requiredIntermediateVariables: unknown value reference 42"
    ));
    let off = Capabilities::variant(s, FmiVersion::Fmi3, Variant::NoIntermediateUpdate);
    assert!(instantiate(off, &[U]).is_null());
    assert!(logged3(
        "requiredIntermediateVariables given, but this FMU has providesIntermediateUpdate=false"
    ));
    let i = instantiate(off, &[]);
    assert!(!i.is_null());
    // SAFETY: live instance.
    unsafe { fmi3FreeInstance(i) };
}

#[test]
fn fmi3_model_description_declares_intermediate_update() {
    let s = spec("KitRk4");
    let full = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitRk4",
    );
    let lines: Vec<&str> = full.lines().map(str::trim).collect();
    let co = lines
        .iter()
        .find(|l| l.starts_with("<CoSimulation"))
        .copied()
        .unwrap_or("");
    for a in [
        r#"providesIntermediateUpdate="true""#,
        r#"mightReturnEarlyFromDoStep="false""#,
        r#"canReturnEarlyAfterIntermediateUpdate="false""#,
    ] {
        assert!(co.contains(a), "{co}");
    }
    assert!(full.contains("cosim:KitRk4:fmi3:s1z1d0i0v1j0u1:"), "{full}");
    for l in [
        r#"<Float64 name="u" valueReference="1" description="input set in intermediate updates" causality="input" variability="continuous" intermediateUpdate="true" start="0.0"/>"#,
        r#"<Float64 name="w" valueReference="2" description="input held" causality="input" variability="continuous" intermediateUpdate="true" start="0.0"/>"#,
        r#"<Int32 name="k" valueReference="7" description="discrete input" causality="input" variability="discrete" start="0"/>"#,
    ] {
        assert!(lines.contains(&l), "missing {l} in\n{full}");
    }
    // Exactly the two continuous inputs.
    assert_eq!(full.matches("intermediateUpdate=\"true\"").count(), 2);

    let off = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::variant(s, FmiVersion::Fmi3, Variant::NoIntermediateUpdate),
        "KitRk4_fmi3_no_intermediate_update",
    );
    assert!(off.contains(r#"providesIntermediateUpdate="false""#));
    assert!(!off.contains("intermediateUpdate=\"true\""));
    assert!(off.contains("cosim:KitRk4:fmi3:s1z1d0i0v1j0u0:"));

    // FMI 2: no such attributes; interpolation instead.
    let x2 = xml::model_description(
        s,
        FmiVersion::Fmi2,
        &Capabilities::full(s, FmiVersion::Fmi2),
        "KitRk4",
    );
    assert!(!x2.contains("ntermediateUpdate"));
    assert!(x2.contains(r#"canInterpolateInputs="true""#));

    // A model that does not interpolate inputs provides no intermediate update.
    let held = spec("KitRk4").clone().interpolate_inputs(false);
    let caps = Capabilities::full(&held, FmiVersion::Fmi3);
    assert!(!caps.intermediate_update);
    let x = xml::model_description(&held, FmiVersion::Fmi3, &caps, "KitRk4");
    assert!(x.contains(r#"providesIntermediateUpdate="false""#));
    assert!(!x.contains("intermediateUpdate=\"true\""));
    assert!(
        Capabilities {
            intermediate_update: true,
            ..caps
        }
        .check(&held, FmiVersion::Fmi3)
        .is_err()
    );
    assert!(
        Capabilities {
            intermediate_update: true,
            ..Capabilities::full(s, FmiVersion::Fmi2)
        }
        .check(s, FmiVersion::Fmi2)
        .is_err()
    );
    assert_eq!(
        crate::package::model_identifier(s, Variant::NoIntermediateUpdate),
        "KitRk4_fmi3_no_intermediate_update"
    );
}
