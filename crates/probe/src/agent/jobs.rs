//! The job-boundary API a guest task may call: at the end of each job it hands the agent one
//! record `NAME TID PERIOD_NS DEADLINE_NS EXEC_NS` (TID: the thread that ran the job). A
//! [`JobReporter`] appends it to the agent's shared-memory ring ([`super::ring`], no system call,
//! no wake-up) and, when there is no ring or it is full, sends it as one datagram of that text to
//! the agent's Unix datagram socket ([`SOCKET_ENV`], default [`DEFAULT_SOCKET`]); any task may
//! send such datagrams itself. Reporting never blocks and never fails the task: a missing agent
//! or a full socket drops the record. The agent reads both with [`JobInbox`] (bounded per poll).

pub use super::record::JobDone;
use super::ring::{self, JobRing, RingWriter};
use crate::error::{Error, Result};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

/// Where a task finds the agent's socket.
pub const SOCKET_ENV: &str = "RTVIRT_AGENT_SOCKET";
pub const DEFAULT_SOCKET: &str = "/run/rtvirt-agent.sock";
/// Longest datagram read (longer ones are cut and then refused by the parser).
const MAX_DATAGRAM: usize = 256;
/// Datagrams read per poll at most.
const MAX_PER_POLL: usize = 100_000;

/// A task's end of the API.
pub struct JobReporter {
    ring: Option<RingWriter>,
    socket: UnixDatagram,
    target: PathBuf,
}

impl JobReporter {
    /// A reporter to the agent named by `$RTVIRT_AGENT_SOCKET` (None when unset: no agent).
    pub fn from_env() -> Option<JobReporter> {
        let target = PathBuf::from(std::env::var_os(SOCKET_ENV)?);
        JobReporter::to(&target)
    }

    pub fn to(target: &Path) -> Option<JobReporter> {
        let socket = UnixDatagram::unbound().ok()?;
        socket.set_nonblocking(true).ok()?;
        let ring = RingWriter::open(&ring::path_for(target));
        Some(JobReporter { ring, socket, target: target.to_path_buf() })
    }

    /// Whether records go to the agent's shared-memory ring (else datagrams only).
    pub fn has_ring(&self) -> bool {
        self.ring.is_some()
    }

    /// One job of task `name` ended after `exec_ns` of execution.
    pub fn job_done(&self, name: &str, period_ns: u64, deadline_ns: u64, exec_ns: u64) {
        let tid = THREAD_ID.with(|t| *t);
        if self.ring.as_ref().is_some_and(|r| r.push(name, tid as u32, period_ns, deadline_ns, exec_ns)) {
            return;
        }
        let msg = format!("{name} {tid} {period_ns} {deadline_ns} {exec_ns}");
        let _ = self.socket.send_to(msg.as_bytes(), &self.target);
    }
}

thread_local! {
    /// This thread's id, asked once (a system call per job would undo what the ring saves).
    // SAFETY: gettid has no preconditions.
    static THREAD_ID: i32 = unsafe { libc::gettid() };
}

/// Parse one datagram (None if it is not `NAME TID PERIOD DEADLINE EXEC` with numbers).
pub fn parse(datagram: &[u8]) -> Option<JobDone> {
    let text = std::str::from_utf8(datagram).ok()?;
    let mut w = text.split_ascii_whitespace();
    let name = w.next()?.to_string();
    let tid = w.next()?.parse::<u32>().ok()?;
    let mut num = || w.next()?.parse::<u64>().ok();
    let (period_ns, deadline_ns, exec_ns) = (num()?, num()?, num()?);
    w.next().is_none().then_some(JobDone { name, tid, period_ns, deadline_ns, exec_ns })
}

/// The agent's end: the ring ([`ring::path_for`] the socket) and a bound datagram socket, both
/// removed on drop.
pub struct JobInbox {
    ring: JobRing,
    socket: UnixDatagram,
    path: PathBuf,
    /// Datagrams that did not parse.
    pub malformed: u64,
}

impl JobInbox {
    /// The ring first, then the socket: a task that finds the socket finds the ring. A stale
    /// socket (nobody bound to it) and a stale ring of this user are replaced; any other file
    /// at either path is an error, and neither is touched.
    pub fn bind(path: &Path) -> Result<JobInbox> {
        let stale = stale_socket(path)?;
        let ring = JobRing::create(&ring::path_for(path), ring::CAPACITY)?;
        let io = |e| Error::os(format!("binding the job API socket {}", path.display()), e);
        if stale {
            std::fs::remove_file(path).map_err(io)?;
        }
        let socket = UnixDatagram::bind(path).map_err(io)?;
        socket.set_nonblocking(true).map_err(io)?;
        Ok(JobInbox { ring, socket, path: path.to_path_buf(), malformed: 0 })
    }

    /// Ring records that did not check, ring slots given up, records the full ring refused.
    pub fn ring_counts(&self) -> (u64, u64, u64) {
        (self.ring.malformed, self.ring.lost, self.ring.full())
    }

    /// Every job reported since the last call (at most a bounded number): the ring's, then the
    /// socket's.
    pub fn drain(&mut self) -> Vec<JobDone> {
        let mut out = Vec::new();
        self.ring.drain(crate::rt::now_ns(), &mut out);
        self.drain_into(&mut out);
        out
    }

