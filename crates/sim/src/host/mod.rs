//! The simulated host: cores, host threads and the dispatcher.
//!
//! Threads are grouped into *clusters*: a set of cores and the threads whose affinity is exactly
//! that set (one core = partitioned scheduling, several = global scheduling: the m most urgent
//! eligible threads run, a running thread keeps its core). Each thread has a policy
//! ([`policy::PState`]) that gives its priority key, charging and enforcement rules.
//!
//! The host does not know what a thread does. Its owner (a guest's vCPU, an interference load,
//! and for the network model an IRQ/softirq/backend thread) tells it when the thread wakes
//! ([`Host::wake`]) or blocks ([`Host::block`]), how long its current work item still needs
//! (the `work_left` callback of [`Host::resched`]) and receives the CPU time it got
//! ([`Host::charge`]'s `progress` callback, which returns whether the thread still has work).
//! Extension points for the network path: a work item is any amount of CPU time, so packet
//! processing steps map onto it; a priority-inheritance lock is modelled by the owner calling
//! [`Host::set_boost`] on the lock holder (its key is raised to the waiter's while boosted) and
//! blocking the waiter until the holder releases.
//!
//! Host events (core timers, thread timers, cluster ticks) are [`HostEv`] values that the owner's
//! event type embeds (`From<HostEv>`), so the host runs on any model's queue.
//!
//! Charging is lazy: a core's running thread is charged for the time since the core's last
//! charge only when something on the core may change or be read - its timer is due (work done,
//! budget or slice used up: the only instants at which a charge changes a thread's state), its
//! cluster is about to be re-decided, an event concerns its cluster, or the owner is about to
//! change the work of a thread there ([`Host::charge_due`], [`Host::charge_dirty`],
//! [`Host::charge_for`], [`Host::charge_thread`]). Charging `a` then `b` equals charging `a + b`
//! for every policy except CFS weights that do not divide 1024 (integer vruntime scaling): the
//! cores of such clusters, and of any thread the owner asks for ([`Host::charge_eagerly`]), are
//! charged at every event, as every core once was ([`Host::charge`] still charges them all). So
//! the cost of an event no longer grows with the number of cores, and the results are the same
//! to the last nanosecond.

pub mod policy;

use crate::config::{Settings, ThreadSpec};
use crate::engine::rng::SimRng;
use crate::engine::EventQueue;
use policy::{Ctx, Key, PState, CREDIT_ACCT};
use std::collections::BTreeSet;

pub type ThreadId = usize;

/// The random stream of the per-period overhead draws (apart from the guests' and loads').
const OVERHEAD_STREAM: u64 = 0x6f76_6572_6865_6164;

/// Events the host schedules for itself on the owner's queue. (Core timers - the running
/// thread reaches a limit: work done, budget, slice - are kept out of the queue: the owner's loop
/// polls [`Host::next_core_timer`] and calls [`Host::fire_core_timer`]; re-arming them costs no
/// heap operation and leaves no stale event behind.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostEv {
    /// A thread's replenishment / server period / supply window edge.
    ThreadTimer { thread: u32, ver: u32 },
    /// RT throttling period of a cluster.
    RtPeriod { cluster: u32 },
    /// Xen Credit accounting of a cluster (credit refill, every 30 ms).
    CreditAcct { cluster: u32 },
    /// Xen Credit 10 ms tick of a cluster (boost removal, tick accounting).
    CreditTick { cluster: u32 },
}

/// A host thread's scheduling state.
pub struct HThread {
    pub name: String,
    pub cluster: u32,
    pub st: PState,
    pub runnable: bool,
    /// Core it is on (running or holding the core idle).
    pub core: Option<u32>,
    seq: u64,
    /// Host overhead (vCPU switch) still to pay before the owner's work progresses.
    overhead: u64,
    /// A host model's per-server-period cost still to pay (paid before `overhead`).
    period_overhead: u64,
    /// CPU time it used (not counting time holding a core idle).
    pub cpu_time: u64,
    timer_ver: u32,
    dispatched: u64,
    /// Priority-inheritance boost: key used instead of its own while set.
    boost: Option<Key>,
}

struct Core {
    cluster: u32,
    running: Option<ThreadId>,
    last: Option<ThreadId>,
    charged_to: u64,
    busy: u64,
    timer_at: u64,
}

