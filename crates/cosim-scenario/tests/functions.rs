//! `[[functions]]`: Sum and VectorSum blocks, the connections to and from
//! their ports, tracing them, and every error at its line and column.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use cosim_core::{FunctionKind, NumericType};
use cosim_scenario::{FunctionEnd, FunctionPort, Traced, VariableRef};

/// Two wheels push one chassis through a sum; the chassis velocity feeds
/// both wheels.
const SUM: &str = r#"[simulation]
stop = 1.0

[master]
step = 1e-3

[[subsystems]]
name = "chassis"
fmu = "fmus/chassis.fmu"

[[subsystems]]
name = "wheel"
fmu = "fmus/wheel.fmu"

[[subsystems]]
name = "wheel2"
fmu = "fmus/wheel.fmu"

[[functions]]
name = "forces"
kind = "sum"
inputs = 2

[[connections]]
from = "wheel.F_c"
to = "forces.in[0]"

[[connections]]
from = "wheel2.F_c"
to = "forces.in[1]"
gain = 0.5

[[connections]]
from = "forces.out"
to = "chassis.F"
gain = -1.0

[[connections]]
from = "chassis.v_c"
to = "wheel.v_c"

[[connections]]
from = "chassis.v_c"
to = "wheel2.v_c"

[outputs]
variables = ["forces.*", "chassis.F"]
"#;

fn var(r: &cosim_scenario::ResolvedScenario, sub: &str, name: &str) -> VariableRef {
    let s = r.subsystem_index(sub).unwrap();
    let md = if sub.starts_with("chassis") {
        chassis()
    } else {
        wheel()
    };
    VariableRef {
        subsystem: s,
        variable: md.variable_by_name(name).unwrap().0,
        element: 0,
    }
}

#[test]
fn a_sum_resolves_with_its_connections_and_traced_ports() {
    let r = resolve(SUM).unwrap();
    assert_eq!(r.functions.len(), 1);
    let f = &r.functions[0].spec;
    assert_eq!(
        (f.name.as_str(), f.kind, f.inputs),
        ("forces", FunctionKind::Sum, 2)
    );
    // Only the connections between subsystems are `connections`.
    assert_eq!(r.connections.len(), 2);
    let port = |p| {
        FunctionEnd::Port(FunctionPort {
            function: 0,
            port: p,
        })
    };
    let ends: Vec<(FunctionEnd, FunctionEnd, f64)> = r
        .function_connections
        .iter()
        .map(|c| (c.from, c.to, c.gain))
        .collect();
    assert_eq!(
        ends,
        [
            (FunctionEnd::Variable(var(&r, "wheel", "F_c")), port(0), 1.0),
            (
                FunctionEnd::Variable(var(&r, "wheel2", "F_c")),
                port(1),
                0.5
            ),
            (
                port(2),
                FunctionEnd::Variable(var(&r, "chassis", "F")),
                -1.0
            ),
        ]
    );
    // Traced in the order written: the ports, then the variable.
    let p = |port| Traced::Port(FunctionPort { function: 0, port });
    assert_eq!(
        r.outputs.traced,
        [p(0), p(1), p(2), Traced::Variable(var(&r, "chassis", "F"))]
    );
    assert_eq!(r.outputs.variables, [var(&r, "chassis", "F")]);
    // A function-fed input is connected: no warning about it.
    let w: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        w.contains(&"input of subsystem 'chassis' not connected (keeps its start value): locked"),
        "{w:?}"
    );
    assert!(r.is_fed(var(&r, "chassis", "F")));
}

#[test]
fn a_vector_sum_and_a_chain_of_functions() {
    let text = SUM
        .replace(
            "[[connections]]\nfrom = \"forces.out\"",
            "[[functions]]\nname = \"v\"\nkind = \"vector-sum\"\ninputs = 1\ndimension = 2\n\n\
             [[connections]]\nfrom = \"forces.out\"\nto = \"v.in[0][0]\"\n\n\
             [[connections]]\nfrom = \"wheel.v_w\"\nto = \"v.in[0][1]\"\n\n\
             [[connections]]\nfrom = \"v.out[0]\"",
        )
        .replace(
            "variables = [\"forces.*\", \"chassis.F\"]",
            "variables = [\"v.out*\", \"*.in[[]1]\"]",
        );
    let r = resolve(&text).unwrap();
    let v = &r.functions[1].spec;
    assert_eq!(
        (v.kind, v.inputs, v.dimension, v.numeric),
        (FunctionKind::VectorSum, 1, 2, NumericType::Real)
    );
    let at = |function, port| FunctionEnd::Port(FunctionPort { function, port });
    assert!(
        r.function_connections
            .iter()
            .any(|c| c.from == at(0, 2) && c.to == at(1, 0))
    );
    // "v.out*": out[0], out[1]; "*.in[[]1]" (a glob over both functions):
    // forces' in[1], v has no in[1].
    let p = |function, port| Traced::Port(FunctionPort { function, port });
    assert_eq!(r.outputs.traced, [p(1, 2), p(1, 3), p(0, 1)]);
    // v.out[1] feeds nothing but is traced: no warning.
    assert!(
        r.warnings
            .iter()
            .all(|w| !w.message.contains("feeds nothing"))
    );
}

