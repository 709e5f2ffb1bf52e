//! `rtvirt tail` and `rtvirt gate` end to end on files: a CSV of a known light tail (10 us +
//! exponential of mean 2 us, 600,000 samples = 10 minutes at 1 kHz; true 12 h maximum 45.2 us),
//! the same drifting by 50%, results with a histogram and interval report lines, and bad inputs
//! (exit 2, the place named). JSON outputs validate against docs/schema/{tail,gate}.schema.json.

mod host_support;
mod schema_support;

use host_support::{rtvirt, run, text, write};
use std::path::{Path, PathBuf};

/// SplitMix64 uniforms in (0, 1): the test's own generator, fixed seed.
fn uniforms(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// `n` samples of 10 us + Exp(2 us), the i-th scaled by `1 + drift * i / n`.
fn light(seed: u64, n: usize, drift: f64) -> Vec<u64> {
    let mut u = uniforms(seed);
    (0..n).map(|i| ((10_000.0 - 2000.0 * u().ln()) * (1.0 + drift * i as f64 / n as f64)).round() as u64).collect()
}

fn csv(dir: &Path, name: &str, values: &[u64]) -> PathBuf {
    let mut body = String::from("latency_ns\n");
    for v in values {
        body.push_str(&v.to_string());
        body.push('\n');
    }
    write(dir, name, &body)
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

#[test]
fn tail_of_a_known_light_tail_gives_levels_that_contain_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let file = csv(dir.path(), "light.csv", &light(1, 600_000, 0.0));
    let o = run(rtvirt(&["tail", file.to_str().unwrap(), "--horizon", "1h", "--horizon", "12h", "--format", "json"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = json(&o);
    schema_support::assert_valid("tail", &report);
    assert_eq!(report["applicable"], true, "{report}");
    assert_eq!(report["duration_ns"], 600_000_000_000u64, "1 kHz by default");
    let twelve = &report["return_levels"][1];
    assert_eq!(twelve["horizon_ns"], 43_200_000_000_000u64);
    let truth = 10_000.0 + 2000.0 * (43.2e6f64).ln();
    assert!(twelve["ci_low_ns"].as_f64().unwrap() <= truth && truth <= twelve["ci_high_ns"].as_f64().unwrap());
    // The table for people names the fit, the tests and the levels.
    let o = run(rtvirt(&["tail", file.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for word in ["generalised Pareto", "goodness_of_fit", "independence", "stationarity_trend", "12h", "95%"] {
        assert!(out.contains(word), "{word} missing:\n{out}");
    }
}

#[test]
fn gate_passes_fails_and_cannot_tell_with_exit_codes_0_1_3() {
    let dir = tempfile::tempdir().unwrap();
    let file = csv(dir.path(), "light.csv", &light(2, 600_000, 0.0));
    let f = file.to_str().unwrap();
    let gate = |max: &str| run(rtvirt(&["gate", f, "--max", max, "--horizon", "12h", "--format", "json"]));
    let above = gate("60us");
    assert_eq!(above.status.code(), Some(0), "{}", text(&above));
    schema_support::assert_valid("gate", &json(&above));
    let below = gate("40us");
    assert_eq!(below.status.code(), Some(1), "{}", text(&below));
    assert_eq!(json(&below)["verdict"], "fail");
    let close = gate("45us");
    assert_eq!(close.status.code(), Some(3), "{}", text(&close));
    let report = json(&close);
    assert!(report["needed_duration_ns"].as_u64().unwrap() > 600_000_000_000, "{report}");
    // The table says so in words, with the length that would decide.
    let o = run(rtvirt(&["gate", f, "--max", "45us", "--horizon", "12h"]));
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("INCONCLUSIVE") && out.contains("would likely decide"), "{out}");
}

#[test]
fn a_drifting_level_is_refused_and_gate_answers_3() {
    let dir = tempfile::tempdir().unwrap();
    let file = csv(dir.path(), "drift.csv", &light(3, 600_000, 0.5));
    let o = run(rtvirt(&["tail", file.to_str().unwrap(), "--format", "json"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = json(&o);
    assert_eq!(report["applicable"], false);
    assert_eq!(report["return_levels"].as_array().unwrap().len(), 0);
    let o = run(rtvirt(&["gate", file.to_str().unwrap(), "--max", "200us", "--horizon", "12h"]));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("does not apply"), "{}", text(&o));
}

/// A `measure timer --interval-report 1s --format json` file: interval lines (one entry per
/// CPU), then the results with the run's histogram.
#[test]
fn results_with_a_histogram_and_interval_lines_are_read_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let values = light(4, 100_000, 0.0);
    let mut lines = String::new();
    for (i, chunk) in values.chunks(1000).enumerate() {
        let max = chunk.iter().max().unwrap();
        lines.push_str(&format!(
            "{{\"type\":\"interval\",\"interval\":{i},\"t_ns\":{},\"cpus\":[{{\"cpu\":1,\"count\":1000,\"max_ns\":{max}}}]}}\n",
            (i + 1) * 1_000_000_000
        ));
    }
    let mut hist = std::collections::BTreeMap::new();
    values.iter().for_each(|v| *hist.entry(*v).or_insert(0u64) += 1);
    let buckets: Vec<String> = hist.iter().map(|(v, c)| format!("[{v},{c}]")).collect();
    lines.push_str(&format!(
        "{{\"schema\":\"rtvirt.results/v1\",\"kind\":\"timer\",\"duration_ns\":100000000000,\"histogram_ns\":[{}]}}\n",
        buckets.join(",")
    ));
    let file = write(dir.path(), "run.json", &lines);
    let o = run(rtvirt(&["tail", file.to_str().unwrap(), "--format", "json"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report = json(&o);
    schema_support::assert_valid("tail", &report);
    assert_eq!(report["input"], "histogram+blocks");
    assert_eq!(report["samples"], 100_000);
    assert_eq!(report["applicable"], true, "{report}");
    // Without the interval lines: no time order, refused with the reason.
    let last = lines.lines().last().unwrap();
    let file = write(dir.path(), "hist.json", last);
    let report = json(&run(rtvirt(&["tail", file.to_str().unwrap(), "--format", "json"])));
    assert_eq!(report["applicable"], false);
    assert!(report["reasons"].to_string().contains("no time order"), "{report}");
}

#[test]
fn bad_inputs_exit_2_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.csv", "latency_ns\n12000\n12x00\n");
    let o = run(rtvirt(&["tail", bad.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.csv:line 3, column 1") && err.contains("latency_ns") && err.contains("12x00"), "{err}");
    let header = write(dir.path(), "header.csv", "t_ns,lat\n0,5\n");
    let o = run(rtvirt(&["gate", header.to_str().unwrap(), "--max", "1ms", "--horizon", "1h"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("latency_ns"), "{}", text(&o));
    let tasks = write(dir.path(), "tasks.json", r#"{"schema":"rtvirt.results/v1","kind":"tasks","duration_ns":1000}"#);
    let o = run(rtvirt(&["tail", tasks.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tasks.json") && err.contains("histogram_ns"), "{err}");
    let o = run(rtvirt(&["gate", bad.to_str().unwrap(), "--max", "1ms", "--horizon", "1h", "--confidence", "95"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(rtvirt(&["tail", dir.path().join("missing.csv").to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// `measure timer --until-confident` on this host (real threads; one such run at a time): a
/// limit every sample exceeds decides at the first interval, long before the cap; the results
/// carry the intervals, so `rtvirt tail` reads them in time order.
#[test]
fn until_confident_stops_once_decided_above_and_says_why() {
    rtvirt_testkit::require_root!();
    let _serial = rtvirt_testkit::host_lock();
    let args = ["measure", "timer", "--cpus", "1", "--duration", "60s", "--until-confident", "--max", "1ns"];
    let o = run(rtvirt(&[&args[..], &["--horizon", "1h", "--format", "json"]].concat()));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stopped: decided above the limit") && err.contains("already"), "{err}");
    let results = json(&o);
    schema_support::assert_valid("results", &results);
    let duration = results["duration_ns"].as_u64().unwrap();
    assert!(duration < 60_000_000_000, "stopped at the first check, not at the cap: {duration}");
    assert!(!results["intervals"].as_array().unwrap().is_empty(), "{results}");
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "run.json", &String::from_utf8_lossy(&o.stdout));
    let tail = json(&run(rtvirt(&["tail", file.to_str().unwrap(), "--format", "json"])));
    assert_eq!(tail["input"], "histogram+blocks", "{tail}");
}

/// Too few samples for a fit (200 at 10 ms): the run goes to the cap, undecided (exit 3), and
/// says how long a measurement would need.
#[test]
fn until_confident_runs_to_the_cap_when_undecided() {
    rtvirt_testkit::require_root!();
    let _serial = rtvirt_testkit::host_lock();
    let args = ["measure", "timer", "--cpus", "1", "--interval", "10ms", "--duration", "2s", "--until-confident"];
    let o = run(rtvirt(&[&args[..], &["--max", "1s", "--horizon", "1h"]].concat()));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("2s: check 1 of at most 1") && err.contains("stopped: cap reached"), "{err}");
    assert!(err.contains("would likely decide"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("timer latency (us)"), "{}", text(&o));
}

#[test]
fn until_confident_needs_its_limit_and_the_host() {
    for (args, name) in [
        (&["--until-confident", "--horizon", "1h"][..], "--max"),
        (&["--max", "40us"][..], "--until-confident"),
        (&["--until-confident", "--max", "40us", "--horizon", "1h", "--confidence", "2"][..], "--confidence"),
        (&["--until-confident", "--max", "40us", "--horizon", "1h", "--in", "vm"][..], "--until-confident"),
    ] {
        let o = run(rtvirt(&[&["measure", "timer", "--duration", "1s"][..], args].concat()));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(name), "{args:?}: {}", text(&o));
    }
}
