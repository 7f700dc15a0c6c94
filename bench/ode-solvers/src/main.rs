//! diffsol (through cosim-ode) against CVODE 6.4 on the same problems; prints
//! the tables of docs/ode-solvers.md. `cargo run --release` in this folder.

mod cvode;

use cosim_ode::{Advance, Integrator, Method, OdeProblem, Settings};
use cvode::{CV_ADAMS, CV_BDF, CV_ROOT_RETURN, CV_SUCCESS, CV_TSTOP_RETURN, Cvode, Model};
use std::time::Instant;

type F = fn(f64, &[f64], &mut [f64]);

fn osc(_: f64, x: &[f64], d: &mut [f64]) {
    let w = 2.0 * std::f64::consts::PI;
    d[0] = x[1];
    d[1] = -w * w * x[0];
}
fn vdp1(_: f64, x: &[f64], d: &mut [f64]) {
    d[0] = x[1];
    d[1] = (1.0 - x[0] * x[0]) * x[1] - x[0];
}
fn vdp1000(_: f64, x: &[f64], d: &mut [f64]) {
    d[0] = x[1];
    d[1] = 1000.0 * (1.0 - x[0] * x[0]) * x[1] - x[0];
}
fn rober(_: f64, y: &[f64], d: &mut [f64]) {
    d[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
    d[2] = 3e7 * y[1] * y[1];
    d[1] = -d[0] - d[2];
}
const G: f64 = 9.81;
const E: f64 = 0.7;
fn ball(_: f64, x: &[f64], d: &mut [f64]) {
    d[0] = x[1];
    d[1] = -G;
}
fn height(_: f64, x: &[f64], g: &mut [f64]) {
    g[0] = x[0];
}

struct Fp {
    f: F,
    g: Option<F>,
    n: usize,
    r: usize,
}
impl OdeProblem for Fp {
    type Error = ();
    fn dimension(&self) -> usize {
        self.n
    }
    fn roots(&self) -> usize {
        self.r
    }
    fn rhs(&mut self, t: f64, x: &[f64], d: &mut [f64]) -> Result<(), ()> {
        (self.f)(t, x, d);
        Ok(())
    }
    fn root_functions(&mut self, t: f64, x: &[f64], g: &mut [f64]) -> Result<(), ()> {
        if let Some(gf) = self.g {
            gf(t, x, g);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Solver {
    DiffsolBdf,
    DiffsolTsit45,
    CvodeBdf,
    CvodeAdams,
}
impl Solver {
    fn name(self) -> &'static str {
        match self {
            Solver::DiffsolBdf => "diffsol BDF",
            Solver::DiffsolTsit45 => "diffsol Tsit45",
            Solver::CvodeBdf => "CVODE BDF",
            Solver::CvodeAdams => "CVODE Adams",
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Counts {
    steps: i64,
    rejected: i64,
    rhs: i64,
    jac: i64,
}

/// Integrates from `x0` at 0 over `points` (each one an `advance`, no
/// reset), returns the final state and the counts.
fn solve(s: Solver, f: F, x0: &[f64], points: &[f64], rtol: f64, atol: f64) -> (Vec<f64>, Counts) {
    let n = x0.len();
    match s {
        Solver::DiffsolBdf | Solver::DiffsolTsit45 => {
            let method = if s == Solver::DiffsolBdf {
                Method::Bdf
            } else {
                Method::Rk45
            };
            let settings = Settings {
                method,
                relative_tolerance: rtol,
                absolute_tolerance: atol,
                ..Settings::default()
            };
            let mut i = Integrator::new(
                settings,
                Fp {
                    f,
                    g: None,
                    n,
                    r: 0,
                },
            )
            .unwrap();
            i.reset(0.0, x0).unwrap();
            for &t in points {
                assert_eq!(i.advance(t).unwrap(), Advance::Reached);
            }
            let st = i.statistics();
            let c = Counts {
                steps: st.steps as i64,
                rejected: st.rejected_steps as i64,
                rhs: st.rhs_evaluations as i64,
                jac: st.jacobian_evaluations as i64,
            };
            (i.state().to_vec(), c)
        }
        Solver::CvodeBdf | Solver::CvodeAdams => {
            let lmm = if s == Solver::CvodeBdf {
                CV_BDF
            } else {
                CV_ADAMS
            };
            let mut c = Cvode::new(
                Model {
                    f,
                    g: None,
                    n,
                    n_roots: 0,
                },
                lmm,
                rtol,
                atol,
                0.0,
                x0,
            );
            for &t in points {
                let (flag, _) = c.advance(t);
                assert!(
                    flag == CV_SUCCESS || flag == CV_TSTOP_RETURN,
                    "CVODE flag {flag}"
                );
            }
            let st = c.stats();
            let counts = Counts {
                steps: st.steps,
                rejected: st.rejected,
                rhs: st.rhs,
                jac: st.jac,
            };
            (c.state().to_vec(), counts)
        }
    }
}

/// Median wall time of `run` in microseconds, repeated for about 0.3 s (3 to 21 runs).
fn median_us(mut run: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (times.len() < 21 && start.elapsed().as_secs_f64() < 0.3) {
        let t = Instant::now();
        run();
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Error in units of the tolerance at the solution's scale:
/// max_i |x_i - r_i| / (atol + rtol max_i |r_i|) (a component passing zero
/// at the end would make a per-component weight meaningless).
fn weighted(x: &[f64], r: &[f64], rtol: f64, atol: f64) -> f64 {
    let scale = r.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    max_abs(x, r) / (atol + rtol * scale)
}

fn max_abs(x: &[f64], r: &[f64]) -> f64 {
    x.iter()
        .zip(r)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

fn row(cells: &[String]) {
    println!("| {} |", cells.join(" | "));
}

fn main() {
    println!("## Accuracy and cost, one `advance` to the end\n");
    row(&[
        "problem",
        "t end",
        "rtol / atol",
        "solver",
        "error / tol",
        "max abs error",
        "steps",
        "rejected",
        "f evals",
        "J evals",
        "median µs",
    ]
    .map(String::from));
    row(&["---"; 11].map(String::from));
    let w = 2.0 * std::f64::consts::PI;
    let problems: [(&str, F, Vec<f64>, f64, bool, Option<Vec<f64>>); 6] = [
        (
            "oscillator",
            osc,
            vec![1.0, 0.0],
            10.0,
            false,
            Some(vec![(w * 10.0).cos(), -w * (w * 10.0).sin()]),
        ),
        ("Van der Pol mu=1", vdp1, vec![2.0, 0.0], 20.0, false, None),
        (
            "Van der Pol mu=1000",
            vdp1000,
            vec![2.0, 0.0],
            3000.0,
            true,
            None,
        ),
        ("Robertson", rober, vec![1.0, 0.0, 0.0], 40.0, true, None),
        ("Robertson", rober, vec![1.0, 0.0, 0.0], 1e5, true, None),
        ("Robertson", rober, vec![1.0, 0.0, 0.0], 4e10, true, None),
    ];
    for (name, f, x0, t_end, stiff, exact) in &problems {
        let reference = exact.clone().unwrap_or_else(|| {
            let atol = if *name == "Robertson" { 1e-20 } else { 1e-14 };
            solve(Solver::CvodeBdf, *f, x0, &[*t_end], 1e-12, atol).0
        });
        let tols: [(f64, f64); 2] = if *name == "Robertson" {
            [(1e-4, 1e-8), (1e-8, 1e-14)]
        } else {
            [(1e-4, 1e-8), (1e-8, 1e-12)]
        };
        for (rtol, atol) in tols {
            let solvers: &[Solver] = if *stiff {
                &[Solver::DiffsolBdf, Solver::CvodeBdf]
            } else {
                &[
                    Solver::DiffsolBdf,
                    Solver::CvodeBdf,
                    Solver::DiffsolTsit45,
                    Solver::CvodeAdams,
                ]
            };
            for &s in solvers {
                let (x, c) = solve(s, *f, x0, &[*t_end], rtol, atol);
                let us = median_us(|| {
                    std::hint::black_box(solve(s, *f, x0, &[*t_end], rtol, atol));
                });
                row(&[
                    name.to_string(),
                    format!("{t_end:e}"),
                    format!("{rtol:e} / {atol:e}"),
                    s.name().into(),
                    format!("{:.2}", weighted(&x, &reference, rtol, atol)),
                    format!("{:.1e}", max_abs(&x, &reference)),
                    c.steps.to_string(),
                    c.rejected.to_string(),
                    c.rhs.to_string(),
                    c.jac.to_string(),
                    format!("{us:.0}"),
                ]);
            }
        }
    }

    println!("\n## Bouncing ball (restitution {E}, 10 contacts, reset after each)\n");
    row(&[
        "rtol / atol",
        "solver",
        "max contact-time error (s)",
        "max abs(h) at the roots",
        "steps",
        "rejected",
        "f evals",
        "g evals",
        "median µs",
    ]
    .map(String::from));
    row(&["---"; 9].map(String::from));
    let t1 = (2.0 / G).sqrt();
    let mut exact = vec![t1];
    for k in 1..10 {
        exact.push(exact[k - 1] + 2.0 * E.powi(k as i32) * G * t1 / G);
    }
    for (rtol, atol) in [(1e-6, 1e-8), (1e-10, 1e-12)] {
        for s in [
            Solver::DiffsolBdf,
            Solver::CvodeBdf,
            Solver::DiffsolTsit45,
            Solver::CvodeAdams,
        ] {
            let run = || bounce(s, rtol, atol);
            let (found, hmax, c, g) = run();
            let err = found
                .iter()
                .zip(&exact)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            let us = median_us(|| {
                std::hint::black_box(run());
            });
            row(&[
                format!("{rtol:e} / {atol:e}"),
                s.name().into(),
                format!("{err:.1e}"),
                format!("{hmax:.1e}"),
                c.steps.to_string(),
                c.rejected.to_string(),
                c.rhs.to_string(),
                g.to_string(),
                format!("{us:.0}"),
            ]);
        }
    }

    println!(
        "\n## Co-simulation: 10^4 communication points of 1 ms (Van der Pol mu=1 to t = 10, rtol 1e-6, atol 1e-10)\n"
    );
    row(&[
        "solver",
        "advances",
        "resets",
        "steps",
        "f evals",
        "J evals",
        "median µs",
        "µs per advance",
        "diff. from one advance",
    ]
    .map(String::from));
    row(&["---"; 9].map(String::from));
    let points: Vec<f64> = (1..=10_000).map(|k| k as f64 * 1e-3).collect();
    for s in [
        Solver::DiffsolBdf,
        Solver::CvodeBdf,
        Solver::DiffsolTsit45,
        Solver::CvodeAdams,
    ] {
        let (one, c1) = solve(s, vdp1, &[2.0, 0.0], &[10.0], 1e-6, 1e-10);
        let us1 = median_us(|| {
            std::hint::black_box(solve(s, vdp1, &[2.0, 0.0], &[10.0], 1e-6, 1e-10));
        });
        row(&[
            s.name().into(),
            "1".into(),
            "1".into(),
            c1.steps.to_string(),
            c1.rhs.to_string(),
            c1.jac.to_string(),
            format!("{us1:.0}"),
            format!("{us1:.1}"),
            "0".into(),
        ]);
        let (x, c) = solve(s, vdp1, &[2.0, 0.0], &points, 1e-6, 1e-10);
        let us = median_us(|| {
            std::hint::black_box(solve(s, vdp1, &[2.0, 0.0], &points, 1e-6, 1e-10));
        });
        row(&[
            s.name().into(),
            "10000".into(),
            "1".into(),
            c.steps.to_string(),
            c.rhs.to_string(),
            c.jac.to_string(),
            format!("{us:.0}"),
            format!("{:.2}", us / 1e4),
            format!("{:.1e}", max_abs(&x, &one)),
        ]);
        let (x, c, us) = with_resets(s, &points);
        row(&[
            s.name().into(),
            "10000".into(),
            "10000".into(),
            c.steps.to_string(),
            c.rhs.to_string(),
            c.jac.to_string(),
            format!("{us:.0}"),
            format!("{:.2}", us / 1e4),
            format!("{:.1e}", max_abs(&x, &one)),
        ]);
    }
}

/// The co-simulation run with a reset at every communication point: what a
/// master that restarts the solver each step pays.
fn with_resets(s: Solver, points: &[f64]) -> (Vec<f64>, Counts, f64) {
    let run = || -> (Vec<f64>, Counts) {
        let x0 = [2.0, 0.0];
        match s {
            Solver::DiffsolBdf | Solver::DiffsolTsit45 => {
                let method = if s == Solver::DiffsolBdf {
                    Method::Bdf
                } else {
                    Method::Rk45
                };
                let settings = Settings {
                    method,
                    relative_tolerance: 1e-6,
                    absolute_tolerance: 1e-10,
                    ..Settings::default()
                };
                let mut i = Integrator::new(
                    settings,
                    Fp {
                        f: vdp1,
                        g: None,
                        n: 2,
                        r: 0,
                    },
                )
                .unwrap();
                i.reset(0.0, &x0).unwrap();
                for &t in points {
                    let (t0, x) = (i.time(), i.state().to_vec());
                    i.reset(t0, &x).unwrap();
                    i.advance(t).unwrap();
                }
                let st = i.statistics();
                (
                    i.state().to_vec(),
                    Counts {
                        steps: st.steps as i64,
                        rejected: st.rejected_steps as i64,
                        rhs: st.rhs_evaluations as i64,
                        jac: st.jacobian_evaluations as i64,
                    },
                )
            }
            Solver::CvodeBdf | Solver::CvodeAdams => {
                let lmm = if s == Solver::CvodeBdf {
                    CV_BDF
                } else {
                    CV_ADAMS
                };
                let mut c = Cvode::new(
                    Model {
                        f: vdp1,
                        g: None,
                        n: 2,
                        n_roots: 0,
                    },
                    lmm,
                    1e-6,
                    1e-10,
                    0.0,
                    &x0,
                );
                let mut t0 = 0.0;
                for &t in points {
                    let x = c.state().to_vec();
                    c.reinit(t0, &x);
                    let (flag, tr) = c.advance(t);
                    assert!(flag >= 0);
                    t0 = tr;
                }
                let st = c.stats();
                (
                    c.state().to_vec(),
                    Counts {
                        steps: st.steps,
                        rejected: st.rejected,
                        rhs: st.rhs,
                        jac: st.jac,
                    },
                )
            }
        }
    };
    let (x, c) = run();
    let us = median_us(|| {
        std::hint::black_box(run());
    });
    (x, c, us)
}

/// Ten contacts; returns their times, the largest |height| at them, the
/// counts and the root-function evaluations.
fn bounce(s: Solver, rtol: f64, atol: f64) -> (Vec<f64>, f64, Counts, i64) {
    let mut found = Vec::new();
    let mut hmax: f64 = 0.0;
    match s {
        Solver::DiffsolBdf | Solver::DiffsolTsit45 => {
            let method = if s == Solver::DiffsolBdf {
                Method::Bdf
            } else {
                Method::Rk45
            };
            let settings = Settings {
                method,
                relative_tolerance: rtol,
                absolute_tolerance: atol,
                ..Settings::default()
            };
            let mut i = Integrator::new(
                settings,
                Fp {
                    f: ball,
                    g: Some(height),
                    n: 2,
                    r: 1,
                },
            )
            .unwrap();
            i.reset(0.0, &[1.0, 0.0]).unwrap();
            while found.len() < 10 {
                let Advance::Root { t, .. } = i.advance(10.0).unwrap() else {
                    panic!("no contact")
                };
                found.push(t);
                hmax = hmax.max(i.state()[0].abs());
                let v = i.state()[1];
                i.reset(t, &[0.0, -E * v]).unwrap();
            }
            let st = i.statistics();
            let c = Counts {
                steps: st.steps as i64,
                rejected: st.rejected_steps as i64,
                rhs: st.rhs_evaluations as i64,
                jac: st.jacobian_evaluations as i64,
            };
            (found, hmax, c, st.root_function_evaluations as i64)
        }
        Solver::CvodeBdf | Solver::CvodeAdams => {
            let lmm = if s == Solver::CvodeBdf {
                CV_BDF
            } else {
                CV_ADAMS
            };
            let mut c = Cvode::new(
                Model {
                    f: ball,
                    g: Some(height),
                    n: 2,
                    n_roots: 1,
                },
                lmm,
                rtol,
                atol,
                0.0,
                &[1.0, 0.0],
            );
            while found.len() < 10 {
                let (flag, t) = c.advance(10.0);
                assert_eq!(flag, CV_ROOT_RETURN);
                found.push(t);
                hmax = hmax.max(c.state()[0].abs());
                let v = c.state()[1];
                c.reinit(t, &[0.0, -E * v]);
            }
            let st = c.stats();
            (
                found,
                hmax,
                Counts {
                    steps: st.steps,
                    rejected: st.rejected,
                    rhs: st.rhs,
                    jac: st.jac,
                },
                st.g,
            )
        }
    }
}
