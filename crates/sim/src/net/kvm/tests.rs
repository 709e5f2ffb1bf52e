//! Mechanism tests of the KVM network path, driven step by step on a built (not started)
//! simulator: NAPI weight, the net_rx_action budget / time limit and time_squeeze, repoll to the
//! tail, the softnet backlog limit, the partitioned rt_poll_list choice and the 4.x PREEMPT_RT
//! softirq-lock hand-over; and delivery of a run of packets against delivery one by one.

use super::softirq::{BUDGET, NAPI_WEIGHT};
use super::*;
use proptest::prelude::*;
use rtvirt_model::scenario::net::NetModel;
use rtvirt_model::scenario::Scenario;

/// A built simulator of a 2-core host: `nics` = (irq_prio, irq core) of NICs n0, n1, ...; one
/// vhost VM `v` on NIC n0 (threads on core 1) with a request/response flow `f` (not started).
fn sim(softirq: &str, nics: &[(Option<u8>, u32)]) -> Sim {
    sim_with(softirq, nics, "vhost")
}

/// [`sim`] with VM `v`'s socket mode `socket`.
fn sim_with(softirq: &str, nics: &[(Option<u8>, u32)], socket: &str) -> Sim {
    let mut src = format!(
        "[host]\ncores = 2\n[net]\nkind = \"kvm\"\nirq = \"threaded\"\nsoftirq = \"{softirq}\"\nrtnet_prio = 47\n"
    );
    for (i, (prio, core)) in nics.iter().enumerate() {
        src += &format!("[[net.nic]]\nname = \"n{i}\"\nirq_cores = [{core}]\nring = 4096\n");
        if let Some(p) = prio {
            src += &format!("irq_prio = {p}\n");
        }
    }
    src += &format!(
        "[[net.vm]]\nname = \"v\"\nnic = \"n0\"\nsocket = \"{socket}\"\nvhost = {{ cores = [1] }}\nvcpu = {{ cores = [1] }}\n"
    );
    src += "[[net.flow]]\nname = \"f\"\nkind = \"udp_rr\"\nto = \"v\"\n";
    let s = Scenario::from_toml(&src, None).expect("scenario");
    let net = s.net.clone().expect("a [net] section");
    let NetModel::Kvm(k) = net.model else { panic!("kvm") };
    Sim::build(k, &KvmRunOptions { duration: Nanos::from_secs(1), warmup: Nanos::ZERO, seed: 1, trace: None })
}

/// Put `n` request packets on RX queue `rxq`'s ring and schedule its NAPI on `list` (as the
/// hard IRQ does: IRQ disabled until napi_complete).
fn fill(sim: &mut Sim, rxq: usize, n: usize, list: usize) {
    for _ in 0..n {
        sim.rxqs[rxq].ring.push_back(Packet {
            flow: 0,
            bytes: 64,
            t0: Nanos::ZERO,
            t_entry: Nanos::ZERO,
            t_exit: Nanos::ZERO,
        });
    }
    sim.rxqs[rxq].irq_enabled = false;
    sim.napi_schedule(rxq, list);
}

/// Run `t`'s next NET_RX step to completion: Some((rxq, packets)) for a NAPI poll, None when the
/// step was something else (a lock hand-over) or there is no softirq work.
fn step(sim: &mut Sim, t: ThreadIndex) -> Option<(usize, usize)> {
    match sim.softirq_next(t)? {
        Next::Work(w) => match w.action {
            Action::Poll { list, rxq, pkts } => {
                let n = pkts.len();
                sim.apply(t, Action::Poll { list, rxq, pkts });
                Some((rxq, n))
            }
            other => {
                sim.apply(t, other);
                None
            }
        },
        Next::Block(_) | Next::Sleep => None,
    }
}

fn irq_thread(sim: &Sim, rxq: usize) -> ThreadIndex {
    sim.rxqs[rxq].irq_thread.expect("threaded mode")
}

/// A shared-softirq host with `nics` RT-less NICs on core 0, rings filled as `fills` (rx queue,
/// packets), and NET_RX raised on the first queue's IRQ thread: (sim, poll_list, that thread).
fn raised(nics: usize, fills: &[(usize, usize)]) -> (Sim, usize, ThreadIndex) {
    let mut s = sim("shared", &vec![(None, 0); nics]);
    let list = Sim::list_id(0, false);
    for &(rxq, n) in fills {
        fill(&mut s, rxq, n, list);
    }
    let t = irq_thread(&s, 0);
    s.raise(t, list);
    (s, list, t)
}

fn advance(sim: &mut Sim, by: Nanos) {
    let at = sim.event_queue.now() + by;
    sim.event_queue.schedule(at, Ev::Tick { core: 0 });
    // events the steps armed (thread completions) are dropped: only the clock matters here
    while sim.event_queue.pop().is_some_and(|(t, _)| t < at) {}
}

