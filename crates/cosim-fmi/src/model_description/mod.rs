//! The version-neutral model of an FMU's `modelDescription.xml`.
//!
//! FMI 2.0 and FMI 3.0 files are parsed into the same types (see
//! [`parse_model_description`]).
//! Where the versions differ, the field documents how each version maps onto
//! it. Everything a master needs to decide what it may do with an FMU lives
//! here: the capability flags of each interface (Co-Simulation, Model
//! Exchange), the variables with their units, the `<ModelStructure>`
//! dependencies (feed-through), the continuous states and event
//! indicators.

mod interfaces;
mod names;
mod parse;
pub mod units;

pub use interfaces::{DeclaredInterface, DefaultTolerance};
pub use names::{Alias, NameIndex};
pub use parse::{parse_model_description, parse_model_description_file};

use serde::Serialize;

/// Which FMI standard a model description follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum FmiVersion {
    /// FMI 2.0.x
    V2,
    /// FMI 3.0.x
    V3,
}

impl FmiVersion {
    /// The platform directory under `binaries/` for Linux x86-64 in this version.
    pub fn linux64_platform_dir(self) -> &'static str {
        match self {
            FmiVersion::V2 => "linux64",
            FmiVersion::V3 => "x86_64-linux",
        }
    }
}

impl std::fmt::Display for FmiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FmiVersion::V2 => f.write_str("2.0"),
            FmiVersion::V3 => f.write_str("3.0"),
        }
    }
}

/// A parsed `modelDescription.xml`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelDescription {
    /// FMI major version.
    pub fmi_version: FmiVersion,
    /// The `fmiVersion` attribute exactly as written (e.g. "2.0", "3.0.1").
    pub fmi_version_string: String,
    /// `modelName`.
    pub model_name: String,
    /// FMI 2 `guid`, FMI 3 `instantiationToken`: passed back at instantiation.
    pub instantiation_token: String,
    /// `description`.
    pub description: Option<String>,
    /// `author`.
    pub author: Option<String>,
    /// `version` (of the model, not of FMI).
    pub version: Option<String>,
    /// `generationTool`.
    pub generation_tool: Option<String>,
    /// `generationDateAndTime`.
    pub generation_date_and_time: Option<String>,
    /// `variableNamingConvention` ("flat" or "structured").
    pub variable_naming_convention: Option<String>,
    /// The `<CoSimulation>` element; `None` for an FMU `cosim` cannot run
    /// as co-simulation (see [`ModelDescription::refusal`]).
    pub co_simulation: Option<CoSimulation>,
    /// The `<ModelExchange>` element, when the FMU declares it.
    pub model_exchange: Option<ModelExchange>,
    /// The `modelIdentifier` of FMI 3 `<ScheduledExecution>`, when the FMU
    /// declares it (reported, never used).
    pub scheduled_execution: Option<String>,
    /// `<DefaultExperiment>`.
    pub default_experiment: Option<DefaultExperiment>,
    /// `<UnitDefinitions>`.
    pub units: Vec<Unit>,
    /// FMI 2 `<TypeDefinitions><SimpleType>`, FMI 3 `<TypeDefinitions>` children.
    pub type_definitions: Vec<TypeDefinition>,
    /// `<LogCategories>`.
    pub log_categories: Vec<LogCategory>,
    /// `<ModelVariables>` in document order. Indices into this vector are the
    /// canonical way to refer to a variable (see [`VariableIndex`]).
    pub variables: Vec<Variable>,
    /// `<ModelStructure>`, with references resolved to [`VariableIndex`].
    pub model_structure: ModelStructure,
    /// Every name (variables and aliases) to its variable, built on the
    /// first lookup ([`ModelDescription::variable_by_name`]).
    #[serde(skip)]
    pub names: NameIndex,
}

/// Index of a variable in [`ModelDescription::variables`] (0-based).
///
/// FMI 2 `<ModelStructure>` refers to variables by 1-based position and
/// FMI 3 by value reference; both are resolved to this index when parsing.
pub type VariableIndex = usize;

