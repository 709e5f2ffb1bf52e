//! One request's path, joined from the time-ordered events of every CPU: by thread (the client's
//! send syscall and the packet it queues; the thread that copies that packet to user space - the
//! server - and the packet it queues after its own send syscall) and by packet address (skbaddr)
//! through the devices (bridge, veth, loopback), the NET_RX softirq, the socket and the wake-up.
//! Each search is bounded by the request's own time span, so a packet address the kernel reuses
//! for a later packet is never mistaken for this one.
//!
//! The segments are consecutive: each ends where the next starts, the first (`send_lag`, the
//! client late to send: not the network) starts at the client's intended send time (or, on a server, at the first trace of the request's packet) and
//! the last ends at the client's read (or the response's `net_dev_xmit`), so they add up to the
//! round trip. A milestone missing from the trace ends the join: the rest is one `unexplained`
//! segment that names it.

use super::events::{Decoder, Ev, NetEvent, NET_RX};

/// A response the client read: its request's times (CLOCK_MONOTONIC ns) and threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientRequest {
    pub seq: u64,
    /// The thread that sent the request, and the one that read the response.
    pub sender: u32,
    pub receiver: u32,
    pub intended: u64,
    /// Just before the send syscall.
    pub sent: u64,
    /// Just after the response was read.
    pub read: u64,
}

/// A request a server on this host answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerRequest {
    pub seq: u64,
    pub server: u32,
    /// Just before the receive syscall that returned the request.
    pub waiting: u64,
    /// Just after the receive syscall returned.
    pub received: u64,
    /// Just after the send syscall returned.
    pub answered: u64,
}

/// How far before a server's receive its request's packet is looked for.
pub const LOOKBACK_NS: u64 = 100_000_000;

/// A segment in absolute time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub name: &'static str,
    pub start: u64,
    pub end: u64,
    pub cpu: Option<u32>,
    pub via: Vec<String>,
    pub missing: Option<&'static str>,
}

/// A joined request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    pub segments: Vec<Segment>,
    /// How far milestones went back in time (a later milestone before an earlier one), summed:
    /// 0 when the trace and the client's clock agree.
    pub clamped_ns: u64,
}

impl Joined {
    pub fn start(&self) -> u64 {
        self.segments.first().map_or(0, |s| s.start)
    }
    pub fn end(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.end)
    }
    pub fn missing(&self) -> Option<&'static str> {
        self.segments.iter().find_map(|s| s.missing)
    }
}

/// The consecutive segments being built.
struct Path<'a> {
    decoder: &'a Decoder,
    cursor: u64,
    segments: Vec<Segment>,
    clamped_ns: u64,
}

