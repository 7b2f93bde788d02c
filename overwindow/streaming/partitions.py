"""The partitions of a bucket of keys in emit on update's held rows: where each starts, and what each
has evicted (the rows and peer groups row_number, rank and dense_rank count from).

A state of a bucket holds many partitions' rows one after another, sorted by (partition key,
ORDER BY, ...); each row's partition is a dense number (``RowOrder.partitions``). The evicted
counts are kept per partition key, one entry for each partition that has evicted rows, beside the
rows: a partition whose rows are all evicted still counts on from them.

>>> from overwindow.logical.parse import parse_window
>>> from overwindow.streaming.merge import RowOrder
>>> order = RowOrder(parse_window("rank() OVER (ORDER BY t) AS r").calls[0].order_by, ("t",), ("k",))
>>> rows = pa.table({"k": ["a", "a", "b"], "t": [1, 2, 1]})
>>> none = EvictedCounts.none(rows.schema, ("k",))
>>> counts = none.add(order, pa.table({"k": ["b"], "t": [0]}), [0], [3], [2])
>>> [a.tolist() for a in counts.per_row(order, rows)]
[[0, 0, 3], [0, 0, 2]]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overwindow.streaming.identity import value_bits

ROWS, GROUPS = "evicted_rows", "evicted_groups"


def starts(parts: np.ndarray) -> np.ndarray:
    """The position of each partition's first row, from the sorted partition numbers of the rows.
    O(n).

    >>> starts(np.array([0, 0, 3, 3, 3, 5])).tolist()
    [0, 2, 5]
    """
    if len(parts) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.diff(parts, prepend=parts[0] - 1))


def touched(
    parts: np.ndarray, old_parts: np.ndarray | None, from_old: np.ndarray, gone_old: np.ndarray
) -> np.ndarray:
    """Whether each partition of rows after a batch's changes (``parts``: each row's, sorted, dense)
    gained or lost a row: it holds an insert (``from_old`` -1; else the row's position before), or
    a row of its partition before (``old_parts``, each old row's; None: no old row went) went
    (``gone_old``). O(n).

    >>> before = np.array([0, 0, 1, 2, 2])  # partition 2's last row goes, partition 1 gains one
    >>> went = np.array([False, False, False, False, True])
    >>> touched(np.array([0, 0, 1, 1, 2]), before, np.array([0, 1, 2, -1, 3]), went).tolist()
    [False, True, True]
    """
    out = np.zeros(int(parts[-1]) + 1 if len(parts) else 0, dtype=bool)
    out[parts[from_old < 0]] = True
    if old_parts is not None and gone_old.any():
        lost = np.zeros(int(old_parts.max()) + 1, dtype=bool)
        lost[old_parts[gone_old]] = True
        kept = np.flatnonzero(from_old >= 0)
        out[parts[kept[lost[old_parts[from_old[kept]]]]]] = True
    return out


def key_bytes(keys: pa.Table) -> list[bytes]:
    """Each row's partition key (the columns of ``keys``) as bytes, equal exactly for the rows of one
    partition (NULLs equal; -0.0 as 0.0, one NaN): per column a tag (NULL or not), then the value's
    own 8 bytes for numbers, booleans and times (``identity.value_bits``), else its length and its
    bytes (UTF-8 for strings, ``str`` of the value for other types). The chunked layout's key of a
    partition's entries in a bucket's state, so part of its format. O(rows x columns), Python per
    value for the variable-width types.

    >>> key_bytes(pa.table({"k": [1, None], "s": ["a", "a"]}))[0].hex()
    '010100000000000000010100000061'
    """
    columns = []
    for column in keys.columns:
        a = column.combine_chunks()
        valid = a.is_valid().to_numpy(zero_copy_only=False)
        bits = value_bits(a)
        if bits is not None:
            raw = bits.astype("<u8").tobytes()
            values = [b"\x01" + raw[8 * i : 8 * i + 8] for i in range(len(a))]
        else:
            values = [
                b"\x01" + len(v).to_bytes(4, "little") + v
                for v in (
                    x if isinstance(x, bytes) else str(x).encode() if x is not None else b""
                    for x in a.to_pylist()
                )
            ]
        columns.append([v if ok else b"\x00" for v, ok in zip(values, valid)])
    return [b"".join(parts) for parts in zip(*columns)]


class EvictedCounts:
    """Per partition key of a bucket: the rows and peer groups its partition has evicted (a table of
    the key columns, ``evicted_rows`` and ``evicted_groups``; partitions without an entry evicted
    none)."""

    def __init__(self, table: pa.Table, keys: tuple[str, ...]):
        self.table, self.keys = table, keys

    @classmethod
    def none(cls, schema: pa.Schema, keys: tuple[str, ...]) -> EvictedCounts:
        fields = [schema.field(k) for k in keys] + [pa.field(ROWS, pa.int64()), pa.field(GROUPS, pa.int64())]
        return cls(pa.schema(fields).empty_table(), keys)

    def __len__(self) -> int:
        return self.table.num_rows

    def per_row(self, order, rows: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """(rows, peer groups) evicted by the partition of each of ``rows``. O(rows + entries)."""
        if not len(self):
            zeros = np.zeros(rows.num_rows, dtype=np.int64)
            return zeros, zeros
        have, want = order.partitions(self.table.select(self.keys), rows.select(self.keys))
        size = int(max(have.max(initial=-1), want.max(initial=-1))) + 1
        out = []
        for name in (ROWS, GROUPS):
            by_part = np.zeros(size, dtype=np.int64)
            by_part[have] = self.table.column(name).to_numpy()
            out.append(by_part[want])
        return out[0], out[1]

    def add(self, order, rows: pa.Table, at, n_rows, n_groups) -> EvictedCounts:
        """These counts plus ``n_rows`` rows and ``n_groups`` peer groups evicted by the partition of
        each row of ``rows`` at ``at``. O(entries + len(at)) plus a sort of their keys."""
        more = rows.take(pa.array(np.asarray(at, dtype=np.int64))).select(self.keys)
        more = more.append_column(ROWS, pa.array(np.asarray(n_rows, dtype=np.int64)))
        more = more.append_column(GROUPS, pa.array(np.asarray(n_groups, dtype=np.int64)))
        both = pa.concat_tables([self.table, more.cast(self.table.schema)])
        (part,) = order.partitions(both.select(self.keys))
        size = int(part.max(initial=-1)) + 1
        first = np.full(size, both.num_rows, dtype=np.int64)
        np.minimum.at(first, part, np.arange(both.num_rows))
        table = both.select(self.keys).take(pa.array(first))
        for name in (ROWS, GROUPS):
            sums = np.zeros(size, dtype=np.int64)
            np.add.at(sums, part, both.column(name).to_numpy())
            table = table.append_column(name, pa.array(sums))
        return EvictedCounts(table, self.keys)
