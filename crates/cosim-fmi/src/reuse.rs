//! FMUs and instances kept from one run to the next, for a process that
//! makes many short runs (a sweep's worker, the sweep itself).
//!
//! Opening an FMU extracts it into a temporary directory and removes the
//! directory when the FMU is dropped; for a run of a second or less that
//! is most of the run (a sweep of 200 one-second runs of the Reference
//! FMUs' BouncingBall spent 48 % of its time creating and deleting files
//! and 25 % unzipping). While a [`KeepOpen`] guard lives:
//!
//! - [`crate::Fmu::open`] hands out an FMU opened before from the same
//!   file (the same path, length and modification time) that nothing
//!   uses any more, with its extraction and its loaded library, and keeps
//!   what it opens for the next run. As with library copies
//!   ([`crate::ffi`]'s pool), FMUs open at the same time never share one:
//!   a second open while the first is in use extracts anew.
//! - A process can be handed FMUs another process extracted and keeps
//!   ([`use_extracted`], [`extracted`]): a sweep's workers open the
//!   sweep's extractions instead of making their own.
//! - A Co-Simulation instance dropped after a run that ended with
//!   `fmi*Terminate` (or never set up) is reset (`fmi2Reset` /
//!   `fmi3Reset`) and parked on its FMU; the next instantiation of that
//!   FMU with the same name and options takes it back instead of
//!   instantiating anew, as FMPy's loops over `reset()` do. Not parked:
//!   an instance whose run failed, one the FMU refuses to reset, one with
//!   an FMI call log, a Model Exchange instance, and every instance of an
//!   FMU that can be instantiated only once per process. [`fresh_instances`]
//!   turns parking off (the FMU then gets a new instance every run).
//!
//! Dropping the last guard drops what is kept: the parked instances are
//! freed and the extraction directories removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::Fmu;
use crate::error::Result;

/// A file as it was when opened: the path as given, its length and its
/// modification time (an FMU rebuilt since is another file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    /// The path as it was opened.
    pub path: PathBuf,
    /// Its length in bytes.
    pub len: u64,
    /// Its modification time, nanoseconds since the Unix epoch (0 where
    /// the file system has none).
    pub modified_ns: u64,
}

impl FileIdentity {
    /// The identity of the file at `path` now.
    ///
    /// # Errors
    ///
    /// The file's metadata cannot be read.
    pub fn of(path: &Path) -> std::io::Result<FileIdentity> {
        let meta = std::fs::metadata(path)?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Ok(FileIdentity {
            path: path.to_path_buf(),
            len: meta.len(),
            modified_ns,
        })
    }
}

/// An FMU file extracted (whole or in part) into a directory that its
/// extracting process keeps as long as it holds a [`KeepOpen`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extracted {
    /// The `.fmu` file.
    pub file: FileIdentity,
    /// The directory it was extracted into.
    pub root: PathBuf,
}

struct Kept {
    /// The live guards.
    guards: usize,
    /// The FMUs opened while a guard lived, by file.
    opened: Vec<(FileIdentity, Fmu)>,
    /// FMUs another process extracted.
    elsewhere: Vec<Extracted>,
    /// Instances are not parked.
    fresh_instances: bool,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept {
    guards: 0,
    opened: Vec::new(),
    elsewhere: Vec::new(),
    fresh_instances: false,
});

fn kept() -> MutexGuard<'static, Kept> {
    // A panic under the lock left the lists whole (a push or a search).
    KEPT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// While it lives, FMUs and instances are kept from run to run (see the
/// module). Guards nest: what is kept is dropped with the last one.
#[derive(Debug)]
#[must_use = "FMUs are kept only while the guard lives"]
pub struct KeepOpen {
    _private: (),
}

/// Starts keeping FMUs and instances from run to run, until the returned
/// guard (and every other) is dropped.
pub fn keep_open() -> KeepOpen {
    kept().guards += 1;
    KeepOpen { _private: () }
}

impl Drop for KeepOpen {
    fn drop(&mut self) {
        let dropped = {
            let mut kept = kept();
            kept.guards = kept.guards.saturating_sub(1);
            if kept.guards > 0 {
                return;
            }
            kept.elsewhere.clear();
            kept.fresh_instances = false;
            std::mem::take(&mut kept.opened)
        };
        // Freed outside the lock: freeing instances calls into FMUs.
        drop(dropped);
    }
}

