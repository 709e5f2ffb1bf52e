//! `--in vm --explain`, host side: what the guest's vCPU threads went through on the host while
//! the guest measured. [`HostRecorder`] traces every host CPU (the vCPU threads may move) in a
//! tracing instance of its own, from the guest's first clock handshake to the end of its job,
//! keeping the newest [`MAX_EVENTS`] decoded events. [`HostTrace::merge_into`] then lays, beside
//! each guest sample's own causes (which add up to its latency), the vCPU thread's host timeline
//! over the same window put on the host clock with the guest's [`ClockSync`]:
//!
//! - switched out and woken later: `vcpu_asleep` until the wake-up (the guest idle, waiting for
//!   its timer interrupt, which QEMU delivers by waking the thread), then, until the switch back
//!   in, `host_thread` (who ran on the CPU it last ran on) or `vcpu_wakeup` (that CPU idle);
//! - switched out and in again without a wake-up (preempted): `host_thread` for who ran;
//! - running: `host_irq` / `host_softirq` for the host handlers that interrupted it, and under
//!   KVM `kvm_exit` from each `kvm_exit` to the next `kvm_entry` (or the switch out), named by
//!   the exit reason ([`super::kvm_exit`]).
//!
//! A switch out of the thread after its wake-up with no switch into it in the trace (some kernels
//! record no switch out of the idle task: docs/measure.md) still closes its sleep at the wake-up;
//! what ran until its unseen switch-in, and the handlers while it ran, are then not known.
//!
//! Under TCG (this machine) the guest is QEMU's own code and there are no exits: the section says
//! so; under KVM a host kernel without the `kvm_exit` event is said too.

use super::attribute::Running;
use super::decode::{comm_text, Decoder, Event, SOFTIRQS, VECTORS};
use super::kvm_exit::ExitReasons;
use rtvirt_model::results::{Cause, CauseKind, ClockSync, ExplainSection};
use rtvirt_os::tracefs::{CpuReader, Instance};
use std::collections::{HashMap, VecDeque};

/// Host events kept at most (the newest).
pub const MAX_EVENTS: usize = 2_000_000;
/// The KVM events asked for beside the scheduler and IRQ ones (present only under KVM's module).
pub const KVM_EVENTS: &[&str] = &["kvm/kvm_exit", "kvm/kvm_entry", "kvm/kvm_inj_virq", "kvm/kvm_vcpu_wakeup"];

/// A trace of every host CPU, read while the guest runs.
pub struct HostRecorder {
    readers: Vec<CpuReader>,
    instance: Instance,
    decoder: Decoder,
    events: VecDeque<(u64, u32, Event)>,
    forgotten: u64,
}

impl HostRecorder {
    /// Start tracing every CPU this process may use.
    pub fn start(state_dir: &std::path::Path, buffer_kb: u32) -> Result<HostRecorder, String> {
        let mut events: Vec<&str> = super::decode::EVENTS.to_vec();
        events.extend(KVM_EVENTS);
        let instance = Instance::create(state_dir, &events, buffer_kb).map_err(|e| e.to_string())?;
        let cpus = crate::cpus::allowed();
        instance.limit_to_cpus(&cpus).map_err(|e| e.to_string())?;
        let readers = cpus.iter().map(|&c| instance.reader(c).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        let decoder = Decoder::new(&instance);
        instance.set_on(true).map_err(|e| e.to_string())?;
        Ok(HostRecorder { readers, instance, decoder, events: VecDeque::new(), forgotten: 0 })
    }

    /// Drain every CPU's buffer.
    pub fn read(&mut self) -> Result<(), String> {
        for r in &mut self.readers {
            let cpu = r.cpu;
            while let Some(page) = r.next_page().map_err(|e| e.to_string())? {
                for raw in page.events() {
                    if let Some(e) = self.decoder.decode(&raw) {
                        self.events.push_back((raw.ts, cpu, e));
                    }
                }
            }
        }
        while self.events.len() > MAX_EVENTS {
            self.events.pop_front();
            self.forgotten += 1;
        }
        Ok(())
    }

    /// Stop: the events in time order, and what the trace could and could not record.
    pub fn finish(mut self) -> HostTrace {
        let mut limitations = Vec::new();
        if let Err(e) = self.read() {
            limitations.push(format!("reading the host trace failed: {e}"));
        }
        let _ = self.instance.set_on(false);
        let lost: u64 = self.readers.iter().map(|r| self.instance.lost_events(r.cpu)).sum();
        if lost > 0 {
            limitations.push(format!("{lost} host trace events were lost (ring buffer overrun)"));
        }
        if self.forgotten > 0 {
            limitations.push(format!(
                "the oldest {} host events were not kept (at most {MAX_EVENTS}): early samples lack host causes",
                self.forgotten
            ));
        }
        let mut events: Vec<(u64, u32, Event)> = self.events.into_iter().collect();
        events.sort_by_key(|(ts, cpu, _)| (*ts, *cpu));
        HostTrace {
            events,
            irq_names: self.decoder.irq_names.clone(),
            exit_reasons: self.decoder.exit_reasons.clone(),
            present: self.instance.present.clone(),
            absent: self.instance.absent.clone(),
            limitations,
        }
    }
}

/// The host's events of one guest run.
pub struct HostTrace {
    pub events: Vec<(u64, u32, Event)>,
    irq_names: HashMap<u32, String>,
    exit_reasons: ExitReasons,
    pub present: Vec<String>,
    pub absent: Vec<String>,
    pub limitations: Vec<String>,
}

/// A span of a vCPU thread's host timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub kind: CauseKind,
    pub name: String,
    pub pid: Option<u32>,
    pub cpu: u32,
    pub start: u64,
    pub end: u64,
}

