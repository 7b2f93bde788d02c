"""The changelog contract of emit on update (``overwindow.streaming.changelog``): after
``net_changes``, a micro-batch's changelog holds at most one change per row key, its net effect, and
applying it by row key alone after every batch keeps the batch evaluator's result over the live rows.
Random CDC batches whose rows move between partitions (Flink's ``-U``/``+U`` pairs and a delete then
an insert of one id), are inserted and deleted in one batch, or deleted and inserted again; for one
window group (per key and on buckets of keys, whole and chunked state layouts, with and without
PARTITION BY) and for several (their machines' parts joined by the Assembler)."""

import numpy as np
import pyarrow as pa
import pytest
from cdc_support import parts_of
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.assemble import Assembler
from overwindow.streaming.changelog import net_changes
from overwindow.streaming.contract import CHANGE
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema(
    [("id", pa.int64()), ("k", pa.int64()), ("j", pa.string()), ("t", pa.int64()), ("x", pa.float64())]
)
WITH_OP = SCHEMA.append(pa.field("op", pa.string()))
BOUNDED = (  # frames the chunked layout takes
    "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS s",
    "lag(x) OVER (ORDER BY t) AS l",
)
WHOLE = (*BOUNDED, "rank() OVER (ORDER BY t) AS r")
GROUPS = [(("k",), BOUNDED), (("j",), ("count(*) OVER (ORDER BY t RANGE 2 PRECEDING) AS c",))]


def _row(rng, i):
    return {
        "id": i,
        "k": None if rng.random() < 0.15 else int(rng.integers(0, 3)),
        "j": ["a", "b", None][int(rng.integers(0, 3))],
        "t": int(rng.integers(0, 8)),
        "x": None if rng.random() < 0.15 else float(rng.integers(-5, 6)),
    }


def _batch(rng, live: dict, next_id: int, size: int):
    """``size`` changes over ``live`` (id -> row, updated to match): inserts, deletes, updates in
    place, moves to other partition keys (``-U``/``+U``, or ``d`` then ``c``), a new id inserted and
    deleted, and a live id deleted and inserted again elsewhere. (rows, next free id, ids of this
    batch that were never live before it and are not after it)."""
    batch, transient = [], set()
    for _ in range(size):
        choice = rng.random()
        if choice < 0.35 or not live:
            row = _row(rng, next_id)
            next_id += 1
            if rng.random() < 0.15:  # inserted and deleted in the batch: nothing to emit
                batch += [dict(row, op="insert"), dict(row, op="delete")]
                transient.add(row["id"])
            else:
                batch.append(dict(row, op="insert"))
                live[row["id"]] = row
            continue
        old = live[list(live)[int(rng.integers(0, len(live)))]]
        if choice < 0.5:
            batch.append(dict(old, op="delete"))
            del live[old["id"]]
            continue
        if choice < 0.65:
            new = dict(old, t=int(rng.integers(0, 8)), x=float(rng.integers(-5, 6)))
            batch.append(dict(new, op="update"))
        else:  # to other partition keys: the old image's delete, the new image's insert
            new = _row(rng, old["id"])
            ops = ("-U", "+U") if choice < 0.85 else ("d", "c")
            batch += [dict(old, op=ops[0]), dict(new, op=ops[1])]
        live[old["id"]] = new
    return batch, next_id, transient - set(live)


def _apply(view: dict, changes: pa.Table, transient: set) -> None:
    """Applies a netted changelog by row key alone, checking the contract on the way: one change per
    id, deletes only of rows the view holds, nothing of a row inserted and deleted in the batch."""
    ids = changes.column("id").to_pylist()
    assert len(ids) == len(set(ids)), "two changes of one row key in a batch"
    for r in changes.to_pylist():
        assert r["id"] not in transient, ("a row inserted and deleted in the batch was emitted", r)
        if r[CHANGE] == "delete":
            assert r["id"] in view, ("a delete of a row the view does not hold", r)
            del view[r["id"]]
        else:
            view[r["id"]] = r


def _same(view: dict, live: dict, over, names) -> None:
    want = {}
    if live:
        rows = pa.Table.from_pylist(list(live.values()), schema=SCHEMA)
        want = {
            r["id"]: r
            for r in overwindow.evaluate(
                rows.sort_by([("t", "ascending"), ("id", "ascending")]), *over
            ).to_pylist()
        }
    assert set(view) == set(want)
    for i, row in want.items():
        for name in names:
            a, b = view[i][name], row[name]
            if isinstance(b, float) and a is not None:
                assert a == pytest.approx(b, rel=1e-9), (name, i, a, b)
            else:
                assert a == b, (name, i, a, b)


@settings(max_examples=50, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 6),
    size=st.integers(1, 14),
    layout=st.sampled_from(["whole", "chunked"]),
    buckets=st.sampled_from([None, 1, 2]),
    keys=st.sampled_from([("k",), ()]),
)
def test_one_group_netted_changelog_applied_by_row_key_alone_equals_batch(
    seed, n_batches, size, layout, buckets, keys
):
    calls = WHOLE if layout == "whole" else BOUNDED
    spec = OverWindow(
        *calls,
        emit="on_update",
        rowKey="id",
        opColumn="op",
        stateLayout=layout,
        keyBuckets=buckets if keys else None,  # buckets of keys need keys
    )
    driver = Driver(spec, WITH_OP, list(keys), rows_per_chunk=3 if layout == "chunked" else None)
    rng = np.random.default_rng(seed)
    live, view, next_id = {}, {}, 0
    for _ in range(n_batches):
        batch, next_id, transient = _batch(rng, live, next_id, size)
        out = driver.feed(pa.Table.from_pylist(batch, schema=WITH_OP))
        _apply(view, net_changes(out, ["id"]), transient)
        _same(view, live, spec.partitioned(keys), [c.rsplit(" AS ", 1)[1] for c in calls] + SCHEMA.names)


