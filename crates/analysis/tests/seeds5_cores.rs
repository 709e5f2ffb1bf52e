//! The shape of Burns 2014's multiprocessor study (experiments/seeds5_cores_vs_vms.sh): VMs with
//! Baker light task sets packed onto cores need fewer cores with Cantelli budgets than with WCET
//! budgets - far fewer when the mean is 30% of the WCET - and never more, at any rho.

use rtvirt_analysis::gen::{baker_scenario, BakerSpec};
use rtvirt_analysis::planner::{plan_at, PlanOptions};

const VMS: usize = 12;
const TASKS: usize = 10;

/// Cores the plan uses (it must be feasible on `VMS` cores).
fn cores(seed: u64, mean: f64, rho: Option<f64>) -> u32 {
    let p = plan_at(&baker_scenario(&BakerSpec::light(seed, VMS, TASKS, mean)), &PlanOptions::default(), rho).plan;
    assert!(p.feasible, "seed {seed} mean {mean} rho {rho:?}: {VMS} VMs fit on {VMS} cores");
    p.cores_used
}

#[test]
fn cantelli_budgets_need_fewer_cores_than_wcet_budgets() {
    for seed in 1..=3 {
        for mean in [0.3, 0.7] {
            let wcet = cores(seed, mean, None);
            let by_rho: Vec<u32> = [0.1, 0.5, 0.9].iter().map(|&r| cores(seed, mean, Some(r))).collect();
            assert!(by_rho.iter().all(|&c| c <= wcet), "seed {seed} mean {mean}: {by_rho:?} vs WCET {wcet}");
            assert!(by_rho[0] <= by_rho[2], "seed {seed} mean {mean}: more cores at rho 0.1 than 0.9 {by_rho:?}");
            // mean 30%: even rho = 0.9 (c = 0.3 WCET + 3 SD = 0.8 WCET) saves cores; mean 70%:
            // rho = 0.5 (c = 0.7 WCET + SD) does, rho = 0.9 is the WCET itself (capped)
            let saving = if mean < 0.5 { by_rho[2] } else { by_rho[1] };
            assert!(saving < wcet, "seed {seed} mean {mean}: {by_rho:?} vs WCET {wcet}");
        }
        // "far fewer": at mean 30% and rho 0.5, at most 60% of the WCET plan's cores
        let (half, wcet) = (cores(seed, 0.3, Some(0.5)), cores(seed, 0.3, None));
        assert!(half as f64 <= 0.6 * wcet as f64, "seed {seed}: {half} cores at rho 0.5 vs {wcet} at WCET");
    }
}
