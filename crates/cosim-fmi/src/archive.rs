//! Safe extraction of `.fmu` archives and location of the shared library.
//!
//! An FMU is a zip file. [`FmuRoot::open`] unpacks it into a private
//! temporary directory that is removed when the value is dropped, or uses an
//! already-unpacked FMU directory as it is. Extraction refuses, with
//! [`FmiError::Archive`] naming the archive and the entry:
//!
//! - entries that would land outside the target directory (`..`
//!   components, absolute paths, drive prefixes, backslash separators are
//!   read as separators first);
//! - symbolic links and other special files;
//! - two entries of the same name whose bytes differ, two whose names are
//!   the same once `\` and `.` are normalised, or a file and a directory of
//!   the same name, whichever entry it is (`modelDescription.xml`
//!   included): readers disagree on which of two such entries counts, so
//!   the archive is ambiguous. Copies of one name with the same bytes are
//!   one entry, with a warning naming it ([`identical_duplicates`]);
//! - more entries, more bytes in one entry, or more bytes in total than the
//!   [`ArchiveLimits`] allow: sizes are counted on the bytes actually
//!   decompressed and written, never taken from the zip headers, and the
//!   chunk that would cross a limit is not written;
//! - truncated or corrupt archives (including CRC mismatches);
//! - archives without `modelDescription.xml` at the root.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::extraction::ExtractionDir;

mod duplicates;

use crate::error::{FmiError, Result};
use crate::model_description::{FmiVersion, ModelDescription, parse_model_description_file};

/// Name of the model description at the root of an FMU.
pub const MODEL_DESCRIPTION: &str = "modelDescription.xml";

/// Limits applied while extracting an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Largest total number of bytes written for all entries (default 2 GiB).
    pub max_total_size: u64,
    /// Largest number of entries, directories included (default 10 000).
    pub max_entries: usize,
    /// Largest number of bytes written for one entry (default 1 GiB).
    pub max_entry_size: u64,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        ArchiveLimits {
            max_total_size: 2 * 1024 * 1024 * 1024,
            max_entries: 10_000,
            max_entry_size: 1024 * 1024 * 1024,
        }
    }
}

/// What [`extract_archive`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExtractStats {
    /// Number of entries in the archive (files and directories).
    pub entries: usize,
    /// Number of files written.
    pub files: usize,
    /// Total bytes written.
    pub bytes: u64,
    /// The files listed more than once whose copies are the same bytes,
    /// written once each (see [`identical_duplicates`]).
    pub identical_duplicates: Vec<String>,
    /// The files left out ([`extract_archive_parts`]), as the archive names
    /// them.
    pub skipped: Vec<String>,
}

/// The name of the file an FMU extraction that left files out
/// ([`FmuRoot::open`]) writes at its root, one archive entry name per
/// line: what the archive has that the directory does not. (Not an FMU
/// file name: those are `modelDescription.xml` and directories.)
pub const SKIPPED_LIST: &str = ".cosim-skipped-entries";

/// Whether an instance may need the archive entry at `relative`: the model
/// description, the binaries and the resources (FMI 2.0 sec. 2.3, FMI 3.0
/// sec. 2.5: the instance is given the resources directory, and its
/// library lives under `binaries/`). Sources, documentation, icons,
/// `extra/` and anything else are for tools, not for a running instance.
pub fn needed_by_an_instance(relative: &Path) -> bool {
    let mut parts = relative.components();
    match parts.next() {
        Some(std::path::Component::Normal(first)) => {
            (first == MODEL_DESCRIPTION && parts.next().is_none())
                || first == "binaries"
                || first == "resources"
        }
        _ => false,
    }
}

/// Removes every FMU (and SSP) extraction directory of this process, for
/// an end of the process that does not drop them (`_exit` while an FMU
/// call hangs): [`crate::extraction::remove_all`].
pub fn remove_extractions() {
    crate::extraction::remove_all();
}

/// An FMU ready to be read from disk: either an archive extracted into a
/// private temporary directory (removed on drop; locked while in use, so
/// that a later process removes it if this one is killed:
/// [`crate::extraction`]) or a directory given by the user.
#[derive(Debug)]
pub struct FmuRoot {
    source: PathBuf,
    root: PathBuf,
    dir: Option<ExtractionDir>,
    /// The extraction the processes of this machine share, if it is one.
    shared: Option<crate::extraction::SharedDir>,
}

