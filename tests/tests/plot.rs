//! `cosim plot` and `cosim run --plot` (issue #19, item 4): a panel per
//! unit, every column in a legend beside its panel, a line style per file,
//! the reference drawn, steps for discrete columns, round tick labels, the
//! errors; the sweep plot drawn by the same code; and the SVGs rendered by
//! a real browser (headless Chromium: required when
//! `COSIM_REQUIRE_BROWSER=1`, as in CI, skipped with a note otherwise).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cosim_tests::{cosim, fmus, scenario};

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `cosim run --no-progress -q <scenario> --out <out> <extra>`.
fn run(file: &str, out: &Path, extra: &[&str]) {
    let sc = scenario(file);
    let mut args = vec!["run", "--no-progress", "-q", s(&sc), "--out", s(out)];
    args.extend_from_slice(extra);
    let o = cosim(&args);
    assert!(o.status.success(), "{}", text(&o));
}

/// The units of a trace's header (`None` for none or `1`), in order, once each.
fn header_units(trace: &Path) -> (Vec<String>, Vec<Option<String>>) {
    let header = std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let mut names = Vec::new();
    let mut units: Vec<Option<String>> = Vec::new();
    for h in header.split(',').skip(1) {
        let (name, unit) = match h.rfind(" [") {
            Some(i) if h.ends_with(']') => (&h[..i], Some(h[i + 2..h.len() - 1].to_string())),
            _ => (h, None),
        };
        let unit = unit.filter(|u| u != "1" && u != "-" && !u.is_empty());
        names.push(name.to_string());
        if !units.contains(&unit) {
            units.push(unit);
        }
    }
    (names, units)
}

/// The text of every `<text class="{class}" ...>` element, unescaped.
fn texts(svg: &str, class: &str) -> Vec<String> {
    let key = format!("class=\"{class}\"");
    svg.match_indices(&key)
        .map(|(i, _)| {
            let start = i + svg[i..].find('>').unwrap() + 1;
            let end = start + svg[start..].find('<').unwrap();
            svg[start..end]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

/// The value of attribute `name` in the tag starting at `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let end = tag.find('>').unwrap();
    let key = format!(" {name}=\"");
    let i = tag[..end]
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {}", &tag[..end]))
        + key.len();
    &tag[i..i + tag[i..].find('"').unwrap()]
}

fn num_attr(tag: &str, name: &str) -> f64 {
    attr(tag, name).parse().unwrap()
}

/// The panels of a plot: the SVG text of each.
fn panels(svg: &str) -> Vec<&str> {
    let starts: Vec<usize> = svg
        .match_indices("<g class=\"panel\"")
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &a)| &svg[a..starts.get(k + 1).copied().unwrap_or(svg.len())])
        .collect()
}

/// A panel's plotting area: x0, y0, x1, y1 (its frame).
fn frame(panel: &str) -> (f64, f64, f64, f64) {
    let i = panel
        .find("fill=\"none\" stroke=\"#a8a8a8\"")
        .expect("a frame");
    let start = panel[..i].rfind("<rect").unwrap();
    let r = &panel[start..];
    let (x, y) = (num_attr(r, "x"), num_attr(r, "y"));
    (x, y, x + num_attr(r, "width"), y + num_attr(r, "height"))
}

/// Tick labels are round numbers: they read as numbers, with at most six
/// significant digits and no floating-point noise.
fn assert_round_ticks(svg: &str) {
    let ticks: Vec<String> = texts(svg, "tick y")
        .into_iter()
        .chain(texts(svg, "tick x"))
        .collect();
    assert!(ticks.len() >= 6, "{ticks:?}");
    for t in &ticks {
        let v: f64 = t
            .parse()
            .unwrap_or_else(|_| panic!("tick '{t}' is not a number"));
        assert!(v.is_finite(), "{t}");
        let digits: String = t
            .split('e')
            .next()
            .unwrap()
            .chars()
            .filter(|c| c.is_ascii_digit())
            .collect();
        let significant = digits.trim_start_matches('0').len();
        assert!(significant <= 6, "tick '{t}' has noise");
        assert!(
            !t.contains("0000001") && !t.contains("9999999"),
            "tick '{t}' has noise"
        );
    }
}

