//! Inputs as polynomials in time.
//!
//! Each input is held as its value and its time derivatives of orders 1..=3
//! at the expansion point `t0` (the FMU's current communication point):
//!
//! u(t) = sum_{k=0..3} u^(k)(t0) (t - t0)^k / k!
//!
//! # The rule for input derivatives (FMI 2.0)
//!
//! FMI 2.0 (section 4.2.1, `fmi2SetRealInputDerivatives`) sets "the n-th
//! time derivative of real input variables" "with respect to the beginning
//! of a communication time step", with the same restrictions as
//! `fmi2SetReal`; an FMU declaring `canInterpolateInputs="true"` uses the
//! resulting polynomial inside the step. The standard leaves open what
//! happens to derivatives when only the value is set again. This kit uses:
//!
//! 1. `fmi2SetReal` on an input sets its value and resets its derivatives of
//!    orders 1..3 to 0 (a value set on its own means zero-order hold);
//!    derivatives set by `fmi2SetRealInputDerivatives` *after* it apply.
//!    Derivatives set *before* the value at the same communication point are
//!    therefore discarded (a `logDebug` line says so).
//! 2. `fmi2DoStep(t, h)` integrates along the polynomial over `[t, t + h]`.
//! 3. After the step the polynomial carries on: the input's value and
//!    derivatives are re-expanded at `t + h` (so `fmi2GetReal` on the input
//!    returns u(t + h), and output derivatives at `t + h` see it) until the
//!    importer sets the value again (rule 1).
//! 4. Orders above 3 are refused with `fmi2Error`.
//!
//! With only values set (any FMI 3 build, or an FMI 2 importer that never
//! calls `fmi2SetRealInputDerivatives`), this is plain zero-order hold.

use crate::model::Vr;

/// Highest input derivative order the kit accepts.
pub const MAX_INPUT_ORDER: usize = 3;

/// The inputs of one instance: value and derivatives at `t0`, by value reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    t0: f64,
    /// `d[vr] = [u, u', u'', u''']` at `t0` (all zero for non-inputs).
    d: Vec<[f64; MAX_INPUT_ORDER + 1]>,
}

const FACT: [f64; 8] = [1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0, 5040.0];

impl Inputs {
    /// Inputs for `n` value references, all zero, expanded at `t0`.
    pub fn new(n: usize, t0: f64) -> Self {
        Inputs {
            t0,
            d: vec![[0.0; MAX_INPUT_ORDER + 1]; n],
        }
    }

    /// The expansion point.
    pub fn t0(&self) -> f64 {
        self.t0
    }

    /// The value at the expansion point.
    pub fn value(&self, vr: Vr) -> f64 {
        self.coeffs(vr)[0]
    }

    /// `[u, u', u'', u''']` at the expansion point.
    pub fn coeffs(&self, vr: Vr) -> [f64; MAX_INPUT_ORDER + 1] {
        self.d
            .get(vr as usize)
            .copied()
            .unwrap_or([f64::NAN; MAX_INPUT_ORDER + 1])
    }

    /// u(t).
    pub fn at(&self, vr: Vr, t: f64) -> f64 {
        self.derivative(vr, 0, t)
    }

    /// The `order`-th derivative of u at t (0 above order 3).
    pub fn derivative(&self, vr: Vr, order: usize, t: f64) -> f64 {
        let c = self.coeffs(vr);
        let tau = t - self.t0;
        let mut acc = 0.0;
        // Horner on the shifted polynomial: sum_{j>=order} c_j tau^(j-order)/(j-order)!
        for j in (order..=MAX_INPUT_ORDER).rev() {
            acc = acc * tau / ((j - order + 1) as f64) + c[j];
        }
        if order > MAX_INPUT_ORDER { 0.0 } else { acc }
    }

    /// The exact integral of u from `t0` to `t`.
    pub fn integral(&self, vr: Vr, t: f64) -> f64 {
        let c = self.coeffs(vr);
        let tau = t - self.t0;
        (0..=MAX_INPUT_ORDER)
            .map(|k| c[k] * tau.powi(k as i32 + 1) / FACT[k + 1])
            .sum()
    }

