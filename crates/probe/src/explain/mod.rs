//! `--explain`: why the late samples of a measurement were late, from the kernel's own trace.
//!
//! A tracing instance of rtvirt's own (rtvirt-os's `tracefs`) records scheduler, IRQ, softirq,
//! hrtimer and interrupt-vector events on the measured CPUs into per-CPU buffers of a fixed size
//! ([`ExplainConfig::buffer_kb`]). An explainer thread streams them out of `trace_pipe_raw`
//! ([`decode`]) while the measurement runs and keeps only the events since the last wake-up of
//! each CPU, so memory stays bounded however long the run. The measuring threads hand it every
//! wake-up (programmed expiry, return time) through a bounded queue that never blocks them; a
//! wake-up later than the threshold (`--explain-above`, else the p99 of the wake-ups so far) is
//! split into causes ([`attribute`]), the worst [`ExplainConfig::max_samples`] are kept. At the
//! end the threshold becomes the run's p99 and the kept samples below it are dropped
//! (rtla timerlat's auto-analysis, over the whole run). `--break` ([`ExplainConfig::break_at`],
//! cyclictest's `-b`) stops the run at the first wake-up later than it, stops tracing there and
//! keeps the whole raw trace ([`break_trace`]).
//!
//! Everything that could not be explained is said: no tracefs (the measurement runs anyway), an
//! absent event, events the ring buffers lost, wake-ups the explainer could not examine.

pub mod attribute;
pub mod break_trace;
pub mod clock_sync;
mod config;
pub mod decode;
pub mod ipi;
pub mod jobs;
pub mod kvm_exit;
pub mod net;
pub mod vcpu;

pub use config::ExplainConfig;

use attribute::{CpuState, Timed, Window};
use decode::{Decoder, Event};
use rtvirt_model::results::{Cause, ExplainSection, ExplainedSample};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_os::tracefs::{CpuReader, Instance};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Duration;

/// Wake-ups seen before the rolling p99 is trusted (every one of them is explained).
const WARMUP_SAMPLES: u64 = 100;
/// Wake-ups waiting for the explainer, at most (a full queue drops, and says so).
const QUEUE: usize = 65_536;
/// Events kept per CPU at most when the explainer falls behind.
const MAX_EVENTS_PER_CPU: usize = 1_000_000;
/// How often the explainer drains the buffers.
const POLL: Duration = Duration::from_millis(5);

/// One wake-up of a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wakeup {
    pub cpu: u32,
    pub tid: u32,
    pub expected: u64,
    pub woke: u64,
}

/// The measuring threads' end of the queue: never blocks.
#[derive(Clone)]
pub struct Sink {
    tx: SyncSender<Wakeup>,
    dropped: std::sync::Arc<AtomicU64>,
}

impl Sink {
    pub fn send(&self, w: Wakeup) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(w) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A running capture: the instance, its readers and what the explainer has gathered.
pub struct Explainer {
    cfg: ExplainConfig,
    capture: Option<Capture>,
    rx: Receiver<Wakeup>,
    sink: Sink,
    section: ExplainSection,
    run_start: u64,
    latencies: LatencyHistogram,
    threshold: u64,
    /// The guest's line to the host and the handshake before the run.
    clock: Option<clock_sync::Line>,
}

/// Fields drop in order: the readers close before the instance is removed, the IPI instance
/// before the main one (which may have mounted tracefs).
struct Capture {
    cpus: Vec<CpuTrace>,
    /// Who sent the IPIs the measured CPUs handled ([`ipi`]); why not, when not.
    ipi: Result<ipi::Senders, String>,
    instance: Instance,
    decoder: Decoder,
    lost_in_pages: u64,
    /// `--break`: every page read, the newest `buffer_kb` per CPU.
    raw: Option<break_trace::RawKeeper>,
    /// Events whose kernel-side filter could not be set.
    unfiltered: Vec<String>,
}

struct CpuTrace {
    reader: CpuReader,
    front: CpuState,
    events: VecDeque<Timed>,
    /// Time of the newest event read.
    watermark: u64,
    pending: VecDeque<Wakeup>,
    idle: IdleSwitches,
}

/// Switches into and out of the idle task seen on a CPU: some kernels record none out of it on
/// some CPUs (this host's, on CPU 1), which [`attribute`] works around and the section says.
#[derive(Debug, Default, Clone, Copy)]
struct IdleSwitches {
    into: u64,
    out_of: u64,
}

impl IdleSwitches {
    fn count(&mut self, event: &Event) {
        if let Event::Switch { prev_pid, next_pid, .. } = *event {
            self.into += u64::from(next_pid == 0);
            self.out_of += u64::from(prev_pid == 0);
        }
    }

