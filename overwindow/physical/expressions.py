"""Evaluate scalar SQL expressions (arguments, FILTER conditions, keys) over an Arrow table with
pyarrow.compute, following SQL NULL rules. Column names resolve case-insensitively, as in Spark.

>>> t = pa.table({"x": [1, None, 3]})
>>> evaluate_expr(Expr.of("x * 2 + 1"), t).to_pylist()
[3, None, 7]
"""

from __future__ import annotations

import decimal
import functools
import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.logical.expr import DIALECT, Expr, literal_value
from overwindow.logical.frame import Interval
from overwindow.logical.parse import interval_literal, span_fields
from overwindow.physical import casts, decimals
from overwindow.physical.columns import column_of, constant, literal_type
from overwindow.physical.values import (
    FIELD_MICROS,
    INTERVAL_DAY,
    INTERVAL_DAY_TO_SECOND,
    INTERVAL_LIMIT,
    TypeFamily,
    carrier_fields,
    interval_type,
    kind_of,
    sql_type,
)

_BINARY = {exp.And: "and_kleene", exp.Or: "or_kleene"}

_ARITHMETIC = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_CHECKED = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}

_COMPARE = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
}

_TYPES = {
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "BOOLEAN": pa.bool_(),
    "STRING": pa.string(),
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
    "TIMESTAMPTZ": pa.timestamp("us"),
    "TIMESTAMPLTZ": pa.timestamp("us"),
    "TIMESTAMPNTZ": pa.timestamp("us"),
}


def arrow_type(to: exp.DataType) -> pa.DataType:
    """The Arrow type of a SQL type name in a CAST (``DECIMAL(p, s)``: Spark's default (10, 0); a
    day-time interval its carrier, ``interval_type``)."""
    fields = cast_fields(to)
    if fields:
        return interval_type(fields)
    name = to.this.name if hasattr(to.this, "name") else str(to.this).upper()
    if name == "DECIMAL":
        params = [int(p.this.this) for p in to.expressions]
        return pa.decimal128(params[0] if params else 10, params[1] if len(params) > 1 else 0)
    if name not in _TYPES:
        raise WindowSpecError(f"CAST to {to.sql(dialect=DIALECT)} is not supported")
    return _TYPES[name]


_YEAR_MONTH = (
    "{}: year-month intervals (YEAR, MONTH, YEAR TO MONTH) are read only as RANGE offsets; "
    "overwindow computes day-time intervals (DAY ... SECOND) in expressions"
)


def cast_fields(to: exp.DataType) -> str:
    """The fields of a CAST's day-time interval target (``INTERVAL DAY TO SECOND``: ``'DAY TO
    SECOND'``), '' when the target is no interval; a year-month target is refused."""
    if not isinstance(to.this, exp.Interval):
        return ""
    unit = to.this.args.get("unit")
    names = [unit.this.name, unit.expression.name] if isinstance(unit, exp.IntervalSpan) else [unit.name]
    names = [n.upper().rstrip("S") if len(n) > 1 else n.upper() for n in names]
    if {"YEAR", "MONTH"} & set(names):
        raise WindowSpecError(_YEAR_MONTH.format(f"CAST(... AS {to.sql(dialect=DIALECT)})"))
    return " TO ".join(dict.fromkeys(names))


def interval_fields(node: exp.Expression, t: pa.Table) -> str:
    """Spark's fields of a day-time interval expression over ``t``'s columns (``'DAY'``, ``'HOUR TO
    MINUTE'``, ...; '' when it is no interval). Arrow's duration carries only two of them (DAY in
    seconds, every other in microseconds, ``interval_type``), so the others are read from the
    expression: a literal's own, a CAST's target, the span of the intervals ``+``, ``-``, COALESCE,
    CASE, IF, GREATEST and LEAST combine; DAY TO SECOND for anything else in microseconds (``ts -
    ts``, ``x * 2``).
    O(size of the expression squared), over no rows.

    >>> t = pa.table({"d": pa.array([], pa.date32())})
    >>> interval_fields(Expr.of("(d - d) + INTERVAL '2' HOUR").node, t)
    'DAY TO HOUR'
    """
    typ = _eval(node, t.schema.empty_table()).type
    if kind_of(typ) is not TypeFamily.INTERVAL or typ == INTERVAL_DAY:
        return carrier_fields(typ) if kind_of(typ) is TypeFamily.INTERVAL else ""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Interval):
        return interval_literal(node).fields
    if isinstance(node, (exp.Neg, exp.Abs)):
        return interval_fields(node.this, t)
    if isinstance(node, exp.Cast):
        return cast_fields(node.to)
    if isinstance(node, exp.Case):
        parts = [b.args["true"] for b in node.args.get("ifs") or []] + [node.args.get("default")]
    elif isinstance(node, exp.If):
        parts = [node.args.get("true"), node.args.get("false")]
    elif isinstance(node, exp.Nullif):
        parts = [node.this]
    elif isinstance(node, (exp.Add, exp.Sub, exp.Coalesce, exp.Greatest, exp.Least)):
        parts = [node.this, node.expression, *(node.args.get("expressions") or [])]
    else:
        parts = []
    fields = [f for f in (interval_fields(p, t) for p in parts if isinstance(p, exp.Expression)) if f]
    return span_fields(*fields) if fields else "DAY TO SECOND"


def evaluate_expr(expr: Expr, table: pa.Table) -> pa.Array:
    """The expression's value for every row of ``table``, as one Arrow array. A plain constant is
    folded once, with Spark's literal types (``1.5`` DECIMAL, ``2147483648`` BIGINT); one with
    arithmetic or a CAST (``TIMESTAMP '...'`` and ``10L`` are CASTs) is computed as Spark computes
    it (``1.5 * 2`` is DECIMAL(4, 1), ``2147483647 + 1`` overflows INT), not folded in Python,
    whose numbers carry no SQL type."""
    folded = constant(expr, table.num_rows)
    if folded is not None:
        return folded
    out = _eval(expr.node, table)
    if out.type == INTERVAL_DAY_TO_SECOND and not isinstance(expr.node, exp.Column):
        fields = interval_fields(expr.node, table)
        if fields != "DAY TO SECOND":
            raise WindowSpecError(
                f"{expr.sql} is Spark's INTERVAL {fields}; overwindow's interval values are INTERVAL "
                "DAY or INTERVAL DAY TO SECOND only: CAST it AS INTERVAL DAY TO SECOND"
            )
    if isinstance(out, pa.Scalar):
        out = pa.repeat(out, table.num_rows)  # not through Python: DATE '9999-12-31' + 1 has no date
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    return out


def _eval(node: exp.Expression, t: pa.Table):
    """``node``'s value over ``t``; an operation Arrow has no kernel for (types SQL does not combine
    so, e.g. ``b + 1`` of a BOOLEAN) is a WindowSpecError naming the operation and its argument types,
    an overflow a WindowRuntimeError."""
    try:
        return _eval_node(node, t)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        types = ", ".join(sql_type(_eval_node(a, t).type) for a in _operands(node))
        raise WindowSpecError(
            f"{node.sql(dialect=DIALECT)} cannot be computed for {types or 'these'} arguments"
        ) from None
    except pa.ArrowInvalid as e:
        raise WindowRuntimeError(f"{node.sql(dialect=DIALECT)}: {str(e).splitlines()[0]}") from None


def _operands(node: exp.Expression) -> list[exp.Expression]:
    """The direct sub-expressions of an operation (for its error message)."""
    return [
        a for a in (node.args.get("this"), node.args.get("expression")) if isinstance(a, exp.Expression)
    ] + [e for e in node.args.get("expressions") or [] if isinstance(e, exp.Expression)]


