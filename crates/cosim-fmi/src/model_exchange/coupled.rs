//! Several Model Exchange FMUs integrated as one ODE (strong coupling): the
//! states of all members side by side in one integrator, the connections
//! between them resolved inside every evaluation of the derivatives and
//! event indicators (the monolithic system the co-simulation papers
//! compare against), events of any member handled by all of them at once.
//!
//! Each evaluation at `(t, x)`: every member gets the time and its states;
//! then the connections, in an order where each source output is read
//! after every input it depends on directly was set (the caller sorts them
//! by feed-through and refuses algebraic loops); then the derivatives or
//! indicators of every member. An event of one member is an event of the
//! group: all enter Event Mode and update their discrete states, the
//! connections are propagated after each round (a member's new outputs are
//! the others' new inputs), until no member needs another round and no
//! connected value changed.

use cosim_ode::{OdeProblem, StepAction};

use crate::error::{FmiError, Result};
use crate::ffi::{DiscreteStatesUpdate, Interface, StepOutcome};
use crate::instance::{Inner, Instance};

use super::ode::{DrivenModel, FmuOde};
use super::{InputPolynomials, ModelExchangeDriver, ModelExchangeStatistics, SolverSettings};

/// Rounds of one event iteration before the group gives up: connected
/// values that keep changing are a discrete loop that does not settle.
const MAX_EVENT_ROUNDS: u32 = 1000;

/// A connection between two members: `to = gain * from + offset`, Float64
/// (FMI 2 Real) variables given by value reference.
#[derive(Debug, Clone, PartialEq)]
pub struct InternalConnection {
    /// (member, value reference) of the output read.
    pub from: (usize, u32),
    /// (member, value reference) of the input set.
    pub to: (usize, u32),
    /// Scales the value read.
    pub gain: f64,
    /// Added to the scaled value.
    pub offset: f64,
    /// `a.y -> b.u`, for messages.
    pub name: String,
}

/// One member inside the group's model.
struct Member {
    ode: FmuOde,
    /// Its states and event indicators in the group's vectors.
    states: std::ops::Range<usize>,
    indicators: std::ops::Range<usize>,
}

/// The members as one model for the integrator.
pub(crate) struct CoupledOde {
    name: String,
    members: Vec<Member>,
    /// In evaluation order.
    connections: Vec<InternalConnection>,
    /// The value each connection last set (bitwise change detection).
    last: Vec<f64>,
    n: usize,
    nz: usize,
    step_event: bool,
    terminate: bool,
    /// The first member that asked to end the simulation.
    terminating: Option<usize>,
    /// Rounds of the event iteration in progress.
    rounds: u32,
}

impl CoupledOde {
    /// Reads each connection's source and sets its destination, in order.
    /// True when a value set differs from the one set before.
    fn propagate(&mut self) -> Result<bool> {
        let mut changed = false;
        let mut v = [0.0];
        for (c, last) in self.connections.iter().zip(self.last.iter_mut()) {
            self.members[c.from.0].ode.get_f64(&[c.from.1], &mut v)?;
            let u = c.gain * v[0] + c.offset;
            self.members[c.to.0].ode.set_f64(&[c.to.1], &[u])?;
            changed |= u.to_bits() != last.to_bits();
            *last = u;
        }
        Ok(changed)
    }

    fn note_termination(&mut self, k: usize, terminate: bool) {
        if terminate {
            self.terminate = true;
            self.terminating.get_or_insert(k);
        }
    }
}

impl OdeProblem for CoupledOde {
    type Error = FmiError;

    fn dimension(&self) -> usize {
        self.n
    }

    fn roots(&self) -> usize {
        self.nz
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<()> {
        DrivenModel::set_point(self, t, x)?;
        for m in &mut self.members {
            m.ode.derivatives(&mut dx[m.states.clone()])?;
        }
        Ok(())
    }

    fn root_functions(&mut self, t: f64, x: &[f64], g: &mut [f64]) -> Result<()> {
        DrivenModel::set_point(self, t, x)?;
        for m in &mut self.members {
            m.ode.event_indicators(&mut g[m.indicators.clone()])?;
        }
        Ok(())
    }

    // (No Jacobian from the members' directional derivatives: they miss the
    // terms through the connections. Difference quotients of the whole.)

    fn step_completed(&mut self, t: f64, x: &[f64]) -> Result<StepAction> {
        DrivenModel::set_point(self, t, x)?;
        let mut stop = false;
        for k in 0..self.members.len() {
            let (event, terminate) = self.members[k].ode.completed_step_at_point()?;
            self.step_event |= event;
            self.note_termination(k, terminate);
            stop |= event || terminate;
        }
        Ok(if stop {
            StepAction::Stop
        } else {
            StepAction::Continue
        })
    }
}

impl DrivenModel for CoupledOde {
    fn name(&self) -> &str {
        &self.name
    }

