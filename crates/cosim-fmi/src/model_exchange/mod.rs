//! A Model Exchange instance driven as a co-simulation subsystem: an
//! integrator of `cosim` (crate `cosim-ode`) advances the model's
//! continuous states over each macro step, handling time, state and step
//! events as the standard defines them, so that every master drives it as
//! it drives a Co-Simulation FMU ([`crate::Instance::do_step`]).
//!
//! The calling sequence (docs/model-exchange.md): after
//! `ExitInitializationMode` the instance is in Event Mode; the event
//! iteration runs (`NewDiscreteStates` / `UpdateDiscreteStates` until the
//! FMU needs no more), then Continuous-Time Mode. Inside a step, every
//! derivative and event-indicator evaluation sets the time, the inputs of
//! the master's polynomial at that time and the states; after each accepted
//! solver step, `CompletedIntegratorStep` where the FMU needs it. At an
//! event: Event Mode, the iteration, Continuous-Time Mode and a restart of
//! the integrator (why after every event: `handle_event`); never a restart
//! at an ordinary communication point.
//!
//! The integrator owns the model it calls (`cosim_ode::Integrator<P>`): the
//! instance's binding is lent to it for each driver call
//! ([`ModelExchangeDriver::lend`]) and taken back after, so the instance
//! reads and writes values as any other between calls.

mod coupled;
mod inputs;
mod ode;

use cosim_ode::{Advance, Integrator, Snapshot, SolveError};

use crate::error::{FmiError, Result};
use crate::ffi::{StateHandle, StepOutcome};
use crate::instance::{Inner, Instance};
use crate::model_description::{
    Causality, CoSimulation, ModelDescription, ModelExchange, Variability, VariableType,
};
pub use coupled::{InternalConnection, MemberShape, StronglyCoupled};
pub(crate) use inputs::InputPolynomials;
use ode::{DirectionalJacobian, DrivenModel, FmuOde};

/// The solver of a Model Exchange subsystem (`[subsystems.solver]`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SolverSettings {
    /// BDF (stiff) or an embedded explicit Runge-Kutta pair.
    pub method: SolverMethod,
    /// Relative tolerance.
    pub relative_tolerance: f64,
    /// Absolute tolerance of a state whose nominal is 1: each state's is
    /// this times its nominal.
    pub absolute_tolerance: f64,
    /// Longest solver step, s.
    pub max_step: Option<f64>,
    /// Highest BDF order.
    pub max_order: Option<u32>,
    /// First step after each restart, s.
    pub initial_step: Option<f64>,
}

/// The integration method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SolverMethod {
    /// Variable-order BDF (orders 1 to 5), Newton with a dense LU.
    Bdf,
    /// Tsitouras 4(5), an embedded explicit Runge-Kutta pair.
    Rk45,
}

impl SolverMethod {
    /// Its name in scenario files and messages.
    pub fn name(self) -> &'static str {
        match self {
            SolverMethod::Bdf => "bdf",
            SolverMethod::Rk45 => "rk45",
        }
    }
}

/// The relative tolerance when neither the scenario nor the FMU's
/// DefaultExperiment gives one (FMPy's).
pub const DEFAULT_RELATIVE_TOLERANCE: f64 = 1e-5;

impl SolverSettings {
    /// BDF at `relative_tolerance`, absolute tolerance the same (scaled by
    /// the nominals), as FMPy sets CVODE.
    pub fn with_tolerance(relative_tolerance: f64) -> Self {
        SolverSettings {
            method: SolverMethod::Bdf,
            relative_tolerance,
            absolute_tolerance: relative_tolerance,
            max_step: None,
            max_order: None,
            initial_step: None,
        }
    }

