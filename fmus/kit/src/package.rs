//! Writes `.fmu` archives: `modelDescription.xml` plus the shared library
//! under `binaries/<platform>/<modelIdentifier>.so`.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::caps::{Capabilities, FmiVersion, Variant};
use crate::model::ModelSpec;
use crate::xml::model_description;

/// What to package.
#[derive(Debug, Clone)]
pub struct PackageRequest<'a> {
    /// The model.
    pub spec: &'a ModelSpec,
    /// FMI version.
    pub version: FmiVersion,
    /// Capability set (declared in the XML and encoded in the token).
    pub caps: Capabilities,
    /// `modelIdentifier`: also the name of the library inside the archive.
    pub model_identifier: String,
}

impl<'a> PackageRequest<'a> {
    /// A named variant; the identifier is `<Model>` or `<Model>_<suffix>`.
    pub fn variant(spec: &'a ModelSpec, version: FmiVersion, variant: Variant) -> Self {
        PackageRequest {
            spec,
            version,
            caps: Capabilities::variant(spec, version, variant),
            model_identifier: model_identifier(spec, variant),
        }
    }
}

/// `<Model>` for the full build, `<Model>_<suffix>` for a variant with
/// the suffix's `-` written `_` (a C identifier, unlike the file name
/// `<Model>-<suffix>.fmu`): `TwoMassS1_nostate`,
/// `TwoMassS1_fmi3_no_intermediate_update`.
pub fn model_identifier(spec: &ModelSpec, variant: Variant) -> String {
    match variant {
        Variant::Full => spec.name.to_string(),
        v => format!("{}_{}", spec.name, v.suffix().replace('-', "_")),
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Writes the `.fmu` for `req` to `out`, with `library` (the `cosim-models`
/// cdylib) copied under the model identifier's name. The archive is written
/// to a temporary file and renamed, so readers never see half an FMU, and
/// entries carry a fixed timestamp so identical inputs give identical bytes.
pub fn package(req: &PackageRequest<'_>, library: &Path, out: &Path) -> io::Result<()> {
    package_with_resources(req, library, None, out)
}

/// [`package()`], with the files under `resources` (a directory) packed
/// as the FMU's `resources/`, in name order.
pub fn package_with_resources(
    req: &PackageRequest<'_>,
    library: &Path,
    resources: Option<&Path>,
    out: &Path,
) -> io::Result<()> {
    req.spec.check().map_err(invalid)?;
    req.caps.check(req.spec, req.version).map_err(invalid)?;
    let id = &req.model_identifier;
    let c_ident = id
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !c_ident {
        return Err(invalid(format!(
            "modelIdentifier \"{id}\" is not a C identifier"
        )));
    }
    let lib = fs::read(library)
        .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", library.display())))?;
    let xml = model_description(req.spec, req.version, &req.caps, id);
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir)?;
    }
    // A temporary name unique to this call: concurrent packagings of one
    // output (threads of one process too) never rename each other's file.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = out.with_extension(format!("fmu.tmp{}.{call}", std::process::id()));
    let result = (|| -> io::Result<()> {
        let file = fs::File::create(&tmp)?;
        let mut zip = ZipWriter::new(file);
        let opts = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .last_modified_time(DateTime::default());
        zip.start_file("modelDescription.xml", opts.unix_permissions(0o644))
            .map_err(io::Error::other)?;
        zip.write_all(xml.as_bytes())?;
        let lib_path = format!("binaries/{}/{id}.so", req.version.platform_dir());
        zip.start_file(lib_path, opts.unix_permissions(0o755))
            .map_err(io::Error::other)?;
        zip.write_all(&lib)?;
        if let Some(dir) = resources {
            for (name, path) in files_under(dir)? {
                // (An executable keeps its mode: importers that extract
                // modes can run it.)
                let mode = if is_executable(&path)? { 0o755 } else { 0o644 };
                zip.start_file(format!("resources/{name}"), opts.unix_permissions(mode))
                    .map_err(io::Error::other)?;
                io::copy(&mut fs::File::open(&path)?, &mut zip)?;
            }
        }
        zip.finish().map_err(io::Error::other)?.sync_all()?;
        Ok(())
    })();
    match result {
        Ok(()) => fs::rename(&tmp, out),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn is_executable(path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    Ok(fs::metadata(path)?.permissions().mode() & 0o100 != 0)
}

/// The files under `dir`, as (`/`-separated path relative to `dir`,
/// path), sorted by name; symbolic links are refused.
fn files_under(dir: &Path) -> io::Result<Vec<(String, std::path::PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), dir.to_path_buf())];
    while let Some((prefix, d)) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push((rel, entry.path()));
            } else if kind.is_file() {
                out.push((rel, entry.path()));
            } else {
                return Err(invalid(format!(
                    "{} is neither a file nor a directory",
                    entry.path().display()
                )));
            }
        }
    }
    out.sort();
    Ok(out)
}
