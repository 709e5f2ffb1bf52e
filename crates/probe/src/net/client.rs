//! The request/response client. Paced arrivals are open loop: a sender thread sends request i at
//! its intended time t_i whatever happened to earlier requests, and the RTT of request i is
//! (response read) - t_i, so a slow response also delays nothing and hides nothing (no coordinated
//! omission); how late the sender itself was is reported as `send_lag_ns`. Back-to-back is closed
//! loop: the next request leaves when the previous response arrived (sockperf ping-pong).

use super::arrivals::Arrivals;
use super::{timestamps, wire, Protocol};
use crate::error::{Context, Error, Result};
use crate::explain::net::join::ClientRequest;
use crate::explain::net::{NetExplainer, NetSink, Request, Side};
use crate::explain::ExplainConfig;
use crate::rt;
use rand::SeedableRng;
use rtvirt_model::results::{NetSection, Results};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::Nanos;
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub connect: SocketAddr,
    pub protocol: Protocol,
    /// Message size in bytes (request = response), at least the 32-byte header.
    pub size: usize,
    pub arrivals: Arrivals,
    pub duration: Nanos,
    /// A response later than this counts as a timeout (it is still a sample if it arrives).
    pub timeout: Nanos,
    pub seed: u64,
    /// Allow a run over one hour ([`crate::limits::check_duration`]).
    pub force: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connect: SocketAddr::from(([127, 0, 0, 1], 9000)),
            protocol: Protocol::Udp,
            size: 64,
            arrivals: super::arrivals::DEFAULT,
            duration: Nanos::from_secs(10),
            timeout: Nanos::from_secs(1),
            seed: 1,
            force: false,
        }
    }
}

impl ClientConfig {
    pub fn validate(&self) -> Result<()> {
        let max = match self.protocol {
            Protocol::Udp => wire::MAX_UDP,
            Protocol::Tcp => wire::MAX_TCP_FRAME,
        };
        if self.size < wire::HEADER || self.size > max {
            return Err(Error::input(
                "--size",
                format!("{} bytes: expected {}..={max} for {}", self.size, wire::HEADER, self.protocol.as_str()),
            ));
        }
        crate::limits::check_duration("--duration", self.duration, self.force)?;
        if self.timeout.0 == 0 {
            return Err(Error::input("--timeout", "must be more than 0"));
        }
        Ok(())
    }
}

/// What the receive side accumulates.
#[derive(Default)]
struct Tally {
    rtt: LatencyHistogram,
    kernel_rtt: LatencyHistogram,
    /// Kernel TX stamp -> kernel RX stamp.
    kernel_to_kernel: LatencyHistogram,
    rx_wakeup: LatencyHistogram,
    send_lag: LatencyHistogram,
    responses: u64,
    /// Responses that came, but later than the timeout.
    late: u64,
    duplicates: u64,
    unexpected: u64,
    seen: Vec<u64>,
    /// A send waited the whole write timeout (TCP peer not reading): the sending stopped there.
    send_blocked: bool,
}

impl Tally {
    /// Account one response (read at `r.now`; kernel stamps if known); false if it is not one
    /// (unexpected or a duplicate).
    fn response(&mut self, response: Response, sent: u64, timeout: u64) -> bool {
        let (h, now) = (response.header, response.now);
        let (word, bit) = ((h.seq / 64) as usize, 1u64 << (h.seq % 64));
        if h.seq >= sent {
            self.unexpected += 1;
            return false;
        }
        if self.seen.len() <= word {
            self.seen.resize(word + 1, 0);
        }
        if self.seen[word] & bit != 0 {
            self.duplicates += 1;
            return false;
        }
        self.seen[word] |= bit;
        self.responses += 1;
        let rtt = now.saturating_sub(h.intended_ns);
        self.rtt.record(rtt);
        if rtt > timeout {
            self.late += 1;
        }
        if let Some(k) = response.kernel_rx {
            self.kernel_rtt.record(k.saturating_sub(h.sent_ns));
            self.rx_wakeup.record(now.saturating_sub(k));
            if let Some(tx) = response.kernel_tx.filter(|&tx| tx <= k) {
                self.kernel_to_kernel.record(k.saturating_sub(tx));
            }
        }
        true
    }
}

