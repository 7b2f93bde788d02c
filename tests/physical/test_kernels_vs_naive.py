"""Every fast aggregate kernel agrees with the naive reference path.

``evaluate(t, call)`` runs the kernel the planner picks (prefix counts, exact limb sums, sparse
tables, wavelet matrix, sliding counts, broadcast); ``evaluate_naive(t, call)`` runs the same call
through the reference aggregates of ``reference_kernels.py`` with the naive per-frame Python kernel,
which recomputes every frame from scratch (exact rational sums, sorting). Random tables hit the
edge cases of docs/design/design.md, Semantics: NULL/NaN/inf values and order keys, huge and tiny magnitudes,
int64 extremes, ties, empty frames, frames whose start passes their end, EXCLUDE holes, FILTER
and partitions. Hypothesis runs derandomized (same examples every run), bounded to stay fast.
"""

from __future__ import annotations

import datetime
import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from reference_kernels import evaluate_naive, naive_path

from overwindow import WindowRuntimeError, evaluate, parse_window
from overwindow.physical.kernels.holistic import interpolate_ints
from overwindow.physical.planner import plan

SETTINGS = dict(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)

# --- random tables -----------------------------------------------------------------------------

SPECIAL_FLOATS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e20,
    -1e20,
    1e-300,
    5e-324,
    2.0**53,
    2.0**53 + 2,
    1e150,
    -1e150,
    1e-150,
    1e308,
    -1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
    0.1,
    0.2,
    0.3,
]


# Values are sampled with numpy from one seed hypothesis draws (the window clause is drawn by
# hypothesis, and shrinks): drawn element by element through hypothesis, the tables took three
# quarters of this file's time. Each kind is a mix of pools: few values (ties), wide ranges, edges.


def _ints(lo: int, hi: int):
    return lambda rng: int(rng.integers(lo, hi, endpoint=True))


def _pick(values):
    values = list(values)
    return lambda rng: values[int(rng.integers(len(values)))]


def _one_of(*samplers):
    return lambda rng: samplers[int(rng.integers(len(samplers)))](rng)


def _mapped(sampler, f):
    return lambda rng: f(sampler(rng))


def float_values(huge: bool = True):
    wide = _one_of(
        lambda rng: float(rng.uniform(-1e6, 1e6)), _pick([1e6, -1e6, 0.0, -0.0, 5e-324, -5e-324, 1e-10, 0.5])
    )
    specials = SPECIAL_FLOATS if huge else [v for v in SPECIAL_FLOATS if not abs(v) > 1e10]
    return _one_of(_mapped(_ints(-50, 50), float), wide, _pick(specials))


def int_values(magnitude: str):
    """ "extremes": up to int64 min/max; "big": |x| <= 2**40.

    sum draws "big" values, whose sums over at most 24 rows fit in int64: a sum past it is an
    error in both paths (test_int64_sum_overflow_is_an_error), not a value to compare.
    """
    bound = 2**40
    parts = [_ints(-20, 20), _one_of(_ints(-bound, bound), _pick([bound, -bound]))]
    if magnitude == "extremes":
        parts.append(_pick([I64_MAX, I64_MIN, I64_MAX - 1, I64_MIN + 1]))
    return _one_of(*parts)


DAY0 = datetime.date(2021, 3, 1)
date_values = _mapped(_ints(-15, 15), lambda d: DAY0 + datetime.timedelta(days=d))
string_values = _pick(["", "a", "b", "ab", "B", "zz", "é", "a "])
bool_values = _pick([False, True])

T0_US = 1_714_557_600_123_456  # 2024-05-01 10:00:00.123456
US_RANGE = (-62_135_596_800_000_000, 253_402_300_799_999_999)  # 0001-01-01 to 9999-12-31 23:59:59.999999
# timestamps as ticks: close together (ties, spans of a few ticks), across the calendar, and (in
# nanoseconds) across all of int64 (int64 min is pandas' NaT, so one above it)
timestamp_us_values = _one_of(_mapped(_ints(-20, 20), lambda d: T0_US + d), _ints(*US_RANGE), _pick(US_RANGE))
timestamp_ns_values = _one_of(
    _mapped(_ints(-20, 20), lambda d: T0_US * 1000 + d),
    _ints(I64_MIN + 1, I64_MAX),
    _pick([I64_MIN + 1, I64_MAX]),
)

VALUE_STRATEGIES = {
    "int": (lambda magnitude: int_values(magnitude), pa.int64()),
    "int32": (lambda magnitude: _ints(-(2**31), 2**31 - 1), pa.int32()),
    "float": (lambda magnitude: float_values(), pa.float64()),
    "string": (lambda magnitude: string_values, pa.string()),
    "date": (lambda magnitude: date_values, pa.date32()),
    "bool": (lambda magnitude: bool_values, pa.bool_()),
    "timestamp_us": (lambda magnitude: timestamp_us_values, pa.timestamp("us")),
    "timestamp_ns": (lambda magnitude: timestamp_ns_values, pa.timestamp("ns")),
}
ORDER_STRATEGIES = {
    "int": (_ints(-6, 6), pa.int64()),
    "float": (
        _one_of(_mapped(_ints(-6, 6), lambda v: v / 2), _pick([math.nan, math.inf, -math.inf, -0.0])),
        pa.float64(),
    ),
    "date": (date_values, pa.date32()),
}


