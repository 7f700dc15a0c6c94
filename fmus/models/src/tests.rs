//! Unit tests of the models, driven through `fmu_kit::Instance` (the code
//! path of the C exports minus pointer handling).

use fmu_kit::instance::{Cap, Mode};
use fmu_kit::testing::{
    get, get_any, get_array, get_bool, get_int, get_str, get1, initialized, instance, set,
    set_array, set_bool, set_int, set_str,
};
use fmu_kit::{
    Capabilities, Causality, FmiVersion, Instance, ModelSpec, Status, VarType, Variant, Vr,
};

use crate::reference::{self, QuarterCar};
use crate::{
    b2, generic, oscillator, quarter_car, registry, spec, thermostat, three_mass, two_mass,
};

fn model(name: &str) -> &'static ModelSpec {
    match spec(name) {
        Some(s) => s,
        None => panic!("no model {name}"),
    }
}

/// The scalar Real variables of a causality (derivatives exist for these
/// only).
fn real_vrs(spec: &ModelSpec, c: Causality) -> Vec<Vr> {
    spec.with_causality(c)
        .filter(|v| v.ty == VarType::Real && !v.is_array())
        .map(|v| v.vr)
        .collect()
}

fn ok<T>(r: Result<T, fmu_kit::instance::Fail>) -> T {
    match r {
        Ok(x) => x,
        Err(e) => panic!("{e:?}"),
    }
}

/// The version the tests of every model drive a model with: FMI 2 where
/// the model has an FMI 2 build, else FMI 3 (`TypeMirror`).
fn version_of(s: &ModelSpec) -> FmiVersion {
    if s.supports(FmiVersion::Fmi2) {
        FmiVersion::Fmi2
    } else {
        FmiVersion::Fmi3
    }
}

/// Sets one value of any type (integers as given, so whole).
fn set_typed(inst: &mut Instance, s: &ModelSpec, vr: Vr, x: f64) {
    let ty = s.variable(vr).map_or(VarType::Real, |v| v.ty);
    ok(inst.set(&[vr], ty, &[x]));
}

fn init(name: &str, params: &[(Vr, f64)]) -> Instance {
    ok(initialized(model(name), FmiVersion::Fmi2, params)).0
}

fn step(inst: &mut Instance, h: f64) {
    let t = inst.time();
    assert_eq!(ok(inst.do_step(t, h)), Status::Ok);
}

/// The models with a Co-Simulation interface (all but the Model Exchange
/// only ones, which `me_tests` covers), except those with Clocks: they run
/// with event mode only, their clocked variables readable only while a
/// Clock ticks (`clock_tests` covers them).
fn co_simulation_models() -> impl Iterator<Item = &'static ModelSpec> {
    registry()
        .iter()
        .filter(|s| s.has_co_simulation() && !s.has_clocks())
}

#[test]
fn every_spec_is_consistent_and_every_variant_possible() {
    assert_eq!(registry().len(), 41);
    let me_only: Vec<&str> = registry()
        .iter()
        .filter(|s| !s.has_co_simulation() && s.has_model_exchange())
        .map(|s| s.name)
        .collect();
    assert_eq!(
        me_only,
        ["BouncingBallME", "Robertson", "TimeEvents", "StepEvents"]
    );
    // Scheduled Execution: ClockedController beside Co-Simulation,
    // Partitions and CountdownPartitions alone.
    let se: Vec<(&str, bool)> = registry()
        .iter()
        .filter(|s| s.scheduled_execution)
        .map(|s| (s.name, s.has_co_simulation()))
        .collect();
    assert_eq!(
        se,
        [
            ("ClockedController", true),
            ("Partitions", false),
            ("CountdownPartitions", false)
        ]
    );
    for s in registry() {
        ok(s.check().map_err(fmu_kit::instance::Fail::usage));
        // FMI 3 only: TypeMirror (FMI 3 only types), StructuralGain (a
        // structural parameter), StateSpace (arrays), ClockedController,
        // ThresholdTrigger, ClockedCounter, Partitions, AperiodicClocks and
        // CountdownPartitions (Clocks), whose FMI 2 builds are refused.
        assert_eq!(
            s.supports(FmiVersion::Fmi2),
            !matches!(
                s.name,
                "TypeMirror"
                    | "StructuralGain"
                    | "StateSpace"
                    | "ClockedController"
                    | "ThresholdTrigger"
                    | "ClockedCounter"
                    | "Partitions"
                    | "AperiodicClocks"
                    | "CountdownPartitions"
            ),
            "{}",
            s.name
        );
        if !s.supports(FmiVersion::Fmi2) {
            let caps = Capabilities::full(s, FmiVersion::Fmi2);
            let e = caps.check(s, FmiVersion::Fmi2).err().unwrap_or_default();
            assert!(e.contains("has no fmi2 build"), "{e}");
        }
        for version in [FmiVersion::Fmi2, FmiVersion::Fmi3]
            .into_iter()
            .filter(|v| s.supports(*v))
        {
            for v in [
                Variant::Full,
                Variant::NoState,
                Variant::NoDeriv,
                Variant::NoInterp,
                Variant::FixedStep,
                Variant::NoIntermediateUpdate,
            ] {
                let caps = Capabilities::variant(s, version, v);
                assert!(caps.check(s, version).is_ok(), "{} {v:?}", s.name);
            }
        }
        // Output derivatives exist for scalar Real outputs; every model
        // with one provides at least the first derivative (co-simulation:
        // a Model Exchange only model has none; clocked outputs, discrete,
        // do not count).
        let real_outputs = s.has_co_simulation()
            && real_vrs(s, Causality::Output)
                .iter()
                .any(|&vr| s.variable(vr).is_some_and(|v| v.clocks.is_empty()));
        assert_eq!(
            s.max_output_derivative_order >= 1,
            real_outputs,
            "{}",
            s.name
        );
    }
    for name in crate::VARIANT_MODELS {
        assert!(spec(name).is_some());
    }
}

#[test]
fn integrator_integrates_a_cubic_input_exactly() {
    use generic::integrator::{U, X, X0};
    let mut inst = init("Integrator", &[(X0, 0.5)]);
    ok(set(&mut inst, &[U], &[1.0]));
    ok(inst.set_input_derivatives(&[U, U, U], &[1, 2, 3], &[2.0, 3.0, 6.0]));
    // u(t) = 1 + 2 t + 1.5 t^2 + t^3
    step(&mut inst, 0.5);
    let h: f64 = 0.5;
    let exact = 0.5 + h + h * h + 0.5 * h.powi(3) + 0.25 * h.powi(4);
    assert!((ok(get1(&mut inst, X)) - exact).abs() < 1e-15);
    // The polynomial carries on after the step (rule 3 of fmu_kit::input).
    let u_end = 1.0 + 2.0 * h + 1.5 * h * h + h.powi(3);
    assert!((ok(get1(&mut inst, U)) - u_end).abs() < 1e-15);
    step(&mut inst, 0.5);
    let t: f64 = 1.0;
    let exact = 0.5 + t + t * t + 0.5 * t.powi(3) + 0.25 * t.powi(4);
    assert!((ok(get1(&mut inst, X)) - exact).abs() < 1e-14);
    // Setting the value alone resets the derivatives: zero-order hold.
    ok(set(&mut inst, &[U], &[2.0]));
    step(&mut inst, 0.25);
    assert!((ok(get1(&mut inst, X)) - (exact + 0.5)).abs() < 1e-14);
}

#[test]
fn derivatives_set_before_the_value_are_discarded() {
    use generic::integrator::{U, X};
    let (mut inst, log) = ok(initialized(model("Integrator"), FmiVersion::Fmi2, &[]));
    ok(inst.set_input_derivatives(&[U], &[1], &[4.0]));
    ok(set(&mut inst, &[U], &[1.0]));
    step(&mut inst, 1.0);
    assert!((ok(get1(&mut inst, X)) - 1.0).abs() < 1e-15);
    assert!(log.lock().is_ok_and(|l| {
        l.iter()
            .any(|(_, _, m)| m.contains("derivatives are reset"))
    }));
    // Orders outside 1..=3 are refused.
    assert!(inst.set_input_derivatives(&[U], &[4], &[1.0]).is_err());
    assert!(inst.set_input_derivatives(&[U], &[0], &[1.0]).is_err());
}

#[test]
fn mass_with_constant_force_is_exact() {
    use oscillator::mass::{F, V, X};
    let mut inst = init("Mass", &[]);
    ok(set(&mut inst, &[F], &[2.0]));
    for _ in 0..10 {
        step(&mut inst, 0.1);
    }
    let [v, x] = [ok(get1(&mut inst, V)), ok(get1(&mut inst, X))];
    assert!((v - 2.0).abs() < 1e-14, "v {v}");
    assert!((x - 2.0).abs() < 1e-14, "x {x}"); // 1 + t^2
}

#[test]
fn chassis_and_b2_chassis_fd_integrate_a_ramp_force_exactly() {
    use quarter_car::chassis::{F, V_C, Z_C};
    let mut inst = init("QuarterCarChassis", &[]);
    ok(set(&mut inst, &[F], &[400.0]));
    ok(inst.set_input_derivatives(&[F], &[1], &[800.0]));
    step(&mut inst, 0.5);
    // a = 1 + 2 t: v = t + t^2, z = t^2/2 + t^3/3
    assert!((ok(get1(&mut inst, V_C)) - 0.75).abs() < 1e-15);
    assert!((ok(get1(&mut inst, Z_C)) - (0.125 + 0.125 / 3.0)).abs() < 1e-15);
    let mut fd = init("B2ChassisFD", &[]);
    ok(set(&mut fd, &[b2::chassis_fd::F_SUSP], &[400.0]));
    ok(fd.set_input_derivatives(&[b2::chassis_fd::F_SUSP], &[1], &[800.0]));
    step(&mut fd, 0.5);
    assert!((ok(get1(&mut fd, b2::chassis_fd::V_C)) - 0.75).abs() < 1e-12);
    assert!((ok(get1(&mut fd, b2::chassis_fd::X_C)) - (0.125 + 0.125 / 3.0)).abs() < 1e-12);
}

#[test]
fn dahlquist_is_exact_for_constant_input() {
    use generic::dahlquist::{U, X};
    let mut inst = init("Dahlquist", &[]);
    ok(set(&mut inst, &[U], &[0.5]));
    for _ in 0..20 {
        step(&mut inst, 0.1);
    }
    // x = e^{-t} (x0 + c/lambda) - c/lambda with lambda = -1, c = 0.5
    let exact = (-2.0f64).exp() * (1.0 - 0.5) + 0.5;
    assert!((ok(get1(&mut inst, X)) - exact).abs() < 1e-14);
}

#[test]
fn wide_lags_follow_their_step_responses_independently() {
    use generic::wide::{N, TAU, X0, input, output};
    let tau = 0.25;
    let mut inst = init("Wide", &[(TAU, tau), (X0, 0.5)]);
    // Step input of height i on lag i: y_i(t) = i + (0.5 - i) e^{-t/tau}.
    let ins: Vec<Vr> = (1..=N).map(input).collect();
    let outs: Vec<Vr> = (1..=N).map(output).collect();
    let heights: Vec<f64> = (1..=N).map(|i| i as f64).collect();
    ok(set(&mut inst, &ins, &heights));
    assert_eq!(ok(get(&mut inst, &outs)), vec![0.5; N], "no feed-through");
    let h = 1e-3;
    for n in 1..=400 {
        step(&mut inst, h);
        if n % 100 == 0 {
            let t = n as f64 * h;
            let y = ok(get(&mut inst, &outs));
            for (i, (&yi, &ui)) in y.iter().zip(&heights).enumerate() {
                let exact = ui + (0.5 - ui) * (-t / tau).exp();
                assert!(
                    (yi - exact).abs() <= 1e-13 * ui,
                    "y{} at {t}: {yi} vs {exact}",
                    i + 1
                );
            }
        }
    }
}

#[test]
fn wide_lag_is_exact_for_a_ramp_input() {
    use generic::wide::{TAU, input, output};
    // u = a t from x(0) = 0: x(t) = a (t - tau + tau e^{-t/tau}).
    let (tau, a) = (0.1, 3.0);
    let mut inst = init("Wide", &[(TAU, tau)]);
    ok(set(&mut inst, &[input(7)], &[0.0]));
    ok(inst.set_input_derivatives(&[input(7)], &[1], &[a]));
    // Rule 3 of fmu_kit::input: the ramp carries on over later steps.
    for _ in 0..10 {
        step(&mut inst, 0.05);
    }
    let t: f64 = 0.5;
    let exact = a * (t - tau + tau * (-t / tau).exp());
    let y7 = ok(get1(&mut inst, output(7)));
    assert!((y7 - exact).abs() < 1e-13, "{y7} vs {exact}");
    // The other lags saw no input.
    assert_eq!(ok(get1(&mut inst, output(6))), 0.0);
    assert_eq!(ok(get1(&mut inst, output(8))), 0.0);
}

#[test]
fn three_mass_s1_free_oscillation_matches_analytic() {
    use three_mass::s1::{H, V1, X1};
    let mut inst = init("ThreeMassS1", &[(H, 1e-5)]);
    let times = reference::grid(0.0, 5.0, 50);
    let exact = reference::oscillator(10.0, 1e-2, 0.1, 1.0, 0.0, &times);
    for (k, row) in exact.rows.iter().enumerate() {
        if k > 0 {
            step(&mut inst, 0.1);
        }
        assert!(
            (ok(get1(&mut inst, X1)) - row[0]).abs() < 1e-6,
            "x1 at {}",
            times[k]
        );
        assert!(
            (ok(get1(&mut inst, V1)) - row[1]).abs() < 1e-6,
            "v1 at {}",
            times[k]
        );
    }
}

