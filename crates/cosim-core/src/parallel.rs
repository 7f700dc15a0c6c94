//! Whether Jacobi stepping on the worker pool pays off, decided by
//! measurement.
//!
//! Handing a macro step to the pool costs a few microseconds (waking the
//! workers, joining them). For FMUs whose `doStep` costs less than that,
//! stepping them one after the other on the calling thread is faster; for
//! heavy FMUs the pool wins. The cost of an FMU's step is not known before
//! the run and can change during it (a stiff phase, an event), so the
//! [`PoolChooser`] times both ways on alternating blocks of consecutive
//! macro steps (a pooled step right after an inline one finds the workers
//! asleep, which the pool would not pay in a run of pooled steps), keeps
//! the one with the smaller median step time (a preempted step or a late
//! wake-up on a shared machine must not decide), and measures again every
//! [`RECALIBRATE_EVERY`] steps. The
//! results do not depend on the choice: in a Jacobi step every subsystem
//! reads only its own buffers.

use std::sync::OnceLock;
use std::time::Duration;

/// The processors this process may use
/// ([`std::thread::available_parallelism`], 1 if unknown), looked up once:
/// the lookup reads the cgroup files (tens of microseconds), and a sweep
/// asks for every run.
pub fn processors() -> usize {
    static PROCESSORS: OnceLock<usize> = OnceLock::new();
    *PROCESSORS
        .get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// Consecutive macro steps run one way in a calibration block; the first
/// of each block is a warm-up, not timed.
pub const BLOCK: u64 = 8;
/// Blocks per way and calibration (alternating, inline first).
pub const BLOCKS: u64 = 2;
/// Timed steps per way and calibration.
pub const SAMPLES: u32 = (BLOCKS * (BLOCK - 1)) as u32;
/// Macro steps between two calibrations.
pub const RECALIBRATE_EVERY: u64 = 1 << 14;
/// The pool must be at least this much faster to be chosen (it costs two
/// cores where inline costs one).
pub const POOL_ADVANTAGE: f64 = 0.85;

/// How to run one Jacobi step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// One subsystem after the other on the calling thread.
    Inline,
    /// On the worker pool.
    Pool,
}

/// The decision and its measurements.
#[derive(Debug, Clone)]
pub struct PoolChooser {
    /// Steps since the current calibration started.
    step: u64,
    /// Timed steps of the current calibration, per way.
    inline: [Duration; SAMPLES as usize],
    pool: [Duration; SAMPLES as usize],
    n_inline: usize,
    n_pool: usize,
    chosen: Way,
    /// Calibrations completed.
    calibrations: u64,
}

impl Default for PoolChooser {
    fn default() -> Self {
        PoolChooser {
            step: 0,
            inline: [Duration::ZERO; SAMPLES as usize],
            pool: [Duration::ZERO; SAMPLES as usize],
            n_inline: 0,
            n_pool: 0,
            chosen: Way::Inline,
            calibrations: 0,
        }
    }
}

/// Steps of one calibration.
const CALIBRATION_STEPS: u64 = 2 * BLOCKS * BLOCK;

impl PoolChooser {
    /// The way to run the next step, and whether to time it.
    #[inline]
    pub fn next(&self) -> (Way, bool) {
        if self.step < CALIBRATION_STEPS {
            let way = if (self.step / BLOCK).is_multiple_of(2) {
                Way::Inline
            } else {
                Way::Pool
            };
            (way, !self.step.is_multiple_of(BLOCK))
        } else {
            (self.chosen, false)
        }
    }

    /// Records a step run `way`, taking `elapsed` when it was timed. Returns
    /// the new decision when a calibration just ended.
    #[inline]
    pub fn record(&mut self, way: Way, elapsed: Option<Duration>) -> Option<Decision> {
        if let Some(d) = elapsed {
            let (samples, n) = match way {
                Way::Inline => (&mut self.inline, &mut self.n_inline),
                Way::Pool => (&mut self.pool, &mut self.n_pool),
            };
            if let Some(slot) = samples.get_mut(*n) {
                *slot = d;
                *n += 1;
            }
        }
        self.step += 1;
        if self.step == CALIBRATION_STEPS {
            let inline = median(&mut self.inline[..self.n_inline]);
            let pool = median(&mut self.pool[..self.n_pool]);
            self.chosen = if pool.as_secs_f64() < POOL_ADVANTAGE * inline.as_secs_f64() {
                Way::Pool
            } else {
                Way::Inline
            };
            self.calibrations += 1;
            return Some(Decision {
                way: self.chosen,
                inline_per_step: inline,
                pool_per_step: pool,
            });
        }
        if self.step >= CALIBRATION_STEPS + RECALIBRATE_EVERY {
            self.step = 0;
            self.n_inline = 0;
            self.n_pool = 0;
        }
        None
    }

