"""Array helpers of the emit-on-update machine: sets of identities, sorted positions and runs, in
vectorised numpy (no Python per row).

>>> in_ranges(np.array([0, 4]), np.array([2, 6])).tolist()
[0, 1, 4, 5]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def member(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Whether each of ``ids`` (identities, int64) is among ``wanted``: one comparison pass per
    wanted identity when they are few, else one hash lookup per id (Arrow's ``is_in``: 4x a binary
    search's scattered reads over a bucket's 15,000 rows). O(n m) for m <= 16, else O(n + m).

    >>> member(np.array([4, 1, 9]), np.array([9, 4])).tolist()
    [True, False, True]
    """
    if len(wanted) == 0 or len(ids) == 0:
        return np.zeros(len(ids), dtype=bool)
    if len(wanted) <= 16:  # a few vectorised comparisons beat building a hash table
        out = ids == wanted[0]
        for w in wanted[1:]:
            out |= ids == w
        return out
    found = pc.is_in(ids, value_set=pa.array(wanted, type=pa.int64()))
    return found.to_numpy(zero_copy_only=False)


def find(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Index in ``ids`` (distinct) of each wanted identity, -1 where absent. O((n + m) log n).

    >>> find(np.array([30, 10, 20]), np.array([20, 5, 30])).tolist()
    [2, -1, 0]
    """
    if len(ids) == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(ids)
    at = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    return np.where(ids[order][at] == wanted, order[at], -1)


def scatter(table: pa.Table, at: np.ndarray, rows: pa.Table) -> pa.Table:
    """``table`` with its rows at positions ``at`` (sorted, distinct) replaced by ``rows``. O(n).

    >>> scatter(pa.table({"a": [1, 2, 3]}), np.array([0, 2]), pa.table({"a": [7, 9]})).column("a").to_pylist()
    [7, 2, 9]
    """
    idx = np.arange(table.num_rows)
    idx[at] = table.num_rows + np.arange(len(at))
    return pa.concat_tables([table, rows]).take(pa.array(idx)).combine_chunks()


def runs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct positions (at least one) as maximal [lo, hi) runs of consecutive positions,
    as lo and hi arrays. O(positions).

    >>> [a.tolist() for a in runs(np.array([2, 3, 4, 9]))]
    [[2, 9], [5, 10]]
    """
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    return rows[np.append(0, cuts)], rows[np.append(cuts, len(rows)) - 1] + 1


def run_numbers(values: np.ndarray) -> np.ndarray:
    """Each value's run: 0 for the first run of equal neighbours, one more at each change (dense
    numbers of sorted values). O(n).

    >>> run_numbers(np.array([5, 5, 7, 2, 2])).tolist()
    [0, 0, 1, 2, 2]
    """
    change = np.zeros(len(values), dtype=np.int64)
    change[1:] = values[1:] != values[:-1]
    return np.cumsum(change)


def in_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The sorted distinct positions in the union of the ranges [lo, hi). O(positions + ranges log ranges).

    >>> in_ranges(np.array([5, 0, 1]), np.array([7, 2, 3])).tolist()
    [0, 1, 2, 5, 6]
    """
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    lo = np.maximum(lo, np.concatenate(([lo[0]], hi[:-1])))  # clip each range to start after those before
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    sizes = hi - lo
    # lo repeated per position plus the offset within its range
    offsets = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(lo, sizes) + offsets


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct positions in either of two sorted distinct arrays: the other one as it is
    when one is empty (most steps move no row), else ``np.union1d``. O(1) or O((n + m) log(n + m)).

    >>> union(np.array([1, 4]), np.array([2, 4])).tolist()
    [1, 2, 4]
    """
    if not len(b):
        return a
    if not len(a):
        return b
    return np.union1d(a, b)


def interleave(n_kept: int, before: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge kept rows 0..n_kept-1 with sorted inserts, insert j after ``before[j]`` kept rows (non-
    decreasing): (the merged sequence as kept index, or n_kept + insert index; the insert positions).
    O(n_kept + inserts).

    >>> src, at = interleave(3, np.array([0, 2, 2]))
    >>> src.tolist(), at.tolist()
    ([3, 0, 1, 4, 5, 2], [0, 3, 4])
    """
    m = len(before)
    at = before + np.arange(m)
    is_ins = np.zeros(n_kept + m, dtype=bool)
    is_ins[at] = True
    src = np.empty(n_kept + m, dtype=np.int64)
    src[~is_ins] = np.arange(n_kept)
    src[at] = n_kept + np.arange(m)
    return src, at
