"""Values' numeric view (physical/values.py) against Python's own reading of each value."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.physical.values import Values

EPOCH = datetime.datetime(1970, 1, 1)


def _expected(array: pa.Array) -> list:
    """Each value as the number the view promises (NULL as 0), from Python objects."""
    out = []
    for v in array.to_pylist():
        if v is None:
            out.append(0)
        elif isinstance(v, datetime.datetime):
            unit = array.type.unit
            micros = (v.replace(tzinfo=None) - EPOCH) // datetime.timedelta(microseconds=1)
            out.append({"s": micros // 10**6, "ms": micros // 10**3, "us": micros}[unit])
        elif isinstance(v, datetime.date):
            out.append((v - EPOCH.date()).days)
        else:
            out.append(v)
    return out


TYPES = [
    pa.timestamp("s"),
    pa.timestamp("ms"),
    pa.timestamp("us"),
    pa.timestamp("us", tz="UTC"),
    pa.date32(),
    pa.int8(),
    pa.int32(),
    pa.int64(),
    pa.uint32(),
    pa.bool_(),
    pa.float32(),
    pa.float64(),
]


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(data=st.data(), type_=st.sampled_from(TYPES))
def test_numbers_match_the_values(data, type_):
    """Timestamps are read as a view of their int64 storage and casts are skipped where the type is
    already the target: the numbers are the values' own, for sliced arrays (an offset) and NULLs."""
    n = data.draw(st.integers(0, 30))
    raw = data.draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n))
    nulls = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if pa.types.is_integer(type_) or pa.types.is_floating(type_):
        info = np.iinfo(type_.to_pandas_dtype()) if pa.types.is_integer(type_) else None
        raw = [min(max(v, info.min), info.max) if info else v for v in raw]
        if pa.types.is_floating(type_):
            raw = [v / 7 for v in raw]
    elif pa.types.is_boolean(type_):
        raw = [v % 2 == 0 for v in raw]
    elif pa.types.is_date(type_):
        raw = [v % 2_000_000 for v in raw]
    elif pa.types.is_timestamp(type_) and type_.unit == "s":
        raw = [v >> 6 for v in raw]  # within Python's datetime range (years 1 to 9999)
    array = pa.array(
        raw,
        type=type_ if not pa.types.is_timestamp(type_) and not pa.types.is_date(type_) else pa.int64(),
        mask=np.array(nulls, dtype=bool),
    )
    if pa.types.is_timestamp(type_):
        array = array.cast(type_)
    elif pa.types.is_date(type_):
        array = array.cast(pa.int32()).cast(type_)
    start = data.draw(st.integers(0, n))
    array = array.slice(start)
    got = Values(array).numbers
    assert got.dtype == (np.float64 if pa.types.is_floating(type_) else np.int64)
    want = _expected(array)
    if pa.types.is_floating(type_):
        want = [float(np.float32(v)) if type_ == pa.float32() else v for v in want]
    assert got.tolist() == want


@pytest.mark.parametrize(
    "array",
    [pa.array([1, None, 3], pa.timestamp("ns", tz="UTC")), pa.array([5, 6, 7], pa.timestamp("us")).slice(1)],
)
def test_timestamp_view_keeps_nulls_and_offset(array):
    assert Values(array).numbers.tolist() == [
        0 if v is None else v for v in array.cast(pa.int64()).to_pylist()
    ]
