"""The view's source as a streaming DataFrame: files (JSON Lines, CSV, Parquet) or Kafka (Spark's
connector or overwindow's Python reader), parsed into the view's schema, with its watermark.

Nothing is lost without a word. A record that is not a row of the schema is *bad*: it is dropped from
the stream, counted (the observed metric ``overwindow_source``: ``bad_records``, and among them
``null_event_times``; "N bad records" on the progress line) and, when the view names a dead-letter
folder (``[source] dead_letter``), kept there with its raw text, where it came from and why
(``overwindow.pipeline.dead_letter``). The rest of its micro-batch goes on. Reasons, in the order
they are checked:

- ``not a JSON record`` / ``malformed CSV line``: Spark's parser (PERMISSIVE mode) could not read it;
- ``a value longer than the JSON parser's limit of 20,000,000 characters``;
- ``wrong type: x (DOUBLE)``: a value of another type (Spark would have made it NULL);
- ``no column of the schema``: a JSON object without any of the schema's columns (``{"other": 1}``);
- ``NULL event time (ts)``: the watermark column is NULL, so the row has no place in event time
  (it is not late: it is bad);
- Debezium envelopes (``[source] envelope = "debezium"``): ``not a Debezium change event``,
  ``Debezium op 't' is not a row change``, ``Debezium op 'd' without a before image``, ...

JSON text (files and Kafka values) is parsed with Spark's ``from_json``, as Spark's JSON reader does:
blank lines are skipped, a line holding a JSON array counts as its elements. CSV files are read by
Spark's CSV reader with their header checked against the schema (``enforceSchema = false``): a
header in another order, or with other names, stops the query with Spark's message naming the file,
rather than swapping columns. Files listed for a micro-batch but deleted before it read them are
found from the checkpoint's file-source log (``checkpoint.missing_files``) and reported.

Admission control: a micro-batch takes at most ``max_files_per_trigger`` files or
``max_bytes_per_trigger`` bytes (default ``DEFAULT_MAX_BYTES_PER_TRIGGER``), or
``max_offsets_per_trigger`` Kafka records (default ``DEFAULT_MAX_OFFSETS_PER_TRIGGER``), so no
micro-batch, and no replay of one after a crash, is unboundedly large.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from overwindow.pipeline.dead_letter import DeadLetter
from overwindow.pipeline.late import LateRule
from overwindow.pipeline.spark_strings import parse_delay, parse_schema
from overwindow.pipeline.view import View, ViewFileError, source_order
from overwindow.spark import compat

METRICS = "overwindow_source"  # the observed metric the progress line reads
JSON_STRING_LIMIT = 20_000_000  # characters: Jackson's default for one string value, which Spark keeps
DEFAULT_MAX_BYTES_PER_TRIGGER = 32 * 1024 * 1024
DEFAULT_MAX_OFFSETS_PER_TRIGGER = 100_000
_CORRUPT = "__ow_corrupt"  # Spark's column for the raw text of a record it could not parse
_TEXT, _RAW, _ORIGIN, _OP, _PRE, _ROW, _REASON, _PLACE = (
    "__ow_text",
    "__ow_raw",
    "__ow_origin",
    "__ow_op",
    "__ow_pre_reason",
    "__ow_row",
    "__ow_reason",
    "__ow_place",  # where a record stands in the source: its SOURCE_ORDER but a file row's position
)


@dataclass
class Source:
    """The view's input (``frame``: the schema's columns, plus the op column of a Debezium source,
    with the watermark), where its bad records go (None: counted only), the folder of a file
    source (for the check of files deleted before they were read), and which Kafka reader reads a
    Kafka source (``KAFKA_READERS``)."""

    frame: object
    dead_letter: DeadLetter | None
    files: str | None
    reader: str | None = None


# what the job says of each Kafka reader
KAFKA_READERS = {
    "spark": "Spark's Kafka connector",
    "python": "overwindow's Python Kafka reader",
}


def open_source(spark, view: View) -> Source:
    """The view's source, parsed and checked (see the module docstring)."""
    from pyspark.sql import functions as F

    src = view.source
    schema = parse_schema(src["schema"])  # as readStream.schema reads it (StructType.fromDDL: 4.0 on)
    envelope = src.get("envelope", "none")
    reader = None
    if src["format"] == "kafka":
        raw, reader = kafka_frame(spark, view, schema)
        origin = F.format_string("topic %s partition %d offset %d", "topic", "partition", "offset")
        place = F.struct(F.col("partition").alias("partition"), F.col("offset").alias("offset"))
        value = F.col("value").cast("string")
        text = raw.select(value.alias(_TEXT), origin.alias(_ORIGIN), place.alias(_PLACE))
        rows = _json_rows(text, schema, view, envelope)
    elif src["file_format"] == "json":
        lines = _file_reader(spark, view).format("text").load(src["path"])
        text = lines.select(
            F.col("value").alias(_TEXT), F.col("_metadata.file_path").alias(_ORIGIN), _file_place()
        )
        rows = _json_rows(text.where(F.trim(_TEXT) != ""), schema, view, envelope)
    elif src["file_format"] == "csv":
        rows = _csv_rows(spark, view, schema)
    else:
        typed = _file_reader(spark, view).schema(schema).format(src["file_format"]).load(src["path"])
        rows = _typed_rows(typed, schema, F.lit(None).cast("string"), F.lit(None).cast(_strings(schema)))
    dead_letter = (
        DeadLetter(spark, src["dead_letter"], LateRule.of(view), schema) if src.get("dead_letter") else None
    )
    df = _checked(rows, schema, view, dead_letter, op=view.op_column if envelope == "debezium" else None)
    if view.watermark:
        df = df.withWatermark(view.watermark["column"], view.watermark["delay"])
    return Source(df, dead_letter, src["path"] if src["format"] == "files" else None, reader)