#[test]
fn two_mass_s1_free_oscillation_matches_analytic() {
    use two_mass::s1::{V1, X1};
    let mut inst = init("TwoMassS1", &[]);
    let exact = reference::oscillator(1.0, 1e3, 1.0, 0.1, 0.0, &[0.2]);
    for _ in 0..200 {
        step(&mut inst, 1e-3);
    }
    assert!((ok(get1(&mut inst, X1)) - exact.rows[0][0]).abs() < 1e-10);
    assert!((ok(get1(&mut inst, V1)) - exact.rows[0][1]).abs() < 1e-9);
}

/// Jacobi co-simulation of two instances with `u_a = gain * y_b` connections.
fn jacobi(
    a: &mut Instance,
    b: &mut Instance,
    ab: &[(Vr, Vr, f64)],
    ba: &[(Vr, Vr, f64)],
    h: f64,
    n: usize,
) {
    for _ in 0..n {
        let ya: Vec<f64> = ba.iter().map(|&(out, _, _)| ok(get1(a, out))).collect();
        let yb: Vec<f64> = ab.iter().map(|&(_, out, _)| ok(get1(b, out))).collect();
        for (&(inp, _, g), y) in ab.iter().zip(&yb) {
            ok(set(a, &[inp], &[g * y]));
        }
        for (&(_, inp, g), y) in ba.iter().zip(&ya) {
            ok(set(b, &[inp], &[g * y]));
        }
        step(a, h);
        step(b, h);
    }
}

#[test]
fn quarter_car_reticulations_converge_to_the_reference() {
    let times = [0.5];
    let r = reference::b1_linear(&QuarterCar::LINEAR, &times);
    let zc = r.rows[0][0];
    let zw = r.rows[0][1];
    // A: chassis (F = -F_c) and wheel+suspension (v_c).
    use quarter_car::{chassis as c, wheel_suspension as ws};
    let mut s1 = init("QuarterCarChassis", &[]);
    let mut s2 = init("QuarterCarWheelSuspension", &[]);
    jacobi(
        &mut s1,
        &mut s2,
        &[(c::F, ws::F_C, -1.0)],
        &[(c::V_C, ws::V_C, 1.0)],
        1e-4,
        5000,
    );
    assert!((ok(get1(&mut s1, c::Z_C)) - zc).abs() < 2e-4, "A z_c");
    assert!((ok(get1(&mut s2, ws::Z_W)) - zw).abs() < 2e-4, "A z_w");
    // B: chassis+suspension (v_w) and wheel (F = +F_c).
    use quarter_car::{chassis_suspension as cs, wheel as w};
    let mut s1 = init("QuarterCarChassisSuspension", &[]);
    let mut s2 = init("QuarterCarWheel", &[]);
    jacobi(
        &mut s1,
        &mut s2,
        &[(cs::V_W, w::V_W, 1.0)],
        &[(cs::F_C, w::F, 1.0)],
        1e-4,
        5000,
    );
    assert!((ok(get1(&mut s1, cs::Z_C)) - zc).abs() < 2e-4, "B z_c");
    assert!((ok(get1(&mut s2, w::Z_W)) - zw).abs() < 2e-4, "B z_w");
}

#[test]
fn b2_dd_and_fd_couplings_converge_to_the_reference() {
    let r = reference::b2(&reference::B2::DEFAULT, [0.0; 4], 0.0, &[0.2]);
    use b2::{chassis_dd as cd, chassis_fd as cf, wheel_dd as wd, wheel_fd as wf};
    let mut c = init("B2ChassisDD", &[]);
    let mut w = init("B2WheelDD", &[]);
    jacobi(
        &mut c,
        &mut w,
        &[(cd::X_W, wd::X_W, 1.0), (cd::V_W, wd::V_W, 1.0)],
        &[(cd::X_C, wd::X_C, 1.0), (cd::V_C, wd::V_C, 1.0)],
        1e-4,
        2000,
    );
    assert!((ok(get1(&mut c, cd::X_C)) - r.rows[0][0]).abs() < 1e-4);
    assert!((ok(get1(&mut w, wd::X_W)) - r.rows[0][1]).abs() < 1e-4);
    let mut c = init("B2ChassisFD", &[]);
    let mut w = init("B2WheelFD", &[]);
    jacobi(
        &mut c,
        &mut w,
        &[(cf::F_SUSP, wf::F_SUSP, 1.0)],
        &[(cf::X_C, wf::X_C, 1.0), (cf::V_C, wf::V_C, 1.0)],
        1e-4,
        2000,
    );
    assert!((ok(get1(&mut c, cf::X_C)) - r.rows[0][0]).abs() < 1e-4);
    assert!((ok(get1(&mut w, wf::X_W)) - r.rows[0][1]).abs() < 1e-4);
}

fn exit_error(name: &str, vr: Vr, x: f64) -> String {
    let s = model(name);
    let (mut inst, log) = instance(s, FmiVersion::Fmi2, Capabilities::full(s, FmiVersion::Fmi2));
    ok(inst.setup_experiment(0.0, None));
    ok(inst.enter_initialization());
    let ty = s.variable(vr).map_or(VarType::Real, |v| v.ty);
    ok(inst.set(&[vr], ty, &[x]));
    let err = match inst.exit_initialization() {
        Ok(()) => panic!("{name}: exit_initialization accepted {x}"),
        Err(e) => e,
    };
    let status = inst.fail("fmi2ExitInitializationMode", err);
    assert_eq!(status, Status::Error);
    assert_eq!(inst.mode(), Mode::Error);
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    let (st, cat, msg) = l.last().cloned().expect("a logged message");
    assert_eq!((st, cat.as_str()), (Status::Error, "logStatusError"));
    msg
}

#[test]
fn bad_parameters_are_refused_with_their_name() {
    assert_eq!(
        exit_error("QuarterCarChassis", quarter_car::chassis::M_C, -1.0),
        "fmi2ExitInitializationMode: m_c must be > 0, got -1"
    );
    assert!(
        exit_error("QuarterCarWheel", quarter_car::wheel::MICRO_STEPS, 0.0)
            .contains("micro_steps must be >= 1, got 0")
    );
    assert!(exit_error("ThreeMassS2", three_mass::s2::H, 0.0).contains("h must be > 0, got 0"));
    assert!(exit_error("TwoMassS2", two_mass::s2::H_MAX, -1e-5).contains("h_max must be > 0"));
    assert!(exit_error("Mass", oscillator::mass::M_, 0.0).contains("m must be > 0, got 0"));
    assert!(
        exit_error(
            "QuarterCarWheelSuspension",
            quarter_car::wheel_suspension::D_C,
            -3.0
        )
        .contains("d_c must be >= 0, got -3")
    );
    assert!(
        exit_error("Faulty", generic::faulty::FAIL_MODE, 12.0)
            .contains("fail_mode must be in 1..=11, got 12")
    );
    assert!(
        exit_error("Dahlquist", generic::dahlquist::LAMBDA, f64::NAN)
            .contains("lambda must be finite")
    );
    assert!(
        exit_error("ThermostatRoom", thermostat::room::TAU, 0.0).contains("tau must be > 0, got 0")
    );
    assert!(
        exit_error("ThermostatController", thermostat::controller::T_LOW, 21.0)
            .contains("T_low must be < T_high, got T_low = 21, T_high = 21")
    );
}

/// Sets every input from `k`: Real / Float32 inputs to k (0.3 + 0.1 i)
/// (Float32 rounded), integer inputs to round(100 k) mod 3, Boolean inputs
/// to round(100 k) odd, String inputs to "in<i>:<round(100 k)>".
/// Array inputs: element j (row-major) of a Real / Float32 array k (0.3 +
/// 0.1 i) + 0.01 j.
fn set_all_inputs(inst: &mut Instance, s: &ModelSpec, k: f64) {
    let n = (100.0 * k).round() as i32;
    for (i, v) in s.with_causality(Causality::Input).enumerate() {
        if v.is_array() {
            assert!(v.ty.is_float(), "{}: only float array inputs here", v.name);
            let vals: Vec<f64> = (0..inst.value_count(&[v.vr]))
                .map(|j| k * (0.3 + 0.1 * i as f64) + 0.01 * j as f64)
                .collect();
            ok(set_array(inst, v.vr, &vals));
            continue;
        }
        match v.ty {
            VarType::Real => ok(set(inst, &[v.vr], &[k * (0.3 + 0.1 * i as f64)])),
            VarType::Integer => ok(set_int(inst, v.vr, n.rem_euclid(3))),
            VarType::Boolean => ok(set_bool(inst, v.vr, n % 2 == 1)),
            VarType::Float32 => set_typed(inst, s, v.vr, k * (0.3 + 0.1 * i as f64)),
            VarType::String => ok(set_str(inst, v.vr, &format!("in{i}:{n}"))),
            _ => set_typed(inst, s, v.vr, f64::from(n.rem_euclid(3))),
        }
    }
}

/// The numeric outputs and locals (`String` ones show through the
/// numbers a model derives from them, e.g. `Greeting.length`).
fn observed(s: &ModelSpec) -> Vec<Vr> {
    s.variables
        .iter()
        .filter(|v| matches!(v.causality, Causality::Output | Causality::Local))
        .filter(|v| v.ty != VarType::String)
        .map(|v| v.vr)
        .collect()
}

fn run(inst: &mut Instance, s: &ModelSpec, n: usize, h: f64) -> Vec<u64> {
    let obs = observed(s);
    let mut out = Vec::new();
    for i in 0..n {
        set_all_inputs(inst, s, 1.0 + i as f64 * 0.01);
        step(inst, h);
        out.extend(ok(get_any(inst, &obs)).into_iter().map(f64::to_bits));
    }
    out
}

#[test]
fn fmu_state_restore_and_serialization_continue_bit_identically() {
    for s in co_simulation_models() {
        let h = s.experiment.step_size;
        let mut inst = ok(initialized(s, version_of(s), &[])).0;
        run(&mut inst, s, 3, h);
        let id = ok(inst.get_state(None));
        let first = run(&mut inst, s, 4, h);
        ok(inst.set_state(id));
        let again = run(&mut inst, s, 4, h);
        assert_eq!(first, again, "{}: restore", s.name);
        // Serialize, deserialize into a fresh instance, continue.
        let mut bytes = vec![0u8; ok(inst.serialized_size(id))];
        ok(inst.serialize(id, &mut bytes));
        let mut other = ok(initialized(s, version_of(s), &[])).0;
        let id2 = ok(other.deserialize(&bytes, None));
        ok(other.set_state(id2));
        let third = run(&mut other, s, 4, h);
        assert_eq!(first, third, "{}: deserialized", s.name);
        ok(inst.free_state(id));
        assert!(
            inst.set_state(id).is_err(),
            "{}: freed state must be refused",
            s.name
        );
        // Corrupt bytes are refused.
        bytes[3] ^= 0xff;
        assert!(other.deserialize(&bytes, None).is_err());
        assert!(other.deserialize(&bytes[..10], None).is_err());
    }
}

#[test]
fn serialized_state_of_another_model_is_refused() {
    let a = model("Mass");
    let b = model("Spring");
    let mut ia = ok(initialized(a, FmiVersion::Fmi2, &[])).0;
    let mut ib = ok(initialized(b, FmiVersion::Fmi2, &[])).0;
    let id = ok(ia.get_state(None));
    let mut bytes = vec![0u8; ok(ia.serialized_size(id))];
    ok(ia.serialize(id, &mut bytes));
    assert!(ib.deserialize(&bytes, None).is_err());
}

/// Forward differences with Richardson extrapolation: (2 D(d/2) - D(d)).
fn fd_derivative(inst: &mut Instance, vr: Vr, order: u32, d: f64) -> f64 {
    let read = |inst: &mut Instance| -> f64 {
        if order == 0 {
            ok(get1(inst, vr))
        } else {
            let mut out = [0.0];
            ok(inst.get_output_derivatives(&[vr], &[order as i32], &mut out));
            out[0]
        }
    };
    let id = ok(inst.get_state(None));
    let y0 = read(inst);
    step(inst, d);
    let y1 = read(inst);
    ok(inst.set_state(id));
    step(inst, d / 2.0);
    let yh = read(inst);
    ok(inst.set_state(id));
    ok(inst.free_state(id));
    let full = (y1 - y0) / d;
    let half = (yh - y0) / (d / 2.0);
    2.0 * half - full
}

