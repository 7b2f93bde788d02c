"""Spark's casts over Arrow arrays (ANSI mode, Spark 4's default), and the implicit cast of a
``lag``/``lead`` default to its column's type.

A cast Spark would fail on the data (``'a'`` to INT, NaN to INT, a number past the target's range)
raises ``CastError`` naming the value; callers turn it into a ``WindowSpecError`` for constants
(refused when the call is built) or a ``WindowRuntimeError`` for column values (``cast_operand``
does so for an operand of an expression that Spark casts implicitly). Numbers to integers
drop the fraction (toward zero), numbers to DECIMAL round half up (away from zero), DOUBLE to
DECIMAL goes through the double's shortest decimal text, as Spark does. O(n).

>>> cast(pa.array([decimal.Decimal("1.255"), decimal.Decimal("-1.4")]), pa.decimal128(12, 2)).to_pylist()
[Decimal('1.26'), Decimal('-1.40')]
>>> cast(pa.array([decimal.Decimal("0.5"), decimal.Decimal("-1.4")]), pa.int32()).to_pylist()
[0, -1]
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from overwindow.errors import WindowRuntimeError, WindowSpecError
from overwindow.logical.expr import parse_timestamp, spark_date
from overwindow.logical.intervals import interval_from_text
from overwindow.physical import decimals
from overwindow.physical.values import (
    FIELD_MICROS,
    INTERVAL_DAY_TO_SECOND,
    TypeFamily,
    carrier_fields,
    interval_type,
    kind_of,
    sql_type,
)


class CastError(ValueError):
    """A value Spark's cast refuses (``CAST_INVALID_INPUT``, ``CAST_OVERFLOW``)."""


_BOOLEAN_WORDS = {
    "true": True, "t": True, "yes": True, "y": True, "1": True,
    "false": False, "f": False, "no": False, "n": False, "0": False,
}  # fmt: skip


def implicit_default(default: pa.Array, target: pa.DataType, where: str) -> pa.Array:
    """A lag/lead default cast to its column's type as Spark's analyser casts it (the third
    parameter requires the column's type or VOID): numbers and strings to numbers; anything to a
    STRING; strings to BOOLEAN; strings, DATEs and TIMESTAMPs to DATE and TIMESTAMP; strings to a
    day-time interval (the literal's text, ``'3'`` or ``'1 02:00:00'``, or the literal itself). Other
    pairs raise WindowSpecError in Spark's words."""
    source = default.type
    if source == target or pa.types.is_null(source):
        return cast(default, target)
    have, want = kind_of(source), kind_of(target)
    allowed = (
        (want.is_numeric and (have.is_numeric or have is TypeFamily.STRING))
        or want is TypeFamily.STRING
        or (want is TypeFamily.BOOL and have in (TypeFamily.BOOL, TypeFamily.STRING))
        or (want.is_temporal and (have.is_temporal or have is TypeFamily.STRING))
        or (want is TypeFamily.INTERVAL and have is TypeFamily.STRING)
    )
    if not allowed:
        raise WindowSpecError(
            f"the default must be {sql_type(target)} (the column's type) or NULL, got "
            f"{sql_type(source)} {where}"
        )
    return cast(default, target)


