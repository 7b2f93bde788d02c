"""Frame bounds: for every sorted row, the half-open ``[start, end)`` positions of its frame.

All three units are vectorised: ROWS is clipped arithmetic, GROUPS indexes peer-group bounds, and
RANGE with an offset is one ``searchsorted`` over a key that folds (partition, order value) into one
ascending int64, so every partition is searched at once. EXCLUDE splits a frame into up to three
disjoint, ordered parts. O(n log n) for RANGE offsets, O(n) otherwise.

>>> import pyarrow as pa
>>> lay = Layout.build([], [(Values(pa.array([1, 2, 2, 5])), False, True)])
>>> f = frame_bounds(
...     lay, Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.current_row()), Values(pa.array([1, 2, 2, 5]))
... )
>>> f.parts[0][0].tolist(), f.parts[0][1].tolist()
([0, 0, 0, 3], [1, 3, 3, 4])
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import sql_literal
from overwindow.logical.frame import Bound, BoundKind, Exclude, Frame, FrameUnit, Interval
from overwindow.logical.parse import string_offset
from overwindow.physical import casts, decimals
from overwindow.physical.blocks import chunks
from overwindow.physical.sorting import Layout, sort_codes, value_span
from overwindow.physical.values import (
    FIELD_MICROS,
    INTERVAL_LIMIT,
    MICROS_PER_TICK,
    TypeFamily,
    Values,
    carrier_fields,
    kind_of,
    sql_type,
)

_I64 = np.iinfo(np.int64)


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
        return gap.days * _US_PER_DAY + gap.micros
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
        gap = gap.days * _US_PER_DAY + gap.micros
    exact = decimal.Decimal(repr(gap)) if isinstance(gap, float) else decimal.Decimal(gap)
    whole = int(exact.to_integral_value(decimal.ROUND_FLOOR)) + 1  # d <= 1.5 is d < 2 for integers d
    a, b = numbers[prev], numbers[nxt]
    lowest, highest = (int(numbers.min()), int(numbers.max())) if len(numbers) else (0, 0)
    reach, beyond = _saturating_add(a, sign * min(whole, 2**64), lowest, highest)
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


def _saturating_add(
    a: np.ndarray, delta: int, lowest: int, highest: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``a + delta`` clamped to the int64 range, and the mask of the entries the clamp changed (None
    when none: every entry lies in [lowest, highest], which decides it in O(1)). O(n).

    A clamped entry is not the exact sum, so a caller comparing it must treat the mask itself as
    "beyond every int64" (a sum clamped to int64 max is not <= int64 max)."""
    delta = int(delta)
    if _I64.min <= lowest + delta and highest + delta <= _I64.max:
        return a + delta, None
    if delta > 0:
        beyond = a > _I64.max - delta
        return np.where(beyond, _I64.max, a + min(delta, _I64.max)), beyond
    beyond = a < _I64.min - delta
    return np.where(beyond, _I64.min, a + max(delta, _I64.min)), beyond


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
    off = _date_days(off, key.kind)
    span = None
    beyond = None  # rows whose exact target lies past every value of the key's type
    if key.kind is TypeFamily.INTERVAL:
        # in microseconds; a target past int64 lies beyond every key (Spark's query fails on it,
        # INTERVAL_ARITHMETIC_OVERFLOW, where it compares that bound with another row's key)
        values, uniq = key_numbers(key), key_numbers(Values(key.uniques))
        delta = sign * (off.days * FIELD_MICROS["DAY"] + off.micros)
        lowest, highest = (int(uniq[0]), int(uniq[-1])) if len(uniq) else (0, 0)
        target, beyond = _saturating_add(values, delta, lowest, highest)
        counted = np.searchsorted(uniq, target, side=side)
    elif isinstance(off, Interval):
        # nanosecond keys keep their nanoseconds (a frame edge 1 ns past a row leaves it out)
        unit = "ns" if key.kind is TypeFamily.TIMESTAMP and key.type.unit == "ns" else "us"
        values, uniq = _as_ticks(key, unit), _as_ticks(Values(key.uniques), unit)
        target, beyond = _shift_time(values, off, sign, unit)
        counted = np.searchsorted(uniq, target, side=side)
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
        # an integer key over a short span needs no distinct values: every integer from its min to
        # its max stands in for them (skips np.unique of the key), unless the folded key would overflow
        span = value_span(key)
        if span is not None and len(layout.part_bounds) * (span[1] + 2) >= 2**62:
            span = None
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
            target, beyond = _saturating_add(key.numbers, delta, lowest, highest)
        if span is None:
            counted = np.searchsorted(uniq, target, side=side)
        else:
            lo, k = span
            counted = np.clip(target, lo - 1, lo + k) - lo + (0 if side == "left" else 1)
            np.clip(counted, 0, k, out=counted)
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


