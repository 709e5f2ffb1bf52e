//! `--explain` against the real kernel (root, under the host lock): a SCHED_FIFO thread with a
//! distinctive name, above the measurement's priority, busy for 2 ms every 50 ms on the measured
//! CPU, must be the top cause of the late wake-ups, each time with the share of its burst that
//! came after the expiry (within 10%); without tracing the measurement still runs and says why
//! nothing was explained; nothing stays enabled or mounted.

use rtvirt_model::results::{CauseKind, ExplainSection};
use rtvirt_model::Nanos;
use rtvirt_probe::explain::ExplainConfig;
use rtvirt_probe::rt::{self, LinuxPolicy, Sched};
use rtvirt_probe::timer::{self, TimerConfig};
use std::sync::atomic::{AtomicBool, Ordering};

const HOG: &str = "explain-hog";
const BUSY_NS: u64 = 2_000_000;
const EVERY_NS: u64 = 50_000_000;

fn measured_cpu() -> u32 {
    *rtvirt_probe::cpus::allowed().last().expect("a CPU")
}

fn config(cpu: u32, state: &std::path::Path, above: Option<Nanos>) -> TimerConfig {
    let mut explain = ExplainConfig::new(state.to_path_buf());
    explain.above = above;
    TimerConfig {
        cpus: vec![cpu],
        interval: Nanos::from_ms(1),
        priority: 50,
        policy: LinuxPolicy::Fifo,
        duration: Nanos::from_ms(1500),
        explain: Some(explain),
        ..Default::default()
    }
}

/// Busy bursts at FIFO 60 on `cpu` until `stop`; returns each burst's [start, end] (CLOCK_MONOTONIC).
fn hog(cpu: u32, stop: &AtomicBool) -> Vec<(u64, u64)> {
    rt::pin_current_thread(cpu).unwrap();
    rt::set_sched(0, Sched::Fifo(60)).unwrap();
    let mut bursts = Vec::new();
    let mut next = rt::now_ns() + 30_000_000;
    while !stop.load(Ordering::Relaxed) {
        rt::sleep_until(next);
        let start = rt::now_ns();
        while rt::now_ns() < start + BUSY_NS {}
        bursts.push((start, rt::now_ns()));
        next += EVERY_NS;
    }
    rt::set_sched(0, Sched::Other).unwrap();
    bursts
}

