"""Eviction for emit on update: with a watermark on the single ascending ORDER BY column, the held rows
no later change can need are dropped from the front of the partition, and changes below the
watermark become late from then on (the frames they would need are gone), so eviction never
changes an answer.

Every change that is not late lands at or after ``first_live``, the first row at or above the
watermark. The rows such a change can affect start at the first row whose reach holds
``first_live`` or, for RANGE frames, the watermark's key; what must stay are the rows those rows
read (from the first, as frame starts never decrease), widened to whole peer groups.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from overwindow.evaluate import values_of
from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.physical.bounds import key_numbers, shift_key
from overwindow.physical.values import TypeFamily, Values, kind_of
from overwindow.streaming.arrays import in_ranges
from overwindow.streaming.partitions import starts as partition_starts
from overwindow.streaming.reach import FrameReach, ReachFinder
from overwindow.streaming.state import OnUpdateMeta


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
    """Evicts behind a watermark for one spec's calls (their single ascending ORDER BY key)."""

    def __init__(self, finder: ReachFinder):
        self.finder = finder
        self.key = finder.order_by[0].expr
        self.rows_kept = rows_kept(finder.calls)

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
        the caller has, reused when it holds the rows around the watermark. ``since``: the
        watermark every partition was last evicted at, with ``touched`` (bool per partition) those
        whose rows changed since: a partition neither touched nor with a key between the two
        watermarks (or between the keys its RANGE frames reach back to from them) would evict what
        it did then, nothing more, and is left out. O(rows in the windows around the partitions
        looked at) plus a few O(n) passes over the keys.

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
        look = np.ones(len(starts), dtype=bool)
        if since is not None:  # what moved since the last eviction
            look = touched | (first_live != first_from(since))
            for p, t in zip(by_key, range_reach(self.finder.calls, since, keys.type)):
                look |= p != first_from(t)
        drop = np.zeros(len(starts), dtype=np.int64)
        groups = np.zeros(len(starts), dtype=np.int64)
        # a partition with no more rows before its first live one than a ROWS frame keeps drops
        # none: most partitions of a sparse bucket (a row or two a key), left out unread
        some = np.flatnonzero(look & (first_live - starts > self.rows_kept))
        if len(some):
            live, ends_, keyed = first_live[some], ends[some], [p[some] for p in by_key]
            at = np.minimum(live, ends_ - 1)
            around = np.unique(np.concatenate([at] + [np.minimum(p, ends_ - 1) for p in keyed]))
            if reach is None or not reach.holds(around):
                reach = self.finder.around(rows, codes, around, edges, parts)
            first = np.minimum.reduce([reach.affected(at)[0], at, *keyed])
            keep_from = np.minimum(live, reach.read_starts(first))
            drop[some] = keep_from - starts[some]
            last = reach.groups[np.maximum(keep_from - 1, 0)]
            groups[some] = np.where(drop[some] > 0, last - reach.groups[starts[some]] + 1, 0)
        # later changes below the watermark are late: the frames they would need are gone
        horizon = float(watermark) if knum.dtype.kind == "f" else int(watermark)  # DOUBLE, DECIMAL
        return Evicted(starts, drop, groups, horizon)


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
    floats = kind_of(key_type) in (TypeFamily.FLOAT, TypeFamily.DECIMAL)  # key_numbers' dtype
    w = np.array([watermark], dtype=np.float64 if floats else np.int64)
    for call in calls:
        if call.reads.unit is not FrameUnit.RANGE:
            continue
        end = call.reads.end
        if end.kind is BoundKind.UNBOUNDED_FOLLOWING:
            out.append(-np.inf)
        elif end.has_offset:
            out.append(shift_key(w, key_type, end.offset, -1 if end.kind is BoundKind.FOLLOWING else 1)[0])
        else:
            out.append(w[0])
    return out
