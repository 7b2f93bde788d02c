"""Frame bounds (physical/bounds.py) against a brute-force, per-row reading of the SQL definition.

For every sorted row the test computes the set of rows in its frame straight from the standard:

* ROWS: positions ``i - n .. i + m`` of the partition;
* GROUPS: from the first row of the peer group ``n`` groups before to the last row of the one ``m``
  groups after;
* RANGE: rows whose ORDER BY value lies within the offsets of the current row's value, the offsets
  taken in sort direction (DESC flips the sign), NULLs sorting as -inf (NULLS FIRST) or +inf
  (NULLS LAST), NaN above +inf and equal to itself, and a NULL row's offset bounds being its NULL
  peer group; CURRENT ROW means the first / last peer;
* EXCLUDE CURRENT ROW / GROUP / TIES then remove the row, its peers, or its peers but itself.

and compares it with the union of the parts ``frame_bounds`` returns. The sort itself (Layout) is
checked against Python's stable ``sorted`` with an explicit SQL comparator.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from overwindow import Bound, Exclude, Frame, FrameUnit, Interval
from overwindow.logical.frame import BoundKind
from overwindow.physical.bounds import frame_bounds
from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)
DAY0 = dt.date(2020, 1, 31)

# --- brute force -------------------------------------------------------------------------------


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def sql_compare(a, b, descending: bool, nulls_first: bool) -> int:
    """-1/0/1: the SQL sort order of two key values (NaN greatest and equal to NaN, -0.0 = 0.0)."""
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (-1 if nulls_first else 1) * (1 if a is None else -1)
    ka = (1, 0) if _nan(a) else (0, a)
    kb = (1, 0) if _nan(b) else (0, b)
    c = (ka > kb) - (ka < kb)
    return -c if descending else c


def add_months(d: dt.date, months: int) -> dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    y += d.year
    return d.replace(year=y, month=m + 1, day=min(d.day, calendar.monthrange(y, m + 1)[1]))


@functools.total_ordering
class Beyond:
    """A date moved past the years Python's dates hold (1 to 9999): above or below every date."""

    def __init__(self, above: bool):
        self.above = above

    def __eq__(self, other):
        return isinstance(other, Beyond) and other.above == self.above

    def __lt__(self, other):
        return not self.above and not self == other

    def __hash__(self):
        return hash(self.above)


def shift(v, offset, sign: int):
    """``v + sign * offset`` in the key's own domain (a date past year 9999 or before year 1 is
    ``Beyond``: no key reaches it)."""
    if _nan(v):
        return v
    if isinstance(offset, Interval):
        try:
            if offset.months:
                v = add_months(v, sign * offset.months)
            return v + sign * dt.timedelta(days=offset.days, microseconds=offset.micros)
        except (OverflowError, ValueError):  # the year left 1..9999
            return Beyond(above=sign > 0)
    return v + sign * offset


