//! rtvirt-tail: how large a latency may become over a horizon, and whether the data can say.
//!
//! Peaks over a threshold (Coles 2001, chapter 4): the samples above a threshold `u` are fitted
//! with a generalised Pareto distribution by maximum likelihood ([`gpd`]); the return level of
//! a horizon, the value exceeded once on average in the `m` samples the horizon holds at the
//! run's sample rate, is `u + sigma/xi ((m zeta)^xi - 1)` with `zeta` the fraction of samples
//! above `u`, and its confidence interval is the profile-likelihood one (Coles 2001, 4.3.3).
//!
//! **Threshold rule** ([`choose_threshold`]): candidates leave the top 10%, 5%, 2%, 1%, 0.5%,
//! 0.2% and 0.1% of the samples above them, skipping those with more than
//! [`MAX_EXCEEDANCES`] exceedances (cost, not precision, grows beyond) or fewer than
//! [`MIN_EXCEEDANCES`]; the lowest candidate whose fit passes the Anderson-Darling test at 5%
//! (critical values for estimated parameters by shape, [`checks::AD_CRITICAL_05`]) is taken: the
//! lowest threshold where the GPD describes the exceedances, so the most data for the fit
//! (the sequential goodness-of-fit idea of Choulakian & Stephens 2001 and Bader, Yan & Zhang
//! 2018).
//!
//! **Applicability** ([`analyse`]): the report is `applicable` only when all of these pass
//! (and is refused with the reason when one fails or cannot be run):
//! - goodness of fit: a threshold passes the rule above;
//! - independence: extremal index at least [`THETA_MIN`] (clustered exceedances make the
//!   fit's interval too narrow); intervals estimator of Ferro & Segers (2003) on samples in
//!   time order, blocks estimator (Smith & Weissman 1994) on per-interval maxima;
//! - stationarity: no Mann-Kendall trend in the maxima of consecutive blocks, and the same rate
//!   of high exceedances in both halves of the run (two-sided, each at [`ALPHA_STATIONARITY`]).
//!
//! **Declustering** ([`decluster`]): when independence is the only assumption that fails (the
//! exceedances come in bursts; stationarity passed), the bursts' maxima are fitted instead: the
//! samples in time order (or the per-interval maxima of a histogram run) are declustered by
//! the intervals method of Ferro & Segers (2003), the same threshold rule picks a threshold for
//! the cluster maxima, and the report applies when their fit passes Anderson-Darling and the
//! cluster maxima are independent (extremal index at least [`THETA_MIN`]); the return level is
//! then that of a cluster maximum, at the rate clusters occur (`declustering` in the report).
//!
//! A histogram without per-interval maxima has no time order: independence and stationarity
//! cannot be tested, and the report says so (`applicable: false`). The extremal index is used as
//! a test only: the return level assumes independent exceedances (theta = 1), which for theta
//! below 1 errs high, on the safe side of a promised maximum.

pub mod checks;
pub mod decluster;
pub mod gpd;
pub mod samples;
pub mod sequential;
pub mod threshold;

use rtvirt_model::tail::{
    Declustering, GateReport, GpdFit, ReturnLevel, TailReport, TailTest, Verdict, GATE_SCHEMA, TAIL_SCHEMA,
};
use rtvirt_model::Nanos;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use threshold::{level_leaving, THRESHOLD_FRACTIONS};

/// Fewest exceedances a fit is tried with.
pub const MIN_EXCEEDANCES: u64 = 100;
/// Most exceedances a candidate threshold may leave.
pub const MAX_EXCEEDANCES: u64 = 20_000;
/// Smallest extremal index taken as independent exceedances.
pub const THETA_MIN: f64 = 0.8;
/// Significance level of each stationarity test.
pub const ALPHA_STATIONARITY: f64 = 0.01;
/// Exceedances of the high level at which the halves' rates are compared (time-ordered input).
pub const HIGH_EXCEEDANCES: u64 = 100;
/// Blocks of the Mann-Kendall test on time-ordered samples: as many as give blocks of at least
/// 1000 samples, at most 100.
pub const MAX_BLOCKS: usize = 100;

/// The samples of one series, and the wall time they cover.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// What it is, e.g. `run.json: latency_ns`.
    pub source: String,
    pub duration_ns: u64,
    pub data: Data,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// Every sample, in time order.
    Ordered(Vec<u64>),
    /// A lossless histogram `(value, count)` (no time order) and, when the run reported per
    /// interval, the maxima of its consecutive equal intervals in time order.
    Histogram { buckets: Vec<(u64, u64)>, blocks: Vec<u64> },
}

