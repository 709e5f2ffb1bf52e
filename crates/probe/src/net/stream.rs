//! The stream client: bulk throughput to an rtvirt net server, as netperf's TCP_STREAM and
//! UDP_STREAM (Jones 2015) and iperf3 measure it. One thread sends messages of a fixed size as
//! fast as the socket takes them for the duration, counting bytes per interval of its own clock
//! and its own CPU time; then it asks the server for its receipt (bytes and datagrams received
//! per interval, the receiving thread's CPU time), from which UDP loss follows.
//!
//! UDP datagrams default to 1472 bytes (netperf's `-m 1472`: one 1500-byte Ethernet frame, no IP
//! fragmentation); TCP messages to 128 KiB (iperf3's default length).
//!
//! With a target bandwidth (iperf3's `-b`) the sender is paced as a token bucket over the whole
//! run: a message goes when the bytes sent so far fit in `target x elapsed`, otherwise the thread
//! sleeps until they do, so the rate sent never exceeds the target by more than one message and a
//! late wake-up is caught up by the messages that follow.

use super::stream_wire::{self, MessageType};
use super::Protocol;
use crate::error::{Context, Error, Result};
use crate::rt;
use rtvirt_model::results::{Results, StreamInterval, StreamReceipt, StreamSection};
use rtvirt_model::Nanos;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

/// Default UDP datagram payload: no fragmentation over a 1500-byte MTU (netperf `-m 1472`).
pub const UDP_MESSAGE_SIZE: usize = 1472;
/// Default TCP send size (iperf3's default `-l`).
pub const TCP_MESSAGE_SIZE: usize = 128 * 1024;
/// Largest TCP send size.
pub const MAX_TCP_MESSAGE: usize = 4 << 20;
/// How often a UDP sender asks for the receipt, and how many times.
const RECEIPT_ASK_EVERY: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub connect: SocketAddr,
    pub protocol: Protocol,
    /// Bytes per send call (None: the protocol's default).
    pub message_size: Option<usize>,
    pub duration: Nanos,
    /// Reporting interval.
    pub interval: Nanos,
    /// How long to wait for the receiver's receipt.
    pub timeout: Nanos,
    /// Allow a run over one hour ([`crate::limits::check_duration`]).
    pub force: bool,
    /// Pace the sender to this many payload bits per second (None: as fast as the socket takes).
    pub target_bits_per_second: Option<f64>,
}

impl StreamConfig {
    /// The message size in effect.
    pub fn size(&self) -> usize {
        self.message_size.unwrap_or(match self.protocol {
            Protocol::Udp => UDP_MESSAGE_SIZE,
            Protocol::Tcp => TCP_MESSAGE_SIZE,
        })
    }

    pub fn validate(&self) -> Result<()> {
        let (min, max) = match self.protocol {
            Protocol::Udp => (stream_wire::HEADER, super::wire::MAX_UDP),
            Protocol::Tcp => (1, MAX_TCP_MESSAGE),
        };
        let size = self.size();
        if !(min..=max).contains(&size) {
            return Err(Error::input(
                "--message-size",
                format!("{size} bytes: expected {min}..={max} for a {} stream", self.protocol.as_str()),
            ));
        }
        crate::limits::check_duration("--duration", self.duration, self.force)?;
        if self.interval.0 < 10_000_000 {
            return Err(Error::input("--report-interval", format!("{}: expected at least 10ms", self.interval)));
        }
        if self.timeout.0 == 0 {
            return Err(Error::input("--timeout", "must be more than 0"));
        }
        if let Some(rate) = self.target_bits_per_second {
            if !(MIN_TARGET_BITS_PER_SECOND..=MAX_TARGET_BITS_PER_SECOND).contains(&rate) {
                return Err(Error::input(
                    "--bandwidth",
                    format!("{rate} bit/s: expected 1K..=1T bits per second (as iperf3 -b: 100M, 2.5G)"),
                ));
            }
        }
        Ok(())
    }
}