def _eval_node(node: exp.Expression, t: pa.Table):
    if isinstance(node, exp.Column):
        return t.column(column_of(node, t))
    if isinstance(node, exp.Paren):
        return _eval(node.this, t)
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
        value = literal_value(node, node.sql(dialect=DIALECT))
        return pa.scalar(value, type=literal_type(value))  # Spark's: `3` is INT, so `i * 3` is INT
    if isinstance(node, exp.Interval):
        return _interval_scalar(interval_literal(node), node.sql(dialect=DIALECT))
    if isinstance(node, exp.Neg):
        if isinstance(node.this, exp.Literal) and not node.this.is_string:
            # Spark's parser reads ``-2147483648`` as one literal (an INT), not as the negation of
            # the BIGINT 2147483648; ``-(2147483648)`` is that negation (a Paren, below)
            value = literal_value(node, node.sql(dialect=DIALECT))
            return pa.scalar(value, type=literal_type(value))
        return _unary("negate_checked", _eval(node.this, t), node.sql(dialect=DIALECT))
    if isinstance(node, exp.Not):
        return pc.invert(_eval(node.this, t))
    if type(node) in _ARITHMETIC:
        return _arithmetic(node, t)
    if type(node) in _COMPARE:
        return _compare(_COMPARE[type(node)], _eval(node.this, t), _eval(node.expression, t))
    if type(node) in _BINARY:
        return pc.call_function(_BINARY[type(node)], [_eval(node.this, t), _eval(node.expression, t)])
    if isinstance(node, exp.Is):
        inner = _eval(node.this, t)
        if isinstance(node.expression, exp.Null):
            return pc.is_null(inner)
    if isinstance(node, exp.Cast):
        target, fields = arrow_type(node.to), cast_fields(node.to)
        value = _eval(node.this, t)
        if pa.types.is_date32(target) and (kind_of(value.type).is_numeric or pa.types.is_boolean(value.type)):
            raise WindowSpecError(
                f"{node.sql(dialect=DIALECT)}: Spark cannot cast {sql_type(value.type)} to DATE "
                "(DATATYPE_MISMATCH; it was read as a count of days)"
            )
        source = interval_fields(node.this, t) if kind_of(value.type) is TypeFamily.INTERVAL else ""
        if isinstance(value, pa.Scalar):
            value = pa.array([value.as_py()], type=value.type if value.type != pa.null() else None)
            try:
                return casts.cast(value, target, source, fields)[0]
            except casts.CastError as e:  # a constant Spark fails on in every row
                raise WindowSpecError(f"{e}, in {node.sql(dialect=DIALECT)}") from None
        if isinstance(value, pa.ChunkedArray):
            value = value.combine_chunks()
        try:
            return casts.cast(value, target, source, fields)  # Spark drops the fraction (1.9 -> 1)
        except casts.CastError as e:
            raise WindowRuntimeError(f"{e}, in {node.sql(dialect=DIALECT)}") from None
    if isinstance(node, exp.Coalesce):
        values = [_eval(e, t) for e in [node.this, *node.expressions]]
        typed = [v for v in values if not pa.types.is_null(v.type)]  # NULL (VOID, lag()) adds nothing
        return values[0] if not typed else typed[0] if len(typed) == 1 else pc.coalesce(*_widened(typed))
    if isinstance(node, exp.Abs):
        return _unary("abs_checked", _eval(node.this, t), node.sql(dialect=DIALECT))
    if isinstance(node, exp.In):
        listed = node.expressions
        items = [
            _eval(e, t).as_py() if e.find(exp.Interval, exp.Cast) else literal_value(e, "IN list")
            for e in listed
        ]
        return _in(_eval(node.this, t), items)
    if isinstance(node, exp.Between):
        x = _eval(node.this, t)
        return pc.and_kleene(
            _compare("greater_equal", x, _eval(node.args["low"], t)),
            _compare("less_equal", x, _eval(node.args["high"], t)),
        )
    if isinstance(node, exp.Case):
        return _case(node, t)
    if isinstance(node, exp.If):  # IF(c, a, b): CASE WHEN c THEN a ELSE b END
        if node.args.get("false") is None:
            raise WindowSpecError(
                f"{node.sql(dialect=DIALECT)}: IF takes three arguments (Spark: WRONG_NUM_ARGS)"
            )
        branch = node.copy()
        if pa.types.is_null(_eval(node.this, t.schema.empty_table()).type):
            branch.set("this", exp.false())  # Spark casts IF's NULL condition to BOOLEAN (CASE's not)
        return _case(exp.Case(ifs=[branch], default=node.args.get("false")), t)
    if isinstance(node, exp.Nullif):
        return _nullif(node, t)
    if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        same = _null_safe_equal(_eval(node.this, t), _eval(node.expression, t))
        return same if isinstance(node, exp.NullSafeEQ) else pc.invert(same)
    if isinstance(node, (exp.Greatest, exp.Least)):
        return _extreme(node, t)
    if isinstance(node, exp.Round) or (isinstance(node, exp.Anonymous) and node.name.lower() == "bround"):
        return _round(node, t)
    if isinstance(node, (exp.Like, exp.ILike)) or (
        isinstance(node, exp.Escape) and isinstance(node.this, (exp.Like, exp.ILike))
    ):
        return _like(node, t)
    if type(node) in _DATE_FUNCTIONS:
        return _date_function(node, t)
    if type(node) in _STRING_FUNCTIONS:
        return _string_function(node, t)
    if isinstance(node, (exp.Ceil, exp.Floor)) and node.args.get("decimals") is None:
        return _to_integral("ceil" if isinstance(node, exp.Ceil) else "floor", _eval(node.this, t), node)
    raise WindowSpecError(
        f"unsupported expression {node.sql(dialect=DIALECT)} (supported: columns, constants, "
        "+ - * / %, comparisons, <=>, BETWEEN, AND OR NOT, IS NULL, CAST, COALESCE, NVL, IFNULL, "
        "NULLIF, IF, GREATEST, LEAST, ABS, CEIL, FLOOR, ROUND, BROUND, IN, CASE, UPPER, LOWER, "
        "LENGTH, TRIM, LTRIM, RTRIM, SUBSTRING, CONCAT, ||, LIKE, ILIKE, TO_DATE, DATEDIFF, DATE_ADD, "
        "DATE_SUB, UNIX_TIMESTAMP, YEAR, QUARTER, MONTH, DAY, DAYOFWEEK, DAYOFYEAR, WEEKOFYEAR, HOUR, "
        "MINUTE, SECOND)"
    )


def _compare(fn: str, a, b):
    """SQL comparison with Spark's NaN rule: NaN = NaN is true and NaN is greater than every other
    value (Arrow compares IEEE-style, where every comparison with NaN is false)."""
    floats = [x for x in (a, b) if pa.types.is_floating(x.type)]
    if floats and {kind_of(a.type), kind_of(b.type)} <= {
        TypeFamily.FLOAT,
        TypeFamily.INT,
        TypeFamily.DECIMAL,
    }:
        # a number beside a DOUBLE compares as a DOUBLE (an integer past 2**53 rounded to the nearest,
        # where Arrow's implicit cast fails; a DECIMAL correctly rounded)
        a, b = (_cast_operand(x, pa.float64(), "a comparison") for x in (a, b))
    plain = pc.call_function(fn, [a, b])
    if not floats:
        return plain

    def nan_flag(x):
        return pc.is_nan(x) if pa.types.is_floating(x.type) else pa.scalar(False)

    a_nan, b_nan = nan_flag(a), nan_flag(b)
    # compare the NaN flags instead where either side is NaN (and neither is NULL)
    by_flag = pc.call_function(fn, [pc.cast(a_nan, pa.int8()), pc.cast(b_nan, pa.int8())])
    use_flag = pc.and_(pc.fill_null(pc.or_(a_nan, b_nan), False), pc.is_valid(plain))
    return pc.if_else(use_flag, by_flag, plain)


