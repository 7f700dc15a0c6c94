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
//! With only values set (an FMI 2 importer that never calls
//! `fmi2SetRealInputDerivatives`, or an FMI 3 importer without an
//! intermediate update callback), this is plain zero-order hold.
//!
//! # Intermediate update (FMI 3.0)
//!
//! FMI 3.0 co-simulation has no input derivatives. An FMI 3 build of a model
//! that interpolates inputs declares `providesIntermediateUpdate="true"` and
//! `intermediateUpdate="true"` on its continuous Real inputs; when the
//! importer passes an `fmi3IntermediateUpdateCallback`, the step sees the
//! inputs through an [`InputSource`] (see [`Inputs::at`] and friends):
//!
//! - [`Inputs::at`] (and [`Inputs::derivative`] of order 0) at an internal
//!   time `s` first asks the importer for the inputs at `s` (one callback
//!   for consecutive evaluations at the same `s`) and returns the value it
//!   set; an input it did not set keeps its last value. Derivatives of
//!   order >= 1 are 0: the importer gives values only.
//! - [`Inputs::coeffs`], [`Inputs::integral`] and [`Inputs::integral2`]
//!   (the exact integrators need the whole polynomial, not values) use the
//!   cubic through the importer's values at `t + h * {0, 1/4, 3/4, 1}`
//!   (four callbacks, once per step): for an importer that sets the value of
//!   a polynomial of degree <= 3, that is the polynomial itself, so the step
//!   integrates as the FMI 2 build does with the same polynomial given as
//!   input derivatives (up to rounding).
//! - [`Inputs::value`] is the value at the communication point.
//!
//! After the step the kit asks once more, at the end of the step, unless
//! the last callback was there already (so the inputs after the step are
//! the importer's values at `t + h`, as rule 3 gives in FMI 2); the input
//! values are then the last values set.

use std::cell::RefCell;

use crate::model::Vr;

/// Highest input derivative order the kit accepts.
pub const MAX_INPUT_ORDER: usize = 3;

/// Where the inputs come from at internal times of one step: the
/// importer's intermediate update callback (FMI 3), implemented by the C
/// layer. Called only from inside the model's `do_step`, on its thread.
pub trait InputSource: Send {
    /// Asks the importer for the inputs at time `s` and calls `set(vr,
    /// value)` for every input value it set (in the order set; a later value
    /// for the same input wins).
    fn request(&self, s: f64, set: &mut dyn FnMut(Vr, f64));
}

/// The offsets (fractions of the step) of the four nodes of the cubic
/// that the exact integrators use in intermediate update.
pub const CUBIC_NODES: [f64; 4] = [0.0, 0.25, 0.75, 1.0];

/// A step in intermediate update: the source and what it has given.
struct Live {
    source: Box<dyn InputSource>,
    /// Step size (the step is `[t0, t0 + h]`).
    h: f64,
    /// Per vr: an input the importer may set (`intermediateUpdate="true"`).
    updatable: Vec<bool>,
    state: RefCell<LiveState>,
}

struct LiveState {
    /// Time of the last request.
    last: Option<f64>,
    /// Per vr: the last value set (starts at the communication-point value).
    current: Vec<f64>,
    /// The cubic through the values at [`CUBIC_NODES`], as
    /// `[u, u', u'', u''']` at `t0` per vr, once asked for.
    cubic: Option<Vec<[f64; MAX_INPUT_ORDER + 1]>>,
}

/// The inputs of one instance: value and derivatives at `t0`, by value
/// reference; inside a step with intermediate update, also the source of
/// the values at internal times (not copied by `clone`, not compared).
pub struct Inputs {
    t0: f64,
    /// `d[vr] = [u, u', u'', u''']` at `t0` (all zero for non-inputs).
    d: Vec<[f64; MAX_INPUT_ORDER + 1]>,
    /// Some derivative in `d` may be non-zero (false: every one is zero,
    /// and re-expanding changes nothing: the common case of held inputs).
    sloped: bool,
    live: Option<Live>,
}

impl Clone for Inputs {
    /// The polynomials only: a clone never calls the importer.
    fn clone(&self) -> Self {
        Inputs {
            t0: self.t0,
            d: self.d.clone(),
            sloped: self.sloped,
            live: None,
        }
    }
}

impl PartialEq for Inputs {
    fn eq(&self, other: &Self) -> bool {
        self.t0 == other.t0 && self.d == other.d
    }
}

impl std::fmt::Debug for Inputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inputs")
            .field("t0", &self.t0)
            .field("d", &self.d)
            .field("intermediate_update", &self.live.is_some())
            .finish()
    }
}

const FACT: [f64; 8] = [1.0, 1.0, 2.0, 6.0, 24.0, 120.0, 720.0, 5040.0];

