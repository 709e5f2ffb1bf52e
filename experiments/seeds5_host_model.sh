#!/usr/bin/env bash
# The Burns 2014 trend "DSR falls as the mean approaches the WCET" re-examined with a measured host
# model: scenarios/sim_seeds5.toml (three guests on one core, mean execution 30/50/70% of the WCET)
# planned at each rho, then per guest the DSR simulated without host costs, simulated with
# HOST.json's costs (3 seeds x 20 s each), and measured for real under the same plan (rtvirt verify,
# DURATION). Needs root for the measured column; run under the host lock.
#   experiments/seeds5_host_model.sh [path/to/rtvirt] HOST.json [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
RTVIRT="${1:-${RTVIRT:-target/release/rtvirt}}"
HOST="$2"
DURATION="${3:-10s}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
S=scenarios/sim_seeds5.toml
echo "rho  DSR vm30/vm50/vm70: simulated | simulated with $(basename "$HOST") | measured"
for rho in 0.1 0.3 0.5 0.7 0.9; do
    "$RTVIRT" plan "$S" --rho "$rho" --format json > "$work/p.json"
    for seed in 1 2 3; do
        "$RTVIRT" simulate "$S" --plan "$work/p.json" --seed "$seed" --duration 20s --format json \
            > "$work/none$seed.json" 2> /dev/null
        "$RTVIRT" simulate "$S" --plan "$work/p.json" --seed "$seed" --duration 20s --host-model "$HOST" \
            --format json > "$work/host$seed.json" 2> /dev/null
    done
    "$RTVIRT" verify "$S" --plan "$work/p.json" --duration "$DURATION" --format json > "$work/v.json" \
        2> /dev/null || [ $? -eq 1 ]
    python3 - "$rho" "$work" <<'PY'
import json, sys
rho, work = sys.argv[1:]
def dsr(tasks):
    agg = {}
    for t in tasks:
        j, m = agg.get(t["guest"], (0, 0))
        agg[t["guest"]] = (j + t["jobs"], m + t["misses"])
    return "/".join("%.4f" % ((j - m) / j) for j, m in agg.values())
def pooled(prefix):
    return dsr([t for s in (1, 2, 3) for t in json.load(open("%s/%s%d.json" % (work, prefix, s)))["tasks"]])
v = json.load(open(work + "/v.json"))
measured = dsr([dict(guest=t["guest"], **t["measured"]) for t in v["tasks"]])
print("%-4s %s | %s | %s" % (rho, pooled("none"), pooled("host"), measured))
PY
done
