//! `measure net --explain`: every request's path on this host, segment by segment, from the
//! kernel's own trace ([`events`], joined per request by [`join`]).
//!
//! A tracing instance of rtvirt's own records, on every CPU, the packets' device, softirq, socket
//! and copy events and the wake-ups of rtvirt's threads (filtered in the kernel by thread name,
//! the trace reader excluded); their send and receive syscalls only with `--explain-syscalls`
//! ([`events::SYSCALL_EVENTS`]: they slow every system call on the host). The client (or server)
//! hands each request's times to an explainer thread through a bounded queue that never blocks
//! it; the explainer, at the lowest priority of SCHED_OTHER so that it delays no measured thread,
//! streams the per-CPU buffers into one time-ordered window and joins a request once its events
//! have surely been read ([`SETTLE_NS`] after its end), then forgets the events before the oldest
//! request still waiting, so memory stays bounded however long the run.
//!
//! The client's segments: `send_lag`, `client_send`, `host_receive`, `server`, `host_send`,
//! `client_receive`; to a server in a guest behind a tap (`--in vm`) `guest` replaces `server`
//! and `host_send` starts where the response enters the host from the tap; a server's (its
//! host's share, from the first trace of the request): the middle three. `server` ends at the
//! server's send syscall, or without syscall events at its response's `net_dev_queue`;
//! `host_send` at the response's first `net_dev_xmit`, or where a NIC's driver is handed it (a
//! server traces a NIC's `net_dev_start_xmit`, and on a kernel without `sk_data_ready` the
//! packets its receives free: [`Side::Server`]). They add up to the round trip (the trace clock
//! `mono` is the client's CLOCK_MONOTONIC: docs/measure.md states the precision). Each request
//! is in the per-segment summary; the worst [`ExplainConfig::max_samples`] are kept with their
//! segments.

pub mod events;
pub mod guest;
pub mod join;

use super::ExplainConfig;
use events::{Decoder, Ev};
use join::{ClientRequest, Joined, ServerRequest};
use rtvirt_model::results::{ExplainSection, ExplainedSample, PathSegment, SegmentSummary};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_os::tracefs::{CpuReader, Instance};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

/// A request is joined this long after its end: by then every CPU's events up to its end have
/// been committed to the ring buffers and read.
pub const SETTLE_NS: u64 = 20_000_000;
/// Requests waiting for the explainer, at most (a full queue drops, and says so).
const QUEUE: usize = 65_536;
/// Events kept at most when requests do not let them go (a stalled client).
const MAX_EVENTS: usize = 2_000_000;
/// How often the explainer drains the buffers: rarely enough that its wake-ups and reads come in
/// few, large batches (4 MiB per CPU holds seconds of a busy path), often enough that requests
/// are joined soon after they [`SETTLE_NS`].
const POLL: Duration = Duration::from_millis(20);
/// A milestone earlier than the one before it by more than this is a clock disagreement worth
/// saying (the trace and the client read the same clock: only the events' own cost separates them).
pub const PRECISION_NS: u64 = 1_000;

/// Which end of the round trips this host's measuring threads are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    /// A server explaining its own requests: it also traces, where this kernel needs them,
    /// [`events::START_XMIT`] and [`events::CONSUME`].
    Server,
}

/// One request's times, from the thread that measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    Client(ClientRequest),
    Server(ServerRequest),
}

impl Request {
    fn start(&self) -> u64 {
        match self {
            Request::Client(c) => c.intended,
            Request::Server(s) => s.received.saturating_sub(join::LOOKBACK_NS),
        }
    }
    fn end(&self) -> u64 {
        match self {
            Request::Client(c) => c.read,
            Request::Server(s) => s.answered,
        }
    }
}

/// The measuring threads' end of the queue: never blocks.
#[derive(Clone)]
pub struct NetSink {
    tx: SyncSender<Request>,
    dropped: Arc<AtomicU64>,
}