impl<'a> Path<'a> {
    fn new(decoder: &'a Decoder, start: u64) -> Path<'a> {
        Path { decoder, cursor: start, segments: Vec::new(), clamped_ns: 0 }
    }

    fn close(&mut self, name: &'static str, end: u64, cpu: Option<u32>, via: Vec<String>) {
        self.clamped_ns += self.cursor.saturating_sub(end);
        let end = end.max(self.cursor);
        self.segments.push(Segment { name, start: self.cursor, end, cpu, via, missing: None });
        self.cursor = end;
    }

    fn close_at(&mut self, name: &'static str, e: &Ev, via: Vec<String>) {
        self.close(name, e.ts, Some(e.cpu), via)
    }

    fn finish(mut self, end: u64, outcome: Result<(), &'static str>) -> Joined {
        if let Err(missing) = outcome {
            self.clamped_ns += self.cursor.saturating_sub(end);
            let start = self.cursor.min(end);
            let segment =
                Segment { name: "unexplained", start, end, cpu: None, via: Vec::new(), missing: Some(missing) };
            self.segments.push(segment);
        }
        Joined { segments: self.segments, clamped_ns: self.clamped_ns }
    }

    fn describe(&self, e: &Ev) -> String {
        let d = |device| self.decoder.device_name(device);
        match e.event {
            NetEvent::Send => format!("send syscall (pid {}, cpu {})", e.pid, e.cpu),
            NetEvent::Taken => format!("receive syscall returns (pid {}, cpu {})", e.pid, e.cpu),
            NetEvent::Queue { device, .. } => format!("net_dev_queue {}", d(device)),
            NetEvent::StartXmit { device, .. } => format!("net_dev_start_xmit {} (to its driver)", d(device)),
            NetEvent::Xmit { device, .. } => format!("net_dev_xmit {}", d(device)),
            NetEvent::NetifRx { device, .. } => format!("netif_rx {}", d(device)),
            NetEvent::Receive { device, .. } => format!("netif_receive_skb {} (cpu {})", d(device), e.cpu),
            NetEvent::DataReady { .. } => format!("socket enqueue (cpu {})", e.cpu),
            NetEvent::Copy { .. } => format!("copy to user (pid {}, cpu {})", e.pid, e.cpu),
            NetEvent::Consume { .. } => format!("packet freed after use (pid {}, cpu {})", e.pid, e.cpu),
            NetEvent::Waking { pid } => format!("sched_waking pid {pid} (cpu {})", e.cpu),
            NetEvent::Wakeup { pid, target_cpu } => format!("sched_wakeup pid {pid} on cpu {target_cpu}"),
            NetEvent::SoftirqEntry { vector } => format!("softirq {} (cpu {})", softirq_name(vector), e.cpu),
            NetEvent::SoftirqExit { vector } => format!("softirq {} exit (cpu {})", softirq_name(vector), e.cpu),
            NetEvent::SoftirqRaise { vector } => format!("raise {} (cpu {})", softirq_name(vector), e.cpu),
            NetEvent::IrqEntry { irq } => {
                let name = self.decoder.irq_names.get(&irq).map_or_else(|| format!("irq {irq}"), Clone::clone);
                format!("irq {name} (cpu {})", e.cpu)
            }
        }
    }

    /// The packet's own events in `[from, to]`, each NET_RX softirq that took it in before them.
    fn packet_via(&self, ev: &[Ev], skb: u64, from: u64, to: u64) -> Vec<String> {
        let mut seen: Vec<&Ev> = Vec::new();
        for e in window(ev, from, to).iter().filter(|e| e.event.skb() == Some(skb)) {
            if matches!(e.event, NetEvent::Receive { .. }) {
                let entry =
                    last(ev, from, e.ts, |x| x.cpu == e.cpu && x.event == NetEvent::SoftirqEntry { vector: NET_RX });
                if let Some(entry) = entry.filter(|x| !seen.contains(x)) {
                    seen.push(entry);
                }
            }
            seen.push(e);
        }
        seen.sort_by_key(|e| e.ts);
        seen.into_iter().map(|e| self.describe(e)).collect()
    }
}

fn softirq_name(vector: u32) -> String {
    crate::explain::decode::SOFTIRQS.get(vector as usize).map_or_else(|| format!("softirq {vector}"), |s| s.to_string())
}

/// The events with `from <= ts <= to`.
fn window(ev: &[Ev], from: u64, to: u64) -> &[Ev] {
    let a = ev.partition_point(|e| e.ts < from);
    let b = ev.partition_point(|e| e.ts <= to).max(a);
    &ev[a..b]
}

fn first(ev: &[Ev], from: u64, to: u64, p: impl Fn(&Ev) -> bool) -> Option<&Ev> {
    window(ev, from, to).iter().find(|e| p(e))
}

fn last(ev: &[Ev], from: u64, to: u64, p: impl Fn(&Ev) -> bool) -> Option<&Ev> {
    window(ev, from, to).iter().rev().find(|e| p(e))
}

fn is_queue(e: &Ev) -> bool {
    matches!(e.event, NetEvent::Queue { .. })
}

/// The round trip of a request the client on this host sent and read.
pub fn client(ev: &[Ev], decoder: &Decoder, r: &ClientRequest) -> Joined {
    let mut path = Path::new(decoder, r.intended);
    let outcome = client_steps(ev, &mut path, r);
    path.finish(r.read, outcome)
}

fn client_steps(ev: &[Ev], path: &mut Path, r: &ClientRequest) -> Result<(), &'static str> {
    let sent = match first(ev, r.sent, r.read, |e| e.pid == r.sender && e.event == NetEvent::Send) {
        Some(send) => {
            path.close_at("send_lag", send, vec![path.describe(send)]);
            send.ts
        }
        None => {
            path.close("send_lag", r.sent, None, vec![format!("send syscall (pid {}, by its own clock)", r.sender)]);
            r.sent
        }
    };
    let queue = first(ev, sent, r.read, |e| e.pid == r.sender && is_queue(e)).ok_or("net_dev_queue of the request")?;
    let via = vec![path.describe(queue)];
    path.close_at("client_send", queue, via);
    let skb = queue.event.skb().expect("a queued packet");
    let decoder = path.decoder;
    let to_guest = |e: &Ev| matches!(e.event, NetEvent::Xmit { skb: s, device } if s == skb && decoder.is_tap(device));
    if let Some(out) = first(ev, queue.ts, r.read, to_guest) {
        return through_guest(ev, path, r, skb, out);
    }
    let (xmit, response) = through_server(ev, path, skb, queue.ts, r.read, Server::Not([r.sender, r.receiver]))?;
    let arrived = first(ev, xmit.ts, r.read, |e| matches!(e.event, NetEvent::Receive { skb, .. } if skb == response))
        .ok_or("netif_receive_skb of the response")?;
    let mut via = path.packet_via(ev, response, xmit.ts + 1, r.read);
    let woken = first(ev, arrived.ts, r.read, |e| matches!(e.event, NetEvent::Wakeup { pid, .. } if pid == r.receiver));
    via.extend(woken.map(|w| path.describe(w)));
    path.close("client_receive", r.read, None, via);
    Ok(())
}

