"""SESSION frames against Spark itself (docs/sessions.md). Spark has sessions only as a GROUP BY
(``session_window``): its per-session aggregates, joined back to each row of the session, are what
overwindow's ``OVER (... SESSION WITH GAP ...)`` gives every row, over random clicks with ties,
rows exactly the gap apart, NULL partition keys and NULL times (which ``session_window`` drops:
there a NULL time's session is its NULL peers, checked against Spark's GROUP BY of them)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from test_select import _collect

import overwindow
from overwindow.logical.expr import for_spark
from overwindow.spark import compat

GAP = "INTERVAL '30' MINUTE"
CALLS = [
    f"count(*) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS n",
    f"count(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS nx",
    f"sum(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS s",
    f"avg(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS a",
    f"min(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS lo",
    f"max(x) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS hi",
    f"first_value(ts) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS began",
    f"last_value(ts) OVER (PARTITION BY k ORDER BY ts SESSION WITH GAP {GAP}) AS ended",
]
# the same, per session of Spark's GROUP BY
AGGREGATES = (
    "count(*) AS n, count(x) AS nx, sum(x) AS s, avg(x) AS a, min(x) AS lo, max(x) AS hi, "
    "min(ts) AS began, max(ts) AS ended"
)
NAMES = ["n", "nx", "s", "a", "lo", "hi", "began", "ended"]
SCHEMA = "rid BIGINT, k BIGINT, ts TIMESTAMP, x BIGINT"


def clicks(seed: int, n: int = 300, base: dt.datetime = dt.datetime(1969, 12, 31, 20, 0)) -> list[tuple]:
    """Random clicks from ``base`` on: minutes on a coarse grid (ties, and rows exactly 30 minutes
    apart), by default before and after 1970, NULL keys and times, NULL values."""
    rng = np.random.default_rng(seed)
    rows = []
    for rid in range(n):
        k = [None, 1, 2, 3][int(rng.integers(0, 4))]
        ts = None if rng.random() < 0.08 else base + dt.timedelta(minutes=5 * int(rng.integers(0, 200)))
        x = None if rng.random() < 0.1 else int(rng.integers(-100, 100))
        rows.append((rid, k, ts, x))
    return rows


def spark_sessions(spark, view: str):
    """Each row with its session's aggregates by Spark's session_window GROUP BY; rows with a NULL
    time with those of their (key, NULL time) group. Sorted by rid."""
    per_session = spark.sql(
        f"SELECT k, session_window(ts, '30 minutes') AS w, {AGGREGATES} FROM {view} "
        "WHERE ts IS NOT NULL GROUP BY k, session_window(ts, '30 minutes')"
    )
    per_session.createOrReplaceTempView("sessions")
    joined = spark.sql(
        f"SELECT r.rid, {', '.join('s.' + n for n in NAMES)} FROM {view} r JOIN sessions s "
        "ON r.k <=> s.k AND r.ts >= s.w.start AND r.ts < s.w.end"
    )
    nulls = spark.sql(
        f"SELECT r.rid, {', '.join('g.' + n for n in NAMES)} FROM {view} r JOIN "
        f"(SELECT k, {AGGREGATES} FROM {view} WHERE ts IS NULL GROUP BY k) g "
        "ON r.k <=> g.k WHERE r.ts IS NULL"
    )
    return sorted(joined.union(nulls).collect(), key=lambda r: r["rid"])


def _same(a, b) -> bool:
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):  # Arrow's UTC, Row's naive UTC
        return a.replace(tzinfo=None) == b.replace(tzinfo=None)
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b


def test_batch_sessions_equal_spark_session_window(spark):
    for seed in range(3):
        rows = clicks(seed)
        df = spark.createDataFrame(rows, SCHEMA)
        df.createOrReplaceTempView("clicks")
        want = spark_sessions(spark, "clicks")
        assert len(want) == len(rows)  # every row in exactly one session
        table = compat.to_arrow(df)
        got = overwindow.evaluate(table, *CALLS).sort_by("rid").to_pylist()
        for g, w in zip(got, want):
            assert g["rid"] == w["rid"]
            for name in NAMES:
                assert (g[name] is None and w[name] is None) or _same(g[name], w[name]), (name, g, w)
        # the result types are those of Spark's window functions over the same columns
        spark_types = dict(spark.sql(f"SELECT {', '.join(for_spark(c) for c in CALLS)} FROM clicks").dtypes)
        ours = overwindow.evaluate(table, *CALLS).schema
        simple = {pa.int64(): "bigint", pa.float64(): "double"}
        assert {n: simple.get(ours.field(n).type, str(ours.field(n).type)) for n in NAMES} == dict(
            spark_types, began="timestamp[us, tz=UTC]", ended="timestamp[us, tz=UTC]"
        )
        assert spark_types["began"] == spark_types["ended"] == "timestamp"


def test_on_update_streams_equal_spark_sessions(spark, tmp_path):
    """A stream of four micro-batches, later ones with rows that bridge sessions of earlier ones
    (and NULL keys and times), through ``overwindow.sql`` and through PySpark Columns with
    ``overwindow.sessionWindow``: the table each changelog leaves equals Spark's session_window
    GROUP BY over all rows, joined back to each row."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = clicks(7, n=160)
    order = np.random.default_rng(7).permutation(len(rows))  # out of time order: late rows bridge
    src = str(tmp_path / "src")
    for part in np.array_split(order, 4):
        spark.createDataFrame([rows[j] for j in part], SCHEMA).coalesce(1).write.mode("append").parquet(src)
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("all_clicks")
    want = {r["rid"]: r for r in spark_sessions(spark, "all_clicks")}
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    events.createOrReplaceTempView("click_stream")
    by_sql = overwindow.sql(
        spark, f"SELECT rid, k, ts, {', '.join(CALLS)} FROM click_stream", emit="on_update", rowKey="rid"
    )
    w = Window.partitionBy("k").orderBy("ts")
    by_columns = overwindow.select(
        events,
        "rid",
        "k",
        "ts",
        overwindow.sessionWindow(F.count("*").over(w), "30 minutes").alias("n"),
        overwindow.sessionWindow(F.sum("x").over(w).alias("s"), "30 minutes"),
        overwindow.sessionWindow(F.first("ts").over(w), dt.timedelta(minutes=30)).alias("began"),
        emit="on_update",
        rowKey="rid",
    )
    for name, out, names in (("sql", by_sql, NAMES), ("columns", by_columns, ["n", "s", "began"])):
        table = {}
        for r in _collect(out, str(tmp_path / name), "update"):
            if r["_change"] == "delete":
                table.pop(r["rid"], None)
            else:
                table[r["rid"]] = r
        assert set(table) == set(want), name
        for rid, r in table.items():
            for n in names:
                assert (r[n] is None and want[rid][n] is None) or _same(r[n], want[rid][n]), (name, n, r)