    /// Every job reported until `deadline_ns` (CLOCK_MONOTONIC): datagrams as they arrive (a
    /// Unix datagram socket queues only `net.unix.max_dgram_qlen` of them, 10 by default, and
    /// tasks never wait for the agent, so a socket read once per interval would drop every job
    /// beyond the tenth), the ring once, at the end. At most [`MAX_PER_POLL`] datagrams (returns
    /// early then).
    pub fn collect_until(&mut self, deadline_ns: u64) -> Vec<JobDone> {
        let mut out = Vec::new();
        loop {
            self.drain_into(&mut out);
            let now = crate::rt::now_ns();
            if now >= deadline_ns || out.len() >= MAX_PER_POLL || rtvirt_os::signals::interrupted() {
                self.ring.drain(now, &mut out);
                return out;
            }
            let wait_ms = (deadline_ns - now).div_ceil(1_000_000).min(1_000) as i32;
            let mut fd = libc::pollfd { fd: self.socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd for the duration of the call.
            unsafe { libc::poll(&mut fd, 1, wait_ms) };
        }
    }

    fn drain_into(&mut self, out: &mut Vec<JobDone>) {
        let mut buf = [0u8; MAX_DATAGRAM];
        while out.len() < MAX_PER_POLL {
            match self.socket.recv(&mut buf) {
                Ok(n) => match parse(&buf[..n]) {
                    Some(j) => out.push(j),
                    None => self.malformed += 1,
                },
                Err(_) => break,
            }
        }
    }
}

/// Whether `path` holds a socket left by an agent that is gone (to be replaced); false if
/// nothing is there. Anything but a socket, or a socket something is bound to, is an error.
fn stale_socket(path: &Path) -> Result<bool> {
    let refuse = |what: &str| {
        Err(Error::input(
            "--api-socket",
            format!("{} {what}: refusing to replace it (give another --api-socket)", path.display()),
        ))
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::os(format!("checking {}", path.display()), e)),
        Ok(m) if !m.file_type().is_socket() => refuse("exists and is not a socket"),
        // Only a socket that nobody is bound to refuses the connection.
        Ok(_) => match UnixDatagram::unbound().and_then(|s| s.connect(path)) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(true),
            _ => refuse("is a socket in use (another guest-agent?)"),
        },
    }
}

impl Drop for JobInbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_beyond_the_sockets_queue_is_read_as_it_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api.sock");
        let mut inbox = JobInbox::bind(&path).unwrap();
        let sender = std::thread::spawn({
            let path = path.clone();
            move || {
                let s = UnixDatagram::unbound().unwrap();
                s.set_nonblocking(true).unwrap();
                // ten times net.unix.max_dgram_qlen (10), 2 ms apart; the non-blocking sender
                // drops what finds the queue full, as a task without the ring does
                for i in 0..100 {
                    let _ = s.send_to(format!("g.t0 1 1000000 1000000 {i}").as_bytes(), &path);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
        });
        let mut got = Vec::new();
        while !sender.is_finished() {
            got.extend(inbox.collect_until(crate::rt::now_ns() + 50_000_000));
        }
        got.extend(inbox.drain());
        // read once at the end, the queue would have kept 10
        assert!(got.len() >= 50, "{} of 100 jobs read", got.len());
    }

    #[test]
    fn a_burst_through_the_ring_is_all_read_at_once_and_datagrams_still_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api.sock");
        let mut inbox = JobInbox::bind(&path).unwrap();
        let r = JobReporter::to(&path).unwrap();
        assert!(r.has_ring());
        // a thousand times the socket's queue, with nobody reading until the end
        for i in 0..10_000 {
            r.job_done("g.t1", 1_000_000, 900_000, i);
        }
        UnixDatagram::unbound().unwrap().send_to(b"other 5 1000 1000 7", &path).unwrap();
        let got = inbox.drain();
        assert_eq!(got.len(), 10_001);
        let ring_execs: Vec<u64> = got.iter().filter(|j| j.name == "g.t1").map(|j| j.exec_ns).collect();
        assert_eq!(ring_execs, (0..10_000).collect::<Vec<_>>());
        assert_eq!(got.last().map(|j| (j.name.as_str(), j.exec_ns)), Some(("other", 7)));
        assert_eq!(inbox.ring_counts(), (0, 0, 0));
        drop(inbox);
        assert!(!ring::path_for(&path).exists(), "the ring is removed with the inbox");
    }

    #[test]
    fn jobs_reach_the_inbox_and_garbage_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        let mut inbox = JobInbox::bind(&path).unwrap();
        let r = JobReporter::to(&path).unwrap();
        r.job_done("t0", 10_000_000, 10_000_000, 1_234);
        r.socket.send_to(b"t0 x y z", &path).unwrap();
        let jobs = inbox.drain();
        let tid = unsafe { libc::gettid() } as u32;
        let want = JobDone { name: "t0".into(), tid, period_ns: 10_000_000, deadline_ns: 10_000_000, exec_ns: 1_234 };
        assert_eq!(jobs, vec![want]);
        assert_eq!(inbox.malformed, 1);
        drop(inbox);
        r.job_done("t0", 1, 1, 1); // no agent: dropped silently
        assert!(!path.exists());
    }
}
