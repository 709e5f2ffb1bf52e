"""rtvirt.sweep: the local engine is `rtvirt simulate --sweep`; the Ray engine (a real local Ray
cluster with 2 CPUs) gives the same documents cell for cell, byte for byte."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import rtvirt

GRID = {"rho": [0.3, 0.999], "seeds": [1, 2], "duration": "500ms"}
# one guest whose task needs 98% of a core at its WCET: feasible at rho 0.3, not at rho 0.999
HEAVY = {
    "name": "heavy",
    "host": {"cores": 1},
    "guest": [{"name": "g1", "scheduler": "edf", "task": [
        {"name": "t1", "period": "10ms", "wcet": "9800us", "exec": {"dist": "normal", "mean": "5ms", "sd": "1ms"}},
    ]}],
}


def test_local_sweep_is_the_command_lines_sweep(root, cli, tmp_path):
    sweep = tmp_path / "s.sweep.toml"
    sweep.write_text(f'scenarios = ["{root}/scenarios/sim_seeds5.toml"]\nrho = [0.3, 0.9]\nseeds = [1, 2]\n'
                     'duration = "500ms"\n')
    frame, documents = rtvirt.sweep(sweep, results=True, progress=False)
    printed = json.loads(cli("simulate", "--sweep", sweep, "--format", "json").stdout)
    assert [json.loads(d.to_json()) for d in documents] == printed
    assert len(frame) == 4 * 15  # one row per task per cell
    assert list(frame.columns[:3]) == ["scenario", "rho", "seed"]
    assert sorted(set(zip(frame["rho"], frame["seed"]))) == [(0.3, 1), (0.3, 2), (0.9, 1), (0.9, 2)]


def test_a_cell_that_cannot_run_is_a_row_with_its_error_and_the_others_are_kept(root):
    grid = {"scenarios": [str(root / "scenarios" / "sim_seeds5.toml"), rtvirt.Scenario.from_dict(HEAVY)], **GRID}
    frame = rtvirt.sweep(grid, progress=False)
    failed = frame[frame["error"].notna()]
    assert set(zip(failed["scenario"], failed["rho"])) == {("heavy", 0.999)}
    assert len(failed) == 2  # one row per failed cell (2 seeds)
    assert failed["error"].str.contains("infeasible").all()
    assert len(frame[frame["error"].isna()]) == 4 * 15 + 2 * 1


def test_dict_sweeps_take_scenarios_made_in_code(root):
    s = rtvirt.Scenario.load(root / "scenarios" / "sim_seeds5.toml")
    made = rtvirt.Scenario.from_toml(s.to_toml())  # no file: labelled with its name
    by_file = rtvirt.sweep({"scenarios": [s], "rho": [0.5], "seeds": [3], "duration": "300ms"}, progress=False)
    in_code = rtvirt.sweep({"scenarios": [made], "rho": [0.5], "seeds": [3], "duration": "300ms"}, progress=False)
    assert set(in_code["scenario"]) == {made.name}
    cols = [c for c in by_file.columns if c != "scenario"]
    assert by_file[cols].equals(in_code[cols])


def test_ray_gives_the_same_documents_as_local(root, ray_cluster):
    grid = {"scenarios": [str(root / "scenarios" / "sim_seeds5.toml"), rtvirt.Scenario.from_dict(HEAVY)], **GRID}
    local_frame, local = rtvirt.sweep(grid, results=True, progress=False)
    for batch in (1, 4):
        ray_frame, on_ray = rtvirt.sweep(grid, engine="ray", batch=batch, results=True, progress=False)
        assert [d.to_json() for d in on_ray] == [d.to_json() for d in local]
        assert ray_frame.equals(local_frame)
    assert local_frame["error"].notna().sum() >= 2  # the failed cells too


def _running_cell_tasks():
    """PIDs of Ray workers running a batch of cells now (Ray titles a busy worker ray::FUNCTION)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::_run_cells"):
                pids.append(int(entry.name))
        except OSError:
            pass  # the process ended meanwhile
    return pids


