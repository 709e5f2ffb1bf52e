"""Bad input from Python: rtvirt.InputError naming the field (the command line's located message
for files), never a crash of the interpreter."""

import pytest

import rtvirt

TINY = {
    "name": "tiny",
    "host": {"cores": 1},
    "guest": [{"name": "g1", "scheduler": "edf", "task": [{"name": "t1", "period": "10ms", "wcet": "1ms"}]}],
}


def with_task(**fields):
    d = {**TINY, "guest": [{"name": "g1", "scheduler": "edf", "task": [{"name": "t1", "period": "10ms", "wcet": "1ms", **fields}]}]}
    return d


def test_file_errors_carry_the_command_lines_located_message(tmp_path, cli):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[host]\ncores = 1\n[[guest]]\nname = "g"\nscheduler = "edf"\n[[guest.task]]\n'
                   'name = "t"\nperiod = "10ms"\nwcet = "20qs"\n')
    with pytest.raises(rtvirt.InputError) as e:
        rtvirt.Scenario.load(bad)
    printed = cli("plan", bad, check=False)
    assert printed.returncode == 2
    assert printed.stderr.strip() == f"rtvirt: error: {e.value}"
    assert (e.value.file, e.value.line, e.value.field) == (str(bad), 10, "guest[0].task[0].wcet")
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "d, field, words",
    [
        (with_task(wcet=1.5), "guest[0].task[0].wcet", "float"),
        (with_task(bogus=1), "guest[0].task[0].bogus", "unknown field"),
        ({**TINY, "guest": [{"name": "g1", "scheduler": "edf", "task": [{"name": "t1", "period": None, "wcet": "1ms"}]}]},
         "guest[0].task[0]", "missing field `period`"),
        ({**TINY, "host": {"cores": object()}}, "host.cores", "expected a string, number"),
        ({**TINY, "host": {"cores": 2**70}}, "host.cores", "out of range"),
        ({**TINY, 3: "x"}, None, "string keys"),
        ({**TINY, "guest": "g1"}, "guest", None),
    ],
)
def test_dict_errors_name_the_field(d, field, words):
    with pytest.raises(rtvirt.InputError) as e:
        rtvirt.Scenario.from_dict(d)
    if field is not None:
        assert e.value.field == field, str(e.value)
        assert f"field `{field}`" in str(e.value)
    if words is not None:
        assert words in str(e.value)
    assert e.value.line is None  # lines of generated TOML would mean nothing to the caller


def test_argument_errors_name_the_argument():
    s = rtvirt.Scenario.from_dict(TINY)
    with pytest.raises(rtvirt.InputError, match=r"field `duration`: float 1.5: expected a duration string"):
        rtvirt.simulate(s, duration=1.5)
    with pytest.raises(rtvirt.InputError, match=r"field `duration`"):
        rtvirt.simulate(s, duration="10 parsecs")
    with pytest.raises(rtvirt.InputError, match=r"field `rho`: 1.5"):
        rtvirt.plan(s, rho=1.5)
    with pytest.raises(rtvirt.InputError, match=r"field `model`: \"xyz\": expected one of prm, edp"):
        rtvirt.plan(s, model="xyz")
    with pytest.raises(rtvirt.InputError, match=r"field `plan`"):
        rtvirt.simulate(s, plan="plan.json")
    with pytest.raises(TypeError):
        rtvirt.simulate(s, seed=1.5)
    with pytest.raises(rtvirt.InputError, match=r"field `table`"):
        rtvirt.simulate(s, duration="1s").table("task")
    with pytest.raises(rtvirt.InputError, match=r"field `engine`"):
        rtvirt.sweep({"scenarios": [s]}, engine="spark")


def test_sweep_dict_errors_name_the_field():
    s = rtvirt.Scenario.from_dict(TINY)
    cases = [
        ({"scenarios": [s], "rho": [1.5]}, "rho"),
        ({"scenarios": [s], "duration": 1.0}, "duration"),
        ({"scenarios": [s], "seed": [1]}, "seed"),
        ({"scenarios": [s, 3]}, "scenarios[1]"),
        ({"scenarios": "s.toml"}, "scenarios"),
        ({"scenarios": ["no/such/file.toml"]}, "scenarios[0]"),
    ]
    for d, field in cases:
        with pytest.raises(rtvirt.InputError) as e:
            rtvirt.sweep(d, progress=False)
        assert e.value.field == field or f"field `{field}`" in str(e.value), (d, str(e.value))
