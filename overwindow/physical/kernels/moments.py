"""Higher and joint moments over frames: skewness, kurtosis, covar_pop, covar_samp, corr and the
regression statistics regr_sxx, regr_syy, regr_sxy, regr_slope, regr_intercept and regr_r2.

Arguments are read as DOUBLE, as Spark casts them. Per frame the power sums (S1 = sum x, S2 =
sum x^2, ..., Sxy = sum x*y) are exact: every product of doubles is written exactly as a few doubles
(``two_prod``), summed by exact limb prefix sums (overwindow.physical.exact), so a frame's sums are
differences of two prefix rows and sliding frames never recompute. From them the central sums

    A2 = n S2 - S1^2 = n * sum (x - mean)^2            C = n Sxy - Sx Sy
    A3 = n^2 S3 - 3 n S1 S2 + 2 S1^3 = n^2 * sum (x - mean)^3
    K = A4 - 3 A2^2, with A4 = n^3 S4 - 4 n^2 S1 S3 + 6 n S1^2 S2 - 3 S1^4 = n^3 * sum (x - mean)^4

are formed in double-double, each frame's sums scaled by a power of two near its largest value (so
neither huge nor tiny frames over- or underflow), and the statistics are ratios of them (skewness =
A3 / A2^1.5, kurtosis = K / A2^2, corr = C / sqrt(Ax Ay), ...). Where a central sum cancels so
far that a double-double keeps fewer than about 50 of its bits (values close together relative to
their size, constant frames), that frame is computed exactly in rationals from the limbs. So the
results are the exact statistic rounded (to within an ulp or two), where Spark's one-pass DOUBLE
updates lose them (``covar_pop`` of 1e16 + [0, 2, 4] beside itself). Frames holding NaN or an
infinity give NaN, as Spark's updates do, and Spark's NULLs are kept: no rows; covar_samp and corr
of one row; skewness, kurtosis, regr_slope and regr_intercept where x does not vary (A2 = 0);
regr_r2 is NULL there and 1 where y does not vary.

Cost: O(n * limbs) for the prefix sums (limbs: the column's bit range over 32, about 3 to 10), O(n)
double-double work per frame, and O(limbs) Python work for each frame computed exactly.

>>> f = Frames([(np.array([0]), np.array([4]))])
>>> x = Values(pa.array([1.0, 2.0, 3.0, 10.0]))
>>> round(skewness((x,), np.ones(4, bool), f).to_pylist()[0], 12)
1.018233764909
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa

from overwindow.physical.bounds import Frames
from overwindow.physical.exact import MAX_LIMBS, LimbPrefix, dd_mul, dd_sub, two_prod
from overwindow.physical.kernels.aggregates import prefix_count, sparse_table_reduce
from overwindow.physical.kernels.collections import frame_rows
from overwindow.physical.values import Values

_SAFE = (2.0**-180, 2.0**240)  # x^4 and its rounding errors stay normal doubles
_SHAKY = 2.0**-50  # a central sum below this times its largest term is recomputed exactly


class _Column:
    """One argument over the participating rows: its doubles (0 where not finite or not taking part),
    per frame its nonfinite count and a scale exponent k (the frame's largest |x| is below 2**k), and
    exact prefix sums of its powers, built on demand."""

    def __init__(self, values: Values, mask: np.ndarray, frames: Frames):
        x = values.numbers.astype(np.float64)
        finite = np.isfinite(x)
        self.raw = x  # as Spark reads them: its updates over frames holding NaN or inf (_replay)
        self.x = np.where(mask & finite, x, 0.0)
        self.frames = frames
        self.bad = frames.count(prefix_count(mask & ~finite)) > 0
        mag = np.abs(self.x)
        self.k = np.frexp(sparse_table_reduce(mag, frames, np.maximum, 0.0))[1].astype(np.int64)
        nonzero = mag[mag > 0]
        self.safe = not len(nonzero) or (nonzero.min() > _SAFE[0] and nonzero.max() < _SAFE[1])
        self._powers: dict[int, LimbPrefix] = {}

    def power(self, k: int) -> tuple[LimbPrefix, int]:
        """Exact prefix sums of x**k (k = 1..4), and the terms per row."""
        if k not in self._powers:
            self._powers[k] = _prefix(*_power_terms(self.x, k, self.safe), k)
        return self._powers[k]


def _power_terms(x: np.ndarray, k: int, safe: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """x**k exactly, as doubles per row (shape (n, terms)) and per-row power-of-two shifts (None when
    ``safe``: the terms are x**k's own; else they are m**k of x = m * 2**e and shifted by k*e)."""
    if safe:
        m, shift = x, None
    else:
        m, e = np.frexp(x)
        shift = k * e.astype(np.int64)
    if k == 1:
        return m[:, None], shift
    p, q = two_prod(m, m)
    if k == 2:
        return np.stack([p, q], axis=1), shift
    if k == 3:
        return np.stack([*two_prod(p, m), *two_prod(q, m)], axis=1), shift
    pq = two_prod(p, q)
    return np.stack([*two_prod(p, p), 2 * pq[0], 2 * pq[1], *two_prod(q, q)], axis=1), shift


def _product_terms(a: _Column, b: _Column) -> tuple[np.ndarray, np.ndarray | None]:
    """x*y exactly, as two doubles per row (and shifts, as ``_power_terms``)."""
    if a.safe and b.safe:
        return np.stack(two_prod(a.x, b.x), axis=1), None
    ma, ea = np.frexp(a.x)
    mb, eb = np.frexp(b.x)
    return np.stack(two_prod(ma, mb), axis=1), (ea + eb).astype(np.int64)


def _prefix(terms: np.ndarray, shift: np.ndarray | None, degree: int) -> tuple[LimbPrefix, int]:
    """Exact prefix sums over the rows' terms (``width`` consecutive entries per row) of a power of
    the values of ``degree`` (its range of bits is up to ``degree`` times the doubles')."""
    width = terms.shape[1]
    shifts = None if shift is None else np.repeat(shift, width)
    prefix = LimbPrefix.of_floats(terms.ravel(), shifts, max_limbs=MAX_LIMBS * max(degree, 2) // 2)
    return prefix, width


def _parts(w: int, frames: Frames, rows=None) -> list:
    parts = frames.parts if rows is None else [(s[rows], e[rows]) for s, e in frames.parts]
    return [(w * s, w * e) for s, e in parts]


class _Sums:
    """Per frame: n, and the named sums as double-doubles scaled by 2**-scale (their degree times the
    frame's scale exponents), plus exact access for a subset of frames."""

    def __init__(self, frames: Frames, n: np.ndarray):
        self.frames = frames
        self.n = n
        self.prefixes: dict[str, tuple[LimbPrefix, int]] = {}
        self.dd: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, name: str, prefix: tuple[LimbPrefix, int], scale: np.ndarray) -> None:
        self.prefixes[name] = prefix
        self.dd[name] = prefix[0].frame_dd(_parts(prefix[1], self.frames), scale=scale)

    def exact(self, name: str, rows: np.ndarray) -> list[Fraction]:
        """The named sums of the frames ``rows``, exactly."""
        prefix, width = self.prefixes[name]
        d = prefix.limbs(_parts(width, self.frames, rows))
        total = np.zeros(d.shape[1], dtype=object)
        for j in range(d.shape[0] - 1, -1, -1):
            total = total * (1 << 32) + d[j].astype(object)
        unit = Fraction(2) ** prefix.base
        return [Fraction(int(t)) * unit for t in total]


def _dd_scaled(h, lo, c: float):
    return dd_mul(h, lo, np.full_like(h, c), np.zeros_like(h))


def _dd_times(a, b):
    return dd_mul(a[0], a[1], b[0], b[1])


def _dd_n(n: np.ndarray):
    return n.astype(np.float64), np.zeros(len(n))


def _combine(terms) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """sum of coefficient * product of double-doubles, and each frame's largest |term| (to tell how
    much the sum cancelled)."""
    total = largest = None
    for coef, factors in terms:
        prod = factors[0]
        for f in factors[1:]:
            prod = _dd_times(prod, f)
        prod = _dd_scaled(prod[0], prod[1], float(coef))
        size = np.abs(prod[0])
        if total is None:
            total, largest = prod, size
        else:
            total = dd_sub(total[0], total[1], -prod[0], -prod[1])
            largest = np.maximum(largest, size)
    return total, largest


def _shaky(value, largest) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~(np.abs(value[0]) > largest * _SHAKY)


# --- the central sums, as polynomials of the power sums: (coefficient, [power of n, sums]) --------
# each term: coefficient * n**j * product of named sums; the degree of every term is the same
CENTRAL = {
    "A2": [(1, 1, ("S2",)), (-1, 0, ("S1", "S1"))],
    "A3": [(1, 2, ("S3",)), (-3, 1, ("S1", "S2")), (2, 0, ("S1", "S1", "S1"))],
    "K": [
        (1, 3, ("S4",)),
        (-4, 2, ("S1", "S3")),
        (-3, 2, ("S2", "S2")),
        (12, 1, ("S1", "S1", "S2")),
        (-6, 0, ("S1",) * 4),
    ],
    "Ax": [(1, 1, ("Sxx",)), (-1, 0, ("Sx", "Sx"))],
    "Ay": [(1, 1, ("Syy",)), (-1, 0, ("Sy", "Sy"))],
    "C": [(1, 1, ("Sxy",)), (-1, 0, ("Sx", "Sy"))],
    "N": [(1, 0, ("Sy", "Sxx")), (-1, 0, ("Sx", "Sxy"))],  # regr_intercept's numerator, times A2
}


def central(sums: _Sums, name: str):
    """The central sum ``name`` per frame (a double-double, in the sums' scaled units), and the
    frames where it cancelled too far to trust."""
    n = _dd_n(sums.n)
    terms = [(c, [n] * j + [sums.dd[s] for s in names]) for c, j, names in CENTRAL[name]]
    value, largest = _combine(terms)
    return value, _shaky(value, largest)


def exact_central(sums: _Sums, name: str, rows: np.ndarray) -> list[Fraction]:
    """The central sum ``name`` of the frames ``rows``, exactly (unscaled)."""
    needed = {s for _, _, names in CENTRAL[name] for s in names}
    values = {s: sums.exact(s, rows) for s in needed}
    n = sums.n[rows]
    out = []
    for i in range(len(rows)):
        total = Fraction(0)
        for c, j, names in CENTRAL[name]:
            term = Fraction(c * int(n[i]) ** j)
            for s in names:
                term *= values[s][i]
            total += term
        out.append(total)
    return out


def to_double(q: Fraction) -> float:
    """A rational rounded to the nearest double, +-inf past the double range."""
    try:
        return float(q)
    except OverflowError:
        return float("inf") if q > 0 else float("-inf")


def _sqrt_ratio(num: Fraction, den: Fraction) -> float:
    """sqrt(num / den) for num, den >= 0, from the rounded ratio (within an ulp)."""
    return float(np.sqrt(to_double(num / den))) if den else float("nan")


# --- the univariate and bivariate setups ----------------------------------------------------------


def _univariate(values: Values, mask: np.ndarray, frames: Frames, degree: int):
    col = _Column(values, mask, frames)
    sums = _Sums(frames, frames.count(prefix_count(mask)))
    for j in range(1, degree + 1):
        sums.add(f"S{j}", col.power(j), j * col.k)
    return col, sums


def _bivariate(args: tuple[Values, ...], mask: np.ndarray, frames: Frames, names: set[str]):
    y, x = (_Column(v, mask, frames) for v in args[:2])  # Spark's (y, x): dependent first
    sums = _Sums(frames, frames.count(prefix_count(mask)))
    wanted = {"Sx": (x, 1), "Sy": (y, 1), "Sxx": (x, 2), "Syy": (y, 2)}
    for name in names & set(wanted):
        col, j = wanted[name]
        sums.add(name, col.power(j), j * col.k)
    if "Sxy" in names:
        sums.add("Sxy", _prefix(*_product_terms(x, y), 2), x.k + y.k)
    return y, x, sums


def _resolve(sums: _Sums, name: str, some: np.ndarray):
    """The central sum ``name``: (double-double in scaled units, frames to compute exactly)."""
    value, shaky = central(sums, name)
    return value, np.flatnonzero(shaky & some)


def _finish(name: str, out, null, cols: list[_Column], mask, frames, reads=None) -> pa.Array:
    """The results, where a frame holds NaN or an infinity among the values ``name`` reads
    (``reads``, else every argument's) replaced by Spark's own DOUBLE updates over the arguments
    (``cols``) in frame order (``_replay``): their NaN, infinity or NULL is Spark's answer there.
    O(frame size) per such frame."""
    bad = np.zeros(len(out), dtype=bool)
    for c in reads or cols:
        bad |= c.bad
    rows = np.flatnonzero(bad)
    if len(rows):
        offsets, taken = frame_rows(frames.take(rows), mask)
        for i, r in enumerate(rows.tolist()):
            at = taken[offsets[i] : offsets[i + 1]]
            got = _replay(name, *(c.raw[at] for c in cols))
            null[r] = got is None
            out[r] = np.nan if got is None else got
    return pa.array(out, mask=null)


def _div(a: float, b: float) -> float | None:
    """Spark's DOUBLE division inside these aggregates: NULL for a zero divisor."""
    return None if b == 0 else float(np.float64(a) / np.float64(b))


def _sqrt(v: float) -> float:
    return float(np.sqrt(np.float64(v)))


def _moments_of(xs, order: int):
    """Spark's CentralMomentAgg updates: (n, mean, m2, m3, m4)."""
    n = avg = m2 = m3 = m4 = np.float64(0.0)
    for x in xs:
        new_n = n + 1.0
        delta = x - avg
        delta_n = delta / new_n
        avg = avg + delta_n
        new_m2 = m2 + delta * (delta - delta_n)
        delta2, delta_n2 = delta * delta, delta_n * delta_n
        new_m3 = m3 - 3.0 * delta_n * new_m2 + delta * (delta2 - delta_n2) if order >= 3 else m3
        if order >= 4:
            m4 = (
                m4
                - 4.0 * delta_n * new_m3
                - 6.0 * delta_n2 * new_m2
                + delta * (delta * delta2 - delta_n * delta_n2)
            )
        n, m2, m3 = new_n, new_m2, new_m3
    return n, avg, m2, m3, m4


def _co_moments_of(xs, ys):
    """Spark's Corr updates (Covariance's are their first four): (n, xAvg, yAvg, ck, xMk, yMk)."""
    n = x_avg = y_avg = ck = x_mk = y_mk = np.float64(0.0)
    for x, y in zip(xs, ys):
        new_n = n + 1.0
        dx, dy = x - x_avg, y - y_avg
        x_avg, y_avg = x_avg + dx / new_n, y_avg + dy / new_n
        ck = ck + dx * (y - y_avg)
        x_mk = x_mk + dx * (x - x_avg)
        y_mk = y_mk + dy * (y - y_avg)
        n = new_n
    return n, x_avg, y_avg, ck, x_mk, y_mk


def _replay(name: str, first, second=None) -> float | None:
    """Spark's answer for one frame from its one-pass DOUBLE updates and final expressions (its
    NULLs where a divisor is 0). ``first``, ``second``: the frame's values of the call's arguments
    in frame order (as DOUBLE)."""
    with np.errstate(all="ignore"):
        if name in ("skewness", "kurtosis"):
            n, _, m2, m3, m4 = _moments_of(first.astype(np.float64), 3 if name == "skewness" else 4)
            if n == 0 or m2 == 0:
                return None
            if name == "skewness":
                return _div(_sqrt(n) * m3, _sqrt(m2 * m2 * m2))
            q = _div(n * m4, m2 * m2)
            return None if q is None else q - 3.0
        y, x = first.astype(np.float64), second.astype(np.float64)  # (y, x) as Spark's regr_ take them
        if name in ("regr_sxx", "regr_syy"):
            n, _, m2, _, _ = _moments_of(x if name == "regr_sxx" else y, 2)
            return None if n == 0 else float(m2)
        if name in ("covar_pop", "covar_samp", "corr"):
            n, _, _, ck, x_mk, y_mk = _co_moments_of(y, x)  # covar_pop(a, b): a in x's role
            if n == 0 or (n == 1 and name != "covar_pop"):
                return None
            if name == "corr":  # NULL where either variable does not vary (measured against Spark)
                return None if x_mk == 0 or y_mk == 0 else _div(ck, _sqrt(x_mk * y_mk))
            return _div(ck, n if name == "covar_pop" else n - 1.0)
        if name == "regr_sxy":
            n, _, _, ck, _, _ = _co_moments_of(y, x)
            return None if n == 0 else float(ck)
        n, x_avg, y_avg, ck, x_mk, y_mk = _co_moments_of(x, y)
        if name == "regr_r2":
            if x_mk == 0:
                return None
            if y_mk == 0:
                return 1.0
            r = _div(ck, _sqrt(x_mk * y_mk))
            return None if r is None else r * r
        m2 = _moments_of(x, 2)[2]
        if m2 == 0:
            return None
        slope = ck / m2
        return float(slope) if name == "regr_slope" else float(y_avg - slope * x_avg)


def skewness(args, mask, frames) -> pa.Array:
    """Spark's skewness: sqrt(n) m3 / m2^1.5 = A3 / A2^1.5; NULL without rows or where x does not vary."""
    return _shape(args, mask, frames, 3)


def kurtosis(args, mask, frames) -> pa.Array:
    """Spark's kurtosis: n m4 / m2^2 - 3 = K / A2^2; NULL without rows or where x does not vary."""
    return _shape(args, mask, frames, 4)


def _shape(args, mask, frames, degree: int) -> pa.Array:
    col, sums = _univariate(args[0], mask, frames, degree)
    some = sums.n > 0
    a2, redo2 = _resolve(sums, "A2", some)
    name = "A3" if degree == 3 else "K"
    top, redo = _resolve(sums, name, some)
    with np.errstate(all="ignore"):
        out = top[0] / (a2[0] * np.sqrt(a2[0])) if degree == 3 else top[0] / (a2[0] * a2[0])
    zero = a2[0] == 0
    rows = np.union1d(redo2, redo)
    if len(rows):
        for i, r, t in zip(rows.tolist(), exact_central(sums, "A2", rows), exact_central(sums, name, rows)):
            zero[i] = r == 0
            if r == 0:
                continue
            if degree == 3:
                out[i] = (1 if t >= 0 else -1) * _sqrt_ratio(t * t, r**3)
            else:
                out[i] = to_double(t / (r * r))
    return _finish("skewness" if degree == 3 else "kurtosis", out, ~some | zero, [col], mask, frames)


def _moments2(args, mask, frames, names: set[str]):
    y, x, sums = _bivariate(args, mask, frames, names)
    return y, x, sums, sums.n > 0


def covar_pop(args, mask, frames) -> pa.Array:
    """C / n^2; NULL without rows."""
    return _covariance(args, mask, frames, sample=False)


def covar_samp(args, mask, frames) -> pa.Array:
    """C / (n (n - 1)); NULL with fewer than two rows."""
    return _covariance(args, mask, frames, sample=True)


def _covariance(args, mask, frames, sample: bool) -> pa.Array:
    y, x, sums, some = _moments2(args, mask, frames, {"Sx", "Sy", "Sxy"})
    n = sums.n.astype(np.float64)
    c, redo = _resolve(sums, "C", some)
    denom = n * (n - 1) if sample else n * n
    with np.errstate(all="ignore"):
        out = np.ldexp(c[0] / denom, x.k + y.k)
    for i, v in zip(redo.tolist(), exact_central(sums, "C", redo)):
        out[i] = to_double(v / int(denom[i])) if denom[i] else 0.0
    null = (sums.n < 2) if sample else ~some
    return _finish("covar_samp" if sample else "covar_pop", out, null, [y, x], mask, frames)


def regr_sxy(args, mask, frames) -> pa.Array:
    """C / n: n times covar_pop; NULL without rows."""
    y, x, sums, some = _moments2(args, mask, frames, {"Sx", "Sy", "Sxy"})
    c, redo = _resolve(sums, "C", some)
    with np.errstate(all="ignore"):
        out = np.ldexp(c[0] / np.maximum(sums.n, 1), x.k + y.k)
    for i, v in zip(redo.tolist(), exact_central(sums, "C", redo)):
        out[i] = to_double(v / int(sums.n[i]))
    return _finish("regr_sxy", out, ~some, [y, x], mask, frames)


def regr_sxx(args, mask, frames) -> pa.Array:
    """Ax / n: the sum of squared deviations of x over the pairs; NULL without rows."""
    return _sum_of_squares(args, mask, frames, "x")


def regr_syy(args, mask, frames) -> pa.Array:
    """Ay / n: the sum of squared deviations of y over the pairs; NULL without rows."""
    return _sum_of_squares(args, mask, frames, "y")


def _sum_of_squares(args, mask, frames, which: str) -> pa.Array:
    names = {"Sx", "Sxx"} if which == "x" else {"Sy", "Syy"}
    y, x, sums, some = _moments2(args, mask, frames, names)
    col, name = (x, "Ax") if which == "x" else (y, "Ay")
    a, redo = _resolve(sums, name, some)
    with np.errstate(all="ignore"):
        out = np.ldexp(a[0] / np.maximum(sums.n, 1), 2 * col.k)
    for i, v in zip(redo.tolist(), exact_central(sums, name, redo)):
        out[i] = to_double(v / int(sums.n[i]))
    return _finish(f"regr_s{which * 2}", out, ~some, [y, x], mask, frames, reads=[col])


def corr(args, mask, frames) -> pa.Array:
    """C / sqrt(Ax Ay); NULL with fewer than two rows or where x or y does not vary."""
    return _correlation(args, mask, frames, squared=False)


def regr_r2(args, mask, frames) -> pa.Array:
    """corr^2, NULL where x does not vary and 1 where y does not (Spark's regr_r2)."""
    return _correlation(args, mask, frames, squared=True)


def _correlation(args, mask, frames, squared: bool) -> pa.Array:
    y, x, sums, some = _moments2(args, mask, frames, {"Sx", "Sy", "Sxx", "Syy", "Sxy"})
    c, redo_c = _resolve(sums, "C", some)
    ax, redo_x = _resolve(sums, "Ax", some)
    ay, redo_y = _resolve(sums, "Ay", some)
    with np.errstate(all="ignore"):
        r = c[0] / (np.sqrt(ax[0]) * np.sqrt(ay[0]))
        out = r * r if squared else r
    zx, zy = ax[0] == 0, ay[0] == 0
    rows = np.union1d(np.union1d(redo_c, redo_x), redo_y)
    if len(rows):
        exact = [exact_central(sums, name, rows) for name in ("C", "Ax", "Ay")]
        for i, cv, xv, yv in zip(rows.tolist(), *exact):
            zx[i], zy[i] = xv == 0, yv == 0
            if xv and yv:
                r2 = cv * cv / (xv * yv)
                out[i] = to_double(r2) if squared else (1 if cv >= 0 else -1) * _sqrt_ratio(cv * cv, xv * yv)
    if squared:  # Spark: NULL where x does not vary, else 1 where y does not, else corr^2
        null = ~some | zx
        return _finish("regr_r2", np.where(zy & ~null, 1.0, out), null, [y, x], mask, frames)
    return _finish("corr", out, (sums.n < 2) | zx | zy, [y, x], mask, frames)


def regr_slope(args, mask, frames) -> pa.Array:
    """C / Ax; NULL where x does not vary (or no rows)."""
    return _regression(args, mask, frames, intercept=False)


def regr_intercept(args, mask, frames) -> pa.Array:
    """(Sy Sxx - Sx Sxy) / Ax: mean(y) - slope * mean(x); NULL where x does not vary."""
    return _regression(args, mask, frames, intercept=True)


def _regression(args, mask, frames, intercept: bool) -> pa.Array:
    names = {"Sx", "Sy", "Sxx", "Sxy"}
    y, x, sums, some = _moments2(args, mask, frames, names)
    ax, redo_x = _resolve(sums, "Ax", some)
    top_name = "N" if intercept else "C"
    top, redo_t = _resolve(sums, top_name, some)
    with np.errstate(all="ignore"):
        out = np.ldexp(top[0] / ax[0], y.k if intercept else y.k - x.k)
    zx = ax[0] == 0
    rows = np.union1d(redo_x, redo_t)
    if len(rows):
        exact = zip(rows.tolist(), exact_central(sums, "Ax", rows), exact_central(sums, top_name, rows))
        for i, xv, tv in exact:
            zx[i] = xv == 0
            if xv:
                out[i] = to_double(tv / xv)
    name = "regr_intercept" if intercept else "regr_slope"
    return _finish(name, out, ~some | zx, [y, x], mask, frames)
