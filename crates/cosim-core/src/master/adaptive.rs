//! The non-rejecting adaptive master (docs/algorithms.md): after each
//! macro step an error indicator is evaluated from the coupling data and
//! the PI controller chooses the next step. Steps are never rejected or
//! repeated, so no FMU needs state save/restore.
//!
//! With the ECCO energy indicator this is the master of sadjina2016; with
//! the predictor/corrector indicator, Busch's; with NEPCE, kyllingstad's
//! minimal-interface variant.

use super::stepper::{StepPlan, Stepper};
use super::{Master, MasterStats, Scheme, StepFields, StepReport};
use crate::controller::{PiController, PiSettings};
use crate::error::{CoreError, Result};
use crate::indicators::ErrorIndicator;
use crate::inputs::InputExtrapolation;
use crate::system::System;

/// An adaptive, non-rejecting master.
pub struct Adaptive {
    name: &'static str,
    indicator: Box<dyn ErrorIndicator>,
    settings: PiSettings,
    dt0: f64,
    scheme: Scheme,
    extrapolation_order: u32,
    run: Option<Running>,
    stats: MasterStats,
}

#[derive(Clone)]
struct Running {
    controller: PiController,
    inputs: InputExtrapolation,
    stepper: Stepper,
    plan: StepPlan,
    dt: f64,
}

impl Clone for Adaptive {
    fn clone(&self) -> Self {
        Adaptive {
            name: self.name,
            indicator: self.indicator.clone_box(),
            settings: self.settings,
            dt0: self.dt0,
            scheme: self.scheme.clone(),
            extrapolation_order: self.extrapolation_order,
            run: self.run.clone(),
            stats: self.stats,
        }
    }
}

impl std::fmt::Debug for Adaptive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adaptive")
            .field("name", &self.name)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Adaptive {
    /// An adaptive master named `name` (for messages: "ecco",
    /// "predictor-corrector", "nepce") driven by `indicator`, starting with
    /// step `dt0`.
    pub fn new(
        name: &'static str,
        indicator: Box<dyn ErrorIndicator>,
        settings: PiSettings,
        dt0: f64,
        scheme: Scheme,
        extrapolation_order: u32,
    ) -> Self {
        Adaptive {
            name,
            indicator,
            settings,
            dt0,
            scheme,
            extrapolation_order,
            run: None,
            stats: MasterStats::default(),
        }
    }
}

impl Master for Adaptive {
    fn name(&self) -> &'static str {
        self.name
    }

    fn check(&self, sys: &System) -> Result<()> {
        super::fixed_step::check_scheme(&self.scheme, sys)?;
        let s = &self.settings;
        if !(s.dt_min > 0.0
            && s.dt_min <= s.dt_max
            && s.theta_min > 0.0
            && s.theta_min <= s.theta_max)
        {
            return Err(CoreError::Config(format!(
                "{} master: inconsistent step controller settings {s:?}",
                self.name
            )));
        }
        let fixed: Vec<String> = sys
            .subsystems()
            .iter()
            .filter(|s| !s.info().can_handle_variable_step)
            .map(|s| format!("'{}' ({})", s.info().name, s.info().origin))
            .collect();
        if !fixed.is_empty() {
            return Err(CoreError::Capability {
                master: self.name,
                reason: format!(
                    "it varies the macro step, but {} declare{} canHandleVariableCommunicationStepSize=\"false\"; use kind = \"fixed-step\"",
                    fixed.join(", "),
                    if fixed.len() == 1 { "s" } else { "" }
                ),
            });
        }
        if self.indicator.name() == "energy" && sys.bonds().is_empty() {
            return Err(CoreError::Capability {
                master: self.name,
                reason: "its error indicator is the residual energy of power bonds, and the system has none: declare one in [[bonds]] or choose kind = \"predictor-corrector\" or \"nepce\"".into(),
            });
        }
        if sys.step_multiples().iter().any(|&k| k > 1) {
            return Err(CoreError::Config(format!(
                "{} master: step_multiple is only supported by the fixed-step master",
                self.name
            )));
        }
        Ok(())
    }

    fn start(&mut self, sys: &mut System) -> Result<()> {
        let mut inputs = InputExtrapolation::new(sys, self.extrapolation_order);
        let t0 = sys.time();
        inputs.start(sys, t0)?;
        self.indicator.start(sys);
        self.run = Some(Running {
            controller: PiController::new(self.settings),
            inputs,
            stepper: Stepper::new(sys, self.scheme.clone()),
            plan: StepPlan::new(sys.len()),
            dt: self.dt0.clamp(self.settings.dt_min, self.settings.dt_max),
        });
        Ok(())
    }

    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| CoreError::Config(format!("{} master used before start", self.name)))?;
        let t = sys.time();
        // The step in whole ticks, shortened to hit the stop time (or the
        // next output point).
        let base = sys.time_base();
        let t_next = base.step_end(t, run.dt, t_stop);
        // (As libcosim's `to_double_duration(d, t)`: the difference of the
        // two time points in seconds.)
        run.plan.all(t_next - t);
        // (Earlier where a subsystem returned early at an event.)
        let t_next = run
            .stepper
            .step(sys, &mut run.inputs, &run.plan, t, t_next)?;
        let dt = t_next - t;
        self.indicator.sample(sys)?;
        let eps = self.indicator.evaluate(sys, t, dt);
        // The controller works from the nominal step: a step shortened to
        // hit the stop time or an output point says nothing about the
        // right step size.
        let shortened = base.round(t_next) - base.round(t) < base.round(run.dt);
        let nominal = if shortened { run.dt } else { dt };
        run.dt = run.controller.next_step(nominal, eps);
        self.stats.macro_steps += 1;
        self.stats.iterations += 1;
        Ok(StepReport {
            indicator: eps,
            ..StepReport::simple(t, base.span(t, t_next))
        })
    }

    fn stats(&self) -> MasterStats {
        self.stats
    }

    fn step_fields(&self, _sys: &System) -> StepFields {
        StepFields {
            indicator: true,
            ..StepFields::default()
        }
    }

    fn clone_box(&self) -> Box<dyn Master> {
        Box::new(self.clone())
    }
}