/// What to compute.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub horizons: Vec<Nanos>,
    /// Of the return levels' intervals (two-sided), in (0, 1).
    pub confidence: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { horizons: vec![Nanos(3_600_000_000_000), Nanos(12 * 3_600_000_000_000)], confidence: 0.95 }
    }
}

/// The samples as `(value, count)` ascending.
fn sorted_counts(data: &Data) -> Vec<(u64, u64)> {
    match data {
        Data::Ordered(v) => {
            let mut s = v.clone();
            s.sort_unstable();
            let mut out: Vec<(u64, u64)> = Vec::new();
            for x in s {
                match out.last_mut() {
                    Some((v, c)) if *v == x => *c += 1,
                    _ => out.push((x, 1)),
                }
            }
            out
        }
        Data::Histogram { buckets, .. } => {
            let mut b: Vec<(u64, u64)> = buckets.iter().copied().filter(|&(_, c)| c > 0).collect();
            b.sort_unstable();
            b
        }
    }
}

fn exceedances_of(sorted: &[(u64, u64)], u: u64) -> gpd::Exceedances {
    gpd::Exceedances::new(sorted.iter().filter(|&&(v, _)| v > u).map(|&(v, c)| ((v - u) as f64, c)))
}

/// A fitted threshold: the fit, its Anderson-Darling statistic and critical value.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub fraction: f64,
    pub threshold: u64,
    pub exceedances: gpd::Exceedances,
    pub fit: gpd::Fit,
    pub ad: f64,
    pub critical: f64,
}

impl Candidate {
    pub fn passes(&self) -> bool {
        self.ad <= self.critical
    }
}

/// The threshold rule of the crate doc: the candidates tried, in order, the last of them the
/// chosen one when it passes.
pub fn choose_threshold(sorted: &[(u64, u64)]) -> Vec<Candidate> {
    let n: u64 = sorted.iter().map(|&(_, c)| c).sum();
    let mut tried = Vec::new();
    for &fraction in &THRESHOLD_FRACTIONS {
        let nominal = (fraction * n as f64).ceil() as u64;
        if !(MIN_EXCEEDANCES..=MAX_EXCEEDANCES).contains(&nominal) {
            continue;
        }
        let (u, k) = level_leaving(sorted, nominal);
        if k < MIN_EXCEEDANCES || tried.last().is_some_and(|c: &Candidate| c.threshold == u) {
            continue;
        }
        let ex = exceedances_of(sorted, u);
        let Some(fit) = gpd::fit(&ex) else { continue };
        let mut ys: Vec<f64> = Vec::with_capacity(ex.k as usize);
        for (y, w) in ex.y.iter().zip(&ex.w) {
            ys.extend(std::iter::repeat_n(*y, *w as usize));
        }
        ys.sort_by(f64::total_cmp);
        let ad = checks::anderson_darling(&ys, fit.sigma, fit.xi);
        let critical = checks::ad_critical(fit.xi);
        let passes = ad <= critical;
        tried.push(Candidate { fraction, threshold: u, exceedances: ex, fit, ad, critical });
        if passes {
            break;
        }
    }
    tried
}

fn test(
    name: &str,
    method: &str,
    statistic: Option<f64>,
    critical: Option<f64>,
    p: Option<f64>,
    passed: Option<bool>,
    detail: String,
) -> TailTest {
    TailTest { name: name.into(), method: method.into(), statistic, critical, p_value: p, passed, detail }
}

