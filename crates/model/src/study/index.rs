//! The index of a study's results (`rtvirt.study/v1`, `DIR/index.json`): every cell in the order
//! it runs, with the command of its runs and each run's results file (`rtvirt.results/v1`,
//! relative to the index). Rewritten (atomically) after every run, so that an interrupted study
//! keeps what it finished and `rtvirt study --resume` skips it; `rtvirt report` reads it.
//! `docs/schema/study.schema.json` is generated from these types.

use crate::error::InputError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const STUDY_SCHEMA: &str = "rtvirt.study/v1";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "rtvirt.study/v1")]
pub struct StudyIndex {
    pub schema: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The study file.
    pub study_file: String,
    pub repeats: u32,
    /// Length of each run.
    pub run_duration_ns: u64,
    /// The order the cells run in, in words.
    pub order: String,
    pub cells: Vec<StudyCell>,
    /// The last session stopped early (Ctrl-C, SIGTERM): `--resume` continues.
    #[serde(default)]
    pub interrupted: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StudyCell {
    /// "configuration/where/load/measurement".
    pub id: String,
    pub configuration: String,
    /// The profile or plan applied around the cell (absent: the host as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_input: Option<String>,
    /// "host" | "container" | "vm".
    pub place: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_kernel: Option<String>,
    pub load: String,
    pub measurement: String,
    /// "timer" | "net-rr" | "net-stream" | "tasks".
    pub kind: String,
    /// The arguments of each run (`rtvirt ARGS`).
    pub command: Vec<String>,
    /// Host changes applied for the cell (last session), all reverted after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_changes: Option<u64>,
    pub runs: Vec<StudyRun>,
}

impl StudyCell {
    /// Whether every run of `repeats` succeeded.
    pub fn complete(&self, repeats: u32) -> bool {
        (0..repeats).all(|r| self.runs.iter().any(|run| run.repeat == r && run.ok))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StudyRun {
    /// 0-based repeat number.
    pub repeat: u32,
    /// The run's results (rtvirt.results/v1), relative to the index.
    pub file: String,
    /// The run finished and its results were written.
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the run (start to results), rtvirt's start-up included.
    pub wall_ns: u64,
}

impl StudyIndex {
    /// Read an index, checking its schema.
    pub fn from_file(path: &Path) -> Result<StudyIndex, InputError> {
        let text = crate::input::read_text(path, crate::input::InputKind::Results)?;
        let index: StudyIndex = serde_json::from_str(&text).map_err(|e| {
            InputError::new(format!("not an {STUDY_SCHEMA} document: {e}")).in_file(path).at_line(e.line(), e.column())
        })?;
        if index.schema != STUDY_SCHEMA {
            return Err(
                InputError::field("schema", format!("\"{}\": expected \"{STUDY_SCHEMA}\"", index.schema)).in_file(path)
            );
        }
        Ok(index)
    }

    /// Write the index to `path` atomically (a temporary file renamed over it).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self).expect("an index is JSON") + "\n")?;
        std::fs::rename(tmp, path)
    }
}

/// Whether the file at `path` is a study index (its `schema` says `rtvirt.study/v1`).
pub fn is_study_index(path: &Path) -> bool {
    #[derive(Deserialize)]
    struct SchemaOnly {
        schema: String,
    }
    crate::input::read_text(path, crate::input::InputKind::Results)
        .ok()
        .and_then(|text| serde_json::from_str::<SchemaOnly>(&text).ok())
        .is_some_and(|d| d.schema == STUDY_SCHEMA)
}
