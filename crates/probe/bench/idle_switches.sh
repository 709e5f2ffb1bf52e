#!/bin/bash
# Does this kernel record the switches out of the idle task? `sched_switch` in a tracefs instance
# of this script's for SECONDS, then per CPU the switches into `swapper/N` and out of it, read
# back from the kernel's own text `trace` (not rtvirt's reader). `--explain` relies on the
# answer (docs/measure.md, "Known gaps"). Root; removes its instance (and tracefs if it mounted it).
#   crates/probe/bench/idle_switches.sh [SECONDS]
set -euo pipefail
seconds=${1:-2}
cd "$(dirname "$0")/../../.."
. crates/probe/bench/tracepoint_instance.sh
open_instance "rtvirt-idle-switches-$$"
enable_only sched/sched_switch
sleep "$seconds"
echo 0 > "$instance/tracing_on"
echo "cpu into_idle out_of_idle"
for cpu in $(seq 0 $(($(nproc --all) - 1))); do
    echo "$cpu $(grep -c "next_comm=swapper/$cpu " "$instance/trace" || true) $(grep -c "prev_comm=swapper/$cpu " "$instance/trace" || true)"
done