/// `sum_{j>=order} c_j tau^(j-order)/(j-order)!` (Horner; 0 above order 3).
fn taylor(c: &[f64; MAX_INPUT_ORDER + 1], order: usize, tau: f64) -> f64 {
    if order > MAX_INPUT_ORDER {
        return 0.0;
    }
    let mut acc = 0.0;
    for j in (order..=MAX_INPUT_ORDER).rev() {
        acc = acc * tau / ((j - order + 1) as f64) + c[j];
    }
    acc
}

/// The `[u, u', u'', u''']` at offset 0 of the cubic through `(x[k], y[k])`
/// (Newton's divided differences, then expanded). Offsets equal to an
/// earlier one (a step too short for the time's resolution) are skipped:
/// the polynomial then has a lower degree.
pub fn cubic_through(x: [f64; 4], y: [f64; 4]) -> [f64; MAX_INPUT_ORDER + 1] {
    let mut xs = [0.0; 4];
    let mut f = [0.0; 4];
    let mut m = 0;
    for (&xi, &yi) in x.iter().zip(&y) {
        if !xs[..m].contains(&xi) {
            xs[m] = xi;
            f[m] = yi;
            m += 1;
        }
    }
    for j in 1..m {
        for i in (j..m).rev() {
            f[i] = (f[i] - f[i - 1]) / (xs[i] - xs[i - j]);
        }
    }
    // p(tau) = f0 + f1 (tau - x0) + f2 (tau - x0)(tau - x1) + ...: Horner in
    // the Newton basis, on monomial coefficients c.
    let mut c = [0.0; 4];
    if m > 0 {
        c[0] = f[m - 1];
    }
    for k in (0..m.saturating_sub(1)).rev() {
        let mut next = [0.0; 4];
        for i in 0..4 {
            let shifted = if i > 0 { c[i - 1] } else { 0.0 };
            next[i] = shifted - xs[k] * c[i];
        }
        next[0] += f[k];
        c = next;
    }
    [c[0], c[1], 2.0 * c[2], 6.0 * c[3]]
}

impl Inputs {
    /// Inputs for `n` value references, all zero, expanded at `t0`.
    pub fn new(n: usize, t0: f64) -> Self {
        Inputs {
            t0,
            d: vec![[0.0; MAX_INPUT_ORDER + 1]; n],
            sloped: false,
            live: None,
        }
    }

    /// These inputs for one step `[t0, t0 + h]` in intermediate update:
    /// values at internal times come from `source` for the inputs marked in
    /// `updatable` (by vr); the others are held.
    pub fn with_source(&self, source: Box<dyn InputSource>, h: f64, updatable: Vec<bool>) -> Self {
        let current = self.d.iter().map(|c| c[0]).collect();
        Inputs {
            t0: self.t0,
            d: self.d.clone(),
            sloped: self.sloped,
            live: Some(Live {
                source,
                h,
                updatable,
                state: RefCell::new(LiveState {
                    last: None,
                    current,
                    cubic: None,
                }),
            }),
        }
    }

    /// True inside a step with intermediate update.
    pub fn is_intermediate_update(&self) -> bool {
        self.live.is_some()
    }

    /// Ends a step in intermediate update at `end`: asks the importer for
    /// the inputs at `end` unless the last request was there, and returns
    /// the last value set of every updatable input. Empty without a source.
    pub fn finish_intermediate_update(&self, end: f64) -> Vec<(Vr, f64)> {
        let Some(live) = &self.live else {
            return Vec::new();
        };
        if !live.updatable.iter().any(|&u| u) {
            return Vec::new();
        }
        let mut st = live.state.borrow_mut();
        request(live, &mut st, end);
        live.updatable
            .iter()
            .enumerate()
            .filter(|(_, u)| **u)
            .map(|(vr, _)| (vr as Vr, st.current[vr]))
            .collect()
    }

    fn updatable(&self, vr: Vr) -> Option<&Live> {
        self.live
            .as_ref()
            .filter(|l| l.updatable.get(vr as usize).copied().unwrap_or(false))
    }

    /// Intermediate update: the importer's value of `vr` at `s`.
    fn sample(&self, live: &Live, vr: Vr, s: f64) -> f64 {
        let mut st = live.state.borrow_mut();
        request(live, &mut st, s);
        st.current.get(vr as usize).copied().unwrap_or(f64::NAN)
    }

