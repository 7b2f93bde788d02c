"""DECIMAL ``+ - * / %`` in expressions (physical/decimals.py ``arithmetic``) against exact arithmetic
in Python's ``decimal`` (200 digits), without Spark: each value is the exact result rounded half up
(away from zero) to the result's scale, or a WindowRuntimeError where that does not fit the result's
precision. Spark's result types, and that Spark too rounds the exact value once (where rounding
twice would differ), are checked against Spark: tests/spark/test_decimal_arithmetic.py."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal, localcontext

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from overwindow import WindowRuntimeError
from overwindow.logical.expr import Expr
from overwindow.physical.expressions import evaluate_expr

SETTINGS = dict(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
TYPES = {"m": pa.decimal128(12, 2), "w": pa.decimal128(38, 10), "h": pa.decimal128(5, 4), "i": pa.int32()}
# in int64 (every intermediate value within 18 digits): h * m, i * h, m * 2, h % i, h - m, m / 7
EXPRESSIONS = [
    "h - m",
    "m / 7",
    "m + w",
    "w - m",
    "h * m",
    "m * w",
    "w * w",
    "i * h",
    "m * 2",
    "w % m",
    "h % i",
    "m / w",
    "w / 7",
]


def _values(digits: int, scale: int):
    top = 10**digits - 1
    unscaled = st.one_of(st.integers(-top, top), st.integers(-99, 99), st.sampled_from([5, -5, 50, -50, top]))
    return st.one_of(st.none(), unscaled.map(lambda u: Decimal(u).scaleb(-scale, Context(prec=80))))


ROWS = st.lists(
    st.tuples(
        _values(12, 2), _values(38, 10), _values(5, 4), st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
    ),
    min_size=1,
    max_size=8,
)


def _exact(e: str, row: dict) -> Decimal | None:
    """The exact value of ``e`` (one binary operator over columns or an integer) on one row."""
    left, op, right = e.split()
    x, y = (row[v] if v in row else Decimal(v) for v in (left, right))
    if x is None or y is None or (op in "/%" and y == 0):
        return None
    with localcontext() as ctx:
        ctx.prec = 200
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        # SQL's remainder has the sign of the dividend, as Python's % of Decimals
        return x / y if op == "/" else x % y


@pytest.mark.parametrize("e", EXPRESSIONS)
@settings(max_examples=40, **SETTINGS)
@given(rows=ROWS)
def test_decimal_arithmetic_is_exact_then_rounded_half_up(e, rows):
    table = pa.table({name: pa.array([r[j] for r in rows], t) for j, (name, t) in enumerate(TYPES.items())})
    dicts = [dict(zip(TYPES, (None if v is None else Decimal(v) for v in r))) for r in rows]
    exact = [_exact(e, row) for row in dicts]
    zero = [row for row, v in zip(dicts, rows) if ("/" in e or "%" in e) and _divisor_is_zero(e, row)]
    try:
        got = evaluate_expr(Expr.of(e), table)
    except WindowRuntimeError as err:
        if zero:
            assert ("Division" if "/" in e else "Remainder") + " by zero" in str(err)
            return
        # an overflow: some exact value, rounded, does not fit the result type (known from no rows)
        t = evaluate_expr(Expr.of(e), table.slice(0, 0)).type
        assert "overflow" in str(err)
        assert any(
            v is not None and abs(_round(v, t.scale)) >= Decimal(10) ** (t.precision - t.scale) for v in exact
        )
        return
    assert not zero, f"{e}: no error for a zero divisor"
    t = got.type
    for g, v in zip(got.to_pylist(), exact):
        if v is None:
            assert g is None
            continue
        assert abs(_round(v, t.scale)) < Decimal(10) ** (t.precision - t.scale)
        assert g == _round(v, t.scale), (e, v)


def _divisor_is_zero(e: str, row: dict) -> bool:
    left, _, right = e.split()
    x, y = (row[v] if v in row else Decimal(v) for v in (left, right))
    return x is not None and y is not None and y == 0


def _round(v: Decimal, scale: int) -> Decimal:
    return v.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=Context(prec=200))
