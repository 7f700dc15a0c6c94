//! Safe extraction of `.fmu` archives. Every archive is built here with the
//! zip writer; nothing binary is committed.

// Test helpers outside #[test] functions may panic and use expect().
#![allow(clippy::panic, clippy::expect_used)]

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use cosim_fmi::FmiError;
use cosim_fmi::archive::{ArchiveLimits, FmuRoot, extract_archive, library_path};
use cosim_fmi::model_description::FmiVersion;
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

const MD2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="{g}">
  <CoSimulation modelIdentifier="m"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="0" causality="output"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="1"/></Outputs></ModelStructure>
</fmiModelDescription>
"#;

enum Entry<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

fn options() -> SimpleFileOptions {
    SimpleFileOptions::default().compression_method(CompressionMethod::Deflated)
}

fn build_zip(path: &Path, entries: &[Entry<'_>]) {
    let mut zip = zip::ZipWriter::new(File::create(path).expect("create zip"));
    for e in entries {
        match e {
            Entry::File(name, data) => {
                zip.start_file(*name, options()).expect("start_file");
                zip.write_all(data).expect("write");
            }
            Entry::Dir(name) => {
                zip.add_directory(*name, options()).expect("add_directory");
            }
            Entry::Symlink(name, target) => {
                zip.add_symlink(*name, *target, options())
                    .expect("add_symlink");
            }
        }
    }
    zip.finish().expect("finish");
}

fn archive_error(
    result: Result<impl std::fmt::Debug, FmiError>,
) -> (PathBuf, Option<String>, String) {
    match result {
        Err(FmiError::Archive {
            archive,
            entry,
            reason,
        }) => (archive, entry, reason),
        other => panic!("expected an Archive error, got {other:?}"),
    }
}

/// Total bytes of all files under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in fs::read_dir(dir).expect("read_dir").flatten() {
        let meta = fs::symlink_metadata(entry.path()).expect("metadata");
        if meta.is_dir() {
            total += bytes_under(&entry.path());
        } else {
            total += meta.len();
        }
    }
    total
}

fn is_empty_dir(dir: &Path) -> bool {
    fs::read_dir(dir).expect("read_dir").next().is_none()
}

#[test]
fn extracts_a_valid_fmu_and_cleans_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("m.fmu");
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::Dir("binaries/"),
            Entry::Dir("binaries/linux64/"),
            Entry::File("binaries/linux64/m.so", b"\x7fELF"),
            Entry::File("resources/data/table.csv", b"a,b\n1,2\n"),
            Entry::File("./resources\\doc\\index.html", b"<html/>"),
            Entry::File("documentation/index.html", b"<html/>"),
        ],
    );
    let root = FmuRoot::open(&fmu).expect("open");
    let dir = root.path().to_path_buf();
    assert!(root.is_extracted());
    assert_eq!(root.source(), fmu);
    assert_eq!(
        fs::read(dir.join("resources/data/table.csv")).expect("read"),
        b"a,b\n1,2\n"
    );
    // Backslashes are separators.
    assert!(dir.join("resources/doc/index.html").is_file());
    // What no instance needs is left in the archive, and listed.
    assert!(!dir.join("documentation").exists());
    assert_eq!(
        fs::read_to_string(dir.join(cosim_fmi::archive::SKIPPED_LIST)).expect("skipped list"),
        "documentation/index.html"
    );
    assert_eq!(root.resources_dir(), Some(dir.join("resources")));
    assert_eq!(root.platform_directories(), ["linux64"]);
    assert_eq!(
        root.shared_library(FmiVersion::V2, "m").expect("library"),
        dir.join("binaries/linux64/m.so")
    );
    let md = root.read_model_description().expect("model description");
    assert_eq!(md.model_name, "M");
    drop(root);
    assert!(!dir.exists(), "the temporary directory is removed on drop");
}

#[test]
fn accepts_an_unpacked_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::write(tmp.path().join("modelDescription.xml"), MD2).expect("write");
    fs::create_dir_all(tmp.path().join("binaries/x86_64-linux")).expect("mkdir");
    fs::write(tmp.path().join("binaries/x86_64-linux/m.so"), b"").expect("write");
    let root = FmuRoot::open(tmp.path()).expect("open dir");
    assert!(!root.is_extracted());
    assert_eq!(root.path(), tmp.path());
    assert_eq!(
        root.shared_library(FmiVersion::V3, "m").expect("lib"),
        tmp.path().join("binaries/x86_64-linux/m.so")
    );
    drop(root);
    assert!(
        tmp.path().join("modelDescription.xml").exists(),
        "a user directory is never removed"
    );

    let empty = tempfile::tempdir().expect("tempdir");
    let (_, entry, _) = archive_error(FmuRoot::open(empty.path()));
    assert_eq!(entry.as_deref(), Some("modelDescription.xml"));
}

