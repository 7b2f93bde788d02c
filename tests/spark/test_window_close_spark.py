"""Emit on window close, end to end on Spark Structured Streaming: JSON files added between
availableNow runs of one query (each run restarts from the checkpoint). The oracle is the batch
evaluator over all rows, restricted to rows whose windows closed."""

import json
import os
import time

import numpy as np
import pyarrow as pa
import pytest

import overwindow
from overwindow.errors import WindowSpecError

SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"
CALLS = (
    "x - lag(x) OVER (ORDER BY ts) AS diff",
    "avg(x) OVER (ORDER BY ts ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) AS avg3",
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s1",
    "lead(x) OVER (ORDER BY ts) AS nxt",
    "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 20 SECONDS PRECEDING AND CURRENT ROW) AS c20",
    "row_number() OVER (ORDER BY ts) AS rn",
)


def _write_batch(folder, rows, n):
    path = os.path.join(folder, f"part-{n:04d}.json")
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    t = time.time() + n  # distinct modification times keep file order stable across runs
    os.utime(path, (t, t))


def _rows(rng, n_rows, start_s):
    out = []
    for i in range(n_rows):
        sec = start_s + i * 2 + int(rng.integers(0, 5))
        out.append({"k": int(rng.integers(0, 3)), "ts": f"2024-01-01T00:{sec // 60:02d}:{sec % 60:02d}",
                    "rid": start_s * 1000 + i, "x": round(float(rng.normal()), 3)})
    return out


def _run(spark, src, chk, out):
    from pyspark.sql import functions as F

    events = spark.readStream.schema(SCHEMA).json(src).withWatermark("ts", "10 seconds")
    spec = overwindow.OverWindow(*CALLS, rowKey="rid")
    result = events.groupBy("k").overWindow(spec)
    q = (result.writeStream.format("parquet").option("path", out).option("checkpointLocation", chk)
         .outputMode("append").trigger(availableNow=True).start())
    q.awaitTermination()
    return q


def test_stream_equals_batch_over_closed_windows(spark, tmp_path):
    rng = np.random.default_rng(3)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    all_rows = []
    for b in range(4):
        rows = _rows(rng, 40, b * 100)  # files 100 s apart: none is late for the 10 s watermark
        all_rows += rows
        _write_batch(src, rows, b)
        _run(spark, src, chk, out)
    emitted = pa.Table.from_pandas(spark.read.parquet(out).toPandas(), preserve_index=False)
    rids = emitted["rid"].to_pylist()
    assert len(rids) == len(set(rids)), "a row was emitted twice"

    table = pa.Table.from_pylist(all_rows)
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("us")))
    spec = overwindow.OverWindow(*CALLS, rowKey="rid")
    batch = overwindow.evaluate(table.sort_by([("ts", "ascending"), ("rid", "ascending")]), *spec.partitioned(("k",)))
    batch = batch.to_pandas().set_index("rid")
    # windows closed: at or below the final watermark, with one more released row for lead and the 1 FOLLOWING frame
    watermark = table["ts"].cast(pa.int64()).to_numpy().max() - 10_000_000
    closed = set()
    for k, part in batch.reset_index().groupby("k"):
        part = part.sort_values(["ts", "rid"])
        released = part[part["ts"].astype("datetime64[us]").astype("int64") <= watermark]
        closed |= set(released["rid"].iloc[:-1])  # the last released row still waits for its next row
    assert set(rids) == closed
    got = emitted.to_pandas().set_index("rid").sort_index()
    want = batch.loc[got.index]
    for col in ("diff", "avg3", "s1", "nxt", "c20", "rn"):
        np.testing.assert_allclose(got[col].to_numpy(dtype=float), want[col].to_numpy(dtype=float), rtol=1e-9, equal_nan=True)


def test_missing_watermark_is_refused_when_the_query_is_built(spark, tmp_path):
    src = str(tmp_path / "src")
    os.makedirs(src)
    events = spark.readStream.schema(SCHEMA).json(src)
    with pytest.raises(WindowSpecError, match="watermark on the ORDER BY column `ts`"):
        events.groupBy("k").overWindow(overwindow.OverWindow("lag(x) OVER (ORDER BY ts) AS p"))