/// A request answered by a server on this host, from the first trace of its packet (back to the
/// IRQ that raised the NET_RX softirq taking it in, when there is one) to the response's
/// `net_dev_xmit`: the host's share of the round trip.
pub fn server(ev: &[Ev], decoder: &Decoder, r: &ServerRequest) -> Joined {
    let lookback = r.received.saturating_sub(LOOKBACK_NS);
    let Some(skb) = request_of(ev, decoder, r, lookback) else {
        return Path::new(decoder, r.received).finish(r.answered, Err("the socket enqueue of the request"));
    };
    let this = |e: &Ev| is_receive(e) && e.event.skb() == Some(skb);
    let Some(received) = last(ev, lookback, r.received, this) else {
        return Path::new(decoder, r.received).finish(r.answered, Err("netif_receive_skb of the request"));
    };
    let seen = first_sighting(ev, decoder, received, lookback);
    let (start, mut via) = interrupt_before(ev, decoder, seen);
    let mut path = Path::new(decoder, start);
    let outcome = through_server(ev, &mut path, skb, seen.ts, r.answered, Server::Is(*r)).map(|_| ());
    if let Some(first) = path.segments.first_mut() {
        via.append(&mut first.via);
        first.via = via;
    }
    let end = path.segments.last().map_or(r.answered, |s| s.end);
    path.finish(if outcome.is_ok() { end } else { r.answered }, outcome)
}

