//! Cores needed versus the number of VMs (the shape of Burns 2014's multiprocessor study): each VM
//! one vCPU with a Baker light task set (WCET uniform in 1%..10% of the period, execution times
//! normal with mean 30% or 70% of the WCET and SD = WCET/6), Cantelli budgets at rho 0.1..0.9
//! against WCET budgets, exact PRM interfaces, best-fit decreasing onto as many cores as VMs.
//! Prints, per mean and VM count, the cores used (mean over seeds) per rho and with WCET.
//! Run: `cargo run --release -p rtvirt-analysis --example cores_vs_vms -- [seeds] [tasks per VM]`
//! (experiments/seeds5_cores_vs_vms.sh).

use rtvirt_analysis::gen::{baker_scenario, BakerSpec};
use rtvirt_analysis::planner::{plan_at, PlanOptions};

const VMS: [usize; 6] = [2, 4, 8, 12, 16, 24];
const RHOS: [f64; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// Cores used by the plan of `vms` VMs at `rho` (None: WCET), averaged over `seeds` task sets;
/// None if some plan did not fit on `vms` cores.
fn mean_cores(vms: usize, tasks: usize, mean: f64, rho: Option<f64>, seeds: u64) -> Option<f64> {
    let mut total = 0u32;
    for seed in 1..=seeds {
        let s = baker_scenario(&BakerSpec::light(seed, vms, tasks, mean));
        let p = plan_at(&s, &PlanOptions::default(), rho).plan;
        if !p.feasible {
            return None;
        }
        total += p.cores_used;
    }
    Some(total as f64 / seeds as f64)
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (seeds, tasks) = (*args.first().unwrap_or(&5), *args.get(1).unwrap_or(&10) as usize);
    println!("cores used (mean of {seeds} seeds), {tasks} light Baker tasks per VM, PRM, BFD");
    for mean in [0.3, 0.7] {
        println!("\nmean = {:.0}% of WCET", mean * 100.0);
        let head: String = RHOS.iter().map(|r| format!(" rho={r:.1} |")).collect();
        println!("| VMs |{head} WCET |");
        println!("|---:|{}---:|", "---:|".repeat(RHOS.len()));
        for vms in VMS {
            let cell = |rho: Option<f64>| {
                mean_cores(vms, tasks, mean, rho, seeds).map_or("-".to_string(), |c| format!("{c:.1}"))
            };
            let row: String = RHOS.iter().map(|&r| format!(" {} |", cell(Some(r)))).collect();
            println!("| {vms} |{row} {} |", cell(None));
        }
    }
}
