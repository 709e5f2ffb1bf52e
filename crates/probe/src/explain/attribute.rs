//! One late wake-up's window, from the programmed expiry to the return from `clock_nanosleep`,
//! split into causes from one CPU's events in time order. Every nanosecond of the window goes to
//! exactly one cause (the causes add up to the latency):
//!
//! - before the thread armed its timer (its previous activation or its set-up ran late): the
//!   threads that ran, the measuring thread itself included, and handlers;
//! - before the thread's hrtimer expired: an IRQ or vector handler running, else `timer_irq`
//!   (the interrupt came late: interrupts disabled, the hardware or the hypervisor - this kernel
//!   has no preemptirq events to say which code disabled them);
//! - from the expiry to the switch to the thread: hard IRQ and vector handlers (an IPI's:
//!   `ipi`), softirqs, other threads, else `wakeup` (the scheduler and the switch itself);
//! - from the switch to the return: handlers, else `return` (`clock_nanosleep return` in the
//!   kernel up to the thread's `sys_exit`, then `user space after clock_nanosleep` up to its time
//!   stamp, when the measuring threads' syscall events are traced).
//!
//! A thread woken on an idle CPU that returns with no switch in the trace after its wake-up was
//! switched in from the idle task: some kernels record no switch out of idle on some CPUs (this
//! host's does not on CPU 1), and any other thread would have been switched out to it, in the
//! trace. Its wake-up and return are one `wakeup` ("wake-up from idle ...").
//!
//! Otherwise a window whose wake-up or switch is missing from the trace (events lost or absent) keeps what
//! was seen and calls the rest `unexplained`. When only the switch is missing, the thread's own
//! `sys_exit` still proves it ran from then on: what follows is explained as `user space after
//! clock_nanosleep`, and only the time from the wake-up to that `sys_exit` is `unexplained`.

use super::decode::{comm_text, Comm, Event, SOFTIRQS, VECTORS};
use rtvirt_model::results::CauseKind;
use std::collections::HashMap;

/// An event and its time (trace clock `mono`, = CLOCK_MONOTONIC, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timed {
    pub ts: u64,
    pub event: Event,
}

/// The thread running on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    pub pid: u32,
    pub comm: Comm,
    pub prio: i32,
}

/// What a CPU is doing, as far as the events seen so far tell.
#[derive(Debug, Clone, Default)]
pub struct CpuState {
    pub running: Option<Running>,
    pub irq: Option<u32>,
    pub vector: Option<usize>,
    pub softirq: Option<u32>,
    /// The hrtimer each thread armed last on this CPU, and its programmed expiry.
    pub timers: HashMap<u32, (u64, u64)>,
    /// The measuring threads in `clock_nanosleep` (their syscall events traced).
    pub sleeping: std::collections::HashSet<u32>,
}

impl CpuState {
    pub fn apply(&mut self, e: &Event) {
        match *e {
            Event::Switch { next_pid, next_comm, next_prio, .. } => {
                self.running = Some(Running { pid: next_pid, comm: next_comm, prio: next_prio })
            }
            Event::TimerStart { by_pid, timer, expires } => {
                self.timers.insert(by_pid, (timer, expires));
            }
            Event::IrqEntry { irq } => self.irq = Some(irq),
            Event::IrqExit => self.irq = None,
            Event::SoftirqEntry { vector } => self.softirq = Some(vector),
            Event::SoftirqExit => self.softirq = None,
            Event::VectorEntry { vector } => self.vector = Some(vector),
            Event::VectorExit => self.vector = None,
            Event::SleepEnter { pid } => {
                self.sleeping.insert(pid);
            }
            Event::SleepExit { pid } => {
                self.sleeping.remove(&pid);
            }
            Event::Wakeup { .. } | Event::TimerExpire { .. } | Event::KvmExit { .. } | Event::KvmEntry => {}
        }
    }
}

