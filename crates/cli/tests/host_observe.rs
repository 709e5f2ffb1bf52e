//! `rtvirt host observe` end to end on real threads and a real agent socket (no QEMU): a busy
//! process stands for a guest's vCPU; the test plays a guest agent that tells the truth, lies,
//! sends garbage and floods, then vanishes; and a real SCHED_FIFO and SCHED_DEADLINE periodic
//! thread (root; run under `flock /tmp/rtvirt-host.lock`) is learned from the host alone, within
//! tolerances that hold on a loaded machine. Every output is valid against
//! docs/schema/observe.schema.json.

mod periodic_support;
mod schema_support;

use periodic_support::Periodic;
use rtvirt_os::sched::{SchedAttr, SCHED_FIFO};

use std::io::Write;
use std::os::unix::net::UnixListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A process that burns CPU in bursts and sleeps between them, killed on drop.
struct Bursty(Child);

impl Bursty {
    fn start() -> Bursty {
        let script = "end=$(( $(date +%s) + 60 )); while [ $(date +%s) -lt $end ]; do i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; sleep 0.01; done";
        Bursty(Command::new("sh").args(["-c", script]).stdin(Stdio::null()).spawn().expect("spawn sh"))
    }
}

impl Drop for Bursty {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn observe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["host", "observe"])
        .args(args)
        .output()
        .expect("run rtvirt")
}

fn line(tid: u32, period: u64, deadline: u64, jobs: &[u64]) -> String {
    format!(
        r#"{{"v":1,"tid":{tid},"name":"g.t{tid}","policy":"deadline","period_ns":{period},"deadline_ns":{deadline},"jobs":{jobs:?},"how":"api"}}"#
    ) + "\n"
}

/// Run observe for `duration` with an agent socket the test serves with `serve`.
fn observe_with_agent(
    duration: &str,
    serve: impl FnOnce(std::os::unix::net::UnixStream) + Send + 'static,
) -> serde_json::Value {
    let load = Bursty::start();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        serve(stream);
    });
    let out = observe(&[
        "--pid",
        &format!("g={}", load.0.id()),
        "--agent",
        &format!("g={}", sock.display()),
        "--duration",
        duration,
        "--window",
        "50ms",
        "--format",
        "json",
    ]);
    server.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("observe", &doc);
    doc
}

#[test]
fn an_agent_that_lies_floods_and_sends_garbage_is_counted_and_clamped() {
    let doc = observe_with_agent("2s", |mut s| {
        let mut text = String::new();
        text += &line(1, 10_000_000, 10_000_000, &[1_000_000, 2_000_000, 3_000_000]);
        text += "this is not json\n";
        text += &"x".repeat(10_000);
        text += "\n";
        text += &line(2, 0, 1, &[5]); // a period of 0
        text += &line(3, 1_000_000, 5_000_000, &[9_000_000]); // deadline and job above the period
                                                              // A flood: 2500 lines arrive within a few polls, so within at most two seconds' bounds.
        for _ in 0..2500 {
            text += &line(1, 10_000_000, 10_000_000, &[1_500_000]);
        }
        s.write_all(text.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(2500)); // stay connected until observe ends
    });
    let g = &doc["guests"][0];
    assert_eq!(g["agent"]["state"], "reporting", "{g}");
    let c = &g["agent"]["counters"];
    assert_eq!(
        (c["malformed"].as_u64(), c["oversized"].as_u64(), c["impossible"].as_u64()),
        (Some(1), Some(1), Some(1)),
        "{c}"
    );
    assert_eq!(c["clamped"].as_u64(), Some(1), "{c}");
    assert!(c["flooded"].as_u64().unwrap() >= 400, "more than 1000 lines a second are a flood: {c}");
    let tasks = g["tasks"].as_array().unwrap();
    assert!(tasks.iter().all(|t| t["source"] == "agent"), "{tasks:?}");
    let t3 = tasks.iter().find(|t| t["name"] == "g.t3").expect("the clamped task is kept");
    assert_eq!((t3["deadline_ns"].as_u64(), t3["exec"]["max"].as_u64()), (Some(1_000_000), Some(1_000_000)));
    assert!(!tasks.iter().any(|t| t["name"] == "g.t2"), "the impossible line is not a task");
    let t1 = tasks.iter().find(|t| t["name"] == "g.t1").unwrap();
    assert!(t1["samples"].as_u64().unwrap() >= 900, "{t1}");
    let vcpu = &g["vcpus"][0];
    assert!(vcpu["demand"]["count"].as_u64().unwrap() > 0 && vcpu["utilisation"].as_f64().unwrap() > 0.0, "{vcpu}");
}

