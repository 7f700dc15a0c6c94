//! The exported model's interface as a kit [`ModelSpec`]: built alike by
//! the exporter (model description, token) and by the library (to check
//! the token and to run the system), from the same system.

use cosim_fmi::model_description::{
    Causality as MdCausality, ModelDescription, Variable as MdVariable, VariableType,
};
use cosim_scenario::export::Exported;
use fmu_kit::{Capabilities, Factory, ModelSpec, VarType, Variable};

/// Value reference of the `i`-th exposed variable (0 is `time`).
pub fn exposed_vr(i: usize) -> u32 {
    (i + 1) as u32
}

/// The interface of `exported`, named `name`, whose models `factory`
/// builds; `wrapped`: one FMU, whose variables keep their own names.
/// Fails on an exposed variable of a type the export does not carry,
/// naming it.
pub fn model_spec(
    exported: &Exported,
    name: &str,
    factory: Factory,
    wrapped: bool,
) -> Result<ModelSpec, String> {
    let shown = |full: &str| -> String {
        match full.split_once('.') {
            Some((_, bare)) if wrapped => bare.to_string(),
            _ => full.to_string(),
        }
    };
    let (start, stop, step) = exported.experiment;
    let description = leak(
        exported
            .md
            .description
            .clone()
            .unwrap_or_else(|| format!("co-simulation '{name}'")),
    );
    let mut spec = ModelSpec::new(leak(name.to_string()), description, |_| {
        Err("unused".to_string())
    });
    spec.factory = factory;
    spec = spec
        .experiment(start, stop, step)
        .interpolate_inputs(false)
        .directional_derivatives(false);
    for (i, v) in exported.exposed().iter().enumerate() {
        let var = exposed_variable(&exported.md, v, exposed_vr(i), &shown(&v.name))?;
        spec = spec.var(var.depends_on(&feedthrough(&exported.md, i)));
    }
    let n = exported.n_exposed;
    for (j, p) in exported.parameters.iter().enumerate() {
        let vr = exposed_vr(n + j);
        let ty = kit_type(&p.variable)?;
        let described = leak(p.variable.description.clone().unwrap_or_default());
        let start = p.start.unwrap_or(0.0);
        let mut var = Variable::parameter(vr, leak(shown(&p.name)), start, described).typed(ty);
        var = with_range(var, &exported.md, &p.variable);
        spec = spec.var(var);
    }
    spec = spec.var(Variable::string_parameter(
        energy_log_vr(exported),
        ENERGY_LOG,
        "",
        "A directory: where the system's power bonds log their residual and transmitted energy at every inner step (energy.<instance name>.csv); empty: no log",
    ));
    spec = spec.var(Variable::string_parameter(
        call_log_vr(exported),
        CALL_LOG,
        "",
        "A file: every FMI call made on the inner FMUs is appended to it (the format of cosim's --log-fmi-calls); empty: no log",
    ));
    Ok(spec)
}

/// The String parameter naming the file of the inner FMI call log.
pub const CALL_LOG: &str = "cosim.fmi_call_log";

/// Its value reference: after [`ENERGY_LOG`].
pub fn call_log_vr(exported: &Exported) -> u32 {
    energy_log_vr(exported) + 1
}

/// The String parameter naming the directory of the inner energy log.
pub const ENERGY_LOG: &str = "cosim.energy_log_dir";

/// Its value reference: after the exposed variables and parameters.
pub fn energy_log_vr(exported: &Exported) -> u32 {
    exposed_vr(exported.n_exposed + exported.parameters.len())
}

/// The capabilities an exported model declares: what is true of its inside
/// (a variable step size, which every master handles at the nest's
/// boundary; the FMU state where every inner FMU can save its own, not
/// serialized); no output or directional derivatives, inputs held over
/// each step (as a nest holds its inputs over the outer step).
pub fn capabilities(exported: &Exported) -> Capabilities {
    Capabilities {
        get_set_state: exported.can_save_state,
        serialize_state: false,
        max_output_derivative_order: 0,
        interpolate_inputs: false,
        intermediate_update: false,
        variable_step: true,
        directional_derivatives: false,
        quirk: None,
    }
}

