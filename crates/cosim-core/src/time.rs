//! Simulation time as integer ticks, so that communication points never
//! drift and print exactly.
//!
//! A run keeps its time as a whole number of ticks of `10^-k` s (by
//! default nanoseconds, `k = 9`, as libcosim: `cosim::duration` is
//! `std::chrono::duration<int64_t, std::nano>`). An FMU sees
//! `t = ticks / 10^k` (one correctly rounded division, so `0.009` and not
//! `0.009000000000000001`), and a step from `t_n` to `t_{n+1}` is handed
//! over as the difference of the two converted points, `h = t_{n+1} - t_n`
//! (libcosim's `to_double_duration`): the FMU's own `t + h` then lands on
//! the next point. With nanosecond ticks the points and step sizes are
//! those of libcosim bit for bit.
//!
//! A step that is not a whole number of nanoseconds (2^-10 s, say) needs a
//! finer tick: [`TimeBase::choose`] takes the coarsest of 1 ns, 100 ps, ...,
//! 1 fs in which every given time is whole. A time that is whole in none
//! (1/3 s) is refused, saying so.

/// The finest tick: 10^-15 s (femtoseconds).
const FINEST_EXPONENT: u32 = 15;
/// The default tick: 10^-9 s (nanoseconds, as libcosim).
const DEFAULT_EXPONENT: u32 = 9;
/// Largest tick count a time may have, so that sums of a few never
/// overflow `i64` (2^62 ns is 146 years; at 1 fs, 4611 s).
const MAX_TICKS: f64 = (1u64 << 62) as f64;

/// `x.round() as i64` without the library call `f64::round` makes on the
/// baseline x86-64 target (the run loop rounds times every macro step):
/// below 2^52 in magnitude the conversion truncates exactly and the
/// fraction left is exact, so the result is the same.
#[inline]
fn round_half_away(x: f64) -> i64 {
    const EXACT: f64 = (1u64 << 52) as f64;
    if x.abs() < EXACT {
        let t = x as i64;
        let frac = x - t as f64;
        t + i64::from(frac >= 0.5) - i64::from(frac <= -0.5)
    } else {
        x.round() as i64
    }
}

/// The resolution of simulation time: ticks of `10^-exponent` seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeBase {
    exponent: u32,
    per_second: i64,
    /// `per_second` as a float, for conversions.
    scale: f64,
}

impl Default for TimeBase {
    fn default() -> Self {
        TimeBase::NANOSECONDS
    }
}

impl TimeBase {
    /// Nanosecond ticks (libcosim's).
    pub const NANOSECONDS: TimeBase = TimeBase {
        exponent: DEFAULT_EXPONENT,
        per_second: 1_000_000_000,
        scale: 1e9,
    };

    /// Ticks of `10^-exponent` s (`exponent` clamped to 0..=15).
    pub fn with_exponent(exponent: u32) -> TimeBase {
        let exponent = exponent.min(FINEST_EXPONENT);
        let per_second = 10i64.pow(exponent);
        TimeBase {
            exponent,
            per_second,
            scale: per_second as f64,
        }
    }