#[test]
fn an_integer_vector_sum_adds_integers_only() {
    let text = r#"[simulation]
stop = 1.0

[master]
step = 1e-3

[[subsystems]]
name = "m1"
fmu = "fmus/mass3.fmu"

[[subsystems]]
name = "m2"
fmu = "fmus/mass3.fmu"

[[functions]]
name = "count"
kind = "vector-sum"
inputs = 2
numeric_type = "integer"

[[connections]]
from = "m1.count"
to = "count.in[0][0]"

[[connections]]
from = "m2.count"
to = "count.in[1][0]"

[outputs]
variables = ["count.out[0]"]
"#;
    let r = resolve(text).unwrap();
    assert_eq!(r.functions[0].spec.numeric, NumericType::Integer);
    // A real output into an integer port: refused at the variable.
    let bad = text.replace("from = \"m2.count\"", "from = \"m2.v\"");
    let e = error(&bad);
    assert_eq!(
        e.message,
        "type mismatch: 'm2.v' is Float32 but 'count.in[1][0]' is integer (a vector-sum of 2 integer vectors of 1 component)"
    );
    assert_at_offset(&e, &bad, "\"m2.v\"", 4);
    // Gain and offset on an integer port.
    let bad = text.replace(
        "to = \"count.in[1][0]\"\n",
        "to = \"count.in[1][0]\"\noffset = 1\n",
    );
    let e = error(&bad);
    assert!(e.message.contains("'gain' and 'offset' apply to floating-point connections only; 'count.in[1][0]' is an integer port"), "{e}");
    assert_at(&e, &bad, "1\n\n[outputs]");
    // Integers into a sum of reals.
    let bad = text.replace(
        "kind = \"vector-sum\"\ninputs = 2\nnumeric_type = \"integer\"",
        "kind = \"vector-sum\"\ninputs = 2",
    );
    let e = error(&bad);
    assert_eq!(
        e.message,
        "type mismatch: 'm1.count' is UInt16 but 'count.in[0][0]' is real (a vector-sum of 2 real vectors of 1 component)"
    );
    assert_eq!(
        e.help.as_deref(),
        Some("to add integers, use kind = \"vector-sum\" with numeric_type = \"integer\"")
    );
}

#[test]
fn a_function_input_without_a_connection_is_an_error() {
    let text = SUM.replace(
        "from = \"wheel2.F_c\"\nto = \"forces.in[1]\"\ngain = 0.5\n",
        "from = \"wheel2.F_c\"\nto = \"chassis.x\"\n",
    );
    // (the connection now names an unknown variable: drop it instead)
    let text = text.replace(
        "[[connections]]\nfrom = \"wheel2.F_c\"\nto = \"chassis.x\"\n\n",
        "",
    );
    let e = error(&text);
    assert_eq!(
        e.message,
        "input 'in[1]' of function 'forces' has no connection"
    );
    assert_at(&e, &text, "\"forces\"\nkind");
    assert_eq!(
        e.help.as_deref(),
        Some("feed it: [[connections]] from = \"<subsystem>.<output>\", to = \"forces.in[1]\"")
    );
}

#[test]
fn inputs_fed_twice_are_errors() {
    // A function input.
    let text = SUM.replace("to = \"forces.in[1]\"", "to = \"forces.in[0]\"");
    let e = error(&text);
    let (a, _) = pos(&text, "from = \"wheel.F_c\"");
    let (b, _) = pos(&text, "from = \"wheel2.F_c\"");
    assert_eq!(
        e.message,
        format!(
            "input 'forces.in[0]' is fed by two connections (lines {} and {})",
            a - 1,
            b - 1
        )
    );
    assert_at(&e, &text, "\"forces.in[0]\"\ngain");
    // A subsystem input fed directly and by a function.
    let text = format!("{SUM}\n[[connections]]\nfrom = \"wheel.F_c\"\nto = \"chassis.F\"\n");
    let e = error(&text);
    assert!(
        e.message
            .starts_with("input 'chassis.F' is fed by two connections (lines "),
        "{e}"
    );
    assert_at(&e, &text, "\"chassis.F\"\ngain");
}

