//! `rtvirt host adapt`: keep each guest's SCHED_DEADLINE reservation right while it runs. The plan
//! is applied first (journaled, as `host apply` does); then, round after round, each guest is
//! observed ([`crate::observe`]: the reserved vCPU's CPU time per server period, and the agent's
//! job execution times when it reports), the observations go to a [`Controller`] (the adaptation
//! controller of rtvirt-analysis, handed in by the cli as the exact admission is), and every
//! change it decides is journaled (fsynced) in a session of its own before `sched_setattr` makes
//! it, then written to the decision log. A guest whose vCPU thread ends is removed from the
//! controller (its bandwidth released). At the end (duration, Ctrl-C/SIGTERM, a failure) the
//! session is rolled back: the plan's reservations are in force again; the caller's
//! [`marker::RunMarker`] then undoes the plan's apply too. After a kill -9 the journal still holds
//! every change: the next run ([`marker::recover_killed`]) or `rtvirt host revert` restores it.

pub mod marker;

use crate::error::{HostError, Result};
use crate::journal::Journal;
use crate::observe::GuestObserver;
use rtvirt_model::adapt_log::{AdaptEvent, AdaptRecord, ChangeKind};
use rtvirt_model::observe::{AgentState, Reservation, Source};
use rtvirt_os::restore::Change;
use rtvirt_os::sched::{self, SchedAttr};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The adaptation controller as the host loop drives it (guests and tasks by name).
pub trait Controller {
    /// One job of task `task` of `guest` ran `ns` (the guest agent's report).
    fn observe_job(&mut self, guest: &str, task: &str, ns: u64);
    /// The vCPU of `guest` used `ns` of CPU in one server period (host inference).
    fn observe_server_period(&mut self, guest: &str, ns: u64);
    /// `guest` ended: release its bandwidth.
    fn remove(&mut self, guest: &str);
    /// Decide; the changes (already in the controller's state).
    fn step(&mut self, now_ns: u64) -> Vec<Decision>;
}

/// One reservation change decided by the controller.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub guest: String,
    pub new: Reservation,
    /// Observed demand as a bandwidth.
    pub demand: f64,
    pub reason: String,
    pub change: ChangeKind,
}

/// A guest under adaptation: its observer and the vCPU thread carrying its reservation.
pub struct AdaptTarget {
    pub observer: GuestObserver,
    pub tid: u32,
    pub starttime: u64,
    /// The plan's reservation (in force at the start).
    pub planned: Reservation,
}

