//! Declustering: when exceedances come in bursts (a late wake-up followed by late ones), the
//! samples above a threshold are not independent, but the bursts' maxima can be. Intervals
//! declustering (Ferro & Segers 2003, JRSS B 65(2), section 5): with `N` exceedances and the
//! extremal index `theta` from the intervals estimator, the run holds `C = floor(theta N) + 1`
//! clusters, and the `C - 1` longest gaps between exceedances separate them (a runs
//! declustering, Smith & Weissman 1994, whose run length the data choose). The cluster maxima
//! above the threshold are fitted with a GPD, and a horizon's return level is the level a
//! cluster maximum exceeds once on average over it: `k` in the return level's `m zeta` is the
//! number of clusters (Coles 2001, section 5.3.2).
//!
//! The series is the samples in time order, or the per-interval maxima of a histogram run (each
//! interval then counts as one sample of the series). Written here: no maintained Rust crate
//! declusters, and it is a sort of the gaps.

use crate::checks;
use crate::gpd::{self, Exceedances};
use crate::threshold;

/// The clusters of the exceedances of `u` in `series` (time order).
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// Per cluster, the index of its largest value and the value, in time order.
    pub maxima: Vec<(u64, u64)>,
    /// The extremal index that set their number.
    pub theta: f64,
    /// Gaps longer than this (in samples of the series) separate clusters.
    pub run_length: u64,
}

/// Intervals declustering of the exceedances of `u` (Ferro & Segers 2003, section 5); `None`
/// with fewer than 3 exceedances.
pub fn clusters(series: &[u64], u: u64) -> Option<Clusters> {
    let times: Vec<u64> = series.iter().enumerate().filter(|&(_, &x)| x > u).map(|(i, _)| i as u64).collect();
    let theta = checks::extremal_index_intervals(&times)?;
    let c = (theta * times.len() as f64).floor() as usize + 1;
    let (maxima, run_length) = split(series, &times, c);
    Some(Clusters { maxima, theta, run_length })
}

/// The exceedances at `times` split into `c` clusters at the `c - 1` longest gaps (the earlier
/// of equal gaps first): each cluster's maximum `(index, value)`, and the longest gap inside a
/// cluster.
pub fn split(series: &[u64], times: &[u64], c: usize) -> (Vec<(u64, u64)>, u64) {
    let n = times.len();
    let c = c.clamp(1, n.max(1));
    let gap = |g: usize| times[g + 1] - times[g];
    let mut order: Vec<usize> = (0..n.saturating_sub(1)).collect();
    order.sort_by(|&a, &b| gap(b).cmp(&gap(a)).then(a.cmp(&b)));
    let mut splits = vec![false; n.saturating_sub(1)];
    order.iter().take(c - 1).for_each(|&g| splits[g] = true);
    let run_length = order.get(c - 1).map_or(0, |&g| gap(g));
    let mut maxima: Vec<(u64, u64)> = Vec::with_capacity(c);
    for (i, &t) in times.iter().enumerate() {
        let x = series[t as usize];
        match maxima.last_mut() {
            Some(m) if i > 0 && !splits[i - 1] => {
                if x > m.1 {
                    *m = (t, x);
                }
            }
            _ => maxima.push((t, x)),
        }
    }
    (maxima, run_length)
}

/// The cluster maxima's exceedances of `u`, for the fit.
pub fn exceedances(clusters: &Clusters, u: u64) -> Exceedances {
    let mut ys: Vec<u64> = clusters.maxima.iter().map(|&(_, x)| x - u).collect();
    ys.sort_unstable();
    let mut pairs: Vec<(f64, u64)> = Vec::new();
    for y in ys {
        match pairs.last_mut() {
            Some((v, c)) if *v == y as f64 => *c += 1,
            _ => pairs.push((y as f64, 1)),
        }
    }
    Exceedances::new(pairs)
}