fn instances_left() -> Vec<String> {
    let Some(root) = rtvirt_os::tracefs::mounted_at() else { return Vec::new() };
    std::fs::read_dir(root.join("instances"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// One hog run: the invariants are asserted; the attribution is returned as a verdict.
fn injected_hog_run() -> Result<(), String> {
    let mounted_before = rtvirt_os::tracefs::mounted_at();
    let state = tempfile::tempdir().unwrap();
    let cpu = measured_cpu();
    let stop = AtomicBool::new(false);
    let (run, bursts) = std::thread::scope(|s| {
        let h = std::thread::Builder::new().name(HOG.into()).spawn_scoped(s, || hog(cpu, &stop)).unwrap();
        let run = timer::run(&config(cpu, state.path(), Some(Nanos::from_us(300))));
        stop.store(true, Ordering::Relaxed);
        (run, h.join().unwrap())
    });
    let run = run.unwrap();
    assert!(instances_left().is_empty(), "instances left: {:?}", instances_left());
    assert_eq!(rtvirt_os::tracefs::mounted_at(), mounted_before, "tracefs mounted as before");
    let explain: &ExplainSection = run.results.explain.as_ref().expect("an explain section");
    assert!(explain.events_present.iter().any(|e| e == "sched/sched_switch"), "{explain:?}");
    assert_eq!(explain.threshold_ns, 300_000);
    for sample in &explain.samples {
        let total: u64 = sample.causes.iter().map(|c| c.duration_ns).sum();
        assert_eq!(total, sample.latency_ns, "the causes add up to the latency: {sample:?}");
    }
    if explain.samples.is_empty() {
        return Err(format!("no late sample explained: {:?}", explain.limitations));
    }
    let top = &explain.summary[0];
    if (top.kind, top.name.as_str()) != (CauseKind::Thread, HOG) {
        return Err(format!("top cause is not the hog: {:?}", explain.summary));
    }
    // Here (kernel 6.18 in a VM) about 1% of the switches into a real-time thread are missing from
    // the kernel's trace although no event is reported lost; such a wake-up is credited to the last
    // thread seen running or left unexplained. So: most samples, not every one, within 10%.
    let (mut matched, mut within) = (0, 0);
    for sample in &explain.samples {
        let expected = sample.expected_ns + run.start_ns;
        let Some(&(_, end)) = bursts.iter().find(|(s, e)| *s <= expected && expected < *e) else { continue };
        matched += 1;
        let hog: Vec<_> = sample.causes.iter().filter(|c| c.kind == CauseKind::Thread && c.name == HOG).collect();
        let hog_ns: u64 = hog.iter().map(|c| c.duration_ns).sum();
        let known = end - expected;
        if hog_ns.abs_diff(known) as f64 / known as f64 <= 0.10 {
            within += 1;
            let biggest = sample.causes.iter().max_by_key(|c| c.duration_ns).unwrap();
            assert_eq!((biggest.name.as_str(), biggest.pid), (HOG, hog[0].pid), "{sample:?}");
            assert_eq!(biggest.policy.as_deref(), Some("fifo"), "{biggest:?}");
        } else {
            eprintln!("the hog's share {hog_ns} ns vs its burst after expiry {known} ns: {sample:?}");
        }
    }
    if within * 10 < matched * 8 {
        return Err(format!("{within} of {matched} samples in bursts credit the hog within 10%"));
    }
    // Usually every burst is found; about one run in six here finds only a few (not understood yet,
    // see docs/measure.md): at least three, and most of those found credit the hog correctly.
    if matched < 3 {
        let run_end = run.start_ns + run.results.duration_ns;
        let during = bursts.iter().filter(|(s, e)| *s >= run.start_ns && *e <= run_end).count();
        return Err(format!(
            "{matched} of the {during} bursts during the run found in {} explained samples; limitations: {:?}",
            explain.samples.len(),
            explain.limitations
        ));
    }
    Ok(())
}

/// The attribution must hold in one of three runs: about one run in five here misses it because the
/// kernel's trace lacks some switches (docs/measure.md, "known gaps"); three failures in a row
/// (~1% by chance) is a defect.
#[test]
fn an_injected_fifo_thread_is_the_top_cause_with_its_duration() {
    let _one = rtvirt_testkit::host_lock();
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        match injected_hog_run() {
            Ok(()) => return,
            Err(why) => {
                eprintln!("attempt {attempt}: {why}");
                failures.push(why);
            }
        }
    }
    panic!("the hog was not attributed in 3 runs: {failures:#?}");
}

#[test]
fn without_tracing_the_measurement_runs_and_says_why_nothing_was_explained() {
    let _one = rtvirt_testkit::host_lock();
    let mounted_before = rtvirt_os::tracefs::mounted_at();
    let unwritable = std::path::Path::new("/proc/rtvirt-no-state-here");
    let mut cfg = config(measured_cpu(), unwritable, None);
    cfg.duration = Nanos::from_ms(300);
    let run = timer::run(&cfg).unwrap();
    assert!(run.overall.count() > 100, "measured anyway");
    let explain = run.results.explain.unwrap();
    assert!(explain.samples.is_empty());
    assert!(
        explain
            .limitations
            .iter()
            .any(|l| l.contains("kernel tracing unavailable") && l.contains("rtvirt-no-state-here")),
        "{:?}",
        explain.limitations
    );
    assert_eq!(rtvirt_os::tracefs::mounted_at(), mounted_before);
}

#[test]
fn break_stops_the_run_at_the_first_late_wake_up_and_explains_it() {
    let _one = rtvirt_testkit::host_lock();
    let state = tempfile::tempdir().unwrap();
    let cpu = measured_cpu();
    let stop = AtomicBool::new(false);
    let mut cfg = config(cpu, state.path(), None);
    cfg.duration = Nanos::from_secs(10);
    cfg.explain.as_mut().unwrap().break_at = Some(Nanos::from_us(500));
    let run = std::thread::scope(|s| {
        std::thread::Builder::new().name(HOG.into()).spawn_scoped(s, || hog(cpu, &stop)).unwrap();
        let run = timer::run(&cfg);
        stop.store(true, Ordering::Relaxed);
        run
    })
    .unwrap();
    let explain = run.results.explain.unwrap();
    let broke = explain.stopped_by_break_ns.expect("a 2 ms burst breaks a 500 us limit");
    assert!(broke > 500_000);
    assert!(run.results.duration_ns < 5_000_000_000, "stopped early: {} ns", run.results.duration_ns);
    let sample = explain.samples.iter().find(|s| s.latency_ns == broke).expect("the breaking wake-up is explained");
    assert_eq!(sample.causes.iter().map(|c| c.duration_ns).sum::<u64>(), broke, "{sample:?}");
    assert!(instances_left().is_empty());
}
