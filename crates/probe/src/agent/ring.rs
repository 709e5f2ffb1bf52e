//! The job API's shared-memory ring: tasks append one fixed-size record per job without a system
//! call and without waking the agent, which reads the ring once per reporting interval. In a TCG
//! guest every wake-up of the agent is an emulated context switch, and a datagram per job woke it
//! per job (docs/PERFORMANCE.md "Observation overhead").
//!
//! The ring is a file `<api socket>.ring` the agent creates and both ends map `MAP_SHARED`: a
//! bounded multi-producer queue after Vyukov 2010 (each slot carries a sequence number that says
//! whose turn it is; producers claim a slot by compare-and-swap on the write position). The agent
//! is the only consumer and keeps its read position private, so a task that scribbles on the
//! ring can lose records or make them lie, never make the agent read out of bounds or stall: a
//! record is checked before it is taken, and a slot claimed but not published for
//! [`STUCK_NS`] (its task died halfway) is skipped and counted. A full ring refuses the record;
//! the task then sends it as a datagram ([`super::jobs::JobReporter`]).

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::record::JobDone;

/// "RTVJOBR1": the layout below, version 1.
const MAGIC: u64 = u64::from_le_bytes(*b"RTVJOBR1");
/// Slots of the ring the agent creates: 200 ms of jobs at 160 kHz.
pub const CAPACITY: u64 = 1 << 15;
/// Header: magic, capacity, then (own cache line) the write position and the full count.
const HEADER_WORDS: usize = 16;
const W_MAGIC: usize = 0;
const W_CAPACITY: usize = 1;
const W_ENQUEUE: usize = 8;
const W_FULL: usize = 9;
/// A slot: sequence, tid | name length << 32, period, deadline, exec, 3 words of name.
const SLOT_WORDS: usize = 8;
/// Longest task name a slot holds (longer names go as datagrams).
pub const MAX_NAME: usize = 24;
/// A slot claimed but unpublished this long is given up (its task died between the two steps).
pub const STUCK_NS: u64 = 1_000_000_000;
/// Attempts of a producer to claim a slot before it gives up (others racing it, or a scribbled ring).
const CLAIM_TRIES: usize = 64;

/// The ring's file next to the job API's socket.
pub fn path_for(api_socket: &Path) -> PathBuf {
    let mut p = api_socket.as_os_str().to_owned();
    p.push(".ring");
    PathBuf::from(p)
}

/// A `MAP_SHARED` mapping of a ring file, seen as 64-bit words.
struct Mapping {
    words: *const AtomicU64,
    len_words: usize,
}

// SAFETY: the mapping is only accessed through atomics, and unmapped once, on drop.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn map(file: &File, len_words: usize) -> std::io::Result<Mapping> {
        let len = len_words * 8;
        // SAFETY: a fresh shared mapping of `len` bytes of an open file; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping { words: p as *const AtomicU64, len_words })
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.len_words, "ring word {i} beyond {}", self.len_words);
        // SAFETY: in bounds (checked), page-aligned base, and only ever accessed atomically.
        unsafe { &*self.words.add(i) }
    }

    fn slot(&self, capacity: u64, pos: u64, field: usize) -> &AtomicU64 {
        self.word(HEADER_WORDS + (pos & (capacity - 1)) as usize * SLOT_WORDS + field)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.words as *mut libc::c_void, self.len_words * 8) };
    }
}

fn words_for(capacity: u64) -> usize {
    HEADER_WORDS + capacity as usize * SLOT_WORDS
}

/// A task's end: appends records.
pub struct RingWriter {
    map: Mapping,
    capacity: u64,
}

impl RingWriter {
    /// The ring at `path` if an agent made one (None: no ring, or not one this code understands).
    pub fn open(path: &Path) -> Option<RingWriter> {
        let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
        let len = file.metadata().ok()?.len();
        if len < (HEADER_WORDS * 8) as u64 || len % 8 != 0 {
            return None;
        }
        let map = Mapping::map(&file, (len / 8) as usize).ok()?;
        let capacity = map.word(W_CAPACITY).load(Ordering::Relaxed);
        let fits = capacity.is_power_of_two() && capacity <= 1 << 24 && words_for(capacity) as u64 * 8 == len;
        (map.word(W_MAGIC).load(Ordering::Relaxed) == MAGIC && fits).then_some(RingWriter { map, capacity })
    }

    /// Append one job; false if the ring had no room (or the name does not fit a slot).
    pub fn push(&self, name: &str, tid: u32, period_ns: u64, deadline_ns: u64, exec_ns: u64) -> bool {
        if name.is_empty() || name.len() > MAX_NAME {
            return false;
        }
        let enqueue = self.map.word(W_ENQUEUE);
        let mut pos = enqueue.load(Ordering::Relaxed);
        for _ in 0..CLAIM_TRIES {
            let seq = self.map.slot(self.capacity, pos, 0).load(Ordering::Acquire);
            match (seq as i64).wrapping_sub(pos as i64) {
                0 => match enqueue.compare_exchange_weak(pos, pos + 1, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => {
                        self.fill(pos, name, tid, [period_ns, deadline_ns, exec_ns]);
                        return true;
                    }
                    Err(now) => pos = now,
                },
                d if d < 0 => break,
                _ => pos = enqueue.load(Ordering::Relaxed),
            }
        }
        self.map.word(W_FULL).fetch_add(1, Ordering::Relaxed);
        false
    }

