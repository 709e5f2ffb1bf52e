//! Packets and the FIFO queues that hold them (NIC rings, taps, virtio rings, sockets, the work
//! of one poll), stored as runs of identical packets.
//!
//! Why runs: a Heavy Receiver pushes about 1.6 million segments a second through five queues;
//! its segments carry no timestamps on the vhost path, so the segments of one flow that arrive
//! together are identical and travel as one run `(packet, count)`: a NAPI poll of 64 segments
//! moves one run instead of 64 packets. A queue of runs behaves exactly as the queue of the
//! packets it stands for (property-tested against a `VecDeque<Packet>` below); merging is only
//! a saving, never needed for correctness.

use rtvirt_model::Nanos;
use std::collections::VecDeque;

/// One packet (request, response, or bulk segment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packet {
    pub flow: u32,
    pub bytes: u32,
    /// Arrival on the wire at the NIC; ZERO for a bulk segment whose arrival time nobody reads
    /// (see `traffic::FlowState::Tcp::stamped`).
    pub t0: Nanos,
    /// VM entry / first guest touch (end of "host receive").
    pub t_entry: Nanos,
    /// VM exit that sends the response (end of "guest").
    pub t_exit: Nanos,
}

/// `count` copies of `pkt`, consecutive in a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub pkt: Packet,
    pub count: u32,
}

impl Run {
    /// Bytes of the whole run.
    pub fn bytes(&self) -> u64 {
        self.pkt.bytes as u64 * self.count as u64
    }
}

/// A FIFO of packets stored as runs (no run is empty).
#[derive(Debug, Clone, Default)]
pub(crate) struct PacketQueue {
    runs: VecDeque<Run>,
    len: usize,
}

impl PacketQueue {
    /// Packets queued.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_back(&mut self, pkt: Packet) {
        self.push_n(pkt, 1);
    }

    /// Append `n` copies of `pkt` (merged into the last run when it holds the same packet).
    pub fn push_n(&mut self, pkt: Packet, n: u32) {
        if n == 0 {
            return;
        }
        self.len += n as usize;
        match self.runs.back_mut() {
            Some(last) if last.pkt == pkt => last.count += n,
            _ => self.runs.push_back(Run { pkt, count: n }),
        }
    }

    pub fn pop_front(&mut self) -> Option<Packet> {
        let first = self.runs.front_mut()?;
        let pkt = first.pkt;
        first.count -= 1;
        if first.count == 0 {
            self.runs.pop_front();
        }
        self.len -= 1;
        Some(pkt)
    }

    /// Move the first `n` packets (at most all) to the end of `out`, in order.
    pub fn move_front(&mut self, n: usize, out: &mut PacketQueue) {
        let mut left = n.min(self.len);
        while left > 0 {
            let first = self.runs.front_mut().expect("len counts the runs' packets");
            let k = (first.count as usize).min(left) as u32;
            out.push_n(first.pkt, k);
            first.count -= k;
            if first.count == 0 {
                self.runs.pop_front();
            }
            self.len -= k as usize;
            left -= k as usize;
        }
    }

    /// Move every packet to the end of `out`, in order.
    pub fn append_to(&mut self, out: &mut PacketQueue) {
        self.move_front(self.len, out);
    }

    /// The runs, front first.
    pub fn runs(&self) -> impl Iterator<Item = &Run> {
        self.runs.iter()
    }

    /// Every packet, front first (a run of `k` yields its packet `k` times).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = Packet> + '_ {
        self.runs.iter().flat_map(|r| std::iter::repeat_n(r.pkt, r.count as usize))
    }

    /// Change every packet with `f` (applied once per run: every packet of a run is the same).
    pub fn for_each_mut(&mut self, f: impl FnMut(&mut Packet)) {
        self.runs.iter_mut().map(|r| &mut r.pkt).for_each(f);
    }

    /// Keep the packets for which `keep` holds (called once per run), in order; `gone` gets
    /// the others as runs, in order.
    pub fn split_off_where(&mut self, mut keep: impl FnMut(&Packet) -> bool, mut gone: impl FnMut(Run)) {
        let mut len = self.len;
        self.runs.retain(|r| {
            let k = keep(&r.pkt);
            if !k {
                len -= r.count as usize;
                gone(*r);
            }
            k
        });
        self.len = len;
    }

    /// Bytes of every packet.
    pub fn bytes(&self) -> u64 {
        self.runs.iter().map(Run::bytes).sum()
    }

    pub fn clear(&mut self) {
        self.runs.clear();
        self.len = 0;
    }
}

