//! Coverage of the return level's confidence interval by simulation (issue 38): RUNS synthetic
//! runs of 600,000 samples (10 minutes at 1 kHz) of a light tail (10 us + exponential, mean
//! 2 us) and a heavy one (10 us + generalised Pareto, scale 1 us, shape 0.2); for each, how
//! often the 95% interval of the 12 h return level contains the true value, how often the model
//! was refused, and the estimate's median error.
//! `cargo run --release -p rtvirt-tail --example coverage [RUNS]` (docs/PERFORMANCE.md).

use rand::{RngExt, SeedableRng};
use rtvirt_model::Nanos;
use rtvirt_tail::{analyse, gpd, Data, Options, Series};

fn main() {
    let runs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let n = 600_000;
    let horizon = 12 * 3_600_000_000_000u64;
    let options = Options { horizons: vec![Nanos(horizon)], confidence: 0.95 };
    for (name, sigma, xi) in [("light (exponential)", 2000.0, 0.0), ("heavy (GPD shape 0.2)", 1000.0, 0.2)] {
        let truth = 10_000.0 + gpd::quantile(1.0 - 1e6 / horizon as f64, sigma, xi);
        let (mut covered, mut refused, mut errors) = (0, 0, Vec::new());
        let start = std::time::Instant::now();
        for seed in 0..runs {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(90_000 + seed);
            let values: Vec<u64> =
                (0..n).map(|_| (10_000.0 + gpd::quantile(rng.random::<f64>(), sigma, xi)).round() as u64).collect();
            let series = Series { source: name.into(), duration_ns: 600_000_000_000, data: Data::Ordered(values) };
            let report = analyse(&series, &options);
            let Some(level) = report.return_levels.first() else {
                refused += 1;
                continue;
            };
            if level.ci_low_ns as f64 <= truth && level.ci_high_ns.is_none_or(|h| truth <= h as f64) {
                covered += 1;
            }
            errors.push(level.estimate_ns as f64 / truth - 1.0);
        }
        errors.sort_by(f64::total_cmp);
        let fitted = errors.len();
        println!(
            "{name}: truth {:.1} us; {covered}/{fitted} intervals contain it ({:.1}%), {refused} of {runs} refused; \
             estimate error median {:+.1}%, 5%..95% {:+.1}%..{:+.1}%; {:.2} s per run",
            truth / 1000.0,
            100.0 * covered as f64 / fitted.max(1) as f64,
            100.0 * errors.get(fitted / 2).copied().unwrap_or(f64::NAN),
            100.0 * errors.get(fitted / 20).copied().unwrap_or(f64::NAN),
            100.0 * errors.get(fitted * 19 / 20).copied().unwrap_or(f64::NAN),
            start.elapsed().as_secs_f64() / runs as f64
        );
    }
}
