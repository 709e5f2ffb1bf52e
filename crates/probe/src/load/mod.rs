//! Interference loads ("interference as data"): CPU hogs, kernel stress (system-call and
//! interrupt heavy loops), LLC thrashing (memcpy over a buffer larger than the last-level cache)
//! and network floods (TCP/UDP between a sender and a receiver on loopback, or wherever the
//! process's network namespace is). Workers are normal SCHED_OTHER threads, optionally pinned and
//! rate limited; what they achieved (ops/s, bytes/s, the CPUs they really ran on) is reported as a
//! [`LoadReport`] and recorded in the environment of the measurement they accompanied.
//!
//! Spec syntax (`--load`): `KIND[:N][@CPUS]`, e.g. `cpu:2@1`, `cache`, `net:1@0`, `syscalls:2`.

mod kinds;
mod meter;

pub use kinds::LoadKind;
use meter::Meter;

use crate::error::{Error, Result};
use crate::rt;
use rtvirt_model::Nanos;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A load to run: kind, number of workers, CPUs to pin them to (round robin), optional rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSpec {
    pub kind: LoadKind,
    pub workers: u32,
    pub cpus: Option<Vec<u32>>,
    /// Total rate over all workers: ops/s (cpu, syscalls) or bytes/s (cache, net). None: max.
    pub rate: Option<f64>,
}

/// Workers accepted without `--force` per online CPU.
pub const MAX_WORKERS_PER_CPU_WITHOUT_FORCE: u32 = 4;

impl LoadSpec {
    /// Parse `KIND[:N][@CPUS]`.
    pub fn parse(text: &str) -> std::result::Result<LoadSpec, String> {
        let (head, cpus) = match text.split_once('@') {
            Some((h, c)) => (h, Some(crate::cpus::parse_list(c)?)),
            None => (text, None),
        };
        let (kind, workers) = match head.split_once(':') {
            Some((k, n)) => (
                k,
                n.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                    format!("\"{n}\" in \"{text}\" is not a worker count (expected a positive integer)")
                })?,
            ),
            None => (head, cpus.as_ref().map(|c| c.len() as u32).unwrap_or(1)),
        };
        Ok(LoadSpec { kind: LoadKind::parse(kind.trim())?, workers, cpus, rate: None })
    }

    /// Check CPUs and worker count; `option` names the flag in errors.
    pub fn validate(&self, option: &str, force: bool) -> Result<()> {
        if let Some(c) = &self.cpus {
            crate::cpus::resolve(option, Some(&crate::cpus::format_list(c)))?;
        }
        let limit = MAX_WORKERS_PER_CPU_WITHOUT_FORCE * crate::cpus::online().len() as u32;
        if self.workers > limit && !force {
            return Err(Error::input(
                option,
                format!("{} workers is more than {limit} (4 per CPU); add --force", self.workers),
            ));
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(Error::input("--rate", format!("{r} is not a positive rate")));
            }
        }
        Ok(())
    }
}

/// What a load achieved.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LoadReport {
    pub kind: LoadKind,
    pub workers: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus_requested: Option<String>,
    /// CPUs the workers were really seen running on.
    pub cpus_ran_on: String,
    pub duration_ns: u64,
    pub ops: u64,
    pub ops_per_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_rate: Option<f64>,
    /// Unit of `ops` ("iterations", "bytes", ...).
    pub unit: &'static str,
}

/// A load running in the background until [`RunningLoad::stop`].
pub struct RunningLoad {
    spec: LoadSpec,
    stop: Arc<AtomicBool>,
    meter: Arc<Meter>,
    threads: Vec<std::thread::JoinHandle<()>>,
    start: u64,
    unit: &'static str,
    bytes: bool,
}

/// Start `spec` (validated by the caller) in background threads.
pub fn start(spec: &LoadSpec) -> Result<RunningLoad> {
    let stop = Arc::new(AtomicBool::new(false));
    let meter = Arc::new(Meter::default());
    let per_worker_rate = spec.rate.map(|r| r / spec.workers.max(1) as f64);
    let mut threads = Vec::new();
    let mut fail = None;
    for i in 0..spec.workers {
        let cpu = spec.cpus.as_ref().map(|c| c[i as usize % c.len()]);
        match kinds::spawn(spec.kind, i, cpu, per_worker_rate, stop.clone(), meter.clone()) {
            Ok(mut t) => threads.append(&mut t),
            Err(e) => {
                fail = Some(e);
                break;
            }
        }
    }
    let (unit, bytes) = kinds::unit(spec.kind);
    let load = RunningLoad { spec: spec.clone(), stop, meter, threads, start: rt::now_ns(), unit, bytes };
    match fail {
        Some(e) => {
            load.stop();
            Err(e)
        }
        None => Ok(load),
    }
}

