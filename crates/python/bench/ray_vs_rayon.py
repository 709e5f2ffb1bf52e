"""Scale figure: a sweep of CELLS cells (1 s simulated each) on the local rayon engine (2
threads) and on a local 2-CPU Ray cluster (started before the clock runs; its start-up is shown
apart), the same documents checked. docs/PERFORMANCE.md has the numbers.

    .venv/bin/python crates/python/bench/ray_vs_rayon.py [CELLS]
"""

import sys
import time
from pathlib import Path

import ray

import rtvirt

ROOT = Path(__file__).resolve().parents[3]


def main():
    cells = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rhos = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    grid = {"scenarios": [str(ROOT / "scenarios" / "sim_seeds5.toml")], "rho": rhos,
            "seeds": {"first": 1, "count": cells // len(rhos)}, "duration": "1s"}
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=200 * 1024 * 1024)
    startup = time.perf_counter() - started
    started = time.perf_counter()
    local_frame, local = rtvirt.sweep(grid, threads=2, results=True, progress=False)
    rayon_s = time.perf_counter() - started
    started = time.perf_counter()
    ray_frame, on_ray = rtvirt.sweep(grid, engine="ray", results=True, progress=False)
    ray_s = time.perf_counter() - started
    same = [d.to_json() for d in on_ray] == [d.to_json() for d in local] and ray_frame.equals(local_frame)
    print(f"{len(local)} cells x 1 s simulated: rayon (2 threads) {rayon_s:.2f} s, Ray (2 CPUs) {ray_s:.2f} s, "
          f"ratio {ray_s / rayon_s:.3f}; Ray start-up {startup:.1f} s (not counted); identical documents: {same}")
    ray.shutdown()


if __name__ == "__main__":
    main()
