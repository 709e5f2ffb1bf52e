//! Host profiles (`rtvirt.profile/v1`, TOML): roles -> policy/priority/affinity for the threads of
//! the RT data path, IRQ affinities, threaded NAPI with its NAPI threads prioritised and pinned
//! (the stock-kernel way to get the partitioned RT softirq handling of Garcia Alvarado 2019(a)), container
//! cpusets. Example: `scenarios/profiles/seeds1-threaded.toml`.
//!
//! ```toml
//! schema = "rtvirt.profile/v1"
//! [[set]]
//! role = "vcpu"        # vcpu iothread vhost emulator irq napi ksoftirqd ktimers rcuc container
//! guest = "rt"         # bound on the command line with --vm rt=SOCKET or --pid rt=TID
//! vcpu = 1             # optional: only this vCPU
//! policy = "fifo"      # fifo rr other batch idle deadline
//! priority = 47
//! cpus = "1"
//! ```

use super::admission::{admit_per_core, Admission, Pinned, Server};
use super::run::{
    affinity_change, check_online, lint_and_run, sched_change, ApplyError, ApplyOptions, ApplyReport, Binding, Prepared,
};
use crate::error::{HostError, Result};
use crate::lint::{Finding, Planned, Severity};
use crate::threads::{self, Role, ThreadInfo};
use rtvirt_model::locate::locate_field;
use rtvirt_model::scenario::parse_toml_located;
use rtvirt_model::{InputError, Nanos};
use rtvirt_os::cgroup::Hierarchy;
use rtvirt_os::cpulist::CpuList;
use rtvirt_os::restore::Change;
use rtvirt_os::sched::{self, SchedAttr, SCHED_DEADLINE, SCHED_FIFO, SCHED_FLAG_RECLAIM, SCHED_RR};
use rtvirt_os::sysinfo;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const PROFILE_SCHEMA: &str = "rtvirt.profile/v1";
pub const ROLES: &[&str] =
    &["vcpu", "iothread", "vhost", "emulator", "irq", "napi", "ksoftirqd", "ktimers", "rcuc", "container"];

/// The profile file as written (`docs/schema/profile.schema.json` is generated from it).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "rtvirt.profile/v1")]
pub struct RawProfile {
    schema: String,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(rename = "set", default)]
    sets: Vec<RawSet>,
}

/// One `[[set]]` entry as written.
#[derive(Debug, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSet {
    role: String,
    guest: Option<String>,
    vcpu: Option<u32>,
    id: Option<String>,
    device: Option<String>,
    cpu: Option<u32>,
    cgroup: Option<String>,
    policy: Option<String>,
    priority: Option<u32>,
    nice: Option<i32>,
    runtime: Option<Nanos>,
    deadline: Option<Nanos>,
    period: Option<Nanos>,
    reclaim: Option<bool>,
    cpus: Option<String>,
    threaded: Option<bool>,
}

/// Which threads (or objects) a profile entry selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// vcpu / iothread / vhost / emulator threads of a bound guest.
    Guest { guest: String, role: String, vcpu: Option<u32>, id: Option<String> },
    /// The IRQs serving a device (their affinity) and their IRQ threads, if threaded.
    Irq { device: String },
    /// Threaded NAPI on a net device and its `napi/<dev>-<id>` threads.
    Napi { device: String, threaded: bool },
    /// ksoftirqd/ktimers/rcuc, on one CPU or all.
    PerCpu { role: String, cpu: Option<u32> },
    /// A container's cgroup (its cpuset).
    Container { cgroup: String },
}

/// One validated profile entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub index: usize,
    pub select: Selector,
    pub sched: Option<SchedAttr>,
    pub cpus: Option<CpuList>,
}

/// A validated profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub file: Option<PathBuf>,
    pub rules: Vec<Rule>,
    src: String,
}

impl Profile {
    pub fn from_file(path: &Path) -> Result<Profile, InputError> {
        let src = rtvirt_model::input::read_text(path, rtvirt_model::input::InputKind::HostProfile)?;
        let mut p = Profile::from_toml(&src).map_err(|e| e.in_file(path))?;
        p.file = Some(path.to_path_buf());
        Ok(p)
    }

