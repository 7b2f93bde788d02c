"""SQL's scalar functions on strings, dates and numbers, as Spark computes them: UPPER, LOWER,
LENGTH, TRIM, LTRIM, RTRIM, SUBSTRING, CONCAT and ``||``, LIKE and ILIKE; TO_DATE, DATEDIFF,
DATE_ADD, DATE_SUB, UNIX_TIMESTAMP and the parts of a DATE or TIMESTAMP (YEAR ... SECOND); ROUND,
BROUND, CEIL and FLOOR. A function computes its operands, and the expressions it is read as
(``TO_DATE(x)`` as ``CAST(x AS DATE)``), with ``evaluate``, the evaluator's own function
(``expressions._eval``) passed in: the evaluator imports this module, not this module the
evaluator. Each function's cost is in its docstring (O(n), a Python step per row for some).

>>> t = pa.table({"s": ["Straße", None]})
>>> columns = lambda node, table: table.column(node.name)  # an evaluator of plain columns only
>>> string_function(exp.Upper(this=exp.column("s")), t, columns).to_pylist()
['STRASSE', None]
"""

from __future__ import annotations

import decimal
import functools
import math
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.logical.expr import DIALECT, literal_value
from overwindow.physical.casts import cast_operand
from overwindow.physical.values import TypeFamily, kind_of, sql_type

# an operand's value over a table's rows: an array, or a scalar for a constant (``expressions._eval``)
Evaluate = Callable[[exp.Expression, pa.Table], "pa.Array | pa.ChunkedArray | pa.Scalar"]


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
DATE_FUNCTIONS = (*_DATE_PARTS, exp.TsOrDsToDate, exp.DateDiff, exp.TsOrDsAdd, exp.StrToUnix)


def date_function(node: exp.Expression, t: pa.Table, evaluate: Evaluate):
    """TO_DATE(x) (as CAST(x AS DATE)), DATEDIFF(end, start) (days, an INT), DATE_ADD / DATE_SUB
    (as DATE + n), UNIX_TIMESTAMP(ts) (whole seconds since 1970, the fraction dropped, a BIGINT), and the
    parts YEAR, QUARTER, MONTH, DAY, DAYOFWEEK (Sunday 1), DAYOFYEAR, WEEKOFYEAR (ISO), HOUR, MINUTE,
    SECOND (INTs) of a DATE or TIMESTAMP, in the session's time (a stream's timestamps are its
    wall-clock times; ``overwindow.evaluate`` reads zoned timestamps in UTC). O(n).

    >>> import datetime as dt
    >>> from overwindow.physical.expressions import Expr, evaluate_expr

    >>> t = pa.table({"d": pa.array([dt.date(2024, 3, 10), None], pa.date32())})
    >>> [evaluate_expr(Expr.of(e), t).to_pylist() for e in ("dayofweek(d)", "datediff(d, DATE '2024-01-01')")]
    [[1, None], [69, None]]
    """
    name = node.sql(dialect=DIALECT)
    if isinstance(node, exp.TsOrDsToDate):
        if node.args.get("format") is not None:
            raise WindowSpecError(f"{name}: overwindow reads TO_DATE without a format only")
        value = evaluate(node.this, t.schema.empty_table())
        if kind_of(value.type).is_numeric or pa.types.is_boolean(value.type):
            raise WindowSpecError(  # Spark reads it as a string, and no number is a date's text
                f"{name}: Spark reads {sql_type(value.type)} values as text, which is no DATE "
                "(CAST_INVALID_INPUT in every row)"
            )
        return evaluate(exp.cast(node.this.copy(), "DATE"), t)
    if isinstance(node, exp.DateDiff):
        end, start = evaluate(node.this, t), evaluate(node.expression, t)
        if pa.types.is_null(end.type) or pa.types.is_null(start.type):
            return pa.scalar(None, pa.int32())
        return pc.subtract(*(pc.cast(pc.cast(x, pa.int32()), pa.int64()) for x in (end, start))).cast(
            pa.int32()
        )
    if isinstance(node, exp.TsOrDsAdd):
        if (node.args.get("unit") or exp.var("DAY")).name.upper() != "DAY":
            raise WindowSpecError(f"unsupported expression {name}")
        if pa.types.is_null(evaluate(node.expression, t.schema.empty_table()).type):
            return pa.scalar(None, pa.date32())  # a DATE (``d + NULL`` alone is a TIMESTAMP)
        start = exp.TsOrDsToDate(this=node.this.copy())
        return evaluate(exp.Add(this=start, expression=exp.paren(node.expression.copy())), t)
    x = evaluate(node.this, t)
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


STRING_FUNCTIONS = (exp.Upper, exp.Lower, exp.Length, exp.Trim, exp.Substring, exp.Concat, exp.DPipe)


