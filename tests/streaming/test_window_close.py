"""The emit-on-window-close machine through the in-memory driver. Oracle: the batch evaluator over
all rows, restricted to rows whose windows closed by the final watermark (from SQL's definitions)."""

import base64
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.spec import OverWindow
from overwindow.streaming.contract import CHANGE, DELETE, END_OF_INPUT, RowBoundError
from overwindow.streaming.driver import Driver
from overwindow.streaming.state import StateFormatError, StateMeta, WindowCloseMeta, decode, encode
from overwindow.streaming.window_close import STATE_KIND, WindowClose

# (SQL, rows ahead, peer groups ahead, RANGE distance ahead) a row needs before its window closes
CALLS = [
    ("x - lag(x) OVER (ORDER BY t) AS d", 0, 0, None),
    ("lag(x, 3, -1.0) IGNORE NULLS OVER (ORDER BY t) AS l3", 0, 0, None),
    ("avg(x) OVER (ORDER BY t ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) AS a10", 0, 0, None),
    ("sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING) AS s", 2, 0, None),
    ("lead(x, 2) OVER (ORDER BY t) AS ld", 2, 0, None),
    ("row_number() OVER (ORDER BY t) AS rn", 0, 0, None),
    ("rank() OVER (ORDER BY t) AS rk", 0, 0, None),
    ("dense_rank() OVER (ORDER BY t) AS dr", 0, 0, None),
    ("count(*) OVER (ORDER BY t RANGE BETWEEN 5 PRECEDING AND 3 FOLLOWING) AS c", 0, 0, 3),
    ("max(x) OVER (ORDER BY t GROUPS BETWEEN 2 PRECEDING AND 1 FOLLOWING EXCLUDE TIES) AS m", 0, 1, None),
    ("median(x) OVER (ORDER BY t RANGE BETWEEN 7 PRECEDING AND CURRENT ROW) AS med", 0, 0, None),
    (
        "first_value(x) IGNORE NULLS OVER (ORDER BY t ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS f",
        0,
        0,
        None,
    ),
    ("count(DISTINCT g) FILTER (WHERE x > 0) OVER (ORDER BY t ROWS 5 PRECEDING) AS cd", 0, 0, None),
]
COLUMNS = ["d", "l3", "a10", "s", "ld", "rn", "rk", "dr", "c", "m", "med", "f", "cd"]
SCHEMA = pa.schema(
    [("k", pa.int64()), ("t", pa.int64()), ("rid", pa.int64()), ("x", pa.float64()), ("g", pa.int64())]
)


def _data(rng, n, keys, disorder):
    t = np.sort(rng.integers(0, n // 2 + 1, n)) + rng.integers(0, disorder + 1, n)  # ties and disorder
    x = rng.normal(size=n).round(2)
    x = np.where(rng.random(n) < 0.1, np.nan, x)
    return pa.table(
        {
            "k": rng.integers(0, keys, n),
            "t": t,
            "rid": np.arange(n),
            "x": pa.array(x, mask=np.isnan(x)),
            "g": rng.integers(0, 4, n),
        },
        schema=SCHEMA,
    )


def _closed(table, watermark, calls):
    """rids whose windows have closed at ``watermark``, from the calls' look-ahead needs."""
    closed = set()
    for k in set(table["k"].to_pylist()):
        same = pa.compute.is_null(table["k"]) if k is None else pa.compute.equal(table["k"], k)
        part = table.filter(same).sort_by([("t", "ascending"), ("rid", "ascending")])
        t = part["t"].to_numpy()
        rel = t <= watermark
        n_rel = int(rel.sum())
        groups_after = np.array([len(set(t[:n_rel][t[:n_rel] > v])) for v in t[:n_rel]])
        ok = np.ones(n_rel, dtype=bool)
        for _, rows, groups, dist in calls:
            ok &= np.arange(n_rel) + rows < n_rel
            ok &= groups_after >= groups
            if dist is not None:
                ok &= t[:n_rel] + dist <= watermark
        closed |= set(part["rid"].to_numpy()[:n_rel][ok])
    return closed


def _run(table, batches, delay, calls=CALLS, buckets=None, ttl=None):
    spec = OverWindow(*(c[0] for c in calls), rowKey="rid", keyBuckets=buckets, stateTtl=ttl)
    driver = Driver(spec, SCHEMA, ["k"])
    outs, seen = [], -np.inf
    bounds = np.sort(batches)
    for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [table.num_rows]))):
        part = table.slice(lo, hi - lo)
        if part.num_rows:
            seen = max(seen, part["t"].to_numpy().max())
        outs.append(driver.feed(part, None if seen == -np.inf else int(seen - delay)))
    for _ in range(2):  # watermark moves on with no rows: idle keys flush on their wakeups
        seen += 1000
        outs.append(driver.feed(None, int(seen - delay)))
    return pa.concat_tables(outs), driver, int(seen - delay)


