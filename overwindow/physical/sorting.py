"""Sort rows once by (partition keys, order keys) and find partitions and peer groups.

One Layout serves every call with the same PARTITION BY and ORDER BY. Cost: keys are turned into
integer codes and folded into as few int64 words as fit beside a row number; one numpy value sort of
``word << bits | row`` per word (usually one or two), then O(n) boundary scans.

>>> lay = Layout.build([Values(pa.array(["a", "b", "a"]))], [(Values(pa.array([2, 1, 1])), False, True)])
>>> lay.perm.tolist(), lay.part_start.tolist(), lay.group_id.tolist()
([2, 0, 1], [0, 0, 2], [0, 1, 2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from overwindow.physical.values import Values

_SPAN = 1 << 40


def value_span(v: Values) -> tuple[int, int] | None:
    """(min, count of values from min to max) of an integer-like key whose span is below 2**40 and
    which stays clear of the int64 limits, or None. Such keys sort by ``value - min``."""
    if not v.kind.is_integral or v.numbers.dtype != np.int64:
        return None
    nums = v.numbers
    present = nums if not v.array.null_count else nums[v.valid]  # no copy without NULLs
    if not len(present):
        return 0, 0
    lo, hi = int(present.min()), int(present.max())
    # the margin keeps value - min, and RANGE targets clipped to [min - 2, max + 2], inside int64
    if hi - lo + 1 >= _SPAN or lo < -(2**63) + 4 or hi > 2**63 - 5:
        return None
    return lo, hi - lo + 1


def sort_codes(v: Values, descending: bool, nulls_first: bool, dense: bool = False) -> tuple[np.ndarray, int]:
    """Non-negative int codes whose ascending order is the SQL order of the key, and their count.

    Keys with a ``value_span`` use ``value - min`` (no hashing, no sort); otherwise, or with
    ``dense``, codes are dense ranks (index into ``v.uniques``).
    """
    span = None if dense else value_span(v)
    if span is not None:
        lo, k = span
        codes = v.numbers - lo
        codes += 1  # 1..k; 0 and k + 1 are for NULLs
        if descending:
            codes = (k + 1) - codes
        if v.array.null_count:
            codes[~v.valid] = 0 if nulls_first else k + 1
        return codes, k + 2
    codes = v.codes
    k = len(v.uniques)
    if descending:
        codes = np.where(codes >= 0, k - 1 - codes, -1)
    null_code = -1 if nulls_first else k
    return np.where(codes >= 0, codes, null_code) + 1, k + 2


def _words(keys: list[tuple[np.ndarray, int]], limit: int) -> list[tuple[np.ndarray, int, int]]:
    """``keys`` (codes, cardinality; major first) folded into as few int64 words as possible, each
    word's cardinality below ``limit`` (a key alone may exceed it). Returns (codes, cardinality, number
    of keys folded in), major word first."""
    words: list[tuple[np.ndarray, int, int]] = []
    for codes, k in keys:
        if words and words[-1][1] * k < limit:
            w, card, count = words[-1]
            words[-1] = (w * k + codes, card * k, count + 1)
        else:
            words.append((codes.astype(np.int64, copy=False), k, 1))
    return words


def _stable_order(
    words: list[tuple[np.ndarray, int, int]], n: int, bits: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    """The stable sort permutation by ``words`` (major first), the major word in sorted order, and
    whether the minor word alone tells every row apart (a unique tiebreak such as an id: then every
    row is its own peer group).

    Least significant word first, each pass a stable sort of the previous order. A pass sorts the
    values ``code << bits | position`` (unique, so numpy's fast SIMD value sort is stable) and reads
    the permutation from the low bits: about ten times faster than ``np.argsort`` on 5M int64s. A
    word too wide to share 63 bits with the position falls back to a stable argsort. O(n log n) per
    word.
    """
    position = np.arange(n, dtype=np.int64)
    low = (1 << bits) - 1
    perm = top = distinct = None
    for codes, card, _ in reversed(words):
        key = codes if perm is None else codes[perm]
        if card <= (1 << (63 - bits)):
            packed = key << bits
            packed |= position
            packed.sort()
            step, top = packed & low, packed >> bits
        else:
            step = np.argsort(key, kind="stable")
            top = key[step]
        if perm is None:
            perm, distinct = step, bool((top[1:] != top[:-1]).all())
        else:
            perm = perm[step]
    return perm, top, distinct


def _in_order(words: list[tuple[np.ndarray, int, int]]) -> bool:
    """Whether the rows are already sorted by ``words`` (streaming buffers arrive sorted)."""
    major = words[0][0]
    if len(major) < 2:
        return True
    if (major[1:] < major[:-1]).any():  # the usual unsorted input is decided in one pass
        return False
    if len(words) == 1:
        return True
    ok = np.ones(len(major) - 1, dtype=bool)
    for w, _, _ in reversed(words):
        ok = (w[1:] > w[:-1]) | ((w[1:] == w[:-1]) & ok)
    return bool(ok.all())


def _major(words, sorted_word, keys, count: int) -> list[np.ndarray]:
    """The sorted words (``sorted_word(i)``) cut down to their first ``count`` keys (the partition
    keys): whole words, then the major part of the word where the partition keys end (the minor keys
    divided away)."""
    out, used = [], 0
    for i, (_, _, m) in enumerate(words):
        if used >= count:
            break
        sw = sorted_word(i)
        minor = 1
        for _, k in keys[count : used + m]:
            minor *= k
        out.append(sw if minor == 1 else sw // minor)
        used += m
    return out


def _runs(sorted_words: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Runs of equal rows (every word equal): their start positions plus n at the end, and each
    row's run number."""
    change = np.zeros(n, dtype=bool)  # row i starts a run (row 0 is counted apart)
    for w in sorted_words:
        change[1:] |= w[1:] != w[:-1]
    bounds = np.concatenate(([0], np.flatnonzero(change), [n] if n else [])).astype(np.int64)
    return bounds, np.cumsum(change)


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
    def build(
        partition: list[Values], order: list[tuple[Values, bool, bool]], n: int | None = None
    ) -> Layout:
        if n is None:
            n = len(partition[0]) if partition else len(order[0][0]) if order else 0
        keys = [sort_codes(v, False, True) for v in partition] + [sort_codes(v, d, nf) for v, d, nf in order]
        if not keys:
            keys = [(np.zeros(n, dtype=np.int64), 1)]
        bits = max(int(n - 1).bit_length(), 1)
        words = _words(keys, 1 << (63 - bits))
        in_order = _in_order(words)
        if in_order:
            perm, top, distinct = np.arange(n), words[0][0], False
        else:
            perm, top, distinct = _stable_order(words, n, bits)

        def sorted_word(i: int) -> np.ndarray:  # gathered only where needed
            return top if i == 0 else words[i][0] if in_order else words[i][0][perm]

        part_bounds, part_id = _runs(_major(words, sorted_word, keys, len(partition)), n)
        if not order:
            group_bounds, group_id = part_bounds, part_id
        elif distinct:
            group_bounds, group_id = np.arange(n + 1), np.arange(n)
        else:
            # a peer group never spans two partitions: the words include the partition keys
            group_bounds, group_id = _runs([sorted_word(i) for i in range(len(words))], n)
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

    @staticmethod
    def in_order(group_id: np.ndarray, part_id: np.ndarray | None = None) -> Layout:
        """The layout of rows already in (partition, ORDER BY) order, from each row's peer group
        number (0, 1, ..., non-decreasing, never shared by two partitions) and partition number
        (non-decreasing; None: one partition): what a caller that keeps its rows sorted (a streaming
        buffer, a bucket of keys) knows without a sort. O(n).

        >>> lay = Layout.in_order(np.array([0, 0, 1]))
        >>> lay.perm.tolist(), lay.group_start.tolist(), lay.group_end.tolist(), lay.part_end.tolist()
        ([0, 1, 2], [0, 2], [2, 3], [3, 3, 3])
        >>> Layout.in_order(np.array([0, 1, 2]), np.array([0, 0, 1])).part_start.tolist()
        [0, 0, 2]
        """
        n = len(group_id)
        first = np.ones(n, dtype=bool)  # row i starts a peer group
        np.not_equal(group_id[1:], group_id[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        if part_id is None:
            part_id = np.zeros(n, dtype=np.int64)
            part_bounds = np.array([0, n] if n else [0], dtype=np.int64)
        else:
            cut = np.ones(n, dtype=bool)
            np.not_equal(part_id[1:], part_id[:-1], out=cut[1:])
            part_bounds = np.append(np.flatnonzero(cut), n) if n else np.zeros(1, dtype=np.int64)
            part_id = np.cumsum(cut) - 1  # numbered 0, 1, ... as Layout.build numbers them
        return Layout(
            perm=np.arange(n),
            part_id=part_id,
            part_start=part_bounds[:-1][part_id],
            part_end=part_bounds[1:][part_id],
            group_id=group_id,
            group_start=starts,
            group_end=np.append(starts[1:], n) if n else starts,
            part_bounds=part_bounds,
            identity=True,
        )

    def sorted(self, array: pa.Array) -> Values:
        """The column in this layout's row order."""
        if self.identity:
            return Values(array)
        return Values(array.take(pa.array(self.perm)))
