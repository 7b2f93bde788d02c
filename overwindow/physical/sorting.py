"""Sort rows once by (partition keys, order keys) and find partitions and peer groups.

One Layout serves every call with the same PARTITION BY and ORDER BY. Cost: one stable integer
sort of n rows (keys are first turned into dense codes), then O(n) boundary scans.

>>> lay = Layout.build([Values(pa.array(["a", "b", "a"]))], [(Values(pa.array([2, 1, 1])), False, True)])
>>> lay.perm.tolist(), lay.part_start.tolist(), lay.group_id.tolist()
([2, 0, 1], [0, 0, 2], [0, 1, 2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from overwindow.physical.values import Values

_LIMIT = np.iinfo(np.int64).max // 4


_SPAN = 1 << 40


def sort_codes(v: Values, descending: bool, nulls_first: bool, dense: bool = False) -> tuple[np.ndarray, int]:
    """Non-negative int codes whose ascending order is the SQL order of the key, and their count.

    Integer-like keys over a span below 2**40 use ``value - min`` (no hashing, no sort); otherwise,
    or with ``dense``, codes are dense ranks (index into ``v.uniques``).
    """
    if not dense and v.kind in ("int", "date", "timestamp", "bool") and v.numbers.dtype == np.int64:
        valid = v.valid
        nums = v.numbers
        lo = int(nums[valid].min()) if valid.any() else 0
        k = (int(nums[valid].max()) - lo + 1) if valid.any() else 0
        if k < _SPAN:
            codes = (nums - lo) + 1  # 1..k; 0 and k + 1 are for NULLs
            if descending:
                codes = (k + 1) - codes
            if v.array.null_count:
                codes[~valid] = 0 if nulls_first else k + 1
            return codes, k + 2
    codes = v.codes
    k = len(v.uniques)
    if descending:
        codes = np.where(codes >= 0, k - 1 - codes, -1)
    null_code = -1 if nulls_first else k
    return np.where(codes >= 0, codes, null_code) + 1, k + 2


def _fold(keys: list[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """One int64 key with the same lexicographic order as ``keys`` (major first)."""
    if not keys:
        return np.zeros(n, dtype=np.int64)
    out, card = keys[0][0].astype(np.int64), keys[0][1]
    for codes, k in keys[1:]:
        if card * k < _LIMIT:
            out, card = out * k + codes, card * k
        else:  # too many combinations for one int64: rank the pairs instead
            order = np.lexsort((codes, out))
            pair_change = np.empty(n, dtype=bool)
            pair_change[:1] = True
            pair_change[1:] = (out[order][1:] != out[order][:-1]) | (codes[order][1:] != codes[order][:-1])
            dense = np.empty(n, dtype=np.int64)
            dense[order] = np.cumsum(pair_change) - 1
            out, card = dense, int(dense.max()) + 1 if n else 1
    return out


def _runs(sorted_key: np.ndarray) -> np.ndarray:
    """Start positions of runs of equal values, plus n at the end."""
    n = len(sorted_key)
    change = np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1
    return np.concatenate(([0], change, [n])).astype(np.int64) if n else np.zeros(1, dtype=np.int64)


@dataclass
class Layout:
    """Rows sorted by partition then order; per sorted row its partition and peer group bounds.

    ``perm[i]`` is the input row at sorted position i. ``part_start/part_end`` and
    ``group_start/group_end`` (indexed by ``group_id``) are half-open sorted positions.
    """

    perm: np.ndarray
    part_id: np.ndarray
    part_start: np.ndarray
    part_end: np.ndarray
    group_id: np.ndarray
    group_start: np.ndarray
    group_end: np.ndarray
    part_bounds: np.ndarray  # start of each partition, plus n
    identity: bool = False  # the rows were already in order: perm is 0..n-1

    @property
    def n(self) -> int:
        return len(self.perm)

    @staticmethod
    def build(partition: list[Values], order: list[tuple[Values, bool, bool]], n: int | None = None) -> "Layout":
        if n is None:
            n = len(partition[0]) if partition else len(order[0][0]) if order else 0
        part_keys = [sort_codes(v, False, True) for v in partition]
        order_keys = [sort_codes(v, d, nf) for v, d, nf in order]
        pkey = _fold(part_keys, n)
        full = _fold(part_keys + order_keys, n) if order_keys else pkey
        in_order = n < 2 or bool((full[1:] >= full[:-1]).all())  # streaming buffers arrive sorted
        if in_order:
            perm = np.arange(n)
        elif int(full.max()) + 1 < _LIMIT // n:
            # unique keys (row number folded in) sort the same with the faster unstable sort
            perm = np.argsort(full * n + np.arange(n), kind="quicksort")
        else:
            perm = np.argsort(full, kind="stable")
        sorted_full = full if in_order else full[perm]
        sorted_part = pkey if in_order else pkey[perm]
        part_bounds = _runs(sorted_part)
        part_id = np.repeat(np.arange(len(part_bounds) - 1), np.diff(part_bounds))
        group_bounds = _runs(sorted_full)
        if order_keys:
            # a peer group never spans two partitions: the folded key includes the partition
            group_id = np.repeat(np.arange(len(group_bounds) - 1), np.diff(group_bounds))
        else:
            group_bounds, group_id = part_bounds, part_id
        return Layout(
            perm=perm,
            part_id=part_id,
            part_start=part_bounds[:-1][part_id],
            part_end=part_bounds[1:][part_id],
            group_id=group_id,
            group_start=group_bounds[:-1],
            group_end=group_bounds[1:],
            part_bounds=part_bounds,
            identity=in_order,
        )

    def sorted(self, array: pa.Array) -> Values:
        """The column in this layout's row order."""
        if self.identity:
            return Values(array)
        return Values(array.take(pa.array(self.perm)))
