//! What reading a tracing instance costs the reader: `trace_pipe` (the kernel formats every
//! event as text; only lines are counted here, no parsing) against `trace_pipe_raw` (binary
//! pages, every event decoded), side by side on the same load. Root; leaves nothing behind.
//!
//! `cargo run --release -p rtvirt-os --example tracefs_reader_cost` (docs/PERFORMANCE.md)

use rtvirt_os::tracefs::Instance;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_wakeup",
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
];
const SECONDS: u64 = 3;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Threads that sleep 50 us in a loop: many switches, wake-ups and hrtimers.
fn load(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn measure(raw: bool) -> (u64, u64) {
    let state = tempfile::tempdir().unwrap();
    let instance = Instance::create(state.path(), EVENTS, 4096).unwrap();
    let cpus: Vec<u32> = (0..std::thread::available_parallelism().unwrap().get() as u32).collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| load(&stop));
        }
        instance.set_on(true).unwrap();
        let (cpu0, end) = (thread_cpu_ns(), Instant::now() + Duration::from_secs(SECONDS));
        let mut events = 0u64;
        if raw {
            let mut readers: Vec<_> = cpus.iter().map(|&c| instance.reader(c).unwrap()).collect();
            while Instant::now() < end {
                for r in &mut readers {
                    while let Some(page) = r.next_page().unwrap() {
                        events += page.events().count() as u64;
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            let path = instance.path().join("trace_pipe");
            let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).unwrap();
            let mut buf = vec![0u8; 1 << 16];
            while Instant::now() < end {
                loop {
                    match f.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => events += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64,
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let cost = thread_cpu_ns() - cpu0;
        let read_events: u64 = cpus
            .iter()
            .map(|c| {
                let stats = std::fs::read_to_string(instance.path().join(format!("per_cpu/cpu{c}/stats"))).unwrap();
                stats.lines().find_map(|l| l.strip_prefix("read events:")).map_or(0, |v| v.trim().parse().unwrap_or(0))
            })
            .sum();
        println!("kernel read events {read_events} (raw decoded or text lines: {events})");
        stop.store(true, Ordering::Relaxed);
        let lost: u64 = cpus.iter().map(|&c| instance.lost_events(c)).sum();
        println!(
            "{:<15} events {events:>9}  lost {lost:>7}  reader CPU {:>6.1} ms  {:>6.0} ns/event",
            if raw { "trace_pipe_raw" } else { "trace_pipe" },
            cost as f64 / 1e6,
            cost as f64 / events.max(1) as f64
        );
        (events, cost)
    })
}

use std::os::unix::fs::OpenOptionsExt;

fn main() {
    for _ in 0..2 {
        measure(false);
        measure(true);
    }
}
