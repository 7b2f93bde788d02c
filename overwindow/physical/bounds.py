"""Frame bounds: for every sorted row, the half-open ``[start, end)`` positions of its frame.

All three units are vectorised: ROWS is clipped arithmetic, GROUPS indexes peer-group bounds, and
RANGE with an offset is one ``searchsorted`` over a key that folds (partition, order value) into one
ascending int64, so every partition is searched at once. EXCLUDE splits a frame into up to three
disjoint, ordered parts. O(n log n) for RANGE offsets, O(n) otherwise. SESSION frames are in
sessions.py, RANGE offsets cast to and checked against the ORDER BY key's type in range_offsets.py,
the key's numbers and their shifts by an offset in key_shift.py.

>>> import pyarrow as pa
>>> lay = Layout.build([], [(Values(pa.array([1, 2, 2, 5])), False, True)])
>>> f = frame_bounds(
...     lay, Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.current_row()), Values(pa.array([1, 2, 2, 5]))
... )
>>> f.parts[0][0].tolist(), f.parts[0][1].tolist()
([0, 0, 0, 3], [1, 3, 3, 4])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from overwindow.logical.frame import Bound, BoundKind, Exclude, Frame, FrameUnit, Interval
from overwindow.physical import decimals
from overwindow.physical.blocks import chunks
from overwindow.physical.key_shift import as_ticks, key_numbers, saturating_add, shift_time
from overwindow.physical.range_offsets import date_days, range_frame_in_key_type
from overwindow.physical.sorting import Layout, sort_codes, value_span
from overwindow.physical.values import FIELD_MICROS, TypeFamily, Values


@dataclass
class Frames:
    """Each row's frame as 1 to 3 disjoint ordered parts ``(start, end)`` of sorted positions."""

    parts: list[tuple[np.ndarray, np.ndarray]]

    @property
    def start(self) -> np.ndarray:
        return self.parts[0][0]

    @property
    def end(self) -> np.ndarray:
        return self.parts[-1][1]

    def count(self, prefix: np.ndarray) -> np.ndarray:
        """Sum over the parts of ``prefix[end] - prefix[start]`` (prefix has n+1 entries)."""
        total = prefix[self.parts[0][1]] - prefix[self.parts[0][0]]
        for s, e in self.parts[1:]:
            total = total + (prefix[e] - prefix[s])
        return total

    def size(self) -> np.ndarray:
        total = self.parts[0][1] - self.parts[0][0]
        for s, e in self.parts[1:]:
            total = total + (e - s)
        return total

    def take(self, rows: np.ndarray) -> Frames:
        """The frames of the given rows only."""
        return Frames([(s[rows], e[rows]) for s, e in self.parts])


def frame_bounds(
    layout: Layout,
    frame: Frame,
    key: Values | None = None,
    descending: bool = False,
    nulls_first: bool = True,
) -> Frames:
    """Frames of every sorted row. ``key`` is the (sorted) single ORDER BY column, needed for RANGE
    offsets (cast to its type and checked first, as Spark does: ``range_frame_in_key_type``)."""
    if key is not None and frame.unit is FrameUnit.RANGE:
        frame = range_frame_in_key_type(frame, key.type)
    n = layout.n
    i = np.arange(n, dtype=np.int64)
    ps, pe = layout.part_start, layout.part_end
    start = _bound(layout, frame, frame.start, True, i, key, descending, nulls_first)
    end = _bound(layout, frame, frame.end, False, i, key, descending, nulls_first)
    start = np.clip(start, ps, pe)
    if key is not None and frame.unit is FrameUnit.RANGE and _infinite_offset_on_floats(frame, key):
        start, end = _swept(layout, frame, start, np.clip(end, ps, pe))
    end = np.clip(end, start, pe)
    ex = frame.exclude
    if ex is Exclude.NO_OTHERS:
        return Frames([(start, end)])
    if ex is Exclude.CURRENT_ROW:
        lo, hi = i, i + 1
    else:
        lo, hi = layout.group_start[layout.group_id], layout.group_end[layout.group_id]
    # Clip every cut into [previous part's end, end] so the parts stay ordered and disjoint even
    # when the excluded rows lie outside the frame (e.g. ROWS 3 PRECEDING AND 2 PRECEDING EXCLUDE
    # TIES): the sliding kernels read the gaps between consecutive parts as holes to remove.
    p1_end = np.clip(lo, start, end)
    parts = [(start, p1_end)]
    prev = p1_end
    if ex is Exclude.TIES:
        s_mid = np.clip(i, prev, end)
        prev = np.clip(i + 1, s_mid, end)
        parts.append((s_mid, prev))
    parts.append((np.clip(hi, prev, end), end))
    return Frames(parts)


