//! The bad-input battery: malformed and hostile FMU archives, malformed
//! model descriptions, malformed and misspelt scenarios. Every case runs the
//! `cosim` binary (`run`, `check` or `inspect`) and checks the exit status
//! (2: bad input), the key words of the message (file, line, entry,
//! variable) and that nothing panicked or died of a signal.
//!
//! The hostile archives are made here, from the project's Gain FMU, never
//! committed. `cli.rs` already covers a misspelt variable in a connection
//! and a missing FMU file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use cosim_tests::{cosim, fmi2};
use zip::write::SimpleFileOptions;

/// Asserts a clean refusal: exit status `code`, every key word in stderr,
/// no panic, no signal. Returns stderr.
#[track_caller]
fn refused(out: &Output, code: i32, keys: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
    for k in keys {
        assert!(err.contains(k), "missing {k:?} in:\n{err}");
    }
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The entries of the project's FMI 2 Gain FMU.
fn gain_entries() -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(fmi2("Gain")).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).unwrap();
            let mut data = Vec::new();
            f.read_to_end(&mut data).unwrap();
            (f.name().unwrap().to_string(), data)
        })
        .collect()
}

fn gain_model_description() -> String {
    let e = gain_entries();
    let md = e.iter().find(|(n, _)| n == "modelDescription.xml").unwrap();
    String::from_utf8(md.1.clone()).unwrap()
}

/// Writes a zip with `entries` (deflated) to `path`.
fn write_zip(path: &Path, entries: &[(String, Vec<u8>)]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, data) in entries {
        z.start_file(name.as_str(), SimpleFileOptions::default())
            .unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
}

/// The Gain FMU with `extra` entries added.
fn gain_with(path: &Path, extra: &[(&str, &[u8])]) {
    let mut entries = gain_entries();
    entries.extend(extra.iter().map(|(n, d)| (n.to_string(), d.to_vec())));
    write_zip(path, &entries);
}

/// The Gain FMU with its model description replaced.
fn gain_with_md(path: &Path, md: &[u8]) {
    let mut entries = gain_entries();
    for (n, d) in &mut entries {
        if n == "modelDescription.xml" {
            *d = md.to_vec();
        }
    }
    write_zip(path, &entries);
}

/// A one-subsystem scenario using `fmu`, next to it.
fn scenario_for(fmu: &Path) -> PathBuf {
    let path = fmu.with_extension("toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"g\"\nfmu = \"{}\"\n",
            fmu.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    path
}

/// `inspect` and `check` and `run` all refuse the FMU with the key words;
/// the scenario commands also point at the `fmu` line (line 9).
#[track_caller]
fn all_commands_refuse(fmu: &Path, keys: &[&str]) {
    refused(&cosim(&["inspect", s(fmu)]), 2, keys);
    let scenario = scenario_for(fmu);
    let out_dir = fmu.with_extension("out");
    for cmd in ["check", "run"] {
        let mut k = keys.to_vec();
        let located = format!("{}:9:7:", scenario.file_name().unwrap().to_str().unwrap());
        k.push(&located);
        k.push("subsystem 'g'");
        refused(&cosim(&[cmd, s(&scenario), "--out", s(&out_dir)]), 2, &k);
    }
}

// ----- hostile and malformed archives ---------------------------------------

#[test]
fn zip_slip_entries_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("cosim-zip-slip-{}.txt", std::process::id());
    let cases = [
        (format!("../{marker}"), "'..' path components are refused"),
        (
            format!("resources/../../{marker}"),
            "'..' path components are refused",
        ),
        (format!("..\\{marker}"), "'..' path components are refused"),
        (format!("/tmp/{marker}"), "absolute paths are refused"),
        (format!("C:/{marker}"), "drive-letter prefixes are refused"),
    ];
    for (i, (name, why)) in cases.iter().enumerate() {
        let fmu = dir.path().join(format!("slip{i}.fmu"));
        gain_with(&fmu, &[(name, b"owned")]);
        all_commands_refuse(&fmu, &["slip", &format!("entry '{name}'"), why]);
    }
    let tmp = std::env::temp_dir();
    assert!(!tmp.join(&marker).exists());
    assert!(!Path::new("/tmp").join(&marker).exists());
}

#[test]
fn symbolic_links_in_an_archive_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("link.fmu");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&fmu).unwrap());
    for (name, data) in gain_entries() {
        z.start_file(name, SimpleFileOptions::default()).unwrap();
        z.write_all(&data).unwrap();
    }
    z.add_symlink(
        "resources/passwd",
        "/etc/passwd",
        SimpleFileOptions::default(),
    )
    .unwrap();
    z.finish().unwrap();
    all_commands_refuse(
        &fmu,
        &["entry 'resources/passwd'", "symbolic links are refused"],
    );
}

