//! `rtvirt import` and `rtvirt report` on other tools' outputs, and `measure timer` with
//! cyclictest's options: the "done when", shortened (2 s runs). Real cyclictest and
//! real measurements: run under the host lock,
//!   flock /tmp/rtvirt-host.lock cargo test -p rtvirt --test import_cli

mod schema_support;
use std::path::Path;
use std::process::{Command, Stdio};

fn rtvirt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// `cyclictest -p 95 -i 200 -D 2 -h 400 > old.txt`, `rtvirt measure timer -p 95 -i 200 -D 2
/// --format json > new.json`, `rtvirt report old.txt new.json -o cmp.html`: both runs in one
/// report, the old one as the baseline, its tail (maximum) included.
#[test]
fn a_cyclictest_baseline_and_an_rtvirt_run_in_one_report() {
    rtvirt_testkit::require_root!();
    rtvirt_testkit::require_tool!("cyclictest");
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.txt");
    let status = Command::new("cyclictest")
        .args(["-p", "95", "-i", "200", "-D", "2", "-h", "400"])
        .stdout(std::fs::File::create(&old).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let new = dir.path().join("new.json");
    std::fs::write(&new, ok(&rtvirt(&["measure", "timer", "-p", "95", "-i", "200", "-D", "2", "--format", "json"])))
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&new).unwrap()).unwrap();
    assert_eq!(
        (v["interval_ns"].as_u64(), v["priority"].as_u64(), v["duration_ns"].as_u64()),
        (Some(200_000), Some(95), Some(2_000_000_000))
    );

    // import: the tool and its histogram, valid against the results schema
    let imported: serde_json::Value = serde_json::from_str(&ok(&rtvirt(&["import", old.to_str().unwrap()]))).unwrap();
    schema_support::assert_valid("results", &imported);
    assert_eq!(imported["environment"]["tool"], "cyclictest");
    let text = std::fs::read_to_string(&old).unwrap();
    let max_us: u64 = text
        .lines()
        .find(|l| l.starts_with("# Max Latencies:"))
        .unwrap()
        .split(':')
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(imported["latency_ns"]["max"].as_u64(), Some(max_us * 1000));

    let md = ok(&rtvirt(&["report", old.to_str().unwrap(), new.to_str().unwrap(), "-o", "-", "--format", "md"]));
    let rows: Vec<&str> =
        md.lines().filter(|l| l.starts_with("| old | timer") || l.starts_with("| new | timer")).collect();
    assert!(rows.len() >= 2 && rows[0].starts_with("| old"), "both runs, the cyclictest baseline first:\n{md}");
    let html = dir.path().join("cmp.html");
    ok(&rtvirt(&["report", old.to_str().unwrap(), new.to_str().unwrap(), "-o", html.to_str().unwrap()]));
    assert!(std::fs::read_to_string(&html).unwrap().contains("old.txt"));
}

/// cyclictest's habits: -h N prints a cyclictest histogram that `rtvirt import` reads back,
/// -a takes the stride form, -t cuts the CPU list, bare numbers are us (-i) and s (-D).
#[test]
fn measure_timer_speaks_cyclictest() {
    rtvirt_testkit::require_root!();
    let dir = tempfile::tempdir().unwrap();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stride = if cpus >= 2 { "0-1:1" } else { "0" };
    let hist = ok(&rtvirt(&[
        "measure", "timer", "-m", "-q", "-p", "95", "-i", "500", "-D", "1", "-a", stride, "-t", "1", "-h", "50",
    ]));
    assert!(hist.starts_with("# Histogram\n000000 "), "{hist}");
    assert_eq!(hist.lines().filter(|l| !l.starts_with('#')).count(), 50, "-h 50: fifty 1-us rows");
    let path = dir.path().join("rtvirt-hist.txt");
    std::fs::write(&path, &hist).unwrap();
    let back: serde_json::Value = serde_json::from_str(&ok(&rtvirt(&["import", path.to_str().unwrap()]))).unwrap();
    assert_eq!(back["cpus"].as_array().unwrap().len(), 1, "-t 1: one thread");
    assert_eq!(back["latency_ns"]["count"].as_u64(), Some(2000), "1 s every 500 us: every period, rows + overflows");
    // tables in microseconds with one decimal
    let table = ok(&rtvirt(&["measure", "timer", "-q", "-i", "1000", "-D", "0.3", "-a", "0"]));
    assert!(table.starts_with("timer latency (us)\n"), "{table}");
    let all = table.lines().find(|l| l.starts_with("all")).unwrap();
    assert!(
        all.split_whitespace()
            .skip(2)
            .all(|w| w.trim_end_matches('*').split_once('.').is_some_and(|(_, d)| d.len() == 1)),
        "{all}"
    );
    // errors of the habits: exit 2, the option named
    let out = rtvirt(&["measure", "timer", "-a", "0", "-t", "2", "-D", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--threads"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn import_writes_documents_and_arrays_and_refuses_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/samples");
    let (hist, rr) = (samples.join("rtla-timerlat-hist.txt"), samples.join("netperf-udp-rr-csv.txt"));
    let out = dir.path().join("all.json");
    ok(&rtvirt(&["import", hist.to_str().unwrap(), rr.to_str().unwrap(), "-o", out.to_str().unwrap()]));
    let all: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let docs = all.as_array().unwrap();
    let labels: Vec<&str> = docs.iter().map(|d| d["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["rtla-timerlat-hist: rtla-timerlat IRQ", "rtla-timerlat-hist: rtla-timerlat thread", "netperf-udp-rr-csv"]
    );
    for d in docs {
        schema_support::assert_valid("results", d);
    }
    // the array goes into a report as it is
    let md = ok(&rtvirt(&["report", out.to_str().unwrap(), "-o", "-", "--format", "md"]));
    assert!(md.contains("rtla-timerlat thread") && md.contains("Request/response round-trip time"), "{md}");
    // a truncated file: exit 2, file and line named
    let text = std::fs::read_to_string(&hist).unwrap();
    let cut = dir.path().join("cut.txt");
    std::fs::write(&cut, text.lines().take(20).collect::<Vec<_>>().join("\n")).unwrap();
    for command in ["import", "report"] {
        let out = rtvirt(&[command, cut.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cut.txt:line 21") && err.contains("expected the \"over:\" line"), "{command}: {err}");
    }
    let out = rtvirt(&["import", "--tool", "ping", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected one of: cyclictest"));
}
