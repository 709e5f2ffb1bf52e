#!/usr/bin/env python3
"""A large multi-vCPU planning workload (docs/PERFORMANCE.md, "Planning guests of several vCPUs"):
GUESTS EDF guests of VCPUS partitioned vCPUs with TASKS unbound tasks each (Baker light: periods
from the 16 divisors of 1000 ms, WCET uniform in [LO, HI] of the period, normal execution times of
mean 50% and SD WCET/6, rho 0.9), written as TOML to stdout. random.seed(SEED).

    crates/analysis/bench/vcpu_scenario.py GUESTS VCPUS TASKS CORES [LO HI [SEED]] > bench.toml
"""
import random
import sys

DIVISORS_MS = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000]


def main():
    guests, vcpus, tasks, cores = (int(a) for a in sys.argv[1:5])
    lo, hi = (float(a) for a in sys.argv[5:7]) if len(sys.argv) > 6 else (0.01, 0.10)
    random.seed(int(sys.argv[7]) if len(sys.argv) > 7 else 1)
    out = [f'name = "bench-{guests}x{vcpus}x{tasks}"', "[host]", f"cores = {cores}", ""]
    for g in range(guests):
        out += ["[[guest]]", f'name = "g{g}"', 'scheduler = "edf"', f"vcpus = {vcpus}",
                'placement = "partitioned"', "rho = 0.9"]
        tasks_toml = []
        for t in range(tasks):
            period_us = random.choice(DIVISORS_MS) * 1000
            wcet_us = max(1, round(period_us * random.uniform(lo, hi)))
            tasks_toml.append(f'{{name="t{t}",period="{period_us // 1000}ms",wcet="{wcet_us}us",exec={{dist="normal",'
                              f'mean="{round(wcet_us / 2)}us",sd="{max(1, round(wcet_us / 6))}us"}}}}')
        # one inline array per guest: compact (a scenario holds at most 1 MiB)
        out.append("task = [" + ",".join(tasks_toml) + "]")
    print("\n".join(out))


if __name__ == "__main__":
    main()
