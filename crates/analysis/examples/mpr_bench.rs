//! Cost of the global (MPR) analysis of one guest and how it grows with its vCPUs `m`
//! (docs/PERFORMANCE.md): a guest of `5 m` Baker tasks (WCET 5%..15% of the period, so U ~ m / 2,
//! periods from divisors of 1000 ms), its least MPR interface over the default 20 candidate
//! server periods and every `m'` from `ceil(U)` to `m`.
//! Run: `cargo run --release -p rtvirt-analysis --example mpr_bench -- [guests per m]` (default 5).

use rtvirt_analysis::dbf::{utilisation, Sporadic};
use rtvirt_analysis::gen::{baker_scenario, BakerSpec};
use rtvirt_analysis::mpr_interface::best_interface;
use std::time::Instant;

fn main() {
    let guests: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    println!(
        "| vCPUs m | tasks | mean U | m' chosen (range) | mean bandwidth | ms per guest (mean) | ms per guest (max) |"
    );
    println!("|---:|---:|---:|---|---:|---:|---:|");
    for m in [1u64, 2, 3, 4, 6, 8] {
        let (mut total, mut worst, mut u_sum, mut bw_sum, mut chosen) = (0.0f64, 0.0f64, 0.0, 0.0, vec![]);
        for seed in 1..=guests {
            let mut spec = BakerSpec::light(seed, 1, 5 * m as usize, 1.0);
            spec.wcet_fraction = (0.05, 0.15);
            let g = baker_scenario(&spec).guests.remove(0);
            let tasks: Vec<Sporadic> =
                g.tasks.iter().map(|t| Sporadic { c: t.wcet.0, d: t.deadline.0, t: t.period.0 }).collect();
            let candidates: Vec<u64> = g.server_periods.candidates(&g.tasks).iter().map(|p| p.0).collect();
            let start = Instant::now();
            let r = best_interface(&tasks, &candidates, m);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            total += ms;
            worst = worst.max(ms);
            u_sum += utilisation(&tasks);
            match r {
                Ok(Some(r)) => {
                    chosen.push(r.concurrency);
                    bw_sum += r.budget as f64 / r.period as f64;
                }
                Ok(None) => chosen.push(0),
                Err(_) => chosen.push(u64::MAX),
            }
        }
        let n = guests as f64;
        let found: Vec<u64> = chosen.iter().copied().filter(|&c| c > 0 && c < u64::MAX).collect();
        let refused = chosen.iter().filter(|&&c| c == u64::MAX).count();
        let range = match (found.iter().min(), found.iter().max()) {
            (Some(a), Some(b)) => format!("{a}..{b} ({} of {guests} found, {refused} too large)", found.len()),
            _ => format!("none of {guests} ({refused} too large)"),
        };
        println!(
            "| {m} | {} | {:.2} | {range} | {:.3} | {:.1} | {:.1} |",
            5 * m,
            u_sum / n,
            bw_sum / found.len().max(1) as f64,
            total / n,
            worst
        );
    }
}
