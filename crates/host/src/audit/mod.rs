//! `rtvirt host audit`: RT-readiness checks of this host. Every check reports the raw value read
//! (`found`) and where it was read (`source`), pass/warn/fail/skip, why it matters, how to fix
//! it, what it depends on and what tuned's realtime-virtual-host profile sets (`rtvirt.audit/v1`).

mod checks;
pub mod targets;
mod texts;

use schemars::JsonSchema;
use serde::Serialize;

pub const AUDIT_SCHEMA: &str = "rtvirt.audit/v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Warn,
    Fail,
    /// Not applicable on this host (e.g. no cpufreq driver, kernel too old for the feature).
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    /// The raw value read from this machine ("none" when absent).
    pub found: String,
    /// Files (or other sources) the value was read from, and any detail.
    pub source: String,
    pub why: &'static str,
    pub fix: &'static str,
    pub depends_on: &'static str,
    /// What tuned's realtime-virtual-host profile (or a profile it includes, named) sets for this.
    pub tuned: &'static str,
}

impl Check {
    /// A check result with its texts.
    pub(crate) fn new(id: &'static str, status: Status, found: impl Into<String>, source: impl Into<String>) -> Check {
        let t = texts::text(id);
        Check {
            id,
            title: t.title,
            status,
            found: found.into(),
            source: source.into(),
            why: t.why,
            fix: t.fix,
            depends_on: t.depends_on,
            tuned: t.tuned,
        }
    }
}

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
    audit.targets = targets::targets(&audit, needs);
    audit
}
