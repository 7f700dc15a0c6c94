//! One macro step of the subsystems, Jacobi or Gauss-Seidel: the building
//! block every master steps with. It prepares inputs (extrapolation),
//! steps, publishes, exchanges and records, and never allocates.

use super::Scheme;
use crate::error::Result;
use crate::inputs::InputExtrapolation;
use crate::system::System;

/// Per-subsystem plan of one macro step: who steps, over how long, who
/// publishes at its end.
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// Subsystem steps in this macro step.
    pub due: Vec<bool>,
    /// Its step size (from the macro step's start).
    pub h: Vec<f64>,
    /// It publishes its new outputs at the end of this macro step.
    pub publish: Vec<bool>,
}

impl StepPlan {
    /// A plan for `n` subsystems.
    pub fn new(n: usize) -> Self {
        StepPlan {
            due: vec![true; n],
            h: vec![0.0; n],
            publish: vec![true; n],
        }
    }

    /// Every subsystem steps by `h` and publishes.
    pub fn all(&mut self, h: f64) {
        self.due.iter_mut().for_each(|d| *d = true);
        self.h.iter_mut().for_each(|x| *x = h);
        self.publish.iter_mut().for_each(|p| *p = true);
    }
}

/// Steps a system's subsystems with a scheme.
#[derive(Debug, Clone)]
pub struct Stepper {
    scheme: Scheme,
    fresh: Vec<bool>,
}

impl Stepper {
    /// A stepper for `sys` with `scheme`.
    pub fn new(sys: &System, scheme: Scheme) -> Self {
        Stepper {
            scheme,
            fresh: vec![false; sys.len()],
        }
    }

    /// The scheme.
    pub fn scheme(&self) -> &Scheme {
        &self.scheme
    }

    /// Carries out one macro step from `t` to `t_next` by `plan`: inputs
    /// prepared by `inputs`, subsystems stepped (Jacobi: all from the same
    /// inputs, on worker threads when configured; Gauss-Seidel: in order,
    /// each after an exchange with the newest published outputs), outputs
    /// published as planned, every input exchanged at `t_next` and recorded
    /// there (those fed by a subsystem that published).
    ///
    /// Returns where the step ended: `t_next`, or earlier where a
    /// subsystem returned early at an event (FMI 3 event mode); the events
    /// there are handled ([`System::handle_events`]).
    pub fn step(
        &mut self,
        sys: &mut System,
        inputs: &mut InputExtrapolation,
        plan: &StepPlan,
        t: f64,
        t_next: f64,
    ) -> Result<f64> {
        let end = self.step_exchanging(sys, inputs, plan, t, t_next, System::exchange)?;
        inputs.record_fresh(sys, end, |_, src| plan.publish[src]);
        Ok(end)
    }

    /// [`Stepper::step`] with the exchange at its end done by `exchange`
    /// (after the publications) instead of [`System::exchange`], and the
    /// inputs not recorded: the caller records them
    /// ([`InputExtrapolation::record_fresh`]).
    pub fn step_exchanging(
        &mut self,
        sys: &mut System,
        inputs: &mut InputExtrapolation,
        plan: &StepPlan,
        t: f64,
        t_next: f64,
        exchange: impl FnOnce(&mut System),
    ) -> Result<f64> {
        match &self.scheme {
            Scheme::Jacobi => {
                if inputs.order() == 0 {
                    // Zero-order hold, in the same pass as the steps.
                    sys.step_jacobi_held(t, &plan.h, &plan.due)?;
                } else {
                    inputs.prepare_due(sys, &plan.due, t);
                    sys.step_jacobi(t, &plan.h, &plan.due)?;
                }
                sys.publish_selected(&plan.publish);
            }
            Scheme::GaussSeidel(order) => {
                self.fresh.iter_mut().for_each(|f| *f = false);
                let mut ended = None;
                for &s in order {
                    if !plan.due[s] {
                        continue;
                    }
                    sys.exchange_into(s);
                    inputs.prepare_gauss_seidel(sys, s, t, t_next, &self.fresh);
                    if let Err(e) = sys.step_one(s, t, plan.h[s]) {
                        // (An FMU that ended the simulation lets the others
                        // complete the macro step, as in Jacobi.)
                        crate::system::keep_error(&mut ended, e)?;
                        continue;
                    }
                    if plan.publish[s] {
                        sys.publish(s);
                        self.fresh[s] = true;
                    }
                }
                if let Some(e) = ended {
                    return Err(e);
                }
                // Results held back by a longer step publish when it ends.
                for s in 0..sys.len() {
                    if plan.publish[s] && !self.fresh[s] {
                        sys.publish(s);
                    }
                }
            }
        }
        exchange(sys);
        if !sys.uses_event_mode() {
            sys.set_time(t_next);
            return Ok(t_next);
        }
        let end = sys.early_end().unwrap_or(t_next);
        sys.set_time(end);
        sys.handle_events()?;
        Ok(sys.time())
    }
}
