#!/bin/sh
# Cost per reported event of the guest agent (issue 17, docs/PERFORMANCE.md "Observation
# overhead"): the CPU time (user + system) of `rtvirt guest-agent` while a sender pushes N job
# records (4 tasks, as `measure tasks` reports one per job) through its job-boundary API over
# SECS seconds, less its CPU time over the same run with none; divided by N. The sender is the
# example crates/probe/examples/agent_jobs.rs (`cargo build -p rtvirt-probe --examples`): it
# reports through the agent's shared-memory ring when the agent made one, else as datagrams (an
# agent built before the ring), and prints the time per record spent in the task's reporting
# call. The agent writes its lines to a file standing for the virtio-serial port.
# Usage: RTVIRT=target/debug/rtvirt N=20000 SECS=10 sh experiments/agent_event_cost.sh
set -eu
RTVIRT=${RTVIRT:-target/debug/rtvirt}
SENDER=${SENDER:-target/debug/examples/agent_jobs}
N=${N:-20000}
SECS=${SECS:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# CPU seconds of one agent run while `$1` records are sent.
agent_cpu() {
    rm -f "$dir/api.sock"
    : >"$dir/port.jsonl"
    /usr/bin/time -f "%U %S" -o "$dir/time" "$RTVIRT" guest-agent --port "$dir/port.jsonl" \
        --api-socket "$dir/api.sock" --duration "${SECS}s" 2>"$dir/agent.err" &
    pid=$!
    i=0
    while [ ! -S "$dir/api.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    "$SENDER" "$dir/api.sock" "$1" "$SECS" >&2
    wait $pid
    awk '{print $1 + $2}' "$dir/time"
}

idle=$(agent_cpu 0)
busy=$(agent_cpu "$N")
tail -n 1 "$dir/agent.err" >&2
awk -v i="$idle" -v b="$busy" -v n="$N" 'BEGIN {
    printf "agent CPU idle %.2f s, with %d events %.2f s: %.2f us per event\n", i, n, b, (b - i) / n * 1e6 }'
