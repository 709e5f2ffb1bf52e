//! `rtvirt host calibrate` for real (a short run, under the host lock): the host model it writes
//! validates against docs/schema/hostmodel.schema.json, reads back as a host model, and the host
//! is as before - also after Ctrl-C in the middle of the SCHED_DEADLINE experiment.

mod host_support;
mod schema_support;
mod tracefs_support;

use host_support::*;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

/// What calibration may touch: the cgroups at the cpuset hierarchy's base (its exclusive
/// partition), the root's load balancing, the kernel's RT limits, this test's own scheduling, and
/// tracefs (the switch trace of experiment 3: its instance, and the mount if it made one).
fn host_state() -> String {
    let mut out = cpuset_state();
    let mounted = rtvirt_os::tracefs::mounted_at().is_some();
    out += &format!("tracefs mounted: {mounted}, instances: {:?}\n", tracefs_support::rtvirt_instances());
    if let Some(h) = rtvirt_os::cgroup::Hierarchy::find("cpuset") {
        let mut dirs: Vec<String> =
            std::fs::read_dir(h.base()).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
        dirs.sort();
        out += &format!("cpuset base: {dirs:?}\n");
    }
    for f in ["/proc/sys/kernel/sched_rt_runtime_us", "/proc/sys/kernel/sched_rt_period_us"] {
        out += &format!("{f}={}\n", std::fs::read_to_string(f).unwrap_or_default().trim());
    }
    out + &thread_snapshot(&[std::process::id()])
}

