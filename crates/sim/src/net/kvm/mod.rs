//! The KVM host network path of Garcia Alvarado 2019 as work done by simulated threads on cores.
//!
//! - `sched`: the per-core scheduler (hard-IRQ context above every thread, SCHED_FIFO
//!   priorities with RT push on wake-up, CFS with vruntime, wake-up preemption and 1 ms ticks,
//!   idle pull, context-switch cost, priority inheritance through the softirq locks, and the
//!   cache reload penalty on every dispatch).
//! - `softirq`: NET_RX: per-CPU poll_list(s) and their locks, NAPI weight 64, budget 300
//!   packets or 2 jiffies, repoll to tail, time_squeeze, restarts then ksoftirqd; the 4.x
//!   PREEMPT_RT lock semantics (a contending thread boosts the holder, the holder stops after
//!   its current NAPI poll, the contender then drains the whole shared list) and the partitioned
//!   rt_poll_list chosen by priority >= rtnet_prio.
//! - `path`: what every thread does: NIC hard IRQ and IRQ threads, bridge, vhost backend
//!   (per-packet + per-byte copy, batch limit, virtual interrupt), the guest vCPU (guest IRQ,
//!   IP/UDP/TCP, socket, server, send through VM exit), socket outsourcing (host stack, single
//!   copy, virtual interrupt or shared event queue + halted-vCPU wake-up), the send path.
//! - `traffic`: the critical UDP request/response client and the window-limited TCP senders.
//! - `packets`: packets and their FIFO queues, stored as runs of identical packets (bulk
//!   segments move a poll's worth at a time).
//!
//! Why a scheduler of its own: the network path needs hard-IRQ context, per-CPU IRQ threads,
//! softirq locks with priority inheritance and non-preemptible vanilla softirq sections, which
//! a task-level host scheduler does not offer; this one is small and focused on exactly that.

mod packets;
mod path;
mod sched;
mod softirq;
mod state;
#[cfg(test)]
mod tests;
mod traffic;

use crate::engine::rng::SimRng;
use crate::engine::trace::{TraceWindow, TraceWriter, Track};
use crate::engine::EventQueue;
use packets::{Packet, PacketQueue};
use rtvirt_model::results::{CoreResult, HostThread, Results, SimulationSection};
use rtvirt_model::scenario::net::{IrqMode, KvmNet, SocketMode};
use rtvirt_model::Nanos;
use std::collections::VecDeque;

pub(crate) use state::{
    Action, Core, Ev, Next, PollList, RespPhase, Role, RxQ, Sim, Thread, ThreadIndex, ThreadState, VmState, Work,
    BACKLOG_LIMIT, LISTS_PER_CORE, TAP_LIMIT, TICK,
};

/// Options of one run.
pub struct KvmRunOptions {
    pub duration: Nanos,
    pub warmup: Nanos,
    pub seed: u64,
    pub trace: Option<TraceWindow>,
}

/// Result of one run: the results document and, if asked, the trace.
pub struct KvmRun {
    pub results: Results,
    pub trace: Option<serde_json::Value>,
    pub events: u64,
}

/// Simulate `net` for `opt.duration`.
pub fn run(net: &KvmNet, opt: &KvmRunOptions) -> KvmRun {
    let mut sim = Sim::build(net.clone(), opt);
    sim.start();
    loop {
        let queued = sim.event_queue.peek_key().filter(|k| k.0 <= sim.end);
        let timer = sim.next_done().filter(|&(at, _, _)| at <= sim.end);
        match (queued, timer) {
            (Some(q), Some((at, seq, _))) if q < (at, seq) => sim.pop_and_handle(),
            (_, Some((at, _, core))) => sim.fire_done(core, at),
            (Some(_), None) => sim.pop_and_handle(),
            (None, None) => break,
        }
    }
    sim.finish(opt)
}

impl Sim {
    fn build(net: KvmNet, opt: &KvmRunOptions) -> Sim {
        let mut sim = Sim {
            event_queue: EventQueue::new(),
            threads: Vec::new(),
            cores: Vec::new(),
            rxqs: Vec::new(),
            vms: Vec::new(),
            flows: Vec::new(),
            lists: (0..net.cores as usize * LISTS_PER_CORE).map(|_| PollList::default()).collect(),
            copied: 0.0,
            seq: 0,
            warmup: opt.warmup.min(opt.duration),
            end: opt.duration,
            timers_fired: 0,
            superseded: 0,
            rng: SimRng::new(opt.seed, 0),
            trace: opt.trace.map(TraceWriter::new),
            inversions: 0,
            spare_pkts: Vec::new(),
            scratch: Vec::new(),
            net,
        };
        sim.build_cores();
        sim.build_rxqs();
        sim.build_vms();
        sim.flows = traffic::build(&sim.net, &sim.rxqs, opt.seed);
        for (f, fl) in sim.flows.iter().enumerate() {
            if let Some(rxq) = fl.sender_rxq() {
                sim.rxqs[rxq].senders.push(f);
            }
        }
        sim
    }

