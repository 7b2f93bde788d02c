"""Holistic aggregates: median and percentiles, count(DISTINCT), mode.

Percentiles and distinct counts run on a wavelet matrix over the dense codes of the participating
values, all frames at once (O((n + m) log sigma)); a distinct count is the number of frame rows whose
previous equal value lies before the frame. mode (and a distinct count under EXCLUDE) slides a
counting structure over the frames (O(n log n) amortised, one Python step per row).

>>> f = Frames([(np.array([0, 0]), np.array([3, 4]))])
>>> percentile(Values(pa.array([4.0, 1.0, 2.0, 10.0])), np.ones(4, bool), f, 0.5, True).to_pylist()
[2.0, 3.0]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sortedcontainers import SortedList

from overwindow.physical.bounds import Frames
from overwindow.physical.kernels.aggregates import prefix_count
from overwindow.physical.kernels.sliding import slide
from overwindow.physical.kernels.wavelet import WaveletMatrix
from overwindow.physical.values import Values


def _compact(mask: np.ndarray, frames: Frames):
    """Frames re-expressed over the participating rows only, and their sizes."""
    before = prefix_count(mask)
    parts = [(before[s], before[e]) for s, e in frames.parts]
    size = sum(e - s for s, e in parts)
    return parts, size


def percentile(values: Values, mask: np.ndarray, frames: Frames, fraction, continuous: bool) -> pa.Array:
    """percentile_cont (linear interpolation between the two nearest ranks) or percentile_disc
    (the first value whose cumulative distribution reaches the fraction); a tuple of fractions
    gives a list per row."""
    parts, size = _compact(mask, frames)
    codes = values.codes[mask]
    wm = WaveletMatrix(codes)
    fractions = fraction if isinstance(fraction, tuple) else (fraction,)
    results = [_one_percentile(values, wm, parts, size, p, continuous) for p in fractions]
    if not isinstance(fraction, tuple):
        return results[0]
    m = len(fractions)
    flat = pa.concat_arrays([r for r in results]).take(
        pa.array((np.arange(len(size))[:, None] + len(size) * np.arange(m)[None, :]).ravel())
    )
    offsets = pa.array(np.arange(0, len(size) * m + 1, m, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, flat, mask=pa.array(size == 0))


def _one_percentile(values: Values, wm, parts, size, p, continuous) -> pa.Array:
    empty = size == 0
    nm1 = np.maximum(size - 1, 0)
    if not continuous:
        # the first row i (1-based) whose cumulative distribution i/n reaches p, as the definition
        # (and DuckDB) compare it: ceil(p * n) alone is one too far when p * n rounds up past an
        # integer (0.55 * 100 == 55.000000000000007, yet 55/100 >= 0.55)
        n = np.maximum(size, 1)
        i = np.ceil(p * size).astype(np.int64)
        i = np.where((i - 1) / n >= p, i - 1, i)
        i = np.where(i / n < p, i + 1, i)
        k = np.maximum(i - 1, 0)
        code = wm.kth(parts, np.minimum(k, nm1)) if wm.n else np.zeros(len(size), np.int64)
        return values.take_codes(np.where(empty, -1, code))
    pos = p * nm1
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, nm1)
    if wm.n == 0:
        return pa.nulls(len(size), pa.float64())
    # kth() over an empty frame walks off the codes and returns garbage (possibly past the end of
    # the uniques): pin empty frames to code 0; their result is masked to NULL below
    c_lo = np.where(empty, 0, wm.kth(parts, np.minimum(lo, nm1)))
    # the upper neighbour only matters where the position falls between two ranks (never for the
    # median of an odd count): look it up for those frames alone
    c_hi = c_lo.copy()
    between = ~empty & (pos != lo)
    if between.any():
        c_hi[between] = wm.kth([(s[between], e[between]) for s, e in parts], hi[between])
    uniq = Values(values.uniques)
    u = uniq.numbers.astype(np.float64)
    v_lo, v_hi = u[c_lo], u[c_hi]
    frac = pos - lo
    # Spark's (and DuckDB's) interpolation lo * (1 - d) + hi * d, not lo + d * (hi - lo): it keeps
    # -inf between -inf and a finite value (not NaN) and does not overflow between -1e308 and 1e308
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where((c_lo == c_hi) | (frac == 0), v_lo, v_lo * (1 - frac) + v_hi * frac)
    if values.kind in ("date", "timestamp"):
        return values.from_numbers(np.round(out).astype(np.int64), ~empty)
    return pa.array(out, mask=empty)


def median(values, mask, frames):
    return percentile(values, mask, frames, 0.5, True)


def count_distinct(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    codes = values.codes[mask]
    if len(frames.parts) > 1:
        return pa.array(_slide_counts(codes, mask, frames, lambda counts, _: len(counts)), type=pa.int64())
    parts, size = _compact(mask, frames)
    s, e = parts[0]
    # prev[i]: position of the previous equal code, -1 if none; distinct = rows with prev < s
    order = np.argsort(codes, kind="stable")
    prev = np.full(len(codes), -1, dtype=np.int64)
    same = codes[order][1:] == codes[order][:-1]
    prev[order[1:][same]] = order[:-1][same]
    if len(codes) == 0:
        return pa.array(np.zeros(len(size), dtype=np.int64))
    wm = WaveletMatrix(prev + 1)
    return pa.array(wm.count_less(s, e, s + 1))


def mode(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """The most frequent value; ties go to the smallest value."""
    codes = values.codes[mask]

    def best(counts, ranking):
        return ranking[0][1] if ranking else -1

    picked = _slide_counts(codes, mask, frames, best)
    return values.take_codes(np.asarray(picked, dtype=np.int64))


def _slide_counts(codes: np.ndarray, mask: np.ndarray, frames: Frames, read):
    """Slide a value -> count map (and a ranking by (-count, value)) over the compacted frames."""
    parts, _ = _compact(mask, frames)
    compact = Frames(parts)
    c = codes.tolist()
    counts: dict[int, int] = {}
    ranking = SortedList()

    def add(lo, hi):
        for v in c[lo:hi]:
            n = counts.get(v, 0)
            if n:
                ranking.remove((-n, v))
            counts[v] = n + 1
            ranking.add((-n - 1, v))

    def remove(lo, hi):
        for v in c[lo:hi]:
            n = counts[v]
            ranking.remove((-n, v))
            if n == 1:
                del counts[v]
            else:
                counts[v] = n - 1
                ranking.add((-n + 1, v))

    def reset():
        counts.clear()
        ranking.clear()

    return slide(compact, add, remove, lambda: read(counts, ranking), reset)


KERNELS = {"median": median, "count_distinct": count_distinct, "mode": mode}
