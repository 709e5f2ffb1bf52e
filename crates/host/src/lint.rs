//! The lint that runs before `apply` changes anything: per CPU, every runnable entity that matters
//! with its policy and priority after the change, and the configurations known to starve or
//! delay real-time guests. A `fail` finding blocks the apply unless `--force` is given.

use crate::threads::{Role, ThreadInfo};
use rtvirt_os::cpulist::CpuList;
use rtvirt_os::sched::{self, SchedAttr, SCHED_FLAG_RECLAIM};
use rtvirt_os::sysinfo::{FairServers, Irq};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Fail,
    Warn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub severity: Severity,
    pub message: String,
}

/// A thread as it will be after the apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Planned {
    pub tid: u32,
    pub comm: String,
    pub role: Role,
    pub guest: Option<String>,
    pub sched: SchedAttr,
    pub cpus: CpuList,
}

/// Everything the lint looks at.
pub struct LintInput<'a> {
    pub planned: &'a [Planned],
    /// Every thread on the host now.
    pub existing: &'a [ThreadInfo],
    /// IRQs as they will be after the apply.
    pub irqs: &'a [Irq],
    /// IRQ numbers the apply itself places (not flagged).
    pub placed_irqs: &'a [u32],
    pub isolated: CpuList,
    pub online: CpuList,
    /// CPUs given to cpuset partitions for reservations.
    pub partitions: CpuList,
    pub rt_runtime_us: Option<i64>,
    /// The per-CPU fair servers (Linux >= 6.12) and their runtimes.
    pub fair_server: &'a FairServers,
}

/// One line of the per-CPU view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entity {
    pub tid: u32,
    pub comm: String,
    pub role: &'static str,
    pub sched: String,
    pub changed: bool,
    /// Effective priority: deadline 1000, FIFO/RR their priority, fair classes 0.
    pub rank: u32,
}

/// The lint's result: the per-CPU view and the findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintReport {
    pub per_cpu: BTreeMap<u32, Vec<Entity>>,
    pub findings: Vec<Finding>,
}

impl LintReport {
    pub fn failures(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Fail).count()
    }
}

/// Effective priority for comparisons: deadline above every RT priority above the fair classes.
fn rank(attr: &SchedAttr) -> u32 {
    if attr.is_deadline() {
        1000
    } else if attr.is_rt() {
        attr.priority
    } else {
        0
    }
}

/// Run the lint.
pub fn lint(input: &LintInput) -> LintReport {
    let mut findings = Vec::new();
    dl_admission(input, &mut findings);
    for p in input.planned.iter().filter(|p| p.sched.is_rt() && matches!(p.role, Role::Vcpu { .. })) {
        vcpu_above_kthreads(input, p, &mut findings);
        io_below_vcpu(input, p, &mut findings);
    }
    fair_server(input, &mut findings);
    reclaim(input, &mut findings);
    irqs_on_rt_cpus(input, &mut findings);
    if !input.partitions.is_empty() && input.online.is_subset(&input.partitions) {
        findings.push(Finding {
            id: "no_housekeeping_cpu",
            severity: Severity::Warn,
            message: format!(
                "every online CPU ({}) becomes a reservation partition: the host's own tasks are no longer \
                 load-balanced between CPUs",
                input.online
            ),
        });
    }
    LintReport { per_cpu: per_cpu_view(input), findings }
}

fn dl_admission(input: &LintInput, out: &mut Vec<Finding>) {
    if input.rt_runtime_us == Some(-1) && input.planned.iter().any(|p| p.sched.is_deadline()) {
        out.push(Finding {
            id: "dl_admission_disabled",
            severity: Severity::Fail,
            message: "kernel.sched_rt_runtime_us = -1 disables SCHED_DEADLINE admission control: the kernel accepts \
                      any overload and reservations are no longer guaranteed (set it back to e.g. 950000)"
                .into(),
        });
    }
}