/// One wake-up to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub cpu: u32,
    pub tid: u32,
    /// Programmed expiry (CLOCK_MONOTONIC ns).
    pub expected: u64,
    /// Return from `clock_nanosleep`.
    pub woke: u64,
}

/// A cause in absolute time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    pub kind: CauseKind,
    pub name: String,
    pub pid: Option<u32>,
    pub kernel_prio: Option<i32>,
    pub start: u64,
    pub duration: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// The thread had not yet armed its timer for this expiry (its previous activation or its
    /// set-up overran, or it waited for the CPU).
    NotAsleep,
    BeforeExpiry,
    Woken,
    Running,
    /// Back in user space (its `clock_nanosleep` returned), not yet at its time stamp.
    Returned,
}

/// Split `w` into causes. `state` is the CPU's state before `events[0]`; events before the
/// window bring it up to date (the thread's armed timer, who runs).
pub fn attribute(state: &CpuState, events: &[Timed], irq_names: &HashMap<u32, String>, w: &Window) -> Vec<Share> {
    let mut st = state.clone();
    let first = events.partition_point(|e| e.ts < w.expected);
    events[..first].iter().for_each(|e| st.apply(&e.event));
    let mut armed = st.timers.get(&w.tid).filter(|&&(_, expires)| expires >= w.expected).map(|&(timer, _)| timer);
    let asleep = armed.is_some() || st.sleeping.contains(&w.tid);
    let mut phase = if asleep { Phase::BeforeExpiry } else { Phase::NotAsleep };
    let (mut cursor, mut out, mut woken_at) = (w.expected, Vec::new(), None);
    // The thread's `sys_exit` seen while its switch-in was not: the switch happened unseen before.
    let mut returned_unseen = None;
    let mut switched_since_wakeup = false;
    for e in events[first..].iter().take_while(|e| e.ts < w.woke) {
        if phase == Phase::Woken {
            credit_unseen_runner(&mut st, &mut out, &e.event, w.tid, woken_at.unwrap_or(w.expected));
        }
        push(&mut out, classify(&st, phase, w.tid, irq_names), cursor, e.ts);
        cursor = e.ts.max(cursor);
        let on_cpu = st.running.is_some_and(|r| r.pid == w.tid);
        let woken = if on_cpu { Phase::Running } else { Phase::Woken };
        phase = match e.event {
            Event::TimerStart { by_pid, timer, .. } if by_pid == w.tid && arming(phase, armed) => {
                armed = Some(timer);
                Phase::BeforeExpiry
            }
            Event::SleepEnter { pid } if pid == w.tid && phase == Phase::NotAsleep => Phase::BeforeExpiry,
            Event::SleepExit { pid } if pid == w.tid && phase == Phase::Running => Phase::Returned,
            Event::SleepExit { pid } if pid == w.tid && phase == Phase::Woken => {
                returned_unseen = Some(e.ts);
                Phase::Returned
            }
            Event::TimerExpire { timer } if phase == Phase::BeforeExpiry && Some(timer) == armed => woken,
            Event::Wakeup { pid } if pid == w.tid && phase <= Phase::BeforeExpiry => woken,
            Event::Switch { next_pid, .. } if next_pid == w.tid && phase == Phase::Woken => Phase::Running,
            _ => phase,
        };
        if phase >= Phase::Woken && woken_at.is_none() {
            woken_at = Some(e.ts);
        } else if woken_at.is_some() && matches!(e.event, Event::Switch { .. }) {
            switched_since_wakeup = true;
        }
        st.apply(&e.event);
    }
    push(&mut out, classify(&st, phase, w.tid, irq_names), cursor, w.woke);
    let switch_unseen = phase == Phase::Woken || returned_unseen.is_some();
    if switch_unseen && !switched_since_wakeup && st.running.is_some_and(|r| r.pid == 0) {
        from_idle_unseen(&mut out, woken_at);
    } else if phase < Phase::Running {
        unexplain(&mut out, phase, woken_at, u64::MAX);
    } else if let Some(until) = returned_unseen {
        unexplain(&mut out, Phase::Woken, woken_at, until);
    }
    out
}

