"""Shifting ORDER BY keys by an offset (physical/key_shift.py): ``shift_key`` over a TIMESTAMP key is
calendar arithmetic across the whole calendar, against Python's datetime, and clamps past the int64
microseconds instead of wrapping. Frames that reach through these shifts: tests/physical/test_bounds.py."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_bounds import SETTINGS, Beyond, shift

from overwindow import Interval
from overwindow.physical.key_shift import saturating_add, shift_key


@settings(max_examples=300, **SETTINGS)
@given(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    st.one_of(st.integers(0, 40), st.integers(0, 12 * 10_000)),
    st.integers(0, 4_000_000),
    st.integers(0, 86_400_000_000 * 3),
    st.sampled_from([1, -1]),
)
def test_shift_key_is_calendar_arithmetic(when, months, days, micros, sign):
    """TIMESTAMP + / - INTERVAL over the whole calendar against Python's datetime (months first, the
    day cut to the month's end, then days and microseconds); a result past year 9999 or before year
    1 (beyond Python's datetime) must still lie past the end of the calendar on its side."""
    epoch = dt.datetime(1970, 1, 1)
    us = (when - epoch) // dt.timedelta(microseconds=1)
    got = int(
        shift_key(np.array([us], dtype=np.int64), pa.timestamp("us"), Interval(months, days, micros), sign)[0]
    )
    want = shift(when, Interval(months, days, micros), sign)
    if isinstance(want, Beyond):
        edge = dt.datetime(9999, 12, 31, 23, 59, 59, 999999) if sign > 0 else dt.datetime(1, 1, 1)
        edge_us = (edge - epoch) // dt.timedelta(microseconds=1)
        assert got > edge_us if sign > 0 else got < edge_us
    else:
        assert got == (want - epoch) // dt.timedelta(microseconds=1)


@pytest.mark.parametrize(
    "offset, sign, clamped",
    [
        (Interval(months=10**11), 1, 2**63 - 1),
        (Interval(months=10**11), -1, -(2**63)),
        (Interval(days=10**12), 1, 2**63 - 1),
        (Interval(days=10**12), -1, -(2**63)),
        (Interval(months=1, micros=2**63), 1, 2**63 - 1),
    ],
)
def test_shift_key_clamps_past_int64(offset, sign, clamped):
    """Past the int64 microseconds an interval clamps to their end instead of wrapping around."""
    us = np.array([0, 253_402_300_799_999_999], dtype=np.int64)  # 1970-01-01, 9999-12-31 23:59:59.999999
    assert shift_key(us, pa.timestamp("us"), offset, sign).tolist() == [clamped, clamped]


_I64 = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 2, 2**63 - 1]),
)


@settings(max_examples=300, **SETTINGS)
@example(values=[-(2**63), 5], delta=2**63 + 1)  # -2**63 + 2**63 + 1 is 1, not clamped first
@example(values=[-5, -3], delta=2**63)  # sums that fit, of a delta past int64
@example(values=[2**63 - 1], delta=-(2**64))
@given(values=st.lists(_I64, min_size=1, max_size=8), delta=st.integers(-(2**64) - 2, 2**64 + 2))
def test_saturating_add_is_exact_where_the_sum_fits_and_says_where_it_does_not(values, delta):
    """Against Python's integers: each sum that fits int64 is exact, each other one is flagged
    and clamped to the end it passes, for deltas past int64 too (a SESSION gap of 2**63 over
    int64's ends: found by a longer random run, which also met an OverflowError on keys all
    negative)."""
    total, beyond = saturating_add(np.array(values, dtype=np.int64), delta, min(values), max(values))
    for j, v in enumerate(values):
        exact = v + delta
        past = not -(2**63) <= exact <= 2**63 - 1
        assert (beyond is not None and bool(beyond[j])) == past, (v, delta)
        assert int(total[j]) == (min(max(exact, -(2**63)), 2**63 - 1)), (v, delta)
