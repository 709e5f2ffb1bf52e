//! Traffic sources: the critical UDP request/response client (random inter-arrival, uniform in
//! [min, max], requests land on the NIC's RX ring) and TCP-like window-limited bulk senders
//! (Heavy Receivers: line rate shared by the bulk flows of a NIC, at most `window` bytes
//! un-consumed by the receiving application; arrivals are materialised lazily when the ring is
//! looked at, so 1.6 Mpps cost no per-packet events). NIC interrupts follow NAPI: one IRQ when
//! packets are present and the queue's IRQ is enabled, none while it is being polled.

use super::state::FlowState;
use super::{Ev, Packet, PacketQueue, RxQ, Sim};
use crate::engine::rng::SimRng;
use crate::net::stats::FlowStats;
use rtvirt_model::scenario::net::{FlowKind, KvmNet, SocketMode};
use rtvirt_model::Nanos;

/// Ethernet framing on the wire beyond the MTU (header, FCS, preamble, inter-frame gap).
const WIRE_OVERHEAD: u32 = 38;
/// IP + TCP (with timestamps) headers inside the MTU.
const TCP_HEADERS: u32 = 52;

/// Flow states: each flow hashed to one RX queue of its VM's NIC.
pub(crate) fn build(net: &KvmNet, rxqs: &[RxQ], seed: u64) -> Vec<FlowState> {
    let mut per_nic = vec![0usize; net.nics.len()];
    let bulk_on_nic = |n: usize| {
        net.flows
            .iter()
            .filter(|f| net.vms[f.vm].nic == Some(n) && matches!(f.kind, FlowKind::TcpStream { .. }))
            .count()
    };
    net.flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let nic = net.vms[f.vm].nic.expect("validated: flow VMs have a NIC");
            let queues: Vec<usize> = (0..rxqs.len()).filter(|&q| rxqs[q].nic == nic).collect();
            let rxq = queues[per_nic[nic] % queues.len()];
            per_nic[nic] += 1;
            match f.kind {
                FlowKind::UdpRr { request_bytes, response_bytes, min, max } => FlowState::Rr {
                    rxq,
                    req: request_bytes,
                    resp: response_bytes,
                    min,
                    max,
                    rng: SimRng::new(seed, 1000 + i as u64),
                    stats: FlowStats::default(),
                },
                FlowKind::TcpStream { mtu, window_bytes } => {
                    let bits = (mtu + WIRE_OVERHEAD) as f64 * 8.0;
                    let gap = bits / net.nics[nic].gbps * bulk_on_nic(nic) as f64;
                    let payload = mtu - TCP_HEADERS;
                    FlowState::Tcp {
                        rxq,
                        frame: mtu,
                        payload,
                        gap,
                        next_at: 0.0,
                        inflight: 0,
                        window: (window_bytes / payload as u64).max(1) as u32,
                        stamped: net.vms[f.vm].socket != SocketMode::Vhost,
                        stats: FlowStats::default(),
                    }
                }
            }
        })
        .collect()
}

/// `x.ceil() as u64` for a time `0 <= x < 2^53` ns, without a libm call per packet (a truncation
/// is exact there, and one below `x` means `x` has a fraction).
fn ceil_ns(x: f64) -> Nanos {
    let t = x as u64;
    Nanos(if (t as f64) < x { t + 1 } else { t })
}

impl Sim {
    pub(crate) fn start_flow(&mut self, f: usize) {
        match &mut self.flows[f] {
            FlowState::Rr { min, max, rng, .. } => {
                let gap = rng.uniform_nanos(*min, *max);
                self.event_queue.schedule(gap, Ev::Arrival { flow: f });
            }
            FlowState::Tcp { rxq, .. } => {
                let r = *rxq;
                self.arm_nic_irq(r);
            }
        }
    }

