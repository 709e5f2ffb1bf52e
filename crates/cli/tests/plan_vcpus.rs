//! `rtvirt plan` of guests of several vCPUs: partitioned (tasks bound and packed) and global
//! (MPR) guests next to a guest of one vCPU; per-vCPU JSON (checked against the committed schema),
//! table rows, distinct cores with `spread`, and every vCPU in `--emit chrt` and `--emit libvirt`
//! (validated with `virt-xml-validate`).

mod schema_support;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

const SCENARIO: &str = r#"name = "vcpus"
[host]
cores = 4

[[guest]]
name = "part"
scheduler = "edf"
vcpus = 3
housekeeping = [0]
server_periods = ["2ms", "5ms"]
[guest.vcpu]
policy = "fifo"
priority = 10
[[guest.task]]
name = "a"
period = "10ms"
wcet = "4ms"
vcpu = 2
[[guest.task]]
name = "b"
period = "10ms"
wcet = "3ms"
[[guest.task]]
name = "c"
period = "20ms"
wcet = "5ms"
[[guest.task]]
name = "d"
period = "5ms"
wcet = "1ms"

[[guest]]
name = "glob"
scheduler = "edf"
vcpus = 2
placement = "global"
server_periods = ["5ms"]
[[guest.task]]
name = "x"
period = "10ms"
wcet = "3ms"
[[guest.task]]
name = "y"
period = "10ms"
wcet = "3ms"
[[guest.task]]
name = "z"
period = "20ms"
wcet = "4ms"

[[guest]]
name = "one"
scheduler = "edf"
server_periods = ["5ms"]
[[guest.task]]
name = "t"
period = "10ms"
wcet = "1ms"
"#;

fn scenario(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn plan_json(file: &str) -> Value {
    let o = rtvirt(&["plan", file, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    schema_support::assert_valid("plan", &v);
    v
}

fn guest<'a>(plan: &'a Value, name: &str) -> &'a Value {
    plan["guests"].as_array().unwrap().iter().find(|g| g["name"] == name).unwrap()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect()
}

#[test]
fn partitioned_and_global_guests_get_one_server_per_vcpu_on_distinct_cores() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "s.toml", SCENARIO);
    let plan = plan_json(&file);
    assert_eq!(plan["feasible"], true);

    let part = guest(&plan, "part");
    let vcpus = part["vcpus"].as_array().unwrap();
    assert_eq!(vcpus.len(), 3);
    assert!(part.get("placement").is_none(), "partitioned is not written");
    // the housekeeping vCPU: a core, no reservation, no task
    assert_eq!((vcpus[0]["model"].as_str(), vcpus[0]["budget_ns"].as_u64()), (Some("none"), Some(0)));
    assert!(vcpus[0]["core"].is_u64() && vcpus[0]["tasks"].as_array().unwrap().is_empty());
    // the bound task stays on its vCPU; every task on exactly one vCPU
    assert!(names(&vcpus[2]["tasks"]).contains(&"a".to_string()), "{vcpus:?}");
    let mut all: Vec<String> = vcpus.iter().flat_map(|v| names(&v["tasks"])).collect();
    all.sort();
    assert_eq!(all, ["a", "b", "c", "d"]);
    // spread (default): every vCPU of the guest on its own core
    let mut cores: Vec<u64> = vcpus.iter().map(|v| v["core"].as_u64().unwrap()).collect();
    cores.sort_unstable();
    cores.dedup();
    assert_eq!(cores.len(), 3, "{vcpus:?}");
    // each reserved vCPU: budget <= deadline <= period, bandwidth = budget / period; the guest's
    // bandwidth is their sum
    let mut total = 0.0;
    for v in vcpus.iter().filter(|v| v["model"] != "none") {
        let (p, b, d) =
            (v["period_ns"].as_u64().unwrap(), v["budget_ns"].as_u64().unwrap(), v["deadline_ns"].as_u64().unwrap());
        assert!(b > 0 && b <= d && d <= p, "{v}");
        assert!((v["bandwidth"].as_f64().unwrap() - b as f64 / p as f64).abs() < 1e-9);
        assert_eq!(v["model"], "prm");
        total += v["bandwidth"].as_f64().unwrap();
    }
    assert!((part["bandwidth"].as_f64().unwrap() - total).abs() < 1e-9);

    let glob = guest(&plan, "glob");
    assert_eq!((glob["placement"].as_str(), glob["model"].as_str()), (Some("global"), Some("mpr")));
    let gv = glob["vcpus"].as_array().unwrap();
    assert_eq!(gv.len(), 2);
    assert!(gv.iter().all(|v| v["model"] == "mpr" && names(&v["tasks"]) == ["x", "y", "z"]), "{gv:?}");
    assert_ne!(gv[0]["core"], gv[1]["core"]);
    // the MPR servers split Theta floor/ceil: budgets differ by at most 1 ns, same period
    let budgets: Vec<u64> = gv.iter().map(|v| v["budget_ns"].as_u64().unwrap()).collect();
    assert!(budgets[0].abs_diff(budgets[1]) <= 1 && gv[0]["period_ns"] == gv[1]["period_ns"]);

    // a guest of one vCPU is written as before: no vcpus list
    assert!(guest(&plan, "one").get("vcpus").is_none());

    // cores[] counts each vCPU's bandwidth on its core
    let on_cores: f64 = plan["cores"].as_array().unwrap().iter().map(|c| c["bandwidth"].as_f64().unwrap()).sum();
    let guests: f64 = plan["guests"].as_array().unwrap().iter().map(|g| g["bandwidth"].as_f64().unwrap()).sum();
    assert!((on_cores - guests).abs() < 1e-9, "{on_cores} vs {guests}");

    // the table shows one row per vCPU
    let o = rtvirt(&["plan", &file]);
    let table = text(&o);
    assert!(table.contains("vCPUs of the guests with several"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("part ") || l.starts_with("glob ")).collect();
    assert!(rows.iter().filter(|l| l.contains(" mpr ")).count() == 2, "{table}");
    assert!(rows.iter().any(|l| l.contains(" none ")), "{table}");
}

