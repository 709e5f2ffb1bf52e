//! Discover and label the threads of the real-time data path: QEMU vCPU threads (QMP
//! `query-cpus-fast`, fallback thread names "CPU n/KVM"), iothreads, vhost workers (kernel threads
//! `vhost-<pid>` before Linux 6.4, threads of the QEMU process after), IRQ threads `irq/<n>-<name>`,
//! NAPI threads `napi/<dev>-<id>`, ksoftirqd/ktimers/rcuc, and container processes (by cgroup).
//! A QEMU's thread ids are taken only from a QEMU rtvirt trusts ([`trust`]).

mod trust;

use crate::error::{HostError, Result};
use rtvirt_os::cpulist::CpuList;
use rtvirt_os::procfs;
use rtvirt_os::qmp::Qmp;
use rtvirt_os::sched::{self, SchedAttr};
use rtvirt_os::OsError;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What a thread is, as far as the RT data path is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Role {
    Vcpu {
        index: u32,
    },
    Iothread {
        id: String,
    },
    /// A vhost worker serving QEMU process `owner`.
    Vhost {
        owner: u32,
    },
    Irq {
        irq: u32,
        name: String,
    },
    Napi {
        dev: String,
        id: u32,
    },
    Ksoftirqd {
        cpu: u32,
    },
    Ktimers {
        cpu: u32,
    },
    Rcuc {
        cpu: u32,
    },
    /// Any other thread of a QEMU process (main loop, RCU, workers).
    Emulator,
    Container {
        cgroup: String,
    },
    Other,
}

impl Role {
    /// Short name for tables and profiles: "vcpu", "vhost", "irq"...
    pub fn name(&self) -> &'static str {
        match self {
            Role::Vcpu { .. } => "vcpu",
            Role::Iothread { .. } => "iothread",
            Role::Vhost { .. } => "vhost",
            Role::Irq { .. } => "irq",
            Role::Napi { .. } => "napi",
            Role::Ksoftirqd { .. } => "ksoftirqd",
            Role::Ktimers { .. } => "ktimers",
            Role::Rcuc { .. } => "rcuc",
            Role::Emulator => "emulator",
            Role::Container { .. } => "container",
            Role::Other => "other",
        }
    }
    /// Per-CPU kernel threads a busy real-time thread can starve.
    pub fn is_percpu_kthread(&self) -> bool {
        matches!(self, Role::Ksoftirqd { .. } | Role::Ktimers { .. } | Role::Rcuc { .. })
    }
}

/// One labelled thread with its current scheduling state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadInfo {
    pub tid: u32,
    pub pid: u32,
    pub comm: String,
    pub role: Role,
    /// Guest name (QEMU -name) for threads of a QEMU process.
    pub guest: Option<String>,
    pub sched: SchedAttr,
    pub policy: &'static str,
    pub affinity: CpuList,
    /// CPU the thread last ran on.
    pub cpu: u32,
    pub cgroup: String,
    /// Start time in clock ticks since boot: (tid, starttime) identifies the thread.
    pub starttime: u64,
    pub kthread: bool,
    /// The thread's state letter from /proc (R runnable, S sleeping, D, T, ...).
    pub state: char,
}

pub const THREADS_SCHEMA: &str = "rtvirt.threads/v1";

/// `rtvirt host threads --format json`: the discovered threads.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadList {
    pub schema: &'static str,
    pub threads: Vec<ThreadInfo>,
}

/// Which threads to discover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The RT data path of the whole host: kernel threads, every QEMU, containers.
    System,
    /// The QEMU behind this QMP socket.
    Qmp(PathBuf),
    /// A process (all its threads) or a single thread.
    Pid(u32),
    /// The QEMU process started with `-name NAME`.
    Vm(String),
}

/// Discover and label the threads of `target`.
pub fn discover(target: &Target) -> Result<Vec<ThreadInfo>> {
    match target {
        Target::System => Ok(system()),
        Target::Qmp(socket) => qemu_via_qmp(socket, rtvirt_os::qmp::TIMEOUT, None),
        Target::Pid(pid) => by_pid(*pid),
        Target::Vm(name) => by_vm_name(name),
    }
}

