"""Exact sliding sums of floats and integers, and double-double arithmetic, all vectorised.

Every finite double is an integer times a power of two, so a column of doubles is written exactly as
fixed-point integers split into 32-bit limbs; prefix sums of the limbs in int64 are exact, and a
frame's sum is the difference of two prefix rows, normalised and correctly rounded. So
``1e20 + 1 - 1e20`` is 1 in any frame, however large the partition. Cost: O(n * limbs), where limbs
is about (bit range of the column) / 32: 3 for values in [1e-6, 1000). Elementwise work runs in
blocks of rows (physical/blocks.py).

>>> p = LimbPrefix.of_floats(np.array([1e20, 1.0, -1e20]))
>>> float(p.frame_sum([(np.array([0]), np.array([3]))])[0])
1.0
"""

from __future__ import annotations

import numpy as np

from overwindow.physical.blocks import chunks

W = 32
MASK = (1 << W) - 1
# 4480 bits of range, enough for every double and every square of one (2**2048 .. 2**-2148, plus
# the square's rounding error); bits further below the largest value would be truncated. 1280 was
# too few for the variance kernel, which sums squares and their rounding errors: a column holding
# 1e38 and 1e-136 spans 2**257 .. 2**-950 there, and a frame of only the small values lost 1e-8 of
# its variance. Only such columns pay for the extra limbs (up to ~2 KB a row for a column holding
# both 1e300 and 1e-300): the table is sized by the column's actual range.
MAX_LIMBS = 140


