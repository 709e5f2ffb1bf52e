//! Per-core scheduling of the network path's threads.
//!
//! Priorities: the hard-IRQ context (1000) runs before any thread; in vanilla mode a thread
//! inside a NET_RX round (ksoftirqd) is not preemptible by threads (999, bottom halves disabled);
//! SCHED_FIFO 1..99 (higher runs first, FIFO order among equals, effective priority raised by
//! priority inheritance through the softirq locks); normal threads (0) share by CFS vruntime with
//! wake-up preemption (1 ms granularity) and slice preemption at the 1 ms tick.
//! Placement on wake-up: the previous core if idle, another allowed idle core, a core running
//! something of lower priority (RT push), else the previous core. An idle core pulls a ready
//! thread it is allowed to run. A thread switched in pays the context-switch cost and the cache
//! reload penalty for the bytes others copied since it last ran.

use super::{Action, Next, Role, Sim, ThreadIndex, ThreadState};
use crate::net::cache::reload_penalty;
use rtvirt_model::scenario::net::IrqMode;
use rtvirt_model::Nanos;
use serde_json::json;

const WAKEUP_GRAN: u64 = 1_000_000;
const SCHED_LATENCY: u64 = 6_000_000;
const MIN_GRAN: u64 = 750_000;
pub(crate) const PRIO_IRQ: i32 = 1000;
const PRIO_BH: i32 = 999;

impl Sim {
    /// Effective priority (see module doc).
    pub(crate) fn effective_priority(&self, t: ThreadIndex) -> i32 {
        let th = &self.threads[t];
        if th.role != Role::IrqCtx(th.core) && self.net.irq == IrqMode::HardIrq && self.holds_lock(t) {
            return PRIO_BH;
        }
        th.base.max(th.boost)
    }

    /// Make a sleeping (or lock-granted) thread runnable.
    pub(crate) fn wake(&mut self, t: ThreadIndex) {
        if !matches!(self.threads[t].state, ThreadState::Sleeping | ThreadState::Blocked) {
            return;
        }
        let c = self.place(t);
        if self.threads[t].base == 0 {
            let floor = self.cores[c].min_vr.saturating_sub(SCHED_LATENCY / 2);
            let th = &mut self.threads[t];
            th.vruntime = th.vruntime.max(floor);
        }
        self.enqueue(t, c);
        self.resched(c);
    }

    /// Choose the core a runnable thread goes to.
    fn place(&self, t: ThreadIndex) -> usize {
        let th = &self.threads[t];
        let allowed = |c: usize| th.mask >> c & 1 == 1;
        let idle = |c: usize| self.cores[c].current.is_none() && self.cores[c].ready.is_empty();
        if allowed(th.core) && idle(th.core) {
            return th.core;
        }
        let n = self.cores.len();
        if let Some(c) = (0..n).find(|&c| allowed(c) && idle(c)) {
            return c;
        }
        let me = self.effective_priority(t);
        if me > 0 {
            let lowest = (0..n)
                .filter(|&c| allowed(c))
                .filter_map(|c| self.cores[c].current.map(|r| (self.effective_priority(r), c)))
                .filter(|&(p, _)| p < me)
                .min_by_key(|&(p, c)| (p, c != th.core, c));
            if let Some((_, c)) = lowest {
                return c;
            }
        }
        if allowed(th.core) {
            th.core
        } else {
            th.mask.trailing_zeros() as usize
        }
    }

    fn enqueue(&mut self, t: ThreadIndex, c: usize) {
        self.seq += 1;
        let th = &mut self.threads[t];
        th.core = c;
        th.state = ThreadState::Ready;
        th.ready_seq = self.seq;
        self.cores[c].ready.push(t);
    }

