//! rtvirt-host: the configure job on a real host (the OS calls underneath are rtvirt-os).
//!
//! - [`audit`]: RT-readiness checks with the raw values read from this machine (`rtvirt.audit/v1`).
//! - [`threads`]: discovery and labelling of the RT data path's threads (QMP, /proc).
//! - [`adapt`]: `host adapt`: observed demand -> the controller -> journaled reservation changes.
//! - [`apply`]: plans and profiles -> [`lint`] -> journaled `rtvirt_os::Change`s; [`journal`]:
//!   revert; [`observe`]: guests' real-time demand from their vCPU threads and guest agents;
//!   [`render`]: text tables; [`error`]: errors of the configure job.
//!
//! For other crates (e.g. `rtvirt vm`): `threads::discover(&Target::Qmp(socket))`,
//! `apply::apply_plan(&plan, &[Binding::parse_vm("g=SOCKET")?], &[], &opts, &mut |_| {})`,
//! `journal::revert(&state_dir)`.
//!
//! Invariants: every change goes through the journal (appended and fsynced before it is made,
//! original value kept) and `revert` restores exactly what was there; nothing changes when the
//! lint fails (unless `--force`) or the input is bad; the exact EDF admission test comes from the
//! cli through [`apply::Admission`], so host depends on rtvirt-model and rtvirt-os only. How it
//! works and how it is tested: docs/host.md.

pub mod adapt;
pub mod apply;
pub mod audit;
pub mod error;
pub mod journal;
pub mod lint;
pub mod observe;
pub mod render;
pub mod threads;

pub use error::{HostError, Result};

#[cfg(test)]
mod schema {
    /// `docs/schema/{audit,profile}.schema.json` are generated from these types (see
    /// `rtvirt_model::schema` for how to regenerate them).
    #[test]
    fn schema_files_are_the_generated_ones() {
        rtvirt_model::schema::check_committed::<crate::audit::Audit>("audit").unwrap();
        rtvirt_model::schema::check_committed::<crate::apply::profile::RawProfile>("profile").unwrap();
    }

    /// The profiles shipped in scenarios/profiles/ are valid against the published schema.
    #[test]
    fn shipped_profiles_validate_against_the_schema() {
        let validator = jsonschema::validator_for(&rtvirt_model::schema::committed_value("profile")).unwrap();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/profiles");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let doc: serde_json::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let errors: Vec<String> =
                validator.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
            assert!(errors.is_empty(), "{}: {}", path.display(), errors.join("\n"));
            seen += 1;
        }
        assert!(seen >= 2, "profiles in {}", dir.display());
    }
}
