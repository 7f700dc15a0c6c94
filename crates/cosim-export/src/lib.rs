//! `cosim export`: a co-simulation packed as one FMU (`docs/export.md`).
//!
//! An exported FMU holds, besides its `modelDescription.xml`:
//! - `binaries/<platform>/<modelIdentifier>.so`: the `cosim-fmu` library,
//!   the cosim engine behind the kit's FMI 2.0 / FMI 3.0 C functions;
//! - `resources/cosim-export.toml`: the [`manifest::Manifest`] (which
//!   system, which variables are exposed);
//! - `resources/system/`: the system's scenario files and the FMUs they
//!   use, paths rewritten to the copies ([`pack`]).
//!
//! Both ends build the exported model's interface the same way
//! ([`interface::model_spec`]) from the same system: the exporter to write
//! the model description and the instantiation token, the library (at
//! instantiation, [`engine::resolve`]) to check the token against what it
//! finds in the FMU's resources and to run it ([`engine::SystemModel`]:
//! the system as a nested system of [`cosim_scenario::export`], stepped by
//! its own master to each communication point of the importer).

pub mod engine;
pub mod interface;
pub mod manifest;
mod messages;
pub mod pack;

pub use pack::{ExportError, ExportReport, ExportRequest, export};