def column(rng, n, values, null_rate_max=0.4):
    null_rate = [0.0, 0.0, 0.15, null_rate_max][int(rng.integers(4))]
    return [None if rng.random() < null_rate else values(rng) for _ in range(n)]


@st.composite
def tables(draw, value_kind: str, magnitude: str = "extremes", max_rows: int = 24):
    n = draw(st.integers(0, max_rows))
    order_kind = draw(st.sampled_from(sorted(ORDER_STRATEGIES)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vstrat, vtype = VALUE_STRATEGIES[value_kind]
    ostrat, otype = ORDER_STRATEGIES[order_kind]
    t = pa.table(
        {
            "p": pa.array(column(rng, n, _ints(0, 2), 0.15), pa.int64()),
            "o": pa.array(column(rng, n, ostrat, 0.15), otype),
            "o2": pa.array(column(rng, n, _ints(0, 3), 0.0), pa.int64()),
            "x": pa.array(column(rng, n, vstrat(magnitude)), vtype),
            "f": pa.array(column(rng, n, bool_values, 0.2), pa.bool_()),
            # the second argument of corr(x, y), max_by(x, y), ...: few values (ties), NaN, +-inf
            "y": pa.array(column(rng, n, ORDER_STRATEGIES["float"][0], 0.2), pa.float64()),
        }
    )
    return t, order_kind


# --- random window clauses ---------------------------------------------------------------------


def offset_sql(draw, unit: str, order_kind: str) -> str:
    if unit == "RANGE" and order_kind == "date":
        return f"INTERVAL {draw(st.integers(0, 4))} DAYS"
    if unit == "RANGE" and order_kind == "float":
        return str(draw(st.sampled_from([0, 0.5, 1, 1.5, 3])))
    return str(draw(st.integers(0, 4)))


def _signed(bound: str) -> float | None:
    """A bound with an offset as its signed distance (PRECEDING negative); None for the others,
    which Spark does not compare."""
    words = bound.split()
    if words[-1] not in ("PRECEDING", "FOLLOWING") or words[0] == "UNBOUNDED":
        return None
    amount = float(words[-3] if words[0] == "INTERVAL" else words[0])
    return -amount if words[-1] == "PRECEDING" else amount


@st.composite
def windows(draw, order_kind: str) -> str:
    """The text inside OVER (...): optional PARTITION BY, ORDER BY, frame with EXCLUDE."""
    parts = []
    if draw(st.booleans()):
        parts.append("PARTITION BY p")
    n_keys = draw(st.sampled_from([0, 1, 1, 1, 2]))
    keys = []
    for col in ["o", "o2"][:n_keys]:
        direction = draw(st.sampled_from(["", " ASC", " DESC"]))
        nulls = draw(st.sampled_from(["", " NULLS FIRST", " NULLS LAST"]))
        keys.append(col + direction + nulls)
    if keys:
        parts.append("ORDER BY " + ", ".join(keys))
    if draw(st.integers(0, 5)) == 0:  # the SQL default frame
        return " ".join(parts)
    units = ["ROWS"]
    if keys:  # Spark refuses a RANGE frame without ORDER BY (but the whole partition's)
        units += ["GROUPS", "RANGE"]
    unit = draw(st.sampled_from(units))
    offsets_ok = unit != "RANGE" or n_keys == 1

    def bound(is_start):
        kinds = ["CURRENT ROW"]
        kinds.append("UNBOUNDED PRECEDING" if is_start else "UNBOUNDED FOLLOWING")
        if offsets_ok:
            kinds += ["PRECEDING", "FOLLOWING", "PRECEDING", "FOLLOWING"]
        k = draw(st.sampled_from(kinds))
        if k in ("PRECEDING", "FOLLOWING"):
            return f"{offset_sql(draw, unit, order_kind)} {k}"
        return k

    start, end = bound(True), bound(False)
    lower, upper = _signed(start), _signed(end)
    if lower is not None and upper is not None and lower > upper:  # Spark refuses such frames
        start, end = end, start
    frame = f"{unit} BETWEEN {start} AND {end}"
    exclude = draw(
        st.sampled_from(
            ["", "", " EXCLUDE NO OTHERS", " EXCLUDE CURRENT ROW", " EXCLUDE GROUP", " EXCLUDE TIES"]
        )
    )
    parts.append(frame + exclude)
    return " ".join(parts)


# --- comparison --------------------------------------------------------------------------------


def _norm(v):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, datetime.datetime):
        return v.date() if v.time() == datetime.time() else v
    return v


def close(a, b, tol_abs: float = 0.0, rel: float = 1e-9) -> bool:
    a, b = _norm(a), _norm(b)
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(close(x, y, tol_abs, rel) for x, y in zip(a, b))
        )
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= max(rel * max(abs(a), abs(b)), tol_abs)
    return a == b


