"""Spark's approximate aggregates over frames, computed as Spark computes them, so their answers are
Spark's, not merely as close: percentile_approx (Greenwald and Khanna's quantile summaries, Spark's
variant), approx_count_distinct (HyperLogLog++ over Spark's XXH64 hashes) and histogram_numeric
(Ben-Haim and Tom-Tov's streaming histogram, with Java's seeded random tie-breaks).

Spark computes each frame with one aggregation buffer: a sliding frame (and one ending at UNBOUNDED
FOLLOWING) from scratch over its rows in frame order, a frame from UNBOUNDED PRECEDING by adding
rows to the buffer and evaluating it whenever rows were added. The approximate states depend on
that history, so the kernels replay it where it matters, and take a vectorised shortcut where it
provably does not:

* percentile_approx: a frame of c values with 2c/accuracy < 1 and no NaN is never compressed
  (every rank error is 0), and its answer is the value of rank ceil(p * c) in Java's order of
  doubles (-0.0 below 0.0), or the least or greatest for p within 1/accuracy of 0 or 1: the k-th
  smallest per frame, O(n log w). Larger frames, and frames holding NaN (which Spark's summary
  compares as unordered), replay Spark's summary in Python, O(w log w) per frame (O(n * samples)
  per partition for running frames, which Spark compresses at every row).
* approx_count_distinct: HyperLogLog++ (kernels/hyperloglog.py).
* histogram_numeric: a frame whose values are at most nb distinct numbers (no NaN) never trims: its
  bins are its distinct values and their counts, O(n log n). Other frames replay Spark's histogram,
  O(w * nb) per frame.

>>> from overwindow.physical.bounds import Frames
>>> f = Frames([(np.array([0, 0]), np.array([3, 4]))])
>>> v = Values(pa.array([4.0, 1.0, 2.0, 10.0]))
>>> percentile_values(v, np.ones(4, bool), f, (0.5,), 10000, running=False)[0].to_pylist()
[2.0, 2.0]
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa

from overwindow.logical.call import WindowCall
from overwindow.logical.frame import BoundKind, Exclude
from overwindow.physical import casts
from overwindow.physical.bounds import Frames
from overwindow.physical.kernels.aggregates import prefix_count
from overwindow.physical.kernels.collections import frame_rows
from overwindow.physical.kernels.holistic import Selector
from overwindow.physical.values import MICROS_PER_TICK, TypeFamily, Values

# --- reading values as Spark's doubles, and back --------------------------------------------------


def spark_doubles(values: Values) -> np.ndarray:
    """The values as the doubles Spark's approximate aggregates read: numbers as DOUBLE, a DATE's
    days, a TIMESTAMP's or day-time interval's microseconds."""
    kind = values.kind
    if kind in (TypeFamily.TIMESTAMP, TypeFamily.INTERVAL):
        unit = values.type.unit
        ticks = values.numbers
        micros = (
            ticks * MICROS_PER_TICK[unit]
            if unit in MICROS_PER_TICK
            else ticks * 1000
            if unit == "ms"
            else ticks // 1000
        )
        return micros.astype(np.float64)
    return values.numbers.astype(np.float64)


def from_doubles(
    x: np.ndarray, valid: np.ndarray, t: pa.DataType, kind: TypeFamily, rounded_text: bool = False
) -> pa.Array:
    """Doubles back in the argument's type as Spark converts them (Scala's toInt / toLong: toward
    zero, NaN 0, saturated; a DECIMAL through the double's text, rounded half up, and with
    ``rounded_text`` (histogram_numeric's bins, measured against Spark 4.3) first rounded half up to
    the type's precision in significant digits)."""
    if kind in (TypeFamily.FLOAT,):
        return pa.array(x, mask=~valid).cast(t, safe=False)
    if kind is TypeFamily.DECIMAL and rounded_text:
        return pa.array([_decimal_of(v, t) if ok else None for v, ok in zip(x.tolist(), valid.tolist())], t)
    if kind is TypeFamily.DECIMAL:
        return casts.cast(pa.array(x, mask=~valid), t)
    limit = (
        2**31 - 1 if kind is TypeFamily.DATE or (kind is TypeFamily.INT and t.bit_width <= 32) else 2**63 - 1
    )
    whole = np.nan_to_num(np.trunc(x), nan=0.0, posinf=limit, neginf=-limit - 1)
    ints = np.clip(whole, -limit - 1, limit).astype(np.int64) if limit < 2**63 - 1 else _to_long(whole)
    if kind in (TypeFamily.TIMESTAMP, TypeFamily.INTERVAL):
        unit = t.unit
        ticks = (
            ints // MICROS_PER_TICK[unit]
            if unit in MICROS_PER_TICK
            else ints // 1000
            if unit == "ms"
            else ints * 1000
        )
        return pa.array(ticks, mask=~valid).cast(t)
    if kind is TypeFamily.DATE:
        return pa.array(ints.astype(np.int32), mask=~valid).cast(t)
    return pa.array(ints, mask=~valid).cast(t, safe=False)


def _decimal_of(v: float, t: pa.Decimal128Type) -> decimal.Decimal | None:
    if not math.isfinite(v):
        return None
    context = decimal.Context(prec=t.precision, rounding=decimal.ROUND_HALF_UP)
    digits = context.create_decimal(repr(v))
    out = digits.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP, context=_WIDE)
    return out if len(out.as_tuple().digits) <= t.precision else None


