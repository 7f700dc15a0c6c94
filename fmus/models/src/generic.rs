//! Generic test models: `Gain`, `Integrator`, `Dahlquist`, `Faulty`, `Wide`,
//! `Terminating`.

use fmu_kit::units::{PER_S, S};
use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr,
};

use crate::solvers::phi;

/// `Gain`: y = k u (feed-through), with optional busy work per step.
pub mod gain {
    use super::*;

    /// Input u.
    pub const U: Vr = 1;
    /// Output y = k u.
    pub const Y: Vr = 2;
    /// Gain k.
    pub const K: Vr = 3;
    /// Iterations of a floating-point busy loop per doStep.
    pub const BUSY_WORK: Vr = 4;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new("Gain", "y = k * u (direct feed-through); busy_work loops per step", build)
            .var(Variable::input(U, "u", 0.0, "Input"))
            .var(
                Variable::output(Y, "y", "Output y = k * u")
                    .depends_on(&[(U, DependencyKind::Fixed)])
                    .initial_depends_on(&[U, K]),
            )
            .var(Variable::parameter(K, "k", 1.0, "Gain"))
            .var(
                Variable::int_parameter(
                    BUSY_WORK,
                    "busy_work",
                    0,
                    "Iterations of a cheap floating-point busy loop per doStep (for parallel speed benchmarks)",
                )
                .min(0.0),
            )
            .experiment(0.0, 10.0, 0.01)
            .output_derivatives(3)
            // FMI 3 <Alias> names, for the tests of aliases (none for the
            // output y: FMPy's validation would take an alias of a
            // calculated output for an initial unknown of its own).
            .alias(U, "u_in", "Input u, by another name")
            .alias(K, "gain", "Gain k, by another name")
    }

    struct Gain {
        k: f64,
        busy: u64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Gain {
            k: v.finite("k", K)?,
            busy: v.int_at_least("busy_work", BUSY_WORK, 0)? as u64,
        }))
    }

    impl Model for Gain {
        fn init(&mut self, _v: &mut Values) {}

        fn do_step(
            &mut self,
            _t: f64,
            _h: f64,
            _v: &mut Values,
            _u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let mut acc = 0.0f64;
            for i in 0..self.busy {
                acc = std::hint::black_box(acc.mul_add(0.5, (i as f64).sqrt()));
            }
            std::hint::black_box(acc);
            Ok(())
        }

        fn outputs(&self, _t: f64, v: &mut Values, u: &Inputs) {
            v[Y] = self.k * u.value(U);
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == Y).then(|| self.k * u.derivative(U, order as usize, t))
        }

        fn partial_derivative(&self, output: Vr, input: Vr, _v: &Values) -> f64 {
            if output == Y && input == U {
                self.k
            } else {
                0.0
            }
        }
    }
}

/// `Integrator`: x' = u, integrated exactly for the polynomial input.
pub mod integrator {
    use super::*;

    /// Input u.
    pub const U: Vr = 1;
    /// Output x.
    pub const X: Vr = 2;
    /// Initial value of x.
    pub const X0: Vr = 3;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "Integrator",
            "x' = u, exact for polynomial inputs; output x (no feed-through)",
            build,
        )
        .var(Variable::input(U, "u", 0.0, "Input (rate of x)"))
        .var(
            Variable::output(X, "x", "Integral of u")
                .depends_on(&[])
                .initial_depends_on(&[X0]),
        )
        .var(Variable::parameter(X0, "x0", 0.0, "Initial value of x"))
        .experiment(0.0, 10.0, 0.01)
        .output_derivatives(3)
    }

    struct Integrator {
        x0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Integrator {
            x0: v.finite("x0", X0)?,
        }))
    }

    impl Model for Integrator {
        fn init(&mut self, v: &mut Values) {
            v[X] = self.x0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            v[X] += u.integral(U, t + h);
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == X && order >= 1).then(|| u.derivative(U, order as usize - 1, t))
        }
    }
}

/// `Dahlquist`: x' = lambda x + u, solved exactly for the polynomial input
/// with exponential-integrator functions.
pub mod dahlquist {
    use super::*;