#[test]
fn napi_polls_with_weight_64_and_completes_only_below_it() {
    let (mut s, _, t) = raised(1, &[(0, 200)]);
    let polls: Vec<(usize, usize)> = std::iter::from_fn(|| step(&mut s, t)).collect();
    assert_eq!(polls, vec![(0, NAPI_WEIGHT), (0, NAPI_WEIGHT), (0, NAPI_WEIGHT), (0, 200 - 3 * NAPI_WEIGHT)]);
    // the poll that used less than the weight completed the NAPI and re-enabled the IRQ
    assert!(s.rxqs[0].irq_enabled && s.rxqs[0].on_list.is_none() && s.rxqs[0].ring.is_empty());
    // one NAPI per round never exhausts the 300-packet budget
    assert_eq!(s.cores[0].time_squeeze, 0);
}

#[test]
fn budget_300_ends_the_round_with_time_squeeze_and_repolls_go_to_the_tail() {
    let (mut s, list, t) = raised(6, &[(0, 100), (1, 100), (2, 100), (3, 100), (4, 100), (5, 100)]);
    for r in 0..5 {
        assert_eq!(step(&mut s, t), Some((r, NAPI_WEIGHT)), "poll {r} takes the full weight");
    }
    // 5 x 64 = 320 >= 300: the round stops before n5, counts a time_squeeze and re-raises
    assert_eq!(step(&mut s, t), Some((5, NAPI_WEIGHT)), "n5, not polled last round, leads the next one");
    assert_eq!(s.cores[0].time_squeeze, 1);
    assert_eq!(
        s.lists[list].napis.iter().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4],
        "the repolled NAPIs follow at the tail"
    );
    assert_eq!(BUDGET, 300);
}

#[test]
fn repoll_goes_after_napis_scheduled_during_the_round() {
    let (mut s, list, t) = raised(3, &[(0, 200), (1, 10)]);
    assert_eq!(step(&mut s, t), Some((0, NAPI_WEIGHT)));
    // a hard IRQ schedules n2 while the round runs: it waits for the next round
    fill(&mut s, 2, 10, list);
    assert_eq!(step(&mut s, t), Some((1, 10)));
    assert!(s.rxqs[1].irq_enabled, "n1 completed");
    assert_eq!(step(&mut s, t), Some((2, 10)), "next round: n2 first");
    assert_eq!(step(&mut s, t), Some((0, NAPI_WEIGHT)), "then the repolled n0");
}

#[test]
fn two_jiffies_end_the_round_with_time_squeeze() {
    let (mut s, _, t) = raised(2, &[(0, 200), (1, 200)]);
    assert_eq!(step(&mut s, t), Some((0, NAPI_WEIGHT)));
    advance(&mut s, softirq::ROUND_TIME);
    // 64 of 300 used, but 2 jiffies passed: squeeze; n1 stays first, n0 (repolled) after it
    assert_eq!(step(&mut s, t), Some((1, NAPI_WEIGHT)));
    assert_eq!(s.cores[0].time_squeeze, 1);
}

#[test]
fn softnet_backlog_holds_1000_packets_and_drops_beyond() {
    let mut s = sim("shared", &[(None, 0)]);
    let vh = s.vms[0].vhost.expect("vhost VM");
    let pkts: PacketQueue = (0..1005)
        .map(|_| Packet { flow: 0, bytes: 64, t0: Nanos::ZERO, t_entry: Nanos::ZERO, t_exit: Nanos::ZERO })
        .collect();
    s.apply(vh, Action::VhostTx { pkts });
    let backlog = s.cores[s.threads[vh].core].backlog;
    assert_eq!(s.rxqs[backlog].ring.len(), BACKLOG_LIMIT);
    assert_eq!(s.rxqs[backlog].drops, 5);
    assert_eq!(s.flows[0].drops(), 5);
    // the backlog NAPI is on the vhost thread's list and NET_RX is raised for it
    let list = s.rxqs[backlog].on_list.expect("backlog NAPI scheduled");
    assert!(s.threads[vh].raised.contains(&list));
}

#[test]
fn partitioned_list_is_chosen_by_irq_thread_priority_against_rtnet_prio() {
    // n0 FIFO 50, n1 FIFO 47 (= rtnet_prio), n2 FIFO 46, n3 normal (CFS)
    let mut s = sim("partitioned", &[(Some(50), 0), (Some(47), 0), (Some(46), 0), (None, 0)]);
    for (rxq, rt) in [(0, true), (1, true), (2, false), (3, false)] {
        let t = irq_thread(&s, rxq);
        s.apply(t, Action::HardIrq(rxq));
        assert_eq!(s.rxqs[rxq].on_list, Some(Sim::list_id(0, rt)), "n{rxq}");
        assert!(s.threads[t].raised.contains(&Sim::list_id(0, rt)));
    }
    // shared mode: one list for every priority
    let mut s = sim("shared", &[(Some(50), 0), (None, 0)]);
    for rxq in 0..2 {
        let t = irq_thread(&s, rxq);
        s.apply(t, Action::HardIrq(rxq));
        assert_eq!(s.rxqs[rxq].on_list, Some(Sim::list_id(0, false)));
    }
}