/// An entry of zeros that inflates past the 1 GiB per-entry limit, from a
/// ~1 MB archive: refused while extracting (sizes are counted on the bytes
/// written, not taken from the headers).
#[test]
fn a_zip_bomb_is_refused_at_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("bomb.fmu");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&fmu).unwrap());
    for (name, data) in gain_entries() {
        z.start_file(name, SimpleFileOptions::default()).unwrap();
        z.write_all(&data).unwrap();
    }
    z.start_file(
        "resources/zeros.bin",
        SimpleFileOptions::default().large_file(true),
    )
    .unwrap();
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..1025 {
        z.write_all(&chunk).unwrap();
    }
    z.finish().unwrap();
    let size = std::fs::metadata(&fmu).unwrap().len();
    eprintln!("bomb: {size} bytes");
    assert!(size < 8 << 20, "{size}");
    let scenario = scenario_for(&fmu);
    refused(
        &cosim(&["check", s(&scenario)]),
        2,
        &[
            "bomb.toml:9:7:",
            "entry 'resources/zeros.bin'",
            "more than the limit of 1073741824 bytes per entry (zip bomb?)",
        ],
    );
}

#[test]
fn an_archive_with_too_many_entries_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("many.fmu");
    let mut entries = gain_entries();
    entries.extend((0..10_001).map(|i| (format!("resources/f{i}"), Vec::new())));
    write_zip(&fmu, &entries);
    refused(
        &cosim(&["inspect", s(&fmu)]),
        2,
        &[
            "many.fmu",
            "the archive has 10003 entries, more than the limit of 10000",
        ],
    );
}

#[test]
fn an_archive_without_a_model_description_is_not_an_fmu() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("nomd.fmu");
    let entries: Vec<_> = gain_entries()
        .into_iter()
        .filter(|(n, _)| n != "modelDescription.xml")
        .collect();
    write_zip(&fmu, &entries);
    all_commands_refuse(
        &fmu,
        &[
            "nomd.fmu",
            "entry 'modelDescription.xml'",
            "missing at the root of the archive",
        ],
    );
    // Not at the root either.
    let fmu = dir.path().join("nested.fmu");
    let entries: Vec<_> = gain_entries()
        .into_iter()
        .map(|(n, d)| (format!("Gain/{n}"), d))
        .collect();
    write_zip(&fmu, &entries);
    refused(
        &cosim(&["inspect", s(&fmu)]),
        2,
        &["nested.fmu", "missing at the root of the archive"],
    );
}

#[test]
fn an_fmu_with_only_a_binary_for_another_platform_names_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("win.fmu");
    let mut entries: Vec<_> = gain_entries()
        .into_iter()
        .filter(|(n, _)| !n.starts_with("binaries/"))
        .collect();
    entries.push(("binaries/win64/Gain.dll".into(), b"MZ not really".to_vec()));
    entries.push(("binaries/darwin64/Gain.dylib".into(), b"nope".to_vec()));
    write_zip(&fmu, &entries);
    // inspect needs no binary: it lists the platforms.
    let out = cosim(&["inspect", s(&fmu)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("darwin64, win64"));
    let scenario = scenario_for(&fmu);
    for cmd in ["check", "run"] {
        refused(
            &cosim(&[cmd, s(&scenario)]),
            2,
            &[
                "subsystem 'g'",
                "win.fmu: no binary for this platform: expected binaries/linux64/Gain.so, found platform directories: darwin64, win64",
            ],
        );
    }
    // A binary that is not a shared library at all.
    let fmu = dir.path().join("junkso.fmu");
    let entries: Vec<_> = gain_entries()
        .into_iter()
        .map(|(n, d)| {
            if n.starts_with("binaries/") {
                (n, b"\x7fELF but not really".to_vec())
            } else {
                (n, d)
            }
        })
        .collect();
    write_zip(&fmu, &entries);
    refused(
        &cosim(&["check", s(&scenario_for(&fmu))]),
        2,
        // Read before any dlopen (tests/tests/hostile_binaries.rs has the
        // other cases, and a library that only dlopen refuses).
        &[
            "subsystem 'g'",
            "junkso.fmu: entry 'binaries/linux64/Gain.so': not a valid ELF file: unknown class 32",
        ],
    );
}

#[test]
fn truncated_corrupt_and_non_zip_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let raw = std::fs::read(fmi2("Gain")).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "half.fmu",
            raw[..raw.len() / 2].to_vec(),
            "not a valid zip archive (truncated or corrupt?)",
        ),
        (
            "tail.fmu",
            raw[..raw.len() - 10].to_vec(),
            "not a valid zip archive (truncated or corrupt?)",
        ),
        (
            "text.fmu",
            b"hello, I am not a zip\n".to_vec(),
            "not a valid zip archive",
        ),
        ("empty.fmu", Vec::new(), "not a valid zip archive"),
        (
            "corrupt.fmu",
            {
                let mut r = raw.clone();
                let mid = r.len() / 2;
                for b in &mut r[mid..mid + 100] {
                    *b ^= 0xff;
                }
                r
            },
            "corrupt entry",
        ),
    ];
    for (name, bytes, why) in cases {
        let fmu = dir.path().join(name);
        std::fs::write(&fmu, bytes).unwrap();
        all_commands_refuse(&fmu, &[name, why]);
    }
}

