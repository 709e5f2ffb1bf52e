//! The planner's output, `rtvirt.plan/v1`: per guest its server (period, budget, deadline) and
//! core, per vCPU its reservation, core and tasks, per task its probabilistic budget; read back by
//! `simulate --plan`, `host apply` and `measure tasks`.

use crate::error::InputError;
use crate::scenario::{Guest, Placement, Scenario, MAX_CORES};
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
    /// What must be set for the guests that did not fit, and for the whole plan: each setting
    /// with the value that would make it fit (empty for a feasible plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<Need>,
}

/// A setting and the value that would make a guest (or the whole plan) fit, and how to get it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Need {
    /// The guest it is for (None: the whole plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<String>,
    /// What to set, e.g. "release latency", "budget enforcement", "cores".
    pub setting: String,
    /// The value it needs, e.g. "<= 180us at p99", "HRTICK", "3".
    pub value: String,
    /// How to get it on a Linux host.
    pub how: String,
}

/// The settings a [`Need`] names (`Need.setting`); `rtvirt host audit --plan` maps each to the
/// checks of a host that bear on it.
pub mod need_setting {
    pub const SERVER_PERIOD: &str = "server period";
    pub const BUDGET_ENFORCEMENT: &str = "budget enforcement";
    pub const RELEASE_LATENCY: &str = "release latency";
    pub const SERVER_OVERHEAD: &str = "server overhead";
    pub const CORES: &str = "cores";
    /// Every setting.
    pub const ALL: [&str; 5] = [SERVER_PERIOD, BUDGET_ENFORCEMENT, RELEASE_LATENCY, SERVER_OVERHEAD, CORES];
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
    /// The host the plan was made for: "this host (...)", "host model FILE", "preset NAME" or
    /// "ideal host: no overheads charged".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The promise: "quantile Q" (host costs charged at their Q-quantile, each task's miss
    /// probability bounded in `tasks[].miss_bound`) or "hard" (the largest costs seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<String>,
    /// Every assumption about the host the plan rests on, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    /// Fields this version does not know, kept as read.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl PlanSettings {
    pub fn is_empty(&self) -> bool {
        *self == PlanSettings::default()
    }
}

/// A guest's plan. A guest of one vCPU is described by its own fields; with several vCPUs, `period_ns`, `budget_ns`, `deadline_ns` and `core` are those of its first
/// vCPU with a reservation, `bandwidth` is the sum over its vCPUs, and `vcpus` has each one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GuestPlan {
    pub name: String,
    /// "edf" | "fp"
    pub scheduler: String,
    /// "prm" | "edp" (a global guest: "mpr")
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
    /// How the guest schedules its tasks over its vCPUs (written only when "global").
    #[serde(default, skip_serializing_if = "is_partitioned")]
    pub placement: Placement,
    /// A guest of several vCPUs: every vCPU by id, its reservation, core and tasks. Empty for a
    /// guest of one vCPU, whose own fields describe it: read [`GuestPlan::vcpu_plans`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vcpus: Vec<VcpuPlan>,
}

fn is_partitioned(placement: &Placement) -> bool {
    *placement == Placement::Partitioned
}

/// One vCPU of a guest: its reservation on the host and the tasks it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VcpuPlan {
    /// 0..n, as the guest numbers its vCPUs.
    pub id: u32,
    /// Host core its thread is placed on (None: did not fit).
    pub core: Option<u32>,
    /// "prm" | "edp" | "mpr" (a server of a global guest's interface) | "none": no reservation (a
    /// housekeeping vCPU, or one the packing left without tasks), only a core.
    pub model: String,
    pub period_ns: u64,
    pub budget_ns: u64,
    pub deadline_ns: u64,
    pub bandwidth: f64,
    /// The tasks bound to it (partitioned guests; a global guest's run on all its vCPUs).
    pub tasks: Vec<String>,
}

/// [`VcpuPlan::model`] of a vCPU without a reservation.
pub const NO_RESERVATION: &str = "none";

