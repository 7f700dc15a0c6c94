//! NEPCE local input error (kyllingstad sec. 2.3.1; docs/algorithms.md).
//!
//! For each physically coupled input, the difference between the value it
//! should have had at `t_{i+1}` (the newly coupled value) and the value the
//! subsystem assumed there (the held value for ZOH, the extrapolation
//! polynomial otherwise), normalised per input and aggregated.
//!
//! With direct feed-through the estimate is biased (correcting it needs the
//! interface Jacobian); the indicator then says so once.

use super::{Aggregator, ErrorIndicator, Tolerances, physical_ports};
use crate::system::System;

/// The NEPCE indicator.
#[derive(Debug, Clone)]
pub struct Nepce {
    extrapolation_order: u32,
    tolerances: Tolerances,
    inputs: Vec<(usize, usize)>,
}

impl Nepce {
    /// The indicator for input extrapolation order `m`.
    pub fn new(extrapolation_order: u32, tolerances: Tolerances) -> Self {
        Nepce {
            extrapolation_order,
            tolerances,
            inputs: Vec::new(),
        }
    }
}

impl ErrorIndicator for Nepce {
    fn name(&self) -> &'static str {
        "nepce"
    }

    fn order(&self, _sys: &System) -> u32 {
        self.extrapolation_order + 1
    }

    fn start(&mut self, sys: &System) {
        let (outputs, inputs) = physical_ports(sys);
        self.inputs = inputs;
        let feedthrough: Vec<String> = outputs
            .iter()
            .filter(|&&(s, k)| {
                sys.subsystems()[s]
                    .info()
                    .feedthrough
                    .get(k)
                    .is_some_and(|d| !d.is_empty())
            })
            .map(|&(s, k)| {
                let info = sys.subsystems()[s].info();
                format!("{}.{}", info.name, info.observed[k].name)
            })
            .collect();
        if !feedthrough.is_empty() {
            tracing::warn!(
                "NEPCE: direct feed-through in coupled outputs ({}): the local input error estimate is biased (a correction would need the interface Jacobian)",
                feedthrough.join(", ")
            );
        }
    }

    fn evaluate(&mut self, sys: &System, _t: f64, _dt: f64) -> f64 {
        let bufs = sys.buffers();
        let mut agg = Aggregator::new(self.tolerances.aggregate);
        for &(s, i) in &self.inputs {
            let coupled = bufs[s].u[i];
            let assumed = bufs[s].u_end[i];
            agg.add(self.tolerances.normalise(coupled - assumed, coupled));
        }
        agg.value()
    }

    fn clone_box(&self) -> Box<dyn super::ErrorIndicator> {
        Box::new(self.clone())
    }
}