/// A FIFO/RR vCPU that busy-polls (guest idle=poll, KVM halt polling) starves the per-CPU kernel
/// threads below it on its CPUs; only the fair server / RT throttling bound that.
fn vcpu_above_kthreads(input: &LintInput, vcpu: &Planned, out: &mut Vec<Finding>) {
    let fair_server = vcpu.cpus.iter().any(|c| input.fair_server.active_on(c).is_some());
    let bounded = fair_server || input.rt_runtime_us.is_some_and(|r| r >= 0);
    let starved: Vec<String> = input
        .existing
        .iter()
        .filter(|t| {
            t.role.is_percpu_kthread()
                && t.affinity.iter().any(|c| vcpu.cpus.contains(c))
                && rank(&after(input, t)) < rank(&vcpu.sched)
        })
        .map(|t| format!("{} ({})", t.comm, sched::policy_name(after(input, t).policy)))
        .collect();
    if starved.is_empty() {
        return;
    }
    let (severity, bound) = if bounded {
        (
            Severity::Warn,
            if fair_server {
                "only the fair server's share (50 ms/s by default)"
            } else {
                "only what RT throttling leaves"
            },
        )
    } else {
        (Severity::Fail, "nothing: RT throttling is off and there is no fair server")
    };
    out.push(Finding {
        id: "fifo_vcpu_above_kthreads",
        severity,
        message: format!(
            "{} vCPU thread {} ({}) on CPU {} runs above {}; if the guest busy-polls they get {bound}",
            vcpu.sched,
            vcpu.tid,
            vcpu.guest.as_deref().unwrap_or("?"),
            vcpu.cpus,
            starved.join(", ")
        ),
    });
}

/// The RT data path must be ordered IRQ > NAPI/vhost > vCPU (Garcia Alvarado 2019): an I/O thread below an RT
/// vCPU on a shared CPU waits behind the vCPU it is supposed to feed.
fn io_below_vcpu(input: &LintInput, vcpu: &Planned, out: &mut Vec<Finding>) {
    for io in input
        .planned
        .iter()
        .filter(|p| matches!(p.role, Role::Irq { .. } | Role::Napi { .. } | Role::Vhost { .. } | Role::Iothread { .. }))
    {
        let same_path = io.guest.is_none() || io.guest == vcpu.guest;
        if same_path && !io.cpus.intersection(&vcpu.cpus).is_empty() && rank(&io.sched) < rank(&vcpu.sched) {
            out.push(Finding {
                id: "io_below_vcpu",
                severity: Severity::Fail,
                message: format!(
                    "{} thread {} ({}) is below vCPU thread {} ({}) on CPU {}: the vCPU would starve its own I/O path",
                    io.role.name(),
                    io.tid,
                    io.sched,
                    vcpu.tid,
                    vcpu.sched,
                    io.cpus.intersection(&vcpu.cpus)
                ),
            });
        }
    }
}

/// Linux >= 6.12: a CPU's fair server runs SCHED_OTHER tasks ahead of FIFO/RR threads for its
/// runtime each period. Flags the FIFO/RR vCPU threads on CPUs whose fair server runtime is > 0.
fn fair_server(input: &LintInput, out: &mut Vec<Finding>) {
    let mut hits = Vec::new();
    for p in input.planned.iter().filter(|p| p.sched.is_rt() && matches!(p.role, Role::Vcpu { .. })) {
        let on: Vec<String> =
            p.cpus.iter().filter_map(|c| input.fair_server.active_on(c).map(|f| format!("cpu{c} {f}"))).collect();
        if !on.is_empty() {
            hits.push(format!("{} {} ({}) on {}", p.tid, p.comm, p.sched, on.join(", ")));
        }
    }
    if !hits.is_empty() {
        out.push(Finding {
            id: "fair_server_preempts_rt",
            severity: Severity::Warn,
            message: format!(
                "the per-CPU fair server runs SCHED_OTHER tasks ahead of the FIFO/RR vCPU threads {} ({}); set \
                 {}/sched/fair_server/cpuN/runtime to 0 on their CPUs if that delay is not acceptable",
                hits.join("; "),
                input.fair_server.source(),
                rtvirt_os::sysinfo::DEBUGFS
            ),
        });
    }
}

/// Reclaiming (GRUB) deadline threads take unused bandwidth on the CPUs of hard reservations.
fn reclaim(input: &LintInput, out: &mut Vec<Finding>) {
    let dl_cpus: CpuList = input.planned.iter().filter(|p| p.sched.is_deadline()).flat_map(|p| p.cpus.iter()).collect();
    let planned_reclaim =
        input.planned.iter().filter(|p| p.sched.flags & SCHED_FLAG_RECLAIM != 0).map(|p| (p.tid, p.cpus.clone()));
    let existing_reclaim =
        input.existing.iter().filter(|t| t.sched.flags & SCHED_FLAG_RECLAIM != 0).map(|t| (t.tid, t.affinity.clone()));
    for (tid, cpus) in planned_reclaim.chain(existing_reclaim) {
        if !cpus.intersection(&dl_cpus).is_empty() {
            out.push(Finding {
                id: "reclaim_on_hard_reservation",
                severity: Severity::Warn,
                message: format!(
                    "thread {tid} has SCHED_FLAG_RECLAIM on CPU {} shared with hard reservations: it may consume their \
                     unused bandwidth and delay their replenishment",
                    cpus.intersection(&dl_cpus)
                ),
            });
        }
    }
}

