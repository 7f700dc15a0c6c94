//! The continuous inputs of a Model Exchange instance over one macro step:
//! the polynomial the master gives (value and derivatives at the step's
//! start), evaluated at each time the integrator asks for derivatives, so
//! the model sees the inputs a co-simulation FMU would (FMI 2 input
//! derivatives, FMI 3 intermediate update).

/// Highest input derivative order kept (the masters extrapolate with
/// polynomials of order 3 at most).
pub(crate) const MAX_ORDER: usize = 3;

/// One continuous Real input.
#[derive(Debug, Clone, Copy)]
struct Polynomial {
    /// Value at `origin`.
    value: f64,
    /// Derivatives 1..=MAX_ORDER at `origin`.
    derivatives: [f64; MAX_ORDER],
}

/// The continuous inputs of one instance, by value reference.
#[derive(Debug, Clone)]
pub(crate) struct InputPolynomials {
    /// Value references of the continuous Real inputs, sorted.
    vrs: Vec<u32>,
    polys: Vec<Polynomial>,
    /// Time at which the values were set (the step's start).
    origin: f64,
    /// Inputs with a non-zero derivative: set at every evaluation.
    varying: Vec<usize>,
    /// Scratch: the varying inputs' value references and values.
    set_vrs: Vec<u32>,
    set_values: Vec<f64>,
}

impl InputPolynomials {
    /// `vrs`: the continuous Real inputs of the model (any order).
    pub(crate) fn new(mut vrs: Vec<u32>) -> Self {
        vrs.sort_unstable();
        vrs.dedup();
        let n = vrs.len();
        InputPolynomials {
            polys: vec![
                Polynomial {
                    value: 0.0,
                    derivatives: [0.0; MAX_ORDER],
                };
                n
            ],
            vrs,
            origin: 0.0,
            varying: Vec::with_capacity(n),
            set_vrs: Vec::with_capacity(n),
            set_values: Vec::with_capacity(n),
        }
    }

    fn index(&self, vr: u32) -> Option<usize> {
        self.vrs.binary_search(&vr).ok()
    }

    /// Values set at time `t` (a communication point): each input's
    /// polynomial restarts there, constant until derivatives are given.
    pub(crate) fn set_values(&mut self, t: f64, vrs: &[u32], values: &[f64]) {
        if t != self.origin {
            // A new point: the old slopes no longer apply to any input.
            self.origin = t;
            for p in &mut self.polys {
                p.derivatives = [0.0; MAX_ORDER];
            }
            self.varying.clear();
        }
        for (&vr, &x) in vrs.iter().zip(values) {
            if let Some(i) = self.index(vr) {
                self.polys[i].value = x;
                self.polys[i].derivatives = [0.0; MAX_ORDER];
            }
        }
        self.refresh_varying();
    }

    /// The `order`-th derivative (1..) of inputs `vrs` at the current
    /// origin. Orders above [`MAX_ORDER`] are ignored (their terms are
    /// below any tolerance over a macro step).
    pub(crate) fn set_derivatives(&mut self, vrs: &[u32], order: i32, values: &[f64]) {
        let Some(k) = usize::try_from(order)
            .ok()
            .filter(|&k| (1..=MAX_ORDER).contains(&k))
        else {
            return;
        };
        for (&vr, &d) in vrs.iter().zip(values) {
            if let Some(i) = self.index(vr) {
                self.polys[i].derivatives[k - 1] = d;
            }
        }
        self.refresh_varying();
    }

    fn refresh_varying(&mut self) {
        self.varying.clear();
        for (i, p) in self.polys.iter().enumerate() {
            if p.derivatives.iter().any(|&d| d != 0.0) {
                self.varying.push(i);
            }
        }
    }

    /// Whether any input changes within a step (a derivative is not zero).
    pub(crate) fn any_varying(&self) -> bool {
        !self.varying.is_empty()
    }

    /// The varying inputs' value references and their values at `t`, for
    /// one batched set call.
    pub(crate) fn at(&mut self, t: f64) -> (&[u32], &[f64]) {
        let dt = t - self.origin;
        self.set_vrs.clear();
        self.set_values.clear();
        for &i in &self.varying {
            let p = &self.polys[i];
            // Taylor: value + sum d_k dt^k / k!
            let mut term = 1.0;
            let mut u = p.value;
            for (k, d) in p.derivatives.iter().enumerate() {
                term *= dt / (k + 1) as f64;
                u += d * term;
            }
            self.set_vrs.push(self.vrs[i]);
            self.set_values.push(u);
        }
        (&self.set_vrs, &self.set_values)
    }

    /// The varying inputs' value references and their first derivatives at
    /// `t`, for one batched directional derivative.
    pub(crate) fn slopes_at(&mut self, t: f64) -> (&[u32], &[f64]) {
        let dt = t - self.origin;
        self.set_vrs.clear();
        self.set_values.clear();
        for &i in &self.varying {
            let d = &self.polys[i].derivatives;
            // d/dt of the Taylor expansion: d1 + d2 dt + d3 dt^2 / 2.
            let slope = d[0] + d[1] * dt + d[2] * dt * dt / 2.0;
            self.set_vrs.push(self.vrs[i]);
            self.set_values.push(slope);
        }
        (&self.set_vrs, &self.set_values)
    }

    /// The time the polynomials are expanded at.
    #[cfg(test)]
    pub(crate) fn origin(&self) -> f64 {
        self.origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_polynomial_is_evaluated_as_its_taylor_expansion() {
        let mut p = InputPolynomials::new(vec![7, 3]);
        p.set_values(1.0, &[3, 7], &[2.0, 5.0]);
        p.set_derivatives(&[3], 1, &[4.0]);
        p.set_derivatives(&[3], 2, &[6.0]);
        let (vrs, values) = p.at(1.5);
        assert_eq!(vrs, &[3]);
        // 2 + 4 * 0.5 + 6 * 0.25 / 2
        assert_eq!(values, &[2.0 + 2.0 + 0.75]);
    }

    #[test]
    fn slopes_are_the_expansions_derivative() {
        let mut p = InputPolynomials::new(vec![3]);
        p.set_values(1.0, &[3], &[2.0]);
        p.set_derivatives(&[3], 1, &[4.0]);
        p.set_derivatives(&[3], 2, &[6.0]);
        p.set_derivatives(&[3], 3, &[8.0]);
        let (vrs, slopes) = p.slopes_at(1.5);
        assert_eq!(vrs, &[3]);
        // 4 + 6 * 0.5 + 8 * 0.25 / 2
        assert_eq!(slopes, &[4.0 + 3.0 + 1.0]);
    }

    #[test]
    fn a_new_point_drops_the_old_slopes() {
        let mut p = InputPolynomials::new(vec![1]);
        p.set_values(0.0, &[1], &[1.0]);
        p.set_derivatives(&[1], 1, &[1.0]);
        assert!(p.any_varying());
        p.set_values(0.1, &[1], &[1.1]);
        assert!(!p.any_varying());
        assert_eq!(p.origin(), 0.1);
    }

    #[test]
    fn other_value_references_and_orders_are_ignored() {
        let mut p = InputPolynomials::new(vec![1]);
        p.set_values(0.0, &[2], &[9.0]);
        p.set_derivatives(&[1], 0, &[1.0]);
        p.set_derivatives(&[1], 9, &[1.0]);
        assert!(!p.any_varying());
    }
}
