//! The host's end of a guest agent's channel: QEMU's virtio-serial port `org.rtvirt.agent` is a
//! Unix socket in the guest's runtime directory; the host connects, reads without blocking and at
//! most [`MAX_READ_PER_POLL`] bytes per poll, splits lines (a line over
//! `agent_wire::MAX_LINE` is discarded up to its newline, unbuffered), drops lines over the
//! guest's rate bound, checks every line with [`rtvirt_model::agent_wire::check_line`] and keeps
//! what passes per task, in a bounded sliding window. A channel that closes or stays silent for
//! [`SILENCE_NS`] after reporting is "vanished": the caller falls back to host inference.

use rtvirt_model::agent_wire::{self, AgentCounters, AgentReport, JobSource};
use rtvirt_model::observe::{summarise, AgentState, Source, TaskObservation};
use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// Bytes read from the channel per poll at most (the rest waits in the socket).
pub const MAX_READ_PER_POLL: usize = 64 * 1024;
/// Job samples kept per task (a sliding window).
pub const MAX_JOBS_KEPT: usize = 10_000;
/// An agent silent this long after reporting has vanished.
pub const SILENCE_NS: u64 = 3_000_000_000;

/// Lines of one guest's agent, checked, counted and kept per task.
#[derive(Debug, Default)]
pub struct AgentLines {
    partial: Vec<u8>,
    /// Inside a line over the bound: skip up to the next newline.
    skipping: bool,
    second: u64,
    lines_this_second: u64,
    pub counters: AgentCounters,
    tasks: Vec<LearnedTask>,
    last_heard_ns: Option<u64>,
    /// Jobs accepted since the last [`AgentLines::take_new`]: (task name, ns), at most
    /// [`MAX_JOBS_KEPT`].
    fresh: Vec<(String, u64)>,
}

/// What the agent said about one task.
#[derive(Debug, Clone)]
struct LearnedTask {
    latest: AgentReport,
    jobs: VecDeque<u64>,
    samples: u64,
}

impl AgentLines {
    /// Take bytes read at `now_ns` (CLOCK_MONOTONIC).
    pub fn feed(&mut self, bytes: &[u8], now_ns: u64) {
        for chunk in bytes.split_inclusive(|&b| b == b'\n') {
            let complete = chunk.ends_with(b"\n");
            let body = chunk.strip_suffix(b"\n").unwrap_or(chunk);
            if self.skipping {
                self.skipping = !complete;
                continue;
            }
            if self.partial.len() + body.len() > agent_wire::MAX_LINE {
                self.partial.clear();
                self.skipping = !complete;
                self.counters.count(&Err(agent_wire::Fault::Oversized));
                continue;
            }
            self.partial.extend_from_slice(body);
            if complete {
                let line = std::mem::take(&mut self.partial);
                self.line(&line, now_ns);
            }
        }
    }

    fn line(&mut self, line: &[u8], now_ns: u64) {
        let second = now_ns / 1_000_000_000;
        if second != self.second {
            (self.second, self.lines_this_second) = (second, 0);
        }
        self.lines_this_second += 1;
        if self.lines_this_second > agent_wire::MAX_LINES_PER_SEC {
            self.counters.lines += 1;
            self.counters.flooded += 1;
            return;
        }
        let outcome = agent_wire::check_line(line);
        self.counters.count(&outcome);
        if let Ok(checked) = outcome {
            self.keep(checked.report, now_ns);
        }
    }

    fn keep(&mut self, report: AgentReport, now_ns: u64) {
        let known = self.tasks.iter().position(|t| t.latest.tid == report.tid && t.latest.name == report.name);
        let index = match known {
            Some(i) => i,
            None if self.tasks.len() >= agent_wire::MAX_TASKS => {
                self.counters.accepted -= 1;
                self.counters.too_many_tasks += 1;
                return;
            }
            None => {
                self.tasks.push(LearnedTask { latest: report.clone(), jobs: VecDeque::new(), samples: 0 });
                self.tasks.len() - 1
            }
        };
        self.last_heard_ns = Some(now_ns);
        let task = &mut self.tasks[index];
        for &j in &report.jobs {
            if task.jobs.len() == MAX_JOBS_KEPT {
                task.jobs.pop_front();
            }
            task.jobs.push_back(j);
        }
        task.samples += report.jobs.len() as u64;
        let room = MAX_JOBS_KEPT.saturating_sub(self.fresh.len());
        self.fresh.extend(report.jobs.iter().take(room).map(|&j| (report.name.clone(), j)));
        task.latest = report;
    }

