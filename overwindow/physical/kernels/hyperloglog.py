"""approx_count_distinct over frames as Spark computes it: HyperLogLog++ over Spark's XXH64 hashes
(seed 42) of the values, so the answers are Spark's. A row sets register ``index`` (its hash's top
p bits) to at least ``rank`` (the leading zeros of the rest, plus one); registers are the maximum
over the frame's rows, so a frame's registers are its rows' pairs reduced, O(total frame size)
(running frames, raised row by row: O(n * m) for m registers), whatever the rows' order. The
estimate is Spark's: linear counting while it is small, the raw estimate less HLL++'s empirical
bias (Spark's tables, overwindow/data/hllpp_bias.csv) below 5m, else the raw estimate.

>>> from overwindow.physical.bounds import Frames
>>> f = Frames([(np.array([0, 0, 0]), np.array([1, 2, 3]))])
>>> index, rank = hll_registers(Values(pa.array(["a", "b", "a"])), 9)
>>> distinct_estimates(index, rank, np.ones(3, bool), f, 9, running=True).tolist()
[1, 2, 2]
"""

from __future__ import annotations

import csv
import functools
from importlib import resources

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.call import WindowCall, hll_register_bits
from overwindow.physical import spark_hash
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels.aggregates import prefix_count
from overwindow.physical.kernels.approximate import replays, running
from overwindow.physical.kernels.collections import frame_rows
from overwindow.physical.values import Values

# HLL++'s linear-counting thresholds, by precision p = 4 .. 18
THRESHOLDS = (10, 20, 40, 80, 220, 400, 900, 1800, 3100, 6500, 11500, 20000, 50000, 120000, 350000)


