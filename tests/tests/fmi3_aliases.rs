//! FMI 3 aliases end to end, on the kit's FMI 3 `Gain` (`y = k * u`),
//! whose input `u` and parameter `k` have the `<Alias>` names `u_in` and
//! `gain`: set, connected, fed from a file, exposed and traced by alias, the
//! trace column under the name given. Also the FMUs `cosim` cannot run (no
//! `<CoSimulation>`), `has_source_files`, and variables named for the
//! trace that cannot be traced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_tests::{cosim, fmi2, fmi3};
use zip::write::SimpleFileOptions;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts exit status `code`, no panic, and every key word in stderr;
/// returns stderr.
#[track_caller]
fn status(out: &Output, code: i32, keys: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for k in keys {
        assert!(err.contains(k), "missing {k:?} in:\n{err}");
    }
    err
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The trace as its header and its rows of numbers.
fn trace(dir: &Path) -> (String, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(dir.join("trace.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

#[test]
fn inspect_lists_the_aliases_under_their_variables() {
    let out = cosim(&["inspect", s(&fmi3("Gain"))]);
    status(&out, 0, &[]);
    let text = stdout(&out);
    for (alias, variable) in [("u_in", "u"), ("gain", "k")] {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("    {alias} ")))
            .unwrap_or_else(|| panic!("no row for {alias} in:\n{text}"));
        assert!(
            row.contains(&format!("alias of {variable} ")),
            "{row:?}\n{text}"
        );
    }
    let out = cosim(&["inspect", s(&fmi3("Gain")), "--json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let inputs = json["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["causality"] == "input")
        .unwrap();
    assert_eq!(inputs["variables"][0]["name"], "u");
    assert_eq!(inputs["variables"][0]["aliases"][0]["name"], "u_in");
    assert_eq!(
        inputs["variables"][0]["aliases"][0]["description"],
        "Input u, by another name"
    );
    assert_eq!(json["interfaces"][0]["interface"], "CoSimulation");
    assert_eq!(json["interfaces"][0]["model_identifier"], "Gain");
    assert!(json["not_runnable"].is_null());
}

/// a -> b by alias: `a.y` feeds `b.u_in`; `a` gets `gain = 2` and `u_in =
/// 1.5`, `b` gets `gain = 3` from `--set`.
const CHAIN: &str = r#"[simulation]
stop = 0.3

[master]
step = 0.1

[[subsystems]]
name = "a"
fmu = "GAIN"
parameters = { gain = 2.0 }
start = { u_in = 1.5 }

[[subsystems]]
name = "b"
fmu = "GAIN"

[[connections]]
from = "a.y"
to = "b.u_in"

[outputs]
variables = ["a.u_in", "a.u", "a.gain", "b.u_in", "b.*"]
"#;

#[test]
fn a_chain_connected_set_and_traced_by_alias() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("chain.toml");
    std::fs::write(&scenario, CHAIN.replace("GAIN", s(&fmi3("Gain")))).unwrap();
    let out_dir = dir.path().join("out");
    for isolation in ["none", "process"] {
        let out = cosim(&[
            "run",
            "--no-progress",
            s(&scenario),
            "--set",
            "b.gain=3",
            "--isolation",
            isolation,
            "-o",
            s(&out_dir),
        ]);
        status(&out, 0, &[]);
        let (header, rows) = trace(&out_dir);
        // The column is the name given; a variable traced by its name and
        // an alias has both columns; a glob matches the variables' names.
        assert_eq!(
            header, "time [s],a.u_in,a.u,a.gain,b.u_in,b.u,b.y",
            "{isolation}"
        );
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert_eq!(r[1..], [1.5, 1.5, 2.0, 3.0, 3.0, 9.0], "{isolation}: {r:?}");
        }
    }
    // A variable is given one value, whatever its names.
    std::fs::write(
        &scenario,
        CHAIN
            .replace("GAIN", s(&fmi3("Gain")))
            .replace("{ gain = 2.0 }", "{ gain = 2.0, k = 4.0 }"),
    )
    .unwrap();
    let out = cosim(&["check", s(&scenario)]);
    status(
        &out,
        2,
        &[
            "chain.toml:10:32: error: 'gain' and 'k' are one variable, 'k' (by its name and an alias): give it one value",
        ],
    );
}

#[test]
fn one_fmu_fed_set_and_traced_by_alias() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "time,u_in\n0,1\n1,3\n").unwrap();
    let out_dir = dir.path().join("out");
    let out = cosim(&[
        "run",
        "--no-progress",
        s(&fmi3("Gain")),
        "--stop",
        "0.5",
        "--set",
        "gain=2",
        "--input-file",
        s(&input),
        "--output-variables",
        "y",
        "Gain.u_in",
        "gain",
        "-o",
        s(&out_dir),
    ]);
    status(&out, 0, &[]);
    let (header, rows) = trace(&out_dir);
    assert_eq!(header, "time [s],Gain.y,Gain.u_in,Gain.gain");
    let last = rows.last().unwrap();
    // u(0.5) = 2 from the file, y = 2 u.
    assert!((last[0] - 0.5).abs() < 1e-12, "{last:?}");
    assert!((last[2] - 2.0).abs() < 1e-12, "{last:?}");
    assert!((last[1] - 4.0).abs() < 1e-12, "{last:?}");
    assert_eq!(last[3], 2.0);
}