/// Hands each response's times to the explainer (`--explain`).
struct Explaining {
    sink: NetSink,
    /// The sending thread (the open loop's sender sets it when it starts).
    sender: AtomicU32,
}

impl Explaining {
    fn response(&self, header: &wire::Header, read: u64, receiver: u32) {
        self.sink.send(Request::Client(ClientRequest {
            seq: header.seq,
            sender: self.sender.load(Ordering::Relaxed),
            receiver,
            intended: header.intended_ns,
            sent: header.sent_ns,
            read,
        }));
    }
}

/// A response accounted, and handed to the explainer when there is one.
fn accept(tally: &mut Tally, r: Response, sent: u64, timeout: u64, explaining: Option<&Explaining>, tid: u32) {
    let (header, read) = (r.header, r.now);
    if tally.response(r, sent, timeout) {
        if let Some(e) = explaining {
            e.response(&header, read, tid);
        }
    }
}

/// Run the client and return its results document (`kind: "net"`).
pub fn run(cfg: &ClientConfig) -> Result<Results> {
    run_explained(cfg, None)
}

/// Run the client; with `explain`, each round trip's path on this host is joined from a kernel
/// trace (section `explain`, [`crate::explain::net`]). The calling thread and its sender thread
/// must have names starting with `rtvirt` (the trace keeps only rtvirt's threads' syscalls).
pub fn run_explained(cfg: &ClientConfig, explain: Option<&ExplainConfig>) -> Result<Results> {
    cfg.validate()?;
    let mut explainer = explain.map(|e| NetExplainer::start(e.clone(), Side::Client));
    let conn = Conn::open(cfg)?;
    let start = rt::now_ns();
    if let Some(e) = explainer.as_mut() {
        e.set_run_start(start);
    }
    let explaining = explainer.as_ref().map(|e| Explaining { sink: e.sink(), sender: AtomicU32::new(0) });
    let done = AtomicBool::new(false);
    let (measured, explained) = std::thread::scope(|s| {
        let reader = explainer.map(|e| {
            std::thread::Builder::new()
                .name(crate::explain::net::events::READER_THREAD.into())
                .spawn_scoped(s, || e.run(&done))
                .expect("spawn the trace reader")
        });
        let measured = match cfg.arrivals {
            Arrivals::BackToBack => closed_loop(cfg, &conn, start, explaining.as_ref()),
            _ => open_loop(cfg, &conn, start, explaining.as_ref()),
        };
        done.store(true, Ordering::Release);
        let explained = reader.map(|h| h.join().map_err(|_| Error::Failed("the trace reader panicked".into())));
        (measured, explained)
    });
    let (tally, requests) = measured?;
    let mut results = assemble(cfg, tally, requests, rt::now_ns() - start, conn.kernel_timestamps);
    results.explain = explained.transpose()?;
    Ok(results)
}

/// A connected UDP socket or TCP stream.
struct Conn {
    udp: Option<UdpSocket>,
    tcp: Option<TcpStream>,
    kernel_timestamps: timestamps::Enabled,
    clock: timestamps::ClockMap,
    /// Bytes of one request on the wire (TCP: with its 4-byte length).
    frame: u64,
}

impl Conn {
    fn open(cfg: &ClientConfig) -> Result<Conn> {
        let what = || format!("cannot reach the server at {} ({})", cfg.connect, cfg.protocol.as_str());
        let poll = Some(Duration::from_millis(20));
        match cfg.protocol {
            Protocol::Udp => {
                let local: SocketAddr = if cfg.connect.is_ipv4() {
                    "0.0.0.0:0".parse().expect("addr")
                } else {
                    "[::]:0".parse().expect("addr")
                };
                let s = UdpSocket::bind(local).context(what)?;
                s.connect(cfg.connect).context(what)?;
                s.set_read_timeout(poll).context(what)?;
                let ts = timestamps::enable(s.as_raw_fd());
                Ok(Conn {
                    udp: Some(s),
                    tcp: None,
                    kernel_timestamps: ts,
                    clock: timestamps::ClockMap::now(),
                    frame: cfg.size as u64,
                })
            }
            Protocol::Tcp => {
                let s = TcpStream::connect_timeout(&cfg.connect, Duration::from_secs(3)).context(what)?;
                s.set_nodelay(true).context(what)?;
                s.set_read_timeout(poll).context(what)?;
                // A server that stops reading must not block the sender past the run: a send
                // blocked for --timeout ends the sending (the rest counts as lost/timeouts).
                s.set_write_timeout(Some(Duration::from_nanos(cfg.timeout.0))).context(what)?;
                let ts = timestamps::enable(s.as_raw_fd());
                Ok(Conn {
                    udp: None,
                    tcp: Some(s),
                    kernel_timestamps: ts,
                    clock: timestamps::ClockMap::now(),
                    frame: 4 + cfg.size as u64,
                })
            }
        }
    }

