"""Scenario, plan, simulate and load: the same engine and documents as the command line."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

import rtvirt


def test_scenario_from_file_text_and_dict_are_the_same_scenario(root):
    path = root / "scenarios" / "default.toml"
    a = rtvirt.Scenario.load(path)
    b = rtvirt.Scenario.from_toml(path.read_text())
    assert a.name == b.name == "default"
    assert a.guests == b.guests == ["vm1", "vm2", "vm3"]
    d = {
        "name": "tiny",
        "host": {"cores": 1},
        "guest": [{"name": "g1", "scheduler": "edf", "task": [{"name": "t1", "period": "10ms", "wcet": "1ms"}]}],
    }
    s = rtvirt.Scenario.from_dict(d)
    assert s.guests == ["g1"]
    again = rtvirt.Scenario.from_toml(s.to_toml())
    assert rtvirt.simulate(again, duration="1s").to_json() == rtvirt.simulate(s, duration="1s").to_json()


def test_plan_is_the_command_lines_plan(root, cli):
    scenario = root / "scenarios" / "default.toml"
    plan = rtvirt.plan(rtvirt.Scenario.load(scenario), rho=0.9, model="edp", heuristic="ffd")
    printed = cli("plan", scenario, "--rho", "0.9", "--model", "edp", "--heuristic", "ffd", "--format", "json")
    assert plan.to_json() + "\n" == printed.stdout
    assert plan.feasible and plan.cores_used >= 1


def test_simulate_is_byte_identical_to_the_command_line(root, cli, tmp_path):
    scenario = root / "scenarios" / "default.toml"
    s = rtvirt.Scenario.load(scenario)
    plan = rtvirt.plan(s, rho=0.9)
    (tmp_path / "plan.json").write_text(plan.to_json())
    results = rtvirt.simulate(s, plan=plan, duration="2s", seed=7)
    printed = cli("simulate", scenario, "--plan", tmp_path / "plan.json", "--duration", "2s", "--seed", "7",
                  "--format", "json")
    assert results.to_json() + "\n" == printed.stdout
    # and the network-path simulator, for a scenario with [net]
    net = root / "scenarios" / "seeds1_exclusive.toml"
    r = rtvirt.simulate(rtvirt.Scenario.load(net), duration="700ms", seed=2)
    printed = cli("simulate", net, "--duration", "700ms", "--seed", "2", "--format", "json")
    assert r.to_json() + "\n" == printed.stdout
    assert len(r.flows()) >= 1


def test_frames_have_typed_columns():
    s = rtvirt.Scenario.from_toml(open(_default()).read())
    r = rtvirt.simulate(s, duration="1s", seed=1)
    tasks = r.tasks()
    assert len(tasks) == 15
    assert isinstance(tasks["guest"].dtype, pd.CategoricalDtype)
    assert isinstance(tasks["task"].dtype, pd.CategoricalDtype)
    assert tasks["response_max_ns"].dtype == "Int64"  # nullable int64: a failed sweep cell has none
    assert tasks["dsr"].dtype == np.float64
    assert (tasks["response_max_ns"] >= tasks["response_p50_ns"]).all()
    # the sums are the document's
    doc = r.to_json()
    assert f'"jobs": {int(tasks["jobs"].iloc[0])}' in doc
    plan = rtvirt.plan(s).guests()
    assert plan["period_ns"].dtype == np.int64 and plan["budget_ns"].dtype == np.int64
    assert list(plan["guest"]) == ["vm1", "vm2", "vm3"]
    for table in rtvirt.RESULTS_TABLES:
        frame = r.table(table)
        assert list(frame.columns[:3]) == ["scenario", "rho", "seed"] and frame.columns[-1] == "error"
    assert len(r.cores()) == 2 and len(r.guests()) == 3 and len(r.latency()) == 15


def _default():
    from pathlib import Path

    return Path(__file__).resolve().parents[3] / "scenarios" / "default.toml"


@pytest.mark.parametrize(
    "keywords, flags",
    [
        ({"host": "stock"}, ["--host", "stock"]),
        ({"host": "preempt-rt", "quantile": 0.95}, ["--host", "preempt-rt", "--quantile", "0.95"]),
        ({"host": "stock", "hard": True}, ["--host", "stock", "--hard"]),
        ({"host": "this"}, ["--host", "this"]),
    ],
)
def test_plan_for_a_named_host_and_promise_is_the_command_lines_plan(root, cli, keywords, flags):
    scenario = root / "scenarios" / "fp-guests.toml"
    plan = rtvirt.plan(rtvirt.Scenario.load(scenario), **keywords)
    printed = cli("plan", scenario, *flags, "--format", "json", check=False)
    assert plan.to_json() + "\n" == printed.stdout
    settings = json.loads(plan.to_json())["settings"]
    assert settings["host"].startswith({"stock": "preset stock", "preempt-rt": "preset preempt-rt"}.get(keywords["host"], "this host"))
    assert settings["guarantee"] == ("hard" if keywords.get("hard") else f"quantile {keywords.get('quantile', 0.99)}")


def test_plan_rejects_a_bad_host_or_promise_by_name(root):
    scenario = rtvirt.Scenario.load(root / "scenarios" / "default.toml")
    with pytest.raises(rtvirt.InputError, match="host.*expected this, ideal or a preset"):
        rtvirt.plan(scenario, host="mainframe")
    with pytest.raises(rtvirt.InputError, match="quantile.*expected 0.5 <= Q < 1"):
        rtvirt.plan(scenario, quantile=1.5)
    with pytest.raises(rtvirt.InputError, match="hard.*cannot be combined"):
        rtvirt.plan(scenario, quantile=0.9, hard=True)


def test_load_reads_results_arrays_plans_and_other_documents(root, cli, tmp_path):
    scenario = root / "scenarios" / "default.toml"
    one = tmp_path / "r.json"
    one.write_text(cli("simulate", scenario, "--duration", "1s", "--format", "json").stdout)
    loaded = rtvirt.load(one)
    assert isinstance(loaded, rtvirt.Results) and loaded.to_json() + "\n" == one.read_text()
    plan = tmp_path / "p.json"
    plan.write_text(cli("plan", scenario, "--format", "json").stdout)
    assert isinstance(rtvirt.load(plan), rtvirt.Plan)
    array = tmp_path / "a.json"
    array.write_text("[" + one.read_text() + "," + one.read_text() + "]")
    assert [r.seed for r in rtvirt.load(array)] == [1, 1]
    other = tmp_path / "o.json"
    other.write_text('{"schema": "rtvirt.audit/v1", "checks": []}')
    assert rtvirt.load(other) == {"schema": "rtvirt.audit/v1", "checks": []}
    with pytest.raises(rtvirt.InputError) as e:
        rtvirt.load(tmp_path / "missing.json")
    assert "missing.json" in str(e.value)


def test_documents_pickle(root):
    s = rtvirt.Scenario.load(root / "scenarios" / "default.toml")
    p = rtvirt.plan(s)
    r = rtvirt.simulate(s, plan=p, duration="1s")
    assert pickle.loads(pickle.dumps(s)).to_toml() == s.to_toml()
    assert pickle.loads(pickle.dumps(p)).to_json() == p.to_json()
    assert pickle.loads(pickle.dumps(r)).to_json() == r.to_json()


def test_help_explains_the_arguments():
    assert "rho" in rtvirt.plan.__doc__ and "heuristic" in rtvirt.plan.__doc__
    assert "duration" in rtvirt.simulate.__doc__
    assert "engine" in rtvirt.sweep.__doc__
