//! Input extrapolation and interpolation (docs/algorithms.md): Lagrange
//! polynomials through the last coupling values on non-uniform times,
//! delivered to an FMU as a Taylor expansion at the step start, and cubic
//! Hermite interpolation on normalised time.

/// Most points a [`History`] keeps (enough for order-2 extrapolation and for
/// the order-3 predictor of the predictor/corrector indicator).
pub const MAX_POINTS: usize = 4;

/// Taylor coefficients at `x` of the polynomial interpolating the points
/// `(ts[j], vs[j])` (at most [`MAX_POINTS`], distinct times): returns
/// `[p(x), p'(x), p''(x), p'''(x)]`.
///
/// Newton divided differences, then the Newton form is re-expanded in powers
/// of `(t - x)` by nested multiplication, which is exact for these degrees.
pub fn taylor_at(ts: &[f64], vs: &[f64], x: f64) -> [f64; MAX_POINTS] {
    let n = ts.len().min(vs.len()).min(MAX_POINTS);
    let mut out = [0.0; MAX_POINTS];
    if n == 0 {
        return out;
    }
    // Divided differences in place: c[k] = f[t0..tk].
    let mut c = [0.0; MAX_POINTS];
    c[..n].copy_from_slice(&vs[..n]);
    for level in 1..n {
        for k in (level..n).rev() {
            c[k] = (c[k] - c[k - 1]) / (ts[k] - ts[k - level]);
        }
    }
    // Nested multiplication in the variable s = t - x:
    // p = c[n-1]; p = p * (s + (x - t_k)) + c[k] for k = n-2..0.
    let mut coef = [0.0; MAX_POINTS]; // coefficients of s^0..s^3
    coef[0] = c[n - 1];
    for k in (0..n - 1).rev() {
        let d = x - ts[k];
        // multiply by (s + d)
        for j in (1..MAX_POINTS).rev() {
            coef[j] = coef[j - 1] + coef[j] * d;
        }
        coef[0] = coef[0] * d + c[k];
    }
    // Derivatives: p^(j)(x) = j! coef[j].
    out[0] = coef[0];
    out[1] = coef[1];
    out[2] = 2.0 * coef[2];
    out[3] = 6.0 * coef[3];
    out
}

/// Taylor coefficients at `x` of the polynomial through the points
/// `(ts[j], vs[j])` (newest first, distinct times) whose derivative at the
/// oldest time `ts[n - 1]` is also `slope` (Hermite: that node counted
/// twice), so one degree higher than [`taylor_at`]'s; at most
/// `MAX_POINTS - 1` points. The start-up of [`crate::inputs`] uses it with
/// the coupled inputs' time derivative at the start of the run.
pub fn taylor_at_with_slope(ts: &[f64], vs: &[f64], slope: f64, x: f64) -> [f64; MAX_POINTS] {
    let n = ts.len().min(vs.len()).min(MAX_POINTS - 1);
    if n == 0 {
        return [0.0; MAX_POINTS];
    }
    // Nodes z = ts, then the oldest once more; divided differences with
    // f[z_{n-1}, z_n] = slope.
    let mut z = [0.0; MAX_POINTS];
    let mut c = [0.0; MAX_POINTS];
    z[..n].copy_from_slice(&ts[..n]);
    c[..n].copy_from_slice(&vs[..n]);
    z[n] = ts[n - 1];
    c[n] = vs[n - 1];
    let m = n + 1;
    for level in 1..m {
        for k in (level..m).rev() {
            c[k] = if level == 1 && k == n {
                slope
            } else {
                (c[k] - c[k - 1]) / (z[k] - z[k - level])
            };
        }
    }
    // Nested multiplication in s = t - x, as in `taylor_at`.
    let mut coef = [0.0; MAX_POINTS];
    coef[0] = c[m - 1];
    for k in (0..m - 1).rev() {
        let d = x - z[k];
        for j in (1..MAX_POINTS).rev() {
            coef[j] = coef[j - 1] + coef[j] * d;
        }
        coef[0] = coef[0] * d + c[k];
    }
    [coef[0], coef[1], 2.0 * coef[2], 6.0 * coef[3]]
}

/// Evaluates a Taylor expansion `[p, p', p'', p''']` at offset `s`.
pub fn eval_taylor(taylor: &[f64; MAX_POINTS], s: f64) -> f64 {
    taylor[0] + s * (taylor[1] + s * (taylor[2] / 2.0 + s * taylor[3] / 6.0))
}