    /// The integrator's settings for `n` states with `nominals`: each
    /// state's absolute tolerance this one times its nominal (a nominal
    /// that is not positive and finite counts as 1), as FMPy sets CVODE.
    fn for_solver(&self, nominals: &[f64], n: usize) -> cosim_ode::Settings {
        let nominal = |x: f64| if x.is_finite() && x > 0.0 { x } else { 1.0 };
        let scale = nominals
            .iter()
            .map(|&x| nominal(x))
            .fold(f64::INFINITY, f64::min);
        let scale = if scale.is_finite() { scale } else { 1.0 };
        let per_state = (nominals.len() == n && n > 0).then(|| {
            nominals
                .iter()
                .map(|&x| self.absolute_tolerance * nominal(x))
                .collect()
        });
        cosim_ode::Settings {
            method: match self.method {
                SolverMethod::Bdf => cosim_ode::Method::Bdf,
                SolverMethod::Rk45 => cosim_ode::Method::Rk45,
            },
            relative_tolerance: self.relative_tolerance,
            absolute_tolerance: self.absolute_tolerance * scale,
            state_absolute_tolerances: per_state,
            max_step: self.max_step,
            max_order: self.max_order.map(|k| k as usize),
            initial_step: self.initial_step,
        }
    }
}

/// A Model Exchange FMU seen as co-simulation ([`crate::Fmu::as_model_exchange`]).
pub(crate) struct ModelExchangeView {
    /// The model description with the `<CoSimulation>` the driver provides.
    pub(crate) md: ModelDescription,
    pub(crate) settings: SolverSettings,
    /// Integrated by a strongly coupled group ([`StronglyCoupled`]), not by
    /// a driver of its own: its instances have none.
    pub(crate) member: bool,
}

impl ModelExchangeView {
    /// What a member of a strongly coupled group is to the level it is in:
    /// the group steps it, its inputs are held over a step (set before the
    /// group integrates), its state is the FMU's own.
    pub(crate) fn member(md: &ModelDescription, me: &ModelExchange) -> Self {
        let mut view = Self::new(
            md,
            me,
            SolverSettings::with_tolerance(DEFAULT_RELATIVE_TOLERANCE),
        );
        if let Some(cs) = view.md.co_simulation.as_mut() {
            cs.can_interpolate_inputs = false;
            cs.max_output_derivative_order = 0;
            cs.can_get_and_set_fmu_state = me.can_get_and_set_fmu_state;
        }
        view.member = true;
        view
    }

    pub(crate) fn new(md: &ModelDescription, me: &ModelExchange, settings: SolverSettings) -> Self {
        let mut md = md.clone();
        md.co_simulation = Some(CoSimulation {
            model_identifier: me.model_identifier.clone(),
            needs_execution_tool: me.needs_execution_tool,
            // The integrator lands on any communication point.
            can_handle_variable_communication_step_size: true,
            // Inputs are set at each evaluation from their polynomial.
            can_interpolate_inputs: true,
            // dy/dt from the derivatives and the directional derivatives.
            max_output_derivative_order: u32::from(me.provides_directional_derivatives),
            can_be_instantiated_only_once_per_process: me.can_be_instantiated_only_once_per_process,
            can_not_use_memory_management_functions: me.can_not_use_memory_management_functions,
            // The driver saves the states and the solver; the FMU's own
            // state where it can (without it, not across an event).
            can_get_and_set_fmu_state: true,
            can_serialize_fmu_state: false,
            provides_directional_derivatives: me.provides_directional_derivatives,
            has_source_files: me.has_source_files,
            ..CoSimulation::default()
        });
        ModelExchangeView {
            md,
            settings,
            member: false,
        }
    }

    /// The driver of a new instance of the FMU (`md`: its own description).
    pub(crate) fn driver(
        &self,
        md: &ModelDescription,
        instance: &Instance,
    ) -> Result<ModelExchangeDriver> {
        let me = md.model_exchange.as_ref();
        let mut continuous = Vec::new();
        let mut discrete = Vec::new();
        for v in md
            .variables
            .iter()
            .filter(|v| v.causality == Causality::Input)
        {
            if v.variability == Variability::Continuous && v.var_type == VariableType::Float64 {
                continuous.push(v.value_reference);
            } else {
                discrete.push(v.value_reference);
            }
        }
        ModelExchangeDriver::new(
            self.settings,
            ModelShape {
                n: instance.number_of_continuous_states(),
                nz: instance.number_of_event_indicators(),
                nominals: md.continuous_state_nominals(),
                continuous_inputs: continuous,
                discrete_inputs: discrete,
                needs_completed_step: me.is_some_and(|m| m.needs_completed_integrator_step),
                can_save_fmu_state: me.is_some_and(|m| m.can_get_and_set_fmu_state),
                jacobian: me.filter(|m| m.provides_directional_derivatives).map(|_| {
                    let (states, derivatives) = md.continuous_states().into_iter().unzip();
                    DirectionalJacobian::new(states, derivatives)
                }),
            },
        )
        .map_err(|e| match e {
            FmiError::InvalidArgument {
                function, reason, ..
            } => FmiError::InvalidArgument {
                instance: instance.name().to_string(),
                function,
                reason,
            },
            other => other,
        })
    }
}

