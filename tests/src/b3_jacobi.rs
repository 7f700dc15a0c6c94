//! B3 (three masses, hafner) co-simulated as the fixed-step master does,
//! Jacobi with zero-order hold, traditionally (the three FMUs at one step)
//! and hierarchically (S2 and S3 in a nest stepping at H2 within each
//! outer step H1 of S1 and the nest), written from the model equations
//! (`fmus/models/src/three_mass.rs`: explicit Euler with micro steps of 5,
//! 2.5 and 1.25 ms, the last one shortened) independently of the master
//! and of the FMUs: what the master's B3 errors are checked against
//! (`tests/hierarchical.rs`, `tests/ssp.rs`).

/// Spring and damper constants of B3: (c1, d1), (c12, d12), (c23, d23),
/// (c3, d3); masses 10 kg, initial positions 1, 2, 3 m, at rest.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// c1, c12, c23, c3.
    pub c: [f64; 4],
    /// d1, d12, d23, d3.
    pub d: [f64; 4],
}

impl Params {
    /// Hafner's scenario `k` (1, 2, 3): the stiffnesses of
    /// `tests/hierarchical.rs`, the dampers of the scenario files.
    pub fn scenario(k: u32) -> Params {
        let c = match k {
            1 => [1e-2, 1e-1, 1.0, 10.0],
            2 => [1e-3, 1e-1, 10.0, 100.0],
            _ => [1.0, 10.0, 10.0, 100.0],
        };
        Params {
            c,
            d: [0.1, 0.4, 1.0, 2.0],
        }
    }
}

const M: f64 = 10.0;
const MICRO: [f64; 3] = [0.005, 0.0025, 0.00125];

/// Explicit Euler over `[t, t + h]` in micro steps of `h_micro`, the last
/// one shortened to end at `t + h` (`solvers::euler_fixed`).
fn euler(t: f64, h: f64, h_micro: f64, x: &mut [f64; 2], f: impl Fn(&[f64; 2]) -> [f64; 2]) {
    let ratio = h / h_micro;
    let n = (ratio - 1e-9 * ratio.max(1.0)).ceil().max(1.0) as usize;
    for i in 0..n {
        let s = t + i as f64 * h_micro;
        let dt = if i + 1 == n { (t + h) - s } else { h_micro };
        let dx = f(x);
        x[0] += dt * dx[0];
        x[1] += dt * dx[1];
    }
}

/// The three subsystems' states and held inputs.
#[derive(Debug, Clone, Copy)]
struct State {
    /// (x, v) of each mass.
    s: [[f64; 2]; 3],
    /// S1's input l12.
    l12_in: f64,
    /// S2's inputs x1, v1 and l23.
    x1_in: [f64; 2],
    l23_in: f64,
    /// S3's inputs x2, v2.
    x2_in: [f64; 2],
}

