#!/bin/bash
# The tracepoints' own cost in a timer wake-up by event set and trace clock, without any reader:
# `rtvirt measure timer` on CPU 1 with, interleaved per round: no event; the whole `--explain` set
# (crates/probe/src/explain/decode.rs) with trace clock mono and local; a minimal set (4 events per
# wake-up) with mono and local. Prints "round mode p50_us p99_us". Root; run under the host lock;
# restores tracefs.
#   crates/probe/bench/tracepoint_sets.sh RTVIRT [ROUNDS] [SECONDS]
set -euo pipefail
rtvirt=${1:?usage: tracepoint_sets.sh RTVIRT [ROUNDS] [SECONDS]}
rounds=${2:-6} seconds=${3:-5} cpu=1
cd "$(dirname "$0")/../../.."
full=$(sed -n '/^pub const EVENTS/,/^];/p' crates/probe/src/explain/decode.rs | grep -o '"[a-z_]*/[a-z_]*"' | tr -d '"')
minimal="sched/sched_switch sched/sched_wakeup irq/irq_handler_entry irq/irq_handler_exit irq/softirq_entry irq/softirq_exit timer/hrtimer_expire_entry"
mounted_here=0
if ! mountpoint -q /sys/kernel/tracing; then mount -t tracefs nodev /sys/kernel/tracing; mounted_here=1; fi
instance=/sys/kernel/tracing/instances/rtvirt-tracepoint-sets
enable() {
    for e in $full; do [ -e "$instance/events/$e/enable" ] && echo 0 > "$instance/events/$e/enable"; done
    for e in $1; do [ -e "$instance/events/$e/enable" ] && echo 1 > "$instance/events/$e/enable"; done
    true
}
cleanup() {
    [ -d "$instance" ] && { echo 0 > "$instance/tracing_on"; enable ""; rmdir "$instance"; }
    [ "$mounted_here" = 1 ] && umount /sys/kernel/tracing
    return 0
}
trap cleanup EXIT
mkdir "$instance"
echo 4096 > "$instance/buffer_size_kb"
printf '%x\n' $((1 << cpu)) > "$instance/tracing_cpumask"
for round in $(seq "$rounds"); do
    for mode in off full-mono full-local minimal-mono minimal-local; do
        case $mode in off) enable "" ;; full-*) enable "$full" ;; minimal-*) enable "$minimal" ;; esac
        echo "${mode#*-}" | sed 's/^off$/mono/' > "$instance/trace_clock"
        echo > "$instance/trace"
        printf '%s %s ' "$round" "$mode"
        "$rtvirt" measure timer --cpus "$cpu" --duration "${seconds}s" --format json 2>/dev/null |
            python3 -c "import json,sys; l=json.load(sys.stdin)['latency_ns']; print(l['p50']/1e3, l['p99']/1e3)"
    done
done