def numbers_of(t: pa.Table) -> list[float]:
    return [
        abs(float(v))
        for v in t.column("x").to_pylist()
        if v is not None and not isinstance(v, (str, datetime.date)) and math.isfinite(float(v))
    ]


def tolerance(function: str, t: pa.Table) -> float:
    """An absolute tolerance for results that may cancel to (nearly) zero.

    A variance is a difference of large nearly equal quantities, sum(x^2) - (sum x)^2 / n; the fast
    kernel forms it in double-double from exact sums, the reference exactly in rationals. Its
    rounding error is therefore bounded relative to the *squared magnitude of the values*, M^2,
    not to the result: a frame {1e8, 1e8 + 1} has variance 0.25 however large M is, and a result
    that is 1e-9 relative to 0.25 would demand ~1e-26 relative precision of the 1e16-sized
    intermediate terms. So variances get |got - want| <= 1e-9 * M^2, and standard deviations are
    compared squared, against the same bound (an error e in a variance near 0 moves its root by
    up to sqrt(e), so no fixed tolerance on the roots themselves would be both safe and tight).
    Everything else is exact or correctly rounded: relative 1e-9.
    """
    m = max(numbers_of(t), default=0.0)
    if function in ("median", "percentile_cont"):
        # interpolation between two values rounds relative to *their* magnitude: near-zero results
        # between large values of opposite signs may differ by a few ulps of M
        return 1e-12 * m
    if function.startswith(("var", "stddev")):
        return 1e-9 * m * m
    if function in ("regr_avgx", "regr_avgy"):
        return 1e-12 * m
    return 0.0


def check_same(t: pa.Table, sql: str, function: str):
    note(f"table: {t.to_pydict()}")
    note(f"call: {sql}")
    try:
        fast = evaluate(t, sql).column("r").to_pylist()
    except WindowRuntimeError as e:
        raise AssertionError(f"{sql} raised {e} on values that cannot overflow") from None
    naive = evaluate_naive(t, sql).column("r").to_pylist()
    tol = tolerance(function, t)
    if function.startswith("stddev"):  # compare as variances (see tolerance())
        fast, naive = ([None if v is None else v * v for v in col] for col in (fast, naive))
    bad = [(i, f, g) for i, (f, g) in enumerate(zip(fast, naive)) if not close(f, g, tol)]
    assert not bad, f"{sql}: (row, fast, naive) differ: {bad[:5]}"


# --- the property tests ------------------------------------------------------------------------

# function template -> value kinds it accepts
AGGREGATES = {
    "count(x)": ["int", "float", "string", "bool", "date"],
    "count(*)": ["int"],
    "count(DISTINCT x)": ["int", "float", "string", "bool", "date"],
    "sum(x)": ["int", "int32", "float"],
    "avg(x)": ["int", "int32", "float"],
    "min(x)": ["int", "int32", "float", "string", "bool", "date"],
    "max(x)": ["int", "int32", "float", "string", "bool", "date"],
    "var_samp(x)": ["int", "float"],
    "var_pop(x)": ["int", "float"],
    "stddev_samp(x)": ["int", "float"],
    "stddev_pop(x)": ["int", "float"],
    "bool_and(x)": ["bool"],
    "bool_or(x)": ["bool"],
    "median(x)": ["int", "float", "date", "timestamp_us", "timestamp_ns"],
    "percentile_cont({p}) WITHIN GROUP (ORDER BY x)": [
        "int",
        "float",
        "date",
        "timestamp_us",
        "timestamp_ns",
    ],
    "percentile_disc({p}) WITHIN GROUP (ORDER BY x)": ["int", "float", "string", "date"],
    "quantile_cont(x, [0.25, 0.5, 0.75])": ["float"],
    "mode(x)": ["int", "float", "string", "bool", "date"],
}
# the aggregates added later, at fewer examples each (the suite's time)
NEWER = {
    "try_sum(x)": ["int", "int32", "float"],
    "try_avg(x)": ["int", "int32", "float"],
    "bit_and(x)": ["int", "int32"],
    "bit_or(x)": ["int", "int32"],
    "bit_xor(x)": ["int", "int32"],
    "skewness(x)": ["int", "float"],
    "kurtosis(x)": ["int", "float"],
    **dict.fromkeys(
        [
            "covar_pop(x, y)",
            "covar_samp(x, y)",
            "corr(x, y)",
            "regr_count(x, y)",
            "regr_avgx(x, y)",
            "regr_avgy(x, y)",
            "regr_sxx(x, y)",
            "regr_syy(x, y)",
            "regr_sxy(x, y)",
            "regr_slope(x, y)",
            "regr_intercept(x, y)",
            "regr_r2(x, y)",
            "regr_slope(y, x)",
            "corr(y, x)",
        ],
        ["int", "float"],
    ),
    "collect_list(x)": ["int", "float", "string", "date"],
    "collect_list(x) RESPECT NULLS": ["int", "string"],
    "collect_set(x)": ["int", "float", "string", "bool", "date"],
    "listagg(x)": ["string"],
    "listagg(x, '-')": ["string"],
    "max_by(x, y)": ["int", "string", "date"],
    "min_by(x, y)": ["int", "string", "date"],
}
CASES = [(f, k) for f, kinds in AGGREGATES.items() for k in kinds]
NEWER_CASES = [(f, k) for f, kinds in NEWER.items() for k in kinds]


