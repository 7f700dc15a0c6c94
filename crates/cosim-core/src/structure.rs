//! Structural checks before a run (docs/algorithms.md, arnold2013 sec. 2):
//! direct feed-through per output and algebraic loops, i.e. cycles in the
//! graph whose vertices are the coupled inputs and whose edges run from an
//! input to every input fed by an output that depends on it directly.

use crate::subsystem::SubsystemInfo;
use crate::system::{Connection, System};

/// A figure of a message, to 4 significant digits in its shortest form.
fn sig(x: f64) -> String {
    crate::text::significant(x, 4)
}

/// An algebraic loop: the variables along the cycle, as
/// `subsystem.variable`, starting and ending at the same input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgebraicLoop {
    /// Variable names along the cycle (input, output, input, output, ...).
    pub path: Vec<String>,
}

impl std::fmt::Display for AlgebraicLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path.join(" -> "))
    }
}

/// Finds the algebraic loops of a coupled system (one representative cycle
/// per strongly connected component of the input graph).
pub fn algebraic_loops(infos: &[&SubsystemInfo], connections: &[Connection]) -> Vec<AlgebraicLoop> {
    // Vertex ids for inputs: offset per subsystem.
    let mut offset = Vec::with_capacity(infos.len() + 1);
    offset.push(0usize);
    for info in infos {
        offset.push(offset[offset.len() - 1] + info.inputs.len());
    }
    let n = offset[infos.len()];
    let vertex = |s: usize, i: usize| offset[s] + i;
    let owner = |v: usize| -> (usize, usize) {
        let s = offset.partition_point(|&o| o <= v) - 1;
        (s, v - offset[s])
    };
    // Edges: input (s, a) -> input (d, b) via output (s, o) when o depends
    // on a and (s, o) feeds (d, b). Remember the output for the message.
    let mut edges: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for c in connections {
        let info = infos[c.from_subsystem];
        if let Some(deps) = info.feedthrough.get(c.from_slot) {
            for &a in deps {
                edges[vertex(c.from_subsystem, a)]
                    .push((vertex(c.to_subsystem, c.to_slot), c.from_slot));
            }
        }
    }
    // Tarjan's strongly connected components (iterative).
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut sccs: Vec<Vec<usize>> = Vec::new();
    let mut next_index = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut ei)) = call.last_mut() {
            if *ei < edges[v].len() {
                let w = edges[v][*ei].0;
                *ei += 1;
                if index[w] == usize::MAX {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    let self_loop = edges[v].iter().any(|&(w, _)| w == v);
                    if comp.len() > 1 || self_loop {
                        sccs.push(comp);
                    }
                }
            }
        }
    }
    // For each component, walk a cycle inside it and name it.
    let mut loops = Vec::new();
    for comp in sccs {
        let in_comp = |v: usize| comp.contains(&v);
        let start = *comp.iter().min().unwrap_or(&0);
        let mut path_vertices = vec![start];
        let mut path_outputs = Vec::new();
        let mut v = start;
        let mut visited = vec![false; n];
        visited[v] = true;
        while let Some(&(w, out)) = edges[v].iter().find(|&&(w, _)| in_comp(w)) {
            path_outputs.push((owner(v).0, out));
            if visited[w] {
                // Cut the prefix before the first occurrence of w.
                if let Some(pos) = path_vertices.iter().position(|&x| x == w) {
                    path_vertices.drain(..pos);
                    path_outputs.drain(..pos);
                }
                path_vertices.push(w);
                break;
            }
            visited[w] = true;
            path_vertices.push(w);
            v = w;
        }
        let mut names = Vec::new();
        for (k, &pv) in path_vertices.iter().enumerate() {
            let (s, i) = owner(pv);
            names.push(format!("{}.{}", infos[s].name, infos[s].inputs[i].name));
            if let Some(&(os, o)) = path_outputs.get(k) {
                names.push(format!("{}.{}", infos[os].name, infos[os].observed[o].name));
            }
        }
        loops.push(AlgebraicLoop { path: names });
    }
    loops
}

