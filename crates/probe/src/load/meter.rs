//! What the workers of a load share: their counters ([`Meter`]) and their pacing ([`Pacer`]).

use crate::rt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Words of the CPU bitmap of a [`Meter`]: every CPU a cpu_set_t can name (CPU_SETSIZE, 1024).
const CPU_WORDS: usize = libc::CPU_SETSIZE as usize / 64;

/// Counters the workers share: units of work done, and every CPU a worker thread was seen on.
#[derive(Default)]
pub(crate) struct Meter {
    pub ops: AtomicU64,
    cpus: [AtomicU64; CPU_WORDS],
}

impl Meter {
    /// Count `count` units done on the current CPU.
    pub fn add(&self, count: u64) {
        self.ops.fetch_add(count, Ordering::Relaxed);
        self.ran_on(rt::current_cpu());
    }

    /// Record that a worker thread ran on `cpu` (threads that do not count units, e.g. the
    /// sender of a net load, still occupy CPUs).
    pub fn ran_on(&self, cpu: u32) {
        if let Some(w) = self.cpus.get(cpu as usize / 64) {
            w.fetch_or(1 << (cpu % 64), Ordering::Relaxed);
        }
    }

    /// The CPUs seen, ascending.
    pub fn cpus(&self) -> Vec<u32> {
        (0..CPU_WORDS as u32 * 64)
            .filter(|&c| self.cpus[c as usize / 64].load(Ordering::Relaxed) & (1 << (c % 64)) != 0)
            .collect()
    }
}

/// Paces a worker to `rate` units/s (None: as fast as possible). Its waits end as soon as the
/// load is stopped (or Ctrl-C): a low rate can mean a long wait (1000 units at 1/s: 1000 s).
pub(crate) struct Pacer<'a> {
    start: u64,
    per_unit_ns: Option<f64>,
    done: u64,
    stop: &'a AtomicBool,
}

impl<'a> Pacer<'a> {
    pub fn new(rate: Option<f64>, stop: &'a AtomicBool) -> Pacer<'a> {
        Pacer { start: rt::now_ns(), per_unit_ns: rate.map(|r| 1e9 / r), done: 0, stop }
    }
    /// Account `count` units and sleep until they are due, or until the load stops.
    pub fn pace(&mut self, count: u64) {
        self.done += count;
        if let Some(p) = self.per_unit_ns {
            let due = (self.start as f64 + self.done as f64 * p).min(u64::MAX as f64) as u64;
            rt::sleep_until_or_stopped(due, self.stop);
        }
    }
}