impl NetSink {
    pub fn send(&self, r: Request) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(r) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A running capture and what has been joined so far.
pub struct NetExplainer {
    cfg: ExplainConfig,
    capture: Option<Capture>,
    rx: Receiver<Request>,
    sink: NetSink,
    section: ExplainSection,
    run_start: u64,
    /// Every CPU's events, in time order.
    events: VecDeque<Ev>,
    pending: VecDeque<Request>,
    /// Each segment's durations over every joined request, in path order.
    segments: Vec<(&'static str, LatencyHistogram)>,
    requests: u64,
    missing: BTreeMap<&'static str, u64>,
    out_of_order: u64,
    forgotten_events: u64,
    /// In a guest (`--in vm`): the line over which the host tells its time, and the handshake
    /// before the run.
    clock: Option<super::clock_sync::Line>,
}

/// Fields drop in order: the readers close before the instance is removed.
struct Capture {
    readers: Vec<CpuReader>,
    instance: Instance,
    decoder: Decoder,
    lost_in_pages: u64,
}

impl NetExplainer {
    /// Start tracing every CPU. Without tracefs (or the events the join needs) the measurement
    /// still runs: the section then says what could not be explained and why.
    pub fn start(cfg: ExplainConfig, side: Side) -> NetExplainer {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let mut section = ExplainSection::default();
        let capture = match Capture::start(&cfg, side, &mut section.limitations) {
            Ok(c) => {
                section.events_present = c.instance.present.clone();
                section.events_absent = c.instance.absent.clone();
                Some(c)
            }
            Err(why) => {
                section.limitations.push(format!("kernel tracing unavailable, no request explained: {why}"));
                None
            }
        };
        let clock = cfg.clock_sync.as_ref().and_then(|device| {
            super::clock_sync::Line::open(device, &mut section.limitations, "the host checks the join without it")
        });
        NetExplainer {
            cfg,
            clock,
            capture,
            rx,
            sink: NetSink { tx, dropped: Default::default() },
            section,
            run_start: 0,
            events: VecDeque::new(),
            pending: VecDeque::new(),
            segments: Vec::new(),
            requests: 0,
            missing: BTreeMap::new(),
            out_of_order: 0,
            forgotten_events: 0,
        }
    }

    /// The run's start (CLOCK_MONOTONIC ns): times in the section count from it.
    pub fn set_run_start(&mut self, start: u64) {
        self.run_start = start;
    }

    pub fn sink(&self) -> NetSink {
        self.sink.clone()
    }

    /// Stream and join until `done` is set (the measuring threads have ended), then finish.
    pub fn run(mut self, done: &AtomicBool) -> ExplainSection {
        if let Err(e) = yield_to_measured_threads() {
            self.section.limitations.push(format!(
                "the trace reader could not lower its priority ({e}): it competed with the measured threads"
            ));
        }
        while !done.load(Ordering::Acquire) {
            std::thread::sleep(POLL);
            self.step(false);
        }
        std::thread::sleep(POLL);
        self.step(true);
        self.finish()
    }

    fn step(&mut self, last: bool) {
        while let Ok(r) = self.rx.try_recv() {
            self.pending.push_back(r);
        }
        let Some(capture) = self.capture.as_mut() else {
            self.pending.clear();
            return;
        };
        let read_at = crate::rt::now_ns();
        if let Err(e) = capture.read(&mut self.events) {
            self.section.limitations.push(format!("reading the trace failed, explaining stopped: {e}"));
            self.capture = None;
            return;
        }
        let settled = if last { u64::MAX } else { read_at.saturating_sub(SETTLE_NS) };
        while let Some(r) = self.pending.front().copied().filter(|r| r.end() <= settled) {
            self.pending.pop_front();
            self.join(&r);
        }
        if !last {
            let keep_from = self.pending.front().map_or(settled, |r| r.start().min(settled));
            while self.events.front().is_some_and(|e| e.ts + join::LOOKBACK_NS < keep_from) {
                self.events.pop_front();
            }
        }
        while self.events.len() > MAX_EVENTS {
            self.events.pop_front();
            self.forgotten_events += 1;
        }
    }

