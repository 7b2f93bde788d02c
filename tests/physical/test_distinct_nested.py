"""count(DISTINCT x) OVER a frame of STRUCT and ARRAY values (Spark refuses DISTINCT over a window;
overwindow computes it as DuckDB does), against DuckDB in process: NULL values left out, NULL
fields and elements equal to each other, NaN equal to NaN, -0.0 equal to 0.0."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow

NUMBER = st.sampled_from([None, 1.0, 2.0, -0.0, 0.0, math.nan])
STRUCTS = st.one_of(st.none(), st.fixed_dictionaries({"a": NUMBER, "b": st.sampled_from([None, "x", "y"])}))
LISTS = st.one_of(st.none(), st.lists(NUMBER, max_size=2))
FRAMES = ["ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(STRUCTS, LISTS), max_size=25), st.sampled_from(FRAMES))
def test_count_distinct_of_nested_values_is_duckdb_s(rows, frame):
    t = pa.table(
        {
            "t": pa.array(range(len(rows)), pa.int64()),
            "s": pa.array([r[0] for r in rows], pa.struct([("a", pa.float64()), ("b", pa.string())])),
            "l": pa.array([r[1] for r in rows], pa.list_(pa.float64())),
        }
    )
    for column in ("s", "l"):
        call = f"count(DISTINCT {column}) OVER (ORDER BY t {frame})"
        ours = overwindow.evaluate(t, f"{call} AS r").sort_by("t").column("r").to_pylist()
        theirs = [r[0] for r in duckdb.sql(f"SELECT {call} FROM t ORDER BY t").fetchall()]
        assert ours == theirs, call