def _check(table, out, watermark, calls=CALLS):
    """Each row emitted once: the rows closed at ``watermark`` (END_OF_INPUT: every row), with the
    batch evaluator's values over all rows."""
    rids = out["rid"].to_pylist()
    assert len(rids) == len(set(rids)), "a row was emitted twice"
    closed = set(table["rid"].to_pylist()) if watermark == END_OF_INPUT else _closed(table, watermark, calls)
    assert set(rids) == closed
    spec = OverWindow(*(c[0] for c in calls), rowKey="rid")
    batch = overwindow.evaluate(
        table.sort_by([("t", "ascending"), ("rid", "ascending")]), *spec.partitioned(("k",))
    )
    want = batch.to_pandas().set_index("rid").loc[rids]
    got = out.to_pandas().set_index("rid")
    for name in [c[0].rsplit(" AS ", 1)[1] for c in calls]:
        np.testing.assert_allclose(
            got[name].to_numpy(dtype=float),
            want[name].to_numpy(dtype=float),
            rtol=1e-9,
            equal_nan=True,
            err_msg=name,
        )


# random streams: rows, partition keys, disorder in arrival, micro-batch count
STREAMS = dict(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 250),
    keys=st.integers(1, 4),
    disorder=st.integers(0, 6),
    n_batches=st.integers(1, 12),
)


def _stream(seed, n, keys, disorder, n_batches):
    """(rows in arrival order: by time with bounded disorder, so no row is late for watermark = max
    seen - delay; the micro-batch bounds; the delay)."""
    rng = np.random.default_rng(seed)
    table = _data(rng, n, keys, disorder)
    table = table.take(
        pa.array(np.argsort(table["t"].to_numpy() - rng.integers(0, disorder + 1, n), kind="stable"))
    )
    return table, rng.integers(0, n + 1, n_batches), 2 * disorder + 1


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(**STREAMS)
def test_union_of_emitted_rows_equals_batch_over_closed_windows(seed, n, keys, disorder, n_batches):
    table, batches, delay = _stream(seed, n, keys, disorder, n_batches)
    out, driver, watermark = _run(table, batches, delay)
    assert driver.late_rows == 0
    _check(table, out, watermark)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(**STREAMS)
def test_end_of_input_emits_every_row_as_the_batch_evaluator(seed, n, keys, disorder, n_batches):
    """After the last micro-batch, a step with the watermark END_OF_INPUT (on every key with a
    wakeup, as the driver steps keys with an event-time timeout) emits every row not emitted yet,
    including those waiting for FOLLOWING rows that never come: window close's output over all input
    equals the batch evaluator over all input; emit on update, fed the same batches, emits nothing
    more and its view equals it too. Rows sent after the end are late."""
    table, batches, delay = _stream(seed, n, keys, disorder, n_batches)
    out, driver, _ = _run(table, batches, delay)
    final = driver.feed(None, END_OF_INPUT)
    assert driver.late_rows == 0 and driver.state_rows() == 0
    _check(table, pa.concat_tables([out, final]), END_OF_INPUT)
    assert driver.feed(table.slice(0, 1), END_OF_INPUT).num_rows == 0 and driver.late_rows == 1

    spec = OverWindow(*(c[0] for c in CALLS), rowKey="rid", emit="on_update")
    updates = Driver(spec, SCHEMA, ["k"], watermarked=True)
    view = {}
    bounds = np.sort(batches)
    for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [n]))):
        steps = [updates.feed(table.slice(lo, hi - lo)), updates.feed(None, END_OF_INPUT)]
        for r in pa.concat_tables(steps).to_pylist():
            if r[CHANGE] == DELETE:
                view.pop(r["rid"])
            else:
                view[r["rid"]] = r
    for state in updates.states.values():  # the machine itself adds nothing at the end
        assert updates.machine.step(state, None, END_OF_INPUT).output.num_rows == 0
    as_changelog = pa.Table.from_pylist(list(view.values())).drop_columns([CHANGE])
    _check(table, as_changelog, END_OF_INPUT)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(**{**STREAMS, "keys": st.integers(1, 40)}, buckets=st.integers(1, 6), null_keys=st.booleans())
