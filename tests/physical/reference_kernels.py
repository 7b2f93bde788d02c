"""Reference implementations of the built-in aggregates as plain Python aggregates: the test oracle
of the fast aggregate kernels, outside the product.

Run through the naive kernel they recompute every frame from scratch in the most obvious way
(exact rational sums, sorting for percentiles); every fast kernel is tested against them.
Frame values are taken as Python objects (ints, floats, dates), so integer arithmetic is exact.
``evaluate_naive`` is ``overwindow.evaluate`` with every built-in aggregate on this path (through
the planner's test seam, ``REFERENCE_AGGREGATE``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pyarrow as pa

from overwindow import evaluate
from overwindow.physical import planner
from overwindow.physical.kernels.aggregates import bigint_overflow


class _Collect:
    """State: the frame's values as a list; subclasses define ``final(values)``."""

    result_type = None

    def __init__(self, call):
        self.call = call

    def create(self):
        return []

    def update(self, state, values):
        return state + _python_values(values)

    def evaluate(self, state):
        return self.final(state)


_EPOCH = dt.date(1970, 1, 1)


def _python_values(values) -> list:
    """Frame values as Python objects: ints (numpy int64 scalars wrap past 2**63), floats, bools,
    DATEs as datetime.date (which pyarrow turns back into a DATE result); other types as given."""
    if isinstance(values, np.ndarray) and (
        values.dtype.kind in "biuf" or values.dtype == np.dtype("datetime64[D]")
    ):
        return values.tolist()
    return list(values)


def _to_double(q) -> float:
    """An exact rational rounded to the nearest double (Python's int / int rounds correctly), or
    +-inf past the double range, as IEEE rounding overflows (float() raises OverflowError)."""
    try:
        return float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.inf


def _exact_sum(vals):
    if any(isinstance(v, float) and math.isnan(v) for v in vals):
        return math.nan
    pos = any(v == math.inf for v in vals)
    neg = any(v == -math.inf for v in vals)
    if pos and neg:
        return math.nan
    if pos or neg:
        return math.inf if pos else -math.inf
    return sum((Fraction(v) for v in vals), Fraction(0))


class Count(_Collect):
    def final(self, v):
        return len(v)


class Sum(_Collect):
    def final(self, v):
        if not v:
            return None
        s = _exact_sum(v)
        if isinstance(v[0], decimal.Decimal):
            return _decimal(s, v[0])
        if isinstance(v[0], int) and not isinstance(s, float):
            if not -(2**63) <= s < 2**63:
                raise bigint_overflow(self.call.function)
            return int(s)
        return _to_double(s)


class Avg(_Collect):
    def final(self, v):
        if not v:
            return None
        s = _exact_sum(v)
        if isinstance(v[0], decimal.Decimal):  # Spark: 4 more places, rounded half up
            return _decimal(s / len(v), v[0], 4)
        return s if isinstance(s, float) else float(s / len(v))


def _decimal(q: Fraction, like: decimal.Decimal, more_places: int = 0) -> decimal.Decimal:
    """The exact rational ``q`` as a Decimal with ``more_places`` more places than ``like``, rounded
    half up (away from zero), as Spark rounds DECIMAL results. Overflow is the caller's cast's."""
    places = -like.as_tuple().exponent + more_places
    scaled = q * 10**places
    n = math.floor(abs(scaled) + Fraction(1, 2))
    return decimal.Decimal(n if scaled >= 0 else -n).scaleb(-places)


class Variance(_Collect):
    def final(self, v):
        sample = self.call.function in ("var_samp", "stddev_samp")
        n = len(v)
        if n - sample <= 0:
            return None
        if any(not math.isfinite(x) for x in v):
            return math.nan
        exact = [Fraction(x) for x in v]
        mean = sum(exact) / n
        var = _to_double(sum((x - mean) ** 2 for x in exact) / (n - sample))
        return math.sqrt(var) if self.call.function.startswith("stddev") else var


