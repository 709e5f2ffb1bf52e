#!/usr/bin/env python3
"""Side by side: cyclictest vs `rtvirt measure timer`, sockperf ping-pong vs `rtvirt measure net`
(back-to-back), interleaved rounds with the same settings. Prints a Markdown table for
docs/PERFORMANCE.md. Needs root, rt-tests and sockperf (scripts/setup.sh installs them).

  python3 crates/probe/bench/side_by_side.py RTVIRT_BINARY [ROUNDS] [SECONDS] [PARTS]

PARTS (comma separated, default all): timer, net-free, net-held. /dev/cpu_dma_latency changes
network RTT a lot (cyclictest and `measure timer` hold it at 0: CPUs stay out of deep idle
states), so both net tools of a round always run in the same state, read before and after each
run and printed: net-free = nobody holds a request (value 2000000000; a run during which another
process held one is marked), net-held = this script holds 0 for both tools.
"""
import json, os, re, resource, socket, struct, subprocess, sys, tempfile, time

RTVIRT = sys.argv[1] if len(sys.argv) > 1 else "target/release/rtvirt"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SECS = int(sys.argv[3]) if len(sys.argv) > 3 else 10
PARTS = (sys.argv[4] if len(sys.argv) > 4 else "timer,net-free,net-held").split(",")
CPUS, PRIO, INTERVAL_US = "0-1", 90, 1000
NO_REQUEST = 2000000000


def dma_latency_us():
    """The machine-wide CPU latency target now (us); NO_REQUEST when nobody holds one."""
    with open("/dev/cpu_dma_latency", "rb") as f:
        return struct.unpack("i", f.read(4))[0]


class HoldDmaLatencyZero:
    """Hold /dev/cpu_dma_latency at 0 while inside the `with` block (as cyclictest -m does)."""

    def __enter__(self):
        self.f = open("/dev/cpu_dma_latency", "wb", buffering=0)
        self.f.write(struct.pack("i", 0))
        return self

    def __exit__(self, *exc):
        self.f.close()


def in_state(state, fn):
    """Run fn() with /dev/cpu_dma_latency in `state` ("free" or "held"); record what it read."""
    if state == "held":
        with HoldDmaLatencyZero():
            before = dma_latency_us()
            r = fn()
            after = dma_latency_us()
    else:
        before = dma_latency_us()
        r = fn()
        after = dma_latency_us()
    r["dma"] = f"{before}/{after}" if before != after else str(before)
    r["dma_ok"] = (before == after == (0 if state == "held" else NO_REQUEST))
    return r


def child_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, **kw):
    """Run a command; return (stdout, CPU seconds it used)."""
    before = child_cpu_s()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    return out, child_cpu_s() - before


def percentile_from_bins(bins, q):
    total = sum(bins)
    acc = 0
    for us, n in enumerate(bins):
        acc += n
        if acc >= q * total:
            return us
    return len(bins) - 1


def cyclictest_round():
    with tempfile.TemporaryDirectory() as d:
        hist = os.path.join(d, "h.txt")
        cmd = ["cyclictest", "-m", "-q", "-t", "2", "-a", CPUS, "-p", str(PRIO), "-i", str(INTERVAL_US),
               "-D", f"{SECS}s", "-h", "100000", "--histfile", hist]
        _, cpu = run(cmd)
        bins, samples = [], 0
        for line in open(hist):
            if line.startswith("#"):
                continue
            cols = line.split()
            n = sum(int(c) for c in cols[1:])
            bins.append(n)
            samples += n
        maxline = [l for l in open(hist) if l.startswith("# Max Latencies")][0].split()[3:]
        return {"p50_us": percentile_from_bins(bins, 0.5), "p99_us": percentile_from_bins(bins, 0.99),
                "max_us": max(int(x) for x in maxline), "samples": samples,
                # cyclictest takes one sample per wake-up
                "wakeups": samples, "cpu_us_per_wakeup": cpu * 1e6 / max(samples, 1)}


