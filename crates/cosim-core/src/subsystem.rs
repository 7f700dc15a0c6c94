//! The interface every master drives: a [`Subsystem`] is one FMU instance
//! (or, later, a nested co-simulation or an FMU in another process).
//!
//! A subsystem exposes its coupled real inputs and its observed real values
//! as dense *slots*: the master never sees FMI value references or names on
//! the hot path. Observed slots `0..n_outputs` are FMU outputs (whose time
//! derivatives may be available); the rest are other variables read only for
//! the trace.

use cosim_fmi::model_description::{
    Causality, Dependencies, ModelDescription, Variability, VariableIndex,
};
use cosim_fmi::{
    BoundStep, Fmu, HeldValues, Instance, InstantiateOptions, StateHandle, StepCall, StepOutcome,
    Value,
};
use serde::Serialize;

use crate::error::Result;
use crate::traced_text::TracedTexts;

mod clocks;
use crate::watchdog::{Call, CallTracker, RunMarks};
use clocks::Clocks;

/// An input set by value ([`Subsystem::set_values`]): a variable of the
/// subsystem's model description and a value of its type.
pub type InputValue = (VariableIndex, Value);

/// A port (input or observed slot) of a subsystem, for messages, output
/// headers and the masters' per-slot rules.
#[derive(Debug, Clone, Serialize)]
pub struct Port {
    /// Variable name inside the subsystem.
    pub name: String,
    /// Unit, when the FMU declares one.
    pub unit: Option<String>,
    /// An integer, enumeration or Boolean value carried in the slot as an
    /// exact `f64`: held constant over a step (never extrapolated,
    /// interpolated or differentiated) and left out of error estimates.
    pub discrete: bool,
}

/// A variable whose values fill slots of a subsystem: a scalar fills one,
/// an FMI 3 array one per element, in row-major order (the order of FMI 3
/// get and set calls), so that one value reference covers consecutive
/// slots and a batched call reads or writes whole arrays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SlotVar {
    /// The variable (index into the model description).
    pub variable: VariableIndex,
    /// Its extents (empty: a scalar), with every structural parameter's
    /// value as the run sets it.
    pub shape: Vec<usize>,
}

impl SlotVar {
    /// A scalar variable.
    pub fn scalar(variable: VariableIndex) -> SlotVar {
        SlotVar {
            variable,
            shape: Vec::new(),
        }
    }

    /// Scalar slot variables for `vars`.
    pub fn scalars(vars: &[VariableIndex]) -> Vec<SlotVar> {
        vars.iter().copied().map(SlotVar::scalar).collect()
    }

    /// How many slots it fills (elements; 1 for a scalar).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True for an array with no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name of element `k` (0-based, row-major) of variable `name`:
    /// `name` for a scalar, `name[i]` or `name[i,j]` (1-based, as SSP and
    /// Modelica write them) for an array.
    pub fn element_name(&self, name: &str, k: usize) -> String {
        if self.shape.is_empty() {
            return name.to_string();
        }
        let mut index = vec![0usize; self.shape.len()];
        let mut rest = k;
        for (d, &n) in self.shape.iter().enumerate().rev() {
            let n = n.max(1);
            index[d] = rest % n + 1;
            rest /= n;
        }
        let index: Vec<String> = index.iter().map(usize::to_string).collect();
        format!("{name}[{}]", index.join(","))
    }
}

/// The number of slots of the first `n_vars` of `vars`.
pub fn slot_count(vars: &[SlotVar], n_vars: usize) -> usize {
    vars[..n_vars.min(vars.len())]
        .iter()
        .map(SlotVar::len)
        .sum()
}

/// What a master needs to know about a subsystem.
#[derive(Debug, Clone, Serialize)]
pub struct SubsystemInfo {
    /// Unique name in the system.
    pub name: String,
    /// Coupled real inputs, in slot order.
    pub inputs: Vec<Port>,
    /// Observed real values, in slot order; `0..n_outputs` are outputs.
    pub observed: Vec<Port>,
    /// How many observed slots are outputs.
    pub n_outputs: usize,
    /// For each output slot, the input slots it depends on directly
    /// (feed-through), from `<ModelStructure>`.
    pub feedthrough: Vec<Vec<usize>>,
    /// The subsystem accepts input derivatives (FMI 2 `canInterpolateInputs`).
    pub can_interpolate_inputs: bool,
    /// Highest output derivative order it provides.
    pub max_output_derivative_order: u32,
    /// It can save and restore its state.
    pub can_get_set_state: bool,
    /// It can serialize its state.
    pub can_serialize_state: bool,
    /// It accepts a varying communication step size.
    pub can_handle_variable_step: bool,
    /// It provides directional derivatives.
    pub provides_directional_derivatives: bool,
    /// It has continuous state (so rollback needs state save/restore).
    pub has_state: bool,
    /// Short description of where it comes from (the FMU path), for messages.
    pub origin: String,
}

impl SubsystemInfo {
    /// The information of a subsystem described by `md` (an FMU's model
    /// description, or a nested system's synthetic one), with the given
    /// variables filling the input slots and the observed slots (the first
    /// `n_output_vars` observed variables are outputs). Capabilities come
    /// from `<CoSimulation>` (none when it is absent), feed-through from
    /// `<ModelStructure>` (every element of an output depends on every
    /// element of the inputs it lists).
    pub fn from_model_description(
        md: &ModelDescription,
        name: &str,
        inputs: &[SlotVar],
        observed: &[SlotVar],
        n_output_vars: usize,
        origin: String,
    ) -> SubsystemInfo {
        let cs = md.co_simulation.clone().unwrap_or_default();
        let ports = |vars: &[SlotVar]| -> Vec<Port> {
            vars.iter()
                .flat_map(|sv| {
                    let v = &md.variables[sv.variable];
                    (0..sv.len()).map(move |k| Port {
                        name: sv.element_name(&v.name, k),
                        unit: v.unit.clone(),
                        discrete: !v.var_type.is_float(),
                    })
                })
                .collect()
        };
        // First slot of each input variable.
        let mut input_slots = Vec::with_capacity(inputs.len());
        let mut next = 0;
        for sv in inputs {
            input_slots.push(next..next + sv.len());
            next += sv.len();
        }
        let feedthrough = observed[..n_output_vars.min(observed.len())]
            .iter()
            .flat_map(|o| {
                let deps = md.output_input_dependencies(o.variable);
                let slots: Vec<usize> = inputs
                    .iter()
                    .zip(&input_slots)
                    .filter(|(i, _)| deps.contains(&i.variable))
                    .flat_map(|(_, r)| r.clone())
                    .collect();
                std::iter::repeat_n(slots, o.len())
            })
            .collect();
        // Stateless only when provably algebraic: no state derivatives, no
        // continuous locals, and every output a function of inputs alone.
        let algebraic_output = |u: &cosim_fmi::model_description::Unknown| {
            matches!(&u.dependencies, Dependencies::Listed(d) if !d.is_empty()
                && d.iter().all(|d| md.variables.get(d.variable).is_some_and(|v| v.causality == Causality::Input)))
        };
        let has_state = !md.model_structure.derivatives.is_empty()
            || md.variables.iter().any(|v| {
                v.causality == Causality::Local
                    && v.variability == Variability::Continuous
                    && v.var_type.is_float()
            })
            || md.model_structure.outputs.is_empty()
            || !md.model_structure.outputs.iter().all(algebraic_output);
        let arrays = inputs.iter().chain(observed).any(|sv| !sv.shape.is_empty());
        SubsystemInfo {
            name: name.to_string(),
            inputs: ports(inputs),
            observed: ports(observed),
            n_outputs: slot_count(observed, n_output_vars),
            feedthrough,
            can_interpolate_inputs: cs.can_interpolate_inputs
                || takes_intermediate_inputs(md, inputs),
            // (Output derivatives and directional derivatives of array
            // variables are not used: a subsystem with arrays has none.)
            max_output_derivative_order: if arrays {
                0
            } else {
                cs.max_output_derivative_order
            },
            can_get_set_state: cs.can_get_and_set_fmu_state,
            can_serialize_state: cs.can_serialize_fmu_state,
            can_handle_variable_step: cs.can_handle_variable_communication_step_size,
            provides_directional_derivatives: cs.provides_directional_derivatives && !arrays,
            has_state,
            origin,
        }
    }

    /// True when any output depends directly on any input.
    pub fn has_feedthrough(&self) -> bool {
        self.feedthrough.iter().any(|d| !d.is_empty())
    }
}

/// FMI 3: the FMU provides intermediate update and every coupled float
/// input may be set in it (`intermediateUpdate="true"`), so the inputs'
/// polynomials reach it inside each step, as FMI 2 input derivatives do.
/// An input without the attribute would be held while the others vary;
/// then the subsystem is treated as not interpolating at all.
pub fn takes_intermediate_inputs(md: &ModelDescription, inputs: &[SlotVar]) -> bool {
    let provides = md
        .co_simulation
        .as_ref()
        .is_some_and(|cs| cs.provides_intermediate_update);
    // (Array inputs are set whole, never as polynomials.)
    if inputs.iter().any(|sv| !sv.shape.is_empty()) {
        return false;
    }
    let mut floats = inputs
        .iter()
        .map(|sv| &md.variables[sv.variable])
        .filter(|v| v.var_type.is_float())
        .peekable();
    md.fmi_version == cosim_fmi::FmiVersion::V3
        && provides
        && floats.peek().is_some()
        // (Float32 inputs are set with fmi3SetFloat32, which the
        // intermediate update callback does not call.)
        && floats.all(|v| {
            v.intermediate_update && v.var_type == cosim_fmi::model_description::VariableType::Float64
        })
}

