//! `rtvirt vm` on bad input and failing guests: missing kernel package, garbage instead of
//! results, rtvirt failing inside the guest, a guest not booting or not finishing within its bound,
//! QEMU refusing the guest (early exit), a second run with a running guest's name, a signal while a guest
//! is held up - each a clear error (with the guest console where there is one), exit code 2,
//! and nothing left running. The held guest is also driven by `rtvirt host threads --vm NAME` and
//! `rtvirt host apply/revert --vm GUEST=QMP_SOCKET` (a FIFO profile, a DEADLINE plan) while it runs.

mod host_support;
mod vm_support;
use std::io::{BufRead, BufReader};
use vm_support::{assert_nothing_left, rtvirt, run, tcg_guest, Running, BOUND};

#[test]
fn a_missing_kernel_package_says_how_to_fetch_it() {
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = Running::spawn(
        rtvirt()
            .env("RTVIRT_CACHE_DIR", empty.path())
            .args(["vm", "run", "--kernel", "rt", "--accel", "tcg", "--", "measure", "timer"]),
    )
    .wait(BOUND);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("guest kernel 'rt' not found")
            && err.contains("apt-get download")
            && err.contains("linux-image-rt-amd64"),
        "{err}"
    );
}

#[test]
fn garbage_instead_of_results_is_an_error_with_the_output() {
    let name = "vmt-garbage";
    // `plan` prints a plan, not a results document
    let (code, _, err) = run(&tcg_guest("run", name, &["--", "plan", "--format", "json"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("returned garbage instead of results") && err.contains("rtvirt.results/v1"), "{err}");
    assert!(err.contains("Guest output (last lines)") && err.contains("Guest console (last lines)"), "{err}");
    assert_nothing_left(name);
}

#[test]
fn rtvirt_failing_in_the_guest_shows_its_error_from_the_console() {
    let name = "vmt-guesterr";
    let (code, _, err) = run(&tcg_guest("run", name, &["--", "measure", "timer", "--duration", "0s"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exited with status 2"), "{err}");
    assert!(
        err.contains("Guest console") && err.contains("must last more than 0"),
        "the guest's own error message is in the console tail: {err}"
    );
    assert_nothing_left(name);
}

#[test]
fn a_guest_over_its_bound_is_killed() {
    let name = "vmt-bound";
    let (code, _, err) =
        run(&tcg_guest("run", name, &["--timeout", "1s", "--", "measure", "timer", "--duration", "60s"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did not finish within 1s (running the job)") && err.contains("QEMU killed"), "{err}");
    assert_nothing_left(name);
}

#[test]
fn a_guest_not_booting_within_its_bound_is_killed_with_the_console_tail() {
    let name = "vmt-noboot";
    let (code, _, err) =
        run(&["vm", "run", "--accel", "tcg", "--name", name, "--boot-timeout", "1s", "--", "measure", "timer"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("did not finish within 1s (booting)")
            && err.contains("QEMU killed")
            && err.contains("Guest console (last lines)"),
        "{err}"
    );
    assert_nothing_left(name);
}

#[test]
fn a_held_guest_is_listed_pinned_configured_by_rtvirt_host_and_torn_down_on_sigterm() {
    let name = "vmt-hold";
    // killed (and the guest torn down) if an assertion fails before the end
    let mut held =
        Running::spawn(rtvirt().args(tcg_guest("run", name, &["--hold", "120s", "--pin", "1", "--format", "json"])));
    // The record is printed once the guest is up.
    let mut stdout = BufReader::new(held.child.stdout.take().unwrap());
    let mut text = String::new();
    while !text.trim_end().ends_with('}') {
        assert!(stdout.read_line(&mut text).unwrap() > 0, "rtvirt ended before printing the guest record");
    }
    let rec: serde_json::Value = serde_json::from_str(&text).unwrap();
    let qemu_pid = rec["pid"].as_u64().unwrap();
    assert!(std::path::Path::new(rec["qmp_socket"].as_str().unwrap()).exists());
    // vCPU 0 pinned to host CPU 1
    let vcpu = rec["vcpu_threads"][0].as_u64().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{qemu_pid}/task/{vcpu}/status")).unwrap();
    assert!(status.lines().any(|l| l.starts_with("Cpus_allowed_list:") && l.ends_with("\t1")), "{status}");
    // rtvirt host finds the guest's threads by its name
    let (code, threads, err) = run(&["host", "threads", "--vm", name]);
    assert_eq!(code, 0, "{err}");
    assert!(threads.lines().any(|l| l.contains(&vcpu.to_string()) && l.contains("vcpu 0")), "{threads}");
    // rtvirt host apply/revert change the vCPU thread found through the guest's QMP socket:
    // a FIFO profile, then a DEADLINE plan (the guest's reservation on host CPU 1)
    let state = tempfile::tempdir().unwrap();
    let profile = host_support::write(
        state.path(),
        "profile.toml",
        "schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"vcpu\"\nguest = \"g\"\npolicy = \"fifo\"\npriority = 1\n",
    );
    let plan = host_support::write(
        state.path(),
        "plan.json",
        &host_support::plan_json(&[("g", 2_000_000, 10_000_000, 10_000_000, 1)]),
    );
    let bind = format!("g={}", rec["qmp_socket"].as_str().unwrap());
    let journal = state.path().join("journal");
    let j = journal.to_str().unwrap();
    for (file, policy) in [(&profile, 1), (&plan, 6)] {
        let _revert = host_support::RevertGuard(journal.clone());
        let (code, _, err) =
            run(&["host", "apply", file.to_str().unwrap(), "--vm", &bind, "--state-dir", j, "--force"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(policy_of(vcpu), policy, "vCPU thread policy after applying {}", file.display());
        if policy == 6 {
            assert_eq!(
                sched_attr_of(vcpu),
                (2_000_000, 10_000_000, 10_000_000),
                "runtime, deadline, period of the plan"
            );
        }
        let (code, _, err) = run(&["host", "revert", "--state-dir", j]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(policy_of(vcpu), 0, "vCPU thread is SCHED_OTHER again after revert");
    }
    let (code, list, _) = run(&["vm", "list", "--format", "json"]);
    assert_eq!(code, 0);
    let listed: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert!(listed.as_array().unwrap().iter().any(|g| g["name"] == name && g["pid"] == qemu_pid), "{list}");
    // the name is taken while the guest runs: a second run is refused and disturbs nothing
    let (code, _, err) = run(&["vm", "run", "--accel", "tcg", "--name", name, "--", "measure", "timer"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("a guest named '{name}' is already running")) && err.contains(&qemu_pid.to_string()),
        "{err}"
    );
    assert!(
        std::path::Path::new(rec["qmp_socket"].as_str().unwrap()).exists(),
        "the running guest's QMP socket survived"
    );

    assert!(std::process::Command::new("kill").args(["-TERM", &held.id().to_string()]).status().unwrap().success());
    let (code, _, err) = held.wait(BOUND);
    assert_eq!(code, 2);
    assert!(err.contains("interrupted by signal"), "{err}");
    assert!(!std::path::Path::new(&format!("/proc/{qemu_pid}")).exists(), "QEMU {qemu_pid} survived");
    assert_nothing_left(name);
}

/// SCHED_DEADLINE runtime, deadline, period of a thread.
fn sched_attr_of(tid: u64) -> (u64, u64, u64) {
    let a = rtvirt_os::sched::get(tid as u32).expect("sched_getattr");
    (a.runtime_ns, a.deadline_ns, a.period_ns)
}

/// Scheduling policy of a thread.
fn policy_of(tid: u64) -> u64 {
    rtvirt_os::sched::get(tid as u32).expect("sched_getattr").policy as u64
}

#[test]
fn qemu_refusing_the_guest_is_an_early_exit_with_its_message() {
    let name = "vmt-early";
    let (code, _, err) =
        run(&["vm", "run", "--accel", "tcg", "--name", name, "--vcpus", "999", "--", "measure", "timer"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exited early") && err.contains("QEMU stderr") && err.contains("999"), "{err}");
    assert_nothing_left(name);
}
