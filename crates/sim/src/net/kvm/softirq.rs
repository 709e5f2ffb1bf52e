//! NET_RX softirq: per-CPU poll lists (normal, and the partitioned rt_poll_list), their locks
//! with priority inheritance, and the net_rx_action rounds of Linux 4.1 (net/core/dev.c):
//! - a round takes the NAPIs queued when it starts (`list_splice_init` of the poll_list: NAPIs
//!   scheduled during the round wait for the next one) and polls each once with its full weight
//!   (64); `budget -= work` (netdev_budget 300, may go negative);
//! - a poll that used its whole weight goes on the round's repoll list, spliced at the tail of
//!   the poll_list when the round ends (after the NAPIs scheduled meanwhile); a poll that used
//!   less completes the NAPI (NIC: interrupt re-enabled);
//! - the round stops early when the budget is used up or 2 jiffies have passed
//!   (`time_squeeze`); with NAPIs left, NET_RX is raised again;
//! - __do_softirq restarts a raised softirq in the same context up to `softirq_restarts` (10,
//!   MAX_SOFTIRQ_RESTART) times within MAX_SOFTIRQ_TIME (2 ms) while no thread needs the CPU,
//!   then wakes ksoftirqd; a thread (PREEMPT_RT IRQ thread, ksoftirqd) loops while NET_RX stays
//!   raised (4.x-rt do_current_softirqs), preemptible by the scheduler; in vanilla mode
//!   ksoftirqd yields between restart batches.
//!
//! Lock semantics of 4.x PREEMPT_RT (Garcia Alvarado 2019, inversion #2): a thread that raised NET_RX takes
//! the CPU's softirq lock; if another thread holds it, it blocks and boosts the holder; the
//! holder stops after its current NAPI poll (its repoll list goes back on the poll_list), and the
//! contender, once it owns the lock, drains whatever is on the shared list, non-RT entries
//! included.

use super::sched::PRIO_IRQ;
use super::state::SoftCtx;
use super::{Action, Next, Role, Sim, ThreadIndex, ThreadState, Work, LISTS_PER_CORE};
use rtvirt_model::scenario::net::IrqMode;
use rtvirt_model::Nanos;
use serde_json::json;

/// NAPI weight (packets per poll).
pub(crate) const NAPI_WEIGHT: usize = 64;
/// net_rx_action budget (netdev_budget).
pub(crate) const BUDGET: i64 = 300;
/// A round's time limit: 2 jiffies at HZ = 1000.
pub(crate) const ROUND_TIME: Nanos = crate::net::kernel::NET_RX_ROUND_TIME;
/// MAX_SOFTIRQ_TIME: __do_softirq restarts only within 2 ms of its start.
const RESTART_TIME: Nanos = Nanos(2_000_000);

impl Sim {
    /// Index of core `c`'s normal (`rt = false`) or RT poll list.
    pub(crate) fn list_id(c: usize, rt: bool) -> usize {
        c * LISTS_PER_CORE + rt as usize
    }

    pub(crate) fn holds_lock(&self, t: ThreadIndex) -> bool {
        self.threads[t].soft.is_some_and(|s| self.lists[s.list].holder == Some(t))
    }

    pub(crate) fn softirq_pending_on(&self, c: usize) -> bool {
        (0..LISTS_PER_CORE).any(|k| !self.lists[c * LISTS_PER_CORE + k].napis.is_empty())
    }

    /// napi_schedule: put the RX queue's NAPI on `list` (tail) unless it is already queued.
    pub(crate) fn napi_schedule(&mut self, rxq: usize, list: usize) {
        if self.rxqs[rxq].on_list.is_none() {
            self.rxqs[rxq].on_list = Some(list);
            self.lists[list].napis.push_back(rxq);
        }
    }

    /// Mark NET_RX raised on `list` for thread `t`.
    pub(crate) fn raise(&mut self, t: ThreadIndex, list: usize) {
        if !self.threads[t].raised.contains(&list) && self.threads[t].soft.map(|s| s.list) != Some(list) {
            self.threads[t].raised.push(list);
        }
    }