def _leading_zeros(w: np.ndarray) -> np.ndarray:
    """Leading zero bits of nonzero uint64 values."""
    n = np.zeros(len(w), dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        top = w >> np.uint64(64 - shift)
        empty = top == 0
        n += np.where(empty, shift, 0)
        w = np.where(empty, w << np.uint64(shift), w)
    return n


def hll_registers(values: Values, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: Spark's HLL++ register index (the hash's top p bits) and rank (leading zeros of the
    rest, padded, plus one)."""
    h = spark_hash.xxhashes(values.array)
    if h is None:
        raise WindowSpecError(f"approx_count_distinct of {values.type} values is not computed")
    index = (h >> np.uint64(64 - p)).astype(np.int64)
    rank = _leading_zeros((h << np.uint64(p)) | np.uint64(1 << (p - 1))) + 1
    return index, rank


K_NEAREST = 6  # HLL++'s bias: the mean bias of the 6 measured raw estimates nearest to the raw one


@functools.cache
def bias_tables() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """HLL++'s empirical bias tables as Spark holds them, by precision (4 .. 18): the raw estimates
    measured at known cardinalities (ascending) and the bias measured at each
    (overwindow/data/hllpp_bias.csv, written from Spark by scripts/hllpp_tables.py)."""
    path = resources.files("overwindow").joinpath("data/hllpp_bias.csv")
    with path.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    p = np.array([int(r[0]) for r in rows])
    raw = np.array([float(r[1]) for r in rows])
    bias = np.array([float(r[2]) for r in rows])
    return {int(k): (raw[p == k], bias[p == k]) for k in np.unique(p)}


def _java_binary_search(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """java.util.Arrays.binarySearch of each key in the ascending ``table``, as the index Spark
    takes: the match found, else the insertion point. O(len(keys) log len(table))."""
    lo = np.zeros(len(keys), dtype=np.int64)
    hi = np.full(len(keys), len(table) - 1, dtype=np.int64)
    found = np.full(len(keys), -1, dtype=np.int64)
    for _ in range(len(table).bit_length() + 1):
        live = (lo <= hi) & (found < 0)
        mid = (lo + hi) >> 1
        v = table[np.clip(mid, 0, len(table) - 1)]
        found = np.where(live & (v == keys), mid, found)
        lo = np.where(live & (v < keys), mid + 1, lo)
        hi = np.where(live & (v > keys), mid - 1, hi)
    return np.where(found >= 0, found, lo)


def estimate_bias(e: np.ndarray, p: int) -> np.ndarray:
    """Spark's HLL++ bias of raw estimates ``e``: the mean measured bias of the K nearest measured
    raw estimates (a window of K around the nearest, slid up while its next one is nearer than its
    first). O(len(e) * K)."""
    raw, bias = bias_tables()[p]
    n = len(raw)
    low = np.maximum(_java_binary_search(raw, e) - K_NEAREST + 1, 0)
    high = np.minimum(low + K_NEAREST, n)
    while True:
        nearer = high < n
        nearer[nearer] = (e[nearer] - raw[high[nearer]]) ** 2 < (e[nearer] - raw[low[nearer]]) ** 2
        if not nearer.any():
            break
        low, high = low + nearer, high + nearer
    total = np.zeros(len(e))
    for j in range(K_NEAREST):  # a running sum in table order, as Spark adds them
        total = total + np.where(j < high - low, bias[np.minimum(low + j, n - 1)], 0.0)
    return total / (high - low)


def hll_estimates(registers: np.ndarray, p: int) -> np.ndarray:
    """Spark's HLL++ estimate of each row of registers (frames x m): linear counting H while some
    register is 0 and H is within HLL++'s threshold or the raw estimate E at most 2.5m, else E less
    the empirical bias while E is below 5m, else E; Java's Math.round of it. O(frames * m)."""
    m = registers.shape[1]
    zeros = (registers == 0).sum(axis=1).astype(np.float64)
    with np.errstate(divide="ignore"):
        linear = m * np.log(m / zeros)
    # Spark sums 1 / 2**M register by register: a running double sum in index order
    z_inverse = np.cumsum(np.ldexp(1.0, -registers.astype(np.int64)), axis=1)[:, -1]
    alpha = {4: 0.673, 5: 0.697, 6: 0.709}.get(p, 0.7213 / (1.0 + 1.079 / m))
    alpha_m2 = alpha * m * m  # (alpha * m) * m, as Spark multiplies
    e = alpha_m2 / z_inverse
    corrected = e.copy()
    if p < 19:
        low = e < 5.0 * m
        corrected[low] = e[low] - estimate_bias(e[low], p)
        small = linear <= THRESHOLDS[p - 4]
    else:
        small = np.zeros(len(e), dtype=bool)
    out = np.where((zeros > 0) & (small | (e <= 2.5 * m)), linear, corrected)
    whole = np.floor(out)  # Math.round: the nearest long, halves up (x - floor(x) is exact)
    return whole + (out - whole >= 0.5)


def approx_count_distinct(call: WindowCall):
    """The kernel of ``approx_count_distinct(x [, relativeSD])`` (BIGINT; 0 for a frame without
    values)."""
    p = hll_register_bits(float(call.params[0]) if call.params else 0.05)  # 4 or more: call.py

    def run(inp):
        index, rank = hll_registers(inp.values, p)
        return pa.array(distinct_estimates(index, rank, inp.mask, inp.frames, p, running(call)), pa.int64())

    return run


def distinct_estimates(index, rank, mask, frames: Frames, p: int, running: bool) -> np.ndarray:
    """Spark's estimate for every frame from the rows' register ``index`` and ``rank``: a running
    frame's registers raised row by row (O(n * m)), other frames' reduced from their rows
    (O(total frame size + n * m)); ``chunk`` frames' registers at a time."""
    m = 1 << p
    n = len(frames.start)
    out = np.zeros(n, dtype=np.int64)
    chunk = max(1, (1 << 21) // m)
    if running:  # one register set per partition, raised row by row
        before = prefix_count(mask)
        taking = np.flatnonzero(mask)
        registers = np.zeros(m, dtype=np.int8)
        held = np.zeros((min(chunk, n), m), dtype=np.int8)
        done = 0
        for r, fresh in replays(frames, True):
            s, e = int(before[frames.start[r]]), int(before[frames.end[r]])
            if fresh:
                registers, done = np.zeros(m, dtype=np.int8), s
            if e > done:
                at = taking[done:e]
                np.maximum.at(registers, index[at], rank[at].astype(np.int8))
                done = e
            held[r % chunk] = registers
            if r % chunk == chunk - 1 or r == n - 1:
                first = r - r % chunk
                out[first : r + 1] = hll_estimates(held[: r + 1 - first], p)
        return out
    offsets, taken = frame_rows(frames, mask)
    owner = np.repeat(np.arange(n), np.diff(offsets))
    for first in range(0, n, chunk):
        stop = min(first + chunk, n)
        lo, hi = offsets[first], offsets[stop]
        registers = np.zeros((stop - first, m), dtype=np.int8)
        at = taken[lo:hi]
        np.maximum.at(registers, (owner[lo:hi] - first, index[at]), rank[at].astype(np.int8))
        out[first:stop] = hll_estimates(registers, p)
    return out
