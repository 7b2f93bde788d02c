"""Eviction of emit on update, through the machine: the rows at or above the watermark keep exact
results while the state drops what no later change can need."""

import decimal

import numpy as np
import pyarrow as pa
import pytest
from cdc_support import WIDE, WIDE_CALLS
from hypothesis import given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spec import OverWindow
from overwindow.streaming.driver import Driver
from overwindow.streaming.on_update import OnUpdate


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), calls=st.sampled_from(WIDE_CALLS[:2]))
def test_eviction_keeps_live_rows_exact(seed, calls):
    """With a watermark (rows arrive at most 20 behind it: none late), the rows at or above the
    watermark, whose frames the state still holds, carry the batch result over every row."""
    rng = np.random.default_rng(seed)
    spec = OverWindow(*calls, emit="on_update", rowKey="id")
    machine = OnUpdate(spec, WIDE, watermarked=True)
    state, everything, view, watermark = None, {}, {}, None
    for b in range(6):
        rows = [
            {
                "k": 0,
                "id": b * 300 + i,
                "t": b * 300 + i + int(rng.integers(0, 20)),
                "u": int(rng.integers(0, 100)),
                "op": None,
            }
            for i in range(300)
        ]
        everything.update((r["id"], r) for r in rows)
        step = machine.step(state, pa.Table.from_pylist(rows, schema=WIDE), watermark)
        assert step.late_rows == 0
        state = step.state
        view.update((r["id"], r) for r in step.output.to_pylist())
        watermark = max(r["t"] for r in rows) - 20
    spec_all = {k: v for k, v in view.items()}
    table = pa.Table.from_pylist(list(everything.values()), schema=WIDE).drop_columns(["op"])
    batch = overwindow.evaluate(table, *spec.partitioned(("k",)))
    checked = 0
    for r in batch.to_pylist():
        if r["t"] >= watermark:
            assert all(spec_all[r["id"]][a] == r[a] for a in spec.aliases), (r, spec_all[r["id"]])
            checked += 1
    assert checked > 0 and step.counters.state_rows < len(everything)


DECIMAL_KEY = pa.schema(
    [("k", pa.int64()), ("id", pa.int64()), ("t", pa.decimal128(12, 2)), ("x", pa.float64())]
)


def _decimal_rows(ids, keys):
    return pa.table(
        {
            "k": [0] * len(ids),
            "id": ids,
            "t": pa.array([decimal.Decimal(v) for v in keys], DECIMAL_KEY.field("t").type),
            "x": [1.0] * len(ids),
        },
        schema=DECIMAL_KEY,
    )


@pytest.mark.parametrize("layout", ["whole", "chunked"])
def test_a_decimal_offset_reaches_as_far_on_a_stream_as_in_batch(layout):
    """A RANGE offset with more digits than a DECIMAL key's scale is cast to it (0.125 over
    DECIMAL(12,2) is 0.13, as Spark casts it and the batch evaluator computes it): eviction keeps
    the row at 0.87, whose frame reaches a row at the watermark 1.00 that comes later (kept at
    0.125, the row was evicted and its sum stayed 1)."""
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND 0.125 FOLLOWING) AS f",
        emit="on_update",
        rowKey="id",
        stateLayout=layout,
    )
    driver = Driver(spec, DECIMAL_KEY, ["k"], watermarked=True, rows_per_chunk=2)
    batches = [
        (_decimal_rows([0, 1, 2], ["0.00", "0.87", "1.10"]), None),
        (_decimal_rows([3], ["1.20"]), 1.0),
        (_decimal_rows([4], ["1.00"]), 1.0),  # at the watermark: not late
    ]
    view = {}
    for rows, watermark in batches:
        view.update((r["id"], r["f"]) for r in driver.feed(rows, watermark).to_pylist())
    every = pa.concat_tables([rows for rows, _ in batches])
    want = {r["id"]: r["f"] for r in overwindow.evaluate(every, *spec.partitioned(("k",))).to_pylist()}
    assert view == want and want[1] == 2.0 and driver.late_rows == 0


