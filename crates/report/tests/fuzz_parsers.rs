//! Fuzzing the report loader (`rtvirt_report::input::load_file`: results and plan documents, JSON
//! arrays of results streamed from the file, interval report lines before a document, and the
//! range checks of `report::check`) in-process with the model crate's harness
//! (`crates/model/tests/fuzz/`: budget, limits and what a case must do are described there):
//! `RTVIRT_FUZZ_CASES` cases (default 20,000), half structure-aware mutations of the report
//! fixtures and of `tests/fuzz/*.json`, half raw byte mutations.

#[path = "../../model/tests/fuzz/mod.rs"]
mod fuzz;

use fuzz::{cases, corpus, files_in, Structure, Target};
use rtvirt_model::InputError;
use std::path::{Path, PathBuf};

fn parse_report_input(p: &Path) -> Result<(), InputError> {
    rtvirt_report::input::load_file(p).map(drop)
}

/// The fixtures (results and a plan), an array of results and an interval-report stream.
fn corpus_files() -> Vec<PathBuf> {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = files_in(&tests.join("fixtures"), ".json");
    files.extend(files_in(&tests.join("fuzz"), ".json"));
    files
}

fn run(structured: bool) {
    let dir = fuzz::case_dir();
    let target = Target {
        name: "report input",
        file: dir.path().join("case.json"),
        corpus: corpus(&corpus_files()),
        structure: Structure::Json,
        parse: &parse_report_input,
    };
    let outcome = fuzz::fuzz(&target, structured, cases() / 2);
    if structured && outcome.cases >= 1000 {
        // the structure-aware half must reach the checks, not only the syntax
        assert!(outcome.accepted > 0, "report input: no structure-aware case was accepted");
    }
}

#[test]
fn report_input_structure_aware() {
    run(true);
}

#[test]
fn report_input_raw() {
    run(false);
}
