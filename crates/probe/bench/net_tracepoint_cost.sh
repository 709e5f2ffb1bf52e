#!/bin/bash
# What `measure net --explain`'s tracepoints cost the round trip by themselves, no reader: a
# tracefs instance of the bench's own with the net event set of crates/probe/src/explain/net/events.rs
# (filters as `--explain` sets them), switched between none, the set, and the set without
# sched_wakeup, around `rtvirt measure net client --in container` runs; then `--explain` itself.
# Interleaved rounds; prints "round mode p50_us p99_us" and each mode's mean p50.
#   usage: crates/probe/bench/net_tracepoint_cost.sh RTVIRT [ROUNDS] [SECONDS]   (root; run under the host lock)
set -euo pipefail
rtvirt=$1 rounds=${2:-6} seconds=${3:-5}
cd "$(dirname "$0")/../../.."
. crates/probe/bench/tracepoint_instance.sh
net=crates/probe/src/explain/net/events.rs
events=$(events_of EVENTS $net)
known_events="$events $(events_of SYSCALL_EVENTS $net)"
# the filters of crates/probe/src/explain/net/events.rs's FILTERS
filter_for() {
    case $1 in
        sched/*) echo 'comm ~ "rtvirt*" && comm != "rtvirt-explain" && comm != "rtvirt-sender"' ;;
        skb/* | syscalls/*) echo 'comm ~ "rtvirt*" && comm != "rtvirt-explain"' ;;
        irq/softirq*) echo 'vec == 2 || vec == 3' ;;
    esac
}
open_instance "rtvirt-bench-net-$$"
run() {
    "$rtvirt" measure net client "$@" --in container --duration "${seconds}s" --arrivals fixed:1000 --format json 2>/dev/null |
        python3 -c "import json,sys; r=json.load(sys.stdin)['rtt_ns']; print('%.1f %.1f' % (r['p50']/1e3, r['p99']/1e3))"
}
for k in $(seq "$rounds"); do
    enable_only ""; echo "$k none $(run)"
    enable_only "$events"; echo "$k events $(run)"
    enable_only "$(echo "$events" | grep -v sched_wakeup)"; echo "$k events-without-sched_wakeup $(run)"
    enable_only ""; echo "$k --explain $(run --explain)"
done | tee /dev/stderr | awk '{s[$2] += $3; n[$2]++} END {for (m in s) printf "%s: mean p50 %.1f us\n", m, s[m] / n[m]}'
