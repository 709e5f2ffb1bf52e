//! Fuzzing every parser of the model crate in-process (see `fuzz/mod.rs` for the harness and the
//! budget): the scenario (TOML, every section: `[host]`, `[[guest]]`, `[guest.vcpu]`, `[sim]`,
//! `[[sim.thread]]`, `[net]`), CARTS XML, the plan (`rtvirt.plan/v1`), results
//! (`rtvirt.results/v1`), the results reader of `rtvirt export` (`tables::read`: documents,
//! arrays, interval report lines), execution-time samples, sweep files, the host model
//! (`rtvirt.hostmodel/v1`) and study files (`rtvirt study`). Each parser gets
//! `RTVIRT_FUZZ_CASES` cases (default 20,000), half structure-aware, half raw.

mod fuzz;

use fuzz::{cases, copy_scenarios, corpus, files_in, workspace, Structure, Target};
use rtvirt_model::exec::Samples;
use rtvirt_model::hostmodel::HostModel;
use rtvirt_model::plan::Plan;
use rtvirt_model::results::Results;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::study::Study;
use rtvirt_model::sweep::Sweep;
use rtvirt_model::InputError;
use std::path::{Path, PathBuf};

/// Run both halves for one parser, in a fresh folder holding a copy of `scenarios/`.
fn run(
    name: &'static str,
    case_file: &str,
    corpus_files: Vec<PathBuf>,
    structure: Structure,
    structured: bool,
    parse: &dyn Fn(&Path) -> Result<(), InputError>,
) {
    let dir = fuzz::case_dir();
    copy_scenarios(dir.path());
    std::fs::create_dir_all(dir.path().join("experiments")).unwrap();
    let target = Target { name, file: dir.path().join(case_file), corpus: corpus(&corpus_files), structure, parse };
    let outcome = fuzz::fuzz(&target, structured, cases() / 2);
    if structured && outcome.cases >= 1000 {
        // the structure-aware half must reach the validation rules, not only the syntax
        assert!(outcome.accepted > 0, "{name}: no structure-aware case was accepted");
    }
}

fn scenarios() -> Vec<PathBuf> {
    files_in(&workspace().join("scenarios"), ".toml")
}

fn fixtures(plans: bool) -> Vec<PathBuf> {
    files_in(&workspace().join("crates/report/tests/fixtures"), ".json")
        .into_iter()
        .filter(|p| p.ends_with("plan.json") == plans)
        .collect()
}

fn parse_scenario(p: &Path) -> Result<(), InputError> {
    Scenario::from_file(p).map(drop)
}
fn parse_carts(p: &Path) -> Result<(), InputError> {
    rtvirt_model::carts::from_file(p).map(drop)
}
fn parse_plan(p: &Path) -> Result<(), InputError> {
    Plan::from_file(p).map(drop)
}
fn parse_results(p: &Path) -> Result<(), InputError> {
    Results::from_file(p).map(drop)
}
/// Both readers of `tables::read`: export's (unknown fields skipped) and the Python package's.
fn parse_export_input(p: &Path) -> Result<(), InputError> {
    rtvirt_model::tables::read::results_documents_known(p)?;
    rtvirt_model::tables::read::results_documents(p).map(drop)
}
fn parse_samples(p: &Path) -> Result<(), InputError> {
    Samples::load(p).map(drop)
}
fn parse_sweep(p: &Path) -> Result<(), InputError> {
    Sweep::from_file(p).map(drop)
}

fn parse_study(p: &Path) -> Result<(), InputError> {
    Study::from_file(p).map(drop)
}

/// The shipped studies (`studies/*.toml`).
fn study_corpus() -> Vec<PathBuf> {
    files_in(&workspace().join("studies"), ".toml")
}

fn parse_host_model(p: &Path) -> Result<(), InputError> {
    HostModel::from_file(p).map(drop)
}

