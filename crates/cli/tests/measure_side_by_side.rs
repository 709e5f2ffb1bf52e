//! Loose agreement with the established tools (docs/PERFORMANCE.md has the real comparison):
//! cyclictest vs `measure timer`, sockperf ping-pong vs `measure net` back-to-back.

use std::io::BufRead;
use std::process::{Command, Stdio};

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap_or_default().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

fn have(tool: &str) -> bool {
    let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().map(|o| o.status.success()).unwrap_or(false);
    if !found {
        eprintln!("{tool} not installed (scripts/setup.sh installs it): skipped");
    }
    found
}

fn rtvirt_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rtvirt")).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Median (us) of a cyclictest histogram file (1 us bins).
fn cyclictest_median_us(hist: &str) -> f64 {
    let bins: Vec<u64> = hist.lines().filter(|l| !l.starts_with('#')).map(|l| l.split_whitespace().skip(1).map(|c| c.parse::<u64>().unwrap()).sum()).collect();
    let total: u64 = bins.iter().sum();
    let mut acc = 0;
    for (us, n) in bins.iter().enumerate() {
        acc += n;
        if acc * 2 >= total {
            return us as f64 + 0.5;
        }
    }
    f64::NAN
}

#[test]
fn timer_median_agrees_loosely_with_cyclictest() {
    if !is_root() || !have("cyclictest") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("h.txt");
    let st = Command::new("cyclictest").args(["-m", "-q", "-t", "1", "-a", "1", "-p", "90", "-i", "1000", "-D", "2s", "-h", "10000", "--histfile"]).arg(&hist).stdout(Stdio::null()).status().unwrap();
    assert!(st.success());
    let ct = cyclictest_median_us(&std::fs::read_to_string(&hist).unwrap());
    let v = rtvirt_json(&["measure", "timer", "--cpus", "1", "--priority", "90", "--interval", "1ms", "--duration", "2s", "--format", "json"]);
    let rv = v["latency_ns"]["p50"].as_f64().unwrap() / 1e3;
    assert!(rv < ct * 3.0 + 20.0 && ct < rv * 3.0 + 20.0, "median: rtvirt {rv} us vs cyclictest {ct} us");
}

#[test]
fn net_median_agrees_loosely_with_sockperf() {
    if !have("sockperf") {
        return;
    }
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let mut srv = Command::new("sockperf").args(["sr", "-i", "127.0.0.1", "-p", &port]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = Command::new("sockperf").args(["pp", "-i", "127.0.0.1", "-p", &port, "-m", "64", "-t", "2", "--full-rtt"]).output().unwrap();
    let _ = srv.kill();
    let _ = srv.wait();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let sp: f64 = text.lines().find(|l| l.contains("percentile 50.000 =")).and_then(|l| l.split('=').nth(1)).and_then(|v| v.trim().parse().ok()).unwrap_or_else(|| panic!("no median in sockperf output: {text}"));
    // rtvirt server + client, back-to-back, same size.
    let mut rsrv = Command::new(env!("CARGO_BIN_EXE_rtvirt")).args(["measure", "net", "server", "--listen", &format!("127.0.0.1:{port}"), "--duration", "20s"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(rsrv.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let v = rtvirt_json(&["measure", "net", "client", "--connect", &format!("127.0.0.1:{port}"), "--size", "64", "--arrivals", "back-to-back", "--duration", "2s", "--format", "json"]);
    let _ = rsrv.kill();
    let _ = rsrv.wait();
    let rv = v["rtt_ns"]["p50"].as_f64().unwrap() / 1e3;
    assert!(rv < sp * 2.0 + 10.0 && sp < rv * 2.0 + 10.0, "median RTT: rtvirt {rv} us vs sockperf {sp} us");
}
