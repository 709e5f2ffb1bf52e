//! JSON Schemas of rtvirt's documents (`rtvirt.results/v1`, `rtvirt.plan/v1`,
//! `rtvirt.hostmodel/v1`, `rtvirt.verify/v1`, and the host's
//! `rtvirt.audit/v1`, `rtvirt.profile/v1`), generated from their Rust types with schemars and
//! committed under `docs/schema/<name>.schema.json`. Tests compare the committed files with the
//! generated ones; after changing a type, regenerate them with
//! `RTVIRT_WRITE_SCHEMAS=1 cargo test -p rtvirt-model -p rtvirt-host schema`.

use schemars::JsonSchema;
use std::path::{Path, PathBuf};

/// Environment variable that makes [`check_committed`] write the generated schema.
pub const WRITE_VAR: &str = "RTVIRT_WRITE_SCHEMAS";

/// The JSON Schema of `T`, pretty-printed, ending with a newline.
pub fn generate<T: JsonSchema>() -> String {
    let schema = schemars::schema_for!(T);
    serde_json::to_string_pretty(&schema).expect("a schema is JSON") + "\n"
}

/// `docs/schema/<name>.schema.json` of the repository.
pub fn committed_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema").join(format!("{name}.schema.json"))
}

/// Check that the committed schema `name` is the one generated from `T`; with
/// `RTVIRT_WRITE_SCHEMAS=1`, write it instead. The error says how to regenerate.
pub fn check_committed<T: JsonSchema>(name: &str) -> Result<(), String> {
    let path = committed_path(name);
    let generated = generate::<T>();
    if std::env::var_os(WRITE_VAR).is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("docs/schema has a parent"))
            .and_then(|()| std::fs::write(&path, &generated))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        return Ok(());
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        Ok(())
    } else {
        Err(format!(
            "{} differs from the schema generated from the types; regenerate it with \
             `{WRITE_VAR}=1 cargo test -p rtvirt-model -p rtvirt-host schema` and commit it",
            path.display()
        ))
    }
}

/// A validator of the committed schema `name` (for tests that check real outputs against it).
pub fn committed_value(name: &str) -> serde_json::Value {
    let path = committed_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use crate::results::Results;

    #[test]
    fn schema_files_are_the_generated_ones() {
        check_committed::<Results>("results").unwrap();
        check_committed::<Plan>("plan").unwrap();
        check_committed::<crate::hostmodel::HostModel>("hostmodel").unwrap();
        check_committed::<crate::verify::Verification>("verify").unwrap();
        check_committed::<crate::nova::NovaFlavors>("nova").unwrap();
        check_committed::<crate::rt_tests::CyclictestJson>("cyclictest").unwrap();
        check_committed::<crate::study::index::StudyIndex>("study").unwrap();
        check_committed::<crate::tail::TailReport>("tail").unwrap();
        check_committed::<crate::tail::GateReport>("gate").unwrap();
    }
}
