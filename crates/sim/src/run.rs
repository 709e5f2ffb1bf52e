//! One simulation run: wires the host ([`crate::host`]) and the workloads ([`crate::guest`]) on
//! the event queue, runs to the horizon, and reports `rtvirt.results/v1` (kind "simulation")
//! plus an optional Chrome trace (a track per core: which host thread runs; a track per guest:
//! which task runs; deadline misses as instants).
//!
//! Within one instant, work is charged first (so a job completing at t completes before a
//! release or abort at t is handled), then the event, then the touched clusters are re-decided.
//! Charging is lazy (see [`crate::host`]): the cores whose timer is due, then those of the
//! cluster an event concerns or of the workload whose work it changes, then those re-decided.

use crate::adapt::AdaptRun;
use crate::config::{Load, SimConfig, ThreadSpec};
use crate::engine::rng::SimRng;
use crate::engine::trace::{TraceWindow, TraceWriter, Track};
use crate::engine::EventQueue;
use crate::guest::{Dispatch, GuestVcpus, JobRecord, Workload};
use crate::host::{Host, HostEv, ThreadId};
use crate::host_costs::HostCosts;
use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::results::{CoreResult, GuestResult, HostThread, Results, SimulationSection, TaskResult};
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use std::sync::Arc;

#[cfg(test)]
mod lazy_charging_tests;

/// Events of the CPU-scheduling model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    Host(HostEv),
    /// Next job of task `task` of workload `w`, at its nominal release.
    Release {
        w: u32,
        task: u32,
    },
    /// That job reaching its guest late: its release found the vCPU idle and waited for the
    /// host's wake-up latency.
    Arrive {
        w: u32,
        task: u32,
    },
    /// `abort` policy: job `k` of the task reaches its deadline.
    Abort {
        w: u32,
        task: u32,
        k: u64,
    },
    /// `--adapt`: the controller's next step.
    Adapt,
}

impl From<HostEv> for Ev {
    fn from(h: HostEv) -> Ev {
        Ev::Host(h)
    }
}

/// Optional outputs of a run.
#[derive(Clone, Default)]
pub struct RunOptions {
    pub trace: Option<TraceWindow>,
    /// Keep every job's release/end (tests and cross-checks only: grows with the horizon).
    pub job_log: bool,
    /// Called with (simulated time, horizon) every 2^20 events.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
}

/// What a run produces.
pub struct Outcome {
    pub results: Results,
    pub trace: Option<TraceWriter>,
    /// Events delivered by the queue.
    pub events: u64,
    pub job_log: Vec<JobRecord>,
}

/// Run the scenario with the checked configuration.
pub fn simulate(scenario: &Scenario, cfg: &SimConfig, opts: &RunOptions) -> Outcome {
    simulate_with_costs(scenario, cfg, opts, None)
}

/// Run the scenario on a host with a host model's measured costs (`rtvirt simulate --host-model`;
/// release latencies drawn from its distribution, [`crate::host_costs`]). None: exactly
/// [`simulate`].
pub fn simulate_with_host_model(
    scenario: &Scenario,
    cfg: &SimConfig,
    opts: &RunOptions,
    host: Option<&HostModel>,
) -> Outcome {
    simulate_with_costs(scenario, cfg, opts, host.map(HostCosts::of).as_ref())
}

/// Run the scenario with these host costs (e.g. [`HostCosts::worst_case`]); None: no costs.
pub fn simulate_with_costs(
    scenario: &Scenario,
    cfg: &SimConfig,
    opts: &RunOptions,
    costs: Option<&HostCosts>,
) -> Outcome {
    let mut sim = Sim::new(scenario, cfg, opts);
    if let Some(c) = costs {
        sim.set_costs(c, cfg.settings.seed);
    }
    sim.run();
    sim.outcome(scenario, cfg)
}

/// Release latencies of a host model: its costs and one random stream per (workload, task).
struct ReleaseLatency {
    costs: HostCosts,
    streams: Vec<Vec<SimRng>>,
}

impl ReleaseLatency {
    fn draw(&mut self, w: u32, task: u32) -> u64 {
        let u = self.streams[w as usize][task as usize].unit();
        self.costs.latency(u)
    }
}

struct Sim {
    q: EventQueue<Ev>,
    host: Host,
    loads: Vec<Workload>,
    /// Per host thread: (workload, vCPU slot).
    owner: Vec<(u32, u32)>,
    /// Workloads of global guests (their vCPUs follow the host's decisions).
    global: Vec<usize>,
    horizon: u64,
    abort_late: bool,
    tracer: Option<Tracer>,
    progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    latency: Option<ReleaseLatency>,
    adapt: Option<AdaptRun>,
}