#[test]
fn calibrate_writes_a_valid_host_model_and_leaves_the_host_as_it_was() {
    let _g = serial();
    let before = host_state();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("host.json");
    let state = tempfile::tempdir().unwrap();
    let o = run(rtvirt(&[
        "host",
        "calibrate",
        "--step",
        "300ms",
        "--working-set",
        "4KiB",
        "-o",
        out.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    // cached for planning on this host, and said where
    let cached = rtvirt_probe::this_host::cache_path(state.path());
    assert!(stderr.contains(&format!("cached in {}", cached.display())), "{stderr}");
    let this = rtvirt_probe::this_host::this_host(state.path());
    assert_eq!(this.calibration.as_deref(), Some(cached.as_path()), "{:?}", this.notes);
    for step in ["1/5 release latency", "2/5 context switch", "3/5 SCHED_DEADLINE", "4/5 cache reload", "5/5 vCPU exit"]
    {
        assert!(stderr.contains(step), "progress {step}: {stderr}");
    }
    let written = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&written).unwrap();
    schema_support::assert_valid("hostmodel", &v);
    let model = rtvirt_model::hostmodel::HostModel::from_json(&written).unwrap();
    let names: Vec<&str> = model.measurements.iter().map(|m| m.name.as_str()).collect();
    for cpu in rtvirt_os::sysinfo::online_cpus().iter() {
        assert!(names.contains(&format!("release_latency cpu{cpu}").as_str()), "{names:?}");
    }
    for name in ["context_switch", "server_overhead", "enforcement_overrun", "cache_reload"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let reload = model.measurements.iter().find(|m| m.name == "cache_reload").unwrap();
    assert!(reload.method.starts_with("a 4096-byte working set"), "{}", reload.method);
    for m in &model.measurements {
        assert!(m.count > 0 && m.p50_ns <= m.p99_ns && m.p99_ns <= m.max_ns, "{m:?}");
        assert!(!m.method.is_empty());
    }
    let r = model.release_latency_ns;
    assert!(r.p50 > 0 && r.p50 <= r.p99 && r.p99 <= r.max, "{r:?}");
    // a spinning thread with a 200 us runtime runs at least that long per period
    assert!(model.server_overhead_ns > 0, "{written}");
    assert_eq!(model.admission, rtvirt_probe::calibrate::admission_limits());
    assert_eq!(this.model.measurements, model.measurements, "the cached model is the one written");
    assert_eq!(model.admission.deadline_period_min_us, 100);
    assert_eq!(model.cpus, rtvirt_probe::this_host::live_cpus());
    // where KVM can be opened, a vCPU exit is measured with it (in the kernel and to user space),
    // and the model's figure is the in-kernel exit's p99; elsewhere the environment says why not
    let said = model.environment["vcpu_exit"].as_str().unwrap().to_string();
    let kvm = std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_ok();
    if kvm {
        let exit = model.measurements.iter().find(|m| m.name == "vcpu_exit").expect("vcpu_exit measured");
        assert!(model.measurements.iter().any(|m| m.name == "vcpu_exit_to_user"), "{names:?}");
        assert_eq!(model.vcpu_exit_ns, Some(exit.p99_ns));
        assert!(said.starts_with("measured with KVM"), "{said}");
    } else {
        assert_eq!(model.vcpu_exit_ns, None);
        assert!(said.starts_with("not measured: KVM could not be used"), "{said}");
    }
    assert_eq!(host_state(), before, "calibration left the host changed");
    // the model plans
    let p = run(rtvirt(&["plan", "--host-model", out.to_str().unwrap()]));
    assert!(String::from_utf8_lossy(&p.stdout).contains("per-core cap"), "{}", text(&p));
}

/// `--quick` (for the demo) measures with 1 s steps: about 1,000 timer wake-ups per CPU; with
/// `--no-cache` nothing is cached.
#[test]
fn quick_calibrates_with_short_steps_and_no_cache_writes_no_cache() {
    let _g = serial();
    let before = host_state();
    let state = tempfile::tempdir().unwrap();
    let out = state.path().join("host.json");
    let o = run(rtvirt(&[
        "host",
        "calibrate",
        "--quick",
        "--no-cache",
        "--state-dir",
        state.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("1/5 release latency on CPUs") && text(&o).contains("(1s)"), "{}", text(&o));
    assert!(!text(&o).contains("cached in"), "{}", text(&o));
    assert!(!state.path().join(rtvirt_probe::this_host::CACHE_DIR).exists());
    let model = rtvirt_model::hostmodel::HostModel::from_file(&out).unwrap();
    assert_eq!(model.environment["step"], "1s");
    let timer = model.measurements.iter().find(|m| m.name.starts_with("release_latency cpu")).unwrap();
    // one wake-up per ms for 1 s
    assert!(timer.count > 0 && timer.count <= 1_100, "{timer:?}");
    assert_eq!(host_state(), before, "calibration left the host changed");
    let o = run(rtvirt(&["host", "calibrate", "--quick", "--step", "2s"]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--step"), "{}", text(&o));
}

#[test]
fn a_working_set_out_of_range_or_unreadable_is_refused_before_anything_runs() {
    for (size, says) in [("1GiB", "expected 64 B to 64 MiB"), ("lots", "--working-set"), ("0", "expected 64 B")] {
        let o = run(rtvirt(&["host", "calibrate", "--working-set", size]));
        assert_eq!(o.status.code(), Some(2), "{size}: {}", text(&o));
        assert!(text(&o).contains(says) && text(&o).contains("--working-set"), "{size}: {}", text(&o));
        assert!(!text(&o).contains("1/5"), "{size}: nothing measured: {}", text(&o));
    }
}

/// An output that cannot be written is found before the calibration, not after it.
#[test]
fn an_unwritable_output_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("missing-dir").join("host.json");
    let o = run(rtvirt(&["host", "calibrate", "-o", out.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--output") && text(&o).contains("cannot write"), "{}", text(&o));
    assert!(!text(&o).contains("1/5"), "nothing measured: {}", text(&o));
}

#[test]
fn ctrl_c_in_the_middle_restores_everything() {
    let _g = serial();
    let before = host_state();
    let mut child = rtvirt(&["host", "calibrate", "--step", "4s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rtvirt");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen += &line;
        if line.contains("3/5 SCHED_DEADLINE") {
            break;
        }
    }
    assert!(seen.contains("3/5"), "{seen}");
    std::thread::sleep(std::time::Duration::from_millis(1500)); // inside the partition now
                                                                // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{seen}\n{rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted")), "{rest:?}");
    assert_eq!(host_state(), before, "Ctrl-C left the host changed");
}

/// kill -9 in the middle of the SCHED_DEADLINE experiment: the exclusive cpuset and the root's
/// load balancing stay changed (nothing in the process can restore them), but they were journaled
/// before they were changed, so `rtvirt host revert` restores them - and so does the next
/// calibration.
#[test]
fn kill_9_in_the_middle_is_restored_by_revert_and_by_the_next_run() {
    let _g = serial();
    let before = host_state();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap();
    for restorer in ["revert", "the next calibration"] {
        let mut child = rtvirt(&["host", "calibrate", "--step", "4s", "--state-dir", state_dir])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn rtvirt");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        assert!(lines.by_ref().map_while(|l| l.ok()).any(|l| l.contains("3/5 SCHED_DEADLINE")), "no step 3");
        let start = std::time::Instant::now();
        while host_state() == before && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_ne!(host_state(), before, "the experiment's cpuset was never made");
        // SAFETY: kill(2) on the child we started.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        assert_ne!(host_state(), before, "a kill -9 leaves the cpuset: what the journal is for");
        let journals = state.path().join("guards");
        assert!(std::fs::read_dir(&journals).unwrap().count() > 0, "journaled before it was changed");
        let o = if restorer == "revert" {
            run(rtvirt(&["host", "revert", "--state-dir", state_dir]))
        } else {
            let model = state.path().join("host.json");
            run(rtvirt(&[
                "host",
                "calibrate",
                // 1 s, not 300 ms: once in a full run here, a 300 ms deadline step right after the
                // kill -9 got no sample at all ("SCHED_DEADLINE period cost: no samples")
                "--step",
                "1s",
                "--state-dir",
                state_dir,
                "-o",
                model.to_str().unwrap(),
            ]))
        };
        assert_eq!(o.status.code(), Some(0), "{restorer}: {}", text(&o));
        assert!(text(&o).contains("restored what ended process"), "{restorer} says what it restored: {}", text(&o));
        assert_eq!(host_state(), before, "{restorer} left the host changed");
        assert_eq!(std::fs::read_dir(&journals).unwrap().count(), 0, "{restorer} removed the journal");
    }
}
