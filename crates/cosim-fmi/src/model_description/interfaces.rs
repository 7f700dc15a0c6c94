//! The interfaces an FMU declares (`<ModelExchange>`, `<CoSimulation>`,
//! FMI 3 `<ScheduledExecution>`), what Model Exchange needs of the model
//! (its continuous states and event indicators, the default tolerance of
//! the solver that integrates it), and why `cosim` cannot run an FMU with
//! neither.

use serde::Serialize;

use super::{ModelDescription, ModelExchange, Variable};
use crate::ffi::Interface;

/// One interface an FMU declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredInterface {
    /// `ModelExchange`, `CoSimulation` or `ScheduledExecution`, as the
    /// element is named.
    pub interface: &'static str,
    /// Its `modelIdentifier`.
    pub model_identifier: String,
}

/// The default relative tolerance of a Model Exchange FMU's solver
/// ([`ModelDescription::default_relative_tolerance`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DefaultTolerance {
    /// The tolerance.
    pub value: f64,
    /// It is the DefaultExperiment's `tolerance` (else cosim's default).
    pub from_default_experiment: bool,
}

impl DefaultTolerance {
    /// Where it comes from, for messages and comments.
    pub fn origin(&self) -> &'static str {
        if self.from_default_experiment {
            "the FMU's DefaultExperiment tolerance"
        } else {
            "cosim's default; the FMU's DefaultExperiment gives no tolerance"
        }
    }
}

impl ModelDescription {
    /// The interfaces the FMU declares, in the order of the standard
    /// (Model Exchange, Co-Simulation, Scheduled Execution).
    pub fn interfaces(&self) -> Vec<DeclaredInterface> {
        let mut out = Vec::new();
        if let Some(me) = &self.model_exchange {
            out.push(DeclaredInterface {
                interface: "ModelExchange",
                model_identifier: me.model_identifier.clone(),
            });
        }
        if let Some(cs) = &self.co_simulation {
            out.push(DeclaredInterface {
                interface: "CoSimulation",
                model_identifier: cs.model_identifier.clone(),
            });
        }
        if let Some(id) = &self.scheduled_execution {
            out.push(DeclaredInterface {
                interface: "ScheduledExecution",
                model_identifier: id.clone(),
            });
        }
        out
    }

    /// The interface an FMU is instantiated for when nothing says which:
    /// Co-Simulation where it declares it, else Model Exchange, else
    /// Scheduled Execution; `None` when it declares none.
    pub fn default_interface(&self) -> Option<Interface> {
        if self.co_simulation.is_some() {
            Some(Interface::CoSimulation)
        } else if self.model_exchange.is_some() {
            Some(Interface::ModelExchange)
        } else if self.scheduled_execution.is_some() {
            Some(Interface::ScheduledExecution)
        } else {
            None
        }
    }

    /// The FMU declares `interface`.
    pub fn declares(&self, interface: Interface) -> bool {
        match interface {
            Interface::CoSimulation => self.co_simulation.is_some(),
            Interface::ModelExchange => self.model_exchange.is_some(),
            Interface::ScheduledExecution => self.scheduled_execution.is_some(),
        }
    }

    /// The `modelIdentifier` of `interface`, where the FMU declares it.
    pub fn model_identifier(&self, interface: Interface) -> Option<&str> {
        match interface {
            Interface::CoSimulation => self
                .co_simulation
                .as_ref()
                .map(|cs| cs.model_identifier.as_str()),
            Interface::ModelExchange => self
                .model_exchange
                .as_ref()
                .map(|me| me.model_identifier.as_str()),
            Interface::ScheduledExecution => self.scheduled_execution.as_deref(),
        }
    }

    /// The `<ModelExchange>` element: its identifier and capabilities
    /// ([`ModelExchange`]), `None` when the FMU does not declare it.
    pub fn model_exchange_info(&self) -> Option<&ModelExchange> {
        self.model_exchange.as_ref()
    }

