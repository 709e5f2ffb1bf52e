#!/usr/bin/env bash
# Soak: `measure timer` (with interval reports) and a `measure net` server + client on loopback
# run side by side for DURATION (default 60min); every SAMPLE seconds (default 60) the resident
# memory (VmRSS) of each process is written to OUT/memory.csv. At the end it prints, per process,
# the first, last and largest RSS after the first minute: a flat line means no growth.
#   scripts/soak.sh [DURATION] [OUT]        e.g. scripts/soak.sh 60min /tmp/soak
# Uses target/release/rtvirt unless RTVIRT names another binary. Needs root (RT priority).
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-60min}"
out="${2:-/tmp/rtvirt-soak}"
sample="${SAMPLE:-60}"
bin="${RTVIRT:-./target/release/rtvirt}"
port="${PORT:-19876}"
mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$bin" measure timer --cpus 1 --priority 80 --duration "$duration" --interval-report 60s --format json \
    > "$out/timer.jsonl" 2> "$out/timer.err" &
pids+=($!); timer=$!
"$bin" measure net server --listen "127.0.0.1:$port" --udp --duration "$duration" --format json \
    > "$out/server.json" 2> "$out/server.err" &
pids+=($!); server=$!
sleep 1
"$bin" measure net client --connect "127.0.0.1:$port" --udp --duration "$duration" --format json \
    > "$out/client.json" 2> "$out/client.err" &
pids+=($!); client=$!

sleep 1
for p in "$timer" "$server" "$client"; do
    kill -0 "$p" 2>/dev/null && continue
    echo "soak: a measurement exited at once:" >&2; cat "$out"/*.err >&2; exit 2
done

rss() { awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null || echo ""; }
echo "t_s,timer_rss_kib,server_rss_kib,client_rss_kib" > "$out/memory.csv"
start=$(date +%s)
while kill -0 "$timer" 2>/dev/null || kill -0 "$client" 2>/dev/null; do
    now=$(( $(date +%s) - start ))
    echo "$now,$(rss "$timer"),$(rss "$server"),$(rss "$client")" >> "$out/memory.csv"
    sleep "$sample"
done
wait "$timer" "$client" 2>/dev/null || true
pids=()
echo "soak: $duration, memory sampled every ${sample}s -> $out/memory.csv"
awk -F, 'NR>2 && $2!="" { for (i=2;i<=4;i++) { if ($i=="") continue; if (!(i in first)) first[i]=$i; last[i]=$i; if ($i>max[i]) max[i]=$i } }
    END { split("timer server client", n, " ");
          for (i=2;i<=4;i++) printf "%-7s RSS KiB: first %s, last %s, max %s\n", n[i-1], first[i], last[i], max[i] }' "$out/memory.csv"