def test_a_bucket_of_many_keys_emits_what_a_state_per_key_emits(
    seed, n, keys, disorder, n_batches, buckets, null_keys
):
    """One state and one step per bucket of keys (keys without rows in a micro-batch, buckets woken
    by the watermark alone, NULL keys as one partition): every micro-batch emits the rows a state per
    key emits, with the batch evaluator's values, and the end of input empties every bucket."""
    table, batches, delay = _stream(seed, n, keys, disorder, n_batches)
    if null_keys:
        k = table["k"].to_numpy()
        table = table.set_column(0, "k", pa.array(k, mask=k % 3 == 0))
    out, driver, watermark = _run(table, batches, delay, buckets=buckets)
    per_key, _, _ = _run(table, batches, delay)
    assert driver.late_rows == 0
    assert sorted(out["rid"].to_pylist()) == sorted(per_key["rid"].to_pylist())
    _check(table, out, watermark)
    final = driver.feed(None, END_OF_INPUT)
    assert driver.state_rows() == 0
    _check(table, pa.concat_tables([out, final]), END_OF_INPUT)


def test_the_row_bound_names_the_key_inside_a_bucket():
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", rowKey="rid", maxRowsPerKey=3, keyBuckets=1)
    driver = Driver(spec, SCHEMA, ["k"])
    rows = [
        {"k": k, "t": 10 + i, "rid": 10 * k + i, "x": 1.0, "g": 0}
        for k, m in ((1, 2), (2, 4))
        for i in range(m)
    ]
    with pytest.raises(RowBoundError, match=r"the partition \(2,\) holds 4 rows"):
        driver.feed(pa.Table.from_pylist(rows, schema=SCHEMA), 0)


@pytest.mark.parametrize(
    "calls, counts",
    [
        (["max(x) OVER (ORDER BY t ROWS BETWEEN CURRENT ROW AND CURRENT ROW) AS m"], False),
        (["row_number() OVER (ORDER BY t) AS rn", "dense_rank() OVER (ORDER BY t) AS dr"], True),
    ],
)
def test_a_key_that_holds_nothing_loses_its_state(calls, counts):
    """Once every row of a key is emitted and pruned its state is removed, unless its numbering
    (row_number, rank) continues from the rows pruned; either way the key's later rows carry the
    batch evaluator's values over all its rows, and a bound on rows per key fails past it."""
    spec = OverWindow(*calls, rowKey="rid")
    driver = Driver(spec, SCHEMA, ["k"])

    def rows(k, ts, first):
        n = len(ts)
        return pa.table(
            {
                "k": [k] * n,
                "t": ts,
                "rid": range(first, first + n),
                "x": [float(t) for t in ts],
                "g": [0] * n,
            },
            schema=SCHEMA,
        )

    batches = [rows(1, [1, 2, 2, 3], 0), rows(2, [4, 9], 4), rows(1, [7, 8, 8], 6)]
    out = [driver.feed(batches[0], watermark=None), driver.feed(batches[1], watermark=5)]
    assert ((1,) in driver.states) == counts and (2,) in driver.states
    out += [driver.feed(batches[2], watermark=8), driver.feed(None, END_OF_INPUT)]
    _check(pa.concat_tables(batches), pa.concat_tables(out), END_OF_INPUT, [(c, 0, 0, None) for c in calls])

    bounded = Driver(OverWindow(*calls, rowKey="rid", maxRowsPerKey=3), SCHEMA, ["k"])
    with pytest.raises(RowBoundError, match=r"\(1,\) holds 4 rows in state, more than maxRowsPerKey=3"):
        bounded.feed(batches[0], watermark=None)


@pytest.mark.parametrize(
    "call",
    [
        ("lead(x, -2) OVER (ORDER BY t) AS p", 0, 0, None),
        ("lead(x, -1) IGNORE NULLS OVER (ORDER BY t) AS p", 0, 0, None),
        ("lag(x, -2) OVER (ORDER BY t) AS p", 2, 0, None),
    ],
)
def test_negative_offsets_read_the_other_way(call):
    """lead(x, -n) reads the row n rows back and lag(x, -n) the row n rows ahead: pruning keeps the
    rows they read and emission waits for them. (Pruning took lead for a look ahead whatever the
    sign, so lead(x, -2) came out NULL once rows were pruned.)"""
    rng = np.random.default_rng(7)
    table = _data(rng, 120, 2, 0)
    out, driver, watermark = _run(table, np.arange(0, 120, 3), delay=1, calls=[call])
    assert driver.late_rows == 0
    _check(table, out, watermark, [call])


