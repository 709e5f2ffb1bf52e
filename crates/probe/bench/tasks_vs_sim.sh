#!/bin/sh
# `rtvirt measure tasks` vs `rtvirt simulate`: overall and per-guest DSR of the default scenario
# (Baker light task sets, Burns 2014) with every guest at rho 0.5 and at rho 0.9, same plan for both.
# Needs root (SCHED_DEADLINE). Prints the numbers for docs/PERFORMANCE.md.
#   sh crates/probe/bench/tasks_vs_sim.sh RTVIRT_BINARY [SECONDS]
set -e
R=$(realpath "${1:-target/release/rtvirt}")
SECS=${2:-30}
SCEN=$(realpath scenarios/default.toml)
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
sed 's/^rho = 0.9/rho = 0.5/' "$SCEN" > "$D/rho05.toml"
cp "$SCEN" "$D/rho09.toml"
for r in 05 09; do
  "$R" plan "$D/rho$r.toml" --format json > "$D/plan$r.json"
  "$R" measure tasks "$D/rho$r.toml" --plan "$D/plan$r.json" --duration "${SECS}s" --format json > "$D/m$r.json"
  "$R" simulate "$D/rho$r.toml" --plan "$D/plan$r.json" --duration "${SECS}s" --format json > "$D/s$r.json"
done
python3 - "$D" <<'PY'
import json, sys
d = sys.argv[1]
def dsr(j, m): return (j - m) / max(j, 1)
for r in ["05", "09"]:
    plan = json.load(open(f"{d}/plan{r}.json"))
    print(f"rho 0.{r[1]}: " + ", ".join(f"{g['name']} core {g['core']} budget {g['budget_ns'] / 1e3:.0f}us / {g['period_ns'] / 1e3:.0f}us" for g in plan["guests"]))
    got = {}
    for k, name in [("m", "measured"), ("s", "simulated")]:
        v = json.load(open(f"{d}/{k}{r}.json"))
        jobs = sum(t["jobs"] for t in v["tasks"]); miss = sum(t["misses"] for t in v["tasks"])
        per = {}
        for t in v["tasks"]:
            j, m = per.get(t["guest"], (0, 0)); per[t["guest"]] = (j + t["jobs"], m + t["misses"])
        got[k] = dsr(jobs, miss)
        print(f"  {name}: DSR {got[k]:.4f} ({jobs} jobs, {miss} misses); per guest " + " / ".join(f"{g} {dsr(j, m):.4f}" for g, (j, m) in per.items()))
    print(f"  difference {100 * (got['m'] - got['s']):+.2f} pp")
PY
