//! The one reader of every input file (scenario, samples, CARTS, plan, results, sweep, host
//! profile): a regular file of bounded size, read whole as UTF-8. A FIFO, a device (`/dev/zero`)
//! or a directory is refused before it is opened (so that reading can neither block forever nor
//! grow without bound), and so is a file larger than its kind's limit:
//!
//! | kind                                   | limit   |
//! |----------------------------------------|---------|
//! | scenario (TOML)                        | 16 MiB  |
//! | scenario (JSON)                        | 256 MiB |
//! | sweep, study, profile (TOML)           | 1 MiB   |
//! | host model (JSON)                      | 16 MiB  |
//! | CARTS XML (imports become scenarios)   | 2 MiB   |
//! | libvirt domain XML (`--libvirt-domain`) | 2 MiB  |
//! | execution-time samples                 | 64 MiB  |
//! | plan (JSON)                            | 64 MiB  |
//! | results (JSON, JSON lines)             | 256 MiB |
//!
//! Each limit is far above what rtvirt writes or a person edits (a results file of a one-hour soak
//! is a few MiB) and keeps parsing within a bounded memory. The TOML reader builds a tree of the
//! whole document (~50 bytes per input byte for a scenario of guests and tasks); the shapes that
//! cost it much more (deep nesting, dense inline tables, long keys) are refused by
//! [`crate::toml_shape`] before parsing, which bounds it to the factor measured in
//! docs/PERFORMANCE.md ("TOML inputs"). A TOML scenario holds some 25,000 guests of 10 tasks; a
//! fleet larger than that is written as JSON, read straight into the scenario's types (~100,000
//! guests of 10 tasks in 67 MB).
//!
//! [`read_text`] reads a file whole; [`open`] gives a buffered reader of the same checked file,
//! which fails once more than the limit has been read (`rtvirt report` streams JSON arrays
//! through it).

use crate::error::InputError;
use std::io::{BufReader, Read};
use std::path::Path;

const MIB: u64 = 1024 * 1024;

/// What an input file holds: names it in errors and sets its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Scenario,
    ScenarioJson,
    Sweep,
    Study,
    HostProfile,
    Carts,
    LibvirtDomain,
    Samples,
    Plan,
    HostModel,
    Results,
}

impl InputKind {
    /// Largest accepted file, in bytes.
    pub const fn limit(self) -> u64 {
        match self {
            InputKind::Scenario => 16 * MIB,
            InputKind::Sweep | InputKind::Study | InputKind::HostProfile => MIB,
            InputKind::Carts | InputKind::LibvirtDomain => 2 * MIB,
            InputKind::HostModel => 16 * MIB,
            InputKind::Samples | InputKind::Plan => 64 * MIB,
            InputKind::Results | InputKind::ScenarioJson => 256 * MIB,
        }
    }

    /// The words used in errors ("cannot read {name}: ...").
    pub const fn name(self) -> &'static str {
        match self {
            InputKind::Scenario | InputKind::ScenarioJson => "scenario",
            InputKind::Sweep => "sweep file",
            InputKind::Study => "study file",
            InputKind::HostProfile => "profile",
            InputKind::Carts => "CARTS file",
            InputKind::LibvirtDomain => "libvirt domain XML",
            InputKind::Samples => "samples file",
            InputKind::Plan => "plan",
            InputKind::HostModel => "host model",
            InputKind::Results => "results",
        }
    }
}

/// The text of input file `path`: a regular file of at most `kind.limit()` bytes, UTF-8.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, InputError> {
    read_rest(open(path, kind)?, path, kind)
}

/// A buffered reader of input file `path`, checked as [`read_text`] checks it (a regular file of
/// at most `kind.limit()` bytes); reading past the limit (a file that grew) fails.
pub fn open(path: &Path, kind: InputKind) -> Result<BufReader<Limited>, InputError> {
    let what = kind.name();
    let fail = |m: String| InputError::new(m).in_file(path);
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    check_meta(&meta, kind).map_err(fail)?;
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    // the file opened may not be the one looked at (replaced in between): check it again
    let meta = file.metadata().map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    check_meta(&meta, kind).map_err(fail)?;
    Ok(BufReader::new(Limited { file, kind, read: 0, len_hint: meta.len() }))
}

/// The rest of an [`open`]ed file as UTF-8 text (errors located in `path`).
pub fn read_rest(mut reader: BufReader<Limited>, path: &Path, kind: InputKind) -> Result<String, InputError> {
    let what = kind.name();
    let fail = |m: String| InputError::new(m).in_file(path);
    let mut bytes = Vec::with_capacity(reader.get_ref().len_hint as usize);
    reader.read_to_end(&mut bytes).map_err(|e| fail(read_error(what, &e)))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let (line, col) = crate::error::line_col(std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or(""), at);
        fail(format!("cannot read {what}: not UTF-8 text (an invalid byte here)")).at_line(line, col)
    })
}

/// "cannot read ...: why" (the limit's own message as it is).
fn read_error(what: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::FileTooLarge => error.to_string(),
        _ => format!("cannot read {what}: {error}"),
    }
}

/// An input file that fails (`ErrorKind::FileTooLarge`) once more than its kind's limit is read.
#[derive(Debug)]
pub struct Limited {
    file: std::fs::File,
    kind: InputKind,
    read: u64,
    len_hint: u64,
}

impl Read for Limited {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // one byte past the limit is read, to tell a file at the limit from a larger one
        let room = (self.kind.limit() + 1).saturating_sub(self.read);
        let want = buf.len().min(room.min(usize::MAX as u64) as usize);
        let n = self.file.read(&mut buf[..want])?;
        self.read += n as u64;
        if self.read > self.kind.limit() {
            return Err(std::io::Error::new(std::io::ErrorKind::FileTooLarge, too_large(self.kind, self.read)));
        }
        Ok(n)
    }
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
        let e = read_text(&big, InputKind::Sweep).unwrap_err();
        assert!(e.message.contains("larger than the 1 MiB a sweep file may hold"), "{e}");
        for (kind, what) in [(InputKind::Study, "study file"), (InputKind::HostProfile, "profile")] {
            let e = read_text(&big, kind).unwrap_err();
            assert_eq!(e.at.file.as_deref(), Some(big.as_path()));
            assert!(e.message.ends_with(&format!("larger than the 1 MiB a {what} may hold")), "{e}");
        }
        std::fs::File::create(&big).unwrap().set_len(InputKind::Sweep.limit()).unwrap();
        assert!(read_text(&big, InputKind::Sweep).unwrap().len() as u64 == MIB, "a file at the limit is read");
        let mut grown = open(&bad_size_file(dir.path(), 10), InputKind::Sweep).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("sized"))
            .unwrap()
            .set_len(InputKind::Sweep.limit() + 10)
            .unwrap();
        let e = grown.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("larger than the 1 MiB a sweep file may hold"), "{e}");
        std::fs::File::create(&big).unwrap().set_len(InputKind::Scenario.limit() + 1).unwrap();
        let e = read_text(&big, InputKind::Scenario).unwrap_err();
        assert!(e.message.ends_with("larger than the 16 MiB a scenario may hold"), "{e}");
        let e = read_text(&big.with_extension("json"), InputKind::ScenarioJson).unwrap_err();
        assert!(e.message.contains("No such file"), "{e}");
        assert_eq!(InputKind::ScenarioJson.limit(), 256 * MIB);
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

    fn bad_size_file(dir: &Path, len: u64) -> std::path::PathBuf {
        let p = dir.join("sized");
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        p
    }
}
