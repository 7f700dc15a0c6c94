//! `StateSpace` (FMI 3 only): the linear time-invariant system
//!
//! ```text
//! x' = A x + B u,   x(0) = x0,
//! y  = C x + D u,
//! ```
//!
//! with FMI 3 arrays sized by three structural parameters, as the Modelica
//! Reference FMU of the same name (same names, value references, shapes
//! and start values): `m` inputs, `n` states, `r` outputs (UInt64, start 3,
//! 1 to 5, set in Configuration Mode only); `A[n,n]`, `B[n,m]`, `C[r,n]`,
//! `D[r,m]` tunable parameters (start: identity matrices, ones where the
//! row and column index agree), `x0[n]` a fixed parameter (start 0), input
//! `u[m]` (start 1 2 3 ...), output `y[r]` (direct feed-through from `u`),
//! locals `x[n]` and `der(x)[n]`. Unlike the Reference FMU (whose
//! `setStartValues` sets x to 0), x(0) = x0.
//!
//! Setting `m`, `n` or `r` in Configuration Mode resizes the arrays at
//! once: an element whose indices exist in the old and the new shape keeps
//! its value, the others take their start values (`fmu_kit::model::resized`;
//! what the Reference FMU's storage of the largest size amounts to).
//!
//! Integration: the input is held over each step (no intermediate update
//! for arrays), so the step is the exact discretisation
//! `x(t + h) = Phi x(t) + Gamma u` with `[Phi Gamma] = ` the first `n` rows
//! of `exp([[A, B], [0, 0]] h)` (Van Loan), evaluated by scaling and
//! squaring with a degree-18 Taylor polynomial (truncation below 1e-22 for
//! the scaled matrix): exact up to rounding, about 1e-15 relative per step
//! (tests compare with analytic solutions to 1e-12). `Phi` and `Gamma` are
//! computed once per step size. No output or directional derivatives (the
//! kit provides none for arrays).

use fmu_kit::{
    DependencyKind, Dimension, Inputs, LogLevel, Model, ModelSpec, StepError, Values, VarType,
    Variable, Vr,
};

/// Structural parameter m, the number of inputs (UInt64, 1 to 5), start 3.
pub const M: Vr = 1;
/// Structural parameter n, the number of states (UInt64, 1 to 5), start 3.
pub const N: Vr = 2;
/// Structural parameter r, the number of outputs (UInt64, 1 to 5), start 3.
pub const R: Vr = 3;
/// Parameter A[n,n] (Float64, tunable), start identity.
pub const A: Vr = 4;
/// Parameter B[n,m] (Float64, tunable), start identity (ones at i = j).
pub const B: Vr = 5;
/// Parameter C[r,n] (Float64, tunable), start identity (ones at i = j).
pub const C: Vr = 6;
/// Parameter D[r,m] (Float64, tunable), start identity (ones at i = j).
pub const D: Vr = 7;
/// Parameter x0[n] (Float64, fixed), start 0: the initial state.
pub const X0: Vr = 8;
/// Input u[m] (Float64), start 1 2 3 (element i: i, 1-based).
pub const U: Vr = 9;
/// Output y[r] = C x + D u (Float64, direct feed-through from u).
pub const Y: Vr = 10;
/// Local x[n]: the state.
pub const X: Vr = 11;
/// Local der(x)[n] = A x + B u.
pub const DER_X: Vr = 12;

/// The largest value of m, n and r.
pub const MAX_SIZE: u64 = 5;

fn identity(i: &[usize]) -> f64 {
    if i[0] == i[1] { 1.0 } else { 0.0 }
}

fn one_based(i: &[usize]) -> f64 {
    i[0] as f64 + 1.0
}

fn size(vr: Vr, name: &'static str, description: &'static str) -> Variable {
    Variable::structural_parameter(vr, name, 3.0, description)
        .typed(VarType::UInt64)
        .min(1.0)
        .max(MAX_SIZE as f64)
}