def brute_frames(rows, part, keys, frame: Frame):
    """For rows in *sorted* order: the list of frame position sets (the SQL definition, O(n^2))."""
    n = len(rows)
    parts_of = {}
    for i in range(n):
        parts_of.setdefault(part[i], []).append(i)
    out = []
    for i in range(n):
        P = parts_of[part[i]]
        first, last = P[0], P[-1]

        def peers_of(r):
            return [j for j in P if all(sql_compare(k[0][j], k[0][r], k[1], k[2]) == 0 for k in keys)]

        peers = peers_of(i)
        # peer groups of the partition, in order
        groups = []
        for j in P:
            if not groups or j not in groups[-1]:
                groups.append(peers_of(j))
        gi = next(g for g, members in enumerate(groups) if i in members)

        def pos(bound: Bound, is_start: bool) -> float:
            """The first (start) or last (end) position of the frame; +-inf for empty sides."""
            kind = bound.kind
            if kind is BoundKind.UNBOUNDED_PRECEDING:
                return first
            if kind is BoundKind.UNBOUNDED_FOLLOWING:
                return last
            if kind is BoundKind.CURRENT_ROW:
                if frame.unit is FrameUnit.ROWS:
                    return i
                return peers[0] if is_start else peers[-1]
            sign = -1 if kind is BoundKind.PRECEDING else 1
            off = bound.offset
            if frame.unit is FrameUnit.ROWS:
                return i + sign * off
            if frame.unit is FrameUnit.GROUPS:
                g = gi + sign * off
                if is_start:
                    return groups[g][0] if 0 <= g < len(groups) else (first if g < 0 else math.inf)
                return groups[g][-1] if 0 <= g < len(groups) else (last if g >= len(groups) else -math.inf)
            # RANGE with an offset: one key
            col, desc, nf = keys[0]
            v = col[i]
            if v is None:  # a NULL row's frame bound is its NULL peer group
                return peers[0] if is_start else peers[-1]
            target = shift(v, off, -sign if desc else sign)
            if is_start:  # the first row at or after the target in sort order
                hits = [j for j in P if sql_compare(col[j], target, desc, nf) >= 0]
                return hits[0] if hits else math.inf
            hits = [j for j in P if sql_compare(col[j], target, desc, nf) <= 0]
            return hits[-1] if hits else -math.inf

        lo, hi = pos(frame.start, True), pos(frame.end, False)
        members = {j for j in P if lo <= j <= hi}
        if frame.exclude is Exclude.CURRENT_ROW:
            members.discard(i)
        elif frame.exclude is Exclude.GROUP:
            members -= set(peers)
        elif frame.exclude is Exclude.TIES:
            members -= set(peers) - {i}
        out.append(members)
    return out


def sql_sorted_perm(part, keys):
    """Input positions in SQL order: partition (ASC NULLS FIRST), then the keys; stable."""

    def cmp(a, b):
        c = sql_compare(part[a], part[b], False, True)
        if c:
            return c
        for col, desc, nf in keys:
            c = sql_compare(col[a], col[b], desc, nf)
            if c:
                return c
        return 0

    return sorted(range(len(part)), key=functools.cmp_to_key(cmp))


# --- random cases ------------------------------------------------------------------------------

KEY_VALUES = {
    "int": st.one_of(st.integers(-5, 5), st.sampled_from([I64_MAX, I64_MIN, I64_MAX - 1])),
    "float": st.one_of(
        st.integers(-8, 8).map(lambda v: v / 2),
        st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e300, -1e300]),
    ),
    "date": st.one_of(
        st.integers(-70, 70).map(lambda d: DAY0 + dt.timedelta(days=d)),
        # the ends of the calendar (9999-12-31 is a common "valid until" sentinel), a
        # leap day before 1677 (where nanosecond timestamps end)
        st.sampled_from(
            [
                dt.date(1, 1, 1),
                dt.date(1, 1, 31),
                dt.date(1600, 2, 29),
                dt.date(9999, 12, 1),
                dt.date(9999, 12, 31),
            ]
        ),
    ),
    # nanosecond timestamps 37 minutes apart give or take a few nanoseconds, so that frame edges of
    # whole minutes and microseconds fall a nanosecond either side of rows; and month ends
    "timestamp_ns": st.one_of(
        st.tuples(st.integers(0, 6), st.integers(-3, 3)).map(
            lambda a: (
                pd.Timestamp("2024-03-31 00:30:00.123456789")
                + pd.Timedelta(minutes=37 * a[0], nanoseconds=a[1])
            )
        ),
        st.sampled_from(
            [pd.Timestamp("2024-01-31 23:59:59.999999999"), pd.Timestamp("2024-02-29 23:59:59.999999999")]
        ),
    ),
    # microsecond timestamps 7 seconds apart give or take a few microseconds: a span short enough to
    # count by arithmetic (``_folded_span``)
    "timestamp_us": st.tuples(st.integers(0, 6), st.integers(-3, 3)).map(
        lambda a: (
            dt.datetime(2024, 3, 31, 0, 30, 0, 123456) + dt.timedelta(seconds=7 * a[0], microseconds=a[1])
        )
    ),
}
KEY_TYPES = {
    "int": pa.int64(),
    "float": pa.float64(),
    "date": pa.date32(),
    "timestamp_ns": pa.timestamp("ns"),
    "timestamp_us": pa.timestamp("us"),
}


