//! `--emit chrt`: a POSIX shell script that deploys a plan on a stock kernel with `taskset` and
//! `chrt` alone, and writes its own undo script before its first change.
//!
//! A stock kernel refuses SCHED_DEADLINE (EPERM) for a thread whose affinity is narrower than its
//! root domain (Documentation/scheduler/sched-deadline.rst, 5.1), so the script, in this order:
//!
//! 1. checks every thread id and reads each thread's policy, priority, affinity and cpuset;
//! 2. makes each planned core its own root domain, as `rtvirt host apply` does
//!    (`rtvirt_os::cgroup`, same directory names `rtvirt-core<N>`, reused when present):
//!    cgroup v1 an exclusive cpuset child (`cpuset.cpu_exclusive=1`) and the root's
//!    `cpuset.sched_load_balance=0`; cgroup v2 a threaded child with
//!    `cpuset.cpus.partition=root` (read back: the kernel says "root invalid" when it refuses);
//!    which one is found in /proc/mounts when the script runs (only v1 is tested here; on v2 a
//!    thread moves only within its threaded domain: threads of processes in the root cgroup);
//! 3. moves each vCPU thread into its core's partition, sets its affinity (`taskset`) and its
//!    reservation (`chrt -d`), retrying `chrt` for up to 5 s while it answers EPERM: a sleeping
//!    thread reaches its new core only when it next wakes (`rtvirt host apply` wakes it with a
//!    ptrace interrupt instead; a shell has no such means). Any other refusal stops at once,
//!    naming the errno (chrt's message in the C locale) and its cause: EINVAL the values outside
//!    the kernel's range (the period limits read from /proc/sys/kernel), EBUSY admission, EPERM
//!    the thread's affinity or root domain.
//!
//! Before each change the script rewrites `<script>-undo.sh` (next to itself, or
//! `$RTVIRT_UNDO`), which restores the recorded originals in reverse: policies, cpusets and
//! affinities of the threads still alive (thread id + start time), then the partitions it made,
//! then the root's load balancing or `cgroup.subtree_control`; it deletes itself when everything
//! was restored. A run that fails or is interrupted (`set -e`, or SIGHUP/SIGINT/SIGTERM: their
//! traps exit, and the EXIT trap catches every exit; POSIX sh has no ERR trap) after its first
//! change runs that undo script itself, so the host is as before and the file gone; it is kept
//! only when some setting could not be restored. A script whose undo file exists refuses to run
//! (deployed already).
//!
//! Quoting: the values rtvirt did not write are guest names (in comments as `comment_word`, in
//! messages as one quoted word) and thread ids (`--pid` numbers, or `VCPU_PID_<GUEST>` checked to
//! be digits when the script runs); values read on the host (cgroup paths, affinity lists) are
//! quoted by the script's own `q` function before they enter the undo script.
//!
//! Shell written by hand: no crate generates shell scripts; `shlex` quotes the words.

use super::words::{comment_word, guest_field, pid_variable, placed, shell_word, used_cores};
use rtvirt_model::plan::{GuestPlan, Plan};
use rtvirt_model::{InputError, Nanos};
use std::collections::BTreeMap;
use std::fmt::Write;

/// SCHED_DEADLINE's smallest runtime (ns).
const MIN_RUNTIME_NS: u64 = 1024;

/// Header, helpers and the checks every run starts with (constant text).
const PRELUDE: &str = r#"set -eu
say() { printf 'rtvirt: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# q VALUE: VALUE as one single-quoted shell word, for the undo script
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
# stat_field TID N: field N (>= 3) of /proc/TID/stat, after the command name
stat_field() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f"$(($2 - 2))"; }

if [ -n "${RTVIRT_UNDO:-}" ]; then
    UNDO=$RTVIRT_UNDO
else
    case $0 in
        *.sh) UNDO=${0%.sh}-undo.sh ;;
        *) die "run this script from a file named *.sh (its undo script is written next to it), or set RTVIRT_UNDO=FILE" ;;
    esac
fi
[ ! -e "$UNDO" ] || die "$UNDO exists: this plan is deployed already; run $UNDO first"
[ "$(id -u)" -eq 0 ] || die "run as root: cpusets and SCHED_DEADLINE need it"
for tool in chrt taskset sed cut awk; do
    command -v "$tool" >/dev/null || die "$tool is missing (chrt, taskset: util-linux)"
