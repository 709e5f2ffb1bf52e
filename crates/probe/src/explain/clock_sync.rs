//! `--in vm --explain`, guest side: this guest's CLOCK_MONOTONIC related to the host's by timed
//! handshakes over a serial port (QEMU's third `-serial`, whose host end is a Unix socket that
//! rtvirt on the host answers with its own CLOCK_MONOTONIC, `rtvirt_vm::clock`). One round: note
//! the guest time, send a request, read the host's time, note the guest time again; the host's
//! reading lies within the round trip, so offset = host - midpoint, uncertain by half the round
//! trip. The best (shortest) of [`ROUNDS`] is kept, at the start and at the end of the run; the
//! two give the drift. kvmclock would relate the clocks exactly, as trace-cmd does with the TSC
//! offset, but it exists only under KVM; under TCG (this machine) a handshake is what there is.

use rtvirt_model::results::ClockSync;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Handshakes per series.
pub const ROUNDS: u32 = 16;
/// Bound on one answer. A slow answer (the host busy, or its vCPU thread not running) is a round
/// with a long round trip, which the best-of choice passes over; only a host that does not answer
/// at all fails the series. A shorter bound turned one stall of a loaded host into "no clock".
const ANSWER_TIMEOUT_MS: i32 = 15_000;

/// The best handshake of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// Guest time of the round's midpoint.
    pub guest_ns: u64,
    /// Host time - guest time.
    pub offset_ns: i64,
    pub round_trip_ns: u64,
}

/// The guest's end of the serial line.
pub struct Channel {
    port: std::fs::File,
}

impl Channel {
    /// Open the serial device raw (no echo, no line editing).
    pub fn open(device: &Path) -> std::io::Result<Channel> {
        let port = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOCTTY).open(device)?;
        // SAFETY: termios calls on an open descriptor with a zeroed struct they fill.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(port.as_raw_fd(), &mut t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::cfmakeraw(&mut t);
            libc::cfsetspeed(&mut t, libc::B115200);
            if libc::tcsetattr(port.as_raw_fd(), libc::TCSANOW, &t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::tcflush(port.as_raw_fd(), libc::TCIOFLUSH);
        }
        Ok(Channel { port })
    }

    /// The shortest of `rounds` handshakes.
    pub fn best_of(&mut self, rounds: u32) -> std::io::Result<Handshake> {
        let mut best: Option<Handshake> = None;
        for _ in 0..rounds {
            let h = self.round()?;
            if best.is_none_or(|b| h.round_trip_ns < b.round_trip_ns) {
                best = Some(h);
            }
        }
        best.ok_or_else(|| std::io::Error::other("no handshake"))
    }

    fn round(&mut self) -> std::io::Result<Handshake> {
        let sent = crate::rt::now_ns();
        self.port.write_all(b"T\n")?;
        let host = self.read_line()?;
        let received = crate::rt::now_ns();
        let host: u64 = host
            .trim()
            .parse()
            .map_err(|_| std::io::Error::other(format!("the host answered {host:?}, not a time")))?;
        let guest_ns = sent + (received - sent) / 2;
        Ok(Handshake { guest_ns, offset_ns: host as i64 - guest_ns as i64, round_trip_ns: received - sent })
    }

    fn read_line(&mut self) -> std::io::Result<String> {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        loop {
            let mut poll = libc::pollfd { fd: self.port.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut poll, 1, ANSWER_TIMEOUT_MS) } <= 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer from the host"));
            }
            if self.port.read(&mut byte)? == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the host closed the line"));
            }
            match byte[0] {
                b'\n' => return Ok(String::from_utf8_lossy(&line).into_owned()),
                b => line.push(b),
            }
        }
    }
}

/// A guest's clock line with the handshake made before its run.
pub struct Line {
    channel: Channel,
    start: Handshake,
}

impl Line {
    /// Open `device` and shake hands; on failure say so in `limitations`, with what is lost
    /// without the host's clock (`without`).
    pub fn open(device: &Path, limitations: &mut Vec<String>, without: &str) -> Option<Line> {
        let shaken = Channel::open(device).and_then(|mut c| Ok((c.best_of(ROUNDS)?, c)));
        match shaken {
            Ok((start, channel)) => Some(Line { channel, start }),
            Err(e) => {
                limitations.push(format!(
                    "the guest clock could not be related to the host's over {}: {e} ({without})",
                    device.display()
                ));
                None
            }
        }
    }

    /// Shake hands again after the run: the run's start (`run_start`, this guest's clock) on
    /// the host's clock.
    pub fn close(mut self, run_start: u64) -> ClockSync {
        let end = self.channel.best_of(ROUNDS).ok();
        conversion(self.start, end, run_start)
    }
}

