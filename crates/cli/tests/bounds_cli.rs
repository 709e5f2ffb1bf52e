//! Bounded memory and no lost data for inputs that ask for huge or duplicate work (issue 36,
//! items 6, 7, 9, 12): each is refused with exit 2 at its place, before any allocation sized by
//! it. Memory is read from `/usr/bin/time -v` ("Maximum resident set size") of the real binary.

mod rss_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Peak RSS the refusals below stay under (the bugs used 2.7 to 17 GB).
const BOUND_KIB: u64 = 200 * 1024;

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run rtvirt under `/usr/bin/time -v`: its output and its peak resident set in KiB.
fn measured(args: &[&str]) -> (Output, u64) {
    rss_support::rtvirt_peak_kib(args)
}

/// `args` exits 2 within [`BOUND_KIB`] and its stderr holds each of `parts`.
fn refused(args: &[&str], parts: &[&str]) {
    let (o, kib) = measured(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    for part in parts {
        assert!(e.contains(part), "{args:?}: expected {part:?} in {e}");
    }
    assert!(kib < BOUND_KIB, "{args:?}: peak RSS {kib} KiB");
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `count` inline tables `{ name = "<prefix>N"<extra> }`.
fn tables(prefix: &str, count: usize, extra: &str) -> String {
    let items: Vec<String> = (0..count).map(|i| format!("{{name=\"{prefix}{i}\"{extra}}}")).collect();
    format!("[{}]", items.join(","))
}

#[test]
fn a_study_whose_run_count_overflows_is_refused_before_its_cells_are_made() {
    let dir = tempfile::tempdir().unwrap();
    // 2048^3 cells x 2^31 repeats = 2^64 runs: 0 in wrapping u64 arithmetic
    let study = write(
        dir.path(),
        "huge.toml",
        &format!(
            "name = \"huge\"\nrepeats = 2147483648\nduration = \"1s\"\nconfiguration = {}\nload = {}\nmeasure = {}\n",
            tables("c", 2048, ""),
            tables("l", 2048, ""),
            tables("m", 2048, ",kind=\"timer\"")
        ),
    );
    refused(&["study", s(&study), "--dry-run"], &["huge.toml:line 2", "repeats", "at most 100000"]);
    // the issue's own file: 131,072 places and 65,536 guest kernels
    let places = vec!["\"vm\""; 131_072].join(",");
    let kernels = vec!["\"rt\""; 65_536].join(",");
    let study = write(
        dir.path(),
        "places.toml",
        &format!(
            "name = \"places\"\nrepeats = 2147483648\nduration = \"1s\"\nwhere = [{places}]\n\
             guest_kernels = [{kernels}]\n[[measure]]\nname = \"t\"\nkind = \"timer\"\n"
        ),
    );
    refused(&["study", s(&study), "--dry-run"], &["places.toml:line 4", "where[1]", "listed twice"]);
}

const SMALL_STUDY: &str = "name = \"small\"\nrepeats = 1\nduration = \"1s\"\nwhere = [\"host\", \"container\"]\n\
                           [[measure]]\nname = \"t\"\nkind = \"timer\"\n";

#[test]
fn repeats_on_the_command_line_keep_the_run_limit() {
    let dir = tempfile::tempdir().unwrap();
    let study = write(dir.path(), "small.toml", SMALL_STUDY);
    for repeats in ["50001", "4294967295", "0"] {
        refused(&["study", s(&study), "--dry-run", "--repeats", repeats], &["--repeats", repeats]);
    }
    let (o, _) = measured(&["study", s(&study), "--dry-run", "--repeats", "50000"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("2 cells x 50000 runs"), "{}", text(&o));
}

#[test]
fn a_place_or_guest_kernel_listed_twice_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("where = [\"host\", \"container\"]", "where = [\"host\", \"container\", \"host\"]", "where[2]", "\"host\""),
        (
            "where = [\"host\", \"container\"]",
            "where = [\"vm\"]\nguest_kernels = [\"rt\", \"nrt\", \"rt\"]",
            "guest_kernels[2]",
            "\"rt\"",
        ),
    ];
    for (from, to, field, name) in cases {
        let study = write(dir.path(), "dup.toml", &SMALL_STUDY.replace(from, to));
        let out = dir.path().join("out");
        refused(&["study", s(&study), "--out", s(&out)], &["dup.toml:line", field, name, "listed twice"]);
        assert!(!out.exists(), "{field}: nothing run, nothing written");
    }
}

#[test]
fn libvirt_domains_with_huge_vcpu_or_iothread_counts_are_refused_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(
        dir.path(),
        "s.toml",
        "[host]\ncores = 2\n[[guest]]\nname = \"vm1\"\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n\
         [[guest.task]]\nname = \"t\"\nperiod = \"50ms\"\nwcet = \"1ms\"\n",
    );
    let out = dir.path().join("out");
    let cases = [
        ("<vcpu>4294967295</vcpu>\n", "line 3", "<vcpu>4294967295</vcpu>: expected the number of vCPUs, 1 to 4096"),
        ("<vcpu>4097</vcpu>\n", "line 3", "1 to 4096"),
        ("<iothreads>4294967295</iothreads>\n", "line 3", "expected the number of I/O threads, 1 to 4096"),
    ];
    for (element, line, words) in cases {
        let domain =
            write(dir.path(), "vm1.xml", &format!("<domain type='kvm'>\n  <name>vm1</name>\n  {element}</domain>\n"));
        let args = ["plan", s(&scenario), "--emit", "libvirt", "--libvirt-domain", s(&domain), "--output-dir", s(&out)];
        refused(&args, &["vm1.xml", line, words]);
        assert!(!out.exists(), "{element}: nothing written");
    }
    let ids: String = (1..=4097).map(|i| format!("<iothread id='{i}'/>")).collect();
    let domain = write(
        dir.path(),
        "vm1.xml",
        &format!("<domain type='kvm'>\n  <name>vm1</name>\n  <iothreadids>\n{ids}\n</iothreadids>\n</domain>\n"),
    );
    let args = ["plan", s(&scenario), "--emit", "libvirt", "--libvirt-domain", s(&domain), "--output-dir", s(&out)];
    refused(&args, &["vm1.xml:line 4", "more than 4096 <iothread>s"]);
    // the largest counts are patched
    let domain = write(
        dir.path(),
        "vm1.xml",
        "<domain type='kvm'>\n  <name>vm1</name>\n  <vcpu>4096</vcpu>\n  <iothreads>4096</iothreads>\n</domain>\n",
    );
    let args = ["plan", s(&scenario), "--emit", "libvirt", "--libvirt-domain", s(&domain), "--output-dir", s(&out)];
    let (o, kib) = measured(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(kib < BOUND_KIB, "peak RSS {kib} KiB");
    let patched = std::fs::read_to_string(out.join("vm1.xml")).unwrap();
    assert_eq!(patched.matches("<vcpupin").count(), 4096);
    assert_eq!(patched.matches("<iothreadpin").count(), 4096);
}

#[test]
fn sweep_threads_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = write(
        dir.path(),
        "s.sweep.toml",
        &format!(
            "scenarios = [{:?}]\nseeds = [1, 2]\nduration = \"10ms\"\n",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/sim_policies.toml")
        ),
    );
    for threads in ["100000", "1025", "0"] {
        refused(&["simulate", "--sweep", s(&sweep), "--threads", threads], &["--threads", threads, "1 to 1024"]);
    }
    let (o, _) = measured(&["simulate", "--sweep", s(&sweep), "--threads", "1024", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn planning_a_large_scenario_shows_each_step_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::from("[host]\ncores = 200\n");
    for g in 0..200 {
        let tasks: Vec<String> = (0..10)
            .map(|t| format!("{{name=\"t{t}\",period=\"{}ms\",wcet=\"100us\",exec={{dist=\"uniform\",min=\"10us\",max=\"100us\"}}}}", 10 + t))
            .collect();
        toml += &format!(
            "[[guest]]\nname=\"g{g}\"\nscheduler=\"edf\"\nserver_periods=[\"5ms\"]\ntask=[{}]\n",
            tasks.join(",")
        );
    }
    let scenario = write(dir.path(), "large.toml", &toml);
    let (o, kib) = measured(&["plan", s(&scenario), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("rtvirt: planning 200 guests (2000 tasks)..."), "{e}");
    assert!(e.contains("rtvirt: searching the largest uniform rho: between 0.0000 and 1.0000..."), "{e}");
    assert!(kib < BOUND_KIB, "peak RSS {kib} KiB");
}

/// A simulation that runs for seconds says how far it is on stderr also when stderr is no
/// terminal (a pipe here): a line at each tenth of the horizon once it has run 2 s. 600 tasks
/// over 60 simulated seconds are 7 M events: about 5 s of CPU in the debug build, so the 2 s
/// mark passes with room on any machine of this kind.
#[test]
fn a_long_simulation_shows_progress_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::from("name = \"many-tasks\"\n[host]\ncores = 4\n[sim]\nduration = \"60s\"\n");
    for g in 0..4 {
        toml += &format!("[[guest]]\nname = \"g{g}\"\nscheduler = \"edf\"\n");
        for t in 0..150 {
            toml += &format!("[[guest.task]]\nname = \"t{t}\"\nperiod = \"10ms\"\nwcet = \"5us\"\n");
        }
    }
    let scenario = write(dir.path(), "many.toml", &toml);
    let o = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["simulate", s(&scenario)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    let lines = e.lines().filter(|l| l.starts_with("rtvirt: simulated ") && l.contains(" / 60s (")).count();
    assert!(lines >= 1, "progress lines on a pipe: {e}");
}
