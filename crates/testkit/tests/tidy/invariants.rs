//! The "Architecture Invariant" lines of docs/ARCHITECTURE.md that say what a crate must not
//! use, checked on its non-test code; and the code map, checked to name every top-level module.

use crate::modgraph::{self, ModId};

/// A crate, what its invariant excludes (path prefixes) and the invariant's words.
const EXCLUDED: &[(&str, &[&str], &str)] = &[
    ("analysis", &["std::fs", "std::process", "std::net"], "pure - no I/O, no OS"),
    ("sim", &["std::fs", "std::process", "std::net"], "the simulator never touches the OS"),
    ("report", &["std::fs", "std::process", "serde_json::Value"], "reads types, never the OS"),
    (
        "import",
        &["std::fs", "std::process", "serde_json::Value"],
        "reads text, never the OS; fills the model's typed sections",
    ),
];

/// Violations known and recorded (crate, module, excluded path): each is a debt to pay, and the
/// test fails when one is paid without being struck from this list.
const RECORDED: &[(&str, &str, &str)] = &[
    // report reads results documents by key (issue 37: one results reader, in model).
    ("report", "input", "serde_json::Value"),
    ("report", "build::environment", "serde_json::Value"),
];

fn starts_with(path: &[String], prefix: &str) -> bool {
    let prefix: Vec<&str> = prefix.split("::").collect();
    path.len() >= prefix.len() && path.iter().zip(&prefix).all(|(a, b)| a == b)
}

fn name(id: &ModId) -> String {
    if id.is_empty() {
        "crate".into()
    } else {
        id.join("::")
    }
}

/// (crate, module, excluded path) of every use of what a crate's invariant excludes.
fn violations(workspace: &std::path::Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (krate, excluded, _) in EXCLUDED {
        let graph = modgraph::load(&workspace.join("crates").join(krate).join("src/lib.rs")).unwrap();
        for (module, path) in graph.paths() {
            for prefix in excluded.iter().filter(|p| starts_with(path, p)) {
                found.push((krate.to_string(), name(module), prefix.to_string()));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn crates_use_nothing_their_invariants_exclude() {
    let found = violations(&crate::workspace());
    let recorded: Vec<(String, String, String)> =
        RECORDED.iter().map(|(c, m, p)| (c.to_string(), m.to_string(), p.to_string())).collect();
    let new: Vec<String> = found
        .iter()
        .filter(|v| !recorded.contains(v))
        .map(|(c, m, p)| {
            let words = EXCLUDED.iter().find(|e| e.0 == c).unwrap().2;
            format!("{c}: {m} uses {p} (ARCHITECTURE.md: \"{words}\")")
        })
        .collect();
    assert!(new.is_empty(), "invariants broken:\n{}", new.join("\n"));
    let paid: Vec<_> = recorded.iter().filter(|r| !found.contains(r)).collect();
    assert!(paid.is_empty(), "recorded violations no longer there, strike them from RECORDED: {paid:?}");
}

#[test]
fn the_check_sees_a_use_a_path_and_a_group_but_not_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("crates/report/src");
    std::fs::create_dir_all(&src).unwrap();
    let lib = "mod a;\nmod b;\nmod c;\n#[cfg(test)]\nmod tests { use std::fs; }";
    std::fs::write(src.join("lib.rs"), lib).unwrap();
    std::fs::write(src.join("a.rs"), "use serde_json::{json, Value};").unwrap();
    std::fs::write(src.join("b.rs"), "fn f() { let _ = std::fs::read(\"x\"); }").unwrap();
    std::fs::write(src.join("c.rs"), "use std::{fs, io};").unwrap();
    for krate in ["analysis", "sim", "import"] {
        let src = dir.path().join("crates").join(krate).join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("lib.rs"), "//! std::fs in a comment\npub fn f() -> std::io::Result<()> { Ok(()) }")
            .unwrap();
    }
    let found: Vec<String> = violations(dir.path()).into_iter().map(|(c, m, p)| format!("{c} {m} {p}")).collect();
    assert_eq!(found, ["report a serde_json::Value", "report b std::fs", "report c std::fs"]);
}

/// The section of ARCHITECTURE.md's code map for `crates/NAME`.
fn section<'a>(doc: &'a str, krate: &str) -> Option<&'a str> {
    let start = doc.find(&format!("### `crates/{krate}`"))?;
    let rest = &doc[start + 4..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Whether `text` names `module` as a word (`module`, `module.rs`, `module/`, `a::module`, or in
/// prose: "the scenario").
fn names(text: &str, module: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == module)
}

#[test]
fn the_code_map_names_every_top_level_module_of_every_crate() {
    let doc = std::fs::read_to_string(crate::workspace().join("docs/ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for (krate, roots) in crate::crates() {
        let Some(text) = section(&doc, &krate) else {
            missing.push(format!("crates/{krate}: no section"));
            continue;
        };
        for root in roots {
            let graph = modgraph::load(&root).unwrap();
            for module in graph.top_level().iter().filter(|m| !names(text, m)) {
                missing.push(format!("crates/{krate}: {module}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md's code map does not name:\n{}", missing.join("\n"));
}

/// The map stays a map: at most 2,000 words (detail belongs in the crates' `//!` docs).
#[test]
fn the_architecture_page_stays_within_2000_words() {
    let doc = std::fs::read_to_string(crate::workspace().join("docs/ARCHITECTURE.md")).unwrap();
    let words = doc.split_whitespace().count();
    assert!(words <= 2000, "docs/ARCHITECTURE.md has {words} words: at most 2,000");
}
