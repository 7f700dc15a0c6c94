//! Function blocks: master-side nodes of a system that are not FMUs and do
//! not step. Their outputs are computed from their inputs during every
//! exchange, in dependency order, so that a value passes through any number
//! of functions within the exchange it is published in (libcosim evaluates
//! its functions the same way, in `calculate_and_transfer` after every
//! macro step: `src/cosim/algorithm/fixed_step_algorithm.cpp`).
//!
//! Two kinds, those of libcosim's OSP system structures
//! (`include/cosim/function/vector_sum.hpp`):
//!
//! - [`FunctionKind::Sum`]: `out = in[0] + in[1] + ... + in[n-1]`, scalar
//!   reals (libcosim's OSP `Sum` is a vector sum of dimension 1);
//! - [`FunctionKind::VectorSum`]: `out[j] = in[0][j] + ... + in[n-1][j]`,
//!   `j < dimension`, reals or integers.
//!
//! The sum is taken left to right from `in[0]`, as libcosim's
//! `vector_sum_function::calculate` does, so the same inputs give the same
//! bits. Integers ride in `f64` slots like every discrete value, exact up
//! to 2^53.
//!
//! Ports are named as libcosim's OSP signals: a Sum has `in[0]` ...
//! `in[n-1]` and `out`; a VectorSum has `in[i][j]` and `out[j]` (signal
//! groups `in[i]` and `out`).
//!
//! Links feed function inputs from subsystem outputs or from other
//! functions' outputs, and subsystem inputs from function outputs, each
//! with a gain and offset like a [`Connection`]. `Functions::compile`
//! turns them into flat arrays of operations in dependency order: the hot
//! path is a loop over those arrays with no lookup or allocation.

use crate::error::{CoreError, Result};
use crate::subsystem::{Port, SubsystemInfo};
use crate::system::{Buffers, Connection};

/// What a function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum FunctionKind {
    /// `out = in[0] + ... + in[n-1]` (scalar; OSP `Sum`).
    Sum,
    /// `out[j] = in[0][j] + ... + in[n-1][j]` (OSP `VectorSum`).
    VectorSum,
}

/// The type of a function's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum NumericType {
    /// Floating point.
    Real,
    /// Integers (discrete values: held over steps, never extrapolated).
    Integer,
}

/// A function block of a system.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FunctionSpec {
    /// Unique name (among functions and subsystems), the prefix of its
    /// ports in traces and messages.
    pub name: String,
    /// What it computes.
    pub kind: FunctionKind,
    /// Number of inputs (libcosim's `inputCount`), at least 1.
    pub inputs: usize,
    /// Components of each input and of the output (1 for a Sum).
    pub dimension: usize,
    /// The type of its values.
    pub numeric: NumericType,
}

impl FunctionSpec {
    /// A scalar sum of `inputs` reals.
    pub fn sum(name: impl Into<String>, inputs: usize) -> Self {
        FunctionSpec {
            name: name.into(),
            kind: FunctionKind::Sum,
            inputs,
            dimension: 1,
            numeric: NumericType::Real,
        }
    }

    /// A sum of `inputs` vectors of `dimension` components.
    pub fn vector_sum(
        name: impl Into<String>,
        inputs: usize,
        dimension: usize,
        numeric: NumericType,
    ) -> Self {
        FunctionSpec {
            name: name.into(),
            kind: FunctionKind::VectorSum,
            inputs,
            dimension,
            numeric,
        }
    }

    /// Number of ports: every input component, then every output component.
    pub fn n_ports(&self) -> usize {
        (self.inputs + 1) * self.dimension
    }

    /// The port of component `j` of input `i`.
    pub fn input_port(&self, i: usize, j: usize) -> usize {
        i * self.dimension + j
    }

    /// The port of component `j` of the output.
    pub fn output_port(&self, j: usize) -> usize {
        self.inputs * self.dimension + j
    }

    /// True when `port` is an output.
    pub fn is_output(&self, port: usize) -> bool {
        port >= self.inputs * self.dimension && port < self.n_ports()
    }

    /// The name of `port`, as libcosim's OSP signal names: `in[i]` / `out`
    /// (Sum), `in[i][j]` / `out[j]` (VectorSum).
    pub fn port_name(&self, port: usize) -> String {
        let d = self.dimension.max(1);
        let (i, j) = (port / d, port % d);
        match (self.kind, self.is_output(port)) {
            (FunctionKind::Sum, false) => format!("in[{i}]"),
            (FunctionKind::Sum, true) => "out".to_string(),
            (FunctionKind::VectorSum, false) => format!("in[{i}][{j}]"),
            (FunctionKind::VectorSum, true) => format!("out[{j}]"),
        }
    }