/// The `<CoSimulation>` element: identity of the binary and capability flags.
///
/// Flags absent from the file take the standard's default (`false`, or 0 for
/// `max_output_derivative_order`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CoSimulation {
    /// `modelIdentifier`: the shared library's file name without extension.
    pub model_identifier: String,
    /// `needsExecutionTool`.
    pub needs_execution_tool: bool,
    /// `canHandleVariableCommunicationStepSize`.
    pub can_handle_variable_communication_step_size: bool,
    /// FMI 2 `canInterpolateInputs` (FMI 3 has no such flag: always `false`).
    pub can_interpolate_inputs: bool,
    /// `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
    /// FMI 2 `canRunAsynchronuously` (sic).
    pub can_run_asynchronuously: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub can_be_instantiated_only_once_per_process: bool,
    /// FMI 2 `canNotUseMemoryManagementFunctions`.
    pub can_not_use_memory_management_functions: bool,
    /// `canGetAndSetFMUstate` (FMI 2) / `canGetAndSetFMUState` (FMI 3).
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUstate` (FMI 2) / `canSerializeFMUState` (FMI 3).
    pub can_serialize_fmu_state: bool,
    /// FMI 2 `providesDirectionalDerivative`, FMI 3 `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
    /// FMI 3 `providesAdjointDerivatives`.
    pub provides_adjoint_derivatives: bool,
    /// FMI 3 `providesIntermediateUpdate`.
    pub provides_intermediate_update: bool,
    /// FMI 3 `canReturnEarlyAfterIntermediateUpdate`.
    pub can_return_early_after_intermediate_update: bool,
    /// FMI 3 `mightReturnEarlyFromDoStep`.
    pub might_return_early_from_do_step: bool,
    /// FMI 3 `hasEventMode`.
    pub has_event_mode: bool,
    /// FMI 3 `providesEvaluateDiscreteStates`.
    pub provides_evaluate_discrete_states: bool,
    /// FMI 3 `fixedInternalStepSize`.
    pub fixed_internal_step_size: Option<f64>,
    /// FMI 3 `recommendedIntermediateInputSmoothness`.
    pub recommended_intermediate_input_smoothness: Option<i32>,
    /// `<SourceFiles>` listed (FMI 2) or present (FMI 3 `sources/`): the FMU
    /// could be compiled; `cosim` only loads binaries.
    pub has_source_files: bool,
}

/// The `<ModelExchange>` element: identity of the binary and capability
/// flags. Flags absent from the file take the standard's default.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelExchange {
    /// `modelIdentifier`: the shared library's file name without extension
    /// (it may differ from `<CoSimulation>`'s).
    pub model_identifier: String,
    /// `needsExecutionTool`.
    pub needs_execution_tool: bool,
    /// `fmi*CompletedIntegratorStep` must be called after every accepted
    /// step of the integrator: FMI 2 `completedIntegratorStepNotNeeded`
    /// false (its default), FMI 3 `needsCompletedIntegratorStep` true
    /// (default false).
    pub needs_completed_integrator_step: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub can_be_instantiated_only_once_per_process: bool,
    /// FMI 2 `canNotUseMemoryManagementFunctions`.
    pub can_not_use_memory_management_functions: bool,
    /// `canGetAndSetFMUstate` (FMI 2) / `canGetAndSetFMUState` (FMI 3).
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUstate` (FMI 2) / `canSerializeFMUState` (FMI 3).
    pub can_serialize_fmu_state: bool,
    /// FMI 2 `providesDirectionalDerivative`, FMI 3 `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
    /// FMI 3 `providesAdjointDerivatives`.
    pub provides_adjoint_derivatives: bool,
    /// FMI 3 `providesPerElementDependencies`.
    pub provides_per_element_dependencies: bool,
    /// FMI 3 `providesEvaluateDiscreteStates`.
    pub provides_evaluate_discrete_states: bool,
    /// The number of event indicators: FMI 2 the `numberOfEventIndicators`
    /// attribute of `<fmiModelDescription>`, FMI 3 the `<EventIndicator>`
    /// elements of `<ModelStructure>`.
    pub number_of_event_indicators: usize,
    /// `<SourceFiles>` listed (FMI 2) or present (FMI 3 `sources/`): the FMU
    /// could be compiled; `cosim` only loads binaries.
    pub has_source_files: bool,
}

