"""``qualify``: a condition on result rows (Top-N, one row per key). Oracle: the batch evaluator's
result with the condition applied in plain Python, after every micro-batch; on update the
changelog also carries only rows that enter, change inside or leave the result."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, DELETE, END_OF_INPUT
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("rid", pa.int64()), ("x", pa.int64())])


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 6),
    layout=st.sampled_from(["whole", "chunked", "bucketed"]),
    top=st.integers(1, 4),
)
def test_on_update_keeps_the_top_n_and_emits_only_rows_entering_changing_or_leaving(
    seed, n_batches, layout, top
):
    rng = np.random.default_rng(seed)
    schema = SCHEMA.append(pa.field("op", pa.string()))
    if layout != "chunked":  # Top-N
        calls = ("row_number() OVER (ORDER BY x DESC, rid) AS rn", "sum(x) OVER (ORDER BY x DESC, rid) AS s")
        condition, keep = f"rn <= {top}", lambda r: r["rn"] <= top
    else:  # the chunked layout reads bounded frames: rows whose neighbourhood sums past a level
        calls = (
            "count(*) OVER (ORDER BY x DESC, rid ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS rn",
            "sum(x) OVER (ORDER BY x DESC, rid ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s",
        )
        condition, keep = f"s >= {10 * top}", lambda r: r["s"] >= 10 * top
    spec = OverWindow(
        *calls,
        emit="on_update",
        rowKey="rid",
        opColumn="op",
        stateLayout="chunked" if layout == "chunked" else "whole",
        qualify=condition,
        keyBuckets=1 if layout == "bucketed" else None,  # both keys in one state
    )
    driver = Driver(spec, schema, ["k"], rows_per_chunk=3 if layout == "chunked" else None)
    live, view = {}, {}
    for _ in range(n_batches):
        batch = _changes(rng, live, 20)
        for r in driver.feed(pa.Table.from_pylist(batch, schema=schema)).to_pylist():
            if r[CHANGE] == DELETE:
                assert r["rid"] in view, "a delete of a row the result does not hold"
                view.pop(r["rid"])
            else:
                before = view.get(r["rid"])
                assert before is None or before != r, "an upsert that changes nothing"
                view[r["rid"]] = r
        rows = pa.Table.from_pylist(list(live.values()), schema=SCHEMA)
        want = overwindow.evaluate(
            rows, *OverWindow(*calls, emit="on_update").partitioned(("k",))
        ).to_pylist()
        want = {r["rid"]: r for r in want if keep(r)}
        assert set(view) == set(want)
        for rid, r in want.items():
            assert (view[rid]["rn"], view[rid]["s"], view[rid]["x"]) == (r["rn"], r["s"], r["x"])


def test_window_close_emits_only_the_rows_passing_it():
    spec = OverWindow("row_number() OVER (ORDER BY t) AS rn", rowKey="rid", qualify="rn <= 2", keyBuckets=2)
    rows = pa.table(
        {"k": [1, 1, 2, 1, 2, 2], "t": [1, 2, 3, 4, 5, 6], "rid": [0, 1, 2, 3, 4, 5], "x": [0] * 6},
        schema=SCHEMA,
    )
    driver = Driver(spec, SCHEMA, ["k"])
    out = pa.concat_tables([driver.feed(rows.slice(0, 3), 2), driver.feed(rows.slice(3), END_OF_INPUT)])
    want = [
        r
        for r in overwindow.evaluate(
            rows, *OverWindow("row_number() OVER (ORDER BY t) AS rn").partitioned(("k",))
        ).to_pylist()
        if r["rn"] <= 2
    ]
    assert sorted(out.to_pylist(), key=lambda r: r["rid"]) == sorted(want, key=lambda r: r["rid"])


@pytest.mark.parametrize(
    "qualify, words",
    [
        ("rn <=", "cannot parse"),
        ("rank() OVER (ORDER BY t) = 1", "name the window call"),
        ("nope = 1", "nope"),
        ("rn + 1", "must be a condition"),
    ],
)
def test_a_condition_it_cannot_run_is_refused_when_built(qualify, words):
    with pytest.raises(WindowSpecError, match=words):
        Driver(OverWindow("row_number() OVER (ORDER BY t) AS rn", qualify=qualify), SCHEMA, ["k"])


def test_a_condition_reads_string_literals_as_spark_does():
    """'it''s' is the string it's and 'a' 'b' the string ab, as Spark reads them (sqlglot reads
    both as CONCAT calls)."""
    schema = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("s", pa.string())])
    spec = OverWindow("row_number() OVER (ORDER BY t) AS rn", qualify="s = 'it''s' OR s = 'a' 'b'")
    rows = pa.table({"k": [1] * 4, "t": [1, 2, 3, 4], "s": ["it's", "its", "ab", "a"]}, schema=schema)
    out = Driver(spec, schema, ["k"]).feed(rows, END_OF_INPUT)
    assert sorted(out.column("s").to_pylist()) == ["ab", "it's"]


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 6),
    function=st.sampled_from(["row_number", "rank", "dense_rank"]),
    top=st.integers(1, 4),
    bucketed=st.booleans(),
)
def test_split_as_spark_runs_it_the_machine_bounds_the_top_n_and_the_filter_after_it_keeps_the_result(
    seed, n_batches, function, top, bucketed
):
    """On Spark the machine checks only the Top-N bound of the condition (``rank_condition``) and
    Spark applies the whole condition to its changelog, an upsert failing it becoming a delete
    (``overwindow.spark.bind.with_filter``, done here in Python): the table kept equals the batch
    result filtered, after every micro-batch, with at most one change per row key; a delete is of a
    row the table holds, or of one the rest of the condition (``x % 3 <> 1``) keeps out."""
    from overwindow.spark.bind import results_in_spark

    rng = np.random.default_rng(seed)
    schema = SCHEMA.append(pa.field("op", pa.string()))
    order = "x DESC, rid" if function == "row_number" else "x DESC"  # ranks of ties are set
    calls = (f"{function}() OVER (ORDER BY {order}) AS rn", f"sum(x) OVER (ORDER BY {order}) AS s")
    condition = f"rn <= {top} AND x % 3 <> 1"

    def keep(r):
        return r["rn"] is not None and r["rn"] <= top and r["x"] % 3 != 1

    spec = OverWindow(
        *calls,
        emit="on_update",
        rowKey="rid",
        opColumn="op",
        qualify=condition,
        keyBuckets=1 if bucketed else None,
    )
    machine, post, in_spark = results_in_spark(spec)
    assert (machine.qualify.sql, post, in_spark) == (f"rn <= {top}", (), condition)
    driver = Driver(machine, schema, ["k"])
    live, view, emitted = {}, {}, {}
    for _ in range(n_batches):
        batch = _changes(rng, live, 8)
        changes = driver.feed(pa.Table.from_pylist(batch, schema=schema)).to_pylist()
        assert len({r["rid"] for r in changes}) == len(changes), "two changes of one row key"
        for r in changes:
            if r[CHANGE] == DELETE:  # the machine's: of a row it last emitted within the bound
                assert r["rid"] in view or not keep(emitted.pop(r["rid"])), "a delete from nowhere"
                view.pop(r["rid"], None)
                continue
            assert r["rn"] <= top, "a change of a row past the bound"
            emitted[r["rid"]] = r
            if keep(r):
                view[r["rid"]] = r
            else:  # Spark's filter: a failing upsert is a delete
                view.pop(r["rid"], None)
        rows = pa.Table.from_pylist(list(live.values()), schema=SCHEMA)
        want = overwindow.evaluate(
            rows, *OverWindow(*calls, emit="on_update").partitioned(("k",))
        ).to_pylist()
        want = {r["rid"]: r for r in want if keep(r)}
        assert set(view) == set(want)
        for rid, r in want.items():
            assert (view[rid]["rn"], view[rid]["s"], view[rid]["x"]) == (r["rn"], r["s"], r["x"])


def _changes(rng, live: dict, x_max: int) -> list[dict]:
    """A random micro-batch of 1 to 11 changes (inserts of new row keys, deletes and updates of
    ``live`` rows, by row key), applied to ``live``; x in [0, ``x_max``)."""
    batch, next_id = [], max(live, default=-1) + 1
    for _ in range(int(rng.integers(1, 12))):
        row = {"k": int(rng.integers(0, 2)), "t": 0, "x": int(rng.integers(0, x_max))}
        if rng.random() < 0.6 or not live:
            row.update(rid=next_id, op="insert")
            next_id += 1
        else:
            old = live[list(live)[int(rng.integers(0, len(live)))]]
            deleted = rng.random() < 0.5
            row = dict(old, op="delete") if deleted else dict(row, k=old["k"], rid=old["rid"], op="update")
        batch.append(row)
        if row["op"] == "delete":
            live.pop(row["rid"], None)
        else:
            live[row["rid"]] = {c: row[c] for c in ("k", "t", "rid", "x")}
    return batch
