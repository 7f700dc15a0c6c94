//! The check of an FMU's shared library before it is loaded
//! (`cosim_fmi::binary`, `Fmu::open`, `Fmu::check_library`): real
//! libraries pass, truncated, foreign and non-ELF ones are refused with the
//! reason, missing FMI functions are found without running the library,
//! and loader errors name the `.fmu`, never the temporary directory.
//! Hostile libraries are made here (cut, patched, or compiled with `cc`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use cosim_fmi::binary::{
    FMI2_MANDATORY_FUNCTIONS, FMI3_MANDATORY_FUNCTIONS, check_shared_library,
    check_shared_library_file, mandatory_functions,
};
use cosim_fmi::ffi::fmi2::Fmi2Library;
use cosim_fmi::ffi::fmi3::Fmi3Library;
use cosim_fmi::{FmiError, FmiVersion, Fmu, InstantiateOptions, Interface};

fn dist() -> PathBuf {
    fmu_kit::dist::ensure_built().expect("building the project FMUs")
}

fn fmu(version: &str, model: &str) -> PathBuf {
    dist().join(version).join(format!("{model}.fmu"))
}

/// The bytes of the FMI 2 Gain FMU's shared library.
fn gain_library() -> Vec<u8> {
    let root = cosim_fmi::archive::FmuRoot::open(&fmu("fmi2", "Gain")).unwrap();
    let path = root
        .shared_library(cosim_fmi::FmiVersion::V2, "Gain")
        .unwrap();
    fs::read(path).unwrap()
}

fn refused(data: &[u8]) -> String {
    match check_shared_library(data) {
        Err(reason) => reason,
        Ok(lib) => panic!("accepted ({} bytes): {lib:?}", data.len()),
    }
}

/// Copies an extracted FMU to a directory we can edit.
fn unpacked_copy(fmu_file: &Path) -> tempfile::TempDir {
    let root = cosim_fmi::archive::FmuRoot::open(fmu_file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_dir(root.path(), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Zips the directory `dir` into `fmu`.
fn zip_dir(dir: &Path, fmu: &Path) {
    fn add(z: &mut zip::ZipWriter<fs::File>, base: &Path, dir: &Path) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path
                .strip_prefix(base)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            if path.is_dir() {
                add(z, base, &path);
            } else {
                z.start_file(name, zip::write::SimpleFileOptions::default())
                    .unwrap();
                z.write_all(&fs::read(&path).unwrap()).unwrap();
            }
        }
    }
    let mut z = zip::ZipWriter::new(fs::File::create(fmu).unwrap());
    add(&mut z, dir, dir);
    z.finish().unwrap();
}

/// Compiles `source` into the shared library `out` with `cc`, with
/// `extra` arguments after the source.
fn cc_shared(source: &str, out: &Path, extra: &[&str]) {
    let src = out.with_extension("c");
    fs::write(&src, source).unwrap();
    let output = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(out)
        .arg(&src)
        .args(extra)
        .output()
        .expect("a C compiler (cc) is needed for this test");
    assert!(
        output.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// C source defining each of `functions` (no arguments, nothing done: the
/// binding only resolves them when it loads the library).
fn stubs(functions: &[&str]) -> String {
    functions
        .iter()
        .map(|f| format!("void {f}(void) {{}}\n"))
        .collect()
}

/// A constructor that creates the file `marker` when the library is
/// loaded: its absence shows that nothing of the library ran.
fn constructor_writing(marker: &Path) -> String {
    format!(
        "#include <stdio.h>\n__attribute__((constructor)) static void cosim_test_loaded(void) {{\n  FILE *f = fopen(\"{}\", \"w\");\n  if (f) fclose(f);\n}}\n",
        marker.display()
    )
}

#[test]
fn the_project_fmus_and_the_system_libraries_pass() {
    for sub in ["fmi2", "fmi3", "variants", "quirks"] {
        let dir = dist().join(sub);
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "fmu") {
                continue;
            }
            let fmu = Fmu::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let functions = fmu
                .exported_fmi_functions()
                .unwrap()
                .expect("the kit's libraries have section headers");
            let mandatory = match fmu.model_description().fmi_version {
                cosim_fmi::FmiVersion::V2 => FMI2_MANDATORY_FUNCTIONS,
                cosim_fmi::FmiVersion::V3 => FMI3_MANDATORY_FUNCTIONS,
            };
            for f in mandatory {
                assert!(
                    functions.iter().any(|x| x == f),
                    "{}: {f} not listed",
                    path.display()
                );
            }
            assert!(
                functions
                    .iter()
                    .all(|f| f.starts_with("fmi2") || f.starts_with("fmi3")),
                "{functions:?}"
            );
        }
    }
    // Every shared library this test process has mapped (libc, libm, the
    // dynamic loader ...): none is refused. (The FMU libraries other tests
    // loaded stay mapped, never unloaded, their extraction directories
    // removed: "(deleted)", nothing to read.)
    let maps = fs::read_to_string("/proc/self/maps").unwrap();
    let mut checked = 0;
    let mut seen = std::collections::BTreeSet::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        if line.ends_with(" (deleted)") {
            continue;
        }
        if path.starts_with('/') && path.contains(".so") && seen.insert(path.to_string()) {
            let lib = check_shared_library_file(Path::new(path))
                .unwrap()
                .unwrap_or_else(|reason| panic!("{path}: refused: {reason}"));
            assert!(lib.exports.is_some_and(|e| !e.is_empty()), "{path}");
            checked += 1;
        }
    }
    assert!(checked >= 2, "{maps}");
}

