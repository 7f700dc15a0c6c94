//! Command-line overrides of a scenario (`--set`, `--stop`, `--step`, `--out`).

use std::path::PathBuf;

use crate::error::ScenarioError;
use crate::read::Result;
use crate::scenario::{
    AssignKind, AssignSpec, InputSpec, Origin, RawValue, Scenario, Setting, SubsystemIndex,
    absolute, find_subsystem, is_glob,
};
use crate::settings::Sampling;

/// Changes the command line makes to a scenario.
///
/// ```
/// # use cosim_scenario::Overrides;
/// let o = Overrides {
///     set: vec!["chassis.m_c=500".into()],
///     stop: Some(2.0),
///     ..Overrides::default()
/// };
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--set <subsystem>.<variable>=<value>` arguments, as typed (without
    /// the `--set`). The value is read as a TOML value (`400`, `1e-3`,
    /// `true`, `"text"`, `[1, 2]`); for a String variable, text that is not
    /// valid TOML is taken as it is. It is applied as a parameter or a start
    /// value according to the variable's causality, replacing a value the
    /// scenario gives.
    pub set: Vec<String>,
    /// `--stop <s>`: replaces `[simulation] stop`.
    pub stop: Option<f64>,
    /// `--step <s>`: replaces `[master] step`.
    pub step: Option<f64>,
    /// `--out <dir>`: replaces `[outputs] dir`; a relative path is taken
    /// relative to the current directory (not to the scenario file).
    pub out: Option<PathBuf>,
    /// `--isolation none|process`: where every FMU of every level runs,
    /// replacing each `isolation` the scenario and its nested systems give.
    pub isolation: Option<crate::settings::Isolation>,
    /// `--log-fmi-calls [FILE]`: log every FMI call of every FMU, at every
    /// level and in every isolation mode, to this file or to standard
    /// error (`docs/fmi-call-log.md`). The file is appended to: the caller
    /// creates (empties) it first, see [`cosim_fmi::CallLogTarget::create`].
    pub log_fmi_calls: Option<cosim_fmi::CallLogTarget>,
    /// `--step-timeout <s>`: replaces `[master] step_timeout`.
    pub step_timeout: Option<f64>,
    /// `--init-timeout <s>`: replaces `[master] init_timeout`.
    pub init_timeout: Option<f64>,
    /// `--start <s>`: replaces `[simulation] start`.
    pub start: Option<f64>,
    /// `--output-interval <s>`: replaces `[outputs] interval` (and
    /// `decimation`).
    pub output_interval: Option<f64>,
    /// `--output-variables <patterns>`: replace `[outputs] variables`
    /// (`"<subsystem>.<name or glob>"`; for a scenario made for one FMU,
    /// the variable's name or glob alone).
    pub output_variables: Vec<String>,
    /// `--input-file <file>` (repeatable): input files whose header names
    /// the inputs (`<subsystem>.<input>`, or the input alone for a
    /// scenario of one subsystem), relative to the current directory.
    pub input_files: Vec<PathBuf>,
    /// `--scenario <file>` (repeatable): libcosim scenario files (JSON or
    /// YAML) whose events are added to the scenario's `[[events]]`.
    pub scenario_files: Vec<PathBuf>,
    /// `--real-time [factor]`: replaces `[simulation] real_time`.
    pub real_time: Option<f64>,
    /// `--interface cs|me`: the interface every FMU subsystem runs, at every
    /// level, replacing each `interface` (an FMU without it is an error).
    pub interface: Option<crate::settings::FmuInterface>,
    /// `--solver`, `--relative-tolerance`: replace these settings of every
    /// Model Exchange subsystem's `[subsystems.solver]`, at every level.
    pub solver: crate::settings::SolverSpec,
}

impl Scenario {
    /// Applies command-line overrides. Checks what can be checked without
    /// the FMUs (syntax, subsystem names, ranges); the variables named by
    /// `--set` are checked by [`Scenario::resolve`]. Errors name the
    /// argument.
    ///
    /// # Errors
    ///
    /// A malformed `--set`, an unknown subsystem, a non-positive `--step`,
    /// a `--stop` not after the start time.
    pub fn apply_overrides(&mut self, overrides: &Overrides) -> Result<()> {
        let file = self.source.path.clone();
        for arg in &overrides.set {
            let argument = format!("--set {arg}");
            let err = |msg: String| ScenarioError::argument(&file, &argument, msg);
            let Some((path, value)) = arg.split_once('=') else {
                return Err(err(
                    "expected <subsystem>.<variable>=<value>, e.g. --set chassis.m_c=400".into(),
                ));
            };
            let path = path.trim();
            let split = match &self.single {
                // One FMU: the variable's name, with or without the subsystem.
                Some(single) => Some((single.subsystem.as_str(), single.variable(path))),
                None => path.split_once('.'),
            };
            let Some((sub, var)) = split else {
                return Err(err(format!(
                    "\"{path}\" is not of the form \"<subsystem>.<variable>\""
                )));
            };
            if var.is_empty() {
                return Err(err(format!("\"{path}\" names no variable after the '.'")));
            }
            let index = find_subsystem(
                &self.source,
                &SubsystemIndex::with_functions(&self.subsystems, &self.functions),
                sub,
                Default::default(),
            )
            .map_err(|e| {
                let mut a = ScenarioError::argument(&file, &argument, e.message.clone());
                a.help = e.help.clone();
                a
            })?;
            let raw = parse_cli_value(value);
            let origin = Origin::Argument(argument.clone());
            if let Some(sub) = self.subsystems.get_mut(index) {
                // The last word wins: drop values given before for the variable.
                sub.assignments.retain(|a| a.name != var);
                sub.assignments.push(AssignSpec {
                    name: var.to_string(),
                    value: raw,
                    // Decided by the variable's causality in `resolve`.
                    kind: AssignKind::Parameter,
                    name_origin: origin.clone(),
                    value_origin: origin,
                });
            }
        }
        if let Some(start) = overrides.start {
            let argument = format!("--start {}", cosim_core::text::number(start));
            if !start.is_finite() {
                return Err(ScenarioError::argument(
                    &file,
                    &argument,
                    "the start time must be a finite number of seconds",
                ));
            }
            if overrides.stop.is_none()
                && let Some(stop) = &self.simulation.stop
                && stop.value <= start
            {
                return Err(ScenarioError::argument(
                    &file,
                    &argument,
                    format!(
                        "start time {start} s is not before the stop time {} s",
                        stop.value
                    ),
                )
                .with_help("give a later stop time with --stop"));
            }
            self.simulation.start = Some(Setting {
                value: start,
                origin: Origin::Argument(argument),
            });
        }
        if let Some(stop) = overrides.stop {
            let argument = format!("--stop {}", cosim_core::text::number(stop));
            if !stop.is_finite() {
                return Err(ScenarioError::argument(
                    &file,
                    &argument,
                    "the stop time must be a finite number of seconds",
                ));
            }
            if let Some(start) = &self.simulation.start
                && stop <= start.value
            {
                return Err(ScenarioError::argument(
                    &file,
                    &argument,
                    format!(
                        "stop time {stop} s is not after the start time {} s",
                        start.value
                    ),
                ));
            }
            self.simulation.stop = Some(Setting {
                value: stop,
                origin: Origin::Argument(argument),
            });
        }
        if let Some(isolation) = overrides.isolation {
            self.isolation_override = Some(isolation);
        }
        if let Some(x) = overrides.solver.relative_tolerance
            && !(x > 0.0 && x < 1.0)
        {
            return Err(ScenarioError::argument(
                &file,
                &format!("--relative-tolerance {}", cosim_core::text::number(x)),
                format!("the relative tolerance must be in (0, 1), not {x}"),
            ));
        }
        self.set_interface_overrides(overrides.interface, overrides.solver);
        if let Some(target) = &overrides.log_fmi_calls {
            self.call_log = Some(target.clone());
        }
        if let Some(step) = overrides.step {
            let argument = format!("--step {}", cosim_core::text::number(step));
            if !(step.is_finite() && step > 0.0) {
                return Err(ScenarioError::argument(
                    &file,
                    &argument,
                    format!("the step must be a positive number of seconds, not {step}"),
                ));
            }
            self.master.step = Some(Setting {
                value: step,
                origin: Origin::Argument(argument),
            });
        }
        for (option, what, given, slot) in [
            (
                "--step-timeout",
                "step",
                overrides.step_timeout,
                &mut self.master.settings.step_timeout,
            ),
            (
                "--init-timeout",
                "initialization",
                overrides.init_timeout,
                &mut self.master.settings.init_timeout,
            ),
        ] {
            let Some(timeout) = given else { continue };
            if !crate::scenario::call_timeout_ok(timeout) {
                return Err(ScenarioError::argument(
                    &file,
                    &format!("{option} {}", cosim_core::text::number(timeout)),
                    format!(
                        "the {what} timeout must be a positive number of seconds, at most a year, or 0 (no limit)"
                    ),
                ));
            }
            *slot = Some(timeout);
        }
        if let Some(interval) = overrides.output_interval {
            let argument = format!("--output-interval {}", cosim_core::text::number(interval));
            if !(interval.is_finite() && interval > 0.0) {
                return Err(ScenarioError::argument(
                    &file,
                    &argument,
                    format!(
                        "the output interval must be a positive number of seconds, not {interval}"
                    ),
                ));
            }
            self.outputs.sampling = Sampling::Interval(interval);
            self.outputs.sampling_origin = Some(Origin::Argument(argument));
        }
        if !overrides.output_variables.is_empty() {
            self.override_output_variables(&overrides.output_variables)?;
        }
        if let Some(f) = overrides.real_time {
            if !(f > 0.0 && f.is_finite()) {
                return Err(ScenarioError::argument(
                    &file,
                    "--real-time",
                    format!("the real-time factor must be a positive number, not {f}"),
                ));
            }
            self.simulation.real_time = Some(f);
        }
        for path in &overrides.scenario_files {
            let file = crate::events::read_scenario_file(path)?;
            self.events.extend(file.into_events());
        }
        self.route_events();
        for path in &overrides.input_files {
            let argument = format!("--input-file {}", path.display());
            self.inputs.push(InputSpec {
                file: path.clone(),
                origin: Origin::Argument(argument),
                span: None,
                columns: None,
                csv: None,
            });
            self.read_input_files()?;
        }
        if let Some(out) = &overrides.out {
            if out.as_os_str().is_empty() {
                return Err(ScenarioError::argument(
                    &file,
                    "--out",
                    "the output directory is empty",
                ));
            }
            if out.exists() && !out.is_dir() {
                return Err(ScenarioError::argument(
                    &file,
                    &format!("--out {}", out.display()),
                    "is a file, not a directory",
                ));
            }
            self.outputs.dir = absolute(out);
        }
        Ok(())
    }
}

impl Scenario {
    /// `--interface`, `--solver`, `--relative-tolerance`: kept for this
    /// level and every nested one (applied when the FMUs are opened).
    fn set_interface_overrides(
        &mut self,
        interface: Option<crate::settings::FmuInterface>,
        solver: crate::settings::SolverSpec,
    ) {
        if interface.is_some() {
            self.interface_override = interface;
        }
        let o = &mut self.solver_override;
        o.method = solver.method.or(o.method);
        o.relative_tolerance = solver.relative_tolerance.or(o.relative_tolerance);
        o.absolute_tolerance = solver.absolute_tolerance.or(o.absolute_tolerance);
        o.max_step = solver.max_step.or(o.max_step);
        o.max_order = solver.max_order.or(o.max_order);
        o.initial_step = solver.initial_step.or(o.initial_step);
        if self.master.settings.kind == crate::MasterKind::StronglyCoupled {
            // The level's one integrator.
            let spec = self.master.settings.solver.get_or_insert_default();
            spec.method = solver.method.or(spec.method);
            spec.relative_tolerance = solver.relative_tolerance.or(spec.relative_tolerance);
            spec.absolute_tolerance = solver.absolute_tolerance.or(spec.absolute_tolerance);
            spec.max_step = solver.max_step.or(spec.max_step);
            spec.max_order = solver.max_order.or(spec.max_order);
            spec.initial_step = solver.initial_step.or(spec.initial_step);
        }
        for s in &mut self.subsystems {
            if let Some(inner) = &mut s.system {
                inner.set_interface_overrides(interface, solver);
            }
        }
    }

    /// `--output-variables`: checks the form and the subsystems of the
    /// patterns (their variables are matched by `resolve`).
    fn override_output_variables(&mut self, patterns: &[String]) -> Result<()> {
        let file = self.source.path.clone();
        let argument = format!("--output-variables {}", patterns.join(" "));
        let index = SubsystemIndex::with_functions(&self.subsystems, &self.functions);
        let mut out = Vec::new();
        for text in patterns {
            let text = text.trim();
            let err = |msg: String| ScenarioError::argument(&file, &argument, msg);
            let full = match &self.single {
                Some(single) => format!("{}.{}", single.subsystem, single.variable(text)),
                None => text.to_string(),
            };
            let Some((sub, pattern)) = full.split_once('.') else {
                return Err(err(format!(
                    "\"{text}\" is not of the form \"<subsystem>.<variable or pattern>\""
                )));
            };
            if pattern.is_empty() {
                return Err(err(format!("\"{text}\" names no variable after the '.'")));
            }
            if !is_glob(sub) && index.get(sub).is_none() && index.function(sub).is_none() {
                let e = find_subsystem(&self.source, &index, sub, Default::default())
                    .err()
                    .map(|e| e.help.clone())
                    .unwrap_or_default();
                let mut a = err(format!("unknown subsystem '{sub}' in \"{text}\""));
                a.help = e;
                return Err(a);
            }
            out.push(full);
        }
        self.output_variables = Some((out, argument));
        Ok(())
    }
}

/// A `--set` value: TOML syntax when it parses as a TOML value, else the
/// text itself as a string.
fn parse_cli_value(text: &str) -> RawValue {
    let trimmed = text.trim();
    match toml::de::DeValue::parse(trimmed) {
        Ok(v) => RawValue::from_toml(v.get_ref()).unwrap_or_else(|_| RawValue::Str(text.into())),
        Err(_) => RawValue::Str(text.to_string()),
    }
}
