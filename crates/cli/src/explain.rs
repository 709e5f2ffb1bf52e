//! `--explain` for people and for Perfetto (`measure timer`, `measure net`, in any placement): the
//! ranked causes as a table, the worst wake-ups broken down, a network request's path segments,
//! and the explained wake-ups as a Chrome trace written with the simulator's [`TraceWriter`] and
//! its track layout (group "cores" with a track per CPU; a group per measuring thread with its
//! wake-ups; for `measure net`, the network scenario's layout: "cores" and "threads", see
//! [`write_net_trace`]), so that a simulated and a measured trace open side by side.

use anyhow::Context as _;
use rtvirt_model::results::{ExplainSection, ExplainedSample};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::Nanos;
use rtvirt_sim::engine::trace::{TraceWindow, TraceWriter, Track};
use serde_json::json;
use std::path::Path;

/// Worst wake-ups printed with their causes.
const WORST_SHOWN: usize = 3;

/// The table printed after the latency table.
pub fn print_table(e: &ExplainSection) {
    println!();
    println!(
        "late wake-ups explained: {} above {} ns ({} kept); trace events lost: {}",
        e.samples_above,
        e.threshold_ns,
        e.samples.len(),
        e.events_lost
    );
    if let Some(b) = e.stopped_by_break_ns {
        println!("stopped by --break: a wake-up {b} ns late");
    }
    if let (Some(file), Some(n)) = (&e.break_trace_file, e.break_trace_events) {
        println!("whole trace ({n} events): {file}");
    }
    if !e.summary.is_empty() {
        println!("{:<28} {:<12} {:>8} {:>12} {:>10}", "cause", "kind", "samples", "total ns", "max ns");
        for c in &e.summary {
            println!("{:<28} {:<12} {:>8} {:>12} {:>10}", c.name, c.kind.as_str(), c.samples, c.total_ns, c.max_ns);
        }
    }
    for s in e.samples.iter().take(WORST_SHOWN) {
        println!("{}", breakdown(s));
    }
    for l in &e.limitations {
        println!("not explained: {l}");
    }
}

/// "cpu 1 at 0.532 s: 1650000 ns = thread explain-hog (pid 12) 1644531 + irq local_timer 3000 + ..."
fn breakdown(s: &ExplainedSample) -> String {
    let parts: Vec<String> = s
        .causes
        .iter()
        .map(|c| {
            let pid = c.pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
            format!("{} {}{pid} {}", c.kind.as_str(), c.name, c.duration_ns)
        })
        .collect();
    format!("cpu {} at {:.6} s: {} ns = {}", s.cpu, s.expected_ns as f64 / 1e9, s.latency_ns, parts.join(" + "))
}

const CORES_PID: u32 = 1;
/// `--in vm`: the host side's group (after the measuring threads' groups).
const HOST_PID: u32 = 1000;

/// Write the explained wake-ups as a Chrome trace.
pub fn write_trace(e: &ExplainSection, cpus: &[u32], duration: Nanos, path: &Path) -> anyhow::Result<()> {
    let window = TraceWindow { from: Nanos::ZERO, to: Nanos(duration.0.saturating_mul(2)), max_events: 2_000_000 };
    let mut w = TraceWriter::new(window);
    // `--in vm`: the guest's cores, then a group of the host cores its vCPU threads ran on
    let cores = if e.guest_clock.is_some() { ("guest cores", "guest core") } else { ("cores", "core") };
    for &cpu in cpus {
        w.name_track(Track { pid: CORES_PID, tid: cpu }, cores.0, &format!("{} {cpu}", cores.1));
    }
    let thread_track = |cpu: u32| Track { pid: 2 + cpus.iter().position(|&c| c == cpu).unwrap_or(0) as u32, tid: 0 };
    for &cpu in cpus {
        w.name_track(thread_track(cpu), &format!("thread rtvirt-timer{cpu}"), "tasks");
    }
    let mut host_cores = std::collections::BTreeSet::new();
    for s in &e.samples {
        for c in &s.causes {
            let args = json!({"kind": c.kind.as_str(), "pid": c.pid, "policy": c.policy, "duration_ns": c.duration_ns});
            let (from, to) = (Nanos(c.start_ns), Nanos(c.start_ns + c.duration_ns));
            let track = match c.kind.is_host_side() {
                // `--in vm`: the vCPU thread's host side, a track per host CPU
                true => {
                    let t = Track { pid: HOST_PID, tid: c.cpu };
                    if host_cores.insert(c.cpu) {
                        w.name_track(t, "host (vCPU threads)", &format!("host core {}", c.cpu));
                    }
                    t
                }
                false => Track { pid: CORES_PID, tid: c.cpu },
            };
            w.slice(track, &c.name, from, to, Some(args));
        }
        let end = Nanos(s.expected_ns + s.latency_ns);
        w.slice(
            thread_track(s.cpu),
            "late wake-up",
            Nanos(s.expected_ns),
            end,
            Some(json!({"latency_ns": s.latency_ns})),
        );
        w.instant(thread_track(s.cpu), "late sample", end, None);
    }
    let cannot = || format!("cannot write trace {}", path.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).with_context(cannot)?);
    w.write_json(&mut out).with_context(cannot)?;
    std::io::Write::flush(&mut out).with_context(cannot)
}

