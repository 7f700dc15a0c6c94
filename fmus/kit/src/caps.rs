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
//! variable step size, directional derivatives), followed in FMI 3 tokens
//! (and only there) by `u<0|1>` (provides intermediate update).
//!
//! A quirk build (a [`Quirk`]: a measured misbehaviour of a real exporter,
//! reproduced on purpose and declared nowhere in `modelDescription.xml`)
//! appends the quirk's tag as a sixth field:
//! `cosim:Integrator:fmi2:s1z1d3i1v1j1:<hash>:resets-in-setup`.

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

/// A misbehaviour of a real exporter that a quirk build reproduces (and
/// does not declare: its `modelDescription.xml` is the full build's, with
/// the quirk only in the token). Each was measured with a real FMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Quirk {
    /// FMI 2: `fmi2SetupExperiment` resets every parameter to its start
    /// value, so a master that sets parameters before it (in Instantiated,
    /// as the standard allows) silently runs with the defaults.
    ResetsInSetup,
    /// A step called with `noSetFMUStatePriorToCurrentPoint = false` after
    /// the first step of the run leaves the states unchanged (time
    /// advances): the outputs stay at their values after the first step.
    /// Steps with `true` behave normally.
    FreezesWithoutNoSetPrior,
    /// FMI 2: `fmi2FreeInstance` registers a process-exit handler (libc
    /// `atexit`) that crashes the process with SIGSEGV when it exits
    /// normally, as PythonFMU-built FMUs do in Python's finalisation.
    /// Everything before the exit works normally.
    CrashesAtExit,
}

impl Quirk {
    /// Every quirk.
    pub const ALL: [Quirk; 3] = [
        Quirk::ResetsInSetup,
        Quirk::FreezesWithoutNoSetPrior,
        Quirk::CrashesAtExit,
    ];

    /// The tag in the token (and, with `fmi3-` for FMI 3 builds, the
    /// variant's file-name suffix).
    pub fn tag(self) -> &'static str {
        match self {
            Quirk::ResetsInSetup => "resets-in-setup",
            Quirk::FreezesWithoutNoSetPrior => "freezes-without-no-set-prior",
            Quirk::CrashesAtExit => "crashes-at-exit",
        }
    }

    /// Parses [`Quirk::tag`].
    pub fn from_tag(s: &str) -> Option<Quirk> {
        Quirk::ALL.into_iter().find(|q| q.tag() == s)
    }

    /// Whether a build for `version` can have the quirk (the FMI 2 only
    /// ones act in FMI 2 functions).
    pub fn supports(self, version: FmiVersion) -> bool {
        match self {
            Quirk::FreezesWithoutNoSetPrior => true,
            Quirk::ResetsInSetup | Quirk::CrashesAtExit => version == FmiVersion::Fmi2,
        }
    }
}

/// What a build of a model declares and really does. A capability switched
/// off is declared false / 0 in `modelDescription.xml` and refused by the
/// binary with `Error` and the log line "capability X is disabled in this build".
/// A [`Quirk`] is not declared (only encoded in the token).
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
    /// `providesIntermediateUpdate` (FMI 3 only; always false in FMI 2
    /// builds): the FMU calls the importer's intermediate update callback
    /// inside `fmi3DoStep` to get the inputs at internal times, the FMI 3
    /// counterpart of FMI 2 input derivatives.
    pub intermediate_update: bool,
    /// `canHandleVariableCommunicationStepSize`.
    pub variable_step: bool,
    /// `providesDirectionalDerivative(s)` (and adjoint derivatives in FMI 3).
    pub directional_derivatives: bool,
    /// The exporter misbehaviour this build reproduces, if any.
    pub quirk: Option<Quirk>,
}

/// The named capability variants that `cargo xtask fmus` builds (FMI 2:
/// [`Variant::RESTRICTED`], FMI 3: [`Variant::FMI3_RESTRICTED`]) and the
/// quirk builds ([`Variant::QUIRKS`], see [`Quirk`]).
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
    /// FMI 3 without intermediate update (`providesIntermediateUpdate="false"`):
    /// inputs are held over the step.
    NoIntermediateUpdate,
    /// FMI 2, [`Quirk::ResetsInSetup`].
    ResetsInSetup,
    /// FMI 2, [`Quirk::FreezesWithoutNoSetPrior`].
    FreezesWithoutNoSetPrior,
    /// FMI 3, [`Quirk::FreezesWithoutNoSetPrior`].
    Fmi3FreezesWithoutNoSetPrior,
    /// FMI 2, [`Quirk::CrashesAtExit`].
    CrashesAtExit,
}