/// The last few values of a vector of signals at their communication
/// points, newest first. Fixed capacity, no allocation after construction.
#[derive(Debug, Clone)]
pub struct History {
    n: usize,
    len: usize,
    /// Slot of the newest point: a ring, so that recording a point copies
    /// `n` values, not the whole history.
    head: usize,
    times: [f64; MAX_POINTS],
    /// `values[slot * n + i]`: signal `i` in `slot`.
    values: Vec<f64>,
}

impl History {
    /// An empty history for `n` signals.
    pub fn new(n: usize) -> Self {
        History {
            n,
            len: 0,
            head: 0,
            times: [0.0; MAX_POINTS],
            values: vec![0.0; n * MAX_POINTS],
        }
    }

    /// Number of points stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no point is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every point.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The ring slot of point `p` (0 = newest).
    #[inline]
    fn slot(&self, p: usize) -> usize {
        (self.head + MAX_POINTS - p) % MAX_POINTS
    }

    /// Time of point `p` (0 = newest).
    pub fn time(&self, p: usize) -> f64 {
        self.times[self.slot(p)]
    }

    /// Signal values at point `p` (0 = newest).
    pub fn point(&self, p: usize) -> &[f64] {
        let k = self.slot(p);
        &self.values[k * self.n..(k + 1) * self.n]
    }

    /// Adds the values at time `t` as the newest point. A point at the same
    /// time as the newest replaces it (re-exchange after a restart).
    pub fn push(&mut self, t: f64, values: &[f64]) {
        let n = self.n;
        if !(self.len > 0 && self.times[self.head] == t) {
            self.head = (self.head + 1) % MAX_POINTS;
            self.times[self.head] = t;
            self.len = (self.len + 1).min(MAX_POINTS);
        }
        let k = self.head;
        self.values[k * n..(k + 1) * n].copy_from_slice(&values[..n]);
    }

    /// Removes the newest point (used when a step is rolled back).
    pub fn pop(&mut self) {
        if self.len == 0 {
            return;
        }
        self.head = (self.head + MAX_POINTS - 1) % MAX_POINTS;
        self.len -= 1;
    }

    /// Taylor expansion at `x` of signal `i`'s polynomial through the newest
    /// `points` points (clamped to what is stored).
    pub fn taylor(&self, i: usize, points: usize, x: f64) -> [f64; MAX_POINTS] {
        let k = points.min(self.len).clamp(1, MAX_POINTS);
        let mut ts = [0.0; MAX_POINTS];
        let mut vs = [0.0; MAX_POINTS];
        for p in 0..k.min(self.len) {
            let slot = self.slot(p);
            ts[p] = self.times[slot];
            vs[p] = self.values[slot * self.n + i];
        }
        if self.len == 0 {
            return [0.0; MAX_POINTS];
        }
        taylor_at(&ts[..k], &vs[..k], x)
    }
}