impl State {
    fn start(p: &Params) -> State {
        let s = [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]];
        let mut st = State {
            s,
            l12_in: 0.0,
            x1_in: s[0],
            l23_in: 0.0,
            x2_in: s[1],
        };
        st.l12_in = st.l12(p);
        st.l23_in = st.l23(p);
        st
    }

    /// S2's output, with its inputs as held.
    fn l12(&self, p: &Params) -> f64 {
        let [x2, v2] = self.s[1];
        p.c[1] * (x2 - self.x1_in[0]) + p.d[1] * (v2 - self.x1_in[1])
    }

    /// S3's output, with its inputs as held.
    fn l23(&self, p: &Params) -> f64 {
        let [x3, v3] = self.s[2];
        p.c[2] * (x3 - self.x2_in[0]) + p.d[2] * (v3 - self.x2_in[1])
    }

    fn step_s1(&mut self, p: &Params, t: f64, h: f64) {
        let l = self.l12_in;
        euler(t, h, MICRO[0], &mut self.s[0], |x| {
            [x[1], (-p.c[0] * x[0] - p.d[0] * x[1] + l) / M]
        });
    }

    fn step_s2(&mut self, p: &Params, t: f64, h: f64) {
        let ([x1, v1], l23) = (self.x1_in, self.l23_in);
        euler(t, h, MICRO[1], &mut self.s[1], |x| {
            let l12 = p.c[1] * (x[0] - x1) + p.d[1] * (x[1] - v1);
            [x[1], (-l12 + l23) / M]
        });
    }

    fn step_s3(&mut self, p: &Params, t: f64, h: f64) {
        let [x2, v2] = self.x2_in;
        euler(t, h, MICRO[2], &mut self.s[2], |x| {
            let l23 = p.c[2] * (x[0] - x2) + p.d[2] * (x[1] - v2);
            [x[1], (-l23 - p.c[3] * x[0] - p.d[3] * x[1]) / M]
        });
    }

    /// The states as the trace shows them: x1, x2, x3, v1, v2, v3.
    fn row(&self) -> [f64; 6] {
        let [[x1, v1], [x2, v2], [x3, v3]] = self.s;
        [x1, x2, x3, v1, v2, v3]
    }
}

/// The rows (time, then x1, x2, x3, v1, v2, v3) of a traditional run: the
/// three FMUs stepped at `h` to `t_end`, outputs read after the step with
/// the inputs held, then exchanged.
pub fn traditional(p: &Params, h: f64, t_end: f64) -> Vec<(f64, [f64; 6])> {
    let mut st = State::start(p);
    let steps = (t_end / h).round() as usize;
    let mut rows = vec![(0.0, st.row())];
    for k in 0..steps {
        let t = k as f64 * h;
        st.step_s1(p, t, h);
        st.step_s2(p, t, h);
        st.step_s3(p, t, h);
        let (l12, l23) = (st.l12(p), st.l23(p));
        st.l12_in = l12;
        st.x1_in = st.s[0];
        st.l23_in = l23;
        st.x2_in = st.s[1];
        rows.push(((k + 1) as f64 * h, st.row()));
    }
    rows
}

/// The rows of a hierarchical run: S1 and the nest at `h1`, S2 and S3 at
/// `h2` inside the nest with S1's x1 and v1 held over each outer step.
pub fn hierarchical(p: &Params, h1: f64, h2: f64, t_end: f64) -> Vec<(f64, [f64; 6])> {
    let mut st = State::start(p);
    let steps = (t_end / h1).round() as usize;
    let inner = (h1 / h2).round() as usize;
    let mut rows = vec![(0.0, st.row())];
    for k in 0..steps {
        let t = k as f64 * h1;
        st.step_s1(p, t, h1);
        for j in 0..inner {
            let s = t + j as f64 * h2;
            st.step_s2(p, s, h2);
            st.step_s3(p, s, h2);
            let l23 = st.l23(p);
            st.l23_in = l23;
            st.x2_in = st.s[1];
        }
        let l12 = st.l12(p);
        st.l12_in = l12;
        st.x1_in = st.s[0];
        rows.push(((k + 1) as f64 * h1, st.row()));
    }
    rows
}

/// The largest error of the six states of `rows` against the analytic
/// `reference` (columns x1, x2, x3, v1, v2, v3, interpolated at the rows'
/// times as `metrics::compare_columns` does).
pub fn max_error(rows: &[(f64, [f64; 6])], reference: &cosim_core::metrics::Table) -> f64 {
    let columns: Vec<usize> = ["x1", "x2", "x3", "v1", "v2", "v3"]
        .iter()
        .map(|n| {
            reference
                .names
                .iter()
                .position(|r| r == n)
                .unwrap_or_else(|| panic!("the reference has no column {n}"))
        })
        .collect();
    rows.iter()
        .flat_map(|(t, states)| {
            columns
                .iter()
                .zip(states)
                .map(move |(&c, v)| (v - reference.interpolate(c, *t)).abs())
        })
        .fold(0.0, f64::max)
}
