//! `measure timer`: cyclictest's job. One measuring thread per CPU, pinned, real-time policy
//! (FIFO, RR, SCHED_DEADLINE as in rt-tests' cyclicdeadline, or OTHER), waking with absolute
//! `clock_nanosleep(CLOCK_MONOTONIC)`; latency = actual wake-up - programmed time.
//!
//! Honest accounting: when one wake-up comes after one or more further activations were due, each
//! of those activations is a sample with its own lateness (wake-up - its programmed time) and a
//! missed period; the next activation is the first one still in the future. Histograms are the
//! model's lossless `LatencyHistogram`. Memory is locked and `/dev/cpu_dma_latency` held at 0 for
//! the run; the scheduling of every thread is restored before it ends.

use crate::error::{Error, Result};
use crate::rt::{self, LinuxPolicy, Reservation, Sched};
use rtvirt_model::results::{CpuLatency, HistogramBucket, Results, TimerSection};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::Nanos;
use serde::Serialize;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest run accepted without `force`.
pub use crate::limits::MAX_DURATION_WITHOUT_FORCE;
/// Smallest interval accepted without `force` (below it the machine is mostly busy waking up).
pub const MIN_INTERVAL_WITHOUT_FORCE: Nanos = Nanos::from_us(50);

/// How to measure.
#[derive(Debug, Clone)]
pub struct TimerConfig {
    /// CPUs to measure on (one thread each).
    pub cpus: Vec<u32>,
    pub interval: Nanos,
    /// Real-time priority (fifo/rr).
    pub priority: u32,
    pub policy: LinuxPolicy,
    pub duration: Nanos,
    /// Emit per-interval statistics this often (None: no interval reports).
    pub interval_report: Option<Nanos>,
    /// Allow priority 99, intervals below 50us and durations above one hour.
    pub force: bool,
    /// Explain the late wake-ups from a kernel trace (`--explain`, `--break`).
    pub explain: Option<crate::explain::ExplainConfig>,
    /// Where a deadline run's exclusive cpusets are journaled before they are made (restored by
    /// `rtvirt host revert` after a kill -9); `None`: restored on drop only.
    pub state_dir: Option<std::path::PathBuf>,
}

impl Default for TimerConfig {
    fn default() -> Self {
        TimerConfig {
            cpus: crate::cpus::allowed(),
            interval: Nanos::from_ms(1),
            priority: 90,
            policy: LinuxPolicy::Fifo,
            duration: Nanos::from_secs(10),
            interval_report: None,
            force: false,
            explain: None,
            state_dir: None,
        }
    }
}

impl TimerConfig {
    /// Check every value; errors name the option.
    pub fn validate(&self) -> Result<()> {
        if self.cpus.is_empty() {
            return Err(Error::input("--cpus", "no CPU to measure on"));
        }
        let allowed = crate::cpus::allowed();
        if let Some(c) = self.cpus.iter().find(|c| !allowed.contains(c)) {
            return Err(Error::input(
                "--cpus",
                format!("CPU {c} does not exist or is not allowed (usable: {})", crate::cpus::format_list(&allowed)),
            ));
        }
        if self.interval.0 == 0 || (self.interval < MIN_INTERVAL_WITHOUT_FORCE && !self.force) {
            return Err(Error::input(
                "--interval",
                format!("{} is below {MIN_INTERVAL_WITHOUT_FORCE} (add --force to allow it)", self.interval),
            ));
        }
        crate::limits::check_duration("--duration", self.duration, self.force)?;
        if matches!(self.policy, LinuxPolicy::Fifo | LinuxPolicy::Rr) {
            rt::check_priority(self.priority, self.force)?;
        }
        if let Some(r) = self.interval_report {
            if r < self.interval {
                return Err(Error::input(
                    "--interval-report",
                    format!("{r} is shorter than the measuring interval {}", self.interval),
                ));
            }
        }
        Ok(())
    }

