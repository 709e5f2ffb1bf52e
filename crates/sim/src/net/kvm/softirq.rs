//! NET_RX softirq: per-CPU poll lists (normal, and the partitioned rt_poll_list), their locks
//! with priority inheritance, and the net_rx_action rounds (Linux 4.1 net/core/dev.c):
//! NAPI weight 64 per poll, budget 300 packets or 2 jiffies per round, a poll that used its whole
//! weight is re-queued at the tail, a round that ends with work left counts a time_squeeze and
//! restarts: in hard-IRQ context up to `softirq_restarts` rounds while no thread needs the CPU,
//! then the work is deferred to ksoftirqd; a thread (PREEMPT_RT IRQ thread, ksoftirqd) loops
//! while NET_RX stays raised (4.x-rt do_current_softirqs), preemptible by the scheduler; in
//! vanilla mode ksoftirqd yields between rounds.
//!
//! Lock semantics of 4.x PREEMPT_RT (SEEDS 1, inversion #2): a thread that raised NET_RX takes
//! the CPU's softirq lock; if another thread holds it, it blocks and boosts the holder; the
//! holder stops after its current NAPI poll, and the contender, once it owns the lock, drains
//! whatever is on the shared list, non-RT entries included.

use super::sched::PRIO_IRQ;
use super::{Act, Next, Role, Sim, St, Tid, Work, LISTS_PER_CORE};
use rtvirt_model::scenario::net::IrqMode;
use rtvirt_model::Nanos;
use serde_json::json;
use std::collections::VecDeque;

/// NAPI weight (packets per poll).
pub(crate) const NAPI_WEIGHT: usize = 64;
/// net_rx_action budget (netdev_budget).
const BUDGET: usize = 300;
/// 2 jiffies at HZ = 1000.
const ROUND_TIME: Nanos = Nanos(2_000_000);

#[derive(Default)]
pub(crate) struct PollList {
    pub q: VecDeque<usize>,
    pub holder: Option<Tid>,
    pub waiters: Vec<Tid>,
}

/// A context's progress through net_rx_action.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SoftCtx {
    pub list: usize,
    pub budget: usize,
    pub round_start: Nanos,
    pub rounds: u32,
    pub polls: u32,
}

impl Sim {
    /// Index of core `c`'s normal (`rt = false`) or RT poll list.
    pub(crate) fn list_id(c: usize, rt: bool) -> usize {
        c * LISTS_PER_CORE + rt as usize
    }

    pub(crate) fn holds_lock(&self, t: Tid) -> bool {
        self.threads[t].soft.is_some_and(|s| self.lists[s.list].holder == Some(t))
    }

    pub(crate) fn softirq_pending_on(&self, c: usize) -> bool {
        (0..LISTS_PER_CORE).any(|k| !self.lists[c * LISTS_PER_CORE + k].q.is_empty())
    }

    /// napi_schedule: put the RX queue's NAPI on `list` (tail) unless it is already queued.
    pub(crate) fn napi_schedule(&mut self, rxq: usize, list: usize) {
        if self.rxqs[rxq].on_list.is_none() {
            self.rxqs[rxq].on_list = Some(list);
            self.lists[list].q.push_back(rxq);
        }
    }

    /// Mark NET_RX raised on `list` for thread `t`.
    pub(crate) fn raise(&mut self, t: Tid, list: usize) {
        if !self.threads[t].raised.contains(&list) && self.threads[t].soft.map(|s| s.list) != Some(list) {
            self.threads[t].raised.push(list);
        }
    }

    /// The next NET_RX step of `t`, or None when it has no softirq work left.
    pub(crate) fn softirq_next(&mut self, t: Tid) -> Option<Next> {
        loop {
            if self.threads[t].soft.is_none() {
                let list = *self.threads[t].raised.first()?;
                match self.lists[list].holder {
                    Some(h) if h != t => {
                        if matches!(self.threads[t].role, Role::IrqCtx(_)) {
                            // bottom halves are busy on this CPU: the holder will see the work
                            self.threads[t].raised.remove(0);
                            continue;
                        }
                        return Some(Next::Block(list));
                    }
                    _ => self.acquire(t, list),
                }
            }
            let mut sc = self.threads[t].soft.expect("acquired above");
            if !self.lists[sc.list].waiters.is_empty() && sc.polls > 0 {
                let list = sc.list;
                self.release(t);
                if !self.lists[list].q.is_empty() {
                    self.raise(t, list);
                }
                return Some(Next::Work(Work { left: Nanos::ZERO, act: Act::Nothing }));
            }
            if self.lists[sc.list].q.is_empty() {
                self.release(t);
                continue;
            }
            let now = self.q.now();
            if sc.budget == 0 || now.saturating_sub(sc.round_start) >= ROUND_TIME {
                let c = self.threads[t].core;
                self.cores[c].time_squeeze += 1;
                sc.rounds += 1;
                // irq_exit (__do_softirq) restarts a bounded number of times while no thread needs
                // the CPU; a thread (PREEMPT_RT do_current_softirqs, ksoftirqd) loops while NET_RX
                // is re-raised, being preemptible by the scheduler.
                let in_irq = matches!(self.threads[t].role, Role::IrqCtx(_));
                let bounded = sc.rounds < self.cfg.softirq_restarts;
                let again = if in_irq {
                    bounded && !self.need_resched(c)
                } else {
                    bounded || self.cfg.irq == IrqMode::Threaded
                };
                if again {
                    sc.budget = BUDGET;
                    sc.round_start = now;
                    self.threads[t].soft = Some(sc);
                } else {
                    let list = sc.list;
                    self.release(t);
                    self.defer_to_ksoftirqd(t, list);
                    return Some(Next::Work(Work { left: Nanos::ZERO, act: Act::Nothing }));
                }
            }
            return Some(self.poll_head(t));
        }
    }