def cast(array: pa.Array, target: pa.DataType, source_fields: str = "", fields: str = "") -> pa.Array:
    """``CAST(array AS target)`` as Spark computes it in ANSI mode; CastError where Spark fails.
    ``source_fields`` and ``fields``: the day-time interval fields of the array and of the target
    (``HOUR``, ``DAY TO MINUTE``: what a number counts and a string spells), by default those of
    their Arrow carriers (``carrier_fields``)."""
    source = array.type
    have, want = kind_of(source), kind_of(target)
    fields = fields or (carrier_fields(target) if want is TypeFamily.INTERVAL else "")
    if source == target and not (want is TypeFamily.INTERVAL and fields != (source_fields or fields)):
        return array
    if pa.types.is_null(source):
        return pa.nulls(len(array), target)
    if have is TypeFamily.INTERVAL:
        return _from_interval(array, target, source_fields or carrier_fields(source), fields)
    if want is TypeFamily.INTERVAL:
        return _to_interval(array, fields)
    try:
        if want is TypeFamily.STRING and have is TypeFamily.BOOL:
            return pc.if_else(array, "true", "false").cast(target)
        if want is TypeFamily.STRING and have in (TypeFamily.FLOAT, TypeFamily.TIMESTAMP):
            return spark_text(array).cast(target)
        if want is TypeFamily.STRING and have is TypeFamily.DECIMAL:  # plain: 0.0000000001, not 1E-10
            return pa.array([None if v is None else format(v, "f") for v in array.to_pylist()], target)
        if have is TypeFamily.TIMESTAMP and want.is_numeric:
            return _from_timestamp(array, target, want)
        if have is TypeFamily.STRING and want is not TypeFamily.STRING:
            return _from_strings(array, target, want)
        if want is TypeFamily.INT and have in (TypeFamily.FLOAT, TypeFamily.DECIMAL):
            if have is TypeFamily.FLOAT and pc.any(pc.invert(pc.is_finite(array))).as_py():
                raise CastError(f"a NaN or infinite value cannot be cast to {sql_type(target)}")
            if have is TypeFamily.DECIMAL:  # an integer digit to round into: 0.5 is a DECIMAL(1, 1)
                wider = source.precision + 1
                array = array.cast(
                    pa.decimal128(wider, source.scale) if wider <= 38 else pa.decimal256(wider, source.scale)
                )
            array = pc.round(array, 0, round_mode="towards_zero")
            return array.cast(pa.int64() if have is TypeFamily.FLOAT else target).cast(target)
        if want is TypeFamily.FLOAT and have is TypeFamily.INT:  # rounded to the nearest, as Java casts
            return array.cast(target, safe=False)
        if want is TypeFamily.FLOAT and have is TypeFamily.DECIMAL:  # correctly rounded (Arrow's is not)
            return decimals.to_float64(array).cast(target)
        if want is TypeFamily.DECIMAL and have is TypeFamily.FLOAT:
            return _decimals(array.to_pylist(), target)
        if want is TypeFamily.DECIMAL and have is TypeFamily.DECIMAL and source.scale > target.scale:
            # one more integer digit first: 0.5 of a DECIMAL(38, 38) rounds to 1, which it cannot hold
            wider = pa.decimal256(min(source.precision + 1, 76), source.scale)
            array = pc.round(array.cast(wider), target.scale, round_mode="half_towards_infinity")
        if want is TypeFamily.DECIMAL and have is TypeFamily.INT:
            array = array.cast(pa.decimal128(38, 0))  # Arrow casts integers only through 19+ digits
        if want is TypeFamily.DATE and have is TypeFamily.TIMESTAMP:
            return array.cast(pa.date32()).cast(target)
        return array.cast(target)
    except pa.ArrowInvalid as e:
        raise CastError(f"cannot cast {sql_type(source)} to {sql_type(target)}: {e}") from None


def cast_operand(x, target: pa.DataType, name: str):
    """An operand cast to ``target`` as Spark casts it implicitly: a constant that fails is refused
    (WindowSpecError: it fails in every row), a column's value fails the query (WindowRuntimeError)."""
    try:
        if isinstance(x, pa.Scalar):
            return cast(pa.array([x.as_py()], x.type), target)[0]
        return cast(x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x, target)
    except CastError as e:
        error = WindowSpecError if isinstance(x, pa.Scalar) else WindowRuntimeError
        raise error(f"{e}, in {name} (Spark: CAST_INVALID_INPUT)") from None


def _from_timestamp(array: pa.Array, target: pa.DataType, want: TypeFamily) -> pa.Array:
    """TIMESTAMPs cast to a number as Spark casts them: seconds since 1970-01-01 00:00:00 UTC, to an
    integer type rounded down (CastError past the type, Spark's CAST_OVERFLOW), to DOUBLE and FLOAT
    through the DOUBLE ``ticks / ticks per second``, to DECIMAL through that DOUBLE too (Spark:
    "we lose precision here"). O(n).

    >>> ts = pa.array([-500_000, 1_500_000, None], pa.timestamp("us"))
    >>> cast(ts, pa.int64()).to_pylist(), cast(ts, pa.float64()).to_pylist()
    ([-1, 1, None], [-0.5, 1.5, None])
    """
    ticks = array.cast(pa.int64())
    per_second = _TICKS_PER_SECOND[array.type.unit]
    if want is TypeFamily.INT:
        seconds = np.floor_divide(ticks.fill_null(0).to_numpy(), per_second)
        return cast(pa.array(seconds, mask=pc.is_null(ticks).to_numpy(zero_copy_only=False)), target)
    return cast(pc.divide(ticks.cast(pa.float64()), float(per_second)), target)


