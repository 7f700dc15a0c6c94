//! Compiles CGain's C sources (c/cgain2.c, c/cgain3.c) into shared
//! libraries with the `cc` crate and packs each, with its
//! modelDescription.xml, into an FMU in `OUT_DIR`:
//! `$OUT_DIR/fmi2/CGain.fmu` (`binaries/linux64/CGain.so`) and
//! `$OUT_DIR/fmi3/CGain.fmu` (`binaries/x86_64-linux/CGain.so`).
//! The crate's `FMI2_FMU` and `FMI3_FMU` name them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

type BuildResult<T> = Result<T, Box<dyn std::error::Error>>;

fn main() {
    if let Err(e) = run() {
        println!("cargo:warning=building the CGain FMUs failed: {e}");
        std::process::exit(1);
    }
}

fn run() -> BuildResult<()> {
    for f in ["c/fmi_min.h", "c/cgain2.c", "c/cgain3.c", "build.rs"] {
        println!("cargo:rerun-if-changed={f}");
    }
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    for (version, source, platform, md) in [
        ("fmi2", "c/cgain2.c", "linux64", FMI2_MD),
        ("fmi3", "c/cgain3.c", "x86_64-linux", FMI3_MD),
    ] {
        let dir = out.join(version);
        std::fs::create_dir_all(&dir)?;
        let so = link(&dir, source)?;
        pack(
            &dir.join("CGain.fmu"),
            md,
            &format!("binaries/{platform}/CGain.so"),
            &so,
        )?;
    }
    Ok(())
}

/// Compiles `source` (optimised, whatever the profile: the FMU is the
/// benchmark's floor) and links it into `dir/CGain.so`.
fn link(dir: &Path, source: &str) -> BuildResult<PathBuf> {
    let mut build = cc::Build::new();
    build
        .file(source)
        .include("c")
        .opt_level(2)
        .debug(false)
        .pic(true)
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-fvisibility=hidden")
        .cargo_metadata(false)
        .out_dir(dir.join("obj"));
    let objects = build.compile_intermediates();
    let so = dir.join("CGain.so");
    let mut cmd: Command = build.get_compiler().to_command();
    cmd.arg("-shared")
        .arg("-Wl,-soname,CGain.so")
        .arg("-o")
        .arg(&so)
        .args(&objects);
    let status = cmd.status()?;
    if !status.success() {
        return Err(format!("linking {} failed: {cmd:?}", so.display()).into());
    }
    Ok(so)
}

fn pack(fmu: &Path, md: &str, so_entry: &str, so: &Path) -> BuildResult<()> {
    let file = std::fs::File::create(fmu)?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    zip.start_file("modelDescription.xml", options)?;
    zip.write_all(md.as_bytes())?;
    zip.start_file(so_entry, options.unix_permissions(0o755))?;
    zip.write_all(&std::fs::read(so)?)?;
    zip.finish()?;
    Ok(())
}

const FMI2_MD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="CGain" guid="cosim:CGain:fmi2:1" description="y = k * u (direct feed-through), written in C: as cheap per call as an FMU can be" generationTool="cosim fmus/cgain" variableNamingConvention="flat" numberOfEventIndicators="0">
  <CoSimulation modelIdentifier="CGain" canHandleVariableCommunicationStepSize="true" canNotUseMemoryManagementFunctions="true"/>
  <DefaultExperiment startTime="0.0" stopTime="10.0" stepSize="0.01"/>
  <ModelVariables>
    <ScalarVariable name="time" valueReference="0" causality="independent" variability="continuous">
      <Real/>
    </ScalarVariable>
    <ScalarVariable name="u" valueReference="1" description="Input" causality="input" variability="continuous">
      <Real start="0.0"/>
    </ScalarVariable>
    <ScalarVariable name="y" valueReference="2" description="Output y = k * u" causality="output" variability="continuous" initial="calculated">
      <Real/>
    </ScalarVariable>
    <ScalarVariable name="k" valueReference="3" description="Gain" causality="parameter" variability="fixed" initial="exact">
      <Real start="1.0"/>
    </ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs>
      <Unknown index="3" dependencies="2" dependenciesKind="fixed"/>
    </Outputs>
    <InitialUnknowns>
      <Unknown index="3" dependencies="2 4"/>
    </InitialUnknowns>
  </ModelStructure>
</fmiModelDescription>
"#;

const FMI3_MD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="CGain" instantiationToken="cosim:CGain:fmi3:1" description="y = k * u (direct feed-through), written in C: as cheap per call as an FMU can be" generationTool="cosim fmus/cgain" variableNamingConvention="flat">
  <CoSimulation modelIdentifier="CGain" canHandleVariableCommunicationStepSize="true" canBeInstantiatedOnlyOncePerProcess="false" hasEventMode="false"/>
  <LogCategories>
    <Category name="logStatusError" description="Calls refused: functions of interfaces and capabilities CGain does not have, values of types it has no variables of"/>
  </LogCategories>
  <DefaultExperiment startTime="0.0" stopTime="10.0" stepSize="0.01"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="u" valueReference="1" description="Input" causality="input" variability="continuous" start="0.0"/>
    <Float64 name="y" valueReference="2" description="Output y = k * u" causality="output" variability="continuous" initial="calculated"/>
    <Float64 name="k" valueReference="3" description="Gain" causality="parameter" variability="fixed" initial="exact" start="1.0"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="2" dependencies="1" dependenciesKind="fixed"/>
    <InitialUnknown valueReference="2" dependencies="1 3"/>
  </ModelStructure>
</fmiModelDescription>
"#;
