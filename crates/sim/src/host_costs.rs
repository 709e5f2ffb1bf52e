//! A host model (`rtvirt.hostmodel/v1`, `rtvirt simulate --host-model`) as the simulator charges
//! it. Every figure replaces the scenario's corresponding setting; without a host model nothing
//! changes (the same scenario and seed give the same bytes as before host models existed).
//!
//! - **Per server period** (replenishment timer, two switches; the vCPU's working set reloaded
//!   after its blackout): every time a SCHED_DEADLINE reservation starts a new period
//!   (replenishment, or a wake-up that sets a new deadline) `cache_reload_ns` is owed by the
//!   reservation's own thread (its runtime pays, before the guest progresses), and
//!   `server_overhead_ns` is charged as [`OverheadCharge`] says: by default
//!   ([`OverheadCharge::Preempted`]) to the thread running on the server's core at that instant
//!   (an idle core absorbs it) - the kernel runs the timer interrupt and the switch in the
//!   current thread's time, and `rtvirt host calibrate` measures the overhead as exactly the time
//!   charged to neither the reservation nor other threads; with [`OverheadCharge::Reservation`]
//!   the reservation's own runtime pays it, as `rtvirt plan --host-model` accounts it (the
//!   overhead-aware interface of Phan et al. 2013 inflates each server's own budget). Paid by
//!   the preempted thread, each period's overhead is a draw from the model's `server_overhead`
//!   measurement (`{p50, p99, max}`, the same piecewise distribution as the release latency)
//!   when the model carries it and its p99 is the model's `server_overhead_ns` (a figure set by
//!   hand is charged as that constant); the planner's view charges the p99 every period.
//! - **Release latency**: a job whose release has to wake its idle vCPU reaches its guest's
//!   scheduler late by a draw from the model's measured `{p50, p99, max}` (the host's wake-up
//!   latency, what `rtvirt host calibrate` measures; a release that finds its vCPU running is
//!   taken in at once, as the running guest sees its own timer; the job's deadline still counts
//!   from its nominal release). The draw: below the p99 the piecewise-linear CDF through
//!   `(0, 0)`, `(p50, 0.5)`, `(p99, 0.99)` (`LatencySummary::quantile`); above it
//!   [`tail_quantile`]: an exponential tail from the p99 to the max at the max's own plotting
//!   position `1 - 1/(n + 1)` among the calibration's `n` samples (Gumbel 1958), the max beyond.
//!   A uniform top 1% between p99 and max put a fifth of a 22 ms spike into one job in 100 and
//!   predicted p99 response times 3-4x the measured ones. One random stream per task
//!   (deterministic by seed);
//!   [`LatencyDraw::Worst`] makes every draw `max` (plan-consistency checks).
//! - **Enforcement** as docs/sim-deadline-consistency.md found it: `tick` - runtime depletion is
//!   noticed at the next scheduler tick, the tick being `overrun_max_ns` long (4 ms: HZ = 250),
//!   or earlier when the reservation leaves the CPU (it blocks, or a reservation with an earlier
//!   deadline preempts it: the kernel's `update_curr_dl` runs at `put_prev_task` and at the
//!   tick; a wake-up that does not preempt it does not stop the overrun, `host::policy::PState::
//!   depletion_unnoticed`); `hrtick` - noticed `overrun_max_ns` late, every time (its worst
//!   case). Overruns are paid back from the following periods (`replenish_dl_entity`), as
//!   without a host model.
//! - [`HostCosts::worst_case`] is the planner's view: every release latency at the maximum and
//!   every server's overhead out of its own runtime (plan-consistency checks).
//! - **Cache reload per preemption**: a guest job preempted by another task's job (after it ran)
//!   needs `cache_reload_ns` more execution when it resumes.
//! - **Context switch**: a guest task switch costs `context_switch_ns` (replaces `[guest.vcpu]
//!   context_switch`).

use rtvirt_model::hostmodel::{EnforcementKind, HostModel, LatencySummary};

/// How release latencies are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatencyDraw {
    /// From the model's piecewise distribution (the default).
    #[default]
    Distribution,
    /// Always the model's maximum (the worst case the planner assumes).
    Worst,
}

/// Who pays a server period's overhead (`server_overhead_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverheadCharge {
    /// The thread running on the server's core when the period starts (the kernel's accounting).
    #[default]
    Preempted,
    /// The reservation's own runtime (the planner's accounting).
    Reservation,
}

