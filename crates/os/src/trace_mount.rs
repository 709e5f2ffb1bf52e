//! Mounting tracefs and creating or removing one tracing instance: the steps that
//! [`crate::restore::Change::TraceInstance`] does and undoes, apart from [`crate::tracefs`] (which
//! journals the change through `restore`), so that no two modules import each other.

use crate::error::{OsError, Result};
use crate::procfs;
use std::path::{Path, PathBuf};

/// Where rtvirt mounts tracefs when it is not mounted.
pub const MOUNT_POINT: &str = "/sys/kernel/tracing";

/// Where tracefs is mounted in this mount namespace and can be reached, if it is: a mount listed
/// in `/proc/self/mounts` may be hidden under a later one on a parent path (a tmpfs over
/// `/sys/kernel`, say), so the path itself must be tracefs (statfs(2)'s magic number).
pub fn mounted_at() -> Option<PathBuf> {
    procfs::mounts().into_iter().filter(|m| m.fstype == "tracefs").map(|m| m.path).find(|p| is_tracefs(p))
}

fn is_tracefs(path: &Path) -> bool {
    nix::sys::statfs::statfs(path).is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TRACEFS_MAGIC)
}

/// Set while tracefs is mounted by rtvirt (volatile, like the mount): whichever rtvirt instance
/// goes last unmounts it, also when the process that mounted it finished before another one's
/// instance (two runs at once, or two instances of one run removed in either order).
const MOUNTED_BY_RTVIRT: &str = "/run/rtvirt/tracefs-mounted";

/// Mount tracefs if asked, then create the instance directory (the kernel fills it).
pub(crate) fn create_instance(path: &Path, mount_point: Option<&Path>) -> Result<()> {
    if let Some(m) = mount_point {
        if mounted_at().is_none() {
            mount_tracefs(m)?;
            let marker = Path::new(MOUNTED_BY_RTVIRT);
            let _ = std::fs::create_dir_all(marker.parent().unwrap_or(Path::new("/")));
            let _ = std::fs::write(marker, m.as_os_str().as_encoded_bytes());
        }
    }
    if path.is_dir() {
        return Ok(());
    }
    std::fs::create_dir(path).map_err(|e| OsError::io(path, e))
}

/// Remove the instance (retrying while a reader closes), then unmount what rtvirt mounted.
pub(crate) fn remove_instance(path: &Path, mount_point: Option<&Path>) -> Result<()> {
    let mut removed = !path.exists();
    for _ in 0..100 {
        if removed {
            break;
        }
        let _ = std::fs::write(path.join("tracing_on"), "0");
        removed = std::fs::remove_dir(path).is_ok() || !path.exists();
        if !removed {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    if !removed {
        std::fs::remove_dir(path).map_err(|e| OsError::io(path, e))?;
    }
    let ours = mount_point.map(Path::to_path_buf).or_else(|| {
        let marked = std::fs::read(MOUNTED_BY_RTVIRT).ok()?;
        Some(PathBuf::from(std::ffi::OsStr::new(std::str::from_utf8(&marked).ok()?)))
    });
    match ours {
        Some(m) if mounted_at().as_deref() == Some(m.as_path()) && !has_other_instances(&m) => {
            let _ = std::fs::remove_file(MOUNTED_BY_RTVIRT);
            unmount(&m)
        }
        _ => Ok(()),
    }
}

/// Whether instances other than ours live under the mount (then it is not ours to unmount).
fn has_other_instances(mount_point: &Path) -> bool {
    std::fs::read_dir(mount_point.join("instances")).map(|d| d.flatten().next().is_some()).unwrap_or(false)
}

fn mount_tracefs(at: &Path) -> Result<()> {
    let target = c_path(at)?;
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the call.
    let rc = unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(unsupported(at, &format!("cannot mount tracefs: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

fn unmount(at: &Path) -> Result<()> {
    let target = c_path(at)?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::umount(target.as_ptr()) } != 0 {
        return Err(unsupported(at, &format!("cannot unmount tracefs: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

fn c_path(p: &Path) -> Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| unsupported(p, "path holds a NUL byte"))
}

pub(crate) fn unsupported(path: &Path, what: &str) -> OsError {
    OsError::Unsupported(format!("{}: {what}", path.display()))
}