_WIDE = decimal.Context(prec=80)


def _to_long(whole: np.ndarray) -> np.ndarray:
    """Scala's Double.toLong of whole doubles: saturated at the long range."""
    big = whole >= 2.0**63
    small = whole < -(2.0**63)
    out = np.where(big | small, 0.0, whole).astype(np.int64)
    return np.where(big, np.iinfo(np.int64).max, np.where(small, np.iinfo(np.int64).min, out))


def _is_number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _total_order(x: np.ndarray) -> np.ndarray:
    """int64 keys ordering doubles as Java's Double.compare: -0.0 below 0.0, every NaN last."""
    bits = x.view(np.int64)
    keys = bits ^ ((bits >> np.int64(63)) & np.int64(0x7FFFFFFFFFFFFFFF))
    return np.where(np.isnan(x), np.iinfo(np.int64).max, keys)


def _from_total_order(keys: np.ndarray) -> np.ndarray:
    nan = keys == np.iinfo(np.int64).max
    bits = keys ^ ((keys >> np.int64(63)) & np.int64(0x7FFFFFFFFFFFFFFF))
    return np.where(nan, np.nan, bits.view(np.float64))


def running(call: WindowCall) -> bool:
    """Whether Spark computes the call's frames by adding rows to one buffer per partition (a frame
    from UNBOUNDED PRECEDING): the approximate states then carry every earlier evaluation."""
    return call.frame.start.kind is BoundKind.UNBOUNDED_PRECEDING and call.frame.exclude is Exclude.NO_OTHERS


def replays(frames: Frames, running: bool):
    """Per frame: (row, rows to add to the buffer, whether to start a new buffer), replaying Spark's
    frame processing (a running frame goes on from the previous row's buffer in its partition)."""
    start, end = frames.start, frames.end
    for r in range(len(start)):
        fresh = not running or r == 0 or start[r] != start[r - 1] or end[r] < end[r - 1]
        yield r, fresh


# --- percentile_approx ---------------------------------------------------------------------------

HEAD_SIZE = 50_000  # Spark's QuantileSummaries.defaultHeadSize
COMPRESS_THRESHOLD = 10_000  # and defaultCompressThreshold