/// Read one thread's state and attach `role`; None if it exited meanwhile.
pub fn read_thread(tid: u32, role: Role, guest: Option<String>) -> Option<ThreadInfo> {
    let st = procfs::stat(tid).ok()?;
    let sched = sched::get(tid).ok()?;
    Some(ThreadInfo {
        tid,
        pid: procfs::tgid(tid).ok()?,
        comm: st.comm.clone(),
        policy: sched::policy_name(sched.policy),
        role,
        guest,
        sched,
        affinity: sched::get_affinity(tid).ok()?,
        cpu: st.processor,
        cgroup: procfs::cgroup(tid),
        starttime: st.starttime,
        kthread: st.is_kthread(),
        state: st.state,
    })
}

/// Label a thread from its name alone (kernel threads, and QEMU threads named by
/// `-name ...,debug-threads=on`).
pub fn role_from_comm(comm: &str, kthread: bool) -> Option<Role> {
    let num_after = |prefix: &str| comm.strip_prefix(prefix).and_then(|r| r.parse::<u32>().ok());
    if let Some(rest) = comm.strip_prefix("CPU ") {
        let (n, accel) = rest.split_once('/')?;
        if matches!(accel, "KVM" | "TCG" | "HVF" | "WHPX") {
            return Some(Role::Vcpu { index: n.parse().ok()? });
        }
    }
    if let Some(id) = comm.strip_prefix("IO ") {
        return Some(Role::Iothread { id: id.to_string() });
    }
    if let Some(owner) = num_after("vhost-") {
        return Some(Role::Vhost { owner });
    }
    if !kthread {
        return None;
    }
    if let Some(rest) = comm.strip_prefix("irq/") {
        let (n, name) = rest.split_once('-').unwrap_or((rest, ""));
        return Some(Role::Irq { irq: n.parse().ok()?, name: name.to_string() });
    }
    if let Some(rest) = comm.strip_prefix("napi/") {
        let (dev, id) = rest.rsplit_once('-')?;
        return Some(Role::Napi { dev: dev.to_string(), id: id.parse().ok()? });
    }
    if let Some(cpu) = num_after("ksoftirqd/") {
        return Some(Role::Ksoftirqd { cpu });
    }
    if let Some(cpu) = num_after("ktimers/") {
        return Some(Role::Ktimers { cpu });
    }
    num_after("rcuc/").map(|cpu| Role::Rcuc { cpu })
}

/// Is this process a QEMU system emulator?
pub fn is_qemu(pid: u32) -> bool {
    procfs::cmdline(pid)
        .first()
        .and_then(|a| Path::new(a).file_name()?.to_str().map(str::to_string))
        .is_some_and(|b| b.starts_with("qemu-system") || b == "qemu-kvm")
}

/// The guest name from QEMU's `-name guest=NAME,...` or `-name NAME,...`.
pub fn qemu_guest_name(cmdline: &[String]) -> Option<String> {
    let v = option_value(cmdline, "-name")?;
    let first = v.split(',').next()?;
    Some(first.strip_prefix("guest=").unwrap_or(first).to_string())
}

/// The QMP unix socket of a QEMU command line: `-qmp unix:PATH[,...]`, or a `-chardev socket`
/// used by `-mon chardev=ID,mode=control`.
pub fn qemu_qmp_socket(cmdline: &[String]) -> Option<PathBuf> {
    if let Some(v) = option_value(cmdline, "-qmp") {
        if let Some(p) = v.strip_prefix("unix:") {
            return Some(PathBuf::from(p.split(',').next()?));
        }
    }
    let mon = option_values(cmdline, "-mon").into_iter().find(|m| m.contains("mode=control"))?;
    let id = mon.split(',').find_map(|kv| kv.strip_prefix("chardev="))?;
    option_values(cmdline, "-chardev").into_iter().find_map(|c| {
        let kv: Vec<&str> = c.split(',').collect();
        (kv.first() == Some(&"socket") && kv.contains(&format!("id={id}").as_str()))
            .then(|| kv.iter().find_map(|x| x.strip_prefix("path=")).map(PathBuf::from))?
    })
}