    /// A request of a request/response flow reaches the NIC.
    pub(crate) fn arrival(&mut self, f: usize) {
        let now = self.event_queue.now();
        let FlowState::Rr { rxq, req, min, max, rng, stats, .. } = &mut self.flows[f] else { return };
        let (rxq, bytes) = (*rxq, *req);
        stats.sent += 1;
        let gap = rng.uniform_nanos(*min, *max);
        self.event_queue.schedule_in(gap, Ev::Arrival { flow: f });
        let pkt = Packet { flow: f as u32, bytes, t0: now, t_entry: Nanos::ZERO, t_exit: Nanos::ZERO };
        self.put_on_ring(rxq, pkt);
        self.arm_nic_irq(rxq);
    }

    /// NIC DMA of one packet into the RX ring, or a drop when the ring is full.
    fn put_on_ring(&mut self, rxq: usize, pkt: Packet) {
        if self.rxqs[rxq].ring.len() >= self.rxqs[rxq].ring_cap {
            self.rxqs[rxq].drops += 1;
            self.drop_pkt(pkt);
            return;
        }
        self.copy_bytes(pkt.bytes as u64);
        self.rxqs[rxq].ring.push_back(pkt);
    }

    /// Materialise the bulk senders' packets that reached the RX queue by now (each one as
    /// [`Sim::put_on_ring`] would: the ring, its drops and the copied bytes, in arrival order;
    /// a flow's unstamped segments as one run). The per-packet loop works on local copies (in
    /// registers, not memory): its cost is the sequence of f64 additions of the arrival times.
    pub(crate) fn pull_arrivals(&mut self, rxq: usize) {
        let now = self.event_queue.now().0 as f64;
        let (q, flows, copied) = (&mut self.rxqs[rxq], &mut self.flows, &mut self.copied);
        for &f in &q.senders {
            let FlowState::Tcp { frame, gap, next_at, inflight, window, stamped, stats, .. } = &mut flows[f] else {
                continue;
            };
            let pkt =
                Packet { flow: f as u32, bytes: *frame, t0: Nanos::ZERO, t_entry: Nanos::ZERO, t_exit: Nanos::ZERO };
            let (gap, frame, open) = (*gap, *frame as f64, window.saturating_sub(*inflight));
            let room = q.ring_cap.saturating_sub(q.ring.len()).min(u32::MAX as usize) as u32;
            let (mut at, mut bytes, mut queued, mut dropped) = (*next_at, *copied, 0u32, 0u64);
            while queued < open && at <= now {
                if queued < room {
                    if *stamped {
                        q.ring.push_back(Packet { t0: ceil_ns(at), ..pkt });
                    }
                    queued += 1;
                    bytes += frame;
                } else {
                    // dropped: counted, and the window slot comes back at once (retransmission)
                    dropped += 1;
                }
                at += gap;
            }
            if !*stamped {
                q.ring.push_n(pkt, queued);
            }
            (*next_at, *copied, *inflight) = (at, bytes, *inflight + queued);
            stats.sent += queued as u64 + dropped;
            stats.drops += dropped;
            q.drops += dropped;
        }
    }

    /// When the next bulk packet will reach the RX queue (None: all windows are full).
    fn next_arrival(&self, rxq: usize) -> Option<Nanos> {
        self.rxqs[rxq]
            .senders
            .iter()
            .filter_map(|&f| match &self.flows[f] {
                FlowState::Tcp { next_at, inflight, window, .. } if inflight < window => Some(ceil_ns(*next_at)),
                _ => None,
            })
            .min()
    }

    /// With the queue's IRQ enabled, schedule the interrupt for the next packet.
    pub(crate) fn arm_nic_irq(&mut self, rxq: usize) {
        if !self.rxqs[rxq].irq_enabled || self.rxqs[rxq].irq_event {
            return;
        }
        self.pull_arrivals(rxq);
        let coalesce = self.net.nics[self.rxqs[rxq].nic].coalesce;
        let at = if !self.rxqs[rxq].ring.is_empty() { Some(self.event_queue.now()) } else { self.next_arrival(rxq) };
        if let Some(at) = at {
            self.rxqs[rxq].irq_event = true;
            self.event_queue.schedule(at + coalesce, Ev::NicIrq { rxq });
        }
    }

