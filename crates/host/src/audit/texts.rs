//! What each audit check means: title, why it matters for RT guests, how to fix it, what it
//! depends on, and what tuned's realtime-virtual-host profile sets for it - with the profiles it
//! includes (realtime-virtual-host -> realtime -> network-latency -> latency-performance), each
//! line naming the profile file and section that sets it. Checked against upstream tuned's
//! profiles/{realtime-virtual-host,realtime,network-latency,latency-performance}/tuned.conf,
//! profiles/realtime-virtual-host/script.sh and libexec/defirqaffinity.py; `${isolated_cores}`
//! comes from /etc/tuned/realtime-virtual-host-variables.conf.

pub struct Text {
    pub id: &'static str,
    pub title: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    pub depends_on: &'static str,
    pub tuned: &'static str,
}

pub const TEXTS: &[Text] = &[
    Text {
        id: "preemption",
        title: "kernel preemption model",
        why: "A non-preemptible kernel section delays the wake-up of an RT vCPU or IRQ thread by its whole length \
              (Abeni 2023: L2); PREEMPT_RT makes almost all of the kernel preemptible and threads IRQ handlers.",
        fix: "Boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64); on a PREEMPT_DYNAMIC kernel at least boot with \
              preempt=full.",
        depends_on: "/sys/kernel/realtime (PREEMPT_RT), PREEMPT_DYNAMIC (Linux >= 5.12) with \
                     /sys/kernel/debug/sched/preempt or preempt= or the Kconfig default",
        tuned: "not set by these profiles: realtime-virtual-host expects a PREEMPT_RT kernel (kernel-rt) to be \
                installed",
    },
    Text {
        id: "rt_throttling",
        title: "RT throttling / SCHED_DEADLINE admission (kernel.sched_rt_runtime_us)",
        why: "Bounds what FIFO/RR threads may use per period; -1 turns throttling off AND disables SCHED_DEADLINE \
              admission control, so reservations are no longer guaranteed.",
        fix: "Keep a value >= 0 (default 950000) when using SCHED_DEADLINE reservations; use -1 only for FIFO-only \
              layouts with an explicit starvation guard.",
        depends_on: "any Linux; since 6.12 RT throttling is implemented by the fair server",
        tuned: "kernel.sched_rt_runtime_us = -1 (realtime tuned.conf [sysctl]) - which also disables SCHED_DEADLINE \
                admission control",
    },
    Text {
        id: "fair_server",
        title: "per-CPU fair server (SCHED_DEADLINE server for SCHED_OTHER)",
        why: "Since Linux 6.12 each CPU runs a deadline server (default 50 ms every 1 s) that runs SCHED_OTHER tasks \
              ahead of FIFO/RR threads: it protects kernel threads from a busy RT vCPU but delays RT guests by up to \
              its runtime.",
        fix: "On CPUs dedicated to RT guests set /sys/kernel/debug/sched/fair_server/cpuN/runtime to 0 (only with a \
              starvation guard), or keep it and account for its 5% in the plan.",
        depends_on: "Linux >= 6.12, debugfs",
        tuned: "not set by any of these profiles (they have no fair server setting)",
    },
    Text {
        id: "isolcpus",
        title: "isolated CPUs (isolcpus=)",
        why: "Isolated CPUs are left out of load balancing and unbound work, so that only the pinned RT vCPUs run \
              there.",
        fix: "Boot with isolcpus=managed_irq,domain,<RT CPUs> (or use cpuset partitions, which rtvirt host apply \
              creates for reservations).",
        depends_on: "kernel command line; /sys/devices/system/cpu/isolated (Linux >= 4.x)",
        tuned: "isolcpus=${managed_irq}${isolated_cores} (realtime tuned.conf [bootloader]; managed_irq = \
                \"managed_irq,domain,\" when isolate_managed_irq=Y), plus the workqueue cpumasks off the isolated \
                cores (realtime [sysfs])",
    },
    Text {
        id: "nohz_full",
        title: "adaptive-tick CPUs (nohz_full=)",
        why: "Stops the periodic scheduler tick on CPUs running one RT vCPU, removing a regular interruption (Welch \
              2015 tuning).",
        fix: "Kernel with CONFIG_NO_HZ_FULL and boot with nohz_full=<RT CPUs>.",
        depends_on: "CONFIG_NO_HZ_FULL; /sys/devices/system/cpu/nohz_full",
        tuned: "nohz=on nohz_full=${isolated_cores} (realtime-virtual-host tuned.conf [bootloader])",
    },
    Text {
        id: "rcu_nocbs",
        title: "RCU callback offloading (rcu_nocbs=)",
        why: "Moves RCU callback processing off the RT CPUs into rcuo kthreads elsewhere (Welch 2015 tuning).",
        fix: "Boot with rcu_nocbs=<RT CPUs> (kernel with CONFIG_RCU_NOCB_CPU).",
        depends_on: "CONFIG_RCU_NOCB_CPU; kernel command line",
        tuned: "rcu_nocbs=${isolated_cores} (realtime-virtual-host tuned.conf [bootloader])",
    },
    Text {
        id: "rcu_nocb_poll",
        title: "RCU offload threads poll (rcu_nocb_poll)",
        why: "With rcu_nocb_poll the rcuo threads poll for callbacks instead of being woken by the RT CPUs.",
        fix: "Add rcu_nocb_poll to the kernel command line together with rcu_nocbs=.",
        depends_on: "CONFIG_RCU_NOCB_CPU; kernel command line",
        tuned: "not set by realtime-virtual-host, realtime, network-latency or latency-performance (Welch 2015 uses \
                it)",
    },
    Text {
        id: "irqaffinity",
        title: "default IRQ affinity (irqaffinity=)",
        why: "Keeps device interrupts on housekeeping CPUs by default, away from RT vCPUs.",
        fix: "Boot with irqaffinity=<housekeeping CPUs>.",
        depends_on: "kernel command line; /proc/irq/default_smp_affinity",
        tuned:
            "no irqaffinity= on the command line: realtime-virtual-host script.sh runs defirqaffinity.py \"remove\" \
             ${isolated_cores}, which takes the isolated cores out of /proc/irq/default_smp_affinity and every \
             /proc/irq/N/smp_affinity at run time",
    },
    Text {
        id: "governor",
        title: "cpufreq governor",
        why: "Frequency changes stretch execution times and add transition latency; Welch 2015 disables frequency \
              scaling.",
        fix: "Set the performance governor (cpupower frequency-set -g performance) or disable P-states in firmware.",
        depends_on: "a cpufreq driver (/sys/devices/system/cpu/cpu*/cpufreq)",
        tuned:
            "governor=performance (latency-performance tuned.conf [cpu]); intel_pstate=disable (realtime tuned.conf \
             [bootloader])",
    },
    Text {
        id: "cpuidle",
        title: "cpuidle driver and C-states",
        why: "Waking a CPU from a deep C-state adds tens to hundreds of microseconds to an RT wake-up; Welch 2015 \
              disables cpuidle.",
        fix:
            "Limit C-states (idle=poll, processor.max_cstate=1, intel_idle.max_cstate=0) or hold /dev/cpu_dma_latency \
             at 0.",
        depends_on: "cpuidle (/sys/devices/system/cpu/cpuidle), kernel command line",
        tuned:
            "force_latency (latency-performance tuned.conf [cpu]): a PM QoS limit held open on /dev/cpu_dma_latency \
             (the value differs between tuned versions)",
    },
    Text {
        id: "thp",
        title: "transparent huge pages",
        why: "THP in 'always' mode runs compaction and khugepaged collapses that stall page faults unpredictably.",
        fix: "echo never (or madvise) > /sys/kernel/mm/transparent_hugepage/enabled; back guest memory with hugetlbfs \
              instead.",
        depends_on: "CONFIG_TRANSPARENT_HUGEPAGE",
        tuned: "transparent_hugepages=never (network-latency tuned.conf [vm])",
    },
    Text {
        id: "hugepages",
        title: "static huge pages (vm.nr_hugepages)",
        why:
            "Preallocated huge pages back guest memory without page faults or TLB pressure (Welch 2015: hugepagesz=2M \
             hugepages=4096, QEMU -mem-prealloc).",
        fix: "Reserve huge pages (vm.nr_hugepages or hugepages= at boot) and start QEMU with -mem-path/-mem-prealloc \
              and -overcommit mem-lock=on.",
        depends_on: "CONFIG_HUGETLBFS",
        tuned: "not set by these profiles",
    },
    Text {
        id: "ksm",
        title: "kernel same-page merging (KSM)",
        why: "ksmd scans and merges guest pages; merged pages turn writes into copy-on-write faults inside RT guests.",
        fix: "echo 2 > /sys/kernel/mm/ksm/run (unmerge and stop), disable ksm/ksmtuned services.",
        depends_on: "CONFIG_KSM",
        tuned: "/sys/kernel/mm/ksm/run = 2 (realtime-virtual-host tuned.conf [sysfs]; script.sh also calls \
                disable_ksm)",
    },
    Text {
        id: "irqbalance",
        title: "irqbalance daemon",
        why: "irqbalance periodically moves IRQs, possibly onto RT CPUs, undoing a deliberate IRQ layout.",
        fix: "Stop irqbalance or ban the RT CPUs (IRQBALANCE_BANNED_CPULIST=<RT CPUs>).",
        depends_on: "the irqbalance daemon",
        tuned: "banned_cpus=${isolated_cores} (realtime tuned.conf [irqbalance]): irqbalance keeps running but avoids \
                the isolated cores",
    },
    Text {
        id: "irq_affinity_isolated",
        title: "IRQs on isolated CPUs",
        why: "A device interrupt on an isolated CPU preempts the RT vCPU there (vanilla Linux runs hard IRQs before \
              any thread: Garcia Alvarado 2019 inversion #1).",
        fix: "Move them: echo <housekeeping CPUs> > /proc/irq/N/smp_affinity_list (or a profile's irq role).",
        depends_on: "/proc/irq/N/effective_affinity_list (Linux >= 4.15)",
        tuned: "defirqaffinity.py \"remove\" ${isolated_cores} on every /proc/irq/N/smp_affinity \
                (realtime-virtual-host script.sh) and irqbalance banned_cpus=${isolated_cores} (realtime tuned.conf \
                [irqbalance])",
    },
    Text {
        id: "threaded_napi",
        title: "threaded NAPI per NIC",
        why: "With threaded NAPI each NIC's packet processing runs in its own napi/<dev>-<id> kthread that can be \
              prioritised and pinned: the stock-kernel way to keep RT and non-RT packet processing apart (Garcia \
              Alvarado 2019(a)).",
        fix: "echo 1 > /sys/class/net/<RT NIC>/threaded, then prioritise and pin its napi threads (rtvirt host apply \
              with a napi role).",
        depends_on: "Linux >= 5.12 (/sys/class/net/<dev>/threaded); the driver must use NAPI",
        tuned: "not set by these profiles",
    },
    Text {
        id: "kthread_priorities",
        title: "per-CPU kernel threads (ksoftirqd, ktimers, rcuc)",
        why:
            "These threads must run on every CPU; an RT vCPU above them starves softirqs, timers and RCU there, an RT \
             kthread above the RT layout delays it.",
        fix: "Give them a priority between housekeeping and the RT guests (e.g. FIFO 2-4 on PREEMPT_RT), with chrt or \
              a profile.",
        depends_on: "ktimers/rcuc exist on PREEMPT_RT (and RCU_BOOST) kernels only",
        tuned: "ksoftirqd FIFO 2, ktimersoftd FIFO 3, rcuc FIFO 4, rcub FIFO 4 (realtime-virtual-host tuned.conf \
                [scheduler] group.ksoftirqd=0:f:2, group.ktimersoftd=0:f:3, group.rcuc=0:f:4, group.rcub=0:f:4); its \
                ktimersoftd.* pattern does not match the ktimers/N threads of current PREEMPT_RT kernels",
    },
    Text {
        id: "smt",
        title: "SMT (hyper-threading) siblings",
        why: "SMT siblings share the core's pipeline and caches: a sibling running non-RT work slows the RT vCPU on \
              the other (Welch 2015 disables hyper-threading).",
        fix: "Disable SMT (echo off > /sys/devices/system/cpu/smt/control or nosmt) or keep both siblings of an RT \
              core for RT use.",
        depends_on: "/sys/devices/system/cpu/smt (Linux >= 4.19)",
        tuned: "not set by these profiles",
    },
    Text {
        id: "timer_migration",
        title: "timer migration (kernel.timer_migration)",
        why: "With timer migration on, timers of idle CPUs are moved to busy ones, possibly the RT CPUs.",
        fix: "sysctl kernel.timer_migration=0",
        depends_on: "CONFIG_NO_HZ_COMMON",
        tuned: "kernel.timer_migration = 0 (network-latency tuned.conf [sysctl], included by realtime)",
    },
    Text {
        id: "kvm",
        title: "KVM module parameters",
        why: "halt_poll_ns makes an idle vCPU spin (lower wake-up latency, but a FIFO vCPU spinning starves its CPU); \
              kvmclock_periodic_sync adds periodic work; lapic_timer_advance compensates timer-interrupt delivery \
              latency.",
        fix: "For RT guests: kvm.kvmclock_periodic_sync=N, pause-loop exiting off (kvm_intel.ple_gap=0 on Intel, \
              kvm_amd.pause_filter_count=0 on AMD: the audit names this CPU's), tune halt_poll_ns to the guest's \
              wake-up pattern; keep lapic_timer_advance on.",
        depends_on: "the kvm module (/sys/module/kvm/parameters)",
        tuned: "realtime-virtual-host script.sh: setup_kvm_mod_low_latency (kvm kvmclock_periodic_sync=N, kvm_intel \
                ple_gap=0, checked by its verify) and lapic_timer_advance_ns from a measured tscdeadline latency \
                (run-tscdeadline-latency.sh)",
    },
    Text {
        id: "cpuset_partitions",
        title: "cpuset controller for partitioned SCHED_DEADLINE",
        why: "A SCHED_DEADLINE vCPU pinned to one core must be in a cpuset partition (its own root domain); without a \
              cpuset controller plans cannot be applied.",
        fix: "Mount cgroup v2 with the cpuset controller (or the v1 cpuset hierarchy).",
        depends_on: "cgroup v1 cpuset, or cgroup v2 cpuset.cpus.partition (Linux >= 5.11)",
        tuned: "not set by these profiles (realtime isolates with isolcpus= instead)",
    },
    Text {
        id: "clocksource",
        title: "clocksource",
        why: "A slow or unstable clocksource (hpet, acpi_pm) makes every clock read and timer program expensive.",
        fix: "Use tsc (tsc=reliable on hosts with an invariant TSC).",
        depends_on: "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        tuned: "tsc=reliable, skew_tick=1 (network-latency tuned.conf [bootloader], included by realtime)",
    },
    Text {
        id: "hrtick",
        title: "SCHED_DEADLINE budget enforcement (HRTICK_DL)",
        why: "Without HRTICK the kernel notices a depleted reservation only at the next tick (up to 4 ms at HZ=250): \
              a server overruns its budget by up to a tick and delays the other servers of its CPU (Abeni 2023).",
        fix: "A kernel with CONFIG_SCHED_HRTICK; `echo HRTICK_DL > /sys/kernel/debug/sched/features` (HRTICK on \
              kernels before 6.x) at every boot (not persistent).",
        depends_on: "CONFIG_SCHED_HRTICK; /sys/kernel/debug/sched/features (debugfs; kernel lockdown may hide it)",
        tuned: "not set by these profiles",
    },
    Text {
        id: "deadline_periods",
        title: "SCHED_DEADLINE period limits (kernel.sched_deadline_period_min_us / _max_us)",
        why: "The kernel refuses (EINVAL) a reservation whose period is outside these limits; a plan's server \
              periods must lie inside them.",
        fix: "Plan inside the limits (rtvirt plans for this host's limits by default), or (root) lower \
              kernel.sched_deadline_period_min_us.",
        depends_on: "Linux >= 6.8 (earlier kernels: 100 us .. 4 s, fixed)",
        tuned: "not set by these profiles",
    },
    Text {
        id: "host_is_vm",
        title: "this host is itself a virtual machine",
        why: "In a VM every figure measured here (timer latency, costs, calibration) includes the outer hypervisor: \
              its scheduling of this VM's vCPUs, steal time and halt-polling; a late wake-up on an idle CPU is \
              often the hypervisor's. Plans and measurements hold for this VM, not for bare metal.",
        fix: "Measure and deploy on the bare-metal host for its own figures; in a VM, pin its vCPUs on the outer \
              host and read steal time (/proc/stat) beside every measurement.",
        depends_on: "/proc/cpuinfo (hypervisor flag), /sys/class/dmi/id, /sys/hypervisor/type",
        tuned: "not set by these profiles",
    },
    Text {
        id: "watchdogs",
        title: "NMI and soft-lockup watchdogs",
        why: "The NMI watchdog (a perf event per CPU) and the soft-lockup watchdog (a per-CPU hrtimer and kthread) \
              interrupt every CPU periodically, isolated ones included.",
        fix: "sysctl kernel.nmi_watchdog=0 and kernel.watchdog=0, or boot with nowatchdog (nosoftlockup for the \
              soft-lockup detector only).",
        depends_on: "/proc/sys/kernel/nmi_watchdog, /proc/sys/kernel/watchdog, kernel command line",
        tuned: "kernel.nmi_watchdog = 0 (network-latency tuned.conf [sysctl]); nosoftlockup (realtime tuned.conf \
                [bootloader])",
    },
    Text {
        id: "stat_interval",
        title: "vmstat update interval (vm.stat_interval)",
        why: "Every vm.stat_interval seconds per-CPU vmstat work runs on each CPU (a kworker), also on isolated CPUs \
              with pending counters.",
        fix: "sysctl vm.stat_interval=10",
        depends_on: "/proc/sys/vm/stat_interval",
        tuned: "vm.stat_interval = 10 (network-latency tuned.conf [sysctl])",
    },
    Text {
        id: "skew_tick",
        title: "skewed ticks (skew_tick=1)",
        why: "Without skew_tick the CPUs' ticks fire at the same moment and contend for the jiffies lock and RCU, \
              lengthening each tick on every CPU.",
        fix: "Boot with skew_tick=1.",
        depends_on: "kernel command line",
        tuned: "skew_tick=1 (network-latency tuned.conf [bootloader])",
    },
    Text {
        id: "stalld",
        title: "stalld (starvation daemon)",
        why: "stalld boosts threads starved by FIFO threads with a short SCHED_DEADLINE reservation: a guard for \
              FIFO layouts (vCPUs above ksoftirqd, rcuc, ktimers), and a disturbance on the CPUs of reservations, \
              which already leave each CPU time for its kernel threads.",
        fix: "With rtvirt's SCHED_DEADLINE reservations stalld is not needed; with FIFO vCPUs run it, or give \
              ksoftirqd/rcuc/ktimers priorities above the vCPUs (rtvirt host lint checks each CPU).",
        depends_on: "/proc/*/comm",
        tuned: "not set by these profiles",
    },
    Text {
        id: "container_rt",
        title: "real-time threads in containers (RT group scheduling)",
        why: "With RT group scheduling on (CONFIG_RT_GROUP_SCHED, not switched off by rt_group_sched=0) each cgroup \
              has its own RT runtime, 0 for a new one: a container's SCHED_FIFO/RR threads fail with EPERM, and on \
              cgroup v2 the cpu controller cannot be enabled while RT threads sit in non-root cgroups.",
        fix: "Boot with rt_group_sched=0 (Linux >= 6.16) or a kernel without CONFIG_RT_GROUP_SCHED; else give each \
              container an RT runtime (cgroup v1 cpu.rt_runtime_us, e.g. docker --cpu-rt-runtime).",
        depends_on: "CONFIG_RT_GROUP_SCHED (/proc/config.gz), /sys/fs/cgroup, kernel command line",
        tuned: "not set by these profiles",
    },
    Text {
        id: "kubevirt_realtime",
        title: "KubeVirt realtime node condition (kernel.sched_rt_runtime_us = -1)",
        why: "KubeVirt labels a node kubevirt.io/realtime, and schedules realtime VMs there only, when \
              kernel.sched_rt_runtime_us is -1; that also turns SCHED_DEADLINE admission control off, so the \
              kernel no longer refuses reservations that do not fit (the plan's packing is the only admission).",
        fix: "For KubeVirt realtime VMs with rtvirt's reservations: apply only plans packed for this node, and \
              `rtvirt host apply --force` knowingly; without KubeVirt keep 950000.",
        depends_on: "/proc/sys/kernel/sched_rt_runtime_us",
        tuned: "kernel.sched_rt_runtime_us = -1 (realtime tuned.conf [sysctl])",
    },
];

pub fn text(id: &str) -> &'static Text {
    TEXTS.iter().find(|t| t.id == id).expect("every audit check has its text")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tuned_line_names_the_profile_file_that_sets_it_or_says_none_does() {
        for t in TEXTS {
            let named = [
                "realtime-virtual-host tuned.conf",
                "realtime-virtual-host script.sh",
                "realtime tuned.conf",
                "network-latency tuned.conf",
                "latency-performance tuned.conf",
            ]
            .iter()
            .any(|p| t.tuned.contains(p));
            assert!(named || t.tuned.starts_with("not set by"), "{}: {}", t.id, t.tuned);
        }
    }
}
