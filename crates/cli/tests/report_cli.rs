//! `rtvirt report` as a user runs it: files in, report out, exit codes.

use std::path::PathBuf;
use std::process::Command;

fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures").join(name)
}

#[test]
fn writes_html_report_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let o = rtvirt()
        .arg("report")
        .arg(fixture("timer_idle.json"))
        .arg(fixture("plan.json"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("r.html"));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("data-chart=\"exceedance\"") && html.contains("data-chart=\"bandwidth\""));
}

#[test]
fn markdown_to_stdout() {
    let o = rtvirt()
        .args(["report", "--format", "md", "-o", "-", "--title", "T"])
        .arg(fixture("net_rtt.json"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(md.starts_with("# T\n") && md.contains("| result | kind |"), "{md}");
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.json");
    std::fs::write(&bad, "{\"schema\": \"rtvirt.results/v1\", \"kind\": 3}").unwrap();
    let out = dir.path().join("r.html");
    let o = rtvirt().arg("report").arg(&bad).arg("-o").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("broken.json") && err.contains("line 1"), "{err}");
    assert!(!out.exists(), "nothing written on failure");
    let o = rtvirt().arg("report").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "no files is a usage error");
}

/// `report r.json -o r.json` would overwrite its own input: refused before any work (also through
/// a link), the input untouched.
#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("r.json");
    std::fs::copy(fixture("net_rtt.json"), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    for out in [&input, &link] {
        let o = rtvirt().arg("report").arg(&input).arg("-o").arg(out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--output") && err.contains("is an input"), "{err}");
        assert_eq!(std::fs::read(&input).unwrap(), before);
    }
}

#[test]
fn labels_name_the_inputs_one_per_file() {
    let o = rtvirt()
        .args(["report", "--format", "md", "-o", "-", "--label", "before", "--label", "after"])
        .arg(fixture("timer_idle.json"))
        .arg(fixture("timer_load.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(md.contains("| before |") && md.contains("| after |"), "{md}");
    let o = rtvirt()
        .args(["report", "-o", "-", "--label", "one"])
        .arg(fixture("timer_idle.json"))
        .arg(fixture("timer_load.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--label") && err.contains("1 label(s) for 2 file(s)"), "{err}");
}

/// The README's example, file for file: each file `report` reads is made by a command before it.
#[test]
fn the_readme_example_names_files_its_commands_create() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], out: &str| {
        let o = rtvirt().args(args).current_dir(dir.path()).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::write(dir.path().join(out), o.stdout).unwrap();
    };
    run(&["plan", "--format", "json"], "plan.json");
    run(&["simulate", "--plan", "plan.json", "--duration", "2s", "--format", "json"], "sim.json");
    let o = rtvirt()
        .args(["report", "plan.json", "sim.json", "-o", "report.html"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("Verdict") && html.contains("simulated deadline misses"));
}

#[test]
fn adapted_reservations_are_drawn_against_demand_with_a_row_per_guest() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/adapt_shift.toml");
    let sim = rtvirt().arg("simulate").arg(&scenario).args(["--adapt", "--format", "json"]).output().unwrap();
    assert!(sim.status.success(), "{}", String::from_utf8_lossy(&sim.stderr));
    let results = dir.path().join("adapt.json");
    std::fs::write(&results, &sim.stdout).unwrap();
    let html = dir.path().join("r.html");
    let o = rtvirt().arg("report").arg(&results).arg("-o").arg(&html).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("data-chart=\"adaptation\""), "no adaptation chart");
    for series in ["codec reserved", "codec demand", "control reserved", "control demand"] {
        assert!(html.contains(series), "{series}");
    }
    let md = rtvirt().arg("report").arg(&results).args(["--format", "md", "-o", "-"]).output().unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| adapt\\_shift c") && l.contains(" / ")).collect();
    assert_eq!(rows.len(), 2, "{md}");
    // the shift makes each guest grow at least once
    assert!(rows.iter().all(|r| !r.contains("| 0 / ")), "{rows:?}");
    // a result without adapted reservations has no such section
    let plain =
        rtvirt().arg("report").arg(fixture("timer_idle.json")).args(["--format", "md", "-o", "-"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("Adapted reservations"));
}

#[test]
fn a_host_adapt_decision_log_alone_is_drawn_and_a_bad_line_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let reservation =
        |runtime: u64| format!(r#"{{"runtime_ns":{runtime},"deadline_ns":10000000,"period_ns":10000000}}"#);
    let log = dir.path().join("adapt.jsonl");
    let lines = [
        format!(r#"{{"time_ns":0,"guest":"g1","event":"start","new":{},"reason":"the plan"}}"#, reservation(2_000_000)),
        format!(
            r#"{{"time_ns":3000000000,"guest":"g1","event":"change","demand":0.4,"old":{},"new":{},"reason":"rose","source":"agent","change":"grow"}}"#,
            reservation(2_000_000),
            reservation(5_000_000)
        ),
        format!(
            r#"{{"time_ns":5000000000,"guest":"g1","event":"end","old":{},"reason":"end"}}"#,
            reservation(5_000_000)
        ),
    ];
    std::fs::write(&log, lines.join("\n")).unwrap();
    let o = rtvirt().args(["report", "--format", "md", "-o", "-", "--adapt-log"]).arg(&log).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8(o.stdout).unwrap();
    // 0.2 for 3 s, then 0.5 for 2 s: 0.32 on average
    assert!(
        md.contains("Reserved bandwidth over time: adapt")
            && md.contains("| adapt g1 | 0.200 | 0.320 | 0.500 | 1 / 0 / 0 | - |"),
        "{md}"
    );
    std::fs::write(&log, [lines[0].as_str(), r#"{"time_ns":1}"#].join("\n")).unwrap();
    let o = rtvirt().args(["report", "-o", "-", "--adapt-log"]).arg(&log).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("adapt.jsonl:line 2") && err.contains("missing field `guest`"), "{err}");
}
