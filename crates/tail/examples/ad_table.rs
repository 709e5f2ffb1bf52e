//! Upper 5% points of the Anderson-Darling statistic for a generalised Pareto distribution whose
//! scale and shape are estimated by maximum likelihood, by shape: the table
//! `checks::AD_CRITICAL_05`. `cargo run --release -p rtvirt-tail --example ad_table [REPS]`.

use rand::{RngExt, SeedableRng};
use rtvirt_tail::{checks, gpd};

fn main() {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let k = 1000;
    for &xi in &[-0.5, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0] {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(20_260_000 + (xi * 10.0 + 10.0) as u64);
        let mut stats: Vec<f64> = (0..reps)
            .map(|_| {
                let mut ys: Vec<f64> = (0..k).map(|_| gpd::quantile(rng.random::<f64>(), 1.0, xi)).collect();
                ys.sort_by(f64::total_cmp);
                let ex = gpd::Exceedances::new(ys.iter().map(|&y| (y, 1)));
                let f = gpd::fit(&ex).expect("a fit");
                checks::anderson_darling(&ys, f.sigma, f.xi)
            })
            .collect();
        stats.sort_by(f64::total_cmp);
        let q = |p: f64| stats[((reps as f64 * p) as usize).min(reps - 1)];
        println!("    ({xi:.1}, {:.3}), // 10%: {:.3}, 1%: {:.3}", q(0.95), q(0.90), q(0.99));
    }
}
