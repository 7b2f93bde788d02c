"""Run a view: source -> watermark -> groupBy(partition).overWindow(spec) -> exactly-once sink (a
view's query: source -> watermark -> ``overwindow.sql``'s ``run_query`` -> sink)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from overwindow.logical.bind import ERROR, failure
from overwindow.pipeline.checkpoint import (
    checkpoint_state,
    ended_batch,
    missing_files,
    new_input_since,
    shuffle_partitions,
)
from overwindow.pipeline.failures import RESTARTS, ViewRunError, start_failure
from overwindow.pipeline.job_lock import hold
from overwindow.pipeline.progress import ProgressPrinter
from overwindow.pipeline.session import local_spark, spark_settings
from overwindow.pipeline.sinks import SKIPPED, ConsoleSink, PostgresSink, SqliteSink, check_pairing
from overwindow.pipeline.sources import KAFKA_READERS, Source, open_source
from overwindow.pipeline.spark_strings import parse_trigger
from overwindow.pipeline.table_formats import table_format_sink
from overwindow.pipeline.view import View, ViewFileError, is_uri
from overwindow.spark import compat
from overwindow.spark.adapter import END_OF_INPUT_MS
from overwindow.spark.select import run_query
from overwindow.streaming.aside import dead_letter_records


def sink_for(view: View):
    kind = view.sink["kind"]
    if kind == "sqlite":
        key = view.key
        return SqliteSink(view.sink["path"], view.sink["table"], key, upsert=view.emit == "on_update")
    if kind == "postgres":
        dsn = os.environ.get(view.sink["dsn_env"])
        if not dsn:
            raise ViewFileError(
                f'{view.path}: [sink] kind = "postgres" reads its connection string from the '
                f"environment variable {view.sink['dsn_env']}, which is not set"
            )
        key = view.key
        return PostgresSink(dsn, view.sink["table"], key, upsert=view.emit == "on_update")
    if kind in ("delta", "iceberg"):
        return table_format_sink(view)
    if kind == "kafka":
        from overwindow.pipeline.kafka_sink import KafkaSink
        from overwindow.pipeline.sources import client_settings

        config = {**client_settings(view, "sink"), "bootstrap.servers": view.sink["bootstrap_servers"]}
        topic, upsert = view.sink["topic"], view.emit == "on_update"
        return KafkaSink(config, topic, view.row_key_alone, upsert, view.name, view.sink["format"])
    if kind == "console":
        return ConsoleSink()
    raise ViewFileError(f"{view.path}: [sink] kind = {kind!r} is not available in this version")


def paired_sink(spark, view: View, struct=None):
    """The view's sink, once its table is known to belong to the view's checkpoint
    (``sinks.check_pairing``) and, given the query's Spark schema ``struct``, to take its rows as
    they are (``check_columns``); refuses with SinkDriftError."""
    sink = sink_for(view)
    if hasattr(sink, "bookkeeping"):
        where = f" (checkpoint {view.checkpoint})"
        table = view.sink.get("table") or view.sink.get("path") or view.sink["topic"]
        check_pairing(table, sink.bookkeeping(), checkpoint_state(spark, view.checkpoint), where)
        if struct is not None:
            sink.check_columns(compat.to_arrow_schema(struct))
    return sink


# the exit code of a run that went to its end but lost input (files deleted before Spark read them);
# 1 is a failure after Spark started, 2 one before
LOST_INPUT = 3


class InputEndedError(RuntimeError):
    """New input reached a checkpoint whose input a ``--final`` run ended: every row would be late."""


def batch_writer(
    spark,
    view: View,
    source: Source,
    sink,
    rows_out: dict,
    sink_errors: list | None = None,
    ended: int | None = None,
    lost: dict | None = None,
    counts=None,
):
    """The foreachBatch function: checks the batch's input files, runs the batch, keeps its bad
    records, applies it to the sink; ``rows_out[batch_id]`` gets the rows written (or SKIPPED);
    ``sink_errors`` receives the exception the sink raises, if it does (so a failure names the sink,
    not Spark's trace). ``ended``: the batch a ``--final`` run ended the input with, if it did; a
    batch reading input past it stops the query before anything runs (its rows would be late).
    ``lost[batch_id]``: the files listed for the batch but deleted before Spark read them;
    ``counts``: the state machines' counts, where the rows an expression after the windows failed
    on count as set aside."""
    query_id = []  # the checkpoint's query id, read once the query has started

    def write(batch_df, batch_id):
        try:
            apply(batch_df, batch_id)
        except Exception as e:
            if _interrupted(e):  # the query is being stopped (Ctrl-C): say so briefly
                raise QueryInterrupted(_INTERRUPTED) from None
            raise

    def apply(batch_df, batch_id):
        if (
            ended is not None
            and batch_id > ended
            and new_input_since(spark, view.checkpoint, ended, batch_id)
        ):
            raise InputEndedError(
                f"new input reached the checkpoint {view.checkpoint} after a --final run ended its input "
                f"(batch {ended}): every row would be late, so nothing was read. Run without --final while "
                "input goes on (rows are emitted as the watermark passes them) and with it once the input "
                "has ended; for this view, start a new checkpoint and table ([sink] checkpoint and "
                "table) over the whole input"
            )
        if source.files is not None:
            gone = missing_files(spark, view.checkpoint, batch_id)
            if gone:
                if lost is not None:
                    lost[batch_id] = gone
                print(
                    f"overwindow: batch {batch_id}: {len(gone)} file(s) listed for the batch were deleted "
                    f"before Spark read them; their rows are not in the view: {', '.join(gone)}",
                    file=sys.stderr,
                    flush=True,
                )
        rows = compat.to_arrow(batch_df)  # runs the query's micro-batch: its failures are not the sink's
        if ERROR in rows.column_names:
            rows = _set_aside(rows, batch_id, view, source, counts)
        if source.dead_letter is not None:
            source.dead_letter.write()
        if not query_id:
            query_id.append(checkpoint_state(spark, view.checkpoint).query_id)
        try:
            applied = sink.apply(rows, batch_id, query_id[0])
        except Exception as e:
            if sink_errors is not None:
                sink_errors.append(e)
            raise
        rows_out[batch_id] = SKIPPED if applied is None else applied

    return write


def _set_aside(rows, batch_id: int, view: View, source: Source, counts):
    """``rows`` without the rows an expression Spark computed after the windows failed on (its
    ``__ow_error``; on update such a row is a delete, which stays), those kept in the dead letter
    with the reason and counted as set aside. O(rows)."""
    import pyarrow.compute as pc

    failed = rows.column(ERROR).is_valid()
    bad = rows.filter(failed).drop_columns([ERROR])
    if bad.num_rows:
        origin = "after the windows"
        if source.dead_letter is not None:
            reasons = [failure(e) for e in rows.column(ERROR).drop_null().to_pylist()]
            records = dead_letter_records(batch_id, bad.to_pylist(), reasons, [origin] * bad.num_rows)
            source.dead_letter.records.add(records)
        if counts is not None:
            counts.add_aside(batch_id, bad.num_rows)
    if view.emit == "on_window_close":
        rows = rows.filter(pc.invert(failed))
    return rows.drop_columns([ERROR])


class QueryInterrupted(RuntimeError):
    """A micro-batch cut short because its query is being stopped."""


# Spark takes a foreachBatch failure for a stop when the Python error's text reads like this
# (StreamExecution.isInterruptionException); it scans the text with a regex that recurses once per
# character, so the long trace of an interrupted Spark call overflows the JVM's stack (a
# StackOverflowError on stderr at Ctrl-C): the short text says the same thing
_JAVA_INTERRUPTS = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
)
_INTERRUPTED = (
    "py4j.protocol.Py4JJavaError: An error occurred while calling the micro-batch.\n: "
    "java.lang.InterruptedException"
)


def _interrupted(e: Exception) -> bool:
    """Whether a micro-batch's failure is its Spark call being interrupted by a stop."""
    text = str(e)
    return type(e).__name__ == "Py4JJavaError" and any(name in text for name in _JAVA_INTERRUPTS)


def start_view(
    spark,
    view: View,
    once: bool,
    quiet: bool,
    json_lines: bool = False,
    name: str | None = None,
    sink_errors: list | None = None,
    lost: dict | None = None,
):
    """Start the view's streaming query; returns it and its progress printer (None when ``quiet``).
    ``json_lines``: JSON progress; ``name``: the query's name and a prefix for progress lines (None:
    the view's name, no prefix); ``sink_errors``: receives
    the exception the sink raises, if it does (so a failure names the sink, not Spark's trace);
    ``lost``: batch id -> the files listed for it but deleted before Spark read them."""
    lost = {} if lost is None else lost
    import overwindow  # noqa: F401  (registers overWindow)

    if view.spec.state_layout == "chunked" or view.several or view.group_key:  # (transformWithState...)
        from overwindow.spark.adapter import use_rocksdb

        use_rocksdb(spark)
    if view.several and view.emit == "on_window_close":  # overwindow.spark.fanout: the chain is safe
        from overwindow.spark.fanout import CHECK

        spark.conf.set(CHECK, "false")
    for name, function in view.functions.items():  # [view] functions, as a user registers them
        spark.udf.register(name, function)
    source = open_source(spark, view)
    df = source.frame
    # rows the machines set aside go to the dead letter too, when the view keeps one
    keep = source.dead_letter.records if source.dead_letter is not None else None
    with _as_started(spark, view):
        if view.query is not None:  # as overwindow.sql runs it
            out = run_query(df, view.query, _keep=keep, **view.options)
        elif view.partition_by:
            out = df.groupBy(*view.partition_by).overWindow(view.spec, keep)
        else:
            out = df.overWindow(view.spec, keep)
    rows_out: dict = {}
    counts = getattr(out, "overwindow_counts", None)
    writer = out.writeStream.option("checkpointLocation", view.checkpoint)
    if view.sink["kind"] == "parquet":
        if ERROR in out.columns:  # appended as they are: the rows an expression failed on stay out
            writer = out.where(out[ERROR].isNull()).drop(ERROR).writeStream
            writer = writer.option("checkpointLocation", view.checkpoint)
        writer = writer.format("parquet").option("path", view.sink["path"]).outputMode("append")
    else:
        ended = (
            ended_batch(spark, view.checkpoint, END_OF_INPUT_MS) if view.emit == "on_window_close" else None
        )
        sink = paired_sink(spark, view, (out.drop(ERROR) if ERROR in out.columns else out).schema)
        write = batch_writer(spark, view, source, sink, rows_out, sink_errors, ended, lost, counts)
        writer = writer.foreachBatch(write).outputMode(
            # Spark chains stateful operators (several window groups) only in append mode
            "append" if view.emit == "on_window_close" or view.several or view.group_key else "update"
        )
    every = f"{parse_trigger(view.trigger)} milliseconds"  # as validate read it
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=every)
    printer = None
    if not quiet:
        printer = ProgressPrinter(
            rows_out,
            json_lines=json_lines,
            name=name,
            counts=counts,
            unit="key buckets" if (view.spec.key_buckets and view.partition_by) or view.several else "keys",
            kafka_reader=source.reader,
            lost=lost,
        )
        if source.reader is not None:
            printer.say(reading(view, source.reader))
    query = writer.queryName(name or view.name).start()
    if printer is not None:
        printer.query_id = str(query.id)
    return query, printer


