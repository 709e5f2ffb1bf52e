//! `rtvirt study` end to end on this host (as root, under the host lock): a small study of two
//! cells (the host as it is; a profile) x 3 runs x 2 s of `measure timer`. The profile is applied
//! during its cell and reverted after it (the kernel thread's scheduling read from /proc before,
//! during and after), the report of the index has box plots in Chromium's DOM, and a study
//! interrupted after its first cell leaves the host reverted and `--resume` runs only the rest.

mod schema_support;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

fn rtvirt() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtvirt"));
    c.env("RTVIRT_HOST", "ideal");
    c
}

/// The last CPU and the pid of its ksoftirqd thread.
fn ksoftirqd() -> (u32, u32) {
    let cpu = std::thread::available_parallelism().unwrap().get() as u32 - 1;
    let name = format!("ksoftirqd/{cpu}");
    let pid = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name))
        .expect("a ksoftirqd thread");
    (cpu, pid)
}

/// Policy and RT priority of a thread (fields 41 and 40 of /proc/PID/stat).
fn scheduling(pid: u32) -> (u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    (fields[38].parse().unwrap(), fields[37].parse().unwrap())
}

/// The study file and its profile (ksoftirqd of `cpu` at FIFO 2) in `dir`.
fn write_study(dir: &Path, cpu: u32) -> PathBuf {
    std::fs::write(
        dir.join("tuned.toml"),
        format!(
            "schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"ksoftirqd\"\ncpu = {cpu}\npolicy = \"fifo\"\n\
             priority = 2\n"
        ),
    )
    .unwrap();
    let study = dir.join("small.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"small\"\nrepeats = 3\nduration = \"2s\"\n\n[[configuration]]\nname = \"stock\"\n\n\
             [[configuration]]\nname = \"tuned\"\nprofile = \"tuned.toml\"\n\n[[measure]]\nname = \"timer\"\n\
             kind = \"timer\"\noptions = {{ cpus = \"{cpu}\", interval = \"1ms\" }}\n"
        ),
    )
    .unwrap();
    study
}

fn index(out: &Path) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).unwrap()).unwrap();
    schema_support::assert_valid("study", &v);
    v
}

fn ok_runs(cell: &serde_json::Value) -> usize {
    cell["runs"].as_array().unwrap().iter().filter(|r| r["ok"] == true).count()
}