    fn sched(&self) -> Sched {
        match self.policy {
            LinuxPolicy::Fifo => Sched::Fifo(self.priority),
            LinuxPolicy::Rr => Sched::Rr(self.priority),
            LinuxPolicy::Other => Sched::Other,
            LinuxPolicy::Deadline => Sched::Deadline(deadline_reservation(self.interval)),
        }
    }
}

/// The SCHED_DEADLINE reservation of a measuring thread: deadline = period = interval, runtime a
/// tenth of it (at least 20us, at most half): far more than a wake-up needs.
pub fn deadline_reservation(interval: Nanos) -> Reservation {
    let runtime = (interval.0 / 10).max(20_000).min(interval.0 / 2);
    Reservation { runtime_ns: runtime, deadline_ns: interval.0, period_ns: interval.0 }
}

/// Per-interval statistics of one CPU.
#[derive(Debug, Clone, Serialize)]
pub struct CpuInterval {
    pub cpu: u32,
    pub count: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    pub missed_periods: u64,
}

/// One `--interval-report` line.
#[derive(Debug, Clone, Serialize)]
pub struct IntervalReport {
    pub r#type: &'static str,
    pub interval: u64,
    /// Time since the start of the run.
    pub t_ns: u64,
    pub count: u64,
    pub max_ns: u64,
    pub missed_periods: u64,
    pub cpus: Vec<CpuInterval>,
    /// CPUs without a single sample for [`STALL_INTERVALS`] or more report intervals in a row.
    pub stalled_cpus: Vec<u32>,
}

impl From<&IntervalReport> for rtvirt_model::results::Interval {
    /// The report as a result's `intervals` entry.
    fn from(report: &IntervalReport) -> rtvirt_model::results::Interval {
        let cpus = report
            .cpus
            .iter()
            .map(|c| rtvirt_model::results::CpuInterval {
                cpu: c.cpu,
                count: c.count,
                max_ns: Some(c.max_ns),
                mean_ns: Some(c.mean_ns),
                missed_periods: Some(c.missed_periods),
            })
            .collect();
        rtvirt_model::results::Interval {
            count: Some(report.count),
            cpus: Some(cpus),
            interval: Some(report.interval),
            max_ns: Some(report.max_ns),
            missed_periods: Some(report.missed_periods),
            stalled_cpus: Some(report.stalled_cpus.clone()),
            t_ns: Some(report.t_ns),
            r#type: Some(report.r#type.into()),
            ..Default::default()
        }
    }
}

/// Report intervals without samples after which a CPU's thread counts as stalled.
pub const STALL_INTERVALS: u32 = 2;

/// A stalled thread: no samples from `from_ns` for `intervals` report intervals.
pub use rtvirt_model::results::Stall;

/// Everything a run produced: the results document and the raw histograms.
#[derive(Debug)]
pub struct TimerRun {
    pub results: Results,
    pub per_cpu: Vec<(u32, LatencyHistogram)>,
    pub overall: LatencyHistogram,
    pub missed_periods: u64,
    pub stalls: Vec<Stall>,
    /// When the run started (CLOCK_MONOTONIC ns): the `_ns` times of the results count from it.
    pub start_ns: u64,
}

/// Counters a measuring thread shares with the reporter (lock-free), and for [`run_until`] the
/// interval's samples (the measuring thread never waits for that lock: see [`share`]).
#[derive(Default)]
struct Live {
    count: AtomicU64,
    sum: AtomicU64,
    max: AtomicU64,
    missed: AtomicU64,
    hist: Option<Mutex<LatencyHistogram>>,
}

impl Live {
    fn take(&self, cpu: u32) -> CpuInterval {
        let count = self.count.swap(0, Ordering::Relaxed);
        let sum = self.sum.swap(0, Ordering::Relaxed);
        CpuInterval {
            cpu,
            count,
            mean_ns: if count == 0 { 0.0 } else { sum as f64 / count as f64 },
            max_ns: self.max.swap(0, Ordering::Relaxed),
            missed_periods: self.missed.swap(0, Ordering::Relaxed),
        }
    }