    fn join(&mut self, r: &Request) {
        let Some(capture) = &self.capture else { return };
        let events = self.events.make_contiguous();
        let (joined, latency, tid, seq) = match r {
            Request::Client(c) => {
                (join::client(events, &capture.decoder, c), c.read.saturating_sub(c.intended), c.receiver, c.seq)
            }
            Request::Server(s) => {
                let j = join::server(events, &capture.decoder, s);
                let latency = j.end().saturating_sub(j.start());
                (j, latency, s.server, s.seq)
            }
        };
        self.requests += 1;
        if let Some(m) = joined.missing() {
            *self.missing.entry(m).or_default() += 1;
        }
        if joined.clamped_ns > PRECISION_NS {
            self.out_of_order += 1;
        }
        for s in &joined.segments {
            let i = match self.segments.iter().position(|(n, _)| *n == s.name) {
                Some(i) => i,
                None => {
                    self.segments.push((s.name, LatencyHistogram::new()));
                    self.segments.len() - 1
                }
            };
            self.segments[i].1.record(s.end - s.start);
        }
        let sample = self.sample(&joined, latency, tid, seq);
        self.section.samples.push(sample);
        if self.section.samples.len() > 2 * self.cfg.max_samples {
            keep_worst(&mut self.section.samples, self.cfg.max_samples);
        }
    }

    fn sample(&self, joined: &Joined, latency: u64, tid: u32, seq: u64) -> ExplainedSample {
        let since_start = |t: u64| t.saturating_sub(self.run_start);
        let last_cpu = joined.segments.iter().rev().find_map(|s| s.cpu);
        ExplainedSample {
            task: None,
            cpu: last_cpu.unwrap_or(0),
            latency_ns: latency,
            expected_ns: since_start(joined.start()),
            tid,
            causes: Vec::new(),
            request: Some(seq),
            segments: joined
                .segments
                .iter()
                .map(|s| PathSegment {
                    name: s.name.to_string(),
                    start_ns: since_start(s.start),
                    duration_ns: s.end - s.start,
                    cpu: s.cpu,
                    via: s.via.clone(),
                    missing: s.missing.map(str::to_string),
                })
                .collect(),
        }
    }

