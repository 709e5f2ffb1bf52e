//! Measuring until the gate decides (`measure ... --until-confident --max X --horizon H`): the
//! run's samples arrive interval by interval; [`Sequential`] keeps their histogram and the
//! intervals' maxima (the time order the tests need) and checks the gate ([`crate::gate`]) at
//! elapsed times growing by [`GROWTH`] from [`FIRST_CHECK_INTERVALS`] intervals, and at the cap.
//!
//! Looking at the data many times and stopping at the first decision would make a wrong
//! decision likelier than one look at the nominal confidence: the checks are planned in
//! advance (their number `J` known from the cap), and each is made at confidence
//! `1 - (1 - c) / J` (Bonferroni), so the chance that any of them decides wrongly stays at most
//! `1 - c`. A sample above the limit decides at once (no statistics).

use crate::{gate, Data, Series};
use rtvirt_model::stats::LatencyHistogram;
use rtvirt_model::tail::{GateReport, Verdict};
use rtvirt_model::Nanos;

/// Elapsed time between two checks grows by this factor (a decision comes at most this much
/// later than the data would have allowed).
pub const GROWTH: f64 = 1.5;
/// The first check: after this many intervals (the independence and stationarity tests need
/// ten interval maxima).
pub const FIRST_CHECK_INTERVALS: u64 = 10;

/// Why the measurement stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The horizon's return level is below the limit (its upper confidence limit is).
    DecidedBelow,
    /// Above the limit: its lower confidence limit is, or a sample already is.
    DecidedAbove,
    /// The cap (`--duration`) was reached without a decision.
    CapReached,
}

impl Stop {
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::DecidedBelow => "decided below the limit",
            Stop::DecidedAbove => "decided above the limit",
            Stop::CapReached => "cap reached without a decision",
        }
    }
}

/// One check of the gate.
#[derive(Debug, Clone)]
pub struct Check {
    /// Time since the start of the run.
    pub t_ns: u64,
    pub gate: GateReport,
    /// `Some` when the run stops here.
    pub stop: Option<Stop>,
}

/// The state of a measurement that runs until the gate decides.
#[derive(Debug)]
pub struct Sequential {
    limit: Nanos,
    horizon: Nanos,
    cap_ns: u64,
    per_check: f64,
    planned: u32,
    next_check_ns: u64,
    histogram: LatencyHistogram,
    maxima: Vec<u64>,
    checks: u32,
}

/// Checks made before the cap, at `first * GROWTH^k < cap`, plus the one at the cap.
pub fn planned_checks(first_ns: u64, cap_ns: u64) -> u32 {
    let mut t = first_ns as f64;
    let mut n = 1;
    while t < cap_ns as f64 {
        n += 1;
        t *= GROWTH;
    }
    n
}

impl Sequential {
    /// A run capped at `cap`, reporting every `interval`; `confidence` for all checks together.
    pub fn new(limit: Nanos, horizon: Nanos, confidence: f64, cap: Nanos, interval: Nanos) -> Sequential {
        let first = interval.0.saturating_mul(FIRST_CHECK_INTERVALS);
        let planned = planned_checks(first, cap.0);
        Sequential {
            limit,
            horizon,
            cap_ns: cap.0,
            per_check: 1.0 - (1.0 - confidence) / planned as f64,
            planned,
            next_check_ns: first,
            histogram: LatencyHistogram::new(),
            maxima: Vec::new(),
            checks: 0,
        }
    }

    /// Confidence of each check (Bonferroni over the planned checks).
    pub fn per_check_confidence(&self) -> f64 {
        self.per_check
    }

    pub fn planned_checks(&self) -> u32 {
        self.planned
    }

    pub fn checks_made(&self) -> u32 {
        self.checks
    }

