//! The FMI 3 only variable types (Float32, Int8, UInt8, Int16, UInt16,
//! UInt32, Int64, UInt64): `modelDescription.xml`, the spec checks, the
//! FMI-3-only packaging, and access through the exported C functions
//! (values, type and range errors, output and directional derivatives, FMU
//! state) of a small test model.

use std::ffi::{c_int, c_void};

use super::tests::{
    callbacks, fmi2Instantiate, fmi3DeserializeFMUState, fmi3DoStep, fmi3EnterInitializationMode,
    fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance, fmi3GetDirectionalDerivative,
    fmi3GetFMUState, fmi3GetFloat32, fmi3GetFloat64, fmi3GetInt8, fmi3GetInt16, fmi3GetInt32,
    fmi3GetInt64, fmi3GetOutputDerivatives, fmi3GetUInt8, fmi3GetUInt16, fmi3GetUInt32,
    fmi3GetUInt64, fmi3SerializeFMUState, fmi3SerializedFMUStateSize, fmi3SetFMUState,
    fmi3SetFloat32, fmi3SetInt8, fmi3SetInt16, fmi3SetInt64, fmi3SetUInt8, fmi3SetUInt16,
    fmi3SetUInt32, fmi3SetUInt64, fmi3Terminate, instantiate3, logged3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion, Variant, resolve, token};
use crate::model::{
    DependencyKind, LogLevel, Model, ModelSpec, StepError, Values, VarType, Variability, Variable,
    Vr,
};
use crate::package::{PackageRequest, package};
use crate::{Inputs, units, xml};

pub const U_F32: Vr = 1;
pub const U_I8: Vr = 2;
pub const U_U8: Vr = 3;
pub const U_I16: Vr = 4;
pub const U_U16: Vr = 5;
pub const U_U32: Vr = 6;
pub const U_I64: Vr = 7;
pub const U_U64: Vr = 8;
pub const Y_F32: Vr = 9;
pub const Y_I8: Vr = 10;
pub const Y_U8: Vr = 11;
pub const Y_I16: Vr = 12;
pub const Y_U16: Vr = 13;
pub const Y_U32: Vr = 14;
pub const Y_I64: Vr = 15;
pub const Y_U64: Vr = 16;
/// Float32 continuous state x' = gain u_f32.
pub const X: Vr = 17;
/// Float32 parameter.
pub const GAIN: Vr = 18;
/// Int16 parameter with min / max (only declared).
pub const P_I16: Vr = 19;
/// Boolean parameter: the step writes 256 into y_u8 (a model error).
pub const BROKEN: Vr = 20;

/// 2^63 and 2^64 as f64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 18_446_744_073_709_551_616.0;
/// The largest UInt64 an f64 holds, 2^64 - 2048.
const U64_TOP: u64 = 18_446_744_073_709_549_568;

/// (type, input, output) of each FMI 3 only type.
const PAIRS: [(VarType, Vr, Vr); 8] = [
    (VarType::Float32, U_F32, Y_F32),
    (VarType::Int8, U_I8, Y_I8),
    (VarType::UInt8, U_U8, Y_U8),
    (VarType::Int16, U_I16, Y_I16),
    (VarType::UInt16, U_U16, Y_U16),
    (VarType::UInt32, U_U32, Y_U32),
    (VarType::Int64, U_I64, Y_I64),
    (VarType::UInt64, U_U64, Y_U64),
];

/// y_* = u_* sampled at the end of each step (and at initialization);
/// x' = gain u_f32, rounded to f32 after each step.
struct KitTyped {
    gain: f64,
    broken: bool,
}

impl Model for KitTyped {
    fn init(&mut self, v: &mut Values) {
        for (_, u, y) in PAIRS {
            v[y] = v[u];
        }
        v[X] = 0.0;
    }
    fn do_step(
        &mut self,
        _t: f64,
        h: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        v[X] = f64::from((v[X] + self.gain * u.value(U_F32) * h) as f32);
        for (_, inp, y) in PAIRS {
            v[y] = u.value(inp);
        }
        if self.broken {
            v[Y_U8] = 256.0;
        }
        Ok(())
    }
    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}
    fn output_derivative(
        &self,
        vr: Vr,
        order: u32,
        _t: f64,
        _v: &Values,
        u: &Inputs,
    ) -> Option<f64> {
        (vr == X && order == 1).then(|| self.gain * u.value(U_F32))
    }
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(KitTyped {
        gain: v.finite("gain", GAIN)?,
        broken: v.bool(BROKEN),
    }))
}