/// What the model's events did over a run (beside the solver's figures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventStatistics {
    /// Time events (`nextEventTime` reached).
    pub time_events: u64,
    /// State events (an event indicator changed sign).
    pub state_events: u64,
    /// Step events (`CompletedIntegratorStep` asked for Event Mode).
    pub step_events: u64,
    /// Events for discrete inputs set at communication points.
    pub input_events: u64,
    /// `NewDiscreteStates` / `UpdateDiscreteStates` calls.
    pub event_iterations: u64,
    /// Integrator restarts: the start and every event (never an ordinary
    /// communication point).
    pub restarts: u64,
}

/// The whole run's figures of a Model Exchange subsystem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModelExchangeStatistics {
    /// Accepted solver steps.
    pub steps: u64,
    /// Rejected solver steps.
    pub rejected_steps: u64,
    /// Derivative evaluations (difference-quotient Jacobians included).
    pub derivative_evaluations: u64,
    /// Jacobian evaluations.
    pub jacobian_evaluations: u64,
    /// Event indicator evaluations.
    pub event_indicator_evaluations: u64,
    /// Root-finding iterations.
    pub root_finding_iterations: u64,
    /// The events.
    pub events: EventStatistics,
}

impl ModelExchangeStatistics {
    /// The figures of two runs' stretches added up.
    pub fn plus(&self, other: &Self) -> Self {
        let (a, b) = (&self.events, &other.events);
        ModelExchangeStatistics {
            steps: self.steps + other.steps,
            rejected_steps: self.rejected_steps + other.rejected_steps,
            derivative_evaluations: self.derivative_evaluations + other.derivative_evaluations,
            jacobian_evaluations: self.jacobian_evaluations + other.jacobian_evaluations,
            event_indicator_evaluations: self.event_indicator_evaluations
                + other.event_indicator_evaluations,
            root_finding_iterations: self.root_finding_iterations + other.root_finding_iterations,
            events: EventStatistics {
                time_events: a.time_events + b.time_events,
                state_events: a.state_events + b.state_events,
                step_events: a.step_events + b.step_events,
                input_events: a.input_events + b.input_events,
                event_iterations: a.event_iterations + b.event_iterations,
                restarts: a.restarts + b.restarts,
            },
        }
    }
}

/// An event found past a communication point, handled at the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// An event indicator crossed zero.
    State,
    /// `CompletedIntegratorStep` asked for Event Mode.
    Step,
    /// The FMU asked to end the simulation.
    Terminate,
}

/// The state the driver saves beside the FMU's (a rollback restores both).
struct DriverSnapshot {
    integrator: Snapshot,
    time: f64,
    next_event_time: Option<f64>,
    pending: Option<(Pending, f64)>,
    inputs: InputPolynomials,
    /// Events handled before the snapshot: a restore across an event needs
    /// the FMU's own state.
    events: u64,
    fmu: Option<StateHandle>,
}

/// What the driver needs to know of the model.
pub(crate) struct ModelShape {
    /// Continuous states.
    n: usize,
    /// Event indicators.
    nz: usize,
    /// The states' nominals (their absolute tolerances scale with them).
    nominals: Vec<f64>,
    /// Value references of the continuous Float64 inputs.
    continuous_inputs: Vec<u32>,
    /// Value references of the other inputs.
    discrete_inputs: Vec<u32>,
    /// `CompletedIntegratorStep` after every accepted solver step.
    needs_completed_step: bool,
    /// `canGetAndSetFMUstate`.
    can_save_fmu_state: bool,
    /// The solver's Jacobian from the FMU's directional derivatives, where
    /// it provides them.
    jacobian: Option<DirectionalJacobian>,
}

