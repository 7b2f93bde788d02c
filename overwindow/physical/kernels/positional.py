"""lag/lead and first_value/last_value/nth_value as index arithmetic. O(n) (O(n log n) with IGNORE NULLS).

A kernel computes, per row, the sorted position of the row whose value it returns (-1: none),
and takes the values once. IGNORE NULLS works on the positions of the non-NULL rows.

>>> lay = Layout.build([], [(Values(pa.array([1, 2, 3])), False, True)])
>>> offset_index(lay, np.ones(3, bool), -1, False).tolist()
[-1, 0, 1]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowRuntimeError
from overwindow.physical.bounds import Frames
from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values


def offset_index(layout: Layout, valid: np.ndarray, delta: int, ignore_nulls: bool) -> np.ndarray:
    """Position ``delta`` rows away (negative: earlier) within the partition; with IGNORE NULLS,
    the ``|delta|``-th non-NULL row before or after. -1 where there is none."""
    n = layout.n
    i = np.arange(n, dtype=np.int64)
    ps, pe = layout.part_start, layout.part_end
    if not ignore_nulls or delta == 0:
        t = i + delta
        return np.where((t >= ps) & (t < pe), t, -1)
    nonnull = np.flatnonzero(valid)
    before = np.concatenate(([0], np.cumsum(valid)))  # non-NULL rows in [0, p)
    if delta < 0:
        rank = before[i] + delta  # index into nonnull
        ok = rank >= before[ps]
    else:
        rank = before[i + 1] + delta - 1
        ok = rank < before[pe]
    return np.where(ok, nonnull[np.clip(rank, 0, max(len(nonnull) - 1, 0))] if len(nonnull) else -1, -1)


def lag_lead(values: Values, layout: Layout, call, default: pa.Array | None) -> pa.Array:
    delta = call.params[0] if call.params else 1
    if call.function == "lag":
        delta = -delta
    idx = offset_index(layout, values.valid, delta, call.ignore_nulls)
    out = values.take(idx)
    if default is not None:  # already of the column's type (overwindow.physical.casts)
        out = pc.if_else(pa.array(idx < 0), default, out)
    return out


def counter_diff(args: tuple[Values, ...], layout: Layout) -> pa.Array:
    """Spark's counter_diff(value [, start_time]): the value minus the partition's previous non-NULL
    value, in the value's type; NULL for a NULL value, for the first non-NULL value, and at a reset:
    a value below the previous one, or a start time after the previous row's (when both start times
    are not NULL). A negative value, or a start time before the previous row's, fails as Spark's
    query does (COUNTER_DIFF_NEGATIVE_COUNTER_VALUE). O(n log n) (the previous non-NULL row by index
    arithmetic; values compared by their dense ranks, so DECIMALs and NaN compare as in SQL)."""
    value = args[0]
    valid = value.valid
    rank = value.codes
    if (valid & _negative(value)).any():
        raise WindowRuntimeError(
            "counter_diff: a negative counter value was provided; negative counter values are not "
            "allowed (Spark: COUNTER_DIFF_NEGATIVE_COUNTER_VALUE)"
        )
    prev = offset_index(layout, valid, -1, ignore_nulls=True)
    has_prev = valid & (prev >= 0)
    at = np.where(has_prev, prev, 0)
    keep = has_prev & (rank >= rank[at])
    if len(args) > 1:
        start = args[1]
        both = has_prev & start.valid & start.valid[at]
        later, earlier = start.numbers > start.numbers[at], start.numbers < start.numbers[at]
        if (both & earlier).any():
            raise WindowRuntimeError(
                "counter_diff: a start time earlier than the previous row's was provided; start times "
                "must not decrease (Spark fails the query)"
            )
        keep &= ~(both & later)
    return _difference(value, np.where(keep, at, -1))


def _negative(value: Values) -> np.ndarray:
    if value.kind.is_numeric and value.exact_numbers:
        return value.numbers < 0
    return pc.less(value.array, pa.scalar(0, value.type)).fill_null(False).to_numpy(zero_copy_only=False)


def _difference(value: Values, prev: np.ndarray) -> pa.Array:
    """value - value[prev] where prev >= 0, NULL elsewhere, in the value's type."""
    keep = prev >= 0
    before = value.take(np.where(keep, prev, -1))
    diff = pc.subtract_checked(value.array, before) if value.kind.is_numeric else None
    if pa.types.is_decimal(value.type):
        diff = diff.cast(value.type)  # value - previous lies between 0 and value: it fits
    return pc.if_else(pa.array(keep), diff.cast(value.type), pa.scalar(None, value.type))


def nth_index(
    frames: Frames, valid: np.ndarray, nth: np.ndarray | int, from_last: bool, ignore_nulls: bool
) -> np.ndarray:
    """Position of the nth (1-based) row of each frame, counting from its first or last row,
    skipping NULLs with IGNORE NULLS; -1 where the frame has fewer rows."""
    n_rows = len(frames.start)
    if ignore_nulls:
        before = np.concatenate(([0], np.cumsum(valid)))
        nonnull = np.flatnonzero(valid)
        counted = [(before[s], before[e]) for s, e in frames.parts]
    else:
        counted = [(s, e) for s, e in frames.parts]
    order = counted[::-1] if from_last else counted
    remaining = np.broadcast_to(np.asarray(nth, dtype=np.int64), (n_rows,)).copy()
    out = np.full(n_rows, -1, dtype=np.int64)
    for s, e in order:
        size = e - s
        hit = (out < 0) & (remaining >= 1) & (remaining <= size)
        pos = e - remaining if from_last else s + remaining - 1
        out = np.where(hit, pos, out)
        remaining = np.where(out < 0, remaining - size, remaining)
    if ignore_nulls and len(nonnull):
        out = np.where(out >= 0, nonnull[np.clip(out, 0, len(nonnull) - 1)], -1)
    elif ignore_nulls:
        out[:] = -1
    return out


def value_function(values: Values, frames: Frames, call) -> pa.Array:
    name = call.function
    nth = call.params[0] if name == "nth_value" else 1
    idx = nth_index(frames, values.valid, nth, name == "last_value", call.ignore_nulls)
    return values.take(idx)