    /// The samples shared since the last take, added to `into` (the lock is held for a swap).
    fn take_histogram(&self, into: &mut LatencyHistogram) {
        if let Some(shared) = &self.hist {
            let fresh = LatencyHistogram::new();
            let taken = std::mem::replace(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()), fresh);
            into.merge(&taken);
        }
    }
}

/// Hand `pending` samples to the reporter's histogram when its lock is free; otherwise they wait
/// for the next wake-up (a real-time thread never blocks on the reporter).
fn share(shared: &Mutex<LatencyHistogram>, pending: &mut Vec<u64>) {
    if let Ok(mut h) = shared.try_lock() {
        pending.drain(..).for_each(|v| h.record(v));
    }
}

/// What one measuring thread returns.
struct CpuOutcome {
    hist: LatencyHistogram,
    missed: u64,
    cpu_time_ns: u64,
    wakeups: u64,
}

/// Run the measurement (no interval reports).
pub fn run(cfg: &TimerConfig) -> Result<TimerRun> {
    run_with_reports(cfg, &mut |_| {})
}

/// Run the measurement, calling `on_report` every `cfg.interval_report`.
pub fn run_with_reports(cfg: &TimerConfig, on_report: &mut dyn FnMut(&IntervalReport)) -> Result<TimerRun> {
    run_reporting(cfg, false, &mut |report, _| {
        on_report(report);
        ControlFlow::Continue(())
    })
}

/// Run the measurement, handing `on_report` every `cfg.interval_report` the report and the
/// interval's samples (every CPU's); the run stops early (within [`rt::STOP_POLL_NS`]) when it
/// answers `Break` (`measure timer --until-confident`).
pub fn run_until(
    cfg: &TimerConfig,
    on_report: &mut dyn FnMut(&IntervalReport, &LatencyHistogram) -> ControlFlow<()>,
) -> Result<TimerRun> {
    run_reporting(cfg, true, on_report)
}

type OnReport<'a> = dyn FnMut(&IntervalReport, &LatencyHistogram) -> ControlFlow<()> + 'a;

fn run_reporting(cfg: &TimerConfig, histograms: bool, on_report: &mut OnReport) -> Result<TimerRun> {
    cfg.validate()?;
    let _mem = rt::MemoryLock::acquire()?;
    let _dma = rt::DmaLatency::hold_zero()?;
    let exclusive = match cfg.policy {
        LinuxPolicy::Deadline => Some(match &cfg.state_dir {
            Some(dir) => rtvirt_os::cgroup::ExclusiveCpus::create_journaled(&cfg.cpus, dir)?,
            None => rtvirt_os::cgroup::ExclusiveCpus::create(&cfg.cpus)?,
        }),
        _ => None,
    };
    // Tracing is set up before the run's clock starts (creating the instance takes tens of ms).
    let mut explainer = cfg.explain.clone().map(|e| crate::explain::Explainer::start(e, &cfg.cpus));
    let start = rt::now_ns() + 20_000_000; // time for every thread to set itself up
    if let Some(e) = explainer.as_mut() {
        e.set_run_start(start);
    }
    let end = start + cfg.duration.0;
    let stop = Arc::new(AtomicBool::new(false));
    let watchdog = rt::Watchdog::start(stop.clone(), end, Duration::from_secs(2));
    let lives: Vec<Live> =
        cfg.cpus.iter().map(|_| Live { hist: histograms.then(Default::default), ..Live::default() }).collect();
    let sink = explainer.as_ref().map(|e| e.sink());
    let measured_all = AtomicBool::new(false);
    let (outcomes, stalls, explained) = std::thread::scope(|s| {
        let explaining = explainer.map(|e| {
            let done = &measured_all;
            std::thread::Builder::new()
                .name("rtvirt-explain".into())
                .spawn_scoped(s, move || e.run(done))
                .expect("spawn explaining thread")
        });
        let handles: Vec<_> = cfg
            .cpus
            .iter()
            .zip(&lives)
            .map(|(&cpu, live)| {
                let (wd, stop, excl) = (&watchdog, &stop, exclusive.as_ref());
                let sink = sink.clone();
                std::thread::Builder::new()
                    .name(format!("rtvirt-timer{cpu}"))
                    .spawn_scoped(s, move || measure_cpu(cpu, cfg, excl, wd, stop, live, sink, start, end))
                    .expect("spawn measuring thread")
            })
            .collect();
        let stalls = report_loop(cfg, &lives, &stop, start, end, on_report);
        let outcomes: Vec<Result<CpuOutcome>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::Failed("measuring thread panicked".into()))))
            .collect();
        measured_all.store(true, Ordering::Release);
        let explained = explaining.map(|h| h.join().map_err(|_| Error::Failed("explaining thread panicked".into())));
        (outcomes, stalls, explained)
    });
    let runaways = watchdog.finish();
    drop(exclusive);
    let outcomes = outcomes.into_iter().collect::<Result<Vec<_>>>()?;
    let mut run = assemble(cfg, outcomes, stalls, runaways, start);
    run.results.explain = explained.transpose()?;
    Ok(run)
}

