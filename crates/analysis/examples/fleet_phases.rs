//! Phases of planning a fleet from a file (docs/PERFORMANCE.md, "A fleet from a file"): read and
//! check the scenario, the plan at the scenario's rhos, the plan's JSON, each timed with `Instant`.
//! Run: `cargo run --release --workspace --example fleet_phases -- FLEET.json` (files written by
//! `scripts/fleet-scenario.py`).

use rtvirt_analysis::planner::{plan_at, PlanOptions};
use rtvirt_model::scenario::Scenario;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: fleet_phases FLEET.json|FLEET.toml");
    let t = Instant::now();
    let s = Scenario::from_file(std::path::Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));
    println!("read + check: {:.2} s ({} guests)", t.elapsed().as_secs_f64(), s.guests.len());
    let t = Instant::now();
    let p = plan_at(&s, &PlanOptions::default(), None).plan;
    println!("plan_at: {:.2} s (feasible {}, {} cores used)", t.elapsed().as_secs_f64(), p.feasible, p.cores_used);
    let t = Instant::now();
    let json = serde_json::to_string_pretty(&p).expect("a plan serializes");
    println!("JSON: {:.2} s ({} bytes)", t.elapsed().as_secs_f64(), json.len());
}
