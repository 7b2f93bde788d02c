"""User-defined aggregates (overwindow.udaf): registration by name, the planner's kernel choice by the
methods a class has, and results against an independent computation.

One aggregate, the sum of squares, is written three ways: create/update/evaluate only (the naive
path), plus retract (the sliding path), plus merge (the segment tree). A second one, the spread
max - min, cannot retract and is written naive and with merge. Every version must equal numpy over
each frame, where the frames come from a brute-force reading of the SQL frame definition written
here (ROWS / RANGE / GROUPS, EXCLUDE, partitions, peers) -- not from the engine.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from physical.reference_kernels import evaluate_naive, naive_path

from overwindow import Aggregate, WindowSpecError, evaluate, parse_window, register_aggregate
from overwindow.physical.planner import plan

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


# --- the aggregates ----------------------------------------------------------------------------


class SumSquaresNaive(Aggregate):
    """state: (count, sum of squares) of the values seen."""

    result_type = pa.int64()

    def create(self):
        return (0, 0)

    def update(self, state, values):
        assert isinstance(values, np.ndarray)  # the non-NULL values passing FILTER, as numpy
        v = values.astype(np.int64)
        return (state[0] + len(v), state[1] + int((v * v).sum()))

    def evaluate(self, state):
        return state[1] if state[0] else None


class SumSquaresSliding(SumSquaresNaive):
    def retract(self, state, values):
        v = values.astype(np.int64)
        return (state[0] - len(v), state[1] - int((v * v).sum()))


class SumSquaresMerge(SumSquaresNaive):
    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class SpreadNaive(Aggregate):
    """max - min; state: None or (min, max)."""

    result_type = pa.int64()

    def create(self):
        return None

    def update(self, state, values):
        if len(values) == 0:
            return state
        lo, hi = int(values.min()), int(values.max())
        return (lo, hi) if state is None else (min(state[0], lo), max(state[1], hi))

    def evaluate(self, state):
        return None if state is None else state[1] - state[0]


class SpreadMerge(SpreadNaive):
    def merge(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return (min(a[0], b[0]), max(a[1], b[1]))


class SumSquaresBoth(SumSquaresSliding, SumSquaresMerge):
    """retract and merge: the planner prefers sliding."""


NAMES = {
    "ow_test_sumsq_naive": SumSquaresNaive,
    "ow_test_sumsq_sliding": SumSquaresSliding,
    "ow_test_sumsq_merge": SumSquaresMerge,
    "ow_test_sumsq_both": SumSquaresBoth,
    "ow_test_spread_naive": SpreadNaive,
    "ow_test_spread_merge": SpreadMerge,
}


@pytest.fixture(scope="module", autouse=True)
def registered():
    for name, cls in NAMES.items():
        register_aggregate(name, cls)


def sum_squares(values: np.ndarray):
    return int((values.astype(np.int64) ** 2).sum()) if len(values) else None


def spread(values: np.ndarray):
    return int(values.max() - values.min()) if len(values) else None


SEMANTICS = {
    "ow_test_sumsq_naive": sum_squares,
    "ow_test_sumsq_sliding": sum_squares,
    "ow_test_sumsq_merge": sum_squares,
    "ow_test_sumsq_both": sum_squares,
    "ow_test_spread_naive": spread,
    "ow_test_spread_merge": spread,
}


# --- brute-force frames (the SQL definition, per row) -------------------------------------------


def sql_order(p, o):
    """Input positions in SQL order: PARTITION BY p, ORDER BY o (ASC NULLS FIRST), ties stable."""

    def key(i):
        return (
            p[i] is not None,
            p[i] if p[i] is not None else 0,
            o[i] is not None,
            o[i] if o[i] is not None else 0,
        )

    return sorted(range(len(p)), key=key)


def brute_frames(p, o, unit, start, end, exclude):
    """Per input row, the set of input rows in its frame. Bounds are ('UP'|'UF'|'CR'|('P', n)|('F', n))."""
    order = sql_order(p, o)
    out = {}
    for r in order:
        P = [q for q in order if p[q] == p[r]]  # the partition, in sort order
        i = P.index(r)
        peers = [j for j, q in enumerate(P) if o[q] == o[r]]
        values = []  # distinct order values in sort order, for GROUPS
        for q in P:
            if not values or values[-1] != o[q]:
                values.append(o[q])
        g = values.index(o[r])

        def group_span(k):
            members = [j for j, q in enumerate(P) if o[q] == values[k]]
            return members[0], members[-1]

        def bound(b, is_start):
            if b == "UP":
                return 0
            if b == "UF":
                return len(P) - 1
            if b == "CR":
                return i if unit == "ROWS" else (peers[0] if is_start else peers[-1])
            sign = -1 if b[0] == "P" else 1
            n = b[1]
            if unit == "ROWS":
                return i + sign * n
            if unit == "GROUPS":
                k = g + sign * n
                if 0 <= k < len(values):
                    return group_span(k)[0 if is_start else 1]
                if is_start:
                    return 0 if k < 0 else len(P)
                return len(P) - 1 if k >= len(values) else -1
            v = o[r]
            if v is None:  # RANGE offsets from a NULL key: its NULL peers
                return peers[0] if is_start else peers[-1]
            target = v + sign * n
            # NULLs sort first, as -infinity
            if is_start:
                hits = [j for j, q in enumerate(P) if o[q] is not None and o[q] >= target]
                return hits[0] if hits else len(P)
            hits = [j for j, q in enumerate(P) if o[q] is None or o[q] <= target]
            return hits[-1] if hits else -1

        lo, hi = bound(start, True), bound(end, False)
        members = {j for j in range(len(P)) if lo <= j <= hi}
        if exclude == "CURRENT ROW":
            members.discard(i)
        elif exclude == "GROUP":
            members -= set(peers)
        elif exclude == "TIES":
            members -= set(peers) - {i}
        out[r] = sorted(members, key=lambda j: j)
        out[r] = [P[j] for j in out[r]]
    return out


def bound_sql(b) -> str:
    return {"UP": "UNBOUNDED PRECEDING", "UF": "UNBOUNDED FOLLOWING", "CR": "CURRENT ROW"}.get(
        b
    ) or f"{b[1]} {'PRECEDING' if b[0] == 'P' else 'FOLLOWING'}"


@st.composite
def cases(draw):
    n = draw(st.integers(0, 25))
    p = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    o = draw(
        st.lists(
            st.one_of(st.integers(0, 6), st.none()) if draw(st.booleans()) else st.integers(0, 6),
            min_size=n,
            max_size=n,
        )
    )
    x = draw(st.lists(st.one_of(st.integers(-1000, 1000), st.none()), min_size=n, max_size=n))
    f = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    unit = draw(st.sampled_from(["ROWS", "RANGE", "GROUPS"]))
    offset = st.tuples(st.sampled_from(["P", "F"]), st.integers(0, 3))
    start = draw(st.one_of(st.sampled_from(["UP", "CR"]), offset))
    end = draw(st.one_of(st.sampled_from(["UF", "CR"]), offset))
    signed = [(-b[1] if b[0] == "P" else b[1]) if isinstance(b, tuple) else None for b in (start, end)]
    if None not in signed and signed[0] > signed[1]:  # a lower bound past the upper: refused (Spark)
        start, end = end, start
    exclude = draw(st.sampled_from(["NO OTHERS", "CURRENT ROW", "GROUP", "TIES"]))
    filtered = draw(st.booleans())
    return p, o, x, f, unit, start, end, exclude, filtered


@pytest.mark.parametrize("name", sorted(NAMES))
@settings(max_examples=60, **SETTINGS)
@given(case=cases())
def test_udaf_equals_numpy_over_brute_force_frames(name, case):
    p, o, x, f, unit, start, end, exclude, filtered = case
    table = pa.table(
        {
            "p": pa.array(p, pa.int64()),
            "o": pa.array(o, pa.int64()),
            "x": pa.array(x, pa.int64()),
            "f": pa.array(f, pa.bool_()),
        }
    )
    filt = " FILTER (WHERE f)" if filtered else ""
    sql = (
        f"{name}(x){filt} OVER (PARTITION BY p ORDER BY o "
        f"{unit} BETWEEN {bound_sql(start)} AND {bound_sql(end)} EXCLUDE {exclude}) AS r"
    )
    note(sql)
    frames = brute_frames(p, o, unit, start, end, exclude)
    want = []
    for r in range(len(p)):
        vals = np.array(
            [x[q] for q in frames[r] if x[q] is not None and (f[q] or not filtered)], dtype=np.int64
        )
        want.append(SEMANTICS[name](vals))
    got = evaluate(table, sql).column("r").to_pylist()
    assert got == want
    assert evaluate_naive(table, sql).column("r").to_pylist() == want


# --- the planner's choice ----------------------------------------------------------------------


def kernel(sql: str) -> str:
    return plan(parse_window(sql).calls[0], pa.int64()).name


@pytest.mark.parametrize(
    "name,frame,expected",
    [
        ("ow_test_sumsq_naive", "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING", "naive"),
        ("ow_test_sumsq_sliding", "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING", "sliding"),
        ("ow_test_sumsq_merge", "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING", "segment-tree"),
        ("ow_test_sumsq_both", "ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING", "sliding"),
        ("ow_test_spread_merge", "RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE TIES", "segment-tree"),
        ("ow_test_spread_naive", "GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "naive"),
        # a running frame only ever adds rows: it slides without retract
        ("ow_test_spread_naive", "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "sliding"),
        ("ow_test_spread_merge", "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "sliding"),
        # ... unless something is excluded
        (
            "ow_test_spread_naive",
            "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW",
            "naive",
        ),
        # the whole partition: once per partition (by sliding: it starts at UNBOUNDED PRECEDING)
        (
            "ow_test_sumsq_naive",
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
            "broadcast+sliding",
        ),
        (
            "ow_test_sumsq_merge",
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
            "broadcast+sliding",
        ),
    ],
)
def test_planner_picks_kernel_by_methods(name, frame, expected):
    assert kernel(f"{name}(x) OVER (PARTITION BY k ORDER BY t {frame}) AS r") == expected


def test_the_naive_path_forces_the_naive_kernel():
    call = parse_window("ow_test_sumsq_sliding(x) OVER (ORDER BY t ROWS 2 PRECEDING) AS r").calls[0]
    with naive_path():
        assert plan(call, pa.int64()).name == "naive"
    assert plan(call, pa.int64()).name == "sliding"


# --- registration ------------------------------------------------------------------------------


def test_registered_name_is_callable_from_sql_case_insensitively():
    t = pa.table({"t": [1, 2, 3, 4], "x": [1, 2, None, 4]})
    out = evaluate(
        t,
        "OW_TEST_SUMSQ_SLIDING(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS r",
        "ow_test_spread_merge(x) OVER () AS s",
    )
    assert out.column("r").to_pylist() == [1, 5, 4, 16]
    assert out.column("s").to_pylist() == [3, 3, 3, 3]
    assert out.column("r").type == pa.int64()


def test_udaf_in_an_expression_and_beside_builtins():
    t = pa.table({"t": [1, 2, 3], "x": [3, 4, 12]})
    out = evaluate(
        t,
        "ow_test_sumsq_merge(x) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) - "
        "sum(x) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) AS d",
    )
    assert out.column("d").to_pylist() == [9 - 3, 25 - 7, 169 - 19]


def test_udaf_of_floats_with_result_type_inferred():
    class Mean(Aggregate):
        def create(self):
            return (0.0, 0)

        def update(self, s, v):
            return (s[0] + float(v.sum()), s[1] + len(v))

        def retract(self, s, v):
            return (s[0] - float(v.sum()), s[1] - len(v))

        def evaluate(self, s):
            return s[0] / s[1] if s[1] else None

    register_aggregate("ow_test_mean", Mean)
    t = pa.table({"t": [1, 2, 3, 4], "x": [1.0, 2.0, 4.0, 8.0]})
    out = evaluate(t, "ow_test_mean(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS m")
    assert out.column("m").to_pylist() == [1.5, 7 / 3, 14 / 3, 6.0]
    assert out.column("m").type == pa.float64()


def test_the_docstring_geomean():
    import math

    class GeoMean(Aggregate):
        result_type = pa.float64()

        def create(self):
            return (0.0, 0)

        def update(self, s, v):
            return (s[0] + float(np.log(v).sum()), s[1] + len(v))

        def retract(self, s, v):
            return (s[0] - float(np.log(v).sum()), s[1] - len(v))

        def evaluate(self, s):
            return float(np.exp(s[0] / s[1])) if s[1] else None

    register_aggregate("geomean", GeoMean)
    t = pa.table({"t": [1, 2, 3], "x": [1.0, 4.0, 16.0]})
    got = evaluate(t, "geomean(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS g").column("g").to_pylist()
    assert got == pytest.approx([1.0, 2.0, 8.0], rel=1e-12)
    assert math.isclose(got[2], 8.0)


@pytest.mark.parametrize(
    "name",
    [
        "sum",
        "SUM",
        "count",
        "row_number",
        "lag",
        "median",
        "percentile_cont",
        "stddev",
        "variance",
        "quantile_cont",
        "mean",
        "every",
        "any",
    ],
)
def test_registering_a_builtin_name_fails(name):
    with pytest.raises(WindowSpecError, match="built-in"):
        register_aggregate(name, SumSquaresNaive)
    # the built-in still works
    t = pa.table({"t": [1, 2], "x": [1, 2]})
    assert evaluate(t, "sum(x) OVER () AS r").column("r").to_pylist() == [3, 3]


@pytest.mark.parametrize("missing", ["create", "update", "evaluate"])
def test_a_class_without_the_required_methods_is_refused(missing):
    methods = {m: (lambda self, *a: None) for m in ("create", "update", "evaluate") if m != missing}
    cls = type(f"No{missing}", (Aggregate,), methods)
    with pytest.raises(TypeError, match=missing):
        register_aggregate("ow_test_broken", cls)
    plain = type(f"Plain{missing}", (), methods)
    with pytest.raises(TypeError, match=missing):
        register_aggregate("ow_test_broken", plain)


def test_a_class_need_not_subclass_aggregate():
    class Count:
        result_type = pa.int64()

        def create(self):
            return 0

        def update(self, s, v):
            return s + len(v)

        def evaluate(self, s):
            return s

    register_aggregate("ow_test_plain_count", Count)
    t = pa.table({"t": [1, 2, 3], "x": [1, None, 3]})
    got = (
        evaluate(t, "ow_test_plain_count(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS c").column("c").to_pylist()
    )
    assert got == [1, 1, 1]


def test_unregistered_name_is_an_unknown_function():
    with pytest.raises(WindowSpecError, match="unknown window function ow_test_never_registered"):
        parse_window("ow_test_never_registered(x) OVER () AS r")


def test_merge_does_not_see_mutated_states():
    """The segment tree reuses node states across frames: a merge that returned a mutated input
    would corrupt later frames. A list-state aggregate that copies in merge gives the right answer."""

    class Collect(Aggregate):
        result_type = pa.int64()

        def create(self):
            return []

        def update(self, s, v):
            return s + [int(a) for a in v]

        def merge(self, a, b):
            return a + b  # new list: inputs untouched

        def evaluate(self, s):
            return int(np.median(s)) if s else None

    register_aggregate("ow_test_collect_median", Collect)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 100, 200)
    t = pa.table({"t": np.arange(200), "x": x})
    got = evaluate(
        t, "ow_test_collect_median(x) OVER (ORDER BY t ROWS BETWEEN 7 PRECEDING AND 5 FOLLOWING) AS m"
    )
    want = [int(np.median(x[max(0, i - 7) : i + 6])) for i in range(200)]
    assert got.column("m").to_pylist() == want
    assert (
        kernel("ow_test_collect_median(x) OVER (ORDER BY t ROWS BETWEEN 7 PRECEDING AND 5 FOLLOWING) AS m")
        == "segment-tree"
    )


@functools.cache
def _large_table():
    rng = np.random.default_rng(3)
    n = 3000
    return pa.table(
        {
            "p": rng.integers(0, 5, n),
            "t": rng.integers(0, 400, n),
            "x": pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.1),
        }
    )


@pytest.mark.parametrize(
    "frame",
    [
        "ROWS BETWEEN 20 PRECEDING AND 3 FOLLOWING EXCLUDE CURRENT ROW",
        "RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING EXCLUDE TIES",
        "GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW EXCLUDE GROUP",
    ],
)
def test_three_kernels_agree_on_a_larger_table(frame):
    t = _large_table()
    results = []
    for name in ("ow_test_sumsq_naive", "ow_test_sumsq_sliding", "ow_test_sumsq_merge"):
        sql = f"{name}(x) OVER (PARTITION BY p ORDER BY t {frame}) AS r"
        results.append(evaluate(t, sql).column("r").to_pylist())
    assert results[0] == results[1] == results[2]
    assert any(v is not None for v in results[0])


# --- grouped-aggregate pandas_udfs (overwindow.spark.pandas_udf) --------------------------------


def _pandas_udf(name: str, function, arity: int, spark_type=None, **conversions) -> str:
    """``function`` registered as a pandas_udf of ``arity`` arguments (no Spark needed)."""
    from pyspark.sql.types import DoubleType

    from overwindow.spark.pandas_udf import Conversions, register

    settings = Conversions(**conversions)
    return register(name, function, spark_type or DoubleType(), arity, name.encode(), settings)


def _nulls_and_sum(v, w):
    """Reads NULLs (NaN in pandas), the values and the empty frame (max of nothing: NaN)."""
    return float(v.isna().sum() * 1000 + v.sum() + 3 * w.max())


@settings(max_examples=40, **SETTINGS)
@given(case=cases())
def test_a_pandas_udf_is_called_on_each_rows_frame_with_its_nulls(case):
    """Each row's value is the function of its frame's rows (the brute-force frames above), NULLs
    passed as NaN and empty frames called too, as Spark calls a pandas_udf; NaN results are NULL."""
    import pandas as pd

    p, o, x, _, unit, start, end, _, _ = case
    unit = "RANGE" if unit == "GROUPS" else unit  # Spark runs a pandas_udf over ROWS and RANGE only
    name = _pandas_udf("nulls_and_sum", _nulls_and_sum, 2)
    table = pa.table(
        {"p": pa.array(p, pa.int64()), "o": pa.array(o, pa.int64()), "x": pa.array(x, pa.int64())}
    )
    sql = (
        f"{name}(x, o) OVER (PARTITION BY p ORDER BY o {unit} BETWEEN {bound_sql(start)} AND "
        f"{bound_sql(end)}) AS r"
    )
    note(sql)
    frames = brute_frames(p, o, unit, start, end, "NO OTHERS")
    want = []
    for r in range(len(p)):
        v, w = (pd.Series([col[q] for q in frames[r]], dtype="float64") for col in (x, o))
        value = _nulls_and_sum(v, w)
        want.append(None if np.isnan(value) else value)
    got = evaluate(table, sql)
    assert got.column("r").to_pylist() == want
    assert got.schema.field("r").type == pa.float64()


def test_a_pandas_udf_result_takes_its_declared_type():
    from pyspark.sql.types import IntegerType

    name = _pandas_udf("frame_length", lambda v: len(v), 1, IntegerType())
    got = evaluate(pa.table({"t": [1, 2, 3], "x": [None, 1.0, 2.0]}), f"{name}(x) OVER (ORDER BY t) AS n")
    assert got.column("n").to_pylist() == [1, 2, 3]
    assert got.schema.field("n").type == pa.int32()


@pytest.mark.parametrize(
    "over, words",
    [
        ("ORDER BY t GROUPS 1 PRECEDING", "runs over ROWS or RANGE frames without EXCLUDE"),
        ("ORDER BY t ROWS 1 PRECEDING EXCLUDE CURRENT ROW", "runs over ROWS or RANGE frames without EXCLUDE"),
    ],
)
def test_frames_spark_refuses_for_a_pandas_udf_are_refused_in_sql_words(over, words):
    name = _pandas_udf("mean_of", lambda v: v.mean(), 1)
    with pytest.raises(WindowSpecError, match=words):
        parse_window(f"{name}(x) OVER ({over}) AS m")
    with pytest.raises(WindowSpecError, match="does not take FILTER"):
        parse_window(f"{name}(x) FILTER (WHERE x > 0) OVER (ORDER BY t) AS m")


def test_a_frame_the_function_raises_on_fails_the_batch_naming_the_call():
    from overwindow.errors import WindowRuntimeError

    def picky(v):
        if (v == 7.0).any():
            raise ValueError("seven")
        return float(v.sum())

    name = _pandas_udf("picky", picky, 1)
    table = pa.table({"t": [1, 2, 3], "x": [1.0, 7.0, 2.0]})
    with pytest.raises(
        WindowRuntimeError, match=r"picky\(x\) OVER .* failed on this row's frame: ValueError: seven"
    ):
        evaluate(table, f"{name}(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s")
    assert evaluate(table.slice(2), f"{name}(x) OVER (ORDER BY t ROWS 1 PRECEDING) AS s")[
        "s"
    ].to_pylist() == [2.0]


def test_a_value_the_declared_type_cannot_hold_fails_its_row():
    """Spark's conversion under its safe check refuses 1.5 as an INT (its Arrow cast truncates):
    the row's failure."""
    from pyspark.sql.types import IntegerType

    from overwindow.errors import WindowRuntimeError

    name = _pandas_udf("halves", lambda v: len(v) / 2, 1, IntegerType(), safecheck=True)
    with pytest.raises(WindowRuntimeError, match="Failed to convert the value .* to Arrow type .int32."):
        evaluate(pa.table({"t": [1, 2, 3], "x": [1.0, 2.0, 3.0]}), f"{name}(x) OVER (ORDER BY t) AS h")