def _file_place():
    """The ``_PLACE`` of a file source's record: its file's modification time (microseconds: a
    TIMESTAMP column would tie the job to UTC sessions, ``check_session_time_zone``) and path, and
    the start of the part of the file Spark read it in (a file larger than
    ``spark.sql.files.maxPartitionBytes`` is read in several)."""
    from pyspark.sql import functions as F

    return F.struct(
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("time"),
        F.col("_metadata.file_path").alias("path"),
        F.col("_metadata.file_block_start").alias("block"),
    ).alias(_PLACE)


def _positions():
    """A pandas UDF numbering the rows of each Spark partition (0, 1, ...) in the order they pass: a
    record's position within the part of its file one task reads (``monotonically_increasing_id``
    would, but Spark refuses it on a stream; ``_metadata.row_index`` is Parquet's alone).
    Nondeterministic, so that Spark neither moves nor repeats it. O(rows), in Arrow batches."""
    from pyspark.sql.functions import pandas_udf
    from pyspark.sql.types import LongType

    @pandas_udf(LongType())
    def positions(batches: Iterator[pd.Series]) -> Iterator[pd.Series]:
        seen = 0
        for batch in batches:
            yield pd.Series(np.arange(seen, seen + len(batch), dtype=np.int64))
            seen += len(batch)

    return positions.asNondeterministic()


def _file_reader(spark, view: View):
    """A file-source reader with the view's admission control: at most ``max_files_per_trigger`` files
    or ``max_bytes_per_trigger`` bytes per micro-batch (Spark takes one of the two)."""
    src = view.source
    reader = spark.readStream
    if src.get("max_files_per_trigger"):
        return reader.option("maxFilesPerTrigger", int(src["max_files_per_trigger"]))
    return reader.option(
        "maxBytesPerTrigger", int(src.get("max_bytes_per_trigger") or DEFAULT_MAX_BYTES_PER_TRIGGER)
    )