def _function_name(template: str) -> str:
    head = template.split("(")[0]
    return {"quantile_cont": "percentile_cont"}.get(head, head)


def _case_id(template: str, kind: str) -> str:
    args = template.split("(", 1)[1].split(")")[0].replace(", ", "")
    suffix = "-star" if "*" in template else "-distinct" if "DISTINCT" in template else ""
    suffix += "-respect" if "RESPECT" in template else ""
    return f"{template.split('(')[0]}-{args}-{kind}{suffix}"


@pytest.mark.parametrize("template,value_kind", CASES, ids=[_case_id(f, k) for f, k in CASES])
@settings(max_examples=100, **SETTINGS)
@given(data=st.data())
def test_fast_kernel_equals_naive(template, value_kind, data):
    check_random_call(template, value_kind, data)


@pytest.mark.parametrize("template,value_kind", NEWER_CASES, ids=[_case_id(f, k) for f, k in NEWER_CASES])
@settings(max_examples=40, **SETTINGS)
@given(data=st.data())
def test_fast_kernel_equals_naive_newer(template, value_kind, data):
    check_random_call(template, value_kind, data)


BLOCKED = [
    (f, k)
    for f, k in CASES
    if f.split("(")[0]
    in (
        "sum",
        "avg",
        "min",
        "max",
        "var_samp",
        "median",
        "percentile_cont",
        "percentile_disc",
        "quantile_cont",
    )
]


@pytest.mark.parametrize("template,value_kind", BLOCKED, ids=[f"{f.split('(')[0]}-{k}" for f, k in BLOCKED])
@settings(max_examples=60, **SETTINGS)
@given(data=st.data())
def test_fast_kernel_equals_naive_in_tiny_blocks(template, value_kind, data):
    """The same with blocks of 3 rows (physical/blocks.py, 16384 rows in production): the blocked
    exact sums, sparse tables, RANGE searches and percentile selection then cross block boundaries
    on small tables. Percentiles take all three paths: frames up to 3 rows by sorting, blocks
    spanning up to 8 rows by a block wavelet matrix, longer ones by the whole-column one."""
    from overwindow.physical import blocks
    from overwindow.physical.kernels.holistic import Selector

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "CHUNK", 3)
        mp.setattr(Selector, "SORTED", 3)
        mp.setattr(Selector, "WIDE", 8)
        check_random_call(template, value_kind, data)


def check_random_call(template, value_kind, data):
    """Draw a table, window and FILTER for ``template`` and compare the fast and naive paths."""
    head = template.split("(")[0]
    magnitude = "big" if head == "sum" else "extremes"
    t, order_kind = data.draw(tables(value_kind, magnitude))
    over = data.draw(windows(order_kind))
    p = data.draw(st.sampled_from([0, 0.1, 0.25, 0.5, 0.9, 1]))
    function_sql = template.format(p=p)
    filt = data.draw(st.sampled_from(["", "", " FILTER (WHERE f)"]))
    nulls = " RESPECT NULLS" if function_sql.endswith(" RESPECT NULLS") else ""  # after FILTER
    sql = f"{function_sql.removesuffix(nulls)}{filt}{nulls} OVER ({over}) AS r"
    check_same(t, sql, _function_name(template))


# Calls the random test above might not reach often enough: pinned here.
PINNED = [
    "sum(x) OVER (ORDER BY o ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS r",
    "sum(x) OVER (PARTITION BY p ORDER BY o RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING EXCLUDE TIES) AS r",
    "avg(x) FILTER (WHERE f) OVER (ORDER BY o DESC NULLS FIRST "
    "GROUPS BETWEEN 1 PRECEDING AND 2 FOLLOWING EXCLUDE GROUP) AS r",
    "min(x) OVER (PARTITION BY p) AS r",
    "max(x) OVER (ORDER BY o ROWS BETWEEN 3 FOLLOWING AND CURRENT ROW) AS r",
    "count(DISTINCT x) OVER (ORDER BY o ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS r",
    "mode(x) OVER (ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS r",
    "median(x) OVER (ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) AS r",
    "var_samp(x) OVER (ORDER BY o ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS r",
    "stddev_pop(x) OVER (PARTITION BY p ORDER BY o) AS r",
]