def reading(view: View, reader: str) -> str:
    """What the job says first of a Kafka view: the topic, the reader, and whether it keeps the
    partitions together in event time (docs/deployment.md, "Kafka source").

    >>> v = View("v.toml", {"topic": "ticks", "idle_timeout": "30 seconds"}, {"column": "ts"}, [], [],
    ...          "on_update", None, None, {}, "chk")
    >>> reading(v, "python")  # doctest: +NORMALIZE_WHITESPACE
    "reading Kafka topic ticks with overwindow's Python Kafka reader: partitions kept together in
    event time (ts; a partition without new records for 30 seconds stops holding the others back)"
    """
    text = f"reading Kafka topic {view.source['topic']} with {KAFKA_READERS[reader]}"
    if not view.watermark:
        return text
    if reader == "python":
        return (
            f"{text}: partitions kept together in event time ({view.watermark['column']}; a partition "
            f"without new records for {view.source['idle_timeout']} stops holding the others back)"
        )
    return (
        f"{text}, which reads partitions apart in event time: one read ahead can make the others' rows "
        "late (docs/deployment.md, Kafka source)"
    )


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
    final: bool = False,
) -> int:
    """Check the views (overwindow.pipeline.validate) and what they connect to, record their
    fingerprints in their checkpoints, then run them in one Spark session until they end (``once``)
    or Ctrl-C. ``final`` (with ``once``): then end their input, so that emit on window close emits
    every row it still holds (:func:`overwindow.pipeline.checkpoint.end_input`; a later run that
    finds new input stops before reading it, ``InputEndedError``). Raises ViewFileError (nothing
    started; CheckpointInUseError when another job runs on a view's checkpoint) or ViewRunError (a
    query failed; one line)."""
    from overwindow.pipeline.fingerprint import record
    from overwindow.pipeline.validate import check_views, preflight, warn

    if final and not once:
        raise ValueError("final needs once: the input ends after what has arrived is processed")
    checked = check_views(views, create=True, warn=warn)
    with hold(views):  # before the fingerprints are recorded: they are the running job's
        preflight(views)
        for c in checked:
            record(c)
        return _run_job(views, spark, once, quiet, json_lines, debug, final)