def _arithmetic(node: exp.Expression, t: pa.Table):
    """``+ - * / %`` with Spark's operand types (ANSI mode, Spark 4's default). With a DECIMAL
    operand and the other an integer or DECIMAL, DECIMAL arithmetic (``decimals.arithmetic``): an
    integer column is the DECIMAL of its type (INT: DECIMAL(10, 0)), an integer literal the
    DECIMAL of its digits (``m * 2``: DECIMAL(1, 0)). A DECIMAL beside a DOUBLE or FLOAT is a
    DOUBLE. ``/`` of other numbers divides DOUBLEs. A zero divisor beside a dividend that is not
    NULL, and an overflow, are a WindowRuntimeError, as Spark fails the query (DIVIDE_BY_ZERO,
    ARITHMETIC_OVERFLOW, NUMERIC_VALUE_OUT_OF_RANGE). O(n).

    >>> m = pa.table({"m": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(12, 2))})
    >>> r = evaluate_expr(Expr.of("m * 2"), m)
    >>> r.type, r.to_pylist()
    (Decimal128Type(decimal128(14, 2)), [Decimal('2.50'), None])
    """
    op, name = _ARITHMETIC[type(node)], node.sql(dialect=DIALECT)
    a, b = _eval(node.this, t), _eval(node.expression, t)
    if TypeFamily.INTERVAL in (kind_of(a.type), kind_of(b.type)):
        return _interval_arithmetic(op, a, b, name)
    if op == "-":
        a, b = _as_times(a, b, name)
    if pa.types.is_date32(a.type) or pa.types.is_date32(b.type):
        return _date_arithmetic(op, a, b, name)
    if op == "-" and pa.types.is_timestamp(a.type) and pa.types.is_timestamp(b.type):
        # Spark's INTERVAL DAY TO SECOND (Arrow's duration would be in the timestamps' own unit)
        return pc.subtract_checked(a, b).cast(INTERVAL_DAY_TO_SECOND)
    a, b = _typed_nulls(a, b)
    kinds = {kind_of(a.type), kind_of(b.type)}
    numbers = kinds <= {TypeFamily.DECIMAL, TypeFamily.INT, TypeFamily.FLOAT}
    exact = numbers and TypeFamily.DECIMAL in kinds and TypeFamily.FLOAT not in kinds
    if exact:
        ta, tb = _decimal_operand_type(a, node.this), _decimal_operand_type(b, node.expression)
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) and t.num_rows == 0:
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


def _as_times(a, b, name: str):
    """The operands of ``-`` as Spark reads a date or time difference: a string beside a DATE or
    TIMESTAMP is cast to its type (``d - '2024-01-01'``; a constant Spark cannot read is refused, a
    column's value fails the query, CAST_INVALID_INPUT), a DATE beside a TIMESTAMP is that
    TIMESTAMP type's midnight (``ts - d``: an INTERVAL DAY TO SECOND). Others as they are."""
    kinds = (kind_of(a.type), kind_of(b.type))
    for time, other in ((0, 1), (1, 0)):
        x, y = (a, b)[time], (a, b)[other]
        if kinds[time].is_temporal and kinds[other] is TypeFamily.STRING:
            y = _cast_operand(y, x.type, name)
        elif kinds[time] is TypeFamily.TIMESTAMP and kinds[other] is TypeFamily.DATE:
            y = y.cast(x.type)  # midnight, in the session's (UTC) zone
        else:
            continue
        return (x, y) if time == 0 else (y, x)
    return a, b


def _cast_operand(x, target: pa.DataType, name: str):
    """An operand cast to ``target`` as Spark casts it implicitly: a constant that fails is refused
    (WindowSpecError: it fails in every row), a column's value fails the query (WindowRuntimeError)."""
    try:
        if isinstance(x, pa.Scalar):
            return casts.cast(pa.array([x.as_py()], x.type), target)[0]
        return casts.cast(x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x, target)
    except casts.CastError as e:
        error = WindowSpecError if isinstance(x, pa.Scalar) else WindowRuntimeError
        raise error(f"{e}, in {name} (Spark: CAST_INVALID_INPUT)") from None


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


def _unary(fn: str, x, name: str):
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


_DAYS = (pa.int8(), pa.int16(), pa.int32())  # Spark's date_add takes TINYINT, SMALLINT or INT days


def _date_arithmetic(op: str, a, b, name: str):
    """``DATE + n``, ``n + DATE`` and ``DATE - n`` as Spark computes them (its ``date_add`` and
    ``date_sub``): ``n`` a TINYINT, SMALLINT or INT (a BIGINT, DECIMAL, DOUBLE or string is refused,
    as Spark refuses it), the day count added in 32-bit integers that wrap as Java's do (Spark does
    not check ``date_add`` for overflow, even in ANSI mode); the result a DATE. ``DATE - DATE`` is
    Spark's INTERVAL DAY (``INTERVAL_DAY``), a DATE minus a bare NULL (or a NULL minus a DATE) a NULL
    one. A bare NULL added to a DATE: ``d + NULL`` is a TIMESTAMP (Spark reads it as a timestamp plus
    an interval), NULL in every row. Every other operation on a DATE is refused.

    >>> import datetime as dt

    >>> d = pa.table({"d": pa.array([dt.date(2024, 1, 31), None], pa.date32())})
    >>> evaluate_expr(Expr.of("d + 1"), d).to_pylist()
    [datetime.date(2024, 2, 1), None]
    >>> evaluate_expr(Expr.of("d - DATE '2024-01-01'"), d).to_pylist()
    [datetime.timedelta(days=30), None]
    """
    date_a, date_b = pa.types.is_date32(a.type), pa.types.is_date32(b.type)
    if op == "-" and (date_a or pa.types.is_null(a.type)) and (date_b or pa.types.is_null(b.type)):
        if not (date_a and date_b):
            return pa.scalar(None, INTERVAL_DAY)
        days = [pc.cast(pc.cast(x, pa.int32()), pa.int64()) for x in (a, b)]
        return pc.multiply(pc.subtract(*days), 86400).cast(INTERVAL_DAY)  # never overflows int64
    if op in ("+", "-") and date_a != date_b and (op == "+" or date_a):
        days = b if date_a else a
        if pa.types.is_null(days.type):
            return pa.scalar(None, pa.timestamp("us", tz="UTC"))  # Spark's TIMESTAMP
        if days.type in _DAYS:
            start, days = (a, b) if date_a else (b, a)
            whole = pc.cast(start, pa.int32()), pc.cast(days, pa.int32())
            total = pc.call_function("add" if op == "+" else "subtract", list(whole))  # wraps
            return pc.cast(total, pa.date32())
        raise WindowSpecError(
            f"{name}: the days added to or subtracted from a DATE must be an INT, SMALLINT or "
            f"TINYINT, not {sql_type(days.type)} (as in Spark's date_add)"
        )
    raise WindowSpecError(
        f"{name} cannot be computed for {sql_type(a.type)}, {sql_type(b.type)} arguments: a DATE "
        "takes only + and - of a number of days, and - of a DATE"
    )


def _interval_scalar(value: Interval, name: str) -> pa.Scalar:
    """An interval literal's value in its carrier (``interval_type``); one past Spark's long of
    microseconds is refused, as Spark's parser refuses it (INTERVAL_ARITHMETIC_OVERFLOW), and so is
    a year-month one."""
    if value.year_month:
        raise WindowSpecError(_YEAR_MONTH.format(name))
    micros = value.days * FIELD_MICROS["DAY"] + value.micros
    if abs(micros) > INTERVAL_LIMIT["us"]:
        raise WindowSpecError(f"{name} is past Spark's largest interval (INTERVAL_ARITHMETIC_OVERFLOW)")
    return pa.scalar(micros, INTERVAL_DAY_TO_SECOND).cast(interval_type(value.fields))