_TICKS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def spark_text(array: pa.Array) -> pa.Array:
    """DOUBLEs, FLOATs and TIMESTAMPs as Spark's CAST(... AS STRING) writes them: numbers as Java's
    ``Double.toString`` / ``Float.toString`` (``java_text``), a TIMESTAMP as ``yyyy-MM-dd
    HH:mm:ss`` and its fraction of a second without trailing zeros, in UTC (the session's zone).
    O(n).

    >>> spark_text(pa.array([1.0, 1e20, None])).to_pylist()
    ['1.0', '1.0E20', None]
    >>> spark_text(pa.array([0, 1_500_000], pa.timestamp("us"))).to_pylist()
    ['1970-01-01 00:00:00', '1970-01-01 00:00:01.5']
    """
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if kind_of(array.type) is TypeFamily.FLOAT:
        single = array.type == pa.float32()
        numbers = array.fill_null(0).to_numpy(zero_copy_only=False)
        texts = [java_text(float(v), single) if ok else None for v, ok in zip(numbers, valid)]
        return pa.array(texts, pa.string())
    ticks = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    per_second = _TICKS_PER_SECOND[array.type.unit]
    seconds, rest = np.divmod(ticks, per_second)
    whole = np.char.replace(np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s"), "T", " ")
    micros = rest * 1_000_000 // per_second
    texts = [
        (w + f".{m:06d}".rstrip("0") if m else w) if ok else None
        for w, m, ok in zip(whole.tolist(), micros, valid)
    ]
    return pa.array(texts, pa.string())


def java_text(v: float, single: bool = False) -> str:
    """Java's ``Double.toString(v)`` (``Float.toString`` when ``single``), which Spark's cast to
    STRING writes: the shortest digits that read back as ``v`` (at least two when one would do,
    the two nearest ``v``: ``4.9E-324``), plain from 0.001 up to 10**7 (``0.001``, ``100.0``),
    else ``d.dddE<n>``; ``NaN``, ``Infinity``, ``-0.0``. Java 19 and later; Java 17 writes more
    digits than needed for a few values (docs/semantics.md, "Differences from Spark"). O(1).

    >>> [java_text(v) for v in (1.0, 0.001, 1e7, -2.5e-5, 5e-324, float("-inf"))]
    ['1.0', '0.001', '1.0E7', '-2.5E-5', '4.9E-324', '-Infinity']
    >>> java_text(0.1, single=True), java_text(1e10, single=True)
    ('0.1', '1.0E10')
    """
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    kind = np.float32 if single else np.float64
    shortest = decimal.Decimal(np.format_float_scientific(kind(v), unique=True))
    if len(shortest.as_tuple().digits) == 1:  # Java picks the nearest of one or two digits
        exact = decimal.Decimal(float(kind(v)))
        step = decimal.Decimal(1).scaleb(exact.adjusted() - 1)
        two = exact.quantize(step, rounding=decimal.ROUND_HALF_EVEN)
        if kind(str(two)) == kind(v):
            shortest = two.normalize()
    sign, digits, exponent = shortest.as_tuple()
    text = "".join(map(str, digits))
    point = len(digits) + exponent  # digits before the decimal point
    if 1e-3 <= abs(v) < 1e7:
        if point <= 0:
            body = "0." + "0" * -point + text
        elif point >= len(text):
            body = text + "0" * (point - len(text)) + ".0"
        else:
            body = text[:point] + "." + text[point:]
    else:
        body = f"{text[0]}.{text[1:] or '0'}E{point - 1}"
    return ("-" if sign else "") + body


def _micros(array: pa.Array) -> pa.Array:
    """A day-time interval's values as int64 microseconds (Spark's own storage)."""
    return array.cast(INTERVAL_DAY_TO_SECOND).cast(pa.int64())


def _from_interval(array: pa.Array, target: pa.DataType, fields: str, to: str) -> pa.Array:
    """A day-time interval of ``fields`` cast as Spark casts it: to an integer type the count of its
    last field's unit, the rest dropped toward zero (``INTERVAL '1.5' SECOND`` is 1); to a DECIMAL
    that count exactly, rounded half up to the scale (CastError where either overflows, Spark's
    CAST_OVERFLOW); to a STRING Spark's literal (``INTERVAL '-2' DAY``, ``INTERVAL '03' HOUR``,
    ``INTERVAL '1 02:00:00.5' DAY TO SECOND``); to another day-time interval of ``to`` the rest
    below its last field dropped toward zero. Other targets are refused, as Spark refuses them
    (DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION). O(n).

    >>> cast(pa.array([-172800, None], pa.duration("s")), pa.string()).to_pylist()
    ["INTERVAL '-2' DAY", None]
    >>> cast(pa.array([5_400_000_000], pa.duration("us")), pa.string(), "HOUR TO MINUTE").to_pylist()
    ["INTERVAL '01:30' HOUR TO MINUTE"]
    """
    want = kind_of(target)
    if want not in (TypeFamily.INT, TypeFamily.DECIMAL, TypeFamily.STRING, TypeFamily.INTERVAL):
        raise WindowSpecError(f"cannot cast {_spelled(array.type, fields)} to {sql_type(target)}")
    micros = _micros(array)
    if want is TypeFamily.INTERVAL:
        unit = FIELD_MICROS[to.split()[-1]]
        whole = pc.multiply(pc.divide(micros, unit), unit)  # integer division: toward zero
        return whole.cast(INTERVAL_DAY_TO_SECOND).cast(target)
    if want is TypeFamily.STRING:
        texts = [None if m is None else interval_text(m, fields) for m in micros.to_pylist()]
        return pa.array(texts, pa.string()).cast(target)
    unit = FIELD_MICROS[fields.split()[-1]]
    try:
        if want is TypeFamily.INT:
            return cast(pc.divide(micros, unit), target)  # integer division: toward zero
        counts = [None if m is None else decimal.Decimal(m) / unit for m in micros.to_pylist()]
        return _decimals(counts, target)
    except CastError:
        raise CastError(
            f"an {_spelled(array.type, fields)} value overflows {sql_type(target)} (Spark: CAST_OVERFLOW)"
        ) from None


def _spelled(t: pa.DataType, fields: str) -> str:
    return f"INTERVAL {fields}" if kind_of(t) is TypeFamily.INTERVAL else sql_type(t)


_SPARK_LIMIT = 2**63 - 1  # Spark's long of microseconds


def interval_text(micros: int, fields: str) -> str:
    """Spark's text of a day-time interval of ``fields`` (what CAST(... AS STRING) gives): the
    first field as it is (two digits at least, but for DAY), the others two digits each, seconds
    with their fraction. O(1).

    >>> interval_text(-93_600_500_000, "DAY TO SECOND"), interval_text(1_500_000, "SECOND")
    ("INTERVAL '-1 02:00:00.5' DAY TO SECOND", "INTERVAL '01.5' SECOND")
    """
    names = ["DAY", "HOUR", "MINUTE", "SECOND"]
    first, last = fields.split()[0], fields.split()[-1]
    rest, parts = abs(micros), []
    for name in names[names.index(first) : names.index(last) + 1]:
        amount, rest = divmod(rest, FIELD_MICROS[name])
        parts.append(str(amount) if name == "DAY" else f"{amount:02d}")
    if rest and last == "SECOND":  # microseconds: the fraction of the seconds
        parts[-1] += f".{rest:06d}".rstrip("0")
    text = f"{parts[0]} {':'.join(parts[1:])}" if first == "DAY" and len(parts) > 1 else ":".join(parts)
    return f"INTERVAL '{'-' if micros < 0 else ''}{text}' {fields}"


def _to_interval(array: pa.Array, fields: str) -> pa.Array:
    """Numbers and strings cast to a day-time interval of ``fields`` as Spark casts them: an integer
    or DECIMAL counts the last field's unit (``CAST(3 AS INTERVAL HOUR)`` is 3 hours, a DECIMAL's
    fraction kept to the microsecond, rounded half up), a string is the literal's text
    (``interval_from_text``). CastError where a value overflows (CAST_OVERFLOW) or a string is no
    such interval (INVALID_INTERVAL_FORMAT); WindowSpecError for other types. O(n).

    >>> cast(pa.array([3, None], pa.int32()), pa.duration("us"), fields="HOUR").to_pylist()
    [datetime.timedelta(seconds=10800), None]
    """
    have, unit = kind_of(array.type), FIELD_MICROS[fields.split()[-1]]
    if have not in (TypeFamily.INT, TypeFamily.DECIMAL, TypeFamily.STRING):
        raise WindowSpecError(f"cannot cast {sql_type(array.type)} to INTERVAL {fields}")
    micros = []
    for v in array.to_pylist():
        if v is None:
            micros.append(None)
        elif have is TypeFamily.STRING:
            try:
                iv = interval_from_text(v, fields)
            except WindowSpecError as e:
                raise CastError(str(e)) from None
            micros.append(iv.days * FIELD_MICROS["DAY"] + iv.micros)
        else:
            micros.append(int((decimal.Decimal(v) * unit).to_integral_value(decimal.ROUND_HALF_UP)))
    if any(m is not None and abs(m) > _SPARK_LIMIT for m in micros):
        raise CastError(
            f"a value of {sql_type(array.type)} overflows INTERVAL {fields} (Spark: CAST_OVERFLOW)"
        )
    return pa.array(micros, pa.int64()).cast(INTERVAL_DAY_TO_SECOND).cast(interval_type(fields))


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
                out.append(spark_date(s))
            elif want is TypeFamily.TIMESTAMP:
                out.append(parse_timestamp(s))
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
