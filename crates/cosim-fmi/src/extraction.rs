//! Extraction directories that outlive their process.
//!
//! An `.fmu` is extracted into `cosim-fmu-*` in the temporary directory (an
//! `.ssp` into `cosim-ssp-*`) and removed when the run drops it, at an
//! interrupt, or when an FMU call hangs past its timeout. A process killed
//! outright (SIGKILL, the OOM killer, a batch system's time limit) or dying
//! of an FMU's segfault removes nothing, and on a cluster node such
//! directories pile up run after run.
//!
//! So a process that extracts holds one lock, whatever the number of its
//! directories: a lock file `cosim-owner-<id>.lock` in the temporary
//! directory, locked (`flock`, exclusive) while the process has an
//! extraction directory, and every directory it makes is named after it,
//! `cosim-fmu-<id>-XXXXXX` (one descriptor per process, not per FMU: a run
//! of 2000 FMUs needs no more than any other). The kernel releases the
//! lock when the process ends, however it ends. The first extraction of a
//! process then removes, for every owner lock of the same user that it can
//! lock (its process is gone), the directories named after it, then the
//! lock file. A lock file appears under its name only once locked (created
//! as `.locking`, locked, then renamed) and before any directory is named
//! after it, so a directory being made is never taken for a stale one; a
//! directory that its process could not remove (a failure part-way, no
//! descriptors left) keeps the lock file there, for the next process to
//! remove both once this one has ended. The process removes its lock file
//! when its last directory is gone.
//!
//! Directories of an older `cosim` (`cosim-fmu-XXXXXX`, with a lock file
//! `cosim-fmu-XXXXXX.lock` each) are removed the same way, lock by lock;
//! those without any lock file are not touched.
//!
//! The processes of one machine that make many runs of the same FMU (the
//! shards of a sweep, each a process of its own) share one extraction
//! ([`shared_dir`]): `cosim-fmu-shared<key>`, named after the FMU file and
//! this build, with a lock file `cosim-fmu-shared<key>.lock` of its own.
//! Every process using it holds that lock shared; one that finds the
//! directory missing extracts into a directory of its own and renames it
//! into place once complete (of two doing so at once, one's rename fails
//! and it uses the other's); the last one out (the one that can lock it
//! exclusively) removes it. A process killed releases its share with its
//! end, and the directory goes as an older `cosim`'s does: the next
//! process to sweep finds its lock free.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime};

use tempfile::TempDir;

/// The name every FMU extraction directory starts with.
pub const PREFIX: &str = "cosim-fmu-";

/// The names of the extraction directories a sweep considers: FMUs, and
/// SSP archives (`cosim-ssp`).
const PREFIXES: [&str; 2] = [PREFIX, "cosim-ssp-"];

/// The name a shared extraction directory starts with (no `-` after it:
/// it is no owner's, [`owner_id`]).
const SHARED_PREFIX: &str = "cosim-fmu-shared";

/// The file a shared extraction holds once it is complete.
const COMPLETE: &str = ".cosim-extracted";

/// The name of a process's lock file: `cosim-owner-<id>.lock`.
const OWNER_PREFIX: &str = "cosim-owner-";

/// How long a `.locking` file may be on its way to its name before a
/// sweep may take it for a leftover (a process killed between creating
/// and renaming it; a live one holds its lock anyway).
const LOCKING_GRACE: Duration = Duration::from_secs(60);

/// The lock of this process, while it has extraction directories.
struct Owner {
    /// The random part of the lock file's name, which the directories carry.
    id: String,
    /// The temporary directory: the lock file and the directories are there.
    temp: PathBuf,
    /// `<temp>/cosim-owner-<id>.lock`.
    path: PathBuf,
    /// Holds the lock; closed when the last directory is gone.
    _file: File,
    /// The directories made and not yet removed (or given up on).
    users: usize,
    /// A directory could not be removed: the lock file stays for the
    /// next process to remove it with the directory once this one ends.
    leftover: bool,
}

