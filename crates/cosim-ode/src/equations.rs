//! The caller's model seen as diffsol equations.
//!
//! diffsol calls its operators through `&self` and gives them no way to fail,
//! so the model sits in a `Mutex` (a solver holds `&problem`, and the
//! integrator must be `Send`: the problem must be `Sync`; the lock is never
//! contended) and its first error is kept here: from then
//! on every evaluation returns NaN without calling the model, which makes the
//! solver give up quickly, and the integrator reports the kept error instead of
//! the solver's.

use std::sync::{Mutex, MutexGuard, PoisonError};

use diffsol::{
    ConstantOp, Matrix, NalgebraContext, NalgebraMat, NalgebraVec, NonLinearOp,
    NonLinearOpJacobian, OdeEquations, OdeEquationsRef, Op, ParameterisedOp, UnitCallable, Vector,
    VectorCommon,
};

use crate::OdeProblem;

pub(crate) type M = NalgebraMat<f64>;
pub(crate) type V = NalgebraVec<f64>;

/// What the operators share with the integrator: the model, its first
/// error, the counters and the finite-difference workspace (allocated once).
pub(crate) struct Shared<P: OdeProblem> {
    pub model: P,
    pub error: Option<P::Error>,
    /// Set by the integrator around the calls it makes itself; while unset
    /// (building a solver's state at a placeholder time) nothing calls the
    /// model and every derivative is zero.
    pub live: bool,
    pub rhs_evaluations: u64,
    pub jacobian_evaluations: u64,
    /// The state the `init` operator hands diffsol when a solver is built.
    pub x0: Vec<f64>,
    /// Finite-difference increments are `sqrt(eps) * max(|x_j|, floor)`.
    pub fd_floor: f64,
    f0: Vec<f64>,
    f1: Vec<f64>,
    xp: Vec<f64>,
    jac: Vec<f64>,
}

impl<P: OdeProblem> Shared<P> {
    pub fn new(model: P, n: usize, fd_floor: f64) -> Self {
        Self {
            model,
            error: None,
            live: false,
            rhs_evaluations: 0,
            jacobian_evaluations: 0,
            x0: vec![0.0; n],
            fd_floor,
            f0: vec![0.0; n],
            f1: vec![0.0; n],
            xp: vec![0.0; n],
            jac: vec![0.0; n * n],
        }
    }

    /// `dx = f(t, x)`, or NaN once the model has failed.
    pub fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) {
        if !self.live {
            dx.fill(0.0);
            return;
        }
        if self.error.is_some() {
            dx.fill(f64::NAN);
            return;
        }
        self.rhs_evaluations += 1;
        if let Err(e) = self.model.rhs(t, x, dx) {
            self.error = Some(e);
            dx.fill(f64::NAN);
        }
    }

    /// The dense Jacobian, column-major: the model's own, or forward
    /// differences (n + 1 evaluations, as CVODE's difference quotient).
    fn jacobian(&mut self, t: f64, x: &[f64], out: &mut [f64]) {
        if !self.live {
            out.fill(0.0);
            return;
        }
        if self.error.is_some() {
            out.fill(f64::NAN);
            return;
        }
        self.jacobian_evaluations += 1;
        let mut jac = std::mem::take(&mut self.jac);
        match self.model.jacobian(t, x, &mut jac) {
            Some(Ok(())) => out.copy_from_slice(&jac),
            Some(Err(e)) => {
                self.error = Some(e);
                out.fill(f64::NAN);
            }
            None => self.difference_quotient(t, x, out),
        }
        self.jac = jac;
    }

    fn difference_quotient(&mut self, t: f64, x: &[f64], out: &mut [f64]) {
        let n = x.len();
        let mut f0 = std::mem::take(&mut self.f0);
        let mut f1 = std::mem::take(&mut self.f1);
        let mut xp = std::mem::take(&mut self.xp);
        self.rhs(t, x, &mut f0);
        xp.copy_from_slice(x);
        let sqrt_eps = f64::EPSILON.sqrt();
        for j in 0..n {
            let inc = sqrt_eps * x[j].abs().max(self.fd_floor);
            xp[j] = x[j] + inc;
            // the increment actually represented, so the quotient is exact in it
            let inc = xp[j] - x[j];
            self.rhs(t, &xp, &mut f1);
            for i in 0..n {
                out[j * n + i] = (f1[i] - f0[i]) / inc;
            }
            xp[j] = x[j];
        }
        self.f0 = f0;
        self.f1 = f1;
        self.xp = xp;
    }
}

/// The equations diffsol integrates: `x' = f(t, x)`, no mass matrix, no
/// parameters. Root finding is the integrator's own (`roots.rs`), so the
/// model's event indicators can fail and report every crossing.
pub(crate) struct Model<P: OdeProblem> {
    shared: Mutex<Shared<P>>,
    n: usize,
    p: V,
    ctx: NalgebraContext,
}

