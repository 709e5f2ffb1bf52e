//! The generalised Pareto distribution (GPD) of the exceedances `y = x - u` of a threshold `u`:
//! `F(y) = 1 - (1 + xi y / sigma)^(-1/xi)` (`1 - exp(-y / sigma)` at `xi = 0`), fitted by maximum
//! likelihood, and the profile-likelihood confidence interval of a return level (Coles 2001,
//! "An Introduction to Statistical Modeling of Extreme Values", sections 4.3 and 4.3.3).
//!
//! The fit is written here rather than taken from a crate: no maintained Rust crate fits a GPD
//! (statrs has no GPD; a general optimiser such as argmin would still need the
//! parametrisation below), and the fit reduces to a one-dimensional maximisation (Grimshaw 1993,
//! "Computing maximum likelihood estimates for the generalized Pareto distribution",
//! Technometrics 35(2)): with `theta = xi / sigma`, the likelihood equations give
//! `xi(theta) = mean(ln(1 + theta y))`, and the profile log-likelihood
//! `l*(theta) = -k (ln(xi(theta) / theta) + xi(theta) + 1)` is maximised over one variable.
//! The Python suite checks the fit against scipy.stats.genpareto (crates/python/tests/test_tail.py).

/// Exceedances of a threshold: distinct values `y > 0` with their counts (a histogram's buckets
/// or one per sample).
#[derive(Debug, Clone)]
pub struct Exceedances {
    pub y: Vec<f64>,
    pub w: Vec<f64>,
    /// Total count.
    pub k: f64,
    pub max: f64,
    pub mean: f64,
}

impl Exceedances {
    /// From `(y, count)` pairs with `y > 0` and count > 0.
    pub fn new(pairs: impl IntoIterator<Item = (f64, u64)>) -> Exceedances {
        let (mut y, mut w) = (Vec::new(), Vec::new());
        let (mut k, mut sum, mut max) = (0.0, 0.0, 0.0_f64);
        for (v, c) in pairs {
            let c = c as f64;
            y.push(v);
            w.push(c);
            k += c;
            sum += v * c;
            max = max.max(v);
        }
        let mean = if k > 0.0 { sum / k } else { 0.0 };
        Exceedances { y, w, k, max, mean }
    }
}

/// Below this |xi| the exponential limit is used.
const XI_ZERO: f64 = 1e-9;
/// Shapes below this are not considered: the likelihood is unbounded below -1 (Smith 1985).
pub const XI_MIN: f64 = -0.99;

/// GPD log-likelihood of the exceedances (`-inf` outside the support).
pub fn log_likelihood(ex: &Exceedances, sigma: f64, xi: f64) -> f64 {
    if sigma.is_nan() || sigma <= 0.0 || !xi.is_finite() {
        return f64::NEG_INFINITY;
    }
    if xi.abs() < XI_ZERO {
        let s: f64 = ex.y.iter().zip(&ex.w).map(|(y, w)| w * y).sum();
        return -ex.k * sigma.ln() - s / sigma;
    }
    let mut s = 0.0;
    for (y, w) in ex.y.iter().zip(&ex.w) {
        let t = xi * y / sigma;
        if t <= -1.0 {
            return f64::NEG_INFINITY;
        }
        s += w * t.ln_1p();
    }
    -ex.k * sigma.ln() - (1.0 + 1.0 / xi) * s
}

/// The GPD's distribution function.
pub fn cdf(y: f64, sigma: f64, xi: f64) -> f64 {
    if y <= 0.0 {
        return 0.0;
    }
    if xi.abs() < XI_ZERO {
        return -(-y / sigma).exp_m1();
    }
    let t = xi * y / sigma;
    if t <= -1.0 {
        return 1.0;
    }
    -((-1.0 / xi) * t.ln_1p()).exp_m1()
}

/// The GPD's quantile function.
pub fn quantile(p: f64, sigma: f64, xi: f64) -> f64 {
    if xi.abs() < XI_ZERO {
        return -sigma * (-p).ln_1p();
    }
    sigma / xi * ((-xi * (-p).ln_1p()).exp_m1())
}

/// A maximum-likelihood fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub sigma: f64,
    pub xi: f64,
    pub log_likelihood: f64,
}