def test_a_decimal_offset_closes_windows_as_the_batch_frames_end():
    """Emit on window close over a DECIMAL key: a row's frame ``CURRENT ROW AND 0.125 FOLLOWING``
    ends at key + 0.13, so the row at 0.87 waits for the watermark 1.00 and counts the row there
    (the offset's Decimal once failed against the key's doubles with a TypeError)."""
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND 0.125 FOLLOWING) AS f", rowKey="id"
    )
    driver = Driver(spec, DECIMAL_KEY, ["k"])
    first = driver.feed(_decimal_rows([0, 1], ["0.00", "0.87"]), 0.995)
    assert first["id"].to_pylist() == [0]  # 0.87 + 0.13 is past the watermark
    rest = driver.feed(_decimal_rows([2, 3], ["1.00", "2.00"]), 1.5)
    every = pa.concat_tables(
        [_decimal_rows([0, 1], ["0.00", "0.87"]), _decimal_rows([2, 3], ["1.00", "2.00"])]
    )
    want = {r["id"]: r["f"] for r in overwindow.evaluate(every, *spec.partitioned(("k",))).to_pylist()}
    got = {r["id"]: r["f"] for r in pa.concat_tables([first, rest]).to_pylist()}
    assert got == {i: want[i] for i in (0, 1, 2)} and got[1] == 2.0


@pytest.mark.parametrize("lag", [False, True])
def test_a_key_gone_quiet_keeps_only_what_a_later_row_of_it_would_read(lag):
    """Nexmark's auctions on update: key i gets five rows (t = 10i to 10i + 4), then none. A change
    that is not late comes at or above the watermark, after every row of a quiet key: it alters
    none of them and reads, through ``RANGE 10 PRECEDING``, only rows keyed at least the watermark
    less 10 (and through ``lag(x, 2)`` its key's last two rows). So once the watermark has passed
    a key's rows by 10 they leave the state; the state held every row of every key before. The
    answers are the batch's over every row. (A bucket evicts when it steps, on rows of its own:
    one bucket here, stepped every batch.)"""
    calls = ["count(*) OVER (ORDER BY t RANGE BETWEEN 10 PRECEDING AND CURRENT ROW) AS c"]
    calls += ["lag(x, 2) OVER (ORDER BY t) AS p"] if lag else []
    spec = OverWindow(*calls, emit="on_update", rowKey="id", keyBuckets=1)
    driver = Driver(spec, INT_KEY, ["k"], watermarked=True)
    every, got, watermark = [], {}, None
    for i in range(30):
        watermark = 10 * i - 15 if i > 1 else None
        ids, t = range(5 * i, 5 * i + 5), range(10 * i, 10 * i + 5)
        rows = pa.table({"k": [i] * 5, "id": ids, "t": t, "x": [float(i)] * 5}, schema=INT_KEY)
        every.append(rows)
        got.update((r["id"], r) for r in driver.feed(rows, watermark).to_pylist())
    want = overwindow.evaluate(pa.concat_tables(every), *spec.partitioned(("k",))).to_pylist()
    assert all(got[r["id"]][a] == r[a] for r in want for a in spec.aliases)
    # held: the rows keyed at least the watermark less 10, and each quiet key's last two rows
    held = [t for t in range(300) if t % 10 < 5 and (t >= watermark - 10 or (lag and t % 10 >= 3))]
    assert driver.state_rows() == len(held) < 150 / 2  # of 150 rows


