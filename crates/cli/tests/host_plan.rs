//! `rtvirt host apply PLAN.json` / `revert` on real processes: SCHED_DEADLINE in a cpuset
//! partition, verified with sched_getattr, chrt and /proc; revert bit for bit; a crash at every
//! step; bad inputs change nothing.

mod host_support;

use host_support::*;
use rtvirt_os::sched::{self, SCHED_DEADLINE};

#[test]
fn plan_applies_deadline_in_a_partition_and_reverts_bit_for_bit() {
    let _g = serial();
    let (a, b) = (Sleeper::start(), Sleeper::start());
    let core = last_cpu();
    let files = PlanFiles::new(&[
        ("g1", 1_000_000, 10_000_000, 10_000_000, core),
        ("g2", 2_000_000, 15_000_000, 20_000_000, core),
    ]);
    let (plan, state) = (files.plan.clone(), files.state.clone());
    let state_s = state.to_str().unwrap();
    let before = snapshot(&[a.pid(), b.pid()]);

    let (ga, gb) = (format!("g1={}", a.pid()), format!("g2={}", b.pid()));
    let o = run(apply(&plan, &state).args(["--pid", &ga, "--pid", &gb]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = sched::get(a.pid()).unwrap();
    assert_eq!(
        (s.policy, s.runtime_ns, s.deadline_ns, s.period_ns),
        (SCHED_DEADLINE, 1_000_000, 10_000_000, 10_000_000)
    );
    let s = sched::get(b.pid()).unwrap();
    assert_eq!(
        (s.policy, s.runtime_ns, s.deadline_ns, s.period_ns),
        (SCHED_DEADLINE, 2_000_000, 15_000_000, 20_000_000)
    );
    assert!(
        chrt(a.pid()).contains("SCHED_DEADLINE") && chrt(a.pid()).contains("1000000/10000000/10000000"),
        "{}",
        chrt(a.pid())
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", a.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Cpus_allowed_list:") && l.split_whitespace().nth(1) == Some(&core.to_string())),
        "{status}"
    );
    let cg = std::fs::read_to_string(format!("/proc/{}/cgroup", a.pid())).unwrap();
    assert!(cg.contains(&format!("rtvirt-core{core}")), "{cg}");

    // applying twice is harmless: nothing changes, revert still restores the original
    let o = run(apply(&plan, &state).args(["--pid", &ga, "--pid", &gb, "--format", "json"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["changes"].as_array().unwrap().len(), 0, "{report}");

    let o = run(rtvirt(&["host", "revert", "--state-dir", state_s]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(snapshot(&[a.pid(), b.pid()]), before);
    assert!(!journal_exists(&state));
}

#[test]
fn a_crash_at_every_step_is_completed_by_revert() {
    let _g = serial();
    let a = Sleeper::start();
    let core = last_cpu();
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "plan.json", &plan_json(&[("g1", 1_000_000, 10_000_000, 10_000_000, core)]));
    let before = snapshot(&[a.pid()]);
    let ga = format!("g1={}", a.pid());
    // Count the steps of a complete apply.
    let state = dir.path().join("count");
    let _revert_state = RevertGuard(state.clone());
    let o = run(apply(&plan, &state).args(["--pid", &ga]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let steps = journal_len(&state);
    assert!(steps >= 4, "partition, load balance, affinity, move, sched: {steps}");
    assert_eq!(run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()])).status.code(), Some(0));
    assert_eq!(snapshot(&[a.pid()]), before);

    for n in 1..=steps {
        let state = dir.path().join(format!("crash{n}"));
        let _revert_state = RevertGuard(state.clone());
        let o = run(apply(&plan, &state).args(["--pid", &ga]).env("RTVIRT_TEST_CRASH_AFTER", n.to_string()));
        assert_eq!(o.status.code(), None, "killed by the hook at step {n}: {}", text(&o));
        assert_eq!(journal_len(&state), n, "the journal holds every step up to the crash");
        let o = run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()]));
        assert_eq!(o.status.code(), Some(0), "step {n}: {}", text(&o));
        assert_eq!(snapshot(&[a.pid()]), before, "after a crash at step {n} and revert");
    }
}

