"""Spark's schema and interval strings, read without a JVM (so a view is checked before Spark starts).

``parse_schema`` reads a DDL column list as ``DataStreamReader.schema`` does (``name TYPE [NOT NULL]
[COMMENT '...'], ...``; ``ARRAY<...>``, ``MAP<...>``, ``STRUCT<name: TYPE, ...>``) into PySpark's
own type objects, every field nullable (streaming sources read every column nullable).
``parse_delay`` reads a watermark delay as ``withWatermark`` does and returns it in microseconds,
a month counted as 31 days (Spark's watermark arithmetic). Both raise ``SparkStringError`` with a
message in Spark's words. Tests hold them against Spark's own parser on random strings.

>>> parse_schema("k STRING, ts TIMESTAMP, `price $` DECIMAL(12, 2)").simpleString()
'struct<k:string,ts:timestamp,price $:decimal(12,2)>'
>>> parse_delay("1 hour 30 minutes") // 60_000_000
90
"""

from __future__ import annotations

import re

MICROS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 7 * 86_400_000_000,
    "month": 31 * 86_400_000_000,  # watermark delays count a month as 31 days
    "year": 12 * 31 * 86_400_000_000,
}
_LONG = 2**63


class SparkStringError(ValueError):
    """A schema or interval string Spark would refuse."""


# -- DDL schemas ---------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s+|(?P<quoted>`(?:[^`]|``)*`)|(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<word>[A-Za-z0-9_]+)|(?P<punct>[,()<>:])"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: quoted (a backquoted name, unquoted), string, word, punct."""
    out, at = [], 0
    while at < len(text):
        m = _TOKEN.match(text, at)
        if m is None:
            raise SparkStringError(f"syntax error at or near {text[at : at + 10]!r}")
        at = m.end()
        kind = m.lastgroup
        if kind == "quoted":
            out.append(("name", m.group()[1:-1].replace("``", "`")))
        elif kind is not None:
            out.append((kind, m.group()))
    return out


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self, offset: int = 0) -> tuple[str, str]:
        i = self.at + offset
        return self.tokens[i] if i < len(self.tokens) else ("end", "end of input")

    def word(self, *words: str) -> str | None:
        kind, text = self.peek()
        if kind == "word" and text.upper() in words:
            self.at += 1
            return text.upper()
        return None

    def expect(self, text: str) -> None:
        kind, found = self.peek()
        if found.upper() != text.upper() or kind not in ("punct", "word"):
            raise SparkStringError(f"syntax error at or near {found!r}: expected {text!r}")
        self.at += 1

    def name(self) -> str:
        kind, text = self.peek()
        if kind == "name" or (kind == "word" and not text.isdigit()):
            self.at += 1
            return text
        raise SparkStringError(f"syntax error at or near {text!r}: expected a column name")

    def integers(self) -> list[int]:
        if self.peek()[1] != "(":
            return []
        self.at += 1
        values = []
        while True:
            kind, text = self.peek()
            if kind != "word" or not text.isdigit():
                raise SparkStringError(f"syntax error at or near {text!r}: expected a number")
            values.append(int(text))
            self.at += 1
            if self.peek()[1] == ",":
                self.at += 1
                continue
            self.expect(")")
            return values

    def field_tail(self) -> None:
        """[NOT NULL] [COMMENT 'text']: read and dropped (stream sources read every column nullable)."""
        if self.word("NOT"):
            if not self.word("NULL"):
                raise SparkStringError(f"syntax error at or near {self.peek()[1]!r}: expected NULL")
        if self.word("COMMENT"):
            if self.peek()[0] != "string":
                raise SparkStringError(f"syntax error at or near {self.peek()[1]!r}: expected a string")
            self.at += 1

    def data_type(self):
        from pyspark.sql import types as T

        kind, text = self.peek()
        if kind != "word":
            raise SparkStringError(f"syntax error at or near {text!r}: expected a type")
        self.at += 1
        name = text.upper()
        if name == "ARRAY":
            self.expect("<")
            element = self.data_type()
            self.expect(">")
            return T.ArrayType(element, True)
        if name == "MAP":
            self.expect("<")
            key = self.data_type()
            self.expect(",")
            value = self.data_type()
            self.expect(">")
            return T.MapType(key, value, True)
        if name == "STRUCT":
            self.expect("<")
            fields = []
            while self.peek()[1] != ">":
                if fields:
                    self.expect(",")
                field_name = self.name()
                if self.peek()[1] == ":":
                    self.at += 1
                fields.append(T.StructField(field_name, self.data_type(), True))
                self.field_tail()
            self.expect(">")
            return T.StructType(fields)
        if name == "INTERVAL":
            return self.interval_type()
        params = self.integers()
        simple = _SIMPLE_TYPES.get(name)
        if simple is not None and not params:
            if name == "STRING" and self.word("COLLATE"):
                return T.StringType(self.name())
            return simple()
        if name in ("DECIMAL", "DEC", "NUMERIC") and len(params) <= 2:
            precision, scale = (params + [10, 0][len(params) :]) if params else (10, 0)
            if precision > 38:
                raise SparkStringError(f"decimal precision {precision} exceeds max precision 38")
            if scale > precision:
                raise SparkStringError(
                    f"decimal scale ({scale}) cannot be greater than precision ({precision})"
                )
            return T.DecimalType(precision, scale)
        if name in ("CHAR", "CHARACTER", "VARCHAR"):
            raise SparkStringError(f"Spark does not read {name} columns in a stream's schema; use STRING")
        if name == "TIME" and len(params) <= 1:
            precision = params[0] if params else 6
            if not 0 <= precision <= 6:
                raise SparkStringError(f"TIME({precision}): the precision is 0 to 6")
            return T.TimeType(precision)
        if simple is not None or name in ("DECIMAL", "DEC", "NUMERIC", "TIME"):
            raise SparkStringError(f"{name}({', '.join(map(str, params))}) takes no such parameters")
        raise SparkStringError(f"unsupported data type {text!r}")

    def interval_type(self):
        from pyspark.sql import types as T

        year_month = {"YEAR": T.YearMonthIntervalType.YEAR, "MONTH": T.YearMonthIntervalType.MONTH}
        day_time = {
            "DAY": T.DayTimeIntervalType.DAY,
            "HOUR": T.DayTimeIntervalType.HOUR,
            "MINUTE": T.DayTimeIntervalType.MINUTE,
            "SECOND": T.DayTimeIntervalType.SECOND,
        }
        start = self.word(*year_month, *day_time)
        if start is None:
            return T.CalendarIntervalType()
        fields = year_month if start in year_month else day_time
        end = start
        if self.word("TO"):
            end = self.word(*fields)
            if end is None or fields[end] <= fields[start]:
                raise SparkStringError(f"INTERVAL {start} TO {self.peek()[1]}: not an interval type")
        cls = T.YearMonthIntervalType if fields is year_month else T.DayTimeIntervalType
        return cls(fields[start], fields[end])