#[test]
fn rt_contender_boosts_the_holder_then_drains_the_non_rt_entries() {
    // n0: the RT NIC (IRQ thread FIFO 50); n1: a non-RT NIC (CFS IRQ thread); one shared list
    let mut s = sim("shared", &[(Some(50), 0), (None, 0)]);
    let list = Sim::list_id(0, false);
    let (rt, nrt) = (irq_thread(&s, 0), irq_thread(&s, 1));
    fill(&mut s, 1, 200, list);
    s.raise(nrt, list);
    // the non-RT IRQ thread holds the lock and is inside a poll of its NAPI
    let Some(Next::Work(Work { action: Action::Poll { rxq: 1, pkts, .. }, .. })) = s.softirq_next(nrt) else {
        panic!("non-RT poll")
    };
    // the RT NIC's interrupt: its IRQ thread schedules its NAPI on the same list, finds the lock
    // held, blocks and boosts the holder
    fill(&mut s, 0, 10, list);
    s.raise(rt, list);
    assert!(matches!(s.softirq_next(rt), Some(Next::Block(l)) if l == list));
    s.threads[rt].state = ThreadState::Blocked;
    s.block_on(rt, list);
    assert_eq!(s.threads[nrt].boost, 50, "priority inheritance");
    assert_eq!(s.inversions, 1);
    // the holder finishes its current poll, sees the waiter and hands the lock over
    s.apply(nrt, Action::Poll { list, rxq: 1, pkts });
    assert_eq!(step(&mut s, nrt), None);
    assert_eq!(s.threads[nrt].boost, 0);
    assert_eq!(s.lists[list].holder, Some(rt));
    // woken with the lock, the RT thread's first work is its own NAPI...
    let w = s.threads[rt].work.take().expect("the woken RT IRQ thread was dispatched");
    let Action::Poll { rxq: 0, .. } = w.action else { panic!("RT thread polls its own NAPI first") };
    s.apply(rt, w.action);
    // ...then it drains the non-RT NAPI left on the shared list, at FIFO 50
    let drained: Vec<(usize, usize)> = std::iter::from_fn(|| step(&mut s, rt)).collect();
    assert_eq!(
        drained,
        vec![(1, NAPI_WEIGHT), (1, NAPI_WEIGHT), (1, 200 - 3 * NAPI_WEIGHT)],
        "the RT thread polls the 136 packets left on n1"
    );
    assert!(s.lists[list].holder.is_none() && s.lists[list].napis.is_empty());
}

/// What a delivery may change: the VM's queues, the flow's drops, every thread's state and work,
/// every core's running thread and completion timer.
fn delivery_state(s: &Sim) -> String {
    let v = &s.vms[0];
    let threads: Vec<_> = s.threads.iter().map(|t| (t.state, t.core, t.work.as_ref().map(|w| w.left))).collect();
    let cores: Vec<_> = s.cores.iter().map(|c| (c.current, c.done, c.ready.clone())).collect();
    format!("{:?}", (v.tap.len(), v.ring.len(), v.sock.len(), v.virq, s.flows[0].drops(), threads, cores))
}

proptest! {
    /// The run-length delivery (one by one while a delivery may wake the consumer, then the rest
    /// at once) against `deliver` called once per packet, on two identical simulators: with the
    /// consumer asleep or awake, a tap near or at its limit, and a full guest ring (the vhost
    /// thread then goes back to sleep at once, so that every packet wakes it again).
    #[test]
    fn a_delivered_run_is_its_packets_delivered_one_by_one(
        n in 1u32..150,
        tap in prop_oneof![Just(0u32), 900u32..=TAP_LIMIT as u32],
        ring_full in any::<bool>(),
        awake in any::<bool>(),
        socket in prop_oneof![Just("vhost"), Just("outsourced"), Just("outsourced_rt"), Just("host")],
    ) {
        let p = Packet { flow: 0, bytes: 64, t0: Nanos(5), t_entry: Nanos::ZERO, t_exit: Nanos::ZERO };
        let build = || {
            let mut s = sim_with("shared", &[(None, 0)], socket);
            s.vms[0].tap.push_n(p, tap);
            if ring_full {
                let cap = s.vms[0].ring_cap as u32;
                s.vms[0].ring.push_n(p, cap);
            }
            if awake {
                let consumer = s.vms[0].vhost.unwrap_or(s.vms[0].vcpu);
                s.wake(consumer);
            }
            s
        };
        let (mut runs, mut one_by_one) = (build(), build());
        runs.deliver_run(p, n);
        for _ in 0..n {
            one_by_one.deliver(p);
        }
        prop_assert_eq!(delivery_state(&runs), delivery_state(&one_by_one));
    }
}
