//! A room heated under thermostat control: the test pair for DISCRETE
//! coupling (FMI 2 `Integer` / `Boolean`, FMI 3 `Int32` / `Boolean`
//! connections).
//!
//! - [`room`] (`ThermostatRoom`): first-order room temperature driven by a
//!   Boolean heater switch and an Integer heating level, integrated exactly.
//! - [`controller`] (`ThermostatController`): a hysteresis thermostat with a
//!   discrete state, Boolean and Integer outputs.
//!
//! Closed loop: `ThermostatRoom.heater_on = ThermostatController.heater_on`,
//! `ThermostatRoom.level = ThermostatController.level`,
//! `ThermostatController.T = ThermostatRoom.T`. No output has direct
//! feed-through, so the loop has no algebraic loop.
//!
//! The room declares `canInterpolateInputs` although all its inputs are
//! discrete (derivatives on them are refused with Error): masters must hold
//! discrete inputs whatever their extrapolation order. The controller does
//! not interpolate (it samples its Real input `T` as held). Neither provides
//! directional derivatives (there is no Real output / Real input pair).
//!
//! With the defaults (P_unit = 12) level 1 heats towards 22 degC and level 2
//! towards 34 degC, so the loop boosts from 15 degC, then cycles between the
//! thresholds 19 and 21 degC.

use fmu_kit::units::{DEG_C, K, S};
use fmu_kit::{
    ContinuousModel, ContinuousState, Inputs, LogLevel, Model, ModelExchangeSpec, ModelSpec,
    StepError, Values, Variable, Vr,
};

/// `ThermostatRoom`: T' = (T_amb + q - T) / tau with
/// q = heater_on ? level * P_unit : 0, solved exactly over each step with
/// the inputs held.
pub mod room {
    use super::*;

    /// Input: heater switched on (Boolean, discrete).
    pub const HEATER_ON: Vr = 1;
    /// Input: heating level (Integer, discrete).
    pub const LEVEL: Vr = 2;
    /// Output: room temperature (the state; no feed-through).
    pub const T: Vr = 3;
    /// Ambient temperature.
    pub const T_AMB: Vr = 4;
    /// Time constant.
    pub const TAU: Vr = 5;
    /// Temperature rise per heating level at equilibrium.
    pub const P_UNIT: Vr = 6;
    /// Initial room temperature.
    pub const T0: Vr = 7;
    /// Local: der(T) (Model Exchange).
    pub const DER_T: Vr = 8;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "ThermostatRoom",
            "Room temperature T' = (T_amb + q - T) / tau, q = heater_on ? level * P_unit : 0, exact for inputs held over the step; output T (no feed-through)",
            build,
        )
        .var(Variable::bool_input(
            HEATER_ON,
            "heater_on",
            false,
            "Heater switched on (held over the step)",
        ))
        .var(Variable::int_input(
            LEVEL,
            "level",
            1,
            "Heating level; heating q = level * P_unit while heater_on",
        ))
        .var(
            Variable::output(T, "T", "Room temperature")
                .unit(DEG_C)
                .depends_on(&[])
                .initial_depends_on(&[T0]),
        )
        .var(Variable::parameter(T_AMB, "T_amb", 10.0, "Ambient temperature").unit(DEG_C))
        .var(Variable::parameter(TAU, "tau", 60.0, "Time constant of the room").unit(S))
        .var(
            Variable::parameter(
                P_UNIT,
                "P_unit",
                12.0,
                "Equilibrium temperature rise per heating level",
            )
            .unit(K),
        )
        .var(Variable::parameter(T0, "T0", 15.0, "Initial room temperature").unit(DEG_C))
        .var(
            Variable::local(DER_T, "der(T)", "Rate of the room temperature (T_amb + q - T) / tau")
                .unit(fmu_kit::units::K_PER_S)
                .depends_on(&[])
                .initial_depends_on(&[T0]),
        )
        .experiment(0.0, 600.0, 1.0)
        .output_derivatives(1)
        // It has only discrete inputs, so it takes no input derivatives;
        // declaring the capability lets a test check that a master never
        // sends a discrete input one (the kit refuses it with Error).
        .interpolate_inputs(true)
        .directional_derivatives(false)
        // Model Exchange too: a continuous state driven by discrete
        // inputs (an importer sets them in Event Mode only).
        .model_exchange(ModelExchangeSpec::new().state(ContinuousState::new(T, DER_T)))
    }

    struct Room {
        t_amb: f64,
        tau: f64,
        p_unit: f64,
        t0: f64,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        Ok(Box::new(Room {
            t_amb: v.finite("T_amb", T_AMB)?,
            tau: v.positive("tau", TAU)?,
            p_unit: v.finite("P_unit", P_UNIT)?,
            t0: v.finite("T0", T0)?,
        }))
    }

    impl Room {
        /// The equilibrium temperature T_amb + q for the current inputs.
        fn equilibrium(&self, u: &Inputs) -> f64 {
            let q = if u.value(HEATER_ON) != 0.0 {
                u.value(LEVEL) * self.p_unit
            } else {
                0.0
            };
            self.t_amb + q
        }
    }

    impl ContinuousModel for Room {
        fn derivatives(&mut self, _t: f64, v: &mut Values, u: &Inputs) {
            v[DER_T] = (self.equilibrium(u) - v[T]) / self.tau;
        }
    }

    impl Model for Room {
        fn init(&mut self, v: &mut Values) {
            v[T] = self.t0;
        }

        fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
            Some(self)
        }

        fn do_step(
            &mut self,
            _t: f64,
            h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let te = self.equilibrium(u);
            v[T] = te + (v[T] - te) * (-h / self.tau).exp();
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

        fn output_derivative(
            &self,
            vr: Vr,
            order: u32,
            _t: f64,
            v: &Values,
            u: &Inputs,
        ) -> Option<f64> {
            (vr == T && order == 1).then(|| (self.equilibrium(u) - v[T]) / self.tau)
        }
    }
}

