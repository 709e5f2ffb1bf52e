"""Columns from the Rust tables (``rtvirt_model::tables``) -> pandas DataFrames with typed columns:
integers as ``int64`` (nullable ``Int64`` where a value may be missing), floats as ``float64``,
names as ``category``, free text as ``str``, flags as ``boolean``.

numpy and pandas are imported when a frame is first built, not with the package: a Ray worker
that only runs cells (``rtvirt._sweep._run_cells``) never loads them, which is most of a fresh
worker's start-up."""


def _series(kind, nullable, values):
    import numpy as np
    import pandas as pd

    if kind == "int":
        if nullable:
            return pd.array(values, dtype="Int64")
        return np.asarray(values, dtype=np.int64)
    if kind == "float":
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    if kind == "category":
        return pd.Categorical(values)
    if kind == "bool":
        return pd.array(values, dtype="boolean")
    return pd.array(values, dtype="str")


def frame(columns):
    """A DataFrame of ``[(name, kind, nullable, values)]``."""
    import pandas as pd

    return pd.DataFrame({name: _series(kind, nullable, values) for name, kind, nullable, values in columns})