/// The spec.
pub fn spec() -> ModelSpec {
    use Dimension::Structural as S;
    let matrix = |vr, name, rows, cols, description| {
        Variable::parameter(vr, name, 0.0, description)
            .tunable()
            .dims(&[S(rows), S(cols)])
            .start_elements(identity)
    };
    ModelSpec::new(
        "StateSpace",
        "FMI 3 only: the linear system x' = A x + B u, x(0) = x0, y = C x + D u with arrays sized by the structural parameters m (inputs), n (states), r (outputs)",
        build,
    )
    .var(size(M, "m", "Number of inputs (structural parameter)"))
    .var(size(N, "n", "Number of states (structural parameter)"))
    .var(size(R, "r", "Number of outputs (structural parameter)"))
    .var(matrix(A, "A", N, N, "Matrix coefficient A"))
    .var(matrix(B, "B", N, M, "Matrix coefficient B"))
    .var(matrix(C, "C", R, N, "Matrix coefficient C"))
    .var(matrix(D, "D", R, M, "Matrix coefficient D"))
    .var(Variable::parameter(X0, "x0", 0.0, "Initial state vector").dims(&[S(N)]))
    .var(
        Variable::input(U, "u", 0.0, "Input vector")
            .dims(&[S(M)])
            .start_elements(one_based),
    )
    .var(
        Variable::output(Y, "y", "Output vector y = C x + D u")
            .dims(&[S(R)])
            .depends_on(&[(U, DependencyKind::Dependent)])
            .initial_depends_on(&[M, N, R, C, D, X0, U]),
    )
    .var(Variable::local(X, "x", "State vector").dims(&[S(N)]))
    .var(Variable::local(DER_X, "der(x)", "Derivative of the state vector A x + B u").dims(&[S(N)]))
    .experiment(0.0, 10.0, 0.01)
    .output_derivatives(0)
    .directional_derivatives(false)
    .interpolate_inputs(false)
}

/// Row-major dense matrix helpers (`rows x cols`).
fn mat_vec(a: &[f64], rows: usize, cols: usize, x: &[f64], out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate().take(rows) {
        *o = (0..cols).map(|j| a[i * cols + j] * x[j]).sum();
    }
}

fn mat_mul(a: &[f64], b: &[f64], s: usize) -> Vec<f64> {
    let mut c = vec![0.0; s * s];
    for i in 0..s {
        for k in 0..s {
            let aik = a[i * s + k];
            if aik == 0.0 {
                continue;
            }
            for j in 0..s {
                c[i * s + j] += aik * b[k * s + j];
            }
        }
    }
    c
}

