"""Scalar expressions (physical/expressions.py) against DuckDB on random columns with NULLs, negatives
and NaN: arithmetic, %, comparisons, BETWEEN, IN with and without NULLs (three-valued), COALESCE,
CASE, ABS. Where Spark and DuckDB differ the oracle is Spark's rule: CAST of a double to an integer
drops the fraction (DuckDB rounds); zero divisors, where they differ too, are tested apart
(tests/physical/test_arithmetic.py). DECIMAL arithmetic against exact arithmetic in Python's
``decimal``; its types and Spark's own roundings: tests/spark/test_decimal_arithmetic.py."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow import WindowRuntimeError, WindowSpecError, evaluate
from overwindow.logical.expr import Expr
from overwindow.physical.expressions import evaluate_expr

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# d is never 0 (DuckDB's zero divisors differ from Spark's: tests/physical/test_arithmetic.py)
EXPRESSIONS = [
    "a + b",
    "a - b * 2",
    "-a",
    "a / d",
    "a % d",
    "-a % d",
    "f % d",
    "a * f",
    "a > b",
    "f >= g",
    "f = g",
    "NOT (a >= b)",
    "a IN (1, 2, -3)",
    "a IN (1, NULL)",
    "a NOT IN (1, NULL)",
    "a NOT IN (2, -1)",
    "f IN (0.5, -1.5)",
    "a BETWEEN b AND 2",
    "f NOT BETWEEN -1 AND g",
    "a BETWEEN -2 AND 2 AND a IS NULL OR f > 0",
    "COALESCE(a, b, 0)",
    "CASE WHEN a > b THEN a WHEN a < b THEN b END",
    "CASE WHEN f > 0 THEN 'p' ELSE 'n' END",
    "ABS(a - b)",
    "a IS NULL OR f < 0",
    "a IS NOT DISTINCT FROM b",
    "f IS DISTINCT FROM g",
    "NULLIF(a, b)",
    "NULLIF(f, g)",
    "IF(a > b, a, b)",
    "IF(f > g, 'f', 'g')",
    "GREATEST(f, g)",
    "LEAST(f, g, -1.5)",
    "GREATEST(a, b, 0)",
    "LEAST(a, f)",
]

ints = st.one_of(st.none(), st.integers(-5, 5))
floats = st.one_of(  # 1e20 % 3 is 1: exact only as fmod (1e20 - trunc(1e20 / 3) * 3 is 0)
    st.none(),
    st.sampled_from([0.0, -0.0, 0.5, -1.5, 2.0, 1e20, -1e20, math.nan, math.inf]),
    st.floats(-10, 10),
)
divisors = st.one_of(st.none(), st.sampled_from([1, -1, 2, -3, 7]))


@settings(max_examples=60, **SETTINGS)
@given(
    st.integers(0, 12).flatmap(
        lambda n: st.tuples(
            *[st.lists(s, min_size=n, max_size=n) for s in (ints, ints, divisors, floats, floats)]
        )
    )
)
def test_expressions_agree_with_duckdb(columns):
    a, b, d, f, g = columns
    t = pa.table(
        {
            "a": pa.array(a, pa.int64()),
            "b": pa.array(b, pa.int64()),
            "d": pa.array(d, pa.int64()),
            "f": pa.array(f, pa.float64()),
            "g": pa.array(g, pa.float64()),
        }
    )
    con = duckdb.connect()
    con.register("t", t)
    for e in EXPRESSIONS:
        ours = evaluate_expr(Expr.of(e), t).to_pylist() if t.num_rows else []
        theirs = [r[0] for r in con.execute(f"SELECT {e} FROM t").fetchall()]
        assert len(ours) == len(theirs) and all(map(_same, ours, theirs)), (e, t.to_pydict(), ours, theirs)


def test_null_safe_and_extreme_functions_agree_with_duckdb_on_every_pair_of_special_values():
    """Every pair of NULL, NaN, +-inf, -0.0, 0.0 and 1.5: NaN is the greatest number and equal to
    itself, NULLs are passed over (GREATEST, LEAST) or compared (<=>), as in Spark and DuckDB."""
    special = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5]
    pairs = [(a, b) for a in special for b in special]
    t = pa.table(
        {"f": [a for a, _ in pairs], "g": [b for _, b in pairs]},
        pa.schema([("f", pa.float64()), ("g", pa.float64())]),
    )
    con = duckdb.connect()
    con.register("t", t)
    for e in ["GREATEST(f, g)", "LEAST(f, g)", "LEAST(f, g, 1)", "f IS NOT DISTINCT FROM g", "NULLIF(f, g)"]:
        ours = evaluate_expr(Expr.of(e), t).to_pylist()
        theirs = [r[0] for r in con.execute(f"SELECT {e} FROM t").fetchall()]
        assert all(map(_same, ours, theirs)), (
            e,
            [(p, o, w) for p, o, w in zip(pairs, ours, theirs) if not _same(o, w)],
        )


def _same(x, y) -> bool:
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, float) or isinstance(y, float):
        x, y = float(x), float(y)
        return (math.isnan(x) and math.isnan(y)) or x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))
    return x == y


@pytest.mark.parametrize("target", ["BIGINT", "INT", "SMALLINT"])
@settings(max_examples=50, **SETTINGS)
@given(st.lists(st.one_of(st.none(), st.floats(-30000, 30000)), max_size=10))
def test_cast_of_a_double_to_an_integer_drops_the_fraction(target, values):
    t = pa.table({"f": pa.array(values, pa.float64())})
    got = evaluate_expr(Expr.of(f"CAST(f AS {target})"), t).to_pylist()
    assert got == [None if v is None else math.trunc(v) for v in values]


def test_arrow_errors_become_the_package_errors():
    """Types SQL does not combine so reached Arrow's kernels and raised Arrow's own error; an
    overflow raised ArrowInvalid. (Spark refuses the first at analysis: tests/spark/
    test_parity_refusals.py; ANSI Spark fails on the second with ARITHMETIC_OVERFLOW.)"""
    t = pa.table({"t": [1, 2], "b": [True, False], "x": [1, 2**63 - 1]})
    with pytest.raises(WindowSpecError, match=r"b \+ 1 cannot be computed for BOOLEAN, INT arguments"):
        evaluate(t, "lag(b + 1) OVER (ORDER BY t) AS r")
    with pytest.raises(WindowRuntimeError, match=r"arithmetic overflow in x \+ 1"):
        evaluate(t, "lag(x + 1) OVER (ORDER BY t) AS r")


@pytest.mark.parametrize(
    "text, top_level",
    [
        ("s.a", "a"),
        ("s.a + 1", "a + 1"),
        ("v.s.a", "a"),
        ("S.A", "A"),
        ("s.b.c", None),
        ("l.a", None),
        ("m.a", None),
    ],
)
def test_a_field_of_a_nested_column_is_refused_never_read_as_the_top_level_column(text, top_level):
    """DuckDB (as Spark) reads ``s.a`` as the field ``a`` of the struct ``s``, also beside a
    top-level column ``a`` (``top_level``: what reading that column instead would give), and
    ``v.s.a`` with ``v`` the table; overwindow reads whole columns, so it refuses these by the
    column and field named."""
    t = pa.table(
        {
            "s": pa.array([{"a": 10, "b": {"c": 5}}, {"a": 20, "b": {"c": 6}}]),
            "a": [1, 2],
            "l": pa.array([[1], [2]]),
            "m": pa.array([[("a", 3)], [("a", 4)]], pa.map_(pa.string(), pa.int64())),
        }
    )
    if top_level is not None:
        field = [r[0] for r in duckdb.sql(f"SELECT {text} AS r FROM t AS v").fetchall()]
        assert field != evaluate_expr(Expr.of(top_level), t).to_pylist()
    nested = {"s": "struct", "S": "struct", "v": "struct", "l": "array", "m": "map"}[text[0]]
    with pytest.raises(WindowSpecError, match=rf"of the {nested} column `(s|l|m)`"):
        evaluate_expr(Expr.of(text), t)


def test_a_qualifier_naming_the_table_reads_the_column():
    """``v.x`` in a query over ``v`` (no column ``v``) reads ``x``, as DuckDB reads it."""
    t = pa.table({"x": [1, None, 3], "k": [1, 1, 2]})
    want = [r[0] for r in duckdb.sql("SELECT v.x * 2 AS r FROM t AS v").fetchall()]
    assert evaluate_expr(Expr.of("v.x * 2"), t).to_pylist() == want
    got = evaluate(t, "lag(v.x) OVER (PARTITION BY v.k ORDER BY v.x) AS p").column("p").to_pylist()
    assert got == evaluate(t, "lag(x) OVER (PARTITION BY k ORDER BY x) AS p").column("p").to_pylist()


@pytest.mark.parametrize(
    "text, spark_type",
    [
        ("greatest(INTERVAL '1' HOUR, INTERVAL '2' MINUTE)", "HOUR TO MINUTE"),
        ("greatest(INTERVAL '1' HOUR, NULL)", "HOUR"),
        ("IF(k > 0, INTERVAL '1' DAY, INTERVAL '1' HOUR)", "DAY TO HOUR"),
        ("IF(k > 0, INTERVAL '1' MINUTE, INTERVAL '1' SECOND)", "MINUTE TO SECOND"),
        ("nullif(INTERVAL '1' HOUR, INTERVAL '2' HOUR)", "HOUR"),
    ],
)
def test_an_interval_function_whose_type_spark_gives_other_fields_is_refused(text, spark_type):
    """Spark types these as the interval named (probed on Spark 4.3); overwindow's intervals are DAY
    or DAY TO SECOND only, so it refuses them, naming Spark's type, rather than give another type."""
    with pytest.raises(WindowSpecError, match=f"INTERVAL {spark_type};"):
        evaluate_expr(Expr.of(text), pa.table({"k": [1]}))
