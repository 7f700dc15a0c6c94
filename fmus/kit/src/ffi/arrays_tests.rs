//! FMI 3 arrays through the exported C functions: the spec checks,
//! `modelDescription.xml` (`<Dimension>` children, start values
//! space-separated), FMI 3 only builds, values of every element in one call
//! (`nValues` the sum of the variables' current sizes, any other count
//! refused naming both), resizing by structural parameters in
//! Configuration Mode (elements kept by index, new ones at their start
//! values), tunable arrays, FMU state and its serialization, and the
//! functions arrays take no part in (derivatives, intermediate update),
//! with a small test model.

use std::ffi::{c_int, c_void};

use super::tests::{
    fmi3DeserializeFMUState, fmi3DoStep, fmi3EnterConfigurationMode, fmi3EnterInitializationMode,
    fmi3ExitConfigurationMode, fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance,
    fmi3GetBoolean, fmi3GetDirectionalDerivative, fmi3GetFMUState, fmi3GetFloat64, fmi3GetInt32,
    fmi3GetOutputDerivatives, fmi3GetUInt64, fmi3Reset, fmi3SerializeFMUState,
    fmi3SerializedFMUStateSize, fmi3SetFMUState, fmi3SetFloat64, fmi3SetInt32, fmi3SetUInt64,
    instantiate3, instantiate3_with, logged3, registry, token_c,
};
use crate::caps::{Capabilities, FmiVersion, Variant};
use crate::model::{
    DependencyKind, Dimension, LogLevel, Model, ModelSpec, StepError, Values, VarType, Variable,
    Vr, resized,
};
use crate::package::{PackageRequest, package};
use crate::{Inputs, xml};

/// Structural parameter k (UInt64, 1 to 4), start 2.
pub const K: Vr = 1;
/// Input u[k] (Float64), start 1 2 ...
pub const U: Vr = 2;
/// Output y[k] = g u + s (feed-through from u and s).
pub const Y: Vr = 3;
/// Parameter p[2,3] (Int32, fixed dimensions), start 10 i + j.
pub const P: Vr = 4;
/// Tunable parameter w[k,2] (Float64), start 0.5.
pub const W: Vr = 5;
/// Local acc[k]: acc' = u (a state).
pub const ACC: Vr = 6;
/// Output big[k] (Boolean): u > 1.5.
pub const BIG: Vr = 7;
/// Scalar input s (Float64), start 0.
pub const S: Vr = 8;
/// Scalar output total = sum(acc) + sum(w) + sum(p).
pub const TOTAL: Vr = 9;
/// Scalar parameter g (Float64), start 2.
pub const G: Vr = 10;

struct KitArrays {
    g: f64,
    w: f64,
    p: f64,
}

impl Model for KitArrays {
    fn init(&mut self, v: &mut Values) {
        v.array_mut(ACC).fill(0.0);
    }
    fn do_step(
        &mut self,
        _t: f64,
        h: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        let u = v.array(U).to_vec();
        for (a, x) in v.array_mut(ACC).iter_mut().zip(u) {
            *a += h * x;
        }
        Ok(())
    }
    fn outputs(&self, t: f64, v: &mut Values, u: &Inputs) {
        let s = u.at(S, t);
        let us = v.array(U).to_vec();
        for (y, x) in v.array_mut(Y).iter_mut().zip(&us) {
            *y = self.g * x + s;
        }
        for (b, x) in v.array_mut(BIG).iter_mut().zip(&us) {
            *b = crate::bool_value(*x > 1.5);
        }
        v[TOTAL] = v.array(ACC).iter().sum::<f64>() + self.w + self.p;
    }
    fn output_derivative(
        &self,
        vr: Vr,
        order: u32,
        _t: f64,
        v: &Values,
        _u: &Inputs,
    ) -> Option<f64> {
        (vr == TOTAL && order == 1).then(|| v.array(U).iter().sum())
    }
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    v.int_at_least("k_arr", K, 1)?;
    Ok(Box::new(KitArrays {
        g: v.finite("g_arr", G)?,
        w: v.array(W).iter().sum(),
        p: v.array(P).iter().sum(),
    }))
}

fn ten_i_plus_j(i: &[usize]) -> f64 {
    (10 * i[0] + i[1]) as f64
}

fn one_based(i: &[usize]) -> f64 {
    i[0] as f64 + 1.0
}

