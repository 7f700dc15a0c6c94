//! A scenario for one FMU: `cosim run Model.fmu` (and `check`) run the FMU
//! directly, as fmusim and `fmpy simulate` do, and `cosim convert
//! Model.fmu` writes the same scenario as a file to grow from.
//!
//! The scenario is one subsystem (named after the FMU file), a fixed-step
//! master with the FMU's DefaultExperiment stepSize (1 ms without one), the
//! DefaultExperiment start and stop times (0 and 1 s after the start
//! without them), every output traced. Command-line options change it as
//! they change any scenario ([`Overrides`]); names on the command line
//! (`--set`, `--output-variables`) and input file columns may leave out the
//! subsystem. Everything else (isolation, the call log, the outputs, the
//! summary) is the scenario machinery's.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use cosim_fmi::model_description::{Causality, ModelDescription, StartValue, Variability};

use crate::error::{ScenarioError, Source};
use crate::scenario::{Scenario, SingleFmu};
use crate::settings::{FmuInterface, Sampling};
use crate::{Overrides, ResolvedScenario};

/// The macro step when the FMU's DefaultExperiment gives none, s.
pub const DEFAULT_STEP: f64 = 1e-3;
/// The length of the run when the DefaultExperiment gives no stop time, s.
pub const DEFAULT_DURATION: f64 = 1.0;

/// True when `path` names an FMU rather than a scenario: a `.fmu` file, or
/// any other file that is a zip archive (a scenario is text). SSP packages
/// (`.ssp`, zip archives too) are told apart by the caller first.
pub fn is_fmu(path: &Path) -> bool {
    let extension = |x: &str| path.extension().is_some_and(|e| e.eq_ignore_ascii_case(x));
    if extension("fmu") {
        return true;
    }
    if extension("ssp") {
        return false;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == *b"PK\x03\x04"
}

/// The subsystem name for an FMU file: its stem, every character other
/// than a letter, digit, `_` or `-` replaced by `_`.
pub fn subsystem_name(fmu: &Path) -> String {
    let stem = fmu
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "model".to_string()
    } else {
        name
    }
}

/// What the scenario file says, beyond the FMU's own defaults.
#[derive(Debug, Default)]
struct Settings {
    start: f64,
    stop: f64,
    step: f64,
    /// Where each time comes from, for comments.
    notes: [String; 3],
    interval: Option<f64>,
    variables: Option<Vec<String>>,
    parameters: Vec<(String, String)>,
    start_values: Vec<(String, String)>,
    /// (file as written, [(input path, column)])
    inputs: Vec<(String, Vec<(String, String)>)>,
    /// The `interface` line, with its comment, for an FMU with Model
    /// Exchange (the choice an FMU with Co-Simulation only does not have).
    interface: Option<String>,
    /// The `[subsystems.solver]` table of a Model Exchange run.
    solver: Option<String>,
}

/// The times and step of the FMU's DefaultExperiment, with the defaults;
/// `start` replaces the start time (the default stop time follows it).
fn default_settings(md: &ModelDescription, start: Option<f64>) -> Settings {
    let de = md.default_experiment.clone().unwrap_or_default();
    let source = |given: bool, attribute: &str, fallback: &str| {
        if given {
            format!("the FMU's DefaultExperiment {attribute}")
        } else {
            fallback.to_string()
        }
    };
    // A --start at or after the stop time is refused as that argument
    // (Scenario::apply_overrides), not as this scenario's times.
    let start = start.filter(|s| de.stop_time.is_none_or(|stop| *s < stop));
    let start_value = start.or(de.start_time).unwrap_or(0.0);
    let stop_value = de.stop_time.unwrap_or(start_value + DEFAULT_DURATION);
    Settings {
        start: start_value,
        stop: stop_value,
        step: de.step_size.unwrap_or(DEFAULT_STEP),
        notes: [
            source(
                de.start_time.is_some(),
                "startTime",
                "no DefaultExperiment startTime: 0",
            ),
            source(
                de.stop_time.is_some(),
                "stopTime",
                "no DefaultExperiment stopTime: 1 s after the start",
            ),
            source(
                de.step_size.is_some(),
                "stepSize",
                "no DefaultExperiment stepSize: 1 ms",
            ),
        ],
        ..Settings::default()
    }
}