def nullable(values, rate):
    return st.one_of(values, st.none()) if rate else values


@st.composite
def cases(draw, units=("ROWS", "RANGE", "GROUPS"), kinds=None):
    n = draw(st.integers(0, 28))
    partitioned = draw(st.booleans())
    part = (
        draw(st.lists(nullable(st.integers(0, 2), True), min_size=n, max_size=n))
        if partitioned
        else [None] * n
    )
    unit = FrameUnit(draw(st.sampled_from(units)))
    n_keys = draw(st.sampled_from([1, 1, 2] if unit is not FrameUnit.ROWS else [0, 1, 2]))
    kinds = [draw(st.sampled_from(kinds or sorted(KEY_VALUES)))] + ["int"] * (n_keys - 1)
    keys = []
    for kind in kinds[:n_keys]:
        with_nulls = draw(st.booleans())
        col = draw(st.lists(nullable(KEY_VALUES[kind], with_nulls), min_size=n, max_size=n))
        keys.append((col, draw(st.booleans()), draw(st.booleans()), kind))
    offsets_ok = unit is not FrameUnit.RANGE or n_keys == 1

    def offset():
        if unit is FrameUnit.RANGE:
            kind = kinds[0]
            if kind == "date":
                return draw(
                    st.sampled_from(
                        [
                            Interval(days=0),
                            Interval(days=1),
                            Interval(days=3),
                            Interval(days=31),
                            Interval(months=1),
                            Interval(months=1, days=2),
                            # from one end of the calendar to the other, and past
                            # every int64 microsecond (months, days, both)
                            Interval(months=12 * 9998 + 11),
                            Interval(days=3_652_058),
                            Interval(months=10**11),
                            Interval(days=10**12),
                            Interval(months=1, days=10**12, micros=5),
                        ]
                    )
                )
            if kind == "timestamp_ns":
                return draw(
                    st.sampled_from(
                        [
                            Interval(),
                            Interval(micros=1),
                            Interval(micros=74 * 60_000_000),
                            Interval(micros=37 * 60_000_000 + 1),
                            Interval(months=1),
                            Interval(days=1, micros=1),
                        ]
                    )
                )
            if kind == "timestamp_us":
                return draw(
                    st.sampled_from(
                        [
                            Interval(),
                            Interval(micros=1),
                            Interval(micros=14_000_000),
                            Interval(micros=7_000_001),
                            Interval(months=1),
                            Interval(days=1, micros=1),
                        ]
                    )
                )
            if kind == "float":
                return draw(st.sampled_from([0, 0.5, 1, 2.5, math.inf]))
            return draw(st.sampled_from([0, 1, 2, 3, I64_MAX]))
        return draw(st.sampled_from([0, 1, 2, 5, I64_MAX]))

    def bound(is_start):
        options = ["CURRENT", "UNBOUNDED"] + (["PRECEDING", "FOLLOWING"] * 2 if offsets_ok else [])
        k = draw(st.sampled_from(options))
        if k == "CURRENT":
            return Bound.current_row()
        if k == "UNBOUNDED":
            return Bound.unbounded_preceding() if is_start else Bound.unbounded_following()
        return Bound.preceding(offset()) if k == "PRECEDING" else Bound.following(offset())

    frame = Frame(unit, bound(True), bound(False), draw(st.sampled_from(list(Exclude))))
    return part, keys, frame


def run_engine(part, keys, frame):
    n = len(part)
    pvals = [Values(pa.array(part, pa.int64()))] if any(p is not None for p in part) or n == 0 else []
    order = [(Values(pa.array(col, KEY_TYPES[kind])), desc, nf) for col, desc, nf, kind in keys]
    layout = Layout.build(pvals, order, n)
    key = None
    if frame.unit is FrameUnit.RANGE and (frame.start.has_offset or frame.end.has_offset):
        col, desc, nf, kind = keys[0]
        key = layout.sorted(pa.array(col, KEY_TYPES[kind]))
        frames = frame_bounds(layout, frame, key, desc, nf)
    else:
        frames = frame_bounds(layout, frame)
    return layout, frames


