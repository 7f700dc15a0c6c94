//! The few CVODE 6.4 functions the comparison calls (declared from Debian's
//! /usr/include/cvode/cvode.h, cvode_ls.h and the sundials headers), and a
//! small owner of one CVODE integrator.

use std::ffi::{c_int, c_long, c_void};

type NVector = *mut c_void;
type SunContext = *mut c_void;
type SunMatrix = *mut c_void;
type SunLinearSolver = *mut c_void;
type RhsFn = unsafe extern "C" fn(f64, NVector, NVector, *mut c_void) -> c_int;
type RootFn = unsafe extern "C" fn(f64, NVector, *mut f64, *mut c_void) -> c_int;

pub const CV_ADAMS: c_int = 1;
pub const CV_BDF: c_int = 2;
const CV_NORMAL: c_int = 1;
pub const CV_SUCCESS: c_int = 0;
pub const CV_TSTOP_RETURN: c_int = 1;
pub const CV_ROOT_RETURN: c_int = 2;

unsafe extern "C" {
    fn SUNContext_Create(comm: *mut c_void, ctx: *mut SunContext) -> c_int;
    fn SUNContext_Free(ctx: *mut SunContext) -> c_int;
    fn N_VNew_Serial(n: i64, ctx: SunContext) -> NVector;
    fn N_VDestroy(v: NVector);
    fn N_VGetArrayPointer(v: NVector) -> *mut f64;
    fn SUNDenseMatrix(m: i64, n: i64, ctx: SunContext) -> SunMatrix;
    fn SUNMatDestroy(a: SunMatrix);
    fn SUNLinSol_Dense(y: NVector, a: SunMatrix, ctx: SunContext) -> SunLinearSolver;
    fn SUNLinSolFree(s: SunLinearSolver) -> c_int;
    fn CVodeCreate(lmm: c_int, ctx: SunContext) -> *mut c_void;
    fn CVodeInit(mem: *mut c_void, f: RhsFn, t0: f64, y0: NVector) -> c_int;
    fn CVodeReInit(mem: *mut c_void, t0: f64, y0: NVector) -> c_int;
    fn CVodeSStolerances(mem: *mut c_void, rtol: f64, atol: f64) -> c_int;
    fn CVodeSetLinearSolver(mem: *mut c_void, ls: SunLinearSolver, a: SunMatrix) -> c_int;
    fn CVodeSetUserData(mem: *mut c_void, data: *mut c_void) -> c_int;
    fn CVodeSetMaxNumSteps(mem: *mut c_void, n: c_long) -> c_int;
    fn CVodeSetStopTime(mem: *mut c_void, tstop: f64) -> c_int;
    fn CVodeRootInit(mem: *mut c_void, nrtfn: c_int, g: RootFn) -> c_int;
    fn CVode(mem: *mut c_void, tout: f64, yout: NVector, tret: *mut f64, itask: c_int) -> c_int;
    fn CVodeGetNumSteps(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeGetNumRhsEvals(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeGetNumLinRhsEvals(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeGetNumErrTestFails(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeGetNumNonlinSolvConvFails(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeGetNumJacEvals(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeGetNumGEvals(mem: *mut c_void, n: *mut c_long) -> c_int;
    fn CVodeFree(mem: *mut *mut c_void);
}

/// The model: right-hand side and optional root function.
pub struct Model {
    pub f: fn(f64, &[f64], &mut [f64]),
    pub g: Option<fn(f64, &[f64], &mut [f64])>,
    pub n: usize,
    pub n_roots: usize,
}

unsafe extern "C" fn rhs(t: f64, y: NVector, ydot: NVector, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Model` that `Cvode` owns for its whole life;
    // CVODE hands us its serial vectors of length `n`.
    unsafe {
        let m = &*(data as *const Model);
        let y = std::slice::from_raw_parts(N_VGetArrayPointer(y), m.n);
        let dy = std::slice::from_raw_parts_mut(N_VGetArrayPointer(ydot), m.n);
        (m.f)(t, y, dy);
    }
    0
}

unsafe extern "C" fn root(t: f64, y: NVector, g: *mut f64, data: *mut c_void) -> c_int {
    // SAFETY: as in `rhs`; `g` has `n_roots` elements.
    unsafe {
        let m = &*(data as *const Model);
        let y = std::slice::from_raw_parts(N_VGetArrayPointer(y), m.n);
        let g = std::slice::from_raw_parts_mut(g, m.n_roots);
        if let Some(gf) = m.g {
            gf(t, y, g);
        }
    }
    0
}

pub struct Cvode {
    ctx: SunContext,
    mem: *mut c_void,
    y: NVector,
    a: SunMatrix,
    ls: SunLinearSolver,
    model: Box<Model>,
    /// CVodeReInit zeroes CVODE's counters: those before it.
    before: Stats,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub steps: i64,
    pub rejected: i64,
    pub rhs: i64,
    pub jac: i64,
    pub g: i64,
}

impl Cvode {
    pub fn new(model: Model, lmm: c_int, rtol: f64, atol: f64, t0: f64, x0: &[f64]) -> Self {
        let mut model = Box::new(model);
        // SAFETY: the standard CVODE set-up sequence; every pointer is
        // created here and freed in Drop; the model lives in a Box.
        unsafe {
            let mut ctx: SunContext = std::ptr::null_mut();
            assert_eq!(SUNContext_Create(std::ptr::null_mut(), &mut ctx), 0);
            let n = model.n as i64;
            let y = N_VNew_Serial(n, ctx);
            std::slice::from_raw_parts_mut(N_VGetArrayPointer(y), model.n).copy_from_slice(x0);
            let mem = CVodeCreate(lmm, ctx);
            assert_eq!(CVodeInit(mem, rhs, t0, y), 0);
            assert_eq!(CVodeSStolerances(mem, rtol, atol), 0);
            let a = SUNDenseMatrix(n, n, ctx);
            let ls = SUNLinSol_Dense(y, a, ctx);
            assert_eq!(CVodeSetLinearSolver(mem, ls, a), 0);
            assert_eq!(
                CVodeSetUserData(mem, &mut *model as *mut Model as *mut c_void),
                0
            );
            assert_eq!(CVodeSetMaxNumSteps(mem, 10_000_000), 0);
            if model.n_roots > 0 {
                assert_eq!(CVodeRootInit(mem, model.n_roots as c_int, root), 0);
            }
            Self {
                ctx,
                mem,
                y,
                a,
                ls,
                model,
                before: Stats::default(),
            }
        }
    }

    /// CVode in normal mode with tstop = tout: never past `tout`.
    pub fn advance(&mut self, tout: f64) -> (c_int, f64) {
        let mut t = 0.0;
        // SAFETY: `mem` and `y` are live; CVODE writes `t`.
        let flag = unsafe {
            CVodeSetStopTime(self.mem, tout);
            CVode(self.mem, tout, self.y, &mut t, CV_NORMAL)
        };
        (flag, t)
    }

    pub fn state(&self) -> &[f64] {
        // SAFETY: `y` has `n` elements and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(N_VGetArrayPointer(self.y), self.model.n) }
    }

    pub fn reinit(&mut self, t0: f64, x0: &[f64]) {
        self.before = self.stats();
        // SAFETY: as in `state`, mutably; then CVODE's own restart.
        unsafe {
            std::slice::from_raw_parts_mut(N_VGetArrayPointer(self.y), self.model.n)
                .copy_from_slice(x0);
            assert_eq!(CVodeReInit(self.mem, t0, self.y), 0);
        }
    }

    pub fn stats(&self) -> Stats {
        let get = |f: unsafe extern "C" fn(*mut c_void, *mut c_long) -> c_int| {
            let mut v: c_long = 0;
            // SAFETY: `mem` is live; the getter writes one long.
            unsafe { f(self.mem, &mut v) };
            v
        };
        let b = self.before;
        Stats {
            steps: b.steps + get(CVodeGetNumSteps),
            rejected: b.rejected
                + get(CVodeGetNumErrTestFails)
                + get(CVodeGetNumNonlinSolvConvFails),
            rhs: b.rhs + get(CVodeGetNumRhsEvals) + get(CVodeGetNumLinRhsEvals),
            jac: b.jac + get(CVodeGetNumJacEvals),
            g: b.g + get(CVodeGetNumGEvals),
        }
    }
}

impl Drop for Cvode {
    fn drop(&mut self) {
        // SAFETY: each object was created in `new` and is freed once.
        unsafe {
            CVodeFree(&mut self.mem);
            SUNLinSolFree(self.ls);
            SUNMatDestroy(self.a);
            N_VDestroy(self.y);
            SUNContext_Free(&mut self.ctx);
        }
    }
}
