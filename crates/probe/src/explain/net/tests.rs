//! Joins of hand-made traces: a UDP round trip from a client on the host to a server in a
//! container (bridge, veth pair, NET_RX softirq in the sender's context, wake-ups), as this kernel
//! records it; the same trace with a milestone missing; a server's view from a NIC interrupt; a
//! server in a guest behind a tap, with two requests in flight and packet addresses reused.

use super::events::{Decoder, Device, Ev, NetEvent, NET_RX};
use super::join::{self, ClientRequest, ServerRequest};

const CLIENT: u32 = 100;
const SERVER: u32 = 200;
const REQUEST: u64 = 0xaaa0;
const RESPONSE: u64 = 0xbbb0;

fn at(ts: u64, cpu: u32, pid: u32, event: NetEvent) -> Ev {
    Ev { ts, cpu, pid, event }
}

/// `rest` with a packet `skb` taken in from NIC `device` on CPU 1: the NIC's IRQ (24) at 900 raises
/// NET_RX, which runs at 950 and receives the packet at 1_000; in time order.
fn with_nic_interrupt(skb: u64, device: Device, mut rest: Vec<Ev>) -> Vec<Ev> {
    use NetEvent::*;
    rest.extend([
        at(900, 1, 0, IrqEntry { irq: 24 }),
        at(910, 1, 0, SoftirqRaise { vector: NET_RX }),
        at(950, 1, 0, SoftirqEntry { vector: NET_RX }),
        at(1_000, 1, 0, Receive { skb, device }),
    ]);
    rest.sort_by_key(|e| e.ts);
    rest
}

/// After [`with_nic_interrupt`]: the request's socket enqueue wakes the server, which answers on
/// `device` (with syscall events).
fn woken_server_answers(device: Device) -> Vec<Ev> {
    use NetEvent::*;
    vec![
        at(1_050, 1, 0, DataReady { sock: 1 }),
        at(1_100, 1, 0, Wakeup { pid: SERVER, target_cpu: 1 }),
        at(1_110, 1, 0, SoftirqExit { vector: NET_RX }),
        at(1_200, 1, SERVER, Taken),
        at(1_400, 1, SERVER, Send),
        at(1_500, 1, SERVER, Queue { skb: RESPONSE, device }),
        at(1_600, 1, SERVER, Xmit { skb: RESPONSE, device }),
    ]
}

/// Client on CPU 0, server on CPU 1; the request goes rtvbr -> rtvh -> (veth) -> rtvc, the
/// response rtvc -> (veth) -> rtvh -> bridge rtvbr.
fn round_trip(d: &mut Decoder) -> Vec<Ev> {
    let (br, vh, vc) = (d.intern("rtvbr1"), d.intern("rtvh1"), d.intern("rtvc1"));
    use NetEvent::*;
    vec![
        at(1_010, 0, CLIENT, Send),
        at(1_100, 0, CLIENT, Queue { skb: REQUEST, device: br }),
        at(1_120, 0, CLIENT, Queue { skb: REQUEST, device: vh }),
        at(1_130, 0, CLIENT, NetifRx { skb: REQUEST, device: vc }),
        at(1_140, 0, CLIENT, Xmit { skb: REQUEST, device: vh }),
        at(1_150, 0, CLIENT, Xmit { skb: REQUEST, device: br }),
        at(1_200, 0, CLIENT, SoftirqEntry { vector: NET_RX }),
        at(1_210, 0, CLIENT, Receive { skb: REQUEST, device: vc }),
        at(1_300, 0, CLIENT, DataReady { sock: 1 }),
        at(1_400, 0, CLIENT, Wakeup { pid: SERVER, target_cpu: 1 }),
        at(1_420, 0, CLIENT, SoftirqExit { vector: NET_RX }),
        at(1_500, 1, SERVER, Taken),
        at(1_800, 1, SERVER, Send),
        at(1_900, 1, SERVER, Queue { skb: RESPONSE, device: vc }),
        at(1_950, 1, SERVER, NetifRx { skb: RESPONSE, device: vh }),
        at(2_000, 1, SERVER, Xmit { skb: RESPONSE, device: vc }),
        at(2_050, 1, SERVER, SoftirqEntry { vector: NET_RX }),
        at(2_060, 1, SERVER, Receive { skb: RESPONSE, device: vh }),
        at(2_070, 1, SERVER, Receive { skb: RESPONSE, device: br }),
        at(2_080, 1, SERVER, DataReady { sock: 1 }),
        at(2_100, 1, SERVER, Wakeup { pid: CLIENT, target_cpu: 0 }),
        at(2_300, 0, CLIENT, Taken),
    ]
}