#[test]
fn duplicate_entries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = dir.path().join("dup.fmu");
    // The zip writer refuses duplicate names; a directory and a file of the
    // same name (once normalised) get through it.
    gain_with(&fmu, &[("resources/x", b"one"), ("resources\\x", b"two")]);
    all_commands_refuse(&fmu, &["dup.fmu", "duplicate entry"]);
}

/// An entry whose name the file system cannot hold (a 300-byte component,
/// over Linux's 255) is named with the `.fmu`, not as the deleted
/// temporary path it would have had: a file or a directory, under a
/// directory of that name or not.
#[test]
fn an_entry_name_too_long_for_the_file_system_names_the_entry_and_the_fmu() {
    let dir = tempfile::tempdir().unwrap();
    let long = "n".repeat(300);
    let cases = [
        format!("resources/{long}.txt"),
        format!("resources/{long}/data.txt"),
    ];
    for (i, name) in cases.iter().enumerate() {
        let fmu = dir.path().join(format!("long{i}.fmu"));
        gain_with(&fmu, &[(name.as_str(), b"x")]);
        let entry =
            format!("long{i}.fmu: entry '{name}': the name is too long for the file system");
        all_commands_refuse(&fmu, &[&entry]);
        let err = String::from_utf8_lossy(&cosim(&["inspect", s(&fmu)]).stderr).into_owned();
        assert!(!err.contains("cosim-fmu-"), "{err}");
    }
}

/// The Gain FMU with `copies` of the entry `name`, one entry each in the
/// local headers and the central directory (the zip writer refuses
/// duplicate names: each copy is written under a same-length alias, then
/// renamed in the bytes), as a packer that lists a directory twice makes
/// them (the Modelica Reference FMUs' `Roberts.fmu`).
fn gain_with_copies(path: &Path, name: &str, copies: &[&[u8]]) {
    let mut entries = gain_entries();
    let aliases: Vec<String> = (0..copies.len())
        .map(|i| format!("{}{i}", &name[..name.len() - 1]))
        .collect();
    for (alias, data) in aliases.iter().zip(copies) {
        entries.push((alias.clone(), data.to_vec()));
    }
    write_zip(path, &entries);
    let mut bytes = std::fs::read(path).unwrap();
    for alias in &aliases {
        let at: Vec<usize> = (0..=bytes.len() - alias.len())
            .filter(|&i| &bytes[i..i + alias.len()] == alias.as_bytes())
            .collect();
        assert_eq!(
            at.len(),
            2,
            "{alias}: the local header and the central directory"
        );
        for i in at {
            bytes[i..i + alias.len()].copy_from_slice(name.as_bytes());
        }
    }
    std::fs::write(path, bytes).unwrap();
}

/// Two byte-identical copies of one entry (the Reference FMUs' CMake packs
/// every `extra/*/fmi-ls-manifest.xml` twice) cannot make readers
/// disagree: `inspect` and `run` take the FMU, warning once and naming the
/// `.fmu` and the entry. Copies that differ stay refused.
#[test]
fn identical_duplicate_entries_are_one_entry_and_differing_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let name = "extra/x/fmi-ls-manifest.xml";
    let manifest = br#"<?xml version="1.0" encoding="UTF-8"?>