/// Where a vCPU thread is.
#[derive(Debug, Clone, Copy)]
enum Where {
    Unknown,
    On(u32),
    /// Switched out of `cpu` at `since`; `woken` once a wake-up was seen.
    Off {
        cpu: u32,
        since: u64,
        woken: Option<u64>,
    },
}

impl HostTrace {
    /// The host timeline of thread `tid` (what it waited for, what interrupted it).
    pub fn segments(&self, tid: u32) -> Vec<Segment> {
        let mut at = Where::Unknown;
        let mut runners: HashMap<u32, (u64, Running)> = HashMap::new();
        let mut handlers: HashMap<u32, (u64, CauseKind, String)> = HashMap::new();
        // the thread's KVM exit being handled: since, CPU, its name
        let mut exit: Option<(u64, u32, String)> = None;
        let (mut out, mut pending) = (Vec::new(), Vec::<Segment>::new());
        for &(ts, cpu, e) in &self.events {
            match e {
                Event::Switch { prev_pid, next_pid, next_comm, next_prio, .. } => {
                    let runner = Running { pid: next_pid, comm: next_comm, prio: next_prio };
                    if let Where::Off { cpu: waited, .. } = at {
                        if waited == cpu {
                            close_runner(&mut pending, runners.get(&cpu), cpu, ts);
                        }
                    }
                    runners.insert(cpu, (ts, runner));
                    if prev_pid == tid && next_pid != tid {
                        out.extend(exit.take().and_then(|x| exit_segment(x, ts)));
                        if let Where::Off { cpu: waited, since, woken: Some(w) } = at {
                            out.push(asleep(since, w, waited, tid)); // its switch-in not traced
                        }
                        at = Where::Off { cpu, since: ts, woken: None };
                        pending.clear();
                    } else if next_pid == tid {
                        if let Where::Off { since, woken, .. } = at {
                            out.extend(settle(&mut pending, since, woken, tid));
                        }
                        at = Where::On(cpu);
                    }
                }
                Event::Wakeup { pid } if pid == tid => {
                    if let Where::Off { cpu, since, woken: None } = at {
                        at = Where::Off { cpu, since, woken: Some(ts) };
                    }
                }
                Event::IrqEntry { irq } => {
                    let name = self.irq_names.get(&irq).cloned().unwrap_or_else(|| format!("irq {irq}"));
                    handlers.insert(cpu, (ts, CauseKind::HostIrq, name));
                }
                Event::VectorEntry { vector } => {
                    handlers.insert(cpu, (ts, CauseKind::HostIrq, VECTORS[vector].to_string()));
                }
                Event::SoftirqEntry { vector } => {
                    let name =
                        SOFTIRQS.get(vector as usize).map_or_else(|| format!("softirq {vector}"), |s| s.to_string());
                    handlers.insert(cpu, (ts, CauseKind::HostSoftirq, name));
                }
                Event::KvmExit { reason, isa } if matches!(at, Where::On(on) if on == cpu) => {
                    exit = Some((ts, cpu, self.exit_reasons.name(reason, isa)));
                }
                Event::KvmEntry if matches!(at, Where::On(on) if on == cpu) => {
                    out.extend(exit.take().and_then(|x| exit_segment(x, ts)));
                }
                Event::IrqExit | Event::VectorExit | Event::SoftirqExit => {
                    if let (Some((start, kind, name)), Where::On(on)) = (handlers.remove(&cpu), at) {
                        if on == cpu && ts > start {
                            out.push(Segment { kind, name, pid: None, cpu, start, end: ts });
                        }
                    }
                }
                _ => {}
            }
        }
        out.sort_by_key(|s| s.start);
        out
    }

