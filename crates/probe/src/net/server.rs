//! The request/response server (UDP or TCP). It echoes every well-formed message after an
//! optional service time, and drops malformed, truncated and oversized input without growing
//! memory: fixed buffers, at most [`MAX_CONNECTIONS`] TCP connections. A TCP connection must make
//! progress or give its slot up (slowloris guard): a request arrives whole within
//! [`REQUEST_TIMEOUT`] of its first byte and its response is taken within it, a connection idle
//! for [`IDLE_TIMEOUT`] is closed, and one idle past [`REQUEST_TIMEOUT`] is closed as soon as
//! another connection waits for a slot.
//!
//! It also receives streams (`measure net client --stream`, messages of [`stream_wire`]): it
//! counts them and sends the sender its receipt.

use super::stream_wire;
use super::wire;
use super::Protocol;
use crate::error::{Context, Error, Result};
use crate::explain::net::join::ServerRequest;
use crate::explain::net::{NetSink, Request};
use crate::rt;
use serde::Serialize;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// TCP connections served at once; more wait in the listen backlog for a free slot.
pub const MAX_CONNECTIONS: u64 = 64;
/// A TCP connection that sends nothing for this long after its last response is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// A request must arrive whole within this time from its first byte, and its response must be
/// taken by the client within this time; else the connection is closed (slowloris guard). A
/// connection idle longer than this is closed when another waits for its slot.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(50);
const ACCEPT_POLL: Duration = Duration::from_millis(5);

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub protocol: Protocol,
    /// Time the server waits (sleeping) before answering each request.
    pub service_time_ns: u64,
}

/// What the server saw.
#[derive(Debug, Default, Serialize)]
pub struct ServerStats {
    pub requests: AtomicU64,
    pub responses: AtomicU64,
    pub malformed: AtomicU64,
    pub truncated: AtomicU64,
    pub oversized: AtomicU64,
    pub connections: AtomicU64,
    /// Requests not received whole within [`REQUEST_TIMEOUT`] of their first byte: closed.
    pub slow_requests: AtomicU64,
    /// Idle connections closed to make room for a waiting one.
    pub closed_idle: AtomicU64,
}

enum Socket {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

/// A bound server; [`Server::serve`] runs it until the stop flag is raised.
pub struct Server {
    cfg: ServerConfig,
    socket: Socket,
    pub stats: Arc<ServerStats>,
    /// `--explain`: where each answered request's times go.
    explaining: Option<NetSink>,
}

impl Server {
    /// Bind the address (port in use, address not local: an error that says so).
    pub fn bind(cfg: &ServerConfig) -> Result<Server> {
        let what = || format!("cannot listen on {} ({})", cfg.listen, cfg.protocol.as_str());
        let socket = match cfg.protocol {
            Protocol::Udp => {
                let s = UdpSocket::bind(cfg.listen).context(what)?;
                s.set_read_timeout(Some(POLL)).context(what)?;
                Socket::Udp(s)
            }
            Protocol::Tcp => {
                let l = TcpListener::bind(cfg.listen).context(what)?;
                l.set_nonblocking(true).context(what)?;
                Socket::Tcp(l)
            }
        };
        Ok(Server { cfg: cfg.clone(), socket, stats: Arc::new(ServerStats::default()), explaining: None })
    }

    /// Hand each answered request's times to an explainer ([`crate::explain::net`]); the serving
    /// threads' names must start with `rtvirt` (the trace keeps only rtvirt's threads' syscalls).
    pub fn explain_to(&mut self, sink: NetSink) {
        self.explaining = Some(sink);
    }

    /// Tell the explainer about a request answered between `received` and now, taken by a
    /// receive entered at `waiting`.
    fn answered(&self, message: &[u8], waiting: u64, received: u64) {
        let (Some(sink), Some(header)) = (&self.explaining, wire::decode(message)) else { return };
        let server = rt::gettid() as u32;
        let answered = rt::now_ns();
        sink.send(Request::Server(ServerRequest { seq: header.seq, server, waiting, received, answered }));
    }

    /// The address really bound (port 0 resolved).
    pub fn local_addr(&self) -> SocketAddr {
        match &self.socket {
            Socket::Udp(s) => s.local_addr().unwrap_or(self.cfg.listen),
            Socket::Tcp(l) => l.local_addr().unwrap_or(self.cfg.listen),
        }
    }

    /// Serve until `stop` (or Ctrl-C).
    pub fn serve(&self, stop: &AtomicBool) -> Result<()> {
        match &self.socket {
            Socket::Udp(s) => self.serve_udp(s, stop),
            Socket::Tcp(l) => self.serve_tcp(l, stop),
        }
    }

    fn stopped(stop: &AtomicBool) -> bool {
        stop.load(Ordering::Relaxed) || rtvirt_os::signals::interrupted()
    }

