//! Extraction directories that outlive their process.
//!
//! An `.fmu` is extracted into `cosim-fmu-XXXXXX` in the temporary
//! directory (an `.ssp` into `cosim-ssp-XXXXXX`) and removed when the run
//! drops it, at an interrupt, or when an FMU call hangs past its timeout. A process killed outright (SIGKILL,
//! the OOM killer, a batch system's time limit) or dying of an FMU's
//! segfault removes nothing, and on a cluster node such directories pile
//! up run after run.
//!
//! So each extraction directory has a lock file beside it,
//! `cosim-fmu-XXXXXX.lock`, locked (`flock`, exclusive) for as long as the
//! directory is in use. The kernel releases the lock when the process
//! ends, however it ends. The first extraction of a process then removes
//! every directory of the same user whose lock file it can lock: their
//! owner is gone. A lock file appears under its name only once locked
//! (created as `.locking`, locked, then renamed), so a directory being
//! created is never taken for a stale one. Directories without a lock
//! file (left by an older `cosim`) are not touched.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, SystemTime};

use tempfile::TempDir;

/// The name every FMU extraction directory starts with.
pub const PREFIX: &str = "cosim-fmu-";

/// The names of the extraction directories a sweep considers: FMUs, and
/// SSP archives (`cosim-ssp`).
const PREFIXES: [&str; 2] = [PREFIX, "cosim-ssp-"];

/// How long a `.locking` file may be on its way to its name before a
/// sweep may take it for a leftover (a process killed between creating
/// and renaming it; a live one holds its lock anyway).
const LOCKING_GRACE: Duration = Duration::from_secs(60);

/// The lock that marks an extraction directory as in use. Dropping it
/// removes the lock file, then releases the lock (closing the file).
#[derive(Debug)]
pub struct ExtractionLock {
    path: PathBuf,
    _file: File,
}

impl Drop for ExtractionLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The lock file of extraction directory `dir` (`<dir>.lock`): whoever
/// removes the directory of a process that is gone removes it too (the
/// hosts of a killed master remove its extraction).
pub fn lock_path(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Creates an extraction directory named `prefix` and a random suffix in
/// the temporary directory, and its lock, locked; the first time in a
/// process, removes the directories left by processes that ended without
/// removing them. `prefix`: [`PREFIX`] or `"cosim-ssp-"`. On a file
/// system without locks (Lustre mounted without `flock`, some FUSE file
/// systems) the directory has no lock: it is used as before, and a later
/// sweep leaves it alone.
///
/// # Errors
///
/// Creating the directory or its lock file.
pub fn create_dir(prefix: &str) -> io::Result<(TempDir, Option<ExtractionLock>)> {
    debug_assert!(PREFIXES.contains(&prefix), "{prefix}");
    let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
    let lock = lock(dir.path())?;
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| {
        if let Some(temp) = dir.path().parent() {
            let removed = sweep_stale(temp, dir.path());
            if removed > 0 {
                tracing::info!(
                    "removed {removed} extraction director{} in {} left by cosim processes that ended without removing them",
                    if removed == 1 { "y" } else { "ies" },
                    temp.display()
                );
            }
        }
    });
    Ok((dir, lock))
}

/// Locks `dir`: its lock file is created under a name sweeps ignore,
/// locked, then renamed to its own. `None` where the file system has no
/// locks.
fn lock(dir: &Path) -> io::Result<Option<ExtractionLock>> {
    let path = lock_path(dir);
    let mut locking = dir.as_os_str().to_owned();
    locking.push(".locking");
    let locking = PathBuf::from(locking);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&locking)?;
    if let Err(e) = file.lock() {
        let _ = fs::remove_file(&locking);
        if locks_unsupported(&e) {
            tracing::debug!(
                "{}: the file system has no locks ({e}): the directory is not swept if this process is killed",
                dir.display()
            );
            return Ok(None);
        }
        return Err(e);
    }
    if let Err(e) = fs::rename(&locking, &path) {
        let _ = fs::remove_file(&locking);
        return Err(e);
    }
    Ok(Some(ExtractionLock { path, _file: file }))
}

/// Whether a failed lock says the file system has no locks at all.
fn locks_unsupported(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::Unsupported {
        return true;
    }
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error() {
        return [libc::ENOSYS, libc::ENOLCK, libc::EOPNOTSUPP, libc::ENOTSUP].contains(&code);
    }
    false
}

