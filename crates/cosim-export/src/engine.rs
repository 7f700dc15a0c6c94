//! The library side of an exported FMU: the model an instantiation names,
//! found from the FMU's resources ([`resolve`]), and the system it runs
//! ([`SystemModel`]).
//!
//! The kit's C layer keeps the importer to the standard's state machine;
//! this model sees only what a legal call sequence makes of it: built
//! (the whole system instantiated and initialised, inputs and parameters
//! as the importer set them) when initialization ends, or whenever the
//! importer reads a value in Initialization Mode (then built again for the
//! read, and dropped); stepped by [`cosim_core::Subsystem::do_step`] of
//! the nest, whose master advances the inner system to the end of the
//! importer's step; terminated and freed when the instance is freed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cosim_core::subsystem::{RollbackTo, StateId};
use cosim_core::{CoreError, Subsystem};
use cosim_fmi::StepOutcome;
use cosim_scenario::export::ExportSpec;
use fmu_kit::{
    Capabilities, Factory, FmiVersion, Inputs, LogLevel, Model, ModelSpec, ModelState, StepError,
    TIME, Values, VarType,
};

use crate::interface::{exposed_vr, model_spec};
use crate::manifest::Manifest;
use crate::messages::captured;

/// The interfaces built in this process, one per resources directory.
static INTERFACES: Mutex<Vec<(PathBuf, &'static ModelSpec)>> = Mutex::new(Vec::new());

/// The kit's [`fmu_kit::Resolver`] of `cosim-fmu`: the model of the FMU
/// whose resources are `resources`, checked against `token`.
pub fn resolve(
    token: &str,
    version: FmiVersion,
    resources: Option<&Path>,
) -> Result<(&'static ModelSpec, Capabilities), String> {
    let dir = resources.ok_or(
        "no resource location was given: an exported co-simulation reads its system from the FMU's resources",
    )?;
    let spec = interface_of(dir)?;
    fmu_kit::resolve(std::slice::from_ref(spec), token, version)
}

/// The interface of the FMU whose resources are `dir` (built once per
/// process: the kit's instances refer to it for as long as they live).
fn interface_of(dir: &Path) -> Result<&'static ModelSpec, String> {
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut known = INTERFACES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, spec)) = known.iter().find(|(d, _)| *d == key) {
        return Ok(spec);
    }
    let manifest = Manifest::read(&key)?;
    host_program(&key)?;
    let export = Arc::new(ExportSpec {
        system: key.join(&manifest.system),
        name: manifest.name.clone(),
        exposes: manifest.exposes.clone(),
        parameters: manifest.parameters.clone(),
    });
    let (exported, messages) = captured(|| cosim_scenario::export::describe(&export));
    let exported = exported.map_err(|e| with_messages(e.to_string(), &messages))?;
    let layout = Arc::new(Layout::of(&exported));
    let factory: Factory = Arc::new(move |values: &Values, instance: &str| {
        SystemModel::build(&export, &layout, values, instance)
            .map(|m| Box::new(m) as Box<dyn Model>)
    });
    let spec: &'static ModelSpec = Box::leak(Box::new(model_spec(
        &exported,
        &manifest.name,
        factory,
        manifest.wrapped,
    )?));
    known.push((key, spec));
    Ok(spec)
}

/// The host program of isolated inner FMUs: `resources/host/cosim`, packed
/// when the system isolates one, made executable here (importers extract
/// archives without the files' modes).
fn host_program(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let host = dir.join(crate::manifest::HOST);
    let Ok(meta) = std::fs::metadata(&host) else {
        return Ok(());
    };
    if meta.permissions().mode() & 0o111 != 0o111 {
        std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o755)).map_err(|e| {
            format!(
                "the host program of the isolated inner FMUs, {}, is not executable and cannot be made so: {e}",
                host.display()
            )
        })?;
    }
    cosim_isolation::set_host_program(host);
    // The hosts' warnings and errors reach the importer's standard error;
    // what their FMUs say reaches its logger through the error messages.
    cosim_isolation::set_host_log("warn");
    Ok(())
}

/// Where the exported variables are: value references of the inputs (in
/// the nest's input slot order) and outputs (observed slot order), and of
/// the parameters with their types.
#[derive(Debug)]
struct Layout {
    inputs: Vec<u32>,
    outputs: Vec<u32>,
    parameters: Vec<(u32, VarType)>,
    /// [`crate::interface::ENERGY_LOG`].
    energy_log: u32,
    /// [`crate::interface::CALL_LOG`].
    call_log: u32,
}