#[test]
fn output_derivatives_match_finite_differences_of_the_trajectory() {
    for s in co_simulation_models() {
        let mut inst = ok(initialized(s, version_of(s), &[])).0;
        let h = s.experiment.step_size;
        for _ in 0..5 {
            set_all_inputs(&mut inst, s, 1.0);
            step(&mut inst, h);
        }
        // A smooth polynomial input from here on (where the model takes
        // one: Real inputs of models that interpolate inputs).
        let inputs = if s.can_interpolate_inputs {
            real_vrs(s, Causality::Input)
        } else {
            Vec::new()
        };
        for (i, &vr) in inputs.iter().enumerate() {
            let k = 1.0 + i as f64;
            ok(inst.set_input_derivatives(
                &[vr, vr, vr],
                &[1, 2, 3],
                &[0.5 * k, -0.2 * k, 0.1 * k],
            ));
        }
        for out in real_vrs(s, Causality::Output) {
            for order in 1..=s.max_output_derivative_order {
                let mut d = [0.0];
                ok(inst.get_output_derivatives(&[out], &[order as i32], &mut d));
                let fd = fd_derivative(&mut inst, out, order - 1, 1e-5);
                let tol = 1e-4 * d[0].abs().max(fd.abs()) + 1e-7;
                assert!(
                    (d[0] - fd).abs() <= tol,
                    "{} vr {out} order {order}: analytic {} vs fd {fd}",
                    s.name,
                    d[0]
                );
            }
        }
    }
}

#[test]
fn directional_derivatives_match_finite_differences() {
    for s in co_simulation_models().filter(|s| s.provides_directional_derivatives) {
        let mut inst = ok(initialized(s, version_of(s), &[])).0;
        set_all_inputs(&mut inst, s, 1.0);
        step(&mut inst, s.experiment.step_size);
        let outs = real_vrs(s, Causality::Output);
        for inp in real_vrs(s, Causality::Input) {
            let u0 = ok(get1(&mut inst, inp));
            let y0 = ok(get(&mut inst, &outs));
            let eps = 1e-6 * u0.abs().max(1.0);
            ok(set(&mut inst, &[inp], &[u0 + eps]));
            let y1 = ok(get(&mut inst, &outs));
            ok(set(&mut inst, &[inp], &[u0]));
            let mut dy = vec![0.0; outs.len()];
            ok(inst.directional_derivative(&outs, &[inp], &[1.0], &mut dy));
            for k in 0..outs.len() {
                let fd = (y1[k] - y0[k]) / eps;
                let declared = s
                    .variable(outs[k])
                    .is_some_and(|v| v.dependencies.iter().any(|d| d.0 == inp));
                assert!(
                    (dy[k] - fd).abs() <= 1e-5 * fd.abs().max(1.0),
                    "{}: d vr {} / d vr {inp}: {} vs {fd}",
                    s.name,
                    outs[k],
                    dy[k]
                );
                if !declared {
                    assert_eq!(
                        fd, 0.0,
                        "{}: undeclared feed-through vr {} <- {inp}",
                        s.name, outs[k]
                    );
                }
            }
            // Adjoint is the transpose.
            let seed = vec![1.0; outs.len()];
            let mut adj = [0.0];
            ok(inst.adjoint_derivative(&outs, &[inp], &seed, &mut adj));
            assert!((adj[0] - dy.iter().sum::<f64>()).abs() < 1e-12);
        }
    }
}

#[test]
fn disabled_capabilities_are_refused_with_the_standard_message() {
    let s = model("Integrator");
    let v = FmiVersion::Fmi2;
    let caps = |variant| Capabilities::variant(s, v, variant);
    let start = |variant| {
        let (mut inst, log) = instance(s, v, caps(variant));
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        ok(inst.exit_initialization());
        (inst, log)
    };
    let msg = |e: fmu_kit::instance::Fail| e.message;
    let (mut i, _) = start(Variant::NoState);
    assert_eq!(
        i.get_state(None).map_err(msg),
        Err("capability canGetAndSetFMUstate is disabled in this build".into())
    );
    let (mut i, _) = start(Variant::NoDeriv);
    let mut out = [0.0];
    assert!(
        i.get_output_derivatives(&[generic::integrator::X], &[1], &mut out)
            .map_err(msg)
            .is_err_and(|m| m.contains("maxOutputDerivativeOrder is disabled"))
    );
    assert!(
        i.directional_derivative(
            &[generic::integrator::X],
            &[generic::integrator::U],
            &[1.0],
            &mut out
        )
        .is_err()
    );
    let (mut i, _) = start(Variant::NoInterp);
    assert!(
        i.set_input_derivatives(&[generic::integrator::U], &[1], &[1.0])
            .map_err(msg)
            .is_err_and(|m| m.contains("canInterpolateInputs is disabled"))
    );
    let (mut i, _) = start(Variant::FixedStep);
    assert!(i.do_step(0.0, 0.1).is_ok());
    assert!(i.do_step(0.1, 0.1).is_ok());
    assert!(
        i.do_step(0.2, 0.05)
            .map_err(msg)
            .is_err_and(|m| m.contains("canHandleVariableCommunicationStepSize is disabled"))
    );
    let _ = Cap::State;
}

#[test]
fn illegal_calls_are_refused_without_changing_state() {
    let s = model("Gain");
    let (mut inst, _) = instance(s, FmiVersion::Fmi2, Capabilities::full(s, FmiVersion::Fmi2));
    // Outputs and locals cannot be set; parameters only before initialization ends.
    assert!(
        inst.set(&[generic::gain::Y], VarType::Real, &[1.0])
            .is_err()
    );
    assert!(
        inst.set(&[generic::gain::K], VarType::Integer, &[1.0])
            .is_err()
    );
    assert!(inst.set(&[99], VarType::Real, &[1.0]).is_err());
    ok(inst.setup_experiment(0.0, None));
    ok(inst.enter_initialization());
    ok(inst.exit_initialization());
    assert!(
        inst.set(&[generic::gain::K], VarType::Real, &[2.0])
            .is_err()
    );
    assert!(inst.do_step(1.0, 0.1).is_err(), "wrong communication point");
    assert!(inst.do_step(0.0, 0.0).is_err(), "zero step");
    assert!(inst.do_step(0.0, f64::NAN).is_err());
    assert_eq!(inst.mode(), Mode::StepComplete);
    // Feed-through reflects an input set after the step.
    ok(inst.do_step(0.0, 0.1));
    ok(set(&mut inst, &[generic::gain::U], &[3.0]));
    assert_eq!(ok(get1(&mut inst, generic::gain::Y)), 3.0);
}

#[test]
fn faulty_modes_error_discard_nan_fatal() {
    use generic::faulty::{FAIL_AT, FAIL_MODE, U, X};
    // 1: Error
    let mut i = init("Faulty", &[(FAIL_AT, 0.25), (FAIL_MODE, 1.0)]);
    ok(set(&mut i, &[U], &[1.0]));
    step(&mut i, 0.1);
    step(&mut i, 0.1);
    let e = i.do_step(0.2, 0.1);
    assert!(
        e.as_ref()
            .is_err_and(|e| e.status == Status::Error && e.poison),
        "{e:?}"
    );
    // 2: Discard at fail_at with the states valid there.
    let mut i = init("Faulty", &[(FAIL_AT, 0.25), (FAIL_MODE, 2.0)]);
    ok(set(&mut i, &[U], &[1.0]));
    let before = ok(i.get_state(None));
    step(&mut i, 0.2);
    assert_eq!(ok(i.do_step(0.2, 0.1)), Status::Discard);
    assert_eq!(i.mode(), Mode::StepFailed);
    assert!((i.last_successful_time() - 0.25).abs() < 1e-15);
    assert!((ok(get1(&mut i, X)) - 0.25).abs() < 1e-15);
    ok(i.set_state(before));
    assert_eq!(i.mode(), Mode::StepComplete);
    // 3: NaN output from fail_at on, steps still OK.
    let mut i = init("Faulty", &[(FAIL_AT, 0.25), (FAIL_MODE, 3.0)]);
    step(&mut i, 0.2);
    assert!(ok(get1(&mut i, X)).is_finite());
    step(&mut i, 0.1);
    assert!(ok(get1(&mut i, X)).is_nan());
    // 7: Fatal.
    let mut i = init("Faulty", &[(FAIL_AT, 0.0), (FAIL_MODE, 7.0)]);
    let e = i.do_step(0.0, 0.1);
    assert!(e.is_err_and(|e| e.status == Status::Fatal));
}

#[test]
fn faulty_mode_8_starts_a_sleeping_child_process_once_and_goes_on() {
    use generic::faulty::{FAIL_AT, FAIL_MODE, U, X};
    let (mut i, log) = ok(initialized(
        model("Faulty"),
        FmiVersion::Fmi2,
        &[(FAIL_AT, 0.15), (FAIL_MODE, 8.0)],
    ));
    ok(set(&mut i, &[U], &[1.0]));
    for _ in 0..4 {
        step(&mut i, 0.1);
    }
    assert!((ok(get1(&mut i, X)) - 0.4).abs() < 1e-12, "integrates on");
    let lines: Vec<String> = log
        .lock()
        .map(|l| l.iter().map(|(_, _, m)| m.clone()).collect())
        .unwrap_or_default();
    let started: Vec<&String> = lines
        .iter()
        .filter(|m| m.contains("(fail_mode 8): started child process "))
        .collect();
    assert_eq!(started.len(), 1, "{lines:?}");
    assert!(
        started[0].starts_with("Faulty: fail_at = 0.15 reached in the step from 0.1 to 0.2"),
        "{lines:?}"
    );
    let pid = started[0]
        .rsplit("started child process ")
        .next()
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default()
        .to_string();
    // Its command line, once exec has replaced the forked copy's.
    let want = format!("sleep {}", generic::faulty::FORKED_CHILD_SLEEPS_S);
    let mut cmdline = String::new();
    for _ in 0..200 {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        cmdline = String::from_utf8_lossy(&raw)
            .replace('\0', " ")
            .trim()
            .to_string();
        if cmdline == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let kill = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status();
    assert_eq!(cmdline, want, "child process {pid}");
    assert!(kill.is_ok_and(|s| s.success()));
}

#[test]
fn terminating_ends_the_step_at_t_end_and_asks_to_stop() {
    use generic::terminating::{T_END, U, Y};
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let (mut i, log) = ok(initialized(model("Terminating"), version, &[(T_END, 0.35)]));
        assert_eq!(ok(get1(&mut i, U)), 1.0, "u defaults to 1");
        ok(set(&mut i, &[U], &[2.0]));
        step(&mut i, 0.25);
        assert_eq!(ok(get1(&mut i, Y)), 0.5, "y = 2 * 0.25, zero-order hold");
        assert!(!i.terminate_requested());
        // The step over t_end ends at t_end: FMI 2 Discard, FMI 3 Discard
        // too (the Rust API instance does not allow early return).
        assert_eq!(ok(i.do_step(0.25, 0.25)), Status::Discard);
        assert!(i.terminate_requested());
        assert_eq!(i.last_successful_time(), 0.35);
        assert_eq!(i.time(), 0.35);
        assert!(
            (ok(get1(&mut i, Y)) - 0.7).abs() < 1e-15,
            "the value at t_end"
        );
        assert!(
            i.do_step(0.35, 0.1)
                .is_err_and(|e| e.message.starts_with("Illegal call sequence"))
        );
        let logged = log.lock().is_ok_and(|l| {
            l.iter().any(|(s, _, m)| {
                *s == Status::Discard
                    && m == "Terminating: t_end = 0.35 reached in the step from 0.25 to 0.5; the simulation ends at t = 0.35"
            })
        });
        assert!(logged, "{version:?}");
        // FMI 3 with early return allowed: OK, early return at t_end.
        let (mut i, _) = ok(initialized(model("Terminating"), version, &[(T_END, 0.35)]));
        i.set_early_return_allowed(true);
        let expected = match version {
            FmiVersion::Fmi2 => Status::Discard,
            FmiVersion::Fmi3 => Status::Ok,
        };
        assert_eq!(ok(i.do_step(0.0, 1.0)), expected);
        assert_eq!(i.early_return(), version == FmiVersion::Fmi3);
        assert_eq!(ok(get1(&mut i, Y)), 0.35);
        // A step that ends on t_end (the default 0.5) up to rounding: FMI 3 OK
        // without early return, FMI 2 Discard; lastSuccessfulTime = t + h.
        let (mut i, _) = ok(initialized(model("Terminating"), version, &[]));
        let h = 0.1;
        let mut t = 0.0;
        for _ in 0..4 {
            step(&mut i, h);
            t += h;
        }
        let expected = match version {
            FmiVersion::Fmi2 => Status::Discard,
            FmiVersion::Fmi3 => Status::Ok,
        };
        assert_eq!(ok(i.do_step(t, h)), expected);
        assert!(i.terminate_requested() && !i.early_return());
        assert_eq!(i.last_successful_time(), t + h);
        assert!((ok(get1(&mut i, Y)) - 0.5).abs() < 1e-15);
    }
}

#[test]
fn fmi3_instances_step_without_input_derivatives() {
    let s = model("Integrator");
    let (mut inst, _) = ok(initialized(s, FmiVersion::Fmi3, &[]));
    assert!(
        inst.set_input_derivatives(&[generic::integrator::U], &[1], &[1.0])
            .is_err()
    );
    ok(set(&mut inst, &[generic::integrator::U], &[2.0]));
    step(&mut inst, 0.5);
    assert_eq!(ok(get1(&mut inst, generic::integrator::X)), 1.0);
}