/// The polyline points of every `<g class="series" data-column="{column}"`.
fn series_points(svg: &str, column: &str) -> Vec<Vec<(f64, f64)>> {
    let key = format!("<g class=\"series\" data-column=\"{column}\"");
    svg.match_indices(&key)
        .flat_map(|(i, _)| {
            let group = &svg[i..i + svg[i..].find("</g>").unwrap()];
            group
                .match_indices("<polyline points=\"")
                .map(|(j, m)| {
                    let pts = &group[j + m.len()..];
                    pts[..pts.find('"').unwrap()]
                        .split(' ')
                        .map(|p| {
                            let (x, y) = p.split_once(',').unwrap();
                            (x.parse().unwrap(), y.parse().unwrap())
                        })
                        .collect()
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_run_plot_has_a_panel_per_unit_and_every_column_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b1");
    run("b1_quarter_car_a.toml", &out, &["--plot"]);
    let trace = out.join("trace.csv");
    let svg = std::fs::read_to_string(out.join("plot.svg")).expect("run --plot writes plot.svg");
    let (names, units) = header_units(&trace);
    let panels = panels(&svg);
    assert_eq!(panels.len(), units.len(), "one panel per unit: {units:?}");
    assert!(units.len() >= 3, "B1 traces N, m/s and m: {units:?}");
    // Each panel's label is its unit; every column is in the legend of
    // the panel of its unit.
    for (panel, unit) in panels.iter().zip(&units) {
        let label = attr(panel, "data-label");
        assert_eq!(label, unit.as_deref().unwrap_or("no unit"));
    }
    let legend = texts(&svg, "legend-label");
    for n in &names {
        assert!(legend.contains(n), "'{n}' not in the legend {legend:?}");
    }
    // The legend is outside the curves: right of the plotting area.
    for panel in &panels {
        let (_, y0, x1, y1) = frame(panel);
        let l = panel.find("<g class=\"legend-entry\">").expect("a legend");
        let line = &panel[l + panel[l..].find("<line").unwrap()..];
        assert!(num_attr(line, "x1") > x1, "legend over the data");
        assert!((y0..=y1).contains(&num_attr(line, "y1")));
    }
    assert_round_ticks(&svg);
    assert_eq!(texts(&svg, "title"), ["b1_quarter_car_a"]);
    assert_eq!(texts(&svg, "axis-label x"), ["time [s]"]);
    // The lines stay within their panel's clip and are thinned: 4000 rows
    // in a few hundred pixel columns.
    for line in series_points(&svg, "chassis.v_c") {
        assert!(line.len() < 4 * 1000, "{} points", line.len());
    }
    // The SVG needs no font files: text is left to the viewer.
    assert!(!svg.contains("@font-face") && !svg.contains(".ttf") && !svg.contains("<image"));
}

#[test]
fn integer_and_boolean_columns_are_steps_in_the_no_unit_panel() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("thermostat");
    run("thermostat.toml", &out, &[]);
    let plot = dir.path().join("t.svg");
    let o = cosim(&["plot", s(&out.join("trace.csv")), "-o", s(&plot)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stderr(&o).contains("2 panels"), "{}", text(&o));
    let svg = std::fs::read_to_string(&plot).unwrap();
    let labels: Vec<&str> = panels(&svg).iter().map(|p| attr(p, "data-label")).collect();
    assert_eq!(labels, ["degC", "no unit"]);
    // Discrete columns: every segment horizontal or vertical.
    for column in ["controller.heater_on", "controller.level", "room.level"] {
        let lines = series_points(&svg, column);
        assert!(!lines.is_empty(), "{column}");
        for line in lines {
            for w in line.windows(2) {
                assert!(
                    w[0].0 == w[1].0 || w[0].1 == w[1].1,
                    "{column}: {:?} -> {:?} is not a step",
                    w[0],
                    w[1]
                );
            }
        }
    }
    // A continuous column is not.
    let t = &series_points(&svg, "room.T")[0];
    assert!(
        t.windows(2).any(|w| w[0].0 != w[1].0 && w[0].1 != w[1].1),
        "room.T drawn as steps"
    );
}

/// Two B1 runs (1 ms and 10 ms) plotted against the reference.
fn two_runs_and_a_reference(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let fine = dir.join("h1ms");
    let coarse = dir.join("h10ms");
    run("b1_quarter_car_a.toml", &fine, &[]);
    run("b1_quarter_car_a.toml", &coarse, &["--step", "0.01"]);
    (
        fine.join("trace.csv"),
        coarse.join("trace.csv"),
        fmus().join("references").join("b1_linear.csv"),
    )
}

#[test]
fn files_get_line_styles_and_the_reference_is_drawn_where_it_matches() {
    let dir = tempfile::tempdir().unwrap();
    let (fine, coarse, reference) = two_runs_and_a_reference(dir.path());
    let plot = dir.path().join("p.svg");
    let o = cosim(&[
        "plot",
        s(&fine),
        s(&coarse),
        "--columns",
        "chassis.*,wheel.F_w",
        "--reference",
        s(&reference),
        "--title",
        "B1: 1 ms & 10 ms",
        "-o",
        s(&plot),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert_eq!(texts(&svg, "title"), ["B1: 1 ms & 10 ms"]);
    // The key names each file (with its run directory: both are
    // trace.csv) and the reference.
    assert_eq!(
        texts(&svg, "key-label"),
        ["h1ms/trace", "h10ms/trace", "reference: b1_linear"]
    );
    // Each column once per file, solid for the first, dashed for the second.
    for column in ["chassis.F", "chassis.v_c", "chassis.z_c", "wheel.F_w"] {
        for (file, dash) in [("h1ms/trace", "solid"), ("h10ms/trace", "dashed")] {
            let tag = format!(
                "<g class=\"series\" data-column=\"{column}\" data-file=\"{file}\" data-dash=\"{dash}\">"
            );
            assert_eq!(svg.matches(&tag).count(), 1, "{tag}");
        }
    }
    let dashed = svg.find("data-dash=\"dashed\"").unwrap();
    assert!(svg[dashed..].contains("stroke-dasharray=\"8 5\""));
    // The reference over the columns it matches among the plotted ones:
    // v_c, z_c (only chassis.* is plotted of them) and F_w; not chassis.F.
    let mut referenced: Vec<&str> = svg
        .match_indices("<g class=\"reference\"")
        .map(|(i, _)| attr(&svg[i..], "data-column"))
        .collect();
    referenced.sort_unstable();
    assert_eq!(referenced, ["chassis.v_c", "chassis.z_c", "wheel.F_w"]);
    let r = svg.find("<g class=\"reference\"").unwrap();
    assert!(
        svg[r..].contains("stroke=\"#000000\" stroke-width=\"1\""),
        "thin black"
    );
    let legend = texts(&svg, "legend-label");
    assert!(
        legend.contains(&"chassis.v_c (ref. v_c)".to_string()),
        "{legend:?}"
    );
    assert!(legend.contains(&"chassis.F".to_string()), "{legend:?}");
    assert_round_ticks(&svg);
    // Pairs by hand, as `cosim compare --map` takes them.
    let o = cosim(&[
        "plot",
        s(&fine),
        "--columns",
        "wheel.v_w",
        "--reference",
        s(&reference),
        "--map",
        "wheel.v_w=v_c",
        "-o",
        s(&plot),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("data-reference-column=\"v_c\""));
}

#[test]
fn a_column_cap_leaves_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b1");
    run("b1_quarter_car_a.toml", &out, &[]);
    let plot = dir.path().join("p.svg");
    let o = cosim(&[
        "plot",
        s(&out.join("trace.csv")),
        "--max-columns",
        "4",
        "-o",
        s(&plot),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("note: 12 columns selected; the first 4 are plotted"),
        "{}",
        text(&o)
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert_eq!(texts(&svg, "legend-label").len(), 4);
    assert!(texts(&svg, "note")[0].contains("12 columns selected"));
}

#[test]
fn errors_name_the_glob_the_file_and_line_or_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b1");
    run("b1_quarter_car_a.toml", &out, &[]);
    let trace = out.join("trace.csv");
    let plot = dir.path().join("p.svg");

    // A glob that matches nothing: named, with the columns there are.
    let o = cosim(&[
        "plot",
        s(&trace),
        "--columns",
        "chassis.*,susp*",
        "-o",
        s(&plot),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--columns 'susp*' matches no column") && e.contains("chassis.v_c, chassis.z_c"),
        "{e}"
    );
    assert!(!plot.exists());

    // Not a trace: the scenario file itself, a CSV with a word in it, a
    // CSV whose time goes back.
    let sc = scenario("b1_quarter_car_a.toml");
    let o = cosim(&["plot", s(&sc), "-o", s(&plot)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = stderr(&o);
    assert!(e.contains(s(&sc)) && e.contains(": line "), "{e}");
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "time,x [m]\n0,1\n0.5,oops\n").unwrap();
    let o = cosim(&["plot", s(&bad), "-o", s(&plot)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{}: line 3: column 'x': 'oops' is not a number",
            s(&bad)
        )),
        "{}",
        text(&o)
    );
    std::fs::write(&bad, "time,x\n0,1\n1,2\n0.5,3\n").unwrap();
    let o = cosim(&["plot", s(&bad), "-o", s(&plot)]);
    assert!(
        stderr(&o).contains("line 4: time 0.5 is before"),
        "{}",
        text(&o)
    );
    let o = cosim(&["plot", s(&dir.path().join("missing.csv")), "-o", s(&plot)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(stderr(&o).contains("missing.csv"), "{}", text(&o));

    // A reference that matches nothing plotted.
    let o = cosim(&[
        "plot",
        s(&trace),
        "--columns",
        "chassis.F",
        "--reference",
        s(&fmus().join("references").join("b1_linear.csv")),
        "-o",
        s(&plot),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("matches none of the plotted columns"),
        "{}",
        text(&o)
    );

    // An output that cannot be written: exit status 1, the path named.
    for unwritable in [
        dir.path().join("no/such/dir/p.svg"),
        dir.path().to_path_buf(),
    ] {
        let o = cosim(&["plot", s(&trace), "-o", s(&unwritable)]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            stderr(&o).contains(&format!("cannot write the plot {}", s(&unwritable))),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn the_sweep_plot_is_drawn_by_the_same_code() {
    let dir = tempfile::tempdir().unwrap();
    let (svg, walls) = sweep_plot(dir.path());
    let panels = panels(&svg);
    assert_eq!(panels.len(), 2);
    // The wall times are measured: their axis is logarithmic when they
    // span a factor 20 (a loaded machine can make them do so).
    let (lo, hi) = walls.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &w| {
        (lo.min(w), hi.max(w))
    });
    let wall_label = if hi / lo >= 20.0 {
        "wall time [s] (log)"
    } else {
        "wall time [s]"
    };
    assert_eq!(
        panels
            .iter()
            .map(|p| attr(p, "data-label"))
            .collect::<Vec<_>>(),
        ["mean_abs_power_error (log)", wall_label]
    );
    let legend = texts(&svg, "legend-label");
    assert!(
        legend.iter().any(|l| l.starts_with("stability limit")),
        "{legend:?}"
    );
    assert!(
        legend.contains(&"diverged or failed".to_string()),
        "{legend:?}"
    );
    assert_round_ticks(&svg);
    // Decades and their multiples on the log axis of the steps.
    assert_eq!(
        texts(&svg, "tick x"),
        ["0.002", "0.005", "0.01", "0.02", "0.05"]
    );
}

/// A small sweep's plot (B1, two extrapolation orders, four steps), and
/// its runs' wall times.
fn sweep_plot(dir: &Path) -> (String, Vec<f64>) {
    fmus();
    let file = dir.join("small.toml");
    std::fs::write(
        &file,
        format!(
            "[sweep]\nscenario = \"{}\"\nset = {{ \"simulation.stop\" = 2.0 }}\n[[sweep.axes]]\nkey = \"master.extrapolation\"\nvalues = [0, 1]\n[[sweep.axes]]\nkey = \"master.step\"\nvalues = [2e-3, 8e-3, 0.03, 0.07]\n[sweep.reference]\nfile = \"{}\"\ncolumns = {{ \"chassis.v_c\" = \"v_c\" }}\npower = \"F_c*v_c\"\n",
            scenario("b1_quarter_car_a.toml").display(),
            fmus().join("references").join("b1_linear.csv").display()
        ),
    )
    .unwrap();
    let spec = cosim_sweep::SweepSpec::load(&file).unwrap();
    let options = cosim_sweep::Options {
        out: Some(dir.join("sweep")),
        ..cosim_sweep::Options::default()
    };
    let outcome = cosim_sweep::run(&spec, &options, &cosim_sweep::Silent).unwrap();
    let walls = outcome.records.iter().map(|r| r.wall_time_s).collect();
    (
        std::fs::read_to_string(outcome.plot_path.unwrap()).unwrap(),
        walls,
    )
}

// ---------------------------------------------------------------------
// The browser check.

/// Headless Chromium: `COSIM_CHROMIUM`, else `chromium`,
/// `chromium-browser`, `google-chrome` on the PATH.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("COSIM_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
    .find(|p| p.is_file())
}

/// Renders `svg` (its own size) to a PNG with headless Chromium; the PNG's
/// bytes.
fn screenshot(browser: &Path, svg: &Path, size: (u32, u32), png: &Path) -> Vec<u8> {
    let profile = tempfile::tempdir().unwrap();
    let log = png.with_extension("log");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", s(profile.path())))
        .arg(format!("--screenshot={}", s(png)))
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("file://{}", s(svg)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", browser.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} did not finish the screenshot in 120 s; its log:\n{}",
                browser.display(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success() && png.exists(),
        "{} failed ({status}); its log:\n{}",
        browser.display(),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    std::fs::read(png).unwrap()
}

/// An RGB image.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Image {
    fn decode(bytes: &[u8]) -> Image {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let samples = info.color_type.samples();
        let rgb = buf[..info.buffer_size()]
            .chunks(samples)
            .map(|p| match samples {
                1 | 2 => [p[0]; 3],
                _ => [p[0], p[1], p[2]],
            })
            .collect();
        Image {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    /// The pixels within `(x0, y0, x1, y1)`.
    fn area(&self, (x0, y0, x1, y1): (f64, f64, f64, f64)) -> Vec<[u8; 3]> {
        let (x0, x1) = (
            x0.ceil() as usize + 1,
            (x1.floor() as usize).min(self.width) - 1,
        );
        let (y0, y1) = (
            y0.ceil() as usize + 1,
            (y1.floor() as usize).min(self.height) - 1,
        );
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| (x, y)))
            .map(|(x, y)| self.rgb[y * self.width + x])
            .collect()
    }
}

/// A saturated pixel's hue, in twelve bins.
fn hue_bin([r, g, b]: [u8; 3]) -> Option<usize> {
    let (r, g, b) = (r as f64, g as f64, b as f64);
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    if max - min < 70.0 {
        return None;
    }
    let d = max - min;
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    };
    Some(((h * 2.0) as usize).min(11))
}

/// Renders a plot in the browser and checks what it shows: the size of
/// the SVG; in the first panel's plotting area, many non-white pixels,
/// several distinct hues (one colour per column) and black (the reference
/// or a line-style key); dark text pixels in the title band (the viewer's
/// font was used).
fn check_render(browser: &Path, svg_path: &Path, name: &str, min_hues: usize) {
    let svg = std::fs::read_to_string(svg_path).unwrap();
    let size = (
        num_attr(&svg, "width") as u32,
        num_attr(&svg, "height") as u32,
    );
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plot-browser-check");
    std::fs::create_dir_all(&keep).unwrap();
    let png_path = keep.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png_path);
    let image = Image::decode(&screenshot(browser, svg_path, size, &png_path));
    println!("{name}: rendered {}", png_path.display());
    assert_eq!(
        (image.width, image.height),
        (size.0 as usize, size.1 as usize),
        "the screenshot has the SVG's size"
    );
    let panel = panels(&svg)[0];
    let area = image.area(frame(panel));
    let non_white = area.iter().filter(|p| p.iter().any(|&c| c < 200)).count();
    assert!(
        non_white * 100 > area.len(),
        "{name}: only {non_white} of {} pixels of the first panel are drawn",
        area.len()
    );
    let mut bins = [0usize; 12];
    for p in &area {
        if let Some(b) = hue_bin(*p) {
            bins[b] += 1;
        }
    }
    let hues = bins.iter().filter(|&&n| n >= 30).count();
    assert!(hues >= min_hues, "{name}: {hues} distinct hues {bins:?}");
    let (_, y0, _, _) = frame(panel);
    let title = image.area((0.0, 0.0, size.0 as f64, y0.min(30.0)));
    let dark = title.iter().filter(|p| p.iter().all(|&c| c < 100)).count();
    assert!(
        dark > 100,
        "{name}: no title text rendered ({dark} dark pixels)"
    );
}

#[test]
fn the_plots_render_in_a_browser() {
    let Some(browser) = chromium() else {
        if std::env::var("COSIM_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!(
                "COSIM_REQUIRE_BROWSER=1 but no Chromium was found (install Debian's chromium, or set COSIM_CHROMIUM to the browser)"
            );
        }
        println!(
            "note: skipped the browser check of the plots: no Chromium on the PATH (apt-get install chromium; COSIM_REQUIRE_BROWSER=1 makes this a failure)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (fine, coarse, reference) = two_runs_and_a_reference(dir.path());
    let plot = dir.path().join("traces.svg");
    let o = cosim(&[
        "plot",
        s(&fine),
        s(&coarse),
        "--reference",
        s(&reference),
        "-o",
        s(&plot),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    check_render(&browser, &plot, "traces", 3);
    let sweep = dir.path().join("sweep.svg");
    std::fs::write(&sweep, sweep_plot(dir.path()).0).unwrap();
    check_render(&browser, &sweep, "sweep", 2);
}
