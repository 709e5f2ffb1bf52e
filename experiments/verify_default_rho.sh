#!/usr/bin/env bash
# Prediction checked against measurement (rtvirt verify) for the default scenario with every guest's
# rho set to 0.5, 0.7 and 0.9: planned without overheads, then each plan run for real and compared
# with its simulation, once without a host model and once simulated with HOST.json's costs; and
# planned with HOST.json (`plan --host-model`, overhead-aware) and verified with it.
# Needs root; run under the host lock. Prints one row per (rho, host model):
#   experiments/verify_default_rho.sh [path/to/rtvirt] [HOST.json] [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
RTVIRT="${1:-${RTVIRT:-target/release/rtvirt}}"
HOST="${2:-}"
DURATION="${3:-20s}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-4s %-10s %-10s %10s %10s %8s %-22s %-22s %s\n' rho plan_model sim_model predicted measured diff_pp \
    "measured vm1/vm2/vm3" "predicted vm1/vm2/vm3" verdict
for rho in 0.5 0.7 0.9; do
    sed "s/^rho = 0.9$/rho = $rho/" scenarios/default.toml > "$work/s$rho.toml"
    "$RTVIRT" plan "$work/s$rho.toml" --format json > "$work/p$rho-none.json"
    rows="none:none"
    if [ -n "$HOST" ]; then
        rows="none:none none:host"
        rc=0
        "$RTVIRT" plan "$work/s$rho.toml" --host-model "$HOST" --format json > "$work/p$rho-host.json" 2> "$work/plan-err" || rc=$?
        if [ "$rc" = 0 ]; then
            rows="$rows host:host"
        else
            echo "$rho plan --host-model $(basename "$HOST"): exit $rc, not verified: $(grep -m1 -A1 'did not fit' "$work/plan-err" | tail -1 | sed 's/^ *//')"
        fi
    fi
    for row in $rows; do
        planned=${row%%:*} simulated=${row##*:}
        extra=()
        [ "$simulated" = host ] && extra=(--host-model "$HOST")
        "$RTVIRT" verify "$work/s$rho.toml" --plan "$work/p$rho-$planned.json" --duration "$DURATION" "${extra[@]}" \
            --format json > "$work/v.json" 2> "$work/err" || [ $? -eq 1 ]
        name() { if [ "$1" = host ]; then basename "$HOST"; else echo none; fi; }
        python3 - "$rho" "$(name "$planned")" "$(name "$simulated")" "$work/v.json" <<'PY'
import json, sys
rho, plan_model, model, path = sys.argv[1:]
v = json.load(open(path))
def per_guest(side):
    agg = {}
    for t in v["tasks"]:
        j, m = agg.get(t["guest"], (0, 0))
        agg[t["guest"]] = (j + t[side]["jobs"], m + t[side]["misses"])
    return "/".join("%.4f" % ((j - m) / j) for j, m in agg.values())
t = v["totals"]
bad = sum(1 for x in v["tasks"] if x["verdict"] != "agree")
print("%-4s %-10s %-10s %10.4f %10.4f %+8.2f %-22s %-22s %s (%d of %d tasks disagree)" % (rho, plan_model, model,
      t["predicted"]["dsr"], t["measured"]["dsr"], t["dsr_difference_points"], per_guest("measured"),
      per_guest("predicted"), v["verdict"], bad, len(v["tasks"])))
PY
    done
done
