//! String variables: the spec checks, `modelDescription.xml` (FMI 2
//! `<String start>`, FMI 3 `<String><Start value/></String>`), and access
//! through the exported C functions of both versions (values, the state
//! machine's rules per causality and variability, tunable String
//! parameters, NULL and invalid UTF-8, wrong types, the lifetime of the
//! returned strings, FMU state and its serialization) with a small test
//! model.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use super::tests::{
    callbacks, fmi2DeSerializeFMUstate, fmi2DoStep, fmi2EnterInitializationMode,
    fmi2ExitInitializationMode, fmi2FreeFMUstate, fmi2FreeInstance, fmi2GetFMUstate,
    fmi2GetInteger, fmi2GetReal, fmi2GetString, fmi2Instantiate, fmi2SerializeFMUstate,
    fmi2SerializedFMUstateSize, fmi2SetFMUstate, fmi2SetReal, fmi2SetString, fmi2SetupExperiment,
    fmi3DeserializeFMUState, fmi3EnterConfigurationMode, fmi3EnterInitializationMode,
    fmi3ExitInitializationMode, fmi3FreeFMUState, fmi3FreeInstance, fmi3GetFMUState,
    fmi3GetFloat64, fmi3GetInt32, fmi3GetString, fmi3SerializeFMUState, fmi3SerializedFMUStateSize,
    fmi3SetFMUState, fmi3SetString, instantiate3, logged, logged3, registry, step3, token_c,
};
use crate::caps::{Capabilities, FmiVersion};
use crate::instance::ILLEGAL_CALL_SEQUENCE;
use crate::model::{
    DependencyKind, Initial, LogLevel, Model, ModelSpec, StepError, Values, VarType, Variable, Vr,
};
use crate::{Inputs, xml};

/// String input, start "in".
pub const S_IN: Vr = 1;
/// String output `s_par + "/" + s_in + "/" + s_tun` (feed-through from s_in).
pub const S_OUT: Vr = 2;
/// String local: each step appends `s_in` and ";" (a string state).
pub const TRAIL: Vr = 3;
/// Integer output: the characters of `s_out`.
pub const N_OUT: Vr = 4;
/// Fixed String parameter with characters XML escapes.
pub const S_PAR: Vr = 5;
/// Tunable String parameter, start "t"; "bad" is refused.
pub const S_TUN: Vr = 6;
/// String constant "const".
pub const S_CONST: Vr = 7;
/// Real input (for the wrong-type checks).
pub const R_IN: Vr = 8;

/// The start value of `s_par`: XML has to escape it.
pub const PAR_START: &str = "a<b & \"c\"";

struct KitStrings;

impl Model for KitStrings {
    fn init(&mut self, v: &mut Values) {
        v.set_str(TRAIL, "");
    }
    fn do_step(
        &mut self,
        _t: f64,
        _h: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        let s_in = v.str(S_IN).to_string();
        let trail = v.str_mut(TRAIL);
        trail.push_str(&s_in);
        trail.push(';');
        Ok(())
    }
    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        let out = format!("{}/{}/{}", v.str(S_PAR), v.str(S_IN), v.str(S_TUN));
        v[N_OUT] = out.chars().count() as f64;
        v.set_str(S_OUT, &out);
    }
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    if v.str(S_TUN) == "bad" {
        return Err("s_tun must not be \"bad\"".into());
    }
    Ok(Box::new(KitStrings))
}

