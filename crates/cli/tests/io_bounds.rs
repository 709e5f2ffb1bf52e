//! `rtvirt import`, `export` and `report` on hostile inputs (issue 36, items 4, 5 and 14-17):
//! memory bounded by the input (peak RSS of the real binary under `/usr/bin/time -v`), numbers
//! a result cannot hold refused at import with their line, interval lines without their
//! document refused by export as by report, and CSV cells that a spreadsheet would run as
//! formulas neutralised.

mod rss_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

/// Run rtvirt under `/usr/bin/time -v`: its output and its peak resident set size in MiB.
fn rtvirt_rss(args: &[&str]) -> (Output, u64) {
    let (out, kib) = rss_support::rtvirt_peak_kib(args);
    (out, kib / 1024)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Exit 2 with every one of `needles` in the error.
fn refused(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in: {err}");
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const COLUMNS: usize = 1000;
/// One sample at 10^15 us per column (a value near 2^60 ns).
const FAR_US: u64 = 1_000_000_000_000_000;

fn rtla_far(columns: usize) -> String {
    let names: Vec<String> = (0..columns).map(|c| format!("IRQ-{c:03}")).collect();
    let row = |v: u64| vec![v.to_string(); columns].join(" ");
    format!(
        "# RTLA timerlat histogram\n# Time unit is microseconds (us)\nIndex {}\n{FAR_US} {}\nover: {}\ncount: {}\n\
         min: {}\navg: {}\nmax: {}\n",
        names.join(" "),
        row(1),
        row(0),
        row(1),
        row(FAR_US),
        row(FAR_US),
        row(FAR_US)
    )
}

fn oslat_far(columns: usize) -> String {
    let row = |v: &str| vec![v; columns].join(" ");
    let cores: Vec<String> = (0..columns).map(|c| c.to_string()).collect();
    let far = FAR_US.to_string();
    format!(
        "oslat V 2.60\nCore: {}\n{FAR_US} (us): {}\nMinimum: {} (us)\nAverage: {} (us)\nMaximum: {} (us)\n\
         Duration: 10.0 (sec)\n",
        cores.join(" "),
        row("1"),
        row(&far),
        row(&far),
        row(&far)
    )
}

fn cyclictest_json_far(columns: usize) -> String {
    let threads: Vec<String> = (0..columns)
        .map(|c| {
            format!(
                r#""{c}": {{"histogram": {{"{FAR_US}": 1}}, "cycles": 1, "min": {FAR_US}, "max": {FAR_US}, "avg": {FAR_US}.0, "cpu": {c}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"file_version": 1, "cmdline:": "cyclictest -q -h 400", "rt_test_version:": "2.6", "thread": {{{}}}}}"#,
        threads.join(", ")
    )
}

/// Item 4: one sample far out per column cost a dense histogram per column (~400 KiB each,
/// 2.3-2.5 GB for 3,000 columns); the columns keep their buckets only now.
#[test]
fn import_of_one_far_sample_per_column_is_bounded_by_the_input() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("rtla.txt", rtla_far(COLUMNS)),
        ("oslat.txt", oslat_far(COLUMNS)),
        ("cyclictest.json", cyclictest_json_far(COLUMNS)),
    ] {
        let input = write(dir.path(), name, &text);
        let output = dir.path().join(format!("{name}.json"));
        let (out, mib) = rtvirt_rss(&["import", s(&input), "-o", s(&output)]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert!(mib < 150, "{name}: {} KB in, {mib} MiB peak RSS", text.len() / 1000);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
        assert_eq!(v["cpus"].as_array().map(Vec::len), Some(COLUMNS), "{name}");
        assert_eq!(v["latency_ns"]["max"].as_u64(), Some(FAR_US * 1000), "{name}");
    }
}

/// A results document with an unknown field of `mib` MiB (an array of zeros, the costliest
/// JSON per byte to keep as a tree), `doc` in a JSON array when `array`.
fn with_unknown_field(mib: usize, array: bool) -> String {
    let zeros = "0,".repeat(mib << 19);
    let doc = format!(
        r#"{{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1000,"from_the_future":[{zeros}0],"latency_ns":{{"count":1,"min":5,"mean":5.0,"sd":0.0,"p50":5,"p75":5,"p90":5,"p95":5,"p99":5,"p999":5,"p9999":5,"max":5}}}}"#
    );
    if array {
        format!("[{doc}]")
    } else {
        doc
    }
}

/// Item 5: export and report skip a field they do not know as they read it: peak RSS at most
/// twice the input plus 100 MiB (the input is read whole once; 32 MiB of an unknown array cost
/// ~1 GB before).
#[test]
fn export_and_report_skip_unknown_fields_in_memory_proportional_to_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let mib = 32;
    for array in [false, true] {
        let input = write(dir.path(), "big.json", &with_unknown_field(mib, array));
        let csv = dir.path().join("latency.csv");
        let (out, rss) = rtvirt_rss(&["export", s(&input), "--to", "csv", "--table", "latency", "-o", s(&csv)]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(rss < 2 * mib as u64 + 100, "export (array: {array}): {mib} MiB in, {rss} MiB peak RSS");
        assert!(std::fs::read_to_string(&csv).unwrap().lines().count() >= 2);
        let html = dir.path().join("r.html");
        let (out, rss) = rtvirt_rss(&["report", s(&input), "-o", s(&html)]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(rss < 2 * mib as u64 + 100, "report (array: {array}): {mib} MiB in, {rss} MiB peak RSS");
    }
}

/// Item 5: a study index whose runs all name one results file reads it once (each run kept
/// its own copy: 3.4 GB for 200,000 runs).
#[test]
fn a_study_report_reads_a_file_named_by_many_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/timer_load.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    doc["from_the_future"] = serde_json::json!(vec![0; 8000]);
    write(dir.path(), "run.json", &doc.to_string());
    let runs: Vec<serde_json::Value> =
        (0..20_000).map(|r| serde_json::json!({"repeat": r, "file": "run.json", "ok": true, "wall_ns": 1})).collect();
    let index = serde_json::json!({
        "schema": "rtvirt.study/v1", "name": "many", "study_file": "s.toml", "repeats": 20_000,
        "run_duration_ns": 1, "order": "as listed",
        "cells": [{"id": "c/host/none/timer", "configuration": "c", "place": "host", "load": "none",
                   "measurement": "timer", "kind": "timer", "command": ["measure", "timer"], "runs": runs}]
    });
    let index = write(dir.path(), "index.json", &index.to_string());
    let (out, rss) = rtvirt_rss(&["report", s(&index), "-o", s(&dir.path().join("r.md")), "--format", "md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(rss < 150, "20,000 runs of one file: {rss} MiB peak RSS");
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(md.contains("20000 of 20000 runs completed"), "{md}");
}

const DOC: &str = r#"{"schema":"rtvirt.results/v1","kind":"timer","duration_ns":1000}"#;
const LINE: &str = r#"{"type":"interval","interval":0,"cpus":[{"cpu":0,"count":3,"max_ns":5}]}"#;

/// Item 14: interval lines with no document after them: export refused them as report does
/// (it wrote 0 rows and exited 0).
#[test]
fn export_refuses_interval_lines_without_their_document_as_report_does() {
    let dir = tempfile::tempdir().unwrap();
    let after = write(dir.path(), "after.json", &format!("{LINE}\n{DOC}\n{LINE}\n"));
    let alone = write(dir.path(), "alone.json", &format!("{LINE}\n{LINE}\n"));
    for (file, line, what) in [(&after, "line 3", "after the last document"), (&alone, "line 1", "no results document")]
    {
        let out = rtvirt(&["export", s(file), "--to", "csv", "--table", "intervals"]);
        refused(&out, &[s(file), line, what]);
        let out = rtvirt(&["report", s(file), "-o", "-"]);
        assert_eq!(out.status.code(), Some(2), "report {}: {}", file.display(), stderr(&out));
    }
    // the lines before their document still read
    let before = write(dir.path(), "before.json", &format!("{LINE}\n{LINE}\n{DOC}\n"));
    let csv = ok(&rtvirt(&["export", s(&before), "--to", "csv", "--table", "intervals"]));
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// Item 15: an rtla histogram without columns panicked `import` (exit 101) and gave `report` an
/// empty report.
#[test]
fn an_rtla_histogram_without_columns_is_refused_by_import_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let text = "# RTLA timerlat histogram\n# Time unit is microseconds (us)\nIndex\nover:\ncount:\nmin:\navg:\nmax:\n";
    let file = write(dir.path(), "empty.txt", text);
    refused(&rtvirt(&["import", s(&file)]), &["empty.txt", "line 3", "no columns"]);
    refused(&rtvirt(&["report", s(&file), "-o", "-"]), &["empty.txt", "line 3", "no columns"]);
}

/// Item 16: numbers no result can hold are refused at import with their line (they became
/// NaN or infinite statistics that report and export then refused, or wrapped around).
#[test]
fn import_refuses_numbers_a_result_cannot_hold_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let sockperf = |avg: &str| {
        format!(
            "sockperf: == version #3.10 ==\nsockperf: [Total Run] RunTime=10.000 sec; Warm up time=400 msec; \
             SentMessages=100; ReceivedMessages=99\nsockperf: ====> avg-latency={avg} (std-dev=1.0)\n\
             sockperf: Total 99 observations; each percentile contains 0.99 observations\n\
             sockperf: ---> <MAX> observation =   20.0\nsockperf: ---> percentile 99.00 =   15.0\n\
             sockperf: ---> <MIN> observation =    5.0\n"
        )
    };
    let netperf_rr = |sd: &str| {
        format!(
            "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 () port 0 AF_INET to localhost () port 0 AF_INET\n\
             Minimum Latency Microseconds,Mean Latency Microseconds,Stddev Latency Microseconds,Transaction Rate Tran/s\n\
             10,20.5,{sd},48000\n"
        )
    };
    let netperf_stream = "MIGRATED TCP STREAM TEST from 0.0.0.0 () port 0 AF_INET to localhost () port 0 AF_INET\n\
         Throughput,Throughput Units,Elapsed Time (sec)\n-100.5,10^6bits/s,10.0\n";
    let oslat = |avg: &str| {
        format!(
            "oslat V 2.60\nCore: 0\n001 (us): 10\n002 (us): 5 (including overflows)\nMinimum: 1 (us)\n\
             Average: {avg} (us)\nMaximum: 3 (us)\nDuration: 10.0 (sec)\n"
        )
    };
    let cyclictest = "# /dev/cpu_dma_latency set to 0us\n\
         T: 0 ( 1234) P:95 I:18446744073709551615 C:   1000 Min:      2 Act:    3 Avg:    3 Max:      9\n";
    let cases: Vec<(&str, String, &str)> = vec![
        ("sockperf-nan.txt", sockperf("NaN"), "line 3"),
        ("sockperf-inf.txt", sockperf("inf"), "line 3"),
        ("sockperf-1e308.txt", sockperf("1e308"), "line 3"),
        ("netperf-sd.txt", netperf_rr("NaN"), "line 3"),
        ("netperf-neg.txt", netperf_stream.to_string(), "line 3"),
        ("oslat-avg.txt", oslat("1e308"), "line 6"),
        ("cyclictest-interval.txt", cyclictest.to_string(), "line 2"),
    ];
    for (name, text, line) in &cases {
        let file = write(dir.path(), name, text);
        let out = rtvirt(&["import", s(&file)]);
        refused(&out, &[name, line]);
    }
    // what is in range still imports, and report and export read the result back
    let file = write(dir.path(), "sockperf-ok.txt", &sockperf("12.5"));
    let json = write(dir.path(), "ok.json", &ok(&rtvirt(&["import", s(&file)])));
    ok(&rtvirt(&["report", s(&json), "-o", "-", "--format", "md"]));
    ok(&rtvirt(&["export", s(&json), "--to", "csv", "--table", "latency"]));
}

/// Item 17: a text cell starting with = + - @ TAB or CR gets a leading ' (OWASP); numeric
/// columns keep their numbers, negative ones too.
#[test]
fn export_csv_neutralises_formulas_in_text_cells() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "@SUM(1,2)", "-2+3", "\tx", "\rx", "ok"];
    let tasks: Vec<serde_json::Value> = names
        .iter()
        .map(|n| {
            let s = serde_json::json!({"count":1,"min":1,"mean":1.0,"sd":0.0,"p50":1,"p75":1,"p90":1,"p95":1,"p99":1,"p999":1,"p9999":1,"max":1});
            serde_json::json!({"guest": n, "name": n, "jobs": 1, "misses": 0, "dsr": 1.0, "response_ns": s})
        })
        .collect();
    let doc = serde_json::json!({"schema":"rtvirt.results/v1","kind":"simulation","duration_ns":1,
        "label":"=1+1","rho":-0.5,"tasks":tasks});
    let file = write(dir.path(), "f.json", &doc.to_string());
    let csv = ok(&rtvirt(&["export", s(&file), "--to", "csv", "--table", "tasks"]));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name} in {header:?}"));
    for (row, n) in reader.records().zip(names) {
        let row = row.unwrap();
        let shown = if n == "ok" { n.to_string() } else { format!("'{n}") };
        assert_eq!((&row[col("guest")], &row[col("task")]), (shown.as_str(), shown.as_str()), "{csv}");
        assert_eq!(&row[col("scenario")], "'=1+1");
        assert_eq!(&row[col("rho")], "-0.5", "a number stays a number");
    }
}