/// The extraction directories of this process and its lock.
struct State {
    /// The lock (`None` before the first extraction, after the last, and
    /// where the file system has no locks).
    owner: Option<Owner>,
    /// Every extraction directory of this process not removed yet, for an
    /// end of the process that drops none of them ([`remove_all`]).
    dirs: Vec<PathBuf>,
}

static STATE: Mutex<State> = Mutex::new(State {
    owner: None,
    dirs: Vec::new(),
});

/// An extraction directory, locked as its process's: removed on drop, then
/// its share of the lock released (the last one out removes the lock file,
/// unless a directory could not be removed).
#[derive(Debug)]
pub struct ExtractionDir {
    dir: Option<TempDir>,
    /// Whether the directory counts in the owner's users.
    locked: bool,
}

impl ExtractionDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), TempDir::path)
    }
}

impl Drop for ExtractionDir {
    fn drop(&mut self) {
        let (path, removed) = match self.dir.take() {
            Some(dir) => {
                let path = dir.path().to_path_buf();
                let removed = dir.close().is_ok() || fs::symlink_metadata(&path).is_err();
                (Some(path), removed)
            }
            None => (None, true),
        };
        let Ok(mut state) = STATE.lock() else {
            return;
        };
        if let Some(path) = path {
            state.dirs.retain(|d| *d != path);
        }
        if !self.locked {
            return;
        }
        let Some(owner) = state.owner.as_mut() else {
            return;
        };
        owner.users = owner.users.saturating_sub(1);
        owner.leftover |= !removed;
        if owner.users == 0 && !owner.leftover {
            // Removed while locked, then closed: a sweep that opened it
            // before finds it held, or, locking it after, no directory of it.
            let _ = fs::remove_file(&owner.path);
            state.owner = None;
        }
    }
}

/// Removes every extraction directory of this process, and its lock file
/// once none is left, for an end of the process that drops none of them
/// (`_exit` while an FMU call hangs). Their libraries may still be mapped
/// and running: on Linux that is safe, the files go when the last mapping
/// does. Skipped if another thread holds the state (the next process
/// removes what is left).
pub fn remove_all() {
    let Ok(mut state) = STATE.try_lock() else {
        return;
    };
    let mut all = true;
    for dir in std::mem::take(&mut state.dirs) {
        all &= fs::remove_dir_all(&dir).is_ok() || fs::symlink_metadata(&dir).is_err();
    }
    if let Some(owner) = &state.owner
        && all
    {
        let _ = fs::remove_file(&owner.path);
    }
}

/// Creates an extraction directory named `prefix`, the process's lock id
/// and a random suffix in the temporary directory, the process's lock
/// being taken first if it is not held yet; the first time in a process,
/// removes the directories left by processes that ended without removing
/// them. `prefix`: [`PREFIX`] or `"cosim-ssp-"`. On a file system without
/// locks (Lustre mounted without `flock`, some FUSE file systems) the
/// directory is named `prefix` and a random suffix and has no lock: it is
/// used as before, and a later sweep leaves it alone.
///
/// # Errors
///
/// Creating the lock file or the directory.
pub fn create_dir(prefix: &str) -> io::Result<ExtractionDir> {
    create_dir_in(prefix, &std::env::temp_dir())
}

/// [`create_dir`] in `temp`, unless the process's lock is already held in
/// another temporary directory (its directories go beside it).
fn create_dir_in(prefix: &str, temp: &Path) -> io::Result<ExtractionDir> {
    debug_assert!(PREFIXES.contains(&prefix), "{prefix}");
    let (temp, id) = join(temp)?;
    // From here on the directory counts in the owner's users: dropping it
    // (a failure below included) leaves.
    let mut made = ExtractionDir {
        dir: None,
        locked: id.is_some(),
    };
    let name = match &id {
        Some(id) => format!("{prefix}{id}-"),
        None => prefix.to_string(),
    };
    let dir = tempfile::Builder::new().prefix(&name).tempdir_in(&temp)?;
    if let Ok(mut state) = STATE.lock() {
        state.dirs.push(dir.path().to_path_buf());
    }
    made.dir = Some(dir);
    sweep_once(&temp, made.path());
    Ok(made)
}