def check_case(part, keys, frame):
    note(f"part={part}\nkeys={keys}\nframe={frame}")
    layout, frames = run_engine(part, keys, frame)
    n = len(part)
    perm = layout.perm.tolist()
    want_perm = sql_sorted_perm(part, [(c, d, nf) for c, d, nf, _ in keys])
    assert perm == want_perm, "Layout does not sort in SQL order (stable)"
    s_part = [part[p] for p in perm]
    s_keys = [([col[p] for p in perm], d, nf) for col, d, nf, _ in keys]
    want = brute_frames(list(range(n)), s_part, s_keys, frame)
    for i in range(n):
        got = set()
        for s, e in frames.parts:
            got |= set(range(int(s[i]), int(e[i])))
        assert got == want[i], f"sorted row {i}: frame {sorted(got)}, SQL says {sorted(want[i])}"


@settings(max_examples=400, **SETTINGS)
@given(cases())
def test_frames_match_the_sql_definition(case):
    check_case(*case)


@settings(max_examples=150, **SETTINGS)
@given(cases(units=("RANGE",)))
def test_range_frames_match_the_sql_definition(case):
    check_case(*case)


@settings(max_examples=100, **SETTINGS)
@given(cases(units=("RANGE",), kinds=("timestamp_us",)))
def test_range_frames_over_a_short_span_of_microseconds_match_the_sql_definition(case):
    """Microsecond timestamps over a short span are counted by arithmetic over the span
    (``_folded_span``) where other keys under INTERVAL offsets search their distinct values."""
    check_case(*case)


def parts_well_formed(frames, n):
    """Each row's parts are ordered, disjoint, inside [start, end) and the partition."""
    for i in range(n):
        prev_end = frames.start[i]
        for s, e in frames.parts:
            if not (prev_end <= s[i] <= e[i] <= frames.end[i]):
                return False
            prev_end = e[i]
    return True


@settings(max_examples=300, **SETTINGS)
@given(cases())
def test_parts_are_ordered_and_disjoint(case):
    part, keys, frame = case
    layout, frames = run_engine(part, keys, frame)
    assert parts_well_formed(frames, len(part))
    size = frames.size()
    assert (size >= 0).all()
    assert (frames.count(np.arange(len(part) + 1)) == size).all()


def test_exclude_ties_parts_before_current_row():
    """EXCLUDE TIES when the frame ends before the current row (was an engine bug: the current row's
    part lay past the frame's end, and the sliding kernels removed rows they never added)."""
    layout = Layout.build([], [(Values(pa.array([0, 0, 0, 0])), False, True)])
    frames = frame_bounds(
        layout, Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.preceding(2), Exclude.TIES)
    )
    assert parts_well_formed(frames, 4)


# --- pinned cases from docs/design/design.md, Semantics ---------------------------------------------------


def frames_of(keys, frame, part=None):
    """Frames (as sorted lists of *input* positions) for each input row."""
    n = len(keys[0][0]) if keys else len(part)
    part = part if part is not None else [None] * n
    full = [(c, d, nf, k) for c, d, nf, k in keys]
    layout, frames = run_engine(part, full, frame)
    perm = layout.perm.tolist()
    out = [None] * n
    for i in range(n):
        got = []
        for s, e in frames.parts:
            got += [perm[j] for j in range(int(s[i]), int(e[i]))]
        out[perm[i]] = sorted(got)
    return out


def test_range_current_row_includes_peers():
    f = Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), Bound.current_row())
    assert frames_of([([1, 2, 2, 3], False, True, "int")], f) == [[0], [0, 1, 2], [0, 1, 2], [0, 1, 2, 3]]


def test_groups_offsets_count_peer_groups():
    f = Frame(FrameUnit.GROUPS, Bound.preceding(1), Bound.following(1))
    assert frames_of([([1, 1, 5, 9, 9], False, True, "int")], f) == [
        [0, 1, 2],
        [0, 1, 2],
        [0, 1, 2, 3, 4],
        [2, 3, 4],
        [2, 3, 4],
    ]


