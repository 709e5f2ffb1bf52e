//! Each importer on the output of the real tool, run here for a second or two: cyclictest
//! (histogram `-h`/`-H`, status lines, `--json`), cyclicdeadline, oslat, sockperf ping-pong and
//! under-load with `--full-log`, iperf3 `--json`. The imported numbers are checked against what
//! the tool itself printed. Run under the host lock (the tools set real-time priorities and
//! hold /dev/cpu_dma_latency):
//!   flock /tmp/rtvirt-host.lock cargo test -p rtvirt-import --test real_tools
//! A tool that is not installed (scripts/setup.sh installs them) skips its test with a message.

use rtvirt_import::{import_file, Tool};
use rtvirt_model::results::Results;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Run `tool args` in `dir` with stdout to `dir/out`; the path of that file.
fn run(dir: &Path, out: &str, tool: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(out);
    let file = std::fs::File::create(&path).unwrap();
    let status = Command::new(tool).args(args).current_dir(dir).stdout(file).stderr(Stdio::null()).status().unwrap();
    assert!(status.success(), "{tool} {args:?} failed: {status}");
    path
}

fn only(path: &Path, tool: Option<Tool>) -> Results {
    let mut docs = import_file(path, tool).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(docs.len(), 1);
    docs.remove(0)
}

/// The numbers of a `# Name: a b c` line of a cyclictest histogram.
fn hash_line(text: &str, name: &str) -> Vec<u64> {
    let line = text.lines().find(|l| l.starts_with(&format!("# {name}:"))).unwrap();
    line.split(':').nth(1).unwrap().split_whitespace().map(|w| w.parse().unwrap()).collect()
}

/// Cut `path` after `keep` of its lines into `name`; its path.
fn truncated(path: &Path, keep: usize, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(path).unwrap();
    let cut: Vec<&str> = text.lines().take(keep).collect();
    let out = path.with_file_name(name);
    std::fs::write(&out, cut.join("\n") + "\n").unwrap();
    out
}

