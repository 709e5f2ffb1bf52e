"""rtvirt from Python: the rtvirt engine (Rust) as a library.

    import rtvirt
    scenario = rtvirt.Scenario.load("scenarios/default.toml")
    plan = rtvirt.plan(scenario, rho=0.9)
    results = rtvirt.simulate(scenario, plan=plan, duration="2s", seed=1)
    results.tasks()            # pandas DataFrame: one row per task
    rtvirt.sweep("experiments/seeds5_dsr_vs_rho.sweep.toml", engine="ray")

Everything runs in the same Rust code as the ``rtvirt`` command (scenarios, plans, simulations and
their tables are byte for byte the command's). Bad input raises ``rtvirt.InputError`` with the
command's located message (file, line, column, field). See docs/python.md.
"""

from . import _rtvirt
from ._errors import input_error
from ._frames import frame as _frame
from ._rtvirt import InputError, Scenario

__all__ = ["InputError", "Scenario", "Plan", "Results", "plan", "simulate", "load", "sweep", "results_frame", "tail", "tail_levels"]
__version__ = _rtvirt.VERSION

RESULTS_TABLES = ("tasks", "guests", "cores", "flows", "latency", "histogram", "intervals")


class Plan:
    """A plan (``rtvirt.plan/v1``): per guest its server (period, budget, deadline) and core.

    ``feasible``, ``max_rho``, ``cores_used``, ``unplaced``; ``guests()`` and ``tasks()`` as
    DataFrames; ``to_json()`` is what ``rtvirt plan --format json`` prints."""

    __slots__ = ("_native",)

    def __init__(self, native):
        self._native = native

    @staticmethod
    def from_json(text):
        """Read a plan from its JSON text."""
        return Plan(_rtvirt.Plan.from_json(text))

    feasible = property(lambda self: self._native.feasible, doc="Whether every guest fits on the cores.")
    max_rho = property(lambda self: self._native.max_rho, doc="Largest uniform rho that fits (None: none).")
    cores_used = property(lambda self: self._native.cores_used, doc="Cores with at least one guest.")
    unplaced = property(lambda self: self._native.unplaced, doc="Guests that did not fit on any core.")

    def to_json(self):
        """The plan's JSON (``rtvirt.plan/v1``)."""
        return self._native.to_json()

    def guests(self):
        """One row per guest: guest, scheduler, model, period_ns, budget_ns, deadline_ns,
        bandwidth, core, tasks."""
        return _frame(self._native.columns("guests"))

    def tasks(self):
        """One row per task: guest, task, period_ns, deadline_ns, wcet_ns, budget_ns (the
        execution bound used), rho, bound."""
        return _frame(self._native.columns("tasks"))

    def to_parquet(self, path, table="guests"):
        """Write table "guests" or "tasks" to a Parquet file (pyarrow)."""
        return getattr(self, table)().to_parquet(path, index=False)

    def __reduce__(self):
        return (Plan.from_json, (self.to_json(),))

    def __repr__(self):
        return f"Plan(feasible={self.feasible}, cores_used={self.cores_used}, max_rho={self.max_rho})"


