//! The model as the integrator sees it: x' = f(t, x) and the event
//! indicators g(t, x) of the FMU, each evaluation preceded by the time, the
//! inputs of the master's polynomial at that time and the states (the
//! order fmusim and FMPy use).

use cosim_ode::{OdeProblem, StepAction};

use crate::error::{FmiError, Result};
use crate::ffi::{CompletedStep, DiscreteStatesUpdate, StateHandle};
use crate::instance::Inner;

use super::InputPolynomials;

/// Calls the binding of either version; a lent-out binding (never seen
/// here: the driver lends it to this model) is an error.
macro_rules! raw {
    ($self:ident, $i:ident => $e:expr) => {
        match &mut $self.inner {
            Inner::V2($i) => $e,
            Inner::V3($i) => $e,
            Inner::Lent => Err(FmiError::Lent),
        }
    };
}

/// The FMU instance inside the integrator.
pub(crate) struct FmuOde {
    /// The binding, lent by the instance for each driver call.
    pub(crate) inner: Inner,
    /// The continuous inputs' polynomials of the current step.
    pub(crate) inputs: InputPolynomials,
    n: usize,
    nz: usize,
    needs_completed_step: bool,
    /// Time last set in the instance (NaN: to be set).
    time_set: f64,
    /// `CompletedIntegratorStep` asked for Event Mode.
    step_event: bool,
    /// The FMU asked to end the simulation.
    terminate: bool,
    /// With directional derivatives: the states' and their derivatives'
    /// value references (the Jacobian's knowns and unknowns), a unit seed
    /// and a column; empty without them (difference quotients).
    jacobian: Option<DirectionalJacobian>,
}

/// The Jacobian of the derivatives by the states from the FMU's directional
/// derivatives, one column per call.
pub(crate) struct DirectionalJacobian {
    pub(crate) states: Vec<u32>,
    pub(crate) derivatives: Vec<u32>,
    seed: Vec<f64>,
}

impl DirectionalJacobian {
    pub(crate) fn new(states: Vec<u32>, derivatives: Vec<u32>) -> Self {
        let n = states.len();
        DirectionalJacobian {
            states,
            derivatives,
            seed: vec![0.0; n],
        }
    }
}

/// What the driver needs of the model it integrates beyond `x' = f(t, x)`
/// and the event indicators: the FMI calls of an event and of a restart.
/// One FMU ([`FmuOde`]) or several integrated as one ODE
/// ([`super::coupled::CoupledOde`]).
pub(crate) trait DrivenModel: OdeProblem<Error = FmiError> + 'static {
    /// The name for messages (the instance's, or the group's).
    fn name(&self) -> &str;
    /// Time, inputs at that time and states of the point `(t, x)`.
    fn set_point(&mut self, t: f64, x: &[f64]) -> Result<()>;
    /// (a step event was asked for, the simulation is to end).
    fn take_requests(&mut self) -> (bool, bool);
    fn enter_event_mode(&mut self) -> Result<()>;
    fn enter_continuous_time_mode(&mut self) -> Result<()>;
    /// One round of the event iteration.
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate>;
    fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()>;
    fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()>;
    /// The run starts at `t0`: inputs constant from there until set.
    fn start_inputs(&mut self, t0: f64);
}

impl DrivenModel for FmuOde {
    fn name(&self) -> &str {
        FmuOde::name(self)
    }
    fn set_point(&mut self, t: f64, x: &[f64]) -> Result<()> {
        FmuOde::set_point(self, t, x)
    }
    fn take_requests(&mut self) -> (bool, bool) {
        FmuOde::take_requests(self)
    }
    fn enter_event_mode(&mut self) -> Result<()> {
        FmuOde::enter_event_mode(self)
    }
    fn enter_continuous_time_mode(&mut self) -> Result<()> {
        FmuOde::enter_continuous_time_mode(self)
    }
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        FmuOde::update_discrete_states(self)
    }
    fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        FmuOde::get_continuous_states(self, x)
    }
    fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()> {
        FmuOde::get_nominals(self, nominals)
    }
    fn start_inputs(&mut self, t0: f64) {
        self.inputs.set_values(t0, &[], &[]);
    }
}