    /// The continuous states, in the order of the state vector of Model
    /// Exchange: `(value reference of the state, value reference of its
    /// derivative)` for each FMI 2 `<Derivatives><Unknown>` / FMI 3
    /// `<ContinuousStateDerivative>`, the state being the variable the
    /// derivative's `derivative` attribute names (a derivative without it
    /// is left out).
    pub fn continuous_states(&self) -> Vec<(u32, u32)> {
        self.states_and_derivatives()
            .map(|(state, derivative)| (state.value_reference, derivative.value_reference))
            .collect()
    }

    /// Each continuous state and its derivative, in the order of the
    /// model structure (a derivative without a state left out).
    pub fn states_and_derivatives(&self) -> impl Iterator<Item = (&Variable, &Variable)> {
        self.model_structure.derivatives.iter().filter_map(|u| {
            let derivative = self.variables.get(u.variable)?;
            let state = self.variables.get(derivative.derivative_of?)?;
            Some((state, derivative))
        })
    }

    /// The number of continuous states the model structure declares (FMI
    /// 2 `<Derivatives>`, FMI 3 `<ContinuousStateDerivative>`; an FMI 3
    /// array state counts once here, the FMU's
    /// `fmi3GetNumberOfContinuousStates` counts its elements).
    pub fn number_of_continuous_states(&self) -> usize {
        self.model_structure.derivatives.len()
    }

    /// The nominal value of each continuous state, in the order of
    /// [`ModelDescription::continuous_states`]: its `nominal` (or its
    /// declared type's), 1 where none is given (the standard's default).
    pub fn continuous_state_nominals(&self) -> Vec<f64> {
        self.states_and_derivatives()
            .map(|(state, _)| state.nominal.unwrap_or(1.0))
            .collect()
    }

    /// The number of event indicators: FMI 2 `numberOfEventIndicators`
    /// (read with `<ModelExchange>`), FMI 3 the `<EventIndicator>`
    /// elements of `<ModelStructure>`.
    pub fn number_of_event_indicators(&self) -> usize {
        match self.fmi_version {
            super::FmiVersion::V2 => self
                .model_exchange
                .as_ref()
                .map_or(0, |me| me.number_of_event_indicators),
            super::FmiVersion::V3 => self.model_structure.event_indicators.len(),
        }
    }

    /// The relative tolerance of cosim's solver for this FMU's Model
    /// Exchange interface when the scenario and the command line give
    /// none: the DefaultExperiment `tolerance` where it is in (0, 1),
    /// else [`crate::DEFAULT_RELATIVE_TOLERANCE`] (FMPy's and fmusim's
    /// habit).
    pub fn default_relative_tolerance(&self) -> DefaultTolerance {
        match self
            .default_experiment
            .as_ref()
            .and_then(|d| d.tolerance)
            .filter(|x| *x > 0.0 && *x < 1.0)
        {
            Some(value) => DefaultTolerance {
                value,
                from_default_experiment: true,
            },
            None => DefaultTolerance {
                value: crate::DEFAULT_RELATIVE_TOLERANCE,
                from_default_experiment: false,
            },
        }
    }

    /// Why `cosim` cannot run this FMU, and what would: `None` when it
    /// declares `<CoSimulation>`, `<ModelExchange>` (an integrator of
    /// `cosim` drives it) or `<ScheduledExecution>` (`cosim` activates its
    /// partitions), else (why, what to do).
    pub fn refusal(&self) -> Option<(String, String)> {
        if self.co_simulation.is_some()
            || self.model_exchange.is_some()
            || self.scheduled_execution.is_some()
        {
            return None;
        }
        Some((
            "the FMU declares no interface (no <CoSimulation>, <ModelExchange> or <ScheduledExecution> element; cosim runs each of them)".to_string(),
            "export the model again with one of them".to_string(),
        ))
    }

    /// [`ModelDescription::refusal`] in one sentence, for the FMU at `fmu`.
    pub fn refusal_text(&self, fmu: &str) -> Option<String> {
        self.refusal()
            .map(|(why, what)| format!("{why}; {}", what.replace("<fmu>", fmu)))
    }
}
