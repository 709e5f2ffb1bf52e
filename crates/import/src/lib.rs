//! rtvirt-import: what users already have - the outputs of cyclictest, cyclicdeadline, oslat,
//! rtla timerlat/osnoise, sockperf, netperf and iperf3 - read into typed `rtvirt.results/v1`
//! documents, so that last year's baseline can stand beside today's run in one report.
//!
//! A crate of its own (not a module of rtvirt-report): both `rtvirt import` and `rtvirt report`
//! read these files, the parsers are many and each is a file (one module per tool), and the
//! report stays the reader of typed documents only (crate graph: `cli -> report -> import ->
//! model`). The parsers are hand-written: these are line-oriented texts of each tool's own
//! making, with no grammar a parsing library would know; the JSON outputs (cyclictest `--json`,
//! iperf3 `--json`) are read with serde.
//!
//! What is kept: the tool, its version and its command line (in `environment.tool*`, when the
//! output records them); latencies in nanoseconds with their exact histogram where the tool
//! printed one (1 us buckets for cyclictest: bucket `i` holds `[i, i+1)` us). Samples beyond a
//! histogram's last bucket (cyclictest's and rtla's overflows, oslat's last bucket) are counted
//! at that bucket's low value, except the one sample known exactly, the maximum. Percentiles a
//! tool did not report are set to the next one it did (an upper bound) and listed in
//! `low_confidence`. Every malformed or truncated file is an `InputError` naming the file, the
//! line and what was expected there.
//!
//! Entry points: [`import_file`], [`import_text`], [`detect`].

pub mod cyclictest;
pub mod iperf3;
pub mod netperf;
pub mod oslat;
mod part;
pub mod rtla;
pub mod sockperf;
mod summary;
mod text;

use rtvirt_model::input::{read_text, InputKind};
use rtvirt_model::results::Results;
use rtvirt_model::InputError;
use std::path::Path;

pub(crate) use part::Part;

/// The tools whose outputs are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// cyclictest: histogram (`-h`/`-H`) or `--json` output (rt-tests).
    Cyclictest,
    /// cyclicdeadline: its status lines or `--json` output (rt-tests).
    Cyclicdeadline,
    /// oslat (rt-tests).
    Oslat,
    /// rtla timerlat top or hist.
    RtlaTimerlat,
    /// rtla osnoise top or hist.
    RtlaOsnoise,
    /// sockperf ping-pong or under-load (with `--full-log` where given).
    Sockperf,
    /// netperf RR and STREAM tests (classic, `-o` CSV or `-k` key=value output).
    Netperf,
    /// iperf3 `--json`.
    Iperf3,
}

/// (name for `--tool`, tool), in the order they are listed.
pub const TOOLS: &[(&str, Tool)] = &[
    ("cyclictest", Tool::Cyclictest),
    ("cyclicdeadline", Tool::Cyclicdeadline),
    ("oslat", Tool::Oslat),
    ("rtla-timerlat", Tool::RtlaTimerlat),
    ("rtla-osnoise", Tool::RtlaOsnoise),
    ("sockperf", Tool::Sockperf),
    ("netperf", Tool::Netperf),
    ("iperf3", Tool::Iperf3),
];

impl Tool {
    /// The tool named `name` (as listed in [`TOOLS`]).
    pub fn from_name(name: &str) -> Result<Tool, String> {
        TOOLS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|&(_, t)| t).ok_or_else(|| {
            let names: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
            format!("\"{name}\" is not a tool rtvirt reads (expected one of: {})", names.join(", "))
        })
    }

    pub fn name(self) -> &'static str {
        TOOLS.iter().find(|(_, t)| *t == self).map_or("?", |(n, _)| n)
    }
}

/// The tool whose output `text` is, recognised by the lines only that tool prints; None for
/// anything else (an rtvirt document among them).
pub fn detect(text: &str) -> Option<Tool> {
    let head: String = text.chars().take(4096).collect();
    let trimmed = head.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        if head.contains("\"schema\"") {
            return None;
        }
        if head.contains("\"rt_test_version") || head.contains("\"file_version\"") {
            return Some(if head.contains("cyclicdeadline") { Tool::Cyclicdeadline } else { Tool::Cyclictest });
        }
        if head.contains("\"test_start\"") || head.contains("\"connecting_to\"") || head.contains("iperf") {
            return Some(Tool::Iperf3);
        }
        return None;
    }
    let has = |needle: &str| head.contains(needle);
    if has("RTLA timerlat") || has("Timer Latency") {
        Some(Tool::RtlaTimerlat)
    } else if has("RTLA osnoise") || has("Operating System Noise") {
        Some(Tool::RtlaOsnoise)
    } else if has("oslat V") || (has("(us):") && has("Counter Freq")) {
        Some(Tool::Oslat)
    } else if has("sockperf") || has("txTime(sec)") {
        Some(Tool::Sockperf)
    } else if has("TEST from ") || has("THROUGHPUT=") || has("Latency Microseconds") {
        Some(Tool::Netperf)
    } else if has("deadline thread") || has("interval: ") && has("T: 0") {
        Some(Tool::Cyclicdeadline)
    } else if cyclictest::looks_like_histogram(&head)
        || ["# Histogram", "# Max Latencies:", "policy: fifo", "policy: other"].iter().any(|m| text.contains(m))
        || (has("T: 0 (") && has("Max:"))
    {
        Some(Tool::Cyclictest)
    } else {
        None
    }
}

