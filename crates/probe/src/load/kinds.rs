//! The load kinds and the worker loop of each.

use super::meter::{Meter, Pacer};
use crate::error::{Context, Error, Result};
use crate::rt;
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What kind of interference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadKind {
    /// TCP flood sender -> receiver (bytes/s).
    Net,
    /// UDP flood sender -> receiver (bytes/s received).
    NetUdp,
    /// System calls, pipe wake-ups and short timer sleeps (ops/s).
    Syscalls,
    /// memcpy over a buffer twice the last-level cache (bytes/s).
    Cache,
    /// Arithmetic busy loop (ops/s).
    Cpu,
}

impl LoadKind {
    pub fn parse(text: &str) -> std::result::Result<LoadKind, String> {
        Ok(match text {
            "net" | "net-tcp" => LoadKind::Net,
            "net-udp" => LoadKind::NetUdp,
            "syscalls" => LoadKind::Syscalls,
            "cache" => LoadKind::Cache,
            "cpu" => LoadKind::Cpu,
            _ => return Err(format!("\"{text}\" is not a load kind (expected net, net-udp, syscalls, cache or cpu)")),
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            LoadKind::Net => "net",
            LoadKind::NetUdp => "net-udp",
            LoadKind::Syscalls => "syscalls",
            LoadKind::Cache => "cache",
            LoadKind::Cpu => "cpu",
        }
    }
}

/// (unit of ops, whether ops are bytes).
pub fn unit(kind: LoadKind) -> (&'static str, bool) {
    match kind {
        LoadKind::Cpu => ("iterations", false),
        LoadKind::Syscalls => ("syscall rounds", false),
        LoadKind::Cache | LoadKind::Net | LoadKind::NetUdp => ("bytes", true),
    }
}

type Worker = Box<dyn FnOnce(&AtomicBool, &Meter, Option<f64>) + Send>;

/// Spawn the thread(s) of worker `i` (a net worker is a sender and a receiver).
pub fn spawn(
    kind: LoadKind,
    i: u32,
    cpu: Option<u32>,
    rate: Option<f64>,
    stop: Arc<AtomicBool>,
    meter: Arc<Meter>,
) -> Result<Vec<std::thread::JoinHandle<()>>> {
    let bodies: Vec<Worker> = match kind {
        LoadKind::Cpu => vec![Box::new(cpu_hog)],
        LoadKind::Syscalls => vec![Box::new(syscalls)],
        LoadKind::Cache => {
            let bytes = 2 * llc_bytes();
            vec![Box::new(move |s: &AtomicBool, m: &Meter, r| cache_thrash(s, m, r, bytes))]
        }
        LoadKind::Net => tcp_pair()?,
        LoadKind::NetUdp => udp_pair()?,
    };
    let mut threads = Vec::new();
    for body in bodies {
        let (stop, meter) = (stop.clone(), meter.clone());
        let t = std::thread::Builder::new()
            .name(format!("rtvirt-load-{}{i}", kind.as_str()))
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = rt::pin_current_thread(c);
                }
                body(&stop, &meter, rate);
            })
            .map_err(|e| Error::os("cannot start load thread", e))?;
        threads.push(t);
    }
    Ok(threads)
}

fn cpu_hog(stop: &AtomicBool, meter: &Meter, rate: Option<f64>) {
    let mut pacer = Pacer::new(rate, stop);
    let mut x = 0x9e3779b97f4a7c15u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1000 {
            x = x.rotate_left(7).wrapping_mul(0x2545f4914f6cdd1d) ^ 0x5bd1e995;
        }
        std::hint::black_box(x);
        meter.add(1000);
        pacer.pace(1000);
    }
}

/// One round: getppid, a pipe write + read (a wake-up path), a 1-byte /dev/null write, and every
/// 16th round a 10 us timer sleep (timer interrupts).
fn syscalls(stop: &AtomicBool, meter: &Meter, rate: Option<f64>) {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid 2-element array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return;
    }
    let mut null = std::fs::OpenOptions::new().write(true).open("/dev/null").ok();
    let mut pacer = Pacer::new(rate, stop);
    let mut round = 0u64;
    let mut b = [0u8; 1];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: plain syscalls on our own pipe and buffer.
        unsafe {
            libc::getppid();
            libc::write(fds[1], b.as_ptr().cast(), 1);
            libc::read(fds[0], b.as_mut_ptr().cast(), 1);
        }
        if let Some(n) = null.as_mut() {
            let _ = n.write(&b);
        }
        round += 1;
        if round.is_multiple_of(16) {
            std::thread::sleep(Duration::from_micros(10));
        }
        meter.add(1);
        pacer.pace(1);
    }
    // SAFETY: closing our own descriptors.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

/// Size of the largest CPU cache (the LLC), at least 4 MiB if unknown.
pub fn llc_bytes() -> usize {
    let mut best = 0;
    for i in 0..8 {
        let p = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
        if let Ok(s) = std::fs::read_to_string(p) {
            let s = s.trim();
            let (num, mult) = match s.chars().last() {
                Some('K') => (&s[..s.len() - 1], 1024),
                Some('M') => (&s[..s.len() - 1], 1024 * 1024),
                _ => (s, 1),
            };
            best = best.max(num.parse::<usize>().unwrap_or(0) * mult);
        }
    }
    if best == 0 {
        4 << 20
    } else {
        best
    }
}

