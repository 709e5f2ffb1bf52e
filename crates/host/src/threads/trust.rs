//! Which QEMU process rtvirt trusts with its thread ids. Root gives the threads a QMP socket names
//! SCHED_DEADLINE, pinning and a cpuset move (`host apply/adapt --vm`, the libvirt hook), so a
//! process that only says it is QEMU (any user can run a script named `qemu-system-x86_64` with
//! `-name guest=NAME`) must not get to name another process's thread. A QEMU is trusted when:
//!
//! - it runs a QEMU system emulator: `/proc/PID/exe` resolves to a file named `qemu-system-*`
//!   (or `qemu-kvm`) that root owns and no one else may write (a symlink to python resolves to
//!   python; a user's copy of anything named so is the user's);
//! - it runs as root, or as the user that owns the QMP socket file it serves (all of its real,
//!   effective, saved and filesystem uids): QEMU run as another user (`-runas`, libvirt's
//!   `libvirt-qemu`) binds its socket as that user;
//! - the QMP socket is its own: the listening socket bound at that path is one of its open file
//!   descriptors (`/proc/PID/fd` -> `socket:[INODE]` against `/proc/PID/net/unix`);
//! - every thread id QMP answers is a thread of that process (`/proc/PID/task/TID`).
//!
//! A QEMU found by name must also be the only process that says `-name NAME` (checked by the
//! caller). Without a QMP socket its threads come from its own `/proc/PID/task`, and only the first
//! rule applies.

use rtvirt_os::procfs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Whether process `pid` may be trusted with the thread ids `tids` its QMP `socket` answered;
/// why not.
pub(super) fn verify(pid: u32, socket: &Path, tids: &[u32]) -> Result<(), String> {
    qemu_binary(pid)?;
    let sock =
        std::fs::metadata(socket).map_err(|e| format!("cannot stat its QMP socket {}: {e}", socket.display()))?;
    let uids = procfs::uids(pid).map_err(|e| e.to_string())?;
    if uids.iter().any(|&u| u != 0) && uids.iter().any(|&u| u != sock.uid()) {
        return Err(format!(
            "process {pid} runs as uid {}, but its QMP socket {} belongs to uid {}: a QEMU is trusted when it runs as \
             root or as the owner of its QMP socket",
            uids[1],
            socket.display(),
            sock.uid()
        ));
    }
    if !serves(pid, &sock) {
        return Err(format!(
            "process {pid} does not hold the listening socket {} (another process serves it)",
            socket.display()
        ));
    }
    match tids.iter().find(|&&t| !procfs::task_dir(pid).join("task").join(t.to_string()).exists()) {
        Some(t) => Err(format!("QMP answered thread id {t}, which is not a thread of QEMU process {pid}")),
        None => Ok(()),
    }
}

/// Whether `pid` runs an installed QEMU system emulator (the module's first rule); why not.
pub(super) fn qemu_binary(pid: u32) -> Result<(), String> {
    let link = procfs::task_dir(pid).join("exe");
    let exe = std::fs::read_link(&link).map_err(|e| format!("cannot read {}: {e}", link.display()))?;
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or_default().trim_end_matches(" (deleted)");
    if !(name.starts_with("qemu-system-") || name == "qemu-kvm") {
        return Err(format!("process {pid} runs {}, not a QEMU system emulator (qemu-system-*)", exe.display()));
    }
    // The link itself leads to the running binary, even one deleted since (an upgrade).
    let meta = std::fs::metadata(&link).map_err(|e| format!("cannot stat {}: {e}", exe.display()))?;
    if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "process {pid} runs {}, which is owned by uid {} with mode {:o}: an installed QEMU is owned by root and \
             writable by no one else",
            exe.display(),
            meta.uid(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Does `pid` hold the listening unix socket bound at the file `sock` (by file identity: the
/// path as bound may be relative to its working directory)?
fn serves(pid: u32, sock: &std::fs::Metadata) -> bool {
    let held = procfs::socket_inodes(pid);
    let cwd = procfs::task_dir(pid).join("cwd");
    procfs::unix_sockets(pid)
        .iter()
        .filter(|s| s.listening && held.contains(&s.inode))
        .any(|s| std::fs::metadata(cwd.join(&s.path)).is_ok_and(|m| m.dev() == sock.dev() && m.ino() == sock.ino()))
}

/// A path from process `pid`'s command line, as this process reaches it (relative paths are
/// relative to `pid`'s working directory).
pub(super) fn from_cwd_of(pid: u32, path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::fs::read_link(procfs::task_dir(pid).join("cwd")).map(|cwd| cwd.join(&path)).unwrap_or(path)
}
