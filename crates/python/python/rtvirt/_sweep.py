"""``rtvirt.sweep``: a grid of simulations (scenarios x rho x seeds) as one DataFrame, run here
(rayon threads, as ``rtvirt simulate --sweep``) or on a Ray cluster, one Ray task per batch of
cells. The cells are the same Rust runs either way (``_rtvirt.run_cells`` runs the local sweep's cell
code), so the documents are identical cell for cell, byte for byte."""

import os
import socket
import time

from . import _rtvirt
from ._errors import input_error as _input_error

#: Seconds to wait for a Ray cluster's address to accept a connection before giving up.
CONNECT_TIMEOUT_S = 10.0
#: Times Ray runs a batch again whose worker died (a crash, a lost node).
MAX_RETRIES = 3


def _native_sweep(sweep, base):
    if isinstance(sweep, dict):
        return _rtvirt.Sweep.from_dict(sweep, None if base is None else os.fspath(base))
    if isinstance(sweep, (str, os.PathLike)):
        return _rtvirt.Sweep.load(os.fspath(sweep))
    raise _input_error("sweep", f"{type(sweep).__name__}: expected a sweep file path or a dict with its keys")


def sweep(sweep, engine="local", address=None, table="tasks", threads=None, progress=True, base=None,
          batch=None, results=False):
    """Run a sweep: every cell (scenario x rho x seed) planned at its rho (if the sweep has rho) and
    simulated, as ``rtvirt simulate --sweep``.

    sweep: a sweep file's path, or a dict with its keys: ``{"scenarios": [...], "rho": [...],
        "seeds": [...] or {"first": 1, "count": 10}, "duration": "1s"}``; scenarios are file paths
        (relative to ``base``, default the current directory) or ``rtvirt.Scenario`` objects.
    engine: "local" (rayon threads on this machine; ``threads``, default all cores) or "ray" (one
        Ray task per batch of ``batch`` cells on the cluster at ``address``; without an address a
        local Ray with 2 CPUs is started unless Ray is already initialised).
    table: the results table of every cell (default "tasks": one row per task per cell).
    progress: show a progress bar (tqdm) while cells finish.
    results: also return the cells' Results documents: ``(frame, [Results, ...])``.

    Returns a DataFrame with the cell's scenario, rho and seed columns first and its error last: a
    cell that could not run (an infeasible plan at its rho, a bad scenario) is one row with its
    error, the others are kept. Raises rtvirt.InputError for a bad sweep, ConnectionError when the
    Ray cluster cannot be reached within CONNECT_TIMEOUT_S seconds.
    """
    from . import Results, results_frame

    native = _native_sweep(sweep, base)
    if engine == "local":
        documents = _run_local(native, threads, progress)
    elif engine == "ray":
        documents = _run_ray(native, address, progress, batch)
    else:
        raise _input_error("engine", f"{engine!r}: expected \"local\" or \"ray\"")
    documents = [Results(d) for d in documents]
    frame = results_frame(documents, table)
    return (frame, documents) if results else frame


def _bar(total, progress):
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="cell", desc="rtvirt sweep")


def _run_local(native, threads, progress):
    bar = _bar(len(native.cells()), progress)
    shown = [0]

    def advance(done, total):
        if bar is not None and done > shown[0]:
            bar.update(done - shown[0])
            shown[0] = done

    try:
        return native.run_local(threads, advance if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()


def _run_cells(scenarios, cells, duration_ns):
    """A Ray task: run a batch of cells, return their documents in the compact wire form that
    ``_rtvirt.results_from_wire`` reads (each scenario parsed once per batch)."""
    from rtvirt import _rtvirt as native

    return native.run_cells(scenarios, cells, duration_ns)


def check_reachable(address, timeout=CONNECT_TIMEOUT_S):
    """Raise ConnectionError unless ``address`` ("host:port" or "ray://host:port") accepts a TCP
    connection within ``timeout`` seconds ("auto" and "local" are not checked)."""
    if address in (None, "auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise _input_error("address", f"{address!r}: expected host:port, ray://host:port or auto")
    started = time.monotonic()
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        waited = time.monotonic() - started
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address} ({e}; gave up after {waited:.1f} s): start one with "
            f"`ray start --head` there, or pass address=None for a local Ray"
        ) from None


def _start_ray(address):
    import ray

    if ray.is_initialized():
        return
    check_reachable(address)
    if address is None:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                 object_store_memory=200 * 1024 * 1024)
    else:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")


def _run_ray(native, address, progress, batch):
    import ray

    _start_ray(address)
    cells = native.cells()
    if batch is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        batch = max(1, min(64, len(cells) // (8 * workers)))
    remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_run_cells)
    scenarios = ray.put(native.scenarios())
    batches = [cells[i:i + batch] for i in range(0, len(cells), batch)]
    pending = {remote.remote(scenarios, b, native.duration_ns): i for i, b in enumerate(batches)}
    done = [None] * len(batches)
    bar = _bar(len(cells), progress)
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                done[i] = _batch_documents(ref, batches[i], native)
                if bar is not None:
                    bar.update(len(batches[i]))
    finally:
        if bar is not None:
            bar.close()
    return [document for documents in done for document in documents]


def _batch_documents(ref, cells, native):
    """The documents of a finished batch; a batch that failed after its retries (its worker died
    every time) gives each of its cells a document with the error."""
    import ray

    try:
        return _rtvirt.results_from_wire(ray.get(ref))
    except (ray.exceptions.RayError, OSError) as e:
        labels = native.scenarios()
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        why = f"the Ray task failed after {MAX_RETRIES} retries: {type(e).__name__}: {reason}"
        return [_rtvirt.failed_cell(labels[index][2], rho, seed, why) for index, rho, seed in cells]
