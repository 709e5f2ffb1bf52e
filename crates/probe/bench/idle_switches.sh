#!/bin/bash
# Does this kernel record the switches out of the idle task? `sched_switch` in a tracefs instance
# of this script's for SECONDS, then per CPU the switches into `swapper/N` and out of it, read
# back from the kernel's own text `trace` (not rtvirt's reader). `--explain` relies on the
# answer (docs/measure.md, "Known gaps"). Root; removes its instance (and tracefs if it mounted it).
#   crates/probe/bench/idle_switches.sh [SECONDS]
set -euo pipefail
seconds=${1:-2}
tracing=/sys/kernel/tracing mounted_here=0
mountpoint -q $tracing || { mount -t tracefs nodev $tracing; mounted_here=1; }
instance=$tracing/instances/rtvirt-idle-switches-$$
close() {
    [ -d "$instance" ] && { echo 0 > "$instance/events/sched/sched_switch/enable"; rmdir "$instance"; }
    [ $mounted_here = 1 ] && umount $tracing
    return 0
}
trap close EXIT
mkdir "$instance"
echo 1 > "$instance/events/sched/sched_switch/enable"
sleep "$seconds"
echo 0 > "$instance/tracing_on"
echo "cpu into_idle out_of_idle"
for cpu in $(seq 0 $(($(nproc --all) - 1))); do
    echo "$cpu $(grep -c "next_comm=swapper/$cpu " "$instance/trace" || true) $(grep -c "prev_comm=swapper/$cpu " "$instance/trace" || true)"
done