fn temp_error(error: std::io::Error) -> FmiError {
    FmiError::Io {
        path: std::env::temp_dir(),
        error,
    }
}

/// Extracts from the archive at `path` into `dir` what an instance needs
/// ([`needed_by_an_instance`]), listing what it left out.
fn extract_for_instances(path: &Path, dir: &Path, limits: &ArchiveLimits) -> Result<()> {
    let stats = extract_archive_parts(path, dir, limits, &needed_by_an_instance)?;
    tracing::debug!(
        "extracted {} into {} ({} files, {} left out)",
        path.display(),
        dir.display(),
        stats.files,
        stats.skipped.len()
    );
    if !stats.skipped.is_empty() {
        let list = dir.join(SKIPPED_LIST);
        fs::write(&list, stats.skipped.join("\n")).map_err(|error| FmiError::Io {
            path: list.clone(),
            error,
        })?;
    }
    Ok(())
}

/// Whether the FMU at `root` has a regular file under `sources/`: in the
/// directory, or left out of its extraction ([`SKIPPED_LIST`]).
fn has_source_files_at(root: &Path) -> bool {
    has_files(&root.join("sources"), 8)
        || fs::read_to_string(root.join(SKIPPED_LIST))
            .is_ok_and(|list| list.lines().any(|l| l.starts_with("sources/")))
}

/// True when `dir` holds a regular file, looking `depth` levels down.
fn has_files(dir: &Path, depth: usize) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| match e.file_type() {
        Ok(t) if t.is_file() => true,
        Ok(t) if t.is_dir() && depth > 0 => has_files(&e.path(), depth - 1),
        _ => false,
    })
}

