//! Strong coupling: every subsystem of the level is a Model Exchange FMU,
//! and one integrator advances all their continuous states as one ODE,
//! with the connections between them resolved inside every evaluation of
//! the derivatives ([`cosim_fmi::StronglyCoupled`]). What it computes is
//! the monolithic solution the co-simulation papers measure their coupling
//! error against, to the solver's tolerance; nested, it is one subsystem
//! to the level above (its exposed inputs held over each outer step).
//!
//! The macro step is only the communication grid: the values are
//! exchanged exactly at every evaluation, so the step changes what is
//! traced, not the solution. Connections are evaluated in feed-through
//! order (an output is read after every input it depends on directly was
//! set); an algebraic loop through direct feed-through is refused, naming
//! its variables.

use cosim_fmi::{
    InternalConnection, MemberShape, ModelExchangeStatistics, SolverSettings, StepOutcome,
    StronglyCoupled as Group,
};

use crate::error::{CoreError, Result};
use crate::master::{Master, MasterStats, StepReport};
use crate::system::{Connection, System};

/// The strongly coupled master of a level.
pub struct StronglyCoupled {
    /// Communication step, s.
    step: f64,
    settings: SolverSettings,
    group: Option<Group>,
    /// Where the group is to go on from after a restore: the next time
    /// event it knew of (a copy has no group; [`Master::clone_box`]).
    resume: Option<Option<f64>>,
    stats: MasterStats,
    /// The solver's figures of groups replaced by a restore.
    solver_before: ModelExchangeStatistics,
    /// The subsystems with inputs no connection of the level feeds (a
    /// nest's exposed inputs): set from their buffers at each step.
    fed_from_outside: Vec<usize>,
}

impl StronglyCoupled {
    /// A master with communication step `step` and the group's `settings`.
    pub fn new(step: f64, settings: SolverSettings) -> Self {
        StronglyCoupled {
            step,
            settings,
            group: None,
            resume: None,
            stats: MasterStats::default(),
            solver_before: ModelExchangeStatistics::default(),
            fed_from_outside: Vec::new(),
        }
    }

    /// The group of `sys`'s subsystems, its connections in evaluation order.
    fn build(&mut self, sys: &mut System) -> Result<Group> {
        refuse_what_it_cannot_drive(sys)?;
        self.fed_from_outside = (0..sys.len())
            .filter(|&s| {
                let n_inputs = sys.subsystems()[s].info().inputs.len();
                (0..n_inputs).any(|slot| {
                    !sys.connections()
                        .iter()
                        .any(|c| c.to_subsystem == s && c.to_slot == slot)
                })
            })
            .collect();
        let mut shapes = Vec::with_capacity(sys.len());
        for s in 0..sys.len() {
            let Some(fmu) = sys.subsystem_mut(s).as_fmu() else {
                return Err(not_a_member(sys, s));
            };
            shapes.push(MemberShape::of(fmu.instance_mut())?);
        }
        let connections = evaluation_order(sys)?
            .into_iter()
            .map(|c| internal_connection(sys, c))
            .collect::<Result<Vec<_>>>()?;
        Ok(Group::new(
            "strongly coupled group",
            self.settings,
            &shapes,
            connections,
        )?)
    }

    fn solver_statistics(&self) -> ModelExchangeStatistics {
        let now = self
            .group
            .as_ref()
            .map(Group::statistics)
            .unwrap_or_default();
        self.solver_before.plus(&now)
    }
}

/// Runs `f` on the group with every member's binding lent to it, and takes
/// them back whatever `f` returns.
fn with_members<R>(sys: &mut System, group: &mut Group, f: impl FnOnce(&mut Group) -> R) -> R {
    for s in 0..sys.len() {
        if let Some(fmu) = sys.subsystem_mut(s).as_fmu() {
            group.lend(s, fmu.instance_mut());
        }
    }
    let result = f(group);
    for s in 0..sys.len() {
        if let Some(fmu) = sys.subsystem_mut(s).as_fmu() {
            group.take_back(s, fmu.instance_mut());
        }
    }
    result
}