@pytest.mark.parametrize("sql", PINNED)
@settings(max_examples=30, **SETTINGS)
@given(data=st.data())
def test_pinned_calls_on_floats(sql, data):
    t, order_kind = data.draw(tables("float"))
    if "RANGE BETWEEN 2" in sql and order_kind == "date":
        sql = sql.replace("2 PRECEDING", "INTERVAL 2 DAYS PRECEDING").replace(
            "1 FOLLOWING", "INTERVAL 1 DAYS FOLLOWING"
        )
    check_same(t, sql, sql.split("(")[0])


def test_exact_sums_cancel():
    """1e20 + 1 - 1e20 is 1 in every frame, in both paths (docs/design/design.md, Semantics: float drift)."""
    t = pa.table({"o": list(range(7)), "x": [1e20, 1.0, -1e20, 1e20, 1.0, -1e20, 3.0]})
    sql = "sum(x) OVER (ORDER BY o ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS r"
    want = [1e20, 1e20 + 1, 1.0, 1.0, 1.0, 1.0, -1e20 + 4]
    assert evaluate(t, sql).column("r").to_pylist() == want
    assert evaluate_naive(t, sql).column("r").to_pylist() == want


def test_int64_sum_overflow_is_an_error():
    t = pa.table({"o": [1, 2], "x": pa.array([I64_MAX, 1], pa.int64())})
    with pytest.raises(WindowRuntimeError, match="BIGINT"):
        evaluate(t, "sum(x) OVER (ORDER BY o) AS r")
    # a frame that never holds both stays exact
    out = evaluate(t, "sum(x) OVER (ORDER BY o ROWS CURRENT ROW) AS r").column("r").to_pylist()
    assert out == [I64_MAX, 1]


def test_int64_extremes_cancel_exactly():
    t = pa.table({"o": [1, 2, 3, 4], "x": pa.array([I64_MAX, I64_MIN, I64_MAX, 5], pa.int64())})
    sql = "sum(x) OVER (ORDER BY o ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS r"
    want = [I64_MAX, -1, -1, None]
    with pytest.raises(WindowRuntimeError):  # the last frame, I64_MAX + 5, does not fit
        evaluate(t, sql)
    t2 = t.set_column(1, "x", pa.array([I64_MAX, I64_MIN, I64_MAX, I64_MIN], pa.int64()))
    want = [I64_MAX, -1, -1, -1]
    assert evaluate(t2, sql).column("r").to_pylist() == want
    assert evaluate_naive(t2, sql).column("r").to_pylist() == want


# --- engine bugs, fixed: regression tests ------------------------------------------------------


@pytest.mark.parametrize(
    "function,xs,want",
    [
        ("sum", [-1e308], -1e308),  # was NaN: a negative sum is rounded from its magnitude
        ("avg", [1e308], 1e308),
        ("sum", [1e308, 1e308], math.inf),  # was NaN: IEEE rounding of the exact 2e308
        ("sum", [-1e308, -1e308], -math.inf),
        ("avg", [1e308, 1e308], 1e308),  # was NaN: the exact sum 2e308 overflowed the double-double
        (
            "avg",
            [1.7976931348623157e308, 1.7976931348623157e308, -1.7976931348623157e308],
            float(Fraction(1.7976931348623157e308) / 3),
        ),
        ("avg", [1e308, 1.0], 5e307),
        ("sum", [1e308, 1.0], 1e308),
        ("sum", [1.7976931348623157e308, -1.7976931348623157e308, 5e-324], 5e-324),
    ],
)
def test_sum_avg_near_dbl_max(function, xs, want):
    t = pa.table({"o": list(range(len(xs))), "x": xs})
    got = evaluate(t, f"{function}(x) OVER () AS r").column("r").to_pylist()
    assert got == [want] * len(xs)


@pytest.mark.parametrize(
    "xs",
    [
        [1e200],  # was NaN: x * x overflowed before the exact sums
        [1e150, 1e150],  # was NaN: Dekker's split in two_prod overflowed above ~1.3e300
    ],
)
def test_variance_of_huge_values(xs):
    t = pa.table({"x": xs})
    assert evaluate(t, "var_pop(x) OVER () AS r").column("r").to_pylist() == [0.0] * len(xs)