/// The packet a server's receive returned: the one whose socket enqueue woke the server for it;
/// the server awake, the last enqueued before it on the socket whose enqueues wake the server.
fn request_of(ev: &[Ev], decoder: &Decoder, r: &ServerRequest, lookback: u64) -> Option<u64> {
    let (before, taken) = (r.waiting.max(lookback), r.received);
    if !decoder.has_data_ready {
        // the packet the server's receive copied to user space, else the one received where the
        // server was woken
        let copied = |e: &Ev| took_in_packet(ev, e, r.server, lookback);
        if let Some(skb) = last(ev, before, taken, copied).and_then(|e| e.event.skb()) {
            return Some(skb);
        }
        let woke = last(ev, before, taken, |e| wakes(decoder, e, r.server))?;
        return last(ev, lookback, woke.ts, |e| same_context(e, woke) && is_receive(e))?.event.skb();
    }
    let woke_server = |e: &Ev| wakes(decoder, e, r.server);
    let enqueue_before = |w: &Ev| last(ev, lookback, w.ts, |e| same_context(e, w) && is_enqueue(e));
    let enqueue = match last(ev, before, taken, woke_server) {
        Some(w) => enqueue_before(w)?,
        None => {
            let socket = last(ev, lookback, taken, woke_server).and_then(enqueue_before)?.event;
            last(ev, lookback, taken, |e| e.event == socket)?
        }
    };
    let received = last(ev, lookback, enqueue.ts, |e| same_context(e, enqueue) && is_receive(e))?;
    received.event.skb()
}

/// Whether `e` is `server` taking a packet in: its copy of the packet to user space, or its
/// freeing of a packet it received (a UDP receive frees the datagram it returned). A packet it
/// frees that was last transmitted - an earlier response, freed by the driver in the server's
/// context - is not one.
fn took_in_packet(ev: &[Ev], e: &Ev, server: u32, from: u64) -> bool {
    let own = |x: &Ev| matches!(x.event, NetEvent::Copy { .. } | NetEvent::Consume { .. });
    match e.event {
        _ if e.pid != server => false,
        NetEvent::Copy { .. } => true,
        NetEvent::Consume { skb } => {
            last(ev, from, e.ts, |x| x.event.skb() == Some(skb) && !own(x)).is_some_and(is_receive)
        }
        _ => false,
    }
}

/// The first trace of the packet received in `received`: back through its devices (transmits,
/// `netif_rx`, queues, the receives of a bridge) to the first of this life of its address - an
/// earlier copy or freeing, a transmit into a tap (to a guest), or a receive before a queue,
/// belongs to a packet that had it before; a packet received from a tap (from a guest) or a NIC (in a guest:
/// virtio-net) began there.
fn first_sighting<'e>(ev: &'e [Ev], decoder: &Decoder, received: &'e Ev, from: u64) -> &'e Ev {
    let skb = received.event.skb();
    let mut seen = received;
    let mut queued = false;
    for e in window(ev, from, received.ts).iter().rev().filter(|e| e.event.skb() == skb) {
        match e.event {
            NetEvent::Copy { .. } | NetEvent::Consume { .. } => break,
            NetEvent::Xmit { device, .. } if decoder.is_tap(device) => break,
            NetEvent::Receive { device, .. } | NetEvent::NetifRx { device, .. }
                if decoder.is_tap(device) || decoder.is_nic(device) =>
            {
                seen = e;
                break;
            }
            NetEvent::Receive { .. } if queued => break,
            NetEvent::Queue { .. } => queued = true,
            _ => {}
        }
        seen = e;
    }
    seen
}

/// Who the server is.
#[derive(Debug, Clone, Copy)]
enum Server {
    /// A server on this host explaining its own requests: this one's thread and times.
    Is(ServerRequest),
    /// The thread the socket enqueue woke, else ([`server_awake`]) the one that took the request
    /// in; not these (the client's sender and reader).
    Not([u32; 2]),
}

fn is_wakeup_of(e: &Ev, thread: u32) -> bool {
    matches!(e.event, NetEvent::Wakeup { pid, .. } if pid == thread)
}

/// Whether `e` is a wake-up of `thread` as the waker records it, in its own context (the socket
/// enqueue's): `sched_waking`; on a kernel without it `sched_wakeup`, which is the waker's only
/// when the woken thread's CPU was busy (else the woken CPU records it, in the IPI).
fn wakes(decoder: &Decoder, e: &Ev, thread: u32) -> bool {
    match e.event {
        NetEvent::Waking { pid } => pid == thread,
        NetEvent::Wakeup { pid, .. } => pid == thread && !decoder.has_waking,
        _ => false,
    }
}

