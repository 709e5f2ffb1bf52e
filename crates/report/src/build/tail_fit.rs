//! The tail model of each charted latency result, as `rtvirt tail` fits it
//! (`rtvirt_tail::analyse`: peaks over a threshold, a generalised Pareto fit, the tests that
//! decide whether it applies). Where it applies: its fitted tail drawn on the family's exceedance
//! chart (`zeta (1 + xi (x - u) / sigma)^(-1/xi)` above the threshold `u`, Coles 2001 eq. 4.10)
//! and a return-level chart beside it - return period on a log axis, the level with its
//! profile-likelihood interval, the largest samples as points at their empirical return periods
//! (the run's length / rank). Where it does not: the reasons, in a note. Only results with a
//! lossless histogram are fitted (a tail fit needs every sample).

use crate::doc::Figure;
use crate::extract::LatencySeries;
use crate::interval::interval_maxima;
use crate::svg::line::{LineChart, Series};
use crate::svg::Style;
use crate::units::{fmt_ns, fmt_seconds};
use rtvirt_model::tail::TailReport;
use rtvirt_model::Nanos;
use rtvirt_tail::{analyse, gpd, samples, Options};

/// The longest return period charted: the horizon `rtvirt gate` is usually asked about.
const LONGEST: u64 = 12 * 3_600_000_000_000;
/// Largest samples drawn as points on the return-level chart.
const TOP_SAMPLES: usize = 200;

/// One result's tail model.
pub struct Fitted {
    pub name: String,
    pub report: TailReport,
    /// Its largest samples, descending (at most [`TOP_SAMPLES`]).
    pub top: Vec<u64>,
}

/// The tail model of `member` (None: no histogram or no length to scale return periods by).
pub fn fit(member: &LatencySeries) -> Option<Fitted> {
    let buckets = member.buckets.as_ref()?;
    let maxima = interval_maxima(&member.samples_of?.interval_points());
    let series = samples::from_results(&member.name, member.result, maxima).ok()?;
    if series.duration_ns == 0 {
        return None;
    }
    let options = Options { horizons: horizons(series.duration_ns), confidence: 0.95 };
    let report = analyse(&series, &options);
    Some(Fitted { name: member.name.clone(), report, top: largest(buckets, TOP_SAMPLES) })
}

/// Return periods from the run's length to [`LONGEST`], three per decade.
fn horizons(duration_ns: u64) -> Vec<Nanos> {
    let mut out = Vec::new();
    let mut h = duration_ns as f64;
    while h < LONGEST as f64 {
        out.push(Nanos(h as u64));
        h *= 10f64.powf(1.0 / 3.0);
    }
    out.push(Nanos(LONGEST));
    out
}

/// The `k` largest values of a `(value, count)` histogram, descending.
fn largest(buckets: &[(u64, u64)], k: usize) -> Vec<u64> {
    let mut sorted = buckets.to_vec();
    sorted.sort_unstable_by_key(|&(v, _)| std::cmp::Reverse(v));
    sorted.iter().flat_map(|&(v, c)| std::iter::repeat_n(v, c.min(k as u64) as usize)).take(k).collect()
}

/// The share of samples at or above `x` under the fitted tail (x at or above the threshold):
/// the share above the threshold times the GPD's survival ([`rtvirt_tail::gpd::cdf`]).
pub fn fitted_exceedance(zeta: f64, u: f64, sigma: f64, xi: f64, x: f64) -> f64 {
    zeta * (1.0 - gpd::cdf(x - u, sigma, xi))
}

/// The fitted tails that apply to samples (not to declustered maxima), as dashed curves for the
/// exceedance chart, from the threshold to the longest return level (or the largest sample).
pub fn exceedance_curves(fits: &[Fitted]) -> Vec<Series> {
    let mut out = Vec::new();
    for (i, f) in fits.iter().enumerate() {
        let r = &f.report;
        let Some(g) = r.fit.as_ref().filter(|_| r.applicable && r.declustering.is_none()) else { continue };
        let zeta = g.exceedances as f64 / r.samples.max(1) as f64;
        let u = g.threshold_ns as f64;
        let end = r.return_levels.iter().map(|l| l.estimate_ns).max().unwrap_or(r.max_ns).max(r.max_ns) as f64;
        let steps = 40;
        let points = (0..=steps)
            .map(|s| u * (end / u.max(1.0)).max(1.0).powf(s as f64 / steps as f64))
            .map(|x| (x.max(1.0), fitted_exceedance(zeta, u, g.scale_ns, g.shape, x)))
            .filter(|&(_, p)| p > 0.0)
            .collect();
        out.push(Series {
            name: format!("{}: fitted tail (GPD)", f.name),
            points,
            style: Some(Style { dashed: true, ..Style::nth(i) }),
            ..Series::default()
        });
    }
    out
}

