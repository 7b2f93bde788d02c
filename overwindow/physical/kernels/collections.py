"""Aggregates that return a collection or pick rows by another column: collect_list, collect_set,
collect_union, listagg, and max_by / min_by with and without k.

Spark builds these frame by frame from the frame's rows in frame order (its sliding frames recompute
from the frame's first row), so overwindow gathers each frame's participating rows in frame order
(``frame_rows``: one vectorised gather, O(total frame sizes), which is also the size of the output
for collect_list and listagg) and computes on the gathered rows:

* collect_list: the values gathered, NULLs left out unless RESPECT NULLS; an empty frame is [].
* collect_set / collect_union: the distinct values (NaN once, -0.0 as 0.0) in the order Spark's
  hash set iterates them (overwindow.physical.spark_hash): a sort of the gathered rows by frame,
  bucket, hash and first appearance, O(S log S) for S gathered rows.
* listagg: the values cast to STRING (BINARY stays BINARY) joined by the delimiter; NULL for a frame
  without values.
* max_by(x, y) / min_by(x, y): x at the largest (smallest) y, the last such row in frame order on a
  tie, as Spark's updates keep it: a sparse table over (y's rank, position), O(n log w).
* max_by(x, y, k) / min_by(x, y, k): Spark's k-slot heap replayed row by row (which rows survive a
  tie, and the order of equal y in the result, depend on its slots), O(S log k) Python steps;
  running frames carry the heap from row to row, O(n log k).

>>> f = Frames([(np.array([0, 0, 1]), np.array([1, 3, 3]))])
>>> collect_list(Values(pa.array([1, None, 3])), np.array([True, False, True]), f).to_pylist()
[[1], [1, 3], [3]]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.physical import casts, spark_hash
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels.aggregates import prefix_count, sparse_table_reduce
from overwindow.physical.values import Values


def frame_rows(frames: Frames, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, rows): each frame's participating rows (``mask``) in frame order, frame r's being
    ``rows[offsets[r]:offsets[r + 1]]``. O(n + total size)."""
    taking = np.flatnonzero(mask)
    before = prefix_count(mask)
    n = len(frames.start)
    sizes = np.zeros(n, dtype=np.int64)
    pieces, owners = [], []
    for s, e in frames.parts:
        cs, ce = before[s], before[e]
        width = np.maximum(ce - cs, 0)
        sizes += width
        total = int(width.sum())
        if not total:
            continue
        starts = np.repeat(cs - np.cumsum(width) + width, width)
        pieces.append(taking[starts + np.arange(total)])
        owners.append(np.repeat(np.arange(n), width))
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    if not pieces:
        return offsets, np.zeros(0, dtype=np.int64)
    rows, owner = np.concatenate(pieces), np.concatenate(owners)
    if len(pieces) > 1:  # a frame's parts in order: stable by frame
        rows = rows[np.argsort(owner, kind="stable")]
    return offsets, rows


def _lists(offsets: np.ndarray, values: pa.Array, mask: np.ndarray | None = None) -> pa.Array:
    if offsets[-1] >= 2**31:
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values, mask=mask)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values, mask=mask)