    fn acquire(&mut self, t: Tid, list: usize) {
        self.threads[t].raised.retain(|&l| l != list);
        self.lists[list].holder = Some(t);
        self.lists[list].waiters.retain(|&w| w != t);
        self.threads[t].soft = Some(SoftCtx { list, budget: BUDGET, round_start: self.q.now(), rounds: 0, polls: 0 });
        self.trace_blocked_end(t, list);
    }

    /// Unlock `t`'s list: the top waiter (highest priority, then first come) gets the lock.
    fn release(&mut self, t: Tid) {
        let Some(sc) = self.threads[t].soft.take() else { return };
        let list = sc.list;
        self.lists[list].holder = None;
        let was_boosted = self.threads[t].boost;
        if was_boosted > 0 {
            self.trace_split(t);
        }
        self.threads[t].boost = 0;
        if let Some(&next) = self.lists[list].waiters.iter().max_by_key(|&&w| (self.eff(w), std::cmp::Reverse(w))) {
            self.lists[list].waiters.retain(|&w| w != next);
            self.acquire(next, list);
            self.threads[t].raised.retain(|&l| l != list);
            self.update_boost(next);
            self.wake(next);
        }
        if was_boosted > 0 {
            self.reprioritised(t);
        }
    }

    fn defer_to_ksoftirqd(&mut self, t: Tid, list: usize) {
        let c = list / LISTS_PER_CORE;
        let k = self.cores[c].ksoftirqd;
        self.raise(k, list);
        if k != t {
            self.wake(k);
        }
    }

    /// `t` blocks on `list`'s lock: priority inheritance boosts the holder.
    pub(crate) fn block_on(&mut self, t: Tid, list: usize) {
        self.lists[list].waiters.push(t);
        self.threads[t].blocked_since = self.q.now();
        let Some(h) = self.lists[list].holder else { return };
        if self.threads[t].base > 0 && self.threads[h].base < self.threads[t].base {
            self.inversions += 1;
        }
        if let Some(tw) = self.trace.as_mut() {
            let now = self.q.now();
            let args = json!({"holder": self.threads[h].name, "holder_prio": self.threads[h].base, "waiter_prio": self.threads[t].base});
            tw.instant(self.threads[t].trace_track, "blocked on softirq lock", now, Some(args.clone()));
            tw.instant(self.threads[h].trace_track, &format!("boosted by {}", self.threads[t].name), now, Some(args));
        }
        self.update_boost(h);
    }

    /// Priority inheritance: the holder runs at the highest priority of its waiters.
    fn update_boost(&mut self, h: Tid) {
        let list = match self.threads[h].soft {
            Some(s) if self.lists[s.list].holder == Some(h) => s.list,
            _ => return,
        };
        let top = self.lists[list].waiters.iter().map(|&w| self.threads[w].base.max(self.threads[w].boost)).max().unwrap_or(0);
        let top = if top >= PRIO_IRQ { 0 } else { top };
        if top != self.threads[h].boost {
            self.trace_split(h);
            self.threads[h].boost = top;
            self.reprioritised(h);
        }
    }

    /// One NAPI poll of the list's head: take up to the weight (and budget) from its ring.
    fn poll_head(&mut self, t: Tid) -> Next {
        let mut sc = self.threads[t].soft.expect("holder");
        let rxq = *self.lists[sc.list].q.front().expect("non-empty list");
        self.pull_arrivals(rxq);
        let n = NAPI_WEIGHT.min(sc.budget).min(self.rxqs[rxq].ring.len());
        let pkts: Vec<_> = self.rxqs[rxq].ring.drain(..n).collect();
        let cost = self.cfg.costs.napi_poll + if self.rxqs[rxq].backlog { self.backlog_cost(pkts.len()) } else { self.rx_cost(&pkts) };
        sc.budget -= n.min(sc.budget);
        sc.polls += 1;
        let list = sc.list;
        self.threads[t].soft = Some(sc);
        Next::Work(Work { left: cost, act: Act::Poll { list, rxq, pkts } })
    }

    /// After a poll: NAPI complete (IRQ re-enabled) if it used less than its weight, else
    /// re-queue at the tail; a backlog has no IRQ and stays queued while it holds packets.
    pub(crate) fn after_poll(&mut self, list: usize, rxq: usize, n: usize) {
        let l = &mut self.lists[list].q;
        if let Some(pos) = l.iter().position(|&r| r == rxq) {
            l.remove(pos);
        }
        if self.rxqs[rxq].backlog {
            if self.rxqs[rxq].ring.is_empty() {
                self.rxqs[rxq].on_list = None;
            } else {
                self.lists[list].q.push_back(rxq);
            }
        } else if n < NAPI_WEIGHT {
            self.rxqs[rxq].on_list = None;
            self.rxqs[rxq].irq_enabled = true;
            self.arm_nic_irq(rxq);
        } else {
            self.lists[list].q.push_back(rxq);
        }
    }

    fn trace_blocked_end(&mut self, t: Tid, list: usize) {
        if self.threads[t].st != St::Blocked {
            return;
        }
        if let Some(tw) = self.trace.as_mut() {
            let from = self.threads[t].blocked_since;
            let now = self.q.now();
            tw.slice(self.threads[t].trace_track, "blocked on softirq lock", from, now, Some(json!({"list": list})));
        }
    }
}
