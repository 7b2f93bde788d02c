"""Emit on window close over split state (``stateLayout="chunked"`` on key buckets): a bucket's
pending rows in its value, each key's history in an entry. Oracles: the batch evaluator over the
closed rows (``test_window_close._check``) and the whole layout on the same buckets, micro-batch by
micro-batch (same rows emitted, same late rows); and the store's own counts of the entries read."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_window_close import CALLS, SCHEMA, STREAMS, _check, _stream

from overwindow.errors import WindowSpecError
from overwindow.spec import DEFAULT_KEY_BUCKETS, OverWindow
from overwindow.streaming.contract import END_OF_INPUT
from overwindow.streaming.driver import Driver
from overwindow.streaming.state import StateFormatError
from overwindow.streaming.window_close import WindowClose
from overwindow.streaming.window_close_split import MemoryHistories, SplitWindowClose


def _drivers(calls, buckets):
    """(split, whole) drivers of the same calls on the same buckets."""
    made = []
    for layout in ("chunked", "whole"):
        spec = OverWindow(*(c[0] for c in calls), rowKey="rid", keyBuckets=buckets, stateLayout=layout)
        made.append(Driver(spec, SCHEMA, ["k"]))
    return made


def _same(a: pa.Table, b: pa.Table) -> None:
    """The same rows with the same values (NULL and NaN alike), whatever their order."""
    a, b = (t.sort_by([("rid", "ascending")]).to_pandas() for t in (a, b))
    assert a["rid"].tolist() == b["rid"].tolist()
    for name in a.columns:
        x, y = a[name].to_numpy(dtype=object), b[name].to_numpy(dtype=object)
        same = [(u == v) or (u != u and v != v) or (u is None and v is None) for u, v in zip(x, y)]
        assert all(same), name


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    **{**STREAMS, "keys": st.integers(1, 30)},
    buckets=st.integers(1, 4),
    null_keys=st.booleans(),
    late=st.integers(0, 3),
)
def test_split_state_emits_what_the_whole_bucket_emits(
    seed, n, keys, disorder, n_batches, buckets, null_keys, late
):
    """Every micro-batch emits the rows the whole layout on the same buckets emits, with the same
    values, and drops the same late rows (``late``: rows at or below the watermark join some
    micro-batches, of keys with history, of keys with only pending rows and of new keys, whose rows
    are not late); keys without rows, buckets woken by the watermark alone (RANGE FOLLOWING), NULL
    keys; at the end of input every row kept is out, equal to the batch evaluator's over them, and
    no row is left in the store."""
    table, batches, delay = _stream(seed, n, keys, disorder, n_batches)
    if null_keys:
        k = table["k"].to_numpy()
        table = table.set_column(0, "k", pa.array(k, mask=k % 3 == 0))
    rng = np.random.default_rng(seed + 1)
    split, whole = _drivers(CALLS, buckets)
    outs, fed, seen = [], [], -np.inf
    bounds = np.sort(batches)
    for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [n]))):
        part = table.slice(lo, hi - lo)
        if part.num_rows:
            seen = max(seen, part["t"].to_numpy().max())
        watermark = None if seen == -np.inf else int(seen - delay)
        if watermark is not None and late:  # rows at or below the watermark, some of new keys
            m = int(rng.integers(0, late + 1))
            part = pa.concat_tables(
                [part, _rows(rng, m, keys + 2, watermark, n + sum(f.num_rows for f in fed))]
            )
        fed.append(part)
        got, want = split.feed(part, watermark), whole.feed(part, watermark)
        _same(got, want)
        assert split.late_rows == whole.late_rows
        outs.append(got)
    for watermark in (int(seen - delay) + 3, int(seen - delay) + 1000, END_OF_INPUT):  # no rows
        got, want = split.feed(None, watermark), whole.feed(None, watermark)
        _same(got, want)
        outs.append(got)
    assert split.state_rows() == 0  # entries may keep counters, as the whole layout's parts do
    out, table = pa.concat_tables(outs), pa.concat_tables(fed)
    kept = set(out["rid"].to_pylist())
    assert len(kept) == table.num_rows - split.late_rows
    _check(table.filter(pa.array([r in kept for r in table["rid"].to_pylist()])), out, END_OF_INPUT)


def _rows(rng, m: int, keys: int, watermark: int, first_rid: int) -> pa.Table:
    """``m`` rows at or below ``watermark`` (by up to 3) over ``keys`` keys, ids from ``first_rid``."""
    return pa.table(
        {
            "k": rng.integers(0, keys, m),
            "t": watermark - rng.integers(0, 4, m),
            "rid": first_rid + np.arange(m),
            "x": rng.normal(size=m).round(2),
            "g": rng.integers(0, 4, m),
        },
        schema=SCHEMA,
    )


def test_a_late_row_of_a_key_with_only_pending_rows_is_late():
    """As in the whole layout, a key held only by pending rows (no history yet) is a key held: its
    row at or below the watermark is late, and the key's pending rows still emit."""
    split, whole = _drivers([("lag(x) OVER (ORDER BY t) AS p", 0, 0, None)], 1)
    first = pa.table({"k": [7], "t": [10], "rid": [1], "x": [1.0], "g": [0]}, schema=SCHEMA)
    behind = pa.table({"k": [7], "t": [3], "rid": [2], "x": [2.0], "g": [0]}, schema=SCHEMA)
    for d in (split, whole):
        assert d.feed(first, 5).num_rows == 0
        assert d.feed(behind, 6).num_rows == 0 and d.late_rows == 1
        assert d.feed(None, 10).column("rid").to_pylist() == [1]