def test_naive_sum_overflow_is_inf():
    """Was an engine bug: float(Fraction) raised OverflowError; IEEE rounding of 2e308 is +inf."""
    t = pa.table({"o": [1, 2], "x": [1e308, 1e308]})
    assert evaluate_naive(t, "sum(x) OVER () AS r").column("r").to_pylist() == [math.inf] * 2
    t = pa.table({"o": [1, 2], "x": [-1e308, -1e308]})
    assert evaluate_naive(t, "sum(x) OVER () AS r").column("r").to_pylist() == [-math.inf] * 2


@pytest.mark.parametrize("function", ["count(DISTINCT x)", "mode(x)"])
def test_exclude_ties_frame_before_current_row(function):
    """Was an engine bug: frame_bounds put the current row's part outside the frame and the sliding
    kernels (mode, count(DISTINCT) under EXCLUDE) raised KeyError."""
    t = pa.table({"o": [0, 0, 0, 0], "x": [1, 2, 3, 4]})
    sql = f"{function} OVER (ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING EXCLUDE TIES) AS r"
    # every row of each frame is a peer of the current row, so EXCLUDE TIES leaves nothing
    want = [0] * 4 if function.startswith("count") else [None] * 4
    assert evaluate_naive(t, sql).column("r").to_pylist() == want
    assert evaluate(t, sql).column("r").to_pylist() == want


@pytest.mark.parametrize(
    "function,xs",
    [
        ("sum", [2**62, 2**62]),  # a BIGINT overflow error, as in the fast path (was -2**63)
        ("avg", [2**62, 2**62, 2**62]),  # 2**62
        ("var_pop", [2**62, 0, -(2**62) + 5]),  # was negative
        ("avg", pa.array([2**31 - 1, 2**31 - 1], pa.int32())),  # INT: wrapped at 2**31, gave -1.0
        ("var_pop", pa.array([-1, -(2**31)], pa.int32())),  # gave 0.25
    ],
)
def test_naive_int_arithmetic_is_exact(function, xs):
    """Was an engine bug: the reference path summed numpy int64 scalars, which wrap past 2**63."""
    t = pa.table({"x": xs if isinstance(xs, pa.Array) else pa.array(xs, pa.int64())})
    xs = t.column("x").to_pylist()
    sql = f"{function}(x) OVER () AS r"
    if function == "sum":
        with pytest.raises(WindowRuntimeError, match="BIGINT"):
            evaluate_naive(t, sql)
        return
    mean = Fraction(sum(xs), len(xs))
    want = float(mean) if function == "avg" else float(sum((x - mean) ** 2 for x in xs) / len(xs))
    assert evaluate_naive(t, sql).column("r").to_pylist() == [want] * len(xs)


def test_fast_int_arithmetic_is_exact():
    """The same BIGINT extremes through the fast kernels, against exact Python integers."""
    xs = [2**62, 2**62 - 1, 2**62, -(2**62) + 5, I64_MAX, I64_MIN]
    t = pa.table({"o": list(range(len(xs))), "x": pa.array(xs, pa.int64())})
    over = "OVER (ORDER BY o ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)"
    frames = [xs[max(i - 1, 0) : i + 2] for i in range(len(xs))]
    avg = evaluate(t, f"avg(x) {over} AS r").column("r").to_pylist()
    assert avg == [float(Fraction(sum(f), len(f))) for f in frames]
    var = evaluate(t, f"var_pop(x) {over} AS r").column("r").to_pylist()
    for got, f in zip(var, frames):
        mean = Fraction(sum(f), len(f))
        want = float(sum((x - mean) ** 2 for x in f) / len(f))
        # relative to the squared magnitude (see tolerance()): {2**62, 2**62 - 1} may give 0, not 0.25,
        # as Spark does too (it reads BIGINTs as doubles, where both are 2**62)
        assert abs(got - want) <= 1e-9 * max(x * x for x in f)
    with pytest.raises(WindowRuntimeError, match="BIGINT"):
        evaluate(t, f"sum(x) {over} AS r")


@pytest.mark.parametrize(
    "sql,want",
    [
        ("count(DISTINCT x) OVER () AS r", [1, 1, 1]),
        ("rank() OVER (ORDER BY x) AS r", [1, 1, 1]),
        ("count(*) OVER (PARTITION BY x) AS r", [3, 3, 3]),
        ("count(*) OVER (ORDER BY x) AS r", [3, 3, 3]),
    ],
)
def test_negative_zero_equals_zero(sql, want):
    """-0.0 = 0.0 in SQL: peers, one partition, one distinct value (was an engine bug)."""
    t = pa.table({"x": [0.0, -0.0, 0.0]})
    assert evaluate(t, sql).column("r").to_pylist() == want