    /// Lay each guest sample's host timeline beside its causes (`vcpu_threads[i]` is vCPU i's
    /// thread, a sample's `cpu` a vCPU index), and say what the host side could not show.
    pub fn merge_into(&self, section: &mut ExplainSection, vcpu_threads: &[i32], accel: &str) {
        for e in &self.present {
            section.events_present.push(format!("host:{e}"));
        }
        for e in &self.absent {
            section.events_absent.push(format!("host:{e}"));
        }
        section.limitations.extend(self.limitations.iter().map(|l| format!("host side: {l}")));
        if accel == "kvm" && !self.present.iter().any(|e| e == "kvm/kvm_exit") {
            section.limitations.push(
                "host side under kvm without the kvm/kvm_exit event: the vCPU threads' exits are not separated \
                 from their running"
                    .into(),
            );
        }
        if accel != "kvm" {
            section.limitations.push(format!(
                "host side under {accel}: no kvm_* events (the guest runs as QEMU's own code): the vCPU threads' \
                 host causes are their preemption, their sleep and wake-up, and the host IRQs and softirqs that \
                 interrupted them"
            ));
        }
        let Some(clock) = section.guest_clock.clone() else {
            section
                .limitations
                .push("host side: the guest's clock is not related to the host's: no host causes".into());
            return;
        };
        section.limitations.push(format!(
            "host causes are placed by a serial-port clock handshake, within +/-{} ns of the guest's times",
            clock.precision_ns
        ));
        let mut timelines: HashMap<u32, Vec<Segment>> = HashMap::new();
        for s in &mut section.samples {
            let Some(&tid) = vcpu_threads.get(s.cpu as usize) else { continue };
            let segments = timelines.entry(tid as u32).or_insert_with(|| self.segments(tid as u32));
            let (from, to) = host_window(&clock, s.expected_ns, s.latency_ns);
            s.causes.extend(overlapping(segments, from, to).map(|g| host_cause(g, from, to, &clock)));
        }
        section.summary = ExplainSection::summarize(&section.samples);
    }
}

/// A KVM exit (since, CPU, reason) handled until `end`: the vCPU thread's next entry into the
/// guest, or its switch out (then asleep or preempted).
fn exit_segment((start, cpu, reason): (u64, u32, String), end: u64) -> Option<Segment> {
    let name = format!("KVM exit {reason}");
    (end > start).then_some(Segment { kind: CauseKind::KvmExit, name, pid: None, cpu, start, end })
}

/// Close the runner segment of `cpu` (who ran there since its switch-in) at `ts`.
fn close_runner(pending: &mut Vec<Segment>, runner: Option<&(u64, Running)>, cpu: u32, ts: u64) {
    let Some(&(since, r)) = runner else { return };
    let start = pending.last().map_or(since, |p| p.end).max(since);
    if ts > start {
        let (kind, name) = if r.pid == 0 {
            (CauseKind::VcpuWakeup, "vCPU thread waiting, CPU idle".to_string())
        } else {
            (CauseKind::HostThread, comm_text(&r.comm))
        };
        pending.push(Segment { kind, name, pid: (r.pid != 0).then_some(r.pid), cpu, start, end: ts });
    }
}

/// The spans of a vCPU thread's time off the CPU, once it is back: asleep until its wake-up, the
/// CPU's runners after it; the runners all along when it was preempted (no wake-up).
fn settle(pending: &mut Vec<Segment>, since: u64, woken: Option<u64>, tid: u32) -> Vec<Segment> {
    let spans = std::mem::take(pending);
    let Some(w) = woken else { return spans };
    let cpu = spans.first().map_or(0, |s| s.cpu);
    let mut out = vec![asleep(since, w, cpu, tid)];
    out.extend(spans.into_iter().filter(|s| s.end > w).map(|s| Segment { start: s.start.max(w), ..s }));
    out
}

