"""RANGE offsets in the ORDER BY key's type: each offset cast to the key's type as Spark casts it
(an INTERVAL over an integer or DECIMAL key is a count of its last field, a string or TIMESTAMP
offset a number, a number over a day-time interval key an interval of the key's fields, whole days
over a DATE key an INTERVAL) and checked against it when the call is planned, before any row
(``check_range_key``, ``check_range_frame``). The frames themselves: bounds.py. O(1) per offset.

>>> import pyarrow as pa
>>> from overwindow.logical.frame import FrameUnit
>>> frame = Frame(FrameUnit.RANGE, Bound.preceding(Interval(days=2, fields="DAY")), Bound.current_row())
>>> str(range_frame_in_key_type(frame, pa.int32()))
'RANGE BETWEEN 2 PRECEDING AND CURRENT ROW'
"""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import sql_literal
from overwindow.logical.frame import Bound, BoundKind, Frame, Interval
from overwindow.logical.parse import string_offset
from overwindow.physical import casts
from overwindow.physical.values import (
    FIELD_MICROS,
    INTERVAL_LIMIT,
    TypeFamily,
    carrier_fields,
    kind_of,
    sql_type,
)

_UNIT_MICROS = {"DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000}


def _interval_number(offset: Interval) -> decimal.Decimal:
    """An INTERVAL as Spark casts it to a number: a count of its last field's unit (``INTERVAL 2
    DAYS`` is 2, ``INTERVAL 1999 MILLISECONDS`` 1.999 of its SECOND field, ``INTERVAL '1-1' YEAR TO
    MONTH`` 13, ``INTERVAL 1 YEAR`` 1), exactly; the key's type then drops or rounds the fraction.

    >>> _interval_number(Interval(days=1, micros=7_200_000_000, fields="DAY TO HOUR"))
    Decimal('26')
    """
    last = (offset.fields.split() or ["DAY"])[-1]
    if offset.year_month:
        return decimal.Decimal(offset.months) / (12 if last == "YEAR" else 1)
    total = offset.days * _UNIT_MICROS["DAY"] + offset.micros
    return decimal.Decimal(total) / _UNIT_MICROS.get(last, _UNIT_MICROS["DAY"])


_WIDE = decimal.Context(prec=400)  # room for any DECIMAL(38, s) offset, and well past it


def offset_in_key_type(offset, key_type: pa.DataType):
    """A numeric RANGE offset cast to a numeric ORDER BY column's type, as Spark casts it (measured
    in Spark 4): over an integer key the fraction is dropped (``-1.5 PRECEDING`` over a BIGINT key
    is ``-1 PRECEDING``, so ``1 FOLLOWING``), over a DECIMAL(p, s) key it is rounded half up to
    ``s`` digits (``1.555`` over DECIMAL(12,2) is ``1.56``; past ``p`` digits Spark fails,
    NUMERIC_VALUE_OUT_OF_RANGE; an infinite or NaN DOUBLE is NULL), over a DOUBLE key it is a
    DOUBLE. A TIMESTAMP offset (``TIMESTAMP '...' FOLLOWING``) is its seconds since 1970, as Spark
    casts it to a number: rounded down over an integer key, a DOUBLE otherwise (then cast so). Other
    offsets (INTERVALs over DATE and TIMESTAMP keys, NULL, infinities over integer keys, keys that
    are not numbers) as they are. O(1).

    >>> offset_in_key_type(decimal.Decimal("-1.9"), pa.int64())
    -1
    >>> offset_in_key_type(1.555, pa.decimal128(12, 2))
    Decimal('1.56')
    """
    family = kind_of(key_type)
    if isinstance(offset, str):
        return _string_in_key_type(offset, key_type)
    if family is TypeFamily.INTERVAL:
        return _offset_as_interval(offset, key_type)
    if isinstance(offset, dt.datetime) and family.is_numeric:
        seconds = pa.int64() if family is TypeFamily.INT else pa.float64()
        offset = casts.cast(pa.array([offset], pa.timestamp("us")), seconds)[0].as_py()
    if isinstance(offset, Interval) and family in (TypeFamily.INT, TypeFamily.DECIMAL):
        offset = _interval_number(offset)
    if not isinstance(offset, (int, float, decimal.Decimal)) or isinstance(offset, bool):
        return offset
    finite = not isinstance(offset, float) or math.isfinite(offset)
    if family is TypeFamily.INT and finite and not isinstance(offset, int):
        return int(offset)  # toward zero
    if family is TypeFamily.DECIMAL and not finite:
        return None  # Spark casts an infinite or NaN DOUBLE to a DECIMAL as NULL here (measured)
    if family is TypeFamily.DECIMAL:
        exact = decimal.Decimal(repr(offset)) if isinstance(offset, float) else decimal.Decimal(offset)
        step = decimal.Decimal(1).scaleb(-key_type.scale)
        try:
            rounded = exact.quantize(step, rounding=decimal.ROUND_HALF_UP, context=_WIDE)
        except decimal.InvalidOperation:  # past the context's 400 digits: past every DECIMAL too
            rounded = decimal.Decimal(10) ** 400
        if len(rounded.as_tuple().digits) > key_type.precision and rounded != 0:
            raise WindowSpecError(
                f"the offset {sql_literal(offset)} cannot be represented as {sql_type(key_type)}, the "
                "ORDER BY column's type (Spark: NUMERIC_VALUE_OUT_OF_RANGE)"
            )
        return rounded
    return offset


def _offset_as_interval(offset, key_type: pa.DataType):
    """A RANGE offset over a day-time interval ORDER BY key, cast to the key's type as Spark casts
    it: a day-time interval as it is, an integer or DECIMAL a count of the key's last field (days
    over an INTERVAL DAY key, seconds over an INTERVAL DAY TO SECOND one, the fraction kept to the
    microsecond, rounded half up), with the key's fields; a number past Spark's largest interval is
    refused (CAST_OVERFLOW). Other offsets as they are (refused by ``check_range_key``; a string is
    ``_string_in_key_type``'s). O(1).

    >>> _offset_as_interval(decimal.Decimal("1.5"), pa.duration("s"))
    Interval(months=0, days=0, micros=129600000000, fields='DAY')
    """
    fields = carrier_fields(key_type)
    if isinstance(offset, Interval) and not offset.year_month:
        return Interval(0, offset.days, offset.micros, fields)
    if isinstance(offset, (int, decimal.Decimal)) and not isinstance(offset, bool):
        micros = (decimal.Decimal(offset) * FIELD_MICROS[fields.split()[-1]]).to_integral_value(
            decimal.ROUND_HALF_UP
        )
        if abs(micros) > INTERVAL_LIMIT["us"]:
            raise WindowSpecError(
                f"the offset {offset} cannot be cast to {sql_type(key_type)}, the ORDER BY column's type "
                "(Spark: CAST_OVERFLOW)"
            )
        return Interval(0, 0, int(micros), fields)
    return offset


def _string_in_key_type(text: str, key_type: pa.DataType):
    """A string offset (``'2' FOLLOWING``) cast straight to a numeric or day-time interval ORDER BY
    column's type, as Spark casts it (measured in Spark 4): over an integer key only integer text
    (``'1.5'`` and ``'2e0'`` fail, CAST_INVALID_INPUT), over a DECIMAL key decimal text rounded
    half up (``'1e0'`` is 1.00, ``'NaN'`` fails), over a DOUBLE key any DOUBLE text, over an
    interval key the interval's own text (``'2'`` over INTERVAL DAY, ``'1 12:00:00'`` over INTERVAL
    DAY TO SECOND; ``'1.5'`` fails, INVALID_INTERVAL_FORMAT). Over other keys the string as it is,
    for ``check_range_key`` to refuse. O(1).

    >>> _string_in_key_type(" +2 ", pa.int64()), _string_in_key_type("1.555", pa.decimal128(12, 2))
    (2, Decimal('1.56'))
    >>> _string_in_key_type(" -2 ", pa.duration("s"))
    Interval(months=0, days=0, micros=-172800000000, fields='DAY')
    """
    family = kind_of(key_type)
    where = f"'{text}' FOLLOWING over {sql_type(key_type)}"
    if family is TypeFamily.FLOAT:
        return string_offset(text, where)
    if family is TypeFamily.INTERVAL:
        try:
            value = casts.cast(pa.array([text]), key_type)[0].as_py()
        except casts.CastError as e:
            raise WindowSpecError(f"the frame bound {where}: {e}") from None
        return Interval(0, 0, value // dt.timedelta(microseconds=1), carrier_fields(key_type))
    if family not in (TypeFamily.INT, TypeFamily.DECIMAL):
        return text
    try:
        return casts.cast(pa.array([text]), key_type)[0].as_py()
    except casts.CastError:
        raise WindowSpecError(
            f"the frame bound {where}: the string cannot be cast to the ORDER BY column's type "
            "(Spark: CAST_INVALID_INPUT)"
        ) from None


def range_frame_in_key_type(frame: Frame, key_type: pa.DataType) -> Frame:
    """A RANGE frame with its offsets cast to the ORDER BY key's type as Spark casts them
    (``offset_in_key_type``; each offset checked by ``check_range_key`` before and after), so over
    an integer or DECIMAL key an INTERVAL is a number like any other offset and an infinite or NaN
    DOUBLE over a DECIMAL key is NULL. ``NULL FOLLOWING`` over a day-time interval key is a NULL of
    its type (``NULL PRECEDING``, Spark's ``-NULL``, a DOUBLE, is refused). O(1).

    >>> from overwindow.logical.frame import FrameUnit
    >>> day = Interval(days=1, fields="DAY")
    >>> frame = Frame(FrameUnit.RANGE, Bound.preceding(day), Bound.following(1.5))
    >>> str(range_frame_in_key_type(frame, pa.int64()))
    'RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING'
    """
    bounds = []
    for b in (frame.start, frame.end):
        if b.offset is None and b.kind is BoundKind.FOLLOWING and kind_of(key_type) is TypeFamily.INTERVAL:
            bounds.append(b)  # NULL FOLLOWING: Spark casts the NULL to the key's interval type
            continue
        if b.has_offset:
            check_range_key(b.offset, key_type)
            b = Bound(b.kind, offset_in_key_type(b.offset, key_type))
            check_range_key(b.offset, key_type)  # an offset that cast past an INT key's range
        bounds.append(b)
    return Frame(frame.unit, bounds[0], bounds[1], frame.exclude)


def check_range_frame(frame: Frame, key_type: pa.DataType) -> None:
    """Spark's checks of a RANGE frame with offsets over an ORDER BY key of ``key_type``, made after
    it casts each offset to a numeric key's type (measured in Spark 4; ``range_frame_in_key_type``),
    so ``INTERVAL 1 DAY PRECEDING AND 1 FOLLOWING`` and ``1.5 FOLLOWING AND 1 FOLLOWING`` over a
    BIGINT key are accepted and ``INTERVAL 1 DAY PRECEDING AND INTERVAL 2 HOURS PRECEDING`` is
    not (-1 is past -2). WindowSpecError for bounds of two types once cast (an INTERVAL beside a
    number over a DATE or TIMESTAMP key; Spark: SPECIFIED_WINDOW_FRAME_DIFF_TYPES) or a lower
    bound past the upper one, NaN above every number (SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON),
    but on one side of the row (``Frame.one_side``: SQL's empty frame, more of SQL). Two intervals
    of other fields bound one frame (SQL's intervals are one type). The frame kernels themselves
    take any frame (a start past the end is an empty frame). O(1).

    >>> from overwindow.logical.frame import FrameUnit
    >>> frame = Frame(FrameUnit.RANGE, Bound.following(1.5), Bound.following(1))
    >>> check_range_frame(frame, pa.int64())  # 1 FOLLOWING AND 1 FOLLOWING
    >>> check_range_frame(frame, pa.float64())  # empty
    >>> check_range_frame(Frame(FrameUnit.RANGE, Bound.following(1), Bound.preceding(1)), pa.float64())
    Traceback (most recent call last):
    ...
    overwindow.errors.WindowSpecError: the lower bound of a window frame must be less than or equal ...
    """
    cast = range_frame_in_key_type(frame, key_type)
    a, b = cast.start.offset, cast.end.offset
    if a is not None and b is not None and not _same_type(a, b):
        raise WindowSpecError(
            f"window frame bounds {sql_literal(a)} and {sql_literal(b)} do not have the same type "
            f"over a {sql_type(key_type)} ORDER BY column"
        )
    lower, upper = cast.start.signed_offset(), cast.end.signed_offset()
    # the start past the end on one side is SQL's empty frame, unless an offset is no number or
    # INTERVAL (a string, a TIMESTAMP), an INTERVAL became a number of a numeric key, or an offset
    # is NaN (SQL refuses these: Spark's refusal stands)
    empty = frame.one_side and all(
        isinstance(b.offset, (Interval, int, float, decimal.Decimal))
        and not isinstance(b.offset, bool)
        and isinstance(b.offset, Interval) == isinstance(c.offset, Interval)
        and not (isinstance(c.offset, float) and math.isnan(c.offset))
        for b, c in ((frame.start, cast.start), (frame.end, cast.end))
    )
    if lower is not None and upper is not None and _sorts_after(lower, upper) and not empty:
        raise WindowSpecError(
            f"the lower bound of a window frame must be less than or equal to the upper bound: {frame}"
            f" (over {sql_type(key_type)}: {cast.start} AND {cast.end})"
        )


def _same_type(a, b) -> bool:
    """Whether two offsets (cast to the key's type) have one SQL type: two numbers, or two INTERVALs
    of any fields (Spark wants one type, ``INTERVAL MINUTE`` is not ``INTERVAL SECOND``; SQL's
    intervals, PostgreSQL's and DuckDB's, are one type: ``INTERVAL '1' MINUTE PRECEDING AND
    INTERVAL '20' SECOND FOLLOWING`` and ``INTERVAL '1' MONTH PRECEDING AND ... SECOND FOLLOWING``
    bound one frame, more of SQL)."""
    if isinstance(a, Interval) and isinstance(b, Interval):
        return True
    return not isinstance(a, Interval) and not isinstance(b, Interval)


def _sorts_after(a, b) -> bool:
    """``a > b`` in SQL's sort order of numbers, where NaN lies above every number and equals NaN."""
    a_nan, b_nan = isinstance(a, float) and math.isnan(a), isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return a_nan and not b_nan
    return a > b


_INT_RANGES = {
    t: (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1)
    for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())
}


def check_range_key(offset, key_type: pa.DataType) -> None:
    """Spark's rules for a RANGE offset over an ORDER BY column of ``key_type`` (WindowSpecError
    otherwise, when the call is planned, before any row): numbers over numbers (an integer offset
    within the column's integer type, no infinite offset over integers), INTERVALs over TIMESTAMPs,
    whole days or YEAR, MONTH and DAY intervals over DATEs, day-time intervals and integer or
    DECIMAL numbers over day-time intervals. O(1).

    >>> check_range_key(Interval(micros=3_600_000_000, fields="HOUR"), pa.date32())
    Traceback (most recent call last):
    ...
    overwindow.errors.WindowSpecError: RANGE over a DATE ORDER BY column takes YEAR, MONTH or DAY ...
    """
    family = kind_of(key_type)
    what = sql_type(key_type)
    if offset is None and not family.is_numeric:  # Spark types NULL as a DOUBLE offset here
        raise WindowSpecError(
            f"a NULL RANGE offset needs a numeric ORDER BY column (or NULL FOLLOWING a day-time "
            f"INTERVAL one: NULL PRECEDING is -NULL, a DOUBLE), not {what}"
        )
    if family is TypeFamily.INTERVAL:
        number = isinstance(offset, (int, decimal.Decimal)) and not isinstance(offset, bool)
        # a string FOLLOWING is cast to the key's type (offset_in_key_type, which refuses what
        # does not cast); '1' PRECEDING was read as a DOUBLE (logical/parse.py), refused here
        if isinstance(offset, str):
            return
        if not number and (not isinstance(offset, Interval) or offset.year_month):
            raise WindowSpecError(
                f"RANGE over an {what} ORDER BY column needs a day-time INTERVAL or an integer or "
                f"DECIMAL offset, not {offset if isinstance(offset, Interval) else sql_literal(offset)} "
                "(Spark: RANGE_FRAME_INVALID_TYPE)"
            )
        return
    if not family.is_ordered_number:
        raise WindowSpecError(
            f"RANGE with an offset needs a numeric, DATE, TIMESTAMP or day-time INTERVAL ORDER BY "
            f"column, not {what}"
        )
    if isinstance(offset, Interval):
        if family in (TypeFamily.INT, TypeFamily.DECIMAL):
            return  # cast to the key's type, in the interval's last unit (offset_in_key_type)
        if not family.is_temporal:
            raise WindowSpecError(
                f"an INTERVAL offset needs a DATE, TIMESTAMP, integer or DECIMAL ORDER BY column, not {what}"
            )
        if family is TypeFamily.DATE and not (
            offset.year_month or offset.fields in ("DAY", "") and not offset.micros
        ):
            raise WindowSpecError(
                "RANGE over a DATE ORDER BY column takes YEAR, MONTH or DAY intervals or whole days, "
                f"not {offset}"
            )
        return
    if family is TypeFamily.TIMESTAMP or (family is TypeFamily.DATE and not isinstance(offset, int)):
        raise WindowSpecError(
            f"RANGE over a {what} ORDER BY column needs an INTERVAL offset"
            f"{' (or whole days)' if family is TypeFamily.DATE else ''}, not {sql_literal(offset)}"
        )
    if family is TypeFamily.INT and isinstance(offset, int) and key_type in _INT_RANGES:
        lo, hi = _INT_RANGES[key_type]
        if not lo <= offset <= hi:
            raise WindowSpecError(
                f"the offset {offset} cannot be cast to {what}, the ORDER BY column's type "
                "(Spark: CAST_OVERFLOW)"
            )
    if family is TypeFamily.INT and isinstance(offset, float) and not math.isfinite(offset):
        raise WindowSpecError(
            f"the offset {sql_literal(offset)} cannot be cast to {what}, the ORDER BY column's type "
            "(Spark: CAST_OVERFLOW)"
        )


def date_days(offset, kind: TypeFamily):
    """A whole-number offset on a DATE key counts days (as in Spark and DuckDB)."""
    if kind is TypeFamily.DATE and isinstance(offset, int) and not isinstance(offset, bool):
        return Interval(days=offset)
    return offset