/// The first time in a process: removes the extraction directories in
/// `temp` left by processes that ended without removing them (`own`:
/// one of this process's, whose user is the one whose leftovers go).
fn sweep_once(temp: &Path, own: &Path) {
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| {
        let removed = sweep_stale(temp, own);
        if removed > 0 {
            tracing::info!(
                "removed {removed} extraction director{} in {} left by cosim processes that ended without removing them",
                if removed == 1 { "y" } else { "ies" },
                temp.display()
            );
        }
    });
}

/// An extraction directory the processes of this machine share
/// ([`shared_dir`]); dropping it gives up this process's share, and the
/// last process out removes it.
#[derive(Debug)]
pub struct SharedDir {
    path: PathBuf,
    lock_path: PathBuf,
    /// Locked shared while this process uses the directory.
    lock: Option<File>,
}

impl SharedDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let Some(file) = self.lock.take() else {
            return;
        };
        // Exclusive: no other process uses it. (The share is given up
        // first either way; a process waiting to extract then finds the
        // directory complete, or its lock file gone and starts anew.)
        if file.try_lock().is_ok() && same_file(&file, &self.lock_path) {
            let _ = fs::remove_dir_all(&self.path);
            let _ = fs::remove_file(&self.lock_path);
        }
    }
}

/// The extraction `cosim-fmu-shared<key>` in the temporary directory,
/// made by `extract` (into an empty directory of this process's, renamed
/// to the shared name once complete) if no process has made it yet, and
/// held shared until the returned [`SharedDir`] is dropped (see the
/// module). `key`: letters and digits, naming the FMU file and how it is
/// extracted. `Ok(None)` where it cannot be shared (a file system without
/// locks, a directory of another user): the caller extracts one of its
/// own.
///
/// # Errors
///
/// `extract`'s (what it extracted is removed), or `on_io` of an error
/// creating this process's directory.
pub fn shared_dir<E>(
    key: &str,
    extract: &mut dyn FnMut(&Path) -> std::result::Result<(), E>,
    on_io: impl Fn(io::Error) -> E,
) -> std::result::Result<Option<SharedDir>, E> {
    shared_dir_in(&std::env::temp_dir(), key, extract, on_io)
}

/// [`shared_dir`] in `temp`.
fn shared_dir_in<E>(
    temp: &Path,
    key: &str,
    extract: &mut dyn FnMut(&Path) -> std::result::Result<(), E>,
    on_io: impl Fn(io::Error) -> E,
) -> std::result::Result<Option<SharedDir>, E> {
    debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()), "{key}");
    let temp = temp.to_path_buf();
    let path = temp.join(format!("{SHARED_PREFIX}{key}"));
    let lock_path = temp.join(format!("{SHARED_PREFIX}{key}.lock"));
    // (A few rounds: each is lost only to a process that removed the
    // directory, as its last user, between our opening and locking it.)
    for _ in 0..8 {
        let Ok(file) = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
        else {
            return Ok(None);
        };
        // Shared at once: a process that extracts holds no lock (it
        // renames its complete directory into place); only the last user
        // removing it holds it exclusively, briefly.
        if file.lock_shared().is_err() {
            return Ok(None);
        }
        if !same_file(&file, &lock_path) {
            continue;
        }
        if !path.join(COMPLETE).is_file() {
            let made = create_dir_in(PREFIX, &temp).map_err(&on_io)?;
            let done = extract(made.path())
                .and_then(|()| fs::write(made.path().join(COMPLETE), b"").map_err(&on_io));
            if let Err(e) = done {
                // (Ours goes with `made`; the lock file too, if unused.)
                if file.try_lock().is_ok() && same_file(&file, &lock_path) {
                    let _ = fs::remove_file(&lock_path);
                }
                return Err(e);
            }
            // Taken by another process meanwhile (the name exists, not
            // empty): ours goes, theirs is used.
            let _ = fs::rename(made.path(), &path);
            drop(made);
            if !path.join(COMPLETE).is_file() {
                continue;
            }
        }
        sweep_once(&temp, &path);
        return Ok(Some(SharedDir {
            path,
            lock_path,
            lock: Some(file),
        }));
    }
    Ok(None)
}

