#!/bin/bash
# The tracepoints' own cost in a timer wake-up, without any reader: `rtvirt measure timer` on one CPU
# with the `--explain` event set enabled in a tracefs instance limited to that CPU, vs disabled,
# interleaved. Prints "round mode p50_us p99_us". Root; run under the host lock; restores tracefs.
#   crates/probe/bench/tracepoint_cost.sh RTVIRT [ROUNDS] [SECONDS] [CPU]
set -euo pipefail
rtvirt=${1:?usage: tracepoint_cost.sh RTVIRT [ROUNDS] [SECONDS] [CPU]}
rounds=${2:-3} seconds=${3:-6} cpu=${4:-1}
cd "$(dirname "$0")/../../.."
. crates/probe/bench/tracepoint_instance.sh
open_instance rtvirt-tracepoint-cost "$cpu"
for round in $(seq "$rounds"); do
    for mode in off on; do
        enable_only "$([ $mode = on ] && echo "$explain_events" || true)"
        printf '%s %s ' "$round" "$mode"
        timer_p50_p99 "$rtvirt" "$cpu" "$seconds"
    done
done