// ----- FMUs without <CoSimulation> -------------------------------------------

fn write_zip(path: &Path, entries: &[(&str, &[u8])]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, data) in entries {
        z.start_file(*name, SimpleFileOptions::default()).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
}

/// An FMI 3 FMU (a model description, no binary) declaring `interfaces`.
fn fmu_declaring(dir: &Path, name: &str, interfaces: &str) -> PathBuf {
    let md = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="{name}" instantiationToken="t">
  {interfaces}
  <DefaultExperiment stopTime="1" stepSize="0.1"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="x" valueReference="1" causality="output"/>
  </ModelVariables>
  <ModelStructure><Output valueReference="1"/></ModelStructure>
</fmiModelDescription>"#
    );
    let path = dir.join(format!("{name}.fmu"));
    write_zip(
        &path,
        &[
            ("modelDescription.xml", md.as_bytes()),
            ("sources/all.c", b"/* the model */"),
        ],
    );
    path
}

#[test]
fn fmus_without_co_simulation_or_model_exchange_are_refused_saying_what_runs_them() {
    let dir = tempfile::tempdir().unwrap();
    // (Model Exchange FMUs run: tests/tests/me_runs.rs; Scheduled
    // Execution ones: tests/tests/fmi3_clocks.rs.)
    let cases = [(
        "Bare",
        "",
        "the FMU declares no interface (no <CoSimulation>, <ModelExchange> or <ScheduledExecution> element; cosim runs each of them)",
        "export the model again with one of them",
        "none declared",
    )];
    for (name, interfaces, why, what, listed) in cases {
        let fmu = fmu_declaring(dir.path(), name, interfaces);
        let what = what.replace("FMU", s(&fmu));
        // The FMU on its own.
        for cmd in ["run", "check"] {
            let out = cosim(&[cmd, s(&fmu)]);
            let err = status(&out, 2, &[]);
            assert!(
                err.contains(&format!(
                    "{}: error: cannot run the FMU: {why}\n",
                    fmu.display()
                )),
                "{err}"
            );
            assert!(err.contains(&format!("= help: {what}")), "{err}");
        }
        // In a scenario: at the `fmu` value.
        let scenario = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &scenario,
            format!(
                "[simulation]\nstop = 1.0\n\n[[subsystems]]\nname = \"m\"\nfmu = \"{name}.fmu\"\n"
            ),
        )
        .unwrap();
        for cmd in ["run", "check"] {
            let out = cosim(&[cmd, s(&scenario), "-o", s(&dir.path().join("out"))]);
            let err = status(&out, 2, &[]);
            assert!(
                err.contains(&format!(
                    "{name}.toml:6:7: error: cannot run the FMU of subsystem 'm': {why}\n"
                )),
                "{err}"
            );
            assert!(err.contains("= help: "), "{err}");
        }
        // inspect: what is declared, and why cosim cannot run it.
        let out = cosim(&["inspect", s(&fmu)]);
        status(&out, 0, &[]);
        let text = stdout(&out);
        assert!(
            text.contains(&format!("Interfaces:     {listed}\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("Runs in cosim:  no: {why}; ")),
            "{text}"
        );
        let out = cosim(&["inspect", s(&fmu), "--json"]);
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert!(json["co_simulation"].is_null());
        let reason = json["not_runnable"].as_str().unwrap();
        assert!(reason.starts_with(&format!("{why}; {what}")), "{reason}");
    }
}

/// The entries of a project FMU.
fn entries(fmu: &Path) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(fmu).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).unwrap();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            (f.name().unwrap().to_string(), data)
        })
        .collect()
}

