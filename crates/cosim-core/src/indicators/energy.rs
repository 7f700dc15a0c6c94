//! Energy residuals over power bonds (sadjina2016 sec. II-III; docs/algorithms.md).

use serde::Serialize;

use crate::system::System;

/// Energy bookkeeping of one power bond after the last macro step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BondEnergy {
    /// Residual power `dP(t_{i+1})` (eq. 10a; > 0: energy created), W.
    pub residual_power: f64,
    /// Residual energy of the step `dE = dP dt` (eq. 10b), J.
    pub residual_energy: f64,
    /// Sum of residual energies since the start, J.
    pub cumulative_residual_energy: f64,
    /// Power transmitted from port 0 to port 1, `P01(t_{i+1})` (eq. 6), W.
    pub transmitted_power: f64,
    /// Energy transmitted during the step, `E = P01 dt`, J.
    pub transmitted_energy: f64,
    /// Sum of transmitted energies since the start, J.
    pub cumulative_transmitted_energy: f64,
}

/// Residual and transmitted energy of every bond of a system.
#[derive(Debug, Clone, Default)]
pub struct EnergyAccount {
    bonds: Vec<BondEnergy>,
    indicator: f64,
}

impl EnergyAccount {
    /// An account for `sys`'s bonds, all zero.
    pub fn new(sys: &System) -> Self {
        EnergyAccount {
            bonds: vec![BondEnergy::default(); sys.bonds().len()],
            indicator: 0.0,
        }
    }

    /// Per-bond figures, in the order of `System::bonds`.
    pub fn bonds(&self) -> &[BondEnergy] {
        &self.bonds
    }

    /// The ECCO indicator (eq. 14) of the last step.
    pub fn indicator(&self) -> f64 {
        self.indicator
    }

    /// Forgets the cumulative sums (start of a run).
    pub fn reset(&mut self) {
        self.bonds
            .iter_mut()
            .for_each(|b| *b = BondEnergy::default());
        self.indicator = 0.0;
    }

    /// Evaluates the step that just ended, of size `dt`, from the inputs as
    /// the subsystems held them (`u_end`) and their published outputs, and
    /// accumulates. Returns the ECCO indicator (eq. 14); 0 without bonds.
    pub fn update(&mut self, sys: &System, dt: f64) -> f64 {
        if self.bonds.is_empty() {
            // Nothing to account for (the common case of a run without
            // bonds: no work per step).
            self.indicator = 0.0;
            return 0.0;
        }
        let (residuals, indicator) = evaluate(sys, dt);
        for (acc, r) in self.bonds.iter_mut().zip(residuals) {
            acc.residual_power = r.residual_power;
            acc.residual_energy = r.residual_energy;
            acc.transmitted_power = r.transmitted_power;
            acc.transmitted_energy = r.transmitted_energy;
            acc.cumulative_residual_energy += r.residual_energy;
            acc.cumulative_transmitted_energy += r.transmitted_energy;
        }
        self.indicator = indicator;
        indicator
    }
}

/// The energy level `E` that sets the scale of a bond's residual energy in
/// the ECCO indicator `dE_k / (r_k (E0_k + E))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnergyReference {
    /// The energy the bond transmitted during the step, `|P01| dt`
    /// (sadjina2016 eq. 14): each bond is judged against its own flow.
    #[default]
    Transmitted,
    /// The largest residual energy of the step over all bonds, shared by
    /// every bond: libcosim's ECCO algorithm (`energy_level` in
    /// `ecco_algorithm::adjust_step_size`), where `abs_tolerance = r E0`
    /// and `rel_tolerance = r`.
    LargestResidual,
}

/// Residual/transmitted power and energy of each bond for the step of size
/// `dt` that just ended (not accumulated), and the indicator of eq. 14:
/// `sqrt(1/N sum_k (dE_k / (r_k (E0_k + E_k)))^2)` with the energy level
/// `E_k` of the system's [`EnergyReference`].
pub fn evaluate(sys: &System, dt: f64) -> (impl Iterator<Item = BondEnergy> + '_, f64) {
    let bufs = sys.buffers();
    let step = move |bond: &crate::system::PowerBond| {
        let [p0, p1] = bond.ports;
        let u0 = bufs[p0.subsystem].u_end[p0.input];
        let y0 = bufs[p0.subsystem].y[p0.output];
        let u1 = bufs[p1.subsystem].u_end[p1.input];
        let y1 = bufs[p1.subsystem].y[p1.output];
        let dp = u0 * y0 + bond.orientation * u1 * y1;
        let p = bond.sigma * y0 * y1;
        BondEnergy {
            residual_power: dp,
            residual_energy: dp * dt,
            transmitted_power: p,
            transmitted_energy: p * dt,
            ..BondEnergy::default()
        }
    };
    let n = sys.bonds().len();
    let largest_residual = match sys.energy_reference() {
        EnergyReference::Transmitted => 0.0,
        EnergyReference::LargestResidual => sys
            .bonds()
            .iter()
            .map(|b| step(b).residual_energy.abs())
            .fold(0.0, f64::max),
    };
    let mut sum = 0.0;
    for bond in sys.bonds() {
        let e = step(bond);
        let scale = match sys.energy_reference() {
            EnergyReference::Transmitted => {
                bond.tolerance * (bond.energy_scale + e.transmitted_energy.abs())
            }
            // libcosim's `abs_tolerance + rel_tolerance * energy_level`,
            // operation by operation (abs_tolerance = r E0).
            EnergyReference::LargestResidual => {
                bond.tolerance * bond.energy_scale + bond.tolerance * largest_residual
            }
        };
        let q = e.residual_energy / scale;
        sum += q * q;
    }
    let indicator = if n == 0 { 0.0 } else { (sum / n as f64).sqrt() };
    (sys.bonds().iter().map(step), indicator)
}

/// The ECCO indicator of eq. 14 as an [`ErrorIndicator`](super::ErrorIndicator):
/// of order `m + 2` in the step for extrapolation order `m`.
#[derive(Debug, Clone)]
pub struct EnergyIndicator {
    extrapolation_order: u32,
}

impl EnergyIndicator {
    /// The indicator for input extrapolation order `m`.
    pub fn new(extrapolation_order: u32) -> Self {
        EnergyIndicator {
            extrapolation_order,
        }
    }
}

impl super::ErrorIndicator for EnergyIndicator {
    fn name(&self) -> &'static str {
        "energy"
    }

    fn order(&self, _sys: &System) -> u32 {
        self.extrapolation_order + 2
    }

    fn start(&mut self, _sys: &System) {}

    fn evaluate(&mut self, sys: &System, _t: f64, dt: f64) -> f64 {
        evaluate(sys, dt).1
    }

    fn clone_box(&self) -> Box<dyn super::ErrorIndicator> {
        Box::new(self.clone())
    }
}
