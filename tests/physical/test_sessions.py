"""SESSION frames in the batch evaluator (physical/sessions.session_bounds) against a plain-Python
oracle written from the definition (docs/sessions.md): sort a partition by its ORDER BY value,
split it where two consecutive values are neither peers nor at most the gap apart (Spark's
session_window, tests/spark/test_sessions_spark.py), and every row's frame is its piece. Random rows
hit NULL partition and ORDER BY keys, ties, NaN, +-inf, -0.0, DESC, integer keys with fractional
gaps, 30-digit DECIMALs and times before 1970."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal as D

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import overwindow

CALLS = (
    "count(*) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS n",
    "sum(x) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS s",
    "min(x) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS lo",
    "max(x) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS hi",
    "first_value(t) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS start",
    "last_value(t) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS stop",
    "nth_value(t, 2) OVER (PARTITION BY k ORDER BY t {o} SESSION WITH GAP {g}) AS second",
)


def _peers(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def _rank(v, descending: bool):
    """Spark's sort order of a key: NULLs first ascending and last descending; NaN above numbers."""
    if v is None:  # sorted first, so last once the sort is reversed for DESC
        return (0,)
    if isinstance(v, float) and math.isnan(v):
        return (1, 1, 0.0)
    return (1, 0, v)


def _oracle(rows: list[dict], gap, descending: bool) -> dict[int, dict]:
    """Per row id, what each of CALLS gives, by the definition."""
    out = {}
    parts: dict = {}
    for r in rows:
        parts.setdefault(r["k"], []).append(r)
    for part in parts.values():
        part.sort(key=lambda r: _rank(r["t"], descending), reverse=descending)
        sessions, current = [], [part[0]]
        for prev, row in zip(part, part[1:]):
            a, b = prev["t"], row["t"]
            if _peers(a, b):
                same = True
            elif a is None or b is None:
                same = False
            else:
                with_gap = (b - a) if not descending else (a - b)
                same = with_gap <= gap  # NaN and inf - inf compare False
            if same:
                current.append(row)
            else:
                sessions.append(current)
                current = [row]
        sessions.append(current)
        for session in sessions:
            xs = [r["x"] for r in session if r["x"] is not None]
            values = {
                "n": len(session),
                "s": sum(xs) if xs else None,
                "lo": min(xs) if xs else None,
                "hi": max(xs) if xs else None,
                "start": session[0]["t"],
                "stop": session[-1]["t"],
                "second": session[1]["t"] if len(session) > 1 else None,
            }
            for r in session:
                out[r["id"]] = values
    return out


def _check(rows: list[dict], key_type: pa.DataType, gap, gap_sql: str, descending: bool):
    table = pa.table(
        {
            "id": pa.array([r["id"] for r in rows], pa.int64()),
            "k": pa.array([r["k"] for r in rows], pa.int64()),
            "t": pa.array([r["t"] for r in rows], key_type),
            "x": pa.array([r["x"] for r in rows], pa.int64()),
        }
    )
    order = "DESC" if descending else "ASC"
    calls = [c.format(o=order, g=gap_sql) for c in CALLS]
    got = overwindow.evaluate(table, *calls).to_pylist()
    want = _oracle(rows, gap, descending)
    for r in got:
        for name, value in want[r["id"]].items():
            assert _peers(r[name], value), (name, r, value)


def _rows(draw_keys, xs, ks):
    return [{"id": i, "k": k, "t": t, "x": x} for i, (k, t, x) in enumerate(zip(ks, draw_keys, xs))]


@st.composite
def _table(draw, keys):
    n = draw(st.integers(1, 40))
    ts = draw(st.lists(keys, min_size=n, max_size=n))
    ks = draw(st.lists(st.sampled_from([None, 1, 2]), min_size=n, max_size=n))
    xs = draw(st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=n, max_size=n))
    return _rows(ts, xs, ks)