struct Cluster {
    cores: Vec<u32>,
    threads: Vec<ThreadId>,
    rt_used: u64,
    rt_throttled: bool,
    dirty: bool,
}

pub struct Host {
    pub threads: Vec<HThread>,
    cores: Vec<Core>,
    clusters: Vec<Cluster>,
    dirty: Vec<u32>,
    ctx: Ctx,
    rt_throttle: Option<(u64, u64)>,
    vcpu_switch: u64,
    /// A host model's cost per SCHED_DEADLINE server period owed by the reservation, and by the
    /// thread running on its core when the period starts (0 without a host model).
    owed_per_period: (u64, u64),
    /// The preempted thread's per-period charge drawn from the model's distribution, when it is
    /// drawn ([`crate::host_costs::HostCosts::overhead`]; one random stream, by seed).
    overhead_draw: Option<(crate::host_costs::HostCosts, SimRng)>,
    seq: u64,
    buf: Vec<(Key, ThreadId)>,
    /// Armed core timers as (time, core): the first is the next to fire.
    timers: BTreeSet<(u64, usize)>,
    /// Cores whose timer fired and which are not charged since.
    fired: Vec<usize>,
    /// Cores charged at every event, ascending (see the module doc).
    eager: Vec<usize>,
    /// Scratch list of the cores one charge covers.
    to_charge: Vec<usize>,
    /// The instant of the last [`Host::charge_due`]: every core that needed a charge then was
    /// charged to it, and so is every core armed since at that instant (re-decided, so charged).
    due_charged_at: Option<u64>,
    /// Tests: charge every core at every event, as before lazy charging (the reference).
    #[cfg(test)]
    charge_all_cores: bool,
    /// Core timers fired so far (they are events too, outside the queue).
    timers_fired: u64,
}

