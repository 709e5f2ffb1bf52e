//! The simulated host's state: threads, cores, RX queues, VMs, poll lists, flows and events
//! ([`Sim`]); what each part does is in the sibling modules' `impl Sim` blocks.

use super::packets::{Packet, PacketQueue};
use crate::engine::rng::SimRng;
use crate::engine::trace::{TraceWriter, Track};
use crate::engine::EventQueue;
use crate::net::stats::FlowStats;
use rtvirt_model::scenario::net::{KvmNet, SocketMode};
use rtvirt_model::Nanos;
use std::collections::VecDeque;

pub(crate) type ThreadIndex = usize;

/// What a thread is (decides its behaviour in `path.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Hard-IRQ context of a core (vanilla: also softirq at irq_exit).
    IrqCtx(usize),
    /// PREEMPT_RT per-CPU per-device IRQ thread serving one RX queue.
    IrqThread(usize),
    Ksoftirqd(usize),
    Vhost(usize),
    /// vCPU thread of a VM, or the server process of a non-virtualized endpoint.
    Vcpu(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThreadState {
    Sleeping,
    Ready,
    Running,
    Blocked,
}

/// The work a thread is doing now and what happens when it is done.
pub(crate) struct Work {
    pub left: Nanos,
    pub action: Action,
}

/// A thread's answer to "what next?".
pub(crate) enum Next {
    Work(Work),
    Sleep,
    /// Block on the softirq lock of this list.
    Block(usize),
}

pub(crate) enum Action {
    Nothing,
    /// Threaded mode: primary handler woke the IRQ thread of this RX queue.
    TopHalf(usize),
    /// Device handler: napi_schedule the RX queue on the current context's list, raise NET_RX.
    HardIrq(usize),
    /// One NAPI poll of an RX queue on a list.
    Poll {
        list: usize,
        rxq: usize,
        pkts: PacketQueue,
    },
    VhostRx {
        vm: usize,
        pkts: PacketQueue,
    },
    Inject {
        vm: usize,
    },
    VhostTx {
        pkts: PacketQueue,
    },
    VmEntry {
        vm: usize,
    },
    GuestIrq {
        vm: usize,
    },
    GuestRx {
        vm: usize,
        pkts: PacketQueue,
    },
    Serve {
        vm: usize,
        pkt: Packet,
    },
    /// Vhost mode: the kick VM exit that hands the response to the backend.
    Kick {
        vm: usize,
        pkt: Packet,
    },
    /// Outsourced: the RPC VM exit of sendto.
    RpcExit {
        vm: usize,
        pkt: Packet,
    },
    /// Host stack sends the response (outsourced or host process).
    HostSend {
        pkt: Packet,
    },
    Halt {
        vm: usize,
    },
    Exit,
}

pub(crate) struct Thread {
    pub name: String,
    pub role: Role,
    /// 0 = normal (CFS), 1..99 = SCHED_FIFO, 1000 = hard-IRQ context.
    pub base: i32,
    pub boost: i32,
    pub mask: u64,
    pub core: usize,
    pub state: ThreadState,
    pub work: Option<Work>,
    pub vruntime: u64,
    pub ready_seq: u64,
    /// Bytes copied system-wide when this thread last stopped running (cache model).
    pub mark: f64,
    pub footprint_kib: f64,
    /// Kernel-thread exit work still due before sleeping.
    pub exit_due: bool,
    /// NET_RX softirq state while this context runs it.
    pub soft: Option<SoftCtx>,
    /// Lists whose softirq this thread must still run (raised by it, or deferred to ksoftirqd).
    pub raised: Vec<usize>,
    /// IRQ thread: hard IRQs waiting to be handled.
    pub irq_pending: u32,
    pub blocked_since: Nanos,
    /// Cache reload penalty not yet charged (vCPU: charged to the first guest step).
    pub debt: Nanos,
    /// CPU time used after warm-up.
    pub cpu: u64,
    pub trace_track: Track,
}

pub(crate) struct Core {
    pub current: Option<ThreadIndex>,
    pub started: Nanos,
    /// The running thread's completion timer: (time, the queue's insertion number), kept out of
    /// the event queue so that a re-armed timer leaves no stale event to pop.
    pub done: Option<(Nanos, u64)>,
    pub ready: Vec<ThreadIndex>,
    pub busy: u64,
    pub prev: Option<ThreadIndex>,
    pub irqctx: ThreadIndex,
    pub ksoftirqd: ThreadIndex,
    /// Thread interrupted by the hard-IRQ context (vanilla need_resched check).
    pub interrupted: Option<ThreadIndex>,
    /// Hard IRQs waiting for the hard-IRQ context: an RX queue, or None for the tick.
    pub irq_jobs: VecDeque<Option<usize>>,
    /// When the running thread was switched in.
    pub since: Nanos,
    /// CFS min_vruntime of the core.
    pub min_vr: u64,
    /// Start of the running thread's current trace slice.
    pub trace_since: Nanos,
    pub time_squeeze: u64,
    pub trace_track: Track,
    /// The core's softnet backlog queue (an RX queue index): packets a thread hands to the
    /// stack with netif_rx (the vhost TX path), polled by NET_RX like a NIC queue.
    pub backlog: usize,
}

pub(crate) struct RxQ {
    pub nic: usize,
    pub core: usize,
    pub ring: PacketQueue,
    pub ring_cap: usize,
    pub irq_enabled: bool,
    pub irq_event: bool,
    pub on_list: Option<usize>,
    pub irq_thread: Option<ThreadIndex>,
    pub senders: Vec<usize>,
    pub drops: u64,
    /// A core's softnet backlog (no NIC, no interrupt) rather than a NIC RX queue.
    pub backlog: bool,
}

pub(crate) struct VmState {
    pub socket: SocketMode,
    pub vhost: Option<ThreadIndex>,
    pub vcpu: ThreadIndex,
    pub batch: usize,
    pub tap: PacketQueue,
    pub txq: PacketQueue,
    pub ring: PacketQueue,
    pub ring_cap: usize,
    pub sock: PacketQueue,
    pub virq: bool,
    pub in_guest: bool,
    pub needs_resume: bool,
    pub need_inject: bool,
    /// Response between the server and the wire.
    pub resp: Option<(Packet, RespPhase)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RespPhase {
    Kick,
    RpcExit,
    HostSend,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev {
    Arrival { flow: usize },
    NicIrq { rxq: usize },
    Tick { core: usize },
}

/// Poll lists (and softirq locks) per core: normal and RT.
pub(crate) const LISTS_PER_CORE: usize = 2;
pub(crate) const TAP_LIMIT: usize = 1000;
/// netdev_max_backlog: packets a core's backlog queue holds (drops beyond).
pub(crate) const BACKLOG_LIMIT: usize = 1000;
pub(crate) const TICK: Nanos = Nanos(1_000_000);

pub(crate) struct Sim {
    pub net: KvmNet,
    pub event_queue: EventQueue<Ev>,
    pub threads: Vec<Thread>,
    pub cores: Vec<Core>,
    pub rxqs: Vec<RxQ>,
    pub vms: Vec<VmState>,
    pub flows: Vec<FlowState>,
    pub lists: Vec<PollList>,
    pub copied: f64,
    pub seq: u64,
    pub warmup: Nanos,
    pub end: Nanos,
    /// Completion timers fired ([`Core::done`]).
    pub timers_fired: u64,
    /// Completion timers dropped before firing, due by the end ([`Core::done`]).
    pub superseded: u64,
    pub rng: SimRng,
    pub trace: Option<TraceWriter>,
    pub inversions: u64,
    /// Packet buffers of finished work, reused by the next drain (no allocation per poll).
    pub spare_pkts: Vec<PacketQueue>,
    /// Scratch lists of thread or RX queue indices (cleared before each use).
    pub scratch: Vec<usize>,
}

#[derive(Default)]
pub(crate) struct PollList {
    /// sd->poll_list: NAPIs (RX queue indices) in poll order.
    pub napis: VecDeque<usize>,
    /// The running round's repoll list (NAPIs that used their whole weight).
    pub repoll: Vec<usize>,
    pub holder: Option<ThreadIndex>,
    pub waiters: Vec<ThreadIndex>,
}

/// A context's progress through __do_softirq / net_rx_action.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SoftCtx {
    pub list: usize,
    /// Budget left in this round (netdev_budget minus the work of its polls).
    pub budget: i64,
    pub round_start: Nanos,
    /// NAPIs of this round's snapshot not polled yet.
    pub snap: usize,
    /// Polls in this round.
    pub round_polls: u32,
    /// When the context took the lock (MAX_SOFTIRQ_TIME of the restarts).
    pub started: Nanos,
    /// Rounds restarted since it took the lock.
    pub rounds: u32,
    /// Polls since it took the lock.
    pub polls: u32,
}

pub(crate) enum FlowState {
    Rr {
        rxq: usize,
        req: u32,
        resp: u32,
        min: Nanos,
        max: Nanos,
        rng: SimRng,
        stats: FlowStats,
    },
    Tcp {
        rxq: usize,
        frame: u32,
        payload: u32,
        gap: f64,
        next_at: f64,
        inflight: u32,
        window: u32,
        /// Whether a segment carries its arrival time: only on the host-stack socket path, whose
        /// server reads it as a request's. Unstamped segments of a flow are identical packets
        /// and queue as runs.
        stamped: bool,
        stats: FlowStats,
    },
}

impl FlowState {
    pub fn stats(&self) -> &FlowStats {
        match self {
            FlowState::Rr { stats, .. } | FlowState::Tcp { stats, .. } => stats,
        }
    }
    pub fn stats_mut(&mut self) -> &mut FlowStats {
        match self {
            FlowState::Rr { stats, .. } | FlowState::Tcp { stats, .. } => stats,
        }
    }
    pub fn drops(&self) -> u64 {
        self.stats().drops
    }
    /// The RX queue a bulk sender feeds (None for request/response flows).
    pub fn sender_rxq(&self) -> Option<usize> {
        match self {
            FlowState::Tcp { rxq, .. } => Some(*rxq),
            FlowState::Rr { .. } => None,
        }
    }
    pub fn response_bytes(&self) -> u32 {
        match self {
            FlowState::Rr { resp, .. } => *resp,
            FlowState::Tcp { .. } => 0,
        }
    }
    pub fn is_bulk(&self) -> bool {
        matches!(self, FlowState::Tcp { .. })
    }
}
