//! `[[inputs]]` and `--input-file`: reading the table, matching columns to
//! inputs, and the errors and warnings on the way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::*;
use cosim_scenario::{Overrides, Scenario};

/// BASE with `inputs` appended, as if read from `dir/s.toml`.
fn in_dir(dir: &Path, inputs: &str) -> (String, Scenario) {
    let text = format!("{BASE}{inputs}");
    let s = Scenario::from_str(&text, dir.join("s.toml")).unwrap_or_else(|e| panic!("{e}"));
    (text, s)
}

#[test]
fn inputs_tables_are_checked_before_any_file_is_read() {
    let text = format!("{BASE}\n[[inputs]]\nfiel = \"u.csv\"\n");
    let e = parse(&text).unwrap_err();
    assert_at(&e, &text, "fiel");
    assert_eq!(e.help.as_deref(), Some("did you mean 'file'?"));
    let text = format!("{BASE}\n[[inputs]]\ncolumns = {{ \"chassis.F\" = \"f\" }}\n");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("[[inputs]] has no 'file'"), "{e}");
    let text = format!("{BASE}\n[[inputs]]\nfile = \"u.csv\"\ncolumns = [\"f\"]\n");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("expected a table for 'columns'"), "{e}");
    let text = format!("{BASE}\n[[inputs]]\nfile = \"u.csv\"\ncolumns = {{}}\n");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("'columns' is empty"), "{e}");
    let text =
        format!("{BASE}\n[[inputs]]\nfile = \"u.csv\"\ncolumns = {{ \"chasis.F\" = \"f\" }}\n");
    let e = parse(&text).unwrap_err();
    assert_at_offset(&e, &text, "\"chasis.F\"", 1);
    assert_eq!(e.help.as_deref(), Some("did you mean 'chassis'?"));
    let text = format!("{BASE}\n[[inputs]]\nfile = \"u.csv\"\ncolumns = {{ \"chassis.F\" = 1 }}\n");
    let e = parse(&text).unwrap_err();
    assert!(e.message.contains("expected the name of a column"), "{e}");
    // A file that does not exist: at load, at its 'file' value.
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{BASE}\n[[inputs]]\nfile = \"nowhere.csv\"\n");
    let path = dir.path().join("s.toml");
    std::fs::write(&path, &text).unwrap();
    std::fs::create_dir_all(dir.path().join("fmus")).unwrap();
    std::fs::write(dir.path().join("fmus/chassis.fmu"), "").unwrap();
    std::fs::write(dir.path().join("fmus/wheel.fmu"), "").unwrap();
    let e = Scenario::load(&path).unwrap_err();
    assert_at(&e, &text, "\"nowhere.csv\"");
    assert!(
        e.message.starts_with("the input file does not exist"),
        "{e}"
    );
}

#[test]
fn the_header_names_inputs_and_columns_map_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("u.csv"),
        "time [s],chassis.locked,wheel.z_road [m],speed\n0,false,0,1\n2,true,0.1,2\n",
    )
    .unwrap();
    let (_, s) = in_dir(
        dir.path(),
        "\n[[inputs]]\nfile = \"u.csv\"\ncolumns = { chassis.locked = \"chassis.locked\", \"wheel.z_road\" = \"wheel.z_road\", wheel.x_c = \"speed\" }\n",
    );
    let r = resolve_scenario(&s).unwrap_or_else(|e| panic!("{e}"));
    let feeds: Vec<(&str, bool)> = r.inputs[0]
        .feeds
        .iter()
        .map(|f| (f.column_name.as_str(), f.discrete))
        .collect();
    assert_eq!(
        feeds,
        [
            ("chassis.locked", true),
            ("wheel.z_road [m]", false),
            ("speed", false)
        ]
    );
    // Fed inputs are not "not connected"; the file ends before the run.
    let warnings: Vec<String> = r.warnings.iter().map(|w| w.message.clone()).collect();
    assert!(
        !warnings.iter().any(|w| w.contains("not connected")),
        "{warnings:?}"
    );
    assert!(
        !warnings.iter().any(|w| w.contains("covers t =")),
        "{warnings:?}"
    );
    // Without columns, every column must name an input.
    let (_, s) = in_dir(dir.path(), "\n[[inputs]]\nfile = \"u.csv\"\n");
    let e = resolve_scenario(&s).unwrap_err();
    assert_eq!((e.line, e.column), (Some(1), Some(42)), "{e}");
    assert!(e.message.contains("column 'speed' names no input"), "{e}");
}

#[test]
fn command_line_input_files_and_output_variables() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.csv");
    std::fs::write(&file, "time,chassis.F\n0,1\n0.5,2\n").unwrap();
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&Overrides {
        input_files: vec![file.clone()],
        ..Overrides::default()
    })
    .unwrap();
    let e = resolve_scenario(&s).unwrap_err();
    assert!(
        e.message
            .contains("input 'chassis.F' is fed both by the connection on line 15"),
        "{e}"
    );
    assert_eq!(e.file, file);
    std::fs::write(&file, "time,wheel.x_c\n0,1\n0.5,2\n").unwrap();
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&Overrides {
        input_files: vec![file.clone()],
        start: Some(0.25),
        output_variables: vec!["wheel.x_*".into(), "chassis.v_c".into()],
        ..Overrides::default()
    })
    .unwrap();
    let r = resolve_scenario(&s).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.start, 0.25);
    assert_eq!(r.outputs.variables.len(), 2);
    let w: Vec<String> = r.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter()
            .any(|w| w.contains("in command-line argument '--input-file")
                && w.contains("after t = 0.5 s the last row's values are held (column wheel.x_c)")),
        "{w:?}"
    );
    let mut s = parse(BASE).unwrap();
    let e = s
        .apply_overrides(&Overrides {
            output_variables: vec!["whel.x_c".into()],
            ..Overrides::default()
        })
        .unwrap_err();
    assert_eq!(e.argument.as_deref(), Some("--output-variables whel.x_c"));
    assert_eq!(e.help.as_deref(), Some("did you mean 'wheel'?"));
    let mut s = parse(BASE).unwrap();
    s.apply_overrides(&Overrides {
        output_variables: vec!["wheel.nothing*".into()],
        ..Overrides::default()
    })
    .unwrap();
    let e = resolve_scenario(&s).unwrap_err();
    assert_eq!(
        e.argument.as_deref(),
        Some("--output-variables wheel.nothing*")
    );
    let mut s = parse(BASE).unwrap();
    let e = s
        .apply_overrides(&Overrides {
            start: Some(1.0),
            ..Overrides::default()
        })
        .unwrap_err();
    assert_eq!(e.argument.as_deref(), Some("--start 1"));
    assert!(e.message.contains("not before the stop time 1 s"), "{e}");
}
