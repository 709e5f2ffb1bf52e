#!/usr/bin/env python3
"""Tracing on vs off, interleaved: `rtvirt measure net client --in container` with and without
`--explain` (the server in a fresh container, over its veth pair and bridge).

usage: explain_net_overhead.py RTVIRT ROUNDS SECONDS RATE
Prints per round and mode the round trip's p50/p99/max (us), responses, and CPU per request of
the whole process tree (user + system of the client, its trace reader and the container's server,
so reading and decoding the trace and joining the requests are included). Run as root, alone on
the machine as far as possible (docs/PERFORMANCE.md).
"""
import json
import resource
import subprocess
import sys


def run(rtvirt, seconds, rate, explain):
    args = [rtvirt, "measure", "net", "client", "--in", "container", "--duration", f"{seconds}s",
            "--arrivals", f"fixed:{rate}", "--format", "json"]
    if explain:
        args.append("--explain")
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
    print("| round | tracing | p50 us | p99 us | max us | responses | CPU us/request | explained | events lost |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in range(1, rounds + 1):
        for explain in (False, True):
            p50, p99, mx, n, cpu_us, explained, lost = run(rtvirt, seconds, rate, explain)
            mode = "on (--explain)" if explain else "off"
            print(f"| {k} | {mode} | {p50:.1f} | {p99:.1f} | {mx:.0f} | {n} | {cpu_us:.1f} | {explained} | {lost} |",
                  flush=True)


if __name__ == "__main__":
    main()
