"""Streams give Spark's values and types: the same window calls through both emit modes (and both
state layouts of emit on update) on a Spark stream (parquet files -> groupBy(k).overWindow ->
foreachBatch collector) equal Spark's own batch window functions over the same rows: the output
schema's types, NaN apart from NULL, +-inf, -0.0, BIGINT values past 2**53 beside NULLs, DECIMALs
exactly, NULL keys, timestamps before 1970, INTERVAL DAY (``DATE - DATE``) and the INTERVAL DAY TO
SECOND of its average, of an interval times a number and of ``TIMESTAMP - DATE``."""

import datetime as dt
import math
import os
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import overwindow
from overwindow.spark import compat

SCHEMA = "k STRING, ts TIMESTAMP, rid BIGINT, x DOUBLE, n BIGINT, d DECIMAL(12,2), i INT, e DATE"
ARROW = pa.schema(
    [
        ("k", pa.string()),
        ("ts", pa.timestamp("us")),
        ("rid", pa.int64()),
        ("x", pa.float64()),
        ("n", pa.int64()),
        ("d", pa.decimal128(12, 2)),
        ("i", pa.int32()),
        ("e", pa.date32()),
    ]
)
CALLS = (
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS sx",
    "count(x) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cx",
    "max(x) OVER (ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS hx",
    "min(x) OVER (ORDER BY ts ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS lx",
    "avg(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 20 SECONDS PRECEDING AND CURRENT ROW) AS ax",
    "lag(x) OVER (ORDER BY ts) AS px",
    "lead(x) OVER (ORDER BY ts) AS nx",
    "lag(n) OVER (ORDER BY ts) AS pn",
    "max(n) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS hn",
    "sum(d) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS sd",
    "avg(d) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS ad",
    "lag(i, 1, 0) OVER (ORDER BY ts) AS pi",
    "row_number() OVER (ORDER BY ts) AS rn",
    "rank() OVER (ORDER BY ts) AS rk",
    "lag(e - DATE '2024-03-01') OVER (ORDER BY ts) AS pe",
    "sum(e - DATE '2024-03-01') OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS se",
    "avg(e - DATE '2024-03-01') OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS ae",
    # interval literals, an interval times a number, a TIMESTAMP minus a DATE: INTERVAL DAY TO SECOND
    "lag((e - DATE '2024-03-01') * 1.5, 1, INTERVAL '0 12:00:00' DAY TO SECOND) OVER (ORDER BY ts) AS pm",
    "max(ts - e + INTERVAL '1' DAY) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mt",
)
# the chunked layout refuses frames reaching back to the partition's start (and row numbers from it)
UNBOUNDED = (" AS cx", " AS rn", " AS rk")
X = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 1e3, 7.0, 3.125]
N = [None, 2**53 + 1, -(2**53) - 3, 2**62 + 1, 7, -1]


def _rows(rng, b_start) -> list[dict]:
    """25 rows for each of three keys (one NULL), a row every 7 s from 2024 (key "b" from
    ``b_start``), values drawn from the edge cases."""
    rows, rid = [], 0
    for key, start in (
        ("a", dt.datetime(2024, 3, 1)),
        ("b", b_start),
        (None, dt.datetime(2024, 3, 1)),
    ):
        for j in range(25):
            rows.append(
                {
                    "k": key,
                    "ts": start + dt.timedelta(seconds=7 * j),
                    "rid": rid,
                    "x": X[int(rng.integers(len(X)))],
                    "n": N[int(rng.integers(len(N)))],
                    "d": None
                    if rng.random() < 0.15
                    else Decimal(int(rng.integers(-(10**11), 10**11))).scaleb(-2),
                    "i": None if rng.random() < 0.2 else int(rng.integers(-1000, 1000)),
                    "e": None
                    if rng.random() < 0.15
                    else dt.date(2024, 3, 1) + dt.timedelta(days=int(rng.integers(-40000, 40000))),
                }
            )
            rid += 1
    return rows


def _far(rows, days) -> list[dict]:
    last = {}
    for r in rows:
        last[r["k"]] = r
    return [
        dict(
            r,
            ts=r["ts"] + dt.timedelta(days=days),
            rid=1000 * days + r["rid"],
            x=1.0,
            n=1,
            d=Decimal("1.00"),
            i=1,
            e=dt.date(2024, 3, 1),
        )
        for r in last.values()
    ]


