"""A failure after Spark started, as one line naming the view's file, key, table or checkpoint.

Spark reports a failed query as a StreamingQueryException whose text holds the Java trace and, for a
failure in Python (a UDF on a worker, the sink's foreachBatch on the driver), the Python traceback:
hundreds of lines. ``describe`` finds the cause and names the part of the view it belongs to; the
whole text is for ``--debug``.

>>> from overwindow.pipeline.view import View
>>> v = View("v.toml", {"format": "files", "path": "/in"}, None, [], [], "on_update", None, None,
...          {"kind": "sqlite", "path": "/v.sqlite", "table": "v"}, "/chk")
>>> describe(RuntimeError("... Traceback (most recent call last):\\n  File ...\\n"
...                       "overwindow.errors.WindowRuntimeError: sum(x) overflows BIGINT\\n\\tat org..."), v)
'v.toml: [view] calls: sum(x) overflows BIGINT'
"""

from __future__ import annotations

import os
import re

from overwindow.pipeline import dsn as dsn_text
from overwindow.pipeline.view import View
from overwindow.spark.grouping import BUCKET_VALUES, NUMBERED
from overwindow.spec import DEFAULT_KEY_BUCKETS, FEW_KEY_BUCKETS, FEW_PARTITIONS


class ViewRunError(RuntimeError):
    """A view's query failed after Spark started; the message is one line naming the view's part."""


# the last "module.Error: message" line of a Python traceback inside Spark's text
_PYTHON_ERROR = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit|Interrupt)): (.*)$")
_JAVA_CAUSE = re.compile(r"^(?:Caused by: )?((?:[a-z]\w*\.)+[A-Z]\w*(?:Exception|Error)): (.*)$")


def _python_error(text: str) -> tuple[str, str] | None:
    """(exception name, message) of the last Python traceback in ``text``."""
    found = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "Traceback (most recent call last)" in line:
            for later in lines[i + 1 :]:
                m = _PYTHON_ERROR.match(later.strip())
                if m and not later.startswith(" "):
                    found = (m.group(1), m.group(2).strip())
                    break
    return found


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = re.sub(r"^\[[A-Z_.]+\] ", "", line.strip())
        if line and not line.startswith("==="):
            return line
    return text.strip()


def describe(error: BaseException, view: View, sink_error: BaseException | None = None) -> str:
    """One line for a failed query of ``view``; ``sink_error``: the exception the sink raised in
    this process, when it was the sink that failed."""
    secret = os.environ.get(view.sink.get("dsn_env", "")) if view.sink.get("kind") == "postgres" else None
    line = _classify(error, view, sink_error)
    return dsn_text.redact(line, secret)


def _classify(error: BaseException, view: View, sink_error: BaseException | None) -> str:
    from overwindow.errors import WindowRuntimeError, WindowSpecError
    from overwindow.pipeline.checkpoint import CheckpointFileError
    from overwindow.pipeline.sinks import SinkDriftError

    if sink_error is not None:
        key = {"sqlite": "path", "postgres": "table"}.get(view.sink["kind"], "kind")
        place = view.sink.get("table") or view.sink.get("path")
        return (
            f"{view.where('sink', key)}: writing {place!r} failed: "
            f"{type(sink_error).__name__}: {_first_line(str(sink_error))}"
        )
    if isinstance(error, (WindowSpecError, WindowRuntimeError)):
        return f"{view.where('view', 'calls')}: {error}"
    if isinstance(error, CheckpointFileError):
        return f"{view.where('sink', 'checkpoint')}: {error}"
    if isinstance(error, SinkDriftError):  # the table does not fit the view or its checkpoint
        return f"{view.where('sink', 'table')}: {error}"
    text = str(error)
    header = _csv_header(text)
    if header is not None:
        return f"{view.where('source', 'schema')}: {header}"
    python = _python_error(text)
    if python is not None and python[0] == "Py4JJavaError":  # a Spark call failed: its cause is Java's
        python = None
    if python is not None:
        name, message = python
        if name == "StateFormatError":
            where = view.where("sink", "checkpoint")
            return f"{where}: the state in {view.checkpoint} cannot be read: {message}"
        if name in ("WindowRuntimeError", "WindowSpecError"):
            return f"{view.where('view', 'calls')}: {message}"
        if name in ("InputEndedError", "CheckpointFileError"):
            return f"{view.where('sink', 'checkpoint')}: {message}"
        if name == "RowBoundError":
            return f"{view.where('view', 'max_rows_per_key')}: {_row_bound(message, view)}"
        if view.source["format"] == "kafka" and "kafka" in (name + message).lower():
            key = (
                "topic"
                if "topic" in message.lower() and "not found" in message.lower()
                else "bootstrap_servers"
            )
            return f"{view.where('source', key)}: {message}"
        return f"{view.path}: the view's query failed in Python: {name}: {message}"
    lowered = text.lower()
    if "__overwindow_bucket" in text and ("key_schema" in lowered or "stateschemanotcompatible" in lowered):
        # Spark's state schema check: the buckets chosen here against a checkpoint started per key,
        # on key_buckets given, or on the other number of chosen buckets, whose grouping key has
        # another type (grouping.bucket_grouping)
        return (
            f"{view.where('sink', 'checkpoint')}: {view.checkpoint} was started with other key buckets "
            "than this run hosts: started per key or with key_buckets given, write [view] "
            'key_buckets as it was started ("per key", or the number); started on buckets overwindow '
            'chose, write key_buckets = "chosen" (where its record in the checkpoint is gone), and '
            "for a remote checkpoint, started on "
            f"{FEW_KEY_BUCKETS} buckets up to {FEW_PARTITIONS} shuffle partitions or "
            f"{DEFAULT_KEY_BUCKETS} above (an earlier release chose 64 on any), set "
            "spark.sql.shuffle.partitions ([spark] or OVERWINDOW_SPARK_CONF) so that it chooses that "
            f"count again, and started by an earlier release on {FEW_KEY_BUCKETS} buckets, also "
            f'{BUCKET_VALUES} = "{NUMBERED}" (the bucket numbers it grouped by); or start from a new '
            "checkpoint"
        )
    if view.source["format"] == "kafka" and "kafka" in lowered:
        cause = _java_cause(text)
        return f"{view.where('source', 'bootstrap_servers')}: reading the topic failed: {cause}"
    if view.source["format"] == "files" and (
        "path_not_found" in lowered or "filenotfoundexception" in lowered or "path does not exist" in lowered
    ):
        return f"{view.where('source', 'path')}: {_java_cause(text)}"
    return f"{view.path}: the view's query failed: {_java_cause(text)}"