/// The independence and stationarity tests of the crate doc, at the fit's threshold `u`.
fn time_tests(series: &Series, sorted: &[(u64, u64)], u: u64) -> Vec<TailTest> {
    let n: u64 = sorted.iter().map(|&(_, c)| c).sum();
    let mut tests = Vec::new();
    const FS: &str = "extremal index, intervals estimator (Ferro & Segers 2003)";
    const SW: &str = "extremal index, blocks estimator (Smith & Weissman 1994)";
    const MK: &str = "Mann-Kendall trend of block maxima (two-sided)";
    const HALVES: &str = "exceedance rate of the high level, first half against second (binomial, two-sided)";
    match &series.data {
        Data::Ordered(v) => {
            let times: Vec<u64> = v.iter().enumerate().filter(|&(_, &x)| x > u).map(|(i, _)| i as u64).collect();
            let theta = checks::extremal_index_intervals(&times);
            tests.push(test(
                "independence",
                FS,
                theta,
                Some(THETA_MIN),
                None,
                theta.map(|t| t >= THETA_MIN),
                match theta {
                    Some(t) => format!("theta = {t:.3} over {} exceedances of {}", times.len(), Nanos(u)),
                    None => "fewer than 3 exceedances".into(),
                },
            ));
            let blocks = (v.len() / 1000).min(MAX_BLOCKS);
            if blocks >= 10 {
                let size = v.len() / blocks;
                let maxima: Vec<f64> = (0..blocks)
                    .map(|b| v[b * size..(b + 1) * size].iter().copied().max().unwrap_or(0) as f64)
                    .collect();
                tests.push(trend_test(MK, &maxima, size as u64));
            } else {
                tests.push(test("stationarity_trend", MK, None, None, None, None, "fewer than 10,000 samples".into()));
            }
            let (high, _) = level_leaving(sorted, HIGH_EXCEEDANCES);
            let half = v.len() / 2;
            let first = v[..half].iter().filter(|&&x| x > high).count() as u64;
            let second = v[half..].iter().filter(|&&x| x > high).count() as u64;
            tests.push(halves_test(HALVES, first, second, &format!("exceedances of {}", Nanos(high))));
        }
        Data::Histogram { blocks, .. } if blocks.len() >= 10 => {
            // The level that about half the blocks' worth of samples exceed, at least the threshold.
            let (high, exceed) = level_leaving(sorted, (blocks.len() as u64 / 2).max(1));
            let (high, exceed) = if high < u {
                (u, sorted.iter().filter(|&&(v, _)| v > u).map(|&(_, c)| c).sum())
            } else {
                (high, exceed)
            };
            let flags: Vec<bool> = blocks.iter().map(|&b| b > high).collect();
            let k = flags.iter().filter(|&&f| f).count() as u64;
            let theta = checks::extremal_index_blocks(k, blocks.len() as u64, exceed, n);
            tests.push(test(
                "independence",
                SW,
                theta,
                Some(THETA_MIN),
                None,
                theta.map(|t| t >= THETA_MIN),
                match theta {
                    Some(t) => format!(
                        "theta = {t:.3}: {k} of {} intervals hold the {exceed} samples above {}",
                        blocks.len(),
                        Nanos(high)
                    ),
                    None => format!("{k} of {} intervals exceed {}: cannot estimate", blocks.len(), Nanos(high)),
                },
            ));
            let maxima: Vec<f64> = blocks.iter().map(|&b| b as f64).collect();
            let size = n / blocks.len() as u64;
            tests.push(trend_test(MK, &maxima, size));
            let half = blocks.len() / 2;
            let first = flags[..half].iter().filter(|&&f| f).count() as u64;
            let second = flags[half..half * 2].iter().filter(|&&f| f).count() as u64;
            tests.push(halves_test(HALVES, first, second, &format!("intervals exceeding {}", Nanos(high))));
        }
        Data::Histogram { blocks, .. } => {
            let why = if blocks.is_empty() {
                "a histogram has no time order (record per-interval maxima: measure ... --interval-report 1s)"
                    .to_string()
            } else {
                format!("{} interval maxima: fewer than 10", blocks.len())
            };
            tests.push(test("independence", SW, None, None, None, None, why.clone()));
            tests.push(test("stationarity_trend", MK, None, None, None, None, why.clone()));
            tests.push(test("stationarity_rate", HALVES, None, None, None, None, why));
        }
    }
    tests
}

fn trend_test(method: &str, maxima: &[f64], size: u64) -> TailTest {
    let (_, z, p) = checks::mann_kendall(maxima);
    test(
        "stationarity_trend",
        method,
        Some(z),
        Some(ALPHA_STATIONARITY),
        Some(p),
        Some(p >= ALPHA_STATIONARITY),
        format!("{} blocks of {size} samples, z = {z:.2}, p = {p:.3}", maxima.len()),
    )
}

fn halves_test(method: &str, first: u64, second: u64, what: &str) -> TailTest {
    let (z, p) = checks::halves(first, second);
    test(
        "stationarity_rate",
        method,
        Some(z),
        Some(ALPHA_STATIONARITY),
        Some(p),
        Some(p >= ALPHA_STATIONARITY),
        format!("{what}: {first} in the first half, {second} in the second, p = {p:.3}"),
    )
}

