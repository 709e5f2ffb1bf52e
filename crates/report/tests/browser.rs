//! The HTML report in a real browser: headless Chromium (Debian `chromium`, installed by
//! `scripts/setup.sh test`) loads it from disk (file://), every chart is in the parsed DOM with
//! data marks, and a screenshot is not blank and shows the charts' colours.

use rtvirt_report::{build_report, load_inputs, render, ReportFormat};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURES: &[&str] = &[
    "sim_rho9.json",
    "tasks_measured.json",
    "sim_rho1.json",
    "timer_idle.json",
    "timer_load.json",
    "timer_explain.json",
    "netsim_vanilla.json",
    "netsim_outsourcing.json",
    "plan.json",
];

fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("chromium")).find(|c| c.is_file()));
    found.expect("chromium not found: run `scripts/setup.sh test` (installs Debian's chromium)")
}

/// Run headless Chromium on a file with extra arguments; stdout. Killed after 120 s.
fn run_chromium(page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", profile.path().display()));
    args.extend(extra.iter().cloned());
    args.push(format!("file://{}", page.display()));
    let out_path = profile.path().join("stdout");
    let mut child = Command::new(chromium())
        .args(&args)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_to_string(out_path).unwrap()
}

fn write_report(dir: &Path) -> (PathBuf, usize) {
    let paths: Vec<PathBuf> =
        FIXTURES.iter().map(|n| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(n)).collect();
    let report = build_report("browser test", &load_inputs(&paths).unwrap());
    let page = dir.join("report.html");
    std::fs::write(&page, render(&report, ReportFormat::Html)).unwrap();
    (page, report.figures().count())
}

/// The `<svg class="chart" ...>...</svg>` fragments of a serialized DOM.
fn chart_fragments(dom: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").map(|e| start + e + 6).expect("closed svg");
        if rest[start..end].contains("class=\"chart\"") {
            out.push(&rest[start..end]);
        }
        rest = &rest[end..];
    }
    out
}

/// Data marks with a visible size: rects with width and height > 0, paths with 2+ points, dots.
fn visible_data_marks(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("chart from the DOM does not parse: {e}"));
    let num = |n: &roxmltree::Node, a: &str| n.attribute(a).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    doc.descendants()
        .filter(|n| n.attribute("class") == Some("datum"))
        .filter(|n| match n.tag_name().name() {
            "rect" => num(n, "width") > 0.0 && num(n, "height") > 0.0,
            "path" => n.attribute("d").is_some_and(|d| d.matches('L').count() >= 1),
            "circle" => num(n, "r") > 0.0,
            _ => false,
        })
        .count()
}

#[test]
fn charts_are_in_the_browser_dom_with_data() {
    let dir = tempfile::tempdir().unwrap();
    let (page, figures) = write_report(dir.path());
    let dom = run_chromium(&page, &["--dump-dom".into()]);
    assert!(dom.contains("<h1>browser test</h1>"), "page did not load: {}", &dom[..dom.len().min(300)]);
    let charts = chart_fragments(&dom);
    assert_eq!(charts.len(), figures, "every chart of the report is in the DOM");
    let overlays: Vec<&&str> = charts.iter().filter(|c| c.contains("data-chart=\"response-cdf\"")).collect();
    assert_eq!(overlays.len(), 9, "a predicted-vs-measured CDF chart for each of the 9 tasks both fixtures have");
    assert!(overlays.iter().all(|c| c.contains("predicted (") && c.contains("measured (")), "both curves");
    for c in &charts {
        assert!(visible_data_marks(c) > 0, "empty chart in the browser: {}", &c[..200.min(c.len())]);
    }
}

#[test]
fn screenshot_is_not_blank() {
    let dir = tempfile::tempdir().unwrap();
    let (page, _) = write_report(dir.path());
    let shot = dir.path().join("shot.png");
    run_chromium(&page, &["--window-size=1100,2400".into(), format!("--screenshot={}", shot.display())]);
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).expect("screenshot written")));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let non_white = pixels.iter().filter(|p| p[..3].iter().any(|&c| c < 235)).count();
    // Okabe-Ito blue (#0072B2) and vermillion (#D55E00): the first two series of every chart.
    let near = |p: &[u8], c: [u8; 3]| p[..3].iter().zip(c).all(|(&a, b)| a.abs_diff(b) < 24);
    let blue = pixels.iter().filter(|p| near(p, [0x00, 0x72, 0xB2])).count();
    let vermillion = pixels.iter().filter(|p| near(p, [0xD5, 0x5E, 0x00])).count();
    let share = non_white as f64 / pixels.len() as f64;
    assert!(share > 0.03, "screenshot nearly blank: {:.2}% non-white", share * 100.0);
    assert!(blue > 500 && vermillion > 500, "chart colours not painted: blue {blue}, vermillion {vermillion}");
}