#[test]
fn refuses_zip_slip() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cases: &[(&str, &str)] = &[
        ("../evil", ".."),
        ("binaries/../../evil", ".."),
        ("/abs/evil", "absolute"),
        ("..\\evil", ".."),
        ("\\abs\\evil", "absolute"),
        ("C:/evil", "drive"),
        ("c:\\evil", "drive"),
    ];
    for (i, (name, why)) in cases.iter().enumerate() {
        let fmu = tmp.path().join(format!("slip{i}.fmu"));
        build_zip(
            &fmu,
            &[
                Entry::File("modelDescription.xml", MD2.as_bytes()),
                Entry::File(name, b"owned"),
            ],
        );
        let dest = tmp.path().join(format!("out{i}"));
        fs::create_dir(&dest).expect("mkdir");
        let (archive, entry, reason) =
            archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
        assert_eq!(archive, fmu);
        assert_eq!(entry.as_deref(), Some(*name));
        assert!(reason.contains(why), "{name}: {reason}");
        // Names are checked before anything is written.
        assert!(is_empty_dir(&dest), "{name}: something was extracted");
        assert!(!tmp.path().join("evil").exists());
        assert!(!Path::new("/abs/evil").exists());
        // Through FmuRoot too.
        let (_, entry, _) = archive_error(FmuRoot::open(&fmu));
        assert_eq!(entry.as_deref(), Some(*name));
    }
}

#[test]
fn refuses_symlinks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("link.fmu");
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::Symlink("resources/passwd", "/etc/passwd"),
            Entry::File("resources/passwd/../x", b""),
        ],
    );
    let dest = tmp.path().join("out");
    fs::create_dir(&dest).expect("mkdir");
    // The '..' entry is caught by the name check first; without it, the
    // symlink itself is refused.
    let (_, entry, _) = archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
    assert_eq!(entry.as_deref(), Some("resources/passwd/../x"));

    let fmu = tmp.path().join("link2.fmu");
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::Symlink("binaries", "/usr/lib"),
        ],
    );
    let dest = tmp.path().join("out2");
    fs::create_dir(&dest).expect("mkdir");
    let (_, entry, reason) = archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
    assert_eq!(entry.as_deref(), Some("binaries"));
    assert!(reason.contains("symbolic link"), "{reason}");
    assert!(fs::symlink_metadata(dest.join("binaries")).is_err());
}

/// Streams `size` zeros through the deflate writer into one entry.
fn build_bomb(path: &Path, size: u64) {
    let mut zip = zip::ZipWriter::new(File::create(path).expect("create zip"));
    zip.start_file("modelDescription.xml", options())
        .expect("start");
    zip.write_all(MD2.as_bytes()).expect("write");
    zip.start_file(
        "resources/bomb.bin",
        options()
            .compression_level(Some(6))
            .large_file(size >= u64::from(u32::MAX)),
    )
    .expect("start");
    let chunk = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        zip.write_all(&chunk[..n]).expect("write");
        left -= n as u64;
    }
    zip.finish().expect("finish");
}

#[test]
fn refuses_a_zip_bomb_while_streaming() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("bomb.fmu");
    // 3 GiB of zeros compress to a few MiB (deflate, level 6).
    let size: u64 = 3 << 30;
    build_bomb(&fmu, size);
    let compressed = fs::metadata(&fmu).expect("metadata").len();
    assert!(compressed < 16 << 20, "compressed size {compressed}");

    // Per-entry limit.
    let limits = ArchiveLimits {
        max_entry_size: 1 << 20,
        ..ArchiveLimits::default()
    };
    let dest = tmp.path().join("out");
    fs::create_dir(&dest).expect("mkdir");
    let (_, entry, reason) = archive_error(extract_archive(&fmu, &dest, &limits));
    assert_eq!(entry.as_deref(), Some("resources/bomb.bin"));
    assert!(reason.contains("per entry"), "{reason}");
    let written = fs::metadata(dest.join("resources/bomb.bin"))
        .expect("partial file")
        .len();
    assert!(written <= 1 << 20, "{written} bytes written");
    assert!(bytes_under(&dest) <= (1 << 20) + MD2.len() as u64);

    // Total limit.
    let limits = ArchiveLimits {
        max_total_size: 2 << 20,
        ..ArchiveLimits::default()
    };
    let dest = tmp.path().join("out2");
    fs::create_dir(&dest).expect("mkdir");
    let (_, entry, reason) = archive_error(extract_archive(&fmu, &dest, &limits));
    assert_eq!(entry.as_deref(), Some("resources/bomb.bin"));
    assert!(reason.contains("in total"), "{reason}");
    assert!(bytes_under(&dest) <= 2 << 20);
}

