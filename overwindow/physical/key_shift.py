"""The ORDER BY key in the numbers RANGE offsets and SESSION gaps apply to, and those numbers moved
by an offset: ``key_numbers`` (microseconds since the epoch for DATE and TIMESTAMP keys,
microseconds for a day-time interval, the numbers themselves otherwise), ``shift_key`` (``key +/-
offset`` as the batch frames reach it, for the streaming machines), calendar shifts by months, days
and microseconds (``shift_time``) and int64 additions that clamp rather than wrap
(``saturating_add``). O(n) per shift.

>>> import numpy as np, pyarrow as pa
>>> shift_key(np.array([0]), pa.date32(), 1, +1).tolist()  # 1970-01-01 + 1 day, in microseconds
[86400000000]
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa

from overwindow.logical.frame import Interval
from overwindow.physical.range_offsets import date_days, offset_in_key_type
from overwindow.physical.values import MICROS_PER_TICK, TypeFamily, Values, kind_of

_I64 = np.iinfo(np.int64)


def saturating_add(
    a: np.ndarray, delta: int, lowest: int, highest: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``a + delta`` clamped to the int64 range, and the mask of the entries the clamp changed (None
    when none: every entry lies in [lowest, highest], which decides it in O(1)). O(n).

    A clamped entry is not the exact sum, so a caller comparing it must treat the mask itself as
    "beyond every int64" (a sum clamped to int64 max is not <= int64 max).

    >>> total, beyond = saturating_add(np.array([-(2**63), 5]), 2**63 + 1, -(2**63), 5)
    >>> total.tolist(), beyond.tolist()
    ([1, 9223372036854775807], [False, True])
    >>> saturating_add(np.array([2**63 - 1]), -(2**64), 2**63 - 1, 2**63 - 1)[1].tolist()
    [True]
    """
    delta = int(delta)
    if abs(delta) >= 2**64:  # past every int64 from any int64
        return np.full(len(a), _I64.max if delta > 0 else _I64.min), np.ones(len(a), dtype=bool)
    fits = _I64.min <= delta <= _I64.max  # numpy adds no wider Python int to int64 exactly
    if fits and _I64.min <= lowest + delta and highest + delta <= _I64.max:
        return a + delta, None
    # the sum modulo 2**64, read back as int64: exact wherever it fits, even for a delta past
    # int64 (-2**63 plus 2**63 + 1 is 1); the thresholds below fit int64 for |delta| < 2**64
    wrapped = (a.astype(np.uint64) + np.uint64(delta % 2**64)).view(np.int64)
    if delta > 0:
        beyond = a > np.int64(_I64.max - delta)
        return np.where(beyond, _I64.max, wrapped), beyond
    beyond = a < np.int64(_I64.min - delta)
    return np.where(beyond, _I64.min, wrapped), beyond


def as_ticks(key: Values, unit: str = "us") -> np.ndarray:
    """A DATE or TIMESTAMP key in ``unit`` ("us" or "ns") since the epoch: coarser units multiply
    exactly, nanoseconds floor to microseconds."""
    v = key.numbers.astype(np.int64, copy=False)
    if key.kind is TypeFamily.DATE:
        return v * (US_PER_DAY * _PER_US[unit])
    have = key.type.unit
    if have == unit:
        return v
    if have == "ns":
        return v // 1000
    return v * ({"s": 1_000_000, "ms": 1_000, "us": 1}[have] * _PER_US[unit])


def shift_time(
    ticks: np.ndarray, off: Interval, sign: int, unit: str = "us"
) -> tuple[np.ndarray, np.ndarray | None]:
    """``ticks + sign * off`` for a calendar interval, ``ticks`` in ``unit`` ("us" or "ns") since the
    epoch: the months first (a day past the end of the month reached becomes its last day, as in
    Spark, DuckDB and PostgreSQL), then the days and microseconds. Like ``saturating_add``: results
    past the int64 range clamp to it, returned with the mask of the clamped entries (None when none).
    Works over numpy's whole datetime64 range of the unit (about 290,000 years either side of 1970
    in microseconds, 1677-2262 in nanoseconds). O(n).

    >>> jan31, mar1 = 1_706_659_200_000_000, 1_709_251_200_000_000  # 2024-01-31, 2024-03-01
    >>> out, _ = shift_time(np.array([jan31, mar1]), Interval(months=1), +1)
    >>> out.view("datetime64[us]").astype("datetime64[D]").tolist()
    [datetime.date(2024, 2, 29), datetime.date(2024, 4, 1)]
    """
    out, beyond = ticks, None
    if off.months:
        out, beyond = _add_months(ticks, sign * off.months, unit)
    delta = sign * (off.days * US_PER_DAY + off.micros) * _PER_US[unit]
    if delta and len(out):
        out, over = saturating_add(out, delta, int(out.min()), int(out.max()))
        if beyond is not None:  # past the range already: stays clamped whichever way the days go
            out[beyond] = _I64.max if sign > 0 else _I64.min
            beyond = beyond if over is None else beyond | over
        else:
            beyond = over
    return out, beyond


