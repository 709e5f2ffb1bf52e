//! `measure tasks --explain`: where the longest jobs of each task spent their time, from the
//! kernel's trace of the CPUs the guests' vCPU threads run on.
//!
//! A tracing instance of rtvirt's own records the scheduler, IRQ and softirq events of those
//! CPUs while the task sets run; a reader thread drains it every [`POLL`] into memory, at most
//! [`MAX_EVENTS_PER_CPU`] events per CPU (beyond that the trace is cut, and the section says so).
//! Each task keeps its [`super::super::tasks::protocol::WORST_KEPT`] longest jobs (release,
//! completion, CPU, thread). Each such job's window, from its release to its completion on its
//! CPU, is split into causes that add up to its response time ([`attribute_job`]):
//!
//! - a hard IRQ or vector handler, or a softirq, running on the CPU;
//! - the guest's vCPU thread running (`guest`: this job and the guest's other tasks, as its
//!   user-level scheduler chose - the trace cannot tell them apart);
//! - another thread running (`thread`: another guest's vCPU, a kernel thread...);
//! - the CPU idle before the vCPU thread ran after the release (`wakeup`: the release's wake-up);
//! - the CPU idle after it ran (`throttled`: runnable, not running, so out of budget until its
//!   next period - with tick enforcement, paying back an overrun);
//! - nothing known (`unexplained`: the events before the window were cut or lost).
//!
//! The attribution is written here rather than reusing [`super::attribute`], which follows a
//! timer wake-up's phases (armed, expired, woken, returned); a job's window has none of them.

use super::attribute::{CpuState, Timed};
use super::decode::{comm_text, Decoder, SOFTIRQS, VECTORS};
use rtvirt_model::results::{Cause, CauseKind, ExplainSection, ExplainedSample};
use rtvirt_os::tracefs::{CpuReader, Instance};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the reader drains the buffers.
const POLL: Duration = Duration::from_millis(20);
/// Ring buffer per CPU (KiB).
const BUFFER_KB: u32 = 4096;
/// Events kept per CPU at most.
pub const MAX_EVENTS_PER_CPU: usize = 2_000_000;

/// One job to explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobWindow {
    /// "guest/task".
    pub task: String,
    pub cpu: u32,
    /// The vCPU thread that ran it.
    pub tid: u32,
    /// Release and completion (CLOCK_MONOTONIC ns).
    pub release: u64,
    pub finish: u64,
}

/// What the reader thread gathered.
struct Collected {
    events: HashMap<u32, Vec<Timed>>,
    irq_names: HashMap<u32, String>,
    lost: u64,
    cut: Vec<u32>,
}

/// A running trace of the task sets' CPUs.
pub struct JobTrace {
    stop: Arc<AtomicBool>,
    reader: std::thread::JoinHandle<Result<Collected, String>>,
    present: Vec<String>,
    absent: Vec<String>,
}

impl JobTrace {
    /// Start tracing `cpus` (the instance journaled under `state_dir`).
    pub fn start(state_dir: &Path, cpus: &[u32]) -> Result<JobTrace, String> {
        let instance =
            Instance::create(state_dir, &super::decode::events(false), BUFFER_KB).map_err(|e| e.to_string())?;
        instance.limit_to_cpus(cpus).map_err(|e| e.to_string())?;
        if let Some(missing) =
            ["sched/sched_switch", "sched/sched_wakeup"].iter().find(|e| !instance.present.iter().any(|p| p == *e))
        {
            return Err(format!("the kernel has no {missing} event"));
        }
        let decoder = Decoder::new(&instance);
        let readers =
            cpus.iter().map(|&c| instance.reader(c).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
        instance.set_on(true).map_err(|e| e.to_string())?;
        let (present, absent) = (instance.present.clone(), instance.absent.clone());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let reader = std::thread::Builder::new()
            .name("rtvirt-jobtrace".into())
            .spawn(move || collect(instance, decoder, readers, &flag))
            .map_err(|e| e.to_string())?;
        Ok(JobTrace { stop, reader, present, absent })
    }

    /// Stop tracing and explain `jobs` (times in the section since `run_start`).
    pub fn finish(self, jobs: &[JobWindow], run_start: u64) -> ExplainSection {
        self.stop.store(true, Ordering::Release);
        let mut section =
            ExplainSection { events_present: self.present, events_absent: self.absent, ..Default::default() };
        let collected = match self.reader.join() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return limited(section, format!("reading the trace failed, no job explained: {e}")),
            Err(_) => return limited(section, "the trace reader failed, no job explained".into()),
        };
        let none = Vec::new();
        for job in jobs {
            let events = collected.events.get(&job.cpu).unwrap_or(&none);
            let causes = attribute_job(events, &collected.irq_names, job, run_start);
            section.samples.push(ExplainedSample {
                task: Some(job.task.clone()),
                cpu: job.cpu,
                latency_ns: job.finish.saturating_sub(job.release),
                expected_ns: job.release.saturating_sub(run_start),
                tid: job.tid,
                causes,
                ..Default::default()
            });
        }
        section.samples.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        section.samples_above = section.samples.len() as u64;
        section.summary = ExplainSection::summarize(&section.samples);
        section.events_lost = collected.lost;
        if collected.lost > 0 {
            section
                .limitations
                .push(format!("{} trace events were lost: jobs in their time are partly unexplained", collected.lost));
        }
        for cpu in collected.cut {
            section.limitations.push(format!(
                "CPU {cpu}: the trace was cut at {MAX_EVENTS_PER_CPU} events: later jobs there are unexplained"
            ));
        }
        section
    }
}