/// Drives one Model Exchange instance ([`FmuOde`]), or several integrated
/// as one ODE ([`coupled::CoupledOde`]).
pub(crate) struct ModelExchangeDriver<M: DrivenModel = FmuOde> {
    integrator: Integrator<M>,
    settings: SolverSettings,
    /// Continuous states and their derivatives (scratch), nominals.
    x: Vec<f64>,
    dx: Vec<f64>,
    /// One value per output whose derivative is asked (scratch).
    scratch: Vec<f64>,
    /// The FMU provides directional derivatives: output derivatives.
    directional: bool,
    nominals: Vec<f64>,
    /// Value references of the discrete inputs, sorted: setting one in
    /// Continuous-Time Mode needs Event Mode.
    discrete_inputs: Vec<u32>,
    /// The bits of the value each discrete input was last set to (`None`:
    /// not known).
    discrete_last: Vec<Option<u64>>,
    time: f64,
    next_event_time: Option<f64>,
    can_save_fmu_state: bool,
    /// A discrete input was set in Event Mode at a communication point:
    /// the event iteration is due before the next step.
    event_pending: bool,
    terminated: bool,
    /// The model has no inputs: the solver steps past communication points
    /// ([`Integrator::advance_over`]).
    step_over: bool,
    /// An event the solver found past the last communication point: its
    /// kind and time.
    pending: Option<(Pending, f64)>,
    /// A value was set since the last step (the solver, stepped past the
    /// point, goes on from the point).
    values_set: bool,
    /// The FMU's stop time, if it was given one.
    stop_time: Option<f64>,
    events: EventStatistics,
    snapshots: Vec<Option<DriverSnapshot>>,
    id: u64,
}

/// Lends the binding to the integrator's model for one driver call and
/// takes it back whatever the outcome.
macro_rules! lent {
    ($driver:ident, $instance:ident, $e:expr) => {{
        $driver.lend(&mut $instance.inner);
        let result = $e;
        $driver.take_back(&mut $instance.inner);
        result
    }};
}
pub(crate) use lent;

impl ModelExchangeDriver<FmuOde> {
    /// A driver for an instance of `shape`.
    pub(crate) fn new(settings: SolverSettings, shape: ModelShape) -> Result<Self> {
        let ModelShape {
            n,
            nz,
            nominals,
            continuous_inputs,
            mut discrete_inputs,
            needs_completed_step,
            can_save_fmu_state,
            jacobian,
        } = shape;
        discrete_inputs.sort_unstable();
        let directional = jacobian.is_some();
        let no_inputs = continuous_inputs.is_empty() && discrete_inputs.is_empty();
        let model = FmuOde::new(
            n,
            nz,
            InputPolynomials::new(continuous_inputs),
            needs_completed_step,
            jacobian,
        );
        let mut driver = Self::with_model(settings, model, &nominals, "[subsystems.solver]")?;
        driver.step_over = no_inputs;
        driver.directional = directional;
        driver.discrete_last = vec![None; discrete_inputs.len()];
        driver.discrete_inputs = discrete_inputs;
        driver.can_save_fmu_state = can_save_fmu_state;
        Ok(driver)
    }

    /// Moves the binding into the integrator's model (`Inner::Lent` left).
    pub(crate) fn lend(&mut self, inner: &mut Inner) {
        let raw = std::mem::replace(inner, Inner::Lent);
        self.integrator.problem_mut().inner = raw;
    }

    /// Moves the binding back.
    pub(crate) fn take_back(&mut self, inner: &mut Inner) {
        *inner = std::mem::replace(&mut self.integrator.problem_mut().inner, Inner::Lent);
    }

    /// Records the values (their bits; `None`: not comparable) about to be
    /// set for `vrs`: (a discrete input among them gets a value other than
    /// the one last set, or one not known: the first, or the first after a
    /// restore; every one of `vrs` is a discrete input).
    pub(crate) fn discrete_inputs_change(
        &mut self,
        vrs: &[u32],
        bits: impl Iterator<Item = Option<u64>>,
    ) -> (bool, bool) {
        let (mut changed, mut all_discrete) = (false, true);
        for (vr, b) in vrs.iter().zip(bits) {
            match self.discrete_inputs.binary_search(vr) {
                Ok(k) => {
                    let last = &mut self.discrete_last[k];
                    changed |= b.is_none() || *last != b;
                    *last = b;
                }
                Err(_) => all_discrete = false,
            }
        }
        (changed, all_discrete)
    }

    /// The stop time the FMU was given (`stopTimeDefined`): the solver
    /// never steps past it.
    pub(crate) fn set_stop_time(&mut self, t_stop: Option<f64>) {
        self.stop_time = t_stop;
    }

