#!/usr/bin/env bash
# Burns 2014 reproduction (shape): DSR versus rho for three guests on one core whose tasks have mean
# execution times of 30/50/70% of the WCET (SD = WCET/6). Each rho: Cantelli budgets + exact PRM
# interfaces from the planner, applied as SCHED_DEADLINE reservations, simulated for 3 seeds.
# Prints one row per rho: DSR of each guest over all its jobs and seeds.
#   experiments/seeds5_dsr_vs_rho.sh [path/to/rtvirt]
# Asserted by crates/cli/tests/simulate_seeds5.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
RTVIRT="${1:-${RTVIRT:-target/release/rtvirt}}"
"$RTVIRT" simulate --sweep experiments/seeds5_dsr_vs_rho.sweep.toml --format json | python3 -c '
import json, sys
from collections import defaultdict
runs = json.load(sys.stdin)
agg = defaultdict(lambda: [0, 0])
guests = []
for r in runs:
    for t in r["tasks"]:
        if t["guest"] not in guests:
            guests.append(t["guest"])
        a = agg[(r["rho"], t["guest"])]
        a[0] += t["jobs"]
        a[1] += t["misses"]
print("rho   " + "".join("%12s" % ("DSR " + g) for g in guests))
for rho in sorted({k[0] for k in agg}):
    print("%.1f   " % rho + "".join("%12.5f" % ((agg[(rho, g)][0] - agg[(rho, g)][1]) / agg[(rho, g)][0]) for g in guests))
'