/// Woken on an idle CPU, the thread returned with no switch in the trace since its wake-up: the
/// switch it ran after can only have been the one out of the idle task (any other thread that ran
/// first would have been switched out to it, in the trace), which some kernels do not record
/// (docs/measure.md). The time from the wake-up is the wake-up from idle and the return, apart.
fn from_idle_unseen(out: &mut [Share], woken_at: Option<u64>) {
    let since_wakeup = |s: &Share| woken_at.is_some_and(|t| s.start >= t);
    for share in out.iter_mut().filter(|s| s.kind == CauseKind::Wakeup && since_wakeup(s)) {
        share.name = WAKEUP_FROM_IDLE.into();
    }
}

/// [`from_idle_unseen`]'s name for the wake-up whose switch out of idle is not in the trace.
pub const WAKEUP_FROM_IDLE: &str = "wake-up from idle to the return (switch-in not traced)";

/// Whether the thread's `hrtimer_start` arms the timer of this window: before it went to sleep,
/// or once in `clock_nanosleep` (its entry seen) before any timer was known.
fn arming(phase: Phase, armed: Option<u64>) -> bool {
    phase == Phase::NotAsleep || (phase == Phase::BeforeExpiry && armed.is_none())
}

/// The switch to the woken thread names the thread it preempted (`prev_*`). When the switch that
/// put that thread on the CPU is missing from the trace (the kernel dropped it without counting it
/// lost; docs/measure.md), the switch-out still proves who held the CPU: the time since the wake-up
/// that was called `wakeup` for want of a known runner is that thread's (handlers keep theirs).
fn credit_unseen_runner(st: &mut CpuState, out: &mut [Share], event: &Event, tid: u32, woken_at: u64) {
    let Event::Switch { prev_pid, prev_comm, prev_prio, next_pid, .. } = *event else { return };
    let unseen = st.running.is_none_or(|r| r.pid != prev_pid);
    if next_pid != tid || prev_pid == 0 || prev_pid == tid || !unseen {
        return;
    }
    let runner = Running { pid: prev_pid, comm: prev_comm, prio: prev_prio };
    st.running = Some(runner);
    for share in out.iter_mut().filter(|s| s.kind == CauseKind::Wakeup && s.start >= woken_at) {
        share.kind = CauseKind::Thread;
        share.name = comm_text(&prev_comm);
        share.pid = Some(prev_pid);
        share.kernel_prio = Some(prev_prio);
    }
}

/// The thread returned without the trace showing how it got there: what only the missing
/// milestone would tell (the timer's delay, the wake-up, and after the wake-up who held the CPU,
/// since the switch to the thread may have happened unseen) becomes `unexplained`, up to `until`
/// (the thread's own `sys_exit`, when that was seen).
fn unexplain(out: &mut Vec<Share>, phase: Phase, woken_at: Option<u64>, until: u64) {
    let missing = if phase <= Phase::BeforeExpiry { "no expiry or wake-up" } else { "no switch to the thread" };
    let after_wakeup = |s: &Share| woken_at.is_some_and(|t| s.start >= t);
    for s in out.iter_mut().filter(|s| s.start < until) {
        let doubtful = matches!(s.kind, CauseKind::TimerIrq | CauseKind::Wakeup)
            || (s.kind == CauseKind::Thread && after_wakeup(s));
        if doubtful {
            let last = if s.kind == CauseKind::Thread { format!(", {} running last", s.name) } else { String::new() };
            s.kind = CauseKind::Unexplained;
            s.name = format!("{missing} in the trace{last}");
            s.pid = None;
            s.kernel_prio = None;
        }
    }
    merge_neighbours(out);
}

