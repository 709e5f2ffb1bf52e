//! No module cycle of any length in any crate, and the checker's own tests on small fixture trees.

use crate::modgraph;
use std::path::Path;

#[test]
fn no_module_cycle_in_any_crate() {
    let mut found = Vec::new();
    for (name, roots) in crate::crates() {
        for root in roots {
            let graph = modgraph::load(&root).unwrap();
            found.extend(graph.cycles().into_iter().map(|c| format!("{name} ({}): {c}", root.display())));
        }
    }
    assert!(
        found.is_empty(),
        "module cycles (docs/ARCHITECTURE.md, Modules: a piece two modules share moves to a third):\n{}",
        found.join("\n")
    );
}

/// Writes `files` (path, text) under a temporary `src/` and returns the cycles of its crate.
fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    modgraph::load(&dir.path().join("src/lib.rs")).unwrap().cycles()
}

fn assert_cycle(files: &[(&str, &str)], expected: &str) {
    assert_eq!(cycles_of(files), vec![expected.to_string()]);
}

#[test]
fn a_bare_child_path_in_a_use_and_in_an_expression_counts() {
    let lib = "mod vm;\nuse vm::GuestJob;\npub struct Plan;\npub fn run() -> GuestJob { GuestJob }";
    let vm = "pub struct GuestJob;\npub fn plan() -> super::Plan { super::Plan }";
    assert_cycle(&[("lib.rs", lib), ("vm.rs", vm)], "2 modules: crate -> vm (`vm::GuestJob`) -> crate (`super::Plan`)");
    let lib = "mod vm;\npub struct Plan;\npub fn run() { vm::start() }";
    assert_cycle(
        &[("lib.rs", lib), ("vm.rs", vm.replace("GuestJob;", "GuestJob;\npub fn start() {}").as_str())],
        "2 modules: crate -> vm (`vm::start`) -> crate (`super::Plan`)",
    );
}

#[test]
fn three_modules_in_a_ring_through_groups_re_exports_macros_and_attributes() {
    // a -> b by a grouped use, b -> c through lib's re-export, c -> a in a macro body and in a
    // serde attribute's string.
    let lib = "mod a;\nmod b;\nmod c;\npub use c::Wire;";
    let a = "use crate::{b::{self, Doc}};\npub fn sorted() {}";
    let b = "pub struct Doc(crate::Wire);";
    let c =
        "pub struct Wire;\n#[derive(Serialize)]\nstruct W { #[serde(serialize_with = \"super::a::sorted\")] x: u8 }";
    assert_cycle(
        &[("lib.rs", lib), ("a.rs", a), ("b.rs", b), ("c.rs", c)],
        "3 modules: a -> b (`crate::b`) -> c (`crate::Wire`) -> a (`super::a::sorted`)",
    );
    let c = "pub struct Wire;\npub fn f() -> String { format!(\"{:?}\", crate::a::sorted()) }";
    assert_cycle(
        &[("lib.rs", lib), ("a.rs", a), ("b.rs", b), ("c.rs", c)],
        "3 modules: a -> b (`crate::b`) -> c (`crate::Wire`) -> a (`crate::a::sorted`)",
    );
}

#[test]
fn nested_modules_self_super_chains_renames_and_globs_resolve() {
    // host/apply/{plan, profile}: plan reaches profile by `super::profile`, profile reaches the
    // parent's items through a glob, the parent re-exports plan's function.
    let lib = "pub mod host;";
    let host = "pub mod apply;";
    let apply = "mod plan;\nmod profile;\npub use self::plan::apply as run;\npub struct Journal;";
    let plan = "pub fn apply() { super::profile::pick() }";
    let profile = "use super::*;\npub fn pick() { let _ = Journal; }";
    let files = [
        ("lib.rs", lib),
        ("host/mod.rs", host),
        ("host/apply.rs", apply),
        ("host/apply/plan.rs", plan),
        ("host/apply/profile.rs", profile),
    ];
    assert_cycle(
        &files,
        "3 modules: host::apply -> host::apply::plan (`self::plan::apply`) -> host::apply::profile (`super::profile::pick`) -> host::apply (`super`)",
    );
    // A path through a renamed re-export names the module that defines the item.
    let lib = "mod a;\nmod b;\nmod c;\npub use b::Thing as Other;";
    let a = "pub fn f() -> crate::Other { crate::Other }";
    let c = "pub fn g() { crate::a::f(); }";
    let b = "pub struct Thing;\nfn h() { crate::c::g() }";
    assert_cycle(
        &[("lib.rs", lib), ("a.rs", a), ("b.rs", b), ("c.rs", c)],
        "3 modules: a -> b (`crate::Other`) -> c (`crate::c::g`) -> a (`crate::a::f`)",
    );
}

#[test]
fn tests_docs_other_crates_and_one_way_imports_are_no_cycle() {
    let lib =
        "//! See [`a::f`] and crate::b.\nmod a;\nmod b;\npub use a::f;\n#[cfg(test)]\nmod tests { use super::*; }";
    let a = "/// Calls `crate::b::g` ([`super::b`]).\npub fn f() { crate::b::g(); std::process::exit(0) }\n#[cfg(test)]\nmod tests { use crate::f; }";
    let b = "pub fn g() { let _ = \"crate::a::f\".len(); serde_json::Value::Null; }";
    assert!(cycles_of(&[("lib.rs", lib), ("a.rs", a), ("b.rs", b)]).is_empty());
    let _ = Path::new("");
}
