//! The integrator for Model Exchange: advances `x' = f(t, x)` of a model the
//! integrator owns, between communication points, stopping at the first zero
//! crossing of the model's event indicators `g(t, x)`.
//!
//! Backed by diffsol (pure Rust): BDF for stiff models, Tsitouras 4(5) for the
//! rest; the choice and its measurement are in `docs/ode-solvers.md`.
//!
//! - `advance` never integrates past its end time (the model's inputs change
//!   there) and needs no reset there: the solver's history carries on.
//! - After every accepted internal step the model's `step_completed` is
//!   called and may stop `advance` (FMI's `completedIntegratorStep`).
//! - Root finding is this crate's own (`roots.rs`, CVODE's algorithm), so
//!   failing indicators are reported and every indicator that crossed is named.
//! - `snapshot` / `restore` keep the whole solver (BDF history, Jacobian,
//!   step-size controller), so a restored run repeats the original bit for bit.
//! - Statistics add up over the whole run, through resets and restores.

mod equations;
mod roots;

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;
use std::sync::{Arc, Weak};

use diffsol::{
    Bdf, BdfState, DiffsolError, ExplicitRk, NalgebraLU, OdeBuilder, OdeSolverMethod,
    OdeSolverProblem, OdeSolverState, OdeSolverStopReason, RkState, Vector,
};

use equations::{Model, Shared, V, slice, slice_mut};
use roots::Roots;

/// The integration method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Variable-order BDF (orders 1 to 5, NDF coefficients), Newton with a
    /// dense LU: stiff models.
    Bdf,
    /// Embedded explicit Runge-Kutta, Tsitouras 4(5): non-stiff models.
    Rk45,
}

/// Solver settings, as `[subsystems.solver]` names them.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub method: Method,
    pub relative_tolerance: f64,
    /// The absolute tolerance of every state, unless `state_absolute_tolerances`.
    pub absolute_tolerance: f64,
    /// One absolute tolerance per state (FMI: the tolerance times each
    /// state's nominal), where given; `absolute_tolerance` is then their
    /// smallest, for what takes one value (the first step, the floor of
    /// difference quotients).
    pub state_absolute_tolerances: Option<Vec<f64>>,
    /// Longest internal step.
    pub max_step: Option<f64>,
    /// Highest BDF order: diffsol's BDF always goes up to 5, so only 5 (or
    /// more) is accepted for BDF; ignored by Rk45.
    pub max_order: Option<usize>,
    /// First step after each reset; estimated from the derivatives otherwise.
    pub initial_step: Option<f64>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            method: Method::Bdf,
            relative_tolerance: 1e-4,
            absolute_tolerance: 1e-8,
            state_absolute_tolerances: None,
            max_step: None,
            max_order: None,
            initial_step: None,
        }
    }
}

/// What the model asks after an accepted internal step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepAction {
    Continue,
    /// End `advance` here (FMI: `enterEventMode` from `completedIntegratorStep`).
    Stop,
}

/// The model the integrator calls; `&mut self` because an FMU is called
/// through mutable state. It is called with arbitrary `(t, x)` inside a step
/// (Newton iterations, difference quotients, root finding), so each call must
/// set the time and states it is given.
pub trait OdeProblem {
    type Error;
    /// Number of continuous states.
    fn dimension(&self) -> usize;
    /// Number of event indicators.
    fn roots(&self) -> usize;
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), Self::Error>;
    fn root_functions(&mut self, t: f64, x: &[f64], g: &mut [f64]) -> Result<(), Self::Error>;
    /// The dense Jacobian `df/dx`, column-major `n x n` (FMI: directional
    /// derivatives). `None`: forward differences, `n + 1` evaluations of `rhs`.
    fn jacobian(
        &mut self,
        _t: f64,
        _x: &[f64],
        _jac: &mut [f64],
    ) -> Option<Result<(), Self::Error>> {
        None
    }
    /// After each accepted internal step, at its end `(t, x)` (not after a
    /// step that ends at a root: `advance` returns the root instead).
    fn step_completed(&mut self, _t: f64, _x: &[f64]) -> Result<StepAction, Self::Error> {
        Ok(StepAction::Continue)
    }
}