    /// Parse and validate profile text; errors name the field and its line.
    pub fn from_toml(src: &str) -> Result<Profile, InputError> {
        let raw: RawProfile = parse_toml_located(src)?;
        let locate = |e: InputError| match e.at.field.as_deref().and_then(|f| locate_field(src, f)) {
            Some((l, c)) => e.at_line(l, c),
            None => e,
        };
        if raw.schema != PROFILE_SCHEMA {
            return Err(locate(InputError::field(
                "schema",
                format!("\"{}\": expected \"{PROFILE_SCHEMA}\"", raw.schema),
            )));
        }
        if raw.sets.is_empty() {
            return Err(locate(InputError::field("set", "the profile has no [[set]] entry: expected at least one")));
        }
        let rules = raw
            .sets
            .into_iter()
            .enumerate()
            .map(|(i, s)| rule(i, s).map_err(|e| locate(e.under(&format!("set[{i}]")))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Profile { file: None, rules, src: src.to_string() })
    }

    /// An InputError located at `set[i].field`.
    fn error(&self, i: usize, field: &str, msg: String) -> HostError {
        self.located(InputError::field(format!("set[{i}].{field}"), msg))
    }

    /// "FILE:LINE set[i].field" (as much of it as is known), for lint messages.
    fn place(&self, i: usize, field: &str) -> String {
        let f = format!("set[{i}].{field}");
        let line = locate_field(&self.src, &f).map(|(l, _)| format!(":{l}")).unwrap_or_default();
        let file = self.file.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "profile".into());
        format!("{file}{line} {f}")
    }

    /// The error with the profile's file and the line of its field.
    fn located(&self, mut e: InputError) -> HostError {
        if let Some((l, c)) = e.at.field.as_deref().and_then(|f| locate_field(&self.src, f)) {
            e = e.at_line(l, c);
        }
        match &self.file {
            Some(f) => e.in_file(f).into(),
            None => e.into(),
        }
    }
}

fn rule(index: usize, s: RawSet) -> Result<Rule, InputError> {
    let need =
        |v: Option<String>, f: &str| v.ok_or_else(|| InputError::field(f, format!("role \"{}\" needs `{f}`", s.role)));
    let select = match s.role.as_str() {
        "vcpu" | "iothread" | "vhost" | "emulator" => Selector::Guest {
            guest: need(s.guest.clone(), "guest")?,
            role: s.role.clone(),
            vcpu: s.vcpu,
            id: s.id.clone(),
        },
        "irq" => Selector::Irq { device: need(s.device.clone(), "device")? },
        "napi" => Selector::Napi {
            device: interface_name(need(s.device.clone(), "device")?)?,
            threaded: s.threaded.unwrap_or(true),
        },
        "ksoftirqd" | "ktimers" | "rcuc" => {
            if s.cpus.is_some() {
                return Err(InputError::field(
                    "cpus",
                    format!("{} threads are bound to their CPU; select one with `cpu = N` instead", s.role),
                ));
            }
            Selector::PerCpu { role: s.role.clone(), cpu: s.cpu }
        }
        "container" => Selector::Container { cgroup: cgroup_path(need(s.cgroup.clone(), "cgroup")?)? },
        other => {
            return Err(InputError::field(
                "role",
                format!("unknown role \"{other}\" (expected one of: {})", ROLES.join(", ")),
            ))
        }
    };
    let sched = sched_of(&s)?;
    let cpus = s.cpus.as_deref().map(|c| CpuList::parse(c).map_err(|e| InputError::field("cpus", e))).transpose()?;
    if let Some(c) = &cpus {
        check_online(c, "cpus")?;
    }
    if matches!(select, Selector::Container { .. }) && (cpus.is_none() || sched.is_some()) {
        return Err(InputError::field(
            "cpus",
            "role \"container\" sets the container's cpuset: give `cpus` (and no policy)",
        ));
    }
    if sched.is_none() && cpus.is_none() && !matches!(select, Selector::Napi { .. }) {
        return Err(InputError::field("policy", "this entry changes nothing: give `policy` and/or `cpus`"));
    }
    Ok(Rule { index, select, sched, cpus })
}