    /// Input u.
    pub const U: Vr = 1;
    /// Output x.
    pub const X: Vr = 2;
    /// lambda.
    pub const LAMBDA: Vr = 3;
    /// Initial value of x.
    pub const X0: Vr = 4;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "Dahlquist",
            "x' = lambda * x + u, exact for polynomial inputs; output x",
            build,
        )
        .var(Variable::input(U, "u", 0.0, "Input"))
        .var(
            Variable::output(X, "x", "State x")
                .depends_on(&[])
                .initial_depends_on(&[X0]),
        )
        .var(Variable::parameter(LAMBDA, "lambda", -1.0, "Eigenvalue").unit(PER_S))
        .var(Variable::parameter(X0, "x0", 1.0, "Initial value of x"))
        .experiment(0.0, 10.0, 0.01)
        .output_derivatives(3)
    }

    struct Dahlquist {
        lambda: f64,
        x0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Dahlquist {
            lambda: v.finite("lambda", LAMBDA)?,
            x0: v.finite("x0", X0)?,
        }))
    }

    impl Model for Dahlquist {
        fn init(&mut self, v: &mut Values) {
            v[X] = self.x0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let z = self.lambda * h;
            let c = u.coeffs(U);
            let mut x = z.exp() * v[X];
            for (k, ck) in c.iter().enumerate() {
                x += ck * h.powi(k as i32 + 1) * phi(k as u32 + 1, z);
            }
            let _ = t;
            v[X] = x;
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if vr != X {
                return None;
            }
            // x^(k) = lambda x^(k-1) + u^(k-1)
            let mut d = v[X];
            for k in 1..=order as usize {
                d = self.lambda * d + u.derivative(U, k - 1, t);
            }
            Some(d)
        }
    }
}

/// `Faulty`: an integrator that fails on purpose at `fail_at`.
pub mod faulty {
    use super::*;

    /// Input u.
    pub const U: Vr = 1;
    /// Output x (NaN after fail_at in fail_mode 3).
    pub const X: Vr = 2;
    /// The integrator state.
    pub const X_STATE: Vr = 3;
    /// Initial value.
    pub const X0: Vr = 4;
    /// Failure time (-1: never).
    pub const FAIL_AT: Vr = 5;
    /// Failure mode 1..=11.
    pub const FAIL_MODE: Vr = 6;

    /// fail_mode values.
    pub mod mode {
        /// doStep returns Error.
        pub const ERROR: i64 = 1;
        /// doStep returns Discard at fail_at.
        pub const DISCARD: i64 = 2;
        /// Output becomes NaN.
        pub const NAN: i64 = 3;
        /// SIGSEGV.
        pub const SEGFAULT: i64 = 4;
        /// abort().
        pub const ABORT: i64 = 5;
        /// Never returns.
        pub const HANG: i64 = 6;
        /// doStep returns Fatal.
        pub const FATAL: i64 = 7;
        /// Starts a child process (`sleep`) that would outlive the FMU's
        /// process, then goes on as if nothing happened.
        pub const FORK: i64 = 8;
        /// Ends the process with `exit(3)`, as some FMUs do on an error.
        pub const EXIT: i64 = 9;
        /// Steps normally, but once a step has reached fail_at,
        /// `fmi*FreeInstance` never returns (the model is dropped there;
        /// a master that restores an FMU state drops it there too).
        pub const HANG_IN_FREE: i64 = 10;
        /// Never returns from initialization (the model's `init`, in
        /// `fmi*ExitInitializationMode` or a get in Initialization Mode);
        /// fail_at is not used.
        pub const HANG_IN_INIT: i64 = 11;
    }

