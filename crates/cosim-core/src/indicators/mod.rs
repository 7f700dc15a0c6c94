//! Error indicators computed from coupling data after each macro step
//! (docs/algorithms.md). None needs rollback or FMU internals.
//!
//! - [`energy`]: ECCO residual energies over power bonds (eq. 14), and the
//!   [`EnergyAccount`] that accumulates them for the energy log;
//! - [`predictor_corrector`]: explicit predictor/corrector on the coupled
//!   outputs (Busch; sadjina2016 eqs. 16-17), in the paper's form or
//!   normalised per variable;
//! - [`nepce`]: local input error (kyllingstad sec. 2.3.1).
//!
//! Every indicator implements [`ErrorIndicator`], so any of them can drive
//! the adaptive master or be computed alongside any master for diagnosis.

pub mod energy;
pub mod nepce;
pub mod predictor_corrector;

pub use energy::{BondEnergy, EnergyAccount, EnergyIndicator};
pub use nepce::Nepce;
pub use predictor_corrector::{PredictorCorrector, PredictorForm};

use serde::Serialize;

use crate::system::System;

/// An error indicator evaluated after each accepted macro step.
pub trait ErrorIndicator: Send {
    /// Name for logs and headers.
    fn name(&self) -> &'static str;

    /// The indicator's order `p` in the step size on `sys` (the PI
    /// controller's gains are `0.3/p`, `0.4/p`): the predictor/corrector's
    /// depends on whether the coupled outputs have direct feed-through.
    fn order(&self, sys: &System) -> u32;

    /// Called once after initialization, with the values at the start time.
    fn start(&mut self, sys: &System);

    /// Reads from the subsystems what [`ErrorIndicator::evaluate`] needs
    /// beyond the published values, after the step and the exchange at its
    /// end (the predictor/corrector's feed-through correction asks the FMUs
    /// for directional derivatives). Most indicators need nothing.
    fn sample(&mut self, _sys: &mut System) -> crate::error::Result<()> {
        Ok(())
    }

    /// Evaluates the step `[t, t + dt]` that has just been taken: outputs at
    /// `t + dt` published, inputs exchanged at `t + dt`, `Buffers::u_end`
    /// holding the inputs as the subsystems saw them at `t + dt`. Updates any
    /// history the indicator keeps. Returns a value where 1 means "at the
    /// tolerance".
    fn evaluate(&mut self, sys: &System, t: f64, dt: f64) -> f64;

    /// A copy with the indicator's history.
    fn clone_box(&self) -> Box<dyn ErrorIndicator>;
}

/// How normalised errors of several quantities are combined
/// (kyllingstad sec. 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum Aggregate {
    /// Root mean square (default).
    #[default]
    Rms,
    /// Mean absolute value.
    Mean,
    /// Largest absolute value.
    Max,
}

/// Accumulates normalised errors without allocating.
#[derive(Debug, Clone, Copy)]
pub struct Aggregator {
    kind: Aggregate,
    n: usize,
    acc: f64,
}

impl Aggregator {
    /// An empty aggregation.
    pub fn new(kind: Aggregate) -> Self {
        Aggregator {
            kind,
            n: 0,
            acc: 0.0,
        }
    }

    /// Adds one normalised error.
    pub fn add(&mut self, e: f64) {
        self.n += 1;
        let a = e.abs();
        match self.kind {
            Aggregate::Rms => self.acc += a * a,
            Aggregate::Mean => self.acc += a,
            Aggregate::Max => self.acc = self.acc.max(a),
        }
        if a.is_nan() {
            self.acc = f64::NAN;
        }
    }

    /// The aggregate (0 when nothing was added).
    pub fn value(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        match self.kind {
            Aggregate::Rms => (self.acc / self.n as f64).sqrt(),
            Aggregate::Mean => self.acc / self.n as f64,
            Aggregate::Max => self.acc,
        }
    }
}

/// Absolute and relative tolerances of the per-quantity normalisation
/// `e / (atol + rtol |q|)` (kyllingstad eq. 10).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerances {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// How normalised errors are combined.
    pub aggregate: Aggregate,
}

impl Tolerances {
    /// `e / (atol + rtol |q|)`.
    pub fn normalise(&self, e: f64, q: f64) -> f64 {
        e / (self.atol + self.rtol * q.abs())
    }
}

/// A (subsystem, slot) pair.
pub(crate) type Slot = (usize, usize);

/// Which (subsystem, slot) pairs carry physical couplings: the outputs that
/// feed at least one non-signal connection of float values (directly or
/// through functions), and the inputs fed by one. Discrete values
/// (integers, Booleans) jump by design: an error estimate over them would
/// only measure the jumps.
pub(crate) fn physical_ports(sys: &System) -> (Vec<Slot>, Vec<Slot>) {
    let mut outputs = Vec::new();
    let mut inputs = Vec::new();
    for c in sys.couplings() {
        let discrete = sys.subsystems()[c.to_subsystem].info().inputs[c.to_slot].discrete;
        if c.signal || discrete {
            continue;
        }
        let o = (c.from_subsystem, c.from_slot);
        if !outputs.contains(&o) {
            outputs.push(o);
        }
        inputs.push((c.to_subsystem, c.to_slot));
    }
    outputs.sort_unstable();
    inputs.sort_unstable();
    // An input fed through a function by several outputs is listed once.
    inputs.dedup();
    (outputs, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates() {
        for (kind, expected) in [
            (Aggregate::Rms, (12.5f64).sqrt()),
            (Aggregate::Mean, 3.5),
            (Aggregate::Max, 4.0),
        ] {
            let mut a = Aggregator::new(kind);
            a.add(3.0);
            a.add(-4.0);
            assert!((a.value() - expected).abs() < 1e-15, "{kind:?}");
        }
        assert_eq!(Aggregator::new(Aggregate::Rms).value(), 0.0);
    }
}