/// Sleep until the end (or a stop), emitting interval reports and detecting stalls.
fn report_loop(
    cfg: &TimerConfig,
    lives: &[Live],
    stop: &AtomicBool,
    start: u64,
    end: u64,
    on_report: &mut OnReport,
) -> Vec<Stall> {
    let step = cfg.interval_report.map(|n| n.0).unwrap_or(u64::MAX);
    let mut silent = vec![0u32; lives.len()];
    let mut stalls: Vec<Stall> = Vec::new();
    let mut k = 0u64;
    loop {
        let next = start.saturating_add(step.saturating_mul(k + 1)).min(end);
        rt::sleep_until_or_stopped(next, stop);
        if rtvirt_os::signals::interrupted() {
            stop.store(true, Ordering::SeqCst);
        }
        if step != u64::MAX && rt::now_ns() >= next {
            k += 1;
            let cpus: Vec<CpuInterval> = cfg.cpus.iter().zip(lives).map(|(&c, l)| l.take(c)).collect();
            for (i, c) in cpus.iter().enumerate() {
                silent[i] = if c.count == 0 { silent[i] + 1 } else { 0 };
                if silent[i] == STALL_INTERVALS {
                    stalls.push(Stall {
                        cpu: c.cpu,
                        from_ns: next - start - step * STALL_INTERVALS as u64,
                        intervals: silent[i],
                    });
                } else if silent[i] > STALL_INTERVALS {
                    if let Some(s) = stalls.iter_mut().rev().find(|s| s.cpu == c.cpu) {
                        s.intervals = silent[i];
                    }
                }
            }
            let report = IntervalReport {
                r#type: "interval",
                interval: k,
                t_ns: next - start,
                count: cpus.iter().map(|c| c.count).sum(),
                max_ns: cpus.iter().map(|c| c.max_ns).max().unwrap_or(0),
                missed_periods: cpus.iter().map(|c| c.missed_periods).sum(),
                stalled_cpus: cpus
                    .iter()
                    .zip(&silent)
                    .filter(|(_, &n)| n >= STALL_INTERVALS)
                    .map(|(c, _)| c.cpu)
                    .collect(),
                cpus,
            };
            let mut samples = LatencyHistogram::new();
            lives.iter().for_each(|l| l.take_histogram(&mut samples));
            if on_report(&report, &samples).is_break() {
                stop.store(true, Ordering::SeqCst);
            }
        }
        if next >= end || stop.load(Ordering::Relaxed) {
            return stalls;
        }
    }
}