fn irqs_on_rt_cpus(input: &LintInput, out: &mut Vec<Finding>) {
    let rt_cpus = CpuList(input.isolated.0.union(&input.partitions.0).copied().collect());
    if rt_cpus.is_empty() {
        return;
    }
    let hits: Vec<String> = input
        .irqs
        .iter()
        .filter(|i| !input.placed_irqs.contains(&i.number) && !i.effective.intersection(&rt_cpus).is_empty())
        .map(|i| format!("{} ({}) on CPU {}", i.number, i.actions.join(","), i.effective.intersection(&rt_cpus)))
        .collect();
    if !hits.is_empty() {
        out.push(Finding {
            id: "irq_on_isolated_cpu",
            severity: Severity::Warn,
            message: format!(
                "IRQs land on isolated/reserved CPUs: {} (move them with /proc/irq/N/smp_affinity_list, irqaffinity= \
                 or a profile's irq role)",
                hits.join("; ")
            ),
        });
    }
}

/// The scheduling attributes a thread will have after the apply.
fn after(input: &LintInput, t: &ThreadInfo) -> SchedAttr {
    input.planned.iter().find(|p| p.tid == t.tid).map(|p| p.sched).unwrap_or(t.sched)
}

fn entity(tid: u32, comm: &str, role: &Role, sched: &SchedAttr, changed: bool) -> Entity {
    Entity { tid, comm: comm.to_string(), role: role.name(), sched: sched.to_string(), changed, rank: rank(sched) }
}

