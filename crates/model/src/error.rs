//! `InputError`: a user-input error that names the file, the line/column and the field, and says
//! what was expected. Every command maps it to exit code 2.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in an input file a problem is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub file: Option<PathBuf>,
    /// 1-based line and column, when known.
    pub line_col: Option<(usize, usize)>,
    /// Dotted field path, e.g. `guest[1].task[0].wcet`.
    pub field: Option<String>,
}

/// A problem with user input (scenario, plan, samples, command-line values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub at: Location,
    pub message: String,
}

impl InputError {
    pub fn new(message: impl Into<String>) -> Self {
        InputError { at: Location::default(), message: message.into() }
    }
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError { at: Location { field: Some(field.into()), ..Default::default() }, message: message.into() }
    }
    pub fn in_file(mut self, file: &Path) -> Self {
        if self.at.file.is_none() {
            self.at.file = Some(file.to_path_buf());
        }
        self
    }
    pub fn at_line(mut self, line: usize, col: usize) -> Self {
        if self.at.line_col.is_none() {
            self.at.line_col = Some((line, col));
        }
        self
    }
    /// Prefix the field path (used when a nested value is validated on its own).
    pub fn under(mut self, parent: &str) -> Self {
        self.at.field = Some(match self.at.field.take() {
            Some(f) if f.starts_with('[') => format!("{parent}{f}"),
            Some(f) => format!("{parent}.{f}"),
            None => parent.to_string(),
        });
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        if let Some(file) = &self.at.file {
            write!(f, "{}", file.display())?;
            wrote = true;
        }
        if let Some((l, c)) = self.at.line_col {
            write!(f, "{}line {l}, column {c}", if wrote { ":" } else { "" })?;
            wrote = true;
        }
        if let Some(field) = &self.at.field {
            write!(f, "{}field `{field}`", if wrote { ": " } else { "" })?;
            wrote = true;
        }
        write!(f, "{}{}", if wrote { ": " } else { "" }, self.message)
    }
}

impl std::error::Error for InputError {}

/// A number as an error shows it: plain when it reads well (0.95, 12.5), else in scientific
/// notation (1e308 rather than 309 digits; 1e-12 rather than twelve zeros).
pub fn shown(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e9).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// 1-based (line, column) of a byte offset in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..floor_char_boundary(src, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_everything() {
        let e = InputError::field("task[0].wcet", "must be positive")
            .under("guest[1]")
            .in_file(Path::new("s.toml"))
            .at_line(7, 3);
        assert_eq!(e.to_string(), "s.toml:line 7, column 3: field `guest[1].task[0].wcet`: must be positive");
    }

    #[test]
    fn numbers_in_errors_stay_short() {
        assert_eq!(shown(1e308), "1e308");
        assert_eq!(shown(1e-12), "1e-12");
        assert_eq!(shown(0.95), "0.95");
        assert_eq!(shown(-3.5), "-3.5");
        assert_eq!(shown(0.0), "0");
        assert_eq!(shown(f64::NAN), "NaN");
    }

    #[test]
    fn line_col_counts_from_one() {
        let src = "a\nbc\nd";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 3), (2, 2));
        assert_eq!(line_col(src, 5), (3, 1));
        assert_eq!(line_col(src, 99), (3, 2));
    }
}
