"""Schema and interval strings read without a JVM, held against Spark's own parser: for random DDL
column lists (valid and broken) the schema equals the one ``readStream.schema(...)`` gives, or both
refuse; for random watermark delays the microseconds match the ``spark.watermarkDelayMs`` that
``withWatermark`` records, or both refuse; for the same texts as triggers, the milliseconds match
the interval of the trigger ``trigger(processingTime=...)`` builds, or both refuse."""

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from overwindow.pipeline.spark_strings import SparkStringError, parse_delay, parse_schema, parse_trigger

# each example asks Spark (a schema about 1 s: a file stream is built); more with the variable, outside CI
EXAMPLES = int(os.environ.get("OVERWINDOW_SPARK_STRING_EXAMPLES", "50"))

PLAIN_NAMES = ["k", "ts", "price", "user_id", "x1", "1a", "date", "timestamp", "comment", "map", "select"]
QUOTED_NAMES = ["`a b`", "`c``d`", "`prix €`", "`not`", "`x-y`"]
SIMPLE = [
    "BOOLEAN", "TINYINT", "BYTE", "SMALLINT", "SHORT", "INT", "INTEGER", "BIGINT", "LONG", "FLOAT", "REAL",
    "DOUBLE", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "STRING", "BINARY", "VOID",
    "INTERVAL", "INTERVAL DAY", "INTERVAL HOUR TO SECOND", "INTERVAL YEAR TO MONTH", "INTERVAL MONTH TO YEAR",
    "CHAR(3)", "VARCHAR(10)", "STRNG", "INT(3)", "TIME", "TIME(3)",
]  # fmt: skip


def _case(draw, word):
    return "".join(c.upper() if draw(st.booleans()) else c.lower() for c in word)


@st.composite
def data_types(draw, depth=0):
    kind = draw(
        st.sampled_from(["simple"] * 4 + ["decimal"] + (["array", "map", "struct"] if depth < 2 else []))
    )
    if kind == "simple":
        return _case(draw, draw(st.sampled_from(SIMPLE)))
    if kind == "decimal":
        params = draw(st.lists(st.integers(0, 45), max_size=3))
        name = _case(draw, draw(st.sampled_from(["DECIMAL", "DEC", "NUMERIC"])))
        return name + (f"({', '.join(map(str, params))})" if params else "")
    if kind == "array":
        return f"ARRAY<{draw(data_types(depth + 1))}>"
    if kind == "map":
        return f"map<{draw(data_types(depth + 1))}, {draw(data_types(depth + 1))}>"
    fields = draw(
        st.lists(st.tuples(st.sampled_from(PLAIN_NAMES + QUOTED_NAMES), data_types(depth + 1)), max_size=3)
    )
    sep = draw(st.sampled_from([": ", " ", ":"]))
    return "STRUCT<" + ", ".join(f"{n}{sep}{t}{draw(tails())}" for n, t in fields) + ">"


@st.composite
def tails(draw):
    return draw(
        st.sampled_from(["", "", " NOT NULL", " not null", " COMMENT 'a, b'", ' NOT NULL COMMENT "c"'])
    )


@st.composite
def schemas(draw):
    columns = draw(
        st.lists(
            st.tuples(st.sampled_from(PLAIN_NAMES + QUOTED_NAMES), data_types(), tails()),
            min_size=1,
            max_size=4,
        )
    )
    text = draw(st.sampled_from([", ", ",", " , ", ",\n  "])).join(f"{n} {t}{tail}" for n, t, tail in columns)
    broken = draw(
        st.sampled_from([None] * 6 + ["trailing comma", "colon", "drop type", "struct form", "extra"])
    )
    if broken == "trailing comma":
        text += ","
    elif broken == "colon":
        text = text.replace(" ", ": ", 1)
    elif broken == "drop type":
        text = text.rsplit(" ", 1)[0] if " " in text.strip() else text
    elif broken == "struct form":
        text = f"struct<{text}>"
    elif broken == "extra":
        text += " DEFAULT 1"
    return text


def _spark_schema(spark, folder, ddl):
    try:
        return spark.readStream.schema(ddl).format("json").load(folder).schema
    except Exception:
        return None


def _types(schema):
    """A schema's names, types and nullability (COMMENT text, kept by Spark as metadata, aside)."""

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "metadata"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return None if schema is None else strip(schema.jsonValue())


