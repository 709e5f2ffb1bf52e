//! The text of one tool output: its lines numbered from 1 with terminal escapes removed
//! (cyclicdeadline and sockperf colour and redraw their lines), and located errors.

use rtvirt_model::InputError;
use std::path::Path;

pub(crate) struct Source<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    /// (1-based line number, the line without terminal escapes and trailing blanks).
    pub lines: Vec<(usize, String)>,
}

impl<'a> Source<'a> {
    pub fn new(path: &'a Path, text: &'a str) -> Source<'a> {
        let lines = text.lines().enumerate().map(|(i, l)| (i + 1, strip_escapes(l).trim_end().to_string())).collect();
        Source { path, text, lines }
    }

    /// An error at line `line` (1-based).
    pub fn error(&self, line: usize, message: impl Into<String>) -> InputError {
        InputError::new(message).in_file(self.path).at_line(line.max(1), 1)
    }

    /// An error after the last line: the file ends before `what`.
    pub fn truncated(&self, what: &str) -> InputError {
        self.error(self.lines.len() + 1, format!("the file ends here: expected {what} (is the file cut short?)"))
    }

    /// A JSON error located where serde_json found it.
    pub fn json_error(&self, e: &serde_json::Error, what: &str) -> InputError {
        InputError::new(format!("not {what}: {e}")).in_file(self.path).at_line(e.line().max(1), e.column().max(1))
    }
}

/// `line` without ANSI escape sequences (`ESC [ ... letter`).
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Parse `word` as a number, or say at `line` that `what` was expected.
pub(crate) fn number<T: std::str::FromStr>(src: &Source, line: usize, word: &str, what: &str) -> Result<T, InputError> {
    word.trim().parse().map_err(|_| src.error(line, format!("\"{}\": expected {what}", word.trim())))
}

/// Microseconds (possibly fractional, e.g. "3.365") as integer nanoseconds.
pub(crate) fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_are_removed() {
        assert_eq!(super::strip_escapes("\u{1b}[1AT: 0 (1) \u{1b}[2;35m== x ==\u{1b}[0m"), "T: 0 (1) == x ==");
    }
}
