"""Runs the command line as ``python -m overwindow`` does, with each view's second apply in the run
stopped at a stage of its sink's commit, where the recovery test kills the job. Environment:
``SINK_PAUSES``, JSON {view label: stage}, a view's label being its topic (Kafka), the folder of its
table (Delta, Iceberg, SQLite) or its table (PostgreSQL); views not named run on. ``SINK_PAUSED``, a
folder. Stages:

- ``before``: the apply waits before it writes (the batch is not in the table);
- ``after``: the apply waits once it has returned (its commit is in the table; Spark's checkpoint
  has not committed the batch, so the next run replays it and the sink must skip it);
- ``inside``: the apply stops inside its commit. SQLite and PostgreSQL: it waits in the open
  transaction once it has written the rows and the view's bookkeeping (the transaction's last
  write), before COMMIT. Kafka: it waits in the open transaction once the broker has the batch's
  records, before the record of the batch. Iceberg: it waits once the new snapshot's data, manifest
  and metadata files are written, before the catalog points at them. Delta (delta-rs writes and
  commits in one call): once ``<SINK_PAUSED>.go`` exists (the test creates it when every view has
  stopped), the process kills itself with SIGKILL 0 to 60 ms into the write.

Each stopped apply creates ``<SINK_PAUSED>/<label>-<batch id>`` where it stops (Delta inside: as it
arrives)."""

import json
import os
import random
import signal
import sys
import threading
import time

# read when imported, as the launcher the test runs (pytest imports it too, for doctests: without them)
PAUSES = json.loads(os.environ.get("SINK_PAUSES", "{}"))
FOLDER = os.environ.get("SINK_PAUSED", "")
_inside = threading.local()  # the marker of the apply stopping inside its commit, on its thread


def _label(sink) -> str:
    if hasattr(sink, "topic"):
        return sink.topic
    where = getattr(sink, "path", None) or getattr(sink, "catalog_location", None)
    return os.path.basename(os.path.dirname(where)) if where else sink.table


def _stop(marker: str) -> None:
    open(marker, "w").close()
    time.sleep(600)


def _patched_apply(real, calls, lock):
    def apply(self, rows, batch_id, query_id):
        label = _label(self)
        with lock:
            calls[label] = calls.get(label, 0) + 1
            stage = PAUSES.get(label) if calls[label] == 2 else None
        marker = os.path.join(FOLDER, f"{label}-{batch_id}")
        if stage == "before":
            _stop(marker)
        if stage == "inside" and type(self).__name__ == "DeltaSink":
            open(marker, "w").close()
            while not os.path.exists(f"{FOLDER}.go"):
                time.sleep(0.02)
            threading.Timer(random.uniform(0, 0.06), os.kill, (os.getpid(), signal.SIGKILL)).start()
        _inside.marker = marker if stage == "inside" else None
        try:
            done = real(self, rows, batch_id, query_id)
        finally:
            _inside.marker = None
        if stage == "after":
            _stop(marker)
        return done

    return apply


def _then_stop_inside(real):
    def call(*args, **kwargs):
        done = real(*args, **kwargs)
        if getattr(_inside, "marker", None):
            _stop(_inside.marker)
        return done

    return call


def _stop_after_bookkeeping(real, text, table):
    """``real`` (a statement's execute), then, in the apply stopping inside its commit, a stop once
    the statement has written the bookkeeping ``table``; ``text(self, statement)``: its SQL."""

    def execute(self, statement, *args, **kwargs):
        done = real(self, statement, *args, **kwargs)
        marker = getattr(_inside, "marker", None)
        if marker and text(self, statement).startswith(f'INSERT INTO "{table}"'):
            _stop(marker)
        return done

    return execute


class _Sqlite:
    """An SQLite connection whose ``execute`` stops as ``_stop_after_bookkeeping`` says."""

    def __init__(self, con, execute):
        self._con, self._execute = con, execute

    def __getattr__(self, name):
        return getattr(self._con, name)

    def execute(self, statement, *args):
        return self._execute(self._con, statement, *args)


if __name__ == "__main__":
    import sqlite3

    import psycopg
    from pyiceberg.catalog.sql import SqlCatalog

    from overwindow.__main__ import main
    from overwindow.pipeline.kafka_sink import KafkaSink
    from overwindow.pipeline.sinks import BATCHES, PostgresSink, SqliteSink
    from overwindow.pipeline.table_formats import TableFormatSink

    calls, lock = {}, threading.Lock()
    for kind in (TableFormatSink, KafkaSink, SqliteSink, PostgresSink):
        kind.apply = _patched_apply(kind.apply, calls, lock)
    KafkaSink._flush = _then_stop_inside(KafkaSink._flush)  # the first flush: the batch's records
    SqlCatalog._write_metadata = staticmethod(_then_stop_inside(SqlCatalog._write_metadata))
    sqlite_execute = _stop_after_bookkeeping(sqlite3.Connection.execute, lambda con, s: s, BATCHES)
    connect = SqliteSink._connect
    SqliteSink._connect = lambda self: _Sqlite(connect(self), sqlite_execute)
    psycopg.Cursor.execute = _stop_after_bookkeeping(
        psycopg.Cursor.execute, lambda cur, s: s if isinstance(s, str) else s.as_string(cur), BATCHES
    )
    sys.exit(main(sys.argv[1:]))