INT_KEY = pa.schema([("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])


@pytest.mark.parametrize("buckets", [1, None])
def test_a_change_before_the_first_live_row_reads_as_far_back_as_its_range_frame_reaches(buckets):
    """``RANGE 3 PRECEDING``: rows at 29 and 34, then the watermark 31. The first row at or above it
    is 34, whose frame reads back to 31, but a change may still come at 31, which reads back to 28:
    the row at 29 stays. Stream and batch agree (the row was once evicted and the change at 31
    counted 1 instead of 2)."""
    spec = OverWindow(
        "count(*) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS c",
        emit="on_update",
        rowKey="id",
        keyBuckets=buckets,
    )
    driver = Driver(spec, INT_KEY, ["k"], watermarked=True)
    batches = [([0, 1], [29, 34], None), ([2], [35], 31), ([3], [31], 31)]
    got, every = {}, []
    for ids, t, watermark in batches:
        rows = pa.table({"k": [0] * len(ids), "id": ids, "t": t, "x": [1.0] * len(ids)}, schema=INT_KEY)
        every.append(rows)
        got.update((r["id"], r["c"]) for r in driver.feed(rows, watermark).to_pylist())
    want = overwindow.evaluate(pa.concat_tables(every), *spec.partitioned(("k",))).to_pylist()
    assert got == {r["id"]: r["c"] for r in want} and got[3] == 2 and driver.late_rows == 0


def test_a_decimal_range_floor_keeps_the_row_at_its_edge():
    """A DECIMAL key's frames are exact while eviction compares its doubles: 0.05 - 0.02 is
    0.030000000000000002 in doubles, and a quiet partition evicted at the watermark 0.05 once
    dropped its row at 0.03, which ``RANGE 0.02 PRECEDING`` of a change at 0.05 reads."""
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t RANGE BETWEEN 0.02 PRECEDING AND CURRENT ROW) AS s",
        emit="on_update",
        rowKey="id",
        keyBuckets=1,
    )
    driver = Driver(spec, DECIMAL_KEY, ["k"], watermarked=True)
    first = _decimal_rows([0, 1], ["0.01", "0.03"])
    other = _decimal_rows([2], ["0.06"]).set_column(0, "k", pa.array([1]))  # steps the bucket: key 0 quiet
    later = _decimal_rows([3], ["0.05"])
    driver.feed(first, None)
    driver.feed(other, 0.05)
    got = {r["id"]: r["s"] for r in driver.feed(later, 0.05).to_pylist()}
    every = pa.concat_tables([first, other, later])
    want = {r["id"]: r["s"] for r in overwindow.evaluate(every, *spec.partitioned(("k",))).to_pylist()}
    assert got[3] == want[3] == 2.0 and driver.late_rows == 0


def test_a_decimal_range_end_keeps_the_row_whose_frame_reaches_the_watermark():
    """The same for a RANGE frame's end: ``0.02 FOLLOWING`` of the row at 0.03 reaches a change at
    the watermark 0.05, so the row stays (0.05 - 0.02 in doubles is above 0.03) and the change
    updates it."""
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t RANGE BETWEEN CURRENT ROW AND 0.02 FOLLOWING) AS s",
        emit="on_update",
        rowKey="id",
    )
    driver = Driver(spec, DECIMAL_KEY, ["k"], watermarked=True)
    first = _decimal_rows([0, 1, 2], ["0.01", "0.03", "0.06"])
    later = _decimal_rows([3], ["0.05"])
    driver.feed(first, None)
    driver.feed(_decimal_rows([4], ["0.07"]), 0.05)  # evicts the row at 0.01
    got = {r["id"]: r["s"] for r in driver.feed(later, 0.05).to_pylist()}
    every = pa.concat_tables([first, _decimal_rows([4], ["0.07"]), later])
    want = {r["id"]: r["s"] for r in overwindow.evaluate(every, *spec.partitioned(("k",))).to_pylist()}
    assert got == {i: want[i] for i in (1, 3)} and driver.late_rows == 0


@pytest.mark.parametrize("emit", ["on_window_close", "on_update"])
def test_an_offset_that_casts_to_null_is_refused_on_a_stream(emit):
    """An infinite DOUBLE offset over a DECIMAL key is NULL once cast (as Spark casts it, and as
    the batch evaluator computes it); a stream refuses it when its machine is built, as it refuses
    a NULL offset, rather than fail on its first rows."""
    spec = OverWindow(
        "sum(x) OVER (ORDER BY t RANGE BETWEEN CAST('Infinity' AS DOUBLE) PRECEDING AND CURRENT ROW) AS s",
        emit=emit,
        rowKey="id",
    )
    with pytest.raises(WindowSpecError, match="NULL RANGE offset over ORDER BY t"):
        Driver(spec, DECIMAL_KEY, ["k"], watermarked=True)