/// A network interface name as Linux accepts one (`dev_valid_name`): 1..=15 bytes (IFNAMSIZ - 1),
/// not `.` or `..`, no `/`, `:` or whitespace (and, here, no control characters). It names
/// `/sys/class/net/NAME`, so nothing else may reach outside that directory.
fn interface_name(name: String) -> Result<String, InputError> {
    let odd = |c: char| c == '/' || c == ':' || c.is_whitespace() || c.is_control();
    if name.is_empty() || name.len() > 15 || name == "." || name == ".." || name.chars().any(odd) {
        return Err(InputError::field(
            "device",
            format!(
                "{name:?} is not a network interface name (expected 1 to 15 bytes, not \".\" or \"..\", without '/', \
                 ':', whitespace or control characters)"
            ),
        ));
    }
    Ok(name)
}

/// A cgroup path below the cpuset hierarchy: no `.` or `..` component may lead out of it.
fn cgroup_path(path: String) -> Result<String, InputError> {
    if path.split('/').any(|c| c == "." || c == "..") || path.chars().any(char::is_control) {
        return Err(InputError::field(
            "cgroup",
            format!("{path:?}: expected a cgroup path below the cpuset hierarchy (no \".\" or \"..\" components)"),
        ));
    }
    Ok(path)
}

/// The scheduling attributes an entry asks for.
fn sched_of(set: &RawSet) -> Result<Option<SchedAttr>, InputError> {
    let Some(name) = &set.policy else {
        if set.priority.is_some() || set.nice.is_some() || set.runtime.is_some() {
            return Err(InputError::field("policy", "priority/nice/runtime given without a policy"));
        }
        return Ok(None);
    };
    let policy = sched::parse_policy(name).ok_or_else(|| {
        InputError::field(
            "policy",
            format!("unknown policy \"{name}\" (expected fifo, rr, other, batch, idle or deadline)"),
        )
    })?;
    let attr = match policy {
        SCHED_FIFO | SCHED_RR => {
            let p = set.priority.ok_or_else(|| InputError::field("priority", "fifo/rr need a priority 1..99"))?;
            if !(1..=99).contains(&p) {
                return Err(InputError::field("priority", format!("{p}: fifo/rr priorities are 1..99")));
            }
            SchedAttr::fixed(policy, p)
        }
        SCHED_DEADLINE => {
            let get = |v: Option<Nanos>, f: &str| {
                v.map(|n| n.as_ns())
                    .ok_or_else(|| InputError::field(f, "deadline needs runtime, deadline and period (e.g. \"1ms\")"))
            };
            let (r, d, p) = (
                get(set.runtime, "runtime")?,
                get(set.deadline.or(set.period), "deadline")?,
                get(set.period, "period")?,
            );
            if !(1024 <= r && r <= d && d <= p) {
                return Err(InputError::field(
                    "runtime",
                    format!("expected 1024ns <= runtime <= deadline <= period, got {r}/{d}/{p} ns"),
                ));
            }
            let mut a = SchedAttr::deadline(r, d, p);
            if set.reclaim == Some(true) {
                a.flags |= SCHED_FLAG_RECLAIM;
            }
            a
        }
        _ => {
            if set.priority.is_some_and(|p| p != 0) {
                return Err(InputError::field("priority", format!("policy {name} has no priority; use `nice`")));
            }
            let nice = set.nice.unwrap_or(0);
            if !(-20..=19).contains(&nice) {
                return Err(InputError::field("nice", format!("{nice}: nice is -20..19")));
            }
            SchedAttr { policy, nice, ..Default::default() }
        }
    };
    Ok(Some(attr))
}

