//! The check of an FMU's shared library before it is loaded
//! (`cosim_fmi::binary`) on arbitrary bytes: it must accept or give a
//! reason, never panic, hang or allocate without bound, and read a file
//! (through `object`'s read cache, as `cosim` does) exactly as it reads
//! the same bytes in memory.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cosim_fmi::binary::{check_shared_library, check_shared_library_file};
use cosim_fmi::model_description::FmiVersion;
use libfuzzer_sys::fuzz_target;

/// One private file per fuzzing process.
fn workfile() -> &'static PathBuf {
    static FILE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &FILE
        .get_or_init(|| {
            let dir = match tempfile::tempdir() {
                Ok(d) => d,
                Err(e) => panic!("no temporary directory: {e}"),
            };
            let path = dir.path().join("library.so");
            (dir, path)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let in_memory = check_shared_library(data);
    match &in_memory {
        Ok(library) => {
            // Only an ELF file with a whole header gets through.
            assert!(data.starts_with(b"\x7fELF") && data.len() >= 52);
            if let Some(exports) = &library.exports {
                assert!(exports.windows(2).all(|w| w[0] < w[1]));
            }
            let _ = cosim_fmi::binary::missing_mandatory_function(library, FmiVersion::V2);
            let _ = cosim_fmi::binary::missing_mandatory_function(library, FmiVersion::V3);
        }
        Err(reason) => assert!(!reason.is_empty()),
    }
    let path = workfile();
    if std::fs::write(path, data).is_ok() {
        if let Ok(from_file) = check_shared_library_file(path) {
            assert_eq!(
                from_file, in_memory,
                "the file and the bytes read differently"
            );
        }
    }
});
