//! `Source`: an input file's name and text, kept beside what was parsed from it, so that an
//! error found after parsing (a rule that spans fields, a plan combined with the scenario) is
//! given its file, line and column by one function, [`Source::locate`].

use crate::error::InputError;
use crate::locate::locate_field;
use std::path::{Path, PathBuf};

/// Where a parsed document came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// The file (None for embedded or generated text).
    pub path: Option<PathBuf>,
    /// The TOML text the field paths refer to (None when the document was translated from
    /// another format, e.g. CARTS XML, whose lines the TOML paths do not name).
    text: Option<String>,
}

impl Source {
    /// TOML `text` read from `path`.
    pub fn toml(text: &str, path: Option<&Path>) -> Source {
        Source { path: path.map(Path::to_path_buf), text: Some(text.to_string()) }
    }

    /// The TOML text, when the document was read from TOML.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// A file whose text is not the TOML the field paths refer to: errors get the file only.
    pub fn file_only(path: Option<&Path>) -> Source {
        Source { path: path.map(Path::to_path_buf), text: None }
    }

    /// Give `error` the line/column of its field and this file's name. An error that already names
    /// another file (a samples CSV the document refers to) keeps that file's own location and
    /// says where this document refers to it. Locating twice changes nothing.
    pub fn locate(&self, error: InputError) -> InputError {
        let mine = |f: &Path| self.path.as_deref() == Some(f);
        let error = match (&error.at.field, error.at.line_col, error.at.file.as_deref()) {
            (Some(f), None, None) => match self.line_of(f) {
                Some((l, c)) => error.at_line(l, c),
                None => error,
            },
            (Some(f), _, Some(other)) if !mine(other) => {
                let at = self.line_of(f).map(|(l, c)| format!(":line {l}, column {c}")).unwrap_or_default();
                let name = self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the scenario".into());
                InputError { message: format!("{} (the samples file of {name}{at})", error.message), ..error }
            }
            _ => error,
        };
        match &self.path {
            Some(p) => error.in_file(p),
            None => error,
        }
    }

    fn line_of(&self, field: &str) -> Option<(usize, usize)> {
        locate_field(self.text.as_deref()?, field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_once_and_keeps_other_files() {
        let src = Source::toml("[host]\ncores = 0\n", Some(Path::new("s.toml")));
        let e = src.locate(InputError::field("host.cores", "bad"));
        assert_eq!(e.to_string(), "s.toml:line 2, column 1: field `host.cores`: bad");
        assert_eq!(src.locate(e.clone()), e);
        let samples = InputError::field("host.cores", "bad").in_file(Path::new("x.csv"));
        let e = src.locate(samples);
        assert!(e.to_string().starts_with("x.csv: field"), "{e}");
        assert!(e.message.ends_with("(the samples file of s.toml:line 2, column 1)"), "{e}");
        let e = Source::file_only(Some(Path::new("c.xml"))).locate(InputError::field("host.cores", "bad"));
        assert_eq!(e.to_string(), "c.xml: field `host.cores`: bad");
    }
}