<fmiLayeredStandardManifest fmi-ls:fmi-ls-name="x" fmi-ls:fmi-ls-version="1.0"/>
"#;
    let fmu = dir.path().join("twice.fmu");
    gain_with_copies(&fmu, name, &[manifest, manifest]);
    let warning = format!(
        "{}: entry '{name}': the archive holds 2 identical copies of this entry; using one",
        fmu.display()
    );
    let inspect = cosim(&["inspect", s(&fmu)]);
    let err = String::from_utf8_lossy(&inspect.stderr);
    assert!(inspect.status.success(), "{err}");
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    let scenario = scenario_for(&fmu);
    let out_dir = dir.path().join("twice.out");
    let run = cosim(&["run", s(&scenario), "--out", s(&out_dir)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert_eq!(err.matches(&warning).count(), 1, "{err}");
    assert!(out_dir.join("trace.csv").is_file());

    let mut other = manifest.to_vec();
    other[60] ^= 1;
    let fmu = dir.path().join("differ.fmu");
    gain_with_copies(&fmu, name, &[manifest, &other]);
    all_commands_refuse(
        &fmu,
        &[
            "differ.fmu",
            &format!("entry '{name}'"),
            "duplicate entry: the archive has more than one entry of this name, and readers disagree on which one counts",
        ],
    );
}

// ----- malformed model descriptions -----------------------------------------

#[test]
fn malformed_model_descriptions_are_located_by_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let md = gain_model_description();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "unclosed",
            md.replace("</ModelVariables>", ""),
            vec![":17:3:", "element <ModelVariables> is not closed"],
        ),
        (
            "noname",
            md.replace(r#"name="u" valueReference="1""#, r#"valueReference="1""#),
            vec![
                ":23:5:",
                "<ScalarVariable> is missing the required attribute 'name'",
            ],
        ),
        (
            "novr",
            md.replace(r#"name="u" valueReference="1""#, r#"name="u""#),
            vec![
                ":23:5:",
                "<ScalarVariable> 'u' is missing the required attribute 'valueReference'",
            ],
        ),
        (
            "noident",
            md.replace(r#" modelIdentifier="Gain""#, ""),
            vec![
                ":3:3:",
                "<CoSimulation> is missing the required attribute 'modelIdentifier'",
            ],
        ),
        (
            "badnum",
            md.replace(r#"<Real start="1.0"/>"#, r#"<Real start="one"/>"#),
            vec![":32:7:", r#"attribute start="one" of <Real>: not a number"#],
        ),
        (
            "badvr",
            md.replace(r#"valueReference="3""#, r#"valueReference="-3""#),
            vec![":31:5:", r#"valueReference="-3""#, "not an integer"],
        ),
        (
            "depoor",
            md.replace(
                r#"dependencies="2" dependenciesKind"#,
                r#"dependencies="99" dependenciesKind"#,
            ),
            vec![":41:7:", "variable index 99 is out of range (1 to 5"],
        ),
        (
            "idxoor",
            md.replace(
                r#"<Unknown index="3" dependencies="2" dep"#,
                r#"<Unknown index="0" dependencies="2" dep"#,
            ),
            vec![":41:7:", "variable index 0 is out of range"],
        ),
        (
            "version",
            md.replace(r#"fmiVersion="2.0""#, r#"fmiVersion="7.5""#),
            vec![":2:1:", r#"unsupported fmiVersion "7.5""#],
        ),
        (
            "causality",
            md.replace(r#"causality="input""#, r#"causality="sideways""#),
            vec![":23:5:", r#"unknown causality "sideways""#],
        ),
        (
            "dupname",
            md.replace(
                r#"name="k" valueReference="3""#,
                r#"name="u" valueReference="3""#,
            ),
            vec![
                ":31:5:",
                "variable name 'u' is already used by the variable at line 23",
            ],
        ),
        ("empty", String::new(), vec![":1:1:", "no root element"]),
        (
            "garbage",
            "this is not xml".into(),
            vec![":1:", "no root element"],
        ),
    ];
    for (name, text, keys) in cases {
        let fmu = dir.path().join(format!("md_{name}.fmu"));
        gain_with_md(&fmu, text.as_bytes());
        let file = format!("md_{name}.fmu/modelDescription.xml");
        let mut k = keys.clone();
        k.push(&file);
        all_commands_refuse(&fmu, &k);
    }
    // Not UTF-8.
    let fmu = dir.path().join("md_latin1.fmu");
    let mut latin1 = md.clone().into_bytes();
    let at = md.find("Input").unwrap() + 3;
    latin1[at] = 0xfc; // 'ü' in Latin-1
    gain_with_md(&fmu, &latin1);
    all_commands_refuse(
        &fmu,
        &["md_latin1.fmu/modelDescription.xml:", "invalid UTF-8"],
    );
}

// ----- malformed and misspelt scenarios -------------------------------------

/// Writes `text` (with `{gain}` replaced by the Gain FMU's path) to
/// `<dir>/<name>.toml`.
fn scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        text.replace("{gain}", fmi2("Gain").to_str().unwrap()),
    )
    .unwrap();
    path
}

const BASE: &str = "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"g\"\nfmu = \"{gain}\"\n";

#[test]
fn malformed_and_misspelt_scenarios_are_located_with_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "syntax",
            "[simulation\nstop = 1.0\n".into(),
            vec!["syntax.toml:1:12:", "invalid TOML", "expected `]`"],
        ),
        (
            "string",
            "[simulation]\nstop = \"1.0\n".into(),
            vec!["string.toml:2:", "invalid TOML"],
        ),
        (
            "unknown_key",
            BASE.replace("step = 0.1", "stpe = 0.1"),
            vec![
                "unknown_key.toml:5:1:",
                "unknown key 'stpe' in [master]",
                "did you mean 'step'?",
            ],
        ),
        (
            "unknown_table",
            format!("{BASE}[output]\ndir = \"x\"\n"),
            vec![
                "unknown_table.toml:10:",
                "output",
                "did you mean 'outputs'?",
            ],
        ),
        (
            "subsystem",
            format!("{BASE}[[connections]]\nfrom = \"gg.y\"\nto = \"g.u\"\n"),
            vec![
                "subsystem.toml:11:9:",
                "unknown subsystem 'gg'",
                "did you mean 'g'?",
            ],
        ),
        (
            "parameter",
            format!("{BASE}parameters = {{ kk = 2.0 }}\n"),
            vec![
                "parameter.toml:10:16:",
                "subsystem 'g' (Gain) has no variable 'kk'",
                "did you mean 'k'?",
            ],
        ),
        (
            "wrong_type",
            BASE.replace("stop = 1.0", "stop = \"one\""),
            vec![
                "wrong_type.toml:2:8:",
                "expected a number for 'stop' in [simulation]",
            ],
        ),
        (
            "value_type",
            format!("{BASE}parameters = {{ k = \"two\" }}\n"),
            vec![
                "value_type.toml:10:20:",
                "'k' is of type Real: expected a number",
            ],
        ),
        (
            "int_range",
            format!("{BASE}parameters = {{ busy_work = 1e3 }}\n"),
            vec!["int_range.toml:10:", "busy_work"],
        ),
        (
            "reversed",
            format!("{BASE}[[connections]]\nfrom = \"g.u\"\nto = \"g.y\"\n"),
            vec![
                "reversed.toml:11:",
                "connection in the wrong direction",
                "swap 'from' and 'to'",
            ],
        ),
        (
            "kind",
            BASE.replace("step = 0.1", "kind = \"fixed-stpe\"\nstep = 0.1"),
            vec![
                "kind.toml:5:8:",
                "unknown kind \"fixed-stpe\"",
                "did you mean 'fixed-step'?",
            ],
        ),
        (
            "duplicate",
            format!("{BASE}\n[[subsystems]]\nname = \"g\"\nfmu = \"{{gain}}\"\n"),
            vec!["duplicate.toml:12:8:", "duplicate subsystem name 'g'"],
        ),
        (
            "stop",
            BASE.replace("stop = 1.0", "stop = -1.0"),
            vec!["stop.toml:2:8:", "not after the start time"],
        ),
        (
            "glob",
            format!("{BASE}\n[outputs]\nvariables = [\"g.zz*\"]\n"),
            vec!["glob.toml:12:", "\"g.zz*\" matches no variable"],
        ),
        (
            "fmu_dir",
            BASE.replace("{gain}", "."),
            vec![
                "fmu_dir.toml:9:7:",
                "the FMU of subsystem 'g' is not a file",
            ],
        ),
        (
            "no_subsystems",
            String::new(),
            vec!["no_subsystems.toml", "the scenario has no subsystems"],
        ),
    ];
    for (name, text, keys) in cases {
        let path = scenario(d, name, &text);
        for cmd in ["check", "run"] {
            refused(
                &cosim(&[cmd, s(&path), "--out", s(&d.join("out"))]),
                2,
                &keys,
            );
        }
    }
    // Not UTF-8.
    let path = d.join("binary.toml");
    std::fs::write(&path, b"\xff\xfe\x00garbage").unwrap();
    refused(
        &cosim(&["run", s(&path)]),
        2,
        &["binary.toml", "cannot read the scenario file"],
    );
    // A directory given as the scenario.
    refused(&cosim(&["check", s(d)]), 2, &[s(d)]);
}

#[test]
fn misspelt_command_line_overrides_name_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "ok",
        &format!("{BASE}[[connections]]\nfrom = \"g.y\"\nto = \"g.u\"\n"),
    );
    let cases: [(&str, &[&str]); 4] = [
        (
            "gg.k=1",
            &[
                "'--set gg.k=1'",
                "unknown subsystem 'gg'",
                "did you mean 'g'?",
            ],
        ),
        (
            "g.kk=1",
            &[
                "'--set g.kk=1'",
                "has no variable 'kk'",
                "did you mean 'k'?",
            ],
        ),
        ("g.k=abc", &["'--set g.k=abc'", "expected a number"]),
        (
            "g.k",
            &["'--set g.k'", "expected <subsystem>.<variable>=<value>"],
        ),
    ];
    for (set, keys) in cases {
        for cmd in ["check", "run"] {
            let mut k = keys.to_vec();
            k.push("ok.toml");
            refused(
                &cosim(&[
                    cmd,
                    s(&path),
                    "--set",
                    set,
                    "--out",
                    s(&dir.path().join("o")),
                ]),
                2,
                &k,
            );
        }
    }
    // Bad option values are clap's: status 2 too.
    refused(&cosim(&["run", s(&path), "--stop", "soon"]), 2, &["--stop"]);
    refused(
        &cosim(&["run", s(&path), "--step", "-1"]),
        2,
        &[
            "'--step -1'",
            "the step must be a positive number of seconds",
        ],
    );
    refused(
        &cosim(&["run", s(&path), "--stop", "-1"]),
        2,
        &["'--stop -1'"],
    );
    refused(
        &cosim(&["run", s(&path), "--step-timeout", "-1"]),
        2,
        &["'--step-timeout -1'", "positive number of seconds"],
    );
    refused(
        &cosim(&["run", s(&path), "--step=-1"]),
        2,
        &[
            "'--step -1'",
            "the step must be a positive number of seconds",
        ],
    );
    refused(
        &cosim(&["run", s(&path), "--stop", "nan"]),
        2,
        &["'--stop NaN'", "the stop time must be a finite number"],
    );
    // A tiny step is named as given, short, at the option (not [master]).
    let out = cosim(&["run", s(&path), "--step", "1e-300"]);
    refused(
        &out,
        2,
        &[
            "'--step 1e-300'",
            "the step 1e-300 s is below the finest time resolution cosim keeps (1 fs)",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).len() < 400);
    // A step that no tick represents is refused at [master].
    refused(
        &cosim(&["run", s(&path), "--step", "0.3333333333333333"]),
        2,
        &["is not a whole number of ticks at any resolution from 1 ns to 1 fs"],
    );
}

// ----- mutated inputs (the fuzz targets' properties, in `cargo test`) --------

/// A small deterministic generator (xorshift64*), so that a failure names a
/// reproducible case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Tokens worth splicing into XML and TOML.
const TOKENS: &[&str] = &[
    "<",
    ">",
    "/>",
    "</",
    "\"",
    "'",
    "=",
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    ",",
    ".",
    "-",
    "0",
    "-1",
    "4294967296",
    "1e309",
    "nan",
    "inf",
    "true",
    "\n",
    "\u{0}",
    "&amp;",
    "&#0;",
    "<![CDATA[",
    "<!--",
    "<?xml",
    "<ScalarVariable",
    "<Unknown index=\"1\"",
    "dependencies=\"",
    "valueReference=\"",
    "<Float64",
    "causality=\"output\"",
    "name = ",
    "fmu = ",
    "from = ",
    "to = ",
    "[[subsystems]]",
    "[[connections]]",
    "[[bonds]]",
    "[master]",
    "\u{feff}",
];

/// One to four random edits of `input`.
fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(5) {
            0 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let end = (at + rng.below(64)).min(v.len());
                v.drain(at..end);
            }
            2 => {
                let end = (at + rng.below(256)).min(v.len());
                let copy = v[at..end].to_vec();
                let to = rng.below(v.len() + 1);
                v.splice(to..to, copy);
            }
            3 => v.truncate(at),
            _ => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                v.splice(at..at, t.iter().copied());
            }
        }
    }
    v
}