impl Host {
    /// Build the host for `cores` cores and these threads (thread id = index).
    pub fn new<'a>(cores: u32, specs: impl IntoIterator<Item = &'a ThreadSpec>, s: &Settings) -> Host {
        let mut clusters: Vec<Cluster> = Vec::new();
        let mut core_cluster = vec![u32::MAX; cores as usize];
        let mut threads = Vec::new();
        for (i, spec) in specs.into_iter().enumerate() {
            let ci = match clusters.iter().position(|c| c.cores == spec.cores) {
                Some(ci) => ci,
                None => {
                    clusters.push(Cluster {
                        cores: spec.cores.clone(),
                        threads: vec![],
                        rt_used: 0,
                        rt_throttled: false,
                        dirty: false,
                    });
                    clusters.len() - 1
                }
            };
            clusters[ci].threads.push(i);
            for &c in &spec.cores {
                core_cluster[c as usize] = ci as u32;
            }
            let rng = SimRng::new(s.seed, (1 << 62) | i as u64);
            let mut st = PState::new(&spec.policy, rng);
            st.set_credit_precise(s.credit_precise);
            threads.push(HThread {
                name: spec.name.clone(),
                cluster: ci as u32,
                st,
                runnable: false,
                core: None,
                seq: 0,
                overhead: 0,
                period_overhead: 0,
                cpu_time: 0,
                timer_ver: 0,
                dispatched: 0,
                boost: None,
            });
        }
        let cores = core_cluster
            .into_iter()
            .map(|cluster| Core { cluster, running: None, last: None, charged_to: 0, busy: 0, timer_at: u64::MAX })
            .collect();
        Host {
            threads,
            cores,
            clusters,
            dirty: Vec::new(),
            ctx: Ctx {
                tick: s.tick,
                tick_phase: s.tick_phase,
                hrtick: s.hrtick,
                hrtick_overrun: 0,
                tslice: s.credit_tslice,
                ratelimit: s.credit_ratelimit,
            },
            rt_throttle: s.rt_throttle,
            vcpu_switch: s.vcpu_switch,
            owed_per_period: (0, 0),
            overhead_draw: None,
            seq: 1,
            buf: Vec::new(),
            timers: BTreeSet::new(),
            fired: Vec::new(),
            eager: Vec::new(),
            to_charge: Vec::new(),
            due_charged_at: None,
            #[cfg(test)]
            charge_all_cores: false,
            timers_fired: 0,
        }
        .with_eager_clusters()
    }

    /// Clusters with a thread whose charge is not additive are charged at every event.
    fn with_eager_clusters(mut self) -> Host {
        for t in 0..self.threads.len() {
            if !self.threads[t].st.charge_is_additive() {
                self.charge_eagerly(t);
            }
        }
        self
    }

    /// Tests: charge every core at every event (the reference lazy charging must equal).
    #[cfg(test)]
    pub(crate) fn charge_all_cores(&mut self) {
        self.charge_all_cores = true;
    }

    /// Charge the cores of `t`'s cluster at every event ([`Host::charge_due`]): for a thread whose
    /// owner reads or changes its work at every event (a global guest's vCPU).
    pub fn charge_eagerly(&mut self, t: ThreadId) {
        let cl = &self.clusters[self.threads[t].cluster as usize];
        self.eager.extend(cl.cores.iter().map(|&c| c as usize));
        self.eager.sort_unstable();
        self.eager.dedup();
    }

    /// A host model's costs ([`crate::host_costs`]): a cost per SCHED_DEADLINE server period and
    /// the enforcement (exact, `overrun` late; or at a tick of length `overrun`).
    pub fn set_costs(&mut self, costs: &crate::host_costs::HostCosts, seed: u64) {
        self.owed_per_period = (costs.owed_by_reservation(), costs.owed_by_preempted());
        self.overhead_draw = costs.preempted_spread().map(|_| (*costs, SimRng::new(seed, OVERHEAD_STREAM)));
        self.ctx.hrtick = costs.hrtick;
        if costs.hrtick {
            self.ctx.hrtick_overrun = costs.overrun;
        } else {
            self.ctx.tick = costs.overrun;
        }
    }

    /// A SCHED_DEADLINE thread whose deadline moved on started a new server period: it owes the
    /// host model's per-period cost, and so does the thread running on its core (the interrupt
    /// and the switch run in that thread's time; an idle core absorbs them, and so does a thread
    /// picked at this very instant: timers expiring together are one interrupt, handled before
    /// any pick).
    fn on_new_period(&mut self, t: ThreadId, deadline_before: Option<u64>, now: u64) {
        let dl = matches!(self.threads[t].st, PState::Dl { .. });
        if !dl || self.owed_per_period == (0, 0) || self.threads[t].st.deadline() == deadline_before {
            return;
        }
        let (own, preempted) = self.owed_per_period;
        let th = &mut self.threads[t];
        th.period_overhead = th.period_overhead.max(own);
        let cores = &self.clusters[self.threads[t].cluster as usize].cores;
        let running = match cores.as_slice() {
            [core] => self.cores[*core as usize].running,
            _ => Some(t), // a server free to run on several cores: charged to itself
        };
        if let Some(r) = running.filter(|&r| self.threads[r].runnable && (r == t || self.threads[r].dispatched < now)) {
            let preempted = match &mut self.overhead_draw {
                Some((costs, rng)) => costs.overhead(rng.unit()),
                None => preempted,
            };
            let th = &mut self.threads[r];
            th.period_overhead = th.period_overhead.saturating_add(preempted);
        }
    }

    /// Arm the periodic timers (server periods, supply windows, RT throttling, Credit accounting).
    pub fn start<E: From<HostEv>>(&mut self, q: &mut EventQueue<E>) {
        for ci in 0..self.clusters.len() {
            mark(&mut self.dirty, &mut self.clusters[ci], ci as u32);
        }
        for t in 0..self.threads.len() {
            if let Some(at) = self.threads[t].st.first_timer() {
                self.arm_thread_timer(t, at, q);
            }
        }
        for (ci, cl) in self.clusters.iter().enumerate() {
            let ci = ci as u32;
            if let Some((_, period)) = self.rt_throttle {
                if cl.threads.iter().any(|&t| self.threads[t].st.is_rt()) {
                    q.schedule(rtvirt_model::Nanos(period), HostEv::RtPeriod { cluster: ci }.into());
                }
            }
            if cl.threads.iter().any(|&t| matches!(self.threads[t].st, PState::Credit { .. })) {
                q.schedule(rtvirt_model::Nanos(0), HostEv::CreditAcct { cluster: ci }.into());
                q.schedule(rtvirt_model::Nanos(policy::CREDIT_TICK), HostEv::CreditTick { cluster: ci }.into());
            }
        }
    }

    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Busy time of a core (a thread with work ran on it).
    pub fn core_busy(&self, core: usize) -> u64 {
        self.cores[core].busy
    }

    /// Thread running on a core (None: idle).
    pub fn running(&self, core: usize) -> Option<ThreadId> {
        self.cores[core].running
    }

    /// Charge every core's running thread for the time since the core's last charge.
    /// `progress(t, dt)` gives the owner `dt` ns of work done by thread `t` and returns whether
    /// it still has work.
    pub fn charge<F: FnMut(ThreadId, u64) -> bool>(&mut self, now: u64, mut progress: F) {
        self.fired.clear();
        for c in 0..self.cores.len() {
            self.charge_core(c, now, &mut progress);
        }
    }

    /// Charge, in ascending order, the cores that must be up to date before an event at `now`
    /// is handled: those whose timer is due or fired since their last charge, and the eager
    /// ones. (The others' threads can neither finish their work nor use up a limit before their
    /// timer: charging them later gives the same results.)
    pub fn charge_due<F: FnMut(ThreadId, u64) -> bool>(&mut self, now: u64, mut progress: F) {
        #[cfg(test)]
        if self.charge_all_cores {
            return self.charge(now, progress);
        }
        if self.due_charged_at.replace(now) == Some(now) {
            // a second event at the same instant: those cores were charged to `now` already
            self.fired.clear();
            return;
        }
        let mut cores = std::mem::take(&mut self.to_charge);
        cores.clear();
        cores.append(&mut self.fired);
        cores.extend(self.timers.range(..=(now, usize::MAX)).map(|&(_, c)| c));
        cores.extend(&self.eager);
        cores.sort_unstable();
        cores.dedup();
        for &c in &cores {
            self.charge_core(c, now, &mut progress);
        }
        self.to_charge = cores;
    }

    /// Charge the cores of `t`'s cluster: before the owner changes `t`'s work or wakes or
    /// blocks it.
    pub fn charge_thread<F: FnMut(ThreadId, u64) -> bool>(&mut self, t: ThreadId, now: u64, progress: F) {
        self.charge_cluster(self.threads[t].cluster as usize, now, progress);
    }

    /// Charge the cores of the cluster a host event concerns, before [`Host::on_event`].
    pub fn charge_for<F: FnMut(ThreadId, u64) -> bool>(&mut self, ev: HostEv, now: u64, progress: F) {
        let ci = match ev {
            HostEv::ThreadTimer { thread, .. } => self.threads[thread as usize].cluster,
            HostEv::RtPeriod { cluster } | HostEv::CreditAcct { cluster } | HostEv::CreditTick { cluster } => cluster,
        };
        self.charge_cluster(ci as usize, now, progress);
    }

    /// Charge the cores of every cluster [`Host::resched`] is about to re-decide.
    pub fn charge_dirty<F: FnMut(ThreadId, u64) -> bool>(&mut self, now: u64, mut progress: F) {
        for k in 0..self.dirty.len() {
            let ci = self.dirty[k] as usize;
            self.charge_cluster(ci, now, &mut progress);
        }
    }

    fn charge_cluster<F: FnMut(ThreadId, u64) -> bool>(&mut self, ci: usize, now: u64, mut progress: F) {
        for k in 0..self.clusters[ci].cores.len() {
            let c = self.clusters[ci].cores[k] as usize;
            self.charge_core(c, now, &mut progress);
        }
    }

    /// Charge core `c`'s running thread for the time since the core's last charge.
    fn charge_core<F: FnMut(ThreadId, u64) -> bool>(&mut self, c: usize, now: u64, progress: &mut F) {
        let core = &mut self.cores[c];
        let dt = now - core.charged_to;
        core.charged_to = now;
        let Some(t) = core.running else { return };
        if dt == 0 {
            return;
        }
        let th = &mut self.threads[t];
        th.st.charge(dt);
        let cl = &mut self.clusters[th.cluster as usize];
        if th.st.is_rt() {
            cl.rt_used += dt;
        }
        if !th.runnable {
            return;
        }
        core.busy += dt;
        th.cpu_time += dt;
        let paid = (th.period_overhead + th.overhead).min(dt);
        let period_paid = th.period_overhead.min(paid);
        th.period_overhead -= period_paid;
        th.overhead -= paid - period_paid;
        if dt > paid && !progress(t, dt - paid) {
            th.runnable = false;
            mark(&mut self.dirty, cl, th.cluster);
        }
    }

    /// The thread becomes runnable (wake-up rules of its policy apply).
    pub fn wake<E: From<HostEv>>(&mut self, t: ThreadId, now: u64, q: &mut EventQueue<E>) {
        if self.threads[t].runnable {
            return;
        }
        let minv = if self.threads[t].st.vruntime().is_some() {
            self.min_vruntime(self.threads[t].cluster as usize)
        } else {
            None
        };
        let th = &mut self.threads[t];
        th.runnable = true;
        // a server holding its core idle (polling server, supply window) that gets work is
        // already on the core: it keeps its place in the FIFO order instead of queueing behind
        // its peers (re-queued, it would hand the core to an idle peer, whose owner may then
        // move the work there, and so on)
        if th.core.is_none() || !th.st.holds_core_when_idle() {
            th.seq = self.seq;
            self.seq += 1;
        }
        let deadline_before = th.st.deadline();
        if let Some(at) = th.st.wake(now, minv) {
            self.arm_thread_timer(t, at, q);
        }
        self.on_new_period(t, deadline_before, now);
        self.touch(t);
    }

    /// The thread has no more work and blocks.
    pub fn block(&mut self, t: ThreadId) {
        if self.threads[t].runnable {
            self.threads[t].runnable = false;
            self.touch(t);
        }
    }

    /// The owner changed the thread's work: re-evaluate its cluster.
    pub fn touch(&mut self, t: ThreadId) {
        let ci = self.threads[t].cluster;
        mark(&mut self.dirty, &mut self.clusters[ci as usize], ci);
    }

    /// Priority inheritance: run `t` with the priority key of `donor` (typically a thread blocked
    /// on a lock `t` holds) until cleared with None.
    pub fn set_boost(&mut self, t: ThreadId, donor: Option<ThreadId>, now: u64) {
        let key = donor.and_then(|d| self.policy_key(d, now));
        self.threads[t].boost = key;
        self.touch(t);
    }

    /// Handle one of the host's own events.
    pub fn on_event<E: From<HostEv>>(&mut self, ev: HostEv, now: u64, q: &mut EventQueue<E>) {
        match ev {
            HostEv::ThreadTimer { thread, ver } => {
                let t = thread as usize;
                if self.threads[t].timer_ver == ver {
                    let deadline_before = self.threads[t].st.deadline();
                    if let Some(next) = self.threads[t].st.on_timer(now) {
                        self.arm_thread_timer(t, next, q);
                    }
                    self.on_new_period(t, deadline_before, now);
                    self.touch(t);
                }
            }
            HostEv::RtPeriod { cluster } => {
                let cl = &mut self.clusters[cluster as usize];
                cl.rt_used = 0;
                cl.rt_throttled = false;
                mark(&mut self.dirty, cl, cluster);
                let period = self.rt_throttle.map(|p| p.1).unwrap_or(u64::MAX);
                q.schedule(rtvirt_model::Nanos(now.saturating_add(period)), ev.into());
            }
            HostEv::CreditAcct { cluster } => {
                self.credit_accounting(cluster as usize);
                q.schedule(rtvirt_model::Nanos(now + CREDIT_ACCT), ev.into());
            }
            HostEv::CreditTick { cluster } => {
                let ci = cluster as usize;
                for k in 0..self.clusters[ci].cores.len() {
                    let c = self.clusters[ci].cores[k] as usize;
                    if let Some(t) = self.cores[c].running.filter(|&t| self.threads[t].runnable) {
                        self.threads[t].st.credit_tick();
                    }
                }
                mark(&mut self.dirty, &mut self.clusters[ci], cluster);
                q.schedule(rtvirt_model::Nanos(now + policy::CREDIT_TICK), ev.into());
            }
        }
    }

    /// Earliest armed core timer: (time, core).
    pub fn next_core_timer(&self) -> Option<(u64, usize)> {
        self.timers.first().copied()
    }

    /// The next thing to happen up to `horizon`: the earliest queued event, or a core timer
    /// (queued events first at equal times). A core timer is fired here and returned as `None`
    /// (its cluster is re-decided at the next `resched`). Every owner's event loop pulls from it.
    pub fn next_event<E>(&mut self, q: &mut EventQueue<E>, horizon: u64) -> Option<(u64, Option<E>)> {
        let queued = q.peek_time().map(|t| t.0).filter(|&t| t <= horizon);
        let timer = self.next_core_timer().filter(|&(t, _)| t <= horizon);
        match (queued, timer) {
            (Some(tq), Some((tt, _))) if tq <= tt => q.pop().map(|(t, e)| (t.0, Some(e))),
            (_, Some((tt, core))) => {
                self.fire_core_timer(core);
                self.timers_fired += 1;
                Some((tt, None))
            }
            (Some(_), None) => q.pop().map(|(t, e)| (t.0, Some(e))),
            (None, None) => None,
        }
    }

    /// Events handled so far: the queue's plus the core timers fired by [`Host::next_event`].
    pub fn events<E>(&self, q: &EventQueue<E>) -> u64 {
        q.delivered() + self.timers_fired
    }

    /// The core timer of `core` expired: its cluster is re-decided at the next `resched`, and
    /// the core is charged by the next [`Host::charge_due`].
    pub fn fire_core_timer(&mut self, core: usize) {
        self.set_core_timer(core, u64::MAX);
        self.fired.push(core);
        let ci = self.cores[core].cluster;
        mark(&mut self.dirty, &mut self.clusters[ci as usize], ci);
    }

    /// Arm (or with u64::MAX disarm) the timer of core `c`.
    fn set_core_timer(&mut self, c: usize, at: u64) {
        let before = std::mem::replace(&mut self.cores[c].timer_at, at);
        if before != at {
            if before != u64::MAX {
                self.timers.remove(&(before, c));
            }
            if at != u64::MAX {
                self.timers.insert((at, c));
            }
        }
    }

    /// Credit refill: each thread of the cluster gets m * 30ms * weight / total weight.
    fn credit_accounting(&mut self, ci: usize) {
        let cl = &mut self.clusters[ci];
        let total: u64 = cl.threads.iter().map(|&t| self.threads[t].st.weight()).sum();
        let m = cl.cores.len() as u64;
        for &t in &cl.threads {
            let w = self.threads[t].st.weight();
            if total > 0 && w > 0 {
                let share = (m * CREDIT_ACCT) as u128 * w as u128 / total as u128;
                self.threads[t].st.credit_refill(share as u64, self.ctx.tslice);
            }
        }
        mark(&mut self.dirty, cl, ci as u32);
    }

    /// Re-decide every cluster touched since the last call (charged first: [`Host::charge_dirty`]):
    /// enforce limits, pick the most urgent eligible threads, dispatch them, and arm each core's
    /// timer. `work_left(t)`: how long the
    /// owner's current work of `t` still needs (u64::MAX: unbounded).
    pub fn resched<E: From<HostEv>, W: Fn(ThreadId) -> u64>(&mut self, now: u64, q: &mut EventQueue<E>, work_left: W) {
        if self.dirty.is_empty() {
            return;
        }
        while let Some(ci) = self.dirty.pop() {
            let ci = ci as usize;
            self.clusters[ci].dirty = false;
            self.enforce(ci, now, q);
            let before: Vec<Option<ThreadId>> =
                self.clusters[ci].cores.iter().map(|&c| self.cores[c as usize].running).collect();
            self.pick(ci, now);
            self.enforce_preempted(ci, &before, now, q);
            for k in 0..self.clusters[ci].cores.len() {
                let c = self.clusters[ci].cores[k] as usize;
                self.arm_core_timer(c, now, &work_left);
            }
        }
    }

    fn enforce<E: From<HostEv>>(&mut self, ci: usize, now: u64, q: &mut EventQueue<E>) {
        if let Some((runtime, _)) = self.rt_throttle {
            let cl = &mut self.clusters[ci];
            if cl.rt_used >= runtime * cl.cores.len() as u64 {
                cl.rt_throttled = true;
            }
        }
        for k in 0..self.clusters[ci].cores.len() {
            let c = self.clusters[ci].cores[k] as usize;
            let Some(t) = self.cores[c].running else { continue };
            let share = self.share(t);
            let th = &mut self.threads[t];
            if th.runnable && th.st.depletion_unnoticed(now, &self.ctx) {
                continue;
            }
            th.st.cap_slice(share, now - th.dispatched);
            let (to_tail, timer) = th.st.enforce(now);
            if to_tail {
                th.seq = self.seq;
                self.seq += 1;
            }
            if let Some(at) = timer {
                self.arm_thread_timer(t, at, q);
            }
        }
    }

    /// A thread that ran on one of the cluster's cores `before` the pick and lost it while still
    /// runnable was preempted: the kernel's `put_prev_task` accounts its runtime, and a depleted
    /// reservation is throttled then.
    fn enforce_preempted<E: From<HostEv>>(
        &mut self,
        ci: usize,
        before: &[Option<ThreadId>],
        now: u64,
        q: &mut EventQueue<E>,
    ) {
        for (k, prev) in before.iter().enumerate() {
            let c = self.clusters[ci].cores[k] as usize;
            let Some(t) = *prev else { continue };
            if self.cores[c].running == Some(t) || !self.threads[t].runnable {
                continue;
            }
            if let (_, Some(at)) = self.threads[t].st.enforce(now) {
                self.arm_thread_timer(t, at, q);
            }
        }
    }

    fn key_of(&self, t: ThreadId, now: u64) -> Option<Key> {
        let th = &self.threads[t];
        if !(th.runnable || th.st.holds_core_when_idle()) {
            return None;
        }
        if let Some(k) = th.boost {
            return Some(k);
        }
        self.policy_key(t, now)
    }

    /// Whether the thread's policy would let it run now if it were runnable (not throttled, in
    /// its supply window, budget left).
    pub fn could_run(&self, t: ThreadId, now: u64) -> bool {
        self.policy_key(t, now).is_some()
    }

    /// The key its policy gives the thread now, whether or not it is runnable.
    fn policy_key(&self, t: ThreadId, now: u64) -> Option<Key> {
        let th = &self.threads[t];
        let running = th.core.is_some();
        let ran = if running { now - th.dispatched } else { 0 };
        th.st.key(now, running, ran, th.seq, self.clusters[th.cluster as usize].rt_throttled, &self.ctx)
    }

    /// Choose and dispatch the cluster's threads.
    fn pick(&mut self, ci: usize, now: u64) {
        let m = self.clusters[ci].cores.len();
        if m == 1 {
            let mut best: Option<(Key, ThreadId)> = None;
            for &t in &self.clusters[ci].threads {
                if let Some(k) = self.key_of(t, now) {
                    if best.is_none_or(|b| (k, t) < b) {
                        best = Some((k, t));
                    }
                }
            }
            let core = self.clusters[ci].cores[0] as usize;
            self.assign(core, best.map(|b| b.1), now);
            return;
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for &t in &self.clusters[ci].threads {
            if let Some(k) = self.key_of(t, now) {
                buf.push((k, t));
            }
        }
        {
            buf.sort_unstable();
            buf.truncate(m);
            let cores = self.clusters[ci].cores.clone();
            let mut plan: Vec<Option<ThreadId>> = vec![None; m];
            for (k, &c) in cores.iter().enumerate() {
                if let Some(r) = self.cores[c as usize].running {
                    if buf.iter().any(|&(_, t)| t == r) {
                        plan[k] = Some(r);
                    }
                }
            }
            for &(_, t) in buf.iter() {
                if !plan.contains(&Some(t)) {
                    if let Some(slot) = plan.iter().position(Option::is_none) {
                        plan[slot] = Some(t);
                    }
                }
            }
            for (k, &c) in cores.iter().enumerate() {
                if self.cores[c as usize].running != plan[k] {
                    self.assign(c as usize, None, now);
                }
            }
            for (k, &c) in cores.iter().enumerate() {
                self.assign(c as usize, plan[k], now);
            }
        }
        self.buf = buf;
    }

    fn assign(&mut self, c: usize, to: Option<ThreadId>, now: u64) {
        let from = self.cores[c].running;
        if from == to {
            if let Some(t) = to {
                let share = self.share(t);
                self.threads[t].st.renew_slice(share, &self.ctx);
            }
            return;
        }
        if let Some(f) = from {
            self.threads[f].core = None;
        }
        self.cores[c].running = to;
        if let Some(t) = to {
            let share = self.share(t);
            let switched = self.cores[c].last != Some(t);
            let th = &mut self.threads[t];
            th.core = Some(c as u32);
            th.dispatched = now;
            th.st.on_dispatch(share, &self.ctx);
            if switched {
                th.overhead = self.vcpu_switch;
            }
            self.cores[c].last = Some(t);
        }
    }

    /// (own weight, sum of weights of the runnable threads of its cluster); (0, 0) for policies
    /// without weights (no scan of the cluster on their hot path).
    fn share(&self, t: ThreadId) -> (u64, u64) {
        if self.threads[t].st.weight() == 0 {
            return (0, 0);
        }
        let cl = &self.clusters[self.threads[t].cluster as usize];
        let total =
            cl.threads.iter().filter(|&&u| self.threads[u].runnable).map(|&u| self.threads[u].st.weight()).sum();
        (self.threads[t].st.weight(), total)
    }

    fn min_vruntime(&self, ci: usize) -> Option<u64> {
        self.clusters[ci]
            .threads
            .iter()
            .filter(|&&u| self.threads[u].runnable)
            .filter_map(|&u| self.threads[u].st.vruntime())
            .min()
    }

    fn arm_core_timer<W: Fn(ThreadId) -> u64>(&mut self, c: usize, now: u64, work_left: &W) {
        let at = match self.cores[c].running {
            None => u64::MAX,
            Some(t) => {
                let th = &self.threads[t];
                let owed = th.period_overhead + th.overhead;
                let work = if th.runnable { owed.saturating_add(work_left(t)) } else { u64::MAX };
                let mut d = work.min(th.st.limit(now, th.dispatched, &self.ctx));
                if let (Some((runtime, _)), true) = (self.rt_throttle, th.st.is_rt()) {
                    let cl = &self.clusters[th.cluster as usize];
                    let left = (runtime * cl.cores.len() as u64).saturating_sub(cl.rt_used);
                    d = d.min(left.div_ceil(cl.cores.len() as u64).max(1));
                }
                now.saturating_add(d)
            }
        };
        self.set_core_timer(c, at);
    }

    fn arm_thread_timer<E: From<HostEv>>(&mut self, t: ThreadId, at: u64, q: &mut EventQueue<E>) {
        let th = &mut self.threads[t];
        th.timer_ver = th.timer_ver.wrapping_add(1);
        q.schedule(rtvirt_model::Nanos(at), HostEv::ThreadTimer { thread: t as u32, ver: th.timer_ver }.into());
    }
}