fn option_values<'a>(cmdline: &'a [String], opt: &str) -> Vec<&'a str> {
    cmdline.windows(2).filter(|w| w[0] == opt || w[0] == format!("-{opt}")).map(|w| w[1].as_str()).collect()
}

fn option_value<'a>(cmdline: &'a [String], opt: &str) -> Option<&'a str> {
    option_values(cmdline, opt).into_iter().next()
}

/// Every thread of a QEMU process, labelled from its name (the /proc fallback when there is no QMP).
fn qemu_threads_by_name(pid: u32, guest: Option<String>) -> Vec<ThreadInfo> {
    procfs::tids(pid)
        .into_iter()
        .filter_map(|tid| {
            let comm = procfs::stat(tid).ok()?.comm;
            read_thread(tid, role_from_comm(&comm, false).unwrap_or(Role::Emulator), guest.clone())
        })
        .collect()
}

/// The QEMU behind a QMP socket: vCPUs and iothreads from QMP, the rest of its threads and its
/// vhost workers (in-process since 6.4, kernel threads `vhost-<pid>` before) from /proc. The
/// QEMU is process `expected` if known (found by name or PID), else the one of its first vCPU;
/// either way it must be trusted with the thread ids it answered ([`trust`]).
fn qemu_via_qmp(socket: &Path, timeout: std::time::Duration, expected: Option<u32>) -> Result<Vec<ThreadInfo>> {
    let (vcpus, iothreads, name) = {
        let mut q = Qmp::connect_with_timeout(socket, timeout)?;
        let vcpus = q.vcpus()?;
        let iothreads = q.iothreads().unwrap_or_default();
        (vcpus, iothreads, q.name().unwrap_or(None))
    };
    let qmp_error = |message: String| HostError::Os(OsError::Qmp { socket: socket.into(), message });
    let first = vcpus.first().ok_or_else(|| qmp_error("the VM has no vCPUs".into()))?;
    let pid = match expected {
        Some(pid) => pid,
        None => procfs::tgid(first.thread_id)?,
    };
    let tids: Vec<u32> = vcpus.iter().map(|v| v.thread_id).chain(iothreads.iter().map(|i| i.thread_id)).collect();
    trust::verify(pid, socket, &tids).map_err(|why| qmp_error(format!("not trusted, nothing done: {why}")))?;
    let guest = name.or_else(|| qemu_guest_name(&procfs::cmdline(pid)));
    let mut out = Vec::new();
    for tid in procfs::tids(pid) {
        let role = if let Some(v) = vcpus.iter().find(|v| v.thread_id == tid) {
            Role::Vcpu { index: v.index }
        } else if let Some(io) = iothreads.iter().find(|i| i.thread_id == tid) {
            Role::Iothread { id: io.id.clone() }
        } else {
            let comm = procfs::stat(tid).map(|s| s.comm).unwrap_or_default();
            role_from_comm(&comm, false).unwrap_or(Role::Emulator)
        };
        out.extend(read_thread(tid, role, guest.clone()));
    }
    out.extend(kernel_vhost_workers(pid, guest));
    Ok(out)
}

/// Kernel threads `vhost-<pid>` serving QEMU process `pid` (Linux before 6.4).
fn kernel_vhost_workers(pid: u32, guest: Option<String>) -> Vec<ThreadInfo> {
    let name = format!("vhost-{pid}");
    procfs::pids()
        .into_iter()
        .filter(|&p| procfs::stat(p).is_ok_and(|s| s.is_kthread() && s.comm == name))
        .filter_map(|p| read_thread(p, Role::Vhost { owner: pid }, guest.clone()))
        .collect()
}

