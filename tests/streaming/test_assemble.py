"""Several window groups (windows over different PARTITION BY and ORDER BY) joined into whole rows:
one machine per group through the in-memory driver, their parts into the Assembler, as the Spark
hosting runs them. The oracle is the batch evaluator over all the windows at once (each with its
own PARTITION BY), which knows nothing of groups or parts."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from cdc_support import parts_of
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.logical.expr import Expr
from overwindow.physical.expressions import evaluate_expr
from overwindow.spec import OverWindow
from overwindow.streaming.assemble import ASIDE, PART, Assembler
from overwindow.streaming.contract import CHANGE, END_OF_INPUT
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema(
    [("id", pa.int64()), ("k1", pa.int64()), ("k2", pa.string()), ("t", pa.int64()), ("x", pa.float64())]
)
# (PARTITION BY, calls): one window group each
CLOSE_GROUPS = [
    (
        ("k1",),
        (
            "lag(x) OVER (ORDER BY t) AS a",
            "sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s",
        ),
    ),
    (("k2",), ("row_number() OVER (ORDER BY t) AS rn",)),
    ((), ("count(*) OVER (ORDER BY t RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS c",)),
]
UPDATE_GROUPS = [
    *CLOSE_GROUPS,
    (("k1",), ("rank() OVER (ORDER BY x DESC) AS r", "max(t) OVER (ORDER BY x DESC) AS mt")),
]


def _over(groups):
    """Every window of ``groups`` with its own PARTITION BY: the query the view keeps."""
    return [
        e
        for keys, calls in groups
        for e in OverWindow(*calls, emit="on_update", rowKey="id").partitioned(keys)
    ]


def _drivers(groups, emit, **options):
    schema = SCHEMA.append(pa.field("op", pa.string())) if "opColumn" in options else SCHEMA
    watermarked = emit == "on_window_close"
    return [
        Driver(OverWindow(*calls, emit=emit, **options), schema, list(keys), watermarked)
        for keys, calls in groups
    ]


def _results(driver):
    schema = driver.machine.output_schema
    return pa.schema([f for f in schema if f.name not in SCHEMA.names and f.name not in (CHANGE, "op")])


def _parts(outputs, results, extra=()):
    return parts_of(outputs, results, SCHEMA.names, extra)


def _rows(rng, ids, t_lo, n, null_keys=True):
    k2 = ["a", "b", None] if null_keys else ["a", "b"]
    return [
        {
            "id": i,
            "k1": None if null_keys and rng.random() < 0.15 else int(rng.integers(0, 3)),
            "k2": k2[int(rng.integers(0, len(k2)))],
            "t": int(t_lo + rng.integers(0, 4)),
            "x": None if rng.random() < 0.15 else float(rng.integers(-5, 6)),
        }
        for i in range(ids, ids + n)
    ]


def _same(got: dict, want: dict, names):
    assert set(got) == set(want)
    for i, row in want.items():
        for name in names:
            a, b = got[i][name], row[name]
            if isinstance(b, float) and a is not None:
                assert a == pytest.approx(b, rel=1e-9), (name, i, a, b)
            else:
                assert a == b, (name, i, a, b)


@settings(max_examples=40, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 6),
    size=st.integers(1, 12),
)
def test_window_close_emits_each_row_once_whole_as_the_batch_query(seed, n_batches, size):
    """Every row is emitted once, when every group has closed it, with the batch query's values; at
    the end of input every row has been emitted. (A column combining two groups' windows is Spark's
    to compute over the whole rows: tests/spark/test_multi_window.py.)"""
    rng = np.random.default_rng(seed)
    drivers = _drivers(CLOSE_GROUPS, "on_window_close")
    results = [_results(d) for d in drivers]
    assembler = Assembler(SCHEMA, results, "on_window_close")
    state, emitted, rows, t = None, {}, [], 0
    for n in range(n_batches + 1):
        last = n == n_batches
        batch = [] if last else _rows(rng, len(rows), t, size)
        rows += batch
        t += 2
        watermark = END_OF_INPUT if last else t - 3
        table = pa.Table.from_pylist(batch, schema=SCHEMA) if batch else None
        step = assembler.step(state, _parts([d.feed(table, watermark) for d in drivers], results))
        state = step.state
        for r in step.output.to_pylist():
            assert r["id"] not in emitted  # once
            emitted[r["id"]] = r
    assert state is None  # nothing waits after the end of input
    everything = pa.Table.from_pylist(rows, schema=SCHEMA)
    want = {r["id"]: r for r in overwindow.evaluate(everything, *_over(CLOSE_GROUPS)).to_pylist()}
    _same(emitted, want, [f.name for r in results for f in r])


def test_window_close_drops_a_row_a_group_set_aside_and_pairs_equal_rows_in_order():
    schema = pa.schema([("x", pa.int64())])
    results = [pa.schema([("a", pa.int64())]), pa.schema([("b", pa.int64())])]
    m = Assembler(schema, results, "on_window_close")

    def parts(group, values, aside=None):
        n = len(values)
        table = {
            "x": [5] * n,
            "a": values if group == 0 else [None] * n,
            "b": values if group == 1 else [None] * n,
            PART: pa.array([group] * n, pa.int32()),
        }
        if aside is not None:
            table[ASIDE] = aside
        return pa.table(table)

    step = m.step(None, parts(0, [1, 2, 3]))  # three rows equal in every input column
    step = m.step(step.state, parts(1, [10, 20], aside=[False, True]))
    assert step.output.to_pylist() == [{"x": 5, "a": 1, "b": 10}]  # the second was set aside
    step = m.step(step.state, parts(1, [30]))
    assert step.output.to_pylist() == [{"x": 5, "a": 3, "b": 30}]
    assert step.state is None


def _cdc_batch(rng, live, next_id, size):
    """Inserts, deletes, updates in place and moves (a delete and an insert of the same id with new
    partition keys), keeping ``live`` (id -> row) as the oracle's input."""
    batch = []
    for _ in range(size):
        choice = rng.random()
        if choice < 0.5 or not live:
            row = dict(_rows(rng, next_id, 0, 1)[0], t=int(rng.integers(0, 10)), op="insert")
            next_id += 1
            live[row["id"]] = row
            batch.append(row)
            continue
        old = live[list(live)[int(rng.integers(0, len(live)))]]
        if choice < 0.7:
            batch.append(dict(old, op="delete"))
            del live[old["id"]]
        elif choice < 0.85:
            new = dict(old, x=float(rng.integers(-5, 6)), t=int(rng.integers(0, 10)), op="update")
            live[old["id"]] = new
            batch.append(new)
        else:
            moved = dict(_rows(rng, old["id"], 0, 1)[0], t=old["t"], x=old["x"], op="insert")
            batch += [dict(old, op="delete"), moved]
            live[old["id"]] = moved
    return batch, next_id


