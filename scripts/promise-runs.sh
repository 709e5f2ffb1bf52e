#!/bin/sh
# Issue 35's numbers: for each scenario, RUNS times, plan it for this host (its cached
# calibration: run `rtvirt host calibrate` first) and verify the plan on this host; print per task
# the plan's miss bound, the measured DSR and verify's verdict (docs/PERFORMANCE.md).
#   scripts/promise-runs.sh [RTVIRT] [RUNS] [DURATION]
set -eu
RTVIRT=${1:-target/release/rtvirt}
RUNS=${2:-3}
DURATION=${3:-10s}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for s in scenarios/default.toml scenarios/plc_vran_monitor.toml scenarios/fp-guests.toml; do
    name=$(basename "$s" .toml)
    for run in $(seq 1 "$RUNS"); do
        plan="$OUT/$name-$run.plan.json"
        verify="$OUT/$name-$run.verify.json"
        if ! "$RTVIRT" plan "$s" --format json > "$plan" 2>/dev/null; then
            python3 - "$name" "$run" "$plan" <<'PY'
import json, sys
name, run, plan = sys.argv[1:]
p = json.load(open(plan))
needs = "; ".join(f"{n.get('guest', 'the plan')} needs {n['setting']}: {n['value']}" for n in p.get("needs", []))
print(f"{name} run {run}: refused ({', '.join(p['unplaced'])} unplaced): {needs}")
PY
            continue
        fi
        "$RTVIRT" verify "$s" --plan "$plan" --duration "$DURATION" --format json > "$verify" || true
        python3 - "$name" "$run" "$plan" "$verify" <<'PY'
import json, sys
name, run, plan, verify = sys.argv[1:]
p = json.load(open(plan))
v = json.load(open(verify))
bound = {(g["name"], t["name"]): t.get("miss_bound") for g in p["guests"] for t in g["tasks"]}
kept = sum(1 for t in v["tasks"] if bound[(t["guest"], t["name"])] is not None
           and t["measured"]["dsr"] >= 1 - bound[(t["guest"], t["name"])])
agree = sum(1 for t in v["tasks"] if t["verdict"] == "agree")
worst = max(b for b in bound.values() if b is not None)
cores = ",".join(str(c["id"]) for c in p["cores"])
print(f"{name} run {run}: CPUs {cores}; promise kept on {kept}/{len(v['tasks'])} tasks "
      f"(largest miss bound {worst:.4f}, lowest measured DSR "
      f"{min(t['measured']['dsr'] for t in v['tasks']):.4f}); verify agrees on {agree}/{len(v['tasks'])}")
PY
    done
done