def _interval_arithmetic(op: str, a, b, name: str):
    """``+ - * /`` beside a day-time interval as Spark computes them: two intervals add up to the
    common type (INTERVAL DAY beside INTERVAL DAY, else microseconds; a WindowRuntimeError past
    Spark's long of microseconds, as its ANSI mode fails); a bare NULL gives a NULL interval; a
    DATE plus or minus an INTERVAL DAY is a DATE (its days added as by ``date_add``), plus or minus
    any other day-time interval a TIMESTAMP (from the date's midnight), a TIMESTAMP plus or minus
    an interval a TIMESTAMP; an interval times a number, or over one, is an INTERVAL DAY TO SECOND
    (``_scaled``). Every other pairing (an interval beside a number in ``+``, ``interval - DATE``,
    ``n / interval``) is refused. O(n).

    >>> import datetime as dt

    >>> t = pa.table({"d": pa.array([dt.date(2024, 3, 1), None], pa.date32())})
    >>> evaluate_expr(Expr.of("d + (d - DATE '2024-02-28')"), t).to_pylist()
    [datetime.date(2024, 3, 3), None]
    >>> evaluate_expr(Expr.of("d + INTERVAL '90' MINUTE"), t).cast(pa.timestamp("us")).to_pylist()
    [datetime.datetime(2024, 3, 1, 1, 30), None]
    """
    left, right = kind_of(a.type) is TypeFamily.INTERVAL, kind_of(b.type) is TypeFamily.INTERVAL
    interval, other = (a, b) if left else (b, a)
    if op in ("+", "-"):
        if left and right:
            if a.type != b.type:  # DAY beside another: both in microseconds
                a, b = a.cast(INTERVAL_DAY_TO_SECOND), b.cast(INTERVAL_DAY_TO_SECOND)
            total = pc.call_function(_CHECKED[op], [a, b])
            ticks = pc.abs(pc.cast(total, pa.int64()))
            biggest = (ticks if isinstance(ticks, pa.Scalar) else pc.max(ticks)).as_py()
            if biggest is not None and biggest > INTERVAL_LIMIT[a.type.unit]:
                raise WindowRuntimeError(f"{name} overflows {sql_type(a.type)} (Spark: ARITHMETIC_OVERFLOW)")
            return total
        if pa.types.is_null(other.type):
            return pa.scalar(None, interval.type)
        if op == "+" or right:  # an interval added to, or taken from, a date or time
            if pa.types.is_date32(other.type) and interval.type == INTERVAL_DAY:
                days = pc.cast(pc.divide(pc.cast(interval, pa.int64()), 86400), pa.int32())
                return _date_arithmetic(op, other, days, name)
            if pa.types.is_date32(other.type):
                other = other.cast(pa.timestamp("us", tz="UTC"))  # Spark's TIMESTAMP, at midnight
            if pa.types.is_timestamp(other.type):
                step = pc.cast(interval, pa.duration(other.type.unit))
                return pc.call_function(_CHECKED[op], [other, step])
    elif (op == "*" or (op == "/" and left)) and not (left and right):
        if kind_of(other.type).is_numeric or other.type in (pa.null(), pa.string()):
            return _scaled(op, interval, other, name)
    raise WindowSpecError(f"{name} cannot be computed for {sql_type(a.type)}, {sql_type(b.type)} arguments")


def _scaled(op: str, interval, number, name: str):
    """An interval times or over a number, as Spark computes it (its MultiplyDTInterval and
    DivideDTInterval): an INTERVAL DAY TO SECOND of microseconds; by an integer exactly (``*`` in
    64-bit integers, ``/`` rounded half up), by a DOUBLE or FLOAT in DOUBLE then rounded half up
    (all vectorised), by a DECIMAL exactly then rounded half up (row by row, in Python's decimals);
    a string is read as a DOUBLE, a bare NULL gives NULL. A WindowRuntimeError where Spark's query
    fails: a zero divisor (INTERVAL_DIVIDED_BY_ZERO), a NaN or infinite result, one past Spark's
    long of microseconds. O(n).

    >>> import datetime as dt

    >>> t = pa.table({"d": pa.array([dt.date(2024, 1, 8), None], pa.date32())})
    >>> evaluate_expr(Expr.of("(d - DATE '2024-01-01') / 3"), t).to_pylist()
    [datetime.timedelta(days=2, seconds=28800), None]
    """
    if pa.types.is_null(number.type):
        return pa.scalar(None, INTERVAL_DAY_TO_SECOND)
    if pa.types.is_string(number.type):
        number = _cast_operand(number, pa.float64(), name)
    kind = kind_of(number.type)
    micros, valid = _numpy(interval.cast(INTERVAL_DAY_TO_SECOND).cast(pa.int64()), pa.int64())
    if kind is TypeFamily.DECIMAL:
        factors = np.array(_pylist(number), dtype=object)
        factors_valid = np.array([x is not None for x in factors], dtype=bool)
    else:
        factors, factors_valid = _numpy(number, pa.float64() if kind is TypeFamily.FLOAT else pa.int64())
    valid = valid & factors_valid
    micros, factors = np.broadcast_arrays(micros, factors)
    valid = np.broadcast_to(valid, micros.shape)
    if op == "/" and np.any(valid & (factors == 0)):
        raise WindowRuntimeError(
            f"Division by zero in {name} (Spark: INTERVAL_DIVIDED_BY_ZERO); leave such rows out of it, "
            f"e.g. CASE WHEN divisor <> 0 THEN {name} END"
        )
    if kind is TypeFamily.DECIMAL:
        out = [_decimal_scale(op, int(m), x) if ok else 0 for m, x, ok in zip(micros, factors, valid)]
        whole = np.array(out, dtype=object)
        if any(abs(w) > INTERVAL_LIMIT["us"] for w in out):
            raise _interval_overflow(name)
        whole = whole.astype(np.int64)
    elif kind is TypeFamily.FLOAT:
        whole = _float_scale(op, micros, np.where(valid, factors, 1.0), valid, name)
    else:
        whole = _integer_scale(op, micros, np.where(valid, factors, 1), valid, name)
    result = pa.array(whole, pa.int64(), mask=~valid).cast(INTERVAL_DAY_TO_SECOND)
    return result[0] if isinstance(interval, pa.Scalar) and isinstance(number, pa.Scalar) else result


def _pylist(x) -> list:
    """A scalar's value as a list of one, an array's values."""
    return [x.as_py()] if isinstance(x, pa.Scalar) else x.to_pylist()


_I64_MIN = np.iinfo(np.int64).min


def _interval_overflow(name: str) -> WindowRuntimeError:
    """The error of a scaled interval past Spark's long of microseconds, for each factor's kind."""
    return WindowRuntimeError(f"{name} overflows INTERVAL DAY TO SECOND (Spark: long overflow)")


def _integer_scale(op: str, micros: np.ndarray, n: np.ndarray, valid: np.ndarray, name: str) -> np.ndarray:
    """``micros * n`` (Java's multiplyExact) or ``micros / n`` rounded half up (Guava's
    LongMath.divide), exactly in 64-bit integers; ``n`` has no zero. O(n)."""
    overflow = _interval_overflow(name)
    if op == "*":
        try:
            whole = pc.multiply_checked(pa.array(micros), pa.array(n)).to_numpy()
        except pa.ArrowInvalid:
            raise overflow from None
    else:
        if np.any(valid & (micros == _I64_MIN) & (n == -1)):
            raise overflow
        q = micros // n  # rounded down; then toward zero, the remainder taking the dividend's sign
        r = micros - q * n
        toward_zero = (r != 0) & ((micros < 0) != (n < 0))
        q, r = q + toward_zero, r - np.where(toward_zero, n, 0)
        r_abs, n_abs = np.abs(r).view(np.uint64), np.abs(n).view(np.uint64)  # |INT64_MIN| as 2**63
        half = r_abs >= n_abs - r_abs  # 2|r| >= |n|: away from zero
        whole = q + np.where(half, np.sign(micros) * np.sign(n), 0)
    if np.any(valid & (whole == _I64_MIN)):  # past Spark's interval, as its own check says
        raise overflow
    return whole


