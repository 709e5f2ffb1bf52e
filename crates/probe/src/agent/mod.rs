//! `rtvirt guest-agent`: runs inside a guest and tells the host about the guest's real-time tasks,
//! without any change to the guest kernel. Every interval it writes one
//! `rtvirt_model::agent_wire::AgentReport` line per task to the host: tasks that call the job API
//! ([`jobs`]) with the execution time of each job, the other SCHED_DEADLINE/FIFO/RR threads
//! ([`threads`]) with one mean per interval from schedstat. Tasks append their jobs to a
//! shared-memory ring ([`ring`]) that the agent reads once per interval, so a job wakes nobody. The port is the virtio-serial port
//! named [`PORT_NAME`] (found in `/sys/class/virtio-ports`), or any file, FIFO or Unix stream
//! socket given. Writes never block: what the port does not take is counted as dropped.
//!
//! Burns 2014 let the host learn guest task parameters by trapping only begin/end of job
//! segments; this agent is the cooperative equivalent: only job boundaries cross to the host.

pub mod jobs;
pub mod record;
pub mod ring;
pub mod threads;

use crate::error::{Error, Result};
use crate::rt;
use jobs::{JobDone, JobInbox};
use rtvirt_model::agent_wire::{AgentReport, JobSource, AGENT_PROTOCOL, MAX_JOBS_PER_REPORT};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use threads::{RtThreads, ThreadJobs};

/// The name of the agent's virtio-serial port (QEMU `virtserialport,name=...`).
pub const PORT_NAME: &str = "org.rtvirt.agent";
/// How long the agent waits for its port to appear.
const PORT_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The port to write to; None: the virtio-serial port named [`PORT_NAME`].
    pub port: Option<PathBuf>,
    /// The job API's socket.
    pub api_socket: PathBuf,
    pub interval: Duration,
    /// Stop after this long (None: until Ctrl-C/SIGTERM).
    pub duration: Option<Duration>,
}

/// What the agent did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSummary {
    pub lines: u64,
    /// Lines the port did not take.
    pub dropped: u64,
    pub api_jobs: u64,
    pub api_malformed: u64,
    /// Records the ring had no room for (their tasks sent them as datagrams).
    pub ring_full: u64,
    /// Ring slots claimed and never published (given up).
    pub ring_lost: u64,
}

/// Run the agent until its duration ends or it is stopped.
pub fn run(cfg: &AgentConfig) -> Result<AgentSummary> {
    rtvirt_os::signals::install();
    let port_path = match &cfg.port {
        Some(p) => p.clone(),
        None => find_port()?,
    };
    let mut port = open_port(&port_path)?;
    let mut inbox = JobInbox::bind(&cfg.api_socket)?;
    let mut rt_threads = RtThreads::default();
    let mut summary = AgentSummary::default();
    let start = rt::now_ns();
    let end = cfg.duration.map(|d| start + d.as_nanos() as u64);
    let interval = cfg.interval.as_nanos().max(1_000_000) as u64;
    let mut next = start + interval;
    while !rtvirt_os::signals::interrupted() && end.is_none_or(|e| rt::now_ns() < e) {
        let done = inbox.collect_until(next.min(end.unwrap_or(u64::MAX)));
        rt::sleep_until(next.min(end.unwrap_or(u64::MAX)));
        next += interval;
        summary.api_jobs += done.len() as u64;
        let api_tids: Vec<u32> = done.iter().map(|j| j.tid).collect();
        let mut reports = api_reports(done);
        let seen = rt_threads.scan(rt::now_ns(), &|tid| api_tids.contains(&tid));
        reports.extend(seen.into_iter().map(schedstat_report));
        for r in reports {
            let line = serde_json::to_string(&r).expect("reports serialise") + "\n";
            summary.lines += 1;
            if port.write_all(line.as_bytes()).is_err() {
                summary.dropped += 1;
            }
        }
    }
    let (ring_malformed, ring_lost, ring_full) = inbox.ring_counts();
    summary.api_malformed = inbox.malformed + ring_malformed;
    (summary.ring_full, summary.ring_lost) = (ring_full, ring_lost);
    Ok(summary)
}

/// The reports of the jobs sent through the API, one per (task, thread), at most
/// [`MAX_JOBS_PER_REPORT`] jobs a line (more lines if there are more jobs).
fn api_reports(done: Vec<JobDone>) -> Vec<AgentReport> {
    let mut by_task: BTreeMap<(String, u32), (u64, u64, Vec<u64>)> = BTreeMap::new();
    for j in done {
        let e = by_task.entry((j.name, j.tid)).or_insert((j.period_ns, j.deadline_ns, Vec::new()));
        (e.0, e.1) = (j.period_ns, j.deadline_ns);
        e.2.push(j.exec_ns);
    }
    let mut out = Vec::new();
    for ((name, tid), (period_ns, deadline_ns, execs)) in by_task {
        let attr = rtvirt_os::sched::get(tid).unwrap_or_default();
        let policy = match attr.policy {
            rtvirt_os::sched::SCHED_DEADLINE => "deadline",
            rtvirt_os::sched::SCHED_FIFO => "fifo",
            rtvirt_os::sched::SCHED_RR => "rr",
            _ => "other",
        };
        for chunk in execs.chunks(MAX_JOBS_PER_REPORT) {
            out.push(AgentReport {
                v: AGENT_PROTOCOL,
                tid,
                name: name.clone(),
                policy: policy.into(),
                period_ns,
                deadline_ns,
                runtime_ns: 0,
                jobs: chunk.to_vec(),
                how: JobSource::Api,
            });
        }
    }
    out
}