/// The test model (FMI 2 and FMI 3).
pub fn spec() -> ModelSpec {
    ModelSpec::new("KitStrings", "String test model", build)
        .var(Variable::string_input(S_IN, "s_in", "in", "String input"))
        .var(
            Variable::string_output(S_OUT, "s_out", "s_par/s_in/s_tun")
                .depends_on(&[(S_IN, DependencyKind::Dependent)]),
        )
        .var(
            Variable::local(TRAIL, "trail", "s_in; per step")
                .typed(VarType::String)
                .discrete(),
        )
        .var(
            Variable::int_output(N_OUT, "n_out", "characters of s_out")
                .depends_on(&[(S_IN, DependencyKind::Dependent)]),
        )
        .var(Variable::string_parameter(
            S_PAR, "s_par", PAR_START, "fixed",
        ))
        .var(Variable::string_parameter(S_TUN, "s_tun", "t", "tunable").tunable())
        .var(
            Variable::constant(S_CONST, "s_const", 0.0, "constant")
                .typed(VarType::String)
                .start_str("const"),
        )
        .var(Variable::input(R_IN, "r_in", 0.0, "Real input"))
        .interpolate_inputs(false)
        .directional_derivatives(false)
}

fn strings_spec() -> &'static ModelSpec {
    registry()
        .iter()
        .find(|s| s.name == "KitStrings")
        .unwrap_or(&registry()[0])
}

#[test]
fn the_spec_checks_string_start_values_and_attributes() {
    let s = strings_spec();
    assert_eq!(s.name, "KitStrings");
    assert_eq!(s.check(), Ok(()));
    assert!(s.supports(FmiVersion::Fmi2) && s.has_strings());
    let base = || ModelSpec::new("S", "", build);
    let err = |m: ModelSpec| m.check().err().unwrap_or_default();
    // A numeric start on a String, a string start on a number.
    let numeric = base().var(Variable::input(1, "u", 1.0, "").typed(VarType::String));
    assert!(err(numeric).contains("String u has a numeric start value"));
    let texty = base().var(Variable::parameter(1, "p", 0.0, "").start_str("x"));
    assert!(err(texty).contains("Float64 p has a string start value but is no String"));
    let mut none = Variable::string_parameter(1, "p", "", "");
    none.start_string = None;
    assert!(err(base().var(none)).contains("variable p start value presence is wrong"));
    // Start presence as for the other types: a calculated output has none.
    let out_start = base().var(Variable::string_output(1, "o", "").start_str("x"));
    assert!(err(out_start).contains("start value presence is wrong"));
    let exact_out = base().var(
        Variable::string_output(1, "o", "")
            .initial(Initial::Exact)
            .start_str("x"),
    );
    assert_eq!(err(exact_out), "");
    // No min / max, never continuous.
    let min = base().var(Variable::string_parameter(1, "p", "", "").min(0.0));
    assert!(err(min).contains("String p cannot have min / max"));
    let mut cont = Variable::string_input(1, "u", "", "");
    cont.variability = crate::Variability::Continuous;
    assert!(err(base().var(cont)).contains("cannot be continuous"));
    // The start value is part of the variable hash (and so of the token).
    let h = |start| {
        base()
            .var(Variable::string_parameter(1, "p", start, ""))
            .variables_hash()
    };
    assert_ne!(h("a"), h("b"));
    assert_eq!(VarType::String.fmi2_name(), "String");
    assert_eq!(VarType::String.fmi3_name(), "String");
    assert!(VarType::String.in_fmi2() && VarType::String.is_discrete());
    assert!(VarType::String.holds(0.0) && !VarType::String.holds(1.0));
    assert_eq!(VarType::String.bounds(), None);
}

