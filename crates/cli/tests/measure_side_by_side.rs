//! Loose agreement with the established tools (docs/PERFORMANCE.md has the real comparison):
//! cyclictest vs `measure timer`, sockperf ping-pong vs `measure net` back-to-back.
//!
//! The two tests run one after the other (cyclictest and `measure timer` hold
//! /dev/cpu_dma_latency at 0, which shortens every wake-up on the machine, so a network run
//! beside them is faster than one without), and each tool runs twice, interleaved, so that a
//! change of the machine's state during the test hits both tools. The net test itself holds
//! /dev/cpu_dma_latency at 0 for both tools (as root): without a holder, loopback RTT on this VM
//! jumps between ~11 us and ~60 us with the machine's idle states, whichever tool measures.

use std::io::BufRead;
use std::process::{Command, Stdio};

fn rtvirt_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The q-quantile (us, middle of its 1 us bin) of a cyclictest histogram file.
fn cyclictest_percentile_us(hist: &str, q: f64) -> f64 {
    let bins: Vec<u64> = hist
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().skip(1).map(|c| c.parse::<u64>().unwrap()).sum())
        .collect();
    let total: u64 = bins.iter().sum();
    let mut acc = 0;
    for (us, n) in bins.iter().enumerate() {
        acc += n;
        if acc as f64 >= q * total as f64 {
            return us as f64 + 0.5;
        }
    }
    f64::NAN
}

/// One cyclictest round on CPU 1 (2 s, 1 ms, FIFO 90): (p50, p99) in us.
fn cyclictest_round(dir: &std::path::Path) -> (f64, f64) {
    let hist = dir.join("h.txt");
    let st = Command::new("cyclictest")
        .args(["-m", "-q", "-t", "1", "-a", "1", "-p", "90", "-i", "1000", "-D", "2s", "-h", "10000", "--histfile"])
        .arg(&hist)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&hist).unwrap();
    (cyclictest_percentile_us(&text, 0.5), cyclictest_percentile_us(&text, 0.99))
}

/// One `measure timer` round with the same settings: (p50, p99) in us, and the number of missed
/// periods.
fn rtvirt_timer_round() -> ((f64, f64), u64) {
    let v = rtvirt_json(&[
        "measure",
        "timer",
        "--cpus",
        "1",
        "--priority",
        "90",
        "--interval",
        "1ms",
        "--duration",
        "2s",
        "--format",
        "json",
    ]);
    (
        (v["latency_ns"]["p50"].as_f64().unwrap() / 1e3, v["latency_ns"]["p99"].as_f64().unwrap() / 1e3),
        v["missed_periods"].as_u64().unwrap(),
    )
}

/// Loose agreement of two latencies (us): within `factor` of each other plus `slack_us`.
fn agree(a: f64, b: f64, factor: f64, slack_us: f64) -> bool {
    a < b * factor + slack_us && b < a * factor + slack_us
}

#[test]
fn timer_median_and_p99_agree_loosely_with_cyclictest() {
    let _g = rtvirt_testkit::host_lock();
    rtvirt_testkit::require_root!();
    rtvirt_testkit::require_tool!("cyclictest");
    let dir = tempfile::tempdir().unwrap();
    // Two rounds per tool, interleaved: cyclictest, rtvirt, cyclictest, rtvirt.
    let (mut ct, mut rv, mut missed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..2 {
        ct.push(cyclictest_round(dir.path()));
        let (r, m) = rtvirt_timer_round();
        rv.push(r);
        missed.push(m);
    }
    // Each tool's best round (the least disturbed): this shared VM has 1-2 ms spikes that can
    // land in either tool's round.
    let best = |v: &[(f64, f64)], pick: fn(&(f64, f64)) -> f64| v.iter().map(pick).fold(f64::INFINITY, f64::min);
    let (ct50, rv50) = (best(&ct, |r| r.0), best(&rv, |r| r.0));
    assert!(agree(rv50, ct50, 3.0, 20.0), "median: rtvirt {rv:?} vs cyclictest {ct:?} (us)");
    // The tails are comparable only where both tools count the same samples: a stall longer
    // than the period is one sample for cyclictest but one per missed activation for rtvirt
    // (on purpose), so a single 10 ms stall of this VM puts rtvirt's p99 of a 2 s run at ~10 ms.
    let clean: Vec<(f64, f64)> = rv.iter().zip(&missed).filter(|(_, &m)| m == 0).map(|(r, _)| *r).collect();
    if clean.is_empty() {
        eprintln!("p99 not compared: every rtvirt round had missed periods {missed:?} (stalls of this VM)");
        return;
    }
    let (ct99, rv99) = (best(&ct, |r| r.1), best(&clean, |r| r.1));
    assert!(agree(rv99, ct99, 4.0, 300.0), "p99: rtvirt {rv:?} (missed periods {missed:?}) vs cyclictest {ct:?} (us)");
}

/// Median full RTT (us) of a sockperf ping-pong run against a sockperf server on `port`.
fn sockperf_median_us(port: &str) -> f64 {
    let out = Command::new("sockperf")
        .args(["pp", "-i", "127.0.0.1", "-p", port, "-m", "64", "-t", "1", "--full-rtt"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| l.contains("percentile 50.000 ="))
        .and_then(|l| l.split('=').nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no median in sockperf output: {text}"))
}

/// Median RTT (us) of `measure net client` back-to-back against an rtvirt server on `port`.
fn rtvirt_median_us(port: &str) -> f64 {
    let v = rtvirt_json(&[
        "measure",
        "net",
        "client",
        "--connect",
        &format!("127.0.0.1:{port}"),
        "--size",
        "64",
        "--arrivals",
        "back-to-back",
        "--duration",
        "1s",
        "--format",
        "json",
    ]);
    v["rtt_ns"]["p50"].as_f64().unwrap() / 1e3
}

/// Hold /dev/cpu_dma_latency at 0 while the file is open (needs root; None otherwise).
fn hold_dma_latency_zero() -> Option<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency").ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

#[test]
fn net_median_agrees_loosely_with_sockperf() {
    let _g = rtvirt_testkit::host_lock();
    rtvirt_testkit::require_tool!("sockperf");
    let _same_idle_state_for_both = hold_dma_latency_zero();
    let sp_port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let rv_port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let mut srv = Command::new("sockperf")
        .args(["sr", "-i", "127.0.0.1", "-p", &sp_port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rsrv = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["measure", "net", "server", "--listen", &format!("127.0.0.1:{rv_port}"), "--duration", "30s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // status lines (`listening on ...`) go to stderr
    std::io::BufReader::new(rsrv.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (mut sp, mut rv) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        sp.push(sockperf_median_us(&sp_port));
        rv.push(rtvirt_median_us(&rv_port));
    }
    for p in [&mut srv, &mut rsrv] {
        let _ = p.kill();
        let _ = p.wait();
    }
    let ((sp_lo, sp_hi), (rv_lo, rv_hi)) = (lo_hi(&sp), lo_hi(&rv));
    assert!(
        rv_lo < sp_hi * 2.0 + 10.0 && sp_lo < rv_hi * 2.0 + 10.0,
        "median RTT: rtvirt {rv:?} us vs sockperf {sp:?} us"
    );
}

fn lo_hi(v: &[f64]) -> (f64, f64) {
    (v.iter().cloned().fold(f64::MAX, f64::min), v.iter().cloned().fold(0.0, f64::max))
}
