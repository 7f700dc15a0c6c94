//! An opened FMU: its extracted files, its model description, and (loaded on
//! first instantiation, then shared by every instance) its shared library,
//! one per interface (Co-Simulation and Model Exchange may name different
//! libraries).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::archive;
use crate::binary;
use crate::error::{FmiError, Result};
use crate::ffi::Interface;
use crate::ffi::call_log::CallLog;
use crate::ffi::common::{Capabilities, Instantiation};
use crate::ffi::fmi2::{Fmi2Instance, Fmi2Library};
use crate::ffi::fmi3::{Fmi3Instance, Fmi3Library};
use crate::instance::{Inner, Instance, InstantiateOptions, ReuseKey};
use crate::model_description::{
    CoSimulation, FmiVersion, ModelDescription, ModelExchange, parse_model_description_file,
};

#[derive(Clone)]
enum Library {
    V2(Arc<Fmi2Library>),
    V3(Arc<Fmi3Library>),
}

impl Library {
    /// Checks that the library exports every function `interface` needs.
    fn require(&self, interface: Interface) -> Result<()> {
        match self {
            Library::V2(l) => l.require(interface),
            Library::V3(l) => l.require(interface),
        }
    }
}

/// The libraries loaded for each interface, with the path each was asked
/// for (a copy reused from the pool has an earlier FMU's path).
#[derive(Default)]
struct Libraries {
    co_simulation: Option<(PathBuf, Library)>,
    model_exchange: Option<(PathBuf, Library)>,
    scheduled_execution: Option<(PathBuf, Library)>,
}

impl Libraries {
    fn slot(&mut self, interface: Interface) -> &mut Option<(PathBuf, Library)> {
        match interface {
            Interface::CoSimulation => &mut self.co_simulation,
            Interface::ModelExchange => &mut self.model_exchange,
            Interface::ScheduledExecution => &mut self.scheduled_execution,
        }
    }

    /// The library loaded for any interface from `path`.
    fn loaded_from(&self, path: &Path) -> Option<Library> {
        [
            &self.co_simulation,
            &self.model_exchange,
            &self.scheduled_execution,
        ]
        .into_iter()
        .flatten()
        .find(|(p, _)| p == path)
        .map(|(_, l)| l.clone())
    }
}

struct FmuInner {
    source: PathBuf,
    root: archive::FmuRoot,
    md: ModelDescription,
    library: Mutex<Libraries>,
    /// Kept from run to run ([`crate::reuse`]): its instances are parked
    /// when dropped.
    keeps_instances: std::sync::atomic::AtomicBool,
    /// Instances whose run is over, reset, for the next instantiation
    /// with the same name and options (freed when the FMU is).
    parked: Mutex<Vec<(ReuseKey, Inner)>>,
}

/// An opened `.fmu` archive (or unpacked FMU directory).
///
/// Cloning is cheap and shares the extracted files and the loaded library;
/// the temporary directory lives as long as any clone or instance.
#[derive(Clone)]
pub struct Fmu {
    inner: Arc<FmuInner>,
    /// Set by [`Fmu::as_model_exchange`]: the FMU's Model Exchange
    /// interface, driven by `cosim`'s integrator, seen as co-simulation.
    view: Option<Arc<crate::model_exchange::ModelExchangeView>>,
    /// Set by [`Fmu::as_scheduled_execution`]: its instances run FMI 3
    /// Scheduled Execution.
    scheduled: bool,
}

impl std::fmt::Debug for Fmu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fmu")
            .field("source", &self.inner.source)
            .field("model", &self.inner.md.model_name)
            .field("model_exchange", &self.view.is_some())
            .field("scheduled_execution", &self.scheduled)
            .finish()
    }
}

/// Process-wide registry of FMUs declaring
/// `canBeInstantiatedOnlyOncePerProcess`: token -> existing instance name.
fn once_registry() -> &'static Mutex<HashMap<String, String>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Holds an FMU's "only once per process" slot while its instance lives.
#[derive(Debug)]
pub(crate) struct OnceGuard {
    token: String,
}

impl Drop for OnceGuard {
    fn drop(&mut self) {
        if let Ok(mut map) = once_registry().lock() {
            map.remove(&self.token);
        }
    }
}