# Spark gives a Python worker it starts as a process of its own (transformWithStateInPandas's
# driver-side worker, which reads the state schema as a query starts) 10 seconds to connect back,
# fixed in its code; a start-up slowed past that by a busy machine (a job starting many views on two
# cores) fails the query before it read anything, and the same query started again runs
_WORKER_START = "Python worker failed to connect back"
RESTARTS = 3  # starts again of one view in one run of a job, for such a failure


def start_failure(error: BaseException) -> bool:
    """Whether a failed query failed only because a Python worker Spark started did not connect back
    in time: nothing it read was applied, and started again from its checkpoint it goes on.

    >>> start_failure(RuntimeError("org.apache.spark.SparkException: Python worker failed to connect back."))
    True
    >>> start_failure(RuntimeError("Python worker exited unexpectedly (crashed)"))
    False
    """
    return _WORKER_START in str(error)


def _row_bound(message: str, view: View) -> str:
    """A RowBoundError's message in view-file words; a view with a watermark is not told to add one
    (Spark has none during the first micro-batch, whose rows all stay in state).

    >>> v = View("v.toml", {"format": "files"}, {"column": "ts", "delay": "1 minute"}, [], [],
    ...          "on_update", None, None, {}, "chk")
    >>> print(_row_bound("the partition ('a',) holds 9 rows in state, more than maxRowsPerKey=5; add a "
    ...                  "watermark", v))  # doctest: +NORMALIZE_WHITESPACE
    the partition ('a',) holds 9 rows in state, more than max_rows_per_key = 5; rows leave the state
    as the watermark ([watermark] column ts, delay 1 minute) passes them, but Spark sets none before
    the first micro-batch ends, and a micro-batch's rows stay at least until the next: read the input
    in smaller micro-batches ([source] max_files_per_trigger), shorten the delay, or raise
    max_rows_per_key
    """
    bound = message.replace("maxRowsPerKey=", "max_rows_per_key = ")
    if not view.watermark:
        return bound
    smaller = "max_offsets_per_trigger" if view.source.get("format") == "kafka" else "max_files_per_trigger"
    return (
        f"{bound.split('; ')[0]}; rows leave the state as the watermark ([watermark] column "
        f"{view.watermark['column']}, delay {view.watermark['delay']}) passes them, but Spark sets none "
        "before the first micro-batch ends, and a micro-batch's rows stay at least until the next: read "
        f"the input in smaller micro-batches ([source] {smaller}), shorten the delay, or raise "
        "max_rows_per_key"
    )


# Spark's CSV reader with enforceSchema = false (overwindow.pipeline.sources): a header that does not
# name the schema's columns in its order
_CSV_HEADER = re.compile(
    r"CSV header does not conform to the schema\.\s*Header: (?P<header>.*?)\s*Schema: (?P<schema>.*?)\s*"
    r"Expected: (?P<expected>.*?) but found: (?P<found>.*?)\s*CSV file: (?P<file>[^\r\n]+)",
    re.DOTALL,
)


def _csv_header(text: str) -> str | None:
    """What a CSV file's header that does not fit the schema says, naming the file; None for another
    failure. O(len(text)).

    >>> text = ("IllegalArgumentException: CSV header does not conform to the schema.\\n Header: ts, k\\n "
    ...         "Schema: k, ts\\nExpected: k but found: ts\\nCSV file: file:///in/a.csv")
    >>> print(_csv_header(text))  # doctest: +ELLIPSIS
    the CSV file /in/a.csv has the header ts, k where the schema reads k, ts (first difference: ts ...
    """
    m = _CSV_HEADER.search(text)
    if m is None:
        return None
    path = re.sub(r"^file:(//)?", "", m["file"])
    return (
        f"the CSV file {path} has the header {m['header']} where the schema reads {m['schema']} (first "
        f"difference: {m['found']} where the schema has {m['expected']}); Spark reads CSV columns by their "
        "place: write the schema in the header's order, or fix the file"
    )


def _java_cause(text: str) -> str:
    """The deepest ``Caused by`` of a Java trace, else the text's first line."""
    causes = [m for m in map(_JAVA_CAUSE.match, (x.strip() for x in text.splitlines())) if m]
    if causes:
        name, message = causes[-1].groups()
        return f"{name.rsplit('.', 1)[-1]}: {message}"
    return _first_line(text)
