#!/usr/bin/env python3
"""Xi et al. 2012 reproduction: round-trip latency Domain 1 -> Domain 2 -> Domain 1 through Dom0
(original vs RTCA with batch 1 / 64 / 238) under Base / Light / Medium / Heavy interference;
prints the simulated median and p95 (us) next to the published table and the must-hold checks.

Exit code 1 when a must-hold fails.
Usage: experiments/seeds2_table.py [--rtvirt PATH] [--packets 5000]
"""
import argparse
import json
import os
import subprocess
import sys

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
    flood = r["flows"][1].get("packets_per_s", 0)
    util = [c["utilisation"] for c in r["cores"]]
    return l["p50"] / 1e3, l["p95"] / 1e3, flood, util


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
    print("\ninterference delivered (k packets/s) | utilisation of Dom0's core and of cores 3, 4, 5 (interfering domains)")
    for l in LEVELS:
        print(f"{l:<7} " + " ".join(f"{sim[(m, l)][2] / 1e3:>8.1f}" for m in MODES) + " | "
              + "  ".join(f"{sim[(m, l)][3][0]:.2f} " + "/".join(f"{u:.2f}" for u in sim[(m, l)][3][3:]) for m in MODES))
    med = lambda m, l: sim[(m, l)][0]
    print()
    ok = True
    for name, holds in checks(med):
        ok &= holds
        print(f"{'holds' if holds else 'FAILS'}: {name}")
    return 0 if ok else 1


def checks(med):
    """The Xi et al. 2012 must-holds of issue 4 (the same as crates/sim/src/net/xen.rs seeds2_table_shapes)."""
    bases = [med(m, "base") for m in MODES]
    out = [("Base medians within +-30% of each other (max <= 1.3 x min)", max(bases) <= 1.3 * min(bases))]
    base = {m: med(m, "base") for m in MODES}
    for l in LEVELS[1:]:
        out.append((f"Original {l} >= 30x Base", med("original", l) >= 30 * base["original"]))
    for l in LEVELS:
        out.append((f"RTCA 1 {l} within 1.5x Base (either way)", base["rtca1"] / 1.5 <= med("rtca1", l) <= 1.5 * base["rtca1"]))
    r1, o = med("rtca1", "light"), med("original", "light")
    out.append(("light: RTCA 64 and 238 between RTCA 1 and Original", r1 <= med("rtca64", "light") <= o and r1 <= med("rtca238", "light") <= o))
    for l in ("medium", "heavy"):
        out.append((f"{l}: RTCA 1 < 64 < 238 < Original", med("rtca1", l) < med("rtca64", l) < med("rtca238", l) < med("original", l)))
    return out


if __name__ == "__main__":
    sys.exit(main())
