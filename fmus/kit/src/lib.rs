//! `fmu-kit`: turns a Rust model into a real FMI 2.0 and FMI 3.0
//! co-simulation FMU, Model Exchange FMU, or FMU with both interfaces.
//!
//! What it is for:
//! - the model API ([`Model`], [`ModelSpec`], [`Variable`], [`Inputs`]):
//!   Real variables with units, discrete Integer, Boolean and String
//!   inputs, outputs and parameters (Strings held beside the `f64` values,
//!   [`Values::str`]), the FMI 3 only types Float32, Int8, UInt8,
//!   Int16, UInt16, UInt32, Int64, UInt64 ([`VarType`]; a model using one
//!   has an FMI 3 build only, [`ModelSpec::supports`]), FMI 3 structural
//!   parameters ([`Causality::StructuralParameter`], set in Configuration
//!   Mode only; FMI 3 only too), FMI 3 arrays of fixed or structural
//!   dimensions ([`Variable::dims`], [`Values::array`]; resized when a
//!   structural parameter is set), parameters validated with messages naming
//!   the parameter, inputs as polynomials (FMI 2 input derivatives; FMI 3
//!   intermediate update, see [`input`]), analytic output derivatives and
//!   d(output)/d(input);
//! - Model Exchange ([`model_exchange`]: [`ModelExchangeSpec`] declares the
//!   continuous states, event indicators and step events, a
//!   [`ContinuousModel`] computes the state derivatives and handles the
//!   events), with or without the Co-Simulation interface;
//! - Co-Simulation with events ([`event_mode`]: a model declaring
//!   [`ModelSpec::event_mode`] steps to its events and updates its
//!   discrete states in FMI 3 Event Mode, [`EventModel`]; handled inside
//!   the step without Event Mode), with FMI 3 Clocks: input Clocks
//!   (periodic, aperiodic — `changing`, `countdown` — or triggered; the
//!   model times the aperiodic ones and the `fixed` / `tunable` ones
//!   without `intervalDecimal`, [`EventModel::periodic_clock`],
//!   [`EventModel::changing_interval`], [`EventModel::countdown_interval`])
//!   and triggered output Clocks ([`Variable::input_clock`],
//!   [`Variable::output_clock`]), clocked variables
//!   ([`Variable::clocked_by`]), the Clock functions and their access rules
//!   (`instance/clocks.rs`, `instance/clock_timing.rs`), and FMI 3
//!   Scheduled Execution for a model that declares it
//!   ([`ModelSpec::scheduled_execution`]; Clock Update Mode through the
//!   importer's `clockUpdate`, `instance/scheduled.rs`);
//! - the C exports of every FMI 2.0 and FMI 3.0 function ([`export_fmi!`]),
//!   with the standards' state machines (co-simulation and Model Exchange,
//!   strict: every call they forbid refused), panics contained, and NULL /
//!   stale pointers refused with `Error` instead of undefined behaviour;
//! - `modelDescription.xml` for both versions ([`xml`]), capability variants
//!   and quirk builds (reproduced misbehaviours of real exporters,
//!   [`Quirk`]) encoded in the GUID / instantiation token ([`caps`]), and
//!   packaging into `.fmu` archives ([`package()`]);
//! - [`dist::ensure_built`], which keeps `fmus/dist` up to date for tests.
//!
//! What it is not: an importer (see `cosim-fmi`; [`testing::model_exchange`]
//! is a fixed-step Model Exchange importer for tests only).

pub mod caps;
pub mod dist;
pub mod event_mode;
pub mod ffi;
pub mod input;
pub mod instance;
pub mod model;
pub mod model_exchange;
pub mod package;
pub mod testing;
pub mod units;
pub mod xml;

pub use caps::{
    Capabilities, FmiVersion, ModelSource, Quirk, Resolver, Variant, parse_token, resolve, token,
};
pub use event_mode::{EventModel, EventStep, PeriodicTiming};
pub use input::{InputSource, Inputs};
pub use instance::{Instance, Interface, Status};
pub use model::{
    ArrayStart, Causality, ClockAttrs, DefaultExperiment, DependencyKind, Dimension, Factory,
    Initial, IntervalVariability, LogLevel, Model, ModelSpec, ModelState, StepError, TIME, Values,
    VarType, Variability, Variable, Vr, bool_value,
};
pub use model_exchange::{
    ContinuousModel, ContinuousState, EventUpdate, ModelExchangeSpec, StepEvent,
};
pub use package::{PackageRequest, model_identifier, package, package_with_resources};