fn input_name(data: &Data) -> &'static str {
    match data {
        Data::Ordered(_) => "ordered",
        Data::Histogram { blocks, .. } if !blocks.is_empty() => "histogram+blocks",
        Data::Histogram { .. } => "histogram",
    }
}

/// The tail of `series`: fit, tests, and per horizon the return level with its interval.
pub fn analyse(series: &Series, options: &Options) -> TailReport {
    let sorted = sorted_counts(&series.data);
    let n: u64 = sorted.iter().map(|&(_, c)| c).sum();
    let mut report = TailReport {
        schema: TAIL_SCHEMA.into(),
        source: series.source.clone(),
        input: input_name(&series.data).into(),
        samples: n,
        duration_ns: series.duration_ns,
        max_ns: sorted.last().map_or(0, |&(v, _)| v),
        applicable: false,
        reasons: Vec::new(),
        fit: None,
        declustering: None,
        tests: Vec::new(),
        return_levels: Vec::new(),
    };
    if series.duration_ns == 0 {
        report.reasons.push("the samples cover no time (duration 0): no sample rate to scale a horizon by".into());
    }
    let tried = choose_threshold(&sorted);
    let Some(chosen) = tried.last() else {
        report.reasons.push(format!(
            "{n} samples: a fit needs {MIN_EXCEEDANCES} exceedances of a threshold at the top {}%, i.e. {} samples",
            THRESHOLD_FRACTIONS[0] * 100.0,
            (MIN_EXCEEDANCES as f64 / THRESHOLD_FRACTIONS[0]) as u64
        ));
        return report;
    };
    let f = chosen.fit;
    report.fit = Some(GpdFit {
        threshold_ns: chosen.threshold,
        threshold_rule: format!(
            "lowest of the top 10%..0.1% thresholds (at most {MAX_EXCEEDANCES} exceedances) whose GPD fit passes Anderson-Darling at 5%; tried {}",
            tried.iter().map(|c| format!("{}%", c.fraction * 100.0)).collect::<Vec<_>>().join(", ")
        ),
        exceedances: chosen.exceedances.k as u64,
        scale_ns: f.sigma,
        shape: f.xi,
        log_likelihood: f.log_likelihood,
        upper_bound_ns: (f.xi < 0.0).then(|| chosen.threshold as f64 - f.sigma / f.xi),
    });
    let passes = chosen.passes();
    report.tests.push(test(
        "goodness_of_fit",
        "Anderson-Darling A^2 of the exceedances against the fitted GPD, 5% critical value for estimated parameters",
        Some(chosen.ad),
        Some(chosen.critical),
        None,
        Some(passes),
        format!(
            "A^2 = {:.3} (critical {:.3}) at threshold {} with {} exceedances",
            chosen.ad,
            chosen.critical,
            Nanos(chosen.threshold),
            chosen.exceedances.k
        ),
    ));
    if !passes {
        report.reasons.push(format!(
            "no threshold gives a generalised Pareto tail that fits: at the highest tried ({}, {} exceedances) A^2 = {:.2} > {:.2}",
            Nanos(chosen.threshold),
            chosen.exceedances.k,
            chosen.ad,
            chosen.critical
        ));
    }
    report.tests.extend(time_tests(series, &sorted, chosen.threshold));
    for t in &report.tests[1..] {
        match t.passed {
            Some(true) => {}
            Some(false) => report.reasons.push(match t.name.as_str() {
                "independence" => format!("exceedances cluster ({}): they are not independent", t.detail),
                "stationarity_trend" => format!("the block maxima trend ({})", t.detail),
                _ => format!("the rate of high samples changes over the run ({})", t.detail),
            }),
            None => report.reasons.push(format!("{} not tested: {}", t.name, t.detail)),
        }
    }
    if clustered_only(&report.tests) {
        try_declustered(series, options, &mut report);
    }
    report.applicable = report.reasons.is_empty();
    if !report.applicable {
        return report;
    }
    if report.declustering.is_none() {
        report.return_levels = return_levels(&chosen.exceedances, &f, chosen.threshold, series, options);
    }
    if report.return_levels.is_empty() && !options.horizons.is_empty() {
        let h = options.horizons.iter().min().map_or(0, |h| h.0);
        report.reasons.push(format!(
            "horizon {}: shorter than the time the threshold is exceeded once on average; read the samples instead",
            span(h)
        ));
        report.applicable = false;
    }
    report
}