def test_a_step_reads_only_the_keys_it_releases():
    """A bucket of 50 keys: rows above the watermark read no entry; moving the watermark past two
    keys' rows reads those two (and no other), and both emit."""
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", rowKey="rid", keyBuckets=1, stateLayout="chunked")
    m = SplitWindowClose(WindowClose(spec, SCHEMA, ("k",)))
    store = MemoryHistories()
    rows = pa.table(
        {
            "k": np.arange(50),
            "t": np.arange(50),
            "rid": np.arange(50),
            "x": np.ones(50),
            "g": np.zeros(50, int),
        },
        schema=SCHEMA,
    )
    assert m.step(store, rows, watermark=49).output.num_rows == 50
    assert len(store.entries) == 50 and store.pending_rows() == 0
    store.reads = 0
    later = (
        rows.slice(10, 2).set_column(1, "t", pa.array([100, 101])).set_column(2, "rid", pa.array([60, 61]))
    )
    assert m.step(store, later, watermark=50).output.num_rows == 0
    assert store.reads == 0 and store.pending_rows() == 2
    out = m.step(store, None, watermark=101)
    assert store.reads == 2
    assert out.output.column("p").to_pylist() == [1.0, 1.0] and out.output.column("rid").to_pylist() == [
        60,
        61,
    ]


def test_the_layout_is_refused_where_it_cannot_run():
    """It splits a bucket's state: refused per key; without keyBuckets it runs on the default buckets."""
    with pytest.raises(WindowSpecError, match='needs keyBuckets, not "per key"'):
        OverWindow("lag(x) OVER (ORDER BY t) AS p", stateLayout="chunked", keyBuckets="per key")
    chosen = OverWindow("lag(x) OVER (ORDER BY t) AS p", stateLayout="chunked")
    assert chosen.hosted(watermarked=True, by_columns=False).key_buckets == DEFAULT_KEY_BUCKETS
    with pytest.raises(WindowSpecError, match="stateTtl runs on stateLayout='whole'"):
        OverWindow("lag(x) OVER (ORDER BY t) AS p", stateLayout="chunked", keyBuckets=4, stateTtl=10)


@pytest.mark.parametrize("then", [2, 8])
def test_a_bucket_written_with_other_buckets_is_refused(then):
    def machine(buckets):
        spec = OverWindow(
            "lag(x) OVER (ORDER BY t) AS p", rowKey="rid", keyBuckets=buckets, stateLayout="chunked"
        )
        return SplitWindowClose(WindowClose(spec, SCHEMA, ("k",)))

    store = MemoryHistories()
    rows = pa.table({"k": [1], "t": [5], "rid": [1], "x": [1.0], "g": [0]}, schema=SCHEMA)
    machine(4).step(store, rows, watermark=1)
    with pytest.raises(StateFormatError, match=f"written with keyBuckets=4 .* now runs keyBuckets={then}"):
        machine(then).step(store, None, watermark=2)


def test_a_damaged_history_is_refused_not_misread():
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", rowKey="rid", keyBuckets=1, stateLayout="chunked")
    m = SplitWindowClose(WindowClose(spec, SCHEMA, ("k",)))
    store = MemoryHistories()
    rows = pa.table({"k": [1, 1], "t": [1, 9], "rid": [1, 2], "x": [1.0, 2.0], "g": [0, 0]}, schema=SCHEMA)
    m.step(store, rows, watermark=1)
    (key,) = store.entries
    store.entries[key] = store.entries[key][:30]
    with pytest.raises(StateFormatError, match="history cannot be decoded"):
        m.step(store, None, watermark=10)