def _json_rows(text, schema, view: View, envelope: str):
    """Rows of ``text`` (columns _TEXT, _ORIGIN, _PLACE: JSON text and where it came from) parsed into
    ``schema``: columns _ROW (the parsed struct, with Spark's _CORRUPT text), _RAW, _ORIGIN, _PLACE,
    _PRE (a reason found before the row was parsed) and, for a Debezium source, _OP."""
    from pyspark.sql import functions as F

    elements = F.when(F.ltrim(_TEXT).startswith("["), F.from_json(_TEXT, "array<string>"))
    text = text.select(F.explode(F.coalesce(elements, F.array(_TEXT))).alias(_TEXT), _ORIGIN, _PLACE)
    if envelope == "debezium":
        text = _debezium_images(text, schema, _placing_columns(view))
    else:
        text = text.select(
            _TEXT, F.col(_TEXT).alias(_RAW), _ORIGIN, F.lit(None).cast("string").alias(_PRE), _PLACE
        )
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}
    parsed = text.withColumn(_ROW, F.from_json(_TEXT, _with_corrupt(schema), options))
    limit = F.length(_TEXT) > JSON_STRING_LIMIT
    too_long = f"a value longer than the JSON parser's limit of {JSON_STRING_LIMIT:,} characters"
    return parsed.select(
        _ROW,
        _RAW,
        _ORIGIN,
        _PLACE,
        *([_OP] if envelope == "debezium" else []),
        F.coalesce(
            _PRE,
            F.when(F.col(_TEXT).isNull(), F.lit("no value")),
            F.when(F.col(f"{_ROW}.{_CORRUPT}").isNotNull() & limit, F.lit(too_long)),
        ).alias(_PRE),
        F.when(
            F.col(f"{_ROW}.{_CORRUPT}").isNotNull(),
            F.from_json(F.col(f"{_ROW}.{_CORRUPT}"), _strings(schema)),
        ).alias(_CORRUPT),
    )


def _csv_rows(spark, view: View, schema):
    """CSV rows by Spark's CSV reader, the header checked against the schema (a mismatch stops the
    query naming the file), a malformed line kept as Spark's corrupt-record text."""
    from pyspark.sql import functions as F

    options = {
        "header": "true",
        "enforceSchema": "false",
        "mode": "PERMISSIVE",
        "columnNameOfCorruptRecord": _CORRUPT,
    }
    typed = (
        _file_reader(spark, view)
        .schema(_with_corrupt(schema))
        .options(**options)
        .format("csv")
        .load(view.source["path"])
    )
    corrupt = F.col(_CORRUPT)
    strings = ", ".join(f"`{f}` STRING" for f in schema.fieldNames())
    return _typed_rows(typed, schema, corrupt, F.when(corrupt.isNotNull(), F.from_csv(corrupt, strings)))


def _typed_rows(typed, schema, corrupt, as_strings):
    """Rows a typed reader (CSV, Parquet) gave, in the columns of _json_rows: ``corrupt`` is the raw
    text of a line the reader could not parse, ``as_strings`` its fields as text."""
    from pyspark.sql import functions as F

    columns = [F.col(f"`{f}`") for f in schema.fieldNames()]
    return typed.select(
        F.struct(*columns, corrupt.alias(_CORRUPT)).alias(_ROW),
        F.coalesce(corrupt, F.to_json(F.struct(*columns))).alias(_RAW),
        F.col("_metadata.file_path").alias(_ORIGIN),
        _file_place(),
        F.lit(None).cast("string").alias(_PRE),
        as_strings.alias(_CORRUPT),
    )


def _with_corrupt(schema):
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([*schema.fields, StructField(_CORRUPT, StringType(), True)])


def _strings(schema):
    """``schema`` with every column a STRING: what a value of any type parses into."""
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([StructField(f.name, StringType(), True) for f in schema.fields])


