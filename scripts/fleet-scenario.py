#!/usr/bin/env python3
"""A fleet-size planning workload (docs/PERFORMANCE.md, "Planning a fleet from a file"): GUESTS EDF
guests of one vCPU with TASKS tasks each (Baker light: periods from the 16 divisors of 1000 ms, WCET
uniform in 1..10% of the period, rho unset), on one host of CORES cores (default: one per guest),
written to stdout as TOML or, with --json, as the same document in JSON. random.seed(SEED).

    scripts/fleet-scenario.py GUESTS TASKS [--cores N] [--json] [--seed S] > fleet.toml
"""
import argparse
import json
import random
import sys

DIVISORS_MS = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]


def guest(g, tasks):
    out = []
    for t in range(tasks):
        period_ms = random.choice(DIVISORS_MS)
        wcet_us = max(1, round(period_ms * 1000 * random.uniform(0.01, 0.10)))
        out.append({"name": f"t{t}", "period": f"{period_ms}ms", "wcet": f"{wcet_us}us"})
    return {"name": f"vm{g}", "scheduler": "edf", "task": out}


def toml_guest(g):
    tasks = ",".join(f'{{name="{t["name"]}",period="{t["period"]}",wcet="{t["wcet"]}"}}' for t in g["task"])
    return f'[[guest]]\nname = "{g["name"]}"\nscheduler = "edf"\ntask = [{tasks}]\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("guests", type=int)
    ap.add_argument("tasks", type=int)
    ap.add_argument("--cores", type=int)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    random.seed(a.seed)
    name = f"fleet-{a.guests}x{a.tasks}"
    host = {"cores": a.cores or a.guests}
    guests = (guest(g, a.tasks) for g in range(a.guests))
    w = sys.stdout.write
    if a.json:
        w(f'{{"name": "{name}", "host": {json.dumps(host)}, "guest": [\n')
        for i, g in enumerate(guests):
            w((",\n" if i else "") + json.dumps(g, separators=(",", ":")))
        w("\n]}\n")
    else:
        w(f'name = "{name}"\n[host]\ncores = {host["cores"]}\n\n')
        for g in guests:
            w(toml_guest(g))


if __name__ == "__main__":
    main()