/// Opens `fmu` (the run uses it as opened); errors name the file.
fn open(fmu: &Path) -> Result<cosim_fmi::Fmu, ScenarioError> {
    let file_error =
        |message: String| Source::new(fmu.to_path_buf(), String::new()).error(None, message);
    if !fmu.is_file() {
        let what = if fmu.exists() {
            "is not a file"
        } else {
            "does not exist"
        };
        return Err(file_error(format!("the FMU {what}"))
            .with_help_opt(crate::scenario::project_fmu_help(fmu)));
    }
    let opened =
        cosim_fmi::Fmu::open(fmu).map_err(|e| file_error(format!("cannot open the FMU: {e}")))?;
    if let Some((why, what)) = opened.model_description().refusal() {
        return Err(file_error(format!("cannot run the FMU: {why}"))
            .with_help(what.replace("<fmu>", &fmu.display().to_string())));
    }
    Ok(opened)
}

/// The scenario `cosim run Model.fmu` runs: one subsystem, the FMU's
/// DefaultExperiment, every output traced; `start` (`--start`) moves the
/// default stop time along. Outputs go to `out/<FMU stem>` next to the FMU,
/// as for a scenario file. Apply the command line with
/// [`Scenario::apply_overrides`].
///
/// # Errors
///
/// The FMU cannot be opened (its model description read).
pub fn scenario(fmu: &Path, start: Option<f64>) -> Result<Scenario, ScenarioError> {
    let opened = open(fmu)?;
    let md = opened.model_description();
    let name = subsystem_name(fmu);
    let file_name = fmu
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = toml(md, &name, &file_name, &default_settings(md, start), false);
    let mut scenario = Scenario::from_str(&text, fmu)?;
    scenario.single = Some(SingleFmu {
        subsystem: name,
        names: md.all_names().map(str::to_string).collect(),
        fmu: Some(opened.clone()),
    });
    Ok(scenario)
}

/// A diagnostic of the scenario made for `fmu`, which has no file of its
/// own: about the FMU, without a line, noting where the scenario comes
/// from. Diagnostics about other files (an input file) stay as they are.
pub(crate) fn unplaced(e: ScenarioError, fmu: &Path) -> ScenarioError {
    if e.line.is_none() || e.file != fmu {
        return e;
    }
    let fmu = e.file.display().to_string();
    e.unplaced().with_note(format!(
        "in the scenario made for the FMU (`cosim convert {fmu} -o s.toml` writes it)"
    ))
}

/// The scenario `cosim run Model.fmu <options>` runs, as a commented
/// scenario file to be written at `written_to` (the FMU's and input files'
/// paths relative to its directory): running it gives the same results.
/// `overrides.out` is left out (a scenario file's outputs go next to it).
///
/// # Errors
///
/// As `cosim run` with the same options: the FMU cannot be opened, an
/// option is wrong, an input file is malformed ...
pub fn convert(
    fmu: &Path,
    overrides: &Overrides,
    written_to: Option<&Path>,
) -> Result<String, ScenarioError> {
    let mut scenario = scenario(fmu, overrides.start)?;
    // (The FMU as the scenario opened it: not extracted twice.)
    let opened = match scenario.single.as_ref().and_then(|s| s.fmu.clone()) {
        Some(f) => f,
        None => open(fmu)?,
    };
    let md = opened.model_description();
    let name = subsystem_name(fmu);
    let overrides = Overrides {
        out: None,
        ..overrides.clone()
    };
    scenario.apply_overrides(&overrides)?;
    let resolved = scenario
        .resolve(&[(name.as_str(), md)])
        .map_err(|e| unplaced(e, fmu))?;
    let base = written_to.map(|p| crate::scenario::absolute(p.parent().unwrap_or(Path::new(""))));
    let shown = |p: &Path| -> String {
        let abs = crate::scenario::absolute(p);
        let rel = base
            .as_deref()
            .and_then(|b| relative_path(&abs, b))
            .unwrap_or(abs);
        rel.to_string_lossy().replace('\\', "/")
    };
    let mut settings = default_settings(md, overrides.start);
    settings.start = resolved.start;
    settings.stop = resolved.stop;
    settings.step = resolved.master.step;
    if overrides.start.is_some() {
        settings.notes[0] = "--start".into();
    }
    if overrides.stop.is_some() {
        settings.notes[1] = "--stop".into();
    }
    if overrides.step.is_some() {
        settings.notes[2] = "--step".into();
    }
    if let Sampling::Interval(x) = resolved.outputs.sampling
        && overrides.output_interval.is_some()
    {
        settings.interval = Some(x);
    }
    settings.variables = scenario.output_variables.as_ref().map(|(v, _)| v.clone());
    fill_values(&mut settings, &resolved);
    if let Some(spec) = scenario.subsystems().first() {
        let interface =
            crate::nest::interface_of(&scenario, spec, md).map_err(|e| unplaced(e, fmu))?;
        settings.interface = interface_line(md, interface, overrides.interface.is_some());
        if interface == FmuInterface::ModelExchange {
            let effective = crate::nest::solver_settings(md, None, &scenario.solver_override);
            settings.solver = Some(solver_table(md, &effective, &scenario.solver_override));
        }
    }
    for f in &resolved.inputs {
        let columns = f
            .feeds
            .iter()
            .map(|x| {
                let v = &md.variables[x.input.variable].name;
                (format!("{name}.{v}"), x.column_name.clone())
            })
            .collect();
        settings.inputs.push((shown(&f.file), columns));
    }
    Ok(toml(md, &name, &shown(fmu), &settings, true))
}

