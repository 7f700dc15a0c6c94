//! Checks an FMU's shared library before it is loaded.
//!
//! `dlopen` trusts the file it maps: a library cut short (an FMU archive
//! that was truncated, or a partial download) makes the loader touch pages
//! beyond the end of the file and the process dies of SIGBUS inside
//! `dlopen`; a library for another architecture is reported by the loader
//! as a missing dependency. [`check_shared_library_file`] reads the ELF
//! header, the program headers and the section headers (with the `object`
//! crate, without loading or running anything) and refuses, with a reason a
//! user can act on:
//!
//! - a file that is not ELF (a text file, a Windows DLL, a Mach-O library);
//! - an ELF file for another class, byte order or architecture than this
//!   machine's ("built for aarch64, this machine is x86_64");
//! - an ELF file that is not a shared object (an executable, a `.o` file);
//! - a file shorter than its headers or segments say ("truncated: segment 2
//!   (PT_LOAD) ends at byte 4552 of a 1000-byte file").
//!
//! The same reading gives the library's exported dynamic symbols
//! ([`SharedLibrary::exports`]), so that the FMI functions a library offers
//! are known without loading it ([`missing_function`]: those of the
//! interface it is loaded for, Co-Simulation or Model Exchange).

use std::fs::File;
use std::path::Path;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::{Endianness, ReadCache, ReadRef};

use crate::ffi::Interface;
use crate::model_description::FmiVersion;

/// The functions of the FMI 2.0 Co-Simulation interface that every library
/// must export (those the binding in `ffi::fmi2` refuses to load without).
pub const FMI2_MANDATORY_FUNCTIONS: &[&str] = &[
    "fmi2GetTypesPlatform",
    "fmi2GetVersion",
    "fmi2SetDebugLogging",
    "fmi2Instantiate",
    "fmi2FreeInstance",
    "fmi2SetupExperiment",
    "fmi2EnterInitializationMode",
    "fmi2ExitInitializationMode",
    "fmi2Terminate",
    "fmi2Reset",
    "fmi2GetReal",
    "fmi2GetInteger",
    "fmi2GetBoolean",
    "fmi2GetString",
    "fmi2SetReal",
    "fmi2SetInteger",
    "fmi2SetBoolean",
    "fmi2SetString",
    "fmi2DoStep",
];

/// The functions of the FMI 3.0 Co-Simulation interface that every library
/// must export (those the binding in `ffi::fmi3` refuses to load without).
pub const FMI3_MANDATORY_FUNCTIONS: &[&str] = &[
    "fmi3GetVersion",
    "fmi3SetDebugLogging",
    "fmi3InstantiateCoSimulation",
    "fmi3FreeInstance",
    "fmi3EnterInitializationMode",
    "fmi3ExitInitializationMode",
    "fmi3Terminate",
    "fmi3Reset",
    "fmi3GetFloat64",
    "fmi3SetFloat64",
    "fmi3GetInt32",
    "fmi3SetInt32",
    "fmi3GetInt64",
    "fmi3SetInt64",
    "fmi3GetBoolean",
    "fmi3SetBoolean",
    "fmi3GetString",
    "fmi3SetString",
    "fmi3DoStep",
];

/// The functions of [`FMI2_MANDATORY_FUNCTIONS`] that only Co-Simulation
/// needs.
const FMI2_CO_SIMULATION_ONLY: &[&str] = &["fmi2DoStep"];

/// The functions of [`FMI3_MANDATORY_FUNCTIONS`] that only Co-Simulation
/// needs.
const FMI3_CO_SIMULATION_ONLY: &[&str] = &["fmi3InstantiateCoSimulation", "fmi3DoStep"];

/// The functions of the FMI 2.0 Model Exchange interface that a library
/// instantiated for it must export besides the common ones (those of
/// [`FMI2_MANDATORY_FUNCTIONS`] but `fmi2DoStep`).
pub const FMI2_MODEL_EXCHANGE_FUNCTIONS: &[&str] = &[
    "fmi2EnterEventMode",
    "fmi2NewDiscreteStates",
    "fmi2EnterContinuousTimeMode",
    "fmi2CompletedIntegratorStep",
    "fmi2SetTime",
    "fmi2SetContinuousStates",
    "fmi2GetDerivatives",
    "fmi2GetEventIndicators",
    "fmi2GetContinuousStates",
    "fmi2GetNominalsOfContinuousStates",
];