def _run_job(views: list[View], spark, once: bool, quiet: bool, json_lines: bool, debug: bool, final: bool):
    """run_views once the views are checked and their checkpoints held: Spark and the queries."""
    from overwindow.pipeline.checkpoint import end_input

    settings: dict = {}
    for view in views:
        settings.update(spark_settings(view))
    spark = spark or local_spark(settings=settings, debug=debug)
    lost: dict = {}  # view path -> {batch id: files deleted before Spark read them}
    failed: dict = {}  # view path -> its failure's line: the other views go on
    if not _run_round(spark, views, once, quiet, json_lines, debug, lost, failed) and final:
        # Spark knows no end of input: a batch planned again with a watermark past END_OF_INPUT_MS
        # (where every key holding rows has its timeout) times out every key; emit on update holds none
        ended = [
            v
            for v in views
            if v.path not in failed
            and v.emit == "on_window_close"
            and end_input(spark, v.checkpoint, END_OF_INPUT_MS + 1)
        ]
        if ended:
            _run_round(spark, ended, once, quiet, json_lines, debug, lost, failed)
    if failed:
        raise ViewRunError("\n".join(failed.values()))
    files = sum(len(f) for batches in lost.values() for f in batches.values())
    if files:
        print(
            f"overwindow: {files} file(s) were deleted before Spark read them; their rows are not in the "
            f"view{'s' if len(views) > 1 else ''} (exit code {LOST_INPUT})",
            file=sys.stderr,
        )
        return LOST_INPUT
    return 0


