//! The model API: what a Rust model declares (variables, capabilities) and
//! implements (step, outputs, derivatives) to become an FMU.
//!
//! Every variable value lives in one [`Values`] vector indexed by value
//! reference (vr 0 is the independent variable `time`, added by the kit).
//! A model keeps its continuous states there as `local` variables, so the
//! kit can snapshot the whole FMU state without model-specific code; the
//! model struct itself only holds what it derived from the parameters.

use std::ops::{Index, IndexMut};

use crate::input::Inputs;
use crate::model_exchange::{ContinuousModel, ModelExchangeSpec};
use crate::units::{self, Unit};

/// Value reference.
pub type Vr = u32;

/// The value reference of the independent variable `time`, in every model.
pub const TIME: Vr = 0;

/// Causality of a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Causality {
    /// Set by the importer before initialization, fixed afterwards.
    Parameter,
    /// FMI 3 only (`causality="structuralParameter"`): a fixed parameter the
    /// importer sets in Configuration Mode only (`fmi3EnterConfigurationMode`
    /// from Instantiated, `fmi3ExitConfigurationMode` back), never in any
    /// other state. A model with one has an FMI 3 build only
    /// ([`ModelSpec::supports`]).
    StructuralParameter,
    /// Set by the importer at communication points.
    Input,
    /// Computed by the model, meant for other FMUs.
    Output,
    /// Computed by the model, visible for tracing only.
    Local,
    /// The independent variable (time).
    Independent,
}

impl Causality {
    /// Whether the causality exists in FMI 2 (all but `structuralParameter`).
    pub fn in_fmi2(self) -> bool {
        self != Causality::StructuralParameter
    }

    /// True for `parameter` and `structuralParameter`: set by the importer
    /// before initialization ends, `initial="exact"`, validated by the
    /// model's factory.
    pub fn is_parameter(self) -> bool {
        matches!(self, Causality::Parameter | Causality::StructuralParameter)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Causality::Parameter => "parameter",
            Causality::StructuralParameter => "structuralParameter",
            Causality::Input => "input",
            Causality::Output => "output",
            Causality::Local => "local",
            Causality::Independent => "independent",
        }
    }
}

/// Variability of a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variability {
    /// Never changes.
    Constant,
    /// Fixed after initialization.
    Fixed,
    /// A parameter the importer may also change at communication points
    /// (Step Mode / stepComplete); the kit rebuilds the model from the new
    /// values. Only parameters can be tunable here ([`ModelSpec::check`]).
    Tunable,
    /// Changes only at communication points.
    Discrete,
    /// Changes continuously in time.
    Continuous,
}

impl Variability {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Variability::Constant => "constant",
            Variability::Fixed => "fixed",
            Variability::Tunable => "tunable",
            Variability::Discrete => "discrete",
            Variability::Continuous => "continuous",
        }
    }
}

/// The `initial` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initial {
    /// The start value is used as is.
    Exact,
    /// The start value is a guess.
    Approx,
    /// The value is computed from other variables during initialization.
    Calculated,
}

impl Initial {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Initial::Exact => "exact",
            Initial::Approx => "approx",
            Initial::Calculated => "calculated",
        }
    }
}

/// Value type of a variable. All values but strings are stored as `f64`.
///
/// - `Real` / `Float32`: the float types; the only ones that can be
///   `continuous` (FMI 2.0 sec. 2.2.7, FMI 3.0 sec. 2.4.7.4) and carry a
///   unit. A `Float32` value is rounded to `f32` when it is set (and read
///   back as that `f32` value).
/// - `Integer` and the FMI 3 integer types: whole numbers within the type's
///   range; setting anything else is an error (the standard's type cannot
///   represent it). `Int64` / `UInt64` values are held exactly as `f64`:
///   every integer up to 2^53 in magnitude, beyond that only those an
///   `f64` represents (the largest are 2^63 - 1024 and 2^64 - 2048, see
///   [`VarType::bounds`]); the C setters refuse the others with `Error`
///   instead of rounding them.
/// - `Boolean`: stored as 0.0 (false) / 1.0 (true).
/// - `String` (FMI 2 and FMI 3): stored beside the numbers as a Rust
///   `String` ([`Values::str`], [`Values::set_str`]), start value
///   [`Variable::start_string`]; read and written with `fmi2GetString` /
///   `fmi2SetString`, `fmi3GetString` / `fmi3SetString`
///   ([`crate::Instance::get_strings`], [`crate::Instance::set_strings`]);
///   never continuous, no unit, no min / max, no derivatives. Its `f64`
///   slot is unused (0).
///
/// `Float32`, `Int8`, `UInt8`, `Int16`, `UInt16`, `UInt32`, `Int64` and
/// `UInt64` exist in FMI 3 only: a model with a variable of one of them has
/// no FMI 2 build ([`ModelSpec::supports`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarType {
    /// `Real` (FMI 2) / `Float64` (FMI 3).
    Real,
    /// `Integer` (FMI 2) / `Int32` (FMI 3).
    Integer,
    /// `Boolean` (FMI 2 and FMI 3); stored as 0.0 (false) / 1.0 (true).
    Boolean,
    /// `Float32` (FMI 3 only); values rounded to `f32`.
    Float32,
    /// `Int8` (FMI 3 only).
    Int8,
    /// `UInt8` (FMI 3 only).
    UInt8,
    /// `Int16` (FMI 3 only).
    Int16,
    /// `UInt16` (FMI 3 only).
    UInt16,
    /// `UInt32` (FMI 3 only).
    UInt32,
    /// `Int64` (FMI 3 only); see the type's doc for the values held exactly.
    Int64,
    /// `UInt64` (FMI 3 only); see the type's doc for the values held exactly.
    UInt64,
    /// `String` (FMI 2 and FMI 3): text, held beside the numbers.
    String,
}

impl VarType {
    /// Every type, FMI 2 ones first.
    pub const ALL: [VarType; 12] = [
        VarType::Real,
        VarType::Integer,
        VarType::Boolean,
        VarType::String,
        VarType::Float32,
        VarType::Int8,
        VarType::UInt8,
        VarType::Int16,
        VarType::UInt16,
        VarType::UInt32,
        VarType::Int64,
        VarType::UInt64,
    ];

    /// The element name in FMI 2 `modelDescription.xml` (`Real`, `Integer`,
    /// `Boolean`, `String`). The FMI 3 only types have none: for them (in
    /// messages) their FMI 3 name.
    pub fn fmi2_name(self) -> &'static str {
        match self {
            VarType::Real => "Real",
            VarType::Integer => "Integer",
            VarType::Boolean => "Boolean",
            VarType::String => "String",
            other => other.fmi3_name(),
        }
    }

    /// The element name in FMI 3 `modelDescription.xml` (`Float64`, `Int32`,
    /// `Boolean`, `String`, `Float32`, `Int8`, `UInt8`, `Int16`, `UInt16`,
    /// `UInt32`, `Int64`, `UInt64`).
    pub fn fmi3_name(self) -> &'static str {
        match self {
            VarType::String => "String",
            VarType::Real => "Float64",
            VarType::Integer => "Int32",
            VarType::Boolean => "Boolean",
            VarType::Float32 => "Float32",
            VarType::Int8 => "Int8",
            VarType::UInt8 => "UInt8",
            VarType::Int16 => "Int16",
            VarType::UInt16 => "UInt16",
            VarType::UInt32 => "UInt32",
            VarType::Int64 => "Int64",
            VarType::UInt64 => "UInt64",
        }
    }

    /// True for the types FMI 2 has (`Real`, `Integer`, `Boolean`, `String`).
    pub fn in_fmi2(self) -> bool {
        matches!(
            self,
            VarType::Real | VarType::Integer | VarType::Boolean | VarType::String
        )
    }

    /// True for the float types (`Real` / `Float64`, `Float32`).
    pub fn is_float(self) -> bool {
        matches!(self, VarType::Real | VarType::Float32)
    }

    /// True for the integer types (`Integer` / `Int32` and the FMI 3 ones).
    pub fn is_integer(self) -> bool {
        self.bounds().is_some()
    }

    /// True for the types that are not float types (integers, `Boolean`,
    /// `String`): the types exchanged at communication points only
    /// (variability `discrete`, `fixed` or `constant`), without unit.
    pub fn is_discrete(self) -> bool {
        !self.is_float()
    }

    /// Integer types: the smallest and the largest value the kit holds (the
    /// type's range; for `Int64` / `UInt64` the largest `f64` in it,
    /// 2^63 - 1024 and 2^64 - 2048, as `i64::MAX` and `u64::MAX` are no
    /// `f64`). `None` for the other types.
    pub fn bounds(self) -> Option<(f64, f64)> {
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        const TWO_64: f64 = 18_446_744_073_709_551_616.0;
        let (lo, hi) = match self {
            VarType::Integer => (f64::from(i32::MIN), f64::from(i32::MAX)),
            VarType::Int8 => (f64::from(i8::MIN), f64::from(i8::MAX)),
            VarType::UInt8 => (0.0, f64::from(u8::MAX)),
            VarType::Int16 => (f64::from(i16::MIN), f64::from(i16::MAX)),
            VarType::UInt16 => (0.0, f64::from(u16::MAX)),
            VarType::UInt32 => (0.0, f64::from(u32::MAX)),
            VarType::Int64 => (-TWO_63, TWO_63.next_down()),
            VarType::UInt64 => (0.0, TWO_64.next_down()),
            VarType::Real | VarType::Boolean | VarType::Float32 | VarType::String => {
                return None;
            }
        };
        Some((lo, hi))
    }

    /// Whether a variable of this type can have the stored value `x`:
    /// integers whole and within [`VarType::bounds`], `Float32` values that
    /// are `f32` values (NaN and infinities included), Booleans 0 or 1,
    /// `Real` anything; `String` only 0 (its `f64` slot is unused).
    pub fn holds(self, x: f64) -> bool {
        match self {
            VarType::Real => true,
            VarType::String => x == 0.0,
            VarType::Float32 => x.is_nan() || f64::from(x as f32) == x,
            VarType::Boolean => x == 0.0 || x == 1.0,
            _ => self
                .bounds()
                .is_some_and(|(lo, hi)| x.fract() == 0.0 && x >= lo && x <= hi),
        }
    }

    /// The tag of the type in [`ModelSpec::variables_hash`].
    fn hash_tag(self) -> &'static str {
        match self {
            VarType::Real => "r",
            VarType::Integer => "i",
            VarType::Boolean => "b",
            VarType::Float32 => "f32",
            VarType::Int8 => "i8",
            VarType::UInt8 => "u8",
            VarType::Int16 => "i16",
            VarType::UInt16 => "u16",
            VarType::UInt32 => "u32",
            VarType::Int64 => "i64",
            VarType::UInt64 => "u64",
            VarType::String => "s",
        }
    }
}

