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

/// The largest nanoseconds a result holds: 2^64 - 1 (584 years); more is not a measurement.
const MAX_NS: f64 = u64::MAX as f64;

/// Parse `word` as a finite decimal of at least 0 (NaN, infinities and negative numbers are
/// refused at `line`: they are no latency, duration, rate or count).
pub(crate) fn decimal(src: &Source, line: usize, word: &str, what: &str) -> Result<f64, InputError> {
    let v: f64 = number(src, line, word, what)?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(src.error(line, format!("\"{}\": expected {what} (a finite number, at least 0)", word.trim())))
    }
}

/// `value` in nanoseconds (`scale` nanoseconds per unit), as a float below 2^64 ns, or an error
/// at `line` (a value of 1e308 us would be an infinite mean).
pub(crate) fn ns_f64(src: &Source, line: usize, value: f64, scale: f64) -> Result<f64, InputError> {
    let ns = value * scale;
    if ns.is_finite() && (0.0..MAX_NS).contains(&ns) {
        Ok(ns)
    } else {
        Err(src.error(line, format!("{value}: expected at least 0 and below 2^64 ns (584 years) once in nanoseconds")))
    }
}

/// Microseconds (possibly fractional, e.g. "3.365") as integer nanoseconds (see [`ns_f64`]).
pub(crate) fn us_to_ns(src: &Source, line: usize, us: f64) -> Result<u64, InputError> {
    Ok(ns_f64(src, line, us, 1000.0)?.round() as u64)
}

/// Seconds (possibly fractional) as integer nanoseconds (see [`ns_f64`]).
pub(crate) fn s_to_ns(src: &Source, line: usize, s: f64) -> Result<u64, InputError> {
    Ok(ns_f64(src, line, s, 1e9)?.round() as u64)
}

/// `value` units of `unit_ns` nanoseconds, or an error at `line` beyond 2^64 ns.
pub(crate) fn times(src: &Source, line: usize, value: u64, unit_ns: u64) -> Result<u64, InputError> {
    value.checked_mul(unit_ns).ok_or_else(|| {
        src.error(line, format!("{value} x {unit_ns} ns: expected below 2^64 ns (584 years) once in nanoseconds"))
    })
}

/// The sum of `counts`, or an error at `line` beyond 2^64 - 1.
pub(crate) fn total(
    src: &Source,
    line: usize,
    counts: impl IntoIterator<Item = u64>,
    what: &str,
) -> Result<u64, InputError> {
    counts
        .into_iter()
        .try_fold(0u64, u64::checked_add)
        .ok_or_else(|| src.error(line, format!("{what} add up to more than 2^64 - 1: expected counts a run can have")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_are_removed() {
        assert_eq!(super::strip_escapes("\u{1b}[1AT: 0 (1) \u{1b}[2;35m== x ==\u{1b}[0m"), "T: 0 (1) == x ==");
    }
}
