#!/usr/bin/env python3
"""Tracing on vs off, interleaved: `rtvirt measure timer` with and without `--explain`.

usage: explain_overhead.py RTVIRT ROUNDS SECONDS [CPU] [--tracepoints-only] [--syscalls]
Prints per round and mode p50/p99/max (us), wake-ups and CPU per wake-up of the whole process
(user + system of the child, so the explainer thread's reading and decoding is included).
With --tracepoints-only a third mode runs between the two: the same events as `--explain`
(crates/probe/src/explain/decode.rs) enabled in a tracefs instance of this script's, limited to
CPU, with no reader at all - what the tracepoints cost on their own, beside what reading and
explaining them adds. With --syscalls a last mode runs `--explain --explain-syscalls` (the
measuring threads' clock_nanosleep events too, which put every task's syscalls on the kernel's
slow path). Run as root, under the host lock, alone on the machine as far as possible
(docs/PERFORMANCE.md); the instance is removed and tracefs unmounted if this script mounted it.
"""
import json
import os
import pathlib
import re
import resource
import subprocess
import sys

TRACING = pathlib.Path("/sys/kernel/tracing")
DECODE = pathlib.Path(__file__).resolve().parents[1] / "src/explain/decode.rs"


def explain_events():
    source = DECODE.read_text()
    block = source[source.index("pub const EVENTS"):]
    return re.findall(r'"([a-z_]+/[a-z_]+)"', block[: block.index("];")])


class TracepointsOnly:
    """A tracefs instance with the `--explain` events enabled on one CPU and nobody reading it."""

    def __init__(self, cpu):
        self.mounted_here = not os.path.ismount(TRACING)
        if self.mounted_here:
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACING)], check=True)
        self.path = TRACING / "instances" / f"rtvirt-bench-{os.getpid()}"
        self.path.mkdir()
        (self.path / "buffer_size_kb").write_text("4096")
        (self.path / "tracing_cpumask").write_text(f"{1 << int(cpu):x}")
        (self.path / "trace_clock").write_text("mono")
        self.events = [e for e in explain_events() if (self.path / "events" / e / "enable").exists()]

    def enable(self, on):
        for e in self.events:
            (self.path / "events" / e / "enable").write_text("1" if on else "0")
        if on:
            (self.path / "trace").write_text("")

    def close(self):
        self.enable(False)
        self.path.rmdir()
        if self.mounted_here:
            subprocess.run(["umount", str(TRACING)], check=True)


def run(rtvirt, seconds, cpu, explain_flags):
    args = [rtvirt, "measure", "timer", "--cpus", cpu, "--duration", f"{seconds}s", "--format", "json"]
    args += explain_flags
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
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rtvirt, rounds, seconds = args[0], int(args[1]), int(args[2])
    cpu = args[3] if len(args) > 3 else "1"
    tracepoints = TracepointsOnly(cpu) if "--tracepoints-only" in flags else None
    modes = {"off": []}
    if tracepoints:
        modes["tracepoints only"] = []
    modes["on (--explain)"] = ["--explain"]
    if "--syscalls" in flags:
        modes["on (--explain --explain-syscalls)"] = ["--explain", "--explain-syscalls"]
    print("| round | tracing | p50 us | p99 us | max us | wake-ups | CPU us/wake-up | events lost |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for k in range(1, rounds + 1):
            for mode, explain_flags in modes.items():
                if tracepoints:
                    tracepoints.enable(mode == "tracepoints only")
                p50, p99, mx, w, cpu_us, lost = run(rtvirt, seconds, cpu, explain_flags)
                print(f"| {k} | {mode} | {p50:.1f} | {p99:.1f} | {mx:.0f} | {w} | {cpu_us:.2f} | {lost} |", flush=True)
    finally:
        if tracepoints:
            tracepoints.close()


if __name__ == "__main__":
    main()
