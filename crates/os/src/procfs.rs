//! Reading /proc: processes, their threads, thread names, state, CPU, start time (to recognise a
//! reused PID), cgroup membership, command lines, and the mount table (parsed here only).

use crate::error::{OsError, Result};
use std::path::{Path, PathBuf};

/// PF_KTHREAD in /proc/<tid>/stat field 9.
const PF_KTHREAD: u64 = 0x0020_0000;

/// The fields of `/proc/<tid>/stat` rtvirt uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    pub flags: u64,
    /// Clock ticks since boot when the thread started: (tid, starttime) names a thread uniquely.
    pub starttime: u64,
    /// CPU the thread last ran on.
    pub processor: u32,
}

impl TaskStat {
    pub fn is_kthread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// Read a whole small text file, naming it in the error.
pub fn read(path: impl AsRef<Path>) -> Result<String> {
    let p = path.as_ref();
    std::fs::read_to_string(p).map_err(|e| OsError::io(p, e))
}

/// Read a small text file, trimmed, or None if it cannot be read.
pub fn read_opt(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Every process id in /proc.
pub fn pids() -> Vec<u32> {
    numeric_entries(Path::new("/proc"))
}

/// Every thread id of process `pid` (empty if it is gone).
pub fn tids(pid: u32) -> Vec<u32> {
    numeric_entries(&Path::new("/proc").join(pid.to_string()).join("task"))
}

fn numeric_entries(dir: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// `/proc/<tid>` works for any thread id, not only process ids.
pub fn task_dir(tid: u32) -> PathBuf {
    Path::new("/proc").join(tid.to_string())
}

/// Parse `/proc/<tid>/stat`.
pub fn stat(tid: u32) -> Result<TaskStat> {
    let path = task_dir(tid).join("stat");
    let text = read(&path)?;
    parse_stat(&text).ok_or_else(|| OsError::io(&path, std::io::Error::other("unexpected format")))
}

fn parse_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text[open + 1..close].to_string();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state).
    let field = |n: usize| rest.get(n - 3).copied();
    Some(TaskStat {
        comm,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        flags: field(9)?.parse().ok()?,
        starttime: field(22)?.parse().ok()?,
        processor: field(39)?.parse().ok()?,
    })
}

/// The process (thread group) a thread belongs to.
pub fn tgid(tid: u32) -> Result<u32> {
    let path = task_dir(tid).join("status");
    let text = read(&path)?;
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:").and_then(|v| v.trim().parse().ok()))
        .ok_or_else(|| OsError::io(&path, std::io::Error::other("no Tgid line")))
}

/// A thread's CPU accounting: `/proc/<tid>/schedstat` (run and wait time, times scheduled in)
/// and the voluntary context switches of `/proc/<tid>/status` (each a sleep: a halt, a job end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuAccount {
    pub run_ns: u64,
    pub wait_ns: u64,
    pub timeslices: u64,
    pub voluntary_switches: u64,
}

impl CpuAccount {
    /// The change from `earlier` to `self` (saturating: a reused TID never goes negative).
    pub fn since(&self, earlier: &CpuAccount) -> CpuAccount {
        CpuAccount {
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
            timeslices: self.timeslices.saturating_sub(earlier.timeslices),
            voluntary_switches: self.voluntary_switches.saturating_sub(earlier.voluntary_switches),
        }
    }
}

/// Read a thread's [`CpuAccount`].
pub fn cpu_account(tid: u32) -> Result<CpuAccount> {
    let path = task_dir(tid).join("schedstat");
    let text = read(&path)?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let mut next = || fields.next().and_then(|f| f.ok());
    let (Some(run_ns), Some(wait_ns), Some(timeslices)) = (next(), next(), next()) else {
        return Err(OsError::io(&path, std::io::Error::other("expected three numbers")));
    };
    let status = read(task_dir(tid).join("status"))?;
    let voluntary_switches = status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:").and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0);
    Ok(CpuAccount { run_ns, wait_ns, timeslices, voluntary_switches })
}

/// The command line of a process, split at NULs.
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(task_dir(pid).join("cmdline"))
        .map(|b| {
            b.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
        })
        .unwrap_or_default()
}

/// A process's real, effective, saved and filesystem user ids (`Uid:` of `/proc/<pid>/status`).
pub fn uids(pid: u32) -> Result<[u32; 4]> {
    let path = task_dir(pid).join("status");
    let text = read(&path)?;
    let bad = || OsError::io(&path, std::io::Error::other("no Uid line of four ids"));
    let line = text.lines().find_map(|l| l.strip_prefix("Uid:")).ok_or_else(bad)?;
    let ids: Vec<u32> = line.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    ids.try_into().map_err(|_| bad())
}

