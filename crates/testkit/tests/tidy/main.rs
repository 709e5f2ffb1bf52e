//! The workspace's tidy checks: invariants of docs/ARCHITECTURE.md enforced in `cargo test`.

mod cycles;
mod invariants;
mod modgraph;

use std::path::{Path, PathBuf};

/// The workspace's root directory (`TIDY_WORKSPACE` names another tree to check, e.g. an old
/// checkout).
pub fn workspace() -> PathBuf {
    match std::env::var_os("TIDY_WORKSPACE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap(),
    }
}

/// Every crate of the workspace: its directory name and its root files (`src/lib.rs`, `src/main.rs`).
pub fn crates() -> Vec<(String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let roots: Vec<PathBuf> =
            ["src/lib.rs", "src/main.rs"].iter().map(|r| dir.join(r)).filter(|r| r.exists()).collect();
        if !roots.is_empty() {
            out.push((dir.file_name().unwrap().to_string_lossy().into_owned(), roots));
        }
    }
    out.sort();
    out
}
