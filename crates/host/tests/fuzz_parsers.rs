//! Fuzzing the host profile parser (`rtvirt.profile/v1` TOML, `Profile::from_file`) in-process
//! with the model crate's harness (`crates/model/tests/fuzz/`: budget, limits and what a case
//! must do are described there): `RTVIRT_FUZZ_CASES` cases (default 20,000), half
//! structure-aware mutations of `scenarios/profiles/*.toml`, half raw byte mutations. Parsing a
//! profile reads no host state.

#[path = "../../model/tests/fuzz/mod.rs"]
mod fuzz;

use fuzz::{cases, corpus, files_in, workspace, Structure, Target};
use rtvirt_host::apply::Profile;
use rtvirt_model::InputError;
use std::path::Path;

fn parse_profile(p: &Path) -> Result<(), InputError> {
    Profile::from_file(p).map(drop)
}

fn run(structured: bool) {
    let dir = fuzz::case_dir();
    let corpus_files = files_in(&workspace().join("scenarios/profiles"), ".toml");
    let target = Target {
        name: "profile",
        file: dir.path().join("case.toml"),
        corpus: corpus(&corpus_files),
        structure: Structure::Toml,
        parse: &parse_profile,
    };
    let outcome = fuzz::fuzz(&target, structured, cases() / 2);
    if structured && outcome.cases >= 1000 {
        // the structure-aware half must reach the validation rules, not only the syntax
        assert!(outcome.accepted > 0, "profile: no structure-aware case was accepted");
    }
}

#[test]
fn profile_structure_aware() {
    run(true);
}

#[test]
fn profile_raw() {
    run(false);
}