/// A Gauss-Seidel order derived from the connection graph: producers before
/// consumers (strongly connected groups in topological order); inside a
/// group that feeds itself, subsystems whose coupled outputs have no direct
/// feed-through first (their new outputs do not wait on new inputs), then
/// declaration order.
pub fn gauss_seidel_order(infos: &[&SubsystemInfo], connections: &[Connection]) -> Vec<usize> {
    let n = infos.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for c in connections {
        if c.from_subsystem != c.to_subsystem && !succ[c.from_subsystem].contains(&c.to_subsystem) {
            succ[c.from_subsystem].push(c.to_subsystem);
        }
    }
    // Tarjan emits components in reverse topological order.
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comps: Vec<Vec<usize>> = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut call = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut ei)) = call.last_mut() {
            if *ei < succ[v].len() {
                let w = succ[v][*ei];
                *ei += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(p, _)) = call.last() {
                    low[p] = low[p].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comps.push(comp);
                }
            }
        }
    }
    let coupled_feedthrough = |s: usize| {
        connections
            .iter()
            .filter(|c| c.from_subsystem == s)
            .any(|c| {
                infos[s]
                    .feedthrough
                    .get(c.from_slot)
                    .is_some_and(|d| !d.is_empty())
            })
    };
    let mut order = Vec::with_capacity(n);
    for mut comp in comps.into_iter().rev() {
        comp.sort_by_key(|&s| (coupled_feedthrough(s), s));
        order.extend(comp);
    }
    order
}

/// Zero-stability of one co-simulation level (hafner eqs. 3, 10-12).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LevelStability {
    /// The level: `"top"` or the dotted path of a nested system.
    pub level: String,
    /// The verdict.
    pub verdict: Verdict,
    /// `||D||_inf` of the coupling matrix `D` (eq. 3), when every entry is
    /// known (directional derivatives).
    pub inf_norm: Option<f64>,
    /// Spectral radius of `D`, when known (0 for a structurally nilpotent
    /// `D`).
    pub spectral_radius: Option<f64>,
    /// A readable explanation.
    pub explanation: String,
}

/// What can be said about a level's zero-stability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    /// No loop through direct feed-through: `D` is nilpotent, `rho(D) = 0`.
    StructurallyZero,
    /// `||D||_inf <= 1`: zero-stable on this level and on every level
    /// nested in it (eq. 11).
    ProvablyZeroStable,
    /// `rho(D) <= 1` but `||D||_inf > 1`: zero-stable here, to be checked
    /// anew on nested levels.
    ZeroStable,
    /// `rho(D) > 1`, or a loop whose gains are unknown.
    NeedsAttention,
}

impl std::fmt::Display for LevelStability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.level, self.explanation)
    }
}