class Results:
    """A results document (``rtvirt.results/v1``) of a simulation or measurement.

    Tables as DataFrames: ``tasks()``, ``guests()``, ``cores()``, ``flows()``, ``latency()``,
    ``histogram()``, ``intervals()`` (the same as ``rtvirt export --table NAME``); each starts with
    the scenario, rho and seed columns and ends with error. ``to_json()`` is what ``rtvirt
    simulate --format json`` prints."""

    __slots__ = ("_native",)

    def __init__(self, native):
        self._native = native

    @staticmethod
    def from_json(text):
        """Read one results document from its JSON text."""
        return Results(_rtvirt.Results.from_json(text))

    kind = property(lambda self: self._native.kind, doc='"simulation", "timer", "tasks", "netsim"...')
    seed = property(lambda self: self._native.seed, doc="The run's random seed.")
    duration_ns = property(lambda self: self._native.duration_ns, doc="Simulated or measured time (ns).")
    rho = property(lambda self: self._native.rho, doc="The rho a sweep cell was planned with.")
    scenario = property(lambda self: self._native.scenario, doc="The scenario of a sweep cell.")
    label = property(lambda self: self._native.label, doc="Free-form label (series name in reports).")
    error = property(lambda self: self._native.error, doc="Why a sweep cell did not run (None if it ran).")

    def to_json(self):
        """The document's JSON (``rtvirt.results/v1``)."""
        return self._native.to_json()

    def table(self, name):
        """Results table ``name`` (one of RESULTS_TABLES) as a DataFrame."""
        return _frame(self._native.columns(name))

    def tasks(self):
        """One row per periodic task: guest, task, jobs, misses, dsr, unfinished and the response
        time statistics (response_count, response_min_ns ... response_max_ns)."""
        return self.table("tasks")

    def guests(self):
        """One row per guest (vCPU thread): cpu_time_ns, utilisation, core(s), policy, reservation."""
        return self.table("guests")

    def cores(self):
        """One row per core: utilisation, cpu_time_ns, time_squeeze."""
        return self.table("cores")

    def flows(self):
        """One row per network flow: latency statistics, throughput, drops, rates."""
        return self.table("flows")

    def latency(self):
        """One row per latency statistic (metric, name): count, min_ns, mean_ns, sd_ns, p50_ns ...
        p9999_ns, max_ns."""
        return self.table("latency")

    def histogram(self):
        """One row per bucket of every exact histogram: metric, name, value_ns, count."""
        return self.table("histogram")

    def intervals(self):
        """One row per interval report (per CPU for interval report lines)."""
        return self.table("intervals")

    def to_parquet(self, path, table="tasks"):
        """Write a results table to a Parquet file (pyarrow)."""
        return self.table(table).to_parquet(path, index=False)

    def __reduce__(self):
        return (Results.from_json, (self.to_json(),))

    def __repr__(self):
        return f"Results(kind={self.kind!r}, seed={self.seed}, duration_ns={self.duration_ns})"


def results_frame(results, table="tasks"):
    """Table ``table`` of several results documents (a sweep's) as one DataFrame, rows in order."""
    return _frame(_rtvirt.results_columns(table, [r._native for r in results]))


def plan(
    scenario,
    rho=None,
    model="prm",
    heuristic="bfd",
    host_model=None,
    cores=None,
    budget="cantelli",
    host=None,
    quantile=None,
    hard=False,
):
    return Plan(_rtvirt.plan(scenario, rho, model, heuristic, host_model, cores, budget, host, quantile, hard))


plan.__doc__ = _rtvirt.plan.__doc__


def simulate(scenario, plan=None, duration=None, seed=None):
    if plan is not None and not isinstance(plan, Plan):
        raise input_error("plan", f"{type(plan).__name__}: expected an rtvirt.Plan (from rtvirt.plan)")
    native = _rtvirt.simulate(scenario, None if plan is None else plan._native, duration, seed)
    return Results(native)


simulate.__doc__ = _rtvirt.simulate.__doc__


def load(path):
    """Read any rtvirt JSON file: a results document -> Results; an array of them (a sweep's or
    ``vm matrix``'s output) -> list of Results; a plan -> Plan; any other rtvirt document (audit,
    host model...) -> the parsed JSON (dict)."""
    import json
    import os

    kind, value = _rtvirt.load(os.fspath(path))
    if kind == "results":
        return Results(value)
    if kind == "results_list":
        return [Results(v) for v in value]
    if kind == "plan":
        return Plan(value)
    return json.loads(value)


from ._sweep import sweep  # noqa: E402  (uses the classes above)


def tail(samples_ns, duration, horizons=("1h", "12h"), confidence=0.95):
    """The tail of latency samples in time order (``rtvirt tail``): peaks over a threshold with a
    generalised Pareto fit, the tests that say whether it applies, and per horizon the return
    level with its confidence interval, as the dict of ``rtvirt tail --format json``
    (``rtvirt.tail/v1``). ``duration``: the wall time the samples cover ("10min");
    ``horizons``: duration strings. ``tail_levels(report)`` gives the return levels as a DataFrame."""
    import json

    return json.loads(_rtvirt.tail([int(x) for x in samples_ns], duration, list(horizons), confidence))


def tail_levels(report):
    """The return levels of a ``tail()`` report as a DataFrame: horizon_ns, estimate_ns, ci_low_ns,
    ci_high_ns, confidence, method (no rows when the model does not apply)."""
    import pandas as pd

    columns = ["horizon_ns", "estimate_ns", "ci_low_ns", "ci_high_ns", "confidence", "method"]
    return pd.DataFrame(report["return_levels"], columns=columns)