/// A copy of `fmu` at `to` with `extra` entries and its model description
/// passed through `edit`.
fn copy_with(fmu: &Path, to: &Path, extra: &[(&str, &[u8])], edit: impl Fn(&str) -> String) {
    let mut all = entries(fmu);
    for (name, data) in &mut all {
        if name == "modelDescription.xml" {
            *data = edit(std::str::from_utf8(data).unwrap()).into_bytes();
        }
    }
    all.extend(extra.iter().map(|(n, d)| (n.to_string(), d.to_vec())));
    let refs: Vec<(&str, &[u8])> = all
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    write_zip(to, &refs);
}

#[test]
fn source_files_are_the_sources_directory_in_fmi3_and_the_listed_files_in_fmi2() {
    let dir = tempfile::tempdir().unwrap();
    let flag = |fmu: &Path| -> bool {
        let out = cosim(&["inspect", s(fmu), "--json"]);
        let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        json["co_simulation"]["has_source_files"].as_bool().unwrap()
    };
    let c = b"/* the model */".as_slice();
    assert!(!flag(&fmi3("Gain")));
    let with_sources = dir.path().join("Gain3.fmu");
    copy_with(
        &fmi3("Gain"),
        &with_sources,
        &[("sources/gain.c", c)],
        str::to_string,
    );
    assert!(flag(&with_sources));
    let out = cosim(&["inspect", s(&with_sources)]);
    assert!(stdout(&out).contains("source files:"), "{}", stdout(&out));
    // FMI 2: the files to compile are listed in <SourceFiles> (FMI 2.0
    // sec. 2.3); a sources/ directory alone is not enough, nor a list
    // without the files.
    let unlisted = dir.path().join("Gain2.fmu");
    copy_with(
        &fmi2("Gain"),
        &unlisted,
        &[("sources/gain.c", c)],
        str::to_string,
    );
    assert!(!flag(&unlisted));
    let list = |md: &str| {
        md.replacen(
            "providesDirectionalDerivative=\"true\"/>",
            "providesDirectionalDerivative=\"true\"><SourceFiles><File name=\"gain.c\"/></SourceFiles></CoSimulation>",
            1,
        )
    };
    let listed = dir.path().join("Gain2listed.fmu");
    copy_with(&fmi2("Gain"), &listed, &[("sources/gain.c", c)], list);
    assert!(flag(&listed));
    let missing = dir.path().join("Gain2missing.fmu");
    copy_with(&fmi2("Gain"), &missing, &[], list);
    assert!(!flag(&missing));
}

// ----- variables that cannot be traced ----------------------------------------

/// The FMI 3 Gain with an array of Binaries and a Clock output added to
/// its model description (the array never read: it is not traced, a
/// scalar Binary is, as hexadecimal digits: tests/tests/exact_values.rs;
/// the Clock is traced, a column of 0 here: without event mode it never
/// ticks, and it is not read).
fn gain_with_untraceable(dir: &Path) -> PathBuf {
    let path = dir.join("Mixed.fmu");
    copy_with(&fmi3("Gain"), &path, &[], |md| {
        md.replacen(
            "  </ModelVariables>",
            "    <Binary name=\"blob\" valueReference=\"100\" causality=\"output\"><Dimension start=\"2\"/></Binary>\n    <Clock name=\"tick\" valueReference=\"101\" causality=\"output\" intervalVariability=\"triggered\"/>\n  </ModelVariables>",
            1,
        )
    });
    path
}