def test_range_over_null_keys_is_the_null_peer_group():
    f = Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.following(1))
    keys = [([None, 1, None, 2, 10], False, True, "int")]
    assert frames_of(keys, f) == [[0, 2], [1, 3], [0, 2], [1, 3], [4]]
    keys = [([None, 1, None, 2, 10], False, False, "int")]  # NULLS LAST: same sets
    assert frames_of(keys, f) == [[0, 2], [1, 3], [0, 2], [1, 3], [4]]


def test_range_unbounded_reaches_over_nulls():
    """NULLs sort as -inf (NULLS FIRST): an UNBOUNDED PRECEDING start reaches them, an offset does not."""
    f = Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), Bound.preceding(1))
    assert frames_of([([None, 1, 2, 3], False, True, "int")], f) == [[0], [0], [0, 1], [0, 1, 2]]
    f = Frame(FrameUnit.RANGE, Bound.following(1), Bound.unbounded_following())
    assert frames_of([([None, 1, 2, 3], False, False, "int")], f) == [[0], [0, 2, 3], [0, 3], [0]]


def test_range_desc_flips_the_offsets():
    f = Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.current_row())
    # DESC: 1 PRECEDING means values up to 1 *larger*
    assert frames_of([([5, 4, 3, 1], True, False, "int")], f) == [[0], [0, 1], [1, 2], [3]]


def test_range_interval_on_dates_desc():
    f = Frame(FrameUnit.RANGE, Bound.current_row(), Bound.following(Interval(days=2)))
    days = [DAY0 + dt.timedelta(days=d) for d in (0, 1, 2, 5)]
    # DESC: FOLLOWING means up to 2 days *earlier*
    assert frames_of([(days, True, False, "date")], f) == [[0], [0, 1], [0, 1, 2], [3]]


def test_range_month_interval_clips_to_month_end():
    f = Frame(FrameUnit.RANGE, Bound.current_row(), Bound.following(Interval(months=1)))
    days = [dt.date(2020, 1, 31), dt.date(2020, 2, 29), dt.date(2020, 3, 1), dt.date(2020, 3, 30)]
    # Jan 31 + 1 month = Feb 29 (clipped); Feb 29 + 1 month = Mar 29; Mar 1 + 1 month = Apr 1
    assert frames_of([(days, False, True, "date")], f) == [[0, 1], [1, 2], [2, 3], [3]]


def test_range_nan_and_infinities():
    f = Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.following(1))
    keys = [([math.nan, -math.inf, 0.0, math.inf, math.nan, 1.0], False, True, "float")]
    assert frames_of(keys, f) == [[0, 4], [1], [2, 5], [3], [0, 4], [2, 5]]


@pytest.mark.parametrize(
    "key,bound,want",
    [
        (
            [I64_MAX, I64_MAX - 1],
            Frame(FrameUnit.RANGE, Bound.current_row(), Bound.following(1)),
            [[0], [0, 1]],
        ),
        (
            [I64_MIN, I64_MIN + 1],
            Frame(FrameUnit.RANGE, Bound.preceding(1), Bound.current_row()),
            [[0], [0, 1]],
        ),
        # the exact targets lie past int64 max (min): above (below) every key, so no row starts (ends) there
        (
            [I64_MAX - 1, I64_MAX],
            Frame(FrameUnit.RANGE, Bound.following(I64_MAX), Bound.unbounded_following()),
            [[], []],
        ),
        (
            [I64_MAX - 1, I64_MAX],
            Frame(FrameUnit.RANGE, Bound.following(2), Bound.unbounded_following()),
            [[], []],
        ),
        (
            [I64_MIN, I64_MIN + 1],
            Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), Bound.preceding(I64_MAX)),
            [[], []],
        ),
        (
            [I64_MIN, I64_MIN + 1],
            Frame(FrameUnit.RANGE, Bound.unbounded_preceding(), Bound.preceding(2)),
            [[], []],
        ),
    ],
)
def test_range_offset_near_int64_limits(key, bound, want):
    assert frames_of([(key, False, True, "int")], bound) == want


