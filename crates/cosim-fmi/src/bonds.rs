//! Power-bond candidates on one FMU's interface.
//!
//! A power bond couples an *effort* (force, torque, pressure, voltage) with
//! its *flow* (velocity, angular velocity, volume flow rate, current): their
//! product is a power (kg.m2.s-3). An FMU that takes a force as input and
//! returns a velocity (or the other way round) offers one side of such a
//! bond; `cosim` uses that to suggest, check and order coupled FMUs.
//!
//! Evidence, strongest first:
//!
//! 1. **units**: the unit's SI dimension (from `<BaseUnit>` or the unit
//!    string, see [`crate::model_description::units`]);
//! 2. **quantity**: the `quantity` attribute (`Force`, `Velocity`, ...);
//! 3. **names**: only for a variable with neither unit nor quantity, the
//!    name (`F`, `force`, `v`, `omega`, `tau`, `p`, `q`, `u`, `i` ...).
//!
//! Every candidate records which evidence was used and explains itself.
//! When an input could pair with several outputs, all pairs are reported,
//! ranked (same name stem, then longest common prefix, then declaration
//! order) rather than silently picking one.

use serde::Serialize;

use crate::model_description::units::{POWER, parse_unit, variable_base_unit};
use crate::model_description::{BaseUnit, Causality, ModelDescription, Variable, VariableIndex};

/// Effort or flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum BondRole {
    /// Force, torque, pressure, voltage.
    Effort,
    /// Velocity, angular velocity, volume flow rate, current.
    Flow,
}

impl BondRole {
    /// The other role.
    pub fn opposite(self) -> BondRole {
        match self {
            BondRole::Effort => BondRole::Flow,
            BondRole::Flow => BondRole::Effort,
        }
    }
}

impl std::fmt::Display for BondRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BondRole::Effort => "effort",
            BondRole::Flow => "flow",
        })
    }
}

/// The physical domain of a bond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum BondDomain {
    /// Force and velocity.
    Translational,
    /// Torque and angular velocity.
    Rotational,
    /// Pressure and volume flow rate.
    Hydraulic,
    /// Voltage and current.
    Electrical,
}

impl std::fmt::Display for BondDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BondDomain::Translational => "translational",
            BondDomain::Rotational => "rotational",
            BondDomain::Hydraulic => "hydraulic",
            BondDomain::Electrical => "electrical",
        })
    }
}

/// A physical quantity that is one side of a power bond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PhysicalQuantity {
    /// N.
    Force,
    /// m/s.
    Velocity,
    /// N.m.
    Torque,
    /// rad/s.
    AngularVelocity,
    /// Pa.
    Pressure,
    /// m3/s.
    VolumeFlowRate,
    /// V.
    Voltage,
    /// A.
    Current,
}

impl PhysicalQuantity {
    /// All quantities.
    pub const ALL: [PhysicalQuantity; 8] = [
        PhysicalQuantity::Force,
        PhysicalQuantity::Velocity,
        PhysicalQuantity::Torque,
        PhysicalQuantity::AngularVelocity,
        PhysicalQuantity::Pressure,
        PhysicalQuantity::VolumeFlowRate,
        PhysicalQuantity::Voltage,
        PhysicalQuantity::Current,
    ];

    /// Effort or flow.
    pub fn role(self) -> BondRole {
        match self {
            PhysicalQuantity::Force
            | PhysicalQuantity::Torque
            | PhysicalQuantity::Pressure
            | PhysicalQuantity::Voltage => BondRole::Effort,
            PhysicalQuantity::Velocity
            | PhysicalQuantity::AngularVelocity
            | PhysicalQuantity::VolumeFlowRate
            | PhysicalQuantity::Current => BondRole::Flow,
        }
    }

    /// The domain.
    pub fn domain(self) -> BondDomain {
        match self {
            PhysicalQuantity::Force | PhysicalQuantity::Velocity => BondDomain::Translational,
            PhysicalQuantity::Torque | PhysicalQuantity::AngularVelocity => BondDomain::Rotational,
            PhysicalQuantity::Pressure | PhysicalQuantity::VolumeFlowRate => BondDomain::Hydraulic,
            PhysicalQuantity::Voltage | PhysicalQuantity::Current => BondDomain::Electrical,
        }
    }

