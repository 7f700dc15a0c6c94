//! OSP `Sum` and `VectorSum` functions: mapped onto `[[functions]]` and
//! connections to their ports (`SignalConnection`, `SignalGroupConnection`
//! through the OSP model descriptions' variable groups), written by
//! `cosim convert`, and every error at its line and column.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use cosim_core::metrics::Table;
use cosim_scenario::Overrides;
use cosim_scenario::runner;
use cosim_ssp::{Diagnostic, ImportOptions, Severity};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

fn fmu(name: &str) -> PathBuf {
    fmu_kit::dist::ensure_built().expect("building the project FMUs");
    root().join("fmus/dist/fmi2").join(format!("{name}.fmu"))
}

/// The system of tests/python/osp/functions (which libcosim runs too).
fn functions_osp() -> PathBuf {
    fmu("Gain");
    root().join("tests/python/osp/functions/OspSystemStructure.xml")
}

fn find<'a>(ds: &'a [Diagnostic], text: &str) -> &'a Diagnostic {
    ds.iter()
        .find(|d| d.message.contains(text))
        .unwrap_or_else(|| {
            panic!(
                "no diagnostic with '{text}' among:\n{}",
                ds.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
}

fn run(prepared: runner::Prepared) {
    let outcome = runner::run(prepared, Vec::new(), None).unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
}

#[test]
fn sum_and_vector_sum_become_functions_and_connections() {
    let imp = cosim_ssp::import(&functions_osp(), &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(imp.unsupported().is_empty(), "{:?}", imp.unsupported());
    let toml = imp.toml();
    for want in [
        "[[functions]]  # OspSystemStructure.xml:44\nname = \"sum\"\nkind = \"sum\"\ninputs = 2\n",
        "[[functions]]  # OspSystemStructure.xml:45\nname = \"vsum\"\nkind = \"vector-sum\"\ninputs = 2\ndimension = 3\n",
        "[[connections]]  # OspSystemStructure.xml:48\nfrom = \"d1.x\"\nto = \"sum.in[0]\"\n",
        "[[connections]]  # OspSystemStructure.xml:56\nfrom = \"sum.out\"\nto = \"g.u\"\n",
        // The variable groups, variable by variable.
        "[[connections]]  # OspSystemStructure.xml:64\nfrom = \"w1.y3\"\nto = \"vsum.in[0][2]\"\n",
        "[[connections]]  # OspSystemStructure.xml:72\nfrom = \"vsum.out[1]\"\nto = \"w3.u2\"\n",
    ] {
        assert!(toml.contains(want), "{want}\nnot in\n{toml}");
    }
    let scenario = imp.scenario().unwrap();
    let r = imp.resolve(&scenario).unwrap();
    assert_eq!(r.functions.len(), 2);
    assert_eq!(r.function_connections.len(), 3 + 9);
}

#[test]
fn the_osp_file_runs_like_its_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let overrides = |out: &Path| Overrides {
        stop: Some(0.2),
        out: Some(out.to_path_buf()),
        output_variables: vec![
            "d1.x".into(),
            "d2.*".into(),
            "g.*".into(),
            "w3.u[1-3]".into(),
        ],
        ..Overrides::default()
    };
    let from_osp = dir.path().join("osp");
    let imported = cosim_ssp::prepare(&functions_osp(), &overrides(&from_osp), None)
        .unwrap_or_else(|e| panic!("{e}"));
    run(imported.prepared);
    // cosim convert: the TOML beside the test's files, FMU paths relative.
    let toml_path = dir.path().join("converted.toml");
    let imp = cosim_ssp::import(
        &functions_osp(),
        &ImportOptions {
            toml_path: Some(toml_path.clone()),
            ..ImportOptions::default()
        },
    )
    .unwrap();
    std::fs::write(&toml_path, imp.toml()).unwrap();
    let from_toml = dir.path().join("toml");
    run(runner::prepare(&toml_path, &overrides(&from_toml), None).unwrap_or_else(|e| panic!("{e}")));
    let a = std::fs::read_to_string(from_osp.join("trace.csv")).unwrap();
    let b = std::fs::read_to_string(from_toml.join("trace.csv")).unwrap();
    assert_eq!(a, b);
    // g.u is the sum of d1.x and d2.x one step earlier (Jacobi), exactly.
    let t = Table::read(&from_osp.join("trace.csv")).unwrap();
    let (x1, x2, gu) = (
        t.column("d1.x").unwrap(),
        t.column("d2.x").unwrap(),
        t.column("g.u").unwrap(),
    );
    for k in 1..t.time().len() {
        assert_eq!(
            gu[k].to_bits(),
            (x1[k - 1] + x2[k - 1]).to_bits(),
            "row {k}"
        );
    }
}

/// An OSP file of Dahlquist and Wide FMUs with `functions` and
/// `connections` as given; imports it.
fn osp(
    dir: &Path,
    functions: &str,
    connections: &str,
) -> Result<cosim_ssp::Import, cosim_ssp::ImportError> {
    let (d, w) = (fmu("Dahlquist"), fmu("Wide"));
    std::fs::copy(
        root().join("tests/python/osp/functions/Wide_OspModelDescription.xml"),
        dir.join("Wide_OspModelDescription.xml"),
    )
    .unwrap();
    let text = format!(
        "<OspSystemStructure version=\"0.1\">\n  <Simulators>\n    <Simulator name=\"a\" source=\"{}\"/>\n    <Simulator name=\"b\" source=\"{}\"/>\n    <Simulator name=\"w\" source=\"{}\"/>\n  </Simulators>\n  <Functions>\n{functions}  </Functions>\n  <Connections>\n{connections}  </Connections>\n</OspSystemStructure>\n",
        d.display(),
        d.display(),
        w.display()
    );
    let p = dir.join("OspSystemStructure.xml");
    std::fs::write(&p, text).unwrap();
    cosim_ssp::import(&p, &ImportOptions::default())
}

fn signal(sim: &str, var: &str, func: &str, name: &str) -> String {
    format!(
        "    <SignalConnection>\n      <Variable simulator=\"{sim}\" name=\"{var}\"/>\n      <Signal function=\"{func}\" name=\"{name}\"/>\n    </SignalConnection>\n"
    )
}

fn group(sim: &str, var: &str, func: &str, name: &str) -> String {
    format!(
        "    <SignalGroupConnection>\n      <VariableGroup simulator=\"{sim}\" name=\"{var}\"/>\n      <SignalGroup function=\"{func}\" name=\"{name}\"/>\n    </SignalGroupConnection>\n"
    )
}

/// The first error of an import that fails.
fn first_error(r: Result<cosim_ssp::Import, cosim_ssp::ImportError>) -> Diagnostic {
    let e = r.expect_err("an error");
    e.errors().next().unwrap().clone()
}

#[test]
fn osp_function_errors_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let sum = "    <Sum name=\"s\" inputCount=\"2\"/>\n";
    // Lines: Sum on 8, the first connection from line 11 on (4 lines each).
    let both = signal("a", "x", "s", "in[0]") + &signal("b", "x", "s", "in[1]");

    // An input signal without a connection (libcosim: "Missing expected
    // connection"), at the function.
    let d = first_error(osp(dir, sum, &signal("a", "x", "s", "in[0]")));
    assert_eq!(
        d.message,
        "Sum 's' has no <SignalConnection> to its signal 'in[1]'"
    );
    assert_eq!((d.line, d.column), (Some(8), Some(6)));

    // A signal the function does not have.
    let d = first_error(osp(
        dir,
        sum,
        &(both.clone() + &signal("b", "u", "s", "outt")),
    ));
    assert!(d.message.starts_with("Sum 's' has no signal 'outt'"), "{d}");
    assert_eq!((d.line, d.column), (Some(21), Some(34)));
    assert_eq!(d.help.as_deref(), Some("did you mean 'out'?"));

    // Two connections to one input.
    let d = first_error(osp(
        dir,
        sum,
        &(both.clone() + &signal("b", "x", "s", "in[1]")),
    ));
    assert_eq!(
        d.message,
        "function 's' has more than one connection to its signal 'in[1]'"
    );
    assert_eq!(d.line, Some(19));

    // inputCount.
    let d = first_error(osp(dir, "    <Sum name=\"s\" inputCount=\"0\"/>\n", ""));
    assert_eq!(d.message, "inputCount must be a positive integer, not '0'");
    assert_eq!((d.line, d.column), (Some(8), Some(31)));

    // Two functions of one name.
    let d = first_error(osp(
        dir,
        "    <LinearTransformation name=\"s\"/>\n    <Sum name=\"s\" inputCount=\"1\"/>\n",
        "",
    ));
    assert_eq!(d.message, "two functions are called 's'");
    assert_eq!(d.line, Some(9));

    // Signal groups: only a VectorSum has them.
    let d = first_error(osp(
        dir,
        sum,
        &(both.clone() + &group("w", "outputs", "s", "in[0]")),
    ));
    assert!(
        d.message
            .starts_with("'s' is a Sum, whose signals are single"),
        "{d}"
    );
    let vsum = "    <VectorSum name=\"v\" inputCount=\"1\" dimension=\"4\"/>\n";
    // A group of three variables for a vector of four.
    let d = first_error(osp(dir, vsum, &group("w", "outputs", "v", "in[0]")));
    assert_eq!(
        d.message,
        "variable group 'outputs' of simulator 'w' has 3 variable(s), but VectorSum 'v' has dimension 4"
    );
    assert_eq!((d.line, d.column), (Some(12), Some(42)));
    // An unknown group of the function, with the nearest.
    let vsum = "    <VectorSum name=\"v\" inputCount=\"1\" dimension=\"3\"/>\n";
    let d = first_error(osp(dir, vsum, &group("w", "outputs", "v", "in[00]")));
    assert!(d.message.contains("not 'in[00]'"), "{d}");
    assert_eq!(d.help.as_deref(), Some("did you mean 'in[0]'?"));
    // numericType.
    let d = first_error(osp(
        dir,
        "    <VectorSum name=\"v\" inputCount=\"1\" dimension=\"3\" numericType=\"int\"/>\n",
        &group("w", "outputs", "v", "in[0]"),
    ));
    assert_eq!(
        d.message,
        "numericType must be 'real' or 'integer', not 'int'"
    );
}

#[test]
fn osp_vector_sum_details_as_libcosim_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // numericType, which libcosim's reader ignores: honoured, with a note.
    let vsum =
        "    <VectorSum name=\"v\" inputCount=\"1\" dimension=\"2\" numericType=\"Real\"/>\n";
    // A group of three variables for a vector of two: its first two, as
    // libcosim, with a warning; scalar SignalConnections to its signals
    // are accepted too.
    let imp = osp(
        dir,
        vsum,
        &(group("w", "outputs", "v", "in[0]")
            + &signal("w", "u1", "v", "out[0]")
            + &signal("w", "u2", "v", "out[0]")),
    )
    .unwrap();
    let ds = imp.diagnostics();
    let n = find(ds, "ignores numericType");
    assert_eq!(n.severity, Severity::Note);
    let w = find(
        ds,
        "its first 2 join VectorSum 'v' of dimension 2, as in libcosim",
    );
    assert_eq!(w.severity, Severity::Warning);
    let n = find(ds, "cosim connects each, libcosim only the first");
    assert_eq!(n.line, Some(19));
    let toml = imp.toml();
    assert!(
        toml.contains("from = \"w.y2\"\nto = \"v.in[0][1]\""),
        "{toml}"
    );
    assert!(!toml.contains("v.in[0][2]"), "{toml}");
    assert!(
        toml.contains("from = \"v.out[0]\"\nto = \"w.u2\""),
        "{toml}"
    );
    // Integers: numeric_type = "integer" in the TOML.
    let imp = osp(
        dir,
        "    <VectorSum name=\"v\" inputCount=\"1\" dimension=\"3\" numericType=\"integer\"/>\n",
        &group("w", "outputs", "v", "in[0]"),
    )
    .unwrap();
    assert!(
        imp.toml()
            .contains("dimension = 3\nnumeric_type = \"integer\"\n")
    );
    // ... which the scenario layer then refuses for Real variables, in the OSP file.
    let scenario = imp.scenario().unwrap();
    let e = imp.resolve(&scenario).unwrap_err();
    let d = e.errors().next().unwrap();
    assert!(
        d.message
            .starts_with("type mismatch: 'w.y1' is Float64 but 'v.in[0][0]' is integer"),
        "{d}"
    );
    assert_eq!(d.line, Some(12), "{d}");
}