#[test]
fn every_truncation_of_a_real_library_is_refused() {
    let lib = gain_library();
    let len = lib.len();
    assert!(check_shared_library(&lib).is_ok());
    // Any strict prefix: the section headers are the last thing in the
    // file, so even one byte less is seen.
    let mut cuts: Vec<usize> = (0..len).step_by(len / 251 + 1).collect();
    cuts.extend([1, 3, 4, 15, 16, 40, 63, 64, 100, 1000, len / 2, len - 1]);
    for cut in cuts {
        let reason = refused(&lib[..cut]);
        if cut == 0 {
            assert_eq!(reason, "the file is empty (0 bytes): not a shared library");
        } else {
            assert!(
                reason.starts_with("truncated: ")
                    && reason.contains(&format!("of a {cut}-byte file")),
                "cut at {cut}: {reason}"
            );
        }
    }
    // The messages say what ends where.
    assert_eq!(
        refused(&lib[..40]),
        "truncated: the ELF header would end at byte 64 of a 40-byte file"
    );
    let reason = refused(&lib[..1000]);
    assert!(
        reason.starts_with("truncated: segment ") && reason.contains("(PT_LOAD) ends at byte "),
        "{reason}"
    );
    let reason = refused(&lib[..len / 2]);
    assert!(reason.contains("(PT_LOAD) ends at byte"), "{reason}");
    let reason = refused(&lib[..len - 1]);
    assert!(
        reason.starts_with("truncated: the section headers end at byte ")
            && reason.ends_with(&format!("of a {}-byte file", len - 1)),
        "{reason}"
    );
    // Program headers cut in the middle.
    let reason = refused(&lib[..100]);
    assert!(
        reason.starts_with("truncated: the program headers end at byte "),
        "{reason}"
    );
}