    /// The coarsest resolution from nanoseconds down to femtoseconds in
    /// which every one of `times` (named, for the message) is a whole
    /// number of ticks. A time that is whole in none, or too large for the
    /// finest resolution it needs, is an error naming it.
    pub fn choose(times: &[(&str, f64)]) -> Result<TimeBase, String> {
        'exponent: for exponent in DEFAULT_EXPONENT..=FINEST_EXPONENT {
            let base = TimeBase::with_exponent(exponent);
            for &(_, t) in times {
                if base.exact_ticks(t).is_none() {
                    continue 'exponent;
                }
            }
            return Ok(base);
        }
        // Name the first time that no resolution represents.
        let bad = times
            .iter()
            .find(|(_, t)| {
                (DEFAULT_EXPONENT..=FINEST_EXPONENT)
                    .all(|e| TimeBase::with_exponent(e).exact_ticks(*t).is_none())
            })
            .or_else(|| times.first());
        let (name, t) = bad.copied().unwrap_or(("a time", f64::NAN));
        let t = crate::text::number(t);
        Err(format!(
            "{name} = {t} s is not a whole number of ticks at any resolution from 1 ns to 1 fs \
             together with the other times of the run (cosim keeps time as integer ticks, as \
             libcosim keeps nanoseconds, so that communication points never drift): give it as \
             a finite decimal of at most 15 decimal places, within {:.0} s",
            MAX_TICKS / 1e15
        ))
    }

    /// The exponent: ticks of `10^-exponent` s.
    pub fn exponent(&self) -> u32 {
        self.exponent
    }

    /// Ticks per second.
    pub fn per_second(&self) -> i64 {
        self.per_second
    }

    /// The tick, s.
    pub fn tick(&self) -> f64 {
        1.0 / self.scale
    }

    /// `ticks` in seconds: one correctly rounded division, so a time given
    /// as a decimal prints as that decimal.
    #[inline]
    pub fn seconds(&self, ticks: i64) -> f64 {
        ticks as f64 / self.scale
    }

    /// The nearest tick count of `seconds`, half away from zero
    /// (saturating; NaN gives 0).
    #[inline]
    pub fn round(&self, seconds: f64) -> i64 {
        round_half_away(seconds * self.scale)
    }

    /// `seconds` as ticks, when it is a whole number of them (within the
    /// rounding of its decimal-to-binary conversion) and not too large.
    pub fn exact_ticks(&self, seconds: f64) -> Option<i64> {
        let x = seconds * self.scale;
        if !x.is_finite() || x.abs() >= MAX_TICKS {
            return None;
        }
        let n = x.round();
        // The product carries the rounding of `seconds` itself (half an
        // ulp) and of the multiplication (the scale is exact): two ulps of x
        // at most, never a millionth of a tick.
        let slack = (2.0 * f64::EPSILON * x.abs()).max(1e-6);
        ((x - n).abs() <= slack).then_some(n as i64)
    }

    /// The duration from `t0` to `t1` (both on the tick grid) in seconds,
    /// computed from ticks: exact, for logs.
    #[inline]
    pub fn span(&self, t0: f64, t1: f64) -> f64 {
        self.seconds(self.round(t1) - self.round(t0))
    }

    /// The end of a step of nominal size `h` from `t` towards `t_stop`
    /// (all on the tick grid): a whole number of ticks, at least one;
    /// shortened to hit `t_stop` exactly, and stretched to it when only a
    /// sliver (at most a millionth of the step) would remain, so the run
    /// never ends with a degenerate step.
    pub fn step_end(&self, t: f64, h: f64, t_stop: f64) -> f64 {
        let (now, stop) = (self.round(t), self.round(t_stop));
        let n = self.round(h).max(1);
        let remaining = stop - now;
        let end = if n >= remaining || (remaining - n) as f64 <= 1e-6 * n as f64 {
            stop
        } else {
            now + n
        };
        self.seconds(end)
    }

    /// The resolution's name, for messages: "1 ns", "100 ps", "1 fs".
    pub fn describe(&self) -> String {
        // The smallest unit in which the tick is a whole number.
        let (unit, unit_exp) = match self.exponent {
            0 => ("s", 0),
            1..=3 => ("ms", 3),
            4..=6 => ("us", 6),
            7..=9 => ("ns", 9),
            10..=12 => ("ps", 12),
            _ => ("fs", 15),
        };
        format!(
            "{} {unit}",
            10u64.pow(unit_exp - self.exponent.min(unit_exp))
        )
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn rounding_is_f64_round() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4503599627370495.5,
            -4503599627370495.5,
            4503599627370496.0,
            9.3e18,
            -9.3e18,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-3 * 1e9,
            0.1 * 3.0 * 1e9,
        ];
        // A spread of magnitudes and fractions.
        let mut x = 1.234_567_89e-6_f64;
        while x < 1e17 {
            xs.extend([x, -x, x + 0.5, x - 0.5, (x * 2.0).floor() / 2.0]);
            x *= 1.37;
        }
        for x in xs {
            assert_eq!(round_half_away(x), x.round() as i64, "{x:e}");
        }
    }

    use super::*;

    #[test]
    fn nanoseconds_print_as_decimals_and_match_libcosim() {
        let b = TimeBase::NANOSECONDS;
        // libcosim: to_double_time_point(t) = count / 1e9.
        assert_eq!(b.seconds(9_000_000).to_string(), "0.009");
        assert_eq!(b.seconds(24_900_000_000).to_string(), "24.9");
        // What t0 + n*h gives instead:
        assert_ne!(9.0 * 0.001, 0.009);
        assert_eq!(b.exact_ticks(1e-3), Some(1_000_000));
        assert_eq!(b.exact_ticks(0.29), Some(290_000_000));
        assert_eq!(b.exact_ticks(1.0 / 3.0), None);
    }

    #[test]
    fn a_finer_tick_only_where_a_time_needs_it() {
        let b = TimeBase::choose(&[("start", 0.0), ("stop", 10.0), ("step", 1e-3)]).unwrap();
        assert_eq!(b, TimeBase::NANOSECONDS);
        // 2^-10 s = 976562.5 ns: whole in units of 100 ps.
        let b = TimeBase::choose(&[("stop", 1.0), ("step", 2f64.powi(-10))]).unwrap();
        assert_eq!(b.per_second(), 10_000_000_000);
        assert_eq!(b.describe(), "100 ps");
        assert_eq!(b.exact_ticks(2f64.powi(-10)), Some(9_765_625));
        let e = TimeBase::choose(&[("stop", 1.0), ("the step", 1.0 / 3.0)]).unwrap_err();
        assert!(
            e.starts_with("the step = 0.3333333333333333 s is not a whole number"),
            "{e}"
        );
        // Too long a run for the resolution its step needs.
        assert!(TimeBase::choose(&[("stop", 1e6), ("step", 1e-15)]).is_err());
    }

    #[test]
    fn steps_end_on_the_grid_and_hit_the_stop_time() {
        let b = TimeBase::NANOSECONDS;
        // A nominal step is rounded to whole ticks.
        assert_eq!(b.step_end(0.1, 0.0100000004, 1.0), 0.11);
        // The last step is shortened to end at the stop time...
        assert_eq!(b.step_end(0.995, 0.01, 1.0), 1.0);
        // ... and stretched to it rather than leave a sliver.
        assert_eq!(b.step_end(0.99, 0.01 - 1e-9, 1.0), 1.0);
        // At least one tick.
        assert_eq!(b.step_end(0.5, 1e-12, 1.0), 0.500000001);
        assert_eq!(b.span(0.1, 0.2), 0.1);
        assert_eq!(b.describe(), "1 ns");
        assert_eq!(TimeBase::with_exponent(15).describe(), "1 fs");
    }
}