impl FmuRoot {
    /// Opens an `.fmu` archive (extracting what an instance needs, with the
    /// default [`ArchiveLimits`]: [`needed_by_an_instance`]) or an unpacked
    /// FMU directory.
    ///
    /// # Errors
    ///
    /// [`FmiError::Io`] if the path cannot be read or the temporary directory
    /// cannot be created, [`FmiError::Archive`] if the archive is refused or
    /// `modelDescription.xml` is missing.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_with_limits(path, &ArchiveLimits::default())
    }

    /// Like [`FmuRoot::open`] with explicit limits.
    ///
    /// # Errors
    ///
    /// As [`FmuRoot::open`].
    pub fn open_with_limits(path: &Path, limits: &ArchiveLimits) -> Result<Self> {
        let meta = fs::metadata(path).map_err(|error| FmiError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        if meta.is_dir() {
            if !path.join(MODEL_DESCRIPTION).is_file() {
                return Err(FmiError::Archive {
                    archive: path.to_path_buf(),
                    entry: Some(MODEL_DESCRIPTION.to_string()),
                    reason: "the FMU directory has no modelDescription.xml at its root".to_string(),
                });
            }
            return Ok(FmuRoot {
                source: path.to_path_buf(),
                root: path.to_path_buf(),
                dir: None,
                shared: None,
            });
        }
        let dir = crate::extraction::create_dir(crate::extraction::PREFIX).map_err(temp_error)?;
        extract_for_instances(path, dir.path(), limits)?;
        Ok(FmuRoot {
            source: path.to_path_buf(),
            root: dir.path().to_path_buf(),
            dir: Some(dir),
            shared: None,
        })
    }

    /// Like [`FmuRoot::open`] for an `.fmu` archive, in the extraction the
    /// processes of this machine share under `key` (one that names the
    /// file and this build: [`crate::extraction::shared_dir`]), made here
    /// if none has made it; an extraction of its own where it cannot be
    /// shared.
    ///
    /// # Errors
    ///
    /// As [`FmuRoot::open`].
    pub fn open_shared(path: &Path, key: &str) -> Result<Self> {
        let limits = ArchiveLimits::default();
        let mut extract = |dir: &Path| extract_for_instances(path, dir, &limits);
        match crate::extraction::shared_dir(key, &mut extract, temp_error)? {
            Some(shared) => {
                tracing::debug!(
                    "{} opened in the extraction {} this machine's processes share",
                    path.display(),
                    shared.path().display()
                );
                Ok(FmuRoot {
                    source: path.to_path_buf(),
                    root: shared.path().to_path_buf(),
                    dir: None,
                    shared: Some(shared),
                })
            }
            None => Self::open(path),
        }
    }

    /// An FMU that another process extracted into `root` (the master of a
    /// `cosim host`, which owns the directory), named `source` (the `.fmu`
    /// file) in messages. Nothing is extracted or removed.
    ///
    /// # Errors
    ///
    /// [`FmiError::Archive`] if `root` has no `modelDescription.xml`.
    pub fn extracted_elsewhere(root: &Path, source: &Path) -> Result<Self> {
        if !root.join(MODEL_DESCRIPTION).is_file() {
            return Err(FmiError::Archive {
                archive: source.to_path_buf(),
                entry: Some(MODEL_DESCRIPTION.to_string()),
                reason: format!(
                    "the extracted FMU directory {} has no modelDescription.xml",
                    root.display()
                ),
            });
        }
        Ok(FmuRoot {
            source: source.to_path_buf(),
            root: root.to_path_buf(),
            dir: None,
            shared: None,
        })
    }

    /// The directory holding `modelDescription.xml`, `binaries/`, `resources/` ...
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The path that was opened (the `.fmu` file or the directory).
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// True when the FMU was extracted into a temporary directory.
    pub fn is_extracted(&self) -> bool {
        self.dir.is_some() || self.shared.is_some()
    }

    /// The extracted `modelDescription.xml`.
    pub fn model_description_path(&self) -> PathBuf {
        self.root.join(MODEL_DESCRIPTION)
    }

    /// `<source>/modelDescription.xml`: the name used in error messages.
    pub fn model_description_display_path(&self) -> PathBuf {
        self.source.join(MODEL_DESCRIPTION)
    }

    /// Parses `modelDescription.xml`; errors name it as
    /// `<source>/modelDescription.xml`.
    ///
    /// # Errors
    ///
    /// [`FmiError::Io`] or [`FmiError::ModelDescription`].
    pub fn read_model_description(&self) -> Result<ModelDescription> {
        let shown = self.model_description_display_path();
        parse_model_description_file(&self.model_description_path()).map_err(|e| match e {
            FmiError::ModelDescription {
                line,
                column,
                message,
                ..
            } => FmiError::ModelDescription {
                file: shown,
                line,
                column,
                message,
            },
            FmiError::Io { error, .. } => FmiError::Io { path: shown, error },
            other => other,
        })
    }

    /// The platform directories present under `binaries/` (sorted).
    pub fn platform_directories(&self) -> Vec<String> {
        platform_directories(&self.root)
    }

    /// The shared library for Linux x86-64, see [`library_path`].
    ///
    /// # Errors
    ///
    /// As [`library_path`].
    pub fn shared_library(&self, version: FmiVersion, model_identifier: &str) -> Result<PathBuf> {
        library_path(&self.root, &self.source, version, model_identifier)
    }

    /// The `resources/` directory, if the FMU has one.
    pub fn resources_dir(&self) -> Option<PathBuf> {
        let dir = self.root.join("resources");
        dir.is_dir().then_some(dir)
    }

    /// True when the FMU ships a file under `sources/` (extracted or not).
    pub fn has_source_files(&self) -> bool {
        has_source_files_at(&self.root)
    }
}

