//! One check's result: its status, the value read and where, and the texts that explain it.

use super::texts;
use schemars::JsonSchema;
use serde::Serialize;

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
    /// How to fix it (for some checks, this host's own: its CPU vendor's setting).
    pub fix: String,
    pub depends_on: &'static str,
    /// What tuned's realtime-virtual-host profile (or a profile it includes, named) sets for this.
    pub tuned: &'static str,
}

impl Check {
    /// This check with a fix of this host's own instead of the general one.
    pub(crate) fn with_fix(self, fix: String) -> Check {
        Check { fix, ..self }
    }

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
            fix: t.fix.to_string(),
            depends_on: t.depends_on,
            tuned: t.tuned,
        }
    }
}