#[test]
fn without_spread_the_vcpus_of_a_guest_may_share_a_core() {
    let dir = tempfile::tempdir().unwrap();
    let light = "name = \"s\"\n[host]\ncores = 2\n[[guest]]\nname = \"g\"\nscheduler = \"edf\"\nvcpus = 2\nspread = \
                 SPREAD\nserver_periods = [\"5ms\"]\n[[guest.task]]\nname = \"a\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n\
                 vcpu = 0\n[[guest.task]]\nname = \"b\"\nperiod = \"10ms\"\nwcet = \"1ms\"\nvcpu = 1\n";
    let cores = |spread: &str| {
        let plan = plan_json(&scenario(dir.path(), &format!("{spread}.toml"), &light.replace("SPREAD", spread)));
        let v = guest(&plan, "g")["vcpus"].as_array().unwrap().clone();
        (v[0]["core"].as_u64().unwrap(), v[1]["core"].as_u64().unwrap())
    };
    let (a, b) = cores("true");
    assert_ne!(a, b);
    // best fit packs the second server next to the first
    let (a, b) = cores("false");
    assert_eq!(a, b);
}

#[test]
fn every_vcpu_is_emitted_for_chrt_and_libvirt() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "s.toml", SCENARIO);
    let plan = plan_json(&file);
    let part = guest(&plan, "part")["vcpus"].as_array().unwrap().clone();

    let o = rtvirt(&["plan", &file, "--emit", "chrt", "--pid", "part/vcpu1=4242"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let script = String::from_utf8(o.stdout).unwrap();
    let syntax = Command::new("sh").args(["-n", "-c", &script]).output().unwrap();
    assert!(syntax.status.success(), "{}", text(&syntax));
    assert!(script.contains("TID_0_1=4242"), "the --pid of vCPU 1");
    assert!(script.contains("${VCPU_PID_PART_VCPU2:?"), "vCPU 2 from its variable");
    assert!(script.contains("${VCPU_PID_GLOB_VCPU0:?") && script.contains("${VCPU_PID_GLOB_VCPU1:?"));
    assert!(script.contains("${VCPU_PID_ONE:?"), "a guest of one vCPU as before");
    for v in &part {
        let (id, core) = (v["id"].as_u64().unwrap(), v["core"].as_u64().unwrap());
        let runtime = v["budget_ns"].as_u64().unwrap();
        let want = if runtime == 0 {
            format!("deploy \"$TID_0_{id}\" {core} 0 0 0 part")
        } else {
            format!("deploy \"$TID_0_{id}\" {core} {runtime} {} {} part", v["deadline_ns"], v["period_ns"])
        };
        assert!(script.contains(&want), "{want} in\n{script}");
    }

    let out = dir.path().join("libvirt");
    let o = rtvirt(&["plan", &file, "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let xml_file = out.join("part.xml");
    let v = Command::new("virt-xml-validate").arg(&xml_file).arg("domain").output().expect("virt-xml-validate");
    assert!(v.status.success(), "{}", text(&v));
    let xml = std::fs::read_to_string(&xml_file).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let vcpu_count = doc.descendants().find(|n| n.has_tag_name("vcpu")).unwrap().text().unwrap().trim().to_string();
    assert_eq!(vcpu_count, "3");
    for v in &part {
        let (id, core) = (v["id"].as_u64().unwrap().to_string(), v["core"].as_u64().unwrap().to_string());
        let pin = doc
            .descendants()
            .find(|n| n.has_tag_name("vcpupin") && n.attribute("vcpu") == Some(id.as_str()))
            .unwrap_or_else(|| panic!("vcpupin {id} in {xml}"));
        assert_eq!(pin.attribute("cpuset"), Some(core.as_str()), "{xml}");
    }
    let sched = doc.descendants().find(|n| n.has_tag_name("vcpusched")).expect("vcpusched");
    // `[guest.vcpu]` runs every vCPU under FIFO 10: the housekeeping vCPU 0 keeps it, the hook
    // replaces it by the reservation on the others
    assert_eq!(sched.attribute("vcpus"), Some("0,1,2"), "every planned vCPU: {xml}");
    assert_eq!((sched.attribute("scheduler"), sched.attribute("priority")), (Some("fifo"), Some("10")), "{xml}");
    // the qemu hook reserves every planned vCPU (`host apply --vm=GUEST`, no vcpu= selector)
    let hook = std::fs::read_to_string(out.join("qemu")).unwrap();
    assert!(hook.contains("vCPUs, each reserved vCPU on its planned core") && hook.contains(" vcpu= ;;"), "{hook}");
}

/// A global FP guest (issue 18): the least MPR interface of the global FP response-time test
/// (`rtvirt_analysis::gfp`), deadline-monotonic priorities; the budget it plans passes the test and
/// one nanosecond less does not.
#[test]
fn a_global_fixed_priority_guest_gets_the_least_mpr_interface_of_its_test() {
    use rtvirt_analysis::dbf::Sporadic;
    use rtvirt_analysis::gedf::Verdict;
    use rtvirt_analysis::mpr::Mpr;
    let dir = tempfile::tempdir().unwrap();
    let fp = SCENARIO.replacen("scheduler = \"edf\"\nvcpus = 2", "scheduler = \"fp\"\nvcpus = 2", 1);
    let file = scenario(dir.path(), "fp.toml", &fp);
    let plan = plan_json(&file);
    assert_eq!(plan["feasible"], true);
    let glob = guest(&plan, "glob");
    assert_eq!((glob["scheduler"].as_str(), glob["model"].as_str()), (Some("fp"), Some("mpr")));
    let gv = glob["vcpus"].as_array().unwrap();
    assert!(gv.iter().all(|v| v["model"] == "mpr" && names(&v["tasks"]) == ["x", "y", "z"]), "{gv:?}");
    let theta: u64 = gv.iter().map(|v| v["budget_ns"].as_u64().unwrap()).sum();
    let period = gv[0]["period_ns"].as_u64().unwrap();
    // x, y (10 ms, 3 ms) before z (20 ms, 4 ms): deadline monotonic, ties in file order
    let ms = 1_000_000;
    let tasks = [
        Sporadic { c: 3 * ms, d: 10 * ms, t: 10 * ms },
        Sporadic { c: 3 * ms, d: 10 * ms, t: 10 * ms },
        Sporadic { c: 4 * ms, d: 20 * ms, t: 20 * ms },
    ];
    let verdict = |budget| rtvirt_analysis::gfp::schedulable(&tasks, &Mpr { period, budget, concurrency: 2 }, 0);
    assert_eq!((verdict(theta), verdict(theta - 1)), (Verdict::Schedulable, Verdict::NotShown));
    // its tasks cannot fit even on two whole vCPUs: exit 1 naming the guest and the test
    let heavy = fp.replace("wcet = \"3ms\"", "wcet = \"9ms\"");
    let o = rtvirt(&["plan", &scenario(dir.path(), "heavy.toml", &heavy)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("glob") && text(&o).contains("global fixed priority"), "{}", text(&o));
}

/// A global guest planned with a host model (issue 18): every server of the guest pays the
/// per-period cost, so the guest's bandwidth grows by at least that cost per server and period;
/// both EDF and FP global guests are planned.
#[test]
fn a_global_guest_with_a_host_model_pays_the_costs_on_each_server() {
    let dir = tempfile::tempdir().unwrap();
    let hm = scenario(
        dir.path(),
        "hm.json",
        r#"{"schema":"rtvirt.hostmodel/v1","server_overhead_ns":40000,"cache_reload_ns":10000,
            "context_switch_ns":1000,"release_latency_ns":{"p50":5000,"p99":20000,"max":50000},
            "enforcement":{"kind":"hrtick","overrun_max_ns":5000}}"#,
    );
    for sched in ["edf", "fp"] {
        // periods of 1 ms too: the 5 us overrun's pay-back delays the supply by one server period
        let text_of = SCENARIO
            .replacen("scheduler = \"edf\"\nvcpus = 2", &format!("scheduler = \"{sched}\"\nvcpus = 2"), 1)
            .replacen(
                "placement = \"global\"\nserver_periods = [\"5ms\"]",
                "placement = \"global\"\nserver_periods = [\"1ms\", \"5ms\"]",
                1,
            );
        let text_of = text_of.replacen("cores = 4", "cores = 6", 1);
        assert!(text_of.contains("[\"1ms\", \"5ms\"]"));
        let file = scenario(dir.path(), &format!("{sched}.toml"), &text_of);
        let plain = plan_json(&file);
        let o = rtvirt(&["plan", &file, "--host-model", &hm, "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{sched}: {}", text(&o));
        let costly: Value = serde_json::from_slice(&o.stdout).unwrap();
        schema_support::assert_valid("plan", &costly);
        let (before, after) = (guest(&plain, "glob"), guest(&costly, "glob"));
        let gv = after["vcpus"].as_array().unwrap();
        assert_eq!(gv.len(), 2);
        let period = gv[0]["period_ns"].as_u64().unwrap() as f64;
        for v in gv {
            assert!(v["model"] == "mpr" && v["budget_ns"].as_u64().unwrap() > 50_000, "{sched}: {v}");
        }
        let grown = after["bandwidth"].as_f64().unwrap() - before["bandwidth"].as_f64().unwrap();
        assert!(grown >= 2.0 * 50_000.0 / period - 1e-9, "{sched}: {before} -> {after}");
    }
}
