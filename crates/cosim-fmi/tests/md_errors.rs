//! Malformed model descriptions: every error is a
//! `FmiError::ModelDescription` naming the file and the line (and column)
//! of the offending element.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;

use cosim_fmi::FmiError;
use cosim_fmi::model_description::parse_model_description;

/// Parses `xml`, expects an error, returns (line, column, message).
fn error_of(xml: &str) -> (usize, usize, String) {
    match parse_model_description(xml, Path::new("fmu.fmu/modelDescription.xml")) {
        Ok(_) => panic!("expected an error for:\n{xml}"),
        Err(FmiError::ModelDescription {
            file,
            line,
            column,
            message,
        }) => {
            assert_eq!(file, Path::new("fmu.fmu/modelDescription.xml"));
            (line, column, message)
        }
        Err(other) => panic!("wrong error kind: {other:?}"),
    }
}

const FMI2_HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="{g}">
  <CoSimulation modelIdentifier="m"/>
  <ModelVariables>
"#; // 4 lines: the first variable starts on line 5

const FMI3_HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="{t}">
  <CoSimulation modelIdentifier="m"/>
  <ModelVariables>
"#;

fn fmi2(variables: &str, structure: &str) -> String {
    format!(
        "{FMI2_HEAD}{variables}  </ModelVariables>\n  <ModelStructure>\n{structure}  </ModelStructure>\n</fmiModelDescription>\n"
    )
}

fn fmi3(variables: &str, structure: &str) -> String {
    format!(
        "{FMI3_HEAD}{variables}  </ModelVariables>\n  <ModelStructure>\n{structure}  </ModelStructure>\n</fmiModelDescription>\n"
    )
}

#[test]
fn unclosed_tag() {
    let xml = fmi2(
        concat!(
            "    <ScalarVariable name=\"a\" valueReference=\"0\">\n", // 5
            "      <Real/>\n",                                        // 6
            "    <ScalarVariable name=\"b\" valueReference=\"1\">\n", // 7 (never closed)
            "      <Real/>\n",                                        // 8
            "    </ScalarVariable>\n",                                // 9
        ),
        "",
    );
    let (line, column, message) = error_of(&xml);
    // The inner <ScalarVariable> at line 7 is closed by line 9; the one at
    // line 5 is the one left open when </ModelVariables> arrives.
    assert_eq!(line, 5, "{message}");
    assert_eq!(column, 5);
    assert!(
        message.contains("<ScalarVariable> is not closed"),
        "{message}"
    );
    assert!(
        message.contains("</ModelVariables> at line 10"),
        "{message}"
    );
}

#[test]
fn unclosed_at_end_of_file() {
    let xml =
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n  <ModelVariables>\n";
    let (line, _, message) = error_of(xml);
    assert_eq!(line, 2, "{message}");
    assert!(message.contains("<ModelVariables> is not closed before the end of the file"));
}

#[test]
fn broken_markup() {
    let xml = fmi2(
        concat!(
            "    <ScalarVariable name=\"a\" valueReference=\"0\">\n", // 5
            "      <Real start=\"1\"/>\n",                            // 6
            "    </ScalarVariable>\n",                                // 7
            "    <ScalarVariable name=\"b\" valueReference=\"1\" <Real/>\n", // 8
        ),
        "",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 8, "{message}");
}

#[test]
fn missing_value_reference() {
    let xml = fmi2(
        concat!(
            "    <ScalarVariable name=\"a\" valueReference=\"0\">\n", // 5
            "      <Real/>\n",                                        // 6
            "    </ScalarVariable>\n",                                // 7
            "    <ScalarVariable name=\"b\" causality=\"output\">\n", // 8
            "      <Real/>\n",
            "    </ScalarVariable>\n",
        ),
        "",
    );
    let (line, column, message) = error_of(&xml);
    assert_eq!((line, column), (8, 5), "{message}");
    assert!(message.contains("valueReference"), "{message}");
    assert!(message.contains("'b'"), "{message}");
}

#[test]
fn missing_name_and_guid_and_model_identifier() {
    let xml = fmi2(
        "    <ScalarVariable valueReference=\"0\"><Real/></ScalarVariable>\n",
        "",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 5);
    assert!(message.contains("'name'"), "{message}");

    let (line, _, message) =
        error_of("\n<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\"/>");
    assert_eq!(line, 2);
    assert!(message.contains("'guid'"), "{message}");

    let (line, _, message) =
        error_of("<fmiModelDescription fmiVersion=\"3.0\" modelName=\"M\" guid=\"g\"/>");
    assert_eq!(line, 1);
    assert!(message.contains("'instantiationToken'"), "{message}");

    let xml = "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n\n  <CoSimulation/>\n</fmiModelDescription>";
    let (line, _, message) = error_of(xml);
    assert_eq!(line, 3);
    assert!(message.contains("'modelIdentifier'"), "{message}");
}

