//! Xen inter-domain communication through Dom0 (SEEDS 2): guest netfront TX rings -> Dom0
//! netback TX -> softnet_data queue(s) (bridge) -> netback RX FIFO -> destination netfront.
//!
//! Dom0 runs on its own core; ONE kernel thread does, per iteration, the RX phase (FIFO, at most
//! `rx_round` packets), the TX phase (at most `tx_round` packets) and the NET_RX softirq round it
//! raised. Every phase is non-preemptive and costs per packet; decisions are made at packet
//! boundaries:
//! - original: TX takes ONE packet from the first netif of the schedule_list and re-appends it
//!   at the tail while it has packets (round robin, batch 1); all packets go to ONE backlog queue
//!   (`backlog_limit`, drops beyond); the softirq round serves it `softnet_weight` per turn, at
//!   most `softnet_round` packets.
//! - RTCA: TX picks, at every packet, the highest-priority netif with packets; it keeps taking
//!   from it up to its class's batch size, and the batch counter resets when a higher-priority
//!   netif appears (TX is preemptive between packets: such a packet also ends the TX round, so
//!   the later stages take it next); one softnet queue per priority class with its own limit; a softirq round
//!   serves only the highest non-empty class, up to its batch size (a packet of higher priority
//!   that arrives mid-round waits for the next round); RX unchanged.
//!
//! Dom0's per-packet costs vary uniformly by +-20% around their means, and the ping is sent at a
//! uniformly random instant of each period: a strictly periodic ping in a noise-free model
//! phase-locks with Dom0's equally periodic rounds and would sample a single phase of them.
//!
//! Guest domains: the measured pair (ping, echo) run alone on their cores, so the VMM scheduler
//! never delays them (Credit BOOSTs an I/O-woken vCPU on an otherwise idle core and RT-Xen runs
//! it at once alike); each interfering ("flood") domain is held to its CPU share cap by the VMM
//! scheduler (Credit cap) and so produces one packet every `guest_send / cap` while its netfront
//! ring has room (each interval drawn uniformly within +-50% of the mean). This is the part of the VMM schedulers this experiment exercises; the general
//! Credit/RTDS models live in the host scheduler.

use crate::engine::rng::SimRng;
use crate::engine::EventQueue;
use crate::net::stats::FlowStats;
use rtvirt_model::results::{CoreResult, FlowResult, Results};
use rtvirt_model::scenario::net::{Dom0Mode, DomainRole, XenNet};
use rtvirt_model::Nanos;
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy)]
struct XPkt {
    dst: usize,
    prio: u32,
    /// Ping send start (round-trip origin); None for flood packets.
    t0: Option<Nanos>,
}

struct Netif {
    prio: u32,
    ring: VecDeque<XPkt>,
    /// Flood producer: mean packet interval, next production time, destination.
    flood: Option<(f64, f64, usize)>,
    /// The flood producer's jitter stream.
    rng: SimRng,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Rx,
    Tx,
    Soft,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// Dom0 finished the packet it was working on.
    Dom0Done,
    /// Event channel: Dom0 is notified of TX work.
    Dom0Kick,
    /// The ping domain starts a round trip.
    Ping,
    /// A domain's netfront received a packet (after the event channel).
    Receive { dom: usize, pkt: XPkt },
    /// A domain finished sending: the packet is in its TX ring.
    Sent { dom: usize, pkt: XPkt },
}

struct Dom0 {
    phase: Phase,
    budget: u32,
    busy: Option<(Phase, XPkt)>,
    asleep: bool,
    rx: VecDeque<XPkt>,
    /// Original: the backlog; RTCA: one queue per class (index in `queues`).
    soft: Vec<VecDeque<XPkt>>,
    soft_class: Option<usize>,
    schedule_list: VecDeque<usize>,
    current: Option<(usize, u32)>,
    /// Priority of the last packet the current TX round moved (RTCA).
    last_tx_prio: Option<u32>,
    busy_ns: u64,
    /// Packets handled per phase (RX, TX, softirq).
    handled: [u64; 3],
}