_SETTINGS = settings(
    max_examples=80, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


@_SETTINGS
@given(
    rows=_table(st.one_of(st.none(), st.integers(-20, 20), st.sampled_from([-(2**63), 2**63 - 1]))),
    gap=st.sampled_from([1, 2, 3, D("2.5"), D("0.5"), 2**63]),
    descending=st.booleans(),
)
# found by a longer random run: int64's ends 2**63 apart under a gap of 2**63 are one session
# (the key plus a gap past int64 was clamped to int64's end first, splitting them)
@example(rows=_rows([0, -(2**63)], [None, None], [None, None]), gap=2**63, descending=False)
@example(rows=_rows([-5, -3], [None, None], [None, None]), gap=2**63, descending=False)  # no overflow
def test_integer_keys(rows, gap, descending):
    """An integer key against a gap the keys' differences compare with exactly (2.5 lets a
    difference of 2 join, not 3; int64's ends are a gap past int64 apart)."""
    _check(rows, pa.int64(), gap, str(gap), descending)


_FLOATS = st.one_of(
    st.none(),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0]),
    st.integers(-10, 10).map(float),
    st.floats(-10, 10, allow_nan=False),
)


@_SETTINGS
@given(rows=_table(_FLOATS), gap=st.sampled_from([1.0, 2.5, 0.25, math.inf]), descending=st.booleans())
def test_double_keys(rows, gap, descending):
    """NaN keys are peers of one another and within no gap of a number; inf beside inf are peers;
    -0.0 and 0.0 are peers (in one session under any gap)."""
    text = "CAST('Infinity' AS DOUBLE)" if math.isinf(gap) else f"{gap!r}E0"
    _check(rows, pa.float64(), gap, text, descending)


_WIDE = D(10) ** 27


@_SETTINGS
@given(
    rows=_table(st.one_of(st.none(), st.integers(-6, 6).map(lambda i: _WIDE + D(i) / 4))),
    gap=st.sampled_from([D("0.25"), D("0.5"), D("1.0000000001")]),
    descending=st.booleans(),
)
def test_thirty_digit_decimal_keys(rows, gap, descending):
    """DECIMAL(38, 10) keys around 10**27 (a DOUBLE cannot tell 0.25 apart there), compared exactly."""
    _check(rows, pa.decimal128(38, 10), gap, str(gap), descending)


_EPOCH = dt.datetime(1970, 1, 1)


@_SETTINGS
@given(
    rows=_table(
        st.one_of(st.none(), st.integers(-40, 40).map(lambda m: _EPOCH + dt.timedelta(minutes=m * 7)))
    ),
    minutes=st.sampled_from([7, 15, 30]),
    descending=st.booleans(),
)
def test_timestamp_keys_across_1970(rows, minutes, descending):
    """Times on both sides of 1970 under a gap of minutes: rows exactly the gap apart are one
    session (Spark's session_window merges a session ending at a row's time with the row's)."""
    gap = dt.timedelta(minutes=minutes)
    _check(rows, pa.timestamp("us"), gap, f"INTERVAL '{minutes}' MINUTE", descending)


def test_date_keys_in_whole_days():
    days = [dt.date(1969, 12, 30), dt.date(1969, 12, 31), dt.date(1970, 1, 2), None, dt.date(1970, 1, 5)]
    rows = [{"id": i, "k": 1, "t": d, "x": i} for i, d in enumerate(days)]
    _check(rows, pa.date32(), dt.timedelta(days=2), "INTERVAL '2' DAY", False)


def test_an_example_by_hand():
    """Clicks of two users, one session closed by a 30-minute pause, a NULL time on its own."""
    at = [dt.datetime(2024, 1, 1, 9, m) for m in (0, 10, 40, 41)] + [dt.datetime(2024, 1, 1, 10, 30), None]
    table = pa.table({"user": ["a"] * 5 + ["b"], "ts": pa.array(at[:5] + [None], pa.timestamp("us"))})
    out = overwindow.evaluate(
        table,
        "count(*) OVER (PARTITION BY user ORDER BY ts SESSION WITH GAP INTERVAL '30' MINUTE) AS clicks",
        "first_value(ts) OVER (PARTITION BY user ORDER BY ts SESSION WITH GAP INTERVAL '30' MINUTE) AS began",
    ).to_pydict()
    # 9:00, 9:10, 9:40, 9:41 chain (gaps 10, 30, 1 minutes); 10:30 is 49 minutes after 9:41
    assert out["clicks"] == [4, 4, 4, 4, 1, 1]
    assert out["began"] == [at[0]] * 4 + [at[4], None]


def test_decimal_gap_over_an_interval_is_checked():
    with pytest.raises(overwindow.WindowSpecError, match="needs a number"):
        overwindow.evaluate(
            pa.table({"t": [1, 2]}), "count(*) OVER (ORDER BY t SESSION WITH GAP INTERVAL '1' DAY) AS n"
        )
