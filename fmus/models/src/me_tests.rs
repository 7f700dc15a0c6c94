//! The Model Exchange interfaces of the models, through the kit's instance
//! API (the checks of the C layer included, `InstanceFmu`), integrated by
//! the kit's test importer (fixed-step RK4, state events located by
//! bisection) and compared with the references of [`crate::reference`].
//! The packaged FMUs are run the same way through their C ABI in
//! `tests/packaged_me.rs`.

use fmu_kit::testing::model_exchange::{
    Connection, Coupled, EventKind, InstanceFmu, Run, Settings, simulate,
};
use fmu_kit::testing::{get_int, initialized_as};
use fmu_kit::{FmiVersion, Instance, Interface, ModelSpec, Vr};

use crate::reference::{self, QuarterCar};
use crate::{bouncing_ball, quarter_car, robertson, spec, step_events, time_events};

fn model(name: &str) -> &'static ModelSpec {
    spec(name).unwrap_or_else(|| panic!("{name} is registered"))
}

/// A Model Exchange instance of `name`, initialized with `params`: in
/// Event Mode.
fn me_instance(name: &str, version: FmiVersion, params: &[(Vr, f64)]) -> Instance {
    initialized_as(model(name), version, Interface::ModelExchange, params)
        .map(|(inst, _log)| inst)
        .unwrap_or_else(|e| panic!("{name}: {}", e.message))
}

fn run(inst: &mut Instance, observed: &[Vr], settings: &Settings) -> Run {
    let mut fmu = InstanceFmu {
        instance: inst,
        observed: observed.to_vec(),
    };
    simulate(&mut fmu, 0.0, settings).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn bouncing_ball_contacts_are_the_analytic_ones() {
    use bouncing_ball::{CONTACTS, H, V};
    let (h0, e, g, v_min) = (1.0, 0.7, 9.81, 0.1);
    let n = reference::bouncing_ball_contact_count(h0, e, g, v_min);
    assert_eq!(n, 11);
    let exact = reference::bouncing_ball_contacts(h0, e, g, n);
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let mut inst = me_instance("BouncingBallME", version, &[]);
        let r = run(&mut inst, &[H, V], &Settings::rk4(1e-3, 3.0));
        let contacts = r.event_times(EventKind::State);
        assert_eq!(contacts.len(), n, "{version:?}: {contacts:?}");
        for (k, (t, x)) in contacts.iter().zip(&exact).enumerate() {
            assert!(
                (t - x).abs() < 1e-6,
                "{version:?}: contact {} at {t}, exactly {x}",
                k + 1
            );
        }
        // Between the contacts, the free flight (RK4 is exact for it).
        for (t, hv) in r.times.iter().zip(&r.observed) {
            let h = reference::bouncing_ball_height(h0, e, g, v_min, *t);
            assert!(
                (hv[0] - h).abs() < 1e-6,
                "{version:?}: h({t}) = {}, exactly {h}",
                hv[0]
            );
        }
        assert_eq!(get_int(&mut inst, CONTACTS).ok(), Some(11));
        let end = r.observed.last().cloned().unwrap_or_default();
        assert!(
            end[0] > 0.0 && end[0] < 1e-300 && end[1] == 0.0,
            "at rest: {end:?}"
        );
    }
}