fn mark(dirty: &mut Vec<u32>, cl: &mut Cluster, ci: u32) {
    if !cl.dirty {
        cl.dirty = true;
        dirty.push(ci);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Policy, Settings};

    fn fifo(name: &str, prio: u8) -> ThreadSpec {
        ThreadSpec { name: name.into(), cores: vec![0], policy: Policy::Rt { prio, rr_quantum: None } }
    }

    #[test]
    fn priority_inheritance_boost_lifts_the_holder_above_a_medium_thread() {
        let s = Settings {
            duration: 1,
            seed: 1,
            abort_late: false,
            tick: 1_000_000,
            tick_phase: 0,
            hrtick: false,
            rt_throttle: None,
            vcpu_switch: 0,
            credit_tslice: 30_000_000,
            credit_ratelimit: 0,
            credit_precise: false,
        };
        let specs = [fifo("holder", 10), fifo("medium", 50), fifo("waiter", 90)];
        let mut h = Host::new(1, specs.iter(), &s);
        let mut q: EventQueue<HostEv> = EventQueue::new();
        h.start(&mut q);
        h.wake(0, 0, &mut q);
        h.wake(1, 0, &mut q);
        h.resched(0, &mut q, |_| 1_000);
        assert_eq!(h.running(0), Some(1));
        // The waiter blocks on the holder's lock: the holder inherits its priority.
        h.set_boost(0, Some(2), 10);
        h.resched(10, &mut q, |_| 1_000);
        assert_eq!(h.running(0), Some(0));
        h.set_boost(0, None, 20);
        h.resched(20, &mut q, |_| 1_000);
        assert_eq!(h.running(0), Some(1));
    }
}