#[test]
fn a_cycle_through_functions_only_is_an_error() {
    // a.out -> b.in[0], b.out -> a.in[1]: neither can be computed first.
    let text = SUM.replace(
        "[[connections]]\nfrom = \"forces.out\"",
        "[[functions]]\nname = \"a\"\nkind = \"sum\"\ninputs = 2\n\n\
         [[functions]]\nname = \"b\"\nkind = \"sum\"\ninputs = 1\n\n\
         [[connections]]\nfrom = \"wheel.v_w\"\nto = \"a.in[0]\"\n\n\
         [[connections]]\nfrom = \"a.out\"\nto = \"b.in[0]\"\n\n\
         [[connections]]\nfrom = \"b.out\"\nto = \"a.in[1]\"\n\n\
         [[connections]]\nfrom = \"forces.out\"",
    );
    let e = error(&text);
    let (l1, _) = pos(&text, "from = \"a.out\"");
    let (l2, _) = pos(&text, "from = \"b.out\"");
    assert_eq!(
        e.message,
        format!(
            "a cycle through functions only: a.out -> b.in[0] (line {}), b.out -> a.in[1] (line {})",
            l1 - 1,
            l2 - 1
        )
    );
    assert_eq!((e.line, e.column), (Some(l2 - 1), Some(1)));
}

#[test]
fn ports_are_checked_by_name_and_direction() {
    let text = SUM.replace("to = \"forces.in[1]\"", "to = \"forces.in[2]\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "function 'forces' (a sum of 2 inputs) has no port 'in[2]'"
    );
    assert_at_offset(&e, &text, "\"forces.in[2]\"", 8);
    assert_eq!(e.help.as_deref(), Some("did you mean 'in[0]'?"));
    assert_eq!(
        e.notes,
        ["its ports are 'in[0]' and 'in[1]' (inputs) and 'out' (output)"]
    );
    // From a function input.
    let text = SUM.replace("from = \"forces.out\"", "from = \"forces.in[0]\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'forces.in[0]' is an input of function 'forces': 'from' must name an output"
    );
    assert_at_offset(&e, &text, "\"forces.in[0]\"\nto = \"chassis.F\"", 8);
    // To a function output.
    let text = SUM.replace("to = \"forces.in[0]\"", "to = \"forces.out\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'forces.out' is the output of function 'forces': 'to' must name an input"
    );
    // A subsystem input as the source of a function input.
    let text = SUM.replace("from = \"wheel.F_c\"", "from = \"wheel.v_c\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'wheel.v_c' is an input, not an output: 'from' must name an output"
    );
    assert_at_offset(&e, &text, "\"wheel.v_c\"\nto = \"forces", 7);
    // A Boolean input fed by a sum of reals.
    let text = SUM.replace("to = \"chassis.F\"", "to = \"chassis.locked\"");
    let e = error(&text);
    assert!(
        e.message
            .starts_with("type mismatch: 'chassis.locked' is Boolean but 'forces.out' is real"),
        "{e}"
    );
}

#[test]
fn units_joined_by_a_function_must_agree() {
    let text = SUM.replace("from = \"wheel2.F_c\"", "from = \"wheel2.v_w\"");
    let e = error(&text);
    assert!(
        e.message
            .starts_with("unit mismatch: 'wheel.F_c' is in N (")
            && e.message
                .ends_with("but 'wheel2.v_w' is in m/s (m.s-1), both joined by function 'forces'"),
        "{e}"
    );
    assert_at(&e, &text, "[[connections]]\nfrom = \"wheel2.v_w\"");
    // Declared intended: accepted.
    let text = text.replace("gain = 0.5\n", "gain = 0.5\nunit_mismatch = true\n");
    resolve(&text).unwrap();
    // kN into a sum of N: the same dimension, another factor.
    let text = SUM.replace("from = \"wheel2.F_c\"", "from = \"wheel2.F_c_kN\"");
    let e = error(&text);
    assert!(e.message.contains("1 N = 0.001 kN"), "{e}");
}

