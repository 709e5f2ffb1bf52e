"""Shared fixtures: the repository, the `rtvirt` binary of the same build (for side-by-side checks
with the command line) and one real local Ray cluster (2 CPUs) for the whole session."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# The binary's plans in these tests are for the ideal host, as rtvirt.plan()'s without a
# host_model: a plan must not depend on the machine the suite runs on.
os.environ["RTVIRT_HOST"] = "ideal"


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def rtvirt_bin():
    path = Path(os.environ.get("RTVIRT_BIN", ROOT / "target" / "debug" / "rtvirt"))
    if not path.exists():
        subprocess.run(["cargo", "build", "--bin", "rtvirt"], cwd=ROOT, check=True)
    return str(path)


@pytest.fixture(scope="session")
def cli(rtvirt_bin):
    """Run `rtvirt ARGS...` from the repository root; returns the CompletedProcess."""

    def run(*args, check=True):
        done = subprocess.run([rtvirt_bin, *map(str, args)], cwd=ROOT, capture_output=True, text=True)
        if check and done.returncode != 0:
            raise AssertionError(f"rtvirt {' '.join(map(str, args))} exited {done.returncode}: {done.stderr}")
        return done

    return run


@pytest.fixture(scope="session")
def ray_cluster():
    """A real Ray cluster on this machine (2 CPUs), shut down after the session."""
    ray = pytest.importorskip("ray") if os.environ.get("RTVIRT_ALLOW_NO_RAY") else __import__("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=200 * 1024 * 1024)
    yield ray
    ray.shutdown()