/// Removes from `temp` every extraction directory (and lock file) of the
/// owner of `own` whose lock no process holds; returns how many. Errors
/// (a directory another sweep removes first, one not ours) skip it.
pub(crate) fn sweep_stale(temp: &Path, own: &Path) -> usize {
    let Ok(entries) = fs::read_dir(temp) else {
        return 0;
    };
    let owner = fs::metadata(own).ok().map(|m| owner_of(&m));
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let (dir_name, locking) = match (name.strip_suffix(".lock"), name.strip_suffix(".locking"))
        {
            (Some(d), _) => (d, false),
            (_, Some(d)) => (d, true),
            _ => continue,
        };
        if !PREFIXES.iter().any(|p| dir_name.starts_with(p)) {
            continue;
        }
        let lock_file = entry.path();
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if !meta.is_file() || owner.is_some_and(|o| owner_of(&meta) != o) {
            continue;
        }
        if locking
            && meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_none_or(|age| age < LOCKING_GRACE)
        {
            continue;
        }
        // (Opened for writing too: where locks are emulated with POSIX
        // record locks, NFS, an exclusive lock needs it.)
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&lock_file) else {
            continue;
        };
        // Held: its directory is in use. (Locked here, it stays locked
        // while the directory goes, so no other sweep removes it too.)
        if file.try_lock().is_err() {
            continue;
        }
        let dir = temp.join(dir_name);
        match fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => continue,
        }
        let _ = fs::remove_file(&lock_file);
    }
    removed
}

#[cfg(unix)]
fn owner_of(meta: &fs::Metadata) -> u32 {
    use std::os::unix::fs::MetadataExt;
    meta.uid()
}

#[cfg(not(unix))]
fn owner_of(_meta: &fs::Metadata) -> u32 {
    0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn fake_extraction(temp: &Path, name: &str) -> PathBuf {
        let dir = temp.join(name);
        fs::create_dir_all(dir.join("binaries/linux64")).unwrap();
        fs::write(dir.join("modelDescription.xml"), "<fmiModelDescription/>").unwrap();
        dir
    }

    fn names(temp: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(temp)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    }

    /// A directory whose lock no process holds (an FMU's or an SSP's) goes
    /// with its lock file; one
    /// whose lock is held stays, as do a directory without a lock file (an
    /// older cosim's), one being created (`.locking`, young; an old one is
    /// a leftover) and anything not named `cosim-fmu-*`.
    #[test]
    fn a_sweep_removes_the_directories_whose_lock_nobody_holds() {
        let temp = tempfile::tempdir().unwrap();
        let t = temp.path();
        let own = fake_extraction(t, "cosim-fmu-own");
        let _own_lock = lock(&own).unwrap().unwrap();
        let dead = fake_extraction(t, "cosim-fmu-dead");
        fs::write(lock_path(&dead), "").unwrap();
        let ssp = fake_extraction(t, "cosim-ssp-dead");
        fs::write(lock_path(&ssp), "").unwrap();
        let dead_lock_only = t.join("cosim-fmu-gone.lock");
        fs::write(&dead_lock_only, "").unwrap();
        let live = fake_extraction(t, "cosim-fmu-live");
        let live_lock = lock(&live).unwrap().unwrap();
        fake_extraction(t, "cosim-fmu-old");
        fake_extraction(t, "cosim-fmu-new");
        fs::write(t.join("cosim-fmu-new.locking"), "").unwrap();
        fake_extraction(t, "cosim-fmu-stuck");
        let stuck = File::create(t.join("cosim-fmu-stuck.locking")).unwrap();
        stuck
            .set_modified(SystemTime::now() - 2 * LOCKING_GRACE)
            .unwrap();
        drop(stuck);
        fake_extraction(t, "other");
        fs::write(t.join("other.lock"), "").unwrap();

        assert_eq!(sweep_stale(t, &own), 3);
        assert_eq!(
            names(t),
            [
                "cosim-fmu-live",
                "cosim-fmu-live.lock",
                "cosim-fmu-new",
                "cosim-fmu-new.locking",
                "cosim-fmu-old",
                "cosim-fmu-own",
                "cosim-fmu-own.lock",
                "other",
                "other.lock",
            ]
        );
        // The live one's owner ends: its lock goes with it, and nothing is
        // left for the next sweep to remove.
        drop(live_lock);
        fs::remove_dir_all(&live).unwrap();
        assert_eq!(sweep_stale(t, &own), 0);
        assert!(!t.join("cosim-fmu-live.lock").exists());
    }

    /// The errors of a file system without locks are told from others.
    #[test]
    fn a_file_system_without_locks_is_told_from_other_failures() {
        for code in [libc::ENOSYS, libc::ENOLCK, libc::EOPNOTSUPP] {
            assert!(
                locks_unsupported(&io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
        assert!(locks_unsupported(&io::Error::from(
            io::ErrorKind::Unsupported
        )));
        for code in [libc::EACCES, libc::EBADF, libc::EIO, libc::EWOULDBLOCK] {
            assert!(
                !locks_unsupported(&io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
    }

    /// A lock is held by the open file, not by the process: a second open
    /// of the same lock file (a sweep in this process) cannot lock it.
    #[test]
    fn a_held_lock_cannot_be_taken_by_a_second_open() {
        let temp = tempfile::tempdir().unwrap();
        let dir = fake_extraction(temp.path(), "cosim-fmu-x");
        let held = lock(&dir).unwrap().unwrap();
        let again = File::open(lock_path(&dir)).unwrap();
        assert!(again.try_lock().is_err());
        drop(held);
        assert!(!lock_path(&dir).exists());
    }
}
