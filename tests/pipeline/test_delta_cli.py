"""The Delta Lake sink through the command line (``overwindow run VIEW --once``, in process), both
emit modes: the table, read back with deltalake's own reader, equals the batch evaluator over all
input; emit on update with event times shuffled across the batches, so batches change rows the table
holds. A second run finds nothing new and leaves the table as it is."""

import pytest
from replay_support import assert_view_is_exact, write_view

from overwindow.__main__ import main

deltalake = pytest.importorskip("deltalake")


@pytest.mark.parametrize("emit", ["on_window_close", "on_update"])
def test_a_view_into_delta_equals_the_batch_evaluator(spark, tmp_path, emit):
    view, rows = write_view(tmp_path, emit, sink="delta", shuffled=emit == "on_update")
    assert main(["run", str(view), "--once", "--quiet"]) == 0
    assert_view_is_exact(tmp_path, rows, emit, "delta")
    table = deltalake.DeltaTable(str(tmp_path / "view.delta"))
    version, applied = table.version(), [c for c in table.history() if "overwindow.batchId" in c]
    ids = sorted(int(c["overwindow.batchId"]) for c in applied)
    assert ids == list(range(len(ids))) and len(ids) >= 6  # a commit per micro-batch (6 files at least)
    assert main(["run", str(view), "--once", "--quiet"]) == 0
    assert deltalake.DeltaTable(str(tmp_path / "view.delta")).version() == version
    assert_view_is_exact(tmp_path, rows, emit, "delta")
