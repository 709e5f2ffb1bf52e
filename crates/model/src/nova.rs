//! `rtvirt plan --emit nova --format json`: per guest the OpenStack Nova flavor extra specs that
//! give it dedicated real-time vCPUs (`rtvirt.nova/v1`), and the reservation Nova cannot express.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const NOVA_SCHEMA: &str = "rtvirt.nova/v1";

/// Every placed guest's flavor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "rtvirt.nova/v1")]
pub struct NovaFlavors {
    pub schema: String,
    pub flavors: Vec<NovaFlavor>,
}

/// One guest's flavor: its name (`rtvirt-<guest>`), vCPU count and extra specs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NovaFlavor {
    /// The scenario's guest.
    pub guest: String,
    /// The flavor the specs are set on.
    pub flavor: String,
    /// vCPUs the flavor must have (`openstack flavor create --vcpus`).
    pub vcpus: u32,
    /// `hw:...` extra specs, key -> value, as `openstack flavor set --property KEY=VALUE` sets them.
    pub extra_specs: BTreeMap<String, String>,
    /// The SCHED_DEADLINE reservation of each reserved vCPU, applied on the compute node by
    /// `rtvirt host apply` (Nova gives real-time vCPUs SCHED_FIFO only).
    pub reservations: Vec<NovaReservation>,
}

/// One vCPU's reservation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NovaReservation {
    pub vcpu: u32,
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}