#[test]
fn function_tables_are_checked() {
    let with = |extra: &str| SUM.replace("inputs = 2\n", &format!("inputs = 2\n{extra}"));
    let text = with("dimension = 3\n");
    let e = error(&text);
    assert_eq!(
        e.message,
        "'dimension' is for kind \"vector-sum\": a \"sum\" is scalar"
    );
    assert_at_offset(&e, &text, "dimension = 3", 12);
    let text = with("numeric_type = \"integer\"\n");
    let e = error(&text);
    assert!(
        e.message
            .starts_with("'numeric_type' is for kind \"vector-sum\""),
        "{e}"
    );
    let text = with("numeric_type = \"int\"\n");
    let e = error(&text);
    assert!(e.message.starts_with("unknown numeric_type \"int\""), "{e}");
    let text = SUM.replace("kind = \"sum\"", "kind = \"summ\"");
    let e = error(&text);
    assert!(e.message.starts_with("unknown kind \"summ\""), "{e}");
    assert_eq!(e.help.as_deref(), Some("did you mean 'sum'?"));
    let text = SUM.replace("inputs = 2\n", "inputs = 0\n");
    let e = error(&text);
    assert!(e.message.contains("'inputs'"), "{e}");
    assert_at_offset(&e, &text, "inputs = 0", 9);
    let text = SUM.replace("kind = \"sum\"\n", "");
    let e = error(&text);
    assert!(e.message.starts_with("[[functions]] has no 'kind'"), "{e}");
    let text = SUM.replace("inputs = 2\n", "inputs = 2\nmode = 1\n");
    let e = error(&text);
    assert_eq!(e.message, "unknown key 'mode' in [[functions]]");
    // One namespace for subsystems and functions.
    let text = SUM.replace("name = \"forces\"", "name = \"wheel2\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "duplicate name 'wheel2': a subsystem is called so too (line 16)"
    );
    assert_at(&e, &text, "\"wheel2\"\nkind");
}

#[test]
fn a_function_is_not_a_subsystem_elsewhere() {
    let text = format!(
        "{SUM}\n[[bonds]]\nports = [{{ input = \"forces.in[0]\", output = \"chassis.v_c\" }}, {{ input = \"wheel.v_c\", output = \"wheel.F_c\" }}]\n"
    );
    let e = error(&text);
    assert_eq!(e.message, "'forces' is a function, not a subsystem");
    assert_at(&e, &text, "forces.in[0]\", output");
    let text = SUM.replace(
        "step = 1e-3\n",
        "step = 1e-3\nscheme = \"gauss-seidel\"\norder = [\"wheel\", \"forces\", \"wheel2\", \"chassis\"]\n",
    );
    let e = error(&text);
    assert_eq!(e.message, "'forces' is a function, not a subsystem");
    // An unknown port in [outputs].
    let text = SUM.replace("\"forces.*\"", "\"forces.ot\"");
    let e = error(&text);
    assert_eq!(
        e.message,
        "function 'forces' (a sum of 2 inputs) has no port 'ot'"
    );
    assert_eq!(e.help.as_deref(), Some("did you mean 'out'?"));
    assert_at(&e, &text, "ot\"");
}

#[test]
fn a_function_feeding_nothing_untraced_is_warned_about() {
    let text = SUM
        .replace(
            "from = \"forces.out\"\nto = \"chassis.F\"",
            "from = \"wheel.F_c\"\nto = \"chassis.F\"",
        )
        .replace(
            "variables = [\"forces.*\", \"chassis.F\"]",
            "variables = [\"chassis.F\"]",
        );
    let r = resolve(&text).unwrap();
    let w: Vec<&str> = r.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        w.contains(&"the output of function 'forces' feeds nothing and is not traced"),
        "{w:?}"
    );
}

#[test]
fn command_line_options_name_functions_too() {
    let mut s = parse(SUM).unwrap();
    s.apply_overrides(&cosim_scenario::Overrides {
        output_variables: vec!["forces.out".into(), "wheel.F_c".into()],
        ..Default::default()
    })
    .unwrap();
    let r = resolve_scenario(&s).unwrap();
    assert_eq!(
        r.outputs.traced,
        [
            Traced::Port(FunctionPort {
                function: 0,
                port: 2
            }),
            Traced::Variable(var(&r, "wheel", "F_c"))
        ]
    );
    let mut s = parse(SUM).unwrap();
    let e = s
        .apply_overrides(&cosim_scenario::Overrides {
            set: vec!["forces.k=1".into()],
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(e.message, "'forces' is a function, not a subsystem");
}