/// A fit to the cluster maxima of one threshold, and its Anderson-Darling statistic.
#[derive(Debug, Clone)]
pub struct ClusterFit {
    pub threshold: u64,
    pub clusters: Clusters,
    pub exceedances: Exceedances,
    pub fit: gpd::Fit,
    pub ad: f64,
    pub critical: f64,
}

/// The threshold rule of the crate doc applied to cluster maxima: the candidates (fractions of
/// the series above them) in order, skipping those with fewer than `min` clusters or more than
/// `max`; the first whose fit passes Anderson-Darling at 5% is last.
pub fn choose(series: &[u64], sorted: &[(u64, u64)], min: u64, max: u64) -> Vec<ClusterFit> {
    let n = series.len() as u64;
    let mut tried: Vec<ClusterFit> = Vec::new();
    for &fraction in &threshold::THRESHOLD_FRACTIONS {
        let (u, _) = threshold::level_leaving(sorted, (fraction * n as f64).ceil() as u64);
        if tried.last().is_some_and(|c| c.threshold == u) {
            continue;
        }
        let Some(cl) = clusters(series, u) else { continue };
        if !(min..=max).contains(&(cl.maxima.len() as u64)) {
            continue;
        }
        let ex = exceedances(&cl, u);
        let Some(fit) = gpd::fit(&ex) else { continue };
        let mut ys: Vec<f64> = cl.maxima.iter().map(|&(_, x)| (x - u) as f64).collect();
        ys.sort_by(f64::total_cmp);
        let ad = checks::anderson_darling(&ys, fit.sigma, fit.xi);
        let critical = checks::ad_critical(fit.xi);
        tried.push(ClusterFit { threshold: u, clusters: cl, exceedances: ex, fit, ad, critical });
        if ad <= critical {
            break;
        }
    }
    tried
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// Background below 100, bursts of 1-5 values from 1000 up starting with probability 1/2000
    /// (at least 10 apart): the series and each burst's maximum `(index, value)`.
    fn bursts(seed: u64) -> (Vec<u64>, Vec<(u64, u64)>) {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let mut s: Vec<u64> = (0..400_000).map(|_| rng.random_range(0..100)).collect();
        let mut truth = Vec::new();
        let mut i = 10;
        while i + 20 < s.len() {
            if rng.random::<f64>() < 1.0 / 2000.0 {
                let len = rng.random_range(1..6usize);
                let mut best = (0, 0);
                for (j, x) in s.iter_mut().enumerate().skip(i).take(len) {
                    *x = 1000 + rng.random_range(0..1000);
                    if *x > best.1 {
                        best = (j as u64, *x);
                    }
                }
                truth.push(best);
                i += len + 10;
            } else {
                i += 1;
            }
        }
        (s, truth)
    }

    /// Oracle: at the true number of bursts, the split finds each burst and its maximum.
    #[test]
    fn split_at_the_true_count_finds_each_burst_and_its_maximum() {
        let (s, truth) = bursts(11);
        let times: Vec<u64> = (0..s.len() as u64).filter(|&i| s[i as usize] > 999).collect();
        let (maxima, run_length) = split(&s, &times, truth.len());
        assert_eq!(maxima, truth);
        assert_eq!(run_length, 1, "gaps inside a burst are 1");
        // One cluster: the overall maximum; as many as exceedances: each its own.
        let (one, _) = split(&s, &times, 1);
        assert_eq!(one[0].1, *s.iter().max().unwrap());
        assert_eq!(split(&s, &times, times.len()).0.len(), times.len());
    }

    /// The extremal index sets the count: bursts of mean length 3 give theta near 1/3 and about
    /// as many clusters as bursts.
    #[test]
    fn the_estimated_count_is_near_the_number_of_bursts() {
        let (s, truth) = bursts(12);
        let c = clusters(&s, 999).unwrap();
        assert!((0.25..0.45).contains(&c.theta), "theta {}", c.theta);
        let (got, want) = (c.maxima.len() as f64, truth.len() as f64);
        assert!((got / want - 1.0).abs() < 0.15, "{got} clusters for {want} bursts");
    }
}
