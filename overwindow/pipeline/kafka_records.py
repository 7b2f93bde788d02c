"""Kafka records of a view's rows: JSON as Spark's ``to_json`` writes it, and the two changelog
formats of the Kafka sink (``overwindow.pipeline.kafka_sink``).

Values are written as ``to_json`` writes them in a session whose time zone is UTC: numbers as JSON
numbers (a DECIMAL with all its digits and its scale, never an exponent), NaN and the infinities as
the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, dates ``"1901-12-31"``, TIMESTAMP
``"2024-01-01T00:00:00.000Z"`` and TIMESTAMP_NTZ without the ``Z``, binary as base64, day-time
intervals as Spark's ``INTERVAL '1 02:03:04.5' DAY TO SECOND``. Two departures, both so nothing is
lost: a timestamp with microseconds keeps them (six digits; Spark's default pattern cuts to
milliseconds), and a NULL is written as ``null`` rather than left out (a Debezium or upsert-kafka
consumer reads both the same). Cost: O(rows x columns), one Python string per value.

>>> import pyarrow as pa, decimal
>>> t = pa.table({"id": [1, None], "x": [float("nan"), -0.0],
...               "d": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(38, 2))})
>>> [r.decode() for r in to_json(t, ["id", "x", "d"])]
['{"id":1,"x":"NaN","d":1.50}', '{"id":null,"x":-0.0,"d":null}']
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Callable

import numpy as np
import pyarrow as pa

UPSERT_FORMAT, DEBEZIUM_FORMAT = "upsert", "debezium"
FORMATS = (UPSERT_FORMAT, DEBEZIUM_FORMAT)
_ENVELOPE_START, _AFTER = b'{"before":', b',"after":'


def _float(v: float) -> str:
    if v != v:
        return '"NaN"'
    if v in (float("inf"), float("-inf")):
        return '"Infinity"' if v > 0 else '"-Infinity"'
    return repr(v)


def _float32(v: float) -> str:
    return _float(v) if v != v or abs(v) == float("inf") else str(np.float32(v))


def _timestamp(zone: str) -> Callable[[dt.datetime], str]:
    def text(v: dt.datetime) -> str:
        digits = 3 if v.microsecond % 1000 == 0 else 6
        return (
            '"'
            + v.replace(tzinfo=None).isoformat(timespec="milliseconds" if digits == 3 else "microseconds")
            + zone
            + '"'
        )

    return text


def _interval(v: dt.timedelta) -> str:
    """Spark's day-time interval text: ``INTERVAL '1 02:03:04.5' DAY TO SECOND``."""
    sign, v = ("-", -v) if v < dt.timedelta(0) else ("", v)
    seconds = f"{v.seconds % 60:02d}" + (f".{v.microseconds:06d}".rstrip("0") if v.microseconds else "")
    body = f"{sign}{v.days} {v.seconds // 3600:02d}:{v.seconds // 60 % 60:02d}:{seconds}"
    return f"\"INTERVAL '{body}' DAY TO SECOND\""


def _writer(t: pa.DataType) -> Callable[[object], str] | None:
    """How a non-NULL value of type ``t`` is written, or None for a type the sink does not write."""
    if pa.types.is_boolean(t):
        return lambda v: "true" if v else "false"
    if pa.types.is_integer(t):
        return str
    if pa.types.is_float32(t):
        return _float32
    if pa.types.is_floating(t):
        return _float
    if pa.types.is_decimal(t):
        return lambda v: format(v, "f")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return lambda v: json.dumps(v, ensure_ascii=False)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return lambda v: '"' + base64.b64encode(v).decode() + '"'
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return lambda v: '"' + v.isoformat() + '"'
    if pa.types.is_timestamp(t):
        return _timestamp("Z" if t.tz is not None else "")
    if pa.types.is_duration(t):
        return _interval
    return None


def unwritable(schema: pa.Schema) -> list[pa.Field]:
    """The columns of ``schema`` the sink has no JSON for (nested types)."""
    return [f for f in schema if _writer(f.type) is None]


def to_json(table: pa.Table, columns: list[str]) -> list[bytes]:
    """Each row's ``columns`` as one JSON object (UTF-8), in order.

    >>> import datetime as dt
    >>> t = pa.table({"day": [dt.date(1969, 12, 31)], "ts": pa.array([dt.datetime(1969, 7, 20, 20, 17)],
    ...                                                     pa.timestamp("us", "UTC"))})
    >>> to_json(t, ["day", "ts"])
    [b'{"day":"1969-12-31","ts":"1969-07-20T20:17:00.000Z"}']
    """
    parts = []
    for name in columns:
        column = table.column(name)
        write = _writer(column.type)
        label = json.dumps(name, ensure_ascii=False) + ":"
        parts.append([label + ("null" if v is None else write(v)) for v in column.to_pylist()])
    return (
        [("{" + ",".join(row) + "}").encode() for row in zip(*parts)] if parts else [b"{}"] * table.num_rows
    )


def envelope(before: bytes | None, after: bytes | None, op: str, source: bytes) -> bytes:
    """A Debezium change event (its payload, as with ``schemas.enable=false``): ``before``, ``after``
    (row JSON or None), ``op`` (c, u, d), ``source`` (JSON) and ``ts_ms``, the time it was written.

    >>> envelope(None, b'{"id":1}', "c", b'{"name":"v"}')[:48]
    b'{"before":null,"after":{"id":1},"op":"c","source'
    """
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    return b"".join(
        [
            _ENVELOPE_START,
            before or b"null",
            _AFTER,
            after or b"null",
            b',"op":"',
            op.encode(),
            b'","source":',
            source,
            b',"ts_ms":',
            str(now).encode(),
            b"}",
        ]
    )


def after_image(value: bytes) -> bytes | None:
    """The ``after`` row of an envelope ``envelope`` wrote, as written (None: a delete); raises
    ValueError for a record of another shape.

    >>> after_image(envelope(b'{"id":1}', b'{"id":1,"x":2.5}', "u", b"{}"))
    b'{"id":1,"x":2.5}'
    """
    text = value.decode()
    if not value.startswith(_ENVELOPE_START):
        raise ValueError("not a Debezium envelope of overwindow's")
    decoder = json.JSONDecoder()
    _, end = decoder.raw_decode(text, len(_ENVELOPE_START))
    if not text.startswith(_AFTER.decode(), end):
        raise ValueError("not a Debezium envelope of overwindow's")
    start = end + len(_AFTER)
    after, stop = decoder.raw_decode(text, start)
    return None if after is None else text[start:stop].encode()