done

# the cpuset hierarchy: cgroup v1 (a cpuset mount) or v2 (cpuset in cgroup.controllers)
CPUSET=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpuset(,|$)/ { print $2; exit }' /proc/mounts)
if [ -n "$CPUSET" ]; then
    CGROUP=v1 TASKS=tasks
else
    CPUSET=$(awk '$3 == "cgroup2" { print $2 }' /proc/mounts | while read -r m; do
        if grep -qw cpuset "$m/cgroup.controllers" 2>/dev/null; then echo "$m"; break; fi
    done)
    [ -n "$CPUSET" ] || die "no cpuset cgroup controller is mounted: pinned SCHED_DEADLINE threads need one"
    CGROUP=v2 TASKS=cgroup.threads
fi

# check_thread TID GUEST: a live thread without a deadline reservation
check_thread() {
    case $1 in '' | *[!0-9]*) die "guest $2: thread id '$1' is not a number" ;; esac
    [ -r "/proc/$1/stat" ] || die "guest $2: no thread $1 (is the guest running?)"
    [ "$(stat_field "$1" 41)" != 6 ] || die "guest $2: thread $1 runs SCHED_DEADLINE already (undo that first)"
}

# the undo script: rewritten in full before each change, restoring in reverse order
UNDO_THREADS='' UNDO_PARTITIONS='' UNDO_HIERARCHY=''
write_undo() {
    {
        cat <<'UNDO_HEAD'
#!/bin/sh
# Undo of an rtvirt plan --emit chrt deployment, written by it: run as root.
set -u
fail=0
say() { printf 'rtvirt undo: %s\n' "$*" >&2; }
alive() { [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20)" = "$2" ]; }
# restore_thread TID STARTTIME CHRT_POLICY PRIORITY AFFINITY CPUSET_TASKS_FILE
restore_thread() {
    if ! alive "$1" "$2"; then say "thread $1 has exited: nothing to restore"; return 0; fi
    chrt "$3" -p "$4" "$1" || fail=1
    printf '%s\n' "$1" > "$6" || fail=1
    taskset -p -c "$5" "$1" >/dev/null || fail=1
}
# remove_partition DIR PARENT_TASKS_FILE TASKS_FILE_NAME
remove_partition() {
    [ -d "$1" ] || return 0
    while read -r t; do printf '%s\n' "$t" > "$2" 2>/dev/null || true; done < "$1/$3"
    rmdir "$1" || fail=1
}
# put FILE VALUE
put() { printf '%s\n' "$2" > "$1" || fail=1; }
UNDO_HEAD
        printf '%s' "$UNDO_THREADS" "$UNDO_PARTITIONS" "$UNDO_HIERARCHY"
        cat <<'UNDO_TAIL'
if [ "$fail" -ne 0 ]; then say "some settings could not be restored (see above); this script is kept"; exit 1; fi
rm -f -- "$0"
say "restored"
UNDO_TAIL
    } > "$UNDO.tmp"
    mv -f -- "$UNDO.tmp" "$UNDO"
    CHANGED=1
}

# rollback STATUS: on any failure or signal after this run's first change, run the undo script
# written so far (it deletes itself when it restored everything), then exit with STATUS
rollback() {
    trap - EXIT
    trap '' HUP INT TERM
    if [ "$1" -eq 0 ] || [ "$CHANGED" -eq 0 ] || [ ! -e "$UNDO" ]; then exit "$1"; fi
    say "stopped (exit $1): rolling back this run's changes with $UNDO"
    if sh "$UNDO"; then
        say "rolled back: every setting this run changed is as it was"
    else
        say "the rollback could not restore everything (see above): $UNDO is kept, run it again"
    fi
    exit "$1"
}
CHANGED=0
trap 'rollback $?' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# partition CORE: the exclusive cpuset of CORE (its own root domain), made unless it exists
partition() {
    dir=$CPUSET/rtvirt-core$1
    if [ -d "$dir" ]; then
        [ "$(cat "$dir/cpuset.cpus")" = "$1" ] || die "$dir exists but does not hold exactly CPU $1"
        say "core $1: partition $dir exists already, used as it is"
        return 0
    fi
    UNDO_PARTITIONS="remove_partition $(q "$dir") $(q "$CPUSET/$TASKS") $TASKS
$UNDO_PARTITIONS"
    write_undo
    mkdir "$dir"
    if [ "$CGROUP" = v1 ]; then
        cat "$CPUSET/cpuset.mems" > "$dir/cpuset.mems"
        echo "$1" > "$dir/cpuset.cpus"
        echo 1 > "$dir/cpuset.cpu_exclusive"
    else
        echo threaded > "$dir/cgroup.type"
        echo "$1" > "$dir/cpuset.cpus"
        echo root > "$dir/cpuset.cpus.partition"
        state=$(cat "$dir/cpuset.cpus.partition")
        [ "$state" = root ] || die "core $1: the kernel refused the partition: $state"
    fi
    say "core $1: exclusive cpuset $dir"
}

# balance_off: v1, the root cpuset stops balancing so that each exclusive child is a root domain;
# v2, the cpuset controller is enabled for the root's children
balance_off() {
    if [ "$CGROUP" = v1 ]; then
        file=$CPUSET/cpuset.sched_load_balance
        before=$(cat "$file")
        [ "$before" != 0 ] || return 0
        UNDO_HIERARCHY="put $(q "$file") $(q "$before")
$UNDO_HIERARCHY"
        write_undo
        echo 0 > "$file"
    else
        file=$CPUSET/cgroup.subtree_control
        ! grep -qw cpuset "$file" || return 0
        UNDO_HIERARCHY="put $(q "$file") -cpuset
$UNDO_HIERARCHY"
        write_undo
        echo +cpuset > "$file"
    fi
}

# kernel TUNABLE: /proc/sys/kernel/TUNABLE, or "?" when unreadable
kernel() { cat "/proc/sys/kernel/$1" 2>/dev/null || echo '?'; }

# refused TID CORE RUNTIME DEADLINE PERIOD GUEST: stop, naming the errno of chrt's refusal ($err,
# in the C locale) and its cause
refused() {
    what="guest $6: thread $1: chrt -d refused runtime $3 ns, deadline $4 ns, period $5 ns"
    case $err in
        *"Invalid argument"*) die "$what: EINVAL: the kernel refuses these values: it takes a period from $(kernel sched_deadline_period_min_us) us (sched_deadline_period_min_us) to $(kernel sched_deadline_period_max_us) us (sched_deadline_period_max_us), a runtime of at least 1024 ns, and runtime <= deadline <= period" ;;
        *"Device or resource busy"*) die "$what: EBUSY: admission: core $2's deadline bandwidth is full: its share sched_rt_runtime_us/sched_rt_period_us = $(kernel sched_rt_runtime_us)/$(kernel sched_rt_period_us), less the fair server's reservation (/sys/kernel/debug/sched/fair_server/cpu$2, 50 ms per 1 s by default) and the other deadline threads' on the core, cannot take this one" ;;
        *"Operation not permitted"*) die "$what for 5 s: EPERM: the thread's affinity or cpuset is not its whole root domain (it has not woken on core $2 since it was moved into partition rtvirt-core$2), or this is not root" ;;
        *"No such process"*) die "$what: ESRCH: the thread has exited" ;;
        *) die "$what: $err" ;;
    esac
}

