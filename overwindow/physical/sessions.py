"""SESSION frames: ``SESSION WITH GAP gap`` over sorted rows, each row's frame the run of its
partition's peer groups chained by steps of at most ``gap`` (``session_bounds``, as Spark's
``session_window`` chains rows), the gap checked against the ORDER BY column's type
(``check_session_gap``) and given in the numbers the streaming machines compare (``gap_number``).
O(n).

>>> import pyarrow as pa
>>> key = Values(pa.array([1, 3, 9]))
>>> session_bounds(Layout.build([], [(key, False, True)]), 2, key).end.tolist()
[2, 2, 3]
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import sql_literal
from overwindow.logical.frame import Interval
from overwindow.physical.bounds import Frames
from overwindow.physical.key_shift import US_PER_DAY, key_numbers, saturating_add
from overwindow.physical.sorting import Layout
from overwindow.physical.values import TypeFamily, Values, kind_of, sql_type


def session_bounds(layout: Layout, gap, key: Values, descending: bool = False) -> Frames:
    """``SESSION WITH GAP gap``: each sorted row's frame is its session, the longest run of its
    partition's peer groups in which each next ORDER BY value lies at most ``gap`` from the one
    before, as Spark's ``session_window`` chains rows (a session ends at its last row plus the gap,
    exclusive, and a row at that end touches it: Spark merges touching sessions). Peers always
    share a session, NaN beside NaN and inf beside inf too; NULL keys are one peer group, so one
    session of their own, as a RANGE frame's NULL row has its NULL peers. The comparison is exact:
    integers (and microseconds of times) against the gap rounded down, DECIMALs as decimals,
    DOUBLEs in DOUBLE arithmetic. O(n) (O(groups) Python steps for DECIMAL keys).

    >>> import pyarrow as pa
    >>> lay = Layout.build([], [(Values(pa.array([1, 2, 2, 5, None])), False, False)])
    >>> f = session_bounds(lay, 2, Values(pa.array([1, 2, 2, 5, None])))
    >>> f.start.tolist(), f.end.tolist()
    ([0, 0, 0, 3, 4], [3, 3, 3, 4, 5])
    >>> session_bounds(lay, 3, Values(pa.array([1, 2, 2, 5, None]))).end.tolist()
    [4, 4, 4, 4, 5]
    """
    check_session_gap(gap, key.type)
    starts, ends = layout.group_start, layout.group_end
    if not len(starts):
        return Frames([(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))])
    cut = np.ones(len(starts), dtype=bool)  # peer group g starts a session
    if len(starts) > 1:
        first, prev = starts[1:], starts[:-1]
        same = layout.part_id[first] == layout.part_id[prev]
        same &= key.valid[first] & key.valid[prev]
        same &= _within_gap(key, gap, prev, first, descending)
        cut[1:] = ~same
    session = np.cumsum(cut) - 1
    heads = np.flatnonzero(cut)
    tails = np.append(heads[1:], len(starts)) - 1
    g = layout.group_id
    return Frames([(starts[heads][session[g]], ends[tails][session[g]])])


def gap_number(gap, kind: TypeFamily):
    """A ``SESSION WITH GAP`` gap in ``key_numbers``' domain, as ``session_bounds`` compares it:
    microseconds for an INTERVAL (times are microseconds), the number itself otherwise (a DECIMAL
    key's numbers are its doubles), over an integer key rounded down (a difference of at most 2.5 is
    one of at most 2). O(1).

    >>> gap_number(2.5, TypeFamily.INT), gap_number(Interval(days=1, fields="DAY"), TypeFamily.DATE)
    (2, 86400000000)
    """
    if isinstance(gap, Interval):
        return gap.days * US_PER_DAY + gap.micros
    if kind in (TypeFamily.FLOAT, TypeFamily.DECIMAL):
        return float(gap)
    return math.floor(gap)


def _within_gap(key: Values, gap, prev: np.ndarray, nxt: np.ndarray, descending: bool) -> np.ndarray:
    """Per pair of sorted positions, whether the key at ``nxt`` lies at most ``gap`` past the key
    at ``prev`` in sort order (a NULL pair's answer is not read). O(pairs)."""
    sign = -1 if descending else 1
    if key.kind is TypeFamily.FLOAT:
        values = key.numbers.astype(np.float64)
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, never within a gap
            return sign * (values[nxt] - values[prev]) <= float(gap)
    if key.kind is TypeFamily.DECIMAL:
        values = key.array.to_pylist()
        limit = decimal.Decimal(repr(gap)) if isinstance(gap, float) else decimal.Decimal(gap)
        return np.array(
            [
                a is not None and b is not None and sign * (b - a) <= limit
                for a, b in zip((values[i] for i in prev), (values[i] for i in nxt))
            ],
            dtype=bool,
        )
    numbers = key_numbers(key).astype(np.int64, copy=False)  # integers, or microseconds of times
    if isinstance(gap, Interval):
        gap = gap.days * US_PER_DAY + gap.micros
    exact = decimal.Decimal(repr(gap)) if isinstance(gap, float) else decimal.Decimal(gap)
    whole = int(exact.to_integral_value(decimal.ROUND_FLOOR)) + 1  # d <= 1.5 is d < 2 for integers d
    a, b = numbers[prev], numbers[nxt]
    lowest, highest = (int(numbers.min()), int(numbers.max())) if len(numbers) else (0, 0)
    reach, beyond = saturating_add(a, sign * min(whole, 2**64), lowest, highest)
    within = b < reach if sign > 0 else b > reach
    return within if beyond is None else within | beyond  # a reach past int64 holds every key


def check_session_gap(gap, key_type: pa.DataType) -> None:
    """A ``SESSION WITH GAP`` gap against its ORDER BY column's type, in SQL words: a number over a
    numeric column, a day-time INTERVAL over a TIMESTAMP or DATE one (whole days over a DATE).
    O(1).

    >>> check_session_gap(Interval(days=1, fields="DAY"), pa.int64())
    Traceback (most recent call last):
    ...
    overwindow.errors.WindowSpecError: SESSION WITH GAP over a BIGINT ORDER BY column needs a number, not ...
    """
    family = kind_of(key_type)
    what = sql_type(key_type)
    if family.is_temporal:
        if not isinstance(gap, Interval):
            raise WindowSpecError(
                f"SESSION WITH GAP over a {what} ORDER BY column needs a day-time INTERVAL, not "
                f"{sql_literal(gap)}"
            )
        if family is TypeFamily.DATE and gap.micros:
            raise WindowSpecError(f"SESSION WITH GAP over a DATE ORDER BY column takes whole days, not {gap}")
        return
    if family not in (TypeFamily.INT, TypeFamily.FLOAT, TypeFamily.DECIMAL):
        raise WindowSpecError(
            f"SESSION WITH GAP needs a numeric, DATE or TIMESTAMP ORDER BY column, not {what}"
        )
    if isinstance(gap, Interval):
        raise WindowSpecError(f"SESSION WITH GAP over a {what} ORDER BY column needs a number, not {gap}")