fn limited(mut section: ExplainSection, why: String) -> ExplainSection {
    section.limitations.push(why);
    section
}

/// The reader thread: drain every CPU's buffer each [`POLL`] until `stop`, then once more.
fn collect(
    instance: Instance,
    mut decoder: Decoder,
    mut readers: Vec<CpuReader>,
    stop: &AtomicBool,
) -> Result<Collected, String> {
    let mut c = Collected { events: HashMap::new(), irq_names: HashMap::new(), lost: 0, cut: vec![] };
    loop {
        let last = stop.load(Ordering::Acquire);
        if last {
            instance.set_on(false).map_err(|e| e.to_string())?;
        }
        for r in &mut readers {
            drain(r, &mut decoder, &mut c)?;
        }
        if last {
            break;
        }
        std::thread::sleep(POLL);
    }
    c.lost += readers.iter().map(|r| instance.lost_events(r.cpu)).sum::<u64>();
    c.irq_names = std::mem::take(&mut decoder.irq_names);
    Ok(c)
}

fn drain(r: &mut CpuReader, decoder: &mut Decoder, c: &mut Collected) -> Result<(), String> {
    let cpu = r.cpu;
    while let Some(page) = r.next_page().map_err(|e| e.to_string())? {
        c.lost += page.missed().unwrap_or(0);
        let events = c.events.entry(cpu).or_default();
        for raw in page.events() {
            if events.len() >= MAX_EVENTS_PER_CPU {
                if !c.cut.contains(&cpu) {
                    c.cut.push(cpu);
                }
                break;
            }
            if let Some(event) = decoder.decode(&raw) {
                events.push(Timed { ts: raw.ts, event });
            }
        }
    }
    Ok(())
}

/// Split `job`'s window (release to completion) into causes, from its CPU's `events` in time
/// order; their durations add up to the response time.
pub fn attribute_job(
    events: &[Timed],
    irq_names: &HashMap<u32, String>,
    job: &JobWindow,
    run_start: u64,
) -> Vec<Cause> {
    let mut st = CpuState::default();
    let first = events.partition_point(|e| e.ts < job.release);
    events[..first].iter().for_each(|e| st.apply(&e.event));
    let mut ran = st.running.is_some_and(|r| r.pid == job.tid);
    let mut out: Vec<Cause> = Vec::new();
    let mut cursor = job.release;
    for e in events[first..].iter().take_while(|e| e.ts < job.finish) {
        push(&mut out, classify(&st, ran, job, irq_names), cursor, e.ts, job, run_start);
        cursor = cursor.max(e.ts);
        st.apply(&e.event);
        ran |= st.running.is_some_and(|r| r.pid == job.tid);
    }
    push(&mut out, classify(&st, ran, job, irq_names), cursor, job.finish, job, run_start);
    out
}

/// What the CPU was doing, as far as `st` tells: (kind, name, pid, kernel prio).
fn classify(
    st: &CpuState,
    ran: bool,
    job: &JobWindow,
    irq_names: &HashMap<u32, String>,
) -> (CauseKind, String, Option<u32>, Option<i32>) {
    if let Some(irq) = st.irq {
        let name = irq_names.get(&irq).cloned().unwrap_or_else(|| format!("irq {irq}"));
        return (CauseKind::Irq, name, None, None);
    }
    if let Some(v) = st.vector {
        return (CauseKind::Irq, VECTORS.get(v).copied().unwrap_or("vector").to_string(), None, None);
    }
    if let Some(v) = st.softirq {
        return (CauseKind::Softirq, SOFTIRQS.get(v as usize).copied().unwrap_or("softirq").to_string(), None, None);
    }
    match st.running {
        None => (CauseKind::Unexplained, "no switch on this CPU traced before".into(), None, None),
        Some(r) if r.pid == job.tid => {
            (CauseKind::Guest, format!("{} (this job and its guest's other tasks)", comm_text(&r.comm)), None, None)
        }
        Some(r) if r.pid != 0 => (CauseKind::Thread, comm_text(&r.comm), Some(r.pid), Some(r.prio)),
        Some(_) if ran => (CauseKind::Throttled, "vCPU thread out of budget (CPU idle)".into(), None, None),
        Some(_) => (CauseKind::Wakeup, "release: the vCPU thread not yet woken (CPU idle)".into(), None, None),
    }
}