    fn fill(&self, pos: u64, name: &str, tid: u32, times: [u64; 3]) {
        let field = |f| self.map.slot(self.capacity, pos, f);
        field(1).store(tid as u64 | (name.len() as u64) << 32, Ordering::Relaxed);
        for (i, t) in times.into_iter().enumerate() {
            field(2 + i).store(t, Ordering::Relaxed);
        }
        let mut bytes = [0u8; MAX_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        for (i, w) in bytes.chunks_exact(8).enumerate() {
            field(5 + i).store(u64::from_le_bytes(w.try_into().expect("8 bytes")), Ordering::Relaxed);
        }
        field(0).store(pos + 1, Ordering::Release);
    }
}

/// The agent's end: creates the ring (removed on drop) and takes what tasks appended.
pub struct JobRing {
    map: Mapping,
    path: PathBuf,
    capacity: u64,
    /// The agent's own read position (never read back from the shared file).
    dequeue: u64,
    /// Since when the next slot has been claimed but not published.
    stuck_since: Option<u64>,
    /// Records that did not check (name not UTF-8 or with blanks, length out of range).
    pub malformed: u64,
    /// Slots given up after [`STUCK_NS`].
    pub lost: u64,
}

impl JobRing {
    /// A fresh ring of `capacity` slots (a power of two) at `path`, readable by its owner only.
    /// What is at `path` already is replaced only if it is a ring an agent of this user made.
    pub fn create(path: &Path, capacity: u64) -> Result<JobRing> {
        assert!(capacity.is_power_of_two(), "ring capacity {capacity}");
        remove_stale(path)?;
        let io = |e| Error::os(format!("creating the job ring {}", path.display()), e);
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(path).map_err(io)?;
        file.set_len(words_for(capacity) as u64 * 8).map_err(io)?;
        let map = Mapping::map(&file, words_for(capacity)).map_err(io)?;
        for pos in 0..capacity {
            map.slot(capacity, pos, 0).store(pos, Ordering::Relaxed);
        }
        map.word(W_CAPACITY).store(capacity, Ordering::Relaxed);
        map.word(W_MAGIC).store(MAGIC, Ordering::Release);
        Ok(JobRing { map, path: path.to_path_buf(), capacity, dequeue: 0, stuck_since: None, malformed: 0, lost: 0 })
    }

    /// Records the ring had no room for (the tasks sent them as datagrams instead).
    pub fn full(&self) -> u64 {
        self.map.word(W_FULL).load(Ordering::Relaxed)
    }

    /// Every record published since the last call, in order, at most one ring's worth; `now_ns`
    /// (CLOCK_MONOTONIC) times a slot that stays claimed.
    pub fn drain(&mut self, now_ns: u64, out: &mut Vec<JobDone>) {
        for _ in 0..self.capacity {
            let pos = self.dequeue;
            let seq = self.map.slot(self.capacity, pos, 0).load(Ordering::Acquire);
            if seq == pos + 1 {
                match self.record(pos) {
                    Some(j) => out.push(j),
                    None => self.malformed += 1,
                }
            } else if !self.given_up(pos, now_ns) {
                return;
            }
            self.map.slot(self.capacity, pos, 0).store(pos + self.capacity, Ordering::Release);
            self.dequeue += 1;
            self.stuck_since = None;
        }
    }

    /// Whether the unpublished slot at `pos` is to be skipped: producers have moved past it and
    /// it has stayed so for [`STUCK_NS`].
    fn given_up(&mut self, pos: u64, now_ns: u64) -> bool {
        let claimed = self.map.word(W_ENQUEUE).load(Ordering::Relaxed) > pos;
        if !claimed {
            self.stuck_since = None;
            return false;
        }
        let since = *self.stuck_since.get_or_insert(now_ns);
        if now_ns.saturating_sub(since) < STUCK_NS {
            return false;
        }
        self.lost += 1;
        true
    }

    fn record(&self, pos: u64) -> Option<JobDone> {
        let field = |f| self.map.slot(self.capacity, pos, f).load(Ordering::Relaxed);
        let (tid, len) = (field(1) as u32, (field(1) >> 32) as usize);
        if len == 0 || len > MAX_NAME {
            return None;
        }
        let mut bytes = [0u8; MAX_NAME];
        for i in 0..MAX_NAME / 8 {
            bytes[i * 8..i * 8 + 8].copy_from_slice(&field(5 + i).to_le_bytes());
        }
        let name = std::str::from_utf8(&bytes[..len]).ok()?;
        if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return None;
        }
        let (period_ns, deadline_ns, exec_ns) = (field(2), field(3), field(4));
        Some(JobDone { name: name.to_string(), tid, period_ns, deadline_ns, exec_ns })
    }
}

