//! A coupled system: subsystems, their slot buffers, the compiled
//! connection routing, the power bonds, and the step primitives every
//! master is built from.
//!
//! Routing is compiled once into flat index arrays; exchanging values is a
//! loop over those arrays with no lookup, allocation or formatting. Each
//! subsystem owns its buffers so that Jacobi stepping can run on worker
//! threads without sharing anything mutable.

use std::sync::Arc;
use std::time::Instant;

use cosim_fmi::{BoundStep, StepOutcome};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{CoreError, Result};
use crate::extrapolation::MAX_POINTS;
use crate::function::{FunctionLink, FunctionSpec, Functions};
use crate::observer::{AfterStep, ObservedValues};
use crate::parallel::{PoolChooser, Way};
use crate::placement::{PoolPlacement, current_cpu};
use crate::subsystem::{
    AnyVersion, BindHeld, CallCounters, Fmi2Only, Fmi3Only, HeldFmu, StateId, Subsystem,
};
use crate::time::TimeBase;

mod events;
mod hosted_run;
pub use events::EventsHandled;

/// A connection between an observed output slot and an input slot:
/// `u = gain * y + offset`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Connection {
    /// Source subsystem.
    pub from_subsystem: usize,
    /// Source observed slot (must be an output slot).
    pub from_slot: usize,
    /// Destination subsystem.
    pub to_subsystem: usize,
    /// Destination input slot.
    pub to_slot: usize,
    /// Linear map gain.
    pub gain: f64,
    /// Linear map offset.
    pub offset: f64,
    /// A signal connection: excluded from error estimation.
    pub signal: bool,
}

/// One side of a power bond: an (input, output) pair of one subsystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BondPort {
    /// The subsystem.
    pub subsystem: usize,
    /// Its input slot in the bond.
    pub input: usize,
    /// Its output (observed) slot in the bond.
    pub output: usize,
}

/// A power bond between two subsystems (sadjina2016 sec. II).
///
/// The ports are cross-connected: port 0's output feeds port 1's input with
/// gain `L10`, port 1's output feeds port 0's input with gain `L01`.
/// Port 0 is the one whose input is the effort (force, torque, pressure,
/// voltage), taken to act on subsystem 0, so that `u0 y0` is the power
/// flowing into subsystem 0.
///
/// Residual power: `dP = u0 y0 + c u1 y1` with the orientation
/// `c = -L01 / L10`. It vanishes for an exact, energy-conserving coupling
/// whatever sign convention subsystem 1 uses, and `dP > 0` means the
/// coupling created energy (the sign of sadjina2016 footnote 20; its eq. 10a
/// writes `-(u1 y1 + u2 y2)` for ports whose `u y` is the power flowing out).
/// Power transmitted from subsystem 0 to subsystem 1, from outputs only:
/// `P01 = -L01 y0 y1` (eq. 6 with this orientation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerBond {
    /// Name for logs and headers.
    pub name: String,
    /// The two ports.
    pub ports: [BondPort; 2],
    /// `c` in `dP = u0 y0 + c u1 y1`.
    pub orientation: f64,
    /// `sigma` in `P01 = sigma y0 y1` (`-L01`).
    pub sigma: f64,
    /// Relative tolerance `r_k` of the ECCO indicator (eq. 14).
    pub tolerance: f64,
    /// Energy scale `E0_k` of the ECCO indicator (eq. 14).
    pub energy_scale: f64,
}

/// What to do with a NaN or infinite output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum NonFinitePolicy {
    /// Stop the run (default).
    #[default]
    Error,
    /// Log a warning once per variable and go on.
    Warn,
}

#[derive(Debug, Clone, Copy)]
struct Route {
    src_sub: usize,
    src_slot: usize,
    dst_sub: usize,
    dst_slot: usize,
    gain: f64,
    offset: f64,
}

/// The value buffers of one subsystem. Masters read and write them between
/// step primitives; the primitives never allocate.
#[derive(Debug, Clone)]
pub struct Buffers {
    /// Coupled input values at the current communication point (result of
    /// the last exchange).
    pub u: Vec<f64>,
    /// Taylor expansion of each input at the start of its next step:
    /// `taylor[i] = [u, u', u'', u''']`. `taylor[i][0]` is the value set.
    /// Not used while `held` (whoever writes it clears `held`).
    pub taylor: Vec<[f64; MAX_POINTS]>,
    /// The inputs of the next step are held constant at `u_end`
    /// ([`Buffers::hold_inputs`], zero-order hold): `taylor` is not read.
    pub held: bool,
    /// How many derivative orders of `taylor` to deliver (0 = values only).
    pub deliver_orders: u32,
    /// Scratch for one derivative order, in slot order.
    scratch: Vec<f64>,
    /// Input values as the subsystem saw them at the end of its last step
    /// (for indicators: the held value for ZOH, the polynomial otherwise).
    pub u_end: Vec<f64>,
    /// Published observed values (what other subsystems and observers see).
    pub y: Vec<f64>,
    /// Observed values read after the subsystem's last step, before
    /// publication.
    pub y_new: Vec<f64>,
    /// Time derivatives of the output slots (filled by masters that use
    /// them, e.g. IFOSMONDI).
    pub dy: Vec<f64>,
    /// Time derivatives of the coupled inputs, from `dy` through the
    /// connections' gains ([`System::exchange_derivatives_all`]).
    pub du: Vec<f64>,
    /// Wall-clock time spent in this subsystem's steps, s, when measured
    /// ([`System::enable_step_timing`]); `None` otherwise (no clock read
    /// on the hot path).
    pub step_wall_time: Option<f64>,
    /// How many observed slots, from the first, a step reads: all of them,
    /// unless [`System::read_needed_only`] left the others (read only by
    /// [`System::read_rest`]).
    hot: usize,
    /// The subsystem's last step ended at an event it asks the importer
    /// to handle, at this time ([`StepOutcome::EventHandlingNeeded`]; FMI
    /// 3 event mode): the system enters Event Mode there
    /// ([`System::handle_events`]).
    pub event_at: Option<f64>,
}

impl Buffers {
    fn new(n_in: usize, n_obs: usize, n_out: usize) -> Self {
        Buffers {
            dy: vec![0.0; n_out],
            du: vec![0.0; n_in],
            u: vec![0.0; n_in],
            taylor: vec![[0.0; MAX_POINTS]; n_in],
            deliver_orders: 0,
            held: false,
            scratch: vec![0.0; n_in],
            u_end: vec![0.0; n_in],
            y: vec![0.0; n_obs],
            y_new: vec![0.0; n_obs],
            step_wall_time: None,
            hot: n_obs,
            event_at: None,
        }
    }

    /// How many observed slots, from the first, a step reads (the others
    /// are read when needed: [`System::read_needed_only`]).
    pub fn read_slots(&self) -> usize {
        self.hot
    }

    /// Zero-order hold as the Gauss-Seidel step prepares it
    /// (`InputExtrapolation::prepare_gauss_seidel` at order 0): the values
    /// to set are `taylor`'s first terms, the coupled values `u` now
    /// (`u_end` gets them as they are delivered).
    #[inline]
    pub(crate) fn hold_inputs_as_taylor(&mut self) {
        self.held = false;
        self.deliver_orders = 0;
        for (tay, &u) in self.taylor.iter_mut().zip(&self.u) {
            *tay = [u, 0.0, 0.0, 0.0];
        }
    }

    /// Holds every input constant at its coupled value over the next
    /// step (ZOH): the values to set are `u_end` (the values at the step's
    /// end too), taken from `u` now; `taylor` is left as it is.
    #[inline]
    pub fn hold_inputs(&mut self) {
        copy_values(&mut self.u_end, &self.u);
        // (Every writer of the Taylor arrays clears `held`: while it is
        // set, `deliver_orders` is still 0.)
        if !self.held {
            self.held = true;
            self.deliver_orders = 0;
        }
    }
}

/// Coupled inputs, published outputs and time of a system, saved for a
/// rollback (see [`System::save_buffers`]).
#[derive(Debug, Clone, Default)]
pub struct BufferSnapshot {
    time: f64,
    u: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
}

impl BufferSnapshot {
    /// The communication point saved.
    pub fn time(&self) -> f64 {
        self.time
    }
}

/// Stack size of the worker threads: that of a usual main thread.
const WORKER_STACK: usize = 8 << 20;

/// The coupled system a master drives.
pub struct System {
    subsystems: Vec<Box<dyn Subsystem>>,
    buffers: Vec<Buffers>,
    /// Per subsystem: its traced String values, as last read
    /// ([`System::read_strings`]).
    strings: Vec<Vec<String>>,
    /// Some subsystem traces String variables (checked after every step).
    any_strings: bool,
    step_multiple: Vec<u32>,
    routes: Vec<Route>,
    /// `routes[route_ranges[s]..route_ranges[s + 1]]` feed subsystem `s`.
    route_ranges: Vec<usize>,
    connections: Vec<Connection>,
    /// Function blocks, evaluated in every exchange ([`System::add_functions`]).
    functions: Functions,
    /// `connections`, and the dependencies through functions.
    couplings: Vec<Connection>,
    bonds: Vec<PowerBond>,
    nonfinite: NonFinitePolicy,
    nonfinite_warned: Vec<Vec<bool>>,
    divergence_limit: f64,
    energy_reference: crate::indicators::energy::EnergyReference,
    threads: usize,
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Its workers' placement, kept off the stepping thread's processor
    /// (with the pool).
    placement: Option<Arc<PoolPlacement>>,
    /// Whether the pool pays off for this system's FMUs (measured).
    pool_chooser: PoolChooser,
    /// Per subsystem, the outcome of its step on the pool (reused).
    pool_results: Vec<Result<()>>,
    /// Per subsystem: its step runs in the background (another process),
    /// so inline Jacobi starts all of those before waiting for any.
    background: Vec<bool>,
    /// Per subsystem: started in the background this macro step (reused).
    started: Vec<bool>,
    /// Every step runs inline on the calling thread: no worker pool, no
    /// subsystem stepping in the background.
    steps_inline: bool,
    /// The resolution of simulation time.
    time_base: TimeBase,
    /// The current communication point in ticks, and in seconds.
    ticks: i64,
    time: f64,
    /// Some subsystem reads only part of its observed slots after a step
    /// ([`System::read_needed_only`]).
    lazy: bool,
    /// The slots a step does not read are not those of the current
    /// communication point ([`System::read_rest`] reads them).
    rest_stale: bool,
    /// When they were last read (for the errors about them).
    rest_read_at: f64,
    /// The observed slots ((subsystem, slot)) the quiet rows show
    /// ([`System::read_every_step`]): a held run in a host records them
    /// after every step.
    every_step: Vec<(usize, usize)>,
    /// What held runs in a host need of the system, kept between them.
    hosted_setup: hosted_run::HostedSetup,
    /// FMI 3 event mode: which subsystems use it, their time events, the
    /// end of a macro step an early return shortened.
    events: events::EventState,
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System")
            .field(
                "subsystems",
                &self
                    .subsystems
                    .iter()
                    .map(|s| s.info().name.clone())
                    .collect::<Vec<_>>(),
            )
            .field("connections", &self.connections.len())
            .field("bonds", &self.bonds)
            .finish()
    }
}