@pytest.mark.parametrize(
    "call",
    [
        ("sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 4 PRECEDING) AS e", 0, 0, None),
        ("count(x) OVER (ORDER BY t ROWS BETWEEN 3 FOLLOWING AND 1 FOLLOWING) AS e", 1, 0, None),
        ("avg(x) OVER (ORDER BY t RANGE BETWEEN 2 PRECEDING AND 5 PRECEDING) AS e", 0, 0, None),
        ("count(*) OVER (ORDER BY t GROUPS BETWEEN 2 FOLLOWING AND 1 FOLLOWING) AS e", 0, 1, None),
    ],
)
def test_a_frame_starting_past_its_end_is_empty_on_a_stream(call):
    """More of SQL: a frame whose start lies past its end on one side of the row is empty (NULL
    sums, count 0; PostgreSQL and DuckDB, tests/test_differential.py), on a stream as in batch."""
    rng = np.random.default_rng(11)
    table = _data(rng, 150, 2, 3)
    out, driver, watermark = _run(table, np.arange(0, 150, 7), delay=4, calls=[call])
    assert driver.late_rows == 0 and out.num_rows > 0
    _check(table, out, watermark, [call])
    values = out["e"].to_pylist()
    assert values == ([0] * len(values) if call[0].startswith("count") else [None] * len(values))


def test_state_holds_only_what_future_frames_need():
    # distinct times, one key: after the stream the state holds the rows still waiting for 2 rows
    # after them, plus the history the frames of those rows reach (10 rows for the ROWS frame)
    n = 500
    table = pa.table(
        {
            "k": np.zeros(n, dtype=np.int64),
            "t": np.arange(n) * 10,
            "rid": np.arange(n),
            "x": np.arange(n, dtype=float),
            "g": np.zeros(n, dtype=np.int64),
        },
        schema=SCHEMA,
    )
    calls = [
        CALLS[0],
        CALLS[2],
        CALLS[3],
    ]  # lag, ROWS 10 PRECEDING .. 1 PRECEDING, ROWS 1 PRECEDING .. 2 FOLLOWING
    out, driver, watermark = _run(table, np.arange(0, n, 37), delay=0, calls=calls)
    _check(table, out, watermark, calls)
    # 2 rows wait for their FOLLOWING rows; the first of them reaches back 10 rows
    assert out.num_rows == n - 2
    assert driver.state_rows() == 2 + 10


def test_late_rows_are_dropped_and_counted():
    spec = OverWindow("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s", rowKey="rid")
    driver = Driver(spec, SCHEMA, ["k"])

    def rows(ts):
        return pa.table(
            {"k": [1] * len(ts), "t": ts, "rid": ts, "x": [1.0] * len(ts), "g": [0] * len(ts)}, schema=SCHEMA
        )

    first = driver.feed(rows([1, 2, 3, 10]), watermark=5)
    assert first["t"].to_pylist() == [1, 2, 3]
    second = driver.feed(rows([4, 5, 6, 12]), watermark=11)  # 4 and 5 are at or below the watermark 5
    assert driver.late_rows == 2
    assert second["t"].to_pylist() == [6, 10]
    assert second["s"].to_pylist() == [3.0, 3.0]


def test_ranks_continue_after_pruning():
    spec = OverWindow(
        "rank() OVER (ORDER BY t) AS r",
        "dense_rank() OVER (ORDER BY t) AS dr",
        "row_number() OVER (ORDER BY t) AS rn",
        rowKey="rid",
    )
    driver = Driver(spec, SCHEMA, ["k"])
    ts = [1, 1, 2, 3, 3, 3, 4, 5, 5, 6]
    table = pa.table(
        {"k": [0] * 10, "t": ts, "rid": range(10), "x": [0.0] * 10, "g": [0] * 10}, schema=SCHEMA
    )
    # each watermark stays below the next batch's first time, so no row is late
    outs = [
        driver.feed(table.slice(i, 2), watermark=ts[i + 2] - 1 if i + 2 < 10 else 100)
        for i in range(0, 10, 2)
    ]
    out = pa.concat_tables(outs + [driver.feed(None, watermark=100)])
    assert driver.state_rows() == 0
    assert out["r"].to_pylist() == [1, 1, 3, 4, 4, 4, 7, 8, 8, 10]
    assert out["dr"].to_pylist() == [1, 1, 2, 3, 3, 3, 4, 5, 5, 6]
    assert out["rn"].to_pylist() == list(range(1, 11))