/// A parameter or start value of an FMU subsystem, set during
/// initialization in the state the standard names for it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StartValue {
    /// The variable (index into the FMU's model description).
    pub variable: VariableIndex,
    /// The value, of the variable's type.
    pub value: Value,
    /// Where it was given, for messages: "s.toml:12:5", "--set a.b=1".
    pub origin: String,
}

/// When [`StartValues`] sets a value (FMI 2.0 sec. 4.2.4, FMI 3.0 sec.
/// 2.3.2; the order of FMPy and libcosim).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetIn {
    /// FMI 3 Configuration Mode: structural parameters.
    Configuration,
    /// Instantiated, after `fmi2SetupExperiment` (some exporters reset
    /// parameters there) and before Initialization Mode.
    Instantiated,
    /// Initialization Mode: what only it accepts.
    Initialization,
}

/// The parameters and start values of one FMU instance, sorted by the
/// state in which each is set.
#[derive(Debug, Clone, Default)]
pub struct StartValues {
    values: Vec<(SetIn, u32, String, StartValue)>,
}

impl StartValues {
    /// Sorts `values` by the state the standard allows them in; a variable
    /// that can be set in none (a constant, a calculated parameter, an
    /// output) is an error naming it.
    pub fn new(md: &ModelDescription, subsystem: &str, values: Vec<StartValue>) -> Result<Self> {
        let mut out = Vec::with_capacity(values.len());
        for v in values {
            let var = md.variables.get(v.variable).ok_or_else(|| {
                crate::CoreError::Config(format!(
                    "subsystem '{subsystem}': no variable with index {} ({})",
                    v.variable, v.origin
                ))
            })?;
            let when = if var.settable_in_configuration_mode() {
                SetIn::Configuration
            } else if var.settable_in_instantiated() {
                SetIn::Instantiated
            } else if var.settable_in_initialization_mode() {
                SetIn::Initialization
            } else {
                return Err(crate::CoreError::Config(format!(
                    "subsystem '{subsystem}': {} ({}) cannot be set: it is {} with variability {}{} ({})",
                    var.name,
                    v.value,
                    var.causality,
                    var.variability,
                    var.effective_initial()
                        .map(|i| format!(" and initial {i:?}").to_lowercase())
                        .unwrap_or_default(),
                    v.origin
                )));
            };
            out.push((when, var.value_reference, var.name.clone(), v));
        }
        Ok(StartValues { values: out })
    }

    /// True when some value is set in state `when`.
    fn any_in(&self, when: SetIn) -> bool {
        self.values.iter().any(|(w, ..)| *w == when)
    }

    /// Sets the values that belong in state `when`.
    fn apply(&self, when: SetIn, instance: &mut Instance, subsystem: &str) -> Result<()> {
        for (w, vr, name, v) in &self.values {
            if *w != when {
                continue;
            }
            instance
                .set_value(*vr, &v.value)
                .map_err(|error| crate::CoreError::StartValue {
                    subsystem: subsystem.to_string(),
                    variable: name.clone(),
                    value: v.value.to_string(),
                    origin: v.origin.clone(),
                    error: Box::new(error),
                })?;
        }
        Ok(())
    }
}

/// How far back a master may restore the states of its subsystems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RollbackTo {
    /// To the start of the macro step just made, from which every
    /// subsystem made one `doStep` (fixed-point iteration).
    StepStart,
    /// To an earlier communication point than the start of the last
    /// `doStep` (Richardson's double step; any level above a nested system,
    /// whose inner steps start after the outer step's start).
    Earlier,
}

/// Calls made on a subsystem, for the run summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CallCounters {
    /// `doStep` calls.
    pub do_step: u64,
    /// Batched set-input calls (values and derivatives).
    pub set_inputs: u64,
    /// Batched get calls (observed values and output derivatives).
    pub get_outputs: u64,
    /// State saves.
    pub state_saves: u64,
    /// State restores.
    pub state_restores: u64,
    /// Simulated time covered by `doStep` calls, s (work for subsystems
    /// whose internal solver has a fixed micro step).
    pub stepped_time: f64,
    /// A Model Exchange FMU integrated by `cosim`: its solver's and
    /// events' figures over the whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solver: Option<cosim_fmi::ModelExchangeStatistics>,
}

/// An opaque saved state of a subsystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateId(pub usize);

/// The interface all masters drive.
///
/// Methods take dense slices in slot order (see [`SubsystemInfo`]); their
/// lengths are the number of input or observed slots.
pub trait Subsystem: Send {
    /// Static information.
    fn info(&self) -> &SubsystemInfo;

    /// Sets up the run from `t0` to `t_stop`, sets the parameters and start
    /// values each in the state the standard names for it, and enters
    /// Initialization Mode (FMI 2: `fmi2SetupExperiment`, values,
    /// `fmi2EnterInitializationMode`, values only settable there; FMI 3:
    /// structural parameters in Configuration Mode, values,
    /// `fmi3EnterInitializationMode`, values only settable there).
    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()>;

    /// From now on a saved state may be restored, back to `to` (a master
    /// that rolls back, or a level above that does). Only
    /// [`RollbackTo::Earlier`] makes `doStep` pass
    /// `noSetFMUStatePriorToCurrentPoint = false`: restoring the state at
    /// the start of the step just made is not "prior to the current
    /// point". Without this call `doStep` passes true, as the standard asks
    /// of a master that never restores an earlier state (some FMUs freeze
    /// or keep unbounded history otherwise). Never switched back off.
    fn allow_rollback(&mut self, to: RollbackTo) -> Result<()>;

    /// Leaves initialization mode; the subsystem is ready to step.
    fn exit_initialization(&mut self) -> Result<()>;

    /// Sets the coupled input values (valid from the current communication
    /// point; derivatives previously set are reset to zero).
    fn set_inputs(&mut self, values: &[f64]) -> Result<()>;

    /// Sets the `order`-th time derivative (1..=3) of every input at the
    /// current communication point. Only when `can_interpolate_inputs`.
    fn set_input_derivatives(&mut self, order: u32, values: &[f64]) -> Result<()>;

    /// Sets inputs that are no slots, by value: those whose values an
    /// `f64` cannot carry (Int64 and UInt64 over their whole range,
    /// Binary, String), fed from input files and events
    /// ([`crate::input_file::FileInputs`]). Each is a variable of the
    /// subsystem's model description and a value of its type; it keeps
    /// the value until set again. Valid where [`Subsystem::set_inputs`] is.
    /// Default: refused (a subsystem that is no FMU has no such inputs).
    fn set_values(&mut self, values: &[InputValue]) -> Result<()> {
        let _ = values;
        Err(crate::CoreError::Config(format!(
            "subsystem '{}': inputs set by value (Int64, UInt64, Binary, String) are set on FMUs only",
            self.info().name
        )))
    }

    /// Advances from `t` by `h`.
    fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome>;

    /// FMI 3 Co-Simulation event mode: with `eventModeUsed`, the
    /// subsystem's steps may end at events it asks the importer to handle
    /// ([`StepOutcome::EventHandlingNeeded`]; before the step's end where
    /// `earlyReturnAllowed`), and it is in Event Mode after
    /// [`Subsystem::exit_initialization`]. The system handles its events
    /// ([`crate::system::System::handle_events`]). Default: neither.
    fn event_handling(&self) -> cosim_fmi::EventHandling {
        cosim_fmi::EventHandling::default()
    }

    /// From Step Mode into Event Mode at the current communication point
    /// (`fmi3EnterEventMode`). Only with `eventModeUsed`.
    fn enter_event_mode(&mut self) -> Result<()> {
        Err(no_event_mode(self.info(), "fmi3EnterEventMode"))
    }

    /// In Event Mode: the event iteration at the current communication
    /// point, `fmi3UpdateDiscreteStates` until it no longer says
    /// `discreteStatesNeedUpdate` (with the inputs set before it). Only
    /// with `eventModeUsed`.
    fn update_discrete_states(&mut self) -> Result<cosim_fmi::DiscreteStatesUpdate> {
        Err(no_event_mode(self.info(), "fmi3UpdateDiscreteStates"))
    }

    /// From Event Mode back into Step Mode (`fmi3EnterStepMode`).
    fn enter_step_mode(&mut self) -> Result<()> {
        Err(no_event_mode(self.info(), "fmi3EnterStepMode"))
    }

    /// The next activation of a time-based input Clock (FMI 3), s: the
    /// system enters Event Mode there ([`Subsystem::update_discrete_states`]
    /// activates it). Default: none.
    fn next_clock_tick(&self) -> Option<f64> {
        None
    }