/// The measuring thread of one CPU.
#[allow(clippy::too_many_arguments)]
fn measure_cpu(
    cpu: u32,
    cfg: &TimerConfig,
    excl: Option<&rtvirt_os::cgroup::ExclusiveCpus>,
    wd: &rt::Watchdog,
    stop: &AtomicBool,
    live: &Live,
    sink: Option<crate::explain::Sink>,
    start: u64,
    end: u64,
) -> Result<CpuOutcome> {
    let fail = |e: Error| {
        stop.store(true, Ordering::SeqCst);
        e
    };
    if let Some(x) = excl {
        x.enter(cpu).map_err(|e| fail(e.into()))?;
    }
    rt::pin_current_thread(cpu).map_err(fail)?;
    wd.register_current();
    rt::set_sched(0, cfg.sched()).map_err(fail)?;
    let cpu0 = rt::thread_cpu_ns();
    let watch = sink.map(|sink| Watch {
        sink,
        cpu,
        tid: rt::gettid() as u32,
        break_at: cfg.explain.as_ref().and_then(|e| e.break_at).map(|b| b.0),
    });
    let out = sample_loop(cfg.interval.0, stop, live, watch.as_ref(), start, end);
    let cpu_time_ns = rt::thread_cpu_ns() - cpu0;
    let _ = rt::set_sched(0, Sched::Other);
    Ok(CpuOutcome { cpu_time_ns, ..out })
}

/// A measuring thread's link to the explainer.
struct Watch {
    sink: crate::explain::Sink,
    cpu: u32,
    tid: u32,
    /// `--break`: stop the run at the first wake-up later than this.
    break_at: Option<u64>,
}

impl Watch {
    /// Hand the wake-up over; true when it breaks the run.
    fn wakeup(&self, expected: u64, woke: u64) -> bool {
        self.sink.send(crate::explain::Wakeup { cpu: self.cpu, tid: self.tid, expected, woke });
        self.break_at.is_some_and(|b| woke.saturating_sub(expected) > b)
    }
}

/// The wake-up loop: sleep to the programmed time, record the lateness of every activation due.
fn sample_loop(
    interval: u64,
    stop: &AtomicBool,
    live: &Live,
    watch: Option<&Watch>,
    start: u64,
    end: u64,
) -> CpuOutcome {
    let mut hist = LatencyHistogram::new();
    let (mut missed, mut wakeups) = (0u64, 0u64);
    let mut pending = Vec::new();
    let mut next = start + interval;
    while next <= end && rt::sleep_until_or_stopped(next, stop) {
        let now = rt::now_ns();
        wakeups += 1;
        let expected = next;
        let due = account_wakeup(now, &mut next, interval, end, &mut hist, &mut missed, live);
        if let Some(shared) = &live.hist {
            pending.extend((0..due).map(|k| now.saturating_sub(expected + k * interval)));
            share(shared, &mut pending);
        }
        if watch.is_some_and(|w| w.wakeup(expected, now)) {
            stop.store(true, Ordering::SeqCst);
        }
    }
    CpuOutcome { hist, missed, cpu_time_ns: 0, wakeups }
}

/// Record the samples of one wake-up at `now` for the activation due at `*next` and every later
/// activation already due (up to the end of the run); advance `*next` past them.
/// Returns the number of activations accounted (1 + missed).
fn account_wakeup(
    now: u64,
    next: &mut u64,
    interval: u64,
    end: u64,
    hist: &mut LatencyHistogram,
    missed: &mut u64,
    live: &Live,
) -> u64 {
    let due_now = if now < *next { 1 } else { (now - *next) / interval + 1 };
    let due_in_run = end.saturating_sub(*next) / interval + 1;
    let due = due_now.min(due_in_run);
    for k in 0..due {
        let lat = now.saturating_sub(*next + k * interval);
        hist.record(lat);
        live.count.fetch_add(1, Ordering::Relaxed);
        live.sum.fetch_add(lat, Ordering::Relaxed);
        live.max.fetch_max(lat, Ordering::Relaxed);
    }
    *missed += due - 1;
    live.missed.fetch_add(due - 1, Ordering::Relaxed);
    *next += due * interval;
    due
}