class QuantileSummary:
    """Spark's QuantileSummaries (Greenwald-Khanna with a sorted head buffer), replayed in Python:
    ``insert``, ``compress`` and ``query`` as Spark's do, samples as [value, g, delta]."""

    def __init__(self, relative_error: float):
        self.eps = relative_error
        self.sampled: list[list] = []
        self.count = 0
        self.head: list[float] = []

    def insert(self, x: float) -> None:
        self.head.append(x)
        if len(self.head) >= HEAD_SIZE:
            self._insert_head()
            if len(self.sampled) >= COMPRESS_THRESHOLD:
                self._compress_samples()

    def _insert_head(self) -> None:
        if not self.head:
            return
        ordered = sorted(self.head, key=_java_double_key)
        out, i, count = [], 0, self.count
        for j, v in enumerate(ordered):
            while i < len(self.sampled) and self.sampled[i][0] <= v:
                out.append(self.sampled[i])
                i += 1
            count += 1
            first_or_last = not out or (i == len(self.sampled) and j == len(ordered) - 1)
            out.append([v, 1, 0 if first_or_last else math.floor(2 * self.eps * count)])
        out.extend(self.sampled[i:])
        self.sampled, self.count, self.head = out, count, []

    def compress(self) -> None:
        self._insert_head()
        self._compress_samples()

    def _compress_samples(self) -> None:
        samples = self.sampled
        if not samples:
            return
        threshold = 2 * self.eps * self.count
        kept: list[list] = []
        head = list(samples[-1])
        for i in range(len(samples) - 2, 0, -1):
            s = samples[i]
            if s[1] + head[1] + head[2] < threshold:
                head = [head[0], head[1] + s[1], head[2]]
            else:
                kept.append(head)
                head = list(s)
        kept.append(head)
        if len(samples) > 1 and samples[0][0] <= head[0]:
            kept.append(list(samples[0]))
        self.sampled = kept[::-1]

    def query(self, fractions) -> list[float] | None:
        """The summary's answers for ``fractions`` (None when empty), as Spark's multi-percentile
        query walks it: fractions in increasing order, each search going on from where the
        previous one stopped (a search that finds no sample answers the last one and leaves the
        walk at the end)."""
        s = self.sampled
        if not s:
            return None
        error = max(x[2] + x[1] for x in s) // 2
        index, low = 0, s[0][1]
        out = [0.0] * len(fractions)
        for q, pos in sorted((float(q), pos) for pos, q in enumerate(fractions)):
            if q <= self.eps:
                out[pos] = s[0][0]
                continue
            if q >= 1 - self.eps:
                out[pos] = s[-1][0]
                continue
            rank = math.ceil(q * self.count)
            i = index
            while i < len(s) - 1:
                if low + s[i][2] - error <= rank <= low + error:
                    break
                i += 1
                low += s[i][1]
            if i < len(s) - 1:
                index, out[pos] = i, s[i][0]
            else:
                index, low, out[pos] = len(s) - 1, 0, s[-1][0]
        return out


def _java_double_key(x: float):
    """Java's Double.compare order: -0.0 below 0.0, NaN above everything."""
    if x != x:
        return (1, 0.0)
    return (0, x, math.copysign(1.0, x))