#[test]
fn outputs_without_declared_feed_through_ignore_inputs_until_the_step() {
    for s in co_simulation_models() {
        let mut inst = ok(initialized(s, version_of(s), &[])).0;
        set_all_inputs(&mut inst, s, 1.0);
        step(&mut inst, s.experiment.step_size);
        let outs: Vec<Vr> = s
            .with_causality(Causality::Output)
            .filter(|v| v.ty != VarType::String)
            .map(|v| v.vr)
            .collect();
        // Each output's values (the elements of an array).
        let values = |inst: &mut Instance| -> Vec<Vec<u64>> {
            outs.iter()
                .map(|&o| {
                    ok(get_array(inst, o))
                        .into_iter()
                        .map(f64::to_bits)
                        .collect()
                })
                .collect()
        };
        for v in s.with_causality(Causality::Input) {
            let before = values(&mut inst);
            if v.ty == VarType::String {
                let x = ok(get_str(&mut inst, v.vr));
                ok(set_str(&mut inst, v.vr, &format!("{x}!")));
                let after = values(&mut inst);
                for (k, &o) in outs.iter().enumerate() {
                    let declared = s
                        .variable(o)
                        .is_some_and(|out| out.dependencies.iter().any(|d| d.0 == v.vr));
                    assert_eq!(
                        before[k] == after[k],
                        !declared,
                        "{}: output vr {o} with input {}",
                        s.name,
                        v.name
                    );
                }
                continue;
            }
            let x = ok(get_any(&mut inst, &[v.vr]))[0];
            // A change of every type: Real / Float32 + 0.5 (every element
            // of an array), integers + 1, Boolean flipped.
            match v.ty {
                _ if v.is_array() => {
                    let xs: Vec<f64> = ok(get_array(&mut inst, v.vr))
                        .into_iter()
                        .map(|x| x + 0.5)
                        .collect();
                    ok(set_array(&mut inst, v.vr, &xs));
                }
                VarType::Real => ok(set(&mut inst, &[v.vr], &[x + 0.5])),
                VarType::Integer => ok(set_int(&mut inst, v.vr, x as i32 + 1)),
                VarType::Boolean => ok(set_bool(&mut inst, v.vr, x == 0.0)),
                VarType::Float32 => set_typed(&mut inst, s, v.vr, x + 0.5),
                _ => set_typed(&mut inst, s, v.vr, x + 1.0),
            }
            let after = values(&mut inst);
            for (k, &o) in outs.iter().enumerate() {
                let declared = s
                    .variable(o)
                    .is_some_and(|out| out.dependencies.iter().any(|d| d.0 == v.vr));
                if !declared {
                    assert_eq!(
                        before[k], after[k],
                        "{}: output vr {o} changed with input {} (no declared feed-through)",
                        s.name, v.name
                    );
                }
            }
        }
    }
}

// ------------------------------------------------------------- thermostat

#[test]
fn thermostat_room_follows_the_exact_exponential_over_variable_steps() {
    use thermostat::room::{HEATER_ON, LEVEL, T};
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let (mut inst, _) = ok(initialized(model("ThermostatRoom"), version, &[]));
        assert_eq!(ok(get1(&mut inst, T)), 15.0, "T0");
        assert!(
            !ok(get_bool(&mut inst, HEATER_ON)),
            "heater_on starts false"
        );
        assert_eq!(ok(get_int(&mut inst, LEVEL)), 1, "level starts at 1");
        // Heater on at level 2: T_e = T_amb + 2 P_unit = 34.
        ok(set_bool(&mut inst, HEATER_ON, true));
        ok(set_int(&mut inst, LEVEL, 2));
        assert_eq!(ok(get1(&mut inst, T)), 15.0, "no feed-through");
        let mut d = [0.0];
        ok(inst.get_output_derivatives(&[T], &[1], &mut d));
        assert_eq!(
            d[0],
            (34.0 - 15.0) / 60.0,
            "dT/dt sees the new inputs at once"
        );
        let mut t = 0.0;
        for h in [0.5, 1.7, 3.0, 10.0, 0.25, 44.55] {
            step(&mut inst, h);
            t += h;
            let exact = 34.0 + (15.0 - 34.0) * (-t / 60.0f64).exp();
            let temp = ok(get1(&mut inst, T));
            assert!(
                (temp - exact).abs() <= 4.0 * f64::EPSILON * exact,
                "{version:?} t = {t}: {temp} vs {exact}"
            );
            ok(inst.get_output_derivatives(&[T], &[1], &mut d));
            assert_eq!(d[0], (34.0 - temp) / 60.0);
        }
        // Heater off: T relaxes to T_amb = 10 from T(60), whatever the level.
        let t60 = ok(get1(&mut inst, T));
        ok(set_bool(&mut inst, HEATER_ON, false));
        ok(set_int(&mut inst, LEVEL, 5));
        step(&mut inst, 30.0);
        let exact = 10.0 + (t60 - 10.0) * (-0.5f64).exp();
        assert!((ok(get1(&mut inst, T)) - exact).abs() <= 4.0 * f64::EPSILON * exact);
        // Discrete inputs have no derivatives (and the room declares
        // canInterpolateInputs = false).
        assert!(inst.set_input_derivatives(&[LEVEL], &[1], &[1.0]).is_err());
        assert_eq!(inst.time(), 90.0);
    }
}

#[test]
fn thermostat_room_parameters_and_levels() {
    use thermostat::room::{HEATER_ON, LEVEL, P_UNIT, T, T_AMB, T0, TAU};
    let mut inst = init(
        "ThermostatRoom",
        &[(T_AMB, 0.0), (TAU, 30.0), (P_UNIT, 5.0), (T0, 20.0)],
    );
    assert_eq!(ok(get1(&mut inst, T)), 20.0);
    ok(set_bool(&mut inst, HEATER_ON, true));
    ok(set_int(&mut inst, LEVEL, 3)); // T_e = 15
    step(&mut inst, 12.0);
    let exact = 15.0 + 5.0 * (-12.0f64 / 30.0).exp();
    assert!((ok(get1(&mut inst, T)) - exact).abs() < 1e-14);
    // Level 0 heats nothing.
    ok(set_int(&mut inst, LEVEL, 0));
    let before = ok(get1(&mut inst, T));
    step(&mut inst, 6.0);
    let exact = before * (-0.2f64).exp();
    assert!((ok(get1(&mut inst, T)) - exact).abs() < 1e-14);
    // Integer inputs reject Real access and vice versa.
    assert!(set(&mut inst, &[LEVEL], &[1.0]).is_err());
    assert!(get_int(&mut inst, T).is_err());
    assert!(get_bool(&mut inst, LEVEL).is_err());
}

/// (heater_on, level, switches) of the controller.
fn controller_outputs(inst: &mut Instance) -> (bool, i64, i64) {
    use thermostat::controller::{HEATER_ON, LEVEL, SWITCHES};
    (
        ok(get_bool(inst, HEATER_ON)),
        ok(get_int(inst, LEVEL)),
        ok(get_int(inst, SWITCHES)),
    )
}

#[test]
fn thermostat_controller_hysteresis_toggles_and_counts_switches() {
    use thermostat::controller::T;
    let mut c = init("ThermostatController", &[]);
    // Before the first step: on = on_start = true, level from T = 15 < T_boost.
    assert_eq!(controller_outputs(&mut c), (true, 2, 0));
    // (T held over the step, expected (heater_on, level, switches) after it)
    let seq = [
        (20.0, (true, 1, 0)),  // inside the band: stays on
        (21.0, (true, 1, 0)),  // not above T_high
        (21.5, (false, 1, 1)), // above T_high: off
        (20.0, (false, 1, 1)), // inside the band: stays off
        (19.0, (false, 1, 1)), // not below T_low
        (18.9, (true, 1, 2)),  // below T_low: on
        (15.0, (true, 2, 2)),  // below T_boost: level 2, stays on
        (16.0, (true, 1, 2)),  // not below T_boost
        (25.0, (false, 1, 3)),
        (10.0, (true, 2, 4)),
    ];
    for (temp, expected) in seq {
        let before = controller_outputs(&mut c);
        ok(set(&mut c, &[T], &[temp]));
        assert_eq!(controller_outputs(&mut c), before, "no feed-through");
        step(&mut c, 1.0);
        assert_eq!(controller_outputs(&mut c), expected, "T = {temp}");
    }
    // The step size does not matter, only the held value at the end.
    step(&mut c, 0.125);
    assert_eq!(controller_outputs(&mut c), (true, 2, 4));
}

#[test]
fn thermostat_controller_initial_values_follow_parameters_and_input() {
    use thermostat::controller::{HEATER_ON, LEVEL, ON_START, T};
    let s = model("ThermostatController");
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let (mut c, _) = instance(s, version, Capabilities::full(s, version));
        ok(c.setup_experiment(0.0, None));
        ok(c.enter_initialization());
        ok(set_bool(&mut c, ON_START, false));
        ok(set(&mut c, &[T], &[17.0]));
        // Initial unknowns during initialization.
        assert!(!ok(get_bool(&mut c, HEATER_ON)));
        assert_eq!(ok(get_int(&mut c, LEVEL)), 1);
        ok(set(&mut c, &[T], &[12.0]));
        assert_eq!(ok(get_int(&mut c, LEVEL)), 2);
        ok(set(&mut c, &[T], &[17.0]));
        ok(c.exit_initialization());
        assert_eq!(controller_outputs(&mut c), (false, 1, 0));
        // After initialization the input acts only through a step.
        ok(set(&mut c, &[T], &[10.0]));
        assert_eq!(controller_outputs(&mut c), (false, 1, 0));
        step(&mut c, 1.0);
        assert_eq!(controller_outputs(&mut c), (true, 2, 1));
        // Boolean parameters are fixed after initialization.
        assert!(set_bool(&mut c, ON_START, true).is_err());
    }
}

#[test]
fn thermostat_controller_state_restore_covers_the_discrete_state() {
    use thermostat::controller::T;
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let s = model("ThermostatController");
        let (mut c, _) = ok(initialized(s, version, &[]));
        ok(set(&mut c, &[T], &[22.0]));
        step(&mut c, 1.0);
        assert_eq!(controller_outputs(&mut c), (false, 1, 1));
        let id = ok(c.get_state(None));
        let mut bytes = vec![0u8; ok(c.serialized_size(id))];
        ok(c.serialize(id, &mut bytes));
        ok(set(&mut c, &[T], &[12.0]));
        step(&mut c, 1.0);
        assert_eq!(controller_outputs(&mut c), (true, 2, 2));
        ok(c.set_state(id));
        assert_eq!(controller_outputs(&mut c), (false, 1, 1));
        assert_eq!(
            ok(get1(&mut c, T)),
            22.0,
            "the held input is part of the state"
        );
        assert_eq!(c.time(), 1.0);
        // Into a fresh instance.
        let (mut other, _) = ok(initialized(s, version, &[]));
        assert_eq!(controller_outputs(&mut other), (true, 2, 0));
        let id2 = ok(other.deserialize(&bytes, None));
        ok(other.set_state(id2));
        assert_eq!(controller_outputs(&mut other), (false, 1, 1));
        ok(set(&mut other, &[T], &[18.0]));
        step(&mut other, 1.0);
        assert_eq!(controller_outputs(&mut other), (true, 1, 2));
    }
}

#[test]
fn thermostat_closed_loop_cycles_inside_the_band() {
    use thermostat::{controller as c, room as r};
    // P_unit = 12 (the default): level 1 heats towards 22 > T_high, so
    // the loop cycles.
    let mut room = init("ThermostatRoom", &[(r::P_UNIT, 12.0)]);
    let mut ctl = init("ThermostatController", &[]);
    let h = 1.0;
    let mut changes = 0;
    let mut t_max_after_warmup = f64::MIN;
    let mut t_min_after_warmup = f64::MAX;
    for n in 0..600 {
        // Jacobi exchange: both read the other's outputs of the same time.
        let temp = ok(get1(&mut room, r::T));
        let (on, level, switches) = controller_outputs(&mut ctl);
        assert_eq!(
            switches, changes,
            "switches counts the changes of heater_on"
        );
        ok(set_bool(&mut room, r::HEATER_ON, on));
        ok(set_int(&mut room, r::LEVEL, level as i32));
        ok(set(&mut ctl, &[c::T], &[temp]));
        step(&mut room, h);
        step(&mut ctl, h);
        let (on_after, _, _) = controller_outputs(&mut ctl);
        if on_after != on {
            changes += 1;
        }
        if n >= 120 {
            t_max_after_warmup = t_max_after_warmup.max(temp);
            t_min_after_warmup = t_min_after_warmup.min(temp);
        }
    }
    // Warm-up: 15 -> 21 takes about 60 ln 6 = 107 s; then a period of
    // about 60 (ln(11/9) + ln 3) = 78 s with two switches. The loop reacts
    // up to two steps late (the controller samples T at the start of its
    // step, the room sees the new switch one step later): overshoot about
    // 2 s * |T'|, T' = (22 - 21) / 60 at the top, (10 - 19) / 60 at the bottom.
    assert!(changes >= 11, "only {changes} switches");
    assert!(t_max_after_warmup > 21.0, "max {t_max_after_warmup}");
    assert!(t_max_after_warmup < 21.0 + 0.05, "max {t_max_after_warmup}");
    assert!(t_min_after_warmup < 19.0, "min {t_min_after_warmup}");
    assert!(t_min_after_warmup > 19.0 - 0.32, "min {t_min_after_warmup}");
}

// ------------------------------------------------ FMI 3 intermediate update

/// The continuous Real inputs (the intermediate update inputs of FMI 3).
fn continuous_inputs(s: &ModelSpec) -> Vec<Vr> {
    s.variables
        .iter()
        .filter(|v| v.is_continuous_real_input())
        .map(|v| v.vr)
        .collect()
}