/// The test model (FMI 3 only).
pub fn spec() -> ModelSpec {
    use Dimension::{Fixed, Structural};
    ModelSpec::new("KitArrays", "arrays test model", build)
        .var(
            Variable::structural_parameter(K, "k_arr", 2.0, "sizes the arrays")
                .typed(VarType::UInt64)
                .min(1.0)
                .max(4.0),
        )
        .var(
            Variable::input(U, "u_arr", 0.0, "an array input")
                .dims(&[Structural(K)])
                .start_elements(one_based),
        )
        .var(
            Variable::output(Y, "y_arr", "g u + s")
                .dims(&[Structural(K)])
                .depends_on(&[(U, DependencyKind::Dependent), (S, DependencyKind::Fixed)]),
        )
        .var(
            Variable::int_parameter(P, "p_arr", 0, "a fixed-size Int32 matrix")
                .dims(&[Fixed(2), Fixed(3)])
                .start_elements(ten_i_plus_j),
        )
        .var(
            Variable::parameter(W, "w_arr", 0.5, "a tunable matrix")
                .tunable()
                .dims(&[Structural(K), Fixed(2)]),
        )
        .var(Variable::local(ACC, "acc_arr", "acc' = u").dims(&[Structural(K)]))
        .var(Variable::bool_output(BIG, "big_arr", "u > 1.5").dims(&[Structural(K)]))
        .var(Variable::input(S, "s_arr", 0.0, "a scalar input"))
        .var(Variable::output(
            TOTAL,
            "total_arr",
            "sum(acc) + sum(w) + sum(p)",
        ))
        .var(Variable::parameter(G, "g_arr", 2.0, "a scalar gain").tunable())
        .output_derivatives(1)
        .directional_derivatives(true)
}

fn arrays_spec() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitArrays")
        .unwrap_or(&registry()[0])
}

fn instantiate_arrays(name: &std::ffi::CStr) -> *mut c_void {
    let s = arrays_spec();
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    let i = instantiate3(name, &tok);
    assert!(!i.is_null());
    i
}

/// fmi3GetFloat64 of `vrs` with `n` values: the status and the values.
fn get_f64(i: *mut c_void, vrs: &[Vr], n: usize) -> (c_int, Vec<f64>) {
    let mut out = vec![f64::NAN; n];
    // SAFETY: arrays of the given lengths.
    let st = unsafe { fmi3GetFloat64(i, vrs.as_ptr(), vrs.len(), out.as_mut_ptr(), n) };
    (st, out)
}

fn set_f64(i: *mut c_void, vrs: &[Vr], vals: &[f64]) -> c_int {
    // SAFETY: arrays of the given lengths.
    unsafe { fmi3SetFloat64(i, vrs.as_ptr(), vrs.len(), vals.as_ptr(), vals.len()) }
}

fn set_k(i: *mut c_void, k: u64) -> c_int {
    // SAFETY: one-element arrays.
    unsafe { fmi3SetUInt64(i, &K, 1, &k, 1) }
}

fn get_k(i: *mut c_void) -> u64 {
    let mut k = 0u64;
    // SAFETY: one-element arrays.
    assert_eq!(unsafe { fmi3GetUInt64(i, &K, 1, &mut k, 1) }, 0);
    k
}

fn call(f: unsafe extern "C" fn(*mut c_void) -> c_int, i: *mut c_void) -> c_int {
    // SAFETY: an instance pointer.
    unsafe { f(i) }
}

fn enter_init(i: *mut c_void) -> c_int {
    // SAFETY: an instance pointer.
    unsafe { fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0) }
}

fn step(i: *mut c_void, t: f64, h: f64) -> c_int {
    let (mut e, mut term, mut early, mut last) = (false, false, false, 0.0);
    // SAFETY: valid out-pointers.
    unsafe { fmi3DoStep(i, t, h, false, &mut e, &mut term, &mut early, &mut last) }
}

/// Configuration Mode with k, then initialized.
fn configured(name: &std::ffi::CStr, k: u64) -> *mut c_void {
    let i = instantiate_arrays(name);
    assert_eq!(call(fmi3EnterConfigurationMode, i), 0);
    assert_eq!(set_k(i, k), 0);
    assert_eq!(call(fmi3ExitConfigurationMode, i), 0);
    assert_eq!(enter_init(i), 0);
    assert_eq!(call(fmi3ExitInitializationMode, i), 0);
    i
}

