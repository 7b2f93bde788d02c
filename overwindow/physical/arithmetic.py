"""``+ - * / %``, unary minus and ABS of evaluated operands, as Spark computes them in ANSI mode
(Spark 4's default): the types Spark gives the operands (a bare NULL, an integer literal beside a
DECIMAL, a DECIMAL beside a DOUBLE), DECIMAL arithmetic through ``decimals.arithmetic``, ``/`` in
DOUBLE, ``%`` as Java's, and an overflow or a zero divisor as the error Spark's query fails with.
A DATE, TIMESTAMP or interval operand goes on to ``interval_arithmetic``. The evaluator
(``expressions``) computes the operands and hands them over. O(n).

>>> node = exp.Mod(this=exp.column("a"), expression=exp.column("b"))
>>> arithmetic(node, pa.array([-7, 7, None]), pa.array([2, 2, 2]), 3).to_pylist()
[-1, 1, None]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowRuntimeError
from overwindow.logical.expr import DIALECT
from overwindow.physical import decimals
from overwindow.physical.interval_arithmetic import as_times, date_arithmetic, interval_arithmetic
from overwindow.physical.values import INTERVAL_DAY_TO_SECOND, TypeFamily, kind_of, numpy_values, sql_type

# the nodes ``arithmetic`` computes (the evaluator hands it these), by operator
OPERATORS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}

_CHECKED = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}


def arithmetic(node: exp.Expression, a, b, rows: int):
    """``node`` (``+ - * / %``) of its operands' values ``a`` and ``b`` (arrays of ``rows`` rows, or
    scalars), with Spark's operand types (ANSI mode, Spark 4's default). With a DECIMAL operand and
    the other an integer or DECIMAL, DECIMAL arithmetic (``decimals.arithmetic``): an integer
    column is the DECIMAL of its type (INT: DECIMAL(10, 0)), an integer literal the DECIMAL of its
    digits (``m * 2``: DECIMAL(1, 0)). A DECIMAL beside a DOUBLE or FLOAT is a DOUBLE. ``/`` of
    other numbers divides DOUBLEs. A zero divisor beside a dividend that is not NULL, and an
    overflow, are a WindowRuntimeError, as Spark fails the query (DIVIDE_BY_ZERO,
    ARITHMETIC_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE). O(n).

    >>> import decimal
    >>> from overwindow.physical.expressions import Expr, evaluate_expr

    >>> m = pa.table({"m": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(12, 2))})
    >>> r = evaluate_expr(Expr.of("m * 2"), m)
    >>> r.type, r.to_pylist()
    (Decimal128Type(decimal128(14, 2)), [Decimal('2.50'), None])
    """
    op, name = OPERATORS[type(node)], node.sql(dialect=DIALECT)
    if TypeFamily.INTERVAL in (kind_of(a.type), kind_of(b.type)):
        return interval_arithmetic(op, a, b, name)
    if op == "-":
        a, b = as_times(a, b, name)
    if pa.types.is_date32(a.type) or pa.types.is_date32(b.type):
        return date_arithmetic(op, a, b, name)
    if op == "-" and pa.types.is_timestamp(a.type) and pa.types.is_timestamp(b.type):
        # Spark's INTERVAL DAY TO SECOND (Arrow's duration would be in the timestamps' own unit)
        return pc.subtract_checked(a, b).cast(INTERVAL_DAY_TO_SECOND)
    a, b = _typed_nulls(a, b)
    kinds = {kind_of(a.type), kind_of(b.type)}
    numbers = kinds <= {TypeFamily.DECIMAL, TypeFamily.INT, TypeFamily.FLOAT}
    exact = numbers and TypeFamily.DECIMAL in kinds and TypeFamily.FLOAT not in kinds
    if exact:
        ta, tb = _decimal_operand_type(a, node.this), _decimal_operand_type(b, node.expression)
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) and rows == 0:
        # a constant over no rows (``1 / 0``): Spark computes it for none, so it fails on none;
        # only its type is wanted (an output schema is read from no rows)
        a, b = pa.scalar(None, a.type), pa.scalar(None, b.type)
    try:
        if exact:
            return decimals.arithmetic(op, a, ta, b, tb, name)
        if numbers and TypeFamily.FLOAT in kinds:
            a, b = _decimal_as_double(a), _decimal_as_double(b)
            to = _float_type(a.type, b.type)
            a, b = (x if pa.types.is_null(x.type) else pc.cast(x, to) for x in (a, b))
        if op == "/":  # true division, of DOUBLEs
            a, b = (pc.cast(x, pa.float64()) for x in (a, b))
            _refuse_zero_divisors(a, b, name)
            return pc.divide(a, b)
        if op == "%":
            return _mod(a, b, name)
        try:
            return pc.call_function(_CHECKED[op], [a, b])
        except pa.ArrowInvalid as e:
            if "overflow" not in str(e).lower():
                raise
            raise WindowRuntimeError(  # as Spark's ANSI mode fails
                f"arithmetic overflow in {name} ({sql_type(a.type)} and {sql_type(b.type)}); widen it "
                "first, e.g. CAST(... AS BIGINT) (Spark: ARITHMETIC_OVERFLOW)"
            ) from None
    except decimals.DivisionByZero:
        what, spark = ("Division", "DIVIDE_BY_ZERO") if op == "/" else ("Remainder", "REMAINDER_BY_ZERO")
        raise WindowRuntimeError(
            f"{what} by zero in {name} (Spark: {spark}); leave such rows out of it, e.g. "
            f"CASE WHEN divisor <> 0 THEN {name} END"
        ) from None


def _typed_nulls(a, b):
    """The operands with a bare NULL typed as Spark types it: as the other operand (``m / NULL`` is
    a DECIMAL(12,2) divided by a DECIMAL(12,2), ``NULL + 1`` INT), as a DOUBLE beside another NULL
    (``NULL * NULL``)."""
    a_null, b_null = pa.types.is_null(a.type), pa.types.is_null(b.type)
    if a_null and b_null:
        return pa.scalar(None, pa.float64()), pa.scalar(None, pa.float64())
    if a_null and kind_of(b.type).is_numeric:
        return pa.scalar(None, b.type), b
    if b_null and kind_of(a.type).is_numeric:
        return a, pa.scalar(None, a.type)
    return a, b


def unary(fn: str, x, name: str):
    """``-x`` and ``abs(x)``: NULL is a DOUBLE NULL (Spark's type of ``-NULL``); the negative of an
    integer type's minimum overflows, a WindowRuntimeError as Spark's ANSI mode fails."""
    if pa.types.is_null(x.type):
        return pa.scalar(None, pa.float64())
    try:
        return pc.call_function(fn, [x])
    except pa.ArrowInvalid as e:
        if "overflow" not in str(e).lower():
            raise
        raise WindowRuntimeError(
            f"arithmetic overflow in {name}: {sql_type(x.type)}'s minimum has no negative in "
            f"{sql_type(x.type)}; CAST it to a wider type first (Spark: ARITHMETIC_OVERFLOW)"
        ) from None


def _decimal_operand_type(value, node: exp.Expression) -> pa.Decimal128Type:
    """The DECIMAL type Spark gives an operand of DECIMAL arithmetic: its own, the digits of an
    integer literal (``2``, ``(-2)``; Spark's parser reads ``-2`` as one literal, ``-(2)`` and
    ``1 + 1`` not), the DECIMAL of an integer type."""
    if pa.types.is_decimal(value.type):
        return value.type
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        node = node.this
    if isinstance(node, exp.Literal) and isinstance(value, pa.Scalar) and value.is_valid:
        return decimals.literal_type(value.as_py())
    return decimals.integer_type(value.type)


def _float_type(*types: pa.DataType) -> pa.DataType:
    """Spark's type of arithmetic beside a floating-point operand (ANSI type coercion): FLOAT only
    when every operand is a FLOAT (beside an integer of any width too, it widens to DOUBLE, which
    holds every integer a FLOAT rounds), else DOUBLE."""
    floats = [t for t in types if not pa.types.is_null(t)]
    return pa.float32() if all(t == pa.float32() for t in floats) else pa.float64()


def _decimal_as_double(x):
    """A DECIMAL operand beside a DOUBLE as a DOUBLE, each value correctly rounded (Spark's cast)."""
    if not pa.types.is_decimal(x.type):
        return x
    if isinstance(x, pa.Scalar):
        return pa.scalar(None if not x.is_valid else float(x.as_py()), pa.float64())
    return decimals.to_float64(x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x)


def _refuse_zero_divisors(a, b, name: str) -> None:
    """Raise DivisionByZero where a zero divisor (0, -0.0) meets a dividend that is not NULL;
    NULL operands give NULL, as in Spark, whose ANSI mode fails on the zero."""
    if pa.types.is_null(b.type):
        return
    zero = pc.and_(pc.equal(b, pc.cast(pa.scalar(0), b.type)), pc.is_valid(a))
    if (zero.as_py() if isinstance(zero, pa.Scalar) else pc.any(zero).as_py()) is True:
        raise decimals.DivisionByZero(name)


def _mod(a, b, name: str):
    """SQL ``a % b`` of integers or floats, as Java's ``%``: the sign of ``a`` (-7 % 2 = -1), exact
    for floats (C's fmod: 1e20 % 3 is 1, where 1e20 - trunc(1e20 / 3) * 3 rounds to 0), in Spark's
    widened type (INT % BIGINT is BIGINT; ``_float_type`` beside a float)."""
    types = [x.type for x in (a, b) if not pa.types.is_null(x.type)]
    kinds = {kind_of(x) for x in types}
    if not kinds <= {TypeFamily.INT, TypeFamily.FLOAT}:
        # the error Arrow's kernels raise for such types, which expressions._eval words in SQL
        raise pa.ArrowNotImplementedError(f"no remainder of {types}")
    _refuse_zero_divisors(a, b, name)
    if TypeFamily.FLOAT not in kinds:
        out = pa.from_numpy_dtype(np.result_type(*(x.to_pandas_dtype() for x in types or [pa.int32()])))
    else:
        out = _float_type(*types)
    (x, x_valid), (y, y_valid) = numpy_values(a, out), numpy_values(b, out)
    valid = x_valid & y_valid
    # 1 in place of the divisors of NULL rows: their remainders are dropped, and numpy warns on 0
    with np.errstate(invalid="ignore"):  # fmod(inf, y) is NaN, as in Java
        r = pa.array(np.fmod(x, np.where(valid, y, 1)), type=out, mask=~valid)
    return r[0] if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) else r