    /// The port called `name` (see [`FunctionSpec::port_name`]).
    pub fn port_by_name(&self, name: &str) -> Option<usize> {
        let index = |s: &str| -> Option<usize> {
            let inner = s.strip_prefix('[')?.strip_suffix(']')?;
            // Plain decimal digits only: `in[+1]` and `in[01]` name nothing.
            if inner.is_empty()
                || !inner.bytes().all(|b| b.is_ascii_digit())
                || (inner.len() > 1 && inner.starts_with('0'))
            {
                return None;
            }
            inner.parse().ok()
        };
        let port = match self.kind {
            FunctionKind::Sum => {
                if name == "out" {
                    self.output_port(0)
                } else {
                    let i = index(name.strip_prefix("in")?)?;
                    (i < self.inputs).then(|| self.input_port(i, 0))?
                }
            }
            FunctionKind::VectorSum => {
                if let Some(rest) = name.strip_prefix("out") {
                    let j = index(rest)?;
                    (j < self.dimension).then(|| self.output_port(j))?
                } else {
                    let rest = name.strip_prefix("in")?;
                    let split = rest.find("][")? + 1;
                    let (i, j) = (index(&rest[..split])?, index(&rest[split..])?);
                    (i < self.inputs && j < self.dimension).then(|| self.input_port(i, j))?
                }
            }
        };
        Some(port)
    }
}

/// One end of a [`FunctionLink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum LinkEnd {
    /// A subsystem slot: an output slot as a source, an input slot as a
    /// destination.
    Slot {
        /// The subsystem.
        subsystem: usize,
        /// The slot.
        slot: usize,
    },
    /// A function port: an output as a source, an input as a destination.
    Port {
        /// The function (index in the system's functions).
        function: usize,
        /// The port ([`FunctionSpec::input_port`], [`FunctionSpec::output_port`]).
        port: usize,
    },
}

/// A connection to or from a function port: `to = gain * from + offset`.
/// (Connections between subsystems are [`Connection`]s.)
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct FunctionLink {
    /// The source: a subsystem output or a function output.
    pub from: LinkEnd,
    /// The destination: a function input or a subsystem input.
    pub to: LinkEnd,
    /// Linear map gain.
    pub gain: f64,
    /// Linear map offset.
    pub offset: f64,
    /// A signal: excluded from error estimation.
    pub signal: bool,
}

/// One operation of an evaluation, on the flat array of port values.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// `value[dst] = gain * y[sub][slot] + offset` (a published output).
    FromSlot {
        sub: usize,
        slot: usize,
        dst: usize,
        gain: f64,
        offset: f64,
    },
    /// `value[dst] = gain * value[src] + offset` (another function's output).
    FromPort {
        src: usize,
        dst: usize,
        gain: f64,
        offset: f64,
    },
    /// `value[out + j] = value[first + j] + value[first + d + j] + ...`,
    /// `n` terms, `j < d`, summed left to right.
    Sum {
        first: usize,
        n: usize,
        d: usize,
        out: usize,
    },
}

/// A function output feeding a subsystem input slot:
/// `u[dst] = gain * value[src] + offset`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortRoute {
    pub(crate) src: usize,
    pub(crate) dst_slot: usize,
    pub(crate) gain: f64,
    pub(crate) offset: f64,
}

/// The functions of a system, compiled: port values, the evaluation in
/// dependency order (for every exchange, and per subsystem for
/// Gauss-Seidel), and the routes from function outputs to subsystem inputs.
#[derive(Debug, Clone, Default)]
pub struct Functions {
    specs: Vec<FunctionSpec>,
    links: Vec<FunctionLink>,
    /// `values[base[f]..base[f] + n_ports]` are function `f`'s ports.
    base: Vec<usize>,
    /// Every port of every function, with its full name (`sum1.in[0]`).
    ports: Vec<Port>,
    /// The values of every port after the last evaluation.
    values: Vec<f64>,
    /// Time derivatives of the port values (exchange of derivatives).
    dvalues: Vec<f64>,
    /// Every function, in dependency order.
    ops: Vec<Op>,
    /// `sub_ops[sub_op_ranges[s]..sub_op_ranges[s + 1]]`: the functions
    /// upstream of subsystem `s`'s inputs, in dependency order.
    sub_ops: Vec<Op>,
    sub_op_ranges: Vec<usize>,
    /// `routes[route_ranges[s]..route_ranges[s + 1]]` feed subsystem `s`.
    pub(crate) routes: Vec<PortRoute>,
    pub(crate) route_ranges: Vec<usize>,
    /// Every dependency of a subsystem input on a subsystem output through
    /// functions, with the gain along the way.
    through: Vec<Connection>,
}

impl Functions {
    /// No functions, for a system of `n` subsystems.
    pub(crate) fn none(n: usize) -> Self {
        Functions {
            sub_op_ranges: vec![0; n + 1],
            route_ranges: vec![0; n + 1],
            ..Functions::default()
        }
    }

