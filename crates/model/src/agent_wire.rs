//! What the guest agent (`rtvirt guest-agent`) tells the host, and the host's distrustful reading
//! of it. The agent learns the guest's real-time tasks - their `sched_getattr` parameters and the
//! execution time of their jobs - and writes one [`AgentReport`] per task and interval as a JSON
//! line on a virtio-serial port. The guest is not trusted: [`check_line`] reads at most
//! [`MAX_LINE`] bytes per line, rejects what is malformed or impossible (a period of 0 or above
//! [`MAX_TIMING`]) and clamps what is merely implausible (a deadline above the period, a job
//! longer than the period, too many jobs or too long a name), saying how many fields it clamped;
//! [`AgentCounters`] counts every outcome so that observe and adapt can report them.
//!
//! This is the cooperative stand-in for the introspection of Burns 2014 (trapping only a guest's
//! real-time events, not every system call): only job boundaries cross the guest boundary.

use crate::scenario::MAX_TIMING;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of the line protocol (the `v` field).
pub const AGENT_PROTOCOL: u32 = 1;
/// Longest line the host reads; a longer one is discarded up to its newline.
pub const MAX_LINE: usize = 4096;
/// Most job samples one report keeps (the rest are dropped and counted as clamped).
pub const MAX_JOBS_PER_REPORT: usize = 256;
/// Most tasks tracked per guest; reports of further tasks are dropped and counted.
pub const MAX_TASKS: usize = 64;
/// Longest task name kept (characters).
pub const MAX_NAME: usize = 64;
/// Shortest period accepted (10 us): shorter is not a real-time task a reservation could follow.
pub const MIN_PERIOD_NS: u64 = 10_000;
/// Most report lines accepted per second and guest; more are a flood, dropped and counted.
pub const MAX_LINES_PER_SEC: u64 = 1000;

/// How the agent measured the jobs of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobSource {
    /// The task called the job-boundary API at the end of each job (exact execution times).
    Api,
    /// The thread's CPU time between two voluntary sleeps, from the guest's schedstat (one mean
    /// per interval).
    Schedstat,
}

/// One line from the agent: a guest task and the execution times of its jobs since the last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentReport {
    /// Protocol version, [`AGENT_PROTOCOL`].
    pub v: u32,
    /// Guest thread id (with `name`, the task's identity).
    pub tid: u32,
    pub name: String,
    /// `deadline`, `fifo`, `rr` or `other` (the guest thread's policy; a task calling the job
    /// API may run under any).
    pub policy: String,
    pub period_ns: u64,
    pub deadline_ns: u64,
    /// The task's own SCHED_DEADLINE runtime in the guest (0 if it has none).
    #[serde(default)]
    pub runtime_ns: u64,
    /// Execution time of each job ended since the previous report, in ns.
    pub jobs: Vec<u64>,
    pub how: JobSource,
}

/// Why a line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    #[error("line longer than {MAX_LINE} bytes")]
    Oversized,
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("impossible: {0}")]
    Impossible(String),
}

/// A report that passed [`check_line`], clamped to the bounds; `clamped` fields were changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub report: AgentReport,
    pub clamped: u32,
}

/// Parse and check one line (without its newline).
pub fn check_line(line: &[u8]) -> Result<Checked, Fault> {
    if line.len() > MAX_LINE {
        return Err(Fault::Oversized);
    }
    let mut report: AgentReport = serde_json::from_slice(line).map_err(|e| Fault::Malformed(e.to_string()))?;
    if report.v != AGENT_PROTOCOL {
        return Err(Fault::Malformed(format!("protocol version {} (expected {AGENT_PROTOCOL})", report.v)));
    }
    if !matches!(report.policy.as_str(), "deadline" | "fifo" | "rr" | "other") {
        return Err(Fault::Malformed(format!("policy {:?} (expected deadline, fifo, rr or other)", report.policy)));
    }
    if report.period_ns < MIN_PERIOD_NS || report.period_ns > MAX_TIMING.0 {
        return Err(Fault::Impossible(format!(
            "period {} ns (expected {MIN_PERIOD_NS}..={} ns)",
            report.period_ns, MAX_TIMING.0
        )));
    }
    if report.deadline_ns == 0 {
        return Err(Fault::Impossible("deadline 0".into()));
    }
    let clamped = clamp(&mut report);
    Ok(Checked { report, clamped })
}

