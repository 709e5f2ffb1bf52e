"""Overhead of the Python package over the command line for one 1-second simulated cell:
`rtvirt simulate SCENARIO --duration 1s --seed S --format json` (a process per cell) against
`rtvirt.simulate(rtvirt.Scenario.load(SCENARIO), duration="1s", seed=S).to_json()` in one
interpreter, alternating, best and median of N. Release builds of both (docs/PERFORMANCE.md).

    .venv/bin/python crates/python/bench/python_vs_cli.py [RTVIRT_BIN] [N]
"""

import statistics
import subprocess
import sys
import time
from pathlib import Path

import rtvirt

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = ROOT / "scenarios" / "sim_seeds5.toml"


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "release" / "rtvirt")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    cli, python, frames = [], [], []
    for seed in range(1, runs + 1):
        started = time.perf_counter()
        printed = subprocess.run([binary, "simulate", str(SCENARIO), "--duration", "1s", "--seed", str(seed),
                                  "--format", "json"], capture_output=True, text=True, check=True).stdout
        cli.append(time.perf_counter() - started)
        started = time.perf_counter()
        results = rtvirt.simulate(rtvirt.Scenario.load(SCENARIO), duration="1s", seed=seed)
        text = results.to_json()
        python.append(time.perf_counter() - started)
        results.tasks()
        frames.append(time.perf_counter() - started)
        assert text + "\n" == printed, "the same document"
    for name, times in (("cli (process per cell)", cli), ("python simulate + to_json", python),
                        ("python + tasks() frame", frames)):
        print(f"{name:28} best {min(times) * 1e3:8.2f} ms  median {statistics.median(times) * 1e3:8.2f} ms")
    print(f"ratio python/cli: best {min(python) / min(cli):.3f}  median "
          f"{statistics.median(python) / statistics.median(cli):.3f}; with the frame: median "
          f"{statistics.median(frames) / statistics.median(cli):.3f}")


if __name__ == "__main__":
    main()