fn assemble(
    cfg: &TimerConfig,
    outcomes: Vec<CpuOutcome>,
    stalls: Vec<Stall>,
    runaways: Vec<i32>,
    start: u64,
) -> TimerRun {
    let measured = rt::now_ns().saturating_sub(start).min(cfg.duration.0);
    let mut results = Results::new("timer", measured);
    let mut overall = LatencyHistogram::new();
    let (mut missed, mut cpu_time, mut samples, mut wakeups) = (0, 0, 0, 0);
    let mut per_cpu = Vec::new();
    for (&cpu, o) in cfg.cpus.iter().zip(outcomes) {
        overall.merge(&o.hist);
        missed += o.missed;
        cpu_time += o.cpu_time_ns;
        samples += o.hist.count();
        wakeups += o.wakeups;
        results.cpus.push(CpuLatency {
            cpu,
            latency_ns: o.hist.summary(),
            cpu_time_ns: Some(o.cpu_time_ns),
            histogram_ns: Some(buckets(&o.hist)),
            missed_periods: Some(o.missed),
            wakeups: Some(o.wakeups),
            ..Default::default()
        });
        per_cpu.push((cpu, o.hist));
    }
    results.latency_ns = Some(overall.summary());
    results.histogram_ns = Some(buckets(&overall));
    results.timer = Some(TimerSection {
        // Per wake-up (cyclictest's unit of work): a late wake-up that accounts missed activations
        // as extra samples did the work of one.
        cpu_ns_per_sample: Some(cpu_time as f64 / samples.max(1) as f64),
        cpu_ns_per_wakeup: Some(cpu_time as f64 / wakeups.max(1) as f64),
        interval_ns: Some(cfg.interval.0),
        missed_periods: Some(missed),
        policy: Some(cfg.policy.as_str().into()),
        priority: matches!(cfg.policy, LinuxPolicy::Fifo | LinuxPolicy::Rr).then_some(cfg.priority),
        reservation: (cfg.policy == LinuxPolicy::Deadline).then(|| reservation_of(&deadline_reservation(cfg.interval))),
        stalls: Some(stalls.clone()),
    });
    if !runaways.is_empty() {
        results.runaway_threads_demoted = Some(runaways);
    }
    results.interrupted = rtvirt_os::signals::interrupted();
    results.environment = Some(crate::environment::collect());
    TimerRun { results, per_cpu, overall, missed_periods: missed, stalls, start_ns: start }
}

/// Lossless buckets `[[value_ns, count], ...]` (what `rtvirt report` reads as `histogram_ns`):
/// separate runs can be merged by adding counts.
fn buckets(histogram: &LatencyHistogram) -> Vec<HistogramBucket> {
    HistogramBucket::from_pairs(histogram.buckets())
}

/// The results' form of a SCHED_DEADLINE reservation.
pub fn reservation_of(reservation: &Reservation) -> rtvirt_model::results::Reservation {
    rtvirt_model::results::Reservation {
        deadline_ns: reservation.deadline_ns,
        period_ns: reservation.period_ns,
        runtime_ns: reservation.runtime_ns,
    }
}

/// Rows of a cyclictest histogram written at most (1 us each); later samples are overflows, as in
/// cyclictest (`-h`). Our own histograms keep every sample.
pub const CYCLICTEST_HISTOGRAM_ROWS: u64 = 100_000;