// ------------------------------------------------------------- the spec

#[test]
fn arrays_in_the_fmi3_model_description() {
    let s = arrays_spec();
    let x = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitArrays",
    );
    for block in [
        "    <Float64 name=\"u_arr\" valueReference=\"2\" description=\"an array input\" causality=\"input\" \
         variability=\"continuous\" start=\"1.0 2.0\">\n      <Dimension valueReference=\"1\"/>\n    </Float64>\n",
        "    <Int32 name=\"p_arr\" valueReference=\"4\" description=\"a fixed-size Int32 matrix\" causality=\"parameter\" \
         variability=\"fixed\" initial=\"exact\" start=\"0 1 2 10 11 12\">\n      <Dimension start=\"2\"/>\n      \
         <Dimension start=\"3\"/>\n    </Int32>\n",
        "    <Float64 name=\"w_arr\" valueReference=\"5\" description=\"a tunable matrix\" causality=\"parameter\" \
         variability=\"tunable\" initial=\"exact\" start=\"0.5 0.5 0.5 0.5\">\n      <Dimension valueReference=\"1\"/>\n      \
         <Dimension start=\"2\"/>\n    </Float64>\n",
        "    <Boolean name=\"big_arr\" valueReference=\"7\" description=\"u &gt; 1.5\" causality=\"output\" \
         variability=\"discrete\" initial=\"calculated\">\n      <Dimension valueReference=\"1\"/>\n    </Boolean>\n",
        // Arrays are never updated in Intermediate Update Mode; the scalar
        // continuous input is.
        "    <Float64 name=\"s_arr\" valueReference=\"8\" description=\"a scalar input\" causality=\"input\" \
         variability=\"continuous\" intermediateUpdate=\"true\" start=\"0.0\"/>\n",
        // Array outputs in <ModelStructure> as scalars.
        "    <Output valueReference=\"3\" dependencies=\"2 8\" dependenciesKind=\"dependent fixed\"/>\n",
        "    <InitialUnknown valueReference=\"3\"/>\n",
        "    <InitialUnknown valueReference=\"7\"/>\n",
    ] {
        assert!(x.contains(block), "missing\n{block}in\n{x}");
    }
    assert!(s.has_arrays());
    assert_eq!(
        s.sized_by(K).map(|v| v.name).collect::<Vec<_>>(),
        ["u_arr", "y_arr", "w_arr", "acc_arr", "big_arr"]
    );
    // The start values at the start shape, and at others.
    let u = s.variable(U).unwrap_or(&s.variables[0]);
    assert_eq!(s.array_start_values(u), [1.0, 2.0]);
    assert_eq!(s.array_start_at(u, &[4]), [1.0, 2.0, 3.0, 4.0]);
    // Arrays change the variable hash: the token of a model without
    // arrays is what it was (see `ModelSpec::variables_hash`).
    let mut other = spec();
    other.variables[P as usize].dimensions = vec![Dimension::Fixed(3), Dimension::Fixed(2)];
    assert_ne!(other.variables_hash(), s.variables_hash());
}