US_PER_DAY = 86_400_000_000
_PER_US = {"us": 1, "ns": 1000}
# per unit, the months whose every tick is an int64 datetime64 (the first and last month are partial)
_MONTHS = {
    u: (
        int(np.datetime64(_I64.min + 1, u).astype("datetime64[M]").astype(np.int64)) + 1,
        int(np.datetime64(_I64.max, u).astype("datetime64[M]").astype(np.int64)) - 1,
    )
    for u in _PER_US
}


def _add_months(ticks: np.ndarray, months: int, unit: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``ticks`` (of ``unit`` since the epoch) moved by ``months`` calendar months, the day of the
    month kept or cut to the month's last day, the time of day kept; clamped as ``shift_time``. O(n)."""
    lo, hi = _MONTHS[unit]
    day_ticks = US_PER_DAY * _PER_US[unit]
    month = (
        ticks.astype(np.int64, copy=False).view(f"datetime64[{unit}]").astype("datetime64[M]").view(np.int64)
    )
    # numpy rounds datetimes down to their month, before 1970 too
    target = month + int(np.clip(months, -2 * (hi - lo), 2 * (hi - lo)))
    beyond = (target < lo) | (target > hi) | (month < lo) | (month > hi)
    month, target = np.clip(month, lo, hi), np.clip(target, lo, hi)
    day, time_of_day = np.divmod(ticks - _month_start(month, unit), day_ticks)
    first = target.view("datetime64[M]")
    length = (first + 1).astype("datetime64[D]").view(np.int64) - first.astype("datetime64[D]").view(np.int64)
    out = _month_start(target, unit) + np.minimum(day, length - 1) * day_ticks + time_of_day
    if not beyond.any():
        return out, None
    out[beyond] = _I64.max if months > 0 else _I64.min
    return out, beyond


def _month_start(month: np.ndarray, unit: str) -> np.ndarray:
    """Ticks of ``unit`` since the epoch at the start of each month (months since 1970-01)."""
    return month.view("datetime64[M]").astype(f"datetime64[{unit}]").view(np.int64)


def key_numbers(key: Values) -> np.ndarray:
    """The ORDER BY key in the numeric domain RANGE offsets apply to: microseconds since the epoch for
    DATE and TIMESTAMP, microseconds for a day-time interval, the numbers themselves otherwise."""
    if key.kind is TypeFamily.INTERVAL:
        return key.numbers.astype(np.int64, copy=False) * MICROS_PER_TICK[key.type.unit]
    return as_ticks(key) if key.kind.is_temporal else key.numbers


def shift_key(numbers: np.ndarray, key_type: pa.DataType, offset, sign: int) -> np.ndarray:
    """``numbers + sign * offset`` in ``key_numbers``' domain for an ORDER BY key of ``key_type``:
    an INTERVAL (or whole days, on a DATE) for DATE/TIMESTAMP keys, a number otherwise, cast to an
    integer or DECIMAL key's type first as the batch frames cast it (``offset_in_key_type``: 0.125
    over a DECIMAL(12,2) key reaches 0.13), so the streaming machines' reaches are the batch
    frames'. Integer, DATE and TIMESTAMP keys saturate at the int64 limits rather than wrap: a reach
    past int64 max still compares above every key. O(n).

    >>> shift_key(np.array([1.0]), pa.decimal128(12, 2), decimal.Decimal("0.125"), -1).tolist()
    [0.87]
    """
    kind = kind_of(key_type)
    offset = date_days(offset, kind)
    if kind.is_numeric or kind is TypeFamily.INTERVAL:
        offset = offset_in_key_type(offset, key_type)
    if isinstance(offset, Interval):
        return shift_time(numbers, offset, sign)[0]
    if numbers.dtype == np.int64 and isinstance(offset, int) and len(numbers):
        return saturating_add(numbers, sign * offset, int(numbers.min()), int(numbers.max()))[0]
    if isinstance(offset, decimal.Decimal):  # a DECIMAL key's numbers are its doubles
        offset = float(offset)
    return numbers + sign * offset