impl FmuOde {
    pub(crate) fn new(
        n: usize,
        nz: usize,
        inputs: InputPolynomials,
        needs_completed_step: bool,
        jacobian: Option<DirectionalJacobian>,
    ) -> Self {
        FmuOde {
            inner: Inner::Lent,
            inputs,
            n,
            nz,
            needs_completed_step,
            time_set: f64::NAN,
            step_event: false,
            terminate: false,
            jacobian: jacobian.filter(|j| j.states.len() == n && j.derivatives.len() == n),
        }
    }

    /// The instance name, for messages.
    pub(crate) fn name(&self) -> &str {
        match &self.inner {
            Inner::V2(i) => i.name(),
            Inner::V3(i) => i.name(),
            Inner::Lent => "",
        }
    }

    /// Time, inputs at that time, states.
    pub(crate) fn set_point(&mut self, t: f64, x: &[f64]) -> Result<()> {
        if t != self.time_set {
            raw!(self, i => i.set_time(t))?;
            self.time_set = t;
            if self.inputs.any_varying() {
                let (vrs, values) = self.inputs.at(t);
                match &mut self.inner {
                    Inner::V2(i) => i.set_real(vrs, values),
                    Inner::V3(i) => i.set_float64(vrs, values),
                    Inner::Lent => Err(FmiError::Lent),
                }?;
            }
        }
        if !x.is_empty() {
            raw!(self, i => i.set_continuous_states(x))?;
        }
        Ok(())
    }

    /// The time is set again at the next evaluation.
    pub(crate) fn forget_time(&mut self) {
        self.time_set = f64::NAN;
    }

    /// (a step event was asked for, the FMU asked to terminate).
    pub(crate) fn take_requests(&mut self) -> (bool, bool) {
        (
            std::mem::take(&mut self.step_event),
            std::mem::take(&mut self.terminate),
        )
    }

    pub(crate) fn enter_event_mode(&mut self) -> Result<()> {
        raw!(self, i => i.enter_event_mode())
    }

    pub(crate) fn enter_continuous_time_mode(&mut self) -> Result<()> {
        // The event may have changed what the FMU holds: set the time again
        // before the next evaluation.
        self.time_set = f64::NAN;
        raw!(self, i => i.enter_continuous_time_mode())
    }