#[test]
fn total_limit_across_entries() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("many.fmu");
    let blob = vec![7u8; 100_000];
    let names: Vec<String> = (0..5).map(|i| format!("resources/f{i}.bin")).collect();
    let mut entries = vec![Entry::File("modelDescription.xml", MD2.as_bytes())];
    for n in &names {
        entries.push(Entry::File(n, &blob));
    }
    build_zip(&fmu, &entries);
    let limits = ArchiveLimits {
        max_total_size: 250_000,
        ..ArchiveLimits::default()
    };
    let dest = tmp.path().join("out");
    fs::create_dir(&dest).expect("mkdir");
    let (_, entry, _) = archive_error(extract_archive(&fmu, &dest, &limits));
    assert_eq!(entry.as_deref(), Some("resources/f2.bin"));
    assert!(bytes_under(&dest) <= 250_000);

    // Within limits it works and reports what it wrote.
    let dest = tmp.path().join("ok");
    fs::create_dir(&dest).expect("mkdir");
    let stats = extract_archive(&fmu, &dest, &ArchiveLimits::default()).expect("extract");
    assert_eq!(stats.entries, 6);
    assert_eq!(stats.files, 6);
    assert_eq!(stats.bytes, 500_000 + MD2.len() as u64);
}

#[test]
fn refuses_too_many_entries() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("many.fmu");
    let names: Vec<String> = (0..10).map(|i| format!("resources/{i}.txt")).collect();
    let mut entries = vec![Entry::File("modelDescription.xml", MD2.as_bytes())];
    for n in &names {
        entries.push(Entry::File(n, b"x"));
    }
    build_zip(&fmu, &entries);
    let limits = ArchiveLimits {
        max_entries: 5,
        ..ArchiveLimits::default()
    };
    let (archive, entry, reason) = archive_error(FmuRoot::open_with_limits(&fmu, &limits));
    assert_eq!(archive, fmu);
    assert_eq!(entry, None);
    assert!(reason.contains("11 entries"), "{reason}");
    assert!(FmuRoot::open(&fmu).is_ok());
}

#[test]
fn refuses_truncated_and_corrupt_archives() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("ok.fmu");
    let payload: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::File("resources/data.bin", &payload),
        ],
    );
    let bytes = fs::read(&fmu).expect("read");

    // Truncated: the central directory is gone.
    for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
        let truncated = tmp.path().join(format!("trunc{cut}.fmu"));
        fs::write(&truncated, &bytes[..cut]).expect("write");
        let (archive, entry, reason) = archive_error(FmuRoot::open(&truncated));
        assert_eq!(archive, truncated);
        assert_eq!(entry, None);
        assert!(reason.contains("not a valid zip"), "{reason}");
    }

    // Corrupt data inside an entry: fails on that entry (CRC or deflate).
    let mut corrupt = bytes.clone();
    let data_start = corrupt.len() / 3;
    for b in &mut corrupt[data_start..data_start + 64] {
        *b ^= 0x5a;
    }
    let path = tmp.path().join("corrupt.fmu");
    fs::write(&path, &corrupt).expect("write");
    let (_, entry, reason) = archive_error(FmuRoot::open(&path));
    assert_eq!(entry.as_deref(), Some("resources/data.bin"), "{reason}");

    // Not a zip at all.
    let path = tmp.path().join("text.fmu");
    fs::write(&path, "hello").expect("write");
    archive_error(FmuRoot::open(&path));

    // Missing file: I/O error naming it.
    match FmuRoot::open(&tmp.path().join("nope.fmu")) {
        Err(FmiError::Io { path, .. }) => assert!(path.ends_with("nope.fmu")),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn refuses_missing_model_description() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("nomd.fmu");
    build_zip(
        &fmu,
        &[
            Entry::File("sub/modelDescription.xml", MD2.as_bytes()),
            Entry::File("binaries/linux64/m.so", b""),
        ],
    );
    let dest = tmp.path().join("out");
    fs::create_dir(&dest).expect("mkdir");
    let (archive, entry, reason) =
        archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
    assert_eq!(archive, fmu);
    assert_eq!(entry.as_deref(), Some("modelDescription.xml"));
    assert!(reason.contains("missing"), "{reason}");
    assert!(is_empty_dir(&dest));
    let message = archive_error(FmuRoot::open(&fmu)).2;
    assert!(message.contains("root"), "{message}");
}