/// The inodes of the sockets process `pid` holds open (`/proc/<pid>/fd/N -> socket:[INODE]`).
pub fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(task_dir(pid).join("fd")) else { return Vec::new() };
    fds.flatten()
        .filter_map(|fd| {
            let link = std::fs::read_link(fd.path()).ok()?;
            link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// One bound unix socket of `/proc/<pid>/net/unix` (the network namespace of `pid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnixSocket {
    pub inode: u64,
    /// Listening (`__SO_ACCEPTCON` in the flags): a server's socket, not a connection.
    pub listening: bool,
    /// The path as bound (relative to the binder's working directory if relative; `@...`:
    /// abstract).
    pub path: String,
}

/// The bound unix sockets in the network namespace of process `pid`.
pub fn unix_sockets(pid: u32) -> Vec<UnixSocket> {
    parse_unix_sockets(&read_opt(task_dir(pid).join("net/unix")).unwrap_or_default())
}

/// `Num RefCount Protocol Flags Type St Inode Path` lines; unbound sockets (no path) are left out.
fn parse_unix_sockets(text: &str) -> Vec<UnixSocket> {
    const ACCEPTCON: u32 = 0x0001_0000;
    text.lines()
        .skip(1)
        .filter_map(|line| {
            // seven fields (the inode padded with spaces), then the path, which may hold spaces
            let mut rest = line.trim_start();
            let mut f = Vec::with_capacity(7);
            for _ in 0..7 {
                let (field, tail) = rest.split_once(char::is_whitespace)?;
                f.push(field);
                rest = tail.trim_start();
            }
            let path = rest.trim_end();
            Some(UnixSocket {
                inode: f[6].parse().ok()?,
                listening: u32::from_str_radix(f[3], 16).ok()? & ACCEPTCON != 0,
                path: (!path.is_empty()).then(|| path.to_string())?,
            })
        })
        .collect()
}

/// The unified (v2) cgroup path of a thread, or the first non-root v1 path when it has none.
pub fn cgroup(tid: u32) -> String {
    let paths = cgroup_paths(tid);
    paths.first().cloned().unwrap_or_else(|| "/".into())
}

/// Every distinct non-root cgroup path of a thread: the v2 path first, then the v1 ones.
pub fn cgroup_paths(tid: u32) -> Vec<String> {
    let text = read_opt(task_dir(tid).join("cgroup")).unwrap_or_default();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by_key(|l| !l.starts_with("0::"));
    let mut out: Vec<String> = Vec::new();
    for p in lines.iter().filter_map(|l| l.splitn(3, ':').nth(2)) {
        if p != "/" && !out.iter().any(|o| o == p) {
            out.push(p.to_string());
        }
    }
    out
}

/// The v1 cgroup path of `controller` ("cpuset", ...) for a thread.
pub fn cgroup_v1(tid: u32, controller: &str) -> Option<String> {
    let text = read_opt(task_dir(tid).join("cgroup"))?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrls.split(',').any(|c| c == controller).then(|| path.to_string())
    })
}

/// One line of `/proc/mounts`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub source: String,
    pub path: PathBuf,
    pub fstype: String,
    pub options: Vec<String>,
}

impl Mount {
    pub fn has_option(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }
}

/// The mount table of this process's mount namespace (empty if /proc is not readable).
pub fn mounts() -> Vec<Mount> {
    parse_mounts(&std::fs::read_to_string("/proc/mounts").unwrap_or_default())
}

fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(Mount {
                source: unescape(f.first()?),
                path: PathBuf::from(unescape(f.get(1)?)),
                fstype: f.get(2)?.to_string(),
                options: f.get(3)?.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// The kernel writes space, tab, newline and backslash in mount fields as octal escapes (`\040`).
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 4).and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn cpu_account_of_this_thread_grows_with_work() {
        let tid = unsafe { libc::gettid() } as u32;
        let a = cpu_account(tid).unwrap();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::black_box(0u64);
        }
        let d = cpu_account(tid).unwrap().since(&a);
        assert!(d.run_ns > 0, "{d:?}");
        assert!(cpu_account(u32::MAX).is_err());
    }

    use super::*;

    #[test]
    fn parses_unix_sockets_and_this_process_ids() {
        let text = "Num       RefCount Protocol Flags    Type St Inode Path\n\
                    0000000000000000: 00000002 00000000 00010000 0001 01 4242 /run/q m.sock\n\
                    0000000000000000: 00000003 00000000 00000000 0001 03 4243 /run/q m.sock\n\
                    0000000000000000: 00000002 00000000 00000000 0002 01    17\n\
                    0000000000000000: 00000002 00000000 00010000 0001 01    18 @abstract\n";
        let v = parse_unix_sockets(text);
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(v[2], UnixSocket { inode: 18, listening: true, path: "@abstract".into() });
        assert_eq!(v[0], UnixSocket { inode: 4242, listening: true, path: "/run/q m.sock".into() });
        assert!(!v[1].listening);
        let me = std::process::id();
        let euid = unsafe { libc::geteuid() };
        assert_eq!(uids(me).unwrap()[1], euid);
        let dir = tempfile::tempdir().unwrap();
        let l = std::os::unix::net::UnixListener::bind(dir.path().join("s")).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&l);
        let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(format!("/proc/self/fd/{fd}")).unwrap());
        assert!(socket_inodes(me).contains(&ino));
        assert!(unix_sockets(me).iter().any(|s| s.inode == ino && s.listening));
    }

    #[test]
    fn parses_stat_with_odd_comm() {
        let line =
            "42 (a) b (c)) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0 18446744073709551615 0 0 0 0 0 0 0 \
             0 0 0 0 0 17 1 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "a) b (c)");
        assert_eq!((s.state, s.ppid, s.starttime, s.processor), ('S', 1, 777, 1));
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let s = stat(me).unwrap();
        assert!(!s.is_kthread());
        assert_eq!(tgid(me).unwrap(), me);
        assert!(tids(me).contains(&me));
        assert!(!cmdline(me).is_empty());
        assert!(pids().contains(&me));
    }

    #[test]
    fn parses_mounts_with_escaped_paths() {
        let text =
            "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,cpuset 0 0\nnone /mnt/a\\040b tmpfs rw 0 0\nshort line\n";
        let m = parse_mounts(text);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].fstype.as_str(), m[0].has_option("cpuset")), ("cgroup", true));
        assert_eq!(m[1].path, PathBuf::from("/mnt/a b"));
        assert!(mounts().iter().any(|m| m.fstype == "proc"));
    }
}
