"""``+ - * / %``, unary minus and ABS (physical/arithmetic.py) where Spark's ANSI mode (its default)
fails the query: a zero divisor beside a dividend that is not NULL (``/`` and ``%``:
DIVIDE_BY_ZERO, REMAINDER_BY_ZERO; DuckDB gives NULL, inf or an error), the negative of an integer
type's minimum (ARITHMETIC_OVERFLOW). Against DuckDB on random columns:
tests/physical/test_expressions.py."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from overwindow import WindowRuntimeError, evaluate
from overwindow.logical.expr import Expr
from overwindow.physical.expressions import evaluate_expr


@pytest.mark.parametrize("e", ["a / b", "a % b", "f % z", "f / z", "m / b", "m % m"])
def test_a_zero_divisor_fails_as_in_spark(e):
    """Spark's ANSI mode (its default) fails on a zero divisor beside a dividend that is not NULL
    (DivModLike.eval: DIVIDE_BY_ZERO, for % REMAINDER_BY_ZERO); a NULL operand gives NULL first."""
    m = pa.array([Decimal("1.25"), Decimal("-2.50"), Decimal("0.00"), Decimal("3.00")], pa.decimal128(12, 2))
    t = pa.table(
        {"a": [7, -7, 5, None], "b": [2, 0, 0, 0], "f": [1.5, -2.5, 0.0, 1.0], "z": [1.0, -0.0, 0.0, None]}
    )
    t = t.append_column("m", m)
    words = (
        r"Division by zero in .* \(Spark: DIVIDE_BY_ZERO\)"
        if "/" in e
        else r"Remainder by zero .*REMAINDER_BY_ZERO"
    )
    with pytest.raises(WindowRuntimeError, match=words):
        evaluate_expr(Expr.of(e), t)
    nulls = t.take([3]).set_column(4, "m", pa.array([None], m.type))  # a NULL beside each zero divisor
    assert evaluate_expr(Expr.of(e), nulls).to_pylist() == [None]
    assert evaluate_expr(Expr.of(e), t.slice(0, 0)).to_pylist() == []


def test_a_null_divisor_or_dividend_gives_null_not_an_error():
    t = pa.table({"a": [None, 7, 7], "b": [0, None, 2], "f": [None, 1.5, -3.0], "z": [0.0, None, 2.0]})
    got = {e: evaluate_expr(Expr.of(e), t).to_pylist() for e in ("a / b", "a % b", "f / z", "f % z")}
    assert got == {
        "a / b": [None, None, 3.5],
        "a % b": [None, None, 1],
        "f / z": [None, None, -1.5],
        "f % z": [None, None, -1.0],
    }


def test_negating_an_integer_minimum_is_spark_s_arithmetic_overflow():
    """-x and abs(x) of INT's or BIGINT's minimum fail in Spark's ANSI mode (ARITHMETIC_OVERFLOW);
    they do not wrap."""
    t = pa.table({"t": [1, 2], "i": pa.array([1, -(2**31)], pa.int32()), "l": [1, -(2**63)]})
    for text in ("-i", "abs(i)", "-l", "abs(l)"):
        with pytest.raises(WindowRuntimeError, match="ARITHMETIC_OVERFLOW"):
            evaluate(t, f"lag({text}) OVER (ORDER BY t) AS r")
