//! The tests that decide whether a peaks-over-threshold model applies: goodness of fit
//! (Anderson-Darling), independence (extremal index) and stationarity (Mann-Kendall trend of
//! block maxima, exceedance rate of the two halves).

use crate::gpd;
use statrs::distribution::{ContinuousCDF, Normal};

/// Two-sided p-value of a standard normal statistic.
pub fn normal_p_value(z: f64) -> f64 {
    let n = Normal::standard();
    2.0 * (1.0 - n.cdf(z.abs()))
}

/// Anderson-Darling statistic `A^2` of sorted exceedances against a fitted GPD (Stephens 1974;
/// for the GPD with estimated parameters, Choulakian & Stephens 2001, Technometrics 43(4)).
pub fn anderson_darling(sorted: &[f64], sigma: f64, xi: f64) -> f64 {
    let k = sorted.len();
    let n = k as f64;
    let mut s = 0.0;
    for i in 0..k {
        let lo = gpd::cdf(sorted[i], sigma, xi).clamp(1e-300, 1.0 - 1e-16);
        let hi = gpd::cdf(sorted[k - 1 - i], sigma, xi).clamp(1e-300, 1.0 - 1e-16);
        s += (2 * i + 1) as f64 * (lo.ln() + (-hi).ln_1p());
    }
    -n - s / n
}

/// Upper 5% points of `A^2` for a GPD whose scale and shape were estimated by maximum
/// likelihood, by shape (the null distribution depends on the shape only). Simulated:
/// `cargo run --release -p rtvirt-tail --example ad_table` (10,000 samples of 1,000 per shape).
pub const AD_CRITICAL_05: &[(f64, f64)] = &[
    (-0.5, 1.243),
    (-0.4, 1.140),
    (-0.3, 1.105),
    (-0.2, 1.057),
    (-0.1, 0.997),
    (0.0, 0.940),
    (0.1, 0.952),
    (0.2, 0.890),
    (0.3, 0.887),
    (0.4, 0.846),
    (0.5, 0.826),
    (0.7, 0.799),
    (1.0, 0.767),
];

/// The 5% critical value of `A^2` at shape `xi`, interpolated in [`AD_CRITICAL_05`] (clamped
/// at its ends).
pub fn ad_critical(xi: f64) -> f64 {
    let t = AD_CRITICAL_05;
    if xi <= t[0].0 {
        return t[0].1;
    }
    for w in t.windows(2) {
        let ((x0, c0), (x1, c1)) = (w[0], w[1]);
        if xi <= x1 {
            return c0 + (c1 - c0) * (xi - x0) / (x1 - x0);
        }
    }
    t[t.len() - 1].1
}

/// Extremal index by the intervals estimator of Ferro & Segers (2003, JRSS B 65(2), eq. 4),
/// from the indices (in time order) of the exceedances; `None` with fewer than 3.
pub fn extremal_index_intervals(times: &[u64]) -> Option<f64> {
    if times.len() < 3 {
        return None;
    }
    let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let n1 = gaps.len() as f64;
    let max = gaps.iter().cloned().fold(0.0, f64::max);
    let theta = if max <= 2.0 {
        let s: f64 = gaps.iter().sum();
        let s2: f64 = gaps.iter().map(|t| t * t).sum();
        2.0 * s * s / (n1 * s2)
    } else {
        let s: f64 = gaps.iter().map(|t| t - 1.0).sum();
        let s2: f64 = gaps.iter().map(|t| (t - 1.0) * (t - 2.0)).sum();
        if s2 <= 0.0 {
            return Some(1.0);
        }
        2.0 * s * s / (n1 * s2)
    };
    Some(theta.min(1.0))
}

/// Extremal index by the blocks estimator (Smith & Weissman 1994, JRSS B 56(3)):
/// `ln(1 - K/B) / (b ln(1 - N/n))`, with `K` of `B` blocks of `b` samples holding an exceedance
/// and `N` exceedances among `n` samples; `None` when every block or none holds one.
pub fn extremal_index_blocks(blocks_exceeding: u64, blocks: u64, exceedances: u64, samples: u64) -> Option<f64> {
    if blocks_exceeding == 0 || blocks_exceeding >= blocks || exceedances == 0 || exceedances >= samples {
        return None;
    }
    let b = samples as f64 / blocks as f64;
    let num = (1.0 - blocks_exceeding as f64 / blocks as f64).ln();
    let den = b * (1.0 - exceedances as f64 / samples as f64).ln();
    Some((num / den).min(1.0))
}

/// Mann-Kendall trend test (Mann 1945, Kendall 1975) with the ties correction: `(S, z, p)`,
/// `z = (S - sign S) / sqrt(Var S)`, two-sided normal p-value.
pub fn mann_kendall(x: &[f64]) -> (f64, f64, f64) {
    let n = x.len();
    let mut s = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            s += (x[j] - x[i]).partial_cmp(&0.0).map_or(0, |o| o as i64);
        }
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j < n && sorted[j] == sorted[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j;
    }
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let s = s as f64;
    let z = if var <= 0.0 { 0.0 } else { (s - s.signum()) / var.sqrt() };
    (s, z, normal_p_value(z))
}

/// Exceedances in the first and second half: `z` of the first half's count against
/// Binomial(total, 1/2) and its two-sided p-value.
pub fn halves(first: u64, second: u64) -> (f64, f64) {
    let n = (first + second) as f64;
    if n == 0.0 {
        return (0.0, 1.0);
    }
    let z = (first as f64 - n / 2.0) / (n / 4.0).sqrt();
    (z, normal_p_value(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_kendall_matches_a_hand_computed_case() {
        // 1 2 3 5 4: S = 10 - 2 = 8, Var = 5*4*15/18 = 16.67, z = 7 / 4.08 = 1.715.
        let (s, z, p) = mann_kendall(&[1.0, 2.0, 3.0, 5.0, 4.0]);
        assert_eq!(s, 8.0);
        assert!((z - 7.0 / (50.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((p - 0.0863).abs() < 1e-3, "{p}");
    }

    #[test]
    fn extremal_index_of_pairs_is_a_half() {
        // Clusters of two exceedances starting at random (Bernoulli 1/1000): theta = 1/2.
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let starts: Vec<u64> = (0..2_000_000u64).step_by(2).filter(|_| rng.random::<f64>() < 0.002).collect();
        let times: Vec<u64> = starts.iter().flat_map(|&s| [s, s + 1]).collect();
        let theta = extremal_index_intervals(&times).unwrap();
        assert!((theta - 0.5).abs() < 0.05, "{theta}");
        // Independent exceedances: theta = 1.
        let single: Vec<u64> = (0..1_000_000u64).filter(|_| rng.random::<f64>() < 0.002).collect();
        assert!(extremal_index_intervals(&single).unwrap() > 0.95);
        // Blocks: 100 blocks of 1000 samples, 50 hold a pair: ln(1/2) / (1000 ln(1 - 100/1e5)).
        let blocks = extremal_index_blocks(50, 100, 100, 100_000).unwrap();
        assert!((blocks - 0.693).abs() < 0.01, "{blocks}");
    }

    #[test]
    fn anderson_darling_is_small_for_the_true_distribution() {
        let ys: Vec<f64> = (1..=1000).map(|i| gpd::quantile(i as f64 / 1001.0, 2.0, 0.2)).collect();
        assert!(anderson_darling(&ys, 2.0, 0.2) < 0.1);
        assert!(anderson_darling(&ys, 2.0, -0.3) > 5.0);
    }
}
