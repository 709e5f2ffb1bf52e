//! `rtvirt simulate --adapt`: the analysis crate's adaptive controller
//! ([`rtvirt_analysis::adapt::Controller`], the one `rtvirt host adapt` runs) on the simulated
//! vCPUs. Every ended job reports its execution demand (as the guest agent does); every
//! `[adapt] interval` the controller steps and its decisions become `sched_setattr`s of the vCPU
//! threads' SCHED_DEADLINE runtime ([`crate::host::policy::PState::set_reservation`]). The run's
//! results gain, per guest, the reservation over time and its time-averaged bandwidth.

use crate::config::{AdaptSettings, Policy, SimConfig};
use rtvirt_analysis::adapt::config::AdaptConfig;
use rtvirt_analysis::adapt::{AdaptGuest, Controller, Decision};
use rtvirt_analysis::interface::{Interface, Model};
use rtvirt_model::plan::Plan;
use rtvirt_model::results::{Reservation, ReservationChange};
use rtvirt_model::scenario::adapt::MAX_STEPS;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::InputError;

/// `cfg` with the plan's reservations adapted online (`--adapt`): the scenario's `[adapt]`
/// section, else its defaults; the plan's model and cap. Checked here (the controller is built
/// once), so that the run itself cannot fail.
pub fn adapting(mut cfg: SimConfig, scenario: &Scenario, plan: &Plan) -> Result<SimConfig, InputError> {
    let section = scenario.adapt.clone().unwrap_or_default();
    let edp = plan.guests.iter().any(|g| g.model == "edp");
    let cap = plan.settings.bandwidth_cap.unwrap_or(scenario.host.bandwidth_cap);
    cfg.adapt = Some(AdaptSettings { section, edp, cap });
    AdaptRun::new(scenario, &cfg)?;
    Ok(cfg)
}

/// The controller of one run and what it did.
pub struct AdaptRun {
    controller: Controller,
    pub interval: u64,
    /// Per guest: every reservation in force, from 0 on.
    series: Vec<Vec<ReservationChange>>,
}

impl AdaptRun {
    /// The controller over the run's guests, each at its planned reservation (every vCPU must be a
    /// SCHED_DEADLINE thread on one core: `--adapt` runs on a plan).
    pub fn new(scenario: &Scenario, cfg: &SimConfig) -> Result<AdaptRun, InputError> {
        let Some(a) = &cfg.adapt else { return Err(InputError::field("--adapt", "no adaptation configured")) };
        if cfg.settings.duration / a.section.interval.0 > MAX_STEPS {
            return Err(scenario.locate(InputError::field(
                "adapt.interval",
                format!(
                    "{}: more than {MAX_STEPS} controller steps in the run: expected a longer interval",
                    a.section.interval
                ),
            )));
        }
        let model = if a.edp { Model::Edp } else { Model::Prm };
        let config = AdaptConfig::from_section(&a.section, model, a.cap);
        let mut guests = Vec::with_capacity(scenario.guests.len());
        for (i, (g, v)) in scenario.guests.iter().zip(&cfg.vcpus).enumerate() {
            if g.is_multi_vcpu() {
                return Err(scenario.locate(InputError::field(
                    format!("guest[{i}].vcpus"),
                    format!("guest \"{}\": --adapt adapts guests of one vCPU (expected vcpus = 1)", g.name),
                )));
            }
            let (Policy::Deadline { runtime, deadline, period }, [core]) =
                (&v.thread.policy, v.thread.cores.as_slice())
            else {
                return Err(InputError::field(
                    format!("guest[{i}]"),
                    format!("guest \"{}\": --adapt changes SCHED_DEADLINE reservations on one core each: expected a plan (--plan, or the scenario planned)", g.name),
                ));
            };
            let reservation = Interface { period: *period, budget: *runtime, deadline: *deadline };
            guests.push(AdaptGuest { guest: g.clone(), core: *core, reservation, rank: a.section.rank(&g.name) });
        }
        let series = guests.iter().map(|g| vec![change(0, g.reservation, None, "plan", None)]).collect();
        let controller = Controller::new(config, guests)?;
        Ok(AdaptRun { controller, interval: a.section.interval.0, series })
    }

    /// Job of task `task` of guest `g` ended having needed `demand_ns`.
    pub fn job_ended(&mut self, g: usize, task: u32, demand_ns: u64) {
        self.controller.observe_job(g, task as usize, demand_ns);
    }

    /// One controller step at `now`: the changed reservations (guest index, new one).
    pub fn step(&mut self, now: u64) -> Vec<(usize, Interface)> {
        let decisions = self.controller.step(now);
        decisions.iter().filter_map(|d| self.record(d)).collect()
    }

    fn record(&mut self, d: &Decision) -> Option<(usize, Interface)> {
        let g = self.controller.guest_index(&d.guest)?;
        let detail = matches!(d.reason, rtvirt_analysis::adapt::Reason::Degraded { .. }).then(|| d.reason.text());
        self.series[g].push(change(d.at_ns, d.new, Some(d.demand), d.reason.as_str(), detail));
        Some((g, d.new))
    }

    /// Per guest: (time-averaged bandwidth over `[0, horizon)`, the reservation series).
    pub fn finish(self, horizon: u64) -> Vec<(f64, Vec<ReservationChange>)> {
        self.series.into_iter().map(|s| (time_average(&s, horizon), s)).collect()
    }
}

fn change(at_ns: u64, i: Interface, demand: Option<f64>, reason: &str, detail: Option<String>) -> ReservationChange {
    ReservationChange {
        at_ns,
        reservation: Reservation { deadline_ns: i.deadline, period_ns: i.period, runtime_ns: i.budget },
        bandwidth: i.bandwidth(),
        demand,
        reason: reason.into(),
        detail,
    }
}

/// Time-averaged bandwidth of a step function given by its changes (the first at 0).
pub fn time_average(series: &[ReservationChange], horizon: u64) -> f64 {
    let mut area = 0.0;
    for (k, c) in series.iter().enumerate() {
        let end = series.get(k + 1).map_or(horizon, |n| n.at_ns).min(horizon);
        area += c.bandwidth * end.saturating_sub(c.at_ns) as f64;
    }
    area / horizon.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_average_weighs_each_reservation_by_how_long_it_held() {
        let i = |b| Interface { period: 10, budget: b, deadline: 10 };
        let s = vec![change(0, i(5), None, "plan", None), change(250, i(1), Some(0.1), "shrink", None)];
        assert!((time_average(&s, 1000) - (0.5 * 250.0 + 0.1 * 750.0) / 1000.0).abs() < 1e-12);
        assert!((time_average(&s[..1], 1000) - 0.5).abs() < 1e-12);
    }
}