@pytest.mark.parametrize(
    "call, words",
    [
        ("ntile(4) OVER (ORDER BY t) AS n", "ntile"),
        ("cume_dist() OVER (ORDER BY t) AS c", "cume_dist"),
        (
            "sum(x) OVER (ORDER BY t ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS s",
            "UNBOUNDED FOLLOWING",
        ),
        ("sum(x) OVER (ORDER BY t DESC) AS s", "ascending"),
        ("sum(x) OVER () AS s", "ORDER BY"),
        ("sum(x) OVER (PARTITION BY k ORDER BY t) AS s", "PARTITION BY comes from groupBy"),
        # a NaN bound sits where NaN keys sort, not at a distance the machines could measure
        (
            "sum(x) OVER (ORDER BY t RANGE BETWEEN CAST('NaN' AS DOUBLE) PRECEDING AND CURRENT ROW) AS s",
            "NaN RANGE offset",
        ),
    ],
)
def test_spec_errors_name_the_problem(call, words):
    with pytest.raises(WindowSpecError, match=words):
        OverWindow(call)


def test_calls_with_different_order_by_are_refused():
    with pytest.raises(WindowSpecError, match="same ORDER BY"):
        OverWindow("lag(x) OVER (ORDER BY t) AS a", "lag(x) OVER (ORDER BY rid) AS b")


def test_state_is_versioned_arrow_ipc_not_pickle():
    machine = WindowClose(OverWindow("lag(x) OVER (ORDER BY t) AS p"), SCHEMA)
    step = machine.step(
        None, pa.table({"k": [1], "t": [5], "rid": [1], "x": [1.0], "g": [0]}, schema=SCHEMA), None
    )
    assert b"pickle" not in step.state and step.state[4:5] == b"{"
    written = f'"version": {WindowCloseMeta.NEWEST}'.encode()
    assert written in step.state[:200]
    with pytest.raises(Exception, match="format"):
        WindowClose(OverWindow("lag(x) OVER (ORDER BY t) AS p"), SCHEMA).step(
            step.state.replace(written, b'"version": 9'), None, 10
        )


def test_formats_1_and_2_read_as_one_partition_and_not_as_a_bucket():
    """Window-close formats 1 and 2 held the same tables and counters (one partition per state):
    a state written by format 2 (tests/streaming/data) continues the same read as either, and a
    machine over many partitions per state refuses it rather than guess its key."""
    old = json.loads((Path(__file__).parent / "data" / "format2_states.json").read_text())["window_close"]
    schema = pa.schema([("k", pa.int64()), ("rid", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])
    spec = OverWindow(*old["calls"], rowKey="rid")
    state = base64.b64decode(old["state"])
    batch2 = pa.Table.from_pylist(old["batch2"], schema=schema)
    two = WindowClose(spec, schema).step(state, batch2, old["watermark2"])
    one = WindowClose(spec, schema).step(
        state.replace(b'"version": 2', b'"version": 1'), batch2, old["watermark2"]
    )
    assert two.output.num_rows and one.output.equals(two.output) and one.state == two.state
    with pytest.raises(StateFormatError, match="new checkpoint"):
        WindowClose(OverWindow(*old["calls"], rowKey="rid", keyBuckets=4), schema, keys=("k",)).step(
            state, batch2, old["watermark2"]
        )


@pytest.mark.parametrize("then", [None, 8])
def test_a_state_written_with_buckets_is_refused_under_other_buckets(then):
    """Buckets are fixed for a checkpoint's life: under another keyBuckets (or a state per key) the
    same keys land in other states, so a state written with keyBuckets=4 is refused, in those words."""
    rows = pa.table({"k": [1, 2], "t": [5, 6], "rid": [1, 2], "x": [1.0, 2.0], "g": [0, 0]}, schema=SCHEMA)
    written = WindowClose(OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets=4), SCHEMA, ("k",))
    state = written.step(None, rows, 5).state
    later = WindowClose(
        OverWindow("lag(x) OVER (ORDER BY t) AS p", keyBuckets=then), SCHEMA, ("k",) if then else ()
    )
    shown = then or '"per key"'
    with pytest.raises(StateFormatError, match=f"written with keyBuckets=4 .* now runs keyBuckets={shown}"):
        later.step(state, None, 7)