/// The wake-up that `waking` began: the woken thread's `sched_wakeup` (on its CPU), else
/// `waking` itself.
fn woken_by<'e>(ev: &'e [Ev], waking: &'e Ev, thread: u32, until: u64) -> &'e Ev {
    first(ev, waking.ts, until, |e| is_wakeup_of(e, thread)).unwrap_or(waking)
}

/// Whether `e` is thread `pid` taking a packet in: its receive syscall's return, its copy of a
/// packet to user space or its freeing of one (what the trace has of it; for the segments' `via`).
fn takes_in(e: &Ev, pid: u32) -> bool {
    e.pid == pid && matches!(e.event, NetEvent::Taken | NetEvent::Copy { .. } | NetEvent::Consume { .. })
}

/// Whether `e` is thread `pid` sending: its send syscall's entry when syscalls are traced, else
/// the `net_dev_queue` of its packet (the protocol's send work before it is then the server's).
fn sends(decoder: &Decoder, e: &Ev, pid: u32) -> bool {
    e.pid == pid
        && match decoder.has_syscalls {
            true => e.event == NetEvent::Send,
            false => is_queue(e),
        }
}

fn is_enqueue(e: &Ev) -> bool {
    matches!(e.event, NetEvent::DataReady { .. })
}

fn same_context(a: &Ev, b: &Ev) -> bool {
    a.cpu == b.cpu && a.pid == b.pid
}

fn is_receive(e: &Ev) -> bool {
    matches!(e.event, NetEvent::Receive { .. })
}

/// Where a packet first seen in `netif_receive_skb` started: the NET_RX softirq that took it in
/// and the hard IRQ that raised it (a NIC's), when the trace has them on that CPU and it is the
/// first packet that softirq took in (else its own receive).
fn interrupt_before(ev: &[Ev], decoder: &Decoder, seen: &Ev) -> (u64, Vec<String>) {
    let path = Path::new(decoder, 0);
    if !matches!(seen.event, NetEvent::Receive { .. }) {
        return (seen.ts, Vec::new());
    }
    let from = seen.ts.saturating_sub(LOOKBACK_NS);
    let on_cpu = |p: fn(&NetEvent) -> bool| move |e: &Ev| e.cpu == seen.cpu && p(&e.event);
    let entry = last(ev, from, seen.ts, on_cpu(|x| *x == NetEvent::SoftirqEntry { vector: NET_RX }));
    let exited =
        entry.and_then(|s| first(ev, s.ts, seen.ts, on_cpu(|x| *x == NetEvent::SoftirqExit { vector: NET_RX })));
    let Some(entry) = entry.filter(|_| exited.is_none()) else { return (seen.ts, Vec::new()) };
    // a packet taken in after others in the same NET_RX run (NAPI polling on) was not this
    // interrupt's: it begins at its own receive
    let other = |e: &Ev| e.cpu == seen.cpu && is_receive(e) && e.event.skb() != seen.event.skb();
    if window(ev, entry.ts, seen.ts).iter().any(other) {
        return (seen.ts, vec![format!("{} (after other packets in it)", path.describe(entry))]);
    }
    let raise = last(ev, from, entry.ts, on_cpu(|x| *x == NetEvent::SoftirqRaise { vector: NET_RX }));
    let irq = raise.and_then(|r| last(ev, from, r.ts, on_cpu(|x| matches!(x, NetEvent::IrqEntry { .. }))));
    match irq {
        Some(irq) => (irq.ts, vec![path.describe(irq), path.describe(entry)]),
        None => (entry.ts, vec![path.describe(entry)]),
    }
}

