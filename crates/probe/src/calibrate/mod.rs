//! `rtvirt host calibrate`: this host's real costs, measured, as an `rtvirt.hostmodel/v1` host
//! model. Four experiments, each written into the model with its method, distribution and count:
//!
//! 1. **Release latency** per CPU: the `measure timer` experiment ([`crate::timer`], 1 ms absolute
//!    `clock_nanosleep`), latency = wake-up - programmed time, by a SCHED_DEADLINE thread (runtime
//!    100 us every 1 ms, in an exclusive cpuset per CPU) - the class a plan's reservations run in.
//!    A SCHED_FIFO thread would also wait for the fair server (a deadline entity, which runs the
//!    host's SCHED_OTHER work ahead of every FIFO thread) and for other real-time threads, neither
//!    of which delays a reservation with an earlier deadline.
//! 2. **Context switch**: two SCHED_FIFO threads pinned to one CPU pass a byte back and forth
//!    through two pipes (lmbench's `lat_ctx` method); one sample is a batch of round trips, per
//!    switch, less the pipe write + read cost measured in one thread.
//! 3. **SCHED_DEADLINE period cost and enforcement**: in an exclusive cpuset of one CPU, a
//!    SCHED_DEADLINE thread (runtime 200 us every 2 ms) spins, and a SCHED_FIFO 1 observer spins
//!    beside it recording every gap in its own timeline. For each gap, the deadline thread's
//!    execution inside it is the server's run; gap - run = the period's overhead (replenishment
//!    timer, the two switches), run - runtime = the overrun the kernel let it have before the
//!    throttle. Enforcement is `hrtick` when debugfs `sched/features` has `HRTICK_DL` (else `tick`).
//!    With a state directory the CPU's `sched_switch` events are traced meanwhile ([`gaps`]), and
//!    the time other threads ran in a gap - SCHED_OTHER ones through the fair server, other
//!    real-time ones - is taken out of the server's cost and reported beside it. Under tick
//!    enforcement a run overruns by up to a tick and the thread is then throttled until the
//!    overrun is paid back, so a round of `--step` may hold only a dozen gaps: rounds repeat
//!    (at most 4) until 10 gaps held a server run.
//! 4. **Cache reload**: a working set (256 KiB by default, `--working-set`: the guests' tasks' own)
//!    is swept (one write per 64-byte line) warm, and again after a sweep of 32 MiB (or eight times
//!    the working set, if larger) evicted it (what a preemption by another guest does): cold - warm,
//!    each the fastest of three sweeps (interrupts in a sweep are left to the release latency).
//! 5. **vCPU exit and entry** ([`vcpu_exit`]): a minimal KVM VM without a guest kernel exits on
//!    `cpuid` (handled in the kernel) and on a port write (handled by this process); where KVM
//!    cannot be used, `environment.vcpu_exit` says why and `vcpu_exit_ns` is absent.
//!
//! It also reads the admission limits (sched_rt_runtime_us/period_us, each CPU's fair server,
//! isolated CPUs).
//!
//! Everything it changes is held by a guard that restores it on drop, also on Ctrl-C (the stop
//! flag of `rtvirt_os::signals` is polled by every loop): memory lock, `cpu_dma_latency`, the
//! exclusive cpuset (`rtvirt_os::cgroup::ExclusiveCpus`), and its own threads' scheduling (they end
//! with the run). It writes no sysctl, sched feature or cgroup outside that guard.
//!
//! After a kill -9: the memory lock, `cpu_dma_latency` (a file descriptor held open) and the
//! threads' scheduling end with the process; the exclusive cpuset and the root cpuset's load
//! balancing would stay, so with a state directory they are journaled before they are changed
//! (`rtvirt_os::guard_journal`), and the next calibration or `rtvirt host revert` restores them.
//!
//! The spin loops and the pipe ping-pong are written by hand: they are the measurement itself
//! (no crate measures SCHED_DEADLINE overheads); statistics use the model's `LatencyHistogram`.

pub mod gaps;
pub mod vcpu_exit;

use crate::error::{Error, Result};
use crate::rt::{self, LinuxPolicy, Reservation, Sched};
use crate::timer::{self, TimerConfig};
use rtvirt_model::hostmodel::{
    AdmissionLimits, Enforcement, EnforcementKind, FairServerEntry, HostModel, LatencySummary, Measurement,
    HOST_MODEL_SCHEMA,
};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::Nanos;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long each experiment runs.
#[derive(Debug, Clone)]
pub struct CalibrateConfig {
    /// CPUs for the release-latency experiment; the first one also hosts the others.
    pub cpus: Vec<u32>,
    /// Length of each of the timed experiments (timer, deadline); the default keeps the whole run
    /// under a minute.
    pub step: Nanos,
    /// Where cpuset changes are journaled before they are made (`rtvirt host`'s state directory),
    /// so that a kill -9 leaves a record to restore; None: not journaled.
    pub state_dir: Option<PathBuf>,
    /// Bytes of the working set whose reload after a preemption is measured.
    pub working_set: usize,
}