/// Whether the open `file` is the one at `path` (not a file removed
/// meanwhile, whose name another one has taken).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.is_file()
}

/// Counts one more directory of this process, taking its lock in `temp`
/// first if it has none; returns the temporary directory and the lock's
/// id (`None` where the file system has no locks).
fn join(temp: &Path) -> io::Result<(PathBuf, Option<String>)> {
    let mut state = STATE
        .lock()
        .map_err(|_| io::Error::other("the extraction lock state was poisoned by a panic"))?;
    if let Some(o) = state.owner.as_mut() {
        o.users += 1;
        return Ok((o.temp.clone(), Some(o.id.clone())));
    }
    let Some((id, path, file)) = take_lock(temp)? else {
        return Ok((temp.to_path_buf(), None));
    };
    state.owner = Some(Owner {
        id: id.clone(),
        temp: temp.to_path_buf(),
        path,
        _file: file,
        users: 1,
        leftover: false,
    });
    Ok((temp.to_path_buf(), Some(id)))
}

/// Creates and locks a new owner lock file in `temp`: under a name sweeps
/// leave alone for a while (`.locking`), locked, then renamed to its own.
/// Returns its id, path and open file; `None` where the file system has no
/// locks.
fn take_lock(temp: &Path) -> io::Result<Option<(String, PathBuf, File)>> {
    let locking = tempfile::Builder::new()
        .prefix(OWNER_PREFIX)
        .suffix(".locking")
        .rand_bytes(10)
        .tempfile_in(temp)?;
    let (file, locking) = locking.keep().map_err(|e| e.error)?;
    let id = locking
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(OWNER_PREFIX))
        .and_then(|n| n.strip_suffix(".locking"))
        .unwrap_or_default()
        .to_string();
    if let Err(e) = file.lock() {
        let _ = fs::remove_file(&locking);
        if locks_unsupported(&e) {
            tracing::debug!(
                "{}: the file system has no locks ({e}): extraction directories are not swept if this process is killed",
                temp.display()
            );
            return Ok(None);
        }
        return Err(e);
    }
    let path = owner_lock_path(temp, &id);
    if let Err(e) = fs::rename(&locking, &path) {
        let _ = fs::remove_file(&locking);
        return Err(e);
    }
    Ok(Some((id, path, file)))
}

/// `<temp>/cosim-owner-<id>.lock`.
fn owner_lock_path(temp: &Path, id: &str) -> PathBuf {
    temp.join(format!("{OWNER_PREFIX}{id}.lock"))
}

/// The owner id an extraction directory's name carries
/// (`cosim-fmu-<id>-XXXXXX`), if it is one of this version's.
fn owner_id(name: &str) -> Option<&str> {
    let rest = PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    let (id, suffix) = rest.split_once('-')?;
    (!id.is_empty() && !suffix.is_empty()).then_some(id)
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

/// The process that made extraction directory `dir` is gone without
/// removing it (the master of a `cosim host`, killed): removes `dir`, then,
/// if no process holds its owner's lock, the owner's other directories and
/// its lock file (hosts of the same master may be doing the same). Only a
/// directory named as an extraction directory is touched.
pub fn remove_orphaned(dir: &Path) {
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    if !PREFIXES.iter().any(|p| name.starts_with(p)) {
        return;
    }
    let uid = fs::symlink_metadata(dir).ok().map(|m| owner_of(&m));
    // A shared extraction goes only if no process uses it (holds its lock).
    if name.starts_with(SHARED_PREFIX) {
        if let Some(temp) = dir.parent() {
            sweep_old(temp, &format!("{name}.lock"), uid);
        }
        return;
    }
    let _ = fs::remove_dir_all(dir);
    if let (Some(temp), Some(id)) = (dir.parent(), owner_id(name)) {
        sweep_owner(temp, id, &listing(temp), uid);
    }
}

/// The names in `temp` that sweeps consider (extraction directories and
/// lock files of either kind).
fn listing(temp: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(temp) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(OWNER_PREFIX) || PREFIXES.iter().any(|p| n.starts_with(p)))
        .collect()
}