/// A joined request's segments as (name, start, end).
fn short(j: &join::Joined) -> Vec<(&'static str, u64, u64)> {
    j.segments.iter().map(|s| (s.name, s.start, s.end)).collect()
}

fn request() -> ClientRequest {
    ClientRequest { seq: 7, sender: CLIENT, receiver: CLIENT, intended: 1_000, sent: 1_005, read: 2_400 }
}

#[test]
fn a_round_trip_through_a_container_gets_six_segments_that_add_up() {
    let mut d = Decoder::without_events();
    let trace = round_trip(&mut d);
    let j = join::client(&trace, &d, &request());
    let short = short(&j);
    assert_eq!(
        short,
        [
            ("send_lag", 1_000, 1_010),
            ("client_send", 1_010, 1_100),
            ("host_receive", 1_100, 1_400),
            ("server", 1_400, 1_800),
            ("host_send", 1_800, 2_000),
            ("client_receive", 2_000, 2_400),
        ]
    );
    assert_eq!(j.clamped_ns, 0);
    assert_eq!(j.segments.iter().map(|s| s.end - s.start).sum::<u64>(), 1_400, "the round trip");
    let receive = j.segments[2].via.join(", ");
    assert!(receive.contains("net_dev_queue rtvh1") && receive.contains("softirq NET_RX (cpu 0)"), "{receive}");
    assert!(receive.contains("netif_receive_skb rtvc1") && receive.contains("sched_wakeup pid 200"), "{receive}");
    let back = j.segments[5].via.join(", ");
    assert!(back.contains("netif_receive_skb rtvbr1") && back.contains("sched_wakeup pid 100"), "{back}");
}

#[test]
fn the_server_awake_ends_the_receive_at_the_socket_enqueue() {
    let mut d = Decoder::without_events();
    let mut trace = round_trip(&mut d);
    trace.retain(|e| !matches!(e.event, NetEvent::Wakeup { pid: SERVER, .. }));
    let j = join::client(&trace, &d, &request());
    assert_eq!((j.segments[2].name, j.segments[2].end), ("host_receive", 1_300));
    assert!(j.segments[2].via.iter().any(|v| v.contains("was awake")));
}

#[test]
fn a_missing_milestone_makes_the_rest_unexplained_and_names_it() {
    let mut d = Decoder::without_events();
    let mut trace = round_trip(&mut d);
    trace.retain(|e| !(e.pid == SERVER && e.event == NetEvent::Send));
    let j = join::client(&trace, &d, &request());
    let names: Vec<&str> = j.segments.iter().map(|s| s.name).collect();
    assert_eq!(names, ["send_lag", "client_send", "host_receive", "unexplained"]);
    assert_eq!(j.segments[3].missing, Some("the server's send syscall"));
    assert_eq!((j.segments[3].start, j.segments[3].end), (1_400, 2_400));
}

/// The round trip as traced without syscall events (the default): each receive is known by the
/// receiver's copy of the packet to user space, just before its return.
fn round_trip_without_syscalls(d: &mut Decoder) -> Vec<Ev> {
    d.has_syscalls = false;
    let mut trace = round_trip(d);
    trace.retain(|e| !matches!(e.event, NetEvent::Send | NetEvent::Taken));
    trace.push(at(1_490, 1, SERVER, NetEvent::Copy { skb: REQUEST }));
    trace.push(at(2_290, 0, CLIENT, NetEvent::Copy { skb: RESPONSE }));
    trace.sort_by_key(|e| e.ts);
    trace
}

