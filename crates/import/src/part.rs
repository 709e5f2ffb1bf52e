//! What an importer returns: one document and what the file told about the tool.

use rtvirt_model::results::Results;

/// One imported document before the tool is written into its environment; `part` names it
/// among several of one file (e.g. "IRQ", "thread") and becomes its label's suffix.
pub(crate) struct Part {
    pub part: Option<&'static str>,
    pub results: Results,
    pub version: Option<String>,
    pub command_line: Option<String>,
}

impl Part {
    pub fn new(results: Results) -> Part {
        Part { part: None, results, version: None, command_line: None }
    }
}
