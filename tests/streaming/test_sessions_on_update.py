"""SESSION frames on emit on update (docs/sessions.md): after every micro-batch of inserts, deletes
and updates (which move rows in time), the table the changelog leaves equals the batch evaluator
over the live rows; a row bridging two sessions updates every row of both, a delete splitting a
session updates both halves. Pure: the in-memory driver, no Spark."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from cdc_support import random_cdc_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema(
    [("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64()), ("op", pa.string())]
)


def calls(gap: str, order: str = "") -> tuple[str, ...]:
    over = f"OVER (ORDER BY t{order} SESSION WITH GAP {gap})"
    return (
        f"count(*) {over} AS n",
        f"sum(x) {over} AS s",
        f"max(x) {over} AS hi",
        f"first_value(t) {over} AS began",
        f"last_value(t) {over} AS ended",
        f"nth_value(x, 2) {over} AS second",
        f"first_value(x) IGNORE NULLS {over} AS fx",
    )


def _apply(view: dict, out: pa.Table) -> None:
    for r in out.to_pylist():
        if r["_change"] == "delete":
            view.pop((r["k"], r["id"]), None)
        else:
            view[(r["k"], r["id"])] = r


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _assert_view_is_batch(view: dict, live: dict, spec: OverWindow, names: list[str]) -> None:
    assert set(view) == set(live)
    if not live:
        return
    table = pa.Table.from_pylist(list(live.values()), schema=SCHEMA.remove(SCHEMA.get_field_index("op")))
    # ties in ORDER BY broken by the row key, as the machine breaks them
    batch = overwindow.evaluate(table.sort_by([("id", "ascending")]), *spec.partitioned(("k",)))
    for r in batch.to_pylist():
        got = view[(r["k"], r["id"])]
        for name in names:
            assert _same(got[name], r[name]), (name, r, got)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32 - 1),
    gap=st.sampled_from(["1", "2", "2.5", "4"]),
    order=st.sampled_from(["", " DESC"]),
    n_batches=st.integers(1, 8),
    batch_size=st.integers(1, 20),
    buckets=st.sampled_from([None, None, 2]),
    null_key=st.booleans(),
)
def test_changelog_equals_batch_after_every_micro_batch(
    seed, gap, order, n_batches, batch_size, buckets, null_key
):
    """Random changes over a few keys (a NULL key among them), times on a small range so that rows
    tie, chain into sessions, and inserts and moves bridge sessions while deletes split them."""
    rng = np.random.default_rng(seed)
    texts = calls(gap, order)
    spec = OverWindow(*texts, emit="on_update", rowKey="id", opColumn="op", keyBuckets=buckets)
    driver = Driver(spec, SCHEMA, ["k"])
    names = [t.rsplit(" AS ", 1)[1] for t in texts]
    live, view, next_id = {}, {}, 0
    for _ in range(n_batches):
        batch, next_id = random_cdc_batch(rng, live, next_id, batch_size, t_hi=20, null_key=null_key)
        _apply(view, driver.feed(pa.Table.from_pylist(batch, schema=SCHEMA)))
        _assert_view_is_batch(view, live, spec, names)
    # the live rows again as updates change nothing, so nothing is emitted
    again = driver.feed(pa.Table.from_pylist([dict(r, op="update") for r in live.values()], schema=SCHEMA))
    assert again.num_rows == 0


def test_a_late_row_bridging_two_sessions_updates_both_and_a_delete_splits_them_again():
    spec = OverWindow(*calls("3"), emit="on_update", rowKey="id", opColumn="op")
    driver = Driver(spec, SCHEMA, ["k"])

    def feed(rows):
        table = pa.Table.from_pylist([dict(zip(("id", "t", "x", "op"), r), k=1) for r in rows], schema=SCHEMA)
        return {r["id"]: r for r in driver.feed(table).to_pylist()}

    first = feed([(1, 0, 1.0, "insert"), (2, 1, 2.0, "insert"), (3, 5, 3.0, "insert"), (4, 6, 4.0, "insert")])
    assert {i: (r["n"], r["began"]) for i, r in first.items()} == {1: (2, 0), 2: (2, 0), 3: (2, 5), 4: (2, 5)}
    # t=3 is 2 after t=1 and 2 before t=5: one session of five rows, every row updated
    bridged = feed([(5, 3, 5.0, "insert")])
    assert {i: (r["_change"], r["n"], r["began"], r["ended"]) for i, r in bridged.items()} == {
        i: ("upsert", 5, 0, 6) for i in (1, 2, 3, 4, 5)
    }
    # deleting it splits them again: both halves updated, the row itself deleted
    split = feed([(5, 3, 5.0, "delete")])
    assert {i: (r["_change"], r["n"], r["ended"]) for i, r in split.items() if i != 5} == {
        1: ("upsert", 2, 1),
        2: ("upsert", 2, 1),
        3: ("upsert", 2, 6),
        4: ("upsert", 2, 6),
    }
    assert split[5]["_change"] == "delete"
    # an update moving a row out of its session's reach splits it
    moved = feed([(4, 10, 4.0, "update")])
    assert {i: (r["n"], r["began"]) for i, r in moved.items()} == {3: (1, 5), 4: (1, 10)}