/// The functions of the FMI 3.0 Model Exchange interface that a library
/// instantiated for it must export besides the common ones (those of
/// [`FMI3_MANDATORY_FUNCTIONS`] but `fmi3InstantiateCoSimulation` and
/// `fmi3DoStep`).
pub const FMI3_MODEL_EXCHANGE_FUNCTIONS: &[&str] = &[
    "fmi3InstantiateModelExchange",
    "fmi3EnterEventMode",
    "fmi3UpdateDiscreteStates",
    "fmi3EnterContinuousTimeMode",
    "fmi3CompletedIntegratorStep",
    "fmi3SetTime",
    "fmi3SetContinuousStates",
    "fmi3GetContinuousStateDerivatives",
    "fmi3GetEventIndicators",
    "fmi3GetContinuousStates",
    "fmi3GetNominalsOfContinuousStates",
    "fmi3GetNumberOfEventIndicators",
    "fmi3GetNumberOfContinuousStates",
];

/// The functions a library of `version` must export to be instantiated
/// for `interface` (those the binding in `ffi` refuses to instantiate
/// without).
pub fn mandatory_functions(
    version: FmiVersion,
    interface: Interface,
) -> impl Iterator<Item = &'static str> {
    let (common, co_simulation_only, model_exchange) = match version {
        FmiVersion::V2 => (
            FMI2_MANDATORY_FUNCTIONS,
            FMI2_CO_SIMULATION_ONLY,
            FMI2_MODEL_EXCHANGE_FUNCTIONS,
        ),
        FmiVersion::V3 => (
            FMI3_MANDATORY_FUNCTIONS,
            FMI3_CO_SIMULATION_ONLY,
            FMI3_MODEL_EXCHANGE_FUNCTIONS,
        ),
    };
    let me = interface == Interface::ModelExchange;
    let cs = interface == Interface::CoSimulation;
    common
        .iter()
        .filter(move |f| cs || !co_simulation_only.contains(f))
        .chain(if me { model_exchange } else { &[] })
        .copied()
}

/// What was read from a shared library that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLibrary {
    /// The names of the symbols the library exports (defined, global or
    /// weak, default or protected visibility) in its dynamic symbol table,
    /// sorted; `None` when the file has no section headers to find that
    /// table by (a stripped-down library that can still be loaded).
    pub exports: Option<Vec<String>>,
}

impl SharedLibrary {
    /// True when the library is known to export `name`; also true when its
    /// exports cannot be known (no section headers).
    pub fn may_export(&self, name: &str) -> bool {
        self.exports
            .as_ref()
            .is_none_or(|e| e.binary_search_by(|x| x.as_str().cmp(name)).is_ok())
    }
}

/// The first mandatory FMI Co-Simulation function of `version` that
/// `library` does not export, if any (none when its exports are unknown).
pub fn missing_mandatory_function(
    library: &SharedLibrary,
    version: FmiVersion,
) -> Option<&'static str> {
    missing_function(library, version, Interface::CoSimulation)
}

/// The first function that `interface` of `version` needs and `library`
/// does not export, if any (none when its exports are unknown).
pub fn missing_function(
    library: &SharedLibrary,
    version: FmiVersion,
    interface: Interface,
) -> Option<&'static str> {
    mandatory_functions(version, interface).find(|f| !library.may_export(f))
}

/// Checks the shared library at `path` (see the module documentation).
///
/// The outer error is an I/O error opening or reading the file; the inner
/// one the reason the file cannot be loaded, for a message.
pub fn check_shared_library_file(path: &Path) -> std::io::Result<Result<SharedLibrary, String>> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let cache = ReadCache::new(file);
    Ok(check(&cache, len))
}

/// Checks a shared library held in memory (see the module documentation);
/// the error is the reason it cannot be loaded.
///
/// # Errors
///
/// The reason, as [`check_shared_library_file`] gives it.
pub fn check_shared_library(data: &[u8]) -> Result<SharedLibrary, String> {
    check(data, data.len() as u64)
}

