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
. crates/probe/bench/tracepoint_instance.sh
minimal="sched/sched_switch sched/sched_wakeup irq/irq_handler_entry irq/irq_handler_exit irq/softirq_entry irq/softirq_exit timer/hrtimer_expire_entry"
open_instance rtvirt-tracepoint-sets "$cpu"
for round in $(seq "$rounds"); do
    for mode in off full-mono full-local minimal-mono minimal-local; do
        case $mode in off) enable_only "" ;; full-*) enable_only "$explain_events" ;; minimal-*) enable_only "$minimal" ;; esac
        echo "${mode#*-}" | sed 's/^off$/mono/' > "$instance/trace_clock"
        printf '%s %s ' "$round" "$mode"
        timer_p50_p99 "$rtvirt" "$cpu" "$seconds"
    done
done