impl Sim {
    /// Rounds of [`Sim::resched`] before it gives up settling.
    const RESCHED_ROUNDS: usize = 8;

    /// Charge a host model's costs: per server period and enforcement on the host, task switches
    /// and cache reloads in the guests, release latency per guest job.
    fn set_costs(&mut self, costs: &HostCosts, seed: u64) {
        self.host.set_costs(costs, seed);
        let mut streams = Vec::with_capacity(self.loads.len());
        for (wi, w) in self.loads.iter_mut().enumerate() {
            if w.is_guest {
                w.set_costs(costs.context_switch, costs.cache_reload);
            }
            let stream = |ti: usize| SimRng::new(seed, (1 << 63) | ((wi as u64) << 32) | ti as u64);
            streams.push((0..w.tasks.len()).map(stream).collect());
        }
        self.latency = Some(ReleaseLatency { costs: *costs, streams });
    }

    /// How late job releases of task `task` of workload `w` reach the guest (0 without a host
    /// model, and for extra host threads).
    fn release_latency(&mut self, w: u32, task: u32) -> u64 {
        match &mut self.latency {
            Some(l) if self.loads[w as usize].is_guest => l.draw(w, task),
            _ => 0,
        }
    }

    fn new(scenario: &Scenario, cfg: &SimConfig, opts: &RunOptions) -> Sim {
        let seed = cfg.settings.seed;
        let host = Host::new(cfg.host_cores(scenario), cfg.threads(), &cfg.settings);
        let mut loads: Vec<Workload> = Vec::with_capacity(scenario.guests.len() + cfg.extra.len());
        let mut owner = Vec::new();
        for (i, ((g, v), gv)) in scenario.guests.iter().zip(&cfg.vcpus).zip(&cfg.guest_vcpus).enumerate() {
            let threads = gv.rt.iter().enumerate().map(|(slot, &rt)| {
                owner.push((i as u32, slot as u32));
                (owner.len() - 1, rt)
            });
            let threads = threads.collect();
            let dispatch = match &gv.task_vcpu {
                Some(vcpu_of) => Dispatch::Partitioned { vcpu_of: vcpu_of.clone() },
                None => Dispatch::Global,
            };
            loads.push(Workload::guest(i as u32, g, GuestVcpus { threads, dispatch }, seed, v));
        }
        for e in &cfg.extra {
            let i = loads.len();
            let periodic = match e.load {
                Load::Periodic { period, run, offset } => Some((period, run, offset)),
                Load::Busy => None,
            };
            owner.push((i as u32, 0));
            loads.push(Workload::load(i as u32, &e.thread.name, owner.len() - 1, periodic));
        }
        let global: Vec<usize> = (0..loads.len()).filter(|&w| loads[w].is_global()).collect();
        let mut host = host;
        // a global guest's vCPUs are read and re-assigned at every event
        for t in global.iter().flat_map(|&w| loads[w].vcpus.iter().map(|v| v.thread)) {
            host.charge_eagerly(t);
        }
        if opts.job_log {
            loads.iter_mut().for_each(|w| w.log = Some(Vec::new()));
        }
        let tracer = opts.trace.map(|w| Tracer::new(w, &host, &loads));
        // checked by `adapt::adapting`, which built the same controller
        let adapt = cfg.adapt.as_ref().and_then(|_| AdaptRun::new(scenario, cfg).ok());
        if adapt.is_some() {
            loads.iter_mut().filter(|w| w.is_guest).for_each(|w| w.ended = Some(Vec::new()));
        }
        Sim {
            q: EventQueue::new(),
            host,
            loads,
            owner,
            global,
            horizon: cfg.settings.duration,
            abort_late: cfg.settings.abort_late,
            tracer,
            progress: opts.progress.clone(),
            latency: None,
            adapt,
        }
    }