#[test]
fn model_descriptions_declare_string_start_values() {
    let s = strings_spec();
    let x2 = xml::model_description(
        s,
        FmiVersion::Fmi2,
        &Capabilities::full(s, FmiVersion::Fmi2),
        "KitStrings",
    );
    assert!(x2.contains("<String start=\"in\"/>"), "{x2}");
    assert!(
        x2.contains("<String start=\"a&lt;b &amp; &quot;c&quot;\"/>"),
        "{x2}"
    );
    assert!(x2.contains("<String start=\"const\"/>"), "{x2}");
    // The output has no start; a String has no min / max / unit.
    let out = x2
        .split("<ScalarVariable name=\"s_out\"")
        .nth(1)
        .and_then(|r| r.split("</ScalarVariable>").next())
        .unwrap_or_default();
    assert!(out.contains("causality=\"output\" variability=\"discrete\" initial=\"calculated\""));
    assert!(out.contains("<String/>"), "{out}");
    let x3 = xml::model_description(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
        "KitStrings",
    );
    assert!(
        x3.contains(
            "<String name=\"s_in\" valueReference=\"1\" description=\"String input\" causality=\"input\" variability=\"discrete\">\n      <Start value=\"in\"/>\n    </String>"
        ),
        "{x3}"
    );
    assert!(x3.contains("<Start value=\"a&lt;b &amp; &quot;c&quot;\"/>"));
    assert!(x3.contains("causality=\"parameter\" variability=\"tunable\" initial=\"exact\">\n      <Start value=\"t\"/>"));
    assert!(x3.contains("<String name=\"s_out\" valueReference=\"2\""));
    assert!(!x3.contains("<String name=\"s_out\" valueReference=\"2\" description=\"s_par/s_in/s_tun\" causality=\"output\" variability=\"discrete\" initial=\"calculated\">"));
    assert!(
        x3.lines()
            .filter(|l| l.contains("<String"))
            .all(|l| !l.contains("start=")),
        "FMI 3 Strings have no start attribute"
    );
    assert!(!x3.contains("intermediateUpdate=\"true\""));
}

/// `fmi2GetString` of `vrs`: the status and the strings (copied).
fn get2(c: *mut c_void, vrs: &[Vr]) -> (c_int, Vec<String>) {
    let mut p: Vec<*const c_char> = vec![std::ptr::null(); vrs.len()];
    // SAFETY: arrays of the given lengths.
    let st = unsafe { fmi2GetString(c, vrs.as_ptr(), vrs.len(), p.as_mut_ptr()) };
    (st, copy(&p))
}

/// `fmi3GetString` of `vrs`.
fn get3(i: *mut c_void, vrs: &[Vr]) -> (c_int, Vec<String>) {
    let mut p: Vec<*const c_char> = vec![std::ptr::null(); vrs.len()];
    // SAFETY: arrays of the given lengths.
    let st = unsafe { fmi3GetString(i, vrs.as_ptr(), vrs.len(), p.as_mut_ptr(), p.len()) };
    (st, copy(&p))
}

fn copy(p: &[*const c_char]) -> Vec<String> {
    p.iter()
        .map(|&q| {
            if q.is_null() {
                "<NULL>".to_string()
            } else {
                // SAFETY: the kit hands out NUL-terminated strings valid
                // until its next GetString call.
                unsafe { CStr::from_ptr(q) }.to_string_lossy().into_owned()
            }
        })
        .collect()
}

/// `fmi2SetString` of `vrs` to `vals`.
fn set2(c: *mut c_void, vrs: &[Vr], vals: &[&str]) -> c_int {
    let owned: Vec<CString> = vals
        .iter()
        .map(|s| CString::new(*s).unwrap_or_default())
        .collect();
    let p: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: arrays of the given lengths, NUL-terminated strings.
    unsafe { fmi2SetString(c, vrs.as_ptr(), vrs.len(), p.as_ptr()) }
}

