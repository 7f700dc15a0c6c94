//! The Model Exchange side of a model (FMI 2.0 sec. 3, FMI 3.0 sec. 3):
//! what a model declares ([`ModelExchangeSpec`], given to
//! [`ModelSpec::model_exchange`](crate::ModelSpec::model_exchange)) and
//! what it computes ([`ContinuousModel`], reached through
//! [`Model::model_exchange`](crate::Model::model_exchange)).
//!
//! The importer integrates the model: it sets the time and the continuous
//! states x, reads the state derivatives f(t, x, u) and the event
//! indicators z(t, x, u), and calls the model in Event Mode at time events
//! (the next event time the model announced), state events (an event
//! indicator changed sign) and step events (`completedIntegratorStep`
//! asked for one).
//!
//! As for co-simulation, every value lives in [`Values`]: a continuous
//! state is a continuous Real variable (a local or an output, `initial`
//! calculated from the parameters by [`Model::init`](crate::Model::init)),
//! its derivative another one, which [`ContinuousModel::derivatives`]
//! writes; an event indicator is a continuous Real variable that
//! [`Model::outputs`](crate::Model::outputs) computes; discrete states are
//! variables too (a discrete local), so the kit's FMU states hold all of
//! them. The model struct keeps only what it derived from the parameters.

use crate::input::Inputs;
use crate::model::{LogLevel, Values, Vr};

/// A continuous-time state x_i: the variable that holds it, the variable
/// that holds its derivative der(x_i) (the `derivative` attribute of that
/// variable points at the state), its nominal value, and whether events
/// may re-initialize it (`reinit`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContinuousState {
    /// The variable holding x_i (continuous Real, local or output).
    pub state: Vr,
    /// The variable holding der(x_i) (continuous Real, local or output,
    /// `initial` calculated).
    pub derivative: Vr,
    /// `nominal` of the state (> 0): `fmi2GetNominalsOfContinuousStates` /
    /// `fmi3GetNominalsOfContinuousStates`, the importer's absolute
    /// tolerance scale. `None`: not declared, 1.0.
    pub nominal: Option<f64>,
    /// `reinit="true"`: an event may change the state's value
    /// ([`EventUpdate::values_changed`]). FMI 3 lets the importer set a
    /// state without it in Event Mode.
    pub reinit: bool,
}

impl ContinuousState {
    /// The state `state` with derivative `derivative`, nominal 1, not
    /// re-initialized at events.
    pub fn new(state: Vr, derivative: Vr) -> Self {
        ContinuousState {
            state,
            derivative,
            nominal: None,
            reinit: false,
        }
    }

    /// Declares the nominal value (> 0).
    pub fn nominal(mut self, nominal: f64) -> Self {
        self.nominal = Some(nominal);
        self
    }

    /// Declares that events may re-initialize the state (`reinit="true"`).
    pub fn reinit(mut self) -> Self {
        self.reinit = true;
        self
    }

    /// The nominal value the importer gets (1.0 where none is declared).
    pub fn nominal_value(&self) -> f64 {
        self.nominal.unwrap_or(1.0)
    }
}

/// What a model declares for its Model Exchange interface.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelExchangeSpec {
    /// The continuous states, in the order of the state vector
    /// (`fmi2SetContinuousStates`, `<Derivatives>` / `<ContinuousStateDerivative>`).
    pub states: Vec<ContinuousState>,
    /// The event indicators z_j, in order: continuous Real variables that
    /// [`Model::outputs`](crate::Model::outputs) computes (FMI 3
    /// `<EventIndicator valueReference>`; FMI 2 counts them,
    /// `numberOfEventIndicators`). A state event is a change of sign.
    pub event_indicators: Vec<Vr>,
    /// Whether the importer must call `completedIntegratorStep` after every
    /// completed integrator step (FMI 2 `completedIntegratorStepNotNeeded`
    /// is its negation, FMI 3 `needsCompletedIntegratorStep`): a model
    /// with step events ([`ContinuousModel::completed_integrator_step`]).
    pub needs_completed_integrator_step: bool,
    /// Whether [`ContinuousModel::partial_derivative`] gives the partial
    /// derivatives of the state derivatives and outputs (directional
    /// derivatives in Model Exchange, with the build's
    /// `directional_derivatives` capability).
    pub partial_derivatives: bool,
    /// Whether the FMU keeps its Co-Simulation interface beside Model
    /// Exchange (the importer picks one at instantiation).
    pub co_simulation: bool,
}

impl Default for ModelExchangeSpec {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelExchangeSpec {
    /// No states, no event indicators, no step events, no partial
    /// derivatives; Co-Simulation kept.
    pub fn new() -> Self {
        ModelExchangeSpec {
            states: Vec::new(),
            event_indicators: Vec::new(),
            needs_completed_integrator_step: false,
            partial_derivatives: false,
            co_simulation: true,
        }
    }