    /// How long the child process of fail_mode 8 sleeps, in seconds.
    pub const FORKED_CHILD_SLEEPS_S: u32 = 300;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "Faulty",
            "Integrator x' = u that fails at fail_at: 1 Error, 2 Discard, 3 NaN output, 4 segfault, 5 abort, 6 hang, 7 Fatal, 8 fork a child that sleeps, 9 exit(3), 10 hang in FreeInstance, 11 hang in initialization",
            build,
        )
        .var(Variable::input(U, "u", 0.0, "Input"))
        .var(
            Variable::output(X, "x", "Integral of u (NaN from fail_at on in fail_mode 3)")
                .depends_on(&[])
                .initial_depends_on(&[X0]),
        )
        .var(Variable::local(X_STATE, "x_state", "Integrator state"))
        .var(Variable::parameter(X0, "x0", 0.0, "Initial value of x"))
        .var(Variable::parameter(FAIL_AT, "fail_at", -1.0, "Time of the failure (< 0: never)").unit(S))
        .var(
            Variable::int_parameter(
                FAIL_MODE,
                "fail_mode",
                1,
                "1 Error, 2 Discard, 3 NaN output, 4 segfault, 5 abort, 6 hang, 7 Fatal, 8 fork a child that sleeps, 9 exit(3), 10 hang in FreeInstance, 11 hang in initialization",
            )
            .min(1.0)
            .max(11.0),
        )
        .experiment(0.0, 10.0, 0.01)
        .output_derivatives(3)
    }

    struct Faulty {
        x0: f64,
        fail_at: f64,
        mode: i64,
        /// A step reached fail_at (fail_mode 10 then hangs when dropped).
        reached: bool,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        let mode = v.int(FAIL_MODE);
        if !(1..=11).contains(&mode) {
            return Err(format!("fail_mode must be in 1..=11, got {mode}"));
        }
        Ok(Box::new(Faulty {
            x0: v.finite("x0", X0)?,
            fail_at: v.finite("fail_at", FAIL_AT)?,
            mode,
            reached: false,
        }))
    }

    impl Faulty {
        fn failed_by(&self, t: f64) -> bool {
            self.fail_at >= 0.0 && t >= self.fail_at
        }
    }

    /// Sleeps forever: a call that never returns.
    fn hang() -> ! {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }

    impl Drop for Faulty {
        /// fail_mode 10: the instance is freed (the kit drops the model in
        /// `fmi*FreeInstance`) after a step reached fail_at.
        fn drop(&mut self) {
            if self.mode == mode::HANG_IN_FREE && self.reached {
                hang()
            }
        }
    }

    /// fail_mode 8: starts `sleep` as a child process of the FMU's process
    /// (with its standard streams and environment, as a helper process an
    /// FMU starts would have), never waited for: it outlives the FMU's
    /// process unless someone kills it.
    fn fork_sleeper(fail_at: f64, t: f64, h: f64, log: &dyn Fn(LogLevel, &str)) {
        let what = match std::process::Command::new("sleep")
            .arg(FORKED_CHILD_SLEEPS_S.to_string())
            .spawn()
        {
            // Dropping a Child neither waits for nor kills the process.
            Ok(child) => format!("started child process {} (sleep)", child.id()),
            Err(e) => format!("could not start a child process: {e}"),
        };
        log(
            LogLevel::Warning,
            &format!(
                "Faulty: fail_at = {fail_at} reached in the step from {t} to {} (fail_mode 8): {what}",
                t + h
            ),
        );
    }

    impl Model for Faulty {
        fn init(&mut self, v: &mut Values) {
            if self.mode == mode::HANG_IN_INIT {
                hang()
            }
            v[X_STATE] = self.x0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            if self.mode == mode::HANG_IN_FREE {
                self.reached |= self.failed_by(t + h);
                v[X_STATE] += u.integral(U, t + h);
                return Ok(());
            }
            if self.mode == mode::FORK {
                if self.failed_by(t + h) && !self.failed_by(t) {
                    fork_sleeper(self.fail_at, t, h, log);
                }
                v[X_STATE] += u.integral(U, t + h);
                return Ok(());
            }
            if !self.failed_by(t + h) || self.mode == mode::NAN {
                if self.mode == mode::NAN && self.failed_by(t + h) && !self.failed_by(t) {
                    log(
                        LogLevel::Warning,
                        &format!("Faulty: output x becomes NaN at fail_at = {}", self.fail_at),
                    );
                }
                v[X_STATE] += u.integral(U, t + h);
                return Ok(());
            }
            let what = match self.mode {
                mode::ERROR => "returning Error",
                mode::DISCARD => "returning Discard",
                mode::SEGFAULT => "raising SIGSEGV",
                mode::ABORT => "calling abort()",
                mode::HANG => "hanging forever",
                mode::EXIT => "calling exit(3)",
                _ => "returning Fatal",
            };
            let msg = format!(
                "Faulty: fail_at = {} reached in the step from {t} to {} (fail_mode {}): {what}",
                self.fail_at,
                t + h,
                self.mode
            );
            if matches!(
                self.mode,
                mode::SEGFAULT | mode::ABORT | mode::HANG | mode::EXIT
            ) {
                // These never return a status, so the message must go out now
                // (the kit logs the returned Error/Discard/Fatal messages itself).
                log(LogLevel::Error, &msg);
            }
            match self.mode {
                mode::ERROR => Err(StepError::Error(msg)),
                mode::DISCARD => {
                    let reached = self.fail_at.max(t);
                    v[X_STATE] += u.integral(U, reached);
                    Err(StepError::Discard {
                        reached,
                        message: msg,
                    })
                }
                mode::SEGFAULT => {
                    fmu_kit::ffi::raise_segfault();
                    Err(StepError::Fatal(msg))
                }
                mode::ABORT => std::process::abort(),
                mode::EXIT => std::process::exit(3),
                mode::HANG => hang(),
                _ => Err(StepError::Fatal(msg)),
            }
        }

        fn outputs(&self, t: f64, v: &mut Values, _u: &Inputs) {
            v[X] = if self.mode == mode::NAN && self.failed_by(t) {
                f64::NAN
            } else {
                v[X_STATE]
            };
        }

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == X && order >= 1).then(|| u.derivative(U, order as usize - 1, t))
        }
    }
}

