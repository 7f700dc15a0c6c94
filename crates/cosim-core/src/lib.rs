//! The co-simulation engine of `cosim`: the [`Subsystem`] interface masters
//! drive, the coupled [`System`] with its compiled routing, the masters,
//! their shared building blocks (input extrapolation, error indicators, step
//! control, state save/restore), observers that write outputs, and the run
//! loop ([`Execution`]).
//!
//! It knows nothing about scenario files: `cosim-scenario` builds a
//! [`System`] from one. It never sees FMI value references outside
//! [`subsystem::FmuSubsystem`].

pub mod controller;
pub mod error;
pub mod events;
pub mod execution;
pub mod extrapolation;
pub mod function;
pub mod hosted;
pub mod indicators;
pub mod input_file;
pub mod inputs;
pub mod master;
pub mod metrics;
pub mod nested;
pub mod observer;
pub mod output;
pub mod output_lock;
pub mod parallel;
pub mod placement;
pub mod structure;
pub mod subsystem;
pub mod system;
pub mod text;
pub mod time;
pub mod traced_text;
pub mod watchdog;

pub use error::{CoreError, Result};
pub use execution::{Execution, RunStatus, RunSummary};
pub use function::{FunctionKind, FunctionLink, FunctionSpec, LinkEnd, NumericType};
pub use master::{Master, StepReport};
pub use subsystem::{FmuSubsystem, SlotVar, Subsystem, SubsystemInfo};
pub use system::{BondPort, Connection, PowerBond, System, SystemSpec};