def test_window_close_stream_emits_closed_sessions_as_spark(spark, tmp_path):
    """On window close, watermarked on ts: four micro-batches in time order (out of order inside
    each, sessions spanning two files), none late. Each row whose session Spark's session_window
    ends before the last watermark (the newest time) is emitted once, with Spark's values; none
    whose session ends after it. The times lie after 1970: Spark's watermark never goes below the
    epoch, so an earlier time is late once a watermark exists."""
    rows = clicks(11, n=160, base=dt.datetime(2024, 3, 1, 8, 0))
    timed = sorted((r for r in rows if r[2] is not None), key=lambda r: r[2])
    rng = np.random.default_rng(11)
    src = str(tmp_path / "src")
    for part in np.array_split(np.arange(len(timed)), 4):
        chunk = [timed[i] for i in rng.permutation(part)]
        spark.createDataFrame(chunk, SCHEMA).coalesce(1).write.mode("append").parquet(src)
    spark.createDataFrame(timed, SCHEMA).createOrReplaceTempView("timed_clicks")
    want = {r["rid"]: r for r in spark_sessions(spark, "timed_clicks")}
    newest = max(r[2] for r in timed)
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    events.withWatermark("ts", "0 seconds").createOrReplaceTempView("timed_stream")
    out = overwindow.sql(spark, f"SELECT rid, k, ts, {', '.join(CALLS)} FROM timed_stream", rowKey="rid")
    got = _collect(out, str(tmp_path / "chk"), "append")
    rids = [r["rid"] for r in got]
    assert len(rids) == len(set(rids))  # once
    gap = dt.timedelta(minutes=30)
    for rid, w in want.items():
        end = w["ended"] + gap
        if end < newest:
            assert rid in rids, (rid, w)
        elif end > newest:
            assert rid not in rids, (rid, w)
    assert rids
    for r in got:
        for n in NAMES:
            assert (r[n] is None and want[r["rid"]][n] is None) or _same(r[n], want[r["rid"]][n]), (n, r)