impl Variant {
    /// The FMI 2 variants (all restricted variants packaged as FMI 2).
    pub const RESTRICTED: [Variant; 4] = [
        Variant::NoState,
        Variant::NoDeriv,
        Variant::NoInterp,
        Variant::FixedStep,
    ];

    /// The FMI 3 variants (restricted variants packaged as FMI 3).
    pub const FMI3_RESTRICTED: [Variant; 1] = [Variant::NoIntermediateUpdate];

    /// The quirk builds (FMI 2 and FMI 3), packaged in `fmus/dist/quirks/`.
    pub const QUIRKS: [Variant; 4] = [
        Variant::ResetsInSetup,
        Variant::FreezesWithoutNoSetPrior,
        Variant::Fmi3FreezesWithoutNoSetPrior,
        Variant::CrashesAtExit,
    ];

    /// Every variant.
    pub const ALL: [Variant; 10] = [
        Variant::Full,
        Variant::NoState,
        Variant::NoDeriv,
        Variant::NoInterp,
        Variant::FixedStep,
        Variant::NoIntermediateUpdate,
        Variant::ResetsInSetup,
        Variant::FreezesWithoutNoSetPrior,
        Variant::Fmi3FreezesWithoutNoSetPrior,
        Variant::CrashesAtExit,
    ];

    /// The quirk a quirk build reproduces (`None` for the others).
    pub fn quirk(self) -> Option<Quirk> {
        match self {
            Variant::ResetsInSetup => Some(Quirk::ResetsInSetup),
            Variant::FreezesWithoutNoSetPrior | Variant::Fmi3FreezesWithoutNoSetPrior => {
                Some(Quirk::FreezesWithoutNoSetPrior)
            }
            Variant::CrashesAtExit => Some(Quirk::CrashesAtExit),
            _ => None,
        }
    }

    /// File-name suffix (`"nostate"`, ...; empty for `Full`). FMI 3
    /// variants carry the version: `"fmi3-no-intermediate-update"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Full => "",
            Variant::NoState => "nostate",
            Variant::NoDeriv => "noderiv",
            Variant::NoInterp => "nointerp",
            Variant::FixedStep => "fixedstep",
            Variant::NoIntermediateUpdate => "fmi3-no-intermediate-update",
            Variant::ResetsInSetup => "resets-in-setup",
            Variant::FreezesWithoutNoSetPrior => "freezes-without-no-set-prior",
            Variant::Fmi3FreezesWithoutNoSetPrior => "fmi3-freezes-without-no-set-prior",
            Variant::CrashesAtExit => "crashes-at-exit",
        }
    }

    /// The FMI version the variant is packaged for (`None` for `Full`,
    /// which is packaged for both).
    pub fn version(self) -> Option<FmiVersion> {
        match self {
            Variant::Full => None,
            Variant::NoState
            | Variant::NoDeriv
            | Variant::NoInterp
            | Variant::FixedStep
            | Variant::ResetsInSetup
            | Variant::FreezesWithoutNoSetPrior
            | Variant::CrashesAtExit => Some(FmiVersion::Fmi2),
            Variant::NoIntermediateUpdate | Variant::Fmi3FreezesWithoutNoSetPrior => {
                Some(FmiVersion::Fmi3)
            }
        }
    }

    /// Parses a suffix.
    pub fn from_suffix(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.suffix() == s)
    }
}