#[test]
fn kernel_refusal_halfway_rolls_back_and_explains() {
    let _g = serial();
    let (a, b) = (Sleeper::start(), Sleeper::start());
    let core = last_cpu();
    // g2's runtime is below the kernel's 1024 ns minimum: sched_setattr fails with EINVAL after
    // g1 was fully applied.
    let files =
        PlanFiles::new(&[("g1", 1_000_000, 10_000_000, 10_000_000, core), ("g2", 500, 10_000_000, 10_000_000, core)]);
    let (plan, state) = (files.plan.clone(), files.state.clone());
    let before = snapshot(&[a.pid(), b.pid()]);
    let o = run(apply(&plan, &state).args(["--pid", &format!("g1={}", a.pid()), "--pid", &format!("g2={}", b.pid())]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("EINVAL") && err.contains("runtime <= deadline") && err.contains("rolled back"), "{err}");
    assert_eq!(snapshot(&[a.pid(), b.pid()]), before);
    assert!(!journal_exists(&state));
}

#[test]
fn bad_inputs_exit_2_and_change_nothing() {
    let _g = serial();
    let (a, other) = (Sleeper::start(), Sleeper::start());
    let core = last_cpu();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _revert_state = RevertGuard(state.clone());
    let state_s = state.to_str().unwrap();
    let good = write(dir.path(), "good.json", &plan_json(&[("g1", 1_000_000, 10_000_000, 10_000_000, core)]));
    let before = snapshot(&[a.pid(), other.pid()]);
    let ga = format!("g1={}", a.pid());

    let stale = {
        let mut s = Sleeper::start();
        let pid = s.pid();
        let _ = s.0.kill();
        let _ = s.0.wait();
        pid
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![good.display().to_string(), "--pid".into(), format!("g1={stale}")], "does not exist"),
        (
            vec![good.display().to_string(), "--vm".into(), format!("g1={}/missing.qmp", dir.path().display())],
            "no such socket",
        ),
        (vec![good.display().to_string(), "--pid".into(), format!("nosuch={}", a.pid())], "not in the plan"),
        (
            vec![
                write(dir.path(), "far.json", &plan_json(&[("g1", 1_000_000, 10_000_000, 10_000_000, 999)]))
                    .display()
                    .to_string(),
                "--pid".into(),
                ga.clone(),
            ],
            "does not fit this host's cores",
        ),
        (
            vec![
                write(dir.path(), "full.json", &plan_json(&[("g1", 9_900_000, 10_000_000, 10_000_000, core)]))
                    .display()
                    .to_string(),
                "--pid".into(),
                ga.clone(),
            ],
            "does not fit core",
        ),
        (
            vec![
                write(
                    dir.path(),
                    "infeasible.json",
                    &plan_json(&[("g1", 1_000_000, 10_000_000, 10_000_000, core)])
                        .replace("\"feasible\":true", "\"feasible\":false"),
                )
                .display()
                .to_string(),
                "--pid".into(),
                ga.clone(),
            ],
            "not feasible",
        ),
        (
            vec![
                write(dir.path(), "broken.json", "{\"schema\":\"rtvirt.plan/v1\",\"feasible\":3}")
                    .display()
                    .to_string(),
                "--pid".into(),
                ga.clone(),
            ],
            "broken.json",
        ),
        (vec![good.display().to_string(), "--pid".into(), "g1=abc".into()], "not a thread id"),
        // bandwidth 0.1 passes the kernel's cap, but both need 5 ms within the same 5 ms window
        (
            vec![
                write(
                    dir.path(),
                    "dense.json",
                    &plan_json(&[
                        ("g1", 5_000_000, 5_000_000, 100_000_000, core),
                        ("g2", 5_000_000, 5_000_000, 100_000_000, core),
                    ]),
                )
                .display()
                .to_string(),
                "--pid".into(),
                ga.clone(),
                "--pid".into(),
                format!("g2={}", other.pid()),
            ],
            "exact EDF demand test",
        ),
        (vec![good.display().to_string()], "no guest to apply"),
    ];
    for (args, msg) in cases {
        let mut c = rtvirt(&["host", "apply", "--state-dir", state_s]);
        c.args(&args);
        let o = run(&mut c);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(msg), "{args:?} should say {msg:?}: {}", text(&o));
        assert_eq!(snapshot(&[a.pid(), other.pid()]), before, "{args:?} changed nothing");
        assert!(!journal_exists(&state));
    }
    // dry run: lint and list, change nothing
    let o = run(rtvirt(&["host", "apply", "--state-dir", state_s, "--dry-run", good.to_str().unwrap(), "--pid", &ga]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Would change"), "{}", text(&o));
    assert_eq!(snapshot(&[a.pid(), other.pid()]), before);
    // revert with nothing journaled is fine
    assert_eq!(run(rtvirt(&["host", "revert", "--state-dir", state_s])).status.code(), Some(0));
}

#[test]
fn without_permission_the_kernels_answer_is_explained_and_nothing_changes() {
    let _g = serial();
    let a = Sleeper::start();
    let files = PlanFiles::new(&[("g1", 1_000_000, 10_000_000, 10_000_000, last_cpu())]);
    let (plan, state) = (files.plan.clone(), files.state.clone());
    std::fs::create_dir(&state).unwrap();
    // a state directory of nobody's own (one others may write is not trusted)
    std::fs::set_permissions(files.dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    let before = snapshot(&[a.pid()]);
    let o = run(std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_rtvirt"), "host", "apply"])
        .arg(&plan)
        .args(["--state-dir", state.to_str().unwrap(), "--pid", &format!("g1={}", a.pid())]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("permission denied") && err.contains("root"), "{err}");
    assert_eq!(snapshot(&[a.pid()]), before);
    assert!(!journal_exists(&state));
}

#[test]
fn the_plan_of_rtvirt_plan_applies_end_to_end() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = run(rtvirt(&["plan", "--format", "json"]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan_path = write(dir.path(), "plan.json", &String::from_utf8(o.stdout).unwrap());
    let plan = rtvirt_model::plan::Plan::from_file(&plan_path).unwrap();
    let online = rtvirt_os::sysinfo::online_cpus();
    let fits = plan.guests.iter().all(|g| g.core.is_some_and(|c| online.contains(c)));
    rtvirt_testkit::skip_unless!(fits, "the default plan uses cores this host does not have");
    let procs: Vec<Sleeper> = plan.guests.iter().map(|_| Sleeper::start()).collect();
    let tids: Vec<u32> = procs.iter().map(Sleeper::pid).collect();
    let before = snapshot(&tids);
    let state = dir.path().join("state");
    let _revert_state = RevertGuard(state.clone());
    let mut c = rtvirt(&["host", "apply", plan_path.to_str().unwrap(), "--state-dir", state.to_str().unwrap()]);
    for (g, p) in plan.guests.iter().zip(&procs) {
        c.args(["--pid", &format!("{}={}", g.name, p.pid())]);
    }
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for (g, p) in plan.guests.iter().zip(&procs) {
        let s = sched::get(p.pid()).unwrap();
        assert_eq!(
            (s.policy, s.runtime_ns, s.deadline_ns, s.period_ns),
            (SCHED_DEADLINE, g.budget_ns, g.deadline_ns, g.period_ns),
            "{}",
            g.name
        );
        assert_eq!(sched::get_affinity(p.pid()).unwrap(), cpus(&g.core.unwrap().to_string()));
    }
    assert_eq!(run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()])).status.code(), Some(0));
    assert_eq!(snapshot(&tids), before);
}

#[test]
fn deadline_threads_already_on_the_core_count_in_the_admission() {
    let _g = serial();
    let (a, b) = (Sleeper::start(), Sleeper::start());
    let core = last_cpu();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _revert_state = RevertGuard(state.clone());
    let st = state.to_str().unwrap();
    let before = snapshot(&[a.pid(), b.pid()]);
    let big = write(dir.path(), "big.json", &plan_json(&[("g0", 8_000_000, 10_000_000, 10_000_000, core)]));
    let o =
        run(rtvirt(&["host", "apply", big.to_str().unwrap(), "--state-dir", st, "--pid", &format!("g0={}", a.pid())]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // a second plan that alone fits, but not next to the 80% already reserved on the core
    let more = write(dir.path(), "more.json", &plan_json(&[("g1", 2_000_000, 10_000_000, 10_000_000, core)]));
    let o =
        run(rtvirt(&["host", "apply", more.to_str().unwrap(), "--state-dir", st, "--pid", &format!("g1={}", b.pid())]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("existing thread {}", a.pid())) && err.contains("does not fit core"), "{err}");
    assert_eq!(sched::get(b.pid()).unwrap().policy, 0, "g1 untouched");
    assert_eq!(sched::get(a.pid()).unwrap().policy, SCHED_DEADLINE, "the earlier apply stays");
    assert_eq!(run(rtvirt(&["host", "revert", "--state-dir", st])).status.code(), Some(0));
    assert_eq!(snapshot(&[a.pid(), b.pid()]), before);
}

/// Another tool's exclusive cpuset on a CPU, removed on drop.
struct ForeignExclusive(std::path::PathBuf);

impl Drop for ForeignExclusive {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The cgroup v1 cpuset hierarchy, or None (the caller's test is skipped, and says so).
fn v1_cpuset_base() -> Option<std::path::PathBuf> {
    match rtvirt_os::cgroup::Hierarchy::find("cpuset") {
        Some(rtvirt_os::cgroup::Hierarchy::V1(base)) => Some(base),
        _ => None,
    }
}

impl ForeignExclusive {
    /// An exclusive cpuset named `name` on `cpu` in the v1 hierarchy at `base`.
    fn create(base: &std::path::Path, name: &str, cpu: u32) -> ForeignExclusive {
        let f = ForeignExclusive(base.join(format!("{name}-{}", std::process::id())));
        std::fs::create_dir(&f.0).unwrap();
        std::fs::write(f.0.join("cpuset.cpus"), cpu.to_string()).unwrap();
        std::fs::write(f.0.join("cpuset.mems"), std::fs::read_to_string(base.join("cpuset.mems")).unwrap().trim())
            .unwrap();
        std::fs::write(f.0.join("cpuset.cpu_exclusive"), "1").unwrap();
        f
    }
}

/// The root's sched_load_balance goes back to exactly what it was, whether another tool's
/// exclusive cpuset existed before the apply (no warning) or was created after it (a warning).
#[test]
fn revert_restores_load_balancing_exactly_next_to_another_tools_partition() {
    let _g = serial();
    let base = v1_cpuset_base();
    rtvirt_testkit::skip_unless!(base.is_some(), "needs the cgroup v1 cpuset hierarchy");
    let base = base.unwrap();
    let core = last_cpu();
    rtvirt_testkit::skip_unless!(core > 0, "needs two CPUs");
    let a = Sleeper::start();
    let files = PlanFiles::new(&[("g1", 1_000_000, 10_000_000, 10_000_000, core)]);
    let (plan, state) = (files.plan.clone(), files.state.clone());
    let apply_plan = || run(apply(&plan, &state).args(["--pid", &format!("g1={}", a.pid())]));
    let revert = || run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap(), "--format", "json"]));
    let lb = || std::fs::read_to_string(base.join("cpuset.sched_load_balance")).unwrap().trim().to_string();

    // another tool's partition on CPU 0 from before the apply
    let earlier = ForeignExclusive::create(&base, "hosttest-earlier", 0);
    let before = snapshot(&[a.pid()]);
    let lb_before = lb();
    let o = apply_plan();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(lb(), "0");
    let o = revert();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["warnings"].as_array().unwrap().len(), 0, "{r}");
    assert_eq!(
        (lb(), snapshot(&[a.pid()])),
        (lb_before.clone(), before.clone()),
        "restored exactly although an exclusive cpuset exists"
    );
    drop(earlier);

    // another tool's partition created after the apply: restored exactly, and said so
    let o = apply_plan();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let later = ForeignExclusive::create(&base, "hosttest-later", 0);
    let o = revert();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = r["warnings"].as_array().unwrap();
    if lb_before != "0" {
        assert!(w.len() == 1 && w[0].as_str().unwrap().contains("hosttest-later"), "{r}");
    }
    assert_eq!((lb(), snapshot(&[a.pid()])), (lb_before, before));
    drop(later);
}

#[test]
fn a_cpu_held_by_another_exclusive_cpuset_is_explained_and_rolled_back() {
    let _g = serial();
    let base = v1_cpuset_base();
    rtvirt_testkit::skip_unless!(base.is_some(), "needs the cgroup v1 cpuset hierarchy");
    let base = base.unwrap();
    let core = last_cpu();
    let _foreign = ForeignExclusive::create(&base, "hosttest-foreign", core);
    let a = Sleeper::start();
    let files = PlanFiles::new(&[("g1", 1_000_000, 10_000_000, 10_000_000, core)]);
    let (plan, state) = (files.plan.clone(), files.state.clone());
    let before = snapshot(&[a.pid()]);
    let o = run(rtvirt(&[
        "host",
        "apply",
        plan.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
        "--pid",
        &format!("g1={}", a.pid()),
    ]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("already held by another exclusive cpuset") && err.contains("rolled back"), "{err}");
    assert_eq!(snapshot(&[a.pid()]), before);
    assert!(!journal_exists(&state));
}

/// Linux >= 6.12 reserves each CPU's fair server bandwidth (default 50 ms/1 s) in the same
/// per-CPU deadline budget as the reservations: 0.92 + 0.05 exceeds the default cap of 0.95,
/// which the kernel would refuse with EBUSY (checked by hand on this 6.18 kernel: 0.92 EBUSY,
/// 0.90 accepted in a one-CPU partition). rtvirt refuses it first, in words; a dry run either way.
#[test]
fn the_cores_fair_server_counts_in_the_kernel_bandwidth_pre_check() {
    let _g = serial();
    let a = Sleeper::start();
    let core = last_cpu();
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), "plan.json", &plan_json(&[("g1", 9_200_000, 10_000_000, 10_000_000, core)]));
    let state = dir.path().join("state");
    let before = snapshot(&[a.pid()]);
    let o = run(apply(&plan, &state).args(["--dry-run", "--pid", &format!("g1={}", a.pid())]));
    let cap = rtvirt_os::sysinfo::dl_bandwidth_cap();
    let fair = rtvirt_os::sysinfo::FairServers::of_this_host().active_on(core);
    match (cap, fair) {
        (Some(cap), Some(f)) if 0.92 + f.runtime_ns as f64 / f.period_ns as f64 > cap => {
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("kernel SCHED_DEADLINE bandwidth cap")
                    && err.contains(&format!("CPU {core}'s fair server")),
                "{err}"
            );
        }
        _ => assert_eq!(o.status.code(), Some(0), "no fair server reserved on CPU {core}, or no cap: {}", text(&o)),
    }
    assert_eq!(snapshot(&[a.pid()]), before);
    assert!(!journal_exists(&state));
}
