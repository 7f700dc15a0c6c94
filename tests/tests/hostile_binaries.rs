//! Hostile FMU binaries and ambiguous archives, end to end: `cosim inspect`,
//! `cosim check` and `cosim run` (in-process and with process isolation)
//! refuse each before loading anything, with exit status 2 (bad input), no
//! death by a signal, and a message naming the `.fmu`, the archive entry and
//! the reason. Every hostile FMU is made here from a project FMU (its
//! library cut, patched, replaced by text or by a library compiled with
//! `cc`; its archive given a second `modelDescription.xml`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosim_fmi::binary::FMI2_MANDATORY_FUNCTIONS;
use cosim_tests::{cosim, fmi2, fmi3};
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

type Entries = Vec<(String, Vec<u8>)>;

fn entries(fmu: &Path) -> Entries {
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

/// Writes `entries` as a zip (stored, so that names can be rewritten in
/// the bytes afterwards).
fn zip_bytes(entries: &Entries) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    for (name, data) in entries {
        z.start_file(name.as_str(), stored).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// The entry of `entries` whose name ends with `.so`.
fn library(entries: &mut Entries) -> &mut Vec<u8> {
    &mut entries
        .iter_mut()
        .find(|(n, _)| n.ends_with(".so"))
        .expect("a .so entry")
        .1
}

/// A one-subsystem scenario using `fmu`, next to it.
fn scenario_for(fmu: &Path) -> PathBuf {
    let path = fmu.with_extension("toml");
    std::fs::write(
        &path,
        format!(
            "[simulation]\nstop = 0.5\n\n[master]\nstep = 0.1\n\n[[subsystems]]\nname = \"int\"\nfmu = \"{}\"\n",
            fmu.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    path
}

/// Exit status 2, not a signal, no panic, every key in stderr, and never
/// the temporary extraction directory.
#[track_caller]
fn refused(what: &str, out: &Output, keys: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        None,
        "{what}: killed by a signal: {:?}\n{err}",
        out.status
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{what}: {:?}\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(
        !err.contains("cosim-fmu-"),
        "{what}: names the temporary directory: {err}"
    );
    for k in keys {
        assert!(err.contains(k), "{what}: missing {k:?} in:\n{err}");
    }
}

/// `inspect`, `check`, `run` and `run --isolation process` all refuse `fmu`.
#[track_caller]
fn every_command_refuses(fmu: &Path, keys: &[&str]) {
    let s = |p: &Path| p.to_str().unwrap().to_string();
    refused("inspect", &cosim(&["inspect", &s(fmu)]), keys);
    let scenario = scenario_for(fmu);
    let out_dir = fmu.with_extension("out");
    let mut located = keys.to_vec();
    // The scenario line naming the FMU, and the subsystem.
    let line = format!("{}:9:7:", scenario.file_name().unwrap().to_str().unwrap());
    located.push(&line);
    located.push("subsystem 'int'");
    refused("check", &cosim(&["check", &s(&scenario)]), &located);
    refused(
        "run",
        &cosim(&["run", "--no-progress", &s(&scenario), "--out", &s(&out_dir)]),
        &located,
    );
    refused(
        "run --isolation process",
        &cosim(&[
            "run",
            "--no-progress",
            "--isolation",
            "process",
            &s(&scenario),
            "--out",
            &s(&out_dir),
        ]),
        &located,
    );
}

/// Compiles `source` into a shared library with `cc`; its bytes.
fn cc_shared(dir: &Path, name: &str, source: &str) -> Vec<u8> {
    let src = dir.join(format!("{name}.c"));
    let so = dir.join(format!("{name}.so"));
    std::fs::write(&src, source).unwrap();
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .output()
        .expect("a C compiler (cc) is needed for this test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(so).unwrap()
}

fn stubs(functions: &[&str]) -> String {
    functions
        .iter()
        .map(|f| format!("void {f}(void) {{}}\n"))
        .collect()
}

const ENTRY2: &str = "entry 'binaries/linux64/Integrator.so'";

#[test]
fn a_truncated_library_is_refused_before_dlopen_instead_of_killing_cosim() {
    let dir = tempfile::tempdir().unwrap();
    let original = entries(&fmi2("Integrator"));
    let len = library(&mut original.clone()).len();
    // Cut to 1000 bytes: headers intact, the first segment cut (dlopen
    // died of SIGBUS on this).
    let mut e = original.clone();
    library(&mut e).truncate(1000);
    let fmu = dir.path().join("Cut1000.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "Cut1000.fmu",
            ENTRY2,
            "truncated: segment ",
            "(PT_LOAD) ends at byte ",
            "of a 1000-byte file",
        ],
    );
    // Cut to half its size.
    let mut e = original;
    library(&mut e).truncate(len / 2);
    let fmu = dir.path().join("Half.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "Half.fmu",
            ENTRY2,
            "truncated: ",
            &format!("of a {}-byte file", len / 2),
        ],
    );
    // FMI 3: the entry is under x86_64-linux.
    let mut e = entries(&fmi3("Integrator"));
    library(&mut e).truncate(1000);
    let fmu = dir.path().join("Cut1000Fmi3.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "Cut1000Fmi3.fmu",
            "entry 'binaries/x86_64-linux/Integrator.so'",
            "truncated: segment ",
        ],
    );
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_library_for_another_architecture_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    // The ELF header's e_machine patched to aarch64 (183).
    let mut e = entries(&fmi2("Integrator"));
    library(&mut e)[18..20].copy_from_slice(&183u16.to_le_bytes());
    let fmu = dir.path().join("Aarch64.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "Aarch64.fmu",
            ENTRY2,
            "built for aarch64, this machine is x86_64",
        ],
    );
    // A real i386 library (compiled with `cc -m32 -c`, linked by `ld`).
    let src = dir.path().join("i386.c");
    std::fs::write(&src, stubs(FMI2_MANDATORY_FUNCTIONS)).unwrap();
    let obj = dir.path().join("i386.o");
    let so = dir.path().join("i386.so");
    assert!(
        Command::new("cc")
            .args(["-m32", "-fPIC", "-c", "-o"])
            .arg(&obj)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("ld")
            .args(["-m", "elf_i386", "-shared", "-o"])
            .arg(&so)
            .arg(&obj)
            .status()
            .unwrap()
            .success()
    );
    let mut e = entries(&fmi2("Integrator"));
    *library(&mut e) = std::fs::read(&so).unwrap();
    let fmu = dir.path().join("I386.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "I386.fmu",
            ENTRY2,
            "built for i386 (32-bit), this machine is x86_64 (64-bit)",
        ],
    );
}