impl Default for CalibrateConfig {
    fn default() -> Self {
        CalibrateConfig {
            cpus: crate::cpus::allowed(),
            step: Nanos::from_secs(5),
            state_dir: None,
            working_set: DEFAULT_WORKING_SET,
        }
    }
}

/// The step of a quick calibration (`rtvirt host calibrate --quick`, `rtvirt demo --quick`):
/// about 1,000 timer wake-ups per CPU instead of 5,000.
pub const QUICK_STEP: Nanos = Nanos::from_secs(1);

/// The working set of experiment 4 unless told otherwise: typical of a control task.
pub const DEFAULT_WORKING_SET: usize = 256 * 1024;
/// Working sets measured, at least and at most (the eviction sweep is 8 times larger, so this
/// bounds the experiment's memory to 512 MiB).
pub const WORKING_SET_RANGE: std::ops::RangeInclusive<usize> = 64..=64 * 1024 * 1024;

/// The deadline thread's reservation in experiment 3.
pub const PROBE_RESERVATION: Reservation =
    Reservation { runtime_ns: 200_000, deadline_ns: 2_000_000, period_ns: 2_000_000 };
/// A pause longer than this in a spinning thread's timeline is a gap (it did not run).
const GAP_NS: u64 = 2_000;

/// Measure this host. `progress` gets one line per step (for stderr).
pub fn run(cfg: &CalibrateConfig, progress: &mut dyn FnMut(&str)) -> Result<HostModel> {
    if cfg.cpus.is_empty() {
        return Err(Error::input("--cpus", "no CPU to calibrate on"));
    }
    if !WORKING_SET_RANGE.contains(&cfg.working_set) {
        return Err(Error::input(
            "--working-set",
            format!("{} bytes: expected 64 B to 64 MiB (the working set of one guest task)", cfg.working_set),
        ));
    }
    crate::limits::check_duration("--step", cfg.step, false)?;
    let cpu = cfg.cpus[0];
    if let Some(dir) = &cfg.state_dir {
        // what an earlier calibration killed with -9 left changed
        rtvirt_os::guard_journal::restore_stale(dir).iter().for_each(|said| progress(said));
    }
    let _affinity = AffinityGuard::save()?;
    let mut measurements = Vec::new();
    progress(&format!("1/5 release latency on CPUs {} ({})", crate::cpus::format_list(&cfg.cpus), cfg.step));
    let release = release_latency(cfg, &mut measurements)?;
    stop_if_interrupted()?;
    progress(&format!("2/5 context switch on CPU {cpu}"));
    let context_switch = context_switch(cpu, &mut measurements)?;
    stop_if_interrupted()?;
    progress(&format!("3/5 SCHED_DEADLINE period cost and enforcement on CPU {cpu} ({})", cfg.step));
    let (server_overhead, enforcement) = deadline_period(cpu, cfg, &mut measurements)?;
    stop_if_interrupted()?;
    progress(&format!("4/5 cache reload on CPU {cpu}"));
    let cache_reload = cache_reload(cpu, cfg.working_set, &mut measurements)?;
    stop_if_interrupted()?;
    progress(&format!("5/5 vCPU exit and entry with KVM on CPU {cpu}"));
    let (vcpu_exit, vcpu_exit_note) = vcpu_exit_experiment(cpu, cfg, &mut measurements)?;
    stop_if_interrupted()?;
    let mut environment = environment();
    environment.insert("vcpu_exit".into(), vcpu_exit_note.into());
    environment.insert("step".into(), cfg.step.to_string().into());
    Ok(HostModel {
        schema: HOST_MODEL_SCHEMA.to_string(),
        server_overhead_ns: server_overhead,
        context_switch_ns: context_switch,
        release_latency_ns: release,
        enforcement,
        cache_reload_ns: cache_reload,
        vcpu_exit_ns: vcpu_exit,
        admission: admission_limits(),
        cpus: crate::live::live_cpus(),
        measurements,
        environment,
    })
}

