#!/usr/bin/env python3
"""Large rtvirt.results/v1 inputs for timing `rtvirt report` (docs/PERFORMANCE.md).

    scripts/report-inputs.py tasks N OUT       one simulation result with N periodic tasks (100 guests)
    scripts/report-inputs.py array N OUT       a JSON array of N small timer results (no labels)
    scripts/report-inputs.py cpus N OUT        one timer result with N CPUs, each with its summary
                                               and 4 interval reports (a 'measure timer' on a big host)
    scripts/report-inputs.py intervals N OUT   one timer result with N per-interval points (8 CPUs)

Deterministic (no randomness): the same arguments write the same bytes."""
import json
import sys


def summary(base, count=1000):
    s = {"count": count, "min": base, "mean": base * 1.4, "sd": base * 0.2, "p25": base + 10, "p50": base + 20,
         "p75": base + 40, "p90": base + 80, "p95": base + 120, "p99": base + 400, "p999": base + 900,
         "p9999": base + 2000, "max": base + 5000}
    return s


def tasks(n):
    out = []
    for i in range(n):
        jobs = 1000 + i % 37
        misses = i % 7
        out.append({"guest": f"vm{i % 100}", "name": f"t{i}", "jobs": jobs, "misses": misses,
                    "dsr": (jobs - misses) / jobs, "response_ns": summary(100_000 + i % 1000 * 97, jobs)})
    guests = [{"name": f"vm{g}", "cpu_time_ns": 1_000_000 * g, "utilisation": 0.5} for g in range(100)]
    return {"schema": "rtvirt.results/v1", "kind": "simulation", "label": "many tasks rho=0.9", "seed": 1,
            "duration_ns": 10_000_000_000, "rho": 0.9, "tasks": out, "guests": guests,
            "cores": [{"id": c, "utilisation": 0.5} for c in range(8)]}


def array(n):
    return [{"schema": "rtvirt.results/v1", "kind": "timer", "duration_ns": 1_000_000_000,
             "latency_ns": summary(10_000 + i % 5000)} for i in range(n)]


def cpus(n):
    per_cpu = [{"cpu": c, "latency_ns": summary(20_000 + c % 3000)} for c in range(n)]
    intervals = [{"type": "interval", "t_ns": (k + 1) * 1_000_000_000,
                  "cpus": [{"cpu": c, "count": 1000, "max_ns": 30_000 + (c * 7 + k) % 9000} for c in range(n)]}
                 for k in range(4)]
    return {"schema": "rtvirt.results/v1", "kind": "timer", "label": f"{n} CPUs", "duration_ns": 4_000_000_000,
            "latency_ns": summary(20_000, 1000 * n), "cpus": per_cpu, "intervals": intervals}


def intervals(n):
    points = [{"t_ns": (i // 8 + 1) * 1_000_000, "cpu": i % 8, "count": 1000, "max_ns": 30_000 + (i * 7919) % 90_000}
              for i in range(n)]
    return {"schema": "rtvirt.results/v1", "kind": "timer", "label": f"{n} intervals",
            "duration_ns": (n // 8 + 1) * 1_000_000, "latency_ns": summary(20_000, 1000 * n), "intervals": points}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("tasks", "array", "cpus", "intervals"):
        sys.exit(__doc__)
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    doc = {"tasks": tasks, "array": array, "cpus": cpus, "intervals": intervals}[kind](n)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
