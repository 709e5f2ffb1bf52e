//! Fuzzing the libvirt domain XML reader of `plan --emit libvirt --libvirt-domain FILE.xml`
//! (`emit::libvirt::files`: read with the bounded input reader, parsed, patched) in-process with
//! the model crate's harness (`crates/model/tests/fuzz/`: budget, limits and what a case must do
//! are described there): `RTVIRT_FUZZ_CASES` cases (default 20,000) from `tests/fuzz/*.xml` (a
//! `virsh dumpxml`-like domain, one with `<iothreadids>` and every element rtvirt replaces), half
//! line-level mutations (elements removed, repeated up to 10,000 times, replaced by hostile
//! numbers and strings: the harness' XML mutator keeps attributes only, and a domain's `<name>`
//! and `<vcpu>` are text), half raw byte mutations. Every case either patches the domain or is
//! refused with its file and line; none panics or holds memory sized by a count it names.

#[path = "../../model/tests/fuzz/mod.rs"]
mod fuzz;

use fuzz::{cases, corpus, files_in, Structure, Target};
use rtvirt_analysis::emit::libvirt::{files, DomainFile};
use rtvirt_analysis::requests::{plan, PlanHost, PlanRequest};
use rtvirt_model::input::{read_text, InputKind};
use rtvirt_model::plan::Plan;
use rtvirt_model::scenario::Scenario;
use rtvirt_model::InputError;
use std::path::Path;

/// Guest "plc" (one vCPU, FIFO: a `vcpusched`) and "vm1" (two vCPUs), the corpus' domain names.
const SCENARIO: &str = r#"
[host]
cores = 4
[[guest]]
name = "plc"
scheduler = "edf"
server_periods = ["5ms"]
[guest.vcpu]
policy = "fifo"
priority = 10
[[guest.task]]
name = "t"
period = "10ms"
wcet = "1ms"
[[guest]]
name = "vm1"
scheduler = "edf"
vcpus = 2
[[guest.task]]
name = "a"
period = "10ms"
wcet = "2ms"
[[guest.task]]
name = "b"
period = "20ms"
wcet = "3ms"
"#;

fn planned() -> (Scenario, Plan) {
    let s = Scenario::from_toml(SCENARIO, None).expect("the fuzz scenario");
    let host = PlanHost::ideal();
    let p = plan(&PlanRequest::new(&s, &host)).unwrap().plan;
    assert!(p.feasible, "the fuzz scenario's plan is feasible");
    (s, p)
}

fn run(structured: bool) {
    let dir = fuzz::case_dir();
    let (scenario, plan) = planned();
    let patch = |path: &Path| -> Result<(), InputError> {
        let text = read_text(path, InputKind::LibvirtDomain)?;
        files(&scenario, &plan, &[DomainFile { path, text: &text }]).map(drop)
    };
    let corpus_files = files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz"), ".xml");
    let target = Target {
        name: "libvirt domain",
        file: dir.path().join("case.xml"),
        corpus: corpus(&corpus_files),
        structure: Structure::Lines,
        parse: &patch,
    };
    let outcome = fuzz::fuzz(&target, structured, cases() / 2);
    if structured && outcome.cases >= 1000 {
        // the structure-aware half must reach the patching, not only the syntax
        assert!(outcome.accepted > 0, "libvirt domain: no structure-aware case was accepted");
    }
}

#[test]
fn libvirt_domain_structure_aware() {
    run(true);
}

#[test]
fn libvirt_domain_raw() {
    run(false);
}