/// `Wide`: [`wide::N`] independent first-order lags `x_i' = (u_i - x_i) / tau`,
/// output `y_i = x_i` (no direct feed-through), each solved exactly for its
/// polynomial input. Two of them cross-connected make a system with 2 N
/// connections, for measuring the cost of data exchange.
pub mod wide {
    use std::sync::OnceLock;

    use super::*;

    /// Number of inputs and of outputs.
    pub const N: usize = 200;
    /// Value reference of input `u1`; `u{i}` is `U0 + i - 1`.
    pub const U0: Vr = 1;
    /// Value reference of output `y1`; `y{i}` is `Y0 + i - 1`.
    pub const Y0: Vr = U0 + N as Vr;
    /// Time constant tau of every lag.
    pub const TAU: Vr = Y0 + N as Vr;
    /// Initial value of every output.
    pub const X0: Vr = TAU + 1;

    /// The value reference of input `u{i}`, `i` in `1..=N`.
    pub const fn input(i: usize) -> Vr {
        U0 + i as Vr - 1
    }

    /// The value reference of output `y{i}`, `i` in `1..=N`.
    pub const fn output(i: usize) -> Vr {
        Y0 + i as Vr - 1
    }

    /// The variable names `u1..uN`, `y1..yN` (built once; the kit wants
    /// `&'static str`).
    fn names() -> &'static [(&'static str, &'static str)] {
        static NAMES: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
        NAMES.get_or_init(|| {
            let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
            (1..=N)
                .map(|i| (leak(format!("u{i}")), leak(format!("y{i}"))))
                .collect()
        })
    }

    /// The spec.
    pub fn spec() -> ModelSpec {
        let mut spec = ModelSpec::new(
            "Wide",
            "200 first-order lags x_i' = (u_i - x_i) / tau, y_i = x_i (no feed-through), exact for polynomial inputs; for data-exchange benchmarks",
            build,
        );
        for (k, &(u_name, _)) in names().iter().enumerate() {
            spec = spec.var(Variable::input(input(k + 1), u_name, 0.0, "Input of lag i"));
        }
        for (k, &(_, y_name)) in names().iter().enumerate() {
            spec = spec.var(
                Variable::output(output(k + 1), y_name, "Output of lag i (its state)")
                    .depends_on(&[])
                    .initial_depends_on(&[X0]),
            );
        }
        spec.var(Variable::parameter(TAU, "tau", 0.1, "Time constant of every lag").unit(S))
            .var(Variable::parameter(
                X0,
                "x0",
                0.0,
                "Initial value of every output",
            ))
            .experiment(0.0, 10.0, 1e-3)
            .output_derivatives(3)
    }

    struct Wide {
        tau: f64,
        x0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Wide {
            tau: v.positive("tau", TAU)?,
            x0: v.finite("x0", X0)?,
        }))
    }

    impl Model for Wide {
        fn init(&mut self, v: &mut Values) {
            for i in 1..=N {
                v[output(i)] = self.x0;
            }
        }

        fn do_step(
            &mut self,
            _t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            // x' = lambda x + u / tau with lambda = -1 / tau: the Dahlquist
            // solution with the forcing scaled by 1 / tau. The weights are
            // the same for every lag.
            let z = -h / self.tau;
            let decay = z.exp();
            let mut w = [0.0; 4];
            for (k, wk) in w.iter_mut().enumerate() {
                *wk = h.powi(k as i32 + 1) * phi(k as u32 + 1, z) / self.tau;
            }
            for i in 1..=N {
                let c = u.coeffs(input(i));
                let x = &mut v[output(i)];
                *x = decay * *x + c[0] * w[0] + c[1] * w[1] + c[2] * w[2] + c[3] * w[3];
            }
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            if !(Y0..Y0 + N as Vr).contains(&vr) {
                return None;
            }
            let input = U0 + (vr - Y0);
            // y^(k) = (u^(k-1) - y^(k-1)) / tau
            let mut d = v[vr];
            for k in 1..=order as usize {
                d = (u.derivative(input, k - 1, t) - d) / self.tau;
            }
            Some(d)
        }
    }
}