    /// The SI unit, as written in explanations.
    pub fn si_unit(self) -> &'static str {
        match self {
            PhysicalQuantity::Force => "N",
            PhysicalQuantity::Velocity => "m/s",
            PhysicalQuantity::Torque => "N.m",
            PhysicalQuantity::AngularVelocity => "rad/s",
            PhysicalQuantity::Pressure => "Pa",
            PhysicalQuantity::VolumeFlowRate => "m3/s",
            PhysicalQuantity::Voltage => "V",
            PhysicalQuantity::Current => "A",
        }
    }

    /// The quantity at the other end of the bond.
    pub fn conjugate(self) -> PhysicalQuantity {
        match self {
            PhysicalQuantity::Force => PhysicalQuantity::Velocity,
            PhysicalQuantity::Velocity => PhysicalQuantity::Force,
            PhysicalQuantity::Torque => PhysicalQuantity::AngularVelocity,
            PhysicalQuantity::AngularVelocity => PhysicalQuantity::Torque,
            PhysicalQuantity::Pressure => PhysicalQuantity::VolumeFlowRate,
            PhysicalQuantity::VolumeFlowRate => PhysicalQuantity::Pressure,
            PhysicalQuantity::Voltage => PhysicalQuantity::Current,
            PhysicalQuantity::Current => PhysicalQuantity::Voltage,
        }
    }

    /// The SI dimension (kg, m, s, A exponents; radians are ignored when
    /// comparing).
    fn dimension(self) -> BaseUnit {
        let (kg, m, s, a) = match self {
            PhysicalQuantity::Force => (1, 1, -2, 0),
            PhysicalQuantity::Velocity => (0, 1, -1, 0),
            PhysicalQuantity::Torque => (1, 2, -2, 0),
            PhysicalQuantity::AngularVelocity => (0, 0, -1, 0),
            PhysicalQuantity::Pressure => (1, -1, -2, 0),
            PhysicalQuantity::VolumeFlowRate => (0, 3, -1, 0),
            PhysicalQuantity::Voltage => (1, 2, -3, -1),
            PhysicalQuantity::Current => (0, 0, 0, 1),
        };
        BaseUnit {
            kg,
            m,
            s,
            a,
            ..BaseUnit::default()
        }
    }

    fn describe(self) -> &'static str {
        match self {
            PhysicalQuantity::Force => "a force",
            PhysicalQuantity::Velocity => "a velocity",
            PhysicalQuantity::Torque => "a torque",
            PhysicalQuantity::AngularVelocity => "an angular velocity",
            PhysicalQuantity::Pressure => "a pressure",
            PhysicalQuantity::VolumeFlowRate => "a volume flow rate",
            PhysicalQuantity::Voltage => "a voltage",
            PhysicalQuantity::Current => "a current",
        }
    }
}

impl std::fmt::Display for PhysicalQuantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// What a classification rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Evidence {
    /// The unit's SI dimension.
    Units,
    /// The `quantity` attribute.
    Quantity,
    /// The variable name (only used when unit and quantity are missing).
    Names,
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Evidence::Units => "units",
            Evidence::Quantity => "quantity",
            Evidence::Names => "names",
        })
    }
}

/// The classification of one variable as one side of a power bond.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VariableClass {
    /// The quantity recognised.
    pub quantity: PhysicalQuantity,
    /// Effort or flow.
    pub role: BondRole,
    /// The domain.
    pub domain: BondDomain,
    /// What the classification rests on (strongest first).
    pub evidence: Vec<Evidence>,
    /// Human-readable reason, e.g. "unit 'kN' has the dimension of a force".
    pub explanation: String,
}

/// Classifies the variable at `index` of `md` as an effort or a flow.
///
/// Returns `None` for variables that are not scalar floats, whose unit is
/// known but not one of the bond quantities, whose unit and quantity
/// disagree, or about which nothing is known. Names are only looked at when
/// the variable has neither a unit nor a quantity.
pub fn classify_variable(md: &ModelDescription, index: VariableIndex) -> Option<VariableClass> {
    classify(md, md.variables.get(index)?)
}