def _float_scale(op: str, micros: np.ndarray, x: np.ndarray, valid: np.ndarray, name: str) -> np.ndarray:
    """``micros * x`` or ``micros / x`` in DOUBLE, rounded half up to a whole number of
    microseconds (Guava's DoubleMath.roundToLong, HALF_UP); ``x`` has no zero divisor. O(n)."""
    with np.errstate(over="ignore", invalid="ignore"):
        value = micros.astype(np.float64) * x if op == "*" else micros.astype(np.float64) / x
    if np.any(valid & ~np.isfinite(value)):
        raise WindowRuntimeError(f"{name}: the result is infinite or NaN (Spark: ArithmeticException)")
    value = np.where(valid, value, 0.0)
    whole = np.trunc(value)
    whole += np.where(np.abs(value - whole) >= 0.5, np.sign(value), 0.0)  # value - whole is exact
    if np.any(np.abs(whole) >= 2.0**63):
        raise _interval_overflow(name)
    return whole.astype(np.int64)


def _decimal_scale(op: str, micros: int, x: decimal.Decimal) -> int:
    """``micros * x`` or ``micros / x`` for a DECIMAL ``x``, exactly, rounded half up to whole
    microseconds (Spark's Decimal arithmetic, then setScale(0, HALF_UP)); ``x`` is no zero divisor."""
    with decimal.localcontext() as ctx:
        ctx.prec = 80  # past any product or quotient's integer digits: rounded once, below
        exact = decimal.Decimal(micros) * x if op == "*" else decimal.Decimal(micros) / x
    return int(exact.to_integral_value(decimal.ROUND_HALF_UP))


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
        # the error Arrow's kernels raise for such types, which _eval words in SQL
        raise pa.ArrowNotImplementedError(f"no remainder of {types}")
    _refuse_zero_divisors(a, b, name)
    if TypeFamily.FLOAT not in kinds:
        out = pa.from_numpy_dtype(np.result_type(*(x.to_pandas_dtype() for x in types or [pa.int32()])))
    else:
        out = _float_type(*types)
    (x, x_valid), (y, y_valid) = _numpy(a, out), _numpy(b, out)
    valid = x_valid & y_valid
    # 1 in place of the divisors of NULL rows: their remainders are dropped, and numpy warns on 0
    with np.errstate(invalid="ignore"):  # fmod(inf, y) is NaN, as in Java
        r = pa.array(np.fmod(x, np.where(valid, y, 1)), type=out, mask=~valid)
    return r[0] if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar) else r


def _numpy(x, to: pa.DataType) -> tuple[np.ndarray, np.ndarray]:
    """(values as a numpy array of ``to``, NULL slots 0; valid mask) of an array, or of a scalar
    (one value, which numpy broadcasts against the other operand)."""
    if isinstance(x, pa.Scalar):
        valid = x.is_valid
        return np.array([x.as_py() if valid else 0], dtype=to.to_pandas_dtype()), np.array([valid])
    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    valid = x.is_valid().to_numpy(zero_copy_only=False)
    return x.cast(to).fill_null(0).to_numpy(zero_copy_only=False), valid


def _in(x, items: list):
    """SQL ``x IN (items)``: true on a match; NULL when ``x`` is NULL, or when nothing matches and
    the list holds a NULL; false otherwise. Interval items are timedeltas."""
    present = [v for v in items if v is not None]
    if kind_of(x.type) is TypeFamily.INTERVAL:  # intervals of both carriers compare in microseconds
        x = x.cast(INTERVAL_DAY_TO_SECOND)
    typed = pa.array(present, x.type) if kind_of(x.type) is TypeFamily.INTERVAL else pa.array(present)
    hit = pc.is_in(x, value_set=typed if present else pa.array([], type=x.type))
    unknown = pc.is_null(x)
    if len(present) < len(items):
        unknown = pc.or_(unknown, pc.invert(hit))
    return pc.if_else(unknown, pa.scalar(None, pa.bool_()), hit)


def _case(node: exp.Case, t: pa.Table):
    """CASE WHEN c THEN v ... ELSE d END, and the simple form CASE x WHEN w THEN v ... (x = w)."""
    default = node.args.get("default")
    ifs = node.args.get("ifs") or []
    subject = node.args.get("this")
    results = _widened(
        [_eval(b.args["true"], t) for b in ifs]
        + [_eval(default, t) if default is not None else pa.scalar(None)]
    )
    out = results[-1]
    for branch, value in zip(reversed(ifs), reversed(results[:-1])):
        if subject is not None:  # x = w; x = NULL never holds
            cond = _eval(exp.EQ(this=subject.copy(), expression=branch.this.copy()), t)
            cond = pa.scalar(False) if pa.types.is_null(cond.type) else cond
        else:
            cond = _eval(branch.this, t)
        if not pa.types.is_boolean(cond.type):  # WHEN NULL, WHEN 1: Spark's analysis refuses them
            raise WindowSpecError(
                f"CASE WHEN {branch.this.sql(dialect=DIALECT)}: a condition must be BOOLEAN, not "
                f"{sql_type(cond.type)} (Spark: DATATYPE_MISMATCH)"
            )
        out = pc.if_else(pc.fill_null(cond, False), value, out)
    return out


# the parts of a DATE or TIMESTAMP Spark's functions read, as Arrow computes them (INT results)
_DATE_PARTS = {
    exp.Year: pc.year,
    exp.Quarter: pc.quarter,
    exp.Month: pc.month,
    exp.Day: pc.day,
    exp.DayOfMonth: pc.day,
    exp.DayOfWeek: functools.partial(pc.day_of_week, count_from_zero=False, week_start=7),  # Sunday 1
    exp.DayOfYear: pc.day_of_year,
    exp.WeekOfYear: pc.iso_week,  # Spark's weekofyear is ISO 8601's week
    exp.Hour: pc.hour,
    exp.Minute: pc.minute,
    exp.Second: pc.second,
}
_DATE_FUNCTIONS = (*_DATE_PARTS, exp.TsOrDsToDate, exp.DateDiff, exp.TsOrDsAdd, exp.StrToUnix)