/// The return-level chart of the fits that apply (None when none does).
pub fn return_level_figure(family: &str, fits: &[Fitted]) -> Option<Figure> {
    let mut series = Vec::new();
    for (i, f) in fits.iter().enumerate().filter(|(_, f)| f.report.applicable && !f.report.return_levels.is_empty()) {
        series.extend(fit_series(i, f));
    }
    if series.is_empty() {
        return None;
    }
    let chart = LineChart {
        kind: "return_level",
        title: format!("{family}: return levels"),
        x_label: "return period (log scale)".into(),
        y_label: "latency exceeded once per period (log)".into(),
        x_log: true,
        y_log: true,
        x_fmt: fmt_seconds,
        y_fmt: fmt_ns,
        y_range: None,
        series,
    };
    Some(Figure {
        kind: "return_level",
        title: chart.title.clone(),
        caption: "The latency exceeded once on average per return period, from the generalised Pareto tail fitted \
            above a threshold (rtvirt tail), with its 95% profile-likelihood interval (dashed; open above where \
            the data cannot bound it); points: the run's largest samples at their empirical return periods \
            (the run's length / rank). Drawn only where the tail model's tests pass."
            .into(),
        svg: chart.render(),
    })
}

/// One fit's lines: the estimate, the interval's ends, the largest samples.
fn fit_series(i: usize, f: &Fitted) -> Vec<Series> {
    let levels = &f.report.return_levels;
    let line = |name: String, points: Vec<(f64, f64)>, dashed: bool, markers: bool| Series {
        name,
        points,
        style: Some(Style { dashed, ..Style::nth(i) }),
        markers,
        ..Series::default()
    };
    let est = levels.iter().map(|l| (l.horizon_ns as f64, l.estimate_ns as f64)).collect();
    let low = levels.iter().map(|l| (l.horizon_ns as f64, l.ci_low_ns.max(1) as f64)).collect();
    let high = levels.iter().filter_map(|l| l.ci_high_ns.map(|h| (l.horizon_ns as f64, h as f64))).collect();
    let duration = f.report.duration_ns as f64;
    let samples =
        f.top.iter().enumerate().map(|(rank, &v)| (duration / (rank + 1) as f64, (v as f64).max(1.0))).rev().collect();
    vec![
        line(format!("{}: return level", f.name), est, false, false),
        line(format!("{}: 95% interval, low", f.name), low, true, false),
        line(format!("{}: 95% interval, high", f.name), high, true, false),
        line(format!("{}: largest samples", f.name), samples, false, true),
    ]
}

/// Why the tail model does not apply, per result where it does not.
pub fn notes(fits: &[Fitted]) -> Vec<String> {
    fits.iter()
        .filter(|f| !f.report.applicable)
        .map(|f| {
            format!("No return levels for {}: the tail model does not apply ({}).", f.name, f.report.reasons.join("; "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fitted_exceedance_is_the_gpd_survival_scaled_by_zeta() {
        // exponential tail (xi = 0): zeta e^{-(x-u)/sigma}
        let p = fitted_exceedance(0.01, 100.0, 50.0, 0.0, 150.0);
        assert!((p - 0.01 * (-1.0f64).exp()).abs() < 1e-15);
        // heavy: zeta (1 + xi y)^(-1/xi), brute force against the definition at xi = 0.5
        let p = fitted_exceedance(0.02, 0.0, 10.0, 0.5, 30.0);
        assert!((p - 0.02 * (1.0f64 + 0.5 * 3.0).powf(-2.0)).abs() < 1e-15);
        // bounded tail: nothing above u - sigma/xi
        assert_eq!(fitted_exceedance(0.1, 0.0, 10.0, -0.5, 25.0), 0.0);
        assert!((fitted_exceedance(0.1, 0.0, 10.0, 0.0, 0.0) - 0.1).abs() < 1e-15);
    }

    #[test]
    fn largest_unrolls_counts_from_the_top() {
        assert_eq!(largest(&[(5, 2), (9, 1), (7, 3)], 4), vec![9, 7, 7, 7]);
        assert_eq!(largest(&[(5, 2)], 10), vec![5, 5]);
    }

    #[test]
    fn horizons_run_from_the_runs_length_to_twelve_hours() {
        let h = horizons(10_000_000_000);
        assert_eq!(h[0], Nanos(10_000_000_000));
        assert_eq!(*h.last().unwrap(), Nanos(LONGEST));
        assert!(h.windows(2).all(|w| w[0] < w[1]));
    }
}