/// Like [`classify_variable`], for a variable of `md` given by reference.
pub fn classify(md: &ModelDescription, variable: &Variable) -> Option<VariableClass> {
    if !variable.var_type.is_float() || !variable.is_scalar() {
        return None;
    }
    let by_quantity = variable.quantity.as_deref().map(quantity_from_attribute);
    match variable.unit.as_deref() {
        Some(unit) => {
            let base = variable_base_unit(md, variable);
            match base {
                Some(base) => {
                    let q = quantity_from_dimension(&base, unit, variable.quantity.as_deref())?;
                    match by_quantity {
                        Some(Some(qq)) if qq != q => None,
                        Some(Some(_)) => Some(make_class(
                            q,
                            vec![Evidence::Units, Evidence::Quantity],
                            format!(
                                "unit '{unit}' ({}) and quantity '{}' are those of {}",
                                base.dimension_string(),
                                variable.quantity.as_deref().unwrap_or_default(),
                                q.describe()
                            ),
                        )),
                        _ => Some(make_class(
                            q,
                            vec![Evidence::Units],
                            format!(
                                "unit '{unit}' ({}) is that of {}",
                                base.dimension_string(),
                                q.describe()
                            ),
                        )),
                    }
                }
                // An unknown unit: the quantity may still tell, names may not.
                None => match by_quantity {
                    Some(Some(q)) => Some(make_class(
                        q,
                        vec![Evidence::Quantity],
                        format!(
                            "quantity '{}' is {} (unit '{unit}' is not known)",
                            variable.quantity.as_deref().unwrap_or_default(),
                            q.describe()
                        ),
                    )),
                    _ => None,
                },
            }
        }
        None => match by_quantity {
            Some(Some(q)) => Some(make_class(
                q,
                vec![Evidence::Quantity],
                format!(
                    "quantity '{}' is {} (no unit)",
                    variable.quantity.as_deref().unwrap_or_default(),
                    q.describe()
                ),
            )),
            Some(None) => None,
            None => {
                let (q, token) = quantity_from_name(&variable.name)?;
                Some(make_class(
                    q,
                    vec![Evidence::Names],
                    format!(
                        "no unit and no quantity; the name part '{token}' suggests {}",
                        q.describe()
                    ),
                ))
            }
        },
    }
}

fn make_class(q: PhysicalQuantity, evidence: Vec<Evidence>, explanation: String) -> VariableClass {
    VariableClass {
        quantity: q,
        role: q.role(),
        domain: q.domain(),
        evidence,
        explanation,
    }
}

