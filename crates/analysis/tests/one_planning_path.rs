//! Issue 35, 1: one planning path. Outside the planner itself, product code plans only through
//! `rtvirt_analysis::requests` (`plan`, `plan_with`, `max_rho`, `plan_sweep_cell`): no source file
//! of any crate calls the planner's own entry points (`plan_at`, `max_rho_with`,
//! `planner::max_rho`), so every front end plans with the same checks and host.

use std::path::{Path, PathBuf};

/// The planner's entry points, as a call site writes them.
const PLANNER_CALLS: [&str; 3] = ["plan_at(", "max_rho_with(", "planner::max_rho("];

/// The files allowed to call them: the planner, the one path, and what a plan needs (which plans
/// again with one setting changed).
const PATH: [&str; 3] = ["analysis/src/planner.rs", "analysis/src/requests.rs", "analysis/src/needs.rs"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text of a source file without its unit tests (`#[cfg(test)]` to the end: the house style
/// puts them last) and test-only modules (`tests.rs`).
fn product_code(path: &Path) -> Option<String> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return None;
    }
    let text = std::fs::read_to_string(path).unwrap();
    Some(match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    })
}

#[test]
fn only_the_planning_path_calls_the_planner() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&crates).unwrap().flatten() {
        let src = e.path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    assert!(files.len() > 100, "found only {} source files under {}", files.len(), crates.display());
    let mut offenders = Vec::new();
    for f in &files {
        let shown = f.strip_prefix(&crates).unwrap().display().to_string();
        if PATH.iter().any(|p| shown.ends_with(p)) {
            continue;
        }
        let Some(code) = product_code(f) else { continue };
        for call in PLANNER_CALLS.iter().filter(|c| code.contains(*c)) {
            offenders.push(format!("{shown}: {call}"));
        }
    }
    assert!(offenders.is_empty(), "plan through rtvirt_analysis::requests instead: {offenders:#?}");
}

/// The front ends (the command line, Python) plan through `rtvirt_loop::planning`, which adds the
/// tick host's promise check to the path: none of their sources calls the path's `plan` or
/// `plan_with` directly.
#[test]
fn front_ends_plan_through_the_loop() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for front in ["cli/src", "python/src"] {
        sources(&crates.join(front), &mut files);
    }
    assert!(files.len() > 20, "found only {} front-end sources", files.len());
    let calls = ["requests::plan(", "requests::plan_with("];
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|f| product_code(f).map(|code| (f, code)))
        .flat_map(|(f, code)| {
            calls.iter().filter(move |c| code.contains(**c)).map(move |c| format!("{}: {c}", f.display()))
        })
        .collect();
    assert!(offenders.is_empty(), "plan through rtvirt_loop::planning instead: {offenders:#?}");
}