@pytest.fixture(scope="module")
def empty_folder(tmp_path_factory):
    """A folder of no files for Spark to read the schemas over: the test session's base folder (read
    before) holds other tests' folders, which Spark lists for partition columns; a read over them
    failed once in a run of the pipeline tests, at ``k boolean``."""
    return str(tmp_path_factory.mktemp("no-files"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(ddl=schemas())
def test_schemas_read_as_spark_reads_them(spark, empty_folder, ddl):
    folder = empty_folder
    want = _spark_schema(spark, folder, ddl)
    try:
        got = parse_schema(ddl)
    except SparkStringError:
        got = None
    assert _types(got) == _types(want), ddl


def test_the_schema_of_a_kafka_source_is_the_same(spark):
    """Kafka records are parsed by from_json with the same string: what parse_schema reads, it reads alike."""
    from pyspark.sql import functions as F

    ddl = (
        "k STRING, `a b` DECIMAL(12, 2), ts TIMESTAMP, xs ARRAY<STRUCT<v: DOUBLE, w BIGINT>>, "
        "m MAP<STRING, INT>"
    )
    raw = spark.readStream.format("rate").load()
    got = raw.select(F.from_json(F.col("value").cast("string"), ddl).alias("r")).select("r.*").schema
    assert got == parse_schema(ddl)


UNITS = ["year", "month", "week", "day", "hour", "minute", "second", "millisecond", "microsecond"]


@st.composite
def delays(draw):
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        unit = draw(st.sampled_from(UNITS + ["minutez", "min", "sec", "secs"]))
        unit = _case(draw, unit + draw(st.sampled_from(["", "s"])))
        number = str(draw(st.integers(0, 5000)))
        if draw(st.integers(0, 4)) == 0:
            number += "." + str(draw(st.integers(0, 99999)))
        sign = draw(st.sampled_from(["", "", "+", "-", "- "]))
        parts.append(f"{sign}{number}{draw(st.sampled_from([' ', '  ', ''] if unit else [' ']))}{unit}")
    text = " ".join(parts)
    form = draw(st.sampled_from(["plain", "plain", "interval", "quoted", "broken"]))
    if form == "interval":
        text = _case(draw, "interval") + " " + text
    elif form == "quoted":
        text = f"interval '{text}'"
    elif form == "broken":
        text = draw(st.sampled_from([text + " 5", "10", "", "interval", text.replace(" ", "", 1)]))
    return draw(st.sampled_from(["", " "])) + text


@pytest.fixture
def timed(spark, tmp_path_factory):
    """A stream with a TIMESTAMP column to put watermarks on (built once per test, not per example:
    each example only adds its watermark)."""
    return spark.readStream.schema("t TIMESTAMP").format("json").load(str(tmp_path_factory.mktemp("t")))


@settings(max_examples=3 * EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))  # ~20 ms each
@given(delay=delays())
@example(delay="interval '0 year 0 minute'")  # Spark: INTERVAL literals never mix year-month and day-time
@example(delay="INTERVAL 1 year 2 minutes")
@example(delay="1 year 2 minutes")
def test_delays_read_as_with_watermark_reads_them(timed, delay):
    try:
        want = timed.withWatermark("t", delay).schema["t"].metadata["spark.watermarkDelayMs"]
    except Exception:
        want = None
    try:
        got = parse_delay(delay) // 1000
    except SparkStringError:
        got = None
    assert got == want, delay


@pytest.mark.parametrize(
    "delay, ms",
    [("10 minutes", 600_000), ("interval 1 hour 30 minutes", 5_400_000), ("1 month", 2_678_400_000)],
)
def test_delays_by_hand(delay, ms):
    assert parse_delay(delay) == ms * 1000


@settings(max_examples=3 * EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(interval=delays())
@example(interval="1 month")  # Spark's trigger refuses month and year units
@example(interval="0 year 2 seconds")  # ... where they come to a month or more
@example(interval="interval '2 seconds'")  # a list of units only
@example(interval="0 seconds")
@example(interval="1500 microseconds")
def test_triggers_read_as_spark_reads_them(spark, interval):
    """``[sink] trigger`` (overwindow.pipeline.job passes the milliseconds read) against the trigger
    PySpark's ``trigger(processingTime=...)`` builds from the text in the JVM."""
    try:
        want = spark._jvm.org.apache.spark.sql.streaming.Trigger.ProcessingTime(interval).intervalMs()
    except Exception:
        want = None
    try:
        got = parse_trigger(interval)
    except SparkStringError:
        got = None
    assert got == want, interval