/// The costs a host model charges in the simulator (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCosts {
    /// A server period's replenishment overhead (timer interrupt, switches): the planner's
    /// figure, the measured p99.
    pub server_overhead: u64,
    /// Its measured distribution, drawn from per period when the preempted thread pays it
    /// (None: `server_overhead` every period).
    pub server_overhead_spread: Option<LatencySummary>,
    /// Who pays `server_overhead`.
    pub overhead_charge: OverheadCharge,
    /// Extra execution of a preempted guest job when it resumes, and owed by a reservation at
    /// each new period (its vCPU's working set reloaded).
    pub cache_reload: u64,
    /// One guest task switch.
    pub context_switch: u64,
    pub release_latency: LatencySummary,
    pub latency_draw: LatencyDraw,
    /// How many samples the release latency's summary came from (its max sits at quantile
    /// `1 - 1/(n + 1)`); None: the summary's own quantiles up to 1 (the max at 1).
    pub latency_samples: Option<u64>,
    /// Enforcement: exact timer (true) or at the tick.
    pub hrtick: bool,
    /// hrtick: how late depletion is noticed; tick: the tick's length (0: exact enforcement).
    pub overrun: u64,
}

impl HostCosts {
    /// The costs of a host model, release latencies drawn from its distribution.
    pub fn of(model: &HostModel) -> HostCosts {
        let overrun = model.enforcement.overrun_max_ns;
        HostCosts {
            server_overhead: model.server_overhead_ns,
            server_overhead_spread: measured_spread(model, "server_overhead", model.server_overhead_ns),
            overhead_charge: OverheadCharge::Preempted,
            cache_reload: model.cache_reload_ns,
            context_switch: model.context_switch_ns,
            release_latency: model.release_latency_ns,
            latency_draw: LatencyDraw::Distribution,
            latency_samples: release_samples(model),
            hrtick: model.enforcement.kind == EnforcementKind::Hrtick || overrun == 0,
            overrun,
        }
    }

    /// The planner's view of the same costs: every release latency at the model's maximum, every
    /// server's overhead out of its own runtime.
    pub fn worst_case(self) -> HostCosts {
        HostCosts { latency_draw: LatencyDraw::Worst, overhead_charge: OverheadCharge::Reservation, ..self }
    }

    /// What a reservation's own thread owes at each new period.
    pub fn owed_by_reservation(&self) -> u64 {
        match self.overhead_charge {
            OverheadCharge::Preempted => self.cache_reload,
            OverheadCharge::Reservation => self.server_overhead.saturating_add(self.cache_reload),
        }
    }

    /// What the thread running on a server's core owes when the server's new period starts
    /// (its largest value: the p99 when it is drawn).
    pub fn owed_by_preempted(&self) -> u64 {
        match self.overhead_charge {
            OverheadCharge::Preempted => self.server_overhead,
            OverheadCharge::Reservation => 0,
        }
    }

    /// The distribution the preempted thread's charge is drawn from, if it is drawn (the
    /// default view, not the planner's).
    pub fn preempted_spread(&self) -> Option<LatencySummary> {
        let drawn = self.latency_draw == LatencyDraw::Distribution && self.overhead_charge == OverheadCharge::Preempted;
        self.server_overhead_spread.filter(|_| drawn)
    }

    /// A server period's overhead for a uniform draw `u` in [0, 1) from
    /// [`HostCosts::preempted_spread`] (the constant charge without one).
    pub fn overhead(&self, u: f64) -> u64 {
        match self.preempted_spread() {
            Some(spread) => spread.quantile(u),
            None => self.owed_by_preempted(),
        }
    }

    /// What a run charged, in words (the results' `simulation.host_costs`).
    pub fn describe(&self) -> String {
        let r = self.release_latency;
        let latency = match self.latency_draw {
            LatencyDraw::Distribution => {
                format!("release latency drawn piecewise uniform from p50 {} / p99 {} / max {} ns", r.p50, r.p99, r.max)
            }
            LatencyDraw::Worst => format!("release latency always the max {} ns", r.max),
        };
        let enforcement = match (self.hrtick, self.overrun) {
            (true, 0) => "exact enforcement".to_string(),
            (true, late) => format!("enforcement {late} ns late (hrtick)"),
            (false, tick) => format!("enforcement at a {tick} ns tick"),
        };
        let payer = match self.overhead_charge {
            OverheadCharge::Preempted => "by the thread it preempts",
            OverheadCharge::Reservation => "by the reservation",
        };
        let per_period = match self.preempted_spread() {
            Some(s) => format!("drawn piecewise uniform from p50 {} / p99 {} / max {} ns", s.p50, s.p99, s.max),
            None => format!("{} ns", self.server_overhead),
        };
        format!(
            "per server period {per_period} paid {payer} and a {} ns cache reload by the reservation; {latency}; \
             {enforcement}, overruns paid back; cache reload {} ns per preempted job; task switch {} ns",
            self.cache_reload, self.cache_reload, self.context_switch
        )
    }

