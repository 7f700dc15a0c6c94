//! `TypeMirror` (FMI 3 only): one input and one output of each FMI 3
//! variable type that FMI 2 does not have (Float32, Int8, UInt8, Int16,
//! UInt16, UInt32, Int64, UInt64), for testing an importer's coupling and
//! tracing of those types.
//!
//! One `doStep(t, h)` with the inputs held at the values set before the
//! step; at the end of the step, from those inputs:
//!
//! - `y_<type> = u_<type> + 1`. Integers never wrap: the result saturates
//!   at the type's largest value (`y_u8 = 255` for `u_u8 = 255`, `y_i8 =
//!   127` for `u_i8 = 127`). For `Int64` / `UInt64` the kit holds values as
//!   `f64` (see `fmu_kit::VarType`): the result is exact while `|u + 1| <=
//!   2^53`; above, `u + 1` rounds to the nearest `f64` (which is `u`
//!   itself), and the largest values are 2^63 - 1024 and 2^64 - 2048
//!   (`VarType::bounds`), where the result saturates too. `y_f32 =
//!   f32(u_f32 + 1)` (float arithmetic never wraps: rounded to `f32`,
//!   infinities and NaN stay as they are).
//! - `sum` (Float64) = the sum of all eight inputs as `f64`.
//! - `x_f32` (Float32 continuous state, output): `x' = u_f32`, integrated
//!   exactly over the step with the input held, then rounded to `f32`:
//!   `x(t + h) = f32(x(t) + u_f32 h)`; `x(0) = 0`. Its first output
//!   derivative is `u_f32` (the current input value); those of the discrete
//!   `y_f32` and `sum` are 0. The integer outputs have none (FMI 3 defines
//!   output derivatives for float variables only).
//!
//! No output has feed-through (`dependencies=""`): an input set at a
//! communication point shows in the outputs at the end of the next step. At
//! initialization the outputs follow from the inputs then (`y = u + 1`,
//! `sum`; `x_f32 = 0`). So a TypeMirror whose `y_*` feed its own (or
//! another TypeMirror's) `u_*` counts up by one per step per type.

use fmu_kit::{Inputs, LogLevel, Model, ModelSpec, StepError, Values, VarType, Variable, Vr};

/// Input Float32 (continuous), start 0.5.
pub const U_F32: Vr = 1;
/// Input Int8, start -3.
pub const U_I8: Vr = 2;
/// Input UInt8, start 200.
pub const U_U8: Vr = 3;
/// Input Int16, start -300.
pub const U_I16: Vr = 4;
/// Input UInt16, start 60000.
pub const U_U16: Vr = 5;
/// Input UInt32, start 4000000000.
pub const U_U32: Vr = 6;
/// Input Int64, start -5000000000.
pub const U_I64: Vr = 7;
/// Input UInt64, start 9000000000000.
pub const U_U64: Vr = 8;
/// Output Float32 (discrete): f32(u_f32 + 1).
pub const Y_F32: Vr = 9;
/// Output Int8: u_i8 + 1, saturated.
pub const Y_I8: Vr = 10;
/// Output UInt8: u_u8 + 1, saturated.
pub const Y_U8: Vr = 11;
/// Output Int16: u_i16 + 1, saturated.
pub const Y_I16: Vr = 12;
/// Output UInt16: u_u16 + 1, saturated.
pub const Y_U16: Vr = 13;
/// Output UInt32: u_u32 + 1, saturated.
pub const Y_U32: Vr = 14;
/// Output Int64: u_i64 + 1, saturated.
pub const Y_I64: Vr = 15;
/// Output UInt64: u_u64 + 1, saturated.
pub const Y_U64: Vr = 16;
/// Output Float64 (discrete): the sum of the inputs.
pub const SUM: Vr = 17;
/// Output Float32 (continuous state): x' = u_f32.
pub const X_F32: Vr = 18;

/// One mirrored type: its input and output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// The type of both.
    pub ty: VarType,
    /// The input's value reference.
    pub u: Vr,
    /// The input's name, `u_<type>`.
    pub u_name: &'static str,
    /// The output's value reference.
    pub y: Vr,
    /// The output's name, `y_<type>`.
    pub y_name: &'static str,
    /// The input's start value.
    pub start: f64,
}

const fn pair(
    ty: VarType,
    u: Vr,
    u_name: &'static str,
    y: Vr,
    y_name: &'static str,
    start: f64,
) -> Pair {
    Pair {
        ty,
        u,
        u_name,
        y,
        y_name,
        start,
    }
}

/// The mirrored types, in value-reference order.
pub const PAIRS: [Pair; 8] = [
    pair(VarType::Float32, U_F32, "u_f32", Y_F32, "y_f32", 0.5),
    pair(VarType::Int8, U_I8, "u_i8", Y_I8, "y_i8", -3.0),
    pair(VarType::UInt8, U_U8, "u_u8", Y_U8, "y_u8", 200.0),
    pair(VarType::Int16, U_I16, "u_i16", Y_I16, "y_i16", -300.0),
    pair(VarType::UInt16, U_U16, "u_u16", Y_U16, "y_u16", 60000.0),
    pair(
        VarType::UInt32,
        U_U32,
        "u_u32",
        Y_U32,
        "y_u32",
        4_000_000_000.0,
    ),
    pair(
        VarType::Int64,
        U_I64,
        "u_i64",
        Y_I64,
        "y_i64",
        -5_000_000_000.0,
    ),
    pair(
        VarType::UInt64,
        U_U64,
        "u_u64",
        Y_U64,
        "y_u64",
        9_000_000_000_000.0,
    ),
];

