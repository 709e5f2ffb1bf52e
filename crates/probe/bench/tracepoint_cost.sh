#!/bin/bash
# The tracepoints' own cost in a timer wake-up, without any reader: `rtvirt measure timer` on one CPU
# with the `--explain` event set enabled in a tracefs instance limited to that CPU, vs disabled,
# interleaved. Prints "round mode p50_us p99_us". Root; run under the host lock; restores tracefs.
#   crates/probe/bench/tracepoint_cost.sh RTVIRT [ROUNDS] [SECONDS] [CPU]
set -euo pipefail
rtvirt=${1:?usage: tracepoint_cost.sh RTVIRT [ROUNDS] [SECONDS] [CPU]}
rounds=${2:-3} seconds=${3:-6} cpu=${4:-1}
cd "$(dirname "$0")/../../.."
events=$(sed -n '/^pub const EVENTS/,/^];/p' crates/probe/src/explain/decode.rs | grep -o '"[a-z_]*/[a-z_]*"' | tr -d '"')
mounted_here=0
if ! mountpoint -q /sys/kernel/tracing; then mount -t tracefs nodev /sys/kernel/tracing; mounted_here=1; fi
instance=/sys/kernel/tracing/instances/rtvirt-tracepoint-cost
switch() { for e in $events; do [ -e "$instance/events/$e/enable" ] && echo "$1" > "$instance/events/$e/enable"; done || true; echo "$1" > "$instance/tracing_on"; }
cleanup() {
    [ -d "$instance" ] && { echo 0 > "$instance/tracing_on"; switch 0; rmdir "$instance"; }
    [ "$mounted_here" = 1 ] && umount /sys/kernel/tracing
    return 0
}
trap cleanup EXIT
mkdir "$instance"
echo 4096 > "$instance/buffer_size_kb"
echo mono > "$instance/trace_clock"
printf '%x\n' $((1 << cpu)) > "$instance/tracing_cpumask"
for round in $(seq "$rounds"); do
    for mode in off on; do
        switch "$([ $mode = on ] && echo 1 || echo 0)"
        echo > "$instance/trace"
        printf '%s %s ' "$round" "$mode"
        "$rtvirt" measure timer --cpus "$cpu" --duration "${seconds}s" --format json |
            python3 -c "import json,sys; l=json.load(sys.stdin)['latency_ns']; print(l['p50']/1e3, l['p99']/1e3)"
    done
done