# deploy TID CORE RUNTIME DEADLINE PERIOD GUEST: thread into the partition, pinned, reserved
deploy() {
    case $(stat_field "$1" 41) in
        0) policy=-o ;; 1) policy=-f ;; 2) policy=-r ;; 3) policy=-b ;; 5) policy=-i ;;
        *) die "guest $6: thread $1 has a policy this script cannot restore" ;;
    esac
    priority=$(stat_field "$1" 40)
    start=$(stat_field "$1" 22)
    affinity=$(taskset -c -p "$1" | sed 's/.*: //')
    if [ "$CGROUP" = v1 ]; then
        cgroup=$(awk -F: '$2 ~ /(^|,)cpuset(,|$)/ { sub(/^[^:]*:[^:]*:/, ""); print; exit }' "/proc/$1/cgroup")
    else
        cgroup=$(sed -n 's/^0:://p' "/proc/$1/cgroup")
    fi
    UNDO_THREADS="restore_thread $1 $start $policy $priority $(q "$affinity") $(q "$CPUSET${cgroup%/}/$TASKS")
$UNDO_THREADS"
    write_undo
    echo "$1" > "$CPUSET/rtvirt-core$2/$TASKS"
    taskset -p -c "$2" "$1" >/dev/null
    if [ "$3" -eq 0 ]; then
        say "guest $6: thread $1 on core $2 (no real-time tasks: no reservation)"
        return 0
    fi
    tries=0
    while ! err=$(LC_ALL=C chrt -d --sched-runtime "$3" --sched-deadline "$4" --sched-period "$5" -p 0 "$1" 2>&1); do
        # EPERM until a sleeping thread wakes on its new core: retried for up to 5 s
        case $err in *"Operation not permitted"*) ;; *) refused "$@" ;; esac
        tries=$((tries + 1))
        [ "$tries" -lt 50 ] || refused "$@"
        sleep 0.1
    done
    say "guest $6: thread $1 on core $2, SCHED_DEADLINE runtime $3 ns, deadline $4 ns, period $5 ns"
}
"#;

