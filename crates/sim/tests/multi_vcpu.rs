//! Partitioned multi-vCPU guests: each vCPU is a uniprocessor with its own scheduler, so a guest
//! whose tasks are split over N vCPUs gives, task by task, what N single-vCPU guests holding the
//! same pieces give (same jobs, misses and response times), whatever the host policy.

use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_sim::config::{GuestThreads, ThreadSpec};
use rtvirt_sim::engine::rng::SimRng;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};

const PERIODS_US: [u64; 5] = [2_000, 4_000, 5_000, 8_000, 10_000];

struct Task {
    period: u64,
    wcet: u64,
    vcpu: u32,
    /// Unique over the guest (fixed-priority guests).
    prio: u32,
}

fn guest(name: &str, sched: &str, vcpu: &str, tasks: &[&Task]) -> String {
    let mut s = format!("[[guest]]\nname = \"{name}\"\nscheduler = \"{sched}\"\n{vcpu}\n");
    for (i, t) in tasks.iter().enumerate() {
        s += &format!("[[guest.task]]\nname = \"t{i}\"\nperiod = \"{}us\"\nwcet = \"{}us\"\n", t.period, t.wcet);
        if sched == "fp" {
            s += &format!("priority = {}\n", t.prio);
        }
    }
    s
}

fn vcpu_section(core: u32, policy: &str) -> String {
    format!("[guest.vcpu]\ncore = {core}\n{policy}\n")
}

fn config(s: &Scenario) -> SimConfig {
    SimConfig::new(s, None, Overrides { duration: Some(Nanos::from_secs(1)), seed: Some(3) }).unwrap()
}

/// (jobs, misses, max response) per task, in task order.
fn per_task(s: &Scenario, cfg: &SimConfig) -> Vec<(u64, u64, u64)> {
    let r = simulate(s, cfg, &RunOptions::default()).results;
    r.tasks.iter().map(|t| (t.jobs, t.misses, t.response_ns.max)).collect()
}

#[test]
fn a_partitioned_guest_equals_its_single_vcpu_pieces() {
    let mut rng = SimRng::new(1818, 0);
    let policies = [
        "policy = \"deadline\"\nruntime = \"1ms\"\nperiod = \"2ms\"",
        "policy = \"supply\"\nbudget = \"3ms\"\nperiod = \"5ms\"\nsupply = \"prm-worst\"",
        "policy = \"fifo\"\npriority = 50",
    ];
    for case in 0..12 {
        let sched = if case % 2 == 0 { "edf" } else { "fp" };
        let vcpus = 2 + case % 2;
        let tasks: Vec<Task> = (0..rng.uniform(3, 6))
            .map(|i| {
                let period = PERIODS_US[rng.uniform(0, 4) as usize];
                let vcpu = rng.uniform(0, vcpus as u64 - 1) as u32;
                Task { period, wcet: rng.uniform(50, period / 4), vcpu, prio: 100 - i as u32 }
            })
            .collect();
        // the pieces: one single-vCPU guest per used vCPU, each on its own core and policy
        let mut pieces = format!("[host]\ncores = {vcpus}\n");
        let mut order: Vec<(u32, &Task)> = Vec::new();
        for k in 0..vcpus as u32 {
            let mine: Vec<&Task> = tasks.iter().filter(|t| t.vcpu == k).collect();
            if mine.is_empty() {
                continue;
            }
            let policy = policies[(case + k as usize) % policies.len()];
            let slot = pieces.matches("[[guest]]").count() as u32;
            pieces += &guest(&format!("p{k}"), sched, &vcpu_section(k, policy), &mine);
            order.extend(mine.into_iter().map(|t| (slot, t)));
        }
        let pieces = Scenario::from_toml(&pieces, None).unwrap();
        // the whole: one guest with every task (in piece order), its vCPU k on piece k's thread
        let all: Vec<&Task> = order.iter().map(|o| o.1).collect();
        let whole =
            Scenario::from_toml(&format!("[host]\ncores = {vcpus}\n{}", guest("g", sched, "", &all)), None).unwrap();
        let piece_cfg = config(&pieces);
        let mut cfg = config(&whole);
        let threads: Vec<ThreadSpec> = piece_cfg.guest_vcpus.iter().map(|g| g.threads[0].clone()).collect();
        let task_vcpu = Some(order.iter().map(|o| o.0).collect());
        cfg.guest_vcpus = vec![GuestThreads { rt: vec![true; threads.len()], threads, task_vcpu }];
        let want = per_task(&pieces, &piece_cfg);
        assert!(want.iter().map(|w| w.0).sum::<u64>() > 0);
        assert_eq!(per_task(&whole, &cfg), want, "case {case} ({sched}, {vcpus} vCPUs)");
    }
}