def _sort_key(x):
    return (1, 0) if isinstance(x, float) and math.isnan(x) else (0, x)


def _one_nan(x):
    """x, with every NaN as the one object ``math.nan``: sets and dicts test identity before
    equality, so they then hold NaN once, as SQL does (NaN == NaN); -0.0 == 0.0 already."""
    return math.nan if isinstance(x, float) and math.isnan(x) else x


class Min(_Collect):
    def final(self, v):
        return min(v, key=_sort_key) if v else None


class Max(_Collect):
    def final(self, v):
        return max(v, key=_sort_key) if v else None


class BoolAnd(_Collect):
    def final(self, v):
        return all(v) if v else None


class BoolOr(_Collect):
    def final(self, v):
        return any(v) if v else None


class Percentile(_Collect):
    def final(self, v):
        if not v:
            return None
        s = sorted(v, key=_sort_key)
        fractions = self.call.params[0] if self.call.function != "median" else 0.5
        if self.call.function != "median" and self.call.params[1]:  # WITHIN GROUP (ORDER BY x DESC)
            s = s[::-1]
        many = isinstance(fractions, tuple)
        out = [self._one(s, p) for p in (fractions if many else (fractions,))]
        return out if many else out[0]

    def _one(self, s, p):
        n, p = len(s), float(p)
        if self.call.function == "percentile_disc":
            # the first value whose cumulative distribution i/n reaches p (not ceil(p * n): 0.55 *
            # 100 rounds to 55.000000000000007)
            return s[next((i for i in range(1, n + 1) if i / n >= p), n) - 1]
        pos = p * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        d = pos - lo
        if isinstance(s[lo], (dt.date, np.datetime64)):
            # DATE and TIMESTAMP: the exact point between the two in the type's own integers (days
            # since 1970-01-01, ticks of the timestamp's unit; their parity decides a tie), rounded
            # half to even
            a, b = (_ticks(x) for x in (s[lo], s[hi]))
            return _from_ticks(round(a * (1 - Fraction(d)) + b * Fraction(d)), s[lo])
        if pos == lo or s[lo] == s[hi]:
            return float(s[lo])
        # SQL's lo * (1 - d) + hi * d (Spark, DuckDB): -inf between -inf and a finite value, where
        # lo + d * (hi - lo) gives NaN
        return float(s[lo]) * (1 - d) + float(s[hi]) * d


def _ticks(x) -> int:
    """A DATE's days or a TIMESTAMP's ticks (of its own unit) since 1970-01-01."""
    return (x - _EPOCH).days if isinstance(x, dt.date) else int(x.astype(np.int64))


def _from_ticks(n: int, like):
    """The DATE or TIMESTAMP (of ``like``'s unit) ``n`` days or ticks after 1970-01-01."""
    return (
        _EPOCH + dt.timedelta(days=n)
        if isinstance(like, dt.date)
        else np.datetime64(n, np.datetime_data(like.dtype)[0])
    )


class Mode(_Collect):
    def final(self, v):
        if not v:
            return None
        counts = Counter(_one_nan(x) for x in v)
        top = max(counts.values())
        pick = max if self.call.params[0] else min  # DESC: ties go to the largest value
        return pick((x for x, c in counts.items() if c == top), key=_sort_key)


class CountDistinct(_Collect):
    def final(self, v):
        return len({_one_nan(x) for x in v})


class TrySum(_Collect):
    """Spark's try_sum: the exact sum, NULL where a BIGINT running sum, added in frame order, leaves
    its range at any row (DOUBLE sums as ``sum``)."""

    def final(self, v):
        if v and isinstance(v[0], int):
            running = 0
            for x in v:
                running += x
                if not -(2**63) <= running < 2**63:
                    return None
            return running
        return Sum(self.call).final(v)


class Bits(_Collect):
    def final(self, v):
        if not v:
            return None
        out = v[0]
        for x in v[1:]:
            out = {"bit_and": out & x, "bit_or": out | x, "bit_xor": out ^ x}[self.call.function]
        return out