/// The bond quantity with this SI dimension, if any. `unit` and `quantity`
/// disambiguate torque from energy (both kg.m2.s-2) and angular velocity
/// from frequency (both s-1).
fn quantity_from_dimension(
    base: &BaseUnit,
    unit: &str,
    quantity: Option<&str>,
) -> Option<PhysicalQuantity> {
    let q = PhysicalQuantity::ALL
        .into_iter()
        .find(|q| q.dimension().same_dimension_ignoring_rad(base))?;
    let quantity = quantity.map(normalize).unwrap_or_default();
    let symbols: Vec<&str> = unit
        .split(|c: char| !c.is_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect();
    match q {
        PhysicalQuantity::Torque => {
            let energy_unit = symbols.iter().any(|s| {
                matches!(
                    s.trim_end_matches(|c: char| c.is_ascii_digit()),
                    "J" | "kJ" | "MJ" | "mJ" | "Wh" | "kWh" | "MWh" | "eV" | "cal" | "kcal"
                )
            });
            let energy_quantity = matches!(quantity.as_str(), "energy" | "work" | "heat");
            if energy_unit || energy_quantity || base.rad > 0 {
                return None;
            }
        }
        PhysicalQuantity::AngularVelocity => {
            let frequency_unit = symbols.iter().any(|s| s.ends_with("Hz"));
            let frequency_quantity = quantity.contains("frequency");
            if frequency_unit || frequency_quantity || base.rad < 0 || base.rad > 1 {
                return None;
            }
        }
        _ => {
            if base.rad != 0 {
                return None;
            }
        }
    }
    Some(q)
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The bond quantity named by a `quantity` attribute; `None` when it names
/// something else.
fn quantity_from_attribute(quantity: &str) -> Option<PhysicalQuantity> {
    Some(match normalize(quantity).as_str() {
        "force" => PhysicalQuantity::Force,
        "velocity" | "speed" | "linearvelocity" | "translationalvelocity" => {
            PhysicalQuantity::Velocity
        }
        "torque" | "momentofforce" => PhysicalQuantity::Torque,
        "angularvelocity" | "angularspeed" | "rotationalspeed" | "rotationalvelocity" => {
            PhysicalQuantity::AngularVelocity
        }
        "pressure" | "absolutepressure" | "pressuredifference" => PhysicalQuantity::Pressure,
        "volumeflowrate" | "volumeflow" | "volumetricflowrate" => PhysicalQuantity::VolumeFlowRate,
        "voltage"
        | "electricpotential"
        | "potentialdifference"
        | "electricpotentialdifference"
        | "electricvoltage" => PhysicalQuantity::Voltage,
        "current" | "electriccurrent" => PhysicalQuantity::Current,
        _ => return None,
    })
}

/// Splits a variable name into lower-level tokens: path components, `_`,
/// letter/digit and camelCase boundaries. Array subscripts are dropped.
fn name_tokens(name: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut prev: Option<char> = None;
    let mut in_brackets = 0usize;
    let flush = |current: &mut String, tokens: &mut Vec<String>| {
        if !current.is_empty() {
            tokens.push(std::mem::take(current));
        }
    };
    for c in name.chars() {
        if c == '[' {
            in_brackets += 1;
            flush(&mut current, &mut tokens);
            prev = None;
            continue;
        }
        if c == ']' {
            in_brackets = in_brackets.saturating_sub(1);
            prev = None;
            continue;
        }
        if in_brackets > 0 {
            continue;
        }
        if !c.is_alphanumeric() {
            flush(&mut current, &mut tokens);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let boundary = (p.is_alphabetic() && c.is_ascii_digit())
                || (p.is_ascii_digit() && c.is_alphabetic())
                || (p.is_lowercase() && c.is_uppercase());
            if boundary {
                flush(&mut current, &mut tokens);
            }
        }
        current.push(c);
        prev = Some(c);
    }
    flush(&mut current, &mut tokens);
    tokens
}

/// Name keywords: (token, case-sensitive, quantity).
const NAME_KEYWORDS: &[(&str, bool, PhysicalQuantity)] = &[
    ("F", false, PhysicalQuantity::Force),
    ("Fx", false, PhysicalQuantity::Force),
    ("Fy", false, PhysicalQuantity::Force),
    ("Fz", false, PhysicalQuantity::Force),
    ("force", false, PhysicalQuantity::Force),
    ("v", true, PhysicalQuantity::Velocity),
    ("vx", true, PhysicalQuantity::Velocity),
    ("vy", true, PhysicalQuantity::Velocity),
    ("vz", true, PhysicalQuantity::Velocity),
    ("vel", false, PhysicalQuantity::Velocity),
    ("velocity", false, PhysicalQuantity::Velocity),
    ("speed", false, PhysicalQuantity::Velocity),
    ("tau", false, PhysicalQuantity::Torque),
    ("torque", false, PhysicalQuantity::Torque),
    ("trq", false, PhysicalQuantity::Torque),
    ("omega", false, PhysicalQuantity::AngularVelocity),
    ("w", true, PhysicalQuantity::AngularVelocity),
    ("p", true, PhysicalQuantity::Pressure),
    ("dp", true, PhysicalQuantity::Pressure),
    ("pressure", false, PhysicalQuantity::Pressure),
    ("q", false, PhysicalQuantity::VolumeFlowRate),
    ("flowrate", false, PhysicalQuantity::VolumeFlowRate),
    ("u", false, PhysicalQuantity::Voltage),
    ("voltage", false, PhysicalQuantity::Voltage),
    ("i", false, PhysicalQuantity::Current),
    ("current", false, PhysicalQuantity::Current),
];

/// The quantity a name suggests, with the token that suggests it.
fn quantity_from_name(name: &str) -> Option<(PhysicalQuantity, String)> {
    let lower = name.to_lowercase();
    if lower.contains("v_flow") || lower.contains("volumeflow") || lower.contains("volflow") {
        return Some((PhysicalQuantity::VolumeFlowRate, "V_flow".to_string()));
    }
    let tokens = name_tokens(name);
    for token in &tokens {
        if let Some(q) = keyword(token) {
            return Some((q, token.clone()));
        }
    }
    None
}

fn keyword(token: &str) -> Option<PhysicalQuantity> {
    NAME_KEYWORDS.iter().find_map(|(k, case_sensitive, q)| {
        let hit = if *case_sensitive {
            token == *k
        } else {
            token.eq_ignore_ascii_case(k)
        };
        hit.then_some(*q)
    })
}

/// Direction words left out of name stems.
fn is_direction(token: &str) -> bool {
    matches!(
        token.to_ascii_lowercase().as_str(),
        "in" | "out" | "input" | "output" | "inp" | "outp" | "set" | "meas" | "ref"
    )
}

/// The name without its quantity token and direction words, lowercased:
/// `F_in` -> "", `f1` -> "1", `wheel.F_front` -> "wheel_front".
fn name_stem(name: &str) -> String {
    let tokens = name_tokens(name);
    let mut removed_quantity = false;
    let kept: Vec<String> = tokens
        .into_iter()
        .filter(|t| {
            if !removed_quantity && keyword(t).is_some() {
                removed_quantity = true;
                return false;
            }
            !is_direction(t)
        })
        .map(|t| t.to_lowercase())
        .collect();
    kept.join("_")
}

fn common_prefix_len(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// A possible power bond between an input and an output of one FMU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BondCandidate {
    /// The input variable.
    pub input: VariableIndex,
    /// The output variable.
    pub output: VariableIndex,
    /// Name of the input.
    pub input_name: String,
    /// Name of the output.
    pub output_name: String,
    /// The domain.
    pub domain: BondDomain,
    /// Role of the input (the output has the opposite one).
    pub input_role: BondRole,
    /// What the input was recognised as.
    pub input_quantity: PhysicalQuantity,
    /// What the output was recognised as.
    pub output_quantity: PhysicalQuantity,
    /// The evidence used for either side (strongest first, no duplicates).
    pub evidence: Vec<Evidence>,
    /// 1-based rank among the candidates of the same input (1 = best).
    pub rank: usize,
    /// How many candidates the input has (1 = unambiguous).
    pub alternatives: usize,
    /// Why this rank: "same name stem 'front'", "common prefix 'wheel_'",
    /// "declaration order", or "only candidate".
    pub rank_reason: String,
    /// A readable explanation of the whole candidate.
    pub explanation: String,
}

impl BondCandidate {
    /// True when the input has more than one candidate output.
    pub fn is_ambiguous(&self) -> bool {
        self.alternatives > 1
    }
}

/// Finds the power-bond candidates on one FMU's interface: every pair of
/// an input and an output that are effort and flow (or flow and effort) of
/// the same domain. Sorted by input declaration order, then rank.
pub fn find_bond_candidates(md: &ModelDescription) -> Vec<BondCandidate> {
    let classes: Vec<Option<VariableClass>> = md
        .variables
        .iter()
        .map(|v| {
            if matches!(v.causality, Causality::Input | Causality::Output) {
                classify(md, v)
            } else {
                None
            }
        })
        .collect();
    let class_of = |i: VariableIndex| classes.get(i).and_then(Option::as_ref);

    let mut out = Vec::new();
    for input in md.inputs() {
        let (Some(ic), Some(iv)) = (class_of(input), md.variables.get(input)) else {
            continue;
        };
        let mut found: Vec<(VariableIndex, &VariableClass, &Variable)> = md
            .outputs()
            .filter_map(|o| Some((o, class_of(o)?, md.variables.get(o)?)))
            .filter(|(_, oc, _)| oc.domain == ic.domain && oc.role == ic.role.opposite())
            .collect();
        if found.is_empty() {
            continue;
        }
        let input_stem = name_stem(&iv.name);
        found.sort_by_key(|(o, _, ov)| {
            let same_stem = name_stem(&ov.name) == input_stem;
            (
                !same_stem,
                std::cmp::Reverse(common_prefix_len(&iv.name, &ov.name)),
                *o,
            )
        });
        let alternatives = found.len();
        for (k, (output, oc, ov)) in found.iter().enumerate() {
            let rank = k + 1;
            let rank_reason = if alternatives == 1 {
                "only candidate".to_string()
            } else {
                rank_reason(&iv.name, &ov.name, &input_stem)
            };
            let mut evidence: Vec<Evidence> =
                ic.evidence.iter().chain(&oc.evidence).copied().collect();
            evidence.sort();
            evidence.dedup();
            let mut explanation = format!(
                "input '{}'{}: {}; output '{}'{}: {}. Together they are the {} and {} of a {} power bond",
                iv.name,
                unit_suffix(iv),
                ic.explanation,
                ov.name,
                unit_suffix(ov),
                oc.explanation,
                ic.role,
                oc.role,
                ic.domain
            );
            if let (Some(a), Some(b)) = (variable_base_unit(md, iv), variable_base_unit(md, ov)) {
                explanation.push_str(&format!(
                    " ({} x {} = {})",
                    iv.unit.as_deref().unwrap_or_default(),
                    ov.unit.as_deref().unwrap_or_default(),
                    a.multiply(&b).dimension_string()
                ));
            }
            explanation.push('.');
            if alternatives > 1 {
                explanation.push_str(&format!(
                    " Rank {rank} of {alternatives} for input '{}' ({rank_reason}).",
                    iv.name
                ));
            }
            out.push(BondCandidate {
                input,
                output: *output,
                input_name: iv.name.clone(),
                output_name: ov.name.clone(),
                domain: ic.domain,
                input_role: ic.role,
                input_quantity: ic.quantity,
                output_quantity: oc.quantity,
                evidence,
                rank,
                alternatives,
                rank_reason,
                explanation,
            });
        }
    }
    out
}

fn unit_suffix(v: &Variable) -> String {
    match &v.unit {
        Some(u) => format!(" [{u}]"),
        None => String::new(),
    }
}

fn rank_reason(input: &str, output: &str, input_stem: &str) -> String {
    let stem = name_stem(output);
    if stem == input_stem {
        if stem.is_empty() {
            "same name stem (only the quantity and direction differ)".to_string()
        } else {
            format!("same name stem '{stem}'")
        }
    } else {
        let n = common_prefix_len(input, output);
        if n > 0 {
            let prefix: String = input.chars().take(n).collect();
            format!("common prefix '{prefix}'")
        } else {
            "declaration order".to_string()
        }
    }
}

/// The result of [`check_effort_flow_pair`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairCheck {
    /// The domain of the bond.
    pub domain: BondDomain,
    /// The role of the first variable (the second has the opposite one).
    pub a_role: BondRole,
    /// What the first variable is.
    pub a_quantity: PhysicalQuantity,
    /// What the second variable is.
    pub b_quantity: PhysicalQuantity,
    /// Factor from the product of the two values to watts (1 for SI units).
    pub power_factor: f64,
}

/// Checks by unit that variable `a` of `md_a` and variable `b` of `md_b`
/// (possibly the same model description) form an effort/flow pair, e.g.
/// to accept or refuse a bond declared in a scenario.
///
/// # Errors
///
/// A sentence saying why they do not (no unit, unknown unit, the product is
/// not a power, both efforts ...).
pub fn check_effort_flow_pair(
    md_a: &ModelDescription,
    a: VariableIndex,
    md_b: &ModelDescription,
    b: VariableIndex,
) -> std::result::Result<PairCheck, String> {
    let va = md_a
        .variables
        .get(a)
        .ok_or_else(|| format!("no variable with index {a} in '{}'", md_a.model_name))?;
    let vb = md_b
        .variables
        .get(b)
        .ok_or_else(|| format!("no variable with index {b} in '{}'", md_b.model_name))?;
    let side = |md: &ModelDescription,
                v: &Variable|
     -> std::result::Result<(BaseUnit, PhysicalQuantity), String> {
        if !v.var_type.is_float() {
            return Err(format!(
                "'{}' is of type {}, not a floating-point variable",
                v.name, v.var_type
            ));
        }
        if !v.is_scalar() {
            return Err(format!("'{}' is an array", v.name));
        }
        let unit = v
            .unit
            .as_deref()
            .ok_or_else(|| format!("'{}' has no unit", v.name))?;
        let base = variable_base_unit(md, v)
            .ok_or_else(|| format!("the unit '{unit}' of '{}' is not known", v.name))?;
        let q = quantity_from_dimension(&base, unit, v.quantity.as_deref()).ok_or_else(|| {
            format!(
                "'{}' [{unit}] ({}) is not a force, velocity, torque, angular velocity, pressure, volume flow rate, voltage or current",
                v.name,
                base.dimension_string()
            )
        })?;
        Ok((base, q))
    };
    let (ba, qa) = side(md_a, va)?;
    let (bb, qb) = side(md_b, vb)?;
    let product = ba.multiply(&bb);
    if !product.same_dimension_ignoring_rad(&POWER) {
        return Err(format!(
            "'{}' [{}] is {} and '{}' [{}] is {}: their product ({}) is not a power ({})",
            va.name,
            va.unit.as_deref().unwrap_or_default(),
            qa.describe(),
            vb.name,
            vb.unit.as_deref().unwrap_or_default(),
            qb.describe(),
            product.dimension_string(),
            POWER.dimension_string()
        ));
    }
    if qa.role() == qb.role() || qa.domain() != qb.domain() {
        return Err(format!(
            "'{}' is {} ({}) and '{}' is {} ({}): a bond needs the effort and the flow of one domain",
            va.name,
            qa.describe(),
            qa.role(),
            vb.name,
            qb.describe(),
            qb.role()
        ));
    }
    Ok(PairCheck {
        domain: qa.domain(),
        a_role: qa.role(),
        a_quantity: qa,
        b_quantity: qb,
        power_factor: product.factor,
    })
}

/// True when the product of two units is a power (radians ignored).
pub fn is_power_product(a: &BaseUnit, b: &BaseUnit) -> bool {
    a.multiply(b).same_dimension_ignoring_rad(&POWER)
}

/// Classifies a bare unit string (no unit definitions): the bond quantity
/// it measures, if any.
pub fn quantity_of_unit(unit: &str) -> Option<PhysicalQuantity> {
    quantity_from_dimension(&parse_unit(unit)?, unit, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_stems() {
        assert_eq!(name_tokens("wheel.F_in[2]"), vec!["wheel", "F", "in"]);
        assert_eq!(name_tokens("vWheel12"), vec!["v", "Wheel", "12"]);
        assert_eq!(name_stem("F_in"), "");
        assert_eq!(name_stem("v_out"), "");
        assert_eq!(name_stem("f1"), "1");
        assert_eq!(name_stem("v1"), "1");
        assert_eq!(name_stem("front.F"), "front");
        assert_eq!(name_stem("front.v"), "front");
    }

    #[test]
    fn names() {
        assert_eq!(
            quantity_from_name("F_in").map(|x| x.0),
            Some(PhysicalQuantity::Force)
        );
        assert_eq!(
            quantity_from_name("omega_shaft").map(|x| x.0),
            Some(PhysicalQuantity::AngularVelocity)
        );
        assert_eq!(quantity_from_name("P_el").map(|x| x.0), None);
        assert_eq!(
            quantity_from_name("V_flow").map(|x| x.0),
            Some(PhysicalQuantity::VolumeFlowRate)
        );
        assert_eq!(quantity_from_name("position"), None);
    }

    #[test]
    fn unit_quantities() {
        assert_eq!(quantity_of_unit("kN"), Some(PhysicalQuantity::Force));
        assert_eq!(quantity_of_unit("km/h"), Some(PhysicalQuantity::Velocity));
        assert_eq!(quantity_of_unit("N.m"), Some(PhysicalQuantity::Torque));
        assert_eq!(quantity_of_unit("J"), None);
        assert_eq!(
            quantity_of_unit("rpm"),
            Some(PhysicalQuantity::AngularVelocity)
        );
        assert_eq!(
            quantity_of_unit("1/s"),
            Some(PhysicalQuantity::AngularVelocity)
        );
        assert_eq!(quantity_of_unit("Hz"), None);
        assert_eq!(quantity_of_unit("bar"), Some(PhysicalQuantity::Pressure));
        assert_eq!(
            quantity_of_unit("l/min"),
            Some(PhysicalQuantity::VolumeFlowRate)
        );
        assert_eq!(quantity_of_unit("mV"), Some(PhysicalQuantity::Voltage));
        assert_eq!(quantity_of_unit("mA"), Some(PhysicalQuantity::Current));
        assert_eq!(quantity_of_unit("K"), None);
    }
}