/// The names of the directories under `<root>/binaries/`, sorted; empty
/// when there is no `binaries/` directory.
pub fn platform_directories(root: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(root.join("binaries")) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

/// The shared library of an unpacked FMU for Linux x86-64:
/// `binaries/linux64/<id>.so` (FMI 2) or `binaries/x86_64-linux/<id>.so`
/// (FMI 3). `source` is the archive or directory named in errors.
///
/// # Errors
///
/// [`FmiError::MissingBinary`] listing the platform directories that exist,
/// or [`FmiError::Archive`] if the model identifier is not a plain file name.
pub fn library_path(
    root: &Path,
    source: &Path,
    version: FmiVersion,
    model_identifier: &str,
) -> Result<PathBuf> {
    let id_ok = !model_identifier.is_empty()
        && model_identifier != "."
        && model_identifier != ".."
        && !model_identifier.contains(['/', '\\', '\0']);
    if !id_ok {
        return Err(FmiError::Archive {
            archive: source.to_path_buf(),
            entry: None,
            reason: format!(
                "modelIdentifier '{model_identifier}' is not a valid library file name"
            ),
        });
    }
    let expected = version.linux64_platform_dir();
    let library = format!("{model_identifier}.so");
    let path = root.join("binaries").join(expected).join(&library);
    if path.is_file() {
        return Ok(path);
    }
    Err(FmiError::MissingBinary {
        archive: source.to_path_buf(),
        expected: expected.to_string(),
        library,
        found: platform_directories(root),
    })
}

/// Checks an entry name and turns it into a relative path made of normal
/// components only. Backslashes are read as separators.
fn safe_relative_path(name: &str) -> std::result::Result<PathBuf, String> {
    if name.contains('\0') {
        return Err("the entry name contains a NUL byte".to_string());
    }
    let normalized = name.replace('\\', "/");
    if normalized.starts_with('/') {
        return Err("absolute paths are refused".to_string());
    }
    let mut path = PathBuf::new();
    for (i, component) in normalized.split('/').enumerate() {
        match component {
            "" | "." => continue,
            ".." => {
                return Err(
                    "'..' path components are refused (the entry would land outside the extraction directory)"
                        .to_string(),
                );
            }
            _ => {}
        }
        let bytes = component.as_bytes();
        if i == 0
            && bytes.len() >= 2
            && bytes.get(1) == Some(&b':')
            && bytes.first().is_some_and(u8::is_ascii_alphabetic)
        {
            return Err("drive-letter prefixes are refused".to_string());
        }
        path.push(component);
    }
    if path.as_os_str().is_empty() {
        return Err("the entry name is empty".to_string());
    }
    Ok(path)
}

/// Extracts `archive` into the existing directory `dest` (which should be
/// fresh and empty), enforcing `limits` on the bytes actually written.
///
/// On error, whatever was written so far stays in `dest` (the caller owns
/// it; [`FmuRoot`] removes its temporary directory).
///
/// # Errors
///
/// [`FmiError::Archive`] for a refused or corrupt archive (an entry whose
/// name is too long for the file system of `dest` included),
/// [`FmiError::Io`] for other I/O errors on `archive` or `dest`.
pub fn extract_archive(
    archive: &Path,
    dest: &Path,
    limits: &ArchiveLimits,
) -> Result<ExtractStats> {
    extract_archive_parts(archive, dest, limits, &|_| true)
}

/// Like [`extract_archive`], writing only the files whose relative path
/// `keep` accepts (and the directories they are in); the others are
/// listed in the stats' `skipped`. Every entry is checked all the same: an
/// archive refused whole is refused whatever is kept.
///
/// # Errors
///
/// As [`extract_archive`].
pub fn extract_archive_parts(
    archive: &Path,
    dest: &Path,
    limits: &ArchiveLimits,
    keep: &dyn Fn(&Path) -> bool,
) -> Result<ExtractStats> {
    let file = File::open(archive).map_err(|error| FmiError::Io {
        path: archive.to_path_buf(),
        error,
    })?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| {
        refusal(
            archive,
            None,
            format!("not a valid zip archive (truncated or corrupt?): {e}"),
        )
    })?;
    let count = zip.len();
    if count > limits.max_entries {
        return Err(refusal(
            archive,
            None,
            format!(
                "the archive has {count} entries, more than the limit of {}",
                limits.max_entries
            ),
        ));
    }
    let identical_duplicates = identical_duplicates(archive, &zip, limits)?;
    check_entry_names(archive, &mut zip)?;
    let mut stats = ExtractStats {
        entries: count,
        identical_duplicates,
        ..ExtractStats::default()
    };
    let mut buf = vec![0u8; 64 * 1024];
    let into = Destination { dest, limits, keep };
    for i in 0..count {
        extract_entry(archive, &mut zip, i, &into, &mut stats, &mut buf)?;
    }
    Ok(stats)
}

/// An [`FmiError::Archive`] of `archive`, about `entry` if given.
fn refusal(archive: &Path, entry: Option<&str>, reason: String) -> FmiError {
    FmiError::Archive {
        archive: archive.to_path_buf(),
        entry: entry.map(str::to_string),
        reason,
    }
}

/// The name of entry `i`, read as a relative path (refused if unsafe).
fn entry_name(
    archive: &Path,
    entry: &zip::read::ZipFile<'_, impl Read>,
    i: usize,
) -> Result<(String, PathBuf)> {
    let name = entry
        .name()
        .map_err(|e| {
            refusal(
                archive,
                None,
                format!("entry #{i} has an unreadable name: {e}"),
            )
        })?
        .into_owned();
    let path = safe_relative_path(&name).map_err(|reason| refusal(archive, Some(&name), reason))?;
    Ok((name, path))
}

