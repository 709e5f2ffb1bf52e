//! One request's path, joined from the time-ordered events of every CPU: by thread (the client's
//! send syscall and the packet it queues; the thread that copies that packet to user space - the
//! server - and the packet it queues after its own send syscall) and by packet address (skbaddr)
//! through the devices (bridge, veth, loopback), the NET_RX softirq, the socket and the wake-up.
//! Each search is bounded by the request's own time span, so a packet address the kernel reuses
//! for a later packet is never mistaken for this one.
//!
//! The segments are consecutive: each ends where the next starts, the first starts at the
//! client's intended send time (or, on a server, at the first trace of the request's packet) and
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
            NetEvent::Queue { device, .. } => format!("net_dev_queue {}", d(device)),
            NetEvent::Xmit { device, .. } => format!("net_dev_xmit {}", d(device)),
            NetEvent::NetifRx { device, .. } => format!("netif_rx {}", d(device)),
            NetEvent::Receive { device, .. } => format!("netif_receive_skb {} (cpu {})", d(device), e.cpu),
            NetEvent::NapiPoll { device, work } => format!("napi_poll {} work {work} (cpu {})", d(device), e.cpu),
            NetEvent::DataReady => format!("socket enqueue (cpu {})", e.cpu),
            NetEvent::Copy { .. } => format!("copy to user (pid {}, cpu {})", e.pid, e.cpu),
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
    let send = first(ev, r.sent, r.read, |e| e.pid == r.sender && e.event == NetEvent::Send)
        .ok_or("the client's send syscall")?;
    let queue =
        first(ev, send.ts, r.read, |e| e.pid == r.sender && is_queue(e)).ok_or("net_dev_queue of the request")?;
    let via = vec![path.describe(send), path.describe(queue)];
    path.close_at("client_send", queue, via);
    let skb = queue.event.skb().expect("a queued packet");
    let (xmit, response) = through_server(ev, path, skb, queue.ts, r.read, r.receiver)?;
    let copy = first(ev, xmit.ts, r.read, |e| e.pid == r.receiver && e.event == NetEvent::Copy { skb: response })
        .ok_or("the client's copy of the response")?;
    let mut via = path.packet_via(ev, response, xmit.ts + 1, copy.ts);
    let woken = first(ev, xmit.ts, copy.ts, |e| matches!(e.event, NetEvent::Wakeup { pid, .. } if pid == r.receiver));
    via.extend(woken.map(|w| path.describe(w)));
    via.push(path.describe(copy));
    path.close("client_receive", r.read, Some(copy.cpu), via);
    Ok(())
}

/// A request answered by a server on this host, from the first trace of its packet (back to the
/// IRQ that raised the NET_RX softirq taking it in, when there is one) to the response's
/// `net_dev_xmit`: the host's share of the round trip.
pub fn server(ev: &[Ev], decoder: &Decoder, r: &ServerRequest) -> Joined {
    let lookback = r.received.saturating_sub(LOOKBACK_NS);
    let copy = last(ev, lookback, r.received, |e| e.pid == r.server && matches!(e.event, NetEvent::Copy { .. }));
    let Some((copy, skb)) = copy.and_then(|c| Some((c, c.event.skb()?))) else {
        return Path::new(decoder, r.received).finish(r.answered, Err("the server's copy of the request"));
    };
    let previous = last(ev, lookback, copy.ts.saturating_sub(1), |e| e.event == NetEvent::Copy { skb });
    let from = previous.map_or(lookback, |p| p.ts + 1);
    let seen = first(ev, from, copy.ts, |e| e.event.skb() == Some(skb)).unwrap_or(copy);
    let (start, mut via) = interrupt_before(ev, decoder, seen);
    let mut path = Path::new(decoder, start);
    let outcome = through_server(ev, &mut path, skb, seen.ts, r.answered, 0).map(|_| ());
    if let Some(first) = path.segments.first_mut() {
        via.append(&mut first.via);
        first.via = via;
    }
    let end = path.segments.last().map_or(r.answered, |s| s.end);
    path.finish(if outcome.is_ok() { end } else { r.answered }, outcome)
}

/// Where a packet first seen in `netif_receive_skb` started: the NET_RX softirq that took it in
/// and the hard IRQ that raised it (a NIC's), when the trace has them on that CPU.
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
    let raise = last(ev, from, entry.ts, on_cpu(|x| *x == NetEvent::SoftirqRaise { vector: NET_RX }));
    let irq = raise.and_then(|r| last(ev, from, r.ts, on_cpu(|x| matches!(x, NetEvent::IrqEntry { .. }))));
    match irq {
        Some(irq) => (irq.ts, vec![path.describe(irq), path.describe(entry)]),
        None => (entry.ts, vec![path.describe(entry)]),
    }
}

/// From the request's packet `skb` queued (or first seen) at `from`: `host_receive` (to the
/// server's wake-up, or the socket enqueue when the server was awake), `server` (to its send
/// syscall) and `host_send` (to the response's `net_dev_xmit` on its first device). Returns that
/// event and the response's packet. `not_server`: a thread whose copy is not the server's (the
/// client's reader).
fn through_server<'e>(
    ev: &'e [Ev],
    path: &mut Path,
    skb: u64,
    from: u64,
    until: u64,
    not_server: u32,
) -> Result<(&'e Ev, u64), &'static str> {
    let copy = first(ev, from, until, |e| e.event == NetEvent::Copy { skb } && e.pid != not_server)
        .ok_or("the server's copy of the request (skb_copy_datagram_iovec)")?;
    let server = copy.pid;
    let received = last(ev, from, copy.ts, |e| matches!(e.event, NetEvent::Receive { skb: s, .. } if s == skb))
        .ok_or("netif_receive_skb of the request")?;
    let enqueue = first(ev, received.ts, copy.ts, |e| e.cpu == received.cpu && e.event == NetEvent::DataReady);
    let wakeup = first(ev, received.ts, copy.ts, |e| matches!(e.event, NetEvent::Wakeup { pid, .. } if pid == server));
    let mut via = path.packet_via(ev, skb, from, received.ts);
    via.extend(enqueue.map(|e| path.describe(e)));
    match wakeup {
        Some(w) => via.push(path.describe(w)),
        None => via.push(format!("no wake-up: the server (pid {server}) was awake")),
    }
    let end = wakeup.or(enqueue).unwrap_or(received);
    path.close_at("host_receive", end, via);
    let send = first(ev, copy.ts, until, |e| e.pid == server && e.event == NetEvent::Send)
        .ok_or("the server's send syscall")?;
    let via = vec![path.describe(copy), path.describe(send)];
    path.close_at("server", send, via);
    let queue = first(ev, send.ts, until, |e| e.pid == server && is_queue(e)).ok_or("net_dev_queue of the response")?;
    let response = queue.event.skb().expect("a queued packet");
    let xmit = first(ev, queue.ts, until, |e| matches!(e.event, NetEvent::Xmit { skb, .. } if skb == response))
        .ok_or("net_dev_xmit of the response")?;
    let via = vec![path.describe(queue), path.describe(xmit)];
    path.close_at("host_send", xmit, via);
    Ok((xmit, response))
}
