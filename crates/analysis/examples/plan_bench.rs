//! Planner benchmark (docs/PERFORMANCE.md): plan N guests x M Baker light tasks with the default
//! scan of 20 candidate server periods, and report how time grows with tasks per guest and with
//! the hyperperiod. Run: `cargo run --release -p rtvirt-analysis --example plan_bench`.
//! Optional args: `<guests> <tasks> <repeats>` for the headline case (default 1000 10 3);
//! `--headline` stops after it (plans without and with a host model's overheads, side by side).

use rtvirt_analysis::gen::{baker_scenario, BakerSpec};
use rtvirt_analysis::planner::max_rho;
use rtvirt_analysis::planner::{plan_at, PlanOptions};
use std::time::Instant;

/// Best of `repeats` wall-clock runs of `f`, in seconds.
fn best_of(repeats: usize, mut f: impl FnMut()) -> f64 {
    (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn spec(guests: usize, tasks: usize, periods_ms: &[u64]) -> BakerSpec {
    let mut s = BakerSpec::light(1, guests, tasks, 0.5);
    s.periods_ms = periods_ms.to_vec();
    s.rho = Some(0.9);
    s
}

fn lcm_ms(p: &[u64]) -> u64 {
    p.iter().fold(1, |l, &x| l / gcd(l, x) * x)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (guests, tasks, repeats) =
        (*args.first().unwrap_or(&1000), *args.get(1).unwrap_or(&10), *args.get(2).unwrap_or(&3));
    let o = PlanOptions::default();
    let divisors = rtvirt_analysis::gen::DIVISOR_PERIODS_MS;

    let s = baker_scenario(&spec(guests, tasks, &divisors));
    let mut used = (false, 0);
    let t = best_of(repeats, || {
        let p = plan_at(&s, &o, None).plan;
        used = (p.feasible, p.cores_used);
    });
    println!("headline: {guests} guests x {tasks} tasks, 20 candidate periods, periods from divisors of 1000 ms");
    println!(
        "  plan (no max_rho): {t:.3} s (best of {repeats}), feasible = {}, cores used {}, rayon threads = {}",
        used.0,
        used.1,
        rayon::current_num_threads()
    );
    // the same plan with a host model's overheads charged (rtvirt plan --host-model): the default
    // model (tick enforcement, 4 ms overrun) and the same costs with hrtick (20 us overrun)
    let default_model = rtvirt_model::hostmodel::HostModel::uncalibrated();
    let hrtick_model = rtvirt_model::hostmodel::HostModel::from_json(
        r#"{"schema":"rtvirt.hostmodel/v1","enforcement":{"kind":"hrtick","overrun_max_ns":20000}}"#,
    )
    .expect("a valid host model");
    for (name, model) in [("default host model (tick, 4 ms)", &default_model), ("hrtick host model", &hrtick_model)] {
        let with = PlanOptions { overheads: Some(rtvirt_analysis::overhead::Overheads::of(model)), ..o.clone() };
        let mut used_with = (false, 0, 0);
        let t_with = best_of(repeats, || {
            let p = plan_at(&s, &with, None).plan;
            used_with = (p.feasible, p.cores_used, p.unplaced.len());
        });
        println!(
            "  plan with the {name}'s overheads: {t_with:.3} s (best of {repeats}; {:.2}x the plan without), \
             feasible = {}, cores used {}, guests unplaced {}",
            t_with / t,
            used_with.0,
            used_with.1,
            used_with.2
        );
    }
    if std::env::args().any(|a| a == "--headline") {
        return;
    }
    // max_rho on 90% of the cores the rho = 0.9 plan used, so that the search has to bisect
    let tight = PlanOptions { cores: Some(used.1 * 9 / 10), ..o.clone() };
    let mut r = None;
    let t = best_of(1, || r = max_rho(&s, &tight));
    println!("  max_rho search on {} cores: {t:.3} s (max_rho = {r:?})", used.1 * 9 / 10);

    println!("\ngrowth with tasks per guest ({} guests, WCET scaled so that U stays ~0.55 per guest):", guests / 10);
    for n in [2, 5, 10, 20, 40, 80] {
        let mut sp = spec(guests / 10, n, &divisors);
        sp.wcet_fraction = (0.1 / n as f64, 1.0 / n as f64);
        let s = baker_scenario(&sp);
        let t = best_of(repeats, || {
            plan_at(&s, &o, None);
        });
        println!("  {n:>3} tasks/guest: {:>8.3} ms per guest", t * 1e3 / (guests / 10) as f64);
    }

    println!("\ngrowth with the hyperperiod ({} guests x {tasks} tasks):", guests / 10);
    let sets: [&[u64]; 5] = [
        &[10, 20, 50, 100],
        &[4, 5, 8, 10, 20, 25, 40, 50, 100, 200],
        &divisors,
        &[6, 7, 10, 12, 15, 21, 35],
        &[7, 11, 13, 17, 19, 23],
    ];
    for p in sets {
        let s = baker_scenario(&spec(guests / 10, tasks, p));
        let t = best_of(repeats, || {
            plan_at(&s, &o, None);
        });
        println!(
            "  LCM of the period set {:>12} ms: {:>9.3} ms per guest   (periods {p:?})",
            lcm_ms(p),
            t * 1e3 / (guests / 10) as f64
        );
    }
}