    /// The ready thread that should run next on `c`.
    fn best_ready(&self, c: usize) -> Option<ThreadIndex> {
        self.cores[c].ready.iter().copied().max_by(|&a, &b| {
            let (pa, pb) = (self.effective_priority(a), self.effective_priority(b));
            pa.cmp(&pb).then_with(|| {
                if pa == 0 {
                    self.threads[b].vruntime.cmp(&self.threads[a].vruntime)
                } else {
                    self.threads[b].ready_seq.cmp(&self.threads[a].ready_seq)
                }
            })
        })
    }

    fn preempts(&self, new: ThreadIndex, cur: ThreadIndex) -> bool {
        let (pn, pc) = (self.effective_priority(new), self.effective_priority(cur));
        pn > pc || (pn == 0 && pc == 0 && self.threads[new].vruntime + WAKEUP_GRAN < self.threads[cur].vruntime)
    }

    /// Run the right thread on core `c` (dispatch, preempt, or pull work when idle).
    pub(crate) fn resched(&mut self, c: usize) {
        if self.cores[c].ready.is_empty() && self.cores[c].current.is_none() {
            self.pull(c);
        }
        let Some(best) = self.best_ready(c) else { return };
        match self.cores[c].current {
            None => self.dispatch(c, best),
            Some(cur) if self.preempts(best, cur) => {
                self.preempt(c);
                self.dispatch(c, best);
            }
            Some(_) => {}
        }
    }

    /// An idle core takes a ready thread it may run from another core.
    fn pull(&mut self, c: usize) {
        let cand = (0..self.cores.len())
            .filter(|&o| o != c)
            .flat_map(|o| self.cores[o].ready.iter().map(move |&t| (o, t)))
            .filter(|&(_, t)| self.threads[t].mask >> c & 1 == 1)
            .max_by_key(|&(_, t)| (self.effective_priority(t), std::cmp::Reverse(self.threads[t].ready_seq)));
        if let Some((o, t)) = cand {
            self.cores[o].ready.retain(|&x| x != t);
            self.enqueue(t, c);
        }
    }

    /// Stop the running thread of `c` and make it ready again (interrupted threads stay).
    fn preempt(&mut self, c: usize) {
        let Some(t) = self.stop(c) else { return };
        let by_irq = self.best_ready(c).map(|b| self.effective_priority(b) == PRIO_IRQ).unwrap_or(false);
        if by_irq {
            self.cores[c].interrupted = Some(t);
            self.enqueue(t, c);
            self.threads[t].ready_seq = 0;
        } else {
            self.cores[c].current = None;
            let to = self.place(t);
            self.enqueue(t, to);
            if to != c {
                self.resched(to);
            }
        }
    }

    /// Account the running segment of `c` and take its thread off the core.
    fn stop(&mut self, c: usize) -> Option<ThreadIndex> {
        let t = self.cores[c].current?;
        let now = self.event_queue.now();
        let started = self.cores[c].started;
        self.account(c, started, now);
        self.cores[c].current = None;
        let elapsed = now.saturating_sub(started);
        if let Some(w) = self.threads[t].work.as_mut() {
            w.left = w.left.saturating_sub(elapsed);
        }
        self.trace_run(c, t, self.cores[c].trace_since, now);
        self.threads[t].mark = self.copied;
        self.supersede_done(c);
        Some(t)
    }

    /// CPU time bookkeeping (utilisation after warm-up, CFS vruntime).
    pub(crate) fn account(&mut self, c: usize, from: Nanos, to: Nanos) {
        let from_w = from.max(self.warmup);
        if to > from_w {
            self.cores[c].busy += (to - from_w).0;
            if let Some(t) = self.cores[c].current {
                self.threads[t].cpu += (to - from_w).0;
            }
        }
        if let Some(t) = self.cores[c].current {
            if self.threads[t].base == 0 && self.effective_priority(t) == 0 {
                self.threads[t].vruntime += to.saturating_sub(from).0;
                let vr = self.threads[t].vruntime;
                let min_ready = self.cores[c]
                    .ready
                    .iter()
                    .filter(|&&r| self.threads[r].base == 0)
                    .map(|&r| self.threads[r].vruntime)
                    .min();
                let m = min_ready.map_or(vr, |r| r.min(vr));
                self.cores[c].min_vr = self.cores[c].min_vr.max(m);
            }
        }
        self.cores[c].started = to;
    }

