//! `Ballistic` (Co-Simulation with event mode): state events, the test
//! model of events a step locates in FMI 3 Co-Simulation.
//!
//! A ball dropped from h0 at rest: h'' = -g, solved in closed form from
//! the last event (t_e, h_e, v_e): h(t) = h_e + v_e (t - t_e) - g/2 (t -
//! t_e)^2, v(t) = v_e - g (t - t_e). The state event is where h reaches 0
//! going down, located exactly (the positive root of the quadratic,
//! t_i = t_e + (v_e + sqrt(v_e^2 + 2 g h_e)) / g); a step stops there with
//! h = 0 and the impact speed v(t_i) < 0 (the values before the event).
//! The update at t_i (Event Mode, or inside the step without it) counts a
//! bounce and re-initializes v := -e v; a rebound slower than
//! [`V_REST`] leaves the ball at rest on the ground (h = v = 0, `resting`,
//! no more events), so it never chatters. The anchor (t_e, h_e, v_e) is
//! held in discrete locals, part of the FMU state.
//!
//! Reference ([`crate::reference::ballistic_bounces`],
//! [`crate::reference::ballistic_state`]): the first bounce at t_1 =
//! sqrt(2 h0 / g) with impact speed v_1 = sqrt(2 g h0), the k-th rebound
//! e^k v_1 and the next bounce 2 e^k v_1 / g later. With the defaults
//! (g = 9.81, e = 0.7, h0 = 1): t_1 = 0.4515236, at rest after 43
//! bounces (the 43rd rebound, 0.7^43 v_1 = 9e-7 m/s, is below [`V_REST`]),
//! at t = 2.5586333 s.

use fmu_kit::{
    EventModel, EventStep, EventUpdate, Inputs, LogLevel, Model, ModelSpec, StepError, TIME,
    Values, Variable, Vr,
};

/// Output: the height h.
pub const H: Vr = 1;
/// Output: the velocity v = h'.
pub const V: Vr = 2;
/// Output (Int32, discrete): the number of bounces so far.
pub const BOUNCES: Vr = 3;
/// Output (Boolean, discrete): the ball rests on the ground.
pub const RESTING: Vr = 4;
/// Parameter: gravity g.
pub const G: Vr = 5;
/// Parameter: coefficient of restitution e.
pub const E: Vr = 6;
/// Parameter: the initial height h0 (at rest).
pub const H0: Vr = 7;
/// Local (discrete): t_e, the time of the last event (the start time
/// before the first).
pub const T_E: Vr = 8;
/// Local (discrete): h_e, the height at t_e.
pub const H_E: Vr = 9;
/// Local (discrete): v_e, the velocity just after t_e.
pub const V_E: Vr = 10;

/// The rebound speed below which the ball comes to rest.
pub const V_REST: f64 = 1e-6;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "Ballistic",
        "State events (Co-Simulation with event mode): a bouncing ball in closed form, h'' = -g, v := -e v where h reaches 0 going down",
        build,
    )
    .var(Variable::output(H, "h", "Height").depends_on(&[]))
    .var(Variable::output(V, "v", "Velocity").depends_on(&[]))
    .var(Variable::int_output(BOUNCES, "bounces", "Number of bounces so far").depends_on(&[]))
    .var(Variable::bool_output(RESTING, "resting", "The ball rests on the ground (a rebound slower than 1e-6 m/s)").depends_on(&[]))
    .var(Variable::parameter(G, "g", 9.81, "Gravity").min(0.0))
    .var(Variable::parameter(E, "e", 0.7, "Coefficient of restitution").min(0.0).max(1.0))
    .var(Variable::parameter(H0, "h0", 1.0, "Initial height (at rest)").min(0.0))
    .var(Variable::local(T_E, "t_e", "Time of the last event").discrete())
    .var(Variable::local(H_E, "h_e", "Height at the last event").discrete())
    .var(Variable::local(V_E, "v_e", "Velocity just after the last event").discrete())
    .experiment(0.0, 3.0, 0.01)
    .output_derivatives(2)
    .directional_derivatives(false)
    .event_mode()
}