impl Capabilities {
    /// Everything the model supports, for a version. A Model Exchange only
    /// model has none of the co-simulation capabilities (output
    /// derivatives, input interpolation, intermediate update), and its
    /// directional derivatives are those of its Model Exchange equations;
    /// a Scheduled Execution only model has none of them either, and no
    /// directional derivatives.
    pub fn full(spec: &ModelSpec, version: FmiVersion) -> Self {
        if spec.scheduled_execution_only {
            // Scheduled Execution only: no steps, no derivatives.
            return Capabilities {
                get_set_state: true,
                serialize_state: true,
                max_output_derivative_order: 0,
                interpolate_inputs: false,
                intermediate_update: false,
                variable_step: true,
                directional_derivatives: false,
                quirk: None,
            };
        }
        if let Some(me) = spec.model_exchange.as_ref().filter(|me| !me.co_simulation) {
            return Capabilities {
                get_set_state: true,
                serialize_state: true,
                max_output_derivative_order: 0,
                interpolate_inputs: false,
                intermediate_update: false,
                variable_step: true,
                directional_derivatives: me.partial_derivatives,
                quirk: None,
            };
        }
        Capabilities {
            get_set_state: true,
            serialize_state: true,
            max_output_derivative_order: spec.max_output_derivative_order,
            interpolate_inputs: version == FmiVersion::Fmi2 && spec.can_interpolate_inputs,
            intermediate_update: version == FmiVersion::Fmi3 && spec.can_interpolate_inputs,
            variable_step: true,
            directional_derivatives: spec.provides_directional_derivatives,
            quirk: None,
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
            Variant::NoIntermediateUpdate => Capabilities {
                intermediate_update: false,
                ..full
            },
            quirky => Capabilities {
                quirk: quirky.quirk(),
                ..full
            },
        }
    }

    /// Checks the set is possible for the model and version (and that the
    /// model has a build for the version, see [`ModelSpec::supports`]).
    pub fn check(&self, spec: &ModelSpec, version: FmiVersion) -> Result<(), String> {
        if let (false, Some(v)) = (spec.supports(version), spec.first_fmi3_only()) {
            return Err(format!(
                "{} has no {} build: {} {}",
                spec.name,
                version.tag(),
                v.name,
                v.fmi3_only_reason().unwrap_or_default()
            ));
        }
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
        if self.intermediate_update && (version == FmiVersion::Fmi2 || !spec.can_interpolate_inputs)
        {
            return Err(format!(
                "{} {} cannot provide intermediate update",
                spec.name,
                version.tag()
            ));
        }
        let directional = if spec.has_co_simulation() {
            spec.provides_directional_derivatives
        } else {
            spec.model_exchange
                .as_ref()
                .is_some_and(|me| me.partial_derivatives)
        };
        if self.directional_derivatives && !directional {
            return Err(format!("{} provides no directional derivatives", spec.name));
        }
        if let Some(q) = self.quirk
            && !q.supports(version)
        {
            return Err(format!(
                "quirk {} exists in {} builds only",
                q.tag(),
                FmiVersion::Fmi2.tag()
            ));
        }
        Ok(())
    }

    /// The compact code used in the token of a build for `version`: FMI 3
    /// codes end in `u<0|1>` (intermediate update), FMI 2 codes do not.
    pub fn code(&self, version: FmiVersion) -> String {
        let mut code = format!(
            "s{}z{}d{}i{}v{}j{}",
            u8::from(self.get_set_state),
            u8::from(self.serialize_state),
            self.max_output_derivative_order,
            u8::from(self.interpolate_inputs),
            u8::from(self.variable_step),
            u8::from(self.directional_derivatives)
        );
        if version == FmiVersion::Fmi3 {
            code.push_str(if self.intermediate_update { "u1" } else { "u0" });
        }
        code
    }

    /// Parses [`Capabilities::code`] of a build for `version`.
    pub fn parse(code: &str, version: FmiVersion) -> Option<Self> {
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
        let get_set_state = bool_of(flag('s')?)?;
        let serialize_state = bool_of(flag('z')?)?;
        let max_output_derivative_order = flag('d')?;
        let interpolate_inputs = bool_of(flag('i')?)?;
        let variable_step = bool_of(flag('v')?)?;
        let directional_derivatives = bool_of(flag('j')?)?;
        let intermediate_update = match version {
            FmiVersion::Fmi2 => false,
            FmiVersion::Fmi3 => bool_of(flag('u')?)?,
        };
        let caps = Capabilities {
            get_set_state,
            serialize_state,
            max_output_derivative_order,
            interpolate_inputs,
            intermediate_update,
            variable_step,
            directional_derivatives,
            quirk: None,
        };
        if rest.is_empty() { Some(caps) } else { None }
    }
}

