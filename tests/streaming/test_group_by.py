"""The GROUP BY machine: after every micro-batch, its changelog applied by group key equals DuckDB's
GROUP BY over the live rows (random inserts, deletes and updates by row key; NULL keys; groups that
empty and come back)."""

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.logical.parse import parse_window
from overwindow.streaming.group_by import OP, GroupBy

SCHEMA = pa.schema(
    [("id", pa.int64()), ("k", pa.string()), ("j", pa.int64()), ("x", pa.int64()), ("op", pa.string())]
)
AGGREGATES = {
    "s": ("sum(x) OVER () AS s", "sum(x)"),
    "n": ("count(*) OVER () AS n", "count(*)"),
    "c": ("count(x) OVER () AS c", "count(x)"),
    "lo": ("min(x) OVER () AS lo", "min(x)"),
    "hi": ("max(x) OVER () AS hi", "max(x)"),
    "a": ("avg(x) OVER () AS a", "avg(x)"),
}


@st.composite
def batches(draw):
    """Micro-batches of changes over ids 0-11: inserts of new ids, updates and deletes of live ones
    (a key may change in an update: the row moves to another group)."""
    live: dict[int, dict] = {}
    out = []
    for _ in range(draw(st.integers(1, 5))):
        batch = []
        for _ in range(draw(st.integers(0, 6))):
            rid = draw(st.integers(0, 11))
            row = {
                "id": rid,
                "k": draw(st.sampled_from(["a", "b", None])),
                "j": draw(st.sampled_from([0, 1, None])),
                "x": draw(st.one_of(st.none(), st.integers(-5, 5))),
            }
            if rid in live and draw(st.booleans()):
                batch.append({**live.pop(rid), "op": "delete"})
            else:
                batch.append({**row, "op": "update" if rid in live else "insert"})
                live[rid] = row
        out.append(batch)
    return out


@settings(max_examples=40, deadline=None)
@given(batches())
def test_the_changelog_equals_duckdb_group_by_after_every_batch(changes):
    m = GroupBy(
        SCHEMA,
        ("k", "j"),
        [parse_window(sql) for sql, _ in AGGREGATES.values()],
        row_key=("id",),
        op_column="op",
    )
    state, table, live = None, {}, {}
    for batch in changes:
        step = m.step(state, pa.Table.from_pylist(batch, schema=SCHEMA) if batch else None)
        state = step.state
        for r in step.output.to_pylist():
            key = (r["k"], r["j"])
            if r[OP] == "delete":
                assert key in table
                del table[key]
            else:
                assert (r[OP] == "insert") == (key not in table)
                table[key] = r
        for r in batch:  # the live rows: the last change of an id wins
            if r["op"] == "delete":
                live.pop(r["id"], None)
            else:
                live[r["id"]] = r
        con = duckdb.connect()
        con.register("live_rows", pa.Table.from_pylist(list(live.values()), schema=SCHEMA))
        select = ", ".join(f"{agg} AS {name}" for name, (_, agg) in AGGREGATES.items())
        want = con.sql(f"SELECT k, j, {select} FROM live_rows GROUP BY k, j").fetchall()
        assert len(want) == len(table)
        for k, j, *values in want:
            got = table[(k, j)]
            for name, v in zip(AGGREGATES, values):
                assert got[name] == pytest.approx(v) if isinstance(v, float) else got[name] == v, (name, k, j)
        assert (state is None) == (not live)


def test_types_are_the_aggregates_own_and_a_group_that_empties_is_deleted():
    schema = pa.schema(
        [("id", pa.int64()), ("day", pa.date32()), ("x", pa.decimal128(12, 2)), ("op", pa.string())]
    )
    m = GroupBy(schema, ("day",), [parse_window("sum(x) OVER () AS s"), parse_window("avg(x) OVER () AS a")],
                row_key=("id",), op_column="op")  # fmt: skip
    assert m.output_schema.field("s").type == pa.decimal128(22, 2)  # Spark's sum of DECIMAL(12, 2)
    assert m.output_schema.field("a").type == pa.decimal128(16, 6)
    first = m.step(
        None,
        pa.table(
            {
                "id": [1],
                "day": pa.array([0], pa.date32()),
                "x": pa.array([1], pa.decimal128(12, 2)),
                "op": ["insert"],
            }
        ),
    )
    gone = m.step(
        first.state,
        pa.table(
            {
                "id": [1],
                "day": pa.array([0], pa.date32()),
                "x": pa.array([1], pa.decimal128(12, 2)),
                "op": ["delete"],
            }
        ),
    )
    assert gone.output.column(OP).to_pylist() == ["delete"] and gone.empty


def test_insert_only_input_keeps_no_identity():
    m = GroupBy(
        pa.schema([("k", pa.int64()), ("x", pa.float64())]), ("k",), [parse_window("sum(x) OVER () AS s")]
    )
    step = m.step(None, pa.table({"k": [1, 1, None], "x": [0.5, math.nan, 2.0]}))
    got = {r["k"]: r["s"] for r in step.output.to_pylist()}
    assert math.isnan(got[1]) and got[None] == 2.0
    assert np.array_equal(m.step(step.state, None).output.num_rows, 0)


def test_an_unknown_op_and_a_delete_of_a_row_not_held_are_set_aside_and_counted():
    """Neither changes a group; both are kept aside with their reason and counted (never dropped
    silently); an insert and a delete of one id in one batch is no such delete."""
    m = GroupBy(SCHEMA, ("k",), [parse_window("sum(x) OVER () AS s")], row_key=("id",), op_column="op")
    first = m.step(None, pa.Table.from_pylist([{"id": 1, "k": "a", "x": 5, "op": "c"}], schema=SCHEMA))
    rows = [
        {"id": 1, "k": "a", "x": 7, "op": "upsert"},  # no known operation
        {"id": 9, "k": "a", "x": 3, "op": "d"},  # never inserted
        {"id": 4, "k": "a", "x": 2, "op": "c"},
        {"id": 4, "k": "a", "x": 2, "op": "d"},  # inserted in this batch: deleted as it says
    ]
    step = m.step(first.state, pa.Table.from_pylist(rows, schema=SCHEMA))
    assert step.output.num_rows == 0  # the group's sum is still 5
    assert step.counters.bad_rows == 2
    assert step.aside.rows.column("id").to_pylist() == [1, 9]
    assert step.aside.reasons[0] == "no known operation 'upsert' in op"
    assert "does not hold" in step.aside.reasons[1]
