//! The typed master and output settings, with the published defaults.

use std::path::PathBuf;

use serde::Serialize;

use crate::resolve::{Traced, VariableRef};

/// Which co-simulation master runs the scenario (`[master] kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum MasterKind {
    /// `"fixed-step"`: constant macro step, Jacobi or Gauss-Seidel.
    FixedStep,
    /// `"ecco"`: energy-conservation-based step control (sadjina2016).
    Ecco,
    /// `"predictor-corrector"`: explicit predictor/corrector step control.
    PredictorCorrector,
    /// `"nepce"`: step control on the local input error (kyllingstad).
    Nepce,
    /// `"richardson"`: Richardson extrapolation with rollback (arnold2013).
    Richardson,
    /// `"ifosmondi"`: fixed-point iteration with Hermite inputs.
    Ifosmondi,
    /// `"iterative-affine"`: the same iteration with affine inputs
    /// (Kuebler-Schiehlen).
    IterativeAffine,
    /// `"strongly-coupled"`: every subsystem a Model Exchange FMU, all
    /// integrated as one ODE (the monolithic solution).
    StronglyCoupled,
}

impl MasterKind {
    /// Every kind, in the order of [`MasterKind::NAMES`].
    pub const ALL: [MasterKind; 8] = [
        MasterKind::FixedStep,
        MasterKind::Ecco,
        MasterKind::PredictorCorrector,
        MasterKind::Nepce,
        MasterKind::Richardson,
        MasterKind::Ifosmondi,
        MasterKind::IterativeAffine,
        MasterKind::StronglyCoupled,
    ];
    /// The names used in scenario files.
    pub const NAMES: [&'static str; 8] = [
        "fixed-step",
        "ecco",
        "predictor-corrector",
        "nepce",
        "richardson",
        "ifosmondi",
        "iterative-affine",
        "strongly-coupled",
    ];

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            MasterKind::FixedStep => "fixed-step",
            MasterKind::Ecco => "ecco",
            MasterKind::PredictorCorrector => "predictor-corrector",
            MasterKind::Nepce => "nepce",
            MasterKind::Richardson => "richardson",
            MasterKind::Ifosmondi => "ifosmondi",
            MasterKind::IterativeAffine => "iterative-affine",
            MasterKind::StronglyCoupled => "strongly-coupled",
        }
    }

    /// True for the masters that choose their own step size.
    pub fn is_adaptive(self) -> bool {
        !matches!(self, MasterKind::FixedStep | MasterKind::StronglyCoupled)
    }

    /// True for the masters whose step is chosen by the PI controller
    /// (`[master.controller]`): ECCO, predictor/corrector and NEPCE; the
    /// Richardson master uses its alpha, theta and dt bounds.
    pub fn uses_controller(self) -> bool {
        matches!(
            self,
            MasterKind::Ecco
                | MasterKind::PredictorCorrector
                | MasterKind::Nepce
                | MasterKind::Richardson
        )
    }

    /// The keys of `[master.controller]` this master uses: all of them
    /// for the PI-controlled masters, the step bounds and ratios for
    /// Richardson (its step comes from its own estimate, without PI gains),
    /// `dt_min` for the iterative masters (the floor of their halving),
    /// none for fixed step.
    pub fn controller_keys(self) -> &'static [&'static str] {
        match self {
            MasterKind::Ecco | MasterKind::PredictorCorrector | MasterKind::Nepce => &[
                "alpha",
                "dt_min",
                "dt_max",
                "theta_min",
                "theta_max",
                "k_i",
                "k_p",
                "variant",
            ],
            MasterKind::Richardson => &["alpha", "dt_min", "dt_max", "theta_min", "theta_max"],
            MasterKind::Ifosmondi | MasterKind::IterativeAffine => &["dt_min"],
            MasterKind::FixedStep | MasterKind::StronglyCoupled => &[],
        }
    }

    /// True for the iterative masters (IFOSMONDI and iterative-affine).
    pub fn is_iterative(self) -> bool {
        matches!(self, MasterKind::Ifosmondi | MasterKind::IterativeAffine)
    }
}