/// `ThermostatController`: hysteresis on/off control with a boost level.
///
/// One `doStep(t, h)` with the input `T` held at the value set before the
/// step; at the end of the step: if `on` and `T > T_high`, `on = false`;
/// if not `on` and `T < T_low`, `on = true` (each change counts in
/// `switches`); then `level = T < T_boost ? 2 : 1`. Before the first step
/// (after initialization) `on = on_start`, `level` follows from the value of
/// `T` at initialization, `switches = 0`. The outputs are the discrete state:
/// they change only in `doStep` (no feed-through).
pub mod controller {
    use super::*;

    /// Input: measured temperature (Real, held over the step).
    pub const T: Vr = 1;
    /// Output: heater on (Boolean, discrete state).
    pub const HEATER_ON: Vr = 2;
    /// Output: heating level 1 or 2 (Integer).
    pub const LEVEL: Vr = 3;
    /// Output: number of changes of `heater_on` (Integer).
    pub const SWITCHES: Vr = 4;
    /// Switch-on threshold.
    pub const T_LOW: Vr = 5;
    /// Switch-off threshold.
    pub const T_HIGH: Vr = 6;
    /// Below this temperature the level is 2.
    pub const T_BOOST: Vr = 7;
    /// Initial state of the heater (Boolean parameter).
    pub const ON_START: Vr = 8;

    /// The spec.
    pub fn spec() -> ModelSpec {
        ModelSpec::new(
            "ThermostatController",
            "Hysteresis thermostat: at the end of a step heater_on turns off above T_high and on below T_low (switches counts changes); level = 2 below T_boost, else 1; no feed-through",
            build,
        )
        .var(Variable::input(T, "T", 15.0, "Measured temperature (held over the step)").unit(DEG_C))
        .var(
            Variable::bool_output(HEATER_ON, "heater_on", "Heater on (discrete state)")
                .depends_on(&[])
                .initial_depends_on(&[ON_START]),
        )
        .var(
            Variable::int_output(LEVEL, "level", "Heating level: 2 if T < T_boost, else 1")
                .depends_on(&[])
                .initial_depends_on(&[T, T_BOOST]),
        )
        .var(
            Variable::int_output(SWITCHES, "switches", "Number of changes of heater_on")
                .depends_on(&[])
                .initial_depends_on(&[]),
        )
        .var(
            Variable::parameter(T_LOW, "T_low", 19.0, "Switch on below this temperature")
                .unit(DEG_C),
        )
        .var(
            Variable::parameter(T_HIGH, "T_high", 21.0, "Switch off above this temperature")
                .unit(DEG_C),
        )
        .var(
            Variable::parameter(T_BOOST, "T_boost", 16.0, "Level 2 below this temperature")
                .unit(DEG_C),
        )
        .var(Variable::bool_parameter(
            ON_START,
            "on_start",
            true,
            "Heater state before the first step",
        ))
        .experiment(0.0, 600.0, 1.0)
        .output_derivatives(0)
        .interpolate_inputs(false)
        .directional_derivatives(false)
    }

    struct Controller {
        t_low: f64,
        t_high: f64,
        t_boost: f64,
        on_start: bool,
    }

    fn build(v: &Values) -> Result<Box<dyn Model>, String> {
        let t_low = v.finite("T_low", T_LOW)?;
        let t_high = v.finite("T_high", T_HIGH)?;
        if t_low >= t_high {
            return Err(format!(
                "T_low must be < T_high, got T_low = {t_low}, T_high = {t_high}"
            ));
        }
        Ok(Box::new(Controller {
            t_low,
            t_high,
            t_boost: v.finite("T_boost", T_BOOST)?,
            on_start: v.bool(ON_START),
        }))
    }

    impl Controller {
        fn level(&self, t: f64) -> f64 {
            if t < self.t_boost { 2.0 } else { 1.0 }
        }
    }

    impl Model for Controller {
        fn init(&mut self, v: &mut Values) {
            v.set_bool(HEATER_ON, self.on_start);
            v[LEVEL] = self.level(v[T]);
            v[SWITCHES] = 0.0;
        }

        fn do_step(
            &mut self,
            _t: f64,
            _h: f64,
            v: &mut Values,
            u: &Inputs,
            _log: &dyn Fn(LogLevel, &str),
        ) -> Result<(), StepError> {
            let temp = u.value(T);
            let mut on = v.bool(HEATER_ON);
            if on && temp > self.t_high {
                on = false;
                v[SWITCHES] += 1.0;
            }
            if !on && temp < self.t_low {
                on = true;
                v[SWITCHES] += 1.0;
            }
            v.set_bool(HEATER_ON, on);
            v[LEVEL] = self.level(temp);
            Ok(())
        }

        fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}
    }
}
