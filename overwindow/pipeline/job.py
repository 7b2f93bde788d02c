"""Run a view: source -> watermark -> groupBy(partition).overWindow(spec) -> exactly-once sink."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time

from overwindow.pipeline.progress import ProgressPrinter
from overwindow.pipeline.sinks import ConsoleSink, PostgresSink, SqliteSink
from overwindow.pipeline.view import View, ViewFileError
from overwindow.spark import compat, executors
from overwindow.spark.adapter import WORKER_WARNINGS
from overwindow.streaming.contract import ROW_ID


def local_spark(app: str = "overwindow", debug: bool = False):
    """The active SparkSession, or one set up the way overwindow runs best: on ``local[2]`` (Python
    workers run this interpreter unless PYSPARK_PYTHON says otherwise), or on the master
    ``OVERWINDOW_MASTER`` names, whose executors get the package shipped (``executors.ship``); no UI,
    no console progress bars (they would cut into the progress lines), and Spark's own log off unless
    ``debug`` (a failure is reported by the job in one line; ``--debug`` shows Spark's account)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    master = os.environ.get("OVERWINDOW_MASTER", "local[2]")
    if executors.is_local(master):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    if os.environ.get(
        "OVERWINDOW_SPARK_PACKAGES"
    ):  # e.g. Spark's Kafka connector, fetched from Maven Central
        builder = builder.config("spark.jars.packages", os.environ["OVERWINDOW_SPARK_PACKAGES"])
    spark = (
        builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.streaming.minBatchesToRetain", "10")
        .config(*WORKER_WARNINGS)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN" if debug else "OFF")
    if not debug:  # py4j logs each broken call (a stopped query's callbacks) with its traceback
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if not executors.is_local(master):
        executors.ship(spark)
    return spark


def source_frame(spark, view: View):
    """The view's input as a streaming DataFrame with the view's schema (and its watermark)."""
    src = view.source
    if src["format"] == "kafka":
        df = _json_records(kafka_frame(spark, view), src["schema"])
    else:
        reader = spark.readStream.schema(src["schema"])
        if src.get("max_files_per_trigger"):
            reader = reader.option("maxFilesPerTrigger", int(src["max_files_per_trigger"]))
        if src["file_format"] == "csv":
            reader = reader.option("header", "true")
        df = reader.format(src["file_format"]).load(src["path"])
    if view.watermark:
        df = df.withWatermark(view.watermark["column"], view.watermark["delay"])
    return df


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
    for key, value in src.get("options", {}).items():
        if isinstance(value, str) and value.startswith("env:"):
            if value[4:] not in os.environ:
                raise ViewFileError(
                    f"{view.path}: [source] options.{key} reads the environment variable "
                    f"{value[4:]}, which is not set"
                )
            value = os.environ[value[4:]]
        options[f"kafka.{key}"] = str(value)
    if src.get("max_offsets_per_trigger"):
        options["maxOffsetsPerTrigger"] = str(src["max_offsets_per_trigger"])
    return options


def kafka_frame(spark, view: View):
    """Raw Kafka records (the connector's columns): through Spark's own connector when the session has
    it (``reader = "spark"``, or ``"auto"``), else through overwindow's Python data source."""
    from pyspark.errors import AnalysisException

    from overwindow.pipeline import kafka

    src = view.source
    options = kafka_options(view)
    if src["reader"] in ("auto", "spark"):
        try:
            return spark.readStream.format("kafka").options(**options).load()
        except AnalysisException as e:
            if "KAFKA_DATA_SOURCE_NOT_ENABLED" not in str(e):
                raise
            if src["reader"] == "spark":
                raise ViewFileError(
                    f'{view.path}: [source] reader = "spark" needs Spark\'s Kafka connector; set '
                    f"OVERWINDOW_SPARK_PACKAGES={compat.kafka_connector(spark.version)} "
                    f'(or use reader = "python")'
                ) from None
    spark.dataSource.register(kafka.KafkaDataSource)
    return spark.readStream.format(kafka.FORMAT).options(**options).load()


def _json_records(raw, schema: str):
    """Kafka values parsed as JSON records of ``schema``. A value that is not such a record is dropped
    and counted (the progress line's "bad records"); the other rows go on."""
    from pyspark.sql import functions as F

    parsed = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
    fields = parsed.schema["r"].dataType.fieldNames()
    bad = F.col("r").isNull() | ~F.greatest(*[F.col(f"r.`{f}`").isNotNull() for f in fields], F.lit(False))
    counted = parsed.observe("overwindow_source", F.sum(F.when(bad, 1).otherwise(0)).alias("bad_records"))
    return counted.where(~bad).select("r.*")


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


def start_view(
    spark,
    view: View,
    once: bool,
    quiet: bool,
    json_lines: bool = False,
    name: str | None = None,
    sink_errors: list | None = None,
):
    """Start the view's streaming query; returns it and its progress printer (None when ``quiet``).
    ``json_lines``: JSON progress; ``name``: a prefix for progress lines; ``sink_errors``: receives
    the exception the sink raises, if it does (so a failure names the sink, not Spark's trace)."""
    import overwindow  # noqa: F401  (registers overWindow)

    if view.spec.state_layout == "chunked":  # transformWithStateInPandas runs only on RocksDB
        from overwindow.spark.adapter import use_rocksdb

        use_rocksdb(spark)
    df = source_frame(spark, view)
    grouped = df.groupBy(*view.partition_by) if view.partition_by else None
    out = grouped.overWindow(view.spec) if grouped is not None else df.overWindow(view.spec)
    rows_out: dict = {}
    writer = out.writeStream.option("checkpointLocation", view.checkpoint)
    if view.sink["kind"] == "parquet":
        writer = writer.format("parquet").option("path", view.sink["path"]).outputMode("append")
    else:
        sink = sink_for(view)

        def write(batch_df, batch_id):
            rows = compat.to_arrow(batch_df)  # runs the query's micro-batch: its failures are not the sink's
            try:
                rows_out[batch_id] = sink.apply(rows, batch_id)
            except Exception as e:
                if sink_errors is not None:
                    sink_errors.append(e)
                raise

        writer = writer.foreachBatch(write).outputMode(
            "append" if view.emit == "on_window_close" else "update"
        )
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime="1 second")
    printer = None
    if not quiet:
        printer = ProgressPrinter(
            rows_out, json_lines=json_lines, name=name, counts=getattr(out, "overwindow_counts", None)
        )
        spark.streams.addListener(printer)
    query = writer.queryName(view.name).start()
    if printer is not None:
        printer.query_id = str(query.id)
    return query, printer


class ViewRunError(RuntimeError):
    """A view's query failed after Spark started; the message is one line naming the view's part."""


def run_view(view: View, once: bool = False, quiet: bool = False, spark=None, **options) -> int:
    """Run one view (see run_views)."""
    return run_views([view], once, quiet, spark, **options)


def run_views(
    views: list[View],
    once: bool = False,
    quiet: bool = False,
    spark=None,
    json_lines: bool = False,
    debug: bool = False,
) -> int:
    """Check the views (overwindow.pipeline.validate) and what they connect to, record their
    fingerprints in their checkpoints, then run them in one Spark session until they end (``once``)
    or Ctrl-C. Raises ViewFileError (nothing started) or ViewRunError (a query failed; one line)."""
    from overwindow.pipeline.failures import describe
    from overwindow.pipeline.fingerprint import record
    from overwindow.pipeline.validate import check_views, preflight

    checked = check_views(views, create=True)
    preflight(views)
    for c in checked:
        record(c)
    spark = spark or local_spark(debug=debug)
    running = []  # (view, query, printer, sink errors)
    try:
        for view in views:
            errors: list = []
            name = view.name if len(views) > 1 else None
            try:
                query, printer = start_view(spark, view, once, quiet, json_lines, name, errors)
            except Exception as e:
                for _, started, _, _ in running:  # the views started before this one
                    _quietly(started.stop)
                if debug:
                    raise
                raise ViewRunError(describe(e, view)) from None
            running.append((view, query, printer, errors))
        with _stop_on_interrupt():
            while any(q.isActive for _, q, _, _ in running):
                time.sleep(0.2)
                if any(q.exception() is not None for _, q, _, _ in running):
                    break  # one failed: stop the others, report it
    except KeyboardInterrupt:
        for _, query, _, _ in running:
            _quietly(query.stop)
        where = ", ".join(v.checkpoint for v in views)
        print(f"\nstopped. Run the same command to resume from the checkpoint {where}", flush=True)
        return 0
    finally:
        for _, query, printer, _ in running:
            if printer is not None:
                _quietly(lambda: printer.drain(query))
                _quietly(lambda: spark.streams.removeListener(printer))
    for view, query, _, errors in running:
        failure = query.exception()
        if failure is not None:
            for _, other, _, _ in running:
                _quietly(other.stop)
            if debug:
                raise ViewRunError(str(failure))
            raise ViewRunError(describe(failure, view, errors[0] if errors else None))
    return 0


def _quietly(action) -> None:
    """Run a clean-up step; a failure in it (a JVM already gone) must not hide what happened."""
    try:
        action()
    except Exception:
        pass


@contextlib.contextmanager
def _stop_on_interrupt():
    """Ctrl-C (and SIGTERM, docker stop) raise KeyboardInterrupt in the main thread, and nothing
    else: PySpark's own SIGINT handler cancels every running job first, which fails the query
    with a trace instead of stopping it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
