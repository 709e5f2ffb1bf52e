#!/usr/bin/env python3
"""Tracing on vs off, interleaved: `rtvirt measure net client --in container` with and without
`--explain` (the server in a fresh container, over its veth pair and bridge).

usage: explain_net_overhead.py RTVIRT ROUNDS SECONDS RATE [--syscalls] [--baseline OTHER_RTVIRT]
Prints per round and mode the round trip's p50/p99/max (us), responses, and CPU per request of
the whole process tree (user + system of the client, its trace reader and the container's server,
so reading and decoding the trace and joining the requests are included), then each mode's mean
p50 and its shift from off. With --syscalls a third mode, --explain-syscalls, runs in each round
too; with --baseline, OTHER_RTVIRT's --explain (an earlier build) runs beside them in each round.
Run as root, alone on the machine as far as possible (docs/PERFORMANCE.md).
"""
import json
import resource
import statistics
import subprocess
import sys


def run(rtvirt, seconds, rate, flag):
    args = [rtvirt, "measure", "net", "client", "--in", "container", "--duration", f"{seconds}s",
            "--arrivals", f"fixed:{rate}", "--format", "json"]
    if flag:
        args.append(flag)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    r = json.loads(out)
    rtt, responses = r["rtt_ns"], r["responses"]
    e = r.get("explain", {})
    explained = e.get("samples_above", "-")
    return rtt["p50"] / 1e3, rtt["p99"] / 1e3, rtt["max"] / 1e3, responses, cpu_s * 1e6 / responses, explained, e.get("events_lost", "-")


def main():
    rtvirt, rounds, seconds, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    modes = [("off", rtvirt, None), ("on (--explain)", rtvirt, "--explain")]
    if "--syscalls" in sys.argv[5:]:
        modes.append(("--explain-syscalls", rtvirt, "--explain-syscalls"))
    if "--baseline" in sys.argv[5:]:
        modes.append(("baseline --explain", sys.argv[sys.argv.index("--baseline") + 1], "--explain"))
    p50s = {mode: [] for mode, _, _ in modes}
    print("| round | tracing | p50 us | p99 us | max us | responses | CPU us/request | explained | events lost |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in range(1, rounds + 1):
        for mode, binary, flag in modes:
            p50, p99, mx, n, cpu_us, explained, lost = run(binary, seconds, rate, flag)
            p50s[mode].append(p50)
            print(f"| {k} | {mode} | {p50:.1f} | {p99:.1f} | {mx:.0f} | {n} | {cpu_us:.1f} | {explained} | {lost} |",
                  flush=True)
    off = statistics.mean(p50s["off"])
    for mode, values in p50s.items():
        mean = statistics.mean(values)
        ratios = [v / o for v, o in zip(values, p50s["off"])]
        print(f"{mode}: mean p50 {mean:.1f} us over {len(values)} rounds, shift {100 * (mean / off - 1):+.1f}% "
              f"(median of the rounds' own shifts {100 * (statistics.median(ratios) - 1):+.1f}%)")


if __name__ == "__main__":
    main()