/// Experiment 5 ([`vcpu_exit`]): the in-kernel exit's p99 and what the environment says about it;
/// where KVM cannot be used, no figure and why.
fn vcpu_exit_experiment(cpu: u32, cfg: &CalibrateConfig, out: &mut Vec<Measurement>) -> Result<(Option<u64>, String)> {
    rt::pin_current_thread(cpu)?;
    let nested = rtvirt_os::sysinfo::is_virtual_machine();
    let costs = match vcpu_exit::measure(std::time::Duration::from_nanos(cfg.step.0)) {
        Ok(costs) => costs,
        Err(why) => {
            let tcg = "under TCG a vCPU exit would not be representative of KVM";
            return Ok((None, format!("not measured: KVM could not be used ({why}); {tcg}")));
        }
    };
    let setup = "a minimal KVM VM (no guest kernel: a real-mode loop of cpuid, then a port write) pinned to CPU";
    out.push(measurement(
        "vcpu_exit",
        &format!(
            "{setup} {cpu}: one run of {} cpuid exits, handled in the kernel, per exit and re-entry (kvm-unit-tests \
             vmexit/cpuid)",
            vcpu_exit::EXITS_PER_SAMPLE
        ),
        &costs.in_kernel,
        None,
    ));
    out.push(measurement(
        "vcpu_exit_to_user",
        &format!(
            "{setup} {cpu}: one run of a single cpuid and the port write, less the cpuid's median: an exit to \
                  the VMM process (device emulation, as QEMU's) and back"
        ),
        &costs.to_user,
        None,
    ));
    let nested_note = if nested {
        "; this host is itself a virtual machine (its KVM is nested): these are the exit costs its guests pay, not \
         those of a bare-metal host"
    } else {
        ""
    };
    let note = format!("measured with KVM (vcpu_exit, vcpu_exit_to_user){nested_note}");
    Ok((Some(costs.in_kernel.quantile(0.99)), note))
}

/// The calling thread's CPU affinity, put back on drop (experiments 2 and 4 pin it).
struct AffinityGuard(rtvirt_os::CpuList);

impl AffinityGuard {
    fn save() -> Result<AffinityGuard> {
        rtvirt_os::sched::get_affinity(0)
            .map(AffinityGuard)
            .map_err(|e| Error::kernel("cannot read this thread's CPU affinity", &e))
    }
}

impl Drop for AffinityGuard {
    fn drop(&mut self) {
        let _ = rtvirt_os::sched::set_affinity(0, &self.0);
    }
}

fn stop_if_interrupted() -> Result<()> {
    if rtvirt_os::signals::interrupted() {
        return Err(Error::Failed("interrupted: calibration stopped, everything it changed is restored".into()));
    }
    Ok(())
}

fn measurement(name: &str, method: &str, histogram: &LatencyHistogram, note: Option<String>) -> Measurement {
    Measurement {
        name: name.into(),
        method: method.into(),
        count: histogram.count(),
        p50_ns: histogram.quantile(0.5),
        p99_ns: histogram.quantile(0.99),
        max_ns: histogram.max().unwrap_or(0),
        note,
    }
}

fn no_samples(what: &str) -> Error {
    Error::Failed(format!("{what}: no samples (was the run interrupted, or is the CPU fully busy?)"))
}

/// Experiment 1: `measure timer` on every CPU.
fn release_latency(cfg: &CalibrateConfig, out: &mut Vec<Measurement>) -> Result<LatencySummary> {
    let tc = TimerConfig {
        cpus: cfg.cpus.clone(),
        duration: cfg.step,
        policy: LinuxPolicy::Deadline,
        state_dir: cfg.state_dir.clone(),
        ..TimerConfig::default()
    };
    let run = timer::run(&tc)?;
    stop_if_interrupted()?;
    const METHOD: &str = "measure timer --policy deadline: a SCHED_DEADLINE thread (runtime 100 us every 1 ms) in an \
                          exclusive cpuset of the CPU, absolute clock_nanosleep every 1 ms, latency = wake-up - \
                          programmed time (the class of a plan's reservations: the fair server and real-time threads \
                          do not delay it)";
    for (cpu, h) in &run.per_cpu {
        out.push(measurement(&format!("release_latency cpu{cpu}"), METHOD, h, None));
    }
    if run.overall.count() == 0 {
        return Err(no_samples("release latency"));
    }
    let h = &run.overall;
    Ok(LatencySummary { p50: h.quantile(0.5), p99: h.quantile(0.99), max: h.max().unwrap_or(0) })
}

/// A pipe (read end, write end), closed on drop.
struct Pipe(i32, i32);

impl Pipe {
    fn new() -> Result<Pipe> {
        let mut fds = [0i32; 2];
        // SAFETY: fds is a valid array of two ints to write.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(Error::last_os("cannot create a pipe"));
        }
        Ok(Pipe(fds[0], fds[1]))
    }
    fn send(&self) {
        let b = [1u8];
        // SAFETY: writes one byte from a valid buffer to our own pipe.
        unsafe { libc::write(self.1, b.as_ptr().cast(), 1) };
    }
    fn receive(&self) {
        let mut b = [0u8];
        // SAFETY: reads one byte into a valid buffer from our own pipe.
        unsafe { libc::read(self.0, b.as_mut_ptr().cast(), 1) };
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: closes the two descriptors this value owns.
        unsafe {
            libc::close(self.0);
            libc::close(self.1);
        }
    }
}

const ROUND_TRIPS_PER_SAMPLE: u64 = 200;
const CONTEXT_SWITCH_SAMPLES: u64 = 200;

/// The median cost (ns) of one pipe write + read in the calling thread (no switch), over 21
/// batches of 500.
fn pipe_cost(pipe: &Pipe) -> u64 {
    let mut batches: Vec<u64> = (0..21)
        .map(|_| {
            let t = rt::now_ns();
            for _ in 0..500 {
                pipe.send();
                pipe.receive();
            }
            (rt::now_ns() - t) / 500
        })
        .collect();
    batches.sort_unstable();
    batches[batches.len() / 2]
}

