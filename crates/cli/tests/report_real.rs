//! `rtvirt report` on real result files produced by the other commands of the same binary:
//! plan, simulate under the plan, measure timer, measure net (UDP on loopback).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn rtvirt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
}

/// Run rtvirt with `args`, write its stdout to `dir/name`, return the path.
fn produce(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = rtvirt().args(args).output().unwrap();
    assert!(out.status.success(), "rtvirt {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let p = dir.join(name);
    std::fs::write(&p, &out.stdout).unwrap();
    p
}

fn net_result(dir: &Path) -> PathBuf {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let mut srv = rtvirt().args(["measure", "net", "server", "--listen", &addr, "--udp", "--duration", "20s"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(srv.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on"), "{line}");
    let p = std::panic::catch_unwind(|| {
        produce(dir, "net.json", &["measure", "net", "client", "--connect", &addr, "--udp", "--arrivals", "uniform:1ms-2ms", "--duration", "1s", "--format", "json"])
    });
    let _ = srv.kill();
    let _ = srv.wait();
    p.unwrap()
}

fn scenario(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name).display().to_string()
}

#[test]
fn report_of_real_network_simulations_compares_methods() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let vanilla = produce(d, "vanilla.json", &["simulate", &scenario("seeds1_vanilla_hr.toml"), "--duration", "1s", "--format", "json"]);
    let outsourcing = produce(d, "outsourcing.json", &["simulate", &scenario("seeds1_outsourcing_hr.toml"), "--duration", "1s", "--format", "json"]);
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
    let sim = produce(d, "sim.json", &["simulate", "--plan", plan.to_str().unwrap(), "--duration", "2s", "--format", "json"]);
    let timer = produce(d, "timer.json", &["measure", "timer", "--duration", "1s", "--interval-report", "250ms", "--format", "json"]);
    let net = net_result(d);
    let html = d.join("report.html");
    let out = rtvirt().arg("report").args([&sim, &timer, &net, &plan]).arg("-o").arg(&html).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&html).unwrap();
    for kind in ["bandwidth", "dsr-tasks", "cdf", "histogram", "boxplot", "timeseries"] {
        assert!(text.contains(&format!("data-chart=\"{kind}\"")), "no {kind} chart");
    }
    for section in ["Plan: plan", "Periodic tasks", "Timer wake-up latency", "Request/response round-trip time", "Environment"] {
        assert!(text.contains(section), "no section {section}");
    }
    let md = rtvirt().args(["report", "--format", "md", "-o", "-"]).args([&sim, &timer, &net]).output().unwrap();
    assert!(md.status.success());
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.contains("| vm1/t1 |"), "task rows from the simulation");
}
