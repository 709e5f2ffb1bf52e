//! The guest side: the `/init` script of the initramfs (busybox sh) and how a job reaches it.
//!
//! Protocol: the host puts the job (a shell script) base64-encoded on the kernel command line as
//! `rtvirt.job=...`, with a per-run nonce `rtvirt.nonce=...` and optionally the guest address
//! `rtvirt.ip=A.B.C.D/NN` with the host's address `rtvirt.host=A.B.C.D` (exported to the job as
//! `$RTVIRT_HOST`). Input files of the job (a scenario, a plan) travel as QEMU `fw_cfg` entries
//! `opt/rtvirt/<name>` ([`FW_CFG_PREFIX`]) and are copied to `/tmp/files/<name>` (the job runs in
//! `/tmp`, so it names them `files/<name>`). `/init` mounts the pseudo file systems and a cgroup v1
//! `cpuset` hierarchy (`/sys/fs/cgroup/cpuset`: exclusive per-CPU cpusets for SCHED_DEADLINE),
//! loads the modules listed in `/etc/rtvirt/modules`, configures `eth0` if asked, then runs the job
//! with its stdout on the second serial port (`/dev/ttyS1`, raw) between `RTVIRT-BEGIN <nonce>` and
//! `RTVIRT-END <nonce> rc=<exit status>` lines, and powers off. The kernel and `/init` log to the
//! first serial port (the console). Both ports are built into the Debian kernels (no modules).
//!
//! `noirqdebug` is on the command line: in the rt kernel the UART's interrupt handler runs in a
//! thread (`irq/3-ttyS1`, SCHED_FIFO 50), which a measurement at a higher priority on the only
//! vCPU starves for seconds under TCG. The kernel's spurious-interrupt detector counts every
//! interrupt that arrives while the thread has not run as unhandled ("irq 3: nobody cared"),
//! disables IRQ 3 after 99,900 of 100,000, and from then on nothing written to `/dev/ttyS1`
//! leaves the guest: the job hung until its bound (2 of 4 README matrix runs). Without the
//! detector the interrupts wait for the thread, which sends the output once the measurement ends.

use crate::error::{Result, VmError};
use base64::Engine;

/// The kernel limits its command line to 2048 bytes on x86-64.
pub const CMDLINE_MAX: usize = 2048;

/// Where job files live in QEMU's fw_cfg (the guest sees them under
/// `/sys/firmware/qemu_fw_cfg/by_name/opt/rtvirt/<name>/raw`).
pub const FW_CFG_PREFIX: &str = "opt/rtvirt/";

/// The directory (relative to the job's working directory) where the guest puts job files.
pub const FILES_DIR: &str = "files";

/// The rtvirt guest `/init`.
pub const INIT_SCRIPT: &str = r#"#!/bin/busybox sh
# rtvirt guest init: see crates/vm/src/init.rs for the protocol.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
# cgroup v1 cpuset hierarchy: measure tasks / timer --policy deadline put each CPU in its own
# exclusive cpuset (SCHED_DEADLINE admission needs one root domain per pinned CPU)
mount -t tmpfs cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/cpuset && mount -t cgroup -o cpuset cpuset /sys/fs/cgroup/cpuset || echo "rtvirt-init: cannot mount the cpuset cgroup"
for m in $(cat /etc/rtvirt/modules); do insmod "/lib/modules/$m" || echo "rtvirt-init: insmod $m failed"; done
nonce=none; job=; ipaddr=
for w in $(cat /proc/cmdline); do
  case "$w" in
    rtvirt.nonce=*) nonce="${w#*=}";;
    rtvirt.job=*) job="${w#*=}";;
    rtvirt.ip=*) ipaddr="${w#*=}";;
    rtvirt.host=*) export RTVIRT_HOST="${w#*=}";;
  esac
done
ip link set lo up
if [ -n "$ipaddr" ]; then
  ip link set eth0 up && ip addr add "$ipaddr" dev eth0 || echo "rtvirt-init: cannot configure eth0 with $ipaddr"
fi
mkdir -p /tmp/files
fw=/sys/firmware/qemu_fw_cfg/by_name/opt/rtvirt
# each entry is a symlink (to by_key/N) holding `raw`; the directories above it are plain
[ -d $fw ] && for f in $(find $fw -type l); do
  rel="${f#$fw/}"
  mkdir -p "/tmp/files/$(dirname "$rel")" && cat "$f/raw" > "/tmp/files/$rel" || echo "rtvirt-init: cannot copy job file $rel"
done
echo "$job" | base64 -d > /tmp/job.sh
stty -F /dev/ttyS1 raw -echo
echo "rtvirt-init: running job $nonce"
echo "RTVIRT-BEGIN $nonce" > /dev/ttyS1
cd /tmp && sh /tmp/job.sh > /dev/ttyS1 2> /dev/console
rc=$?
echo "RTVIRT-END $nonce rc=$rc" > /dev/ttyS1
echo "rtvirt-init: job done rc=$rc"
poweroff -f
"#;

/// The kernel command line that runs `job` with `nonce` (and the guest address, if any).
/// `net` is (guest address/prefix, host address).
pub fn kernel_cmdline(job: &str, nonce: &str, net: Option<(&str, &str)>) -> Result<String> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(job.as_bytes());
    // no_timer_check: the kernel's boot-time check that the PIT interrupt reaches the IO-APIC
    // panics ("IO-APIC + timer doesn't work") when an emulated (TCG) vCPU is too slow for it.
    let mut line =
        format!("console=ttyS0 loglevel=4 panic=-1 tsc=reliable noirqdebug no_timer_check rtvirt.nonce={nonce}");
    if let Some((ip, host)) = net {
        line.push_str(&format!(" rtvirt.ip={ip} rtvirt.host={host}"));
    }
    line.push_str(&format!(" rtvirt.job={encoded}"));
    if line.len() >= CMDLINE_MAX {
        return Err(VmError::Invalid(format!(
            "guest job too long for the kernel command line ({} bytes encoded, limit {CMDLINE_MAX})",
            line.len()
        )));
    }
    Ok(line)
}

/// Quote one word for the guest's `sh`.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A command line (program + arguments) as one guest shell line.
pub fn shell_line<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter().map(|a| shell_quote(a.as_ref())).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_travels_base64_encoded_and_long_jobs_are_refused() {
        let line = kernel_cmdline("echo hi", "n1", Some(("10.0.0.2/24", "10.0.0.1"))).unwrap();
        assert!(
            line.contains("rtvirt.nonce=n1 rtvirt.ip=10.0.0.2/24 rtvirt.host=10.0.0.1 rtvirt.job=ZWNobyBoaQ=="),
            "{line}"
        );
        // The serial IRQ of the job's output must never be disabled by the spurious-IRQ detector.
        assert!(line.split(' ').any(|w| w == "noirqdebug"), "{line}");
        let e = kernel_cmdline(&"x".repeat(2000), "n1", None).unwrap_err().to_string();
        assert!(e.contains("too long"), "{e}");
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_line(&["rtvirt", "measure", "--duration", "2s"]), "rtvirt measure --duration 2s");
        assert_eq!(shell_line(&["echo", "a b", "it's", ""]), r"echo 'a b' 'it'\''s' ''");
    }
}
