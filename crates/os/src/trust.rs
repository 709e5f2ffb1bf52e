//! Whether a state directory (or a file in it) may have been written by someone other than root
//! or this process's user: rtvirt reads journals and cached calibrations only from directories
//! nobody else can write, since what they hold is acted on (restored, planned with).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Root and this process's user. (Not the user who ran `sudo`: a sudoer allowed only rtvirt must
/// not get root's writes through a file of theirs.)
pub fn trusted_users() -> Vec<u32> {
    // SAFETY: geteuid cannot fail.
    let mut users = vec![0, unsafe { libc::geteuid() }];
    users.dedup();
    users
}

/// Why a file or directory with metadata `m` may have been written by someone other than
/// `users` (`sticky_ok`: a sticky directory may be writable by others); None: it may not.
pub fn untrusted(m: &std::fs::Metadata, users: &[u32], sticky_ok: bool) -> Option<String> {
    if !users.contains(&m.uid()) {
        return Some(format!("is owned by uid {}", m.uid()));
    }
    let sticky = m.is_dir() && m.mode() & 0o1000 != 0;
    (m.mode() & 0o022 != 0 && !(sticky_ok && sticky))
        .then(|| format!("is writable by group or others (mode {:o})", m.mode() & 0o7777))
}

/// The first of `dir` and the directories above it (symlinks resolved) that is not trusted, with
/// why: each must be owned by root or this user and not writable by group or others (sticky
/// directories above `dir`, like /tmp, excepted). Ok(None): all are trusted.
pub fn untrusted_dir(dir: &Path) -> std::io::Result<Option<(PathBuf, String)>> {
    let users = trusted_users();
    let real = dir.canonicalize()?;
    for (i, d) in real.ancestors().enumerate() {
        if let Some(why) = untrusted(&std::fs::metadata(d)?, &users, i > 0) {
            return Ok(Some((d.to_path_buf(), why)));
        }
    }
    Ok(None)
}

/// Why the entry `path` (a file or directory inside a trusted directory) is not trusted: a
/// symlink, or not [`untrusted`]'s owner and mode. Ok(None) also when it does not exist.
pub fn untrusted_entry(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Ok(Some("is a symlink".into())),
        Ok(m) => Ok(untrusted(&m, &trusted_users(), false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn group_writable_directories_and_symlinks_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(untrusted_dir(dir.path()).unwrap(), None);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o770)).unwrap();
        let (which, why) = untrusted_dir(&sub).unwrap().unwrap();
        assert_eq!(which, dir.path().canonicalize().unwrap());
        assert!(why.contains("writable by group or others (mode 770)"), "{why}");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&sub, &link).unwrap();
        assert_eq!(untrusted_entry(&link).unwrap().as_deref(), Some("is a symlink"));
        assert_eq!(untrusted_entry(&dir.path().join("absent")).unwrap(), None);
        assert_eq!(untrusted_entry(&sub).unwrap(), None);
    }
}