struct Xen<'a> {
    x: &'a XenNet,
    q: EventQueue<Ev>,
    netifs: Vec<Netif>,
    d0: Dom0,
    rtt: FlowStats,
    soft_drops: u64,
    rt_drops: u64,
    flood_delivered: u64,
    pings_left: u32,
    rng: SimRng,
}

/// Simulate the ping/echo round trips of `x` (at most `max` of them).
pub fn run(x: &XenNet, max: Option<u32>, seed: u64) -> Results {
    let mut s = Xen::new(x, max, seed);
    s.start();
    while let Some((_, ev)) = s.q.pop() {
        s.handle(ev);
        if s.pings_left == 0 && s.rtt.latency.count() + s.rt_drops >= s.sent() {
            break;
        }
    }
    s.results(seed)
}

impl<'a> Xen<'a> {
    fn new(x: &'a XenNet, max: Option<u32>, seed: u64) -> Xen<'a> {
        let netifs = x
            .domains
            .iter()
            .enumerate()
            .map(|(i, d)| Netif {
                prio: d.priority,
                ring: VecDeque::new(),
                flood: (d.role == DomainRole::Flood).then(|| (x.guest_send.0 as f64 / d.cap, 0.0, d.peer.unwrap_or(0))),
                rng: SimRng::new(seed, 2000 + i as u64),
            })
            .collect();
        let classes = if x.mode == Dom0Mode::Rtca { x.queues.len() } else { 1 };
        Xen {
            x,
            q: EventQueue::new(),
            netifs,
            d0: Dom0 {
                phase: Phase::Rx,
                budget: x.rx_round,
                busy: None,
                asleep: true,
                rx: VecDeque::new(),
                soft: vec![VecDeque::new(); classes],
                soft_class: None,
                schedule_list: VecDeque::new(),
                current: None,
                last_tx_prio: None,
                busy_ns: 0,
                handled: [0; 3],
            },
            rtt: FlowStats::default(),
            soft_drops: 0,
            rt_drops: 0,
            flood_delivered: 0,
            pings_left: max.map_or(x.packets, |m| m.min(x.packets)),
            rng: SimRng::new(seed, 1),
        }
    }

    fn sent(&self) -> u64 {
        self.rtt.sent
    }

    fn start(&mut self) {
        // let interference reach steady state before the first ping
        self.q.schedule(self.x.period, Ev::Ping);
        if self.netifs.iter().any(|n| n.flood.is_some()) {
            self.q.schedule(Nanos::ZERO, Ev::Dom0Kick);
        }
    }

    fn handle(&mut self, ev: Ev) {
        let now = self.q.now();
        match ev {
            Ev::Ping => {
                if self.pings_left == 0 {
                    return;
                }
                self.pings_left -= 1;
                self.rtt.sent += 1;
                let d = self.x.domains.iter().position(|d| d.role == DomainRole::Ping).expect("validated");
                let dst = self.x.domains[d].peer.expect("validated");
                let pkt = XPkt { dst, prio: self.x.domains[d].priority, t0: Some(now) };
                self.q.schedule_in(self.x.guest_send, Ev::Sent { dom: d, pkt });
                // one ping per period, at a random instant of the next period
                let period_start = Nanos(now.0 - now.0 % self.x.period.0) + self.x.period;
                let at = period_start + self.rng.uniform_nanos(Nanos::ZERO, Nanos(self.x.period.0 - 1));
                self.q.schedule(at, Ev::Ping);
            }
            Ev::Sent { dom, pkt } => {
                if self.netifs[dom].ring.len() < self.x.ring as usize {
                    self.netifs[dom].ring.push_back(pkt);
                } else {
                    self.rt_drops += 1;
                }
                self.q.schedule_in(self.x.event_channel, Ev::Dom0Kick);
            }
            Ev::Dom0Kick => {
                if self.d0.asleep {
                    self.d0.asleep = false;
                    self.dom0_next();
                }
            }
            Ev::Dom0Done => self.dom0_done(),
            Ev::Receive { dom, pkt } => self.receive(dom, pkt),
        }
    }

    /// A measured domain got a packet: the echo domain sends it back, the ping domain records
    /// the round trip.
    fn receive(&mut self, dom: usize, pkt: XPkt) {
        let Some(t0) = pkt.t0 else { return };
        match self.x.domains[dom].role {
            DomainRole::Echo => {
                let back = XPkt { dst: self.x.domains.iter().position(|d| d.role == DomainRole::Ping).unwrap_or(0), prio: self.x.domains[dom].priority, t0: Some(t0) };
                self.q.schedule_in(self.x.guest_recv + self.x.guest_send, Ev::Sent { dom, pkt: back });
            }
            DomainRole::Ping => {
                let done = self.q.now() + self.x.guest_recv;
                self.rtt.latency.record((done - t0).0);
            }
            _ => {}
        }
    }

    /// Materialise the flood domains' packets produced by now (ring permitting).
    fn produce(&mut self) {
        let now = self.q.now().0 as f64;
        let cap = self.x.ring as usize;
        for n in self.netifs.iter_mut() {
            let Some((gap, next, dst)) = n.flood.as_mut() else { continue };
            while *next <= now && n.ring.len() < cap {
                n.ring.push_back(XPkt { dst: *dst, prio: n.prio, t0: None });
                // the capped domain's sends are spread by its own scheduling: +-50% per packet
                *next += *gap * (0.5 + n.rng.unit());
            }
            if n.ring.len() >= cap {
                *next = next.max(now);
            }
        }
    }

    /// Choose Dom0's next packet (moving through RX -> TX -> softirq) or let it sleep.
    fn dom0_next(&mut self) {
        for _ in 0..4 {
            if let Some((cost, pkt)) = self.take_in_phase() {
                // per-packet cost varies +-20% (grant copies, cache state)
                let cost = Nanos((cost.0 as f64 * (0.8 + 0.4 * self.rng.unit())).round() as u64);
                let phase = self.d0.phase;
                self.d0.busy = Some((phase, pkt));
                self.d0.busy_ns += cost.0;
                self.q.schedule_in(cost, Ev::Dom0Done);
                return;
            }
            self.next_phase();
        }
        self.produce();
        if self.has_work() {
            self.q.schedule_in(Nanos::ZERO, Ev::Dom0Kick);
            self.d0.asleep = true;
            return;
        }
        self.d0.asleep = true;
        if let Some(t) = self.next_flood() {
            self.q.schedule(t, Ev::Dom0Kick);
        }
    }

    fn has_work(&self) -> bool {
        !self.d0.rx.is_empty() || self.d0.soft.iter().any(|q| !q.is_empty()) || self.netifs.iter().any(|n| !n.ring.is_empty())
    }

    fn next_flood(&self) -> Option<Nanos> {
        self.netifs.iter().filter_map(|n| n.flood.map(|(_, next, _)| Nanos(next.ceil() as u64) + self.x.event_channel)).min()
    }

    fn next_phase(&mut self) {
        let (phase, budget) = match self.d0.phase {
            Phase::Rx => {
                self.d0.last_tx_prio = None;
                (Phase::Tx, self.x.tx_round)
            }
            Phase::Tx => {
                self.d0.soft_class = self.softirq_class();
                let b = match (self.x.mode, self.d0.soft_class) {
                    (Dom0Mode::Rtca, Some(c)) => self.x.queues[c].batch,
                    _ => self.x.softnet_round,
                };
                (Phase::Soft, b)
            }
            Phase::Soft => (Phase::Rx, self.x.rx_round),
        };
        self.d0.phase = phase;
        self.d0.budget = budget;
    }

    /// The softnet queue a softirq round serves: the backlog, or RTCA's highest non-empty class.
    fn softirq_class(&self) -> Option<usize> {
        match self.x.mode {
            Dom0Mode::Original => Some(0),
            Dom0Mode::Rtca => (0..self.x.queues.len()).filter(|&c| !self.d0.soft[c].is_empty()).max_by_key(|&c| self.x.queues[c].priority),
        }
    }

    fn take_in_phase(&mut self) -> Option<(Nanos, XPkt)> {
        if self.d0.budget == 0 {
            return None;
        }
        let taken = match self.d0.phase {
            Phase::Rx => self.d0.rx.pop_front().map(|p| (self.x.rx_cost, p)),
            Phase::Tx => {
                self.produce();
                let n = match self.x.mode {
                    Dom0Mode::Original => self.pick_round_robin(),
                    Dom0Mode::Rtca => self.pick_by_priority(),
                }?;
                let full = self.netifs[n].ring.len() >= self.x.ring as usize;
                let now = self.q.now().0 as f64;
                if let (true, Some((_, next, _))) = (full, self.netifs[n].flood.as_mut()) {
                    // a producer blocked on a full ring resumes now
                    *next = next.max(now);
                }
                self.netifs[n].ring.pop_front().map(|p| (self.x.tx_cost, p))
            }
            Phase::Soft => {
                let c = self.d0.soft_class?;
                self.d0.soft[c].pop_front().map(|p| (self.x.softnet_cost, p))
            }
        };
        if taken.is_some() {
            self.d0.budget -= 1;
        }
        taken
    }

    /// Original netback TX: first netif of the schedule_list, one packet, back to the tail.
    fn pick_round_robin(&mut self) -> Option<usize> {
        for (i, n) in self.netifs.iter().enumerate() {
            if !n.ring.is_empty() && !self.d0.schedule_list.contains(&i) {
                self.d0.schedule_list.push_back(i);
            }
        }
        let n = self.d0.schedule_list.pop_front()?;
        if self.netifs[n].ring.len() > 1 {
            self.d0.schedule_list.push_back(n);
        }
        Some(n)
    }

    /// RTCA netback TX: the highest-priority netif with packets, up to its class's batch; the
    /// counter resets when a higher-priority netif appears.
    fn pick_by_priority(&mut self) -> Option<usize> {
        let best = (0..self.netifs.len()).filter(|&i| !self.netifs[i].ring.is_empty()).max_by_key(|&i| (self.netifs[i].prio, std::cmp::Reverse(self.rr_rank(i))))?;
        let cur = match self.d0.current {
            Some((c, k)) if !self.netifs[c].ring.is_empty() && self.netifs[c].prio >= self.netifs[best].prio => (c, k),
            _ => (best, 0),
        };
        if self.d0.last_tx_prio.is_some_and(|p| self.netifs[cur.0].prio > p) {
            // preemptive between packets: the higher-priority packet ends this TX round so that
            // the softirq (highest class first) and RX stages take it next
            self.d0.budget = 1;
        }
        self.d0.last_tx_prio = Some(self.netifs[cur.0].prio);
        let batch = self.class_of(self.netifs[cur.0].prio).map_or(1, |c| self.x.queues[c].batch);
        let k = cur.1 + 1;
        if k >= batch {
            self.d0.current = None;
            self.d0.schedule_list.retain(|&x| x != cur.0);
            self.d0.schedule_list.push_back(cur.0);
        } else {
            self.d0.current = Some((cur.0, k));
        }
        Some(cur.0)
    }

    /// Round-robin rank among equal priorities (recently served netifs go last).
    fn rr_rank(&self, i: usize) -> usize {
        self.d0.schedule_list.iter().position(|&x| x == i).map_or(0, |p| p + 1)
    }

    fn class_of(&self, prio: u32) -> Option<usize> {
        self.x.queues.iter().position(|q| q.priority == prio)
    }

    fn dom0_done(&mut self) {
        let Some((phase, pkt)) = self.d0.busy.take() else { return };
        self.d0.handled[phase as usize] += 1;
        match phase {
            Phase::Rx => {
                if pkt.t0.is_some() {
                    self.q.schedule_in(self.x.event_channel, Ev::Receive { dom: pkt.dst, pkt });
                } else if self.q.now() >= self.x.period {
                    self.flood_delivered += 1;
                }
            }
            Phase::Tx => {
                let (c, limit) = match self.x.mode {
                    Dom0Mode::Original => (0, self.x.backlog_limit),
                    Dom0Mode::Rtca => {
                        let c = self.class_of(pkt.prio).expect("validated: every class has a queue");
                        (c, self.x.queues[c].limit)
                    }
                };
                if self.d0.soft[c].len() >= limit as usize {
                    self.soft_drops += 1;
                    if pkt.t0.is_some() {
                        self.rt_drops += 1;
                    }
                } else {
                    self.d0.soft[c].push_back(pkt);
                }
            }
            Phase::Soft => self.d0.rx.push_back(pkt),
        }
        self.dom0_next();
    }

    fn results(self, seed: u64) -> Results {
        let span = self.q.now();
        let mut r = Results::new("netsim", span.0);
        r.seed = Some(seed);
        let mut f: FlowResult = self.rtt.result("rtt".into(), span, self.rt_drops);
        f.throughput_bps = None;
        r.flows.push(f);
        let mut flood = FlowResult { name: "interference".into(), drops: self.soft_drops - self.rt_drops.min(self.soft_drops), ..Default::default() };
        flood.extra.insert("packets_delivered".into(), self.flood_delivered.into());
        r.flows.push(flood);
        r.cores.push(CoreResult { id: 0, utilisation: self.d0.busy_ns as f64 / span.0.max(1) as f64, cpu_time_ns: Some(self.d0.busy_ns), ..Default::default() });
        let [rx, tx, soft] = self.d0.handled;
        r.extra.insert("dom0".into(), serde_json::json!({"mode": self.x.mode, "rx_packets": rx, "tx_packets": tx, "softirq_packets": soft}));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::scenario::net::NetModel;
    use rtvirt_model::scenario::Scenario;
    use std::path::Path;

    /// (median, p95) in us of the SEEDS 2 scenario `dom0` x `level`, over `pings` round trips.
    fn rtt(dom0: &str, level: &str, pings: u32) -> (f64, f64) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/seeds2_{dom0}_{level}.toml"));
        let s = Scenario::from_file(&path).expect("scenario");
        let net = s.net.as_ref().unwrap().validate(s.host.cores).expect("valid");
        let NetModel::Xen(x) = &net.model else { panic!("xen scenario") };
        let r = run(x, Some(pings), 1);
        let l = r.flows[0].latency_ns.as_ref().expect("round trips");
        (l.p50 as f64 / 1e3, l.p95 as f64 / 1e3)
    }

    /// SEEDS 2 "must hold" shapes (issue 4).
    #[test]
    fn seeds2_table_shapes() {
        let levels = ["base", "light", "medium", "heavy"];
        let modes = ["original", "rtca1", "rtca64", "rtca238"];
        let t: Vec<Vec<f64>> = modes.iter().map(|m| levels.iter().map(|l| rtt(m, l, 300).0).collect()).collect();
        let table = format!("{t:?}");
        let bases: Vec<f64> = t.iter().map(|r| r[0]).collect();
        let mean_base = bases.iter().sum::<f64>() / bases.len() as f64;
        assert!(bases.iter().all(|b| (b / mean_base - 1.0).abs() <= 0.3), "Base medians within +-30% of their mean: {table}");
        let base = t[0][0];
        for l in 1..4 {
            assert!(t[0][l] >= 30.0 * base, "original {} >= 30x base: {table}", levels[l]);
            assert!(t[1][l] <= 1.5 * t[1][0] && t[1][l] <= 1.5 * base, "RTCA 1 {} within 1.5x base: {table}", levels[l]);
            assert!(t[2][l] >= t[1][l] && t[3][l] >= t[2][l] && t[3][l] < t[0][l], "RTCA 64/238 in between at {}: {table}", levels[l]);
        }
        for l in 2..4 {
            assert!(t[1][l] < t[2][l] && t[2][l] < t[3][l], "grows with batch size at {}: {table}", levels[l]);
        }
        println!("{table}");
    }
}