    /// One step with inputs held over it (zero-order hold, the common
    /// case): [`Subsystem::set_inputs`] with `u`, [`Subsystem::do_step`]
    /// from `t` by `h`, and, when the step completed,
    /// [`Subsystem::get_observed_first`] of `n` slots into `y`. The same
    /// calls in the same order; one dispatch instead of three on the
    /// hot path (an FMU overrides it).
    #[inline]
    fn step_held(
        &mut self,
        u: &[f64],
        t: f64,
        h: f64,
        n: usize,
        y: &mut [f64],
    ) -> Result<StepOutcome> {
        step_held_in_calls(self, u, t, h, n, y)
    }

    /// This subsystem as an FMU in this process, for the step primitive to
    /// call [`FmuSubsystem::step_held_direct`] without a dynamic dispatch
    /// (the common case of the hot path). `None` by default: wrappers and
    /// other subsystems step through the trait.
    fn as_fmu(&mut self) -> Option<&mut FmuSubsystem> {
        None
    }

    /// This subsystem as one whose steps another process takes, for runs
    /// of held steps in that process ([`crate::hosted`]). `None` by
    /// default.
    fn as_hosted(&mut self) -> Option<&mut dyn crate::hosted::Hosted> {
        None
    }

    /// Whether [`Subsystem::start_step`] runs the step in the background
    /// (an FMU in another process), so that a Jacobi macro step can start
    /// every such subsystem before waiting for any.
    fn can_start_step(&self) -> bool {
        false
    }

    /// Starts `do_step(t, h)` without waiting for it, when
    /// [`Subsystem::can_start_step`]; [`Subsystem::finish_step`] completes
    /// it and must come before any other call. Returns false when the
    /// subsystem cannot (then use `do_step`).
    fn start_step(&mut self, _t: f64, _h: f64) -> Result<bool> {
        Ok(false)
    }

    /// Sends the steps [`Subsystem::start_step`] started and held back to
    /// send together with other subsystems' (the FMUs of one host process
    /// share a round of steps). A Jacobi macro step calls it once it has
    /// started every due step; [`Subsystem::finish_step`] sends a held
    /// step too, so that nothing waits on this call.
    fn send_started_steps(&mut self) {}

    /// Waits for the step [`Subsystem::start_step`] started.
    fn finish_step(&mut self) -> Result<StepOutcome> {
        Err(crate::CoreError::Config(format!(
            "subsystem '{}': finish_step without a started step",
            self.info().name
        )))
    }

    /// Reads every observed slot.
    fn get_observed(&mut self, values: &mut [f64]) -> Result<()>;

    /// Reads at least the first `n` observed slots into `values[..n]`
    /// (`values` has every slot; the others may be read too, or left as
    /// they are): what a step reads when the system needs only those
    /// ([`crate::System::read_needed_only`]). Default: every slot.
    fn get_observed_first(&mut self, n: usize, values: &mut [f64]) -> Result<()> {
        let _ = n;
        self.get_observed(values)
    }

    /// From now on a step's read ([`Subsystem::get_observed_first`])
    /// needs only the first `n` observed slots (the system says so when it
    /// reads only what it needs: [`crate::System::read_needed_only`]). A
    /// subsystem that reads its values ahead, before it is asked (a host
    /// process reads them right after the step), reads only those.
    /// Default: nothing to do.
    fn reads_after_step(&mut self, n: usize) {
        let _ = n;
    }

    /// A [`Subsystem::get_observed_from`] of `first` comes next, before
    /// anything else is asked of this subsystem: a subsystem in another
    /// process asks for the values now, so that the reads of several go
    /// on together ([`crate::System::read_rest`]), and the read then takes
    /// its answer. Default: nothing to do.
    fn request_observed_from(&mut self, first: usize) {
        let _ = first;
    }

    /// Reads at least the observed slots from `first` on into
    /// `values[first..]` (`values` has every slot; the others may be read
    /// too): the slots a step left unread ([`crate::System::read_rest`]).
    /// Default: every slot.
    fn get_observed_from(&mut self, first: usize, values: &mut [f64]) -> Result<()> {
        let _ = first;
        self.get_observed(values)
    }

    /// Names of the variables traced as text for this subsystem (String,
    /// Binary, Int64 and UInt64: [`crate::traced_text`]; read by
    /// [`Subsystem::get_strings`]; none by default).
    fn traced_strings(&self) -> &[String] {
        &[]
    }

    /// Reads the traced String variables, one per name of
    /// [`Subsystem::traced_strings`]: only when a trace row is written,
    /// never on the stepping path otherwise.
    fn get_strings(&mut self, _values: &mut [String]) -> Result<()> {
        Ok(())
    }

    /// Reads the `order`-th time derivative of the output slots
    /// (`values.len() == n_outputs`).
    fn get_output_derivatives(&mut self, order: u32, values: &mut [f64]) -> Result<()>;

    /// Saves the state, into a new id or overwriting `reuse`.
    fn save_state(&mut self, reuse: Option<StateId>) -> Result<StateId>;

    /// Restores a saved state.
    fn restore_state(&mut self, id: StateId) -> Result<()>;

    /// Frees a saved state.
    fn free_state(&mut self, id: StateId) -> Result<()>;

    /// Ends the run for this subsystem (idempotent).
    fn terminate(&mut self) -> Result<()>;

    /// Calls made so far.
    fn counters(&self) -> CallCounters;

    /// The name of the function that steps this subsystem, for messages
    /// (`fmi2DoStep`, `fmi3DoStep`).
    fn step_function(&self) -> &'static str {
        "doStep"
    }

    /// The last lines the subsystem logged (and forgets them), quoted in
    /// error messages.
    fn take_recent_log(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// The direct feed-through Jacobian `d(outputs)/d(inputs)` at the
    /// current point, row-major (`n_outputs x n_inputs`), where the
    /// subsystem can compute it (FMU directional derivatives). Returns
    /// `false` when it cannot.
    fn feedthrough_jacobian(&mut self, _jacobian: &mut [f64]) -> Result<bool> {
        Ok(false)
    }

    /// The coupled system inside, for a nested system.
    fn as_system(&mut self) -> Option<&mut crate::system::System> {
        None
    }
}

/// The error of an event-mode call on a subsystem without event mode.
fn no_event_mode(info: &SubsystemInfo, function: &str) -> crate::CoreError {
    crate::CoreError::Config(format!(
        "subsystem '{}': {function} called, but it was not instantiated with eventModeUsed = true",
        info.name
    ))
}

/// The communication point a subsystem is at after a step from `t` by `h`
/// that ended with `outcome` (`now` if the step failed): for wrappers that
/// keep the time of the subsystem they wrap.
pub fn time_after_step(outcome: &Result<cosim_fmi::StepOutcome>, t: f64, h: f64, now: f64) -> f64 {
    use cosim_fmi::StepOutcome;
    match outcome {
        Ok(StepOutcome::Completed) => t + h,
        Ok(
            StepOutcome::Terminated {
                last_successful_time,
            }
            | StepOutcome::EarlyReturn {
                last_successful_time,
            }
            | StepOutcome::EventHandlingNeeded {
                last_successful_time,
            }
            | StepOutcome::Discarded {
                last_successful_time,
            },
        ) => *last_successful_time,
        Err(_) => now,
    }
}

/// Whether variables of type `t` can be slots (coupled or traced): every
/// numeric type (FMI 2 Real, Integer, Enumeration; FMI 3 Float32/64, the
/// signed and unsigned integers of 8 to 64 bits, Enumeration) and Boolean;
/// not strings, binaries or clocks.
pub fn is_slot_type(t: cosim_fmi::model_description::VariableType) -> bool {
    use cosim_fmi::model_description::VariableType as T;
    !matches!(t, T::String | T::Binary | T::Clock)
}

/// Whether variables of type `t` can be coupled and traced: the slot types
/// and FMI 3 Clocks, whose slot is 1 at the instant the Clock ticks and 0
/// otherwise (an FMU's Clocks only: [`FmuSubsystem`] sets and reads them
/// as Clocks, docs/events.md).
pub fn is_coupled_type(t: cosim_fmi::model_description::VariableType) -> bool {
    is_slot_type(t) || t == cosim_fmi::model_description::VariableType::Clock
}

/// A subsystem that is one FMU instance.
pub struct FmuSubsystem {
    info: SubsystemInfo,
    instance: Instance,
    /// Value references of the input variables (an array's covers its
    /// elements' consecutive slots).
    input_vrs: Vec<u32>,
    /// Value references of the observed variables, outputs first.
    observed_vrs: Vec<u32>,
    /// How many of `observed_vrs` are outputs.
    n_output_vars: usize,
    /// Inputs by FMI type, when not all are Float64 (else one batched
    /// Float64 call covers them).
    typed_inputs: Option<Box<TypedSlots>>,
    /// Observed slots by FMI type, likewise.
    typed_observed: Option<Box<TypedSlots>>,
    /// How many observed slots, from the first, are scalar Float64
    /// variables: slot `i` below it is `observed_vrs[i]`, read with one
    /// Float64 call whatever the types after it.
    float_prefix: usize,
    states: Vec<Option<StateHandle>>,
    counters: CallCounters,
    /// Parameters and start values, set during `enter_initialization`.
    start_values: StartValues,
    /// `noSetFMUStatePriorToCurrentPoint` for every `doStep`.
    no_set_prior: bool,
    /// The variables traced as text ([`crate::traced_text`]).
    texts: TracedTexts,
    /// Seed and result of one directional derivative (sized at the first
    /// use, so a Jacobian read every macro step allocates nothing).
    seed: Vec<f64>,
    column: Vec<f64>,
    /// Which call is running, for the watchdog of hung calls. Declared
    /// after `instance`, so `fmi*FreeInstance` (the instance's drop) is
    /// still tracked.
    tracker: CallTracker,
    /// FMI 3 Clocks and clocked slots (`None`: none).
    clocks: Option<Box<Clocks>>,
    /// The start time (Clocks are scheduled from it).
    t0: f64,
    /// FMI 3 Scheduled Execution: the instance has no steps; its model
    /// partitions are activated as their Clocks tick, at the current
    /// communication point `now` (docs/events.md).
    scheduled: bool,
    now: f64,
}