/// An input polynomial `[u, u', u'', u''']` for step `k` of size `h`:
/// it changes by a sizeable fraction over one step, cubic term included.
fn input_poly(k: usize, vr: Vr, h: f64) -> [f64; 4] {
    let p = (k as f64) * 0.7 + f64::from(vr) * 1.3;
    [
        1.0 + 0.3 * p.sin(),
        0.5 * p.cos() / h,
        -0.4 * (0.5 * p).sin() / (h * h),
        1.2 * (0.3 * p).cos() / (h * h * h),
    ]
}

#[test]
fn fmi3_intermediate_update_steps_like_fmi2_input_derivatives_in_every_model() {
    use fmu_kit::testing::PolynomialSource;
    let mut checked = 0;
    for s in co_simulation_models() {
        let ins = continuous_inputs(s);
        let caps3 = Capabilities::full(s, FmiVersion::Fmi3);
        assert_eq!(
            caps3.intermediate_update, s.can_interpolate_inputs,
            "{}",
            s.name
        );
        if !s.can_interpolate_inputs || ins.is_empty() {
            continue;
        }
        let (mut i2, _) = ok(initialized(s, FmiVersion::Fmi2, &[]));
        let (mut i3, _) = ok(initialized(s, FmiVersion::Fmi3, &[]));
        assert!(i3.takes_intermediate_inputs(), "{}", s.name);
        let source = PolynomialSource::new();
        let h = s.experiment.step_size;
        let reals = real_vrs(s, Causality::Output)
            .into_iter()
            .chain(real_vrs(s, Causality::Local))
            .chain(real_vrs(s, Causality::Input))
            .collect::<Vec<_>>();
        let mut scale = vec![0.0f64; reals.len()];
        let mut worst = 0.0f64;
        for k in 0..15 {
            let t = k as f64 * h;
            let polys: Vec<(Vr, [f64; 4])> =
                ins.iter().map(|&vr| (vr, input_poly(k, vr, h))).collect();
            for (vr, c) in &polys {
                ok(set(&mut i2, &[*vr], &[c[0]]));
                ok(i2.set_input_derivatives(&[*vr; 3], &[1, 2, 3], &c[1..]));
                ok(set(&mut i3, &[*vr], &[c[0]]));
            }
            source.set(t, &polys);
            assert_eq!(ok(i2.do_step(t, h)), Status::Ok);
            assert_eq!(ok(i3.do_step_with(t, h, Some(source.boxed()))), Status::Ok);
            let a = ok(get(&mut i2, &reals));
            let b = ok(get(&mut i3, &reals));
            for (j, (x2, x3)) in a.iter().zip(&b).enumerate() {
                scale[j] = scale[j].max(x2.abs());
                let d = (x2 - x3).abs() / scale[j].max(1e-300);
                worst = worst.max(d);
                assert!(
                    d <= 1e-12,
                    "{} step {k} vr {}: FMI 2 {x2} vs FMI 3 {x3} (relative {d:e})",
                    s.name,
                    reals[j]
                );
            }
        }
        println!("{}: largest relative difference {worst:e}", s.name);
        checked += 1;
    }
    // All but the two thermostat models (no continuous input / no interpolation).
    assert_eq!(
        checked, 21,
        "every model with continuous inputs that interpolates"
    );
}

/// The distinct intermediate update times of one RK4 step (`solvers::rk4`).
fn rk4_times(t: f64, h: f64, h_max: f64) -> Vec<f64> {
    let n = crate::solvers::micro_step_count(h, h_max);
    let dt = h / n as f64;
    let mut v = vec![t];
    for i in 0..n {
        let s = t + i as f64 * dt;
        v.push(s + 0.5 * dt);
        v.push(if i + 1 == n {
            t + h
        } else {
            t + (i + 1) as f64 * dt
        });
    }
    v
}

#[test]
fn intermediate_update_times_follow_each_solver() {
    use fmu_kit::testing::{PolynomialSource, step_with};
    let times = |name: &str, params: &[(Vr, f64)], h: f64| {
        let (mut i, _) = ok(initialized(model(name), FmiVersion::Fmi3, params));
        let src = PolynomialSource::new();
        let polys: Vec<(Vr, [f64; 4])> = continuous_inputs(model(name))
            .into_iter()
            .map(|vr| (vr, input_poly(1, vr, h)))
            .collect();
        // Two steps; the times of the second.
        src.set(0.0, &polys);
        assert_eq!(ok(step_with(&mut i, h, &src)), Status::Ok);
        src.clear_times();
        src.set(h, &polys);
        assert_eq!(ok(step_with(&mut i, h, &src)), Status::Ok);
        src.times()
    };
    let (t, h) = (1e-3, 1e-3);
    // RK4 (B4), 100 micro steps: t, t + dt/2, t + dt, ..., t + h (201 times).
    let tm = times("TwoMassS2", &[(two_mass::s2::H_MAX, 1e-5)], h);
    assert_eq!(tm.len(), 201);
    assert_eq!(tm, rk4_times(t, h, 1e-5));
    assert_eq!(
        times("TwoMassS1", &[(two_mass::s1::H_MAX, 2.5e-4)], h),
        rk4_times(t, h, 2.5e-4)
    );
    // Forward Euler with 10 micro steps: their starts, then the end of the
    // step (for the inputs after the step, as FMI 2 extrapolates to t + h).
    let dt = h / 10.0;
    let mut euler: Vec<f64> = (0..10).map(|i| t + i as f64 * dt).collect();
    euler.push(t + h);
    assert_eq!(times("QuarterCarWheelSuspension", &[], h), euler);
    // Exact integration: the four nodes of the cubic, once.
    assert_eq!(
        times("QuarterCarChassis", &[], h),
        vec![t, t + 0.25 * h, t + 0.75 * h, t + h]
    );
    // No input inside the step (Gain): only the end of the step.
    assert_eq!(times("Gain", &[], h), vec![t + h]);
    // No continuous input (ThermostatRoom): never.
    assert!(times("ThermostatRoom", &[], 1.0).is_empty());
}

#[test]
fn fmi3_without_intermediate_update_never_asks_and_holds_inputs() {
    use fmu_kit::testing::{PolynomialSource, step_with};
    for name in [
        "TwoMassS1",
        "TwoMassS2",
        "QuarterCarChassis",
        "QuarterCarWheelSuspension",
        "ThermostatController",
    ] {
        let s = model(name);
        let caps = Capabilities::variant(s, FmiVersion::Fmi3, Variant::NoIntermediateUpdate);
        assert!(!caps.intermediate_update);
        let (mut off, _) = instance(s, FmiVersion::Fmi3, caps);
        let (mut zoh, _) = ok(initialized(s, FmiVersion::Fmi2, &[]));
        ok(off.setup_experiment(0.0, None));
        ok(off.enter_initialization());
        ok(off.exit_initialization());
        assert!(!off.takes_intermediate_inputs());
        let src = PolynomialSource::new();
        let ins = continuous_inputs(s);
        let h = s.experiment.step_size;
        let obs = observed(s);
        for k in 0..5 {
            let t = k as f64 * h;
            let polys: Vec<(Vr, [f64; 4])> =
                ins.iter().map(|&vr| (vr, input_poly(k, vr, h))).collect();
            for (vr, c) in &polys {
                ok(set(&mut off, &[*vr], &[c[0]]));
                ok(set(&mut zoh, &[*vr], &[c[0]]));
            }
            src.set(t, &polys);
            assert_eq!(ok(step_with(&mut off, h, &src)), Status::Ok);
            step(&mut zoh, h);
            let a: Vec<u64> = ok(get_any(&mut off, &obs))
                .iter()
                .map(|x| x.to_bits())
                .collect();
            let b: Vec<u64> = ok(get_any(&mut zoh, &obs))
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_eq!(a, b, "{name} step {k}");
        }
        assert!(src.times().is_empty(), "{name}");
    }
}

#[test]
fn fmi3_model_descriptions_declare_intermediate_update_where_fmi2_interpolates() {
    use fmu_kit::xml::model_description;
    for s in co_simulation_models() {
        let n_cont = continuous_inputs(s).len();
        let full3 = Capabilities::full(s, FmiVersion::Fmi3);
        let x3 = model_description(s, FmiVersion::Fmi3, &full3, s.name);
        // A model without FMI 2 build (TypeMirror) has no FMI 2 description
        // to compare: its FMI 2 part is an empty string that meets the checks.
        let x2 = if s.supports(FmiVersion::Fmi2) {
            model_description(
                s,
                FmiVersion::Fmi2,
                &Capabilities::full(s, FmiVersion::Fmi2),
                s.name,
            )
        } else {
            String::new()
        };
        let provides = format!(
            "providesIntermediateUpdate=\"{}\"",
            s.can_interpolate_inputs
        );
        assert!(x3.contains(&provides), "{}", s.name);
        assert_eq!(
            x2.contains("canInterpolateInputs=\"true\""),
            s.can_interpolate_inputs && s.supports(FmiVersion::Fmi2),
            "{}",
            s.name
        );
        assert!(x3.contains("canReturnEarlyAfterIntermediateUpdate=\"false\""));
        // Only Terminating ends a step early (at t_end), and the models
        // with events (at an event, in Event Mode), which alone have
        // Event Mode.
        let might = format!(
            "mightReturnEarlyFromDoStep=\"{}\"",
            s.name == "Terminating" || s.event_mode
        );
        assert!(x3.contains(&might), "{}", s.name);
        let event_mode = format!("hasEventMode=\"{}\"", s.event_mode);
        assert!(x3.contains(&event_mode), "{}", s.name);
        assert_eq!(
            s.event_mode,
            matches!(
                s.name,
                "Ticker"
                    | "Ballistic"
                    | "SampleHold"
                    | "ClockedController"
                    | "ThresholdTrigger"
                    | "ClockedCounter"
                    | "AperiodicClocks"
            ),
            "{}",
            s.name
        );
        let expected = if s.can_interpolate_inputs { n_cont } else { 0 };
        assert_eq!(
            x3.matches("intermediateUpdate=\"true\"").count(),
            expected,
            "{}",
            s.name
        );
        // Only on continuous Float64 inputs.
        for line in x3
            .lines()
            .filter(|l| l.contains("intermediateUpdate=\"true\""))
        {
            assert!(
                line.trim_start().starts_with("<Float64")
                    && line.contains("causality=\"input\"")
                    && line.contains("variability=\"continuous\""),
                "{line}"
            );
        }
        assert!(!x2.contains("ntermediateUpdate"), "{}", s.name);
        let off = Capabilities::variant(s, FmiVersion::Fmi3, Variant::NoIntermediateUpdate);
        let xo = model_description(s, FmiVersion::Fmi3, &off, "X");
        assert!(xo.contains("providesIntermediateUpdate=\"false\""));
        assert!(!xo.contains("intermediateUpdate=\"true\""));
    }
}

// ------------------------------------------------------------ TypeMirror

mod type_mirror_tests {
    use super::*;
    use crate::type_mirror::{PAIRS, SUM, U_F32, X_F32, Y_F32, successor};
    use fmu_kit::{Variability, Variable};