/// From the request's packet `skb` queued (or first seen) at `from`: `host_receive` (to the
/// server's wake-up, or the socket enqueue when the server was awake), `server` (to its send
/// syscall) and `host_send` (to the response's `net_dev_xmit` on its first device, or its
/// `net_dev_start_xmit` when that device is a NIC: in a guest the driver's transmit is the kick
/// into the hypervisor, the host's to see). Returns that event and the response's packet.
fn through_server<'e>(
    ev: &'e [Ev],
    path: &mut Path,
    skb: u64,
    from: u64,
    until: u64,
    server: Server,
) -> Result<(&'e Ev, u64), &'static str> {
    let this = |e: &Ev| matches!(e.event, NetEvent::Receive { skb: s, .. } if s == skb);
    let arrived = first(ev, from, until, this).ok_or("netif_receive_skb of the request")?;
    let enqueue = match (path.decoder.has_data_ready, server) {
        (false, Server::Is(r)) => enqueue_without_data_ready(ev, path.decoder, arrived, &r),
        _ => first(ev, arrived.ts, until, |e| same_context(e, arrived) && is_enqueue(e))
            .ok_or("the socket enqueue of the request (sk_data_ready)")?,
    };
    let received = last(ev, arrived.ts, enqueue.ts, this).unwrap_or(arrived);
    let (server, wakeup) = match server {
        Server::Is(r) => (r.server, first(ev, enqueue.ts, r.received, |e| wakes(path.decoder, e, r.server))),
        Server::Not(client) => {
            let next_here = window(ev, enqueue.ts, until).iter().skip(1).find(|e| e.cpu == enqueue.cpu);
            let woke = |pid| !client.contains(&pid) && next_here.is_some_and(|e| wakes(path.decoder, e, pid));
            match next_here.filter(|e| same_context(e, enqueue)).map(|e| (e, e.event)) {
                Some((w, NetEvent::Waking { pid } | NetEvent::Wakeup { pid, .. })) if woke(pid) => (pid, Some(w)),
                _ => (server_awake(ev, path.decoder, arrived, enqueue.ts, until, client)?, None),
            }
        }
    };
    let wakeup = wakeup.map(|w| (w, woken_by(ev, w, server, until)));
    let mut via = path.packet_via(ev, skb, from, received.ts);
    if is_enqueue(enqueue) {
        via.push(path.describe(enqueue));
    }
    match wakeup {
        Some((waking, woken)) => {
            via.push(path.describe(waking));
            if woken != waking {
                via.push(path.describe(woken));
            }
        }
        None => via.push(format!("no wake-up: the server (pid {server}) was awake")),
    }
    let end = wakeup.map_or(enqueue, |(_, woken)| woken);
    path.close_at("host_receive", end, via);
    let send_missing = match path.decoder.has_syscalls {
        true => "the server's send syscall",
        false => "net_dev_queue of the response",
    };
    let send = first(ev, end.ts, until, |e| sends(path.decoder, e, server)).ok_or(send_missing)?;
    let taken = first(ev, end.ts, send.ts, |e| takes_in(e, server));
    let via = taken.into_iter().chain([send]).map(|e| path.describe(e)).collect();
    path.close_at("server", send, via);
    let queue = first(ev, send.ts, until, |e| e.pid == server && is_queue(e)).ok_or("net_dev_queue of the response")?;
    let response = queue.event.skb().expect("a queued packet");
    let decoder = path.decoder;
    let leaves = |e: &Ev| match e.event {
        NetEvent::Xmit { skb, .. } => skb == response,
        NetEvent::StartXmit { skb, device } => skb == response && decoder.is_nic(device),
        _ => false,
    };
    let xmit = first(ev, queue.ts, until, leaves).ok_or("net_dev_xmit of the response")?;
    let via = vec![path.describe(queue), path.describe(xmit)];
    path.close_at("host_send", xmit, via);
    Ok((xmit, response))
}

/// A kernel without `sk_data_ready` (before Linux 6.4): the socket enqueue of the request received
/// in `arrived` stands as the server's wake-up in that context, before the server's receive
/// returns; the server awake, as `arrived` itself.
fn enqueue_without_data_ready<'e>(ev: &'e [Ev], decoder: &Decoder, arrived: &'e Ev, r: &ServerRequest) -> &'e Ev {
    let woken = |e: &Ev| same_context(e, arrived) && wakes(decoder, e, r.server);
    first(ev, arrived.ts, r.received, woken).unwrap_or(arrived)
}

/// The server of a request whose socket enqueue (at `enqueued`, of the packet `arrived`) woke no
/// one: the thread that took it in, other than the client's - by its receive syscall's return
/// when syscalls are traced, else by its copy of this packet to user space, else (a small UDP
/// datagram is copied untraced) by the first packet queued after it, by a thread not the
/// client's, on the device the request arrived on: the response.
fn server_awake(
    ev: &[Ev],
    decoder: &Decoder,
    arrived: &Ev,
    enqueued: u64,
    until: u64,
    client: [u32; 2],
) -> Result<u32, &'static str> {
    let other = |e: &Ev| !client.contains(&e.pid);
    let skb = arrived.event.skb();
    let device = match arrived.event {
        NetEvent::Receive { device, .. } => Some(device),
        _ => None,
    };
    let taken = match decoder.has_syscalls {
        true => first(ev, enqueued, until, |e| other(e) && e.event == NetEvent::Taken),
        false => {
            first(ev, enqueued, until, |e| other(e) && matches!(e.event, NetEvent::Copy { .. }) && e.event.skb() == skb)
                .or_else(|| {
                    first(ev, enqueued, until, |e| {
                        other(e) && matches!(e.event, NetEvent::Queue { device: d, .. } if Some(d) == device)
                    })
                })
        }
    };
    taken.map(|e| e.pid).ok_or(if decoder.has_syscalls {
        "the server's receive syscall return"
    } else {
        "the server's response (net_dev_queue)"
    })
}

