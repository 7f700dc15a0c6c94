//! Zero crossings of the event indicators, located as CVODE does (its
//! `cvRootfind`): a secant step with the Illinois modification on the
//! indicator that crossed furthest, until the bracket is a few ulps of `t`.

/// The indicators at the last accepted point and the bracket's workspace,
/// allocated once.
#[derive(Clone, Debug)]
pub(crate) struct Roots {
    /// `g` where the next step starts.
    pub g_prev: Vec<f64>,
    pub g_lo: Vec<f64>,
    pub g_hi: Vec<f64>,
    pub g_mid: Vec<f64>,
    pub which: Vec<i8>,
}

/// `lo -> hi` crosses: a sign change, or a zero reached from a non-zero.
/// (A zero where the step starts is no crossing: the indicator sits on the
/// surface it just crossed, as after an event.)
fn crosses(lo: f64, hi: f64) -> bool {
    lo != 0.0 && (hi == 0.0 || (lo < 0.0) != (hi < 0.0))
}

impl Roots {
    pub fn new(n: usize) -> Self {
        Self {
            g_prev: vec![0.0; n],
            g_lo: vec![0.0; n],
            g_hi: vec![0.0; n],
            g_mid: vec![0.0; n],
            which: vec![0; n],
        }
    }

    /// The indicator that crossed furthest into `lo -> hi` (CVODE's `gfrac`),
    /// and whether any changed sign (rather than only reaching zero).
    fn furthest(lo: &[f64], hi: &[f64]) -> Option<(usize, bool)> {
        let mut best: Option<(usize, f64)> = None;
        let mut sign_change = false;
        for (i, (&l, &h)) in lo.iter().zip(hi).enumerate() {
            if !crosses(l, h) {
                continue;
            }
            if h != 0.0 {
                sign_change = true;
                let frac = (h / (h - l)).abs();
                if best.is_none_or(|(_, f)| frac > f) {
                    best = Some((i, frac));
                }
            } else if best.is_none() {
                best = Some((i, 0.0));
            }
        }
        best.map(|(i, _)| (i, sign_change))
    }

    /// After a step from `t_lo` (indicators in `g_prev`) to `t_hi` (in
    /// `g_hi`): `None` when nothing crossed; otherwise the earliest crossing
    /// time, `which` set to the direction of each indicator that crossed by
    /// then. `eval(t, g)` gives the indicators at `t` inside the step; its
    /// count of calls is added to `iterations`.
    pub fn locate<E>(
        &mut self,
        t_lo: f64,
        t_hi: f64,
        iterations: &mut u64,
        mut eval: impl FnMut(f64, &mut [f64]) -> Result<(), E>,
    ) -> Result<Option<f64>, E> {
        let Some((mut imax, sign_change)) = Self::furthest(&self.g_prev, &self.g_hi) else {
            return Ok(None);
        };
        self.g_lo.copy_from_slice(&self.g_prev);
        let (mut tlo, mut thi) = (t_lo, t_hi);
        if sign_change {
            let ttol = 100.0 * f64::EPSILON * (t_hi.abs() + (t_hi - t_lo).abs());
            let mut alpha = 1.0;
            let mut side_prev = 0;
            while thi - tlo > ttol {
                let (glo, ghi) = (self.g_lo[imax], self.g_hi[imax]);
                let mut tmid = thi - (thi - tlo) * ghi / (ghi - alpha * glo);
                // keep tmid off the ends, so that the bracket always shrinks
                let half = 0.5 * ttol;
                let frac = || {
                    let fracint = (thi - tlo) / ttol;
                    if fracint > 5.0 { 0.1 } else { 0.5 / fracint }
                };
                if tmid.is_nan() || tmid - tlo < half {
                    tmid = tlo + frac() * (thi - tlo);
                }
                if thi - tmid < half {
                    tmid = thi - frac() * (thi - tlo);
                }
                *iterations += 1;
                eval(tmid, &mut self.g_mid)?;
                match Self::furthest(&self.g_lo, &self.g_mid) {
                    Some((i, true)) => {
                        // the earliest crossing is in (tlo, tmid]
                        thi = tmid;
                        self.g_hi.copy_from_slice(&self.g_mid);
                        imax = i;
                        // (Illinois: the low end stuck twice, the next guess
                        // weighted towards it; CVODE's cvRootfind.)
                        alpha = if side_prev == 1 { alpha * 0.5 } else { 1.0 };
                        side_prev = 1;
                    }
                    Some((_, false)) => {
                        // an indicator is exactly zero at tmid: the root
                        thi = tmid;
                        self.g_hi.copy_from_slice(&self.g_mid);
                        break;
                    }
                    None => {
                        tlo = tmid;
                        self.g_lo.copy_from_slice(&self.g_mid);
                        alpha = if side_prev == 2 { alpha * 2.0 } else { 1.0 };
                        side_prev = 2;
                    }
                }
            }
        }
        for (w, (&l, &h)) in self.which.iter_mut().zip(self.g_lo.iter().zip(&self.g_hi)) {
            *w = if !crosses(l, h) {
                0
            } else if l < 0.0 {
                1
            } else {
                -1
            };
        }
        Ok(Some(thi))
    }
}
