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
full=$(sed -n '/^pub const EVENTS/,/^];/p' crates/probe/src/explain/decode.rs | grep -o '"[a-z_]*/[a-z_]*"' | tr -d '"')
declare -A groups=(
    [switch]="sched/sched_switch"
    [wakeup]="sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task"
    [irq]="irq/irq_handler_entry irq/irq_handler_exit"
    [softirq]="irq/softirq_entry irq/softirq_exit irq/softirq_raise"
    [hrtimer]="timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_expire_exit"
    [vectors]="irq_vectors/local_timer_entry irq_vectors/local_timer_exit irq_vectors/reschedule_entry irq_vectors/reschedule_exit irq_vectors/call_function_entry irq_vectors/call_function_exit irq_vectors/call_function_single_entry irq_vectors/call_function_single_exit"
    [syscalls]="syscalls/sys_enter_clock_nanosleep syscalls/sys_exit_clock_nanosleep"
    [all]="$full"
)
mounted_here=0
if ! mountpoint -q /sys/kernel/tracing; then mount -t tracefs nodev /sys/kernel/tracing; mounted_here=1; fi
instance=/sys/kernel/tracing/instances/rtvirt-tracepoint-each
enable() {
    for e in $full; do [ -e "$instance/events/$e/enable" ] && echo 0 > "$instance/events/$e/enable"; done
    for e in $1; do
        [ -e "$instance/events/$e/enable" ] || continue
        echo 1 > "$instance/events/$e/enable"
        case $e in syscalls/*) echo 'comm ~ "rtvirt-timer*"' > "$instance/events/$e/filter" ;; esac
    done
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
echo mono > "$instance/trace_clock"
printf '%x\n' $((1 << cpu)) > "$instance/tracing_cpumask"
for round in $(seq "$rounds"); do
    for group in off switch wakeup irq softirq hrtimer vectors syscalls all; do
        enable "${groups[$group]:-}"
        echo > "$instance/trace"
        printf '%s %s ' "$round" "$group"
        "$rtvirt" measure timer --cpus "$cpu" --duration "${seconds}s" --format json 2>/dev/null |
            python3 -c "import json,sys; l=json.load(sys.stdin)['latency_ns']; print(l['p50']/1e3, l['p99']/1e3)"
    done
done
