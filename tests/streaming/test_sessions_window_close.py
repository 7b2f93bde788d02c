"""SESSION frames on emit on window close (streaming/session_close.py, docs/sessions.md): every row
is emitted once, when the watermark reaches its session's last ORDER BY value plus the gap, with the
values the batch evaluator gives it over all rows; the state holds the rows of open sessions only.
Pure: the in-memory driver, no Spark."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from values_support import same

import overwindow
from overwindow.spec import OverWindow
from overwindow.streaming.contract import END_OF_INPUT
from overwindow.streaming.driver import Driver

SCHEMA = pa.schema([("k", pa.int64()), ("id", pa.int64()), ("t", pa.int64()), ("x", pa.float64())])


def calls(gap: str) -> tuple[str, ...]:
    over = f"OVER (ORDER BY t SESSION WITH GAP {gap})"
    return (
        f"count(*) {over} AS n",
        f"sum(x) {over} AS s",
        f"first_value(t) {over} AS began",
        f"last_value(t) {over} AS ended",
        f"nth_value(x, 2) {over} AS second",
        f"x - avg(x) {over} AS off",
    )


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32 - 1),
    gap=st.sampled_from(["1", "2", "2.5", "4"]),
    n_batches=st.integers(1, 8),
    batch_size=st.integers(1, 20),
    buckets=st.sampled_from([None, None, 2]),
    advance=st.integers(0, 6),
    other=st.sampled_from([None, None, "1", "6"]),
    qualify=st.booleans(),
)
def test_each_row_once_final_as_batch_and_closed_sessions_leave(
    seed, gap, n_batches, batch_size, buckets, advance, other, qualify
):
    """Random rows out of time order (ties, rows bridging sessions still open, NULL keys); rows at
    or below the watermark are dropped before the machine, as Spark drops late rows before an
    event-time operator. After every micro-batch: each emitted row's values are the batch
    evaluator's over all rows that were fed (later rows cannot change a closed session), no row is
    emitted twice, and the state holds exactly the rows not emitted yet, none of them in a session
    the watermark has closed. At the end of input every row has been emitted. ``other``: calls over
    sessions of a second gap beside (a row is final when its sessions of both gaps have closed);
    ``qualify``: a condition on the results, the rows failing it never emitted."""
    rng = np.random.default_rng(seed)
    texts = calls(gap)
    if other:
        texts += (
            f"count(*) OVER (ORDER BY t SESSION WITH GAP {other}) AS n2",
            f"last_value(t) OVER (ORDER BY t SESSION WITH GAP {other}) AS ended2",
        )
    names = [t.rsplit(" AS ", 1)[1] for t in texts]
    condition = "n >= 2 OR x IS NULL" if qualify else None
    spec = OverWindow(*texts, rowKey="id", keyBuckets=buckets, qualify=condition)
    driver = Driver(spec, SCHEMA, ["k"])
    fed, emitted, watermark, next_id = [], {}, None, 0
    batches = []
    for _ in range(n_batches):
        rows = []
        for _ in range(batch_size):
            t = int(rng.integers(0, 40))
            if watermark is not None and t <= watermark:
                continue  # late: Spark drops it before the operator
            k = [None, 1, 2][int(rng.integers(0, 3))]
            x = None if rng.random() < 0.15 else float(rng.integers(-9, 9))
            rows.append({"k": k, "id": next_id, "t": t, "x": x})
            next_id += 1
        fed += rows
        watermark = (watermark or 0) + advance
        batches.append((rows, watermark))
    batches.append(([], END_OF_INPUT))
    so_far = 0
    for rows, mark in batches:
        out = driver.feed(pa.Table.from_pylist(rows, schema=SCHEMA), mark)
        so_far += len(rows)
        for r in out.to_pylist():
            assert r["id"] not in emitted, r  # once
            emitted[r["id"]] = r
            # only closed sessions: no integer key above the watermark lies within either gap
            assert mark == END_OF_INPUT or r["ended"] + math.floor(float(gap)) <= mark
            assert mark == END_OF_INPUT or not other or r["ended2"] + math.floor(float(other)) <= mark
        if not qualify:
            assert driver.state_rows() == so_far - len(emitted)  # closed sessions left the state
    batch = []
    if fed:
        batch = overwindow.evaluate(pa.Table.from_pylist(fed, schema=SCHEMA), *spec.partitioned(("k",)))
        batch = batch.to_pylist()
    kept = [r for r in batch if not qualify or r["n"] >= 2 or r["x"] is None]
    assert set(emitted) == {r["id"] for r in kept}
    if fed:
        for r in kept:
            for name in names:
                assert same(emitted[r["id"]][name], r[name], abs_tol=1e-12), (name, r, emitted[r["id"]])
    assert driver.state_rows() == 0 and not driver.states  # every session closed and left


def test_sessions_close_at_their_last_row_plus_the_gap_and_late_rows_are_counted():
    spec = OverWindow(*calls("3"), rowKey="id")
    driver = Driver(spec, SCHEMA, ["k"])

    def feed(rows, mark):
        table = pa.Table.from_pylist([dict(zip(("id", "t", "x"), r), k=1) for r in rows], schema=SCHEMA)
        return {r["id"]: (r["n"], r["began"], r["ended"]) for r in driver.feed(table, mark).to_pylist()}

    # sessions {0, 1} and {5, 6}: the first ends at 1 + 3 = 4
    assert feed([(1, 0, 1.0), (2, 1, 2.0), (3, 5, 3.0), (4, 6, 4.0)], 3) == {}
    assert driver.state_rows() == 4
    # t=4 bridges them before the watermark reaches 4: one session of five, ending at 6 + 3
    assert feed([(5, 4, 5.0)], 8) == {}
    assert feed([], 9) == {i: (5, 0, 6) for i in (1, 2, 3, 4, 5)}
    assert driver.state_rows() == 0 and not driver.states
    # a key whose state is gone judges lateness by the host's watermark (Spark's filter); one
    # still holding rows counts rows at or below the watermark it reached as late
    assert feed([(6, 20, 1.0)], 10) == {}
    assert feed([(7, 9, 1.0), (8, 22, 2.0)], 10) == {}
    assert driver.late_rows == 1
    assert feed([], END_OF_INPUT) == {6: (2, 20, 22), 8: (2, 20, 22)}


@pytest.mark.parametrize(
    "gap, times, mark",
    [
        # sessions ending past int64 max: wrapped, their ends were negative and closed at once
        ("100", (2**63 - 10, 2**63 - 5), 0),
        ("9223372036854775807", (-5, 3), 2**62),
        # a gap past int64 itself: numpy refused the sum (OverflowError) or rounded it
        ("9223372036854775808", (-(2**63), -1), 2**63 - 2),
        ("18446744073709551616", (-(2**63), 2**63 - 1), 2**63 - 1),
    ],
)
def test_sessions_ending_past_every_bigint_close_only_at_the_end_of_input(gap, times, mark):
    """A session whose last key plus the gap lies past every BIGINT stays open under every
    watermark a BIGINT can hold, and closes at the end of input with the batch evaluator's values;
    the exact end of a session that fits still closes it (``-1 + 2**63`` is BIGINT max)."""
    spec = OverWindow(*calls(gap), rowKey="id")
    driver = Driver(spec, SCHEMA, ["k"])
    rows = [{"k": 1, "id": i, "t": t, "x": float(i)} for i, t in enumerate(times)]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    assert driver.feed(table, mark).num_rows == 0
    assert driver.state_rows() == len(rows)
    out = {r["id"]: r for r in driver.feed(table.slice(0, 0), END_OF_INPUT).to_pylist()}
    batch = overwindow.evaluate(table, *spec.partitioned(("k",))).to_pylist()
    assert set(out) == {r["id"] for r in batch}
    for r in batch:
        assert all(same(out[r["id"]][n], r[n]) for n in ("n", "s", "began", "ended", "second", "off"))
    assert driver.state_rows() == 0 and not driver.states


def test_a_session_ending_at_bigint_max_closes_at_that_watermark():
    spec = OverWindow(*calls("9223372036854775808"), rowKey="id")
    driver = Driver(spec, SCHEMA, ["k"])
    table = pa.Table.from_pylist([{"k": 1, "id": 0, "t": -1, "x": 1.0}], schema=SCHEMA)
    assert driver.feed(table, 2**63 - 2).num_rows == 0
    assert driver.feed(table.slice(0, 0), 2**63 - 1).to_pylist()[0]["ended"] == -1
