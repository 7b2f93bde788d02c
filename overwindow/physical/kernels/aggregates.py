"""Distributive and algebraic aggregates over frames, vectorised.

count by prefix counts; sum/avg by exact limb prefix sums (overwindow.physical.exact; sum by two float64
prefix columns where the column's bit span allows, correctly rounded all the same; DECIMAL sums and
averages exact in DECIMAL, overwindow.physical.decimals); variances by
exact sums of x and x^2 combined in double-double; bool_and/bool_or by counts; min/max by a sparse
table (O(n log w) to build for frames up to w rows, O(1) per frame). NaN and infinities are counted
apart so they follow IEEE rules without disturbing the exact sums.

>>> f = Frames([(np.array([0, 0]), np.array([2, 3]))])
>>> v = Values(pa.array([1e20, 1.0, -1e20]))
>>> sum_(v, v.valid, f).to_pylist()
[1e+20, 1.0]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overwindow.errors import WindowRuntimeError
from overwindow.physical import decimals
from overwindow.physical.blocks import chunks
from overwindow.physical.bounds import Frames
from overwindow.physical.exact import LimbPrefix, SplitPrefix, dd_div_d, dd_mul, dd_sub, n_times_m2, two_prod
from overwindow.physical.values import (
    INTERVAL_DAY_TO_SECOND,
    INTERVAL_LIMIT,
    MICROS_PER_TICK,
    TypeFamily,
    Values,
    sql_type,
)


def prefix_count(mask: np.ndarray) -> np.ndarray:
    out = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=out[1:])
    return out


def frame_counts(mask: np.ndarray, frames: Frames) -> np.ndarray:
    """Participating rows per frame (just the frame sizes when every row takes part)."""
    return frames.size() if mask.all() else frames.count(prefix_count(mask))


def count(values: Values | None, mask: np.ndarray, frames: Frames) -> pa.Array:
    return pa.array(frame_counts(mask, frames))


class _FloatSums:
    """Exact frame sums of the finite participating values, with NaN/+inf/-inf counts. ``split``:
    frame sums only (no means), so the two-part prefix serves where the column allows it."""

    def __init__(self, x: np.ndarray, mask: np.ndarray, frames: Frames, split: bool = False):
        finite = np.isfinite(x)
        self.n = frame_counts(mask, frames)
        self.special = not (finite | ~mask).all()  # NaN or an infinity takes part somewhere
        if self.special:
            self.nan = frames.count(prefix_count(mask & np.isnan(x)))
            self.pinf = frames.count(prefix_count(mask & (x == np.inf)))
            self.ninf = frames.count(prefix_count(mask & (x == -np.inf)))
        finite_x = x if not self.special and mask.all() else np.where(mask & finite, x, 0.0)
        self.limbs = (split and SplitPrefix.of_floats(finite_x)) or LimbPrefix.of_floats(finite_x)
        self.frames = frames

    def nonfinite(self, total: np.ndarray) -> np.ndarray:
        if not self.special:
            return total
        total = np.where(self.pinf > 0, np.inf, total)
        total = np.where(self.ninf > 0, -np.inf, total)
        return np.where((self.nan > 0) | ((self.pinf > 0) & (self.ninf > 0)), np.nan, total)


def _int_sums(values: Values, mask: np.ndarray, frames: Frames, name: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.where(mask, values.numbers, 0)
    n = frames.count(prefix_count(mask))
    if len(x) == 0 or int(np.abs(x).max(initial=0)) < (2**62) // max(len(x), 1):
        return frames.count(np.concatenate(([0], np.cumsum(x)))), n
    total, fits = LimbPrefix.of_ints(x).frame_int(frames.parts)
    if not fits[n > 0].all():
        raise bigint_overflow(name)
    return total, n


def bigint_overflow(name: str) -> WindowRuntimeError:
    """The error of an integer sum past the int64 range (the fast and the reference path alike)."""
    return WindowRuntimeError(f"{name} overflows BIGINT (use a DOUBLE argument for larger sums)")


def sum_(values: Values, mask: np.ndarray, frames: Frames, name: str = "sum") -> pa.Array:
    if values.kind is TypeFamily.DECIMAL:
        return decimals.frame_sums(*values.words, mask, frames, frame_counts(mask, frames), values.type, name)
    if values.kind is TypeFamily.FLOAT:
        s = _FloatSums(values.numbers, mask, frames, split=True)
        total = s.nonfinite(s.limbs.frame_sum(frames.parts))
        return pa.array(total, mask=s.n == 0)
    total, n = _int_sums(values, mask, frames, name)
    if values.kind is TypeFamily.INTERVAL:
        return pa.array(_within_interval(total, n, values.type, name), mask=n == 0).cast(values.type)
    return pa.array(total, mask=n == 0)


def _within_interval(total: np.ndarray, n: np.ndarray, t: pa.DurationType, name: str) -> np.ndarray:
    """Interval sums (in ``t``'s ticks) that Spark's long of microseconds holds; a WindowRuntimeError
    as Spark's ANSI mode fails on the others."""
    if (np.abs(total[n > 0]) > INTERVAL_LIMIT[t.unit]).any():
        raise WindowRuntimeError(f"{name} overflows {sql_type(t)} (Spark: ARITHMETIC_OVERFLOW)")
    return total


def _interval_mean(
    values: Values, mask: np.ndarray, frames: Frames, null_on_overflow: bool = False
) -> pa.Array:
    """avg of a day-time interval as Spark computes it: the exact sum in microseconds over the count,
    rounded half up (away from zero), an INTERVAL DAY TO SECOND. O(n).

    >>> v = Values(pa.array([86400, 0, 0, 0, 0, 0, 0], pa.duration("s")))  # INTERVAL DAY: 1, six 0
    >>> f = Frames([(np.zeros(7, np.int64), np.full(7, 7))])
    >>> avg(v, np.ones(7, bool), f).to_pylist()[0]  # 12342857142.857 microseconds, rounded
    datetime.timedelta(seconds=12342, microseconds=857143)
    """
    if null_on_overflow:  # try_avg: a frame whose running sum overflows is NULL
        total, keep = _running_sums(values, mask, frames)
        n = frames.count(prefix_count(mask))
    else:
        total, n = _int_sums(values, mask, frames, "avg")
        keep = n > 0
    micros = (
        _within_interval(np.where(keep, total, 0), n, values.type, "avg") * MICROS_PER_TICK[values.type.unit]
    )
    whole, rest = np.divmod(np.abs(micros), np.maximum(n, 1))
    mean = np.sign(micros) * (whole + (2 * rest >= np.maximum(n, 1)))
    return pa.array(mean, mask=~keep).cast(INTERVAL_DAY_TO_SECOND)


def avg(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    if values.kind is TypeFamily.DECIMAL:
        return decimals.frame_means(
            *values.words, mask, frames, frame_counts(mask, frames), values.type, "avg"
        )
    if values.kind is TypeFamily.FLOAT:
        s = _FloatSums(values.numbers, mask, frames)
        mean = s.limbs.frame_mean(frames.parts, np.maximum(s.n, 1))
        return pa.array(s.nonfinite(mean), mask=s.n == 0)
    if values.kind is TypeFamily.INT:
        x = np.where(mask, values.numbers, 0)
        n = frames.count(prefix_count(mask))
        mean = LimbPrefix.of_ints(x).frame_mean(frames.parts, np.maximum(n, 1))
        return pa.array(mean, mask=n == 0)
    if values.kind is TypeFamily.INTERVAL:
        return _interval_mean(values, mask, frames)
    raise TypeError(values.type)


def try_sum(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """``sum``, NULL where Spark's sum overflows instead of failing: a DECIMAL frame whose sum is past
    sum's type (Spark checks the final sum), a BIGINT or INTERVAL frame whose running sum, added
    row by row in frame order from its first row, leaves the type's range at any row (Spark's TRY
    addition turns the sum NULL there for the rest of the frame). DOUBLE sums never overflow. O(n);
    O(n log w) over Python integers when a column's values could reach the range's ends."""
    if values.kind is TypeFamily.DECIMAL:
        n = frame_counts(mask, frames)
        return decimals.frame_sums(*values.words, mask, frames, n, values.type, "try_sum", True)
    if values.kind is TypeFamily.FLOAT:
        return sum_(values, mask, frames)
    total, ok = _running_sums(values, mask, frames)
    return pa.array(total, mask=~ok).cast(values.type if values.kind is TypeFamily.INTERVAL else pa.int64())


def try_avg(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """``avg``, NULL where Spark's average overflows instead of failing: a DECIMAL frame whose sum is
    past sum's type, an INTERVAL frame whose running sum leaves its range (as ``try_sum``). Spark
    averages integers through DOUBLE sums, which do not overflow. O(n)."""
    if values.kind is TypeFamily.DECIMAL:
        n = frame_counts(mask, frames)
        return decimals.frame_means(*values.words, mask, frames, n, values.type, "try_avg", True)
    if values.kind is not TypeFamily.INTERVAL:
        return avg(values, mask, frames)
    return _interval_mean(values, mask, frames, null_on_overflow=True)


def _running_sums(values: Values, mask: np.ndarray, frames: Frames) -> tuple[np.ndarray, np.ndarray]:
    """(frame sums as int64, whether the frame's running sum stayed in range at every row) of an
    integer or interval column (the range: int64, or the microseconds Spark's interval holds)."""
    x = np.where(mask, values.numbers, 0)
    n = frames.count(prefix_count(mask))
    limit = INTERVAL_LIMIT[values.type.unit] if values.kind is TypeFamily.INTERVAL else 2**63 - 1
    lowest = -limit - (values.kind is not TypeFamily.INTERVAL)
    if float(np.abs(x.astype(np.float64)).sum()) < 2.0**62 and limit == 2**63 - 1:
        return frames.count(np.concatenate(([0], np.cumsum(x)))), n > 0  # no sum can leave int64
    # exact running sums in Python integers: the frame overflows where, within one of its parts,
    # the largest (smallest) prefix past the part's start leaves the range
    prefix = np.concatenate(([0], np.cumsum(x.astype(object))))
    after = prefix[1:]
    base = np.zeros(len(n), dtype=object)
    over = np.zeros(len(n), dtype=bool)
    for s, e in frames.parts:
        start = prefix[s]
        some = e > s
        high = sparse_table_reduce(after, Frames([(s, e)]), np.maximum, -(2**200))
        low = sparse_table_reduce(after, Frames([(s, e)]), np.minimum, 2**200)
        over |= some & ((base + high - start > limit) | (base + low - start < lowest))
        base = base + prefix[e] - start
    ok = (n > 0) & ~over
    return np.array([int(v) if keep else 0 for v, keep in zip(base, ok)], dtype=np.int64), ok


def _bits(values: Values, mask: np.ndarray, frames: Frames, op) -> pa.Array:
    """bit_and / bit_or over every frame (idempotent, so a sparse table serves): O(n log w)."""
    identity = -1 if op is np.bitwise_and else 0
    out = sparse_table_reduce(np.where(mask, values.numbers, identity), frames, op, identity)
    return values.from_numbers(out, frame_counts(mask, frames) > 0)


def bit_and(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    return _bits(values, mask, frames, np.bitwise_and)


def bit_or(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    return _bits(values, mask, frames, np.bitwise_or)


def bit_xor(values: Values, mask: np.ndarray, frames: Frames) -> pa.Array:
    """XOR over every frame from prefix XORs (XOR undoes itself, so frames slide): O(n)."""
    p = np.concatenate(([0], np.bitwise_xor.accumulate(np.where(mask, values.numbers, 0))))
    out = np.zeros(len(frames.start), dtype=np.int64)
    for s, e in frames.parts:
        out ^= p[e] ^ p[s]
    return values.from_numbers(out, frame_counts(mask, frames) > 0)


def _moments(values: Values, mask: np.ndarray, frames: Frames):
    """(n, M2 / 4**k, nonfinite, k) per frame: M2 = sum((x - mean)^2) from exact sums of x and x^2,
    combined in double-double in units of 2**k, k the exponent of the frame's largest |x|.

    k is 0 unless the column holds some 0 < |x| <= 2**-450 or |x| >= 2**450. Then squares are
    summed as m^2 * 4**e (x = m * 2**e, 0.5 <= |m| < 1), so no square over- or underflows
    (var_pop of [1e160, 1e160] was NaN, stddev_samp of [5.7e-265, 0] was 0), and each frame works
    at its own scale, so neither s1^2 nor s2 overflow and a frame of small values keeps its
    precision beside a frame of huge ones (a column-wide scale would push their squares below the
    double range).
    """
    x = values.numbers.astype(np.float64)
    ok = mask & np.isfinite(x)
    xf = np.where(ok, x, 0.0)
    n = frames.count(prefix_count(mask))
    bad = frames.count(prefix_count(mask & ~np.isfinite(x))) > 0
    parts2 = [(2 * s, 2 * e) for s, e in frames.parts]  # x^2 as two rows: square and its rounding error
    mag = np.abs(xf)
    s1 = LimbPrefix.of_floats(xf)
    if mag.max(initial=0.0) < 2.0**450 and mag[mag > 0].min(initial=1.0) > 2.0**-450:
        # the usual case: no square, sum or squared sum can over- or underflow; one scale for all
        k = None
        sq, sq_err = two_prod(xf, xf)
        s2 = LimbPrefix.of_floats(np.stack([sq, sq_err], axis=1).ravel())
    else:
        k = np.frexp(sparse_table_reduce(mag, frames, np.maximum, 0.0))[1].astype(np.int64)
        m, e = np.frexp(xf)
        sq, sq_err = two_prod(m, m)  # m * m exactly, both parts normal doubles (or 0)
        s2 = LimbPrefix.of_floats(
            np.stack([sq, sq_err], axis=1).ravel(), np.repeat(2 * e.astype(np.int64), 2)
        )
    s1h, s1l = s1.frame_dd(frames.parts, scale=k)
    s2h, s2l = s2.frame_dd(parts2, scale=None if k is None else 2 * k)
    nf = np.maximum(n, 1).astype(np.float64)
    ph, pl = dd_mul(s1h, s1l, s1h, s1l)
    qh, ql = dd_div_d(ph, pl, nf)
    mh, ml = dd_sub(s2h, s2l, qh, ql)
    m2 = np.where(n > 1, np.maximum(mh + ml, 0.0), 0.0)
    # S2 - S1^2/n cancels when the values are close together relative to their size (var_samp of
    # [1e16, 1e16 + 2, 1e16 + 4] came out 5, not 4): where fewer than ~45 of the double-double's
    # 106 bits survive, recompute those frames exactly on the limbs
    shaky = np.flatnonzero((n > 1) & (m2 <= s2h * 2.0**-60))
    if len(shaky):
        sub = frames.take(shaky)
        th, tl = n_times_m2(
            s1,
            sub.parts,
            s2,
            [(2 * s, 2 * e) for s, e in sub.parts],
            n[shaky],
            None if k is None else 2 * k[shaky],
        )
        m2[shaky] = np.maximum(dd_div_d(th, tl, nf[shaky])[0], 0.0)
    return n, m2, bad, np.zeros(len(n), dtype=np.int64) if k is None else k


def _variance(values, mask, frames, sample: bool, root: bool) -> pa.Array:
    n, m2, bad, k = _moments(values, mask, frames)
    denom = (n - 1) if sample else n
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        var = m2 / np.maximum(denom, 1)
        var = np.where(bad, np.nan, var)
        # the root before scaling back: stddev of [1e200, -1e200] is 1.4e200 though its variance overflows
        out = np.ldexp(np.sqrt(var), k) if root else np.ldexp(var, 2 * k)
    return pa.array(out, mask=denom <= 0)


def var_samp(values, mask, frames):
    return _variance(values, mask, frames, True, False)


def var_pop(values, mask, frames):
    return _variance(values, mask, frames, False, False)


def stddev_samp(values, mask, frames):
    return _variance(values, mask, frames, True, True)


def stddev_pop(values, mask, frames):
    return _variance(values, mask, frames, False, True)


def _bool_counts(values, mask, frames):
    truth = mask & values.numbers.astype(bool)
    return frames.count(prefix_count(truth)), frames.count(prefix_count(mask))


def bool_and(values, mask, frames):
    t, n = _bool_counts(values, mask, frames)
    return pa.array(t == n, mask=n == 0)


def bool_or(values, mask, frames):
    t, n = _bool_counts(values, mask, frames)
    return pa.array(t > 0, mask=n == 0)


def sparse_table_reduce(x: np.ndarray, frames: Frames, op, identity) -> np.ndarray:
    """``op``-reduction (np.minimum or np.maximum) of x over every frame; identity for empty ones.

    Frames are taken in blocks of CHUNK rows; a block builds a sparse table over just the rows its
    frames cover (level j: the reduction of 2**j consecutive values, stacked into one array), and a
    frame of width w is two overlapping lookups at level floor(log2 w), one gather for the whole
    block. The block's table stays in cache. O(n log w_max) time, O(CHUNK log w_max) extra memory
    for frames of bounded width (a block's table spans what its frames span).
    """
    out = np.full(len(frames.start), identity, dtype=x.dtype)
    for s, e in frames.parts:
        for rows in chunks(len(s)):
            ss, ee = s[rows], e[rows]
            width = ee - ss
            some = width > 0
            if not some.any():
                continue
            lo, hi = int(ss[some].min()), int(ee[some].max())
            width = np.where(some, width, 1)
            first = np.where(some, ss, lo) - lo  # empty frames read row lo; masked below
            level = np.frexp(width.astype(np.float64))[1].astype(np.int64) - 1  # floor(log2 w)
            table = _levels(x[lo:hi], op, identity, int(width.max()))
            stride = table.shape[1]
            flat = table.ravel()
            got = op(flat[level * stride + first], flat[level * stride + first + width - (1 << level)])
            out[rows] = np.where(some, op(out[rows], got), out[rows])
    return out


def _levels(x: np.ndarray, op, identity, w_max: int) -> np.ndarray:
    """Sparse table of x: row j holds the reductions of x[i : i + 2**j] (identity past the end),
    for 2**j <= w_max."""
    depth = max(int(w_max).bit_length(), 1)
    table = np.full((depth, len(x)), identity, dtype=x.dtype)
    table[0] = x
    for j in range(1, depth):
        half = 1 << (j - 1)
        op(table[j - 1, :-half], table[j - 1, half:], out=table[j, : len(x) - half])
    return table


def _min_max(values: Values, mask: np.ndarray, frames: Frames, is_min: bool) -> pa.Array:
    op = np.minimum if is_min else np.maximum
    n = frame_counts(mask, frames)
    if values.kind is TypeFamily.FLOAT and values.exact_numbers:
        x = values.numbers
        nan = mask & np.isnan(x)
        ident = np.inf if is_min else -np.inf
        out = sparse_table_reduce(np.where(mask & ~nan, x, ident), frames, op, ident)
        if nan.any():  # counted only when some NaN takes part
            n_nan = frames.count(prefix_count(nan))
            out = np.where(n_nan == n, np.nan, out) if is_min else np.where(n_nan > 0, np.nan, out)
        return pa.array(out, mask=n == 0).cast(values.type)
    if values.kind.is_integral and values.exact_numbers:
        ii = np.iinfo(np.int64)
        ident = ii.max if is_min else ii.min
        out = sparse_table_reduce(np.where(mask, values.numbers, ident), frames, op, ident)
        return values.from_numbers(out, n > 0)
    codes = values.codes
    ident = np.iinfo(np.int64).max if is_min else -1
    out = sparse_table_reduce(np.where(mask, codes, ident), frames, op, ident)
    return values.take_codes(np.where(n > 0, out, -1))


def min_(values, mask, frames):
    return _min_max(values, mask, frames, True)


def max_(values, mask, frames):
    return _min_max(values, mask, frames, False)


KERNELS = {
    "count": count,
    "count_star": count,
    "sum": sum_,
    "avg": avg,
    "var_samp": var_samp,
    "var_pop": var_pop,
    "stddev_samp": stddev_samp,
    "stddev_pop": stddev_pop,
    "bool_and": bool_and,
    "bool_or": bool_or,
    "min": min_,
    "max": max_,
    "try_sum": try_sum,
    "try_avg": try_avg,
    "bit_and": bit_and,
    "bit_or": bit_or,
    "bit_xor": bit_xor,
}
