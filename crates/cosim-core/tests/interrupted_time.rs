//! An interrupt reported by a subsystem that cannot tell the time (an
//! isolated FMU's host killed by the signal while it loaded or sat idle
//! says `t = NaN`) ends the run at the run's own time: its start before
//! initialization, the time reached after. The summary never says NaN.
#![allow(clippy::unwrap_used, clippy::panic)]

#[macro_use]
mod support;

use cosim_core::CoreError;
use cosim_core::execution::{Execution, RunStatus};
use cosim_core::master::{FixedStep, Scheme};
use cosim_core::subsystem::{Port, Subsystem, SubsystemInfo};
use cosim_core::{System, SystemSpec};
use cosim_fmi::StepOutcome;

/// Interrupted (time unknown) in initialization, or at the step starting
/// at `step_at`.
struct Interrupted {
    info: SubsystemInfo,
    in_initialization: bool,
    step_at: f64,
}

fn interrupted() -> CoreError {
    CoreError::Interrupted { t: f64::NAN }
}

impl Subsystem for Interrupted {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }
    no_op_subsystem_methods!();
    fn enter_initialization(&mut self, _t0: f64, _t_stop: Option<f64>) -> cosim_core::Result<()> {
        match self.in_initialization {
            true => Err(interrupted()),
            false => Ok(()),
        }
    }
    fn set_inputs(&mut self, _values: &[f64]) -> cosim_core::Result<()> {
        Ok(())
    }
    fn do_step(&mut self, t: f64, _h: f64) -> cosim_core::Result<StepOutcome> {
        match t >= self.step_at {
            true => Err(interrupted()),
            false => Ok(StepOutcome::Completed),
        }
    }
    fn get_observed(&mut self, values: &mut [f64]) -> cosim_core::Result<()> {
        values.fill(0.0);
        Ok(())
    }
    fn get_output_derivatives(
        &mut self,
        _order: u32,
        _values: &mut [f64],
    ) -> cosim_core::Result<()> {
        Ok(())
    }
}

/// Runs one such subsystem from t = 2 with steps of 0.25; the time of
/// the error and the summary's message.
fn run(in_initialization: bool, step_at: f64) -> (f64, String, RunStatus) {
    let sub = Interrupted {
        info: SubsystemInfo {
            name: "host".into(),
            inputs: Vec::new(),
            observed: vec![Port {
                name: "y".into(),
                unit: None,
                discrete: false,
            }],
            n_outputs: 1,
            feedthrough: vec![Vec::new()],
            can_interpolate_inputs: false,
            max_output_derivative_order: 0,
            can_get_set_state: false,
            can_serialize_state: false,
            can_handle_variable_step: true,
            provides_directional_derivatives: false,
            has_state: true,
            origin: "test".into(),
        },
        in_initialization,
        step_at,
    };
    let system = System::new(SystemSpec {
        subsystems: vec![Box::new(sub)],
        step_multiple: vec![1],
        connections: Vec::new(),
        bonds: Vec::new(),
        nonfinite: Default::default(),
        threads: 1,
    })
    .unwrap();
    let execution = Execution {
        system,
        master: Box::new(FixedStep::new(0.25, Scheme::Jacobi, 0)),
        observers: Vec::new(),
        t_start: 2.0,
        t_stop: 4.0,
        interrupt: None,
        diagnostics: Vec::new(),
        events: Default::default(),
        real_time: None,
    };
    let (summary, error) = execution.run();
    let Some(CoreError::Interrupted { t }) = error else {
        panic!("not interrupted: {error:?}");
    };
    (t, summary.message.unwrap_or_default(), summary.status)
}

#[test]
fn an_interrupt_without_a_time_is_dated_with_the_runs_time() {
    // Before initialization: the start.
    let (t, message, status) = run(true, f64::INFINITY);
    assert_eq!((t, message.as_str()), (2.0, "interrupted at t = 2"));
    assert_eq!(status, RunStatus::Interrupted);
    // In the step from 3: the time the run reached, the step's start.
    let (t, message, status) = run(false, 3.0);
    assert_eq!((t, message.as_str()), (3.0, "interrupted at t = 3"));
    assert_eq!(status, RunStatus::Interrupted);
}
