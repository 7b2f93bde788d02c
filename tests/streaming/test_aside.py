"""Rows a stream cannot compute are set aside, counted and kept with their reason; the rest of the
stream goes on. Oracle: the batch evaluator over the rows that remain, with the bad rows found by
plain Python from their values (a zero divisor beside a dividend that is not NULL, as Spark's ANSI
mode fails), in both emit modes (on update: whole, chunked and in a bucket of keys) and with buckets of
keys."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.errors import WindowRuntimeError
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, DELETE, END_OF_INPUT
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema(
    [("k", pa.int64()), ("t", pa.int64()), ("rid", pa.int64()), ("x", pa.int64()), ("y", pa.int64())]
)
CLOSE = (
    "sum(x / y) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "x / lag(x) OVER (ORDER BY t) AS r",
    "row_number() OVER (ORDER BY t) AS rn",
)


def _value(rng, null_share=0.15):
    return None if rng.random() < null_share else int(rng.integers(-2, 3))  # 0 a fifth of the time


def _same(got, want) -> bool:
    return got is None if want is None else got == pytest.approx(want, rel=1e-12)


def _entry_bad(row) -> bool:
    """Spark fails x / y on this row: a zero divisor beside a dividend that is not NULL."""
    return row["y"] == 0 and row["x"] is not None


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    keys=st.integers(1, 5),
    n_batches=st.integers(1, 6),
    buckets=st.sampled_from([None, 2]),
)
def test_window_close_sets_aside_rows_whose_expressions_fail(seed, n, keys, n_batches, buckets):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.integers(0, 30, n))  # in order: no row is late
    rows = [
        {"k": int(rng.integers(0, keys)), "t": int(t), "rid": i, "x": _value(rng), "y": _value(rng)}
        for i, t in enumerate(times)
    ]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    driver = Driver(OverWindow(*CLOSE, rowKey="rid", keyBuckets=buckets), SCHEMA, ["k"])
    outs, seen = [], -1
    for part in np.array_split(np.arange(n), n_batches):
        if len(part):
            seen = max(seen, int(table["t"].to_numpy()[part].max()))
        outs.append(driver.feed(table.take(pa.array(part, pa.int64())), seen - 3))
    outs.append(driver.feed(None, END_OF_INPUT))
    out = pa.concat_tables(outs)

    good = [r for r in rows if not _entry_bad(r)]
    spec = OverWindow(CLOSE[0], CLOSE[2], "lag(x) OVER (ORDER BY t) AS p", rowKey="rid")
    want = overwindow.evaluate(
        pa.Table.from_pylist(good, schema=SCHEMA).sort_by([("t", "ascending"), ("rid", "ascending")]),
        *spec.partitioned(("k",)),
    ).to_pylist()
    # x / lag(x) fails where the previous x is 0
    late_bad = {r["rid"] for r in want if r["p"] == 0 and r["x"] is not None}
    want = {r["rid"]: r for r in want if r["rid"] not in late_bad}
    for r in want.values():
        r["r"] = None if r["x"] is None or r["p"] is None else r["x"] / r["p"]
    got = {r["rid"]: r for r in out.to_pylist()}
    assert set(got) == set(want)
    for rid, r in want.items():
        assert got[rid]["rn"] == r["rn"]
        for name in ("s", "r"):
            assert _same(got[rid][name], r[name]), (name, rid)

    aside = [a for a in driver.aside]
    kept = pa.concat_tables([a.rows for a in aside]).to_pylist() if aside else []
    reasons = [why for a in aside for why in a.reasons]
    assert sorted(r["rid"] for r in kept) == sorted({r["rid"] for r in rows if _entry_bad(r)} | late_bad)
    assert kept == [next(r for r in rows if r["rid"] == a["rid"]) for a in kept]  # the rows as they came
    assert all("DIVIDE_BY_ZERO" in why for why in reasons)
    assert any("lag(x, 1) OVER" in why for why in reasons) == bool(late_bad)


UPDATE = (
    "sum(x / y) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "count(*) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS c",
)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 6),
    layout=st.sampled_from(["whole", "chunked", "bucketed"]),
    over_results=st.booleans(),
)
def test_on_update_sets_aside_changes_whose_expressions_fail(seed, n_batches, layout, over_results):
    """A change whose new image fails is set aside whole: the view keeps what it had (as for a
    change with an unknown op); deletes always apply. With ``over_results`` the failing expression
    is over a window result (``x / lag(x)``): a row is out of the view while its previous x is 0
    (a delete when it leaves, an upsert when it comes back), and set aside as it leaves."""
    rng = np.random.default_rng(seed)
    schema = SCHEMA.append(pa.field("op", pa.string()))
    calls = (UPDATE[1], "x / lag(x) OVER (ORDER BY t) AS s") if over_results else UPDATE
    spec = OverWindow(
        *calls,
        emit="on_update",
        rowKey="rid",
        opColumn="op",
        stateLayout="chunked" if layout == "chunked" else "whole",
        keyBuckets=1 if layout == "bucketed" else None,  # every key in one state
    )
    driver = Driver(spec, schema, ["k"], rows_per_chunk=4 if layout == "chunked" else None)
    live, view, next_id, set_aside, ever_out = {}, {}, 0, 0, set()
    for _ in range(n_batches):
        batch = []
        for _ in range(int(rng.integers(1, 25))):
            row = {
                "k": int(rng.integers(0, 2)),
                "t": int(rng.integers(0, 20)),
                "x": _value(rng),
                "y": _value(rng),
            }
            if rng.random() < 0.6 or not live:
                row.update(rid=next_id, op="insert")
                next_id += 1
            else:
                old = live[list(live)[int(rng.integers(0, len(live)))]]
                row = (
                    dict(old, op="delete")
                    if rng.random() < 0.5
                    else dict(row, k=old["k"], rid=old["rid"], op="update")
                )
            batch.append(row)
            if row["op"] == "delete":
                live.pop(row["rid"], None)
            elif _entry_bad(row) and not over_results:
                set_aside += 1
            else:
                live[row["rid"]] = {c: row[c] for c in ("k", "t", "rid", "x", "y")}
        for r in driver.feed(pa.Table.from_pylist(batch, schema=schema)).to_pylist():
            if r[CHANGE] == DELETE:
                view.pop(r["rid"], None)
            else:
                view[r["rid"]] = r
        rows = pa.Table.from_pylist(list(live.values()), schema=SCHEMA)
        oracle = OverWindow(UPDATE[1], "lag(x) OVER (ORDER BY t) AS p") if over_results else spec
        want = overwindow.evaluate(
            rows.sort_by([("t", "ascending"), ("rid", "ascending")]), *oracle.partitioned(("k",))
        ).to_pylist()
        if over_results:
            out = {r["rid"] for r in want if r["p"] == 0 and r["x"] is not None}
            ever_out |= out
            want = [
                dict(r, s=None if None in (r["x"], r["p"]) else r["x"] / r["p"])
                for r in want
                if r["rid"] not in out
            ]
        want = {r["rid"]: r for r in want}
        assert set(view) == set(want)
        for rid, r in want.items():
            assert view[rid]["c"] == r["c"]
            assert _same(view[rid]["s"], r["s"])
    kept = {r["rid"] for a in driver.aside for r in a.rows.to_pylist()}
    if over_results:
        assert ever_out <= kept
    else:
        assert sum(len(a) for a in driver.aside) == set_aside
    assert all("DIVIDE_BY_ZERO" in why for a in driver.aside for why in a.reasons)


def test_batch_evaluation_fails_as_spark_does():
    """The batch evaluator is Spark's batch query: it fails rather than leave rows out."""
    table = pa.table({"t": [1, 2], "x": [1, 2], "y": [1, 0]})
    with pytest.raises(WindowRuntimeError, match="DIVIDE_BY_ZERO"):
        overwindow.evaluate(table, "sum(x / y) OVER (ORDER BY t) AS s")


def test_a_failure_no_single_row_explains_is_raised():
    """An aggregate that overflows fails over many rows together: no row is to blame, so the step
    fails as before rather than drop rows."""
    schema = pa.schema([("k", pa.int64()), ("t", pa.int64()), ("x", pa.int64())])
    driver = Driver(OverWindow("sum(x) OVER (ORDER BY t) AS s"), schema, ["k"])
    big = 2**62
    with pytest.raises(WindowRuntimeError, match="overflows BIGINT"):
        driver.feed(pa.table({"k": [0, 0], "t": [1, 2], "x": [big, big]}, schema=schema), END_OF_INPUT)