/// Builder input for [`System::new`].
pub struct SystemSpec {
    /// The subsystems, ready to initialise.
    pub subsystems: Vec<Box<dyn Subsystem>>,
    /// Per subsystem: it steps every k-th macro step (1 = every step).
    pub step_multiple: Vec<u32>,
    /// The connections.
    pub connections: Vec<Connection>,
    /// The power bonds.
    pub bonds: Vec<PowerBond>,
    /// NaN/Inf handling.
    pub nonfinite: NonFinitePolicy,
    /// Worker threads for Jacobi stepping (1 = inline; 0 = all cores).
    pub threads: usize,
}

impl System {
    /// Compiles the routing and allocates every buffer.
    pub fn new(spec: SystemSpec) -> Result<System> {
        let n = spec.subsystems.len();
        let buffers: Vec<Buffers> = spec
            .subsystems
            .iter()
            .map(|s| {
                let i = s.info();
                Buffers::new(i.inputs.len(), i.observed.len(), i.n_outputs)
            })
            .collect();
        let mut step_multiple = spec.step_multiple;
        step_multiple.resize(n, 1);
        for c in &spec.connections {
            let bad = c.from_subsystem >= n
                || c.to_subsystem >= n
                || c.from_slot >= spec.subsystems[c.from_subsystem].info().n_outputs
                || c.to_slot >= spec.subsystems[c.to_subsystem].info().inputs.len();
            if bad {
                return Err(CoreError::Config(format!(
                    "connection {c:?} refers to a slot that does not exist"
                )));
            }
        }
        let mut sorted: Vec<&Connection> = spec.connections.iter().collect();
        sorted.sort_by_key(|c| (c.to_subsystem, c.to_slot));
        let mut routes = Vec::with_capacity(sorted.len());
        let mut route_ranges = vec![0usize; n + 1];
        for c in &sorted {
            routes.push(Route {
                src_sub: c.from_subsystem,
                src_slot: c.from_slot,
                dst_sub: c.to_subsystem,
                dst_slot: c.to_slot,
                gain: c.gain,
                offset: c.offset,
            });
            route_ranges[c.to_subsystem + 1] += 1;
        }
        for s in 0..n {
            route_ranges[s + 1] += route_ranges[s];
        }
        let threads = if spec.threads == 0 {
            crate::parallel::processors()
        } else {
            spec.threads
        };
        let threads = threads.min(n.max(1));
        let placement = (threads > 1).then(|| Arc::new(PoolPlacement::new()));
        let pool = if let Some(placement) = &placement {
            let workers = Arc::clone(placement);
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("cosim-worker-{i}"))
                    // FMUs (and the run loop) run on these threads: give
                    // them the stack of a main thread, not the 2 MiB default.
                    .stack_size(WORKER_STACK)
                    .start_handler(move |_| workers.register_current())
                    .build()
                    .map_err(|e| CoreError::Config(format!("cannot start worker threads: {e}")))?,
            ))
        } else {
            None
        };
        let nonfinite_warned = spec
            .subsystems
            .iter()
            .map(|s| vec![false; s.info().observed.len()])
            .collect();
        let background: Vec<bool> = spec.subsystems.iter().map(|s| s.can_start_step()).collect();
        let steps_inline = pool.is_none() && !background.iter().any(|&b| b);
        let strings: Vec<Vec<String>> = spec
            .subsystems
            .iter()
            .map(|s| vec![String::new(); s.traced_strings().len()])
            .collect();
        let any_strings = strings.iter().any(|s| !s.is_empty());
        let events = events::EventState::new(&spec.subsystems);
        Ok(System {
            subsystems: spec.subsystems,
            buffers,
            strings,
            any_strings,
            step_multiple,
            routes,
            route_ranges,
            functions: Functions::none(n),
            couplings: spec.connections.clone(),
            connections: spec.connections,
            bonds: spec.bonds,
            nonfinite: spec.nonfinite,
            nonfinite_warned,
            divergence_limit: f64::INFINITY,
            energy_reference: Default::default(),
            threads,
            pool,
            placement,
            pool_chooser: PoolChooser::default(),
            pool_results: (0..n).map(|_| Ok(())).collect(),
            background,
            started: vec![false; n],
            steps_inline,
            time_base: TimeBase::default(),
            ticks: 0,
            time: 0.0,
            lazy: false,
            rest_stale: false,
            rest_read_at: f64::NAN,
            every_step: Vec::new(),
            hosted_setup: Default::default(),
            events,
        })
    }

    /// Number of subsystems.
    pub fn len(&self) -> usize {
        self.subsystems.len()
    }

    /// True when there is no subsystem.
    pub fn is_empty(&self) -> bool {
        self.subsystems.is_empty()
    }

    /// The subsystems.
    pub fn subsystems(&self) -> &[Box<dyn Subsystem>] {
        &self.subsystems
    }

    /// One subsystem, mutably (setup work, not the hot path).
    pub fn subsystem_mut(&mut self, s: usize) -> &mut dyn Subsystem {
        self.subsystems[s].as_mut()
    }

    /// The buffers of every subsystem.
    pub fn buffers(&self) -> &[Buffers] {
        &self.buffers
    }

    /// The buffers of one subsystem, mutably.
    pub fn buffers_mut(&mut self, s: usize) -> &mut Buffers {
        &mut self.buffers[s]
    }

    /// The connections between subsystems (not those to and from
    /// functions: [`System::functions`]).
    pub fn connections(&self) -> &[Connection] {
        &self.connections
    }

    /// Every dependency of a coupled input on a subsystem output: the
    /// connections, then the paths through functions as connections whose
    /// gain is the product of the gains along the path (see
    /// [`Functions`]); the same as [`System::connections`] without
    /// functions. For structural analysis (loops, Gauss-Seidel order,
    /// zero-stability, error estimates), not for moving values.
    pub fn couplings(&self) -> &[Connection] {
        &self.couplings
    }

    /// Adds function blocks and the links to and from their ports (setup
    /// work, before initialization): from then on every exchange evaluates
    /// them, in dependency order, from the published outputs.
    ///
    /// # Errors
    ///
    /// [`CoreError::Config`] for links that do not fit (see
    /// [`Functions`]): a function input without a link, an input fed twice,
    /// a cycle through functions only.
    pub fn add_functions(
        &mut self,
        functions: Vec<FunctionSpec>,
        links: Vec<FunctionLink>,
    ) -> Result<()> {
        let infos: Vec<&crate::SubsystemInfo> = self.subsystems.iter().map(|s| s.info()).collect();
        let direct: Vec<(usize, usize)> = self
            .connections
            .iter()
            .map(|c| (c.to_subsystem, c.to_slot))
            .collect();
        self.functions = Functions::compile(functions, links, &infos, &direct)?;
        self.couplings = self.connections.clone();
        self.couplings.extend_from_slice(self.functions.through());
        Ok(())
    }

    /// The function blocks: their specifications, ports and current values.
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// The traced String values of subsystem `s`, as last read by
    /// [`System::read_strings`] (named by its `traced_strings`).
    pub fn strings(&self, s: usize) -> &[String] {
        self.strings.get(s).map_or(&[], Vec::as_slice)
    }

    /// True when some subsystem traces String variables.
    #[inline]
    pub fn has_strings(&self) -> bool {
        self.any_strings
    }

    /// Reads every subsystem's traced String values (for a trace row:
    /// not on the stepping path).
    pub fn read_strings(&mut self) -> Result<()> {
        for (sub, values) in self.subsystems.iter_mut().zip(&mut self.strings) {
            if !values.is_empty() {
                sub.get_strings(values)?;
            }
        }
        Ok(())
    }

    /// The power bonds.
    pub fn bonds(&self) -> &[PowerBond] {
        &self.bonds
    }

    /// Per-subsystem step multiples.
    pub fn step_multiples(&self) -> &[u32] {
        &self.step_multiple
    }

    /// Stops the run when an observed value exceeds `limit` in magnitude
    /// (a diverging co-simulation grows without bound long before it
    /// overflows to infinity). Default: no limit.
    pub fn set_divergence_limit(&mut self, limit: f64) {
        self.divergence_limit = limit;
    }

    /// The energy level that scales each bond's residual energy in the
    /// ECCO indicator (default: the energy the bond transmits).
    pub fn set_energy_reference(&mut self, r: crate::indicators::energy::EnergyReference) {
        self.energy_reference = r;
    }

    /// See [`System::set_energy_reference`].
    pub fn energy_reference(&self) -> crate::indicators::energy::EnergyReference {
        self.energy_reference
    }

    /// Worker threads used for Jacobi stepping.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Current communication point, s: a whole number of ticks of the
    /// time base (see [`crate::time`]).
    #[inline]
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Current communication point in ticks of [`System::time_base`].
    #[inline]
    pub fn ticks(&self) -> i64 {
        self.ticks
    }

    /// The resolution of simulation time (nanoseconds unless set).
    #[inline]
    pub fn time_base(&self) -> TimeBase {
        self.time_base
    }

    /// Sets the resolution of simulation time, before the run (the
    /// scenario chooses one in which its times and steps are whole).
    pub fn set_time_base(&mut self, base: TimeBase) {
        self.time_base = base;
        self.set_time(self.time);
    }

    /// Sets the current communication point (masters do, after a step):
    /// `t` is on the tick grid, or rounded to the nearest tick.
    #[inline]
    pub fn set_time(&mut self, t: f64) {
        self.ticks = self.time_base.round(t);
        self.time = self.time_base.seconds(self.ticks);
    }

    /// Sets the current communication point to `ticks`, which is `t`
    /// seconds ([`TimeBase::seconds`]): what [`System::set_time`] of `t`
    /// sets, without converting back (exact below 2^53 ticks; above, it
    /// converts as `set_time`).
    #[inline]
    pub fn set_time_at(&mut self, ticks: i64, t: f64) {
        const EXACT: u64 = 1 << 53;
        if ticks.unsigned_abs() < EXACT {
            debug_assert_eq!(t.to_bits(), self.time_base.seconds(ticks).to_bits());
            (self.ticks, self.time) = (ticks, t);
        } else {
            self.set_time(t);
        }
    }

    /// Sum of every subsystem's call counters.
    pub fn counters(&self) -> CallCounters {
        let mut total = CallCounters::default();
        for s in &self.subsystems {
            let c = s.counters();
            total.do_step += c.do_step;
            total.set_inputs += c.set_inputs;
            total.get_outputs += c.get_outputs;
            total.state_saves += c.state_saves;
            total.state_restores += c.state_restores;
            total.stepped_time += c.stepped_time;
        }
        total
    }

    // ----- reading only what is used -------------------------------------

    /// From now on a step reads only the observed values that the next
    /// steps need: those feeding connections, functions and power bonds
    /// (for each subsystem the observed slots up to the last of those; the
    /// slots after it are values traced only). The others are read, and
    /// checked for NaN, infinity and the divergence limit, by
    /// [`System::read_rest`], which the run loop calls before an observer
    /// writes a row that shows them ([`crate::observer::Observer::wants_values`]):
    /// with the trace off or decimated, the steps that write no row read
    /// only what the coupling uses. Subsystems with a step multiple keep
    /// reading everything (their FMU is ahead of what they published).
    /// Called by the run loop for masters whose steps use nothing else
    /// ([`crate::master::Master::reads_coupled_only`]) when no diagnostic
    /// indicator reads the outputs.
    pub fn read_needed_only(&mut self) {
        let mut need: Vec<usize> = vec![0; self.subsystems.len()];
        let mut needs = |s: usize, slot: usize| {
            if let Some(n) = need.get_mut(s) {
                *n = (*n).max(slot + 1);
            }
        };
        for c in &self.connections {
            needs(c.from_subsystem, c.from_slot);
        }
        for b in &self.bonds {
            for p in &b.ports {
                needs(p.subsystem, p.output);
            }
        }
        for l in self.functions.links() {
            if let crate::function::LinkEnd::Slot { subsystem, slot } = l.from {
                needs(subsystem, slot);
            }
        }
        self.lazy = false;
        for (s, b) in self.buffers.iter_mut().enumerate() {
            b.hot = if self.step_multiple[s] > 1 {
                b.y.len()
            } else {
                need[s].min(b.y.len())
            };
            self.lazy |= b.hot < b.y.len();
            self.subsystems[s].reads_after_step(b.hot);
        }
        self.rest_stale = false;
        self.rest_read_at = self.time;
        self.every_step.clear();
    }

    /// Reads observed values `slots` ((subsystem, observed slot)) after
    /// every step too, with those the coupling uses: the quiet path's
    /// rows show them ([`crate::observer::Observer::quiet_columns`]).
    /// False (and nothing changed) where a quiet run could not read one
    /// of them (not an FMU's, or not a Float64 it reads with the others;
    /// an FMU in a host reads and records any of its observed slots).
    pub fn read_every_step(&mut self, slots: &[(usize, usize)]) -> bool {
        let readable = slots.iter().all(|&(s, k)| {
            let Some(sub) = self.subsystems.get_mut(s) else {
                return false;
            };
            if sub.as_hosted().is_some() {
                return self.buffers.get(s).is_some_and(|b| k < b.y.len());
            }
            sub.as_fmu().is_some_and(|f| f.held_readable(k))
        });
        if !readable {
            return false;
        }
        for &(s, k) in slots {
            if let Some(b) = self.buffers.get_mut(s) {
                b.hot = b.hot.max(k + 1).min(b.y.len());
                self.subsystems[s].reads_after_step(b.hot);
            }
            self.every_step.push((s, k));
        }
        self.every_step.sort_unstable();
        self.every_step.dedup();
        self.lazy = self.buffers.iter().any(|b| b.hot < b.y.len());
        true
    }

    /// The values published after the last step, for
    /// [`crate::observer::Observer::quiet_row`].
    pub fn published(&self) -> Published<'_> {
        Published(&self.buffers)
    }

    /// True when some observed values are read only on demand
    /// ([`System::read_needed_only`]).
    #[inline]
    pub fn reads_needed_only(&self) -> bool {
        self.lazy
    }

    /// Reads the observed values the last step left unread (see
    /// [`System::read_needed_only`]) into the published values, and checks
    /// them as a step checks its own (NaN and infinity by the system's
    /// policy, the divergence limit); nothing when they are current.
    ///
    /// Every subsystem is read, as every subsystem takes a step another
    /// one fails in: the reads are asked for first
    /// ([`Subsystem::request_observed_from`]), so that those of subsystems
    /// in host processes go on together rather than one round trip after
    /// the other. The error is the first subsystem's (in order) whose
    /// read failed or whose values the check refuses. Values the check
    /// refuses are published all the same (a last row shows the value
    /// that stopped the run, not an older one under the new time); those
    /// of a read that failed are set to NaN.
    pub fn read_rest(&mut self) -> Result<()> {
        if !self.rest_stale {
            return Ok(());
        }
        for (sub, b) in self.subsystems.iter_mut().zip(&self.buffers) {
            if b.hot < b.y.len() {
                sub.request_observed_from(b.hot);
            }
        }
        let t = self.time;
        let read_since = Some(self.rest_read_at).filter(|&at| at < t);
        let (policy, limit) = (self.nonfinite, self.divergence_limit);
        let limit_abs = limit.min(f64::MAX);
        let mut first_error = None;
        for s in 0..self.subsystems.len() {
            let (sub, b) = (&mut self.subsystems[s], &mut self.buffers[s]);
            let hot = b.hot;
            if hot == b.y.len() {
                continue;
            }
            let read = sub.get_observed_from(hot, &mut b.y_new);
            let read_ok = read.is_ok();
            let result = match read {
                Ok(()) if !b.y_new[hot..].iter().all(|v| v.abs() <= limit_abs) => {
                    let warned = &mut self.nonfinite_warned[s];
                    let first = (hot, read_since);
                    check_observed(sub.as_mut(), &b.y_new, first, t, policy, limit, warned)
                }
                other => other,
            };
            if read_ok {
                b.y[hot..].copy_from_slice(&b.y_new[hot..]);
            } else {
                b.y[hot..].iter_mut().for_each(|v| *v = f64::NAN);
            }
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        self.rest_stale = false;
        match first_error {
            Some(e) => Err(e),
            None => {
                self.rest_read_at = t;
                Ok(())
            }
        }
    }

    /// After a failed step, whose subsystems may have moved on: the values
    /// the last accepted step left unread can no longer be read, and are
    /// set to NaN (so that a last row says so rather than show older
    /// values).
    pub fn forget_rest(&mut self) {
        if !self.rest_stale {
            return;
        }
        for b in &mut self.buffers {
            let hot = b.hot;
            b.y[hot..].iter_mut().for_each(|v| *v = f64::NAN);
        }
        self.rest_stale = false;
    }

    // ----- initialization -------------------------------------------------

    /// Initialises every subsystem at `t0`, exchanging coupled values in
    /// initialization mode until they settle (so that outputs depending on
    /// inputs see consistent values), then leaves initialization mode,
    /// reads the outputs at `t0` and exchanges once more.
    ///
    /// Returns the number of exchange sweeps made in initialization mode.
    pub fn initialize(&mut self, t0: f64, t_stop: Option<f64>) -> Result<usize> {
        self.enter_initialization(t0, t_stop)?;
        let sweeps = self.settle_initialization()?;
        self.exit_initialization()?;
        Ok(sweeps)
    }

    /// Measures the wall-clock time of every subsystem's steps from now on
    /// (two clock reads per subsystem and macro step; [`Buffers::step_wall_time`]).
    pub fn enable_step_timing(&mut self) {
        for b in &mut self.buffers {
            b.step_wall_time.get_or_insert(0.0);
        }
    }

    /// From now on saved states may be restored, back to `to` (see
    /// [`Subsystem::allow_rollback`]): called by a master that rolls back,
    /// when it starts.
    pub fn allow_rollback(&mut self, to: crate::subsystem::RollbackTo) -> Result<()> {
        for s in &mut self.subsystems {
            s.allow_rollback(to)?;
        }
        Ok(())
    }

    /// Puts every subsystem into initialization mode at `t0` (each sets up
    /// the experiment and sets its parameters and start values on the way).
    pub fn enter_initialization(&mut self, t0: f64, t_stop: Option<f64>) -> Result<()> {
        self.set_time(t0);
        let t0 = self.time;
        let t_stop = t_stop.map(|t| self.time_base.seconds(self.time_base.round(t)));
        for s in &mut self.subsystems {
            s.enter_initialization(t0, t_stop)?;
        }
        Ok(())
    }

    /// In initialization mode: the coupled values settled. One sweep reads
    /// every output, exchanges and sets every input; where that changed an
    /// input, one pass in the order of the direct dependencies (outputs
    /// that depend on inputs, feeding other subsystems) sets each
    /// subsystem's inputs and reads its outputs after every subsystem
    /// feeding it has been read: a chain of N subsystems settles in a
    /// number of calls proportional to N. An algebraic loop is left to the
    /// sweeps of [`System::settle_initialization_by_sweeps`]; where the
    /// pass leaves a value unsettled (an output whose initial dependencies
    /// differ from its declared feed-through), they go on from there.
    /// Returns the sweeps made (the ordered pass counts as one).
    pub fn settle_initialization(&mut self) -> Result<usize> {
        let Some(order) = self.feedthrough_order() else {
            // An algebraic loop: the sweeps alone.
            return self.settle_initialization_by_sweeps();
        };
        self.read_all_observed()?;
        self.publish_all();
        let changed = self.exchange_all();
        self.set_all_inputs()?;
        if !changed {
            return Ok(1);
        }
        // (Every subsystem read once more, after its inputs are final: the
        // first sweep read it before it set them.)
        for s in order {
            if self.exchange_into(s) {
                self.set_inputs_of(s)?;
            }
            let b = &mut self.buffers[s];
            self.subsystems[s].get_observed(&mut b.y_new)?;
            self.publish(s);
        }
        if !self.exchange_all() {
            return Ok(2);
        }
        // (Values the pass could not settle: set, then the sweeps.)
        self.set_all_inputs()?;
        Ok(2 + self.settle_initialization_by_sweeps()?)
    }

    /// The subsystems in an order where each comes after every subsystem
    /// whose outputs that depend directly on its inputs (`feedthrough`)
    /// feed it, through connections or functions; `None` where those
    /// dependencies form a loop.
    fn feedthrough_order(&self) -> Option<Vec<usize>> {
        let n = self.subsystems.len();
        let mut successors: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut indegree = vec![0usize; n];
        for c in &self.couplings {
            let info = self.subsystems[c.from_subsystem].info();
            let feeds_through = info
                .feedthrough
                .get(c.from_slot)
                .is_some_and(|inputs| !inputs.is_empty());
            if feeds_through && !successors[c.from_subsystem].contains(&c.to_subsystem) {
                successors[c.from_subsystem].push(c.to_subsystem);
                indegree[c.to_subsystem] += 1;
            }
        }
        let mut order = Vec::with_capacity(n);
        let mut ready: Vec<usize> = (0..n).filter(|&s| indegree[s] == 0).rev().collect();
        while let Some(s) = ready.pop() {
            order.push(s);
            for &t in successors[s].iter().rev() {
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    ready.push(t);
                }
            }
        }
        (order.len() == n).then_some(order)
    }

    /// In initialization mode: reads every output, exchanges and sets every
    /// input, until no coupled value changes (the reference the ordered
    /// pass of [`System::settle_initialization`] is checked against). A
    /// chain of feed-through outputs of length L needs L sweeps; a loop
    /// that does not settle is left after one sweep per subsystem (the
    /// structural check reports it). Returns the sweeps made.
    pub fn settle_initialization_by_sweeps(&mut self) -> Result<usize> {
        let max_sweeps = self.subsystems.len() + 1;
        let mut sweeps = 0;
        for _ in 0..max_sweeps {
            sweeps += 1;
            self.read_all_observed()?;
            self.publish_all();
            let changed = self.exchange_all();
            self.set_all_inputs()?;
            if !changed {
                break;
            }
        }
        Ok(sweeps)
    }

    /// Leaves initialization mode, reads the outputs at the start time and
    /// exchanges: the system is ready for its master's `start`.
    pub fn exit_initialization(&mut self) -> Result<()> {
        for s in &mut self.subsystems {
            s.exit_initialization()?;
        }
        // (Event-mode subsystems are now in Event Mode: their initial
        // event iteration.)
        self.initial_events()?;
        self.read_all_observed()?;
        self.publish_all();
        self.exchange_all();
        for b in &mut self.buffers {
            b.hold_inputs();
        }
        Ok(())
    }

    /// Ends the run where an FMU asked to (its last successful time `t`,
    /// [`CoreError::TerminatedByFmu`]): reads every subsystem's observed
    /// values (the terminating one's at `t`, the others' at the end of
    /// their last step), publishes and exchanges them, and sets the time
    /// to `t`, so that observers write the run's last row.
    pub fn end_at_fmu_termination(&mut self, t: f64) -> Result<()> {
        self.read_all_observed()?;
        self.publish_all();
        self.exchange_all();
        self.set_time(t);
        Ok(())
    }

    /// Reads every subsystem's observed values, publishes and exchanges
    /// them: after a master changed the subsystems other than by their
    /// steps (a strongly coupled level's integration).
    pub fn read_publish_exchange_all(&mut self) -> Result<()> {
        self.read_all_observed()?;
        self.publish_all();
        self.exchange_all();
        Ok(())
    }

    /// Sets subsystem `s`'s coupled inputs from its buffer (setup work).
    pub fn set_inputs_of(&mut self, s: usize) -> Result<()> {
        let b = &self.buffers[s];
        self.subsystems[s].set_inputs(&b.u)
    }

    fn read_all_observed(&mut self) -> Result<()> {
        for s in 0..self.subsystems.len() {
            let b = &mut self.buffers[s];
            self.subsystems[s].get_observed(&mut b.y_new)?;
        }
        self.rest_stale = false;
        Ok(())
    }

    fn set_all_inputs(&mut self) -> Result<()> {
        for (sub, b) in self.subsystems.iter_mut().zip(&self.buffers) {
            sub.set_inputs(&b.u)?;
        }
        Ok(())
    }

    // ----- exchange -------------------------------------------------------

    /// Recomputes the coupled inputs of subsystem `s` from the published
    /// outputs, evaluating the functions upstream of them first. Returns
    /// true when a value changed.
    #[inline]
    pub fn exchange_into(&mut self, s: usize) -> bool {
        self.functions.eval_for(s, &self.buffers);
        self.route_into(s)
    }

    /// Recomputes every coupled input: evaluates every function (in
    /// dependency order), then routes. Returns true when a value changed.
    #[inline]
    pub fn exchange_all(&mut self) -> bool {
        self.functions.eval_all(&self.buffers);
        let mut changed = false;
        for s in 0..self.subsystems.len() {
            changed |= self.route_into(s);
        }
        changed
    }

    /// Recomputes every coupled input, as [`System::exchange_all`], without
    /// telling whether one changed (what a step needs: the change matters
    /// only while settling initialization).
    #[inline]
    pub fn exchange(&mut self) {
        if !self.functions.is_empty() {
            self.exchange_all();
            return;
        }
        for r in &self.routes {
            let v = r.gain * self.buffers[r.src_sub].y[r.src_slot] + r.offset;
            self.buffers[r.dst_sub].u[r.dst_slot] = v;
        }
    }

    /// Routes published outputs and function outputs (as last evaluated)
    /// into subsystem `s`'s coupled inputs.
    #[inline]
    fn route_into(&mut self, s: usize) -> bool {
        let mut changed = false;
        for r in &self.routes[self.route_ranges[s]..self.route_ranges[s + 1]] {
            let v = r.gain * self.buffers[r.src_sub].y[r.src_slot] + r.offset;
            let dst = &mut self.buffers[s].u[r.dst_slot];
            // Bitwise comparison: NaN-safe and exact.
            changed |= dst.to_bits() != v.to_bits();
            *dst = v;
        }
        let f = &self.functions;
        let values = f.values();
        for r in &f.routes[f.route_ranges[s]..f.route_ranges[s + 1]] {
            let v = r.gain * values[r.src] + r.offset;
            let dst = &mut self.buffers[s].u[r.dst_slot];
            changed |= dst.to_bits() != v.to_bits();
            *dst = v;
        }
        changed
    }

    /// Recomputes the time derivatives of every coupled input from the
    /// output derivatives in `Buffers::dy` (`du = gain * dy`, through
    /// functions too).
    pub fn exchange_derivatives_all(&mut self) {
        self.functions.eval_derivatives(&self.buffers);
        for s in 0..self.subsystems.len() {
            for r in &self.routes[self.route_ranges[s]..self.route_ranges[s + 1]] {
                let v = r.gain * self.buffers[r.src_sub].dy[r.src_slot];
                self.buffers[s].du[r.dst_slot] = v;
            }
            let f = &self.functions;
            for r in &f.routes[f.route_ranges[s]..f.route_ranges[s + 1]] {
                self.buffers[s].du[r.dst_slot] = r.gain * f.dvalues()[r.src];
            }
        }
    }

    /// Reads the first time derivative of subsystem `s`'s outputs into
    /// `Buffers::dy`.
    pub fn read_output_derivatives(&mut self, s: usize) -> Result<()> {
        let b = &mut self.buffers[s];
        self.subsystems[s].get_output_derivatives(1, &mut b.dy)
    }

    /// Publishes subsystem `s`'s last read values (copies `y_new` to `y`).
    #[inline]
    pub fn publish(&mut self, s: usize) {
        let b = &mut self.buffers[s];
        copy_values(&mut b.y, &b.y_new);
    }

    /// Publishes the last read values of the subsystems selected by
    /// `publish`.
    #[inline]
    pub fn publish_selected(&mut self, publish: &[bool]) {
        for (b, _) in self.buffers.iter_mut().zip(publish).filter(|(_, p)| **p) {
            copy_values(&mut b.y, &b.y_new);
        }
    }

    /// Holds the inputs of the subsystems selected by `due` constant over
    /// their next step ([`Buffers::hold_inputs`]).
    #[inline]
    pub fn hold_inputs(&mut self, due: &[bool]) {
        for (b, _) in self.buffers.iter_mut().zip(due).filter(|(_, d)| **d) {
            b.hold_inputs();
        }
    }

    /// Publishes the values every subsystem's last step read: its first
    /// [`System::read_needed_only`] slots, or all of them. (The others are
    /// published by [`System::read_rest`] as it reads them.)
    #[inline]
    pub fn publish_read(&mut self) {
        for b in &mut self.buffers {
            let hot = b.hot;
            copy_values(&mut b.y[..hot], &b.y_new[..hot]);
        }
    }

    /// Publishes every subsystem's last read values.
    #[inline]
    pub fn publish_all(&mut self) {
        for b in &mut self.buffers {
            copy_values(&mut b.y, &b.y_new);
        }
    }

    // ----- stepping -------------------------------------------------------

    /// Steps subsystem `s` from `t` by `h` with the inputs prepared in its
    /// buffers (`taylor`, `deliver_orders`), then reads its observed values
    /// into `y_new` (not yet published).
    pub fn step_one(&mut self, s: usize, t: f64, h: f64) -> Result<()> {
        self.rest_stale |= self.lazy;
        step_subsystem(
            self.subsystems[s].as_mut(),
            &mut self.buffers[s],
            t,
            h,
            (self.nonfinite, self.divergence_limit),
            &mut self.nonfinite_warned[s],
        )
    }

    /// Steps the subsystems selected by `due` (Jacobi: all from the same
    /// inputs): on the worker pool when the system has several threads and
    /// the pool is measured to pay off ([`PoolChooser`]), else inline. The
    /// results are the same either way.
    pub fn step_jacobi(&mut self, t: f64, h: &[f64], due: &[bool]) -> Result<()> {
        if self.events.any {
            return self.step_jacobi_events(t, h, due, false);
        }
        self.rest_stale |= self.lazy;
        let policy = (self.nonfinite, self.divergence_limit);
        type Item<'a> = (
            (
                (&'a mut Box<dyn Subsystem>, &'a mut Buffers),
                &'a mut Vec<bool>,
            ),
            (&'a f64, &'a bool),
        );
        let work = |(((sub, b), warned), (&h, &due)): Item<'_>| -> Result<()> {
            if due {
                step_subsystem(sub.as_mut(), b, t, h, policy, warned)
            } else {
                Ok(())
            }
        };
        let Some(pool) = &self.pool else {
            if self.background.iter().any(|&b| b) {
                return self.step_jacobi_overlapped(t, h, due);
            }
            return jacobi_inline(
                &mut self.subsystems,
                &mut self.buffers,
                &mut self.nonfinite_warned,
                (t, h, due),
                policy,
                false,
            );
        };
        // A step of fewer than two subsystems has nothing to parallelise
        // and says nothing about the pool: run it inline, untimed.
        let several = due.iter().filter(|&&d| d).nth(1).is_some();
        let (way, timed) = if several {
            self.pool_chooser.next()
        } else {
            (Way::Inline, false)
        };
        let started = timed.then(Instant::now);
        let subs = &mut self.subsystems;
        let bufs = &mut self.buffers;
        let warned = &mut self.nonfinite_warned;
        let results = &mut self.pool_results;
        let result = match way {
            Way::Pool => {
                if let Some(placement) = &self.placement {
                    placement.keep_off(current_cpu());
                }
                // Every due subsystem completes its step; the error of the
                // first failing one (in subsystem order; an error before
                // an FMU's end of the simulation) is reported, as inline,
                // whatever the scheduling.
                pool.install(|| {
                    subs.par_iter_mut()
                        .zip(bufs.par_iter_mut())
                        .zip(warned.par_iter_mut())
                        .zip(h.par_iter().zip(due.par_iter()))
                        .zip(results.par_iter_mut())
                        .for_each(|(item, slot)| *slot = work(item));
                });
                // (An error other than an FMU's end first.)
                let failed = |r: &Result<()>| matches!(r, Err(e) if !matches!(e, CoreError::TerminatedByFmu { .. }));
                let k = results
                    .iter()
                    .position(failed)
                    .or_else(|| results.iter().position(Result::is_err));
                k.map_or(Ok(()), |k| std::mem::replace(&mut results[k], Ok(())))
            }
            Way::Inline if self.background.iter().any(|&b| b) => {
                self.step_jacobi_overlapped(t, h, due)
            }
            Way::Inline => jacobi_inline(subs, bufs, warned, (t, h, due), policy, false),
        };
        if several && let Some(d) = self.pool_chooser.record(way, started.map(|s| s.elapsed())) {
            tracing::debug!(
                "Jacobi stepping {}: {:?} per step inline, {:?} on {} threads",
                match d.way {
                    Way::Pool => "on the worker pool",
                    Way::Inline => "inline",
                },
                d.inline_per_step,
                d.pool_per_step,
                self.threads
            );
        }
        result
    }

    /// Holds the inputs of the subsystems selected by `due` constant over
    /// their step ([`Buffers::hold_inputs`], zero-order hold) and steps
    /// them, Jacobi: [`System::hold_inputs`] then [`System::step_jacobi`],
    /// in one pass over the subsystems where they step inline.
    pub fn step_jacobi_held(&mut self, t: f64, h: &[f64], due: &[bool]) -> Result<()> {
        if self.events.any {
            return self.step_jacobi_events(t, h, due, true);
        }
        if self.pool.is_some() || self.background.iter().any(|&b| b) {
            self.hold_inputs(due);
            return self.step_jacobi(t, h, due);
        }
        self.rest_stale |= self.lazy;
        jacobi_inline(
            &mut self.subsystems,
            &mut self.buffers,
            &mut self.nonfinite_warned,
            (t, h, due),
            (self.nonfinite, self.divergence_limit),
            true,
        )
    }

    /// Every step runs inline on the calling thread (no worker pool, no
    /// subsystem stepping in another process): what
    /// [`System::step_held_all_inline`] needs.
    #[inline]
    pub fn steps_inline(&self) -> bool {
        self.steps_inline
    }

    /// [`System::step_jacobi_held`] with every subsystem due, all by the
    /// same `h`, inline on the calling thread: the fixed-step master's
    /// common case (single rate, zero-order hold), with no plan to read.
    /// Meant for when [`System::steps_inline`] (else it gives the same
    /// results, without the worker pool or the overlap of steps in other
    /// processes).
    #[inline]
    pub fn step_held_all_inline(&mut self, t: f64, h: f64) -> Result<()> {
        self.rest_stale |= self.lazy;
        let policy = (self.nonfinite, self.divergence_limit);
        let n = self.subsystems.len();
        let subs = self.subsystems.iter_mut().zip(&mut self.buffers);
        let mut subs = subs.zip(&mut self.nonfinite_warned);
        while let Some(((sub, b), warned)) = subs.next() {
            b.hold_inputs();
            if let Err(e) = step_subsystem(sub.as_mut(), b, t, h, policy, warned) {
                // (Out of the loop, and no count of the subsystems in it:
                // the common path keeps its shape.)
                let from = n - subs.len();
                return self.step_held_after_error(e, from, t, h);
            }
        }
        Ok(())
    }

    /// [`System::step_held_all_inline`] after subsystem `from - 1`'s step
    /// returned `e`: an FMU that ended the simulation lets the others
    /// complete the step ([`keep_error`]); any other error ends it.
    #[cold]
    #[inline(never)]
    fn step_held_after_error(&mut self, e: CoreError, from: usize, t: f64, h: f64) -> Result<()> {
        let mut error = None;
        keep_error(&mut error, e)?;
        let policy = (self.nonfinite, self.divergence_limit);
        for s in from..self.subsystems.len() {
            let b = &mut self.buffers[s];
            b.hold_inputs();
            let warned = &mut self.nonfinite_warned[s];
            if let Err(e) = step_subsystem(self.subsystems[s].as_mut(), b, t, h, policy, warned) {
                keep_error(&mut error, e)?;
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Up to `steps` macro steps of `h_ticks` each from now, each what the
    /// fixed-step master's common case makes of one
    /// ([`System::step_held_all_inline`], [`System::publish_read`],
    /// [`System::exchange`], [`System::set_time_at`]) with the same
    /// results bit for bit, for a stretch of steps that nothing watches
    /// in between. The FMUs' calls are bound once for the whole run
    /// (`FmuSubsystem::held_run`): a step reads no function pointer,
    /// value reference array or length anew, and tests no log or state it
    /// cannot have changed. `after_step(t)` is called after each step, at
    /// its end `t`; it returns whether to go on.
    ///
    /// `None`, with nothing done (but the inputs marked held, as the
    /// common case's step marks them), where the common case does not hold
    /// for every subsystem (an FMU whose step is not the direct one, or no
    /// FMU, functions in the coupling, steps timed or in other processes,
    /// or the time beyond where ticks and seconds convert exactly), or
    /// where the FMUs have stepped different times so far (never so under
    /// the fixed-step master). With a
    /// worker pool the steps are taken inline while the pool is measured
    /// not to pay off ([`PoolChooser`]), up to its next measurement; none
    /// (`Some((0, Ok(())))`) while it does or is being measured. Else the
    /// steps completed, and the error of the step after them if one
    /// failed: as from [`System::step_held_all_inline`], the subsystems
    /// after the failing one completed that step unless the error ends
    /// the run, and the step is not published.
    pub fn step_held_run(
        &mut self,
        steps: u64,
        h_ticks: i64,
        after_step: impl AfterStep,
    ) -> Option<(u64, Result<()>)> {
        use cosim_fmi::FmiVersion;
        if self.events.any {
            // (A step may end at an event: steps one by one.)
            return None;
        }
        if !self.subsystems.is_empty() && self.background.iter().all(|&b| b) {
            // Every subsystem in another process: the stretch is taken
            // there, if they share one.
            return self.held_run_in_host(steps, h_ticks, None, after_step);
        }
        // The FMUs' calls bound in their one FMI version where they share
        // it (no dispatch by version per call), else in either.
        let mut versions = self
            .subsystems
            .iter_mut()
            .map(|s| s.as_fmu().map(|f| f.fmi_version()));
        let first = versions.next().flatten();
        match first.filter(|&v| versions.all(|w| w == Some(v))) {
            Some(FmiVersion::V2) => self.held_run_of::<Fmi2Only>(steps, h_ticks, None, after_step),
            Some(FmiVersion::V3) => self.held_run_of::<Fmi3Only>(steps, h_ticks, None, after_step),
            None => self.held_run_of::<AnyVersion>(steps, h_ticks, None, after_step),
        }
    }

    /// [`System::step_held_run`] for Gauss-Seidel steps in `order` (every
    /// subsystem once), as the fixed-step master's Gauss-Seidel step at
    /// zero-order hold makes them (`Stepper`: in order, each subsystem's
    /// inputs routed from the newest published values, then its step and
    /// its values published; the whole exchange after the step), bit for
    /// bit: each subsystem's inputs are routed from what its predecessors
    /// in `order` read in this step and what the others read in the step
    /// before. Every step inline (a Gauss-Seidel step never goes to the
    /// worker pool); in their host where every subsystem lives in one. A
    /// step that stops at a subsystem is finished in order as the stepper
    /// would, from it.
    pub fn step_held_run_in_order(
        &mut self,
        order: &[usize],
        steps: u64,
        h_ticks: i64,
        after_step: impl AfterStep,
    ) -> Option<(u64, Result<()>)> {
        use cosim_fmi::FmiVersion;
        if self.events.any || order.len() != self.subsystems.len() {
            return None;
        }
        if !self.subsystems.is_empty() && self.background.iter().all(|&b| b) {
            return self.held_run_in_host(steps, h_ticks, Some(order), after_step);
        }
        let mut versions = self
            .subsystems
            .iter_mut()
            .map(|s| s.as_fmu().map(|f| f.fmi_version()));
        let first = versions.next().flatten();
        let order = Some(order);
        match first.filter(|&v| versions.all(|w| w == Some(v))) {
            Some(FmiVersion::V2) => self.held_run_of::<Fmi2Only>(steps, h_ticks, order, after_step),
            Some(FmiVersion::V3) => self.held_run_of::<Fmi3Only>(steps, h_ticks, order, after_step),
            None => self.held_run_of::<AnyVersion>(steps, h_ticks, order, after_step),
        }
    }

    /// How many of `steps` a run of held steps may take inline: with a
    /// worker pool (`true`), while it is measured not to pay off, up to its
    /// next measurement (the results are the same either way); all of
    /// them in a Gauss-Seidel `order`, whose steps never go to the pool.
    fn inline_steps(&self, order: Option<&[usize]>, steps: u64) -> (bool, u64) {
        let pooled = order.is_none() && self.pool.is_some() && self.subsystems.len() > 1;
        if pooled {
            (true, steps.min(self.pool_chooser.inline_steps_left()))
        } else {
            (false, steps)
        }
    }

    /// [`System::step_held_run`] (Jacobi: `order` `None`) or
    /// [`System::step_held_run_in_order`], each FMU's calls bound by `B`.
    fn held_run_of<B: BindHeld>(
        &mut self,
        steps: u64,
        h_ticks: i64,
        order: Option<&[usize]>,
        mut after_step: impl AfterStep,
    ) -> Option<(u64, Result<()>)> {
        const EXACT: i64 = 1 << 53;
        let last = i64::try_from(steps)
            .ok()
            .and_then(|k| k.checked_mul(h_ticks))
            .and_then(|d| d.checked_add(self.ticks))?;
        if h_ticks <= 0
            || self.background.iter().any(|&b| b)
            || !self.functions.is_empty()
            || self.ticks.unsigned_abs() >= EXACT as u64
            || last >= EXACT
        {
            return None;
        }
        // Each subsystem's place in a Gauss-Seidel order (every one once).
        let mut position = Vec::new();
        if let Some(order) = order {
            position = vec![usize::MAX; self.subsystems.len()];
            for (p, &s) in order.iter().enumerate() {
                if position.get(s).copied() != Some(usize::MAX) {
                    return None;
                }
                position[s] = p;
            }
        }
        let (pooled, steps) = self.inline_steps(order, steps);
        if steps == 0 {
            return Some((0, Ok(())));
        }
        let policy = (self.nonfinite, self.divergence_limit);
        let limit_abs = self.divergence_limit.min(f64::MAX);
        // (On the stack up to HELD_INLINE FMUs: a run is taken per stretch
        // of quiet steps, as often as every eighth step.)
        let mut held: smallvec::SmallVec<[_; HELD_INLINE]> = smallvec::SmallVec::new();
        for (sub, b) in self.subsystems.iter_mut().zip(&mut self.buffers) {
            if b.step_wall_time.is_some() {
                return None;
            }
            let fmu = sub.as_fmu()?;
            // Held inputs, set from `u` itself: `u_end` (the values set)
            // is copied from it before the exchange that changes it. (Set
            // before a later subsystem can refuse the run: harmless, the
            // common case's step holds every subsystem's inputs anyway.)
            b.held = true;
            b.deliver_orders = 0;
            // The outputs are read into `y_new` and `y` by turns: the
            // buffer a step did not read into keeps the values the step
            // before read, which are the published ones should the step
            // stop (put back in their places once the run ends).
            let hot = b.hot;
            held.push((
                fmu.held_run::<B>(&mut b.u, [&mut b.y_new[..hot], &mut b.y[..hot]])?,
                &mut b.u_end,
            ));
        }
        let base = self.time_base;
        let (ticks, t) = (self.ticks, self.time);
        // The watchdog's sequence number of each macro step, the same for
        // every FMU: above each one's last.
        let first_sequence = held.iter().map(|(f, _)| f.sequence()).max().unwrap_or(0) + 1;
        // The time stepped, kept once where every FMU has stepped the same
        // so far (the same additions then give the same sums).
        let stepped = held.first().map_or(0.0, |(f, _)| f.stepped_time());
        // (Always so where every step was the fixed-step master's, with
        // every FMU; else no run, and the fixed-step master takes none
        // for the rest of this one.)
        if !held
            .iter()
            .all(|(f, _)| f.stepped_time().to_bits() == stepped.to_bits())
        {
            return None;
        }
        self.rest_stale |= self.lazy;
        let mut run = HeldSteps {
            held: &mut held,
            routes: &self.routes,
            route_ranges: &self.route_ranges,
            position: &position,
            base,
            h_ticks,
            limit_abs,
            first_sequence,
            steps,
            ticks,
            t,
            taken: 0,
            since: f64::NAN,
            stepped,
            stopped: None,
        };
        // Two steps a turn, one on each side: the side is a constant in
        // each.
        match order {
            None => run.run_jacobi(&mut after_step),
            Some(order) => run.run_in_order(order, &mut after_step),
        }
        (self.ticks, self.time) = (run.ticks, run.t);
        let taken = run.taken;
        if pooled {
            self.pool_chooser.record_inline(taken);
        }
        let Some((s, check)) = run.stopped else {
            run.end();
            return Some((taken, Ok(())));
        };
        let (t, next) = (run.t, run.ticks + h_ticks);
        let t_next = base.seconds(next);
        let h = t_next - t;
        let outcome = run.settle_stop(s, check, h);
        drop(held);
        let first = match outcome {
            Ok(StepOutcome::Completed) => check_step_outputs(
                self.subsystems[s].as_mut(),
                &mut self.buffers[s],
                t,
                h,
                policy,
                &mut self.nonfinite_warned[s],
            ),
            other => step_not_completed(self.subsystems[s].as_mut(), other, t, h),
        };
        let step = ((t, h), (next, t_next));
        let finished = match order {
            None => self.finish_stopped_step(first, s, step, pooled, &mut after_step),
            Some(order) => {
                let p = position[s];
                self.finish_stopped_in_order(first, order, p, step, &mut after_step)
            }
        };
        match finished {
            Ok(()) => Some((taken + 1, Ok(()))),
            Err(e) => Some((taken, Err(e))),
        }
    }

    /// [`System::finish_stopped_step`] for Gauss-Seidel in `order`, the
    /// step stopped at its `p`th subsystem: its predecessors' values
    /// published (each was after its step), its own as its step ended
    /// (`first`), then the ones after it stepped in order as the stepper
    /// steps them (inputs routed from the newest values, step, publish; an
    /// FMU's end of the simulation lets the others complete the step,
    /// any other error ends it at once), then the whole exchange.
    fn finish_stopped_in_order(
        &mut self,
        first: Result<()>,
        order: &[usize],
        p: usize,
        ((t, h), (next, t_next)): ((f64, f64), (i64, f64)),
        after_step: &mut impl AfterStep,
    ) -> Result<()> {
        for &j in &order[..p] {
            self.publish(j);
        }
        let mut ended = None;
        match first {
            Ok(()) => self.publish(order[p]),
            Err(e) => keep_error(&mut ended, e)?,
        }
        let policy = (self.nonfinite, self.divergence_limit);
        for &s in &order[p + 1..] {
            self.route_into(s);
            let b = &mut self.buffers[s];
            b.hold_inputs_as_taylor();
            let warned = &mut self.nonfinite_warned[s];
            match step_subsystem(self.subsystems[s].as_mut(), b, t, h, policy, warned) {
                Ok(()) => self.publish(s),
                Err(e) => keep_error(&mut ended, e)?,
            }
        }
        if let Some(e) = ended {
            return Err(e);
        }
        self.exchange();
        self.set_time_at(next, t_next);
        after_step.after_step(t_next, next, &self.published());
        Ok(())
    }

    /// The rest of the step `[t, t + h]` (ending at ticks `next`, `t_next`
    /// s) a held run stopped in at subsystem `s`, whose own step ended with
    /// `first`: the subsystems after it step one by one, then (unless that
    /// failed: a value only warned about lets the step complete) the step
    /// is published, exchanged and handed to `after_step`, as the steps
    /// one by one leave it.
    fn finish_stopped_step(
        &mut self,
        first: Result<()>,
        s: usize,
        ((t, h), (next, t_next)): ((f64, f64), (i64, f64)),
        pooled: bool,
        after_step: &mut impl AfterStep,
    ) -> Result<()> {
        match first {
            Ok(()) => self.step_held_from(s + 1, t, h),
            Err(e) => self.step_held_after_error(e, s + 1, t, h),
        }?;
        if pooled {
            self.pool_chooser.record_inline(1);
        }
        self.publish_read();
        self.exchange();
        self.set_time_at(next, t_next);
        after_step.after_step(t_next, next, &self.published());
        Ok(())
    }

    /// [`System::step_held_all_inline`] from subsystem `from` on.
    #[cold]
    #[inline(never)]
    fn step_held_from(&mut self, from: usize, t: f64, h: f64) -> Result<()> {
        let policy = (self.nonfinite, self.divergence_limit);
        for s in from..self.subsystems.len() {
            let b = &mut self.buffers[s];
            b.hold_inputs();
            let warned = &mut self.nonfinite_warned[s];
            if let Err(e) = step_subsystem(self.subsystems[s].as_mut(), b, t, h, policy, warned) {
                return self.step_held_after_error(e, s + 1, t, h);
            }
        }
        Ok(())
    }

    /// Inline Jacobi with subsystems that step in the background (FMUs in
    /// host processes): start each of those, step the in-process ones
    /// meanwhile, then collect the started ones, so the hosts work at the
    /// same time instead of one after the other. Every due subsystem
    /// completes its step (a started one is always awaited); the error of
    /// the first failing one in subsystem order is reported (an error
    /// before an FMU's end of the simulation), as inline.
    fn step_jacobi_overlapped(&mut self, t: f64, h: &[f64], due: &[bool]) -> Result<()> {
        let policy = (self.nonfinite, self.divergence_limit);
        let n = self.subsystems.len();
        // Pass 1: start the background ones (a failure to start, or a step
        // made at once, leaves its result in pool_results).
        for s in 0..n {
            self.started[s] = false;
            if !(due[s] && self.background[s]) {
                continue;
            }
            let sub = self.subsystems[s].as_mut();
            let b = &mut self.buffers[s];
            self.pool_results[s] =
                match set_step_inputs(sub, b, h[s]).and_then(|()| sub.start_step(t, h[s])) {
                    Ok(true) => {
                        self.started[s] = true;
                        Ok(())
                    }
                    Ok(false) => {
                        let outcome = sub.do_step(t, h[s]);
                        let warned = &mut self.nonfinite_warned[s];
                        finish_subsystem_step(sub, b, outcome, t, h[s], policy, warned)
                    }
                    Err(e) => Err(e),
                };
        }
        for s in 0..n {
            if self.started[s] {
                self.subsystems[s].send_started_steps();
            }
        }
        // Pass 2: the in-process ones, while the hosts work.
        let mut first_error: Option<(usize, CoreError)> = None;
        for s in 0..n {
            if !due[s] || self.background[s] {
                continue;
            }
            if let Err(e) = step_subsystem(
                self.subsystems[s].as_mut(),
                &mut self.buffers[s],
                t,
                h[s],
                policy,
                &mut self.nonfinite_warned[s],
            ) && first_error.as_ref().is_none_or(|(_, k)| ends_only(k, &e))
            {
                first_error = Some((s, e));
            }
        }
        // Pass 3: collect the started ones.
        for s in 0..n {
            if !(due[s] && self.background[s]) {
                continue;
            }
            let result = if self.started[s] {
                let sub = self.subsystems[s].as_mut();
                let outcome = sub.finish_step();
                let warned = &mut self.nonfinite_warned[s];
                finish_subsystem_step(sub, &mut self.buffers[s], outcome, t, h[s], policy, warned)
            } else {
                std::mem::replace(&mut self.pool_results[s], Ok(()))
            };
            if let Err(e) = result
                && first_error
                    .as_ref()
                    .is_none_or(|(k, kept)| ends_only(kept, &e) || (s < *k && !ends_only(&e, kept)))
            {
                first_error = Some((s, e));
            }
        }
        first_error.map_or(Ok(()), |(_, e)| Err(e))
    }

    /// The worker pool of Jacobi stepping, when the system has one (the
    /// run loop runs on it, see [`crate::Execution`]).
    pub fn worker_pool(&self) -> Option<Arc<rayon::ThreadPool>> {
        self.pool.clone()
    }

    /// How Jacobi steps currently run (inline until the pool is measured
    /// to pay off; always inline with one thread).
    pub fn jacobi_way(&self) -> Way {
        if self.pool.is_some() {
            self.pool_chooser.chosen()
        } else {
            Way::Inline
        }
    }

    // ----- rollback -------------------------------------------------------

    /// Copies the coupled inputs, published outputs and time into `snap`
    /// (allocating only the first time), so that a rolled-back attempt can
    /// put them back with [`System::restore_buffers`].
    pub fn save_buffers(&self, snap: &mut BufferSnapshot) {
        snap.time = self.time;
        snap.u.resize_with(self.buffers.len(), Vec::new);
        snap.y.resize_with(self.buffers.len(), Vec::new);
        for ((b, u), y) in self.buffers.iter().zip(&mut snap.u).zip(&mut snap.y) {
            u.clear();
            u.extend_from_slice(&b.u);
            y.clear();
            y.extend_from_slice(&b.y);
        }
    }

    /// Puts back what [`System::save_buffers`] saved (and the function
    /// values computed from the published outputs).
    pub fn restore_buffers(&mut self, snap: &BufferSnapshot) {
        self.set_time(snap.time);
        for ((b, u), y) in self.buffers.iter_mut().zip(&snap.u).zip(&snap.y) {
            b.u.copy_from_slice(u);
            b.y.copy_from_slice(y);
        }
        self.functions.eval_all(&self.buffers);
    }

    /// Saves every subsystem's state (reusing `ids` when given).
    pub fn save_states(&mut self, ids: &mut Vec<StateId>) -> Result<()> {
        if ids.len() == self.subsystems.len() {
            for (s, id) in self.subsystems.iter_mut().zip(ids.iter_mut()) {
                *id = s.save_state(Some(*id))?;
            }
        } else {
            ids.clear();
            for s in &mut self.subsystems {
                ids.push(s.save_state(None)?);
            }
        }
        Ok(())
    }

    /// Restores every subsystem's state.
    pub fn restore_states(&mut self, ids: &[StateId]) -> Result<()> {
        for (s, id) in self.subsystems.iter_mut().zip(ids) {
            s.restore_state(*id)?;
        }
        Ok(())
    }

    /// Frees saved states.
    pub fn free_states(&mut self, ids: &[StateId]) -> Result<()> {
        for (s, id) in self.subsystems.iter_mut().zip(ids) {
            s.free_state(*id)?;
        }
        Ok(())
    }

    /// Terminates every subsystem, in reverse order of declaration, and
    /// returns the first error (after trying all).
    pub fn terminate_all(&mut self) -> Result<()> {
        self.terminate_all_except(None)
    }

    /// Like [`System::terminate_all`], but leaves out subsystem `failed`:
    /// one whose FMU returned Error or Fatal, which the standard allows only
    /// to be freed (after Error) or not called at all (after Fatal).
    pub fn terminate_all_except(&mut self, failed: Option<usize>) -> Result<()> {
        let mut first = None;
        for (i, s) in self.subsystems.iter_mut().enumerate().rev() {
            if Some(i) == failed {
                tracing::debug!(
                    "subsystem '{}' failed: not terminated (only freed, unless Fatal)",
                    s.info().name
                );
                continue;
            }
            match s.terminate() {
                Ok(()) => tracing::debug!("subsystem '{}' terminated", s.info().name),
                Err(e) => {
                    tracing::warn!("terminating '{}': {e}", s.info().name);
                    first.get_or_insert(e);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// What the steps of a run of held macro steps ([`System::step_held_run`])
/// change, and what they go by.
/// The values a held run's step just read, as the published ones would
/// be: the step's outputs in the buffers of its side (the observed slots
/// below `hot`, which [`System::read_every_step`] extends to those the
/// quiet rows show).
struct HeldOutputs<'r, 'a, S> {
    held: &'r [(HeldFmu<'a, S>, &'a mut Vec<f64>)],
    side: usize,
}

impl<S: BoundStep> ObservedValues for HeldOutputs<'_, '_, S> {
    #[inline]
    fn observed(&self, subsystem: usize, slot: usize) -> f64 {
        self.held[subsystem].0.outputs(self.side)[slot]
    }
}

/// The published observed values of a system ([`System::published`]).
pub struct Published<'a>(&'a [Buffers]);

impl ObservedValues for Published<'_> {
    #[inline]
    fn observed(&self, subsystem: usize, slot: usize) -> f64 {
        self.0[subsystem].y[slot]
    }
}

/// FMUs whose held steps a run binds without allocating (`held_run_of`).
const HELD_INLINE: usize = 16;

struct HeldSteps<'r, 'a, S> {
    held: &'r mut [(HeldFmu<'a, S>, &'a mut Vec<f64>)],
    routes: &'r [Route],
    /// Each subsystem's routes, `routes[route_ranges[s]..route_ranges[s +
    /// 1]]` (by destination).
    route_ranges: &'r [usize],
    /// Gauss-Seidel: each subsystem's place in the order (empty: Jacobi).
    position: &'r [usize],
    base: TimeBase,
    h_ticks: i64,
    limit_abs: f64,
    first_sequence: u64,
    steps: u64,
    ticks: i64,
    t: f64,
    /// Steps completed.
    taken: u64,
    /// The end of the last completed step as the FMUs' instances have
    /// it: `t + h`, which is not always the next `t` to the last bit (NaN
    /// before the first).
    since: f64,
    /// The time stepped, the same for every FMU.
    stepped: f64,
    /// Where a step stopped: the subsystem, and whether it was its check
    /// of the values read (else its step).
    stopped: Option<(usize, bool)>,
}

impl<S: BoundStep> HeldSteps<'_, '_, S> {
    /// Jacobi steps until `after_step` or the run's count says to stop,
    /// or one stops. (A function of its own: the hot loop compiled apart
    /// from Gauss-Seidel's.)
    #[inline(never)]
    fn run_jacobi(&mut self, after_step: &mut impl AfterStep) {
        while self.step::<0>(after_step) && self.step::<1>(after_step) {}
    }

    /// [`HeldSteps::run_jacobi`] in Gauss-Seidel `order`.
    #[inline(never)]
    fn run_in_order(&mut self, order: &[usize], after_step: &mut impl AfterStep) {
        while self.step_in_order::<0>(order, after_step)
            && self.step_in_order::<1>(order, after_step)
        {}
    }

    /// The next macro step: from `t` by `h`, its end in ticks and seconds,
    /// and the watchdog's sequence word of its calls.
    #[inline(always)]
    fn next_step(&self) -> ((f64, f64), (i64, f64), u64) {
        // (No step is asked for after the last: the step before said.)
        debug_assert!(self.taken < self.steps);
        let next = self.ticks + self.h_ticks;
        let t_next = self.base.seconds(next);
        let word = (self.first_sequence + self.taken) << 8;
        ((self.t, t_next - self.t), (next, t_next), word)
    }

    /// The next macro step, its outputs read into the buffers of `SIDE`
    /// (0: `y_new`, 1: `y`; steps take turns), then `after_step` at its
    /// end: whether to go on.
    #[inline(always)]
    fn step<const SIDE: usize>(&mut self, after_step: &mut impl AfterStep) -> bool {
        let ((t, h), (next, t_next), word) = self.next_step();
        let n = self.held.len();
        let mut fmus = self.held.iter_mut();
        while let Some((fmu, _)) = fmus.next() {
            if !fmu.step(SIDE, t, h, self.since, word, self.limit_abs) {
                // (Its place from the FMUs left: no count kept per FMU.)
                self.stopped = Some((n - fmus.len() - 1, !fmu.failed()));
                return false;
            }
        }
        self.completed::<SIDE>((t, h), (next, t_next), true, after_step)
    }

    /// Every subsystem completed the step from `t` by `h` (ending at
    /// `next` ticks, `t_next` s), its values read into `SIDE`: counted,
    /// handed to `after_step` (whether to go on), and the inputs routed
    /// from them: after every step (`every_step`: Jacobi), or after the
    /// last (Gauss-Seidel, whose steps route each FMU's inputs just before
    /// its step), as the whole exchange after the step leaves them.
    #[inline(always)]
    fn completed<const SIDE: usize>(
        &mut self,
        (t, h): (f64, f64),
        (next, t_next): (i64, f64),
        every_step: bool,
        after_step: &mut impl AfterStep,
    ) -> bool {
        self.stepped += h;
        self.taken += 1;
        self.since = t + h;
        (self.ticks, self.t) = (next, t_next);
        let read = HeldOutputs {
            held: self.held,
            side: SIDE,
        };
        let go_on = after_step.after_step(t_next, next, &read) && self.taken < self.steps;
        if !go_on {
            for (fmu, u_end) in self.held.iter_mut() {
                copy_values(u_end, fmu.inputs_mut());
            }
        }
        if every_step || !go_on {
            for r in self.routes {
                let v = r.gain * self.held[r.src_sub].0.outputs(SIDE)[r.src_slot] + r.offset;
                self.held[r.dst_sub].0.inputs_mut()[r.dst_slot] = v;
            }
        }
        go_on
    }

    /// [`HeldSteps::step`] in Gauss-Seidel `order`: each subsystem's
    /// inputs routed, just before its step, from the values its
    /// predecessors in `order` read in this step (`SIDE`) and those the
    /// others read in the step before (the other side: before the first
    /// step, the published ones); the whole exchange only after the last
    /// step (each step routes its own inputs).
    #[inline(always)]
    fn step_in_order<const SIDE: usize>(
        &mut self,
        order: &[usize],
        after_step: &mut impl AfterStep,
    ) -> bool {
        let ((t, h), (next, t_next), word) = self.next_step();
        for (p, &s) in order.iter().enumerate() {
            let into = self.route_ranges[s]..self.route_ranges[s + 1];
            for r in &self.routes[into] {
                let side = if self.position[r.src_sub] < p {
                    SIDE
                } else {
                    1 - SIDE
                };
                let v = r.gain * self.held[r.src_sub].0.outputs(side)[r.src_slot] + r.offset;
                self.held[s].0.inputs_mut()[r.dst_slot] = v;
            }
            let fmu = &mut self.held[s].0;
            if !fmu.step(SIDE, t, h, self.since, word, self.limit_abs) {
                self.stopped = Some((s, !fmu.failed()));
                return false;
            }
        }
        self.completed::<SIDE>((t, h), (next, t_next), false, after_step)
    }

    /// Whether subsystem `j` steps before subsystem `s` (in subsystem
    /// order, or in the Gauss-Seidel order).
    fn before(&self, j: usize, s: usize) -> bool {
        match self.position {
            [] => j < s,
            position => position[j] < position[s],
        }
    }

    /// The side of the last step taken (or of the one that stopped).
    fn last_side(&self) -> usize {
        let last = if self.stopped.is_some() {
            self.taken
        } else {
            self.taken.wrapping_sub(1)
        };
        (last & 1) as usize
    }

    /// After a run that went to its end: every FMU's calls, time stepped
    /// and time as the steps one by one leave them, and the values the
    /// last step read published (in both buffers).
    fn end(&mut self) {
        let side = self.last_side();
        let last_sequence = self.first_sequence + self.taken - 1;
        let reached = (self.taken > 0).then_some(self.since);
        for (fmu, _) in self.held.iter_mut() {
            let (y_new, y) = fmu.output_buffers();
            if side == 0 {
                copy_values(y, y_new);
            } else {
                copy_values(y_new, y);
            }
            fmu.count(self.taken, last_sequence);
            fmu.set_stepped_time(self.stepped);
            if let Some(r) = reached {
                fmu.reached(r);
            }
        }
    }

    /// After the step from `self.t` by `h` stopped at subsystem `s` (at
    /// its check of the values read where `check`): every FMU's calls,
    /// time stepped, time, buffers and held inputs as that step, step by
    /// step, leaves them where it stopped; the outcome of `s`'s step.
    fn settle_stop(&mut self, s: usize, check: bool, h: f64) -> Result<StepOutcome> {
        let (side, t) = (self.last_side(), self.t);
        let last_sequence = self.first_sequence + self.taken - 1;
        let reached = (self.taken > 0).then_some(self.since);
        let mut outcome = Ok(StepOutcome::Completed);
        let before: Vec<bool> = (0..self.held.len()).map(|j| self.before(j, s)).collect();
        for (j, (fmu, _)) in self.held.iter_mut().enumerate() {
            fmu.set_stepped_time(self.stepped);
            // Whether this step read the outputs (into the buffer of
            // `side`, the values of the step before in the other).
            let read = if before[j] || (j == s && check) {
                fmu.count(self.taken + 1, last_sequence + 1);
                fmu.add_stepped_time(h);
                fmu.reached(t + h);
                true
            } else {
                fmu.count(self.taken, last_sequence);
                if j == s {
                    let (o, called_do_step, called_get) = fmu.failure(last_sequence + 1);
                    outcome = o;
                    if called_do_step {
                        fmu.add_stepped_time(h);
                    }
                    called_get
                } else {
                    if let Some(r) = reached {
                        fmu.reached(r);
                    }
                    false
                }
            };
            // As step by step: `y` the values of the last completed step,
            // `y_new` those this step read (where it read any; else those
            // of the last completed step too).
            let (y_new, y) = fmu.output_buffers();
            match (read, side) {
                (true, 0) => {}
                (true, _) => y_new.swap_with_slice(y),
                (false, 0) => copy_values(y_new, y),
                (false, _) => copy_values(y, y_new),
            }
        }
        // (The subsystems after `s` that the error keeps from stepping
        // keep an older `u_end`: nothing reads it once an error ended the
        // run, and no indicator that reads it lets a step be quiet.)
        // (In Gauss-Seidel every subsystem has the inputs it last set: those
        // after `s` set theirs in the step before, and route them anew just
        // before their own step.)
        let gauss_seidel = !self.position.is_empty();
        for (j, (fmu, u_end)) in self.held.iter_mut().enumerate() {
            if gauss_seidel || before[j] || j == s {
                copy_values(u_end, fmu.inputs_mut());
            }
        }
        outcome
    }
}

/// `dst.copy_from_slice(src)`, without a call to memcpy for the common
/// few values (the hot path copies a subsystem's inputs and outputs every
/// macro step, often none or one).
#[inline(always)]
fn copy_values(dst: &mut [f64], src: &[f64]) {
    match (dst, src) {
        ([], []) => {}
        ([d], [s]) => *d = *s,
        ([d0, d1], [s0, s1]) => (*d0, *d1) = (*s0, *s1),
        (dst, src) => dst.copy_from_slice(src),
    }
}

/// Every value within `limit` in magnitude (not NaN, not infinite where
/// the limit is finite): [`check_step_outputs`]'s one comparison per value.
#[inline(always)]
pub(crate) fn within(values: &[f64], limit: f64) -> bool {
    match values {
        [] => true,
        [v] => v.abs() <= limit,
        _ => values.iter().all(|v| v.abs() <= limit),
    }
}

/// Jacobi inline: each subsystem selected by `due` steps in turn by its
/// `h` from `t`, its inputs first held ([`Buffers::hold_inputs`]) when
/// `hold`. Stops at the first error.
#[inline]
fn jacobi_inline(
    subs: &mut [Box<dyn Subsystem>],
    bufs: &mut [Buffers],
    warned: &mut [Vec<bool>],
    (t, h, due): (f64, &[f64], &[bool]),
    policy: (NonFinitePolicy, f64),
    hold: bool,
) -> Result<()> {
    let n = subs.len().min(bufs.len()).min(warned.len());
    let n = n.min(h.len()).min(due.len());
    let mut error = None;
    for s in 0..n {
        if due[s] {
            let b = &mut bufs[s];
            if hold {
                b.hold_inputs();
            }
            if let Err(e) = step_subsystem(subs[s].as_mut(), b, t, h[s], policy, &mut warned[s]) {
                keep_error(&mut error, e)?;
            }
        }
    }
    error.map_or(Ok(()), Err)
}

/// Whether `kept` only says an FMU ended the simulation where `new` is
/// another error, which then is what the step reports.
fn ends_only(kept: &CoreError, new: &CoreError) -> bool {
    matches!(kept, CoreError::TerminatedByFmu { .. })
        && !matches!(new, CoreError::TerminatedByFmu { .. })
}

/// The error of one subsystem's step in a step of several: an FMU that
/// ended the simulation lets the others complete the step (so the last row
/// shows each at the end of the step in which it ended, as when they step
/// on the worker pool), the first such kept in `kept`; any other error
/// ends the step at once.
#[cold]
#[inline(never)]
pub(crate) fn keep_error(kept: &mut Option<CoreError>, e: CoreError) -> Result<()> {
    if matches!(e, CoreError::TerminatedByFmu { .. }) {
        kept.get_or_insert(e);
        Ok(())
    } else {
        Err(e)
    }
}

/// The step primitive: deliver prepared inputs, step, read, check.
#[inline(always)]
fn step_subsystem(
    sub: &mut dyn Subsystem,
    b: &mut Buffers,
    t: f64,
    h: f64,
    policy: (NonFinitePolicy, f64),
    warned: &mut [bool],
) -> Result<()> {
    if b.step_wall_time.is_some() {
        return step_subsystem_timed(sub, b, t, h, policy, warned);
    }
    if b.held {
        // Zero-order hold: set, step and read in one call.
        let hot = b.hot;
        if let Some(fmu) = sub.as_fmu() {
            // (The FMU's step inlined here: no dispatch on the hot path,
            // and its OK path goes on to the checks without a test of a
            // merged result. There the result is `Ok(Completed)`, which
            // owns nothing: forgotten, not dropped through a call.)
            let mut completed = false;
            let outcome = fmu.step_held_direct(&b.u_end, t, h, hot, &mut b.y_new, &mut completed);
            if completed {
                std::mem::forget(outcome);
                return check_step_outputs(fmu, b, t, h, policy, warned);
            }
            return step_ended_otherwise(fmu, b, outcome, (t, h), policy, warned);
        }
        return match sub.step_held(&b.u_end, t, h, hot, &mut b.y_new) {
            Ok(StepOutcome::Completed) => check_step_outputs(sub, b, t, h, policy, warned),
            other => step_ended_otherwise(sub, b, other, (t, h), policy, warned),
        };
    }
    set_step_inputs(sub, b, h)?;
    match sub.do_step(t, h) {
        Ok(StepOutcome::Completed) => read_step_outputs(sub, b, t, h, policy, warned),
        other => step_ended_otherwise(sub, b, other, (t, h), policy, warned),
    }
}

/// [`step_subsystem`] measuring its wall-clock time
/// ([`System::enable_step_timing`]).
#[cold]
#[inline(never)]
fn step_subsystem_timed(
    sub: &mut dyn Subsystem,
    b: &mut Buffers,
    t: f64,
    h: f64,
    policy: (NonFinitePolicy, f64),
    warned: &mut [bool],
) -> Result<()> {
    let started = Instant::now();
    let result = set_step_inputs(sub, b, h).and_then(|()| match sub.do_step(t, h) {
        Ok(StepOutcome::Completed) => read_step_outputs(sub, b, t, h, policy, warned),
        other => step_ended_otherwise(sub, b, other, (t, h), policy, warned),
    });
    if let Some(total) = &mut b.step_wall_time {
        *total += started.elapsed().as_secs_f64();
    }
    result
}

/// Sets the inputs of a step by `h` (values, then the derivative
/// orders the master delivers) and records the input values at its end.
#[inline]
fn set_step_inputs(sub: &mut dyn Subsystem, b: &mut Buffers, h: f64) -> Result<()> {
    if !b.u.is_empty() {
        if b.held {
            sub.set_inputs(&b.u_end)?;
        } else if b.deliver_orders == 0 {
            // Held constant over the step: it ends where it starts, so the
            // values set are those at its end.
            for (end, tay) in b.u_end.iter_mut().zip(&b.taylor) {
                *end = tay[0];
            }
            sub.set_inputs(&b.u_end)?;
        } else {
            for ((dst, end), tay) in b.scratch.iter_mut().zip(&mut b.u_end).zip(&b.taylor) {
                *dst = tay[0];
                *end = crate::extrapolation::eval_taylor(tay, h);
            }
            sub.set_inputs(&b.scratch)?;
            for order in 1..=b.deliver_orders.min(3) {
                for (dst, tay) in b.scratch.iter_mut().zip(&b.taylor) {
                    *dst = tay[order as usize];
                }
                sub.set_input_derivatives(order, &b.scratch)?;
            }
        }
    }
    Ok(())
}

/// After `doStep` returned `outcome`: a discarded or early-ended step is an
/// error; else reads the observed values into `y_new` and checks them.
#[inline]
fn finish_subsystem_step(
    sub: &mut dyn Subsystem,
    b: &mut Buffers,
    outcome: Result<StepOutcome>,
    t: f64,
    h: f64,
    policy: (NonFinitePolicy, f64),
    warned: &mut [bool],
) -> Result<()> {
    match outcome {
        Ok(StepOutcome::Completed) => read_step_outputs(sub, b, t, h, policy, warned),
        other => step_ended_otherwise(sub, b, other, (t, h), policy, warned),
    }
}

/// A step that did not complete as asked: one that ended at an event to
/// handle (FMI 3 event mode) reads its outputs there and records the
/// event's time in `b.event_at`; any other is [`step_not_completed`].
#[cold]
#[inline(never)]
fn step_ended_otherwise(
    sub: &mut dyn Subsystem,
    b: &mut Buffers,
    outcome: Result<StepOutcome>,
    (t, h): (f64, f64),
    policy: (NonFinitePolicy, f64),
    warned: &mut [bool],
) -> Result<()> {
    if let Ok(StepOutcome::EventHandlingNeeded {
        last_successful_time,
    }) = outcome
    {
        b.event_at = Some(last_successful_time);
        return read_step_outputs(sub, b, t, last_successful_time - t, policy, warned);
    }
    step_not_completed(sub, outcome, t, h)
}

/// After a completed step: reads the observed values into `y_new` and
/// checks them.
#[inline]
fn read_step_outputs(
    sub: &mut dyn Subsystem,
    b: &mut Buffers,
    t: f64,
    h: f64,
    (policy, limit): (NonFinitePolicy, f64),
    warned: &mut [bool],
) -> Result<()> {
    // The values the coupling needs (all of them, unless the system reads
    // only those: System::read_needed_only).
    sub.get_observed_first(b.hot, &mut b.y_new)?;
    check_step_outputs(sub, b, t, h, (policy, limit), warned)
}

/// Checks the observed values a completed step read into `y_new`.
#[inline]
fn check_step_outputs(
    sub: &mut dyn Subsystem,
    b: &mut Buffers,
    t: f64,
    h: f64,
    (policy, limit): (NonFinitePolicy, f64),
    warned: &mut [bool],
) -> Result<()> {
    let hot = b.hot;
    // One comparison per value on the hot path: NaN, infinite and too
    // large all fail it.
    let limit_abs = limit.min(f64::MAX);
    if b.y_new[..hot].iter().all(|v| v.abs() <= limit_abs) {
        return Ok(());
    }
    check_observed(
        sub,
        &b.y_new[..hot],
        (0, None),
        t + h,
        policy,
        limit,
        warned,
    )
}

/// A step that did not complete: its error, or the error a discarded,
/// early-ended or terminating step makes.
#[cold]
#[inline(never)]
fn step_not_completed(
    sub: &mut dyn Subsystem,
    outcome: Result<StepOutcome>,
    t: f64,
    h: f64,
) -> Result<()> {
    match outcome? {
        StepOutcome::Completed => Ok(()),
        StepOutcome::Discarded {
            last_successful_time,
        } => Err(CoreError::Discarded {
            subsystem: sub.info().name.clone(),
            function: sub.step_function(),
            t,
            h,
            last_successful_time,
            early_return: false,
            log: sub.take_recent_log(),
        }),
        StepOutcome::Terminated {
            last_successful_time,
        } => {
            // The run loop reads the values for the last row
            // (System::end_at_fmu_termination).
            Err(CoreError::TerminatedByFmu {
                subsystem: sub.info().name.clone(),
                function: sub.step_function(),
                t: last_successful_time,
            })
        }
        StepOutcome::EarlyReturn {
            last_successful_time,
        }
        | StepOutcome::EventHandlingNeeded {
            last_successful_time,
        } => Err(CoreError::Discarded {
            subsystem: sub.info().name.clone(),
            function: sub.step_function(),
            t,
            h,
            last_successful_time,
            early_return: true,
            log: sub.take_recent_log(),
        }),
    }
}

/// The slow path of [`step_subsystem`]'s check: which value failed, and
/// what the policy makes of it.
#[cold]
#[inline(never)]
fn check_observed(
    sub: &mut dyn Subsystem,
    y: &[f64],
    (first, read_since): (usize, Option<f64>),
    t_end: f64,
    policy: NonFinitePolicy,
    limit: f64,
    warned: &mut [bool],
) -> Result<()> {
    for (k, &v) in y.iter().enumerate().skip(first) {
        if v.abs() > limit && v.is_finite() {
            let info = sub.info();
            return Err(CoreError::Diverged {
                subsystem: info.name.clone(),
                variable: info.observed[k].name.clone(),
                value: v,
                limit,
                t: t_end,
                read_since,
            });
        }
        if !v.is_finite() {
            let info = sub.info();
            match policy {
                NonFinitePolicy::Error => {
                    return Err(CoreError::NonFinite {
                        subsystem: info.name.clone(),
                        variable: info.observed[k].name.clone(),
                        value: v,
                        t: t_end,
                        read_since,
                    });
                }
                NonFinitePolicy::Warn => {
                    if !warned[k] {
                        warned[k] = true;
                        tracing::warn!(
                            "subsystem '{}': variable '{}' is {v} at t = {t_end}",
                            info.name,
                            info.observed[k].name,
                        );
                    }
                }
            }
        }
    }
    Ok(())
}