impl std::fmt::Display for MasterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How subsystems are stepped relative to each other (`[master] scheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Scheme {
    /// `"jacobi"`: all subsystems step in parallel on the previous outputs.
    Jacobi,
    /// `"gauss-seidel"`: subsystems step one after the other (in
    /// [`MasterSettings::order`]), each on the newest outputs.
    GaussSeidel,
}

/// An error indicator computed and logged alongside the master
/// (`[master] indicators`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Indicator {
    /// `"energy"`: ECCO residual energies of the power bonds.
    Energy,
    /// `"predictor-corrector"`: explicit predictor/corrector error.
    PredictorCorrector,
    /// `"nepce"`: local input error.
    Nepce,
}

impl Indicator {
    /// The names used in scenario files.
    pub const NAMES: [&'static str; 3] = ["energy", "predictor-corrector", "nepce"];
    /// Every indicator, in the order of [`Indicator::NAMES`].
    pub const ALL: [Indicator; 3] = [
        Indicator::Energy,
        Indicator::PredictorCorrector,
        Indicator::Nepce,
    ];
}

/// What a NaN or infinite output does (`[master] nonfinite`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum NonFinite {
    /// `"error"`: stop the run with an error.
    Error,
    /// `"warn"`: log a warning and go on.
    Warn,
}

/// Where a subsystem's FMU runs (`isolation`, per subsystem or as the
/// `[master]` default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Isolation {
    /// `"none"`: loaded into the `cosim` process.
    None,
    /// `"process"`: loaded by a child process (`cosim host`); a crash,
    /// abort, exit or hang of the FMU becomes an error of the run.
    Process,
}

impl Isolation {
    /// The names used in scenario files, in the order of [`Isolation::ALL`].
    pub const NAMES: [&'static str; 2] = ["none", "process"];
    /// Every value.
    pub const ALL: [Isolation; 2] = [Isolation::None, Isolation::Process];
}

/// Which interface of an FMU a subsystem runs (`interface`): where an FMU
/// declares both, the scenario picks one (default: Co-Simulation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum FmuInterface {
    /// `"co-simulation"`: the FMU steps itself (`fmi2DoStep` / `fmi3DoStep`).
    CoSimulation,
    /// `"model-exchange"`: the FMU gives derivatives and event indicators;
    /// an integrator of `cosim` advances it over each macro step.
    ModelExchange,
    /// `"scheduled-execution"`: FMI 3 Scheduled Execution (the default for
    /// an FMU that declares only that interface): its model partitions are
    /// activated as their Clocks tick.
    ScheduledExecution,
}

impl FmuInterface {
    /// The names used in scenario files, in the order of [`FmuInterface::ALL`].
    pub const NAMES: [&'static str; 3] = ["co-simulation", "model-exchange", "scheduled-execution"];
    /// Every value.
    pub const ALL: [FmuInterface; 3] = [
        FmuInterface::CoSimulation,
        FmuInterface::ModelExchange,
        FmuInterface::ScheduledExecution,
    ];

    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            FmuInterface::CoSimulation => Self::NAMES[0],
            FmuInterface::ModelExchange => Self::NAMES[1],
            FmuInterface::ScheduledExecution => Self::NAMES[2],
        }
    }
}

/// The integration method of a Model Exchange subsystem (`[subsystems.solver]
/// method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum SolverMethod {
    /// `"bdf"`: variable-order backward differentiation (stiff models).
    Bdf,
    /// `"rk45"`: an embedded explicit Runge-Kutta pair (non-stiff models).
    Rk45,
}

impl SolverMethod {
    /// The names used in scenario files, in the order of [`SolverMethod::ALL`].
    pub const NAMES: [&'static str; 2] = ["bdf", "rk45"];
    /// Every value.
    pub const ALL: [SolverMethod; 2] = [SolverMethod::Bdf, SolverMethod::Rk45];

    /// Its name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            SolverMethod::Bdf => Self::NAMES[0],
            SolverMethod::Rk45 => Self::NAMES[1],
        }
    }
}

/// `[subsystems.solver]` as written: each setting absent unless given (the
/// defaults come from the FMU's `DefaultExperiment` and the solver).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct SolverSpec {
    /// `method`.
    pub method: Option<SolverMethod>,
    /// `relative_tolerance`.
    pub relative_tolerance: Option<f64>,
    /// `absolute_tolerance`.
    pub absolute_tolerance: Option<f64>,
    /// `max_step`, s.
    pub max_step: Option<f64>,
    /// `max_order`.
    pub max_order: Option<u32>,
    /// `initial_step`, s.
    pub initial_step: Option<f64>,
}

pub use cosim_core::indicators::energy::EnergyReference;

/// Normalisation of the predictor/corrector error (`[master] normalisation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Normalisation {
    /// `"paper"`: sadjina2016 eq. 17, `|y - y_pred| / (TOL (1 + rho max(|y|, |y_pred|)))`.
    Paper,
    /// `"atol-rtol"`: `e / (atol + rtol |q|)`, then aggregated (kyllingstad sec. 2.4).
    AtolRtol,
}

/// How normalised errors of several quantities are combined (`[master] aggregate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Aggregate {
    /// `"rms"`: root mean square.
    Rms,
    /// `"mean"`: mean absolute value.
    Mean,
    /// `"max"`: largest absolute value.
    Max,
}

/// The Richardson error estimate (`[master] estimate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum RichardsonEstimate {
    /// `"richardson"`: arnold2013 eq. 24.
    Richardson,
    /// `"modified"`: the cheaper estimate of eq. 26.
    Modified,
}

