//! The `cosim` scenario file: parsing, validation and resolution.
//!
//! A scenario (TOML, see `docs/scenario.md`) names the FMUs of a
//! co-simulation, their parameters, the connections between them, the
//! power bonds, the master and its settings, and what to write out. This
//! crate turns it into a [`ResolvedScenario`]: every name checked against
//! the FMUs' model descriptions and replaced by an index, every value typed,
//! every default filled in. It does not open FMUs or run anything.
//!
//! ```no_run
//! # fn demo(md_a: &cosim_fmi::ModelDescription, md_b: &cosim_fmi::ModelDescription)
//! # -> Result<(), cosim_scenario::ScenarioError> {
//! use cosim_scenario::{Overrides, Scenario};
//! let mut scenario = Scenario::load("b1.toml")?; // syntax, keys, types, ranges, FMU files
//! scenario.apply_overrides(&Overrides { stop: Some(2.0), ..Overrides::default() })?;
//! // open scenario.subsystems()[i].fmu.value with cosim_fmi::Fmu::open ...
//! let resolved = scenario.resolve(&[("chassis", md_a), ("wheel", md_b)])?;
//! for w in &resolved.warnings {
//!     eprintln!("{w}");
//! }
//! # Ok(()) }
//! ```
//!
//! Every error is a [`ScenarioError`] with the file, line and column of the
//! offending key or value, and a `help` for misspelt names; its `Display`
//! looks like a rustc diagnostic. Spans ([`Span`]) are kept in the resolved
//! scenario so that later stages can report at the right place with
//! [`ResolvedScenario::error_at`].

#![deny(missing_docs)]

pub mod assemble;
mod error;
pub mod events;
pub mod export;
mod input_csv;
mod long_arrays;
pub mod nest;
pub mod output_size;
mod overrides;
mod read;
mod resolve;
pub mod runner;
mod scenario;
pub mod session;
mod settings;
pub mod single;

pub use error::{
    Diagnostic, Located, Rendering, ScenarioError, Severity, Snippet, Span, did_you_mean, nearest,
    render as render_diagnostic,
};
pub use overrides::Overrides;
pub use resolve::{
    Assignment, BondPort, FunctionEnd, FunctionPort, ResolvedBond, ResolvedConnection,
    ResolvedFeed, ResolvedFunction, ResolvedFunctionConnection, ResolvedInputFile,
    ResolvedScenario, ResolvedSubsystem, Traced, ValueOrigin, VariableRef,
};
pub use scenario::{Scenario, SubsystemSpec};
pub use settings::{
    Aggregate, Controller, EnergyReference, FmuInterface, Indicator, Isolation, MasterKind,
    MasterSettings, NonFinite, Normalisation, OutputSettings, PiVariant, RichardsonEstimate,
    Sampling, Scheme, SolverMethod, SolverSpec, defaults,
};