    pub(crate) fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        raw!(self, i => i.update_discrete_states())
    }

    pub(crate) fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        if x.is_empty() {
            return Ok(());
        }
        raw!(self, i => i.get_continuous_states(x))
    }

    pub(crate) fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()> {
        raw!(self, i => i.get_nominals_of_continuous_states(nominals))
    }

    pub(crate) fn get_fmu_state(&mut self, reuse: Option<StateHandle>) -> Result<StateHandle> {
        raw!(self, i => i.get_fmu_state(reuse))
    }

    pub(crate) fn set_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        self.time_set = f64::NAN;
        raw!(self, i => i.set_fmu_state(h))
    }

    pub(crate) fn free_fmu_state(&mut self, h: StateHandle) -> Result<()> {
        raw!(self, i => i.free_fmu_state(h))
    }

    /// The first time derivative of outputs `vrs` at `(t, x)`: dy/dt =
    /// dy/dx x' + dy/du u' (the FMU's directional derivatives, with the
    /// derivatives and the inputs' slopes of the master's polynomial as
    /// seeds); `scratch` holds one value per output.
    pub(crate) fn output_derivatives(
        &mut self,
        t: f64,
        x: &[f64],
        dx: &mut [f64],
        vrs: &[u32],
        values: &mut [f64],
        scratch: &mut [f64],
    ) -> Result<()> {
        self.set_point(t, x)?;
        values.fill(0.0);
        if !dx.is_empty() {
            raw!(self, i => i.get_derivatives(dx))?;
            let Some(d) = self.jacobian.as_ref() else {
                return Err(FmiError::InvalidArgument {
                    instance: self.name().to_string(),
                    function: "output derivatives of a Model Exchange FMU",
                    reason:
                        "the model description's states do not match the FMU's number of states"
                            .into(),
                });
            };
            let states = &d.states;
            raw!(self, i => i.get_directional_derivative(vrs, states, dx, values))?;
        }
        if self.inputs.any_varying() {
            let (u, slopes) = self.inputs.slopes_at(t);
            match &mut self.inner {
                Inner::V2(i) => i.get_directional_derivative(vrs, u, slopes, scratch),
                Inner::V3(i) => i.get_directional_derivative(vrs, u, slopes, scratch),
                Inner::Lent => Err(FmiError::Lent),
            }?;
            for (v, s) in values.iter_mut().zip(scratch.iter()) {
                *v += s;
            }
        }
        Ok(())
    }

    /// Column j of df/dx is the directional derivative of the derivatives
    /// with the unit seed e_j on the states (column-major `jac`).
    fn directional_jacobian(&mut self, t: f64, x: &[f64], jac: &mut [f64]) -> Result<()> {
        self.set_point(t, x)?;
        let Some(d) = self.jacobian.as_mut() else {
            return Ok(());
        };
        let n = d.states.len();
        for (j, column) in jac.chunks_exact_mut(n).enumerate() {
            d.seed.fill(0.0);
            d.seed[j] = 1.0;
            match &mut self.inner {
                Inner::V2(i) => {
                    i.get_directional_derivative(&d.derivatives, &d.states, &d.seed, column)
                }
                Inner::V3(i) => {
                    i.get_directional_derivative(&d.derivatives, &d.states, &d.seed, column)
                }
                Inner::Lent => Err(FmiError::Lent),
            }?;
        }
        Ok(())
    }

    /// The derivatives at the point last set.
    pub(crate) fn derivatives(&mut self, dx: &mut [f64]) -> Result<()> {
        if dx.is_empty() {
            return Ok(());
        }
        raw!(self, i => i.get_derivatives(dx))
    }

    /// The event indicators at the point last set.
    pub(crate) fn event_indicators(&mut self, g: &mut [f64]) -> Result<()> {
        if g.is_empty() {
            return Ok(());
        }
        raw!(self, i => i.get_event_indicators(g))
    }

    /// Float64 (FMI 2 Real) values.
    pub(crate) fn get_f64(&mut self, vrs: &[u32], values: &mut [f64]) -> Result<()> {
        match &mut self.inner {
            Inner::V2(i) => i.get_real(vrs, values),
            Inner::V3(i) => i.get_float64(vrs, values),
            Inner::Lent => Err(FmiError::Lent),
        }
    }

    /// Sets Float64 (FMI 2 Real) values.
    pub(crate) fn set_f64(&mut self, vrs: &[u32], values: &[f64]) -> Result<()> {
        match &mut self.inner {
            Inner::V2(i) => i.set_real(vrs, values),
            Inner::V3(i) => i.set_float64(vrs, values),
            Inner::Lent => Err(FmiError::Lent),
        }
    }

    /// `CompletedIntegratorStep` where the FMU needs it, at the point last
    /// set: (enter Event Mode, terminate).
    pub(crate) fn completed_step_at_point(&mut self) -> Result<(bool, bool)> {
        if !self.needs_completed_step {
            return Ok((false, false));
        }
        let done = self.completed_integrator_step()?;
        Ok((done.enter_event_mode, done.terminate_simulation))
    }

    fn completed_integrator_step(&mut self) -> Result<CompletedStep> {
        raw!(self, i => i.completed_integrator_step(true))
    }
}

impl OdeProblem for FmuOde {
    type Error = FmiError;

    fn dimension(&self) -> usize {
        self.n
    }

    fn roots(&self) -> usize {
        self.nz
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<()> {
        self.set_point(t, x)?;
        if dx.is_empty() {
            return Ok(());
        }
        raw!(self, i => i.get_derivatives(dx))
    }

    fn root_functions(&mut self, t: f64, x: &[f64], g: &mut [f64]) -> Result<()> {
        self.set_point(t, x)?;
        if g.is_empty() {
            return Ok(());
        }
        raw!(self, i => i.get_event_indicators(g))
    }

    fn jacobian(&mut self, t: f64, x: &[f64], jac: &mut [f64]) -> Option<Result<()>> {
        self.jacobian.as_ref()?;
        Some(self.directional_jacobian(t, x, jac))
    }

    fn step_completed(&mut self, t: f64, x: &[f64]) -> Result<StepAction> {
        if !self.needs_completed_step {
            return Ok(StepAction::Continue);
        }
        // The FMU is told of the accepted point itself, with its inputs
        // (not the last trial point the solver evaluated).
        self.set_point(t, x)?;
        let done = self.completed_integrator_step()?;
        self.terminate |= done.terminate_simulation;
        self.step_event |= done.enter_event_mode;
        Ok(if done.enter_event_mode || done.terminate_simulation {
            StepAction::Stop
        } else {
            StepAction::Continue
        })
    }
}