    /// Enough switches into idle to tell, and not one out of it.
    fn exits_untraced(&self) -> bool {
        self.into >= 20 && self.out_of == 0
    }
}

impl Explainer {
    /// Start tracing `cpus`. Without tracefs (or its events) the measurement still runs: the
    /// section then says what could not be explained and why.
    pub fn start(cfg: ExplainConfig, cpus: &[u32]) -> Explainer {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let mut section = ExplainSection::default();
        let capture = match Capture::start(&cfg, cpus) {
            Ok(c) => {
                section.events_present = c.instance.present.clone();
                section.events_absent = c.instance.absent.clone();
                section.limitations = limitations_of(&c.instance);
                section.limitations.extend(c.unfiltered.iter().cloned());
                match &c.ipi {
                    Ok(senders) => section.events_present.extend(senders.present().iter().cloned()),
                    Err(why) => section.limitations.push(format!("the senders of IPIs are not named: {why}")),
                }
                Some(c)
            }
            Err(why) => {
                section.limitations.push(format!("kernel tracing unavailable, no sample explained: {why}"));
                None
            }
        };
        let clock = cfg
            .clock_sync
            .as_ref()
            .and_then(|device| clock_sync::Line::open(device, &mut section.limitations, "no host-side causes"));
        Explainer {
            cfg,
            clock,
            capture,
            rx,
            sink: Sink { tx, dropped: Default::default() },
            section,
            run_start: 0,
            latencies: LatencyHistogram::new(),
            threshold: 0,
        }
    }

    /// The run's start (CLOCK_MONOTONIC ns): times in the section count from it.
    pub fn set_run_start(&mut self, start: u64) {
        self.run_start = start;
    }

    /// The queue the measuring threads hand their wake-ups to.
    pub fn sink(&self) -> Sink {
        self.sink.clone()
    }

    /// Stream and explain until `done` is set (the measuring threads have ended), then finish.
    pub fn run(mut self, done: &AtomicBool) -> ExplainSection {
        self.keep_off_measured_cpus();
        while !done.load(Ordering::Acquire) {
            std::thread::sleep(POLL);
            self.step(false);
        }
        self.step(true);
        self.finish()
    }

    /// Run on the CPUs not measured when there are any: reading a CPU's ring buffer from that
    /// CPU would delay its wake-ups (and the reader is not what the user wants explained).
    fn keep_off_measured_cpus(&mut self) {
        let Some(c) = &self.capture else { return };
        let measured: Vec<u32> = c.cpus.iter().map(|t| t.reader.cpu).collect();
        let others: Vec<u32> = crate::cpus::allowed().into_iter().filter(|x| !measured.contains(x)).collect();
        if !others.is_empty() && crate::rt::pin_thread(0, &others).is_ok() {
            return;
        }
        self.section.limitations.push(
            "the trace reader shares the measured CPUs (no other CPU allowed): its reads are among the causes".into(),
        );
    }