    fn build_cores(&mut self) {
        let cache = self.net.cache;
        for c in 0..self.net.cores as usize {
            let irq = self.add_thread(format!("hardirq/{c}"), Role::IrqCtx(c), 1000, 1 << c, cache.footprint_irq_kib);
            let ksoft =
                self.add_thread(format!("ksoftirqd/{c}"), Role::Ksoftirqd(c), 0, 1 << c, cache.footprint_irq_kib);
            let track = Track { pid: 1, tid: c as u32 };
            self.cores.push(Core {
                current: None,
                started: Nanos::ZERO,
                done: None,
                ready: Vec::new(),
                busy: 0,
                prev: None,
                irqctx: irq,
                ksoftirqd: ksoft,
                interrupted: None,
                irq_jobs: VecDeque::new(),
                time_squeeze: 0,
                since: Nanos::ZERO,
                min_vr: 0,
                trace_since: Nanos::ZERO,
                trace_track: track,
                backlog: usize::MAX,
            });
            if let Some(t) = self.trace.as_mut() {
                t.name_track(track, "cores", &format!("core {c}"));
            }
        }
    }

    fn build_rxqs(&mut self) {
        for (n, nic) in self.net.nics.clone().iter().enumerate() {
            let host_stack = self.net.vms.iter().any(|v| v.nic == Some(n) && v.socket != SocketMode::Vhost);
            let rr = self.net.vms.iter().enumerate().any(|(i, v)| v.nic == Some(n) && self.serves_rr(i));
            let fp = if rr { self.net.cache.footprint_irq_kib } else { 0.0 }
                + if host_stack { self.net.cache.footprint_host_stack_kib } else { 0.0 };
            for &c in &nic.irq_cores {
                let c = c as usize;
                let irq_thread = (self.net.irq == IrqMode::Threaded).then(|| {
                    let prio = nic.irq_prio.map(i32::from).unwrap_or(0);
                    self.add_thread(format!("irq/{}-{c}", nic.name), Role::IrqThread(self.rxqs.len()), prio, 1 << c, fp)
                });
                self.rxqs.push(RxQ {
                    nic: n,
                    core: c,
                    ring: PacketQueue::default(),
                    ring_cap: nic.ring as usize,
                    irq_enabled: true,
                    irq_event: false,
                    on_list: None,
                    irq_thread,
                    senders: Vec::new(),
                    drops: 0,
                    backlog: false,
                });
            }
        }
        for c in 0..self.cores.len() {
            self.cores[c].backlog = self.rxqs.len();
            self.rxqs.push(RxQ {
                nic: usize::MAX,
                core: c,
                ring: PacketQueue::default(),
                ring_cap: BACKLOG_LIMIT,
                irq_enabled: false,
                irq_event: false,
                on_list: None,
                irq_thread: None,
                senders: Vec::new(),
                drops: 0,
                backlog: true,
            });
        }
    }

    fn build_vms(&mut self) {
        let c = self.net.cache;
        for (i, vm) in self.net.vms.clone().iter().enumerate() {
            let rr = if self.serves_rr(i) { 1.0 } else { 0.0 };
            let vcpu_fp = rr
                * match vm.socket {
                    SocketMode::Vhost | SocketMode::Outsourced => c.footprint_guest_stack_kib + c.footprint_app_kib,
                    SocketMode::OutsourcedRt | SocketMode::Host | SocketMode::Container => {
                        c.footprint_app_kib + c.footprint_host_stack_kib
                    }
                };
            let prio = |p: Option<u8>| p.map(i32::from).unwrap_or(0);
            let vhost = (vm.socket == SocketMode::Vhost).then(|| {
                self.add_thread(
                    format!("vhost-{}", vm.name),
                    Role::Vhost(i),
                    prio(vm.vhost.prio),
                    vm.vhost.cores,
                    rr * c.footprint_vhost_kib,
                )
            });
            let vname =
                if vm.socket.is_host_process() { format!("server-{}", vm.name) } else { format!("vcpu-{}", vm.name) };
            let vcpu = self.add_thread(vname, Role::Vcpu(i), prio(vm.vcpu.prio), vm.vcpu.cores, vcpu_fp);
            self.vms.push(VmState {
                socket: vm.socket,
                vhost,
                vcpu,
                batch: vm.vhost.batch as usize,
                tap: PacketQueue::default(),
                txq: PacketQueue::default(),
                ring: PacketQueue::default(),
                ring_cap: vm.ring as usize,
                sock: PacketQueue::default(),
                virq: false,
                in_guest: false,
                needs_resume: false,
                need_inject: false,
                resp: None,
            });
        }
    }

    /// Whether VM `vm` serves a request/response flow. Only such paths carry a cache footprint
    /// that goes cold between requests; bulk paths stream and their per-packet and per-byte costs
    /// are calibrated at streaming (miss-bound) speed.
    fn serves_rr(&self, vm: usize) -> bool {
        self.net
            .flows
            .iter()
            .any(|f| f.vm == vm && matches!(f.kind, rtvirt_model::scenario::net::FlowKind::UdpRr { .. }))
    }