    /// A value is about to be set: where the solver stepped past the
    /// communication point, it goes on from the point at the next step.
    #[inline]
    pub(crate) fn note_value_set(&mut self) {
        self.values_set = true;
    }

    /// Whether any of `vrs` is a discrete input.
    pub(crate) fn any_discrete_input(&self, vrs: &[u32]) -> bool {
        !self.discrete_inputs.is_empty()
            && vrs
                .iter()
                .any(|vr| self.discrete_inputs.binary_search(vr).is_ok())
    }

    /// Continuous input values set at the driver's time.
    pub(crate) fn inputs_set(&mut self, vrs: &[u32], values: &[f64]) {
        let t = self.time;
        self.integrator
            .problem_mut()
            .inputs
            .set_values(t, vrs, values);
    }

    /// The `order`-th derivative of continuous inputs at the driver's time.
    pub(crate) fn input_derivatives_set(&mut self, vrs: &[u32], order: i32, values: &[f64]) {
        self.integrator
            .problem_mut()
            .inputs
            .set_derivatives(vrs, order, values);
    }

    /// The `order`-th time derivative of outputs `vrs` at the driver's time
    /// (binding lent): order 1, from the model's derivatives and the FMU's
    /// directional derivatives (the subsystem declares
    /// `maxOutputDerivativeOrder` 1 only where it provides them).
    pub(crate) fn output_derivatives(
        &mut self,
        vrs: &[u32],
        order: i32,
        values: &mut [f64],
    ) -> Result<()> {
        let name = self.integrator.problem().name().to_string();
        let unsupported = |reason: &str| FmiError::NotSupported {
            instance: name.clone(),
            function: "output derivatives of a Model Exchange FMU",
            reason: reason.to_string(),
        };
        if order != 1 {
            return Err(unsupported(
                "only the first derivative is computed (from the model's derivatives)",
            ));
        }
        if !self.directional {
            return Err(unsupported("the FMU provides no directional derivatives"));
        }
        if vrs.len() != values.len() {
            return Err(FmiError::InvalidArgument {
                instance: name,
                function: "output derivatives of a Model Exchange FMU",
                reason: format!("{} value references, {} values", vrs.len(), values.len()),
            });
        }
        // (Event Mode for a discrete input just set: settled first, as the
        // states are set only in Continuous-Time Mode.)
        if self.settle_inputs()? || self.terminated {
            return Err(unsupported(
                "the FMU ended the simulation (terminateSimulation)",
            ));
        }
        self.scratch.resize(vrs.len(), 0.0);
        let t = self.time;
        self.state_at(t)?;
        let mut p = self.integrator.problem_mut();
        p.output_derivatives(t, &self.x, &mut self.dx, vrs, values, &mut self.scratch)
    }

    /// Saves the driver's state, and the FMU's where it can, for a
    /// rollback (binding lent).
    pub(crate) fn save(&mut self, reuse: Option<StateHandle>) -> Result<StateHandle> {
        let slot = match reuse {
            Some(h) => self.slot(h, "fmi2GetFMUstate")?,
            None => {
                self.snapshots.push(None);
                self.snapshots.len() - 1
            }
        };
        let old_fmu = self.snapshots[slot].as_ref().and_then(|s| s.fmu);
        let fmu = if self.can_save_fmu_state {
            Some(self.integrator.problem_mut().get_fmu_state(old_fmu)?)
        } else {
            None
        };
        let inputs = self.integrator.problem().inputs.clone();
        self.snapshots[slot] = Some(DriverSnapshot {
            integrator: self.integrator.snapshot(),
            time: self.time,
            next_event_time: self.next_event_time,
            pending: self.pending,
            inputs,
            events: self.total_events(),
            fmu,
        });
        Ok(StateHandle {
            instance_id: self.id,
            slot,
        })
    }