@pytest.mark.parametrize(
    "function,xs,want",
    [
        ("count(DISTINCT x)", [math.nan, 1.0, math.nan], 2),
        ("mode(x)", [math.nan, 1.0, math.nan], math.nan),
        ("count(DISTINCT x)", [-0.0, math.nan, 0.0, float("nan")], 2),  # -0.0 = 0.0, two NaN objects
        ("mode(x)", [1.0, -0.0, 2.0, 0.0, 1.0, 0.0], 0.0),  # zero three times, 1.0 twice
    ],
)
def test_naive_nan_is_one_value(function, xs, want):
    """Was an engine bug: the reference path's set/Counter counted every NaN object on its own."""
    t = pa.table({"x": xs})
    sql = f"{function} OVER () AS r"
    fast = evaluate(t, sql).column("r").to_pylist()
    naive = evaluate_naive(t, sql).column("r").to_pylist()
    assert close(fast, [want] * len(xs)) and close(naive, fast)


@pytest.mark.parametrize("function", ["sum", "avg"])
def test_sum_of_tiny_values_beside_huge_ones(function):
    """Was an engine bug: LimbPrefix kept too few limbs and truncated values far below the column's
    largest one, so a frame of only 1e-300 summed to 0.0 when another partition held 1e150."""
    t = pa.table({"p": [1, 2], "x": [1e-300, 1e150]})
    got = evaluate(t, f"{function}(x) OVER (PARTITION BY p) AS r").column("r").to_pylist()
    assert got == [1e-300, 1e150]


@settings(max_examples=500, **SETTINGS)
@given(
    st.one_of(
        st.lists(st.integers(I64_MIN, I64_MAX), min_size=2, max_size=2).map(sorted),
        st.tuples(st.integers(I64_MIN, I64_MAX - 40), st.integers(0, 40)).map(lambda a: (a[0], a[0] + a[1])),
    ),
    st.one_of(
        st.sampled_from([0.0, 0.5, 0.25, 0.1, 0.3, 1 / 3, 1 - 2**-53, 2**-60]),
        st.floats(0, 1, exclude_max=True),
    ),
)
def test_interpolate_ints_rounds_the_exact_product(pair, frac):
    """lo + frac * (hi - lo), from Python's exact rationals, rounded half to even: over all of int64
    (spans past 2**63 too), with fractions whose products with a span are exact ties."""
    lo, hi = pair
    want = round(lo + Fraction(frac) * (hi - lo))
    got = interpolate_ints(np.array([lo], np.int64), np.array([hi], np.int64), np.array([frac]))
    assert int(got[0]) == want


@pytest.mark.parametrize(
    "lo, hi, want",
    [
        (0, 1, 0),
        (1, 2, 2),
        (-3, -2, -2),
        (I64_MIN, I64_MAX, 0),
        (I64_MIN + 1, I64_MAX, 0),
        (I64_MAX - 1, I64_MAX, I64_MAX - 1),
    ],
)
def test_interpolate_ints_halves_go_to_even(lo, hi, want):
    """Midpoints: an exact half goes to the even neighbour (-0.5 to 0, 1.5 to 2, -2.5 to -2)."""
    assert int(interpolate_ints(np.array([lo]), np.array([hi]), np.array([0.5]))[0]) == want


@pytest.mark.parametrize(
    "span, frac, want",
    [(5, 0.1, 1), (10, 0.05, 1), (5, 0.3, 1), (5, 0.7, 3), (2**60 + 5, 0.1, 115_292_150_460_684_705)],
)
def test_interpolate_ints_near_halves(span, frac, want):
    """Near a half, the double ``frac`` decides: 0.1 is 0.1000000000000000055..., so 5 * 0.1 is just
    above 1/2 (rounds up), 0.3 is 0.2999999999999999888..., so 5 * 0.3 is just below 3/2 (down);
    0.7 is 0.6999999999999999555..., 5 * 0.7 just below 7/2; (2**60 + 5) * 0.1 is
    115292150460684704.5000000000000000277... A double product rounds each of them to the half."""
    got = interpolate_ints(np.array([0]), np.array([span]), np.array([frac]))
    assert int(got[0]) == want == round(Fraction(frac) * span)


def test_naive_percentile_cont_next_to_infinity():
    """Was an engine bug: the reference interpolated lo + d * (hi - lo), NaN here."""
    t = pa.table({"x": [-math.inf, 0.0]})
    sql = "quantile_cont(x, [0.25, 0.5]) OVER () AS r"
    assert evaluate(t, sql).column("r").to_pylist() == [[-math.inf, -math.inf]] * 2
    assert evaluate_naive(t, sql).column("r").to_pylist() == [[-math.inf, -math.inf]] * 2


@pytest.mark.parametrize(
    "function,want",
    [
        ("min(x)", [0, 0, 4]),
        ("max(x)", [0, 4, 4]),
        ("mode(x)", [0, 0, 4]),
        ("median(x)", [0, 2, 4]),
        ("percentile_disc(0.5) WITHIN GROUP (ORDER BY x)", [0, 0, 4]),
    ],
)
def test_naive_path_on_dates(function, want):
    """Was an engine bug: the reference path failed on DATEs (TypeError building the result).
    Frames {d}, {d, d + 4}, {d + 4, NULL}; want in days after d."""
    t = pa.table({"o": [1, 2, 3], "x": pa.array([DAY0, DAY0 + datetime.timedelta(days=4), None])})
    sql = f"{function} OVER (ORDER BY o ROWS 1 PRECEDING) AS r"
    want = [DAY0 + datetime.timedelta(days=d) for d in want]
    assert evaluate_naive(t, sql).column("r").to_pylist() == want
    assert evaluate(t, sql).column("r").to_pylist() == want


