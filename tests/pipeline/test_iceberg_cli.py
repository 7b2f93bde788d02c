"""The Iceberg sink through the command line, both emit modes: the table, read back with pyiceberg's
scan, equals the batch evaluator over all input (emit on update with event times shuffled across
the batches, so batches change rows the table holds); a second run finds nothing new and leaves the
table as it is. (Killed and restarted: tests/test_recovery.py.)"""

import pytest
from replay_support import assert_view_is_exact, write_view

from overwindow.__main__ import main

pytest.importorskip("pyiceberg")

from overwindow.pipeline.iceberg import IcebergSink  # noqa: E402


def sink_of(folder) -> IcebergSink:
    return IcebergSink(str(folder / "catalog.db"), str(folder / "warehouse"), "db.v", ["id"], False)


@pytest.mark.parametrize("emit", ["on_window_close", "on_update"])
def test_a_view_into_iceberg_equals_the_batch_evaluator(spark, tmp_path, emit):
    view, rows = write_view(tmp_path, emit, sink="iceberg", shuffled=emit == "on_update")
    assert main(["run", str(view), "--once", "--quiet"]) == 0
    assert_view_is_exact(tmp_path, rows, emit, "iceberg")
    table = sink_of(tmp_path).table()
    summaries = [s.summary.additional_properties for s in table.metadata.snapshots]
    ids = sorted({int(s["overwindow.batchId"]) for s in summaries})
    assert ids == list(range(len(ids))) and len(ids) >= 6  # a commit per micro-batch (6 files at least)
    assert main(["run", str(view), "--once", "--quiet"]) == 0
    assert len(sink_of(tmp_path).table().metadata.snapshots) == len(summaries)
    assert_view_is_exact(tmp_path, rows, emit, "iceberg")