@pytest.mark.parametrize("seed", range(5))
def test_state_with_pending_rows_in_arrival_order_still_reads(seed):
    """States written before pending rows were kept in order (no ``pending_sorted`` in their meta)
    hold the pending rows as they arrived; a machine given such a state emits what the batch
    evaluator gives."""

    @dataclass
    class CountersBeforePendingSorted(StateMeta):  # the window-close counters such states hold
        n_released: int
        emitted: int
        pruned_rows: int
        pruned_groups: int
        released_upto: int | None
        late_rows: int

    rng = np.random.default_rng(seed)
    table = _data(rng, 120, 1, 30)  # one key; ties and disorder among the pending rows
    early = pa.compute.less_equal(table["t"], 40)
    before, after = (
        table.filter(early),
        table.filter(pa.compute.invert(early)),
    )  # nothing late for the second step
    machine = WindowClose(OverWindow(*(c[0] for c in CALLS), rowKey="rid"), SCHEMA)
    first = machine.step(None, before.take(pa.array(rng.permutation(before.num_rows))), watermark=20)
    tables, meta = decode(first.state, STATE_KIND, WindowCloseMeta)
    rows, (part,) = tables["rows"], tables["parts"].to_pylist()
    n = int(pa.compute.sum(pa.compute.less_equal(rows["t"], meta.released_upto)).as_py())
    arrival = rows.slice(n).take(pa.array(rng.permutation(rows.num_rows - n)))
    assert not arrival.equals(rows.slice(n))  # the pending rows really are out of order
    counters = {
        "n_released": n,
        # format 5 leaves out a counter that is 0 in every partition
        **{f: part.get(f, 0) for f in ("emitted", "pruned_rows", "pruned_groups")},
        **{f: getattr(meta, f) for f in ("released_upto", "late_rows")},
    }
    old = encode(
        {"rows": pa.concat_tables([rows.slice(0, n), arrival]).combine_chunks()},
        STATE_KIND,
        CountersBeforePendingSorted(**counters),
    )
    assert "pending_sorted" not in old[:200].decode(errors="ignore")
    steps = [first, machine.step(old, None, watermark=30)]  # a timeout: no new rows to merge with
    steps.append(machine.step(steps[-1].state, after, watermark=45))
    steps.append(machine.step(steps[-1].state, None, watermark=10**6))
    _check(table, pa.concat_tables([s.output for s in steps]), 10**6)


class Spread(overwindow.Aggregate):
    """max - min of the frame, written with only create/update/evaluate (the naive path)."""

    result_type = pa.float64()

    def create(self):
        return None

    def update(self, state, values):
        if len(values) == 0:
            return state
        lo, hi = float(np.min(values)), float(np.max(values))
        return (lo, hi) if state is None else (min(state[0], lo), max(state[1], hi))

    def evaluate(self, state):
        return None if state is None else state[1] - state[0]


def test_python_aggregate_in_a_stream():
    overwindow.register_aggregate("spread_wc", Spread)
    calls = [("spread_wc(x) OVER (ORDER BY t ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS sp", 1, 0, None)]
    rng = np.random.default_rng(12)
    table = _data(rng, 200, 3, 0)
    out, driver, watermark = _run(table, np.arange(0, 200, 17), delay=1, calls=calls)
    _check(table, out, watermark, calls)
    # the spread is checked against numpy over each frame, independently of the engine
    part = table.to_pandas().sort_values(["t", "rid"])
    for _k, g in part.groupby("k"):
        xs = g["x"].to_numpy()
        for i, rid in enumerate(g["rid"]):
            if rid in set(out["rid"].to_pylist()):
                frame = xs[max(0, i - 3) : i + 2]
                frame = frame[~np.isnan(frame)]
                want = frame.max() - frame.min() if len(frame) else None
                got = out.filter(pa.compute.equal(out["rid"], rid))["sp"][0].as_py()
                assert (got is None and want is None) or got == pytest.approx(want)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    distinct=st.integers(1, 80),
    n_batches=st.integers(1, 6),
    unit=st.sampled_from(["s", "us", "ns"]),
)
def test_released_rows_follow_order_by_then_row_key(seed, n, distinct, n_batches, unit):
    """Pending rows are released in (ORDER BY key, row key) order, whatever order they arrived in:
    by the keys alone when they are distinct, by the full sort when they tie (few distinct times;
    nanosecond times a few ns apart share their microsecond). row_number and lag(rid) make that
    order visible; the oracle sorts the rows by (t, rid) itself."""
    rng = np.random.default_rng(seed)
    schema = pa.schema([("k", pa.int64()), ("t", pa.timestamp(unit)), ("rid", pa.int64())])
    t = rng.integers(0, distinct, n) * (3 if unit == "ns" else 1000)
    table = pa.table(
        {"k": np.zeros(n, dtype=np.int64), "t": pa.array(t, pa.timestamp(unit)), "rid": rng.permutation(n)},
        schema=schema,
    )
    spec = OverWindow(
        "row_number() OVER (ORDER BY t) AS rn", "lag(rid) OVER (ORDER BY t) AS prev", rowKey="rid"
    )
    driver = Driver(spec, schema, ["k"])
    cuts = np.sort(rng.integers(0, n + 1, n_batches))
    outs = [
        driver.feed(table.slice(lo, hi - lo))
        for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [n])))
    ]
    outs.append(driver.feed(None, watermark=2**62))  # releases everything at once
    out = pa.concat_tables(outs)
    want = sorted(zip(t.tolist(), table["rid"].to_pylist()))
    rids = [r for _, r in want]
    assert out["rid"].to_pylist() == rids
    assert out["rn"].to_pylist() == list(range(1, n + 1))
    assert out["prev"].to_pylist() == [None] + rids[:-1]