def _write(folder, rows, n):
    path = os.path.join(folder, f"part-{n:04d}.parquet")
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW), path)
    t = time.time() + n
    os.utime(path, (t, t))


def _same(got, want) -> bool:
    if want is None or got is None:
        return got is None and want is None
    if isinstance(want, float):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return got == want or math.isclose(got, want, rel_tol=1e-9)
    return got == want


def _source(tmp_path, b_start):
    """The rows in one file; then two files of far rows per key (a day and two days on) that close
    every window on a stream with a watermark. Returns the folder and the first file's row ids."""
    rng = np.random.default_rng(17)
    src = str(tmp_path / "src")
    os.makedirs(src)
    rows = _rows(rng, b_start)
    _write(src, rows, 0)
    _write(src, _far(rows, 1), 1)
    _write(src, _far(rows, 2), 2)
    return src, {r["rid"] for r in rows}


def _spark_batch(spark, src, calls) -> dict:
    """Spark's own window functions over the source's rows: (rid -> row, column -> Spark type)."""
    df = (
        spark.read.schema(SCHEMA)
        .parquet(src)
        .selectExpr("*", *(c.replace("OVER (", "OVER (PARTITION BY k ") for c in calls))
    )
    return {r["rid"]: r for r in compat.to_arrow(df).to_pylist()}, dict(df.dtypes)


def _run(spark, src, chk, spec, watermark: bool):
    """The stream's output rows (Arrow, NaN kept) and its schema's types."""
    got = []
    events = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src)
    if watermark:
        events = events.withWatermark("ts", "0 seconds")
    out = events.groupBy("k").overWindow(spec)
    q = (
        out.writeStream.foreachBatch(lambda df, _: got.append(compat.to_arrow(df)))
        .option("checkpointLocation", chk)
        .outputMode("append" if watermark else "update")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return pa.concat_tables(got).to_pylist(), dict(out.dtypes)


def _assert_as_spark(rows, types, want, want_types, names):
    assert {c: types[c] for c in names} == {c: want_types[c] for c in names}
    for r in rows:
        expected = want[r["rid"]]
        for c in names:
            assert _same(r[c], expected[c]), (c, r, expected)


def test_window_close_stream_equals_spark_batch(spark, tmp_path):
    # after 1970: Spark's stateful operators take a row at or before the watermark, which starts at
    # 1970-01-01 (0 ms), as late, and drop it
    src, real = _source(tmp_path, dt.datetime(1970, 1, 1, 0, 1))
    names = [c.rsplit(" AS ", 1)[1] for c in CALLS]
    rows, types = _run(spark, src, str(tmp_path / "chk"), overwindow.OverWindow(*CALLS, rowKey="rid"), True)
    emitted = [r["rid"] for r in rows]
    assert len(emitted) == len(set(emitted)) and real <= set(emitted)
    want, want_types = _spark_batch(spark, src, CALLS)
    _assert_as_spark(rows, types, want, want_types, names)
    assert any(isinstance(r["px"], float) and math.isnan(r["px"]) for r in rows)  # the data reach NaN
    assert any(r["pn"] == 2**53 + 1 for r in rows) and any(r["pn"] is None for r in rows)
    assert types["pe"] == "interval day" and types["ae"] == "interval day to second"
    assert types["pm"] == types["mt"] == "interval day to second"
    assert any(r["ae"] is not None and r["ae"] % dt.timedelta(days=1) for r in rows)  # off whole days


@pytest.mark.parametrize("layout", ["whole", "chunked"])
def test_on_update_stream_equals_spark_batch(spark, tmp_path, layout, request):
    if layout == "chunked":
        request.getfixturevalue("rocksdb")
    src, _ = _source(tmp_path, dt.datetime(1969, 12, 31, 23, 59))  # no watermark: any time
    calls = [c for c in CALLS if layout == "whole" or not c.endswith(UNBOUNDED)]
    names = [c.rsplit(" AS ", 1)[1] for c in calls]
    spec = overwindow.OverWindow(*calls, emit="on_update", rowKey="rid", stateLayout=layout)
    rows, types = _run(spark, src, str(tmp_path / "chk"), spec, False)
    table = {}
    for r in rows:  # the changelog applied in order: the view's rows
        if r["_change"] == "delete":
            table.pop(r["rid"], None)
        else:
            table[r["rid"]] = r
    want, want_types = _spark_batch(spark, src, calls)
    assert set(table) == set(want)
    _assert_as_spark(list(table.values()), types, want, want_types, names)