/// Checks every name, that no two entries land on the same path, and that
/// modelDescription.xml is at the root, before anything is written.
fn check_entry_names<R: Read + Seek>(archive: &Path, zip: &mut zip::ZipArchive<R>) -> Result<()> {
    let mut has_model_description = false;
    let mut files: HashSet<PathBuf> = HashSet::new();
    let mut dirs: HashSet<PathBuf> = HashSet::new();
    let mut file_names: Vec<(PathBuf, String)> = Vec::new();
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| refusal(archive, None, format!("cannot read entry #{i}: {e}")))?;
        let (name, path) = entry_name(archive, &entry, i)?;
        if entry.is_dir() {
            dirs.insert(path.clone());
        } else {
            if path == Path::new(MODEL_DESCRIPTION) {
                has_model_description = true;
            }
            if !files.insert(path.clone()) {
                return Err(refusal(archive, Some(&name), DUPLICATE.to_string()));
            }
            file_names.push((path.clone(), name));
        }
        for parent in path.ancestors().skip(1) {
            if !parent.as_os_str().is_empty() {
                dirs.insert(parent.to_path_buf());
            }
        }
    }
    // A file that is also a directory (`x` and `x/y`, or `x` and `x/`).
    if let Some((_, name)) = file_names.iter().find(|(path, _)| dirs.contains(path)) {
        return Err(refusal(
            archive,
            Some(name),
            "duplicate entry: the archive has both a file and a directory of this name".to_string(),
        ));
    }
    if !has_model_description {
        return Err(refusal(
            archive,
            Some(MODEL_DESCRIPTION),
            "missing at the root of the archive: this is not an FMU".to_string(),
        ));
    }
    Ok(())
}

/// Refuses a symbolic link or a special file (device, FIFO, socket).
fn check_file_type(
    archive: &Path,
    entry: &zip::read::ZipFile<'_, impl Read>,
    name: &str,
) -> Result<()> {
    let link = || {
        refusal(
            archive,
            Some(name),
            "symbolic links are refused".to_string(),
        )
    };
    match entry.unix_mode().map(|mode| mode & 0o170_000) {
        None | Some(0 | 0o100_000 | 0o040_000) => {}
        Some(0o120_000) => return Err(link()),
        Some(_) => {
            return Err(refusal(
                archive,
                Some(name),
                "special files (devices, FIFOs, sockets) are refused".to_string(),
            ));
        }
    }
    if entry.is_symlink() {
        return Err(link());
    }
    Ok(())
}

/// An error creating `path` for the entry `name`: a name too long for the
/// file system (`ENAMETOOLONG`) is the archive's, named by its entry (the
/// extraction directory is gone by the time the message is read); others
/// (a full disk, no descriptors left) name the path.
fn creating(archive: &Path, name: &str, path: &Path, error: std::io::Error) -> FmiError {
    if error.kind() == std::io::ErrorKind::InvalidFilename {
        let longest = name
            .split(['/', '\\'])
            .map(str::len)
            .max()
            .unwrap_or_default();
        return refusal(
            archive,
            Some(name),
            format!(
                "the name is too long for the file system to extract it ({longest} bytes in its longest component, {} in all: {error})",
                name.len()
            ),
        );
    }
    FmiError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Where [`extract_entry`] writes, within which limits, and which files.
struct Destination<'a> {
    dest: &'a Path,
    limits: &'a ArchiveLimits,
    keep: &'a dyn Fn(&Path) -> bool,
}