/// Who the time between two events belongs to.
fn classify(
    st: &CpuState,
    phase: Phase,
    tid: u32,
    irq_names: &HashMap<u32, String>,
) -> (CauseKind, String, Option<Running>) {
    let handler = match (st.vector, st.irq) {
        (Some(v), _) if phase == Phase::BeforeExpiry && VECTORS[v] == "local_timer" => {
            return (CauseKind::TimerIrq, "hrtimer".into(), None)
        }
        (Some(v), _) if VECTORS[v] != "local_timer" => return (CauseKind::Ipi, VECTORS[v].to_string(), None),
        (Some(v), _) => Some(VECTORS[v].to_string()),
        (None, Some(irq)) => Some(irq_names.get(&irq).cloned().unwrap_or_else(|| format!("irq {irq}"))),
        (None, None) => None,
    };
    if let Some(name) = handler {
        return (CauseKind::Irq, name, None);
    }
    match phase {
        Phase::BeforeExpiry => (CauseKind::TimerIrq, "hrtimer".into(), None),
        _ if st.softirq.is_some() => {
            let v = st.softirq.unwrap_or(0) as usize;
            (CauseKind::Softirq, SOFTIRQS.get(v).map_or_else(|| format!("softirq {v}"), |s| s.to_string()), None)
        }
        Phase::Woken => match st.running {
            Some(r) if r.pid != 0 && r.pid != tid => (CauseKind::Thread, comm_text(&r.comm), Some(r)),
            _ => (CauseKind::Wakeup, "wake-up to switch-in".into(), None),
        },
        // Late to sleep: whoever ran, the measuring thread itself included, delayed it.
        Phase::NotAsleep => match st.running {
            Some(r) if r.pid != 0 => (CauseKind::Thread, comm_text(&r.comm), Some(r)),
            _ => (CauseKind::Wakeup, "wake-up to switch-in".into(), None),
        },
        Phase::Running => (CauseKind::Return, "clock_nanosleep return".into(), None),
        Phase::Returned => (CauseKind::Return, "user space after clock_nanosleep".into(), None),
    }
}

/// Add `[from, to)` to the causes, extending the last one when it is the same.
fn push(out: &mut Vec<Share>, (kind, name, running): (CauseKind, String, Option<Running>), from: u64, to: u64) {
    if to <= from {
        return;
    }
    let pid = running.map(|r| r.pid);
    if let Some(last) = out.last_mut() {
        if last.kind == kind && last.name == name && last.pid == pid && last.start + last.duration == from {
            last.duration += to - from;
            return;
        }
    }
    out.push(Share { kind, name, pid, kernel_prio: running.map(|r| r.prio), start: from, duration: to - from });
}