#[derive(Debug, Clone)]
pub struct AdaptOptions {
    pub state_dir: PathBuf,
    pub duration: Duration,
    /// How often the controller decides.
    pub step: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdaptSummary {
    pub rounds: u64,
    pub changes: u64,
    pub ended: Vec<String>,
}

/// Shortest sampling window: a server period shorter than this is sampled over several periods.
const MIN_WINDOW_NS: u64 = 5_000_000;

struct Live {
    target: AdaptTarget,
    current: Reservation,
    ended: bool,
}

/// Run the adaptation loop (the plan already applied), writing the decision log to `log`.
pub fn run(
    targets: Vec<AdaptTarget>,
    controller: &mut dyn Controller,
    opts: &AdaptOptions,
    log: &mut dyn Write,
) -> Result<AdaptSummary> {
    rtvirt_os::signals::install();
    let mut journal = Journal::open(&opts.state_dir)?;
    let mut live: Vec<Live> =
        targets.into_iter().map(|t| Live { current: t.planned, target: t, ended: false }).collect();
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    for l in &live {
        write(log, &record(now(), &l.target.observer.name, AdaptEvent::Start, None, Some(l.current), "the plan"))?;
    }
    let window = live.iter().map(|l| window_of(l.current.period_ns)).min().unwrap_or(MIN_WINDOW_NS);
    let mut summary = AdaptSummary::default();
    let mut next_step = opts.step.as_nanos() as u64;
    let result = loop {
        let t = now();
        let all_ended = live.iter().all(|l| l.ended);
        if t >= opts.duration.as_nanos() as u64 || rtvirt_os::signals::interrupted() || all_ended {
            break Ok(());
        }
        observe_round(&mut live, controller, t, window, log, &mut summary)?;
        summary.rounds += 1;
        if t >= next_step {
            next_step = t + opts.step.as_nanos() as u64;
            if let Err(e) = decide(&mut live, controller, &mut journal, t, log, &mut summary) {
                break Err(e);
            }
        }
        std::thread::sleep(Duration::from_nanos(window));
    };
    let restored = journal.rollback();
    for l in live.iter().filter(|l| !l.ended) {
        let why = "the run ended: its reservation changes are undone, then every setting it made";
        write(log, &record(now(), &l.target.observer.name, AdaptEvent::End, Some(l.current), None, why))?;
    }
    result?;
    restored?;
    Ok(summary)
}

/// A server period's sampling window: the period, or the least multiple of it of 5 ms.
fn window_of(period_ns: u64) -> u64 {
    let p = period_ns.max(1);
    p * MIN_WINDOW_NS.div_ceil(p)
}

/// Sample every guest, feed the controller, notice guests that ended.
fn observe_round(
    live: &mut [Live],
    controller: &mut dyn Controller,
    t: u64,
    window: u64,
    log: &mut dyn Write,
    summary: &mut AdaptSummary,
) -> Result<()> {
    for l in live.iter_mut().filter(|l| !l.ended) {
        let obs = &mut l.target.observer;
        let samples = obs.tick(t, window);
        let name = obs.name.clone();
        if obs.ended() {
            l.ended = true;
            controller.remove(&name);
            summary.ended.push(name.clone());
            let why = "the guest's vCPU thread ended: its bandwidth is released";
            write(log, &record(t, &name, AdaptEvent::Ended, None, Some(l.current), why))?;
            continue;
        }
        let period = l.current.period_ns.max(1);
        if let Some(&(_, sample)) = samples.iter().find(|(tid, _)| *tid == l.target.tid) {
            // One window's CPU time, spread over the server periods it spans.
            controller.observe_server_period(&name, sample / (window / period).max(1));
        }
        let reporting = obs.agent_state(t) == AgentState::Reporting;
        if let Some(agent) = obs.agent.as_mut() {
            for (task, ns) in agent.lines.take_new() {
                if reporting {
                    controller.observe_job(&name, &task, ns);
                }
            }
        }
    }
    Ok(())
}

/// Let the controller decide; journal and make each change, then log it.
fn decide(
    live: &mut [Live],
    controller: &mut dyn Controller,
    journal: &mut Journal,
    t: u64,
    log: &mut dyn Write,
    summary: &mut AdaptSummary,
) -> Result<()> {
    let current = |name: &str| live.iter().find(|l| l.target.observer.name == name && !l.ended).map(|l| l.current);
    for d in admissible_order(controller.step(t), current) {
        let Some(l) = live.iter_mut().find(|l| l.target.observer.name == d.guest && !l.ended) else { continue };
        let before = sched::get(l.target.tid).map_err(HostError::from)?;
        let after = SchedAttr::deadline(d.new.runtime_ns, d.new.deadline_ns, d.new.period_ns);
        let change = Change::Sched { tid: l.target.tid, starttime: l.target.starttime, before, after };
        journal.apply_all(&[change], &mut |_| {})?;
        let source = match l.target.observer.agent_state(t) {
            AgentState::Reporting => Source::Agent,
            _ => Source::HostInference,
        };
        let mut r = record(t, &d.guest, AdaptEvent::Change, Some(l.current), Some(d.new), &d.reason);
        (r.demand, r.source, r.change) = (Some(d.demand), Some(source), Some(d.change));
        write(log, &r)?;
        l.current = d.new;
        summary.changes += 1;
    }
    Ok(())
}

/// A step's decisions in an order the kernel admits: every one that lowers a reservation's
/// bandwidth (`current`: the one in force) before any that raises it. The kernel admits each
/// `sched_setattr` against the bandwidth in force at that moment, so a grow made before the shrink
/// of another reservation on its core can exceed the core's cap (EBUSY) although the step as a
/// whole fits it - as seen with two vCPU threads of one guest on one core.
fn admissible_order(mut decisions: Vec<Decision>, current: impl Fn(&str) -> Option<Reservation>) -> Vec<Decision> {
    let bandwidth = |r: &Reservation| r.runtime_ns as f64 / r.period_ns.max(1) as f64;
    decisions.sort_by_key(|d| current(&d.guest).is_none_or(|c| bandwidth(&d.new) > bandwidth(&c)));
    decisions
}

fn record(
    time_ns: u64,
    guest: &str,
    event: AdaptEvent,
    old: Option<Reservation>,
    new: Option<Reservation>,
    reason: &str,
) -> AdaptRecord {
    AdaptRecord {
        time_ns,
        guest: guest.into(),
        event,
        demand: None,
        old,
        new,
        reason: reason.into(),
        source: None,
        change: None,
    }
}

fn write(log: &mut dyn Write, r: &AdaptRecord) -> Result<()> {
    let line = serde_json::to_string(r).expect("records serialise") + "\n";
    log.write_all(line.as_bytes()).and_then(|_| log.flush()).map_err(|e| HostError::io("the decision log", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrinks_are_made_before_grows_whatever_order_the_controller_gave() {
        let r = |runtime_ns: u64| Reservation { runtime_ns, deadline_ns: 10, period_ns: 10 };
        let d = |guest: &str, runtime_ns: u64| Decision {
            guest: guest.into(),
            new: r(runtime_ns),
            demand: 0.0,
            reason: String::new(),
            change: ChangeKind::Grow,
        };
        let now = |g: &str| match g {
            "a" => Some(r(4)),
            "b" => Some(r(5)),
            "c" => Some(r(2)),
            _ => None,
        };
        let order = admissible_order(vec![d("a", 6), d("b", 3), d("c", 3), d("d", 1), d("e", 1)], now);
        let names: Vec<&str> = order.iter().map(|d| d.guest.as_str()).collect();
        assert_eq!(names, ["b", "a", "c", "d", "e"], "the shrink first, the rest in the controller's order");
    }

    #[test]
    fn windows_are_whole_server_periods_of_at_least_5ms() {
        assert_eq!(window_of(10_000_000), 10_000_000);
        assert_eq!(window_of(2_000_000), 6_000_000);
        assert_eq!(window_of(5_000_000), 5_000_000);
        assert_eq!(window_of(0), 5_000_000);
    }
}
