"""Runs the command line as ``python -m overwindow`` does, with each view's second apply in the run
stopped at a stage of its sink's commit (Delta Lake, Iceberg, Kafka), where the recovery test kills
the job. Environment: ``SINK_PAUSES``, JSON {view label: stage}, a view's label being the folder of
its table (Delta, Iceberg) or its topic (Kafka); ``SINK_PAUSED``, a folder. Stages:

- ``before``: the apply waits before it writes (the batch is not in the table);
- ``after``: the apply waits once it has returned (its commit is in the table; Spark's checkpoint
  has not committed the batch, so the next run replays it and the sink must skip it);
- ``inside``: the apply stops inside its commit. Kafka: it waits in the open transaction once the
  broker has the batch's records, before the record of the batch. Iceberg: it waits once the new
  snapshot's data, manifest and metadata files are written, before the catalog points at them.
  Delta (delta-rs writes and commits in one call): once every view of the run has stopped, the
  process kills itself with SIGKILL 0 to 60 ms into the write.

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
    return os.path.basename(os.path.dirname(getattr(sink, "path", None) or sink.catalog_location))


def _stop(marker: str) -> None:
    open(marker, "w").close()
    time.sleep(600)


def _stopped() -> set:
    return {name.rsplit("-", 1)[0] for name in os.listdir(FOLDER)}


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
            while _stopped() != set(PAUSES):
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


if __name__ == "__main__":
    from pyiceberg.catalog.sql import SqlCatalog

    from overwindow.__main__ import main
    from overwindow.pipeline.kafka_sink import KafkaSink
    from overwindow.pipeline.table_formats import TableFormatSink

    calls, lock = {}, threading.Lock()
    for kind in (TableFormatSink, KafkaSink):
        kind.apply = _patched_apply(kind.apply, calls, lock)
    KafkaSink._flush = _then_stop_inside(KafkaSink._flush)  # the first flush: the batch's records
    SqlCatalog._write_metadata = staticmethod(_then_stop_inside(SqlCatalog._write_metadata))
    sys.exit(main(sys.argv[1:]))