/// How an output depends on an input (`dependenciesKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependencyKind {
    /// `c * u` with a constant `c`.
    Constant,
    /// `p * u` with a fixed parameter `p`.
    Fixed,
    /// No particular structure.
    Dependent,
}

impl DependencyKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DependencyKind::Constant => "constant",
            DependencyKind::Fixed => "fixed",
            DependencyKind::Dependent => "dependent",
        }
    }
}

/// One dimension of an FMI 3 array variable ([`Variable::dims`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// A fixed extent: `<Dimension start="3"/>`.
    Fixed(u64),
    /// The current value of a `UInt64` structural parameter:
    /// `<Dimension valueReference="vr"/>`. The array is resized when the
    /// importer sets the parameter in Configuration Mode.
    Structural(Vr),
}

/// The start values of an FMI 3 array variable, for any shape it can have
/// (its structural parameters may change it): the value of the element at
/// a 0-based multi-index (row-major, one index per dimension).
#[derive(Debug, Clone, Copy)]
pub enum ArrayStart {
    /// Every element has this start value.
    Uniform(f64),
    /// The start value of the element at a 0-based multi-index, e.g. an
    /// identity matrix: `|i| if i[0] == i[1] { 1.0 } else { 0.0 }`.
    Elements(fn(&[usize]) -> f64),
}

impl ArrayStart {
    /// The start value of the element at the 0-based multi-index `index`.
    pub fn at(&self, index: &[usize]) -> f64 {
        match self {
            ArrayStart::Uniform(x) => *x,
            ArrayStart::Elements(f) => f(index),
        }
    }
}

impl PartialEq for ArrayStart {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ArrayStart::Uniform(a), ArrayStart::Uniform(b)) => a.to_bits() == b.to_bits(),
            (ArrayStart::Elements(a), ArrayStart::Elements(b)) => std::ptr::fn_addr_eq(*a, *b),
            _ => false,
        }
    }
}

/// The largest number of elements an array may have: setting a structural
/// parameter to a value that would make an array larger is refused.
pub const MAX_ARRAY_ELEMENTS: usize = 1 << 20;

/// The number of elements of an array of `shape` (saturating).
pub fn element_count(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |n, &d| n.saturating_mul(d))
}

/// The 0-based multi-index of the element at row-major position `flat` of
/// an array of `shape`, written into `index` (of the shape's length).
pub fn multi_index(mut flat: usize, shape: &[usize], index: &mut [usize]) {
    for (slot, &d) in index.iter_mut().zip(shape).rev() {
        if d == 0 {
            *slot = 0;
        } else {
            *slot = flat % d;
            flat /= d;
        }
    }
}

/// The elements of an array resized from `old_shape` to `new_shape`: an
/// element whose multi-index exists in both keeps its value, every other
/// one takes `start` of its multi-index (as the Reference FMUs, whose
/// arrays live in storage of the largest size, filled with start values at
/// instantiation, of which a structural parameter selects the leading part).
pub fn resized(
    old: &[f64],
    old_shape: &[usize],
    new_shape: &[usize],
    start: &dyn Fn(&[usize]) -> f64,
) -> Vec<f64> {
    let n = element_count(new_shape);
    let mut out = Vec::with_capacity(n);
    let mut index = vec![0usize; new_shape.len()];
    for k in 0..n {
        multi_index(k, new_shape, &mut index);
        let kept =
            old_shape.len() == new_shape.len() && index.iter().zip(old_shape).all(|(i, d)| i < d);
        if kept {
            let flat = index
                .iter()
                .zip(old_shape)
                .fold(0usize, |acc, (i, d)| acc * d + i);
            out.push(old.get(flat).copied().unwrap_or_else(|| start(&index)));
        } else {
            out.push(start(&index));
        }
    }
    out
}

/// FMI 3 `intervalVariability` of a Clock (FMI 3.0 sec. 2.2.9.2, table
/// "Overview of Clock types").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalVariability {
    /// Periodic, the interval (`intervalDecimal`) fixed in the model
    /// description.
    Constant,
    /// Periodic, the interval fixed at initialization (set by the importer
    /// with `fmi3SetIntervalDecimal` in Initialization Mode).
    Fixed,
    /// Periodic, the interval changeable by the importer in Event Mode too.
    Tunable,
    /// Aperiodic: the next interval known when the Clock was just
    /// activated.
    Changing,
    /// Aperiodic: the next interval known by the FMU at some point.
    Countdown,
    /// Triggered: no timing known in advance (output Clocks: ticked by the
    /// model).
    Triggered,
}

impl IntervalVariability {
    /// The attribute value (`constant`, `fixed`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            IntervalVariability::Constant => "constant",
            IntervalVariability::Fixed => "fixed",
            IntervalVariability::Tunable => "tunable",
            IntervalVariability::Changing => "changing",
            IntervalVariability::Countdown => "countdown",
            IntervalVariability::Triggered => "triggered",
        }
    }

    /// Time-based periodic Clocks (`constant`, `fixed`, `tunable`).
    pub fn is_periodic(self) -> bool {
        matches!(
            self,
            IntervalVariability::Constant
                | IntervalVariability::Fixed
                | IntervalVariability::Tunable
        )
    }

    /// Time-based aperiodic Clocks (`changing`, `countdown`).
    pub fn is_aperiodic(self) -> bool {
        matches!(
            self,
            IntervalVariability::Changing | IntervalVariability::Countdown
        )
    }
}

impl ClockAttrs {
    /// Whether the model decides the Clock's timing (FMI 3.0 sec.
    /// 2.2.9.2): a `fixed` or `tunable` Clock without `intervalDecimal`
    /// ([`crate::EventModel::periodic_clock`]), a `changing` or a
    /// `countdown` one ([`crate::EventModel::changing_interval`],
    /// [`crate::EventModel::countdown_interval`]). The importer learns it
    /// from `fmi3GetIntervalDecimal` only.
    pub fn model_timed(&self) -> bool {
        match self.interval_variability {
            IntervalVariability::Fixed | IntervalVariability::Tunable => {
                self.interval_decimal.is_none()
            }
            iv => iv.is_aperiodic(),
        }
    }
}

/// The attributes of an FMI 3 Clock variable ([`Variable::input_clock`],
/// [`Variable::output_clock`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockAttrs {
    /// The Clock type.
    pub interval_variability: IntervalVariability,
    /// `intervalDecimal`: the interval of a periodic Clock (required for
    /// `constant`; the default the importer may replace for `fixed` and
    /// `tunable`; absent there, the model gives the interval,
    /// [`ClockAttrs::model_timed`]).
    pub interval_decimal: Option<f64>,
    /// `shiftDecimal`: the delay of the first activation after the start
    /// time (periodic Clocks; 0 when absent).
    pub shift_decimal: Option<f64>,
    /// `supportsFraction`: the `...Fraction` functions may be called. The
    /// kit's Clocks have none (always false, [`ModelSpec::check`]).
    pub supports_fraction: bool,
    /// `canBeDeactivated`: `fmi3SetClock(false)` is allowed.
    pub can_be_deactivated: bool,
    /// `priority` (input Clocks; [`Variable::priority`]): the order in
    /// which an importer in Scheduled Execution activates the model
    /// partitions of Clocks that tick at the same time, smaller values
    /// first (FMI 3.0 sec. 2.4.4: mandatory for the input Clocks of
    /// Scheduled Execution, ignored by Co-Simulation and Model Exchange;
    /// output Clocks have none).
    pub priority: Option<u32>,
}

/// One model variable and everything `modelDescription.xml` says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// Unique name.
    pub name: &'static str,
    /// Value reference (dense: 0 = time, then 1, 2, ...).
    pub vr: Vr,
    /// Causality.
    pub causality: Causality,
    /// Variability.
    pub variability: Variability,
    /// `initial`, where the standard allows one.
    pub initial: Option<Initial>,
    /// Value type.
    pub ty: VarType,
    /// Start value (inputs, parameters); `None` for a `String` variable,
    /// whose start value is [`Variable::start_string`], and for an array,
    /// whose start values are [`Variable::array_start`].
    pub start: Option<f64>,
    /// The start value of a `String` variable (inputs, parameters);
    /// `None` for every other type.
    pub start_string: Option<&'static str>,
    /// Unit.
    pub unit: Option<Unit>,
    /// `quantity`; defaults to the unit's quantity.
    pub quantity: Option<&'static str>,
    /// Human-readable description.
    pub description: &'static str,
    /// Lower bound (checked by the model's own validation, declared in XML).
    pub min: Option<f64>,
    /// Upper bound.
    pub max: Option<f64>,
    /// Outputs only: the inputs the output depends on at a communication
    /// point (direct feed-through), with the kind of dependency. Empty means
    /// `dependencies=""`: no feed-through.
    pub dependencies: Vec<(Vr, DependencyKind)>,
    /// Initial unknowns: the knowns (parameters, inputs) the value depends on
    /// during initialization. `None` writes no attribute (depends on all).
    pub initial_dependencies: Option<Vec<Vr>>,
    /// FMI 3 arrays: the dimensions (outermost first; row-major storage);
    /// empty for a scalar ([`Variable::dims`]).
    pub dimensions: Vec<Dimension>,
    /// The start values of an array (inputs, parameters; [`Variable::dims`],
    /// [`Variable::start_elements`]); `None` for scalars, whose start value
    /// is [`Variable::start`].
    pub array_start: Option<ArrayStart>,
    /// FMI 3 Clocks only ([`Variable::input_clock`],
    /// [`Variable::output_clock`]): the Clock's attributes. A Clock is
    /// stored as a Boolean (1 while active) and read and written with
    /// `fmi3GetClock` / `fmi3SetClock` only.
    pub clock: Option<ClockAttrs>,
    /// FMI 3 clocked variables ([`Variable::clocked_by`]): the `clocks`
    /// attribute, the Clocks whose activation the value changes at (and
    /// while one of which only it may be read or set).
    pub clocks: Vec<Vr>,
}

impl Variable {
    fn base(vr: Vr, name: &'static str, causality: Causality, description: &'static str) -> Self {
        Variable {
            name,
            vr,
            causality,
            variability: Variability::Continuous,
            initial: None,
            ty: VarType::Real,
            start: None,
            start_string: None,
            unit: None,
            quantity: None,
            description,
            min: None,
            max: None,
            dependencies: Vec::new(),
            initial_dependencies: None,
            dimensions: Vec::new(),
            array_start: None,
            clock: None,
            clocks: Vec::new(),
        }
    }

    /// A continuous real input with a start value.
    pub fn input(vr: Vr, name: &'static str, start: f64, description: &'static str) -> Self {
        Variable {
            start: Some(start),
            ..Self::base(vr, name, Causality::Input, description)
        }
    }