    /// The agent's state at `now_ns`, given whether its channel is still open.
    pub fn state(&self, now_ns: u64, open: bool) -> AgentState {
        match self.last_heard_ns {
            None => AgentState::Absent,
            Some(t) if open && now_ns.saturating_sub(t) <= SILENCE_NS => AgentState::Reporting,
            Some(_) => AgentState::Vanished,
        }
    }

    /// The tasks learned, with at least one job sample each.
    pub fn tasks(&self) -> Vec<TaskObservation> {
        self.tasks
            .iter()
            .filter(|t| !t.jobs.is_empty())
            .map(|t| {
                let jobs: Vec<u64> = t.jobs.iter().copied().collect();
                TaskObservation {
                    name: t.latest.name.clone(),
                    tid: t.latest.tid,
                    source: Source::Agent,
                    policy: format!(
                        "{}{}",
                        t.latest.policy,
                        if t.latest.how == JobSource::Schedstat { " (schedstat)" } else { "" }
                    ),
                    period_ns: t.latest.period_ns,
                    deadline_ns: t.latest.deadline_ns,
                    exec: summarise(&jobs),
                    samples: t.samples,
                }
            })
            .collect()
    }

    /// The jobs accepted since the previous call: (task name, execution time in ns).
    pub fn take_new(&mut self) -> Vec<(String, u64)> {
        std::mem::take(&mut self.fresh)
    }

    /// The most recent `n` job samples of every task with their periods: (period_ns, jobs).
    pub fn recent(&self, n: usize) -> Vec<(u64, Vec<u64>)> {
        self.tasks
            .iter()
            .map(|t| (t.latest.period_ns, t.jobs.iter().skip(t.jobs.len().saturating_sub(n)).copied().collect()))
            .collect()
    }
}

/// A guest agent's channel: the socket, (re)connected while polled, and its lines.
#[derive(Debug)]
pub struct AgentChannel {
    pub socket: PathBuf,
    stream: Option<UnixStream>,
    pub lines: AgentLines,
    buf: Vec<u8>,
}

impl AgentChannel {
    pub fn new(socket: PathBuf) -> AgentChannel {
        AgentChannel { socket, stream: None, lines: AgentLines::default(), buf: vec![0; MAX_READ_PER_POLL] }
    }

    /// Whether the channel is connected.
    pub fn open(&self) -> bool {
        self.stream.is_some()
    }