/// `key = value`, then its comment in the column of the others.
fn commented(key_value: &str, note: &str) -> String {
    format!("{key_value:<32} # {note}\n")
}

/// The `interface` line for an FMU that has Model Exchange (`None` for
/// one with Co-Simulation only: there is nothing to choose).
fn interface_line(md: &ModelDescription, interface: FmuInterface, given: bool) -> Option<String> {
    md.model_exchange.as_ref()?;
    let has_cs = md.co_simulation.is_some();
    let value = format!("interface = {}", string(interface.name()));
    let option = match interface {
        FmuInterface::CoSimulation => "--interface cs",
        FmuInterface::ModelExchange => "--interface me",
        FmuInterface::ScheduledExecution => return None,
    };
    let note = match (interface, has_cs) {
        (FmuInterface::ModelExchange, false) => format!(
            "{}the FMU has Model Exchange only, integrated by cosim's solver",
            if given {
                format!("{option}; ")
            } else {
                String::new()
            }
        ),
        (FmuInterface::ModelExchange, true) => {
            format!("{option}; \"co-simulation\" (the default) runs the FMU's own Co-Simulation")
        }
        (FmuInterface::CoSimulation | FmuInterface::ScheduledExecution, _) => format!(
            "{}; \"model-exchange\" integrates the FMU's Model Exchange with cosim's solver ([subsystems.solver])",
            if given {
                option
            } else {
                "the default where the FMU has it"
            }
        ),
    };
    Some(commented(&value, &note))
}

/// The `[subsystems.solver]` table with the settings `effective` of a
/// Model Exchange run, each with where it comes from (`given`: the
/// command line's), the defaults of the others commented out.
fn solver_table(
    md: &ModelDescription,
    effective: &cosim_fmi::SolverSettings,
    given: &crate::settings::SolverSpec,
) -> String {
    let mut o = String::from(
        "\n# cosim's integrator of the FMU's Model Exchange interface (docs/scenario.md)\n[subsystems.solver]\n",
    );
    let method = effective.method.name();
    o.push_str(&commented(
        &format!("method = {}", string(method)),
        if given.method.is_some() {
            "--solver"
        } else {
            "the default (stiff models); \"rk45\": an explicit Runge-Kutta pair, for non-stiff ones"
        },
    ));
    o.push_str(&commented(
        &format!(
            "relative_tolerance = {}",
            float(effective.relative_tolerance)
        ),
        if given.relative_tolerance.is_some() {
            "--relative-tolerance"
        } else {
            md.default_relative_tolerance().origin()
        },
    ));
    let rest = [
        (
            "absolute_tolerance",
            given.absolute_tolerance,
            Some(effective.absolute_tolerance),
            "",
            "default: the relative tolerance; times each state's nominal",
        ),
        ("max_step", given.max_step, None, "s; ", "default: no limit"),
        (
            "initial_step",
            given.initial_step,
            None,
            "s; ",
            "default: estimated at the start and after each event",
        ),
    ];
    for (key, given, default, unit, note) in rest {
        match given {
            Some(x) => o.push_str(&commented(
                &format!("{key} = {}", float(x)),
                &format!("{unit}given"),
            )),
            None => {
                let value = default.map_or_else(|| "...".to_string(), float);
                o.push_str(&commented(
                    &format!("# {key} = {value}"),
                    &format!("{unit}{note}"),
                ));
            }
        }
    }
    if effective.method == cosim_fmi::SolverMethod::Bdf {
        o.push_str(&commented(
            "# max_order = 5",
            "the default and the only value: BDF orders 1 to 5",
        ));
    }
    o
}

