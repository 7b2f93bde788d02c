"""Evaluate scalar SQL expressions (arguments, FILTER conditions, keys) over an Arrow table with
pyarrow.compute, following SQL NULL rules. Column names resolve case-insensitively, as in Spark.

>>> t = pa.table({"x": [1, None, 3]})
>>> evaluate_expr(Expr.of("x * 2 + 1"), t).to_pylist()
[3, None, 7]
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.logical.expr import DIALECT, Expr, literal_value
from overwindow.physical import casts
from overwindow.physical.values import sql_type

_BINARY = {
    exp.Add: "add_checked",
    exp.Sub: "subtract_checked",
    exp.Mul: "multiply_checked",
    exp.And: "and_kleene",
    exp.Or: "or_kleene",
}

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
    """The Arrow type of a SQL type name in a CAST (``DECIMAL(p, s)``: Spark's default (10, 0))."""
    name = to.this.name if hasattr(to.this, "name") else str(to.this).upper()
    if name == "DECIMAL":
        params = [int(p.this.this) for p in to.expressions]
        return pa.decimal128(params[0] if params else 10, params[1] if len(params) > 1 else 0)
    if name not in _TYPES:
        raise WindowSpecError(f"CAST to {to.sql(dialect=DIALECT)} is not supported")
    return _TYPES[name]


def resolve_column(table: pa.Table, name: str) -> str:
    """The table's column called ``name`` (exact, else the one case-insensitive match)."""
    if name in table.column_names:
        return name
    matches = [c for c in table.column_names if c.lower() == name.lower()]
    if len(matches) == 1:
        return matches[0]
    available = ", ".join(table.column_names)
    if matches:
        raise WindowSpecError(f"column `{name}` is ambiguous: {', '.join(matches)}")
    raise WindowSpecError(f"column `{name}` does not exist; available columns: {available}")


def evaluate_expr(expr: Expr, table: pa.Table) -> pa.Array:
    """The expression's value for every row of ``table``, as one Arrow array. A constant is folded
    once, with Spark's literal types (``1.5`` DECIMAL, ``TIMESTAMP '...'``)."""
    if not expr.columns():
        try:
            value = expr.literal_value()
        except WindowSpecError:
            value = _NOT_CONSTANT
        if value is not _NOT_CONSTANT and not isinstance(value, tuple):
            return pa.array([value] * table.num_rows, type=_literal_type(value))
    out = _eval(expr.node, table)
    if isinstance(out, pa.Scalar):
        out = pa.array([out.as_py()] * table.num_rows, type=out.type if out.type != pa.null() else None)
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    return out


_NOT_CONSTANT = object()


def _literal_type(value) -> pa.DataType | None:
    """Spark's type of a folded constant: INT for integers that fit, a DECIMAL of the literal's own
    digits, TIMESTAMP in microseconds; None (pyarrow's inference) otherwise."""
    if isinstance(value, bool) or value is None:
        return pa.null() if value is None else pa.bool_()
    if isinstance(value, int):
        return pa.int32() if -(2**31) <= value < 2**31 else pa.int64() if -(2**63) <= value < 2**63 else None
    if isinstance(value, decimal.Decimal):
        digits, exponent = len(value.as_tuple().digits), value.as_tuple().exponent
        scale = max(-exponent, 0)
        return pa.decimal128(min(max(digits, scale + 1, 1) + max(exponent, 0), 38), scale)
    if isinstance(value, dt.datetime):
        return pa.timestamp("us")
    return None


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
        return t.column(resolve_column(t, node.name))
    if isinstance(node, exp.Paren):
        return _eval(node.this, t)
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
        value = literal_value(node, node.sql(dialect=DIALECT))
        return pa.scalar(value, type=_literal_type(value))  # Spark's: `3` is INT, so `i * 3` is INT
    if isinstance(node, exp.Neg):
        return pc.negate_checked(_eval(node.this, t))
    if isinstance(node, exp.Not):
        return pc.invert(_eval(node.this, t))
    if isinstance(node, exp.Div):  # SQL '/' is true division in Spark
        a, b = (pc.cast(_eval(x, t), pa.float64()) for x in (node.this, node.expression))
        return pc.if_else(pc.equal(b, 0.0), pa.scalar(None, pa.float64()), pc.divide(a, b))
    if isinstance(node, exp.Mod):
        a, b = _eval(node.this, t), _eval(node.expression, t)
        return _mod(a, b)
    if type(node) in _COMPARE:
        return _compare(_COMPARE[type(node)], _eval(node.this, t), _eval(node.expression, t))
    if type(node) in _BINARY:
        a, b = _eval(node.this, t), _eval(node.expression, t)
        try:
            return pc.call_function(_BINARY[type(node)], [a, b])
        except pa.ArrowInvalid as e:
            if "overflow" not in str(e).lower():
                raise
            raise WindowRuntimeError(  # as Spark's ANSI mode fails
                f"arithmetic overflow in {node.sql(dialect=DIALECT)} ({sql_type(a.type)} "
                f"and {sql_type(b.type)}); widen it first, e.g. CAST(... AS BIGINT)"
            ) from None
    if isinstance(node, exp.Is):
        inner = _eval(node.this, t)
        if isinstance(node.expression, exp.Null):
            return pc.is_null(inner)
    if isinstance(node, exp.Cast):
        target = arrow_type(node.to)
        value = _eval(node.this, t)
        if isinstance(value, pa.Scalar):
            value = pa.array([value.as_py()], type=value.type if value.type != pa.null() else None)
            return casts.cast(value, target)[0]
        if isinstance(value, pa.ChunkedArray):
            value = value.combine_chunks()
        try:
            return casts.cast(value, target)  # Spark drops the fraction (1.9 -> 1, -1.9 -> -1)
        except casts.CastError as e:
            raise WindowRuntimeError(f"{e}, in {node.sql(dialect=DIALECT)}") from None
    if isinstance(node, exp.Coalesce):
        return pc.coalesce(*[_eval(e, t) for e in [node.this, *node.expressions]])
    if isinstance(node, exp.Abs):
        return pc.abs_checked(_eval(node.this, t))
    if isinstance(node, exp.In):
        return _in(_eval(node.this, t), [literal_value(e, "IN list") for e in node.expressions])
    if isinstance(node, exp.Between):
        x = _eval(node.this, t)
        return pc.and_kleene(
            _compare("greater_equal", x, _eval(node.args["low"], t)),
            _compare("less_equal", x, _eval(node.args["high"], t)),
        )
    if isinstance(node, exp.Case):
        return _case(node, t)
    raise WindowSpecError(
        f"unsupported expression {node.sql(dialect=DIALECT)} (supported: columns, constants, "
        "+ - * / %, comparisons, BETWEEN, AND OR NOT, IS NULL, CAST, COALESCE, ABS, IN, CASE)"
    )


def _compare(fn: str, a, b):
    """SQL comparison with Spark's NaN rule: NaN = NaN is true and NaN is greater than every other
    value (Arrow compares IEEE-style, where every comparison with NaN is false)."""
    plain = pc.call_function(fn, [a, b])
    floats = [x for x in (a, b) if pa.types.is_floating(x.type)]
    if not floats:
        return plain

    def nan_flag(x):
        return pc.is_nan(x) if pa.types.is_floating(x.type) else pa.scalar(False)

    a_nan, b_nan = nan_flag(a), nan_flag(b)
    # compare the NaN flags instead where either side is NaN (and neither is NULL)
    by_flag = pc.call_function(fn, [pc.cast(a_nan, pa.int8()), pc.cast(b_nan, pa.int8())])
    use_flag = pc.and_(pc.fill_null(pc.or_(a_nan, b_nan), False), pc.is_valid(plain))
    return pc.if_else(use_flag, by_flag, plain)


def _mod(a, b):
    """SQL ``a % b``: the sign of ``a`` (-7 % 2 = -1), NULL where ``b`` is 0 (as ``/``; Spark without
    ANSI mode), so one row's zero does not fail the others."""
    zero = pc.equal(b, 0)
    b = pc.if_else(zero, pa.scalar(1, b.type), b)
    q = pc.divide(a, b)
    q = pc.trunc(q) if pa.types.is_floating(q.type) else q
    r = pc.subtract(a, pc.multiply(q, b))
    return pc.if_else(zero, pa.scalar(None, r.type), r)


def _in(x, items: list):
    """SQL ``x IN (items)``: true on a match; NULL when ``x`` is NULL, or when nothing matches and
    the list holds a NULL; false otherwise."""
    present = [v for v in items if v is not None]
    hit = pc.is_in(x, value_set=pa.array(present) if present else pa.array([], type=x.type))
    unknown = pc.is_null(x)
    if len(present) < len(items):
        unknown = pc.or_(unknown, pc.invert(hit))
    return pc.if_else(unknown, pa.scalar(None, pa.bool_()), hit)


def _case(node: exp.Case, t: pa.Table):
    default = node.args.get("default")
    out = _eval(default, t) if default is not None else pa.scalar(None)
    for branch in reversed(node.args.get("ifs") or []):
        cond = pc.fill_null(_eval(branch.this, t), False)
        out = pc.if_else(cond, _eval(branch.args["true"], t), out)
    return out