#[test]
fn a_text_file_as_the_library_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = entries(&fmi2("Integrator"));
    *library(&mut e) = b"#!/bin/sh\necho this is not a library\n".to_vec();
    let fmu = dir.path().join("Text.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "Text.fmu",
            ENTRY2,
            "not an ELF shared library: the file is text (it begins \"#!/bin/sh\")",
        ],
    );
}

#[test]
fn a_library_without_fmi2_do_step_is_named_by_the_fmu_and_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let without: Vec<&str> = FMI2_MANDATORY_FUNCTIONS
        .iter()
        .copied()
        .filter(|f| *f != "fmi2DoStep")
        .collect();
    let mut e = entries(&fmi2("Integrator"));
    *library(&mut e) = cc_shared(dir.path(), "nodostep", &stubs(&without));
    let fmu = dir.path().join("NoDoStep.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    let named = format!(
        "{}: missing mandatory FMI function 'fmi2DoStep'",
        fmu.join("binaries/linux64/Integrator.so").display()
    );
    every_command_refuses(&fmu, &[&named]);
}

#[test]
fn an_archive_with_two_model_descriptions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = entries(&fmi2("Integrator"));
    let md = e
        .iter()
        .find(|(n, _)| n == "modelDescription.xml")
        .unwrap()
        .1
        .clone();
    // The second one (which the zip reader used to take) names another
    // model; written under a same-length alias, then renamed in the bytes.
    let other = String::from_utf8(md)
        .unwrap()
        .replace("modelName=\"Integrator\"", "modelName=\"Impostor\"");
    e.push(("modelDescriptioX.xml".to_string(), other.into_bytes()));
    let bytes = zip_bytes(&e);
    let (from, to) = (b"modelDescriptioX.xml", b"modelDescription.xml");
    let mut patched = bytes.clone();
    let mut renamed = 0;
    for i in 0..bytes.len() - from.len() {
        if &bytes[i..i + from.len()] == from {
            patched[i..i + from.len()].copy_from_slice(to);
            renamed += 1;
        }
    }
    assert_eq!(renamed, 2);
    let fmu = dir.path().join("TwoMd.fmu");
    std::fs::write(&fmu, patched).unwrap();
    every_command_refuses(
        &fmu,
        &[
            "TwoMd.fmu",
            "entry 'modelDescription.xml'",
            "duplicate entry",
        ],
    );
    let out = cosim(&["inspect", fmu.to_str().unwrap()]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Impostor"));
}