/// The exported variable of exposed inner variable `v`.
fn exposed_variable(
    md: &ModelDescription,
    v: &MdVariable,
    vr: u32,
    name: &str,
) -> Result<Variable, String> {
    let ty = kit_type(v)?;
    let name = leak(name.to_string());
    let described = leak(v.description.clone().unwrap_or_default());
    let var = match v.causality {
        MdCausality::Input => {
            let start = v.start.as_ref().and_then(scalar).unwrap_or(0.0);
            Variable::input(vr, name, start, described).typed(ty)
        }
        _ => Variable::output(vr, name, described).typed(ty),
    };
    Ok(with_range(var, md, v))
}

/// The exposed inputs exposed output `i` depends on directly, as the nest
/// declares them (its inner subsystem's feed-through): what a nest is to
/// the level above, for its structural analyses and error orders. Like a
/// nest, the exported FMU settles its inputs into its outputs in
/// Initialization Mode; after it, an input set reaches the outputs at the
/// next step (docs/export.md).
fn feedthrough(md: &ModelDescription, i: usize) -> Vec<(u32, fmu_kit::DependencyKind)> {
    use cosim_fmi::model_description::Dependencies;
    md.model_structure
        .outputs
        .iter()
        .filter(|u| u.variable == i)
        .flat_map(|u| match &u.dependencies {
            Dependencies::Listed(list) => list
                .iter()
                .map(|d| (exposed_vr(d.variable), fmu_kit::DependencyKind::Dependent))
                .collect::<Vec<_>>(),
            Dependencies::All => (0..md.variables.len())
                .filter(|&j| md.variables[j].causality == MdCausality::Input)
                .map(|j| (exposed_vr(j), fmu_kit::DependencyKind::Dependent))
                .collect(),
        })
        .collect()
}

/// `var` with the unit, quantity and range of inner variable `v`.
fn with_range(mut var: Variable, md: &ModelDescription, v: &MdVariable) -> Variable {
    if let Some(unit) = v.unit.as_deref() {
        var = var.unit(kit_unit(md, unit));
    }
    if let Some(q) = &v.quantity {
        var = var.quantity(leak(q.clone()));
    }
    if let Some(min) = v.min {
        var = var.min(min);
    }
    if let Some(max) = v.max {
        var = var.max(max);
    }
    var
}

/// The kit's type for an exposed variable: what both FMI versions have
/// (FMI 2 Real, Integer, Boolean); the 32-bit and smaller integers and
/// enumerations as Integer.
fn kit_type(v: &MdVariable) -> Result<VarType, String> {
    use VariableType as T;
    match v.var_type {
        T::Float64 | T::Float32 => Ok(VarType::Real),
        T::Int8 | T::UInt8 | T::Int16 | T::UInt16 | T::Int32 | T::Enumeration => {
            Ok(VarType::Integer)
        }
        T::Boolean => Ok(VarType::Boolean),
        other => Err(format!(
            "'{}' is a {other} variable; an exported FMU exposes Float, Integer (up to 32 bits), \
             enumeration and Boolean variables",
            v.name
        )),
    }
}

/// The kit unit of unit `name` as `md` defines it.
fn kit_unit(md: &ModelDescription, name: &str) -> fmu_kit::units::Unit {
    let base = md
        .units
        .iter()
        .find(|u| u.name == name)
        .and_then(|u| u.base_unit);
    let b = base.unwrap_or_default();
    fmu_kit::units::Unit {
        name: leak(name.to_string()),
        kg: b.kg,
        m: b.m,
        s: b.s,
        k: b.k,
        a: b.a,
        mol: b.mol,
        cd: b.cd,
        rad: b.rad,
        factor: b.factor,
        offset: b.offset,
        quantity: "",
        has_base: base.is_some(),
    }
}

fn scalar(v: &cosim_fmi::model_description::StartValue) -> Option<f64> {
    use cosim_fmi::model_description::StartValue as S;
    match v {
        S::Float(x) => x.first().copied(),
        S::Int(x) => x.first().map(|&i| i as f64),
        S::Bool(x) => x.first().map(|&b| f64::from(u8::from(b))),
        S::String(_) | S::Binary(_) => None,
    }
}

/// The kit's interface names are `&'static str`: an exported model's are
/// made once per FMU and process ([`crate::engine`] keeps one interface
/// per resources directory), so leaking them is bounded.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