/// Without syscall events the client's send is its own clock's and the server's ends at its
/// response's `net_dev_queue`: still six segments adding up to the round trip.
#[test]
fn without_syscall_events_the_server_ends_at_its_responses_queue() {
    let mut d = Decoder::without_events();
    let trace = round_trip_without_syscalls(&mut d);
    let j = join::client(&trace, &d, &request());
    let short = short(&j);
    assert_eq!(
        short,
        [
            ("send_lag", 1_000, 1_005),
            ("client_send", 1_005, 1_100),
            ("host_receive", 1_100, 1_400),
            ("server", 1_400, 1_900),
            ("host_send", 1_900, 2_000),
            ("client_receive", 2_000, 2_400),
        ]
    );
    assert!(j.segments[3].via.iter().any(|v| v.contains("copy to user (pid 200")), "{:?}", j.segments[3].via);
    assert!(j.segments[0].via[0].contains("by its own clock"), "{:?}", j.segments[0].via);
    let mut lost = trace.clone();
    lost.retain(|e| !(e.pid == SERVER && matches!(e.event, NetEvent::Queue { .. })));
    assert_eq!(join::client(&lost, &d, &request()).missing(), Some("net_dev_queue of the response"));
}

/// The server not woken (awake) and another rtvirt thread copying another packet first: the
/// server is the thread that copied this request's packet, else the one that queued the
/// response.
#[test]
fn without_syscall_events_the_server_is_who_copied_the_request() {
    let mut d = Decoder::without_events();
    let mut trace = round_trip_without_syscalls(&mut d);
    trace.retain(|e| !matches!(e.event, NetEvent::Wakeup { pid: SERVER, .. }));
    trace.push(at(1_450, 1, 300, NetEvent::Copy { skb: 0xccc0 }));
    trace.sort_by_key(|e| e.ts);
    let j = join::client(&trace, &d, &request());
    let short = short(&j);
    assert_eq!(short[2..4], [("host_receive", 1_100, 1_300), ("server", 1_300, 1_900)]);
    assert!(j.segments[2].via.iter().any(|v| v.contains("server (pid 200) was awake")), "{:?}", j.segments[2].via);
    // a small UDP datagram's copy is not traced: the server is then who queued the response on
    // the device the request arrived on
    trace.retain(|e| !(e.pid == SERVER && matches!(e.event, NetEvent::Copy { .. })));
    let j = join::client(&trace, &d, &request());
    assert!(j.segments[2].via.iter().any(|v| v.contains("server (pid 200) was awake")), "{:?}", j.segments[2].via);
    assert_eq!(j.segments[3].end, 1_900);
    trace.retain(|e| !(e.pid == SERVER && matches!(e.event, NetEvent::Queue { .. })));
    let j = join::client(&trace, &d, &request());
    assert_eq!(j.missing(), Some("the server's response (net_dev_queue)"), "not the other thread's copy");
}

/// A server explaining its own requests without syscall events: its request is the packet it
/// copied (the second of one NET_RX run: it begins at its own receive), its send the response's
/// queue.
#[test]
fn without_syscall_events_a_server_sees_its_host_share() {
    let mut d = Decoder::without_events();
    d.has_syscalls = false;
    let eth = d.intern("eth0");
    use NetEvent::*;
    let trace = with_nic_interrupt(
        0x1230,
        eth,
        vec![
            at(1_010, 1, 0, DataReady { sock: 1 }),
            at(1_040, 1, 0, Receive { skb: REQUEST, device: eth }),
            at(1_050, 1, 0, DataReady { sock: 1 }),
            at(1_100, 1, 0, Wakeup { pid: SERVER, target_cpu: 1 }),
            at(1_110, 1, 0, SoftirqExit { vector: NET_RX }),
            at(1_190, 1, SERVER, Copy { skb: REQUEST }),
            at(1_500, 1, SERVER, Queue { skb: RESPONSE, device: eth }),
            at(1_600, 1, SERVER, Xmit { skb: RESPONSE, device: eth }),
        ],
    );
    let r = ServerRequest { seq: 1, server: SERVER, waiting: 800, received: 1_250, answered: 1_650 };
    let j = join::server(&trace, &d, &r);
    let short = short(&j);
    assert_eq!(short, [("host_receive", 1_040, 1_100), ("server", 1_100, 1_500), ("host_send", 1_500, 1_600)]);
}

