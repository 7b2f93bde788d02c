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
