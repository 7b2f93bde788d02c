"""Holistic aggregates: median and percentiles, count(DISTINCT), mode.

Percentiles pick the k-th smallest participating value per frame (``Selector``: narrow frames
sorted outright, others from wavelet matrices over value ranks, per block of frames; O(n w log w)
for frames up to w rows). Distinct counts run on one wavelet matrix over the dense codes, all frames
at once (O((n + m) log sigma)): the number of frame rows whose previous equal value lies before the
frame. mode (and a distinct count under EXCLUDE) slides a counting structure over the frames
(O(n log n) amortised, one Python step per row).

>>> f = Frames([(np.array([0, 0]), np.array([3, 4]))])
>>> percentile(Values(pa.array([4.0, 1.0, 2.0, 10.0])), np.ones(4, bool), f, 0.5, True).to_pylist()
[2.0, 3.0]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numpy.lib.stride_tricks import sliding_window_view
from sortedcontainers import SortedList

from overwindow.physical import decimals
from overwindow.physical.blocks import CHUNK, chunks
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels.aggregates import prefix_count
from overwindow.physical.kernels.sliding import slide
from overwindow.physical.kernels.wavelet import WaveletMatrix
from overwindow.physical.types import is_nested
from overwindow.physical.values import INTERVAL_DAY_TO_SECOND, MICROS_PER_TICK, TypeFamily, Values


def _compact(mask: np.ndarray, frames: Frames):
    """Frames re-expressed over the participating rows only, and their sizes."""
    before = prefix_count(mask)
    parts = [(before[s], before[e]) for s, e in frames.parts]
    size = sum(e - s for s, e in parts)
    return parts, size


def percentile(
    values: Values, mask: np.ndarray, frames: Frames, fraction, continuous: bool, descending: bool = False
) -> pa.Array:
    """percentile_cont (linear interpolation between the two nearest ranks) or percentile_disc
    (the first value whose cumulative distribution reaches the fraction), counted from the largest
    value when ``descending`` (``WITHIN GROUP (ORDER BY x DESC)``); a tuple of fractions gives a list
    per row. Percentiles of numbers are DOUBLE (Spark); of DATE, TIMESTAMP and other types, of the
    column's type."""
    parts, size = _compact(mask, frames)
    select = Selector(_sort_keys(values)[mask])
    fractions = fraction if isinstance(fraction, tuple) else (fraction,)
    results = [
        _one_percentile(values, select, parts, size, float(p), continuous, descending) for p in fractions
    ]
    if not isinstance(fraction, tuple):
        return results[0]
    m = len(fractions)
    flat = pa.concat_arrays([r for r in results]).take(
        pa.array((np.arange(len(size))[:, None] + len(size) * np.arange(m)[None, :]).ravel())
    )
    offsets = pa.array(np.arange(0, len(size) * m + 1, m, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, flat, mask=pa.array(size == 0))


def _sort_keys(values: Values) -> np.ndarray:
    """Keys in SQL order: the numbers themselves for numeric types (floats with -0.0 as 0.0, NaN
    sorting last as in SQL), dense codes for other types."""
    if _numeric(values):
        nums = values.numbers
        return nums + 0.0 if nums.dtype == np.float64 else nums
    return values.codes


def _numeric(values: Values) -> bool:
    """Whether the column's ``numbers`` are its values (not for DECIMAL or UINT64: codes then)."""
    return (values.kind.is_ordered_number or values.kind.is_integral) and values.exact_numbers


def _result_type(values: Values) -> pa.DataType:
    """Spark's type of a percentile: DOUBLE of numbers, INTERVAL DAY TO SECOND of a day-time
    interval, the type itself of a DATE or TIMESTAMP (overwindow's extension)."""
    if values.kind.is_numeric:
        return pa.float64()
    return INTERVAL_DAY_TO_SECOND if values.kind is TypeFamily.INTERVAL else values.type


def _one_percentile(values: Values, select: Selector, parts, size, p, continuous, descending) -> pa.Array:
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
        if descending:  # the i-th value from the largest
            k = nm1 - np.minimum(k, nm1)
        out_type = _result_type(values)
        if not len(select.keys):
            return pa.nulls(len(size), out_type)
        (key,) = select.kth(parts, [np.minimum(k, nm1)])
        if _numeric(values):
            picked = values.from_numbers(key, ~empty)
        else:
            picked = values.take_codes(np.where(empty, -1, key))
        # numbers to DOUBLE as Spark casts them (a BIGINT past 2**53 rounds)
        if pa.types.is_decimal(picked.type):
            return decimals.to_float64(picked)
        return picked.cast(out_type, safe=False) if picked.type != out_type else picked
    pos = p * nm1
    lo = np.floor(pos).astype(np.int64)
    if not len(select.keys):
        return pa.nulls(len(size), _result_type(values))
    # the upper neighbour only differs where the position falls between two ranks (never for the
    # median of an odd count)
    hi = np.where(pos != lo, np.minimum(lo + 1, nm1), lo)
    frac = pos - lo
    if descending:
        # Spark interpolates between the lower and upper positions counted from the largest value:
        # in ascending order they are nm1 - hi and nm1 - lo, the weight on the upper one hi - pos
        lo, hi, frac = nm1 - hi, nm1 - lo, np.where(hi != lo, hi - pos, 0.0)
    k_lo, k_hi = select.kth(parts, [np.minimum(lo, nm1), hi])
    if not _numeric(values):  # codes of DECIMAL / UINT64 values: interpolate between their doubles
        uniques = Values(values.uniques).numbers
        k_lo, k_hi = (uniques[np.clip(k, 0, len(uniques) - 1)] for k in (k_lo, k_hi))
    if values.kind.is_temporal:
        return values.from_numbers(interpolate_ints(k_lo, k_hi, frac), ~empty)
    if values.kind is TypeFamily.INTERVAL:
        first, second = (k_hi, k_lo) if descending else (k_lo, k_hi)  # in the call's own order
        return _interval_percentile(first, second, pos, MICROS_PER_TICK[values.type.unit], empty)
    v_lo, v_hi = k_lo.astype(np.float64), k_hi.astype(np.float64)
    # Spark's (and DuckDB's) interpolation lo * (1 - d) + hi * d, not lo + d * (hi - lo): it keeps
    # -inf between -inf and a finite value (not NaN) and does not overflow between -1e308 and 1e308
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where((v_lo == v_hi) | (frac == 0), v_lo, v_lo * (1 - frac) + v_hi * frac)
    return pa.array(out, mask=empty)


def _interval_percentile(first, second, pos, micros_per_tick: int, empty) -> pa.Array:
    """A continuous percentile of day-time intervals as Spark computes it, to the microsecond: the
    values at positions floor(pos) and ceil(pos) (``first``, ``second``: int64 ticks, counted in the
    call's own order) as doubles of microseconds, ``first + (pos - floor(pos)) * (second - first)``,
    the fraction dropped (Java's toLong); an INTERVAL DAY TO SECOND. Past 2**53 microseconds (about
    104,000 days) the doubles round as Spark's do. O(n).

    >>> day = np.array([86400])
    >>> _interval_percentile(np.array([0]), day, np.array([0.3]), 1_000_000, np.array([False])).to_pylist()
    [datetime.timedelta(seconds=25920)]
    """
    a, b = ((x * micros_per_tick).astype(np.float64) for x in (first, second))
    out = a + (pos - np.floor(pos)) * (b - a)
    return pa.array(np.trunc(out).astype(np.int64), mask=empty).cast(INTERVAL_DAY_TO_SECOND)


def interpolate_ints(lo: np.ndarray, hi: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """``lo + frac * (hi - lo)`` over int64 ``lo <= hi`` and doubles ``0 <= frac < 1``, rounded (a half to
    even) from the exact value: the interpolation of dates and timestamps, in their integers (a
    float64 holds nanosecond timestamps only to about 200 ns). ``frac`` is m / 2**k exactly (m a
    53-bit integer), so the step is (hi - lo) * m, a 117-bit integer kept as two uint64 halves, shifted
    right by k and rounded from the bits shifted out. The span is taken modulo 2**64, so spans past
    int64 do not overflow. O(n).

    >>> ns = np.array([1_714_557_600_123_456_789])  # 2024-05-01 10:00:00.123456789 in nanoseconds
    >>> # 5 * 0.1 is 0.50000000000000002776 (0.1 is a bit above 1/10): up; 2.5 goes to the even ...792
    >>> (interpolate_ints(ns, ns + 5, np.array([0.1, 0.5])) - ns).tolist()
    [1, 3]
    """
    span = hi.view(np.uint64) - lo.view(np.uint64)
    mantissa, exponent = np.frexp(frac)  # frac = mantissa * 2**exponent, mantissa in [0.5, 1) or 0
    m = (mantissa * 2.0**53).astype(np.uint64)
    k = (53 - exponent).astype(np.int64)  # at least 53, as frac < 1
    p_hi, p_lo = _mul_64x53(span, m)
    step = _shift_right(p_hi, p_lo, k)
    # the bits shifted out: the first one is the half; any below it make the rest more than a half
    out = lo.view(np.uint64) + step
    half = _shift_right(p_hi, p_lo, k - 1) & np.uint64(1)
    more = _any_below(p_hi, p_lo, k - 1)
    out += half & (more | (out & np.uint64(1)))
    return out.view(np.int64)


_LOW32 = np.uint64(2**32 - 1)


def _mul_64x53(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 64-bit halves of a * b for uint64 a and b < 2**53, from 32-bit pieces."""
    a1, a0 = a >> np.uint64(32), a & _LOW32
    b1, b0 = b >> np.uint64(32), b & _LOW32  # b1 < 2**21: no partial product overflows
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    mid = (p00 >> np.uint64(32)) + (p01 & _LOW32) + (p10 & _LOW32)  # < 3 * 2**32
    low = (p00 & _LOW32) | (mid << np.uint64(32))
    high = a1 * b1 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    return high, low


def _shifted(x: np.ndarray, k: np.ndarray, left: bool = False) -> np.ndarray:
    """x shifted by k bits (elementwise), 0 where k is outside 0..63 (C leaves those undefined)."""
    ok = (k >= 0) & (k < 64)
    by = np.where(ok, k, 0).astype(np.uint64)
    return np.where(ok, (x << by) if left else (x >> by), np.uint64(0))


def _shift_right(high: np.ndarray, low: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The low 64 bits of the 128-bit (high, low) shifted right by k >= 0."""
    return np.where(k >= 64, _shifted(high, k - 64), _shifted(low, k) | _shifted(high, 64 - k, left=True))


def _any_below(high: np.ndarray, low: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Whether any bit below bit j of the 128-bit (high, low) is set, as uint64 0 or 1."""
    one = np.uint64(1)
    low_mask = np.where(j >= 64, ~np.uint64(0), _shifted(np.full(len(j), one), j, left=True) - one)
    high_mask = np.where(j > 64, _shifted(np.full(len(j), one), j - 64, left=True) - one, np.uint64(0))
    high_mask = np.where(j >= 128, ~np.uint64(0), high_mask)
    return (((low & low_mask) | (high & high_mask)) != 0).astype(np.uint64)


class Selector:
    """The k-th smallest keys (0-based) over the union of ranges, per frame.

    Frames are taken in blocks of CHUNK. A block of one-part frames at most SORTED rows wide copies
    each frame into a row of a matrix (padded past its end with a key that sorts last) and sorts
    the rows with numpy's SIMD sort: every k of a frame is then one lookup. Other blocks whose
    frames span at most WIDE keys rank just those keys and answer from a wavelet matrix over the
    ranks (log2(span) levels, in cache); blocks spanning more (long frames) share one wavelet matrix
    over the ranks of all keys. O(n w log w) for frames up to w <= SORTED rows, O(n log span) else.
    A frame with no rows gets an arbitrary key.

    >>> frames = [(np.array([0, 1]), np.array([3, 3]))]
    >>> Selector(np.array([5.0, 1.0, 3.0])).kth(frames, [np.array([1, 0])])[0].tolist()
    [3.0, 1.0]
    """

    WIDE = 4 * CHUNK
    SORTED = 256

    def __init__(self, keys: np.ndarray):
        self.keys = keys
        self.last = np.nan if keys.dtype.kind == "f" else np.iinfo(keys.dtype).max  # sorts after every key
        self._padded = None  # keys then SORTED copies of ``last``, built on first need
        self._all = None  # (wavelet matrix, order) over every key, built on first need

    def kth(self, parts, ks: list[np.ndarray]) -> list[np.ndarray]:
        out = [np.zeros(len(ks[0]), dtype=self.keys.dtype) for _ in ks]
        wide = []
        for rows in chunks(len(ks[0])):
            block = [(s[rows], e[rows]) for s, e in parts]
            width = sum(e - s for s, e in block)
            some = width > 0
            if not some.any():
                continue
            if len(block) == 1 and int(width.max()) <= self.SORTED:
                for o, got in zip(out, self._sorted_windows(block[0][0], width, [k[rows] for k in ks])):
                    o[rows] = got
                continue
            lo = min(int(s[some].min()) for s, _ in block)
            hi = max(int(e[some].max()) for _, e in block)
            if hi - lo > self.WIDE:
                wide.append(rows)
                continue
            wm, order = _ranked(self.keys[lo:hi])
            local = [(np.clip(s - lo, 0, hi - lo), np.clip(e - lo, 0, hi - lo)) for s, e in block]
            for o, k in zip(out, ks):
                o[rows] = self.keys[order[np.minimum(wm.kth(local, k[rows]), hi - lo - 1)] + lo]
        if wide:
            if self._all is None:
                self._all = _ranked(self.keys)
            wm, order = self._all
            rows = np.concatenate([np.arange(r.start, r.stop) for r in wide])
            for o, k in zip(out, ks):
                o[rows] = self.keys[
                    order[np.minimum(wm.kth([(s[rows], e[rows]) for s, e in parts], k[rows]), len(order) - 1)]
                ]
        return out

    def _sorted_windows(self, start: np.ndarray, width: np.ndarray, ks: list[np.ndarray]) -> list[np.ndarray]:
        if self._padded is None:
            self._padded = np.concatenate((self.keys, np.full(self.SORTED, self.last, dtype=self.keys.dtype)))
        w = int(width.max())
        windows = sliding_window_view(self._padded, w)[start]  # a copy: one frame per row
        short = np.arange(w) >= width[:, None]
        if short.any():
            windows[short] = self.last
        windows.sort(axis=1)
        r = np.arange(len(start))
        return [windows[r, np.clip(k, 0, w - 1)] for k in ks]


def _ranked(keys: np.ndarray) -> tuple[WaveletMatrix, np.ndarray]:
    """A wavelet matrix over the ranks of ``keys`` (a permutation), and the sort order (rank -> position)."""
    order = np.argsort(keys)
    ranks = np.empty(len(keys), dtype=np.int64)
    ranks[order] = np.arange(len(keys))
    return WaveletMatrix(ranks), order


def median(values, mask, frames):
    return percentile(values, mask, frames, 0.5, True)


def _nested_key(v):
    """A hashable key of a nested value (STRUCT, ARRAY, MAP) equal for equal values, as SQL's
    DISTINCT compares them: NULL fields equal, every NaN one value, -0.0 equal to 0.0."""
    if isinstance(v, dict):
        return tuple((k, _nested_key(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return tuple(_nested_key(x) for x in v)
    if isinstance(v, float):
        return ("NaN",) if v != v else v + 0.0
    return v


def distinct_codes(values: Values) -> np.ndarray:
    """Each row's code among the column's distinct values (-1 for NULL); nested values by their
    Python key (a Python step per row), others by ``Values.codes``. O(n log n)."""
    if not is_nested(values.type):
        return values.codes
    seen: dict = {}
    return np.array(
        [-1 if v is None else seen.setdefault(_nested_key(v), len(seen)) for v in values.array.to_pylist()],
        dtype=np.int64,
    )


def count_distinct(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    codes = distinct_codes(values)[mask]
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


def mode(values: Values, mask: np.ndarray, frames: Frames, largest: bool = False) -> pa.Array:
    """The most frequent value; ties go to the smallest value (the largest with ``largest``: Spark's
    ``mode() WITHIN GROUP (ORDER BY x DESC)``)."""
    codes = values.codes[mask]
    if largest:  # rank codes in reverse: the first of the ranking is then the largest of a tie
        codes = -codes

    def best(counts, ranking):
        return (-ranking[0][1] if largest else ranking[0][1]) if ranking else -1

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