    fn serve_udp(&self, socket: &UdpSocket, stop: &AtomicBool) -> Result<()> {
        let mut buf = vec![0u8; wire::MAX_UDP + 1];
        let st = &self.stats;
        let mut streams = stream_wire::Streams::default();
        while !Self::stopped(stop) {
            let waiting = rt::now_ns();
            let (n, peer) = match socket.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    continue
                }
                Err(e) => return Err(Error::os("UDP server receive failed", e)),
            };
            let received = rt::now_ns();
            if let Some(h) = stream_wire::decode(&buf[..n.min(wire::MAX_UDP)]) {
                match h.kind {
                    stream_wire::MessageType::Data => streams.datagram(&h, n),
                    stream_wire::MessageType::End => {
                        let _ =
                            socket.send_to(&stream_wire::encode_receipt(h.stream, &streams.receipt(h.stream)), peer);
                    }
                    _ => count(&st.malformed),
                }
                continue;
            }
            st.requests.fetch_add(1, Ordering::Relaxed);
            if n > wire::MAX_UDP {
                st.oversized.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if wire::decode(&buf[..n]).is_none() {
                st.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.service(stop);
            if socket.send_to(&buf[..n], peer).is_ok() {
                st.responses.fetch_add(1, Ordering::Relaxed);
                self.answered(&buf[..n], waiting, received);
            }
        }
        Ok(())
    }

    /// The service time (an optional sleep), cut short when the server stops.
    fn service(&self, stop: &AtomicBool) {
        if self.cfg.service_time_ns > 0 {
            rt::sleep_until_or_stopped(rt::now_ns() + self.cfg.service_time_ns, stop);
        }
    }

