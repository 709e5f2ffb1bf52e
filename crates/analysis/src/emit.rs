//! Deployable text for a plan: a shell script that deploys the SCHED_DEADLINE reservations on a
//! stock kernel and writes its undo script ([`chrt`]), Xen RTDS commands and a cpupool layout
//! (`rtds`), libvirt domain patches and a qemu hook ([`libvirt`]), a tuned profile ([`tuned`]),
//! KubeVirt VirtualMachines ([`kubevirt`]), OpenStack Nova flavor extra specs ([`nova`]),
//! and CARTS XML input (`carts`, the format of the CARTS compositional analysis tool:
//! `<system>`, `<component>`, `<task p d e>`, times in milliseconds). Pure text generation, no
//! I/O: the CLI reads the files given and writes the [`EmittedFile`]s.

pub mod chrt;
pub mod kubevirt;
pub mod libvirt;
pub mod nova;
pub mod tuned;
mod words;

use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::scenario::{GuestScheduler, PeriodChoice, Placement, Scenario};
use rtvirt_model::{xml, InputError, Nanos};
use std::fmt::Write;
use words::{comment_word, guest_field, placed, shell_word};
pub use words::{pid_variable, EmittedFile};

/// A guest name as an `xl` domain argument: one shell word, and not starting with `-` (which xl
/// would read as an option however it is quoted).
fn domain_word(plan: &Plan, guest: &GuestPlan) -> Result<String, InputError> {
    if guest.name.starts_with('-') {
        return Err(InputError::field(
            guest_field(plan, guest),
            format!("{:?} starts with '-', which xl would read as an option: rename the guest", guest.name),
        ));
    }
    shell_word(&guest.name, || guest_field(plan, guest))
}

/// Budget rounded up and period rounded down to whole microseconds (RTDS's unit), so the supply
/// never shrinks.
fn rtds_us(budget_ns: u64, period_ns: u64) -> (u64, u64) {
    (budget_ns.div_ceil(1000), period_ns / 1000)
}

/// `xl sched-rtds` of a domain of several vCPUs: one line per reserved vCPU. A Xen domain lives
/// in one cpupool, so its vCPUs must share the one core of their pool.
fn rtds_vcpus(s: &mut String, plan: &Plan, g: &GuestPlan, domain: &str) -> Result<(), InputError> {
    let mut cores: Vec<u32> = g.vcpus.iter().filter_map(|v| v.core).collect();
    cores.sort_unstable();
    cores.dedup();
    if cores.len() > 1 {
        let list: Vec<String> = cores.iter().map(u32::to_string).collect();
        return Err(InputError::field(
            guest_field(plan, g),
            format!(
                "guest {} has vCPUs on cores {}: a Xen domain lives in one cpupool, and rtds makes one pool per \
                 core; plan it with spread = false on a host where its vCPUs share a core, or deploy with --emit chrt",
                comment_word(&g.name),
                list.join(", ")
            ),
        ));
    }
    for v in g.vcpus.iter().filter(|v| v.reserved()) {
        let (b, p) = rtds_us(v.budget_ns, v.period_ns);
        let _ = writeln!(s, "xl sched-rtds -d {domain} -v {} -p {p} -b {b}", v.id);
    }
    Ok(())
}

/// `--emit rtds`: Xen commands: one RTDS cpupool per planned core (CPU moved out of Pool-0),
/// each domain migrated to its pool, and `xl sched-rtds` period/budget in microseconds. Domain
/// names are passed as single quoted words (`shell_word`), and shown in comments as
/// `comment_word`.
pub fn rtds(plan: &Plan) -> Result<String, InputError> {
    let mut s = String::new();
    let _ =
        writeln!(s, "#!/bin/sh\n# rtvirt plan --emit rtds: Xen RTDS (microseconds; budget rounded up, period down).");
    let _ = writeln!(s, "# Domain names are the guest names. Keep at least one CPU in Pool-0 for Dom0: plan with");
    let _ = writeln!(
        s,
        "# --cores N-1 and renumber if the plan uses every CPU. RTDS has no separate deadline (it is the period)."
    );
    let _ = writeln!(s, "set -eu");
    for c in &plan.cores {
        let guests: Vec<String> = c.guests.iter().map(|g| comment_word(g)).collect();
        let _ = writeln!(s, "\n# cpupool for core {} (bandwidth {:.4}): {}", c.id, c.bandwidth, guests.join(", "));
        let _ = writeln!(s, "xl cpupool-cpu-remove Pool-0 {}", c.id);
        let _ = writeln!(s, "xl cpupool-create 'name=\"rtvirt-core{0}\"' 'sched=\"rtds\"' 'cpus=\"{0}\"'", c.id);
    }
    for (g, core) in placed(plan) {
        let (b, p) = rtds_us(g.budget_ns, g.period_ns);
        let domain = domain_word(plan, g)?;
        let _ =
            writeln!(s, "\n# domain {}: {} every {}", comment_word(&g.name), Nanos(g.budget_ns), Nanos(g.period_ns));
        if g.deadline_ns < g.period_ns {
            let _ = writeln!(
                s,
                "# warning: the EDP deadline {} < period cannot be expressed in RTDS; re-plan with --model prm",
                Nanos(g.deadline_ns)
            );
        }
        let _ = writeln!(s, "xl cpupool-migrate {domain} rtvirt-core{core}");
        if g.vcpus.is_empty() {
            let _ = writeln!(s, "xl sched-rtds -d {domain} -v all -p {p} -b {b}");
        } else {
            rtds_vcpus(&mut s, plan, g, &domain)?;
        }
    }
    Ok(s)
}

