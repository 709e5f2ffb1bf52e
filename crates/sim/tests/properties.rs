//! Properties of random hosts: every policy family on random cores with random guests and loads.
//! A run never panics, is deterministic, never gives a core more than 100% or a thread more time
//! than its cores had, accounts every job with a response time at least its release-to-completion
//! minimum, and has no event storm. The same for global guests of several vCPUs (their vCPUs on
//! one core, on distinct cores or free over a cluster), whose jobs never run past their
//! completion (a debug assertion: these tests run with debug assertions on).

use proptest::prelude::*;
use rtvirt_model::scenario::Scenario;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};

const FAMILIES: [&[&str]; 4] = [
    &[
        "policy = \"fifo\"\npriority = {p}",
        "policy = \"rr\"\npriority = {p}\nquantum = \"1ms\"",
        "policy = \"deadline\"\nruntime = \"{b}us\"\nperiod = \"{P}us\"",
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

fn scenario(
    cores: u32,
    family_of_core: &[usize],
    guests: &[(u32, usize, u64, u64, bool, u64)],
    hrtick: bool,
) -> String {
    let mut s = format!("[host]\ncores = {cores}\n[sim]\nhrtick = {hrtick}\nvcpu_switch = \"2us\"\n");
    for (i, &(core, pick, period_us, wcet_us, poll, salt)) in guests.iter().enumerate() {
        let fam = FAMILIES[family_of_core[core as usize]];
        let policy = fam[pick % fam.len()]
            .replace("{p}", &(1 + salt % 90).to_string())
            .replace("{n}", &((salt % 40) as i64 - 20).to_string())
            .replace("{w}", &(1 + salt % 1000).to_string())
            .replace("{x}", if salt % 2 == 0 { "true" } else { "false" })
            // budget 10..60% of a 1..5 ms period, kept under the deadline admission limit
            .replace("{b}", &((1000 + salt % 4000) * (1 + salt % 3) / 10 / guests.len() as u64).max(50).to_string())
            .replace("{P}", &(1000 + salt % 4000).to_string());
        s += &format!(
            "[[guest]]\nname = \"g{i}\"\nscheduler = \"{}\"\n[guest.vcpu]\ncore = {core}\n{policy}\nidle = \"{}\"\n\
             context_switch = \"1us\"\n",
            if salt % 2 == 0 { "edf" } else { "fp" },
            if poll { "poll" } else { "halt" }
        );
        s += &format!(
            "[[guest.task]]\nname = \"a\"\nperiod = \"{period_us}us\"\nwcet = \"{wcet_us}us\"\nexec = {{ dist = \
             \"uniform\", min = \"1us\", max = \"{wcet_us}us\" }}\n"
        );
        s += &format!(
            "[[guest.task]]\nname = \"b\"\nperiod = \"{}us\"\nwcet = \"{}us\"\noffset = \"{}us\"\n",
            period_us * 3,
            wcet_us,
            salt % period_us
        );
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn random_hosts_run_sanely(
        cores in 1u32..4,
        families in proptest::collection::vec(0usize..4, 3),
        guests in proptest::collection::vec(
            (0u32..3, 0usize..4, 500u64..20_000, 1u64..400, any::<bool>(), any::<u64>()),
            1..6
        ),
        hrtick in any::<bool>(),
    ) {
        let guests: Vec<_> = guests
            .into_iter()
            .map(|(c, p, per, w, poll, salt)| (c % cores, p, per, w.min(per), poll, salt))
            .collect();
        let src = scenario(cores, &families, &guests, hrtick);
        let overrides = || Overrides { duration: Some(rtvirt_model::Nanos::from_ms(300)), seed: Some(9), ..Default::default() };
        let checked = Scenario::from_toml(&src, None)
            .and_then(|s| SimConfig::new(&s, None, overrides()).map(|c| (s, c)));
        let (s, cfg) = match checked {
            Ok(c) => c,
            Err(e) => {
                // Only the kernel's deadline admission control may refuse a generated host.
                prop_assert!(e.message.contains("admission control"), "{e}\n{src}");
                return Ok(());
            }
        };
        let a = simulate(&s, &cfg, &RunOptions::default()).results;
        let b = simulate(&s, &cfg, &RunOptions::default()).results;
        prop_assert_eq!(&a, &b);
        let d = a.duration_ns as f64;
        for c in &a.cores {
            prop_assert!(c.utilisation <= 1.0 + 1e-12, "core {} at {}", c.id, c.utilisation);
        }
        for g in &a.guests {
            prop_assert!(g.cpu_time_ns as f64 <= d);
        }
        let busy: u64 = a.cores.iter().map(|c| c.cpu_time_ns.unwrap()).sum();
        let threads: u64 = a.guests.iter().map(|g| g.cpu_time_ns).sum();
        prop_assert_eq!(busy, threads, "core busy time = thread CPU time");
        let mut jobs = 0;
        for t in &a.tasks {
            prop_assert!(t.misses <= t.jobs);
            prop_assert!(t.response_ns.count <= t.jobs);
            prop_assert!(t.response_ns.count == 0 || t.response_ns.min >= 1000, "a job needs at least its 1us");
            jobs += t.jobs;
        }
        let events = a.simulation.as_ref().unwrap().events.unwrap();
        prop_assert!(events <= 20 * (jobs + 300) + 1000, "{} events for {} jobs\n{}", events, jobs, src);
    }
}

/// A random host of global guests: each guest of 2-3 vCPUs, one policy family and one
/// placement per host (`place`): each guest's vCPUs on one core, on distinct cores (vCPU k of
/// guest i on core i + k) or over every core.
/// A guest: (first core, policy pick, task period us, wcet us, vCPUs, salt).
fn global_scenario(cores: u32, family: usize, place: u8, guests: &[(u32, usize, u64, u64, u32, u64)]) -> String {
    let mut s = format!("[host]\ncores = {cores}\n[sim]\nvcpu_switch = \"2us\"\n");
    for (i, &(core, pick, period_us, wcet_us, vcpus, salt)) in guests.iter().enumerate() {
        let fam = FAMILIES[family];
        let policy = fam[pick % fam.len()]
            .replace("{p}", &(1 + salt % 3).to_string())
            .replace("{n}", &((salt % 3) as i64 - 1).to_string())
            .replace("{w}", &(1 + salt % 1000).to_string())
            .replace("{x}", if salt % 2 == 0 { "true" } else { "false" })
            .replace(
                "{b}",
                &((1000 + salt % 4000) * (1 + salt % 3) / 10 / (3 * guests.len() as u64)).max(50).to_string(),
            )
            .replace("{P}", &(1000 + salt % 4000).to_string());
        let at = match place {
            0 => format!("core = {core}"),
            1 => format!("cores = [{}]", (0..cores).map(|c| c.to_string()).collect::<Vec<_>>().join(", ")),
            _ => String::new(), // vCPU k of guest i on core (i + k) mod cores
        };
        let fp = salt % 2 == 1;
        s += &format!(
            "[[guest]]\nname = \"g{i}\"\nscheduler = \"{}\"\nvcpus = {vcpus}\nplacement = \"global\"\n\
             [guest.vcpu]\n{at}\n{policy}\nidle = \"{}\"\ncontext_switch = \"1us\"\n",
            if fp { "fp" } else { "edf" },
            if salt % 7 == 0 { "poll" } else { "halt" }
        );
        for (k, (period, offset)) in
            [(period_us, 0), (period_us * 3, salt % period_us), (period_us * 2, 7)].iter().enumerate()
        {
            s += &format!(
                "[[guest.task]]\nname = \"t{k}\"\nperiod = \"{period}us\"\nwcet = \"{wcet_us}us\"\noffset = \"{offset}us\"\n\
                 exec = {{ dist = \"uniform\", min = \"1us\", max = \"{wcet_us}us\" }}\n"
            );
            if fp {
                s += &format!("priority = {}\n", 3 - k);
            }
        }
    }
    s
}

proptest! {
    // PROPTEST_CASES=n runs more (the default 64 keep the suite short)
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        .. ProptestConfig::default()
    })]
    #[test]
    fn random_global_guests_run_sanely(
        cores in 2u32..4,
        family in 0usize..4,
        place in 0u8..3,
        guests in proptest::collection::vec(
            (0u32..3, 0usize..4, 500u64..10_000, 1u64..1_500, 2u32..4, any::<u64>()),
            1..3
        ),
    ) {
        let guests: Vec<_> = guests
            .into_iter()
            .map(|(c, p, per, w, v, salt)| (c % cores, p, per, w.min(per), v.min(cores), salt))
            .collect();
        let src = global_scenario(cores, family, place, &guests);
        let overrides = || Overrides { duration: Some(rtvirt_model::Nanos::from_ms(500)), seed: Some(9), ..Default::default() };
        let checked = Scenario::from_toml(&src, None)
            .and_then(|s| SimConfig::new(&s, None, overrides()).map(|c| (s, c)));
        let (s, cfg) = match checked {
            Ok(c) => c,
            Err(e) => {
                prop_assert!(e.message.contains("admission control"), "{e}\n{src}");
                return Ok(());
            }
        };
        let a = simulate(&s, &cfg, &RunOptions::default()).results;
        let b = simulate(&s, &cfg, &RunOptions::default()).results;
        prop_assert_eq!(&a, &b);
        let d = a.duration_ns;
        for c in &a.cores {
            prop_assert!(c.utilisation <= 1.0 + 1e-12, "core {} at {}", c.id, c.utilisation);
        }
        for g in &a.guests {
            let cores = g.cores.as_ref().map_or(1, |c| c.len()) as u64;
            prop_assert!(g.cpu_time_ns <= d * cores, "{} used {} ns on {} cores\n{}", g.name, g.cpu_time_ns, cores, src);
        }
        let busy: u64 = a.cores.iter().map(|c| c.cpu_time_ns.unwrap()).sum();
        let threads: u64 = a.guests.iter().map(|g| g.cpu_time_ns).sum();
        prop_assert_eq!(busy, threads, "core busy time = thread CPU time");
        for t in &a.tasks {
            prop_assert!(t.misses <= t.jobs);
            prop_assert!(t.response_ns.count == 0 || t.response_ns.min >= 1000, "a job needs at least its 1us");
        }
    }
}
