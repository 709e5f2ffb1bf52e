#!/usr/bin/env python3
"""Held-out check of the network-path simulator (docs/netsim.md, "Calibration and held-out
prediction"): the costs are calibrated on one part of the published data - Garcia Alvarado 2019
without Heavy Receivers and Xi et al. 2012 at Base - and every other published cell is a
prediction. Prints, per cell, published | simulated | ratio sim/published, and per part the
geometric-mean error factor exp(mean |ln(sim/published)|) (1.0 = exact).

Usage: experiments/netsim_heldout.py [--rtvirt PATH] [--duration 10s] [--packets 2000] [--markdown]
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seeds1_table  # noqa: E402
import seeds2_table  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# held-out cells that set parameters (docs/netsim.md, "Origin of every cost parameter"): exclusive
# CPU with Heavy Receivers, its throughput (bulk per-packet costs) and SD (cache footprints)
USED = ("SD", "HR Gb/s")


def cells(rtvirt, duration, packets):
    """(part, cell name, published, simulated) for every published number of both studies."""
    out = []
    for heavy in (False, True):
        part = "held out" if heavy else "calibration"
        for m in seeds1_table.METHODS:
            sim = seeds1_table.simulate(rtvirt, m, heavy, duration, 1)
            pub = seeds1_table.PUBLISHED[heavy][m]
            tag = "Garcia Alvarado 2019 " + ("with HR" if heavy else "without HR")
            for i, what in enumerate(("mean", "p99", "SD", "HR Gb/s")):
                if pub[i] is not None:
                    used = heavy and m == "exclusive" and what in USED
                    out.append(("held out (used)" if used else part, f"{tag}: {m} {what}", pub[i], sim[i]))
    for level in seeds2_table.LEVELS:
        part = "calibration" if level == "base" else "held out"
        for j, mode in enumerate(seeds2_table.MODES):
            med, p95, _, _ = seeds2_table.simulate(rtvirt, mode, level, packets)
            out.append((part, f"Xi et al. 2012: {mode} {level} median", seeds2_table.PUB_MEDIAN[level][j], med))
            out.append((part, f"Xi et al. 2012: {mode} {level} p95", seeds2_table.PUB_P95[level][j], p95))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtvirt", default=os.path.join(ROOT, "target", "release", "rtvirt"))
    ap.add_argument("--duration", default="10s", help="Garcia Alvarado 2019 runs")
    ap.add_argument("--packets", default=2000, type=int, help="Xi et al. 2012 round trips per cell")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = cells(a.rtvirt, a.duration, a.packets)
    if a.markdown:
        print("| part | cell | published | simulated | sim/pub |\n|---|---|---|---|---|")
    for part, name, pub, sim in rows:
        ratio = sim / pub if pub else float("nan")
        if a.markdown:
            print(f"| {part} | {name} | {pub:g} | {sim:.1f} | {ratio:.2f} |")
        else:
            print(f"{part:<15} {name:<52} {pub:>8g} {sim:>9.1f} {ratio:>6.2f}")
    print()
    for part in ("calibration", "held out"):
        errs = [abs(math.log(s / p)) for q, _, p, s in rows if q == part and p > 0 and s > 0]
        print(f"{part}: {len(errs)} cells, geometric-mean error factor {math.exp(sum(errs) / len(errs)):.2f}, "
              f"worst {math.exp(max(errs)):.2f}")


if __name__ == "__main__":
    main()
