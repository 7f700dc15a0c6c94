//! Error indicators computed from coupling data after each macro step
//! (ALGORITHMS.md sec. 3-4).
//!
//! [`energy`] accounts residual and transmitted energy over power bonds
//! (ECCO); it runs alongside every master so a fixed-step run can be judged
//! too.

pub mod energy;

pub use energy::{BondEnergy, EnergyAccount};
