//! One output directory, one run: the lock a run (or a sweep) holds on
//! its output directory while it writes there.
//!
//! Two runs writing into one directory truncate and overwrite each
//! other's files (a trace with a hole of NUL bytes, the other run's
//! summary). So before it creates or truncates any output, a run locks
//! `<dir>/.cosim.lock` (`flock`, exclusive, never waiting) and writes its
//! process id into it; a second run finds the lock taken and is refused,
//! naming the directory and that process id. The kernel releases the
//! lock when its holder ends, however it ends (a crash, SIGKILL), so a
//! lock file left behind is no obstacle: the next run takes it. The file
//! stays in the directory (removing it on release would let a run that
//! opened it just before lock an unlinked file while a third locks a new
//! one).
//!
//! The shards of one sweep share their output directory: each holds the
//! directory lock shared, which keeps runs and unsharded sweeps out, and
//! its own `<dir>/.cosim-shard-K-of-N.lock` exclusively, which keeps a
//! second copy of the same shard out.
//!
//! On a file system without locks (Lustre mounted without `flock`, some
//! FUSE file systems) there is no lock: the run goes on as before.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{CoreError, Result};

/// The lock file's name in the output directory.
pub const LOCK_FILE: &str = ".cosim.lock";

/// The lock on an output directory; dropping it releases the lock.
#[derive(Debug)]
pub struct OutputLock {
    dir: PathBuf,
    _files: Vec<File>,
}

impl OutputLock {
    /// Creates `dir` if needed and locks it for one run (or an unsharded
    /// sweep). `Ok(None)` where the file system has no locks.
    ///
    /// # Errors
    ///
    /// [`CoreError::OutputInUse`] when another run holds it, naming its
    /// process id; [`CoreError::Output`] when the directory or its lock
    /// file cannot be created.
    pub fn exclusive(dir: &Path) -> Result<Option<OutputLock>> {
        let Some(file) = open_lock_file(dir, LOCK_FILE)? else {
            return Ok(None);
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(in_use(dir)),
            Err(TryLockError::Error(e)) => return unlocked(dir, e),
        }
        write_pid(&file, dir, LOCK_FILE)?;
        Ok(Some(OutputLock {
            dir: dir.to_path_buf(),
            _files: vec![file],
        }))
    }

    /// Creates `dir` if needed and locks it for shard `k` of `n` of a
    /// sweep: shared with the other shards, exclusive of runs, unsharded
    /// sweeps and another copy of the same shard.
    ///
    /// # Errors
    ///
    /// As [`OutputLock::exclusive`].
    pub fn shard(dir: &Path, k: usize, n: usize) -> Result<Option<OutputLock>> {
        let Some(file) = open_lock_file(dir, LOCK_FILE)? else {
            return Ok(None);
        };
        match file.try_lock_shared() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(in_use(dir)),
            Err(TryLockError::Error(e)) => return unlocked(dir, e),
        }
        let name = shard_file(k, n);
        let Some(own) = open_lock_file(dir, &name)? else {
            return Ok(None);
        };
        match own.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(CoreError::OutputInUse {
                    dir: dir.to_path_buf(),
                    holder: format!("shard {k}/{n} of a sweep"),
                    pid: read_pid(&dir.join(&name)),
                });
            }
            Err(TryLockError::Error(e)) => return unlocked(dir, e),
        }
        write_pid(&own, dir, &name)?;
        Ok(Some(OutputLock {
            dir: dir.to_path_buf(),
            _files: vec![file, own],
        }))
    }

    /// The directory locked.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn shard_file(k: usize, n: usize) -> String {
    format!(".cosim-shard-{k}-of-{n}.lock")
}

/// Opens (creating) `dir/name` for reading and writing (an exclusive lock
/// emulated with POSIX record locks, on NFS, needs both), creating `dir`.
fn open_lock_file(dir: &Path, name: &str) -> Result<Option<File>> {
    std::fs::create_dir_all(dir).map_err(|error| CoreError::Output {
        path: dir.to_path_buf(),
        error,
    })?;
    let path = dir.join(name);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map(Some)
        .map_err(|error| CoreError::Output { path, error })
}

