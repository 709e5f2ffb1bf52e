//! `rtvirt host audit`: RT-readiness checks of this host. Every check reports the raw value read
//! (`found`) and where it was read (`source`), pass/warn/fail/skip, why it matters, how to fix
//! it, what it depends on and what tuned's realtime-virtual-host profile sets (`rtvirt.audit/v1`).

mod check;
mod checks;
pub mod host_kind;
pub mod targets;
mod texts;

pub use check::{Check, Status};

use schemars::JsonSchema;
use serde::Serialize;

pub const AUDIT_SCHEMA: &str = "rtvirt.audit/v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckCounts {
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(title = "rtvirt.audit/v1")]
pub struct Audit {
    pub schema: &'static str,
    pub kernel: String,
    pub cpus_online: String,
    pub checks: Vec<Check>,
    pub summary: CheckCounts,
    /// With a plan (`--plan`): what it needs to fit, and where this host stands on each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<targets::Target>,
}

impl Audit {
    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }
}

/// Run every check on this host (read-only).
pub fn run() -> Audit {
    let checks = checks::all();
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    let summary = CheckCounts {
        pass: count(Status::Pass),
        warn: count(Status::Warn),
        fail: count(Status::Fail),
        skip: count(Status::Skip),
    };
    Audit {
        schema: AUDIT_SCHEMA,
        kernel: rtvirt_os::sysinfo::kernel_release(),
        cpus_online: rtvirt_os::sysinfo::online_cpus().to_string(),
        checks,
        summary,
        targets: vec![],
    }
}

/// [`run`], with the settings `needs` names as targets.
pub fn run_for(needs: &[rtvirt_model::plan::Need]) -> Audit {
    let mut audit = run();
    audit.targets = targets::targets(&audit.checks, needs);
    audit
}