/// `cosim inspect` prints the same report as before for a healthy FMU (the
/// library is read, never loaded): identity, platforms, variables.
#[test]
fn inspect_still_reports_a_healthy_fmu() {
    let out = cosim(&["inspect", fmi2("Integrator").to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Model") && text.contains("Integrator"),
        "{text}"
    );
    assert!(
        text.contains("Platforms") && text.contains("linux64"),
        "{text}"
    );
}

/// A library that passes the check but that the loader refuses (a data
/// symbol it needs is nowhere): still bad input, with the system's reason,
/// naming `<the .fmu>/<entry>` and not the temporary directory (which the
/// loader's own message names).
#[test]
fn a_library_the_loader_refuses_is_named_by_the_fmu_and_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = entries(&fmi2("Integrator"));
    *library(&mut e) = cc_shared(
        dir.path(),
        "unresolved",
        &(stubs(FMI2_MANDATORY_FUNCTIONS)
            + "extern int cosim_no_such_variable;\nint *cosim_ref = &cosim_no_such_variable;\n"),
    );
    let fmu = dir.path().join("Unresolved.fmu");
    std::fs::write(&fmu, zip_bytes(&e)).unwrap();
    // inspect does not load the library: it reports the FMU.
    let out = cosim(&["inspect", fmu.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scenario = scenario_for(&fmu);
    let shown = fmu
        .join("binaries/linux64/Integrator.so")
        .display()
        .to_string();
    let keys = [
        "subsystem 'int'",
        &format!(
            "{shown}: cannot load shared library: dlopen failed: {shown}: undefined symbol: cosim_no_such_variable"
        ),
    ];
    refused(
        "check",
        &cosim(&["check", scenario.to_str().unwrap()]),
        &keys,
    );
    let out_dir = dir.path().join("out");
    refused(
        "run",
        &cosim(&[
            "run",
            "--no-progress",
            scenario.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ]),
        &keys,
    );
}

/// A library whose constructor crashes as it is loaded (the Hostile FMU
/// with COSIM_TEST_HOSTILE_CONSTRUCTOR_CRASH=1), before any FMI call, is
/// blamed on loading it, naming `<the .fmu>/<entry>`, not on
/// `fmi2Instantiate` (which it was): `check` and `run --isolation process`
/// load it in a host, which dies; in process the run dies of the signal,
/// and its debug log's last line names the library being loaded.
#[test]
fn a_crash_in_the_library_constructor_is_blamed_on_loading_it() {
    let dir = tempfile::tempdir().unwrap();
    let fmu = cosim_tests::hostile_fmu(dir.path());
    let scenario = scenario_for(&fmu);
    let shown = fmu
        .join("binaries/linux64/Hostile.so")
        .display()
        .to_string();
    let run = |args: &[&str], log: &str| {
        Command::new(cosim_tests::cosim_bin())
            .args(args)
            .arg(&scenario)
            .arg("--out")
            .arg(dir.path().join("out"))
            .env("COSIM_TEST_HOSTILE_CONSTRUCTOR_CRASH", "1")
            .env("COSIM_LOG", log)
            .output()
            .unwrap()
    };
    let blamed = format!(
        "error: subsystem 'int': loading the shared library: {shown}: the FMU's host process (pid "
    );
    for args in [
        &["check"][..],
        &["run", "--no-progress", "--isolation", "process"],
    ] {
        let out = run(args, "warn");
        let err = String::from_utf8_lossy(&out.stderr);
        refused(
            &format!("{args:?}"),
            &out,
            &[
                &blamed,
                ") died of a segmentation fault (SIGSEGV) (in the library's initialisers: no FMI function had been called)",
            ],
        );
        assert!(!err.contains("fmi2Instantiate"), "{args:?}: {err}");
    }
    let out = run(&["run", "--no-progress"], "warn,cosim_fmi=debug");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc_sigsegv()), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "loading the shared library {shown} (its initialisers run)"
        )),
        "{err}"
    );
}

/// SIGSEGV's number on Linux.
fn libc_sigsegv() -> i32 {
    11
}