/// `fmi3SetString` of `vrs` to `vals`.
fn set3(i: *mut c_void, vrs: &[Vr], vals: &[&str]) -> c_int {
    let owned: Vec<CString> = vals
        .iter()
        .map(|s| CString::new(*s).unwrap_or_default())
        .collect();
    let p: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: arrays of the given lengths, NUL-terminated strings.
    unsafe { fmi3SetString(i, vrs.as_ptr(), vrs.len(), p.as_ptr(), p.len()) }
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn fmi2_strings_through_the_c_exports() {
    let s = strings_spec();
    let g = token_c(
        s,
        FmiVersion::Fmi2,
        &Capabilities::full(s, FmiVersion::Fmi2),
    );
    let cb = callbacks();
    // SAFETY: valid strings and callback struct.
    let c =
        unsafe { fmi2Instantiate(c"str2".as_ptr(), 1, g.as_ptr(), std::ptr::null(), &cb, 0, 1) };
    assert!(!c.is_null());
    // SAFETY: valid pointers throughout, or deliberately NULL / misaligned ones.
    unsafe {
        // No getter before Initialization Mode (FMI 2.0 state table).
        assert_eq!(get2(c, &[S_IN]).0, 3);
        assert!(logged(
            "fmi2GetString: Illegal call sequence: called in state Instantiated"
        ));
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 1.0), 0);
        // Instantiated: parameters (fixed and tunable) and inputs; never
        // outputs, locals or constants.
        assert_eq!(set2(c, &[S_PAR, S_TUN, S_IN], &["P", "T", "I"]), 0);
        for vr in [S_OUT, TRAIL, S_CONST] {
            assert_eq!(set2(c, &[vr], &["x"]), 3, "vr {vr}");
        }
        assert!(logged(&format!(
            "fmi2SetString: {ILLEGAL_CALL_SEQUENCE}: output s_out (vr 2, variability discrete, initial calculated) cannot be set in state Instantiated"
        )));
        assert!(logged(
            "fmi2SetString: Illegal call sequence: local s_const (vr 7, variability constant, initial exact) cannot be set in state Instantiated"
        ));
        assert_eq!(fmi2EnterInitializationMode(c), 0);
        // Initialization Mode: values computed from the current values.
        assert_eq!(
            get2(c, &[S_OUT, S_PAR, S_TUN, S_IN, S_CONST, TRAIL]),
            (0, owned(&["P/I/T", "P", "T", "I", "const", ""]))
        );
        assert_eq!(set2(c, &[S_PAR, S_IN], &["Grüß", "Zoë"]), 0);
        assert_eq!(get2(c, &[S_OUT]), (0, owned(&["Grüß/Zoë/T"])));
        let mut n = [0];
        assert_eq!(fmi2GetInteger(c, [N_OUT].as_ptr(), 1, n.as_mut_ptr()), 0);
        assert_eq!(n[0], 10, "characters, not bytes");
        assert_eq!(fmi2ExitInitializationMode(c), 0);
        // stepComplete: inputs and tunable parameters only.
        assert_eq!(set2(c, &[S_PAR], &["Q"]), 3);
        assert!(logged(
            "fmi2SetString: Illegal call sequence: parameter s_par (vr 5, variability fixed, initial exact) cannot be set in state stepComplete: only inputs and tunable parameters can be set there"
        ));
        assert_eq!(set2(c, &[S_IN, S_TUN], &["a", "u"]), 0);
        // Feed-through: the output follows at once.
        assert_eq!(get2(c, &[S_OUT]), (0, owned(&["Grüß/a/u"])));
        // A tunable value the model refuses changes nothing (all or nothing).
        assert_eq!(set2(c, &[S_IN, S_TUN], &["b", "bad"]), 3);
        assert!(logged("fmi2SetString: s_tun must not be \"bad\""));
        assert_eq!(get2(c, &[S_IN, S_TUN]), (0, owned(&["a", "u"])));
        // NULL strings, invalid UTF-8, a NULL array, wrong types.
        let bad = [c"x".as_ptr(), std::ptr::null()];
        assert_eq!(fmi2SetString(c, [S_IN, S_IN].as_ptr(), 2, bad.as_ptr()), 3);
        assert!(logged("fmi2SetString: value[1] is NULL"));
        let latin1 = [0x47u8, 0xfc, 0];
        let p = [latin1.as_ptr().cast::<c_char>()];
        assert_eq!(fmi2SetString(c, [S_IN].as_ptr(), 1, p.as_ptr()), 3);
        assert!(logged("fmi2SetString: value[0] is not valid UTF-8"));
        assert_eq!(get2(c, &[S_IN]), (0, owned(&["a"])));
        assert_eq!(fmi2SetString(c, [S_IN].as_ptr(), 1, std::ptr::null()), 3);
        assert_eq!(
            fmi2GetString(c, [S_IN].as_ptr(), 1, std::ptr::null_mut()),
            3
        );
        assert!(logged("fmi2GetString: value[] is NULL"));
        let mut x = [0.0];
        assert_eq!(fmi2GetReal(c, [S_OUT].as_ptr(), 1, x.as_mut_ptr()), 3);
        assert!(logged(
            "fmi2GetReal: variable s_out (vr 2) is of type String, not Real"
        ));
        assert_eq!(fmi2SetReal(c, [S_IN].as_ptr(), 1, [1.0].as_ptr()), 3);
        assert_eq!(get2(c, &[R_IN]).0, 3);
        assert!(logged(
            "fmi2GetString: variable r_in (vr 8) is of type Real, not String"
        ));
        assert_eq!(set2(c, &[R_IN], &["1"]), 3);
        assert_eq!(get2(c, &[99]).0, 3);
        assert!(logged("fmi2GetString: unknown value reference 99"));
        // The returned pointers stay valid until the next fmi2GetString.
        let mut p: [*const c_char; 2] = [std::ptr::null(); 2];
        assert_eq!(
            fmi2GetString(c, [S_IN, S_OUT].as_ptr(), 2, p.as_mut_ptr()),
            0
        );
        assert_eq!(fmi2DoStep(c, 0.0, 0.25, 1), 0);
        assert_eq!(copy(&p), owned(&["a", "Grüß/a/u"]));
        // A string state: the trail of the inputs per step.
        assert_eq!(get2(c, &[TRAIL]), (0, owned(&["a;"])));
        let mut state: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi2GetFMUstate(c, &mut state), 0);
        let mut size = 0usize;
        assert_eq!(fmi2SerializedFMUstateSize(c, state, &mut size), 0);
        let mut bytes = vec![0 as c_char; size];
        assert_eq!(fmi2SerializeFMUstate(c, state, bytes.as_mut_ptr(), size), 0);
        assert_eq!(set2(c, &[S_IN, S_TUN], &["later", "v"]), 0);
        assert_eq!(fmi2DoStep(c, 0.25, 0.25, 0), 0);
        assert_eq!(
            get2(c, &[TRAIL, S_OUT]),
            (0, owned(&["a;later;", "Grüß/later/v"]))
        );
        assert_eq!(fmi2SetFMUstate(c, state), 0);
        assert_eq!(
            get2(c, &[TRAIL, S_OUT, S_TUN]),
            (0, owned(&["a;", "Grüß/a/u", "u"]))
        );
        // Deserialized into another instance of the same build.
        let c2 = fmi2Instantiate(
            c"str2b".as_ptr(),
            1,
            g.as_ptr(),
            std::ptr::null(),
            &cb,
            0,
            1,
        );
        let mut s2: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi2DeSerializeFMUstate(c2, bytes.as_ptr(), size, &mut s2),
            0
        );
        assert_eq!(fmi2SetFMUstate(c2, s2), 0);
        assert_eq!(
            get2(c2, &[TRAIL, S_OUT, S_PAR]),
            (0, owned(&["a;", "Grüß/a/u", "Grüß"]))
        );
        // A state cut inside its strings is refused.
        let mut s3: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi2DeSerializeFMUstate(c2, bytes.as_ptr(), size - 1, &mut s3),
            3
        );
        assert!(logged("serialized FMU state is truncated"));
        assert_eq!(fmi2FreeFMUstate(c2, &mut s2), 0);
        assert_eq!(fmi2FreeFMUstate(c, &mut state), 0);
        fmi2FreeInstance(c2);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_strings_through_the_c_exports() {
    let s = strings_spec();
    let tok = token_c(
        s,
        FmiVersion::Fmi3,
        &Capabilities::full(s, FmiVersion::Fmi3),
    );
    let i = instantiate3(c"str3", &tok);
    assert!(!i.is_null());
    // SAFETY: valid pointers throughout, or deliberately NULL ones.
    unsafe {
        // No Configuration Mode: no structural parameters.
        assert_eq!(fmi3EnterConfigurationMode(i), 3);
        assert_eq!(set3(i, &[S_PAR, S_IN], &["P", "I"]), 0);
        assert_eq!(set3(i, &[S_OUT], &["x"]), 3);
        assert!(logged3(
            "fmi3SetString: Illegal call sequence: output s_out (vr 2, variability discrete, initial calculated) cannot be set in state Instantiated"
        ));
        assert_eq!(
            fmi3EnterInitializationMode(i, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(get3(i, &[S_OUT, S_CONST]), (0, owned(&["P/I/t", "const"])));
        assert_eq!(fmi3ExitInitializationMode(i), 0);
        assert_eq!(set3(i, &[S_PAR], &["Q"]), 3);
        assert!(logged3(
            "fmi3SetString: Illegal call sequence: parameter s_par (vr 5, variability fixed, initial exact) cannot be set in state Step Mode"
        ));
        // nValues must equal nValueReferences (scalars).
        let mut p: [*const c_char; 2] = [std::ptr::null(); 2];
        assert_eq!(fmi3GetString(i, [S_IN].as_ptr(), 1, p.as_mut_ptr(), 2), 3);
        assert!(logged3("nValues (2) differs from nValueReferences (1)"));
        let vals = [c"x".as_ptr()];
        assert_eq!(fmi3SetString(i, [S_IN].as_ptr(), 1, vals.as_ptr(), 2), 3);
        let nul = [std::ptr::null()];
        assert_eq!(fmi3SetString(i, [S_IN].as_ptr(), 1, nul.as_ptr(), 1), 3);
        assert!(logged3("fmi3SetString: values[0] is NULL"));
        let mut x = [0.0];
        assert_eq!(fmi3GetFloat64(i, [S_IN].as_ptr(), 1, x.as_mut_ptr(), 1), 3);
        assert!(logged3(
            "variable s_in (vr 1) is of type String, not Float64"
        ));
        let mut n = [0];
        assert_eq!(fmi3GetInt32(i, [N_OUT].as_ptr(), 1, n.as_mut_ptr(), 1), 0);
        assert_eq!(n[0], 5);
        // Steps, a string state, its serialization.
        assert_eq!(set3(i, &[S_IN], &["one"]), 0);
        assert_eq!(step3(i, 0.0, 0.5), 0);
        let mut state: *mut c_void = std::ptr::null_mut();
        assert_eq!(fmi3GetFMUState(i, &mut state), 0);
        let mut size = 0usize;
        assert_eq!(fmi3SerializedFMUStateSize(i, state, &mut size), 0);
        let mut bytes = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(i, state, bytes.as_mut_ptr(), size), 0);
        assert_eq!(set3(i, &[S_IN], &["two"]), 0);
        assert_eq!(step3(i, 0.5, 0.5), 0);
        assert_eq!(get3(i, &[TRAIL]), (0, owned(&["one;two;"])));
        let mut restored: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut restored),
            0
        );
        assert_eq!(fmi3SetFMUState(i, restored), 0);
        assert_eq!(
            get3(i, &[TRAIL, S_IN, S_OUT]),
            (0, owned(&["one;", "one", "P/one/t"]))
        );
        // Corrupt UTF-8 inside the serialized strings is refused.
        let pos = bytes
            .windows(4)
            .position(|w| w == b"one;")
            .unwrap_or(bytes.len() - 1);
        bytes[pos] = 0xff;
        let mut bad: *mut c_void = std::ptr::null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(i, bytes.as_ptr(), size, &mut bad),
            3
        );
        assert!(logged3("a string is not UTF-8"));
        assert_eq!(fmi3FreeFMUState(i, &mut state), 0);
        assert_eq!(fmi3FreeFMUState(i, &mut restored), 0);
        fmi3FreeInstance(i);
    }
}
