//! One process per guest. The parent ([`super::run`]) starts the worker command once per guest
//! (by default this executable with the hidden `measure tasks-worker` subcommand), writes the
//! guest's [`WorkerSpec`] as one JSON line on the worker's stdin, waits until every worker is
//! ready (in its core's exclusive cpuset, pinned, work calibrated), then writes one
//! `START <start_ns> <end_ns>` line to all of them. Each vCPU thread of a worker (one per
//! real-time vCPU of the guest, each in its own core's cpuset) then takes its vCPU's
//! SCHED_DEADLINE reservation, runs the tasks bound to it, goes back to SCHED_OTHER; the worker
//! prints one `RTVIRT-TASKS-RESULT <json>` line ([`WorkerOutcome`]).
//!
//! Stopping: Ctrl-C/SIGTERM in the parent is forwarded as SIGTERM; a worker stops its loop,
//! restores its scheduling and reports. A worker dies with SIGTERM when its parent dies
//! (PR_SET_PDEATHSIG). A worker that dies without a result stops the others; the parent's guards
//! (exclusive cpusets, root load balancing) are restored whatever happened to the workers.

use super::global;
use super::guest;
use super::protocol::{GuestSpec, TaskOutcome, VcpuWork, WorkerOutcome, WorkerSpec};
use super::work;
use crate::agent::jobs::JobReporter;
use crate::error::{Context, Error, Result};
use crate::rt::{self, Sched};
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Prefix of the worker's ready line.
const READY: &str = "RTVIRT-TASKS-READY";
/// Prefix of the worker's result line.
const RESULT: &str = "RTVIRT-TASKS-RESULT ";
/// How long workers may take to get ready (calibration on a busy machine included).
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// After the end of the run, how long workers have to report before they are killed.
const REPORT_GRACE_NS: u64 = 5_000_000_000;

/// The program (and leading arguments, environment) started once per guest.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

static WORKER_COMMAND: Mutex<Option<WorkerCommand>> = Mutex::new(None);

/// Replace the worker command (tests run their own harness as the worker).
pub fn set_worker_command(cmd: WorkerCommand) {
    *WORKER_COMMAND.lock().unwrap_or_else(|e| e.into_inner()) = Some(cmd);
}

/// The worker command: by default this executable, `measure tasks-worker` (the rtvirt CLI).
fn worker_command() -> Result<WorkerCommand> {
    if let Some(c) = WORKER_COMMAND.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Ok(c);
    }
    let program =
        std::env::current_exe().context(|| "cannot find the rtvirt executable to start the guest workers".into())?;
    Ok(WorkerCommand { program, args: vec!["measure".into(), "tasks-worker".into()], env: vec![] })
}

// ---------------------------------------------------------------------------------------------
// Worker side.

/// Entry point of a worker process; returns its exit code (0 reported, 2 failed).
pub fn worker_main() -> i32 {
    rtvirt_os::signals::install();
    match worker_run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rtvirt: tasks worker: {e}");
            2
        }
    }
}

fn worker_run() -> Result<()> {
    let mut input = std::io::stdin().lock();
    let mut line = String::new();
    input.read_line(&mut line).context(|| "cannot read the worker's specification".into())?;
    let spec: WorkerSpec =
        serde_json::from_str(&line).map_err(|e| Error::Failed(format!("bad worker specification: {e}")))?;
    let _mem = rt::MemoryLock::acquire()?;
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(i32, f64)>>();
    let mut starts = Vec::new();
    // The job-boundary API of the guest agent (`rtvirt guest-agent`), when one runs.
    let agent = crate::agent::jobs::JobReporter::from_env();
    let shared = spec.global.then(|| global::Shared::new(spec.guest.clone(), spec.seed));
    std::thread::scope(|scope| {
        let handles: Vec<_> = spec
            .vcpus
            .iter()
            .enumerate()
            .map(|(me, v)| {
                let (go_tx, go_rx) = mpsc::channel::<(u64, u64)>();
                starts.push(go_tx);
                let (ready, stop, spec, agent) = (ready_tx.clone(), &stop, &spec, agent.as_ref());
                let seed = spec.seed.wrapping_add(v.id as u64 * 7919);
                let run = match &shared {
                    Some(g) => VcpuRun::Global(g, (me, spec.vcpus.len())),
                    None => VcpuRun::Own(spec.guest.subset(&v.tasks), seed),
                };
                // named for the trace (`--explain`): the kernel keeps 15 bytes
                let name = rtvirt_model::scenario::sim::vcpu_thread_name(&spec.guest.name, v.id);
                std::thread::Builder::new()
                    .name(name)
                    .spawn_scoped(scope, move || vcpu_thread(v, (run, agent), ready, go_rx, stop))
                    // as `scope.spawn` does: the OS refusing a thread is not recoverable here
                    .expect("the OS refused a vCPU thread")
            })
            .collect();
        drop(ready_tx);
        let started = start_vcpus(&spec, &ready_rx, &mut input, starts, &stop);
        let runs: Vec<Option<guest::GuestRun>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Error::Failed("a vCPU thread panicked".into()))))
            .collect::<Result<_>>()?;
        let Some((per_ns, watchdog)) = started? else { return Ok(()) };
        let runaways = watchdog.finish();
        let shared_tasks = shared.as_ref().and_then(|g| g.outcomes());
        report(&spec, runs.into_iter().flatten().collect(), shared_tasks, per_ns, runaways)
    })
}

