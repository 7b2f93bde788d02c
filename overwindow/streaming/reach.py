"""The frame-reach finder of emit on update: for changes at some positions of a partition's sorted
rows, which rows' values they can alter, and which rows those values read.

For a change at position c, the walk is symmetric: back to ``first_curr_row``, the first row whose
reach (of any call) holds c, and on to ``last_curr_row``, the last such row; the rows in between are
recomputed over ``[first_frame_start, last_frame_end)``, the rows their frames read. ROWS reaches of
all calls merge into one by offsets, RANGE reaches are found by value (``searchsorted``), GROUPS by
peer groups. The finder works on a window of rows around the changes, grown until it holds them,
so its cost follows the frames' reach, not the partition's size.

>>> from overwindow.spec import OverWindow
>>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
>>> finder = ReachFinder(calls, calls[0].order_by)
>>> t = pa.table({"t": list(range(100)), "x": [1] * 100})
>>> reach = finder.around(t, np.arange(100), np.array([50]))
>>> [a.tolist() for a in reach.affected(np.array([50]))], (reach.lo, reach.hi)
([[50], [52]], (18, 83))
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pyarrow as pa

from overwindow.logical.call import SortKey, WindowCall
from overwindow.logical.frame import Bound, BoundKind, Frame, FrameUnit
from overwindow.physical.bounds import frame_bounds
from overwindow.physical.expressions import evaluate_expr
from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values
from overwindow.streaming.stretch import peer_groups


class NeedRows(Exception):
    """A stretch of a partition was too narrow for a change's frames: more rows are needed before it
    (``before``) and/or after it (``after``)."""

    def __init__(self, before: bool, after: bool):
        super().__init__(f"frames reach past the rows given (before: {before}, after: {after})")
        self.before, self.after = before, after


def first_margin(calls: tuple[WindowCall, ...]) -> int | None:
    """A first guess at how many rows around a change the finder needs (twice the largest ROWS
    offset a call's reach spans, lag/lead's included, at least 32; RANGE and GROUPS reaches are
    found wider as needed); None when some call reaches the whole partition or one end of it. O(calls).

    >>> from overwindow.spec import OverWindow
    >>> first_margin(OverWindow("lag(x, 40) OVER (ORDER BY t) AS p").calls)
    80
    """
    m = 16
    for call in calls:
        if call.unbounded_reach:
            return None
        reach = call.reach
        for bound in (reach.start, reach.end):
            if reach.unit is FrameUnit.ROWS and bound.has_offset:
                m = max(m, int(bound.offset))
    return 2 * m


_FAR = 2**62  # an UNBOUNDED side, as a ROWS offset past any partition


def _offset(bound: Bound) -> int:
    """A ROWS bound as an offset from the current row (PRECEDING negative)."""
    if bound.kind is BoundKind.UNBOUNDED_PRECEDING:
        return -_FAR
    if bound.kind is BoundKind.UNBOUNDED_FOLLOWING:
        return _FAR
    if bound.kind is BoundKind.CURRENT_ROW:
        return 0
    return int(bound.offset) if bound.kind is BoundKind.FOLLOWING else -int(bound.offset)


class ReachFinder:
    """Builds the ``FrameReach`` of one spec's calls (sharing one ORDER BY) around changes.

    Every call's reach and reads are frames (``WindowCall.reach``, ``WindowCall.reads``): the ROWS
    ones unite into one frame by their offsets (``rows``: the offsets from the current row of the
    first and last row reached, then of those read); the others (RANGE and GROUPS, found by value
    and by peer group) are kept once each in ``by_value``, with whether they widen the reach, the
    reads or both."""

    def __init__(self, calls: tuple[WindowCall, ...], order_by: tuple[SortKey, ...]):
        self.calls, self.order_by = calls, order_by
        self.margin = first_margin(calls)
        self.rows = [0, 0, 0, 0]  # the row itself
        by_value: dict[Frame, list[bool]] = {}
        for call in calls:
            for frame, which in ((call.reach, 0), (call.reads, 1)):
                if frame.unit is FrameUnit.ROWS:
                    lo, hi = _offset(frame.start), _offset(frame.end)
                    self.rows[2 * which] = min(self.rows[2 * which], lo)
                    self.rows[2 * which + 1] = max(self.rows[2 * which + 1], hi)
                else:
                    by_value.setdefault(frame, [False, False])[which] = True
        self.by_value = [(frame, reach, reads) for frame, (reach, reads) in by_value.items()]

    def around(
        self,
        table: pa.Table,
        codes: np.ndarray,
        around: np.ndarray,
        edges: tuple[bool, bool] = (False, False),
        parts: np.ndarray | None = None,
    ) -> FrameReach:
        """The frame finder over a window around the positions ``around`` (sorted) wide enough for
        them (``FrameReach.holds``): first ``margin`` rows either side, four times wider on each miss;
        all of ``table`` when frames are unbounded. With ``edges`` (the partition goes on before /
        after ``table``) and not even all of ``table`` wide enough: ``NeedRows``. ``parts``: each
        row's partition when ``table`` holds several one after another (non-decreasing; ``codes``
        then order partitions first): frames stop at their edges. O(window) plus one O(n) pass for
        the peer groups."""
        groups = peer_groups(codes)
        n, margin = len(groups), self.margin
        while margin is not None and len(around) and margin < n:
            lo = max(0, int(around[0]) - margin)
            hi = min(n, int(around[-1]) + margin + 1)
            lo = int(np.searchsorted(groups, groups[lo], "left"))  # whole peer groups
            hi = int(np.searchsorted(groups, groups[hi - 1], "right"))
            reach = FrameReach(table, self, groups, lo, hi, edges, parts)
            if reach.holds(around):
                return reach
            margin *= 4
        reach = FrameReach(table, self, groups, edges=edges, parts=parts)
        short = reach.gaps(around)
        if any(short):
            raise NeedRows(*short)
        return reach


class FrameReach:
    """Every row's reach over one partition's sorted rows (all calls' ``WindowCall.reach`` united, and
    what they read, ``WindowCall.reads``), for the symmetric walk: ``affected(c)`` gives
    [first_curr_row, last_curr_row + 1) for changes at c; ``span(lo, hi)`` gives [first_frame_start,
    last_frame_end) for ranges of rows. Frame starts and ends never decrease along the rows, so both
    are binary searches. Built without sorting (the
    rows are in order) over the window [lo, hi) of whole peer groups only, frames clipped to it (and,
    with ``parts``, to each row's partition): O(window); ``holds`` says whether the window was wide
    enough. Positions are the table's.

    >>> from overwindow.spec import OverWindow
    >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
    >>> t = pa.table({"t": [1, 2, 3, 4, 5], "x": [1, 1, 1, 1, 1]})
    >>> r = FrameReach(t, ReachFinder(calls, calls[0].order_by), np.arange(5), 1, 5)
    >>> [a.tolist() for a in r.affected(np.array([3]))], r.holds(np.array([3]))
    ([[3], [5]], True)
    """

    def __init__(
        self,
        table: pa.Table,
        finder: ReachFinder,
        groups: np.ndarray,
        lo: int = 0,
        hi: int | None = None,
        edges: tuple[bool, bool] = (False, False),
        parts: np.ndarray | None = None,
    ):
        self.n = len(groups)
        self.lo, self.hi = lo, self.n if hi is None else hi
        # whether the window's first / last row's partition goes on past it (in this table, or past
        # the table)
        inside = parts is None or self.lo == self.hi  # (an empty window: as if partitions went on)
        self.open_lo = edges[0] or (self.lo > 0 and (inside or parts[self.lo - 1] == parts[self.lo]))
        self.open_hi = edges[1] or (self.hi < self.n and (inside or parts[self.hi] == parts[self.hi - 1]))
        self.groups = groups
        n = self.hi - lo  # window size: every array below is indexed from lo
        local = groups[lo : self.hi] - (groups[lo] if n else 0)
        layout = Layout.in_order(local, None if parts is None else parts[lo : self.hi])
        i = np.arange(n, dtype=np.int64)
        # the ROWS frames, united by offsets (clipped to the window and the row's partition)
        reach_lo, reach_hi, reads_lo, reads_hi = finder.rows
        first, end = layout.part_start, layout.part_end
        self.start, self.end = np.maximum(i + reach_lo, first), np.minimum(i + reach_hi + 1, end)  # reach
        self.read_lo, self.read_hi = np.maximum(i + reads_lo, first), np.minimum(i + reads_hi + 1, end)
        for frame, reach, reads in finder.by_value:
            s, e = self._frame(frame, layout, table, finder.order_by, lo, n)
            if reach:
                np.minimum(self.start, s, out=self.start)
                np.maximum(self.end, e, out=self.end)
            if reads:
                np.minimum(self.read_lo, s, out=self.read_lo)
                np.maximum(self.read_hi, e, out=self.read_hi)

    @staticmethod
    def _frame(
        frame: Frame, layout: Layout, table: pa.Table, order_by, lo: int, n: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """[start, end) of every row's ``frame`` over the window's ``n`` rows from ``lo``."""
        if frame.unit is FrameUnit.RANGE and (frame.start.has_offset or frame.end.has_offset):
            k = order_by[0]
            key = Values(evaluate_expr(k.expr, table.slice(lo, n)))
            frames = frame_bounds(layout, frame, key, k.descending, k.nulls_first)
        else:
            frames = frame_bounds(layout, frame)
        return frames.start, frames.end

    @cached_property
    def _start_mono(self) -> np.ndarray:
        return np.minimum.accumulate(self.start[::-1])[::-1]  # smallest start from i on

    @cached_property
    def _end_mono(self) -> np.ndarray:
        return np.maximum.accumulate(self.end)  # largest end up to i

    @cached_property
    def _read_lo_mono(self) -> np.ndarray:
        return np.minimum.accumulate(self.read_lo[::-1])[::-1]  # earliest row read from i on

    @cached_property
    def _read_hi_mono(self) -> np.ndarray:
        return np.maximum.accumulate(self.read_hi)  # last row read (exclusive) up to i

    def affected(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Merged [first_curr_row, last_curr_row + 1) ranges (as lo and hi arrays) for changes at
        positions c (inside the window): the rows whose frame [start, end) holds c."""
        w = self.hi - self.lo
        if w == 0 or len(c) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        first = np.searchsorted(self._end_mono, c - self.lo, side="right")  # both in [0, w]
        last = np.searchsorted(self._start_mono, c - self.lo, side="right")
        return first + self.lo, last + self.lo

    def spans(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per range [lo, hi) of rows (inside the window; non-empty, sorted, disjoint),
        [first_frame_start, last_frame_end) of its rows, widened to whole peer groups: one pass for
        all ranges. O(ranges + log n per range).

        >>> from overwindow.spec import OverWindow
        >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
        >>> t = pa.table({"t": [1, 2, 3, 4, 5]})
        >>> r = FrameReach(t, ReachFinder(calls, calls[0].order_by), np.arange(5))
        >>> [a.tolist() for a in r.spans(np.array([1, 3]), np.array([2, 5]))]
        [[0, 2], [2, 5]]
        """
        bounds = np.empty(2 * len(lo), dtype=np.int64)
        bounds[0::2], bounds[1::2] = lo - self.lo, hi - self.lo
        fs = np.minimum.reduceat(np.append(self.read_lo, 0), bounds)[0::2] + self.lo
        fe = np.maximum.reduceat(np.append(self.read_hi, 0), bounds)[0::2] + self.lo
        g = self.groups
        if self.n:
            fs = np.where(fs < self.n, np.searchsorted(g, g[np.minimum(fs, self.n - 1)], "left"), fs)
            fe = np.where(fe > 0, np.searchsorted(g, g[np.maximum(fe - 1, 0)], "right"), fe)
        return fs, fe

    def read_starts(self, at: np.ndarray) -> np.ndarray:
        """Per row at ``at`` (inside the window), the first row its frames read, widened to its peer
        group's start (the start of ``spans`` of one row, for many rows at once). O(len(at) log n).

        >>> from overwindow.spec import OverWindow
        >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s").calls
        >>> t = pa.table({"t": [1, 2, 2, 3]})
        >>> reach = FrameReach(t, ReachFinder(calls, calls[0].order_by), np.array([0, 1, 1, 2]))
        >>> reach.read_starts(np.array([3])).tolist()
        [1]
        """
        fs = self.read_lo[at - self.lo] + self.lo
        return np.searchsorted(self.groups, self.groups[np.minimum(fs, self.n - 1)], side="left")

    def holds(self, c: np.ndarray) -> bool:
        """Whether the window is wide enough for positions c (sorted): they, the rows whose frames
        reach them, and the frames of both lie inside it, away from any edge the rows go on past
        (frames there may be clipped)."""
        return not any(self.gaps(c))

    def gaps(self, c: np.ndarray) -> tuple[bool, bool]:
        """(too narrow before, too narrow after) for positions c (sorted); see ``holds``. Starts and
        ends never decrease, so a reach that went past the window shows as a range touching its edge."""
        if len(c) == 0:
            return False, False
        if c[0] < self.lo or c[-1] >= self.hi:
            return bool(c[0] < self.lo), bool(c[-1] >= self.hi)
        a, b = self.affected(c)
        before = self.open_lo and a.min() <= self.lo
        after = self.open_hi and b.max() >= self.hi
        # the rows involved are c and the (non-empty) affected ranges: what they read starts no
        # earlier than what any row from the first of them on reads, and ends no later than what any
        # row up to the last reads (the envelopes; exact, as frames do not move back along the rows)
        full = b > a
        first = min(int(c[0]), int(a[full].min(initial=c[0]))) - self.lo
        last = max(int(c[-1]), int(b[full].max(initial=c[-1] + 1)) - 1) - self.lo
        before = before or (self.open_lo and self._read_lo_mono[first] <= 0)
        after = after or (self.open_hi and self._read_hi_mono[last] >= self.hi - self.lo)
        return bool(before), bool(after)