/// The script's header: what it does and how to run it.
fn header(s: &mut String) {
    let lines = [
        "#!/bin/sh",
        "# rtvirt plan --emit chrt: each guest's vCPU thread gets its planned core and SCHED_DEADLINE",
        "# reservation, on a stock kernel: first an exclusive cpuset partition per core (cgroup v1:",
        "# cpu_exclusive + the root's sched_load_balance=0; v2: cpuset.cpus.partition=root), then the",
        "# threads move into them, then taskset and chrt -d.",
        "# Run as root from a file named *.sh while the guests run: sudo sh deploy.sh",
        "# Before its first change it writes deploy-undo.sh next to itself (or $RTVIRT_UNDO), which",
        "# puts back every setting it changed: sudo sh deploy-undo.sh. A run that fails or is interrupted",
        "# runs it itself (the host as before, the file gone) and names the errno of a refused chrt.",
        "# A vCPU thread id without --pid NAME=PID is read from VCPU_PID_<GUEST> (e.g. from QMP",
        "# query-cpus-fast \"thread-id\", or ps -T -p <qemu pid>). rtvirt host apply does the same,",
        "# journaled, and finds the QEMU vCPU threads itself.",
    ];
    for line in lines {
        let _ = writeln!(s, "{line}");
    }
}

/// One vCPU thread to deploy: its guest, its vCPU (None: the guest's only one), core and
/// reservation (runtime 0: none, only the core).
struct Thread<'a> {
    /// Suffix of its `TID_` variable.
    label: String,
    guest: &'a GuestPlan,
    vcpu: Option<u32>,
    core: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    bandwidth: f64,
    /// The guest's name as one shell word.
    word: String,
}

impl Thread<'_> {
    /// The `--pid` key of this thread: the guest's name, or `NAME/vcpuK` for a vCPU of a guest of
    /// several.
    fn pid_key(&self) -> String {
        match self.vcpu {
            None => self.guest.name.clone(),
            Some(k) => format!("{}/vcpu{k}", self.guest.name),
        }
    }

    /// The environment variable of its thread id: [`pid_variable`] of the guest, `_VCPU<K>` added
    /// for a vCPU of a guest of several.
    fn variable(&self) -> String {
        match self.vcpu {
            None => pid_variable(&self.guest.name),
            Some(k) => format!("{}_VCPU{k}", pid_variable(&self.guest.name)),
        }
    }

    /// The guest's name for a comment, and its vCPU when the guest has several.
    fn who(&self) -> String {
        match self.vcpu {
            None => comment_word(&self.guest.name),
            Some(k) => format!("{} vCPU {k}", comment_word(&self.guest.name)),
        }
    }

    fn what(&self) -> String {
        format!("guest {}", self.who())
    }
}