/// The test model (FMI 3 only).
pub fn spec() -> ModelSpec {
    let starts = [
        0.5,
        -3.0,
        200.0,
        -300.0,
        60000.0,
        4_000_000_000.0,
        -TWO_63,
        U64_TOP as f64,
    ];
    let names = [
        ("u_f32", "y_f32"),
        ("u_i8", "y_i8"),
        ("u_u8", "y_u8"),
        ("u_i16", "y_i16"),
        ("u_u16", "y_u16"),
        ("u_u32", "y_u32"),
        ("u_i64", "y_i64"),
        ("u_u64", "y_u64"),
    ];
    let mut s = ModelSpec::new("KitTyped", "FMI 3 types test model", build);
    for (((ty, u, _), start), (un, _)) in PAIRS.into_iter().zip(starts).zip(names) {
        let mut v = Variable::input(u, un, start, "").typed(ty);
        if ty == VarType::Float32 {
            v = v.unit(units::N);
        }
        s = s.var(v);
    }
    for ((ty, _, y), (_, yn)) in PAIRS.into_iter().zip(names) {
        s = s.var(Variable::output(y, yn, "").typed(ty).discrete());
    }
    s.var(
        Variable::output(X, "x", "x' = gain u_f32")
            .typed(VarType::Float32)
            .unit(units::M),
    )
    .var(
        Variable::parameter(GAIN, "gain", f64::from(0.1f32), "")
            .typed(VarType::Float32)
            .min(0.0)
            .max(10.0),
    )
    .var(
        Variable::parameter(P_I16, "p_i16", -7.0, "")
            .typed(VarType::Int16)
            .min(-100.0)
            .max(100.0),
    )
    .var(Variable::bool_parameter(BROKEN, "broken", false, ""))
    .output_derivatives(1)
    .interpolate_inputs(false)
}

fn typed_spec() -> &'static ModelSpec {
    &registry()[3]
}

fn instantiate_typed() -> *mut c_void {
    let s = typed_spec();
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    let i = instantiate3(c"typed", &tok);
    assert!(!i.is_null());
    i
}

type Get3<T> = unsafe extern "C" fn(*mut c_void, *const u32, usize, *mut T, usize) -> c_int;
type Set3<T> = unsafe extern "C" fn(*mut c_void, *const u32, usize, *const T, usize) -> c_int;

/// `f` (an FMI 3 getter of `T`) for `vrs`: the status and the values
/// (`T::default()` where nothing was written).
fn get<T: Copy + Default>(f: Get3<T>, i: *mut c_void, vrs: &[Vr]) -> (c_int, Vec<T>) {
    let mut out = vec![T::default(); vrs.len()];
    // SAFETY: arrays of the given lengths.
    let st = unsafe { f(i, vrs.as_ptr(), vrs.len(), out.as_mut_ptr(), out.len()) };
    (st, out)
}

/// `f` (an FMI 3 setter of `T`) for `vrs` and `vals` (of one length).
fn set<T: Copy>(f: Set3<T>, i: *mut c_void, vrs: &[Vr], vals: &[T]) -> c_int {
    // SAFETY: arrays of the given lengths.
    unsafe { f(i, vrs.as_ptr(), vrs.len(), vals.as_ptr(), vals.len()) }
}

fn step(i: *mut c_void, t: f64, h: f64) -> c_int {
    let (mut e, mut term, mut early, mut last) = (false, false, false, 0.0);
    // SAFETY: valid out-pointers.
    unsafe { fmi3DoStep(i, t, h, false, &mut e, &mut term, &mut early, &mut last) }
}

/// Every input and output, each through the getter of its type.
#[derive(Debug, Clone, PartialEq)]
struct All {
    f32s: Vec<f32>,
    i8s: Vec<i8>,
    u8s: Vec<u8>,
    i16s: Vec<i16>,
    u16s: Vec<u16>,
    u32s: Vec<u32>,
    i64s: Vec<i64>,
    u64s: Vec<u64>,
}

fn read_all(i: *mut c_void) -> All {
    fn ok<T>((st, v): (c_int, Vec<T>)) -> Vec<T> {
        assert_eq!(st, 0);
        v
    }
    All {
        f32s: ok(get(fmi3GetFloat32, i, &[U_F32, Y_F32, X, GAIN])),
        i8s: ok(get(fmi3GetInt8, i, &[U_I8, Y_I8])),
        u8s: ok(get(fmi3GetUInt8, i, &[U_U8, Y_U8])),
        i16s: ok(get(fmi3GetInt16, i, &[U_I16, Y_I16, P_I16])),
        u16s: ok(get(fmi3GetUInt16, i, &[U_U16, Y_U16])),
        u32s: ok(get(fmi3GetUInt32, i, &[U_U32, Y_U32])),
        i64s: ok(get(fmi3GetInt64, i, &[U_I64, Y_I64])),
        u64s: ok(get(fmi3GetUInt64, i, &[U_U64, Y_U64])),
    }
}

/// Sets every input through the setter of its type.
fn write_inputs(i: *mut c_void, f: f32, n: [i64; 6], u: u64) {
    assert_eq!(set(fmi3SetFloat32, i, &[U_F32], &[f]), 0);
    assert_eq!(set(fmi3SetInt8, i, &[U_I8], &[n[0] as i8]), 0);
    assert_eq!(set(fmi3SetUInt8, i, &[U_U8], &[n[1] as u8]), 0);
    assert_eq!(set(fmi3SetInt16, i, &[U_I16], &[n[2] as i16]), 0);
    assert_eq!(set(fmi3SetUInt16, i, &[U_U16], &[n[3] as u16]), 0);
    assert_eq!(set(fmi3SetUInt32, i, &[U_U32], &[n[4] as u32]), 0);
    assert_eq!(set(fmi3SetInt64, i, &[U_I64], &[n[5]]), 0);
    assert_eq!(set(fmi3SetUInt64, i, &[U_U64], &[u]), 0);
}