    /// Take the wake-ups queued, read the buffers, explain what can be explained now.
    fn step(&mut self, last: bool) {
        while let Ok(w) = self.rx.try_recv() {
            self.latencies.record(w.woke.saturating_sub(w.expected));
            if let Some(t) = self.capture.as_mut().and_then(|c| c.cpus.iter_mut().find(|t| t.reader.cpu == w.cpu)) {
                t.pending.push_back(w);
            }
        }
        self.threshold = self.rolling_threshold();
        let Some(capture) = self.capture.as_mut() else { return };
        if let Err(e) = capture.read() {
            self.section.limitations.push(format!("reading the trace failed, explaining stopped: {e}"));
            self.capture = None;
            return;
        }
        let (threshold, break_at) = (self.threshold, self.cfg.break_at.map(|b| b.0));
        for t in &mut capture.cpus {
            while let Some(&w) = t.pending.front().filter(|w| last || w.woke <= t.watermark) {
                t.pending.pop_front();
                let latency = w.woke.saturating_sub(w.expected);
                let broke = break_at.is_some_and(|b| latency > b);
                if latency > threshold || broke {
                    let sample = explain(t, &capture.decoder, capture.ipi.as_mut().ok(), &w, self.run_start);
                    self.section.samples.push(sample);
                }
                if broke && self.section.stopped_by_break_ns.is_none() {
                    self.section.stopped_by_break_ns = Some(latency);
                    // as cyclictest -b: the trace ends at the break (what is buffered is still read)
                    if let Err(e) = capture.instance.set_on(false) {
                        self.section.limitations.push(format!("tracing could not be stopped at the break: {e}"));
                    }
                }
                t.trim_before(w.woke);
                if let Ok(senders) = capture.ipi.as_mut() {
                    senders.forget_before(w.cpu, w.woke);
                }
            }
            t.bound();
        }
        if self.section.samples.len() > 2 * self.cfg.max_samples {
            keep_worst(&mut self.section.samples, self.cfg.max_samples);
        }
    }

    fn rolling_threshold(&self) -> u64 {
        match self.cfg.above {
            Some(a) => a.0,
            None if self.latencies.count() < WARMUP_SAMPLES => 0,
            None => self.latencies.quantile(0.99),
        }
    }

    fn finish(mut self) -> ExplainSection {
        let threshold = self.cfg.above.map(|a| a.0).unwrap_or_else(|| self.latencies.quantile(0.99));
        let mut s = std::mem::take(&mut self.section);
        s.threshold_ns = threshold;
        s.samples_above = self.latencies.buckets().iter().filter(|(v, _)| *v > threshold).map(|(_, n)| n).sum();
        let breaking = s.stopped_by_break_ns;
        s.samples.retain(|x| x.latency_ns > threshold || Some(x.latency_ns) == breaking);
        keep_worst(&mut s.samples, self.cfg.max_samples);
        name_policies(&mut s.samples);
        s.summary = ExplainSection::summarize(&s.samples);
        if let Some(c) = &self.capture {
            s.events_lost =
                c.cpus.iter().map(|t| c.instance.lost_events(t.reader.cpu)).sum::<u64>().max(c.lost_in_pages);
            if s.events_lost > 0 {
                s.limitations.push(format!(
                    "{} trace events were lost (ring buffer overrun): samples in their time are partly unexplained",
                    s.events_lost
                ));
            }
            for t in c.cpus.iter().filter(|t| t.idle.exits_untraced()) {
                s.limitations.push(format!(
                    "CPU {}: the kernel recorded {} switches into the idle task and none out of it: a wake-up \
                     from idle whose switch-in is therefore missing is explained as `{}`",
                    t.reader.cpu,
                    t.idle.into,
                    attribute::WAKEUP_FROM_IDLE
                ));
            }
            if let Some(lost) = c.ipi.as_ref().ok().map(ipi::Senders::lost).filter(|&n| n > 0) {
                s.limitations
                    .push(format!("{lost} IPI sendings were lost: some IPI handlers are not named after theirs"));
            }
        }
        let unseen = s.samples.iter().filter(|x| x.causes.iter().any(|c| c.name.starts_with("no switch"))).count();
        if unseen > 0 {
            s.limitations.push(format!(
                "{unseen} explained wake-up(s) have no switch to the measuring thread in the trace although it ran \
                 (an event the kernel did not record or the reader did not get): \
                 after their wake-up they are unexplained{}",
                if self.cfg.syscalls { "" } else { " (--explain-syscalls would explain their return)" }
            ));
        }
        self.write_break_trace(&mut s);
        if let Some(line) = self.clock.take() {
            s.guest_clock = Some(line.close(self.run_start));
        }
        let dropped = self.sink.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            s.limitations.push(format!("{dropped} wake-ups were not examined: the explainer fell behind"));
        }
        s
    }
}