fn schedstat_report(t: ThreadJobs) -> AgentReport {
    AgentReport {
        v: AGENT_PROTOCOL,
        tid: t.tid,
        name: t.name,
        policy: t.policy.into(),
        period_ns: t.period_ns,
        deadline_ns: t.deadline_ns,
        runtime_ns: t.runtime_ns,
        jobs: vec![t.mean_exec_ns],
        how: JobSource::Schedstat,
    }
}

/// `/dev/<port>` of the virtio-serial port named [`PORT_NAME`], waiting for it to appear.
fn find_port() -> Result<PathBuf> {
    let t0 = std::time::Instant::now();
    loop {
        let found = std::fs::read_dir("/sys/class/virtio-ports").ok().and_then(|rd| {
            rd.flatten().find_map(|e| {
                let name = std::fs::read_to_string(e.path().join("name")).ok()?;
                (name.trim() == PORT_NAME).then(|| Path::new("/dev").join(e.file_name()))
            })
        });
        match found {
            Some(p) => return Ok(p),
            None if t0.elapsed() > PORT_WAIT => {
                return Err(Error::input(
                    "--port",
                    format!(
                        "no virtio-serial port named {PORT_NAME} in /sys/class/virtio-ports after {}s (start the \
                         guest with an agent port, or give --port)",
                        PORT_WAIT.as_secs()
                    ),
                ))
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Open the port for non-blocking writes: a Unix stream socket is connected, anything else opened.
fn open_port(path: &Path) -> Result<Box<dyn Write>> {
    let io = |e| Error::os(format!("opening the agent port {}", path.display()), e);
    let is_socket = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket());
    if is_socket {
        let s = std::os::unix::net::UnixStream::connect(path).map_err(io)?;
        s.set_nonblocking(true).map_err(io)?;
        return Ok(Box::new(s));
    }
    let f = std::fs::OpenOptions::new().append(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io)?;
    Ok(Box::new(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_jobs_become_one_report_per_task_within_the_bound() {
        let job = |name: &str, exec| JobDone {
            name: name.into(),
            tid: 0,
            period_ns: 1_000_000,
            deadline_ns: 900_000,
            exec_ns: exec,
        };
        let mut done: Vec<JobDone> = (0..300).map(|i| job("a", i)).collect();
        done.push(job("b", 7));
        let r = api_reports(done);
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].name.as_str(), r[0].jobs.len(), r[1].jobs.len()), ("a", 256, 44));
        assert_eq!((r[2].name.as_str(), r[2].jobs.clone(), r[2].deadline_ns), ("b", vec![7], 900_000));
        for report in &r {
            let line = serde_json::to_string(report).unwrap();
            assert!(rtvirt_model::agent_wire::check_line(line.as_bytes()).is_ok(), "{line}");
        }
    }

    #[test]
    fn the_agent_writes_checked_lines_to_a_file_port() {
        let dir = tempfile::tempdir().unwrap();
        let port = dir.path().join("port");
        std::fs::write(&port, "").unwrap();
        let api = dir.path().join("api.sock");
        let cfg = AgentConfig {
            port: Some(port.clone()),
            api_socket: api.clone(),
            interval: Duration::from_millis(20),
            duration: Some(Duration::from_millis(300)),
        };
        let handle = std::thread::spawn(move || run(&cfg).unwrap());
        let reporter = (0..100)
            .find_map(|_| {
                std::thread::sleep(Duration::from_millis(5));
                api.exists().then(|| jobs::JobReporter::to(&api)).flatten()
            })
            .unwrap();
        assert!(reporter.has_ring());
        // a burst a thousand times the datagram socket's queue (net.unix.max_dgram_qlen, 10)
        for i in 0..10_000 {
            reporter.job_done("ctl", 10_000_000, 10_000_000, 1000 + i);
        }
        let summary = handle.join().unwrap();
        assert_eq!((summary.api_jobs, summary.ring_full, summary.ring_lost, summary.api_malformed), (10_000, 0, 0, 0));
        let text = std::fs::read_to_string(&port).unwrap();
        let jobs: usize = text
            .lines()
            .map(|l| rtvirt_model::agent_wire::check_line(l.as_bytes()).unwrap().report)
            .filter(|r| r.name == "ctl")
            .map(|r| r.jobs.len())
            .sum();
        assert_eq!(jobs, 10_000);
    }
}
