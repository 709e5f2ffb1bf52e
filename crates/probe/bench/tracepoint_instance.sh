# Sourced by the benches: a tracefs instance of the bench's own (limited to one CPU if given), an
# event set to switch on and off, and one `rtvirt measure timer` run printing "p50_us p99_us".
# Removed (and tracefs unmounted if it was mounted here) when the bench exits. Call from the
# repository root.
#   open_instance NAME [CPU] [TRACE_CLOCK]; enable_only "EVENTS"; timer_p50_p99 RTVIRT CPU SECONDS
# `explain_events` is `measure timer --explain`'s set (crates/probe/src/explain/decode.rs). A bench
# of another set assigns `known_events` (all that `enable_only` may have to switch off) and
# redefines `filter_for EVENT` (the event's kernel-side filter as rtvirt sets it; none if empty).
events_of() { sed -n "/^pub const $1/,/^];/p" "$2" | grep -o '"[a-z_]*/[a-z_]*"' | tr -d '"'; }
explain_events=$(events_of EVENTS crates/probe/src/explain/decode.rs)
known_events="$explain_events $(events_of SYSCALL_EVENTS crates/probe/src/explain/decode.rs)"
mounted_here=0
instance=

# The timer's syscall events are filtered to its measuring threads, as `--explain-syscalls` does.
filter_for() {
    case $1 in syscalls/*) echo 'comm ~ "rtvirt-timer*"' ;; esac
}

# Enable exactly EVENTS (those the kernel has), each with its filter.
enable_only() {
    for e in $known_events; do [ -e "$instance/events/$e/enable" ] && echo 0 > "$instance/events/$e/enable"; done
    for e in $1; do
        [ -e "$instance/events/$e/enable" ] || continue
        echo 1 > "$instance/events/$e/enable"
        local filter
        filter=$(filter_for "$e")
        [ -z "$filter" ] || echo "$filter" > "$instance/events/$e/filter"
    done
    echo > "$instance/trace"
}

close_instance() {
    [ -n "$instance" ] && [ -d "$instance" ] && { echo 0 > "$instance/tracing_on"; enable_only ""; rmdir "$instance"; }
    [ "$mounted_here" = 1 ] && umount /sys/kernel/tracing
    return 0
}

open_instance() {
    if ! mountpoint -q /sys/kernel/tracing; then mount -t tracefs nodev /sys/kernel/tracing; mounted_here=1; fi
    instance=/sys/kernel/tracing/instances/$1
    trap close_instance EXIT
    mkdir "$instance"
    echo 4096 > "$instance/buffer_size_kb"
    echo "${3:-mono}" > "$instance/trace_clock"
    [ -z "${2:-}" ] || printf '%x\n' $((1 << $2)) > "$instance/tracing_cpumask"
}

timer_p50_p99() {
    "$1" measure timer --cpus "$2" --duration "${3}s" --format json 2>/dev/null |
        python3 -c "import json,sys; l=json.load(sys.stdin)['latency_ns']; print(l['p50']/1e3, l['p99']/1e3)"
}