    /// The next NET_RX step of `t`, or None when it has no softirq work left.
    pub(crate) fn softirq_next(&mut self, t: ThreadIndex) -> Option<Next> {
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
                // 4.x-rt: a contender waits; the holder stops after its current NAPI poll
                let list = sc.list;
                self.release(t);
                if !self.lists[list].napis.is_empty() {
                    self.raise(t, list);
                }
                return Some(Next::Work(Work { left: Nanos::ZERO, action: Action::Nothing }));
            }
            let now = self.event_queue.now();
            let squeezed = sc.round_polls > 0 && (sc.budget <= 0 || now.saturating_sub(sc.round_start) >= ROUND_TIME);
            if squeezed || sc.snap == 0 {
                // end of the round: repoll list back at the tail, NET_RX raised again if work is left
                if squeezed {
                    let c = self.threads[t].core;
                    self.cores[c].time_squeeze += 1;
                }
                self.end_round(sc.list);
                if self.lists[sc.list].napis.is_empty() {
                    self.release(t);
                    continue;
                }
                if sc.round_polls > 0 {
                    sc.rounds += 1;
                    // irq_exit (__do_softirq) restarts a bounded number of times within 2 ms while
                    // no thread needs the CPU; a thread (PREEMPT_RT do_current_softirqs,
                    // ksoftirqd) loops while NET_RX is re-raised, being preemptible by the
                    // scheduler.
                    let c = self.threads[t].core;
                    let in_irq = matches!(self.threads[t].role, Role::IrqCtx(_));
                    let bounded = sc.rounds < self.net.softirq_restarts;
                    let again = if in_irq {
                        bounded && now.saturating_sub(sc.started) < RESTART_TIME && !self.need_resched(c)
                    } else {
                        bounded || self.net.irq == IrqMode::Threaded
                    };
                    if !again {
                        self.threads[t].soft = Some(sc);
                        let list = sc.list;
                        self.release(t);
                        self.defer_to_ksoftirqd(t, list);
                        return Some(Next::Work(Work { left: Nanos::ZERO, action: Action::Nothing }));
                    }
                }
                self.start_round(&mut sc, now);
                self.threads[t].soft = Some(sc);
            }
            return Some(self.poll_head(t));
        }
    }

    /// A new net_rx_action round: the NAPIs queued now, a fresh budget and time limit.
    fn start_round(&self, sc: &mut SoftCtx, now: Nanos) {
        sc.budget = BUDGET;
        sc.round_start = now;
        sc.snap = self.lists[sc.list].napis.len();
        sc.round_polls = 0;
    }

    /// End of a round (or of the holder's turn): its repoll list goes to the poll_list's tail.
    fn end_round(&mut self, list: usize) {
        let l = &mut self.lists[list];
        let repoll = std::mem::take(&mut l.repoll);
        l.napis.extend(repoll);
    }

    fn acquire(&mut self, t: ThreadIndex, list: usize) {
        self.threads[t].raised.retain(|&l| l != list);
        self.lists[list].holder = Some(t);
        self.lists[list].waiters.retain(|&w| w != t);
        let now = self.event_queue.now();
        let snap = self.lists[list].napis.len();
        self.threads[t].soft = Some(SoftCtx {
            list,
            budget: BUDGET,
            round_start: now,
            snap,
            round_polls: 0,
            started: now,
            rounds: 0,
            polls: 0,
        });
        self.trace_blocked_end(t, list);
    }

    /// Unlock `t`'s list: the top waiter (highest priority, then first come) gets the lock.
    fn release(&mut self, t: ThreadIndex) {
        let Some(sc) = self.threads[t].soft.take() else { return };
        let list = sc.list;
        self.end_round(list);
        self.lists[list].holder = None;
        let was_boosted = self.threads[t].boost;
        if was_boosted > 0 {
            self.trace_split(t);
        }
        self.threads[t].boost = 0;
        if let Some(&next) =
            self.lists[list].waiters.iter().max_by_key(|&&w| (self.effective_priority(w), std::cmp::Reverse(w)))
        {
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

    fn defer_to_ksoftirqd(&mut self, t: ThreadIndex, list: usize) {
        let c = list / LISTS_PER_CORE;
        let k = self.cores[c].ksoftirqd;
        self.raise(k, list);
        if k != t {
            self.wake(k);
        }
    }

    /// `t` blocks on `list`'s lock: priority inheritance boosts the holder.
    pub(crate) fn block_on(&mut self, t: ThreadIndex, list: usize) {
        self.lists[list].waiters.push(t);
        self.threads[t].blocked_since = self.event_queue.now();
        let Some(h) = self.lists[list].holder else { return };
        if self.threads[t].base > 0 && self.threads[h].base < self.threads[t].base {
            self.inversions += 1;
        }
        if let Some(tw) = self.trace.as_mut() {
            let now = self.event_queue.now();
            let (holder, waiter) = (&self.threads[h], &self.threads[t]);
            let args = json!({"holder": holder.name, "holder_prio": holder.base, "waiter_prio": waiter.base});
            tw.instant(self.threads[t].trace_track, "blocked on softirq lock", now, Some(args.clone()));
            tw.instant(self.threads[h].trace_track, &format!("boosted by {}", self.threads[t].name), now, Some(args));
        }
        self.update_boost(h);
    }

    /// Priority inheritance: the holder runs at the highest priority of its waiters.
    fn update_boost(&mut self, h: ThreadIndex) {
        let list = match self.threads[h].soft {
            Some(s) if self.lists[s.list].holder == Some(h) => s.list,
            _ => return,
        };
        let top = self.lists[list]
            .waiters
            .iter()
            .map(|&w| self.threads[w].base.max(self.threads[w].boost))
            .max()
            .unwrap_or(0);
        let top = if top >= PRIO_IRQ { 0 } else { top };
        if top != self.threads[h].boost {
            self.trace_split(h);
            self.threads[h].boost = top;
            self.reprioritised(h);
        }
    }

    /// One NAPI poll of the list's head with its full weight (napi_poll: `n->poll(n, weight)`).
    fn poll_head(&mut self, t: ThreadIndex) -> Next {
        let mut sc = self.threads[t].soft.expect("holder");
        let rxq = *self.lists[sc.list].napis.front().expect("the round's snapshot is not empty");
        self.pull_arrivals(rxq);
        let n = NAPI_WEIGHT.min(self.rxqs[rxq].ring.len());
        let mut pkts = self.take_pkts();
        self.rxqs[rxq].ring.move_front(n, &mut pkts);
        let cost = self.net.costs.napi_poll
            + if self.rxqs[rxq].backlog { self.backlog_cost(pkts.len()) } else { self.rx_cost(&pkts) };
        sc.budget -= n as i64;
        sc.snap -= 1;
        sc.round_polls += 1;
        sc.polls += 1;
        let list = sc.list;
        self.threads[t].soft = Some(sc);
        Next::Work(Work { left: cost, action: Action::Poll { list, rxq, pkts } })
    }

    /// After a poll of `n` packets: a NAPI that used its whole weight goes on the round's repoll
    /// list; one that used less completes (NIC: IRQ re-enabled). A backlog (process_backlog) has
    /// no IRQ and completes only when it is empty.
    pub(crate) fn after_poll(&mut self, list: usize, rxq: usize, n: usize) {
        let l = &mut self.lists[list].napis;
        if let Some(pos) = l.iter().position(|&r| r == rxq) {
            l.remove(pos);
        }
        let done = if self.rxqs[rxq].backlog { self.rxqs[rxq].ring.is_empty() } else { n < NAPI_WEIGHT };
        if !done {
            self.lists[list].repoll.push(rxq);
        } else if self.rxqs[rxq].backlog {
            self.rxqs[rxq].on_list = None;
        } else {
            self.rxqs[rxq].on_list = None;
            self.rxqs[rxq].irq_enabled = true;
            self.arm_nic_irq(rxq);
        }
    }

    fn trace_blocked_end(&mut self, t: ThreadIndex, list: usize) {
        if self.threads[t].state != ThreadState::Blocked {
            return;
        }
        if let Some(tw) = self.trace.as_mut() {
            let from = self.threads[t].blocked_since;
            let now = self.event_queue.now();
            tw.slice(self.threads[t].trace_track, "blocked on softirq lock", from, now, Some(json!({"list": list})));
        }
    }
}