/// Per CPU, every entity that can compete for it after the apply: every thread whose affinity
/// allows the CPU and that is runnable (state R) or in an RT/deadline class, every per-CPU kernel
/// thread, every changed thread, and the CPU's fair server; highest priority first.
fn per_cpu_view(input: &LintInput) -> BTreeMap<u32, Vec<Entity>> {
    let mut view: BTreeMap<u32, Vec<Entity>> = input.online.iter().map(|c| (c, Vec::new())).collect();
    let mut add = |cpus: &CpuList, e: Entity| {
        for c in cpus.iter() {
            if let Some(v) = view.get_mut(&c) {
                v.push(e.clone());
            }
        }
    };
    for t in input.existing {
        let planned = input.planned.iter().find(|p| p.tid == t.tid);
        let sched = planned.map(|p| p.sched).unwrap_or(t.sched);
        let competes = planned.is_some() || rank(&sched) > 0 || t.state == 'R' || t.role.is_percpu_kthread();
        if competes {
            add(
                planned.map(|p| &p.cpus).unwrap_or(&t.affinity),
                entity(t.tid, &t.comm, &t.role, &sched, planned.is_some()),
            );
        }
    }
    for p in input.planned.iter().filter(|p| !input.existing.iter().any(|t| t.tid == p.tid)) {
        add(&p.cpus, entity(p.tid, &p.comm, &p.role, &p.sched, true));
    }
    for (cpu, v) in view.iter_mut() {
        if let Some(f) = input.fair_server.active_on(*cpu) {
            // Linux >= 6.12: the CPU's SCHED_OTHER tasks run inside a deadline server (dl_server).
            v.push(Entity {
                tid: 0,
                comm: "fair_server".into(),
                role: "dl_server",
                sched: format!("DEADLINE server for SCHED_OTHER {f}"),
                changed: false,
                rank: 1000,
            });
        }
        v.sort_by_key(|e| std::cmp::Reverse(e.rank));
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_os::sched::SCHED_FIFO;

    fn thread(tid: u32, comm: &str, role: Role, sched: SchedAttr, cpus: &str) -> ThreadInfo {
        ThreadInfo {
            tid,
            pid: tid,
            comm: comm.into(),
            role,
            guest: None,
            sched,
            policy: sched::policy_name(sched.policy),
            affinity: CpuList::parse(cpus).unwrap(),
            cpu: 0,
            cgroup: "/".into(),
            starttime: 1,
            kthread: true,
            state: 'S',
        }
    }

    fn planned(tid: u32, role: Role, sched: SchedAttr, cpus: &str) -> Planned {
        Planned {
            tid,
            comm: format!("t{tid}"),
            role,
            guest: Some("g".into()),
            sched,
            cpus: CpuList::parse(cpus).unwrap(),
        }
    }

    /// Fair servers as debugfs would show them: (runtime, period) per CPU 0, 1.
    fn fair(cpu0_runtime: u64, cpu1_runtime: u64) -> FairServers {
        let v: Vec<String> =
            [cpu0_runtime, 1_000_000_000, cpu1_runtime, 1_000_000_000].iter().map(u64::to_string).collect();
        FairServers::parse(&[0, 1], &v)
    }

    fn run_with(
        planned: &[Planned],
        existing: &[ThreadInfo],
        rt_runtime: i64,
        fair_server: &FairServers,
    ) -> LintReport {
        lint(&LintInput {
            planned,
            existing,
            irqs: &[],
            placed_irqs: &[],
            isolated: CpuList::default(),
            online: CpuList::parse("0-1").unwrap(),
            partitions: CpuList::default(),
            rt_runtime_us: Some(rt_runtime),
            fair_server,
        })
    }

    fn run(planned: &[Planned], rt_runtime: i64, fair_server: bool) -> LintReport {
        let existing = vec![thread(10, "ksoftirqd/1", Role::Ksoftirqd { cpu: 1 }, SchedAttr::other(0), "1")];
        let f = if fair_server { fair(50_000_000, 50_000_000) } else { FairServers::Absent };
        run_with(planned, &existing, rt_runtime, &f)
    }

    fn severity(r: &LintReport, id: &str) -> Option<Severity> {
        r.findings.iter().find(|f| f.id == id).map(|f| f.severity)
    }

    #[test]
    fn fifo_vcpu_over_kthreads_fails_only_when_nothing_bounds_it() {
        let p = [planned(1, Role::Vcpu { index: 0 }, SchedAttr::fixed(SCHED_FIFO, 47), "1")];
        assert_eq!(severity(&run(&p, -1, false), "fifo_vcpu_above_kthreads"), Some(Severity::Fail));
        assert_eq!(severity(&run(&p, 950_000, false), "fifo_vcpu_above_kthreads"), Some(Severity::Warn));
        assert_eq!(severity(&run(&p, -1, true), "fifo_vcpu_above_kthreads"), Some(Severity::Warn));
        assert_eq!(severity(&run(&p, -1, true), "fair_server_preempts_rt"), Some(Severity::Warn));
        // on another CPU than the kthread: nothing to starve
        let p0 = [planned(1, Role::Vcpu { index: 0 }, SchedAttr::fixed(SCHED_FIFO, 47), "0")];
        assert_eq!(severity(&run(&p0, -1, false), "fifo_vcpu_above_kthreads"), None);
    }

    #[test]
    fn deadline_with_admission_disabled_fails_and_reclaim_warns() {
        let p = [planned(1, Role::Vcpu { index: 0 }, SchedAttr::deadline(1_000_000, 10_000_000, 10_000_000), "1")];
        assert_eq!(severity(&run(&p, -1, true), "dl_admission_disabled"), Some(Severity::Fail));
        assert_eq!(severity(&run(&p, 950_000, true), "dl_admission_disabled"), None);
        let mut greedy = SchedAttr::deadline(1_000_000, 10_000_000, 10_000_000);
        greedy.flags |= SCHED_FLAG_RECLAIM;
        let p2 = [p[0].clone(), planned(2, Role::Other, greedy, "1")];
        assert_eq!(severity(&run(&p2, 950_000, true), "reclaim_on_hard_reservation"), Some(Severity::Warn));
    }

    #[test]
    fn io_thread_below_its_vcpu_fails_and_the_view_orders_by_priority() {
        let p = [
            planned(1, Role::Vcpu { index: 0 }, SchedAttr::fixed(SCHED_FIFO, 47), "1"),
            planned(2, Role::Napi { dev: "eth1".into(), id: 1 }, SchedAttr::fixed(SCHED_FIFO, 40), "1"),
        ];
        let r = run(&p, 950_000, false);
        assert_eq!(severity(&r, "io_below_vcpu"), Some(Severity::Fail));
        assert_eq!(r.failures(), 1);
        let ok =
            [p[0].clone(), planned(2, Role::Napi { dev: "eth1".into(), id: 1 }, SchedAttr::fixed(SCHED_FIFO, 49), "1")];
        assert_eq!(severity(&run(&ok, 950_000, false), "io_below_vcpu"), None);
        let cpu1 = &r.per_cpu[&1];
        assert!(cpu1.windows(2).all(|w| w[0].rank >= w[1].rank), "{cpu1:?}");
        assert_eq!(cpu1.last().unwrap().comm, "ksoftirqd/1");
        let order: Vec<&str> = cpu1.iter().map(|e| e.comm.as_str()).collect();
        assert_eq!(order, ["t1", "t2", "ksoftirqd/1"], "planned threads are shown too, highest first");
    }

    #[test]
    fn fair_server_is_flagged_only_on_cpus_where_its_runtime_is_positive() {
        let existing = vec![thread(10, "ksoftirqd/1", Role::Ksoftirqd { cpu: 1 }, SchedAttr::other(0), "1")];
        let fifo = SchedAttr::fixed(SCHED_FIFO, 47);
        let on_cpu1 = [planned(1, Role::Vcpu { index: 0 }, fifo, "1")];
        let on_cpu0 = [planned(1, Role::Vcpu { index: 0 }, fifo, "0")];
        // CPU 1's fair server switched off (runtime 0), CPU 0's at the default
        let f = fair(50_000_000, 0);
        let r = run_with(&on_cpu1, &existing, -1, &f);
        assert_eq!(severity(&r, "fair_server_preempts_rt"), None, "{:?}", r.findings);
        assert_eq!(
            severity(&r, "fifo_vcpu_above_kthreads"),
            Some(Severity::Fail),
            "nothing bounds the vCPU on CPU 1 any more"
        );
        assert!(!r.per_cpu[&1].iter().any(|e| e.comm == "fair_server"));
        let r0 = run_with(&on_cpu0, &existing, -1, &f);
        let msg = &r0
            .findings
            .iter()
            .find(|x| x.id == "fair_server_preempts_rt")
            .expect("CPU 0 has an active fair server")
            .message;
        assert!(msg.contains("cpu0 50000000/1000000000 ns"), "{msg}");
        assert!(r0.per_cpu[&0].iter().any(|e| e.comm == "fair_server" && e.sched.contains("50000000/1000000000")));
        // a deadline vCPU or a FIFO thread that is not a vCPU is not what this finding is about
        let dl = [
            planned(1, Role::Vcpu { index: 0 }, SchedAttr::deadline(1_000_000, 10_000_000, 10_000_000), "0"),
            planned(2, Role::Napi { dev: "x".into(), id: 1 }, fifo, "0"),
        ];
        assert_eq!(severity(&run_with(&dl, &existing, 950_000, &f), "fair_server_preempts_rt"), None);
        // unreadable settings: assumed active at the default
        let r = run_with(&on_cpu1, &existing, -1, &FairServers::Unreadable("no debugfs".into()));
        assert_eq!(severity(&r, "fair_server_preempts_rt"), Some(Severity::Warn));
    }

    #[test]
    fn per_cpu_view_lists_runnable_fair_class_threads_and_rt_threads_but_not_sleepers() {
        let mut busy = thread(20, "make", Role::Other, SchedAttr::other(0), "0-1");
        busy.state = 'R';
        let sleeper = thread(21, "sshd", Role::Other, SchedAttr::other(0), "0-1");
        let rt_sleeper = thread(22, "watchdog", Role::Other, SchedAttr::fixed(SCHED_FIFO, 99), "0");
        let existing = vec![
            busy,
            sleeper,
            rt_sleeper,
            thread(10, "ksoftirqd/1", Role::Ksoftirqd { cpu: 1 }, SchedAttr::other(0), "1"),
        ];
        let r = run_with(&[], &existing, 950_000, &FairServers::Absent);
        let names = |c: u32| r.per_cpu[&c].iter().map(|e| e.comm.as_str()).collect::<Vec<_>>();
        assert_eq!(
            names(0),
            ["watchdog", "make"],
            "RT first; the runnable SCHED_OTHER thread too, not the sleeping one"
        );
        assert_eq!(names(1), ["make", "ksoftirqd/1"]);
    }
}