    /// Intermediate update: the cubic through the importer's values at the
    /// nodes (asked for once per step, for all inputs at once).
    fn cubic(&self, live: &Live, vr: Vr) -> [f64; MAX_INPUT_ORDER + 1] {
        let mut st = live.state.borrow_mut();
        if st.cubic.is_none() {
            let mut x = [0.0; 4];
            let mut y = vec![[0.0; 4]; st.current.len()];
            for (k, frac) in CUBIC_NODES.iter().enumerate() {
                let s = if *frac == 1.0 {
                    self.t0 + live.h
                } else {
                    self.t0 + frac * live.h
                };
                request(live, &mut st, s);
                x[k] = s - self.t0;
                for (yv, cur) in y.iter_mut().zip(&st.current) {
                    yv[k] = *cur;
                }
            }
            let cubic = y
                .iter()
                .zip(&live.updatable)
                .zip(&self.d)
                .map(|((yv, &upd), held)| if upd { cubic_through(x, *yv) } else { *held })
                .collect();
            st.cubic = Some(cubic);
        }
        st.cubic
            .as_ref()
            .and_then(|c| c.get(vr as usize).copied())
            .unwrap_or([f64::NAN; MAX_INPUT_ORDER + 1])
    }

    /// The expansion point.
    pub fn t0(&self) -> f64 {
        self.t0
    }

    /// The value at the expansion point (the communication point).
    pub fn value(&self, vr: Vr) -> f64 {
        self.held(vr)[0]
    }

    /// `[u, u', u'', u''']` at the expansion point. In intermediate update:
    /// of the cubic through the importer's values (module docs).
    pub fn coeffs(&self, vr: Vr) -> [f64; MAX_INPUT_ORDER + 1] {
        if let Some(live) = self.updatable(vr) {
            return self.cubic(live, vr);
        }
        self.held(vr)
    }

    fn held(&self, vr: Vr) -> [f64; MAX_INPUT_ORDER + 1] {
        self.d
            .get(vr as usize)
            .copied()
            .unwrap_or([f64::NAN; MAX_INPUT_ORDER + 1])
    }

    /// u(t). In intermediate update: the importer's value at `t`.
    pub fn at(&self, vr: Vr, t: f64) -> f64 {
        self.derivative(vr, 0, t)
    }