    fn send(&self, msg: &[u8]) -> std::io::Result<()> {
        match (&self.udp, &self.tcp) {
            (Some(u), _) => u.send(msg).map(|_| ()),
            (_, Some(t)) => {
                let mut w = t;
                let mut frame = Vec::with_capacity(4 + msg.len());
                frame.extend_from_slice(&(msg.len() as u32).to_be_bytes());
                frame.extend_from_slice(msg);
                w.write_all(&frame)
            }
            _ => unreachable!("a connection is UDP or TCP"),
        }
    }
}

/// One response read: header, user-space time read, kernel RX and TX stamps (monotonic).
struct Response {
    header: wire::Header,
    now: u64,
    kernel_rx: Option<u64>,
    kernel_tx: Option<u64>,
}

/// Reads responses (one receiving side per connection). TCP: at most one read per call, and
/// only while no whole frame is pending, so `pending` stays below two frames' worth.
struct Receiver {
    /// The request size: the only length a response can have (the server echoes requests).
    size: usize,
    buf: Vec<u8>,
    pending: Vec<u8>,
    last_kernel_rx: Option<u64>,
    tx: timestamps::TxStamps,
}

impl Receiver {
    fn new(size: usize) -> Receiver {
        Receiver {
            size,
            buf: vec![0u8; size.max(wire::HEADER) + 4 + 1024],
            pending: Vec::new(),
            last_kernel_rx: None,
            tx: Default::default(),
        }
    }

    /// The response, with the kernel transmit stamp of its request (from the error queue).
    fn response(
        &mut self,
        conn: &Conn,
        fd: std::os::fd::RawFd,
        header: wire::Header,
        now: u64,
        kernel_rx: Option<u64>,
    ) -> Response {
        let mut kernel_tx = None;
        if conn.kernel_timestamps.tx {
            self.tx.drain(fd);
            // OPT_ID key: UDP numbers sends from 0; TCP names the offset of the request's last byte.
            let key = if conn.udp.is_some() { header.seq } else { (header.seq + 1) * conn.frame - 1 };
            kernel_tx = self.tx.get(key as u32).map(|t| conn.clock.to_monotonic(t));
        }
        Response { header, now, kernel_rx, kernel_tx }
    }

    /// Next response; None on poll timeout.
    fn next(&mut self, conn: &Conn) -> Result<Option<Response>> {
        if let Some(u) = &conn.udp {
            return match timestamps::recv(u.as_raw_fd(), &mut self.buf, true) {
                Ok(r) => {
                    let now = rt::now_ns();
                    let k = r.kernel_rx_realtime_ns.map(|t| conn.clock.to_monotonic(t));
                    Ok(wire::decode(&self.buf[..r.len]).map(|h| self.response(conn, u.as_raw_fd(), h, now, k)))
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    Ok(None)
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    Err(Error::Failed(format!("the server refused the requests (nothing listens there?): {e}")))
                }
                Err(e) => Err(Error::os("receive failed", e)),
            };
        }
        let fd = conn.tcp.as_ref().expect("tcp").as_raw_fd();
        if let Some(r) = self.frame(conn, fd)? {
            return Ok(Some(r));
        }
        match timestamps::recv(fd, &mut self.buf, false) {
            Ok(r) if r.len == 0 => return Err(Error::Failed("the server closed the connection".into())),
            Ok(r) => {
                self.pending.extend_from_slice(&self.buf[..r.len]);
                // The stamp of the segment that completed the frame (the last one read).
                self.last_kernel_rx = r.kernel_rx_realtime_ns.map(|k| conn.clock.to_monotonic(k));
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                return Ok(None)
            }
            Err(e) => return Err(Error::os("receive failed", e)),
        }
        self.frame(conn, fd)
    }