class LimbPrefix:
    """Exact prefix sums, as int64 limbs, of a column of finite doubles (or int64s).

    ``prefix`` has shape (limbs, n + 1); the value of a prefix column is sum_j limb_j * 2**(32*j + base).
    """

    def __init__(self, prefix: np.ndarray, base: int):
        self.prefix = prefix
        self.base = base

    @staticmethod
    def of_floats(
        x: np.ndarray, exp_shift: np.ndarray | None = None, max_limbs: int = MAX_LIMBS
    ) -> LimbPrefix:
        """Of the values ``x * 2**exp_shift`` (exp_shift: per-row integers; lets a caller sum
        values a double cannot hold, such as squares of 1e200). ``max_limbs``: the widest table
        (sums of cubes and fourth powers span up to four times the doubles' range)."""
        x = np.asarray(x, dtype=np.float64)
        if exp_shift is None:
            # the column's bits lie in [2**base, 2**top): from its largest and smallest magnitude
            mag = np.abs(x)
            largest = float(mag.max(initial=0.0))
            if largest == 0.0:
                return LimbPrefix(np.zeros((1, len(x) + 1), dtype=np.int64), 0)
            top = int(np.frexp(largest)[1])
            base = int(np.frexp(float(mag.min(where=mag > 0, initial=np.inf)))[1]) - 53
            levels = -(-(top - base) // W)
            # every scale 2**-(base + 32*level) a double, and x * 2**-base below DBL_MAX
            if top - base <= 1000 and -1022 <= base and base + W * levels <= 1022:
                return LimbPrefix._of_float_digits(x, base, levels)
        m, e = np.frexp(x)
        mant = (m * 2.0**53).astype(np.int64)  # exact: |m| < 1
        lsb = e.astype(np.int64) - 53
        if exp_shift is not None:
            lsb = lsb + np.asarray(exp_shift, dtype=np.int64)
        nz = mant != 0
        if not nz.any():
            return LimbPrefix(np.zeros((1, len(x) + 1), dtype=np.int64), 0)
        top = int(lsb[nz].max()) + 53
        base = max(int(lsb[nz].min()), top - W * (max_limbs - 3))
        shift = lsb - base
        low = shift < 0  # beyond the limb range: truncate the lowest bits
        if low.any():
            mant = np.where(low, np.sign(mant) * (np.abs(mant) >> np.minimum(-shift, 63)), mant)
            shift = np.where(low, 0, shift)
        return LimbPrefix._prefix(mant, shift, base, int(shift.max()) // W)

    @staticmethod
    def _of_float_digits(x: np.ndarray, base: int, levels: int) -> LimbPrefix:
        """The limbs ``_prefix`` would scatter, by float arithmetic alone, for a column whose bits
        all lie in [base, base + 32*levels) within ~1000 bits: t_j = trunc(x * 2**-(base + 32*j)) is
        exact (scaling by a power of two, then dropping the bits below limb j), and limb j is
        t_j - t_(j+1) * 2**32, an integer below 2**32 whose exact difference a double holds; signed
        like x. O(n * levels) in blocks of rows, no scatter: about five times faster."""
        table = np.empty((levels, len(x) + 1), dtype=np.int64)
        table[:, 0] = 0
        for rows in chunks(len(x)):
            xs, upper = x[rows], None
            for j in range(levels - 1, -1, -1):
                t = np.trunc(xs * 2.0 ** -(base + W * j))
                table[j, 1 + rows.start : 1 + rows.stop] = t if upper is None else t - upper * 2.0**W
                upper = t
        np.cumsum(table, axis=1, out=table)
        return LimbPrefix(table, base)

    @staticmethod
    def of_ints(x: np.ndarray) -> LimbPrefix:
        x = np.asarray(x, dtype=np.int64)
        return LimbPrefix._prefix(x, np.zeros(len(x), dtype=np.int64), 0, 0)

    @staticmethod
    def _prefix(mant: np.ndarray, shift: np.ndarray, base: int, top_limb: int) -> LimbPrefix:
        n = len(mant)
        limbs = top_limb + 3  # the three limbs a value may touch (limbs() adds one for carries)
        neg = mant < 0
        mag = np.abs(mant).astype(np.uint64)  # |int64 min| wraps to 2**63 as uint64: still exact
        j = shift // W
        r = (shift % W).astype(np.uint64)
        a = (mag & np.uint64(MASK)) << r
        b = (mag >> np.uint64(W)) << r
        carry = (a >> np.uint64(W)) + b
        parts = (a & np.uint64(MASK), carry & np.uint64(MASK), carry >> np.uint64(W))
        # one row per limb, so each limb's prefix sum runs over contiguous memory; a value writes
        # limbs j, j+1, j+2 of its own column, so plain assignment never collides
        table = np.zeros((limbs, n + 1), dtype=np.int64)
        flat = table.reshape(-1)
        column = np.arange(1, n + 1)
        for k, part in enumerate(parts):
            v = part.astype(np.int64)
            flat[(j + k) * (n + 1) + column] = np.where(neg, -v, v)
        np.cumsum(table, axis=1, out=table)
        return LimbPrefix(table, base)

    def limbs(self, parts) -> np.ndarray:
        """Exact sums over frames given as (start, end) parts, as normalised limbs (one row per
        limb plus one for the carries, one column per frame)."""
        d = np.zeros((self.prefix.shape[0] + 1, len(parts[0][0])), dtype=np.int64)
        for s, e in parts:
            d[:-1] += np.take(self.prefix, e, axis=1)
            d[:-1] -= np.take(self.prefix, s, axis=1)
        return _normalise(d)

    def frame_dd(self, parts, scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Frame sums as double-doubles (hi, lo); with ``scale`` (per frame), of sum * 2**-scale."""
        m = len(parts[0][0])
        hi, lo = np.empty(m), np.empty(m)
        for rows in chunks(m):
            hi[rows], lo[rows] = self._frame_dd(
                [(s[rows], e[rows]) for s, e in parts], None if scale is None else scale[rows]
            )
        return hi, lo

    def _frame_dd(self, parts, scale: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        d = self.limbs(parts)
        sign = np.ones(d.shape[1])
        # a negative sum is normalised as -2**(32*top) plus positive limbs: huge cancelling terms
        # that overflow once scaled up (the variance of [0, -2e-313], scaled by 2**1038, came out
        # NaN) and that a double-double cannot cancel when the table spans more than its 106 bits
        # (the mean of a frame holding only -3.3e-307, in a column that also holds 1e308, came out
        # 0.0); take magnitudes so every limb is a positive part of the value
        neg = d[-1] < 0
        if neg.any():
            d[:, neg] = -d[:, neg]
            _normalise(d)
            sign = np.where(neg, -1.0, 1.0)
        hi = np.zeros(d.shape[1])
        lo = np.zeros(d.shape[1])
        for j in range(d.shape[0] - 1, -1, -1):
            if d[j].any():  # most columns leave their top limbs empty
                exp = W * j + self.base if scale is None else W * j + self.base - scale
                hi, lo = dd_add_d(hi, lo, _pow2(d[j].astype(np.float64), exp))
        return hi * sign, lo * sign

    def frame_mean(self, parts, count: np.ndarray) -> np.ndarray:
        """Frame sums divided by ``count`` (per frame, > 0), rounded from the double-double quotient.
        O(frames * limbs)."""
        out = np.empty(len(count))
        # only a table reaching near DBL_MAX can overflow (a sum past it, or a top limb's term)
        near_max = self.base + W * (self.prefix.shape[0] + 1) > 1000
        for rows in chunks(len(count)):
            block = [(s[rows], e[rows]) for s, e in parts]
            n = count[rows].astype(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                hi, lo = self._frame_dd(block, None)
                mean = dd_div_d(hi, lo, n)[0]
            if near_max:
                # an overflowed frame (NaN or inf, though its mean is finite): its sum scaled by
                # 2**-128 cannot overflow, and the bits the scaling pushes below the double range
                # are far under the double-double's 106 bits of a sum that large
                big = np.flatnonzero(~np.isfinite(mean))
                if len(big):
                    hi, lo = self._frame_dd([(s[big], e[big]) for s, e in block], np.full(len(big), 128))
                    mean[big] = np.ldexp(dd_div_d(hi, lo, n[big])[0], 128)
            out[rows] = mean
        return out

    def frame_sum(self, parts) -> np.ndarray:
        """Frame sums as doubles, correctly rounded from the exact value."""
        out = np.empty(len(parts[0][0]))
        for rows in chunks(len(out)):
            out[rows] = self._rounded(self.limbs([(s[rows], e[rows]) for s, e in parts]))
        return out

    def _rounded(self, d: np.ndarray) -> np.ndarray:
        """Normalised limbs (one column per value) rounded to the nearest double, ties to even.

        A double-double of all the limbs drops the bits past its 106 and can turn a sum just below
        a tie into the tie (0.1 + 0.1 + 0.1 - 8e-235 rounded up to 0.30000000000000004). Instead:
        magnitudes, the top three limbs from the highest nonzero one (65 to 96 bits, which a
        double-double holds exactly), and round to odd: if any lower limb is nonzero, set the lowest
        kept bit. Rounding that to 53 bits gives the correctly rounded sum (round to odd at 2 or
        more extra bits, Boldo and Melquiond).

        Usually (a column spanning at most 96 bits, far from DBL_MAX) every nonzero limb lies in the
        three highest nonzero rows; those rows are then every column's kept limbs, with no sticky
        bit, and the per-column selection is skipped: a column whose own top is lower starts with
        exact zeros, which leave the double-double as it was (two_sum(0, a) is (a, 0), and adding
        0 to a two_sum result changes nothing), so the result is the same bit for bit."""
        neg = d[-1] < 0
        if neg.any():
            d[:, neg] = -d[:, neg]
            _normalise(d)
        used = [j for j in range(d.shape[0]) if d[j].any()]  # the carry row is usually empty
        exps = W * np.arange(d.shape[0]) + self.base
        # Near DBL_MAX the top limb's term alone can overflow, and the double-double then makes
        # inf - inf = NaN. Such columns are rounded scaled by 2**-128 (exact: far from underflow)
        # and scaled back at the end, which overflows to inf exactly when IEEE rounding of the
        # exact sum does: rounding to 53 bits is the same at either scale.
        near_max = exps[-1] + W > 1000
        # a multiply by 2**exp where every 2**exp is a double; else ldexp (over- and underflow)
        scale = np.ldexp(1.0, exps) if not near_max and bool((np.abs(exps) <= 1022).all()) else None
        if scale is not None and (not used or used[0] >= used[-1] - 2):
            down = None
            h = used[-1] if used else 0
            zero = np.zeros(d.shape[1])
            first, second, third = (
                d[j].astype(np.float64) * scale[j] if j >= 0 else zero for j in (h, h - 1, h - 2)
            )
        else:
            # highest and lowest nonzero limb per column (all-zero columns: 0 and past the top)
            top = np.zeros(d.shape[1], dtype=np.int64)
            low = np.full(d.shape[1], d.shape[0], dtype=np.int64)
            for j in used:
                top[d[j] != 0] = j
            for j in reversed(used):
                low[d[j] != 0] = j
            col = np.arange(d.shape[1])
            limb3 = d[np.maximum(top - 2, 0), col] * (top >= 2)
            limb3 |= low < top - 2  # the sticky bit: a nonzero limb below the three kept
            down = np.where(exps[top] + W > 1000, 128, 0) if near_max else None

            def term(limb, j):
                v = limb.astype(np.float64)
                if scale is not None:
                    return v * scale[j]
                return np.ldexp(v, exps[j] if down is None else exps[j] - down)

            limb2 = d[np.maximum(top - 1, 0), col] * (top >= 1)
            first, second = term(d[top, col], top), term(limb2, np.maximum(top - 1, 0))
            third = term(limb3, np.maximum(top - 2, 0))
        hi, lo = two_sum(first, second)
        hi, lo = dd_add_d(hi, lo, third)
        total = hi + lo
        if down is not None:
            with np.errstate(over="ignore"):
                total = np.ldexp(total, down)
        return np.where(neg, -total, total)

    def frame_int(self, parts) -> tuple[np.ndarray, np.ndarray]:
        """Frame sums of an int64 column: (int64 values, fits-in-int64 mask)."""
        d = self.limbs(parts)
        total = d[0].copy()
        fits = np.ones(d.shape[1], dtype=bool)
        wide = np.flatnonzero(d[1:].any(axis=0)) if d.shape[0] > 1 else np.zeros(0, dtype=np.int64)
        if len(wide):  # rare: exact Python integers for the frames whose sum needs the upper limbs
            for i in wide.tolist():
                value = sum(int(d[j, i]) << (W * j) for j in range(d.shape[0]))
                fits[i] = -(2**63) <= value < 2**63
                total[i] = value if fits[i] else 0
        return total, fits


class SplitPrefix:
    """Exact prefix sums of a column of finite doubles as two float64 prefix columns, for columns
    whose bits span few enough places for their row count; the limb table takes the others.

    Each value is split into a high part, a multiple of 2**c, and the low rest (both exact), c chosen
    so that every prefix sum of either part fits in 53 bits and so is exact in float64: that holds
    when the column's bits span at most 106 - 2 * ceil(log2(n + 1)) places (88 for 300 rows; values
    rounded to 6 decimals between 1e-6 and 10 span about 76). A frame's exact sum is then H + L, two
    doubles each computed exactly, and one IEEE addition rounds it correctly: the same double the limb
    table gives, for a dozen numpy calls instead of about ninety (streaming steps evaluate a buffer of
    a few hundred rows per key and call, where that fixed cost dominated). O(n).

    >>> p = SplitPrefix.of_floats(np.array([0.1, 0.2, 0.3]))
    >>> float(p.frame_sum([(np.array([0]), np.array([3]))])[0]) == 0.6  # 0.1 + 0.2 + 0.3, rounded once
    True
    """

    def __init__(self, high: np.ndarray, low: np.ndarray):
        self.high, self.low = high, low

    @staticmethod
    def of_floats(x: np.ndarray) -> SplitPrefix | None:
        """The split prefix of ``x`` (finite), or None when its bit span is too wide for it."""
        x = np.asarray(x, dtype=np.float64)
        mag = np.abs(x)
        largest = float(mag.max(initial=0.0))
        room = int(len(x) + 1).bit_length()  # bits the sum of n values adds above the largest
        if largest == 0.0:
            zeros = np.zeros(len(x) + 1)
            return SplitPrefix(zeros, zeros)
        top = int(np.frexp(largest)[1])  # every |value| < 2**top
        base = (
            int(np.frexp(float(mag.min(where=mag > 0, initial=np.inf)))[1]) - 53
        )  # every value a multiple of 2**base
        c = top + room - 53  # high parts: multiples of 2**c below 2**top, n of them sum below 2**53 * 2**c
        if c + room - base > 53 or not (-1000 < base and -1000 < c and top + room <= 1000):
            return None  # the low parts would not sum exactly, or a scale or sum leaves the normal range
        high = np.trunc(x * 2.0**-c) * 2.0**c
        out = np.empty((2, len(x) + 1))
        out[:, 0] = 0.0
        np.cumsum(high, out=out[0, 1:])
        np.cumsum(x - high, out=out[1, 1:])
        return SplitPrefix(out[0], out[1])

    def frame_sum(self, parts) -> np.ndarray:
        """Frame sums as doubles, correctly rounded from the exact value."""
        high = low = 0.0
        for s, e in parts:  # every partial total stays a sum of at most n parts: exact
            high = high + (self.high[e] - self.high[s])
            low = low + (self.low[e] - self.low[s])
        return high + low


def _normalise(d: np.ndarray, bits: int = W) -> np.ndarray:
    """Carry digits (rows, in place) so every digit but the top is in [0, 2**bits); the value is
    kept. Limbs are base 2**32 (``W``); the variance's squares use base 2**16 (``H``)."""
    for j in range(d.shape[0] - 1):
        c = d[j] >> bits
        d[j] -= c << bits
        d[j + 1] += c
    return d


def _pow2(v: np.ndarray, exp) -> np.ndarray:
    """v * 2**exp: one multiply where 2**exp is a double (np.ldexp is ten times slower)."""
    if np.ndim(exp) == 0 and -1022 <= exp <= 1023:
        return v * 2.0**exp
    return np.ldexp(v, exp)


# --- exact n * sum(x^2) - sum(x)^2, for variances that cancel -----------------------------------

H = 16
HMASK = (1 << H) - 1


def _digits(limbs: np.ndarray) -> np.ndarray:
    """Normalised non-negative 32-bit limbs (rows) as base-2**16 digits, with room to spare."""
    out = np.zeros((2 * limbs.shape[0] + 2, limbs.shape[1]), dtype=np.int64)
    out[0 : 2 * limbs.shape[0] : 2] = limbs & HMASK
    out[1 : 2 * limbs.shape[0] : 2] = limbs >> H
    return _normalise(out, H)


def _times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Digit-wise product (convolution) of two digit arrays, not normalised: every entry is a sum
    of at most min(len) products below 2**32, far from int64's limit."""
    out = np.zeros((a.shape[0] + b.shape[0], a.shape[1]), dtype=np.int64)
    for i in range(a.shape[0]):
        if a[i].any():
            out[i : i + b.shape[0]] += a[i] * b
    return out


def _shifted(c: np.ndarray, bits: int, length: int) -> np.ndarray:
    """c * 2**bits as ``length`` digits (bits >= 0; entries stay below 2**57)."""
    q, r = divmod(bits, H)
    out = np.zeros((length, c.shape[1]), dtype=np.int64)
    out[q : q + c.shape[0]] = c << r
    return out


def n_times_m2(
    s1: LimbPrefix, parts1, s2: LimbPrefix, parts2, n: np.ndarray, scale: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """n * S2 - S1**2 per frame (S1, S2: the exact frame sums of x and of x^2, from ``s1`` over
    ``parts1`` and ``s2`` over ``parts2``), computed exactly on the limbs and rounded once to a
    double-double (times 2**-scale). That is n times the sum of squared deviations, without the
    cancellation that leaves a double-double with nothing of the variance of [1e16, 1e16 + 2,
    1e16 + 4]. O(limbs**2) vector operations per call."""
    a = _digits(_normalise_abs(s1.limbs(parts1)))  # S1**2 only needs |S1|
    sq1 = _times(a, a)
    b = _digits(_normalise_abs(s2.limbs(parts2)))  # S2 >= 0
    nd = _digits(np.asarray(n, dtype=np.int64)[None, :])
    ns2 = _times(nd, b)
    base = min(2 * s1.base, s2.base)
    length = max(sq1.shape[0] + (2 * s1.base - base) // H, ns2.shape[0] + (s2.base - base) // H) + 2
    t = _shifted(ns2, s2.base - base, length) - _shifted(sq1, 2 * s1.base - base, length)
    _normalise(t, H)
    hi = np.zeros(t.shape[1])
    lo = np.zeros(t.shape[1])
    for j in range(t.shape[0] - 1, -1, -1):
        if t[j].any():
            exp = H * j + base if scale is None else H * j + base - scale
            hi, lo = dd_add_d(hi, lo, _pow2(t[j].astype(np.float64), exp))
    return hi, lo


def _normalise_abs(d: np.ndarray) -> np.ndarray:
    """|value| of normalised signed limbs, normalised again (every limb in [0, 2**32))."""
    return _normalise(np.where(d[-1] < 0, -d, d))


# --- double-double arithmetic (Dekker / Knuth), vectorised -------------------------------------


def two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a, b):
    s = a + b
    return s, b - (s - a)


def _split(a):
    # Dekker's split multiplies by 2**27 + 1, which overflows to inf above ~1.3e300 (and then
    # two_prod gives NaN, e.g. in var_pop of [1e150, 1e150], whose s1^2/n is 2e300): split such
    # values scaled down by 2**-28 and scale the halves back, which is exact
    big = np.abs(a) > 2.0**996
    s = np.where(big, a * 2.0**-28, a)
    c = 134217729.0 * s
    hi = c - (c - s)
    lo = s - hi
    return np.where(big, hi * 2.0**28, hi), np.where(big, lo * 2.0**28, lo)


def two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def dd_add_d(hi, lo, b):
    s, e = two_sum(hi, b)
    return fast_two_sum(s, e + lo)


def dd_sub(ah, al, bh, bl):
    s, e = two_sum(ah, -bh)
    return fast_two_sum(s, e + al - bl)


def dd_mul(ah, al, bh, bl):
    p, e = two_prod(ah, bh)
    return fast_two_sum(p, e + (ah * bl + al * bh))


def dd_div_d(ah, al, b):
    q1 = ah / b
    p, e = two_prod(q1, b)
    s, f = two_sum(ah, -p)
    q2 = (s + (f - e + al)) / b
    return fast_two_sum(q1, q2)