def string_function(node: exp.Expression, t: pa.Table, evaluate: Evaluate):
    """UPPER, LOWER (Unicode's full case mapping, as Java's: ``upper('ß')`` is ``'SS'``), LENGTH
    (in characters), TRIM / LTRIM / RTRIM (spaces only, or the characters of ``TRIM(BOTH 'xy' FROM
    s)``), SUBSTRING(s, pos[, len]) (1-based, a negative ``pos`` counted from the end, as Spark's
    ``substringSQL``) of STRING values; CONCAT and ``||`` of any values as strings (NULL where any
    is NULL). O(total characters); a Python step per row for non-ASCII case mapping and for
    SUBSTRING.

    >>> from overwindow.physical.expressions import Expr, evaluate_expr

    >>> t = pa.table({"s": [" Straße ", None]})
    >>> [evaluate_expr(Expr.of(e), t).to_pylist() for e in ("upper(trim(s))", "substr(s, -3, 2)")]
    [['STRASSE', None], ['ße', None]]
    """
    if isinstance(node, (exp.Concat, exp.DPipe)):
        parts = node.expressions if isinstance(node, exp.Concat) else [node.this, node.expression]
        values = [evaluate(p, t) for p in parts]
        values = [_as_string(p, v, t, evaluate) for p, v in zip(parts, values)]
        if isinstance(node, exp.Concat) and len(values) == 1:
            return values[0]
        return pc.binary_join_element_wise(*values, "")
    x = evaluate(node.this, t)
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
        return _substring(node, x, t, evaluate)
    upper = isinstance(node, exp.Upper)
    if isinstance(x, pa.Scalar):
        return pa.scalar(_case_mapped(x.as_py(), upper), x.type)
    if pc.all(pc.string_is_ascii(x)).as_py() in (True, None):
        return pc.ascii_upper(x) if upper else pc.ascii_lower(x)
    return pa.array([_case_mapped(v, upper) for v in x.to_pylist()], x.type)


def like(node: exp.Expression, t: pa.Table, evaluate: Evaluate):
    """``x [NOT] LIKE 'pattern' [ESCAPE 'c']`` and ILIKE (both sides lower-cased, as Spark's): ``%``
    any characters, ``_`` any one (a newline too), the escape character (a backslash unless ESCAPE
    names one) before ``%``, ``_`` or itself for that character; a pattern Spark refuses (the
    escape before another character, or last) is refused. The pattern must be a constant. O(total
    characters).

    >>> from overwindow.physical.expressions import Expr, evaluate_expr

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
    x = evaluate(node.this, t)
    if pattern is None or pa.types.is_null(x.type):
        return pa.scalar(None, pa.bool_())
    if not isinstance(pattern, str) or kind_of(x.type) is not TypeFamily.STRING:
        raise WindowSpecError(f"{name}: LIKE compares a STRING with a STRING pattern")
    ilike = isinstance(node, exp.ILike)
    if ilike:
        pattern = _case_mapped(pattern, upper=False)
        x = string_function(exp.Lower(this=node.this.copy()), t, evaluate)
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


def _as_string(node: exp.Expression, value, t: pa.Table, evaluate: Evaluate):
    """``node``'s ``value`` as CONCAT reads it: a string, or CAST(node AS STRING) (Spark casts the
    others)."""
    if kind_of(value.type) is TypeFamily.STRING:
        return value
    if pa.types.is_null(value.type):
        return pa.scalar(None, pa.string())
    return evaluate(exp.cast(node.copy(), "STRING"), t)


def _case_mapped(v: str | None, upper: bool) -> str | None:
    return None if v is None else v.upper() if upper else v.lower()


def _substring(node: exp.Substring, x, t: pa.Table, evaluate: Evaluate):
    """SUBSTRING(x, pos[, len]) as Spark's ``substringSQL``: pos > 0 counts from 1, pos < 0 from the
    end, 0 is the start; ``len`` counts from that unclamped start (``substr('abc', -5, 3)`` is
    ``'a'``); NULL where any operand is. O(n), a Python step per row."""
    operands = [node.args.get("start"), node.args.get("length")]
    given = [evaluate(o, t) if o is not None else pa.scalar(2**31 - 1, pa.int32()) for o in operands]
    for v in given:
        if kind_of(v.type) is not TypeFamily.INT and not pa.types.is_null(v.type):
            raise WindowSpecError(
                f"{node.sql(dialect=DIALECT)}: its position and length are INTs, not {sql_type(v.type)}"
            )
    given = [
        cast_operand(v, pa.int32(), node.sql(dialect=DIALECT)) if v.type == pa.int64() else v for v in given
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


def rounded(node: exp.Expression, t: pa.Table, evaluate: Evaluate):
    """ROUND(x, d) (half away from zero) and BROUND(x, d) (half to even), d an INT constant (0 when
    left out), in Spark's types: a number keeps its type; DECIMAL(p, s) becomes DECIMAL(p - s + 1 +
    min(s, d), min(s, d)), or DECIMAL(max(p - s + 1, 1 - d), 0) for d < 0. A DOUBLE or FLOAT is
    rounded as the decimal Spark reads it from (its shortest text: ROUND(2.675, 2) is 2.68), NaN
    and infinities as they are; an integer rounded past its type fails as Spark's ANSI mode does.
    O(n), a Python step per row for DOUBLE and FLOAT (exact decimal rounding).

    >>> from overwindow.physical.expressions import Expr, evaluate_expr

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
    x = evaluate(args[0], t)
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


def to_integral(fn: str, x, node: exp.Expression):
    """CEIL(x) and FLOOR(x) with Spark's result types: a BIGINT for integers and floating point
    (NaN is 0; past BIGINT's range, an infinity too, a WindowRuntimeError, as Spark's ANSI mode
    fails), DECIMAL(p - s + 1, 0) for DECIMAL(p, s). O(n).

    >>> from overwindow.physical.expressions import Expr, evaluate_expr

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