    /// The TCP response whole in `pending`, taken out of it; None while it is incomplete. A
    /// length other than the request size is refused as soon as it is read, never buffered.
    fn frame(&mut self, conn: &Conn, fd: std::os::fd::RawFd) -> Result<Option<Response>> {
        let Some(length) = self.pending.first_chunk::<4>() else { return Ok(None) };
        let len = u32::from_be_bytes(*length) as usize;
        if len != self.size {
            return Err(Error::Failed(format!(
                "the server announced a {len}-byte response to {}-byte requests: an rtvirt net server echoes each \
                 request unchanged (is it one?)",
                self.size
            )));
        }
        if self.pending.len() < 4 + len {
            return Ok(None);
        }
        let h = wire::decode(&self.pending[4..4 + len]);
        self.pending.drain(..4 + len);
        let now = rt::now_ns();
        match h {
            Some(h) => Ok(Some(self.response(conn, fd, h, now, self.last_kernel_rx))),
            None => Err(Error::Failed("the server sent a malformed response".into())),
        }
    }
}

/// A send that waited the whole write timeout (TCP peer not reading).
fn is_blocked(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn stopped() -> bool {
    rtvirt_os::signals::interrupted()
}

/// Once the sending has ended the receiver waits `--timeout` for the responses in flight; after
/// Ctrl-C at most this long (a long `--timeout` must not hold an interrupted run).
const DRAIN_AFTER_INTERRUPT_NS: u64 = 200_000_000;

/// Closed loop: send, wait for the response (or the timeout), repeat.
fn closed_loop(cfg: &ClientConfig, conn: &Conn, start: u64, explaining: Option<&Explaining>) -> Result<(Tally, u64)> {
    let end = start + cfg.duration.0;
    let tid = rt::gettid() as u32;
    if let Some(e) = explaining {
        e.sender.store(tid, Ordering::Relaxed);
    }
    let (mut tally, mut rx) = (Tally::default(), Receiver::new(cfg.size));
    let mut msg = vec![0u8; cfg.size];
    let mut seq = 0;
    while rt::now_ns() < end && !stopped() {
        let t = rt::now_ns();
        wire::encode(&wire::Header { seq, intended_ns: t, sent_ns: t }, &mut msg);
        match conn.send(&msg) {
            Err(e) if is_blocked(&e) => {
                tally.send_blocked = true;
                break;
            }
            r => r.context(|| "send failed".into())?,
        }
        seq += 1;
        tally.send_lag.record(0);
        while rt::now_ns() < t + cfg.timeout.0 && !stopped() {
            if let Some(r) = rx.next(conn)? {
                let current = r.header.seq == seq - 1;
                accept(&mut tally, r, seq, cfg.timeout.0, explaining, tid);
                if current {
                    break;
                }
            }
        }
    }
    Ok((tally, seq))
}

/// Open loop: a sender thread at the intended times, this thread receiving.
fn open_loop(cfg: &ClientConfig, conn: &Conn, start: u64, explaining: Option<&Explaining>) -> Result<(Tally, u64)> {
    let send_blocked = AtomicBool::new(false);
    let end = start + cfg.duration.0;
    let sent = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(cfg.seed);
    std::thread::scope(|s| {
        let sending = || -> Result<LatencyHistogram> {
            if let Some(e) = explaining {
                e.sender.store(rt::gettid() as u32, Ordering::Relaxed);
            }
            let mut lag = LatencyHistogram::new();
            let mut msg = vec![0u8; cfg.size];
            let mut intended = start + cfg.arrivals.gap(&mut rng);
            let mut seq = 0;
            while intended < end && rt::sleep_until_or_stopped(intended, &done) {
                let now = rt::now_ns();
                wire::encode(&wire::Header { seq, intended_ns: intended, sent_ns: now }, &mut msg);
                sent.store(seq + 1, Ordering::SeqCst); // before sending: the response may beat us
                let r = conn.send(&msg);
                if let Err(e) = r {
                    if is_blocked(&e) {
                        // The request may be partly written: it and the rest are lost.
                        send_blocked.store(true, Ordering::SeqCst);
                        break;
                    }
                    if e.kind() != ErrorKind::ConnectionRefused {
                        done.store(true, Ordering::SeqCst);
                        return Err(Error::os("send failed", e));
                    }
                }
                lag.record(now - intended);
                seq += 1;
                intended += cfg.arrivals.gap(&mut rng).max(1);
            }
            done.store(true, Ordering::SeqCst);
            Ok(lag)
        };
        let sender = std::thread::Builder::new()
            .name(crate::explain::net::events::SENDER_THREAD.into())
            .spawn_scoped(s, sending)
            .expect("spawn the sender thread");
        let mut tally = Tally::default();
        let mut rx = Receiver::new(cfg.size);
        let mut drain_until = u64::MAX;
        let tid = rt::gettid() as u32;
        let mut refused = None;
        loop {
            if done.load(Ordering::SeqCst) {
                let now = rt::now_ns();
                if drain_until == u64::MAX {
                    drain_until = now + cfg.timeout.0;
                }
                if stopped() {
                    drain_until = drain_until.min(now + DRAIN_AFTER_INTERRUPT_NS);
                }
            }
            if rt::now_ns() >= drain_until
                || (drain_until != u64::MAX && tally.responses >= sent.load(Ordering::SeqCst))
            {
                break;
            }
            match rx.next(conn) {
                Ok(Some(r)) => accept(&mut tally, r, sent.load(Ordering::SeqCst), cfg.timeout.0, explaining, tid),
                Ok(None) => {}
                Err(e @ Error::Failed(_)) if conn.udp.is_some() => refused = Some(e),
                Err(e) => {
                    done.store(true, Ordering::SeqCst);
                    let _ = sender.join();
                    return Err(e);
                }
            }
        }
        tally.send_lag = sender.join().unwrap_or_else(|_| Err(Error::Failed("sender thread panicked".into())))?;
        tally.send_blocked = send_blocked.load(Ordering::SeqCst);
        if tally.responses == 0 {
            if let Some(e) = refused {
                return Err(e);
            }
        }
        Ok((tally, sent.load(Ordering::SeqCst)))
    })
}

fn assemble(cfg: &ClientConfig, tally: Tally, requests: u64, elapsed: u64, kernel_ts: timestamps::Enabled) -> Results {
    let mut r = Results::new("net", elapsed);
    r.rtt_ns = Some(tally.rtt.summary());
    let lost = requests.saturating_sub(tally.responses);
    let sending = elapsed.min(cfg.duration.0) as f64 / 1e9;
    let kernel_rx = kernel_ts.rx && tally.kernel_rtt.count() > 0;
    r.net = Some(NetSection {
        achieved_rate: Some(requests as f64 / sending.max(1e-9)),
        arrivals: Some(cfg.arrivals.to_string()),
        duplicates: Some(tally.duplicates),
        kernel_timestamps: Some((if kernel_ts.rx { "software (SO_TIMESTAMPING)" } else { "unavailable" }).into()),
        kernel_tx_timestamps: Some(kernel_ts.tx),
        late: Some(tally.late),
        lost: Some(lost),
        open_loop: Some(cfg.arrivals != Arrivals::BackToBack),
        protocol: Some(cfg.protocol.as_str().into()),
        requested_rate: Some(cfg.arrivals.rate()),
        requests: Some(requests),
        responses: Some(tally.responses),
        rtt_kernel_ns: (tally.kernel_to_kernel.count() > 0).then(|| tally.kernel_to_kernel.summary()),
        rtt_kernel_rx_ns: kernel_rx.then(|| tally.kernel_rtt.summary()),
        rx_wakeup_ns: kernel_rx.then(|| tally.rx_wakeup.summary()),
        send_blocked: Some(tally.send_blocked),
        send_lag_ns: Some(tally.send_lag.summary()),
        server: Some(cfg.connect.to_string()),
        size: Some(cfg.size as u64),
        timeout_ns: Some(cfg.timeout.0),
        // Every request whose response did not come within the timeout: late ones and lost ones.
        timeouts: Some(tally.late + lost),
        unexpected: Some(tally.unexpected),
    });
    r.interrupted = rtvirt_os::signals::interrupted();
    r.environment = Some(crate::environment::collect());
    r
}
