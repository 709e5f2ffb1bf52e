#!/bin/bash
# DSR of `measure tasks --in vm` with observation off vs on (the guest agent + `host observe`),
# as PAIRS interleaved off/on pairs (docs/PERFORMANCE.md "DSR of `measure tasks --in vm` with
# observation on vs off"). The order within a pair alternates (off,on then on,off) so that a
# drift of the machine's load over the experiment falls on both arms alike. Each pair holds the
# host lock (QEMU and host scheduling); the script takes it itself:
#   RTVIRT=target/debug/rtvirt PAIRS=8 bash experiments/observe_dsr_in_vm.sh [SCENARIO]
# FIFO=N (default 1) puts every thread of the guest's QEMU under SCHED_FIFO priority N on the host
# for the run (they end with it; RT throttling keeps 5% for the rest): the vCPU is then shielded
# from the other work on a shared host, as a deployment reserves it; FIFO=0 leaves it in CFS.
# OBSERVE=0 leaves `host observe` out of "on" (the guest agent alone).
# Every run reports per 1 s window (--interval-report 1s); the steady DSR leaves out the first
# WARMUP windows (default 2), where a TCG guest is still translating the code it runs (the first
# second of a run missed 85% of its jobs, the rest under 1%). Prints, per pair, off, on and their
# difference (whole run and steady), then the mean paired difference with its 95% confidence
# interval (Student's t over the pairs). Writes tasks-{off,on}-K.json, err-*.txt and
# observe-K.json in the current directory.
set -u
R=${RTVIRT:-target/debug/rtvirt}
S=${1:-experiments/observe_light.toml}
PAIRS=${PAIRS:-8}
SECS=${SECS:-20}
WARMUP=${WARMUP:-2}
LOCK=${LOCK:-/tmp/rtvirt-host.lock}
FIFO=${FIFO:-1}
OBSERVE=${OBSERVE:-1}

# One run: $1 off|on, $2 pair number.
run() {
  local extra= pid
  [ "$1" = on ] && extra=--agent
  "$R" measure tasks "$S" --in vm --guest-kernel nrt $extra --duration "${SECS}s" --interval-report 1s \
    --format json > "tasks-$1-$2.json" 2> "err-$1-$2.txt" &
  pid=$!
  local d=/run/rtvirt/vm/rtvirt-measure-$pid i=0
  if [ "$FIFO" -gt 0 ]; then
    while [ ! -s "$d/qemu.pid" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
    local qemu t
    qemu=$(cat "$d/qemu.pid" 2>/dev/null)
    for t in /proc/"$qemu"/task/*; do chrt -f -p "$FIFO" "${t##*/}" > /dev/null; done
  fi
  if [ "$1" = on ]; then
    i=0
    while [ ! -S "$d/agent.sock" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
    [ "$OBSERVE" = 1 ] && "$R" host observe --vm "rtvirt-measure-$pid" --duration 120s --format json \
      > "observe-$2.json" 2> "observe-err-$2.txt" &
  fi
  wait $pid
  wait
}

exec 9> "$LOCK"
for k in $(seq 1 "$PAIRS"); do
  if [ $((k % 2)) = 1 ]; then order="off on"; else order="on off"; fi
  flock 9
  for mode in $order; do echo "pair $k $mode $(date -u +%T)" >&2; run $mode $k; done
  flock -u 9
done

python3 - "$PAIRS" "$WARMUP" <<'PY'
import json, math, sys
pairs, warmup = int(sys.argv[1]), int(sys.argv[2])
# Student's t, two-sided 95%, by degrees of freedom
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
       11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 19: 2.09, 29: 2.05}

def dsr(path):
    """(whole-run DSR, steady DSR without the first `warmup` windows, jobs, misses accounted)"""
    try:
        r = json.load(open(path))[0]
    except (OSError, ValueError, IndexError):
        return None
    steady = [t for w in r.get("intervals", []) if w["interval"] >= warmup for t in w["tasks"]]
    jobs, misses = sum(t["jobs"] for t in steady), sum(t["misses"] for t in steady)
    return r["dsr"], (1 - misses / jobs if jobs else float("nan")), r["jobs"], r["misses"]

def ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan"), float("nan")
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    t = T95.get(n - 1) or T95[max(k for k in T95 if k <= n - 1)]
    return m, sd, t * sd / math.sqrt(n)

print("| pair | off whole | on whole | off steady | on steady | on - off steady (pp) |")
print("|---|---|---|---|---|---|")
whole, steady = [], []
for k in range(1, pairs + 1):
    off, on = dsr(f"tasks-off-{k}.json"), dsr(f"tasks-on-{k}.json")
    if off is None or on is None:
        print(f"| {k} | run failed | | | | |")
        continue
    whole.append((on[0] - off[0]) * 100)
    steady.append((on[1] - off[1]) * 100)
    print(f"| {k} | {off[0]:.4f} | {on[0]:.4f} | {off[1]:.4f} | {on[1]:.4f} | {steady[-1]:+.2f} |")
for name, xs in (("whole run", whole), (f"steady (windows >= {warmup} s)", steady)):
    if xs:
        m, sd, half = ci(xs)
        print(f"{name}: mean on - off {m:+.2f} pp, SD {sd:.2f} pp, 95% CI [{m - half:+.2f}, {m + half:+.2f}] pp over {len(xs)} pairs")
PY
