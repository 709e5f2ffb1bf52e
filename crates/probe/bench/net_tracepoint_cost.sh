#!/bin/bash
# What `measure net --explain`'s tracepoints cost the round trip by themselves, no reader: a
# tracefs instance of the bench's own with the net event set of crates/probe/src/explain/net/events.rs
# (filters as `--explain` sets them), switched between none, the set, and the set without
# sched_wakeup, around `rtvirt measure net client --in container` runs; then `--explain` itself.
# Interleaved rounds; prints "round mode p50_us p99_us" and each mode's mean p50.
#   usage: crates/probe/bench/net_tracepoint_cost.sh RTVIRT [ROUNDS] [SECONDS]   (root, repo root)
set -euo pipefail
rtvirt=$1 rounds=${2:-6} seconds=${3:-5}
events=$(sed -n '/^pub const EVENTS/,/^];/p' crates/probe/src/explain/net/events.rs | grep -o '"[a-z_]*/[a-z_]*"' | tr -d '"')
woken='comm ~ "rtvirt*" && comm != "rtvirt-explain" && comm != "rtvirt-sender"'
mounted_here=0
mountpoint -q /sys/kernel/tracing || { mount -t tracefs nodev /sys/kernel/tracing; mounted_here=1; }
instance=/sys/kernel/tracing/instances/rtvirt-bench-net-$$
enable_only() {
    for e in $events; do [ -e "$instance/events/$e/enable" ] && echo 0 > "$instance/events/$e/enable"; done
    for e in $1; do
        [ -e "$instance/events/$e/enable" ] || continue
        echo 1 > "$instance/events/$e/enable"
        case $e in
            sched/*) echo "$woken" > "$instance/events/$e/filter" ;;
            skb/*) echo 'comm ~ "rtvirt*" && comm != "rtvirt-explain"' > "$instance/events/$e/filter" ;;
            irq/softirq*) echo 'vec == 2 || vec == 3' > "$instance/events/$e/filter" ;;
        esac
    done
    echo > "$instance/trace"
}
close_instance() {
    [ -d "$instance" ] && { echo 0 > "$instance/tracing_on"; enable_only ""; rmdir "$instance"; }
    [ "$mounted_here" = 1 ] && umount /sys/kernel/tracing
    return 0
}
trap close_instance EXIT
mkdir "$instance"
echo 4096 > "$instance/buffer_size_kb"
echo mono > "$instance/trace_clock"
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