def rtvirt_timer_round():
    out, cpu = run([RTVIRT, "measure", "timer", "--cpus", CPUS, "--priority", str(PRIO), "--interval", f"{INTERVAL_US}us",
                    "--duration", f"{SECS}s", "--format", "json"])
    v = json.loads(out)
    l = v["latency_ns"]
    # Per wake-up, not per sample: a late wake-up that accounts missed activations as extra
    # samples did the work of one wake-up.
    wakeups = sum(c["wakeups"] for c in v["cpus"])
    return {"p50_us": l["p50"] / 1e3, "p99_us": l["p99"] / 1e3, "max_us": l["max"] / 1e3, "samples": l["count"],
            "wakeups": wakeups, "cpu_us_per_wakeup": cpu * 1e6 / max(wakeups, 1)}


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def sockperf_round():
    port = free_port()
    srv = subprocess.Popen(["sockperf", "sr", "-i", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        out, _ = run(["sockperf", "pp", "-i", "127.0.0.1", "-p", str(port), "-m", "64", "-t", str(SECS), "--full-rtt"])
    finally:
        srv.terminate()
        srv.wait()
    p50 = float(re.search(r"percentile 50\.000 =\s+([\d.]+)", out).group(1))
    p99 = float(re.search(r"percentile 99\.000 =\s+([\d.]+)", out).group(1))
    n = int(re.search(r"\[Valid Duration\].*?SentMessages=(\d+)", out).group(1))
    return {"p50_us": p50, "p99_us": p99, "samples": n}


def rtvirt_net_round():
    port = free_port()
    srv = subprocess.Popen([RTVIRT, "measure", "net", "server", "--listen", f"127.0.0.1:{port}", "--duration", f"{SECS + 30}s"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    srv.stdout.readline()
    try:
        out, _ = run([RTVIRT, "measure", "net", "client", "--connect", f"127.0.0.1:{port}", "--size", "64",
                      "--arrivals", "back-to-back", "--duration", f"{SECS}s", "--format", "json"])
    finally:
        srv.terminate()
        srv.wait()
    r = json.loads(out)["rtt_ns"]
    return {"p50_us": r["p50"] / 1e3, "p99_us": r["p99"] / 1e3, "samples": r["count"]}


def main():
    rows = []
    if "timer" in PARTS:
        for i in range(ROUNDS):
            rows.append(("timer", i + 1, "cyclictest", cyclictest_round()))
            rows.append(("timer", i + 1, "rtvirt", rtvirt_timer_round()))
    states = [p.split("-", 1)[1] for p in PARTS if p.startswith("net-")]
    for i in range(ROUNDS):
        for state in states:
            pair = [("sockperf", sockperf_round), ("rtvirt", rtvirt_net_round)]
            for tool, fn in (pair if i % 2 == 0 else pair[::-1]):
                rows.append((f"net ({state})", i + 1, tool, in_state(state, fn)))
    print("| test | round | tool | p50 us | p99 us | max us | samples | wake-ups | CPU us/wake-up | cpu_dma_latency |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for test, rnd, tool, r in rows:
        mx = f"{r['max_us']:.0f}" if "max_us" in r else "-"
        cpu = f"{r['cpu_us_per_wakeup']:.2f}" if "cpu_us_per_wakeup" in r else "-"
        wk = str(r["wakeups"]) if "wakeups" in r else "-"
        dma = (r["dma"] + ("" if r["dma_ok"] else " (other holder!)")) if "dma" in r else "0 (held by the tool)"
        print(f"| {test} | {rnd} | {tool} | {r['p50_us']:.1f} | {r['p99_us']:.1f} | {mx} | {r['samples']} | {wk} | {cpu} | {dma} |")
    for state in states:
        for tool in ["sockperf", "rtvirt"]:
            p50 = sorted(r["p50_us"] for t, _, tl, r in rows if t == f"net ({state})" and tl == tool)
            if p50:
                print(f"net ({state}) {tool}: median of round medians {p50[len(p50) // 2]:.2f} us")


if __name__ == "__main__":
    main()