/// Wait until every vCPU thread is ready, tell the parent, read the start line and hand the run's
/// window to the threads under one watchdog. None: the parent gave up before the start.
fn start_vcpus(
    spec: &WorkerSpec,
    ready: &mpsc::Receiver<Result<(i32, f64)>>,
    input: &mut impl BufRead,
    starts: Vec<mpsc::Sender<(u64, u64)>>,
    stop: &Arc<AtomicBool>,
) -> Result<Option<(f64, rt::Watchdog)>> {
    let mut tids = Vec::new();
    let mut per_ns = 0.0;
    for _ in &spec.vcpus {
        let (tid, speed) =
            ready.recv().map_err(|_| Error::Failed("a vCPU thread ended before it was ready".into()))??;
        tids.push(tid);
        per_ns = if per_ns == 0.0 { speed } else { per_ns };
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{READY}").and_then(|_| out.flush()).context(|| "cannot talk to the parent".into())?;
    let mut line = String::new();
    input.read_line(&mut line).context(|| "cannot read the start line".into())?;
    let mut f = line.split_whitespace();
    let (start, end) =
        match (f.next(), f.next().and_then(|v| v.parse::<u64>().ok()), f.next().and_then(|v| v.parse::<u64>().ok())) {
            (Some("START"), Some(s), Some(e)) if s < e => (s, e),
            _ => return Ok(None), // the parent gave up before the start: nothing ran, nothing to report
        };
    let watchdog = rt::Watchdog::start(stop.clone(), end, Duration::from_secs(2));
    for (tid, go) in tids.into_iter().zip(starts) {
        watchdog.register(tid);
        let _ = go.send((start, end));
    }
    Ok(Some((per_ns, watchdog)))
}

/// What a vCPU thread runs: its own tasks (with its seed), or its share of a global guest
/// (vCPU `me` of `n`).
enum VcpuRun<'a> {
    Own(GuestSpec, u64),
    Global(&'a global::Shared, (usize, usize)),
}

/// One vCPU: enter its core's exclusive cpuset, pin, calibrate, report ready; at the start take
/// the reservation, run its tasks, go back to SCHED_OTHER. None: never started.
fn vcpu_thread(
    v: &VcpuWork,
    (work, agent): (VcpuRun, Option<&JobReporter>),
    ready: mpsc::Sender<Result<(i32, f64)>>,
    go: mpsc::Receiver<(u64, u64)>,
    stop: &AtomicBool,
) -> Result<Option<guest::GuestRun>> {
    let setup = rtvirt_os::cgroup::enter(&v.cpuset_join)
        .map_err(|e| Error::Failed(format!("cannot enter the exclusive cpuset of CPU {}: {}", v.core, Error::from(e))))
        .and_then(|_| rt::pin_current_thread(v.core))
        .map(|_| (rt::gettid(), work::calibrate()));
    let per_ns = match setup {
        Ok((tid, per_ns)) => {
            let _ = ready.send(Ok((tid, per_ns)));
            per_ns
        }
        Err(e) => {
            let _ = ready.send(Err(Error::Failed(e.to_string())));
            return Ok(None);
        }
    };
    drop(ready);
    let Ok((start, end)) = go.recv() else { return Ok(None) };
    rt::set_sched(0, Sched::Deadline(v.reservation))?;
    rt::sleep_until_or_stopped(start, stop);
    let run = match work {
        VcpuRun::Own(guest, seed) => guest::run_tasks(&guest, agent, per_ns, seed, (start, end), stop),
        VcpuRun::Global(shared, vcpu) => global::run_vcpu(shared, vcpu, agent, per_ns, (start, end), stop),
    };
    let _ = rt::set_sched(0, Sched::Other);
    Ok(Some(run))
}

/// The worker's result line: every task's outcome back in the guest's order (a global guest's:
/// `shared_tasks`, from the queues its vCPUs shared).
fn report(
    spec: &WorkerSpec,
    runs: Vec<guest::GuestRun>,
    shared_tasks: Option<Vec<TaskOutcome>>,
    per_ns: f64,
    runaways: Vec<i32>,
) -> Result<()> {
    let mut tasks: Vec<Option<TaskOutcome>> = vec![None; spec.guest.tasks.len()];
    if let Some(shared) = shared_tasks {
        tasks = shared.into_iter().map(Some).collect();
    }
    let mut vcpus = Vec::new();
    for (v, run) in spec.vcpus.iter().zip(runs) {
        vcpus.push((v.id, run.cpu_time_ns, run.utilisation()));
        for (&i, t) in v.tasks.iter().zip(run.tasks) {
            tasks[i] = Some(t);
        }
    }
    let report = WorkerOutcome {
        utilisation: vcpus.iter().map(|v| v.2).sum(),
        cpu_time_ns: vcpus.iter().map(|v| v.1).sum(),
        tasks: tasks
            .into_iter()
            .map(|t| t.ok_or_else(|| Error::Failed("a task ran on no vCPU".into())))
            .collect::<Result<_>>()?,
        vcpus,
        iters_per_ns: per_ns,
        runaways,
        pid: std::process::id(),
    };
    let text = serde_json::to_string(&report).map_err(|e| Error::Failed(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{RESULT}{text}").and_then(|_| out.flush()).context(|| "cannot report to the parent".into())
}

// ---------------------------------------------------------------------------------------------
// Parent side.

enum Msg {
    Ready,
    Result(Box<WorkerOutcome>),
    Bad(String),
    Eof,
}

struct Worker {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    ready: bool,
    result: Option<WorkerOutcome>,
    ended: bool,
    problem: Option<String>,
}

/// What the parent got back: outcomes in guest order, and how long the task sets really ran
/// (from the start to the end, or to the stop when interrupted or a worker failed).
pub struct Run {
    pub outcomes: Vec<WorkerOutcome>,
    pub ran_ns: u64,
    /// When the task sets started (CLOCK_MONOTONIC ns): every task's first release.
    pub start_ns: u64,
}

/// Start one worker per spec, run them for `duration_ns` from `start_at(earliest)` (at or after
/// `earliest`, 50 ms after every worker is ready), collect their outcomes. Any worker that fails
/// stops the others; every child is reaped before this returns.
pub fn run_workers(specs: &[WorkerSpec], duration_ns: u64, start_at: impl Fn(u64) -> u64) -> Result<Run> {
    let cmd = worker_command()?;
    let (tx, rx) = mpsc::channel::<(usize, Msg)>();
    let mut workers: Vec<Worker> = Vec::new();
    let started = specs.iter().enumerate().try_for_each(|(i, spec)| {
        let w = spawn(&cmd, i, spec, tx.clone())?;
        workers.push(w);
        Ok::<(), Error>(())
    });
    drop(tx);
    let result = started.and_then(|_| drive(&mut workers, &rx, duration_ns, start_at));
    // Whatever happened: no worker outlives this call.
    for w in &mut workers {
        w.stdin = None;
        if !w.ended && result.is_err() {
            rtvirt_os::signals::terminate(w.child.id());
        }
    }
    let kill_at = rt::now_ns() + REPORT_GRACE_NS;
    for w in &mut workers {
        while matches!(w.child.try_wait(), Ok(None)) {
            if rt::now_ns() > kill_at {
                let _ = w.child.kill();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    result
}

fn spawn(cmd: &WorkerCommand, i: usize, spec: &WorkerSpec, tx: mpsc::Sender<(usize, Msg)>) -> Result<Worker> {
    let mut command = Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl, getppid, write and _exit are async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        command.pre_exec(move || {
            // The worker dies with SIGTERM when its parent dies; a parent already gone (before
            // the prctl) is not noticed by it, hence the check.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            if libc::getppid() != parent {
                const GONE: &[u8] = b"rtvirt: tasks worker: the parent is gone\n";
                libc::write(2, GONE.as_ptr().cast(), GONE.len());
                libc::_exit(2);
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .context(|| format!("cannot start the worker of guest \"{}\" ({})", spec.guest.name, cmd.program.display()))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stdin = child.stdin.take();
    let line = serde_json::to_string(spec).map_err(|e| Error::Failed(e.to_string()))?;
    if let Some(s) = stdin.as_mut() {
        // A worker that died at once shows up as an early end of its output.
        let _ = writeln!(s, "{line}").and_then(|_| s.flush());
    }
    std::thread::Builder::new()
        .name(format!("rtvirt-worker-out-{i}"))
        .spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Markers are searched anywhere in the line (a test harness may print before them).
                let msg = if line.contains(READY) {
                    Msg::Ready
                } else if let Some(json) = line.find(RESULT).map(|at| &line[at + RESULT.len()..]) {
                    match serde_json::from_str(json) {
                        Ok(o) => Msg::Result(Box::new(o)),
                        Err(e) => Msg::Bad(format!("unreadable result: {e}")),
                    }
                } else {
                    continue;
                };
                if tx.send((i, msg)).is_err() {
                    return;
                }
            }
            let _ = tx.send((i, Msg::Eof));
        })
        .map_err(|e| Error::os("cannot start a reader thread", e))?;
    Ok(Worker { name: spec.guest.name.clone(), child, stdin, ready: false, result: None, ended: false, problem: None })
}

/// The two phases: every worker ready, then run and collect.
fn drive(
    workers: &mut [Worker],
    rx: &mpsc::Receiver<(usize, Msg)>,
    duration_ns: u64,
    start_at: impl Fn(u64) -> u64,
) -> Result<Run> {
    let ready_by = rt::now_ns() + READY_TIMEOUT.as_nanos() as u64;
    while !workers.iter().all(|w| w.ready) {
        receive(workers, rx);
        if let Some(e) = failure(workers) {
            return Err(e);
        }
        if rtvirt_os::signals::interrupted() {
            return Err(Error::Failed("interrupted before the task sets started".into()));
        }
        if rt::now_ns() > ready_by {
            return Err(Error::Failed(format!("the guest workers were not ready within {}s", READY_TIMEOUT.as_secs())));
        }
    }
    let start = start_at(rt::now_ns() + 50_000_000);
    let end = start + duration_ns;
    for w in workers.iter_mut() {
        if let Some(s) = w.stdin.as_mut() {
            let _ = writeln!(s, "START {start} {end}").and_then(|_| s.flush());
        }
        w.stdin = None;
    }
    let mut stopped: Option<u64> = None;
    while !workers.iter().all(|w| w.ended) {
        receive(workers, rx);
        let now = rt::now_ns();
        let failed = workers.iter().any(|w| w.problem.is_some());
        if stopped.is_none() && (rtvirt_os::signals::interrupted() || failed) {
            stopped = Some(now);
            for w in workers.iter().filter(|w| !w.ended) {
                rtvirt_os::signals::terminate(w.child.id());
            }
        }
        // Stopped workers end within a stop poll (every wait of theirs looks at the flag).
        if now > stopped.unwrap_or(end).min(end) + REPORT_GRACE_NS {
            for w in workers.iter_mut().filter(|w| !w.ended) {
                let _ = w.child.kill();
                w.problem.get_or_insert_with(|| "did not report in time and was killed".into());
            }
        }
    }
    if let Some(e) = failure(workers) {
        return Err(e);
    }
    let ran_ns = stopped.unwrap_or(end).min(end).saturating_sub(start);
    let outcomes = workers.iter_mut().map(|w| w.result.take().expect("every worker reported")).collect();
    Ok(Run { outcomes, ran_ns, start_ns: start })
}

/// Take in what the workers said (waits at most 20 ms).
fn receive(workers: &mut [Worker], rx: &mpsc::Receiver<(usize, Msg)>) {
    let first = match rx.recv_timeout(Duration::from_millis(20)) {
        Ok(m) => Some(m),
        Err(mpsc::RecvTimeoutError::Timeout) => None,
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // Every reader is gone: mark what has not ended.
            for w in workers.iter_mut().filter(|w| !w.ended) {
                w.ended = true;
                w.problem.get_or_insert_with(|| "its output ended".into());
            }
            None
        }
    };
    for (i, msg) in first.into_iter().chain(rx.try_iter()) {
        let w = &mut workers[i];
        match msg {
            Msg::Ready => w.ready = true,
            Msg::Result(o) => w.result = Some(*o),
            Msg::Bad(e) => w.problem = Some(e),
            Msg::Eof => {
                w.ended = true;
                if w.result.is_none() && w.problem.is_none() {
                    let status = w.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    w.problem = Some(format!("ended without a result ({status})"));
                }
            }
        }
    }
}

fn failure(workers: &[Worker]) -> Option<Error> {
    workers.iter().find_map(|w| {
        w.problem
            .as_ref()
            .map(|p| Error::Failed(format!("the vCPU worker of guest \"{}\" (pid {}) {p}", w.name, w.child.id())))
    })
}