    /// Adds a continuous state (next in the state vector).
    pub fn state(mut self, state: ContinuousState) -> Self {
        self.states.push(state);
        self
    }

    /// Adds an event indicator (next in the event indicator vector).
    pub fn event_indicator(mut self, vr: Vr) -> Self {
        self.event_indicators.push(vr);
        self
    }

    /// Asks the importer to call `completedIntegratorStep` after every
    /// completed step (the model has step events).
    pub fn needs_completed_integrator_step(mut self) -> Self {
        self.needs_completed_integrator_step = true;
        self
    }

    /// Declares that [`ContinuousModel::partial_derivative`] is implemented.
    pub fn partial_derivatives(mut self) -> Self {
        self.partial_derivatives = true;
        self
    }

    /// Model Exchange only: the FMU has no `<CoSimulation>` interface.
    pub fn without_co_simulation(mut self) -> Self {
        self.co_simulation = false;
        self
    }

    /// The state whose value variable is `vr`.
    pub fn state_of(&self, vr: Vr) -> Option<&ContinuousState> {
        self.states.iter().find(|s| s.state == vr)
    }

    /// The state whose derivative variable is `vr`.
    pub fn derivative_of(&self, vr: Vr) -> Option<&ContinuousState> {
        self.states.iter().find(|s| s.derivative == vr)
    }
}

/// What an event update (`fmi2NewDiscreteStates` /
/// `fmi3UpdateDiscreteStates`) reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EventUpdate {
    /// `newDiscreteStatesNeeded` / `discreteStatesNeedUpdate`: the importer
    /// must call the update again at the same time (another super-dense
    /// instant) before leaving Event Mode.
    pub discrete_states_need_update: bool,
    /// `terminateSimulation`: the model asks to end the simulation.
    pub terminate_simulation: bool,
    /// `valuesOfContinuousStatesChanged`: the event re-initialized a
    /// continuous state (the importer reads the states again and restarts
    /// its integrator). Must be false when no state changed (else the
    /// importer may loop).
    pub values_of_continuous_states_changed: bool,
    /// `nextEventTime` (`nextEventTimeDefined` when `Some`): the time of
    /// the next time event, at which the importer must enter Event Mode.
    pub next_event_time: Option<f64>,
}

/// What `completedIntegratorStep` reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepEvent {
    /// `enterEventMode`: a step event; the importer must enter Event Mode.
    pub enter_event_mode: bool,
    /// `terminateSimulation`: the model asks to end the simulation.
    pub terminate_simulation: bool,
}

/// The equations a Model Exchange model evaluates for the importer's
/// integrator. Values are read from and written to [`Values`] (states,
/// derivatives, discrete states); inputs are read from [`Inputs`] (their
/// values: an importer sets inputs as values in Model Exchange).
pub trait ContinuousModel {
    /// der(x) = f(t, x, u): writes the derivative of every continuous
    /// state into its derivative variable. Called after
    /// [`Model::outputs`](crate::Model::outputs) on the same values, in
    /// every state where values are computed (Initialization, Event and
    /// Continuous-Time Mode, and after co-simulation steps).
    fn derivatives(&mut self, t: f64, v: &mut Values, u: &Inputs);

    /// Event Mode (`fmi2NewDiscreteStates` / `fmi3UpdateDiscreteStates`) at
    /// time `t`: updates the discrete states and re-initializes continuous
    /// states where an event happened (time reached, an indicator crossed,
    /// a step event), and announces the next time event. Called once per
    /// super-dense instant, also right after initialization (the initial
    /// event iteration). The default: nothing happens, no time event.
    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let _ = (t, v, u, log);
        EventUpdate::default()
    }

    /// `completedIntegratorStep` at time `t` with the accepted states: a
    /// model with step events ([`ModelExchangeSpec::needs_completed_integrator_step`])
    /// asks for Event Mode here; it may also record the step (discrete
    /// variables). The default: no step event.
    fn completed_integrator_step(
        &mut self,
        t: f64,
        v: &mut Values,
        u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> StepEvent {
        let _ = (t, v, u, log);
        StepEvent::default()
    }

    /// d(unknown)/d(known) at the current point, for a model that declares
    /// [`ModelExchangeSpec::partial_derivatives`]: `unknown` a state
    /// derivative or an output, `known` a continuous state or an input
    /// that it lists among its dependencies (0 is used for the others
    /// without asking).
    fn partial_derivative(&self, unknown: Vr, known: Vr, t: f64, v: &Values, u: &Inputs) -> f64 {
        let _ = (unknown, known, t, v, u);
        0.0
    }
}