    fn run(&mut self) {
        let firsts: Vec<(u32, u32, u64)> = (self.loads.iter().enumerate())
            .flat_map(|(wi, w)| w.first_releases().map(move |(ti, at)| (wi as u32, ti, at)))
            .collect();
        for (w, task, at) in firsts {
            self.q.schedule(Nanos(at), Ev::Release { w, task });
        }
        if let Some(a) = &self.adapt {
            self.q.schedule(Nanos(a.interval), Ev::Adapt);
        }
        self.host.start(&mut self.q);
        for wi in 0..self.loads.len() {
            self.sync_thread(wi, 0);
        }
        self.resched(0);
        while let Some((now, ev)) = self.host.next_event(&mut self.q, self.horizon) {
            self.host.charge_due(now, progress_of(&mut self.loads, &self.owner, now));
            self.sync_global(now);
            match ev {
                None => {}
                Some(Ev::Host(h)) => {
                    self.host.charge_for(h, now, progress_of(&mut self.loads, &self.owner, now));
                    self.host.on_event(h, now, &mut self.q)
                }
                Some(Ev::Release { w, task }) => {
                    self.charge_workload(w as usize, now);
                    self.nominal_release(w, task, now)
                }
                Some(Ev::Arrive { w, task }) => {
                    self.charge_workload(w as usize, now);
                    self.release(w, task, now)
                }
                Some(Ev::Abort { w, task, k }) => {
                    self.charge_workload(w as usize, now);
                    if self.loads[w as usize].abort(task, k, now) {
                        self.sync_thread(w as usize, now)
                    }
                }
                Some(Ev::Adapt) => {
                    self.host.charge(now, progress_of(&mut self.loads, &self.owner, now));
                    self.adapt_step(now)
                }
            }
            self.resched(now);
            if self.events() & 0xF_FFFF == 0 {
                if let Some(p) = &self.progress {
                    p(now, self.horizon);
                }
            }
        }
        self.host.charge(self.horizon, progress_of(&mut self.loads, &self.owner, self.horizon));
        self.sync_global(self.horizon);
        if let Some(tr) = &mut self.tracer {
            tr.close(self.horizon);
        }
        self.loads.iter_mut().for_each(|w| w.finish(self.horizon));
    }

    /// Events handled: queued events plus core timers.
    fn events(&self) -> u64 {
        self.host.events(&self.q)
    }

    /// Global guests follow the charge: their vCPU threads wake or block with their jobs.
    fn sync_global(&mut self, now: u64) {
        for k in 0..self.global.len() {
            self.sync_thread(self.global[k], now);
        }
    }

    /// Charge the cores of workload `w`'s vCPU threads before its work changes.
    fn charge_workload(&mut self, w: usize, now: u64) {
        for slot in 0..self.loads[w].vcpus.len() {
            let t = self.loads[w].vcpus[slot].thread;
            self.host.charge_thread(t, now, progress_of(&mut self.loads, &self.owner, now));
        }
    }

    /// `--adapt`: the ended jobs' demands to the controller, its step, its decisions applied to
    /// the vCPU threads (guest i runs on thread i), and the next step scheduled.
    fn adapt_step(&mut self, now: u64) {
        let Some(a) = &mut self.adapt else { return };
        for (g, w) in self.loads.iter_mut().enumerate() {
            for (task, demand) in w.ended.iter_mut().flat_map(|e| e.drain(..)) {
                a.job_ended(g, task, demand);
            }
        }
        for (g, r) in a.step(now) {
            let t = self.loads[g].vcpus[0].thread;
            self.host.threads[t].st.set_reservation(r.budget, r.deadline);
        }
        self.q.schedule(Nanos(now + a.interval), Ev::Adapt);
    }

    /// A job's nominal release: taken in at once by a busy vCPU (the guest's scheduler sees it
    /// at its next decision), or, when the release has to wake an idle vCPU, `release_latency`
    /// later (with a host model; its deadline still counts from the nominal release).
    fn nominal_release(&mut self, w: u32, task: u32, now: u64) {
        if self.loads[w as usize].idle_for(task) {
            let late = self.release_latency(w, task);
            if late > 0 {
                self.q.schedule(Nanos(now.saturating_add(late)), Ev::Arrive { w, task });
                return;
            }
        }
        self.release(w, task, now)
    }

    fn release(&mut self, w: u32, task: u32, now: u64) {
        let (next, k, deadline) = self.loads[w as usize].release(task, now);
        // the next nominal release, never before this one reached the guest
        self.q.schedule(Nanos(next.max(now)), Ev::Release { w, task });
        if self.abort_late {
            self.q.schedule(Nanos(deadline.max(now)), Ev::Abort { w, task, k });
        }
        self.sync_thread(w as usize, now);
    }

