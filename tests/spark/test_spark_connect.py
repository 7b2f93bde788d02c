"""overWindow is registered for Spark Connect DataFrames too: a view run through a local Connect
server (in a subprocess: one Spark at a time) emits the batch result, with a state per key and with
keys in buckets (keyBuckets reads the grouping columns of a Connect plan; whole state, and split
state on transformWithStateInPandas), on update in buckets
with the whole and the chunked state layout (transformWithStateInPandas, RocksDB set on the
Connect session; on the default store refused up front); overwindow.select over PySpark window
Columns of Spark Connect (a grouped-aggregate pandas_udf among them) equals Spark's batch select of
the same Columns, over one PARTITION BY on
window close and over two (the fan-out's chained operators) on update. PySpark 4.0 (scripts/compat
runs this file there) has no transformWithStateInPandas on Connect: the chunked layout and the
fan-out are refused there, naming 4.1."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa

import overwindow
from overwindow.spark import compat


def test_over_window_through_spark_connect(no_spark, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    rows = [
        {"k": i % 3, "ts": f"2024-01-01T00:00:{i:02d}", "rid": i, "x": float((i * 7) % 11)} for i in range(40)
    ]
    (src / "a.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    job = os.path.join(os.path.dirname(__file__), "connect_job.py")
    done = subprocess.run(
        [sys.executable, "-W", "ignore", job, str(src), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    emitted = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    table = pa.Table.from_pylist(rows)
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("us")))
    batch = (
        overwindow.evaluate(
            table,
            "sum(x) OVER (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING) AS s",
            "lag(x) OVER (PARTITION BY k ORDER BY ts) AS p",
        )
        .to_pandas()
        .set_index("rid")
    )
    # final watermark 00:00:34: rows at or below it are closed (no frame looks ahead); every hosting
    # (a state per key, keys in buckets given and chosen; on 4.1+ also split state on buckets, on
    # RocksDB)
    window_close = ("per_key", "bucketed", "chosen")
    if compat.version() >= compat.CONNECT_TRANSFORM_WITH_STATE:
        window_close += ("bucketed_chunked",)
    for hosting in window_close:
        assert sorted(r["rid"] for r in emitted if r["hosting"] == hosting) == list(range(35)), hosting
    # emit on update in buckets, whole and chunked state (transformWithStateInPandas on RocksDB):
    # every row, as an upsert
    on_update = ("on_update_bucketed", "on_update_chunked_bucketed")
    if compat.version() < compat.CONNECT_TRANSFORM_WITH_STATE:  # PySpark 4.0 (scripts/compat)
        on_update = on_update[:1]
        (refused,) = [r["message"] for r in emitted if r["hosting"] == "chunked_version_refused"]
        assert "stateLayout='chunked' on Spark Connect" in refused
        assert "needs PySpark 4.1 or later" in refused
    else:
        # before RocksDB was set on the Connect session, the chunked layout was refused up front
        (refused,) = [r["message"] for r in emitted if r["hosting"] == "chunked_refused"]
        assert "needs the RocksDB state store: spark.conf.set(" in refused
    for hosting in on_update:
        updates = [r for r in emitted if r["hosting"] == hosting]
        assert sorted(r["rid"] for r in updates) == list(range(40)), hosting
        assert {r["_change"] for r in updates} == {"upsert"}, hosting
    for r in (r for r in emitted if r["hosting"] in (*window_close, *on_update)):
        assert r["s"] == batch.loc[r["rid"], "s"]
        want = batch.loc[r["rid"], "p"]
        got = np.nan if r["p"] is None else r["p"]  # NULL comes back as NaN through pandas and JSON
        assert (np.isnan(got) and np.isnan(want)) or got == want
    _assert_select_as_spark(emitted, "select", 1, range(35))
    if compat.version() >= compat.CONNECT_TRANSFORM_WITH_STATE:
        _assert_select_as_spark(emitted, "several", 0, range(40))
    else:  # PySpark 4.0 (scripts/compat): its Connect GroupedData has no transformWithStateInPandas
        (refused,) = [r["message"] for r in emitted if r["hosting"] == "several_refused"]
        assert "on Spark Connect (Spark's transformWithStateInPandas" in refused
        assert "needs PySpark 4.1 or later" in refused


def _assert_select_as_spark(emitted, hosting, rid, rids):
    """The select's stream (window close: the closed rows, rid <= 34; on update all) has the batch
    select's column names and types (on update then ``_change``) and values (``rid``: where the
    row's id is)."""
    (types,) = [r for r in emitted if r["hosting"] == f"{hosting}_types"]
    assert types["stream"][: len(types["batch"])] == types["batch"]
    want = {r["row"][rid]: r["row"] for r in emitted if r["hosting"] == f"{hosting}_batch"}
    got = [r["row"] for r in emitted if r["hosting"] == hosting]
    assert sorted(r[rid] for r in got) == list(rids)
    for row in got:
        for a, b in zip(row, want[row[rid]]):
            assert (a is None and b is None) or a == b or math.isclose(a, b, rel_tol=1e-9), (
                row,
                want[row[rid]],
            )
