"""Ranking functions as index arithmetic over partition and peer-group bounds. O(n).

>>> from overwindow.physical.values import Values
>>> lay = Layout.build([], [(Values(pa.array([1, 1, 2])), False, True)])
>>> rank(lay, None).to_pylist(), dense_rank(lay, None).to_pylist(), cume_dist(lay, None).to_pylist()
([1, 1, 3], [1, 1, 2], [0.6666666666666666, 0.6666666666666666, 1.0])
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overwindow.physical.sorting import Layout


def row_number(layout: Layout, call) -> pa.Array:
    return _int(np.arange(layout.n) - layout.part_start + 1)


def _int(numbers: np.ndarray) -> pa.Array:
    """Spark's INT result of row_number, rank, dense_rank and ntile."""
    return pa.array(numbers.astype(np.int32, copy=False))


def _rank0(layout: Layout) -> np.ndarray:
    return layout.group_start[layout.group_id] - layout.part_start


def rank(layout: Layout, call) -> pa.Array:
    return _int(_rank0(layout) + 1)


def dense_rank(layout: Layout, call) -> pa.Array:
    first_group = layout.group_id[layout.part_start]
    return _int(layout.group_id - first_group + 1)


def percent_rank(layout: Layout, call) -> pa.Array:
    size = layout.part_end - layout.part_start
    return pa.array(np.where(size > 1, _rank0(layout) / np.maximum(size - 1, 1), 0.0))


def cume_dist(layout: Layout, call) -> pa.Array:
    size = layout.part_end - layout.part_start
    return pa.array((layout.group_end[layout.group_id] - layout.part_start) / size)


def ntile(layout: Layout, call) -> pa.Array:
    """Buckets 1..k of sizes differing by at most one, larger buckets first (SQL's ntile)."""
    k = call.params[0]
    size = layout.part_end - layout.part_start
    i = np.arange(layout.n) - layout.part_start
    q, r = size // k, size % k
    big = r * (q + 1)  # rows in the r buckets of size q + 1
    small = np.where(i < big, i // (q + 1), r + (i - big) // np.maximum(q, 1))
    return _int(small + 1)


KERNELS = {f.__name__: f for f in (row_number, rank, dense_rank, percent_rank, cume_dist, ntile)}