/// `exp(X)` of a square `s x s` matrix: scaling and squaring with a
/// degree-18 Taylor polynomial of `X / 2^j`, `|X / 2^j|_1 <= 1/2`.
pub fn expm(x: &[f64], s: usize) -> Vec<f64> {
    let norm = (0..s)
        .map(|j| (0..s).map(|i| x[i * s + j].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let mut j = 0i32;
    while norm / 2f64.powi(j) > 0.5 {
        j += 1;
    }
    let scale = 2f64.powi(-j);
    let xs: Vec<f64> = x.iter().map(|v| v * scale).collect();
    let mut e = vec![0.0; s * s];
    let mut term = vec![0.0; s * s];
    for i in 0..s {
        e[i * s + i] = 1.0;
        term[i * s + i] = 1.0;
    }
    for k in 1..=18 {
        term = mat_mul(&term, &xs, s);
        let f = 1.0 / f64::from(k);
        for t in &mut term {
            *t *= f;
        }
        for (ei, ti) in e.iter_mut().zip(&term) {
            *ei += ti;
        }
    }
    for _ in 0..j {
        e = mat_mul(&e, &e, s);
    }
    e
}

struct StateSpace {
    m: usize,
    n: usize,
    r: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    d: Vec<f64>,
    x0: Vec<f64>,
    /// (h, Phi (n x n), Gamma (n x m)) of the last step size.
    discrete: Option<(f64, Vec<f64>, Vec<f64>)>,
}

fn checked_size(v: &Values, name: &str, vr: Vr) -> Result<usize, String> {
    let k = v.int_at_least(name, vr, 1)?;
    if k > MAX_SIZE as i64 {
        return Err(format!("{name} must be <= {MAX_SIZE}, got {k}"));
    }
    Ok(k as usize)
}

/// The elements of `vr`, checked finite: `A[2,1] must be finite, got NaN`
/// (1-based indices).
fn finite(v: &Values, name: &str, vr: Vr, cols: Option<usize>) -> Result<Vec<f64>, String> {
    let a = v.array(vr);
    if let Some(k) = a.iter().position(|x| !x.is_finite()) {
        let at = match cols {
            Some(c) => format!("{}[{},{}]", name, k / c + 1, k % c + 1),
            None => format!("{}[{}]", name, k + 1),
        };
        return Err(format!("{at} must be finite, got {}", a[k]));
    }
    Ok(a.to_vec())
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    let m = checked_size(v, "m", M)?;
    let n = checked_size(v, "n", N)?;
    let r = checked_size(v, "r", R)?;
    Ok(Box::new(StateSpace {
        m,
        n,
        r,
        a: finite(v, "A", A, Some(n))?,
        b: finite(v, "B", B, Some(m))?,
        c: finite(v, "C", C, Some(n))?,
        d: finite(v, "D", D, Some(m))?,
        x0: finite(v, "x0", X0, None)?,
        discrete: None,
    }))
}

impl StateSpace {
    /// Phi and Gamma of step size h: the first n rows of
    /// exp([[A, B], [0, 0]] h).
    fn discretize(&self, h: f64) -> (Vec<f64>, Vec<f64>) {
        let (n, m) = (self.n, self.m);
        let s = n + m;
        let mut x = vec![0.0; s * s];
        for i in 0..n {
            for j in 0..n {
                x[i * s + j] = self.a[i * n + j] * h;
            }
            for j in 0..m {
                x[i * s + n + j] = self.b[i * m + j] * h;
            }
        }
        let e = expm(&x, s);
        let mut phi = vec![0.0; n * n];
        let mut gamma = vec![0.0; n * m];
        for i in 0..n {
            phi[i * n..(i + 1) * n].copy_from_slice(&e[i * s..i * s + n]);
            gamma[i * m..(i + 1) * m].copy_from_slice(&e[i * s + n..i * s + s]);
        }
        (phi, gamma)
    }
}

impl Model for StateSpace {
    fn init(&mut self, v: &mut Values) {
        v.array_mut(X).copy_from_slice(&self.x0);
    }

    fn do_step(
        &mut self,
        _t: f64,
        h: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        if !matches!(&self.discrete, Some((h0, _, _)) if *h0 == h) {
            let (phi, gamma) = self.discretize(h);
            self.discrete = Some((h, phi, gamma));
        }
        let Some((_, phi, gamma)) = &self.discrete else {
            return Err(StepError::Error("no discretisation".into()));
        };
        let (n, m) = (self.n, self.m);
        let mut x = vec![0.0; n];
        let mut bu = vec![0.0; n];
        mat_vec(phi, n, n, v.array(X), &mut x);
        mat_vec(gamma, n, m, v.array(U), &mut bu);
        for (xi, bi) in x.iter_mut().zip(&bu) {
            *xi += bi;
        }
        v.array_mut(X).copy_from_slice(&x);
        Ok(())
    }

    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        let (m, n, r) = (self.m, self.n, self.r);
        let x = v.array(X).to_vec();
        let u = v.array(U).to_vec();
        let mut p = vec![0.0; n.max(r)];
        let mut q = vec![0.0; n.max(r)];
        mat_vec(&self.c, r, n, &x, &mut p);
        mat_vec(&self.d, r, m, &u, &mut q);
        for (yi, (pi, qi)) in v.array_mut(Y).iter_mut().zip(p.iter().zip(&q)) {
            *yi = pi + qi;
        }
        mat_vec(&self.a, n, n, &x, &mut p);
        mat_vec(&self.b, n, m, &u, &mut q);
        for (di, (pi, qi)) in v.array_mut(DER_X).iter_mut().zip(p.iter().zip(&q)) {
            *di = pi + qi;
        }
    }
}
