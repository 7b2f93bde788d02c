"""The GROUP BY machine: after every micro-batch, its changelog applied by group key equals DuckDB's
GROUP BY over the live rows (random inserts, deletes and updates by row key; NULL keys; groups that
empty and come back); with each group's previous aggregates and ``having_changes``, it equals
DuckDB's GROUP BY ... HAVING."""

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.errors import WindowSpecError
from overwindow.logical.parse import parse_window
from overwindow.streaming.group_by import ASIDE, OP, GroupBy, having_changes, was

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
@given(batches(), st.randoms(use_true_random=False))
def test_the_changelog_equals_duckdb_group_by_after_every_batch(changes, random):
    """Also with each batch's rows shuffled and their source order (``source_order``) beside them:
    the same changelog, step by step."""
    aggregates = [parse_window(sql) for sql, _ in AGGREGATES.values()]
    m = GroupBy(SCHEMA, ("k", "j"), aggregates, row_key=("id",), op_column="op")
    placed = SCHEMA.append(pa.field("at", pa.int64()))
    ordered = GroupBy(placed, ("k", "j"), aggregates, row_key=("id",), op_column="op", source_order=("at",))
    state, shuffled_state, table, live = None, None, {}, {}
    for batch in changes:
        step = m.step(state, pa.Table.from_pylist(batch, schema=SCHEMA) if batch else None)
        state = step.state
        given = [dict(r, at=n) for n, r in enumerate(batch)]
        random.shuffle(given)
        shuffled = ordered.step(shuffled_state, pa.Table.from_pylist(given, schema=placed) if batch else None)
        shuffled_state = shuffled.state
        assert sorted(shuffled.output.to_pylist(), key=str) == sorted(step.output.to_pylist(), key=str)
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


# HAVING conditions: DuckDB's SQL of the groups kept, and the condition on a group's aggregates as
# Spark would give it (True, False or NULL as False; None: computing it failed on the group)
HAVING = [
    ("count(*) > 1", lambda a: a["n"] > 1),
    ("sum(x) IS NULL", lambda a: a["s"] is None),
    ("sum(x) >= 0", lambda a: a["s"] is not None and a["s"] >= 0),
    ("min(x) < max(x) OR count(x) = 0", lambda a: a["c"] == 0 or a["lo"] < a["hi"]),
    ("count(*) > 1 AND count(*) <> 2", lambda a: None if a["n"] == 2 else a["n"] > 1),  # fails at n = 2
]


@settings(max_examples=40, deadline=None)
@given(batches(), st.sampled_from(HAVING))
def test_the_changelog_with_previous_aggregates_through_having_changes_equals_duckdb_having(changes, having):
    """Each change of the changelog with ``previous`` mapped by ``having_changes`` (the condition
    on the group's previous and new aggregates) and applied by group key: an insert only of a group
    not kept, an update or delete only of one kept; after every batch the kept groups are DuckDB's
    GROUP BY ... HAVING over the live rows, with its aggregates, and the groups set aside are the
    live ones the condition fails on."""
    sql, condition = having
    m = GroupBy(SCHEMA, ("k", "j"), [parse_window(s) for s, _ in AGGREGATES.values()], ("id",), "op",
                previous=True)  # fmt: skip
    state, table, failing, live = None, {}, set(), {}
    con = duckdb.connect()
    select = ", ".join(f"{agg} AS {name}" for name, (_, agg) in AGGREGATES.items())
    for batch in changes:
        step = m.step(state, pa.Table.from_pylist(batch, schema=SCHEMA) if batch else None)
        state = step.state
        for r in step.output.to_pylist():
            key = (r["k"], r["j"])
            before = {name: r[was(name)] for name in AGGREGATES}
            if r[OP] == "insert":
                assert all(v is None for v in before.values())
            now = condition(r) if r[OP] != "delete" else False
            changes = having_changes(r[OP], bool(condition(before)) if r[OP] != "insert" else False, now)
            (failing.add if ASIDE in changes else failing.discard)(key)
            for change in changes:
                if change == ASIDE:
                    assert key not in table
                elif change == "delete":
                    del table[key]
                else:
                    assert (change == "insert") == (key not in table)
                    table[key] = r
        for r in batch:
            if r["op"] == "delete":
                live.pop(r["id"], None)
            else:
                live[r["id"]] = r
        con.register("live_rows", pa.Table.from_pylist(list(live.values()), schema=SCHEMA))
        want = con.sql(f"SELECT k, j, {select} FROM live_rows GROUP BY k, j HAVING {sql}").fetchall()
        assert sorted(table, key=repr) == sorted(((k, j) for k, j, *_ in want), key=repr)
        for k, j, *values in want:
            got = table[(k, j)]
            for name, v in zip(AGGREGATES, values):
                assert got[name] == pytest.approx(v) if isinstance(v, float) else got[name] == v, (name, k, j)
        groups = con.sql(f"SELECT k, j, {select} FROM live_rows GROUP BY k, j").to_arrow_table().to_pylist()
        assert failing == {(g["k"], g["j"]) for g in groups if condition(g) is None}


