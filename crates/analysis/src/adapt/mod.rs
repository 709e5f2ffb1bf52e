//! Adaptive reservations: each guest's reservation kept right online from its observed demand,
//! feedback scheduling after Abeni, Cucinotta, Lipari, Marzario & Palopoli 2005 (adaptive
//! reservations), Palopoli et al. 2009 (AQuoSA) and Cucinotta et al. 2010 (legacy feedback
//! scheduling), with the planner's own analysis as the sizing rule. One implementation for the
//! real host (`rtvirt host adapt`) and the simulator (`simulate --adapt`).
//!
//! A [`Controller`] holds per guest its planned reservation, core and criticality rank, and
//! sliding windows of observed demand (per task: job execution times, [`Controller::observe_job`];
//! or per server period: CPU time used, [`Controller::observe_server_period`]). Each
//! [`Controller::step`]: [`target`] sizes what every guest wants with the planner's own code and
//! applies hysteresis and the rate limit; [`fit`] fits every core under its cap with the planner's
//! exact admission, most critical guests first, degrading the others; the changes come back as
//! [`Decision`]s (already applied to the controller's state). The server period is the plan's and
//! stays fixed: only the budget (and with EDP the deadline) changes, as `sched_setattr` of the
//! runtime does on a real host.

pub mod config;
pub mod fit;
pub mod target;
pub mod window;

use crate::interface::Interface;
use config::AdaptConfig;
use rtvirt_model::scenario::Guest;
use rtvirt_model::InputError;
use target::{Move, Wanted};
use window::Window;

/// A guest under adaptation: its tasks, core, current reservation and criticality.
#[derive(Debug, Clone)]
pub struct AdaptGuest {
    pub guest: Guest,
    pub core: u32,
    /// The reservation in force now (the plan's at the start).
    pub reservation: Interface,
    /// Criticality rank: 0 is kept first when a core's demand exceeds its cap; ties keep the
    /// order of the guests given.
    pub rank: u32,
}

/// Why a reservation changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Observed demand rose beyond the grow band.
    Grow,
    /// Observed demand fell beyond the shrink band (and the rate limit allowed it).
    Shrink,
    /// The core cannot give what the guest wants: it got less, after the guests kept before it
    /// (named, most critical first).
    Degraded { kept: Vec<String> },
}

impl Reason {
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Grow => "grow",
            Reason::Shrink => "shrink",
            Reason::Degraded { .. } => "degraded",
        }
    }
    /// The reason in words (the decision log's `reason`).
    pub fn text(&self) -> String {
        match self {
            Reason::Grow => "observed demand rose above the reservation".into(),
            Reason::Shrink => "observed demand fell below the reservation".into(),
            Reason::Degraded { kept } if kept.is_empty() => "demand exceeds the core's cap".into(),
            Reason::Degraded { kept } => {
                format!("demand exceeds the core's cap: kept first by criticality {}", kept.join(", "))
            }
        }
    }
}

/// One change of one guest's reservation.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub at_ns: u64,
    pub guest: String,
    pub core: u32,
    pub old: Interface,
    pub new: Interface,
    /// What the observations asked for (`new` is less when degraded).
    pub wanted: Interface,
    /// Observed mean demand as a bandwidth.
    pub demand: f64,
    pub reason: Reason,
}

#[derive(Debug, Clone)]
struct Tracked {
    spec: AdaptGuest,
    jobs: Vec<Window>,
    periods: Window,
    last_change: Option<u64>,
    alive: bool,
    /// Observations clamped to their bound (untrusted input beyond a period).
    clamped: u64,
}

/// The controller: guests, their windows and reservations.
#[derive(Debug, Clone)]
pub struct Controller {
    config: AdaptConfig,
    guests: Vec<Tracked>,
}

impl Controller {
    /// A controller for `guests` (each core's guests at the minimum budget must fit its cap).
    pub fn new(config: AdaptConfig, guests: Vec<AdaptGuest>) -> Result<Controller, InputError> {
        if let Some((field, expected)) = config.check() {
            return Err(InputError::field(format!("adapt.{field}"), format!("expected {expected}")));
        }
        for g in &guests {
            let r = g.reservation;
            if r.period == 0 || r.budget > r.deadline || r.deadline > r.period {
                return Err(InputError::field(
                    format!("guest \"{}\"", g.guest.name),
                    "expected a reservation with 0 < budget <= deadline <= period",
                ));
            }
        }
        let tracked = guests
            .into_iter()
            .map(|spec| Tracked {
                jobs: spec.guest.tasks.iter().map(|_| Window::new(config.window)).collect(),
                periods: Window::new(config.window),
                spec,
                last_change: None,
                alive: true,
                clamped: 0,
            })
            .collect();
        let c = Controller { config, guests: tracked };
        for core in c.cores() {
            let order = c.on_core(core);
            let mins: Vec<Interface> = order.iter().map(|&i| c.guests[i].spec.reservation).collect();
            if fit::fit_core(&mins, c.config.cap, c.config.min_budget_ns).is_none() {
                return Err(InputError::field(
                    format!("core {core}"),
                    format!(
                        "its {} guests do not fit the cap {} even at the minimum budget {} ns: expected fewer guests \
                         per core",
                        order.len(),
                        c.config.cap,
                        c.config.min_budget_ns
                    ),
                ));
            }
        }
        Ok(c)
    }

