//! Capability sets, FMI versions and the GUID / instantiation token that
//! encodes them.
//!
//! One shared library serves every model and every capability variant: the
//! token in `modelDescription.xml` names the model, the FMI version, the
//! capability set and a hash of the variable list, and `fmi2Instantiate` /
//! `fmi3InstantiateCoSimulation` rebuild the instance from it. Format:
//!
//! `cosim:<Model>:<fmi2|fmi3>:<caps>:<16 hex digits of the variable hash>`
//!
//! where `<caps>` is `s<0|1>z<0|1>d<order>i<0|1>v<0|1>j<0|1>` (get/set state,
//! serialize state, max output derivative order, interpolate inputs,
//! variable step size, directional derivatives).

use crate::model::ModelSpec;

/// FMI version of a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FmiVersion {
    /// FMI 2.0 co-simulation.
    Fmi2,
    /// FMI 3.0 co-simulation.
    Fmi3,
}

impl FmiVersion {
    /// `"fmi2"` / `"fmi3"`.
    pub fn tag(self) -> &'static str {
        match self {
            FmiVersion::Fmi2 => "fmi2",
            FmiVersion::Fmi3 => "fmi3",
        }
    }

    /// The platform folder below `binaries/`.
    pub fn platform_dir(self) -> &'static str {
        match self {
            FmiVersion::Fmi2 => "linux64",
            FmiVersion::Fmi3 => "x86_64-linux",
        }
    }
}

/// What a build of a model declares and really does. A capability switched
/// off is declared false / 0 in `modelDescription.xml` and refused by the
/// binary with `Error` and the log line "capability X is disabled in this build".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capabilities {
    /// `canGetAndSetFMUstate` / `canGetAndSetFMUState`.
    pub get_set_state: bool,
    /// `canSerializeFMUstate` / `canSerializeFMUState` (needs `get_set_state`).
    pub serialize_state: bool,
    /// `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
    /// `canInterpolateInputs` (FMI 2 only; always false in FMI 3 builds).
    pub interpolate_inputs: bool,
    /// `canHandleVariableCommunicationStepSize`.
    pub variable_step: bool,
    /// `providesDirectionalDerivative(s)` (and adjoint derivatives in FMI 3).
    pub directional_derivatives: bool,
}

/// The named capability variants that `cargo xtask fmus` builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Everything the model supports.
    Full,
    /// No get/set/serialize FMU state.
    NoState,
    /// No output derivatives and no directional derivatives.
    NoDeriv,
    /// No input interpolation (FMI 2 `canInterpolateInputs="false"`).
    NoInterp,
    /// Fixed communication step size only.
    FixedStep,
}

impl Variant {
    /// All variants other than `Full`.
    pub const RESTRICTED: [Variant; 4] = [
        Variant::NoState,
        Variant::NoDeriv,
        Variant::NoInterp,
        Variant::FixedStep,
    ];

    /// File-name suffix (`"nostate"`, ...; empty for `Full`).
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Full => "",
            Variant::NoState => "nostate",
            Variant::NoDeriv => "noderiv",
            Variant::NoInterp => "nointerp",
            Variant::FixedStep => "fixedstep",
        }
    }

    /// Parses a suffix.
    pub fn from_suffix(s: &str) -> Option<Variant> {
        [
            Variant::Full,
            Variant::NoState,
            Variant::NoDeriv,
            Variant::NoInterp,
            Variant::FixedStep,
        ]
        .into_iter()
        .find(|v| v.suffix() == s)
    }
}

impl Capabilities {
    /// Everything the model supports, for a version.
    pub fn full(spec: &ModelSpec, version: FmiVersion) -> Self {
        Capabilities {
            get_set_state: true,
            serialize_state: true,
            max_output_derivative_order: spec.max_output_derivative_order,
            interpolate_inputs: version == FmiVersion::Fmi2 && spec.can_interpolate_inputs,
            variable_step: true,
            directional_derivatives: spec.provides_directional_derivatives,
        }
    }

    /// A named variant.
    pub fn variant(spec: &ModelSpec, version: FmiVersion, variant: Variant) -> Self {
        let full = Self::full(spec, version);
        match variant {
            Variant::Full => full,
            Variant::NoState => Capabilities {
                get_set_state: false,
                serialize_state: false,
                ..full
            },
            Variant::NoDeriv => Capabilities {
                max_output_derivative_order: 0,
                directional_derivatives: false,
                ..full
            },
            Variant::NoInterp => Capabilities {
                interpolate_inputs: false,
                ..full
            },
            Variant::FixedStep => Capabilities {
                variable_step: false,
                ..full
            },
        }
    }

    /// Checks the set is possible for the model and version.
    pub fn check(&self, spec: &ModelSpec, version: FmiVersion) -> Result<(), String> {
        if self.serialize_state && !self.get_set_state {
            return Err("serialize_state needs get_set_state".into());
        }
        if self.max_output_derivative_order > spec.max_output_derivative_order {
            return Err(format!(
                "{} provides output derivatives up to order {}, not {}",
                spec.name, spec.max_output_derivative_order, self.max_output_derivative_order
            ));
        }
        if self.interpolate_inputs && (version == FmiVersion::Fmi3 || !spec.can_interpolate_inputs)
        {
            return Err(format!(
                "{} {} cannot interpolate inputs",
                spec.name,
                version.tag()
            ));
        }
        if self.directional_derivatives && !spec.provides_directional_derivatives {
            return Err(format!("{} provides no directional derivatives", spec.name));
        }
        Ok(())
    }