/// Clamp a report with a valid period to the bounds; the number of fields changed.
fn clamp(r: &mut AgentReport) -> u32 {
    let mut clamped = 0;
    let mut bound = |value: &mut u64, max: u64| {
        if *value > max {
            *value = max;
            clamped += 1;
        }
    };
    bound(&mut r.deadline_ns, r.period_ns);
    bound(&mut r.runtime_ns, r.deadline_ns);
    let period = r.period_ns;
    for job in &mut r.jobs {
        bound(job, period);
    }
    if r.jobs.len() > MAX_JOBS_PER_REPORT {
        r.jobs.truncate(MAX_JOBS_PER_REPORT);
        clamped += 1;
    }
    let shown = visible_name(&r.name);
    if shown != r.name {
        r.name = shown;
        clamped += 1;
    }
    clamped
}

/// A guest's task name as the host keeps and shows it: each control, format or separator
/// character (Unicode Cc, Cf, Zl, Zp: terminal escapes, newlines, bidi controls such as U+202E
/// that would reorder a table row) escaped visibly as `\u{202e}`, then cut to [`MAX_NAME`]
/// characters (never inside an escape).
pub fn visible_name(name: &str) -> String {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    let mut out = String::new();
    let mut count = 0;
    for c in name.chars() {
        let hidden =
            matches!(get_general_category(c), G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator);
        let piece = if hidden { format!("\\u{{{:x}}}", u32::from(c)) } else { c.to_string() };
        count += piece.chars().count();
        if count > MAX_NAME {
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// What the host made of one guest's agent lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCounters {
    /// Lines read (every outcome below counts one line).
    pub lines: u64,
    /// Accepted (perhaps clamped).
    pub accepted: u64,
    /// Accepted with at least one field clamped to its bound.
    pub clamped: u64,
    /// Not JSON, unknown fields, wrong version or policy.
    pub malformed: u64,
    /// Longer than the line bound (discarded unread up to the newline).
    pub oversized: u64,
    /// A period or deadline that cannot be (0, below 10 us, above 1 hour).
    pub impossible: u64,
    /// Over the rate bound of the guest (a flood).
    pub flooded: u64,
    /// Reports of tasks beyond the per-guest task bound.
    pub too_many_tasks: u64,
}

impl AgentCounters {
    /// Count the outcome of one line.
    pub fn count(&mut self, outcome: &Result<Checked, Fault>) {
        self.lines += 1;
        match outcome {
            Ok(c) => {
                self.accepted += 1;
                self.clamped += u64::from(c.clamped > 0);
            }
            Err(Fault::Oversized) => self.oversized += 1,
            Err(Fault::Malformed(_)) => self.malformed += 1,
            Err(Fault::Impossible(_)) => self.impossible += 1,
        }
    }

    /// Lines refused or dropped for any reason.
    pub fn refused(&self) -> u64 {
        self.malformed + self.oversized + self.impossible + self.flooded + self.too_many_tasks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn line(period: u64, deadline: u64, jobs: &[u64]) -> String {
        serde_json::to_string(&AgentReport {
            v: 1,
            tid: 7,
            name: "ctl".into(),
            policy: "deadline".into(),
            period_ns: period,
            deadline_ns: deadline,
            runtime_ns: 0,
            jobs: jobs.to_vec(),
            how: JobSource::Api,
        })
        .unwrap()
    }

    #[test]
    fn a_good_line_is_accepted_unchanged() {
        let c = check_line(line(10_000_000, 5_000_000, &[1_000_000, 2_000_000]).as_bytes()).unwrap();
        assert_eq!((c.clamped, c.report.jobs.len(), c.report.deadline_ns), (0, 2, 5_000_000));
    }

    #[test]
    fn lies_are_refused_or_clamped() {
        assert!(matches!(check_line(line(0, 1, &[]).as_bytes()), Err(Fault::Impossible(_))));
        assert!(matches!(check_line(line(MAX_TIMING.0 + 1, 1, &[]).as_bytes()), Err(Fault::Impossible(_))));
        let c = check_line(line(1_000_000, 9_000_000, &[5_000_000, 10]).as_bytes()).unwrap();
        assert_eq!((c.clamped, c.report.deadline_ns, c.report.jobs.clone()), (2, 1_000_000, vec![1_000_000, 10]));
        let many = vec![1u64; MAX_JOBS_PER_REPORT + 5];
        assert_eq!(check_line(line(1_000_000, 1_000_000, &many).as_bytes()).unwrap().report.jobs.len(), 256);
    }

    #[test]
    fn malformed_and_oversized_lines_are_refused() {
        for bad in ["", "{", "[1,2]", r#"{"v":1}"#, "\u{0}\u{1}garbage"] {
            assert!(matches!(check_line(bad.as_bytes()), Err(Fault::Malformed(_))), "{bad:?}");
        }
        let unknown = line(1_000_000, 1_000_000, &[]).replace("\"v\":1", "\"v\":1,\"extra\":2");
        assert!(matches!(check_line(unknown.as_bytes()), Err(Fault::Malformed(_))));
        let wrong_version = line(1_000_000, 1_000_000, &[]).replace("\"v\":1", "\"v\":9");
        assert!(matches!(check_line(wrong_version.as_bytes()), Err(Fault::Malformed(_))));
        assert_eq!(check_line(&vec![b' '; MAX_LINE + 1]), Err(Fault::Oversized));
    }

    #[test]
    fn names_show_control_and_bidi_characters_escaped() {
        let named =
            |name: &str| line(1_000_000, 1_000_000, &[]).replace("\"ctl\"", &serde_json::to_string(name).unwrap());
        for (name, shown) in [
            ("ctl\u{202e}lortnoc", "ctl\\u{202e}lortnoc"),
            ("\u{2066}a\u{2069}\u{200e}\u{200f}", "\\u{2066}a\\u{2069}\\u{200e}\\u{200f}"),
            ("a\u{1b}[31mb\nc\u{2028}", "a\\u{1b}[31mb\\u{a}c\\u{2028}"),
            ("\u{feff}x\u{200b}", "\\u{feff}x\\u{200b}"),
        ] {
            let c = check_line(named(name).as_bytes()).unwrap();
            assert_eq!((c.report.name.as_str(), c.clamped), (shown, 1), "{name:?}");
        }
        let plain = check_line(named("tâche-1.ctl").as_bytes()).unwrap();
        assert_eq!((plain.report.name.as_str(), plain.clamped), ("tâche-1.ctl", 0));
        let long = visible_name(&"\u{202e}".repeat(MAX_NAME));
        assert_eq!(long, "\\u{202e}".repeat(MAX_NAME / 8), "cut between whole escapes");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        /// Whatever a name holds, the name kept has no control, format or separator character
        /// and at most MAX_NAME characters.
        #[test]
        fn kept_names_hide_nothing(name in "\\PC{0,40}|[\\x00-\\x1f\\u{200b}-\\u{200f}\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}a]{0,80}") {
            use unicode_general_category::{get_general_category, GeneralCategory as G};
            let shown = visible_name(&name);
            prop_assert!(shown.chars().count() <= MAX_NAME);
            prop_assert!(shown.chars().all(|c| !matches!(get_general_category(c),
                G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator)), "{:?}", shown);
        }
    }

    proptest! {
        /// Whatever the bytes, the check returns (never panics), and what it accepts is within bounds.
        #[test]
        fn accepted_reports_are_within_bounds(bytes in proptest::collection::vec(any::<u8>(), 0..300),
                                              period in 0u64..5_000_000_000_000, deadline in 0u64..u64::MAX,
                                              jobs in proptest::collection::vec(any::<u64>(), 0..300)) {
            let _ = check_line(&bytes);
            if let Ok(c) = check_line(line(period, deadline, &jobs).as_bytes()) {
                let r = c.report;
                prop_assert!(r.period_ns >= MIN_PERIOD_NS && r.period_ns <= MAX_TIMING.0);
                prop_assert!(r.deadline_ns >= 1 && r.deadline_ns <= r.period_ns);
                prop_assert!(r.jobs.len() <= MAX_JOBS_PER_REPORT && r.jobs.iter().all(|&j| j <= r.period_ns));
            }
        }
    }
}
