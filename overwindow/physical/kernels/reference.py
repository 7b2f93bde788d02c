"""Reference implementations of the built-in aggregates as plain Python aggregates.

Run through the naive kernel they recompute every frame from scratch in the most obvious way
(exact rational sums, sorting for percentiles); every fast kernel is tested against them.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np


class _Collect:
    """State: the frame's values as a list; subclasses define ``final(values)``."""

    result_type = None

    def __init__(self, call):
        self.call = call

    def create(self):
        return []

    def update(self, state, values):
        return state + list(values)

    def evaluate(self, state):
        return self.final(state)


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
        if isinstance(v[0], (int, np.integer)) and not isinstance(s, float):
            return int(s)
        return float(s)


class Avg(_Collect):
    def final(self, v):
        if not v:
            return None
        s = _exact_sum(v)
        return s if isinstance(s, float) else float(s / len(v))


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
        var = float(sum((x - mean) ** 2 for x in exact) / (n - sample))
        return math.sqrt(var) if self.call.function.startswith("stddev") else var


def _sort_key(x):
    return (1, 0) if isinstance(x, float) and math.isnan(x) else (0, x)


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
        many = isinstance(fractions, tuple)
        out = [self._one(s, p) for p in (fractions if many else (fractions,))]
        return out if many else out[0]

    def _one(self, s, p):
        n = len(s)
        if self.call.function == "percentile_disc":
            # the first value whose cumulative distribution i/n reaches p (not ceil(p * n): 0.55 *
            # 100 rounds to 55.000000000000007)
            return s[next((i for i in range(1, n + 1) if i / n >= p), n) - 1]
        pos = p * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        if pos == lo or s[lo] == s[hi]:
            return float(s[lo])
        return float(s[lo]) + (pos - lo) * (float(s[hi]) - float(s[lo]))


class Mode(_Collect):
    def final(self, v):
        if not v:
            return None
        counts = Counter(v)
        top = max(counts.values())
        return min((x for x, c in counts.items() if c == top), key=_sort_key)


class CountDistinct(_Collect):
    def final(self, v):
        return len(set(v))


REFERENCE = {
    "count": Count, "count_star": Count, "sum": Sum, "avg": Avg,
    "var_samp": Variance, "var_pop": Variance, "stddev_samp": Variance, "stddev_pop": Variance,
    "min": Min, "max": Max, "bool_and": BoolAnd, "bool_or": BoolOr, "median": Percentile,
    "percentile_cont": Percentile, "percentile_disc": Percentile, "mode": Mode, "count_distinct": CountDistinct,
}
