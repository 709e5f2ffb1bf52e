#!/usr/bin/env python3
"""Offered-load sweep of the Xi et al. 2012 interference experiment (docs/netsim.md, "Xen: what
the levels do"): the interfering domains' Credit cap (the study: 30%) sets how many packets they
offer Dom0, everything else is the scenario of experiments/seeds2_scenarios.py. Per cap, prints
the median / p95 round trip (us) and Dom0's utilisation of every Dom0 mode and level, then which
of issue 22's targets hold at that load:
  - Original >= 30x Base at Light (the must-hold),
  - RTCA 64 and 238 within 2x of Base at Light,
  - Heavy above Medium for Original, RTCA 64 and RTCA 238.
`--set 'softnet_round = 64'` adds a line to every scenario's [net.xen] (a what-if; not a model
setting of the study).

Usage: experiments/seeds2_load_sweep.py [--rtvirt PATH] [--caps 0.1,0.15,0.2,0.25,0.3]
           [--packets 1500] [--set LINE]
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seeds2_scenarios  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODES = ["original", "rtca1", "rtca64", "rtca238"]
LEVELS = ["base", "light", "medium", "heavy"]


def simulate(rtvirt, text, packets, tmp):
    """(median us, p95 us, Dom0 utilisation) of one scenario text."""
    fd, path = tempfile.mkstemp(suffix=".toml", dir=tmp)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    duration = f"{packets * 10 + 300}ms"
    out = subprocess.run([rtvirt, "simulate", path, "--duration", duration, "--format", "json"],
                         check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    lat = r["flows"][0]["latency_ns"]
    return lat["p50"] / 1e3, lat["p95"] / 1e3, r["cores"][0]["utilisation"]


def sweep_cap(rtvirt, cap, packets, extra, tmp):
    texts = {}
    for m in MODES:
        for lv in LEVELS:
            t = seeds2_scenarios.scenario(m, lv, packets, cap)
            if extra:
                t = t.replace("[net.xen]\n", f"[net.xen]\n{extra}\n", 1)
            texts[(m, lv)] = t
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as ex:
        futures = {k: ex.submit(simulate, rtvirt, t, packets, tmp) for k, t in texts.items()}
        return {k: f.result() for k, f in futures.items()}


def targets(sim):
    med = lambda m, lv: sim[(m, lv)][0]
    return [
        ("Original Light >= 30x Base", med("original", "light") >= 30 * med("original", "base")),
        ("RTCA 64, 238 Light within 2x Base",
         all(med(m, "light") <= 2 * med(m, "base") for m in ("rtca64", "rtca238"))),
        ("Heavy > Medium (Original, RTCA 64, 238)",
         all(med(m, "heavy") > med(m, "medium") for m in ("original", "rtca64", "rtca238"))),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtvirt", default=os.path.join(ROOT, "target", "release", "rtvirt"))
    ap.add_argument("--caps", default="0.1,0.15,0.2,0.25,0.3")
    ap.add_argument("--packets", default=1500, type=int)
    ap.add_argument("--set", dest="extra", default=None, help="a line added to [net.xen]")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for cap in (float(c) for c in a.caps.split(",")):
            sim = sweep_cap(a.rtvirt, cap, a.packets, a.extra, tmp)
            print(f"\ncap {cap:g}: median / p95 round trip (us), Dom0 utilisation")
            print(f"{'level':<7} " + " ".join(f"{m:>20}" for m in MODES))
            for lv in LEVELS:
                cells = (f"{sim[(m, lv)][0]:6.0f} /{sim[(m, lv)][1]:6.0f} {sim[(m, lv)][2]:.2f}" for m in MODES)
                print(f"{lv:<7} " + " ".join(f"{c:>20}" for c in cells))
            for name, holds in targets(sim):
                print(f"  {'holds' if holds else 'fails'}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
