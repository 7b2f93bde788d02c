"""The Kafka sink's record JSON (``overwindow.pipeline.kafka_records``), without Spark: random rows
with NULLs, NaN and infinities, DECIMAL(38) with every digit, dates before 1970 and timestamps with
and without microseconds, read back by Python's own JSON parser equal the values written (Spark's
``to_json`` itself is compared in test_kafka_sink.py); a Debezium envelope gives back its row as
written."""

import base64
import datetime as dt
import decimal
import json
import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from overwindow.pipeline.kafka_records import after_image, envelope, to_json

SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("d", pa.decimal128(38, 10)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("s", pa.string()),
        ("b", pa.binary()),
    ]
)
_MOMENTS = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999))
ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "i": st.none() | st.integers(-(2**63), 2**63 - 1),
            "f": st.none() | st.floats(allow_nan=True, allow_infinity=True),
            "d": st.none()
            | st.decimals(-(10**28) + 1, 10**28 - 1, places=10, allow_nan=False, allow_infinity=False),
            "day": st.none() | st.dates(dt.date(1, 1, 1)),
            "ts": st.none() | _MOMENTS.map(lambda v: v.replace(tzinfo=dt.timezone.utc)),
            "ntz": st.none() | _MOMENTS,
            "s": st.none() | st.text(),
            "b": st.none() | st.binary(max_size=8),
        }
    ),
    max_size=6,
)


def _read(name, text):
    """A JSON value back as the Python value written (None for null)."""
    if text is None:
        return None
    if name == "f":
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(text, text)
    if name == "day":
        return dt.date.fromisoformat(text)
    if name == "ts":
        assert text.endswith("Z")
        return dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=dt.timezone.utc)
    if name == "ntz":
        return dt.datetime.fromisoformat(text)
    if name == "b":
        return base64.b64decode(text)
    return text


@settings(max_examples=200)
@given(ROWS)
def test_each_value_reads_back_as_written(rows):
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    written = to_json(table, SCHEMA.names)
    assert len(written) == len(rows)
    for row, text in zip(rows, written):
        got = json.loads(text, parse_float=decimal.Decimal, parse_int=int)
        assert list(got) == SCHEMA.names  # every column, NULLs written out, in order
        for name, value in row.items():
            back = _read(name, got[name])
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(back)
            elif name == "f" and value is not None and math.isfinite(value):
                assert float(back) == value and math.copysign(1, float(back)) == math.copysign(1, value)
            elif name == "d" and value is not None:  # every digit and the column's scale
                assert back == value and -back.as_tuple().exponent == 10
            else:
                assert back == value


def test_decimals_and_timestamps_are_spelled_as_spark_spells_them():
    t = pa.table(
        {
            "d": pa.array([decimal.Decimal("1E-10"), decimal.Decimal(10**27)], pa.decimal128(38, 10)),
            "ts": pa.array([dt.datetime(1969, 12, 31, 23, 59, 59, 999000)] * 2, pa.timestamp("us", "UTC")),
        }
    )
    assert to_json(t, ["d", "ts"]) == [
        b'{"d":0.0000000001,"ts":"1969-12-31T23:59:59.999Z"}',
        b'{"d":1000000000000000000000000000.0000000000,"ts":"1969-12-31T23:59:59.999Z"}',
    ]


@given(ROWS.filter(bool))
def test_an_envelope_gives_back_its_row_as_written(rows):
    row = to_json(pa.Table.from_pylist(rows, schema=SCHEMA), SCHEMA.names)[0]
    event = envelope(row, row, "u", b'{"name":"v"}')
    assert after_image(event) == row
    assert json.loads(event)["op"] == "u"
    assert after_image(envelope(row, None, "d", b"{}")) is None