    /// How many of the next steps run inline with nothing timed: up to
    /// the next calibration once inline was chosen, else none.
    pub fn inline_steps_left(&self) -> u64 {
        if self.step >= CALIBRATION_STEPS && self.chosen == Way::Inline {
            CALIBRATION_STEPS + RECALIBRATE_EVERY - self.step
        } else {
            0
        }
    }

    /// Records `n` steps run inline untimed (at most
    /// [`PoolChooser::inline_steps_left`]).
    pub fn record_inline(&mut self, n: u64) {
        self.step += n.min(self.inline_steps_left());
        if self.step >= CALIBRATION_STEPS + RECALIBRATE_EVERY {
            self.step = 0;
            self.n_inline = 0;
            self.n_pool = 0;
        }
    }

    /// The current choice (inline until the first calibration ends).
    pub fn chosen(&self) -> Way {
        self.chosen
    }
}

/// The median of `samples` (sorted in place; zero when empty).
fn median(samples: &mut [Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let mid = samples.len() / 2;
    if samples.len().is_multiple_of(2) {
        (samples[mid - 1] + samples[mid]) / 2
    } else {
        samples[mid]
    }
}

/// The outcome of one calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// The way chosen.
    pub way: Way,
    /// Median time of an inline step during the calibration.
    pub inline_per_step: Duration,
    /// Median time of a pooled step during the calibration.
    pub pool_per_step: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibrate(c: &mut PoolChooser, inline: Duration, pool: Duration) -> Decision {
        loop {
            let (way, timed) = c.next();
            let d = match way {
                Way::Inline => inline,
                Way::Pool => pool,
            };
            if let Some(decision) = c.record(way, timed.then_some(d)) {
                return decision;
            }
        }
    }

    #[test]
    fn cheap_steps_stay_inline_and_heavy_ones_go_to_the_pool() {
        let us = Duration::from_micros;
        let mut c = PoolChooser::default();
        // Trivial FMUs: 1 us inline, 6 us through the pool.
        let d = calibrate(&mut c, us(1), us(6));
        assert_eq!(d.way, Way::Inline);
        assert_eq!(d.inline_per_step, us(1));
        assert_eq!(d.pool_per_step, us(6));
        // After the calibration every step runs the chosen way, untimed.
        for _ in 0..RECALIBRATE_EVERY {
            assert_eq!(c.next(), (Way::Inline, false));
            assert_eq!(c.record(Way::Inline, None), None);
        }
        // The FMUs became heavy: the next calibration picks the pool.
        let d = calibrate(&mut c, us(200), us(110));
        assert_eq!(d.way, Way::Pool);
        assert_eq!(c.chosen(), Way::Pool);
        assert_eq!(c.next(), (Way::Pool, false));
    }

    #[test]
    fn a_few_slow_outliers_do_not_decide() {
        // Heavy FMUs: 100 us inline, 60 us on the pool, but three pooled
        // steps were preempted (2 ms each): the mean would say inline, the
        // median says pool.
        let us = Duration::from_micros;
        let mut c = PoolChooser::default();
        let mut pooled = 0;
        let d = loop {
            let (way, timed) = c.next();
            let t = match way {
                Way::Inline => us(100),
                Way::Pool => {
                    pooled += 1;
                    if [2, 5, 11].contains(&pooled) {
                        us(2000)
                    } else {
                        us(60)
                    }
                }
            };
            if let Some(d) = c.record(way, timed.then_some(t)) {
                break d;
            }
        };
        assert_eq!(d.way, Way::Pool);
        assert_eq!(d.pool_per_step, us(60));
        assert_eq!(d.inline_per_step, us(100));
    }

    #[test]
    fn a_marginal_gain_does_not_justify_the_pool() {
        let us = Duration::from_micros;
        let mut c = PoolChooser::default();
        assert_eq!(calibrate(&mut c, us(100), us(90)).way, Way::Inline);
        let mut c = PoolChooser::default();
        assert_eq!(calibrate(&mut c, us(100), us(80)).way, Way::Pool);
    }

    #[test]
    fn calibration_runs_blocks_of_each_way_with_a_warm_up_step() {
        let mut c = PoolChooser::default();
        let mut seen = Vec::new();
        for _ in 0..CALIBRATION_STEPS {
            let (way, timed) = c.next();
            seen.push((way, timed));
            c.record(way, timed.then_some(Duration::from_micros(1)));
        }
        let block = |way| {
            let mut b = vec![(way, true); BLOCK as usize];
            b[0] = (way, false);
            b
        };
        let expected: Vec<(Way, bool)> = [
            block(Way::Inline),
            block(Way::Pool),
            block(Way::Inline),
            block(Way::Pool),
        ]
        .concat();
        assert_eq!(seen, expected);
    }
}