    fn finish(mut self) -> ExplainSection {
        let mut s = std::mem::take(&mut self.section);
        s.samples_above = self.requests;
        s.run_start_ns = (self.run_start > 0).then_some(self.run_start);
        if let Some(line) = self.clock.take() {
            s.guest_clock = Some(line.close(self.run_start));
        }
        keep_worst(&mut s.samples, self.cfg.max_samples);
        s.segments = self
            .segments
            .iter()
            .map(|(name, h)| {
                let x = h.summary();
                SegmentSummary {
                    name: name.to_string(),
                    requests: h.count(),
                    mean_ns: x.mean,
                    p99_ns: x.p99,
                    max_ns: x.max,
                }
            })
            .collect();
        for (what, n) in &self.missing {
            s.limitations.push(format!(
                "{n} of {} requests partly unexplained: {what} not in the trace (the rest of their round trip is \
                 `unexplained`)",
                self.requests
            ));
        }
        if let Some((_, h)) = self.segments.iter().find(|(name, _)| *name == "guest") {
            s.limitations.push(format!(
                "{} requests went to a guest through its tap: `guest` runs from the request's transmit into the tap \
                 to the response's receive from it, the hypervisor's user-space handling (QEMU) both ways included; \
                 the virtual interrupt into the guest and the vCPU's exits are not separated (no kvm_* events are \
                 traced here, and under TCG there are none)",
                h.count()
            ));
        }
        if self.out_of_order > 0 {
            s.limitations.push(format!(
                "{} requests have a milestone more than {PRECISION_NS} ns before the previous one (clamped: the \
                 segment before it is 0)",
                self.out_of_order
            ));
        }
        if let Some(c) = &self.capture {
            s.events_lost = c.readers.iter().map(|r| c.instance.lost_events(r.cpu)).sum::<u64>().max(c.lost_in_pages);
            if s.events_lost > 0 {
                s.limitations.push(format!(
                    "{} trace events were lost (ring buffer overrun): requests in their time are partly unexplained",
                    s.events_lost
                ));
            }
        }
        if self.forgotten_events > 0 {
            s.limitations.push(format!(
                "{} trace events were dropped by the explainer's bound before any request used them",
                self.forgotten_events
            ));
        }
        let dropped = self.sink.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            s.limitations.push(format!("{dropped} requests were not examined: the explainer fell behind"));
        }
        s
    }
}

impl Capture {
    fn start(cfg: &ExplainConfig, side: Side, limitations: &mut Vec<String>) -> Result<Capture, String> {
        let mut instance = Instance::create(&cfg.state_dir, &events::traced(cfg.syscalls), cfg.buffer_kb)
            .map_err(|e| e.to_string())?;
        if side == Side::Server {
            add_server_events(&mut instance, limitations).map_err(|e| e.to_string())?;
        }
        let needed = ["net/net_dev_queue", "net/net_dev_xmit", "net/netif_receive_skb", "sched/sched_wakeup"];
        if let Some(missing) = needed.iter().find(|e| !instance.present.iter().any(|p| p == *e)) {
            return Err(format!("the kernel has no {missing} event"));
        }
        for (event, filter) in events::FILTERS {
            if !instance.present.iter().any(|p| p == event) {
                continue;
            }
            if let Err(e) = instance.filter(event, filter) {
                limitations.push(format!("{event} recorded unfiltered (more events, more overhead): {e}"));
            }
        }
        for e in &instance.absent {
            limitations.push(match e.as_str() {
                "sock/sk_data_ready" => format!(
                    "event {e} absent: a server's request is known by its copy to user space or the received \
                     packet its receive freed ({}), its socket enqueue by the wake-up it caused (the server \
                     awake: host_receive ends at netif_receive_skb); a client's response cannot be joined \
                     without it",
                    events::CONSUME
                ),
                _ => format!("event {e} absent: the path is joined without it"),
            });
        }
        let decoder = Decoder::new(&instance);
        let readers = crate::cpus::online()
            .into_iter()
            .map(|cpu| instance.reader(cpu).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, String>>()?;
        instance.set_on(true).map_err(|e| e.to_string())?;
        Ok(Capture { readers, instance, decoder, lost_in_pages: 0 })
    }

    /// Drain every CPU's buffer into `events`, keeping them in time order.
    fn read(&mut self, events: &mut VecDeque<Ev>) -> rtvirt_os::Result<()> {
        for reader in &mut self.readers {
            let cpu = reader.cpu;
            while let Some(page) = reader.next_page()? {
                self.lost_in_pages += page.missed().unwrap_or(0);
                for raw in page.events() {
                    if let Some(e) = self.decoder.decode(&raw, cpu) {
                        insert_in_order(events, e);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A server's events that only some kernels need: a NIC's `net_dev_start_xmit` where this kernel
/// has a NIC, `consume_skb` where it has no `sk_data_ready`.
fn add_server_events(instance: &mut Instance, limitations: &mut Vec<String>) -> rtvirt_os::Result<()> {
    if let Some(nics) = events::nic_filter() {
        if instance.enable(events::START_XMIT)? {
            if let Err(e) = instance.filter(events::START_XMIT, &nics) {
                limitations.push(format!("{} recorded unfiltered (every device's): {e}", events::START_XMIT));
            }
        }
    }
    if instance.absent.iter().any(|e| e == "sock/sk_data_ready") {
        instance.enable(events::CONSUME)?;
    }
    Ok(())
}

/// Make the calling thread (the trace reader) give way to the measured threads, which run at
/// SCHED_OTHER's default: SCHED_BATCH (its wake-ups preempt no one) at nice 19 (the smallest
/// share). The setting is the thread's own and ends with it; nothing on the host changes. The
/// ring buffers absorb the time it waits; what they cannot hold is counted as lost.
fn yield_to_measured_threads() -> Result<(), rtvirt_os::KernelError> {
    let batch = rtvirt_os::sched::SchedAttr { policy: rtvirt_os::sched::SCHED_BATCH, nice: 19, ..Default::default() };
    rtvirt_os::sched::set(0, &batch)
}

/// Insert `e` after every event not later than it (CPUs are read one after the other).
fn insert_in_order(events: &mut VecDeque<Ev>, e: Ev) {
    if events.back().is_none_or(|b| b.ts <= e.ts) {
        events.push_back(e);
    } else {
        let at = events.partition_point(|x| x.ts <= e.ts);
        events.insert(at, e);
    }
}

/// The worst `n` requests, worst first.
fn keep_worst(samples: &mut Vec<ExplainedSample>, n: usize) {
    samples.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.expected_ns.cmp(&b.expected_ns)));
    samples.truncate(n);
}

#[cfg(test)]
mod tests;