impl RunningLoad {
    /// Stop every worker and report what was achieved.
    pub fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            let _ = t.join();
        }
        let duration_ns = rt::now_ns() - self.start;
        let ops = self.meter.ops.load(Ordering::Relaxed);
        let ran = self.meter.cpus();
        let per_s = ops as f64 / (duration_ns as f64 / 1e9).max(1e-9);
        LoadReport {
            kind: self.spec.kind,
            workers: self.spec.workers,
            cpus_requested: self.spec.cpus.as_ref().map(|c| crate::cpus::format_list(c)),
            cpus_ran_on: crate::cpus::format_list(&ran),
            duration_ns,
            ops,
            ops_per_s: per_s,
            bytes_per_s: self.bytes.then_some(per_s),
            requested_rate: self.spec.rate,
            unit: self.unit,
        }
    }
}

/// Run `spec` in the foreground for `duration` (or until Ctrl-C).
pub fn run_for(spec: &LoadSpec, duration: Nanos) -> Result<LoadReport> {
    let load = start(spec)?;
    let end = rt::now_ns() + duration.0;
    while rt::now_ns() < end && !rtvirt_os::signals::interrupted() {
        rt::sleep_until((rt::now_ns() + 50_000_000).min(end));
    }
    Ok(load.stop())
}

/// Start every load of a measurement; stops those already started if one fails.
pub fn start_all(specs: &[LoadSpec]) -> Result<Vec<RunningLoad>> {
    let mut running = Vec::new();
    for s in specs {
        match start(s) {
            Ok(l) => running.push(l),
            Err(e) => {
                running.into_iter().for_each(|l| {
                    l.stop();
                });
                return Err(e);
            }
        }
    }
    Ok(running)
}

/// Stop loads and turn their reports into the `environment.load` entries of a result.
pub fn stop_all(running: Vec<RunningLoad>) -> Vec<rtvirt_model::results::LoadReport> {
    running.into_iter().map(|l| l.stop().into()).collect()
}

impl From<LoadReport> for rtvirt_model::results::LoadReport {
    fn from(report: LoadReport) -> rtvirt_model::results::LoadReport {
        rtvirt_model::results::LoadReport {
            kind: rtvirt_model::vocab::LoadKind::from(report.kind.as_str()),
            workers: report.workers,
            cpus_requested: report.cpus_requested,
            cpus_ran_on: report.cpus_ran_on,
            duration_ns: report.duration_ns,
            ops: report.ops,
            ops_per_s: report.ops_per_s,
            bytes_per_s: report.bytes_per_s,
            requested_rate: report.requested_rate,
            unit: report.unit.into(),
            r#where: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        let s = LoadSpec::parse("cpu:2@0-1").unwrap();
        assert_eq!((s.kind, s.workers, s.cpus), (LoadKind::Cpu, 2, Some(vec![0, 1])));
        assert_eq!(LoadSpec::parse("cache@1").unwrap().workers, 1);
        assert_eq!(LoadSpec::parse("net").unwrap().kind, LoadKind::Net);
        for bad in ["disk", "cpu:0", "cpu:x", "cpu@", "cpu@a"] {
            assert!(LoadSpec::parse(bad).is_err(), "{bad}");
        }
        assert!(LoadSpec::parse("cpu:1000").unwrap().validate("--load", false).is_err());
        assert!(LoadSpec::parse("cpu@999").unwrap().validate("--load", false).is_err());
    }

    fn run_briefly(text: &str, rate: Option<f64>) -> LoadReport {
        let mut spec = LoadSpec::parse(text).unwrap();
        spec.rate = rate;
        run_for(&spec, Nanos::from_ms(300)).unwrap()
    }

    #[test]
    fn every_kind_does_real_work_on_the_requested_cpu() {
        let cpu = *crate::cpus::allowed().last().unwrap();
        for kind in ["cpu", "syscalls", "cache", "net", "net-udp"] {
            let r = run_briefly(&format!("{kind}:1@{cpu}"), None);
            assert!(r.ops > 0, "{kind}: {r:?}");
            assert_eq!(r.cpus_ran_on, cpu.to_string(), "{kind}: {r:?}");
        }
    }

    #[test]
    fn meter_sees_every_cpu_including_those_above_63() {
        let m = Meter::default();
        for cpu in [3, 64, 70, 1023, 1024] {
            m.ran_on(cpu);
        }
        assert_eq!(m.cpus(), [3, 64, 70, 1023], "1024 is beyond CPU_SETSIZE");
        assert_eq!(m.ops.load(Ordering::Relaxed), 0);
        m.add(5);
        assert_eq!(m.ops.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn rate_limit_is_respected() {
        let r = run_briefly("syscalls:1", Some(1000.0));
        // 300 ms at 1000 ops/s: about 300 ops, never far above.
        assert!(r.ops <= 400 && r.ops >= 50, "{r:?}");
    }
}
