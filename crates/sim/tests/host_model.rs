//! The simulator on a host model (`rtvirt simulate --host-model`, [`rtvirt_sim::host_costs`]):
//! each cost on a small scenario whose outcome is known exactly, determinism by seed, and nothing
//! changed without a host model.

use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::Nanos;
use rtvirt_sim::{
    simulate, simulate_with_costs, simulate_with_host_model, HostCosts, Overrides, RunOptions, SimConfig,
};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn config(s: &Scenario, seed: u64) -> SimConfig {
    SimConfig::new(s, None, Overrides { duration: Some(Nanos::from_secs(1)), seed: Some(seed), ..Default::default() })
        .unwrap()
}

fn run(src: &str, model: Option<&HostModel>) -> Results {
    let s = Scenario::from_toml(src, None).unwrap_or_else(|e| panic!("{e}\n{src}"));
    simulate_with_host_model(&s, &config(&s, 1), &RunOptions::default(), model).results
}

/// Every cost zero except those in `json`.
fn only(json: &str) -> HostModel {
    let zero = r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":0,"context_switch_ns":0,"cache_reload_ns":0,
        "release_latency_ns":{"p50":0,"p99":0,"max":0},"enforcement":{"kind":"hrtick","overrun_max_ns":0}}"#;
    let mut v: serde_json::Value = serde_json::from_str(zero).unwrap();
    let extra: serde_json::Value = serde_json::from_str(&format!("{{{json}}}")).unwrap();
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    HostModel::from_json(&v.to_string()).unwrap()
}

/// One guest with the given vCPU and tasks `(name, period, wcet, offset, priority)` (FP).
fn guest(vcpu: &str, tasks: &[(&str, &str, &str, &str, u32)]) -> String {
    let mut s = format!(
        "[host]\ncores = 1\n[sim]\nrt_throttling = false\n[[guest]]\nname = \"g\"\nscheduler = \"fp\"\n{vcpu}\n"
    );
    for (name, period, wcet, offset, prio) in tasks {
        s += &format!(
            "[[guest.task]]\nname = \"{name}\"\nperiod = \"{period}\"\nwcet = \"{wcet}\"\noffset = \"{offset}\"\n\
             priority = {prio}\n"
        );
    }
    s
}

const FIFO: &str = "[guest.vcpu]\ncore = 0\npolicy = \"fifo\"\npriority = 50\n";

fn task<'a>(r: &'a Results, name: &str) -> &'a rtvirt_model::results::TaskResult {
    r.tasks.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn without_a_host_model_nothing_changes() {
    let default = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/default.toml"));
    for s in [
        Scenario::from_toml(&guest(FIFO, &[("a", "10ms", "3ms", "0ms", 1), ("b", "5ms", "1ms", "1ms", 2)]), None)
            .unwrap(),
        Scenario::from_file(default).unwrap(),
    ] {
        let cfg = config(&s, 7);
        let plain = serde_json::to_string(&simulate(&s, &cfg, &RunOptions::default()).results).unwrap();
        let none = simulate_with_host_model(&s, &cfg, &RunOptions::default(), None).results;
        assert_eq!(plain, serde_json::to_string(&none).unwrap());
        assert!(none.simulation.unwrap().host_costs.is_none());
    }
}