    /// Restores a state saved by [`ModelExchangeDriver::save`] (binding
    /// lent).
    pub(crate) fn restore(&mut self, h: StateHandle) -> Result<()> {
        let slot = self.slot(h, "fmi2SetFMUstate")?;
        let name = self.integrator.problem().name().to_string();
        let events_now = self.total_events();
        let Some(s) = self.snapshots[slot].as_ref() else {
            return Err(bad_handle(&name, "fmi2SetFMUstate"));
        };
        match s.fmu {
            Some(fmu) => self.integrator.problem_mut().set_fmu_state(fmu)?,
            None if s.events != events_now => {
                return Err(FmiError::NotSupported {
                    instance: name,
                    function: "fmi2SetFMUstate",
                    reason: format!(
                        "a Model Exchange FMU without canGetAndSetFMUstate cannot be taken back across an event (its discrete states are its own): an event happened after t = {}",
                        s.time
                    ),
                });
            }
            None => {}
        }
        let (integrator, time, next_event_time, pending, inputs) = (
            s.integrator.clone(),
            s.time,
            s.next_event_time,
            s.pending,
            s.inputs.clone(),
        );
        self.integrator
            .restore(&integrator)
            .map_err(|e| FmiError::InvalidArgument {
                instance: name,
                function: "fmi2SetFMUstate",
                reason: e.to_string(),
            })?;
        self.time = time;
        self.next_event_time = next_event_time;
        self.pending = pending;
        self.values_set = false;
        self.integrator.problem_mut().inputs = inputs;
        // The FMU holds the inputs of the saved state now.
        self.discrete_last.fill(None);
        self.event_pending = false;
        self.terminated = false;
        self.sync(time)
    }

    /// Frees a saved state (binding lent).
    pub(crate) fn free(&mut self, h: StateHandle) -> Result<()> {
        let slot = self.slot(h, "fmi2FreeFMUstate")?;
        if let Some(fmu) = self.snapshots[slot].take().and_then(|s| s.fmu) {
            self.integrator.problem_mut().free_fmu_state(fmu)?;
        }
        Ok(())
    }

    fn slot(&self, h: StateHandle, function: &'static str) -> Result<usize> {
        if h.instance_id == self.id && h.slot < self.snapshots.len() {
            Ok(h.slot)
        } else {
            Err(bad_handle(self.integrator.problem().name(), function))
        }
    }
}

impl<M: DrivenModel> ModelExchangeDriver<M> {
    /// A driver of `model`, whose states have `nominals` (the absolute
    /// tolerance scales with them); `settings_name` names the settings in
    /// a message about them.
    pub(crate) fn with_model(
        settings: SolverSettings,
        model: M,
        nominals: &[f64],
        settings_name: &'static str,
    ) -> Result<Self> {
        let n = model.dimension();
        let integrator = Integrator::new(settings.for_solver(nominals, n), model).map_err(|e| {
            FmiError::InvalidArgument {
                instance: String::new(),
                function: settings_name,
                reason: e.to_string(),
            }
        })?;
        Ok(ModelExchangeDriver {
            integrator,
            settings,
            x: vec![0.0; n],
            dx: vec![0.0; n],
            scratch: Vec::new(),
            directional: false,
            nominals: vec![1.0; n],
            discrete_inputs: Vec::new(),
            discrete_last: Vec::new(),
            time: 0.0,
            next_event_time: None,
            can_save_fmu_state: false,
            event_pending: false,
            terminated: false,
            step_over: false,
            pending: None,
            values_set: false,
            stop_time: None,
            events: EventStatistics::default(),
            snapshots: Vec::new(),
            id: crate::ffi::next_instance_id(),
        })
    }