/// Experiment 2: pipe ping-pong between two SCHED_FIFO threads on one CPU.
fn context_switch(cpu: u32, out: &mut Vec<Measurement>) -> Result<u64> {
    let (ping, pong) = (Pipe::new()?, Pipe::new()?);
    let alone = Pipe::new()?;
    let stop = AtomicBool::new(false);
    let mut h = LatencyHistogram::new();
    let mut pipe_ns = 0;
    let result: Result<()> = std::thread::scope(|s| {
        let echo = s.spawn(|| -> Result<()> {
            rt::pin_current_thread(cpu)?;
            rt::set_sched(0, Sched::Fifo(50))?;
            for _ in 0..ROUND_TRIPS_PER_SAMPLE * CONTEXT_SWITCH_SAMPLES {
                ping.receive();
                pong.send();
            }
            rt::set_sched(0, Sched::Other)
        });
        let main = (|| -> Result<()> {
            rt::pin_current_thread(cpu)?;
            rt::set_sched(0, Sched::Fifo(50))?;
            pipe_ns = pipe_cost(&alone);
            for _ in 0..CONTEXT_SWITCH_SAMPLES {
                let t = rt::now_ns();
                for _ in 0..ROUND_TRIPS_PER_SAMPLE {
                    ping.send();
                    pong.receive();
                }
                // per round trip: two switches and two (write + read) pairs
                let per_trip = (rt::now_ns() - t) / ROUND_TRIPS_PER_SAMPLE;
                h.record(per_trip.saturating_sub(2 * pipe_ns) / 2);
            }
            Ok(())
        })();
        let _ = rt::set_sched(0, Sched::Other);
        stop.store(true, Ordering::SeqCst);
        let echoed = echo.join().unwrap_or_else(|_| Err(Error::Failed("echo thread panicked".into())));
        main.and(echoed)
    });
    result?;
    let m = measurement(
        "context_switch",
        &format!(
            "two SCHED_FIFO 50 threads pinned to CPU {cpu} pass a byte through two pipes (lmbench lat_ctx); a sample = \
             a batch of {ROUND_TRIPS_PER_SAMPLE} round trips, per switch, less the pipe write+read cost ({pipe_ns} ns) \
             measured in one thread"
        ),
        &h,
        None,
    );
    let value = m.p99_ns;
    out.push(m);
    Ok(value)
}

/// One spinning thread's timeline: the stretches it ran, `(start, end)` ns.
fn spin_timeline(until: u64, stop: &AtomicBool) -> Vec<(u64, u64)> {
    let mut runs = Vec::with_capacity(100_000);
    let (mut start, mut last) = (rt::now_ns(), rt::now_ns());
    let mut polls = 0u32;
    loop {
        let now = rt::now_ns();
        if now - last > GAP_NS {
            runs.push((start, last));
            start = now;
        }
        last = now;
        polls = polls.wrapping_add(1);
        if now >= until
            || (polls.is_multiple_of(4096) && (stop.load(Ordering::Relaxed) || rtvirt_os::signals::interrupted()))
        {
            runs.push((start, last));
            return runs;
        }
    }
}

/// A spinning thread's id and the stretches it ran.
type SpinRun = (u32, Vec<(u64, u64)>);

/// Experiment 3 collects at least this many gaps with a server run; tick enforcement lets each
/// run overrun by up to a tick and throttles the thread until the overrun is paid back, so a
/// 300 ms round may hold only a dozen.
const MIN_PERIOD_SAMPLES: u64 = 10;
/// ... in at most this many rounds of `--step` each.
const MAX_PERIOD_ROUNDS: u32 = 4;

