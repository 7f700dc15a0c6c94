//! Structural checks before a run (ALGORITHMS.md sec. 9, arnold2013 sec. 2):
//! direct feed-through per output and algebraic loops, i.e. cycles in the
//! graph whose vertices are the coupled inputs and whose edges run from an
//! input to every input fed by an output that depends on it directly.

use crate::subsystem::SubsystemInfo;
use crate::system::Connection;

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