/// Resolve and apply a profile; pinned `deadline` entries pass the `admission` tests per core
/// (then the kernel's cap) first, as a plan's reservations do.
pub fn apply_profile(
    profile: &Profile,
    bindings: &[Binding],
    admission: &[&dyn Admission],
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(&Change),
) -> Result<ApplyReport, ApplyError> {
    let prepared = prepare(profile, bindings, admission)?;
    let napi_rules: Vec<Rule> =
        profile.rules.iter().filter(|r| matches!(r.select, Selector::Napi { .. })).cloned().collect();
    let mut followup = || -> Result<Vec<Change>> {
        let mut out = Vec::new();
        for r in &napi_rules {
            let Selector::Napi { device, threaded } = &r.select else { continue };
            let found = napi_threads(device);
            if *threaded && found.is_empty() {
                return Err(profile.error(
                    r.index,
                    "device",
                    format!(
                        "threaded NAPI is on for {device} but no napi/{device}-* thread appeared (the device has no \
                         NAPI instance: e.g. a veth needs GRO or XDP)"
                    ),
                ));
            }
            out.extend(thread_changes(&found, r));
        }
        Ok(out)
    };
    lint_and_run(prepared, opts, &mut followup, progress)
}

/// Kernel threads napi/<dev>-<id>.
fn napi_threads(device: &str) -> Vec<ThreadInfo> {
    threads::kernel_threads()
        .into_iter()
        .filter(|t| matches!(&t.role, Role::Napi { dev, .. } if dev == device))
        .collect()
}

fn thread_changes(ts: &[ThreadInfo], r: &Rule) -> Vec<Change> {
    let mut out = Vec::new();
    for t in ts {
        if let Some(c) = &r.cpus {
            out.push(affinity_change(t, c.clone()));
        }
        if let Some(s) = r.sched {
            out.push(sched_change(t, s));
        }
    }
    out
}

fn planned_of(ts: &[ThreadInfo], r: &Rule) -> Vec<Planned> {
    ts.iter()
        .map(|t| Planned {
            tid: t.tid,
            comm: t.comm.clone(),
            role: t.role.clone(),
            guest: t.guest.clone(),
            sched: r.sched.unwrap_or(t.sched),
            cpus: r.cpus.clone().unwrap_or_else(|| t.affinity.clone()),
        })
        .collect()
}

/// Resolve every entry against this host; nothing is changed.
fn prepare(profile: &Profile, bindings: &[Binding], admission: &[&dyn Admission]) -> Result<Prepared> {
    let mut guests: BTreeMap<String, Vec<ThreadInfo>> = BTreeMap::new();
    for b in bindings {
        if guests.insert(b.guest.clone(), b.threads()?).is_some() {
            return Err(HostError::input(format!("guest \"{}\" is bound twice", b.guest)));
        }
    }
    let mut r =
        Resolver { profile, guests, system: threads::kernel_threads(), out: Prepared::default(), pinned: Vec::new() };
    for rule in &profile.rules {
        match &rule.select {
            Selector::Guest { guest, role, vcpu, id } => r.guest_threads(rule, guest, role, *vcpu, id.as_deref())?,
            Selector::Irq { device } => r.irq(rule, device)?,
            Selector::Napi { device, threaded } => r.napi(rule, device, *threaded)?,
            Selector::PerCpu { role, cpu } => r.per_cpu(rule, role, *cpu)?,
            Selector::Container { cgroup } => r.container(rule, cgroup)?,
        }
    }
    let fair_server = sysinfo::FairServers::of_this_host();
    admit_per_core(&r.pinned, admission, &fair_server, "the profile", "set").map_err(|e| profile.located(e))?;
    let mut out = Prepared { fair_server, ..r.out };
    if !out.partitions.is_empty() {
        let h = Hierarchy::find("cpuset").expect("checked when the partition was planned");
        let mut changes = h.partition_changes(&out.partitions)?;
        changes.append(&mut out.changes);
        out.changes = changes;
    }
    Ok(out)
}

/// Resolves profile entries into changes and the planned thread states.
struct Resolver<'a> {
    profile: &'a Profile,
    guests: BTreeMap<String, Vec<ThreadInfo>>,
    system: Vec<ThreadInfo>,
    out: Prepared,
    /// The reservations of pinned deadline entries, for the admission tests.
    pinned: Vec<Pinned>,
}

