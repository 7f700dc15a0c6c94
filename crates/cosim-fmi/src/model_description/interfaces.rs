//! The interfaces an FMU declares (`<ModelExchange>`, `<CoSimulation>`,
//! FMI 3 `<ScheduledExecution>`) and why `cosim` cannot run one without
//! `<CoSimulation>`.

use serde::Serialize;

use super::ModelDescription;

/// One interface an FMU declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredInterface {
    /// `ModelExchange`, `CoSimulation` or `ScheduledExecution`, as the
    /// element is named.
    pub interface: &'static str,
    /// Its `modelIdentifier`.
    pub model_identifier: String,
}

impl ModelDescription {
    /// The interfaces the FMU declares, in the order of the standard
    /// (Model Exchange, Co-Simulation, Scheduled Execution).
    pub fn interfaces(&self) -> Vec<DeclaredInterface> {
        let mut out = Vec::new();
        if let Some(id) = &self.model_exchange {
            out.push(DeclaredInterface {
                interface: "ModelExchange",
                model_identifier: id.clone(),
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

    /// Why `cosim` cannot run this FMU, and what would: `None` when it
    /// declares `<CoSimulation>` (the only interface a co-simulation
    /// master drives), else (what it declares instead, the importers that
    /// run that). `<fmu>` in the second stands for the FMU's path.
    pub fn co_simulation_refusal(&self) -> Option<(String, String)> {
        if self.co_simulation.is_some() {
            return None;
        }
        const CS: &str = "cosim drives co-simulation FMUs only";
        const EXPORT: &str = "or export the model again with a Co-Simulation interface";
        let only = |what: &str| {
            format!("the FMU has no <CoSimulation> interface: it is {what} only ({CS})")
        };
        let me = format!(
            "a Model Exchange importer runs it, integrating the model with a solver of its own (FMPy: `fmpy simulate --interface-type ModelExchange <fmu>`, or `simulate_fmu('<fmu>', fmi_type='ModelExchange')` in Python); {EXPORT}"
        );
        Some(
            match (
                self.model_exchange.is_some(),
                self.scheduled_execution.is_some(),
            ) {
                (true, false) => (only("Model Exchange"), me),
                (false, true) => (
                    only("Scheduled Execution"),
                    format!(
                        "a Scheduled Execution importer runs it, activating its model partitions as their clocks tick (FMPy instantiates it: `instantiate_fmu(<unzipped dir>, <model description>, fmi_type='ScheduledExecution')`, the scheduling is the caller's); {EXPORT}"
                    ),
                ),
                (true, true) => (only("Model Exchange and Scheduled Execution"), me),
                (false, false) => (
                    format!(
                        "the FMU declares no interface (no <CoSimulation>, <ModelExchange> or <ScheduledExecution> element; {CS})"
                    ),
                    EXPORT.trim_start_matches("or ").to_string(),
                ),
            },
        )
    }

    /// [`ModelDescription::co_simulation_refusal`] in one sentence, for
    /// the FMU at `fmu`.
    pub fn co_simulation_refusal_text(&self, fmu: &str) -> Option<String> {
        self.co_simulation_refusal()
            .map(|(why, what)| format!("{why}; {}", what.replace("<fmu>", fmu)))
    }
}
