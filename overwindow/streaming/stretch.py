"""A stretch of one partition: consecutive rows of it, sorted by the calls' ORDER BY, which both
machines evaluate with the batch kernels. Rows before the stretch may be gone (evicted or pruned) or
held elsewhere; functions that count rows from the partition's first row (the catalog's ``Counts``:
row_number, rank, dense_rank) then add what came before.

>>> import pyarrow as pa
>>> from overwindow.spec import OverWindow
>>> spec = OverWindow("rank() OVER (ORDER BY t) AS r", "dense_rank() OVER (ORDER BY t) AS d")
>>> rows = pa.table({"t": [5, 5, 7]})
>>> out = evaluate_stretch(rows, spec.expressions, peer_groups(rows.column("t").to_numpy()), 10, 4)
>>> out["r"].to_pylist(), out["d"].to_pylist()
([11, 11, 13], [5, 5, 6])
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.evaluator import evaluate_calls
from overwindow.logical.call import WindowExpression
from overwindow.logical.functions import Counts
from overwindow.physical.sorting import Layout


def peer_groups(keys: np.ndarray, parts: np.ndarray | None = None) -> np.ndarray:
    """Peer-group number (0, 1, ...) of each row of a sorted key column; with ``parts`` (each row's
    partition, non-decreasing) a group never spans two partitions. O(n).

    >>> peer_groups(np.array([3, 3, 5, 7, 7])).tolist()
    [0, 0, 1, 2, 2]
    >>> peer_groups(np.array([3, 3, 3]), np.array([0, 0, 1])).tolist()
    [0, 0, 1]
    """
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    change = keys[1:] != keys[:-1]
    if parts is not None:
        change |= parts[1:] != parts[:-1]
    return np.concatenate(([0], np.cumsum(change)))


def evaluate_stretch(
    rows: pa.Table,
    expressions: list[WindowExpression],
    groups: np.ndarray,
    rows_before: int | np.ndarray = 0,
    groups_before: int | np.ndarray = 0,
    parts: np.ndarray | None = None,
) -> dict[str, pa.Array]:
    """Every call of ``expressions`` over ``rows`` (a stretch of one partition in ORDER BY order, its
    peer groups ``groups`` numbered from 0), by call alias, as if the partition's ``rows_before``
    rows in ``groups_before`` peer groups before the stretch were there: positions count from the
    partition's first row. Frames see only the stretch: it must hold every row they read
    (``WindowCall.reads``). The kernels' cost, no sort.

    ``parts``: stretches of several partitions one after another, each row's partition number
    (non-decreasing; peer groups numbered across them); ``rows_before``/``groups_before`` are then
    per row (each row's partition's counts).
    """
    results = evaluate_calls(rows, expressions, layout=Layout.in_order(groups, parts))
    before = {Counts.ROWS: rows_before, Counts.GROUPS: groups_before}
    for e in expressions:
        for call in e.calls:
            if call.info.counts is not None:
                got = results[call.alias]  # Spark's INT stays INT: the count added in its type
                add = before[call.info.counts]
                add = pa.array(add, got.type) if isinstance(add, np.ndarray) else pa.scalar(add, got.type)
                results[call.alias] = pc.add(got, add)
    return results
