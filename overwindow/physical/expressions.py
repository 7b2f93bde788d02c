"""Evaluate scalar SQL expressions (arguments, FILTER conditions, keys) over an Arrow table with
pyarrow.compute, following SQL NULL rules. Column names resolve case-insensitively, as in Spark.

This module reads the expression and evaluates its operands. It computes columns, constants,
comparisons, AND, OR, NOT, CAST and the conditional forms (CASE, IF, COALESCE, NULLIF, IN,
GREATEST, LEAST) itself, and hands the rest over: ``+ - * / %``, unary minus and ABS, with their
operands' values, to ``arithmetic`` (which hands dates, times and intervals on to
``interval_arithmetic``); the functions on strings and dates, ROUND, BROUND, CEIL and FLOOR to
``scalar_functions``, with ``_eval`` to compute their operands.

>>> t = pa.table({"x": [1, None, 3]})
>>> evaluate_expr(Expr.of("x * 2 + 1"), t).to_pylist()
[3, None, 7]
"""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.logical.expr import DIALECT, Expr, literal_value
from overwindow.logical.intervals import interval_literal, span_fields
from overwindow.physical import casts, decimals
from overwindow.physical.arithmetic import OPERATORS, arithmetic, unary
from overwindow.physical.columns import column_of, constant, literal_type
from overwindow.physical.interval_arithmetic import YEAR_MONTH, interval_scalar
from overwindow.physical.scalar_functions import (
    DATE_FUNCTIONS,
    STRING_FUNCTIONS,
    date_function,
    like,
    rounded,
    string_function,
    to_integral,
)
from overwindow.physical.values import (
    INTERVAL_DAY,
    INTERVAL_DAY_TO_SECOND,
    TypeFamily,
    carrier_fields,
    interval_type,
    kind_of,
    sql_type,
)

_BINARY = {exp.And: "and_kleene", exp.Or: "or_kleene"}

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


def cast_fields(to: exp.DataType) -> str:
    """The fields of a CAST's day-time interval target (``INTERVAL DAY TO SECOND``: ``'DAY TO
    SECOND'``), '' when the target is no interval; a year-month target is refused."""
    if not isinstance(to.this, exp.Interval):
        return ""
    unit = to.this.args.get("unit")
    names = [unit.this.name, unit.expression.name] if isinstance(unit, exp.IntervalSpan) else [unit.name]
    names = [n.upper().rstrip("S") if len(n) > 1 else n.upper() for n in names]
    if {"YEAR", "MONTH"} & set(names):
        raise WindowSpecError(YEAR_MONTH.format(f"CAST(... AS {to.sql(dialect=DIALECT)})"))
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
        return interval_scalar(interval_literal(node), node.sql(dialect=DIALECT))
    if isinstance(node, exp.Neg):
        if isinstance(node.this, exp.Literal) and not node.this.is_string:
            # Spark's parser reads ``-2147483648`` as one literal (an INT), not as the negation of
            # the BIGINT 2147483648; ``-(2147483648)`` is that negation (a Paren, below)
            value = literal_value(node, node.sql(dialect=DIALECT))
            return pa.scalar(value, type=literal_type(value))
        return unary("negate_checked", _eval(node.this, t), node.sql(dialect=DIALECT))
    if isinstance(node, exp.Not):
        return pc.invert(_eval(node.this, t))
    if type(node) in OPERATORS:
        return arithmetic(node, _eval(node.this, t), _eval(node.expression, t), t.num_rows)
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
        return unary("abs_checked", _eval(node.this, t), node.sql(dialect=DIALECT))
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
        return rounded(node, t, _eval)
    if isinstance(node, (exp.Like, exp.ILike)) or (
        isinstance(node, exp.Escape) and isinstance(node.this, (exp.Like, exp.ILike))
    ):
        return like(node, t, _eval)
    if type(node) in DATE_FUNCTIONS:
        return date_function(node, t, _eval)
    if type(node) in STRING_FUNCTIONS:
        return string_function(node, t, _eval)
    if isinstance(node, (exp.Ceil, exp.Floor)) and node.args.get("decimals") is None:
        return to_integral("ceil" if isinstance(node, exp.Ceil) else "floor", _eval(node.this, t), node)
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
        a, b = (casts.cast_operand(x, pa.float64(), "a comparison") for x in (a, b))
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
        return [casts.cast_operand(v, pa.float64(), node.sql(dialect=DIALECT)) for v in values]
    target = max(types, key=lambda t: t.bit_width)
    return [v.cast(target) for v in values]


def _widened(values: list) -> list:
    """COALESCE's or CASE's operands (arrays or scalars) in Spark's common type where Arrow's
    differs: DECIMALs beside DECIMALs or integers go to ``decimals.wider_type`` (Arrow takes a
    BIGINT as 19 digits, Spark as 20, and fails past 38 digits where Spark gives up scale), each
    rounded half up as Spark casts it; a FLOAT beside integers goes to DOUBLE (Arrow keeps FLOAT,
    and fails on integers past 2**24). Others as they are (Arrow's promotion is Spark's there).
    O(n) per operand cast.

    >>> import decimal
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
