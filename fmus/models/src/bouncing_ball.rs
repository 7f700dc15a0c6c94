//! `BouncingBallME` (Model Exchange only): a ball dropped from `h0` that
//! bounces on the floor, the test model of state events.
//!
//! h' = v, v' = -g while in flight; event indicator z = h. At a contact
//! (Event Mode with h <= 0 and v < 0) the ball bounces: v := -e v, and h
//! := the smallest positive double, so that the indicator is not 0 when
//! integration restarts (FMI 2.0 sec. 3.2.2: z_j != 0 at a restart). A
//! rebound slower than `v_min` ends the bouncing: v := 0, and the ball
//! rests (`resting`, a discrete state; v' = 0 from then on, h stays just
//! above 0: no more crossings).
//!
//! Contact times (the reference, [`crate::reference::bouncing_ball_contacts`]):
//! the first at t1 = sqrt(2 h0 / g), with impact speed v1 = sqrt(2 g h0);
//! after contact k (k = 1, 2, ...) the ball leaves at e^k v1 and lands
//! 2 e^k v1 / g later. The ball rests after the first contact k whose
//! rebound e^k v1 is below `v_min` ([`crate::reference::bouncing_ball_contact_count`]).
//! With the defaults (h0 = 1 m, g = 9.81 m/s2, e = 0.7, v_min = 0.1 m/s):
//! t1 = 0.451524 s, 11 contacts, at rest from t = 2.499113 s.

use fmu_kit::units::{M, M_PER_S, M_PER_S2};
use fmu_kit::{
    ContinuousModel, ContinuousState, DependencyKind, EventUpdate, Inputs, LogLevel, Model,
    ModelExchangeSpec, ModelSpec, Values, Variable, Vr,
};

/// Output (state): height above the floor.
pub const H: Vr = 1;
/// Local: der(h) = v.
pub const DER_H: Vr = 2;
/// Output (state): velocity (upwards).
pub const V: Vr = 3;
/// Local: der(v) = -g in flight, 0 at rest.
pub const DER_V: Vr = 4;
/// Parameter: initial height.
pub const H0: Vr = 5;
/// Parameter: gravity.
pub const G: Vr = 6;
/// Parameter: coefficient of restitution.
pub const E: Vr = 7;
/// Parameter: rebound speed below which the ball rests.
pub const V_MIN: Vr = 8;
/// Output (Integer): the number of contacts so far.
pub const CONTACTS: Vr = 9;
/// Local (Boolean): the ball rests on the floor.
pub const RESTING: Vr = 10;

/// The spec.
pub fn spec() -> ModelSpec {
    ModelSpec::new(
        "BouncingBallME",
        "Bouncing ball (Model Exchange only): h' = v, v' = -g; at a contact (event indicator h) v := -e v, at rest once a rebound is slower than v_min",
        build,
    )
    .var(Variable::output(H, "h", "Height of the ball above the floor").unit(M).depends_on(&[]).initial_depends_on(&[H0]))
    .var(
        Variable::local(DER_H, "der(h)", "Derivative of h: v")
            .unit(M_PER_S)
            .depends_on(&[(V, DependencyKind::Constant)])
            .initial_depends_on(&[]),
    )
    .var(Variable::output(V, "v", "Velocity of the ball (upwards)").unit(M_PER_S).depends_on(&[]).initial_depends_on(&[]))
    .var(
        Variable::local(DER_V, "der(v)", "Derivative of v: -g in flight, 0 at rest")
            .unit(M_PER_S2)
            .depends_on(&[(RESTING, DependencyKind::Dependent)])
            .initial_depends_on(&[G]),
    )
    .var(Variable::parameter(H0, "h0", 1.0, "Initial height").unit(M).min(0.0))
    .var(Variable::parameter(G, "g", 9.81, "Gravity acceleration").unit(M_PER_S2).min(0.0))
    .var(Variable::parameter(E, "e", 0.7, "Coefficient of restitution").min(0.0).max(1.0))
    .var(Variable::parameter(V_MIN, "v_min", 0.1, "Rebound speed below which the ball rests").unit(M_PER_S).min(0.0))
    .var(Variable::int_output(CONTACTS, "contacts", "Number of contacts with the floor so far").depends_on(&[]))
    .var(
        Variable::local(RESTING, "resting", "The ball rests on the floor")
            .typed(fmu_kit::VarType::Boolean),
    )
    .experiment(0.0, 3.0, 0.01)
    .model_exchange(
        ModelExchangeSpec::new()
            .state(ContinuousState::new(H, DER_H).reinit())
            .state(ContinuousState::new(V, DER_V).reinit())
            .event_indicator(H)
            .partial_derivatives()
            .without_co_simulation(),
    )
}

struct Ball {
    h0: f64,
    g: f64,
    e: f64,
    v_min: f64,
}

fn build(v: &Values) -> Result<Box<dyn Model>, String> {
    let e = v.non_negative("e", E)?;
    if e > 1.0 {
        return Err(format!("e must be <= 1, got {e}"));
    }
    Ok(Box::new(Ball {
        h0: v.positive("h0", H0)?,
        g: v.positive("g", G)?,
        e,
        v_min: v.non_negative("v_min", V_MIN)?,
    }))
}

impl Model for Ball {
    fn init(&mut self, v: &mut Values) {
        v[H] = self.h0;
        v[V] = 0.0;
        v[CONTACTS] = 0.0;
        v.set_bool(RESTING, false);
    }

    fn outputs(&self, _t: f64, _v: &mut Values, _u: &Inputs) {}

    fn model_exchange(&mut self) -> Option<&mut dyn ContinuousModel> {
        Some(self)
    }
}

impl ContinuousModel for Ball {
    fn derivatives(&mut self, _t: f64, v: &mut Values, _u: &Inputs) {
        v[DER_H] = v[V];
        v[DER_V] = if v.bool(RESTING) { 0.0 } else { -self.g };
    }

    fn update_discrete_states(
        &mut self,
        t: f64,
        v: &mut Values,
        _u: &Inputs,
        log: &dyn Fn(LogLevel, &str),
    ) -> EventUpdate {
        let contact = !v.bool(RESTING) && v[H] <= 0.0 && v[V] < 0.0;
        if contact {
            v[CONTACTS] += 1.0;
            let rebound = -self.e * v[V];
            // Just above the floor: the indicator is not 0 at the restart.
            v[H] = f64::MIN_POSITIVE;
            if rebound < self.v_min {
                v[V] = 0.0;
                v.set_bool(RESTING, true);
                log(
                    LogLevel::Info,
                    &format!(
                        "BouncingBallME: contact {} at t = {t}, at rest",
                        v[CONTACTS]
                    ),
                );
            } else {
                v[V] = rebound;
                log(
                    LogLevel::Info,
                    &format!(
                        "BouncingBallME: contact {} at t = {t}, rebound {rebound} m/s",
                        v[CONTACTS]
                    ),
                );
            }
        }
        EventUpdate {
            values_of_continuous_states_changed: contact,
            ..EventUpdate::default()
        }
    }

    fn partial_derivative(&self, unknown: Vr, known: Vr, _t: f64, _v: &Values, _u: &Inputs) -> f64 {
        if (unknown, known) == (DER_H, V) {
            1.0
        } else {
            0.0
        }
    }
}