/// `(xi, sigma)` at `theta = xi / sigma` from the likelihood equations (Grimshaw 1993).
fn at_theta(ex: &Exceedances, theta: f64) -> (f64, f64) {
    if (theta * ex.mean).abs() < 1e-12 {
        return (0.0, ex.mean);
    }
    let s: f64 = ex.y.iter().zip(&ex.w).map(|(y, w)| w * (theta * y).ln_1p()).sum();
    let xi = s / ex.k;
    (xi, xi / theta)
}

/// The profile log-likelihood `l*(theta)`, `-inf` where `xi(theta) < XI_MIN`.
fn profile_theta(ex: &Exceedances, theta: f64) -> f64 {
    if theta * ex.max <= -1.0 {
        return f64::NEG_INFINITY;
    }
    let (xi, sigma) = at_theta(ex, theta);
    if xi < XI_MIN || sigma.is_nan() || sigma <= 0.0 {
        return f64::NEG_INFINITY;
    }
    log_likelihood(ex, sigma, xi)
}

/// Maximum of `f` over `grid` refined by golden-section search between the best point's
/// neighbours; returns `(x, f(x))`.
pub(crate) fn maximise(grid: &[f64], f: impl Fn(f64) -> f64) -> Option<(f64, f64)> {
    let values: Vec<f64> = grid.iter().map(|&x| f(x)).collect();
    let (best, &fbest) = values.iter().enumerate().filter(|(_, v)| v.is_finite()).max_by(|a, b| a.1.total_cmp(b.1))?;
    let mut a = grid[best.saturating_sub(1)];
    let mut b = grid[(best + 1).min(grid.len() - 1)];
    let (mut x_best, mut f_best) = (grid[best], fbest);
    const PHI: f64 = 0.618_033_988_749_894_9;
    let mut c = b - PHI * (b - a);
    let mut d = a + PHI * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..60 {
        if (b - a).abs() <= 1e-10 * (1.0 + a.abs().max(b.abs())) {
            break;
        }
        if fc > fd {
            b = d;
            d = c;
            fd = fc;
            c = b - PHI * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + PHI * (b - a);
            fd = f(d);
        }
    }
    for (x, v) in [(c, fc), (d, fd)] {
        if v > f_best {
            (x_best, f_best) = (x, v);
        }
    }
    Some((x_best, f_best))
}

/// Maximum-likelihood fit of a GPD with shape at least [`XI_MIN`] (`None` without exceedances).
pub fn fit(ex: &Exceedances) -> Option<Fit> {
    if ex.k < 2.0 || ex.max.is_nan() || ex.max <= 0.0 {
        return None;
    }
    // theta * mean on a grid: towards the pole -1/max on the negative side, log-spaced on the
    // positive side (shapes up to about ln(1e4) + 1).
    let pole = -1.0 / ex.max;
    let mut grid: Vec<f64> = Vec::new();
    for e in (2..=60).rev() {
        grid.push(pole * (1.0 - 10f64.powf(-e as f64 / 10.0)));
    }
    for i in (1..50).rev() {
        grid.push(pole * i as f64 / 50.0);
    }
    grid.push(0.0);
    for e in -40..=40 {
        grid.push(10f64.powf(e as f64 / 10.0) / ex.mean);
    }
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    let (theta, _) = maximise(&grid, |t| profile_theta(ex, t))?;
    let (xi, sigma) = at_theta(ex, theta);
    let ll = log_likelihood(ex, sigma, xi);
    // The exponential (theta = 0) where it is as likely: the search may stop a hair beside it.
    let exp_ll = log_likelihood(ex, ex.mean, 0.0);
    if exp_ll >= ll {
        return Some(Fit { sigma: ex.mean, xi: 0.0, log_likelihood: exp_ll });
    }
    Some(Fit { sigma, xi, log_likelihood: ll })
}

/// The return level `u + sigma/xi ((m zeta)^xi - 1)` above the threshold, for `ln(m zeta) = lm`
/// (Coles 2001, eq. 4.13): the value exceeded once on average in `m` observations when a
/// fraction `zeta` exceeds `u`.
pub fn return_level(sigma: f64, xi: f64, lm: f64) -> f64 {
    if xi.abs() < XI_ZERO {
        sigma * lm
    } else {
        sigma / xi * (xi * lm).exp_m1()
    }
}

/// The scale that puts the return level `r` (above the threshold) at shape `xi`.
fn sigma_for_level(r: f64, xi: f64, lm: f64) -> f64 {
    if xi.abs() < XI_ZERO {
        r / lm
    } else {
        r * xi / (xi * lm).exp_m1()
    }
}