/// The host time of `guest_ns` since the run's start (`clock`'s conversion, its drift included).
pub fn to_host(clock: &ClockSync, guest_ns: u64) -> u64 {
    let rate = 1.0 + clock.drift_ppm / 1e6;
    clock.run_start_host_ns.saturating_add((guest_ns as f64 * rate) as u64)
}

/// The run's start on the host clock from the handshakes before (and, when it worked, after) it.
pub fn conversion(start: Handshake, end: Option<Handshake>, run_start: u64) -> ClockSync {
    let drift = match end {
        Some(e) if e.guest_ns > start.guest_ns => {
            (e.offset_ns - start.offset_ns) as f64 / (e.guest_ns - start.guest_ns) as f64
        }
        _ => 0.0,
    };
    let offset = start.offset_ns as f64 + drift * (run_start as f64 - start.guest_ns as f64);
    let precision = end.map_or(start.round_trip_ns, |e| e.round_trip_ns.max(start.round_trip_ns)) / 2;
    ClockSync {
        method: "serial handshake".into(),
        run_start_host_ns: (run_start as i64 + offset.round() as i64).max(0) as u64,
        precision_ns: precision,
        rounds: ROUNDS * (1 + end.is_some() as u32),
        drift_ppm: drift * 1e6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_start_is_moved_by_the_offset_interpolated_between_the_handshakes() {
        let start = Handshake { guest_ns: 1_000, offset_ns: 500_000, round_trip_ns: 80 };
        let end = Handshake { guest_ns: 1_000_001_000, offset_ns: 500_100, round_trip_ns: 120 };
        let c = conversion(start, Some(end), 500_001_000);
        assert_eq!(c.run_start_host_ns, 500_001_000 + 500_050);
        assert!((c.drift_ppm - 0.1).abs() < 1e-9, "{}", c.drift_ppm);
        assert_eq!((c.precision_ns, c.rounds), (60, 2 * ROUNDS));
        let alone = conversion(start, None, 2_000);
        assert_eq!((alone.run_start_host_ns, alone.precision_ns, alone.drift_ppm), (502_000, 40, 0.0));
    }

    /// A real pseudo-terminal pair stands for the serial line: a host thread answers each request.
    #[test]
    fn handshakes_over_a_real_terminal_line() {
        let (mut master, slave) = pty_pair();
        let mut channel = Channel::open(&slave).unwrap();
        let host = std::thread::spawn(move || {
            let mut buf = [0u8; 2];
            for _ in 0..ROUNDS {
                master.read_exact(&mut buf).expect("host reads a request");
                assert_eq!(&buf, b"T\n");
                master.write_all(format!("{}\n", crate::rt::now_ns() + 1_000_000).as_bytes()).unwrap();
            }
            master // closing it hangs the line up, dropping what the guest has not read yet
        });
        let h = channel.best_of(ROUNDS);
        let _master = host.join().expect("the host thread answered");
        let h = h.unwrap();
        let error = h.offset_ns - 1_000_000;
        assert!(error.unsigned_abs() <= h.round_trip_ns / 2 + 1, "{h:?}");
    }

    /// A host that stalls before one answer (its trace being set up on a loaded machine took
    /// 2.5 s once) costs that round, not the series: the best round is another.
    #[test]
    fn a_stalled_answer_is_a_slow_round_not_a_failed_series() {
        let (mut master, slave) = pty_pair();
        let mut channel = Channel::open(&slave).unwrap();
        let host = std::thread::spawn(move || {
            let mut buf = [0u8; 2];
            for round in 0..ROUNDS {
                master.read_exact(&mut buf).expect("host reads a request");
                if round == 1 {
                    std::thread::sleep(std::time::Duration::from_millis(2500));
                }
                master.write_all(format!("{}\n", crate::rt::now_ns()).as_bytes()).unwrap();
            }
            master
        });
        // checked before joining: with the series failed, the host would wait for a request forever
        let h = channel.best_of(ROUNDS).expect("a stalled answer does not fail the series");
        let _master = host.join().expect("the host thread answered");
        assert!(h.round_trip_ns < 2_500_000_000, "the stalled round is not the best: {h:?}");
    }

    fn pty_pair() -> (std::fs::File, std::path::PathBuf) {
        // SAFETY: posix_openpt/grantpt/unlockpt/ptsname on the descriptor just opened.
        unsafe {
            let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(fd >= 0 && libc::grantpt(fd) == 0 && libc::unlockpt(fd) == 0);
            let name = std::ffi::CStr::from_ptr(libc::ptsname(fd)).to_string_lossy().into_owned();
            let master = <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd);
            let mut t: libc::termios = std::mem::zeroed();
            libc::tcgetattr(fd, &mut t);
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
            (master, name.into())
        }
    }
}