# --- the planner's choices ---------------------------------------------------------------------


# an Arrow type of each type family the planner tests name
_TYPES = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "string": pa.string()}


def _plan(sql: str, kind: str | None) -> str:
    call = parse_window(sql).calls[0]
    return (plan(call, _TYPES[kind]) if kind else plan(call)).name


@pytest.mark.parametrize(
    "sql,kind,name",
    [
        ("count(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "int", "prefix-count"),
        ("count(*) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", None, "prefix-count"),
        ("bool_and(x) OVER (ORDER BY t) AS r", "bool", "prefix-count"),
        ("bool_or(x) OVER (ORDER BY t) AS r", "bool", "prefix-count"),
        ("sum(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "float", "exact-prefix-sum"),
        ("avg(x) OVER (ORDER BY t RANGE 3 PRECEDING) AS r", "int", "exact-prefix-sum"),
        ("var_samp(x) OVER (ORDER BY t) AS r", "float", "exact-moments"),
        ("stddev_pop(x) OVER (ORDER BY t GROUPS 1 PRECEDING) AS r", "float", "exact-moments"),
        ("min(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "int", "sparse-table"),
        ("max(x) OVER (ORDER BY t ROWS 3 PRECEDING EXCLUDE TIES) AS r", "string", "sparse-table"),
        ("median(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "float", "wavelet"),
        ("percentile_cont(0.3) WITHIN GROUP (ORDER BY x) OVER (ORDER BY t) AS r", "float", "wavelet"),
        ("percentile_disc(0.3) WITHIN GROUP (ORDER BY x) OVER (ORDER BY t) AS r", "string", "wavelet"),
        ("count(DISTINCT x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "string", "wavelet"),
        ("mode(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "int", "sliding-counts"),
        # whole-partition frames: computed once per partition and broadcast
        ("min(x) OVER (PARTITION BY k) AS r", "int", "broadcast+sparse-table"),
        ("sum(x) OVER () AS r", "float", "broadcast+exact-prefix-sum"),
        (
            "count(*) OVER (PARTITION BY k ORDER BY t "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS r",
            None,
            "broadcast+prefix-count",
        ),
        (
            "mode(x) OVER (PARTITION BY k ORDER BY t "
            "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS r",
            "int",
            "broadcast+sliding-counts",
        ),
        ("median(x) OVER (PARTITION BY k) AS r", "float", "broadcast+wavelet"),
        (
            "first_value(x) OVER (PARTITION BY k ORDER BY t "
            "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS r",
            "int",
            "broadcast+index-arithmetic",
        ),
        # an excluded hole is not the whole partition
        (
            "min(x) OVER (PARTITION BY k ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING "
            "EXCLUDE CURRENT ROW) AS r",
            "int",
            "sparse-table",
        ),
        ("row_number() OVER (ORDER BY t) AS r", None, "index-arithmetic"),
        ("lag(x) OVER (ORDER BY t) AS r", "int", "index-arithmetic"),
        ("nth_value(x, 2) OVER (ORDER BY t) AS r", "int", "index-arithmetic"),
    ],
)
def test_planner_picks_kernel(sql, kind, name):
    assert _plan(sql, kind) == name


@pytest.mark.parametrize(
    "sql,kind,name",
    [
        ("sum(x) OVER (ORDER BY t ROWS 3 PRECEDING) AS r", "float", "naive"),
        ("min(x) OVER (PARTITION BY k) AS r", "int", "broadcast+naive"),
        ("mode(x) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS r", "int", "naive"),
    ],
)
def test_planner_on_the_naive_path(sql, kind, name):
    with naive_path():
        assert _plan(sql, kind) == name
    assert _plan(sql, kind) != name  # the seam is closed again


def test_the_mean_of_a_tiny_negative_value_beside_huge_ones_is_exact():
    """A one-row frame's mean is its value. A negative sum's limbs were cancelled in a double-double
    when the column spanned more than its 106 bits: -3.32e-307 beside 1e308 came out 0.0."""
    x = [1e308, -3.3201076735709043e-307, -5e-324, -1e308, 2.5e-300]
    t = pa.table({"o": list(range(len(x))), "x": x})
    sql = "avg(x) OVER (ORDER BY o ROWS BETWEEN CURRENT ROW AND CURRENT ROW) AS r"
    assert evaluate(t, sql).column("r").to_pylist() == x
