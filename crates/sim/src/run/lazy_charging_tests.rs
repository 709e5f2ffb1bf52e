//! Lazy charging ([`crate::host`]) against the reference that charges every core at every event
//! (the simulator before it): random hosts of every policy family, guests of one to three vCPUs
//! (partitioned and global), one- and two-core clusters, both miss policies, with and without a
//! host model's costs. Results, job logs and event counts must be identical.

use super::{Outcome, RunOptions, Sim};
use crate::config::{Overrides, SimConfig};
use crate::engine::rng::SimRng;
use crate::host_costs::HostCosts;
use rtvirt_model::hostmodel::{HostModel, LatencySummary};
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;

/// Policy families (a core's vCPUs share one: the host refuses some mixes).
const FAMILIES: [&[&str]; 4] = [
    &[
        "policy = \"fifo\"\npriority = {p}",
        "policy = \"rr\"\npriority = {p}\nquantum = \"1ms\"",
        "policy = \"deadline\"\nruntime = \"{b}us\"\nperiod = \"{P}us\"",
        // nice 0 (weight 1024) charges additively, other nice values do not
        "policy = \"other\"\nnice = {n}",
    ],
    &["policy = \"credit\"\nweight = {w}"],
    &["policy = \"rtds\"\nbudget = \"{b}us\"\nperiod = \"{P}us\"\nextratime = {x}"],
    &[
        "policy = \"ds\"\npriority = {p}\nbudget = \"{b}us\"\nperiod = \"{P}us\"",
        "policy = \"ps\"\npriority = {p}\nbudget = \"{b}us\"\nperiod = \"{P}us\"",
        "policy = \"supply\"\nbudget = \"{b}us\"\nperiod = \"{P}us\"\nsupply = \"random\"",
    ],
];

/// A guest: (first core, policy pick, task period us, wcet us, vCPUs, global, two-core cluster,
/// salt).
type GuestGen = (u32, usize, u64, u64, u32, bool, bool, u64);

fn scenario(cores: u32, family: usize, guests: &[GuestGen], abort: bool, hrtick: bool) -> String {
    let miss = if abort { "abort" } else { "continue" };
    let mut s =
        format!("[host]\ncores = {cores}\n[sim]\nhrtick = {hrtick}\nvcpu_switch = \"2us\"\nmiss_policy = \"{miss}\"\n");
    for (i, &(core, pick, period_us, wcet_us, vcpus, global, pair, salt)) in guests.iter().enumerate() {
        let fam = FAMILIES[family];
        let policy = fam[pick % fam.len()]
            .replace("{p}", &(1 + salt % 90).to_string())
            .replace("{n}", &((salt % 3) as i64 - 1).to_string())
            .replace("{w}", &(1 + salt % 1000).to_string())
            .replace("{x}", if salt % 2 == 0 { "true" } else { "false" })
            .replace("{b}", &((1000 + salt % 4000) * (1 + salt % 3) / 10 / guests.len() as u64).max(50).to_string())
            .replace("{P}", &(1000 + salt % 4000).to_string());
        let placement = if pair && cores > 1 {
            format!("cores = [{}, {}]", core, (core + 1) % cores)
        } else {
            format!("core = {core}")
        };
        let how = if global { "global" } else { "partitioned" };
        s += &format!(
            "[[guest]]\nname = \"g{i}\"\nscheduler = \"{}\"\nvcpus = {vcpus}\nplacement = \"{how}\"\n[guest.vcpu]\n\
             {placement}\n{policy}\nidle = \"{}\"\ncontext_switch = \"1us\"\n",
            if salt % 2 == 0 { "edf" } else { "fp" },
            if salt % 5 == 0 { "poll" } else { "halt" }
        );
        for (k, (period, offset)) in
            [(period_us, 0), (period_us * 3, salt % period_us), (period_us * 2, 7)].iter().enumerate()
        {
            s += &format!(
                "[[guest.task]]\nname = \"t{k}\"\nperiod = \"{period}us\"\nwcet = \"{wcet_us}us\"\noffset = \"{offset}us\"\n\
                 exec = {{ dist = \"uniform\", min = \"1us\", max = \"{wcet_us}us\" }}\n"
            );
        }
    }
    s
}

/// A host model with every cost: per-period overhead drawn from a distribution, switches, cache
/// reloads, release latency, tick enforcement.
fn costs() -> HostCosts {
    let json = r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":30000,"context_switch_ns":3000,
        "cache_reload_ns":8000,"release_latency_ns":{"p50":4000,"p99":40000,"max":90000},
        "enforcement":{"kind":"tick","overrun_max_ns":1000000}}"#;
    let model = HostModel::from_json(json).expect("valid host model");
    let spread = LatencySummary { p50: 10_000, p99: 30_000, max: 70_000 };
    HostCosts { server_overhead_spread: Some(spread), ..HostCosts::of(&model) }
}

fn run(s: &Scenario, cfg: &SimConfig, reference: bool, costs: Option<&HostCosts>) -> Outcome {
    let mut sim = Sim::new(s, cfg, &RunOptions { job_log: true, ..Default::default() });
    if let Some(c) = costs {
        sim.set_costs(c, cfg.settings.seed);
    }
    if reference {
        sim.host.charge_all_cores();
    }
    sim.run();
    sim.outcome(s, cfg)
}

#[test]
fn lazy_charging_gives_the_results_of_charging_every_core_at_every_event() {
    let mut rng = SimRng::new(42, 0);
    let (mut ran, mut jobs, mut multi) = (0, 0, 0);
    for case in 0..160 {
        let cores = rng.uniform(1, 4) as u32;
        let family = rng.uniform(0, 3) as usize;
        let guests: Vec<GuestGen> = (0..rng.uniform(1, 4))
            .map(|_| {
                let period = rng.uniform(500, 20_000);
                let vcpus = rng.uniform(1, 3).min(cores as u64) as u32;
                let global = rng.uniform(0, 1) == 1;
                let pair = rng.uniform(0, 2) == 2;
                let (core, pick) = (rng.uniform(0, 3) as u32 % cores, rng.uniform(0, 3) as usize);
                (core, pick, period, rng.uniform(1, 600).min(period), vcpus, global, pair, rng.uniform(0, 1 << 40))
            })
            .collect();
        let (abort, hrtick, with_costs) = (case % 2 == 0, case % 3 == 0, case % 4 < 2);
        let src = scenario(cores, family, &guests, abort, hrtick);
        let overrides = Overrides { duration: Some(Nanos::from_ms(1000)), seed: Some(5), ..Default::default() };
        let Ok(s) = Scenario::from_toml(&src, None) else { continue };
        let Ok(cfg) = SimConfig::new(&s, None, overrides) else { continue };
        let costs = with_costs.then(costs);
        let lazy = run(&s, &cfg, false, costs.as_ref());
        let reference = run(&s, &cfg, true, costs.as_ref());
        assert_eq!(lazy.events, reference.events, "case {case}:\n{src}");
        assert_eq!(lazy.job_log, reference.job_log, "case {case}:\n{src}");
        assert_eq!(lazy.results, reference.results, "case {case}:\n{src}");
        ran += 1;
        jobs += lazy.job_log.len();
        multi += (guests.iter().any(|g| g.4 > 1)) as u32;
    }
    // the generator must give mostly valid hosts, multi-vCPU guests among them, and real work
    assert!(ran >= 80 && multi >= 30 && jobs >= 40_000, "{ran} runs, {multi} with multi-vCPU guests, {jobs} jobs");
}