/// The slots of one FMI type: value references, slot indices and a
/// scratch buffer of the FMI type, so that each type is one batched call.
#[derive(Debug, Default)]
struct TypedGroup<T> {
    vrs: Vec<u32>,
    slots: Vec<usize>,
    buf: Vec<T>,
}

impl<T: Copy + Default> TypedGroup<T> {
    /// A variable of `n` values (1, or an array's elements) filling slots
    /// `first..first + n`.
    fn push(&mut self, vr: u32, first: usize, n: usize) {
        self.vrs.push(vr);
        self.slots.extend(first..first + n);
        self.buf.extend(std::iter::repeat_n(T::default(), n));
    }

    fn gather(&mut self, values: &[f64], convert: impl Fn(f64) -> T) {
        for (b, &s) in self.buf.iter_mut().zip(&self.slots) {
            *b = convert(values[s]);
        }
    }

    fn scatter(&self, values: &mut [f64], convert: impl Fn(T) -> f64) {
        for (&b, &s) in self.buf.iter().zip(&self.slots) {
            values[s] = convert(b);
        }
    }
}

/// Largest integer magnitude an `f64` slot carries exactly.
const EXACT_INTEGER_LIMIT: u64 = 1 << 53;

/// The slots of a subsystem with variables other than Float64, grouped by
/// the FMI type that reads and writes them (one batched call per type).
/// Every value travels through the masters as an `f64`: exactly for the
/// integer types up to 2^53 and for Float32; a Float32 input fed from a
/// Float64 output is rounded to the nearest `f32`.
#[derive(Debug, Default)]
struct TypedSlots {
    float: TypedGroup<f64>,
    /// The float slots among the outputs (`slot < n_outputs`, Float64 and
    /// Float32), the only ones with time derivatives.
    float_outputs: TypedGroup<f64>,
    float32: TypedGroup<f32>,
    int8: TypedGroup<i8>,
    uint8: TypedGroup<u8>,
    int16: TypedGroup<i16>,
    uint16: TypedGroup<u16>,
    int32: TypedGroup<i32>,
    uint32: TypedGroup<u32>,
    int64: TypedGroup<i64>,
    uint64: TypedGroup<u64>,
    boolean: TypedGroup<bool>,
}

/// Converts, writes one group (nothing when it is empty).
fn set_group<T: Copy + Default>(
    g: &mut TypedGroup<T>,
    values: &[f64],
    convert: impl Fn(f64) -> T,
    set: impl FnOnce(&[u32], &[T]) -> cosim_fmi::Result<()>,
) -> Result<()> {
    if g.vrs.is_empty() {
        return Ok(());
    }
    g.gather(values, convert);
    Ok(set(&g.vrs, &g.buf)?)
}

/// Reads the values of one group in slots `first..end` into its scratch
/// buffer (nothing when none is in the range) and returns the part of the
/// buffer read. A group with arrays (several slots per value reference)
/// is read whole when any of its slots is in the range.
fn get_group<T: Copy + Default>(
    g: &mut TypedGroup<T>,
    (first, end): (usize, usize),
    get: impl FnOnce(&[u32], &mut [T]) -> cosim_fmi::Result<()>,
) -> Result<std::ops::Range<usize>> {
    // (Slots are in increasing order within a group.)
    let lo = g.slots.partition_point(|&s| s < first);
    let hi = g.slots.partition_point(|&s| s < end);
    if lo == hi {
        return Ok(0..0);
    }
    if g.vrs.len() != g.slots.len() {
        get(&g.vrs, &mut g.buf)?;
        return Ok(0..g.buf.len());
    }
    get(&g.vrs[lo..hi], &mut g.buf[lo..hi])?;
    Ok(lo..hi)
}

impl<T: Copy + Default> TypedGroup<T> {
    /// Writes the part `read` of the scratch buffer into its slots.
    fn scatter_part(
        &self,
        read: std::ops::Range<usize>,
        values: &mut [f64],
        convert: impl Fn(T) -> f64,
    ) {
        for (&b, &s) in self.buf[read.clone()].iter().zip(&self.slots[read]) {
            values[s] = convert(b);
        }
    }
}

impl TypedSlots {
    /// Groups `vars` by type; `None` when every one is a Float64 (the fast
    /// path: one batched call). Types the engine does not carry are an
    /// error naming the variable.
    fn new(
        md: &ModelDescription,
        vars: &[SlotVar],
        n_outputs: usize,
        name: &str,
    ) -> Result<Option<Box<TypedSlots>>> {
        use cosim_fmi::model_description::VariableType as T;
        if vars
            .iter()
            .all(|sv| md.variables[sv.variable].var_type == T::Float64)
        {
            return Ok(None);
        }
        TypedSlots::of(md, vars, n_outputs, name, |_| true).map(Some)
    }

    /// The slots of the variables of `vars` that `include` selects,
    /// grouped by type (every slot keeps its index among all of `vars`).
    fn of(
        md: &ModelDescription,
        vars: &[SlotVar],
        n_outputs: usize,
        name: &str,
        include: impl Fn(&cosim_fmi::model_description::Variable) -> bool,
    ) -> Result<Box<TypedSlots>> {
        use cosim_fmi::model_description::VariableType as T;
        let v2 = md.fmi_version == cosim_fmi::FmiVersion::V2;
        let mut t = TypedSlots::default();
        let mut slot = 0;
        for sv in vars {
            let v = &md.variables[sv.variable];
            let vr = v.value_reference;
            let n = sv.len();
            if !include(v) {
                slot += n;
                continue;
            }
            if v.var_type.is_float() && slot < n_outputs {
                t.float_outputs.push(vr, slot, n);
            }
            match v.var_type {
                T::Float64 => t.float.push(vr, slot, n),
                T::Float32 => t.float32.push(vr, slot, n),
                T::Int8 => t.int8.push(vr, slot, n),
                T::UInt8 => t.uint8.push(vr, slot, n),
                T::Int16 => t.int16.push(vr, slot, n),
                T::UInt16 => t.uint16.push(vr, slot, n),
                T::Int32 => t.int32.push(vr, slot, n),
                T::UInt32 => t.uint32.push(vr, slot, n),
                T::Enumeration if v2 => t.int32.push(vr, slot, n),
                T::Int64 | T::Enumeration => t.int64.push(vr, slot, n),
                T::UInt64 => t.uint64.push(vr, slot, n),
                T::Boolean => t.boolean.push(vr, slot, n),
                // (A Clock's slot is the Clocks' to set and fill.)
                T::Clock => {}
                // (is_slot_type lists the types above.)
                other => {
                    return Err(crate::CoreError::Config(format!(
                        "subsystem '{name}': variable '{}' is {other}, which the engine does not couple or trace (numeric and Boolean variables are supported; strings, binaries and clocks are not)",
                        v.name
                    )));
                }
            }
            slot += n;
        }
        Ok(Box::new(t))
    }

    fn set(&mut self, inst: &mut Instance, values: &[f64]) -> Result<()> {
        set_group(&mut self.float, values, |x| x, |v, b| inst.set_f64(v, b))?;
        // Integer values arrive unchanged from outputs of the same type (no
        // gain or offset is allowed on them), so the casts are exact.
        set_group(
            &mut self.float32,
            values,
            |x| x as f32,
            |v, b| inst.set_f32(v, b),
        )?;
        set_group(
            &mut self.int8,
            values,
            |x| x as i8,
            |v, b| inst.set_i8(v, b),
        )?;
        set_group(
            &mut self.uint8,
            values,
            |x| x as u8,
            |v, b| inst.set_u8(v, b),
        )?;
        set_group(
            &mut self.int16,
            values,
            |x| x as i16,
            |v, b| inst.set_i16(v, b),
        )?;
        set_group(
            &mut self.uint16,
            values,
            |x| x as u16,
            |v, b| inst.set_u16(v, b),
        )?;
        set_group(
            &mut self.int32,
            values,
            |x| x as i32,
            |v, b| inst.set_i32(v, b),
        )?;
        set_group(
            &mut self.uint32,
            values,
            |x| x as u32,
            |v, b| inst.set_u32(v, b),
        )?;
        set_group(
            &mut self.int64,
            values,
            |x| x as i64,
            |v, b| inst.set_i64(v, b),
        )?;
        set_group(
            &mut self.uint64,
            values,
            |x| x as u64,
            |v, b| inst.set_u64(v, b),
        )?;
        set_group(
            &mut self.boolean,
            values,
            |x| x != 0.0,
            |v, b| inst.set_bool(v, b),
        )
    }