    /// The exact double integral of u from `t0` to `t`:
    /// int_{t0}^{t} int_{t0}^{s} u(r) dr ds.
    pub fn integral2(&self, vr: Vr, t: f64) -> f64 {
        let c = self.coeffs(vr);
        let tau = t - self.t0;
        (0..=MAX_INPUT_ORDER)
            .map(|k| c[k] * tau.powi(k as i32 + 2) / FACT[k + 2])
            .sum()
    }

    /// Sets the value and resets the derivatives (rule 1).
    pub(crate) fn set_value(&mut self, vr: Vr, x: f64) -> bool {
        match self.d.get_mut(vr as usize) {
            Some(c) => {
                let had = c[1..].iter().any(|&d| d != 0.0);
                *c = [x, 0.0, 0.0, 0.0];
                had
            }
            None => false,
        }
    }

    /// Sets one derivative (1..=3).
    pub(crate) fn set_derivative(&mut self, vr: Vr, order: usize, x: f64) {
        if let Some(c) = self.d.get_mut(vr as usize)
            && (1..=MAX_INPUT_ORDER).contains(&order)
        {
            c[order] = x;
        }
    }

    /// Re-expands every polynomial at `t` (rule 3). Returns the new values.
    pub(crate) fn shift_to(&mut self, t: f64) {
        let tau = t - self.t0;
        if tau != 0.0 {
            for c in &mut self.d {
                if c[1..].iter().any(|&d| d != 0.0) {
                    let old = *c;
                    for (k, slot) in c.iter_mut().enumerate() {
                        let mut acc = 0.0;
                        for j in (k..=MAX_INPUT_ORDER).rev() {
                            acc = acc * tau / ((j - k + 1) as f64) + old[j];
                        }
                        *slot = acc;
                    }
                }
            }
        }
        self.t0 = t;
    }

    /// Moves the expansion point without changing the coefficients (used
    /// when the importer's communication point is adopted).
    pub(crate) fn set_t0(&mut self, t: f64) {
        self.t0 = t;
    }

    pub(crate) fn raw(&self) -> &[[f64; MAX_INPUT_ORDER + 1]] {
        &self.d
    }

    pub(crate) fn from_raw(t0: f64, d: Vec<[f64; MAX_INPUT_ORDER + 1]>) -> Self {
        Inputs { t0, d }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poly() -> Inputs {
        let mut u = Inputs::new(2, 1.0);
        u.set_value(1, 2.0);
        u.set_derivative(1, 1, 3.0);
        u.set_derivative(1, 2, -4.0);
        u.set_derivative(1, 3, 6.0);
        u
    }

    fn exact(tau: f64) -> f64 {
        2.0 + 3.0 * tau - 2.0 * tau * tau + tau * tau * tau
    }

    #[test]
    fn evaluates_and_integrates_exactly() {
        let u = poly();
        for tau in [0.0, 0.1, 0.5, 2.0] {
            let t = 1.0 + tau;
            assert!((u.at(1, t) - exact(tau)).abs() < 1e-12);
            let int = 2.0 * tau + 1.5 * tau.powi(2) - 2.0 / 3.0 * tau.powi(3) + tau.powi(4) / 4.0;
            assert!((u.integral(1, t) - int).abs() < 1e-12);
            let int2 = tau.powi(2) + 0.5 * tau.powi(3) - tau.powi(4) / 6.0 + tau.powi(5) / 20.0;
            assert!((u.integral2(1, t) - int2).abs() < 1e-12);
            let d1 = 3.0 - 4.0 * tau + 3.0 * tau * tau;
            assert!((u.derivative(1, 1, t) - d1).abs() < 1e-12);
            assert!((u.derivative(1, 3, t) - 6.0).abs() < 1e-12);
        }
    }

    #[test]
    fn shift_keeps_the_polynomial() {
        let mut u = poly();
        u.shift_to(1.5);
        for tau in [0.0, 0.3, 1.0] {
            assert!((u.at(1, 1.5 + tau) - exact(0.5 + tau)).abs() < 1e-12);
        }
    }

    #[test]
    fn setting_a_value_resets_derivatives() {
        let mut u = poly();
        assert!(u.set_value(1, 5.0));
        assert_eq!(u.coeffs(1), [5.0, 0.0, 0.0, 0.0]);
        assert_eq!(u.at(1, 3.0), 5.0);
    }
}