/// Remove the ring a previous agent left at `path`: only a regular file of this user that starts
/// with the ring's magic; anything else there is refused, untouched.
fn remove_stale(path: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::os(format!("checking {}", path.display()), e)),
        Ok(m) => m,
    };
    // SAFETY: geteuid has no preconditions.
    let mine = meta.uid() == unsafe { libc::geteuid() };
    if !(meta.file_type().is_file() && mine && starts_with_magic(path)) {
        return Err(Error::input(
            "--api-socket",
            format!(
                "{} exists and is not a job ring that rtvirt guest-agent made: refusing to replace it (give another \
                 --api-socket, or remove it yourself)",
                path.display()
            ),
        ));
    }
    std::fs::remove_file(path).map_err(|e| Error::os(format!("removing the stale job ring {}", path.display()), e))
}

/// Whether the file at `path` (not followed if a symbolic link) starts with the ring's magic.
fn starts_with_magic(path: &Path) -> bool {
    let mut head = [0u8; 8];
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == MAGIC.to_ne_bytes())
}

impl Drop for JobRing {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(capacity: u64) -> (tempfile::TempDir, JobRing, RingWriter) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api.sock.ring");
        let ring = JobRing::create(&path, capacity).unwrap();
        let writer = RingWriter::open(&path).unwrap();
        (dir, ring, writer)
    }

    #[test]
    fn records_come_out_in_order_across_laps_and_a_full_ring_refuses() {
        let (_dir, mut ring, w) = ring(8);
        let mut got = Vec::new();
        for lap in 0..3u64 {
            for i in 0..8 {
                assert!(w.push("g.t0", 7, 10, 9, lap * 8 + i));
            }
            assert!(!w.push("g.t0", 7, 10, 9, 99), "a ninth record fits a ring of 8");
            ring.drain(0, &mut got);
        }
        assert_eq!(got.iter().map(|j| j.exec_ns).collect::<Vec<_>>(), (0..24).collect::<Vec<_>>());
        assert_eq!((got[0].name.as_str(), got[0].tid, got[0].period_ns, got[0].deadline_ns), ("g.t0", 7, 10, 9));
        assert_eq!(ring.full(), 3);
        assert!(!w.push(&"x".repeat(MAX_NAME + 1), 1, 1, 1, 1), "a name longer than a slot");
    }

    #[test]
    fn threads_racing_lose_nothing() {
        let (_dir, mut ring, w) = ring(1 << 15);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let w = &w;
                s.spawn(move || (0..5_000).for_each(|i| assert!(w.push(&format!("g.t{t}"), t as u32, 1, 1, i))));
            }
        });
        let mut got = Vec::new();
        ring.drain(0, &mut got);
        assert_eq!(got.len(), 20_000);
        for t in 0..4 {
            let mine: Vec<u64> = got.iter().filter(|j| j.tid == t).map(|j| j.exec_ns).collect();
            assert_eq!(mine, (0..5_000).collect::<Vec<_>>(), "task {t}'s records in its order");
        }
    }

    #[test]
    fn a_scribbled_ring_costs_records_not_the_agent() {
        let (_dir, mut ring, w) = ring(8);
        assert!(w.push("ok", 1, 1, 1, 1));
        assert!(w.push("bad", 1, 1, 1, 2));
        assert!(w.push("ok", 1, 1, 1, 3));
        // a task overwrites record 1's name length and name with garbage
        ring.map.slot(8, 1, 1).store(1 | 200 << 32, Ordering::Relaxed);
        // and claims slot 3 without ever publishing it
        ring.map.word(W_ENQUEUE).store(4, Ordering::Relaxed);
        let mut got = Vec::new();
        ring.drain(0, &mut got);
        assert_eq!(got.iter().map(|j| j.exec_ns).collect::<Vec<_>>(), [1, 3]);
        assert_eq!((ring.malformed, ring.lost), (1, 0));
        ring.drain(STUCK_NS / 2, &mut got);
        assert_eq!(ring.lost, 0, "given up too early");
        ring.drain(STUCK_NS + 1, &mut got);
        assert_eq!(ring.lost, 1);
        assert!(w.push("ok", 1, 1, 1, 4));
        ring.drain(STUCK_NS + 2, &mut got);
        assert_eq!(got.last().map(|j| j.exec_ns), Some(4), "the ring works after the stuck slot");
    }

    #[test]
    fn a_file_that_is_not_a_ring_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.ring");
        std::fs::write(&p, vec![0u8; words_for(8) * 8]).unwrap();
        assert!(RingWriter::open(&p).is_none());
        std::fs::write(&p, b"short").unwrap();
        assert!(RingWriter::open(&p).is_none());
        assert!(RingWriter::open(&dir.path().join("none")).is_none());
    }
}
