//! The PI step controller shared by every adaptive master
//! (sadjina2016 eq. 15 in the log form kyllingstad recommends;
//! docs/algorithms.md).
//!
//! ```text
//! dt_{i+1} = alpha * eps_i^-(kI + kP) * eps_{i-1}^kP * dt_i
//! ```
//! then the ratio `dt_{i+1} / dt_i` is clamped to `[theta_min, theta_max]`
//! and the step to `[dt_min, dt_max]`. Gains default to `kI = 0.3 / p`,
//! `kP = 0.4 / p` for an indicator of order `p` in the step.

use serde::Serialize;

/// How the controller starts, treats an indicator of zero and rounds the
/// step: the two published implementations of the same PI law.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PiVariant {
    /// sadjina2016: the step adapts from the first step on (the missing
    /// previous indicator taken equal to the current one), an indicator
    /// near zero grows the step at `theta_max`, steps are not rounded.
    #[default]
    Sadjina2016,
    /// libcosim's `ecco_algorithm::adjust_step_size`: the second macro step
    /// keeps the initial step (the first step's indicator is not
    /// evaluated), the step after it is chosen with a previous indicator of
    /// 1, an indicator of exactly zero (or a previous one of zero) keeps
    /// the step and is remembered, and the new step is
    /// truncated to whole nanoseconds (`to_duration`) before it is clamped
    /// to `[dt_min, dt_max]`.
    Libcosim,
}

/// Settings of the PI controller (defaults: sadjina2016 Table I).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PiSettings {
    /// Safety factor alpha.
    pub alpha: f64,
    /// Integral gain kI.
    pub k_i: f64,
    /// Proportional gain kP.
    pub k_p: f64,
    /// Smallest step, s.
    pub dt_min: f64,
    /// Largest step, s.
    pub dt_max: f64,
    /// Smallest ratio of consecutive steps.
    pub theta_min: f64,
    /// Largest ratio of consecutive steps.
    pub theta_max: f64,
    /// Start, zero-indicator and rounding rules.
    pub variant: PiVariant,
}

impl PiSettings {
    /// Table I defaults with the gains for an indicator of order `p`.
    pub fn for_order(p: u32) -> Self {
        let p = f64::from(p.max(1));
        PiSettings {
            alpha: 0.8,
            k_i: 0.3 / p,
            k_p: 0.4 / p,
            dt_min: 1e-4,
            dt_max: 1e-2,
            theta_min: 0.2,
            theta_max: 1.5,
            variant: PiVariant::Sadjina2016,
        }
    }
}

/// The controller state: the previous indicator value.
#[derive(Debug, Clone)]
pub struct PiController {
    s: PiSettings,
    previous: Option<f64>,
    floor: f64,
    /// Steps seen (libcosim's variant counts them).
    steps: u64,
}