def _fractions(v) -> list[Fraction] | float:
    """The values as exact rationals, or NaN where one is NaN or infinite (Spark's moments)."""
    xs = [float(x) for x in v]
    if not all(math.isfinite(x) for x in xs):
        return math.nan
    return [Fraction(x) for x in xs]


def _central(xs: list[Fraction], k: int) -> Fraction:
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** k for x in xs)


class Shape(_Collect):
    """skewness and kurtosis from exact central moments; NULL without rows or where x does not vary."""

    def final(self, v):
        if not v:
            return None
        xs = _fractions(v)
        if isinstance(xs, float):
            return xs
        n = len(xs)
        m2 = _central(xs, 2)
        if m2 == 0:
            return None
        if self.call.function == "skewness":
            m3 = _central(xs, 3)
            return (1 if m3 >= 0 else -1) * math.sqrt(_to_double(n * m3 * m3 / m2**3))
        return _to_double(n * _central(xs, 4) / (m2 * m2) - 3)


def _double_m2(values) -> float:
    """The sum of squared deviations as Spark's one-pass DOUBLE updates reach it (Welford's)."""
    n = mean = m2 = 0.0
    for v in values:
        n += 1.0
        delta = float(v) - mean
        mean += delta / n
        m2 += delta * (float(v) - mean)
    return m2


class Pairs(_Collect):
    """The two-argument statistics over (y, x) pairs, exactly: covariances, correlation and the
    regressions, with Spark's NULLs (no rows; covar_samp and corr of one row; x that does not vary,
    for corr either finite variable that does not vary) and NaN for a NaN or infinity among the
    values each one reads."""

    def final(self, v):
        f = self.call.function
        pairs = [(p["0"], p["1"]) for p in v]
        n = len(pairs)
        if f == "regr_count":
            return n
        if f in ("regr_avgx", "regr_avgy"):
            return Avg(self.call).final([p[1] if f == "regr_avgx" else p[0] for p in pairs])
        if n == 0 or (n < 2 and f in ("covar_samp", "corr")):
            return None
        ys, xs = _fractions([p[0] for p in pairs]), _fractions([p[1] for p in pairs])
        bad_x, bad_y = isinstance(xs, float), isinstance(ys, float)
        sxx = None if bad_x else _central(xs, 2)
        syy = None if bad_y else _central(ys, 2)
        if f == "regr_sxx":
            return math.nan if bad_x else _to_double(sxx)
        if f == "regr_syy":
            return math.nan if bad_y else _to_double(syy)
        if bad_x or bad_y:  # Spark tests its DOUBLE moments there, which underflow: 1e-300 is flat
            flat_x = not bad_x and _double_m2([p[1] for p in pairs]) == 0
            flat_y = not bad_y and _double_m2([p[0] for p in pairs]) == 0
        else:
            flat_x, flat_y = sxx == 0, syy == 0
        if f == "regr_r2":
            if flat_x:
                return None
            if flat_y:
                return 1.0
        if f in ("regr_slope", "regr_intercept") and flat_x:
            return None
        if f == "corr" and (flat_x or flat_y):
            return None  # Spark: NULL where either variable does not vary, before any NaN
        if bad_x or bad_y:
            return math.nan
        mx, my = sum(xs) / n, sum(ys) / n
        sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        if f == "covar_pop":
            return _to_double(sxy / n)
        if f == "covar_samp":
            return _to_double(sxy / (n - 1))
        if f == "regr_sxy":
            return _to_double(sxy)
        if f == "regr_slope":
            return _to_double(sxy / sxx)
        if f == "regr_intercept":
            return _to_double(my - sxy / sxx * mx)
        if sxx == 0 or syy == 0:  # corr
            return None
        r2 = sxy * sxy / (sxx * syy)
        return _to_double(r2) if f == "regr_r2" else (1 if sxy >= 0 else -1) * math.sqrt(_to_double(r2))