/// `<DefaultExperiment>`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DefaultExperiment {
    /// `startTime`.
    pub start_time: Option<f64>,
    /// `stopTime`.
    pub stop_time: Option<f64>,
    /// `tolerance`.
    pub tolerance: Option<f64>,
    /// `stepSize`.
    pub step_size: Option<f64>,
}

/// A `<Unit>` of `<UnitDefinitions>`.
#[derive(Debug, Clone, Serialize)]
pub struct Unit {
    /// Unit name as referenced by variables (`unit="N"`).
    pub name: String,
    /// `<BaseUnit>`: the SI dimension and conversion, if given.
    pub base_unit: Option<BaseUnit>,
    /// `<DisplayUnit>` entries (names only are needed by `cosim`).
    pub display_units: Vec<String>,
}

/// The SI exponents and affine conversion of a unit:
/// `value_SI = factor * value + offset`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BaseUnit {
    /// Exponent of kilogram.
    pub kg: i32,
    /// Exponent of metre.
    pub m: i32,
    /// Exponent of second.
    pub s: i32,
    /// Exponent of ampere.
    pub a: i32,
    /// Exponent of kelvin.
    pub k: i32,
    /// Exponent of mole.
    pub mol: i32,
    /// Exponent of candela.
    pub cd: i32,
    /// Exponent of radian.
    pub rad: i32,
    /// Multiplicative factor to SI.
    pub factor: f64,
    /// Additive offset to SI.
    pub offset: f64,
}

impl Default for BaseUnit {
    fn default() -> Self {
        BaseUnit {
            kg: 0,
            m: 0,
            s: 0,
            a: 0,
            k: 0,
            mol: 0,
            cd: 0,
            rad: 0,
            factor: 1.0,
            offset: 0.0,
        }
    }
}

/// A type definition (FMI 2 `<SimpleType>`, FMI 3 `<Float64Type>` etc.).
#[derive(Debug, Clone, Serialize)]
pub struct TypeDefinition {
    /// `name`, referenced by a variable's `declaredType`.
    pub name: String,
    /// The base type.
    pub base_type: VariableType,
    /// `quantity`.
    pub quantity: Option<String>,
    /// `unit`.
    pub unit: Option<String>,
    /// `displayUnit`.
    pub display_unit: Option<String>,
    /// `min`.
    pub min: Option<f64>,
    /// `max`.
    pub max: Option<f64>,
    /// `nominal`.
    pub nominal: Option<f64>,
    /// An enumeration's `<Item>`s: name and value, in order (empty for
    /// other types).
    pub items: Vec<(String, i64)>,
    /// A `<ClockType>`'s Clock attributes (`None` for other types).
    pub clock: Option<ClockAttributes>,
}

/// A `<Category>` of `<LogCategories>`.
#[derive(Debug, Clone, Serialize)]
pub struct LogCategory {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
}