/// Experiment 3: a spinning SCHED_DEADLINE thread beside a spinning SCHED_FIFO 1 observer, in
/// rounds of `--step` until [`MIN_PERIOD_SAMPLES`] gaps held a server run.
fn deadline_period(cpu: u32, cfg: &CalibrateConfig, out: &mut Vec<Measurement>) -> Result<(u64, Enforcement)> {
    let (mut costs, mut trace_note) = deadline_period_round(cpu, cfg)?;
    for _ in 1..MAX_PERIOD_ROUNDS {
        if costs.overhead.count() >= MIN_PERIOD_SAMPLES {
            break;
        }
        let (more, note) = deadline_period_round(cpu, cfg)?;
        costs.merge(&more);
        trace_note = trace_note.or(note);
    }
    if costs.overhead.count() == 0 {
        return Err(Error::Failed(format!(
            "SCHED_DEADLINE period cost: no samples in {MAX_PERIOD_ROUNDS} rounds of {} ({}; was the run \
             interrupted, or is the CPU fully busy?)",
            cfg.step,
            costs.tally()
        )));
    }
    let kind = enforcement_kind();
    let r = PROBE_RESERVATION;
    let setup = format!(
        "in an exclusive cpuset of CPU {cpu}, a SCHED_DEADLINE thread (runtime {}, period {}) and a SCHED_FIFO 1 \
         observer spin; per gap in the observer's timeline",
        Nanos(r.runtime_ns),
        Nanos(r.period_ns)
    );
    out.push(measurement(
        "server_overhead",
        &format!(
            "{setup}: gap - the deadline thread's time on the CPU in it - other threads' in it (sched_switch; \
             interrupts while the deadline thread runs are charged to its runtime, so they are its run): the \
             replenishment timer and two switches"
        ),
        &costs.overhead,
        Some(trace_note.unwrap_or_else(|| costs.summary())),
    ));
    out.extend(costs.foreign_measurements(&setup));
    let tick_note = (kind.0 == EnforcementKind::Tick)
        .then(|| format!("tick enforcement: a run may overrun by up to one tick{}", tick_text()));
    out.push(measurement(
        "enforcement_overrun",
        &format!("{setup}: the deadline thread's run - its runtime (enforcement {}: {})", kind_str(kind.0), kind.1),
        &costs.overrun,
        tick_note,
    ));
    let overrun_max = overrun_max_of(kind.0, costs.overrun.max().unwrap_or(0), crate::tick::tick_ns());
    Ok((costs.overhead.quantile(0.99), Enforcement { kind: kind.0, overrun_max_ns: overrun_max }))
}

/// The model's `overrun_max_ns`: with tick enforcement the tick's length when it is known - what
/// the simulator takes as the tick at which a depletion is noticed (`rtvirt_sim::host_costs`); a
/// larger overrun measured (a late or missed tick) stays in the `enforcement_overrun`
/// measurement, and made the simulated tick that long (a 6 ms tick at HZ = 250 made the
/// prediction of the demo's tasks pessimistic, docs/PERFORMANCE.md). Otherwise the largest
/// overrun measured.
fn overrun_max_of(kind: EnforcementKind, measured_max: u64, tick: Option<u64>) -> u64 {
    match (kind, tick) {
        (EnforcementKind::Tick, Some(t)) => t,
        _ => measured_max,
    }
}

/// One round of experiment 3 (`--step` long): what the observer's gaps held, and why other
/// threads could not be told apart if they could not.
fn deadline_period_round(cpu: u32, cfg: &CalibrateConfig) -> Result<(PeriodCosts, Option<String>)> {
    let exclusive = match &cfg.state_dir {
        Some(dir) => rtvirt_os::cgroup::ExclusiveCpus::create_journaled(&[cpu], dir)?,
        None => rtvirt_os::cgroup::ExclusiveCpus::create(&[cpu])?,
    };
    let trace = cfg.state_dir.as_deref().map(|dir| gaps::SwitchTrace::start(dir, cpu));
    let stop = AtomicBool::new(false);
    let start = rt::now_ns() + 20_000_000;
    let until = start + cfg.step.0;
    let spinner = |sched: Sched| -> Result<SpinRun> {
        exclusive.enter(cpu)?;
        rt::pin_current_thread(cpu)?;
        rt::set_sched(0, sched).inspect_err(|_| stop.store(true, Ordering::SeqCst))?;
        rt::sleep_until(start);
        let runs = spin_timeline(until, &stop);
        rt::set_sched(0, Sched::Other)?;
        Ok((rt::gettid() as u32, runs))
    };
    let (server, observer) = std::thread::scope(|s| {
        let server = s.spawn(|| spinner(Sched::Deadline(PROBE_RESERVATION)));
        let observer = s.spawn(|| spinner(Sched::Fifo(1)));
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<SpinRun>>| {
            h.join().unwrap_or_else(|_| Err(Error::Failed("spinning thread panicked".into())))
        };
        (join(server), join(observer))
    });
    let events = trace.map(|t| t.and_then(|t| t.finish()));
    drop(exclusive);
    stop_if_interrupted()?;
    let ((server_tid, server), (observer_tid, observer)) = (server?, observer?);
    let gap_list: Vec<(u64, u64)> = observer.windows(2).map(|w| (w[0].1, w[1].0)).collect();
    let (foreign, trace_note) = match &events {
        Some(Ok(ev)) => (gaps::who_ran_in_gaps(ev, cpu, server_tid, observer_tid, &gap_list), None),
        Some(Err(e)) => (vec![], Some(format!("sched_switch not traced ({e}): other threads are not told apart"))),
        None => (vec![], Some("no state directory, sched_switch not traced: other threads are not told apart".into())),
    };
    Ok((period_costs(&server, &gap_list, &foreign), trace_note))
}