/// Removes from `temp` every extraction directory (and lock file) of the
/// owner of `own` whose lock no process holds; returns how many. Errors
/// (a directory another sweep removes first, one not ours) skip it.
pub(crate) fn sweep_stale(temp: &Path, own: &Path) -> usize {
    let names = listing(temp);
    let uid = fs::metadata(own).ok().map(|m| owner_of(&m));
    let mut removed = 0;
    for name in &names {
        if let Some(rest) = name.strip_prefix(OWNER_PREFIX) {
            if let Some(id) = rest.strip_suffix(".lock") {
                removed += sweep_owner(temp, id, &names, uid);
            } else if rest.ends_with(".locking") {
                // Killed before its rename: no directory carries its id.
                let path = temp.join(name);
                if is_old_leftover(&path, uid) {
                    let _ = fs::remove_file(path);
                }
            }
        } else {
            removed += sweep_old(temp, name, uid);
        }
    }
    removed
}

/// If no process holds the lock of owner `id`, removes its directories
/// among `names` in `temp`, then, if all are gone, its lock file; returns
/// how many directories it removed. Lock files of another user than `uid`
/// are left alone.
fn sweep_owner(temp: &Path, id: &str, names: &[String], uid: Option<u32>) -> usize {
    let lock_file = owner_lock_path(temp, id);
    let Some(file) = lock_if_free(&lock_file, uid) else {
        return 0;
    };
    let mut removed = 0;
    let mut all = true;
    for name in names.iter().filter(|n| owner_id(n) == Some(id)) {
        match fs::remove_dir_all(temp.join(name)) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => all = false,
        }
    }
    // Still locked here: no other sweep removes the directories meanwhile.
    if all {
        let _ = fs::remove_file(&lock_file);
    }
    drop(file);
    removed
}

/// The lock file at `path`, of user `uid`, locked here: its process is
/// gone. `None` if it is held, not a file or another user's.
fn lock_if_free(path: &Path, uid: Option<u32>) -> Option<File> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || uid.is_some_and(|u| owner_of(&meta) != u) {
        return None;
    }
    // (Opened for writing too: where locks are emulated with POSIX record
    // locks, NFS, an exclusive lock needs it.)
    let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
    file.try_lock().ok()?;
    Some(file)
}

/// Whether the `.locking` file at `path` is user `uid`'s and older than
/// [`LOCKING_GRACE`].
fn is_old_leftover(path: &Path, uid: Option<u32>) -> bool {
    fs::symlink_metadata(path).is_ok_and(|meta| {
        meta.is_file()
            && uid.is_none_or(|u| owner_of(&meta) == u)
            && meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age >= LOCKING_GRACE)
    })
}

