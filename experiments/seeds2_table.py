#!/usr/bin/env python3
"""SEEDS 2 reproduction: round-trip latency Domain 1 -> Domain 2 -> Domain 1 through Dom0
(original vs RTCA with batch 1 / 64 / 238) under Base / Light / Medium / Heavy interference;
prints the simulated median and p95 (us) next to the published table and the must-hold checks.

Usage: experiments/seeds2_table.py [--rtvirt PATH] [--packets 5000]
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MODES = ["original", "rtca1", "rtca64", "rtca238"]
LEVELS = ["base", "light", "medium", "heavy"]
PUB_MEDIAN = {"base": (68, 70, 71, 71), "light": (5183, 60, 64, 64), "medium": (9621, 61, 216, 2421), "heavy": (9872, 69, 317, 3661)}
PUB_P95 = {"base": (71, 74, 74, 74), "light": (6610, 66, 261, 324), "medium": (11954, 68, 363, 3404), "heavy": (11085, 76, 390, 4643)}


def simulate(rtvirt, mode, level, packets):
    path = os.path.join(ROOT, "scenarios", f"seeds2_{mode}_{level}.toml")
    duration = f"{packets * 10}ms"
    out = subprocess.run([rtvirt, "simulate", path, "--duration", duration, "--format", "json"], check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    l = r["flows"][0]["latency_ns"]
    return l["p50"] / 1e3, l["p95"] / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtvirt", default=os.path.join(ROOT, "target", "release", "rtvirt"))
    ap.add_argument("--packets", default=5000, type=int)
    a = ap.parse_args()
    sim = {(m, l): simulate(a.rtvirt, m, l, a.packets) for l in LEVELS for m in MODES}
    for name, idx, pub in (("median", 0, PUB_MEDIAN), ("p95", 1, PUB_P95)):
        print(f"\n{name} round trip (us): published | simulated")
        print(f"{'level':<7} " + " ".join(f"{m:>8}" for m in MODES) + " | " + " ".join(f"{m:>8}" for m in MODES))
        for l in LEVELS:
            print(f"{l:<7} " + " ".join(f"{v:>8}" for v in pub[l]) + " | " + " ".join(f"{sim[(m, l)][idx]:>8.0f}" for m in MODES))
    med = lambda m, l: sim[(m, l)][0]
    bases = [med(m, "base") for m in MODES]
    checks = [("Base medians within +-30% of each other", max(bases) <= min(bases) * 1.3 / 0.7)]
    for l in LEVELS[1:]:
        checks.append((f"original {l} >= 30x Base", med("original", l) >= 30 * med("original", "base")))
        checks.append((f"RTCA 1 {l} within 1.5x Base", med("rtca1", l) <= 1.5 * med("rtca1", "base")))
    for l in ("medium", "heavy"):
        checks.append((f"{l}: RTCA 1 < 64 < 238 < original", med("rtca1", l) < med("rtca64", l) < med("rtca238", l) < med("original", l)))
    print()
    for n, ok in checks:
        print(f"{'holds' if ok else 'FAILS'}: {n}")


if __name__ == "__main__":
    main()