/// Run the study to its end while sampling the ksoftirqd thread's scheduling every 20 ms.
fn run_sampling(study: &Path, out: &Path, pid: u32) -> (std::process::Output, Vec<(u32, u32)>) {
    let child = rtvirt()
        .args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let id = child.id();
    while Path::new(&format!("/proc/{id}/stat")).exists()
        && !std::fs::read_to_string(format!("/proc/{id}/stat")).unwrap_or_default().contains(") Z")
    {
        seen.push(scheduling(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), seen)
}

/// The `<svg ... data-chart="boxplot" ...>` fragments of a DOM that have drawn boxes.
fn drawn_box_plots(dom: &str) -> usize {
    dom.split("<svg").skip(1).filter(|f| f.contains("data-chart=\"boxplot\"") && f.contains("class=\"datum\"")).count()
}

fn chromium_dom(page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stderr(Stdio::null())
        .output()
        .expect("chromium (installed by scripts/setup.sh test)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_small_study_applies_and_reverts_its_profile_and_reports_box_plots() {
    rtvirt_testkit::require_root!();
    let _host = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    let (cpu, pid) = ksoftirqd();
    let study = write_study(dir.path(), cpu);
    let out = dir.path().join("out");
    let before = scheduling(pid);
    assert_ne!(before, (1, 2), "the test needs ksoftirqd/{cpu} not at FIFO 2 to begin with");
    let (done, seen) = run_sampling(&study, &out, pid);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(scheduling(pid), before, "the profile is reverted after its cell");
    let applied = seen.iter().position(|s| *s == (1, 2)).expect("ksoftirqd at FIFO 2 while the tuned cell ran");
    assert!(seen[..applied].iter().all(|s| *s == before), "not applied during the first cell");
    let v = index(&out);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(
        (cells[0]["id"].as_str(), cells[1]["id"].as_str()),
        (Some("stock/host/none/timer"), Some("tuned/host/none/timer"))
    );
    assert_eq!((cells[0]["host_changes"].as_u64(), cells[1]["host_changes"].as_u64()), (Some(0), Some(1)));
    for cell in cells {
        assert_eq!(ok_runs(cell), 3, "{cell}");
        for run in cell["runs"].as_array().unwrap() {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join(run["file"].as_str().unwrap())).unwrap())
                    .unwrap();
            schema_support::assert_valid("results", &r);
            assert_eq!(r["kind"], "timer");
        }
    }
    assert!(
        !out.join("journal/journal.jsonl").exists()
            || std::fs::read_to_string(out.join("journal/journal.jsonl")).unwrap().is_empty()
    );
    let page = dir.path().join("study.html");
    let report = rtvirt()
        .args(["report", out.join("index.json").to_str().unwrap(), "-o", page.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Mann-Whitney"), "the before/after comparison is in the report");
    let dom = chromium_dom(&page);
    assert!(dom.contains("timer latency p99"), "page did not load: {}", &dom[..dom.len().min(300)]);
    assert_eq!(drawn_box_plots(&dom), 3, "p50, p99 and max box plots, each with boxes drawn");
}

#[test]
fn an_interrupted_study_reverts_the_host_and_resume_runs_only_the_rest() {
    rtvirt_testkit::require_root!();
    let _host = rtvirt_testkit::host_lock();
    let dir = tempfile::tempdir().unwrap();
    let (cpu, pid) = ksoftirqd();
    let study = write_study(dir.path(), cpu);
    let out = dir.path().join("out");
    let before = scheduling(pid);
    let mut child = rtvirt()
        .args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first cell is complete (its index entry has 3 runs).
    let until = Instant::now() + Duration::from_secs(120);
    while !(out.join("index.json").exists() && ok_runs(&index(&out)["cells"][0]) == 3) {
        assert!(Instant::now() < until, "the first cell did not complete");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    rtvirt_signal(child.id());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(scheduling(pid), before, "the host is reverted after Ctrl-C");
    let v = index(&out);
    assert_eq!(v["interrupted"], true);
    assert!(ok_runs(&v["cells"][1]) < 3, "interrupted during the second cell");
    let first: Vec<(PathBuf, SystemTime)> = v["cells"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| out.join(r["file"].as_str().unwrap()))
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, m)
        })
        .collect();
    let resumed =
        rtvirt().args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap(), "--resume"]).output().unwrap();
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(!err.contains("stock/host/none/timer run"), "completed cell run again: {err}");
    for (path, modified) in first {
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), modified, "{} rewritten", path.display());
    }
    let v = index(&out);
    assert_eq!(v["interrupted"], false);
    assert!(v["cells"].as_array().unwrap().iter().all(|c| ok_runs(c) == 3), "{v}");
    assert_eq!(scheduling(pid), before);
    // The same directory without --resume is refused (exit 2), nothing run.
    let again = rtvirt().args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
}

/// SIGINT, as Ctrl-C sends it.
fn rtvirt_signal(pid: u32) {
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
}

/// The shipped studies are valid: every cell's command is accepted (`--dry-run` runs nothing).
#[test]
fn the_shipped_studies_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../studies");
    for (name, cells) in [("seeds3_tuning.toml", 16), ("seeds4_vm_latency.toml", 4)] {
        let out = rtvirt().args(["study", dir.join(name).to_str().unwrap(), "--dry-run"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.starts_with(&format!("{cells} cells")), "{name}: {text}");
    }
}

/// A bad study file is an error at its line, exit 2, before anything runs.
#[test]
fn bad_study_files_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("options = { interval = \"soon\" }", "measure[0].options", "--interval"),
        ("options = { bogus = 1 }", "measure[0].options", "--bogus"),
        ("options = { duration = \"1s\" }", "measure[0].options.duration", "set by the study"),
    ];
    for (options, field, words) in cases {
        let study = dir.path().join("bad.toml");
        std::fs::write(
            &study,
            format!("name = \"bad\"\nrepeats = 1\nduration = \"1s\"\n[[measure]]\nname = \"t\"\nkind = \"timer\"\n{options}\n"),
        )
        .unwrap();
        let out = dir.path().join("out");
        let o = rtvirt().args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("bad.toml:line 7") && err.contains(field) && err.contains(words), "{options}: {err}");
        assert!(!out.exists(), "nothing written for a bad study");
    }
}