    /// The compact code used in the token.
    pub fn code(&self) -> String {
        format!(
            "s{}z{}d{}i{}v{}j{}",
            u8::from(self.get_set_state),
            u8::from(self.serialize_state),
            self.max_output_derivative_order,
            u8::from(self.interpolate_inputs),
            u8::from(self.variable_step),
            u8::from(self.directional_derivatives)
        )
    }

    /// Parses [`Capabilities::code`].
    pub fn parse(code: &str) -> Option<Self> {
        let mut rest = code;
        let mut flag = |tag: char| -> Option<u32> {
            let r = rest.strip_prefix(tag)?;
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let n = r[..end].parse().ok()?;
            rest = &r[end..];
            Some(n)
        };
        let bool_of = |n: u32| match n {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        };
        let caps = Capabilities {
            get_set_state: bool_of(flag('s')?)?,
            serialize_state: bool_of(flag('z')?)?,
            max_output_derivative_order: flag('d')?,
            interpolate_inputs: bool_of(flag('i')?)?,
            variable_step: bool_of(flag('v')?)?,
            directional_derivatives: bool_of(flag('j')?)?,
        };
        if rest.is_empty() { Some(caps) } else { None }
    }
}

/// The GUID (FMI 2) / instantiationToken (FMI 3) of a build.
pub fn token(spec: &ModelSpec, version: FmiVersion, caps: &Capabilities) -> String {
    format!(
        "cosim:{}:{}:{}:{:016x}",
        spec.name,
        version.tag(),
        caps.code(),
        spec.variables_hash()
    )
}

/// A parsed token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Model name.
    pub model: String,
    /// FMI version.
    pub version: FmiVersion,
    /// Capability set.
    pub caps: Capabilities,
    /// Variable-list hash.
    pub hash: u64,
}

/// Parses a token; `None` if it is not one of ours.
pub fn parse_token(s: &str) -> Option<Token> {
    let mut parts = s.split(':');
    if parts.next()? != "cosim" {
        return None;
    }
    let model = parts.next()?.to_string();
    let version = match parts.next()? {
        "fmi2" => FmiVersion::Fmi2,
        "fmi3" => FmiVersion::Fmi3,
        _ => return None,
    };
    let caps = Capabilities::parse(parts.next()?)?;
    let hash_str = parts.next()?;
    if hash_str.len() != 16 || parts.next().is_some() {
        return None;
    }
    let hash = u64::from_str_radix(hash_str, 16).ok()?;
    Some(Token {
        model,
        version,
        caps,
        hash,
    })
}

/// Finds the model a token names in a registry and checks that the token
/// matches it exactly (version, capability set possible, variable hash).
pub fn resolve<'a>(
    registry: &'a [ModelSpec],
    token_str: &str,
    version: FmiVersion,
) -> Result<(&'a ModelSpec, Capabilities), String> {
    let tok = parse_token(token_str)
        .ok_or_else(|| format!("unknown GUID / instantiation token \"{token_str}\""))?;
    if tok.version != version {
        return Err(format!(
            "token \"{token_str}\" is for {} but was given to the {} interface",
            tok.version.tag(),
            version.tag()
        ));
    }
    let spec = registry
        .iter()
        .find(|s| s.name == tok.model)
        .ok_or_else(|| {
            format!(
                "no model \"{}\" in this binary (token \"{token_str}\")",
                tok.model
            )
        })?;
    if spec.variables_hash() != tok.hash {
        return Err(format!(
            "token \"{token_str}\" does not match model {} in this binary (variable list hash {:016x}); \
             the FMU was packaged from a different version of the model",
            spec.name,
            spec.variables_hash()
        ));
    }
    tok.caps
        .check(spec, version)
        .map_err(|e| format!("token \"{token_str}\": {e}"))?;
    Ok((spec, tok.caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_code_round_trips() {
        let c = Capabilities {
            get_set_state: true,
            serialize_state: false,
            max_output_derivative_order: 3,
            interpolate_inputs: true,
            variable_step: false,
            directional_derivatives: true,
        };
        assert_eq!(c.code(), "s1z0d3i1v0j1");
        assert_eq!(Capabilities::parse(&c.code()), Some(c));
        assert_eq!(Capabilities::parse("s1z0d3i1v0"), None);
        assert_eq!(Capabilities::parse("s2z0d3i1v0j1"), None);
        assert_eq!(Capabilities::parse("s1z0d3i1v0j1x"), None);
    }

    #[test]
    fn token_parses() {
        let t = parse_token("cosim:Gain:fmi2:s1z1d3i1v1j1:00000000000000ff").expect("token");
        assert_eq!(t.model, "Gain");
        assert_eq!(t.version, FmiVersion::Fmi2);
        assert_eq!(t.hash, 255);
        assert!(parse_token("{8c4e810f-3df3-4a00-8276-176fa3c9f000}").is_none());
        assert!(parse_token("cosim:Gain:fmi4:s1z1d3i1v1j1:00000000000000ff").is_none());
    }
}
