"""The column reader: a plain column (by name, Spark's case rules) or a constant of a pandas/Arrow
batch, as the state machines and the Spark adapter read them. On a stream the bind step
(``overwindow.logical.bind``) has Spark compute every other expression before the windows, so these
readers refuse anything else by name; the batch evaluator computes it with its interpreter
(``overwindow.physical.expressions``). O(1) per column, O(rows) per constant.

>>> t = pa.table({"Price": [1.5, 2.0]})
>>> read_column(Expr.of("price"), t).to_pylist(), read_column(Expr.of("-1"), t).type
([1.5, 2.0], DataType(int32))
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import DIALECT, Expr
from overwindow.physical.values import sql_type


class NotPlainColumn(TypeError):
    """An internal error: an expression handed to a reader of plain columns and constants (the bind
    step should have had Spark compute it before the windows)."""


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


def column_of(node: exp.Column, table: pa.Table) -> str:
    """The column of ``table`` a column reference reads: its last name part (``resolve_column``),
    the parts before it qualifiers (``v.x`` in a query over the view ``v``). A part before the last
    that names a column of struct, map or array type makes the rest a field of that column (Spark
    reads ``s.a`` as the field ``a`` of the struct column ``s``), which overwindow does not read:
    refused, where reading a top-level column ``a`` would be a silent wrong answer (and a part
    naming a column of another type, which Spark refuses); so is ``a.b``
    beside a column named ``a.b`` (Spark resolves neither; the column needs backquotes). O(parts).

    >>> t = pa.table({"x": [1], "s": [{"a": 2}], "a": [3]})
    >>> column_of(exp.column("x", table="v"), t)
    'x'
    >>> try:
    ...     column_of(exp.column("a", table="s"), t)
    ... except WindowSpecError as e:
    ...     print(str(e).split(":")[0])
    s.a reads the field `a` of the struct column `s`
    """
    parts = [p.name for p in node.parts]
    names = {c.lower(): c for c in table.column_names}
    for i in range(len(parts) - 1):  # `a.b` beside a column named "a.b": Spark resolves neither
        dotted = names.get(".".join(parts[i:]).lower())
        if dotted is not None:
            raise WindowSpecError(
                f"{node.sql(dialect=DIALECT)} names no column: the column `{dotted}` is written with "
                f"backquotes (`{dotted}`), as Spark reads it"
            )
    for i, part in enumerate(parts[:-1]):
        nested = names.get(part.lower())
        if nested is None:
            continue
        kind = table.schema.field(nested).type
        field, named = ".".join(parts[i + 1 :]), "_".join([nested, *parts[i + 1 :]])
        if not pa.types.is_nested(kind):  # Spark: no field of a plain value
            raise WindowSpecError(
                f"{node.sql(dialect=DIALECT)} names no column: `{nested}` is a column of type "
                f"{sql_type(kind)}, not a table or a struct"
            )
        what = "struct" if pa.types.is_struct(kind) else "map" if pa.types.is_map(kind) else "array"
        raise WindowSpecError(
            f"{node.sql(dialect=DIALECT)} reads the field `{field}` of the {what} column `{nested}`: "
            "overwindow reads whole columns; add the field as a column of the stream first "
            f'(withColumn("{named}", F.col("{nested}.{field}"))) and name that column'
        )
    return resolve_column(table, parts[-1])


def check_fields(exprs, table: pa.Table) -> None:
    """Refuses, before any row is read, a reference in ``exprs`` to a field of a struct, map or
    array column of ``table`` (``column_of``), where name-based checks would see only its last
    part. O(size of the expressions).

    >>> check_fields([Expr.of("lag(v.x)")], pa.table({"x": [1]}))  # a qualifier: fine
    """
    for e in exprs:
        for node in e.node.find_all(exp.Column):
            if len(node.parts) > 1:
                column_of(node, table)


def literal_type(value) -> pa.DataType | None:
    """Spark's type of a folded constant: INT for integers that fit, then BIGINT, then DECIMAL of
    their digits; a DECIMAL of the literal's own digits (at least its scale: ``0.5`` is DECIMAL(1,
    1), ``0.05`` DECIMAL(2, 2), ``1.5`` DECIMAL(2, 1), as Java's BigDecimal counts them),
    TIMESTAMP in microseconds; None (pyarrow's inference) otherwise.

    >>> [str(literal_type(decimal.Decimal(t))) for t in ("0.5", "0.05", "1.5", "100")]
    ['decimal128(1, 1)', 'decimal128(2, 2)', 'decimal128(2, 1)', 'decimal128(3, 0)']
    """
    if isinstance(value, bool) or value is None:
        return pa.null() if value is None else pa.bool_()
    if isinstance(value, int):  # past BIGINT, Spark's integer literal is a DECIMAL of its digits
        if -(2**63) <= value < 2**63:
            return pa.int32() if -(2**31) <= value < 2**31 else pa.int64()
        if len(str(abs(value))) > 38:
            raise WindowSpecError(f"the integer {value} has more than a DECIMAL's 38 digits")
        return pa.decimal128(len(str(abs(value))), 0)
    if isinstance(value, decimal.Decimal):
        digits, exponent = len(value.as_tuple().digits), value.as_tuple().exponent
        scale = max(-exponent, 0)
        precision = max(digits, scale, 1) + max(exponent, 0)
        if precision > 38:  # Spark's parser: DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION
            raise WindowSpecError(f"the decimal {value} has more than a DECIMAL's 38 digits")
        return pa.decimal128(precision, scale)
    if isinstance(value, dt.datetime):
        return pa.timestamp("us")
    return None


# arithmetic, intervals (``CAST(NULL AS INTERVAL DAY)``), CASTs and typed literals (``10L``,
# ``CAST(1 AS BIGINT)``: Spark's type, its text of a value) and the negation of a parenthesised
# literal (``-(2147483648)`` is BIGINT, where ``-2147483648`` is one INT literal; ``- -2147483648``
# negates that INT and overflows) are typed by the interpreter, not folded
_TYPED = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Interval, exp.Cast)


def constant(expr: Expr, rows: int) -> pa.Array | None:
    """``expr``'s value on each of ``rows`` rows when it is a plain constant, folded once with
    Spark's literal types (``1.5`` DECIMAL(2, 1), ``2147483648`` BIGINT); None for anything else,
    arithmetic and CASTs included (their type is Spark's computation's, not a fold's). O(rows).

    >>> constant(Expr.of("1.5"), 2).to_pylist(), constant(Expr.of("1 + 1"), 2)
    ([Decimal('1.5'), Decimal('1.5')], None)
    """
    negated = any(isinstance(n.this, (exp.Paren, exp.Neg)) for n in expr.node.find_all(exp.Neg))
    if expr.columns() or negated or any(expr.node.find_all(*_TYPED)):
        return None
    try:
        value = expr.literal_value()
    except WindowSpecError:
        return None
    if isinstance(value, tuple):
        return None
    return pa.array([value] * rows, type=literal_type(value))


def read_column(expr: Expr, table: pa.Table) -> pa.Array:
    """``expr``'s values over ``table`` when it is a column of ``table`` by name (``resolve_column``)
    or a constant (``constant``); NotPlainColumn for anything else (a struct's field, arithmetic,
    a function), which a stream's bind step has Spark compute first. O(1) for a column.

    >>> read_column(Expr.of("x + 1"), pa.table({"x": [1]}))
    Traceback (most recent call last):
    ...
    overwindow.physical.columns.NotPlainColumn: x + 1 is not a plain column or constant: ...
    """
    node = expr.node.unnest() if isinstance(expr.node, exp.Paren) else expr.node
    if isinstance(node, exp.Column) and not node.table:
        column = table.column(resolve_column(table, node.name))
        return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    value = constant(expr, table.num_rows)
    if value is None:
        raise NotPlainColumn(
            f"{expr.sql} is not a plain column or constant: the state machines read those only "
            "(overwindow.logical.bind has Spark compute every other expression before the windows)"
        )
    return value