    /// Checks and compiles `specs` and `links` for subsystems `infos`
    /// (whose inputs `direct` already feeds: (subsystem, slot) pairs).
    ///
    /// # Errors
    ///
    /// [`CoreError::Config`] for an index that does not exist, a link from
    /// an input or to an output, a function input fed by no link or by
    /// two, a subsystem input fed twice, a cycle through functions only.
    pub(crate) fn compile(
        specs: Vec<FunctionSpec>,
        links: Vec<FunctionLink>,
        infos: &[&SubsystemInfo],
        direct: &[(usize, usize)],
    ) -> Result<Self> {
        let n = infos.len();
        let bad = |m: String| Err(CoreError::Config(m));
        let mut base = Vec::with_capacity(specs.len());
        let mut ports = Vec::new();
        for f in &specs {
            if f.inputs == 0 || f.dimension == 0 {
                return bad(format!(
                    "function '{}' needs at least one input and one component",
                    f.name
                ));
            }
            if f.kind == FunctionKind::Sum && (f.dimension != 1 || f.numeric != NumericType::Real) {
                return bad(format!(
                    "function '{}': a Sum is a scalar sum of reals",
                    f.name
                ));
            }
            base.push(ports.len());
            for p in 0..f.n_ports() {
                ports.push(Port {
                    name: format!("{}.{}", f.name, f.port_name(p)),
                    unit: None,
                    discrete: f.numeric == NumericType::Integer,
                });
            }
        }
        let value = |function: usize, port: usize| base[function] + port;
        let port_label = |function: usize, port: usize| {
            format!(
                "{}.{}",
                specs[function].name,
                specs[function].port_name(port)
            )
        };
        // Check every link; who feeds each function input and subsystem input.
        let mut feeder: Vec<Option<usize>> = vec![None; ports.len()];
        let mut fed_inputs: Vec<Vec<bool>> =
            infos.iter().map(|i| vec![false; i.inputs.len()]).collect();
        for &(s, slot) in direct {
            if let Some(x) = fed_inputs.get_mut(s).and_then(|v| v.get_mut(slot)) {
                *x = true;
            }
        }
        for (k, l) in links.iter().enumerate() {
            match l.from {
                LinkEnd::Slot { subsystem, slot } => {
                    if subsystem >= n || slot >= infos[subsystem].n_outputs {
                        return bad(format!(
                            "function link {l:?} reads a slot that is not an output"
                        ));
                    }
                }
                LinkEnd::Port { function, port } => {
                    if function >= specs.len() || !specs[function].is_output(port) {
                        return bad(format!(
                            "function link {l:?} reads a port that is not a function output"
                        ));
                    }
                }
            }
            match l.to {
                LinkEnd::Slot { subsystem, slot } => {
                    if matches!(l.from, LinkEnd::Slot { .. }) {
                        return bad(format!(
                            "function link {l:?} joins two subsystems: that is a Connection"
                        ));
                    }
                    let Some(fed) = fed_inputs.get_mut(subsystem).and_then(|v| v.get_mut(slot))
                    else {
                        return bad(format!(
                            "function link {l:?} feeds a slot that is not an input"
                        ));
                    };
                    if *fed {
                        return bad(format!(
                            "input '{}.{}' is fed twice",
                            infos[subsystem].name, infos[subsystem].inputs[slot].name
                        ));
                    }
                    *fed = true;
                }
                LinkEnd::Port { function, port } => {
                    if function >= specs.len()
                        || port >= specs[function].n_ports()
                        || specs[function].is_output(port)
                    {
                        return bad(format!(
                            "function link {l:?} feeds a port that is not a function input"
                        ));
                    }
                    let slot = &mut feeder[value(function, port)];
                    if slot.is_some() {
                        return bad(format!(
                            "function input '{}' is fed twice",
                            port_label(function, port)
                        ));
                    }
                    *slot = Some(k);
                }
            }
        }
        for (f, spec) in specs.iter().enumerate() {
            for p in 0..spec.inputs * spec.dimension {
                if feeder[value(f, p)].is_none() {
                    return bad(format!(
                        "function input '{}' has no connection",
                        port_label(f, p)
                    ));
                }
            }
        }
        // Dependency order (Kahn): f before g when an output of f feeds g.
        let m = specs.len();
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); m];
        let mut indegree = vec![0usize; m];
        for l in &links {
            if let (LinkEnd::Port { function: a, .. }, LinkEnd::Port { function: b, .. }) =
                (l.from, l.to)
            {
                succ[a].push(b);
                indegree[b] += 1;
            }
        }
        let mut order: Vec<usize> = (0..m).filter(|&f| indegree[f] == 0).collect();
        let mut k = 0;
        while k < order.len() {
            let f = order[k];
            k += 1;
            for &g in &succ[f] {
                indegree[g] -= 1;
                if indegree[g] == 0 {
                    order.push(g);
                }
            }
        }
        if order.len() < m {
            let cycle: Vec<&str> = (0..m)
                .filter(|&f| indegree[f] > 0)
                .map(|f| specs[f].name.as_str())
                .collect();
            return bad(format!(
                "a cycle through functions only, among: {} (a function's output feeds its own input through functions alone)",
                cycle.join(", ")
            ));
        }
        // The operations of one function: gather its inputs, then sum.
        let function_ops = |f: usize, out: &mut Vec<Op>| {
            let spec = &specs[f];
            for p in 0..spec.inputs * spec.dimension {
                let dst = value(f, p);
                let Some(l) = feeder[dst].map(|k| links[k]) else {
                    continue;
                };
                out.push(match l.from {
                    LinkEnd::Slot { subsystem, slot } => Op::FromSlot {
                        sub: subsystem,
                        slot,
                        dst,
                        gain: l.gain,
                        offset: l.offset,
                    },
                    LinkEnd::Port { function, port } => Op::FromPort {
                        src: value(function, port),
                        dst,
                        gain: l.gain,
                        offset: l.offset,
                    },
                });
            }
            out.push(Op::Sum {
                first: value(f, 0),
                n: spec.inputs,
                d: spec.dimension,
                out: value(f, spec.output_port(0)),
            });
        };
        let mut ops = Vec::new();
        for &f in &order {
            function_ops(f, &mut ops);
        }
        // Upstream functions of each function (itself included).
        let mut upstream: Vec<Vec<bool>> = vec![vec![false; m]; m];
        for &f in &order {
            upstream[f][f] = true;
            for l in &links {
                if let (LinkEnd::Port { function: a, .. }, LinkEnd::Port { function: b, .. }) =
                    (l.from, l.to)
                    && b == f
                {
                    let above = upstream[a].clone();
                    for (x, &y) in upstream[f].iter_mut().zip(&above) {
                        *x |= y;
                    }
                }
            }
        }
        // Routes to subsystem inputs, and per subsystem its functions.
        let mut to_subs: Vec<(usize, PortRoute, usize)> = Vec::new();
        for l in &links {
            if let (LinkEnd::Port { function, port }, LinkEnd::Slot { subsystem, slot }) =
                (l.from, l.to)
            {
                to_subs.push((
                    subsystem,
                    PortRoute {
                        src: value(function, port),
                        dst_slot: slot,
                        gain: l.gain,
                        offset: l.offset,
                    },
                    function,
                ));
            }
        }
        to_subs.sort_by_key(|(s, r, _)| (*s, r.dst_slot));
        let mut routes = Vec::with_capacity(to_subs.len());
        let mut route_ranges = vec![0usize; n + 1];
        let mut needs: Vec<Vec<bool>> = vec![vec![false; m]; n];
        for (s, r, f) in &to_subs {
            routes.push(*r);
            route_ranges[s + 1] += 1;
            for (x, &y) in needs[*s].iter_mut().zip(&upstream[*f]) {
                *x |= y;
            }
        }
        for s in 0..n {
            route_ranges[s + 1] += route_ranges[s];
        }
        let mut sub_ops = Vec::new();
        let mut sub_op_ranges = vec![0usize; n + 1];
        for s in 0..n {
            for &f in &order {
                if needs[s][f] {
                    function_ops(f, &mut sub_ops);
                }
            }
            sub_op_ranges[s + 1] = sub_ops.len();
        }
        let through = flatten(&specs, &links, &feeder, &base);
        let n_values = ports.len();
        Ok(Functions {
            specs,
            links,
            base,
            ports,
            values: vec![0.0; n_values],
            dvalues: vec![0.0; n_values],
            ops,
            sub_ops,
            sub_op_ranges,
            routes,
            route_ranges,
            through,
        })
    }

    /// The functions.
    pub fn specs(&self) -> &[FunctionSpec] {
        &self.specs
    }

    /// The links to and from function ports.
    pub fn links(&self) -> &[FunctionLink] {
        &self.links
    }

    /// True when there are no functions.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Every port of every function (named `<function>.<port>`), in the
    /// order of [`Functions::values`].
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }

    /// The index in [`Functions::values`] of `port` of `function`.
    pub fn value_index(&self, function: usize, port: usize) -> Option<usize> {
        let spec = self.specs.get(function)?;
        (port < spec.n_ports()).then(|| self.base[function] + port)
    }

    /// Every port's value after the last exchange.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Dependencies of subsystem inputs on subsystem outputs through
    /// functions (gain: the product along the path, summed over paths).
    pub(crate) fn through(&self) -> &[Connection] {
        &self.through
    }

    /// Evaluates every function from the published outputs.
    #[inline]
    pub(crate) fn eval_all(&mut self, bufs: &[Buffers]) {
        run(&self.ops, bufs, &mut self.values, false);
    }

    /// Evaluates the functions upstream of subsystem `s`'s inputs.
    #[inline]
    pub(crate) fn eval_for(&mut self, s: usize, bufs: &[Buffers]) {
        let ops = &self.sub_ops[self.sub_op_ranges[s]..self.sub_op_ranges[s + 1]];
        run(ops, bufs, &mut self.values, false);
    }

    /// Evaluates every function on the time derivatives of the outputs
    /// (`Buffers::dy`; offsets vanish).
    pub(crate) fn eval_derivatives(&mut self, bufs: &[Buffers]) {
        run(&self.ops, bufs, &mut self.dvalues, true);
    }

    /// The derivative values of the last [`Functions::eval_derivatives`].
    pub(crate) fn dvalues(&self) -> &[f64] {
        &self.dvalues
    }
}

