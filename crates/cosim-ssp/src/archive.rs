//! Safe extraction of `.ssp` archives (the rules of `cosim_fmi::archive`:
//! no path traversal, no links or special files, no two entries of one
//! name unless their bytes are the same, bounded entry count and
//! decompressed sizes counted on the bytes actually written).

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

/// The default system structure at the root of an `.ssp`.
pub(crate) const DEFAULT_SSD: &str = "SystemStructure.ssd";

const MAX_ENTRIES: usize = 10_000;
const MAX_TOTAL: u64 = 2 * 1024 * 1024 * 1024;
const MAX_ENTRY: u64 = 1024 * 1024 * 1024;

/// The entry name as a relative path that stays inside the target
/// directory; `Err` says why not.
fn safe_relative_path(name: &str) -> Result<PathBuf, String> {
    if name.contains('\0') {
        return Err("the entry name contains a NUL character".to_string());
    }
    let normalised = name.replace('\\', "/");
    if normalised.starts_with('/') {
        return Err("absolute entry names are refused".to_string());
    }
    let mut out = PathBuf::new();
    for part in normalised.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("entry names with '..' are refused (zip slip)".to_string()),
            p if p.contains(':') => {
                return Err("entry names with a drive or stream prefix are refused".to_string());
            }
            p => {
                let c = Path::new(p).components().next();
                if !matches!(c, Some(Component::Normal(_))) {
                    return Err(format!("entry name component '{p}' is refused"));
                }
                out.push(p);
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err("the entry name is empty".to_string());
    }
    Ok(out)
}

/// A refusal of `cosim_fmi::archive` as a sentence that names the entry,
/// not the archive (the caller names it).
pub(crate) fn entry_sentence(e: cosim_fmi::FmiError) -> String {
    match e {
        cosim_fmi::FmiError::Archive {
            entry: Some(entry),
            reason,
            ..
        } => format!("entry '{entry}': {reason}"),
        cosim_fmi::FmiError::Archive { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// An error creating `path` for the entry `name`: a name too long for the
/// file system names the entry (the extraction directory is gone by the
/// time the message is read), other errors the path.
fn creating(name: &str, path: &Path, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::InvalidFilename {
        format!("entry '{name}': the name is too long for the file system to extract it ({e})")
    } else {
        format!("cannot create {}: {e}", path.display())
    }
}

/// Extracts the `.ssp` archive `ssp` into the directory `dest` (created if
/// needed). `Err` is a sentence naming the entry at fault.
pub(crate) fn extract_ssp(ssp: &Path, dest: &Path) -> Result<(), String> {
    let file = File::open(ssp).map_err(|e| format!("cannot read the archive: {e}"))?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| format!("not a valid zip archive (truncated or corrupt?): {e}"))?;
    let count = zip.len();
    if count > MAX_ENTRIES {
        return Err(format!(
            "the archive has {count} entries, more than the limit of {MAX_ENTRIES}"
        ));
    }
    // Copies of one name: one entry if their bytes are the same (named in
    // a warning), refused otherwise, as in an FMU.
    let limits = cosim_fmi::archive::ArchiveLimits {
        max_total_size: MAX_TOTAL,
        max_entries: MAX_ENTRIES,
        max_entry_size: MAX_ENTRY,
    };
    cosim_fmi::archive::identical_duplicates(ssp, &zip, &limits).map_err(entry_sentence)?;
    let mut has_ssd = false;
    let mut files: HashSet<PathBuf> = HashSet::new();
    for i in 0..count {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| format!("cannot read entry #{i}: {e}"))?;
        let name = entry
            .name()
            .map_err(|e| format!("entry #{i} has an unreadable name: {e}"))?
            .into_owned();
        let path = safe_relative_path(&name).map_err(|r| format!("entry '{name}': {r}"))?;
        if path == Path::new(DEFAULT_SSD) && !entry.is_dir() {
            has_ssd = true;
        }
        // Names that differ in the zip but not once `\` and `.` are read.
        if !entry.is_dir() && !files.insert(path) {
            return Err(format!("entry '{name}': {}", cosim_fmi::archive::DUPLICATE));
        }
    }
    if !has_ssd {
        return Err(format!(
            "the archive has no {DEFAULT_SSD} at its root: not an SSP package"
        ));
    }
    fs::create_dir_all(dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
    let mut total: u64 = 0;
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..count {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| format!("cannot read entry #{i}: {e}"))?;
        let name = entry
            .name()
            .map_err(|e| format!("entry #{i} has an unreadable name: {e}"))?
            .into_owned();
        let relative = safe_relative_path(&name).map_err(|r| format!("entry '{name}': {r}"))?;
        if let Some(mode) = entry.unix_mode() {
            match mode & 0o170_000 {
                0 | 0o100_000 | 0o040_000 => {}
                0o120_000 => return Err(format!("entry '{name}': symbolic links are refused")),
                _ => return Err(format!("entry '{name}': special files are refused")),
            }
        }
        if entry.is_symlink() {
            return Err(format!("entry '{name}': symbolic links are refused"));
        }
        let target = dest.join(&relative);
        // Never write through a link already present in the destination.
        let mut probe = dest.to_path_buf();
        for c in relative.components() {
            probe.push(c);
            if fs::symlink_metadata(&probe).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "entry '{name}': {} is a symbolic link",
                    probe.display()
                ));
            }
        }
        if entry.is_dir() {
            fs::create_dir_all(&target).map_err(|e| creating(&name, &target, &e))?;
            continue;
        }
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).map_err(|e| creating(&name, parent, &e))?;
        }
        let mut out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&target)
            .map_err(|e| creating(&name, &target, &e))?;
        let mut written: u64 = 0;
        loop {
            let n = entry
                .read(&mut buf)
                .map_err(|e| format!("entry '{name}': corrupt: {e}"))?;
            if n == 0 {
                break;
            }
            let n64 = n as u64;
            if written.saturating_add(n64) > MAX_ENTRY {
                return Err(format!(
                    "entry '{name}' decompresses to more than the limit of {MAX_ENTRY} bytes (zip bomb?)"
                ));
            }
            if total.saturating_add(n64) > MAX_TOTAL {
                return Err(format!(
                    "the archive decompresses to more than the limit of {MAX_TOTAL} bytes (zip bomb?)"
                ));
            }
            out.write_all(buf.get(..n).unwrap_or_default())
                .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
            written += n64;
            total += n64;
        }
        out.flush()
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            safe_relative_path("resources/a.fmu"),
            Ok(PathBuf::from("resources/a.fmu"))
        );
        assert_eq!(
            safe_relative_path("./resources\\b.ssv"),
            Ok(PathBuf::from("resources/b.ssv"))
        );
        assert!(safe_relative_path("../x").is_err());
        assert!(safe_relative_path("a/../../x").is_err());
        assert!(safe_relative_path("/etc/passwd").is_err());
        assert!(safe_relative_path("C:/x").is_err());
        assert!(safe_relative_path("").is_err());
    }
}