/// The GUID (FMI 2) / instantiationToken (FMI 3) of a build (with the
/// quirk's tag as a sixth field for a quirk build).
pub fn token(spec: &ModelSpec, version: FmiVersion, caps: &Capabilities) -> String {
    let mut t = format!(
        "cosim:{}:{}:{}:{:016x}",
        spec.name,
        version.tag(),
        caps.code(version),
        spec.variables_hash()
    );
    if let Some(q) = caps.quirk {
        t.push(':');
        t.push_str(q.tag());
    }
    t
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
    let mut caps = Capabilities::parse(parts.next()?, version)?;
    let hash_str = parts.next()?;
    if hash_str.len() != 16 {
        return None;
    }
    if let Some(tag) = parts.next() {
        caps.quirk = Some(Quirk::from_tag(tag)?);
    }
    if parts.next().is_some() {
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

/// Where the C layer finds the model an instantiation names: a static
/// registry (the project's FMUs), or a [`Resolver`] that builds the model
/// from the FMU's resources (an exported co-simulation).
pub trait ModelSource: Copy {
    /// The model `token` names and the capabilities of its build;
    /// `resources`: the FMU's `resources` directory, where the importer
    /// gave one.
    fn resolve(
        self,
        token: &str,
        version: FmiVersion,
        resources: Option<&std::path::Path>,
    ) -> Result<(&'static ModelSpec, Capabilities), String>;
}

impl ModelSource for &'static [ModelSpec] {
    fn resolve(
        self,
        token: &str,
        version: FmiVersion,
        _resources: Option<&std::path::Path>,
    ) -> Result<(&'static ModelSpec, Capabilities), String> {
        resolve(self, token, version)
    }
}

/// What a [`ModelSource`] answers: the model and its build's capabilities,
/// or why there is none.
pub type Resolved = Result<(&'static ModelSpec, Capabilities), String>;

/// A [`ModelSource`] that is a function of the token, the version and the
/// resources directory.
#[derive(Clone, Copy)]
pub struct Resolver(pub fn(&str, FmiVersion, Option<&std::path::Path>) -> Resolved);

impl ModelSource for Resolver {
    fn resolve(
        self,
        token: &str,
        version: FmiVersion,
        resources: Option<&std::path::Path>,
    ) -> Result<(&'static ModelSpec, Capabilities), String> {
        (self.0)(token, version, resources)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_code_round_trips() {
        use FmiVersion::{Fmi2, Fmi3};
        let c = Capabilities {
            get_set_state: true,
            serialize_state: false,
            max_output_derivative_order: 3,
            interpolate_inputs: true,
            intermediate_update: false,
            variable_step: false,
            directional_derivatives: true,
            quirk: None,
        };
        assert_eq!(c.code(Fmi2), "s1z0d3i1v0j1");
        assert_eq!(Capabilities::parse(&c.code(Fmi2), Fmi2), Some(c));
        assert_eq!(Capabilities::parse("s1z0d3i1v0", Fmi2), None);
        assert_eq!(Capabilities::parse("s2z0d3i1v0j1", Fmi2), None);
        assert_eq!(Capabilities::parse("s1z0d3i1v0j1x", Fmi2), None);
        // FMI 3 codes end in the intermediate-update flag; FMI 2 codes never carry it.
        let c3 = Capabilities {
            interpolate_inputs: false,
            intermediate_update: true,
            ..c
        };
        assert_eq!(c3.code(Fmi3), "s1z0d3i0v0j1u1");
        assert_eq!(Capabilities::parse("s1z0d3i0v0j1u1", Fmi3), Some(c3));
        let c3_off = Capabilities {
            intermediate_update: false,
            ..c3
        };
        assert_eq!(c3_off.code(Fmi3), "s1z0d3i0v0j1u0");
        assert_eq!(Capabilities::parse("s1z0d3i0v0j1u0", Fmi3), Some(c3_off));
        assert_eq!(Capabilities::parse("s1z0d3i0v0j1", Fmi3), None, "u missing");
        assert_eq!(
            Capabilities::parse("s1z0d3i0v0j1u1", Fmi2),
            None,
            "u in FMI 2"
        );
        assert_eq!(Capabilities::parse("s1z0d3i0v0j1u2", Fmi3), None);
    }

    #[test]
    fn variants_have_their_version_and_suffix() {
        assert_eq!(
            Variant::NoIntermediateUpdate.suffix(),
            "fmi3-no-intermediate-update"
        );
        assert_eq!(
            Variant::from_suffix("fmi3-no-intermediate-update"),
            Some(Variant::NoIntermediateUpdate)
        );
        assert_eq!(
            Variant::NoIntermediateUpdate.version(),
            Some(FmiVersion::Fmi3)
        );
        for v in Variant::RESTRICTED {
            assert_eq!(v.version(), Some(FmiVersion::Fmi2), "{v:?}");
        }
        assert_eq!(Variant::Full.version(), None);
    }

    #[test]
    fn quirk_variants_name_their_quirk_and_version() {
        use FmiVersion::{Fmi2, Fmi3};
        let expected = [
            (Variant::ResetsInSetup, "resets-in-setup", Fmi2),
            (
                Variant::FreezesWithoutNoSetPrior,
                "freezes-without-no-set-prior",
                Fmi2,
            ),
            (
                Variant::Fmi3FreezesWithoutNoSetPrior,
                "fmi3-freezes-without-no-set-prior",
                Fmi3,
            ),
            (Variant::CrashesAtExit, "crashes-at-exit", Fmi2),
        ];
        for (v, suffix, version) in expected {
            assert!(Variant::QUIRKS.contains(&v));
            assert_eq!(v.suffix(), suffix);
            assert_eq!(Variant::from_suffix(suffix), Some(v));
            assert_eq!(v.version(), Some(version));
            let q = v.quirk().unwrap_or(Quirk::CrashesAtExit);
            assert!(suffix.ends_with(q.tag()), "{suffix}");
            assert!(q.supports(version));
        }
        for v in Variant::RESTRICTED
            .into_iter()
            .chain(Variant::FMI3_RESTRICTED)
            .chain([Variant::Full])
        {
            assert_eq!(v.quirk(), None, "{v:?}");
        }
        assert!(!Quirk::ResetsInSetup.supports(Fmi3));
        assert!(!Quirk::CrashesAtExit.supports(Fmi3));
        assert!(Quirk::FreezesWithoutNoSetPrior.supports(Fmi3));
    }

    #[test]
    fn quirk_tokens_carry_the_tag_as_a_sixth_field() {
        let base = "cosim:Gain:fmi2:s1z1d3i1v1j1:00000000000000ff";
        assert_eq!(parse_token(base).map(|t| t.caps.quirk), Some(None));
        for q in Quirk::ALL {
            let t = parse_token(&format!("{base}:{}", q.tag())).map(|t| t.caps.quirk);
            assert_eq!(t, Some(Some(q)));
        }
        assert!(parse_token(&format!("{base}:no-such-quirk")).is_none());
        assert!(parse_token(&format!("{base}:crashes-at-exit:x")).is_none());
        assert!(parse_token(&format!("{base}:")).is_none());
    }

    #[test]
    fn token_parses() {
        let t = parse_token("cosim:Gain:fmi2:s1z1d3i1v1j1:00000000000000ff").expect("token");
        assert_eq!(t.model, "Gain");
        assert_eq!(t.version, FmiVersion::Fmi2);
        assert_eq!(t.hash, 255);
        let t = parse_token("cosim:Gain:fmi3:s1z1d3i0v1j1u1:00000000000000ff").expect("token");
        assert_eq!(t.version, FmiVersion::Fmi3);
        assert!(t.caps.intermediate_update && !t.caps.interpolate_inputs);
        assert!(parse_token("cosim:Gain:fmi3:s1z1d3i0v1j1:00000000000000ff").is_none());
        assert!(parse_token("{8c4e810f-3df3-4a00-8276-176fa3c9f000}").is_none());
        assert!(parse_token("cosim:Gain:fmi4:s1z1d3i1v1j1:00000000000000ff").is_none());
    }
}
