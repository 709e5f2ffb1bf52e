//! The one reader of every input file (scenario, samples, CARTS, plan, results, sweep, host
//! profile): a regular file of bounded size, read whole as UTF-8. A FIFO, a device (`/dev/zero`)
//! or a directory is refused before it is opened (so that reading can neither block forever nor
//! grow without bound), and so is a file larger than its kind's limit:
//!
//! | kind                                   | limit   |
//! |----------------------------------------|---------|
//! | scenario, sweep, host profile (TOML)   | 16 MiB  |
//! | host model (JSON)                      | 16 MiB  |
//! | CARTS XML                              | 16 MiB  |
//! | execution-time samples                 | 64 MiB  |
//! | plan (JSON)                            | 64 MiB  |
//! | results (JSON, JSON lines)             | 256 MiB |
//!
//! Each limit is far above what rtvirt writes or a person edits (a 10,000-task scenario is about
//! 1 MiB, a results file of a one-hour soak a few MiB) and keeps parsing within a bounded memory.

use crate::error::InputError;
use std::io::Read;
use std::path::Path;

const MIB: u64 = 1024 * 1024;

/// What an input file holds: names it in errors and sets its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Scenario,
    Sweep,
    HostProfile,
    Carts,
    Samples,
    Plan,
    HostModel,
    Results,
}

impl InputKind {
    /// Largest accepted file, in bytes.
    pub const fn limit(self) -> u64 {
        match self {
            InputKind::Scenario
            | InputKind::Sweep
            | InputKind::HostProfile
            | InputKind::Carts
            | InputKind::HostModel => 16 * MIB,
            InputKind::Samples | InputKind::Plan => 64 * MIB,
            InputKind::Results => 256 * MIB,
        }
    }

    /// The words used in errors ("cannot read {name}: ...").
    pub const fn name(self) -> &'static str {
        match self {
            InputKind::Scenario => "scenario",
            InputKind::Sweep => "sweep file",
            InputKind::HostProfile => "profile",
            InputKind::Carts => "CARTS file",
            InputKind::Samples => "samples file",
            InputKind::Plan => "plan",
            InputKind::HostModel => "host model",
            InputKind::Results => "results",
        }
    }
}

/// The text of input file `path`: a regular file of at most `kind.limit()` bytes, UTF-8.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, InputError> {
    let what = kind.name();
    let fail = |m: String| InputError::new(m).in_file(path);
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    check_meta(&meta, kind).map_err(fail)?;
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    // the file opened may not be the one looked at (replaced in between): check it again
    let meta = file.metadata().map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    check_meta(&meta, kind).map_err(fail)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(kind.limit() + 1).read_to_end(&mut bytes).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    if bytes.len() as u64 > kind.limit() {
        return Err(fail(too_large(kind, bytes.len() as u64)));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, col) = crate::error::line_col(std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or(""), at);
        fail(format!("cannot read {what}: not UTF-8 text (an invalid byte here)")).at_line(line, col)
    })
}

fn check_meta(meta: &std::fs::Metadata, kind: InputKind) -> Result<(), String> {
    let what = kind.name();
    if !meta.is_file() {
        return Err(format!(
            "cannot read {what}: {} is not a regular file (expected a {what} on disk, not a pipe, device or directory)",
            file_type(meta)
        ));
    }
    if meta.len() > kind.limit() {
        return Err(too_large(kind, meta.len()));
    }
    Ok(())
}

fn too_large(kind: InputKind, bytes: u64) -> String {
    format!(
        "cannot read {}: {bytes} bytes is larger than the {} MiB a {} may hold",
        kind.name(),
        kind.limit() / MIB,
        kind.name()
    )
}

fn file_type(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "this file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_fifos_directories_and_large_files() {
        let e = read_text(Path::new("/dev/zero"), InputKind::Plan).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero: cannot read plan: a device is not a regular file (expected a plan on disk, not a pipe, device \
             or directory)"
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(read_text(dir.path(), InputKind::Scenario).unwrap_err().message.contains("a directory"));
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = read_text(&fifo, InputKind::Samples).unwrap_err();
        assert!(e.message.contains("a FIFO is not a regular file"), "{e}");
        let big = dir.path().join("big.toml");
        std::fs::File::create(&big).unwrap().set_len(InputKind::Scenario.limit() + 1).unwrap();
        let e = read_text(&big, InputKind::Scenario).unwrap_err();
        assert!(e.message.contains("larger than the 16 MiB a scenario may hold"), "{e}");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, b"a = 1\nb = \xff\n").unwrap();
        let e = read_text(&bad, InputKind::Scenario).unwrap_err();
        assert_eq!(e.at.line_col, Some((2, 5)), "{e}");
        assert!(
            e.to_string()
                .ends_with("bad.toml:line 2, column 5: cannot read scenario: not UTF-8 text (an invalid byte here)"),
            "{e}"
        );
        std::fs::write(&bad, "a = 1\n").unwrap();
        assert_eq!(read_text(&bad, InputKind::Scenario).unwrap(), "a = 1\n");
    }
}
