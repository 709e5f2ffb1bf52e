#!/bin/bash
# The timer wake-up's p50 with one group of the `--explain` events at a time, without any reader:
# `rtvirt measure timer` on CPU 1 with, interleaved per round: no event, each group alone, and all
# of them. Shows which tracepoints the tracing shift comes from. Prints "round group p50_us p99_us".
# Root; run under the host lock; restores tracefs.
#   crates/probe/bench/tracepoint_each.sh RTVIRT [ROUNDS] [SECONDS]
set -euo pipefail
rtvirt=${1:?usage: tracepoint_each.sh RTVIRT [ROUNDS] [SECONDS]}
rounds=${2:-3} seconds=${3:-4} cpu=1
cd "$(dirname "$0")/../../.."
. crates/probe/bench/tracepoint_instance.sh
declare -A groups=(
    [switch]="sched/sched_switch"
    [wakeup]="sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task"
    [irq]="irq/irq_handler_entry irq/irq_handler_exit"
    [softirq]="irq/softirq_entry irq/softirq_exit irq/softirq_raise"
    [hrtimer]="timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_expire_exit"
    [vectors]="irq_vectors/local_timer_entry irq_vectors/local_timer_exit irq_vectors/reschedule_entry irq_vectors/reschedule_exit irq_vectors/call_function_entry irq_vectors/call_function_exit irq_vectors/call_function_single_entry irq_vectors/call_function_single_exit"
    [syscalls]="syscalls/sys_enter_clock_nanosleep syscalls/sys_exit_clock_nanosleep"
    [all]="$explain_events"
)
open_instance rtvirt-tracepoint-each "$cpu"
for round in $(seq "$rounds"); do
    for group in off switch wakeup irq softirq hrtimer vectors syscalls all; do
        enable_only "${groups[$group]:-}"
        printf '%s %s ' "$round" "$group"
        timer_p50_p99 "$rtvirt" "$cpu" "$seconds"
    done
done