#[test]
fn missing_binary_lists_platforms() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("win.fmu");
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::File("binaries/win64/m.dll", b""),
            Entry::File("binaries/darwin64/m.dylib", b""),
            Entry::File("binaries/linux64/other.so", b""),
        ],
    );
    let root = FmuRoot::open(&fmu).expect("open");
    match root.shared_library(FmiVersion::V2, "m") {
        Err(e @ FmiError::MissingBinary { .. }) => {
            let text = e.to_string();
            let FmiError::MissingBinary {
                archive,
                expected,
                library,
                found,
            } = e
            else {
                unreachable!()
            };
            assert_eq!(archive, fmu);
            assert_eq!(expected, "linux64");
            assert_eq!(library, "m.so");
            assert_eq!(found, ["darwin64", "linux64", "win64"]);
            assert!(text.contains("binaries/linux64/m.so"), "{text}");
            assert!(text.contains("darwin64, linux64, win64"), "{text}");
        }
        other => panic!("unexpected {other:?}"),
    }
    match library_path(root.path(), &fmu, FmiVersion::V3, "m") {
        Err(FmiError::MissingBinary {
            expected, found, ..
        }) => {
            assert_eq!(expected, "x86_64-linux");
            assert_eq!(found.len(), 3);
        }
        other => panic!("unexpected {other:?}"),
    }

    // No binaries directory at all.
    let bare = tempfile::tempdir().expect("tempdir");
    match library_path(bare.path(), bare.path(), FmiVersion::V2, "m") {
        Err(e @ FmiError::MissingBinary { .. }) => {
            assert!(
                e.to_string().contains("found platform directories: none"),
                "{e}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }

    // A model identifier that is not a plain file name.
    for bad in ["../m", "a/b", "", ".."] {
        archive_error(library_path(root.path(), &fmu, FmiVersion::V2, bad));
    }
}

#[test]
fn model_description_errors_name_the_archive() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("bad.fmu");
    build_zip(
        &fmu,
        &[Entry::File(
            "modelDescription.xml",
            b"<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\">\n</fmiModelDescription>",
        )],
    );
    let root = FmuRoot::open(&fmu).expect("open");
    match root.read_model_description() {
        Err(FmiError::ModelDescription { file, line, .. }) => {
            assert_eq!(file, fmu.join("modelDescription.xml"));
            assert_eq!(line, 1);
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// A stored (uncompressed) zip of `entries` in which every occurrence of
/// the name `alias` is then rewritten to `name` (same length), in the local
/// headers and in the central directory: the zip writer refuses duplicate
/// names, so this is how an archive with two entries of one name is made.
fn zip_with_duplicate(path: &Path, entries: &[(&str, &[u8])], alias: &str, name: &str) {
    assert_eq!(alias.len(), name.len());
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    for (n, data) in entries {
        zip.start_file(*n, stored).expect("start_file");
        zip.write_all(data).expect("write");
    }
    let mut bytes = zip.finish().expect("finish").into_inner();
    let (from, to) = (alias.as_bytes(), name.as_bytes());
    let mut i = 0;
    let mut replaced = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            replaced += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert_eq!(
        replaced, 2,
        "the alias in the local header and the central directory"
    );
    fs::write(path, bytes).expect("write zip");
}

const MD2_OTHER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="Other" guid="{h}">
  <CoSimulation modelIdentifier="m"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="0" causality="output"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="1"/></Outputs></ModelStructure>
</fmiModelDescription>
"#;

#[test]
fn refuses_two_model_descriptions() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("two_md.fmu");
    zip_with_duplicate(
        &fmu,
        &[
            ("modelDescription.xml", MD2.as_bytes()),
            ("binaries/linux64/m.so", b"x"),
            ("modelDescriptioX.xml", MD2_OTHER.as_bytes()),
        ],
        "modelDescriptioX.xml",
        "modelDescription.xml",
    );
    let dest = tmp.path().join("out");
    fs::create_dir(&dest).expect("mkdir");
    let (archive, entry, reason) =
        archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
    assert_eq!(archive, fmu);
    assert_eq!(entry.as_deref(), Some("modelDescription.xml"));
    assert!(reason.contains("duplicate entry"), "{reason}");
    // Refused before anything is written.
    assert!(is_empty_dir(&dest));
    let message = archive_error(FmuRoot::open(&fmu)).2;
    assert!(message.contains("duplicate entry"), "{message}");
}

#[test]
fn refuses_any_duplicate_file_entry_but_not_a_repeated_directory() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Two files of one name, anywhere in the archive: exactly the same
    // name (written under a same-length alias, then rewritten), or the same
    // name once `\` is read as a separator (the writer lets that through).
    let cases: [(&str, &str, Option<&str>); 3] = [
        (
            "resources/data.txt",
            "resources/data.txt",
            Some("resources/datX.txt"),
        ),
        (
            "binaries/linux64/m.so",
            "binaries/linux64/m.so",
            Some("binaries/linux64/X.so"),
        ),
        ("resources/a.txt", "resources\\a.txt", None),
    ];
    for (i, &(first, second, alias)) in cases.iter().enumerate() {
        let fmu = tmp.path().join(format!("dup{i}.fmu"));
        match alias {
            Some(alias) => zip_with_duplicate(
                &fmu,
                &[
                    ("modelDescription.xml", MD2.as_bytes()),
                    (first, b"one"),
                    (alias, b"two"),
                ],
                alias,
                second,
            ),
            None => build_zip(
                &fmu,
                &[
                    Entry::File("modelDescription.xml", MD2.as_bytes()),
                    Entry::File(first, b"one"),
                    Entry::File(second, b"two"),
                ],
            ),
        }
        let dest = tmp.path().join(format!("out{i}"));
        fs::create_dir(&dest).expect("mkdir");
        let (_, entry, reason) =
            archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
        assert_eq!(entry.as_deref(), Some(second), "case {i}: {reason}");
        assert!(reason.contains("duplicate entry"), "case {i}: {reason}");
        assert!(is_empty_dir(&dest), "case {i}: written before refusing");
    }

    // A file and a directory of the same name.
    let fmu = tmp.path().join("filedir.fmu");
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::File("resources/x", b"file"),
            Entry::File("resources/x/y", b"below"),
        ],
    );
    let dest = tmp.path().join("out_filedir");
    fs::create_dir(&dest).expect("mkdir");
    let (_, entry, reason) = archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
    assert_eq!(entry.as_deref(), Some("resources/x"), "{reason}");
    assert!(reason.contains("duplicate entry"), "{reason}");

    // The same directory listed twice is harmless and accepted.
    let fmu = tmp.path().join("dirdir.fmu");
    zip_with_duplicate(
        &fmu,
        &[
            ("modelDescription.xml", MD2.as_bytes()),
            ("resources/", b""),
            ("resourceX/", b""),
        ],
        "resourceX/",
        "resources/",
    );
    let dest = tmp.path().join("out_dirdir");
    fs::create_dir(&dest).expect("mkdir");
    extract_archive(&fmu, &dest, &ArchiveLimits::default()).expect("a repeated directory");
    assert!(dest.join("resources").is_dir());
}

/// An entry whose name the file system cannot hold is the archive's fault,
/// named by the entry, never by the path it would have had.
#[test]
fn an_entry_name_too_long_for_the_file_system_is_named_by_the_entry() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fmu = tmp.path().join("long.fmu");
    let name = format!("resources/{}/x.txt", "n".repeat(300));
    build_zip(
        &fmu,
        &[
            Entry::File("modelDescription.xml", MD2.as_bytes()),
            Entry::File(&name, b"x"),
        ],
    );
    let dest = tmp.path().join("out");
    fs::create_dir(&dest).expect("mkdir");
    let (archive, entry, reason) =
        archive_error(extract_archive(&fmu, &dest, &ArchiveLimits::default()));
    assert_eq!(archive, fmu);
    assert_eq!(entry.as_deref(), Some(name.as_str()));
    assert!(
        reason.starts_with(
            "the name is too long for the file system to extract it (300 bytes in its longest component, 316 in all"
        ),
        "{reason}"
    );
}