#[test]
fn a_response_packet_received_after_the_read_is_not_this_requests() {
    let mut d = Decoder::without_events();
    let mut trace = round_trip(&mut d);
    for e in trace.iter_mut().filter(|e| e.ts >= 2_060) {
        e.ts += 1_000;
    }
    let j = join::client(&trace, &d, &request());
    assert_eq!(j.missing(), Some("netif_receive_skb of the response"));
    assert_eq!(j.end(), 2_400, "the round trip is still whole");
}

#[test]
fn a_server_sees_its_host_share_from_the_nic_interrupt() {
    let mut d = Decoder::without_events();
    let eth = d.intern("eth0");
    d.irq_names.insert(24, "virtio0-input.0".into());
    let trace = with_nic_interrupt(REQUEST, eth, woken_server_answers(eth));
    let r = ServerRequest { seq: 1, server: SERVER, waiting: 800, received: 1_250, answered: 1_650 };
    let j = join::server(&trace, &d, &r);
    let short = short(&j);
    assert_eq!(short, [("host_receive", 900, 1_100), ("server", 1_100, 1_400), ("host_send", 1_400, 1_600)]);
    assert!(j.segments[0].via[0].starts_with("irq virtio0-input.0"), "{:?}", j.segments[0].via);
}

/// A guest kernel before Linux 6.4 has no `sk_data_ready`: the request is the packet the server's
/// receive copied, its socket enqueue the wake-up in the receiving context (the server awake: the
/// packet's `netif_receive_skb`).
#[test]
fn without_sk_data_ready_a_server_knows_its_request_by_the_copy_and_its_wake_up() {
    let mut d = Decoder::without_events();
    d.has_data_ready = false;
    let eth = d.intern("eth0");
    use NetEvent::*;
    let mut trace = with_nic_interrupt(
        REQUEST,
        eth,
        vec![
            at(1_100, 1, 0, Wakeup { pid: SERVER, target_cpu: 1 }),
            at(1_110, 1, 0, SoftirqExit { vector: NET_RX }),
            at(1_190, 1, SERVER, Copy { skb: REQUEST }),
            at(1_200, 1, SERVER, Taken),
            at(1_400, 1, SERVER, Send),
            at(1_500, 1, SERVER, Queue { skb: RESPONSE, device: eth }),
            at(1_600, 1, SERVER, Xmit { skb: RESPONSE, device: eth }),
        ],
    );
    let r = ServerRequest { seq: 1, server: SERVER, waiting: 800, received: 1_250, answered: 1_650 };
    let woken = [("host_receive", 900, 1_100), ("server", 1_100, 1_400), ("host_send", 1_400, 1_600)];
    assert_eq!(short(&join::server(&trace, &d, &r)), woken);
    trace.remove(4);
    let awake = [("host_receive", 900, 1_000), ("server", 1_000, 1_400), ("host_send", 1_400, 1_600)];
    assert_eq!(short(&join::server(&trace, &d, &r)), awake);
    trace.retain(|e| !matches!(e.event, Copy { .. }));
    assert_eq!(join::server(&trace, &d, &r).missing(), Some("the socket enqueue of the request"), "no copy, no wake");
    trace.insert(4, at(1_100, 1, 0, Wakeup { pid: SERVER, target_cpu: 1 }));
    assert_eq!(short(&join::server(&trace, &d, &r)), woken, "no copy: the packet received where the server was woken");
}

