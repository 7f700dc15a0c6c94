//! Loaded FMU libraries are never unloaded, and reused.
//!
//! An FMU's code may still run after its last instance is freed: a thread
//! it started and left running (a logger, a licence check, a solver pool).
//! Unloading the library (`dlclose`) unmaps that code under the thread, and
//! the process dies of SIGSEGV after a complete run. FMPy, fmusim and
//! libcosim (FMI Library) all `dlclose` after `freeInstance` and crash so;
//! glibc itself never unloads many C++ libraries (those with
//! `STB_GNU_UNIQUE` symbols). So no library is unloaded before the process
//! ends (`cosim` then ends with `_exit`, running no library destructors).
//!
//! A process that loads the same FMU again and again (a sweep's runs, the
//! Python package's) would then keep one copy per load: each `.fmu` is
//! extracted anew, and a new file is a new copy for the loader. So a copy
//! whose every [`crate::Fmu`] and instance is gone goes back to a pool and
//! serves the next load of a library with the same bytes (the same length
//! and hash). FMUs open at the same time never share a copy, so their
//! global variables stay apart as before; a copy taken from the pool has
//! the globals its last user left, as two successive instances of one FMU
//! in one run always had. The copies a process keeps are thus at most, per
//! distinct library, the most FMUs with it that were open at once.

use std::hash::Hasher;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::error::{FmiError, Result};

/// A library's identity: its length and a hash of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    len: u64,
    hash: u64,
}

impl Key {
    /// Reads the file at `path` (in blocks: a library may be large).
    fn of(path: &Path) -> std::io::Result<Key> {
        let mut file = std::fs::File::open(path)?;
        let mut hasher = std::hash::DefaultHasher::new();
        let mut block = vec![0u8; 1 << 16];
        let mut len = 0u64;
        loop {
            let n = match file.read(&mut block) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.write(&block[..n]);
            len += n as u64;
        }
        Ok(Key {
            len,
            hash: hasher.finish(),
        })
    }
}

/// The loaded copies of one kind of library (FMI 2 or FMI 3 function
/// tables), never dropped: a copy is free when the pool holds its only
/// reference.
pub struct Pool<L> {
    copies: Mutex<Vec<(Key, Arc<L>)>>,
}

impl<L> Pool<L> {
    pub(crate) const fn new() -> Self {
        Pool {
            copies: Mutex::new(Vec::new()),
        }
    }

    /// A free copy of the library at `path`, or a new one from `load`
    /// (which then stays loaded for good).
    pub(crate) fn get_or_load(
        &self,
        path: &Path,
        load: impl FnOnce() -> Result<L>,
    ) -> Result<Arc<L>> {
        let key = Key::of(path).map_err(|error| FmiError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        if let Some(copy) = self.take_free(key) {
            return Ok(copy);
        }
        // Loaded without the lock: a library's initialisers may take long
        // (or hang), and other loads need not wait for them.
        let copy = Arc::new(load()?);
        self.lock().push((key, Arc::clone(&copy)));
        Ok(copy)
    }

    /// A copy of `key` that nobody uses, now taken. (A copy that only the
    /// pool holds can be cloned only here, under the lock: seen free, it
    /// stays free until it is handed out.)
    fn take_free(&self, key: Key) -> Option<Arc<L>> {
        self.lock()
            .iter()
            .find(|(k, copy)| *k == key && Arc::strong_count(copy) == 1)
            .map(|(_, copy)| Arc::clone(copy))
    }

    /// How many copies are loaded (for tests of the bound).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Key, Arc<L>)>> {
        // A panic while holding the lock left the list whole (a push or
        // a search): go on with it.
        self.copies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