#[test]
fn mutated_model_descriptions_never_panic_the_parser() {
    use cosim_fmi::model_description::parse_model_description;
    let seeds = [gain_model_description(), {
        let mut zip =
            zip::ZipArchive::new(std::fs::File::open(cosim_tests::fmi3("Faulty")).unwrap())
                .unwrap();
        let mut s = String::new();
        zip.by_name("modelDescription.xml")
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        s
    }];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for i in 0..3000 {
        let seed = &seeds[i % seeds.len()];
        let input = mutate(&mut rng, seed.as_bytes());
        let Ok(text) = std::str::from_utf8(&input) else {
            continue;
        };
        match parse_model_description(text, Path::new("m.xml")) {
            Ok(md) => {
                parsed += 1;
                let _ = cosim_fmi::bonds::find_bond_candidates(&md);
            }
            Err(e) => assert!(e.to_string().starts_with("m.xml:"), "case {i}: {e}"),
        }
    }
    // The mutations are small: some inputs must still parse.
    assert!(parsed > 100, "{parsed}");
}

#[test]
fn mutated_scenarios_never_panic_the_parser_or_the_resolver() {
    use cosim_fmi::model_description::parse_model_description;
    use cosim_scenario::Scenario;
    let md = parse_model_description(&gain_model_description(), Path::new("g.xml")).unwrap();
    let mut seeds = Vec::new();
    for e in std::fs::read_dir(cosim_tests::root().join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            seeds.push(std::fs::read(p).unwrap());
        }
    }
    seeds.push(format!("{BASE}[[connections]]\nfrom = \"g.y\"\nto = \"g.u\"\n").into_bytes());
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut accepted, mut resolved) = (0, 0);
    for i in 0..3000 {
        let input = mutate(&mut rng, &seeds[i % seeds.len()]);
        let Ok(text) = std::str::from_utf8(&input) else {
            continue;
        };
        match Scenario::from_str(text, "/m/s.toml") {
            Ok(scenario) => {
                accepted += 1;
                let models: Vec<_> = scenario
                    .subsystems()
                    .iter()
                    .map(|s| (s.name.value.as_str(), &md))
                    .collect();
                match scenario.resolve(&models) {
                    Ok(_) => resolved += 1,
                    Err(e) => assert!(e.to_string().contains("s.toml"), "case {i}: {e}"),
                }
            }
            Err(e) => assert!(e.to_string().contains("s.toml"), "case {i}: {e}"),
        }
    }
    assert!(accepted > 100 && resolved > 0, "{accepted} {resolved}");
}