#[test]
fn bad_causality() {
    let xml = fmi2(
        concat!(
            "    <ScalarVariable name=\"a\" valueReference=\"0\">\n", // 5
            "      <Real/>\n",
            "    </ScalarVariable>\n",
            "    <ScalarVariable name=\"b\" valueReference=\"1\"\n", // 8
            "        causality=\"sideways\">\n",
            "      <Real/>\n",
            "    </ScalarVariable>\n",
        ),
        "",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 8, "{message}");
    assert!(
        message.contains("unknown causality \"sideways\""),
        "{message}"
    );

    // structuralParameter exists in FMI 3 only.
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"0\" causality=\"structuralParameter\"><Integer start=\"1\"/></ScalarVariable>\n",
        "",
    );
    let (line, _, _) = error_of(&xml);
    assert_eq!(line, 5);
}

#[test]
fn dependency_out_of_range() {
    let xml = fmi2(
        concat!(
            "    <ScalarVariable name=\"u\" valueReference=\"0\" causality=\"input\"><Real start=\"0\"/></ScalarVariable>\n", // 5
            "    <ScalarVariable name=\"y\" valueReference=\"1\" causality=\"output\"><Real/></ScalarVariable>\n", // 6
        ),
        concat!(
            "    <Outputs>\n",                                     // 9
            "      <Unknown index=\"2\" dependencies=\"1 3\"/>\n", // 10
            "    </Outputs>\n",
        ),
    );
    let (line, column, message) = error_of(&xml);
    assert_eq!((line, column), (10, 7), "{message}");
    assert!(message.contains("index 3 is out of range"), "{message}");

    // Index 0 is out of range too (1-based).
    let xml = fmi2(
        "    <ScalarVariable name=\"y\" valueReference=\"1\" causality=\"output\"><Real/></ScalarVariable>\n",
        "    <Outputs>\n      <Unknown index=\"0\"/>\n    </Outputs>\n",
    );
    let (line, _, _) = error_of(&xml);
    assert_eq!(line, 9);

    // FMI 3: by value reference.
    let xml = fmi3(
        concat!(
            "    <Float64 name=\"u\" valueReference=\"10\" causality=\"input\" start=\"0\"/>\n", // 5
            "    <Float64 name=\"y\" valueReference=\"11\" causality=\"output\"/>\n", // 6
        ),
        "    <Output valueReference=\"11\" dependencies=\"10 12\"/>\n", // 9
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 9, "{message}");
    assert!(
        message.contains("no variable has valueReference 12"),
        "{message}"
    );
}

#[test]
fn dependencies_kind_length_mismatch() {
    let xml = fmi2(
        "    <ScalarVariable name=\"u\" valueReference=\"0\" causality=\"input\"><Real start=\"0\"/></ScalarVariable>\n    <ScalarVariable name=\"y\" valueReference=\"1\" causality=\"output\"><Real/></ScalarVariable>\n",
        "    <Outputs>\n      <Unknown index=\"2\" dependencies=\"1\" dependenciesKind=\"fixed constant\"/>\n    </Outputs>\n",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 10, "{message}");
}

#[test]
fn non_numeric_start() {
    let xml = fmi2(
        concat!(
            "    <ScalarVariable name=\"a\" valueReference=\"0\" causality=\"parameter\" variability=\"fixed\">\n", // 5
            "      <Real start=\"1.0\"/>\n", // 6
            "    </ScalarVariable>\n",
            "    <ScalarVariable name=\"b\" valueReference=\"1\" causality=\"parameter\" variability=\"fixed\">\n", // 8
            "      <Real start=\"one\"/>\n", // 9
            "    </ScalarVariable>\n",
        ),
        "",
    );
    let (line, column, message) = error_of(&xml);
    // The line of the element carrying the start attribute.
    assert_eq!((line, column), (9, 7), "{message}");
    assert!(message.contains("start=\"one\""), "{message}");

    // FMI 3 list with one bad element, and an integer out of range.
    let xml = fmi3(
        "    <Float64 name=\"a\" valueReference=\"0\" start=\"1 2 x\"><Dimension start=\"3\"/></Float64>\n",
        "",
    );
    assert_eq!(error_of(&xml).0, 5);
    let xml = fmi3(
        "    <Float64 name=\"a\" valueReference=\"0\"/>\n    <UInt8 name=\"b\" valueReference=\"1\" start=\"256\"/>\n",
        "",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 6);
    assert!(message.contains("UInt8"), "{message}");
}