    fn set_point(&mut self, t: f64, x: &[f64]) -> Result<()> {
        for m in &mut self.members {
            m.ode.set_point(t, &x[m.states.clone()])?;
        }
        self.propagate()?;
        Ok(())
    }

    fn take_requests(&mut self) -> (bool, bool) {
        (
            std::mem::take(&mut self.step_event),
            std::mem::take(&mut self.terminate),
        )
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        self.rounds = 0;
        for m in &mut self.members {
            m.ode.enter_event_mode()?;
        }
        Ok(())
    }

    fn enter_continuous_time_mode(&mut self) -> Result<()> {
        self.rounds = 0;
        for m in &mut self.members {
            m.ode.enter_continuous_time_mode()?;
        }
        Ok(())
    }

    /// One round: every member updates its discrete states, then the
    /// connections carry the new outputs; another round is needed when a
    /// member asks for one or a connected value changed.
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        self.rounds += 1;
        let mut all = DiscreteStatesUpdate::default();
        for k in 0..self.members.len() {
            let u = self.members[k].ode.update_discrete_states()?;
            all.discrete_states_need_update |= u.discrete_states_need_update;
            all.nominals_changed |= u.nominals_changed;
            all.values_changed |= u.values_changed;
            if u.terminate_simulation {
                all.terminate_simulation = true;
                self.terminating.get_or_insert(k);
            }
            all.next_event_time = match (all.next_event_time, u.next_event_time) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let changed = self.propagate()?;
        all.discrete_states_need_update |= changed;
        if all.discrete_states_need_update && self.rounds >= MAX_EVENT_ROUNDS {
            let still = if changed {
                let first = self
                    .connections
                    .iter()
                    .map(|c| c.name.as_str())
                    .next()
                    .unwrap_or("");
                format!("connected values still change (connections from {first} on)")
            } else {
                "a member still asks for another round".to_string()
            };
            return Err(FmiError::InvalidArgument {
                instance: self.name.clone(),
                function: "the event iteration of a strongly coupled group",
                reason: format!("no end after {MAX_EVENT_ROUNDS} rounds: {still}"),
            });
        }
        Ok(all)
    }

    fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        for m in &mut self.members {
            m.ode.get_continuous_states(&mut x[m.states.clone()])?;
        }
        Ok(())
    }

    fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()> {
        for m in &mut self.members {
            if !m.states.is_empty() {
                m.ode.get_nominals(&mut nominals[m.states.clone()])?;
            }
        }
        Ok(())
    }

    fn start_inputs(&mut self, _t0: f64) {}
}

/// What the group needs to know of a member instance.
#[derive(Debug, Clone)]
pub struct MemberShape {
    n: usize,
    nz: usize,
    nominals: Vec<f64>,
    needs_completed_step: bool,
}

impl MemberShape {
    /// The shape of `instance`: a Model Exchange instance without an
    /// integrator of its own (of an FMU seen through
    /// `Fmu::as_strongly_coupled_member`).
    ///
    /// # Errors
    ///
    /// Any other instance.
    pub fn of(instance: &Instance) -> Result<Self> {
        if instance.interface() != Interface::ModelExchange || instance.me.is_some() {
            return Err(FmiError::InvalidArgument {
                instance: instance.name().to_string(),
                function: "a strongly coupled group",
                reason: "a member must be a Model Exchange instance integrated by the group, not by an integrator of its own".into(),
            });
        }
        let md = instance.model_description();
        let n = instance.number_of_continuous_states();
        let mut nominals = md.continuous_state_nominals();
        nominals.resize(n, 1.0);
        Ok(MemberShape {
            n,
            nz: instance.number_of_event_indicators(),
            nominals,
            needs_completed_step: md
                .model_exchange
                .as_ref()
                .is_some_and(|m| m.needs_completed_integrator_step),
        })
    }
}

/// Model Exchange instances integrated as one ODE by one of `cosim`'s
/// integrators: a strongly coupled group.
///
/// The group does not own its members: each driver call
/// ([`StronglyCoupled::start`], [`StronglyCoupled::step`], ...) needs every
/// member's binding lent to it first ([`StronglyCoupled::lend`]) and gives
/// it back after ([`StronglyCoupled::take_back`]), so that between calls
/// the instances are read and written as any other.
pub struct StronglyCoupled {
    driver: ModelExchangeDriver<CoupledOde>,
}

