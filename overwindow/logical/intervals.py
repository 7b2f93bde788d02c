"""INTERVAL literals and interval text read as Spark reads them: ``INTERVAL 3 DAYS``, ``INTERVAL '3'
DAY``, ``INTERVAL '1-1' YEAR TO MONTH``, ``INTERVAL '1 02:03:04' DAY TO SECOND``, ``INTERVAL '1 day
3 hours'`` and sums of them (``INTERVAL 1 DAY 2 HOURS``), each as one ``Interval`` with Spark's
fields, the type a RANGE frame's two bounds must share; a string cast to a day-time interval
(``interval_from_text``) and the fields of intervals side by side (``span_fields``). The parser
(``parse``) reads frame offsets and session gaps with it, the batch evaluator interval constants
and casts. O(length of the literal).

>>> unit_words("1 day 3 hours")
Interval(months=0, days=1, micros=10800000000, fields='DAY TO HOUR')
"""

from __future__ import annotations

import decimal
import re

from sqlglot import exp

from overwindow.errors import WindowSpecError
from overwindow.logical.expr import DIALECT, literal_value
from overwindow.logical.frame import Interval

_UNITS_MICROS = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
}


def interval_literal(node: exp.Expression) -> Interval:
    """An interval literal, ``INTERVAL '3' DAY`` or ``INTERVAL 1 DAY 2 HOURS`` (sqlglot: a sum of
    intervals), as one interval of the fields from the largest unit to the smallest (DAY TO HOUR),
    as Spark types it. O(1).

    >>> import sqlglot
    >>> interval_literal(sqlglot.parse_one("INTERVAL 1 DAY 2 HOURS", read=DIALECT))
    Interval(months=0, days=1, micros=7200000000, fields='DAY TO HOUR')
    """
    if isinstance(node, exp.Add):
        a, b = interval_literal(node.this), interval_literal(node.expression)
        return _combined(a, b, f"{node.sql(dialect=DIALECT)}")
    if not isinstance(node, exp.Interval):
        raise WindowSpecError(f"expected an INTERVAL, got {node.sql(dialect=DIALECT)}")
    return _interval(node)


_FIELDS = ["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"]


def _span(first: str, last: str) -> str:
    return first if first == last else f"{first} TO {last}"


def span_fields(*fields: str) -> str:
    """The fields of Spark's common type of intervals of ``fields``: from the largest first field to
    the smallest last one (``HOUR`` beside ``DAY``: ``DAY TO HOUR``). O(1).

    >>> span_fields("HOUR", "MINUTE TO SECOND")
    'HOUR TO SECOND'
    """
    names = [f for f in _FIELDS if any(f in each.split() for each in fields)]
    return _span(names[0], names[-1])


def interval_from_text(text: str, fields: str) -> Interval:
    """A string cast to a day-time interval of ``fields`` as Spark casts it: the text of that type's
    literal (``'3'`` for DAY, ``'1 02:00:00.5'`` for DAY TO SECOND, ``'36'`` for HOUR), or the whole
    literal (``INTERVAL '3' DAY``); a fraction past microseconds is dropped. Anything else is a
    WindowSpecError (Spark: INVALID_INTERVAL_FORMAT). O(len(text)).

    >>> interval_from_text(" -1 02:00:00 ", "DAY TO SECOND").micros
    -7200000000
    """
    t = text.strip()
    whole = re.fullmatch(r"(?i)interval\s*'([^']*)'\s*(\w+(?:\s+to\s+\w+)?)", t)
    if whole and " ".join(whole.group(2).upper().split()) == fields:
        t = whole.group(1).strip()
    first, _, last = fields.partition(" TO ")
    single = r"[+-]?\d+(\.\d+)?" if first == "SECOND" else r"[+-]?\d+"
    if (not last and not re.fullmatch(single, t)) or (last and not re.fullmatch(r"[+-]?[\d :.]+", t)):
        raise WindowSpecError(
            f"the string {text!r} is not an INTERVAL {fields} (Spark: INVALID_INTERVAL_FORMAT)"
        )
    if not last:
        one = _one_unit(_number(t, text), first)
        return Interval(0, one.days, one.micros, fields)
    return _day_time(t, first, last)


def _combined(a: Interval, b: Interval, text: str) -> Interval:
    """Two intervals added, their fields spanning both (INTERVAL '1' DAY + '2' HOUR: DAY TO HOUR)."""
    fields = [f for f in _FIELDS if f in a.fields.split() + b.fields.split()]
    if (a.months or b.months) and (a.days or a.micros or b.days or b.micros):
        raise WindowSpecError(
            f"INTERVAL {text} mixes months with days or times: Spark's RANGE frames take a year-month "
            "or a day-time interval, not both"
        )
    return Interval(a.months + b.months, a.days + b.days, a.micros + b.micros, _span(fields[0], fields[-1]))