    /// Release latency for a uniform draw `u` in [0, 1) (see the module doc).
    pub fn latency(&self, u: f64) -> u64 {
        match self.latency_draw {
            LatencyDraw::Worst => self.release_latency.max,
            LatencyDraw::Distribution => tail_quantile(&self.release_latency, self.latency_samples, u),
        }
    }
}

/// The samples behind the model's release latency: its per-CPU measurements, pooled as the
/// summary is (`rtvirt host calibrate`).
fn release_samples(model: &HostModel) -> Option<u64> {
    let n: u64 = model.measurements.iter().filter(|m| m.name.starts_with("release_latency cpu")).map(|m| m.count).sum();
    (n > 0).then_some(n)
}

/// Quantile `q` of a latency known by its p50, p99 and the max of `n` samples: the summary's
/// piecewise-linear quantile up to the p99; above it an exponential tail - the latency linear
/// in the log of the exceedance probability, the Gumbel domain of attraction - through the p99
/// at 0.99 and the max at its plotting position `1 - 1/(n + 1)` (Gumbel 1958); the max beyond.
/// Without `n` (or with n <= 100, no room above the p99) the summary's quantile.
pub fn tail_quantile(s: &LatencySummary, n: Option<u64>, q: f64) -> u64 {
    let Some(n) = n.filter(|&n| n > 100) else { return s.quantile(q) };
    if q.is_nan() || q <= 0.99 {
        return s.quantile(q);
    }
    let at_max = 1.0 / (n as f64 + 1.0);
    if 1.0 - q <= at_max {
        return s.max;
    }
    let fraction = (0.01 / (1.0 - q)).ln() / (0.01 / at_max).ln();
    s.p99 + (s.max.saturating_sub(s.p99) as f64 * fraction).round() as u64
}

