//! `--emit kubevirt`: one `kubevirt.io/v1` VirtualMachine per planned guest, as YAML documents
//! (written by `serde_yaml_ng` from a JSON value; checked against KubeVirt's Go API types by
//! crates/cli/tests/kubevirt-validate).
//!
//! What KubeVirt expresses is set in the VM: `dedicatedCpuPlacement` (the kubelet's CPU manager
//! gives each vCPU a pCPU of its own), `isolateEmulatorThread` (one more pCPU for QEMU's emulator
//! thread, off the vCPUs' CPUs), `realtime` with the `mask` of the vCPUs the plan reserves
//! (virt-launcher gives them SCHED_FIFO 1 and pins them), 1 GiB huge pages, guest NUMA mirroring
//! the host's (`guestMappingPassthrough`, which needs dedicated CPUs and huge pages) and no memory
//! balloon. What it cannot express, the SCHED_DEADLINE reservation, is carried in annotations on
//! the VM's instance template: `rtvirt.io/plan` is the plan of this guest alone (`rtvirt.plan/v1`
//! JSON), which a node agent (privileged, host PID namespace) hands to `rtvirt host apply` with
//! the vCPU threads of the instance's QEMU (docs/host.md, "KubeVirt").

use super::words::{comment_word, guest_field, placed, EmittedFile};
use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::InputError;
use serde_json::{json, Value};

/// Annotation holding the guest's own plan (`rtvirt.plan/v1` JSON).
pub const PLAN_ANNOTATION: &str = "rtvirt.io/plan";
/// Annotation holding the scenario's guest name (the VM's name is a DNS label made from it).
pub const GUEST_ANNOTATION: &str = "rtvirt.io/guest";
/// Guest memory of every VM (the scenario does not say): one 1 GiB huge page; edit to the guest's.
pub const MEMORY: &str = "1Gi";
/// Huge page size of the guests' memory.
pub const PAGE_SIZE: &str = "1Gi";
/// The one file `--emit kubevirt` writes.
pub const FILE: &str = "kubevirt.yaml";
/// Most bytes of all annotations of a Kubernetes object (its API server refuses more).
const MAX_ANNOTATIONS: usize = 256 * 1024 - 1024;
/// Longest Kubernetes object name KubeVirt takes for a VM (a DNS-1123 label: its pod's hostname).
const MAX_NAME: usize = 63;

/// `--emit kubevirt`: every placed guest's VirtualMachine, one YAML document each.
pub fn manifests(plan: &Plan) -> Result<EmittedFile, InputError> {
    let mut text = String::from(
        "# rtvirt plan --emit kubevirt: one VirtualMachine per guest. Add each guest's disks and networks, and set\n\
         # its memory (here 1Gi in 1Gi huge pages). The SCHED_DEADLINE reservation KubeVirt cannot express is in\n\
         # the annotation rtvirt.io/plan, applied on the node by `rtvirt host apply` (docs/host.md, KubeVirt).\n",
    );
    let mut taken = Vec::new();
    for (g, _) in placed(plan) {
        let name = vm_name(plan, g, &taken)?;
        let vm = virtual_machine(plan, g, &name)?;
        let yaml = serde_yaml_ng::to_string(&vm).map_err(|e| InputError::new(format!("the VM as YAML: {e}")))?;
        text.push_str(&format!("---\n# guest {}\n{yaml}", comment_word(&g.name)));
        taken.push(name);
    }
    Ok(EmittedFile { name: FILE.into(), text, executable: false })
}

/// The VM's name: the guest's name as a DNS-1123 label (lower case, `[a-z0-9-]`, at most 63
/// characters, alphanumeric at both ends); a number added when two guests give the same one.
fn vm_name(plan: &Plan, g: &GuestPlan, taken: &[String]) -> Result<String, InputError> {
    let mapped: String =
        g.name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    let stem: String = mapped.trim_matches('-').chars().take(MAX_NAME - 4).collect();
    let stem = stem.trim_end_matches('-').to_string();
    if stem.is_empty() {
        return Err(InputError::field(
            guest_field(plan, g),
            format!("{}: no letter or digit to name a KubeVirt VM by: rename the guest", comment_word(&g.name)),
        ));
    }
    let mut name = stem.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{stem}-{n}");
        n += 1;
    }
    Ok(name)
}

/// The plan of one guest: the guest, its cores and the plan's settings.
pub fn guest_plan(plan: &Plan, g: &GuestPlan) -> Plan {
    let cores = g.vcpu_plans().iter().filter_map(|v| v.core).collect::<Vec<_>>();
    Plan {
        guests: vec![g.clone()],
        cores: plan.cores.iter().filter(|c| cores.contains(&c.id)).cloned().collect(),
        unplaced: Vec::new(),
        needs: plan.needs.iter().filter(|n| n.guest.as_deref().is_none_or(|name| name == g.name)).cloned().collect(),
        ..plan.clone()
    }
}

/// The vCPUs of `g` with a reservation, as a libvirt CPU list ("0", "0,2"): KubeVirt's realtime
/// mask.
pub fn realtime_mask(g: &GuestPlan) -> String {
    let ids: Vec<String> = g.vcpu_plans().iter().filter(|v| v.reserved()).map(|v| v.id.to_string()).collect();
    ids.join(",")
}

fn virtual_machine(plan: &Plan, g: &GuestPlan, name: &str) -> Result<Value, InputError> {
    let own = serde_json::to_string(&guest_plan(plan, g))
        .map_err(|e| InputError::new(format!("the plan of guest {} as JSON: {e}", comment_word(&g.name))))?;
    if own.len() > MAX_ANNOTATIONS {
        return Err(InputError::field(
            guest_field(plan, g),
            format!(
                "the plan of guest {} is {} bytes of JSON, more than Kubernetes takes in annotations ({MAX_ANNOTATIONS}): \
                 deploy it with --emit libvirt or chrt",
                comment_word(&g.name),
                own.len()
            ),
        ));
    }
    let annotations = json!({ GUEST_ANNOTATION: g.name, PLAN_ANNOTATION: own });
    let vcpus = g.vcpus.len().max(1);
    let mut cpu = json!({
        "sockets": 1, "cores": vcpus, "threads": 1,
        "model": "host-passthrough",
        "dedicatedCpuPlacement": true,
        "isolateEmulatorThread": true,
        "numa": { "guestMappingPassthrough": {} },
    });
    let mask = realtime_mask(g);
    if !mask.is_empty() {
        cpu["realtime"] = json!({ "mask": mask });
    }
    Ok(json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": { "name": name, "annotations": { GUEST_ANNOTATION: g.name }, "labels": { "app.kubernetes.io/managed-by": "rtvirt" } },
        "spec": {
            "runStrategy": "Halted",
            "template": {
                "metadata": { "annotations": annotations, "labels": { "kubevirt.io/vm": name } },
                "spec": {
                    "domain": {
                        "cpu": cpu,
                        "memory": { "hugepages": { "pageSize": PAGE_SIZE } },
                        "resources": {
                            "requests": { "memory": MEMORY },
                            "limits": { "memory": MEMORY, "cpu": vcpus.to_string() },
                        },
                        "devices": { "autoattachMemBalloon": false },
                    },
                },
            },
        },
    }))
}