fn by_pid(pid: u32) -> Result<Vec<ThreadInfo>> {
    let st =
        procfs::stat(pid).map_err(|_| HostError::input(format!("process/thread {pid} does not exist (stale PID?)")))?;
    let tgid = procfs::tgid(pid)?;
    if tgid != pid {
        let role = role_from_comm(&st.comm, st.is_kthread()).unwrap_or(Role::Other);
        return Ok(read_thread(pid, role, None).into_iter().collect());
    }
    if is_qemu(pid) {
        return Ok(qemu_process(pid, &procfs::cmdline(pid), DISCOVERY_QMP_TIMEOUT));
    }
    Ok(procfs::tids(pid)
        .into_iter()
        .filter_map(|tid| {
            let s = procfs::stat(tid).ok()?;
            read_thread(tid, role_from_comm(&s.comm, s.is_kthread()).unwrap_or(Role::Other), None)
        })
        .collect())
}

/// The QEMU started with `-name NAME`: via its QMP socket if it has one, else by thread names.
/// It must be the only process that says `-name NAME`, and a trusted QEMU ([`trust`]).
fn by_vm_name(name: &str) -> Result<Vec<ThreadInfo>> {
    let found: Vec<u32> = procfs::pids()
        .into_iter()
        .filter(|&p| is_qemu(p) && qemu_guest_name(&procfs::cmdline(p)).as_deref() == Some(name))
        .collect();
    let pid = match found[..] {
        [] => return Err(HostError::input(format!("no running QEMU process with -name {name} (is the VM running?)"))),
        [pid] => pid,
        _ => {
            let pids: Vec<String> = found.iter().map(u32::to_string).collect();
            return Err(HostError::input(format!(
                "{} processes say -name {name} (PIDs {}): refusing to choose one (stop the one that is not the VM, \
                 or give its QMP socket: --vm {name}=SOCKET)",
                found.len(),
                pids.join(", ")
            )));
        }
    };
    trust::qemu_binary(pid)
        .map_err(|why| HostError::input(format!("-name {name}: not trusted, nothing done: {why}")))?;
    let cmd = procfs::cmdline(pid);
    match qemu_qmp_socket(&cmd) {
        Some(sock) => qemu_via_qmp(&trust::from_cwd_of(pid, sock), rtvirt_os::qmp::TIMEOUT, Some(pid)),
        None => Ok(qemu_process(pid, &cmd, DISCOVERY_QMP_TIMEOUT)),
    }
}

/// How long a scan waits for a QEMU's QMP socket before labelling its threads by name instead
/// (QEMU serves one QMP client at a time: a busy socket must not stall the scan).
const DISCOVERY_QMP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// A QEMU process found by PID or by a scan: labelled through the `-qmp`/`-mon` socket of its
/// command line when it answers and is trusted with the thread ids it gives ([`trust`]), else by
/// thread names (with its kernel vhost workers).
fn qemu_process(pid: u32, cmd: &[String], timeout: std::time::Duration) -> Vec<ThreadInfo> {
    if let Some(v) =
        qemu_qmp_socket(cmd).and_then(|sock| qemu_via_qmp(&trust::from_cwd_of(pid, sock), timeout, Some(pid)).ok())
    {
        return v;
    }
    let guest = qemu_guest_name(cmd);
    let mut v = qemu_threads_by_name(pid, guest.clone());
    v.extend(kernel_vhost_workers(pid, guest));
    v
}

/// Container runtimes' cgroup path markers.
/// (`rtvirt-ct-` is the cgroup of rtvirt's own measurement containers.)
pub const CONTAINER_MARKERS: &[&str] =
    &["docker", "containerd", "libpod", "lxc", "kubepods", "machine.slice", "crio", "rtvirt-ct-"];

/// The container cgroup a thread belongs to, if any of its cgroup paths names a container.
pub fn container_cgroup(tid: u32) -> Option<String> {
    procfs::cgroup_paths(tid).into_iter().find(|p| CONTAINER_MARKERS.iter().any(|m| p.contains(m)))
}