#[test]
fn release_latency_delays_every_job_by_a_draw_from_the_model() {
    let src = guest(FIFO, &[("t", "1ms", "100us", "0ms", 1)]);
    let latency = only(r#""release_latency_ns":{"p50":20000,"p99":60000,"max":90000}"#);
    let r = run(&src, Some(&latency));
    let t = task(&r, "t");
    assert_eq!(t.jobs, 1000);
    // response = latency + 100 us: the response quantiles are the model's, shifted (HDR buckets
    // are within 0.1%)
    let (p50, p99, max) = (t.response_ns.p50 as f64, t.response_ns.p99 as f64, t.response_ns.max as f64);
    assert!(p50 > 110e3 && p50 < 130e3, "p50 {p50}");
    assert!(p99 > 150e3 && p99 < 165e3, "p99 {p99}");
    assert!(max <= 190.2e3, "max {max}");
    assert!(t.response_ns.min as f64 >= 100e3);
    // a deadline shorter than the latency plus the work is missed; the deadline counts from the
    // nominal release
    let tight = src.replace("priority = 1\n", "priority = 1\ndeadline = \"150us\"\n");
    let r = run(&tight, Some(&latency));
    let t = task(&r, "t");
    // P(latency > 50 us) = 0.49 * (60 - 50) / (60 - 20) + 0.01 = 0.1325
    assert!(t.misses > 100 && t.misses < 170, "{} of 1000 jobs late by more than 50 us", t.misses);
    // worst case: every job at the max
    let s = Scenario::from_toml(&src, None).unwrap();
    let worst = HostCosts::of(&latency).worst_case();
    let r = simulate_with_costs(&s, &config(&s, 1), &RunOptions::default(), Some(&worst)).results;
    let t = task(&r, "t");
    assert_eq!((t.response_ns.p50 as f64 / 190e3).round(), 1.0);
    assert!(r.simulation.unwrap().host_costs.unwrap().contains("release latency always the max 90000 ns"));
}

/// A release that finds its vCPU busy is taken in at once (the running guest sees its own timer),
/// one that has to wake an idle vCPU pays the host's wake-up latency (as a real worker's
/// clock_nanosleep does, `rtvirt measure tasks`).
#[test]
fn only_a_release_that_wakes_an_idle_vcpu_pays_the_latency() {
    let latency = only(r#""release_latency_ns":{"p50":200000,"p99":200000,"max":200000}"#);
    // "hi" (1 ms period, 100 us) is released at 0.5 ms into every 1 ms, while "lo" (1 ms period,
    // 900 us from 0) keeps the vCPU busy: hi's releases find it running
    let busy = guest(FIFO, &[("lo", "1ms", "900us", "0ms", 1), ("hi", "1ms", "100us", "500us", 2)]);
    let r = run(&busy, Some(&latency));
    let hi = task(&r, "hi");
    assert!(hi.response_ns.max < 110_000, "a busy vCPU takes hi in at once: max {}", hi.response_ns.max);
    // alone, every release of hi wakes the idle vCPU: late by a draw whose median is 200 us
    let idle = guest(FIFO, &[("hi", "1ms", "100us", "500us", 2)]);
    let r = run(&idle, Some(&latency));
    let hi = task(&r, "hi");
    assert!(hi.response_ns.p50 >= 290_000, "an idle vCPU wakes late: p50 {}", hi.response_ns.p50);
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_other_draws() {
    let src = guest(FIFO, &[("a", "10ms", "3ms", "0ms", 1), ("b", "5ms", "1ms", "1ms", 2)]);
    let s = Scenario::from_toml(&src, None).unwrap();
    let m = HostModel::uncalibrated();
    let json = |seed: u64| {
        serde_json::to_string(
            &simulate_with_host_model(&s, &config(&s, seed), &RunOptions::default(), Some(&m)).results,
        )
        .unwrap()
    };
    assert_eq!(json(5), json(5));
    assert_ne!(json(5), json(6));
}

fn run_costs(src: &str, costs: &HostCosts) -> Results {
    let s = Scenario::from_toml(src, None).unwrap_or_else(|e| panic!("{e}\n{src}"));
    simulate_with_costs(&s, &config(&s, 1), &RunOptions::default(), Some(costs)).results
}

#[test]
fn a_reservation_pays_its_cache_reload_and_the_planner_view_also_its_overhead() {
    // a 2 ms job every 10 ms on a (500 us / 1 ms) reservation, exact enforcement: 4 periods
    // without costs (done at 3.5 ms)
    let vcpu = "[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\nruntime = \"500us\"\nperiod = \"1ms\"\n";
    let src = guest(vcpu, &[("t", "10ms", "2ms", "0ms", 1)]).replace("[sim]\n", "[sim]\nhrtick = true\n");
    let plain = run(&src, None);
    let max = |r: &Results| task(r, "t").response_ns.max;
    assert!((3_500 * US..=3_501 * US).contains(&max(&plain)), "{}", max(&plain));
    let model = only(r#""server_overhead_ns":60000,"cache_reload_ns":40000"#);
    // the kernel's accounting: each period starts on an idle core (the reservation was throttled),
    // which absorbs the 60 us overhead; the 40 us reload is the reservation's: 460 us of each
    // period is the guest's, 4 x 460 + 160 -> done at 4 ms + 40 + 160 us
    let kernel = run(&src, Some(&model));
    assert!((4_200 * US..=4_202 * US).contains(&max(&kernel)), "{}", max(&kernel));
    // the planner's accounting: 100 us per period out of the runtime, 400 us the guest's: done at 4.5 ms
    let planner = run_costs(&src, &HostCosts::of(&model).worst_case());
    assert!((4_500 * US..=4_502 * US).contains(&max(&planner)), "{}", max(&planner));
    // the reservation's CPU time is the same (its runtime), the guest's share of it smaller
    let cpu = |r: &Results| r.guests[0].cpu_time_ns;
    assert!(cpu(&kernel) >= cpu(&plain), "{} {}", cpu(&kernel), cpu(&plain));
}

#[test]
fn a_server_period_overhead_is_paid_by_the_thread_it_preempts() {
    // core 0: a FIFO guest's 8 ms job starting at 0, and a (100 us / 1 ms) reservation whose
    // guest has nothing to do after its first job: each of its periods interrupts the FIFO
    // vCPU, which pays the 50 us overhead (a reservation's first period starts at its wake-up).
    let fifo = "[guest.vcpu]\ncore = 0\npolicy = \"fifo\"\npriority = 10\n";
    let mut src = guest(fifo, &[("long", "100ms", "8ms", "0ms", 1)])
        .replace("[[guest]]\nname = \"g\"", "[[guest]]\nname = \"f\"");
    src += "[[guest]]\nname = \"d\"\nscheduler = \"fp\"\n[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\n\
            runtime = \"100us\"\nperiod = \"1ms\"\n[[guest.task]]\nname = \"tick\"\nperiod = \"1ms\"\n\
            wcet = \"20us\"\noffset = \"0ms\"\npriority = 1\n";
    let src = src.replace("[sim]\n", "[sim]\nhrtick = true\n");
    let plain = run(&src, None);
    let model = only(r#""server_overhead_ns":50000"#);
    let kernel = run(&src, Some(&model));
    let planner = run_costs(&src, &HostCosts::of(&model).worst_case());
    let long = |r: &Results| task(r, "long").response_ns.max;
    let tick = |r: &Results| task(r, "tick").response_ns.max;
    // the reservation's own job is not delayed by the overhead in the kernel's accounting...
    assert_eq!(tick(&kernel), tick(&plain));
    // ...its preempted neighbour pays one overhead per server period while it runs (8 or 9 of them)
    let paid = long(&kernel) - long(&plain);
    assert!((8 * 50 * US..=9 * 50 * US).contains(&paid), "{paid}");
    // in the planner's accounting the reservation pays: its job finishes 50 us later, and the
    // neighbour loses the same time through the reservation's longer runs (at most one overhead
    // apart: the first period may start on an idle core)
    assert_eq!(tick(&planner), tick(&plain) + 50 * US);
    assert!(long(&planner).abs_diff(long(&kernel)) <= 50 * US, "{} {}", long(&planner), long(&kernel));
}

#[test]
fn with_its_measured_distribution_each_period_overhead_is_a_draw_and_the_planner_still_charges_the_p99() {
    // the scenario above on a 1 s horizon: the FIFO neighbour runs a 400 ms job (one per second)
    // and pays each period's overhead of the (100 us / 1 ms) reservation while it runs
    let fifo = "[guest.vcpu]\ncore = 0\npolicy = \"fifo\"\npriority = 10\n";
    let mut src =
        guest(fifo, &[("long", "1s", "400ms", "0ms", 1)]).replace("[[guest]]\nname = \"g\"", "[[guest]]\nname = \"f\"");
    src += "[[guest]]\nname = \"d\"\nscheduler = \"fp\"\n[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\n\
            runtime = \"100us\"\nperiod = \"1ms\"\n[[guest.task]]\nname = \"tick\"\nperiod = \"1ms\"\n\
            wcet = \"20us\"\noffset = \"0ms\"\npriority = 1\n";
    let src = src.replace("[sim]\n", "[sim]\nhrtick = true\n");
    let measured = r#""measurements":[{"name":"server_overhead","method":"gaps","count":300,"p50_ns":20000,
        "p99_ns":50000,"max_ns":90000}]"#;
    let constant = only(r#""server_overhead_ns":50000"#);
    let drawn = only(&format!(r#""server_overhead_ns":50000,{measured}"#));
    let long = |r: &Results| task(r, "long").response_ns.max;
    let plain = long(&run(&src, None));
    // about 440 periods while the long job runs; drawn: mean 0.5 x 10 + 0.49 x 35 + 0.01 x 70 = 22.9 us
    let paid_constant = long(&run(&src, Some(&constant))) - plain;
    let paid_drawn = long(&run(&src, Some(&drawn))) - plain;
    let periods = paid_constant / (50 * US);
    assert!((400..=480).contains(&periods), "{paid_constant}");
    let mean = paid_drawn / periods;
    assert!((20 * US..=26 * US).contains(&mean), "mean draw {mean} ns over {periods} periods");
    // the planner's view is the same with or without the distribution: the p99 every period
    let planner = |m: &HostModel| run_costs(&src, &HostCosts::of(m).worst_case());
    assert_eq!(planner(&drawn).tasks, planner(&constant).tasks);
}

#[test]
fn server_periods_starting_together_are_one_interrupt_that_no_picked_thread_pays() {
    // two (200 us / 1 ms) reservations on an idle core whose guests release a 100 us job at the
    // same instants: their new periods start together, the thread picked then was not running
    // when they did, so nobody pays the overhead and each job ends as without it
    let dl = |name: &str| {
        format!(
            "[[guest]]\nname = \"{name}\"\nscheduler = \"fp\"\n[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\n\
             runtime = \"200us\"\nperiod = \"1ms\"\n[[guest.task]]\nname = \"t{name}\"\nperiod = \"10ms\"\n\
             wcet = \"100us\"\noffset = \"0ms\"\npriority = 1\n"
        )
    };
    let src = format!("[host]\ncores = 1\n[sim]\nrt_throttling = false\nhrtick = true\n{}{}", dl("a"), dl("b"));
    let plain = run(&src, None);
    let kernel = run(&src, Some(&only(r#""server_overhead_ns":50000"#)));
    let ends = |r: &Results| {
        let mut v = vec![task(r, "ta").response_ns.max, task(r, "tb").response_ns.max];
        v.sort_unstable();
        v
    };
    assert_eq!(ends(&plain), vec![100 * US, 200 * US]);
    assert_eq!(ends(&kernel), ends(&plain));
}

#[test]
fn a_preempted_job_reloads_its_cache_and_every_switch_costs() {
    // low (3 ms) preempted at 1 ms by high (1 ms): low ends at 4 ms, plus one reload, plus the
    // host model's switches (to high, back to low)
    let src = guest(FIFO, &[("low", "10ms", "3ms", "0ms", 1), ("high", "10ms", "1ms", "1ms", 2)]);
    let plain = run(&src, None);
    assert_eq!(task(&plain, "low").response_ns.max, 4 * MS);
    let reload = run(&src, Some(&only(r#""cache_reload_ns":50000"#)));
    assert_eq!(task(&reload, "low").response_ns.max, 4 * MS + 50 * US);
    assert_eq!(task(&reload, "high").response_ns.max, MS);
    let switches = run(&src, Some(&only(r#""cache_reload_ns":50000,"context_switch_ns":7000"#)));
    assert_eq!(task(&switches, "high").response_ns.max, MS + 7 * US);
    assert_eq!(task(&switches, "low").response_ns.max, 4 * MS + 50 * US + 14 * US);
    // a job preempted before it ran has nothing to reload
    let late = guest(FIFO, &[("low", "10ms", "3ms", "1ms", 1), ("high", "10ms", "1ms", "1ms", 2)]);
    let r = run(&late, Some(&only(r#""cache_reload_ns":50000"#)));
    assert_eq!(task(&r, "low").response_ns.max, 4 * MS);
}

#[test]
fn enforcement_from_the_model_lets_a_reservation_overrun_and_pay_back() {
    // a 2.5 ms job every 20 ms on a (1 ms / 2 ms) reservation. Exact enforcement: 1 ms per
    // period, done at 4.5 ms.
    let vcpu = "[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\nruntime = \"1ms\"\nperiod = \"2ms\"\n";
    let src = guest(vcpu, &[("t", "20ms", "2.5ms", "0ms", 1)]);
    let max = |r: &Results| task(r, "t").response_ns.max;
    assert_eq!(max(&run(&src, Some(&only("")))), 4_500 * US);
    // at a 4 ms tick the depletion at 1 ms is noticed at 4 ms: the job runs through, done at 2.5 ms
    // (the debt is dropped when the next job wakes the reservation after its deadline)
    let tick = run(&src, Some(&only(r#""enforcement":{"kind":"tick","overrun_max_ns":4000000}"#)));
    assert_eq!(max(&tick), 2_500 * US);
    assert!(tick.simulation.unwrap().host_costs.unwrap().contains("enforcement at a 4000000 ns tick"));
    // hrtick 300 us late: 1.3 ms in the first period, then 0.7 + 0.3 ms per period (the overrun
    // paid back from the next runtime): 1.3 + 1.0 by 3 ms, the last 0.2 ms by 4.2 ms
    let late = run(&src, Some(&only(r#""enforcement":{"kind":"hrtick","overrun_max_ns":300000}"#)));
    assert_eq!(max(&late), 4_200 * US);
}

/// At the tick the kernel notices a used-up runtime only when the reservation leaves the CPU
/// (blocks, or is preempted by an earlier deadline: `update_curr_dl` runs then) or at the tick:
/// a wake-up of a reservation with a later deadline does not stop the overrun.
#[test]
fn a_later_deadline_waking_does_not_stop_an_overrun_an_earlier_one_does() {
    let tick = only(r#""enforcement":{"kind":"tick","overrun_max_ns":4000000}"#);
    // "a": a 2.5 ms job every 20 ms on (1 ms / 2 ms); "b": a 100 us job every 20 ms, released at
    // 1.5 ms (a's depletion is at 1 ms), on a reservation of period `b_period`
    let two = |b_period: &str| {
        let a = guest(
            "[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\nruntime = \"1ms\"\nperiod = \"2ms\"\n",
            &[("t", "20ms", "2.5ms", "0ms", 1)],
        );
        let b = format!(
            "[[guest]]\nname = \"b\"\nscheduler = \"fp\"\n[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\n\
             runtime = \"100us\"\nperiod = \"{b_period}\"\n[[guest.task]]\nname = \"u\"\nperiod = \"20ms\"\n\
             wcet = \"100us\"\noffset = \"1500us\"\npriority = 1\n"
        );
        run(&(a + &b), Some(&tick))
    };
    // b's deadline (1.5 + 10 ms) is after a's (2 ms): a runs through its overrun, done at 2.5 ms
    let later = two("10ms");
    assert_eq!(task(&later, "t").response_ns.max, 2_500 * US);
    // b's deadline (1.5 + 0.2 ms) is before a's: b preempts a at 1.5 ms and a, depleted by 0.5 ms,
    // is throttled then; at 2 ms it gets 1 - 0.5 ms and, unnoticed until the 4 ms tick, runs its
    // last 1 ms through: done at 3 ms
    let earlier = two("200us");
    assert_eq!(task(&earlier, "t").response_ns.max, 3_000 * US);
}

/// Where the ticks fall after the release (`[sim] tick_phase`) decides how long an overrun lasts
/// and so whether the job finishes in it or waits throttled for the next period.
#[test]
fn the_ticks_phase_decides_whether_an_overrun_finishes_the_job() {
    // a 2.5 ms job every 20 ms on a (1 ms / 8 ms) reservation, depleted at 1 ms, a 4 ms tick
    let vcpu = "[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\nruntime = \"1ms\"\nperiod = \"8ms\"\n";
    let tick = only(r#""enforcement":{"kind":"tick","overrun_max_ns":4000000}"#);
    let at = |phase: &str| {
        let src = guest(vcpu, &[("t", "20ms", "2.5ms", "0ms", 1)])
            .replace("[sim]\n", &format!("[sim]\ntick_phase = \"{phase}\"\n"));
        task(&run(&src, Some(&tick)), "t").response_ns.max
    };
    // ticks at 0, 4 ms: the depletion is noticed at 4 ms, after the job ended at 2.5 ms
    assert_eq!(at("0ns"), 2_500 * US);
    // ticks at 1.5 ms: 0.5 ms of overrun, then throttled with 1 ms left until the period at 8 ms,
    // whose runtime (1 - 0.5 ms of debt) is noticed at the 9.5 ms tick: 0.5 + 0.5 ms more by 9 ms
    assert_eq!(at("1500us"), 9 * MS);
    // ticks at 3 ms: 2 ms of overrun runs the job through by 2.5 ms as well
    assert_eq!(at("3ms"), 2_500 * US);
    // the phase the overrides give wins over the scenario's
    let src = guest(vcpu, &[("t", "20ms", "2.5ms", "0ms", 1)]);
    let s = Scenario::from_toml(&src, None).unwrap();
    let overrides =
        Overrides { duration: Some(Nanos::from_secs(1)), seed: Some(1), tick_phase: Some(Nanos::from_us(1500)) };
    let cfg = SimConfig::new(&s, None, overrides).unwrap();
    let r = simulate_with_host_model(&s, &cfg, &RunOptions::default(), Some(&tick)).results;
    assert_eq!(task(&r, "t").response_ns.max, 9 * MS);
    // a phase no tick has is refused, located
    let bad = src.replace("[sim]\n", "[sim]\ntick_phase = \"150ms\"\n");
    let e = Scenario::from_toml(&bad, None).unwrap_err();
    assert_eq!(e.at.field.as_deref(), Some("sim.tick_phase"), "{e}");
    assert!(e.to_string().contains("expected less than 100ms"), "{e}");
}
