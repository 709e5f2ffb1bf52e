//! What every command shares: output format, scenario loading, the error -> exit code mapping.

use rtvirt_model::scenario::Scenario;
use rtvirt_model::InputError;
use std::path::Path;
use std::process::ExitCode;

/// `--format`: `table` for people, `json` for tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
}

/// `--format` of a command whose output is always a JSON document (`host calibrate`, `import`):
/// `json` is taken, as by every command that prints a document; there is no table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum JsonOnly {
    #[default]
    Json,
}

/// What a command reports: success, or "the thing checked failed" (exit 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// The plan is infeasible, deadlines were missed where none may be, a check failed...
    Failed,
    /// The data cannot decide (`rtvirt gate`): exit 3.
    Inconclusive,
}

/// Errors of a command. Every error is a usage/input/environment problem: exit code 2.
pub type CmdResult = anyhow::Result<Outcome>;

/// Print the error (with its cause chain) and map the outcome to the exit code.
pub fn finish(outcome: CmdResult) -> ExitCode {
    match outcome {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::Inconclusive) => ExitCode::from(3),
        Err(e) => {
            eprintln!("rtvirt: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}

/// Load a scenario file, or the embedded default when `path` is None.
pub fn load_scenario(path: Option<&Path>) -> Result<Scenario, InputError> {
    match path {
        Some(p) => Scenario::from_file(p),
        None => Ok(Scenario::default_scenario()),
    }
}

/// Print a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