/// Smallest and largest target bandwidth (bits per second).
pub const MIN_TARGET_BITS_PER_SECOND: f64 = 1e3;
pub const MAX_TARGET_BITS_PER_SECOND: f64 = 1e12;

/// A bandwidth as iperf3's `-b` writes it: bits per second, with an optional K, M, G or T
/// suffix (powers of 1000), e.g. `100M`, `2.5G`, `800000`.
pub fn parse_bits_per_second(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    let (number, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1e3,
                'M' => 1e6,
                'G' => 1e9,
                'T' => 1e12,
                _ => return Err(format!("{text:?}: expected bits per second with an optional K, M, G or T suffix")),
            };
            (&t[..i], scale)
        }
        _ => (t, 1.0),
    };
    match number.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n * scale),
        _ => Err(format!("{text:?}: expected a positive number of bits per second, e.g. 100M or 2.5G")),
    }
}

/// When the next message may go: the token bucket of a paced sender.
struct Pacer {
    bytes_per_ns: f64,
}

impl Pacer {
    /// How long to wait, `elapsed_ns` into the run with `sent_bytes` gone, before sending more.
    fn wait_ns(&self, elapsed_ns: u64, sent_bytes: u64) -> u64 {
        let due_ns = sent_bytes as f64 / self.bytes_per_ns;
        (due_ns - elapsed_ns as f64).max(0.0) as u64
    }
}

/// What the sender counted.
struct Sent {
    bytes: u64,
    messages: u64,
    sending_ns: u64,
    cpu_ns: u64,
    interval_bytes: Vec<u64>,
    interval_messages: Vec<u64>,
}

impl Sent {
    fn new() -> Sent {
        Sent { bytes: 0, messages: 0, sending_ns: 0, cpu_ns: 0, interval_bytes: vec![], interval_messages: vec![] }
    }

    fn record(&mut self, interval: usize, bytes: usize) {
        if self.interval_bytes.len() <= interval {
            self.interval_bytes.resize(interval + 1, 0);
            self.interval_messages.resize(interval + 1, 0);
        }
        self.interval_bytes[interval] += bytes as u64;
        self.interval_messages[interval] += 1;
        self.bytes += bytes as u64;
        self.messages += 1;
    }
}

/// Run the stream and return its results document (`kind: "net-stream"`).
pub fn run(cfg: &StreamConfig) -> Result<Results> {
    cfg.validate()?;
    let stream_id = rt::now_ns() ^ (u64::from(std::process::id()) << 40);
    let (sent, receipt) = match cfg.protocol {
        Protocol::Udp => udp(cfg, stream_id)?,
        Protocol::Tcp => tcp(cfg, stream_id)?,
    };
    Ok(assemble(cfg, sent, receipt))
}

fn stopped() -> bool {
    rtvirt_os::signals::interrupted()
}

/// Send for the duration: `send(buf, interval)` sends one message and says how many bytes went.
fn send_for(cfg: &StreamConfig, mut send: impl FnMut(u64) -> std::io::Result<usize>) -> Result<Sent> {
    let mut sent = Sent::new();
    let pacer = cfg.target_bits_per_second.map(|bits| Pacer { bytes_per_ns: bits / 8e9 });
    let (start, cpu_start) = (rt::now_ns(), rt::thread_cpu_ns());
    let end = start + cfg.duration.0;
    loop {
        let mut now = rt::now_ns();
        if let Some(wait) = pacer.as_ref().map(|p| p.wait_ns(now - start, sent.bytes)).filter(|&w| w > 0) {
            std::thread::sleep(Duration::from_nanos(wait.min(end.saturating_sub(now))));
            now = rt::now_ns();
        }
        if now >= end || stopped() {
            break;
        }
        let interval = (now - start) / cfg.interval.0;
        match send(interval) {
            Ok(n) => sent.record(interval as usize, n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            // UDP: the previous datagram found no receiver (ICMP port unreachable).
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                return Err(Error::Failed(format!("the server refused the stream (nothing listens there?): {e}")))
            }
            Err(e) => return Err(Error::os("stream send failed", e)),
        }
    }
    sent.sending_ns = rt::now_ns() - start;
    sent.cpu_ns = rt::thread_cpu_ns() - cpu_start;
    Ok(sent)
}

