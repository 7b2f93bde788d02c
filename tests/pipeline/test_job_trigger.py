"""``[sink] trigger``: the view's query runs on the processing-time trigger the view file gives (the
interval Spark's query holds, read from the JVM), and a micro-batch of it commits the rows into the
sink; without the key, every second."""

import json
import sqlite3
import textwrap
import time

import pytest

from overwindow.pipeline.job import start_view
from overwindow.pipeline.view import load_view


def _view(tmp_path, trigger):
    (tmp_path / "events").mkdir()
    path = tmp_path / "view.toml"
    path.write_text(
        textwrap.dedent(f"""
        [source]
        format = "files"
        path = "events"
        schema = "k STRING, id BIGINT, t BIGINT, x DOUBLE"

        [view]
        partition_by = ["k"]
        calls = ["sum(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s"]
        emit = "on_update"
        row_key = ["id"]

        [sink]
        kind = "sqlite"
        path = "view.sqlite"
        table = "v"
        checkpoint = "chk"
        {trigger}
    """)
    )
    return load_view(str(path))


@pytest.mark.parametrize("trigger, ms", [('trigger = "250 milliseconds"', 250), ("", 1000)])
def test_the_view_runs_on_its_trigger(spark, tmp_path, trigger, ms):
    view = _view(tmp_path, trigger)
    rows = [{"k": "a", "id": i, "t": i, "x": float(i)} for i in range(3)]
    (tmp_path / "events" / "0.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
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
    with sqlite3.connect(tmp_path / "view.sqlite") as con:
        assert sorted(con.execute("SELECT id, s FROM v")) == [(0, 0.0), (1, 1.0), (2, 3.0)]