    /// A continuous real output, calculated by the model. Declare its
    /// feed-through with [`Variable::depends_on`] (none by default).
    pub fn output(vr: Vr, name: &'static str, description: &'static str) -> Self {
        Variable {
            initial: Some(Initial::Calculated),
            ..Self::base(vr, name, Causality::Output, description)
        }
    }

    /// A continuous real local (e.g. a continuous state exposed for tracing).
    pub fn local(vr: Vr, name: &'static str, description: &'static str) -> Self {
        Variable {
            initial: Some(Initial::Calculated),
            ..Self::base(vr, name, Causality::Local, description)
        }
    }

    /// A fixed real parameter.
    pub fn parameter(vr: Vr, name: &'static str, start: f64, description: &'static str) -> Self {
        Variable {
            variability: Variability::Fixed,
            initial: Some(Initial::Exact),
            start: Some(start),
            ..Self::base(vr, name, Causality::Parameter, description)
        }
    }

    /// A fixed integer parameter.
    pub fn int_parameter(
        vr: Vr,
        name: &'static str,
        start: i32,
        description: &'static str,
    ) -> Self {
        Variable {
            ty: VarType::Integer,
            ..Self::parameter(vr, name, f64::from(start), description)
        }
    }

    /// A fixed Boolean parameter.
    pub fn bool_parameter(
        vr: Vr,
        name: &'static str,
        start: bool,
        description: &'static str,
    ) -> Self {
        Variable {
            ty: VarType::Boolean,
            ..Self::parameter(vr, name, bool_value(start), description)
        }
    }

    /// A fixed structural parameter (FMI 3 only: `causality="structuralParameter"`
    /// `variability="fixed"` `initial="exact"`), Float64 unless typed
    /// otherwise: `Variable::structural_parameter(1, "n", 1.0,
    /// "").typed(VarType::UInt64)`. The importer sets it in Configuration
    /// Mode only; the model's factory validates it with the parameters when
    /// initialization ends. A model with one has no FMI 2 build
    /// ([`ModelSpec::supports`]). The kit has no Reconfiguration Mode, so
    /// structural parameters cannot be tunable ([`ModelSpec::check`]).
    pub fn structural_parameter(
        vr: Vr,
        name: &'static str,
        start: f64,
        description: &'static str,
    ) -> Self {
        Variable {
            causality: Causality::StructuralParameter,
            ..Self::parameter(vr, name, start, description)
        }
    }

    /// A discrete integer input (`fmi2Integer` / `fmi3Int32`) with a start
    /// value. Input derivatives are refused for it (they exist for Real
    /// inputs only).
    pub fn int_input(vr: Vr, name: &'static str, start: i32, description: &'static str) -> Self {
        Variable {
            ty: VarType::Integer,
            variability: Variability::Discrete,
            ..Self::input(vr, name, f64::from(start), description)
        }
    }

    /// A discrete Boolean input with a start value.
    pub fn bool_input(vr: Vr, name: &'static str, start: bool, description: &'static str) -> Self {
        Variable {
            ty: VarType::Boolean,
            variability: Variability::Discrete,
            ..Self::input(vr, name, bool_value(start), description)
        }
    }

    /// A discrete integer output, calculated by the model (no start value).
    /// Declare feed-through with [`Variable::depends_on`] and
    /// [`DependencyKind::Dependent`] (the only kind FMI allows for
    /// non-Real variables).
    pub fn int_output(vr: Vr, name: &'static str, description: &'static str) -> Self {
        Variable {
            ty: VarType::Integer,
            variability: Variability::Discrete,
            ..Self::output(vr, name, description)
        }
    }

    /// A discrete Boolean output, calculated by the model (no start value).
    pub fn bool_output(vr: Vr, name: &'static str, description: &'static str) -> Self {
        Variable {
            ty: VarType::Boolean,
            variability: Variability::Discrete,
            ..Self::output(vr, name, description)
        }
    }

    /// A fixed String parameter with a start value
    /// (`<String start="..."/>` in FMI 2, `<String ...><Start value="..."/></String>`
    /// in FMI 3). The model reads it with [`Values::str`].
    pub fn string_parameter(
        vr: Vr,
        name: &'static str,
        start: &'static str,
        description: &'static str,
    ) -> Self {
        Variable {
            ty: VarType::String,
            start: None,
            start_string: Some(start),
            ..Self::parameter(vr, name, 0.0, description)
        }
    }

    /// A discrete String input with a start value (set with
    /// `fmi2SetString` / `fmi3SetString`, held until set again; no
    /// derivatives, no intermediate update).
    pub fn string_input(
        vr: Vr,
        name: &'static str,
        start: &'static str,
        description: &'static str,
    ) -> Self {
        Variable {
            ty: VarType::String,
            variability: Variability::Discrete,
            start: None,
            start_string: Some(start),
            ..Self::base(vr, name, Causality::Input, description)
        }
    }

    /// A discrete String output, calculated by the model (no start value;
    /// the model writes it with [`Values::set_str`]).
    pub fn string_output(vr: Vr, name: &'static str, description: &'static str) -> Self {
        Variable {
            ty: VarType::String,
            variability: Variability::Discrete,
            ..Self::output(vr, name, description)
        }
    }

    /// Sets the start value of a `String` variable (an output or local with
    /// `initial` exact or approx, a constant).
    pub fn start_str(mut self, start: &'static str) -> Self {
        self.start = None;
        self.start_string = Some(start);
        self
    }

    /// Sets the value type, for the types without a constructor of their
    /// own (the FMI 3 only types): `Variable::input(vr, "u", 3.0,
    /// "").typed(VarType::Int8)`. A non-float type makes a `continuous`
    /// variable `discrete` (only float variables can be continuous); a
    /// `Float32` keeps the variability (continuous unless [`Variable::discrete`]).
    pub fn typed(mut self, ty: VarType) -> Self {
        self.ty = ty;
        if ty.is_discrete() && self.variability == Variability::Continuous {
            self.variability = Variability::Discrete;
        }
        self
    }

    /// Makes the variable `discrete` (changes only at communication points).
    pub fn discrete(mut self) -> Self {
        self.variability = Variability::Discrete;
        self
    }

    /// Makes a parameter `tunable`: settable at communication points too
    /// (FMI 2.0 sec. 2.2.7 / FMI 3.0 sec. 2.4.7.4). Setting one in
    /// stepComplete / Step Mode rebuilds the model from the new values.
    pub fn tunable(mut self) -> Self {
        self.variability = Variability::Tunable;
        self
    }

    /// A constant (`causality="local"`, `variability="constant"`,
    /// `initial="exact"`): its start value, never settable.
    pub fn constant(vr: Vr, name: &'static str, value: f64, description: &'static str) -> Self {
        Variable {
            variability: Variability::Constant,
            initial: Some(Initial::Exact),
            start: Some(value),
            ..Self::base(vr, name, Causality::Local, description)
        }
    }

    /// An FMI 3 input Clock (`<Clock causality="input"
    /// variability="discrete" intervalVariability=...>`): the importer
    /// activates it with `fmi3SetClock` in Event Mode. A periodic one
    /// (`constant`, `fixed`, `tunable`) takes its interval from
    /// [`Variable::interval`] (required for `constant`) and its shift from
    /// [`Variable::shift`]; a `fixed` or `tunable` one without them, and a
    /// `changing` or `countdown` one, from the model
    /// ([`crate::EventModel::periodic_clock`],
    /// [`crate::EventModel::changing_interval`],
    /// [`crate::EventModel::countdown_interval`]). The model sees it active as the value 1
    /// (`v.bool(vr)`) in its outputs and update. FMI 3 only
    /// ([`Variable::fmi3_only_reason`]), and only with
    /// [`ModelSpec::event_mode`] or [`ModelSpec::scheduled_execution_only`]
    /// (Scheduled Execution: with a [`Variable::priority`]).
    pub fn input_clock(
        vr: Vr,
        name: &'static str,
        interval_variability: IntervalVariability,
        description: &'static str,
    ) -> Self {
        Variable {
            ty: VarType::Boolean,
            variability: Variability::Discrete,
            clock: Some(ClockAttrs {
                interval_variability,
                interval_decimal: None,
                shift_decimal: None,
                supports_fraction: false,
                can_be_deactivated: false,
                priority: None,
            }),
            ..Self::base(vr, name, Causality::Input, description)
        }
    }

    /// An FMI 3 output Clock (`intervalVariability="triggered"`, the only
    /// variability of output Clocks): the model ticks it by setting its
    /// value to 1 in [`crate::EventModel::step_until_event`] (with an
    /// event at the time reached) or in its update; the importer reads the
    /// tick once with `fmi3GetClock` in Event Mode (Scheduled Execution:
    /// in Clock Update Mode). Declare what it depends on with
    /// [`Variable::depends_on`].
    pub fn output_clock(vr: Vr, name: &'static str, description: &'static str) -> Self {
        Variable {
            ty: VarType::Boolean,
            variability: Variability::Discrete,
            clock: Some(ClockAttrs {
                interval_variability: IntervalVariability::Triggered,
                interval_decimal: None,
                shift_decimal: None,
                supports_fraction: false,
                can_be_deactivated: false,
                priority: None,
            }),
            initial: Some(Initial::Calculated),
            ..Self::base(vr, name, Causality::Output, description)
        }
    }

    /// Sets a Clock's `intervalDecimal`.
    pub fn interval(mut self, interval: f64) -> Self {
        if let Some(c) = &mut self.clock {
            c.interval_decimal = Some(interval);
        }
        self
    }

    /// Sets a Clock's `shiftDecimal`.
    pub fn shift(mut self, shift: f64) -> Self {
        if let Some(c) = &mut self.clock {
            c.shift_decimal = Some(shift);
        }
        self
    }

    /// Sets an input Clock's `priority` (smaller values: higher priority;
    /// required on every input Clock of a model with
    /// [`ModelSpec::scheduled_execution`] or
    /// [`ModelSpec::scheduled_execution_only`], FMI 3.0 sec. 2.4.4).
    pub fn priority(mut self, priority: u32) -> Self {
        if let Some(c) = &mut self.clock {
            c.priority = Some(priority);
        }
        self
    }

    /// Declares a Clock `canBeDeactivated="true"`: `fmi3SetClock(false)`
    /// allowed in Event Mode.
    pub fn can_be_deactivated(mut self) -> Self {
        if let Some(c) = &mut self.clock {
            c.can_be_deactivated = true;
        }
        self
    }

    /// Makes the variable clocked by `clocks` (the `clocks` attribute;
    /// variability `discrete`): its value changes only when one of them
    /// ticks, and the importer may read it (and set it, an input) only
    /// while one of them is active in Event Mode, or in Initialization
    /// Mode. FMI 3 only.
    pub fn clocked_by(mut self, clocks: &[Vr]) -> Self {
        self.clocks = clocks.to_vec();
        self.variability = Variability::Discrete;
        self
    }

    /// True for an FMI 3 Clock.
    pub fn is_clock(&self) -> bool {
        self.clock.is_some()
    }