fn not_a_member(sys: &System, s: usize) -> CoreError {
    CoreError::Config(format!(
        "the strongly coupled master integrates Model Exchange FMUs in this process: subsystem '{}' is not one (a nested system, an FMU in a host process, or a subsystem fed from an input file or events)",
        sys.subsystems()[s].info().name
    ))
}

/// Function blocks and step multiples have no place in one ODE.
fn refuse_what_it_cannot_drive(sys: &System) -> Result<()> {
    if !sys.functions().is_empty() {
        return Err(CoreError::Config(
            "the strongly coupled master resolves connections between FMUs inside the ODE: function blocks ([[functions]]) are not supported there".into(),
        ));
    }
    if let Some(s) = sys.step_multiples().iter().position(|&k| k != 1) {
        return Err(CoreError::Config(format!(
            "the strongly coupled master integrates every subsystem together: subsystem '{}' has step_multiple {}",
            sys.subsystems()[s].info().name,
            sys.step_multiples()[s]
        )));
    }
    Ok(())
}

fn port_name(sys: &System, s: usize, name: &str) -> String {
    format!("{}.{name}", sys.subsystems()[s].info().name)
}

fn connection_name(sys: &System, c: &Connection) -> String {
    let (from, to) = (
        sys.subsystems()[c.from_subsystem].info(),
        sys.subsystems()[c.to_subsystem].info(),
    );
    format!(
        "{} -> {}",
        port_name(sys, c.from_subsystem, &from.observed[c.from_slot].name),
        port_name(sys, c.to_subsystem, &to.inputs[c.to_slot].name)
    )
}

/// The system's connections, each after every connection into an input
/// its source output depends on directly; an algebraic loop is an error
/// naming the connections around it.
fn evaluation_order(sys: &System) -> Result<Vec<Connection>> {
    let connections = sys.connections();
    let n = connections.len();
    // before[j]: the connections that must come before connection j.
    let before: Vec<Vec<usize>> = connections
        .iter()
        .map(|c| {
            let info = sys.subsystems()[c.from_subsystem].info();
            let depends = info
                .feedthrough
                .get(c.from_slot)
                .cloned()
                .unwrap_or_default();
            connections
                .iter()
                .enumerate()
                .filter(|(_, d)| d.to_subsystem == c.from_subsystem && depends.contains(&d.to_slot))
                .map(|(i, _)| i)
                .collect()
        })
        .collect();
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    while order.len() < n {
        let ready: Vec<usize> = (0..n)
            .filter(|&j| !placed[j] && before[j].iter().all(|&i| placed[i]))
            .collect();
        if ready.is_empty() {
            // Those left wait on a loop; the loop is what remains once
            // every connection nothing left waits on is pruned.
            let mut left: Vec<usize> = (0..n).filter(|&j| !placed[j]).collect();
            loop {
                let kept: Vec<usize> = left
                    .iter()
                    .copied()
                    .filter(|&j| left.iter().any(|&k| before[k].contains(&j)))
                    .collect();
                if kept.len() == left.len() {
                    break;
                }
                left = kept;
            }
            let left: Vec<String> = left
                .into_iter()
                .map(|j| connection_name(sys, &connections[j]))
                .collect();
            return Err(CoreError::Config(format!(
                "an algebraic loop through direct feed-through: {} (the strongly coupled master resolves connections in feed-through order and does not solve loops; break the loop with an output that is a state)",
                left.join(", ")
            )));
        }
        for j in ready {
            placed[j] = true;
            order.push(connections[j]);
        }
    }
    Ok(order)
}

