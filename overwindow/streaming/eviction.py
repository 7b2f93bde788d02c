"""Eviction for emit on update: with a watermark on the single ascending ORDER BY column, the held rows
no later change can need are dropped from the front of the partition, and changes below the
watermark become late from then on (the frames they would need are gone), so eviction never
changes an answer.

Every change that is not late lands at or after ``first_live``, the first row at or above the
watermark. The rows such a change can affect start at the first row whose reach holds
``first_live`` or, for RANGE frames, the watermark's key; what must stay are the rows those rows
read (from the first, as frame starts never decrease), widened to whole peer groups.

A SESSION frame reaches any distance, but only within its session, and a session closes for good
once no change at or above the watermark can join it: when the watermark lies more than the gap
past its last row. The rows of closed sessions (a prefix of each partition) go; a session still
open stays whole, from its first row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from overwindow.evaluator import values_of
from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.physical.key_shift import key_numbers, shift_key
from overwindow.physical.sessions import gap_number, session_bounds
from overwindow.physical.sorting import Layout
from overwindow.physical.values import TypeFamily, Values, kind_of
from overwindow.streaming.arrays import in_ranges
from overwindow.streaming.partitions import starts as partition_starts
from overwindow.streaming.reach import FrameReach, ReachFinder
from overwindow.streaming.state import OnUpdateMeta
from overwindow.streaming.stretch import peer_groups


@dataclass
class Evicted:
    """What ``Eviction.evict`` drops: per partition of the held rows (in order), its first row, how
    many rows it drops from its front and how many peer groups they make."""

    starts: np.ndarray
    rows: np.ndarray
    groups: np.ndarray
    horizon: int | float | None  # the watermark in the key's numbers: changes below it are late now

    def raised(self, meta: OnUpdateMeta) -> OnUpdateMeta:
        """``meta`` with its horizon raised to this eviction's, when it dropped rows."""
        if not self.total:
            return meta
        old = meta.horizon if meta.horizon is not None else self.horizon
        return replace(meta, horizon=max(self.horizon, old))

    @property
    def total(self) -> int:
        return int(self.rows.sum())

    def kept(self, n: int) -> np.ndarray:
        """Whether each of the ``n`` held rows stays. O(n)."""
        keep = np.ones(n, dtype=bool)
        keep[in_ranges(self.starts, self.starts + self.rows)] = False
        return keep