    /// Sets the `initial` attribute (an output or local with `exact` or
    /// `approx` also needs a start value, [`Variable::start`]).
    pub fn initial(mut self, initial: Initial) -> Self {
        self.initial = Some(initial);
        self
    }

    /// Sets the start value.
    pub fn start(mut self, start: f64) -> Self {
        self.start = Some(start);
        self
    }

    /// Makes the variable an FMI 3 array with these dimensions (outermost
    /// first, stored row-major): `Variable::parameter(A, "A", 0.0,
    /// "").dims(&[Dimension::Structural(N), Dimension::Structural(N)])`.
    /// A scalar start value given before becomes the start of every
    /// element ([`ArrayStart::Uniform`]; [`Variable::start_elements`] sets
    /// one per element). FMI 3 only ([`Variable::fmi3_only_reason`]).
    ///
    /// `fmi3Get<Type>` / `fmi3Set<Type>` take all the elements of an array
    /// in row-major order (`nValues` is the sum of the variables' current
    /// sizes); an array is resized when a structural parameter of its
    /// dimensions is set in Configuration Mode (see [`resized`]). Arrays
    /// are values only: no derivatives, no intermediate update, no
    /// polynomial inputs (an array input is held until set again; the
    /// model reads it with [`Values::array`]).
    pub fn dims(mut self, dimensions: &[Dimension]) -> Self {
        self.dimensions = dimensions.to_vec();
        if let Some(s) = self.start.take() {
            self.array_start = Some(ArrayStart::Uniform(s));
        }
        self
    }

    /// Sets the start values of an array ([`Variable::dims`]) by element:
    /// `f` gives the start value of the element at a 0-based multi-index,
    /// for every shape the array can take.
    pub fn start_elements(mut self, f: fn(&[usize]) -> f64) -> Self {
        self.start = None;
        self.array_start = Some(ArrayStart::Elements(f));
        self
    }

    /// True for an FMI 3 array variable ([`Variable::dims`]).
    pub fn is_array(&self) -> bool {
        !self.dimensions.is_empty()
    }

    /// The `initial` attribute as declared, or as implied by causality and
    /// variability where it is not (FMI 2.0 sec. 2.2.7, FMI 3.0 sec.
    /// 2.4.7.5): parameters and structural parameters `exact`, constants
    /// `exact`, other outputs and locals `calculated`; inputs and the
    /// independent variable have none.
    pub fn effective_initial(&self) -> Option<Initial> {
        match (self.causality, self.variability, self.initial) {
            (Causality::Input | Causality::Independent, _, _) => None,
            (_, _, Some(i)) => Some(i),
            (Causality::Parameter | Causality::StructuralParameter, _, None) => {
                Some(Initial::Exact)
            }
            (_, Variability::Constant, None) => Some(Initial::Exact),
            (_, _, None) => Some(Initial::Calculated),
        }
    }

    pub(crate) fn time() -> Self {
        Variable {
            unit: Some(units::S),
            ..Self::base(TIME, "time", Causality::Independent, "Simulation time")
        }
    }

    /// Sets the unit (and, unless set, the quantity from the unit).
    pub fn unit(mut self, unit: Unit) -> Self {
        self.unit = Some(unit);
        self
    }

    /// Sets the quantity explicitly.
    pub fn quantity(mut self, quantity: &'static str) -> Self {
        self.quantity = Some(quantity);
        self
    }

    /// Sets the declared minimum.
    pub fn min(mut self, min: f64) -> Self {
        self.min = Some(min);
        self
    }

    /// Sets the declared maximum.
    pub fn max(mut self, max: f64) -> Self {
        self.max = Some(max);
        self
    }

    /// Declares direct feed-through from the given inputs.
    pub fn depends_on(mut self, deps: &[(Vr, DependencyKind)]) -> Self {
        self.dependencies = deps.to_vec();
        self
    }

    /// Declares what this initial unknown depends on during initialization.
    pub fn initial_depends_on(mut self, knowns: &[Vr]) -> Self {
        self.initial_dependencies = Some(knowns.to_vec());
        self
    }

    /// The causality as written in `modelDescription.xml`.
    pub fn causality_name(&self) -> &'static str {
        self.causality.as_str()
    }

    /// The quantity written into the XML.
    pub fn effective_quantity(&self) -> Option<&'static str> {
        self.quantity
            .or(self.unit.map(|u| u.quantity))
            .filter(|q| !q.is_empty())
    }

    /// True for continuous scalar Real inputs: the inputs an FMI 3 build that
    /// provides intermediate update declares `intermediateUpdate="true"`
    /// and lets the importer set in Intermediate Update Mode.
    pub fn is_continuous_real_input(&self) -> bool {
        self.causality == Causality::Input
            && self.ty == VarType::Real
            && self.variability == Variability::Continuous
            && !self.is_array()
    }

    /// Why the variable exists in FMI 3 only, if it does: `"is of the FMI 3
    /// only type UInt64"`, `"is a structural parameter (FMI 3 only)"`.
    pub fn fmi3_only_reason(&self) -> Option<String> {
        if !self.ty.in_fmi2() {
            Some(format!("is of the FMI 3 only type {}", self.ty.fmi3_name()))
        } else if !self.causality.in_fmi2() {
            Some("is a structural parameter (FMI 3 only)".to_string())
        } else if self.is_array() {
            Some("is an array (FMI 3 only)".to_string())
        } else if self.is_clock() {
            Some("is a Clock (FMI 3 only)".to_string())
        } else if !self.clocks.is_empty() {
            Some("is a clocked variable (FMI 3 only)".to_string())
        } else {
            None
        }
    }

    /// True for outputs and calculated parameters with initial approx or calculated
    /// (the `InitialUnknowns` of a co-simulation FMU).
    /// Clocked variables are not (declaring them is optional, FMI 3.0
    /// sec. 2.2.9.5; FMPy's validation expects them not to be), output
    /// Clocks are (outputs with `initial` calculated implied).
    pub fn is_initial_unknown(&self) -> bool {
        self.clocks.is_empty()
            && self.causality == Causality::Output
            && matches!(
                self.initial,
                Some(Initial::Approx) | Some(Initial::Calculated)
            )
    }
}

/// `<DefaultExperiment>`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DefaultExperiment {
    /// Start time.
    pub start_time: f64,
    /// Stop time.
    pub stop_time: f64,
    /// Suggested communication step size.
    pub step_size: f64,
}

/// Builds a model from the current variable values (the parameters):
/// validates them and returns the prepared model, or a message naming the
/// offending parameter (`"m_c must be > 0, got -1"`); the second argument
/// is the instance's name (the importer's `instanceName`). Shared, so that
/// a model built at run time (an exported co-simulation, whose model knows
/// the system it runs) can capture what it builds from.
pub type Factory =
    std::sync::Arc<dyn Fn(&Values, &str) -> Result<Box<dyn Model>, String> + Send + Sync>;

/// Everything static about a model: its variables, what it can do, and how
/// to build it.
#[derive(Clone)]
pub struct ModelSpec {
    /// Model name (also the default `modelIdentifier`).
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// All variables, `time` first (vr 0).
    pub variables: Vec<Variable>,
    /// Default experiment.
    pub experiment: DefaultExperiment,
    /// Highest output derivative order the model computes analytically.
    pub max_output_derivative_order: u32,
    /// Whether the model integrates polynomial inputs (FMI 2 input derivatives).
    pub can_interpolate_inputs: bool,
    /// Whether the model computes d(output)/d(input) analytically.
    pub provides_directional_derivatives: bool,
    /// Whether a step may end before `t + h` (the model returns
    /// [`StepError::Terminate`] inside a step): FMI 3
    /// `mightReturnEarlyFromDoStep`. False by default.
    pub might_return_early: bool,
    /// Builds the model from parameter values.
    pub factory: Factory,
    /// FMI 3 `<Alias>` elements: (value reference, alias name,
    /// description), other names of a variable's value
    /// ([`ModelSpec::alias`]).
    pub aliases: Vec<(Vr, &'static str, &'static str)>,
    /// The Model Exchange interface, if the model has one
    /// ([`ModelSpec::model_exchange`]).
    pub model_exchange: Option<ModelExchangeSpec>,
    /// Whether the model has events in Co-Simulation
    /// ([`ModelSpec::event_mode`]): FMI 3 `hasEventMode`.
    pub event_mode: bool,
    /// Whether the model has the FMI 3 Scheduled Execution interface
    /// ([`ModelSpec::scheduled_execution`]).
    pub scheduled_execution: bool,
    /// Whether Scheduled Execution is the model's only interface
    /// ([`ModelSpec::scheduled_execution_only`]): no `<CoSimulation>`.
    pub scheduled_execution_only: bool,
}

impl std::fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSpec")
            .field("name", &self.name)
            .field("variables", &self.variables.len())
            .finish_non_exhaustive()
    }
}

impl ModelSpec {
    /// Declares `name` as another name of variable `vr` (FMI 3.0 sec.
    /// 2.4.7.3: an `<Alias name= description=>` element of the variable;
    /// the name must be unique among variables and aliases). Written to the
    /// FMI 3 model description only (FMI 2 has no alias element: its
    /// aliases are variables of their own sharing a value reference), for
    /// scalar variables other than Strings.
    pub fn alias(mut self, vr: Vr, name: &'static str, description: &'static str) -> Self {
        self.aliases.push((vr, name, description));
        self
    }

    /// The aliases of variable `vr`: (name, description).
    pub fn aliases_of(&self, vr: Vr) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.aliases
            .iter()
            .filter(move |a| a.0 == vr)
            .map(|&(_, name, description)| (name, description))
    }
}

impl ModelSpec {
    /// A new spec with only the `time` variable.
    pub fn new(
        name: &'static str,
        description: &'static str,
        factory: impl Fn(&Values) -> Result<Box<dyn Model>, String> + Send + Sync + 'static,
    ) -> Self {
        ModelSpec {
            name,
            description,
            variables: vec![Variable::time()],
            experiment: DefaultExperiment {
                start_time: 0.0,
                stop_time: 10.0,
                step_size: 1e-3,
            },
            max_output_derivative_order: 0,
            can_interpolate_inputs: true,
            provides_directional_derivatives: true,
            might_return_early: false,
            factory: std::sync::Arc::new(move |values: &Values, _: &str| factory(values)),
            aliases: Vec::new(),
            model_exchange: None,
            event_mode: false,
            scheduled_execution: false,
            scheduled_execution_only: false,
        }
    }