    /// Put `t` on core `c` and start (or continue) its work.
    fn dispatch(&mut self, c: usize, t: ThreadIndex) {
        self.cores[c].ready.retain(|&x| x != t);
        let now = self.event_queue.now();
        let th = &mut self.threads[t];
        th.state = ThreadState::Running;
        th.core = c;
        let switched = self.cores[c].prev != Some(t) && !matches!(th.role, Role::IrqCtx(_));
        let others = self.copied - th.mark;
        let penalty = reload_penalty(&self.net.cache, th.footprint_kib, others);
        th.mark = self.copied;
        self.cores[c].current = Some(t);
        self.cores[c].started = now;
        self.cores[c].since = now;
        self.cores[c].trace_since = now;
        if !matches!(self.threads[t].role, Role::IrqCtx(_)) {
            self.cores[c].prev = Some(t);
            if self.cores[c].interrupted == Some(t) {
                self.cores[c].interrupted = None;
            }
        }
        let switch = if switched { self.net.costs.ctx_switch } else { Nanos::ZERO };
        if self.threads[t].work.is_none() && matches!(self.threads[t].role, Role::Vcpu(_)) {
            // the guest's working set is re-read by guest code, after VM entry
            self.threads[t].debt += penalty;
            self.next_step(c, t, switch);
        } else if self.threads[t].work.is_none() {
            self.next_step(c, t, penalty + switch);
        } else {
            if let Some(w) = self.threads[t].work.as_mut() {
                w.left += penalty + switch;
            }
            self.arm(c);
        }
    }

    /// Schedule the completion of the running thread's current work.
    fn arm(&mut self, c: usize) {
        let t = self.cores[c].current.expect("arm on a busy core");
        let left = self.threads[t].work.as_ref().map_or(Nanos::ZERO, |w| w.left);
        self.supersede_done(c);
        let at = Nanos(self.event_queue.now().0.saturating_add(left.0));
        self.cores[c].done = Some((at, self.event_queue.take_seq()));
    }

    /// Drop core `c`'s completion timer. A timer due by the end counts as an event: queued, it
    /// would have been popped and ignored there.
    fn supersede_done(&mut self, c: usize) {
        if let Some((at, _)) = self.cores[c].done.take() {
            self.superseded += (at <= self.end) as u64;
        }
    }

    /// Ask the running thread `t` of `c` for its next work (with `overhead` added), or let it
    /// sleep / block.
    fn next_step(&mut self, c: usize, t: ThreadIndex, overhead: Nanos) {
        match self.next_work(t) {
            Next::Work(mut w) => {
                w.left += overhead;
                self.threads[t].work = Some(w);
                self.arm(c);
                self.resched(c);
            }
            Next::Sleep => {
                self.off_core(c, t, ThreadState::Sleeping);
                self.resched(c);
            }
            Next::Block(list) => {
                self.off_core(c, t, ThreadState::Blocked);
                self.block_on(t, list);
                self.resched(c);
            }
        }
    }

    fn off_core(&mut self, c: usize, t: ThreadIndex, state: ThreadState) {
        self.stop(c);
        self.threads[t].state = state;
        self.threads[t].work = None;
    }

    /// The running work of core `c` completed.
    pub(crate) fn work_done(&mut self, c: usize) {
        let Some(t) = self.cores[c].current else { return };
        let now = self.event_queue.now();
        let started = self.cores[c].started;
        self.account(c, started, now);
        let action = self.threads[t].work.take().map_or(Action::Nothing, |w| w.action);
        self.apply(t, action);
        if self.cores[c].current == Some(t) {
            self.next_step(c, t, Nanos::ZERO);
        }
    }