    /// Reads observed slots `first..end` into `values` (a group with
    /// arrays may read more of its slots: see [`get_group`]).
    fn get(
        &mut self,
        inst: &mut Instance,
        values: &mut [f64],
        range: (usize, usize),
        info: &SubsystemInfo,
    ) -> Result<()> {
        let r = get_group(&mut self.float, range, |v, b| inst.get_f64(v, b))?;
        self.float.scatter_part(r, values, |x| x);
        let r = get_group(&mut self.float32, range, |v, b| inst.get_f32(v, b))?;
        self.float32.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.int8, range, |v, b| inst.get_i8(v, b))?;
        self.int8.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.uint8, range, |v, b| inst.get_u8(v, b))?;
        self.uint8.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.int16, range, |v, b| inst.get_i16(v, b))?;
        self.int16.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.uint16, range, |v, b| inst.get_u16(v, b))?;
        self.uint16.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.int32, range, |v, b| inst.get_i32(v, b))?;
        self.int32.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.uint32, range, |v, b| inst.get_u32(v, b))?;
        self.uint32.scatter_part(r, values, f64::from);
        let r = get_group(&mut self.int64, range, |v, b| inst.get_i64(v, b))?;
        let g = &self.int64;
        if let Some(k) = g.buf[r.clone()]
            .iter()
            .position(|x| x.unsigned_abs() > EXACT_INTEGER_LIMIT)
        {
            let k = r.start + k;
            return Err(integer_out_of_range(info, g.slots[k], &g.buf[k]));
        }
        g.scatter_part(r, values, |x| x as f64);
        let r = get_group(&mut self.uint64, range, |v, b| inst.get_u64(v, b))?;
        let g = &self.uint64;
        if let Some(k) = g.buf[r.clone()]
            .iter()
            .position(|&x| x > EXACT_INTEGER_LIMIT)
        {
            let k = r.start + k;
            return Err(integer_out_of_range(info, g.slots[k], &g.buf[k]));
        }
        g.scatter_part(r, values, |x| x as f64);
        let r = get_group(&mut self.boolean, range, |v, b| inst.get_bool(v, b))?;
        self.boolean
            .scatter_part(r, values, |b| if b { 1.0 } else { 0.0 });
        Ok(())
    }
}

#[cold]
fn integer_out_of_range(
    info: &SubsystemInfo,
    slot: usize,
    value: &dyn std::fmt::Display,
) -> crate::CoreError {
    crate::CoreError::Config(format!(
        "subsystem '{}': '{}' = {value} is beyond +-2^53, the integers the engine carries exactly",
        info.name, info.observed[slot].name
    ))
}

impl std::fmt::Debug for FmuSubsystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FmuSubsystem")
            .field("name", &self.info.name)
            .finish()
    }
}

impl FmuSubsystem {
    /// Wraps an instantiated FMU. `input_vrs` and `observed_vrs` give the
    /// value reference of each input and observed slot (same order as in
    /// `info`, scalar variables only); observed `0..info.n_outputs` must be
    /// outputs.
    pub fn new(
        info: SubsystemInfo,
        instance: Instance,
        input_vrs: Vec<u32>,
        observed_vrs: Vec<u32>,
    ) -> Self {
        let tracker = CallTracker::new(
            &info.name,
            instance.fmi_version() == cosim_fmi::FmiVersion::V3,
        );
        let float_prefix = observed_vrs.len();
        FmuSubsystem {
            n_output_vars: info.n_outputs,
            info,
            instance,
            input_vrs,
            observed_vrs,
            typed_inputs: None,
            typed_observed: None,
            float_prefix,
            states: Vec::new(),
            counters: CallCounters::default(),
            start_values: StartValues::default(),
            no_set_prior: true,
            texts: TracedTexts::default(),
            seed: Vec::new(),
            column: Vec::new(),
            tracker,
            clocks: None,
            t0: 0.0,
            scheduled: false,
            now: 0.0,
        }
    }

    /// The parameters and start values to set during initialization, each
    /// in the state the standard names for it. A variable that can be set
    /// in no state is an error naming it.
    pub fn set_start_values(&mut self, values: Vec<StartValue>) -> Result<()> {
        let md = self.instance.model_description();
        self.start_values = StartValues::new(md, &self.info.name, values)?;
        Ok(())
    }

    /// Traces `vars` as text: String, Binary, Int64 and UInt64 variables
    /// ([`crate::traced_text`]), read only when a trace row is written
    /// ([`Subsystem::get_strings`]).
    pub fn trace_strings(&mut self, vars: &[VariableIndex]) {
        self.texts = TracedTexts::new(self.instance.model_description(), vars);
    }

    /// The value reference of input slot `slot` where it is a scalar
    /// Float64 (FMI 2 Real) variable.
    pub fn float_input_vr(&self, slot: usize) -> Option<u32> {
        let md = self.instance.model_description();
        let vr = *self.input_vrs.get(slot)?;
        (self.typed_inputs.is_none() && is_float64(md, vr)).then_some(vr)
    }

    /// The value reference of observed slot `slot` where it is a scalar
    /// Float64 (FMI 2 Real) variable.
    pub fn float_observed_vr(&self, slot: usize) -> Option<u32> {
        let md = self.instance.model_description();
        let vr = *self.observed_vrs.get(slot)?;
        (self.typed_observed.is_none() && is_float64(md, vr)).then_some(vr)
    }

    /// The FMU instance, for setup work outside the hot path.
    pub fn instance_mut(&mut self) -> &mut Instance {
        &mut self.instance
    }

    /// Instantiates `fmu` as subsystem `name`, with the given variables as
    /// coupled inputs and as observed values (outputs first:
    /// `observed[..n_outputs]` must have causality output). Float64 (Real),
    /// Int32 (Integer), Int64, Enumeration and Boolean variables can be
    /// slots; the others are refused.
    ///
    /// Capabilities and feed-through come from the model description.
    pub fn instantiate(
        fmu: &Fmu,
        name: &str,
        inputs: &[SlotVar],
        observed: &[SlotVar],
        n_output_vars: usize,
        options: &InstantiateOptions,
    ) -> Result<Self> {
        let md = fmu.model_description();
        // (Scheduled Execution where the scenario chose it or it is the
        // FMU's only interface; else Co-Simulation here.)
        let scheduled = fmu.runs_scheduled_execution();
        let scheduled_options;
        let options = if scheduled {
            scheduled_options = InstantiateOptions {
                interface: cosim_fmi::Interface::ScheduledExecution,
                ..options.clone()
            };
            &scheduled_options
        } else {
            fmu.co_simulation()?;
            options
        };
        let info = SubsystemInfo::from_model_description(
            md,
            name,
            inputs,
            observed,
            n_output_vars,
            fmu.source().display().to_string(),
        );
        let vr = |sv: &SlotVar| md.variables[sv.variable].value_reference;
        let input_vrs = inputs.iter().map(vr).collect();
        let observed_vrs = observed.iter().map(vr).collect();
        let typed_inputs = TypedSlots::new(md, inputs, 0, name)?;
        let typed_observed = TypedSlots::new(md, observed, info.n_outputs, name)?;
        let mut instance = fmu.instantiate(name, options)?;
        if md.fmi_version == cosim_fmi::FmiVersion::V3 && takes_intermediate_inputs(md, inputs) {
            // The float inputs, as set_inputs / set_input_derivatives pass them.
            let vrs: Vec<u32> = match &typed_inputs {
                Some(t) => t.float.vrs.clone(),
                None => inputs.iter().map(vr).collect(),
            };
            instance.use_intermediate_inputs(&vrs)?;
        }
        let clocks = Clocks::new(md, inputs, observed, info.n_outputs, name, scheduled)?;
        let clocked = scheduled || clocks.as_ref().is_some_and(|c| c.has_clocked_slots());
        let n_outputs = info.n_outputs;
        let mut sub = FmuSubsystem::new(info, instance, input_vrs, observed_vrs);
        sub.n_output_vars = n_output_vars;
        sub.typed_inputs = typed_inputs;
        sub.typed_observed = typed_observed;
        sub.float_prefix = observed
            .iter()
            .take_while(|sv| {
                sv.shape.is_empty()
                    && md.variables[sv.variable].var_type
                        == cosim_fmi::model_description::VariableType::Float64
            })
            .count();
        if clocked {
            // The steps set and read the variables no Clock clocks (the
            // typed path, whatever their types); the clocked ones are set
            // and read at their Clocks' activations. Scheduled Execution:
            // every one at the activations.
            let unclocked =
                |v: &cosim_fmi::model_description::Variable| !scheduled && v.clocks.is_empty();
            sub.typed_inputs = Some(TypedSlots::of(md, inputs, 0, name, unclocked)?);
            sub.typed_observed = Some(TypedSlots::of(md, observed, n_outputs, name, unclocked)?);
            sub.float_prefix = 0;
        }
        sub.clocks = clocks;
        sub.scheduled = scheduled;
        Ok(sub)
    }