def _simple_types() -> dict:
    from pyspark.sql import types as T

    return {
        "BOOLEAN": T.BooleanType,
        "TINYINT": T.ByteType,
        "BYTE": T.ByteType,
        "SMALLINT": T.ShortType,
        "SHORT": T.ShortType,
        "INT": T.IntegerType,
        "INTEGER": T.IntegerType,
        "BIGINT": T.LongType,
        "LONG": T.LongType,
        "FLOAT": T.FloatType,
        "REAL": T.FloatType,
        "DOUBLE": T.DoubleType,
        "DATE": T.DateType,
        "TIMESTAMP": T.TimestampType,
        "TIMESTAMP_LTZ": T.TimestampType,
        "TIMESTAMP_NTZ": T.TimestampNTZType,
        "STRING": T.StringType,
        "BINARY": T.BinaryType,
        "VOID": T.NullType,
        **({"VARIANT": T.VariantType} if hasattr(T, "VariantType") else {}),  # PySpark 4.0 on
    }


_SIMPLE_TYPES: dict = {}


def parse_schema(text: str):
    """A DDL column list as the StructType a streaming source reads (every field nullable).
    O(length of text)."""
    from pyspark.sql import types as T

    if not _SIMPLE_TYPES:
        _SIMPLE_TYPES.update(_simple_types())
    p = _Parser(text)
    fields = []
    while True:
        name = p.name()
        fields.append(T.StructField(name, p.data_type(), True))
        p.field_tail()
        kind, found = p.peek()
        if kind == "end":
            return T.StructType(fields)
        if found != ",":
            raise SparkStringError(f"syntax error at or near {found!r}")
        p.at += 1


# -- intervals -----------------------------------------------------------------------------------