    /// Declares the FMI 3 Scheduled Execution interface (FMI 3.0 sec. 5;
    /// `<ScheduledExecution>` beside `<CoSimulation>`): each input Clock
    /// is a model partition the importer activates with
    /// `fmi3ActivateModelPartition(clock, t)`, which runs the model's
    /// output equation ([`Model::outputs`]) and update
    /// ([`crate::EventModel::update_discrete_states`]) with the Clock
    /// active (its value 1). Needs [`ModelSpec::event_mode`] and input
    /// Clocks. A partition that ticks an output Clock or arms a
    /// `countdown` Clock ([`crate::EventModel::countdown_interval`]) puts
    /// the instance into Clock Update Mode and calls the importer's
    /// `clockUpdate` ([`ModelSpec::needs_clock_update`]).
    pub fn scheduled_execution(mut self) -> Self {
        self.scheduled_execution = true;
        self
    }

    /// Declares Scheduled Execution as the model's only interface (as
    /// [`ModelExchangeSpec::without_co_simulation`] does for Model
    /// Exchange): `<ScheduledExecution>` without `<CoSimulation>` (and
    /// without `<ModelExchange>`); `fmi3InstantiateCoSimulation` returns
    /// NULL, `fmi3InstantiateScheduledExecution` makes the instance. The
    /// model partitions run as with [`ModelSpec::scheduled_execution`]
    /// (the model implements [`Model::event_mode`] for its update), but
    /// the spec declares no [`ModelSpec::event_mode`] (`hasEventMode` is
    /// a Co-Simulation attribute): Clock Activation Mode needs none. Every
    /// input Clock needs a [`Variable::priority`].
    pub fn scheduled_execution_only(mut self) -> Self {
        self.scheduled_execution = true;
        self.scheduled_execution_only = true;
        self
    }

    /// Declares events in Co-Simulation (FMI 3.0 sec. 4.2): the model
    /// implements [`Model::event_mode`]. FMI 3 `hasEventMode="true"` (the
    /// importer may instantiate with `eventModeUsed = true` and handle the
    /// events in Event Mode) and `mightReturnEarlyFromDoStep="true"` (a
    /// step stops at an event, with early return, where the importer
    /// allows it). Without Event Mode (FMI 2 too) the kit handles the
    /// events inside the step.
    pub fn event_mode(mut self) -> Self {
        self.event_mode = true;
        self.might_return_early = true;
        self
    }

    /// Declares a Model Exchange interface (FMI 2.0 sec. 3, FMI 3.0 sec.
    /// 3): the continuous states, event indicators and step events of
    /// `me`; the model implements [`Model::model_exchange`]. The FMU keeps
    /// its Co-Simulation interface unless `me` says
    /// [`ModelExchangeSpec::without_co_simulation`].
    pub fn model_exchange(mut self, me: ModelExchangeSpec) -> Self {
        self.model_exchange = Some(me);
        self
    }

    /// Whether the FMU has a Model Exchange interface.
    pub fn has_model_exchange(&self) -> bool {
        self.model_exchange.is_some()
    }

    /// Whether the FMU has a Co-Simulation interface (every model but the
    /// Model Exchange only and the Scheduled Execution only ones).
    pub fn has_co_simulation(&self) -> bool {
        !self.scheduled_execution_only
            && self
                .model_exchange
                .as_ref()
                .is_none_or(|me| me.co_simulation)
    }

    /// Whether the model's partitions and events run through
    /// [`Model::event_mode`]: [`ModelSpec::event_mode`] or Scheduled
    /// Execution only (the instance then keeps the event and Clock state).
    pub fn has_event_equations(&self) -> bool {
        self.event_mode || self.scheduled_execution_only
    }

    /// Adds a variable.
    pub fn var(mut self, v: Variable) -> Self {
        self.variables.push(v);
        self
    }

    /// Sets the default experiment.
    pub fn experiment(mut self, start_time: f64, stop_time: f64, step_size: f64) -> Self {
        self.experiment = DefaultExperiment {
            start_time,
            stop_time,
            step_size,
        };
        self
    }

    /// Sets the highest analytic output derivative order.
    pub fn output_derivatives(mut self, order: u32) -> Self {
        self.max_output_derivative_order = order;
        self
    }

    /// Sets whether the model integrates polynomial inputs (FMI 2
    /// `canInterpolateInputs`; true by default).
    pub fn interpolate_inputs(mut self, can: bool) -> Self {
        self.can_interpolate_inputs = can;
        self
    }

    /// Sets whether the model provides d(output)/d(input) (true by default).
    pub fn directional_derivatives(mut self, provides: bool) -> Self {
        self.provides_directional_derivatives = provides;
        self
    }

    /// Declares that a step may end early ([`StepError::Terminate`] before
    /// `t + h`): FMI 3 `mightReturnEarlyFromDoStep="true"`.
    pub fn might_return_early(mut self, might: bool) -> Self {
        self.might_return_early = might;
        self
    }

    /// Whether the model has a build for `version`: always for FMI 3; for
    /// FMI 2 unless a variable has an FMI 3 only type ([`VarType::in_fmi2`])
    /// or causality (`structuralParameter`, [`Causality::in_fmi2`]).
    /// FMI 3 arrays ([`Variable::dims`]) are FMI 3 only too.
    pub fn supports(&self, version: crate::caps::FmiVersion) -> bool {
        version == crate::caps::FmiVersion::Fmi3 || self.first_fmi3_only().is_none()
    }

    /// The first variable of an FMI 3 only type or causality, if any (why
    /// the model has no FMI 2 build; [`Variable::fmi3_only_reason`] says which).
    pub fn first_fmi3_only(&self) -> Option<&Variable> {
        self.variables
            .iter()
            .find(|v| v.fmi3_only_reason().is_some())
    }

    /// Whether the model has structural parameters (and so an FMI 3
    /// Configuration Mode).
    pub fn has_structural_parameters(&self) -> bool {
        self.variables
            .iter()
            .any(|v| v.causality == Causality::StructuralParameter)
    }

    /// Looks a variable up by value reference.
    pub fn variable(&self, vr: Vr) -> Option<&Variable> {
        self.variables.get(vr as usize).filter(|v| v.vr == vr)
    }

    /// Looks a variable up by name.
    pub fn variable_by_name(&self, name: &str) -> Option<&Variable> {
        self.variables.iter().find(|v| v.name == name)
    }

    /// Variables of a causality, in vr order.
    pub fn with_causality(&self, c: Causality) -> impl Iterator<Item = &Variable> {
        self.variables.iter().filter(move |v| v.causality == c)
    }

    /// Whether the model has `String` variables (whose values
    /// [`Values`] holds beside the numbers).
    pub fn has_strings(&self) -> bool {
        self.variables.iter().any(|v| v.ty == VarType::String)
    }

    /// Whether the model has FMI 3 array variables (whose elements
    /// [`Values`] holds beside the scalars, [`Values::array`]).
    pub fn has_arrays(&self) -> bool {
        self.variables.iter().any(Variable::is_array)
    }

    /// The current shape of variable `v` (empty for a scalar): each
    /// dimension fixed or the value of its structural parameter in `values`.
    pub fn shape(&self, v: &Variable, values: &Values) -> Vec<usize> {
        v.dimensions
            .iter()
            .map(|d| match d {
                Dimension::Fixed(n) => usize::try_from(*n).unwrap_or(usize::MAX),
                Dimension::Structural(vr) => {
                    let x = values[*vr];
                    if x.is_finite() && x >= 0.0 {
                        // Whole (the UInt64 parameter holds whole numbers);
                        // saturates beyond usize.
                        x as usize
                    } else {
                        0
                    }
                }
            })
            .collect()
    }

    /// The arrays with a dimension given by structural parameter `vr`.
    pub fn sized_by(&self, vr: Vr) -> impl Iterator<Item = &Variable> {
        self.variables
            .iter()
            .filter(move |v| v.dimensions.contains(&Dimension::Structural(vr)))
    }

    /// The start values of array `v` at `shape`, row-major (empty without
    /// [`Variable::array_start`]).
    pub fn array_start_at(&self, v: &Variable, shape: &[usize]) -> Vec<f64> {
        let Some(start) = v.array_start else {
            return Vec::new();
        };
        resized(&[], &[], shape, &|i| start.at(i))
    }

    /// The start values of array `v` at its start shape (the structural
    /// parameters at their start values): those `modelDescription.xml`
    /// declares.
    pub fn array_start_values(&self, v: &Variable) -> Vec<f64> {
        let starts = self.start_values_scalar();
        self.array_start_at(v, &self.shape(v, &starts))
    }

    fn start_values_scalar(&self) -> Values {
        Values::from_numbers(
            self.variables
                .iter()
                .map(|v| v.start.unwrap_or(0.0))
                .collect(),
        )
    }