#[test]
fn arrays_make_a_model_fmi3_only() {
    // Fixed dimensions and FMI 2 types: the array alone makes it FMI 3 only.
    let s = ModelSpec::new("KitFixedArray", "", build)
        .var(Variable::input(1, "v", 1.0, "").dims(&[Dimension::Fixed(3)]));
    assert_eq!(s.check(), Ok(()));
    assert!(!s.supports(FmiVersion::Fmi2) && s.supports(FmiVersion::Fmi3));
    let caps2 = Capabilities::full(&s, FmiVersion::Fmi2);
    assert_eq!(
        caps2.check(&s, FmiVersion::Fmi2),
        Err("KitFixedArray has no fmi2 build: v is an array (FMI 3 only)".to_string())
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let lib = dir.path().join("lib.so");
    std::fs::write(&lib, b"not a library").unwrap_or_else(|e| panic!("{e}"));
    let out2 = dir.path().join("fmi2.fmu");
    let e = package(
        &PackageRequest::variant(&s, FmiVersion::Fmi2, Variant::Full),
        &lib,
        &out2,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.contains("v is an array (FMI 3 only)"), "{e}");
    assert!(!out2.exists());
    let x = xml::model_description(
        &s,
        FmiVersion::Fmi3,
        &Capabilities::full(&s, FmiVersion::Fmi3),
        "K",
    );
    assert!(
        x.contains("start=\"1.0 1.0 1.0\">\n      <Dimension start=\"3\"/>\n    </Float64>"),
        "{x}"
    );
}

#[test]
fn bad_array_specs_are_refused() {
    let base = || {
        ModelSpec::new("KitBadArray", "", build)
            .var(Variable::structural_parameter(1, "n", 2.0, "").typed(VarType::UInt64))
            .var(Variable::structural_parameter(2, "f", 2.0, ""))
    };
    let cases = [
        (
            base().var(Variable::input(3, "v", 0.0, "").dims(&[Dimension::Structural(2)])),
            "a dimension of array v is vr 2, which is no UInt64 structural parameter",
        ),
        (
            base().var(Variable::input(3, "v", 0.0, "").dims(&[Dimension::Structural(9)])),
            "a dimension of array v is vr 9, which is no UInt64 structural parameter",
        ),
        (
            base().var(Variable::input(3, "v", 0.0, "").dims(&[Dimension::Fixed(0)])),
            "array v has a fixed dimension of 0",
        ),
        (
            base().var(
                Variable::input(3, "v", 0.0, "")
                    .dims(&[Dimension::Fixed(2)])
                    .start(1.0),
            ),
            "array v has a scalar start value",
        ),
        (
            base().var(
                Variable::input(3, "v", 0.0, "")
                    .typed(VarType::Int8)
                    .dims(&[Dimension::Fixed(2)])
                    .start_elements(|i| 100.0 * i[0] as f64 + 27.5),
            ),
            "Int8 array v has the start value 27.5, which the type cannot hold",
        ),
        (
            base().var(Variable::string_input(3, "v", "", "").dims(&[Dimension::Fixed(2)])),
            "String v cannot be an array here",
        ),
        (
            base().var(
                Variable::output(3, "v", "")
                    .dims(&[Dimension::Fixed(2)])
                    .start(0.0),
            ),
            "array v has a scalar start value",
        ),
        (
            base().var(Variable::output(3, "v", "").start_elements(one_based)),
            "v has array start values but no dimensions",
        ),
        (
            base().var(
                Variable::input(3, "v", 0.0, "")
                    .dims(&[Dimension::Fixed(2)])
                    .start_elements(one_based)
                    .discrete(),
            ),
            "",
        ),
    ];
    for (spec, want) in cases {
        match spec.check() {
            Ok(()) => assert_eq!(want, "", "accepted"),
            Err(e) => {
                assert!(!want.is_empty() && e.contains(want), "{e} (want {want})");
            }
        }
    }
}

#[test]
fn resized_keeps_elements_by_index_and_starts_the_others() {
    let start = |i: &[usize]| (100 * i[0] + i.get(1).copied().unwrap_or(0)) as f64;
    // 2x2 -> 3x2: rows kept, the new row at its start values.
    assert_eq!(
        resized(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &[3, 2], &start),
        [1.0, 2.0, 3.0, 4.0, 200.0, 201.0]
    );
    // 2x2 -> 2x3: each row keeps its elements, a new column.
    assert_eq!(
        resized(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &[2, 3], &start),
        [1.0, 2.0, 2.0, 3.0, 4.0, 102.0]
    );
    // 3x3 -> 1x2: the leading part.
    let nine: Vec<f64> = (1..=9).map(f64::from).collect();
    assert_eq!(resized(&nine, &[3, 3], &[1, 2], &start), [1.0, 2.0]);
    // From nothing: the start values.
    assert_eq!(resized(&[], &[], &[3], &start), [0.0, 100.0, 200.0]);
    assert_eq!(resized(&[7.0], &[1], &[0], &start), Vec::<f64>::new());
}

// ------------------------------------------------------ values through C

#[test]
fn every_element_in_one_call_and_any_other_count_refused() {
    let i = instantiate_arrays(c"arr1");
    // SAFETY: every call passes arrays of the lengths given.
    unsafe {
        // Instantiated: u (2) and the scalar s in one call.
        assert_eq!(set_f64(i, &[U, S], &[3.0, 4.0, 0.25]), 0);
        // Too few and too many values: refused, naming both counts, and
        // nothing changes.
        assert_eq!(set_f64(i, &[U, S], &[9.0, 9.0]), 3);
        assert!(logged3(
            "fmi3SetFloat64: Expected nValues = 3 but was 2: nValues must be the sum of the current sizes of the \
             variables (u_arr[2]: 2, 1 scalar: 1)"
        ));
        assert_eq!(set_f64(i, &[S, U], &[9.0, 9.0, 9.0, 9.0]), 3);
        assert!(logged3("fmi3SetFloat64: Expected nValues = 3 but was 4"));
        assert_eq!(enter_init(i), 0);
        assert_eq!(get_f64(i, &[U, S], 3), (0, vec![3.0, 4.0, 0.25]));
        // Int32 matrix of fixed shape, row-major.
        let mut p = [0i32; 6];
        assert_eq!(fmi3GetInt32(i, &P, 1, p.as_mut_ptr(), 6), 0);
        assert_eq!(p, [0, 1, 2, 10, 11, 12]);
        assert_eq!(fmi3GetInt32(i, &P, 1, p.as_mut_ptr(), 1), 3);
        assert!(logged3(
            "fmi3GetInt32: Expected nValues = 6 but was 1: nValues must be the sum of the current sizes of the \
             variables (p_arr[2,3]: 6)"
        ));
        let p2 = [1, 2, 3, 4, 5, 6];
        assert_eq!(fmi3SetInt32(i, &P, 1, p2.as_ptr(), 6), 0);
        assert_eq!(call(fmi3ExitInitializationMode, i), 0);
        // Outputs: y = g u + s, big = u > 1.5, total = sum(w) + sum(p).
        let (st, v) = get_f64(i, &[Y, TOTAL, U], 5);
        assert_eq!(st, 0);
        assert_eq!(v, [6.25, 8.25, 2.0 + 21.0, 3.0, 4.0]);
        let mut b = [true; 2];
        assert_eq!(fmi3GetBoolean(i, &BIG, 1, b.as_mut_ptr(), 2), 0);
        assert_eq!(b, [true, true]);
        assert_eq!(fmi3GetBoolean(i, &BIG, 1, b.as_mut_ptr(), 1), 3);
        assert!(logged3("fmi3GetBoolean: Expected nValues = 2 but was 1"));
        // A step integrates the held array input.
        assert_eq!(set_f64(i, &[U], &[1.0, -1.0]), 0);
        assert_eq!(step(i, 0.0, 0.5), 0);
        assert_eq!(get_f64(i, &[ACC], 2), (0, vec![0.5, -0.5]));
        assert_eq!(get_f64(i, &[Y], 2), (0, vec![2.25, -1.75]));
        // Wrong type for an array: refused as for scalars.
        assert_eq!(fmi3GetInt32(i, &U, 1, p.as_mut_ptr(), 2), 3);
        assert!(logged3(
            "variable u_arr (vr 2) is of type Float64, not Int32"
        ));
        // nValueReferences 0: nothing.
        assert_eq!(
            fmi3GetFloat64(i, std::ptr::null(), 0, std::ptr::null_mut(), 0),
            0
        );
        fmi3FreeInstance(i);
    }
}

#[test]
fn structural_parameters_resize_arrays_keeping_elements() {
    let i = instantiate_arrays(c"arr2");
    // Values set in Instantiated survive a resize where their indices do.
    assert_eq!(set_f64(i, &[U, W], &[7.0, 8.0, 1.0, 2.0, 3.0, 4.0]), 0);
    assert_eq!(call(fmi3EnterConfigurationMode, i), 0);
    // Only the structural parameter can be read there.
    assert_eq!(get_f64(i, &[U], 2).0, 3);
    assert_eq!(get_k(i), 2);
    assert_eq!(set_k(i, 3), 0);
    assert_eq!(get_k(i), 3);
    // Out of the declared range: refused at once (it sizes arrays).
    assert_eq!(set_k(i, 5), 3);
    assert!(logged3(
        "fmi3SetUInt64: value 5 of k_arr (vr 1) is above its max 4 (k_arr sizes the arrays u_arr, y_arr, w_arr, acc_arr, big_arr)"
    ));
    assert_eq!(set_k(i, 0), 3);
    assert!(logged3(
        "fmi3SetUInt64: value 0 of k_arr (vr 1) is below its min 1"
    ));
    assert_eq!(get_k(i), 3);
    assert_eq!(call(fmi3ExitConfigurationMode, i), 0);
    // u: kept 7, 8, the new element at its start 3; w: rows kept, the new
    // row at 0.5.
    assert_eq!(get_f64_inst(i, &[U], 3), vec![7.0, 8.0, 3.0]);
    assert_eq!(get_f64_inst(i, &[W], 6), vec![1.0, 2.0, 3.0, 4.0, 0.5, 0.5]);
    assert_eq!(get_f64(i, &[U], 2).0, 3);
    assert!(logged3("Expected nValues = 3 but was 2"));
    // Shrink: the leading part.
    assert_eq!(call(fmi3EnterConfigurationMode, i), 0);
    assert_eq!(set_k(i, 1), 0);
    assert_eq!(call(fmi3ExitConfigurationMode, i), 0);
    assert_eq!(get_f64_inst(i, &[U, W], 3), vec![7.0, 1.0, 2.0]);
    // Grow again: the element that was dropped comes back at its start.
    assert_eq!(call(fmi3EnterConfigurationMode, i), 0);
    assert_eq!(set_k(i, 2), 0);
    assert_eq!(call(fmi3ExitConfigurationMode, i), 0);
    assert_eq!(get_f64_inst(i, &[U], 2), vec![7.0, 2.0]);
    assert_eq!(enter_init(i), 0);
    assert_eq!(call(fmi3ExitInitializationMode, i), 0);
    assert_eq!(get_f64(i, &[Y, ACC], 4), (0, vec![14.0, 4.0, 0.0, 0.0]));
    // Reset: the start shape and values.
    assert_eq!(call(fmi3Reset, i), 0);
    assert_eq!(call(fmi3EnterConfigurationMode, i), 0);
    assert_eq!(get_k(i), 2);
    assert_eq!(call(fmi3ExitConfigurationMode, i), 0);
    assert_eq!(
        get_f64_inst(i, &[U, W], 6),
        vec![1.0, 2.0, 0.5, 0.5, 0.5, 0.5]
    );
    // SAFETY: a live instance, freed once.
    unsafe { fmi3FreeInstance(i) };
}

/// fmi3GetFloat64 in Instantiated, where getters are refused: saves the
/// FMU state, enters Initialization Mode, reads, and restores the state
/// (back in Instantiated, values unchanged).
fn get_f64_inst(i: *mut c_void, vrs: &[Vr], n: usize) -> Vec<f64> {
    let mut s: *mut c_void = std::ptr::null_mut();
    // SAFETY: an instance pointer and one FMU-state slot.
    unsafe {
        assert_eq!(fmi3GetFMUState(i, &mut s), 0);
        assert_eq!(enter_init(i), 0);
        let (st, v) = get_f64(i, vrs, n);
        assert_eq!(st, 0, "get {vrs:?} with {n} values");
        assert_eq!(fmi3SetFMUState(i, s), 0);
        assert_eq!(fmi3FreeFMUState(i, &mut s), 0);
        v
    }
}

#[test]
fn tunable_arrays_rebuild_the_model_in_step_mode() {
    let i = configured(c"arr3", 3);
    assert_eq!(get_f64(i, &[TOTAL], 1), (0, vec![3.0 + 36.0]));
    assert_eq!(set_f64(i, &[W], &[1.0; 6]), 0);
    assert_eq!(get_f64(i, &[TOTAL], 1), (0, vec![6.0 + 36.0]));
    assert_eq!(
        set_f64(i, &[W, G], &[0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 10.0]),
        0
    );
    assert_eq!(
        get_f64(i, &[TOTAL, Y], 4),
        (0, vec![2.0 + 36.0, 10.0, 20.0, 30.0])
    );
    // A fixed array parameter is not settable in Step Mode.
    let p = [0i32; 6];
    // SAFETY: arrays of the given lengths.
    assert_eq!(unsafe { fmi3SetInt32(i, &P, 1, p.as_ptr(), 6) }, 3);
    assert!(logged3(
        "fmi3SetInt32: Illegal call sequence: parameter p_arr (vr 4, variability fixed, initial exact) cannot be set in state Step Mode"
    ));
    // SAFETY: a live instance, freed once.
    unsafe { fmi3FreeInstance(i) };
}

#[test]
fn fmu_state_and_serialization_cover_arrays_and_their_sizes() {
    let i = configured(c"arr4", 3);
    assert_eq!(set_f64(i, &[U], &[1.0, 2.0, 4.0]), 0);
    assert_eq!(step(i, 0.0, 0.25), 0);
    let mut s: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid pointers and lengths throughout.
    unsafe {
        assert_eq!(fmi3GetFMUState(i, &mut s), 0);
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, s, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, s, bytes.as_mut_ptr(), size), 0);
        let saved = get_f64(i, &[ACC, Y, U], 9);
        assert_eq!(saved.1[..3], [0.25, 0.5, 1.0]);
        assert_eq!(set_f64(i, &[U], &[0.0; 3]), 0);
        assert_eq!(step(i, 0.25, 0.25), 0);
        assert_ne!(get_f64(i, &[ACC, Y, U], 9), saved);
        assert_eq!(fmi3SetFMUState(i, s), 0);
        assert_eq!(get_f64(i, &[ACC, Y, U], 9), saved);
        // Another instance of another size takes the state, sizes and all.
        let j = configured(c"arr5", 1);
        let mut s2: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3DeserializeFMUState(j, bytes.as_ptr(), size, &mut s2), 0);
        assert_eq!(get_f64(j, &[U], 3).0, 3);
        assert_eq!(fmi3SetFMUState(j, s2), 0);
        assert_eq!(get_k(j), 3);
        assert_eq!(get_f64(j, &[ACC, Y, U], 9), saved);
        assert_eq!(step(j, 0.25, 0.25), 0);
        assert_eq!(step(i, 0.25, 0.25), 0);
        assert_eq!(get_f64(j, &[ACC, Y, U], 9), get_f64(i, &[ACC, Y, U], 9));
        // A state whose array sizes do not fit its k is refused: k (vr 1)
        // is the second value, after the header (magic, token hash, mode,
        // status, five times, flags, count).
        let k_at = 8 + 8 + 1 + 1 + 5 * 8 + 1 + 4 + 8;
        assert_eq!(bytes[k_at..k_at + 8], 3.0f64.to_le_bytes());
        let mut bad = bytes.clone();
        bad[k_at..k_at + 8].copy_from_slice(&2.0f64.to_le_bytes());
        let mut s3: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(j, bad.as_ptr(), bad.len(), &mut s3),
            3
        );
        assert!(logged3(
            "fmi3DeserializeFMUState: serialized FMU state has arrays of other sizes than its structural parameters give"
        ));
        assert_eq!(fmi3FreeFMUState(i, &mut s), 0);
        assert_eq!(fmi3FreeFMUState(j, &mut s2), 0);
        fmi3FreeInstance(i);
        fmi3FreeInstance(j);
    }
}