#[test]
fn mutated_archives_are_refused_or_extracted_inside_the_target() {
    use cosim_fmi::archive::{ArchiveLimits, extract_archive};
    let dir = tempfile::tempdir().unwrap();
    let seed_path = dir.path().join("seed.fmu");
    write_zip(
        &seed_path,
        &[
            (
                "modelDescription.xml".into(),
                gain_model_description().into_bytes(),
            ),
            ("binaries/linux64/Gain.so".into(), vec![0x7f; 200]),
            ("resources/a.txt".into(), b"resource".to_vec()),
        ],
    );
    let seed = std::fs::read(&seed_path).unwrap();
    let limits = ArchiveLimits {
        max_total_size: 1 << 20,
        max_entries: 100,
        max_entry_size: 1 << 20,
    };
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut extracted = 0;
    for i in 0..1000 {
        let work = dir.path().join(format!("w{i}"));
        std::fs::create_dir(&work).unwrap();
        let archive = work.join("a.fmu");
        std::fs::write(&archive, mutate(&mut rng, &seed)).unwrap();
        let dest = work.join("out");
        std::fs::create_dir(&dest).unwrap();
        match extract_archive(&archive, &dest, &limits) {
            Ok(_) => {
                extracted += 1;
                assert!(dest.join("modelDescription.xml").is_file(), "case {i}");
            }
            Err(e) => assert!(e.to_string().contains("a.fmu"), "case {i}: {e}"),
        }
        let names: Vec<_> = std::fs::read_dir(&work)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "case {i}: something escaped: {names:?}");
        std::fs::remove_dir_all(&work).unwrap();
    }
    // Most edits break a CRC; a few (in names, headers) still extract.
    assert!(extracted > 0, "{extracted}");
}

