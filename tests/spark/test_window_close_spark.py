"""Emit on window close, end to end on Spark Structured Streaming. JSON files are added between
availableNow runs of one query, so every run restarts from the checkpoint. The oracle is the batch
evaluator over all rows, restricted to rows whose windows closed by the final watermark."""

import json
import os
import re
import time

import numpy as np
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

import overwindow
from overwindow.errors import WindowSpecError

SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"
DELAY_S = 10


def _write(folder, rows, n):
    path = os.path.join(folder, f"part-{n:04d}.json")
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    t = time.time() + n  # distinct modification times keep the file order stable across runs
    os.utime(path, (t, t))


def _rows(rng, n_rows, start_s, keys=3, key=None):
    out = []
    for i in range(n_rows):
        sec = start_s + i * 2 + int(rng.integers(0, 5))
        out.append(
            {
                "k": int(rng.integers(0, keys)) if key is None else key,
                "ts": f"2024-01-01T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}",
                "rid": start_s * 1000 + i + (0 if key is None else 100 * (key + 1)),
                "x": round(float(rng.normal()), 3),
            }
        )
    return out


def _start(
    spark,
    src,
    chk,
    out,
    calls,
    schema=SCHEMA,
    key="k",
    time_col="ts",
    row_key="rid",
    delay=f"{DELAY_S} seconds",
    buckets=None,
    ttl=None,
    layout="whole",
    **options,
):
    reader = spark.readStream.schema(schema)
    for name, value in options.items():
        reader = reader.option(name, value)
    events = reader.json(src).withWatermark(time_col, delay)
    spec = overwindow.OverWindow(*calls, rowKey=row_key, keyBuckets=buckets, stateTtl=ttl, stateLayout=layout)
    result = events.groupBy(key).overWindow(spec)
    q = (
        result.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", chk)
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return q


def _emitted(spark, out):
    return spark.read.parquet(out).toPandas()


def _expected(rows, calls, key="k", time_col="ts", row_key="rid", ahead=0, delay_s=DELAY_S, spec_rows=None):
    """(closed row ids, batch result indexed by row id): rows at or below the final watermark that
    have ``ahead`` released rows after them in their partition."""
    table = pa.Table.from_pylist(rows)
    table = table.set_column(
        table.schema.get_field_index(time_col), time_col, table[time_col].cast(pa.timestamp("us"))
    )
    spec = overwindow.OverWindow(*calls, rowKey=row_key)
    batch = overwindow.evaluate(
        table.sort_by([(time_col, "ascending"), (row_key, "ascending")]), *spec.partitioned((key,))
    ).to_pandas()
    watermark = table[time_col].cast(pa.int64()).to_numpy().max() - delay_s * 1_000_000
    closed = set()
    for _, part in batch.groupby(key):
        part = part.sort_values([time_col, row_key])
        released = part[part[time_col].astype("datetime64[us]").astype("int64") <= watermark]
        closed |= set(released[row_key].iloc[: len(released) - ahead])
    return closed, batch.set_index(row_key)


def _assert_matches(emitted, closed, batch, columns, row_key="rid"):
    ids = emitted[row_key].tolist()
    assert len(ids) == len(set(ids)), "a row was emitted twice"
    assert set(ids) == closed
    got = emitted.set_index(row_key).sort_index()
    want = batch.loc[got.index]
    for col in columns:
        np.testing.assert_allclose(
            got[col].to_numpy(dtype=float),
            want[col].to_numpy(dtype=float),
            rtol=1e-9,
            equal_nan=True,
            err_msg=col,
        )


CALLS = (
    "x - lag(x) OVER (ORDER BY ts) AS diff",
    "avg(x) OVER (ORDER BY ts ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) AS avg3",
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s1",
    "lead(x) OVER (ORDER BY ts) AS nxt",
    "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 20 SECONDS PRECEDING AND CURRENT ROW) AS c20",
    "row_number() OVER (ORDER BY ts) AS rn",
)
COLUMNS = ("diff", "avg3", "s1", "nxt", "c20", "rn")


# hostings: a state per key, and keys hashed into buckets (fewer buckets than keys, so buckets hold
# several keys and some keys get no rows in a micro-batch); without keyBuckets (``_start``'s
# default) the query runs on the buckets it chooses (16 on the tests' 2 shuffle partitions)
HOSTINGS = pytest.mark.parametrize("buckets", ["per key", 2], ids=["per_key", "bucketed"])
# and the split state on buckets (transformWithStateInPandas: pending rows per bucket, each key's
# history an entry, a timer per bucket), given and chosen (a TINYINT and a BOOLEAN grouping key)
LAYOUTS = pytest.mark.parametrize(
    "buckets, layout",
    [("per key", "whole"), (2, "whole"), (2, "chunked"), (None, "chunked")],
    ids=["per_key", "bucketed", "bucketed_chunked", "chosen_chunked"],
)


def _layout(request, layout):
    """The RocksDB state store for the chunked layout (transformWithStateInPandas needs it)."""
    if layout == "chunked":
        request.getfixturevalue("rocksdb")


@LAYOUTS
def test_stream_with_restarts_equals_batch_over_closed_windows(spark, tmp_path, buckets, layout, request):
    _layout(request, layout)
    rng = np.random.default_rng(3)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    rows = []
    for b in range(4):
        batch = _rows(rng, 40, b * 100, keys=5)  # files 100 s apart: none is late for the 10 s watermark
        rows += batch
        _write(src, batch, b)
        _start(spark, src, chk, out, CALLS, buckets=buckets, layout=layout)
    closed, expected = _expected(rows, CALLS, ahead=1)
    _assert_matches(_emitted(spark, out), closed, expected, COLUMNS)

    # the same files in one uninterrupted run, one file per micro-batch, give the same rows
    chk2, out2 = str(tmp_path / "chk2"), str(tmp_path / "out2")
    _start(spark, src, chk2, out2, CALLS, maxFilesPerTrigger=1, buckets=buckets, layout=layout)
    _assert_matches(_emitted(spark, out2), closed, expected, COLUMNS)


@pytest.mark.parametrize(
    "computed, buckets, layout",
    [
        (False, "per key", "whole"),
        (True, "per key", "whole"),
        (False, 2, "whole"),
        (True, 2, "whole"),
        (True, 2, "chunked"),
    ],
    ids=["column", "computed", "bucketed_column", "bucketed_computed", "bucketed_chunked_computed"],
)
def test_minus_zero_and_zero_keys_are_one_partition(spark, tmp_path, computed, buckets, layout, request):
    """A DOUBLE key's -0.0 and 0.0 rows are one partition (as SQL groups them), NULL's and NaN's one
    each, grouped by the key column or by a computed key (``k * 1.0`` keeps the sign of a zero), with
    a state per key, on buckets and on the split state of buckets: Spark's stateful operators group
    by columns of the keys' bytes, so a key's rows once split between two states by the sign of
    their zero; a computed key was refused by Spark as an unresolved column per key, and by
    overwindow on buckets (the machine tells a bucket's keys apart by their columns: a computed key
    is now one, hidden). Oracle: the batch evaluator over all rows, partitioned by a label of each
    row's SQL partition (``part``, which the stream does not read)."""
    import pyspark.sql.functions as F

    _layout(request, layout)
    rng = np.random.default_rng(11)
    values = {"NULL": None, "NaN": float("nan"), "zero": -0.0, "+zero": 0.0, "1.5": 1.5}
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    rows = []
    for b in range(3):
        batch = []
        for r in _rows(rng, 30, b * 100):
            label = list(values)[int(rng.integers(0, len(values)))]
            batch.append(dict(r, k=values[label], part=label.lstrip("+")))  # -0.0 and 0.0: one part
        rows += batch
        _write(src, batch, b)
        key = F.col("k") * 1.0 if computed else "k"
        schema = SCHEMA.replace("k INT", "k DOUBLE")
        _start(spark, src, chk, out, CALLS, schema=schema, key=key, buckets=buckets, layout=layout)
    emitted = _emitted(spark, out)
    assert not [c for c in emitted.columns if c.startswith("__")]  # a computed key stays hidden
    closed, expected = _expected([{c: r[c] for c in r if c != "k"} for r in rows], CALLS, key="part", ahead=1)
    _assert_matches(emitted, closed, expected, COLUMNS)


@LAYOUTS
def test_idle_keys_flush_when_the_watermark_passes(spark, tmp_path, buckets, layout, request):
    _layout(request, layout)
    rng = np.random.default_rng(5)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    calls = ("sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s", "rank() OVER (ORDER BY ts) AS r")
    quiet = _rows(rng, 10, 0, key=7)  # key 7 never gets another row: only its event-time timeout emits it
    busy = _rows(rng, 10, 0, key=1)
    _write(src, quiet + busy, 0)
    _start(spark, src, chk, out, calls, buckets=buckets, layout=layout)
    later = _rows(rng, 10, 200, key=1)
    _write(src, later, 1)
    _start(spark, src, chk, out, calls, buckets=buckets, layout=layout)
    emitted = _emitted(spark, out)
    closed, expected = _expected(quiet + busy + later, calls)
    assert {r["rid"] for r in quiet} <= closed
    _assert_matches(emitted, closed, expected, ("s", "r"))


@HOSTINGS
def test_state_ttl_forgets_idle_keys(spark, tmp_path, buckets):
    """stateTtl = 60 s over three availableNow runs (each ends with a batch that moves the watermark
    to its newest row less 10 s): key 7 (rows at 0-22 s) is forgotten in run 2 (watermark ~212 s)
    and starts anew at 400 s; key 1 (0-22 s, then 200-222 s) goes on in run 2, as its rows arrive
    before the watermark moves, and is forgotten at the end of run 3 (~412 s), its last row's lead
    emitted as at the end of its partition. Oracle: the batch evaluator over those partitions."""
    rng = np.random.default_rng(17)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    calls = (
        "lag(x) OVER (ORDER BY ts) AS p",
        "row_number() OVER (ORDER BY ts) AS rn",
        "lead(x) OVER (ORDER BY ts) AS nxt",
    )
    first = _rows(rng, 10, 0, key=7) + _rows(rng, 10, 0, key=1)
    later, back = _rows(rng, 10, 200, key=1), _rows(rng, 10, 400, key=7)
    for n, rows in enumerate((first, later, back)):
        _write(src, rows, n)
        q = _start(spark, src, chk, out, calls, buckets=buckets, ttl="60 seconds")
    assert q.lastProgress["stateOperators"][0]["numRowsTotal"] == 1  # key 1 is gone
    restarted = {r["rid"] for r in back}
    sessions = [dict(r, ks=r["k"] * 10 + (r["rid"] in restarted)) for r in first + later + back]
    _, expected = _expected(sessions, calls, key="ks")
    newest = max(r["ts"] for r in back)
    released = sorted((r["ts"], r["rid"]) for r in back if r["ts"] <= _minus_seconds(newest, DELAY_S))
    closed = {r["rid"] for r in first + later} | {rid for _, rid in released[:-1]}  # lead waits
    _assert_matches(_emitted(spark, out), closed, expected, ("p", "rn", "nxt"))


def _minus_seconds(ts: str, seconds: int) -> str:
    import datetime

    t = datetime.datetime.fromisoformat(ts) - datetime.timedelta(seconds=seconds)
    return t.isoformat()


@LAYOUTS
def test_late_rows_are_dropped_not_mixed_in(spark, tmp_path, buckets, layout, request):
    _layout(request, layout)
    rng = np.random.default_rng(11)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    calls = ("sum(x) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s",)
    first = _rows(rng, 30, 0)
    _write(src, first, 0)
    _start(spark, src, chk, out, calls, buckets=buckets, layout=layout)
    late = [dict(r, rid=10_000_000 + i) for i, r in enumerate(_rows(rng, 5, 0))]  # far below the watermark
    fresh = _rows(rng, 30, 100)
    _write(src, late + fresh, 1)
    q = _start(spark, src, chk, out, calls, buckets=buckets, layout=layout)
    dropped = sum(op.numRowsDroppedByWatermark for p in q.recentProgress for op in p.stateOperators)
    assert dropped == len(late)
    emitted = _emitted(spark, out)
    assert not set(emitted["rid"]) & {r["rid"] for r in late}
    closed, expected = _expected(first + fresh, calls)
    _assert_matches(emitted, closed, expected, ("s",))


def test_without_key_buckets_the_query_chooses_buckets_and_refuses_a_checkpoint_started_per_key(
    spark, tmp_path
):
    """keyBuckets not given: 40 keys share at most 64 bucket states; a checkpoint started per key
    (as an older overwindow did without keyBuckets) is refused in Spark's words rather than read as
    buckets. The keys are BIGINTs none of which is a bucket number, so read as buckets no state would
    have met its key and every window would have started afresh; with keyBuckets="per key" the
    query goes on. Oracle: the batch evaluator over all rows."""
    rng = np.random.default_rng(17)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    schema = SCHEMA.replace("k INT", "k BIGINT")
    calls = ("x - lag(x) OVER (ORDER BY ts) AS diff", "avg(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS a")

    def rows(start_s):
        return [dict(r, k=1_000_000 + r["k"]) for r in _rows(rng, 120, start_s, keys=40)]

    first, second = rows(0), rows(400)

    def state_rows(q):
        return max(op.numRowsTotal for p in q.recentProgress for op in p.stateOperators)

    _write(src, first, 0)
    per_key = _start(spark, src, chk, out, calls, schema=schema, buckets="per key")
    assert state_rows(per_key) == len({r["k"] for r in first})
    _write(src, second, 1)
    with pytest.raises(Exception, match="STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE|StateSchemaNotCompatible"):
        _start(spark, src, chk, out, calls, schema=schema)
    _start(spark, src, chk, out, calls, schema=schema, buckets="per key")
    closed, expected = _expected(first + second, calls)
    _assert_matches(_emitted(spark, out), closed, expected, ("diff", "a"))

    # a new checkpoint chooses buckets, also for a key spelled in another case (as Spark resolves it)
    import pyspark.sql.functions as F

    for n, key in enumerate(["k", F.col("K")]):
        chk2, out2 = str(tmp_path / f"chk{n + 2}"), str(tmp_path / f"out{n + 2}")
        chosen = _start(spark, src, chk2, out2, calls, schema=schema, key=key, maxFilesPerTrigger=1)
        assert 0 < state_rows(chosen) < len({r["k"] for r in first + second})
        _assert_matches(_emitted(spark, out2), closed, expected, ("diff", "a"))


def test_chosen_buckets_follow_the_shuffle_and_a_checkpoint_keeps_its_own(spark, tmp_path):
    """keyBuckets not given: 16 buckets on the tests' 2 shuffle partitions, 64 on 8. Spark keeps a
    checkpoint's partitions whatever the session says later, so a checkpoint started on 16 buckets
    and restarted with 8 partitions set (where 64 would be chosen and the keys hashed anew) is
    refused in Spark's words, as is one started on 64 and restarted with 2, and goes on with the
    partitions it was started with. Oracle: the batch evaluator over all rows."""
    rng = np.random.default_rng(23)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    calls = ("x - lag(x) OVER (ORDER BY ts) AS diff", "count(*) OVER (ORDER BY ts ROWS 2 PRECEDING) AS n")
    first, second = _rows(rng, 120, 0, keys=40), _rows(rng, 120, 400, keys=40)

    def state_rows(q):
        return max(op.numRowsTotal for p in q.recentProgress for op in p.stateOperators)

    _write(src, first, 0)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert 0 < state_rows(_start(spark, src, chk, out, calls)) <= 16
    _write(src, second, 1)
    spark.conf.set("spark.sql.shuffle.partitions", "8")
    try:
        with pytest.raises(Exception, match="STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE|StateSchemaNotCompatible"):
            _start(spark, src, chk, out, calls)
        chk8, out8 = str(tmp_path / "chk8"), str(tmp_path / "out8")
        assert 16 < state_rows(_start(spark, src, chk8, out8, calls, maxFilesPerTrigger=1)) <= 64
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    closed, expected = _expected(first + second, calls)
    _assert_matches(_emitted(spark, out8), closed, expected, ("diff", "n"))
    third = _rows(rng, 40, 800, keys=40)
    _write(src, third, 2)  # and the other way: started on 64 buckets, now 2 partitions
    with pytest.raises(Exception, match="STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE|StateSchemaNotCompatible"):
        _start(spark, src, chk8, out8, calls)
    _start(spark, src, chk, out, calls)
    closed, expected = _expected(first + second + third, calls)
    _assert_matches(_emitted(spark, out), closed, expected, ("diff", "n"))


def test_seed_examples_price_diff_and_previous_orders(spark, tmp_path):
    # RisingWave's OverWindow article: price - LAG(price) per stock, AVG(amount) of the 10 previous orders
    rng = np.random.default_rng(2)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    schema = "stock_id STRING, event_time TIMESTAMP, order_id BIGINT, price DOUBLE, amount DOUBLE"
    rows = []
    for b in range(3):
        batch = []
        for i in range(60):
            sec = b * 300 + i * 4 + int(rng.integers(0, 3))
            batch.append(
                {
                    "stock_id": f"S{int(rng.integers(0, 4))}",
                    "event_time": f"2024-03-01T10:{sec // 60:02d}:{sec % 60:02d}",
                    "order_id": b * 1000 + i,
                    "price": round(float(100 + rng.normal() * 5), 2),
                    "amount": round(float(rng.uniform(1, 500)), 2),
                }
            )
        rows += batch
        _write(src, batch, b)
    calls = (
        "price - lag(price) OVER (ORDER BY event_time) AS price_diff",
        "avg(amount) OVER (ORDER BY event_time ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) "
        "AS recent_10_orders_avg_amount",
    )
    _start(
        spark,
        src,
        chk,
        out,
        calls,
        schema=schema,
        key="stock_id",
        time_col="event_time",
        row_key="order_id",
        delay="5 minutes",
        maxFilesPerTrigger=1,
    )
    closed, expected = _expected(
        rows, calls, key="stock_id", time_col="event_time", row_key="order_id", delay_s=300
    )
    _assert_matches(
        _emitted(spark, out),
        closed,
        expected,
        ("price_diff", "recent_10_orders_avg_amount"),
        row_key="order_id",
    )


def test_seed_example_three_frames_and_lead(spark, tmp_path):
    # SUM(x) ROWS 1 PRECEDING, SUM(x) ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING, LEAD(x, 1); 5 minute watermark
    rng = np.random.default_rng(4)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    schema = "p INT, ts TIMESTAMP, id BIGINT, x DOUBLE"
    rows = []
    for b in range(3):
        batch = [
            {
                "p": int(rng.integers(0, 3)),
                "ts": f"2024-03-01T{(b * 1200 + i * 30) // 3600:02d}:{(b * 1200 + i * 30) // 60 % 60:02d}:00",
                "id": b * 1000 + i,
                "x": float(rng.integers(0, 100)),
            }
            for i in range(30)
        ]
        rows += batch
        _write(src, batch, b)
        _start(
            spark,
            src,
            chk,
            out,
            (
                "sum(x) OVER (ORDER BY ts ROWS 1 PRECEDING) AS s_prev",
                "sum(x) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS s_next",
                "lead(x, 1) OVER (ORDER BY ts) AS nxt",
            ),
            schema=schema,
            key="p",
            row_key="id",
            delay="5 minutes",
        )
    calls = (
        "sum(x) OVER (ORDER BY ts ROWS 1 PRECEDING) AS s_prev",
        "sum(x) OVER (ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS s_next",
        "lead(x, 1) OVER (ORDER BY ts) AS nxt",
    )
    closed, expected = _expected(rows, calls, key="p", row_key="id", ahead=1, delay_s=300)
    _assert_matches(_emitted(spark, out), closed, expected, ("s_prev", "s_next", "nxt"), row_key="id")


def test_a_session_time_zone_other_than_utc_is_refused_utc_equals_batch(spark, rocksdb, chained, tmp_path):
    """Spark hands a stream's timestamps to Python as wall-clock times of the session time zone: in
    America/New_York 05:10Z and 06:05Z on 2024-11-03 are 01:10 and 01:05, so lag went out of order,
    a carried ts moved by an hour, and a RANGE INTERVAL 1 HOUR frame across the spring change
    counted one row too few; under a fixed offset such as -05:00 a timestamp's seconds since 1970
    were read off the wall clock. A zone other than UTC is refused before the query starts (per
    key, on buckets, for windows over several ORDER BYs); TIMESTAMP_NTZ columns, which reach Python
    unconverted, are not; in UTC the same rows equal Spark's batch."""
    import datetime as dt

    import pyarrow.parquet as pq

    utc = dt.timezone.utc
    instants = [
        (2024, 11, 3, 5, 10),
        (2024, 11, 3, 6, 5),
        (2024, 11, 3, 6, 50),
        (2024, 3, 10, 6, 30),
        (2024, 3, 10, 7, 15),
    ]
    table = pa.table(
        {
            "k": ["a", "a", "a", "b", "b"],
            "ts": pa.array([dt.datetime(*i, tzinfo=utc) for i in instants], pa.timestamp("us", tz="UTC")),
            "x": [1.0, 2.0, 3.0, 4.0, 5.0],
            "rid": [1, 2, 3, 4, 5],
        }
    )
    (tmp_path / "src").mkdir()
    pq.write_table(table, str(tmp_path / "src" / "p.parquet"))
    calls = [
        "lag(x) OVER (ORDER BY ts) AS prev",
        "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 1 HOUR PRECEDING AND CURRENT ROW) AS n1h",
    ]
    before = spark.conf.get("spark.sql.session.timeZone")
    try:
        schema = spark.read.parquet(str(tmp_path / "src")).schema
        stream = (
            spark.readStream.schema(schema).parquet(str(tmp_path / "src")).withWatermark("ts", "0 seconds")
        )
        for zone, buckets in (("-05:00", "per key"), ("America/New_York", None), ("America/New_York", 4)):
            spark.conf.set("spark.sql.session.timeZone", zone)
            with pytest.raises(WindowSpecError, match=f"{zone}.*UTC"):
                stream.groupBy("k").overWindow(
                    overwindow.OverWindow(*calls, rowKey="rid", keyBuckets=buckets)
                )
        with pytest.raises(WindowSpecError, match="America/New_York"):
            w = "PARTITION BY k ORDER BY ts"
            overwindow.select(
                stream, "*", f"lag(x) OVER ({w}) AS p", "lag(x) OVER (PARTITION BY rid ORDER BY ts) AS r"
            )

        # TIMESTAMP_NTZ reaches Python unconverted: no refusal
        naive = spark.readStream.schema(schema).parquet(str(tmp_path / "src"))
        naive = naive.selectExpr("k", "CAST(ts AS TIMESTAMP_NTZ) AS ts", "x", "rid")
        naive.groupBy("k").overWindow(overwindow.OverWindow(calls[0], rowKey="rid", emit="on_update"))

        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.read.parquet(str(tmp_path / "src")).createOrReplaceTempView("ow_tz_batch")
        windows = ", ".join(c.replace("ORDER BY", "PARTITION BY k ORDER BY") for c in calls)
        want = [
            tuple(r) for r in spark.sql(f"SELECT rid, ts, {windows} FROM ow_tz_batch ORDER BY rid").collect()
        ]
        out = stream.groupBy("k").overWindow(overwindow.OverWindow(*calls, rowKey="rid"))
        q = (
            out.writeStream.format("memory")
            .queryName("ow_tz_stream")
            .outputMode("append")
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        got = [
            tuple(r) for r in spark.sql("SELECT rid, ts, prev, n1h FROM ow_tz_stream ORDER BY rid").collect()
        ]
        assert got == want
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_missing_watermark_is_refused_when_the_query_is_built(spark, tmp_path):
    src = str(tmp_path / "src")
    os.makedirs(src)
    events = spark.readStream.schema(SCHEMA).json(src)
    with pytest.raises(WindowSpecError, match="watermark on the ORDER BY column `ts`"):
        events.groupBy("k").overWindow(overwindow.OverWindow("lag(x) OVER (ORDER BY ts) AS p"))


def test_a_numeric_order_by_on_window_close_is_pointed_to_emit_on_update(spark, tmp_path):
    """Issue 40, item 15: the refusal advised withWatermark on a DOUBLE column, which Spark refuses."""
    events = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    events.createOrReplaceTempView("ow_numeric_order")
    query = "SELECT k, x, sum(x) OVER (PARTITION BY k ORDER BY x ROWS 2 PRECEDING) AS s FROM ow_numeric_order"
    said = (
        "emit on window close needs a watermark on the ORDER BY column `x`, and Spark puts one only on a "
        'TIMESTAMP column (`x` is DOUBLE): use emit="on_update", which needs none'
    )
    with pytest.raises(WindowSpecError, match=re.escape(said)):
        overwindow.sql(spark, query)
    with pytest.raises(AnalysisException):  # what the advice was before: Spark refuses it
        events.withWatermark("x", "1 minute")
    assert overwindow.sql(spark, query, emit="on_update").isStreaming  # the way on


def test_without_group_by_the_stream_is_one_partition(spark, tmp_path):
    rng = np.random.default_rng(8)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    rows = _rows(rng, 30, 0) + _rows(rng, 30, 100)
    _write(src, rows, 0)
    events = spark.readStream.schema(SCHEMA).json(src).withWatermark("ts", "10 seconds")
    result = events.overWindow(
        overwindow.OverWindow("sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s", rowKey="rid")
    )
    assert result.columns == ["k", "ts", "rid", "x", "s"]
    q = (
        result.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    for r in rows:
        r["all"] = 0
    closed, expected = _expected(rows, ("sum(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS s",), key="all")
    _assert_matches(_emitted(spark, out), closed, expected, ("s",))


def test_decimal_values_come_back_as_decimals(spark, tmp_path):
    """A DECIMAL(12,2) price: lag, max and sum come back in the types Spark's own window functions
    give them (DECIMAL(12,2), DECIMAL(12,2), DECIMAL(22,2)), with exactly the batch evaluator's
    values over the same rows as decimals."""
    from decimal import Decimal

    rng = np.random.default_rng(13)
    src, chk, out = (str(tmp_path / d) for d in ("src", "chk", "out"))
    os.makedirs(src)
    rows = _rows(rng, 30, 0) + _rows(rng, 30, 100)
    for r in rows:
        r["price"] = round(float(rng.uniform(-1e9, 1e9)), 2)
        del r["x"]
    _write(src, rows, 0)
    calls = (
        "lag(price) OVER (ORDER BY ts) AS prev",
        "max(price) OVER (ORDER BY ts ROWS 2 PRECEDING) AS hi",
        "sum(price) OVER (ORDER BY ts ROWS 2 PRECEDING) AS s",
    )
    schema = "k INT, ts TIMESTAMP, rid BIGINT, price DECIMAL(12,2)"
    _start(spark, src, chk, out, calls, schema=schema)
    types = dict(spark.read.parquet(out).dtypes)
    sparks = dict(  # Spark's own result types for the same calls (analysis only: no rows)
        spark.createDataFrame([], schema)
        .selectExpr(*(c.replace("OVER (", "OVER (PARTITION BY k ") for c in calls))
        .dtypes
    )
    assert [types[c] for c in ("prev", "hi", "s")] == [sparks[c] for c in ("prev", "hi", "s")]
    emitted = _emitted(spark, out).set_index("rid").sort_index()
    closed, _ = _expected([dict(r, x=r["price"]) for r in rows], ("sum(x) OVER (ORDER BY ts) AS s",))
    assert set(emitted.index) == closed
    table = pa.Table.from_pylist([dict(r, price=Decimal(f"{r['price']:.2f}")) for r in rows])
    table = table.set_column(table.schema.get_field_index("ts"), "ts", table["ts"].cast(pa.timestamp("us")))
    table = table.set_column(
        table.schema.get_field_index("price"), "price", table["price"].cast(pa.decimal128(12, 2))
    )
    batch = overwindow.evaluate(
        table.sort_by([("ts", "ascending"), ("rid", "ascending")]),
        *overwindow.OverWindow(*calls, rowKey="rid").partitioned(("k",)),
    ).to_pandas()
    want = batch.set_index("rid").loc[emitted.index]
    for col in ("prev", "hi", "s"):
        assert emitted[col].tolist() == want[col].tolist(), col
