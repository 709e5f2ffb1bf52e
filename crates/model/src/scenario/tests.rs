use super::*;
use crate::duration::Nanos;
use crate::exec::ExecModel;
use proptest::prelude::*;

const MINI: &str = r#"
[host]
cores = 2

[[guest]]
name = "vm1"
scheduler = "fp"

[[guest.task]]
name = "a"
period = "10ms"
wcet = "1ms"

[[guest.task]]
name = "b"
period = "5ms"
deadline = "4ms"
wcet = "500us"
exec = { dist = "normal", mean = "200us", sd = "50us" }
"#;

fn err(src: &str) -> InputError {
    Scenario::from_toml(src, Some(Path::new("s.toml"))).unwrap_err()
}

#[test]
fn parses_and_defaults() {
    let s = Scenario::from_toml(MINI, None).unwrap();
    assert_eq!(s.host.cores, 2);
    assert_eq!(s.host.bandwidth_cap, DEFAULT_BANDWIDTH_CAP);
    let g = &s.guests[0];
    assert_eq!(g.scheduler, GuestScheduler::Fp);
    assert_eq!(g.tasks[0].deadline, Nanos::from_ms(10));
    // deadline monotonic: b (4ms) is more urgent than a (10ms)
    assert!(g.tasks[1].priority > g.tasks[0].priority);
    assert_eq!(g.tasks[1].exec, ExecModel::Normal { mean: Nanos::from_us(200), sd: Nanos::from_us(50) });
    assert_eq!(g.server_periods.candidates(&g.tasks).len(), 20);
    assert_eq!(g.server_periods.candidates(&g.tasks)[0], Nanos::from_us(200));
    assert_eq!(*g.server_periods.candidates(&g.tasks).last().unwrap(), Nanos::from_ms(4));
}

#[test]
fn default_scenario_is_valid() {
    let s = Scenario::default_scenario();
    assert_eq!(s.guests.len(), 3);
    assert!(s.guests.iter().all(|g| g.tasks.iter().all(|t| t.exec.is_stochastic())));
}

#[test]
fn unknown_field_names_line_and_field() {
    let e = err(&MINI.replace("wcet = \"1ms\"", "wcet = \"1ms\"\ncolour = 3"));
    let msg = e.to_string();
    assert!(msg.starts_with("s.toml:line "), "{msg}");
    assert!(msg.contains("colour"), "{msg}");
    assert_eq!(e.at.line_col.unwrap(), (13, 1), "{msg}");
}

#[test]
fn validation_errors_are_located() {
    let cases: &[(&str, &str, &str)] = &[
        ("wcet = \"1ms\"", "wcet = \"11ms\"", "guest[0].task[0].wcet"),
        ("deadline = \"4ms\"", "deadline = \"6ms\"", "guest[0].task[1].deadline"),
        ("period = \"10ms\"", "period = \"0ms\"", "guest[0].task[0].period"),
        ("name = \"b\"", "name = \"a\"", "guest[0].task[1].name"),
        ("scheduler = \"fp\"", "scheduler = \"rr\"", "guest[0].scheduler"),
        ("scheduler = \"fp\"", "scheduler = \"fp\"\nrho = 1.5", "guest[0].rho"),
        ("cores = 2", "cores = 0", "host.cores"),
        ("mean = \"200us\"", "mean = \"900us\"", "guest[0].task[1].exec.mean"),
        ("dist = \"normal\"", "dist = \"gamma\"", "guest[0].task[1].exec.dist"),
        ("wcet = \"1ms\"", "wcet = \"p99\"", "guest[0].task[0].wcet"),
        ("wcet = \"1ms\"", "wcet = \"-1ms\"", "guest[0].task[0].wcet"),
    ];
    for (from, to, field) in cases {
        let src = MINI.replacen(from, to, 1);
        assert_ne!(src, MINI, "{from} not found");
        let e = err(&src);
        assert_eq!(e.at.field.as_deref(), Some(*field), "{e}");
        assert!(e.at.line_col.is_some(), "no line for {e}");
        assert_eq!(e.at.file.as_deref(), Some(Path::new("s.toml")));
    }
}

#[test]
fn type_errors_name_the_field() {
    let e = err(&MINI.replace("cores = 2", "cores = \"two\""));
    assert_eq!(e.at.field.as_deref(), Some("host.cores"), "{e}");
    let e = err(&MINI.replace("period = \"10ms\"", "period = \"10 parsecs\""));
    assert_eq!(e.at.field.as_deref(), Some("guest[0].task[0].period"), "{e}");
    assert!(e.to_string().contains("unknown unit"), "{e}");
    let e = err("[host\ncores=1");
    assert!(e.at.line_col.is_some(), "{e}");
}