/// A guest's server, as its kernel (6.1: no `sk_data_ready`) records a request that came while
/// the server was busy: no wake-up, no copy event (a small UDP datagram), no syscall events. The
/// request is the received packet its receive freed - not the earlier response the driver freed
/// in its context -, and `host_send` ends where virtio-net's driver is handed the response.
fn busy_guest_server(d: &mut Decoder) -> Vec<Ev> {
    d.has_data_ready = false;
    d.has_syscalls = false;
    let eth = d.intern_nic("eth0");
    const EARLIER_RESPONSE: u64 = 0xccc0;
    use NetEvent::*;
    with_nic_interrupt(
        REQUEST,
        eth,
        vec![
            at(400, 1, SERVER, Queue { skb: EARLIER_RESPONSE, device: eth }),
            at(450, 1, SERVER, Xmit { skb: EARLIER_RESPONSE, device: eth }),
            at(1_110, 1, 0, SoftirqExit { vector: NET_RX }),
            at(1_190, 1, SERVER, Consume { skb: REQUEST }),
            at(1_195, 1, SERVER, Consume { skb: EARLIER_RESPONSE }),
            at(1_500, 1, SERVER, Queue { skb: RESPONSE, device: eth }),
            at(1_550, 1, SERVER, StartXmit { skb: RESPONSE, device: eth }),
            at(1_600, 1, SERVER, Xmit { skb: RESPONSE, device: eth }),
        ],
    )
}

#[test]
fn a_busy_guest_server_knows_its_request_by_the_received_packet_its_receive_freed() {
    let mut d = Decoder::without_events();
    let mut trace = busy_guest_server(&mut d);
    let r = ServerRequest { seq: 1, server: SERVER, waiting: 1_150, received: 1_250, answered: 1_650 };
    let j = join::server(&trace, &d, &r);
    assert_eq!(short(&j), [("host_receive", 900, 1_000), ("server", 1_000, 1_500), ("host_send", 1_500, 1_550)]);
    let send = j.segments[2].via.join(", ");
    assert!(send.contains("net_dev_start_xmit eth0 (to its driver)"), "{send}");
    assert!(j.segments[1].via.iter().any(|v| v.contains("packet freed after use")), "{:?}", j.segments[1].via);
    // only the freed transmit: not a request
    trace.retain(|e| e.event != NetEvent::Consume { skb: REQUEST });
    assert_eq!(join::server(&trace, &d, &r).missing(), Some("the socket enqueue of the request"));
}

#[test]
fn a_response_ends_at_its_first_transmit_or_where_a_nics_driver_is_handed_it() {
    let mut d = Decoder::without_events();
    let mut trace = busy_guest_server(&mut d);
    let r = ServerRequest { seq: 1, server: SERVER, waiting: 1_150, received: 1_250, answered: 1_650 };
    trace.retain(|e| !matches!(e.event, NetEvent::StartXmit { .. }));
    let host_send = |trace: &[Ev], d: &Decoder| join::server(trace, d, &r).segments.last().map(|s| (s.name, s.end));
    assert_eq!(host_send(&trace, &d), Some(("host_send", 1_600)), "no start_xmit traced: the transmit's return");
    // a device that is not a NIC (a veth): its start is not where the packet leaves the stack
    let veth = d.intern("rtvc1");
    trace.push(at(1_520, 1, SERVER, NetEvent::StartXmit { skb: RESPONSE, device: veth }));
    trace.sort_by_key(|e| e.ts);
    assert_eq!(host_send(&trace, &d), Some(("host_send", 1_600)));
}