impl Layout {
    fn of(exported: &cosim_scenario::export::Exported) -> Layout {
        use cosim_fmi::model_description::Causality;
        let of = |c: Causality| {
            exported
                .exposed()
                .iter()
                .enumerate()
                .filter(|(_, v)| v.causality == c)
                .map(|(k, _)| exposed_vr(k))
                .collect()
        };
        let n = exported.n_exposed;
        Layout {
            inputs: of(Causality::Input),
            outputs: of(Causality::Output),
            parameters: exported
                .parameters
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    let ty = match p.variable.var_type {
                        t if t.is_float() => VarType::Real,
                        cosim_fmi::model_description::VariableType::Boolean => VarType::Boolean,
                        _ => VarType::Integer,
                    };
                    (exposed_vr(n + j), ty)
                })
                .collect(),
            energy_log: crate::interface::energy_log_vr(exported),
            call_log: crate::interface::call_log_vr(exported),
        }
    }
}

/// The exported system, running: the nest and the values crossing it.
pub struct SystemModel {
    inner: Box<dyn Subsystem>,
    layout: Arc<Layout>,
    /// The exposed inputs, in slot order.
    u: Vec<f64>,
    /// The exposed outputs, in slot order.
    y: Vec<f64>,
    /// What the inner FMUs and the master said while the model was built,
    /// passed to the importer's logger at the first step.
    pending: Vec<(LogLevel, String)>,
    /// The inner states the importer's FMU states hold: freed once no FMU
    /// state holds them any more (looked at when a state is saved).
    saved: Vec<(std::sync::Weak<Saved>, StateId)>,
    /// Whether the inner FMUs were told a state may be restored.
    rollback_allowed: bool,
}

/// A saved state of the system: the nest's state and the values crossing
/// it then.
struct Saved {
    id: StateId,
    u: Vec<f64>,
    y: Vec<f64>,
}

impl SystemModel {
    /// Builds the system with the parameters and inputs of `values` and
    /// initialises it at `values[TIME]`, under the name of the importer's
    /// `instance` (what a file name cannot hold made `_`).
    fn build(
        export: &ExportSpec,
        layout: &Arc<Layout>,
        values: &Values,
        instance: &str,
    ) -> Result<Self, String> {
        let parameters = layout
            .parameters
            .iter()
            .map(|&(vr, ty)| toml_value(&export.parameters, layout, vr, ty, values[vr]))
            .collect::<Result<Vec<_>, _>>()?;
        let t0 = values[TIME];
        let u: Vec<f64> = layout.inputs.iter().map(|&vr| values[vr]).collect();
        let path = |vr: u32| {
            Some(values.str(vr))
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
        };
        let options = cosim_scenario::export::BuildOptions {
            energy_dir: path(layout.energy_log),
            call_log: path(layout.call_log),
            instance: Some(
                instance
                    .chars()
                    .map(|c| match c {
                        'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' => c,
                        _ => '_',
                    })
                    .collect(),
            ),
        };
        let (built, messages) = captured(|| -> Result<_, String> {
            let text = |e: CoreError| e.to_string();
            let mut inner = cosim_scenario::export::build(export, &parameters, t0, &options)
                .map_err(|e| e.to_string())?;
            inner.enter_initialization(t0, None).map_err(text)?;
            inner.set_inputs(&u).map_err(text)?;
            inner.exit_initialization().map_err(text)?;
            let mut y = vec![0.0; inner.info().observed.len()];
            inner.get_observed(&mut y).map_err(text)?;
            Ok((inner, y))
        });
        let (inner, y) = built.map_err(|e| with_messages(e, &messages))?;
        Ok(SystemModel {
            inner,
            layout: Arc::clone(layout),
            u,
            y,
            pending: messages,
            saved: Vec::new(),
            rollback_allowed: false,
        })
    }

    fn write_outputs(&self, v: &mut Values) {
        for (&vr, &x) in self.layout.outputs.iter().zip(&self.y) {
            v[vr] = x;
        }
    }

    /// The outputs after a step, and why the step ended if not at `t + h`.
    fn step(&mut self, t: f64, h: f64) -> Result<(), StepError> {
        let error = |e: CoreError| StepError::Error(e.to_string());
        self.inner.set_inputs(&self.u).map_err(error)?;
        match self.inner.do_step(t, h) {
            Ok(StepOutcome::Completed) => {}
            Ok(StepOutcome::EarlyReturn {
                last_successful_time: reached,
            })
            | Ok(StepOutcome::Terminated {
                last_successful_time: reached,
            }) => {
                self.inner.get_observed(&mut self.y).map_err(error)?;
                return Err(StepError::Terminate {
                    reached,
                    message: format!("the system ended its simulation at t = {reached}"),
                });
            }
            Ok(StepOutcome::EventHandlingNeeded { .. }) => {
                // (A nest handles its FMUs' events inside its steps.)
                return Err(StepError::Error(
                    "the system asked for event handling, which a nest does not".into(),
                ));
            }
            Ok(StepOutcome::Discarded {
                last_successful_time: reached,
            }) => {
                return Err(StepError::Discard {
                    reached,
                    message: format!(
                        "the system could not complete the step (reached t = {reached})"
                    ),
                });
            }
            Err(e @ CoreError::TerminatedByFmu { t: reached, .. }) => {
                self.inner.get_observed(&mut self.y).map_err(error)?;
                return Err(StepError::Terminate {
                    reached,
                    message: e.to_string(),
                });
            }
            Err(e) => return Err(error(e)),
        }
        self.inner.get_observed(&mut self.y).map_err(error)
    }
}

