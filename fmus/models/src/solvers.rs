//! The models' internal solvers.

/// Number of micro steps of size at most `h_micro` that cover `h`, with a
/// tolerance so that an `h` that is a multiple of `h_micro` up to rounding
/// (0.1 / 0.005) does not get an extra sliver step.
pub fn micro_step_count(h: f64, h_micro: f64) -> usize {
    let ratio = h / h_micro;
    (ratio - 1e-9 * ratio.max(1.0)).ceil().max(1.0) as usize
}

/// Explicit (forward) Euler with `n` equal micro steps over `[t, t + h]`.
pub fn euler_n<const N: usize>(
    t: f64,
    h: f64,
    n: usize,
    x: &mut [f64; N],
    f: impl Fn(f64, &[f64; N]) -> [f64; N],
) {
    let n = n.max(1);
    let dt = h / n as f64;
    for i in 0..n {
        let s = t + i as f64 * dt;
        let dx = f(s, x);
        for (xi, di) in x.iter_mut().zip(dx) {
            *xi += dt * di;
        }
    }
}

/// Explicit Euler with a fixed micro step `h_micro`; the last micro step is
/// shortened so that it ends exactly at `t + h` (hafner's subsystems).
pub fn euler_fixed<const N: usize>(
    t: f64,
    h: f64,
    h_micro: f64,
    x: &mut [f64; N],
    f: impl Fn(f64, &[f64; N]) -> [f64; N],
) {
    let n = micro_step_count(h, h_micro);
    for i in 0..n {
        let s = t + i as f64 * h_micro;
        let dt = if i + 1 == n { (t + h) - s } else { h_micro };
        let dx = f(s, x);
        for (xi, di) in x.iter_mut().zip(dx) {
            *xi += dt * di;
        }
    }
}

/// Classical Runge-Kutta 4 with equal micro steps no longer than `h_max`.
///
/// The stage times are computed so that the end of one micro step and the
/// start of the next are the same `f64` (`t + (i + 1) dt`), and the last
/// micro step ends exactly at `t + h`: an FMI 3 intermediate update then
/// asks the importer once per distinct time (`t, t + dt/2, t + dt, ...,
/// t + h`, 2 n + 1 times for n micro steps).
pub fn rk4<const N: usize>(
    t: f64,
    h: f64,
    h_max: f64,
    x: &mut [f64; N],
    f: impl Fn(f64, &[f64; N]) -> [f64; N],
) {
    let n = micro_step_count(h, h_max);
    let dt = h / n as f64;
    let axpy = |x: &[f64; N], a: f64, k: &[f64; N]| {
        let mut y = *x;
        for (yi, ki) in y.iter_mut().zip(k) {
            *yi += a * ki;
        }
        y
    };
    for i in 0..n {
        let s = t + i as f64 * dt;
        let s_next = if i + 1 == n {
            t + h
        } else {
            t + (i + 1) as f64 * dt
        };
        let k1 = f(s, x);
        let k2 = f(s + 0.5 * dt, &axpy(x, 0.5 * dt, &k1));
        let k3 = f(s + 0.5 * dt, &axpy(x, 0.5 * dt, &k2));
        let k4 = f(s_next, &axpy(x, dt, &k3));
        for j in 0..N {
            x[j] += dt / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
}

/// phi_j(z) = sum_{i>=0} z^i / (i + j)!, the exponential-integrator
/// functions: int_0^h e^{lambda (h - s)} s^k / k! ds = h^{k+1} phi_{k+1}(lambda h).
pub fn phi(j: u32, z: f64) -> f64 {
    if z.abs() < 1.0 {
        let mut term = 1.0;
        for i in 1..=j {
            term /= f64::from(i);
        }
        let mut sum = term;
        for i in 1..40 {
            term *= z / f64::from(i + j);
            sum += term;
            if term.abs() < 1e-18 * sum.abs() {
                break;
            }
        }
        sum
    } else {
        let mut p = z.exp();
        let mut fact = 1.0;
        for k in 0..j {
            // phi_{k+1}(z) = (phi_k(z) - 1/k!) / z
            if k > 0 {
                fact *= f64::from(k);
            }
            p = (p - 1.0 / fact) / z;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_steps_do_not_add_slivers() {
        assert_eq!(micro_step_count(0.1, 0.005), 20);
        assert_eq!(micro_step_count(0.1, 0.0025), 40);
        assert_eq!(micro_step_count(0.1, 0.03), 4);
        assert_eq!(micro_step_count(1e-3, 1e-5), 100);
        assert_eq!(micro_step_count(1e-7, 1e-5), 1);
    }

    #[test]
    fn euler_fixed_ends_exactly() {
        // x' = 1 integrates exactly, so x(t+h) - x(t) = h even with a short last step.
        let mut x = [0.0];
        euler_fixed(0.0, 0.1, 0.03, &mut x, |_, _| [1.0]);
        assert!((x[0] - 0.1).abs() < 1e-15);
    }

    #[test]
    fn rk4_is_fourth_order() {
        let err = |h_max: f64| {
            let mut x = [1.0];
            rk4(0.0, 1.0, h_max, &mut x, |_, x| [-x[0]]);
            (x[0] - (-1.0f64).exp()).abs()
        };
        let ratio = err(0.1) / err(0.05);
        assert!((ratio - 16.0).abs() < 1.0, "ratio {ratio}");
    }

    #[test]
    fn phi_matches_definition() {
        for z in [-3.0, -1.0, -0.3, 0.0, 0.2, 1.5] {
            // phi_1(z) = (e^z - 1)/z, phi_2 = (e^z - 1 - z)/z^2
            if z != 0.0 {
                let p1 = (f64::exp(z) - 1.0) / z;
                let p2 = (f64::exp(z) - 1.0 - z) / (z * z);
                assert!((phi(1, z) - p1).abs() < 1e-13, "phi1({z})");
                assert!((phi(2, z) - p2).abs() < 1e-12, "phi2({z})");
            }
        }
        assert!((phi(3, 0.0) - 1.0 / 6.0).abs() < 1e-16);
        assert!((phi(4, 1e-3) - 1.0 / 24.0).abs() < 1e-5);
    }
}