/// In a guest, a request's packet address was the previous response's: received from the NIC
/// (virtio-net), its life begins at that receive, not at the earlier transmit.
#[test]
fn a_packet_received_from_a_nic_begins_there_whatever_its_address_did_before() {
    let mut d = Decoder::without_events();
    let eth = d.intern_nic("virtio-eth");
    use NetEvent::*;
    let trace = with_nic_interrupt(
        REQUEST,
        eth,
        [
            vec![
                at(100, 1, SERVER, Queue { skb: REQUEST, device: eth }),
                at(150, 1, SERVER, Xmit { skb: REQUEST, device: eth }),
            ],
            woken_server_answers(eth),
        ]
        .concat(),
    );
    let r = ServerRequest { seq: 1, server: SERVER, waiting: 800, received: 1_250, answered: 1_650 };
    let j = join::server(&trace, &d, &r);
    assert_eq!(j.segments.first().map(|s| (s.name, s.start, s.end)), Some(("host_receive", 900, 1_100)), "{j:?}");
    // a packet taken in after another in the same NET_RX run: the interrupt was the other's
    let mut polled = trace.clone();
    polled.insert(5, at(960, 1, 0, Receive { skb: 0xccc0, device: eth }));
    let j = join::server(&polled, &d, &r);
    assert_eq!(j.segments.first().map(|s| (s.name, s.start, s.end)), Some(("host_receive", 1_000, 1_100)), "{j:?}");
}

/// Loopback, the server busy when the request comes: its socket (7) is known from the request
/// before, which woke it; the address of this request's packet was used before (an older life);
/// a response to the client is enqueued on another socket (9) in between.
#[test]
fn a_busy_server_takes_the_packet_of_its_own_socket_and_of_this_life_only() {
    let mut d = Decoder::without_events();
    let lo = d.intern("lo");
    use NetEvent::*;
    let trace = vec![
        at(100, 0, CLIENT, Receive { skb: REQUEST, device: lo }),
        at(110, 0, CLIENT, DataReady { sock: 7 }),
        at(120, 0, CLIENT, Wakeup { pid: SERVER, target_cpu: 1 }),
        at(200, 1, SERVER, Taken),
        at(1_000, 0, CLIENT, Send),
        at(1_010, 0, CLIENT, Queue { skb: REQUEST, device: lo }),
        at(1_020, 0, CLIENT, NetifRx { skb: REQUEST, device: lo }),
        at(1_030, 0, CLIENT, Xmit { skb: REQUEST, device: lo }),
        at(1_040, 0, CLIENT, Receive { skb: REQUEST, device: lo }),
        at(1_050, 0, CLIENT, DataReady { sock: 7 }),
        at(1_100, 1, SERVER, Receive { skb: RESPONSE, device: lo }),
        at(1_110, 1, SERVER, DataReady { sock: 9 }),
        at(1_120, 1, SERVER, Wakeup { pid: CLIENT, target_cpu: 0 }),
        at(1_200, 1, SERVER, Taken),
        at(1_300, 1, SERVER, Send),
        at(1_310, 1, SERVER, Queue { skb: 0xccc0, device: lo }),
        at(1_320, 1, SERVER, Xmit { skb: 0xccc0, device: lo }),
    ];
    let r = ServerRequest { seq: 2, server: SERVER, waiting: 1_150, received: 1_250, answered: 1_350 };
    let j = join::server(&trace, &d, &r);
    let short = short(&j);
    assert_eq!(short, [("host_receive", 1_010, 1_050), ("server", 1_050, 1_300), ("host_send", 1_300, 1_320)]);
}

