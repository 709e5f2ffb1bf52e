//! Scenario section `[net]`: the simulated network path (NICs, IRQs, softirq, backends, flows).
//!
//! Two host kinds share the section:
//! - `kind = "kvm"` (Garcia Alvarado 2019): NICs with IRQ affinity, threaded or hard IRQs, shared or
//!   partitioned NET_RX softirq, VMs with a vhost backend or an outsourced socket, flows.
//! - `kind = "xen"` (Xi et al. 2012): Dom0 netback/softnet queues (original or RTCA) and domains.
//!
//! ```toml
//! [net]
//! kind = "kvm"
//! duration = "2s"
//! irq = "threaded"            # "hardirq" (vanilla) | "threaded" (PREEMPT_RT)
//! softirq = "partitioned"     # "shared" | "partitioned" (rt_poll_list, priority >= rtnet_prio)
//! rtnet_prio = 47
//!
//! [[net.nic]]
//! name = "rt0"
//! irq_cores = [0]
//! irq_prio = 50               # FIFO priority of its IRQ threads; omitted = normal (CFS)
//!
//! [[net.vm]]
//! name = "rtvm"
//! nic = "rt0"
//! socket = "outsourced_rt"    # "vhost" | "outsourced" | "outsourced_rt" | "host" | "container"
//! vhost = { prio = 48 }
//! vcpu = { prio = 47 }
//!
//! [[net.flow]]
//! name = "critical"
//! kind = "udp_rr"
//! to = "rtvm"
//! ```
//!
//! Every cost has a calibrated default ([`NetCosts::default`]) shared by all methods; see
//! docs/netsim.md for where each number comes from.

use crate::duration::Nanos;
use crate::error::shown;
use crate::error::InputError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

type R<T> = Result<T, InputError>;

/// `[net]`: network topology and traffic of the simulator.
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNet {
    /// "kvm" (default) or "xen".
    pub kind: Option<String>,
    /// Simulated time (default 2s).
    pub duration: Option<Nanos>,
    /// Time simulated before statistics start (default 20ms).
    pub warmup: Option<Nanos>,
    pub seed: Option<u64>,
    /// "hardirq" (vanilla: IRQ + softirq before any thread) or "threaded" (PREEMPT_RT).
    pub irq: Option<String>,
    /// "shared" (one poll_list + lock per CPU) or "partitioned" (+ rt_poll_list + rt lock).
    pub softirq: Option<String>,
    /// Partitioned softirq: threads with FIFO priority >= this use the RT list (default 47).
    pub rtnet_prio: Option<i64>,
    /// NET_RX rounds a context runs before deferring to ksoftirqd (default 10, MAX_SOFTIRQ_RESTART).
    pub softirq_restarts: Option<i64>,
    #[serde(default)]
    pub costs: RawCosts,
    #[serde(default)]
    pub cache: RawCache,
    #[serde(default, rename = "nic")]
    pub nics: Vec<RawNic>,
    #[serde(default, rename = "vm")]
    pub vms: Vec<RawVm>,
    #[serde(default, rename = "flow")]
    pub flows: Vec<RawFlow>,
    pub xen: Option<RawXen>,
}

/// `[net.costs]`: per-stage CPU costs; omitted ones keep the calibrated defaults.
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCosts {
    pub hardirq: Option<Nanos>,
    pub ctx_switch: Option<Nanos>,
    pub napi_poll: Option<Nanos>,
    pub rx_per_packet: Option<Nanos>,
    pub bridge_per_packet: Option<Nanos>,
    pub host_udp_rx: Option<Nanos>,
    pub host_udp_tx: Option<Nanos>,
    pub vhost_per_packet: Option<Nanos>,
    pub copy_per_kib: Option<Nanos>,
    pub virq_inject: Option<Nanos>,
    pub vm_entry: Option<Nanos>,
    pub vm_exit: Option<Nanos>,
    pub guest_hardirq: Option<Nanos>,
    pub guest_udp_rx: Option<Nanos>,
    pub guest_tcp_rx_per_packet: Option<Nanos>,
    pub guest_udp_tx: Option<Nanos>,
    pub app_service: Option<Nanos>,
    pub app_service_jitter: Option<Nanos>,
    pub nic_xmit: Option<Nanos>,
    pub rpc: Option<Nanos>,
    pub event_notify: Option<Nanos>,
    pub wakeup: Option<Nanos>,
    pub thread_exit: Option<Nanos>,
}