/// `lib` with its ELF header's e_machine (offset 18, little-endian) set.
fn with_machine(lib: &[u8], machine: u16) -> Vec<u8> {
    let mut patched = lib.to_vec();
    patched[18..20].copy_from_slice(&machine.to_le_bytes());
    patched
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_library_for_another_machine_is_refused_naming_both() {
    let lib = gain_library();
    assert_eq!(
        refused(&with_machine(&lib, 183)),
        "built for aarch64, this machine is x86_64"
    );
    assert_eq!(
        refused(&with_machine(&lib, 243)),
        "built for riscv, this machine is x86_64"
    );
    assert_eq!(
        refused(&with_machine(&lib, 9999)),
        "built for machine type 9999 (e_machine), this machine is x86_64"
    );
    // Another class or byte order for the same machine.
    let mut class32 = lib.clone();
    class32[4] = 1;
    assert_eq!(
        refused(&class32),
        "a 32-bit library, this machine loads 64-bit ones"
    );
    let mut big = lib.clone();
    big[5] = 2;
    big[18..20].copy_from_slice(&62u16.to_be_bytes());
    assert_eq!(
        refused(&big),
        "a big-endian library, this machine is little-endian"
    );

    // Real foreign objects: i386 and x32 shared libraries, linked with the
    // system's binutils (`cc -c` needs no 32-bit C library).
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("f.c");
    fs::write(&src, "int fmi2DoStep(void) { return 0; }\n").unwrap();
    for (cflag, emulation, expected) in [
        (
            "-m32",
            "elf_i386",
            "built for i386 (32-bit), this machine is x86_64 (64-bit)",
        ),
        (
            "-mx32",
            "elf32_x86_64",
            "a 32-bit library, this machine loads 64-bit ones",
        ),
    ] {
        let obj = dir.path().join(format!("f{emulation}.o"));
        let so = dir.path().join(format!("f{emulation}.so"));
        let ok = Command::new("cc")
            .args([cflag, "-fPIC", "-c", "-o"])
            .arg(&obj)
            .arg(&src)
            .status()
            .unwrap()
            .success()
            && Command::new("ld")
                .args(["-m", emulation, "-shared", "-o"])
                .arg(&so)
                .arg(&obj)
                .status()
                .unwrap()
                .success();
        assert!(ok, "cc {cflag} -c / ld -m {emulation} failed");
        let reason = check_shared_library_file(&so).unwrap().unwrap_err();
        assert_eq!(reason, expected);
    }
}

#[test]
fn files_that_are_not_shared_libraries_are_refused() {
    let reason = refused(b"this is not a library\n");
    assert!(
        reason.starts_with(
            "not an ELF shared library: the file is text (it begins \"this is not a li"
        ),
        "{reason}"
    );
    assert!(refused(b"MZ\x90\x00\x03").contains("Windows (PE) file"));
    assert!(refused(b"\xcf\xfa\xed\xfe\x07\x00").contains("macOS (Mach-O) file"));
    assert!(refused(b"\x00\x01\x02\x03\x04").contains("begins with the bytes 00 01 02 03"));
    assert_eq!(
        refused(b"\x7fEL"),
        "truncated: the ELF identification would end at byte 16 of a 3-byte file"
    );
    let mut bad_class = gain_library();
    bad_class[4] = 7;
    assert!(refused(&bad_class).contains("unknown class 7"));

    // ELF, but not a shared object: an executable and an object file.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("main.c");
    fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let exe = dir.path().join("exe");
    let obj = dir.path().join("main.o");
    assert!(
        Command::new("cc")
            .args(["-no-pie", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("cc")
            .args(["-c", "-o"])
            .arg(&obj)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(
        check_shared_library_file(&exe).unwrap().unwrap_err(),
        "not a shared library: an executable (ET_EXEC)"
    );
    assert_eq!(
        check_shared_library_file(&obj).unwrap().unwrap_err(),
        "not a shared library: a relocatable object file (ET_REL, a .o file)"
    );
}

#[test]
fn a_hostile_library_in_an_fmu_is_refused_at_open_naming_the_fmu_and_the_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = unpacked_copy(&fmu("fmi2", "Integrator"));
    let so = dir.path().join("binaries/linux64/Integrator.so");
    let original = fs::read(&so).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("cut1000", original[..1000].to_vec(), "truncated: segment "),
        (
            "half",
            original[..original.len() / 2].to_vec(),
            "truncated: ",
        ),
        (
            "text",
            b"just some text\n".to_vec(),
            "not an ELF shared library",
        ),
    ];
    for (name, bytes, why) in cases {
        fs::write(&so, &bytes).unwrap();
        let fmu_file = tmp.path().join(format!("{name}.fmu"));
        zip_dir(dir.path(), &fmu_file);
        let err = Fmu::open(&fmu_file).unwrap_err();
        match &err {
            FmiError::Archive {
                archive,
                entry,
                reason,
            } => {
                assert_eq!(archive, &fmu_file);
                assert_eq!(entry.as_deref(), Some("binaries/linux64/Integrator.so"));
                assert!(reason.starts_with(why), "{name}: {reason}");
            }
            other => panic!("{name}: unexpected {other}"),
        }
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "{}: entry 'binaries/linux64/Integrator.so': ",
                fmu_file.display()
            )),
            "{text}"
        );
        // The unpacked directory is checked the same way.
        let err = Fmu::open(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("binaries/linux64/Integrator.so") && err.contains(why),
            "{err}"
        );
    }
    // Patched to another architecture.
    #[cfg(target_arch = "x86_64")]
    {
        fs::write(&so, with_machine(&original, 183)).unwrap();
        let fmu_file = tmp.path().join("aarch64.fmu");
        zip_dir(dir.path(), &fmu_file);
        assert_eq!(
            Fmu::open(&fmu_file).unwrap_err().to_string(),
            format!(
                "{}: entry 'binaries/linux64/Integrator.so': built for aarch64, this machine is x86_64",
                fmu_file.display()
            )
        );
    }
    // Restored, it opens again.
    fs::write(&so, &original).unwrap();
    Fmu::open(dir.path()).unwrap();
}