    /// The samples of the interval ending `t_ns` after the start; a check when one is due (a
    /// sample above the limit, the next planned time, or the cap).
    pub fn add(&mut self, t_ns: u64, samples: &LatencyHistogram) -> Option<Check> {
        self.histogram.merge(samples);
        self.maxima.push(samples.max().unwrap_or(0));
        let above = samples.max().is_some_and(|m| m > self.limit.0);
        let at_cap = t_ns >= self.cap_ns;
        if !(above || at_cap || t_ns >= self.next_check_ns) {
            return None;
        }
        while self.next_check_ns <= t_ns {
            self.next_check_ns = ((self.next_check_ns as f64 * GROWTH).ceil() as u64).max(self.next_check_ns + 1);
        }
        self.checks += 1;
        let gate = gate(&self.series(t_ns), self.limit, self.horizon, self.per_check);
        let stop = match gate.verdict {
            Verdict::Pass => Some(Stop::DecidedBelow),
            Verdict::Fail => Some(Stop::DecidedAbove),
            Verdict::Inconclusive if at_cap => Some(Stop::CapReached),
            Verdict::Inconclusive => None,
        };
        Some(Check { t_ns, gate, stop })
    }

    /// The samples so far as a series (histogram and interval maxima).
    pub fn series(&self, t_ns: u64) -> Series {
        Series {
            source: "this run so far: latency_ns".into(),
            duration_ns: t_ns,
            data: Data::Histogram { buckets: self.histogram.buckets(), blocks: self.maxima.clone() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    const SECOND: u64 = 1_000_000_000;

    /// One second at 1 kHz of 10 us + exponential (mean 2 us): the light tail of the known-tails
    /// tests, its true 12 h level 45.2 us.
    fn second(rng: &mut rand_pcg::Pcg64) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for _ in 0..1000 {
            h.record((10_000.0 + crate::gpd::quantile(rng.random::<f64>(), 2000.0, 0.0)).round() as u64);
        }
        h
    }

    /// Feed seconds until a check stops the run (or the cap); the last check.
    fn run(limit_us: u64, cap_s: u64, seed: u64) -> Check {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let mut s = Sequential::new(
            Nanos::from_us(limit_us),
            Nanos::from_secs(12 * 3600),
            0.95,
            Nanos::from_secs(cap_s),
            Nanos::from_secs(1),
        );
        let mut last = None;
        for t in 1..=cap_s {
            if let Some(c) = s.add(t * SECOND, &second(&mut rng)) {
                if c.stop.is_some() {
                    return c;
                }
                last = Some(c);
            }
        }
        panic!("no stop by the cap; last check {last:?}")
    }

    #[test]
    fn checks_are_planned_geometrically_and_share_the_error() {
        // 10, 15, 22.5, 33.75, 50.6 (< 60) and the cap: 6 checks.
        assert_eq!(planned_checks(10, 60), 6);
        let s = Sequential::new(Nanos(1), Nanos(1), 0.95, Nanos::from_secs(60), Nanos::from_secs(1));
        assert_eq!(s.planned_checks(), 6);
        assert!((s.per_check_confidence() - (1.0 - 0.05 / 6.0)).abs() < 1e-12);
    }

    #[test]
    fn stops_below_a_limit_far_above_the_true_level_and_above_one_far_below() {
        let below = run(100, 600, 1);
        assert_eq!(below.stop, Some(Stop::DecidedBelow), "{}", below.gate.reason);
        assert!(below.t_ns < 600 * SECOND);
        let above = run(30, 600, 2);
        assert_eq!(above.stop, Some(Stop::DecidedAbove), "{}", above.gate.reason);
    }

    #[test]
    fn a_sample_above_the_limit_stops_at_once() {
        let c = run(15, 600, 3);
        assert_eq!((c.stop, c.t_ns), (Some(Stop::DecidedAbove), SECOND), "{}", c.gate.reason);
        assert!(c.gate.reason.contains("already"), "{}", c.gate.reason);
    }

    #[test]
    fn a_limit_at_the_true_level_runs_to_the_cap() {
        let c = run(45, 60, 4);
        assert_eq!((c.stop, c.t_ns), (Some(Stop::CapReached), 60 * SECOND), "{}", c.gate.reason);
    }
}
