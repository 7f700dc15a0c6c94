//! Explicit predictor/corrector indicator (Busch; sadjina2016 sec. III D,
//! eqs. 16-17; docs/algorithms.md).
//!
//! Each coupled output is predicted at `t_{i+1}` by the Lagrange polynomial
//! of degree `r = m + 1` through its last `r + 1` values (non-uniform
//! times); the difference to the value actually obtained is the local
//! error estimate. While fewer values are known (the first steps), the
//! degree is what they allow.
//!
//! **Order and direct feed-through** (kyllingstad sec. 3.2, footnote 14):
//! for an output of a smooth trajectory the estimate is of order
//! `p = m + 2` in the step, the order its PI gains are set for. An output
//! with direct feed-through from a coupled input is not one: its value at
//! `t_{i+1}` was computed with the input the subsystem held (or
//! extrapolated) over the step, `y = g(x(t_{i+1}), u_used)`, so each
//! value lags its input by the step that produced it. A step of another
//! size than the one before shifts that lag, and the predictor, which
//! assumes one smooth function of time, reads the shift as an error of
//! order `m + 1` proportional to the *change* of step: a longer step
//! raises the indicator, the controller shortens, which raises it again.
//! That is the chattering step sequence sadjina2016 sec. V reports for
//! this indicator (about a third of the steps at `theta_max`). Where the
//! FMU provides directional derivatives, the indicator removes the lag: it
//! corrects each feed-through output to the value it has with the input
//! just exchanged, `y~ = y + D (u - u_used)` (`D` the interface Jacobian,
//! kyllingstad eq. 3), predicts `y~` (a smooth trajectory), and adds the
//! feed-through error itself, `-D (u - u_used)`, which is the error of the
//! value the coupling passed on: order `m + 1`, smooth in the step. Where
//! it does not, a warning names the outputs.

use serde::Serialize;

use super::{Aggregator, ErrorIndicator, Tolerances, physical_ports};
use crate::extrapolation::{History, MAX_POINTS, taylor_at};
use crate::system::System;

/// How errors are scaled.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum PredictorForm {
    /// The paper's eq. 17:
    /// `max |y - y_pred| / (TOL (1 + rho max(|y|, |y_pred|)))`.
    Paper {
        /// TOL.
        tol: f64,
        /// rho.
        rho: f64,
    },
    /// Per-variable `|y - y_pred| / (atol + rtol |y|)`, aggregated
    /// (kyllingstad sec. 2.4), insensitive to the outputs' numeric scale.
    Normalised(Tolerances),
}

/// The predictor/corrector indicator.
#[derive(Debug, Clone)]
pub struct PredictorCorrector {
    extrapolation_order: u32,
    form: PredictorForm,
    /// Physical coupled outputs: (subsystem, observed slot).
    outputs: Vec<(usize, usize)>,
    history: History,
    scratch: Vec<f64>,
    /// Subsystems with feed-through coupled outputs whose interface
    /// Jacobian is read after each step.
    feedthrough: Vec<FeedThrough>,
    /// `D (u - u_used)` per coupled output (0 without feed-through).
    correction: Vec<f64>,
    /// Whether the lag of feed-through outputs is removed (where the FMUs
    /// provide directional derivatives).
    lag_correction: bool,
}

/// A subsystem whose coupled outputs depend directly on its inputs.
#[derive(Debug, Clone)]
struct FeedThrough {
    subsystem: usize,
    n_inputs: usize,
    /// Row-major `n_outputs x n_inputs`.
    jacobian: Vec<f64>,
    /// (index into `outputs`, output slot) of its feed-through outputs.
    outputs: Vec<(usize, usize)>,
    /// The FMU provides the Jacobian (else the lag stays uncorrected).
    known: bool,
}

/// Whether output slot `k` of subsystem `s` depends directly on an input
/// that a connection feeds (an input held constant adds no lag).
fn feeds_through(sys: &System, s: usize, k: usize) -> bool {
    let info = sys.subsystems()[s].info();
    k < info.n_outputs
        && info.feedthrough.get(k).is_some_and(|deps| {
            deps.iter().any(|&i| {
                sys.couplings()
                    .iter()
                    .any(|c| c.to_subsystem == s && c.to_slot == i)
            })
        })
}

impl PredictorCorrector {
    /// The indicator for input extrapolation order `m` (predictor degree
    /// `m + 1`).
    pub fn new(extrapolation_order: u32, form: PredictorForm) -> Self {
        PredictorCorrector {
            extrapolation_order,
            form,
            outputs: Vec::new(),
            history: History::new(0),
            scratch: Vec::new(),
            feedthrough: Vec::new(),
            correction: Vec::new(),
            lag_correction: true,
        }
    }

    /// With `false`, feed-through outputs are predicted as they are, lag
    /// and all: the estimate as Busch and sadjina2016 publish it, whose
    /// steps oscillate where outputs feed through (kept to reproduce the
    /// paper's figures and to show the difference).
    pub fn with_lag_correction(mut self, on: bool) -> Self {
        self.lag_correction = on;
        self
    }

    /// The coupled outputs, feed-through ones corrected to the inputs just
    /// exchanged.
    fn gather(&mut self, sys: &System) {
        let bufs = sys.buffers();
        for ((dst, &(s, k)), c) in self
            .scratch
            .iter_mut()
            .zip(&self.outputs)
            .zip(&self.correction)
        {
            *dst = bufs[s].y[k] + c;
        }
    }
}