/// The RT data path of the whole host: labelled kernel threads, every QEMU (through its QMP
/// socket when its command line names one), every thread of container processes.
fn system() -> Vec<ThreadInfo> {
    let mut out = Vec::new();
    for pid in procfs::pids() {
        let Ok(st) = procfs::stat(pid) else { continue };
        if st.is_kthread() {
            out.extend(labelled_kthread(pid, &st));
        } else if is_qemu(pid) {
            out.extend(qemu_process(pid, &procfs::cmdline(pid), DISCOVERY_QMP_TIMEOUT));
        } else if let Some(cgroup) = container_cgroup(pid) {
            out.extend(
                procfs::tids(pid)
                    .into_iter()
                    .filter_map(|tid| read_thread(tid, Role::Container { cgroup: cgroup.clone() }, None)),
            );
        }
    }
    out
}

/// The labelled kernel threads only (IRQ, NAPI, vhost, ksoftirqd, ktimers, rcuc): what profiles'
/// irq/napi/per-CPU roles select. Never talks to a QEMU.
pub fn kernel_threads() -> Vec<ThreadInfo> {
    procfs::pids()
        .into_iter()
        .filter_map(|pid| {
            let st = procfs::stat(pid).ok().filter(|st| st.is_kthread())?;
            labelled_kthread(pid, &st)
        })
        .collect()
}

/// Kernel thread `pid` (`st` its stat), if its name gives it a role (IRQ, NAPI, vhost, ...).
fn labelled_kthread(pid: u32, st: &procfs::TaskStat) -> Option<ThreadInfo> {
    read_thread(pid, role_from_comm(&st.comm, true)?, None)
}

/// Every thread on the host with its scheduling state (for the lint), labelled where possible.
pub fn all_threads() -> Vec<ThreadInfo> {
    let mut out = Vec::new();
    for pid in procfs::pids() {
        for tid in procfs::tids(pid) {
            let Ok(st) = procfs::stat(tid) else { continue };
            let role = role_from_comm(&st.comm, st.is_kthread()).unwrap_or(Role::Other);
            out.extend(read_thread(tid, role, None));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_from_names() {
        assert_eq!(role_from_comm("CPU 1/KVM", false), Some(Role::Vcpu { index: 1 }));
        assert_eq!(role_from_comm("CPU 0/TCG", false), Some(Role::Vcpu { index: 0 }));
        assert_eq!(role_from_comm("IO iothread0", false), Some(Role::Iothread { id: "iothread0".into() }));
        assert_eq!(role_from_comm("vhost-1234", true), Some(Role::Vhost { owner: 1234 }));
        assert_eq!(
            role_from_comm("irq/36-virtio1-req.0", true),
            Some(Role::Irq { irq: 36, name: "virtio1-req.0".into() })
        );
        assert_eq!(role_from_comm("napi/veth-rt0-258", true), Some(Role::Napi { dev: "veth-rt0".into(), id: 258 }));
        assert_eq!(role_from_comm("ksoftirqd/1", true), Some(Role::Ksoftirqd { cpu: 1 }));
        assert_eq!(role_from_comm("irq/36-x", false), None, "a user thread named irq/ is not an IRQ thread");
        assert_eq!(role_from_comm("bash", false), None);
    }

    #[test]
    fn reads_qemu_command_lines() {
        let c: Vec<String> = [
            "qemu-system-x86_64",
            "-name",
            "guest=rt0,debug-threads=on",
            "-qmp",
            "unix:/tmp/q.sock,server=on,wait=off",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(qemu_guest_name(&c).as_deref(), Some("rt0"));
        assert_eq!(qemu_qmp_socket(&c), Some(PathBuf::from("/tmp/q.sock")));
        let c: Vec<String> = [
            "qemu",
            "-chardev",
            "socket,id=mon0,path=/run/m.sock,server=on,wait=off",
            "-mon",
            "chardev=mon0,mode=control",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(qemu_qmp_socket(&c), Some(PathBuf::from("/run/m.sock")));
    }

    #[test]
    fn discovers_kernel_threads_of_this_host() {
        let v = discover(&Target::System).unwrap();
        let ksoftirqd = v.iter().filter(|t| matches!(t.role, Role::Ksoftirqd { .. })).count();
        let ncpu = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .map(|s| CpuList::parse(&s).unwrap().len())
            .unwrap();
        assert_eq!(ksoftirqd, ncpu, "one ksoftirqd per online CPU");
    }
}