def _checked(rows, schema, view: View, dead_letter: DeadLetter | None, op: str | None):
    """The good rows of ``rows`` (see _json_rows) as the schema's columns (and ``op``): the bad ones
    counted (observed metric METRICS) and handed to ``dead_letter``."""
    from pyspark.sql import functions as F

    fields = schema.fields
    row = {f.name: F.col(f"{_ROW}.`{f.name}`") for f in fields}
    as_strings = {f.name: F.col(f"{_CORRUPT}.`{f.name}`") for f in fields}
    wrong = F.concat_ws(
        ", ",
        *[
            F.when(as_strings[f.name].isNotNull() & row[f.name].isNull(), F.lit(f"{f.name} ({_sql(f)})"))
            for f in fields
        ],
    )
    event_time = view.watermark["column"] if view.watermark else None
    null_event_time = row[_field(schema, event_time)].isNull() if event_time else F.lit(False)
    parse_failed = F.col(f"{_ROW}.{_CORRUPT}").isNotNull()
    malformed = "not a JSON record" if view.source.get("file_format") != "csv" else "malformed CSV line"
    no_column = ~F.greatest(*[row[f.name].isNotNull() for f in fields], F.lit(False))
    # Spark decodes text as UTF-8 and puts U+FFFD where bytes are no UTF-8: such a value would be
    # another value than was sent (another key, say), so the record is bad
    text = view.source.get("format") == "kafka" or view.source.get("file_format") != "parquet"
    reason = F.coalesce(
        F.col(_PRE),
        *([F.when(~_valid_utf8(F.col(_RAW)), F.lit(NOT_UTF8))] if text else []),
        F.when(parse_failed & (wrong != ""), F.concat(F.lit("wrong type: "), wrong)),
        F.when(parse_failed, F.lit(malformed)),
        F.when(no_column, F.lit("no column of the schema")),
        F.when(null_event_time, F.lit(f"NULL event time ({event_time})")),
    )
    marked = rows.withColumn(_REASON, reason)
    bad = F.col(_REASON).isNotNull()
    counted = marked.observe(
        METRICS,
        F.sum(F.when(bad, 1).otherwise(0)).alias("bad_records"),
        F.sum(F.when(F.col(_REASON).startswith("NULL event time"), 1).otherwise(0)).alias("null_event_times"),
    )
    if dead_letter is None:
        good = counted.where(~bad)
    elif dead_letter.late is None:
        good = counted.where(
            dead_letter.keep(F.when(bad, F.col(_ORIGIN)), F.col(_REASON), F.when(bad, _utf8(F.col(_RAW))))
        )
    else:  # late rows too: every row's origin and text go along, since which are late shows there
        time = row[_field(schema, event_time)]
        good = counted.where(dead_letter.keep(F.col(_ORIGIN), F.col(_REASON), _utf8(F.col(_RAW)), time))
    return good.select(
        *[row[f.name].alias(f.name) for f in fields],
        *([F.col(_OP).alias(op)] if op else []),
        *_source_order(view),
    )


def _source_order(view: View) -> list:
    """The columns of the view's ``source_order`` (none where its rows are no changes of rows) from
    each good row's _PLACE, and for a file source its position as read (``_positions``)."""
    from pyspark.sql import functions as F

    names = source_order(view)
    if not names:
        return []
    fields = ["partition", "offset"] if view.source["format"] == "kafka" else ["time", "path", "block"]
    columns = [F.col(f"{_PLACE}.{f}").alias(n) for f, n in zip(fields, names)]
    if len(names) > len(fields):  # a file's: the row's position in its part of the file
        columns.append(_positions()(F.lit(0)).alias(names[-1]))
    return columns


NOT_UTF8 = "not UTF-8 text (Spark would read its bytes as U+FFFD)"


def _valid_utf8(text):
    """Whether a STRING column holds valid UTF-8 (Spark keeps the bytes it read; Python would decode
    the others to U+FFFD)."""
    return _utf8(text) == text


def _utf8(text):
    """A STRING column with bytes that are no UTF-8 replaced by U+FFFD (Arrow refuses to hand such a
    string to Python): ``make_valid_utf8`` from Spark 4 on, where ``decode`` refuses bad bytes; on
    3.5 ``decode`` replaces them."""
    from pyspark.sql import functions as F

    if compat.version() >= compat.SPARK_4:
        return F.call_function("make_valid_utf8", text)
    return F.decode(text.cast("binary"), "UTF-8")


def _field(schema, name: str) -> str:
    """The schema's spelling of the column ``name`` (Spark resolves names without regard to case)."""
    for f in schema.fieldNames():
        if f.lower() == name.lower():
            return f
    raise ViewFileError(f"[watermark] column {name!r} is not a column of the source's schema")


def _sql(field) -> str:
    return field.dataType.simpleString().upper()


