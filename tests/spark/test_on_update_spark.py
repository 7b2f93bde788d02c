"""Emit on update end to end on Spark: a CDC stream of inserts, updates and deletes as JSON files,
applied by foreachBatch to a table keyed by (partition key, row key). After every run (each a restart
from the checkpoint) the table equals the batch evaluator over the live rows. Both state layouts:
whole (applyInPandasWithState) and chunked (transformWithStateInPandas on the RocksDB state store),
and both layouts on buckets of keys (keyBuckets: one group and one call per bucket, NULL keys among
them)."""

import json
import os
import time

import numpy as np
import pyarrow as pa
import pytest

import overwindow
from overwindow.errors import WindowSpecError

SCHEMA = "k INT, id BIGINT, t BIGINT, x DOUBLE, op STRING"
CALLS = (
    "sum(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s",
    "rank() OVER (ORDER BY t) AS r",
    "avg(x) OVER (ORDER BY t RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS a",
    "lag(x) OVER (ORDER BY t) AS l",
)


def _write(folder, rows, n):
    path = os.path.join(folder, f"part-{n:04d}.json")
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    t = time.time() + n
    os.utime(path, (t, t))


# a partition key's values by its type: NULL among them, and for DOUBLE NaN, -0.0 and 0.0 (one
# partition, as Spark groups them)
KEY_VALUES = {"INT": [None, 1, 2, 3, 4, 5, 6], "DOUBLE": [None, float("nan"), -0.0, 0.0, 1.5]}


def _key(k):
    """A partition key as one partition's rows share it (NaN as one value, -0.0 as 0.0)."""
    return "NaN" if isinstance(k, float) and np.isnan(k) else (k + 0.0 if isinstance(k, float) else k)