/// Write per-CPU histograms in cyclictest's `--histogram` output format (1 us bins, one column per
/// thread, then Total/Min/Avg/Max/Overflows lines): `rows` rows as cyclictest's `-h rows`, or
/// (None) as many as the largest sample needs, at most [`CYCLICTEST_HISTOGRAM_ROWS`].
pub fn write_cyclictest_histogram(
    out: &mut dyn std::io::Write,
    per_cpu: &[(u32, LatencyHistogram)],
    rows: Option<u64>,
) -> std::io::Result<()> {
    let rows =
        rows.unwrap_or_else(|| per_cpu.iter().filter_map(|(_, h)| h.max()).map(|m| m / 1000 + 1).max().unwrap_or(1));
    let rows = rows.clamp(1, CYCLICTEST_HISTOGRAM_ROWS);
    let bins: Vec<(Vec<u64>, u64)> = per_cpu
        .iter()
        .map(|(_, h)| {
            let mut v = vec![0u64; rows as usize];
            let mut overflow = 0;
            for (value, n) in h.buckets() {
                match v.get_mut((value / 1000) as usize) {
                    Some(slot) => *slot += n,
                    None => overflow += n,
                }
            }
            (v, overflow)
        })
        .collect();
    writeln!(out, "# Histogram")?;
    for r in 0..rows as usize {
        let cols: Vec<String> = bins.iter().map(|(v, _)| format!("{:06}", v[r])).collect();
        writeln!(out, "{r:06} {}", cols.join("\t"))?;
    }
    let line = |f: &dyn Fn(&LatencyHistogram) -> u64| {
        per_cpu.iter().map(|(_, h)| format!("{:05}", f(h))).collect::<Vec<_>>().join(" ")
    };
    writeln!(
        out,
        "# Total: {}",
        // as cyclictest: the samples in the rows (overflows are counted apart)
        per_cpu
            .iter()
            .zip(&bins)
            .map(|((_, h), (_, overflow))| format!("{:09}", h.count() - overflow))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    writeln!(out, "# Min Latencies: {}", line(&|h| h.min().unwrap_or(0) / 1000))?;
    writeln!(out, "# Avg Latencies: {}", line(&|h| (h.mean() / 1000.0).round() as u64))?;
    writeln!(out, "# Max Latencies: {}", line(&|h| h.max().unwrap_or(0) / 1000))?;
    writeln!(
        out,
        "# Histogram Overflows: {}",
        bins.iter().map(|(_, o)| format!("{o:05}")).collect::<Vec<_>>().join(" ")
    )?;
    writeln!(out, "# Histogram Overflow at cycle number:")?;
    for (i, _) in per_cpu.iter().enumerate() {
        writeln!(out, "# Thread {i}:")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measuring thread between two wake-ups a minute apart sees a stop within a stop poll.
    #[test]
    fn a_long_interval_does_not_delay_a_stop() {
        let (stop, live) = (AtomicBool::new(false), Live::default());
        let start = rt::now_ns();
        let out = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::SeqCst);
            });
            sample_loop(60_000_000_000, &stop, &live, None, start, start + 600_000_000_000)
        });
        let took = rt::now_ns() - start;
        assert!(took < 200_000_000 + 2 * rt::STOP_POLL_NS, "stopped after {took} ns");
        assert_eq!(out.wakeups, 0);
    }

    #[test]
    fn a_late_wakeup_counts_every_missed_activation() {
        let (mut h, mut missed, live) = (LatencyHistogram::new(), 0, Live::default());
        let mut next = 1_000;
        // Woken 3.5 intervals late: activations at 1000, 2000, 3000, 4000 are all due.
        assert_eq!(account_wakeup(4_500, &mut next, 1_000, 100_000, &mut h, &mut missed, &live), 4);
        assert_eq!((h.count(), missed, next), (4, 3, 5_000));
        assert_eq!((h.min(), h.max()), (Some(500), Some(3_500)));
        // An on-time wake-up is one sample, no miss.
        assert_eq!(account_wakeup(5_010, &mut next, 1_000, 100_000, &mut h, &mut missed, &live), 1);
        assert_eq!((h.count(), missed, next), (5, 3, 6_000));
        assert_eq!(live.take(0).count, 5);
        // Activations after the end of the run (at 7000) are not accounted.
        assert_eq!(account_wakeup(9_999, &mut next, 1_000, 7_000, &mut h, &mut missed, &live), 2);
        assert_eq!((h.count(), missed), (7, 4));
    }

    #[test]
    fn silent_cpus_are_reported_as_stalls() {
        // CPU 0 records nothing (a stalled thread), CPU 1 one sample per report interval.
        let cfg = TimerConfig {
            cpus: vec![0, 1],
            interval: Nanos::from_ms(1),
            interval_report: Some(Nanos::from_ms(20)),
            ..Default::default()
        };
        let lives = [Live::default(), Live::default()];
        let stop = AtomicBool::new(false);
        let start = rt::now_ns();
        let mut reports = Vec::new();
        let stalls = report_loop(&cfg, &lives, &stop, start, start + 100_000_000, &mut |r, _| {
            reports.push(r.clone());
            lives[1].count.fetch_add(1, Ordering::Relaxed);
            ControlFlow::Continue(())
        });
        assert_eq!(reports.len(), 5);
        // CPU 0 silent from the start; CPU 1 was silent for one interval only: not a stall.
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        let s0 = stalls.iter().find(|s| s.cpu == 0).unwrap();
        assert_eq!((s0.from_ns, s0.intervals), (0, 5));
        assert_eq!(reports[4].stalled_cpus, vec![0]);
    }

    /// `run_until`'s reporter hands over each interval's shared samples (every CPU's, each once)
    /// and stops the run at the first `Break`.
    #[test]
    fn a_report_sees_the_intervals_samples_and_can_stop_the_run() {
        let cfg = TimerConfig { cpus: vec![0, 1], interval_report: Some(Nanos::from_ms(20)), ..Default::default() };
        let lives: Vec<Live> = (0..2).map(|_| Live { hist: Some(Default::default()), ..Live::default() }).collect();
        let mut pending = vec![1_000, 2_000];
        share(lives[0].hist.as_ref().unwrap(), &mut pending);
        assert!(pending.is_empty());
        share(lives[1].hist.as_ref().unwrap(), &mut vec![5_000]);
        let stop = AtomicBool::new(false);
        let start = rt::now_ns();
        let mut seen = Vec::new();
        report_loop(&cfg, &lives, &stop, start, start + 10_000_000_000, &mut |_, h| {
            seen.push((h.count(), h.max()));
            if seen.len() == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(seen, [(3, Some(5_000)), (0, None)]);
        assert!(stop.load(Ordering::SeqCst));
    }

    #[test]
    fn validation_names_the_option() {
        let bad = TimerConfig { interval: Nanos::from_us(10), ..Default::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("--interval"));
        let bad = TimerConfig { priority: 99, ..Default::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("--force"));
        let bad = TimerConfig { cpus: vec![9999], ..Default::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("--cpus"));
    }

    #[test]
    fn cyclictest_histogram_format() {
        let mut h = LatencyHistogram::new();
        for v in [1_500, 1_600, 3_200] {
            h.record(v);
        }
        let mut out = Vec::new();
        write_cyclictest_histogram(&mut out, &[(1, h.clone())], None).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("# Histogram\n000000 000000\n000001 000002\n000002 000000\n000003 000001\n"),
            "{text}"
        );
        assert!(text.contains("# Total: 000000003"));
        assert!(text.contains("# Max Latencies: 00003"));
        // cyclictest's -h 2: two rows, the 3.2 us sample an overflow, left out of the total
        let mut out = Vec::new();
        write_cyclictest_histogram(&mut out, &[(1, h)], Some(2)).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("# Histogram\n000000 000000\n000001 000002\n# Total: 000000002\n"), "{text}");
        assert!(text.contains("# Histogram Overflows: 00001"), "{text}");
    }
}