    fn mirror() -> &'static ModelSpec {
        model("TypeMirror")
    }

    fn init3() -> Instance {
        ok(initialized(mirror(), FmiVersion::Fmi3, &[])).0
    }

    fn get_typed(inst: &mut Instance, vr: Vr) -> f64 {
        ok(get_any(inst, &[vr]))[0]
    }

    fn set_typed1(inst: &mut Instance, vr: Vr, x: f64) {
        set_typed(inst, mirror(), vr, x);
    }

    fn outputs(inst: &mut Instance) -> Vec<f64> {
        PAIRS.iter().map(|p| get_typed(inst, p.y)).collect()
    }

    #[test]
    fn type_mirror_declares_one_input_and_output_per_fmi3_only_type() {
        let s = mirror();
        assert!(s.supports(FmiVersion::Fmi3) && !s.supports(FmiVersion::Fmi2));
        /// (vr, name, FMI 3 type, causality, variability, start).
        type Row = (
            Vr,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            Option<f64>,
        );
        let list: Vec<Row> = s
            .variables
            .iter()
            .map(|v: &'static Variable| {
                (
                    v.vr,
                    v.name,
                    v.ty.fmi3_name(),
                    v.causality_name(),
                    match v.variability {
                        Variability::Continuous => "continuous",
                        Variability::Discrete => "discrete",
                        _ => "other",
                    },
                    v.start,
                )
            })
            .collect();
        let expected = vec![
            (0, "time", "Float64", "independent", "continuous", None),
            (1, "u_f32", "Float32", "input", "continuous", Some(0.5)),
            (2, "u_i8", "Int8", "input", "discrete", Some(-3.0)),
            (3, "u_u8", "UInt8", "input", "discrete", Some(200.0)),
            (4, "u_i16", "Int16", "input", "discrete", Some(-300.0)),
            (5, "u_u16", "UInt16", "input", "discrete", Some(60000.0)),
            (6, "u_u32", "UInt32", "input", "discrete", Some(4e9)),
            (7, "u_i64", "Int64", "input", "discrete", Some(-5e9)),
            (8, "u_u64", "UInt64", "input", "discrete", Some(9e12)),
            (9, "y_f32", "Float32", "output", "discrete", None),
            (10, "y_i8", "Int8", "output", "discrete", None),
            (11, "y_u8", "UInt8", "output", "discrete", None),
            (12, "y_i16", "Int16", "output", "discrete", None),
            (13, "y_u16", "UInt16", "output", "discrete", None),
            (14, "y_u32", "UInt32", "output", "discrete", None),
            (15, "y_i64", "Int64", "output", "discrete", None),
            (16, "y_u64", "UInt64", "output", "discrete", None),
            (17, "sum", "Float64", "output", "discrete", None),
            (18, "x_f32", "Float32", "output", "continuous", None),
        ];
        assert_eq!(list, expected);
        // No feed-through anywhere; output derivatives up to order 1.
        for v in s.with_causality(Causality::Output) {
            assert!(v.dependencies.is_empty(), "{}", v.name);
        }
        assert_eq!(s.max_output_derivative_order, 1);
        assert!(!s.can_interpolate_inputs);
        let x3 = fmu_kit::xml::model_description(
            s,
            FmiVersion::Fmi3,
            &Capabilities::full(s, FmiVersion::Fmi3),
            "TypeMirror",
        );
        for l in [
            r#"<Float32 name="u_f32" valueReference="1" description="Float32 input (held over the step; x_f32&apos; = u_f32)" causality="input" variability="continuous" start="0.5"/>"#,
            r#"<UInt64 name="u_u64" valueReference="8" description="UInt64 input (held over the step)" causality="input" variability="discrete" start="9000000000000"/>"#,
            r#"<Int64 name="u_i64" valueReference="7" description="Int64 input (held over the step)" causality="input" variability="discrete" start="-5000000000"/>"#,
            r#"<Output valueReference="18" dependencies="" dependenciesKind=""/>"#,
            r#"<InitialUnknown valueReference="17" dependencies="1 2 3 4 5 6 7 8"/>"#,
            r#"providesIntermediateUpdate="false""#,
            r#"maxOutputDerivativeOrder="1""#,
        ] {
            assert!(x3.contains(l), "missing {l} in\n{x3}");
        }
    }

    #[test]
    fn type_mirror_outputs_follow_the_held_inputs_at_the_end_of_each_step() {
        let mut inst = init3();
        // After initialization: y = start + 1, sum of the starts, x = 0.
        let starts: Vec<f64> = PAIRS.iter().map(|p| p.start).collect();
        let plus_one: Vec<f64> = starts.iter().map(|s| s + 1.0).collect();
        assert_eq!(outputs(&mut inst), plus_one);
        let start_sum = 0.5 - 3.0 + 200.0 - 300.0 + 60000.0 + 4e9 - 5e9 + 9e12;
        assert_eq!(get_typed(&mut inst, SUM), start_sum);
        assert_eq!(get_typed(&mut inst, X_F32), 0.0);
        // New inputs: no feed-through, the outputs wait for the step.
        let new = [
            0.25,
            -100.0,
            17.0,
            1234.0,
            4321.0,
            123_456_789.0,
            -(2f64.powi(52)),
            2f64.powi(52),
        ];
        for (p, x) in PAIRS.iter().zip(new) {
            set_typed1(&mut inst, p.u, x);
        }
        assert_eq!(outputs(&mut inst), plus_one);
        assert_eq!(get_typed(&mut inst, SUM), start_sum);
        step(&mut inst, 0.5);
        let expect: Vec<f64> = new.iter().map(|x| x + 1.0).collect();
        assert_eq!(outputs(&mut inst), expect);
        assert_eq!(get_typed(&mut inst, SUM), new.iter().sum::<f64>());
        // x' = u_f32 over the step: 0.25 * 0.5, a Float32 value.
        assert_eq!(get_typed(&mut inst, X_F32), 0.125);
        // Held: another step with the same inputs changes y and sum not at all.
        step(&mut inst, 0.5);
        assert_eq!(outputs(&mut inst), expect);
        assert_eq!(get_typed(&mut inst, X_F32), 0.25);
        // x is rounded to f32 after each step: 0.1 * 1 is no f32.
        set_typed1(&mut inst, U_F32, 0.1);
        assert_eq!(get_typed(&mut inst, U_F32), f64::from(0.1f32));
        step(&mut inst, 1.0);
        assert_eq!(
            get_typed(&mut inst, X_F32),
            f64::from((0.25 + f64::from(0.1f32)) as f32)
        );
        assert_eq!(get_typed(&mut inst, Y_F32), f64::from(1.1f32));
        // Output derivatives: x' = u_f32 (as Float64); y_f32 and sum 0;
        // integer outputs have none.
        set_typed1(&mut inst, U_F32, -2.5);
        let mut d = [f64::NAN; 3];
        ok(inst.get_output_derivatives(&[X_F32, Y_F32, SUM], &[1, 1, 1], &mut d));
        assert_eq!(d, [-2.5, 0.0, 0.0]);
        let e = inst.get_output_derivatives(&[PAIRS[1].y], &[1], &mut d[..1]);
        assert!(e.is_err_and(|e| e.message.contains(
            "output derivatives are defined for Float64 and Float32 variables only; y_i8 (vr 10) is Int8 (discrete)"
        )));
        assert!(
            inst.get_output_derivatives(&[X_F32], &[2], &mut d[..1])
                .is_err()
        );
    }

    #[test]
    fn type_mirror_saturates_at_each_types_max_and_never_wraps() {
        let mut inst = init3();
        for p in PAIRS.iter().filter(|p| p.ty != VarType::Float32) {
            let (lo, max) = p.ty.bounds().unwrap_or_default();
            // At the max and one below it: the max.
            set_typed1(&mut inst, p.u, max);
            step(&mut inst, 1.0);
            assert_eq!(get_typed(&mut inst, p.y), max, "{}", p.y_name);
            if max < 2f64.powi(53) {
                set_typed1(&mut inst, p.u, max - 1.0);
                step(&mut inst, 1.0);
                assert_eq!(get_typed(&mut inst, p.y), max, "{}", p.y_name);
            }
            // At the min: min + 1.
            set_typed1(&mut inst, p.u, lo);
            step(&mut inst, 1.0);
            assert_eq!(get_typed(&mut inst, p.y), lo + 1.0, "{}", p.y_name);
        }
        // The named maxima (the 64-bit ones: the largest f64 in the range).
        let maxima: Vec<f64> = PAIRS
            .iter()
            .filter_map(|p| p.ty.bounds())
            .map(|b| b.1)
            .collect();
        assert_eq!(
            maxima,
            [
                127.0,
                255.0,
                32767.0,
                65535.0,
                4_294_967_295.0,
                9_223_372_036_854_774_784.0,
                18_446_744_073_709_549_568.0
            ]
        );
        // 64-bit: exact up to 2^53, then u + 1 rounds to the nearest f64.
        let two53 = 2f64.powi(53);
        assert_eq!(successor(VarType::Int64, two53 - 2.0), two53 - 1.0);
        assert_eq!(successor(VarType::UInt64, two53 - 1.0), two53);
        assert_eq!(successor(VarType::UInt64, two53), two53);
        assert_eq!(successor(VarType::Int64, -two53), -two53 + 1.0);
        // Float32: rounded to f32, f32::MAX + 1 is f32::MAX, no wrapping.
        let fmax = f64::from(f32::MAX);
        assert_eq!(successor(VarType::Float32, fmax), fmax);
        set_typed1(&mut inst, U_F32, fmax);
        step(&mut inst, 1.0);
        assert_eq!(get_typed(&mut inst, Y_F32), fmax);
        set_typed1(&mut inst, U_F32, f64::NEG_INFINITY);
        step(&mut inst, 1.0);
        assert_eq!(get_typed(&mut inst, Y_F32), f64::NEG_INFINITY);
    }

    /// Two TypeMirrors in a loop (a.y_* -> b.u_*, b.y_* -> a.u_*, Jacobi) and
    /// one whose outputs feed its own inputs: every y_* counts up by one per
    /// step from start + 1.
    #[test]
    fn type_mirror_loops_count_up_by_one_per_step() {
        let mut a = init3();
        let mut b = init3();
        let mut own = init3();
        let h = 1.0;
        for k in 0..20 {
            let expect: Vec<f64> = PAIRS
                .iter()
                .map(|p| successor(p.ty, p.start + k as f64))
                .collect();
            assert_eq!(outputs(&mut a), expect, "a after {k} steps");
            assert_eq!(outputs(&mut b), expect, "b after {k} steps");
            assert_eq!(outputs(&mut own), expect, "own after {k} steps");
            let ya = outputs(&mut a);
            let yb = outputs(&mut b);
            let yo = outputs(&mut own);
            for (j, p) in PAIRS.iter().enumerate() {
                set_typed1(&mut b, p.u, ya[j]);
                set_typed1(&mut a, p.u, yb[j]);
                set_typed1(&mut own, p.u, yo[j]);
            }
            step(&mut a, h);
            step(&mut b, h);
            step(&mut own, h);
            let sum: f64 = PAIRS.iter().map(|p| p.start + k as f64 + 1.0).sum();
            assert_eq!(get_typed(&mut a, SUM), sum);
        }
        // u_u8 starts at 200: after 20 steps y_u8 = 221, far from 255.
        assert_eq!(get_typed(&mut own, PAIRS[2].y), 221.0);
    }

    #[test]
    fn type_mirror_has_no_fmi2_build_and_refuses_out_of_range_inputs() {
        let s = mirror();
        let e = Capabilities::full(s, FmiVersion::Fmi2)
            .check(s, FmiVersion::Fmi2)
            .err()
            .unwrap_or_default();
        assert_eq!(
            e,
            "TypeMirror has no fmi2 build: u_f32 is of the FMI 3 only type Float32"
        );
        let mut inst = init3();
        let before = outputs(&mut inst);
        for p in PAIRS.iter().filter(|p| p.ty != VarType::Float32) {
            let (lo, hi) = p.ty.bounds().unwrap_or_default();
            for bad in [lo - 1.0, hi + 1.0, hi * 2.0, 0.5] {
                if p.ty.holds(bad) {
                    continue; // hi + 1 rounds to hi for the 64-bit types
                }
                let e = inst.set(&[p.u], p.ty, &[bad]);
                assert!(
                    e.is_err_and(|e| e.message.contains("is not a whole number in the range of")),
                    "{} = {bad}",
                    p.u_name
                );
            }
        }
        step(&mut inst, 1.0);
        assert_eq!(outputs(&mut inst), before, "refused sets changed nothing");
    }
}

mod structural_gain_tests {
    use super::*;
    use crate::structural_gain::{K, N, U, Y};
    use fmu_kit::testing::initialized_configured;
    use fmu_kit::{Initial, Variability};