    /// Tell the host whether each of the workload's threads has work (its work may also have
    /// changed).
    fn sync_thread(&mut self, wi: usize, now: u64) {
        for slot in 0..self.loads[wi].vcpus.len() {
            let t: ThreadId = self.loads[wi].vcpus[slot].thread;
            if self.loads[wi].runnable(slot) {
                self.host.wake(t, now, &mut self.q);
                self.host.touch(t);
            } else {
                self.host.block(t);
            }
        }
    }

    /// Re-decide the host; global guests then give their jobs to the vCPUs the host runs, which
    /// may wake or block vCPU threads: repeat until nothing changes (a few rounds at most; a
    /// round left undecided would leave a core's timer armed for work its thread no longer has).
    fn resched(&mut self, now: u64) {
        let mut settled = false;
        for _ in 0..Self::RESCHED_ROUNDS {
            self.host.charge_dirty(now, progress_of(&mut self.loads, &self.owner, now));
            let (loads, owner) = (&self.loads, &self.owner);
            self.host.resched(now, &mut self.q, |t| {
                let (w, slot) = owner[t];
                loads[w as usize].work_left(slot as usize)
            });
            let mut changed = false;
            for k in 0..self.global.len() {
                let w = self.global[k];
                let host = &self.host;
                let on_host = |t: ThreadId| (host.threads[t].core.is_some(), host.could_run(t, now));
                if self.loads[w].observe_host(on_host) {
                    changed = true;
                    self.sync_thread(w, now);
                }
            }
            if !changed {
                settled = true;
                break;
            }
        }
        debug_assert!(settled, "the host and its global guests did not settle at {now} ns");
        if let Some(tr) = &mut self.tracer {
            tr.observe(now, &self.host, &self.loads);
        }
    }

    fn outcome(mut self, s: &Scenario, cfg: &SimConfig) -> Outcome {
        let d = self.horizon;
        let mut r = Results::new("simulation", d);
        r.label = Some(s.name.clone());
        r.seed = Some(cfg.settings.seed);
        let mut threads = Vec::new();
        let specs: Vec<&ThreadSpec> = cfg.threads().collect();
        for w in self.loads.iter_mut() {
            let cpu: u64 = w.vcpus.iter().map(|v| self.host.threads[v.thread].cpu_time).sum();
            let spec = specs[w.vcpus[0].thread];
            if !w.is_guest {
                threads.push(HostThread {
                    name: w.name.clone(),
                    cores: Some(spec.cores.clone()),
                    cpu_time_ns: cpu,
                    policy: Some(spec.policy.name().into()),
                    prio: None,
                    utilisation: cpu as f64 / d as f64,
                });
                continue;
            }
            for t in &mut w.tasks {
                let response_ns = t.response.histogram().summary();
                r.tasks.push(TaskResult {
                    guest: w.name.clone(),
                    name: t.name.clone(),
                    jobs: t.jobs,
                    misses: t.misses,
                    dsr: TaskResult::dsr_of(t.jobs, t.misses),
                    response_ns,
                    ..Default::default()
                });
            }
            r.guests.push(GuestResult {
                name: w.name.clone(),
                cpu_time_ns: cpu,
                utilisation: cpu as f64 / d as f64,
                cores: Some(guest_cores(w.vcpus.iter().map(|v| specs[v.thread]))),
                policy: Some(spec.policy.name().into()),
                ..Default::default()
            });
        }
        for c in 0..self.host.cores() {
            r.cores.push(CoreResult::busy(c as u32, self.host.core_busy(c), d));
        }
        r.simulation = Some(SimulationSection {
            events: Some(self.events()),
            miss_policy: Some((if cfg.settings.abort_late { "abort" } else { "continue" }).into()),
            softirq_lock_inversions: None,
            threads: (!threads.is_empty()).then_some(threads),
            host_costs: self.latency.as_ref().map(|l| l.costs.describe()),
        });
        if let Some(a) = self.adapt.take() {
            for (g, (mean, series)) in r.guests.iter_mut().zip(a.finish(d)) {
                g.bandwidth_mean = Some(mean);
                g.reservations = Some(series);
            }
        }
        let job_log = self.loads.iter().filter_map(|w| w.log.clone()).flatten().collect();
        let events = self.events();
        Outcome { results: r, trace: self.tracer.map(|t| t.writer), events, job_log }
    }
}