/// What experiment 3's gaps held.
struct PeriodCosts {
    /// Per gap with a server run: gap - run - other threads (the server's own cost).
    overhead: LatencyHistogram,
    /// Per gap with a server run: run - runtime.
    overrun: LatencyHistogram,
    /// Per gap with a server run and SCHED_OTHER threads in it: their time (the fair server's).
    fair: LatencyHistogram,
    /// Per gap with a server run and other real-time threads in it: their time.
    other: LatencyHistogram,
    /// Gaps in which something else ran for a whole server period or more (another reservation,
    /// e.g. the fair server's 50 ms): not sampled.
    foreign: u64,
    /// The observer's gaps, and those without any server run (not sampled).
    gaps: u64,
    without_server: u64,
}

impl PeriodCosts {
    /// Another round's gaps added to these.
    fn merge(&mut self, other: &PeriodCosts) {
        for (mine, theirs) in [
            (&mut self.overhead, &other.overhead),
            (&mut self.overrun, &other.overrun),
            (&mut self.fair, &other.fair),
            (&mut self.other, &other.other),
        ] {
            mine.merge(theirs);
        }
        self.foreign += other.foreign;
        self.gaps += other.gaps;
        self.without_server += other.without_server;
    }

    /// How the gaps were counted, in words (an error's detail).
    fn tally(&self) -> String {
        format!(
            "{} gaps in the observer's timeline: {} without a server run, {} with a whole server period of other work",
            self.gaps, self.without_server, self.foreign
        )
    }

    /// The other threads' time in the gaps, one measurement per class that was seen (a class
    /// never seen has no distribution to report; the server's note says so).
    fn foreign_measurements(&self, setup: &str) -> Vec<Measurement> {
        let whole = format!("{} more gaps held a whole server period of other work and were not sampled", self.foreign);
        let mut out = vec![];
        if self.fair.count() > 0 {
            out.push(measurement(
                "fair_server_in_gaps",
                &format!("{setup}: time SCHED_OTHER threads (run by the fair server) took in a gap with a server run"),
                &self.fair,
                Some(format!("taken out of server_overhead; {whole}")),
            ));
        }
        if self.other.count() > 0 {
            out.push(measurement(
                "other_threads_in_gaps",
                &format!("{setup}: time other real-time or deadline threads took in a gap with a server run"),
                &self.other,
                Some("taken out of server_overhead".into()),
            ));
        }
        out
    }

    /// What the gaps held besides the server, in words (the server_overhead note).
    fn summary(&self) -> String {
        format!(
            "other threads, taken out: SCHED_OTHER (fair server) in {} gaps, other real-time threads in {}; {} gaps \
             with a whole server period of other work not sampled; interrupts between the switches and time the \
             hypervisor took (steal) stay in: max is an upper bound",
            self.fair.count(),
            self.other.count(),
            self.foreign
        )
    }
}

/// Per observer gap holding deadline-thread runs: the samples of [`PeriodCosts`]; `traced[i]` is
/// who ran in gap i by the kernel's switches (empty: not traced; then the server's run is what its
/// own polling saw, and other threads' time is counted as the server's).
fn period_costs(server: &[(u64, u64)], gaps: &[(u64, u64)], traced: &[gaps::InGap]) -> PeriodCosts {
    let mut c = PeriodCosts {
        overhead: LatencyHistogram::new(),
        overrun: LatencyHistogram::new(),
        fair: LatencyHistogram::new(),
        other: LatencyHistogram::new(),
        foreign: 0,
        gaps: gaps.len() as u64,
        without_server: 0,
    };
    let mut k = 0;
    for (i, &(gap_start, gap_end)) in gaps.iter().enumerate() {
        while k < server.len() && server[k].1 < gap_start {
            k += 1;
        }
        let mut ran = 0;
        let mut j = k;
        while j < server.len() && server[j].0 <= gap_end {
            let (s, e) = (server[j].0.max(gap_start), server[j].1.min(gap_end));
            ran += e.saturating_sub(s);
            j += 1;
        }
        let others = traced.get(i).copied().unwrap_or_default();
        // the overhead from the kernel's view of the server's time on the CPU (interrupts in its
        // run are its runtime's); the overrun from its own polling, which a vCPU stalled by the
        // hypervisor does not stretch (the kernel's view would count the stall as the run)
        let on_cpu = if others.server > 0 { others.server } else { ran };
        let rest = (gap_end - gap_start).saturating_sub(on_cpu);
        if ran > 0 && rest < PROBE_RESERVATION.period_ns {
            c.overhead.record(rest.saturating_sub(others.foreign()));
            c.overrun.record(ran.saturating_sub(PROBE_RESERVATION.runtime_ns));
            if others.fair > 0 {
                c.fair.record(others.fair);
            }
            if others.other > 0 {
                c.other.record(others.other);
            }
        } else if ran > 0 {
            c.foreign += 1;
        } else {
            c.without_server += 1;
        }
    }
    c
}

fn kind_str(k: EnforcementKind) -> &'static str {
    match k {
        EnforcementKind::Tick => "tick",
        EnforcementKind::Hrtick => "hrtick",
    }
}

