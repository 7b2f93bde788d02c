"""Spark's casts over Arrow arrays (ANSI mode, Spark 4's default), and the implicit cast of a
``lag``/``lead`` default to its column's type.

A cast Spark would fail on the data (``'a'`` to INT, NaN to INT, a number past the target's range)
raises ``CastError`` naming the value; callers turn it into a ``WindowSpecError`` for constants
(refused when the call is built) or a ``WindowRuntimeError`` for column values. Numbers to integers
drop the fraction (toward zero), numbers to DECIMAL round half up (away from zero), DOUBLE to
DECIMAL goes through the double's shortest decimal text, as Spark does. O(n).

>>> cast(pa.array([decimal.Decimal("1.255"), decimal.Decimal("-1.4")]), pa.decimal128(12, 2)).to_pylist()
[Decimal('1.26'), Decimal('-1.40')]
>>> cast(pa.array([decimal.Decimal("0.5"), decimal.Decimal("-1.4")]), pa.int32()).to_pylist()
[0, -1]
"""

from __future__ import annotations

import datetime as dt
import decimal
import re

import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import parse_timestamp
from overwindow.physical.values import INTERVAL_DAY, TypeFamily, kind_of, sql_type


class CastError(ValueError):
    """A value Spark's cast refuses (``CAST_INVALID_INPUT``, ``CAST_OVERFLOW``)."""


_BOOLEAN_WORDS = {
    "true": True, "t": True, "yes": True, "y": True, "1": True,
    "false": False, "f": False, "no": False, "n": False, "0": False,
}  # fmt: skip


def implicit_default(default: pa.Array, target: pa.DataType, where: str) -> pa.Array:
    """A lag/lead default cast to its column's type as Spark's analyser casts it (the third
    parameter requires the column's type or VOID): numbers and strings to numbers; anything to a
    STRING; strings to BOOLEAN; strings, DATEs and TIMESTAMPs to DATE and TIMESTAMP; a string of a
    whole number of days to INTERVAL DAY (Spark reads more interval texts). Other pairs
    raise WindowSpecError in Spark's words."""
    source = default.type
    if source == target or pa.types.is_null(source):
        return cast(default, target)
    have, want = kind_of(source), kind_of(target)
    allowed = (
        (want.is_numeric and (have.is_numeric or have is TypeFamily.STRING))
        or want is TypeFamily.STRING
        or (want is TypeFamily.BOOL and have in (TypeFamily.BOOL, TypeFamily.STRING))
        or (want.is_temporal and (have.is_temporal or have is TypeFamily.STRING))
        or (target == INTERVAL_DAY and have is TypeFamily.STRING)
    )
    if not allowed:
        raise WindowSpecError(
            f"the default must be {sql_type(target)} (the column's type) or NULL, got "
            f"{sql_type(source)} {where}"
        )
    if want is TypeFamily.STRING and have in (TypeFamily.FLOAT, TypeFamily.TIMESTAMP):
        raise WindowSpecError(
            f"a {sql_type(source)} default for a STRING column: Spark's text for it (Java's number and "
            f"time formats) is not reproduced; write the default as a string {where}"
        )
    return cast(default, target)


def cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``CAST(array AS target)`` as Spark computes it in ANSI mode; CastError where Spark fails."""
    source = array.type
    if source == target:
        return array
    if pa.types.is_null(source):
        return pa.nulls(len(array), target)
    have, want = kind_of(source), kind_of(target)
    if have is TypeFamily.INTERVAL:
        return _from_interval(array, target, want)
    try:
        if want is TypeFamily.STRING and have is TypeFamily.BOOL:
            return pc.if_else(array, "true", "false").cast(target)
        if have is TypeFamily.STRING and want is not TypeFamily.STRING:
            return _from_strings(array, target, want)
        if want is TypeFamily.INT and have in (TypeFamily.FLOAT, TypeFamily.DECIMAL):
            if have is TypeFamily.FLOAT and pc.any(pc.invert(pc.is_finite(array))).as_py():
                raise CastError(f"a NaN or infinite value cannot be cast to {sql_type(target)}")
            array = pc.round(array, 0, round_mode="towards_zero")
            return array.cast(pa.int64() if have is TypeFamily.FLOAT else target).cast(target)
        if want is TypeFamily.DECIMAL and have is TypeFamily.FLOAT:
            return _decimals(array.to_pylist(), target)
        if want is TypeFamily.DECIMAL and have is TypeFamily.DECIMAL and source.scale > target.scale:
            array = pc.round(array, target.scale, round_mode="half_towards_infinity")
        if want is TypeFamily.DECIMAL and have is TypeFamily.INT:
            array = array.cast(pa.decimal128(38, 0))  # Arrow casts integers only through 19+ digits
        if want is TypeFamily.DATE and have is TypeFamily.TIMESTAMP:
            return array.cast(pa.date32()).cast(target)
        return array.cast(target)
    except pa.ArrowInvalid as e:
        raise CastError(f"cannot cast {sql_type(source)} to {sql_type(target)}: {e}") from None


def _from_interval(array: pa.Array, target: pa.DataType, want: TypeFamily) -> pa.Array:
    """An INTERVAL DAY cast as Spark casts it: to an integer or DECIMAL type its number of days
    (CastError where that overflows the target, Spark's CAST_OVERFLOW), to a STRING Spark's text
    ``INTERVAL '-2' DAY``. Other targets, and an INTERVAL DAY TO SECOND to any of these, are refused
    as Spark refuses them (DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION). O(n).

    >>> cast(pa.array([-172800, None], pa.duration("s")), pa.string()).to_pylist()
    ["INTERVAL '-2' DAY", None]
    """
    if array.type != INTERVAL_DAY or want not in (TypeFamily.INT, TypeFamily.DECIMAL, TypeFamily.STRING):
        raise WindowSpecError(f"cannot cast {sql_type(array.type)} to {sql_type(target)}")
    days = pc.divide(array.cast(pa.int64()), 86400)  # whole days: exact
    if want is TypeFamily.STRING:
        return pc.binary_join_element_wise("INTERVAL '", days.cast(pa.string()), "' DAY", "").cast(target)
    try:
        return cast(days, target)
    except CastError:
        raise CastError(
            f"an INTERVAL DAY value overflows {sql_type(target)} (Spark: CAST_OVERFLOW)"
        ) from None


def _from_strings(array: pa.Array, target: pa.DataType, want: TypeFamily) -> pa.Array:
    """Strings parsed as Spark parses them for a cast (surrounding spaces ignored)."""
    texts = array.to_pylist()
    if want is TypeFamily.DECIMAL:
        return _decimals(texts, target)
    out = []
    for t in texts:
        if t is None:
            out.append(None)
            continue
        s = t.strip()
        try:
            if want is TypeFamily.INT:
                out.append(int(s))
            elif want is TypeFamily.FLOAT:
                out.append(float(s))  # Python reads inf, Infinity and NaN as Spark does
            elif want is TypeFamily.BOOL:
                out.append(_BOOLEAN_WORDS[s.lower()])
            elif want is TypeFamily.DATE:
                out.append(dt.date.fromisoformat(s[:10]))
            elif want is TypeFamily.TIMESTAMP:
                out.append(parse_timestamp(s))
            elif target == INTERVAL_DAY and re.fullmatch(r"[+-]?\d+", s):  # a number of days
                out.append(dt.timedelta(days=int(s)))
            else:
                raise CastError(f"cannot cast STRING to {sql_type(target)}")
        except (ValueError, KeyError):
            raise CastError(
                f"the value {t!r} of the type STRING cannot be cast to {sql_type(target)}"
            ) from None
    try:
        return pa.array(out, type=target)
    except (pa.ArrowInvalid, OverflowError):
        raise CastError(f"a value of {texts!r} overflows {sql_type(target)}") from None


def _decimals(values: list, target: pa.Decimal128Type) -> pa.Array:
    """Numbers or numeric strings as DECIMAL(p, s), rounded half up; doubles through their shortest
    decimal text (Spark's ``Decimal(double)``)."""
    step = decimal.Decimal(1).scaleb(-target.scale)
    out = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        try:
            d = decimal.Decimal(repr(v) if isinstance(v, float) else v.strip() if isinstance(v, str) else v)
            if not d.is_finite():
                raise decimal.InvalidOperation
            q = d.quantize(step, rounding=decimal.ROUND_HALF_UP, context=decimal.Context(prec=80))
        except decimal.InvalidOperation:
            raise CastError(f"the value {v!r} cannot be cast to {sql_type(target)}") from None
        if q.adjusted() >= target.precision - target.scale:
            raise CastError(f"the value {v!r} overflows {sql_type(target)}")
        out.append(q)
    return pa.array(out, type=target)