/// The model, borrowed from the integrator (`Integrator::problem`).
pub struct ProblemRef<'a, P: OdeProblem>(MutexGuard<'a, Shared<P>>);

impl<P: OdeProblem> Deref for ProblemRef<'_, P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.0.model
    }
}

/// The model, borrowed mutably from the integrator (`Integrator::problem_mut`).
pub struct ProblemMut<'a, P: OdeProblem>(MutexGuard<'a, Shared<P>>);

impl<P: OdeProblem> Deref for ProblemMut<'_, P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.0.model
    }
}

impl<P: OdeProblem> DerefMut for ProblemMut<'_, P> {
    fn deref_mut(&mut self) -> &mut P {
        &mut self.0.model
    }
}

/// Where `advance` stopped; the state there is `Integrator::state`.
#[derive(Clone, Debug, PartialEq)]
pub enum Advance {
    /// At the end time.
    Reached,
    /// At the first zero crossing: `t` is the end of the located bracket (the
    /// indicators have crossed there), `which[i]` is +1 for indicator `i`
    /// rising through zero, -1 falling, 0 not crossed.
    Root { t: f64, which: Vec<i8> },
    /// `step_completed` asked to stop, at the end of that step.
    Stopped { t: f64 },
}

/// Counts over the whole run: resets and restores do not clear them (the
/// work of a step taken back was still done).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Accepted internal steps.
    pub steps: u64,
    /// Attempts rejected by the error test or by a Newton failure.
    pub rejected_steps: u64,
    /// Calls of `rhs` (difference-quotient Jacobians included).
    pub rhs_evaluations: u64,
    /// Jacobian evaluations (the model's or by differences).
    pub jacobian_evaluations: u64,
    /// Calls of `root_functions`.
    pub root_function_evaluations: u64,
    /// Of those, the ones inside a bracket being narrowed.
    pub root_finding_iterations: u64,
    /// Zero crossings returned.
    pub roots_found: u64,
    /// `reset` calls.
    pub resets: u64,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SettingsError {
    #[error("the relative tolerance must be positive and finite, not {0}")]
    RelativeTolerance(f64),
    #[error("the absolute tolerance must be positive and finite, not {0}")]
    AbsoluteTolerance(f64),
    #[error("the maximum step must be positive, not {0}")]
    MaxStep(f64),
    #[error("the initial step must be positive, not {0}")]
    InitialStep(f64),
    #[error(
        "the BDF solver (diffsol) always uses orders up to 5: a maximum order of {0} cannot be honoured"
    )]
    MaxOrder(usize),
    #[error("the solver could not be set up: {0}")]
    Solver(String),
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SolveError<E> {
    /// The model's error, from `rhs`, `root_functions`, `jacobian` or
    /// `step_completed`; the integrator needs a `reset` or `restore` after it.
    #[error("the model failed at t = {t}")]
    Model { t: f64, error: E },
    /// The solver gave up (step size too small, too many failures); the
    /// integrator needs a `reset` or `restore` after it.
    #[error("the solver failed at t = {t}: {message}")]
    Solver { t: f64, message: String },
    #[error("the integrator has not been reset to an initial state")]
    NotStarted,
    #[error("an earlier error stopped the integrator: reset or restore it first")]
    Failed,
    #[error("cannot integrate back from t = {t} to {t_end}")]
    Backwards { t: f64, t_end: f64 },
    #[error("the state has {found} elements, the model {expected}")]
    Dimension { expected: usize, found: usize },
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InterpolateError {
    #[error("t = {t} is outside the last step [{from}, {to}]")]
    OutsideStep { t: f64, from: f64, to: f64 },
    #[error("the buffer has {found} elements, the model {expected}")]
    Dimension { expected: usize, found: usize },
    #[error("the integrator has not been reset to an initial state")]
    NotStarted,
    #[error("interpolation failed: {0}")]
    Solver(String),
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RestoreError {
    #[error("the snapshot was taken from another integrator")]
    Foreign,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    NotStarted,
    Running,
    Failed,
}

/// The whole integrator state at one point, for rollback. The solver itself
/// (history, Jacobian, controller) stays inside the integrator that took it,
/// held while the snapshot (or a clone of it) lives.
#[derive(Clone, Debug)]
pub struct Snapshot {
    token: Arc<()>,
    t: f64,
    step_start: f64,
    x: Vec<f64>,
    g_prev: Vec<f64>,
    status: Status,
}

impl Snapshot {
    pub fn time(&self) -> f64 {
        self.t
    }
    pub fn state(&self) -> &[f64] {
        &self.x
    }
}

type BdfSolver<'a, P> = Bdf<'a, Model<P>, NalgebraLU<f64>>;
type RkSolver<'a, P> = ExplicitRk<'a, Model<P>>;

enum Solver<'a, P: OdeProblem + 'static> {
    Bdf(Box<BdfSolver<'a, P>>),
    Rk(Box<RkSolver<'a, P>>),
}

impl<P: OdeProblem + 'static> Clone for Solver<'_, P> {
    fn clone(&self) -> Self {
        match self {
            Solver::Bdf(s) => Solver::Bdf(s.clone()),
            Solver::Rk(s) => Solver::Rk(s.clone()),
        }
    }
}

/// Each arm calls the same `OdeSolverMethod` method.
macro_rules! both {
    ($solver:expr, $s:ident => $e:expr) => {
        match $solver {
            Solver::Bdf($s) => $e,
            Solver::Rk($s) => $e,
        }
    };
}

impl<P: OdeProblem + 'static> Solver<'_, P> {
    fn t(&self) -> f64 {
        both!(self, s => s.state().t)
    }
    fn y(&self) -> &V {
        both!(self, s => s.state().y)
    }
    fn h(&self) -> f64 {
        both!(self, s => s.state().h)
    }
    fn step(&mut self) -> Result<OdeSolverStopReason<f64>, DiffsolError> {
        both!(self, s => s.step())
    }
    fn set_h(&mut self, h: f64) {
        both!(self, s => *s.state_mut().h = h)
    }
    fn set_stop_time(&mut self, t: f64) -> Result<(), DiffsolError> {
        both!(self, s => s.set_stop_time(t))
    }
    fn interpolate(&self, t: f64, y: &mut V) -> Result<(), DiffsolError> {
        both!(self, s => s.interpolate_inplace(t, y))
    }
    fn move_back(&mut self, t: f64) -> Result<(), DiffsolError> {
        both!(self, s => s.state_mut_back(t))
    }
    /// (accepted steps, rejected attempts) so far by this solver object.
    fn counts(&self) -> (u64, u64) {
        let st = both!(self, s => s.get_statistics());
        (
            st.number_of_steps as u64,
            (st.number_of_error_test_failures + st.number_of_nonlinear_solver_fails) as u64,
        )
    }
}

struct Solvers<'a, P: OdeProblem + 'static> {
    live: Option<Solver<'a, P>>,
    /// Solver copies held for snapshots, dropped once their snapshot is.
    saved: Vec<(Weak<()>, Solver<'a, P>)>,
}

/// diffsol's solvers borrow their problem: the two live together here.
#[ouroboros::self_referencing]
struct Core<P: OdeProblem + 'static> {
    problem: OdeSolverProblem<Model<P>>,
    #[borrows(problem)]
    #[not_covariant]
    solvers: Solvers<'this, P>,
}

/// The integrator; owns the model (`problem`, `problem_mut`).
pub struct Integrator<P: OdeProblem + 'static> {
    core: Core<P>,
    settings: Settings,
    n: usize,
    t: f64,
    /// Where the last internal step started: `interpolate`'s lower bound.
    step_start: f64,
    x: Vec<f64>,
    roots: Roots,
    status: Status,
    /// Statistics of solver objects replaced by resets and restores, plus
    /// this crate's own counts.
    base: Statistics,
    /// The live solver's (steps, rejected) when it became live.
    offset: (u64, u64),
    /// diffsol's vector for the interpolations; in a cell so that
    /// `interpolate` takes `&self`.
    buffer: RefCell<V>,
}

impl<P: OdeProblem + 'static> Integrator<P> {
    /// An integrator for `problem`, not started: `reset` gives it its
    /// initial time and state.
    pub fn new(settings: Settings, problem: P) -> Result<Self, SettingsError> {
        let s = &settings;
        if !(s.relative_tolerance > 0.0 && s.relative_tolerance.is_finite()) {
            return Err(SettingsError::RelativeTolerance(s.relative_tolerance));
        }
        if !(s.absolute_tolerance > 0.0 && s.absolute_tolerance.is_finite()) {
            return Err(SettingsError::AbsoluteTolerance(s.absolute_tolerance));
        }
        if let Some(a) = &s.state_absolute_tolerances {
            if a.len() != problem.dimension() {
                return Err(SettingsError::Solver(format!(
                    "{} absolute tolerances for {} states",
                    a.len(),
                    problem.dimension()
                )));
            }
            if let Some(&x) = a.iter().find(|x| !(**x > 0.0 && x.is_finite())) {
                return Err(SettingsError::AbsoluteTolerance(x));
            }
        }
        if let Some(h) = s.max_step.filter(|h| h.is_nan() || *h <= 0.0) {
            return Err(SettingsError::MaxStep(h));
        }
        if let Some(h) = s.initial_step.filter(|h| h.is_nan() || *h <= 0.0) {
            return Err(SettingsError::InitialStep(h));
        }
        if let (Method::Bdf, Some(k)) = (s.method, s.max_order)
            && k < 5
        {
            return Err(SettingsError::MaxOrder(k));
        }
        let n = problem.dimension();
        let n_roots = problem.roots();
        let fd_floor = (s.absolute_tolerance / s.relative_tolerance).min(1.0);
        let model = Model::new(Shared::new(problem, n, fd_floor), n);
        let mut ode = OdeBuilder::<equations::M>::new()
            .rtol(s.relative_tolerance)
            .atol(match &s.state_absolute_tolerances {
                // (diffsol takes one value for all states, or one each.)
                Some(a) if !a.is_empty() => a.clone(),
                _ => vec![s.absolute_tolerance],
            })
            .build_from_eqn(model)
            .map_err(|e| SettingsError::Solver(e.to_string()))?;
        // diffsol compares its Newton failure limit with the failures of the
        // whole run, not of one step: a long stiff run would hit it. Steps
        // still end when they shrink below the minimum step.
        ode.ode_options.max_nonlinear_solver_failures = usize::MAX;
        let core = Core::new(ode, |_| Solvers {
            live: None,
            saved: Vec::new(),
        });
        Ok(Self {
            core,
            settings,
            n,
            t: 0.0,
            step_start: 0.0,
            x: vec![0.0; n],
            roots: Roots::new(n_roots),
            status: Status::NotStarted,
            base: Statistics::default(),
            offset: (0, 0),
            buffer: RefCell::new(V::zeros(n, Default::default())),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The model.
    pub fn problem(&self) -> ProblemRef<'_, P> {
        ProblemRef(self.core.borrow_problem().eqn.shared())
    }

    /// The model, to change between calls (inputs, event handling).
    pub fn problem_mut(&mut self) -> ProblemMut<'_, P> {
        ProblemMut(self.core.borrow_problem().eqn.shared())
    }

    pub fn time(&self) -> f64 {
        self.t
    }

    /// `x` at `time()`.
    pub fn state(&self) -> &[f64] {
        &self.x
    }

    /// The event indicators at `time()` (after a root: where they crossed).
    pub fn indicators(&self) -> &[f64] {
        &self.roots.g_prev
    }

    pub fn statistics(&self) -> Statistics {
        let mut st = self.base;
        let (steps, rejected) = self
            .core
            .with_solvers(|s| s.live.as_ref().map_or((0, 0), |l| l.counts()));
        st.steps += steps - self.offset.0;
        st.rejected_steps += rejected - self.offset.1;
        let shared = self.core.borrow_problem().eqn.shared();
        st.rhs_evaluations = shared.rhs_evaluations;
        st.jacobian_evaluations = shared.jacobian_evaluations;
        st
    }

    /// (Re)starts at `t0` from `x0`: at the start, or after an event that
    /// changed the states or their nominals. The BDF history starts over.
    pub fn reset(&mut self, t0: f64, x0: &[f64]) -> Result<(), SolveError<P::Error>> {
        if x0.len() != self.n {
            return Err(SolveError::Dimension {
                expected: self.n,
                found: x0.len(),
            });
        }
        self.status = Status::Failed;
        let settings = &self.settings;
        let roots = &mut self.roots;
        let base = &mut self.base;
        let offset = &mut self.offset;
        self.core
            .with_mut(|f| -> Result<(), SolveError<P::Error>> {
                let eqn = &f.problem.eqn;
                let model_error = |t| {
                    let mut shared = eqn.shared();
                    shared
                        .error
                        .take()
                        .map(|error| SolveError::Model { t, error })
                };
                let mut dy = vec![0.0; x0.len()];
                {
                    let mut shared = eqn.shared();
                    shared.error = None;
                    shared.x0.copy_from_slice(x0);
                    shared.live = true;
                    shared.rhs(t0, x0, &mut dy);
                }
                if let Some(e) = model_error(t0) {
                    return Err(e);
                }
                let h = match settings.initial_step {
                    Some(h) => h,
                    None => initial_step(settings, x0, &dy),
                };
                let h = settings.max_step.map_or(h, |m| h.min(m));
                let solver_error = |e: DiffsolError| SolveError::Solver {
                    t: t0,
                    message: e.to_string(),
                };
                // The state is built at the problem's placeholder time with the
                // model switched off, then moved to (t0, x0).
                eqn.shared().live = false;
                let solver = match settings.method {
                    Method::Bdf => {
                        let state = BdfState::new_without_initialise(f.problem);
                        eqn.shared().live = true;
                        let mut state = state.map_err(solver_error)?;
                        place(&mut state, t0, &dy, h);
                        let mut s = f
                            .problem
                            .bdf_solver::<NalgebraLU<f64>>(state)
                            .map_err(solver_error)?;
                        s.config_mut().maximum_newton_fails = usize::MAX;
                        Solver::Bdf(Box::new(s))
                    }
                    Method::Rk45 => {
                        let state = RkState::new_without_initialise(f.problem);
                        eqn.shared().live = true;
                        let mut state = state.map_err(solver_error)?;
                        place(&mut state, t0, &dy, h);
                        Solver::Rk(Box::new(
                            f.problem.tsit45_solver(state).map_err(solver_error)?,
                        ))
                    }
                };
                if let Some(e) = model_error(t0) {
                    return Err(e);
                }
                if let Some(old) = f.solvers.live.as_ref() {
                    let (steps, rejected) = old.counts();
                    base.steps += steps - offset.0;
                    base.rejected_steps += rejected - offset.1;
                }
                *offset = solver.counts();
                f.solvers.live = Some(solver);
                if !roots.g_prev.is_empty() {
                    base.root_function_evaluations += 1;
                    let mut shared = eqn.shared();
                    if let Err(error) = shared.model.root_functions(t0, x0, &mut roots.g_prev) {
                        return Err(SolveError::Model { t: t0, error });
                    }
                }
                Ok(())
            })?;
        self.t = t0;
        self.step_start = t0;
        self.x.copy_from_slice(x0);
        self.base.resets += 1;
        self.status = Status::Running;
        Ok(())
    }

    /// Integrates towards `t_end`, never past it, and stops early at the
    /// first zero crossing of an indicator or where `step_completed` asks.
    pub fn advance(&mut self, t_end: f64) -> Result<Advance, SolveError<P::Error>> {
        self.advance_until(t_end, None)
    }

    /// Integrates until `time()` reaches `t_end` or passes it, with the
    /// steps the tolerance allows (none cut short at `t_end`: the state
    /// there is `interpolate(t_end)`), never past `stop`; stops early at
    /// the first zero crossing of an indicator (which may lie past `t_end`)
    /// or where `step_completed` asks; a `stop` before `t_end` is reached
    /// exactly, as `advance` reaches its end. At a crossing the solver stays at
    /// the end of the step that crossed (`time()`), the crossing at the
    /// `t` of [`Advance::Root`], and any point of that step can be
    /// interpolated: the caller restarts it there (`reset`). For a model whose right-hand side
    /// does not change at `t_end` (no inputs set there): CVODE's normal
    /// mode, without the cost of landing on every output point.
    pub fn advance_over(
        &mut self,
        t_end: f64,
        stop: Option<f64>,
    ) -> Result<Advance, SolveError<P::Error>> {
        match stop {
            // A hard stop first: landed on, as `advance` does.
            Some(stop) if stop <= t_end => self.advance_until(stop, None),
            _ => self.advance_until(t_end, Some(stop.unwrap_or(f64::INFINITY))),
        }
    }

    fn advance_until(
        &mut self,
        t_end: f64,
        over: Option<f64>,
    ) -> Result<Advance, SolveError<P::Error>> {
        match self.status {
            Status::NotStarted => return Err(SolveError::NotStarted),
            Status::Failed => return Err(SolveError::Failed),
            Status::Running => {}
        }
        if t_end.is_nan() || t_end < self.t {
            return Err(SolveError::Backwards { t: self.t, t_end });
        }
        if t_end == self.t || (over.is_some() && self.t >= t_end) {
            return Ok(Advance::Reached);
        }
        let mut work = Work {
            t: &mut self.t,
            step_start: &mut self.step_start,
            x: &mut self.x,
            roots: &mut self.roots,
            base: &mut self.base,
            buffer: self.buffer.get_mut(),
            max_step: self.settings.max_step,
        };
        let outcome = self.core.with_mut(|f| match f.solvers.live.as_mut() {
            Some(solver) => work.run(&f.problem.eqn, solver, t_end, over),
            None => Err(SolveError::NotStarted),
        });
        if matches!(
            outcome,
            Err(SolveError::Model { .. } | SolveError::Solver { .. })
        ) {
            self.status = Status::Failed;
        }
        outcome
    }

    /// Dense output inside the last internal step, `[start, time()]`.
    pub fn interpolate(&self, t: f64, x: &mut [f64]) -> Result<(), InterpolateError> {
        if x.len() != self.n {
            return Err(InterpolateError::Dimension {
                expected: self.n,
                found: x.len(),
            });
        }
        if self.status == Status::NotStarted {
            return Err(InterpolateError::NotStarted);
        }
        if t == self.t {
            x.copy_from_slice(&self.x);
            return Ok(());
        }
        if !(t >= self.step_start && t <= self.t) {
            return Err(InterpolateError::OutsideStep {
                t,
                from: self.step_start,
                to: self.t,
            });
        }
        let mut buffer = self
            .buffer
            .try_borrow_mut()
            .map_err(|e| InterpolateError::Solver(e.to_string()))?;
        self.core.with_solvers(|s| match s.live.as_ref() {
            Some(solver) => solver
                .interpolate(t, &mut buffer)
                .map_err(|e| InterpolateError::Solver(e.to_string())),
            None => Err(InterpolateError::NotStarted),
        })?;
        x.copy_from_slice(slice(&buffer));
        Ok(())
    }

    /// The whole state at `time()`, for `restore`: a copy of the solver is
    /// held until the snapshot and its clones are dropped.
    ///
    /// A copy of diffsol's BDF solver starts its Newton iteration afresh (a
    /// new LU of the iteration matrix), so the live solver is replaced by a
    /// copy too: the run after the snapshot and the run after a restore then
    /// start alike and repeat each other bit for bit.
    pub fn snapshot(&mut self) -> Snapshot {
        let token = Arc::new(());
        let weak = Arc::downgrade(&token);
        let (base, offset) = (&mut self.base, &mut self.offset);
        self.core.with_solvers_mut(|s| {
            s.saved.retain(|(w, _)| w.strong_count() > 0);
            if let Some(live) = s.live.as_mut() {
                let copy = live.clone();
                let (steps, rejected) = live.counts();
                base.steps += steps - offset.0;
                base.rejected_steps += rejected - offset.1;
                *offset = copy.counts();
                s.saved.push((weak, copy.clone()));
                *live = copy;
            }
        });
        Snapshot {
            token,
            t: self.t,
            step_start: self.step_start,
            x: self.x.clone(),
            g_prev: self.roots.g_prev.clone(),
            status: self.status,
        }
    }

    /// Back to `snapshot`'s point, solver history included; the same calls
    /// after it repeat the same results bit for bit.
    pub fn restore(&mut self, snapshot: &Snapshot) -> Result<(), RestoreError> {
        let current = self.statistics();
        let restored = self.core.with_solvers_mut(|s| {
            let copy = s
                .saved
                .iter()
                .find(|(w, _)| {
                    w.upgrade()
                        .is_some_and(|a| Arc::ptr_eq(&a, &snapshot.token))
                })
                .map(|(_, solver)| solver.clone());
            match (copy, snapshot.status) {
                (Some(solver), _) => {
                    let counts = solver.counts();
                    s.live = Some(solver);
                    Ok(counts)
                }
                // taken before any reset: nothing was copied
                (None, Status::NotStarted) => {
                    s.live = None;
                    Ok((0, 0))
                }
                (None, _) => Err(RestoreError::Foreign),
            }
        })?;
        self.base = current;
        self.offset = restored;
        // (rhs and Jacobian counts are read live from the model's counters)
        self.t = snapshot.t;
        self.step_start = snapshot.step_start;
        self.x.copy_from_slice(&snapshot.x);
        self.roots.g_prev.copy_from_slice(&snapshot.g_prev);
        self.status = snapshot.status;
        Ok(())
    }
}

/// Sets a freshly built state's time, derivative and step.
fn place<S: OdeSolverState<V>>(state: &mut S, t0: f64, dy: &[f64], h: f64) {
    let s = state.as_mut();
    *s.t = t0;
    slice_mut(s.dy).copy_from_slice(dy);
    *s.h = h;
}

/// The first half of Hairer, Norsett and Wanner's starting step: `0.01 *
/// |x0| / |f(t0, x0)|` in the error norm. Their second half evaluates `f` at
/// a trial point that may lie past the next communication point, where the
/// model's inputs are not known yet; the error test corrects a poor guess.
fn initial_step(settings: &Settings, x0: &[f64], f0: &[f64]) -> f64 {
    let (rtol, atol) = (settings.relative_tolerance, settings.absolute_tolerance);
    let norm = |v: &[f64]| {
        let sum = v.iter().zip(x0).fold(0.0, |s, (vi, yi)| {
            let w = vi / (atol + rtol * yi.abs());
            s + w * w
        });
        (sum / v.len().max(1) as f64).sqrt()
    };
    let (d0, d1) = (norm(x0), norm(f0));
    if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    }
}

/// `advance`'s view of the integrator's fields.
struct Work<'w> {
    t: &'w mut f64,
    step_start: &'w mut f64,
    x: &'w mut Vec<f64>,
    roots: &'w mut Roots,
    base: &'w mut Statistics,
    buffer: &'w mut V,
    max_step: Option<f64>,
}

impl Work<'_> {
    /// Steps to `t_end`; with `over`, past it up to that hard stop
    /// (`advance_over`).
    fn run<P: OdeProblem + 'static>(
        &mut self,
        eqn: &Model<P>,
        solver: &mut Solver<'_, P>,
        t_end: f64,
        over: Option<f64>,
    ) -> Result<Advance, SolveError<P::Error>> {
        let model_error = |t: f64| {
            eqn.shared()
                .error
                .take()
                .map(|error| SolveError::Model { t, error })
        };
        loop {
            let t = solver.t();
            // diffsol's own notion of "at the stop time" (its set_stop_time
            // refuses a stop within this of the current time)
            // Stop times. diffsol reaches one by cutting the step that would
            // pass it; a cut restarts its count of steps before the order or
            // the step may grow, and its time then only matches the stop to
            // its rounding tolerance (that drift would make the next
            // communication point need a sliver of a step, which it cannot
            // grow out of). So: a step that ends within `tol` of the target
            // is taken as it is and ends the interval (the state is reported
            // at the target); only a step that would pass the target is cut
            // to it. (Evening out the last steps before the target, to avoid
            // a short last step, made diffsol's step size collapse: left
            // undone, see docs/ode-solvers.md.)
            let h = solver.h();
            let tol = (100.0 * f64::EPSILON * (t.abs() + h.abs())).max(1e-9 * h.abs());
            if t_end - t <= tol {
                *self.t = t_end;
                return Ok(Advance::Reached);
            }
            // (Past `t_end`: only the hard stop, or the longest step, cuts.)
            let limit = over.unwrap_or(t_end);
            let target = match self.max_step {
                Some(m) if t + m < limit - tol => t + m,
                _ => limit,
            };
            let remaining = target - t;
            let (stop, lands) = if (h - remaining).abs() <= tol && t + h <= target {
                (t + h, true)
            } else if h > remaining - tol {
                (target, true)
            } else {
                (target, false)
            };
            let solver_error = |t: f64, e: DiffsolError| SolveError::Solver {
                t,
                message: e.to_string(),
            };
            if h <= 0.0 {
                // diffsol reached the last stop a rounding error past it and
                // left a negative sliver as its next step, which it then
                // refuses any later stop with (seen: t = 2.156 + 4.8e-14,
                // h = -4.8e-14). Its state edited with a forward step (a
                // first-order restart, only in this case).
                solver.set_h(remaining);
            }
            if stop.is_finite() {
                solver.set_stop_time(stop).map_err(|e| solver_error(t, e))?;
            }
            let reason = solver.step();
            if let Some(e) = model_error(solver.t()) {
                return Err(e);
            }
            let reason = reason.map_err(|e| solver_error(solver.t(), e))?;
            let t_new = solver.t();
            self.x.copy_from_slice(slice(solver.y()));
            if !self.roots.g_prev.is_empty() {
                self.base.root_function_evaluations += 1;
                let evaluated =
                    eqn.shared()
                        .model
                        .root_functions(t_new, self.x, &mut self.roots.g_hi);
                if let Err(error) = evaluated {
                    return Err(SolveError::Model { t: t_new, error });
                }
                let buffer = &mut *self.buffer;
                let base = &mut *self.base;
                let mut iterations = 0;
                let found = self.roots.locate(t, t_new, &mut iterations, |tm, g| {
                    solver
                        .interpolate(tm, buffer)
                        .map_err(|e| solver_error(tm, e))?;
                    eqn.shared()
                        .model
                        .root_functions(tm, slice(buffer), g)
                        .map_err(|error| SolveError::Model { t: tm, error })
                });
                base.root_function_evaluations += iterations;
                base.root_finding_iterations += iterations;
                if let Some(t_root) = found? {
                    if over.is_some() {
                        // The solver stays at the end of the step, so that
                        // any point of it can be interpolated (the caller
                        // restarts it at the crossing; diffsol interpolates
                        // no more once moved back).
                        self.roots.g_prev.copy_from_slice(&self.roots.g_hi);
                        self.base.roots_found += 1;
                        *self.step_start = t;
                        *self.t = t_new;
                        return Ok(Advance::Root {
                            t: t_root,
                            which: self.roots.which.clone(),
                        });
                    }
                    if t_root < t_new {
                        solver
                            .move_back(t_root)
                            .map_err(|e| solver_error(t_root, e))?;
                        self.x.copy_from_slice(slice(solver.y()));
                    }
                    self.roots.g_prev.copy_from_slice(&self.roots.g_hi);
                    self.base.roots_found += 1;
                    *self.step_start = t;
                    *self.t = t_root;
                    return Ok(Advance::Root {
                        t: t_root,
                        which: self.roots.which.clone(),
                    });
                }
                self.roots.g_prev.copy_from_slice(&self.roots.g_hi);
            }
            *self.step_start = t;
            *self.t = t_new;
            let action = eqn.shared().model.step_completed(t_new, self.x);
            match action {
                Ok(StepAction::Stop) => return Ok(Advance::Stopped { t: t_new }),
                Ok(StepAction::Continue) => {}
                Err(error) => return Err(SolveError::Model { t: t_new, error }),
            }
            if over.is_some() {
                if t_new >= t_end - tol {
                    *self.t = t_new.max(t_end);
                    return Ok(Advance::Reached);
                }
            } else if reason == OdeSolverStopReason::TstopReached && lands && target == t_end {
                *self.t = t_end;
                return Ok(Advance::Reached);
            }
        }
    }
}