def percentile_values(
    values: Values, mask: np.ndarray, frames: Frames, fractions: tuple, accuracy: int, running: bool
) -> list[pa.Array]:
    """Spark's percentile_approx of every frame, one array (of the argument's type) per fraction."""
    eps = 1.0 / accuracy
    x = spark_doubles(values)
    n = frames.count(prefix_count(mask))
    # replayed: frames where some rank may carry an error, and frames holding NaN (compressing a
    # summary whose second sample is NaN drops its least one: -1 <= NaN is false)
    nans = frames.count(prefix_count(mask & np.isnan(x))) > 0
    compressed = (np.floor(2 * eps * n.astype(np.float64)) > 0) | nans
    out = np.full((len(fractions), len(n)), np.nan)
    quick = np.flatnonzero(~compressed)
    if len(quick):
        keys = _total_order(x)[mask]
        before = prefix_count(mask)
        parts = [(before[s][quick], before[e][quick]) for s, e in frames.parts]
        size = n[quick]
        ks = []
        for p in fractions:
            rank = np.ceil(float(p) * size.astype(np.float64)).astype(np.int64)
            k = np.clip(rank - 1, 0, np.maximum(size - 1, 0))
            k = np.where(float(p) <= eps, 0, np.where(float(p) >= 1 - eps, size - 1, k))
            ks.append(np.maximum(k, 0))
        if len(keys):
            for j, key in enumerate(Selector(keys).kth(parts, ks)):
                out[j, quick] = _from_total_order(key)
    slow = np.flatnonzero(compressed)
    if len(slow):
        _replay_summaries(x, mask, frames, fractions, eps, running, slow, out)
    valid = n > 0
    return [from_doubles(out[j], valid, values.type, values.kind) for j in range(len(fractions))]


def _replay_summaries(x, mask, frames, fractions, eps, running, rows, out) -> None:
    offsets, taken = frame_rows(frames.take(rows), mask) if not running else (None, None)
    if running:  # the partition's buffer from its first row: every evaluation compresses it
        summary, done = None, 0
        taking = np.flatnonzero(mask)
        before = prefix_count(mask)
        need = set(rows.tolist())
        for r, fresh in replays(frames, True):
            s, e = int(before[frames.start[r]]), int(before[frames.end[r]])
            if fresh:
                summary, done = QuantileSummary(eps), s
            if e > done or fresh:
                for v in x[taking[done:e]].tolist():
                    summary.insert(v)
                summary.compress()
            done = e
            if r in need and e > s:
                out[:, r] = summary.query(fractions)
        return
    for i, r in enumerate(rows.tolist()):
        summary = QuantileSummary(eps)
        for v in x[taken[offsets[i] : offsets[i + 1]]].tolist():
            summary.insert(v)
        summary.compress()
        got = summary.query(fractions)
        if got is not None:
            out[:, r] = got


def percentile_approx(call: WindowCall):
    """The kernel of ``percentile_approx(x, percentage [, accuracy])``: one value, or an ARRAY for
    an ARRAY of percentages; NULL for a frame without values."""
    percentage = call.params[0]
    accuracy = call.params[1] if len(call.params) > 1 else 10_000
    many = isinstance(percentage, tuple)
    fractions = percentage if many else (percentage,)

    def run(inp):
        results = percentile_values(inp.values, inp.mask, inp.frames, fractions, accuracy, running(call))
        if not many:
            return results[0]
        n = len(results[0])
        m = len(fractions)
        flat = pa.concat_arrays(results).take(
            pa.array((np.arange(n)[:, None] + n * np.arange(m)[None, :]).ravel())
        )
        empty = ~results[0].is_valid().to_numpy(zero_copy_only=False)
        return pa.ListArray.from_arrays(
            pa.array(np.arange(0, n * m + 1, m, dtype=np.int32)), flat, mask=pa.array(empty)
        )

    return run


# --- histogram_numeric ---------------------------------------------------------------------------