impl FromIterator<Packet> for PacketQueue {
    fn from_iter<I: IntoIterator<Item = Packet>>(iter: I) -> Self {
        let mut q = PacketQueue::default();
        iter.into_iter().for_each(|p| q.push_back(p));
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Operations on two queues (a, b), applied alike to the run queues and to the oracle.
    #[derive(Debug, Clone)]
    enum Op {
        Push { to_b: bool, pkt: u8, n: u32 },
        Pop { from_b: bool },
        Move { from_b: bool, n: usize },
        Append { from_b: bool },
        Stamp { b: bool, at: u64 },
        KeepEvenFlows { b: bool },
        Clear { b: bool },
    }

    /// Few distinct packets, so that runs merge often.
    fn packet(k: u8) -> Packet {
        Packet {
            flow: (k % 3) as u32,
            bytes: 64 + (k % 2) as u32 * 1436,
            t0: Nanos((k / 6) as u64),
            t_entry: Nanos::ZERO,
            t_exit: Nanos::ZERO,
        }
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<bool>(), 0u8..12, 0u32..80).prop_map(|(to_b, pkt, n)| Op::Push { to_b, pkt, n }),
            any::<bool>().prop_map(|from_b| Op::Pop { from_b }),
            (any::<bool>(), 0usize..200).prop_map(|(from_b, n)| Op::Move { from_b, n }),
            any::<bool>().prop_map(|from_b| Op::Append { from_b }),
            (any::<bool>(), 1u64..4).prop_map(|(b, at)| Op::Stamp { b, at }),
            any::<bool>().prop_map(|b| Op::KeepEvenFlows { b }),
            any::<bool>().prop_map(|b| Op::Clear { b }),
        ]
    }

    fn stamp(p: &mut Packet, at: u64) {
        if p.t_entry == Nanos::ZERO {
            p.t_entry = Nanos(at);
        }
    }

    impl Op {
        /// Whether the operation works on queue b (and moves from b to a).
        fn on_b(&self) -> bool {
            match *self {
                Op::Push { to_b: b, .. } | Op::Pop { from_b: b } | Op::Move { from_b: b, .. } => b,
                Op::Append { from_b: b } | Op::Stamp { b, .. } | Op::KeepEvenFlows { b } | Op::Clear { b } => b,
            }
        }
    }

    fn apply(op: &Op, q: &mut [PacketQueue; 2], o: &mut [VecDeque<Packet>; 2]) {
        let ([qa, qb], [oa, ob]) = (q, o);
        let (qi, qj, oi, oj) = if op.on_b() { (qb, qa, ob, oa) } else { (qa, qb, oa, ob) };
        match *op {
            Op::Push { pkt, n, .. } => {
                qi.push_n(packet(pkt), n);
                oi.extend(std::iter::repeat_n(packet(pkt), n as usize));
            }
            Op::Pop { .. } => {
                assert_eq!(qi.pop_front(), oi.pop_front());
            }
            Op::Move { n, .. } => {
                qi.move_front(n, qj);
                let k = n.min(oi.len());
                oj.extend(oi.drain(..k));
            }
            Op::Append { .. } => {
                qi.append_to(qj);
                oj.extend(oi.drain(..));
            }
            Op::Stamp { at, .. } => {
                qi.for_each_mut(|p| stamp(p, at));
                oi.iter_mut().for_each(|p| stamp(p, at));
            }
            Op::KeepEvenFlows { .. } => {
                let mut gone = Vec::new();
                qi.split_off_where(|p| p.flow % 2 == 0, |r| gone.extend(std::iter::repeat_n(r.pkt, r.count as usize)));
                let want_gone: Vec<Packet> = oi.iter().copied().filter(|p| p.flow % 2 != 0).collect();
                oi.retain(|p| p.flow % 2 == 0);
                assert_eq!(gone, want_gone);
            }
            Op::Clear { .. } => {
                qi.clear();
                oi.clear();
            }
        }
    }

    proptest! {
        #[test]
        fn run_queue_behaves_as_the_queue_of_its_packets(ops in prop::collection::vec(op(), 0..60)) {
            let mut q = [PacketQueue::default(), PacketQueue::default()];
            let mut o = [VecDeque::new(), VecDeque::new()];
            for op in &ops {
                apply(op, &mut q, &mut o);
                for k in 0..2 {
                    prop_assert_eq!(q[k].len(), o[k].len());
                    prop_assert_eq!(q[k].is_empty(), o[k].is_empty());
                    prop_assert_eq!(q[k].iter().collect::<Vec<_>>(), o[k].iter().copied().collect::<Vec<_>>());
                    prop_assert_eq!(q[k].bytes(), o[k].iter().map(|p| p.bytes as u64).sum::<u64>());
                    prop_assert!(q[k].runs().all(|r| r.count > 0), "no empty run");
                }
            }
        }
    }

    #[test]
    fn identical_packets_pushed_one_by_one_form_one_run() {
        let mut q: PacketQueue = std::iter::repeat_n(packet(0), 64).collect();
        q.push_back(packet(1));
        assert_eq!(q.runs().map(|r| r.count).collect::<Vec<_>>(), vec![64, 1]);
        let mut out = PacketQueue::default();
        q.move_front(10, &mut out);
        assert_eq!((out.len(), q.len(), q.runs().count()), (10, 55, 2));
    }
}