/// The `{p50, p99, max}` of the model's measurement `name` when its p99 is `figure` (the model's
/// own top-level value, not set by hand to something else) and its quantiles are ordered.
fn measured_spread(model: &HostModel, name: &str, figure: u64) -> Option<LatencySummary> {
    let m = model.measurements.iter().find(|m| m.name == name)?;
    let ordered = m.count > 0 && m.p50_ns <= m.p99_ns && m.p99_ns <= m.max_ns;
    (ordered && m.p99_ns == figure).then_some(LatencySummary { p50: m.p50_ns, p99: m.p99_ns, max: m.max_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_piecewise_distribution_has_the_model_quantiles() {
        let model = HostModel::uncalibrated();
        let costs = HostCosts::of(&model);
        assert_eq!(costs.owed_by_reservation(), model.cache_reload_ns);
        assert_eq!(costs.owed_by_preempted(), model.server_overhead_ns);
        assert_eq!(costs.worst_case().owed_by_reservation(), model.server_overhead_ns + model.cache_reload_ns);
        assert_eq!(costs.worst_case().owed_by_preempted(), 0);
        assert!(!costs.hrtick);
        assert_eq!(costs.overrun, 4_000_000);
        assert_eq!(costs.latency(0.0), 0);
        assert_eq!(costs.latency(0.25), 5_000);
        assert_eq!(costs.latency(0.5), 10_000);
        assert_eq!(costs.latency(0.99), 60_000);
        assert_eq!(costs.latency(0.995), 130_000);
        assert!(costs.latency(0.999_999_9) <= 200_000);
        // sampled: the empirical quantiles are the model's
        let mut rng = crate::engine::rng::SimRng::new(1, 2);
        let mut draws: Vec<u64> = (0..200_000).map(|_| costs.latency(rng.unit())).collect();
        draws.sort_unstable();
        let at = |q: f64| draws[(q * draws.len() as f64) as usize];
        assert!((9_800..=10_200).contains(&at(0.5)), "{}", at(0.5));
        assert!((59_000..=61_000).contains(&at(0.99)), "{}", at(0.99));
        assert!(*draws.last().unwrap() <= 200_000);
        assert_eq!(costs.worst_case().latency(0.1), 200_000);
    }

    #[test]
    fn the_per_period_overhead_is_drawn_from_its_measurement_unless_set_by_hand_or_planned() {
        let text = |figure: u64| {
            format!(
                r#"{{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":{figure},"measurements":[{{"name":
                "server_overhead","method":"gaps","count":300,"p50_ns":40000,"p99_ns":82000,"max_ns":294000}}]}}"#
            )
        };
        let costs = HostCosts::of(&HostModel::from_json(&text(82_000)).unwrap());
        assert_eq!(costs.preempted_spread(), Some(LatencySummary { p50: 40_000, p99: 82_000, max: 294_000 }));
        assert_eq!((costs.overhead(0.25), costs.overhead(0.5), costs.overhead(0.99)), (20_000, 40_000, 82_000));
        let mut rng = crate::engine::rng::SimRng::new(3, 4);
        let mean = (0..100_000).map(|_| costs.overhead(rng.unit())).sum::<u64>() / 100_000;
        // 0.5 x 20 + 0.49 x 61 + 0.01 x 188 = 41.8 us: about half the p99 charged before
        assert!((40_500..=43_000).contains(&mean), "{mean}");
        assert!(costs.describe().contains("per server period drawn piecewise uniform from p50 40000"));
        // the planner's view charges the p99, to the reservation
        assert_eq!(costs.worst_case().preempted_spread(), None);
        assert_eq!(costs.worst_case().owed_by_reservation(), 82_000 + costs.cache_reload);
        // a figure set by hand (not the measurement's p99) is charged as that constant
        let by_hand = HostCosts::of(&HostModel::from_json(&text(50_000)).unwrap());
        assert_eq!((by_hand.preempted_spread(), by_hand.overhead(0.9)), (None, 50_000));
        assert_eq!(HostCosts::of(&HostModel::uncalibrated()).preempted_spread(), None);
    }

    #[test]
    fn zero_overrun_is_exact_enforcement() {
        let model = HostModel::from_json(
            r#"{"schema":"rtvirt.hostmodel/v1","enforcement":{"kind":"tick","overrun_max_ns":0}}"#,
        )
        .unwrap();
        let costs = HostCosts::of(&model);
        assert!(costs.hrtick && costs.overrun == 0);
    }
}

#[cfg(test)]
mod tail_tests {
    use super::*;
    use crate::engine::rng::SimRng;

    /// Exponential samples (100 us mean above a 20 us floor): the tail through the sample's p99
    /// and max lands within 25% of the true quantiles (an exponential tail is what it assumes),
    /// and below the uniform top 1% it replaced up to the p99.9.
    #[test]
    fn the_tail_through_p99_and_max_follows_an_exponential_samples_true_quantiles() {
        let n = 5000;
        let mut rng = SimRng::new(7, 1);
        let mut v: Vec<u64> = (0..n).map(|_| 20_000 + (-(1.0 - rng.unit()).ln() * 100_000.0) as u64).collect();
        v.sort_unstable();
        let s = LatencySummary { p50: v[n / 2], p99: v[n * 99 / 100], max: v[n - 1] };
        let truth = |q: f64| 20_000.0 + -(1.0 - q).ln() * 100_000.0;
        for q in [0.995, 0.999, 0.9995] {
            let got = tail_quantile(&s, Some(n as u64), q) as f64;
            assert!((got / truth(q) - 1.0).abs() < 0.25, "q {q}: {got} vs {}", truth(q));
        }
        assert_eq!(tail_quantile(&s, Some(n as u64), 0.99), s.p99);
        assert_eq!(tail_quantile(&s, Some(n as u64), 0.5), s.p50);
        assert_eq!(tail_quantile(&s, Some(n as u64), 1.0 - 1.0 / 5001.0), s.max);
        assert_eq!(tail_quantile(&s, Some(n as u64), 1.0), s.max);
        assert_eq!(tail_quantile(&s, None, 0.995), s.quantile(0.995));
        // monotone
        let qs: Vec<u64> = (0..=1000).map(|i| tail_quantile(&s, Some(n as u64), 0.99 + i as f64 * 1e-5)).collect();
        assert!(qs.windows(2).all(|w| w[0] <= w[1]));
        for q in [0.995, 0.999] {
            assert!(tail_quantile(&s, Some(n as u64), q) < s.quantile(q), "q {q}");
        }
    }
}