fn udp(cfg: &StreamConfig, stream_id: u64) -> Result<(Sent, Option<StreamReceipt>)> {
    let what = || format!("cannot reach the server at {} (udp)", cfg.connect);
    let local: SocketAddr =
        if cfg.connect.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { "[::]:0".parse().expect("addr") };
    let socket = UdpSocket::bind(local).context(what)?;
    socket.connect(cfg.connect).context(what)?;
    socket.set_write_timeout(Some(Duration::from_millis(100))).context(what)?;
    let mut msg = vec![0u8; cfg.size()];
    let mut seq = 0;
    let sent = send_for(cfg, |interval| {
        let h = stream_wire::Header { kind: MessageType::Data, stream: stream_id, seq, interval };
        stream_wire::encode(&h, &mut msg);
        seq += 1;
        socket.send(&msg)
    })?;
    socket.set_read_timeout(Some(RECEIPT_ASK_EVERY)).context(what)?;
    let mut end = [0u8; stream_wire::HEADER];
    stream_wire::encode(&stream_wire::Header { kind: MessageType::End, stream: stream_id, seq, interval: 0 }, &mut end);
    let mut buf = vec![0u8; super::wire::MAX_UDP + 1];
    let give_up = rt::now_ns() + cfg.timeout.0;
    while rt::now_ns() < give_up {
        let _ = socket.send(&end);
        // Datagrams still queued before the receipt are skipped (only a receipt decodes as one).
        while let Ok(n) = socket.recv(&mut buf) {
            if let Some(receipt) = stream_wire::decode_receipt(stream_id, &buf[..n]) {
                return Ok((sent, Some(receipt)));
            }
        }
    }
    Ok((sent, None))
}

fn tcp(cfg: &StreamConfig, stream_id: u64) -> Result<(Sent, Option<StreamReceipt>)> {
    let what = || format!("cannot reach the server at {} (tcp)", cfg.connect);
    let mut socket = TcpStream::connect_timeout(&cfg.connect, Duration::from_secs(3)).context(what)?;
    socket.set_write_timeout(Some(Duration::from_millis(100))).context(what)?;
    let mut start = vec![0u8; 4 + stream_wire::HEADER];
    start[..4].copy_from_slice(&(stream_wire::HEADER as u32).to_be_bytes());
    let h = stream_wire::Header { kind: MessageType::Start, stream: stream_id, seq: 0, interval: cfg.interval.0 };
    stream_wire::encode(&h, &mut start[4..]);
    socket.write_all(&start).context(what)?;
    let msg = vec![0u8; cfg.size()];
    let sent = send_for(cfg, |_| (&socket).write(&msg))?;
    socket.shutdown(Shutdown::Write).context(what)?;
    let give_up = rt::now_ns() + cfg.timeout.0;
    let mut length = [0u8; 4];
    if !read_exact_by(&mut socket, &mut length, give_up) {
        return Ok((sent, None));
    }
    let len = u32::from_be_bytes(length) as usize;
    if len > stream_wire::MAX_RECEIPT {
        return Err(Error::Failed(format!(
            "the server announced a {len}-byte receipt (at most {} bytes): is it an rtvirt net server?",
            stream_wire::MAX_RECEIPT
        )));
    }
    let mut body = vec![0u8; len];
    let receipt =
        read_exact_by(&mut socket, &mut body, give_up).then(|| stream_wire::decode_receipt(stream_id, &body)).flatten();
    Ok((sent, receipt))
}

/// Fill `buf` from `socket` before `deadline_ns` (CLOCK_MONOTONIC): false if the deadline
/// passed, the peer closed or the read failed first. A peer trickling bytes cannot hold the
/// reader past the deadline.
fn read_exact_by(socket: &mut TcpStream, buf: &mut [u8], deadline_ns: u64) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        let left = deadline_ns.saturating_sub(rt::now_ns());
        if left == 0 || socket.set_read_timeout(Some(Duration::from_nanos(left))).is_err() {
            return false;
        }
        match socket.read(&mut buf[filled..]) {
            Ok(0) => return false,
            Ok(n) => filled += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return false,
        }
    }
    true
}