/// A connection in value references of the members' FMUs.
fn internal_connection(sys: &mut System, c: Connection) -> Result<InternalConnection> {
    let name = connection_name(sys, &c);
    let vr = |sys: &mut System, s: usize, slot: usize, input: bool| -> Result<u32> {
        let found = sys.subsystem_mut(s).as_fmu().and_then(|f| {
            if input {
                f.float_input_vr(slot)
            } else {
                f.float_observed_vr(slot)
            }
        });
        found.ok_or_else(|| {
            CoreError::Config(format!(
                "the strongly coupled master connects Float64 (FMI 2 Real) scalar variables only: connection {name}"
            ))
        })
    };
    Ok(InternalConnection {
        from: (
            c.from_subsystem,
            vr(sys, c.from_subsystem, c.from_slot, false)?,
        ),
        to: (c.to_subsystem, vr(sys, c.to_subsystem, c.to_slot, true)?),
        gain: c.gain,
        offset: c.offset,
        name,
    })
}

impl Master for StronglyCoupled {
    fn name(&self) -> &'static str {
        "strongly-coupled"
    }

    fn start(&mut self, sys: &mut System) -> Result<()> {
        let mut group = self.build(sys)?;
        let t0 = sys.time();
        with_members(sys, &mut group, |g| g.start(t0))?;
        self.group = Some(group);
        // The initial event iteration may have changed outputs.
        sys.read_publish_exchange_all()
    }

    fn advance(&mut self, sys: &mut System, t_stop: f64) -> Result<StepReport> {
        let mut group = match self.group.take() {
            Some(g) => g,
            None => {
                let Some(next_event) = self.resume else {
                    return Err(CoreError::Config(
                        "strongly coupled master used before start".into(),
                    ));
                };
                let mut g = self.build(sys)?;
                let t = sys.time();
                with_members(sys, &mut g, |g| g.resume(t, next_event))?;
                self.resume = None;
                g
            }
        };
        let base = sys.time_base();
        let (now, t) = (sys.ticks(), sys.time());
        let stop = base.round(t_stop);
        let h_ticks = base.round(self.step).max(1);
        let mut end = now.saturating_add(h_ticks).min(stop);
        // No sliver of a step left before the stop.
        if ((stop - end) as f64) < 1e-6 * h_ticks as f64 {
            end = stop;
        }
        let t_end = base.seconds(end);
        // Inputs from outside the level (a nest's exposed inputs), held
        // over the step; the connected ones are set at every evaluation.
        for &s in &self.fed_from_outside {
            sys.set_inputs_of(s)?;
        }
        let outcome = with_members(sys, &mut group, |g| g.step(t, t_end - t));
        let terminating = group.terminating_member();
        self.group = Some(group);
        match outcome? {
            StepOutcome::Completed => {}
            StepOutcome::Terminated {
                last_successful_time,
            } => {
                let s = terminating.unwrap_or(0);
                return Err(CoreError::TerminatedByFmu {
                    subsystem: sys.subsystems()[s].info().name.clone(),
                    function: "the event iteration (fmi2NewDiscreteStates / fmi3UpdateDiscreteStates) or fmi*CompletedIntegratorStep",
                    t: last_successful_time,
                });
            }
            other => {
                return Err(CoreError::Config(format!(
                    "the strongly coupled group ended its step with {other:?}"
                )));
            }
        }
        sys.read_publish_exchange_all()?;
        sys.set_time_at(end, t_end);
        self.stats.macro_steps += 1;
        self.stats.solver = Some(self.solver_statistics());
        Ok(StepReport::simple(t, t_end - t))
    }

    fn stats(&self) -> MasterStats {
        MasterStats {
            solver: Some(self.solver_statistics()),
            ..self.stats
        }
    }

    fn clone_box(&self) -> Box<dyn Master> {
        // The integrator's history is not copied: a restored copy restarts
        // it from the states the members' FMUs restored (a new initial
        // value problem from the same point).
        Box::new(StronglyCoupled {
            step: self.step,
            settings: self.settings,
            group: None,
            resume: Some(match &self.group {
                Some(g) => g.next_event_time(),
                None => self.resume.flatten(),
            }),
            stats: self.stats,
            solver_before: self.solver_statistics(),
            fed_from_outside: self.fed_from_outside.clone(),
        })
    }
}
