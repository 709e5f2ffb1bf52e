//! The Mann-Whitney U test (Mann & Whitney 1947): are two samples (here: the run medians of a
//! cell before and after a host configuration) from the same distribution? Two-sided p-value,
//! exact (the U distribution counted by dynamic programming) when both samples are small and
//! without ties, else the normal approximation with tie correction and continuity correction.
//!
//! Written by hand: the crates that offer it pull in a whole statistics library for some 60
//! lines, and the exact small-sample form (a study has 3 to 20 runs per cell) is what matters
//! here; the tests check it against published table values.

/// The test's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample (pairs where it is larger, ties counting half).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (else the normal approximation).
    pub exact: bool,
}

/// Samples up to this size each are tested exactly (when there are no ties).
const EXACT_UP_TO: usize = 30;

/// The test on samples `a` and `b`; None when one of them is empty or holds a NaN.
pub fn test(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| v.is_nan()) {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let u: f64 = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| {
                    if x > y {
                        1.0
                    } else if x == y {
                        0.5
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        })
        .sum();
    let ties = has_ties(a, b);
    if !ties && n1 <= EXACT_UP_TO && n2 <= EXACT_UP_TO {
        return Some(MannWhitney { u, p: exact_p(u as usize, n1, n2), exact: true });
    }
    Some(MannWhitney { u, p: normal_p(u, a, b), exact: false })
}

fn has_ties(a: &[f64], b: &[f64]) -> bool {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.windows(2).any(|w| w[0] == w[1])
}

/// Two-sided exact p: 2 x P(U <= min(u, n1 n2 - u)), at most 1. The number of arrangements with
/// each U is counted with the recurrence c(n1, n2, u) = c(n1 - 1, n2, u - n2) + c(n1, n2 - 1, u).
fn exact_p(u: usize, n1: usize, n2: usize) -> f64 {
    let max_u = n1 * n2;
    // counts[i][j] = distribution of U for sample sizes (i, j), as a vector over u.
    let mut counts: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n2 + 1]; n1 + 1];
    for i in 0..=n1 {
        for j in 0..=n2 {
            counts[i][j] = if i == 0 || j == 0 {
                vec![1.0]
            } else {
                let mut c = vec![0.0; i * j + 1];
                for (k, v) in counts[i - 1][j].iter().enumerate() {
                    c[k + j] += v;
                }
                for (k, v) in counts[i][j - 1].iter().enumerate() {
                    c[k] += v;
                }
                c
            };
        }
    }
    let dist = &counts[n1][n2];
    let total: f64 = dist.iter().sum();
    let lower = u.min(max_u - u);
    let tail: f64 = dist[..=lower].iter().sum();
    (2.0 * tail / total).min(1.0)
}

/// Two-sided p from the normal approximation, tie-corrected variance, continuity correction.
fn normal_p(u: f64, a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let n = n1 + n2;
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|&&v| v == all[i]).count();
        tie_term += (j as f64).powi(3) - j as f64;
        i += j;
    }
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    (2.0 * (1.0 - standard_normal_cdf(z))).min(1.0)
}

/// Φ(z) by the complementary error function (Numerical Recipes' erfc approximation, relative
/// error below 1.2e-7; Press et al. 2007).
fn standard_normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    1.0 - 0.5 * erfc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// Completely separated samples: U = 0 and p = 2 / C(n1 + n2, n1).
    #[test]
    fn separated_samples_have_the_smallest_exact_p() {
        let r = test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!((r.u, r.exact), (0.0, true));
        assert!(close(r.p, 2.0 / 20.0, 1e-12), "{r:?}");
        let r = test(&[10.0, 11.0, 12.0, 13.0, 14.0], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(r.u, 25.0);
        assert!(close(r.p, 2.0 / 252.0, 1e-12), "{r:?}");
    }

    /// Against brute force: enumerate every split of the ranks 1..=n into samples of n1 and n2.
    #[test]
    fn exact_p_matches_enumeration() {
        for (n1, n2) in [(2, 3), (3, 3), (4, 5), (5, 5), (3, 7)] {
            let n = n1 + n2;
            let mut us = Vec::new();
            for mask in 0u32..(1 << n) {
                if mask.count_ones() as usize != n1 {
                    continue;
                }
                let first: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
                let u: usize = first.iter().map(|&i| (0..n).filter(|j| mask & (1 << j) == 0 && *j < i).count()).sum();
                us.push(u);
            }
            for u in 0..=n1 * n2 {
                let lower = u.min(n1 * n2 - u);
                let brute = (2.0 * us.iter().filter(|&&x| x <= lower).count() as f64 / us.len() as f64).min(1.0);
                assert!(close(exact_p(u, n1, n2), brute, 1e-12), "n1 {n1} n2 {n2} u {u}");
            }
        }
    }

    /// Large samples with ties: the normal approximation. 0..40 against 20..60: U = 190 + 20 x 0.5
    /// = 200 of 1600; 20 ties of two, variance 40 x 40 / 12 x (81 - 120 / 6320) = 10797.5,
    /// z = (600 - 0.5) / 103.91 = 5.77, p = 7.9e-9.
    #[test]
    fn large_samples_use_the_normal_approximation() {
        let a: Vec<f64> = (0..40).map(f64::from).collect();
        let b: Vec<f64> = (20..60).map(f64::from).collect();
        let r = test(&a, &b).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 200.0, "{r:?}");
        assert!(r.p > 7.0e-9 && r.p < 9.0e-9, "{r:?}");
        assert!(close(standard_normal_cdf(1.959_964), 0.975, 1e-6));
        assert!(close(standard_normal_cdf(-1.0), 0.158_655_25, 1e-6));
    }

    #[test]
    fn identical_and_empty_samples() {
        let r = test(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((r.u, r.p), (4.5, 1.0));
        assert!(test(&[], &[1.0]).is_none());
        assert!(test(&[f64::NAN], &[1.0]).is_none());
    }
}