impl Explainer {
    /// `--break`: write the kept raw trace when a wake-up broke the run.
    fn write_break_trace(&self, s: &mut ExplainSection) {
        let (Some(c), Some(path), Some(latency)) = (&self.capture, &self.cfg.break_trace, s.stopped_by_break_ns) else {
            return;
        };
        let (Some(raw), Some(first)) = (&c.raw, c.cpus.first()) else { return };
        let title = format!("rtvirt measure timer --break: stopped by a wake-up {latency} ns late");
        match raw.write(&c.instance, first.reader.header(), path, &title) {
            Ok(events) => {
                s.break_trace_file = Some(path.display().to_string());
                s.break_trace_events = Some(events);
            }
            Err(e) => s.limitations.push(format!("the --break trace could not be written to {}: {e}", path.display())),
        }
    }
}

impl Capture {
    fn start(cfg: &ExplainConfig, cpus: &[u32]) -> Result<Capture, String> {
        let instance = Instance::create(&cfg.state_dir, &decode::events(cfg.syscalls), cfg.buffer_kb)
            .map_err(|e| e.to_string())?;
        instance.limit_to_cpus(cpus).map_err(|e| e.to_string())?;
        let needed = ["sched/sched_switch", "sched/sched_wakeup"];
        if let Some(missing) = needed.iter().find(|e| !instance.present.iter().any(|p| p == *e)) {
            return Err(format!("the kernel has no {missing} event"));
        }
        let mut unfiltered = Vec::new();
        for (event, filter) in decode::FILTERS.iter().filter(|(e, _)| instance.present.iter().any(|p| p == e)) {
            if let Err(e) = instance.filter(event, filter) {
                unfiltered.push(format!("{event} recorded unfiltered (more events, more overhead): {e}"));
            }
        }
        let decoder = Decoder::new(&instance);
        let traces = cpus
            .iter()
            .map(|&cpu| {
                Ok(CpuTrace {
                    reader: instance.reader(cpu).map_err(|e| e.to_string())?,
                    front: CpuState::default(),
                    events: VecDeque::new(),
                    watermark: 0,
                    pending: VecDeque::new(),
                    idle: IdleSwitches::default(),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        instance.set_on(true).map_err(|e| e.to_string())?;
        let raw = cfg.break_at.map(|_| break_trace::RawKeeper::new(cpus, cfg.buffer_kb as usize * 1024));
        let ipi = ipi::Senders::start(cfg, cpus);
        Ok(Capture { instance, ipi, decoder, cpus: traces, lost_in_pages: 0, raw, unfiltered })
    }

    /// Drain every CPU's buffer (the IPI sendings first: a handler read is then never newer
    /// than the sendings known).
    fn read(&mut self) -> rtvirt_os::Result<()> {
        if let Ok(senders) = self.ipi.as_mut() {
            senders.read()?;
        }
        for t in &mut self.cpus {
            while let Some(page) = t.reader.next_page()? {
                self.lost_in_pages += page.missed().unwrap_or(0);
                for raw in page.events() {
                    t.watermark = t.watermark.max(raw.ts);
                    if let Some(event) = self.decoder.decode(&raw) {
                        t.idle.count(&event);
                        t.events.push_back(Timed { ts: raw.ts, event });
                    }
                }
                if let Some(kept) = self.raw.as_mut() {
                    kept.keep(t.reader.cpu, t.reader.last_page());
                }
            }
        }
        Ok(())
    }
}

impl CpuTrace {
    /// Forget the events before `ts`, keeping what they tell about the CPU's state.
    fn trim_before(&mut self, ts: u64) {
        while self.events.front().is_some_and(|e| e.ts < ts) {
            let e = self.events.pop_front().expect("front exists");
            self.front.apply(&e.event);
        }
    }

    /// Keep memory bounded when no wake-up lets the events go.
    fn bound(&mut self) {
        while self.events.len() > MAX_EVENTS_PER_CPU {
            let e = self.events.pop_front().expect("non-empty");
            self.front.apply(&e.event);
        }
    }
}

/// Explain one wake-up from its CPU's events.
fn explain(
    t: &mut CpuTrace,
    decoder: &Decoder,
    senders: Option<&mut ipi::Senders>,
    w: &Wakeup,
    run_start: u64,
) -> ExplainedSample {
    let window = Window { cpu: w.cpu, tid: w.tid, expected: w.expected, woke: w.woke };
    let events = t.events.make_contiguous();
    let mut shares = attribute::attribute(&t.front, events, &decoder.irq_names, &window);
    if let Some(senders) = senders {
        name_ipi_senders(&mut shares, senders, w.cpu);
    }
    ExplainedSample {
        cpu: w.cpu,
        latency_ns: w.woke.saturating_sub(w.expected),
        expected_ns: w.expected.saturating_sub(run_start),
        tid: w.tid,
        causes: shares
            .into_iter()
            .map(|s| Cause {
                kind: s.kind,
                name: s.name,
                pid: s.pid,
                cpu: w.cpu,
                start_ns: s.start.saturating_sub(run_start),
                duration_ns: s.duration,
                policy: None,
                kernel_prio: s.kernel_prio,
            })
            .collect(),
        ..Default::default()
    }
}

/// Each IPI handler named after the last sending to its CPU before it.
fn name_ipi_senders(shares: &mut [attribute::Share], senders: &mut ipi::Senders, cpu: u32) {
    for share in shares.iter_mut().filter(|s| s.kind == rtvirt_model::results::CauseKind::Ipi) {
        if let Some(sending) = senders.last_before(cpu, share.start) {
            share.name = senders.describe(&share.name, &sending);
        }
    }
}

/// The worst `n` samples, worst first.
fn keep_worst(samples: &mut Vec<ExplainedSample>, n: usize) {
    samples.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.expected_ns.cmp(&b.expected_ns)));
    samples.truncate(n);
}

/// The policy of each thread cause: asked of the kernel while the thread lives, else read from
/// its priority in the trace (which cannot tell FIFO from RR).
fn name_policies(samples: &mut [ExplainedSample]) {
    let mut known = std::collections::HashMap::new();
    for c in samples.iter_mut().flat_map(|s| s.causes.iter_mut()) {
        let Some(pid) = c.pid else { continue };
        let policy = known.entry(pid).or_insert_with(|| match rtvirt_os::sched::get(pid) {
            Ok(a) => rtvirt_os::sched::policy_name(a.policy).to_ascii_lowercase(),
            Err(_) => match c.kernel_prio {
                Some(p) if p < 0 => "deadline".into(),
                Some(p) if p < 100 => "fifo or rr".into(),
                _ => "other".into(),
            },
        });
        c.policy = Some(policy.clone());
    }
}

/// What this kernel's events cannot show.
fn limitations_of(instance: &Instance) -> Vec<String> {
    let mut said = Vec::new();
    let absent = |prefix: &str| instance.absent.iter().any(|e| e.starts_with(prefix));
    if absent("preemptirq/") {
        said.push(
            "no preemptirq events in this kernel: time with interrupts disabled shows as timer_irq delay, \
             not as the code that disabled them"
                .to_string(),
        );
    }
    let tracers = instance.available_tracers();
    let missing: Vec<&str> = ["timerlat", "osnoise"].into_iter().filter(|t| !tracers.iter().any(|x| x == t)).collect();
    if !missing.is_empty() {
        said.push(format!(
            "no {} tracer in this kernel (available: {}): explained from scheduler, IRQ and hrtimer events only",
            missing.join("/"),
            tracers.join(" ")
        ));
    }
    for e in instance.absent.iter().filter(|e| !e.starts_with("preemptirq/") && !e.starts_with("osnoise/")) {
        said.push(format!("event {e} absent: what it would show is part of other causes or unexplained"));
    }
    said
}