/// Cubic Hermite interpolation on `[t_a, t_b]` through values and first
/// derivatives at both ends, built on normalised time `tau = (t - t_a) / dt`
/// (IFOSMONDI, ifosmondi2019 sec. 3.1-3.2). Returns the Taylor expansion at
/// `t_a`, which represents the cubic exactly.
pub fn hermite_taylor(dt: f64, ua: f64, dua: f64, ub: f64, dub: f64) -> [f64; MAX_POINTS] {
    // On tau in [0, 1]: p(tau) = a0 + a1 tau + a2 tau^2 + a3 tau^3 with
    // derivatives scaled by dt for conditioning.
    let ma = dua * dt;
    let mb = dub * dt;
    let a0 = ua;
    let a1 = ma;
    let a2 = 3.0 * (ub - ua) - 2.0 * ma - mb;
    let a3 = 2.0 * (ua - ub) + ma + mb;
    [a0, a1 / dt, 2.0 * a2 / (dt * dt), 6.0 * a3 / (dt * dt * dt)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn taylor_reproduces_cubic_on_nonuniform_nodes() {
        let p = |t: f64| 1.0 - 2.0 * t + 0.5 * t * t + 0.25 * t * t * t;
        let ts = [0.3, 0.1, -0.4, -0.45];
        let vs: Vec<f64> = ts.iter().map(|&t| p(t)).collect();
        let x = 0.3;
        let tay = taylor_at(&ts, &vs, x);
        assert!(close(tay[0], p(x)));
        assert!(close(tay[1], -2.0 + x + 0.75 * x * x));
        assert!(close(tay[2], 1.0 + 1.5 * x));
        assert!(close(tay[3], 1.5));
        assert!(close(eval_taylor(&tay, 0.7), p(x + 0.7)));
    }

    #[test]
    fn slope_at_the_oldest_point_raises_the_degree_by_one() {
        // A quadratic from two points and the slope at the older one.
        let p = |t: f64| 2.0 - t + 3.0 * t * t;
        let dp = |t: f64| -1.0 + 6.0 * t;
        let (t0, t1) = (0.0, 0.01);
        let tay = taylor_at_with_slope(&[t1, t0], &[p(t1), p(t0)], dp(t0), t1);
        assert!(close(tay[0], p(t1)) && close(tay[1], dp(t1)) && close(tay[2], 6.0));
        // One point and its slope: the tangent.
        let tay = taylor_at_with_slope(&[t0], &[p(t0)], dp(t0), t0);
        assert_eq!(tay, [p(t0), dp(t0), 0.0, 0.0]);
        // A cubic from three points and the slope at the oldest.
        let q = |t: f64| 1.0 + 0.5 * t - t * t + 4.0 * t * t * t;
        let ts = [0.3, 0.2, 0.05];
        let vs = ts.map(q);
        let tay = taylor_at_with_slope(&ts, &vs, 0.5 - 0.1 + 12.0 * 0.0025, 0.3);
        assert!(close(eval_taylor(&tay, 0.1), q(0.4)));
    }

    #[test]
    fn linear_extrapolation_from_two_points() {
        let tay = taylor_at(&[2.0, 1.0], &[5.0, 3.0], 2.0);
        assert_eq!(tay, [5.0, 2.0, 0.0, 0.0]);
    }

    #[test]
    fn history_pop_and_replace_across_the_ring() {
        let mut h = History::new(1);
        for k in 0..7 {
            h.push(k as f64, &[k as f64]);
        }
        // Rollback of two steps, then two new points.
        h.pop();
        h.pop();
        assert_eq!(
            (h.len(), h.time(0), h.point(0)),
            (MAX_POINTS - 2, 4.0, &[4.0][..])
        );
        h.push(4.0, &[40.0]); // same time: replaces the newest
        assert_eq!((h.len(), h.point(0)), (MAX_POINTS - 2, &[40.0][..]));
        h.push(5.5, &[55.0]);
        h.push(6.5, &[65.0]);
        let times: Vec<f64> = (0..h.len()).map(|p| h.time(p)).collect();
        assert_eq!(times, [6.5, 5.5, 4.0, 3.0]);
        assert_eq!(h.point(2), &[40.0]);
        while !h.is_empty() {
            h.pop();
        }
        h.pop(); // popping an empty history is a no-op
        h.push(9.0, &[9.0]);
        assert_eq!((h.len(), h.time(0)), (1, 9.0));
    }

    #[test]
    fn history_keeps_newest_first_and_caps() {
        let mut h = History::new(2);
        for k in 0..6 {
            h.push(k as f64, &[k as f64, 10.0 * k as f64]);
        }
        assert_eq!(h.len(), MAX_POINTS);
        assert_eq!(h.time(0), 5.0);
        assert_eq!(h.point(0), &[5.0, 50.0]);
        assert_eq!(h.point(3), &[2.0, 20.0]);
        // Quadratic through the last three points of a linear signal.
        let tay = h.taylor(1, 3, 5.0);
        assert!(close(tay[0], 50.0) && close(tay[1], 10.0) && tay[2].abs() < 1e-9);
        h.pop();
        assert_eq!(h.time(0), 4.0);
        assert_eq!(h.len(), MAX_POINTS - 1);
    }

    #[test]
    fn hermite_matches_end_values_and_slopes() {
        let dt = 0.2;
        let tay = hermite_taylor(dt, 1.0, -3.0, 2.0, 4.0);
        assert!(close(eval_taylor(&tay, 0.0), 1.0));
        assert!(close(eval_taylor(&tay, dt), 2.0));
        assert!(close(tay[1], -3.0));
        let slope_b = tay[1] + tay[2] * dt + tay[3] * dt * dt / 2.0;
        assert!(close(slope_b, 4.0));
    }
}