    /// Reads observed slots `first..end` into `values[first..end]` (`values`
    /// has every slot); nothing for an empty range. Typed slots are read
    /// per FMI type, each type's slots in the range in one call. Where
    /// arrays make a value reference fill several slots, more is read: all
    /// float slots (no typed slots), or the whole type's group (typed).
    #[inline(always)]
    fn read_observed(&mut self, first: usize, end: usize, values: &mut [f64]) -> Result<()> {
        if first >= end {
            return Ok(());
        }
        self.tracker.begin(Call::GetOutputs);
        self.counters.get_outputs += 1;
        let result = match &mut self.typed_observed {
            _ if end <= self.float_prefix => self
                .instance
                .get_f64(&self.observed_vrs[first..end], &mut values[first..end])
                .map_err(crate::CoreError::from),
            None if self.observed_vrs.len() == values.len() => self
                .instance
                .get_f64(&self.observed_vrs[first..end], &mut values[first..end])
                .map_err(crate::CoreError::from),
            None => self
                .instance
                .get_f64(&self.observed_vrs, values)
                .map_err(crate::CoreError::from),
            Some(typed) => typed.get(&mut self.instance, values, (first, end), &self.info),
        };
        self.tracker.end();
        if let Some(c) = &self.clocks {
            let now = if self.scheduled {
                self.now
            } else {
                self.instance.time()
            };
            c.fill_observed(values, now);
        }
        result
    }

    /// [`Subsystem::step_held`]: the three calls in one: with Float64 inputs and the slots read all
    /// scalar Float64 (no conversion, one value reference per slot), the
    /// FFI calls follow one another with the watchdog's marks between
    /// them and no dispatch.
    ///
    /// `completed` is set when the step completed and its values were
    /// read: the caller tests that flag, not the result, which it can then
    /// leave unread (the compiler drops the result on that path instead of
    /// building it and testing it again).
    #[inline(always)]
    pub fn step_held_direct(
        &mut self,
        u: &[f64],
        t: f64,
        h: f64,
        n: usize,
        y: &mut [f64],
        completed: &mut bool,
    ) -> Result<StepOutcome> {
        let n = n.min(y.len());
        if !self.steps_held_directly(n) {
            let outcome = self.step_held_typed(u, t, h, n, y);
            *completed = matches!(outcome, Ok(StepOutcome::Completed));
            return outcome;
        }
        self.step_held_bound(u, (t, h), n, y, completed, |_| {})
    }

    /// Whether [`FmuSubsystem::step_held_direct`] of `n` observed slots
    /// makes its three calls directly (Float64 inputs, the slots read all
    /// scalar Float64), as [`FmuSubsystem::step_held_marked`] needs.
    pub fn steps_held_directly(&self, n: usize) -> bool {
        self.typed_inputs.is_none() && n <= self.float_prefix
    }

    /// [`FmuSubsystem::step_held_direct`] where
    /// [`FmuSubsystem::steps_held_directly`], telling `on_call` of each
    /// call before it is made and of the step's completion (a host
    /// process records the call in progress, for the report should the
    /// FMU crash in it).
    #[inline]
    pub fn step_held_marked(
        &mut self,
        u: &[f64],
        (t, h): (f64, f64),
        y: &mut [f64],
        completed: &mut bool,
        on_call: impl FnMut(StepCall),
    ) -> Result<StepOutcome> {
        let n = y.len();
        self.step_held_bound(u, (t, h), n, y, completed, on_call)
    }

    #[inline(always)]
    fn step_held_bound(
        &mut self,
        u: &[f64],
        (t, h): (f64, f64),
        n: usize,
        y: &mut [f64],
        completed: &mut bool,
        mut on_call: impl FnMut(StepCall),
    ) -> Result<StepOutcome> {
        // One sequence number for the step's calls (the watchdog tells
        // them apart by the call).
        let (marks, counters) = (self.tracker.group(), &mut self.counters);
        let result = self.instance.set_step_get_f64(
            &self.input_vrs,
            u,
            t,
            h,
            self.no_set_prior,
            &self.observed_vrs[..n],
            &mut y[..n],
            |call| match call {
                StepCall::SetInputs => {
                    on_call(call);
                    marks.call(Call::SetInputs);
                    counters.set_inputs += 1;
                }
                StepCall::DoStep => {
                    on_call(call);
                    marks.step(t);
                    counters.do_step += 1;
                    counters.stepped_time += h;
                }
                StepCall::GetOutputs => {
                    on_call(call);
                    marks.call(Call::GetOutputs);
                    counters.get_outputs += 1;
                }
                StepCall::Completed => {
                    on_call(call);
                    marks.end();
                    *completed = true;
                }
            },
        );
        // (A flag set on the OK path alone, not a test of the merged
        // result: the compiler takes the OK path straight to the caller's
        // checks.)
        if *completed {
            return Ok(StepOutcome::Completed);
        }
        self.tracker.end();
        result.map_err(crate::CoreError::from)
    }

    /// Its held step bound for a run outside a [`crate::System`] (a host
    /// process's held run, `cosim_isolation`): the instance's
    /// ([`cosim_fmi::Instance::held_step`]) with this FMU's value
    /// references, setting `u` and reading its first `y[0].len()` observed
    /// slots into `y` by turns, no watchdog mark or call count of its own.
    /// `None` where [`FmuSubsystem::steps_held_directly`] does not hold or
    /// the instance gives no bound step (a call log, Model Exchange).
    pub fn bind_held_step<'a>(
        &'a mut self,
        u: &'a mut [f64],
        y: [&'a mut [f64]; 2],
    ) -> Option<cosim_fmi::HeldStep<'a>> {
        let n = y[0].len();
        if !self.steps_held_directly(n) {
            return None;
        }
        self.instance.held_step(HeldValues {
            in_vrs: &self.input_vrs,
            u,
            out_vrs: &self.observed_vrs[..n],
            y,
            no_set_prior: self.no_set_prior,
        })
    }

    /// The FMI version of the instance.
    pub(crate) fn fmi_version(&self) -> cosim_fmi::FmiVersion {
        self.instance.fmi_version()
    }

    /// Whether a held run ([`FmuSubsystem::held_run`]) can read observed
    /// slot `slot` with the coupled values (a Float64 of the slots read
    /// with one call, the inputs untyped).
    pub(crate) fn held_readable(&self, slot: usize) -> bool {
        self.typed_inputs.is_none() && slot < self.float_prefix
    }

    /// This FMU's part in a run of held macro steps
    /// ([`crate::System::step_held_run`]): its held step bound to `u` (the
    /// inputs it sets) and `y` (two buffers for the first `y[0].len()`
    /// observed slots it reads, taking turns: [`HeldFmu::step`]), with its
    /// watchdog marks and call counters. `None` where
    /// [`FmuSubsystem::step_held_direct`] would not take its direct path,
    /// or the instance gives no bound step of `B`'s
    /// ([`cosim_fmi::Instance::held_step`]).
    pub(crate) fn held_run<'a, B: BindHeld>(
        &'a mut self,
        u: &'a mut [f64],
        y: [&'a mut [f64]; 2],
    ) -> Option<HeldFmu<'a, B::Step<'a>>> {
        let n = y[0].len();
        if self.typed_inputs.is_some() || n > self.float_prefix {
            return None;
        }
        let values = HeldValues {
            in_vrs: &self.input_vrs,
            u,
            out_vrs: &self.observed_vrs[..n],
            y,
            no_set_prior: self.no_set_prior,
        };
        let step = B::bind(&mut self.instance, values)?;
        Some(HeldFmu {
            step,
            marks: self.tracker.run_marks(),
            counters: &mut self.counters,
        })
    }

    /// [`FmuSubsystem::step_held_direct`] with typed slots: the three calls
    /// one after the other (out of line: not the hot path's case).
    #[inline(never)]
    fn step_held_typed(
        &mut self,
        u: &[f64],
        t: f64,
        h: f64,
        n: usize,
        y: &mut [f64],
    ) -> Result<StepOutcome> {
        step_held_in_calls(self, u, t, h, n, y)
    }

    fn state_handle(&self, id: StateId) -> Result<StateHandle> {
        self.states.get(id.0).copied().flatten().ok_or_else(|| {
            crate::CoreError::Config(format!(
                "subsystem '{}': unknown or freed state id {}",
                self.info.name, id.0
            ))
        })
    }
}

/// [`Subsystem::step_held`] as its three calls.
#[inline]
fn step_held_in_calls<S: Subsystem + ?Sized>(
    sub: &mut S,
    u: &[f64],
    t: f64,
    h: f64,
    n: usize,
    y: &mut [f64],
) -> Result<StepOutcome> {
    // (No call for no inputs, as when the inputs are set on their own.)
    if !u.is_empty() {
        sub.set_inputs(u)?;
    }
    let outcome = sub.do_step(t, h)?;
    if outcome == StepOutcome::Completed {
        sub.get_observed_first(n, y)?;
    }
    Ok(outcome)
}

/// How a run of held macro steps binds each FMU's calls
/// ([`FmuSubsystem::held_run`]): in either FMI version, or in one where
/// every FMU of the run is of it (no dispatch by version per call).
pub(crate) trait BindHeld {
    /// The bound step.
    type Step<'a>: BoundStep;