    /// The start values of all variables (0 / "" where there is none).
    /// Strings are held only for a model with `String` variables.
    /// Arrays ([`Values::array`]) are held, at their start shapes, only for
    /// a model with arrays.
    pub fn start_values(&self) -> Values {
        let mut values = self.start_values_scalar();
        if self.has_strings() {
            values.1 = self
                .variables
                .iter()
                .map(|v| v.start_string.unwrap_or("").to_string())
                .collect();
        }
        if self.has_arrays() {
            let arrays = self
                .variables
                .iter()
                .map(|v| {
                    if v.is_array() {
                        let shape = self.shape(v, &values);
                        match v.array_start {
                            Some(_) => self.array_start_at(v, &shape),
                            None => vec![0.0; element_count(&shape)],
                        }
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            values.2 = arrays;
        }
        values
    }

    /// Checks the spec is consistent: dense value references starting at
    /// time = 0, unique names, start values where required, dependencies
    /// that point at inputs, start / min / max values the type holds
    /// ([`VarType::holds`]: integers whole and in range, `Float32` values
    /// `f32` values, Boolean starts 0 or 1), non-float (integer, Boolean)
    /// variables that are not continuous and carry no unit, and dependency
    /// kinds other than `dependent` only between float variables.
    pub fn check(&self) -> Result<(), String> {
        if self.event_mode && !self.has_co_simulation() {
            return Err(format!(
                "{}: event mode (ModelSpec::event_mode) is a Co-Simulation feature, and the model has no Co-Simulation interface",
                self.name
            ));
        }
        let mut names = std::collections::HashSet::new();
        for (i, v) in self.variables.iter().enumerate() {
            if v.vr as usize != i {
                return Err(format!(
                    "{}: variable {} has vr {} but position {} (value references must be dense and ordered)",
                    self.name, v.name, v.vr, i
                ));
            }
            if !names.insert(v.name) {
                return Err(format!("{}: duplicate variable name {}", self.name, v.name));
            }
            let needs_start = !v.is_clock() && v.causality == Causality::Input
                || v.causality.is_parameter()
                || matches!(
                    v.effective_initial(),
                    Some(Initial::Exact | Initial::Approx)
                );
            if v.ty == VarType::String && v.start.is_some() {
                return Err(format!(
                    "{}: String {} has a numeric start value (use Variable::start_str)",
                    self.name, v.name
                ));
            }
            if v.ty != VarType::String && v.start_string.is_some() {
                return Err(format!(
                    "{}: {} {} has a string start value but is no String",
                    self.name,
                    v.ty.fmi3_name(),
                    v.name
                ));
            }
            if v.is_array() && v.start.is_some() {
                return Err(format!(
                    "{}: array {} has a scalar start value (Variable::dims turns it into the start of every element)",
                    self.name, v.name
                ));
            }
            if !v.is_array() && v.array_start.is_some() {
                return Err(format!(
                    "{}: {} has array start values but no dimensions (Variable::dims)",
                    self.name, v.name
                ));
            }
            let has_start = if v.ty == VarType::String {
                v.start_string.is_some()
            } else if v.is_array() {
                v.array_start.is_some()
            } else {
                v.start.is_some()
            };
            if needs_start != has_start {
                return Err(format!(
                    "{}: variable {} start value presence is wrong",
                    self.name, v.name
                ));
            }
            match (v.ty, v.start) {
                (ty, Some(s)) if ty.is_integer() && !ty.holds(s) => {
                    let (lo, hi) = ty.bounds().unwrap_or((0.0, 0.0));
                    return Err(if s.fract() != 0.0 {
                        format!(
                            "{}: integer {} has non-integer start {s}",
                            self.name, v.name
                        )
                    } else {
                        format!(
                            "{}: integer {} has start {s} outside the range of {} ({} to {})",
                            self.name,
                            v.name,
                            ty.fmi3_name(),
                            lo as i128,
                            hi as i128
                        )
                    });
                }
                (VarType::Boolean, Some(s)) if s != 0.0 && s != 1.0 => {
                    return Err(format!(
                        "{}: Boolean {} has start {s} (must be 0 or 1)",
                        self.name, v.name
                    ));
                }
                (VarType::Float32, Some(s)) if !VarType::Float32.holds(s) => {
                    return Err(format!(
                        "{}: Float32 {} has start {s}, which is no f32 value",
                        self.name, v.name
                    ));
                }
                _ => {}
            }
            for (what, bound) in [("min", v.min), ("max", v.max)] {
                if let Some(b) = bound
                    && !matches!(v.ty, VarType::Boolean | VarType::String)
                    && !v.ty.holds(b)
                {
                    return Err(format!(
                        "{}: {} {} has {what} {b}, which the type cannot hold",
                        self.name,
                        v.ty.fmi3_name(),
                        v.name
                    ));
                }
            }
            if v.ty.is_discrete() {
                if v.variability == Variability::Continuous {
                    return Err(format!(
                        "{}: {} {} cannot be continuous (only Real / Float32 variables can)",
                        self.name,
                        v.ty.fmi2_name(),
                        v.name
                    ));
                }
                if v.causality == Causality::Independent {
                    return Err(format!(
                        "{}: the independent variable {} must be Real",
                        self.name, v.name
                    ));
                }
                if v.unit.is_some() || v.quantity.is_some() {
                    return Err(format!(
                        "{}: {} {} cannot have a unit or quantity here",
                        self.name,
                        v.ty.fmi2_name(),
                        v.name
                    ));
                }
            }
            if v.is_array() {
                self.check_array(v)?;
            }
            // FMI 3.0 sec. 2.4.7.4 allows tunable structural parameters, set
            // in Reconfiguration Mode; the kit has no Reconfiguration Mode.
            if v.causality == Causality::StructuralParameter && v.variability != Variability::Fixed
            {
                return Err(format!(
                    "{}: structural parameter {} must be fixed, not {} (the kit has no Reconfiguration Mode)",
                    self.name,
                    v.name,
                    v.variability.as_str()
                ));
            }
            // FMI 2.0 sec. 2.2.7 / FMI 3.0 sec. 2.4.7.4 allow tunable
            // calculated parameters and locals too; the kit does not.
            if v.variability == Variability::Tunable && v.causality != Causality::Parameter {
                return Err(format!(
                    "{}: {} is tunable but no parameter (only parameters can be tunable here)",
                    self.name, v.name
                ));
            }
            if v.variability == Variability::Constant
                && !matches!(v.causality, Causality::Output | Causality::Local)
            {
                return Err(format!(
                    "{}: {} is constant but has causality {} (only outputs and locals can be constants)",
                    self.name,
                    v.name,
                    v.causality.as_str()
                ));
            }
            if v.causality.is_parameter() && v.effective_initial() != Some(Initial::Exact) {
                return Err(format!(
                    "{}: {} {} must have initial exact",
                    self.name,
                    v.causality.as_str(),
                    v.name
                ));
            }
            if matches!(v.ty, VarType::Boolean | VarType::String)
                && (v.min.is_some() || v.max.is_some())
            {
                return Err(format!(
                    "{}: {} {} cannot have min / max",
                    self.name,
                    v.ty.fmi2_name(),
                    v.name
                ));
            }
            let me_derivative = self
                .model_exchange
                .as_ref()
                .is_some_and(|me| me.derivative_of(v.vr).is_some());
            if !v.dependencies.is_empty() && v.causality != Causality::Output && !me_derivative {
                return Err(format!(
                    "{}: {} has dependencies but is no output (or state derivative)",
                    self.name, v.name
                ));
            }
            for (d, kind) in &v.dependencies {
                match self.variable(*d) {
                    Some(k) if self.is_known(k) => {
                        // FMI 2.0 sec. 2.2.8 / FMI 3.0 sec. 2.4.8: the kinds
                        // constant, fixed, tunable, discrete are defined for
                        // Real (float) unknowns and knowns only.
                        if (v.ty.is_discrete() || k.ty.is_discrete())
                            && *kind != DependencyKind::Dependent
                        {
                            return Err(format!(
                                "{}: output {} depends on {} with kind {}, but only \"dependent\" is allowed unless both are Real",
                                self.name,
                                v.name,
                                k.name,
                                kind.as_str()
                            ));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "{}: output {} depends on vr {} which is no input{}",
                            self.name,
                            v.name,
                            d,
                            if self.has_model_exchange() {
                                ", continuous state or discrete state"
                            } else {
                                ""
                            }
                        ));
                    }
                }
            }
            if let Some(deps) = &v.initial_dependencies {
                for d in deps {
                    match self.variable(*d) {
                        Some(k)
                            if k.causality == Causality::Input || k.causality.is_parameter() => {}
                        _ => {
                            return Err(format!(
                                "{}: initial unknown {} depends on vr {} which is no known",
                                self.name, v.name, d
                            ));
                        }
                    }
                }
            }
        }
        if let Some(me) = &self.model_exchange {
            self.check_model_exchange(me)?;
        }
        self.check_clocks()?;
        match self.variables.first() {
            Some(t) if t.causality == Causality::Independent => Ok(()),
            _ => Err(format!(
                "{}: vr 0 must be the independent variable time",
                self.name
            )),
        }
    }

    /// Whether the model has FMI 3 Clocks ([`Variable::input_clock`],
    /// [`Variable::output_clock`]).
    pub fn has_clocks(&self) -> bool {
        self.variables.iter().any(Variable::is_clock)
    }

    /// The Clocks, in vr order.
    pub fn clock_variables(&self) -> impl Iterator<Item = &Variable> {
        self.variables.iter().filter(|v| v.is_clock())
    }

    /// The rules of Clocks and clocked variables: Clocks only with
    /// [`ModelSpec::event_mode`] (Co-Simulation; not with Model
    /// Exchange) or [`ModelSpec::scheduled_execution_only`] (Scheduled
    /// Execution: every input Clock with a `priority`); no Clock has a
    /// priority but input Clocks; Clocks scalar inputs or outputs,
    /// discrete, without start value; output Clocks `triggered`; the
    /// timing of input Clocks ([`ModelSpec::check_clock_timing`]); no
    /// `supportsFraction`; clocked variables discrete, scalar, no
    /// parameters, clocked by Clocks (and no Clock clocked).
    fn check_clocks(&self) -> Result<(), String> {
        let name = self.name;
        let has_clocks = self.has_clocks();
        if self.scheduled_execution {
            self.check_scheduled_clocks()?;
        }
        if has_clocks && !self.has_event_equations() {
            return Err(format!(
                "{name}: Clocks need event mode (ModelSpec::event_mode; FMI 3.0 sec. 2.3.1: eventModeUsed = true is required for FMUs with clocks)"
            ));
        }
        if has_clocks && self.model_exchange.is_some() {
            return Err(format!(
                "{name}: the kit has Clocks in Co-Simulation only, and this model declares Model Exchange"
            ));
        }
        for v in &self.variables {
            if let Some(c) = &v.clock {
                self.check_clock(v, c)?;
            }
            self.check_clocked(v)?;
        }
        for v in &self.variables {
            for (d, _) in &v.dependencies {
                if self
                    .variable(*d)
                    .is_some_and(|k| k.is_clock() && k.causality == Causality::Output)
                {
                    return Err(format!(
                        "{name}: {} depends on the output Clock vr {d} (dependencies name knowns)",
                        v.name
                    ));
                }
            }
        }
        Ok(())
    }

    /// Scheduled Execution: event equations, input Clocks (the model
    /// partitions), each with a `priority` (FMI 3.0 sec. 2.4.4).
    fn check_scheduled_clocks(&self) -> Result<(), String> {
        let name = self.name;
        let input_clocks = self
            .clock_variables()
            .filter(|v| v.causality == Causality::Input)
            .count();
        if !self.has_event_equations() || input_clocks == 0 {
            return Err(format!(
                "{name}: Scheduled Execution needs event mode and input Clocks (its model partitions; \
                 event mode: ModelSpec::event_mode, or ModelSpec::scheduled_execution_only)"
            ));
        }
        if let Some(v) = self.clock_variables().find(|v| {
            v.causality == Causality::Input && v.clock.is_some_and(|c| c.priority.is_none())
        }) {
            return Err(format!(
                "{name}: input Clock {} has no priority (Variable::priority; FMI 3.0 sec. 2.4.4: \
                 mandatory for the input Clocks of Scheduled Execution)",
                v.name
            ));
        }
        Ok(())
    }

    /// The rules of one Clock (see [`ModelSpec::check_clocks`]).
    fn check_clock(&self, v: &Variable, c: &ClockAttrs) -> Result<(), String> {
        let what = format!("{}: Clock {}", self.name, v.name);
        if !matches!(v.causality, Causality::Input | Causality::Output) {
            return Err(format!(
                "{what} has causality {} (only input and output Clocks here)",
                v.causality.as_str()
            ));
        }
        if v.ty != VarType::Boolean
            || v.variability != Variability::Discrete
            || v.is_array()
            || v.start.is_some()
            || v.unit.is_some()
        {
            return Err(format!(
                "{what} must be a scalar discrete Clock without start value or unit (Variable::input_clock / output_clock)"
            ));
        }
        let iv = c.interval_variability;
        if v.causality == Causality::Output && iv != IntervalVariability::Triggered {
            return Err(format!(
                "{what} is an output Clock with intervalVariability {}: output Clocks must be triggered (FMI 3.0 sec. 2.2.9.2)",
                iv.as_str()
            ));
        }
        if v.causality == Causality::Output && c.priority.is_some() {
            return Err(format!(
                "{what} is an output Clock with a priority (FMI 3.0 sec. 2.4.4: output Clocks must not have one)"
            ));
        }
        if v.causality == Causality::Input && !v.dependencies.is_empty() {
            return Err(format!("{what} is an input Clock with dependencies"));
        }
        if c.supports_fraction {
            return Err(format!(
                "{what} has supportsFraction = true: the kit implements the Decimal functions only"
            ));
        }
        Self::check_clock_timing(&what, c)?;
        if !v.clocks.is_empty() {
            return Err(format!(
                "{what} is clocked (Clocks of Clocks are not supported here)"
            ));
        }
        Ok(())
    }

    /// The timing attributes of a Clock: a `constant` one has a finite
    /// positive `intervalDecimal`; a `fixed` or `tunable` one may have one
    /// (else the model gives interval and shift,
    /// [`crate::EventModel::periodic_clock`], so it has no `shiftDecimal`
    /// either); a periodic Clock's `shiftDecimal` finite and >= 0; the
    /// others (`changing`, `countdown`: the model gives their intervals,
    /// [`crate::EventModel::changing_interval`],
    /// [`crate::EventModel::countdown_interval`]; `triggered`) have
    /// neither.
    fn check_clock_timing(what: &str, c: &ClockAttrs) -> Result<(), String> {
        let iv = c.interval_variability;
        if !iv.is_periodic() {
            if c.interval_decimal.is_some() || c.shift_decimal.is_some() {
                return Err(format!(
                    "{what} is {}: only periodic Clocks have intervalDecimal / shiftDecimal",
                    iv.as_str()
                ));
            }
            return Ok(());
        }
        match c.interval_decimal {
            Some(x) if x.is_finite() && x > 0.0 => {}
            Some(x) => {
                return Err(format!(
                    "{what} has intervalDecimal {x} (must be finite and > 0)"
                ));
            }
            None if iv == IntervalVariability::Constant => {
                return Err(format!(
                    "{what} is a constant periodic Clock without intervalDecimal (Variable::interval)"
                ));
            }
            None if c.shift_decimal.is_some() => {
                return Err(format!(
                    "{what} is a {} Clock without intervalDecimal and with shiftDecimal: without \
                     intervalDecimal the model gives the interval and the shift (EventModel::periodic_clock)",
                    iv.as_str()
                ));
            }
            None => {}
        }
        match c.shift_decimal {
            Some(s) if !(s.is_finite() && s >= 0.0) => Err(format!(
                "{what} has shiftDecimal {s} (must be finite and >= 0)"
            )),
            _ => Ok(()),
        }
    }

    /// The rules of a clocked variable (see [`ModelSpec::check_clocks`]).
    fn check_clocked(&self, v: &Variable) -> Result<(), String> {
        if v.clocks.is_empty() {
            return Ok(());
        }
        let what = format!("{}: clocked variable {}", self.name, v.name);
        if v.variability != Variability::Discrete
            || v.is_array()
            || v.causality.is_parameter()
            || v.causality == Causality::Independent
        {
            return Err(format!(
                "{what} must be a discrete scalar input, output or local (Variable::clocked_by)"
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for &c in &v.clocks {
            match self.variable(c) {
                Some(k) if k.is_clock() => {}
                _ => return Err(format!("{what} is clocked by vr {c}, which is no Clock")),
            }
            if !seen.insert(c) {
                return Err(format!("{what} names Clock vr {c} twice"));
            }
        }
        Ok(())
    }

    /// Whether the model's Scheduled Execution needs the importer's
    /// `clockUpdate` callback (Clock Update Mode, FMI 3.0 sec. 5.2.2): it
    /// declares Scheduled Execution and has output Clocks or `countdown`
    /// input Clocks.
    pub fn needs_clock_update(&self) -> bool {
        self.scheduled_execution
            && self.clock_variables().any(|v| {
                v.causality == Causality::Output
                    || v.clock
                        .is_some_and(|c| c.interval_variability == IntervalVariability::Countdown)
            })
    }

    /// Whether `k` can be a known of an output's or state derivative's
    /// `dependencies`: an input; with Model Exchange also a continuous
    /// state or a discrete state (a discrete local or output; FMI 3.0 sec.
    /// 2.4.8: the knowns in Event and Continuous-Time Mode).
    fn is_known(&self, k: &Variable) -> bool {
        if k.causality == Causality::Input {
            return true;
        }
        let Some(me) = &self.model_exchange else {
            return false;
        };
        me.state_of(k.vr).is_some()
            || (k.variability == Variability::Discrete
                && matches!(k.causality, Causality::Local | Causality::Output))
    }

    /// The rules of a Model Exchange interface: states and their
    /// derivatives continuous scalar Real (Float64) locals or outputs, each
    /// state once, a derivative with `initial` calculated unless it is a
    /// state itself (der(s) = v with v a state), nominal values finite and
    /// > 0, event indicators continuous scalar Real locals or outputs.
    fn check_model_exchange(&self, me: &ModelExchangeSpec) -> Result<(), String> {
        let continuous = |vr: Vr, what: &str| -> Result<&Variable, String> {
            match self.variable(vr) {
                Some(v)
                    if v.ty == VarType::Real
                        && v.variability == Variability::Continuous
                        && !v.is_array()
                        && matches!(v.causality, Causality::Local | Causality::Output) =>
                {
                    Ok(v)
                }
                Some(v) => Err(format!(
                    "{}: {what} {} must be a continuous scalar Real local or output",
                    self.name, v.name
                )),
                None => Err(format!("{}: {what} vr {vr} is no variable", self.name)),
            }
        };
        let mut seen = std::collections::HashSet::new();
        for s in &me.states {
            let x = continuous(s.state, "state")?;
            let dx = continuous(s.derivative, "state derivative")?;
            if !seen.insert(s.state) {
                return Err(format!("{}: state {} is declared twice", self.name, x.name));
            }
            if s.state == s.derivative {
                return Err(format!(
                    "{}: state {} cannot be its own derivative",
                    self.name, x.name
                ));
            }
            if me.state_of(s.derivative).is_none()
                && dx.effective_initial() != Some(Initial::Calculated)
            {
                return Err(format!(
                    "{}: state derivative {} must have initial calculated",
                    self.name, dx.name
                ));
            }
            if let Some(n) = s.nominal
                && !(n.is_finite() && n > 0.0)
            {
                return Err(format!(
                    "{}: state {} has nominal {n} (must be finite and > 0)",
                    self.name, x.name
                ));
            }
        }
        let derivatives: std::collections::HashSet<Vr> =
            me.states.iter().map(|s| s.derivative).collect();
        if derivatives.len() != me.states.len() {
            return Err(format!(
                "{}: two states share a derivative variable",
                self.name
            ));
        }
        for &z in &me.event_indicators {
            continuous(z, "event indicator")?;
        }
        Ok(())
    }

    /// The rules of an array variable: a numeric or Boolean type, no
    /// independent variable or structural parameter, fixed dimensions of at
    /// least 1, structural dimensions naming scalar `UInt64` structural
    /// parameters, start values the type holds.
    fn check_array(&self, v: &Variable) -> Result<(), String> {
        if v.ty == VarType::String {
            return Err(format!(
                "{}: String {} cannot be an array here",
                self.name, v.name
            ));
        }
        if matches!(
            v.causality,
            Causality::Independent | Causality::StructuralParameter
        ) {
            return Err(format!(
                "{}: {} {} cannot be an array",
                self.name,
                v.causality.as_str(),
                v.name
            ));
        }
        for d in &v.dimensions {
            match d {
                Dimension::Fixed(0) => {
                    return Err(format!(
                        "{}: array {} has a fixed dimension of 0",
                        self.name, v.name
                    ));
                }
                Dimension::Fixed(_) => {}
                Dimension::Structural(vr) => match self.variable(*vr) {
                    Some(p)
                        if p.causality == Causality::StructuralParameter
                            && p.ty == VarType::UInt64
                            && !p.is_array() => {}
                    _ => {
                        return Err(format!(
                            "{}: a dimension of array {} is vr {vr}, which is no UInt64 structural parameter",
                            self.name, v.name
                        ));
                    }
                },
            }
        }
        if let Some(x) = self
            .array_start_values(v)
            .into_iter()
            .find(|&x| !v.ty.holds(x))
        {
            return Err(format!(
                "{}: {} array {} has the start value {x}, which the type cannot hold",
                self.name,
                v.ty.fmi3_name(),
                v.name
            ));
        }
        Ok(())
    }

    /// A fingerprint of the variable list (names, vrs, causalities,
    /// variabilities, types, start values, dependencies): FNV-1a 64.
    pub fn variables_hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.str(self.name);
        for v in &self.variables {
            h.str(v.name);
            h.bytes(&v.vr.to_le_bytes());
            h.str(v.causality.as_str());
            h.str(v.variability.as_str());
            h.str(v.ty.hash_tag());
            h.bytes(&v.start.unwrap_or(f64::NAN).to_bits().to_le_bytes());
            // Only String variables have one: the hashes of models without
            // are what they were before String variables existed.
            if let Some(s) = v.start_string {
                h.str(s);
            }
            h.str(v.unit.map(|u| u.name).unwrap_or(""));
            for (d, k) in &v.dependencies {
                h.bytes(&d.to_le_bytes());
                h.str(k.as_str());
            }
            // Only arrays have these: the hashes of models without arrays
            // are what they were before arrays existed.
            for d in &v.dimensions {
                match d {
                    Dimension::Fixed(n) => {
                        h.str("dim");
                        h.bytes(&n.to_le_bytes());
                    }
                    Dimension::Structural(vr) => {
                        h.str("dimvr");
                        h.bytes(&vr.to_le_bytes());
                    }
                }
            }
            if v.is_array() {
                for x in self.array_start_values(v) {
                    h.bytes(&x.to_bits().to_le_bytes());
                }
            }
            // Only Clocks and clocked variables have these.
            if let Some(c) = &v.clock {
                h.str("clock");
                h.str(c.interval_variability.as_str());
                h.bytes(
                    &c.interval_decimal
                        .unwrap_or(f64::NAN)
                        .to_bits()
                        .to_le_bytes(),
                );
                h.bytes(&c.shift_decimal.unwrap_or(f64::NAN).to_bits().to_le_bytes());
                h.bytes(&[
                    u8::from(c.supports_fraction),
                    u8::from(c.can_be_deactivated),
                ]);
                // Only a Clock with a priority has this: the hashes of the
                // others are what they were before priorities existed.
                if let Some(p) = c.priority {
                    h.str("priority");
                    h.bytes(&p.to_le_bytes());
                }
            }
            for c in &v.clocks {
                h.str("clocks");
                h.bytes(&c.to_le_bytes());
            }
        }
        if self.scheduled_execution {
            h.str("se");
        }
        if self.scheduled_execution_only {
            h.str("se-only");
        }
        // Only a model with Model Exchange has this: the hashes of the
        // others are what they were before Model Exchange existed.
        if let Some(me) = &self.model_exchange {
            h.str("me");
            for st in &me.states {
                h.bytes(&st.state.to_le_bytes());
                h.bytes(&st.derivative.to_le_bytes());
                h.bytes(&st.nominal_value().to_bits().to_le_bytes());
                h.bytes(&[u8::from(st.reinit)]);
            }
            h.str("z");
            for z in &me.event_indicators {
                h.bytes(&z.to_le_bytes());
            }
            h.bytes(&[
                u8::from(me.needs_completed_integrator_step),
                u8::from(me.partial_derivatives),
                u8::from(me.co_simulation),
            ]);
        }
        h.finish()
    }
}

/// The stored value of a Boolean: 1.0 for true, 0.0 for false.
pub fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// FNV-1a 64-bit hash (stable across builds and platforms).
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub(crate) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
        self.bytes(&[0xff]);
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// All variable values, indexed by value reference: the numbers (`.0`,
/// every type but `String`, see [`VarType`]) and, for a model with
/// `String` variables, the strings ([`Values::str`], [`Values::set_str`];
/// empty, without allocation, for a model without), and for a model with
/// FMI 3 arrays the elements of each array, row-major ([`Values::array`];
/// the `f64` slot of an array is unused).
#[derive(Debug, Clone, PartialEq)]
pub struct Values(pub Vec<f64>, Vec<String>, Vec<Vec<f64>>);

impl Values {
    /// Values of a model without `String` variables or arrays.
    pub fn from_numbers(numbers: Vec<f64>) -> Self {
        Values(numbers, Vec::new(), Vec::new())
    }

    /// The elements of array `vr`, row-major, at its current shape (empty
    /// for any other vr). The kit keeps the length equal to the product of
    /// the current dimensions ([`ModelSpec::shape`]).
    pub fn array(&self, vr: Vr) -> &[f64] {
        self.2.get(vr as usize).map_or(&[], Vec::as_slice)
    }

    /// The elements of array `vr`, to write in place (a model writes its
    /// array outputs and locals here; the length is the kit's).
    pub fn array_mut(&mut self, vr: Vr) -> &mut [f64] {
        match self.2.get_mut(vr as usize) {
            Some(a) => a.as_mut_slice(),
            None => &mut [],
        }
    }

    /// Every array, indexed by value reference (empty for a model without
    /// arrays; empty for a scalar).
    pub fn arrays(&self) -> &[Vec<f64>] {
        &self.2
    }

    /// Replaces the elements of array `vr` (resizing it).
    pub(crate) fn set_array(&mut self, vr: Vr, elements: Vec<f64>) {
        let i = vr as usize;
        if i >= self.2.len() {
            self.2.resize(i + 1, Vec::new());
        }
        self.2[i] = elements;
    }

    /// Replaces every array (FMU-state restore).
    pub(crate) fn set_arrays(&mut self, arrays: Vec<Vec<f64>>) {
        self.2 = arrays;
    }

    /// The value of a `String` variable ("" for any other vr).
    pub fn str(&self, vr: Vr) -> &str {
        self.1.get(vr as usize).map_or("", String::as_str)
    }

    /// Sets the value of a `String` variable (reusing its buffer).
    pub fn set_str(&mut self, vr: Vr, s: &str) {
        let slot = self.str_mut(vr);
        slot.clear();
        slot.push_str(s);
    }

    /// The value of a `String` variable, to write in place.
    pub fn str_mut(&mut self, vr: Vr) -> &mut String {
        let i = vr as usize;
        if i >= self.1.len() {
            self.1.resize(i + 1, String::new());
        }
        &mut self.1[i]
    }

    /// Every string, indexed by value reference (empty for a model without
    /// `String` variables).
    pub fn strings(&self) -> &[String] {
        &self.1
    }

    /// Replaces every string (FMU-state restore).
    pub(crate) fn set_strings(&mut self, strings: Vec<String>) {
        self.1 = strings;
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of an integer variable (stored as a whole `f64`).
    pub fn int(&self, vr: Vr) -> i64 {
        self[vr] as i64
    }

    /// The value of a Boolean variable (stored as 0.0 / 1.0; anything but 0 is true).
    pub fn bool(&self, vr: Vr) -> bool {
        self[vr] != 0.0
    }

    /// Stores a Boolean as 0.0 / 1.0.
    pub fn set_bool(&mut self, vr: Vr, b: bool) {
        self[vr] = bool_value(b);
    }

    /// Checks that a parameter is strictly positive and finite.
    pub fn positive(&self, name: &str, vr: Vr) -> Result<f64, String> {
        let x = self[vr];
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(format!("{name} must be > 0, got {x}"))
        }
    }

    /// Checks that a parameter is non-negative and finite.
    pub fn non_negative(&self, name: &str, vr: Vr) -> Result<f64, String> {
        let x = self[vr];
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(format!("{name} must be >= 0, got {x}"))
        }
    }

    /// Checks that a parameter is finite.
    pub fn finite(&self, name: &str, vr: Vr) -> Result<f64, String> {
        let x = self[vr];
        if x.is_finite() {
            Ok(x)
        } else {
            Err(format!("{name} must be finite, got {x}"))
        }
    }

    /// Checks that an integer parameter is >= `min`.
    pub fn int_at_least(&self, name: &str, vr: Vr, min: i64) -> Result<i64, String> {
        let x = self.int(vr);
        if x >= min {
            Ok(x)
        } else {
            Err(format!("{name} must be >= {min}, got {x}"))
        }
    }
}

impl Index<Vr> for Values {
    type Output = f64;
    fn index(&self, vr: Vr) -> &f64 {
        // Value references are checked against the spec before they reach a
        // model; an out-of-range vr here is a bug in the model's own constants.
        static NAN: f64 = f64::NAN;
        self.0.get(vr as usize).unwrap_or(&NAN)
    }
}

impl IndexMut<Vr> for Values {
    fn index_mut(&mut self, vr: Vr) -> &mut f64 {
        let i = vr as usize;
        if i >= self.0.len() {
            self.0.resize(i + 1, 0.0);
        }
        &mut self.0[i]
    }
}

/// Severity of a message a model logs during a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Informative (category `logDebug`).
    Info,
    /// A warning (category `logStatusWarning`).
    Warning,
    /// An error about to be returned (category `logStatusError`).
    Error,
}

/// A model's own state ([`Model::save_state`]): shared by the copies of
/// the FMU state that holds it, and compared by identity.
#[derive(Clone)]
pub struct ModelState(pub std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl PartialEq for ModelState {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for ModelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelState(..)")
    }
}

/// Why a step did not complete.
#[derive(Debug, Clone, PartialEq)]
pub enum StepError {
    /// The step failed; the instance is unusable until reset or a state restore.
    Error(String),
    /// The step stopped early at `reached` (states are valid there);
    /// FMI 2 answers `fmi2LastSuccessfulTime` with it.
    Discard {
        /// Time up to which the states are valid.
        reached: f64,
        /// Why.
        message: String,
    },
    /// The model is irrecoverably broken.
    Fatal(String),
    /// The model completed the step up to `reached` (its states are valid
    /// there) and asks to end the simulation (FMI 2: `fmi2DoStep` returns
    /// `fmi2Discard` and `fmi2GetBooleanStatus(fmi2Terminated)` is true;
    /// FMI 3: `terminateSimulation = true`, with early return or
    /// `fmi3Discard` if `reached < t + h`, see [`crate::Instance`]). A
    /// `reached` within 1e-9 (relative) of `t + h` counts as the full step.
    /// Further steps are refused until reset or an FMU-state restore.
    Terminate {
        /// Time up to which the states are valid.
        reached: f64,
        /// Why.
        message: String,
    },
}

/// A model. Implementations hold what they derived from the parameters;
/// continuous states live in [`Values`] as locals.
pub trait Model: Send {
    /// Sets the calculated variables (states) from the parameters. Called
    /// on leaving initialization mode and whenever values are read during it.
    fn init(&mut self, v: &mut Values);

    /// Integrates from `t` to `t + h` with the model's own solver. `u`
    /// gives the inputs as polynomials expanded at `t`. A Model Exchange
    /// only model (no Co-Simulation interface, never stepped) keeps the
    /// default, which fails.
    fn do_step(
        &mut self,
        t: f64,
        h: f64,
        v: &mut Values,
        u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        let _ = (t, h, v, u, log);
        Err(StepError::Error(
            "this model has no co-simulation step (Model Exchange only)".into(),
        ))
    }

    /// Computes the outputs (and input-dependent locals) at time `t` from the
    /// states in `v` and the current input values.
    fn outputs(&self, t: f64, v: &mut Values, u: &Inputs);

    /// The `order`-th time derivative of output `vr` at the current time, or
    /// `None` if the model does not provide it.
    fn output_derivative(&self, vr: Vr, order: u32, t: f64, v: &Values, u: &Inputs) -> Option<f64> {
        let _ = (vr, order, t, v, u);
        None
    }

    /// d(output)/d(input) at the current point, for outputs with feed-through
    /// (0 for the others).
    fn partial_derivative(&self, output: Vr, input: Vr, v: &Values) -> f64 {
        let _ = (output, input, v);
        0.0
    }

    /// What get-FMU-state saves of a model that keeps state outside its
    /// variables (an exported co-simulation: its inner FMUs). `None` (the
    /// default): the variables are the whole state, and a restored state
    /// rebuilds the model from them.
    fn save_state(&mut self) -> Option<Result<ModelState, String>> {
        None
    }

    /// Restores what [`Model::save_state`] saved (the variables are restored
    /// by the kit).
    fn restore_state(&mut self, state: &ModelState) -> Result<(), String> {
        let _ = state;
        Err("this model saves no state of its own".into())
    }

    /// The run ends (`fmi2Terminate` / `fmi3Terminate`): a model that holds
    /// resources of its own releases them, and may say a last word.
    /// Default: nothing.
    fn terminate(&mut self, log: &dyn Fn(LogLevel, &str)) {
        let _ = log;
    }

    /// The Model Exchange equations, for a model whose spec declares
    /// [`ModelSpec::model_exchange`] (`None`: co-simulation only).
    fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
        None
    }

    /// The Co-Simulation event equations, for a model whose spec declares
    /// [`ModelSpec::event_mode`] (`None`: steps without events,
    /// [`Model::do_step`]). A model with them is stepped through them
    /// only: its [`Model::do_step`] is not called.
    fn event_mode(&mut self) -> Option<&mut dyn crate::event_mode::EventModel> {
        None
    }
}