/// `hrtick` when debugfs `sched/features` lists HRTICK_DL (HRTICK on kernels without it), and how
/// that was found.
fn enforcement_kind() -> (EnforcementKind, String) {
    match rtvirt_os::sysinfo::debugfs_read(&["sched/features".to_string()]) {
        Ok((v, _)) => {
            let features: Vec<&str> = v.first().map(|s| s.split_whitespace().collect()).unwrap_or_default();
            let name = if features.iter().any(|f| f.ends_with("HRTICK_DL")) { "HRTICK_DL" } else { "HRTICK" };
            let on = features.contains(&name);
            let kind = if on { EnforcementKind::Hrtick } else { EnforcementKind::Tick };
            (kind, format!("debugfs sched/features has {}{name}", if on { "" } else { "NO_" }))
        }
        Err(e) => (EnforcementKind::Tick, format!("debugfs sched/features unreadable ({e}): tick assumed")),
    }
}

/// One tick (ns) from the running kernel's CONFIG_HZ (/boot/config-<release>, else
/// /proc/config.gz), if readable.
fn tick_text() -> String {
    match crate::tick::tick_ns() {
        Some(t) => format!(" ({}, CONFIG_HZ); overrun_max_ns is the tick", Nanos(t)),
        None => " (CONFIG_HZ not readable: the measured maximum is used)".into(),
    }
}

const EVICTION_SET: usize = 32 * 1024 * 1024;
const CACHE_SAMPLES: u32 = 40;
/// Sweeps per sample, warm and cold, of which the fastest count: an interrupt in a sweep is the
/// release latency's cost, not the reload's.
const CACHE_TRIALS: u32 = 3;

/// Write one byte per cache line of `buf`; the time it took.
fn sweep(buf: &mut [u8]) -> u64 {
    let t = rt::now_ns();
    for i in (0..buf.len()).step_by(64) {
        // SAFETY: i < buf.len(); volatile so the sweep is not optimised away.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), buf[i].wrapping_add(1)) };
    }
    rt::now_ns() - t
}

/// Experiment 4: working-set sweep warm, and after an eviction sweep.
fn cache_reload(cpu: u32, working_set: usize, out: &mut Vec<Measurement>) -> Result<u64> {
    rt::pin_current_thread(cpu)?;
    let mut work = vec![0u8; working_set];
    let mut evict = vec![0u8; EVICTION_SET.max(8 * working_set)];
    let mut h = LatencyHistogram::new();
    for _ in 0..CACHE_SAMPLES {
        if rtvirt_os::signals::interrupted() {
            break;
        }
        let (mut warm, mut cold) = (u64::MAX, u64::MAX);
        for _ in 0..CACHE_TRIALS {
            sweep(&mut work);
            warm = warm.min(sweep(&mut work));
            sweep(&mut evict);
            cold = cold.min(sweep(&mut work));
        }
        h.record(cold.saturating_sub(warm));
    }
    if h.count() == 0 {
        return Err(no_samples("cache reload"));
    }
    let m = measurement(
        "cache_reload",
        &format!(
            "a {working_set}-byte working set swept (one write per 64-byte line) warm, and again after a {} MiB \
             sweep evicted it, on CPU {cpu}: cold - warm, each the fastest of {CACHE_TRIALS} sweeps (an interrupt \
             in a sweep is not the reload's cost)",
            evict.len() / (1024 * 1024)
        ),
        &h,
        Some(if working_set == DEFAULT_WORKING_SET {
            "depends on the guests' working sets (--working-set); this one is typical of a control task".into()
        } else {
            "the working set given by --working-set".into()
        }),
    );
    let value = m.p99_ns;
    out.push(m);
    Ok(value)
}

/// The kernel's admission limits as read now.
pub fn admission_limits() -> AdmissionLimits {
    use rtvirt_os::sysinfo;
    let fair_servers = match sysinfo::FairServers::of_this_host() {
        sysinfo::FairServers::Absent => Some(vec![]),
        sysinfo::FairServers::Read(map) => Some(
            map.iter()
                .map(|(&cpu, f)| FairServerEntry { cpu, runtime_ns: f.runtime_ns, period_ns: f.period_ns })
                .collect(),
        ),
        // not readable: left unknown, the stock fair server is assumed
        _ => None,
    };
    let defaults = AdmissionLimits::default();
    AdmissionLimits {
        rt_runtime_us: sysinfo::rt_runtime_us().unwrap_or(950_000),
        rt_period_us: sysinfo::rt_period_us().unwrap_or(1_000_000),
        fair_servers,
        isolated_cpus: sysinfo::isolated_cpus().iter().collect(),
        deadline_period_min_us: sysinfo::deadline_period_min_us().unwrap_or(defaults.deadline_period_min_us),
        deadline_period_max_us: sysinfo::deadline_period_max_us().unwrap_or(defaults.deadline_period_max_us),
    }
}

