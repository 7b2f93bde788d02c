"""The order of an emit-on-update partition's held rows, and the sorted merge of a batch's changes
into them.

Held rows are sorted by (the calls' ORDER BY, the row key or else every column, the row identity),
so ties in ORDER BY fall the same way on every replay. A batch's inserts are merged in by binary
search on ORDER BY codes (one int64 per row), never by sorting the held rows again; an update is a
delete of the held row plus an insert of the same identity (it may move in ORDER BY).

>>> from overwindow.logical.parse import parse_window
>>> order = RowOrder(parse_window("lag(x) OVER (ORDER BY t) AS p").calls[0].order_by, ("id",))
>>> held = pa.table({"t": [1, 3], "id": [1, 2], "__ow_id": [11, 12]})
>>> ins = pa.table({"t": [2, 0], "id": [3, 4], "__ow_id": [13, 14]})
>>> held_codes, ins_codes = order.codes(held, ins)
>>> ins, _, before = order.merge(held, held_codes, np.arange(2), ins, ins_codes)
>>> ins.column("id").to_pylist(), before.tolist()
([4, 3], [0, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from overwindow.evaluator import values_of
from overwindow.logical.call import SortKey
from overwindow.physical.sorting import sort_codes
from overwindow.physical.values import Values
from overwindow.streaming.arrays import in_ranges, interleave, member, run_numbers
from overwindow.streaming.identity import IDENTITY


class RowOrder:
    """The held rows' order: the partition ``keys`` (columns telling apart the partitions one state
    holds, a bucket of keys; NULLs equal, ascending), ``order_by``, then the ``ties`` columns, then
    the identity."""

    def __init__(self, order_by: tuple[SortKey, ...], ties: tuple[str, ...], keys: tuple[str, ...] = ()):
        self.order_by, self.ties, self.keys = order_by, ties, keys

    def codes(self, *tables: pa.Table) -> list[np.ndarray]:
        """Per table, one int64 per row that orders as (partition, ORDER BY) and is equal exactly
        between peers of one partition; computed over the tables together, so codes of different
        tables compare. O(rows) for integer and time keys, a sort of the distinct values otherwise."""
        keys = [self._key_codes(tables)] if self.keys else []
        for k in self.order_by:
            keys.append(_codes([values_of(k.expr, t) for t in tables], k.descending, k.nulls_first))
        return _split(fold(keys, sum(t.num_rows for t in tables)), tables)

    def partitions(self, *tables: pa.Table) -> list[np.ndarray] | None:
        """Per table, each row's partition as a dense number (in key order, NULLs equal), computed
        over the tables together; None without partition keys (each table one partition). O(rows)
        for integer keys and rows already in key order (held rows), a sort of the keys otherwise.

        >>> order = RowOrder((), (), ("k",))
        >>> [p.tolist() for p in order.partitions(pa.table({"k": [3, 3, 8]}), pa.table({"k": [1, 8]}))]
        [[1, 1, 2], [0, 2]]
        >>> order.partitions(pa.table({"k": [None, 2, 2, 5]}))[0].tolist()
        [0, 1, 1, 2]
        >>> order.partitions(pa.table({"k": pa.array([], pa.int64())}))[0].tolist()
        []
        """
        if not self.keys:
            return None
        codes = self._key_codes(tables)[0]
        if (codes[1:] >= codes[:-1]).all():  # held rows, sorted by partition: no sort needed
            return _split(run_numbers(codes), tables)
        return _split(np.unique(codes, return_inverse=True)[1].astype(np.int64), tables)

    def _key_codes(self, tables) -> tuple[np.ndarray, int]:
        parts = [_codes([t.column(c) for t in tables], False, True) for c in self.keys]
        folded = fold(parts, sum(t.num_rows for t in tables))
        return folded, int(folded.max(initial=-1)) + 1

    def full_order(self, table: pa.Table, codes: np.ndarray) -> np.ndarray:
        """The permutation sorting (a few) rows with ORDER BY ``codes`` into the held rows' order:
        by ``codes``, rows tied on them by the tie columns, then by identity. O(rows log rows).

        >>> order = RowOrder((), ("x",))  # the ORDER BY codes are given
        >>> t = pa.table({"x": [5, 1, 2], IDENTITY: [0, 1, 2]})
        >>> order.full_order(t, np.array([1, 0, 1])).tolist()
        [1, 2, 0]
        """
        order = np.argsort(codes, kind="stable")
        ordered = codes[order]
        tied = np.zeros(len(codes), dtype=bool)
        tied[1:] = ordered[1:] == ordered[:-1]
        tied[:-1] |= tied[1:]
        if not tied.any():
            return order
        # only rows sharing their ORDER BY code with another need the tie columns' codes: the
        # positions of the tied runs in ``order`` take those rows sorted in full
        rows = order[tied]
        sub = table.take(pa.array(rows))
        ties = [sort_codes(Values(sub.column(c)), False, True)[0] for c in self.ties]
        order[tied] = rows[np.lexsort([sub.column(IDENTITY).to_numpy()] + ties[::-1] + [codes[rows]])]
        return order

    def merge(
        self, old: pa.Table, old_codes: np.ndarray, kept: np.ndarray, ins: pa.Table, ins_codes: np.ndarray
    ) -> tuple[pa.Table, np.ndarray, np.ndarray]:
        """(inserts sorted, their codes, for each the number of kept old rows sorting before it):
        ``old`` are held rows with codes ``old_codes``, of which those at positions ``kept`` (in order)
        stay. Binary searches on the ORDER BY codes; only rows tied with an insert on ORDER BY are
        compared further. O(m log n + ties) for m inserts."""
        order = self.full_order(ins, ins_codes)
        if (np.diff(order) != 1).any():  # batches often arrive in order
            ins, ins_codes = ins.take(pa.array(order)), ins_codes[order]
        kept_codes = old_codes[kept]
        lo = np.searchsorted(kept_codes, ins_codes, "left")
        hi = np.searchsorted(kept_codes, ins_codes, "right")
        before = lo.copy()
        tied = np.flatnonzero(hi > lo)
        if len(tied):
            near = in_ranges(lo[tied], hi[tied])  # kept rows sharing an ORDER BY value with an insert
            sub = pa.concat_tables([old.take(pa.array(kept[near])), ins.take(pa.array(tied))])
            perm = self.full_order(sub, np.concatenate([kept_codes[near], ins_codes[tied]]))
            is_kept = perm < len(near)
            kept_ahead = np.cumsum(is_kept) - is_kept  # tied kept rows before each sorted row
            at = np.flatnonzero(~is_kept)
            which = tied[perm[at] - len(near)]
            # minus the tied kept rows of smaller ORDER BY values, already counted in lo
            before[which] = (
                lo[which] + kept_ahead[at] - np.searchsorted(kept_codes[near], ins_codes[which], "left")
            )
        return ins, ins_codes, before


@dataclass
class Merged:
    """Held rows after a batch's changes, before any result is recomputed. Positions ``*_old`` are in
    the rows before, ``*_new`` in the rows after."""

    rows: pa.Table  # the rows now held, in order (input columns and identity)
    results: pa.Table  # their results as last emitted (NULL for inserts)
    codes: np.ndarray  # their ORDER BY codes
    from_old: np.ndarray  # each row's position before, -1 for an insert
    gone_old: np.ndarray  # (bool per old row) deleted or replaced by an insert of its identity
    replaced_old: np.ndarray  # positions of rows an insert of the same identity replaced
    removed_old: np.ndarray  # positions of rows deleted outright: they emit a delete
    inserted_new: np.ndarray  # positions of the inserts
    before: np.ndarray  # per insert, how many kept rows sort before it

    def kept_to_new(self, kept_rank: np.ndarray) -> np.ndarray:
        """New positions of the kept rows of the given ranks among the kept rows. O(k log m)."""
        return kept_rank + np.searchsorted(self.before, kept_rank, "right")


def merge_changes(
    order: RowOrder,
    old: pa.Table,
    old_res: pa.Table,
    old_codes: np.ndarray,
    ins: pa.Table,
    ins_codes: np.ndarray,
    deletes: np.ndarray,
    elsewhere: np.ndarray | None = None,
) -> Merged:
    """Apply inserts ``ins`` (rows with identities and ORDER BY codes) and ``deletes`` (identities) to
    the held rows ``old`` (sorted, with results ``old_res`` and codes ``old_codes``). An insert whose
    identity is held replaces that row. ``elsewhere``: identities inserted elsewhere in the same
    batch (another stretch of the partition): their rows here moved rather than went, so they are
    not removed. One membership pass over the held identities, O(n + m log n)."""
    old_ids = old.column(IDENTITY).to_numpy()
    ins_ids = ins.column(IDENTITY).to_numpy()
    gone = member(old_ids, np.concatenate([deletes, ins_ids]))  # deleted or replaced
    pos_old = np.flatnonzero(gone)
    kept = np.flatnonzero(~gone)
    rows, results, codes = old, old_res, old_codes
    from_old = np.arange(old.num_rows)
    pos_new = before = np.zeros(0, dtype=np.int64)
    if len(pos_old) or ins.num_rows:
        ins, ins_codes, before = order.merge(old, old_codes, kept, ins, ins_codes)
        src, pos_new = interleave(len(kept), before)
        from_old = np.append(kept, -1)[np.minimum(src, len(kept))]
        take = np.where(from_old >= 0, from_old, old.num_rows + src - len(kept))
        rows = pa.concat_tables([old, ins]).take(pa.array(take)).combine_chunks()
        results = old_res.take(pa.array(from_old, mask=from_old < 0))
        codes = np.concatenate([old_codes, ins_codes])[take]
    replaced = pos_old[member(old_ids[pos_old], ins_ids)]
    removed = np.setdiff1d(pos_old, replaced, assume_unique=True)
    if elsewhere is not None and len(removed):
        removed = removed[~member(old_ids[removed], elsewhere)]
    return Merged(rows, results, codes, from_old, gone, replaced, removed, pos_new, before)


def _codes(arrays: list, descending: bool, nulls_first: bool) -> tuple[np.ndarray, int]:
    """Sort codes of one key over arrays of several tables together."""
    chunks = [c for a in arrays for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])]
    return sort_codes(Values(pa.chunked_array(chunks, type=arrays[0].type)), descending, nulls_first)


def _split(codes: np.ndarray, tables) -> list[np.ndarray]:
    """``codes`` of the tables' rows one after another, back per table."""
    ends = np.cumsum([t.num_rows for t in tables]).tolist()
    return [codes[e - t.num_rows : e] for e, t in zip(ends, tables)]


def fold(keys: list[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """One int64 per row ordering as the (codes, cardinality) keys do, major first: a mixed-radix
    number while it fits, else dense ranks of the pairs (one lexsort). O(n) or O(n log n).

    >>> fold([(np.array([1, 0, 1]), 2), (np.array([0, 2, 1]), 3)], 3).tolist()
    [3, 2, 4]
    """
    if not keys:
        return np.zeros(n, dtype=np.int64)
    out, card = keys[0][0].astype(np.int64), keys[0][1]
    for codes, k in keys[1:]:
        if card * k < 2**62:
            out, card = out * k + codes, card * k
        else:
            order = np.lexsort((codes, out))
            change = np.ones(n, dtype=bool)
            change[1:] = (out[order][1:] != out[order][:-1]) | (codes[order][1:] != codes[order][:-1])
            out = np.empty(n, dtype=np.int64)
            out[order] = np.cumsum(change) - 1
            card = int(out.max()) + 1 if n else 1
    return out
