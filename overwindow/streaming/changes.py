"""CDC input for emit on update: each row's operation decoded from an op column (``opColumn``), and a
batch's changes as the machine applies them (the last change of an identity in a batch wins).

>>> decode_ops(pa.array(["c", "+U", "-U", "d", None, "upsert"])).tolist()
[0, 2, 1, 1, 4, 4]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.streaming.arrays import member
from overwindow.streaming.aside import Aside
from overwindow.streaming.identity import IDENTITY

# why a delete is set aside when its partition does not hold its row: the row was never inserted
# there (a change stream whose before image has another partition key than the row had), or was
# deleted already (a change delivered twice)
NOT_HELD = "a delete of a row its partition does not hold (deleted already, or never inserted with this key)"


class Op:
    """What an input row does: the int8 codes ``decode_ops`` gives (plain ints: numpy compares them
    several times faster than enum members)."""

    INSERT = 0
    DELETE = 1
    UPDATE = 2  # a delete of the held row plus an insert of the same identity
    BAD = 4  # no known operation: counted and kept aside


# every spelling understood (lower case): ours, Debezium's c/r/u/d and Flink's +I/-U/+U/-D
OPS = {
    "insert": Op.INSERT,
    "i": Op.INSERT,
    "+i": Op.INSERT,
    "c": Op.INSERT,
    "create": Op.INSERT,
    "r": Op.INSERT,
    "delete": Op.DELETE,
    "d": Op.DELETE,
    "-d": Op.DELETE,
    "update": Op.UPDATE,
    "u": Op.UPDATE,
    "+u": Op.UPDATE,
    "-u": Op.DELETE,  # Flink's old image: where it lands (the old key's group) the row goes away
}


def decode_ops(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The ``Op`` (int8) of each value of an op column: a spelling of ``OPS`` in any case; NULL and
    anything else is BAD. O(n) in Python (op columns hold few distinct strings)."""
    return np.array(
        [OPS.get(str(o).lower(), Op.BAD) if o is not None else Op.BAD for o in column.to_pylist()],
        dtype=np.int8,
    )


def ops_of(rows: pa.Table, op: str | None) -> tuple[np.ndarray, dict[int, str]]:
    """(the ``Op`` of each row of ``rows``: INSERT for every row without an op column, the reason
    each BAD one is set aside, by position). O(n).

    >>> ops_of(pa.table({"op": ["c", "x"]}), "op")
    (array([0, 4], dtype=int8), {1: "no known operation 'x' in op"})
    """
    if op is None:
        return np.full(rows.num_rows, Op.INSERT, dtype=np.int8), {}
    column = rows.column(op)
    ops = decode_ops(column)
    bad = np.flatnonzero(ops == Op.BAD)
    return ops, {int(i): f"no known operation {column[int(i)].as_py()!r} in {op}" for i in bad}


def in_source_order(rows: pa.Table, order: tuple[str, ...]) -> pa.Table:
    """``rows`` sorted by the ``order`` columns (``OverWindow.sourceOrder``: each change's place in
    its source; ascending, NULL last, ties in the order they came: a stable sort), without them, so
    that the last change of an identity is the last in its source. O(n log n); ``rows`` as they are
    without ``order``.

    >>> rows = pa.table({"id": [7, 7, 7], "op": ["d", "u", "c"], "at": [3, None, 1]})
    >>> in_source_order(rows, ("at",)).to_pydict()
    {'id': [7, 7, 7], 'op': ['c', 'd', 'u']}
    """
    if not order:
        return rows
    at = pc.sort_indices(rows, sort_keys=[(c, "ascending") for c in order])  # stable; NULLs at the end
    return rows.drop_columns(list(order)).take(at)


def last_changes(ids: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Of the rows where ``keep`` holds, those carrying the last change of their identity in the
    batch (an identity changed twice in one batch ends as its last change says). O(n log n).

    >>> last_changes(np.array([5, 6, 5, 7]), np.array([True, True, True, False])).tolist()
    [False, True, True, False]
    """
    last = np.zeros(len(ids), dtype=bool)
    idx = np.flatnonzero(keep)
    kept = np.sort(ids[idx])
    if (kept[1:] == kept[:-1]).any():  # some identity changes twice (a plain sort finds out fastest)
        _, first_from_end = np.unique(ids[idx][::-1], return_index=True)
        last[idx[::-1][first_from_end]] = True
    else:
        last[idx] = True
    return last


@dataclass
class Changes:
    """One batch of input as the machine applies it."""

    inserts: pa.Table  # rows to insert, or to replace the held row of their identity (with identities)
    deletes: np.ndarray  # identities of held rows to delete
    late: int = 0  # rows dropped as late: below the eviction horizon
    bad: int = 0  # rows set aside: no known operation, a NULL event time under a watermark, or values
    # a row expression fails on
    updates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # identities of single-image updates (a delete of the held row plus an insert): one the
    # partition does not hold is an "update of an unknown row", counted
    aside: Aside | None = None  # the bad rows, with their reasons
    late_keys: tuple = ()  # on buckets of keys: the partition keys of the late rows (``Step.late_keys``)
    lone_deletes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # identities of deletes that are their identity's only change in the batch, and their input rows
    lone_rows: pa.Table | None = None
    # the identity of every change neither bad nor late, the ones a later change of theirs replaces
    # too (rows of the input, for counting them)
    taken: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def made_late(self, ids: np.ndarray, keys: tuple = ()) -> Changes:
        """These changes without those of the identities ``ids``, which are late: counted (an update
        once), their partition ``keys`` added to ``late_keys``. O(changes + ids).

        >>> inserts = pa.table({"x": [1, 2], IDENTITY: [7, 8]})
        >>> c = Changes(inserts, np.array([7, 9]), taken=np.array([7, 7, 8, 9]))
        >>> late = c.made_late(np.array([7, 9]))
        >>> late.inserts.column(IDENTITY).to_pylist(), late.deletes.tolist(), late.late
        ([8], [], 3)
        """
        gone_ins = member(self.inserts.column(IDENTITY).to_numpy(), ids)
        lone = member(self.lone_deletes, ids)
        return replace(
            self,
            inserts=self.inserts.filter(pa.array(~gone_ins)),
            deletes=self.deletes[~member(self.deletes, ids)],
            late=self.late + int(member(self.taken, ids).sum()),  # each input row, the last or not
            updates=self.updates[~member(self.updates, ids)],
            late_keys=tuple(dict.fromkeys(self.late_keys + keys)),
            lone_deletes=self.lone_deletes[~lone],
            lone_rows=self.lone_rows.filter(pa.array(~lone)) if self.lone_rows is not None else None,
        )

    def deletes_not_held(self, held: np.ndarray) -> Aside | None:
        """The lone deletes of rows whose identities are not among ``held`` (the partition's), set
        aside: nothing was deleted, so the change could not be applied as it says. O(n log n)."""
        if self.lone_rows is None:
            return None
        missing = ~member(self.lone_deletes, held)
        if not missing.any():
            return None
        return Aside(self.lone_rows.filter(pa.array(missing)), [NOT_HELD] * int(missing.sum()))
