//! Fuzz-like robustness: the parser must return (Ok or an error), never
//! panic, on truncated, mutated, deeply nested or otherwise hostile input.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;

use cosim_fmi::FmiError;
use cosim_fmi::model_description::parse_model_description;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(path).expect("fixture")
}

/// Runs the parser; any error must be a located ModelDescription error with
/// a line inside the document.
fn check(xml: &str) {
    match parse_model_description(xml, Path::new("f.xml")) {
        Ok(_) => {}
        Err(FmiError::ModelDescription { line, column, .. }) => {
            let lines = xml.split('\n').count();
            assert!(line >= 1 && line <= lines, "line {line} of {lines}");
            assert!(column >= 1);
        }
        Err(other) => panic!("unexpected error kind: {other:?}"),
    }
}

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn every_truncation() {
    for name in ["fmi2_chassis.xml", "fmi3_drive.xml"] {
        let xml = fixture(name);
        for cut in (0..xml.len()).filter(|&i| xml.is_char_boundary(i)) {
            check(&xml[..cut]);
        }
    }
}

#[test]
fn random_mutations() {
    const ALPHABET: &[&str] = &[
        "<",
        ">",
        "/",
        "\"",
        "=",
        " ",
        "\n",
        "&",
        "&amp;",
        "&#0;",
        "&#x110000;",
        "<!--",
        "-->",
        "<![CDATA[",
        "]]>",
        "9",
        "-",
        "1e999",
        "é",
        "\u{0}",
        "a",
        "index",
        "dependencies",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for name in ["fmi2_chassis.xml", "fmi3_drive.xml"] {
        let original = fixture(name);
        for _ in 0..1500 {
            let mut xml = original.clone();
            for _ in 0..1 + rng.below(4) {
                let mut at = rng.below(xml.len() + 1);
                while !xml.is_char_boundary(at) {
                    at -= 1;
                }
                match rng.below(3) {
                    0 => {
                        let s = ALPHABET[rng.below(ALPHABET.len())];
                        xml.insert_str(at, s);
                    }
                    1 => {
                        let mut end = (at + 1 + rng.below(20)).min(xml.len());
                        while !xml.is_char_boundary(end) {
                            end += 1;
                        }
                        xml.replace_range(at..end, "");
                    }
                    _ => {
                        // Swap a digit for another one (out-of-range indices).
                        if let Some(pos) = xml[at..].find(|c: char| c.is_ascii_digit()) {
                            let p = at + pos;
                            let d = char::from(b'0' + rng.below(10) as u8);
                            xml.replace_range(p..p + 1, &d.to_string());
                        }
                    }
                }
            }
            check(&xml);
        }
    }
}

#[test]
fn deep_nesting() {
    let wrap = |depth: usize| {
        let mut xml = String::from(
            "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n<VendorAnnotations>",
        );
        xml.push_str(&"<a>".repeat(depth));
        xml.push_str(&"</a>".repeat(depth));
        xml.push_str("</VendorAnnotations></fmiModelDescription>");
        xml
    };
    // Deep vendor content is skipped.
    assert!(parse_model_description(&wrap(3000), Path::new("deep.xml")).is_ok());
    // Absurd nesting is refused with a located error, without recursion
    // or unbounded memory.
    match parse_model_description(&wrap(200_000), Path::new("deep.xml")) {
        Err(FmiError::ModelDescription { line, message, .. }) => {
            assert_eq!(line, 2);
            assert!(message.contains("nested more than"), "{message}");
        }
        other => panic!("unexpected: {other:?}"),
    }

    // Deep anywhere, and unclosed.
    let depth = 200_000;
    let mut xml =
        String::from("<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">");
    xml.push_str(&"<ModelVariables>".repeat(depth));
    check(&xml);
    xml.push_str(&"</ModelVariables>".repeat(depth));
    xml.push_str("</fmiModelDescription>");
    check(&xml);
}

#[test]
fn long_single_line_and_many_lines() {
    // Locations are computed incrementally: a long single line with many
    // elements and a file of blank lines stay fast.
    let mut xml = String::from(
        "<fmiModelDescription fmiVersion=\"3.0\" modelName=\"M\" instantiationToken=\"t\"><ModelVariables>",
    );
    for i in 0..100_000 {
        xml.push_str(&format!("<Float64 name=\"x{i}\" valueReference=\"{i}\"/>"));
    }
    xml.push_str(
        "<Float64 name=\"bad\" valueReference=\"0\"/></ModelVariables></fmiModelDescription>",
    );
    match parse_model_description(&xml, Path::new("long.xml")) {
        Err(FmiError::ModelDescription { line, column, .. }) => {
            assert_eq!(line, 1);
            assert!(column > 3_000_000, "{column}");
        }
        other => panic!("unexpected: {other:?}"),
    }
    let blank = format!("{}<x/>", "\n".repeat(5_000_000));
    match parse_model_description(&blank, Path::new("blank.xml")) {
        Err(FmiError::ModelDescription { line, .. }) => assert_eq!(line, 5_000_001),
        other => panic!("unexpected: {other:?}"),
    }
}

#[test]
fn hostile_documents() {
    let huge_number = "9".repeat(10_000);
    let cases = vec![
        String::new(),
        "\u{0}\u{1}\u{2}".to_string(),
        "<".to_string(),
        "<?xml".to_string(),
        "<!DOCTYPE x [<!ENTITY a \"&b;&b;\"><!ENTITY b \"&a;\">]><x/>".to_string(),
        // Billion laughs: custom entities are never expanded.
        "<!DOCTYPE l [<!ENTITY l0 \"ha\"><!ENTITY l1 \"&l0;&l0;&l0;\">]>\
         <fmiModelDescription fmiVersion=\"2.0\" modelName=\"&l1;\" guid=\"g\"/>"
            .to_string(),
        format!(
            "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"><DefaultExperiment stopTime=\"{huge_number}\"/></fmiModelDescription>"
        ),
        format!(
            "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"><ModelVariables><ScalarVariable name=\"a\" valueReference=\"{huge_number}\"><Real/></ScalarVariable></ModelVariables></fmiModelDescription>"
        ),
        format!(
            "<fmiModelDescription fmiVersion=\"3.0\" modelName=\"M\" instantiationToken=\"t\"><ModelVariables><Int64 name=\"a\" valueReference=\"0\" start=\"{huge_number}\"/></ModelVariables></fmiModelDescription>"
        ),
        format!(
            "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"><ModelStructure><Outputs><Unknown index=\"{huge_number}\"/></Outputs></ModelStructure></fmiModelDescription>"
        ),
        "<fmiModelDescription fmiVersion=\"\" modelName=\"M\" guid=\"g\"/>".to_string(),
        "<fmiModelDescription fmiVersion=\"3\" modelName=\"M\" instantiationToken=\"t\"/>".to_string(),
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\"><ModelVariables><ScalarVariable name=\"a\" valueReference=\"0\"><Real derivative=\"1\"/></ScalarVariable></ModelVariables></fmiModelDescription>".to_string(),
        "<fmiModelDescription fmiVersion=\"3.0\" modelName=\"M\" instantiationToken=\"t\"><ModelVariables><Binary name=\"a\" valueReference=\"0\"><Start value=\"abc\"/></Binary></ModelVariables></fmiModelDescription>".to_string(),
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\u{10FFFF}</fmiModelDescription>".to_string(),
    ];
    for xml in &cases {
        check(xml);
    }
}

#[test]
fn random_bytes_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("modelDescription.xml");
    let mut rng = Rng(42);
    for _ in 0..200 {
        let len = rng.below(300);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        std::fs::write(&path, &bytes).expect("write");
        match cosim_fmi::model_description::parse_model_description_file(&path) {
            Ok(_) | Err(FmiError::ModelDescription { .. }) => {}
            Err(other) => panic!("unexpected error kind: {other:?}"),
        }
    }
}
