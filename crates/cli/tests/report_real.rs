//! `rtvirt report` on real result files produced by the other commands of the same binary:
//! plan, simulate under the plan, measure timer, measure net (UDP on loopback).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

/// Run rtvirt with `args`, write its stdout to `dir/name`, return the path.
fn produce(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = rtvirt().args(args).output().unwrap();
    assert!(out.status.success(), "rtvirt {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let p = dir.join(name);
    std::fs::write(&p, &out.stdout).unwrap();
    p
}

/// A real UDP exchange on loopback: the client's results and the server's own (it serves 4 s,
/// then prints its results; its "listening on" line is on stderr).
fn net_results(dir: &Path) -> (PathBuf, PathBuf) {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let mut srv = rtvirt()
        .args(["measure", "net", "server", "--listen", &addr, "--udp", "--duration", "4s", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = srv.stdout.take().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(srv.stderr.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on"), "{line}");
    let p = std::panic::catch_unwind(|| {
        produce(
            dir,
            "net.json",
            &[
                "measure",
                "net",
                "client",
                "--connect",
                &addr,
                "--udp",
                "--arrivals",
                "uniform:1ms-2ms",
                "--duration",
                "1s",
                "--format",
                "json",
            ],
        )
    });
    if p.is_err() {
        let _ = srv.kill();
    }
    let mut served = String::new();
    std::io::Read::read_to_string(&mut out, &mut served).unwrap();
    assert!(srv.wait().unwrap().success());
    let server = dir.join("net-server.json");
    std::fs::write(&server, served).unwrap();
    (p.unwrap(), server)
}

fn scenario(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name).display().to_string()
}

#[test]
fn report_of_real_network_simulations_compares_methods() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let vanilla = produce(
        d,
        "vanilla.json",
        &["simulate", &scenario("seeds1_vanilla_hr.toml"), "--duration", "1s", "--format", "json"],
    );
    let outsourcing = produce(
        d,
        "outsourcing.json",
        &["simulate", &scenario("seeds1_outsourcing_hr.toml"), "--duration", "1s", "--format", "json"],
    );
    let out = rtvirt().args(["report", "-o", "-"]).args([&vanilla, &outsourcing]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.contains("data-chart=\"segments\"") && html.contains("Flow critical: end-to-end latency"));
    assert!(html.contains("seeds1_vanilla_hr / critical") && html.contains("seeds1_outsourcing_hr / critical"));
    let chart = &html[html.find("data-chart=\"segments\"").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    for segment in ["host_receive", "guest", "host_send"] {
        assert!(chart.contains(&format!(">{segment}<")), "segment {segment} in the legend");
    }
    assert!(chart.matches("class=\"datum\"").count() >= 6, "3 segments x 2 methods stacked");
}

#[test]
fn report_of_real_plan_simulation_and_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = produce(d, "plan.json", &["plan", "--format", "json"]);
    let sim =
        produce(d, "sim.json", &["simulate", "--plan", plan.to_str().unwrap(), "--duration", "2s", "--format", "json"]);
    let timer = produce(
        d,
        "timer.json",
        &["measure", "timer", "--duration", "1s", "--interval-report", "250ms", "--format", "json"],
    );
    let (net, server) = net_results(d);
    let html = d.join("report.html");
    let out = rtvirt().arg("report").args([&sim, &timer, &net, &server, &plan]).arg("-o").arg(&html).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&html).unwrap();
    for kind in ["bandwidth", "dsr-tasks", "exceedance", "histogram", "boxplot", "timeseries"] {
        assert!(text.contains(&format!("data-chart=\"{kind}\"")), "no {kind} chart");
    }
    for section in
        ["Plan: plan", "Periodic tasks", "Timer wake-up latency", "Request/response round-trip time", "Environment"]
    {
        assert!(text.contains(section), "no section {section}");
    }
    let md =
        rtvirt().args(["report", "--format", "md", "-o", "-"]).args([&sim, &timer, &net, &server]).output().unwrap();
    assert!(md.status.success());
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.contains("| vm1/t1 |"), "task rows from the simulation");
    // the server's side is listed with its kind and environment
    assert!(md.lines().any(|l| l.starts_with("| net-server |") && l.contains("net-server")), "{md}");
}

/// The statistics row of `name` in the Markdown table of the timer family: its cells.
fn timer_row<'a>(md: &'a str, name: &str) -> Vec<&'a str> {
    let section = &md[md.find("Timer wake-up latency").expect("timer section")..];
    let line = section
        .lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row {name}: {md}"));
    line.trim_matches('|').split(" | ").map(str::trim).collect()
}

#[test]
fn report_of_before_and_after_highlights_differences_beyond_ten_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |name: &str, load: &[&str]| {
        produce(d, name, &[&["measure", "timer", "--cpus", "0", "--duration", "1s", "--format", "json"], load].concat())
    };
    let before = run("before.json", &[]);
    let after = run("after.json", &["--load", "syscalls:1@0"]);
    let md = rtvirt().args(["report", "--format", "md", "-o", "-"]).args([&before, &after]).output().unwrap();
    assert!(md.status.success(), "{}", String::from_utf8_lossy(&md.stderr));
    let md = String::from_utf8(md.stdout).unwrap();
    let summary = |p: &Path| {
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p).unwrap()).unwrap()["latency_ns"].clone()
    };
    let (b, a) = (summary(&before), summary(&after));
    let (brow, arow) = (timer_row(&md, "before"), timer_row(&md, "after"));
    // columns after the name: kind, samples, then these statistics
    let stats = ["min", "mean", "sd", "p50", "p90", "p99", "p999", "p9999", "max"];
    let mut marked = 0;
    for (k, stat) in stats.iter().enumerate() {
        let (bv, av) = (b[stat].as_f64().unwrap(), a[stat].as_f64().unwrap());
        let (bcell, acell) = (brow[k + 3], arow[k + 3]);
        assert!(!bcell.contains('▲') && !bcell.contains('▼') && !bcell.contains('('), "the baseline is plain: {bcell}");
        let rel = if bv == 0.0 {
            if av == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (av - bv) / bv
        };
        let expect = if rel.abs() <= 0.10 {
            ""
        } else if rel > 0.0 {
            "▲"
        } else {
            "▼"
        };
        let got = if acell.ends_with('▲') {
            "▲"
        } else if acell.ends_with('▼') {
            "▼"
        } else {
            ""
        };
        assert_eq!(got, expect, "{stat}: before {bv}, after {av} ({:+.1}%): cell {acell:?}", rel * 100.0);
        assert!(acell.contains('(') && acell.contains(')'), "the after value carries its difference: {acell}");
        marked += usize::from(!got.is_empty());
    }
    eprintln!("{marked} of {} statistics differ by more than 10%", stats.len());
}