def _date_function(node: exp.Expression, t: pa.Table):
    """TO_DATE(x) (as CAST(x AS DATE)), DATEDIFF(end, start) (days, an INT), DATE_ADD / DATE_SUB
    (as DATE + n), UNIX_TIMESTAMP(ts) (whole seconds since 1970, the fraction dropped, a BIGINT), and the
    parts YEAR, QUARTER, MONTH, DAY, DAYOFWEEK (Sunday 1), DAYOFYEAR, WEEKOFYEAR (ISO), HOUR, MINUTE,
    SECOND (INTs) of a DATE or TIMESTAMP, in the session's time (a stream's timestamps are its
    wall-clock times; ``overwindow.evaluate`` reads zoned timestamps in UTC). O(n).

    >>> import datetime as dt

    >>> t = pa.table({"d": pa.array([dt.date(2024, 3, 10), None], pa.date32())})
    >>> [evaluate_expr(Expr.of(e), t).to_pylist() for e in ("dayofweek(d)", "datediff(d, DATE '2024-01-01')")]
    [[1, None], [69, None]]
    """
    name = node.sql(dialect=DIALECT)
    if isinstance(node, exp.TsOrDsToDate):
        if node.args.get("format") is not None:
            raise WindowSpecError(f"{name}: overwindow reads TO_DATE without a format only")
        value = _eval(node.this, t.schema.empty_table())
        if kind_of(value.type).is_numeric or pa.types.is_boolean(value.type):
            raise WindowSpecError(  # Spark reads it as a string, and no number is a date's text
                f"{name}: Spark reads {sql_type(value.type)} values as text, which is no DATE "
                "(CAST_INVALID_INPUT in every row)"
            )
        return _eval(exp.cast(node.this.copy(), "DATE"), t)
    if isinstance(node, exp.DateDiff):
        end, start = _eval(node.this, t), _eval(node.expression, t)
        if pa.types.is_null(end.type) or pa.types.is_null(start.type):
            return pa.scalar(None, pa.int32())
        return pc.subtract(*(pc.cast(pc.cast(x, pa.int32()), pa.int64()) for x in (end, start))).cast(
            pa.int32()
        )
    if isinstance(node, exp.TsOrDsAdd):
        if (node.args.get("unit") or exp.var("DAY")).name.upper() != "DAY":
            raise WindowSpecError(f"unsupported expression {name}")
        if pa.types.is_null(_eval(node.expression, t.schema.empty_table()).type):
            return pa.scalar(None, pa.date32())  # a DATE (``d + NULL`` alone is a TIMESTAMP)
        start = exp.TsOrDsToDate(this=node.this.copy())
        return _eval(exp.Add(this=start, expression=exp.paren(node.expression.copy())), t)
    x = _eval(node.this, t)
    if pa.types.is_null(x.type):
        return pa.scalar(None, pa.int64() if isinstance(node, exp.StrToUnix) else pa.int32())
    if kind_of(x.type) not in (TypeFamily.DATE, TypeFamily.TIMESTAMP):
        raise WindowSpecError(
            f"{name}: overwindow reads a DATE or TIMESTAMP here, not {sql_type(x.type)}: CAST it first"
        )
    if isinstance(node, exp.StrToUnix):
        if pa.types.is_date32(x.type):  # midnight of the session's zone
            x = x.cast(pa.timestamp("us"))
        return pc.divide(x.cast(pa.timestamp("us", tz=x.type.tz)).cast(pa.int64()), 1_000_000)  # toward 0
    if pa.types.is_date32(x.type) and isinstance(node, (exp.Hour, exp.Minute, exp.Second)):
        x = x.cast(pa.timestamp("us"))  # Spark reads a DATE as its midnight: 0
    return _DATE_PARTS[type(node)](x).cast(pa.int32())


_STRING_FUNCTIONS = (exp.Upper, exp.Lower, exp.Length, exp.Trim, exp.Substring, exp.Concat, exp.DPipe)


def _string_function(node: exp.Expression, t: pa.Table):
    """UPPER, LOWER (Unicode's full case mapping, as Java's: ``upper('ß')`` is ``'SS'``), LENGTH
    (in characters), TRIM / LTRIM / RTRIM (spaces only, or the characters of ``TRIM(BOTH 'xy' FROM
    s)``), SUBSTRING(s, pos[, len]) (1-based, a negative ``pos`` counted from the end, as Spark's
    ``substringSQL``) of STRING values; CONCAT and ``||`` of any values as strings (NULL where any
    is NULL). O(total characters); a Python step per row for non-ASCII case mapping and for
    SUBSTRING.

    >>> t = pa.table({"s": [" Straße ", None]})
    >>> [evaluate_expr(Expr.of(e), t).to_pylist() for e in ("upper(trim(s))", "substr(s, -3, 2)")]
    [['STRASSE', None], ['ße', None]]
    """
    if isinstance(node, (exp.Concat, exp.DPipe)):
        parts = node.expressions if isinstance(node, exp.Concat) else [node.this, node.expression]
        values = [_eval(p, t) for p in parts]
        values = [_as_string(p, v, t) for p, v in zip(parts, values)]
        if isinstance(node, exp.Concat) and len(values) == 1:
            return values[0]
        return pc.binary_join_element_wise(*values, "")
    x = _eval(node.this, t)
    if pa.types.is_null(x.type):
        return pa.scalar(None, pa.int32() if isinstance(node, exp.Length) else pa.string())
    if kind_of(x.type) is not TypeFamily.STRING:
        raise WindowSpecError(
            f"{node.sql(dialect=DIALECT)} takes a STRING, not {sql_type(x.type)}: CAST it AS STRING first"
        )
    if isinstance(node, exp.Length):
        return pc.utf8_length(x).cast(pa.int32())
    if isinstance(node, exp.Trim):
        chars = node.args.get("expression")
        chars = " " if chars is None else literal_value(chars, node.sql(dialect=DIALECT))
        if chars is None:  # TRIM(BOTH NULL FROM s)
            return pa.scalar(None, pa.string())
        position = (node.args.get("position") or "BOTH").upper()
        fn = {"LEADING": "utf8_ltrim", "TRAILING": "utf8_rtrim"}.get(position, "utf8_trim")
        return pc.call_function(fn, [x], pc.TrimOptions(chars))
    if isinstance(node, exp.Substring):
        return _substring(node, x, t)
    upper = isinstance(node, exp.Upper)
    if isinstance(x, pa.Scalar):
        return pa.scalar(_case_mapped(x.as_py(), upper), x.type)
    if pc.all(pc.string_is_ascii(x)).as_py() in (True, None):
        return pc.ascii_upper(x) if upper else pc.ascii_lower(x)
    return pa.array([_case_mapped(v, upper) for v in x.to_pylist()], x.type)


def _like(node: exp.Expression, t: pa.Table):
    """``x [NOT] LIKE 'pattern' [ESCAPE 'c']`` and ILIKE (both sides lower-cased, as Spark's): ``%``
    any characters, ``_`` any one (a newline too), the escape character (a backslash unless ESCAPE
    names one) before ``%``, ``_`` or itself for that character; a pattern Spark refuses (the
    escape before another character, or last) is refused. The pattern must be a constant. O(total
    characters).

    >>> t = pa.table({"s": ["a%b", "axb", None]})
    >>> [evaluate_expr(Expr.of(e), t).to_pylist() for e in ("s LIKE 'a!%b' ESCAPE '!'", "s NOT ILIKE 'A_B'")]
    [[True, False, None], [False, False, None]]
    """
    name = node.sql(dialect=DIALECT)
    escape = "\\"
    if isinstance(node, exp.Escape):
        escape = literal_value(node.expression, name)
        node = node.this
        if not isinstance(escape, str) or len(escape) != 1:
            raise WindowSpecError(f"{name}: the ESCAPE must be one character")
    try:
        pattern = literal_value(node.expression, name)
    except WindowSpecError:
        raise WindowSpecError(f"{name}: overwindow takes a constant LIKE pattern") from None
    x = _eval(node.this, t)
    if pattern is None or pa.types.is_null(x.type):
        return pa.scalar(None, pa.bool_())
    if not isinstance(pattern, str) or kind_of(x.type) is not TypeFamily.STRING:
        raise WindowSpecError(f"{name}: LIKE compares a STRING with a STRING pattern")
    ilike = isinstance(node, exp.ILike)
    if ilike:
        pattern = _case_mapped(pattern, upper=False)
        x = _string_function(exp.Lower(this=node.this.copy()), t)
    out = pc.match_substring_regex(x, _like_regex(pattern, escape, name))
    return pc.invert(out) if node.args.get("negate") else out


def _like_regex(pattern: str, escape: str, name: str) -> str:
    """Spark's LIKE pattern with escape character ``escape`` as a regular expression (as Spark's
    ``escapeLikeRegex`` writes it: Arrow's own LIKE reads an escaped backslash wrongly at the ends
    of a pattern), refusing what Spark refuses. O(len(pattern)).

    >>> _like_regex("a_!%%", "!", "")
    '(?s)^a.%.*$'
    """
    out, chars = [], iter(pattern)
    for c in chars:
        if c == escape:
            nxt = next(chars, None)
            if nxt is None:
                raise WindowSpecError(
                    f"{name}: a LIKE pattern may not end with the escape character (Spark: INVALID_FORMAT)"
                )
            if nxt not in ("%", "_", escape):
                raise WindowSpecError(
                    f"{name}: the escape character may not precede {nxt!r} in a LIKE pattern "
                    "(Spark: INVALID_FORMAT)"
                )
            out.append(re.escape(nxt))
        else:
            out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
    return "(?s)^" + "".join(out) + "$"