// ----- FMI 2 alias sets: a setting and a coupling of one value reference ----

/// The FMI 2 Gain with its parameter `k` given the value reference of its
/// input `u` (1): an alias set of a parameter and an input, as third-party
/// FMUs have it. Whatever the run writes into `u` is `k`'s value too.
fn gain_with_k_aliasing_u(dir: &Path) -> PathBuf {
    let md = gain_model_description();
    let edited = md.replacen(
        "name=\"k\" valueReference=\"3\"",
        "name=\"k\" valueReference=\"1\"",
        1,
    );
    assert_ne!(edited, md);
    let fmu = dir.join("Aliased.fmu");
    gain_with_md(&fmu, edited.as_bytes());
    fmu
}

#[test]
fn a_coupled_input_sharing_its_value_reference_with_a_parameter_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let aliased = gain_with_k_aliasing_u(d);
    let two = format!(
        "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\n\n\
         [[subsystems]]\nname = \"a\"\nfmu = \"{}\"\n\n\
         [[subsystems]]\nname = \"b\"\nfmu = \"{}\"\nPARAMS\n\
         [[connections]]\nfrom = \"a.y\"\nto = \"b.u\"\n",
        fmi2("Gain").display(),
        aliased.display()
    );
    let both = [
        "'b.k'",
        "'b.u'",
        "subsystem 'b' (Gain)",
        "value reference 1",
    ];
    // A connection into u overwrites k, set or not.
    for (name, params) in [
        ("unset", "# k not set\n"),
        ("set", "parameters = { k = 3.0 }\n"),
    ] {
        let path = d.join(format!("{name}.toml"));
        std::fs::write(&path, two.replace("PARAMS\n", params)).unwrap();
        let mut keys = both.to_vec();
        let at = format!("{name}.toml:17:");
        keys.push(&at);
        let out_dir = d.join(format!("{name}.out"));
        for cmd in ["check", "run"] {
            refused(&cosim(&[cmd, s(&path), "-o", s(&out_dir)]), 2, &keys);
        }
    }
    // A `--set` of k with an input file feeding u.
    let csv = d.join("in.csv");
    std::fs::write(&csv, "time,u\n0,1\n1,2\n").unwrap();
    let out = cosim(&[
        "check",
        s(&aliased),
        "--set",
        "k=3",
        "--input-file",
        s(&csv),
    ]);
    refused(
        &out,
        2,
        &["'Aliased.k'", "'Aliased.u'", "in.csv", "value reference 1"],
    );
    // An event on u.
    let path = d.join("event.toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 1.0\n\n[master]\nstep = 0.1\n\n\
             [[subsystems]]\nname = \"b\"\nfmu = \"{}\"\n\n\
             [[events]]\ntime = 0.5\nvariable = \"b.u\"\naction = \"override\"\nvalue = 2.0\n",
            aliased.display()
        ),
    )
    .unwrap();
    refused(
        &cosim(&["check", s(&path)]),
        2,
        &["event.toml:13:", "'b.k'", "'b.u'", "subsystem 'b' (Gain)"],
    );
    // Two values for the one value reference.
    refused(
        &cosim(&["check", s(&aliased), "--set", "k=3", "--set", "u=1"]),
        2,
        &[
            "'--set u=1'",
            "'k' and 'u' of subsystem 'Aliased' (Gain) share value reference 1",
        ],
    );
    // Nothing writes u: k is set, and u keeps its start value.
    let out_dir = d.join("alone.out");
    let out = cosim(&[
        "run",
        "--no-progress",
        s(&aliased),
        "--set",
        "k=3",
        "-o",
        s(&out_dir),
    ]);
    refused(&out, 0, &[]);
}

