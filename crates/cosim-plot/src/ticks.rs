//! Axis ticks: round values (1, 2 or 5 times a power of ten, decades on a
//! logarithmic axis), labelled from integers so that no label shows
//! floating-point noise (`0.3`, never `0.30000000000000004`).

/// One tick of an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Where it is, in data units.
    pub value: f64,
    /// Its label.
    pub label: String,
}

/// The decimal text of `n * 10^e` with exactly `decimals` digits after
/// the point (`decimals >= -e` keeps it exact).
fn plain(n: i64, e: i32, decimals: usize) -> String {
    let neg = n < 0;
    let mut digits = n.unsigned_abs().to_string();
    if e >= 0 {
        if digits != "0" {
            digits.push_str(&"0".repeat(e as usize));
        }
        if decimals > 0 {
            digits.push('.');
            digits.push_str(&"0".repeat(decimals));
        }
    } else {
        let shift = (-e) as usize;
        if digits.len() <= shift {
            digits = format!("{}{digits}", "0".repeat(shift + 1 - digits.len()));
        }
        let point = digits.len() - shift;
        let (int, frac) = digits.split_at(point);
        let mut frac = frac.to_string();
        if decimals > shift {
            frac.push_str(&"0".repeat(decimals - shift));
        } else {
            frac.truncate(decimals.max(frac.trim_end_matches('0').len()));
        }
        digits = if frac.is_empty() {
            int.to_string()
        } else {
            format!("{int}.{frac}")
        };
    }
    if neg && digits.chars().any(|c| c.is_ascii_digit() && c != '0') {
        format!("-{digits}")
    } else {
        digits
    }
}

/// The scientific text of `n * 10^e`, shortest mantissa (`1.5e-5`, `2e7`).
fn scientific(n: i64, e: i32) -> String {
    if n == 0 {
        return "0".into();
    }
    let (mut m, mut e) = (n.unsigned_abs(), e);
    while m % 10 == 0 {
        m /= 10;
        e += 1;
    }
    let digits = m.to_string();
    let exp = e + digits.len() as i32 - 1;
    let mantissa = if digits.len() > 1 {
        format!("{}.{}", &digits[..1], &digits[1..])
    } else {
        digits
    };
    format!("{}{mantissa}e{exp}", if n < 0 { "-" } else { "" })
}

fn value(n: i64, e: i32) -> f64 {
    if e >= 0 {
        n as f64 * 10f64.powi(e)
    } else {
        n as f64 / 10f64.powi(-e)
    }
}

/// Round ticks for a linear axis over `[lo, hi]`, about `target` of them
/// (at least two when the range allows). Labels share their number of
/// decimals (`0.0`, `0.5`, `1.0`); very large or very small values are
/// written in scientific notation.
pub fn linear(lo: f64, hi: f64, target: usize) -> Vec<Tick> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    if hi <= lo {
        return vec![Tick {
            value: lo,
            label: shortest(lo),
        }];
    }
    // The round step (1, 2 or 5 times a power of ten) whose tick count is
    // closest to `target` (ties: the larger step).
    let target = target.max(2) as i64;
    let e0 = ((hi - lo) / target as f64).log10().floor() as i32;
    let slack = 1e-9;
    let mut best: Option<(i64, i32, i64, i64)> = None;
    for e in [e0 - 1, e0, e0 + 1] {
        for m in [1i64, 2, 5] {
            let step = value(m, e);
            let k0 = (lo / step - slack).ceil() as i64;
            let k1 = (hi / step + slack).floor() as i64;
            let count = k1 - k0 + 1;
            let miss = (count - target).abs();
            let better = match best {
                None => true,
                Some((bm, be, bk0, bk1)) => {
                    let bmiss = (bk1 - bk0 + 1 - target).abs();
                    miss < bmiss || (miss == bmiss && value(m, e) > value(bm, be))
                }
            };
            if count >= 2 && better {
                best = Some((m, e, k0, k1));
            }
        }
    }
    let Some((m, e, k0, k1)) = best else {
        return vec![Tick {
            value: lo,
            label: shortest(lo),
        }];
    };
    if k1 - k0 > 1000 {
        return Vec::new();
    }
    let ns: Vec<i64> = (k0..=k1).map(|k| k * m).collect();
    let max_abs = ns.iter().map(|&n| value(n, e).abs()).fold(0.0f64, f64::max);
    let sci = max_abs >= 1e6 || (max_abs > 0.0 && max_abs < 1e-4) || e < -8;
    let decimals = if e < 0 { (-e) as usize } else { 0 };
    ns.into_iter()
        .map(|n| Tick {
            value: value(n, e),
            label: if sci {
                scientific(n, e)
            } else {
                plain(n, e, decimals)
            },
        })
        .collect()
}