/// Zero-stability of `sys` and, recursively, of every nested system in it.
/// The subsystems must be initialised (directional derivatives are taken
/// at the current point).
pub fn zero_stability(sys: &mut System, level: &str) -> crate::Result<Vec<LevelStability>> {
    let mut out = Vec::new();
    // Coupled outputs (rows/columns of D) and, per subsystem, its Jacobian.
    let mut outputs: Vec<(usize, usize)> = sys
        .couplings()
        .iter()
        .map(|c| (c.from_subsystem, c.from_slot))
        .collect();
    outputs.sort_unstable();
    outputs.dedup();
    let n = outputs.len();
    let mut jacobians: Vec<Option<Vec<f64>>> = Vec::with_capacity(sys.len());
    for s in 0..sys.len() {
        let info = sys.subsystems()[s].info();
        let (no, ni) = (info.n_outputs, info.inputs.len());
        let mut j = vec![0.0; no * ni];
        let known = no == 0 || ni == 0 || sys.subsystem_mut(s).feedthrough_jacobian(&mut j)?;
        jacobians.push(known.then_some(j));
    }
    // D[a][b] = sum_k J_i[o][k] * gain(b -> (i, k)); S: the structure.
    let mut d = vec![0.0; n * n];
    let mut structure = vec![false; n * n];
    let mut unknown = false;
    for (a, &(i, o)) in outputs.iter().enumerate() {
        let info = sys.subsystems()[i].info();
        let ni = info.inputs.len();
        for c in sys.couplings().iter().filter(|c| c.to_subsystem == i) {
            let k = c.to_slot;
            let depends = info
                .feedthrough
                .get(o)
                .is_some_and(|deps| deps.contains(&k));
            if !depends {
                continue;
            }
            let Some(b) = outputs
                .iter()
                .position(|&x| x == (c.from_subsystem, c.from_slot))
            else {
                continue;
            };
            structure[a * n + b] = true;
            match &jacobians[i] {
                Some(j) => d[a * n + b] += j[o * ni + k] * c.gain,
                None => unknown = true,
            }
        }
    }
    let has_loop = has_cycle(n, &structure);
    let inf_norm = (!unknown).then(|| {
        (0..n)
            .map(|a| (0..n).map(|b| d[a * n + b].abs()).sum::<f64>())
            .fold(0.0, f64::max)
    });
    let (verdict, spectral_radius, explanation) = if !has_loop {
        (
            Verdict::StructurallyZero,
            Some(0.0),
            format!(
                "structurally zero: no loop through direct feed-through, rho(D) = 0{}",
                inf_norm
                    .map(|x| format!(", ||D||inf = {}", sig(x)))
                    .unwrap_or_default()
            ),
        )
    } else {
        match inf_norm {
            Some(norm) if norm <= 1.0 => (
                Verdict::ProvablyZeroStable,
                Some(spectral_radius(n, &d)),
                format!(
                    "provably zero-stable: ||D||inf = {} <= 1 (also for every nested level)",
                    sig(norm)
                ),
            ),
            Some(norm) => {
                let rho = spectral_radius(n, &d);
                if rho <= 1.0 {
                    (
                        Verdict::ZeroStable,
                        Some(rho),
                        format!(
                            "zero-stable: rho(D) = {} <= 1, but ||D||inf = {} > 1, so nested levels must be checked on their own",
                            sig(rho),
                            sig(norm)
                        ),
                    )
                } else {
                    (
                        Verdict::NeedsAttention,
                        Some(rho),
                        format!(
                            "needs attention: rho(D) = {} > 1, the coupling amplifies an algebraic loop",
                            sig(rho)
                        ),
                    )
                }
            }
            None => (
                Verdict::NeedsAttention,
                None,
                "needs attention: a loop through direct feed-through whose gains are unknown (an FMU on it provides no directional derivatives)".to_string(),
            ),
        }
    };
    out.push(LevelStability {
        level: level.to_string(),
        verdict,
        inf_norm,
        spectral_radius,
        explanation,
    });
    for s in 0..sys.len() {
        // Nested subsystems are named by their full dotted path.
        let name = sys.subsystems()[s].info().name.clone();
        if let Some(inner) = sys.subsystem_mut(s).as_system() {
            out.extend(zero_stability(inner, &name)?);
        }
    }
    Ok(out)
}

fn has_cycle(n: usize, edges: &[bool]) -> bool {
    // Kahn's algorithm: a cycle remains when not every vertex is removed.
    let mut indegree = vec![0usize; n];
    for a in 0..n {
        for b in 0..n {
            if edges[a * n + b] {
                indegree[b] += 1;
            }
        }
    }
    let mut queue: Vec<usize> = (0..n).filter(|&v| indegree[v] == 0).collect();
    let mut removed = 0;
    while let Some(v) = queue.pop() {
        removed += 1;
        for b in 0..n {
            if edges[v * n + b] {
                indegree[b] -= 1;
                if indegree[b] == 0 {
                    queue.push(b);
                }
            }
        }
    }
    removed < n
}

/// Spectral radius by `||D^k||^(1/k)` with repeated squaring (k = 2^20),
/// rescaled at each squaring against overflow.
fn spectral_radius(n: usize, d: &[f64]) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let norm = |m: &[f64]| {
        (0..n)
            .map(|a| (0..n).map(|b| m[a * n + b].abs()).sum::<f64>())
            .fold(0.0, f64::max)
    };
    let mut m = d.to_vec();
    let mut log_scale = 0.0f64; // log of the factor taken out of m so far
    let mut power = 1.0f64;
    for _ in 0..20 {
        let s = norm(&m);
        if s == 0.0 {
            return 0.0;
        }
        for x in &mut m {
            *x /= s;
        }
        log_scale += s.ln() / power;
        let mut sq = vec![0.0; n * n];
        for a in 0..n {
            for c in 0..n {
                let x = m[a * n + c];
                if x != 0.0 {
                    for b in 0..n {
                        sq[a * n + b] += x * m[c * n + b];
                    }
                }
            }
        }
        m = sq;
        power *= 2.0;
    }
    let s = norm(&m);
    if s == 0.0 {
        return 0.0;
    }
    (log_scale + s.ln() / power).exp()
}