#[test]
fn a_variable_named_for_the_trace_that_cannot_be_traced_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = gain_with_untraceable(dir.path());
    let scenario = dir.path().join("mixed.toml");
    let write = |variables: &str| {
        std::fs::write(
            &scenario,
            format!(
                "[simulation]\nstop = 0.1\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"g\"\nfmu = \"Mixed.fmu\"\n\n[outputs]\nvariables = {variables}\n"
            ),
        )
        .unwrap();
    };
    let out_dir = dir.path().join("out");
    // Named: an error (exit 2), with or without -q, saying why.
    write("[\"g.y\", \"g.blob\"]");
    for quiet in [false, true] {
        let mut args = vec!["run", "--no-progress", s(&scenario), "-o", s(&out_dir)];
        if quiet {
            args.insert(1, "-q");
        }
        status(
            &cosim(&args),
            2,
            &[
                "mixed.toml:12:24: error: 'g.blob' cannot be traced: an array of Binary values, of which only scalars are traced (as text)",
            ],
        );
    }
    status(
        &cosim(&[
            "run",
            "--no-progress",
            s(&fmu),
            "--output-variables",
            "blob",
            "-o",
            s(&out_dir),
        ]),
        2,
        &[
            "'--output-variables",
            "'Mixed.blob' cannot be traced: an array of Binary values",
        ],
    );
    // A pattern: left out, named in a warning; the rest traced.
    write("[\"g.*\"]");
    let out = cosim(&["run", "--no-progress", s(&scenario), "-o", s(&out_dir)]);
    status(
        &out,
        0,
        &[
            "warning: \"g.*\" matches variables that cannot be traced, left out of the trace: 'g.blob' (an array of Binary values, of which only scalars are traced (as text))",
        ],
    );
    let (header, rows) = trace(&out_dir);
    assert_eq!(header, "time [s],g.u,g.y,g.tick");
    assert!(rows.iter().all(|r| r[3] == 0.0), "{rows:?}");
    // Every output, by default: the same, for the subsystem.
    std::fs::write(
        &scenario,
        "[simulation]\nstop = 0.1\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"g\"\nfmu = \"Mixed.fmu\"\n",
    )
    .unwrap();
    let out = cosim(&["run", "--no-progress", s(&scenario), "-o", s(&out_dir)]);
    status(
        &out,
        0,
        &[
            "warning: outputs of subsystem 'g' left out of the trace: 'blob' (an array of Binary values",
        ],
    );
    let (header, _) = trace(&out_dir);
    assert_eq!(header, "time [s],g.y,g.tick");
}