/// The data type of a variable. FMI 2 `Real` is [`VariableType::Float64`],
/// `Integer` is [`VariableType::Int32`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum VariableType {
    /// FMI 2 `Real`, FMI 3 `Float64`.
    Float64,
    /// FMI 3 `Float32`.
    Float32,
    /// FMI 3 `Int8`.
    Int8,
    /// FMI 3 `UInt8`.
    UInt8,
    /// FMI 3 `Int16`.
    Int16,
    /// FMI 3 `UInt16`.
    UInt16,
    /// FMI 2 `Integer`, FMI 3 `Int32`.
    Int32,
    /// FMI 3 `UInt32`.
    UInt32,
    /// FMI 3 `Int64`.
    Int64,
    /// FMI 3 `UInt64`.
    UInt64,
    /// `Boolean`.
    Boolean,
    /// `String`.
    String,
    /// FMI 3 `Binary`.
    Binary,
    /// `Enumeration` (FMI 2: 32-bit, FMI 3: 64-bit integer values).
    Enumeration,
    /// FMI 3 `Clock`.
    Clock,
}

impl VariableType {
    /// True for the floating-point types (the ones masters extrapolate).
    pub fn is_float(self) -> bool {
        matches!(self, VariableType::Float64 | VariableType::Float32)
    }
}

impl std::fmt::Display for VariableType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// `causality`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Causality {
    /// `parameter`.
    Parameter,
    /// `calculatedParameter`.
    CalculatedParameter,
    /// `input`.
    Input,
    /// `output`.
    Output,
    /// `local` (the default).
    Local,
    /// `independent` (time).
    Independent,
    /// FMI 3 `structuralParameter`.
    StructuralParameter,
}

impl std::fmt::Display for Causality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Causality::Parameter => "parameter",
            Causality::CalculatedParameter => "calculatedParameter",
            Causality::Input => "input",
            Causality::Output => "output",
            Causality::Local => "local",
            Causality::Independent => "independent",
            Causality::StructuralParameter => "structuralParameter",
        })
    }
}

/// `variability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Variability {
    /// `constant`.
    Constant,
    /// `fixed`.
    Fixed,
    /// `tunable`.
    Tunable,
    /// `discrete`.
    Discrete,
    /// `continuous`.
    Continuous,
}

impl std::fmt::Display for Variability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Variability::Constant => "constant",
            Variability::Fixed => "fixed",
            Variability::Tunable => "tunable",
            Variability::Discrete => "discrete",
            Variability::Continuous => "continuous",
        })
    }
}

/// `initial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Initial {
    /// `exact`.
    Exact,
    /// `approx`.
    Approx,
    /// `calculated`.
    Calculated,
}

/// A start value. Arrays (FMI 3) hold several elements; scalars one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum StartValue {
    /// Float32/Float64 start values.
    Float(Vec<f64>),
    /// Any integer type or enumeration (every Int64 and UInt64 value
    /// exactly).
    Int(Vec<i128>),
    /// Boolean start values.
    Bool(Vec<bool>),
    /// String start values.
    String(Vec<String>),
    /// Binary start values (hex-decoded bytes).
    Binary(Vec<Vec<u8>>),
}

/// One `<Dimension>` of an FMI 3 array variable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Dimension {
    /// `start="n"`: a fixed extent.
    Fixed(u64),
    /// `valueReference="vr"`: the extent is the value of a structural parameter.
    Variable(u32),
}