@settings(max_examples=40, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 6),
    size=st.integers(1, 12),
    qualify=st.sampled_from([None, "rn <= 2 OR r = 1", "rn + r <= 3"]),
)
def test_on_update_changelog_keeps_the_batch_query_after_every_batch(seed, n_batches, size, qualify):
    """After every micro-batch the table kept from the changelog (keyed by the row key) equals the
    batch query over the live rows (with the filter, which may combine two groups' windows); a
    replay of the live rows emits nothing."""
    rng = np.random.default_rng(seed)
    drivers = _drivers(UPDATE_GROUPS, "on_update", rowKey="id", opColumn="op")
    results = [_results(d) for d in drivers]
    condition = None if qualify is None else Expr.of(qualify)
    assembler = Assembler(SCHEMA, results, "on_update", ("id",), condition)
    state, view, live, next_id = None, {}, {}, 0
    names = [f.name for r in results for f in r]
    with_op = SCHEMA.append(pa.field("op", pa.string()))
    for _ in range(n_batches):
        batch, next_id = _cdc_batch(rng, live, next_id, size)
        table = pa.Table.from_pylist(batch, schema=with_op)
        step = assembler.step(state, _parts([d.feed(table) for d in drivers], results, (CHANGE,)))
        state = step.state
        ids = [r["id"] for r in step.output.to_pylist()]
        assert len(ids) == len(set(ids))  # one change per row and batch
        for r in step.output.to_pylist():
            if r[CHANGE] == "delete":
                assert r["id"] in view  # only rows the view holds are deleted
                view.pop(r["id"])
            else:
                view[r["id"]] = r
        want = {}
        if live:
            everything = pa.Table.from_pylist(list(live.values()), schema=with_op).drop_columns(["op"])
            result = overwindow.evaluate(everything, *_over(UPDATE_GROUPS))
            if qualify is not None:
                result = result.filter(pc.fill_null(evaluate_expr(Expr.of(qualify), result), False))
            want = {r["id"]: r for r in result.to_pylist()}
        _same(view, want, names + SCHEMA.names)
    replay = pa.Table.from_pylist([dict(r, op="update") for r in live.values()], schema=with_op)
    step = assembler.step(state, _parts([d.feed(replay) for d in drivers], results, (CHANGE,)))
    assert step.output.num_rows == 0