class CollectList(_Collect):
    def final(self, v):
        return list(v)


class CollectSet(_Collect):
    """The distinct values in the order of Scala's mutable.HashSet, replayed add by add: a table of
    16 buckets doubled before an add that finds 12 (24, 48, ...) elements; each bucket sorted by
    the improved hash, equal hashes in insertion order. The element hashes are Spark's (the parity
    tests check them against Spark)."""

    def final(self, v):
        from overwindow.physical.spark_hash import element_hashes

        size, table, count = 16, {}, 0
        for x in v:
            if count + 1 >= size * 3 // 4:
                size *= 2
                old = [e for b in sorted(table) for e in table[b]]
                table = {}
                for h, e in old:
                    table.setdefault(h & (size - 1), []).append((h, e))
            key = _one_nan(0.0 if isinstance(x, float) and x == 0 else x)
            h = int(element_hashes(pa.array([key]))[0]) & 0xFFFFFFFF
            h = h ^ (h >> 16)
            h = h - (1 << 32) if h >= 1 << 31 else h
            bucket = table.setdefault(h & (size - 1), [])
            if any(_same(e, key) for _, e in bucket):
                continue
            at = next((i for i, (hh, _) in enumerate(bucket) if hh > h), len(bucket))
            bucket.insert(at, (h, key))
            count += 1
        return [e for b in sorted(table) for _, e in table[b]]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


class ListAgg(_Collect):
    def final(self, v):
        if not v:
            return None
        sep = self.call.params[0] if self.call.params and self.call.params[0] is not None else ""
        return sep.join(str(x) for x in v)


class ExtremeBy(_Collect):
    """max_by / min_by: x at the largest (smallest) y, the last such pair on a tie."""

    def final(self, v):
        best = None
        for p in v:
            key = _sort_key(p["1"])
            if best is None or (key >= best[0] if self.call.function == "max_by" else key <= best[0]):
                best = (key, p["0"])
        return None if best is None else best[1]


REFERENCE = {
    "count": Count,
    "count_star": Count,
    "sum": Sum,
    "avg": Avg,
    "var_samp": Variance,
    "var_pop": Variance,
    "stddev_samp": Variance,
    "stddev_pop": Variance,
    "min": Min,
    "max": Max,
    "bool_and": BoolAnd,
    "bool_or": BoolOr,
    "median": Percentile,
    "percentile_cont": Percentile,
    "percentile_disc": Percentile,
    "mode": Mode,
    "count_distinct": CountDistinct,
    "try_sum": TrySum,
    "try_avg": Avg,  # Spark averages integers through DOUBLE sums: no overflow
    "bit_and": Bits,
    "bit_or": Bits,
    "bit_xor": Bits,
    "skewness": Shape,
    "kurtosis": Shape,
    **dict.fromkeys(
        [
            "covar_pop",
            "covar_samp",
            "corr",
            "regr_count",
            "regr_avgx",
            "regr_avgy",
            "regr_sxx",
            "regr_syy",
            "regr_sxy",
            "regr_slope",
            "regr_intercept",
            "regr_r2",
        ],
        Pairs,
    ),
    "collect_list": CollectList,
    "collect_set": CollectSet,
    "listagg": ListAgg,
    "max_by": ExtremeBy,
    "min_by": ExtremeBy,
}


@contextlib.contextmanager
def naive_path():
    """Plan every built-in aggregate on the naive kernel over its reference aggregate (user
    aggregates keep theirs, on the naive kernel too) while the block runs."""
    planner.REFERENCE_AGGREGATE = lambda call: REFERENCE[call.function](call)
    try:
        yield
    finally:
        planner.REFERENCE_AGGREGATE = None


def evaluate_naive(data, *calls):
    """``overwindow.evaluate(data, *calls)`` on the naive reference path."""
    with naive_path():
        return evaluate(data, *calls)