/// Runs `ops` on `values`: from the published outputs, or (`derivatives`)
/// from their time derivatives without offsets.
#[inline]
fn run(ops: &[Op], bufs: &[Buffers], values: &mut [f64], derivatives: bool) {
    for op in ops {
        match *op {
            Op::FromSlot {
                sub,
                slot,
                dst,
                gain,
                offset,
            } => {
                values[dst] = if derivatives {
                    gain * bufs[sub].dy[slot]
                } else {
                    gain * bufs[sub].y[slot] + offset
                };
            }
            Op::FromPort {
                src,
                dst,
                gain,
                offset,
            } => {
                values[dst] = if derivatives {
                    gain * values[src]
                } else {
                    gain * values[src] + offset
                };
            }
            Op::Sum { first, n, d, out } => {
                for j in 0..d {
                    let mut acc = values[first + j];
                    for i in 1..n {
                        acc += values[first + i * d + j];
                    }
                    values[out + j] = acc;
                }
            }
        }
    }
}

/// Every (subsystem output -> subsystem input) dependency through
/// functions, as connections whose gain is the product of the gains along
/// the path (summed over parallel paths; a signal when any link on a path
/// is). Offsets are left out: they do not couple.
fn flatten(
    specs: &[FunctionSpec],
    links: &[FunctionLink],
    feeder: &[Option<usize>],
    base: &[usize],
) -> Vec<Connection> {
    let graph = Graph {
        specs,
        links,
        feeder,
        base,
    };
    let mut out: Vec<Connection> = Vec::new();
    let mut found = Vec::new();
    for l in links {
        let (LinkEnd::Port { function, port }, LinkEnd::Slot { subsystem, slot }) = (l.from, l.to)
        else {
            continue;
        };
        found.clear();
        let j = port - specs[function].output_port(0);
        graph.sources(function, j, (l.gain, l.signal), &mut found);
        for &(fs, fslot, g, sig) in &found {
            match out.iter_mut().find(|c| {
                (c.from_subsystem, c.from_slot, c.to_subsystem, c.to_slot)
                    == (fs, fslot, subsystem, slot)
            }) {
                Some(c) => {
                    c.gain += g;
                    c.signal |= sig;
                }
                None => out.push(Connection {
                    from_subsystem: fs,
                    from_slot: fslot,
                    to_subsystem: subsystem,
                    to_slot: slot,
                    gain: g,
                    offset: 0.0,
                    signal: sig,
                }),
            }
        }
    }
    out
}