impl<P: OdeProblem> Model<P> {
    pub fn new(shared: Shared<P>, n: usize) -> Self {
        let ctx = NalgebraContext::default();
        Self {
            shared: Mutex::new(shared),
            n,
            p: V::zeros(0, ctx),
            ctx,
        }
    }

    /// The shared state. A panic in the model while it was locked does not
    /// make it unusable: the model decides what its state is worth.
    pub fn shared(&self) -> MutexGuard<'_, Shared<P>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(crate) fn slice(v: &V) -> &[f64] {
    v.inner().as_slice()
}

pub(crate) fn slice_mut(v: &mut V) -> &mut [f64] {
    v.inner_mut().as_mut_slice()
}

pub(crate) struct Rhs<'a, P: OdeProblem> {
    eqn: &'a Model<P>,
}

pub(crate) struct Init<'a, P: OdeProblem> {
    eqn: &'a Model<P>,
}

macro_rules! model_op {
    ($name:ident) => {
        impl<P: OdeProblem> Op for $name<'_, P> {
            type M = M;
            type V = V;
            type T = f64;
            type C = NalgebraContext;
            fn nstates(&self) -> usize {
                self.eqn.n
            }
            fn nout(&self) -> usize {
                self.eqn.n
            }
            fn nparams(&self) -> usize {
                0
            }
            fn context(&self) -> &Self::C {
                &self.eqn.ctx
            }
        }
    };
}

model_op!(Rhs);
model_op!(Init);

impl<P: OdeProblem> NonLinearOp for Rhs<'_, P> {
    fn call_inplace(&self, x: &V, t: f64, y: &mut V) {
        self.eqn.shared().rhs(t, slice(x), slice_mut(y));
    }
}

impl<P: OdeProblem> NonLinearOpJacobian for Rhs<'_, P> {
    fn jac_mul_inplace(&self, x: &V, t: f64, v: &V, y: &mut V) {
        // Not on diffsol's dense path (it asks for `jacobian_inplace`); a
        // directional forward difference for any other caller.
        let mut shared = self.eqn.shared();
        let (x, v, y) = (slice(x), slice(v), slice_mut(y));
        let scale = x
            .iter()
            .zip(v)
            .fold(shared.fd_floor, |m, (xi, vi)| m.max((xi * vi).abs()));
        let vmax = v.iter().fold(0.0_f64, |m, vi| m.max(vi.abs()));
        if vmax == 0.0 {
            y.fill(0.0);
            return;
        }
        let sigma = f64::EPSILON.sqrt() * scale / vmax;
        let mut f0 = std::mem::take(&mut shared.f0);
        let mut f1 = std::mem::take(&mut shared.f1);
        let mut xp = std::mem::take(&mut shared.xp);
        shared.rhs(t, x, &mut f0);
        for ((p, xi), vi) in xp.iter_mut().zip(x).zip(v) {
            *p = xi + sigma * vi;
        }
        shared.rhs(t, &xp, &mut f1);
        for ((yi, a), b) in y.iter_mut().zip(&f1).zip(&f0) {
            *yi = (a - b) / sigma;
        }
        shared.f0 = f0;
        shared.f1 = f1;
        shared.xp = xp;
    }

    fn jacobian_inplace(&self, x: &V, t: f64, y: &mut M) {
        let out = y.inner_mut().as_mut_slice();
        self.eqn.shared().jacobian(t, slice(x), out);
    }
}

impl<P: OdeProblem> ConstantOp for Init<'_, P> {
    fn call_inplace(&self, _t: f64, y: &mut V) {
        slice_mut(y).copy_from_slice(&self.eqn.shared().x0);
    }
}

impl<P: OdeProblem> Op for Model<P> {
    type M = M;
    type V = V;
    type T = f64;
    type C = NalgebraContext;
    fn nstates(&self) -> usize {
        self.n
    }
    fn nout(&self) -> usize {
        self.n
    }
    fn nparams(&self) -> usize {
        0
    }
    fn context(&self) -> &Self::C {
        &self.ctx
    }
}

impl<'a, P: OdeProblem> OdeEquationsRef<'a> for Model<P> {
    type Rhs = Rhs<'a, P>;
    type Init = Init<'a, P>;
    type Mass = ParameterisedOp<'a, UnitCallable<M>>;
    type Root = ParameterisedOp<'a, UnitCallable<M>>;
    type Out = ParameterisedOp<'a, UnitCallable<M>>;
    type Reset = ParameterisedOp<'a, UnitCallable<M>>;
}

impl<P: OdeProblem> OdeEquations for Model<P> {
    fn rhs(&self) -> Rhs<'_, P> {
        Rhs { eqn: self }
    }
    fn init(&self) -> Init<'_, P> {
        Init { eqn: self }
    }
    fn mass(&self) -> Option<<Self as OdeEquationsRef<'_>>::Mass> {
        None
    }
    fn set_params(&mut self, p: &V) {
        self.p.copy_from(p);
    }
    fn get_params(&self, p: &mut V) {
        p.copy_from(&self.p);
    }
}