fn merge_neighbours(out: &mut Vec<Share>) {
    let mut merged: Vec<Share> = Vec::with_capacity(out.len());
    for s in out.drain(..) {
        match merged.last_mut() {
            Some(l) if l.kind == s.kind && l.name == s.name && l.pid == s.pid && l.start + l.duration == s.start => {
                l.duration += s.duration
            }
            _ => merged.push(s),
        }
    }
    *out = merged;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(name: &str) -> Comm {
        let mut c = [0u8; 16];
        c[..name.len()].copy_from_slice(name.as_bytes());
        c
    }

    fn switch(ts: u64, prev: u32, next: u32, name: &str, prio: i32) -> Timed {
        let event = Event::Switch {
            prev_pid: prev,
            prev_comm: comm(""),
            prev_prio: 120,
            next_pid: next,
            next_comm: comm(name),
            next_prio: prio,
        };
        Timed { ts, event }
    }

    fn at(ts: u64, event: Event) -> Timed {
        Timed { ts, event }
    }

    const ME: u32 = 100;
    const HOG: u32 = 200;

    /// The thread arms its timer for 1000, a FIFO hog runs from 900 to 1500, a NIC interrupt at
    /// 1200-1250, the timer fires at 1010, the switch at 1500, the return at 1502.
    fn hog_trace() -> Vec<Timed> {
        vec![
            at(10, Event::TimerStart { by_pid: ME, timer: 0xabc, expires: 1000 }),
            switch(11, ME, 0, "swapper/1", 120),
            switch(900, 0, HOG, "hog", 0),
            at(1005, Event::VectorEntry { vector: 0 }),
            at(1010, Event::TimerExpire { timer: 0xabc }),
            at(1011, Event::Wakeup { pid: ME }),
            at(1020, Event::VectorExit),
            at(1200, Event::IrqEntry { irq: 42 }),
            at(1250, Event::IrqExit),
            switch(1500, HOG, ME, "rtvirt-timer1", 9),
        ]
    }

    #[test]
    fn a_hogs_time_after_expiry_is_the_threads_and_the_causes_add_up_to_the_latency() {
        let names = HashMap::from([(42, "eth0".to_string())]);
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1502 };
        let causes = attribute(&CpuState::default(), &hog_trace(), &names, &w);
        let short: Vec<(CauseKind, &str, u64)> = causes.iter().map(|c| (c.kind, c.name.as_str(), c.duration)).collect();
        assert_eq!(
            short,
            vec![
                (CauseKind::TimerIrq, "hrtimer", 10),
                (CauseKind::Irq, "local_timer", 10),
                (CauseKind::Thread, "hog", 180),
                (CauseKind::Irq, "eth0", 50),
                (CauseKind::Thread, "hog", 250),
                (CauseKind::Return, "clock_nanosleep return", 2),
            ]
        );
        assert_eq!(causes.iter().map(|c| c.duration).sum::<u64>(), 502);
        assert_eq!(causes[2].pid, Some(HOG));
        assert_eq!(causes[2].kernel_prio, Some(0));
    }

    #[test]
    fn without_the_switch_in_the_trace_the_rest_is_unexplained_not_dropped() {
        let mut trace = hog_trace();
        trace.pop();
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1502 };
        let causes = attribute(&CpuState::default(), &trace, &HashMap::new(), &w);
        assert_eq!(causes.iter().map(|c| c.duration).sum::<u64>(), 502);
        assert_eq!(causes[0].kind, CauseKind::Unexplained);
        assert!(causes.iter().any(|c| c.kind == CauseKind::Irq), "what was seen stays");
        assert!(
            !causes.iter().any(|c| c.kind == CauseKind::Thread),
            "after the wake-up the hog may not have held the CPU: the switch may be missing"
        );
    }

    /// The switch into the hog at 900 is missing from the trace (as the kernel sometimes drops it
    /// uncounted): the switch out of it at 1500 names it, so its time is still the hog's.
    #[test]
    fn a_missing_switch_in_is_recovered_from_the_switch_out() {
        let mut trace = hog_trace();
        trace.remove(2);
        let last = trace.len() - 1;
        trace[last] = at(
            1500,
            Event::Switch {
                prev_pid: HOG,
                prev_comm: comm("hog"),
                prev_prio: 0,
                next_pid: ME,
                next_comm: comm("rtvirt-timer1"),
                next_prio: 9,
            },
        );
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1502 };
        let causes = attribute(&CpuState::default(), &trace, &HashMap::from([(42, "eth0".to_string())]), &w);
        let hog: u64 =
            causes.iter().filter(|c| c.kind == CauseKind::Thread && c.name == "hog").map(|c| c.duration).sum();
        assert_eq!(hog, 180 + 250, "{causes:?}");
        assert!(causes.iter().all(|c| c.kind != CauseKind::Wakeup && c.kind != CauseKind::Unexplained), "{causes:?}");
        assert_eq!(causes.iter().map(|c| c.duration).sum::<u64>(), 502);
    }

    /// The thread arms its timer only at 1300 (its set-up waited for a hog until 1250), the
    /// expiry is already past: the hog and the thread itself are the causes; it never leaves
    /// the CPU, so its wake-up is its return.
    #[test]
    fn a_thread_late_to_sleep_is_delayed_by_what_ran_before_it_armed_its_timer() {
        let trace = vec![
            switch(900, 0, HOG, "hog", 0),
            switch(1250, HOG, ME, "rtvirt-timer1", 9),
            at(1300, Event::TimerStart { by_pid: ME, timer: 5, expires: 1000 }),
            at(1310, Event::VectorEntry { vector: 0 }),
            at(1311, Event::TimerExpire { timer: 5 }),
            at(1312, Event::Wakeup { pid: ME }),
            at(1315, Event::VectorExit),
        ];
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1320 };
        let causes = attribute(&CpuState::default(), &trace, &HashMap::new(), &w);
        let short: Vec<(CauseKind, &str, u64)> = causes.iter().map(|c| (c.kind, c.name.as_str(), c.duration)).collect();
        assert_eq!(
            short,
            vec![
                (CauseKind::Thread, "hog", 250),
                (CauseKind::Thread, "rtvirt-timer1", 50),
                (CauseKind::TimerIrq, "hrtimer", 11),
                (CauseKind::Irq, "local_timer", 4),
                (CauseKind::Return, "clock_nanosleep return", 5),
            ]
        );
    }

    #[test]
    fn an_idle_cpu_wakes_through_timer_irq_and_wakeup() {
        let trace = vec![
            at(10, Event::TimerStart { by_pid: ME, timer: 7, expires: 1000 }),
            switch(11, ME, 0, "swapper/1", 120),
            at(1030, Event::TimerExpire { timer: 7 }),
            at(1031, Event::Wakeup { pid: ME }),
            switch(1040, 0, ME, "rtvirt-timer1", 9),
        ];
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1041 };
        let kinds: Vec<(CauseKind, u64)> =
            attribute(&CpuState::default(), &trace, &HashMap::new(), &w).iter().map(|c| (c.kind, c.duration)).collect();
        assert_eq!(kinds, vec![(CauseKind::TimerIrq, 30), (CauseKind::Wakeup, 10), (CauseKind::Return, 1)]);
    }

    /// With the measuring thread's own syscall events: it enters `clock_nanosleep` at 5 (no
    /// `hrtimer_start` traced), returns to user space at 1045 and stamps its time at 1050.
    #[test]
    fn the_syscall_events_split_the_return_and_stand_for_a_missing_timer_start() {
        let trace = vec![
            at(5, Event::SleepEnter { pid: ME }),
            switch(11, ME, 0, "swapper/1", 120),
            at(1030, Event::TimerExpire { timer: 7 }),
            at(1031, Event::Wakeup { pid: ME }),
            switch(1040, 0, ME, "rtvirt-timer1", 9),
            at(1045, Event::SleepExit { pid: ME }),
        ];
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1050 };
        let causes: Vec<(CauseKind, String, u64)> = attribute(&CpuState::default(), &trace, &HashMap::new(), &w)
            .into_iter()
            .map(|c| (c.kind, c.name, c.duration))
            .collect();
        let named = |k, n: &str, d| (k, n.to_string(), d);
        assert_eq!(
            causes,
            vec![
                named(CauseKind::TimerIrq, "hrtimer", 31),
                named(CauseKind::Wakeup, "wake-up to switch-in", 9),
                named(CauseKind::Return, "clock_nanosleep return", 5),
                named(CauseKind::Return, "user space after clock_nanosleep", 5),
            ]
        );
    }

    /// Woken on an idle CPU, the thread returns with no switch in the trace (the kernel records no
    /// switch out of idle): the time from the wake-up is the wake-up from idle, nothing is
    /// unexplained; with its `sys_exit`, the rest is still user space.
    #[test]
    fn a_wakeup_from_idle_whose_switch_in_is_not_traced_is_the_wakeup() {
        let trace = vec![
            at(10, Event::TimerStart { by_pid: ME, timer: 7, expires: 1000 }),
            switch(11, ME, 0, "swapper/1", 120),
            at(1030, Event::TimerExpire { timer: 7 }),
            at(1031, Event::Wakeup { pid: ME }),
        ];
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1050 };
        let named = |c: Share| (c.kind, c.name, c.start, c.duration);
        let causes: Vec<_> =
            attribute(&CpuState::default(), &trace, &HashMap::new(), &w).into_iter().map(named).collect();
        assert_eq!(
            causes,
            vec![
                (CauseKind::TimerIrq, "hrtimer".to_string(), 1000, 30),
                (CauseKind::Wakeup, WAKEUP_FROM_IDLE.to_string(), 1030, 20)
            ]
        );

        let mut with_exit = trace.clone();
        with_exit.push(at(1045, Event::SleepExit { pid: ME }));
        let causes: Vec<_> =
            attribute(&CpuState::default(), &with_exit, &HashMap::new(), &w).into_iter().map(named).collect();
        assert_eq!(causes[1], (CauseKind::Wakeup, WAKEUP_FROM_IDLE.to_string(), 1030, 15));
        assert_eq!(causes[2], (CauseKind::Return, "user space after clock_nanosleep".to_string(), 1045, 5));
    }

    /// After the wake-up a thread was switched in from idle (that switch traced): who held the CPU
    /// until the measuring thread ran is unknown, so it stays unexplained.
    #[test]
    fn another_switch_after_the_wakeup_keeps_a_missing_switch_in_unexplained() {
        let trace = vec![
            at(10, Event::TimerStart { by_pid: ME, timer: 7, expires: 1000 }),
            switch(11, ME, 0, "swapper/1", 120),
            at(1030, Event::TimerExpire { timer: 7 }),
            at(1031, Event::Wakeup { pid: ME }),
            switch(1035, 0, 77, "batch", 120),
        ];
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1050 };
        let causes = attribute(&CpuState::default(), &trace, &HashMap::new(), &w);
        assert_eq!(causes.iter().map(|c| c.duration).sum::<u64>(), 50);
        assert!(!causes.iter().any(|c| c.name == WAKEUP_FROM_IDLE), "{causes:?}");
        assert_eq!(causes.last().unwrap().kind, CauseKind::Unexplained, "{causes:?}");
    }

    /// The switch into the measuring thread is missing, but its own `sys_exit` at 1045 proves it
    /// ran by then: from there on it is user space; only wake-up to `sys_exit` is unexplained (a
    /// thread, not idle, held the CPU: it may have run on after the wake-up).
    #[test]
    fn the_threads_own_sys_exit_explains_the_rest_when_its_switch_in_is_missing() {
        let trace = vec![
            at(5, Event::SleepEnter { pid: ME }),
            switch(11, ME, 77, "batch", 120),
            at(1030, Event::TimerExpire { timer: 7 }),
            at(1031, Event::Wakeup { pid: ME }),
            at(1045, Event::SleepExit { pid: ME }),
        ];
        let w = Window { cpu: 1, tid: ME, expected: 1000, woke: 1050 };
        let causes = attribute(&CpuState::default(), &trace, &HashMap::new(), &w);
        assert_eq!(causes.iter().map(|c| c.duration).sum::<u64>(), 50, "the causes add up to the latency");
        let last = causes.last().unwrap();
        assert_eq!(
            (last.kind, last.name.as_str(), last.start, last.duration),
            (CauseKind::Return, "user space after clock_nanosleep", 1045, 5)
        );
        let unexplained: Vec<&Share> = causes.iter().filter(|c| c.kind == CauseKind::Unexplained).collect();
        assert!(!unexplained.is_empty() && unexplained.iter().all(|c| c.start + c.duration <= 1045), "{causes:?}");
        assert!(
            unexplained.iter().any(|c| c.start <= 1031 && c.start + c.duration >= 1045),
            "wake-up to sys_exit: {causes:?}"
        );

        let mut without_exit = trace.clone();
        without_exit.pop();
        let causes = attribute(&CpuState::default(), &without_exit, &HashMap::new(), &w);
        assert_eq!(causes.last().unwrap().kind, CauseKind::Unexplained, "without it, the rest stays unexplained");
    }
}