#[test]
fn samples_and_percentile_wcet() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.csv"), (1..=100).map(|i| format!("{i}us\n")).collect::<String>()).unwrap();
    let src = MINI.replace("wcet = \"1ms\"", "wcet = \"p99\"\nexec = { samples = \"x.csv\" }");
    let file = dir.path().join("s.toml");
    let s = Scenario::from_toml(&src, Some(&file)).unwrap();
    assert_eq!(s.guests[0].tasks[0].wcet, Nanos::from_us(99));
    let src = MINI.replace("wcet = \"1ms\"", "wcet = \"max\"\nexec = { samples = \"missing.csv\" }");
    let e = Scenario::from_toml(&src, Some(&file)).unwrap_err();
    assert!(e.to_string().contains("missing.csv"), "{e}");
    // a samples-file error without a line in that file gets no line of the TOML file either
    assert_eq!(e.at.line_col, None, "{e}");
    assert_eq!(e.at.field.as_deref(), Some("guest[0].task[0].exec"), "{e}");
}

#[test]
fn priorities_all_or_none_and_unique() {
    let src = MINI.replacen("wcet = \"1ms\"", "wcet = \"1ms\"\npriority = 3", 1);
    assert!(err(&src).to_string().contains("every task"));
    let src = src.replacen("wcet = \"500us\"", "wcet = \"500us\"\npriority = 3", 1);
    assert!(err(&src).to_string().contains("twice"));
    let edf = MINI.replace("\"fp\"", "\"edf\"").replacen("wcet = \"1ms\"", "wcet = \"1ms\"\npriority = 3", 1);
    assert!(err(&edf).to_string().contains("only for fixed-priority"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn never_panics_on_arbitrary_text(s in "\\PC*") {
        let _ = Scenario::from_toml(&s, None);
    }

    #[test]
    fn never_panics_on_mutated_scenarios(pos in 0usize..400, junk in "[\\[\\]=\"a-z0-9.\n ]{0,12}") {
        let mut src = MINI.to_string();
        let p = pos.min(src.len());
        if src.is_char_boundary(p) {
            src.insert_str(p, &junk);
        }
        let _ = Scenario::from_toml(&src, None);
    }
}

fn with_sim(vcpu: &str, sim: &str) -> String {
    format!(
        "[host]\ncores = 2\n{sim}\n[[guest]]\nname = \"vm1\"\nscheduler = \"edf\"\n{vcpu}\n[[guest.task]]\nname = \
         \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n"
    )
}

#[test]
fn sim_sections_are_checked_when_parsed() {
    let s = Scenario::from_toml(
        &with_sim(
            "[guest.vcpu]\npolicy = \"deadline\"\nruntime = \"2ms\"\nperiod = \"10ms\"\n",
            "[sim]\nduration = \"2s\"\nmiss_policy = \"abort\"\n[[sim.thread]]\nname = \"noise\"\nperiod = \"10ms\"\n\
             run = \"1ms\"\nsched = { core = 1, policy = \"fifo\", priority = 90 }\n",
        ),
        None,
    )
    .unwrap();
    assert_eq!(s.sim.settings.duration, 2_000_000_000);
    assert!(s.sim.settings.abort_late);
    assert_eq!(s.sim.threads[0].thread.policy, sim::Policy::Rt { prio: 90, rr_quantum: None });
    assert_eq!(
        s.guests[0].vcpus[0].sim.thread.policy,
        sim::Policy::Deadline { runtime: 2_000_000, deadline: 10_000_000, period: 10_000_000 }
    );
    assert_eq!(s.guests[0].vcpus[0].sim.thread.cores, vec![0], "default core: guest index mod cores");
}

#[test]
fn sim_errors_are_located() {
    let cases = [
        ("[guest.vcpu]\npolicy = \"fifo\"\npriority = 100\n", "", "guest[0].vcpu.priority"),
        ("[guest.vcpu]\npolicy = \"lottery\"\n", "", "guest[0].vcpu.policy"),
        ("[guest.vcpu]\npolicy = \"fifo\"\npriority = 10\nbudget = \"1ms\"\n", "", "guest[0].vcpu.budget"),
        ("[guest.vcpu]\ncore = 2\n", "", "guest[0].vcpu.core"),
        ("[guest.vcpu]\npolicy = \"deadline\"\nruntime = \"20ms\"\nperiod = \"10ms\"\n", "", "guest[0].vcpu.runtime"),
        ("[guest.vcpu]\nslowdown = 11.0\n", "", "guest[0].vcpu.slowdown"),
        ("", "[sim]\nguest_slowdown = -0.1\n", "sim.guest_slowdown"),
        ("", "[sim]\nmiss_policy = \"drop\"\n", "sim.miss_policy"),
        ("", "[sim]\nduration = \"0s\"\n", "sim.duration"),
        ("", "[sim]\ncredit_accounting = \"sampled\"\n", "sim.credit_accounting"),
        (
            "",
            "[[sim.thread]]\nname = \"x\"\nbusy = true\nsched = { policy = \"credit\" }\n",
            "sim.thread[0].sched.policy",
        ),
        (
            "[guest.vcpu]\ncores = [0, 1]\n",
            "[[sim.thread]]\nname = \"x\"\nbusy = true\nsched = { core = 0 }\n",
            "sim.thread[0].sched.cores",
        ),
        (
            "[guest.vcpu]\ncore = 0\npolicy = \"deadline\"\nruntime = \"6ms\"\nperiod = \"10ms\"\n",
            "[[sim.thread]]\nname = \"x\"\nbusy = true\nsched = { core = 0, policy = \"deadline\", runtime = \"4ms\", \
             period = \"10ms\" }\n",
            "sim.thread[0].sched.runtime",
        ),
    ];
    for (vcpu, sim, field) in cases {
        let e = err(&with_sim(vcpu, sim));
        assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
        assert!(e.at.line_col.is_some(), "no line for {e}");
        assert_eq!(e.at.file.as_deref(), Some(Path::new("s.toml")), "{e}");
    }
}

#[test]
fn net_section_is_checked_when_parsed() {
    let src = "[host]\ncores = 2\n[net]\nkind = \"kvm\"\nirq = \"hardirq\"\nsoftirq = \"partitioned\"\n[[net.nic]]\n\
               name = \"n\"\nirq_cores = [0]\n";
    let e = err(src);
    assert_eq!(e.at.field.as_deref(), Some("net.softirq"), "{e}");
    assert_eq!(e.at.line_col.map(|l| l.0), Some(6), "{e}");
    let s = Scenario::from_toml(&src.replace("hardirq", "threaded"), None).unwrap();
    assert!(matches!(s.net.unwrap().model, net::NetModel::Kvm(_)));
}

/// Issue 14: every error names file, line and field in words a user understands.
#[test]
fn hostile_inputs_get_located_plain_errors() {
    let e = err(&MINI.replace("exec = { dist = \"normal\", mean = \"200us\", sd = \"50us\" }", "exec = [\"normal\"]"));
    assert_eq!(e.at.field.as_deref(), Some("guest[0].task[1].exec"), "{e}");
    assert!(e.message.contains("expected a table") && !e.message.contains("Raw"), "{e}");
    let e = err(&MINI.replace("scheduler = \"fp\"", "scheduler = \"fp\"\nrho = 18446744073709551615"));
    assert_eq!((e.at.field.as_deref(), e.at.line_col.map(|l| l.0)), (Some("guest[0].rho"), Some(8)), "{e}");
    let deep = format!("[host]\ncores = 1\n{}b = 1\n", "a.".repeat(1000));
    let e = err(&deep);
    assert_eq!(e.at.line_col, Some((3, 19)), "{e}");
    assert!(e.message.contains("dotted keys nested 9 deep: expected at most 8 levels"), "{e}");
    let e = err(
        &MINI.replace("exec = { dist = \"normal\", mean = \"200us\", sd = \"50us\" }", "exec = { samples = \"\" }")
    );
    assert_eq!(e.at.field.as_deref(), Some("guest[0].task[1].exec.samples"), "{e}");
    assert!(e.to_string().starts_with("s.toml:line 19"), "{e}");
}

/// Issue 36: an `exec` list of six items read as the table's six fields in order and was
/// refused for giving both `dist` and `samples`, with no line; any list or string is refused
/// as not a table, with its line and field.
#[test]
fn an_exec_that_is_not_a_table_says_a_table_is_expected_where() {
    let exec = "exec = { dist = \"normal\", mean = \"200us\", sd = \"50us\" }";
    let six = "exec = [\"normal\", \"1ms\", \"1ms\", \"1ms\", \"1ms\", \"x.csv\"]";
    let phase = format!("{exec}\n[[guest.task.phase]]\nat = \"1s\"\n{six}");
    for (src, field, line) in [
        (MINI.replace(exec, six), "guest[0].task[1].exec", 19),
        (MINI.replace(exec, "exec = []"), "guest[0].task[1].exec", 19),
        (MINI.replace(exec, "exec = \"1ms\""), "guest[0].task[1].exec", 19),
        (MINI.replace(exec, &phase), "guest[0].task[1].phase[0].exec", 22),
    ] {
        let e = err(&src);
        assert_eq!((e.at.field.as_deref(), e.at.line_col.map(|l| l.0)), (Some(field), Some(line)), "{e}");
        assert!(e.message.contains("expected a table with `dist`") && e.message.contains("`samples`"), "{e}");
        assert!(!e.message.contains("not both") && !e.message.contains("Raw"), "{e}");
        assert!(!e.message.contains("sequence"), "serde's word for a list: {e}");
        assert!(e.to_string().starts_with(&format!("s.toml:line {line}")), "{e}");
    }
}

/// Issue 14: a Xen Credit `cap` beyond i64 had no line.
#[test]
fn a_huge_xen_cap_is_located() {
    let xen = concat!(
        "[host]\ncores = 2\n[net]\nkind = \"xen\"\n",
        "[[net.xen.domain]]\nname = \"a\"\ncore = 1\npriority = 1\nrole = \"ping\"\npeer = \"b\"\n",
        "cap = 18446744073709551615\n",
        "[[net.xen.domain]]\nname = \"b\"\ncore = 1\npriority = 2\nrole = \"echo\"\n",
    );
    let e = err(xen);
    assert_eq!(e.at.field.as_deref(), Some("net.xen.domain[0].cap"), "{e}");
    assert_eq!(e.at.line_col.map(|l| l.0), Some(11), "{e}");
    assert!(e.message.contains("expected a CPU share in (0, 1]"), "{e}");
}

#[test]
fn uniform_zero_is_refused_like_normal_zero() {
    let e = err(&MINI.replace(
        "exec = { dist = \"normal\", mean = \"200us\", sd = \"50us\" }",
        "exec = { dist = \"uniform\", min = \"0ns\", max = \"0ns\" }",
    ));
    assert_eq!(e.at.field.as_deref(), Some("guest[0].task[1].exec.max"), "{e}");
    let e = err(&MINI.replace("mean = \"200us\"", "mean = \"0ns\""));
    assert_eq!(e.at.field.as_deref(), Some("guest[0].task[1].exec.mean"), "{e}");
}

#[test]
fn a_samples_file_of_nan_is_not_called_empty() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.csv"), "NaN\n").unwrap();
    let src = MINI.replace("wcet = \"1ms\"", "wcet = \"max\"\nexec = { samples = \"x.csv\" }");
    let e = Scenario::from_toml(&src, Some(&dir.path().join("s.toml"))).unwrap_err();
    assert!(e.message.contains("\"NaN\" is not an execution time"), "{e}");
    assert_eq!(e.at.line_col, Some((1, 1)), "{e}");
}

/// Issue 14: no nanosecond parameter makes the simulator take an event per nanosecond.
#[test]
fn simulator_timings_have_a_documented_minimum() {
    let cases = [
        ("[guest.vcpu]\npolicy = \"rtds\"\nbudget = \"1ns\"\nperiod = \"10ms\"\n", "", "guest[0].vcpu.budget"),
        (
            "[guest.vcpu]\npolicy = \"ds\"\npriority = 1\nbudget = \"1ns\"\nperiod = \"1ns\"\n",
            "",
            "guest[0].vcpu.budget",
        ),
        ("[guest.vcpu]\npolicy = \"supply\"\nbudget = \"1ms\"\nperiod = \"999ns\"\n", "", "guest[0].vcpu.period"),
        (
            "[guest.vcpu]\npolicy = \"ps\"\npriority = 1\nbudget = \"1us\"\nperiod = \"999ns\"\n",
            "",
            "guest[0].vcpu.period",
        ),
        ("[guest.vcpu]\npolicy = \"rr\"\npriority = 1\nquantum = \"1ns\"\n", "", "guest[0].vcpu.quantum"),
        ("", "[sim]\nrt_runtime = \"1ns\"\nrt_period = \"1ns\"\n", "sim.rt_period"),
        ("", "[[sim.thread]]\nname = \"x\"\nperiod = \"1ns\"\nrun = \"1ns\"\n", "sim.thread[0].period"),
    ];
    for (vcpu, sim, field) in cases {
        let e = err(&with_sim(vcpu, sim));
        assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
        assert!(e.at.line_col.is_some(), "{e}");
    }
    let e = err(&with_sim("[guest.vcpu]\npolicy = \"rtds\"\nbudget = \"1ns\"\nperiod = \"10ms\"\n", ""));
    assert!(e.message.contains("at least 1us"), "{e}");
    let xen = "[host]\ncores = 2\n[net]\nkind = \"xen\"\n[net.xen]\nperiod = \"1ns\"\n[[net.xen.domain]]\nname = \
               \"a\"\ncore = 1\npriority = 1\nrole = \"ping\"\npeer = \"b\"\n[[net.xen.domain]]\nname = \"b\"\ncore = \
               1\npriority = 2\nrole = \"echo\"\n";
    assert_eq!(err(xen).at.field.as_deref(), Some("net.xen.period"), "{}", err(xen));
}

/// Issue 18: a guest of three vCPUs, vCPU 0 housekeeping, one task bound to vCPU 2.
const MULTI: &str = r#"
[host]
cores = 4

[[guest]]
name = "vran"
scheduler = "edf"
vcpus = 3
housekeeping = [0]

[[guest.task]]
name = "a"
period = "10ms"
wcet = "1ms"
vcpu = 2

[[guest.task]]
name = "b"
period = "5ms"
wcet = "1ms"
"#;

#[test]
fn a_guest_has_one_rt_vcpu_by_default() {
    let s = Scenario::from_toml(MINI, None).unwrap();
    let g = &s.guests[0];
    assert_eq!((g.vcpus.len(), g.placement, g.spread), (1, Placement::Partitioned, true));
    assert!(!g.is_multi_vcpu() && !g.vcpus[0].housekeeping);
    assert_eq!(g.vcpus[0].sim.thread.name, "vm1/vcpu0");
    assert!(g.tasks.iter().all(|t| t.vcpu.is_none()));
}

#[test]
fn vcpus_housekeeping_and_task_binding_are_read() {
    let s = Scenario::from_toml(MULTI, None).unwrap();
    let g = &s.guests[0];
    assert_eq!(g.vcpus.iter().map(|v| v.id).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(g.rt_vcpus().map(|v| v.id).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!((g.tasks[0].vcpu, g.tasks[1].vcpu), (Some(2), None));
    // one simulated host thread per vCPU, on distinct default cores
    let threads: Vec<(&str, &[u32])> =
        g.vcpus.iter().map(|v| (v.sim.thread.name.as_str(), v.sim.thread.cores.as_slice())).collect();
    assert_eq!(threads, vec![("vran/vcpu0", &[0][..]), ("vran/vcpu1", &[1][..]), ("vran/vcpu2", &[2][..])]);
    let global = MULTI.replace("vcpu = 2\n", "").replace("vcpus = 3", "vcpus = 3\nplacement = \"global\"");
    assert_eq!(Scenario::from_toml(&global, None).unwrap().guests[0].placement, Placement::Global);
    let shared = MULTI.replace("housekeeping = [0]", "housekeeping = [0]\nspread = false\n[guest.vcpu]\ncore = 3");
    let g = &Scenario::from_toml(&shared, None).unwrap().guests[0];
    assert!(!g.spread && g.vcpus.iter().all(|v| v.sim.thread.cores == [3]));
}

#[test]
fn vcpu_errors_are_located() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("vcpus = 3", "vcpus = 0", "guest[0].vcpus", "at least 1"),
        ("vcpus = 3", "vcpus = 5", "guest[0].vcpus", "more than the host's 4 cores"),
        ("vcpu = 2", "vcpu = 3", "guest[0].task[0].vcpu", "vCPU 3 does not exist"),
        ("vcpu = 2", "vcpu = -1", "guest[0].task[0].vcpu", "vCPU -1 does not exist"),
        ("vcpu = 2", "vcpu = 0", "guest[0].task[0].vcpu", "housekeeping vCPU"),
        ("housekeeping = [0]", "housekeeping = [0, 0]", "guest[0].housekeeping[1]", "listed twice"),
        ("housekeeping = [0]", "housekeeping = [7]", "guest[0].housekeeping[0]", "does not exist"),
        ("housekeeping = [0]", "housekeeping = [0, 1, 2]", "guest[0].housekeeping", "at least one vCPU"),
        ("vcpus = 3", "vcpus = 3\nplacement = \"mixed\"", "guest[0].placement", "\"partitioned\" or \"global\""),
        ("vcpus = 3", "vcpus = 3\nplacement = \"global\"", "guest[0].task[0].vcpu", "placement = \"partitioned\""),
        ("vcpus = 3", "vcpus = \"three\"", "guest[0].vcpus", "expected i64"),
    ];
    for (from, to, field, words) in cases {
        let src = MULTI.replacen(from, to, 1);
        assert_ne!(src, MULTI, "{from} not found");
        let e = err(&src);
        assert_eq!(e.at.field.as_deref(), Some(*field), "{e}");
        assert!(e.message.contains(words), "{e}");
        assert!(e.at.line_col.is_some(), "no line for {e}");
    }
}

const PHASED: &str = "\n[[guest.task.phase]]\nat = \"5s\"\nexec = { dist = \"normal\", mean = \"400us\", sd = \"50us\" }\n\
                      [[guest.task.phase]]\nat = \"8s\"\nexec = { dist = \"uniform\", min = \"100us\", max = \"300us\" }\n";

#[test]
fn phases_take_over_in_time_order() {
    let s = Scenario::from_toml(&format!("{MINI}{PHASED}"), None).unwrap();
    let t = &s.guests[0].tasks[1];
    assert_eq!(t.phases.len(), 2);
    assert_eq!(t.exec_at(0), &t.exec);
    assert_eq!(t.exec_at(4_999_999_999), &t.exec);
    assert_eq!(t.exec_at(5_000_000_000), &ExecModel::Normal { mean: Nanos::from_us(400), sd: Nanos::from_us(50) });
    assert_eq!(t.exec_at(9_000_000_000), &t.phases[1].exec);
}

#[test]
fn bad_phases_and_adapt_sections_are_located() {
    let phased = format!("{MINI}{PHASED}");
    let cases: &[(&str, &str, &str)] = &[
        ("at = \"8s\"", "at = \"4s\"", "guest[0].task[1].phase[1].at"),
        ("at = \"5s\"", "at = \"0s\"", "guest[0].task[1].phase[0].at"),
        ("mean = \"400us\"", "mean = \"900us\"", "guest[0].task[1].phase[0].exec.mean"),
        ("max = \"300us\"", "max = \"300us\", sd = \"1us\"", "guest[0].task[1].phase[1].exec.sd"),
    ];
    for (from, to, field) in cases {
        let src = phased.replacen(from, to, 1);
        assert_ne!(src, phased, "{from} not found");
        let e = err(&src);
        assert_eq!(e.at.field.as_deref(), Some(*field), "{e}");
        assert!(e.at.line_col.is_some(), "no line for {e}");
    }
    let adapt = |body: &str| err(&format!("{MINI}\n[adapt]\n{body}\n"));
    for (body, field) in [
        ("keep = [\"vm9\"]", "adapt.keep[0]"),
        ("keep = [\"vm1\", \"vm1\"]", "adapt.keep[1]"),
        ("rho = 0.0", "adapt.rho"),
        ("window = 10\nmin_samples = 11", "adapt.min_samples"),
        ("interval = \"1us\"", "adapt.interval"),
        ("shrink_band = 1.0", "adapt.shrink_band"),
        ("budget = \"median\"", "adapt.budget"),
    ] {
        let e = adapt(body);
        assert_eq!(e.at.field.as_deref(), Some(field), "{e}");
        assert!(e.at.line_col.is_some(), "no line for {e}");
    }
    let s = Scenario::from_toml(&format!("{MINI}\n[adapt]\nkeep = [\"vm1\"]\n"), None).unwrap();
    let a = s.adapt.unwrap();
    assert_eq!((a.rank("vm1"), a.rank("other")), (0, 1));
    assert_eq!(a.interval, adapt::AdaptSection::default().interval);
}

/// A JSON scenario's shape (`Scenario::from_json`) is the raw document's, published as
/// docs/schema/scenario.schema.json.
#[test]
fn the_json_scenario_schema_is_the_generated_one() {
    crate::schema::check_committed::<raw::RawScenario>("scenario").unwrap();
}