    /// The model integrated.
    pub(crate) fn model_mut(&mut self) -> cosim_ode::ProblemMut<'_, M> {
        self.integrator.problem_mut()
    }

    /// The instance was reset: the next initialization starts a new run.
    pub(crate) fn reset_run(&mut self) {
        self.discrete_last.fill(None);
        self.pending = None;
        self.values_set = false;
        self.time = 0.0;
        self.next_event_time = None;
        self.event_pending = false;
        self.terminated = false;
    }

    /// A discrete input is about to be set in Continuous-Time Mode: Event
    /// Mode first (the standard allows it only there), the iteration at the
    /// next step.
    pub(crate) fn enter_event_mode_for_inputs(&mut self) -> Result<()> {
        self.integrator.problem_mut().enter_event_mode()?;
        self.event_pending = true;
        Ok(())
    }

    /// The solver settings.
    pub(crate) fn settings(&self) -> &SolverSettings {
        &self.settings
    }

    /// The whole run's figures.
    pub(crate) fn statistics(&self) -> ModelExchangeStatistics {
        let s = self.integrator.statistics();
        ModelExchangeStatistics {
            steps: s.steps,
            rejected_steps: s.rejected_steps,
            derivative_evaluations: s.rhs_evaluations,
            jacobian_evaluations: s.jacobian_evaluations,
            event_indicator_evaluations: s.root_function_evaluations,
            root_finding_iterations: s.root_finding_iterations,
            events: self.events,
        }
    }

    fn total_events(&self) -> u64 {
        let e = &self.events;
        e.time_events + e.state_events + e.step_events + e.input_events
    }

    /// After `ExitInitializationMode` (the instance is in Event Mode, the
    /// binding lent): the initial event iteration, Continuous-Time Mode,
    /// the integrator started from the initial states at `t0`.
    pub(crate) fn start(&mut self, t0: f64) -> Result<()> {
        self.time = t0;
        self.integrator.problem_mut().start_inputs(t0);
        if self.event_iteration(t0)? {
            return Ok(());
        }
        self.integrator.problem_mut().enter_continuous_time_mode()?;
        self.restart(t0)?;
        // The solver's start evaluated the model at trial states: the
        // instance shows the initial ones again.
        self.sync(t0)
    }

    /// Reads the states and nominals and restarts the integrator at `t`.
    fn restart(&mut self, t: f64) -> Result<()> {
        {
            let mut p = self.integrator.problem_mut();
            p.get_continuous_states(&mut self.x)?;
            if !self.nominals.is_empty() {
                p.get_nominals(&mut self.nominals)?;
            }
        }
        self.events.restarts += 1;
        self.integrator
            .reset(t, &self.x)
            .map_err(|e| solver_error(e, self.integrator.problem().name()))
    }

    /// Iterates `NewDiscreteStates` / `UpdateDiscreteStates` until the FMU
    /// needs no more (Event Mode). True when the FMU asked to end the
    /// simulation. A `nextEventTime` not after the event is an error: it
    /// would never be passed.
    fn event_iteration(&mut self, t: f64) -> Result<bool> {
        let name = self.integrator.problem().name().to_string();
        let integrator = &mut self.integrator;
        let it = crate::events::iterate(&name, t, || {
            integrator.problem_mut().update_discrete_states()
        })?;
        self.events.event_iterations += it.updates as u64;
        self.next_event_time = it.last.next_event_time;
        self.terminated |= it.last.terminate_simulation;
        Ok(it.last.terminate_simulation)
    }

    /// Handles an event at `t` (time, inputs and states of `t` set): Event
    /// Mode, the iteration, Continuous-Time Mode, the integrator restarted.
    ///
    /// Restarted after every event, not only one that changed the states
    /// or their nominals: an event changes the model's right-hand side
    /// (its discrete states), and a multistep method's history then
    /// extrapolates the old one. Measured on `TimeEvents` (a staircase
    /// integrated, exact for any integrator that restarts at its steps):
    /// x(2) off by 1.4e-3 (measured once, more steps and rejections) when
    /// the BDF history runs on, exact to rounding when it restarts (FMPy restarts
    /// CVODE after every event too). Ordinary communication points never
    /// restart it.
    fn handle_event(&mut self, t: f64, enter: bool) -> Result<bool> {
        if enter {
            self.integrator.problem_mut().enter_event_mode()?;
        }
        if self.event_iteration(t)? {
            return Ok(true);
        }
        self.integrator.problem_mut().enter_continuous_time_mode()?;
        self.restart(t)?;
        Ok(false)
    }

    /// Advances the instance (binding lent) from the driver's time to
    /// `t + h`.
    pub(crate) fn step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        if self.settle_inputs()? {
            return Ok(self.terminated_at(self.time));
        }
        if self.terminated {
            return Ok(self.terminated_at(self.time));
        }
        if std::mem::take(&mut self.values_set) && self.integrator.time() > self.time {
            // A value was set at the point the solver had stepped past:
            // it goes on from the point (the instance holds its states).
            self.pending = None;
            let now = self.time;
            self.restart(now)?;
        }
        let t_end = t + h;
        loop {
            let t_now = self.integrator.time();
            if let Some((kind, te)) = self.pending {
                // An event the solver found past the last point.
                if te > t_end {
                    break;
                }
                self.pending = None;
                if kind == Pending::Terminate {
                    return Ok(self.terminated_at(te));
                }
                self.count_event(kind);
                if self.event_at(te)? {
                    return Ok(self.terminated_at(te));
                }
                continue;
            }
            if let Some(te) = self.next_event_time
                && te <= t_now
                && te <= t_end
            {
                self.events.time_events += 1;
                if self.event_at(t_now)? {
                    return Ok(self.terminated_at(t_now));
                }
                continue;
            }
            if t_now >= t_end {
                break;
            }
            let advance = if self.step_over {
                // Nothing the master sets changes the model at `t_end`:
                // steps as long as the tolerance allows, the point
                // interpolated (time events still landed on).
                let stop = match (self.next_event_time, self.stop_time) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                self.integrator.advance_over(t_end, stop)
            } else {
                let stop = match self.next_event_time {
                    Some(te) if te < t_end => te,
                    _ => t_end,
                };
                self.integrator.advance(stop)
            };
            let (step_event, terminate) = self.integrator.problem_mut().take_requests();
            let advance = advance.map_err(|e| solver_error(e, self.integrator.problem().name()))?;
            let reached = self.integrator.time();
            let event = match advance {
                _ if terminate => Some((Pending::Terminate, reached)),
                // (Stepping past points, the solver stays at the end of
                // the step that crossed: the crossing is the root's time.)
                Advance::Root { t, .. } => Some((Pending::State, t)),
                Advance::Stopped { .. } if step_event => Some((Pending::Step, reached)),
                Advance::Stopped { .. } | Advance::Reached => None,
            };
            if event.is_some() {
                // (Past the point: handled by the step that reaches it.)
                self.pending = event;
            }
        }
        // The model at the communication point: its outputs are read now,
        // the next inputs are set at this time.
        self.sync(t_end)?;
        self.time = t_end;
        Ok(StepOutcome::Completed)
    }

    fn count_event(&mut self, kind: Pending) {
        match kind {
            Pending::State => self.events.state_events += 1,
            Pending::Step => self.events.step_events += 1,
            Pending::Terminate => {}
        }
    }

    /// A discrete input set at this communication point left the instance in
    /// Event Mode: the event iteration there, back to Continuous-Time Mode
    /// (the only mode that takes states). True when the FMU asked to end.
    fn settle_inputs(&mut self) -> Result<bool> {
        if !self.event_pending {
            return Ok(false);
        }
        self.event_pending = false;
        self.events.input_events += 1;
        let now = self.time;
        self.handle_event(now, false)
    }

    /// Sets time, inputs and states of the solver's point `t`, then handles
    /// the event there.
    fn event_at(&mut self, t: f64) -> Result<bool> {
        self.sync(t)?;
        self.handle_event(t, true)
    }

    /// The instance at the solver's current point `t`: time, inputs, states.
    fn sync(&mut self, t: f64) -> Result<()> {
        self.state_at(t)?;
        self.integrator.problem_mut().set_point(t, &self.x)
    }

    /// `self.x` = the states at `t`: the solver's, or interpolated in its
    /// last step where it stepped past `t`.
    fn state_at(&mut self, t: f64) -> Result<()> {
        if t == self.integrator.time() {
            self.x.copy_from_slice(self.integrator.state());
            return Ok(());
        }
        self.integrator
            .interpolate(t, &mut self.x)
            .map_err(|e| FmiError::Integration {
                instance: self.integrator.problem().name().to_string(),
                reason: e.to_string(),
            })
    }

    fn terminated_at(&mut self, t: f64) -> StepOutcome {
        self.time = t;
        self.terminated = true;
        StepOutcome::Terminated {
            last_successful_time: t,
        }
    }
}

fn bad_handle(instance: &str, function: &'static str) -> FmiError {
    FmiError::InvalidArgument {
        instance: instance.to_string(),
        function,
        reason: "the state handle does not belong to this instance or was freed".into(),
    }
}

/// The solver's failure as an error of the instance: the model's own
/// error as it is, the solver's with the time it stopped at.
fn solver_error(e: SolveError<FmiError>, instance: &str) -> FmiError {
    match e {
        SolveError::Model { error, .. } => error,
        other => FmiError::Integration {
            instance: instance.to_string(),
            reason: other.to_string(),
        },
    }
}