    fn add_thread(&mut self, name: String, role: Role, base: i32, mask: u64, footprint_kib: f64) -> ThreadIndex {
        let id = self.threads.len();
        let track = Track { pid: 2, tid: id as u32 };
        if let Some(t) = self.trace.as_mut() {
            t.name_track(track, "threads", &name);
        }
        let core = mask.trailing_zeros() as usize;
        self.threads.push(Thread {
            name,
            role,
            base,
            boost: 0,
            mask,
            core,
            state: ThreadState::Sleeping,
            work: None,
            vruntime: 0,
            ready_seq: 0,
            mark: 0.0,
            footprint_kib,
            exit_due: false,
            soft: None,
            raised: Vec::new(),
            irq_pending: 0,
            blocked_since: Nanos::ZERO,
            debt: Nanos::ZERO,
            cpu: 0,
            trace_track: track,
        });
        id
    }

    fn start(&mut self) {
        for c in 0..self.cores.len() {
            self.event_queue.schedule(Nanos(TICK.0 + c as u64 * 1_000), Ev::Tick { core: c });
        }
        for f in 0..self.flows.len() {
            self.start_flow(f);
        }
    }

    /// The earliest completion timer: (time, insertion number, core).
    fn next_done(&self) -> Option<(Nanos, u64, usize)> {
        self.cores.iter().enumerate().filter_map(|(c, core)| core.done.map(|(at, seq)| (at, seq, c))).min()
    }

    /// Core `c`'s completion timer fires at `at`: its running thread finished its work.
    fn fire_done(&mut self, c: usize, at: Nanos) {
        self.cores[c].done = None;
        self.event_queue.advance_to(at);
        self.timers_fired += 1;
        self.work_done(c);
    }

    fn pop_and_handle(&mut self) {
        if let Some((_, ev)) = self.event_queue.pop() {
            self.handle(ev);
        }
    }

    /// Events handled: the queue's, the completion timers fired, and the superseded ones (each
    /// was an event once, popped and ignored: counted so that `events` keeps its meaning).
    fn events(&self) -> u64 {
        self.event_queue.delivered() + self.timers_fired + self.superseded
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Arrival { flow } => self.arrival(flow),
            Ev::NicIrq { rxq } => self.nic_irq(rxq),
            Ev::Tick { core } => {
                self.tick(core);
                self.event_queue.schedule_in(TICK, Ev::Tick { core });
            }
        }
    }

    /// An empty packet buffer: a spare one if any (finished work hands its buffer back).
    pub(crate) fn take_pkts(&mut self) -> PacketQueue {
        self.spare_pkts.pop().unwrap_or_default()
    }

    /// Hand back a buffer of finished work (emptied) for the next drain.
    pub(crate) fn give_pkts(&mut self, mut pkts: PacketQueue) {
        pkts.clear();
        self.spare_pkts.push(pkts);
    }

    /// Bytes moved through the LLC (DMA and copies): feeds the cache interference model.
    pub(crate) fn copy_bytes(&mut self, bytes: u64) {
        self.copied += bytes as f64;
    }

    /// CPU time to copy `bytes`.
    pub(crate) fn copy_cost(&self, bytes: u64) -> Nanos {
        Nanos(bytes * self.net.costs.copy_per_kib.0 / 1024)
    }

    fn finish(mut self, opt: &KvmRunOptions) -> KvmRun {
        let now = self.end;
        for c in 0..self.cores.len() {
            if self.cores[c].current.is_some() {
                let started = self.cores[c].started;
                self.account(c, started, now);
            }
        }
        let span = now.saturating_sub(self.warmup);
        let mut results = Results::new("netsim", span.0);
        results.seed = Some(opt.seed);
        for (i, c) in self.cores.iter().enumerate() {
            results
                .cores
                .push(CoreResult { time_squeeze: Some(c.time_squeeze), ..CoreResult::busy(i as u32, c.busy, span.0) });
        }
        for (i, f) in self.flows.iter().enumerate() {
            let name = self.net.flows[i].name.clone();
            let drops = f.drops();
            results.flows.push(f.stats().result(name, span, drops));
        }
        let threads = self
            .threads
            .iter()
            .filter(|t| t.cpu > 0)
            .map(|t| HostThread {
                name: t.name.clone(),
                cpu_time_ns: t.cpu,
                prio: Some(t.base),
                utilisation: t.cpu as f64 / span.0.max(1) as f64,
                ..Default::default()
            })
            .collect();
        results.simulation = Some(SimulationSection {
            events: Some(self.events()),
            softirq_lock_inversions: Some(self.inversions),
            threads: Some(threads),
            ..Default::default()
        });
        let events = self.events();
        KvmRun { results, trace: self.trace.take().map(TraceWriter::finish), events }
    }
}