/// A quiet host, as this kernel records it: the server's CPU is idle, so the socket enqueue's
/// wake-up goes through the scheduler's remote wake list - `sched_waking` in the enqueue's
/// context (the client's, on CPU 0), `sched_wakeup` on the server's CPU 1 in the IPI, by the
/// idle task. The enqueue is found by the waking; the receive ends at the server runnable.
fn quiet_host_request(d: &mut Decoder) -> Vec<Ev> {
    d.has_waking = true;
    let lo = d.intern("lo");
    use NetEvent::*;
    vec![
        at(1_000, 0, CLIENT, Send),
        at(1_010, 0, CLIENT, Queue { skb: REQUEST, device: lo }),
        at(1_020, 0, CLIENT, NetifRx { skb: REQUEST, device: lo }),
        at(1_030, 0, CLIENT, Xmit { skb: REQUEST, device: lo }),
        at(1_040, 0, CLIENT, SoftirqEntry { vector: NET_RX }),
        at(1_050, 0, CLIENT, Receive { skb: REQUEST, device: lo }),
        at(1_060, 0, CLIENT, DataReady { sock: 7 }),
        at(1_070, 0, CLIENT, Waking { pid: SERVER }),
        at(1_080, 0, CLIENT, SoftirqExit { vector: NET_RX }),
        at(1_090, 1, 0, Receive { skb: 0xddd0, device: lo }),
        at(1_095, 1, 0, DataReady { sock: 11 }),
        at(1_100, 1, 0, Wakeup { pid: SERVER, target_cpu: 1 }),
        at(1_200, 1, SERVER, Taken),
        at(1_300, 1, SERVER, Send),
        at(1_310, 1, SERVER, Queue { skb: RESPONSE, device: lo }),
        at(1_320, 1, SERVER, Xmit { skb: RESPONSE, device: lo }),
        at(1_330, 1, SERVER, Receive { skb: RESPONSE, device: lo }),
        at(1_340, 1, SERVER, DataReady { sock: 9 }),
        at(1_350, 1, SERVER, Waking { pid: CLIENT }),
        at(1_400, 0, 0, Wakeup { pid: CLIENT, target_cpu: 0 }),
        at(1_450, 0, CLIENT, Taken),
    ]
}

#[test]
fn a_server_woken_on_its_idle_cpu_is_joined_by_the_wakers_sched_waking() {
    let mut d = Decoder::without_events();
    let trace = quiet_host_request(&mut d);
    let r = ServerRequest { seq: 3, server: SERVER, waiting: 800, received: 1_250, answered: 1_330 };
    let j = join::server(&trace, &d, &r);
    let short = short(&j);
    assert_eq!(short, [("host_receive", 1_010, 1_100), ("server", 1_100, 1_300), ("host_send", 1_300, 1_320)]);
    let receive = j.segments[0].via.join(", ");
    assert!(receive.contains("sched_waking pid 200 (cpu 0)"), "{receive}");
    assert!(receive.contains("sched_wakeup pid 200 on cpu 1"), "{receive}");
}

#[test]
fn a_client_sees_the_remote_wake_up_of_the_server_and_of_itself() {
    let mut d = Decoder::without_events();
    let trace = quiet_host_request(&mut d);
    let r = ClientRequest { seq: 3, sender: CLIENT, receiver: CLIENT, intended: 990, sent: 995, read: 1_460 };
    let j = join::client(&trace, &d, &r);
    let short = short(&j);
    assert_eq!(
        short,
        [
            ("send_lag", 990, 1_000),
            ("client_send", 1_000, 1_010),
            ("host_receive", 1_010, 1_100),
            ("server", 1_100, 1_300),
            ("host_send", 1_300, 1_320),
            ("client_receive", 1_320, 1_460),
        ]
    );
}