/// A model variable.
#[derive(Debug, Clone, Serialize)]
pub struct Variable {
    /// `name`.
    pub name: String,
    /// `valueReference`.
    pub value_reference: u32,
    /// Data type.
    pub var_type: VariableType,
    /// `description`.
    pub description: Option<String>,
    /// `causality` (default `local`).
    pub causality: Causality,
    /// `variability` (default `continuous` for floats, `discrete` otherwise).
    pub variability: Variability,
    /// `initial`, as written; `None` when absent (the standard then implies
    /// one from causality and variability, see [`Variable::effective_initial`]).
    pub initial: Option<Initial>,
    /// `declaredType`.
    pub declared_type: Option<String>,
    /// `start`.
    pub start: Option<StartValue>,
    /// `unit`, from the variable or else its declared type.
    pub unit: Option<String>,
    /// `displayUnit`, from the variable or else its declared type.
    pub display_unit: Option<String>,
    /// `quantity`, from the variable or else its declared type.
    pub quantity: Option<String>,
    /// `min`.
    pub min: Option<f64>,
    /// `max`.
    pub max: Option<f64>,
    /// `nominal`.
    pub nominal: Option<f64>,
    /// `derivative`: this variable is the time derivative of that one.
    pub derivative_of: Option<VariableIndex>,
    /// FMI 3 array dimensions; empty for scalars.
    pub dimensions: Vec<Dimension>,
    /// FMI 3 `intermediateUpdate`: the importer may set (an input) or get
    /// the variable in Intermediate Update Mode, inside `fmi3DoStep`.
    pub intermediate_update: bool,
    /// Other names of this variable: FMI 3 `<Alias>` children; FMI 2, the
    /// other variables of its alias set when this one stands for the set
    /// (see [`Variable::alias_of`]).
    pub aliases: Vec<Alias>,
    /// FMI 2: the variable that stands for this one's alias set (same
    /// `valueReference` and base type), when it is another one. The
    /// variable keeps its own name, causality and attributes; it is listed
    /// under that one. Always `None` in FMI 3.
    pub alias_of: Option<VariableIndex>,
    /// FMI 3 `clocks`: the value references of the Clocks this variable
    /// is clocked by (empty: not a clocked variable). A clocked variable
    /// is set and read only while one of its Clocks is active (and in
    /// Initialization Mode).
    pub clocks: Vec<u32>,
    /// FMI 3 `<Clock>`: its attributes (`None` for every other type).
    pub clock: Option<ClockAttributes>,
    /// 1-based line of the element in the file, for error messages.
    pub line: usize,
}

/// FMI 3 `intervalVariability` of a Clock (FMI 3.0 sec. 2.2.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IntervalVariability {
    /// Periodic, its interval in the model description.
    Constant,
    /// Periodic, its interval fixed at initialization.
    Fixed,
    /// Periodic, its interval may change at events.
    Tunable,
    /// Aperiodic: the next interval known when the Clock ticks.
    Changing,
    /// Aperiodic: the next interval known at any event.
    Countdown,
    /// Activated unpredictably: by the importer (input) or the FMU
    /// (output).
    Triggered,
}

impl IntervalVariability {
    /// The attribute's values, in the order of the variants.
    pub const NAMES: [&'static str; 6] = [
        "constant",
        "fixed",
        "tunable",
        "changing",
        "countdown",
        "triggered",
    ];

    /// A time-based Clock: the FMU defines its activation times.
    pub fn is_time_based(self) -> bool {
        self != IntervalVariability::Triggered
    }
}

/// The attributes of an FMI 3 `<Clock>` (FMI 3.0 sec. 2.4.7.4).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockAttributes {
    /// `intervalVariability`.
    pub interval_variability: IntervalVariability,
    /// `intervalDecimal`.
    pub interval_decimal: Option<f64>,
    /// `shiftDecimal` (default 0).
    pub shift_decimal: f64,
    /// `supportsFraction`.
    pub supports_fraction: bool,
    /// `canBeDeactivated`.
    pub can_be_deactivated: bool,
    /// `priority` (Scheduled Execution).
    pub priority: Option<u32>,
}

impl Variable {
    /// True for scalars, false for FMI 3 arrays.
    pub fn is_scalar(&self) -> bool {
        self.dimensions.is_empty()
    }

    /// The `initial` attribute, or the value the standard implies when it is
    /// absent (FMI 2.0 table in sec. 2.2.7, FMI 3.0 sec. 2.4.7.5).
    pub fn effective_initial(&self) -> Option<Initial> {
        if self.initial.is_some() {
            return self.initial;
        }
        match (self.causality, self.variability) {
            (Causality::Parameter | Causality::StructuralParameter, _) => Some(Initial::Exact),
            (Causality::CalculatedParameter, _) => Some(Initial::Calculated),
            (Causality::Input, _) => None,
            (Causality::Independent, _) => None,
            (_, Variability::Constant) => Some(Initial::Exact),
            (Causality::Output | Causality::Local, _) => Some(Initial::Calculated),
        }
    }