impl std::fmt::Debug for StronglyCoupled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StronglyCoupled")
            .field("name", &self.driver.integrator.problem().name)
            .finish()
    }
}

impl StronglyCoupled {
    /// A group named `name` of `members` ([`MemberShape::of`] each), the
    /// `connections` between them in evaluation order.
    ///
    /// # Errors
    ///
    /// A connection naming a member
    /// that does not exist, solver settings the integrator refuses.
    pub fn new(
        name: &str,
        settings: SolverSettings,
        members: &[MemberShape],
        connections: Vec<InternalConnection>,
    ) -> Result<Self> {
        let mut n = 0;
        let mut nz = 0;
        let mut nominals = Vec::new();
        let mut group = Vec::with_capacity(members.len());
        for shape in members {
            nominals.extend_from_slice(&shape.nominals);
            let ode = FmuOde::new(
                shape.n,
                shape.nz,
                InputPolynomials::new(Vec::new()),
                shape.needs_completed_step,
                None,
            );
            group.push(Member {
                ode,
                states: n..n + shape.n,
                indicators: nz..nz + shape.nz,
            });
            n += shape.n;
            nz += shape.nz;
        }
        if let Some(c) = connections
            .iter()
            .find(|c| c.from.0 >= members.len() || c.to.0 >= members.len())
        {
            return Err(FmiError::InvalidArgument {
                instance: name.to_string(),
                function: "a strongly coupled group",
                reason: format!(
                    "connection {} names a member the group does not have",
                    c.name
                ),
            });
        }
        let model = CoupledOde {
            name: name.to_string(),
            members: group,
            last: vec![f64::NAN; connections.len()],
            connections,
            n,
            nz,
            step_event: false,
            terminate: false,
            terminating: None,
            rounds: 0,
        };
        let driver = ModelExchangeDriver::with_model(settings, model, &nominals, "[master.solver]")
            .map_err(|e| match e {
                FmiError::InvalidArgument {
                    function, reason, ..
                } => FmiError::InvalidArgument {
                    instance: name.to_string(),
                    function,
                    reason,
                },
                other => other,
            })?;
        Ok(StronglyCoupled { driver })
    }

    /// Lends member `k`'s binding to the group (the instance is unusable
    /// until [`StronglyCoupled::take_back`]).
    pub fn lend(&mut self, k: usize, instance: &mut Instance) {
        let raw = std::mem::replace(&mut instance.inner, Inner::Lent);
        if let Some(m) = self.driver.model_mut().members.get_mut(k) {
            m.ode.inner = raw;
        } else {
            instance.inner = raw;
        }
    }

    /// Gives member `k`'s binding back to its instance.
    pub fn take_back(&mut self, k: usize, instance: &mut Instance) {
        if let Some(m) = self.driver.model_mut().members.get_mut(k) {
            instance.inner = std::mem::replace(&mut m.ode.inner, Inner::Lent);
        }
    }

    /// After every member's `ExitInitializationMode` (members lent): the
    /// event iteration of the whole group, Continuous-Time Mode, the
    /// integrator started at `t0`.
    pub fn start(&mut self, t0: f64) -> Result<()> {
        self.driver.start(t0)
    }

    /// Goes on from `t` with the states the members have now (members
    /// lent, in Continuous-Time Mode), the next time event at
    /// `next_event_time`: after the members' states were restored.
    pub fn resume(&mut self, t: f64, next_event_time: Option<f64>) -> Result<()> {
        let d = &mut self.driver;
        d.time = t;
        d.next_event_time = next_event_time;
        d.terminated = false;
        d.event_pending = false;
        d.pending = None;
        d.model_mut().enter_continuous_time_mode_again();
        d.restart(t)?;
        d.sync(t)
    }

    /// Integrates the group from `t` to `t + h` (members lent): events
    /// handled on the way; at the end every member shows its values at
    /// `t + h` (an earlier time where one ended the simulation).
    pub fn step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
        self.driver.step(t, h)
    }

    /// The next time event announced by a member.
    pub fn next_event_time(&self) -> Option<f64> {
        self.driver.next_event_time
    }

    /// The member that asked to end the simulation, if one did.
    pub fn terminating_member(&self) -> Option<usize> {
        self.driver.integrator.problem().terminating
    }

    /// The whole run's figures of the group's integrator.
    pub fn statistics(&self) -> ModelExchangeStatistics {
        self.driver.statistics()
    }
}

impl CoupledOde {
    /// The members' time is set again at the next evaluation (their
    /// states were restored).
    fn enter_continuous_time_mode_again(&mut self) {
        for m in &mut self.members {
            m.ode.forget_time();
        }
        self.last.fill(f64::NAN);
    }
}