/// The vCPU thread off its CPU from `since` until its wake-up at `woken`.
fn asleep(since: u64, woken: u64, cpu: u32, tid: u32) -> Segment {
    Segment {
        kind: CauseKind::VcpuAsleep,
        name: format!("vCPU thread {tid} asleep (guest idle) until woken"),
        pid: None,
        cpu,
        start: since,
        end: woken,
    }
}

/// A guest sample's window on the host clock.
fn host_window(clock: &ClockSync, expected_ns: u64, latency_ns: u64) -> (u64, u64) {
    let rate = 1.0 + clock.drift_ppm / 1e6;
    let from = clock.run_start_host_ns + (expected_ns as f64 * rate) as u64;
    (from, from + (latency_ns as f64 * rate) as u64)
}

fn overlapping(segments: &[Segment], from: u64, to: u64) -> impl Iterator<Item = &Segment> {
    segments.iter().filter(move |g| g.start < to && g.end > from)
}

/// A segment clipped to `[from, to)`, its start counted from the guest run's start.
fn host_cause(g: &Segment, from: u64, to: u64, clock: &ClockSync) -> Cause {
    let (start, end) = (g.start.max(from), g.end.min(to));
    Cause {
        kind: g.kind,
        name: g.name.clone(),
        pid: g.pid,
        cpu: g.cpu,
        start_ns: start.saturating_sub(clock.run_start_host_ns),
        duration_ns: end - start,
        policy: None,
        kernel_prio: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(name: &str) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..name.len()].copy_from_slice(name.as_bytes());
        c
    }

    fn switch(ts: u64, cpu: u32, prev: u32, next: u32, name: &str) -> (u64, u32, Event) {
        let e = Event::Switch {
            prev_pid: prev,
            prev_comm: comm(""),
            prev_prio: 120,
            next_pid: next,
            next_comm: comm(name),
            next_prio: 120,
        };
        (ts, cpu, e)
    }

    const VCPU: u32 = 77;

    /// The vCPU thread sleeps at 100, is woken at 400 while `cc1` runs until 450, runs from 450
    /// (a NIC interrupt at 500-520), is preempted by `kworker` at 600 until 700.
    fn trace() -> HostTrace {
        let events = vec![
            switch(50, 1, 0, VCPU, "CPU 0/TCG"),
            switch(100, 1, VCPU, 0, "swapper/1"),
            switch(300, 1, 0, 9, "cc1"),
            (400, 0, Event::Wakeup { pid: VCPU }),
            switch(450, 1, 9, VCPU, "CPU 0/TCG"),
            (500, 1, Event::IrqEntry { irq: 5 }),
            (520, 1, Event::IrqExit),
            switch(600, 1, VCPU, 12, "kworker"),
            switch(700, 1, 12, VCPU, "CPU 0/TCG"),
        ];
        HostTrace {
            events,
            irq_names: HashMap::from([(5, "eth0".to_string())]),
            exit_reasons: ExitReasons::default(),
            present: vec!["sched/sched_switch".into()],
            absent: vec!["kvm/kvm_exit".into()],
            limitations: Vec::new(),
        }
    }

    #[test]
    fn sleep_wakeup_wait_interrupts_and_preemption_of_a_vcpu_thread() {
        let short: Vec<(CauseKind, String, u64, u64)> =
            trace().segments(VCPU).into_iter().map(|s| (s.kind, s.name, s.start, s.end)).collect();
        assert_eq!(
            short,
            vec![
                (CauseKind::VcpuAsleep, format!("vCPU thread {VCPU} asleep (guest idle) until woken"), 100, 400),
                (CauseKind::HostThread, "cc1".into(), 400, 450),
                (CauseKind::HostIrq, "eth0".into(), 500, 520),
                (CauseKind::HostThread, "kworker".into(), 600, 700),
            ]
        );
    }

    /// Woken at 400 on idle CPU 1, the thread's switch in from idle is not in the trace (as on this
    /// host's CPU 1), its switch out at 600 is: its sleep still ends at the wake-up, and the idle
    /// CPU is not taken for a wait.
    #[test]
    fn a_vcpu_thread_switched_in_from_idle_unseen_still_sleeps_until_its_wakeup() {
        let events = vec![
            switch(50, 1, 0, VCPU, "CPU 0/TCG"),
            switch(100, 1, VCPU, 0, "swapper/1"),
            (400, 1, Event::Wakeup { pid: VCPU }),
            switch(600, 1, VCPU, 0, "swapper/1"),
            (900, 1, Event::Wakeup { pid: VCPU }),
            switch(950, 1, 0, VCPU, "CPU 0/TCG"),
        ];
        let host = HostTrace { events, ..trace() };
        let short: Vec<(CauseKind, u64, u64)> =
            host.segments(VCPU).into_iter().map(|s| (s.kind, s.start, s.end)).collect();
        assert_eq!(
            short,
            vec![
                (CauseKind::VcpuAsleep, 100, 400),
                (CauseKind::VcpuAsleep, 600, 900),
                (CauseKind::VcpuWakeup, 900, 950),
            ]
        );
    }

    /// Under KVM: the vCPU thread leaves the guest at 460 for an external interrupt (the host's
    /// handler 500-520 inside it) until its entry at 530, and at 550 for HLT, which it handles
    /// until it is switched out at 600; an exit of another CPU's vCPU is not this one's.
    #[test]
    fn kvm_exits_of_a_running_vcpu_thread_last_until_its_entry_or_its_switch_out() {
        let format = "print fmt: \"reason %s\", (REC->isa == 1) ? __print_symbolic(REC->exit_reason & 0xffff, \
                      { 1, \"EXTERNAL_INTERRUPT\" }, { 12, \"HLT\" }) : __print_symbolic(REC->exit_reason, { 0x78, \"hlt\" })";
        let mut events = trace().events;
        events.extend([
            (460, 1, Event::KvmExit { reason: 1, isa: Some(1) }),
            (470, 2, Event::KvmExit { reason: 12, isa: Some(1) }),
            (530, 1, Event::KvmEntry),
            (550, 1, Event::KvmExit { reason: 12, isa: Some(1) }),
        ]);
        events.sort_by_key(|(ts, cpu, _)| (*ts, *cpu));
        let host = HostTrace { events, exit_reasons: ExitReasons::parse(format), ..trace() };
        let exits: Vec<(String, u64, u64)> = host
            .segments(VCPU)
            .into_iter()
            .filter(|s| s.kind == CauseKind::KvmExit)
            .map(|s| (s.name, s.start, s.end))
            .collect();
        assert_eq!(exits, [("KVM exit EXTERNAL_INTERRUPT".into(), 460, 530), ("KVM exit HLT".into(), 550, 600)]);
        assert!(CauseKind::KvmExit.is_host_side(), "an overlay of the guest's causes, as the other host ones");
    }

    #[test]
    fn a_guest_sample_gets_the_host_causes_of_its_window_on_the_host_clock() {
        let clock = ClockSync { run_start_host_ns: 90, precision_ns: 7, ..Default::default() };
        let guest_cause = Cause {
            kind: CauseKind::TimerIrq,
            name: "hrtimer".into(),
            pid: None,
            cpu: 0,
            start_ns: 300,
            duration_ns: 250,
            policy: None,
            kernel_prio: None,
        };
        let mut section = ExplainSection {
            samples: vec![rtvirt_model::results::ExplainedSample {
                cpu: 0,
                latency_ns: 250,
                expected_ns: 300,
                tid: 1,
                causes: vec![guest_cause],
                ..Default::default()
            }],
            guest_clock: Some(clock),
            ..Default::default()
        };
        trace().merge_into(&mut section, &[VCPU as i32], "tcg");
        let causes = &section.samples[0].causes;
        let host: Vec<(CauseKind, u64, u64)> =
            causes.iter().filter(|c| c.kind.is_host_side()).map(|c| (c.kind, c.start_ns, c.duration_ns)).collect();
        // window on the host clock: 390..640
        assert_eq!(
            host,
            vec![
                (CauseKind::VcpuAsleep, 300, 10),
                (CauseKind::HostThread, 310, 50),
                (CauseKind::HostIrq, 410, 20),
                (CauseKind::HostThread, 510, 40),
            ]
        );
        let guest: u64 = causes.iter().filter(|c| !c.kind.is_host_side()).map(|c| c.duration_ns).sum();
        assert_eq!(guest, 250, "the guest's causes still add up to the latency");
        assert!(section.events_absent.contains(&"host:kvm/kvm_exit".to_string()));
        assert!(section.limitations.iter().any(|l| l.contains("no kvm_* events")), "{:?}", section.limitations);
        assert!(section.summary.iter().any(|c| c.kind == CauseKind::HostThread && c.name == "cc1"));
    }
}
