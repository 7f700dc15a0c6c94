//! `Greeting` (FMI 2.0 and FMI 3.0): the test model for String variables.
//! A String parameter `prefix` and a String input `name` give the String
//! output `message = prefix + ", " + name`; two numeric outputs make the
//! strings visible to tools that trace numbers only: `length`, the number
//! of characters (Unicode scalar values) of `message` (Integer / Int32),
//! and `checksum`, the sum over the characters of `message` of (position,
//! from 1) times (code point) (Real / Float64, exact: a whole number well
//! below 2^53 for any text shorter than about 10^5 characters).
//!
//! With the start values `message` is "Hello, world", `length` 12 and
//! `checksum` 7552. The outputs follow the current values (feed-through
//! from `name`: an input set after a step shows at once); nothing depends
//! on time, so every step leaves them as they are. `prefix` is `fixed`
//! (set before initialization ends), `name` `discrete` (set at any
//! communication point, held until set again). Both are part of the FMU
//! state. Neither accepts anything but text: an empty string is a valid
//! value of both.

use fmu_kit::{
    DependencyKind, Inputs, LogLevel, Model, ModelSpec, StepError, Values, Variable, Vr,
};

/// String input `name`, start "world".
pub const NAME: Vr = 1;
/// String output `message` = prefix + ", " + name.
pub const MESSAGE: Vr = 2;
/// Integer output: the characters (Unicode scalar values) of `message`.
pub const LENGTH: Vr = 3;
/// Real output: sum over the characters of `message` of (position from 1)
/// times (code point).
pub const CHECKSUM: Vr = 4;
/// String parameter `prefix`, start "Hello".
pub const PREFIX: Vr = 5;

/// The spec.
pub fn spec() -> ModelSpec {
    let feed = [(NAME, DependencyKind::Dependent)];
    ModelSpec::new(
        "Greeting",
        "String variables: message = prefix + \", \" + name (String parameter, input, output); length and checksum of message as numbers",
        build,
    )
    .var(Variable::string_input(
        NAME,
        "name",
        "world",
        "Who is greeted (String input)",
    ))
    .var(
        Variable::string_output(MESSAGE, "message", "prefix + \", \" + name (String output)")
            .depends_on(&feed)
            .initial_depends_on(&[NAME, PREFIX]),
    )
    .var(
        Variable::int_output(
            LENGTH,
            "length",
            "Characters (Unicode scalar values) of message",
        )
        .depends_on(&feed)
        .initial_depends_on(&[NAME, PREFIX]),
    )
    .var(
        Variable::output(
            CHECKSUM,
            "checksum",
            "Sum over the characters of message of (position from 1) * (code point)",
        )
        .discrete()
        .depends_on(&feed)
        .initial_depends_on(&[NAME, PREFIX]),
    )
    .var(Variable::string_parameter(
        PREFIX,
        "prefix",
        "Hello",
        "Greeting word (String parameter)",
    ))
    .experiment(0.0, 1.0, 0.01)
    // The first derivative of the (piecewise constant) checksum: 0.
    .output_derivatives(1)
    .interpolate_inputs(false)
    .directional_derivatives(false)
}

/// `prefix + ", " + name`.
pub fn message(prefix: &str, name: &str) -> String {
    format!("{prefix}, {name}")
}

/// The `checksum` of a text: sum over its characters of (position from 1)
/// times (code point).
pub fn checksum(text: &str) -> f64 {
    text.chars()
        .zip(1u32..)
        .map(|(c, i)| f64::from(i) * f64::from(u32::from(c)))
        .sum()
}

struct Greeting;

fn build(_v: &Values) -> Result<Box<dyn Model>, String> {
    Ok(Box::new(Greeting))
}

impl Model for Greeting {
    fn init(&mut self, _v: &mut Values) {}

    fn do_step(
        &mut self,
        _t: f64,
        _h: f64,
        _v: &mut Values,
        _u: &Inputs,
        _log: &dyn Fn(LogLevel, &str),
    ) -> Result<(), StepError> {
        Ok(())
    }

    fn outputs(&self, _t: f64, v: &mut Values, _u: &Inputs) {
        // Built in the output's own buffer (no allocation once it is
        // large enough).
        let mut text = std::mem::take(v.str_mut(MESSAGE));
        text.clear();
        text.push_str(v.str(PREFIX));
        text.push_str(", ");
        text.push_str(v.str(NAME));
        v[LENGTH] = text.chars().count() as f64;
        v[CHECKSUM] = checksum(&text);
        *v.str_mut(MESSAGE) = text;
    }

    fn output_derivative(
        &self,
        vr: Vr,
        order: u32,
        _t: f64,
        _v: &Values,
        _u: &Inputs,
    ) -> Option<f64> {
        (vr == CHECKSUM && order == 1).then_some(0.0)
    }
}