def job_names(views: list[View]) -> list[str]:
    """Each view's name in a job of several (its query's name and its progress lines' prefix): its
    own (the sink's table), or where two views share that (tables of one name in two SQLite files),
    the name with the view file's path. O(views).

    >>> from types import SimpleNamespace as V
    >>> job_names([V(name="t", path="a/v.toml"), V(name="t", path="b/v.toml"), V(name="u", path="c.toml")])
    ['t (a/v.toml)', 't (b/v.toml)', 'u']
    """
    seen = [v.name.lower() for v in views]
    return [v.name if seen.count(v.name.lower()) == 1 else f"{v.name} ({v.path})" for v in views]


@contextlib.contextmanager
def _as_started(spark, view: View):
    """While the view's query is built: the session's settings that choose its buckets as its
    started local checkpoint was started. ``spark.sql.shuffle.partitions`` set to those it runs on,
    where overwindow chooses the view's buckets (its count follows the partitions,
    ``spec.chosen_key_buckets``): Spark keeps a checkpoint's partitions for its life and ignores the
    session's, so a checkpoint started on 2 partitions goes on with the 16 buckets it was started
    on when the job's settings now say 8. And what those buckets group by
    (``grouping.BUCKET_VALUES``: the values spread over the partitions, or numbered as an earlier
    release numbered them, ``View.bucket_values``). A remote checkpoint keeps no fingerprint to say
    that this release chose its buckets (an earlier one chose 64 on any partitions): it runs the
    count the session's partitions choose, with the session's bucket values, and Spark refuses
    others (``failures`` says how to choose them again). O(batches the checkpoint retains)."""
    from overwindow.spark.grouping import BUCKET_VALUES

    settings = {}
    if not is_uri(view.checkpoint):
        settings[BUCKET_VALUES] = view.bucket_values
        partitions = shuffle_partitions(spark, view.checkpoint) if view.spec.buckets_chosen else None
        if partitions is not None:
            settings["spark.sql.shuffle.partitions"] = str(partitions)
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _run_round(
    spark,
    views: list[View],
    once: bool,
    quiet: bool,
    json_lines: bool,
    debug: bool,
    lost: dict,
    failed: dict,
) -> bool:
    """Start the views' queries and wait until they end (``once``) or Ctrl-C; True if stopped by
    Ctrl-C. ``lost[view.path]`` gets the files each batch lost, ``failed[view.path]`` the line of a
    query that failed: the others go on (a failure while they run without --once is said at once,
    and again when the job ends). Raises ViewRunError when a view cannot start (stopping those
    started)."""
    from overwindow.pipeline.failures import describe

    running = []  # (view, query, printer, sink errors)
    restarts: dict = {}  # view path -> starts again after a Python worker's start failed
    how = {"once": once, "quiet": quiet, "json_lines": json_lines}
    names = job_names(views) if len(views) > 1 else [None] * len(views)
    stopped = False
    try:
        for view, name in zip(views, names):
            errors: list = []
            try:
                batches = lost.setdefault(view.path, {})
                query, printer = start_view(spark, view, once, quiet, json_lines, name, errors, batches)
            except Exception as e:
                for _, started, _, _ in running:  # the views started before this one
                    _quietly(started.stop)
                if debug:
                    raise
                # a view file that cannot run on this session says so itself, naming its key
                raise ViewRunError(str(e) if isinstance(e, ViewFileError) else describe(e, view)) from None
            running.append((view, query, printer, errors))
        with _stop_on_interrupt() as asked:
            while True:
                time.sleep(0.2)
                for _, query, printer, _ in running:
                    if printer is not None:
                        printer.poll_new(query)
                if asked:
                    raise KeyboardInterrupt
                again = False  # a view started again is looked at once more, even if it ended already
                for i, (view, query, _, errors) in enumerate(running):
                    failure = None if view.path in failed else query.exception()
                    if failure is None:
                        continue
                    n = restarts.get(view.path, 0) + 1
                    if start_failure(failure) and n <= RESTARTS:
                        restarts[view.path] = n
                        try:
                            running[i] = _start_again(spark, running[i], n, names[i], lost, **how)
                            again = True
                            continue
                        except Exception as e:  # it cannot start again: that is its failure
                            failure = e
                    failed[view.path] = _failure(failure, view, errors, debug)
                    if not once and any(q.isActive for _, q, _, _ in running):
                        print(f"overwindow: {failed[view.path]} (the other views go on)", file=sys.stderr)
                if not again and not any(q.isActive for _, q, _, _ in running):
                    break
    except KeyboardInterrupt:
        for _, query, _, _ in running:
            _quietly(query.stop)
        stopped = True
    finally:
        for _, query, printer, _ in running:
            if printer is not None:
                _quietly(lambda: printer.poll(query))
    if stopped:  # after the last progress lines
        where = ", ".join(v.checkpoint for v in views)
        print(f"\nstopped. Run the same command to resume from the checkpoint {where}", flush=True)
        return True
    for _, query, printer, _ in running:
        if once and printer is not None and printer.last_batch < 0 and query.exception() is None:
            printer.say("nothing new since the checkpoint")
    for view, query, _, errors in running:
        if view.path not in failed and query.exception() is not None:
            failed[view.path] = _failure(query.exception(), view, errors, debug)
    return False