impl VcpuPlan {
    /// A reservation (SCHED_DEADLINE, RTDS...) is planned for it.
    pub fn reserved(&self) -> bool {
        self.model != NO_RESERVATION
    }
}

impl GuestPlan {
    /// Its vCPUs: the `vcpus` list, or for a plan without one (written before multi-vCPU guests)
    /// the one vCPU the guest's own fields describe, running every task.
    pub fn vcpu_plans(&self) -> Vec<VcpuPlan> {
        if !self.vcpus.is_empty() {
            return self.vcpus.clone();
        }
        vec![VcpuPlan {
            id: 0,
            core: self.core,
            model: self.model.clone(),
            period_ns: self.period_ns,
            budget_ns: self.budget_ns,
            deadline_ns: self.deadline_ns,
            bandwidth: self.bandwidth,
            tasks: self.tasks.iter().map(|t| t.name.clone()).collect(),
        }]
    }
}

impl GuestPlan {
    /// Per task of a partitioned guest `g` (the scenario's), the planned vCPU listing it: exactly
    /// one, one that `serves` (has a reservation and is not housekeeping), the task's own `vcpu`
    /// if it names one. `i` is the guest's index in the plan, for the error's field.
    pub fn task_vcpus(&self, i: usize, g: &Guest, serves: &[bool]) -> Result<Vec<u32>, InputError> {
        let at = |j: usize| format!("guests[{i}].vcpus[{j}].tasks");
        for (j, v) in self.vcpus.iter().enumerate() {
            if let Some(name) = v.tasks.iter().find(|n| !g.tasks.iter().any(|t| &&t.name == n)) {
                return Err(InputError::field(at(j), format!("task \"{name}\" is not a task of guest \"{}\"", g.name)));
            }
        }
        let mut of = Vec::with_capacity(g.tasks.len());
        for t in &g.tasks {
            let mut on = self.vcpus.iter().enumerate().filter(|(_, v)| v.tasks.contains(&t.name)).map(|(j, _)| j);
            let (Some(j), None) = (on.next(), on.next()) else {
                return Err(InputError::field(
                    format!("guests[{i}].vcpus"),
                    format!("task \"{}\" of guest \"{}\": expected on exactly one planned vCPU", t.name, g.name),
                ));
            };
            if !serves.get(j).copied().unwrap_or(false) {
                return Err(InputError::field(
                    at(j),
                    format!("task \"{}\" on vCPU {j}, which has no reservation (or is housekeeping)", t.name),
                ));
            }
            if t.vcpu.is_some_and(|k| k as usize != j) {
                return Err(InputError::field(
                    at(j),
                    format!(
                        "task \"{}\" is bound to vCPU {} in the scenario, planned on {j}",
                        t.name,
                        t.vcpu.unwrap_or(0)
                    ),
                ));
            }
            of.push(j as u32);
        }
        Ok(of)
    }
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
    /// The plan's promise for this task: an upper bound on the probability that a job misses its
    /// deadline, under the plan's `settings.assumptions` (None: a plan made before promises were
    /// stated, or an infeasible guest's task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_bound: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CorePlan {
    /// The host CPU.
    pub id: u32,
    pub guests: Vec<String>,
    pub bandwidth: f64,
    /// Why this CPU was chosen (a plan for a known host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
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
            let at = format!("guests[{i}]");
            check_reservation(g.period_ns, g.budget_ns, g.deadline_ns, &at)?;
            for (j, v) in g.vcpus.iter().enumerate() {
                let at = format!("{at}.vcpus[{j}]");
                if v.id as usize != j {
                    return Err(InputError::field(
                        format!("{at}.id"),
                        format!("vCPU id {}: expected the vCPUs listed by id, 0 first ({j} here)", v.id),
                    ));
                }
                if v.reserved() {
                    check_reservation(v.period_ns, v.budget_ns, v.deadline_ns, &at)?;
                }
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
            check_core(g.core, scenario, &format!("guests[{i}].core"))?;
            let vcpus = scenario.guest(&g.name).map_or(1, |s| s.vcpus.len());
            if !g.vcpus.is_empty() && g.vcpus.len() != vcpus {
                return Err(InputError::field(
                    format!("guests[{i}].vcpus"),
                    format!(
                        "the plan has {} vCPUs for guest \"{}\", the scenario {vcpus}: plan the scenario again",
                        g.vcpus.len(),
                        g.name
                    ),
                ));
            }
            for (j, v) in g.vcpus.iter().enumerate() {
                check_core(v.core, scenario, &format!("guests[{i}].vcpus[{j}].core"))?;
            }
        }
        Ok(())
    }

    fn guest_names(&self) -> String {
        self.guests.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// A reservation's period, budget and deadline at `at`: 0 < period <= 1 h, budget <= deadline
/// <= period.
fn check_reservation(period_ns: u64, budget_ns: u64, deadline_ns: u64, at: &str) -> Result<(), InputError> {
    if period_ns == 0 {
        return Err(InputError::field(format!("{at}.period_ns"), "zero period"));
    }
    crate::scenario::check_timing(crate::Nanos(period_ns), &format!("{at}.period_ns"))?;
    if budget_ns > deadline_ns || deadline_ns > period_ns {
        return Err(InputError::field(
            format!("{at}.budget_ns"),
            format!("expected budget <= deadline <= period, got {budget_ns} / {deadline_ns} / {period_ns} ns"),
        ));
    }
    Ok(())
}

/// A planned core is a CPU number of the host the plan was made for (a plan for a real host keeps
/// CPU 0 for housekeeping, so a one-core plan may be on CPU 1): any below [`MAX_CORES`].
fn check_core(core: Option<u32>, _scenario: &Scenario, at: &str) -> Result<(), InputError> {
    match core {
        Some(c) if c >= MAX_CORES => Err(InputError::field(
            at,
            format!("CPU {c}: expected a CPU number below {MAX_CORES} (the most rtvirt plans for)"),
        )),
        _ => Ok(()),
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
    fn a_plan_without_vcpus_reads_as_one_vcpu_running_every_task() {
        let p = Plan::from_json(PLAN).unwrap();
        let g = &p.guests[0];
        assert_eq!(g.placement, Placement::Partitioned);
        let v = g.vcpu_plans();
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].id, v[0].core, v[0].budget_ns, v[0].tasks.clone()),
            (0, Some(0), 3_120_000, vec!["t1".into()])
        );
        assert!(v[0].reserved());
        // written back unchanged: no vcpus list, no placement for a partitioned guest of one vCPU
        assert_eq!(serde_json::to_value(&p).unwrap()["guests"][0].get("vcpus"), None);
    }

    #[test]
    fn vcpus_are_checked_like_the_guest() {
        let two = PLAN.replace(
            "\"bound\":\"cantelli\"}]}]",
            "\"bound\":\"cantelli\"}],\"vcpus\":[{\"id\":0,\"core\":0,\"model\":\"prm\",\"period_ns\":10000000,\
             \"budget_ns\":3120000,\"deadline_ns\":10000000,\"bandwidth\":0.312,\"tasks\":[\"t1\"]},{\"id\":1,\"core\":1,\
             \"model\":\"none\",\"period_ns\":0,\"budget_ns\":0,\"deadline_ns\":0,\"bandwidth\":0.0,\"tasks\":[]}]}]",
        );
        let p = Plan::from_json(&two).unwrap();
        assert_eq!(p.guests[0].vcpu_plans().len(), 2);
        assert!(!p.guests[0].vcpus[1].reserved());
        let again = Plan::from_json(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(p, again);
        let e = Plan::from_json(&two.replace("\"model\":\"none\"", "\"model\":\"prm\"")).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("guests[0].vcpus[1].period_ns"), "{e}");
        let e = Plan::from_json(&two.replace("\"id\":1", "\"id\":3")).unwrap_err();
        assert_eq!(e.at.field.as_deref(), Some("guests[0].vcpus[1].id"), "{e}");
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