    /// [`cosim_fmi::Instance::held_step`], or its one version's.
    fn bind<'a>(instance: &'a mut Instance, values: HeldValues<'a>) -> Option<Self::Step<'a>>;
}

/// The [`BindHeld`] `$name`, whose steps are `$step`, bound by
/// `Instance::$bind`.
macro_rules! bind_held {
    ($(#[$doc:meta])* $name:ident, $step:ty, $bind:ident) => {
        $(#[$doc])*
        pub(crate) struct $name;

        impl BindHeld for $name {
            type Step<'a> = $step;

            fn bind<'a>(instance: &'a mut Instance, values: HeldValues<'a>) -> Option<$step> {
                instance.$bind(values)
            }
        }
    };
}

bind_held!(
    /// FMUs of either FMI version.
    AnyVersion,
    cosim_fmi::HeldStep<'a>,
    held_step
);
bind_held!(
    /// FMI 2.0 FMUs only.
    Fmi2Only,
    cosim_fmi::ffi::fmi2::Fmi2HeldStep<'a>,
    held_step_fmi2
);
bind_held!(
    /// FMI 3.0 FMUs only.
    Fmi3Only,
    cosim_fmi::ffi::fmi3::Fmi3HeldStep<'a>,
    held_step_fmi3
);

/// One FMU in a run of held macro steps ([`FmuSubsystem::held_run`]): the
/// step of [`FmuSubsystem::step_held_direct`], its calls bound once.
pub(crate) struct HeldFmu<'a, S> {
    step: S,
    marks: RunMarks<'a>,
    counters: &'a mut CallCounters,
}

impl<S: BoundStep> HeldFmu<'_, S> {
    /// The inputs the next step sets.
    #[inline(always)]
    pub(crate) fn inputs_mut(&mut self) -> &mut [f64] {
        self.step.inputs_mut()
    }

    /// The values a step on `side` read.
    #[inline(always)]
    pub(crate) fn outputs(&self, side: usize) -> &[f64] {
        self.step.outputs(side)
    }

    /// Both output buffers, `side` 0 first.
    pub(crate) fn output_buffers(&mut self) -> (&mut [f64], &mut [f64]) {
        self.step.output_buffers()
    }

    /// The watchdog's last sequence number for this FMU.
    pub(crate) fn sequence(&self) -> u64 {
        self.marks.sequence()
    }

    /// One step from `t` by `h`, marked as
    /// [`FmuSubsystem::step_held_direct`] marks it, under the watchdog
    /// word `word` (the macro step's sequence number shifted left by 8;
    /// `side` and `since` as [`cosim_fmi::HeldStep::step`] takes them;
    /// the values read each within `limit` in magnitude, as
    /// `check_step_outputs` has them):
    /// `true` when it completed; else [`HeldFmu::failure`] says how it
    /// ended. Its calls and stepped time are counted once the run ends
    /// ([`HeldFmu::count`], [`HeldFmu::add_stepped_time`]).
    #[inline(always)]
    pub(crate) fn step(
        &mut self,
        side: usize,
        t: f64,
        h: f64,
        since: f64,
        word: u64,
        limit: f64,
    ) -> bool {
        let marks = self.marks.group(word);
        self.step.step(
            side,
            t,
            h,
            since,
            |call| match call {
                StepCall::SetInputs => marks.call(Call::SetInputs),
                StepCall::DoStep => marks.step(t),
                StepCall::GetOutputs => marks.call(Call::GetOutputs),
                StepCall::Completed => marks.end(),
            },
            |y| crate::system::within(y, limit),
        )
    }

    /// The last step did not complete for its calls' sake, not for its
    /// values ([`HeldFmu::failure`] says how).
    pub(crate) fn failed(&self) -> bool {
        self.step.failed()
    }

    /// Counts the calls of `steps` completed steps; the last group's
    /// sequence number was `sequence`.
    pub(crate) fn count(&mut self, steps: u64, sequence: u64) {
        let (set, get) = self.step.calls_set_get();
        let c = &mut *self.counters;
        c.do_step += steps;
        c.set_inputs += if set { steps } else { 0 };
        c.get_outputs += if get { steps } else { 0 };
        self.marks.finish(sequence);
    }

    /// The time stepped so far (`CallCounters::stepped_time`).
    pub(crate) fn stepped_time(&self) -> f64 {
        self.counters.stepped_time
    }

    /// Sets the time stepped so far.
    pub(crate) fn set_stepped_time(&mut self, t: f64) {
        self.counters.stepped_time = t;
    }

    /// Adds a step's `h` to the time stepped, as each `doStep` does.
    #[inline(always)]
    pub(crate) fn add_stepped_time(&mut self, h: f64) {
        self.counters.stepped_time += h;
    }

    /// After completed steps, the last one ending at `t`.
    pub(crate) fn reached(&mut self, t: f64) {
        self.step.reached(t);
    }

    /// How the step that did not complete, under sequence number
    /// `sequence`, ended; counts the calls it made, and says whether its
    /// `doStep` was called (its `h` is then stepped time) and whether its
    /// `fmi*Get*` of the outputs was.
    #[cold]
    pub(crate) fn failure(&mut self, sequence: u64) -> (Result<StepOutcome>, bool, bool) {
        self.marks.group(sequence << 8).end();
        self.marks.finish(sequence);
        let (call, outcome) = self.step.take_failure();
        let (set, _) = self.step.calls_set_get();
        let c = &mut *self.counters;
        let stepped = matches!(call, StepCall::DoStep | StepCall::GetOutputs);
        match call {
            StepCall::SetInputs => c.set_inputs += 1,
            StepCall::DoStep | StepCall::GetOutputs => {
                c.set_inputs += u64::from(set);
                c.do_step += 1;
                c.get_outputs += u64::from(call == StepCall::GetOutputs);
            }
            StepCall::Completed => {}
        }
        (
            outcome.map_err(crate::CoreError::from),
            stepped,
            call == StepCall::GetOutputs,
        )
    }
}

impl Drop for FmuSubsystem {
    /// The instance (dropped after this, before the tracker) calls
    /// `fmi*FreeInstance`: watched like any other call.
    fn drop(&mut self) {
        self.tracker.begin(Call::FreeInstance);
    }
}

impl Subsystem for FmuSubsystem {
    fn info(&self) -> &SubsystemInfo {
        &self.info
    }

    fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()> {
        self.tracker.begin(Call::EnterInitialization);
        (self.t0, self.now) = (t0, t0);
        let result = (|| -> Result<()> {
            let name = &self.info.name;
            let inst = &mut self.instance;
            inst.setup_experiment(None, t0, t_stop)?;
            if self.start_values.any_in(SetIn::Configuration) {
                inst.enter_configuration_mode()?;
                self.start_values.apply(SetIn::Configuration, inst, name)?;
                inst.exit_configuration_mode()?;
            }
            self.start_values.apply(SetIn::Instantiated, inst, name)?;
            inst.enter_initialization_mode()?;
            self.start_values.apply(SetIn::Initialization, inst, name)
        })();
        self.tracker.end();
        result
    }

    fn allow_rollback(&mut self, to: RollbackTo) -> Result<()> {
        if to == RollbackTo::Earlier {
            self.no_set_prior = false;
        }
        Ok(())
    }

    fn exit_initialization(&mut self) -> Result<()> {
        self.tracker.begin(Call::ExitInitialization);
        let result = (|| -> Result<()> {
            if let Some(c) = &mut self.clocks {
                // (In Initialization Mode: the Clocks' schedule, and the
                // clocked values there.)
                c.start(&mut self.instance, self.t0)?;
                c.read_initial(&mut self.instance, &self.info)?;
            }
            Ok(self.instance.exit_initialization_mode()?)
        })();
        self.tracker.end();
        result
    }

    fn set_inputs(&mut self, values: &[f64]) -> Result<()> {
        if self.input_vrs.is_empty() {
            return Ok(());
        }
        if let Some(c) = &mut self.clocks {
            c.remember_inputs(values);
        }
        self.tracker.begin(Call::SetInputs);
        self.counters.set_inputs += 1;
        let result = match &mut self.typed_inputs {
            None => self
                .instance
                .set_f64(&self.input_vrs, values)
                .map_err(crate::CoreError::from),
            Some(typed) => typed.set(&mut self.instance, values),
        };
        self.tracker.end();
        result
    }

    fn set_input_derivatives(&mut self, order: u32, values: &[f64]) -> Result<()> {
        self.tracker.begin(Call::SetInputs);
        let result = (|| -> Result<()> {
            let (vrs, values) = match &mut self.typed_inputs {
                None => (&self.input_vrs, values),
                // Discrete inputs have no derivatives: only the floats get them.
                Some(typed) => {
                    typed.float.gather(values, |x| x);
                    (&typed.float.vrs, &typed.float.buf[..])
                }
            };
            if vrs.is_empty() {
                return Ok(());
            }
            self.counters.set_inputs += 1;
            Ok(self
                .instance
                .set_input_derivatives(vrs, order as i32, values)?)
        })();
        self.tracker.end();
        result
    }

