//! Host policies and guest options on small scenarios whose outcome is known exactly or by a
//! simple bound: CPU shares, preemption order, throttling, servers, idle modes, costs.

use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_sim::{simulate, Overrides, RunOptions, SimConfig};

fn run(src: &str, secs: u64) -> Results {
    let s = Scenario::from_toml(src, None).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let cfg = SimConfig::new(
        &s,
        None,
        Overrides { duration: Some(rtvirt_model::Nanos::from_secs(secs)), seed: Some(1), ..Default::default() },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = simulate(&s, &cfg, &RunOptions::default()).results;
    // No event storms (e.g. a 1 ns timer loop): a handful of events per job and per ms.
    let jobs: u64 = r.tasks.iter().map(|t| t.jobs).sum();
    let events = r.simulation.as_ref().unwrap().events.unwrap();
    assert!(events <= 10 * (jobs + secs * 1000), "{events} events for {jobs} jobs in {secs}s");
    r
}

fn thread_util(r: &Results, name: &str) -> f64 {
    let threads = r.simulation.as_ref().unwrap().threads.as_ref().unwrap();
    threads.iter().find(|t| t.name == name).unwrap().utilisation
}

fn hogs(sim: &str, a: &str, b: &str) -> String {
    format!(
        "[host]\ncores = 1\n[sim]\n{sim}\n[[sim.thread]]\nname = \"a\"\nbusy = true\nsched = {{ core = 0, {a} }}\n\
         [[sim.thread]]\nname = \"b\"\nbusy = true\nsched = {{ core = 0, {b} }}\n"
    )
}

fn close(x: f64, want: f64, tol: f64) -> bool {
    (x - want).abs() <= tol
}

#[test]
fn fifo_starves_lower_priority_except_for_rt_throttling() {
    let r =
        run(&hogs("rt_throttling = false", "policy = \"fifo\", priority = 10", "policy = \"fifo\", priority = 20"), 2);
    assert_eq!(thread_util(&r, "a"), 0.0);
    assert_eq!(thread_util(&r, "b"), 1.0);
    // Throttling leaves 50 ms of every second to non-RT threads.
    let r = run(&hogs("", "policy = \"other\"", "policy = \"fifo\", priority = 20"), 4);
    assert!(close(thread_util(&r, "b"), 0.95, 1e-9), "{}", thread_util(&r, "b"));
    assert!(close(thread_util(&r, "a"), 0.05, 1e-9));
}

#[test]
fn rr_shares_equally_and_fifo_does_not() {
    let r = run(
        &hogs(
            "rt_throttling = false",
            "policy = \"rr\", priority = 10, quantum = \"10ms\"",
            "policy = \"rr\", priority = 10, quantum = \"10ms\"",
        ),
        2,
    );
    assert!(close(thread_util(&r, "a"), 0.5, 0.006), "{}", thread_util(&r, "a"));
    let r =
        run(&hogs("rt_throttling = false", "policy = \"fifo\", priority = 10", "policy = \"fifo\", priority = 10"), 2);
    assert_eq!(thread_util(&r, "a"), 1.0, "FIFO: the first runnable keeps the CPU");
}

#[test]
fn other_shares_by_nice_weight() {
    // nice 0 = 1024, nice 5 = 335: shares 0.7535 / 0.2465
    let r = run(&hogs("", "policy = \"other\"", "policy = \"other\", nice = 5"), 4);
    assert!(close(thread_util(&r, "a"), 1024.0 / 1359.0, 0.01), "{}", thread_util(&r, "a"));
    assert!(close(thread_util(&r, "a") + thread_util(&r, "b"), 1.0, 1e-9));
}

#[test]
fn credit_shares_by_weight() {
    let r = run(&hogs("", "policy = \"credit\", weight = 256", "policy = \"credit\", weight = 768"), 6);
    assert!(close(thread_util(&r, "b"), 0.75, 0.03), "{}", thread_util(&r, "b"));
}

#[test]
fn deadline_reservation_gets_its_bandwidth_above_fifo() {
    let r = run(
        &hogs(
            "rt_throttling = false\nhrtick = true",
            "policy = \"fifo\", priority = 99",
            "policy = \"deadline\", runtime = \"3ms\", period = \"10ms\"",
        ),
        2,
    );
    assert!(close(thread_util(&r, "b"), 0.3, 1e-6), "{}", thread_util(&r, "b"));
    // Tick enforcement at HZ = 250 overruns a 3 ms budget to the 4 ms tick, then pays it back:
    // same long-run bandwidth.
    let r = run(
        &hogs(
            "rt_throttling = false\nhz = 250",
            "policy = \"fifo\", priority = 99",
            "policy = \"deadline\", runtime = \"3ms\", period = \"10ms\"",
        ),
        2,
    );
    assert!(close(thread_util(&r, "b"), 0.3, 0.005), "{}", thread_util(&r, "b"));
}

fn guests(host: &str, a_vcpu: &str, b_vcpu: &str, task: &str) -> String {
    format!(
        "{host}\n[[guest]]\nname = \"a\"\nscheduler = \"edf\"\n[guest.vcpu]\n{a_vcpu}\n[[guest.task]]\n{task}\n\
         [[guest]]\nname = \"b\"\nscheduler = \"edf\"\n[guest.vcpu]\n{b_vcpu}\n[[guest.task]]\n{task}\n"
    )
}

#[test]
fn deferrable_and_periodic_servers_differ_on_late_work() {
    // Task of 2 ms released at 5 ms in every 10 ms. A deferrable server (budget 2 ms / 10 ms)
    // kept its budget: response 2 ms. A periodic server idled its budget away at the start of
    // the period: the job waits for the next period (10 ms) and completes at 12 ms: response 7 ms.
    let task = "name = \"t\"\nperiod = \"10ms\"\nwcet = \"2ms\"\noffset = \"5ms\"";
    let src = guests(
        "[host]\ncores = 2",
        "core = 0\npolicy = \"ds\"\npriority = 1\nbudget = \"2ms\"\nperiod = \"10ms\"",
        "core = 1\npolicy = \"ps\"\npriority = 1\nbudget = \"2ms\"\nperiod = \"10ms\"",
        task,
    );
    let r = run(&src, 1);
    assert_eq!(r.tasks[0].response_ns.max, 2_000_000);
    assert_eq!(r.tasks[1].response_ns.max, 7_000_000);
    assert_eq!(r.tasks[1].response_ns.min, 7_000_000);
}

#[test]
fn rtds_global_uses_both_cores_and_extratime_uses_idle_time() {
    let task = "name = \"t\"\nperiod = \"10ms\"\nwcet = \"4ms\"";
    let src = guests(
        "[host]\ncores = 2",
        "cores = [0, 1]\npolicy = \"rtds\"\nbudget = \"4ms\"\nperiod = \"10ms\"",
        "cores = [0, 1]\npolicy = \"rtds\"\nbudget = \"4ms\"\nperiod = \"10ms\"",
        task,
    );
    let r = run(&src, 1);
    // Both run in parallel from every release: response = execution time.
    assert!(r.tasks.iter().all(|t| t.response_ns.max == 4_000_000 && t.misses == 0));
    // 6 ms of work per 10 ms with a 4 ms budget: misses without extratime, none with it.
    let task = "name = \"t\"\nperiod = \"10ms\"\nwcet = \"6ms\"";
    let src = guests(
        "[host]\ncores = 2",
        "core = 0\npolicy = \"rtds\"\nbudget = \"4ms\"\nperiod = \"10ms\"",
        "core = 1\npolicy = \"rtds\"\nbudget = \"4ms\"\nperiod = \"10ms\"\nextratime = true",
        task,
    );
    let r = run(&src, 1);
    assert!(r.tasks[0].misses > 0);
    assert_eq!(r.tasks[1].misses, 0);
    assert_eq!(r.tasks[1].response_ns.max, 6_000_000);
}

#[test]
fn busy_polling_vcpu_burns_its_cpu_and_halting_one_does_not() {
    let task = "name = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"";
    let src = guests(
        "[host]\ncores = 2\n[sim]\nrt_throttling = false",
        "core = 0\npolicy = \"fifo\"\npriority = 10",
        "core = 1\npolicy = \"fifo\"\npriority = 10\nidle = \"poll\"",
        task,
    );
    let r = run(&src, 1);
    assert!(close(r.guests[0].utilisation, 0.1, 1e-9));
    assert!(close(r.guests[1].utilisation, 1.0, 1e-9));
    assert_eq!(r.tasks[0].response_ns.max, r.tasks[1].response_ns.max);
}

#[test]
fn context_switch_costs_add_to_response_times() {
    // Guest: hi (1 ms every 10 ms from 1 ms) preempts lo (5 ms every 20 ms).
    let src = "[host]\ncores = 1\n[sim]\nvcpu_switch = \"100us\"\n[[guest]]\nname = \"g\"\nscheduler = \"fp\"\n\
               [guest.vcpu]\npolicy = \"fifo\"\npriority = 10\ncontext_switch = \"50us\"\n[[guest.task]]\nname = \
               \"hi\"\npriority = 2\nperiod = \"10ms\"\nwcet = \"1ms\"\noffset = \"1ms\"\n[[guest.task]]\nname = \
               \"lo\"\npriority = 1\nperiod = \"20ms\"\nwcet = \"5ms\"\n[[sim.thread]]\nname = \"n\"\nperiod = \
               \"20ms\"\nrun = \"1us\"\noffset = \"15ms\"\nsched = { core = 0, policy = \"fifo\", priority = 99 }\n";
    let r = run(src, 1);
    let hi = &r.tasks[0];
    let lo = &r.tasks[1];
    // hi preempts lo at 1 ms: pays one guest switch (50us) -> 1.05 ms.
    assert_eq!(hi.response_ns.max, 1_050_000, "{:?}", hi.response_ns);
    // lo's first job: 5 ms + hi 1 ms + two guest switches (to hi and back) + the host vCPU
    // switch of the first dispatch (from idle) = 6.2 ms. Later jobs also pay a guest switch at
    // their start (hi ran last) and a vCPU switch (the noise thread ran in between): 6.25 ms.
    assert_eq!(lo.response_ns.min, 6_200_000, "{:?}", lo.response_ns);
    assert_eq!(lo.response_ns.max, 6_250_000, "{:?}", lo.response_ns);
}

#[test]
fn abort_policy_drops_late_jobs() {
    let task = "name = \"t\"\nperiod = \"10ms\"\nwcet = \"4ms\"";
    let base = "[host]\ncores = 1\n[sim]\nrt_throttling = false\n";
    let cont = run(
        &guests(
            base,
            "policy = \"fifo\"\npriority = 10",
            "policy = \"fifo\"\npriority = 5",
            &task.replace("4ms", "6ms"),
        ),
        1,
    );
    let abort = run(
        &guests(
            &format!("{base}miss_policy = \"abort\"\n"),
            "policy = \"fifo\"\npriority = 10",
            "policy = \"fifo\"\npriority = 5",
            &task.replace("4ms", "6ms"),
        ),
        1,
    );
    // b gets 4 ms per 10 ms for 6 ms jobs: continue = backlog grows, every job late;
    // abort = each job dropped at its deadline.
    assert_eq!(cont.tasks[1].dsr, 0.0);
    assert_eq!(abort.tasks[1].misses, abort.tasks[1].jobs);
    assert_eq!(abort.tasks[1].response_ns.count, 0);
    assert!(cont.tasks[1].response_ns.max > 100_000_000, "backlog grows: {:?}", cont.tasks[1].response_ns);
}

#[test]
fn other_wakeup_waits_at_most_about_a_shared_slice() {
    // A nice-0 vCPU with 1 ms jobs next to a nice-0 CPU hog: CFS gives each a 3 ms slice when both
    // are runnable, so a job waits at most ~3 ms for the hog's slice (not the 6 ms it got alone).
    let src = "[host]\ncores = 1\n[[sim.thread]]\nname = \"hog\"\nbusy = true\nsched = { core = 0, policy = \"other\" \
               }\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n[guest.vcpu]\ncore = 0\n[[guest.task]]\nname = \"t\"\n\
               period = \"10ms\"\nwcet = \"1ms\"\n";
    let r = run(src, 2);
    let t = &r.tasks[0];
    assert_eq!(t.misses, 0);
    assert!(t.response_ns.max <= 4_000_000, "{:?}", t.response_ns);
    assert!(close(r.guests[0].utilisation, 0.1, 1e-9));
}

#[test]
fn credit_boost_lets_a_waking_vcpu_preempt_a_hog_unless_the_rate_limit_holds_it() {
    // A light vCPU (t1 0.5 ms at 12 ms, t2 0.1 ms at 12.8 ms, every 10 ms) next to a CPU hog,
    // both weight 256. It wakes UNDER, so BOOST puts it ahead of the hog at once (not after the
    // hog's 30 ms slice). With a 1 ms rate limit, the hog dispatched at 12.5 ms keeps the core
    // until 13.5 ms: t2 waits 0.7 ms. Releases start after the first 10 ms tick (the hog, woken
    // at 0 with credit 0, is itself BOOSTed until that tick, as in credit1) and stay off the
    // tick (a vCPU found running at every tick is debited 10 ms each time and goes OVER).
    let src = |sim: &str| {
        format!(
            "[host]\ncores = 1\n[sim]\n{sim}\n[[sim.thread]]\nname = \"hog\"\nbusy = true\nsched = {{ core = 0, policy \
             = \"credit\" }}\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n[guest.vcpu]\ncore = 0\npolicy = \
             \"credit\"\n[[guest.task]]\nname = \"t1\"\nperiod = \"10ms\"\nwcet = \"500us\"\noffset = \"12ms\"\n\
             [[guest.task]]\nname = \"t2\"\nperiod = \"10ms\"\nwcet = \"100us\"\noffset = \"12800us\"\n"
        )
    };
    let r = run(&src(""), 2);
    assert_eq!(r.tasks[0].response_ns.max, 500_000, "{:?}", r.tasks[0].response_ns);
    assert_eq!(r.tasks[1].response_ns.max, 100_000, "{:?}", r.tasks[1].response_ns);
    assert!(close(r.guests[0].utilisation, 0.06, 0.001), "{}", r.guests[0].utilisation);
    let r = run(&src("credit_ratelimit = \"1ms\""), 2);
    assert_eq!(r.tasks[0].response_ns.max, 500_000, "{:?}", r.tasks[0].response_ns);
    assert_eq!(r.tasks[1].response_ns.max, 800_000, "{:?}", r.tasks[1].response_ns);
}

#[test]
fn guest_slowdown_stretches_every_job_and_can_be_set_per_guest() {
    // one task, constant 1 ms, alone on its own core at FIFO: the response time is the job's
    // execution time in the guest, exactly (1 + slowdown) ms
    let guest = |name: &str, core: u32, extra: &str| {
        format!(
            "[[guest]]\nname = \"{name}\"\nscheduler = \"edf\"\n[guest.vcpu]\ncore = {core}\npolicy = \"fifo\"\n\
             priority = 50\n{extra}\n[[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n"
        )
    };
    let src = format!(
        "[host]\ncores = 2\n[sim]\nguest_slowdown = 0.25\n{}{}",
        guest("default", 0, ""),
        guest("own", 1, "slowdown = 0.5")
    );
    let r = run(&src, 1);
    let max = |g: &str| r.tasks.iter().find(|t| t.guest == g).unwrap().response_ns.max;
    assert_eq!(max("default"), 1_250_000);
    assert_eq!(max("own"), 1_500_000);
    // a guest on a shared core may now miss: 10 jobs of 6 ms in 10 ms need 12 ms at slowdown 1
    let src = format!("[host]\ncores = 1\n[sim]\nguest_slowdown = 1.0\n{}", guest("g", 0, "").replace("1ms", "6ms"));
    let r = run(&src, 1);
    assert!(r.tasks[0].misses > 0);
}

#[test]
fn guest_slowdown_out_of_range_is_a_named_error() {
    for (sim, vcpu, field) in
        [("guest_slowdown = -0.1", "", "sim.guest_slowdown"), ("", "slowdown = 11.0", "guest[0].vcpu.slowdown")]
    {
        let src = format!(
            "[host]\ncores = 1\n[sim]\n{sim}\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\n[guest.vcpu]\n{vcpu}\n\
             [[guest.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n"
        );
        let e = Scenario::from_toml(&src, None).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
        assert!(e.to_string().contains("expected a fraction"), "{e}");
    }
}