def client_settings(view: View, section: str) -> dict[str, str]:
    """The Kafka client settings of ``[section] options``, a value written ``"env:NAME"`` read from
    the environment variable NAME (so secrets stay out of view files, logs and checkpoints).

    >>> v = View("v.toml", {"options": {"sasl.password": "env:HOME", "acks": 1}}, None, [], [],
    ...          "on_update", None, None, {}, "chk")
    >>> client_settings(v, "source") == {"sasl.password": os.environ["HOME"], "acks": "1"}
    True
    """
    settings = {}
    for key, value in view.section(section).get("options", {}).items():
        if isinstance(value, str) and value.startswith("env:"):
            if value[4:] not in os.environ:
                raise ViewFileError(
                    f"{view.path}: [{section}] options.{key} reads the environment variable "
                    f"{value[4:]}, which is not set"
                )
            value = os.environ[value[4:]]
        settings[key] = str(value)
    return settings


def kafka_options(view: View) -> dict:
    """The Kafka reader's options (Spark connector names) from the view's [source]. A client setting
    written ``"env:NAME"`` is read from the environment variable NAME, so secrets stay out of view
    files.

    >>> v = View("v.toml", {"bootstrap_servers": "b:9092", "topic": "t", "starting_offsets": "earliest",
    ...                     "options": {"sasl.password": "env:HOME"}}, None, [], [], "on_update",
    ...          None, None, {}, "chk")
    >>> kafka_options(v)["kafka.sasl.password"] == os.environ["HOME"]
    True
    """
    src = view.source
    options = {
        "kafka.bootstrap.servers": src["bootstrap_servers"],
        "subscribe": src["topic"],
        "startingOffsets": src["starting_offsets"],
    }
    for key, value in client_settings(view, "source").items():
        options[f"kafka.{key}"] = value
    options["maxOffsetsPerTrigger"] = str(
        src.get("max_offsets_per_trigger") or DEFAULT_MAX_OFFSETS_PER_TRIGGER
    )
    return options