_UNITS = ("year", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond")


def _unit_list(text: str) -> tuple[int, int, int]:
    """(months, days, microseconds) of ``10 minutes 5 seconds`` as Spark's ``stringToInterval``
    reads it: signed whole numbers, a fraction only on seconds (up to 9 digits, kept to
    microseconds), units singular or plural."""
    months = days = micros = 0
    words = []
    for word in text.split():  # a sign may stand apart from its number: "- 10 minutes"
        if words and words[-1] in ("+", "-"):
            words[-1] += word
        else:
            words.append(word)
    if not words:
        raise SparkStringError("an interval needs a number and a unit, e.g. '10 minutes'")
    i = 0
    while i < len(words):
        value = words[i]
        unit = words[i + 1] if i + 1 < len(words) else None
        i += 2
        m = re.fullmatch(r"([+-]?)(\d*)(?:\.(\d*))?", value)
        if m is None or (not m.group(2) and not m.group(3)) or (value.endswith(".") and not m.group(2)):
            raise SparkStringError(f"{value!r} is not a number")
        if unit is None:
            raise SparkStringError(f"{value!r} has no unit")
        name = unit[:-1] if unit.endswith("s") and unit[:-1] in _UNITS else unit
        if name not in _UNITS:
            raise SparkStringError(f"unknown unit {unit!r} (use {', '.join(_UNITS)})")
        sign = -1 if m.group(1) == "-" else 1
        whole = int(m.group(2) or 0)
        fraction = m.group(3)
        if fraction is not None and name != "second":
            raise SparkStringError(f"only seconds take a fraction, not {unit!r}")
        if fraction is not None and len(fraction) > 9:
            raise SparkStringError(f"{value!r}: at most 9 digits after the point")
        if whole >= _LONG:
            raise SparkStringError(f"{value!r} is too large")
        if name in ("year", "month"):
            months += sign * whole * (12 if name == "year" else 1)
        elif name in ("week", "day"):
            days += sign * whole * (7 if name == "week" else 1)
        else:
            micros += sign * whole * MICROS[name]
            if fraction:
                micros += sign * (int(fraction.ljust(9, "0")) // 1000)
        if abs(months) >= 2**31 or abs(days) >= 2**31 or abs(micros) >= _LONG:
            raise SparkStringError("the interval is too large")
    return months, days, micros


def parse_trigger(text: str) -> int:
    """A processing-time trigger's interval (``"500 milliseconds"``, ``"interval 1 second"``; ``"0
    seconds"``: each micro-batch as soon as the one before ends) in milliseconds, as Spark's
    ``trigger(processingTime=...)`` reads it: a list of units, microseconds dropped, no months, not
    negative. O(len(text)).

    >>> parse_trigger("500 milliseconds"), parse_trigger("Interval 2 seconds"), parse_trigger("0 seconds")
    (500, 2000, 0)
    """
    rest = text.strip().lower()
    if rest[:8] == "interval" and rest[8:9].isspace():
        rest = rest[8:]
    if "'" in rest:
        raise SparkStringError(f"{text!r}: write the interval as a list of units, e.g. '500 milliseconds'")
    months, days, micros = _unit_list(rest)
    if months:
        raise SparkStringError(f"{text!r}: a trigger's interval has no month or year units")
    total = days * MICROS["day"] + micros
    if total < 0:
        raise SparkStringError(f"the interval of trigger ({text}) should not be negative")
    return total // 1000


def parse_delay(text: str) -> int:
    """A watermark delay (``"10 minutes"``, ``"interval 1 hour 30 minutes"``) in microseconds, a
    month counted as 31 days; refuses what ``withWatermark`` refuses (and SQL ``TO`` literals, which
    this reader does not take)."""
    s = text.strip().lower()
    if s.startswith("interval"):
        rest = s[len("interval") :]
        if rest and not rest[0].isspace():
            raise SparkStringError(f"cannot parse {text!r} as an interval")
        rest = rest.strip()
        if " to " in f" {rest} ":
            raise SparkStringError(
                f"{text!r}: write the delay as a list of units, e.g. '1 day 2 hours' (INTERVAL ... TO ... "
                "is not read here)"
            )
        quoted = re.fullmatch(r"'([^']*)'", rest)
        if quoted:  # INTERVAL '10 minutes'
            rest = quoted.group(1)
        else:  # INTERVAL 10 MINUTES, INTERVAL '10' MINUTE
            rest = re.sub(r"'([^']*)'", r"\1", rest)
    else:
        rest = s
    months, days, micros = _unit_list(rest)
    if s.startswith("interval"):
        # Spark reads an INTERVAL literal as ANSI year-month or day-time, never both (a plain unit
        # list is a calendar interval and may mix them): refused even when every number is 0
        units = {word[:-1] if word.endswith("s") else word for word in rest.split() if word.isalpha()}
        if units & {"year", "month"} and units - {"year", "month"}:
            raise SparkStringError(
                f"{text!r}: an INTERVAL cannot mix year-month and day-time units (write the delay without "
                "the word INTERVAL, e.g. '1 month 2 days')"
            )
    total = months * MICROS["month"] + days * MICROS["day"] + micros
    if total < 0:
        raise SparkStringError(f"delay threshold ({text}) should not be negative")
    return total