#[test]
fn a_vanished_agent_falls_back_to_host_inference() {
    let doc = observe_with_agent("1500ms", |mut s| {
        s.write_all(line(1, 10_000_000, 10_000_000, &[1_000_000]).as_bytes()).unwrap();
        // the agent goes away (the stream closes on return)
    });
    let g = &doc["guests"][0];
    assert_eq!(g["agent"]["state"], "vanished", "{g}");
    let tasks = g["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "one inferred task per vCPU: {tasks:?}");
    assert_eq!(tasks[0]["source"], "host_inference");
    // The shell halts in every burst's `sleep 0.01`: its jobs' period is about 10 ms plus the burst.
    let period = tasks[0]["period_ns"].as_u64().unwrap();
    assert!((1_000_000..50_000_000).contains(&period), "the interval between halts, not the window: {period}");
    assert!(tasks[0]["samples"].as_u64().unwrap() > 0);
}

#[test]
fn bad_input_is_exit_2_naming_the_option() {
    let load = Bursty::start();
    let pid = format!("g={}", load.0.id());
    for (args, needle) in [
        (vec!["--pid", "g=4000000000"], "thread 4000000000"),
        (vec!["--pid", pid.as_str(), "--window", "0s"], "--window"),
        (vec!["--pid", pid.as_str(), "--duration", "2h"], "--duration"),
        (vec!["--pid", pid.as_str(), "--agent", "nosocket"], "--agent"),
        (vec!["--pid", pid.as_str(), "--pid", pid.as_str()], "twice"),
    ] {
        let out = observe(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// Within `tolerance` (a fraction) of `want`.
fn near(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= want * tolerance
}

/// A periodic thread (10 ms period, 1 ms of its own CPU time per job) under `attr`, observed for
/// 3 s through `--pid`. Period: the median interval between halts (SCHED_FIFO) or the thread's
/// SCHED_DEADLINE period; within 15% (a window holds 9 to 11 jobs). Execution time: the mean busy
/// interval between halts (per job) and, under SCHED_DEADLINE, the mean CPU time per period;
/// within 1 ms -20%/+50% (the CPU time of a job is spun exactly; wake-up and sleep add to it, and
/// a late wake-up on a loaded machine moves a job into the next window).
fn learned(attr: SchedAttr) -> serde_json::Value {
    let thread = Periodic::start(
        Some(attr),
        Duration::from_millis(10),
        &[(Duration::ZERO, Duration::from_millis(1))],
        Duration::from_secs(30),
    );
    let out =
        observe(&["--pid", &format!("g={}", thread.tid), "--duration", "3s", "--window", "100ms", "--format", "json"]);
    let jobs = thread.finish();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(jobs >= 250, "the thread ran its jobs: {jobs}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    schema_support::assert_valid("observe", &doc);
    let (vcpu, task) = (&doc["guests"][0]["vcpus"][0], &doc["guests"][0]["tasks"][0]);
    assert_eq!(task["source"], "host_inference", "{task}");
    assert!(task["samples"].as_u64().unwrap() >= 20, "one sample per window: {task}");
    let busy = vcpu["busy_interval"]["mean"].as_f64().unwrap();
    assert!((0.8e6..=1.5e6).contains(&busy), "busy interval between halts ~1 ms: {vcpu}");
    let halts = vcpu["halt_interval"]["p50"].as_u64().unwrap() as f64;
    assert!(near(halts, 10e6, 0.15), "interval between halts ~10 ms: {vcpu}");
    assert!(near(task["period_ns"].as_u64().unwrap() as f64, 10e6, 0.15), "learned period: {task}");
    let exec = task["exec"]["mean"].as_f64().unwrap();
    assert!((0.8e6..=1.5e6).contains(&exec), "learned execution time ~1 ms: {task}");
    doc
}

#[test]
fn a_periodic_fifo_thread_is_learned_from_its_halts() {
    let doc = learned(SchedAttr::fixed(SCHED_FIFO, 10));
    let (vcpu, task) = (&doc["guests"][0]["vcpus"][0], &doc["guests"][0]["tasks"][0]);
    assert!(vcpu.get("reservation").is_none(), "{vcpu}");
    assert_eq!(task["period_ns"], task["deadline_ns"], "{task}");
}

#[test]
fn a_periodic_deadline_thread_is_learned_with_its_reservation() {
    let doc = learned(SchedAttr::deadline(3_000_000, 10_000_000, 10_000_000));
    let vcpu = &doc["guests"][0]["vcpus"][0];
    assert_eq!(vcpu["reservation"]["runtime_ns"].as_u64(), Some(3_000_000), "{vcpu}");
    assert_eq!(doc["guests"][0]["tasks"][0]["period_ns"].as_u64(), Some(10_000_000));
}