EVICTING_CALLS = [
    "lag(x) OVER (ORDER BY t) AS a",
    "lag(x, 3) OVER (ORDER BY t) AS b",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN 4 PRECEDING AND 1 PRECEDING) AS c",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS d",
    "count(*) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS e",
    "count(*) OVER (ORDER BY t GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS f",
    "lead(x) OVER (ORDER BY t) AS g",
]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 14), min_size=1, max_size=8),
    calls=st.lists(st.sampled_from(EVICTING_CALLS), min_size=1, max_size=3, unique=True),
    seed=st.integers(0, 2**32 - 1),
    watermark=st.integers(0, 40),
)
def test_partitions_too_short_for_a_rows_frame_are_left_out_for_what_they_would_drop(
    sizes, calls, seed, watermark
):
    """Eviction leaves out partitions with no more rows before the watermark than a ROWS frame
    keeps (``rows_kept``); looking at them anyway drops nothing more from any partition: keys with
    ties, NULL-free, partitions of 0 to 14 rows."""
    from overwindow.streaming.eviction import Eviction
    from overwindow.streaming.reach import ReachFinder

    rng = np.random.default_rng(seed)
    sizes = [s for s in sizes if s] or [1]
    parts = np.repeat(np.arange(len(sizes)), sizes)
    t = np.concatenate([np.sort(rng.integers(0, 40, s)) for s in sizes])
    codes = np.unique(parts * 100 + t, return_inverse=True)[1]
    rows = pa.table({"t": t, "x": np.ones(len(t))})
    spec = OverWindow(*calls, emit="on_update")
    fast = Eviction(ReachFinder(spec.calls, spec.calls[0].order_by))
    every = Eviction(ReachFinder(spec.calls, spec.calls[0].order_by))
    every.rows_kept = -1  # looks at every partition, the first live row its first too
    got = fast.evict(rows, codes, watermark, parts=parts)
    want = every.evict(rows, codes, watermark, parts=parts)
    assert got.rows.tolist() == want.rows.tolist() and got.groups.tolist() == want.groups.tolist()


LOOKING_BACK = [
    "lag(x) OVER (ORDER BY t) AS a",
    "lag(x, 3) OVER (ORDER BY t) AS b",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN 4 PRECEDING AND 1 PRECEDING) AS c",
    "count(*) OVER (ORDER BY t RANGE BETWEEN {3} PRECEDING AND CURRENT ROW) AS d",
    "max(x) OVER (ORDER BY t RANGE BETWEEN {7} PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) AS e",
    "count(*) OVER (ORDER BY t GROUPS BETWEEN CURRENT ROW AND CURRENT ROW) AS f",
    "rank() OVER (ORDER BY t) AS g",
    "sum(x) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS h",
]


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 14), min_size=1, max_size=8),
    calls=st.lists(st.sampled_from(LOOKING_BACK), min_size=1, max_size=3, unique=True),
    seed=st.integers(0, 2**32 - 1),
    watermark=st.integers(0, 40),
    back=st.one_of(st.none(), st.integers(0, 10)),
    timestamps=st.booleans(),
)
def test_calls_that_look_back_evict_what_the_frame_reach_keeps(
    sizes, calls, seed, watermark, back, timestamps
):
    """Calls whose reach ends at the current row and that read back by ROWS or RANGE offsets
    (``looks_back``) evict without a frame reach what the reach-based walk evicts, with or without
    the last eviction's watermark (``since``) and touched partitions: integer keys, and TIMESTAMP
    keys (seconds) under INTERVAL offsets, with ties, partitions of 0 to 14 rows."""
    from overwindow.streaming.eviction import Eviction
    from overwindow.streaming.reach import ReachFinder

    rng = np.random.default_rng(seed)
    sizes = [s for s in sizes if s] or [1]
    parts = np.repeat(np.arange(len(sizes)), sizes)
    t = np.concatenate([np.sort(rng.integers(0, 40, s)) for s in sizes])
    codes = np.unique(parts * 100 + t, return_inverse=True)[1]
    offset = (lambda n: f"INTERVAL {n} SECONDS") if timestamps else str
    spec = OverWindow(
        *(c.replace("{3}", offset(3)).replace("{7}", offset(7)) for c in calls), emit="on_update"
    )
    key = pa.array(t * 1_000_000, pa.timestamp("us")) if timestamps else pa.array(t)
    rows = pa.table({"t": key, "x": np.ones(len(t))})
    scale = 1_000_000 if timestamps else 1
    since = None if back is None else (watermark - back) * scale
    touched = None if back is None else rng.random(len(sizes)) < 0.5
    fast = Eviction(ReachFinder(spec.calls, spec.calls[0].order_by))
    walk = Eviction(ReachFinder(spec.calls, spec.calls[0].order_by))
    walk.looks_back = False  # finds the frame reach around every partition's first live row
    assert fast.looks_back
    got = fast.evict(rows, codes, watermark * scale, parts=parts, since=since, touched=touched)
    want = walk.evict(rows, codes, watermark * scale, parts=parts, since=since, touched=touched)
    assert got.rows.tolist() == want.rows.tolist() and got.groups.tolist() == want.groups.tolist()