/// An older `cosim`'s lock file `name` (`cosim-fmu-XXXXXX.lock`, one per
/// directory, or `.locking` on its way there): if no process holds it,
/// removes its directory and it; returns 1 if a directory went.
fn sweep_old(temp: &Path, name: &str, uid: Option<u32>) -> usize {
    let (dir_name, locking) = match (name.strip_suffix(".lock"), name.strip_suffix(".locking")) {
        (Some(d), _) => (d, false),
        (_, Some(d)) => (d, true),
        _ => return 0,
    };
    let lock_file = temp.join(name);
    if locking && !is_old_leftover(&lock_file, uid) {
        return 0;
    }
    let Some(file) = lock_if_free(&lock_file, uid) else {
        return 0;
    };
    let removed = match fs::remove_dir_all(temp.join(dir_name)) {
        Ok(()) => 1,
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(_) => return 0,
    };
    let _ = fs::remove_file(&lock_file);
    drop(file);
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

    /// The directories of an owner whose lock nobody holds go (an FMU's
    /// and an SSP's), then its lock file; those of a live owner stay, as
    /// do an owner's `.locking` file while young (an old one is a
    /// leftover), a directory without any lock file, and anything not
    /// named `cosim-*`. An older cosim's directories, one lock file each,
    /// go the same way.
    #[test]
    fn a_sweep_removes_the_directories_whose_owner_is_gone() {
        let temp = tempfile::tempdir().unwrap();
        let t = temp.path();
        let own = fake_extraction(t, "cosim-fmu-own");
        let (live, _, _held) = take_lock(t).unwrap().unwrap();
        fake_extraction(t, &format!("cosim-fmu-{live}-aaaaaa"));
        fs::write(owner_lock_path(t, "dead"), "").unwrap();
        fake_extraction(t, "cosim-fmu-dead-aaaaaa");
        fake_extraction(t, "cosim-fmu-dead-bbbbbb");
        fake_extraction(t, "cosim-ssp-dead-cccccc");
        fake_extraction(t, "cosim-fmu-gone-aaaaaa");
        fs::write(t.join("cosim-owner-young.locking"), "").unwrap();
        let stuck = File::create(t.join("cosim-owner-stuck.locking")).unwrap();
        stuck
            .set_modified(SystemTime::now() - 2 * LOCKING_GRACE)
            .unwrap();
        drop(stuck);
        let old = fake_extraction(t, "cosim-fmu-old");
        fs::write(t.join("cosim-fmu-old.lock"), "").unwrap();
        fake_extraction(t, "other");
        fs::write(t.join("other.lock"), "").unwrap();

        assert_eq!(sweep_stale(t, &own), 4);
        let mut kept = vec![
            "cosim-fmu-gone-aaaaaa".to_string(),
            format!("cosim-fmu-{live}-aaaaaa"),
            "cosim-fmu-own".to_string(),
            format!("cosim-owner-{live}.lock"),
            "cosim-owner-young.locking".to_string(),
            "other".to_string(),
            "other.lock".to_string(),
        ];
        kept.sort();
        assert_eq!(names(t), kept);
        assert!(!old.exists());
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
        let (id, path, held) = take_lock(temp.path()).unwrap().unwrap();
        assert_eq!(path, owner_lock_path(temp.path(), &id));
        assert!(lock_if_free(&path, None).is_none());
        drop(held);
        assert!(lock_if_free(&path, None).is_some());
    }

    /// The one test of the process's own lock (the state is the
    /// process's): all its directories name one lock file, removed with
    /// the last of them; a directory that could not be removed keeps it
    /// there after the process, for the next sweep to remove both.
    #[test]
    fn a_process_holds_one_lock_for_all_its_directories() {
        let temp = tempfile::tempdir().unwrap();
        let t = temp.path();
        let fmu = create_dir_in(PREFIX, t).unwrap();
        let ssp = create_dir_in("cosim-ssp-", t).unwrap();
        let listed = names(t);
        assert_eq!(listed.len(), 3, "{listed:?}");
        let lock = listed
            .iter()
            .find_map(|n| n.strip_prefix(OWNER_PREFIX)?.strip_suffix(".lock"))
            .unwrap()
            .to_string();
        for dir in [&fmu, &ssp] {
            let name = dir.path().file_name().unwrap().to_str().unwrap();
            assert_eq!(owner_id(name), Some(lock.as_str()), "{name}");
        }
        assert!(lock_if_free(&owner_lock_path(t, &lock), None).is_none());
        drop(fmu);
        assert_eq!(names(t).len(), 2);
        drop(ssp);
        assert_eq!(names(t), Vec::<String>::new());

        // A directory its process cannot remove (here a file in its
        // place): the lock file stays.
        let stuck = create_dir_in(PREFIX, t).unwrap();
        let path = stuck.path().to_path_buf();
        fs::remove_dir_all(&path).unwrap();
        fs::write(&path, "not a directory").unwrap();
        drop(stuck);
        assert_eq!(names(t).len(), 2, "{:?}", names(t));
        // The process ends (its lock released, the file left); the next
        // one's sweep removes the directory, then the lock file.
        STATE.lock().unwrap().owner = None;
        fs::remove_file(&path).unwrap();
        fake_extraction(t, path.file_name().unwrap().to_str().unwrap());
        let next = fake_extraction(t, "cosim-fmu-next");
        assert_eq!(sweep_stale(t, &next), 1);
        assert_eq!(names(t), ["cosim-fmu-next"]);
    }
}
