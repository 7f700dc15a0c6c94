//! `resources/cosim-export.toml`: what the exported FMU runs.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The manifest's file name, in the FMU's `resources` directory.
pub const FILE: &str = "cosim-export.toml";

/// The host program of isolated inner FMUs (`cosim`, run as `cosim
/// host`), in the FMU's `resources` directory when the system isolates one.
pub const HOST: &str = "host/cosim";

/// The format this build writes and reads.
pub const FORMAT: u32 = 1;

/// What an exported FMU runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The model's name (`modelName`, `modelIdentifier`).
    pub name: String,
    /// The system's scenario, relative to the `resources` directory.
    pub system: String,
    /// The exposed inputs and outputs, `<subsystem>.<variable>`.
    pub exposes: Vec<String>,
    /// The exposed parameters, `<subsystem>.<parameter>`.
    pub parameters: Vec<String>,
    /// One FMU wrapped (`cosim export Model.fmu`): the exported variables
    /// keep the FMU's names, without the subsystem's.
    #[serde(default)]
    pub wrapped: bool,
}

impl Manifest {
    /// Reads the manifest of the `resources` directory `dir`.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let manifest: Manifest =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if manifest.format != FORMAT {
            return Err(format!(
                "{}: format {} is not the format {FORMAT} this library reads (the FMU was exported by another version of cosim)",
                path.display(),
                manifest.format
            ));
        }
        Ok(manifest)
    }

    /// The manifest as TOML text.
    pub fn to_text(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_manifest_reads_back_as_written_and_another_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let m = Manifest {
            format: FORMAT,
            name: "nest".into(),
            system: "system/nest.toml".into(),
            exposes: vec!["s2.x1".into(), "s2.l12".into()],
            parameters: vec!["s3.c3".into()],
            wrapped: false,
        };
        std::fs::write(dir.path().join(FILE), m.to_text()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), m);
        let other = m.to_text().replace("format = 1", "format = 7");
        std::fs::write(dir.path().join(FILE), other).unwrap();
        let e = Manifest::read(dir.path()).unwrap_err();
        assert!(e.contains("format 7 is not the format 1"), "{e}");
        std::fs::write(dir.path().join(FILE), "format = 1\nunknown = 2\n").unwrap();
        let e = Manifest::read(dir.path()).unwrap_err();
        assert!(e.contains("unknown"), "{e}");
    }
}