/// The parameters and start values of the resolved single subsystem.
fn fill_values(settings: &mut Settings, resolved: &ResolvedScenario) {
    let Some(sub) = resolved.subsystems.first() else {
        return;
    };
    for a in &sub.parameters {
        settings
            .parameters
            .push((a.name.clone(), value_text(&a.value)));
    }
    for a in &sub.start_values {
        settings
            .start_values
            .push((a.name.clone(), value_text(&a.value)));
    }
}

/// A TOML key: bare when it can be, else quoted.
fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_string()
    } else {
        string(name)
    }
}

/// A TOML basic string.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float as TOML (which has `inf` and `nan`, and needs no `.0` before
/// an exponent).
fn float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{x:?}")
    }
}

/// A start value as a TOML value (an array for several elements).
fn value_text(v: &StartValue) -> String {
    let items: Vec<String> = match v {
        StartValue::Float(x) => x.iter().map(|&x| float(x)).collect(),
        StartValue::Int(x) => x.iter().map(i128::to_string).collect(),
        StartValue::Bool(x) => x.iter().map(bool::to_string).collect(),
        StartValue::String(x) => x.iter().map(|s| string(s)).collect(),
        StartValue::Binary(x) => x
            .iter()
            .map(|b| string(&b.iter().map(|x| format!("{x:02x}")).collect::<String>()))
            .collect(),
    };
    match items.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", items.join(", ")),
    }
}

/// One line of a variable listing in a comment: name, start, description, unit.
fn listing(md: &ModelDescription, index: usize, with_start: bool) -> String {
    let v = &md.variables[index];
    let mut line = key(&v.name);
    if with_start && let Some(s) = &v.start {
        let _ = write!(line, " = {}", value_text(s));
    }
    let mut about = Vec::new();
    if let Some(u) = &v.unit {
        about.push(format!("[{u}]"));
    }
    about.push(v.var_type.to_string());
    if let Some(d) = v.description.as_deref().filter(|d| !d.trim().is_empty()) {
        about.push(d.trim().replace('\n', " "));
    }
    format!("#   {line:<28} {}", about.join(" "))
}

/// Lists the variables `which` selects as comments, at most 40.
fn list(
    o: &mut String,
    md: &ModelDescription,
    title: &str,
    which: &[usize],
    with_start: bool,
    fmu: &str,
) {
    if which.is_empty() {
        return;
    }
    let _ = writeln!(o, "# {title}:");
    for &i in which.iter().take(40) {
        let _ = writeln!(o, "{}", listing(md, i, with_start));
    }
    if which.len() > 40 {
        let _ = writeln!(
            o,
            "#   ... and {} more (`cosim inspect {fmu}` lists them all)",
            which.len() - 40
        );
    }
}

