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

from dataclasses import replace

import numpy as np
import pyarrow as pa

from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, FrameUnit
from overwindow.physical.bounds import key_numbers, shift_key
from overwindow.physical.expressions import evaluate_expr
from overwindow.physical.values import TypeFamily, Values, kind_of
from overwindow.streaming.reach import FrameReach, ReachFinder
from overwindow.streaming.state import OnUpdateMeta


class Eviction:
    """Evicts behind a watermark for one spec's calls (their single ascending ORDER BY key)."""

    def __init__(self, finder: ReachFinder):
        self.finder = finder
        self.key = finder.order_by[0].expr

    def evict(
        self,
        rows: pa.Table,
        results: pa.Table,
        codes: np.ndarray,
        meta: OnUpdateMeta,
        watermark,
        reach: FrameReach | None = None,
        edges: tuple[bool, bool] = (False, False),
    ) -> tuple[pa.Table, pa.Table, OnUpdateMeta, int]:
        """(rows, their results, meta, rows dropped from the front) after evicting what no change at
        or above ``watermark`` (in the key's numbers) can need from the sorted partition ``rows``
        (ORDER BY codes ``codes``); ``reach``: a frame reach over them the caller has, reused when it
        holds the rows around the watermark. Meta counts the evicted rows and peer groups and keeps
        the horizon below which changes are late. O(window) plus one O(n) pass over the keys."""
        if rows.num_rows == 0:
            return rows, results, meta, 0
        keys = Values(evaluate_expr(self.key, rows))
        knum = key_numbers(keys)
        n = rows.num_rows
        first_live = int(np.searchsorted(knum, watermark, "left"))  # ascending, no NULLs (refused as bad)
        at = min(first_live, n - 1)
        # by key: rows whose RANGE frame reaches up to a change at the watermark
        by_key = [
            int(np.searchsorted(knum, t, "left"))
            for t in range_reach(self.finder.calls, watermark, keys.type)
        ]
        around = np.unique([at] + [min(p, n - 1) for p in by_key])
        if reach is None or not reach.holds(around):
            reach = self.finder.around(rows, codes, around, edges)
        first = min([int(reach.affected(np.array([at]))[0][0]), at] + by_key)
        keep_from = min(first_live, reach.span(first, first + 1)[0]) if first < n else first_live
        if keep_from <= 0:
            return rows, results, meta, 0
        # later changes below the watermark are late: the frames they would need are gone
        horizon = float(watermark) if knum.dtype.kind == "f" else int(watermark)  # DOUBLE, DECIMAL
        meta = replace(
            meta,
            evicted_rows=meta.evicted_rows + keep_from,
            evicted_groups=meta.evicted_groups + int(reach.groups[keep_from - 1]) + 1,
            horizon=max(horizon, meta.horizon if meta.horizon is not None else horizon),
        )
        return (
            rows.slice(keep_from).combine_chunks(),
            results.slice(keep_from).combine_chunks(),
            meta,
            keep_from,
        )


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