/// Add `[from, to)` to the causes, merging it into the last one when it is the same.
fn push(
    out: &mut Vec<Cause>,
    (kind, name, pid, prio): (CauseKind, String, Option<u32>, Option<i32>),
    from: u64,
    to: u64,
    job: &JobWindow,
    run_start: u64,
) {
    if to <= from {
        return;
    }
    if let Some(last) = out.last_mut().filter(|c| c.kind == kind && c.name == name && c.pid == pid) {
        last.duration_ns += to - from;
        return;
    }
    out.push(Cause {
        kind,
        name,
        pid,
        cpu: job.cpu,
        start_ns: from.saturating_sub(run_start),
        duration_ns: to - from,
        policy: None,
        kernel_prio: prio,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::decode::{Comm, Event};

    fn comm(s: &str) -> Comm {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    fn switch(ts: u64, prev: u32, next: u32, name: &str) -> Timed {
        let event = Event::Switch {
            prev_pid: prev,
            prev_comm: comm("prev"),
            prev_prio: 120,
            next_pid: next,
            next_comm: comm(name),
            next_prio: -1,
        };
        Timed { ts, event }
    }

    #[test]
    fn a_jobs_window_is_split_into_what_its_cpu_did_and_adds_up_to_the_response() {
        // the vCPU thread (7) asleep on an idle CPU at the release (100); woken and switched in
        // at 130; an IRQ 200..210; another guest's thread (9) 300..400; the CPU idle 400..450
        // while 7 is runnable (throttled); 7 again until the completion at 500
        let events = vec![
            switch(10, 7, 0, "swapper/1"),
            Timed { ts: 125, event: Event::Wakeup { pid: 7 } },
            switch(130, 0, 7, "rtvirt-g:vm1"),
            Timed { ts: 200, event: Event::IrqEntry { irq: 5 } },
            Timed { ts: 210, event: Event::IrqExit },
            switch(300, 7, 9, "rtvirt-g:vm2"),
            switch(400, 9, 0, "swapper/1"),
            switch(450, 0, 7, "rtvirt-g:vm1"),
            switch(900, 7, 0, "swapper/1"),
        ];
        let names = HashMap::from([(5, "virtio0".to_string())]);
        let job = JobWindow { task: "vm1/t1".into(), cpu: 1, tid: 7, release: 100, finish: 500 };
        let causes = attribute_job(&events, &names, &job, 0);
        let got: Vec<(CauseKind, u64, u64)> = causes.iter().map(|c| (c.kind, c.start_ns, c.duration_ns)).collect();
        assert_eq!(
            got,
            vec![
                (CauseKind::Wakeup, 100, 30),
                (CauseKind::Guest, 130, 70),
                (CauseKind::Irq, 200, 10),
                (CauseKind::Guest, 210, 90),
                (CauseKind::Thread, 300, 100),
                (CauseKind::Throttled, 400, 50),
                (CauseKind::Guest, 450, 50),
            ]
        );
        assert_eq!(causes.iter().map(|c| c.duration_ns).sum::<u64>(), 400, "they add up to the response time");
        assert_eq!(
            (causes[2].name.as_str(), causes[4].name.as_str(), causes[4].pid),
            ("virtio0", "rtvirt-g:vm2", Some(9))
        );
    }

    #[test]
    fn without_a_switch_before_the_window_its_start_is_unexplained() {
        let events = vec![switch(150, 3, 7, "rtvirt-g:vm1")];
        let job = JobWindow { task: "vm1/t1".into(), cpu: 0, tid: 7, release: 100, finish: 200 };
        let got: Vec<(CauseKind, u64)> =
            attribute_job(&events, &HashMap::new(), &job, 0).iter().map(|c| (c.kind, c.duration_ns)).collect();
        assert_eq!(got, vec![(CauseKind::Unexplained, 50), (CauseKind::Guest, 50)]);
    }
}