/// The links of checked functions, for walking upstream.
struct Graph<'a> {
    specs: &'a [FunctionSpec],
    links: &'a [FunctionLink],
    /// Per port value: the link feeding it.
    feeder: &'a [Option<usize>],
    base: &'a [usize],
}

impl Graph<'_> {
    /// The subsystem outputs component `j` of function `f`'s output sums,
    /// as (subsystem, slot, gain, signal), `(gain, signal)` being those of
    /// the path so far.
    fn sources(
        &self,
        f: usize,
        j: usize,
        (gain, signal): (f64, bool),
        out: &mut Vec<(usize, usize, f64, bool)>,
    ) {
        let spec = &self.specs[f];
        for i in 0..spec.inputs {
            let Some(l) = self.feeder[self.base[f] + spec.input_port(i, j)].map(|k| self.links[k])
            else {
                continue;
            };
            let path = (gain * l.gain, signal || l.signal);
            match l.from {
                LinkEnd::Slot { subsystem, slot } => out.push((subsystem, slot, path.0, path.1)),
                LinkEnd::Port { function, port } => {
                    let jj = port - self.specs[function].output_port(0);
                    self.sources(function, jj, path, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]

    use cosim_fmi::StepOutcome;

    use super::*;
    use crate::master::{FixedStep, Master, Scheme};
    use crate::subsystem::{CallCounters, RollbackTo, StateId, Subsystem};
    use crate::system::{System, SystemSpec};

    /// A toy subsystem: `n_in` inputs, `n_out` outputs; after a step to
    /// `t + h` its outputs are `out[k] = gain[k] * (t + h) + sum of its
    /// inputs` (no direct feed-through declared).
    struct Toy {
        info: SubsystemInfo,
        gain: Vec<f64>,
        u: Vec<f64>,
        y: Vec<f64>,
    }

    fn port(name: &str) -> Port {
        Port {
            name: name.into(),
            unit: None,
            discrete: false,
        }
    }

    fn toy(name: &str, n_in: usize, gain: &[f64]) -> Box<dyn Subsystem> {
        let n_out = gain.len();
        Box::new(Toy {
            info: SubsystemInfo {
                name: name.into(),
                inputs: (0..n_in).map(|i| port(&format!("u{i}"))).collect(),
                observed: (0..n_out).map(|k| port(&format!("y{k}"))).collect(),
                n_outputs: n_out,
                feedthrough: vec![Vec::new(); n_out],
                can_interpolate_inputs: false,
                max_output_derivative_order: 0,
                can_get_set_state: false,
                can_serialize_state: false,
                can_handle_variable_step: true,
                provides_directional_derivatives: false,
                has_state: false,
                origin: "test".into(),
            },
            gain: gain.to_vec(),
            u: vec![0.0; n_in],
            y: vec![0.0; n_out],
        })
    }

    impl Subsystem for Toy {
        fn info(&self) -> &SubsystemInfo {
            &self.info
        }
        fn enter_initialization(&mut self, _t0: f64, _t_stop: Option<f64>) -> Result<()> {
            Ok(())
        }
        fn allow_rollback(&mut self, _to: RollbackTo) -> Result<()> {
            Ok(())
        }
        fn exit_initialization(&mut self) -> Result<()> {
            Ok(())
        }
        fn set_inputs(&mut self, values: &[f64]) -> Result<()> {
            self.u.copy_from_slice(values);
            Ok(())
        }
        fn set_input_derivatives(&mut self, _order: u32, _values: &[f64]) -> Result<()> {
            Ok(())
        }
        fn do_step(&mut self, t: f64, h: f64) -> Result<StepOutcome> {
            let sum: f64 = self.u.iter().sum();
            for (y, g) in self.y.iter_mut().zip(&self.gain) {
                *y = g * (t + h) + sum;
            }
            Ok(StepOutcome::Completed)
        }
        fn get_observed(&mut self, values: &mut [f64]) -> Result<()> {
            values.copy_from_slice(&self.y);
            Ok(())
        }
        fn get_output_derivatives(&mut self, _order: u32, values: &mut [f64]) -> Result<()> {
            values.copy_from_slice(&self.gain);
            Ok(())
        }
        fn save_state(&mut self, _reuse: Option<StateId>) -> Result<StateId> {
            Ok(StateId(0))
        }
        fn restore_state(&mut self, _id: StateId) -> Result<()> {
            Ok(())
        }
        fn free_state(&mut self, _id: StateId) -> Result<()> {
            Ok(())
        }
        fn terminate(&mut self) -> Result<()> {
            Ok(())
        }
        fn counters(&self) -> CallCounters {
            CallCounters::default()
        }
    }

    fn system(subsystems: Vec<Box<dyn Subsystem>>, connections: Vec<Connection>) -> System {
        System::new(SystemSpec {
            step_multiple: vec![1; subsystems.len()],
            subsystems,
            connections,
            bonds: Vec::new(),
            nonfinite: crate::system::NonFinitePolicy::Error,
            threads: 1,
        })
        .unwrap()
    }

    fn slot(subsystem: usize, slot: usize) -> LinkEnd {
        LinkEnd::Slot { subsystem, slot }
    }

    fn at(function: usize, port: usize) -> LinkEnd {
        LinkEnd::Port { function, port }
    }

    fn link(from: LinkEnd, to: LinkEnd) -> FunctionLink {
        FunctionLink {
            from,
            to,
            gain: 1.0,
            offset: 0.0,
            signal: false,
        }
    }

    fn publish(sys: &mut System, s: usize, y: &[f64]) {
        sys.buffers_mut(s).y.copy_from_slice(y);
    }

    #[test]
    fn port_names_are_libcosims_signal_names() {
        let s = FunctionSpec::sum("s", 3);
        let names: Vec<String> = (0..s.n_ports()).map(|p| s.port_name(p)).collect();
        assert_eq!(names, ["in[0]", "in[1]", "in[2]", "out"]);
        for (p, n) in names.iter().enumerate() {
            assert_eq!(s.port_by_name(n), Some(p));
        }
        let v = FunctionSpec::vector_sum("v", 2, 3, NumericType::Real);
        let names: Vec<String> = (0..v.n_ports()).map(|p| v.port_name(p)).collect();
        assert_eq!(
            names,
            [
                "in[0][0]", "in[0][1]", "in[0][2]", "in[1][0]", "in[1][1]", "in[1][2]", "out[0]",
                "out[1]", "out[2]"
            ]
        );
        for (p, n) in names.iter().enumerate() {
            assert_eq!(v.port_by_name(n), Some(p));
        }
        for bad in ["in[3]", "in", "out[0]", "in[01]", "in[+1]", "in[0][0]", "x"] {
            assert_eq!(s.port_by_name(bad), None, "{bad}");
        }
        for bad in [
            "in[2][0]",
            "in[0][3]",
            "out",
            "out[3]",
            "in[0]",
            "in[0][0]x",
        ] {
            assert_eq!(v.port_by_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_sum_feeds_its_value_in_the_same_exchange() {
        // a.y0 + b.y0 (gain 2 on b) -> sum -> c.u0 (offset 1).
        let mut sys = system(
            vec![
                toy("a", 0, &[1.0]),
                toy("b", 0, &[1.0]),
                toy("c", 1, &[0.0]),
            ],
            Vec::new(),
        );
        let mut to_c = link(at(0, 2), slot(2, 0));
        to_c.offset = 1.0;
        let mut from_b = link(slot(1, 0), at(0, 1));
        from_b.gain = 2.0;
        sys.add_functions(
            vec![FunctionSpec::sum("sum", 2)],
            vec![link(slot(0, 0), at(0, 0)), from_b, to_c],
        )
        .unwrap();
        publish(&mut sys, 0, &[0.1]);
        publish(&mut sys, 1, &[0.2]);
        assert!(sys.exchange_all());
        let out = 0.1 + 2.0 * 0.2;
        assert_eq!(sys.functions().values(), &[0.1, 0.4, out]);
        assert_eq!(sys.buffers()[2].u[0].to_bits(), (out + 1.0).to_bits());
        assert!(!sys.exchange_all(), "nothing changed");
        // The dependencies seen by the analyses: c.u0 on a.y0 (1) and b.y0 (2).
        let through: Vec<(usize, usize, f64)> = sys
            .couplings()
            .iter()
            .map(|c| (c.from_subsystem, c.to_subsystem, c.gain))
            .collect();
        assert_eq!(through, [(0, 2, 1.0), (1, 2, 2.0)]);
    }

    #[test]
    fn the_sum_is_taken_left_to_right_from_the_first_input() {
        // (1e16 + 1) + 1 = 1e16 in doubles, 1e16 + (1 + 1) would not be.
        let mut sys = system(
            vec![
                toy("a", 0, &[0.0]),
                toy("b", 0, &[0.0]),
                toy("c", 0, &[0.0]),
                toy("d", 1, &[0.0]),
            ],
            Vec::new(),
        );
        sys.add_functions(
            vec![FunctionSpec::sum("s", 3)],
            vec![
                link(slot(0, 0), at(0, 0)),
                link(slot(1, 0), at(0, 1)),
                link(slot(2, 0), at(0, 2)),
                link(at(0, 3), slot(3, 0)),
            ],
        )
        .unwrap();
        publish(&mut sys, 0, &[1e16]);
        publish(&mut sys, 1, &[1.0]);
        publish(&mut sys, 2, &[1.0]);
        sys.exchange_all();
        assert_eq!(sys.buffers()[3].u[0], (1e16 + 1.0) + 1.0);
        assert_eq!(sys.buffers()[3].u[0], 1e16);
    }

    #[test]
    fn a_chain_of_functions_is_evaluated_in_dependency_order() {
        // Declared downstream first: f0 = f1.out + c.y0, f1 = a.y0 + b.y0,
        // f0.out -> d.u0 and (through f2 = f0.out, one input) -> d.u1.
        let mut sys = system(
            vec![
                toy("a", 0, &[0.0]),
                toy("b", 0, &[0.0]),
                toy("c", 0, &[0.0]),
                toy("d", 2, &[0.0]),
            ],
            Vec::new(),
        );
        let mut scaled = link(at(0, 2), at(2, 0));
        scaled.gain = 10.0;
        sys.add_functions(
            vec![
                FunctionSpec::sum("f0", 2),
                FunctionSpec::sum("f1", 2),
                FunctionSpec::sum("f2", 1),
            ],
            vec![
                link(at(1, 2), at(0, 0)),
                link(slot(2, 0), at(0, 1)),
                link(slot(0, 0), at(1, 0)),
                link(slot(1, 0), at(1, 1)),
                link(at(0, 2), slot(3, 0)),
                scaled,
                link(at(2, 1), slot(3, 1)),
            ],
        )
        .unwrap();
        publish(&mut sys, 0, &[1.0]);
        publish(&mut sys, 1, &[2.0]);
        publish(&mut sys, 2, &[4.0]);
        sys.exchange_all();
        assert_eq!(sys.buffers()[3].u, [7.0, 70.0]);
        // Gauss-Seidel: exchanging into d alone evaluates what d needs.
        publish(&mut sys, 0, &[8.0]);
        assert!(sys.exchange_into(3));
        assert_eq!(sys.buffers()[3].u, [14.0, 140.0]);
        let names: Vec<&str> = sys
            .functions()
            .ports()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "f0.in[0]", "f0.in[1]", "f0.out", "f1.in[0]", "f1.in[1]", "f1.out", "f2.in[0]",
                "f2.out"
            ]
        );
        // d.u1 = 10 (a + b + c): gains multiply along the path.
        let mut through: Vec<(usize, usize, usize, f64)> = sys
            .couplings()
            .iter()
            .map(|c| (c.from_subsystem, c.to_subsystem, c.to_slot, c.gain))
            .collect();
        through.sort_by(|x, y| x.partial_cmp(y).unwrap());
        assert_eq!(
            through,
            [
                (0, 3, 0, 1.0),
                (0, 3, 1, 10.0),
                (1, 3, 0, 1.0),
                (1, 3, 1, 10.0),
                (2, 3, 0, 1.0),
                (2, 3, 1, 10.0)
            ]
        );
    }

    #[test]
    fn exchange_into_evaluates_only_the_functions_upstream() {
        // sa = a.y0 -> c.u0, sb = b.y0 -> d.u0: exchanging into c leaves sb.
        let mut sys = system(
            vec![
                toy("a", 0, &[0.0]),
                toy("b", 0, &[0.0]),
                toy("c", 1, &[0.0]),
                toy("d", 1, &[0.0]),
            ],
            Vec::new(),
        );
        sys.add_functions(
            vec![FunctionSpec::sum("sa", 1), FunctionSpec::sum("sb", 1)],
            vec![
                link(slot(0, 0), at(0, 0)),
                link(slot(1, 0), at(1, 0)),
                link(at(0, 1), slot(2, 0)),
                link(at(1, 1), slot(3, 0)),
            ],
        )
        .unwrap();
        publish(&mut sys, 0, &[3.0]);
        publish(&mut sys, 1, &[5.0]);
        sys.exchange_into(2);
        assert_eq!(sys.functions().values(), &[3.0, 3.0, 0.0, 0.0]);
        assert_eq!(sys.buffers()[3].u, [0.0]);
        sys.exchange_all();
        assert_eq!(sys.functions().values(), &[3.0, 3.0, 5.0, 5.0]);
    }

    #[test]
    fn a_vector_sum_adds_componentwise_reals_and_integers() {
        for numeric in [NumericType::Real, NumericType::Integer] {
            // a and b have 3 outputs, c 3 inputs: c.u = a.y + b.y.
            let mut sys = system(
                vec![
                    toy("a", 0, &[0.0; 3]),
                    toy("b", 0, &[0.0; 3]),
                    toy("c", 3, &[0.0]),
                ],
                Vec::new(),
            );
            let v = FunctionSpec::vector_sum("v", 2, 3, numeric);
            let mut links = Vec::new();
            for j in 0..3 {
                links.push(link(slot(0, j), at(0, v.input_port(0, j))));
                links.push(link(slot(1, j), at(0, v.input_port(1, j))));
                links.push(link(at(0, v.output_port(j)), slot(2, j)));
            }
            sys.add_functions(vec![v], links).unwrap();
            publish(&mut sys, 0, &[1.0, 2.0, 3.0]);
            publish(&mut sys, 1, &[10.0, -20.0, 9_007_199_254_740_000.0]);
            sys.exchange_all();
            assert_eq!(sys.buffers()[2].u, [11.0, -18.0, 9_007_199_254_740_003.0]);
            let discrete = sys.functions().ports().iter().all(|p| p.discrete);
            assert_eq!(discrete, numeric == NumericType::Integer);
        }
    }

    #[test]
    fn derivatives_pass_through_functions_without_offsets() {
        let mut sys = system(
            vec![
                toy("a", 0, &[2.0]),
                toy("b", 0, &[3.0]),
                toy("c", 1, &[0.0]),
            ],
            Vec::new(),
        );
        let mut to_c = link(at(0, 2), slot(2, 0));
        to_c.gain = 0.5;
        to_c.offset = 100.0;
        sys.add_functions(
            vec![FunctionSpec::sum("s", 2)],
            vec![link(slot(0, 0), at(0, 0)), link(slot(1, 0), at(0, 1)), to_c],
        )
        .unwrap();
        for s in 0..2 {
            sys.read_output_derivatives(s).unwrap();
        }
        sys.exchange_derivatives_all();
        assert_eq!(sys.buffers()[2].du, [2.5]);
    }

    #[test]
    fn gauss_seidel_sees_the_fresh_sum_without_a_step_delay() {
        // a.y = t, b.y = 2 t; c.u = a.y + b.y through a sum; c.y = c.u.
        // Gauss-Seidel a, b, c: c steps from the sum of a's and b's new
        // outputs, so after the step to t c.y = 3 t exactly.
        let mut sys = system(
            vec![
                toy("a", 0, &[1.0]),
                toy("b", 0, &[2.0]),
                toy("c", 1, &[0.0]),
            ],
            Vec::new(),
        );
        sys.add_functions(
            vec![FunctionSpec::sum("s", 2)],
            vec![
                link(slot(0, 0), at(0, 0)),
                link(slot(1, 0), at(0, 1)),
                link(at(0, 2), slot(2, 0)),
            ],
        )
        .unwrap();
        sys.initialize(0.0, Some(1.0)).unwrap();
        let mut master = FixedStep::new(0.25, Scheme::GaussSeidel(vec![0, 1, 2]), 0);
        master.start(&mut sys).unwrap();
        for k in 1..=4 {
            master.advance(&mut sys, 1.0).unwrap();
            let t = f64::from(k) * 0.25;
            assert_eq!(sys.time(), t);
            assert_eq!(sys.buffers()[2].y[0], t + 2.0 * t);
            assert_eq!(sys.functions().values()[2], t + 2.0 * t);
        }
        // Jacobi: c steps from the sum of the outputs at the step's start.
        let mut sys = system(
            vec![
                toy("a", 0, &[1.0]),
                toy("b", 0, &[2.0]),
                toy("c", 1, &[0.0]),
            ],
            Vec::new(),
        );
        sys.add_functions(
            vec![FunctionSpec::sum("s", 2)],
            vec![
                link(slot(0, 0), at(0, 0)),
                link(slot(1, 0), at(0, 1)),
                link(at(0, 2), slot(2, 0)),
            ],
        )
        .unwrap();
        sys.initialize(0.0, Some(1.0)).unwrap();
        let mut master = FixedStep::new(0.25, Scheme::Jacobi, 0);
        master.start(&mut sys).unwrap();
        for k in 1..=4 {
            master.advance(&mut sys, 1.0).unwrap();
            let t0 = f64::from(k - 1) * 0.25;
            assert_eq!(sys.buffers()[2].y[0], t0 + 2.0 * t0);
        }
    }

    #[test]
    fn links_that_do_not_fit_are_refused() {
        let make = || {
            system(
                vec![toy("a", 1, &[0.0]), toy("b", 1, &[0.0])],
                vec![Connection {
                    from_subsystem: 0,
                    from_slot: 0,
                    to_subsystem: 1,
                    to_slot: 0,
                    gain: 1.0,
                    offset: 0.0,
                    signal: false,
                }],
            )
        };
        let err = |specs: Vec<FunctionSpec>, links: Vec<FunctionLink>| {
            make().add_functions(specs, links).unwrap_err().to_string()
        };
        let e = err(
            vec![FunctionSpec::sum("s", 2)],
            vec![link(slot(0, 0), at(0, 0))],
        );
        assert!(
            e.contains("function input 's.in[1]' has no connection"),
            "{e}"
        );
        let e = err(
            vec![FunctionSpec::sum("s", 1)],
            vec![link(slot(0, 0), at(0, 0)), link(slot(1, 0), at(0, 0))],
        );
        assert!(e.contains("'s.in[0]' is fed twice"), "{e}");
        let e = err(
            vec![FunctionSpec::sum("s", 1)],
            vec![link(slot(0, 0), at(0, 0)), link(at(0, 1), slot(1, 0))],
        );
        assert!(e.contains("input 'b.u0' is fed twice"), "{e}");
        let e = err(
            vec![FunctionSpec::sum("s", 1), FunctionSpec::sum("t", 2)],
            vec![
                link(at(1, 2), at(0, 0)),
                link(at(0, 1), at(1, 0)),
                link(slot(0, 0), at(1, 1)),
            ],
        );
        assert!(
            e.contains("a cycle through functions only, among: s, t"),
            "{e}"
        );
        let e = err(
            vec![FunctionSpec::sum("s", 1)],
            vec![link(at(0, 0), slot(0, 0))],
        );
        assert!(e.contains("not a function output"), "{e}");
        let e = err(
            vec![FunctionSpec::sum("s", 1)],
            vec![link(slot(0, 0), at(0, 1))],
        );
        assert!(e.contains("not a function input"), "{e}");
    }
}
