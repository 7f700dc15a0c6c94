//! FMI 2.0 and 3.0 import for `cosim`: Co-Simulation, and Model Exchange
//! at the level of the binding.
//!
//! This crate turns an `.fmu` file into something a master can drive:
//!
//! - [`archive`] extracts the zip safely (no path traversal, bounded size,
//!   no duplicate entries);
//! - [`binary`] checks the shared library (ELF headers against the file size
//!   and this machine, exported FMI functions) before it is loaded;
//! - [`model_description`] parses `modelDescription.xml` of either FMI
//!   version into one version-neutral model;
//! - [`bonds`] finds power-bond candidates (effort/flow pairs) on an FMU's
//!   interface from units, quantities and names;
//! - [`ffi`] binds the shared library's C functions (the only place with
//!   `unsafe`), and [`Instance`] is the safe, `Send` API over one instance;
//! - [`inspect`] summarises an FMU for `cosim inspect`;
//! - [`text`] bounds and escapes the text an FMU gives (log messages).
//!
//! It does not know about masters, connections or scenarios: those live in
//! `cosim-core` and `cosim-scenario`.
#![deny(missing_docs)]

pub mod archive;
pub mod binary;
pub mod bonds;
pub mod error;
pub mod events;
pub mod extraction;
pub mod ffi;
mod fmu;
pub mod inspect;
mod instance;
pub mod model_description;
mod model_exchange;
pub mod reuse;
pub mod text;

pub use error::{FmiError, Result};
pub use ffi::Status;
pub use ffi::call_log::{CallLogSink, CallLogTarget};
pub use ffi::{
    ClockUpdates, CompletedStep, DiscreteStatesUpdate, EventHandling, Interface, IntervalQualifier,
    Phase, StateHandle, StepCall, StepOutcome,
};
pub use fmu::Fmu;
pub use instance::{BoundStep, HeldStep, HeldValues, Instance, InstantiateOptions, Value};
pub use model_description::{FmiVersion, ModelDescription};
pub use model_exchange::{
    DEFAULT_RELATIVE_TOLERANCE, EventStatistics, InternalConnection, MemberShape,
    ModelExchangeStatistics, SolverMethod, SolverSettings, StronglyCoupled,
};
