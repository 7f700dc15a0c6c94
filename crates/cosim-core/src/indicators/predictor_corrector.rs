//! Explicit predictor/corrector indicator (Busch; sadjina2016 sec. III D,
//! eqs. 16-17; ALGORITHMS.md sec. 3b).
//!
//! Each coupled output is predicted at `t_{i+1}` by the Lagrange polynomial
//! of degree `r = m + 1` through its last `r + 1` values (non-uniform
//! times); the difference to the value actually obtained is the local
//! error estimate. While fewer values are known (the first steps), the
//! degree is what they allow.

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
        }
    }

    fn gather(&mut self, sys: &System) {
        let bufs = sys.buffers();
        for (dst, &(s, k)) in self.scratch.iter_mut().zip(&self.outputs) {
            *dst = bufs[s].y[k];
        }
    }
}

impl ErrorIndicator for PredictorCorrector {
    fn name(&self) -> &'static str {
        "predictor-corrector"
    }

    fn order(&self) -> u32 {
        self.extrapolation_order + 1
    }

    fn start(&mut self, sys: &System) {
        self.outputs = physical_ports(sys).0;
        self.history = History::new(self.outputs.len());
        self.scratch = vec![0.0; self.outputs.len()];
        self.gather(sys);
        self.history.push(sys.time(), &self.scratch);
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
            let e = y - predicted;
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