@settings(max_examples=30, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 6), size=st.integers(1, 14))
def test_several_groups_changelog_holds_one_change_per_row_key(seed, n_batches, size):
    """The Assembler's changelog already holds one change per row key (``net_changes`` leaves it
    as it is), and applied by row key alone keeps the batch query of every group's windows."""
    drivers = [
        Driver(OverWindow(*c, emit="on_update", rowKey="id", opColumn="op"), WITH_OP, list(k))
        for k, c in GROUPS
    ]
    results = [
        pa.schema([f for f in d.machine.output_schema if f.name not in WITH_OP.names and f.name != CHANGE])
        for d in drivers
    ]
    assembler = Assembler(SCHEMA, results, "on_update", ("id",))
    over = [e for k, c in GROUPS for e in OverWindow(*c, emit="on_update", rowKey="id").partitioned(k)]
    rng = np.random.default_rng(seed)
    state, live, view, next_id = None, {}, {}, 0
    for _ in range(n_batches):
        batch, next_id, transient = _batch(rng, live, next_id, size)
        table = pa.Table.from_pylist(batch, schema=WITH_OP)
        step = assembler.step(
            state, parts_of([d.feed(table) for d in drivers], results, SCHEMA.names, (CHANGE,))
        )
        state = step.state
        assert net_changes(step.output, ["id"]).equals(step.output)
        _apply(view, step.output, transient)
        _same(view, live, over, [f.name for r in results for f in r] + SCHEMA.names)


def test_a_row_moved_within_a_bucket_is_one_upsert_by_row_key():
    """Both partitions in one bucket: the step emits the new partition's upsert and then the old
    one's delete; applied in that order by row key alone the row would be lost, netted it is one
    upsert of the row where it now is."""
    spec = OverWindow(
        "lag(x) OVER (ORDER BY t) AS l", emit="on_update", rowKey="id", opColumn="op", keyBuckets=1
    )
    driver = Driver(spec, WITH_OP, ["k"])
    row = {"id": 1, "k": 0, "j": "a", "t": 1, "x": 2.0}
    driver.feed(pa.Table.from_pylist([dict(row, op="insert")], schema=WITH_OP))
    out = driver.feed(pa.Table.from_pylist([dict(row, op="-U"), dict(row, k=1, op="+U")], schema=WITH_OP))
    assert sorted(zip(out.column("k").to_pylist(), out.column(CHANGE).to_pylist())) == [
        (0, "delete"),
        (1, "upsert"),
    ]
    assert net_changes(out, ["id"]).select(["id", "k", CHANGE]).to_pylist() == [
        {"id": 1, "k": 1, CHANGE: "upsert"}
    ]


@settings(max_examples=40, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_batches=st.integers(1, 5),
    size=st.integers(1, 14),
    layout=st.sampled_from(["whole", "chunked"]),
    buckets=st.sampled_from([None, 1, 2]),
)
def test_changes_shuffled_with_their_source_order_apply_as_in_source_order(
    seed, n_batches, size, layout, buckets
):
    """Spark hands a key's changes over in no set order; with ``sourceOrder`` (here a file and a
    position in it, as the view job reads change files) the machine applies them in source order:
    the same changelog, step by step, as the rows given in source order without one, over batches
    where one id is inserted then deleted, deleted then inserted, updated several times and moved
    between partitions; and that changelog keeps the batch evaluator's result."""
    calls = WHOLE if layout == "whole" else BOUNDED
    options = dict(emit="on_update", rowKey="id", opColumn="op", stateLayout=layout, keyBuckets=buckets)
    chunk = 3 if layout == "chunked" else None
    in_order = Driver(OverWindow(*calls, **options), WITH_OP, ["k"], rows_per_chunk=chunk)
    placed = WITH_OP.append(pa.field("file", pa.string())).append(pa.field("at", pa.int64()))
    spec = OverWindow(*calls, sourceOrder=["file", "at"], **options)
    shuffled = Driver(spec, placed, ["k"], rows_per_chunk=chunk)
    rng = np.random.default_rng(seed)
    live, view, next_id = {}, {}, 0
    for _ in range(n_batches):
        batch, next_id, transient = _batch(rng, live, next_id, size)
        # three rows a file, positions counting within it (file names sort as they were written)
        where = [dict(r, file=f"{n // 3:03d}.json", at=n % 3) for n, r in enumerate(batch)]
        given = pa.Table.from_pylist([where[i] for i in rng.permutation(len(where))], schema=placed)
        want = in_order.feed(pa.Table.from_pylist(batch, schema=WITH_OP))
        got = shuffled.feed(given)
        assert got.schema == want.schema  # no order column in the output
        assert sorted(got.to_pylist(), key=str) == sorted(want.to_pylist(), key=str)
        _apply(view, net_changes(got, ["id"]), transient)
        _same(view, live, spec.partitioned(("k",)), [c.rsplit(" AS ", 1)[1] for c in calls] + SCHEMA.names)
