//! `--emit nova`: per planned guest an OpenStack Nova flavor `rtvirt-<guest>` with the extra specs
//! of a real-time instance, as `openstack flavor set` commands (every word quoted by
//! [`shell_word`]) or as `rtvirt.nova/v1` JSON ([`NovaFlavors`]).
//!
//! The specs: `hw:cpu_policy=dedicated` (a pCPU per vCPU), `hw:cpu_realtime=yes` with
//! `hw:cpu_realtime_mask` excluding the vCPUs without a reservation (`^1,3`; left out when every
//! vCPU has one, which Nova takes as all real-time since 22.0 Victoria),
//! `hw:emulator_threads_policy=isolate` (the emulator threads on a pCPU of their own),
//! `hw:mem_page_size=1GB` and `hw:pmu=False`. Nova gives real-time vCPUs SCHED_FIFO 1; the
//! SCHED_DEADLINE reservation is applied on the compute node by `rtvirt host apply`.

use super::kubevirt::realtime_mask;
use super::words::{comment_word, guest_field, placed, shell_word};
use rtvirt_model::nova::{NovaFlavor, NovaFlavors, NovaReservation, NOVA_SCHEMA};
use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::{InputError, Nanos};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The one file `--emit nova` writes.
pub const FILE: &str = "nova.sh";

/// Every placed guest's flavor.
pub fn flavors(plan: &Plan) -> NovaFlavors {
    NovaFlavors { schema: NOVA_SCHEMA.into(), flavors: placed(plan).map(|(g, _)| flavor(g)).collect() }
}

fn flavor(g: &GuestPlan) -> NovaFlavor {
    let vcpus = g.vcpus.len().max(1) as u32;
    let mut specs = BTreeMap::new();
    let mut set = |k: &str, v: &str| specs.insert(k.to_string(), v.to_string());
    set("hw:cpu_policy", "dedicated");
    set("hw:cpu_realtime", "yes");
    set("hw:emulator_threads_policy", "isolate");
    set("hw:mem_page_size", "1GB");
    set("hw:pmu", "False");
    let rt = realtime_mask(g);
    let others: Vec<String> =
        (0..vcpus).filter(|id| !rt.split(',').any(|r| r == id.to_string())).map(|id| format!("^{id}")).collect();
    if !others.is_empty() {
        set("hw:cpu_realtime_mask", &others.join(","));
    }
    let reservations = g
        .vcpu_plans()
        .iter()
        .filter(|v| v.reserved())
        .map(|v| NovaReservation {
            vcpu: v.id,
            runtime_ns: v.budget_ns,
            deadline_ns: v.deadline_ns,
            period_ns: v.period_ns,
        })
        .collect();
    NovaFlavor { guest: g.name.clone(), flavor: format!("rtvirt-{}", g.name), vcpus, extra_specs: specs, reservations }
}

/// `openstack flavor set` per guest, every word quoted.
pub fn script(plan: &Plan) -> Result<String, InputError> {
    let mut s = String::from(
        "#!/bin/sh\n# rtvirt plan --emit nova: OpenStack flavor extra specs of a real-time instance per guest.\n\
         # Create each flavor first (openstack flavor create --vcpus N --ram MB --disk GB NAME). Nova gives the\n\
         # real-time vCPUs SCHED_FIFO 1; their SCHED_DEADLINE reservation is applied on the compute node by\n\
         # `rtvirt host apply` (docs/host.md, OpenStack Nova).\nset -eu\n",
    );
    for (g, f) in placed(plan).map(|(g, _)| g).zip(flavors(plan).flavors) {
        let field = || guest_field(plan, g);
        let _ = writeln!(s, "\n# guest {}: {} vCPU(s)", comment_word(&g.name), f.vcpus);
        for r in &f.reservations {
            let _ = writeln!(
                s,
                "#   vCPU {}: SCHED_DEADLINE runtime {} deadline {} period {}",
                r.vcpu,
                Nanos(r.runtime_ns),
                Nanos(r.deadline_ns),
                Nanos(r.period_ns)
            );
        }
        let mut line = format!("openstack flavor set {}", shell_word(&f.flavor, field)?);
        for (k, v) in &f.extra_specs {
            let _ = write!(line, " \\\n    --property {}", shell_word(&format!("{k}={v}"), field)?);
        }
        let _ = writeln!(s, "{line}");
    }
    Ok(s)
}