/// `measure net --explain --trace`: the group "threads" of the simulator's network trace.
const THREADS_PID: u32 = 2;
/// `measure net client --in vm --explain --trace`: the guest's CPUs, where its segments ran.
const GUEST_CORES_PID: u32 = 3;

/// Write the explained requests of `measure net` as a Chrome trace, in the layout of
/// `rtvirt simulate --trace` of a network scenario: group "cores" with a track per CPU holding
/// each path segment on the CPU whose event ended it, group "threads" with a track per measuring
/// thread (`role` and its tid) holding each request's round trip and the segments no CPU's event
/// ends (the client's own clock readings, `unexplained`). With a server in a guest, group
/// "guest cores" holds the guest's segments (`guest_*`) on the guest CPU whose event ended each.
/// The requests at or above the p99 of those kept are marked `late request`.
pub fn write_net_trace(e: &ExplainSection, role: &str, path: &Path) -> anyhow::Result<()> {
    let end = e.samples.iter().map(|s| s.expected_ns + s.latency_ns).max().unwrap_or(0);
    let window = TraceWindow { from: Nanos::ZERO, to: Nanos(end + 1), max_events: 2_000_000 };
    let mut w = TraceWriter::new(window);
    let all = || e.samples.iter().flat_map(|s| s.segments.iter());
    let cpus: std::collections::BTreeSet<(bool, u32)> =
        all().filter_map(|x| Some((is_guests(&x.name), x.cpu?))).collect();
    for &(guest, cpu) in &cpus {
        match guest {
            true => w.name_track(Track { pid: GUEST_CORES_PID, tid: cpu }, "guest cores", &format!("guest core {cpu}")),
            false => w.name_track(Track { pid: CORES_PID, tid: cpu }, "cores", &format!("core {cpu}")),
        }
    }
    let threads: std::collections::BTreeSet<u32> = e.samples.iter().map(|s| s.tid).collect();
    for &tid in &threads {
        w.name_track(Track { pid: THREADS_PID, tid }, "threads", &format!("{role} (tid {tid})"));
    }
    let late = late_from(e);
    let mut samples: Vec<&ExplainedSample> = e.samples.iter().collect();
    samples.sort_by_key(|s| s.expected_ns);
    for s in samples {
        let thread = Track { pid: THREADS_PID, tid: s.tid };
        let request = s.request.map_or_else(|| "request".to_string(), |r| format!("request {r}"));
        let (start, end) = (Nanos(s.expected_ns), Nanos(s.expected_ns + s.latency_ns));
        w.slice(thread, &request, start, end, Some(json!({"round_trip_ns": s.latency_ns})));
        for x in &s.segments {
            let args = json!({"request": s.request, "duration_ns": x.duration_ns, "via": x.via, "missing": x.missing});
            let cores = if is_guests(&x.name) { GUEST_CORES_PID } else { CORES_PID };
            let track = x.cpu.map_or(thread, |cpu| Track { pid: cores, tid: cpu });
            w.slice(track, &x.name, Nanos(x.start_ns), Nanos(x.start_ns + x.duration_ns), Some(args));
        }
        if s.latency_ns >= late {
            w.instant(thread, "late request", end, Some(json!({"round_trip_ns": s.latency_ns})));
        }
    }
    let cannot = || format!("cannot write trace {}", path.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).with_context(cannot)?);
    w.write_json(&mut out).with_context(cannot)?;
    std::io::Write::flush(&mut out).with_context(cannot)
}

/// The path segments: mean, p99 and max of each, the worst request broken down, what could not
/// be explained.
pub fn print_segments(e: &ExplainSection) {
    println!();
    println!("requests explained: {}; trace events lost: {}", e.samples_above, e.events_lost);
    if !e.segments.is_empty() {
        println!("{:<16} {:>9} {:>12} {:>12} {:>12}", "segment", "requests", "mean ns", "p99 ns", "max ns");
        for s in &e.segments {
            println!("{:<16} {:>9} {:>12.0} {:>12} {:>12}", s.name, s.requests, s.mean_ns, s.p99_ns, s.max_ns);
        }
    }
    if let Some(worst) = e.samples.first() {
        let parts: Vec<String> = worst.segments.iter().map(|s| format!("{} {}", s.name, s.duration_ns)).collect();
        let seq = worst.request.map_or(String::new(), |r| format!(" {r}"));
        println!("worst request{seq}: {} ns = {}", worst.latency_ns, parts.join(" + "));
    }
    for l in &e.limitations {
        println!("not explained: {l}");
    }
}

/// Whether a path segment was measured in the guest (its CPU is the guest's).
fn is_guests(segment: &str) -> bool {
    segment.starts_with("guest_")
}

/// The p99 of the kept requests' round trips.
fn late_from(e: &ExplainSection) -> u64 {
    let mut rtt = LatencyHistogram::new();
    e.samples.iter().for_each(|s| rtt.record(s.latency_ns));
    rtt.quantile(0.99)
}