impl Resolver<'_> {
    /// Set policy/affinity on these threads. A deadline thread pinned to one CPU goes into that
    /// CPU's cpuset partition (created once, before every move), as for plans.
    fn threads(&mut self, ts: &[ThreadInfo], rule: &Rule) -> Result<()> {
        self.out.planned.extend(planned_of(ts, rule));
        let (Some(attr), Some(cpus)) = (rule.sched, &rule.cpus) else {
            self.out.changes.extend(thread_changes(ts, rule));
            return Ok(());
        };
        if !attr.is_deadline() {
            self.out.changes.extend(thread_changes(ts, rule));
            return Ok(());
        }
        if cpus.len() != 1 {
            return Err(self.profile.error(
                rule.index,
                "cpus",
                format!(
                    "\"{cpus}\": a SCHED_DEADLINE thread is pinned to one CPU (its own cpuset partition) or not pinned \
                     at all"
                ),
            ));
        }
        let cpu = cpus.iter().next().expect("one CPU");
        let h = Hierarchy::find("cpuset").ok_or_else(|| {
            HostError::input("no cpuset cgroup controller is mounted: pinned SCHED_DEADLINE threads need one")
        })?;
        self.out.partitions.0.insert(cpu);
        for t in ts {
            self.out.changes.push(affinity_change(t, cpus.clone()));
            self.out.changes.push(h.move_change(t.tid, t.starttime, cpu));
            self.out.changes.push(sched_change(t, attr));
            let server = Server {
                guest: format!("set[{}] thread {} ({})", rule.index, t.tid, t.comm),
                runtime_ns: attr.runtime_ns,
                deadline_ns: attr.deadline_ns,
                period_ns: attr.period_ns,
            };
            self.pinned.push(Pinned { core: cpu, tid: t.tid, server });
        }
        Ok(())
    }

    fn guest_threads(
        &mut self,
        rule: &Rule,
        guest: &str,
        role: &str,
        vcpu: Option<u32>,
        id: Option<&str>,
    ) -> Result<()> {
        let ts = self.guests.get(guest).ok_or_else(|| {
            self.profile.error(
                rule.index,
                "guest",
                format!("guest \"{guest}\" is not bound: give it with --vm {guest}=QMP_SOCKET or --pid {guest}=TID"),
            )
        })?;
        let hit: Vec<ThreadInfo> = ts.iter().filter(|t| guest_role_matches(t, role, vcpu, id)).cloned().collect();
        if hit.is_empty() {
            let have: Vec<String> = ts.iter().map(|t| format!("{} {}", t.role.name(), t.comm)).collect();
            return Err(self.profile.error(
                rule.index,
                "role",
                format!("role \"{role}\" matches no thread of guest \"{guest}\" (its threads: {})", have.join(", ")),
            ));
        }
        self.threads(&hit, rule)
    }

    /// The device's IRQs get the affinity; their IRQ threads (if threaded) policy and affinity.
    fn irq(&mut self, rule: &Rule, device: &str) -> Result<()> {
        let irqs: Vec<sysinfo::Irq> = sysinfo::irqs().into_iter().filter(|i| i.serves(device)).collect();
        if irqs.is_empty() {
            return Err(self.profile.error(
                rule.index,
                "device",
                format!("no IRQ handler named \"{device}\" (see /proc/interrupts)"),
            ));
        }
        if let Some(c) = &rule.cpus {
            for i in &irqs {
                let path = PathBuf::from(format!("/proc/irq/{}/smp_affinity_list", i.number));
                self.out.changes.push(Change::file(path, &c.to_string())?);
                self.out.placed_irqs.push(i.number);
            }
        }
        let ts: Vec<ThreadInfo> = self
            .system
            .iter()
            .filter(|t| matches!(t.role, Role::Irq { irq, .. } if irqs.iter().any(|i| i.number == irq)))
            .cloned()
            .collect();
        if let Some(attr) = rule.sched {
            let unthreaded: Vec<String> = irqs
                .iter()
                .filter(|i| !ts.iter().any(|t| matches!(t.role, Role::Irq { irq, .. } if irq == i.number)))
                .map(|i| format!("{} ({})", i.number, i.actions.join(",")))
                .collect();
            if !unthreaded.is_empty() {
                self.out.findings.push(Finding {
                    id: "irq_not_threaded",
                    severity: Severity::Fail,
                    message: format!(
                        "{}: IRQ {} of \"{device}\" has no irq/N-{device} thread: its handler runs in hard-IRQ \
                         context, so `policy` ({attr}) cannot be applied to it and the IRQ keeps preempting every \
                         thread. Boot with `threadirqs` (or a PREEMPT_RT kernel) to get IRQ threads{}; --force applies \
                         the rest of the profile without it",
                        self.profile.place(rule.index, "policy"),
                        unthreaded.join(", "),
                        if sysinfo::cmdline_param(&sysinfo::cmdline(), "threadirqs").is_some() {
                            " (threadirqs is on the command line: this handler is not threadable, e.g. IRQF_NO_THREAD)"
                        } else {
                            ""
                        },
                    ),
                });
            }
        }
        self.threads(&ts, rule)
    }

    /// Threaded NAPI on; its NAPI threads are set once they exist (the apply's follow-up).
    fn napi(&mut self, rule: &Rule, device: &str, threaded: bool) -> Result<()> {
        let path = PathBuf::from(format!("/sys/class/net/{device}/threaded"));
        if !path.exists() {
            return Err(self.profile.error(
                rule.index,
                "device",
                format!("no network device \"{device}\" with threaded NAPI support ({} missing)", path.display()),
            ));
        }
        self.out.changes.push(Change::file(path, if threaded { "1" } else { "0" })?);
        let existing = napi_threads(device);
        self.out.planned.extend(planned_of(&existing, rule));
        if existing.is_empty() && threaded {
            let cpus = rule.cpus.clone().unwrap_or_else(sysinfo::online_cpus);
            self.out.planned.push(Planned {
                tid: 0,
                comm: format!("napi/{device}-*"),
                role: Role::Napi { dev: device.to_string(), id: 0 },
                guest: None,
                sched: rule.sched.unwrap_or_default(),
                cpus,
            });
        }
        Ok(())
    }

    fn per_cpu(&mut self, rule: &Rule, role: &str, cpu: Option<u32>) -> Result<()> {
        let ts: Vec<ThreadInfo> = self
            .system
            .iter()
            .filter(|t| t.role.name() == role && cpu.is_none_or(|c| t.affinity == CpuList::single(c)))
            .cloned()
            .collect();
        if ts.is_empty() {
            return Err(self.profile.error(
                rule.index,
                "role",
                format!("no {role} thread on this host{}", cpu.map(|c| format!(" for CPU {c}")).unwrap_or_default()),
            ));
        }
        self.threads(&ts, rule)
    }

    fn container(&mut self, rule: &Rule, cgroup: &str) -> Result<()> {
        let h = Hierarchy::find("cpuset").ok_or_else(|| HostError::input("no cpuset cgroup controller is mounted"))?;
        let path = h.cpus_file(cgroup);
        if !path.exists() {
            return Err(self.profile.error(
                rule.index,
                "cgroup",
                format!("no cpuset cgroup \"{cgroup}\" ({} missing)", path.display()),
            ));
        }
        let cpus = rule.cpus.clone().expect("validated: container has cpus");
        self.out.changes.push(Change::file(path, &cpus.to_string())?);
        Ok(())
    }
}