impl Fmu {
    /// Opens an `.fmu` file (extracting it safely into a private temporary
    /// directory) or an unpacked FMU directory, parses its
    /// `modelDescription.xml`, and checks the library for this platform of
    /// its default interface (Co-Simulation where it declares it, else
    /// Model Exchange), if it has one, without loading it
    /// ([`Fmu::check_library`]).
    ///
    /// # Errors
    ///
    /// Those of [`archive::FmuRoot::open`], [`FmiError::ModelDescription`],
    /// and those of [`Fmu::check_library`] for a library that is there (a
    /// missing one is an error only when the library is needed).
    ///
    /// While FMUs are kept from run to run ([`crate::reuse::keep_open`]),
    /// an FMU opened before from the same file that nothing uses any more
    /// is handed out instead, extracted and checked already.
    pub fn open(path: impl AsRef<Path>) -> Result<Fmu> {
        let path = path.as_ref();
        match crate::reuse::open(path) {
            Some(opened) => opened,
            None => Fmu::open_here(path),
        }
    }

    /// [`Fmu::open`], extracting the FMU in this process.
    pub(crate) fn open_here(path: &Path) -> Result<Fmu> {
        Fmu::with_root(archive::FmuRoot::open(path)?, path)
    }

    /// Opens `path` in the extraction the processes of this machine share
    /// under `key` ([`archive::FmuRoot::open_shared`]).
    pub(crate) fn open_shared(path: &Path, key: &str) -> Result<Fmu> {
        if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            return Fmu::open_here(path);
        }
        Fmu::with_root(archive::FmuRoot::open_shared(path, key)?, path)
    }

    /// Nothing but the caller holds this FMU (no clone, no instance).
    pub(crate) fn is_unused(&self) -> bool {
        Arc::strong_count(&self.inner) == 1
    }

    /// From now on, instances of this FMU are parked when dropped
    /// ([`crate::reuse`]).
    pub(crate) fn keep_instances(&self) {
        self.inner
            .keeps_instances
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Parks `inner`, an instance readied for reuse, under `key`.
    pub(crate) fn park(&self, key: ReuseKey, inner: Inner) {
        if let Ok(mut parked) = self.inner.parked.lock() {
            parked.push((key, inner));
        }
    }

    /// The parked instance for `key`, if any, taken.
    fn unpark(&self, key: &ReuseKey) -> Option<Inner> {
        let mut parked = self.inner.parked.lock().ok()?;
        let i = parked.iter().position(|(k, _)| k == key)?;
        Some(parked.swap_remove(i).1)
    }

    /// Opens an FMU that another process already extracted into `dir`
    /// (the master of a `cosim host`, which keeps the directory as long as
    /// the host runs and removes it), parsing its `modelDescription.xml`
    /// again. Messages name `source`, the `.fmu` file, not the directory.
    pub fn open_extracted(dir: &Path, source: &Path) -> Result<Fmu> {
        Fmu::with_root(archive::FmuRoot::extracted_elsewhere(dir, source)?, source)
    }

    /// True when the FMU was extracted into a temporary directory of this
    /// process (removed when the last clone and instance are dropped), not
    /// opened as a directory.
    pub fn is_extracted(&self) -> bool {
        self.inner.root.is_extracted()
    }

    fn with_root(root: archive::FmuRoot, path: &Path) -> Result<Fmu> {
        let md_path = root.path().join("modelDescription.xml");
        let mut md = parse_model_description_file(&md_path).map_err(|e| match e {
            // Name the archive, not the temporary directory, in messages.
            FmiError::ModelDescription {
                line,
                column,
                message,
                ..
            } => FmiError::ModelDescription {
                file: path.join("modelDescription.xml"),
                line,
                column,
                message,
            },
            other => other,
        })?;
        if let Some(cs) = &mut md.co_simulation {
            cs.has_source_files = source_files(&root, md.fmi_version, cs.has_source_files);
        }
        if let Some(me) = &mut md.model_exchange {
            me.has_source_files = source_files(&root, md.fmi_version, me.has_source_files);
        }
        let fmu = Fmu {
            inner: Arc::new(FmuInner {
                source: path.to_path_buf(),
                root,
                md,
                library: Mutex::new(Libraries::default()),
                keeps_instances: std::sync::atomic::AtomicBool::new(false),
                parked: Mutex::new(Vec::new()),
            }),
            view: None,
            scheduled: false,
        };
        // A library that is missing (or not named validly) is an error
        // only where it is needed; one that is there must be loadable.
        if fmu.library_path().is_ok() {
            fmu.check_library()?;
        }
        Ok(fmu)
    }

    /// The path the FMU was opened from.
    pub fn source(&self) -> &Path {
        &self.inner.source
    }

    /// The directory holding the extracted files.
    pub fn root(&self) -> &Path {
        self.inner.root.path()
    }

    /// The parsed model description; for an FMU seen through
    /// [`Fmu::as_model_exchange`], with the `<CoSimulation>` capabilities
    /// of `cosim`'s integrator driving its Model Exchange interface.
    pub fn model_description(&self) -> &ModelDescription {
        match &self.view {
            Some(view) => &view.md,
            None => &self.inner.md,
        }
    }

    /// The FMU's Model Exchange interface driven by `cosim`'s integrator
    /// with `settings`, seen as a Co-Simulation FMU: its instances step
    /// (`Instance::do_step`) by integrating the model, and its model
    /// description declares what the integrator provides (variable steps,
    /// input derivatives, state save and restore).
    ///
    /// # Errors
    ///
    /// The FMU declares no `<ModelExchange>`.
    pub fn as_model_exchange(&self, settings: crate::SolverSettings) -> Result<Fmu> {
        let me = self.model_exchange()?;
        Ok(Fmu {
            inner: Arc::clone(&self.inner),
            view: Some(Arc::new(crate::model_exchange::ModelExchangeView::new(
                &self.inner.md,
                me,
                settings,
            ))),
            scheduled: false,
        })
    }

    /// The FMU's Model Exchange interface as a member of a strongly coupled
    /// group ([`crate::StronglyCoupled`]): its instances are Model Exchange
    /// instances with no integrator of their own (the group integrates
    /// them), and its model description declares what a member is to the
    /// level it is in (the group steps it; inputs held over a step; state
    /// save and restore where the FMU has them).
    ///
    /// # Errors
    ///
    /// The FMU declares no `<ModelExchange>`.
    pub fn as_strongly_coupled_member(&self) -> Result<Fmu> {
        let me = self.model_exchange()?;
        Ok(Fmu {
            inner: Arc::clone(&self.inner),
            view: Some(Arc::new(crate::model_exchange::ModelExchangeView::member(
                &self.inner.md,
                me,
            ))),
            scheduled: false,
        })
    }

    /// The FMU's FMI 3 Scheduled Execution interface: its instances are
    /// instantiated with `fmi3InstantiateScheduledExecution`, their model
    /// partitions activated at their Clocks' ticks.
    ///
    /// # Errors
    ///
    /// The FMU declares no `<ScheduledExecution>`.
    pub fn as_scheduled_execution(&self) -> Result<Fmu> {
        self.model_identifier(Interface::ScheduledExecution)?;
        Ok(Fmu {
            inner: Arc::clone(&self.inner),
            view: None,
            scheduled: true,
        })
    }

    /// Whether this `Fmu` runs Scheduled Execution: seen through
    /// [`Fmu::as_scheduled_execution`], or its only interface.
    pub fn runs_scheduled_execution(&self) -> bool {
        let md = &self.inner.md;
        self.scheduled
            || (self.view.is_none()
                && md.co_simulation.is_none()
                && md.model_exchange.is_none()
                && md.scheduled_execution.is_some())
    }

    /// Whether this `Fmu` is a member of a strongly coupled group
    /// ([`Fmu::as_strongly_coupled_member`]).
    pub fn is_strongly_coupled_member(&self) -> bool {
        self.view.as_ref().is_some_and(|v| v.member)
    }

    /// The interface this `Fmu` runs: Model Exchange when seen through
    /// [`Fmu::as_model_exchange`], else its default.
    pub fn runs_model_exchange(&self) -> Option<crate::SolverSettings> {
        self.view.as_ref().filter(|v| !v.member).map(|v| v.settings)
    }

    /// The `<CoSimulation>` element, or an error naming the FMU if it has none.
    pub fn co_simulation(&self) -> Result<&CoSimulation> {
        if let Some(cs) = self.view.as_ref().and_then(|v| v.md.co_simulation.as_ref()) {
            return Ok(cs);
        }
        self.inner
            .md
            .co_simulation
            .as_ref()
            .ok_or_else(|| FmiError::Unsupported {
                fmu: self.inner.source.display().to_string(),
                reason: self
                    .inner
                    .md
                    .refusal_text(&self.inner.source.display().to_string())
                    .unwrap_or_else(|| {
                        format!(
                            "the FMU has no <CoSimulation> interface (it declares {}): run it as Model Exchange",
                            declared(&self.inner.md)
                        )
                    }),
            })
    }

    /// The `<ModelExchange>` element, or an error naming the FMU if it has
    /// none.
    pub fn model_exchange(&self) -> Result<&ModelExchange> {
        self.inner
            .md
            .model_exchange
            .as_ref()
            .ok_or_else(|| FmiError::Unsupported {
                fmu: self.inner.source.display().to_string(),
                reason: format!(
                    "the FMU has no <ModelExchange> interface (it declares {})",
                    declared(&self.inner.md)
                ),
            })
    }

    /// The interface instantiated when nothing says which: Co-Simulation
    /// where the FMU declares it, else Model Exchange.
    ///
    /// # Errors
    ///
    /// As [`Fmu::co_simulation`], for an FMU that declares neither.
    pub fn default_interface(&self) -> Result<Interface> {
        if self.view.is_some() {
            return Ok(Interface::ModelExchange);
        }
        match self.inner.md.default_interface() {
            Some(interface) => Ok(interface),
            None => self.co_simulation().map(|_| Interface::CoSimulation),
        }
    }

    /// The `modelIdentifier` of `interface`, or an error naming the FMU if
    /// it does not declare it.
    fn model_identifier(&self, interface: Interface) -> Result<&str> {
        Ok(match interface {
            Interface::CoSimulation => &self.co_simulation()?.model_identifier,
            Interface::ModelExchange => &self.model_exchange()?.model_identifier,
            Interface::ScheduledExecution => self
                .inner
                .md
                .scheduled_execution
                .as_deref()
                .ok_or_else(|| FmiError::Unsupported {
                    fmu: self.inner.source.display().to_string(),
                    reason: format!(
                        "the FMU has no <ScheduledExecution> interface (it declares {})",
                        declared(&self.inner.md)
                    ),
                })?,
        })
    }

    /// The path of the shared library for this platform of the default
    /// interface ([`Fmu::default_interface`]), checked to exist.
    pub fn library_path(&self) -> Result<PathBuf> {
        self.library_path_for(self.default_interface()?)
    }

    /// The path of the shared library for this platform of `interface`
    /// (its `modelIdentifier`), checked to exist.
    pub fn library_path_for(&self, interface: Interface) -> Result<PathBuf> {
        archive::library_path(
            self.inner.root.path(),
            &self.inner.source,
            self.inner.md.fmi_version,
            self.model_identifier(interface)?,
        )
    }

    /// The archive entry of the shared library for this platform
    /// (`binaries/linux64/<id>.so`, `binaries/x86_64-linux/<id>.so`) of
    /// the default interface, checked to exist.
    ///
    /// # Errors
    ///
    /// As [`Fmu::library_path`].
    pub fn library_entry(&self) -> Result<String> {
        let path = self.library_path()?;
        Ok(self.entry_of(&path))
    }

    /// `path` (under the extraction directory) as an archive entry name.
    fn entry_of(&self, path: &Path) -> String {
        let relative = path.strip_prefix(self.inner.root.path()).unwrap_or(path);
        relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// `path` (under the extraction directory) as the user knows it:
    /// `<the .fmu>/<entry>`, never the temporary directory.
    fn shown(&self, path: &Path) -> PathBuf {
        self.inner.source.join(self.entry_of(path))
    }

    /// Checks the shared library for this platform of the default
    /// interface without loading it ([`Fmu::check_library_for`]).
    ///
    /// # Errors
    ///
    /// As [`Fmu::check_library_for`].
    pub fn check_library(&self) -> Result<binary::SharedLibrary> {
        self.check_library_for(self.default_interface()?)
    }

    /// Checks the shared library for this platform of `interface` without
    /// loading it (nothing of it runs): its ELF header, program and
    /// section headers against the file's size and this machine's
    /// architecture, class and byte order, that it is a shared object, and
    /// that it exports every mandatory FMI function of the FMU's version
    /// for the interface (see [`binary`]). Returns what was read: its
    /// exported symbols.
    ///
    /// # Errors
    ///
    /// [`FmiError::MissingBinary`] without a library for this platform;
    /// [`FmiError::Archive`] naming the `.fmu`, the library's entry and the
    /// reason for a library that cannot be loaded ("truncated: ...",
    /// "built for aarch64, this machine is x86_64", "not an ELF shared
    /// library ..."); [`FmiError::MissingFunction`] naming
    /// `<the .fmu>/<entry>` and the first mandatory function it lacks;
    /// [`FmiError::Io`] if the file cannot be read.
    pub fn check_library_for(&self, interface: Interface) -> Result<binary::SharedLibrary> {
        let path = self.library_path_for(interface)?;
        let library = binary::check_shared_library_file(&path)
            .map_err(|error| FmiError::Io {
                path: self.shown(&path),
                error,
            })?
            .map_err(|reason| FmiError::Archive {
                archive: self.inner.source.clone(),
                entry: Some(self.entry_of(&path)),
                reason,
            })?;
        if let Some(function) =
            binary::missing_function(&library, self.inner.md.fmi_version, interface)
        {
            return Err(FmiError::MissingFunction {
                library: self.shown(&path),
                function: function.to_string(),
            });
        }
        Ok(library)
    }

    /// The FMI functions (`fmi2...` / `fmi3...`) the shared library
    /// exports, sorted, read from its dynamic symbol table without loading
    /// it; `None` when the library has no section headers to find that
    /// table by.
    ///
    /// # Errors
    ///
    /// As [`Fmu::check_library`].
    pub fn exported_fmi_functions(&self) -> Result<Option<Vec<String>>> {
        let prefix = match self.inner.md.fmi_version {
            FmiVersion::V2 => "fmi2",
            FmiVersion::V3 => "fmi3",
        };
        Ok(self.check_library()?.exports.map(|exports| {
            exports
                .into_iter()
                .filter(|name| name.starts_with(prefix))
                .collect()
        }))
    }

    /// Loads the shared library of the default interface now (it is
    /// otherwise loaded on the first instantiation) and returns the names
    /// of the optional FMI functions it exports. Fails naming a missing
    /// mandatory function. This runs the library's initialisers; to list
    /// its functions without running anything, use
    /// [`Fmu::exported_fmi_functions`].
    pub fn load(&self) -> Result<Vec<&'static str>> {
        self.load_for(self.default_interface()?)
    }

    /// [`Fmu::load`] of the library of `interface`.
    pub fn load_for(&self, interface: Interface) -> Result<Vec<&'static str>> {
        let mut guard = self.lock_library()?;
        let lib = self.ensure_library(&mut guard, interface)?;
        Ok(match lib {
            Library::V2(l) => l.optional_functions(),
            Library::V3(l) => l.optional_functions(),
        })
    }

    fn lock_library(&self) -> Result<std::sync::MutexGuard<'_, Libraries>> {
        self.inner
            .library
            .lock()
            .map_err(|_| FmiError::Unsupported {
                fmu: self.inner.source.display().to_string(),
                reason: "library state poisoned by an earlier panic".into(),
            })
    }

    /// The library of `interface`, loaded now if it is not yet: the
    /// other interface's where both name the same file.
    fn ensure_library<'a>(
        &self,
        libraries: &'a mut Libraries,
        interface: Interface,
    ) -> Result<&'a Library> {
        if libraries.slot(interface).is_none() {
            let path = self.library_path_for(interface)?;
            // Checked at open, and again here, right before `dlopen`: an
            // unpacked FMU directory may have changed since.
            self.check_library_for(interface)?;
            let library = match libraries.loaded_from(&path) {
                Some(library) => library,
                None => {
                    // In-process, a crash in the library's initialisers
                    // ends the process: this line (-vv) says what was
                    // being loaded.
                    tracing::debug!(
                        "loading the shared library {} (its initialisers run)",
                        self.shown(&path).display()
                    );
                    let loaded = match self.inner.md.fmi_version {
                        FmiVersion::V2 => Fmi2Library::load(&path).map(Library::V2),
                        FmiVersion::V3 => Fmi3Library::load(&path).map(Library::V3),
                    };
                    loaded.map_err(|e| self.name_the_archive(e))?
                }
            };
            // (Named after this FMU's file: a copy from the pool has
            // another's path.)
            library.require(interface).map_err(|e| match e {
                FmiError::MissingFunction { function, .. } => FmiError::MissingFunction {
                    library: self.shown(&path),
                    function,
                },
                other => other,
            })?;
            *libraries.slot(interface) = Some((path, library));
        }
        libraries
            .slot(interface)
            .as_ref()
            .map(|(_, library)| library)
            .ok_or_else(|| FmiError::Unsupported {
                fmu: self.inner.source.display().to_string(),
                reason: "library not loaded".into(),
            })
    }

    /// A loader error about the extracted library, rewritten to name
    /// `<the .fmu>/<entry>` instead of the temporary directory (which is
    /// gone by the time the message is read).
    fn name_the_archive(&self, e: FmiError) -> FmiError {
        let root = self.inner.root.path().display().to_string();
        let source = self.inner.source.display().to_string();
        match e {
            FmiError::LoadLibrary { library, reason } => FmiError::LoadLibrary {
                library: self.shown(&library),
                reason: reason.replace(&root, &source),
            },
            FmiError::MissingFunction { library, function } => FmiError::MissingFunction {
                library: self.shown(&library),
                function,
            },
            FmiError::Io { path, error } => FmiError::Io {
                path: self.shown(&path),
                error,
            },
            other => other,
        }
    }

    /// Creates an instance named `name` for the interface of `options`
    /// (Co-Simulation by default); for an FMU seen through
    /// [`Fmu::as_model_exchange`], a Model Exchange instance with its
    /// integrator.
    pub fn instantiate(&self, name: &str, options: &InstantiateOptions) -> Result<Instance> {
        let Some(view) = &self.view else {
            return self.instantiate_interface(name, options, options.interface);
        };
        let mut instance = self.instantiate_interface(name, options, Interface::ModelExchange)?;
        if !view.member {
            instance.me = Some(Box::new(view.driver(&self.inner.md, &instance)?));
        }
        Ok(instance)
    }

    fn instantiate_interface(
        &self,
        name: &str,
        options: &InstantiateOptions,
        interface: Interface,
    ) -> Result<Instance> {
        let md = &self.inner.md;
        let (only_once, caps) = match interface {
            Interface::CoSimulation => {
                let cs = self.co_simulation()?;
                (
                    cs.can_be_instantiated_only_once_per_process,
                    Capabilities {
                        can_get_and_set_fmu_state: cs.can_get_and_set_fmu_state,
                        can_serialize_fmu_state: cs.can_serialize_fmu_state,
                        provides_directional_derivatives: cs.provides_directional_derivatives,
                        can_interpolate_inputs: cs.can_interpolate_inputs,
                        max_output_derivative_order: cs.max_output_derivative_order,
                        has_event_mode: cs.has_event_mode,
                        provides_intermediate_update: cs.provides_intermediate_update,
                    },
                )
            }
            Interface::ScheduledExecution => {
                self.model_identifier(Interface::ScheduledExecution)?;
                // (Its capability flags are not read: the state and
                // derivatives are not used for it.)
                (false, Capabilities::default())
            }
            Interface::ModelExchange => {
                let me = self.model_exchange()?;
                (
                    me.can_be_instantiated_only_once_per_process,
                    Capabilities {
                        can_get_and_set_fmu_state: me.can_get_and_set_fmu_state,
                        can_serialize_fmu_state: me.can_serialize_fmu_state,
                        provides_directional_derivatives: me.provides_directional_derivatives,
                        ..Capabilities::default()
                    },
                )
            }
        };
        let counts = (
            md.number_of_continuous_states(),
            md.number_of_event_indicators(),
        );
        // Kept from run to run: a parked instance of the same name and
        // options, or this one parked when dropped. (Not an FMU that can
        // be instantiated only once: its parked instance would hold the
        // process's one slot.)
        let reuse = (interface == Interface::CoSimulation
            && options.call_log.is_none()
            && !only_once
            && self
                .inner
                .keeps_instances
                .load(std::sync::atomic::Ordering::Relaxed)
            && crate::reuse::parking())
        .then(|| ReuseKey {
            name: name.to_string(),
            logging_on: options.logging_on,
            debug_categories: options.debug_categories.clone(),
            events: options.events,
        });
        if let Some(inner) = reuse.as_ref().and_then(|key| self.unpark(key)) {
            crate::reuse::count_reused();
            tracing::debug!(
                instance = name,
                "reused an instance of {} (reset after its run)",
                self.inner.source.display()
            );
            return self.instance(inner, None, reuse, options);
        }
        let once_guard = if only_once {
            let mut map = once_registry().lock().map_err(|_| FmiError::Unsupported {
                fmu: self.inner.source.display().to_string(),
                reason: "instance registry poisoned by an earlier panic".into(),
            })?;
            if let Some(existing) = map.get(&md.instantiation_token) {
                return Err(FmiError::OnlyOncePerProcess {
                    fmu: self.inner.source.display().to_string(),
                    existing: existing.clone(),
                });
            }
            map.insert(md.instantiation_token.clone(), name.to_string());
            Some(OnceGuard {
                token: md.instantiation_token.clone(),
            })
        } else {
            None
        };
        let resources = self.inner.root.path().join("resources");
        // The value-reference names are looked up only when logging is on.
        let call_log = options
            .call_log
            .as_ref()
            .map(|sink| Arc::new(CallLog::new(sink.clone(), name, md)));
        let mut guard = self.lock_library()?;
        let library = self.ensure_library(&mut guard, interface)?;
        let how = Instantiation {
            name,
            token: &md.instantiation_token,
            resources: &resources,
            caps,
            interface,
            counts,
            logging_on: options.logging_on,
            call_log,
            events: options.events,
        };
        let inner = match library {
            Library::V2(lib) => Inner::V2(Fmi2Instance::instantiate(Arc::clone(lib), how)?),
            Library::V3(lib) => Inner::V3(Fmi3Instance::instantiate(Arc::clone(lib), how)?),
        };
        drop(guard);
        self.instance(inner, once_guard, reuse, options)
    }

    /// The [`Instance`] of `inner`, instantiated or taken back from the
    /// parked ones, with its debug logging set.
    fn instance(
        &self,
        inner: Inner,
        once_guard: Option<OnceGuard>,
        reuse: Option<ReuseKey>,
        options: &InstantiateOptions,
    ) -> Result<Instance> {
        let mut instance = Instance {
            inner,
            version: self.inner.md.fmi_version,
            experiment: None,
            _once_guard: once_guard,
            _fmu: self.clone(),
            me: None,
            reuse: reuse.map(Box::new),
        };
        if let Some(categories) = &options.debug_categories {
            let cats: Vec<&str> = categories.iter().map(String::as_str).collect();
            instance.set_debug_logging(true, &cats)?;
        }
        Ok(instance)
    }
}

/// The interfaces `md` declares, in words: "<CoSimulation>", "no
/// interface".
fn declared(md: &ModelDescription) -> String {
    let names: Vec<String> = md
        .interfaces()
        .iter()
        .map(|i| format!("<{}>", i.interface))
        .collect();
    if names.is_empty() {
        "no interface".to_string()
    } else {
        names.join(" and ")
    }
}

/// Whether the FMU brings source code that could be compiled: FMI 3, any
/// file under `sources/` (FMI 3.0 sec. 2.5.1: the directory holds the
/// sources and their `buildDescription.xml`); FMI 2, files listed in
/// `<CoSimulation><SourceFiles>` (`listed`: FMI 2.0 sec. 2.3 asks for the
/// files to compile to be listed there) that the archive has under
/// `sources/`.
fn source_files(root: &archive::FmuRoot, version: FmiVersion, listed: bool) -> bool {
    let present = root.has_source_files();
    match version {
        FmiVersion::V3 => present,
        FmiVersion::V2 => listed && present,
    }
}
