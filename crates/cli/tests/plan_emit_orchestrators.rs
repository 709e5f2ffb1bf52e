//! `rtvirt plan --emit kubevirt` and `--emit nova`. The KubeVirt VMs are decoded by KubeVirt's own
//! Go API types (kubevirt.io/api v1.6.0, strictly: the program in tests/kubevirt-validate, built
//! with `go build` from the module cache scripts/setup.sh fills) and hold the plan's dedicated
//! CPUs, realtime mask and reservation; the reservation annotation is a plan `rtvirt host lint`
//! (apply's check, changing nothing) takes for a vCPU thread. The Nova script runs with `sh`
//! against a stub `openstack` (hostile guest names stay one argument); its JSON matches the
//! committed schema. Bad input exits 2 naming the field.

mod host_support;
mod schema_support;

use host_support::text;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `rtvirt ARGS` run to its end (host_support's command: the ideal host).
fn rtvirt(args: &[&str]) -> Output {
    host_support::run(host_support::rtvirt(args))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's multi-vCPU scenario: guest "rt-vm" (3 vCPUs, vCPU 2 without a reservation) and
/// "logger" (2 vCPUs, global), on 4 cores.
fn multi_vcpu() -> String {
    repo().join("scenarios/multi_vcpu_rt_vm.toml").to_string_lossy().into_owned()
}

/// A scenario of one light guest per name, one core each.
fn scenario(dir: &Path, names: &[&str]) -> PathBuf {
    let mut s = format!("[host]\ncores = {}\n", names.len());
    for n in names {
        s += &format!(
            "[[guest]]\nname = {}\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n[[guest.task]]\nname = \"t\"\n\
             period = \"10ms\"\nwcet = \"2ms\"\n",
            serde_json::to_string(n).unwrap()
        );
    }
    let path = dir.join("s.toml");
    std::fs::write(&path, s).unwrap();
    path
}

fn plan_json(scenario: &str) -> serde_json::Value {
    let o = rtvirt(&["plan", scenario, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The KubeVirt validator, built once per test process (`go build`, from Go's caches after the first).
fn validator() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let src = repo().join("crates/cli/tests/kubevirt-validate");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kubevirt-validate");
        let o = Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(&src)
            .output()
            .expect("go (the Go toolchain; scripts/setup.sh fetches the validator's modules)");
        assert!(o.status.success(), "go build of {}:\n{}", src.display(), text(&o));
        out
    })
}

/// The VMs of a YAML file as KubeVirt's types decoded them (one JSON value each).
fn decoded(file: &Path) -> Vec<serde_json::Value> {
    let o = Command::new(validator()).arg(file).output().unwrap();
    assert!(o.status.success(), "{} is not valid KubeVirt:\n{}", file.display(), text(&o));
    String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn emit_kubevirt(scenario: &str, dir: &Path) -> PathBuf {
    let o = rtvirt(&["plan", scenario, "--emit", "kubevirt", "--output-dir", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    dir.join("kubevirt.yaml")
}

#[test]
fn kubevirt_vms_decode_into_kubevirts_api_types_with_the_plans_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_json(&multi_vcpu());
    let vms = decoded(&emit_kubevirt(&multi_vcpu(), dir.path()));
    let guests = plan["guests"].as_array().unwrap();
    assert_eq!(vms.len(), guests.len(), "{vms:#?}");
    for (vm, g) in vms.iter().zip(guests) {
        let template = &vm["spec"]["template"];
        let cpu = &template["spec"]["domain"]["cpu"];
        let vcpus = g["vcpus"].as_array().unwrap();
        assert_eq!(cpu["cores"], vcpus.len(), "{vm}");
        assert_eq!(cpu["dedicatedCpuPlacement"], true);
        assert_eq!(cpu["isolateEmulatorThread"], true);
        let reserved: Vec<String> =
            vcpus.iter().filter(|v| v["budget_ns"].as_u64() > Some(0)).map(|v| v["id"].to_string()).collect();
        assert_eq!(cpu["realtime"]["mask"], reserved.join(","), "{}", g["name"]);
        assert_eq!(template["spec"]["domain"]["memory"]["hugepages"]["pageSize"], "1Gi");
        assert_eq!(template["spec"]["domain"]["devices"]["autoattachMemBalloon"], false);
        let annotations = &template["metadata"]["annotations"];
        assert_eq!(annotations["rtvirt.io/guest"], g["name"]);
        let own: serde_json::Value = serde_json::from_str(annotations["rtvirt.io/plan"].as_str().unwrap()).unwrap();
        assert_eq!(own["guests"].as_array().unwrap(), &vec![g.clone()], "the annotation holds the guest's plan");
    }
    // rt-vm's vCPU 2 has no reservation: the mask leaves it out
    assert_eq!(vms[0]["spec"]["template"]["spec"]["domain"]["cpu"]["realtime"]["mask"], "0,1");
}

#[test]
fn the_validator_refuses_what_kubevirt_does_not_know() {
    let dir = tempfile::tempdir().unwrap();
    let file = emit_kubevirt(&scenario(dir.path(), &["vm1"]).to_string_lossy(), dir.path());
    let yaml = std::fs::read_to_string(&file).unwrap();
    for (from, to, says) in [
        ("isolateEmulatorThread:", "isolateEmulatorThreads:", "cpu.isolateEmulatorThreads"),
        ("kind: VirtualMachine", "kind: VirtualMachineInstance", "kind"),
        ("cores: 1", "cores: one", "cpu.cores"),
    ] {
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, yaml.replacen(from, to, 1)).unwrap();
        let o = Command::new(validator()).arg(&bad).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{from} -> {to}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{}", text(&o));
    }
}

#[test]
fn kubevirt_names_are_dns_labels_and_the_annotation_is_a_plan_host_apply_takes() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), &["VM_One $(x)", "vm.one", "VM-ONE"]);
    let vms = decoded(&emit_kubevirt(&s.to_string_lossy(), dir.path()));
    let names: Vec<&str> = vms.iter().map(|v| v["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["vm-one---x", "vm-one", "vm-one-2"]);
    let annotations = &vms[0]["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["rtvirt.io/guest"], "VM_One $(x)");
    // the node agent's step: the annotation's plan applied to the VM's vCPU thread (lint: the check
    // apply runs first, changing nothing)
    let plan = dir.path().join("own.json");
    std::fs::write(&plan, annotations["rtvirt.io/plan"].as_str().unwrap()).unwrap();
    let mut vcpu = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = format!("VM_One $(x)={}", vcpu.id());
    let o = rtvirt(&["host", "lint", plan.to_str().unwrap(), "--pid", &pid, "--format", "json"]);
    vcpu.kill().unwrap();
    vcpu.wait().unwrap();
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
    let lint: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let g = &plan_json(&s.to_string_lossy())["guests"][0];
    let want = format!("DEADLINE {}/{}/{}ns", g["budget_ns"], g["deadline_ns"], g["period_ns"]);
    let changed: Vec<&serde_json::Value> = lint["per_cpu"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|l| l.as_array().unwrap())
        .filter(|e| e["changed"] == true)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0]["tid"], vcpu.id());
    assert_eq!(changed[0]["sched"], want.as_str());
}

#[test]
fn a_guest_without_a_letter_or_digit_is_refused_for_kubevirt() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), &["vm1", "--"]);
    let o = rtvirt(&["plan", s.to_str().unwrap(), "--emit", "kubevirt"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("s.toml") && err.contains("guest[1].name") && err.contains("KubeVirt"), "{err}");
}