def _interval(node: exp.Interval) -> Interval:
    """``INTERVAL 3 DAYS``, ``INTERVAL '3' DAY``, ``INTERVAL '1-1' YEAR TO MONTH``, ``INTERVAL '1
    02:03:04' DAY TO SECOND`` and ``INTERVAL '1 day 3 hours'``, with Spark's fields (the type a
    frame's two bounds must share)."""
    amount = literal_value(node.this, "INTERVAL")
    unit = node.args.get("unit")
    if isinstance(unit, exp.IntervalSpan):
        first, last = unit.this.name.upper(), unit.expression.name.upper()
        if (first, last) == ("YEAR", "MONTH"):
            return _year_month(str(amount))
        return _day_time(str(amount), first, last)
    unit = unit.name.upper() if unit is not None else ""
    if isinstance(amount, str) and not unit:
        return unit_words(amount)
    return _one_unit(_number(amount, amount), unit)


def unit_words(amount: str) -> Interval:
    """``'1 day 3 hours'``: every word read, as Spark reads the string (``'1 day xyz'`` is an error)."""
    words = amount.split()
    if len(words) % 2 or not words:
        raise WindowSpecError(f"cannot read INTERVAL '{amount}': write INTERVAL '<number> <unit> ...'")
    total = None
    for number, word in zip(words[::2], words[1::2]):
        part = _one_unit(_number(number, amount), word.upper())
        total = part if total is None else _combined(total, part, f"'{amount}'")
    return total


def _number(text, context):
    try:
        return decimal.Decimal(text) if "." in str(text) else int(text)
    except (ValueError, decimal.InvalidOperation):
        raise WindowSpecError(f"cannot read the number in INTERVAL {context!r}") from None


def _one_unit(amount, unit: str) -> Interval:
    unit = unit.rstrip("S") if len(unit) > 1 else unit
    if unit in ("YEAR", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE") and amount != int(amount):
        # Spark: INVALID_INTERVAL_FORMAT.INVALID_FRACTION (only seconds take a fraction)
        raise WindowSpecError(f"INTERVAL {amount} {unit} must be a whole number of {unit.lower()}s")
    if unit in ("YEAR", "MONTH"):
        return Interval(months=int(amount) * (12 if unit == "YEAR" else 1), fields=unit)
    if unit in ("WEEK", "DAY"):
        return Interval(days=int(amount) * (7 if unit == "WEEK" else 1), fields="DAY")
    if unit in _UNITS_MICROS:
        field = unit if unit in ("HOUR", "MINUTE") else "SECOND"
        return Interval(micros=int(amount * _UNITS_MICROS[unit]), fields=field)
    raise WindowSpecError(f"unsupported INTERVAL unit {unit!r} in a RANGE frame (use YEAR..MICROSECOND)")


def _year_month(text: str) -> Interval:
    """Spark's year-month literal ``'Y-M'`` (``INTERVAL '1-1' YEAR TO MONTH``: 13 months)."""
    t = text.strip()
    sign = -1 if t.startswith("-") else 1
    years, _, months = t.lstrip("+-").partition("-")
    try:
        total = int(years) * 12 + int(months)
    except ValueError:
        raise WindowSpecError(f"cannot read INTERVAL '{text}' YEAR TO MONTH") from None
    return Interval(months=sign * total, fields="YEAR TO MONTH")


def _day_time(text: str, first: str, last: str) -> Interval:
    """Spark's day-time literal: ``'D HH:MM:SS.ffffff'`` and its shorter DAY TO HOUR/MINUTE forms
    (a leading minus negates the whole interval)."""
    fields = ["DAY", "HOUR", "MINUTE", "SECOND"]
    if first not in fields or last not in fields or fields.index(first) > fields.index(last):
        raise WindowSpecError(f"unsupported INTERVAL ... {first} TO {last}")
    t = text.strip()
    sign = -1 if t.startswith("-") else 1
    parts = t.lstrip("+-").replace(" ", ":").split(":")
    names = fields[fields.index(first) : fields.index(last) + 1]
    if len(parts) != len(names):
        raise WindowSpecError(f"cannot read INTERVAL '{text}' {first} TO {last}")
    days = micros = 0
    for value, name in zip(parts, names):
        part = _one_unit(_number(value, text), name)
        days, micros = days + part.days, micros + part.micros
    return Interval(0, sign * days, sign * micros, _span(first, last))