#[test]
fn a_missing_mandatory_function_is_found_without_running_the_library() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = unpacked_copy(&fmu("fmi2", "Gain"));
    let so = dir.path().join("binaries/linux64/Gain.so");
    let marker = tmp.path().join("loaded");
    let without_do_step: Vec<&str> = FMI2_MANDATORY_FUNCTIONS
        .iter()
        .copied()
        .filter(|f| *f != "fmi2DoStep")
        .collect();
    cc_shared(
        &(stubs(&without_do_step) + &constructor_writing(&marker)),
        &so,
        &[],
    );
    let fmu_file = tmp.path().join("NoDoStep.fmu");
    zip_dir(dir.path(), &fmu_file);
    let err = Fmu::open(&fmu_file).unwrap_err();
    match &err {
        FmiError::MissingFunction { library, function } => {
            assert_eq!(function, "fmi2DoStep");
            assert_eq!(library, &fmu_file.join("binaries/linux64/Gain.so"));
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "{}: missing mandatory FMI function 'fmi2DoStep'",
            fmu_file.join("binaries/linux64/Gain.so").display()
        )
    );
    assert!(!marker.exists(), "the library's constructor ran");

    // With every mandatory function: opens, lists its functions without
    // running anything; loading it (only) runs its constructor.
    cc_shared(
        &(stubs(FMI2_MANDATORY_FUNCTIONS)
            + "void fmi2GetFMUstate(void) {}\n"
            + &constructor_writing(&marker)),
        &so,
        &[],
    );
    let fmu = Fmu::open(dir.path()).unwrap();
    let functions = fmu.exported_fmi_functions().unwrap().unwrap();
    let mut expected: Vec<String> = FMI2_MANDATORY_FUNCTIONS
        .iter()
        .map(|s| s.to_string())
        .chain(["fmi2GetFMUstate".to_string()])
        .collect();
    expected.sort();
    assert_eq!(functions, expected);
    assert!(!marker.exists(), "listing the functions ran the library");
    assert_eq!(fmu.load().unwrap(), vec!["fmi2GetFMUstate"]);
    assert!(marker.exists(), "the test's marker does not work");
}

/// The binding's mandatory functions are exactly the lists the check uses,
/// for each interface: a library with all of them loads and can be
/// instantiated for it, one without any one of them cannot (the
/// interface's own functions are checked for it, the others at load).
#[test]
fn the_mandatory_lists_agree_with_the_binding() {
    let tmp = tempfile::tempdir().unwrap();
    type Load = fn(&Path, Interface) -> Result<(), FmiError>;
    let load2: Load = |p, i| Fmi2Library::load(p)?.require(i);
    let load3: Load = |p, i| Fmi3Library::load(p)?.require(i);
    for (tag, version, load) in [
        ("fmi2", FmiVersion::V2, load2),
        ("fmi3", FmiVersion::V3, load3),
    ] {
        for interface in [Interface::CoSimulation, Interface::ModelExchange] {
            let list: Vec<&str> = mandatory_functions(version, interface).collect();
            let tag = format!("{tag}_{}", interface.element());
            let all = tmp.path().join(format!("{tag}_all.so"));
            cc_shared(&stubs(&list), &all, &[]);
            load(&all, interface).unwrap_or_else(|e| panic!("{tag}: {e}"));
            let threads: Vec<_> = list
                .iter()
                .enumerate()
                .map(|(i, omitted)| {
                    let so = tmp.path().join(format!("{tag}_{i}.so"));
                    let source = stubs(
                        &list
                            .iter()
                            .copied()
                            .filter(|f| f != omitted)
                            .collect::<Vec<_>>(),
                    );
                    std::thread::spawn(move || {
                        cc_shared(&source, &so, &[]);
                        so
                    })
                })
                .collect();
            for (thread, omitted) in threads.into_iter().zip(list.iter()) {
                let so = thread.join().unwrap();
                match load(&so, interface) {
                    Err(FmiError::MissingFunction { function, .. }) => {
                        assert_eq!(&function, omitted, "{tag}");
                    }
                    other => panic!("{tag} without {omitted}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn loader_errors_name_the_fmu_not_the_temporary_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = unpacked_copy(&fmu("fmi2", "Gain"));
    let so = dir.path().join("binaries/linux64/Gain.so");
    // Every FMI function is there, but a data symbol cannot be resolved:
    // the ELF check passes, `dlopen` fails.
    cc_shared(
        &(stubs(FMI2_MANDATORY_FUNCTIONS)
            + "extern int cosim_no_such_variable;\nint *cosim_ref = &cosim_no_such_variable;\n"),
        &so,
        &[],
    );
    let fmu_file = tmp.path().join("Unresolved.fmu");
    zip_dir(dir.path(), &fmu_file);
    let fmu = Fmu::open(&fmu_file).unwrap();
    let err = fmu
        .instantiate("g", &InstantiateOptions::default())
        .unwrap_err();
    match &err {
        FmiError::LoadLibrary { library, reason } => {
            assert_eq!(library, &fmu_file.join("binaries/linux64/Gain.so"));
            assert!(
                reason.contains("undefined symbol: cosim_no_such_variable"),
                "{reason}"
            );
        }
        other => panic!("unexpected {other}"),
    }
    let text = err.to_string();
    assert!(!text.contains("cosim-fmu-"), "{text}");
    assert!(
        text.contains(&format!(
            "{}: undefined symbol",
            fmu_file.join("binaries/linux64/Gain.so").display()
        )),
        "{text}"
    );
}