def _infinite_offset_on_floats(frame: Frame, key: Values) -> bool:
    """Whether a RANGE frame over a floating-point key has an infinite offset: its bound of an
    infinite key is then NaN (inf - inf), and the frames no longer move forward row by row."""
    offsets = [b.offset for b in (frame.start, frame.end) if b.offset is not None]
    return key.kind is TypeFamily.FLOAT and any(
        isinstance(o, (int, float)) and math.isinf(float(o)) for o in offsets
    )


def _swept(layout, frame: Frame, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frames Spark computes from each row's own edges ``start`` and ``end`` (within its
    partition): Spark moves a frame's edges forward only, row after row through a partition, so an
    edge behind the previous row's stays where that one was, and a start past the end stays at the
    end (its sliding frame drops rows from the front while they lie before the start, and adds rows
    at the back while they lie within the end). Where edges move forward anyway this changes
    nothing; they move back where an infinite key meets an infinite offset (a NaN bound). O(n) (a
    Python step per row for frames bounded at both ends)."""
    end = np.maximum.accumulate(end) if len(end) else end  # partitions lie in order: one running max
    if frame.start.kind is BoundKind.UNBOUNDED_PRECEDING:
        return start, end
    if frame.end.kind is BoundKind.UNBOUNDED_FOLLOWING:
        return (np.maximum.accumulate(start) if len(start) else start), end
    out = start.copy()
    first = layout.part_start
    low = 0
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        low = min(s if i == first[i] else max(low, s), e)
        out[i] = low
    return out, end


def _bound(layout, frame, bound: Bound, is_start, i, key, descending, nulls_first) -> np.ndarray:
    ps, pe = layout.part_start, layout.part_end
    kind = bound.kind
    if kind is BoundKind.UNBOUNDED_PRECEDING:
        return ps
    if kind is BoundKind.UNBOUNDED_FOLLOWING:
        return pe
    g = layout.group_id
    if kind is BoundKind.CURRENT_ROW:
        if frame.unit is FrameUnit.ROWS:
            return i if is_start else i + 1
        return layout.group_start[g] if is_start else layout.group_end[g]
    if frame.unit is FrameUnit.RANGE and bound.offset is None:
        return _null_range_bound(layout, is_start, key, nulls_first)
    delta = (
        bound.offset
        if kind is BoundKind.FOLLOWING
        else -bound.offset
        if not isinstance(bound.offset, Interval)
        else bound.offset
    )
    if frame.unit is FrameUnit.ROWS:
        return i + (_position_offset(delta) + (0 if is_start else 1))
    if frame.unit is FrameUnit.GROUPS:
        first_g = g[np.minimum(ps, len(g) - 1)] if len(g) else g
        last_g = g[np.maximum(pe - 1, 0)] if len(g) else g
        target = g + _position_offset(delta)
        clipped = np.clip(target, first_g, last_g)
        if is_start:  # before the partition: its start; past it: its end
            return np.where(target > last_g, pe, layout.group_start[clipped])
        return np.where(target < first_g, ps, layout.group_end[clipped])
    return _range_bound(layout, bound, is_start, key, descending, nulls_first)


def _position_offset(delta: int) -> int:
    """A ROWS/GROUPS offset clamped to +/-2**62. Positions and group ids lie in [0, n), so any
    offset past n lands outside every partition just the same, and position + offset (+ 1 for a
    half-open end) cannot overflow int64. O(1)."""
    return max(-(2**62), min(int(delta), 2**62))


def _range_bound(layout, bound: Bound, is_start, key: Values, descending, nulls_first) -> np.ndarray:
    """RANGE ``x PRECEDING/FOLLOWING``: the first row (start) or first row past (end) the value
    ``key +/- x`` in sort order, within the row's partition; a NULL key's frame is its NULL peers."""
    off = bound.offset  # in the key's type (frame_bounds)
    following = bound.kind is BoundKind.FOLLOWING
    toward_larger = following != descending  # the bound moves toward larger key values
    sign = 1 if toward_larger else -1
    # position, among the sorted distinct values, of the first value the frame may hold: count the
    # values below the target (or up to it), in sort direction
    side = "left" if is_start != descending else "right"
    off = date_days(off, key.kind)
    span = None
    beyond = None  # rows whose exact target lies past every value of the key's type
    if key.kind is TypeFamily.INTERVAL:
        # in microseconds; a target past int64 lies beyond every key (Spark's query fails on it,
        # INTERVAL_ARITHMETIC_OVERFLOW, where it compares that bound with another row's key)
        values, uniq = key_numbers(key), key_numbers(Values(key.uniques))
        delta = sign * (off.days * FIELD_MICROS["DAY"] + off.micros)
        lowest, highest = (int(uniq[0]), int(uniq[-1])) if len(uniq) else (0, 0)
        target, beyond = saturating_add(values, delta, lowest, highest)
        counted = np.searchsorted(uniq, target, side=side)
    elif isinstance(off, Interval):
        # nanosecond keys keep their nanoseconds (a frame edge 1 ns past a row leaves it out)
        unit = "ns" if key.kind is TypeFamily.TIMESTAMP and key.type.unit == "ns" else "us"
        values = as_ticks(key, unit)
        # a TIMESTAMP in microseconds or nanoseconds is its own ticks, which its span counts
        own = key.kind is TypeFamily.TIMESTAMP and key.type.unit == unit
        span = _folded_span(layout, key) if own else None
        uniq = None if span is not None else as_ticks(Values(key.uniques), unit)
        target, beyond = shift_time(values, off, sign, unit)
        counted = _counted(target, side, uniq, span)
    elif key.kind is TypeFamily.FLOAT:
        # Spark compares DOUBLE keys with key +/- offset in DOUBLE arithmetic
        values = key.numbers.astype(np.float64)
        uniq = np.asarray(key.uniques.to_numpy(zero_copy_only=False)).astype(np.float64)
        # inf - inf is NaN (an infinite key with an infinite offset): a value, not a warning; NaN
        # targets are placed by the folded-key search like NaN keys (checked against the SQL definition)
        with np.errstate(invalid="ignore"):
            target = values + sign * float(off)
        counted = np.searchsorted(uniq, target, side=side)
    elif key.kind is TypeFamily.DECIMAL:
        # exactly, on the unscaled integers: the offset in the key's scale, rounded toward the side
        # the search counts from (DECIMAL(12,2) keys 0.20 and 100.45 are 100.25 apart exactly)
        uniq = Values(key.uniques)
        hi, lo, beyond = decimals.add_constant(
            *key.words, decimals.exact_offset(off, key.type.scale, side, sign)
        )
        counted = decimals.searchsorted(*uniq.words, hi, lo, side)
        uniq = uniq.array
    else:
        delta = decimals.exact_offset(off, 0, side, sign)  # exact for DECIMAL offsets on integers
        span = _folded_span(layout, key)
        uniq = None if span is not None else np.asarray(key.uniques.to_numpy(zero_copy_only=False))
        lowest, highest = (
            (span[0], span[0] + span[1] - 1)
            if span is not None
            else (int(uniq[0]), int(uniq[-1]))
            if len(uniq)
            else (0, 0)
        )
        if abs(delta) >= 2**64:  # past every int64 from any key (an infinite offset)
            target, beyond = key.numbers, np.ones(len(key), dtype=bool)
        else:
            target, beyond = saturating_add(key.numbers, delta, lowest, highest)
        counted = _counted(target, side, uniq, span)
    k = span[1] if span is not None else len(uniq)
    if beyond is not None:  # the exact target lies past every value: above all values or below all
        counted[beyond] = k if toward_larger else 0
    code_t = k - counted if descending else counted
    codes, card = sort_codes(key, descending, nulls_first, dense=span is None)
    pid = layout.part_id.astype(np.int64)
    folded = pid * card + codes  # ascending over the sorted rows
    out = _search_in_partitions(layout, folded, pid * card + 1 + code_t)
    null = ~key.valid
    if null.any():
        g = layout.group_id[null]
        out[null] = layout.group_start[g] if is_start else layout.group_end[g]
    return out


def _folded_span(layout, key: Values) -> tuple[int, int] | None:
    """The key's ``value_span`` (an integer-like key over a short span), unless its codes folded with
    the partition numbers would overflow: every integer from its min to its max then stands in for
    its distinct values (``_counted``; ``sort_codes`` codes them the same), which skips np.unique of
    the key. O(n).

    >>> import pyarrow as pa
    >>> _folded_span(Layout.in_order(np.arange(3)), Values(pa.array([7, 9, 12])))
    (7, 6)
    """
    span = value_span(key)
    if span is not None and len(layout.part_bounds) * (span[1] + 2) >= 2**62:
        return None
    return span


def _counted(target: np.ndarray, side: str, uniq: np.ndarray | None, span) -> np.ndarray:
    """How many distinct values lie below each target (``side`` "left") or at most at it ("right"):
    a binary search among ``uniq``, or with a ``_folded_span`` (min, count), the integers of the span
    counted by arithmetic. O(n log distinct), or O(n).

    >>> t = np.array([6, 9, 13])
    >>> _counted(t, "left", np.array([7, 9, 12]), None).tolist(), _counted(t, "left", None, (7, 6)).tolist()
    ([0, 1, 3], [0, 2, 6])
    """
    if span is None:
        return np.searchsorted(uniq, target, side=side)
    lo, k = span
    counted = np.clip(target, lo - 1, lo + k) - lo + (0 if side == "left" else 1)
    np.clip(counted, 0, k, out=counted)
    return counted


def _null_range_bound(layout, is_start, key: Values, nulls_first) -> np.ndarray:
    """RANGE ``NULL PRECEDING/FOLLOWING`` as Spark computes it (measured): the bound's value, the
    row's key plus or minus NULL, is NULL, and lies where the sort puts NULLs. With NULLS FIRST a
    lower bound is the partition's start and an upper bound the end of its NULL keys; with NULLS
    LAST a lower bound is the start of its NULL keys and an upper bound the partition's end (so
    ``ORDER BY t RANGE BETWEEN CURRENT ROW AND NULL FOLLOWING`` is empty, ``ORDER BY t RANGE
    BETWEEN NULL PRECEDING AND CURRENT ROW`` reaches back over the NULL keys). A NULL key's frame
    is its NULL peers, as with any offset. O(n)."""
    ps, pe = layout.part_start, layout.part_end
    null = ~key.valid
    before = np.concatenate([[0], np.cumsum(null, dtype=np.int64)])
    nulls = before[pe] - before[ps]  # NULL keys in each row's partition
    if nulls_first:
        out = (ps if is_start else ps + nulls).astype(np.int64, copy=True)
    else:
        out = (pe - nulls if is_start else pe).astype(np.int64, copy=True)
    if null.any():
        g = layout.group_id[null]
        out[null] = layout.group_start[g] if is_start else layout.group_end[g]
    return out


def _search_in_partitions(layout, folded: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """``np.searchsorted(folded, needles)`` for needles whose answers lie in their own row's
    partition: a block of rows searches only the partitions it spans, which stay in cache (a search
    over the whole 5M-row key misses the cache at every step)."""
    out = np.empty(len(needles), dtype=np.int64)
    for rows in chunks(len(needles)):
        lo, hi = int(layout.part_start[rows.start]), int(layout.part_end[rows.stop - 1])
        out[rows] = np.searchsorted(folded[lo:hi], needles[rows]) + lo
    return out