/// A stub `openstack` on PATH that writes each call's arguments, one per line, to `log`.
fn stub_openstack(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let stub = bin.join("openstack");
    std::fs::write(
        &stub,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$LOG\"\necho -- >> \"$LOG\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn nova_flavor_commands_run_and_match_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let o = rtvirt(&["plan", &multi_vcpu(), "--emit", "nova", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    schema_support::assert_valid("nova", &json);
    let flavors = json["flavors"].as_array().unwrap();
    assert_eq!(flavors[0]["extra_specs"]["hw:cpu_realtime_mask"], "^2", "rt-vm's vCPU 2 is not real-time");
    assert!(flavors[1]["extra_specs"].get("hw:cpu_realtime_mask").is_none(), "every logger vCPU is");
    for f in flavors {
        let specs = &f["extra_specs"];
        for (k, v) in [
            ("hw:cpu_policy", "dedicated"),
            ("hw:cpu_realtime", "yes"),
            ("hw:emulator_threads_policy", "isolate"),
            ("hw:mem_page_size", "1GB"),
            ("hw:pmu", "False"),
        ] {
            assert_eq!(specs[k], v, "{f}");
        }
    }
    let plan = plan_json(&multi_vcpu());
    assert_eq!(flavors[0]["reservations"][1]["runtime_ns"], plan["guests"][0]["vcpus"][1]["budget_ns"]);
    // the script: one `openstack flavor set` per flavor with exactly the JSON's properties
    let script = dir.path().join("nova.sh");
    let o = rtvirt(&["plan", &multi_vcpu(), "--emit", "nova", "--output-dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let calls = run_script(dir.path(), &script);
    assert_eq!(calls.len(), flavors.len());
    for (call, f) in calls.iter().zip(flavors) {
        let mut want = vec!["flavor".to_string(), "set".into(), f["flavor"].as_str().unwrap().into()];
        for (k, v) in f["extra_specs"].as_object().unwrap() {
            want.extend(["--property".to_string(), format!("{k}={}", v.as_str().unwrap())]);
        }
        assert_eq!(call, &want);
    }
}

/// The script run with `sh` against the stub: each call's arguments.
fn run_script(dir: &Path, script: &Path) -> Vec<Vec<String>> {
    let log = dir.join("calls");
    let path = format!("{}:{}", stub_openstack(dir).display(), std::env::var("PATH").unwrap());
    let o = Command::new("sh").arg(script).env("PATH", path).env("LOG", &log).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let calls = std::fs::read_to_string(&log).unwrap();
    calls.split("--\n").filter(|c| !c.is_empty()).map(|c| c.lines().map(String::from).collect()).collect()
}

#[test]
fn hostile_guest_names_stay_one_word_in_the_nova_script() {
    let dir = tempfile::tempdir().unwrap();
    let name = "a'b $(touch pwned); `x`";
    let s = scenario(dir.path(), &[name]);
    let o = rtvirt(&["plan", s.to_str().unwrap(), "--emit", "nova", "--output-dir", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let calls = run_script(dir.path(), &dir.path().join("nova.sh"));
    assert_eq!(calls[0][2], format!("rtvirt-{name}"));
    assert!(!dir.path().join("pwned").exists() && !Path::new("pwned").exists());
}