/// The PI step controller (`[master.controller]`); defaults from
/// sadjina2016 Table I.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Controller {
    /// Safety factor alpha (default 0.8).
    pub alpha: f64,
    /// Smallest step in s (default 1e-4).
    pub dt_min: f64,
    /// Largest step in s (default 1e-2).
    pub dt_max: f64,
    /// Smallest ratio of consecutive steps (default 0.2).
    pub theta_min: f64,
    /// Largest ratio of consecutive steps (default 1.5).
    pub theta_max: f64,
    /// Integral gain; `None`: 0.3/p with p the indicator's order.
    pub k_i: Option<f64>,
    /// Proportional gain; `None`: 0.4/p.
    pub k_p: Option<f64>,
    /// Start, zero-indicator and rounding rules (`variant`).
    pub variant: PiVariant,
}

pub use cosim_core::controller::PiVariant;

impl Default for Controller {
    fn default() -> Self {
        Controller {
            alpha: 0.8,
            dt_min: 1e-4,
            dt_max: 1e-2,
            theta_min: 0.2,
            theta_max: 1.5,
            k_i: None,
            k_p: None,
            variant: PiVariant::Sadjina2016,
        }
    }
}

impl Controller {
    /// The gains (k_I, k_P) for an indicator of order `p` in dt: the
    /// overrides when given, else 0.3/p and 0.4/p.
    pub fn gains(&self, p: u32) -> (f64, f64) {
        let p = f64::from(p.max(1));
        (self.k_i.unwrap_or(0.3 / p), self.k_p.unwrap_or(0.4 / p))
    }
}

/// Everything `[master]` says, with defaults filled in.
///
/// The tolerances are kept for every master kind because the indicators
/// (`indicators`) can be computed alongside any master.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MasterSettings {
    /// The master.
    pub kind: MasterKind,
    /// Macro step (fixed step), initial step dt_0 (ECCO, predictor/corrector,
    /// NEPCE, Richardson) or base step (IFOSMONDI, iterative-affine), in s.
    pub step: f64,
    /// Jacobi or Gauss-Seidel.
    pub scheme: Scheme,
    /// Gauss-Seidel order as subsystem indices, a permutation of all
    /// subsystems, when `order` is given; `None`: the assembly derives it
    /// from the connection graph.
    pub order: Option<Vec<usize>>,
    /// Input extrapolation order m: 0 (zero-order hold), 1 or 2.
    pub extrapolation: u8,
    /// Worker threads for Jacobi stepping; 0 = all cores.
    pub threads: usize,
    /// Indicators computed and logged alongside the master (no duplicates).
    pub indicators: Vec<Indicator>,
    /// Whether power bonds are discovered automatically.
    pub discover_bonds: bool,
    /// What a NaN/Inf output does.
    pub nonfinite: NonFinite,
    /// Stop the run when an observed value exceeds this in magnitude (the
    /// co-simulation diverged); `None`: no limit.
    pub divergence_limit: Option<f64>,
    /// ECCO default relative tolerance r; predictor/corrector TOL.
    pub tolerance: f64,
    /// ECCO default energy scale E0 in J.
    pub energy_scale: f64,
    /// The energy level each bond's residual is measured against in the
    /// energy indicator: the bond's transmitted energy (sadjina2016) or the
    /// largest residual of the step (libcosim).
    pub energy_reference: EnergyReference,
    /// Predictor/corrector rho.
    pub rho: f64,
    /// Predictor/corrector normalisation.
    pub normalisation: Normalisation,
    /// Predictor/corrector: remove the lag of feed-through outputs with the
    /// FMUs' directional derivatives (`false`: the estimate as published).
    pub lag_correction: bool,
    /// Absolute tolerance of the atol/rtol normalisation.
    pub atol: f64,
    /// Relative tolerance of the atol/rtol normalisation.
    pub rtol: f64,
    /// Aggregation of normalised errors.
    pub aggregate: Aggregate,
    /// Richardson: rejections of one step before giving up.
    pub max_rejections: u32,
    /// Richardson: which estimate.
    pub estimate: RichardsonEstimate,
    /// IFOSMONDI / iterative-affine absolute convergence tolerance.
    pub eps_abs: f64,
    /// IFOSMONDI / iterative-affine relative convergence tolerance.
    pub eps_rel: f64,
    /// IFOSMONDI / iterative-affine iterations per step before halving it.
    pub max_iterations: u32,
    /// PI step controller.
    pub controller: Controller,
    /// `[master.solver]`: the integrator of a strongly coupled level.
    pub solver: Option<SolverSpec>,
    /// Default isolation of this level's FMU subsystems.
    pub isolation: Isolation,
    /// Default `isolation_timeout`: longest FMU call of an isolated
    /// subsystem, in s.
    pub isolation_timeout: f64,
    /// `isolation_hosts`: the most host processes the isolated FMUs of the
    /// run share (`None`: one per processor beyond the master's).
    pub isolation_hosts: Option<usize>,
    /// `step_timeout` as given (scenario or `--step-timeout`): longest FMU
    /// call in this process outside initialization, in s, after which the
    /// run ends without waiting for it; 0: no limit. `None`: not given,
    /// [`defaults::STEP_TIMEOUT`] ([`MasterSettings::call_timeouts`]).
    pub step_timeout: Option<f64>,
    /// `init_timeout` as given: the same for the calls of initialization
    /// (entering and leaving Initialization Mode, the values set there);
    /// `None`: [`defaults::INIT_TIMEOUT`].
    pub init_timeout: Option<f64>,
}