/// A fully calibrated model, and the uncalibrated one (the schema alone: every default).
fn host_model_corpus() -> Vec<PathBuf> {
    vec![
        workspace().join("crates/model/tests/fuzz/calibrated.hostmodel.json"),
        workspace().join("crates/model/tests/fuzz/uncalibrated.hostmodel.json"),
    ]
}

fn carts_corpus() -> Vec<PathBuf> {
    vec![workspace().join("scenarios/data/carts-example.xml"), workspace().join("crates/model/tests/fuzz/carts-fp.xml")]
}

fn sweep_corpus() -> Vec<PathBuf> {
    vec![
        workspace().join("experiments/seeds5_dsr_vs_rho.sweep.toml"),
        workspace().join("crates/model/tests/fuzz/default.sweep.toml"),
    ]
}

const SCENARIO: &str = "scenarios/fuzz-case.toml";

#[test]
fn scenario_structure_aware() {
    run("scenario", SCENARIO, scenarios(), Structure::Toml, true, &parse_scenario);
}
#[test]
fn scenario_raw() {
    run("scenario", SCENARIO, scenarios(), Structure::Toml, false, &parse_scenario);
}
#[test]
fn carts_structure_aware() {
    run("carts", "case.xml", carts_corpus(), Structure::Xml, true, &parse_carts);
}
#[test]
fn carts_raw() {
    run("carts", "case.xml", carts_corpus(), Structure::Xml, false, &parse_carts);
}
#[test]
fn plan_structure_aware() {
    run("plan", "case.json", fixtures(true), Structure::Json, true, &parse_plan);
}
#[test]
fn plan_raw() {
    run("plan", "case.json", fixtures(true), Structure::Json, false, &parse_plan);
}
#[test]
fn results_structure_aware() {
    run("results", "case.json", fixtures(false), Structure::Json, true, &parse_results);
}
#[test]
fn results_raw() {
    run("results", "case.json", fixtures(false), Structure::Json, false, &parse_results);
}
/// The results fixtures, an array of results and an interval-report stream (the report's fuzzing
/// corpus).
fn export_corpus() -> Vec<PathBuf> {
    let mut files = fixtures(false);
    files.extend(files_in(&workspace().join("crates/report/tests/fuzz"), ".json"));
    files
}

#[test]
fn export_input_structure_aware() {
    run("export input", "case.json", export_corpus(), Structure::Json, true, &parse_export_input);
}
#[test]
fn export_input_raw() {
    run("export input", "case.json", export_corpus(), Structure::Json, false, &parse_export_input);
}
#[test]
fn samples_structure_aware() {
    let corpus = vec![workspace().join("scenarios/data/decoder-frames.csv")];
    run("samples", "case.csv", corpus, Structure::Lines, true, &parse_samples);
}
#[test]
fn samples_raw() {
    let corpus = vec![workspace().join("scenarios/data/decoder-frames.csv")];
    run("samples", "case.csv", corpus, Structure::Lines, false, &parse_samples);
}
#[test]
fn sweep_structure_aware() {
    run("sweep", "experiments/case.sweep.toml", sweep_corpus(), Structure::Toml, true, &parse_sweep);
}
#[test]
fn sweep_raw() {
    run("sweep", "experiments/case.sweep.toml", sweep_corpus(), Structure::Toml, false, &parse_sweep);
}
#[test]
fn host_model_structure_aware() {
    run("host model", "case.hostmodel.json", host_model_corpus(), Structure::Json, true, &parse_host_model);
}
#[test]
fn host_model_raw() {
    run("host model", "case.hostmodel.json", host_model_corpus(), Structure::Json, false, &parse_host_model);
}
#[test]
fn study_structure_aware() {
    run("study", "case.study.toml", study_corpus(), Structure::Toml, true, &parse_study);
}
#[test]
fn study_raw() {
    run("study", "case.study.toml", study_corpus(), Structure::Toml, false, &parse_study);
}