const CHUNK: usize = 64 * 1024;

fn cache_thrash(stop: &AtomicBool, meter: &Meter, rate: Option<f64>, bytes: usize) {
    let half = bytes.max(2 * CHUNK) / 2;
    let mut pacer = Pacer::new(rate, stop);
    // Filled chunk by chunk (first touch of tens of MiB is itself memory traffic, and a short
    // run must count it and be able to stop during it).
    let mut buf = Vec::with_capacity(2 * half);
    while buf.len() < 2 * half {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let n = CHUNK.min(2 * half - buf.len());
        buf.resize(buf.len() + n, 1u8);
        meter.add(n as u64);
        pacer.pace(n as u64);
    }
    let mut off = 0;
    while !stop.load(Ordering::Relaxed) {
        let (src, dst) = buf.split_at_mut(half);
        dst[off..off + CHUNK].copy_from_slice(&src[off..off + CHUNK]);
        std::hint::black_box(&dst[off]);
        off = (off + CHUNK) % (half - CHUNK + 1);
        meter.add(CHUNK as u64);
        pacer.pace(CHUNK as u64);
    }
}

/// Record the CPU of a thread that does not count units, when it changed since `last`.
fn seen(meter: &Meter, last: &mut u32) {
    let cpu = rt::current_cpu();
    if cpu != *last {
        meter.ran_on(cpu);
        *last = cpu;
    }
}

/// A TCP sender -> receiver pair over loopback; the receiver counts bytes, the sender's CPUs are
/// recorded too.
fn tcp_pair() -> Result<Vec<Worker>> {
    let listener = TcpListener::bind("127.0.0.1:0").context(|| "cannot bind the net load receiver".into())?;
    let addr = listener.local_addr().context(|| "net load receiver address".into())?;
    let sender = TcpStream::connect(addr).context(|| "cannot connect the net load sender".into())?;
    let (receiver, _) = listener.accept().context(|| "cannot accept the net load sender".into())?;
    receiver.set_read_timeout(Some(Duration::from_millis(50))).ok();
    sender.set_write_timeout(Some(Duration::from_millis(50))).ok();
    let recv: Worker = Box::new(move |stop, meter, _| {
        let mut r = receiver;
        let mut buf = vec![0u8; CHUNK];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    return;
                }
                meter.add(n as u64);
            }
        }
    });
    let send: Worker = Box::new(move |stop, meter, rate| {
        let mut s = sender;
        let buf = vec![0x5au8; CHUNK];
        let mut pacer = Pacer::new(rate, stop);
        let mut last = u32::MAX;
        while !stop.load(Ordering::Relaxed) {
            seen(meter, &mut last);
            if let Ok(n) = s.write(&buf) {
                pacer.pace(n as u64);
            }
        }
    });
    Ok(vec![recv, send])
}

/// A UDP sender -> receiver pair over loopback (1472-byte datagrams, as netperf -m 1472).
fn udp_pair() -> Result<Vec<Worker>> {
    let receiver = UdpSocket::bind("127.0.0.1:0").context(|| "cannot bind the UDP load receiver".into())?;
    let addr = receiver.local_addr().context(|| "UDP load receiver address".into())?;
    let sender = UdpSocket::bind("127.0.0.1:0").context(|| "cannot bind the UDP load sender".into())?;
    receiver.set_read_timeout(Some(Duration::from_millis(50))).ok();
    let recv: Worker = Box::new(move |stop, meter, _| {
        let mut buf = vec![0u8; 2048];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(n) = receiver.recv(&mut buf) {
                meter.add(n as u64);
            }
        }
    });
    let send: Worker = Box::new(move |stop, meter, rate| {
        let buf = vec![0x5au8; 1472];
        let mut pacer = Pacer::new(rate, stop);
        let mut last = u32::MAX;
        while !stop.load(Ordering::Relaxed) {
            seen(meter, &mut last);
            if sender.send_to(&buf, addr).is_ok() {
                pacer.pace(1472);
            }
        }
    });
    Ok(vec![recv, send])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two threads of a net load pinned to different CPUs: the receiver counts bytes, the
    /// sender counts none, and both CPUs show up.
    #[test]
    fn net_sender_cpu_is_recorded_without_counting() {
        let cpus = crate::cpus::allowed();
        let (rx_cpu, tx_cpu) = (cpus[0], *cpus.last().unwrap());
        for pair in [tcp_pair().unwrap(), udp_pair().unwrap()] {
            let stop = Arc::new(AtomicBool::new(false));
            let meters = [Arc::new(Meter::default()), Arc::new(Meter::default())];
            let threads: Vec<_> = pair
                .into_iter()
                .zip([rx_cpu, tx_cpu])
                .zip(meters.clone())
                .map(|((body, cpu), meter)| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        rt::pin_current_thread(cpu).unwrap();
                        body(&stop, &meter, Some(1e6));
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::SeqCst);
            threads.into_iter().for_each(|t| t.join().unwrap());
            assert!(meters[0].ops.load(Ordering::Relaxed) > 0);
            assert_eq!(meters[0].cpus(), [rx_cpu]);
            assert_eq!(meters[1].ops.load(Ordering::Relaxed), 0);
            assert_eq!(meters[1].cpus(), [tx_cpu]);
        }
    }
}