fn bits_per_second(bytes: u64, ns: u64) -> f64 {
    bytes as f64 * 8.0 / (ns.max(1) as f64 / 1e9)
}

fn assemble(cfg: &StreamConfig, sent: Sent, receipt: Option<StreamReceipt>) -> Results {
    let udp = cfg.protocol == Protocol::Udp;
    let intervals = (0..sent.interval_bytes.len())
        .map(|i| {
            let start_ns = i as u64 * cfg.interval.0;
            let end_ns = (start_ns + cfg.interval.0).min(sent.sending_ns.max(start_ns + 1));
            let received = receipt.as_ref().map(|r| r.interval_bytes.get(i).copied().unwrap_or(0));
            let lost = receipt
                .as_ref()
                .filter(|_| udp)
                .map(|r| sent.interval_messages[i].saturating_sub(r.interval_messages.get(i).copied().unwrap_or(0)));
            StreamInterval {
                start_ns,
                end_ns,
                sent_bytes: sent.interval_bytes[i],
                sent_messages: sent.interval_messages[i],
                sent_bits_per_second: bits_per_second(sent.interval_bytes[i], end_ns - start_ns),
                received_bytes: received,
                received_bits_per_second: received.map(|b| bits_per_second(b, end_ns - start_ns)),
                lost_messages: lost,
            }
        })
        .collect();
    let lost = receipt.as_ref().filter(|_| udp).map(|r| sent.messages.saturating_sub(r.messages));
    let mut r = Results::new("net-stream", sent.sending_ns);
    r.stream = Some(StreamSection {
        protocol: cfg.protocol.as_str().into(),
        server: cfg.connect.to_string(),
        message_size: cfg.size() as u64,
        interval_ns: cfg.interval.0,
        sending_ns: sent.sending_ns,
        sent_bytes: sent.bytes,
        sent_messages: sent.messages,
        sent_bits_per_second: bits_per_second(sent.bytes, sent.sending_ns),
        target_bits_per_second: cfg.target_bits_per_second,
        sender_cpu_ns: sent.cpu_ns,
        sender_cpu_utilisation: sent.cpu_ns as f64 / sent.sending_ns.max(1) as f64,
        received_bits_per_second: receipt.as_ref().map(|r| bits_per_second(r.bytes, sent.sending_ns)),
        lost_messages: lost,
        loss_ratio: lost.map(|l| l as f64 / sent.messages.max(1) as f64),
        receiver_cpu_utilisation: receipt.as_ref().map(|r| r.cpu_ns as f64 / r.active_ns.max(1) as f64),
        receiver: receipt,
        intervals,
    });
    r.interrupted = stopped();
    r.environment = Some(crate::environment::collect());
    r
}

#[cfg(test)]
mod pacing_tests {
    use super::*;

    #[test]
    fn bandwidths_read_as_iperf3_writes_them() {
        assert_eq!(parse_bits_per_second("100M"), Ok(1e8));
        assert_eq!(parse_bits_per_second("2.5g"), Ok(2.5e9));
        assert_eq!(parse_bits_per_second("800000"), Ok(8e5));
        assert_eq!(parse_bits_per_second("1T"), Ok(1e12));
        for bad in ["", "M", "-1M", "0", "1X", "NaN", "inf", "1 M b"] {
            assert!(parse_bits_per_second(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn the_pacer_holds_the_sender_to_the_target_and_lets_it_catch_up() {
        let p = Pacer { bytes_per_ns: 1e9 / 8e9 }; // 1 Gbit/s = 0.125 byte per ns
        assert_eq!(p.wait_ns(0, 0), 0);
        assert_eq!(p.wait_ns(0, 1250), 10_000); // 10 us of budget already used
        assert_eq!(p.wait_ns(10_000, 1250), 0);
        assert_eq!(p.wait_ns(50_000, 1250), 0); // behind after a late wake-up: send at once
    }
}