/// A nested system exposes an inner variable by alias; the level above
/// connects and traces it by the alias, `n.g.u_in`.
#[test]
fn a_nested_system_exposes_and_traces_by_alias() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("nested.toml");
    let gain = fmi3("Gain");
    std::fs::write(
        &scenario,
        format!(
            r#"[simulation]
stop = 0.3

[master]
step = 0.1

[[subsystems]]
name = "src"
fmu = "{gain}"
start = {{ u_in = 1.5 }}

[[subsystems]]
name = "n"
exposes = ["g.u_in", "g.y"]

[subsystems.system.master]
step = 0.05

[[subsystems.system.subsystems]]
name = "g"
fmu = "{gain}"
parameters = {{ gain = 2.0 }}

[[connections]]
from = "src.y"
to = "n.g.u_in"

[outputs]
variables = ["n.g.u_in", "n.g.u", "n.g.y", "src.u_in"]
"#,
            gain = s(&gain)
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = cosim(&["run", "--no-progress", s(&scenario), "-o", s(&out_dir)]);
    status(&out, 0, &[]);
    let (header, rows) = trace(&out_dir);
    assert_eq!(header, "time [s],n.g.u_in,n.g.u,n.g.y,src.u_in");
    for r in &rows {
        assert_eq!(r[1..], [1.5, 1.5, 3.0, 1.5], "{r:?}");
    }
}

/// An FMU that declares a triggered input clock runs, with warnings naming
/// it: no connection activates it, and the
/// FMU has no event mode, in which alone clocks tick in Co-Simulation. An
/// input clock is not said to keep a start value (it has none).
#[test]
fn an_fmu_with_clocks_runs_with_a_warning_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Clocked.fmu");
    copy_with(&fmi3("Gain"), &path, &[], |md| {
        md.replacen(
            "  </ModelVariables>",
            "    <Clock name=\"tick\" valueReference=\"101\" causality=\"input\" intervalVariability=\"triggered\"/>\n  </ModelVariables>",
            1,
        )
    });
    let scenario = dir.path().join("clocked.toml");
    std::fs::write(
        &scenario,
        "[simulation]\nstop = 0.1\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"g\"\nfmu = \"Clocked.fmu\"\nstart = { u = 1.0 }\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = cosim(&["run", "--no-progress", s(&scenario), "-o", s(&out_dir)]);
    status(
        &out,
        0,
        &[
            "warning: subsystem 'g' declares triggered input clocks (tick) that no connection activates, so the variables they clock are not updated",
            "subsystem 'g' declares clocks (tick) but runs without event mode (its FMU does not declare hasEventMode): they do not tick, and the variables they clock are not updated",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not connected"), "{err}");
}

// ----- enumerations by item name ------------------------------------------------

/// The FMI 3 TypeMirror with its Int64 input `u_i64` declared as an
/// enumeration of type `Option` ("Option 1" = 1, "Option 2" = 2); its
/// output `y_i64` is the input + 1 after a step.
fn mirror_with_an_enumeration(dir: &Path) -> PathBuf {
    let path = dir.join("EnumMirror.fmu");
    copy_with(&fmi3("TypeMirror"), &path, &[], |md| {
        let types = "  <TypeDefinitions>\n    <EnumerationType name=\"Option\">\n      <Item name=\"Option 1\" value=\"1\"/>\n      <Item name=\"Option 2\" value=\"2\"/>\n    </EnumerationType>\n  </TypeDefinitions>\n  <LogCategories>";
        let old = "<Int64 name=\"u_i64\" valueReference=\"7\" description=\"Int64 input (held over the step)\" causality=\"input\" variability=\"discrete\" start=\"-5000000000\"/>";
        assert!(md.contains(old));
        md.replacen("  <LogCategories>", types, 1).replacen(
            old,
            "<Enumeration name=\"u_i64\" valueReference=\"7\" declaredType=\"Option\" causality=\"input\" variability=\"discrete\" start=\"1\"/>",
            1,
        )
    });
    path
}

/// An enumeration is set by the name of an item of its type, with the
/// value the FMU's type gives it: in TOML, and from an SSP parameter set
/// (`ssv:Enumeration`), also where the set's own `ssc:Enumerations`
/// number the items otherwise. An unknown name is an error listing the
/// items.
#[test]
fn an_enumeration_is_set_by_the_name_of_an_item_of_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = mirror_with_an_enumeration(dir.path());
    let out_dir = dir.path().join("out");
    let y_at_the_end = |out_dir: &Path| {
        let t = cosim_core::metrics::Table::read(&out_dir.join("trace.csv")).unwrap();
        *t.column("m.y_i64").unwrap().last().unwrap()
    };
    let toml = dir.path().join("enum.toml");
    let write = |item: &str| {
        std::fs::write(
            &toml,
            format!(
                "[simulation]\nstop = 1.0\n\n[master]\nstep = 1.0\n\n[[subsystems]]\nname = \"m\"\nfmu = \"{}\"\nstart = {{ u_i64 = \"{item}\" }}\n\n[outputs]\nvariables = [\"m.y_i64\"]\n",
                fmu.display()
            ),
        )
        .unwrap();
    };
    write("Option 2");
    let out = cosim(&["run", "--no-progress", s(&toml), "-o", s(&out_dir)]);
    status(&out, 0, &[]);
    assert_eq!(y_at_the_end(&out_dir), 3.0);
    write("Option 3");
    let out = cosim(&["run", "--no-progress", s(&toml), "-o", s(&out_dir)]);
    status(
        &out,
        2,
        &[
            "'Option 3' is not an item of the type 'Option' of 'u_i64': its items are 'Option 1' (1), 'Option 2' (2)",
        ],
    );
    // SSP: the set's own numbering (Option 2 = 1) does not count.
    let ssd = dir.path().join("enum.ssd");
    std::fs::write(
        &ssd,
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription" xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon" xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues" version="1.0" name="Enum">
  <ssd:System name="Enum">
    <ssd:Elements>
      <ssd:Component name="m" source="{}">
        <ssd:ParameterBindings>
          <ssd:ParameterBinding>
            <ssd:ParameterValues>
              <ssv:ParameterSet version="1.0" name="m">
                <ssv:Parameters>
                  <ssv:Parameter name="u_i64"><ssv:Enumeration value="Option 2" name="Option"/></ssv:Parameter>
                </ssv:Parameters>
                <ssv:Enumerations>
                  <ssc:Enumeration name="Option"><ssc:Item name="Option 1" value="0"/><ssc:Item name="Option 2" value="1"/></ssc:Enumeration>
                </ssv:Enumerations>
              </ssv:ParameterSet>
            </ssd:ParameterValues>
          </ssd:ParameterBinding>
        </ssd:ParameterBindings>
      </ssd:Component>
    </ssd:Elements>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0" stopTime="1"/>
</ssd:SystemStructureDescription>
"#,
            fmu.display()
        ),
    )
    .unwrap();
    let out = cosim(&[
        "run",
        "--no-progress",
        s(&ssd),
        "--step",
        "1",
        "--output-variables",
        "m.y_i64",
        "-o",
        s(&out_dir),
    ]);
    status(&out, 0, &[]);
    assert_eq!(y_at_the_end(&out_dir), 3.0);
}