class Eviction:
    """Evicts behind a watermark for one spec's calls (their single ascending ORDER BY key). Calls
    over sessions keep their open sessions (``Sessions``); the others keep what their frames reach,
    found by a finder of their own (a session's reach, the whole partition, would keep every row)."""

    def __init__(self, finder: ReachFinder):
        sessions = {c.frame.gap for c in finder.calls if c.frame.is_session}
        self.sessions = Sessions(tuple(sessions)) if sessions else None
        if sessions:
            finder = ReachFinder(tuple(c for c in finder.calls if not c.frame.is_session), finder.order_by)
        self.finder = finder
        self.key = finder.order_by[0].expr
        self.rows_kept = rows_kept(finder.calls)
        self.past_end = PastEnd.of(finder.calls)
        self.looks_back = looks_back(finder.calls)

    def evict(
        self,
        rows: pa.Table,
        codes: np.ndarray,
        watermark,
        reach: FrameReach | None = None,
        edges: tuple[bool, bool] = (False, False),
        parts: np.ndarray | None = None,
        since=None,
        touched: np.ndarray | None = None,
    ) -> Evicted:
        """What no change at or above ``watermark`` (in the key's numbers) can need at the front of
        each partition of the sorted ``rows`` (codes ``codes``; ``parts``: each row's partition when
        they hold several, none: one): every partition at once. ``reach``: a frame reach over them
        the caller has, reused when it holds the rows around the watermark (its peer groups always).
        ``since``: the watermark every partition was last evicted at, with ``touched`` (bool per
        partition) those whose rows changed since: a partition neither touched nor with a key
        between the two watermarks (or between the keys its RANGE frames reach back to from them)
        would evict what it did then, nothing more, and is left out. O(rows in the windows around
        the partitions looked at; none when the calls ``looks_back``) plus a few O(n) passes over
        the keys.

        >>> from overwindow.spec import OverWindow
        >>> calls = OverWindow("lag(x) OVER (ORDER BY t) AS p").calls
        >>> ev = Eviction(ReachFinder(calls, calls[0].order_by))
        >>> t = pa.table({"t": [1, 2, 5, 1, 2, 5]})
        >>> parts = np.array([0, 0, 0, 1, 1, 1])
        >>> ev.evict(t, np.arange(6), 4, parts=parts).rows.tolist()
        [1, 1]
        >>> ev.evict(t, np.arange(6), 4, parts=parts, since=3, touched=np.array([False, True])).rows.tolist()
        [0, 1]
        """
        n = rows.num_rows
        reach = reach if self.sessions is None else None  # the caller's reaches whole partitions
        starts = np.zeros(min(n, 1), dtype=np.int64) if parts is None else partition_starts(parts)
        if n == 0:
            return Evicted(starts, starts, starts, None)
        keys = Values(values_of(self.key, rows))
        knum = key_numbers(keys)
        ends = np.append(starts[1:], n)

        def first_from(t):  # per partition, its first row whose key is not below t (keys ascend)
            return ends - np.add.reduceat((~(knum < t)).astype(np.int64), starts)

        first_live = first_from(watermark)  # no NULLs: refused as bad
        # by key: rows whose RANGE frame reaches up to a change at the watermark
        by_key = [first_from(t) for t in range_reach(self.finder.calls, watermark, keys.type)]
        # by key: the rows a change at or above the watermark reads through a RANGE frame's start
        floors = [first_from(t) for t in range_floors(self.finder.calls, watermark, keys.type)]
        look = np.ones(len(starts), dtype=bool)
        if since is not None:  # what moved since the last eviction
            look = touched | (first_live != first_from(since))
            for p, t in zip(by_key, range_reach(self.finder.calls, since, keys.type)):
                look |= p != first_from(t)
            for p, t in zip(floors, range_floors(self.finder.calls, since, keys.type)):
                look |= p != first_from(t)  # rows a change at the watermark no longer reads
            if self.sessions is not None:  # a session closed since
                closed_since = self.sessions.closed(keys, knum, since)
                look |= (
                    np.add.reduceat(closed_since != self.sessions.closed(keys, knum, watermark), starts) > 0
                )
        drop = np.zeros(len(starts), dtype=np.int64)
        groups = np.zeros(len(starts), dtype=np.int64)
        # a partition with no more rows before its first live one than a ROWS frame keeps drops
        # none: most partitions of a sparse bucket (a row or two a key), left out unread
        some = np.flatnonzero(look & (first_live - starts > self.rows_kept))
        if len(some):
            live, ends_, keyed = first_live[some], ends[some], [p[some] for p in by_key]
            keep_from, peers = live, None
            if self.finder.calls:  # (with none but sessions, no other frame keeps a row)
                at = np.minimum(live, ends_ - 1)
                if self.looks_back:  # no frame to find: what ``looks_back`` says it reads
                    peers = peer_groups(codes) if reach is None else reach.groups
                    back = np.maximum(at + self.finder.rows[2], starts[some])
                    keep_from = np.searchsorted(peers, peers[back], side="left")
                else:
                    around = np.unique(np.concatenate([at] + [np.minimum(p, ends_ - 1) for p in keyed]))
                    if reach is None or not reach.holds(around):
                        reach = self.finder.around(rows, codes, around, edges, parts)
                    first = np.minimum.reduce([reach.affected(at)[0], at, *keyed])
                    keep_from, peers = np.minimum(live, reach.read_starts(first)), reach.groups
                idle = live == ends_  # no row at or above the watermark: see PastEnd
                if self.past_end is not None and idle.any():
                    wanted = self.past_end.keep_from(starts[some][idle], ends_[idle])
                    inside = wanted < ends_[idle]  # whole peer groups stay (rank counts them)
                    wanted[inside] = np.searchsorted(peers, peers[wanted[inside]], side="left")
                    keep_from[idle] = wanted
                # a change between the watermark and a partition's first live row reads further
                # back through a RANGE frame than that row does
                keep_from = np.minimum.reduce([keep_from, *(f[some] for f in floors)])
            if self.sessions is not None:
                keep_from = np.minimum(
                    keep_from, self.sessions.open_from(keys, knum, codes, watermark, starts, ends, some)
                )
            peers = peer_groups(codes) if peers is None else peers
            drop[some] = keep_from - starts[some]
            last = peers[np.maximum(keep_from - 1, 0)]
            groups[some] = np.where(drop[some] > 0, last - peers[starts[some]] + 1, 0)
        # later changes below the watermark are late: the frames they would need are gone
        horizon = float(watermark) if knum.dtype.kind == "f" else int(watermark)  # DOUBLE, DECIMAL
        return Evicted(starts, drop, groups, horizon)