    /// The `order`-th derivative of u at t (0 above order 3). In
    /// intermediate update: the importer's value at `t` for order 0, else 0.
    pub fn derivative(&self, vr: Vr, order: usize, t: f64) -> f64 {
        if let Some(live) = self.updatable(vr) {
            return if order == 0 {
                self.sample(live, vr, t)
            } else {
                0.0
            };
        }
        taylor(&self.held(vr), order, t - self.t0)
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

    /// Sets the value and resets the derivatives (rule 1). Returns whether
    /// non-zero derivatives were reset.
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
            self.sloped |= x != 0.0;
        }
    }

    /// Re-expands every polynomial at `t` (rule 3). Returns the new values.
    pub(crate) fn shift_to(&mut self, t: f64) {
        let tau = t - self.t0;
        if tau != 0.0 && self.sloped {
            self.sloped = self.d.iter().any(|c| c[1..].iter().any(|&d| d != 0.0));
            for c in &mut self.d {
                if c[1..].iter().any(|&d| d != 0.0) {
                    let old = *c;
                    for (k, slot) in c.iter_mut().enumerate() {
                        *slot = taylor(&old, k, tau);
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
        let sloped = d.iter().any(|c| c[1..].iter().any(|&d| d != 0.0));
        Inputs {
            t0,
            d,
            sloped,
            live: None,
        }
    }
}

/// Asks the source for the inputs at `s` unless the last request was at `s`.
fn request(live: &Live, st: &mut LiveState, s: f64) {
    if st.last == Some(s) {
        return;
    }
    st.last = Some(s);
    let (current, updatable) = (&mut st.current, &live.updatable);
    live.source.request(s, &mut |vr, x| {
        // Only inputs the importer may set; the C layer checks this before.
        if updatable.get(vr as usize).copied().unwrap_or(false)
            && let Some(slot) = current.get_mut(vr as usize)
        {
            *slot = x;
        }
    });
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
    fn the_cubic_through_four_values_is_the_polynomial() {
        // p(tau) = 2 + 3 tau - 2 tau^2 + tau^3 = [2, 3, -4, 6] as Taylor coefficients.
        for h in [1e-3, 0.1, 2.0] {
            let x = CUBIC_NODES.map(|f| f * h);
            let y = x.map(exact);
            let c = cubic_through(x, y);
            let want = [2.0, 3.0, -4.0, 6.0];
            for k in 0..4 {
                // Coefficient k is found to about eps / h^k; it enters the
                // integral over the step with h^(k+1).
                let tol = 1e-13 * h.powi(-(k as i32)).max(1.0);
                assert!((c[k] - want[k]).abs() < tol, "h {h} c{k} = {}", c[k]);
            }
        }
        // A constant is found exactly (zero divided differences).
        assert_eq!(cubic_through(CUBIC_NODES, [1.5; 4]), [1.5, 0.0, 0.0, 0.0]);
        // Coinciding nodes (a step below the time resolution): lower degree.
        assert_eq!(
            cubic_through([0.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0]),
            [2.0, 0.0, 0.0, 0.0]
        );
        let line = cubic_through([0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 3.0, 3.0]);
        assert_eq!(line, [1.0, 2.0, 0.0, 0.0]);
    }

    /// Records the times asked and sets vr 1 to `exact(s - 1)`.
    struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<f64>>>);

    impl InputSource for Recorder {
        fn request(&self, s: f64, set: &mut dyn FnMut(Vr, f64)) {
            if let Ok(mut t) = self.0.lock() {
                t.push(s);
            }
            set(1, exact(s - 1.0));
            // Not updatable: ignored.
            set(2, 99.0);
        }
    }

    fn live() -> (Inputs, std::sync::Arc<std::sync::Mutex<Vec<f64>>>) {
        let mut u = Inputs::new(3, 1.0);
        u.set_value(1, 2.0);
        u.set_value(2, -1.0);
        let times = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let src = Box::new(Recorder(std::sync::Arc::clone(&times)));
        (u.with_source(src, 0.5, vec![false, true, false]), times)
    }

    fn times(t: &std::sync::Mutex<Vec<f64>>) -> Vec<f64> {
        t.lock().map(|v| v.clone()).unwrap_or_default()
    }

    #[test]
    fn intermediate_update_samples_once_per_time_and_holds_the_rest() {
        let (u, t) = live();
        assert!(u.is_intermediate_update());
        assert_eq!(u.at(1, 1.2), exact(1.2 - 1.0));
        assert_eq!(u.at(1, 1.2), exact(1.2 - 1.0));
        assert_eq!(u.derivative(1, 0, 1.2), exact(1.2 - 1.0));
        assert_eq!(times(&t), vec![1.2], "one request for the same time");
        // Values only: derivatives are 0; the value is the communication point's.
        assert_eq!(u.derivative(1, 1, 1.3), 0.0);
        assert_eq!(u.value(1), 2.0);
        // The held input never asks.
        assert_eq!(u.at(2, 1.4), -1.0);
        assert_eq!(times(&t), vec![1.2]);
        // Back to a time asked before, after another one: asks again.
        assert_eq!(u.at(1, 1.3), exact(1.3 - 1.0));
        assert_eq!(u.at(1, 1.2), exact(1.2 - 1.0));
        assert_eq!(times(&t), vec![1.2, 1.3, 1.2]);
        // The end of the step: one more request, then the last values.
        assert_eq!(u.finish_intermediate_update(1.5), vec![(1, exact(0.5))]);
        assert_eq!(times(&t), vec![1.2, 1.3, 1.2, 1.5]);
        // A clone is a plain polynomial again.
        let c = u.clone();
        assert!(!c.is_intermediate_update());
        assert_eq!(c.at(1, 1.2), 2.0);
        assert_eq!(c, u);
    }

    #[test]
    fn intermediate_update_integrates_the_cubic_through_four_values() {
        let (u, t) = live();
        let h: f64 = 0.5;
        let int = 2.0 * h + 1.5 * h.powi(2) - 2.0 / 3.0 * h.powi(3) + h.powi(4) / 4.0;
        assert!((u.integral(1, 1.0 + h) - int).abs() < 1e-14);
        let int2 = h.powi(2) + 0.5 * h.powi(3) - h.powi(4) / 6.0 + h.powi(5) / 20.0;
        assert!((u.integral2(1, 1.0 + h) - int2).abs() < 1e-14);
        let c = u.coeffs(1);
        for (k, want) in [2.0, 3.0, -4.0, 6.0].into_iter().enumerate() {
            assert!((c[k] - want).abs() < 1e-12, "c{k} = {}", c[k]);
        }
        // The held input keeps its polynomial.
        assert_eq!(u.coeffs(2), [-1.0, 0.0, 0.0, 0.0]);
        // Four requests, once per step; the last is the end of the step.
        assert_eq!(times(&t), vec![1.0, 1.125, 1.375, 1.5]);
        assert_eq!(u.finish_intermediate_update(1.5), vec![(1, exact(0.5))]);
        assert_eq!(times(&t).len(), 4);
    }

    #[test]
    fn setting_a_value_resets_derivatives() {
        let mut u = poly();
        assert!(u.set_value(1, 5.0));
        assert_eq!(u.coeffs(1), [5.0, 0.0, 0.0, 0.0]);
        assert_eq!(u.at(1, 3.0), 5.0);
    }
}