/// A start value of a connected input is replaced by the coupling in
/// initialization: said at the value (as for an input file), where it was
/// dropped without a word.
#[test]
fn a_start_value_of_a_connected_input_is_said_to_have_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("start.toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 0.2\n\n[master]\nstep = 0.1\n\n\
             [[subsystems]]\nname = \"a\"\nfmu = \"{0}\"\n\n\
             [[subsystems]]\nname = \"b\"\nfmu = \"{0}\"\nstart = {{ u = 5.0 }}\n\n\
             [[connections]]\nfrom = \"a.y\"\nto = \"b.u\"\n",
            fmi2("Gain").display()
        ),
    )
    .unwrap();
    refused(
        &cosim(&["check", s(&path)]),
        0,
        &[
            "start.toml:14:15: warning: the start value of 'b.u' has no effect: the connection on line 16 sets it from the start time on",
        ],
    );
    refused(
        &cosim(&["check", s(&path), "--set", "b.u=6"]),
        0,
        &["'--set b.u=6'", "the start value of 'b.u' has no effect"],
    );
}

// ----- bytes a scenario cannot hold; thread counts out of range -------------

/// A NUL byte (a binary file, or a scenario saved as UTF-16) or another
/// control character is named with its place, not reported as whatever
/// TOML token it broke ("invalid float, expected nothing").
#[test]
fn a_nul_byte_or_control_character_in_a_scenario_is_named_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &[&str]); 4] = [
        (
            "nul_after_number",
            b"[simulation]\nstop = 1.0\0\n",
            &["nul_after_number.toml:2:11:", "NUL byte (U+0000)"],
        ),
        (
            "nul_in_string",
            b"[simulation]\nstop = 1.0\n\n[[subsystems]]\nname = \"g\0\"\n",
            &["nul_in_string.toml:5:10:", "NUL byte (U+0000)"],
        ),
        (
            "utf16",
            b"[\0s\0i\0m\0]\0\n\0",
            &["utf16.toml:1:2:", "NUL byte (U+0000)", "UTF-16"],
        ),
        (
            "bell",
            b"[simulation]\nstop = \"\x07\"\n",
            &["bell.toml:2:9:", "control character U+0007"],
        ),
    ];
    for (name, text, keys) in cases {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let err = refused(&cosim(&["check", s(&path)]), 2, keys);
        assert!(!err.contains("invalid float"), "{err}");
    }
}

/// `--threads` has the limit of `[master] threads` (1024), and `cosim
/// sweep --jobs` too, with the scenario's message; 0 (all cores) stays
/// valid.
#[test]
fn thread_counts_on_the_command_line_have_the_scenario_key_s_limit() {
    let gain = fmi2("Gain");
    refused(
        &cosim(&["check", s(&gain), "--threads", "99999"]),
        2,
        &["--threads", "must be between 0 and 1024, not 99999"],
    );
    refused(&cosim(&["check", s(&gain), "--threads", "0", "-q"]), 0, &[]);
    refused(
        &cosim(&[
            "sweep",
            "scenarios/sweeps/b1_a_stability.toml",
            "--check",
            "--jobs",
            "99999",
        ]),
        2,
        &["--jobs", "must be between 0 and 1024, not 99999"],
    );
}

// ----- a huge generated trace selection ---------------------------------------

/// A generated `variables` list of millions of entries (a 16 MB scenario:
/// names, patterns and literal strings, most repeated) runs in memory of
/// the order of the file and without work per repeat: the list is read
/// outside the TOML parser, which held some 150 bytes per element (450 MB
/// here, 1.1 GB for a 43 MB list), and each distinct entry is resolved
/// once (a pattern was compiled for every entry: 94 s for a 43 MB list).
/// The limit on the data segment (300 MB) is what the parser alone passed;
/// the time limit (120 s) only the pattern per entry reached.
#[test]
fn a_huge_variables_list_runs_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let cycle = ["\"g.y\"", "\"g.*\"", "\"*.u\"", "'g.k'"];
    let entries: Vec<&str> = (0..2_700_000).map(|i| cycle[i % 4]).collect();
    let path = dir.path().join("huge.toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 0.2\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"g\"\nfmu = \"{}\"\n\n[outputs]\nvariables = [\n{}\n]\n",
            fmi2("Gain").display(),
            entries.join(",\n")
        ),
    )
    .unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > 15_000_000);
    let out_dir = dir.path().join("out");
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -d 300000 && exec \"$0\" run -q \"$1\" -o \"$2\"",
            s(&cosim_tests::cosim_bin()),
            s(&path),
            s(&out_dir),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("still running after 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    refused(&out, 0, &[]);
    let trace = std::fs::read_to_string(out_dir.join("trace.csv")).unwrap();
    assert_eq!(trace.lines().next(), Some("time [s],g.y,g.u,g.k"));
}