def test_a_pending_row_with_a_nan_key_stays_pending_until_the_end():
    """A NaN ORDER BY key is above every watermark: its row stays pending (fed back to the machine
    every step, never judged late) and the end of input emits it, as in the whole layout."""
    schema = pa.schema([("k", pa.int64()), ("t", pa.float64()), ("rid", pa.int64())])
    rows = pa.table({"k": [1, 1, 2], "t": [1.0, float("nan"), 1.5], "rid": [1, 2, 3]}, schema=schema)
    outs = []
    for layout in ("chunked", "whole"):
        spec = OverWindow("count(*) OVER (ORDER BY t) AS c", rowKey="rid", keyBuckets=1, stateLayout=layout)
        d = Driver(spec, schema, ["k"])
        steps = [d.feed(rows, 0.5), d.feed(None, 2.0), d.feed(None, 3.0), d.feed(None, END_OF_INPUT)]
        outs.append([t.column("rid").to_pylist() for t in steps] + [d.late_rows])
    assert outs[0] == outs[1] == [[], [1, 3], [], [2], 0]


def test_the_end_of_input_reads_entries_in_any_order_with_rows_pending():
    """At the end of input every entry is read in the store's order (not the keys' order) and
    merged with the pending rows of the same keys: the rows come out as the whole layout's."""
    calls = [("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s", 0, 0, None)]
    split, whole = _drivers(calls, 1)

    def rows(k, t, rid):
        return pa.table(
            {"k": k, "t": t, "rid": rid, "x": [float(r) for r in rid], "g": [0] * len(k)}, schema=SCHEMA
        )

    feeds = [
        (rows([5, 5], [1, 2], [1, 2]), 2),  # key 5's entry first
        (rows([1, 1], [3, 4], [3, 4]), 4),  # then key 1's
        (rows([1, 5, 5, 1], [9, 8, 9, 8], [5, 6, 7, 8]), 5),  # pending for both
    ]
    for part, watermark in feeds:
        _same(split.feed(part, watermark), whole.feed(part, watermark))
    (store,) = split.states.values()
    assert list(store.entries) != sorted(store.entries) and store.pending_rows() == 4
    got, want = split.feed(None, END_OF_INPUT), whole.feed(None, END_OF_INPUT)
    _same(got, want)
    assert sorted(got["rid"].to_pylist()) == [5, 6, 7, 8]


def test_entries_of_version_1_go_on_and_new_entries_hold_emitted_rows_without_unread_columns():
    """``data/split_entries_v1.json``: a bucket's split state written at git 283d801 (entries of
    version 1, every column of every row) after a first micro-batch of three keys. It goes on
    exactly (the batch evaluator over every row), and the entries written now (version 2) hold the
    rows already emitted with the column no later step reads (the row key) NULL, the released rows
    still waiting for their FOLLOWING row whole."""
    import base64
    import json
    from pathlib import Path

    import overwindow
    from overwindow.streaming.window_close_split import ENTRY_TAG, ENTRY_TAGS_READ

    old = json.loads((Path(__file__).parent / "data" / "split_entries_v1.json").read_text())
    schema = pa.schema([("k", pa.int64()), ("rid", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])
    spec = OverWindow(*old["calls"], rowKey="rid", keyBuckets=4, stateLayout="chunked")
    machine = WindowClose(spec, schema, ("k",))
    split = SplitWindowClose(machine)
    store = MemoryHistories()
    store.meta = base64.b64decode(old["meta"])
    store.entries = {base64.b64decode(k): base64.b64decode(v) for k, v in old["entries"].items()}
    assert {e[:8] for e in store.entries.values()} == {ENTRY_TAGS_READ[0]}
    batch1, batch2 = (pa.Table.from_pylist(old[b], schema=schema) for b in ("batch1", "batch2"))
    whole = WindowClose(OverWindow(*old["calls"], rowKey="rid", keyBuckets=4), schema, ("k",))
    first = whole.step(None, batch1, old["watermark1"]).output
    second = split.step(store, batch2, old["watermark2"])
    assert {e[:8] for e in store.entries.values()} == {ENTRY_TAG}
    counters, rows = split._read_entries(list(store.entries.values()))
    n, emitted = counters.column("n").to_numpy(), counters.column("emitted").to_numpy()
    first_rows = np.concatenate([np.arange(c) < e for c, e in zip(n, emitted)])
    assert first_rows.any() and not first_rows.all()
    assert rows.column("rid").is_null().to_numpy(zero_copy_only=False).tolist() == first_rows.tolist()
    last = split.step(store, None, END_OF_INPUT)
    out = pa.concat_tables([first, second.output, last.output])
    everything = pa.concat_tables([batch1, batch2])
    want = {r["rid"]: r for r in overwindow.evaluate(everything, *spec.partitioned(("k",))).to_pylist()}
    assert sorted(out.column("rid").to_pylist()) == sorted(want)
    names = [c.rsplit(" AS ", 1)[1] for c in old["calls"]]
    for r in out.to_pylist():
        assert all(r[a] == pytest.approx(want[r["rid"]][a]) or r[a] is want[r["rid"]][a] for a in names)