impl PiController {
    /// A controller with the given settings.
    pub fn new(s: PiSettings) -> Self {
        // An indicator of zero (no error at all) would ask for an infinite
        // step. Values below the one at which the controller already asks
        // for theta_max are equivalent, so they are raised to it: the step
        // then grows at theta_max, and a tiny previous value cannot make
        // the proportional term shrink the next step absurdly.
        let floor = if s.k_i > 0.0 {
            (s.alpha / s.theta_max).powf(1.0 / s.k_i).clamp(1e-300, 1.0)
        } else {
            1e-12
        };
        PiController {
            s,
            previous: None,
            floor,
            steps: 0,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &PiSettings {
        &self.s
    }

    /// Forgets the indicator history (after a restart).
    pub fn reset(&mut self) {
        self.previous = None;
        self.steps = 0;
    }

    /// The next step after a step of size `dt` whose indicator was `eps`.
    /// The result satisfies every limit: the ratio to `dt` is within
    /// `[theta_min, theta_max]` and the step within `[dt_min, dt_max]`
    /// (bounds take precedence over the ratio when they conflict).
    pub fn next_step(&mut self, dt: f64, eps: f64) -> f64 {
        if self.s.variant == PiVariant::Libcosim && eps.is_finite() {
            return self.next_step_libcosim(dt, eps);
        }
        let s = &self.s;
        let eps = if eps.is_finite() {
            eps.max(self.floor)
        } else {
            // A non-finite indicator means the step was far too large.
            f64::INFINITY
        };
        let prev = self.previous.unwrap_or(eps);
        self.previous = Some(if eps.is_finite() {
            eps
        } else {
            1.0 / self.floor
        });
        let factor = if eps.is_finite() {
            s.alpha * eps.powf(-(s.k_i + s.k_p)) * prev.powf(s.k_p)
        } else {
            0.0
        };
        let ratio = if factor.is_finite() {
            factor.clamp(s.theta_min, s.theta_max)
        } else {
            s.theta_max
        };
        (ratio * dt).clamp(s.dt_min, s.dt_max)
    }

    /// libcosim's rules (see [`PiVariant::Libcosim`]), operation by
    /// operation as `ecco_algorithm::adjust_step_size` does them, so the
    /// steps are libcosim's to the bit. A non-finite indicator, which
    /// libcosim does not survive, is handled as in the other variant.
    fn next_step_libcosim(&mut self, dt: f64, eps: f64) -> f64 {
        let s = &self.s;
        self.steps += 1;
        if self.steps < 2 {
            return dt;
        }
        // libcosim starts from a previous indicator of 1
        // (`prev_error_estimate_{1.0}`).
        let prev = self.previous.unwrap_or(1.0);
        self.previous = Some(eps);
        if prev == 0.0 || eps == 0.0 {
            return dt;
        }
        let factor = s.alpha * eps.powf(-s.k_i - s.k_p) * prev.powf(s.k_p);
        let ratio = factor.clamp(s.theta_min, s.theta_max);
        // libcosim's time unit is the nanosecond (every time base of
        // cosim is as fine or finer, so the step stays on its grid).
        let next = (ratio * dt * 1e9).trunc() / 1e9;
        next.clamp(s.dt_min, s.dt_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_hold_for_any_indicator() {
        let s = PiSettings::for_order(2);
        let mut c = PiController::new(s);
        let mut dt = s.dt_min;
        for eps in [
            0.0,
            1e-12,
            1e-3,
            0.5,
            1.0,
            3.0,
            1e6,
            f64::NAN,
            f64::INFINITY,
            0.0,
        ] {
            let next = c.next_step(dt, eps);
            assert!(next >= s.dt_min && next <= s.dt_max, "{next}");
            let ratio = next / dt;
            // The ratio limit holds unless a step bound overrides it.
            assert!(
                (ratio >= s.theta_min - 1e-12 && ratio <= s.theta_max + 1e-12)
                    || next == s.dt_min
                    || next == s.dt_max,
                "eps {eps}: ratio {ratio}"
            );
            dt = next;
        }
    }

    #[test]
    fn libcosim_variant_starts_late_truncates_and_holds_on_zero() {
        let s = PiSettings {
            alpha: 0.9,
            k_i: 0.15,
            k_p: 0.2,
            dt_min: 1e-5,
            dt_max: 1e-2,
            variant: PiVariant::Libcosim,
            ..PiSettings::for_order(2)
        };
        let mut c = PiController::new(s);
        let ns = |x: f64| (x * 1e9).trunc() / 1e9;
        // Step 1: not evaluated, whatever the indicator.
        assert_eq!(c.next_step(1e-4, 7.0), 1e-4);
        // Step 2: the previous indicator is taken as 1.
        let h2 = ns(0.9 * 0.5f64.powf(-0.35) * 1e-4);
        assert_eq!(c.next_step(1e-4, 0.5), h2);
        assert_ne!(
            h2,
            0.9 * 0.5f64.powf(-0.35) * 1e-4,
            "the truncation must show"
        );
        // Step 3: the PI law with the previous indicator 0.5.
        let h3 = ns(0.9 * 0.25f64.powf(-0.35) * 0.5f64.powf(0.2) * h2);
        assert_eq!(c.next_step(h2, 0.25), h3);
        // A zero indicator keeps the step, and so does the step after it.
        assert_eq!(c.next_step(h3, 0.0), h3);
        assert_eq!(c.next_step(h3, 0.3), h3);
        // Then the law again, clamped to theta_min.
        assert_eq!(c.next_step(1e-3, 1e9), 2e-4);
    }

    #[test]
    fn zero_error_grows_at_theta_max() {
        let s = PiSettings::for_order(2);
        let mut c = PiController::new(s);
        let dt = 1e-3;
        assert!((c.next_step(dt, 0.0) - 1.5e-3).abs() < 1e-15);
        assert!((c.next_step(1.5e-3, 0.0) - 2.25e-3).abs() < 1e-15);
    }

    #[test]
    fn integral_action_at_the_target_keeps_the_step_times_alpha() {
        let mut c = PiController::new(PiSettings {
            alpha: 1.0,
            ..PiSettings::for_order(2)
        });
        // eps = 1 twice: the step stays.
        assert_eq!(c.next_step(2e-3, 1.0), 2e-3);
        assert_eq!(c.next_step(2e-3, 1.0), 2e-3);
        // eps = 2^p: the I-part alone halves the step (kI = 0.3/p, so
        // 2^-(0.3 + 0.4) * 2^0.4 = 2^-0.3 for p = 1 with the previous
        // eps = eps).
        let mut c = PiController::new(PiSettings {
            alpha: 1.0,
            ..PiSettings::for_order(1)
        });
        let next = c.next_step(2e-3, 2.0);
        assert!((next - 2e-3 * 2f64.powf(-0.3)).abs() < 1e-15);
    }
}