def collect_list(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """The frame's values in frame order (the rows ``mask`` keeps: NULLs only with RESPECT NULLS)."""
    offsets, rows = frame_rows(frames, mask)
    return _lists(offsets, values.take(rows))


def collect_set(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """The frame's distinct values in the order of Spark's hash set."""
    offsets, rows = frame_rows(frames, mask)
    return _distinct_in_hash_order(values, offsets, rows)


def collect_union(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """The distinct elements of the frame's arrays (NULL elements left out) in the order of Spark's
    hash set, fed the arrays' elements in frame order."""
    lists = values.array
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    lengths = np.where(mask, lengths, 0)
    elements = pc.list_flatten(lists.filter(pa.array(mask)))
    starts = np.concatenate(([0], np.cumsum(lengths)))
    keep = elements.is_valid().to_numpy(zero_copy_only=False)
    item_frames = Frames([(starts[s], starts[e]) for s, e in frames.parts])
    offsets, rows = frame_rows(item_frames, keep)
    return _distinct_in_hash_order(Values(elements), offsets, rows)


def _distinct_in_hash_order(values: Values, offsets: np.ndarray, rows: np.ndarray) -> pa.Array:
    n = len(offsets) - 1
    codes = values.codes
    null_code = len(values.uniques)  # RESPECT NULLS: NULL is an element of its own
    codes = np.where(codes < 0, null_code, codes)[rows]
    owner = np.repeat(np.arange(n), np.diff(offsets))
    seq = np.arange(len(rows)) - offsets[owner]  # position within its frame
    # first appearance of each (frame, value)
    order = np.lexsort((seq, codes, owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (owner[order][1:] != owner[order][:-1]) | (codes[order][1:] != codes[order][:-1])
    kept = order[first]
    k_owner, k_code, k_seq = owner[kept], codes[kept], seq[kept]
    distinct = np.bincount(k_owner, minlength=n)
    size = np.diff(offsets)
    # the most elements the set held before an add: all of them if an add came after the last new
    # one, else one fewer
    last_new = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_new, k_owner, k_seq)
    highest = np.where(last_new < size - 1, distinct, distinct - 1)
    tables = spark_hash.table_sizes(highest)
    uniques = pa.concat_arrays([values.uniques, pa.nulls(1, values.uniques.type)])
    hashes = spark_hash.element_hashes(uniques)
    if hashes is None:
        raise WindowSpecError(
            f"collect_set and collect_union of {values.type} values are not computed: Spark returns "
            "them in its hash set's order, which overwindow reproduces for numbers, strings, binary, "
            "booleans, dates, timestamps and intervals only"
        )
    h = hashes[k_code]
    key_owner = np.repeat(np.arange(n), distinct)  # the kept rows sorted by owner first
    by_owner = np.argsort(k_owner, kind="stable")
    h, k_code, k_seq = h[by_owner], k_code[by_owner], k_seq[by_owner]
    b = spark_hash.improved(h).astype(np.int64) & (tables[key_owner] - 1)
    final = np.lexsort((k_seq, spark_hash.improved(h).astype(np.int64), b, key_owner))
    return _lists(np.concatenate(([0], np.cumsum(distinct))), uniques.take(pa.array(k_code[final])))


def listagg(values: Values, mask: np.ndarray, frames: Frames, delimiter) -> pa.Array:
    """The frame's non-NULL values, cast to STRING (BINARY stays BINARY), joined by ``delimiter``
    (None: nothing between them); NULL for a frame without values."""
    array = values.array
    binary = pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)
    if not binary and not pa.types.is_string(array.type):
        array = casts.cast(array, pa.string())
    if binary and array.type != pa.binary():
        array = array.cast(pa.binary())
    offsets, rows = frame_rows(frames, mask)
    joined = pc.binary_join(_lists(offsets, array.take(pa.array(rows))), _separator(delimiter, binary))
    return pc.if_else(pa.array(np.diff(offsets) > 0), joined, pa.scalar(None, joined.type))


def _separator(delimiter, binary: bool):
    if delimiter is None:
        delimiter = ""
    if binary:
        return pa.scalar(delimiter.encode() if isinstance(delimiter, str) else delimiter, pa.binary())
    return delimiter


def extreme_by(args: tuple[Values, ...], mask: np.ndarray, frames: Frames, largest: bool) -> pa.Array:
    """max_by(x, y) / min_by(x, y): x of the frame's row with the largest (smallest) y, the last
    such row in frame order on a tie. ``mask``: the rows whose y is not NULL."""
    x, y = args[0], args[1]
    n = len(y)
    if not n:
        return pa.nulls(len(frames.start), x.type)
    position = np.arange(n, dtype=np.int64)
    rank = y.codes
    if largest:
        key, identity, op = rank * n + position, -1, np.maximum
    else:
        key, identity, op = rank * n + (n - 1 - position), np.iinfo(np.int64).max, np.minimum
    best = sparse_table_reduce(np.where(mask, key, identity), frames, op, identity)
    at = best % n if largest else n - 1 - best % n
    return x.take(np.where(best != identity, at, -1))


def extremes_by(
    args: tuple[Values, ...], mask: np.ndarray, frames: Frames, k: int, largest: bool
) -> pa.Array:
    """max_by(x, y, k) / min_by(x, y, k): Spark's heap of k slots fed the frame's rows in order (a
    row replaces the heap's root only when its y is strictly better), then the slots sorted by y,
    best first, equal y in slot order; NULL for a frame without rows."""
    x, y = args[0], args[1]
    rank = y.codes if largest else -y.codes  # the heap keeps the largest ``rank``
    if len(frames.parts) == 1:  # a frame's rows: a run of the participating rows, gathered lazily
        taking, before = np.flatnonzero(mask), prefix_count(mask)
        starts, ends = before[frames.start], before[frames.end]
    else:
        offsets, taking = frame_rows(frames, mask)
        starts, ends = offsets[:-1], offsets[1:]
    picked, sizes = [], np.zeros(len(starts), dtype=np.int64)
    heap, fed = _Heap(k, rank), 0
    for r in range(len(starts)):
        s, e = int(starts[r]), int(ends[r])
        # a frame that starts where the previous one did and ends no earlier (running frames, the
        # whole partition) goes on with its heap; any other starts anew, as Spark's sliding frames
        if len(frames.parts) > 1 or r == 0 or s != starts[r - 1] or e < ends[r - 1]:
            heap, fed = _Heap(k, rank), s
        for row in taking[fed:e].tolist():
            heap.insert(row)
        fed = e
        out = heap.sorted()
        picked.extend(out)
        sizes[r] = len(out)
    values = x.take(np.array(picked, dtype=np.int64))
    return _lists(np.concatenate(([0], np.cumsum(sizes))), values, mask=pa.array(sizes == 0))


class _Heap:
    """Spark's MaxMinByKHeap: ``slots`` hold the rows kept, ``heap`` their slot numbers as a binary
    heap whose root is the worst kept (smallest ``rank``)."""

    def __init__(self, k: int, rank: np.ndarray):
        self.k, self.rank = k, rank
        self.slots: list[int] = []
        self.heap: list[int] = []

    def _r(self, i: int) -> int:
        return int(self.rank[self.slots[self.heap[i]]])

    def insert(self, row: int) -> None:
        if len(self.slots) < self.k:
            self.slots.append(row)
            self.heap.append(len(self.slots) - 1)
            i = len(self.heap) - 1
            while i > 0 and self._r(i) < self._r((i - 1) // 2):
                p = (i - 1) // 2
                self.heap[i], self.heap[p] = self.heap[p], self.heap[i]
                i = p
        elif self.rank[row] > self._r(0):
            self.slots[self.heap[0]] = row
            i, size = 0, len(self.heap)
            while 2 * i + 1 < size:
                child = 2 * i + 1
                if child + 1 < size and self._r(child + 1) < self._r(child):
                    child += 1
                if self._r(i) <= self._r(child):
                    break
                self.heap[i], self.heap[child] = self.heap[child], self.heap[i]
                i = child

    def sorted(self) -> list[int]:
        return sorted(self.slots, key=lambda row: -int(self.rank[row]))