struct Ballistic {
    g: f64,
    e: f64,
    h0: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    let e = v.non_negative("e", E)?;
    if e > 1.0 {
        return Err(format!("e must be <= 1, got {e}"));
    }
    Ok(Box::new(Ballistic {
        g: v.positive("g", G)?,
        e,
        h0: v.non_negative("h0", H0)?,
    }))
}

/// 1e-9 relative: a time that close to the impact is the impact.
fn tolerance(t: f64) -> f64 {
    1e-9 * t.abs().max(1.0)
}

impl Ballistic {
    /// The time of the next impact, from the anchor (none at rest).
    fn impact(&self, v: &Values) -> Option<f64> {
        if v.bool(RESTING) {
            return None;
        }
        let (h, w) = (v[H_E], v[V_E]);
        Some(v[T_E] + (w + (w * w + 2.0 * self.g * h).sqrt()) / self.g)
    }
}

impl Model for Ballistic {
    fn init(&mut self, v: &mut Values) {
        v[T_E] = v[TIME];
        v[H_E] = self.h0;
        v[V_E] = 0.0;
        v[BOUNCES] = 0.0;
        v.set_bool(RESTING, self.h0 == 0.0);
    }

    fn outputs(&self, t: f64, v: &mut Values, _u: &Inputs) {
        let Some(ti) = self.impact(v) else {
            v[H] = 0.0;
            v[V] = 0.0;
            return;
        };
        if t >= ti - tolerance(ti) && t <= ti + tolerance(ti) {
            // At the impact (before the update): exactly on the ground.
            v[H] = 0.0;
            v[V] = v[V_E] - self.g * (ti - v[T_E]);
        } else {
            let s = t - v[T_E];
            v[H] = (v[H_E] + v[V_E] * s - 0.5 * self.g * s * s).max(0.0);
            v[V] = v[V_E] - self.g * s;
        }
    }

    /// h' = v, h'' = v' = -g in flight; 0 at rest.
    fn output_derivative(
        &self,
        vr: Vr,
        order: u32,
        _t: f64,
        v: &Values,
        _u: &Inputs,
    ) -> Option<f64> {
        let g = if v.bool(RESTING) { 0.0 } else { self.g };
        match (vr, order) {
            (H, 1) => Some(v[V]),
            (H, 2) | (V, 1) => Some(-g),
            (V, 2) => Some(0.0),
            _ => None,
        }
    }

    fn event_mode(&mut self) -> Option<&mut dyn EventModel> {
        Some(self)
    }
}

impl EventModel for Ballistic {
    fn step_until_event(
        &mut self,
        t: f64,
        t_end: f64,
        v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<EventStep, StepError> {
        // The closed form needs no integration: the outputs at the time
        // reached are computed from the anchor.
        Ok(match self.impact(v) {
            Some(ti) if ti <= t_end => EventStep::event_at(ti.max(t)),
            _ => EventStep::completed(t_end),
        })
    }

    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        _u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let Some(ti) = self.impact(v) else {
            return EventUpdate::default();
        };
        if t < ti - tolerance(ti) {
            return EventUpdate::default();
        }
        let impact_speed = v[V_E] - self.g * (ti - v[T_E]);
        let rebound = -self.e * impact_speed;
        v[BOUNCES] += 1.0;
        v[T_E] = ti;
        v[H_E] = 0.0;
        if rebound < V_REST {
            v[V_E] = 0.0;
            v.set_bool(RESTING, true);
            log(
                LogLevel::Info,
                &format!("Ballistic: at rest after bounce {} at t = {ti}", v[BOUNCES]),
            );
        } else {
            v[V_E] = rebound;
        }
        EventUpdate {
            values_of_continuous_states_changed: true,
            ..EventUpdate::default()
        }
    }
}