/// Nanoseconds as decimal milliseconds (CARTS's unit), exact.
pub fn ns_as_ms(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    format!("{whole}.{:06}", frac).trim_end_matches('0').to_string()
}

/// `--emit carts`: CARTS XML input (times in ms): one component per guest with its scheduler
/// (EDF or DM), its candidate server periods as `min_period`/`max_period`, and each task's
/// period, deadline and execution bound c from the plan.
pub fn carts(scenario: &Scenario, plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<?xml version=\"1.0\"?>\n<!-- rtvirt plan, emit carts: CARTS input, times in milliseconds; e = the plan's \
         budget c -->"
    );
    let all: Vec<Vec<u64>> =
        scenario.guests.iter().map(|g| g.server_periods.candidates(&g.tasks).iter().map(|p| p.0).collect()).collect();
    let lo = all.iter().filter_map(|c| c.first()).min().copied().unwrap_or(0);
    let hi = all.iter().filter_map(|c| c.last()).max().copied().unwrap_or(0);
    let _ =
        writeln!(s, "<system os_scheduler=\"EDF\" min_period=\"{}\" max_period=\"{}\">", ns_as_ms(lo), ns_as_ms(hi));
    for (g, cands) in scenario.guests.iter().zip(&all) {
        let sched = match g.scheduler {
            GuestScheduler::Edf => "EDF",
            GuestScheduler::Fp => "DM",
        };
        let (lo, hi) = (cands.first().copied().unwrap_or(0), cands.last().copied().unwrap_or(0));
        // what CARTS' input cannot say is said next to it
        let commented = xml::comment(&g.name);
        if g.tasks.iter().any(|t| t.priority_given) {
            let _ = writeln!(
                s,
                "  <!-- {commented}: explicit task priorities; CARTS analyses the component as deadline monotonic -->"
            );
        }
        let scan = PeriodChoice::Range { min: Nanos(lo), max: Nanos(hi), step: Nanos::from_ms(1) }.candidates(&g.tasks);
        if cands.iter().ne(scan.iter().map(|p| &p.0)) {
            let list: Vec<String> = cands.iter().map(|&p| ns_as_ms(p)).collect();
            let _ = writeln!(
                s,
                "  <!-- {commented}: candidate server periods {} ms; CARTS scans min_period..max_period -->",
                list.join(", ")
            );
        }
        let planned = plan.guest(&g.name);
        let budgets = planned.map(|p| &p.tasks);
        let components: Vec<(String, Vec<&str>)> = match planned.filter(|p| !p.vcpus.is_empty()) {
            Some(p) if g.placement == Placement::Partitioned => p
                .vcpus
                .iter()
                .filter(|v| v.reserved())
                .map(|v| (format!("{}/vcpu{}", g.name, v.id), v.tasks.iter().map(String::as_str).collect()))
                .collect(),
            _ => vec![(g.name.clone(), g.tasks.iter().map(|t| t.name.as_str()).collect())],
        };
        if g.is_multi_vcpu() {
            let how = match g.placement {
                Placement::Partitioned => "one component per vCPU with a reservation, with the tasks planned on it",
                Placement::Global => "one uniprocessor component here; rtvirt plans it as one MPR interface",
            };
            let _ = writeln!(
                s,
                "  <!-- {commented}: {} vCPUs, {} placement: {how} -->",
                g.vcpus.len(),
                g.placement.as_str()
            );
        }
        for (name, tasks) in components {
            component(
                &mut s,
                &name,
                sched,
                (lo, hi),
                g.tasks.iter().filter(|t| tasks.contains(&t.name.as_str())),
                budgets,
            );
        }
    }
    let _ = writeln!(s, "</system>");
    s
}

/// One CARTS `<component>` with its tasks, each task's `e` the plan's budget (its WCET when the
/// plan has none).
fn component<'a>(
    s: &mut String,
    name: &str,
    sched: &str,
    (lo, hi): (u64, u64),
    tasks: impl Iterator<Item = &'a rtvirt_model::scenario::Task>,
    budgets: Option<&Vec<rtvirt_model::plan::TaskPlan>>,
) {
    let _ = writeln!(
        s,
        "  <component name=\"{}\" scheduler=\"{sched}\" min_period=\"{}\" max_period=\"{}\">",
        xml::escape(name),
        ns_as_ms(lo),
        ns_as_ms(hi)
    );
    for t in tasks {
        let c = budgets.and_then(|b| b.iter().find(|x| x.name == t.name)).map_or(t.wcet.0, |x| x.budget_ns);
        let _ = writeln!(
            s,
            "    <task name=\"{}\" p=\"{}\" d=\"{}\" e=\"{}\"/>",
            xml::escape(&t.name),
            ns_as_ms(t.period.0),
            ns_as_ms(t.deadline.0),
            ns_as_ms(c)
        );
    }
    let _ = writeln!(s, "  </component>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_formatting_is_exact() {
        assert_eq!(ns_as_ms(10_000_000), "10");
        assert_eq!(ns_as_ms(2_382_000), "2.382");
        assert_eq!(ns_as_ms(1), "0.000001");
    }
}