/// This machine, as ELF writes it.
struct Host {
    class: u8,
    data: u8,
    /// `None` on an architecture this table does not know (not checked).
    machine: Option<u16>,
}

const HOST: Host = Host {
    class: if cfg!(target_pointer_width = "64") {
        elf::ELFCLASS64.0
    } else {
        elf::ELFCLASS32.0
    },
    data: if cfg!(target_endian = "little") {
        elf::ELFDATA2LSB.0
    } else {
        elf::ELFDATA2MSB.0
    },
    machine: if cfg!(target_arch = "x86_64") {
        Some(elf::EM_X86_64.0)
    } else if cfg!(target_arch = "aarch64") {
        Some(elf::EM_AARCH64.0)
    } else if cfg!(target_arch = "x86") {
        Some(elf::EM_386.0)
    } else if cfg!(target_arch = "arm") {
        Some(elf::EM_ARM.0)
    } else if cfg!(any(target_arch = "riscv64", target_arch = "riscv32")) {
        Some(elf::EM_RISCV.0)
    } else if cfg!(target_arch = "powerpc64") {
        Some(elf::EM_PPC64.0)
    } else if cfg!(target_arch = "s390x") {
        Some(elf::EM_S390.0)
    } else if cfg!(target_arch = "loongarch64") {
        Some(elf::EM_LOONGARCH.0)
    } else {
        None
    },
};

/// The usual name of an ELF machine.
fn machine_name(machine: u16) -> String {
    let name = match elf::Machine(machine) {
        elf::EM_X86_64 => "x86_64",
        elf::EM_AARCH64 => "aarch64",
        elf::EM_386 => "i386",
        elf::EM_ARM => "arm",
        elf::EM_RISCV => "riscv",
        elf::EM_PPC64 => "powerpc64",
        elf::EM_PPC => "powerpc",
        elf::EM_S390 => "s390x",
        elf::EM_MIPS => "mips",
        elf::EM_SPARCV9 => "sparc64",
        elf::EM_LOONGARCH => "loongarch",
        elf::EM_IA_64 => "ia64",
        _ => return format!("machine type {machine} (e_machine)"),
    };
    name.to_string()
}

fn bits(class: u8) -> &'static str {
    if class == elf::ELFCLASS64.0 {
        "64-bit"
    } else {
        "32-bit"
    }
}

fn byte_order(data: u8) -> &'static str {
    if data == elf::ELFDATA2LSB.0 {
        "little-endian"
    } else {
        "big-endian"
    }
}

/// What a file that does not start with the ELF magic looks like.
fn describe_non_elf(head: &[u8]) -> String {
    if head.starts_with(b"MZ") {
        return "a Windows (PE) file, not an ELF shared library".to_string();
    }
    let macho: [[u8; 4]; 4] = [
        [0xfe, 0xed, 0xfa, 0xce],
        [0xfe, 0xed, 0xfa, 0xcf],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xcf, 0xfa, 0xed, 0xfe],
    ];
    if macho.iter().any(|m| head.starts_with(m)) || head.starts_with(&[0xca, 0xfe, 0xba, 0xbe]) {
        return "a macOS (Mach-O) file, not an ELF shared library".to_string();
    }
    let shown = head.get(..head.len().min(16)).unwrap_or_default();
    let text = shown
        .iter()
        .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\t' || b == b'\n' || b == b'\r');
    if text {
        let s = String::from_utf8_lossy(shown);
        let first_line = s.lines().next().unwrap_or_default().trim_end();
        format!("not an ELF shared library: the file is text (it begins {first_line:?})")
    } else {
        let hex: Vec<String> = shown.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!(
            "not an ELF shared library: the file begins with the bytes {} instead of 7f 45 4c 46 (\\x7fELF)",
            hex.join(" ")
        )
    }
}

/// `truncated: <what ends> at byte <end> of a <len>-byte file`.
fn truncated(what_ends: &str, end: u64, len: u64) -> String {
    format!("truncated: {what_ends} at byte {end} of a {len}-byte file")
}