/// Writes entry `i` of `zip` under `dest` if `keep` accepts it, counting
/// its decompressed bytes against `limits` as they come (the chunk that
/// would cross one is not written).
fn extract_entry<R: Read + Seek>(
    archive: &Path,
    zip: &mut zip::ZipArchive<R>,
    i: usize,
    into: &Destination<'_>,
    stats: &mut ExtractStats,
    buf: &mut [u8],
) -> Result<()> {
    let Destination { dest, limits, keep } = *into;
    let mut entry = zip
        .by_index(i)
        .map_err(|e| refusal(archive, None, format!("cannot read entry #{i}: {e}")))?;
    let (name, relative) = entry_name(archive, &entry, i)?;
    check_file_type(archive, &entry, &name)?;
    if !keep(&relative) {
        if !entry.is_dir() {
            stats.skipped.push(name);
        }
        return Ok(());
    }
    let refuse = |reason: String| refusal(archive, Some(&name), reason);
    let target = dest.join(&relative);
    if entry.is_dir() {
        return fs::create_dir_all(&target).map_err(|e| creating(archive, &name, &target, e));
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|e| creating(archive, &name, parent, e))?;
    }
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                refuse(
                    "duplicate entry (a file or directory of that name was already extracted)"
                        .to_string(),
                )
            } else {
                creating(archive, &name, &target, e)
            }
        })?;
    let io = |error| FmiError::Io {
        path: target.clone(),
        error,
    };
    let mut written: u64 = 0;
    loop {
        let n = entry
            .read(buf)
            .map_err(|e| refuse(format!("corrupt entry: {e}")))?;
        if n == 0 {
            break;
        }
        let n64 = n as u64;
        if written.saturating_add(n64) > limits.max_entry_size {
            return Err(refuse(format!(
                "the entry decompresses to more than the limit of {} bytes per entry (zip bomb?)",
                limits.max_entry_size
            )));
        }
        if stats.bytes.saturating_add(n64) > limits.max_total_size {
            return Err(refuse(format!(
                "the archive decompresses to more than the limit of {} bytes in total (zip bomb?)",
                limits.max_total_size
            )));
        }
        out.write_all(buf.get(..n).unwrap_or_default())
            .map_err(io)?;
        written += n64;
        stats.bytes += n64;
    }
    out.flush().map_err(io)?;
    stats.files += 1;
    Ok(())
}

/// The reason given for an entry whose name another entry has too (the
/// SSP importer gives it as well).
pub const DUPLICATE: &str = "duplicate entry: the archive has more than one entry of this name, and readers disagree on which one counts";

/// The files the central directory of `archive` (open as `zip`) lists
/// more than once, all of whose copies are the same bytes: one entry each
/// (the zip reader kept one copy), each named in a warning. Refuses,
/// naming the entry, a file whose copies differ (bytes, or a link and a
/// file) or cannot be compared within `limits` ([`duplicates`]).
///
/// # Errors
///
/// [`FmiError::Archive`] naming `archive`, and the entry where there is
/// one; [`FmiError::Io`] if `archive` cannot be opened again.
pub fn identical_duplicates<R: Read + Seek>(
    archive: &Path,
    zip: &zip::ZipArchive<R>,
    limits: &ArchiveLimits,
) -> Result<Vec<String>> {
    if !zip.has_duplicate_names() {
        return Ok(Vec::new());
    }
    let refuse = |reason: String| FmiError::Archive {
        archive: archive.to_path_buf(),
        entry: None,
        reason,
    };
    let file = File::open(archive).map_err(|error| FmiError::Io {
        path: archive.to_path_buf(),
        error,
    })?;
    let start = zip.central_directory_start();
    match duplicates::central_records(&mut BufReader::new(file), start, limits.max_entries) {
        Ok(Some(records)) => duplicates::identical_copies(archive, &records, zip.offset(), limits),
        Ok(None) => Err(refuse(format!(
            "the archive has more entries than the limit of {} (some names are listed twice)",
            limits.max_entries
        ))),
        Err(e) => Err(refuse(format!(
            "duplicate entry: the central directory lists a name twice ({e})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names() {
        assert_eq!(
            safe_relative_path("binaries/linux64/a.so"),
            Ok(PathBuf::from("binaries/linux64/a.so"))
        );
        assert_eq!(
            safe_relative_path("./resources\\x.txt"),
            Ok(PathBuf::from("resources/x.txt"))
        );
        assert!(safe_relative_path("../evil").is_err());
        assert!(safe_relative_path("a/../../evil").is_err());
        assert!(safe_relative_path("..\\evil").is_err());
        assert!(safe_relative_path("/etc/passwd").is_err());
        assert!(safe_relative_path("\\evil").is_err());
        assert!(safe_relative_path("C:/evil").is_err());
        assert!(safe_relative_path("c:evil").is_err());
        assert!(safe_relative_path("").is_err());
        assert!(safe_relative_path("./").is_err());
        assert!(safe_relative_path("a\0b").is_err());
    }
}
