//! Fixed macro step, Jacobi or Gauss-Seidel (kyllingstad sec. 3.1,
//! Algorithm 1; ALGORITHMS.md sec. 2).

use super::{Master, MasterStats, StepReport};
use crate::error::{CoreError, Result};
use crate::inputs::InputExtrapolation;
use crate::system::System;

/// How subsystems are stepped within a macro step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    /// All subsystems from the same inputs (may run in parallel).
    Jacobi,
    /// One after the other in this order, each using the newest outputs of
    /// those before it.
    GaussSeidel(Vec<usize>),
}

/// The fixed-step master.
///
/// Communication points are `t0 + n h` computed from the step count, so
/// they do not drift; the last step is shortened to end exactly at the stop
/// time. A subsystem with step multiple `k` steps every k-th macro step over
/// `k h` and publishes its outputs when the master reaches the end of that
/// step (it never exposes values from the future).
#[derive(Debug)]
pub struct FixedStep {
    h: f64,
    scheme: Scheme,
    extrapolation_order: u32,
    inputs: Option<InputExtrapolation>,
    t0: f64,
    n: u64,
    /// Per subsystem: macro step index at whose end its outputs publish.
    publish_at: Vec<Option<u64>>,
    due: Vec<bool>,
    hs: Vec<f64>,
    fresh: Vec<bool>,
    stats: MasterStats,
}

impl FixedStep {
    /// A fixed-step master with macro step `h`, the given scheme and input
    /// extrapolation order (0 = ZOH).
    pub fn new(h: f64, scheme: Scheme, extrapolation_order: u32) -> Self {
        FixedStep {
            h,
            scheme,
            extrapolation_order,
            inputs: None,
            t0: 0.0,
            n: 0,
            publish_at: Vec::new(),
            due: Vec::new(),
            hs: Vec::new(),
            fresh: Vec::new(),
            stats: MasterStats::default(),
        }
    }
}

impl Master for FixedStep {
    fn name(&self) -> &'static str {
        "fixed-step"
    }

    fn check(&self, sys: &System) -> Result<()> {
        if !(self.h > 0.0 && self.h.is_finite()) {
            return Err(CoreError::Config(format!(
                "fixed-step master: the step must be positive, got {}",
                self.h
            )));
        }
        if let Scheme::GaussSeidel(order) = &self.scheme {
            let mut seen = vec![false; sys.len()];
            for &s in order {
                if s >= sys.len() || seen[s] {
                    return Err(CoreError::Config(
                        "Gauss-Seidel order must list every subsystem exactly once".into(),
                    ));
                }
                seen[s] = true;
            }
            if seen.iter().any(|&x| !x) {
                return Err(CoreError::Config(
                    "Gauss-Seidel order must list every subsystem exactly once".into(),
                ));
            }
        }
        Ok(())
    }

    fn start(&mut self, sys: &mut System) -> Result<()> {
        let n = sys.len();
        self.t0 = sys.time();
        self.n = 0;
        let mut inputs = InputExtrapolation::new(sys, self.extrapolation_order);
        inputs.record(sys, self.t0);
        self.inputs = Some(inputs);
        self.publish_at = vec![None; n];
        self.due = vec![false; n];
        self.hs = vec![0.0; n];
        self.fresh = vec![false; n];
        Ok(())
    }

    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport> {
        let inputs = self
            .inputs
            .as_mut()
            .ok_or_else(|| CoreError::Config("fixed-step master used before start".into()))?;
        let n = self.n;
        let t = sys.time();
        let mut t_next = self.t0 + (n + 1) as f64 * self.h;
        if t_stop - t_next <= 1e-6 * self.h {
            t_next = t_stop;
        }
        let dt = t_next - t;

        // Which subsystems start a step now, and over how long.
        for s in 0..sys.len() {
            let k = u64::from(sys.step_multiples()[s].max(1));
            self.due[s] = n.is_multiple_of(k);
            if self.due[s] {
                let mut end = self.t0 + (n + k) as f64 * self.h;
                if t_stop - end <= 1e-6 * self.h {
                    end = t_stop;
                }
                self.hs[s] = end - t;
                self.publish_at[s] = Some(if end >= t_stop { u64::MAX } else { n + k - 1 });
            }
        }

        match &self.scheme {
            Scheme::Jacobi => {
                for s in 0..sys.len() {
                    if self.due[s] {
                        inputs.prepare(sys, s, t);
                    }
                }
                sys.step_jacobi(t, &self.hs, &self.due)?;
                for s in 0..sys.len() {
                    if let Some(at) = self.publish_at[s]
                        && (at == n || (at == u64::MAX && t_next >= t_stop))
                    {
                        sys.publish(s);
                        self.publish_at[s] = None;
                    }
                }
            }
            Scheme::GaussSeidel(order) => {
                self.fresh.iter_mut().for_each(|f| *f = false);
                for &s in order {
                    if !self.due[s] {
                        continue;
                    }
                    sys.exchange_into(s);
                    inputs.prepare_gauss_seidel(sys, s, t, self.hs[s], &self.fresh);
                    sys.step_one(s, t, self.hs[s])?;
                    if let Some(at) = self.publish_at[s]
                        && (at == n || (at == u64::MAX && t_next >= t_stop))
                    {
                        sys.publish(s);
                        self.publish_at[s] = None;
                        self.fresh[s] = true;
                    }
                }
                // Subsystems still holding unpublished results (step
                // multiples) publish when their step ends.
                for s in 0..sys.len() {
                    if let Some(at) = self.publish_at[s]
                        && (at == n || (at == u64::MAX && t_next >= t_stop))
                    {
                        sys.publish(s);
                        self.publish_at[s] = None;
                    }
                }
            }
        }

        sys.exchange_all();
        sys.set_time(t_next);
        inputs.record(sys, t_next);
        self.n += 1;
        self.stats.macro_steps += 1;
        self.stats.iterations += 1;
        Ok(StepReport::simple(t, dt))
    }

    fn stats(&self) -> MasterStats {
        self.stats
    }
}
