"""The frame-reach finder of emit on update: for changes at some positions of a partition's sorted
rows, which rows' values they can alter, and which rows those values read.

For a change at position c, the walk is symmetric: back to ``first_curr_row``, the first row whose
reach (of any call) holds c, and on to ``last_curr_row``, the last such row; the rows in between are
recomputed over ``[first_frame_start, last_frame_end)``, the rows their frames read. ROWS reaches of
all calls merge into one by offsets, RANGE reaches are found by value (``searchsorted``), GROUPS by
peer groups. The finder works on windows of rows around the changes (within their partitions when
a table holds several), grown until they hold them, so its cost follows the changes and the
frames' reach, not the partition's size nor the number of partitions.

>>> from overwindow.spec import OverWindow
>>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
>>> finder = ReachFinder(calls, calls[0].order_by)
>>> t = pa.table({"t": list(range(100)), "x": [1] * 100})
>>> reach = finder.around(t, np.arange(100), np.array([50]))
>>> [a.tolist() for a in reach.affected(np.array([50]))], (reach.lo.tolist(), reach.hi.tolist())
([[50], [52]], ([18], [83]))
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pyarrow as pa

from overwindow.evaluator import values_of
from overwindow.logical.call import SortKey, WindowCall
from overwindow.logical.frame import Bound, BoundKind, Frame, FrameUnit
from overwindow.physical.bounds import frame_bounds
from overwindow.physical.sessions import session_bounds
from overwindow.physical.sorting import Layout
from overwindow.physical.values import Values
from overwindow.streaming.arrays import in_ranges, run_numbers
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
        """The frame finder over windows around the positions ``around`` (sorted) wide enough for
        them (``FrameReach.holds``): first ``margin`` rows either side of each, four times wider on
        each miss; all of ``table`` when frames are unbounded. With ``edges`` (the partition goes on
        before / after ``table``) and not even all of ``table`` wide enough: ``NeedRows``. ``parts``:
        each row's partition when ``table`` holds several one after another (non-decreasing;
        ``codes`` then order partitions first): frames stop at their edges, and so do the windows, so
        the rows of partitions without a position in ``around`` are never looked at. O(windows) plus
        one O(n) pass for the peer groups.

        >>> from overwindow.spec import OverWindow
        >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
        >>> finder = ReachFinder(calls, calls[0].order_by)
        >>> t = pa.table({"t": list(range(100)) * 3, "x": [1] * 300})
        >>> parts = np.repeat(np.arange(3), 100)
        >>> reach = finder.around(t, np.arange(300), np.array([5, 250]), parts=parts)
        >>> reach.lo.tolist(), reach.hi.tolist()
        ([0, 218], [38, 283])
        """
        groups = peer_groups(codes)
        n, margin = len(groups), self.margin
        first, end = np.zeros(len(around), dtype=np.int64), np.full(len(around), n)
        if parts is not None and len(around):  # each position's partition: its window stops there
            first = np.searchsorted(parts, parts[around], "left")
            end = np.searchsorted(parts, parts[around], "right")
        while margin is not None and len(around) and margin < n:
            lo = np.maximum(around - margin, first)
            hi = np.minimum(around + margin + 1, end)
            lo = np.searchsorted(groups, groups[lo], "left")  # whole peer groups
            hi = np.searchsorted(groups, groups[hi - 1], "right")
            # windows that overlap or touch are one
            one = np.flatnonzero(np.append(True, lo[1:] > np.maximum.accumulate(hi)[:-1]))
            reach = FrameReach(table, self, groups, lo[one], np.maximum.reduceat(hi, one), edges, parts)
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
    are binary searches. Built without sorting (the rows are in order) over windows [lo, hi) of
    whole peer groups only (sorted, apart; by default one, the whole table), frames clipped to each
    window (and, with ``parts``, to each row's partition): O(rows in the windows); ``holds`` says
    whether the windows were wide enough. Positions in and out are the table's; inside, the
    windows' rows are numbered one after another (``rows``).

    >>> from overwindow.spec import OverWindow
    >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s").calls
    >>> t = pa.table({"t": list(range(12)), "x": [1] * 12})
    >>> r = FrameReach(t, ReachFinder(calls, calls[0].order_by), np.arange(12), [0, 6], [5, 12])
    >>> [a.tolist() for a in r.affected(np.array([2, 8]))], r.holds(np.array([2, 8]))
    ([[2, 8], [4, 10]], True)
    >>> r.holds(np.array([6])), r.holds(np.array([5]))  # row 6 reads row 5, outside every window
    (False, False)
    """

    def __init__(
        self,
        table: pa.Table,
        finder: ReachFinder,
        groups: np.ndarray,
        lo=None,
        hi=None,
        edges: tuple[bool, bool] = (False, False),
        parts: np.ndarray | None = None,
    ):
        self.n = n = len(groups)
        self.lo = np.zeros(1, dtype=np.int64) if lo is None else np.asarray(lo, dtype=np.int64)
        self.hi = np.full(1, n, dtype=np.int64) if hi is None else np.asarray(hi, dtype=np.int64)
        sizes = self.hi - self.lo
        self.ends = np.cumsum(sizes)  # each window's end among the windows' rows
        self.starts = self.ends - sizes
        one = len(self.lo) == 1
        self.rows = in_ranges(self.lo, self.hi)
        # whether each window's first / last row's partition goes on before / after it (in this
        # table, or past the table)
        on_before, on_after = self.lo > 0, self.hi < n
        if parts is not None and n:
            on_before &= parts[np.maximum(self.lo - 1, 0)] == parts[np.minimum(self.lo, n - 1)]
            on_after &= parts[np.minimum(self.hi, n - 1)] == parts[np.maximum(self.hi - 1, 0)]
        self.open_lo, self.open_hi = edges[0] | on_before, edges[1] | on_after
        self.groups = groups
        m = len(self.rows)  # every array below is indexed by the windows' rows
        local = groups[self.rows]
        local = run_numbers(local)  # 0, 1, ...
        within = None if parts is None else parts[self.rows]
        if not one:  # frames stop at each window's edges too
            cut = np.zeros(m, dtype=bool)
            cut[self.starts[1:]] = True
            if within is not None:
                cut[1:] |= within[1:] != within[:-1]
            within = np.cumsum(cut)
        layout = Layout.in_order(local, within)
        i = np.arange(m, dtype=np.int64)
        # the ROWS frames, united by offsets (clipped to the window and the row's partition)
        reach_lo, reach_hi, reads_lo, reads_hi = finder.rows
        first, end = layout.part_start, layout.part_end
        self.start, self.end = np.maximum(i + reach_lo, first), np.minimum(i + reach_hi + 1, end)  # reach
        self.read_lo, self.read_hi = np.maximum(i + reads_lo, first), np.minimum(i + reads_hi + 1, end)
        for frame, reach, reads in finder.by_value:
            s, e = self._frame(frame, layout, self._taken(table), finder.order_by)
            if reach:
                np.minimum(self.start, s, out=self.start)
                np.maximum(self.end, e, out=self.end)
            if reads:
                np.minimum(self.read_lo, s, out=self.read_lo)
                np.maximum(self.read_hi, e, out=self.read_hi)

    def _taken(self, table: pa.Table) -> pa.Table:
        """The windows' rows of ``table``."""
        if len(self.lo) == 1:
            return table.slice(int(self.lo[0]), len(self.rows))
        return table.take(pa.array(self.rows))

    def _inner(self, c: np.ndarray) -> np.ndarray:
        """The windows' row numbers of table positions ``c`` (each in a window)."""
        return c - self.lo[0] if len(self.lo) == 1 else np.searchsorted(self.rows, c)

    def _outer_end(self, g: np.ndarray) -> np.ndarray:
        """The table position after each windows' row g - 1 (an exclusive end, g > 0)."""
        return self.rows[g - 1] + 1

    @staticmethod
    def _frame(frame: Frame, layout: Layout, rows: pa.Table, order_by) -> tuple[np.ndarray, np.ndarray]:
        """[start, end) of every row's ``frame`` over the windows' ``rows``: a session's is the
        session itself, so a change reaches the rows of its session only (in the rows before it for
        a row that went, so both halves of a split; in the rows after it for a row that came, so
        every row of the sessions it merged)."""
        if frame.is_session:
            k = order_by[0]
            frames = session_bounds(layout, frame.gap, Values(values_of(k.expr, rows)), k.descending)
        elif frame.unit is FrameUnit.RANGE and (frame.start.has_offset or frame.end.has_offset):
            k = order_by[0]
            key = Values(values_of(k.expr, rows))
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
        """[first_curr_row, last_curr_row + 1) ranges (as lo and hi arrays) for changes at positions
        c (inside the windows): the rows whose frame [start, end) holds c. Each lies in c's window:
        the rows of other windows have frames clipped to their own."""
        if len(self.rows) == 0 or len(c) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        g = self._inner(c)
        first = np.searchsorted(self._end_mono, g, side="right")  # <= g: a row's reach holds it
        last = np.searchsorted(self._start_mono, g, side="right")  # > g
        return self.rows[first], self._outer_end(last)

    def spans(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per range [lo, hi) of rows (inside the windows; non-empty, sorted, disjoint),
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
        bounds[0::2], bounds[1::2] = self._inner(lo), self._inner(hi - 1) + 1
        fs = self.rows[np.minimum.reduceat(np.append(self.read_lo, 0), bounds)[0::2]]
        fe = self._outer_end(np.maximum.reduceat(np.append(self.read_hi, 0), bounds)[0::2])
        g = self.groups
        fs = np.searchsorted(g, g[fs], "left")
        fe = np.searchsorted(g, g[fe - 1], "right")
        return fs, fe

    def read_starts(self, at: np.ndarray) -> np.ndarray:
        """Per row at ``at`` (inside the windows), the first row its frames read, widened to its peer
        group's start (the start of ``spans`` of one row, for many rows at once). O(len(at) log n).

        >>> from overwindow.spec import OverWindow
        >>> calls = OverWindow("sum(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS s").calls
        >>> t = pa.table({"t": [1, 2, 2, 3]})
        >>> reach = FrameReach(t, ReachFinder(calls, calls[0].order_by), np.array([0, 1, 1, 2]))
        >>> reach.read_starts(np.array([3])).tolist()
        [1]
        """
        fs = self.rows[self.read_lo[self._inner(at)]]
        return np.searchsorted(self.groups, self.groups[fs], side="left")

    def holds(self, c: np.ndarray) -> bool:
        """Whether the windows are wide enough for positions c (sorted): they, the rows whose frames
        reach them, and the frames of both lie inside c's window, away from any edge the rows go on
        past (frames there may be clipped)."""
        return not any(self.gaps(c))

    def gaps(self, c: np.ndarray) -> tuple[bool, bool]:
        """(too narrow before, too narrow after) for positions c (sorted); see ``holds``; a position
        outside every window is too narrow on both sides. Starts and ends never decrease within a
        partition, so a reach that went past a window shows as a range touching its edge."""
        if len(c) == 0:
            return False, False
        g = self._inner(c)
        m = len(self.rows)
        if m == 0 or (g < 0).any() or (g >= m).any() or (self.rows[np.minimum(g, m - 1)] != c).any():
            return True, True
        w = np.searchsorted(self.ends, g, side="right")  # each position's window
        # the rows involved are c and the rows its change affects, [a, b) (a <= c < b): what they
        # read starts no earlier than what any row from a on reads, and ends no later than what any
        # row up to b - 1 reads (the envelopes; rows of later windows read from their own start on,
        # past this window's, and rows of earlier windows up to their own end)
        a = np.searchsorted(self._end_mono, g, side="right")
        b = np.searchsorted(self._start_mono, g, side="right")
        before = self.open_lo[w] & (self._read_lo_mono[a] <= self.starts[w])
        after = self.open_hi[w] & (self._read_hi_mono[b - 1] >= self.ends[w])
        return bool(before.any()), bool(after.any())
