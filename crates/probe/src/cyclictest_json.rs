//! `measure timer --json FILE`: the run's per-CPU histograms as the JSON file `cyclictest
//! --json=FILE` writes ([`CyclictestJson`]), with this host's uname and each CPU's NUMA node.

use crate::timer::CYCLICTEST_HISTOGRAM_ROWS;
use rtvirt_model::rt_tests::{CyclictestJson, Sysinfo, ThreadStats, FILE_VERSION};
use rtvirt_model::stats::LatencyHistogram;
use std::collections::BTreeMap;
use std::path::Path;

/// What the file says of the run besides its samples.
pub struct RunInfo {
    pub cmdline: String,
    pub start_time: String,
    pub end_time: String,
}

/// The time now as cyclictest writes it ("Mon, 07 Dec 2026 17:41:00 +0000").
pub fn now() -> String {
    chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S %z").to_string()
}

/// The file of a run: one thread per measured CPU, histogram rows as cyclictest's `-h rows`
/// (None: as many as the largest sample needs, at most [`CYCLICTEST_HISTOGRAM_ROWS`]).
pub fn cyclictest_json(per_cpu: &[(u32, LatencyHistogram)], rows: Option<u64>, run: RunInfo) -> CyclictestJson {
    let needed = per_cpu.iter().filter_map(|(_, h)| h.max()).map(|m| m / 1000 + 1).max().unwrap_or(1);
    let rows = rows.unwrap_or(needed).clamp(1, CYCLICTEST_HISTOGRAM_ROWS);
    let thread = per_cpu.iter().enumerate().map(|(i, (cpu, h))| (i.to_string(), thread(*cpu, h, rows))).collect();
    CyclictestJson {
        file_version: FILE_VERSION,
        cmdline: run.cmdline,
        rt_test_version: format!("rtvirt {}", env!("CARGO_PKG_VERSION")),
        start_time: run.start_time,
        end_time: run.end_time,
        return_code: 0,
        sysinfo: sysinfo(),
        num_threads: per_cpu.len(),
        resolution_in_ns: 0,
        thread,
    }
}

fn thread(cpu: u32, h: &LatencyHistogram, rows: u64) -> ThreadStats {
    let mut histogram: BTreeMap<u64, u64> = BTreeMap::new();
    for (ns, n) in h.buckets() {
        if ns / 1000 < rows {
            *histogram.entry(ns / 1000).or_default() += n;
        }
    }
    ThreadStats {
        histogram: histogram.into_iter().map(|(us, n)| (us.to_string(), n)).collect(),
        cycles: h.count(),
        min: h.min().unwrap_or(0) / 1000,
        max: h.max().unwrap_or(0) / 1000,
        avg: (h.mean() / 10.0).round() / 100.0,
        cpu,
        node: numa_node(cpu),
    }
}

/// The NUMA node of `cpu` (its `nodeN` entry in sysfs; 0 without one, as on a kernel without NUMA).
fn numa_node(cpu: u32) -> u32 {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries.filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok()).next().unwrap_or(0)
}

/// uname(2)'s fields as /proc/sys/kernel tells them, and PREEMPT_RT's `/sys/kernel/realtime`.
fn sysinfo() -> Sysinfo {
    let read = |name: &str| {
        std::fs::read_to_string(Path::new("/proc/sys/kernel").join(name)).unwrap_or_default().trim().to_string()
    };
    let realtime = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|v| v.trim() == "1");
    Sysinfo {
        sysname: read("ostype"),
        nodename: read("hostname"),
        release: read("osrelease"),
        version: read("version"),
        machine: std::env::consts::ARCH.to_string(),
        realtime: u32::from(realtime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row counts the samples of its microsecond, below the rows only; min, max, avg and
    /// cycles cover every sample (counted by hand).
    #[test]
    fn rows_and_statistics_as_cyclictest_counts_them() {
        let mut h = LatencyHistogram::new();
        for ns in [1_500, 1_900, 2_000, 7_999, 250_000] {
            h.record(ns);
        }
        let run = RunInfo { cmdline: "c".into(), start_time: "s".into(), end_time: "e".into() };
        let j = cyclictest_json(&[(1, h)], Some(10), run);
        let t = &j.thread["0"];
        let rows: Vec<(&str, u64)> = t.histogram.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(rows, [("1", 2), ("2", 1), ("7", 1)]);
        assert_eq!((t.cycles, t.min, t.max, t.cpu), (5, 1, 250, 1));
        assert!((t.avg - 52.68).abs() < 0.006, "{}", t.avg);
        assert_eq!(j.num_threads, 1);
    }
}