    /// Read what the agent sent (at most [`MAX_READ_PER_POLL`] bytes), connecting if needed.
    pub fn poll(&mut self, now_ns: u64) {
        if self.stream.is_none() {
            self.stream = UnixStream::connect(&self.socket).ok().filter(|s| s.set_nonblocking(true).is_ok());
        }
        let Some(stream) = self.stream.as_mut() else { return };
        let mut total = 0;
        while total < MAX_READ_PER_POLL {
            match stream.read(&mut self.buf[..MAX_READ_PER_POLL - total]) {
                Ok(0) => {
                    self.stream = None; // closed: QEMU ended, or the chardev dropped us
                    return;
                }
                Ok(n) => {
                    total += n;
                    self.lines.feed(&self.buf[..n], now_ns);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.stream = None;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn report(tid: u32, period: u64, jobs: &[u64]) -> String {
        serde_json::to_string(&AgentReport {
            v: 1,
            tid,
            name: format!("t{tid}"),
            policy: "deadline".into(),
            period_ns: period,
            deadline_ns: period,
            runtime_ns: 0,
            jobs: jobs.to_vec(),
            how: JobSource::Api,
        })
        .unwrap()
            + "\n"
    }

    #[test]
    fn lines_split_across_reads_are_joined_and_kept_per_task() {
        let mut a = AgentLines::default();
        let text = report(1, 10_000_000, &[1_000, 2_000]) + &report(2, 20_000_000, &[5_000]);
        let (x, y) = text.as_bytes().split_at(17);
        a.feed(x, 0);
        a.feed(y, 1);
        a.feed(report(1, 10_000_000, &[3_000]).as_bytes(), 2);
        let tasks = a.tasks();
        assert_eq!(tasks.len(), 2);
        assert_eq!((tasks[0].samples, tasks[0].exec.max, tasks[0].period_ns), (3, 3_000, 10_000_000));
        assert_eq!((a.counters.lines, a.counters.accepted), (3, 3));
        assert_eq!(a.recent(2)[0], (10_000_000, vec![2_000, 3_000]));
        assert_eq!(a.take_new().len(), 4);
        assert!(a.take_new().is_empty());
    }

    #[test]
    fn malformed_oversized_lying_and_flooding_lines_are_counted_never_kept() {
        let mut a = AgentLines::default();
        a.feed(b"not json\n{\"v\":1}\n", 0);
        // An oversized line, in pieces, without ever holding more than the bound.
        let huge = vec![b'x'; agent_wire::MAX_LINE * 3];
        a.feed(&huge[..5000], 0);
        a.feed(&huge[5000..], 0);
        a.feed(b"still the same line\n", 0);
        a.feed(report(3, 0, &[1]).as_bytes(), 0); // period 0
        a.feed(report(4, 1_000_000, &[9_000_000]).as_bytes(), 0); // a job longer than its period
        assert!(a.partial.capacity() <= agent_wire::MAX_LINE * 2);
        let c = a.counters;
        assert_eq!((c.malformed, c.oversized, c.impossible, c.clamped, c.accepted), (2, 1, 1, 1, 1));
        assert_eq!(a.tasks()[0].exec.max, 1_000_000, "clamped to the period");
        // A flood: more lines in one second than the bound.
        let mut f = AgentLines::default();
        let flood = report(5, 1_000_000, &[1]).repeat(agent_wire::MAX_LINES_PER_SEC as usize + 50);
        f.feed(flood.as_bytes(), 7_000_000_000);
        assert_eq!((f.counters.accepted, f.counters.flooded), (agent_wire::MAX_LINES_PER_SEC, 50));
        f.feed(report(5, 1_000_000, &[1]).as_bytes(), 8_000_000_000);
        assert_eq!(f.counters.accepted, agent_wire::MAX_LINES_PER_SEC + 1, "the next second is accepted");
        // Too many tasks.
        let mut m = AgentLines::default();
        for tid in 0..(agent_wire::MAX_TASKS as u32 + 3) {
            m.feed(report(tid, 1_000_000, &[1]).as_bytes(), 0);
        }
        assert_eq!((m.tasks().len(), m.counters.too_many_tasks), (agent_wire::MAX_TASKS, 3));
    }

    #[test]
    fn an_agent_that_stops_reporting_or_closes_has_vanished() {
        let mut a = AgentLines::default();
        assert_eq!(a.state(0, true), AgentState::Absent);
        a.feed(report(1, 1_000_000, &[1]).as_bytes(), 10);
        assert_eq!(a.state(20, true), AgentState::Reporting);
        assert_eq!(a.state(20, false), AgentState::Vanished);
        assert_eq!(a.state(10 + SILENCE_NS + 1, true), AgentState::Vanished);
    }

    #[test]
    fn the_channel_reads_a_real_socket_and_notices_it_closing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let mut ch = AgentChannel::new(path);
        ch.poll(0);
        let (mut guest, _) = listener.accept().unwrap();
        guest.write_all(report(1, 1_000_000, &[10, 20]).as_bytes()).unwrap();
        for _ in 0..100 {
            ch.poll(1);
            if ch.lines.counters.accepted > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(ch.lines.tasks()[0].samples, 2);
        drop(guest);
        for _ in 0..100 {
            ch.poll(2);
            if !ch.open() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(ch.lines.state(3, ch.open()), AgentState::Vanished);
    }
}