/// The owner's side of a charge: `dt` ns of work done by host thread `t` go to its workload's vCPU
/// (returns whether it still has work).
fn progress_of<'a>(
    loads: &'a mut [Workload],
    owner: &'a [(u32, u32)],
    now: u64,
) -> impl FnMut(ThreadId, u64) -> bool + 'a {
    move |t, dt| {
        let (w, slot) = owner[t];
        loads[w as usize].progress(slot as usize, dt, now)
    }
}

/// The cores a guest's vCPU threads may run on, ascending (one vCPU: its thread's cores as given).
fn guest_cores<'a>(mut threads: impl Iterator<Item = &'a ThreadSpec>) -> Vec<u32> {
    let mut cores = threads.next().map(|t| t.cores.clone()).unwrap_or_default();
    for t in threads {
        cores.extend(&t.cores);
        cores.sort_unstable();
        cores.dedup();
    }
    cores
}

/// Turns the state after each event into trace slices.
struct Tracer {
    writer: TraceWriter,
    /// Per core: (thread, since).
    cores: Vec<Option<(ThreadId, u64)>>,
    /// Per workload, per vCPU: (task, since) while its task runs.
    loads: Vec<Vec<Option<(u32, u64)>>>,
    misses: Vec<u64>,
    thread_names: Vec<String>,
    task_names: Vec<Vec<String>>,
}

const CORES_PID: u32 = 1;

impl Tracer {
    fn new(window: TraceWindow, host: &Host, loads: &[Workload]) -> Tracer {
        let mut writer = TraceWriter::new(window);
        for c in 0..host.cores() {
            writer.name_track(Track { pid: CORES_PID, tid: c as u32 }, "cores", &format!("core {c}"));
        }
        for (i, w) in loads.iter().enumerate() {
            let group = if w.is_guest { format!("guest {}", w.name) } else { format!("thread {}", w.name) };
            for slot in 0..w.vcpus.len() {
                let name = if w.vcpus.len() == 1 { "tasks".to_string() } else { format!("vcpu{slot} tasks") };
                writer.name_track(Track { pid: 2 + i as u32, tid: slot as u32 }, &group, &name);
            }
        }
        Tracer {
            writer,
            cores: vec![None; host.cores()],
            loads: loads.iter().map(|w| vec![None; w.vcpus.len()]).collect(),
            misses: vec![0; loads.len()],
            thread_names: host.threads.iter().map(|t| t.name.clone()).collect(),
            task_names: loads.iter().map(|w| w.tasks.iter().map(|t| t.name.clone()).collect()).collect(),
        }
    }

    fn observe(&mut self, now: u64, host: &Host, loads: &[Workload]) {
        if !self.writer.wants(Nanos(now)) {
            return;
        }
        for c in 0..host.cores() {
            let cur = host.running(c);
            if self.cores[c].map(|x| x.0) != cur {
                self.close_core(c, now);
                self.cores[c] = cur.map(|t| (t, now));
            }
        }
        for (i, w) in loads.iter().enumerate() {
            for (slot, v) in w.vcpus.iter().enumerate() {
                let th = &host.threads[v.thread];
                let running = if th.core.is_some() && th.runnable { v.current } else { None };
                if self.loads[i][slot].map(|x| x.0) != running {
                    self.close_load(i, slot, now);
                    self.loads[i][slot] = running.map(|t| (t, now));
                }
            }
            let misses: u64 = w.tasks.iter().map(|t| t.misses).sum();
            if misses != self.misses[i] {
                self.misses[i] = misses;
                self.writer.instant(Track { pid: 2 + i as u32, tid: 0 }, "deadline miss", Nanos(now), None);
            }
        }
    }

    fn close_core(&mut self, c: usize, now: u64) {
        if let Some((t, since)) = self.cores[c].take() {
            self.writer.slice(
                Track { pid: CORES_PID, tid: c as u32 },
                &self.thread_names[t],
                Nanos(since),
                Nanos(now),
                None,
            );
        }
    }

    fn close_load(&mut self, i: usize, slot: usize, now: u64) {
        if let Some((t, since)) = self.loads[i][slot].take() {
            self.writer.slice(
                Track { pid: 2 + i as u32, tid: slot as u32 },
                &self.task_names[i][t as usize],
                Nanos(since),
                Nanos(now),
                None,
            );
        }
    }

    /// End of the run: close every open slice.
    fn close(&mut self, now: u64) {
        (0..self.cores.len()).for_each(|c| self.close_core(c, now));
        for i in 0..self.loads.len() {
            (0..self.loads[i].len()).for_each(|slot| self.close_load(i, slot, now));
        }
    }
}
