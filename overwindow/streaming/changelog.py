"""The changelog contract of emit on update: a micro-batch's changelog holds at most one change per
row key, its net effect, so that applying it by row key alone (an upsert replaces the row, a delete
removes it, in any order) leaves the table the batch query gives.

Each machine already nets what one partition sees in a batch (the last change of an identity wins: a
row inserted and deleted in one batch emits nothing, a row deleted and inserted again is one upsert),
and the row assembly of several window groups emits one change per row. What is left is a row that
moved between partitions in the batch: its new partition upserts it, its old one deletes it, often
from other Spark tasks, in no set order. A row key names one row of the view, which lives in one
partition at a time, so the net effect is the upsert (where the row is now); a key with deletes only
is deleted. ``net_changes`` applies that rule where all of a batch's changes meet: the sinks' writers
call it, and so can a ``foreachBatch`` function of one's own.

>>> t = pa.table({"k": [2, 1, 3], "id": [7, 7, 8], "s": [1.5, None, None],
...               "_change": ["upsert", "delete", "delete"]})
>>> net_changes(t, ["id"]).to_pydict()
{'k': [2, 3], 'id': [7, 8], 's': [1.5, None], '_change': ['upsert', 'delete']}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.streaming.contract import CHANGE, UPSERT
from overwindow.streaming.identity import row_hash


def net_changes(changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """One micro-batch's changelog (rows with ``_change``) with at most one change per value of the
    ``key`` columns: of a key's changes its last upsert, else its last delete, in the batch's order.
    Keys compare as SQL keys do (NULL equals NULL). A table without ``_change`` (an appended view)
    is returned as it is. O(n log n).

    >>> t = pa.table({"id": [1, None, None], "_change": ["delete", "upsert", "delete"]})
    >>> net_changes(t, ["id"]).to_pydict()
    {'id': [1, None], '_change': ['delete', 'upsert']}
    """
    if CHANGE not in changes.column_names or changes.num_rows < 2:
        return changes
    keys = row_hash(changes, list(key))
    upsert = pc.fill_null(pc.equal(changes.column(CHANGE), UPSERT), False).to_numpy(zero_copy_only=False)
    order = np.lexsort((np.arange(changes.num_rows), upsert, keys))  # by key, deletes first, then arrival
    last = np.r_[keys[order][1:] != keys[order][:-1], True]
    if last.all():
        return changes
    return changes.take(pa.array(np.sort(order[last])))