impl Drop for SystemModel {
    fn drop(&mut self) {
        // Terminates every inner FMU the state machine allows to be; they
        // are freed with the nest.
        let _ = self.inner.terminate();
    }
}

impl SystemModel {
    /// Frees the inner states no FMU state of the importer holds any more.
    fn free_unheld(&mut self) -> Result<(), CoreError> {
        let mut result = Ok(());
        let inner = &mut self.inner;
        self.saved.retain(|(held, id)| {
            if held.strong_count() > 0 {
                return true;
            }
            if let Err(e) = inner.free_state(*id) {
                result = Err(e);
            }
            false
        });
        result
    }

    fn save(&mut self) -> Result<ModelState, String> {
        let text = |e: CoreError| e.to_string();
        self.free_unheld().map_err(text)?;
        if !self.rollback_allowed {
            // From now on the importer may go back to a state it saved:
            // the inner FMUs step without promising not to.
            self.inner
                .allow_rollback(RollbackTo::Earlier)
                .map_err(text)?;
            self.rollback_allowed = true;
        }
        let id = self.inner.save_state(None).map_err(text)?;
        let saved = Arc::new(Saved {
            id,
            u: self.u.clone(),
            y: self.y.clone(),
        });
        self.saved.push((Arc::downgrade(&saved), id));
        Ok(ModelState(saved))
    }
}

impl Model for SystemModel {
    fn save_state(&mut self) -> Option<Result<ModelState, String>> {
        Some(self.save())
    }

    fn restore_state(&mut self, state: &ModelState) -> Result<(), String> {
        let saved = state
            .0
            .downcast_ref::<Saved>()
            .ok_or("the FMU state is not one of this system's")?;
        if !self.saved.iter().any(|(_, id)| *id == saved.id) {
            return Err(
                "the FMU state was saved before the system was built again (a reset)".into(),
            );
        }
        self.inner
            .restore_state(saved.id)
            .map_err(|e| e.to_string())?;
        self.u.clone_from(&saved.u);
        self.y.clone_from(&saved.y);
        Ok(())
    }

    fn init(&mut self, v: &mut Values) {
        self.write_outputs(v);
    }

    fn do_step(
        &mut self,
        t: f64,
        h: f64,
        v: &mut Values,
        u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        for (level, message) in self.pending.drain(..) {
            log(level, &message);
        }
        for (slot, &vr) in self.u.iter_mut().zip(&self.layout.inputs) {
            *slot = u.value(vr);
        }
        let (result, messages) = captured(|| self.step(t, h));
        // A failed step's message quotes what the inner FMU logged last:
        // its error lines are not passed twice.
        let failed = matches!(result, Err(StepError::Error(_) | StepError::Fatal(_)));
        for (level, message) in &messages {
            if !(failed && *level == LogLevel::Error) {
                log(*level, message);
            }
        }
        self.write_outputs(v);
        result
    }

    fn terminate(&mut self, log: &dyn Fn(LogLevel, &str)) {
        let (result, messages) = captured(|| self.inner.terminate());
        for (level, message) in &messages {
            log(*level, message);
        }
        if let Err(e) = result {
            log(LogLevel::Warning, &format!("terminating the system: {e}"));
        }
    }

    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        // The outputs change when the system steps: a value the importer
        // sets reaches the system at the next step (the exported variables
        // declare no direct feed-through).
        self.write_outputs(v);
    }
}

/// A parameter's value as `--set` reads it.
fn toml_value(
    names: &[String],
    layout: &Layout,
    vr: u32,
    ty: VarType,
    x: f64,
) -> Result<String, String> {
    let name = layout
        .parameters
        .iter()
        .position(|&(p, _)| p == vr)
        .and_then(|j| names.get(j))
        .map_or("?", String::as_str);
    match ty {
        VarType::Boolean => Ok((x != 0.0).to_string()),
        VarType::Integer => Ok(format!("{}", x as i64)),
        _ if x.is_finite() => Ok(format!("{x:?}")),
        _ => Err(format!("parameter {name} = {x} is not a finite number")),
    }
}

fn with_messages(error: String, messages: &[(LogLevel, String)]) -> String {
    if messages.is_empty() {
        return error;
    }
    let said: Vec<&str> = messages.iter().map(|(_, m)| m.as_str()).collect();
    format!("{error}\n{}", said.join("\n"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What the library answers an instantiation it cannot serve.
    #[test]
    fn an_instantiation_without_the_fmus_resources_is_refused_saying_why() {
        let e = resolve("cosim:x:fmi2:s0:0", FmiVersion::Fmi2, None).unwrap_err();
        assert!(e.contains("no resource location was given"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = resolve("cosim:x:fmi2:s0:0", FmiVersion::Fmi2, Some(dir.path())).unwrap_err();
        assert!(
            e.contains("cannot read") && e.contains("cosim-export.toml"),
            "{e}"
        );
    }
}
