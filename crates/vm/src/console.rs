//! Reading what the guest wrote: the console tail shown in errors, and the job output between the
//! `RTVIRT-BEGIN <nonce>` / `RTVIRT-END <nonce> rc=<n>` markers of [`crate::init`].

use std::path::Path;

/// How many console lines errors show.
pub const TAIL_LINES: usize = 25;

/// The last `count` lines of a log, without terminal escape sequences and control characters.
pub fn tail(path: &Path, count: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = printable(&String::from_utf8_lossy(&bytes));
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect();
    let start = lines.len().saturating_sub(count);
    if lines.is_empty() {
        return "    (empty)".into();
    }
    // A kernel panic's reason (and what init said just before it) scrolls off under the
    // backtrace: keep those lines in front.
    // (also when the panic line itself is just inside the tail but its context is not).
    let mut shown: Vec<&str> = Vec::new();
    if let Some(p) = lines.iter().position(|l| l.contains("Kernel panic")) {
        let (from, upto) = (p.saturating_sub(3), (p + 1).min(start));
        if from < start {
            shown.extend(&lines[from..upto]);
            if upto < start {
                shown.push("...");
            }
        }
    }
    shown.extend(&lines[start..]);
    shown.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

/// `text` without ANSI escape sequences, carriage returns and other control characters.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte; other escapes: ESC + one char.
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else if c == '\n' || c == '\t' || !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// What the markers say so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// No BEGIN marker yet: the guest is booting.
    Booting,
    /// BEGIN seen; the output so far.
    Running(String),
    /// END seen: the job's complete stdout and exit status.
    Done { stdout: String, rc: i32 },
}

/// Parse the output port log for the run with `nonce`.
pub fn progress(log: &str, nonce: &str) -> Progress {
    let log = log.replace('\r', "");
    let begin = format!("RTVIRT-BEGIN {nonce}\n");
    let Some(b) = log.find(&begin).map(|i| i + begin.len()) else {
        return Progress::Booting;
    };
    let body = &log[b..];
    let end = format!("RTVIRT-END {nonce} rc=");
    let Some(e) = body.find(&end) else {
        return Progress::Running(body.to_string());
    };
    let rc_text: String = body[e + end.len()..].chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    if !body[e + end.len() + rc_text.len()..].starts_with('\n') {
        return Progress::Running(body.to_string()); // END line not complete yet
    }
    Progress::Done { stdout: body[..e].to_string(), rc: rc_text.parse().unwrap_or(-1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_delimit_the_job_output() {
        assert_eq!(progress("[ 0.1] boot\n", "n1"), Progress::Booting);
        assert_eq!(progress("RTVIRT-BEGIN n1\r\n{\"a\":", "n1"), Progress::Running("{\"a\":".into()));
        assert_eq!(
            progress("RTVIRT-BEGIN n1\n{}\nRTVIRT-END n1 rc=", "n1"),
            Progress::Running("{}\nRTVIRT-END n1 rc=".into())
        );
        assert_eq!(
            progress("RTVIRT-BEGIN n1\n{}\nRTVIRT-END n1 rc=3\n", "n1"),
            Progress::Done { stdout: "{}\n".into(), rc: 3 }
        );
        // a stale run's markers (other nonce) are ignored
        assert_eq!(progress("RTVIRT-BEGIN n0\nx\nRTVIRT-END n0 rc=0\n", "n1"), Progress::Booting);
    }

    #[test]
    fn a_panic_keeps_what_init_said_before_it_wherever_the_tail_starts() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("console.log");
        let trace: Vec<String> = (0..6).map(|i| format!("trace {i}")).collect();
        for before in 0..=2 {
            // init's last words, the panic line, then a backtrace; the tail of 7 lines starts
            // at the panic line (before = 0), inside the backtrace (1) or far after it (2)
            let extra: Vec<String> = (0..before * 3).map(|i| format!("more {i}")).collect();
            let text = ["boot", "init: mounting", "rtvirt-broken-init", "Kernel panic - not syncing"]
                .iter()
                .map(|s| s.to_string())
                .chain(trace.clone())
                .chain(extra)
                .collect::<Vec<_>>()
                .join("\n");
            std::fs::write(&log, text).unwrap();
            let t = tail(&log, 7);
            assert!(t.contains("rtvirt-broken-init") && t.contains("Kernel panic"), "{before}:\n{t}");
            assert_eq!(t.matches("Kernel panic").count(), 1, "{before}:\n{t}");
        }
    }

    #[test]
    fn escapes_and_control_characters_are_removed() {
        assert_eq!(printable("\u{1b}c\u{1b}[?7l\u{1b}[2J\u{1b}[0mSeaBIOS\r\n"), "SeaBIOS\n");
    }
}