class JavaRandom:
    """java.util.Random: the 48-bit linear congruential generator, and nextDouble."""

    def __init__(self, seed: int):
        self.seed = (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)

    def _next(self, bits: int) -> int:
        self.seed = (self.seed * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
        return self.seed >> (48 - bits)

    def next_double(self) -> float:
        return ((self._next(26) << 27) + self._next(27)) * 2.0**-53


class Histogram:
    """Spark's NumericHistogram (from Hive), replayed: bins [x, y] kept sorted by x; a value equal to
    a bin's x raises its count, another gets a bin of its own, and past nb bins the two closest
    merge (equally close pairs chosen by a Random seeded 31183)."""

    def __init__(self, nb: int):
        self.nb = nb
        self.bins: list[list[float]] = []
        self.random = JavaRandom(31183)

    def add(self, v: float) -> None:
        bins = self.bins
        lo, hi, at = 0, len(bins), 0
        while lo < hi:
            at = (lo + hi) // 2
            if bins[at][0] > v:
                hi = at
            elif bins[at][0] < v:
                at += 1
                lo = at
            else:
                break
        if at < len(bins) and bins[at][0] == v:
            bins[at][1] += 1
            return
        bins.insert(at, [v, 1.0])
        if len(bins) > self.nb:
            self._trim()

    def _trim(self) -> None:
        bins = self.bins
        while len(bins) > self.nb:
            smallest = bins[1][0] - bins[0][0]
            where, ties = 0, 1
            for i in range(1, len(bins) - 1):
                diff = bins[i + 1][0] - bins[i][0]
                if diff < smallest:
                    smallest, where, ties = diff, i, 1
                elif diff == smallest:
                    ties += 1
                    if self.random.next_double() <= 1.0 / ties:
                        where = i
            left, right = bins[where], bins[where + 1]
            d = left[1] + right[1]
            left[0] *= left[1] / d
            left[0] += right[0] / d * right[1]
            left[1] = d
            del bins[where + 1]


def histogram_numeric(call: WindowCall):
    """The kernel of ``histogram_numeric(x, nb)``: ARRAY<STRUCT<x, y: DOUBLE>> (x of the argument's
    type), NULL for a frame without values."""
    nb = call.params[0]

    def run(inp):
        return histograms(inp.values, inp.mask, inp.frames, nb, running(call))

    return run


def histograms(values: Values, mask: np.ndarray, frames: Frames, nb: int, running: bool) -> pa.Array:
    x = spark_doubles(values)
    n = len(frames.start)
    bins: list[list[list[float]]] = [[] for _ in range(n)]
    offsets, taken = frame_rows(frames, mask) if not running else (None, None)
    if running:
        before = prefix_count(mask)
        taking = np.flatnonzero(mask)
        histogram, done = None, 0
        for r, fresh in replays(frames, True):
            s, e = int(before[frames.start[r]]), int(before[frames.end[r]])
            if fresh:
                histogram, done = Histogram(nb), s
            for v in x[taking[done:e]].tolist():
                histogram.add(v)
            done = max(done, e)
            bins[r] = [list(b) for b in histogram.bins]
    else:
        for r in range(n):
            rows = x[taken[offsets[r] : offsets[r + 1]]]
            bins[r] = _quick_bins(rows, nb) or _replayed_bins(rows, nb)
    sizes = np.array([len(b) for b in bins], dtype=np.int64)
    flat_x = np.array([b[0] for rows in bins for b in rows], dtype=np.float64)
    flat_y = np.array([b[1] for rows in bins for b in rows], dtype=np.float64)
    xs = from_doubles(flat_x, np.ones(len(flat_x), bool), values.type, values.kind, rounded_text=True)
    items = pa.StructArray.from_arrays([xs, pa.array(flat_y)], names=["x", "y"])
    offsets_out = pa.array(np.concatenate(([0], np.cumsum(sizes))).astype(np.int32))
    return pa.ListArray.from_arrays(offsets_out, items, mask=pa.array(sizes == 0))


def _quick_bins(rows: np.ndarray, nb: int) -> list | None:
    """A frame's bins without replaying: its distinct values (the first -0.0 or 0.0 met) and their
    counts, when there are at most nb of them and no NaN (which never equals a bin)."""
    if not len(rows):
        return []
    if np.isnan(rows).any():
        return None
    distinct, first, counts = np.unique(rows, return_index=True, return_counts=True)
    if len(distinct) > nb:
        return None
    return [[float(rows[f]), float(c)] for f, c in zip(first, counts)]


def _replayed_bins(rows: np.ndarray, nb: int) -> list:
    histogram = Histogram(nb)
    for v in rows.tolist():
        histogram.add(v)
    return histogram.bins