/// Whether the samples' tests failed for clustering only (and perhaps the fit, which
/// clustering can spoil): stationarity was tested and passed.
fn clustered_only(tests: &[TailTest]) -> bool {
    let failed = |name: &str| tests.iter().any(|t| t.name == name && t.passed == Some(false));
    failed("independence")
        && tests.iter().all(|t| t.passed == Some(true) || matches!(t.name.as_str(), "independence" | "goodness_of_fit"))
}

/// Return levels of every horizon of `options` from a fit to `ex` above `u` (the fit's
/// exceedances, or clusters, per `series.duration_ns`); empty when a horizon is shorter than
/// the time the threshold is exceeded once on average.
fn return_levels(ex: &gpd::Exceedances, f: &gpd::Fit, u: u64, series: &Series, options: &Options) -> Vec<ReturnLevel> {
    let chi2 = ChiSquared::new(1.0).expect("1 degree of freedom").inverse_cdf(options.confidence);
    let mut levels = Vec::new();
    for h in &options.horizons {
        let m_zeta = ex.k * h.0 as f64 / series.duration_ns as f64;
        if m_zeta <= 1.0 {
            return Vec::new();
        }
        let li = gpd::level_interval(ex, f, m_zeta.ln(), chi2);
        let u = u as f64;
        levels.push(ReturnLevel {
            horizon_ns: h.0,
            estimate_ns: (u + li.estimate).round() as u64,
            ci_low_ns: (u + li.low).round() as u64,
            ci_high_ns: li.high.map(|x| (u + x).round() as u64),
            confidence: options.confidence,
            method: "profile likelihood (Coles 2001, 4.3.3)".into(),
        });
    }
    levels
}

/// The series declustering works on: the samples in time order, or the interval maxima.
fn cluster_series(data: &Data) -> Option<(&[u64], &'static str)> {
    match data {
        Data::Ordered(v) => Some((v, "samples")),
        Data::Histogram { blocks, .. } if blocks.len() >= 10 => Some((blocks, "interval maxima")),
        Data::Histogram { .. } => None,
    }
}

/// Fit the cluster maxima instead ([`decluster`]); on success the report's fit, declustering,
/// tests, reasons (cleared) and return levels are the clusters'; otherwise why not is a reason.
fn try_declustered(series: &Series, options: &Options, report: &mut TailReport) {
    const DC: &str = "intervals declustering (Ferro & Segers 2003), cluster maxima";
    let Some((values, what)) = cluster_series(&series.data) else { return };
    let sorted = sorted_counts(&Data::Ordered(values.to_vec()));
    let tried = decluster::choose(values, &sorted, MIN_EXCEEDANCES, MAX_EXCEEDANCES);
    let Some(c) = tried.last() else {
        report.reasons.push(format!(
            "declustered, the {what} give fewer than {MIN_EXCEEDANCES} clusters at every candidate threshold: \
             measure longer (or with a shorter --interval-report)"
        ));
        return;
    };
    let gof = c.ad <= c.critical;
    report.tests.push(test(
        "cluster_goodness_of_fit",
        "Anderson-Darling A^2 of the cluster maxima's exceedances against the fitted GPD, 5% critical value",
        Some(c.ad),
        Some(c.critical),
        None,
        Some(gof),
        format!(
            "A^2 = {:.3} (critical {:.3}) at {} with {} clusters",
            c.ad,
            c.critical,
            Nanos(c.threshold),
            c.clusters.maxima.len()
        ),
    ));
    let times: Vec<u64> = c.clusters.maxima.iter().map(|&(t, _)| t).collect();
    let theta = checks::extremal_index_intervals(&times);
    let independent = theta.map(|t| t >= THETA_MIN);
    report.tests.push(test(
        "cluster_independence",
        "extremal index of the cluster maxima, intervals estimator (Ferro & Segers 2003)",
        theta,
        Some(THETA_MIN),
        None,
        independent,
        format!("theta = {:.3} over {} cluster maxima", theta.unwrap_or(f64::NAN), times.len()),
    ));
    if !gof || independent != Some(true) {
        report.reasons.push(format!(
            "declustered ({} clusters of the {what} above {}), the model does not apply either: {}",
            c.clusters.maxima.len(),
            Nanos(c.threshold),
            if gof { "the cluster maxima cluster" } else { "no threshold gives cluster maxima a GPD fits" }
        ));
        return;
    }
    report.reasons.clear();
    report.declustering = Some(Declustering {
        series: what.into(),
        method: DC.into(),
        extremal_index: c.clusters.theta,
        run_length: c.clusters.run_length,
        clusters: c.clusters.maxima.len() as u64,
    });
    report.fit = Some(GpdFit {
        threshold_ns: c.threshold,
        threshold_rule: format!(
            "lowest of the top 10%..0.1% thresholds of the {what} whose cluster maxima's GPD fit passes Anderson-Darling at 5%"
        ),
        exceedances: c.clusters.maxima.len() as u64,
        scale_ns: c.fit.sigma,
        shape: c.fit.xi,
        log_likelihood: c.fit.log_likelihood,
        upper_bound_ns: (c.fit.xi < 0.0).then(|| c.threshold as f64 - c.fit.sigma / c.fit.xi),
    });
    report.return_levels = return_levels(&c.exceedances, &c.fit, c.threshold, series, options);
}