def _sessions(table, batches, delay, ttl):
    """Each row's partition under ``stateTtl=ttl``, worked out from the definition: when a
    micro-batch's watermark is more than ``ttl`` past the newest of a key's rows so far, they are
    forgotten before the batch's rows join, and the key starts anew. Same micro-batches and
    watermarks as ``_run``."""
    newest, session, out = {}, {}, np.zeros(table.num_rows, dtype=np.int64)
    ks, ts = table["k"].to_pylist(), table["t"].to_pylist()
    seen = -np.inf
    bounds = np.sort(batches)
    feeds = list(zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [table.num_rows]))))
    for i, (lo, hi) in enumerate(feeds + [(0, 0), (0, 0)]):  # then two micro-batches without rows
        seen = max([seen, *ts[lo:hi]]) if i < len(feeds) else seen + 1000
        if seen == -np.inf:
            continue  # no watermark yet
        watermark = seen - delay
        for k, t in list(newest.items()):
            if watermark > t + ttl:
                del newest[k]
                session[k] = session.get(k, 0) + 1
        for r in range(lo, hi):
            newest[ks[r]] = max(newest.get(ks[r], -np.inf), ts[r])
            out[r] = session.get(ks[r], 0)
    return out


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(**{**STREAMS, "keys": st.integers(1, 12)}, ttl=st.integers(1, 12), buckets=st.sampled_from([None, 3]))
def test_state_ttl_forgets_idle_keys_as_if_their_partition_ended(
    seed, n, keys, disorder, n_batches, ttl, buckets
):
    """``stateTtl``: a key whose newest row the watermark has passed by more than the TTL is
    forgotten: its rows waiting for FOLLOWING rows are emitted as at the end of its partition and
    its later rows start a new partition. Every row is emitted once, with the batch evaluator's
    values over the partitions the definition gives (``_sessions``), per key and in buckets."""
    table, batches, delay = _stream(seed, n, keys, disorder, n_batches)
    out, driver, _ = _run(table, batches, delay, buckets=buckets, ttl=ttl)
    assert driver.late_rows == 0
    assert driver.state_rows() == 0 and not driver.states  # every key idle for 1000 > ttl: nothing kept
    session = _sessions(table, batches, delay, ttl)
    split = table.set_column(0, "k", pa.array(table["k"].to_numpy() * 1000 + session))
    _check(split, out, END_OF_INPUT)


def test_state_ttl_on_a_timestamp_key_restarts_lag_and_row_number():
    """One key, a TTL of one hour: rows 2 hours apart start the partition anew (lag NULL,
    row_number 1); rows 30 minutes apart go on. Expected values worked out by hand from SQL."""
    schema = pa.schema([("k", pa.int64()), ("t", pa.timestamp("us", tz="UTC")), ("x", pa.int64())])
    spec = OverWindow(
        "lag(x) OVER (ORDER BY t) AS p", "row_number() OVER (ORDER BY t) AS rn", stateTtl="1 hour"
    )
    driver = Driver(spec, schema, ["k"])
    minute = 60 * 10**6
    out = []
    for m, x in ((0, 1), (30, 2), (150, 3), (160, 4)):
        rows = pa.table({"k": [7], "t": pa.array([m * minute], schema.field("t").type), "x": [x]})
        out.append(driver.feed(rows, m * minute))
    out.append(driver.feed(None, 1000 * minute))
    got = pa.concat_tables(out).select(["x", "p", "rn"]).to_pylist()
    assert got == [
        {"x": 1, "p": None, "rn": 1},
        {"x": 2, "p": 1, "rn": 2},
        {"x": 3, "p": None, "rn": 1},  # 120 minutes after the newest row: forgotten at 150
        {"x": 4, "p": 3, "rn": 2},
    ]
    assert not driver.states


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(stateTtl="1 hour", emit="on_update"), "needs|follows with its watermark"),
        (dict(stateTtl=0), "positive"),
        (dict(stateTtl="soon"), "not an interval"),
        (dict(stateTtl=float("nan")), "positive"),
    ],
)
def test_state_ttl_refusals(kwargs, words):
    with pytest.raises(WindowSpecError, match=words):
        OverWindow("lag(x) OVER (ORDER BY t) AS p", **kwargs)


