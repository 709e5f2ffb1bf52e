//! `rtvirt host audit --plan`: the settings a plan needs to fit (`Plan.needs`, named by the one
//! planning path) as the audit's targets, each with the checks of this host that bear on it and
//! how they stand - so that the plan's "what must I set" and the audit point at the same things.

use super::{Check, Status};
use rtvirt_model::plan::{need_setting, Need};
use schemars::JsonSchema;
use serde::Serialize;

/// One need of the plan, with where this host stands on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Target {
    /// The guest it is for (None: the whole plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<String>,
    pub setting: String,
    /// The value the plan needs.
    pub value: String,
    /// How to get it.
    pub how: String,
    /// The audit checks that bear on it (ids of `checks`), with their status and value here.
    pub checks: Vec<TargetCheck>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TargetCheck {
    pub id: String,
    pub status: Status,
    pub found: String,
}

/// The checks that bear on a need's setting: what lowers the release latency (preemption model,
/// isolation, idle states), what enforces budgets (HRTICK), the kernel's period limits, what
/// costs per server period, and what gives cores.
pub fn related(setting: &str) -> &'static [&'static str] {
    match setting {
        need_setting::RELEASE_LATENCY => {
            &["preemption", "isolcpus", "nohz_full", "rcu_nocbs", "irq_affinity_isolated", "cpuidle", "governor"]
        }
        need_setting::BUDGET_ENFORCEMENT => &["hrtick"],
        need_setting::SERVER_PERIOD => &["deadline_periods"],
        need_setting::SERVER_OVERHEAD => &["cpuidle", "governor", "clocksource", "kvm"],
        need_setting::CORES => &["isolcpus", "smt", "cpuset_partitions"],
        _ => &[],
    }
}

/// Each need as a target, with the related ones of an audit's `checks`.
pub fn targets(checks: &[Check], needs: &[Need]) -> Vec<Target> {
    needs
        .iter()
        .map(|n| Target {
            guest: n.guest.clone(),
            setting: n.setting.clone(),
            value: n.value.clone(),
            how: n.how.clone(),
            checks: related(&n.setting)
                .iter()
                .filter_map(|id| checks.iter().find(|c| c.id == *id))
                .map(|c| TargetCheck { id: c.id.into(), status: c.status, found: c.found.clone() })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_a_plan_can_need_has_checks_and_every_check_named_exists() {
        let ids: Vec<&str> = crate::audit::texts::TEXTS.iter().map(|t| t.id).collect();
        for setting in need_setting::ALL {
            assert!(!related(setting).is_empty(), "{setting}");
            for id in related(setting) {
                assert!(ids.contains(id), "{setting}: no audit check {id}");
            }
        }
    }

    #[test]
    fn a_need_becomes_a_target_with_the_related_checks_as_this_host_has_them() {
        let audit = crate::audit::run();
        let need = Need {
            guest: Some("g".into()),
            setting: need_setting::BUDGET_ENFORCEMENT.into(),
            value: "HRTICK".into(),
            how: "echo HRTICK_DL".into(),
        };
        let t = &targets(&audit.checks, &[need])[0];
        assert_eq!((t.guest.as_deref(), t.setting.as_str()), (Some("g"), "budget enforcement"));
        let hrtick = audit.check("hrtick").unwrap();
        assert_eq!(
            t.checks,
            vec![TargetCheck { id: "hrtick".into(), status: hrtick.status, found: hrtick.found.clone() }]
        );
    }
}