/// A duration in whole hours or minutes where it is one ("12h", "10min"), else as [`Nanos`]
/// shows it.
pub fn span(ns: u64) -> String {
    const MIN: u64 = 60_000_000_000;
    match ns {
        0 => Nanos(0).to_string(),
        n if n.is_multiple_of(60 * MIN) => format!("{}h", n / (60 * MIN)),
        n if n.is_multiple_of(MIN) => format!("{}min", n / MIN),
        n => Nanos(n).to_string(),
    }
}

/// `rtvirt gate`: `limit` against the return level of `horizon`.
pub fn gate(series: &Series, limit: Nanos, horizon: Nanos, confidence: f64) -> GateReport {
    let tail = analyse(series, &Options { horizons: vec![horizon], confidence });
    let horizon_text = span(horizon.0);
    let mut g = GateReport {
        schema: GATE_SCHEMA.into(),
        verdict: Verdict::Inconclusive,
        max_ns: limit.0,
        horizon_ns: horizon.0,
        confidence,
        reason: String::new(),
        needed_duration_ns: None,
        tail,
    };
    let scale =
        |factor: f64| (factor.is_finite() && factor > 0.0).then(|| (g.tail.duration_ns as f64 * factor).ceil() as u64);
    if g.tail.max_ns > limit.0 {
        g.verdict = Verdict::Fail;
        g.reason = format!("a sample already is above the limit: max {} > {limit}", Nanos(g.tail.max_ns));
        return g;
    }
    let Some(level) = g.tail.return_levels.first().cloned() else {
        g.reason = format!("the model does not apply: {}", g.tail.reasons.join("; "));
        if g.tail.fit.is_none() && g.tail.samples > 0 {
            // Too few samples only: as many as a fit needs.
            let need = MIN_EXCEEDANCES as f64 / THRESHOLD_FRACTIONS[0];
            g.needed_duration_ns = scale(need / g.tail.samples as f64);
        }
        return g;
    };
    let (lim, est) = (limit.0 as f64, level.estimate_ns as f64);
    let pct = (confidence * 100.0).round();
    if level.ci_high_ns.is_some_and(|h| h < limit.0) {
        g.verdict = Verdict::Pass;
        g.reason = format!(
            "the {horizon_text} return level is {} with {pct}% interval [{}, {}]: below {limit}",
            Nanos(level.estimate_ns),
            Nanos(level.ci_low_ns),
            Nanos(level.ci_high_ns.unwrap_or(0))
        );
    } else if level.ci_low_ns > limit.0 {
        g.verdict = Verdict::Fail;
        g.reason = format!(
            "the {horizon_text} return level is {} with {pct}% interval from {}: above {limit}",
            Nanos(level.estimate_ns),
            Nanos(level.ci_low_ns)
        );
    } else {
        let interval = match level.ci_high_ns {
            Some(h) => format!("[{}, {}]", Nanos(level.ci_low_ns), Nanos(h)),
            None => format!("[{}, unbounded]", Nanos(level.ci_low_ns)),
        };
        g.reason = format!(
            "the {horizon_text} return level is {} with {pct}% interval {interval}, which contains {limit}",
            Nanos(level.estimate_ns)
        );
        // The interval narrows as 1/sqrt(length); the estimate is taken to stay.
        let spread =
            if est < lim { level.ci_high_ns.map(|h| h as f64 - est) } else { Some(est - level.ci_low_ns as f64) };
        let gap = (lim - est).abs();
        if let Some(spread) = spread.filter(|_| gap > 0.0) {
            g.needed_duration_ns = scale((spread / gap).powi(2));
        }
    }
    g
}