def test_range_offset_past_int64_min_descending():
    """DESC: FOLLOWING moves toward smaller keys, so it is key - offset that leaves int64."""
    f = Frame(FrameUnit.RANGE, Bound.following(2), Bound.unbounded_following())
    assert frames_of([([I64_MIN, I64_MIN + 1], True, True, "int")], f) == [[], []]
    f = Frame(FrameUnit.RANGE, Bound.current_row(), Bound.following(1))
    assert frames_of([([I64_MIN, I64_MIN + 1], True, True, "int")], f) == [[0], [0, 1]]


def test_range_int64_extremes_do_not_wrap():
    f = Frame(FrameUnit.RANGE, Bound.preceding(I64_MAX), Bound.current_row())
    keys = [([I64_MIN, -1, 0, I64_MAX], False, True, "int")]
    # I64_MAX - I64_MAX = 0; 0 - I64_MAX = I64_MIN + 1 excludes I64_MIN; -1 - I64_MAX = I64_MIN
    assert frames_of(keys, f) == [[0], [0, 1], [1, 2], [2, 3]]
    f = Frame(FrameUnit.RANGE, Bound.current_row(), Bound.following(I64_MAX))
    # I64_MIN + I64_MAX = -1; -1 + I64_MAX = I64_MAX - 1 excludes I64_MAX; 0 + I64_MAX reaches it
    assert frames_of(keys, f) == [[0, 1], [1, 2], [2, 3], [3]]


def test_start_past_end_is_empty():
    f = Frame(FrameUnit.ROWS, Bound.following(2), Bound.following(1))
    assert frames_of([([1, 2, 3, 4], False, True, "int")], f) == [[], [], [], []]
    f = Frame(FrameUnit.RANGE, Bound.current_row(), Bound.preceding(1))
    assert frames_of([([1, 2, 3], False, True, "int")], f) == [[], [], []]


def test_exclude_ties_leaves_two_holes():
    f = Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.unbounded_following(), Exclude.TIES)
    keys = [([1, 2, 2, 2, 3], False, True, "int")]
    assert frames_of(keys, f) == [[0, 1, 2, 3, 4], [0, 1, 4], [0, 2, 4], [0, 3, 4], [0, 1, 2, 3, 4]]
    layout, frames = run_engine([None] * 5, keys, f)
    assert len(frames.parts) == 3


def test_exclude_without_order_by_excludes_the_whole_partition_as_peers():
    f = Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.unbounded_following(), Exclude.GROUP)
    assert frames_of([], f, part=[1, 1, 2]) == [[], [], []]
    f = Frame(FrameUnit.ROWS, Bound.unbounded_preceding(), Bound.unbounded_following(), Exclude.CURRENT_ROW)
    assert frames_of([], f, part=[1, 1, 2]) == [[1], [0], []]


def test_rows_offsets_saturate():
    f = Frame(FrameUnit.ROWS, Bound.preceding(I64_MAX), Bound.current_row())
    assert frames_of([([3, 1, 2], False, True, "int")], f) == [[0, 1, 2], [1], [1, 2]]
    f = Frame(FrameUnit.GROUPS, Bound.current_row(), Bound.following(I64_MAX))
    assert frames_of([([3, 1, 2], False, True, "int")], f) == [[0], [0, 1, 2], [0, 2]]


def test_rows_end_offset_int64_max():
    f = Frame(FrameUnit.ROWS, Bound.current_row(), Bound.following(I64_MAX))
    assert frames_of([([3, 1, 2], False, True, "int")], f) == [[0], [0, 1, 2], [0, 2]]


def test_partitions_bound_every_frame():
    f = Frame(FrameUnit.ROWS, Bound.preceding(5), Bound.following(5))
    out = frames_of([([1, 2, 3, 4, 5], False, True, "int")], f, part=[1, None, 1, None, 2])
    assert out == [[0, 2], [1, 3], [0, 2], [1, 3], [4]]
