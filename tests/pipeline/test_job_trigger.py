"""``[sink] trigger``: the view's query runs on the processing-time trigger the view file gives (the
interval Spark's query holds, read from the JVM), and a micro-batch of it commits the rows into the
sink; without the key, every second."""

import json
import sqlite3
import time

import pytest
from test_view import GOOD, write

from overwindow.pipeline.job import start_view
from overwindow.pipeline.view import load_view


@pytest.mark.parametrize("trigger, ms", [({"sink.trigger": "250 milliseconds"}, 250), ({}, 1000)])
def test_the_view_runs_on_its_trigger(spark, tmp_path, trigger, ms):
    (tmp_path / "events").mkdir()
    rows = [{"k": "a", "ts": f"2024-01-01T00:00:0{i}", "x": float(i)} for i in range(3)]
    (tmp_path / "events" / "0.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    view = load_view(write(tmp_path, GOOD), {"view.emit": "on_update", **trigger})
    query, _ = start_view(spark, view, once=False, quiet=True)
    try:
        assert query._jsq.streamingQuery().trigger().intervalMs() == ms
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not query.recentProgress:
            assert query.exception() is None
            time.sleep(0.1)
        query.processAllAvailable()
    finally:
        query.stop()
    with sqlite3.connect(tmp_path / "view.sqlite") as con:  # x over ROWS 3 PRECEDING
        assert sorted(con.execute("SELECT x, s FROM v")) == [(0.0, 0.0), (1.0, 1.0), (2.0, 3.0)]