/// Where the model is made: the kernel release, boot id and CPU model (the calibration cache's
/// key, [`crate::live::CacheKey`]) and the online CPUs.
pub fn environment() -> serde_json::Map<String, serde_json::Value> {
    let mut env = serde_json::Map::new();
    let key = crate::live::CacheKey::now();
    env.insert("kernel".into(), key.kernel.into());
    env.insert("boot_id".into(), key.boot_id.into());
    env.insert("cpu_model".into(), key.cpu_model.into());
    env.insert("cpus".into(), crate::cpus::format_list(&crate::cpus::online()).into());
    env
}

/// How this kernel enforces a reservation's runtime now, without measuring it: `tick` with a
/// tick's overrun (CONFIG_HZ; `default` when unreadable), or `hrtick` (HRTICK_DL on) with
/// `hrtick_overrun_ns`; and how that was found.
pub fn live_enforcement(default: Enforcement, hrtick_overrun_ns: u64) -> (Enforcement, String) {
    let (kind, how) = enforcement_kind();
    match kind {
        EnforcementKind::Hrtick => (Enforcement { kind, overrun_max_ns: hrtick_overrun_ns }, how),
        EnforcementKind::Tick => match crate::tick::tick_ns() {
            Some(t) => (Enforcement { kind, overrun_max_ns: t }, format!("{how}; one tick {} (CONFIG_HZ)", Nanos(t))),
            None => (Enforcement { kind, ..default }, format!("{how}; CONFIG_HZ not readable, the default overrun")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_hosts_overrun_is_its_tick_and_an_hrtick_hosts_the_largest_measured() {
        assert_eq!(overrun_max_of(EnforcementKind::Tick, 6_063_524, Some(4_000_000)), 4_000_000);
        assert_eq!(overrun_max_of(EnforcementKind::Tick, 1_000_000, Some(4_000_000)), 4_000_000);
        assert_eq!(overrun_max_of(EnforcementKind::Tick, 6_063_524, None), 6_063_524);
        assert_eq!(overrun_max_of(EnforcementKind::Hrtick, 30_000, Some(4_000_000)), 30_000);
    }

    #[test]
    fn period_costs_pair_each_observer_gap_with_the_server_runs_in_it() {
        // observer runs [0,100) [400,500) [1000,1100); the server ran 120..300 (split by an
        // interrupt at 200..210) and 600..900
        let gaps = [(100, 400), (500, 1000)];
        let server = [(120, 200), (210, 300), (600, 900)];
        let c = period_costs(&server, &gaps, &[]);
        assert_eq!(c.overhead.count(), 2);
        // gap 100..400 = 300, ran 170 -> 130; gap 500..1000 = 500, ran 300 -> 200
        assert_eq!(c.overhead.min(), Some(130));
        assert_eq!(c.overhead.max(), Some(200));
        assert_eq!(c.overrun.count(), 2); // both runs below the 200 us runtime: overrun 0
        assert_eq!(c.overrun.max(), Some(0));
        assert_eq!(c.foreign, 0);
        // other threads in the second gap: a kworker through the fair server (50) and a FIFO
        // thread (30) are the fair server's and others', not the server's cost
        let traced = [gaps::InGap::default(), gaps::InGap { server: 0, fair: 50, other: 30 }];
        let c = period_costs(&server, &gaps, &traced);
        assert_eq!((c.overhead.min(), c.overhead.max()), (Some(120), Some(130)));
        assert_eq!((c.fair.count(), c.fair.max(), c.other.max()), (1, Some(50), Some(30)));
        // traced, the server's run is the kernel's (the interrupt at 200..210 is its run, charged
        // to its runtime): gap 100..400 with 185 on the CPU -> 115
        let traced = [gaps::InGap { server: 185, fair: 0, other: 0 }, gaps::InGap { server: 300, fair: 0, other: 0 }];
        let c = period_costs(&server, &gaps, &traced);
        assert_eq!((c.overhead.min(), c.overhead.max()), (Some(115), Some(200)));
        // a gap where something else ran for 50 ms (the fair server) is not a sample
        let c = period_costs(&[(200, 300_000)], &[(100, 60_000_000)], &[]);
        assert_eq!((c.overhead.count(), c.foreign), (0, 1));
    }

    #[test]
    fn rounds_merge_and_gaps_without_a_server_run_are_counted_not_sampled() {
        // the server ran only in the first of three gaps
        let mut c = period_costs(&[(120, 300)], &[(100, 400), (500, 600), (700, 800)], &[]);
        assert_eq!((c.gaps, c.without_server, c.overhead.count()), (3, 2, 1));
        let foreign = period_costs(&[(200, 300_000)], &[(100, 60_000_000)], &[]);
        c.merge(&foreign);
        c.merge(&period_costs(&[(120, 300)], &[(100, 400)], &[]));
        assert_eq!((c.gaps, c.without_server, c.foreign, c.overhead.count(), c.overrun.count()), (5, 2, 1, 2, 2));
        assert_eq!(
            c.tally(),
            "5 gaps in the observer's timeline: 2 without a server run, 1 with a whole server period of other work"
        );
    }
}
