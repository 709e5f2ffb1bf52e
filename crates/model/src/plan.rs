//! The planner's output, `rtvirt.plan/v1`: per guest its server (period, budget, deadline) and
//! core, per task its probabilistic budget; read back by `simulate --plan`, `host apply` and
//! `measure tasks`.

use crate::error::InputError;
use crate::scenario::Scenario;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const PLAN_SCHEMA: &str = "rtvirt.plan/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "rtvirt.plan/v1")]
pub struct Plan {
    pub schema: String,
    pub feasible: bool,
    pub cores_used: u32,
    /// Largest uniform rho for which every guest fits on the cores (None if none does).
    pub max_rho: Option<f64>,
    pub guests: Vec<GuestPlan>,
    pub cores: Vec<CorePlan>,
    /// Guests that did not fit on any core.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unplaced: Vec<String>,
    /// Planner settings that produced this plan (model, heuristic, rho, budget method...).
    #[serde(default, skip_serializing_if = "PlanSettings::is_empty")]
    pub settings: PlanSettings,
}

/// The planner settings a plan was made with. Written in key order (they were once a map).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSettings {
    /// Share of each core the reservations may take together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_cap: Option<f64>,
    /// Why this cap: the host model's kernel limits, the scenario's value or the safe default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_cap_source: Option<String>,
    /// "wcet" | "cantelli" | "quantile"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Cores of the host the plan was made for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heuristic: Option<String>,
    /// "prm" | "edp"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The overheads charged (per server period, per job, release jitter, enforcement), when
    /// planned with a host model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overheads: Option<String>,
    /// The uniform rho asked for (`null`: each task's own, else its WCET).
    #[serde(default, deserialize_with = "crate::serde_field::present", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<f64>")]
    pub rho: Option<Option<f64>>,
    /// What tasks without a rho use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl PlanSettings {
    pub fn is_empty(&self) -> bool {
        *self == PlanSettings::default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GuestPlan {
    pub name: String,
    /// "edf" | "fp"
    pub scheduler: String,
    /// "prm" | "edp"
    pub model: String,
    pub period_ns: u64,
    pub budget_ns: u64,
    pub deadline_ns: u64,
    pub bandwidth: f64,
    /// Core the vCPU is placed on (None: did not fit).
    pub core: Option<u32>,
    pub tasks: Vec<TaskPlan>,
    /// Planned with a host model: the least interface the guest would need without its overheads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_free: Option<OverheadFree>,
}

/// A guest's least interface when no overhead is charged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OverheadFree {
    pub period_ns: u64,
    pub budget_ns: u64,
    pub bandwidth: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskPlan {
    pub name: String,
    pub period_ns: u64,
    pub deadline_ns: u64,
    pub wcet_ns: u64,
    /// The execution bound c used in the analysis.
    pub budget_ns: u64,
    pub rho: Option<f64>,
    /// "wcet" | "cantelli" | "quantile"
    pub bound: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CorePlan {
    pub id: u32,
    pub guests: Vec<String>,
    pub bandwidth: f64,
}

impl Plan {
    /// Read a plan JSON file, checking the schema and the basic sanity of every reservation.
    pub fn from_file(path: &Path) -> Result<Plan, InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Plan)?;
        Plan::from_json(&text).map_err(|e| e.in_file(path))
    }

    pub fn from_json(text: &str) -> Result<Plan, InputError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let plan: Plan = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            let err = InputError::field(
                field,
                format!("{inner} (expected an rtvirt.plan/v1 JSON document from `rtvirt plan --format json`)"),
            );
            err.at_line(inner.line(), inner.column())
        })?;
        if plan.schema != PLAN_SCHEMA {
            return Err(InputError::field("schema", format!("\"{}\": expected \"{PLAN_SCHEMA}\"", plan.schema)));
        }
        for (i, g) in plan.guests.iter().enumerate() {
            let at = |f: &str| format!("guests[{i}].{f}");
            if g.period_ns == 0 {
                return Err(InputError::field(at("period_ns"), "zero period"));
            }
            crate::scenario::check_timing(crate::Nanos(g.period_ns), &at("period_ns"))?;
            if g.budget_ns > g.deadline_ns || g.deadline_ns > g.period_ns {
                return Err(InputError::field(
                    at("budget_ns"),
                    format!(
                        "expected budget <= deadline <= period, got {} / {} / {} ns",
                        g.budget_ns, g.deadline_ns, g.period_ns
                    ),
                ));
            }
        }
        Ok(plan)
    }

    pub fn guest(&self, name: &str) -> Option<&GuestPlan> {
        self.guests.iter().find(|g| g.name == name)
    }

    /// Check that the plan was made for this scenario: same guest names, cores that exist.
    pub fn check_matches(&self, scenario: &Scenario) -> Result<(), InputError> {
        for g in &scenario.guests {
            if self.guest(&g.name).is_none() {
                return Err(InputError::field(
                    "guests",
                    format!(
                        "the plan has no guest \"{}\" of the scenario (plan guests: {})",
                        g.name,
                        self.guest_names()
                    ),
                ));
            }
        }
        for (i, g) in self.guests.iter().enumerate() {
            if scenario.guest(&g.name).is_none() {
                return Err(InputError::field(
                    format!("guests[{i}].name"),
                    format!("guest \"{}\" is not in the scenario", g.name),
                ));
            }
            if let Some(c) = g.core {
                if c >= scenario.host.cores {
                    return Err(InputError::field(
                        format!("guests[{i}].core"),
                        format!("core {c} does not exist (the scenario's host has {} cores)", scenario.host.cores),
                    ));
                }
            }
        }
        Ok(())
    }

    fn guest_names(&self) -> String {
        self.guests.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"{"schema":"rtvirt.plan/v1","feasible":true,"cores_used":1,"max_rho":0.93,
      "guests":[{"name":"vm1","scheduler":"edf","model":"prm","period_ns":10000000,"budget_ns":3120000,
        "deadline_ns":10000000,"bandwidth":0.312,"core":0,"tasks":[{"name":"t1","period_ns":10000000,
        "deadline_ns":10000000,"wcet_ns":1000000,"budget_ns":800000,"rho":0.9,"bound":"cantelli"}]}],
      "cores":[{"id":0,"guests":["vm1"],"bandwidth":0.312}]}"#;

    #[test]
    fn round_trips() {
        let p = Plan::from_json(PLAN).unwrap();
        assert_eq!(p.guests[0].budget_ns, 3_120_000);
        let again = Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(p, again);
    }

    #[test]
    fn rejects_wrong_schema_and_types_with_location() {
        let e = Plan::from_json(&PLAN.replace("plan/v1", "plan/v9")).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("schema"));
        let e = Plan::from_json(&PLAN.replace("\"budget_ns\":3120000", "\"budget_ns\":\"x\"")).unwrap_err();
        assert!(e.at.field.as_deref().unwrap().contains("budget_ns"), "{e}");
        assert!(e.at.line_col.is_some());
        let e = Plan::from_json(&PLAN.replace("\"budget_ns\":3120000", "\"budget_ns\":30000000")).unwrap_err();
        assert!(e.to_string().contains("budget <= deadline"), "{e}");
    }
}