/// The scenario text. `converted`: written by `cosim convert` (a longer
/// header, the FMU's variables listed), else the scenario `cosim run
/// Model.fmu` runs.
fn toml(md: &ModelDescription, name: &str, fmu: &str, s: &Settings, converted: bool) -> String {
    let mut o = String::with_capacity(2048);
    if converted {
        let _ = writeln!(
            o,
            "# cosim scenario for the FMU {fmu}, written by `cosim convert`."
        );
        o.push_str("# `cosim run` on this file gives the results of `cosim run` on the FMU\n");
        o.push_str("# with the same options. Grow it from here: more [[subsystems]],\n");
        o.push_str("# [[connections]], another [master]; docs/scenario.md has every key.\n");
    } else {
        let _ = writeln!(o, "# The scenario cosim runs for the FMU {fmu}.");
    }
    let _ = writeln!(
        o,
        "# {} (FMI {}{}){}",
        md.model_name,
        md.fmi_version_string,
        md.generation_tool
            .as_deref()
            .map(|t| format!(", generated by {t}"))
            .unwrap_or_default(),
        md.description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(|d| format!(": {}", d.trim().replace('\n', " ")))
            .unwrap_or_default()
    );
    o.push('\n');
    o.push_str("[simulation]\n");
    let _ = writeln!(o, "start = {:<16} # s; {}", float(s.start), s.notes[0]);
    let _ = writeln!(o, "stop = {:<17} # s; {}", float(s.stop), s.notes[1]);
    o.push('\n');
    o.push_str("[master]\n");
    o.push_str("kind = \"fixed-step\"\n");
    let _ = writeln!(o, "step = {:<17} # s; {}", float(s.step), s.notes[2]);
    o.push('\n');
    o.push_str("[[subsystems]]\n");
    let _ = writeln!(o, "name = {}", string(name));
    let _ = writeln!(o, "fmu = {}", string(fmu));
    if let Some(line) = &s.interface {
        o.push_str(line);
    }
    let table = |pairs: &[(String, String)]| {
        let items: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{} = {v}", key(k)))
            .collect();
        format!("{{ {} }}", items.join(", "))
    };
    if !s.parameters.is_empty() {
        let _ = writeln!(o, "parameters = {}", table(&s.parameters));
    }
    if !s.start_values.is_empty() {
        let _ = writeln!(o, "start = {}", table(&s.start_values));
    }
    if converted {
        let by = |pick: &dyn Fn(&cosim_fmi::model_description::Variable) -> bool| -> Vec<usize> {
            md.variables
                .iter()
                .enumerate()
                .filter(|(_, v)| pick(v))
                .map(|(i, _)| i)
                .collect()
        };
        let parameters = by(&|v| {
            matches!(
                v.causality,
                Causality::Parameter | Causality::StructuralParameter
            ) && v.variability != Variability::Constant
        });
        let inputs = by(&|v| v.causality == Causality::Input);
        let outputs = by(&|v| v.causality == Causality::Output);
        list(
            &mut o,
            md,
            "Parameters (set them with parameters = { name = value })",
            &parameters,
            true,
            fmu,
        );
        list(
            &mut o,
            md,
            "Inputs (feed them with [[inputs]], [[connections]], or start = { name = value })",
            &inputs,
            true,
            fmu,
        );
        list(
            &mut o,
            md,
            "Outputs (traced by default)",
            &outputs,
            false,
            fmu,
        );
    }
    if let Some(table) = &s.solver {
        o.push_str(table);
    }
    for (file, columns) in &s.inputs {
        o.push('\n');
        o.push_str("[[inputs]]\n");
        let _ = writeln!(o, "file = {}", string(file));
        let items: Vec<String> = columns
            .iter()
            .map(|(input, column)| format!("{} = {}", string(input), string(column)))
            .collect();
        let _ = writeln!(o, "columns = {{ {} }}", items.join(", "));
    }
    if s.interval.is_some() || s.variables.is_some() || converted {
        o.push('\n');
        o.push_str("[outputs]\n");
        match &s.variables {
            Some(v) => {
                let items: Vec<String> = v.iter().map(|x| string(x)).collect();
                let _ = writeln!(o, "variables = [{}]", items.join(", "));
            }
            None => {
                let _ = writeln!(
                    o,
                    "# variables = [{}]   # default: every output",
                    string(&format!("{name}.*"))
                );
            }
        }
        if let Some(x) = s.interval {
            let _ = writeln!(o, "interval = {}", float(x));
        }
    }
    o
}

/// `path` relative to the directory `base` (both absolute), if they share
/// a root.
fn relative_path(path: &Path, base: &Path) -> Option<PathBuf> {
    let p: Vec<Component<'_>> = path.components().collect();
    let b: Vec<Component<'_>> = base.components().collect();
    if p.first() != b.first() {
        return None;
    }
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for c in b.iter().skip(common) {
        match c {
            Component::Normal(_) => out.push(".."),
            Component::CurDir => {}
            _ => return None,
        }
    }
    for c in p.iter().skip(common) {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keys_and_values() {
        assert_eq!(
            subsystem_name(Path::new("/a/Integrator-nointerp.fmu")),
            "Integrator-nointerp"
        );
        assert_eq!(subsystem_name(Path::new("my model.v2.fmu")), "my_model_v2");
        assert_eq!(key("x0"), "x0");
        assert_eq!(key("body.x[1]"), "\"body.x[1]\"");
        assert_eq!(string("a\"b\\"), "\"a\\\"b\\\\\"");
        assert_eq!(float(0.01), "0.01");
        assert_eq!(float(1e-5), "1e-5");
        assert_eq!(float(10.0), "10.0");
        assert_eq!(value_text(&StartValue::Float(vec![1.0, 2.5])), "[1.0, 2.5]");
        assert_eq!(value_text(&StartValue::Bool(vec![true])), "true");
        assert_eq!(
            relative_path(Path::new("/a/b/c.fmu"), Path::new("/a/d")),
            Some(PathBuf::from("../b/c.fmu"))
        );
    }
}