@pytest.mark.parametrize(
    "layout, key_type",
    [
        ("whole", "INT"),
        ("chunked", "INT"),
        ("bucketed", "INT"),
        ("chunked, bucketed", "INT"),
        ("whole", "DOUBLE"),
        ("chunked", "DOUBLE"),
        ("whole, computed", "DOUBLE"),  # grouped by k * 1.0, which keeps the sign of a zero
        ("chunked, computed", "DOUBLE"),  # ... a hidden key column of the machine's input
        ("bucketed, computed", "DOUBLE"),
    ],
)
def test_cdc_view_with_restarts_equals_batch_over_live_rows(spark, tmp_path, layout, key_type, request):
    """Emit on update over changes, restarted every batch: the view kept from the changelog equals the
    batch evaluator over the live rows, NULL keys included (and NaN, -0.0 and 0.0 keys of a DOUBLE
    column). The chunked layout per key once stepped each row of a NULL INT key on its own, on
    another key's state (PySpark regroups rows by the keys' pandas values, where NULL is NaN); a
    state per key grouped by a computed DOUBLE key once split -0.0 from 0.0, and the chunked layout
    and buckets refused a computed key (their machines tell keys apart by columns: it is now one)."""
    import pyspark.sql.functions as F

    chunked, bucketed = "chunked" in layout, "bucketed" in layout
    if chunked:
        request.getfixturevalue("rocksdb")
    # rank() numbers rows from the partition's start: the chunked layout refuses it
    calls = [c for c in CALLS if not chunked or " AS r" not in c]
    values = KEY_VALUES[key_type][: 7 if bucketed else 5]
    names = [c.rsplit(" AS ", 1)[1] for c in calls]
    rng = np.random.default_rng(9)
    src, chk = str(tmp_path / "src"), str(tmp_path / "chk")
    os.makedirs(src)
    view: dict = {}
    live: dict = {}
    next_id = 0

    def apply(batch_df, batch_id):
        for r in (row.asDict() for row in batch_df.collect()):  # NULL keys stay None
            if r["_change"] == "delete":
                view.pop((_key(r["k"]), r["id"]), None)
            else:
                view[(_key(r["k"]), r["id"])] = r

    for b in range(4):
        rows = []
        for _ in range(40):
            if rng.random() < 0.7 or not live:
                row = {
                    "k": values[int(rng.integers(0, len(values)))],
                    "id": next_id,
                    "t": int(rng.integers(0, 50)),
                    "x": float(rng.integers(0, 100)),
                    "op": "insert",
                }
                next_id += 1
            else:
                old = live[list(live)[int(rng.integers(0, len(live)))]]
                row = (
                    dict(old, op="delete")
                    if rng.random() < 0.5
                    else dict(old, t=int(rng.integers(0, 50)), op="update")
                )
            rows.append(dict(row, seq=len(rows)))  # its place in the file: sourceOrder
            if row["op"] == "delete":
                live.pop((_key(row["k"]), row["id"]), None)
            else:
                live[(_key(row["k"]), row["id"])] = {c: row[c] for c in ("k", "id", "t", "x")}
        _write(src, rows, b)
        events = spark.readStream.schema(SCHEMA.replace("k INT", f"k {key_type}") + ", seq INT").json(src)
        spec = overwindow.OverWindow(
            *calls,
            emit="on_update",
            rowKey="id",
            opColumn="op",
            sourceOrder=["seq"],  # a row's changes in a batch (Spark hands a key's rows in no set order)
            stateLayout="chunked" if chunked else "whole",
            keyBuckets=3 if bucketed else "per key",
        )
        q = (
            events.groupBy(F.col("k") * 1.0 if "computed" in layout else "k")
            .overWindow(spec)
            .writeStream.foreachBatch(apply)
            .option("checkpointLocation", chk)
            .outputMode("update")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()

        assert set(view) == set(live)
        table = pa.Table.from_pylist(list(live.values()))
        batch = overwindow.evaluate(
            table.sort_by([("t", "ascending"), ("id", "ascending")]),
            *overwindow.OverWindow(*calls, emit="on_update", rowKey="id").partitioned(("k",)),
        )
        for r in batch.to_pylist():
            got = view[(_key(r["k"]), r["id"])]
            for name in names:
                want = r[name]
                if want is None:
                    assert got[name] is None or np.isnan(got[name])
                else:
                    assert got[name] == pytest.approx(want, rel=1e-9), (name, r)


def test_a_checkpoint_grouped_by_a_double_key_itself_runs_on_with_zeros_grouped_as_one(
    spark, tmp_path, monkeypatch
):
    """A state per key over a DOUBLE key started as the releases before grouped it (by the key itself,
    -0.0 apart from 0.0) runs on where the key's -0.0 is grouped as 0.0 (grouping.key_grouping, as
    the adapter calls it): the grouping key keeps its type, which is all Spark's state schema check
    compares, and the view is exact for the key that held only 0.0 rows before."""
    from overwindow.spark import adapter

    src, chk = str(tmp_path / "src"), str(tmp_path / "chk")
    os.makedirs(src)
    view: dict = {}

    def run():
        spec = overwindow.OverWindow(
            CALLS[0], emit="on_update", rowKey="id", opColumn="op", keyBuckets="per key"
        )
        q = (
            spark.readStream.schema(SCHEMA.replace("k INT", "k DOUBLE"))
            .json(src)
            .groupBy("k")
            .overWindow(spec)
            .writeStream.foreachBatch(lambda df, i: view.update({r.id: r.s for r in df.collect()}))
            .option("checkpointLocation", chk)
            .outputMode("update")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()

    first = [{"k": 0.0, "id": i, "t": i, "x": float(i), "op": "insert"} for i in range(3)]
    _write(src, first, 0)
    with monkeypatch.context() as m:
        m.setattr(adapter, "key_grouping", lambda df, grouped, names: grouped)  # as before
        run()
    _write(src, [{"k": -0.0, "id": 3, "t": 3, "x": 3.0, "op": "insert"}], 1)
    run()
    assert view == {0: 0.0, 1: 1.0, 2: 3.0, 3: 6.0}  # x over ROWS 2 PRECEDING, ids 0-3 in one partition


def test_a_chunked_checkpoint_started_per_key_is_refused_on_buckets(spark, tmp_path, rocksdb):
    """Keys 0-2 ran per key (grouped by the keys' hash beside a BINARY marker); the same checkpoint on
    3 buckets groups by the BIGINT bucket numbers 0-2: Spark's state schema check refuses the other
    grouping key, so no key's state is read as a bucket's (nor a bucket read empty)."""
    src, chk = str(tmp_path / "src"), str(tmp_path / "chk")
    os.makedirs(src)
    rows = [{"k": i % 3, "id": i, "t": i, "x": 1.0, "op": "insert"} for i in range(9)]

    def run(buckets):
        spec = overwindow.OverWindow(
            CALLS[0], emit="on_update", rowKey="id", opColumn="op", stateLayout="chunked", keyBuckets=buckets
        )
        q = (
            spark.readStream.schema(SCHEMA.replace("k INT", "k BIGINT"))
            .json(src)
            .groupBy("k")
            .overWindow(spec)
            .writeStream.foreachBatch(lambda df, i: df.collect())
            .option("checkpointLocation", chk)
            .outputMode("update")
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()

    _write(src, rows[:6], 0)
    run("per key")
    _write(src, rows[6:], 1)
    refused = r"(?s)STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE.*__overwindow_key_hash.*__overwindow_per_key"
    with pytest.raises(Exception, match=refused):
        run(3)


def test_chunked_layout_needs_the_rocksdb_state_store(spark, tmp_path):
    events = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    spec = overwindow.OverWindow(CALLS[0], emit="on_update", rowKey="id", stateLayout="chunked")
    with pytest.raises(WindowSpecError, match="RocksDB state store: spark.conf.set"):
        events.groupBy("k").overWindow(spec)


def test_the_progress_line_counts_the_machines_late_rows_and_unknown_updates(spark, tmp_path):
    """A change 17 minutes below the watermark, on a running total (which never evicts), is dropped
    by the machine, and the progress line's late count has it beside Spark's; an update of a row
    never inserted is counted there too, and a change with no known op is set aside and counted.
    (Spark drops nothing before an emit-on-update machine.)"""
    from overwindow.pipeline.progress import ProgressPrinter

    src, chk = tmp_path / "src", tmp_path / "chk"
    src.mkdir()
    first = [
        {"k": "a", "id": i, "t": f"2024-01-01T10:{2 * i:02d}:00", "x": 1.0, "op": "insert"} for i in range(11)
    ]
    late = {"k": "a", "id": 50, "t": "2024-01-01T10:02:30", "x": 100.0, "op": "insert"}
    unknown = {"k": "a", "id": 99, "t": "2024-01-01T10:30:00", "x": 2.0, "op": "update"}
    no_op = {"k": "a", "id": 98, "t": "2024-01-01T10:31:00", "x": 3.0, "op": "upsert!"}
    _write(str(src), first, 0)
    _write(str(src), [late, unknown, no_op], 1)
    df = (
        spark.readStream.schema("k STRING, id BIGINT, t TIMESTAMP, x DOUBLE, op STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(src))
        .withWatermark("t", "1 minute")
    )
    spec = overwindow.OverWindow(
        "sum(x) OVER (ORDER BY t) AS s", emit="on_update", rowKey="id", opColumn="op"
    )
    out = df.groupBy("k").overWindow(spec)
    lines, got = [], {}

    class Lines:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    def write(batch, batch_id):
        got.update((r["id"], r["s"]) for r in batch.collect())

    # every line printed after both batches have run: each takes its own batch's counts (taken when
    # a line is printed, batch 0's line had batch 1's)
    printer = ProgressPrinter({}, stream=Lines(), counts=out.overwindow_counts)
    query = (
        out.writeStream.foreachBatch(write)
        .outputMode("update")
        .option("checkpointLocation", str(chk))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    printer.poll(query)
    batch0 = [line for line in lines if line.startswith("batch 0:")]
    assert len(batch0) == 1 and ", 0 late," in batch0[0] and "unknown" not in batch0[0], lines
    batch1 = [line for line in lines if line.startswith("batch 1:")]
    assert len(batch1) == 1 and ", 1 late," in batch1[0] and "1 updates of unknown rows" in batch1[0], lines
    assert "1 rows set aside" in batch1[0], lines  # the change with no known op
    assert (
        50 not in got and 98 not in got and got[99] == 13.0
    )  # the late row is in no sum; the update became an insert
