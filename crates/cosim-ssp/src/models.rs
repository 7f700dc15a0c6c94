//! The model descriptions of the FMUs a system names, read straight from
//! the archives (only `modelDescription.xml` is decompressed), each file
//! once.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosim_fmi::ModelDescription;
use cosim_fmi::model_description::{Causality, Variable, parse_model_description};

/// Largest `modelDescription.xml` read (as `cosim-fmi`).
const MAX_MODEL_DESCRIPTION: u64 = 256 * 1024 * 1024;

/// Model descriptions by FMU path.
#[derive(Debug, Default)]
pub(crate) struct Models {
    by_path: HashMap<PathBuf, Arc<ModelDescription>>,
}

impl Models {
    /// The model description of the FMU at `path` (an `.fmu` archive or an
    /// unpacked FMU directory). `Err` is a sentence.
    pub(crate) fn load(&mut self, path: &Path) -> Result<Arc<ModelDescription>, String> {
        if let Some(md) = self.by_path.get(path) {
            return Ok(md.clone());
        }
        let md = Arc::new(read_model_description(path)?);
        self.by_path.insert(path.to_path_buf(), md.clone());
        Ok(md)
    }
}

fn read_model_description(path: &Path) -> Result<ModelDescription, String> {
    let shown = path.join(cosim_fmi::archive::MODEL_DESCRIPTION);
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read the FMU: {e}"))?;
    let text = if meta.is_dir() {
        let file = std::fs::File::open(&shown)
            .map_err(|e| format!("cannot read {}: {e}", shown.display()))?;
        read_capped(file).map_err(|e| format!("cannot read {}: {e}", shown.display()))?
    } else {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot read the FMU: {e}"))?;
        let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
            .map_err(|e| format!("not a valid FMU (zip) archive: {e}"))?;
        // Copies of one entry that differ: refused as when the FMU is
        // opened to run it.
        let limits = cosim_fmi::archive::ArchiveLimits::default();
        cosim_fmi::archive::identical_duplicates(path, &zip, &limits)
            .map_err(crate::archive::entry_sentence)?;
        let entry = zip
            .by_name(cosim_fmi::archive::MODEL_DESCRIPTION)
            .map_err(|_| "the archive has no modelDescription.xml at its root: not an FMU")?;
        read_capped(entry).map_err(|e| format!("cannot read {}: {e}", shown.display()))?
    };
    parse_model_description(&text, &shown).map_err(|e| e.to_string())
}

fn read_capped(r: impl Read) -> Result<String, String> {
    let mut bytes = Vec::new();
    r.take(MAX_MODEL_DESCRIPTION + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_MODEL_DESCRIPTION {
        return Err(format!(
            "the file is larger than the limit of {MAX_MODEL_DESCRIPTION} bytes"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "the file is not valid UTF-8".to_string())
}

/// The variable called `name`.
pub(crate) fn variable<'m>(md: &'m ModelDescription, name: &str) -> Option<&'m Variable> {
    md.variable_by_name(name).map(|(_, v)| v)
}

/// True when a value for the variable goes into `parameters` (rather than
/// `start`).
pub(crate) fn is_parameter(v: &Variable) -> bool {
    matches!(
        v.causality,
        Causality::Parameter | Causality::StructuralParameter
    )
}

/// True when data flows out of the variable in a connection.
pub(crate) fn is_source(v: &Variable) -> bool {
    matches!(
        v.causality,
        Causality::Output | Causality::CalculatedParameter | Causality::Local
    )
}