/// Two requests in flight to a server in a guest (client on CPU 0, QEMU's writes on CPU 1): each
/// request leaves through the tap; the responses come back through it in the opposite order, and
/// the second response's packet reuses the address of the first request's (freed when QEMU read
/// it). Request `seq`'s response is the packet its read returned.
fn guest_round_trips(d: &mut Decoder) -> (Vec<Ev>, [ClientRequest; 2]) {
    let (br, tap) = (d.intern("rtvbr1"), d.intern_tap("rtvtap1"));
    d.has_waking = true;
    const QEMU: u32 = 300;
    let (first, second, back_second) = (0xa1, 0xa2, 0xb2);
    use NetEvent::*;
    let trace = vec![
        at(1_010, 0, CLIENT, Send),
        at(1_100, 0, CLIENT, Queue { skb: first, device: br }),
        at(1_120, 0, CLIENT, Queue { skb: first, device: tap }),
        at(1_140, 0, CLIENT, Xmit { skb: first, device: tap }),
        at(1_150, 0, CLIENT, Xmit { skb: first, device: br }),
        at(2_010, 0, CLIENT, Send),
        at(2_100, 0, CLIENT, Queue { skb: second, device: br }),
        at(2_140, 0, CLIENT, Xmit { skb: second, device: tap }),
        // the second request's response first
        at(5_000, 1, QEMU, Receive { skb: back_second, device: tap }),
        at(5_010, 1, QEMU, Receive { skb: back_second, device: br }),
        at(5_020, 1, QEMU, DataReady { sock: 9 }),
        at(5_030, 1, QEMU, Waking { pid: CLIENT }),
        at(5_060, 0, 0, Wakeup { pid: CLIENT, target_cpu: 0 }),
        at(5_100, 0, CLIENT, Taken),
        // then the first's, in the freed address of the first request
        at(6_000, 1, QEMU, Receive { skb: first, device: tap }),
        at(6_010, 1, QEMU, Receive { skb: first, device: br }),
        at(6_020, 1, QEMU, DataReady { sock: 9 }),
        at(6_030, 1, QEMU, Waking { pid: CLIENT }),
        at(6_060, 0, 0, Wakeup { pid: CLIENT, target_cpu: 0 }),
        at(6_100, 0, CLIENT, Taken),
    ];
    let request = |seq, intended, read| ClientRequest {
        seq,
        sender: CLIENT,
        receiver: CLIENT,
        intended,
        sent: intended + 5,
        read,
    };
    (trace, [request(0, 1_000, 6_200), request(1, 2_000, 5_200)])
}

#[test]
fn a_round_trip_to_a_guest_gets_the_hosts_three_segments_and_its_own_response() {
    let mut d = Decoder::without_events();
    let (trace, [first, second]) = guest_round_trips(&mut d);
    let j = join::client(&trace, &d, &first);
    assert_eq!(j.missing(), None);
    let short = short(&j);
    assert_eq!(
        short,
        [
            ("send_lag", 1_000, 1_010),
            ("client_send", 1_010, 1_100),
            ("host_receive", 1_100, 1_140),
            ("guest", 1_140, 6_000),
            ("host_send", 6_000, 6_060),
            ("client_receive", 6_060, 6_200),
        ],
        "the first request's response is the one read at 6_100, though the address went out first"
    );
    assert_eq!(j.clamped_ns, 0);
    assert!(j.segments[3].via[0].contains("net_dev_xmit rtvtap1 (into the guest)"), "{:?}", j.segments[3].via);
    assert!(j.segments[3].via[1].contains("netif_receive_skb rtvtap1"), "{:?}", j.segments[3].via);
    let send = j.segments[4].via.join(", ");
    assert!(send.contains("netif_receive_skb rtvbr1") && send.contains("sched_wakeup pid 100"), "{send}");
    let j = join::client(&trace, &d, &second);
    let guest = j.segments.iter().find(|s| s.name == "guest").expect("a guest segment");
    assert_eq!((guest.start, guest.end), (2_140, 5_000), "the second request's response came back first");
    assert_eq!(j.end() - j.start(), 3_200, "the segments add up to the round trip");
}

#[test]
fn a_guests_response_not_in_the_trace_leaves_the_rest_unexplained_from_the_tap() {
    let mut d = Decoder::without_events();
    let (mut trace, [first, _]) = guest_round_trips(&mut d);
    trace.retain(|e| e.ts < 2_000);
    let j = join::client(&trace, &d, &first);
    let names: Vec<&str> = j.segments.iter().map(|s| s.name).collect();
    assert_eq!(names, ["send_lag", "client_send", "host_receive", "unexplained"]);
    assert_eq!(j.missing(), Some("the socket enqueue of the response"));
    assert_eq!(j.end(), 6_200);
}