/// Profile log-likelihood of the return level `r` (above the threshold), maximised over shapes
/// in `xi_range`.
fn profile_level(ex: &Exceedances, r: f64, lm: f64, xi_range: (f64, f64)) -> f64 {
    let (lo, hi) = xi_range;
    let n = 48;
    let grid: Vec<f64> = (0..=n).map(|i| lo + (hi - lo) * i as f64 / n as f64).collect();
    maximise(&grid, |xi| log_likelihood(ex, sigma_for_level(r, xi, lm), xi)).map_or(f64::NEG_INFINITY, |(_, v)| v)
}

/// A return level above the threshold with its profile-likelihood interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelInterval {
    pub estimate: f64,
    pub low: f64,
    /// `None`: no upper end below 1000 times the estimate.
    pub high: Option<f64>,
}

/// The return level for `ln(m zeta) = lm` (> 0) and its profile-likelihood confidence interval:
/// the levels whose profile log-likelihood is within `chi2 / 2` of the maximum, `chi2` the
/// chi-squared(1) quantile of the confidence (Coles 2001, section 4.3.3).
pub fn level_interval(ex: &Exceedances, fit: &Fit, lm: f64, chi2: f64) -> LevelInterval {
    let estimate = return_level(fit.sigma, fit.xi, lm);
    let target = fit.log_likelihood - chi2 / 2.0;
    let xi_range = ((fit.xi - 1.5).max(XI_MIN), fit.xi + 1.5);
    let below = |r: f64| profile_level(ex, r, lm, xi_range) < target;
    // Bisection on a log scale between a level inside the interval and one outside.
    let solve = |mut inside: f64, mut outside: f64| {
        for _ in 0..50 {
            if (outside / inside - 1.0).abs() < 1e-6 {
                break;
            }
            let mid = (inside * outside).sqrt();
            if below(mid) {
                outside = mid;
            } else {
                inside = mid;
            }
        }
        (inside * outside).sqrt()
    };
    let mut low_out = estimate / 2.0;
    while !below(low_out) && low_out > estimate * 1e-9 {
        low_out /= 2.0;
    }
    let low = solve(estimate, low_out);
    let mut high_out = estimate * 2.0;
    while !below(high_out) && high_out < estimate * 1e3 {
        high_out *= 2.0;
    }
    let high = below(high_out).then(|| solve(estimate, high_out));
    LevelInterval { estimate, low, high }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_and_quantile_are_inverse() {
        for &(sigma, xi) in &[(2.0, 0.0), (2.0, 0.3), (1.0, -0.4), (5.0, 1.2)] {
            for &p in &[0.01, 0.5, 0.9, 0.999] {
                let y = quantile(p, sigma, xi);
                assert!((cdf(y, sigma, xi) - p).abs() < 1e-12, "{sigma} {xi} {p}");
            }
        }
    }

    #[test]
    fn fit_finds_the_likelihood_maximum_of_a_brute_force_grid() {
        // Oracle: the best point of a fine (sigma, xi) grid is no better than the fit.
        let ys = [0.3, 1.2, 0.05, 2.5, 0.7, 4.1, 0.9, 1.6, 0.2, 7.5, 0.4, 3.3];
        let ex = Exceedances::new(ys.iter().map(|&y| (y, 1)));
        let f = fit(&ex).unwrap();
        let mut best = f64::NEG_INFINITY;
        for i in 1..400 {
            for j in 0..300 {
                let (sigma, xi) = (i as f64 * 0.02, -0.9 + j as f64 * 0.01);
                best = best.max(log_likelihood(&ex, sigma, xi));
            }
        }
        assert!(f.log_likelihood >= best - 1e-9, "fit {f:?} below grid maximum {best}");
        assert!(f.log_likelihood - best < 1e-2, "grid maximum {best} far below fit {f:?}");
    }

    #[test]
    fn interval_contains_the_estimate_and_narrows_with_confidence() {
        let ys: Vec<(f64, u64)> = (1..=500).map(|i| (quantile(i as f64 / 501.0, 3.0, 0.1), 1)).collect();
        let ex = Exceedances::new(ys);
        let f = fit(&ex).unwrap();
        let lm = (1e5f64).ln();
        let wide = level_interval(&ex, &f, lm, 6.63);
        let narrow = level_interval(&ex, &f, lm, 3.84);
        assert!(wide.low < narrow.low && narrow.low < narrow.estimate);
        assert!(narrow.estimate < narrow.high.unwrap() && narrow.high.unwrap() < wide.high.unwrap());
    }
}
