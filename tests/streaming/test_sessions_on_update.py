"""SESSION frames on emit on update (docs/sessions.md): after every micro-batch of inserts, deletes
and updates (which move rows in time), the table the changelog leaves equals the batch evaluator
over the live rows; a row bridging two sessions updates every row of both, a delete splitting a
session updates both halves. Pure: the in-memory driver, no Spark."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
from cdc_support import apply_changelog, random_cdc_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from values_support import same

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
            assert same(got[name], r[name], abs_tol=1e-12), (name, r, got)


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
        apply_changelog(view, driver.feed(pa.Table.from_pylist(batch, schema=SCHEMA)))
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


def _open(live: dict, spec: OverWindow, watermark, gap: str) -> set:
    """The (k, id) of the live rows whose session is open by the batch evaluator over the live rows:
    a row at the watermark (integer times) would lie within the gap after its last row."""
    if not live:
        return set()
    table = pa.Table.from_pylist(list(live.values()), schema=SCHEMA.remove(SCHEMA.get_field_index("op")))
    batch = overwindow.evaluate(table, *spec.partitioned(("k",))).to_pylist()
    return {(r["k"], r["id"]) for r in batch if watermark - r["ended"] <= math.floor(float(gap))}


def _held(driver: Driver, unit) -> set:
    """The (k, id) of the rows a unit's (key's or bucket's) state holds."""
    if unit not in driver.states:
        return set()
    rows = driver.machine.load(driver.states[unit])[0]
    return set(zip(rows.column("k").to_pylist(), rows.column("id").to_pylist()))


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32 - 1),
    gap=st.sampled_from(["1", "2.5", "4"]),
    n_batches=st.integers(2, 8),
    batch_size=st.integers(1, 16),
    buckets=st.sampled_from([None, 2]),
    ranged=st.booleans(),
)
def test_closed_sessions_leave_the_state_and_change_no_answer(
    seed, gap, n_batches, batch_size, buckets, ranged
):
    """With a watermark on the time, the state drops the rows of every session the watermark has
    closed (its last row plus the gap below the watermark: no change that is not late can join it),
    and keeps every open session whole. Random changes (inserts, deletes, updates moving rows in
    time, some below the watermark: late, counted and not applied, whatever they change; a NULL
    partition key; ties) fed to it and to the same machine that never evicts: after every
    micro-batch both emitted the same changelog and counted the same late rows (also every change of
    a row below the watermark, wherever it moves the row) and updates of unknown rows, the table it
    leaves equals the batch evaluator over the changes taken, and every key or bucket stepped holds
    exactly the rows of its open sessions. Updates here move only rows of open sessions (a row of a
    closed session: ``test_a_change_of_a_closed_session_is_late``).
    ``ranged``: a RANGE call beside the sessions, whose frames keep rows of their own."""
    rng = np.random.default_rng(seed)
    texts = calls(gap) + (
        ("sum(x) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS r",) if ranged else ()
    )
    names = [t.rsplit(" AS ", 1)[1] for t in texts]
    spec = OverWindow(*texts, emit="on_update", rowKey="id", opColumn="op", keyBuckets=buckets)
    evicting = Driver(spec, SCHEMA, ["k"], watermarked=True)
    keeping = Driver(spec, SCHEMA, ["k"], watermarked=True)
    keeping.machine.eviction = None
    assert evicting.machine.eviction is not None
    live, view, next_id, watermark, late = {}, {}, 0, None, 0
    for b in range(n_batches):
        low = -5 if watermark is None else watermark - 3
        movable = [key for key in live if watermark is None or key in _open(live, spec, watermark, gap)]
        batch = []
        for _ in range(batch_size):
            choice = rng.random()
            t = int(rng.integers(low, low + 14))
            x = None if rng.random() < 0.15 else float(rng.integers(-20, 20))
            if choice < 0.6 or not movable:
                k = [None, 1, 2][int(rng.integers(0, 3))]
                row = {"k": k, "id": next_id, "t": t, "x": x, "op": "insert"}
                next_id += 1
            else:
                old = live[movable[int(rng.integers(0, len(movable)))]]
                row = dict(old, op="delete") if choice < 0.8 else dict(old, t=t, x=x, op="update")
            batch.append(row)
            key = (row["k"], row["id"])
            if watermark is not None and min(row["t"], live.get(key, row)["t"]) < watermark:
                late += 1  # a delete of a row below the watermark too, or a move of one: it stays live
                continue
            if row["op"] == "delete":
                live.pop(key, None)
                movable = [m for m in movable if m != key]
            else:
                live[key] = {c: row[c] for c in ("k", "id", "t", "x")}
        table = pa.Table.from_pylist(batch, schema=SCHEMA)
        got, want = evicting.feed(table, watermark), keeping.feed(table, watermark)
        assert (
            got.sort_by([("id", "ascending")]).to_pylist() == want.sort_by([("id", "ascending")]).to_pylist()
        )
        assert (evicting.late_rows, evicting.unknown_updates) == (keeping.late_rows, keeping.unknown_updates)
        assert evicting.late_rows == late
        apply_changelog(view, got)
        _assert_view_is_batch(view, live, spec, names)
        if watermark is not None and not ranged:
            open_rows = _open(live, spec, watermark, gap)
            for unit in {evicting.unit_of((r["k"],)) for r in batch}:
                in_unit = {key for key in live if evicting.unit_of(key[:1]) == unit}
                assert _held(evicting, unit) == open_rows & in_unit, unit
        elif watermark is not None:  # the RANGE frames may keep more: never fewer than the open sessions
            held = set().union(*(_held(evicting, u) for u in evicting.states))
            assert _open(live, spec, watermark, gap) <= held <= set(live)
        watermark = 3 * b
    assert evicting.state_rows() <= keeping.state_rows()


