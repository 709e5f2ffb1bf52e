//! Output files, checked before the work that fills them: a measurement is never lost to a bad
//! output path found only at its end, and no command overwrites one of its own inputs.

use rtvirt_model::InputError;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Check the output file `path` (given as `option`) before any work: it is none of `inputs` (the
/// same file: same device and inode, so also through symbolic or hard links) and it can be opened
/// for writing (a missing file is created and removed again; an existing one is not truncated).
/// "-" (standard output) passes.
pub fn check(option: &str, path: &Path, inputs: &[&Path]) -> Result<(), InputError> {
    if path == Path::new("-") {
        return Ok(());
    }
    not_an_input(option, path, inputs, "file")?;
    writable(option, path)
}

/// Check the files `names` a command writes into the directory `dir` (given as `option`) before
/// any work, each as [`check`] does; a directory not made yet holds no input, and is not probed.
pub fn check_in_dir(option: &str, dir: &Path, names: &[impl AsRef<str>], inputs: &[&Path]) -> Result<(), InputError> {
    for name in names {
        let path = dir.join(name.as_ref());
        not_an_input(option, &path, inputs, "directory")?;
        if dir.is_dir() {
            writable(option, &path)?;
        }
    }
    Ok(())
}

/// `path` is none of `inputs` (the same device and inode).
fn not_an_input(option: &str, path: &Path, inputs: &[&Path], other: &str) -> Result<(), InputError> {
    let Some(input) = inputs.iter().find(|input| same_file(path, input)) else { return Ok(()) };
    let also = if input == &path { String::new() } else { format!(" (as {})", input.display()) };
    Err(InputError::field(
        option,
        format!(
            "{} is an input of this command{also}: writing it would overwrite it; choose another {other}",
            path.display()
        ),
    ))
}

/// `path` can be opened for writing (a missing file is created and removed again; an existing
/// one is not truncated).
fn writable(option: &str, path: &Path) -> Result<(), InputError> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| InputError::field(option, format!("cannot write {}: {e}", path.display())))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_links_and_unwritable_places_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("s.toml");
        std::fs::write(&input, "x").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let e = check("--trace", &input, &[&input]).unwrap_err().to_string();
        assert!(e.contains("--trace") && e.contains("is an input"), "{e}");
        let e = check("--trace", &link, &[&input]).unwrap_err().to_string();
        assert!(e.contains("link.toml") && e.contains("as ") && e.contains("s.toml"), "{e}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "x", "the input is untouched");
        let e = check("--histogram", Path::new("/nonexistent/h.txt"), &[]).unwrap_err().to_string();
        assert!(e.contains("--histogram") && e.contains("/nonexistent/h.txt"), "{e}");
        let fresh = dir.path().join("out.json");
        check("-o", &fresh, &[&input]).unwrap();
        assert!(!fresh.exists(), "the check leaves no file behind");
        check("-o", Path::new("-"), &[&input]).unwrap();
    }

    #[test]
    fn files_written_into_a_directory_are_checked_against_the_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("vm1.xml");
        std::fs::write(&input, "x").unwrap();
        let e = check_in_dir("--output-dir", dir.path(), &["qemu", "vm1.xml"], &[&input]).unwrap_err().to_string();
        assert!(e.contains("--output-dir") && e.contains("vm1.xml is an input") && e.contains("directory"), "{e}");
        check_in_dir("--output-dir", dir.path(), &["qemu", "vm2.xml"], &[&input]).unwrap();
        check_in_dir("--output-dir", &dir.path().join("new"), &["vm1.xml"], &[&input]).unwrap();
        assert!(!dir.path().join("qemu").exists() && !dir.path().join("new").exists(), "nothing left behind");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "x");
    }
}