def test_previous_aggregates_are_the_last_emitted():
    m = GroupBy(SCHEMA, ("k",), [parse_window("sum(x) OVER () AS s")], ("id",), "op", previous=True)
    rows = [{"id": 1, "k": "a", "x": 5, "op": "c"}, {"id": 2, "k": "a", "x": 1, "op": "c"}]
    first = m.step(None, pa.Table.from_pylist(rows, schema=SCHEMA))
    assert first.output.select(["s", was("s"), OP]).to_pylist() == [{"s": 6, was("s"): None, OP: "insert"}]
    second = m.step(
        first.state, pa.Table.from_pylist([{"id": 1, "k": "a", "x": 2, "op": "u"}], schema=SCHEMA)
    )
    assert second.output.select(["s", was("s"), OP]).to_pylist() == [{"s": 3, was("s"): 6, OP: "update"}]
    rows = [{"id": 1, "k": "a", "x": 2, "op": "d"}, {"id": 2, "k": "a", "x": 1, "op": "d"}]
    third = m.step(second.state, pa.Table.from_pylist(rows, schema=SCHEMA))
    assert third.output.select(["s", was("s"), OP]).to_pylist() == [{"s": 3, was("s"): 3, OP: "delete"}]


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


CLOSING = pa.schema(
    [("k", pa.string()), ("day", pa.int64()), ("close", pa.timestamp("us")), ("x", pa.int64())]
)


@st.composite
def closing_batches(draw):
    """Micro-batches of rows, each with the watermark of its step (non-decreasing, None before the
    first): times 0-59 microseconds in days of 10 (closing at the next day's start), some NULL (a
    NULL event time), rows for days the watermark passed (late), the end of input last."""
    out, watermark = [], None
    for _ in range(draw(st.integers(1, 6))):
        rows = []
        for _ in range(draw(st.integers(0, 6))):
            ts = draw(st.one_of(st.none(), st.integers(0, 59)))
            day = None if ts is None else ts // 10
            rows.append(
                {
                    "k": draw(st.sampled_from(["a", "b", None])),
                    "day": day,
                    "close": None if ts is None else (day + 1) * 10,
                    "x": draw(st.one_of(st.none(), st.integers(-5, 5))),
                }
            )
        if draw(st.booleans()):
            watermark = draw(st.integers(watermark or 0, 70))
        out.append((rows, watermark))
    return [*out, ([], math.inf)]


@settings(max_examples=60, deadline=None)
@given(closing_batches())
def test_closing_mode_emits_each_group_once_when_the_watermark_closes_it_with_duckdbs_aggregates(batches):
    """Every group comes out exactly once, at the first step whose watermark reaches its closing
    time, with DuckDB's GROUP BY over the rows it took; rows for a group already closed are counted
    late, rows of a NULL time set aside; the state holds only the open groups."""
    m = GroupBy(CLOSING, ("k", "day"), [parse_window(sql) for sql, _ in AGGREGATES.values()], closing="close")
    state, released, emitted = None, None, set()
    taken: dict = {}  # group -> the rows it took
    for rows, watermark in batches:
        step = m.step(state, pa.Table.from_pylist(rows, schema=CLOSING) if rows else None, watermark)
        state = step.state
        late = [r for r in rows if r["close"] is not None and released is not None and r["close"] <= released]
        assert step.late_rows == len(late)
        assert (len(step.aside) if step.aside else 0) == sum(r["close"] is None for r in rows)
        for r in rows:
            if r["close"] is not None and r not in late:
                taken.setdefault((r["k"], r["day"]), []).append(r)
        if watermark is not None:
            released = max(watermark, released if released is not None else watermark)
        reached = -math.inf if released is None else released
        closing = {g for g in taken if g not in emitted and (g[1] + 1) * 10 <= reached}
        out = step.output.to_pylist()
        assert sorted(((r["k"], r["day"]) for r in out), key=repr) == sorted(closing, key=repr)
        assert {r[OP] for r in out} <= {"insert"}
        emitted |= closing
        con = duckdb.connect()
        for r in out:
            group = pa.Table.from_pylist(taken[(r["k"], r["day"])], schema=CLOSING)
            con.register("group_rows", group)
            select = ", ".join(f"{agg} AS {name}" for name, (_, agg) in AGGREGATES.items())
            (want,) = con.sql(f"SELECT {select} FROM group_rows").fetchall()
            for name, v in zip(AGGREGATES, want):
                assert r[name] == pytest.approx(v) if isinstance(v, float) else r[name] == v, name
        open_groups = [g for g in taken if g not in emitted]
        # a state stays once a watermark came: the watermark it closed at tells late rows
        assert (state is None) == (not open_groups and released is None)
        assert step.wakeup == min(((g[1] + 1) * 10 for g in open_groups), default=None)
        if open_groups:
            assert step.counters.state_rows == sum(len(taken[g]) for g in open_groups)
    assert emitted == set(taken)


def test_closing_mode_takes_no_cdc_changes():
    with pytest.raises(WindowSpecError, match="leave out rowKey and opColumn"):
        GroupBy(SCHEMA, ("k",), [parse_window("sum(x) OVER () AS s")], row_key=("id",), op_column="op",
                closing="j")  # fmt: skip