    /// Settable in state Instantiated (after `fmi2SetupExperiment`): a
    /// variable that is not constant and has `initial` exact or approx
    /// (FMI 2.0 sec. 4.2.4, footnote 1: "this does not include inputs",
    /// which have no `initial`; FMI 3.0 sec. 2.3.2). Inputs are set in
    /// Initialization Mode, which accepts them in both versions (FMPy sets
    /// them here too; libcosim there). FMI 3 structural parameters are set
    /// in Configuration Mode instead.
    pub fn settable_in_instantiated(&self) -> bool {
        if matches!(
            self.causality,
            Causality::StructuralParameter | Causality::Input
        ) {
            return false;
        }
        self.variability != Variability::Constant
            && matches!(
                self.effective_initial(),
                Some(Initial::Exact | Initial::Approx)
            )
    }

    /// Settable in Initialization Mode: an input, a tunable variable that is
    /// not a parameter, or a non-constant variable with `initial` exact.
    pub fn settable_in_initialization_mode(&self) -> bool {
        if self.causality == Causality::StructuralParameter {
            return false;
        }
        self.causality == Causality::Input
            || (self.causality != Causality::Parameter && self.variability == Variability::Tunable)
            || (self.variability != Variability::Constant
                && self.effective_initial() == Some(Initial::Exact))
    }

    /// Settable in FMI 3 Configuration Mode: a structural parameter that is
    /// fixed or tunable.
    pub fn settable_in_configuration_mode(&self) -> bool {
        self.causality == Causality::StructuralParameter
            && matches!(self.variability, Variability::Fixed | Variability::Tunable)
    }

    /// The scalar float start value, if there is one.
    pub fn start_f64(&self) -> Option<f64> {
        match &self.start {
            Some(StartValue::Float(v)) if v.len() == 1 => Some(v[0]),
            Some(StartValue::Int(v)) if v.len() == 1 => Some(v[0] as f64),
            Some(StartValue::Bool(v)) if v.len() == 1 => Some(if v[0] { 1.0 } else { 0.0 }),
            _ => None,
        }
    }
}

/// Dependencies of one unknown in `<ModelStructure>`.
///
/// The distinction between [`Dependencies::All`] and an empty
/// [`Dependencies::Listed`] is what feed-through analysis rests on: a missing
/// `dependencies` attribute means "may depend on every knowable variable",
/// `dependencies=""` means "depends on none".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Dependencies {
    /// No `dependencies` attribute: depends on all inputs (and states).
    All,
    /// The listed variables (possibly none).
    Listed(Vec<Dependency>),
}

/// One entry of a `dependencies` list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dependency {
    /// The variable depended on.
    pub variable: VariableIndex,
    /// The matching `dependenciesKind` entry, if given.
    pub kind: Option<DependencyKind>,
}

/// `dependenciesKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DependencyKind {
    /// `dependent`.
    Dependent,
    /// `constant`.
    Constant,
    /// `fixed`.
    Fixed,
    /// `tunable`.
    Tunable,
    /// `discrete`.
    Discrete,
}

/// One `<Unknown>` (FMI 2) or `<Output>`/`<ContinuousStateDerivative>`/...
/// (FMI 3) element.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unknown {
    /// The variable this entry describes.
    pub variable: VariableIndex,
    /// What it depends on.
    pub dependencies: Dependencies,
}

/// `<ModelStructure>`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelStructure {
    /// `<Outputs>` (FMI 2) / `<Output>` elements (FMI 3).
    pub outputs: Vec<Unknown>,
    /// `<Derivatives>` / `<ContinuousStateDerivative>`.
    pub derivatives: Vec<Unknown>,
    /// `<InitialUnknowns>` / `<InitialUnknown>`.
    pub initial_unknowns: Vec<Unknown>,
    /// FMI 3 `<ClockedState>`.
    pub clocked_states: Vec<Unknown>,
    /// FMI 3 `<EventIndicator>`.
    pub event_indicators: Vec<Unknown>,
}