    fn sg() -> &'static ModelSpec {
        model("StructuralGain")
    }

    fn set_n(inst: &mut Instance, n: f64) -> Result<(), fmu_kit::instance::Fail> {
        inst.set(&[N], VarType::UInt64, &[n])
    }

    fn get_n(inst: &mut Instance) -> f64 {
        let mut x = f64::NAN;
        ok(inst.get(&[N], VarType::UInt64, &mut |_, v| x = v));
        x
    }

    #[test]
    fn structural_gain_declares_a_structural_parameter_and_is_fmi3_only() {
        let s = sg();
        // (vr, name, FMI 3 type, causality, variability, initial, start)
        let list: Vec<_> = s
            .variables
            .iter()
            .map(|v| {
                (
                    v.vr,
                    v.name,
                    v.ty.fmi3_name(),
                    v.causality_name(),
                    v.variability,
                    v.effective_initial(),
                    v.start,
                )
            })
            .collect();
        use Variability::{Continuous, Fixed};
        assert_eq!(
            list,
            vec![
                (0, "time", "Float64", "independent", Continuous, None, None),
                (U, "u", "Float64", "input", Continuous, None, Some(0.0)),
                (
                    Y,
                    "y",
                    "Float64",
                    "output",
                    Continuous,
                    Some(Initial::Calculated),
                    None
                ),
                (
                    K,
                    "k",
                    "Float64",
                    "parameter",
                    Fixed,
                    Some(Initial::Exact),
                    Some(1.0)
                ),
                (
                    N,
                    "n",
                    "UInt64",
                    "structuralParameter",
                    Fixed,
                    Some(Initial::Exact),
                    Some(1.0)
                ),
            ]
        );
        assert_eq!(s.variable(N).and_then(|v| v.min), Some(1.0));
        assert!(s.has_structural_parameters());
        assert!(s.supports(FmiVersion::Fmi3) && !s.supports(FmiVersion::Fmi2));
        assert_eq!(
            Capabilities::full(s, FmiVersion::Fmi2).check(s, FmiVersion::Fmi2),
            Err("StructuralGain has no fmi2 build: n is of the FMI 3 only type UInt64".to_string())
        );
        // The models with structural parameters.
        let with: Vec<&str> = registry()
            .iter()
            .filter(|s| s.has_structural_parameters())
            .map(|s| s.name)
            .collect();
        assert_eq!(with, ["StructuralGain", "StateSpace"]);
    }

    #[test]
    fn y_is_k_n_u_with_n_set_in_configuration_mode() {
        let s = sg();
        let (mut inst, _) = ok(initialized_configured(
            s,
            &[(N, 3.0)],
            &[(K, 2.5), (U, 1.5)],
        ));
        assert_eq!(get_n(&mut inst), 3.0);
        assert_eq!(ok(get1(&mut inst, Y)), 2.5 * 3.0 * 1.5);
        // Feed-through: the current input, before and after a step.
        ok(set(&mut inst, &[U], &[-2.0]));
        assert_eq!(ok(get1(&mut inst, Y)), -15.0);
        step(&mut inst, 0.01);
        assert_eq!(ok(get1(&mut inst, Y)), -15.0);
        ok(set(&mut inst, &[U], &[4.0]));
        assert_eq!(ok(get1(&mut inst, Y)), 30.0);
        // dy/du = k n; the first output derivative is 0 (inputs held).
        let mut d = [0.0];
        ok(inst.directional_derivative(&[Y], &[U], &[1.0], &mut d));
        assert_eq!(d[0], 7.5);
        ok(inst.get_output_derivatives(&[Y], &[1], &mut d));
        assert_eq!(d[0], 0.0);
        // Without configuration: n = 1.
        let (mut one, _) = ok(initialized_configured(s, &[], &[(U, 1.5)]));
        assert_eq!(ok(get1(&mut one, Y)), 1.5);
        // A large n (exact as f64).
        let big = 9_007_199_254_740_992.0; // 2^53
        let (mut b, _) = ok(initialized_configured(s, &[(N, big)], &[(U, 1.0)]));
        assert_eq!(get_n(&mut b), big);
        assert_eq!(ok(get1(&mut b, Y)), big);
    }

    #[test]
    fn n_is_refused_outside_configuration_mode_and_validated_at_initialization() {
        let s = sg();
        let (mut inst, _) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
        let e = set_n(&mut inst, 3.0)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(
            e,
            "Illegal call sequence: structuralParameter n (vr 4, variability fixed, initial exact) cannot be set \
             in state Instantiated: structural parameters can only be set in Configuration Mode (fmi3EnterConfigurationMode)"
        );
        ok(inst.enter_configuration());
        let e = set(&mut inst, &[K], &[2.0])
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            e.contains("parameter k (vr 3, variability fixed, initial exact) cannot be set in state Configuration Mode"),
            "{e}"
        );
        ok(set_n(&mut inst, 0.0));
        ok(inst.exit_configuration());
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        let e = set_n(&mut inst, 2.0)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(
            e.contains("cannot be set in state Initialization Mode: structural parameters can only be set in Configuration Mode"),
            "{e}"
        );
        let e = inst
            .exit_initialization()
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(e, "n must be >= 1, got 0");
    }

    #[test]
    fn fmu_state_and_reset_keep_or_restore_n() {
        let s = sg();
        let (mut inst, _) = ok(initialized_configured(s, &[(N, 4.0)], &[(U, 1.0)]));
        step(&mut inst, 0.01);
        let id = ok(inst.get_state(None));
        let mut bytes = vec![0u8; ok(inst.serialized_size(id))];
        ok(inst.serialize(id, &mut bytes));
        ok(inst.reset());
        assert_eq!(inst.mode(), Mode::Instantiated);
        ok(inst.enter_configuration());
        assert_eq!(get_n(&mut inst), 1.0, "the start value after reset");
        ok(inst.exit_configuration());
        ok(inst.set_state(id));
        assert_eq!(get_n(&mut inst), 4.0);
        assert_eq!(ok(get1(&mut inst, Y)), 4.0);
        let (mut other, _) = ok(initialized_configured(s, &[(N, 2.0)], &[]));
        let id2 = ok(other.deserialize(&bytes, None));
        ok(other.set_state(id2));
        assert_eq!(get_n(&mut other), 4.0);
        step(&mut other, 0.01);
        assert_eq!(ok(get1(&mut other, Y)), 4.0);
    }
}

// -------------------------------------------------------------- Greeting

mod greeting_tests {
    use super::*;
    use crate::greeting::{CHECKSUM, LENGTH, MESSAGE, NAME, PREFIX, checksum, message};
    use fmu_kit::xml::model_description;
    use fmu_kit::{DependencyKind, Variability};

    fn greeting() -> &'static ModelSpec {
        model("Greeting")
    }

    /// An instance of `version` set up to the start of Initialization Mode.
    fn entered(version: FmiVersion) -> Instance {
        let s = greeting();
        let (mut inst, _) = instance(s, version, Capabilities::full(s, version));
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        inst
    }

    /// message, length, checksum.
    fn outputs(inst: &mut Instance) -> (String, i64, f64) {
        (
            ok(get_str(inst, MESSAGE)),
            ok(get_int(inst, LENGTH)),
            ok(get1(inst, CHECKSUM)),
        )
    }

    fn expected(prefix: &str, name: &str) -> (String, i64, f64) {
        let m = message(prefix, name);
        let n = m.chars().count() as i64;
        let c = checksum(&m);
        (m, n, c)
    }

    #[test]
    fn greeting_declares_a_string_parameter_input_and_output_in_both_versions() {
        let s = greeting();
        assert!(s.supports(FmiVersion::Fmi2) && s.supports(FmiVersion::Fmi3));
        let types: Vec<(&str, VarType, Causality, Variability)> = s
            .variables
            .iter()
            .skip(1)
            .map(|v| (v.name, v.ty, v.causality, v.variability))
            .collect();
        assert_eq!(
            types,
            [
                (
                    "name",
                    VarType::String,
                    Causality::Input,
                    Variability::Discrete
                ),
                (
                    "message",
                    VarType::String,
                    Causality::Output,
                    Variability::Discrete
                ),
                (
                    "length",
                    VarType::Integer,
                    Causality::Output,
                    Variability::Discrete
                ),
                (
                    "checksum",
                    VarType::Real,
                    Causality::Output,
                    Variability::Discrete
                ),
                (
                    "prefix",
                    VarType::String,
                    Causality::Parameter,
                    Variability::Fixed
                ),
            ]
        );
        for out in [MESSAGE, LENGTH, CHECKSUM] {
            let v = s.variable(out).map(|v| v.dependencies.clone());
            assert_eq!(v, Some(vec![(NAME, DependencyKind::Dependent)]));
        }
        let x2 = model_description(
            s,
            FmiVersion::Fmi2,
            &Capabilities::full(s, FmiVersion::Fmi2),
            "Greeting",
        );
        assert!(x2.contains("<String start=\"world\"/>"), "{x2}");
        assert!(x2.contains("<String start=\"Hello\"/>"), "{x2}");
        let x3 = model_description(
            s,
            FmiVersion::Fmi3,
            &Capabilities::full(s, FmiVersion::Fmi3),
            "Greeting",
        );
        assert!(x3.contains("<Start value=\"world\"/>"), "{x3}");
        assert!(x3.contains("<Start value=\"Hello\"/>"), "{x3}");
        assert!(x3.contains("<Int32 name=\"length\""), "{x3}");
    }

    #[test]
    fn greeting_outputs_follow_prefix_and_name_in_both_versions() {
        // 7552 = sum of (i + 1) * code point over "Hello, world".
        assert_eq!(checksum("Hello, world"), 7552.0);
        for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
            let mut inst = entered(version);
            assert_eq!(outputs(&mut inst), expected("Hello", "world"));
            assert_eq!(outputs(&mut inst).1, 12);
            ok(set_str(&mut inst, PREFIX, "Grüß Gott"));
            ok(set_str(&mut inst, NAME, "Zoë"));
            assert_eq!(outputs(&mut inst), expected("Grüß Gott", "Zoë"));
            assert_eq!(outputs(&mut inst).1, 14, "characters, not bytes");
            ok(inst.exit_initialization());
            let h = greeting().experiment.step_size;
            step(&mut inst, h);
            assert_eq!(outputs(&mut inst).0, "Grüß Gott, Zoë");
            // The input acts at once (feed-through) and is held over steps.
            ok(set_str(&mut inst, NAME, ""));
            assert_eq!(outputs(&mut inst), expected("Grüß Gott", ""));
            step(&mut inst, h);
            step(&mut inst, h);
            assert_eq!(ok(get_str(&mut inst, NAME)), "");
            assert_eq!(outputs(&mut inst), expected("Grüß Gott", ""));
            // The parameter is fixed: refused once initialization ended.
            let e = inst
                .set_strings(&[PREFIX], &["Hi"])
                .err()
                .map(|e| e.message);
            assert!(
                e.as_deref().is_some_and(|m| m.contains(
                    "Illegal call sequence: parameter prefix (vr 5, variability fixed, initial exact) cannot be set"
                )),
                "{e:?}"
            );
            // Outputs and wrong types are refused.
            assert!(inst.set_strings(&[MESSAGE], &["x"]).is_err());
            assert!(inst.set(&[NAME], VarType::String, &[0.0]).is_err());
            assert!(inst.set(&[LENGTH], VarType::Integer, &[1.0]).is_err());
            assert!(get1(&mut inst, MESSAGE).is_err());
            assert_eq!(ok(get_str(&mut inst, PREFIX)), "Grüß Gott");
        }
    }

    #[test]
    fn greeting_sets_the_prefix_in_instantiated_as_fmpy_and_cosim_do() {
        let s = greeting();
        for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
            let (mut inst, _) = instance(s, version, Capabilities::full(s, version));
            ok(inst.setup_experiment(0.0, None));
            ok(set_str(&mut inst, PREFIX, "Hi"));
            ok(set_str(&mut inst, NAME, "there"));
            ok(inst.enter_initialization());
            ok(inst.exit_initialization());
            assert_eq!(outputs(&mut inst), expected("Hi", "there"));
            // Reset brings the start values back.
            ok(inst.reset());
            ok(inst.setup_experiment(0.0, None));
            ok(inst.enter_initialization());
            assert_eq!(outputs(&mut inst), expected("Hello", "world"));
        }
    }

    #[test]
    fn greeting_fmu_state_and_serialization_hold_the_strings() {
        let mut inst = entered(FmiVersion::Fmi2);
        ok(set_str(&mut inst, PREFIX, "Moin"));
        ok(inst.exit_initialization());
        ok(set_str(&mut inst, NAME, "A"));
        step(&mut inst, 0.01);
        let id = ok(inst.get_state(None));
        let mut bytes = vec![0u8; ok(inst.serialized_size(id))];
        ok(inst.serialize(id, &mut bytes));
        ok(set_str(&mut inst, NAME, "B"));
        step(&mut inst, 0.01);
        assert_eq!(outputs(&mut inst), expected("Moin", "B"));
        ok(inst.set_state(id));
        assert_eq!(outputs(&mut inst), expected("Moin", "A"));
        // Into a fresh instance with the start values.
        let mut other = ok(initialized(greeting(), FmiVersion::Fmi2, &[])).0;
        assert_eq!(outputs(&mut other), expected("Hello", "world"));
        let id2 = ok(other.deserialize(&bytes, None));
        ok(other.set_state(id2));
        assert_eq!(outputs(&mut other), expected("Moin", "A"));
        assert_eq!(ok(get_str(&mut other, PREFIX)), "Moin");
        // Truncated inside the strings: refused.
        assert!(other.deserialize(&bytes[..bytes.len() - 2], None).is_err());
    }
}

// ------------------------------------------------------------- StateSpace

mod state_space_tests {
    use super::*;
    use crate::state_space::{A, B, C, D, DER_X, M, N, R, U, X, X0, Y, expm};
    use fmu_kit::testing::initialized_configured;
    use fmu_kit::{Dimension, Initial, Variability};

