"""Scale figure: a sweep of CELLS cells (1 s simulated each) on the local rayon engine (2
threads) and on a local 2-CPU Ray cluster, side by side in one run, the same documents checked.

The cluster is started before the clock runs (``ray.init``; its start-up is shown apart) and the
script waits until Ray's prestarted worker processes are idle, as a cluster started earlier with
``ray start --head`` would be. The first Ray sweep then pays what a fresh cluster's first sweep
pays (each worker imports rtvirt and loads the task's function); the rounds after it run on warm
workers. Rounds alternate rayon and Ray. docs/PERFORMANCE.md has the numbers.

    .venv/bin/python crates/python/bench/ray_vs_rayon.py [CELLS] [ROUNDS]
"""

import statistics
import sys
import time
from pathlib import Path

import ray

import rtvirt

ROOT = Path(__file__).resolve().parents[3]


def idle_workers():
    """Ray worker processes of this machine waiting for a task (Ray titles them ray::IDLE)."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            count += entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::IDLE")
        except OSError:
            pass
    return count


def wait_for_idle_workers(count, timeout_s=30.0):
    give_up = time.monotonic() + timeout_s
    while idle_workers() < count and time.monotonic() < give_up:
        time.sleep(0.05)


def timed(run):
    started = time.perf_counter()
    out = run()
    return time.perf_counter() - started, out


def main():
    cells = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    rhos = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    grid = {"scenarios": [str(ROOT / "scenarios" / "sim_seeds5.toml")], "rho": rhos,
            "seeds": {"first": 1, "count": cells // len(rhos)}, "duration": "1s"}
    startup, _ = timed(lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                                        logging_level="ERROR", object_store_memory=200 * 1024 * 1024))
    waited, _ = timed(lambda: wait_for_idle_workers(2))
    print(f"Ray start-up {startup:.1f} s, then {waited:.1f} s until {idle_workers()} workers idle (not counted)")
    ratios = []
    for r in range(1, rounds + 1):
        rayon_s, (local_frame, local) = timed(lambda: rtvirt.sweep(grid, threads=2, results=True, progress=False))
        ray_s, (ray_frame, on_ray) = timed(lambda: rtvirt.sweep(grid, engine="ray", results=True, progress=False))
        same = [d.to_json() for d in on_ray] == [d.to_json() for d in local] and ray_frame.equals(local_frame)
        ratios.append(ray_s / rayon_s)
        state = "fresh cluster, first sweep" if r == 1 else "warm workers"
        print(f"round {r} ({state}): {len(local)} cells x 1 s simulated: rayon (2 threads) {rayon_s:.2f} s, "
              f"Ray (2 CPUs) {ray_s:.2f} s, ratio {ray_s / rayon_s:.3f}; identical documents: {same}", flush=True)
    print(f"ratio Ray/rayon: first sweep {ratios[0]:.3f}, median of all rounds {statistics.median(ratios):.3f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
