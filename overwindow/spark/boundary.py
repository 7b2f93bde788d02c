"""Rows across the pandas boundary of Spark's stateful operators: the pandas chunks a UDF receives as
Arrow tables, and the Arrow tables it emits as the pandas frames Spark takes back.

The only module that relies on pandas internals (``DataFrame._get_column_array``,
``DataFrame._from_arrays``): they save more than the conversion itself costs on the few hundred rows
a key gets per call. Each has a public fallback, taken when the internal is missing or when
``PANDAS_INTERNALS`` is False (tests force it so and compare).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pyarrow as pa

# False: take only the public pandas API (the fallback every internal has)
PANDAS_INTERNALS = True


def to_arrow(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """A UDF's pandas chunk as Arrow, column by column. O(rows).

    Spark builds a fresh frame per key and call (``pd.concat`` of one Series per column), and on such
    a frame ``frame[name]`` costs ~20 us a column building a Series, ``pa.Table.from_pandas`` ~0.2 ms
    in metadata handling: more than the conversion of the few hundred rows a key gets. So columns are
    read by position with pandas' ``_get_column_array`` (internal, in pandas 1.3 to 2.x; the public
    path where it is missing or names repeat), numpy-typed ones as numpy (a naive timestamp column's
    DatetimeArray converts three times faster so).

    >>> s = pa.schema([("t", pa.timestamp("us")), ("x", pa.float64())])
    >>> to_arrow(pd.DataFrame({"x": [1.5], "t": pd.to_datetime(["2024-01-01"])}), s).to_pylist()
    [{'t': datetime.datetime(2024, 1, 1, 0, 0), 'x': 1.5}]
    """
    get = getattr(frame, "_get_column_array", None) if PANDAS_INTERNALS else None
    found = _positions(tuple(frame.columns), tuple(schema.names)) if get is not None else None
    if found is None:
        arrays = [frame[f.name].to_numpy() for f in schema]
    else:
        arrays = [get(i) for i in found]
    return pa.Table.from_arrays(
        [
            pa.array(np.asarray(a) if isinstance(a.dtype, np.dtype) else a, type=f.type, from_pandas=True)
            for a, f in zip(arrays, schema)
        ],
        schema=schema,
    )


@functools.lru_cache(maxsize=64)
def _positions(columns: tuple, names: tuple) -> tuple[int, ...] | None:
    """Where each of ``names`` is among a frame's ``columns`` (None if some name repeats)."""
    index = pd.Index(columns)
    if not index.is_unique:
        return None
    found = index.get_indexer(names).tolist()
    if -1 in found:
        raise KeyError(f"columns {[n for n, i in zip(names, found) if i < 0]} missing from {list(columns)}")
    return tuple(found)


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """The rows to hand back to Spark, column by column as numpy arrays (naive timestamps too:
    datetime64 of their unit) without copies. O(rows).

    Table.to_pandas, and DataFrame's handling of a dict (a new column Index, each array checked and
    wrapped), cost more than the conversion for the small tables one key emits per call: pandas'
    ``DataFrame._from_arrays`` (internal, in pandas 0.23 to 2.x) with the column Index built once
    takes a third less. DATE and time-zone columns take pandas' own conversion and the dict path.

    >>> to_pandas(pa.table({"t": pa.array([0], pa.timestamp("us")), "x": [1.5]})).dtypes.astype(str).tolist()
    ['datetime64[us]', 'float64']
    """
    names = tuple(table.column_names)
    fast = PANDAS_INTERNALS and hasattr(pd.DataFrame, "_from_arrays")
    if fast and not any(map(_pandas_typed, table.schema.types)):
        return pd.DataFrame._from_arrays(
            [col.to_numpy() for col in table.columns],
            columns=_column_index(names),
            index=pd.RangeIndex(table.num_rows),
            verify_integrity=False,
        )
    return pd.DataFrame(
        {
            name: col.to_pandas() if _pandas_typed(col.type) else col.to_numpy()
            for name, col in zip(names, table.columns)
        },
        copy=False,
    )


def _pandas_typed(t: pa.DataType) -> bool:
    """DATE and time-zone columns: converted by pandas (numpy has no type for them)."""
    return pa.types.is_date(t) or bool(getattr(t, "tz", None))


@functools.lru_cache(maxsize=64)
def _column_index(names: tuple) -> pd.Index:
    return pd.Index(names)
