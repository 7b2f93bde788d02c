"""Run a view: source -> watermark -> groupBy(partition).overWindow(spec) -> exactly-once sink."""

from __future__ import annotations

import os
import sys

from overwindow.pipeline.checkpoint import checkpoint_state, missing_files
from overwindow.pipeline.progress import ProgressPrinter
from overwindow.pipeline.sinks import SKIPPED, ConsoleSink, PostgresSink, SqliteSink, check_pairing
from overwindow.pipeline.sources import Source, open_source
from overwindow.pipeline.view import View, ViewFileError
from overwindow.spark.adapter import WORKER_WARNINGS
from overwindow.streaming.on_update import ROW_ID


def spark_settings(view: View | None = None) -> dict:
    """Spark settings for the session the job starts: ``OVERWINDOW_SPARK_CONF`` (``key=value`` pairs
    separated by spaces, for every view run here), then the view's ``[spark]`` section over them.

    >>> os.environ["OVERWINDOW_SPARK_CONF"] = "spark.driver.memory=2g spark.sql.shuffle.partitions=4"
    >>> spark_settings(View("v.toml", {}, None, [], [], "on_update", None, None, {}, "chk",
    ...                     spark={"spark.driver.memory": "6g"}))
    {'spark.driver.memory': '6g', 'spark.sql.shuffle.partitions': '4'}
    >>> del os.environ["OVERWINDOW_SPARK_CONF"]
    """
    settings = {}
    for item in os.environ.get("OVERWINDOW_SPARK_CONF", "").split():
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark."):
            raise ValueError(
                f"OVERWINDOW_SPARK_CONF: {item!r} is not a Spark setting; write key=value pairs separated "
                "by spaces, e.g. OVERWINDOW_SPARK_CONF='spark.driver.memory=4g spark.executor.memory=4g'"
            )
        settings[key] = value
    return {**settings, **(view.spark if view is not None else {})}


def local_spark(app: str = "overwindow", settings: dict | None = None):
    """The active SparkSession, or a local one set up the way overwindow runs best, with ``settings``
    (``spark_settings``) over its defaults. Settings that only a new session takes (memory, master)
    are ignored, with a warning, when a session is active."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = settings or {}
    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in settings.items():
            if active.conf.isModifiable(key):
                active.conf.set(key, value)
            elif active.conf.get(key, None) != value:
                print(f"overwindow: {key}={value} needs a new Spark session; ignored", file=sys.stderr)
        return active
    builder = SparkSession.builder
    if os.environ.get(
        "OVERWINDOW_SPARK_PACKAGES"
    ):  # e.g. Spark's Kafka connector, fetched from Maven Central
        builder = builder.config("spark.jars.packages", os.environ["OVERWINDOW_SPARK_PACKAGES"])
    builder = (
        builder.master(os.environ.get("OVERWINDOW_MASTER", "local[2]"))
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.streaming.minBatchesToRetain", "10")
        .config(*WORKER_WARNINGS)
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def sink_for(view: View):
    kind = view.sink["kind"]
    if kind == "sqlite":
        key = view.partition_by + (view.row_key or [ROW_ID])
        return SqliteSink(view.sink["path"], view.sink["table"], key, upsert=view.emit == "on_update")
    if kind == "postgres":
        dsn = os.environ.get(view.sink["dsn_env"])
        if not dsn:
            raise ViewFileError(
                f'{view.path}: [sink] kind = "postgres" reads its connection string from the '
                f"environment variable {view.sink['dsn_env']}, which is not set"
            )
        key = view.partition_by + (view.row_key or [ROW_ID])
        return PostgresSink(dsn, view.sink["table"], key, upsert=view.emit == "on_update")
    if kind == "console":
        return ConsoleSink()
    raise ViewFileError(f"{view.path}: [sink] kind = {kind!r} is not available in this version")


def paired_sink(spark, view: View):
    """The view's sink, once its table is known to belong to the view's checkpoint
    (``sinks.check_pairing``: refuses with SinkDriftError)."""
    sink = sink_for(view)
    if hasattr(sink, "bookkeeping"):
        where = f" (checkpoint {view.checkpoint})"
        check_pairing(view.sink["table"], sink.bookkeeping(), checkpoint_state(spark, view.checkpoint), where)
    return sink


def batch_writer(spark, view: View, source: Source, sink, rows_out: dict):
    """The foreachBatch function: checks the batch's input files, runs the batch, keeps its bad
    records, applies it to the sink; ``rows_out[batch_id]`` gets the rows written (or SKIPPED)."""
    query_id = []  # the checkpoint's query id, read once the query has started

    def write(batch_df, batch_id):
        if source.files is not None:
            gone = missing_files(spark, view.checkpoint, batch_id)
            if gone:
                print(
                    f"overwindow: batch {batch_id}: {len(gone)} file(s) listed for the batch were deleted "
                    f"before Spark read them; their rows are not in the view: {', '.join(gone)}",
                    file=sys.stderr,
                    flush=True,
                )
        rows = batch_df.toArrow()
        if source.dead_letter is not None:
            source.dead_letter.write()
        if not query_id:
            query_id.append(checkpoint_state(spark, view.checkpoint).query_id)
        applied = sink.apply(rows, batch_id, query_id[0])
        rows_out[batch_id] = SKIPPED if applied is None else applied

    return write


def start_view(spark, view: View, once: bool, quiet: bool):
    """Start the view's streaming query; returns it (with its progress printer attached)."""
    import overwindow  # noqa: F401  (registers overWindow)

    if view.spec.state_layout == "chunked":  # transformWithStateInPandas runs only on RocksDB
        from overwindow.spark.adapter import use_rocksdb

        use_rocksdb(spark)
    source = open_source(spark, view)
    df = source.frame
    grouped = df.groupBy(*view.partition_by) if view.partition_by else None
    out = grouped.overWindow(view.spec) if grouped is not None else df.overWindow(view.spec)
    rows_out: dict = {}
    writer = out.writeStream.option("checkpointLocation", view.checkpoint)
    if view.sink["kind"] == "parquet":
        writer = writer.format("parquet").option("path", view.sink["path"]).outputMode("append")
    else:
        write = batch_writer(spark, view, source, paired_sink(spark, view), rows_out)
        writer = writer.foreachBatch(write).outputMode(
            "append" if view.emit == "on_window_close" else "update"
        )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime="1 second")
    printer = None
    if not quiet:
        printer = ProgressPrinter(rows_out)
        spark.streams.addListener(printer)
    query = writer.queryName(view.name).start()
    if printer is not None:
        printer.query_id = str(query.id)
    return query, printer


def run_view(view: View, once: bool = False, quiet: bool = False, spark=None) -> int:
    spark = spark or local_spark(settings=spark_settings(view))
    query, printer = start_view(spark, view, once, quiet)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
        print(f"\nstopped. Run the same command to resume from the checkpoint {view.checkpoint}", flush=True)
    finally:
        if printer is not None:
            printer.drain(query)
            spark.streams.removeListener(printer)
    if query.exception() is not None:
        raise RuntimeError(f"the view's query failed: {query.exception()}")
    return 0
