//! Seeded synthetic workloads for tests and benchmarks: Baker-model task sets as in the Burns 2014
//! study ("sched_test_app"-style): light tasks have execution bounds (WCET) uniform in 1%..10% of
//! the period, execution times normal with a mean of 30/50/70% of the WCET and SD = WCET/6.
//! Periods come from divisors of 1000 ms so that hyperperiods stay bounded (at most 1 s).

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rtvirt_model::exec::ExecModel;
use rtvirt_model::scenario::sim::VcpuSpec;
use rtvirt_model::scenario::{
    assign_deadline_monotonic, Guest, GuestScheduler, HostSection, PeriodChoice, Placement, Scenario, Task, Vcpu,
};
use rtvirt_model::Nanos;

/// The divisors of 1000 ms (in ms): any set of them has a hyperperiod dividing 1 s.
pub const DIVISOR_PERIODS_MS: [u64; 16] = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000];

/// What to generate.
#[derive(Debug, Clone)]
pub struct BakerSpec {
    pub seed: u64,
    pub guests: usize,
    pub tasks_per_guest: usize,
    /// Mean execution time as a fraction of the WCET (0.3, 0.5, 0.7 in Burns 2014).
    pub mean_fraction: f64,
    /// Periods to draw from, in ms.
    pub periods_ms: Vec<u64>,
    /// WCET as a fraction of the period, uniform in this range (light: 0.01..0.10).
    pub wcet_fraction: (f64, f64),
    pub scheduler: GuestScheduler,
    pub cores: u32,
    /// Guest rho (None: WCET unless the planner's --rho applies).
    pub rho: Option<f64>,
}

impl BakerSpec {
    /// Light Baker task sets (WCET 1%..10% of the period) on the divisor periods.
    pub fn light(seed: u64, guests: usize, tasks_per_guest: usize, mean_fraction: f64) -> BakerSpec {
        BakerSpec {
            seed,
            guests,
            tasks_per_guest,
            mean_fraction,
            periods_ms: DIVISOR_PERIODS_MS.to_vec(),
            wcet_fraction: (0.01, 0.10),
            scheduler: GuestScheduler::Edf,
            cores: guests as u32,
            rho: None,
        }
    }
}

fn baker_task(rng: &mut Pcg64Mcg, name: String, spec: &BakerSpec) -> Task {
    let period = Nanos::from_ms(spec.periods_ms[rng.random_range(0..spec.periods_ms.len())]);
    let f = rng.random_range(spec.wcet_fraction.0..=spec.wcet_fraction.1);
    let wcet = Nanos(((period.0 as f64 * f) as u64).max(1));
    let mean = Nanos(((wcet.0 as f64 * spec.mean_fraction) as u64).max(1));
    Task {
        name,
        period,
        deadline: period,
        wcet,
        priority: 0,
        priority_given: false,
        rho: None,
        offset: Nanos::ZERO,
        exec: ExecModel::Normal { mean, sd: Nanos(wcet.0 / 6) },
        vcpu: None,
        phases: vec![],
    }
}

/// A scenario of `spec.guests` guests, each with `spec.tasks_per_guest` Baker tasks and the
/// default server-period scan.
pub fn baker_scenario(spec: &BakerSpec) -> Scenario {
    let mut rng = Pcg64Mcg::seed_from_u64(spec.seed);
    let guests = (0..spec.guests)
        .map(|g| {
            let mut tasks: Vec<Task> =
                (0..spec.tasks_per_guest).map(|t| baker_task(&mut rng, format!("t{}", t + 1), spec)).collect();
            assign_deadline_monotonic(&mut tasks);
            let name = format!("vm{}", g + 1);
            let sim = VcpuSpec::default_for(&name, g as u32 % spec.cores.max(1));
            Guest {
                name,
                scheduler: spec.scheduler,
                server_periods: PeriodChoice::Default,
                rho: spec.rho,
                tasks,
                placement: Placement::Partitioned,
                spread: true,
                vcpus: vec![Vcpu { id: 0, housekeeping: false, sim }],
            }
        })
        .collect();
    Scenario {
        name: format!("baker-light-seed{}", spec.seed),
        description: None,
        host: HostSection { cores: spec.cores.max(1), bandwidth_cap: rtvirt_model::scenario::DEFAULT_BANDWIDTH_CAP },
        guests,
        sim: Default::default(),
        net: None,
        adapt: None,
        source: Default::default(),
    }
}