    pub fn config(&self) -> &AdaptConfig {
        &self.config
    }

    /// Index of the guest named `name`.
    pub fn guest_index(&self, name: &str) -> Option<usize> {
        self.guests.iter().position(|g| g.spec.guest.name == name)
    }

    /// Guest `g`'s reservation in force.
    pub fn reservation(&self, g: usize) -> Interface {
        self.guests[g].spec.reservation
    }

    /// Observations of guest `g` clamped to their bound so far.
    pub fn clamped(&self, g: usize) -> u64 {
        self.guests[g].clamped
    }

    /// One job of task `task` of guest `g` ran `ns`; clamped to the task's period (no job of a
    /// schedulable task runs longer). Unknown indices are ignored (untrusted reporters).
    pub fn observe_job(&mut self, g: usize, task: usize, ns: u64) {
        let Some(t) = self.guests.get_mut(g) else { return };
        let Some(period) = t.spec.guest.tasks.get(task).map(|x| x.period.0) else { return };
        t.clamped += u64::from(ns > period);
        t.jobs[task].push(ns.min(period));
    }

    /// Guest `g`'s vCPU used `ns` of CPU in one server period; clamped to the period.
    pub fn observe_server_period(&mut self, g: usize, ns: u64) {
        let Some(t) = self.guests.get_mut(g) else { return };
        let period = t.spec.reservation.period;
        t.clamped += u64::from(ns > period);
        t.periods.push(ns.min(period));
    }

    /// Guest `g` is gone: its bandwidth is released to the others on its core.
    pub fn remove(&mut self, g: usize) {
        if let Some(t) = self.guests.get_mut(g) {
            t.alive = false;
        }
    }

    /// Re-size every guest from its windows and fit every core; returns the changes (applied).
    pub fn step(&mut self, now_ns: u64) -> Vec<Decision> {
        let wanted: Vec<Option<Wanted>> = (0..self.guests.len()).map(|i| self.wanted(i)).collect();
        let mut decisions = vec![];
        for core in self.cores() {
            let order = self.on_core(core);
            let requests: Vec<Interface> = order.iter().map(|&i| self.request(i, wanted[i], now_ns)).collect();
            let Some(granted) = fit::fit_core(&requests, self.config.cap, self.config.min_budget_ns) else { continue };
            for (k, &i) in order.iter().enumerate() {
                let t = &self.guests[i];
                let (old, new) = (t.spec.reservation, granted[k]);
                if new == old {
                    continue;
                }
                let reason = if new.budget < requests[k].budget {
                    Reason::Degraded {
                        kept: order[..k].iter().map(|&j| self.guests[j].spec.guest.name.clone()).collect(),
                    }
                } else if new.budget > old.budget {
                    Reason::Grow
                } else {
                    Reason::Shrink
                };
                decisions.push(Decision {
                    at_ns: now_ns,
                    guest: t.spec.guest.name.clone(),
                    core,
                    old,
                    new,
                    wanted: wanted[i].map_or(old, |w| w.interface),
                    demand: wanted[i].map_or(0.0, |w| w.demand),
                    reason,
                });
                self.guests[i].spec.reservation = new;
                self.guests[i].last_change = Some(now_ns);
            }
        }
        decisions
    }

    /// What guest `i`'s windows ask for (None: too few samples yet).
    fn wanted(&self, i: usize) -> Option<Wanted> {
        let t = &self.guests[i];
        let (c, r) = (&self.config, t.spec.reservation);
        // A guest without tasks (known only by name) has no per-task windows to size from.
        if !t.jobs.is_empty() && t.jobs.iter().all(|w| w.len() >= c.min_samples) {
            return Some(target::from_tasks(&t.spec.guest, &t.jobs, r.period, c));
        }
        (t.periods.len() >= c.min_samples).then(|| target::from_server_periods(&t.periods, r, c))
    }

    /// The reservation guest `i` asks the core for: what it wants when hysteresis and the rate
    /// limit let it move, else what it has.
    fn request(&self, i: usize, wanted: Option<Wanted>, now_ns: u64) -> Interface {
        let t = &self.guests[i];
        let current = t.spec.reservation;
        let Some(w) = wanted else { return current };
        let since = t.last_change.map(|at| now_ns.saturating_sub(at));
        match target::propose(current, w.interface, since, &self.config) {
            Some(Move::Grow | Move::Shrink) => w.interface,
            None => current,
        }
    }

    fn cores(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.guests.iter().filter(|g| g.alive).map(|g| g.spec.core).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Live guests on `core`, most critical first (ties: given order).
    fn on_core(&self, core: u32) -> Vec<usize> {
        let mut v: Vec<usize> =
            (0..self.guests.len()).filter(|&i| self.guests[i].alive && self.guests[i].spec.core == core).collect();
        v.sort_by_key(|&i| (self.guests[i].spec.rank, i));
        v
    }
}

#[cfg(test)]
mod tests;