/// Outputs with direct feed-through, as `subsystem.output <- inputs`.
pub fn feedthrough_report(infos: &[&SubsystemInfo]) -> Vec<String> {
    let mut out = Vec::new();
    for info in infos {
        for (o, deps) in info.feedthrough.iter().enumerate() {
            if !deps.is_empty() {
                let inputs: Vec<&str> = deps
                    .iter()
                    .filter_map(|&i| info.inputs.get(i).map(|p| p.name.as_str()))
                    .collect();
                out.push(format!(
                    "{}.{} depends directly on {}",
                    info.name,
                    info.observed[o].name,
                    inputs.join(", ")
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subsystem::Port;

    fn info(name: &str, inputs: &[&str], outputs: &[&str], ft: Vec<Vec<usize>>) -> SubsystemInfo {
        let port = |n: &&str| Port {
            name: n.to_string(),
            unit: None,
            discrete: false,
        };
        SubsystemInfo {
            name: name.into(),
            inputs: inputs.iter().map(port).collect(),
            observed: outputs.iter().map(port).collect(),
            n_outputs: outputs.len(),
            feedthrough: ft,
            can_interpolate_inputs: false,
            max_output_derivative_order: 0,
            can_get_set_state: false,
            can_serialize_state: false,
            can_handle_variable_step: true,
            provides_directional_derivatives: false,
            has_state: true,
            origin: String::new(),
        }
    }

    fn conn(fs: usize, fo: usize, ts: usize, ti: usize) -> Connection {
        Connection {
            from_subsystem: fs,
            from_slot: fo,
            to_subsystem: ts,
            to_slot: ti,
            gain: 1.0,
            offset: 0.0,
            signal: false,
        }
    }

    #[test]
    fn spectral_radius_of_small_matrices() {
        // [[0, 2], [0.5, 0]]: eigenvalues +-1.
        let r = super::spectral_radius(2, &[0.0, 2.0, 0.5, 0.0]);
        assert!((r - 1.0).abs() < 1e-9, "{r}");
        // Nilpotent.
        assert_eq!(super::spectral_radius(2, &[0.0, 5.0, 0.0, 0.0]), 0.0);
        // Diagonal 3 and 0.1.
        let r = super::spectral_radius(2, &[3.0, 0.0, 0.0, 0.1]);
        assert!((r - 3.0).abs() < 1e-9, "{r}");
        assert!(super::has_cycle(2, &[false, true, true, false]));
        assert!(!super::has_cycle(2, &[false, true, false, false]));
    }

    #[test]
    fn two_gains_in_a_ring_form_a_loop() {
        let a = info("a", &["u"], &["y"], vec![vec![0]]);
        let b = info("b", &["u"], &["y"], vec![vec![0]]);
        let loops = algebraic_loops(&[&a, &b], &[conn(0, 0, 1, 0), conn(1, 0, 0, 0)]);
        assert_eq!(loops.len(), 1);
        assert_eq!(loops[0].to_string(), "a.u -> a.y -> b.u -> b.y -> a.u");
    }

    #[test]
    fn one_side_without_feedthrough_breaks_the_loop() {
        // Quarter car reticulation A: chassis velocity does not depend on
        // the force input; the suspension force depends on the velocity.
        let chassis = info("chassis", &["F"], &["v_c"], vec![vec![]]);
        let susp = info("susp", &["v_c"], &["F_c"], vec![vec![0]]);
        let loops = algebraic_loops(&[&chassis, &susp], &[conn(0, 0, 1, 0), conn(1, 0, 0, 0)]);
        assert!(loops.is_empty());
        let ft = feedthrough_report(&[&chassis, &susp]);
        assert_eq!(ft, vec!["susp.F_c depends directly on v_c".to_string()]);
    }

    #[test]
    fn gauss_seidel_order_puts_producers_first_and_breaks_loops_at_feedthrough() {
        // A loop where the second subsystem (declared first) has
        // feed-through: the one without goes first.
        let susp = info("susp", &["v_c"], &["F_c"], vec![vec![0]]);
        let chassis = info("chassis", &["F"], &["v_c"], vec![vec![]]);
        let order = gauss_seidel_order(&[&susp, &chassis], &[conn(1, 0, 0, 0), conn(0, 0, 1, 0)]);
        assert_eq!(order, vec![1, 0]);
        // A chain c -> b -> a is ordered producers first.
        let a = info("a", &["u"], &[], vec![]);
        let b = info("b", &["u"], &["y"], vec![vec![0]]);
        let c = info("c", &[], &["y"], vec![vec![]]);
        let order = gauss_seidel_order(&[&a, &b, &c], &[conn(2, 0, 1, 0), conn(1, 0, 0, 0)]);
        assert_eq!(order, vec![2, 1, 0]);
    }
}
