//! Fuzzing every importer (`rtvirt_import::import_file`: cyclictest, cyclicdeadline, oslat, rtla
//! timerlat/osnoise, sockperf, netperf, iperf3) in-process with the model crate's harness
//! (`crates/model/tests/fuzz/`: budget, limits and what a case must do are described there):
//! per target `RTVIRT_FUZZ_CASES` cases (default 20,000), half structure-aware mutations of the
//! recorded outputs (`tests/samples/`, `tests/fuzz/`), half raw byte mutations.
//!
//! Each case is imported twice: as recognised, and as one tool named with `--tool` (chosen by
//! the input's length, so every parser sees every kind of input). Both must return a document
//! or an error with its file and line; a document imported must read back through the reader
//! of `report` and `export` (no NaN, infinity or out-of-range number written).

#[path = "../../model/tests/fuzz/mod.rs"]
mod fuzz;

use fuzz::{cases, corpus, files_in, Structure, Target};
use rtvirt_import::{import_file, TOOLS};
use rtvirt_model::InputError;
use std::path::{Path, PathBuf};

fn parse_import(p: &Path) -> Result<(), InputError> {
    let len = std::fs::metadata(p).map_or(0, |m| m.len() as usize);
    let (_, forced) = TOOLS[len % TOOLS.len()];
    match import_file(p, Some(forced)) {
        Err(e) if fuzz::located(&e).is_err() => return Err(e),
        Err(_) => {}
        Ok(docs) => read_back(&docs),
    }
    import_file(p, None).map(|docs| read_back(&docs))
}

/// Imported documents must be what `report` and `export` read.
fn read_back(docs: &[rtvirt_model::results::Results]) {
    let json = serde_json::to_string(docs).expect("results are JSON");
    if let Err(e) = rtvirt_model::tables::read::results_of_text_known(&json) {
        panic!("imported, but not read back: {e}\n{json}");
    }
}

fn corpus_files(json: bool) -> Vec<PathBuf> {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let suffix = if json { ".json" } else { ".txt" };
    let mut files = files_in(&tests.join("fuzz"), suffix);
    files.extend(files_in(&tests.join("samples"), suffix));
    files
}

fn run(json: bool, structured: bool) {
    let dir = fuzz::case_dir();
    let target = Target {
        name: if json { "import (JSON outputs)" } else { "import (text outputs)" },
        file: dir.path().join(if json { "case.json" } else { "case.txt" }),
        corpus: corpus(&corpus_files(json)),
        structure: if json { Structure::Json } else { Structure::Lines },
        parse: &parse_import,
    };
    let outcome = fuzz::fuzz(&target, structured, cases() / 2);
    if structured && outcome.cases >= 1000 {
        // the structure-aware half must reach the importers' checks, not only the syntax
        assert!(outcome.accepted > 0, "{}: no structure-aware case was accepted", target.name);
    }
}

#[test]
fn import_text_outputs_structure_aware() {
    run(false, true);
}

#[test]
fn import_text_outputs_raw() {
    run(false, false);
}

#[test]
fn import_json_outputs_structure_aware() {
    run(true, true);
}

#[test]
fn import_json_outputs_raw() {
    run(true, false);
}
