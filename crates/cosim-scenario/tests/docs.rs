//! The complete example of docs/scenario.md resolves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use cosim_scenario::{MasterKind, Scenario};

fn toml_blocks() -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/scenario.md"
    ))
    .unwrap();
    let mut blocks = Vec::new();
    let mut rest = doc.as_str();
    while let Some(start) = rest.find("```toml\n") {
        let body = &rest[start + 8..];
        let end = body.find("```").unwrap();
        blocks.push(body[..end].to_string());
        rest = &body[end..];
    }
    blocks
}

// Every block of the docs runs (or is classified) in
// tests/tests/doc_examples/; here, the complete example resolves against
// FMUs written to match it.
#[test]
fn complete_example_resolves() {
    let wheel = fmi2(
        "QuarterCarWheel",
        r#"
    <ScalarVariable name="v_c" valueReference="0" causality="input"><Real start="0" unit="m/s"/></ScalarVariable>
    <ScalarVariable name="F_c" valueReference="1" causality="output"><Real unit="N"/></ScalarVariable>
    <ScalarVariable name="m_w" valueReference="2" causality="parameter" variability="fixed"><Real start="40" unit="kg"/></ScalarVariable>
    <ScalarVariable name="k_c" valueReference="3" causality="parameter" variability="fixed"><Real start="15000" unit="N/m"/></ScalarVariable>
    <ScalarVariable name="k_w" valueReference="4" causality="parameter" variability="fixed"><Real start="150000" unit="N/m"/></ScalarVariable>
    <ScalarVariable name="d_c" valueReference="5" causality="parameter" variability="fixed"><Real start="1000"/></ScalarVariable>
    <ScalarVariable name="n_d" valueReference="6" causality="parameter" variability="fixed"><Real start="0.5"/></ScalarVariable>"#,
        "",
    );
    let chassis = chassis();
    let text = &toml_blocks()[0];
    let s = Scenario::from_str(text, "docs/example.toml").unwrap();
    let r = s
        .resolve(&[("chassis", &chassis), ("wheel", &wheel)])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.master.kind, MasterKind::Ecco);
    assert_eq!(r.bonds.len(), 1);
    assert_eq!(r.subsystems[1].parameters.len(), 5);
}