class Sessions:
    """The sessions of SESSION frames (of the ``gaps`` given) that a change at or above a watermark
    can still alter, over a single ascending ORDER BY key."""

    def __init__(self, gaps: tuple):
        self.gaps = gaps

    def closed(self, keys: Values, knum: np.ndarray, watermark) -> np.ndarray:
        """Whether each sorted key is closed under every gap: no key at or above ``watermark`` (in
        ``key_numbers``) lies within the gap after it, so no change that is not late can chain to a
        row there. True on a prefix of each partition. Exact as ``session_bounds`` compares: integer
        and time keys with the gap as ``gap_number`` gives it, DOUBLE keys in DOUBLE arithmetic;
        DECIMAL keys (compared as doubles with the watermark) are never closed. O(n).

        >>> s = Sessions((2.5,))
        >>> s.closed(Values(pa.array([1, 2, 3, 5])), np.array([1, 2, 3, 5]), 5).tolist()
        [True, True, False, False]
        >>> k = Values(pa.array([-np.inf, 2.0, 2.5, np.inf, np.nan]))
        >>> s.closed(k, k.numbers, 5.0).tolist()
        [True, True, False, False, False]
        """
        if keys.kind is TypeFamily.DECIMAL:
            return np.zeros(len(knum), dtype=bool)
        closed = np.ones(len(knum), dtype=bool)
        for gap in self.gaps:
            if keys.kind is TypeFamily.FLOAT:
                with np.errstate(invalid="ignore"):  # a NaN key, or inf - inf: within no gap, open
                    closed &= (watermark - knum.astype(np.float64)) > gap_number(gap, keys.kind)
            else:  # a key k with k + gap below the watermark: k < watermark - gap, no overflow
                bound = watermark - gap_number(gap, keys.kind)
                closed &= knum < bound if bound > -(2**63) else False
        return closed

    def open_from(self, keys: Values, knum: np.ndarray, codes: np.ndarray, watermark, starts, ends, some):
        """For the partitions ``some`` (indices into [starts, ends), every partition of the sorted
        rows, ORDER BY ``codes``): the first row of its first session not closed (``closed``; its
        end: none). Reads the rows up to those partitions' first open keys only, beside one O(n)
        pass over the keys.

        >>> s = Sessions((2,))
        >>> k = Values(pa.array([1, 2, 4, 9, 10, 1, 8]))
        >>> parts = np.array([0, 5]), np.array([5, 7]), np.array([0, 1])
        >>> [s.open_from(k, k.numbers, np.arange(7), w, *parts).tolist() for w in (7, 6, 11)]
        [[3, 6], [0, 6], [3, 7]]
        >>> s.open_from(k, k.numbers, np.arange(7), 13, *parts).tolist()  # every session closed
        [5, 7]
        """
        first_open = starts + np.add.reduceat(self.closed(keys, knum, watermark).astype(np.int64), starts)
        keep = first_open[some]
        has = np.flatnonzero(keep < ends[some])
        if not len(has):
            return keep
        lo, hi = starts[some][has], keep[has] + 1
        taken = in_ranges(lo, hi)  # each partition's closed rows and its first open one
        part = np.repeat(np.arange(len(lo)), hi - lo)
        layout = Layout.in_order(peer_groups(codes[taken], part), part)
        key = Values(keys.array.take(pa.array(taken)))
        last = np.cumsum(hi - lo) - 1
        for gap in self.gaps:  # the first open key's session starts where it chains back to
            keep[has] = np.minimum(keep[has], taken[session_bounds(layout, gap, key).start[last]])
        return keep