    #[inline]
    fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        if self.scheduled {
            // (No step: time passes; the partitions run at their ticks.)
            self.now = t + h;
            return Ok(StepOutcome::Completed);
        }
        self.counters.do_step += 1;
        self.counters.stepped_time += h;
        self.tracker.begin_step(t);
        let outcome = self.instance.do_step(t, h, self.no_set_prior);
        self.tracker.end();
        outcome.map_err(crate::CoreError::from)
    }

    fn step_held(
        &mut self,
        u: &[f64],
        t: f64,
        h: f64,
        n: usize,
        y: &mut [f64],
    ) -> Result<StepOutcome> {
        self.step_held_direct(u, t, h, n, y, &mut false)
    }

    fn event_handling(&self) -> cosim_fmi::EventHandling {
        if self.scheduled {
            // (Its Clocks' ticks are events of the system's, handled in
            // Clock Activation Mode.)
            return cosim_fmi::EventHandling {
                event_mode_used: true,
                early_return_allowed: false,
            };
        }
        self.instance.event_handling()
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        if self.scheduled {
            return Ok(());
        }
        self.tracker.begin(Call::EventMode);
        let result = self.instance.enter_event_mode();
        self.tracker.end();
        Ok(result?)
    }

    fn update_discrete_states(&mut self) -> Result<cosim_fmi::DiscreteStatesUpdate> {
        self.tracker.begin(Call::EventMode);
        if self.scheduled {
            let now = self.now;
            // (Each activation schedules its Clock's next one, and Clock
            // Update Mode the countdown Clocks.)
            let result = match &mut self.clocks {
                Some(c) => c.activate_partitions(&mut self.instance, now, &self.info),
                None => Ok(()),
            };
            self.tracker.end();
            return result.map(|()| cosim_fmi::DiscreteStatesUpdate::default());
        }
        let result = (|| -> Result<cosim_fmi::DiscreteStatesUpdate> {
            let now = self.instance.time();
            if let Some(c) = &mut self.clocks {
                c.activate(&mut self.instance, now, &self.info)?;
            }
            let update = self.instance.event_iteration()?;
            if let Some(c) = &mut self.clocks {
                c.reschedule(&mut self.instance, now)?;
            }
            Ok(update)
        })();
        self.tracker.end();
        result
    }

    fn next_clock_tick(&self) -> Option<f64> {
        self.clocks.as_ref().and_then(|c| c.next_tick())
    }

    fn enter_step_mode(&mut self) -> Result<()> {
        if self.scheduled {
            return Ok(());
        }
        self.tracker.begin(Call::EventMode);
        let result = self.instance.enter_step_mode();
        self.tracker.end();
        Ok(result?)
    }

    fn as_fmu(&mut self) -> Option<&mut FmuSubsystem> {
        Some(self)
    }

    fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
        self.read_observed(0, values.len(), values)
    }

    fn get_observed_first(&mut self, n: usize, values: &mut [f64]) -> Result<()> {
        self.read_observed(0, n.min(values.len()), values)
    }

    fn get_observed_from(&mut self, first: usize, values: &mut [f64]) -> Result<()> {
        self.read_observed(first.min(values.len()), values.len(), values)
    }

    fn traced_strings(&self) -> &[String] {
        self.texts.names()
    }

    fn get_strings(&mut self, values: &mut [String]) -> Result<()> {
        if self.texts.is_empty() {
            return Ok(());
        }
        self.tracker.begin(Call::GetOutputs);
        let result = self.texts.read(&mut self.instance, values);
        self.tracker.end();
        result
    }

    fn set_values(&mut self, values: &[InputValue]) -> Result<()> {
        self.tracker.begin(Call::SetInputs);
        let result = (|| -> Result<()> {
            for (v, value) in values {
                let Some(var) = self.instance.model_description().variables.get(*v) else {
                    return Err(crate::CoreError::Config(format!(
                        "subsystem '{}': no variable #{v} to set",
                        self.info.name
                    )));
                };
                let vr = var.value_reference;
                self.instance.set_value(vr, value)?;
                self.counters.set_inputs += 1;
            }
            Ok(())
        })();
        self.tracker.end();
        result
    }

    fn get_output_derivatives(&mut self, order: u32, values: &mut [f64]) -> Result<()> {
        self.tracker.begin(Call::GetOutputs);
        let result = (|| -> Result<()> {
            let n = self.info.n_outputs;
            if n == 0 {
                return Ok(());
            }
            let Some(typed) = &mut self.typed_observed else {
                self.counters.get_outputs += 1;
                return Ok(self.instance.get_output_derivatives(
                    &self.observed_vrs[..self.n_output_vars],
                    order as i32,
                    values,
                )?);
            };
            // A discrete output is piecewise constant: its derivative is zero.
            values.iter_mut().for_each(|d| *d = 0.0);
            let g = &mut typed.float_outputs;
            if g.vrs.is_empty() {
                return Ok(());
            }
            self.counters.get_outputs += 1;
            self.instance
                .get_output_derivatives(&g.vrs, order as i32, &mut g.buf)?;
            g.scatter(values, |x| x);
            Ok(())
        })();
        self.tracker.end();
        result
    }

    fn save_state(&mut self, reuse: Option<StateId>) -> Result<StateId> {
        self.tracker.begin(Call::State);
        let result = (|| -> Result<StateId> {
            self.counters.state_saves += 1;
            match reuse {
                Some(id) => {
                    let h = self.state_handle(id)?;
                    self.instance.get_state(Some(h))?;
                    Ok(id)
                }
                None => {
                    let h = self.instance.get_state(None)?;
                    self.states.push(Some(h));
                    Ok(StateId(self.states.len() - 1))
                }
            }
        })();
        self.tracker.end();
        result
    }

    fn restore_state(&mut self, id: StateId) -> Result<()> {
        self.tracker.begin(Call::State);
        let result = (|| -> Result<()> {
            self.counters.state_restores += 1;
            let h = self.state_handle(id)?;
            Ok(self.instance.set_state(h)?)
        })();
        self.tracker.end();
        result
    }

    fn free_state(&mut self, id: StateId) -> Result<()> {
        self.tracker.begin(Call::State);
        let result = (|| -> Result<()> {
            let h = self.state_handle(id)?;
            self.instance.free_state(h)?;
            if let Some(slot) = self.states.get_mut(id.0) {
                *slot = None;
            }
            Ok(())
        })();
        self.tracker.end();
        result
    }

    fn terminate(&mut self) -> Result<()> {
        self.tracker.begin(Call::Terminate);
        let result = (|| -> Result<()> { Ok(self.instance.terminate()?) })();
        self.tracker.end();
        result
    }

    fn counters(&self) -> CallCounters {
        CallCounters {
            solver: self.instance.model_exchange_statistics(),
            ..self.counters
        }
    }

    fn step_function(&self) -> &'static str {
        self.instance
            .interface()
            .step_functions(self.instance.fmi_version())
    }

    fn take_recent_log(&mut self) -> Vec<String> {
        self.instance.take_recent_log()
    }

    fn feedthrough_jacobian(&mut self, jacobian: &mut [f64]) -> Result<bool> {
        let (n_out, n_in) = (self.info.n_outputs, self.input_vrs.len());
        // Directional derivatives are defined for float variables only.
        let discrete = self.typed_inputs.is_some() || self.typed_observed.is_some();
        if !self.info.provides_directional_derivatives || discrete || jacobian.len() != n_out * n_in
        {
            return Ok(false);
        }
        self.seed.resize(n_in, 0.0);
        self.column.resize(n_out, 0.0);
        for k in 0..n_in {
            self.seed.iter_mut().for_each(|x| *x = 0.0);
            self.seed[k] = 1.0;
            self.instance.get_directional_derivative(
                &self.observed_vrs[..n_out],
                &self.input_vrs,
                &self.seed,
                &mut self.column,
            )?;
            for (o, v) in self.column.iter().enumerate() {
                jacobian[o * n_in + k] = *v;
            }
        }
        Ok(true)
    }
}

/// Whether `vr` is a scalar Float64 (FMI 2 Real) variable of `md`.
fn is_float64(md: &ModelDescription, vr: u32) -> bool {
    md.variables.iter().any(|v| {
        v.value_reference == vr
            && v.var_type == cosim_fmi::model_description::VariableType::Float64
            && v.dimensions.is_empty()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_elements_are_named_1_based_row_major() {
        let scalar = SlotVar::scalar(4);
        assert_eq!(scalar.len(), 1);
        assert_eq!(scalar.element_name("k", 0), "k");
        let y = SlotVar {
            variable: 1,
            shape: vec![3],
        };
        let names: Vec<String> = (0..y.len()).map(|k| y.element_name("y", k)).collect();
        assert_eq!(names, ["y[1]", "y[2]", "y[3]"]);
        let a = SlotVar {
            variable: 2,
            shape: vec![2, 3],
        };
        let names: Vec<String> = (0..a.len()).map(|k| a.element_name("A", k)).collect();
        assert_eq!(
            names,
            ["A[1,1]", "A[1,2]", "A[1,3]", "A[2,1]", "A[2,2]", "A[2,3]"]
        );
        let empty = SlotVar {
            variable: 3,
            shape: vec![0],
        };
        assert!(empty.is_empty());
        assert_eq!(slot_count(&[scalar, y, a, empty], 3), 1 + 3 + 6);
    }
}
