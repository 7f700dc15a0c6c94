//! `.fmu` extraction on arbitrary bytes: refuse or extract within the
//! limits, never write outside the target directory, never panic.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cosim_fmi::archive::{ArchiveLimits, extract_archive};
use libfuzzer_sys::fuzz_target;

/// One private directory per fuzzing process.
fn workdir() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("no temporary directory: {e}"),
        };
        let path = dir.path().to_path_buf();
        (dir, path)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    let dir = workdir();
    let archive = dir.join("input.fmu");
    let dest = dir.join("out");
    let _ = std::fs::remove_dir_all(&dest);
    if std::fs::write(&archive, data).is_err() || std::fs::create_dir(&dest).is_err() {
        return;
    }
    // Small limits: a fuzzer finds bombs quickly.
    let limits = ArchiveLimits {
        max_total_size: 16 << 20,
        max_entries: 1000,
        max_entry_size: 8 << 20,
    };
    if extract_archive(&archive, &dest, &limits).is_ok() {
        // Everything landed inside `dest`, and the model description it
        // insists on is there.
        let md = dest.join("modelDescription.xml");
        assert!(md.is_file(), "extracted without a modelDescription.xml");
        if let Ok(xml) = std::fs::read_to_string(&md) {
            let _ = cosim_fmi::model_description::parse_model_description(&xml, &md);
        }
    }
    // Nothing escaped next to the target directory.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            assert!(
                name == "input.fmu" || name == "out",
                "an entry escaped the extraction directory: {name:?}"
            );
        }
    }
});