def kafka_frame(spark, view: View, schema=None):
    """Raw Kafka records (the connector's columns) and the reader that reads them (``spark`` or
    ``python``): Spark's own connector when the session has it (``reader = "spark"``, or
    ``"auto"``), else overwindow's Python data source, which keeps the partitions together in the
    event time of the view's watermark column (``schema``: the source's, for its spelling)."""
    from pyspark.errors import AnalysisException

    from overwindow.pipeline import kafka

    src = view.source
    options = kafka_options(view)
    if src["reader"] in ("auto", "spark"):
        try:
            return spark.readStream.format("kafka").options(**options).load(), "spark"
        except AnalysisException as e:
            if "KAFKA_DATA_SOURCE_NOT_ENABLED" not in str(e):
                raise
            if src["reader"] == "spark":
                package = compat.kafka_connector(spark.version)
                raise ViewFileError(
                    f"{view.where('source', 'reader')}: Spark's Kafka connector is not in this Spark "
                    f'session; set OVERWINDOW_SPARK_PACKAGES={package} (or use reader = "python")'
                ) from None
    if view.watermark and schema is not None:
        options["eventTimeColumn"] = _field(schema, view.watermark["column"])
        options["eventTimeEnvelope"] = src.get("envelope", "none")
        options["idleTimeoutMs"] = str(parse_delay(src.get("idle_timeout") or "30 seconds") // 1000)
    spark.dataSource.register(kafka.KafkaDataSource)
    return spark.readStream.format(kafka.FORMAT).options(**options).load(), "python"


def _placing_columns(view: View) -> list[str]:
    """The columns that place a row (its partition, or its group under a GROUP BY: every column the
    GROUP BY keys read) and identify it (the row key): an update that changes one of them is a
    delete of the before image and an insert of the after image.

    >>> from overwindow.spark.query import parse_query
    >>> v = View("v.toml", {}, None, [], [], "on_update", ["id"], "_op", {}, "chk")
    >>> v.query = parse_query("SELECT to_date(ts) AS d, count(*) AS n FROM source GROUP BY 1, k")
    >>> _placing_columns(v)
    ['id', 'k', 'ts']
    """
    if view.query is not None and view.query.group_by:
        from overwindow.spark.grouped import key_columns

        keys = set(key_columns(view.query))
    else:
        keys = {k for group, _ in view.groups for k in group}
    return sorted(keys | set(view.row_key or []))


def _debezium_images(text, schema, keys: list[str]):
    """Debezium change events (``{"before": ..., "after": ..., "op": ...}``, bare or inside
    ``"payload"``) as row images with an op: create and read (``c``, ``r``) insert ``after``, delete
    (``d``) deletes ``before``, update (``u``) updates ``after`` in place when the ``keys`` (the
    partition and row key columns) are unchanged (or no ``before`` image came), else deletes
    ``before`` and inserts ``after``, so a row that moves to another partition, or whose row key
    changed, leaves nothing behind. An event that cannot be applied exactly is bad, with its reason:
    no op, a missing image, an ``after`` image without some of the schema's columns (Debezium writes
    them all; one missing would become NULL), a ``before`` image without the key columns that find
    the row. Kafka tombstones (no value) carry no row and are skipped. Columns: _TEXT (the image),
    _OP, _PRE (why the event is bad), _RAW (the event), _ORIGIN, _PLACE."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    env = F.from_json(_TEXT, "payload STRING, before STRING, after STRING, op STRING")
    inner = F.from_json(env["payload"], "before STRING, after STRING, op STRING")
    flat = F.struct(env["before"].alias("before"), env["after"].alias("after"), env["op"].alias("op"))
    events = text.where(F.col(_TEXT).isNotNull()).select(
        _TEXT, _ORIGIN, _PLACE, F.when(env["payload"].isNotNull(), inner).otherwise(flat).alias("e")
    )
    before, after, op = F.col("e.before"), F.col("e.after"), F.lower(F.col("e.op"))
    keyed = StructType([f for f in schema.fields if f.name.lower() in {k.lower() for k in keys}])
    same_keys = (
        F.from_json(before, keyed).eqNullSafe(F.from_json(after, keyed)) if keyed.fields else F.lit(True)
    )
    after_lacks = _lacking(after, schema.fieldNames())
    before_lacks = _lacking(before, keyed.fieldNames())

    def image(t, o):
        return F.struct(t.alias("t"), F.lit(o).alias("o"), F.lit(None).cast("string").alias("r"))

    def bad(reason):
        none = F.lit(None).cast("string")
        return F.array(F.struct(none.alias("t"), none.alias("o"), reason.alias("r")))

    writes = op.isin("c", "r", "u")
    images = (
        F.when(op.isNull(), bad(F.lit("not a Debezium change event (no op)")))
        .when(writes & after.isNull(), bad(F.format_string("Debezium op '%s' without an after image", op)))
        .when((op == "d") & before.isNull(), bad(F.lit("Debezium op 'd' without a before image")))
        .when(
            writes & (after_lacks != ""),
            bad(F.format_string("Debezium op '%s': the after image has no %s", op, after_lacks)),
        )
        .when(
            op.isin("d", "u") & before.isNotNull() & (before_lacks != ""),
            bad(
                F.format_string(
                    "Debezium op '%s': the before image has no %s, which find the row", op, before_lacks
                )
            ),
        )
        .when(op.isin("c", "r"), F.array(image(after, "insert")))
        .when(op == "d", F.array(image(before, "delete")))
        .when((op == "u") & (before.isNull() | same_keys), F.array(image(after, "update")))
        .when(op == "u", F.array(image(before, "delete"), image(after, "insert")))
        .otherwise(bad(F.format_string("Debezium op '%s' is not a row change", op)))
    )
    return events.select(F.explode(images).alias("i"), F.col(_TEXT).alias(_RAW), _ORIGIN, _PLACE).select(
        F.col("i.t").alias(_TEXT), F.col("i.o").alias(_OP), F.col("i.r").alias(_PRE), _RAW, _ORIGIN, _PLACE
    )


def _lacking(image, names: list[str]):
    """The ``names`` a JSON object's text ``image`` has no field for, joined by commas ("" when it has
    them all, or is no object: its parse says so). JSON field names match as Spark's JSON reader
    matches them, exactly."""
    from pyspark.sql import functions as F

    fields = F.json_object_keys(image)
    return F.concat_ws(
        ", ", *[F.when(~F.coalesce(F.array_contains(fields, n), F.lit(True)), F.lit(n)) for n in names]
    )