#[test]
fn robertson_reference_is_hairer_and_wanners() {
    let y = reference::robertson(40.0, 1e-4);
    for (k, (a, b)) in y.iter().zip(reference::ROBERTSON_T40).enumerate() {
        assert!(
            ((a - b) / b).abs() < 1e-8,
            "y{} = {a}, literature {b}",
            k + 1
        );
    }
    assert!((y.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

#[test]
fn robertson_model_exchange_reaches_the_reference_at_40() {
    use robertson::{Y1, Y2, Y3};
    let mut inst = me_instance("Robertson", FmiVersion::Fmi3, &[]);
    // Explicit RK4 needs small steps on this stiff problem (stable below
    // about 8e-4 here).
    let r = run(&mut inst, &[], &Settings::rk4(5e-4, 40.0));
    let y = r.final_states();
    for (k, (a, b)) in y.iter().zip(reference::ROBERTSON_T40).enumerate() {
        assert!(
            ((a - b) / b).abs() < 1e-7,
            "y{} = {a}, literature {b}",
            k + 1
        );
    }
    // The Jacobian the FMU gives (directional derivatives) is the
    // equations'.
    let mut col = [0.0; 3];
    inst.directional_derivative(
        &[robertson::DER_Y1, robertson::DER_Y2, robertson::DER_Y3],
        &[Y2],
        &[1.0],
        &mut col,
    )
    .unwrap_or_else(|e| panic!("{}", e.message));
    let (k2, k3) = (3e7, 1e4);
    let expected = [k3 * y[2], -k3 * y[2] - 2.0 * k2 * y[1], 2.0 * k2 * y[1]];
    for (a, b) in col.iter().zip(expected) {
        assert!((a - b).abs() <= 1e-9 * b.abs(), "{col:?} vs {expected:?}");
    }
    let _ = (Y1, Y3);
}

#[test]
fn time_events_give_the_staircase_and_its_integral() {
    use time_events::{X, Y};
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let mut inst = me_instance("TimeEvents", version, &[]);
        let r = run(&mut inst, &[Y, X], &Settings::rk4(0.01, 2.0));
        let events = r.event_times(EventKind::Time);
        assert_eq!(events.len(), 8, "{events:?}");
        for (k, t) in events.iter().enumerate() {
            assert_eq!(*t, 0.25 * (k + 1) as f64, "time event {k}");
        }
        for (t, yx) in r.times.iter().zip(&r.observed) {
            let (y, x) = reference::time_events(0.25, *t);
            assert_eq!(yx[0], y, "{version:?}: y({t})");
            assert!(
                (yx[1] - x).abs() < 1e-12,
                "{version:?}: x({t}) = {}, exactly {x}",
                yx[1]
            );
        }
    }
}

#[test]
fn step_events_reset_at_completed_steps() {
    use step_events::{RESETS, X};
    for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
        let mut inst = me_instance("StepEvents", version, &[]);
        let r = run(&mut inst, &[X], &Settings::rk4(0.01, 1.0));
        let events = r.event_times(EventKind::Step);
        assert_eq!(events.len(), 3, "{events:?}");
        for (k, t) in events.iter().enumerate() {
            assert!(
                (t - 0.26 * (k + 1) as f64).abs() < 1e-9,
                "step event {k} at {t}"
            );
        }
        for (t, x) in r.times.iter().zip(&r.observed) {
            let (xr, _) = reference::step_events(1.0, 0.255, 0.01, *t);
            assert!(
                (x[0] - xr).abs() < 1e-9,
                "{version:?}: x({t}) = {}, expected {xr}",
                x[0]
            );
        }
        assert_eq!(get_int(&mut inst, RESETS).ok(), Some(3));
        assert!(r.event_times(EventKind::State).is_empty());
    }
}

/// The two halves of a B1 reticulation as one ODE (their connections
/// resolved in every evaluation), RK4 with `h` to `t_end`; `params` by name,
/// set in each half that has them. Observed: (z_c, v_c) of the chassis
/// half, (z_w, v_w) of the wheel half.
fn b1_monolithic(reticulation: char, params: &[(&str, f64)], h: f64, t_end: f64) -> Run {
    let version = FmiVersion::Fmi2;
    let half = |name: &str| {
        let spec = model(name);
        let own: Vec<(Vr, f64)> = params
            .iter()
            .filter_map(|&(p, x)| spec.variable_by_name(p).map(|v| (v.vr, x)))
            .collect();
        me_instance(name, version, &own)
    };
    let (names, connections) = match reticulation {
        'A' => {
            use quarter_car::{chassis as c, wheel_suspension as w};
            (
                [
                    ("QuarterCarChassis", [c::Z_C, c::V_C]),
                    ("QuarterCarWheelSuspension", [w::Z_W, w::V_W]),
                ],
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
            )
        }
        _ => {
            use quarter_car::{chassis_suspension as c, wheel as w};
            (
                [
                    ("QuarterCarChassisSuspension", [c::Z_C, c::V_C]),
                    ("QuarterCarWheel", [w::Z_W, w::V_W]),
                ],
                vec![
                    Connection {
                        from: (1, w::V_W),
                        to: (0, c::V_W),
                        gain: 1.0,
                    },
                    Connection {
                        from: (0, c::F_C),
                        to: (1, w::F),
                        gain: 1.0,
                    },
                ],
            )
        }
    };
    let mut chassis = half(names[0].0);
    let mut wheel = half(names[1].0);
    let mut a = InstanceFmu {
        instance: &mut chassis,
        observed: names[0].1.to_vec(),
    };
    let mut b = InstanceFmu {
        instance: &mut wheel,
        observed: names[1].1.to_vec(),
    };
    let mut system = Coupled::new(vec![&mut a, &mut b], connections);
    simulate(&mut system, 0.0, &Settings::rk4(h, t_end)).unwrap_or_else(|e| panic!("{e}"))
}

/// The largest difference of (z_c, v_c, z_w, v_w) of a run from a
/// reference trajectory sampled at the run's times.
fn b1_error(run: &Run, reference: &dyn Fn(&[f64]) -> reference::Trajectory) -> f64 {
    let tr = reference(&run.times);
    let cols = ["z_c", "v_c", "z_w", "v_w"].map(|c| tr.column(c).unwrap_or_default());
    let mut worst: f64 = 0.0;
    for (i, obs) in run.observed.iter().enumerate() {
        for (k, col) in cols.iter().enumerate() {
            worst = worst.max((obs[k] - col[i]).abs());
        }
    }
    worst
}

#[test]
fn b1_halves_integrated_as_one_ode_are_the_monolithic_reference() {
    let linear = |t: &[f64]| reference::b1_linear(&QuarterCar::LINEAR, t);
    for ret in ['A', 'B'] {
        let r = b1_monolithic(ret, &[], 1e-4, 1.0);
        assert_eq!(r.steps, 10_000);
        let err = b1_error(&r, &linear);
        assert!(err < 1e-9, "reticulation {ret}, linear: max error {err:e}");
    }
    // The nonlinear damper (d_c 900, n_d 1.5): |v|^0.5 is not smooth at
    // v = 0, where RK4 loses its order (with h = 1e-4 the run is 5e-5 off
    // the h = 1e-6 reference, with h = 1e-5 2e-6): against the reference's
    // RK4 with the same steps, the same computation up to rounding.
    let h = 1e-4;
    let nonlinear = |t: &[f64]| reference::b1_nonlinear(&QuarterCar::NONLINEAR, t, h);
    for ret in ['A', 'B'] {
        let r = b1_monolithic(ret, &[("d_c", 900.0), ("n_d", 1.5)], h, 0.5);
        let err = b1_error(&r, &nonlinear);
        assert!(
            err < 1e-10,
            "reticulation {ret}, nonlinear: max error {err:e}"
        );
    }
}

#[test]
fn quarter_car_partial_derivatives_are_the_equations() {
    use quarter_car::wheel_suspension::{DER_V_W, DER_Z_C, F_C, V_C, V_W, Z_C, Z_W};
    let mut inst = me_instance("QuarterCarWheelSuspension", FmiVersion::Fmi3, &[]);
    let mut fmu = InstanceFmu {
        instance: &mut inst,
        observed: vec![],
    };
    use fmu_kit::testing::model_exchange::MeFmu;
    fmu.update_discrete_states()
        .unwrap_or_else(|e| panic!("{e}"));
    fmu.enter_continuous_time_mode()
        .unwrap_or_else(|e| panic!("{e}"));
    fmu.set_continuous_states(&[0.01, 0.02, -0.3])
        .unwrap_or_else(|e| panic!("{e}"));
    fmu.set_reals(&[V_C], &[0.4])
        .unwrap_or_else(|e| panic!("{e}"));
    let unknowns = [F_C, DER_Z_C, DER_V_W];
    let knowns = [V_C, Z_C, Z_W, V_W];
    for (j, &k) in knowns.iter().enumerate() {
        let mut seed = [0.0; 4];
        seed[j] = 1.0;
        let mut col = [0.0; 3];
        inst.directional_derivative(&unknowns, &knowns, &seed, &mut col)
            .unwrap_or_else(|e| panic!("{}", e.message));
        // Central differences of the values the FMU computes.
        let value = |inst: &mut Instance, dx: f64| -> Vec<f64> {
            let mut f = InstanceFmu {
                instance: inst,
                observed: vec![],
            };
            let x0 = f.get_reals(&[k]).unwrap_or_default()[0];
            if k == V_C {
                f.set_reals(&[k], &[x0 + dx]).unwrap_or_default();
            } else {
                let mut x = f.continuous_states().unwrap_or_default();
                let i = [Z_C, Z_W, V_W].iter().position(|&s| s == k).unwrap_or(0);
                x[i] += dx;
                f.set_continuous_states(&x).unwrap_or_default();
            }
            let mut out = f.get_reals(&[F_C]).unwrap_or_default();
            out.extend(f.derivatives().unwrap_or_default());
            // Back.
            if k == V_C {
                f.set_reals(&[k], &[x0]).unwrap_or_default();
            } else {
                let mut x = f.continuous_states().unwrap_or_default();
                let i = [Z_C, Z_W, V_W].iter().position(|&s| s == k).unwrap_or(0);
                x[i] -= dx;
                f.set_continuous_states(&x).unwrap_or_default();
            }
            // (F_c, der(z_c), der(z_w), der(v_w)) -> (F_c, der(z_c), der(v_w)).
            vec![out[0], out[1], out[3]]
        };
        let d = 1e-6;
        let (plus, minus) = (value(&mut inst, d), value(&mut inst, -d));
        for i in 0..3 {
            let fd = (plus[i] - minus[i]) / (2.0 * d);
            assert!(
                (col[i] - fd).abs() <= 1e-5 * fd.abs().max(1.0),
                "d{}/d{}: {} vs {fd}",
                unknowns[i],
                k,
                col[i]
            );
        }
    }
}