    /// 1 ms tick: CFS slice preemption; vanilla: pending softirq runs at the tick's irq_exit.
    pub(crate) fn tick(&mut self, c: usize) {
        if self.net.irq == IrqMode::HardIrq && self.softirq_pending_on(c) {
            self.raise_irq_job(c, None);
        }
        let Some(cur) = self.cores[c].current else { return };
        if self.effective_priority(cur) != 0 {
            return;
        }
        let nr = 1 + self.cores[c].ready.iter().filter(|&&r| self.effective_priority(r) == 0).count() as u64;
        let slice = (SCHED_LATENCY / nr).max(MIN_GRAN);
        let ran = self.event_queue.now().saturating_sub(self.cores[c].since).0;
        let waiting = self.cores[c]
            .ready
            .iter()
            .any(|&r| self.effective_priority(r) == 0 && self.threads[r].vruntime < self.threads[cur].vruntime);
        if ran >= slice && waiting {
            let best = self.cores[c]
                .ready
                .iter()
                .copied()
                .filter(|&r| self.effective_priority(r) == 0)
                .min_by_key(|&r| self.threads[r].vruntime);
            if let Some(b) = best {
                self.stop(c);
                let th = cur;
                self.enqueue(th, c);
                self.dispatch(c, b);
            }
        }
    }

    /// Hand a hard IRQ (an RX queue, or None for the tick's irq_exit) to the core's IRQ context.
    pub(crate) fn raise_irq_job(&mut self, c: usize, rxq: Option<usize>) {
        self.cores[c].irq_jobs.push_back(rxq);
        let irq = self.cores[c].irqctx;
        self.wake(irq);
    }

    /// Whether a higher-priority thread waits for the thread the IRQ context interrupted.
    pub(crate) fn need_resched(&self, c: usize) -> bool {
        let base = self.cores[c].interrupted.map_or(-1, |t| self.effective_priority(t));
        self.cores[c].ready.iter().any(|&r| {
            r != self.cores[c].irqctx && Some(r) != self.cores[c].interrupted && self.effective_priority(r) > base
        })
    }

    /// Re-evaluate where a thread whose effective priority changed should run.
    pub(crate) fn reprioritised(&mut self, t: ThreadIndex) {
        match self.threads[t].state {
            ThreadState::Running => {
                let c = self.threads[t].core;
                self.resched(c);
            }
            ThreadState::Ready => {
                let c = self.threads[t].core;
                if self.cores[c].interrupted == Some(t) {
                    self.resched(c);
                    return;
                }
                self.cores[c].ready.retain(|&x| x != t);
                let to = self.place(t);
                self.enqueue(t, to);
                self.resched(to);
                if to != c {
                    self.resched(c);
                }
            }
            _ => {}
        }
    }

    /// Close the running thread's trace slice now (its priority is about to change).
    pub(crate) fn trace_split(&mut self, t: ThreadIndex) {
        if self.trace.is_none() || self.threads[t].state != ThreadState::Running {
            return;
        }
        let c = self.threads[t].core;
        let now = self.event_queue.now();
        self.trace_run(c, t, self.cores[c].trace_since, now);
        self.cores[c].trace_since = now;
    }

    fn trace_run(&mut self, c: usize, t: ThreadIndex, from: Nanos, to: Nanos) {
        if self.trace.is_none() || to <= from {
            return;
        }
        let boosted = self.threads[t].boost > self.threads[t].base && self.threads[t].base < PRIO_IRQ;
        let name = if boosted {
            format!("{} (boosted to FIFO {})", self.threads[t].name, self.threads[t].boost)
        } else {
            self.threads[t].name.clone()
        };
        let args = json!({"base_prio": self.threads[t].base, "effective_prio": self.effective_priority(t)});
        let (ct, tt) = (self.cores[c].trace_track, self.threads[t].trace_track);
        let tw = self.trace.as_mut().expect("checked");
        tw.slice(ct, &name, from, to, Some(args.clone()));
        tw.slice(tt, &format!("running on core {c}{}", if boosted { " (boosted)" } else { "" }), from, to, Some(args));
    }
}