@dataclass(frozen=True)
class PastEnd:
    """What a change after every row of a partition reads by position, when no call's value depends
    on a later row (each reach ends at the current row or before it): ``rows_back`` rows before it
    (ROWS ``n PRECEDING`` frames and lag; None: from the partition's start, as UNBOUNDED PRECEDING
    or IGNORE NULLS read). What it reads by key, through RANGE frames, ``range_floors`` gives.

    It bounds what a partition with no row at or above the watermark keeps: a change that is not
    late comes after all of its rows (keys below the watermark, so no peer of theirs), alters none
    of them, and reads only its last ``rows_back`` rows (widened to whole peer groups) and those
    keyed at least the watermark less a RANGE start offset. So such a partition drops the rest as
    the watermark moves on, all of it under RANGE frames alone: a key that goes quiet (an auction
    closed, a sensor gone) leaves the state. Its last row stands in for the change otherwise (a
    frame reaching forward alters it; a GROUPS offset reads peer groups back), which keeps what the
    last row's frames read.

    >>> from overwindow.spec import OverWindow
    >>> calls = OverWindow("count(*) OVER (ORDER BY t RANGE 10 PRECEDING) AS c",
    ...                    "lag(x, 2) OVER (ORDER BY t) AS p").calls
    >>> PastEnd.of(calls)
    PastEnd(rows_back=2)
    >>> PastEnd.of(OverWindow("lead(x) OVER (ORDER BY t) AS n").calls) is None
    True
    """

    rows_back: int | None

    @staticmethod
    def of(calls: tuple[WindowCall, ...]) -> PastEnd | None:
        """The reads of a change after a partition's rows, None where the last row stands in. O(calls)."""
        rows_back: int | None = 0
        for call in calls:
            if call.reach.end.kind not in (BoundKind.CURRENT_ROW, BoundKind.PRECEDING):
                return None
            start, unit = call.reads.start, call.reads.unit
            if start.kind is BoundKind.UNBOUNDED_PRECEDING:
                rows_back = None
            elif start.kind is not BoundKind.PRECEDING or unit is FrameUnit.RANGE:  # by key, or none
                continue
            elif unit is FrameUnit.ROWS:
                rows_back = None if rows_back is None else max(rows_back, int(start.offset))
            else:  # GROUPS n PRECEDING
                return None
        return PastEnd(rows_back)

    def keep_from(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Per partition [starts, ends) of the sorted rows, its first row a change after its rows
        reads by position. O(partitions)."""
        if self.rows_back is None:
            return starts.copy()
        return np.maximum(starts, ends - self.rows_back)


def rows_kept(calls: tuple[WindowCall, ...]) -> int:
    """How many rows before a partition's first live row eviction always keeps: the most any ROWS
    frame the calls read reaches back (``k PRECEDING``; lag's offset), since the rows a change at
    the first live row affects read at least that far back. O(calls).

    >>> from overwindow.spec import OverWindow
    >>> lag2 = "lag(x, 2) OVER (ORDER BY t) AS p"
    >>> rows_kept(OverWindow(lag2, "count(*) OVER (ORDER BY t RANGE 5 PRECEDING) AS c").calls)
    2
    """
    back = [
        int(c.reads.start.offset)
        for c in calls
        if c.reads.unit is FrameUnit.ROWS
        and c.reads.start.kind is BoundKind.PRECEDING
        and c.reads.start.has_offset
    ]
    return max(back, default=0)


def looks_back(calls: tuple[WindowCall, ...]) -> bool:
    """Whether eviction can do without a frame reach: every call's reach ends at the current row
    (ROWS: or before it), so a change at a partition's first live row (the first of its peer group)
    alters no row before it; and every call reads by ROWS, from the current row, or through a RANGE
    frame from an offset PRECEDING, no further back than ``range_floors`` (the same shift, monotone,
    of a key at least the watermark). What that row keeps is then its ROWS reads' start
    (``ReachFinder.rows``) widened to its peer group, and the floors; ``PastEnd`` serves the
    partitions without a live row. O(calls).

    >>> from overwindow.spec import OverWindow
    >>> looks_back(OverWindow("count(*) OVER (ORDER BY t RANGE 10 PRECEDING) AS c",
    ...                       "lag(x, 2) OVER (ORDER BY t) AS p", "rank() OVER (ORDER BY t) AS r").calls)
    True
    >>> looks_back(OverWindow("lead(x) OVER (ORDER BY t) AS n").calls)
    False
    """
    for call in calls:
        reach, reads = call.reach, call.reads
        ends_here = reach.end.kind is BoundKind.CURRENT_ROW or (
            reach.unit is FrameUnit.ROWS and reach.end.kind is BoundKind.PRECEDING
        )
        by_floor = reads.unit is FrameUnit.RANGE and reads.start.kind is BoundKind.PRECEDING
        from_here = reads.start.kind is BoundKind.CURRENT_ROW or (by_floor and reads.start.has_offset)
        if reach.is_session or not ends_here or not (reads.unit is FrameUnit.ROWS or from_here):
            return False
    return True


def range_reach(calls: tuple[WindowCall, ...], watermark, key_type: pa.DataType) -> list:
    """Per call reading a RANGE frame, the smallest key whose frame reaches a row at the
    ``watermark`` key (the watermark minus the frame's end offset, cast to the key's type as the
    batch frames cast it; minus infinity for UNBOUNDED FOLLOWING), for an ORDER BY key of
    ``key_type``. O(calls).

    >>> from overwindow.spec import OverWindow
    >>> calls = OverWindow("count(*) OVER (ORDER BY t RANGE BETWEEN 1 PRECEDING AND 5 FOLLOWING) AS c").calls
    >>> [int(k) for k in range_reach(calls, 100, pa.int64())]
    [95]
    """
    out = []
    w = _key_number(watermark, key_type)
    for call in calls:
        if call.reads.unit is not FrameUnit.RANGE:
            continue
        end = call.reads.end
        if end.kind is BoundKind.UNBOUNDED_FOLLOWING:
            out.append(-np.inf)
        elif end.has_offset:
            out.append(_key_bound(w, key_type, end.offset, -1 if end.kind is BoundKind.FOLLOWING else 1))
        else:
            out.append(w[0])
    return out


def range_floors(calls: tuple[WindowCall, ...], watermark, key_type: pa.DataType) -> list:
    """Per call reading a RANGE frame that starts ``offset PRECEDING``, the smallest key a change at
    or above the ``watermark`` reads (the watermark less the offset, in ``key_numbers``' domain as
    ``shift_key`` casts it; ``_key_bound``). O(calls).

    >>> from overwindow.spec import OverWindow
    >>> calls = OverWindow("count(*) OVER (ORDER BY t RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) AS c").calls
    >>> [int(t) for t in range_floors(calls, 31, pa.int64())]
    [28]
    >>> cents = OverWindow("sum(x) OVER (ORDER BY t RANGE 0.02 PRECEDING) AS s").calls
    >>> [bool(t < 0.03) for t in range_floors(cents, 0.05, pa.decimal128(12, 2))]  # 0.05 - 0.02: above
    [True]
    """
    out = []
    w = _key_number(watermark, key_type)
    for call in calls:
        start = call.reads.start
        if call.reads.unit is not FrameUnit.RANGE or start.kind is not BoundKind.PRECEDING:
            continue
        out.append(_key_bound(w, key_type, start.offset, -1))
    return out


def _key_bound(w: np.ndarray, key_type: pa.DataType, offset, sign: int):
    """The key ``w`` (``_key_number``) shifted by ``sign`` x ``offset`` as ``shift_key`` shifts it: the
    smallest key a range bound keeps. A DECIMAL key's numbers are doubles while its frames are exact,
    so there the bound is lowered by a few units in the last place of the larger operand: rounding
    may keep a row more, never drop one a frame reads. O(1).

    >>> d = pa.decimal128(12, 2)
    >>> bool(_key_bound(_key_number(0.05, d), d, 0.02, -1) < 0.03)  # 0.05 - 0.02 is 0.030000000000000002
    True
    """
    bound = shift_key(w, key_type, offset, sign)[0]
    if kind_of(key_type) is TypeFamily.DECIMAL:
        bound -= 4 * np.spacing(max(abs(float(w[0])), abs(float(offset)), abs(bound)))
    return bound


def _key_number(watermark, key_type: pa.DataType) -> np.ndarray:
    """The watermark as a one-element array of ``key_numbers``' dtype for a key of ``key_type``."""
    floats = kind_of(key_type) in (TypeFamily.FLOAT, TypeFamily.DECIMAL)
    return np.array([watermark], dtype=np.float64 if floats else np.int64)