/// Whether instances are parked for the next run (`false`: every run
/// instantiates anew). Applies until the last guard is dropped.
pub fn fresh_instances(fresh: bool) {
    kept().fresh_instances = fresh;
}

/// The FMUs this process extracted and keeps: for another process to
/// open instead of extracting them again ([`use_extracted`]), while the
/// guard lives.
pub fn extracted() -> Vec<Extracted> {
    kept()
        .opened
        .iter()
        .filter(|(_, fmu)| fmu.is_extracted())
        .map(|(file, fmu)| Extracted {
            file: file.clone(),
            root: fmu.root().to_path_buf(),
        })
        .collect()
}

/// FMUs another process extracted and keeps: [`crate::Fmu::open`] of the
/// same file (same path, length and modification time) opens the
/// directory instead of extracting. Only while a guard lives.
pub fn use_extracted(list: Vec<Extracted>) {
    let mut kept = kept();
    if kept.guards > 0 {
        kept.elsewhere.extend(list);
    }
}

/// The name of the extraction of `file` the processes of this machine
/// share ([`crate::extraction::shared_dir`]): a hash of the file (its
/// canonical path, length and modification time), the user and this
/// build's version. `None` off Linux, where the user is not known here
/// (the FMU is extracted by this process alone).
fn shared_key(file: &FileIdentity) -> Option<String> {
    use std::hash::{Hash, Hasher};
    let uid = process_uid()?;
    // (SipHash with fixed keys: the same name in every process of a build.)
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::fs::canonicalize(&file.path)
        .unwrap_or_else(|_| file.path.clone())
        .hash(&mut h);
    (file.len, file.modified_ns, uid, env!("CARGO_PKG_VERSION")).hash(&mut h);
    Some(format!("{:016x}", h.finish()))
}

/// The user this process runs as (`/proc/self` is theirs).
#[cfg(target_os = "linux")]
fn process_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

#[cfg(not(target_os = "linux"))]
fn process_uid() -> Option<u32> {
    None
}

/// How many instantiations this process served with a parked instance.
static REUSED: AtomicU64 = AtomicU64::new(0);

/// How many instantiations this process has served with a parked
/// instance (reset after its run) instead of a new one.
pub fn instances_reused() -> u64 {
    REUSED.load(Ordering::Relaxed)
}

/// Counts an instantiation served by a parked instance.
pub(crate) fn count_reused() {
    REUSED.fetch_add(1, Ordering::Relaxed);
}

/// Whether instances of FMUs kept are parked when dropped.
pub(crate) fn parking() -> bool {
    let kept = kept();
    kept.guards > 0 && !kept.fresh_instances
}

/// [`crate::Fmu::open`] while FMUs are kept: a kept FMU of the same file
/// that nothing uses, or the FMU opened now (from another process's
/// extraction if there is one), kept. `None` when nothing is kept (or the
/// file cannot be read: the plain open reports that).
pub(crate) fn open(path: &Path) -> Option<Result<Fmu>> {
    let (file, elsewhere, first) = {
        let kept = kept();
        if kept.guards == 0 {
            return None;
        }
        let file = FileIdentity::of(path).ok()?;
        if let Some((_, fmu)) = kept
            .opened
            .iter()
            .find(|(f, fmu)| *f == file && fmu.is_unused())
        {
            return Some(Ok(fmu.clone()));
        }
        let root = kept
            .elsewhere
            .iter()
            .find(|e| e.file == file)
            .map(|e| e.root.clone());
        let first = !kept.opened.iter().any(|(f, _)| *f == file);
        (file, root, first)
    };
    // Extracted without the lock (it may take long). The first open of a
    // file in this process uses the extraction the processes of this
    // machine share (the shards of a sweep); a second one open at the
    // same time gets one of its own, as without sharing.
    let opened = match (elsewhere, first.then(|| shared_key(&file)).flatten()) {
        (Some(root), _) => Fmu::open_extracted(&root, path).or_else(|_| Fmu::open_here(path)),
        (None, Some(key)) => Fmu::open_shared(path, &key),
        (None, None) => Fmu::open_here(path),
    };
    if let Ok(fmu) = &opened {
        let mut kept = kept();
        if kept.guards > 0 {
            fmu.keep_instances();
            kept.opened.push((file, fmu.clone()));
        }
    }
    Some(opened)
}