def _kill_first_running_worker(killed, stop):
    while not stop.is_set() and not killed:
        for pid in _running_cell_tasks():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.005)


def test_a_cell_whose_worker_is_killed_is_retried_with_the_local_result(root, ray_cluster):
    # cells long enough (a 15-task scenario, 20 s simulated each) that a worker is caught mid-batch
    grid = {"scenarios": [str(root / "scenarios" / "default.toml"), rtvirt.Scenario.from_dict(HEAVY)],
            "rho": [0.5, 0.999], "seeds": [1, 2, 3], "duration": "20s"}
    local_frame, local = rtvirt.sweep(grid, results=True, progress=False)
    killed, stop = [], threading.Event()
    killer = threading.Thread(target=_kill_first_running_worker, args=(killed, stop))
    killer.start()
    try:
        ray_frame, on_ray = rtvirt.sweep(grid, engine="ray", batch=2, results=True, progress=False)
    finally:
        stop.set()
        killer.join()
    assert killed, "no Ray worker was caught running a batch of cells"
    # the killed batch ran again elsewhere: every document is the local engine's, byte for byte
    assert [d.to_json() for d in on_ray] == [d.to_json() for d in local]
    assert ray_frame.equals(local_frame)
    failed = ray_frame[ray_frame["error"].notna()]
    # the cells that fail by themselves (infeasible at rho 0.999) keep their error rows, and only they
    assert set(zip(failed["scenario"], failed["rho"])) == {("heavy", 0.999)}
    assert len(failed) == 3 and failed["error"].str.contains("infeasible").all()
    assert not failed["error"].str.contains("Ray task failed").any()


def test_unreachable_ray_cluster_is_a_clear_error_in_bounded_time():
    # a port on this machine where nothing listens; run in a fresh interpreter (no Ray initialised)
    code = (
        "import rtvirt, time\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    rtvirt.sweep({'scenarios': ['x.toml']}, engine='ray', address='127.0.0.1:9')\n"
        "except ConnectionError as e:\n"
        "    print('ConnectionError', round(time.monotonic() - t), e)\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code.replace("x.toml", _scenario())], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.startswith("ConnectionError"), done.stdout + done.stderr
    assert "cannot reach the Ray cluster at 127.0.0.1:9" in done.stdout
    assert time.monotonic() - started < 120


def test_bad_addresses_are_input_errors():
    with pytest.raises(rtvirt.InputError, match="field `address`"):
        rtvirt._sweep.check_reachable("no-port-here")


def test_a_ray_batch_reads_back_as_the_local_documents_and_bad_wire_or_cells_are_input_errors(root):
    grid = {"scenarios": [str(root / "scenarios" / "sim_seeds5.toml")], "rho": [0.5], "seeds": [1, 2],
            "duration": "300ms"}
    native = rtvirt._rtvirt.Sweep.from_dict(grid, None)
    wire = rtvirt._rtvirt.run_cells(native.scenarios(), native.cells(), native.duration_ns)
    on_wire = rtvirt._rtvirt.results_from_wire(wire)
    local = rtvirt.sweep(grid, results=True, progress=False)[1]
    assert [d.to_json() for d in on_wire] == [d.to_json() for d in local]
    assert len(wire) < 0.75 * len("".join(d.to_json() for d in local))  # compact: no indentation
    with pytest.raises(rtvirt.InputError, match="wire form"):
        rtvirt._rtvirt.results_from_wire(b'[{"schema": 1}]')
    with pytest.raises(rtvirt.InputError, match="field `cells`.*scenario 3: expected one of 1"):
        rtvirt._rtvirt.run_cells(native.scenarios(), [(3, 0.5, 1)], None)


def _scenario():
    from pathlib import Path

    return str(Path(__file__).resolve().parents[3] / "scenarios" / "default.toml")