/// `Terminating`: y' = u (input held over the step), y(start) = 0; the
/// model asks to end the simulation at `t_end`: the step that reaches or
/// crosses `t_end` ends there ([`StepError::Terminate`]). FMI 2:
/// `fmi2DoStep` returns `fmi2Discard`, `fmi2GetBooleanStatus(fmi2Terminated)`
/// is true, `fmi2LastSuccessfulTime` is `t_end`. FMI 3: `terminateSimulation`
/// with `lastSuccessfulTime = t_end`, `earlyReturn` if the step was cut
/// short and early return is allowed, else `fmi3Discard` (see
/// `fmu_kit::Instance::step`). Further steps are refused.
pub mod terminating {
    use super::*;

    /// Input u (held over each step).
    pub const U: Vr = 1;
    /// Output y = integral of u from the start time.
    pub const Y: Vr = 2;
    /// When the model asks to terminate.
    pub const T_END: Vr = 3;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "Terminating",
            "y' = u (input held over the step, exact), y(start) = 0; asks to terminate at t_end: \
             the step that reaches or crosses t_end ends there",
            build,
        )
        .var(Variable::input(
            U,
            "u",
            1.0,
            "Input (rate of y, held over the step)",
        ))
        .var(
            Variable::output(Y, "y", "Integral of u from the start time")
                .depends_on(&[])
                .initial_depends_on(&[]),
        )
        .var(
            Variable::parameter(
                T_END,
                "t_end",
                0.5,
                "Time at which the model asks to terminate",
            )
            .unit(S),
        )
        .experiment(0.0, 1.0, 0.01)
        .output_derivatives(1)
        .interpolate_inputs(false)
        .might_return_early(true)
    }

    struct Terminating {
        t_end: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Terminating {
            t_end: v.finite("t_end", T_END)?,
        }))
    }

    impl Model for Terminating {
        fn init(&mut self, v: &mut Values) {
            v[Y] = 0.0;
        }

        fn do_step(
            &mut self,
            t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let end = t + h;
            // The same relative tolerance as the kit's time checks: a step
            // that ends within it of t_end reaches t_end.
            let tol = 1e-9 * end.abs().max(1.0);
            if end < self.t_end - tol {
                v[Y] += u.value(U) * h;
                return Ok(());
            }
            let reached = if (end - self.t_end).abs() <= tol {
                end
            } else {
                self.t_end.clamp(t, end)
            };
            v[Y] += u.value(U) * (reached - t);
            Err(StepError::Terminate {
                reached,
                message: format!(
                    "Terminating: t_end = {} reached in the step from {t} to {end}; the simulation ends at t = {reached}",
                    self.t_end
                ),
            })
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            _t: f64,
            _v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == Y && order == 1).then(|| u.value(U))
        }
    }
}