    /// The NIC raises its interrupt (if still enabled and packets are there).
    pub(crate) fn nic_irq(&mut self, rxq: usize) {
        self.rxqs[rxq].irq_event = false;
        if !self.rxqs[rxq].irq_enabled {
            return;
        }
        self.pull_arrivals(rxq);
        if self.rxqs[rxq].ring.is_empty() {
            self.arm_nic_irq(rxq);
            return;
        }
        self.rxqs[rxq].irq_enabled = false;
        let c = self.rxqs[rxq].core;
        self.raise_irq_job(c, Some(rxq));
    }

    /// A packet was dropped: counted; a bulk sender gets its window slot back (retransmission).
    pub(crate) fn drop_pkt(&mut self, pkt: Packet) {
        self.drop_pkts(pkt, 1);
    }

    /// `n` copies of `pkt` were dropped (as `n` calls of [`Sim::drop_pkt`]).
    pub(crate) fn drop_pkts(&mut self, pkt: Packet, n: u32) {
        let f = pkt.flow as usize;
        self.flows[f].stats_mut().drops += n as u64;
        if let FlowState::Tcp { inflight, .. } = &mut self.flows[f] {
            *inflight = inflight.saturating_sub(n);
        }
    }

    /// The receiving application consumed bulk packets: payload counted, window opened (per run
    /// of consecutive packets of one flow: a run of `k` counts as `k` packets one by one).
    pub(crate) fn consumed(&mut self, pkts: &PacketQueue) {
        let now = self.event_queue.now();
        let mut rxqs = std::mem::take(&mut self.scratch);
        rxqs.clear();
        for run in pkts.runs() {
            if let Some(r) = self.flows[run.pkt.flow as usize].sender_rxq() {
                if !rxqs.contains(&r) {
                    rxqs.push(r);
                }
            }
        }
        // arrivals up to now happen with the window as it was
        for &r in &rxqs {
            self.pull_arrivals(r);
        }
        let count = now >= self.warmup;
        for run in pkts.runs() {
            let k = run.count;
            if let FlowState::Tcp { payload, inflight, next_at, stats, .. } = &mut self.flows[run.pkt.flow as usize] {
                if count {
                    stats.delivered_bytes += *payload as u64 * k as u64;
                }
                *inflight = inflight.saturating_sub(k);
                *next_at = next_at.max(now.0 as f64);
            }
        }
        for &r in &rxqs {
            self.arm_nic_irq(r);
        }
        self.scratch = rxqs;
    }

    /// The server consumed a request: its payload counts as delivered (after the warm-up).
    pub(crate) fn request_consumed(&mut self, pkt: &Packet) {
        if pkt.t0 >= self.warmup {
            self.flows[pkt.flow as usize].stats_mut().delivered_bytes += pkt.bytes as u64;
        }
    }

    /// A response left the NIC: the request/response round trip is complete.
    pub(crate) fn response_out(&mut self, pkt: Packet) {
        let now = self.event_queue.now();
        if pkt.t0 < self.warmup {
            return;
        }
        if let FlowState::Rr { stats, .. } = &mut self.flows[pkt.flow as usize] {
            stats.record(pkt.t0, pkt.t_entry, pkt.t_exit, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ceil_ns;

    #[test]
    fn ceil_ns_is_f64_ceil_on_simulated_times() {
        let mut next_at = 0.0f64;
        let mut xs = vec![0.0, 0.5, 1.0, 1.0 - f64::EPSILON, 2f64.powi(52) - 0.5, 2f64.powi(52), 2f64.powi(53)];
        // a bulk sender's arrival times: a non-integral gap accumulated over 30 s
        while next_at < 30e9 {
            xs.push(next_at);
            next_at += 1_232.340_425_531_9 * 7.0;
        }
        xs.extend(xs.iter().map(|x| x.next_up()).collect::<Vec<_>>());
        for x in xs {
            assert_eq!(ceil_ns(x).0, x.ceil() as u64, "{x}");
        }
    }
}