def test_a_change_of_a_closed_session_is_late():
    """Once the watermark has closed a session its rows leave the state; a delete of one of them is
    late (below the watermark), counted and not applied, as without eviction; a single-image update
    moving one above the watermark finds no row to replace: applied as an insert and counted as an
    update of an unknown row (a -U/+U pair's old image is late, counted, its new image the same)."""
    spec = OverWindow(*calls("3"), emit="on_update", rowKey="id", opColumn="op")
    driver = Driver(spec, SCHEMA, ["k"], watermarked=True)

    def feed(rows, watermark):
        table = pa.Table.from_pylist([dict(zip(("id", "t", "x", "op"), r), k=1) for r in rows], schema=SCHEMA)
        return {
            r["id"]: (r["_change"], r["n"], r["began"]) for r in driver.feed(table, watermark).to_pylist()
        }

    feed([(1, 0, 1.0, "insert"), (2, 1, 2.0, "insert"), (3, 5, 3.0, "insert")], None)
    # the session {0, 1} ends at 1 + 3 = 4: a row at the watermark 4 would still join it
    assert feed([(4, 6, 4.0, "insert")], 4) == {3: ("upsert", 2, 5), 4: ("upsert", 2, 5)}
    assert driver.state_rows() == 4
    assert feed([(5, 7, 5.0, "insert")], 5) == {i: ("upsert", 3, 5) for i in (3, 4, 5)}
    assert driver.state_rows() == 3  # closed: its rows left
    assert feed([(1, 0, 1.0, "delete")], 5) == {}
    assert driver.late_rows == 1
    assert feed([(2, 9, 2.0, "update")], 5) == {i: ("upsert", 4, 5) for i in (2, 3, 4, 5)}
    assert (driver.late_rows, driver.unknown_updates) == (1, 1)
    # the session of 5 to 9 closes at 13: its rows leave; a -U/+U pair moving one of them is late
    # in its old image, and its new image finds no row to replace
    assert feed([(6, 30, 6.0, "insert")], 13) == {6: ("upsert", 1, 30)}
    assert driver.state_rows() == 1
    assert feed([(5, 7, 5.0, "-U"), (5, 31, 5.0, "+U")], 13) == {5: ("upsert", 2, 30), 6: ("upsert", 2, 30)}
    assert (driver.late_rows, driver.unknown_updates) == (2, 2)