def _as_string(node: exp.Expression, value, t: pa.Table):
    """``node``'s ``value`` as CONCAT reads it: a string, or CAST(node AS STRING) (Spark casts the
    others)."""
    if kind_of(value.type) is TypeFamily.STRING:
        return value
    if pa.types.is_null(value.type):
        return pa.scalar(None, pa.string())
    return _eval(exp.cast(node.copy(), "STRING"), t)


def _case_mapped(v: str | None, upper: bool) -> str | None:
    return None if v is None else v.upper() if upper else v.lower()


def _substring(node: exp.Substring, x, t: pa.Table):
    """SUBSTRING(x, pos[, len]) as Spark's ``substringSQL``: pos > 0 counts from 1, pos < 0 from the
    end, 0 is the start; ``len`` counts from that unclamped start (``substr('abc', -5, 3)`` is
    ``'a'``); NULL where any operand is. O(n), a Python step per row."""
    operands = [node.args.get("start"), node.args.get("length")]
    given = [_eval(o, t) if o is not None else pa.scalar(2**31 - 1, pa.int32()) for o in operands]
    for v in given:
        if kind_of(v.type) is not TypeFamily.INT and not pa.types.is_null(v.type):
            raise WindowSpecError(
                f"{node.sql(dialect=DIALECT)}: its position and length are INTs, not {sql_type(v.type)}"
            )
    given = [
        _cast_operand(v, pa.int32(), node.sql(dialect=DIALECT)) if v.type == pa.int64() else v for v in given
    ]
    scalar = all(isinstance(v, pa.Scalar) for v in (x, *given))
    n = 1 if scalar else t.num_rows

    def column(v):
        return [v.as_py()] * n if isinstance(v, pa.Scalar) else v.to_pylist()

    out = []
    for s, pos, length in zip(column(x), column(given[0]), column(given[1])):
        if s is None or pos is None or length is None:
            out.append(None)
            continue
        start = pos - 1 if pos > 0 else len(s) + pos if pos < 0 else 0
        end = start + length
        out.append(s[max(start, 0) : end] if max(start, 0) < end else "")
    return pa.scalar(out[0], pa.string()) if scalar else pa.array(out, pa.string())


def _round(node: exp.Expression, t: pa.Table):
    """ROUND(x, d) (half away from zero) and BROUND(x, d) (half to even), d an INT constant (0 when
    left out), in Spark's types: a number keeps its type; DECIMAL(p, s) becomes DECIMAL(p - s + 1 +
    min(s, d), min(s, d)), or DECIMAL(max(p - s + 1, 1 - d), 0) for d < 0. A DOUBLE or FLOAT is
    rounded as the decimal Spark reads it from (its shortest text: ROUND(2.675, 2) is 2.68), NaN
    and infinities as they are; an integer rounded past its type fails as Spark's ANSI mode does.
    O(n), a Python step per row for DOUBLE and FLOAT (exact decimal rounding).

    >>> m = pa.array([decimal.Decimal("9.95"), None, None], pa.decimal128(3, 2))
    >>> t = pa.table({"x": [2.675, -0.5, None], "m": m})
    >>> [evaluate_expr(Expr.of(e), t).to_pylist() for e in ("round(x, 2)", "round(m, 1)")]
    [[2.68, -0.5, None], [Decimal('10.0'), None, None]]
    """
    args = [node.this, node.args.get("decimals")] if isinstance(node, exp.Round) else node.expressions
    name = node.sql(dialect=DIALECT)
    if len(args) not in (1, 2) or args[0] is None:
        raise WindowSpecError(f"{name}: ROUND and BROUND take a number and a scale")
    digits = 0 if len(args) < 2 or args[1] is None else literal_value(args[1], name)
    if not isinstance(digits, int) or isinstance(digits, bool) or not -(2**31) <= digits < 2**31:
        raise WindowSpecError(f"{name}: the scale must be an INT constant (Spark: DATATYPE_MISMATCH)")
    half_even = not isinstance(node, exp.Round)
    x = _eval(args[0], t)
    kind = kind_of(x.type)
    if pa.types.is_null(x.type):
        return pa.scalar(None, pa.float64())
    if kind is TypeFamily.DECIMAL:
        p, s = x.type.precision, x.type.scale
        scale = min(s, digits)
        to = (
            pa.decimal128(min(max(p - s + 1, 1 - digits), 38), 0)
            if digits < 0
            else pa.decimal128(min(p - s + 1 + scale, 38), scale)
        )
        if -digits > p - s:  # every value is below half of 10**-digits: zero
            return _zeros_like(x, to)
        mode = "half_to_even" if half_even else "half_towards_infinity"
        wide = x.cast(pa.decimal256(min(p + 1, 76), s))
        return pc.round(wide, ndigits=digits, round_mode=mode).cast(to)
    if kind is TypeFamily.INT:
        if digits >= 0:
            return x
        try:
            if 10**-digits > np.iinfo(x.type.to_pandas_dtype()).max:  # Arrow cannot hold the multiple
                values = pa.array([x.as_py()], x.type) if isinstance(x, pa.Scalar) else x
                largest = pc.max(pc.abs(values.cast(pa.decimal128(38, 0)))).as_py()
                if largest is not None and largest >= 5 * 10 ** (-digits - 1):  # rounds to 10**-digits
                    raise pa.ArrowInvalid("overflow")
                return _zeros_like(x, x.type)
            return pc.round(
                x, ndigits=digits, round_mode="half_to_even" if half_even else "half_towards_infinity"
            )
        except pa.ArrowInvalid:
            raise WindowRuntimeError(
                f"arithmetic overflow in {name}: the rounded value is past {sql_type(x.type)} "
                "(Spark: ARITHMETIC_OVERFLOW)"
            ) from None
    if kind is not TypeFamily.FLOAT:
        raise WindowSpecError(
            f"{name}: ROUND takes a number, not {sql_type(x.type)} (Spark: DATATYPE_MISMATCH)"
        )
    return _round_floats(x, digits, decimal.ROUND_HALF_EVEN if half_even else decimal.ROUND_HALF_UP)


def _zeros_like(x, to: pa.DataType):
    """Zeros of type ``to`` where ``x`` has a value, NULL where it has none."""
    if isinstance(x, pa.Scalar):
        return pa.scalar(0 if x.is_valid else None, to)
    return pc.if_else(pc.is_valid(x), pa.scalar(0, to), pa.scalar(None, to))


def _round_floats(x, digits: int, rounding: str):
    """DOUBLE or FLOAT values rounded to ``digits`` as Spark rounds them: the decimal of the value's
    shortest text as a DOUBLE (Java's ``Double.toString``; a FLOAT is widened first, so 2.675f,
    2.67499995... as a DOUBLE, rounds to 2.67), rounded, read back. O(n)."""
    quantum = decimal.Decimal(1).scaleb(-digits)
    context = decimal.Context(prec=1000, rounding=rounding)

    def one(v):
        if v is None or math.isnan(v) or math.isinf(v):
            return v
        rounded = decimal.Decimal(repr(v)).quantize(quantum, context=context)
        return float(rounded) + 0.0  # + 0.0: Java's decimals have no -0

    if isinstance(x, pa.Scalar):
        return pa.scalar(one(x.as_py()), x.type)
    return pa.array([one(v) for v in x.to_pylist()], x.type)