/// A server in a guest behind a tap (`--in vm`), from the request's transmit into the tap: the
/// three segments of the host's view (Garcia Alvarado 2019's host receive, guest, host send) and
/// the client's read. `host_receive` ends where the request leaves the host's stack into the tap,
/// to the hypervisor's user-space half (QEMU); the virtual interrupt into the guest is visible
/// only with `kvm_*` events. `guest` lasts until the response enters the host through the tap
/// (QEMU's write); the response is the packet the client's receive returned, found back from that
/// receive, so responses out of order or several requests in flight are not confused. `host_send`
/// ends at the client's wake-up (its socket enqueue when it was awake).
fn through_guest(ev: &[Ev], path: &mut Path, r: &ClientRequest, skb: u64, out: &Ev) -> Result<(), &'static str> {
    let via = path.packet_via(ev, skb, path.cursor, out.ts);
    path.close_at("host_receive", out, via);
    let reader = ServerRequest { seq: r.seq, server: r.receiver, waiting: r.sent, received: r.read, answered: r.read };
    let response = request_of(ev, path.decoder, &reader, out.ts).ok_or("the socket enqueue of the response")?;
    let is_response = |e: &Ev| is_receive(e) && e.event.skb() == Some(response);
    let received = last(ev, out.ts, r.read, is_response).expect("the response was received");
    let entered = first_sighting(ev, path.decoder, received, out.ts);
    let via = vec![
        format!("{} (into the guest)", path.describe(out)),
        format!("{} (from the guest)", path.describe(entered)),
    ];
    path.close("guest", entered.ts, None, via);
    let enqueue = first(ev, received.ts, r.read, |e| same_context(e, received) && is_enqueue(e))
        .ok_or("the socket enqueue of the response")?;
    let waking = first(ev, enqueue.ts, r.read, |e| same_context(e, enqueue) && wakes(path.decoder, e, r.receiver));
    let mut via = path.packet_via(ev, response, entered.ts, received.ts);
    via.push(path.describe(enqueue));
    let end = match waking {
        Some(w) => {
            let woken = woken_by(ev, w, r.receiver, r.read);
            via.push(path.describe(w));
            if woken != w {
                via.push(path.describe(woken));
            }
            woken
        }
        None => {
            via.push(format!("no wake-up: the client (pid {}) was awake", r.receiver));
            enqueue
        }
    };
    path.close_at("host_send", end, via);
    let taken = last(ev, end.ts, r.read, |e| takes_in(e, r.receiver));
    path.close("client_receive", r.read, None, taken.map(|t| path.describe(t)).into_iter().collect());
    Ok(())
}