fn check<'data, R: ReadRef<'data>>(data: R, len: u64) -> Result<SharedLibrary, String> {
    if len == 0 {
        return Err("the file is empty (0 bytes): not a shared library".to_string());
    }
    let head = data
        .read_bytes_at(0, len.min(16))
        .map_err(|()| "cannot read the start of the file".to_string())?;
    let magic = head.get(..head.len().min(4)).unwrap_or_default();
    if !elf::ELFMAG.starts_with(magic) {
        return Err(describe_non_elf(head));
    }
    if len < 16 {
        return Err(truncated("the ELF identification would end", 16, len));
    }
    // e_ident: the magic, then EI_CLASS, EI_DATA, EI_VERSION.
    let ident = |i: usize| head.get(i).copied().unwrap_or_default();
    let (class, encoding, version) = (ident(4), ident(5), ident(6));
    if class != elf::ELFCLASS32.0 && class != elf::ELFCLASS64.0 {
        return Err(format!(
            "not a valid ELF file: unknown class {class} (EI_CLASS; 1 is 32-bit, 2 is 64-bit)"
        ));
    }
    if encoding != elf::ELFDATA2LSB.0 && encoding != elf::ELFDATA2MSB.0 {
        return Err(format!(
            "not a valid ELF file: unknown byte order {encoding} (EI_DATA)"
        ));
    }
    if version != elf::EV_CURRENT.0 {
        return Err(format!(
            "not a valid ELF file: unknown ELF version {version} (EI_VERSION)"
        ));
    }
    if class == elf::ELFCLASS64.0 {
        check_class::<elf::FileHeader64<Endianness>, R>(data, len, class, encoding)
    } else {
        check_class::<elf::FileHeader32<Endianness>, R>(data, len, class, encoding)
    }
}