/// Calibrated per-stage costs (one set for every method).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NetCosts {
    /// Hard IRQ handler of a NIC (entry, ack, napi_schedule).
    pub hardirq: Nanos,
    /// Switching a core from one thread to another.
    pub ctx_switch: Nanos,
    /// Fixed cost of one NAPI poll call.
    pub napi_poll: Nanos,
    /// Driver + netif_receive_skb per received packet.
    pub rx_per_packet: Nanos,
    /// Bridge forwarding per packet (to a tap or the host stack).
    pub bridge_per_packet: Nanos,
    /// Host IP/UDP receive + socket enqueue + wake-up (host stack serves the socket).
    pub host_udp_rx: Nanos,
    /// Host UDP/IP send of one datagram (up to the driver).
    pub host_udp_tx: Nanos,
    /// vhost per packet (descriptor handling, tap read), RX or TX.
    pub vhost_per_packet: Nanos,
    /// Copying one KiB (memcpy through the cache).
    pub copy_per_kib: Nanos,
    /// Injecting a virtual interrupt into a vCPU (irqfd + kick).
    pub virq_inject: Nanos,
    /// VM entry (host -> guest), incl. the vCPU thread's wake path.
    pub vm_entry: Nanos,
    /// VM exit (guest -> host): I/O kick, RPC, HLT.
    pub vm_exit: Nanos,
    /// Guest virtio IRQ handler + softirq entry.
    pub guest_hardirq: Nanos,
    /// Guest IP/UDP receive + socket enqueue + wake of the server.
    pub guest_udp_rx: Nanos,
    /// Guest per-packet TCP receive (GRO, ACK generation) for bulk flows.
    pub guest_tcp_rx_per_packet: Nanos,
    /// Guest sendto: UDP/IP send + virtio enqueue.
    pub guest_udp_tx: Nanos,
    /// Mean service time of the request/response server.
    pub app_service: Nanos,
    /// Half-width of the uniform service-time jitter.
    pub app_service_jitter: Nanos,
    /// NIC transmit (driver xmit + doorbell).
    pub nic_xmit: Nanos,
    /// Socket-outsourcing VM RPC handling in the host (per call).
    pub rpc: Nanos,
    /// RT outsourcing: put an event in the shared queue (guest idle loop reads it).
    pub event_notify: Nanos,
    /// Waking a thread (try_to_wake_up, IPI if remote).
    pub wakeup: Nanos,
    /// What a kernel thread still does after its hand-off before it sleeps (IRQ thread:
    /// napi_complete, IRQ re-enable, unlock; vhost: ring re-check, notification re-enable).
    pub thread_exit: Nanos,
}

impl Default for NetCosts {
    /// The calibration of docs/netsim.md (Garcia Alvarado 2019 "without Heavy Receivers" and exclusive-CPU
    /// throughput).
    fn default() -> Self {
        let ns = Nanos;
        NetCosts {
            hardirq: ns(1_000),
            ctx_switch: ns(1_200),
            napi_poll: ns(200),
            rx_per_packet: ns(270),
            bridge_per_packet: ns(180),
            host_udp_rx: ns(1_500),
            host_udp_tx: ns(1_500),
            vhost_per_packet: ns(70),
            copy_per_kib: ns(90),
            virq_inject: ns(1_500),
            vm_entry: ns(1_500),
            vm_exit: ns(1_200),
            guest_hardirq: ns(1_500),
            guest_udp_rx: ns(2_000),
            guest_tcp_rx_per_packet: ns(60),
            guest_udp_tx: ns(2_000),
            app_service: ns(2_500),
            app_service_jitter: ns(500),
            nic_xmit: ns(700),
            rpc: ns(800),
            event_notify: ns(300),
            wakeup: ns(600),
            thread_exit: ns(1_000),
        }
    }
}

/// `[net.cache]`: shared last-level-cache interference (docs/netsim.md).
#[derive(Debug, Default, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCache {
    /// LLC size in KiB (default 20480).
    pub llc_kib: Option<f64>,
    /// Cost of one cache-line miss (default 80ns).
    pub miss: Option<Nanos>,
    /// Working set (KiB) of each code path, re-read after others evicted it.
    pub footprint_irq_kib: Option<f64>,
    pub footprint_vhost_kib: Option<f64>,
    pub footprint_guest_stack_kib: Option<f64>,
    pub footprint_host_stack_kib: Option<f64>,
    pub footprint_app_kib: Option<f64>,
    /// Set false to switch the model off.
    pub enabled: Option<bool>,
}

/// Cache interference parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CacheModel {
    pub enabled: bool,
    pub llc_kib: f64,
    pub miss: Nanos,
    pub footprint_irq_kib: f64,
    pub footprint_vhost_kib: f64,
    pub footprint_guest_stack_kib: f64,
    pub footprint_host_stack_kib: f64,
    pub footprint_app_kib: f64,
}

