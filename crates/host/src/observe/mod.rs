//! Observe guests' real-time demand without changing the guest kernel (`rtvirt host observe`, and
//! the input of `rtvirt host adapt`): per guest, its vCPU threads sampled from the host
//! ([`vcpu`]) and, when the guest runs `rtvirt guest-agent`, its tasks as the agent reports them
//! ([`agent`]). A guest whose agent is absent or vanished is described by host inference.

pub mod agent;
pub mod vcpu;

use crate::threads::{Role, ThreadInfo};
use agent::AgentChannel;
use rtvirt_model::observe::{
    summarise, AgentState, AgentStatus, GuestObservation, Observation, Source, TaskObservation, OBSERVE_SCHEMA,
};
use std::path::PathBuf;
use vcpu::VcpuSampler;

/// One guest being observed.
#[derive(Debug)]
pub struct GuestObserver {
    pub name: String,
    pub vcpus: Vec<VcpuSampler>,
    pub agent: Option<AgentChannel>,
}

impl GuestObserver {
    /// Observe the vCPU threads among `threads` (a guest's, as discovered) and, if given, the
    /// agent behind `agent_socket`.
    pub fn new(name: &str, threads: &[ThreadInfo], agent_socket: Option<PathBuf>) -> GuestObserver {
        let vcpus = threads
            .iter()
            .filter_map(|t| match t.role {
                Role::Vcpu { index } => Some(VcpuSampler::new(index, t.tid, t.starttime)),
                _ => None,
            })
            .collect();
        GuestObserver { name: name.to_string(), vcpus, agent: agent_socket.map(AgentChannel::new) }
    }

    /// One round: a demand sample per vCPU and whatever the agent sent. Returns the samples of
    /// this round: (vCPU thread, CPU time in the window).
    pub fn tick(&mut self, now_ns: u64, window_ns: u64) -> Vec<(u32, u64)> {
        let samples = self.vcpus.iter_mut().filter_map(|v| Some((v.tid, v.sample(now_ns, window_ns)?))).collect();
        if let Some(a) = &mut self.agent {
            a.poll(now_ns);
        }
        samples
    }

    /// Whether every vCPU thread ended (the guest died).
    pub fn ended(&self) -> bool {
        !self.vcpus.is_empty() && self.vcpus.iter().all(VcpuSampler::ended)
    }

    /// The agent's state now.
    pub fn agent_state(&self, now_ns: u64) -> AgentState {
        self.agent.as_ref().map_or(AgentState::Absent, |a| a.lines.state(now_ns, a.open()))
    }

    /// What was learned: the agent's tasks while it reports, else one inferred task per vCPU.
    pub fn observation(&self, now_ns: u64, window_ns: u64) -> GuestObservation {
        let state = self.agent_state(now_ns);
        let agent_tasks = self.agent.as_ref().map(|a| a.lines.tasks()).unwrap_or_default();
        let tasks = if state == AgentState::Reporting && !agent_tasks.is_empty() {
            agent_tasks
        } else {
            self.inferred_tasks(window_ns)
        };
        GuestObservation {
            name: self.name.clone(),
            vcpus: self.vcpus.iter().map(VcpuSampler::observation).collect(),
            tasks,
            agent: AgentStatus { state, counters: self.agent.as_ref().map(|a| a.lines.counters).unwrap_or_default() },
        }
    }

    /// One task per vCPU from host inference: with a SCHED_DEADLINE reservation, the server's
    /// period and the CPU time per server period; else, where the thread halts, its jobs (period:
    /// the median interval between halts; execution time: the busy intervals between halts); else
    /// the window and the CPU time per window.
    fn inferred_tasks(&self, window_ns: u64) -> Vec<TaskObservation> {
        self.vcpus.iter().map(|v| inferred_task(v, window_ns)).collect()
    }
}

fn inferred_task(v: &VcpuSampler, window_ns: u64) -> TaskObservation {
    let o = v.observation();
    let task = |period_ns: u64, deadline_ns: u64, exec: rtvirt_model::stats::Summary| TaskObservation {
        name: format!("vcpu{}", v.vcpu),
        tid: v.tid,
        source: Source::HostInference,
        policy: "vcpu".into(),
        period_ns,
        deadline_ns,
        samples: exec.count,
        exec,
    };
    if let (None, Some(halts), Some(busy)) = (o.reservation, &o.halt_interval, o.busy_interval.clone()) {
        return task(halts.p50, halts.p50, busy);
    }
    let period = o.reservation.map_or(window_ns, |r| r.period_ns);
    // Demand per window rescaled to the period it stands for.
    let per_period: Vec<u64> = v
        .recent(usize::MAX)
        .iter()
        .map(|&s| ((s as u128 * period as u128) / window_ns.max(1) as u128) as u64)
        .collect();
    task(period, o.reservation.map_or(period, |r| r.deadline_ns), summarise(&per_period))
}

/// The observation document of `guests` after `duration_ns`.
pub fn observation(guests: &[GuestObserver], now_ns: u64, duration_ns: u64, window_ns: u64) -> Observation {
    Observation {
        schema: OBSERVE_SCHEMA.into(),
        duration_ns,
        window_ns,
        guests: guests.iter().map(|g| g.observation(now_ns, window_ns)).collect(),
    }
}

/// Observe `guests` for `duration_ns`, one round per window, stopping early on Ctrl-C/SIGTERM or
/// once every guest ended; the observation document. Times are from the start of the run.
pub fn run(guests: &mut [GuestObserver], duration_ns: u64, window_ns: u64) -> Observation {
    rtvirt_os::signals::install();
    let start = std::time::Instant::now();
    let window = window_ns.max(1);
    let mut round = 0u64;
    loop {
        let now = start.elapsed().as_nanos() as u64;
        for g in guests.iter_mut() {
            g.tick(now, window);
        }
        let all_ended = !guests.is_empty() && guests.iter().all(GuestObserver::ended);
        if now >= duration_ns || all_ended || rtvirt_os::signals::interrupted() {
            return observation(guests, now, now.min(duration_ns), window);
        }
        round += 1;
        let next = (round * window).min(duration_ns);
        std::thread::sleep(std::time::Duration::from_nanos(next.saturating_sub(start.elapsed().as_nanos() as u64)));
    }
}
