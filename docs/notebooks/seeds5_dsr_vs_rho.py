# %% [markdown]
# # DSR against rho, per mean execution time (Burns 2014), with the rtvirt Python package
#
# Three single-vCPU guests share one core; each runs EDF over the same Baker *light* periodic task
# set (WCET uniform in 1%..10% of the period, periods from {10, 20, 25, 40, 50, 100} ms) with
# normal execution times, SD = WCET/6 and mean 30%, 50% or 70% of the WCET (one guest per mean).
# Each task's budget is the Cantelli bound at probability rho; the planner gives each guest its
# least PRM interface; the simulator runs the guests under SCHED_DEADLINE with those servers.
# Plotted: the deadline satisfaction ratio (DSR) per guest against rho.
#
# Run as a script (`python docs/notebooks/seeds5_dsr_vs_rho.py`) or cell by cell (`# %%` cells:
# VS Code, Jupyter with jupytext). RTVIRT_NOTEBOOK_SMALL=1 runs a small grid (the tests do);
# RTVIRT_NOTEBOOK_ENGINE=local runs the sweep without Ray; RTVIRT_NOTEBOOK_OUT names the figure.

# %%
import os

import matplotlib

matplotlib.use("Agg")  # files, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import rtvirt  # noqa: E402

SMALL = os.environ.get("RTVIRT_NOTEBOOK_SMALL") == "1"
ENGINE = os.environ.get("RTVIRT_NOTEBOOK_ENGINE", "ray")
OUT = os.environ.get("RTVIRT_NOTEBOOK_OUT", "seeds5_dsr_vs_rho.png")
RHOS = [0.3, 0.6, 0.9] if SMALL else [round(0.1 * i, 1) for i in range(1, 10)]
SEEDS = {"first": 1, "count": 2 if SMALL else 5}
DURATION = "500ms" if SMALL else "20s"
MEANS = [0.3, 0.5, 0.7]

# %% [markdown]
# ## Baker light task sets
# One task set (seeded), given to three guests that differ only in the mean execution time.

# %%
PERIODS_MS = [10, 20, 25, 40, 50, 100]


def baker_light(seed, tasks=5):
    """(period_us, wcet_us) of `tasks` light tasks: WCET uniform in 1%..10% of the period."""
    rng = np.random.default_rng(seed)
    periods = rng.choice(PERIODS_MS, size=tasks) * 1000
    wcets = np.maximum(1, np.round(periods * rng.uniform(0.01, 0.10, size=tasks))).astype(int)
    return list(zip(periods.tolist(), wcets.tolist()))


def scenario(task_set):
    guests = []
    for mean in MEANS:
        tasks = [
            {
                "name": f"t{i + 1}",
                "period": f"{period}us",
                "wcet": f"{wcet}us",
                "exec": {"dist": "normal", "mean": f"{round(wcet * mean)}us", "sd": f"{max(1, round(wcet / 6))}us"},
            }
            for i, (period, wcet) in enumerate(task_set)
        ]
        guests.append({"name": f"vm{round(mean * 100)}", "scheduler": "edf",
                       "server_periods": {"min": "1ms", "max": "10ms", "step": "1ms"}, "task": tasks})
    return rtvirt.Scenario.from_dict({"name": "baker_light", "host": {"cores": 1, "bandwidth_cap": 1.0},
                                      "guest": guests})


study = scenario(baker_light(seed=5))
study

# %% [markdown]
# ## Plans across rho
# The bandwidth each guest's server needs grows with rho (budgets approach the WCET).

# %%
plans = []
for rho in RHOS:
    frame = rtvirt.plan(study, rho=rho).guests()
    frame.insert(0, "rho", rho)
    plans.append(frame)
plans = pd.concat(plans, ignore_index=True)
print(plans.pivot(index="rho", columns="guest", values="bandwidth").round(4))

# %% [markdown]
# ## The sweep: every rho x seed, one Ray task per batch of cells

# %%
tasks = rtvirt.sweep({"scenarios": [study], "rho": RHOS, "seeds": SEEDS, "duration": DURATION}, engine=ENGINE,
                     progress=not SMALL)
failed = tasks[tasks["error"].notna()]
print(f"{len(tasks)} rows, {tasks[['rho', 'seed']].drop_duplicates().shape[0]} cells, {len(failed)} failed cells")

# %% [markdown]
# ## DSR against rho, per mean execution time
# DSR of a guest = (jobs - misses) / jobs over its tasks and every seed.

# %%
ran = tasks[tasks["error"].isna()]
per_guest = ran.groupby(["guest", "rho"], observed=True)[["jobs", "misses"]].sum()
dsr = (1 - per_guest["misses"] / per_guest["jobs"]).unstack("guest")
print(dsr.round(5))

figure, axes = plt.subplots(figsize=(6, 4))
for guest in dsr.columns:
    axes.plot(dsr.index, dsr[guest], marker="o", label=f"{guest} (mean {guest[2:]}% of WCET)")
axes.set_xlabel("rho (probability a job fits its budget)")
axes.set_ylabel("deadline satisfaction ratio")
axes.set_title("DSR vs rho, Baker light task sets (Burns 2014)")
axes.legend()
figure.tight_layout()
figure.savefig(OUT, dpi=100)
print(f"figure: {OUT}")
