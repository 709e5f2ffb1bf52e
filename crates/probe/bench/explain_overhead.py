#!/usr/bin/env python3
"""Tracing on vs off, interleaved: `rtvirt measure timer` with and without `--explain`.

usage: explain_overhead.py RTVIRT ROUNDS SECONDS [CPU]
Prints per round and mode p50/p99/max (us), wake-ups and CPU per wake-up of the whole process
(user + system of the child, so the explainer thread's reading and decoding is included).
Run as root, alone on the machine as far as possible (docs/PERFORMANCE.md).
"""
import json
import resource
import subprocess
import sys


def run(rtvirt, seconds, cpu, explain):
    args = [rtvirt, "measure", "timer", "--cpus", cpu, "--duration", f"{seconds}s", "--format", "json"]
    if explain:
        args.append("--explain")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    r = json.loads(out)
    wakeups = sum(c["wakeups"] for c in r["cpus"])
    lat = r["latency_ns"]
    lost = r.get("explain", {}).get("events_lost", "-")
    return lat["p50"] / 1e3, lat["p99"] / 1e3, lat["max"] / 1e3, wakeups, cpu_s * 1e6 / wakeups, lost


def main():
    rtvirt, rounds, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    cpu = sys.argv[4] if len(sys.argv) > 4 else "1"
    print("| round | tracing | p50 us | p99 us | max us | wake-ups | CPU us/wake-up | events lost |")
    print("|---|---|---|---|---|---|---|---|")
    for k in range(1, rounds + 1):
        for explain in (False, True):
            p50, p99, mx, w, cpu_us, lost = run(rtvirt, seconds, cpu, explain)
            mode = "on (--explain)" if explain else "off"
            print(f"| {k} | {mode} | {p50:.1f} | {p99:.1f} | {mx:.0f} | {w} | {cpu_us:.2f} | {lost} |", flush=True)


if __name__ == "__main__":
    main()