impl Default for CacheModel {
    fn default() -> Self {
        CacheModel {
            enabled: true,
            llc_kib: 20_480.0,
            miss: Nanos(80),
            footprint_irq_kib: 4.0,
            footprint_vhost_kib: 8.0,
            footprint_guest_stack_kib: 24.0,
            footprint_host_stack_kib: 6.0,
            footprint_app_kib: 6.0,
        }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNic {
    pub name: String,
    /// Cores the NIC's interrupts go to (RX queues spread over them by flow hash).
    pub irq_cores: Vec<i64>,
    /// Threaded mode: FIFO priority of the per-CPU IRQ threads (omitted: normal/CFS).
    pub irq_prio: Option<i64>,
    /// RX ring size in packets (default 512).
    pub ring: Option<i64>,
    /// Line rate in Gb/s (default 10).
    pub gbps: Option<f64>,
    /// Interrupt moderation delay (default 0).
    pub coalesce: Option<Nanos>,
}

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNetThread {
    /// FIFO priority 1..99; omitted = normal (CFS).
    pub prio: Option<i64>,
    /// Allowed cores (default: all).
    pub cores: Option<Vec<i64>>,
    /// vhost: packets per batch before re-checking (default 64).
    pub batch: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVm {
    pub name: String,
    /// The NIC whose bridge this VM's vNIC is attached to.
    pub nic: Option<String>,
    /// "vhost" (default), "outsourced", "outsourced_rt", "host" (non-virtualized process) or
    /// "container" (a host process behind a veth pair and the bridge: it shares the host stack).
    pub socket: Option<String>,
    #[serde(default)]
    pub vhost: RawNetThread,
    #[serde(default)]
    pub vcpu: RawNetThread,
    /// Guest RX ring (virtio) in packets (default 256).
    pub ring: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFlow {
    pub name: String,
    /// "udp_rr" (request/response client) or "tcp_stream" (window-limited bulk sender).
    pub kind: String,
    pub to: String,
    /// udp_rr: request and response payload bytes (default 64).
    pub request_bytes: Option<i64>,
    pub response_bytes: Option<i64>,
    /// udp_rr: inter-arrival uniform in [min, max] (default 1ms..10ms).
    pub interarrival_min: Option<Nanos>,
    pub interarrival_max: Option<Nanos>,
    /// tcp_stream: MTU (default 1500) and window in KiB (default 512).
    pub mtu: Option<i64>,
    pub window_kib: Option<i64>,
}

/// `[net.xen]`: Dom0 inter-domain communication (Xi et al. 2012).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawXen {
    /// "original" or "rtca".
    pub dom0: Option<String>,
    /// netback TX packets per round (default 238).
    pub tx_round: Option<i64>,
    /// netback RX packets per round (default 238).
    pub rx_round: Option<i64>,
    /// softnet: packets per device per turn (64) and per round (300), backlog limit (1000).
    pub softnet_weight: Option<i64>,
    pub softnet_round: Option<i64>,
    pub backlog_limit: Option<i64>,
    /// netfront TX and RX ring slots (default 256).
    pub ring: Option<i64>,
    /// Dom0 per-packet costs: netback TX fetch + grant copy (default 5us), softnet/bridge
    /// (2us), netback RX grant copy to the destination (5us). One set for every Dom0 mode.
    pub tx_cost: Option<Nanos>,
    pub softnet_cost: Option<Nanos>,
    pub rx_cost: Option<Nanos>,
    /// Dom0 per-round costs of netback (default 0): one GNTTABOP_copy hypercall and the
    /// event-channel notifications per TX / RX round, on top of the per-packet costs.
    pub tx_round_cost: Option<Nanos>,
    pub rx_round_cost: Option<Nanos>,
    /// Guest vCPU time per packet sent (default 6us) and received (8us); event-channel
    /// latency (4us). Shared by the measured and the interfering domains (docs/netsim.md).
    pub guest_send: Option<Nanos>,
    pub guest_recv: Option<Nanos>,
    pub event_channel: Option<Nanos>,
    /// Number of RT round trips to measure (default 5000) and their period (default 10ms).
    pub packets: Option<i64>,
    pub period: Option<Nanos>,
    /// RTCA: one softnet queue per priority class.
    #[serde(default, rename = "queue")]
    pub queues: Vec<RawXenQueue>,
    #[serde(default, rename = "domain")]
    pub domains: Vec<RawDomain>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawXenQueue {
    pub priority: i64,
    /// Queue limit (default 600).
    pub limit: Option<i64>,
    /// Batch size: TX packets per round (count reset by a higher-priority netif) and softnet
    /// packets per round of this class.
    pub batch: i64,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDomain {
    pub name: String,
    pub core: i64,
    /// Higher = more important (RTCA queues are chosen by it).
    pub priority: i64,
    /// "ping" (sends the RT packet and measures the round trip), "echo", "flood" or "idle".
    pub role: String,
    /// ping: destination domain.
    pub peer: Option<String>,
    /// Xen Credit cap as a share of one core (default 0.3; 1 = no cap). Every domain has it;
    /// only the interfering ("flood") domains use enough CPU to reach it.
    pub cap: Option<f64>,
}

// ---------------------------------------------------------------------------------------------
// Validated form.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqMode {
    HardIrq,
    Threaded,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SoftirqMode {
    Shared,
    Partitioned,
}

/// How a VM's (or host process's) socket is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SocketMode {
    /// vhost backend copies into guest memory, guest stack delivers to the socket.
    Vhost,
    /// Host stack serves the socket; wake-up by virtual interrupt.
    Outsourced,
    /// Host stack serves the socket; wake-up by shared event queue + waking the halted vCPU.
    OutsourcedRt,
    /// Non-virtualized: the server is a host process.
    Host,
    /// A container: a host process in its own network namespace behind a veth pair and the
    /// bridge (Welch 2015's bridged case, Garcia Alvarado 2019's container remark): it shares the
    /// host stack, each packet crosses the bridge and the veth pair once more.
    Container,
}

impl SocketMode {
    /// The server is a host process (non-virtualized or in a container): no vCPU, no VM exits.
    pub fn is_host_process(self) -> bool {
        matches!(self, SocketMode::Host | SocketMode::Container)
    }
}

/// A thread's scheduling: FIFO priority or normal, and allowed cores (bit mask).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NetThreadSpec {
    pub prio: Option<u8>,
    pub cores: u64,
    pub batch: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nic {
    pub name: String,
    pub irq_cores: Vec<u32>,
    pub irq_prio: Option<u8>,
    pub ring: u32,
    pub gbps: f64,
    pub coalesce: Nanos,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Vm {
    pub name: String,
    pub nic: Option<usize>,
    pub socket: SocketMode,
    pub vhost: NetThreadSpec,
    pub vcpu: NetThreadSpec,
    pub ring: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum FlowKind {
    UdpRr { request_bytes: u32, response_bytes: u32, min: Nanos, max: Nanos },
    TcpStream { mtu: u32, window_bytes: u64 },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flow {
    pub name: String,
    pub vm: usize,
    pub kind: FlowKind,
}

/// The validated KVM network model input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KvmNet {
    pub cores: u32,
    pub irq: IrqMode,
    pub softirq: SoftirqMode,
    pub rtnet_prio: u8,
    pub softirq_restarts: u32,
    pub costs: NetCosts,
    pub cache: CacheModel,
    pub nics: Vec<Nic>,
    pub vms: Vec<Vm>,
    pub flows: Vec<Flow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dom0Mode {
    Original,
    Rtca,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainRole {
    Ping,
    Echo,
    Flood,
    Idle,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Domain {
    pub name: String,
    pub core: u32,
    pub priority: u32,
    pub role: DomainRole,
    pub peer: Option<usize>,
    pub cap: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct XenQueue {
    pub priority: u32,
    pub limit: u32,
    pub batch: u32,
}

/// The validated Xen Dom0 model input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XenNet {
    pub cores: u32,
    pub mode: Dom0Mode,
    pub tx_round: u32,
    pub rx_round: u32,
    pub softnet_weight: u32,
    pub softnet_round: u32,
    pub backlog_limit: u32,
    pub ring: u32,
    pub tx_cost: Nanos,
    pub softnet_cost: Nanos,
    pub rx_cost: Nanos,
    pub tx_round_cost: Nanos,
    pub rx_round_cost: Nanos,
    pub guest_send: Nanos,
    pub guest_recv: Nanos,
    pub event_channel: Nanos,
    pub packets: u32,
    pub period: Nanos,
    pub queues: Vec<XenQueue>,
    pub domains: Vec<Domain>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum NetModel {
    Kvm(KvmNet),
    Xen(XenNet),
}

/// A validated `[net]` section with its run settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetScenario {
    /// The whole run, warm-up included (KVM and Xen alike).
    pub duration: Nanos,
    /// Simulated before statistics start (at most [`super::limits::MAX_TIMING`]).
    pub warmup: Nanos,
    pub seed: u64,
    pub model: NetModel,
}

impl NetScenario {
    /// Set the run's duration (`field` names where it came from: `duration` in the file or
    /// `--duration`). One rule for both models: the duration includes the warm-up, and a run
    /// must measure something: at least one ping period (Xen) or any time (KVM) after the warm-up.
    pub fn set_duration(&mut self, duration: Nanos, field: &str) -> R<()> {
        let duration = super::limits::check_horizon(duration, field)?;
        let after = duration.0.checked_sub(self.warmup.0).filter(|&t| t > 0);
        let needed = match &self.model {
            NetModel::Kvm(_) => 1,
            NetModel::Xen(x) => x.period.0,
        };
        match after {
            Some(t) if t >= needed => {
                self.duration = duration;
                Ok(())
            }
            _ => Err(InputError::field(
                field,
                format!(
                    "{duration} with a warm-up of {}: nothing would be measured (the duration includes the warm-up{}); \
                     expected a longer duration or a shorter `warmup`",
                    self.warmup,
                    match &self.model {
                        NetModel::Xen(x) => format!(", then at least one ping period of {}", x.period),
                        NetModel::Kvm(_) => String::new(),
                    }
                ),
            )),
        }
    }
}

impl RawNet {
    /// Validate against a host of `cores` cores. Errors name the field under `net.`.
    pub(crate) fn validate(&self, cores: u32) -> R<NetScenario> {
        self.validate_inner(cores).map_err(|e| e.under("net"))
    }

    fn validate_inner(&self, cores: u32) -> R<NetScenario> {
        let warmup = super::limits::check_timing(self.warmup.unwrap_or(Nanos::from_ms(20)), "warmup")?;
        let (model, duration) = match self.kind.as_deref().unwrap_or("kvm") {
            "kvm" => (NetModel::Kvm(self.kvm(cores)?), self.duration.unwrap_or(Nanos::from_secs(2))),
            "xen" => {
                let x = self
                    .xen
                    .as_ref()
                    .ok_or_else(|| InputError::field("xen", "kind = \"xen\" needs a [net.xen] section"))?;
                let x = x.validate(cores).map_err(|e| e.under("xen"))?;
                // Xen: the warm-up then `packets` + 1 ping periods, unless a duration is given
                let pings = Nanos(x.period.0.saturating_mul(x.packets as u64 + 1));
                (NetModel::Xen(x), self.duration.unwrap_or(Nanos(warmup.0.saturating_add(pings.0))))
            }
            other => return Err(InputError::field("kind", format!("\"{other}\": expected \"kvm\" or \"xen\""))),
        };
        let mut net = NetScenario { duration, warmup, seed: self.seed.unwrap_or(1), model };
        net.set_duration(duration, "duration")?;
        Ok(net)
    }

    fn kvm(&self, cores: u32) -> R<KvmNet> {
        let irq = match self.irq.as_deref().unwrap_or("threaded") {
            "hardirq" => IrqMode::HardIrq,
            "threaded" => IrqMode::Threaded,
            o => {
                return Err(InputError::field(
                    "irq",
                    format!("\"{o}\": expected \"hardirq\" (vanilla) or \"threaded\" (PREEMPT_RT)"),
                ))
            }
        };
        let softirq = match self.softirq.as_deref().unwrap_or("shared") {
            "shared" => SoftirqMode::Shared,
            "partitioned" => SoftirqMode::Partitioned,
            o => return Err(InputError::field("softirq", format!("\"{o}\": expected \"shared\" or \"partitioned\""))),
        };
        if softirq == SoftirqMode::Partitioned && irq == IrqMode::HardIrq {
            return Err(InputError::field(
                "softirq",
                "partitioned softirq needs threaded IRQs (irq = \"threaded\"): the list is chosen by the IRQ thread's \
                 priority",
            ));
        }
        let rtnet_prio = prio(self.rtnet_prio.or(Some(47)), "rtnet_prio")?.unwrap_or(47);
        let softirq_restarts = positive(self.softirq_restarts, 10, "softirq_restarts")?;
        if self.nics.is_empty() {
            return Err(InputError::field("nic", "no [[net.nic]]: expected at least one NIC"));
        }
        let mut nics = Vec::new();
        let mut nic_names = HashSet::new();
        for (i, n) in self.nics.iter().enumerate() {
            if !nic_names.insert(n.name.as_str()) {
                return Err(InputError::field(format!("nic[{i}].name"), format!("duplicate NIC name \"{}\"", n.name)));
            }
            nics.push(nic(n, cores).map_err(|e| e.under(&format!("nic[{i}]")))?);
        }
        let mut vms = Vec::new();
        let mut vm_names = HashSet::new();
        for (i, v) in self.vms.iter().enumerate() {
            if !vm_names.insert(v.name.as_str()) {
                return Err(InputError::field(format!("vm[{i}].name"), format!("duplicate VM name \"{}\"", v.name)));
            }
            vms.push(vm(v, &nics, cores).map_err(|e| e.under(&format!("vm[{i}]")))?);
        }
        let mut flows = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            flows.push(flow(f, &vms).map_err(|e| e.under(&format!("flow[{i}]")))?);
        }
        Ok(KvmNet {
            cores,
            irq,
            softirq,
            rtnet_prio,
            softirq_restarts,
            costs: self.costs.resolve(),
            cache: self.cache.resolve().map_err(|e| e.under("cache"))?,
            nics,
            vms,
            flows,
        })
    }
}

impl RawCosts {
    fn resolve(&self) -> NetCosts {
        let d = NetCosts::default();
        NetCosts {
            hardirq: self.hardirq.unwrap_or(d.hardirq),
            ctx_switch: self.ctx_switch.unwrap_or(d.ctx_switch),
            napi_poll: self.napi_poll.unwrap_or(d.napi_poll),
            rx_per_packet: self.rx_per_packet.unwrap_or(d.rx_per_packet),
            bridge_per_packet: self.bridge_per_packet.unwrap_or(d.bridge_per_packet),
            host_udp_rx: self.host_udp_rx.unwrap_or(d.host_udp_rx),
            host_udp_tx: self.host_udp_tx.unwrap_or(d.host_udp_tx),
            vhost_per_packet: self.vhost_per_packet.unwrap_or(d.vhost_per_packet),
            copy_per_kib: self.copy_per_kib.unwrap_or(d.copy_per_kib),
            virq_inject: self.virq_inject.unwrap_or(d.virq_inject),
            vm_entry: self.vm_entry.unwrap_or(d.vm_entry),
            vm_exit: self.vm_exit.unwrap_or(d.vm_exit),
            guest_hardirq: self.guest_hardirq.unwrap_or(d.guest_hardirq),
            guest_udp_rx: self.guest_udp_rx.unwrap_or(d.guest_udp_rx),
            guest_tcp_rx_per_packet: self.guest_tcp_rx_per_packet.unwrap_or(d.guest_tcp_rx_per_packet),
            guest_udp_tx: self.guest_udp_tx.unwrap_or(d.guest_udp_tx),
            app_service: self.app_service.unwrap_or(d.app_service),
            app_service_jitter: self.app_service_jitter.unwrap_or(d.app_service_jitter),
            nic_xmit: self.nic_xmit.unwrap_or(d.nic_xmit),
            rpc: self.rpc.unwrap_or(d.rpc),
            event_notify: self.event_notify.unwrap_or(d.event_notify),
            wakeup: self.wakeup.unwrap_or(d.wakeup),
            thread_exit: self.thread_exit.unwrap_or(d.thread_exit),
        }
    }
}

impl RawCache {
    fn resolve(&self) -> R<CacheModel> {
        let d = CacheModel::default();
        let kib = |v: Option<f64>, def: f64, f: &str| -> R<f64> {
            match v {
                Some(x) if !(x >= 0.0 && x.is_finite()) => {
                    Err(InputError::field(f, format!("{}: expected a non-negative size in KiB", shown(x))))
                }
                Some(x) => Ok(x),
                None => Ok(def),
            }
        };
        let llc_kib = kib(self.llc_kib, d.llc_kib, "llc_kib")?;
        if llc_kib <= 0.0 {
            return Err(InputError::field("llc_kib", "zero LLC: expected a positive size in KiB"));
        }
        Ok(CacheModel {
            enabled: self.enabled.unwrap_or(true),
            llc_kib,
            miss: self.miss.unwrap_or(d.miss),
            footprint_irq_kib: kib(self.footprint_irq_kib, d.footprint_irq_kib, "footprint_irq_kib")?,
            footprint_vhost_kib: kib(self.footprint_vhost_kib, d.footprint_vhost_kib, "footprint_vhost_kib")?,
            footprint_guest_stack_kib: kib(
                self.footprint_guest_stack_kib,
                d.footprint_guest_stack_kib,
                "footprint_guest_stack_kib",
            )?,
            footprint_host_stack_kib: kib(
                self.footprint_host_stack_kib,
                d.footprint_host_stack_kib,
                "footprint_host_stack_kib",
            )?,
            footprint_app_kib: kib(self.footprint_app_kib, d.footprint_app_kib, "footprint_app_kib")?,
        })
    }
}

fn prio(priority: Option<i64>, field: &str) -> R<Option<u8>> {
    match priority {
        Some(priority) if !(1..=99).contains(&priority) => {
            Err(InputError::field(field, format!("{priority}: expected a SCHED_FIFO priority from 1 to 99")))
        }
        priority => Ok(priority.map(|priority| priority as u8)),
    }
}

fn positive(value: Option<i64>, default: u32, field: &str) -> R<u32> {
    match value {
        None => Ok(default),
        Some(x) if !(1..=1_000_000).contains(&x) => {
            Err(InputError::field(field, format!("{x}: expected a whole number from 1 to 1000000")))
        }
        Some(x) => Ok(x as u32),
    }
}

fn core_mask(cores: &Option<Vec<i64>>, host: u32, field: &str) -> R<u64> {
    let all = if host >= 64 { u64::MAX } else { (1u64 << host) - 1 };
    let Some(list) = cores else { return Ok(all) };
    if list.is_empty() {
        return Err(InputError::field(field, "empty core list: expected at least one core"));
    }
    let mut m = 0u64;
    for (i, &c) in list.iter().enumerate() {
        if c < 0 || c >= host as i64 || c >= 64 {
            return Err(InputError::field(
                format!("{field}[{i}]"),
                format!("core {c} does not exist: the host has cores 0..{}", host - 1),
            ));
        }
        m |= 1 << c;
    }
    Ok(m)
}

fn nic(nic: &RawNic, cores: u32) -> R<Nic> {
    let mask = core_mask(&Some(nic.irq_cores.clone()), cores, "irq_cores")?;
    let gbps = nic.gbps.unwrap_or(10.0);
    if !(gbps > 0.0 && gbps <= 1000.0) {
        return Err(InputError::field("gbps", format!("{}: expected a line rate in (0, 1000] Gb/s", shown(gbps))));
    }
    Ok(Nic {
        name: nic.name.clone(),
        irq_cores: (0..64).filter(|c| mask >> c & 1 == 1).collect(),
        irq_prio: prio(nic.irq_prio, "irq_prio")?,
        ring: positive(nic.ring, 512, "ring")?,
        gbps,
        coalesce: nic.coalesce.unwrap_or_default(),
    })
}

fn thread(thread: &RawNetThread, cores: u32) -> R<NetThreadSpec> {
    Ok(NetThreadSpec {
        prio: prio(thread.prio, "prio")?,
        cores: core_mask(&thread.cores, cores, "cores")?,
        batch: positive(thread.batch, 64, "batch")?,
    })
}

fn vm(vm: &RawVm, nics: &[Nic], cores: u32) -> R<Vm> {
    let socket = match vm.socket.as_deref().unwrap_or("vhost") {
        "vhost" => SocketMode::Vhost,
        "outsourced" => SocketMode::Outsourced,
        "outsourced_rt" => SocketMode::OutsourcedRt,
        "host" => SocketMode::Host,
        "container" => SocketMode::Container,
        o => {
            return Err(InputError::field(
                "socket",
                format!("\"{o}\": expected \"vhost\", \"outsourced\", \"outsourced_rt\", \"host\" or \"container\""),
            ))
        }
    };
    let nic = match &vm.nic {
        None => None,
        Some(name) => Some(nics.iter().position(|n| &n.name == name).ok_or_else(|| {
            InputError::field(
                "nic",
                format!(
                    "no NIC named \"{name}\" (NICs: {})",
                    nics.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            )
        })?),
    };
    Ok(Vm {
        name: vm.name.clone(),
        nic,
        socket,
        vhost: thread(&vm.vhost, cores).map_err(|e| e.under("vhost"))?,
        vcpu: thread(&vm.vcpu, cores).map_err(|e| e.under("vcpu"))?,
        ring: positive(vm.ring, 256, "ring")?,
    })
}

fn flow(flow: &RawFlow, vms: &[Vm]) -> R<Flow> {
    let vm = vms
        .iter()
        .position(|v| v.name == flow.to)
        .ok_or_else(|| InputError::field("to", format!("no VM named \"{}\"", flow.to)))?;
    if flow.kind == "tcp_stream" && vms[vm].socket != SocketMode::Vhost {
        return Err(InputError::field(
            "to",
            format!("VM \"{}\": bulk tcp_stream receivers are modelled with socket = \"vhost\" only", flow.to),
        ));
    }
    if vms[vm].nic.is_none() {
        return Err(InputError::field(
            "to",
            format!("VM \"{}\" has no NIC path (set `nic` in its [[net.vm]])", flow.to),
        ));
    }
    let bytes = |v: Option<i64>, field: &str| -> R<u32> {
        match v {
            None => Ok(64),
            Some(b) if !(1..=65_000).contains(&b) => {
                Err(InputError::field(field, format!("{b}: expected a payload size from 1 to 65000 bytes")))
            }
            Some(b) => Ok(b as u32),
        }
    };
    let kind = match flow.kind.as_str() {
        "udp_rr" => {
            let min = flow.interarrival_min.unwrap_or(Nanos::from_ms(1));
            let max = flow.interarrival_max.unwrap_or(Nanos::from_ms(10));
            if min.0 == 0 || min > max {
                return Err(InputError::field(
                    "interarrival_max",
                    format!("inter-arrival range {min}..{max}: expected 0 < min <= max"),
                ));
            }
            FlowKind::UdpRr {
                request_bytes: bytes(flow.request_bytes, "request_bytes")?,
                response_bytes: bytes(flow.response_bytes, "response_bytes")?,
                min,
                max,
            }
        }
        "tcp_stream" => {
            let mtu = positive(flow.mtu, 1500, "mtu")?;
            if !(576..=9000).contains(&mtu) {
                return Err(InputError::field("mtu", format!("{mtu}: expected 576..9000")));
            }
            FlowKind::TcpStream { mtu, window_bytes: positive(flow.window_kib, 512, "window_kib")? as u64 * 1024 }
        }
        o => return Err(InputError::field("kind", format!("\"{o}\": expected \"udp_rr\" or \"tcp_stream\""))),
    };
    Ok(Flow { name: flow.name.clone(), vm, kind })
}

impl RawXen {
    fn validate(&self, cores: u32) -> R<XenNet> {
        let mode = match self.dom0.as_deref().unwrap_or("original") {
            "original" => Dom0Mode::Original,
            "rtca" => Dom0Mode::Rtca,
            o => return Err(InputError::field("dom0", format!("\"{o}\": expected \"original\" or \"rtca\""))),
        };
        let mut queues = Vec::new();
        for (i, q) in self.queues.iter().enumerate() {
            let at = format!("queue[{i}]");
            let priority = positive(Some(q.priority), 0, &format!("{at}.priority"))?;
            if queues.iter().any(|x: &XenQueue| x.priority == priority) {
                return Err(InputError::field(format!("{at}.priority"), format!("priority {priority} has two queues")));
            }
            let batch = positive(Some(q.batch), 0, &format!("{at}.batch"))?;
            queues.push(XenQueue { priority, limit: positive(q.limit, 600, &format!("{at}.limit"))?, batch });
        }
        let mut domains = Vec::new();
        for (i, d) in self.domains.iter().enumerate() {
            domains.push(domain(d, cores).map_err(|e| e.under(&format!("domain[{i}]")))?);
        }
        for (i, d) in self.domains.iter().enumerate() {
            if let Some(p) = &d.peer {
                let idx = self.domains.iter().position(|x| &x.name == p).ok_or_else(|| {
                    InputError::field(format!("domain[{i}].peer"), format!("no domain named \"{p}\""))
                })?;
                domains[i].peer = Some(idx);
            } else if domains[i].role == DomainRole::Ping || domains[i].role == DomainRole::Flood {
                return Err(InputError::field(
                    format!("domain[{i}].peer"),
                    "missing: a ping or flood domain needs a peer domain to send to",
                ));
            }
            if mode == Dom0Mode::Rtca && !queues.iter().any(|q| q.priority == domains[i].priority) {
                return Err(InputError::field(
                    format!("domain[{i}].priority"),
                    format!(
                        "priority class {} has no [[net.xen.queue]] (RTCA needs one softnet queue per priority class)",
                        domains[i].priority
                    ),
                ));
            }
        }
        if !domains.iter().any(|d| d.role == DomainRole::Ping) {
            return Err(InputError::field("domain", "no domain with role = \"ping\": nothing to measure"));
        }
        Ok(XenNet {
            cores,
            mode,
            tx_round: positive(self.tx_round, 238, "tx_round")?,
            rx_round: positive(self.rx_round, 238, "rx_round")?,
            softnet_weight: positive(self.softnet_weight, 64, "softnet_weight")?,
            softnet_round: positive(self.softnet_round, 300, "softnet_round")?,
            backlog_limit: positive(self.backlog_limit, 1000, "backlog_limit")?,
            ring: positive(self.ring, 256, "ring")?,
            tx_cost: self.tx_cost.unwrap_or(Nanos(5_000)),
            softnet_cost: self.softnet_cost.unwrap_or(Nanos(2_000)),
            rx_cost: self.rx_cost.unwrap_or(Nanos(5_000)),
            tx_round_cost: self.tx_round_cost.unwrap_or(Nanos::ZERO),
            rx_round_cost: self.rx_round_cost.unwrap_or(Nanos::ZERO),
            guest_send: self.guest_send.unwrap_or(Nanos(6_000)),
            guest_recv: self.guest_recv.unwrap_or(Nanos(8_000)),
            event_channel: self.event_channel.unwrap_or(Nanos(4_000)),
            packets: positive(self.packets, 5000, "packets")?,
            period: match self.period {
                Some(p) if p.0 == 0 => {
                    return Err(InputError::field("period", "zero period: expected a positive duration"))
                }
                p => super::sim::check_sim_timing(
                    super::limits::check_timing(p.unwrap_or(Nanos::from_ms(10)), "period")?,
                    "period",
                )?,
            },
            queues,
            domains,
        })
    }
}

fn domain(domain: &RawDomain, cores: u32) -> R<Domain> {
    if domain.core < 0 || domain.core >= cores as i64 {
        return Err(InputError::field(
            "core",
            format!("core {} does not exist: the host has cores 0..{}", domain.core, cores - 1),
        ));
    }
    if domain.core == 0 {
        return Err(InputError::field("core", "core 0 is Dom0's own core: put guest domains on cores 1.."));
    }
    let role = match domain.role.as_str() {
        "ping" => DomainRole::Ping,
        "echo" => DomainRole::Echo,
        "flood" => DomainRole::Flood,
        "idle" => DomainRole::Idle,
        o => {
            return Err(InputError::field(
                "role",
                format!("\"{o}\": expected \"ping\", \"echo\", \"flood\" or \"idle\""),
            ))
        }
    };
    let cap = domain.cap.unwrap_or(0.3);
    if !(cap > 0.0 && cap <= 1.0) {
        return Err(InputError::field("cap", format!("{}: expected a CPU share in (0, 1]", shown(cap))));
    }
    Ok(Domain {
        name: domain.name.clone(),
        core: domain.core as u32,
        priority: positive(Some(domain.priority), 0, "priority")?,
        role,
        peer: None,
        cap,
    })
}