fn guest_role_matches(t: &ThreadInfo, role: &str, vcpu: Option<u32>, id: Option<&str>) -> bool {
    match (&t.role, role) {
        (Role::Vcpu { index }, "vcpu") => vcpu.is_none_or(|v| v == *index),
        (Role::Iothread { id: tid }, "iothread") => id.is_none_or(|i| i == tid),
        (Role::Vhost { .. }, "vhost") => true,
        (Role::Emulator, "emulator") => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seeds1_layout() {
        let p = Profile::from_toml(include_str!("../../../../scenarios/profiles/seeds1-threaded.toml")).unwrap();
        assert!(p.rules.iter().any(|r| matches!(&r.select, Selector::Guest { role, .. } if role == "vcpu")
            && r.sched == Some(SchedAttr::fixed(SCHED_FIFO, 47))));
    }

    #[test]
    fn every_example_profile_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/profiles");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().and_then(|x| x.to_str()) == Some("toml") {
                Profile::from_file(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 2);
    }

    #[test]
    fn device_and_cgroup_names_cannot_leave_their_directories() {
        let profile = |role: &str, field: &str, value: &str| {
            format!("schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"{role}\"\ncpus = \"0\"\n{field} = {value:?}\n")
        };
        for bad in ["../../../../tmp/x", "..", ".", "", "eth0:1", "a b", "sixteen-bytes-xx", "tab\t"] {
            let e = Profile::from_toml(&profile("napi", "device", bad)).unwrap_err();
            assert_eq!(e.at.field.as_deref(), Some("set[0].device"), "{bad:?}: {e}");
            assert_eq!(e.at.line_col.map(|l| l.0), Some(5), "{bad:?}: {e}");
            assert!(e.to_string().contains("not a network interface name"), "{e}");
        }
        for good in ["eth0", "veth-rt0", "fifteen-bytes-x", "enp0s31f6", "wl\u{e9}"] {
            Profile::from_toml(&profile("napi", "device", good)).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        }
        for bad in ["../../../tmp", "docker/../../x", "a/./b"] {
            let e = Profile::from_toml(&profile("container", "cgroup", bad)).unwrap_err();
            assert_eq!(e.at.field.as_deref(), Some("set[0].cgroup"), "{bad:?}: {e}");
        }
        Profile::from_toml(&profile("container", "cgroup", "/machine.slice/x.scope")).unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        /// Oracle: Linux's interface-name rule; an accepted device's `threaded` file is a file of
        /// a direct child of /sys/class/net.
        #[test]
        fn a_napi_device_is_accepted_exactly_when_linux_would_name_an_interface_so(
            device in "[a./: \t\u{0}\u{7f}\u{e9}0-]{0,17}"
        ) {
            let toml_device = toml::Value::String(device.clone()).to_string();
            let src = format!("schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"napi\"\ndevice = {toml_device}\n");
            let linux = !device.is_empty() && device.len() <= 15 && device != "." && device != ".."
                && !device.chars().any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control());
            let accepted = Profile::from_toml(&src).is_ok();
            proptest::prop_assert_eq!(accepted, linux, "{:?}", device);
            if accepted {
                let path = Path::new("/sys/class/net").join(&device).join("threaded");
                let plain = path.components().all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
                proptest::prop_assert!(plain && path.parent().and_then(Path::parent) == Some(Path::new("/sys/class/net")));
            }
        }
    }

    #[test]
    fn unknown_role_and_bad_priority_are_located() {
        let src = "schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"vcpu\"\nguest = \"a\"\npolicy = \"fifo\"\n\
                   priority = 10\n[[set]]\nrole = \"nic\"\ndevice = \"x\"\n";
        let e = Profile::from_toml(src).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("set[1].role"));
        assert_eq!(e.at.line_col.map(|l| l.0), Some(8));
        assert!(e.message.contains("unknown role \"nic\""), "{e}");
        let e = Profile::from_toml(&src.replace("priority = 10", "priority = 100")).unwrap_err();
        assert!(e.to_string().contains("1..99"), "{e}");
        let e = Profile::from_toml(&src.replace("policy", "polcy")).unwrap_err();
        assert!(e.to_string().contains("polcy"), "{e}");
    }

    #[test]
    fn deadline_entries_need_valid_parameters() {
        let src = "schema = \"rtvirt.profile/v1\"\n[[set]]\nrole = \"vcpu\"\nguest = \"a\"\npolicy = \"deadline\"\n\
                   runtime = \"2ms\"\nperiod = \"1ms\"\n";
        assert!(Profile::from_toml(src).unwrap_err().to_string().contains("runtime <= deadline"));
        let ok = Profile::from_toml(&src.replace("2ms", "100us")).unwrap();
        assert_eq!(ok.rules[0].sched, Some(SchedAttr::deadline(100_000, 1_000_000, 1_000_000)));
    }
}