// ------------------------------------------------------------------- XML

#[test]
fn fmi3_model_description_declares_every_new_type() {
    let s = typed_spec();
    let x = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitTyped",
    );
    let lines: Vec<&str> = x.lines().map(str::trim).collect();
    for l in [
        r#"<Float32 name="u_f32" valueReference="1" causality="input" variability="continuous" quantity="Force" unit="N" start="0.5"/>"#,
        r#"<Int8 name="u_i8" valueReference="2" causality="input" variability="discrete" start="-3"/>"#,
        r#"<UInt8 name="u_u8" valueReference="3" causality="input" variability="discrete" start="200"/>"#,
        r#"<Int16 name="u_i16" valueReference="4" causality="input" variability="discrete" start="-300"/>"#,
        r#"<UInt16 name="u_u16" valueReference="5" causality="input" variability="discrete" start="60000"/>"#,
        r#"<UInt32 name="u_u32" valueReference="6" causality="input" variability="discrete" start="4000000000"/>"#,
        r#"<Int64 name="u_i64" valueReference="7" causality="input" variability="discrete" start="-9223372036854775808"/>"#,
        r#"<UInt64 name="u_u64" valueReference="8" causality="input" variability="discrete" start="18446744073709549568"/>"#,
        r#"<Float32 name="y_f32" valueReference="9" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<Int8 name="y_i8" valueReference="10" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<UInt8 name="y_u8" valueReference="11" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<Int16 name="y_i16" valueReference="12" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<UInt16 name="y_u16" valueReference="13" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<UInt32 name="y_u32" valueReference="14" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<Int64 name="y_i64" valueReference="15" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<UInt64 name="y_u64" valueReference="16" causality="output" variability="discrete" initial="calculated"/>"#,
        r#"<Float32 name="x" valueReference="17" description="x&apos; = gain u_f32" causality="output" variability="continuous" initial="calculated" quantity="Length" unit="m"/>"#,
        // The shortest f32 representation: 0.1, not 0.10000000149011612.
        r#"<Float32 name="gain" valueReference="18" causality="parameter" variability="fixed" initial="exact" min="0.0" max="10.0" start="0.1"/>"#,
        r#"<Int16 name="p_i16" valueReference="19" causality="parameter" variability="fixed" initial="exact" min="-100" max="100" start="-7"/>"#,
        r#"<Output valueReference="9" dependencies="" dependenciesKind=""/>"#,
        r#"<Output valueReference="16" dependencies="" dependenciesKind=""/>"#,
        r#"<Output valueReference="17" dependencies="" dependenciesKind=""/>"#,
        r#"<InitialUnknown valueReference="10"/>"#,
    ] {
        assert!(lines.contains(&l), "missing {l} in\n{x}");
    }
    // No Float32 input is an intermediate update input (Float64 only), and
    // the build provides no intermediate update (interpolate_inputs(false)).
    assert!(x.contains(r#"providesIntermediateUpdate="false""#));
    assert!(!x.contains(r#"intermediateUpdate="true""#));
    // Integer elements carry no unit.
    for l in lines
        .iter()
        .filter(|l| l.starts_with("<Int") || l.starts_with("<UInt"))
    {
        assert!(!l.contains("unit="), "{l}");
    }
}

#[test]
fn fmi3_only_types_make_a_model_fmi3_only() {
    let s = typed_spec();
    assert!(s.supports(FmiVersion::Fmi3));
    assert!(!s.supports(FmiVersion::Fmi2));
    assert_eq!(s.first_fmi3_only().map(|v| v.name), Some("u_f32"));
    for v in &registry()[..3] {
        assert!(v.supports(FmiVersion::Fmi2), "{}", v.name);
    }
    // No FMI 2 build: the capability check, packaging and instantiation refuse it.
    let caps2 = Capabilities::full(s, FmiVersion::Fmi2);
    assert_eq!(
        caps2.check(s, FmiVersion::Fmi2),
        Err("KitTyped has no fmi2 build: u_f32 is of the FMI 3 only type Float32".to_string())
    );
    for v in Variant::RESTRICTED {
        let c = Capabilities::variant(s, FmiVersion::Fmi2, v);
        assert!(c.check(s, FmiVersion::Fmi2).is_err(), "{v:?}");
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lib = dir.path().join("lib.so");
    std::fs::write(&lib, b"not a library").unwrap_or_else(|e| panic!("{e}"));
    let out2 = dir.path().join("fmi2.fmu");
    let e = package(
        &PackageRequest::variant(s, FmiVersion::Fmi2, Variant::Full),
        &lib,
        &out2,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.contains("has no fmi2 build"), "{e}");
    assert!(!out2.exists());
    let out3 = dir.path().join("fmi3.fmu");
    assert!(
        package(
            &PackageRequest::variant(s, FmiVersion::Fmi3, Variant::Full),
            &lib,
            &out3
        )
        .is_ok()
    );
    assert!(out3.exists());
    let tok2 = token(s, FmiVersion::Fmi2, &caps2);
    let e = resolve(registry(), &tok2, FmiVersion::Fmi2)
        .err()
        .unwrap_or_default();
    assert!(e.contains("has no fmi2 build"), "{e}");
    let cb = callbacks();
    let tok2c = token_c(s, FmiVersion::Fmi2, &caps2);
    // SAFETY: valid strings and callbacks.
    let c = unsafe {
        fmi2Instantiate(
            c"t2".as_ptr(),
            1,
            tok2c.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        )
    };
    assert!(c.is_null(), "an FMI 2 instance of an FMI 3 only model");
}

#[test]
fn spec_check_enforces_the_new_types_ranges_and_variabilities() {
    let base = || ModelSpec::new("Check", "check", build);
    let err = |s: ModelSpec| match s.check() {
        Ok(()) => String::new(),
        Err(e) => e,
    };
    assert_eq!(err(typed_spec().clone()), "");
    // typed(): integers become discrete, Float32 keeps continuous.
    let i8_in = Variable::input(1, "i", 1.0, "").typed(VarType::Int8);
    assert_eq!(i8_in.variability, Variability::Discrete);
    let f32_in = Variable::input(1, "f", 1.0, "").typed(VarType::Float32);
    assert_eq!(f32_in.variability, Variability::Continuous);
    // Starts the type cannot hold.
    let start = |ty: VarType, x: f64| err(base().var(Variable::input(1, "v", x, "").typed(ty)));
    assert!(
        start(VarType::Int8, 128.0)
            .contains("integer v has start 128 outside the range of Int8 (-128 to 127)")
    );
    assert!(start(VarType::Int8, -129.0).contains("outside the range of Int8"));
    assert!(start(VarType::UInt8, -1.0).contains("outside the range of UInt8 (0 to 255)"));
    assert!(start(VarType::UInt16, 65536.0).contains("outside the range of UInt16"));
    assert!(start(VarType::Int16, 2.5).contains("integer v has non-integer start 2.5"));
    assert!(start(VarType::UInt32, 4_294_967_296.0).contains("outside the range of UInt32"));
    assert!(start(VarType::Int64, TWO_63).contains("outside the range of Int64"));
    assert!(start(VarType::UInt64, TWO_64).contains("outside the range of UInt64"));
    assert_eq!(start(VarType::Int64, -TWO_63), "");
    assert_eq!(start(VarType::UInt8, 255.0), "");
    assert!(
        start(VarType::Float32, 0.1).contains("Float32 v has start 0.1, which is no f32 value")
    );
    assert_eq!(start(VarType::Float32, f64::from(0.1f32)), "");
    // min / max must be values of the type too.
    assert!(
        err(base().var(
            Variable::input(1, "v", 0.0, "")
                .typed(VarType::UInt8)
                .max(300.0)
        ))
        .contains("UInt8 v has max 300, which the type cannot hold")
    );
    // Integers are never continuous and have no unit; Float32 may have both.
    let mut cont = Variable::input(1, "v", 0.0, "").typed(VarType::Int16);
    cont.variability = Variability::Continuous;
    assert!(err(base().var(cont)).contains("Int16 v cannot be continuous"));
    assert!(
        err(base().var(
            Variable::input(1, "v", 0.0, "")
                .typed(VarType::UInt32)
                .unit(units::N)
        ))
        .contains("cannot have a unit")
    );
    assert_eq!(
        err(base().var(
            Variable::input(1, "v", 0.0, "")
                .typed(VarType::Float32)
                .unit(units::N)
        )),
        ""
    );
    // Dependency kinds other than "dependent": between float types only.
    let f32_fixed = base()
        .var(Variable::input(1, "u", 0.0, "").typed(VarType::Float32))
        .var(Variable::output(2, "y", "").depends_on(&[(1, DependencyKind::Fixed)]));
    assert_eq!(err(f32_fixed), "");
    let i8_fixed = base()
        .var(Variable::input(1, "u", 0.0, "").typed(VarType::Int8))
        .var(Variable::output(2, "y", "").depends_on(&[(1, DependencyKind::Fixed)]));
    assert!(err(i8_fixed).contains("only \"dependent\" is allowed"));
    // The type is part of the variable hash (and so of the token).
    let hashes: Vec<u64> = VarType::ALL
        .iter()
        .filter(|t| !matches!(**t, VarType::Boolean | VarType::String))
        .map(|&t| {
            base()
                .var(Variable::input(1, "v", 0.0, "").typed(t))
                .variables_hash()
        })
        .collect();
    for (a, ha) in hashes.iter().enumerate() {
        for hb in &hashes[a + 1..] {
            assert_ne!(ha, hb);
        }
    }
}

#[test]
fn bounds_and_holds_of_every_type() {
    use VarType::*;
    assert_eq!(Int8.bounds(), Some((-128.0, 127.0)));
    assert_eq!(UInt8.bounds(), Some((0.0, 255.0)));
    assert_eq!(Int16.bounds(), Some((-32768.0, 32767.0)));
    assert_eq!(UInt16.bounds(), Some((0.0, 65535.0)));
    assert_eq!(Integer.bounds(), Some((-2_147_483_648.0, 2_147_483_647.0)));
    assert_eq!(UInt32.bounds(), Some((0.0, 4_294_967_295.0)));
    assert_eq!(Int64.bounds(), Some((-TWO_63, TWO_63 - 1024.0)));
    assert_eq!(UInt64.bounds(), Some((0.0, U64_TOP as f64)));
    assert_eq!(Float32.bounds(), None);
    assert!(Float32.holds(0.5) && !Float32.holds(0.1) && Float32.holds(f64::INFINITY));
    assert!(Float32.holds(f64::NAN) && !Int8.holds(f64::NAN) && !UInt64.holds(f64::INFINITY));
    assert!(UInt64.holds(U64_TOP as f64) && !UInt64.holds(TWO_64));
    assert!(Int64.holds(-TWO_63) && !Int64.holds(TWO_63));
    for t in VarType::ALL {
        assert_eq!(
            t.in_fmi2(),
            matches!(t, Real | Integer | Boolean | String),
            "{t:?}"
        );
        assert_eq!(t.is_float(), matches!(t, Real | Float32), "{t:?}");
        assert_eq!(
            t.fmi3_name() == t.fmi2_name(),
            !t.in_fmi2() || t == Boolean || t == String,
            "{t:?}"
        );
    }
}

// ------------------------------------------------------------ C exports

#[test]
fn fmi3_get_and_set_every_new_type_through_the_c_exports() {
    let i = instantiate_typed();
    // SAFETY: valid pointers throughout.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
    }
    // Start values, outputs following the inputs during initialization.
    let start = read_all(i);
    assert_eq!(start.f32s, vec![0.5, 0.5, 0.0, 0.1f32]);
    assert_eq!(start.i8s, vec![-3, -3]);
    assert_eq!(start.u8s, vec![200, 200]);
    assert_eq!(start.i16s, vec![-300, -300, -7]);
    assert_eq!(start.u16s, vec![60000, 60000]);
    assert_eq!(start.u32s, vec![4_000_000_000, 4_000_000_000]);
    assert_eq!(start.i64s, vec![i64::MIN, i64::MIN]);
    assert_eq!(start.u64s, vec![U64_TOP, U64_TOP]);
    // Parameters of the new types are set during initialization.
    assert_eq!(set(fmi3SetFloat32, i, &[GAIN], &[2.0]), 0);
    assert_eq!(set(fmi3SetInt16, i, &[P_I16], &[i16::MIN]), 0);
    // SAFETY: valid instance.
    unsafe {
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    assert_eq!(set(fmi3SetInt16, i, &[P_I16], &[1]), 3);
    assert!(logged3(
        "fmi3SetInt16: Illegal call sequence: parameter p_i16 (vr 19, variability fixed, initial exact) \
         cannot be set in state Step Mode: only inputs and tunable parameters can be set there"
    ));
    // Extremes of every type round-trip exactly.
    write_inputs(
        i,
        f32::MAX,
        [
            i64::from(i8::MIN),
            i64::from(u8::MAX),
            i64::from(i16::MAX),
            i64::from(u16::MAX),
            i64::from(u32::MAX),
            i64::MIN,
        ],
        U64_TOP,
    );
    let ext = read_all(i);
    assert_eq!(ext.f32s[0], f32::MAX);
    assert_eq!(
        (
            ext.i8s[0],
            ext.u8s[0],
            ext.i16s[0],
            ext.u16s[0],
            ext.u32s[0],
            ext.i64s[0],
            ext.u64s[0]
        ),
        (
            i8::MIN,
            u8::MAX,
            i16::MAX,
            u16::MAX,
            u32::MAX,
            i64::MIN,
            U64_TOP
        )
    );
    // Outputs are sampled at the end of the step: unchanged until then.
    assert_eq!(ext.i8s[1], -3);
    assert_eq!(ext.u64s[1], U64_TOP);
    // 64-bit values an f64 holds are accepted beyond 2^53 too; the others
    // are refused with the nearest ones named, and change nothing.
    let big = 1i64 << 60;
    assert_eq!(set(fmi3SetInt64, i, &[U_I64], &[big]), 0);
    assert_eq!(get(fmi3GetInt64, i, &[U_I64]), (0, vec![big]));
    let exact53 = (1i64 << 53) + 1;
    assert_eq!(set(fmi3SetInt64, i, &[U_I64], &[exact53]), 3);
    assert!(logged3(
        "fmi3SetInt64: value 9007199254740993 of u_i64 (vr 7) cannot be stored exactly"
    ));
    assert!(logged3(
        "(the nearest are 9007199254740992 and 9007199254740994)"
    ));
    assert_eq!(set(fmi3SetInt64, i, &[U_I64], &[i64::MAX]), 3);
    assert!(logged3(
        "value 9223372036854775807 of u_i64 (vr 7) cannot be stored exactly"
    ));
    assert_eq!(set(fmi3SetUInt64, i, &[U_U64], &[u64::MAX]), 3);
    assert!(logged3(
        "fmi3SetUInt64: value 18446744073709551615 of u_u64 (vr 8)"
    ));
    assert_eq!(set(fmi3SetUInt64, i, &[U_U64], &[(1u64 << 53) + 1]), 3);
    assert_eq!(
        get(fmi3GetInt64, i, &[U_I64]),
        (0, vec![big]),
        "refused sets change nothing"
    );
    assert_eq!(get(fmi3GetUInt64, i, &[U_U64]), (0, vec![U64_TOP]));
    // All-or-nothing: one bad value in a call, nothing written.
    assert_eq!(set(fmi3SetInt64, i, &[U_I64, U_I64], &[5, i64::MAX]), 3);
    assert_eq!(get(fmi3GetInt64, i, &[U_I64]), (0, vec![big]));
    // Wrong types, both ways, name the variable; outputs cannot be set.
    let mut f = [0.0f64];
    // SAFETY: one-element arrays.
    let st = unsafe { fmi3GetFloat64(i, [U_F32].as_ptr(), 1, f.as_mut_ptr(), 1) };
    assert_eq!(st, 3);
    assert!(logged3(
        "fmi3GetFloat64: variable u_f32 (vr 1) is of type Float32, not Float64"
    ));
    assert_eq!(get(fmi3GetFloat32, i, &[U_I8]).0, 3);
    assert!(logged3(
        "fmi3GetFloat32: variable u_i8 (vr 2) is of type Int8, not Float32"
    ));
    assert_eq!(get(fmi3GetInt8, i, &[U_U8]).0, 3);
    assert!(logged3(
        "fmi3GetInt8: variable u_u8 (vr 3) is of type UInt8, not Int8"
    ));
    assert_eq!(get(fmi3GetUInt8, i, &[U_I8]).0, 3);
    assert!(logged3("variable u_i8 (vr 2) is of type Int8, not UInt8"));
    assert_eq!(get(fmi3GetInt16, i, &[U_U16]).0, 3);
    assert!(logged3(
        "variable u_u16 (vr 5) is of type UInt16, not Int16"
    ));
    assert_eq!(get(fmi3GetUInt16, i, &[U_I16]).0, 3);
    assert!(logged3(
        "variable u_i16 (vr 4) is of type Int16, not UInt16"
    ));
    assert_eq!(get(fmi3GetUInt32, i, &[U_U64]).0, 3);
    assert!(logged3(
        "variable u_u64 (vr 8) is of type UInt64, not UInt32"
    ));
    assert_eq!(get(fmi3GetInt32, i, &[U_U32]).0, 3);
    assert!(logged3(
        "variable u_u32 (vr 6) is of type UInt32, not Int32"
    ));
    assert_eq!(get(fmi3GetInt64, i, &[U_U64]).0, 3);
    assert!(logged3(
        "variable u_u64 (vr 8) is of type UInt64, not Int64"
    ));
    assert_eq!(get(fmi3GetUInt64, i, &[U_I64]).0, 3);
    assert!(logged3(
        "fmi3GetUInt64: variable u_i64 (vr 7) is of type Int64, not UInt64"
    ));
    assert_eq!(set(fmi3SetFloat32, i, &[U_I16], &[1.0]), 3);
    assert_eq!(set(fmi3SetInt8, i, &[U_U8], &[1]), 3);
    assert!(logged3(
        "fmi3SetInt8: variable u_u8 (vr 3) is of type UInt8, not Int8"
    ));
    assert_eq!(set(fmi3SetUInt8, i, &[U_I8], &[1]), 3);
    assert_eq!(set(fmi3SetInt16, i, &[U_U16], &[1]), 3);
    assert_eq!(set(fmi3SetUInt16, i, &[U_I16], &[1]), 3);
    assert_eq!(set(fmi3SetUInt32, i, &[U_I64], &[1]), 3);
    assert_eq!(set(fmi3SetUInt64, i, &[U_I64], &[1]), 3);
    assert!(logged3(
        "fmi3SetUInt64: variable u_i64 (vr 7) is of type Int64, not UInt64"
    ));
    // The type check comes before the representability check.
    assert_eq!(set(fmi3SetInt64, i, &[U_U64], &[i64::MAX]), 3);
    assert!(logged3(
        "fmi3SetInt64: variable u_u64 (vr 8) is of type UInt64, not Int64"
    ));
    assert_eq!(set(fmi3SetUInt8, i, &[Y_U8], &[1]), 3);
    assert!(logged3(
        "fmi3SetUInt8: Illegal call sequence: output y_u8 (vr 11, variability discrete, initial calculated) cannot be set in state Step Mode"
    ));
    assert_eq!(set(fmi3SetUInt8, i, &[99], &[1]), 3);
    assert!(logged3("unknown value reference 99"));
    // nValues must equal nValueReferences; NULL arrays are refused.
    let mut two = [0u16; 2];
    // SAFETY: arrays of at least the lengths passed.
    unsafe {
        assert_eq!(
            fmi3GetUInt16(i, [U_U16].as_ptr(), 1, two.as_mut_ptr(), 2),
            3
        );
        assert_eq!(
            fmi3GetUInt16(i, [U_U16].as_ptr(), 1, std::ptr::null_mut(), 1),
            3
        );
        assert_eq!(
            fmi3SetUInt32(i, [U_U32].as_ptr(), 1, std::ptr::null(), 1),
            3
        );
    }
    // Several values of one type in one call, in the order asked.
    assert_eq!(set(fmi3SetInt8, i, &[U_I8], &[100]), 0);
    assert_eq!(
        get(fmi3GetInt8, i, &[Y_I8, U_I8, U_I8]),
        (0, vec![-3, 100, 100])
    );
    // A step: the outputs take the held inputs; x' = gain u_f32 (gain = 2).
    write_inputs(i, 1.25, [-5, 7, -9, 11, 13, -15], 17);
    assert_eq!(step(i, 0.0, 0.5), 0);
    let after = read_all(i);
    assert_eq!(after.f32s, vec![1.25, 1.25, 1.25, 2.0]);
    assert_eq!(after.i8s, vec![-5, -5]);
    assert_eq!(after.u8s, vec![7, 7]);
    assert_eq!(after.i16s, vec![-9, -9, i16::MIN]);
    assert_eq!(after.u16s, vec![11, 11]);
    assert_eq!(after.u32s, vec![13, 13]);
    assert_eq!(after.i64s, vec![-15, -15]);
    assert_eq!(after.u64s, vec![17, 17]);
    // SAFETY: valid instance.
    unsafe {
        assert_eq!(fmi3Terminate(i), 0);
        fmi3FreeInstance(i);
    }
}

#[test]
fn float32_values_are_rounded_to_f32_and_integers_checked_in_the_rust_api() {
    let s = typed_spec();
    let (mut inst, _) =
        crate::testing::instance(s, FmiVersion::Fmi3, Capabilities::full(s, FmiVersion::Fmi3));
    let ok = |r: crate::instance::R<()>| r.unwrap_or_else(|e| panic!("{e:?}"));
    ok(inst.enter_initialization());
    ok(inst.set(&[U_F32], VarType::Float32, &[0.1]));
    let mut x = f64::NAN;
    ok(inst.get(&[U_F32], VarType::Float32, &mut |_, v| x = v));
    assert_eq!(
        x,
        f64::from(0.1f32),
        "set rounds to f32, get reads the f32 value"
    );
    let msg = |r: crate::instance::R<()>| r.err().map(|e| e.message).unwrap_or_default();
    assert_eq!(
        msg(inst.set(&[U_F32], VarType::Float32, &[1e300])),
        "value 1e300 of u_f32 (vr 1) is outside the range of Float32"
    );
    ok(inst.set(&[U_F32], VarType::Float32, &[f64::INFINITY]));
    assert_eq!(
        msg(inst.set(&[U_I8], VarType::Int8, &[128.0])),
        "value 128 of u_i8 (vr 2) is not a whole number in the range of Int8 (-128 to 127)"
    );
    assert!(msg(inst.set(&[U_I8], VarType::Int8, &[1.5])).contains("is not a whole number"));
    assert!(msg(inst.set(&[U_U8], VarType::UInt8, &[-1.0])).contains("UInt8 (0 to 255)"));
    assert!(
        msg(inst.set(&[U_I16], VarType::Int16, &[40000.0])).contains("Int16 (-32768 to 32767)")
    );
    assert!(msg(inst.set(&[U_U16], VarType::UInt16, &[f64::NAN])).contains("UInt16 (0 to 65535)"));
    assert!(
        msg(inst.set(&[U_U32], VarType::UInt32, &[4_294_967_296.0]))
            .contains("UInt32 (0 to 4294967295)")
    );
    assert!(
        msg(inst.set(&[U_I64], VarType::Int64, &[TWO_63]))
            .contains("Int64 (-9223372036854775808 to 9223372036854774784)")
    );
    assert!(
        msg(inst.set(&[U_U64], VarType::UInt64, &[TWO_64]))
            .contains("UInt64 (0 to 18446744073709549568)")
    );
    // Nothing of a refused call is written.
    assert!(
        inst.set(&[U_I8, U_I8], VarType::Int8, &[1.0, 1000.0])
            .is_err()
    );
    let mut n = f64::NAN;
    ok(inst.get(&[U_I8], VarType::Int8, &mut |_, v| n = v));
    assert_eq!(n, -3.0);
    // The integer setters of the C layer go through `set_integers`.
    assert!(
        inst.set_integers(&[U_U64], VarType::UInt64, &[i128::from(u64::MAX)])
            .is_err()
    );
    ok(inst.set_integers(&[U_U64], VarType::UInt64, &[1 << 63]));
    ok(inst.get(&[U_U64], VarType::UInt64, &mut |_, v| n = v));
    assert_eq!(n, TWO_63);
}

#[test]
fn output_and_directional_derivatives_take_float32_and_refuse_integers() {
    let i = instantiate_typed();
    let der = |vr: Vr| {
        let mut d = [f64::NAN];
        // SAFETY: one-element arrays.
        let st = unsafe {
            fmi3GetOutputDerivatives(i, [vr].as_ptr(), 1, [1].as_ptr(), d.as_mut_ptr(), 1)
        };
        (st, d[0])
    };
    // SAFETY: valid pointers.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    assert_eq!(set(fmi3SetFloat32, i, &[U_F32], &[3.0]), 0);
    // x' = gain u_f32 = 0.1f32 * 3, as fmi3Float64 (not rounded to f32).
    assert_eq!(der(X), (0, f64::from(0.1f32) * 3.0));
    let (st, d) = der(Y_I8);
    assert_eq!(st, 3);
    assert!(d.is_nan(), "nothing written");
    assert!(logged3(
        "fmi3GetOutputDerivatives: output derivatives are defined for Float64 and Float32 variables only; y_i8 (vr 10) is Int8 (discrete)"
    ));
    assert_eq!(der(Y_U64).0, 3);
    assert!(logged3("y_u64 (vr 16) is UInt64 (discrete)"));
    // Directional derivatives: Float32 knowns and unknowns (no feed-through: 0).
    let dd = |unknown: Vr, known: Vr| {
        let mut s = [f64::NAN];
        // SAFETY: one-element arrays.
        let st = unsafe {
            fmi3GetDirectionalDerivative(
                i,
                [unknown].as_ptr(),
                1,
                [known].as_ptr(),
                1,
                [1.0].as_ptr(),
                1,
                s.as_mut_ptr(),
                1,
            )
        };
        (st, s[0])
    };
    assert_eq!(dd(X, U_F32), (0, 0.0));
    assert_eq!(dd(Y_I16, U_F32).0, 3);
    assert!(logged3(
        "directional derivatives are defined for Float64 and Float32 variables only; y_i16 (vr 12) is Int16 (discrete)"
    ));
    assert_eq!(dd(X, U_I8).0, 3);
    // SAFETY: valid instance.
    unsafe { fmi3FreeInstance(i) };
}

#[test]
fn fmu_state_and_serialization_cover_the_new_types() {
    let i = instantiate_typed();
    // SAFETY: valid pointers throughout.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    write_inputs(i, 0.75, [1, 2, 3, 4, 5, -(1 << 40)], 1 << 50);
    assert_eq!(step(i, 0.0, 1.0), 0);
    write_inputs(
        i,
        -2.5,
        [-128, 255, -32768, 65535, 4_294_967_295, i64::MIN],
        U64_TOP,
    );
    let saved = read_all(i);
    let mut s: *mut c_void = std::ptr::null_mut();
    let mut size = 0usize;
    let bytes = {
        // SAFETY: valid out-pointers; a buffer of the reported size.
        unsafe {
            assert_eq!(fmi3GetFMUState(i, &mut s), 0);
            assert_eq!(fmi3SerializedFMUStateSize(i, s, &mut size), 0);
            let mut b = vec![0u8; size];
            assert_eq!(fmi3SerializeFMUState(i, s, b.as_mut_ptr(), size), 0);
            b
        }
    };
    // Go on: the state changes in every value.
    assert_eq!(step(i, 1.0, 1.0), 0);
    write_inputs(i, 9.0, [9, 9, 9, 9, 9, 9], 9);
    let moved = read_all(i);
    assert_ne!(moved, saved);
    for v in [&moved.i8s, &saved.i8s] {
        assert_eq!(v.len(), 2);
    }
    // Restore: every value of every type is back; the same step follows.
    // SAFETY: a state of this instance.
    unsafe { assert_eq!(fmi3SetFMUState(i, s), 0) };
    assert_eq!(read_all(i), saved);
    assert_eq!(step(i, 1.0, 1.0), 0);
    let continued = read_all(i);
    assert_eq!(continued.i64s, vec![i64::MIN, i64::MIN]);
    assert_eq!(continued.u64s, vec![U64_TOP, U64_TOP]);
    assert_eq!(continued.f32s[..2], [-2.5, -2.5]);
    // Deserialized into another instance: the same values.
    let other = instantiate_typed();
    let mut s2: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid pointers; the serialized bytes of this model's build.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(other, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(other), 0);
        assert_eq!(
            fmi3DeserializeFMUState(other, bytes.as_ptr(), size, &mut s2),
            0
        );
        assert_eq!(fmi3SetFMUState(other, s2), 0);
    }
    assert_eq!(read_all(other), saved);
    assert_eq!(step(other, 1.0, 1.0), 0);
    assert_eq!(read_all(other), continued);
    // SAFETY: states and instances created above.
    unsafe {
        assert_eq!(fmi3FreeFMUState(i, &mut s), 0);
        assert_eq!(fmi3FreeFMUState(other, &mut s2), 0);
        fmi3FreeInstance(other);
        fmi3FreeInstance(i);
    }
}

#[test]
fn an_integer_output_the_type_cannot_hold_is_an_error_not_a_wrapped_value() {
    let i = instantiate_typed();
    let broken: [bool; 1] = [true];
    // SAFETY: valid pointers.
    unsafe {
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(
            super::tests::fmi3SetBoolean(i, [BROKEN].as_ptr(), 1, broken.as_ptr(), 1),
            0
        );
        assert_eq!(fmi3ExitInitializationMode(i), 0);
    }
    assert_eq!(step(i, 0.0, 1.0), 0);
    let (st, v) = get(fmi3GetUInt8, i, &[Y_U8]);
    assert_eq!((st, v), (3, vec![0]));
    assert!(logged3(
        "fmi3GetUInt8: variable y_u8 (vr 11) has the value 256, which UInt8 cannot represent (a model error)"
    ));
    // SAFETY: valid instance.
    unsafe { fmi3FreeInstance(i) };
}