impl ModelDescription {
    /// The variable with this exact name, or the variable an FMI 3 alias
    /// of this name stands for.
    pub fn variable_by_name(&self, name: &str) -> Option<(VariableIndex, &Variable)> {
        self.lookup(name)
    }

    /// The shape of variable `i`: empty for a scalar; for an FMI 3 array
    /// the extent of each `<Dimension>`, fixed (`start`) or the value of
    /// the structural parameter it names (`valueReference`):
    /// `value_of(index of that parameter)` when the caller sets it (a
    /// scenario's value), else the parameter's start. An extent that cannot
    /// be found is an error saying why.
    pub fn shape(
        &self,
        i: VariableIndex,
        value_of: &dyn Fn(VariableIndex) -> Option<u64>,
    ) -> Result<Vec<usize>, String> {
        let v = &self.variables[i];
        v.dimensions
            .iter()
            .map(|d| {
                let n = match d {
                    Dimension::Fixed(n) => *n,
                    Dimension::Variable(vr) => {
                        let Some((k, p)) = self
                            .variables
                            .iter()
                            .enumerate()
                            .find(|(_, p)| p.value_reference == *vr)
                        else {
                            return Err(format!(
                                "'{}': a <Dimension> names value reference {vr}, which no variable has",
                                v.name
                            ));
                        };
                        match value_of(k).or_else(|| match &p.start {
                            Some(StartValue::Int(x)) if x.len() == 1 => u64::try_from(x[0]).ok(),
                            _ => None,
                        }) {
                            Some(n) => n,
                            None => {
                                return Err(format!(
                                    "'{}': the size of a dimension is '{}', which has no start value",
                                    v.name, p.name
                                ));
                            }
                        }
                    }
                };
                usize::try_from(n).map_err(|_| format!("'{}': a dimension of {n}", v.name))
            })
            .collect()
    }

    /// The unit definition with this name.
    pub fn unit(&self, name: &str) -> Option<&Unit> {
        self.units.iter().find(|u| u.name == name)
    }

    /// Indices of all variables with `causality="input"`.
    pub fn inputs(&self) -> impl Iterator<Item = VariableIndex> + '_ {
        self.with_causality(Causality::Input)
    }

    /// Indices of all variables with `causality="output"`.
    pub fn outputs(&self) -> impl Iterator<Item = VariableIndex> + '_ {
        self.with_causality(Causality::Output)
    }

    fn with_causality(&self, c: Causality) -> impl Iterator<Item = VariableIndex> + '_ {
        self.variables
            .iter()
            .enumerate()
            .filter(move |(_, v)| v.causality == c)
            .map(|(i, _)| i)
    }

    /// The inputs an output depends on directly (its feed-through set),
    /// from `<ModelStructure>`.
    ///
    /// An output absent from `<ModelStructure>` or without a `dependencies`
    /// attribute is conservatively taken to depend on every input.
    pub fn output_input_dependencies(&self, output: VariableIndex) -> Vec<VariableIndex> {
        let all_inputs = || self.inputs().collect::<Vec<_>>();
        match self
            .model_structure
            .outputs
            .iter()
            .find(|u| u.variable == output)
        {
            None => all_inputs(),
            Some(u) => match &u.dependencies {
                Dependencies::All => all_inputs(),
                Dependencies::Listed(deps) => deps
                    .iter()
                    .map(|d| d.variable)
                    .filter(|&i| {
                        self.variables
                            .get(i)
                            .is_some_and(|v| v.causality == Causality::Input)
                    })
                    .collect(),
            },
        }
    }

    /// True when the output depends directly on at least one input.
    pub fn has_direct_feedthrough(&self, output: VariableIndex) -> bool {
        !self.output_input_dependencies(output).is_empty()
    }
}