impl MasterSettings {
    /// The longest in-process FMU call, outside initialization and in it,
    /// with the defaults applied (`None`: no limit, given as 0).
    pub fn call_timeouts(&self) -> (Option<std::time::Duration>, Option<std::time::Duration>) {
        let limit = |given: Option<f64>, default: f64| {
            let s = given.unwrap_or(default);
            (s > 0.0).then(|| std::time::Duration::from_secs_f64(s))
        };
        (
            limit(self.step_timeout, defaults::STEP_TIMEOUT),
            limit(self.init_timeout, defaults::INIT_TIMEOUT),
        )
    }
}

/// Defaults of the keys of `[master]` that have one.
pub mod defaults {
    /// `tolerance`.
    pub const TOLERANCE: f64 = 1e-4;
    /// `energy_scale`.
    pub const ENERGY_SCALE: f64 = 1.0;
    /// `rho`.
    pub const RHO: f64 = 1e-4;
    /// `atol`.
    pub const ATOL: f64 = 1e-6;
    /// `rtol`.
    pub const RTOL: f64 = 1e-4;
    /// `max_rejections`.
    pub const MAX_REJECTIONS: u32 = 10;
    /// `eps_abs`.
    pub const EPS_ABS: f64 = 1e-3;
    /// `eps_rel`.
    pub const EPS_REL: f64 = 1e-3;
    /// `max_iterations`.
    pub const MAX_ITERATIONS: u32 = 10;
    /// `isolation_timeout`, s.
    pub const ISOLATION_TIMEOUT: f64 = 60.0;
    /// `step_timeout`, s: generous, far beyond any step of a working FMU
    /// one would wait for, so that a hung one does not hold a run forever.
    pub const STEP_TIMEOUT: f64 = 600.0;
    /// `init_timeout`, s: initialization of a big model may take long.
    pub const INIT_TIMEOUT: f64 = 3600.0;
    /// Largest accepted `threads`.
    pub const MAX_THREADS: i64 = 1024;
    /// Default output directory, relative to the scenario file; the
    /// scenario file's stem is appended (`out/<stem>`).
    pub const OUTPUT_DIR: &str = "out";
    /// `[outputs] trace`.
    pub const TRACE: &str = "trace.csv";
    /// `[outputs] energy_log`.
    pub const ENERGY_LOG: &str = "energy.csv";
    /// `[outputs] step_log`.
    pub const STEP_LOG: &str = "steps.csv";
    /// `[outputs] summary`.
    pub const SUMMARY: &str = "summary.json";
}

/// When trace rows are written (`[outputs] interval` / `decimation`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Sampling {
    /// After every macro step (the default).
    EveryStep,
    /// After every N-th macro step (`decimation = N`, N >= 1).
    Decimation(u64),
    /// Every `interval` seconds of simulated time.
    Interval(f64),
}

/// `[outputs]` with defaults filled in and paths made absolute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputSettings {
    /// The output directory (absolute; `--out` replaces it).
    pub dir: PathBuf,
    /// The trace CSV, or `None` when disabled.
    pub trace: Option<PathBuf>,
    /// The per-bond energy log, or `None`.
    pub energy_log: Option<PathBuf>,
    /// The per-step log (dt, indicator values), or `None`.
    pub step_log: Option<PathBuf>,
    /// The JSON summary, or `None`.
    pub summary: Option<PathBuf>,
    /// The traced variables of subsystems, ordered and without duplicates.
    pub variables: Vec<VariableRef>,
    /// Every traced value in trace order: the `variables`, and the
    /// function ports named in `[outputs] variables`.
    pub traced: Vec<Traced>,
    /// For each of `traced`: the name it is traced under when the scenario
    /// names it by an alias (FMI 3 `<Alias>`), else `None` (its own name).
    /// The same variable may be traced under several names.
    pub trace_names: Vec<Option<String>>,
    /// When rows are written.
    pub sampling: Sampling,
}