def _start_again(spark, entry: tuple, restart: int, name: str | None, lost: dict, **how) -> tuple:
    """The (view, query, printer, sink errors) of a view started again from its checkpoint, its query
    having failed as it started (``failures.start_failure``: Spark's Python worker too slow to
    connect back), said on stderr; ``restart``: how many times it has now."""
    view, query, printer, errors = entry
    if printer is not None:
        _quietly(lambda: printer.poll(query))
    print(
        f"overwindow: {view.path}: Spark's Python worker did not connect back in time (started on a busy "
        f"machine); the view starts again from its checkpoint ({restart} of {RESTARTS})",
        file=sys.stderr,
        flush=True,
    )
    errors.clear()
    query, printer = start_view(spark, view, sink_errors=errors, name=name, lost=lost[view.path], **how)
    return view, query, printer, errors


def _failure(failure, view: View, errors: list, debug: bool) -> str:
    """A failed query's line (``failures.describe``), or with ``debug`` Spark's whole text."""
    from overwindow.pipeline.failures import describe

    return str(failure) if debug else describe(failure, view, errors[0] if errors else None)


def _quietly(action) -> None:
    """Run a clean-up step; a failure in it (a JVM already gone) must not hide what happened."""
    try:
        action()
    except Exception:
        pass


@contextlib.contextmanager
def _stop_on_interrupt():
    """Ctrl-C (and SIGTERM, docker stop) only mark the list it yields (non-empty: asked to stop),
    which the caller checks between its calls to Spark: PySpark's own SIGINT handler cancels every
    running job first, which fails the query with a trace instead of stopping it, and a
    KeyboardInterrupt raised inside a py4j call makes py4j log a trace of its own."""
    asked: list = []
    if threading.current_thread() is not threading.main_thread():
        yield asked
        return

    def interrupt(signum, frame):
        asked.append(signum)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield asked
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
