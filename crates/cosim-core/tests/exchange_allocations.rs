//! The exchange allocates nothing, with function blocks too: every
//! allocation on this thread is counted while a system with a chain of
//! functions exchanges (all inputs, one subsystem's for Gauss-Seidel,
//! derivatives) and while a fixed-step master advances it.
#![allow(clippy::unwrap_used)]

#[macro_use]
mod support;

use cosim_core::master::{FixedStep, Master, Scheme};
use cosim_core::subsystem::{Port, Subsystem, SubsystemInfo};
use cosim_core::system::NonFinitePolicy;
use cosim_core::{FunctionLink, FunctionSpec, LinkEnd, NumericType, System, SystemSpec};
use cosim_fmi::StepOutcome;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// Allocations (and reallocations) made while `f` runs, in any thread: so
/// this file runs without the test harness (whose own threads allocate at
/// times of their choosing, which once counted 4 here), and the systems
/// step inline.
fn allocations(f: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    f();
    let stats = region.change();
    stats.allocations + stats.reallocations
}

/// `y[k] = (k + 1) (t + h) + sum of the inputs` after a step.
struct Toy {
    info: SubsystemInfo,
    u: Vec<f64>,
    y: Vec<f64>,
}

fn port(name: String) -> Port {
    Port {
        name,
        unit: None,
        discrete: false,
    }
}

fn toy(name: &str, n_in: usize, n_out: usize) -> Box<dyn Subsystem> {
    Box::new(Toy {
        info: SubsystemInfo {
            name: name.into(),
            inputs: (0..n_in).map(|i| port(format!("u{i}"))).collect(),
            observed: (0..n_out).map(|k| port(format!("y{k}"))).collect(),
            n_outputs: n_out,
            feedthrough: vec![Vec::new(); n_out],
            can_interpolate_inputs: true,
            max_output_derivative_order: 1,
            can_get_set_state: false,
            can_serialize_state: false,
            can_handle_variable_step: true,
            provides_directional_derivatives: false,
            has_state: false,
            origin: "test".into(),
        },
        u: vec![0.0; n_in],
        y: vec![0.0; n_out],
    })
}

impl Subsystem for Toy {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }
    no_op_subsystem_methods!();
    fn enter_initialization(&mut self, _t0: f64, _t_stop: Option<f64>) -> cosim_core::Result<()> {
        Ok(())
    }
    fn set_inputs(&mut self, values: &[f64]) -> cosim_core::Result<()> {
        self.u.copy_from_slice(values);
        Ok(())
    }
    fn do_step(&mut self, t: f64, h: f64) -> cosim_core::Result<StepOutcome> {
        let sum: f64 = self.u.iter().sum();
        for (k, y) in self.y.iter_mut().enumerate() {
            *y = (k as f64 + 1.0) * (t + h) + 1e-3 * sum;
        }
        Ok(StepOutcome::Completed)
    }
    fn get_observed(&mut self, values: &mut [f64]) -> cosim_core::Result<()> {
        values.copy_from_slice(&self.y);
        Ok(())
    }
    fn get_output_derivatives(
        &mut self,
        _order: u32,
        values: &mut [f64],
    ) -> cosim_core::Result<()> {
        values.iter_mut().for_each(|v| *v = 1.0);
        Ok(())
    }
}

/// a (3 outputs) and b (3 outputs) -> vector-sum v -> sum s (with a.y0)
/// -> c.u0; v.out -> c.u1..u3; c.y0 -> a.u0 directly.
fn system() -> System {
    let mut sys = System::new(SystemSpec {
        subsystems: vec![toy("a", 1, 3), toy("b", 0, 3), toy("c", 4, 1)],
        step_multiple: vec![1, 1, 1],
        connections: vec![cosim_core::Connection {
            from_subsystem: 2,
            from_slot: 0,
            to_subsystem: 0,
            to_slot: 0,
            gain: 0.5,
            offset: 0.0,
            signal: false,
        }],
        bonds: Vec::new(),
        nonfinite: NonFinitePolicy::Error,
        threads: 1,
    })
    .unwrap();
    let v = FunctionSpec::vector_sum("v", 2, 3, NumericType::Real);
    let s = FunctionSpec::sum("s", 2);
    let link = |from, to| FunctionLink {
        from,
        to,
        gain: 2.0,
        offset: 1.0,
        signal: false,
    };
    let slot = |subsystem, slot| LinkEnd::Slot { subsystem, slot };
    let port = |function, port| LinkEnd::Port { function, port };
    let mut links = Vec::new();
    for j in 0..3 {
        links.push(link(slot(0, j), port(0, v.input_port(0, j))));
        links.push(link(slot(1, j), port(0, v.input_port(1, j))));
        links.push(link(port(0, v.output_port(j)), slot(2, j + 1)));
    }
    links.push(link(port(0, v.output_port(0)), port(1, 0)));
    links.push(link(slot(0, 0), port(1, 1)));
    links.push(link(port(1, 2), slot(2, 0)));
    sys.add_functions(vec![v, s], links).unwrap();
    sys.initialize(0.0, Some(10.0)).unwrap();
    sys
}

fn main() {
    exchanging_and_stepping_through_functions_allocates_nothing();
    println!("exchanging and stepping through functions allocates nothing: ok");
}

fn exchanging_and_stepping_through_functions_allocates_nothing() {
    let mut sys = system();
    let n = allocations(|| {
        for _ in 0..100 {
            sys.exchange_all();
            sys.exchange_into(2);
            sys.exchange_derivatives_all();
        }
    });
    assert_eq!(n, 0, "allocations in the exchange");
    assert!(sys.buffers()[2].u.iter().all(|u| *u != 0.0));
    for scheme in [Scheme::Jacobi, Scheme::GaussSeidel(vec![0, 1, 2])] {
        for order in [0, 2] {
            let mut sys = system();
            let mut master = FixedStep::new(0.01, scheme.clone(), order);
            master.start(&mut sys).unwrap();
            // The first steps fill the input histories.
            for _ in 0..5 {
                master.advance(&mut sys, 10.0).unwrap();
            }
            let n = allocations(|| {
                for _ in 0..100 {
                    master.advance(&mut sys, 10.0).unwrap();
                }
            });
            assert_eq!(n, 0, "{scheme:?}, extrapolation {order}");
        }
    }
}
