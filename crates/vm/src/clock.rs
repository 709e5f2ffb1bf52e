//! The host's end of a guest's clock line (`--in vm --explain`): QEMU's third serial port is the
//! Unix socket [`SOCKET`] of the guest's runtime directory; the guest (rtvirt-probe's
//! `explain::clock_sync`) writes a request line, the host answers at once with its
//! CLOCK_MONOTONIC in ns. [`serve`] answers until told to stop, calling back between polls so
//! that the caller can do its own work (read a host trace) on the same thread.

use crate::error::{Result, VmError};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The socket's name in the guest's runtime directory.
pub const SOCKET: &str = "clock.sock";
/// How long [`serve`] waits for a request before calling back.
const POLL_MS: i32 = 5;

/// CLOCK_MONOTONIC in ns.
pub fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Connect to the clock line of the guest whose runtime directory is `dir` (QEMU listens on it
/// from its start; retried for up to 10 s).
pub fn connect(dir: &Path) -> Result<UnixStream> {
    let path = dir.join(SOCKET);
    let t0 = Instant::now();
    loop {
        match UnixStream::connect(&path) {
            Ok(s) => return Ok(s),
            Err(e) if t0.elapsed() > Duration::from_secs(10) => {
                return Err(VmError::io(format!("connecting to the guest's clock line {}", path.display()), e))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Answer every request on `line` with the host's time until `stop` is set (or the guest closes
/// the line). `between(asked)` runs after every poll; `asked` tells whether a request has been
/// answered yet. Returns the number of requests answered.
pub fn serve(mut line: UnixStream, stop: &AtomicBool, mut between: impl FnMut(bool)) -> u64 {
    let (mut answered, mut buf) = (0u64, [0u8; 64]);
    while !stop.load(Ordering::Acquire) {
        let mut poll = libc::pollfd { fd: line.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, POLL_MS) } > 0;
        if ready {
            match line.read(&mut buf) {
                Ok(0) | Err(_) => break, // QEMU ended
                Ok(n) => {
                    for _ in buf[..n].iter().filter(|&&b| b == b'\n') {
                        if line.write_all(format!("{}\n", monotonic_ns()).as_bytes()).is_err() {
                            return answered;
                        }
                        answered += 1;
                    }
                }
            }
        }
        between(answered > 0);
    }
    answered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_line_gets_the_hosts_time() {
        let (host, mut guest) = UnixStream::pair().unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let served = s.spawn(|| serve(host, &stop, |_| {}));
            let before = monotonic_ns();
            guest.write_all(b"T\nT\n").unwrap();
            let mut text = String::new();
            while text.matches('\n').count() < 2 {
                let mut b = [0u8; 64];
                let n = guest.read(&mut b).unwrap();
                text.push_str(std::str::from_utf8(&b[..n]).unwrap());
            }
            stop.store(true, Ordering::Release);
            assert_eq!(served.join().unwrap(), 2);
            for t in text.lines() {
                let t: u64 = t.parse().unwrap();
                assert!(t >= before && t <= monotonic_ns());
            }
        });
    }
}