def _to_integral(fn: str, x, node: exp.Expression):
    """CEIL(x) and FLOOR(x) with Spark's result types: a BIGINT for integers and floating point
    (NaN is 0; past BIGINT's range, an infinity too, a WindowRuntimeError, as Spark's ANSI mode
    fails), DECIMAL(p - s + 1, 0) for DECIMAL(p, s). O(n).

    >>> t = pa.table({"x": [1.5, -1.5, float("nan"), None]})
    >>> evaluate_expr(Expr.of("ceil(x)"), t).to_pylist()
    [2, -1, 0, None]
    """
    kind = kind_of(x.type)
    if pa.types.is_null(x.type):
        return pa.scalar(None, pa.int64())
    if kind is TypeFamily.INT:
        return x.cast(pa.int64())
    if kind is TypeFamily.DECIMAL:
        p, s = x.type.precision, x.type.scale
        if s == 0:
            return x
        # one more digit, so that rounding 99.99 up to 100.00 fits, then the integral type
        wide = pc.call_function(fn, [x.cast(pa.decimal256(p + 1, s))])
        return wide.cast(pa.decimal128(min(p - s + 1, 38), 0))
    if kind is not TypeFamily.FLOAT:
        raise WindowSpecError(
            f"{node.sql(dialect=DIALECT)}: {fn.upper()} takes a number, not {sql_type(x.type)} "
            "(Spark: DATATYPE_MISMATCH)"
        )
    whole = pc.call_function(fn, [x.cast(pa.float64())])
    whole = pc.if_else(pc.is_nan(whole), 0.0, whole)  # NaN is 0, as Spark casts it
    try:
        return whole.cast(pa.int64())
    except pa.ArrowInvalid:  # past BIGINT (an infinity too): Spark's ANSI mode fails the query
        raise WindowRuntimeError(
            f"arithmetic overflow in {node.sql(dialect=DIALECT)}: a value past BIGINT's range "
            "(Spark: ARITHMETIC_OVERFLOW)"
        ) from None


def _nullif(node: exp.Nullif, t: pa.Table):
    """NULLIF(a, b): NULL where ``a = b`` holds, else ``a``, in ``a``'s type (Spark's ``IF(a = b,
    NULL, a)``: the comparison in the operands' common type). O(n)."""
    a = _eval(node.this, t)
    equal = _eval(exp.EQ(this=node.this.copy(), expression=node.expression.copy()), t)
    if pa.types.is_null(a.type) or pa.types.is_null(equal.type):
        return a
    return pc.if_else(pc.fill_null(equal, False), pa.scalar(None, a.type), a)


def _null_safe_equal(a, b):
    """``a <=> b``: ``a = b`` where neither is NULL, true where both are, false where one is (never
    NULL); NaN <=> NaN holds, as NaN = NaN does in Spark. O(n)."""
    a_null, b_null = pc.is_null(a), pc.is_null(b)
    if pa.types.is_null(a.type) or pa.types.is_null(b.type):
        return pc.and_(a_null, b_null)
    equal = _compare("equal", *_widened([a, b]))
    return pc.if_else(pc.or_(a_null, b_null), pc.and_(a_null, b_null), equal)


def _extreme(node: exp.Expression, t: pa.Table):
    """GREATEST and LEAST: the largest (smallest) operand that is not NULL, NULL when all are; in
    the operands' common type; NaN is larger than any other number, as Spark orders it. O(n x
    operands).

    >>> t = pa.table({"x": [1.0, float("nan"), None], "k": pa.array([2, 2, None], pa.int32())})
    >>> evaluate_expr(Expr.of("greatest(x, k)"), t).to_pylist()
    [2.0, nan, None]
    """
    if not node.expressions:
        raise WindowSpecError(
            f"{node.sql(dialect=DIALECT)}: GREATEST and LEAST take two arguments or more "
            "(Spark: WRONG_NUM_ARGS)"
        )
    values = [_eval(e, t) for e in [node.this, *node.expressions]]
    typed = _common([v for v in values if not pa.types.is_null(v.type)], node)
    if not typed:
        return values[0]
    greatest = isinstance(node, exp.Greatest)
    fn = "max_element_wise" if greatest else "min_element_wise"
    if (as_int := _ORDERED_AS.get(kind_of(typed[0].type))) is not None:  # no Arrow kernel: its integers
        return pc.call_function(fn, [v.cast(as_int) for v in typed]).cast(typed[0].type)
    out = pc.call_function(fn, typed)
    if pa.types.is_floating(out.type):  # Arrow passes NaN over; Spark orders it above every number
        nan = functools.reduce(pc.or_, [pc.fill_null(pc.is_nan(v), False) for v in typed])
        if not greatest:  # the least is NaN only where no operand is a number
            nan = pc.and_(nan, pc.is_null(out))
        out = pc.if_else(nan, pa.scalar(float("nan"), out.type), out)
    return out


# types GREATEST and LEAST order as the integers beneath them (Arrow has no element-wise kernel)
_ORDERED_AS = {
    TypeFamily.BOOL: pa.int8(),
    TypeFamily.DATE: pa.int32(),
    TypeFamily.TIMESTAMP: pa.int64(),
    TypeFamily.INTERVAL: pa.int64(),
}


def _common(values: list, node: exp.Expression) -> list:
    """The operands of GREATEST or LEAST in one type, as Spark coerces them: numbers to the wider
    (``_widened`` for DECIMALs; a DOUBLE or FLOAT beside others: DOUBLE); other operands must share
    their type. O(n) per operand cast."""
    values = _widened(values)
    types = {v.type for v in values}
    if len(types) <= 1:
        return values
    if not all(kind_of(t).is_numeric for t in types):
        raise WindowSpecError(
            f"{node.sql(dialect=DIALECT)}: operands of {', '.join(sorted(sql_type(t) for t in types))} "
            "have no common type (Spark: DATATYPE_MISMATCH)"
        )
    if any(kind_of(t) is TypeFamily.FLOAT for t in types):  # DECIMALs correctly rounded, as Spark casts
        return [_cast_operand(v, pa.float64(), node.sql(dialect=DIALECT)) for v in values]
    target = max(types, key=lambda t: t.bit_width)
    return [v.cast(target) for v in values]


def _widened(values: list) -> list:
    """COALESCE's or CASE's operands (arrays or scalars) in Spark's common type where Arrow's
    differs: DECIMALs beside DECIMALs or integers go to ``decimals.wider_type`` (Arrow takes a
    BIGINT as 19 digits, Spark as 20, and fails past 38 digits where Spark gives up scale), each
    rounded half up as Spark casts it; a FLOAT beside integers goes to DOUBLE (Arrow keeps FLOAT,
    and fails on integers past 2**24). Others as they are (Arrow's promotion is Spark's there).
    O(n) per operand cast.

    >>> [v.type for v in _widened([pa.array([1], pa.int64()), pa.scalar(decimal.Decimal("1.5"))])]
    [Decimal128Type(decimal128(21, 1)), Decimal128Type(decimal128(21, 1))]
    """
    kinds = {kind_of(v.type) for v in values if not pa.types.is_null(v.type)}
    if kinds == {TypeFamily.FLOAT, TypeFamily.INT}:
        # Spark's ANSI mode: a FLOAT beside an integer is DOUBLE (no precision lost); an integer past
        # 2**53 rounds to the nearest DOUBLE (Arrow's implicit cast fails on it)
        target = pa.float64()
    elif TypeFamily.DECIMAL not in kinds or not kinds <= {TypeFamily.DECIMAL, TypeFamily.INT}:
        return values
    else:
        target = decimals.wider_type([v.type for v in values if not pa.types.is_null(v.type)])
    out = []
    for v in values:
        if isinstance(v, pa.Scalar):
            one = pa.array([v.as_py()], type=v.type if v.type != pa.null() else target)
            out.append(casts.cast(one, target)[0])
        else:
            out.append(casts.cast(v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v, target))
    return out