/// `u + 1` as a value of `ty`: rounded to `f32` for Float32, saturated at
/// the type's largest value for the integer types (see the module doc).
pub fn successor(ty: VarType, u: f64) -> f64 {
    match ty.bounds() {
        Some((_, max)) => (u + 1.0).min(max),
        None if ty == VarType::Float32 => f64::from((u + 1.0) as f32),
        None => u + 1.0,
    }
}

/// The spec.
pub fn spec() -> ModelSpec {
    let descr_in = [
        "Float32 input (held over the step; x_f32' = u_f32)",
        "Int8 input (held over the step)",
        "UInt8 input (held over the step)",
        "Int16 input (held over the step)",
        "UInt16 input (held over the step)",
        "UInt32 input (held over the step)",
        "Int64 input (held over the step)",
        "UInt64 input (held over the step)",
    ];
    let descr_out = [
        "u_f32 + 1 rounded to Float32, at the end of each step",
        "u_i8 + 1 at the end of each step, saturated at 127 (no wrapping)",
        "u_u8 + 1 at the end of each step, saturated at 255 (no wrapping)",
        "u_i16 + 1 at the end of each step, saturated at 32767 (no wrapping)",
        "u_u16 + 1 at the end of each step, saturated at 65535 (no wrapping)",
        "u_u32 + 1 at the end of each step, saturated at 4294967295 (no wrapping)",
        "u_i64 + 1 at the end of each step (exact up to 2^53), saturated at 2^63 - 1024 (no wrapping)",
        "u_u64 + 1 at the end of each step (exact up to 2^53), saturated at 2^64 - 2048 (no wrapping)",
    ];
    let mut s = ModelSpec::new(
        "TypeMirror",
        "FMI 3 only: y_T = u_T + 1 for T = f32, i8, u8, i16, u16, u32, i64, u64 (Float32, Int8, UInt8, Int16, UInt16, UInt32, Int64, UInt64; integers saturate at the type's max, no wrapping), sum = sum of the inputs (Float64), x_f32' = u_f32; outputs updated at the end of each step (no feed-through)",
        build,
    );
    for (p, descr) in PAIRS.iter().zip(descr_in) {
        s = s.var(Variable::input(p.u, p.u_name, p.start, descr).typed(p.ty));
    }
    for (p, descr) in PAIRS.iter().zip(descr_out) {
        s = s.var(
            Variable::output(p.y, p.y_name, descr)
                .typed(p.ty)
                .discrete()
                .depends_on(&[])
                .initial_depends_on(&[p.u]),
        );
    }
    let inputs: Vec<Vr> = PAIRS.iter().map(|p| p.u).collect();
    s.var(
        Variable::output(
            SUM,
            "sum",
            "Sum of the eight inputs as Float64, at the end of each step",
        )
        .discrete()
        .depends_on(&[])
        .initial_depends_on(&inputs),
    )
    .var(
        Variable::output(
            X_F32,
            "x_f32",
            "Float32 state x' = u_f32 (exact for u_f32 held over the step, rounded to Float32), x(0) = 0",
        )
        .typed(VarType::Float32)
        .depends_on(&[])
        .initial_depends_on(&[]),
    )
    .experiment(0.0, 10.0, 1.0)
    .output_derivatives(1)
    .interpolate_inputs(false)
}

struct TypeMirror;

fn build(_v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(TypeMirror))
}

impl TypeMirror {
    /// The outputs `y_*` and `sum` from the input values `u`.
    fn mirror(v: &mut Values, u: impl Fn(Vr) -> f64) {
        let mut sum = 0.0;
        for p in PAIRS {
            let x = u(p.u);
            v[p.y] = successor(p.ty, x);
            sum += x;
        }
        v[SUM] = sum;
    }
}

impl Model for TypeMirror {
    fn init(&mut self, v: &mut Values) {
        let inputs = v.clone();
        Self::mirror(v, |vr| inputs[vr]);
        v[X_F32] = 0.0;
    }

    fn do_step(
        &mut self,
        _t: f64,
        h: f64,
        v: &mut Values,
        u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        v[X_F32] = f64::from((v[X_F32] + u.value(U_F32) * h) as f32);
        Self::mirror(v, |vr| u.value(vr));
        Ok(())
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    /// First derivatives of the float outputs: `u_f32` for `x_f32`, 0 for
    /// the discrete `y_f32` and `sum` (constant between communication points).
    fn output_derivative(
        &self,
        vr: Vr,
        order: u32,
        _t: f64,
        _v: &Values,
        u: &Inputs,
    ) -> Option<f64> {
        match (vr, order) {
            (X_F32, 1) => Some(u.value(U_F32)),
            (Y_F32 | SUM, 1) => Some(0.0),
            _ => None,
        }
    }
}