fn check_class<'data, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
    len: u64,
    class: u8,
    encoding: u8,
) -> Result<SharedLibrary, String> {
    let header_size = std::mem::size_of::<Elf>() as u64;
    if len < header_size {
        return Err(truncated("the ELF header would end", header_size, len));
    }
    let header = Elf::parse(data).map_err(|e| format!("not a valid ELF file: {e}"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("not a valid ELF file: {e}"))?;

    // For this machine?
    let machine = header.e_machine(endian).0;
    if HOST.machine.is_some_and(|m| m != machine) {
        let mut built = machine_name(machine);
        let mut host = HOST.machine.map(machine_name).unwrap_or_default();
        if class != HOST.class {
            built = format!("{built} ({})", bits(class));
            host = format!("{host} ({})", bits(HOST.class));
        }
        if encoding != HOST.data {
            built = format!("{built}, {}", byte_order(encoding));
        }
        return Err(format!("built for {built}, this machine is {host}"));
    }
    if class != HOST.class {
        return Err(format!(
            "a {} library, this machine loads {} ones",
            bits(class),
            bits(HOST.class)
        ));
    }
    if encoding != HOST.data {
        return Err(format!(
            "a {} library, this machine is {}",
            byte_order(encoding),
            byte_order(HOST.data)
        ));
    }

    // A shared object?
    let kind = header.e_type(endian);
    if kind != elf::ET_DYN {
        let what = match kind {
            elf::ET_EXEC => "an executable (ET_EXEC)".to_string(),
            elf::ET_REL => "a relocatable object file (ET_REL, a .o file)".to_string(),
            elf::ET_CORE => "a core dump (ET_CORE)".to_string(),
            other => format!("an ELF file of type {} (e_type)", other.0),
        };
        return Err(format!("not a shared library: {what}"));
    }

    // The program headers: what the loader maps.
    let phoff: u64 = header.e_phoff(endian).into();
    let phnum = u64::from(
        header
            .phnum(endian, data)
            .map_err(|e| format!("invalid program header count: {e}"))?,
    );
    if phoff == 0 || phnum == 0 {
        return Err(
            "no program headers: nothing a loader could map (not a shared library)".to_string(),
        );
    }
    let phentsize = u64::from(header.e_phentsize(endian));
    let expected = std::mem::size_of::<Elf::ProgramHeader>() as u64;
    if phentsize != expected {
        return Err(format!(
            "not a valid ELF file: program header entries of {phentsize} bytes, expected {expected} (e_phentsize)"
        ));
    }
    let ph_end = phnum
        .checked_mul(phentsize)
        .and_then(|n| n.checked_add(phoff))
        .ok_or_else(|| "not a valid ELF file: the program headers overflow".to_string())?;
    if ph_end > len {
        return Err(truncated("the program headers end", ph_end, len));
    }
    let segments = header
        .program_headers(endian, data)
        .map_err(|e| format!("not a valid ELF file: {e}"))?;
    let (mut loads, mut dynamic) = (0usize, false);
    for (i, segment) in segments.iter().enumerate() {
        let kind = segment.p_type(endian);
        if kind == elf::PT_LOAD {
            loads += 1;
        } else if kind == elf::PT_DYNAMIC {
            dynamic = true;
        }
        let (offset, size) = segment.file_range(endian);
        if size == 0 {
            continue;
        }
        let end = offset.checked_add(size).ok_or_else(|| {
            format!(
                "not a valid ELF file: segment {i} ({}) overflows",
                segment_name(kind)
            )
        })?;
        if end > len {
            return Err(truncated(
                &format!("segment {i} ({}) ends", segment_name(kind)),
                end,
                len,
            ));
        }
    }
    if loads == 0 {
        return Err("no loadable segment (PT_LOAD): not a shared library".to_string());
    }
    if !dynamic {
        return Err(
            "no dynamic section (PT_DYNAMIC): not a shared library (a static executable?)"
                .to_string(),
        );
    }

    // The section headers: not read by the loader, but where a truncation
    // shows first, and the way to the dynamic symbol table.
    let shoff: u64 = header.e_shoff(endian).into();
    if shoff == 0 {
        return Ok(SharedLibrary { exports: None });
    }
    let shnum = u64::from(
        header
            .shnum(endian, data)
            .map_err(|e| format!("invalid section header count: {e}"))?,
    );
    let shentsize = u64::from(header.e_shentsize(endian));
    let sh_end = shnum
        .checked_mul(shentsize)
        .and_then(|n| n.checked_add(shoff))
        .ok_or_else(|| "not a valid ELF file: the section headers overflow".to_string())?;
    if sh_end > len {
        return Err(truncated("the section headers end", sh_end, len));
    }
    if shnum == 0 {
        return Ok(SharedLibrary { exports: None });
    }
    let sections = header
        .sections(endian, data)
        .map_err(|e| format!("not a valid ELF file: {e}"))?;
    for (i, section) in sections.iter().enumerate() {
        if let Some((offset, size)) = section.file_range(endian) {
            let end = offset.saturating_add(size);
            if size > 0 && end > len {
                return Err(truncated(&format!("section {i} ends"), end, len));
            }
        }
    }
    let symbols = sections
        .symbols(endian, data, elf::SHT_DYNSYM)
        .map_err(|e| format!("invalid dynamic symbol table (.dynsym): {e}"))?;
    let mut exports = Vec::new();
    for symbol in symbols.iter() {
        let visibility = symbol.st_visibility();
        if symbol.st_shndx(endian) == elf::SHN_UNDEF
            || symbol.st_bind() == elf::STB_LOCAL
            || !(visibility == elf::STV_DEFAULT || visibility == elf::STV_PROTECTED)
        {
            continue;
        }
        let name = symbols
            .symbol_name(endian, symbol)
            .map_err(|e| format!("invalid dynamic symbol table (.dynsym): {e}"))?;
        if !name.is_empty() {
            exports.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    exports.sort_unstable();
    exports.dedup();
    Ok(SharedLibrary {
        exports: Some(exports),
    })
}

/// `PT_LOAD`, `PT_DYNAMIC` ... for messages.
fn segment_name(kind: elf::ProgramType) -> String {
    match kind {
        elf::PT_LOAD => "PT_LOAD".to_string(),
        elf::PT_DYNAMIC => "PT_DYNAMIC".to_string(),
        elf::PT_INTERP => "PT_INTERP".to_string(),
        elf::PT_NOTE => "PT_NOTE".to_string(),
        elf::PT_PHDR => "PT_PHDR".to_string(),
        elf::PT_TLS => "PT_TLS".to_string(),
        elf::PT_GNU_EH_FRAME => "PT_GNU_EH_FRAME".to_string(),
        elf::PT_GNU_RELRO => "PT_GNU_RELRO".to_string(),
        elf::PT_GNU_PROPERTY => "PT_GNU_PROPERTY".to_string(),
        other => format!("type {:#x}", other.0),
    }
}