    fn ss() -> &'static ModelSpec {
        model("StateSpace")
    }

    /// An FMI 3 instance with the sizes (m, n, r) set in Configuration
    /// Mode, the arrays in `params` set whole in Initialization Mode.
    fn configured(sizes: (u64, u64, u64), params: &[(Vr, &[f64])]) -> Instance {
        let (m, n, r) = sizes;
        let s = ss();
        let (mut inst, _) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
        ok(inst.enter_configuration());
        for (vr, x) in [(M, m), (N, n), (R, r)] {
            ok(inst.set(&[vr], VarType::UInt64, &[x as f64]));
        }
        ok(inst.exit_configuration());
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        for (vr, vals) in params {
            ok(set_array(&mut inst, *vr, vals));
        }
        ok(inst.exit_initialization());
        inst
    }

    fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= tol * w.abs().max(1.0),
                "{what}: {got:?} vs {want:?}"
            );
        }
    }

    #[test]
    fn state_space_declares_the_reference_fmus_variables_with_arrays() {
        let s = ss();
        use Dimension::Structural as S;
        // (vr, name, type, causality, variability, initial, dimensions)
        let list: Vec<_> = s
            .variables
            .iter()
            .map(|v| {
                (
                    v.vr,
                    v.name,
                    v.ty.fmi3_name(),
                    v.causality_name(),
                    v.variability,
                    v.effective_initial(),
                    v.dimensions.clone(),
                )
            })
            .collect();
        use Variability::{Continuous, Fixed, Tunable};
        let (exact, calc) = (Some(Initial::Exact), Some(Initial::Calculated));
        let sp = "structuralParameter";
        assert_eq!(
            list,
            vec![
                (
                    0,
                    "time",
                    "Float64",
                    "independent",
                    Continuous,
                    None,
                    vec![]
                ),
                (M, "m", "UInt64", sp, Fixed, exact, vec![]),
                (N, "n", "UInt64", sp, Fixed, exact, vec![]),
                (R, "r", "UInt64", sp, Fixed, exact, vec![]),
                (
                    A,
                    "A",
                    "Float64",
                    "parameter",
                    Tunable,
                    exact,
                    vec![S(N), S(N)]
                ),
                (
                    B,
                    "B",
                    "Float64",
                    "parameter",
                    Tunable,
                    exact,
                    vec![S(N), S(M)]
                ),
                (
                    C,
                    "C",
                    "Float64",
                    "parameter",
                    Tunable,
                    exact,
                    vec![S(R), S(N)]
                ),
                (
                    D,
                    "D",
                    "Float64",
                    "parameter",
                    Tunable,
                    exact,
                    vec![S(R), S(M)]
                ),
                (X0, "x0", "Float64", "parameter", Fixed, exact, vec![S(N)]),
                (U, "u", "Float64", "input", Continuous, None, vec![S(M)]),
                (Y, "y", "Float64", "output", Continuous, calc, vec![S(R)]),
                (X, "x", "Float64", "local", Continuous, calc, vec![S(N)]),
                (
                    DER_X,
                    "der(x)",
                    "Float64",
                    "local",
                    Continuous,
                    calc,
                    vec![S(N)]
                ),
            ]
        );
        for vr in [M, N, R] {
            let v = s.variable(vr).unwrap_or(&s.variables[0]);
            assert_eq!((v.start, v.min, v.max), (Some(3.0), Some(1.0), Some(5.0)));
        }
        assert!(s.supports(FmiVersion::Fmi3) && !s.supports(FmiVersion::Fmi2));
        let x = fmu_kit::xml::model_description(
            s,
            FmiVersion::Fmi3,
            &Capabilities::full(s, FmiVersion::Fmi3),
            "StateSpace",
        );
        for needle in [
            "<Float64 name=\"A\" valueReference=\"4\" description=\"Matrix coefficient A\" causality=\"parameter\" \
             variability=\"tunable\" initial=\"exact\" start=\"1.0 0.0 0.0 0.0 1.0 0.0 0.0 0.0 1.0\">\n      \
             <Dimension valueReference=\"2\"/>\n      <Dimension valueReference=\"2\"/>\n    </Float64>",
            "<Float64 name=\"B\" valueReference=\"5\"",
            "start=\"1.0 2.0 3.0\">\n      <Dimension valueReference=\"1\"/>\n    </Float64>",
            "<Float64 name=\"x0\" valueReference=\"8\" description=\"Initial state vector\" causality=\"parameter\" \
             variability=\"fixed\" initial=\"exact\" start=\"0.0 0.0 0.0\">",
            "<Output valueReference=\"10\" dependencies=\"9\" dependenciesKind=\"dependent\"/>",
            "<InitialUnknown valueReference=\"10\" dependencies=\"1 2 3 6 7 8 9\"/>",
            "providesIntermediateUpdate=\"false\"",
        ] {
            assert!(x.contains(needle), "missing {needle} in\n{x}");
        }
    }

    #[test]
    fn defaults_give_y_equal_u_exp_t() {
        // A = B = C = D = I (3x3), x0 = 0, u = 1 2 3: x = u (e^t - 1),
        // y = x + u = u e^t, der(x) = x + u.
        let s = ss();
        let (mut inst, _) = ok(initialized_configured(s, &[], &[]));
        assert_eq!(ok(get_array(&mut inst, Y)), [1.0, 2.0, 3.0]);
        assert_eq!(ok(get_array(&mut inst, X)), [0.0; 3]);
        let h = 0.01;
        for _ in 0..100 {
            step(&mut inst, h);
        }
        let e = 1f64.exp();
        close(
            &ok(get_array(&mut inst, Y)),
            &[e, 2.0 * e, 3.0 * e],
            1e-13,
            "y(1)",
        );
        close(
            &ok(get_array(&mut inst, X)),
            &[e - 1.0, 2.0 * (e - 1.0), 3.0 * (e - 1.0)],
            1e-13,
            "x(1)",
        );
        close(
            &ok(get_array(&mut inst, DER_X)),
            &[e, 2.0 * e, 3.0 * e],
            1e-13,
            "der(x)(1)",
        );
    }

    #[test]
    fn rotation_matches_the_analytic_solution_over_variable_steps() {
        // n = 2, m = r = 1: x1' = x2, x2' = -x1 + u, y = x1; x(0) = (1, 0),
        // u = c: x1 = c + (1 - c) cos t, x2 = -(1 - c) sin t.
        let c = 0.5;
        let mut inst = configured(
            (1, 2, 1),
            &[
                (A, &[0.0, 1.0, -1.0, 0.0]),
                (B, &[0.0, 1.0]),
                (C, &[1.0, 0.0]),
                (D, &[0.0]),
                (X0, &[1.0, 0.0]),
                (U, &[c]),
            ],
        );
        assert_eq!(ok(get_array(&mut inst, Y)), [1.0], "x(0) = x0");
        let mut t = 0.0;
        for (k, h) in [0.01, 0.25, 0.001, 1.0, 0.1]
            .iter()
            .cycle()
            .take(40)
            .enumerate()
        {
            step(&mut inst, *h);
            t += h;
            let x = ok(get_array(&mut inst, X));
            let want = [c + (1.0 - c) * t.cos(), -(1.0 - c) * t.sin()];
            close(&x, &want, 1e-12, &format!("x after step {k}, t = {t}"));
            close(&ok(get_array(&mut inst, Y)), &want[..1], 1e-12, "y");
        }
        assert!(t > 10.0);
    }

    #[test]
    fn diagonal_system_with_direct_feed_through() {
        // n = m = r = 3, A = diag(-1, -2, -0.5), B = C = I, D = 2 I:
        // x_i = e^(a t) x0_i + (e^(a t) - 1) / a u_i, y = x + 2 u.
        let a = [-1.0, -2.0, -0.5];
        let x0 = [1.0, 2.0, 3.0];
        let u = [1.0, 0.0, -1.0];
        let diag = |d: [f64; 3]| {
            let mut m = [0.0; 9];
            for i in 0..3 {
                m[4 * i] = d[i];
            }
            m
        };
        let mut inst = configured(
            (3, 3, 3),
            &[(A, &diag(a)), (D, &diag([2.0; 3])), (X0, &x0), (U, &u)],
        );
        let exact = |t: f64| -> Vec<f64> {
            (0..3)
                .map(|i| {
                    let e = (a[i] * t).exp();
                    e * x0[i] + (e - 1.0) / a[i] * u[i] + 2.0 * u[i]
                })
                .collect()
        };
        close(&ok(get_array(&mut inst, Y)), &exact(0.0), 0.0, "y(0)");
        for k in 1..=50 {
            step(&mut inst, 0.1);
            close(
                &ok(get_array(&mut inst, Y)),
                &exact(0.1 * f64::from(k)),
                1e-13,
                "y",
            );
        }
        // Feed-through: y follows a new input at once, x only after a step.
        let x = ok(get_array(&mut inst, X));
        ok(set_array(&mut inst, U, &[0.0, 1.0, 0.0]));
        let y = ok(get_array(&mut inst, Y));
        close(&y, &[x[0], x[1] + 2.0, x[2]], 1e-15, "y after setting u");
        assert_eq!(ok(get_array(&mut inst, X)), x);
    }

    #[test]
    fn tunable_matrices_act_from_the_next_step() {
        let mut inst = configured((1, 1, 1), &[(A, &[0.0]), (U, &[1.0])]);
        step(&mut inst, 0.5);
        close(&ok(get_array(&mut inst, X)), &[0.5], 1e-15, "x' = u");
        ok(set_array(&mut inst, A, &[-1.0]));
        ok(set_array(&mut inst, C, &[2.0]));
        // y = C x + D u with the new C at once.
        close(&ok(get_array(&mut inst, Y)), &[2.0], 1e-15, "y = 2 x + u");
        step(&mut inst, 1.0);
        // x' = -x + 1 from 0.5: x = 1 - 0.5 e^-1.
        let want = 1.0 - 0.5 * (-1f64).exp();
        close(
            &ok(get_array(&mut inst, X)),
            &[want],
            1e-14,
            "x after retuning A",
        );
        // x0 is fixed: not settable in Step Mode.
        let e = set_array(&mut inst, X0, &[1.0])
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(e.contains("parameter x0 (vr 8, variability fixed, initial exact) cannot be set in state Step Mode"), "{e}");
    }

    #[test]
    fn structural_parameters_resize_every_array() {
        let s = ss();
        let (mut inst, _) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
        // Set before Configuration Mode: kept where the indices remain.
        ok(set_array(
            &mut inst,
            A,
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        ));
        ok(set_array(&mut inst, U, &[10.0, 20.0, 30.0]));
        ok(inst.enter_configuration());
        ok(inst.set(&[M, N, R], VarType::UInt64, &[5.0, 2.0, 1.0]));
        ok(inst.exit_configuration());
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        // Sizes: A 2x2 (the leading part), B 2x5, C 1x2, D 1x5, x0 2,
        // u 5 (kept 10 20 30, new elements at their start 4 5), y 1.
        let sizes: Vec<usize> = [A, B, C, D, X0, U, Y, X, DER_X]
            .iter()
            .map(|&vr| inst.value_count(&[vr]))
            .collect();
        assert_eq!(sizes, [4, 10, 2, 5, 2, 5, 1, 2, 2]);
        assert_eq!(ok(get_array(&mut inst, A)), [1.0, 2.0, 4.0, 5.0]);
        assert_eq!(
            ok(get_array(&mut inst, B)),
            [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(ok(get_array(&mut inst, U)), [10.0, 20.0, 30.0, 4.0, 5.0]);
        assert_eq!(inst.value_count(&[A, U, Y, M]), 4 + 5 + 1 + 1);
        ok(inst.exit_initialization());
        // y = C x0 + D u = u_1 = 10.
        assert_eq!(ok(get_array(&mut inst, Y)), [10.0]);
        step(&mut inst, 0.1);
        // x' = A x + B u with A = [[1, 2], [4, 5]], B u = (10, 20), x(0) = 0:
        // x(h) is the last column of exp([[A h, B u h], [0, 0]]).
        let h = 0.1;
        let aug = [
            1.0 * h,
            2.0 * h,
            10.0 * h,
            4.0 * h,
            5.0 * h,
            20.0 * h,
            0.0,
            0.0,
            0.0,
        ];
        let e = expm(&aug, 3);
        close(&ok(get_array(&mut inst, X)), &[e[2], e[5]], 1e-14, "x");
        // Out of range in Configuration Mode: refused at once.
        ok(inst.reset());
        ok(inst.enter_configuration());
        let e = inst
            .set(&[N], VarType::UInt64, &[6.0])
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(
            e,
            "value 6 of n (vr 2) is above its max 5 (n sizes the arrays A, B, C, x0, x, der(x))"
        );
        let e = inst
            .set(&[M], VarType::UInt64, &[0.0])
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(
            e,
            "value 0 of m (vr 1) is below its min 1 (m sizes the arrays B, D, u)"
        );
        ok(inst.exit_configuration());
        // After reset: the start sizes and values.
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        assert_eq!(inst.value_count(&[A, U]), 12);
        assert_eq!(ok(get_array(&mut inst, U)), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn n_values_other_than_the_current_sizes_are_refused() {
        let mut inst = configured((2, 3, 1), &[]);
        assert_eq!(inst.value_count(&[U, Y, A]), 2 + 1 + 9);
        let e = inst
            .check_value_count(&[U, Y, A], 3)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(
            e,
            "Expected nValues = 12 but was 3: nValues must be the sum of the current sizes of the variables \
             (u[2]: 2, y[1]: 1, A[3,3]: 9)"
        );
        let e = inst
            .check_value_count(&[Y, M, N], 4)
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(
            e,
            "Expected nValues = 3 but was 4: nValues must be the sum of the current sizes of the variables \
             (y[1]: 1, 2 scalars: 2)"
        );
        assert!(inst.check_value_count(&[Y, M, N], 3).is_ok());
        // The Rust setter checks the count too, changing nothing.
        let before = ok(get_array(&mut inst, U));
        let e = inst
            .set(&[U], VarType::Real, &[1.0, 2.0, 3.0])
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert!(e.starts_with("Expected nValues = 2 but was 3"), "{e}");
        assert_eq!(ok(get_array(&mut inst, U)), before);
    }

    #[test]
    fn invalid_matrices_are_named_at_initialization() {
        let s = ss();
        let (mut inst, _) = instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
        ok(inst.setup_experiment(0.0, None));
        ok(inst.enter_initialization());
        let mut a = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        a[3] = f64::NAN;
        ok(set_array(&mut inst, A, &a));
        let e = inst
            .exit_initialization()
            .err()
            .map(|e| e.message)
            .unwrap_or_default();
        assert_eq!(e, "A[2,1] must be finite, got NaN");
    }

    #[test]
    fn expm_of_a_rotation_and_a_nilpotent_matrix() {
        // exp([[0, t], [-t, 0]]) = [[cos t, sin t], [-sin t, cos t]].
        for t in [0.1, 1.0, 3.0, 30.0] {
            let e = expm(&[0.0, t, -t, 0.0], 2);
            close(
                &e,
                &[t.cos(), t.sin(), -t.sin(), t.cos()],
                1e-13,
                "rotation",
            );
        }
        // exp([[0, 1], [0, 0]]) = [[1, 1], [0, 1]] exactly.
        assert_eq!(expm(&[0.0, 1.0, 0.0, 0.0], 2), [1.0, 1.0, 0.0, 1.0]);
    }
}