#[test]
fn cyclictest_histograms_keep_every_sample_and_the_tools_own_statistics() {
    rtvirt_testkit::require_tool!("cyclictest");
    let dir = tempfile::tempdir().unwrap();
    for (flag, name) in [("-h", "h.txt"), ("-H", "hh.txt")] {
        let path = run(
            dir.path(),
            name,
            "cyclictest",
            &["-m", "-q", "-p", "95", "-i", "200", "-D", "1", "-t", "2", flag, "30"],
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let r = only(&path, None);
        let (totals, overflows, maxes) =
            (hash_line(&text, "Total"), hash_line(&text, "Histogram Overflows"), hash_line(&text, "Max Latencies"));
        assert_eq!(r.kind, "timer");
        assert_eq!(r.cpus.len(), 2, "{name}: one entry per thread");
        for (t, cpu) in r.cpus.iter().enumerate() {
            assert_eq!(cpu.latency_ns.count, totals[t] + overflows[t], "{name} thread {t}: rows + overflows");
            assert_eq!(cpu.latency_ns.max, maxes[t] * 1000, "{name} thread {t}: the tool's maximum, exact");
            let buckets = cpu.histogram_ns.as_ref().unwrap();
            assert_eq!(buckets.iter().map(|b| b.count).sum::<u64>(), cpu.latency_ns.count);
            assert!(buckets.iter().all(|b| b.value_ns % 1000 == 0 || b.value_ns == maxes[t] * 1000));
            if overflows[t] > 1 {
                assert!(buckets.iter().any(|b| b.value_ns == 30_000), "{name}: overflows kept at 30 us");
            }
        }
        let pooled = r.latency_ns.as_ref().unwrap();
        assert_eq!(pooled.count, r.cpus.iter().map(|c| c.latency_ns.count).sum::<u64>());
        assert_eq!(pooled.max, *maxes[..2].iter().max().unwrap() * 1000);
        assert_eq!(r.environment.as_ref().unwrap().tool.as_deref(), Some("cyclictest"));
        // cut inside the summary: the error names the file, the line after the last and what is missing
        let cut = truncated(&path, text.lines().position(|l| l.starts_with("# Avg")).unwrap(), &format!("cut-{name}"));
        let e = import_file(&cut, None).unwrap_err().to_string();
        assert!(
            e.contains(&format!("cut-{name}"))
                && e.contains("line ")
                && e.contains("expected the \"# Avg Latencies:\""),
            "{e}"
        );
        // a row cut in the middle
        let broken = text.replacen("000010 ", "000010 12x", 1);
        let bad = dir.path().join(format!("bad-{name}"));
        std::fs::write(&bad, broken).unwrap();
        let e = import_file(&bad, None).unwrap_err();
        assert_eq!(
            e.at.line_col.map(|l| l.0),
            Some(text.lines().position(|l| l.starts_with("000010")).unwrap() + 1),
            "{e}"
        );
    }
}

#[test]
fn cyclictest_json_keeps_version_command_line_kernel_and_cpus() {
    rtvirt_testkit::require_tool!("cyclictest");
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        "out.txt",
        "cyclictest",
        &["-m", "-q", "-p", "95", "-i", "200", "-D", "1", "-t", "2", "-a", "0-1", "-h", "25", "--json=ct.json"],
    );
    let path = dir.path().join("ct.json");
    let raw: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = only(&path, None);
    let env = r.environment.as_ref().unwrap();
    assert_eq!(env.tool_version.as_deref(), raw["rt_test_version:"].as_str().or(raw["rt_test_version"].as_str()));
    assert!(env.tool_command_line.as_deref().unwrap().contains("-i 200"));
    assert_eq!(env.kernel.as_deref(), raw["sysinfo"]["release"].as_str());
    let timer = r.timer.as_ref().unwrap();
    assert_eq!((timer.interval_ns, timer.priority, timer.policy.as_deref()), (Some(200_000), Some(95), Some("fifo")));
    assert_eq!(r.duration_ns, 1_000_000_000);
    for (i, cpu) in r.cpus.iter().enumerate() {
        let t = &raw["thread"][i.to_string()];
        assert_eq!(u64::from(cpu.cpu), t["cpu"].as_u64().unwrap());
        assert_eq!(cpu.latency_ns.count, t["cycles"].as_u64().unwrap(), "histogram + overflows = cycles");
        assert_eq!(cpu.latency_ns.max, t["max"].as_u64().unwrap() * 1000);
    }
    let cut = dir.path().join("cut.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let e = import_file(&cut, None).unwrap_err().to_string();
    assert!(e.contains("cut.json:line ") && e.contains("not cyclictest --json output"), "{e}");
}

#[test]
fn cyclictest_status_lines_and_cyclicdeadline_give_min_mean_max() {
    rtvirt_testkit::require_tool!("cyclictest");
    rtvirt_testkit::require_tool!("cyclicdeadline");
    let dir = tempfile::tempdir().unwrap();
    let path = run(dir.path(), "ct.txt", "cyclictest", &["-m", "-q", "-p", "90", "-i", "500", "-D", "1", "-t", "1"]);
    let r = only(&path, Some(Tool::Cyclictest));
    let line = std::fs::read_to_string(&path).unwrap();
    let max: u64 = line.split("Max:").nth(1).unwrap().trim().parse().unwrap();
    assert_eq!(r.latency_ns.as_ref().unwrap().max, max * 1000);
    assert_eq!(r.timer.as_ref().unwrap().interval_ns, Some(500_000));
    let path = run(dir.path(), "cd.txt", "cyclicdeadline", &["-D", "2", "-t", "1", "-i", "10000"]);
    let r = only(&path, None);
    let s = r.latency_ns.as_ref().unwrap();
    assert!(s.count > 0 && s.min <= s.max, "{s:?}");
    assert_eq!(r.timer.as_ref().unwrap().policy.as_deref(), Some("deadline"));
    assert_eq!(r.environment.as_ref().unwrap().tool.as_deref(), Some("cyclicdeadline"));
    assert_eq!(s.low_confidence.len(), 7, "no percentiles printed: all flagged");
}

#[test]
fn oslat_buckets_and_statistics() {
    rtvirt_testkit::require_tool!("oslat");
    let dir = tempfile::tempdir().unwrap();
    let path = run(dir.path(), "oslat.txt", "oslat", &["-D", "1", "-c", "0"]);
    let text = std::fs::read_to_string(&path).unwrap();
    let r = only(&path, None);
    assert_eq!(r.kind, "noise");
    let counts: u64 = text
        .lines()
        .filter_map(|l| l.split_once("(us):"))
        .map(|(_, c)| c.replace("(including overflows)", "").trim().parse::<u64>().unwrap())
        .sum();
    let s = r.latency_ns.as_ref().unwrap();
    assert_eq!(s.count, counts);
    let max: u64 =
        text.lines().find(|l| l.contains("Maximum:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(s.max, max * 1000);
    assert_eq!(
        r.environment.as_ref().unwrap().tool_version.as_deref(),
        text.lines().next().unwrap().strip_prefix("oslat V ")
    );
    let cut = truncated(&path, text.lines().position(|l| l.contains("Average:")).unwrap(), "cut.txt");
    let e = import_file(&cut, Some(Tool::Oslat)).unwrap_err().to_string();
    assert!(e.contains("cut.txt:line ") && e.contains("expected oslat's \"Average:\""), "{e}");
}

/// A sockperf server on a free loopback port for the test's life.
struct SockperfServer(std::process::Child, u16);

impl SockperfServer {
    fn start() -> SockperfServer {
        let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("sockperf")
            .args(["server", "-i", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        SockperfServer(child, port)
    }
}

impl Drop for SockperfServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sockperf_ping_pong_percentiles_and_under_load_full_log() {
    rtvirt_testkit::require_tool!("sockperf");
    let server = SockperfServer::start();
    let port = server.1.to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = run(dir.path(), "pp.txt", "sockperf", &["ping-pong", "-i", "127.0.0.1", "-p", &port, "-t", "1"]);
    let text = std::fs::read_to_string(&path).unwrap();
    let r = only(&path, None);
    let s = r.rtt_ns.as_ref().unwrap();
    let p50: f64 = text
        .lines()
        .find(|l| l.contains("percentile 50.000"))
        .unwrap()
        .rsplit('=')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(s.p50, (p50 * 2000.0).round() as u64, "half round trips doubled");
    assert_eq!(r.net.as_ref().unwrap().arrivals.as_deref(), Some("back-to-back"));
    assert!(r.environment.as_ref().unwrap().tool_version.is_some());
    let log = dir.path().join("full.csv");
    run(
        dir.path(),
        "ul.txt",
        "sockperf",
        &[
            "under-load",
            "-i",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "1",
            "--mps",
            "1000",
            "--full-log",
            log.to_str().unwrap(),
        ],
    );
    let r = only(&log, None);
    let s = r.rtt_ns.as_ref().unwrap();
    let packets = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()) && l.contains(','))
        .count();
    assert_eq!(s.count, packets as u64, "one round trip per logged packet");
    assert!(r.environment.as_ref().unwrap().tool_command_line.as_deref().unwrap().contains("--mps=1000"));
    assert_eq!(r.net.as_ref().unwrap().arrivals.as_deref(), Some("under-load 1000/s"));
    let cut = truncated(&path, text.lines().position(|l| l.contains("<MIN>")).unwrap(), "cut.txt");
    let e = import_file(&cut, None).unwrap_err().to_string();
    assert!(e.contains("cut.txt:line ") && e.contains("<MIN>"), "{e}");
}

#[test]
fn iperf3_json_throughput_and_errors() {
    rtvirt_testkit::require_tool!("iperf3");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let path = run(dir.path(), "ip.json", "iperf3", &["-c", "127.0.0.1", "-p", &port, "-t", "1", "--json"]);
    let _ = server.wait();
    let raw: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = only(&path, None);
    assert_eq!(r.flows[0].throughput_bps, raw["end"]["sum_received"]["bits_per_second"].as_f64());
    assert_eq!(r.environment.as_ref().unwrap().tool.as_deref(), Some("iperf3"));
    // a client with no server: iperf3 records the error, the import refuses the file
    let failed = dir.path().join("failed.json");
    let out = Command::new("iperf3").args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "--json"]).output().unwrap();
    std::fs::write(&failed, out.stdout).unwrap();
    let e = import_file(&failed, None).unwrap_err().to_string();
    assert!(e.contains("failed.json") && e.contains("iperf3 recorded an error"), "{e}");
}
