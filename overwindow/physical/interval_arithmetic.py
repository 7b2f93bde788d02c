"""Spark's arithmetic on dates, times and day-time intervals, of operands already evaluated: days
added to or taken from a DATE (``date_add``, ``date_sub``) and ``DATE - DATE``
(``date_arithmetic``); the operands of a date or time difference read as Spark reads them
(``as_times``: a string beside a DATE as a DATE); intervals added up, an interval added to or taken
from a DATE or TIMESTAMP, and an interval times or over a number (``interval_arithmetic``; Spark's
MultiplyDTInterval and DivideDTInterval); an interval literal's value (``interval_scalar``). What
Spark refuses is a WindowSpecError, what fails Spark's query in ANSI mode a WindowRuntimeError.
``arithmetic`` hands it ``+ - * /`` beside a DATE, a TIMESTAMP or an interval. O(n); a Python step
per row only for an interval scaled by a DECIMAL.

>>> import datetime as dt
>>> d = pa.array([dt.date(2024, 2, 28), None], pa.date32())
>>> date_arithmetic("+", d, pa.scalar(2, pa.int32()), "d + 2").to_pylist()
[datetime.date(2024, 3, 1), None]
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.logical.frame import Interval
from overwindow.physical.casts import cast_operand
from overwindow.physical.values import (
    FIELD_MICROS,
    INTERVAL_DAY,
    INTERVAL_DAY_TO_SECOND,
    INTERVAL_LIMIT,
    TypeFamily,
    interval_type,
    kind_of,
    numpy_values,
    sql_type,
)

YEAR_MONTH = (
    "{}: year-month intervals (YEAR, MONTH, YEAR TO MONTH) are read only as RANGE offsets; "
    "overwindow computes day-time intervals (DAY ... SECOND) in expressions"
)


def as_times(a, b, name: str):
    """The operands of ``-`` as Spark reads a date or time difference: a string beside a DATE or
    TIMESTAMP is cast to its type (``d - '2024-01-01'``; a constant Spark cannot read is refused, a
    column's value fails the query, CAST_INVALID_INPUT), a DATE beside a TIMESTAMP is that
    TIMESTAMP type's midnight (``ts - d``: an INTERVAL DAY TO SECOND). Others as they are."""
    kinds = (kind_of(a.type), kind_of(b.type))
    for time, other in ((0, 1), (1, 0)):
        x, y = (a, b)[time], (a, b)[other]
        if kinds[time].is_temporal and kinds[other] is TypeFamily.STRING:
            y = cast_operand(y, x.type, name)
        elif kinds[time] is TypeFamily.TIMESTAMP and kinds[other] is TypeFamily.DATE:
            y = y.cast(x.type)  # midnight, in the session's (UTC) zone
        else:
            continue
        return (x, y) if time == 0 else (y, x)
    return a, b


_DAYS = (pa.int8(), pa.int16(), pa.int32())  # Spark's date_add takes TINYINT, SMALLINT or INT days


def date_arithmetic(op: str, a, b, name: str):
    """``DATE + n``, ``n + DATE`` and ``DATE - n`` as Spark computes them (its ``date_add`` and
    ``date_sub``): ``n`` a TINYINT, SMALLINT or INT (a BIGINT, DECIMAL, DOUBLE or string is refused,
    as Spark refuses it), the day count added in 32-bit integers that wrap as Java's do (Spark does
    not check ``date_add`` for overflow, even in ANSI mode); the result a DATE. ``DATE - DATE`` is
    Spark's INTERVAL DAY (``INTERVAL_DAY``), a DATE minus a bare NULL (or a NULL minus a DATE) a NULL
    one. A bare NULL added to a DATE: ``d + NULL`` is a TIMESTAMP (Spark reads it as a timestamp plus
    an interval), NULL in every row. Every other operation on a DATE is refused.

    >>> import datetime as dt
    >>> from overwindow.physical.expressions import Expr, evaluate_expr

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


def interval_scalar(value: Interval, name: str) -> pa.Scalar:
    """An interval literal's value in its carrier (``interval_type``); one past Spark's long of
    microseconds is refused, as Spark's parser refuses it (INTERVAL_ARITHMETIC_OVERFLOW), and so is
    a year-month one."""
    if value.year_month:
        raise WindowSpecError(YEAR_MONTH.format(name))
    micros = value.days * FIELD_MICROS["DAY"] + value.micros
    if abs(micros) > INTERVAL_LIMIT["us"]:
        raise WindowSpecError(f"{name} is past Spark's largest interval (INTERVAL_ARITHMETIC_OVERFLOW)")
    return pa.scalar(micros, INTERVAL_DAY_TO_SECOND).cast(interval_type(value.fields))


def interval_arithmetic(op: str, a, b, name: str):
    """``+ - * /`` beside a day-time interval as Spark computes them: two intervals add up to the
    common type (INTERVAL DAY beside INTERVAL DAY, else microseconds; a WindowRuntimeError past
    Spark's long of microseconds, as its ANSI mode fails); a bare NULL gives a NULL interval; a
    DATE plus or minus an INTERVAL DAY is a DATE (its days added as by ``date_add``), plus or minus
    any other day-time interval a TIMESTAMP (from the date's midnight), a TIMESTAMP plus or minus
    an interval a TIMESTAMP; an interval times a number, or over one, is an INTERVAL DAY TO SECOND
    (``_scaled``). Every other pairing (an interval beside a number in ``+``, ``interval - DATE``,
    ``n / interval``) is refused. O(n).

    >>> import datetime as dt
    >>> from overwindow.physical.expressions import Expr, evaluate_expr

    >>> t = pa.table({"d": pa.array([dt.date(2024, 3, 1), None], pa.date32())})
    >>> evaluate_expr(Expr.of("d + (d - DATE '2024-02-28')"), t).to_pylist()
    [datetime.date(2024, 3, 3), None]
    >>> evaluate_expr(Expr.of("d + INTERVAL '90' MINUTE"), t).cast(pa.timestamp("us")).to_pylist()
    [datetime.datetime(2024, 3, 1, 1, 30), None]
    """
    left, right = kind_of(a.type) is TypeFamily.INTERVAL, kind_of(b.type) is TypeFamily.INTERVAL
    interval, other = (a, b) if left else (b, a)
    if op in ("+", "-"):
        checked = "add_checked" if op == "+" else "subtract_checked"
        if left and right:
            if a.type != b.type:  # DAY beside another: both in microseconds
                a, b = a.cast(INTERVAL_DAY_TO_SECOND), b.cast(INTERVAL_DAY_TO_SECOND)
            total = pc.call_function(checked, [a, b])
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
                return date_arithmetic(op, other, days, name)
            if pa.types.is_date32(other.type):
                other = other.cast(pa.timestamp("us", tz="UTC"))  # Spark's TIMESTAMP, at midnight
            if pa.types.is_timestamp(other.type):
                step = pc.cast(interval, pa.duration(other.type.unit))
                return pc.call_function(checked, [other, step])
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
    >>> from overwindow.physical.expressions import Expr, evaluate_expr

    >>> t = pa.table({"d": pa.array([dt.date(2024, 1, 8), None], pa.date32())})
    >>> evaluate_expr(Expr.of("(d - DATE '2024-01-01') / 3"), t).to_pylist()
    [datetime.timedelta(days=2, seconds=28800), None]
    """
    if pa.types.is_null(number.type):
        return pa.scalar(None, INTERVAL_DAY_TO_SECOND)
    if pa.types.is_string(number.type):
        number = cast_operand(number, pa.float64(), name)
    kind = kind_of(number.type)
    micros, valid = numpy_values(interval.cast(INTERVAL_DAY_TO_SECOND).cast(pa.int64()), pa.int64())
    if kind is TypeFamily.DECIMAL:
        factors = np.array(_pylist(number), dtype=object)
        factors_valid = np.array([x is not None for x in factors], dtype=bool)
    else:
        factors, factors_valid = numpy_values(
            number, pa.float64() if kind is TypeFamily.FLOAT else pa.int64()
        )
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