#[test]
fn bad_numbers_elsewhere() {
    let xml = "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n  <DefaultExperiment stopTime=\"ten\"/>\n</fmiModelDescription>";
    assert_eq!(error_of(xml).0, 2);
    let xml = "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n  <CoSimulation modelIdentifier=\"m\" maxOutputDerivativeOrder=\"-1\"/>\n</fmiModelDescription>";
    assert_eq!(error_of(xml).0, 2);
    let xml = "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n  <CoSimulation modelIdentifier=\"m\" canGetAndSetFMUstate=\"yes\"/>\n</fmiModelDescription>";
    assert_eq!(error_of(xml).0, 2);
    // A huge value reference.
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"99999999999999999999999\"><Real/></ScalarVariable>\n",
        "",
    );
    assert_eq!(error_of(&xml).0, 5);
    // Huge float exponents are fine (they overflow to infinity).
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"0\"><Real start=\"1e999\"/></ScalarVariable>\n",
        "",
    );
    assert!(parse_model_description(&xml, Path::new("x")).is_ok());
}

#[test]
fn duplicate_value_reference_fmi3() {
    let xml = fmi3(
        concat!(
            "    <Float64 name=\"a\" valueReference=\"7\"/>\n", // 5
            "    <Int32 name=\"b\" valueReference=\"8\"/>\n",   // 6
            "    <Int32 name=\"c\" valueReference=\"7\"/>\n",   // 7
        ),
        "",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 7, "{message}");
    assert!(message.contains("'a' (line 5)"), "{message}");
}

#[test]
fn duplicate_variable_name() {
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"0\"><Real/></ScalarVariable>\n    <ScalarVariable name=\"a\" valueReference=\"1\"><Real/></ScalarVariable>\n",
        "",
    );
    assert_eq!(error_of(&xml).0, 6);
}

#[test]
fn undefined_declared_type() {
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"0\">\n      <Real declaredType=\"Nope\"/>\n    </ScalarVariable>\n",
        "",
    );
    let (line, _, message) = error_of(&xml);
    assert_eq!(line, 6);
    assert!(message.contains("'Nope'"), "{message}");
}

#[test]
fn missing_or_double_type_element() {
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"0\"/>\n",
        "",
    );
    assert_eq!(error_of(&xml).0, 5);
    let xml = fmi2(
        "    <ScalarVariable name=\"a\" valueReference=\"0\">\n      <Real/>\n      <Integer/>\n    </ScalarVariable>\n",
        "",
    );
    assert_eq!(error_of(&xml).0, 7);
}

#[test]
fn bad_dimension() {
    let xml = fmi3(
        "    <Float64 name=\"a\" valueReference=\"0\">\n      <Dimension/>\n    </Float64>\n",
        "",
    );
    assert_eq!(error_of(&xml).0, 6);
}

#[test]
fn document_level_errors() {
    // Empty document, whitespace only, no root.
    let (line, _, message) = error_of("");
    assert_eq!(line, 1);
    assert!(message.contains("no root element"), "{message}");
    let (line, _, _) = error_of("\n\n  ");
    assert_eq!(line, 3);
    // Wrong root.
    let (line, _, message) = error_of("<?xml version=\"1.0\"?>\n<html/>");
    assert_eq!(line, 2);
    assert!(message.contains("<html>"), "{message}");
    // Unsupported version.
    let (_, _, message) =
        error_of("<fmiModelDescription fmiVersion=\"1.0\" modelName=\"M\" guid=\"g\"/>");
    assert!(message.contains("unsupported fmiVersion"), "{message}");
    // Two roots.
    let (line, _, _) = error_of(
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"/>\n<fmiModelDescription/>",
    );
    assert_eq!(line, 2);
    // Stray closing tag.
    let (line, _, _) = error_of("<a/>\n</b>");
    assert_eq!(line, 2);
    // Duplicate attribute.
    let (line, _, _) = error_of(
        "<fmiModelDescription fmiVersion=\"2.0\" fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"/>",
    );
    assert_eq!(line, 1);
}

#[test]
fn invalid_utf8_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("modelDescription.xml");
    let mut bytes = b"<fmiModelDescription fmiVersion=\"2.0\"\n modelName=\"".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x41]);
    bytes.extend_from_slice(b"\" guid=\"g\"/>");
    std::fs::write(&path, &bytes).expect("write");
    match cosim_fmi::model_description::parse_model_description_file(&path) {
        Err(FmiError::ModelDescription {
            file,
            line,
            column,
            message,
        }) => {
            assert_eq!(file, path);
            assert_eq!((line, column), (2, 13), "{message}");
            assert!(message.contains("UTF-8"), "{message}");
        }
        other => panic!("unexpected: {other:?}"),
    }
    // A missing file is an I/O error naming the file.
    match cosim_fmi::model_description::parse_model_description_file(&dir.path().join("nope.xml")) {
        Err(FmiError::Io { path, .. }) => assert!(path.ends_with("nope.xml")),
        other => panic!("unexpected: {other:?}"),
    }
}