/// A lock that failed for another reason than a holder: none where the
/// file system has no locks, else the error.
fn unlocked(dir: &Path, e: io::Error) -> Result<Option<OutputLock>> {
    if locks_unsupported(&e) {
        tracing::debug!(
            "{}: the file system has no locks ({e}): another run into this directory would not be refused",
            dir.display()
        );
        return Ok(None);
    }
    Err(CoreError::Output {
        path: dir.join(LOCK_FILE),
        error: e,
    })
}

/// Whether a failed lock says the file system has no locks at all.
fn locks_unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
        || e.raw_os_error().is_some_and(|code| {
            [libc::ENOSYS, libc::ENOLCK, libc::EOPNOTSUPP, libc::ENOTSUP].contains(&code)
        })
}

fn write_pid(mut file: &File, dir: &Path, name: &str) -> Result<()> {
    let pid = std::process::id();
    file.set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| file.write_all(format!("{pid}\n").as_bytes()))
        .map_err(|error| CoreError::Output {
            path: dir.join(name),
            error,
        })
}

/// The process id in a lock file. The holder writes it just after taking
/// the lock, so an empty file is read again for a moment.
fn read_pid(path: &Path) -> Option<u32> {
    for _ in 0..20 {
        let mut text = String::new();
        if let Ok(mut f) = File::open(path) {
            let _ = f.read_to_string(&mut text);
        }
        if let Ok(pid) = text.trim().parse() {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// The error for `dir` found locked: its holder is the run whose process
/// id the lock file holds, or shards of a sweep (who hold it shared and
/// write their ids into their own lock files).
fn in_use(dir: &Path) -> CoreError {
    let shards = held_shards(dir);
    if let Some((name, pid)) = shards.first() {
        return CoreError::OutputInUse {
            dir: dir.to_path_buf(),
            holder: match shards.len() - 1 {
                0 => format!("{name} of a sweep"),
                1 => format!("{name} of a sweep (and 1 more shard)"),
                more => format!("{name} of a sweep (and {more} more shards)"),
            },
            pid: *pid,
        };
    }
    CoreError::OutputInUse {
        dir: dir.to_path_buf(),
        holder: "another cosim run".into(),
        pid: read_pid(&dir.join(LOCK_FILE)),
    }
}

/// The shard lock files of `dir` that a live shard holds: `("shard K/N",
/// its process id)`. (Probed with a shared lock, which conflicts only
/// with a holder's exclusive one.)
fn held_shards(dir: &Path) -> Vec<(String, Option<u32>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut held = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(kn) = name
            .strip_prefix(".cosim-shard-")
            .and_then(|s| s.strip_suffix(".lock"))
        else {
            continue;
        };
        let Ok(file) = File::open(e.path()) else {
            continue;
        };
        if matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock)) {
            held.push((
                format!("shard {}", kn.replace("-of-", "/")),
                read_pid(&e.path()),
            ));
        }
    }
    held.sort();
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(e: CoreError) -> (String, Option<u32>) {
        match e {
            CoreError::OutputInUse { holder, pid, .. } => (holder, pid),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_taken_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let lock = OutputLock::exclusive(&out).unwrap().unwrap();
        let err = OutputLock::exclusive(&out).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(&out.display().to_string()), "{message}");
        assert!(
            message.contains(&format!("process id {}", std::process::id())),
            "{message}"
        );
        assert_eq!(
            holder(err),
            ("another cosim run".into(), Some(std::process::id()))
        );
        assert!(OutputLock::shard(&out, 1, 2).is_err());
        drop(lock);
        // Released: the file stays, the next run takes it.
        assert!(out.join(LOCK_FILE).exists());
        drop(OutputLock::exclusive(&out).unwrap().unwrap());
    }

    #[test]
    fn shards_share_the_directory_and_keep_runs_and_their_twins_out() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let one = OutputLock::shard(out, 1, 3).unwrap().unwrap();
        let two = OutputLock::shard(out, 2, 3).unwrap().unwrap();
        let (who, pid) = holder(OutputLock::shard(out, 2, 3).unwrap_err());
        assert_eq!(
            (who.as_str(), pid),
            ("shard 2/3 of a sweep", Some(std::process::id()))
        );
        let (who, _) = holder(OutputLock::exclusive(out).unwrap_err());
        assert_eq!(who, "shard 1/3 of a sweep (and 1 more shard)");
        drop((one, two));
        drop(OutputLock::exclusive(out).unwrap().unwrap());
    }
}