impl ErrorIndicator for PredictorCorrector {
    fn name(&self) -> &'static str {
        "predictor-corrector"
    }

    fn order(&self, sys: &System) -> u32 {
        let outputs = physical_ports(sys).0;
        if outputs.iter().any(|&(s, k)| feeds_through(sys, s, k)) {
            self.extrapolation_order + 1
        } else {
            self.extrapolation_order + 2
        }
    }

    fn start(&mut self, sys: &System) {
        self.outputs = physical_ports(sys).0;
        self.history = History::new(self.outputs.len());
        self.scratch = vec![0.0; self.outputs.len()];
        self.correction = vec![0.0; self.outputs.len()];
        self.feedthrough.clear();
        for (idx, &(s, k)) in self.outputs.iter().enumerate() {
            if !feeds_through(sys, s, k) {
                continue;
            }
            let info = sys.subsystems()[s].info();
            let i = match self.feedthrough.iter().position(|f| f.subsystem == s) {
                Some(i) => i,
                None => {
                    let n_inputs = info.inputs.len();
                    self.feedthrough.push(FeedThrough {
                        subsystem: s,
                        n_inputs,
                        jacobian: vec![0.0; info.n_outputs * n_inputs],
                        outputs: Vec::new(),
                        known: self.lag_correction && info.provides_directional_derivatives,
                    });
                    self.feedthrough.len() - 1
                }
            };
            self.feedthrough[i].outputs.push((idx, k));
        }
        let uncorrected: Vec<String> = self
            .feedthrough
            .iter()
            .filter(|f| self.lag_correction && !f.known)
            .flat_map(|f| {
                let info = sys.subsystems()[f.subsystem].info();
                f.outputs
                    .iter()
                    .map(move |&(_, k)| format!("{}.{}", info.name, info.observed[k].name))
            })
            .collect();
        if !uncorrected.is_empty() {
            tracing::warn!(
                "predictor-corrector: {} depend{} directly on coupled inputs and the FMU provides no directional derivatives: each value lags its input by one step, the indicator reads a change of step size as error and the steps may oscillate (use kind = \"nepce\" or \"ecco\", or an FMU with providesDirectionalDerivative)",
                uncorrected.join(", "),
                if uncorrected.len() == 1 { "s" } else { "" }
            );
        }
        self.gather(sys);
        self.history.push(sys.time(), &self.scratch);
    }

    fn sample(&mut self, sys: &mut System) -> crate::error::Result<()> {
        for f in &mut self.feedthrough {
            if !f.known {
                continue;
            }
            if !sys
                .subsystem_mut(f.subsystem)
                .feedthrough_jacobian(&mut f.jacobian)?
            {
                // Declared but not delivered (a nested system whose inner
                // FMU lacks it): the lag stays, as for an FMU without.
                f.known = false;
                for &(idx, _) in &f.outputs {
                    self.correction[idx] = 0.0;
                }
                continue;
            }
            let b = &sys.buffers()[f.subsystem];
            for &(idx, k) in &f.outputs {
                let row = &f.jacobian[k * f.n_inputs..(k + 1) * f.n_inputs];
                self.correction[idx] = row
                    .iter()
                    .zip(b.u.iter().zip(&b.u_end))
                    .map(|(d, (u, used))| d * (u - used))
                    .sum();
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, sys: &System, t: f64, dt: f64) -> f64 {
        let t1 = t + dt;
        self.gather(sys);
        let points = (self.extrapolation_order as usize + 2).min(MAX_POINTS);
        let k = points.min(self.history.len());
        let mut ts = [0.0; MAX_POINTS];
        for (p, slot) in ts.iter_mut().enumerate().take(k) {
            *slot = self.history.time(p);
        }
        let mut paper_max = 0.0f64;
        let mut agg = match self.form {
            PredictorForm::Normalised(tol) => Some((Aggregator::new(tol.aggregate), tol)),
            PredictorForm::Paper { .. } => None,
        };
        for (i, &y) in self.scratch.iter().enumerate() {
            let mut vs = [0.0; MAX_POINTS];
            for (p, v) in vs.iter_mut().enumerate().take(k) {
                *v = self.history.point(p)[i];
            }
            let predicted = taylor_at(&ts[..k], &vs[..k], t1)[0];
            // The lag-free value's prediction error, and the error of the
            // value passed on (its lag) where there is feed-through.
            let e = y - predicted - self.correction[i];
            match (&mut agg, self.form) {
                (Some((a, tol)), _) => a.add(tol.normalise(e, y)),
                (None, PredictorForm::Paper { tol, rho }) => {
                    let q = e.abs() / (tol * (1.0 + rho * y.abs().max(predicted.abs())));
                    paper_max = if q.is_nan() {
                        f64::NAN
                    } else {
                        paper_max.max(q)
                    };
                }
                (None, PredictorForm::Normalised(_)) => {}
            }
        }
        self.history.push(t1, &self.scratch);
        match agg {
            Some((a, _)) => a.value(),
            None => paper_max,
        }
    }

    fn clone_box(&self) -> Box<dyn super::ErrorIndicator> {
        Box::new(self.clone())
    }
}
