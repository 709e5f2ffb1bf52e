"""`rtvirt export` (the command line, for users without Python) writes the same tables as the
Python package's DataFrames: CSV and Parquet compared value for value."""

import pandas as pd
import pytest

import rtvirt


@pytest.fixture(scope="module")
def documents(root, cli, tmp_path_factory):
    """A sweep's output (with a failed cell) and a single simulation, as the command line wrote them."""
    folder = tmp_path_factory.mktemp("export")
    heavy = folder / "heavy.toml"
    heavy.write_text(
        'name = "heavy"\n[host]\ncores = 1\n[[guest]]\nname = "g1"\nscheduler = "edf"\n[[guest.task]]\nname = "t1"\n'
        'period = "10ms"\nwcet = "9800us"\nexec = { dist = "normal", mean = "5ms", sd = "1ms" }\n'
    )
    sweep = folder / "s.sweep.toml"
    sweep.write_text(f'scenarios = ["{root}/scenarios/sim_seeds5.toml", "heavy.toml"]\nrho = [0.5, 0.999]\n'
                     'seeds = [1, 2]\nduration = "300ms"\n')
    swept = folder / "sweep.json"
    swept.write_text(cli("simulate", "--sweep", sweep, "--format", "json", check=False).stdout)
    single = folder / "single.json"
    single.write_text(cli("simulate", root / "scenarios" / "default.toml", "--duration", "1s", "--format",
                          "json").stdout)
    net = folder / "net.json"
    net.write_text(cli("simulate", root / "scenarios" / "seeds1_exclusive.toml", "--duration", "700ms",
                       "--format", "json").stdout)
    return folder, [swept, single, net]


def python_frame(paths, table):
    documents = []
    for path in paths:
        loaded = rtvirt.load(path)
        documents.extend(loaded if isinstance(loaded, list) else [loaded])
    return rtvirt.results_frame(documents, table)


def comparable(frame):
    """Values only: categories and nullable dtypes as plain objects, missing values as None."""
    return frame.astype(object).where(frame.notna(), None).reset_index(drop=True)


@pytest.mark.parametrize("table", rtvirt.RESULTS_TABLES)
def test_parquet_export_is_the_python_frame(documents, cli, table):
    folder, paths = documents
    out = folder / f"{table}.parquet"
    cli("export", *paths, "--to", "parquet", "--table", table, "-o", out)
    exported = pd.read_parquet(out)
    ours = python_frame(paths, table)
    assert list(exported.columns) == list(ours.columns)
    assert comparable(exported).equals(comparable(ours))
    for name in ("scenario",) + (("guest", "task") if table == "tasks" else ()):
        assert isinstance(exported[name].dtype, pd.CategoricalDtype), name
    if table == "tasks":
        assert exported["error"].notna().sum() == 2 and len(exported) > 40


@pytest.mark.parametrize("table", ["tasks", "cores", "flows", "latency"])
def test_csv_export_is_the_python_frame(documents, cli, table):
    folder, paths = documents
    printed = cli("export", *paths, "--to", "csv", "--table", table).stdout
    out = folder / f"{table}.csv"
    out.write_text(printed)
    ours = python_frame(paths, table)
    dtypes = {c: ("str" if str(ours[c].dtype) in ("category", "str") else str(ours[c].dtype)) for c in ours.columns}
    exported = pd.read_csv(out, dtype=dtypes, keep_default_na=False, na_values=[""])
    assert list(exported.columns) == list(ours.columns)
    for column in ours.columns:
        if ours[column].dtype.kind == "f":  # floats written shortest-exact: read back equal
            pd.testing.assert_series_equal(exported[column], ours[column], check_exact=True, check_names=False)
        else:
            assert comparable(exported[[column]]).equals(comparable(ours[[column]].astype(dtypes[column]))), column


def test_export_refuses_bad_input(documents, cli, root):
    folder, paths = documents
    plan = folder / "plan.json"
    plan.write_text(cli("plan", root / "scenarios" / "default.toml", "--format", "json").stdout)
    done = cli("export", plan, "--to", "csv", check=False)
    assert done.returncode == 2 and "plan.json" in done.stderr and "rtvirt.results/v1" in done.stderr
    done = cli("export", paths[0], "--to", "parquet", check=False)
    assert done.returncode == 2 and "--output" in done.stderr
    done = cli("export", paths[0], "--to", "csv", "-o", paths[0], check=False)
    assert done.returncode == 2