#[test]
fn derivatives_and_intermediate_update_are_for_scalars() {
    let i = configured(c"arr6", 2);
    let orders = [1];
    let mut d = [0.0; 2];
    // SAFETY: arrays of the given lengths.
    unsafe {
        assert_eq!(
            fmi3GetOutputDerivatives(i, &TOTAL, 1, orders.as_ptr(), d.as_mut_ptr(), 1),
            0
        );
        assert_eq!(d[0], 3.0);
        assert_eq!(
            fmi3GetOutputDerivatives(i, &Y, 1, orders.as_ptr(), d.as_mut_ptr(), 1),
            3
        );
        assert!(logged3(
            "fmi3GetOutputDerivatives: output derivatives are not provided for arrays; y_arr (vr 3) is an array"
        ));
        let seed = [1.0];
        assert_eq!(
            fmi3GetDirectionalDerivative(i, &Y, 1, &U, 1, seed.as_ptr(), 1, d.as_mut_ptr(), 1),
            3
        );
        assert!(logged3(
            "directional derivatives are not provided for arrays; y_arr (vr 3) is an array"
        ));
        fmi3FreeInstance(i);
    }
    // An array input cannot be a required intermediate variable.
    let s = arrays_spec();
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    // SAFETY: no callback, so nothing uses the NULL environment.
    let j = unsafe { instantiate3_with(c"arr7", &tok, false, &[U], std::ptr::null_mut(), None) };
    assert!(j.is_null());
    assert!(logged3(
        "requiredIntermediateVariables: u_arr (vr 2) has no intermediateUpdate=\"true\""
    ));
}