/// Ticks for a logarithmic axis over `[lo, hi]` (both positive): the
/// decades, thinned to about `target`; with fewer than three decades inside,
/// also 2 and 5 times them; with still fewer than two, linear ticks.
pub fn log(lo: f64, hi: f64, target: usize) -> Vec<Tick> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return linear(lo, hi, target);
    }
    let slack = 1e-9;
    let d0 = (lo.log10() - slack).ceil() as i32;
    let d1 = (hi.log10() + slack).floor() as i32;
    let tick = |n: i64, e: i32| {
        let mag = e + n.to_string().len() as i32 - 1;
        Tick {
            value: value(n, e),
            label: if (-4..=5).contains(&mag) {
                plain(n, e, if e < 0 { (-e) as usize } else { 0 })
            } else {
                scientific(n, e)
            },
        }
    };
    if d1 - d0 >= 2 {
        let count = (d1 - d0 + 1) as usize;
        let every = count.div_ceil(target.max(2)).max(1) as i32;
        return (d0..=d1)
            .filter(|d| (d - d0) % every == 0)
            .map(|d| tick(1, d))
            .collect();
    }
    let ticks: Vec<Tick> = (d0 - 1..=d1)
        .flat_map(|d| [1, 2, 5].map(|m| (m, d)))
        .map(|(m, d)| tick(m, d))
        .filter(|t| t.value >= lo * (1.0 - slack) && t.value <= hi * (1.0 + slack))
        .collect();
    if ticks.len() >= 2 {
        ticks
    } else {
        linear(lo, hi, target)
    }
}

/// A number in its shortest exact form, without noise from earlier
/// arithmetic: rounded to 12 significant digits (`0.1 + 0.2` -> `0.3`),
/// scientific outside `1e-4 ..= 1e6`.
pub fn shortest(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if x == 0.0 {
        return "0".into();
    }
    // 12 significant digits as an integer mantissa and an exponent.
    let text = format!("{x:.11e}");
    let Some((mantissa, exp)) = text.split_once('e') else {
        return text;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut n: i64 = digits.parse().unwrap_or(0);
    if x < 0.0 {
        n = -n;
    }
    let mut e = exp - 11;
    while n != 0 && n % 10 == 0 {
        n /= 10;
        e += 1;
    }
    let magnitude = x.abs();
    if (1e-4..1e6).contains(&magnitude) {
        plain(n, e, 0)
    } else {
        scientific(n, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &[Tick]) -> Vec<&str> {
        t.iter().map(|t| t.label.as_str()).collect()
    }

    #[test]
    fn linear_ticks_are_round_and_noise_free() {
        let t = linear(0.0, 1.0, 5);
        assert_eq!(
            labels(&t),
            ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"],
            "{t:?}"
        );
        assert_eq!(t[3].value, 0.6);
        let t = linear(0.0, 0.9, 4);
        assert!(labels(&t).contains(&"0.2"), "{t:?}");
        let t = linear(-15000.0, 0.0, 5);
        assert_eq!(labels(&t), ["-15000", "-10000", "-5000", "0"]);
        let t = linear(0.0, 600.0, 6);
        assert_eq!(labels(&t), ["0", "100", "200", "300", "400", "500", "600"]);
        let t = linear(-0.013, 0.021, 5);
        assert_eq!(labels(&t), ["-0.01", "0.00", "0.01", "0.02"]);
        for (lo, hi) in [(0.1, 0.7), (1e-9, 3e-9), (2.5e7, 9.1e7), (-3.3, 17.0)] {
            for t in linear(lo, hi, 6) {
                assert!(t.label.len() <= 8, "{lo}..{hi}: {t:?}");
                assert!(
                    (t.label.parse::<f64>().unwrap() - t.value).abs() <= 1e-12 * t.value.abs(),
                    "{t:?}"
                );
            }
        }
        assert_eq!(labels(&linear(1e-9, 3e-9, 3)), ["1e-9", "2e-9", "3e-9"]);
        assert_eq!(labels(&linear(2e7, 8e7, 3)), ["2e7", "4e7", "6e7", "8e7"]);
    }

    #[test]
    fn log_ticks_are_decades_or_their_multiples() {
        assert_eq!(
            labels(&log(1e-3, 0.08, 6)),
            ["0.001", "0.002", "0.005", "0.01", "0.02", "0.05"],
            "two decades: their multiples too"
        );
        assert_eq!(
            labels(&log(2e-3, 0.08, 6)),
            ["0.002", "0.005", "0.01", "0.02", "0.05"]
        );
        assert_eq!(labels(&log(1e-9, 1e3, 4)).len(), 4);
        assert_eq!(
            labels(&log(1e-9, 1e-6, 8)),
            ["1e-9", "1e-8", "1e-7", "1e-6"]
        );
    }

    #[test]
    fn shortest_drops_noise() {
        assert_eq!(shortest(0.1 + 0.2), "0.3");
        assert_eq!(shortest(1.023), "1.023");
        assert_eq!(shortest(331.15500000000003), "331.155");
        assert_eq!(shortest(-15000.0), "-15000");
        assert_eq!(shortest(2.5e-7), "2.5e-7");
        assert_eq!(shortest(0.0), "0");
    }
}