/// Read `path` (a regular file of bounded size, see `rtvirt_model::input`) and import it.
pub fn import_file(path: &Path, tool: Option<Tool>) -> Result<Vec<Results>, InputError> {
    let text = read_text(path, InputKind::Results)?;
    import_text(path, &text, tool)
}

/// The results documents of one tool output (`path` names it in errors and labels): one, or
/// several when the output holds distinct latencies (rtla timerlat: IRQ and thread); never none.
/// Every number is checked where it is read (finite, at least 0, below 2^64 ns, counts without
/// overflow), so a document imported is one `report` and `export` read back.
pub fn import_text(path: &Path, text: &str, tool: Option<Tool>) -> Result<Vec<Results>, InputError> {
    let tool = match tool.or_else(|| detect(text)) {
        Some(t) => t,
        None => return Err(InputError::new(unknown_format()).in_file(path).at_line(1, 1)),
    };
    let source = text::Source::new(path, text);
    let parts = match tool {
        Tool::Cyclictest => cyclictest::import(&source)?,
        Tool::Cyclicdeadline => cyclictest::import_cyclicdeadline(&source)?,
        Tool::Oslat => oslat::import(&source)?,
        Tool::RtlaTimerlat => rtla::import_timerlat(&source)?,
        Tool::RtlaOsnoise => rtla::import_osnoise(&source)?,
        Tool::Sockperf => sockperf::import(&source)?,
        Tool::Netperf => netperf::import(&source)?,
        Tool::Iperf3 => iperf3::import(&source)?,
    };
    if parts.is_empty() {
        return Err(source.truncated(&format!("a result in this {} output", tool.name())));
    }
    let docs: Vec<Results> = parts.into_iter().map(|part| part.finish(tool)).collect();
    for (i, r) in docs.iter().enumerate() {
        if let Some(field) = not_finite(r) {
            let field = if docs.len() > 1 { format!("[{i}].{field}") } else { field };
            let message = "not a finite number: expected every statistic read to be one (a number the importer missed)";
            return Err(InputError::field(field, message).in_file(path));
        }
    }
    Ok(docs)
}

/// The first statistic of `r` that JSON cannot hold (NaN or infinite) or that is negative, if any.
fn not_finite(r: &Results) -> Option<String> {
    let bad = |x: f64| !x.is_finite() || x < 0.0;
    let summaries = [("latency_ns", r.latency_ns.as_ref()), ("rtt_ns", r.rtt_ns.as_ref())];
    let cpus = r.cpus.iter().enumerate().map(|(i, c)| (format!("cpus[{i}].latency_ns"), Some(&c.latency_ns)));
    for (name, s) in summaries.into_iter().map(|(n, s)| (n.to_string(), s)).chain(cpus) {
        if let Some(s) = s.filter(|s| bad(s.mean) || bad(s.sd)) {
            return Some(format!("{name}.{}", if bad(s.mean) { "mean" } else { "sd" }));
        }
    }
    if let Some(i) = r.flows.iter().position(|f| f.throughput_bps.is_some_and(bad)) {
        return Some(format!("flows[{i}].throughput_bps"));
    }
    r.net.as_ref().and_then(|n| n.achieved_rate).filter(|&x| bad(x)).map(|_| "achieved_rate".into())
}

fn unknown_format() -> String {
    let names: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
    format!(
        "not an output rtvirt recognises (expected an rtvirt.results/v1 or rtvirt.plan/v1 JSON document, or the \
         output of {}; name the tool with --tool if it is one of them)",
        names.join(", ")
    )
}

impl Part {
    fn finish(mut self, tool: Tool) -> Results {
        let env = self.results.environment.get_or_insert_with(Default::default);
        env.tool = Some(tool.name().to_string());
        env.tool_version = self.version.take();
        env.tool_command_line = self.command_line.take();
        if let Some(part) = self.part {
            self.results.label = Some(format!("{} {part}", tool.name()));
        }
        self.results
    }
}