/// Every vCPU thread of the placed guests: a guest of one vCPU as one thread (its own fields), a
/// guest of several one per vCPU.
fn threads(plan: &Plan) -> Result<Vec<Thread<'_>>, InputError> {
    let mut out = vec![];
    for (i, (g, core)) in placed(plan).enumerate() {
        let word = shell_word(&g.name, || guest_field(plan, g))?;
        if g.vcpus.is_empty() {
            out.push(Thread {
                label: i.to_string(),
                guest: g,
                vcpu: None,
                core,
                runtime: g.budget_ns,
                deadline: g.deadline_ns,
                period: g.period_ns,
                bandwidth: g.bandwidth,
                word,
            });
            continue;
        }
        for v in &g.vcpus {
            let Some(core) = v.core else { continue };
            out.push(Thread {
                label: format!("{i}_{}", v.id),
                guest: g,
                vcpu: Some(v.id),
                core,
                runtime: if v.reserved() { v.budget_ns } else { 0 },
                deadline: v.deadline_ns,
                period: v.period_ns,
                bandwidth: v.bandwidth,
                word: word.clone(),
            });
        }
    }
    Ok(out)
}

/// The line that sets a thread's id variable `TID_<label>`: a `--pid` number, or the thread's
/// environment variable (the message is constant text; the name [A-Z0-9_]).
fn thread_id(t: &Thread, pids: &BTreeMap<String, u32>) -> String {
    match pids.get(&t.pid_key()) {
        Some(pid) => format!("TID_{}={pid}", t.label),
        None => {
            let what = if t.vcpu.is_some() { "that vCPU" } else { "the vCPU" };
            format!("TID_{}=${{{}:?set it to the thread id of {what} of the guest named above}}", t.label, t.variable())
        }
    }
}

/// `--emit chrt`: the deployment script (see the module documentation). Thread ids come from
/// `pids` (`--pid name=PID`, `--pid name/vcpuK=PID` for a guest of several vCPUs) or from
/// [`pid_variable`] (`_VCPU<K>` added for a guest of several vCPUs).
pub fn script(plan: &Plan, pids: &BTreeMap<String, u32>) -> Result<String, InputError> {
    let threads = threads(plan)?;
    shared_pid_variable(plan, &threads, pids)?;
    let mut s = String::new();
    header(&mut s);
    s.push_str(PRELUDE);
    let _ = writeln!(s, "\n# the vCPU thread of each guest, checked before anything changes");
    for t in &threads {
        let _ = writeln!(s, "# {}", t.what());
        let _ = writeln!(s, "{}\ncheck_thread \"$TID_{}\" {}", thread_id(t, pids), t.label, t.word);
    }
    let _ = writeln!(s, "\n# one exclusive cpuset partition per planned core");
    for core in used_cores(plan) {
        let _ = writeln!(s, "partition {core}");
    }
    let _ = writeln!(s, "balance_off");
    for t in &threads {
        if t.vcpu.is_some() && t.runtime == 0 {
            let _ = writeln!(s, "\n# {}: core {}, no reservation (no real-time task)", t.what(), t.core);
        } else {
            let _ = writeln!(
                s,
                "\n# {}: core {}, runtime {} every {} (deadline {}), bandwidth {:.4}",
                t.what(),
                t.core,
                Nanos(t.runtime),
                Nanos(t.period),
                Nanos(t.deadline),
                t.bandwidth
            );
        }
        let runtime = match t.runtime {
            0 => 0,
            b if b < MIN_RUNTIME_NS => {
                let _ =
                    writeln!(s, "# note: the planned runtime {b} ns is below the kernel minimum; raised to 1024 ns");
                MIN_RUNTIME_NS
            }
            b => b,
        };
        let _ = writeln!(s, "deploy \"$TID_{}\" {} {runtime} {} {} {}", t.label, t.core, t.deadline, t.period, t.word);
    }
    let _ = writeln!(s, "\nsay \"deployed; $UNDO undoes it\"");
    Ok(s)
}

/// Threads without `--pid` whose variables are the same (e.g. guests `vm-1` and `vm_1`): one
/// environment variable cannot hold two thread ids.
fn shared_pid_variable(plan: &Plan, threads: &[Thread], pids: &BTreeMap<String, u32>) -> Result<(), InputError> {
    let mut owner: BTreeMap<String, &Thread> = BTreeMap::new();
    for t in threads.iter().filter(|t| !pids.contains_key(&t.pid_key())) {
        let variable = t.variable();
        if let Some(first) = owner.insert(variable.clone(), t) {
            return Err(InputError::field(
                guest_field(plan, t.guest),
                format!(
                    "guests {} and {} would both read their vCPU thread id from {variable}: give one with --pid \
                     NAME=PID",
                    first.who(),
                    t.who()
                ),
            ));
        }
    }
    Ok(())
}