    /// Accept while a slot is free; while every slot is taken, new connections wait in the
    /// kernel's listen backlog, and if one waits, the connection idle longest (past
    /// [`REQUEST_TIMEOUT`]) is closed to make room.
    fn serve_tcp(&self, listener: &TcpListener, stop: &AtomicBool) -> Result<()> {
        let slots = Slots::default();
        std::thread::scope(|scope| {
            while !Self::stopped(stop) {
                let Some(slot) = slots.free() else {
                    if has_pending_connection(listener) {
                        slots.close_longest_idle(&self.stats);
                    }
                    std::thread::sleep(ACCEPT_POLL);
                    continue;
                };
                match listener.accept() {
                    Ok((conn, _)) => {
                        self.stats.connections.fetch_add(1, Ordering::Relaxed);
                        slot.claim();
                        scope.spawn(move || {
                            self.serve_connection(conn, slot, stop);
                            slot.release();
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::os("TCP server accept failed", e)),
                }
            }
            Ok(())
        })
    }

    /// Serve one connection until it closes, misbehaves, is too slow, idles out, is closed to
    /// make room, or the server stops.
    fn serve_connection(&self, mut stream: TcpStream, slot: &Slot, stop: &AtomicBool) {
        let st = &self.stats;
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(POLL));
        // A client that does not read its responses cannot hold the connection either.
        let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
        let mut buf = vec![0u8; 4 + wire::MAX_TCP_FRAME];
        let quit = || Self::stopped(stop) || slot.closing.load(Ordering::Relaxed);
        loop {
            let idle_until = slot.idle_since_ns.load(Ordering::Relaxed) + IDLE_TIMEOUT.as_nanos() as u64;
            let waiting = rt::now_ns();
            if read_by(&mut stream, &mut buf[..1], idle_until, &quit) != Received::All {
                return;
            }
            slot.busy();
            let request_by = rt::now_ns() + REQUEST_TIMEOUT.as_nanos() as u64;
            st.requests.fetch_add(1, Ordering::Relaxed);
            match read_by(&mut stream, &mut buf[1..4], request_by, &quit) {
                Received::All => {}
                Received::Late => return count(&st.slow_requests),
                Received::Ended => return count(&st.truncated),
            }
            let len = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
            if len > wire::MAX_TCP_FRAME {
                return count(&st.oversized);
            }
            match read_by(&mut stream, &mut buf[4..4 + len], request_by, &quit) {
                Received::All => {}
                Received::Late => return count(&st.slow_requests),
                Received::Ended => return count(&st.truncated),
            }
            if let Some(h) = stream_wire::decode(&buf[4..4 + len]) {
                if h.kind == stream_wire::MessageType::Start {
                    return receive_stream(stream, &h, &mut buf, &quit);
                }
            }
            if wire::decode(&buf[4..4 + len]).is_none() {
                return count(&st.malformed);
            }
            let received = rt::now_ns();
            self.service(stop);
            if stream.write_all(&buf[..4 + len]).is_err() {
                return;
            }
            st.responses.fetch_add(1, Ordering::Relaxed);
            self.answered(&buf[4..4 + len], waiting, received);
            slot.idle();
        }
    }
}

/// Receive a TCP stream's raw bytes until the sender shuts its side down (or sends nothing for
/// [`IDLE_TIMEOUT`]), then send the receipt (framed) and close.
fn receive_stream(mut stream: TcpStream, start: &stream_wire::Header, buf: &mut [u8], quit: &dyn Fn() -> bool) {
    let mut tally = stream_wire::Tally::start();
    let mut last_byte = rt::now_ns();
    loop {
        if quit() || rt::now_ns() - last_byte > IDLE_TIMEOUT.as_nanos() as u64 {
            return;
        }
        match stream.read(buf) {
            Ok(0) => break,
            Ok(n) => {
                tally.record(n, tally.interval_now(start.interval), false);
                last_byte = rt::now_ns();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return,
        }
    }
    let receipt = stream_wire::encode_receipt(start.stream, &tally.receipt());
    let mut frame = (receipt.len() as u32).to_be_bytes().to_vec();
    frame.extend(receipt);
    let _ = stream.write_all(&frame);
}

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// How a bounded read ended.
#[derive(Debug, PartialEq, Eq)]
enum Received {
    /// Every byte asked for.
    All,
    /// EOF, an error, the server stopping or the connection being closed to make room.
    Ended,
    /// The deadline passed first.
    Late,
}

/// Read exactly `buf.len()` bytes by `deadline_ns` (CLOCK_MONOTONIC); `quit` is looked at every
/// [`POLL`].
fn read_by(stream: &mut TcpStream, buf: &mut [u8], deadline_ns: u64, quit: &dyn Fn() -> bool) -> Received {
    let mut got = 0;
    while got < buf.len() {
        if quit() {
            return Received::Ended;
        }
        if rt::now_ns() >= deadline_ns {
            return Received::Late;
        }
        match stream.read(&mut buf[got..]) {
            Ok(0) => return Received::Ended,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return Received::Ended,
        }
    }
    Received::All
}

/// Whether a connection waits in the listen backlog (the listener is readable).
fn has_pending_connection(listener: &TcpListener) -> bool {
    let mut fd = libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut fd, 1, 0) == 1 && fd.revents & libc::POLLIN != 0 }
}

/// Marks [`Slot::idle_since_ns`] while a request is being received, served or answered.
const IN_REQUEST: u64 = u64::MAX;

/// One of the [`MAX_CONNECTIONS`] connection slots, shared by the accepting thread and the
/// connection's thread.
#[derive(Default)]
struct Slot {
    used: AtomicBool,
    /// When the connection's last response was sent (or it was accepted); [`IN_REQUEST`] while
    /// a request is under way.
    idle_since_ns: AtomicU64,
    /// Raised by the accepting thread: close this connection, another one waits for its slot.
    closing: AtomicBool,
}

impl Slot {
    fn claim(&self) {
        self.idle();
        self.closing.store(false, Ordering::Relaxed);
        self.used.store(true, Ordering::SeqCst);
    }
    fn release(&self) {
        self.used.store(false, Ordering::SeqCst);
    }
    fn busy(&self) {
        self.idle_since_ns.store(IN_REQUEST, Ordering::Relaxed);
    }
    fn idle(&self) {
        self.idle_since_ns.store(rt::now_ns(), Ordering::Relaxed);
    }
}

struct Slots([Slot; MAX_CONNECTIONS as usize]);

impl Default for Slots {
    fn default() -> Slots {
        Slots(std::array::from_fn(|_| Slot::default()))
    }
}

impl Slots {
    /// A free slot (only the accepting thread claims slots).
    fn free(&self) -> Option<&Slot> {
        self.0.iter().find(|s| !s.used.load(Ordering::SeqCst))
    }

    /// Close the connection idle longest if it has been idle for more than [`REQUEST_TIMEOUT`]
    /// (one at a time: nothing is done while an earlier one is still closing).
    fn close_longest_idle(&self, stats: &ServerStats) {
        let used = || self.0.iter().filter(|s| s.used.load(Ordering::SeqCst));
        if used().any(|s| s.closing.load(Ordering::Relaxed)) {
            return;
        }
        let idle_before = rt::now_ns().saturating_sub(REQUEST_TIMEOUT.as_nanos() as u64);
        let longest = used()
            .map(|s| (s.idle_since_ns.load(Ordering::Relaxed), s))
            .filter(|&(since, _)| since != IN_REQUEST && since < idle_before)
            .min_by_key(|&(since, _)| since);
        if let Some((_, s)) = longest {
            s.closing.store(true, Ordering::Relaxed);
            count(&stats.closed_idle);
        }
    }
}

impl ServerStats {
    /// The counts as they stand, for a results document.
    pub fn snapshot(&self) -> rtvirt_model::results::ServerStats {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        rtvirt_model::results::ServerStats {
            connections: read(&self.connections),
            malformed: read(&self.malformed),
            oversized: read(&self.oversized),
            rejected_connections: 0,
            requests: read(&self.requests),
            responses: read(&self.responses),
            truncated: read(&self.truncated),
            slow_requests: read(&self.slow_requests),
            closed_idle: read(&self.closed_idle),
        }
    }
}
