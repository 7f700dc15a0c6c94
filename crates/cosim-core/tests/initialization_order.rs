//! The initial values settled in the order of their dependencies give the
//! same bits as the sweeps they replace, with a number of calls
//! proportional to the system's size: chains of feed-through subsystems
//! (in declaration order and reversed, where the sweeps need one pass per
//! link), a chain with a loop closed through a state (no algebraic loop),
//! and an algebraic loop (the sweeps take over).
#![allow(clippy::unwrap_used)]

#[macro_use]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cosim_core::subsystem::{Port, Subsystem, SubsystemInfo};
use cosim_core::system::{Connection, NonFinitePolicy};
use cosim_core::{System, SystemSpec};
use cosim_fmi::StepOutcome;

/// `y = a u + b` read at any time (a feed-through output), or `y = b`
/// (no feed-through: a state's output); counts its reads.
struct Affine {
    info: SubsystemInfo,
    a: f64,
    b: f64,
    u: f64,
    reads: Arc<AtomicUsize>,
}

fn port(name: &str) -> Port {
    Port {
        name: name.into(),
        unit: None,
        discrete: false,
    }
}

fn affine(k: usize, feedthrough: bool, reads: &Arc<AtomicUsize>) -> Box<dyn Subsystem> {
    Box::new(Affine {
        info: SubsystemInfo {
            name: format!("s{k}"),
            inputs: vec![port("u")],
            observed: vec![port("y")],
            n_outputs: 1,
            feedthrough: vec![if feedthrough { vec![0] } else { Vec::new() }],
            can_interpolate_inputs: false,
            max_output_derivative_order: 0,
            can_get_set_state: false,
            can_serialize_state: false,
            can_handle_variable_step: true,
            provides_directional_derivatives: false,
            has_state: !feedthrough,
            origin: "test".into(),
        },
        // Values whose sums and products round: bit equality means the
        // same operations in the same order.
        a: if feedthrough {
            0.7 + 0.013 * k as f64
        } else {
            0.0
        },
        b: 0.1 * (k as f64 + 1.0) / 3.0,
        u: 0.25,
        reads: Arc::clone(reads),
    })
}

impl Subsystem for Affine {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }
    no_op_subsystem_methods!();
    fn enter_initialization(&mut self, _t0: f64, _t_stop: Option<f64>) -> cosim_core::Result<()> {
        Ok(())
    }
    fn set_inputs(&mut self, values: &[f64]) -> cosim_core::Result<()> {
        self.u = values[0];
        Ok(())
    }
    fn do_step(&mut self, _t: f64, _h: f64) -> cosim_core::Result<StepOutcome> {
        Ok(StepOutcome::Completed)
    }
    fn get_observed(&mut self, values: &mut [f64]) -> cosim_core::Result<()> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        values[0] = self.a * self.u + self.b;
        Ok(())
    }
    fn get_output_derivatives(
        &mut self,
        _order: u32,
        _values: &mut [f64],
    ) -> cosim_core::Result<()> {
        Ok(())
    }
}

/// A system of `n` affine subsystems (`feedthrough(k)`), `links` as
/// (from, to) with gain 1.5 and offset 0.125; the reads counted.
fn system(
    n: usize,
    feedthrough: impl Fn(usize) -> bool,
    links: &[(usize, usize)],
) -> (System, Arc<AtomicUsize>) {
    let reads = Arc::new(AtomicUsize::new(0));
    let subsystems = (0..n).map(|k| affine(k, feedthrough(k), &reads)).collect();
    let connections = links
        .iter()
        .map(|&(from, to)| Connection {
            from_subsystem: from,
            from_slot: 0,
            to_subsystem: to,
            to_slot: 0,
            gain: 1.5,
            offset: 0.125,
            signal: false,
        })
        .collect();
    let system = System::new(SystemSpec {
        step_multiple: vec![1; n],
        subsystems,
        connections,
        bonds: Vec::new(),
        nonfinite: NonFinitePolicy::Error,
        threads: 1,
    })
    .unwrap();
    (system, reads)
}

/// Every coupled value, as bits.
fn values(system: &System) -> Vec<u64> {
    system
        .buffers()
        .iter()
        .flat_map(|b| b.u.iter().chain(&b.y))
        .map(|x| x.to_bits())
        .collect()
}

/// Settles `links` both ways: the same values; the reads of each.
fn both_ways(
    n: usize,
    feedthrough: impl Fn(usize) -> bool + Copy,
    links: &[(usize, usize)],
) -> (usize, usize) {
    let (mut ordered, ordered_reads) = system(n, feedthrough, links);
    let (mut swept, swept_reads) = system(n, feedthrough, links);
    ordered.enter_initialization(0.0, None).unwrap();
    swept.enter_initialization(0.0, None).unwrap();
    ordered.settle_initialization().unwrap();
    swept.settle_initialization_by_sweeps().unwrap();
    assert_eq!(values(&ordered), values(&swept));
    (
        ordered_reads.load(Ordering::Relaxed),
        swept_reads.load(Ordering::Relaxed),
    )
}

#[test]
fn a_chain_settles_in_one_ordered_pass_with_the_values_of_the_sweeps() {
    let n = 60;
    let forward: Vec<(usize, usize)> = (1..n).map(|k| (k - 1, k)).collect();
    let backward: Vec<(usize, usize)> = (1..n).map(|k| (k, k - 1)).collect();
    for links in [&forward, &backward] {
        let (ordered, swept) = both_ways(n, |_| true, links);
        // Two reads each (the first sweep, the ordered pass).
        assert_eq!(ordered, 2 * n);
        assert!(swept > n * n / 4, "{swept} reads by sweeps");
    }
}

#[test]
fn a_loop_through_a_state_settles_in_one_pass_and_an_algebraic_loop_by_sweeps() {
    let n = 40;
    let mut ring: Vec<(usize, usize)> = (1..n).map(|k| (k - 1, k)).collect();
    ring.push((n - 1, 0));
    // Subsystem 0 has no feed-through: the loop is not algebraic.
    let (ordered, _) = both_ways(n, |k| k != 0, &ring);
    assert_eq!(ordered, 2 * n);
    // Every subsystem feeds through: an algebraic loop, left to the
    // sweeps (which stop after one per subsystem), the same values.
    let (ordered, swept) = both_ways(n, |_| true, &ring);
    assert_eq!(ordered, swept);
}