_UNIT_MICROS = {"DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000}


def _interval_number(offset: Interval) -> decimal.Decimal:
    """An INTERVAL as Spark casts it to a number: a count of its last field's unit (``INTERVAL 2
    DAYS`` is 2, ``INTERVAL 1999 MILLISECONDS`` 1.999 of its SECOND field, ``INTERVAL '1-1' YEAR TO
    MONTH`` 13, ``INTERVAL 1 YEAR`` 1), exactly; the key's type then drops or rounds the fraction.

    >>> _interval_number(Interval(days=1, micros=7_200_000_000, fields="DAY TO HOUR"))
    Decimal('26')
    """
    last = (offset.fields.split() or ["DAY"])[-1]
    if offset.year_month:
        return decimal.Decimal(offset.months) / (12 if last == "YEAR" else 1)
    total = offset.days * _UNIT_MICROS["DAY"] + offset.micros
    return decimal.Decimal(total) / _UNIT_MICROS.get(last, _UNIT_MICROS["DAY"])


_WIDE = decimal.Context(prec=400)  # room for any DECIMAL(38, s) offset, and well past it


def offset_in_key_type(offset, key_type: pa.DataType):
    """A numeric RANGE offset cast to a numeric ORDER BY column's type, as Spark casts it (measured
    in Spark 4): over an integer key the fraction is dropped (``-1.5 PRECEDING`` over a BIGINT key
    is ``-1 PRECEDING``, so ``1 FOLLOWING``), over a DECIMAL(p, s) key it is rounded half up to
    ``s`` digits (``1.555`` over DECIMAL(12,2) is ``1.56``; past ``p`` digits Spark fails,
    NUMERIC_VALUE_OUT_OF_RANGE; an infinite or NaN DOUBLE is NULL), over a DOUBLE key it is a
    DOUBLE. A TIMESTAMP offset (``TIMESTAMP '...' FOLLOWING``) is its seconds since 1970, as Spark
    casts it to a number: rounded down over an integer key, a DOUBLE otherwise (then cast so). Other
    offsets (INTERVALs over DATE and TIMESTAMP keys, NULL, infinities over integer keys, keys that
    are not numbers) as they are. O(1).

    >>> offset_in_key_type(decimal.Decimal("-1.9"), pa.int64())
    -1
    >>> offset_in_key_type(1.555, pa.decimal128(12, 2))
    Decimal('1.56')
    """
    family = kind_of(key_type)
    if family is TypeFamily.INTERVAL:
        return _offset_as_interval(offset, key_type)
    if isinstance(offset, str):
        return _string_in_key_type(offset, key_type)
    if isinstance(offset, dt.datetime) and family.is_numeric:
        seconds = pa.int64() if family is TypeFamily.INT else pa.float64()
        offset = casts.cast(pa.array([offset], pa.timestamp("us")), seconds)[0].as_py()
    if isinstance(offset, Interval) and family in (TypeFamily.INT, TypeFamily.DECIMAL):
        offset = _interval_number(offset)
    if not isinstance(offset, (int, float, decimal.Decimal)) or isinstance(offset, bool):
        return offset
    finite = not isinstance(offset, float) or math.isfinite(offset)
    if family is TypeFamily.INT and finite and not isinstance(offset, int):
        return int(offset)  # toward zero
    if family is TypeFamily.DECIMAL and not finite:
        return None  # Spark casts an infinite or NaN DOUBLE to a DECIMAL as NULL here (measured)
    if family is TypeFamily.DECIMAL:
        exact = decimal.Decimal(repr(offset)) if isinstance(offset, float) else decimal.Decimal(offset)
        step = decimal.Decimal(1).scaleb(-key_type.scale)
        try:
            rounded = exact.quantize(step, rounding=decimal.ROUND_HALF_UP, context=_WIDE)
        except decimal.InvalidOperation:  # past the context's 400 digits: past every DECIMAL too
            rounded = decimal.Decimal(10) ** 400
        if len(rounded.as_tuple().digits) > key_type.precision and rounded != 0:
            raise WindowSpecError(
                f"the offset {sql_literal(offset)} cannot be represented as {sql_type(key_type)}, the "
                "ORDER BY column's type (Spark: NUMERIC_VALUE_OUT_OF_RANGE)"
            )
        return rounded
    return offset


def _offset_as_interval(offset, key_type: pa.DataType):
    """A RANGE offset over a day-time interval ORDER BY key, cast to the key's type as Spark casts
    it: a day-time interval as it is, an integer or DECIMAL a count of the key's last field (days
    over an INTERVAL DAY key, seconds over an INTERVAL DAY TO SECOND one, the fraction kept to the
    microsecond, rounded half up), with the key's fields; a number past Spark's largest interval is
    refused (CAST_OVERFLOW). Other offsets as they are (refused by ``check_range_key``). O(1).

    >>> _offset_as_interval(decimal.Decimal("1.5"), pa.duration("s"))
    Interval(months=0, days=0, micros=129600000000, fields='DAY')
    """
    fields = carrier_fields(key_type)
    if isinstance(offset, Interval) and not offset.year_month:
        return Interval(0, offset.days, offset.micros, fields)
    if isinstance(offset, (int, decimal.Decimal)) and not isinstance(offset, bool):
        micros = (decimal.Decimal(offset) * FIELD_MICROS[fields.split()[-1]]).to_integral_value(
            decimal.ROUND_HALF_UP
        )
        if abs(micros) > INTERVAL_LIMIT["us"]:
            raise WindowSpecError(
                f"the offset {offset} cannot be cast to {sql_type(key_type)}, the ORDER BY column's type "
                "(Spark: CAST_OVERFLOW)"
            )
        return Interval(0, 0, int(micros), fields)
    return offset


def _string_in_key_type(text: str, key_type: pa.DataType):
    """A string offset (``'2' FOLLOWING``) cast straight to a numeric ORDER BY column's type, as
    Spark casts it (measured in Spark 4): over an integer key only integer text (``'1.5'`` and
    ``'2e0'`` fail, CAST_INVALID_INPUT), over a DECIMAL key decimal text rounded half up (``'1e0'``
    is 1.00, ``'NaN'`` fails), over a DOUBLE key any DOUBLE text. Over other keys the string as it
    is, for ``check_range_key`` to refuse. O(1).

    >>> _string_in_key_type(" +2 ", pa.int64()), _string_in_key_type("1.555", pa.decimal128(12, 2))
    (2, Decimal('1.56'))
    """
    family = kind_of(key_type)
    where = f"'{text}' FOLLOWING over {sql_type(key_type)}"
    if family is TypeFamily.FLOAT:
        return string_offset(text, where)
    if family not in (TypeFamily.INT, TypeFamily.DECIMAL):
        return text
    try:
        return casts.cast(pa.array([text]), key_type)[0].as_py()
    except casts.CastError:
        raise WindowSpecError(
            f"the frame bound {where}: the string cannot be cast to the ORDER BY column's type "
            "(Spark: CAST_INVALID_INPUT)"
        ) from None


def range_frame_in_key_type(frame: Frame, key_type: pa.DataType) -> Frame:
    """A RANGE frame with its offsets cast to the ORDER BY key's type as Spark casts them
    (``offset_in_key_type``; each offset checked by ``check_range_key`` before and after), so over
    an integer or DECIMAL key an INTERVAL is a number like any other offset and an infinite or NaN
    DOUBLE over a DECIMAL key is NULL. ``NULL FOLLOWING`` over a day-time interval key is a NULL of
    its type (``NULL PRECEDING``, Spark's ``-NULL``, a DOUBLE, is refused). O(1).

    >>> day = Interval(days=1, fields="DAY")
    >>> frame = Frame(FrameUnit.RANGE, Bound.preceding(day), Bound.following(1.5))
    >>> str(range_frame_in_key_type(frame, pa.int64()))
    'RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING'
    """
    bounds = []
    for b in (frame.start, frame.end):
        if b.offset is None and b.kind is BoundKind.FOLLOWING and kind_of(key_type) is TypeFamily.INTERVAL:
            bounds.append(b)  # NULL FOLLOWING: Spark casts the NULL to the key's interval type
            continue
        if b.has_offset:
            check_range_key(b.offset, key_type)
            b = Bound(b.kind, offset_in_key_type(b.offset, key_type))
            check_range_key(b.offset, key_type)  # an offset that cast past an INT key's range
        bounds.append(b)
    return Frame(frame.unit, bounds[0], bounds[1], frame.exclude)


def check_range_frame(frame: Frame, key_type: pa.DataType) -> None:
    """Spark's checks of a RANGE frame with offsets over an ORDER BY key of ``key_type``, made after
    it casts each offset to a numeric key's type (measured in Spark 4; ``range_frame_in_key_type``),
    so ``INTERVAL 1 DAY PRECEDING AND 1 FOLLOWING`` and ``1.5 FOLLOWING AND 1 FOLLOWING`` over a
    BIGINT key are accepted and ``INTERVAL 1 DAY PRECEDING AND INTERVAL 2 HOURS PRECEDING`` is
    not (-1 is past -2). WindowSpecError for bounds of two types once cast (an INTERVAL beside a
    number over a DATE or TIMESTAMP key; Spark: SPECIFIED_WINDOW_FRAME_DIFF_TYPES) or a lower
    bound past the upper one, NaN above every number (SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON),
    but on one side of the row (``Frame.one_side``: SQL's empty frame, more of SQL). Two intervals
    of other fields bound one frame (SQL's intervals are one type). The frame kernels themselves
    take any frame (a start past the end is an empty frame). O(1).

    >>> frame = Frame(FrameUnit.RANGE, Bound.following(1.5), Bound.following(1))
    >>> check_range_frame(frame, pa.int64())  # 1 FOLLOWING AND 1 FOLLOWING
    >>> check_range_frame(frame, pa.float64())  # empty
    >>> check_range_frame(Frame(FrameUnit.RANGE, Bound.following(1), Bound.preceding(1)), pa.float64())
    Traceback (most recent call last):
    ...
    overwindow.errors.WindowSpecError: the lower bound of a window frame must be less than or equal ...
    """
    cast = range_frame_in_key_type(frame, key_type)
    a, b = cast.start.offset, cast.end.offset
    if a is not None and b is not None and not _same_type(a, b):
        raise WindowSpecError(
            f"window frame bounds {sql_literal(a)} and {sql_literal(b)} do not have the same type "
            f"over a {sql_type(key_type)} ORDER BY column"
        )
    lower, upper = cast.start.signed_offset(), cast.end.signed_offset()
    # the start past the end on one side is SQL's empty frame, unless an offset is no number or
    # INTERVAL (a string, a TIMESTAMP), an INTERVAL became a number of a numeric key, or an offset
    # is NaN (SQL refuses these: Spark's refusal stands)
    empty = frame.one_side and all(
        isinstance(b.offset, (Interval, int, float, decimal.Decimal))
        and not isinstance(b.offset, bool)
        and isinstance(b.offset, Interval) == isinstance(c.offset, Interval)
        and not (isinstance(c.offset, float) and math.isnan(c.offset))
        for b, c in ((frame.start, cast.start), (frame.end, cast.end))
    )
    if lower is not None and upper is not None and _sorts_after(lower, upper) and not empty:
        raise WindowSpecError(
            f"the lower bound of a window frame must be less than or equal to the upper bound: {frame}"
            f" (over {sql_type(key_type)}: {cast.start} AND {cast.end})"
        )


def _same_type(a, b) -> bool:
    """Whether two offsets (cast to the key's type) have one SQL type: two numbers, or two INTERVALs
    of any fields (Spark wants one type, ``INTERVAL MINUTE`` is not ``INTERVAL SECOND``; SQL's
    intervals, PostgreSQL's and DuckDB's, are one type: ``INTERVAL '1' MINUTE PRECEDING AND
    INTERVAL '20' SECOND FOLLOWING`` and ``INTERVAL '1' MONTH PRECEDING AND ... SECOND FOLLOWING``
    bound one frame, more of SQL)."""
    if isinstance(a, Interval) and isinstance(b, Interval):
        return True
    return not isinstance(a, Interval) and not isinstance(b, Interval)


def _sorts_after(a, b) -> bool:
    """``a > b`` in SQL's sort order of numbers, where NaN lies above every number and equals NaN."""
    a_nan, b_nan = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return a_nan and not b_nan
    return a > b


_INT_RANGES = {
    t: (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())
}


def check_range_key(offset, key_type: pa.DataType) -> None:
    """Spark's rules for a RANGE offset over an ORDER BY column of ``key_type`` (WindowSpecError
    otherwise, when the call is planned, before any row): numbers over numbers (an integer offset
    within the column's integer type, no infinite offset over integers), INTERVALs over TIMESTAMPs,
    whole days or YEAR, MONTH and DAY intervals over DATEs, day-time intervals and integer or
    DECIMAL numbers over day-time intervals. O(1).

    >>> check_range_key(Interval(micros=3_600_000_000, fields="HOUR"), pa.date32())
    Traceback (most recent call last):
    ...
    overwindow.errors.WindowSpecError: RANGE over a DATE ORDER BY column takes YEAR, MONTH or DAY ...
    """
    family = kind_of(key_type)
    what = sql_type(key_type)
    if offset is None and not family.is_numeric:  # Spark types NULL as a DOUBLE offset here
        raise WindowSpecError(
            f"a NULL RANGE offset needs a numeric ORDER BY column (or NULL FOLLOWING a day-time "
            f"INTERVAL one: NULL PRECEDING is -NULL, a DOUBLE), not {what}"
        )
    if family is TypeFamily.INTERVAL:
        number = isinstance(offset, (int, decimal.Decimal)) and not isinstance(offset, bool)
        if not number and (not isinstance(offset, Interval) or offset.year_month):
            raise WindowSpecError(
                f"RANGE over an {what} ORDER BY column needs a day-time INTERVAL or an integer or "
                f"DECIMAL offset, not {offset if isinstance(offset, Interval) else sql_literal(offset)} "
                "(Spark: RANGE_FRAME_INVALID_TYPE)"
            )
        return
    if not family.is_ordered_number:
        raise WindowSpecError(
            f"RANGE with an offset needs a numeric, DATE, TIMESTAMP or day-time INTERVAL ORDER BY "
            f"column, not {what}"
        )
    if isinstance(offset, Interval):
        if family in (TypeFamily.INT, TypeFamily.DECIMAL):
            return  # cast to the key's type, in the interval's last unit (offset_in_key_type)
        if not family.is_temporal:
            raise WindowSpecError(
                f"an INTERVAL offset needs a DATE, TIMESTAMP, integer or DECIMAL ORDER BY column, not {what}"
            )
        if family is TypeFamily.DATE and not (
            offset.year_month or offset.fields in ("DAY", "") and not offset.micros
        ):
            raise WindowSpecError(
                "RANGE over a DATE ORDER BY column takes YEAR, MONTH or DAY intervals or whole days, "
                f"not {offset}"
            )
        return
    if family is TypeFamily.TIMESTAMP or (family is TypeFamily.DATE and not isinstance(offset, int)):
        raise WindowSpecError(
            f"RANGE over a {what} ORDER BY column needs an INTERVAL offset"
            f"{' (or whole days)' if family is TypeFamily.DATE else ''}, not {sql_literal(offset)}"
        )
    if family is TypeFamily.INT and isinstance(offset, int) and key_type in _INT_RANGES:
        lo, hi = _INT_RANGES[key_type]
        if not lo <= offset <= hi:
            raise WindowSpecError(
                f"the offset {offset} cannot be cast to {what}, the ORDER BY column's type "
                "(Spark: CAST_OVERFLOW)"
            )
    if family is TypeFamily.INT and isinstance(offset, float) and not math.isfinite(offset):
        raise WindowSpecError(
            f"the offset {sql_literal(offset)} cannot be cast to {what}, the ORDER BY column's type "
            "(Spark: CAST_OVERFLOW)"
        )


def _search_in_partitions(layout, folded: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """``np.searchsorted(folded, needles)`` for needles whose answers lie in their own row's
    partition: a block of rows searches only the partitions it spans, which stay in cache (a search
    over the whole 5M-row key misses the cache at every step)."""
    out = np.empty(len(needles), dtype=np.int64)
    for rows in chunks(len(needles)):
        lo, hi = int(layout.part_start[rows.start]), int(layout.part_end[rows.stop - 1])
        out[rows] = np.searchsorted(folded[lo:hi], needles[rows]) + lo
    return out


def _date_days(offset, kind: TypeFamily):
    """A whole-number offset on a DATE key counts days (as in Spark and DuckDB)."""
    if kind is TypeFamily.DATE and isinstance(offset, int) and not isinstance(offset, bool):
        return Interval(days=offset)
    return offset


def _as_ticks(key: Values, unit: str = "us") -> np.ndarray:
    """A DATE or TIMESTAMP key in ``unit`` ("us" or "ns") since the epoch: coarser units multiply
    exactly, nanoseconds floor to microseconds."""
    v = key.numbers.astype(np.int64, copy=False)
    if key.kind is TypeFamily.DATE:
        return v * (_US_PER_DAY * _PER_US[unit])
    have = key.type.unit
    if have == unit:
        return v
    if have == "ns":
        return v // 1000
    return v * ({"s": 1_000_000, "ms": 1_000, "us": 1}[have] * _PER_US[unit])


def _shift_time(
    ticks: np.ndarray, off: Interval, sign: int, unit: str = "us"
) -> tuple[np.ndarray, np.ndarray | None]:
    """``ticks + sign * off`` for a calendar interval, ``ticks`` in ``unit`` ("us" or "ns") since the
    epoch: the months first (a day past the end of the month reached becomes its last day, as in
    Spark, DuckDB and PostgreSQL), then the days and microseconds. Like ``_saturating_add``: results
    past the int64 range clamp to it, returned with the mask of the clamped entries (None when none).
    Works over numpy's whole datetime64 range of the unit (about 290,000 years either side of 1970
    in microseconds, 1677-2262 in nanoseconds). O(n).

    >>> jan31, mar1 = 1_706_659_200_000_000, 1_709_251_200_000_000  # 2024-01-31, 2024-03-01
    >>> out, _ = _shift_time(np.array([jan31, mar1]), Interval(months=1), +1)
    >>> out.view("datetime64[us]").astype("datetime64[D]").tolist()
    [datetime.date(2024, 2, 29), datetime.date(2024, 4, 1)]
    """
    out, beyond = ticks, None
    if off.months:
        out, beyond = _add_months(ticks, sign * off.months, unit)
    delta = sign * (off.days * _US_PER_DAY + off.micros) * _PER_US[unit]
    if delta and len(out):
        out, over = _saturating_add(out, delta, int(out.min()), int(out.max()))
        if beyond is not None:  # past the range already: stays clamped whichever way the days go
            out[beyond] = _I64.max if sign > 0 else _I64.min
            beyond = beyond if over is None else beyond | over
        else:
            beyond = over
    return out, beyond


_US_PER_DAY = 86_400_000_000
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
    month kept or cut to the month's last day, the time of day kept; clamped as ``_shift_time``. O(n)."""
    lo, hi = _MONTHS[unit]
    day_ticks = _US_PER_DAY * _PER_US[unit]
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
    return _as_ticks(key) if key.kind.is_temporal else key.numbers


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
    offset = _date_days(offset, kind)
    if kind.is_numeric or kind is TypeFamily.INTERVAL:
        offset = offset_in_key_type(offset, key_type)
    if isinstance(offset, Interval):
        return _shift_time(numbers, offset, sign)[0]
    if numbers.dtype == np.int64 and isinstance(offset, int) and len(numbers):
        return _saturating_add(numbers, sign * offset, int(numbers.min()), int(numbers.max()))[0]
    if isinstance(offset, decimal.Decimal):  # a DECIMAL key's numbers are its doubles
        offset = float(offset)
    return numbers + sign * offset