@pytest.mark.parametrize(
    "key_type, ttl, ok",
    [
        (pa.timestamp("us", tz="UTC"), 3600, False),
        (pa.timestamp("us", tz="UTC"), "1 hour", True),
        (pa.date32(), 2, True),
        (pa.int64(), "1 hour", False),
        (pa.float64(), 2.5, True),
    ],
)
def test_state_ttl_must_measure_the_order_by_key(key_type, ttl, ok):
    schema = pa.schema([("t", key_type), ("x", pa.int64())])
    spec = OverWindow("lag(x) OVER (ORDER BY t) AS p", stateTtl=ttl)
    if ok:
        WindowClose(spec, schema)
    else:
        with pytest.raises(WindowSpecError, match="does not measure ORDER BY t"):
            WindowClose(spec, schema)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 50),
    distinct=st.integers(1, 8),
    n_batches=st.integers(2, 8),
    buckets=st.sampled_from([None, 2]),
)
def test_emitted_rows_keep_their_order_without_the_columns_no_call_reads(
    seed, n, distinct, n_batches, buckets
):
    """Format 6 stores NULL in the columns no call reads (here the row key and a payload) of rows
    already emitted. Those rows stay as history, and may tie on the ORDER BY key with rows released
    but waiting for their FOLLOWING row; when new rows tie among themselves (the full sort by the
    row key), the history keeps its order. Few distinct times, a watermark moving up batch by
    batch, and lead/row_number make the order visible; the oracle sorts by (t, rid) itself. The
    payload of every row comes out as it went in."""
    rng = np.random.default_rng(seed)
    schema = pa.schema(
        [("k", pa.int64()), ("t", pa.int64()), ("rid", pa.int64()), ("x", pa.float64()), ("pay", pa.string())]
    )
    t = np.sort(rng.integers(0, distinct, n)) * 10 + rng.integers(0, 2, n)  # mostly in order
    rid = rng.permutation(n)
    table = pa.table(
        {
            "k": np.zeros(n, dtype=np.int64),
            "t": t,
            "rid": rid,
            "x": rng.normal(size=n).round(2),
            "pay": [f"p{r}" for r in rid],
        },
        schema=schema,
    )
    spec = OverWindow(
        "lead(x) OVER (ORDER BY t) AS nx",
        "row_number() OVER (ORDER BY t) AS rn",
        rowKey="rid",
        keyBuckets=buckets,
    )
    driver = Driver(spec, schema, ["k"])
    cuts = np.sort(rng.integers(0, n + 1, n_batches - 1))
    outs = []
    for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [n]))):
        part = table.slice(lo, hi - lo)
        # the watermark: below this batch's smallest time, so none of its rows is late
        outs.append(driver.feed(part, watermark=int(t[lo:].min()) - 1 if hi > lo else None))
    outs.append(driver.feed(None, watermark=END_OF_INPUT))  # the last row's lead: NULL
    out = pa.concat_tables(outs).to_pylist()
    order = sorted(range(n), key=lambda i: (t[i], rid[i]))
    x = table["x"].to_pylist()
    want = {
        int(rid[i]): (j + 1, x[order[j + 1]] if j + 1 < n else None, f"p{rid[i]}")
        for j, i in enumerate(order)
    }
    assert len(out) == n
    assert {r["rid"]: (r["rn"], r["nx"], r["pay"]) for r in out} == want


@pytest.mark.parametrize("buckets", [None, 2])
def test_not_null_columns_no_call_reads_go_on_across_steps(buckets):
    """Spark declares columns made by uuid() or lit() NOT NULL. Format 6 stores NULL in them for the
    rows already emitted, under the field as declared, so the next step's rows (NOT NULL too)
    join the held ones."""
    schema = pa.schema(
        [
            pa.field("k", pa.string(), nullable=False),
            ("t", pa.int64()),
            ("x", pa.int64()),
            pa.field("id", pa.string(), nullable=False),
        ]
    )
    driver = Driver(
        OverWindow("lag(x) OVER (ORDER BY t) AS p", rowKey="id", keyBuckets=buckets), schema, ["k"]
    )
    rows = [{"k": "a", "t": t, "x": 10 * t, "id": f"r{t}"} for t in range(1, 8)]
    outs = [
        driver.feed(pa.Table.from_pylist(rows[:2], schema=schema), watermark=1),
        driver.feed(pa.Table.from_pylist(rows[2:5], schema=schema), watermark=3),
        driver.feed(pa.Table.from_pylist(rows[5:], schema=schema), watermark=END_OF_INPUT),
    ]
    out = pa.concat_tables(outs).to_pylist()
    assert [(r["id"], r["k"], r["p"]) for r in out] == [
        (f"r{t}", "a", None if t == 1 else 10 * (t - 1)) for t in range(1, 8)
    ]
