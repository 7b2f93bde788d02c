"""The costs that decide how to host many keys per Python call (issue 19), each measured alone.

    python benchmarks/hosting_costs.py ipc        # Arrow IPC: many small per-key values vs one large
    python benchmarks/hosting_costs.py calls      # per-group fixed cost of the two stateful operators
    python benchmarks/hosting_costs.py state      # transformWithStateInPandas state calls, per call and byte
    python benchmarks/hosting_costs.py timers     # event-time timers / timeouts firing for many groups
    python benchmarks/hosting_costs.py all        # the four, one Spark session

- ``ipc`` (no Spark): per-key state blobs of ``--rows-per-key`` rows (``ts``, ``rid``, ``x``) for
  ``--keys`` keys, decoded into one table and encoded back, as a bucket of keys would: one Arrow IPC
  stream per key (what overwindow's ``streaming.state`` writes), one IPC record-batch message per key
  read against a schema kept once (``pa.ipc.read_record_batch``), raw fixed-width bytes per key
  (``np.frombuffer``), and one IPC stream holding every key's rows (a whole-bucket value).
- ``calls``: one micro-batch of ``--rows`` rows through a no-op ``applyInPandasWithState`` (state one
  byte per group) and a no-op ``transformWithStateInPandas`` (no state call at all; and one that
  reads and writes a one-byte ValueState, as overwindow's would), grouped into 2 .. 100,000 groups;
  the ``addBatch`` time of the micro-batch, best of ``--repeat``. The growth with the group count over
  the 2-group run is the per-group cost. Then the Python side of the same work replayed in this
  process (pyspark's own per-group conversions, no JVM), to say how much of it is Python.
- ``state``: inside one ``transformWithStateInPandas`` call (RocksDB), each state operation repeated
  and timed in the worker: ValueState exists/get/update, MapState updateValue/getValue/containsKey/
  removeKey and iteration, ListState put/get/appendValue/appendList, registerTimer/listTimers/
  deleteTimer; values of 16 B to 256 KB.
- ``timers``: G groups each set an event-time timer (``transformWithStateInPandas`` registerTimer)
  or an event-time timeout (``applyInPandasWithState`` setTimeoutTimestamp) in one micro-batch; a
  later micro-batch moves the watermark past all of them, and the no-data micro-batch that follows
  calls every group: its duration against G.

Results print as Markdown tables (copied by hand into docs/benchmarks/many-keys.md, "Hosting many keys
per call").
Starts a JVM: run it when no other Spark job runs on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import spark_session  # noqa: E402

T0_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z


def table(rows: list[list], head: list[str]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# -- IPC: many small values vs one large ------------------------------------------------------------


def bench_ipc(keys: int, rows_per_key: int, repeat: int) -> str:
    from overwindow.streaming.state import decode, encode

    rng = np.random.default_rng(1)
    n = keys * rows_per_key
    big = pa.table(
        {
            "ts": pa.array(T0_US + np.arange(n) * 1000, pa.timestamp("us")),
            "rid": np.arange(n, dtype=np.int64),
            "x": rng.normal(size=n),
        }
    )
    schema = big.schema
    slices = [big.slice(i * rows_per_key, rows_per_key) for i in range(keys)]
    dtype = np.dtype([("ts", "<i8"), ("rid", "<i8"), ("x", "<f8")])

    def stream_bytes(t):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        return sink.getvalue().to_pybytes()

    per_key_stream = [stream_bytes(t) for t in slices]
    per_key_ow = [encode({"rows": t}, {"n": 0}, "bench") for t in slices]
    per_key_batch = [t.to_batches()[0].serialize().to_pybytes() for t in slices]
    recs = np.empty(n, dtype)
    recs["ts"], recs["rid"], recs["x"] = big.column("ts").cast(pa.int64()).to_numpy(), big["rid"], big["x"]
    per_key_raw = [recs[i * rows_per_key : (i + 1) * rows_per_key].tobytes() for i in range(keys)]
    one_stream = stream_bytes(big)

    def best(fn):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    def dec_stream():
        pa.concat_tables([pa.ipc.open_stream(b).read_all() for b in per_key_stream])

    def enc_stream():
        [stream_bytes(t) for t in slices]

    def dec_ow():
        pa.concat_tables([decode(b, "bench")[0]["rows"] for b in per_key_ow])

    def enc_ow():
        [encode({"rows": t}, {"n": 0}, "bench") for t in slices]

    def dec_batch():
        pa.Table.from_batches([pa.ipc.read_record_batch(pa.py_buffer(b), schema) for b in per_key_batch])

    def enc_batch():
        [b.serialize().to_pybytes() for b in (t.to_batches()[0] for t in slices)]

    def dec_raw():
        a = np.frombuffer(b"".join(per_key_raw), dtype)
        pa.table({"ts": pa.array(a["ts"], pa.timestamp("us")), "rid": a["rid"], "x": a["x"]})

    def enc_raw():
        a = np.empty(n, dtype)
        a["ts"] = big.column("ts").cast(pa.int64()).to_numpy()
        a["rid"], a["x"] = big["rid"].to_numpy(), big["x"].to_numpy()
        b = a.tobytes()
        size = rows_per_key * dtype.itemsize
        [b[i * size : (i + 1) * size] for i in range(keys)]

    def dec_one():
        pa.ipc.open_stream(one_stream).read_all()

    def enc_one():
        stream_bytes(big)

    rows = []
    for name, dec, enc, size in [
        ("one IPC stream per key (pa.ipc.new_stream)", dec_stream, enc_stream, len(per_key_stream[0])),
        ("overwindow state.encode/decode per key", dec_ow, enc_ow, len(per_key_ow[0])),
        ("one IPC record batch per key, schema kept once", dec_batch, enc_batch, len(per_key_batch[0])),
        ("raw fixed-width records per key (np.frombuffer)", dec_raw, enc_raw, len(per_key_raw[0])),
        ("one IPC stream of all keys' rows", dec_one, enc_one, len(one_stream)),
    ]:
        d, e = best(dec), best(enc)
        per = keys if "all keys" not in name else 1
        rows.append(
            [
                name,
                f"{size:,}",
                f"{d * 1e3:.1f}",
                f"{e * 1e3:.1f}",
                f"{d / keys * 1e6:.1f}",
                f"{e / keys * 1e6:.1f}",
            ]
        )
        print(name, d, e, per, flush=True)
    return f"{keys:,} keys x {rows_per_key} rows (ts, rid, x: {n:,} rows), best of {repeat}:\n\n" + table(
        rows,
        ["encoding", "bytes per value", "decode all ms", "encode all ms", "decode us/key", "encode us/key"],
    )


# -- Spark helpers ------------------------------------------------------------------------------------


def write_files(folder: Path, tables: list[pa.Table]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    now = time.time()
    for i, t in enumerate(tables):
        path = folder / f"part-{i:04d}.parquet"
        pq.write_table(t, path)
        os.utime(path, (now - len(tables) + i, now - len(tables) + i))


def rows_table(n: int, groups: int, ts_us: int | np.ndarray = T0_US) -> pa.Table:
    i = np.arange(n, dtype=np.int64)
    ts = np.broadcast_to(np.asarray(ts_us, dtype=np.int64), (n,))
    return pa.table(
        {
            "k": (i % groups).astype(np.int32),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "rid": i,
            "x": np.ones(n),
        }
    )


SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"


def run(df, mode: str, chk: Path, sink=None) -> list:
    """Runs a streaming DataFrame to the end of its input (availableNow); returns its progress."""
    shutil.rmtree(chk, ignore_errors=True)
    w = df.writeStream.option("checkpointLocation", str(chk)).outputMode(mode).trigger(availableNow=True)
    w = w.foreachBatch(sink) if sink is not None else w.format("noop")
    q = w.start()
    q.awaitTermination()
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return q.recentProgress


def aipws_noop(grouped, schema, timeout_ms: int | None = None):
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType

    def fn(key, pdfs, state):
        if state.hasTimedOut:
            state.remove()
            return
        yield from pdfs
        state.update((b"\x00",))
        if timeout_ms is not None:
            state.setTimeoutTimestamp(timeout_ms)

    timeout = GroupStateTimeout.EventTimeTimeout if timeout_ms is not None else GroupStateTimeout.NoTimeout
    st = StructType([StructField("s", BinaryType(), False)])
    return grouped.applyInPandasWithState(fn, schema, st, "append" if timeout_ms else "update", timeout)


def tws_noop(grouped, schema, state: bool, timer_ms: int | None = None):
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, StructField, StructType

    class NoOp(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.held = handle.getValueState("held", StructType([StructField("v", BinaryType())]))

        def handleInputRows(self, key, rows, timerValues):
            if state:
                self.held.get()
                self.held.update((b"\x00",))
            if timer_ms is not None:
                self.handle.registerTimer(timer_ms)
            yield from rows

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            return iter([])

        def close(self):
            pass

    return grouped.transformWithStateInPandas(
        NoOp(), schema, "Append" if timer_ms else "Update", "EventTime" if timer_ms else "None"
    )


# -- per-group fixed cost ---------------------------------------------------------------------------


def bench_calls(spark, work: Path, rows: int, groups: list[int], repeat: int) -> str:
    from overwindow.spark.adapter import use_rocksdb

    use_rocksdb(spark)
    variants = {
        "applyInPandasWithState": lambda g, s: aipws_noop(g, s),
        "transformWithStateInPandas, no state call": lambda g, s: tws_noop(g, s, False),
        "transformWithStateInPandas, ValueState get+update": lambda g, s: tws_noop(g, s, True),
    }
    results: dict[str, dict[int, list[float]]] = {v: {} for v in variants}
    for g in groups:
        src = work / f"calls-{g}"
        write_files(src, [rows_table(rows, g)])
    for r in range(repeat + 1):  # the first round warms up
        for g in groups:
            for name, make in variants.items():
                events = spark.readStream.schema(SCHEMA).parquet(str(work / f"calls-{g}"))
                df = make(events.groupBy("k"), events.schema)
                prog = run(df, "update", work / "chk")
                data = [p for p in prog if p.numInputRows > 0]
                add = data[0].durationMs["addBatch"] / 1000
                if r:
                    results[name].setdefault(g, []).append(add)
                print(f"calls round {r} {name} groups {g}: addBatch {add:.3f} s", flush=True)
    py = python_side(rows, groups)
    out = []
    for name, per in results.items():
        base = min(per[groups[0]])
        for g in groups:
            b = min(per[g])
            per_group = (b - base) / (g - groups[0]) * 1e3 if g != groups[0] else float("nan")
            out.append(
                [
                    name,
                    f"{g:,}",
                    f"{b:.2f}",
                    ", ".join(f"{x:.2f}" for x in per[g]),
                    "" if g == groups[0] else f"{per_group:.3f}",
                    "" if g == groups[0] else f"{2 * per_group:.3f}",
                    py.get((name.split(",")[0], g), ""),
                ]
            )
    return (
        f"One micro-batch of {rows:,} rows (k, ts, rid, x), local[2], 2 shuffle partitions, RocksDB; "
        f"`addBatch` seconds, best of {repeat} (every run listed). Per group: (seconds - seconds at "
        f"{groups[0]} groups) / (groups - {groups[0]}); CPU per group is about twice the wall time (two "
        "tasks in parallel). Python side: the worker's own per-group work replayed in one process "
        "(pyspark's conversion code, the no-op function, the output conversion), total seconds.\n\n"
        + table(
            out,
            [
                "operator",
                "groups",
                "addBatch s",
                "every run",
                "wall ms per group",
                "CPU ms per group (x2)",
                "Python side alone, s",
            ],
        )
    )


def python_side(rows: int, groups: list[int]) -> dict:
    """The per-group Python work of both operators' workers, replayed without the JVM (one process):
    applyInPandasWithState converts each group's Arrow slice column by column and joins the columns
    with pd.concat, then converts the output frames back; transformWithStateInPandas (PySpark 4.3)
    walks every row with itertuples, builds each group's frame from the rows and converts each output
    frame back."""
    import pandas as pd
    from pyspark.sql.conversion import ArrowBatchTransformer

    out = {}
    for g in groups:
        t = rows_table(rows, g).sort_by("k")
        t = t.set_column(1, "ts", t.column("ts").cast(pa.timestamp("us")))
        batch = t.combine_chunks().to_batches()[0]
        k = batch.column(0).to_numpy()
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        ends = np.r_[starts[1:], len(k)]
        a = time.perf_counter()
        frames = []
        for s, e in zip(starts.tolist(), ends.tolist()):
            frames.append(
                pd.concat(ArrowBatchTransformer.to_pandas(batch.slice(s, e - s), timezone="UTC"), axis=1)
            )
        for i in range(0, len(frames), 1000):
            pa.RecordBatch.from_pandas(
                pd.concat(frames[i : i + 1000], ignore_index=True), preserve_index=False
            )
        out[("applyInPandasWithState", g)] = f"{time.perf_counter() - a:.2f}"
        import itertools

        a = time.perf_counter()
        data = pd.concat(ArrowBatchTransformer.to_pandas(batch, timezone="UTC"), axis=1)
        for _, grp in itertools.groupby(
            ((r[0], r) for r in data.itertuples(index=False)), key=lambda x: x[0]
        ):
            frame = pd.DataFrame([r for _, r in grp])
            pa.RecordBatch.from_pandas(frame, preserve_index=False)
        out[("transformWithStateInPandas", g)] = f"{time.perf_counter() - a:.2f}"
        print("python side", g, out[("applyInPandasWithState", g)], out[("transformWithStateInPandas", g)])
    return out


# -- state calls --------------------------------------------------------------------------------------


def state_processor(sizes: list[int], calls: int):
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    binary = StructType([StructField("v", BinaryType())])
    long_key = StructType([StructField("k", LongType())])

    class Probe(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.value = handle.getValueState("value", binary)
            self.map = handle.getMapState("map", long_key, binary)
            self.list = handle.getListState("list", binary)

        def handleInputRows(self, key, rows, timerValues):
            for _ in rows:
                pass
            out = []

            def timed(op, size, n, fn):
                t = time.perf_counter()
                fn()
                out.append((op, size, n, time.perf_counter() - t))

            for size in sizes:
                blob = bytes(size)
                n = max(20, min(calls, calls * 1024 // max(size, 1024)))
                timed("ValueState.update", size, n, lambda: [self.value.update((blob,)) for _ in range(n)])
                timed("ValueState.get", size, n, lambda: [self.value.get() for _ in range(n)])
                timed("ValueState.exists", size, n, lambda: [self.value.exists() for _ in range(n)])
                timed(
                    "MapState.updateValue",
                    size,
                    n,
                    lambda: [self.map.updateValue((i,), (blob,)) for i in range(n)],
                )
                timed("MapState.getValue", size, n, lambda: [self.map.getValue((i,)) for i in range(n)])
                timed(
                    "MapState.getValue (missing key)",
                    size,
                    n,
                    lambda: [self.map.getValue((-1 - i,)) for i in range(n)],
                )
                timed("MapState.containsKey", size, n, lambda: [self.map.containsKey((i,)) for i in range(n)])
                timed("MapState.iterator (per entry)", size, n, lambda: [x for x in self.map.iterator()])
                timed("MapState.keys (per entry)", size, n, lambda: [x for x in self.map.keys()])
                timed("MapState.removeKey", size, n, lambda: [self.map.removeKey((i,)) for i in range(n)])
                timed("ListState.put (per element)", size, n, lambda: self.list.put([(blob,)] * n))
                timed("ListState.get (per element)", size, n, lambda: [x for x in self.list.get()])
                timed(
                    "ListState.appendList (per element)", size, n, lambda: self.list.appendList([(blob,)] * n)
                )
                timed(
                    "ListState.appendValue",
                    size,
                    n,
                    lambda: [self.list.appendValue((blob,)) for _ in range(n)],
                )
                self.list.clear()
            n = calls
            timed(
                "registerTimer",
                0,
                n,
                lambda: [self.handle.registerTimer(T0_US // 1000 + 10**9 + i) for i in range(n)],
            )
            timed("listTimers (per timer)", 0, n, lambda: [x for x in self.handle.listTimers()])
            timed(
                "deleteTimer",
                0,
                n,
                lambda: [self.handle.deleteTimer(T0_US // 1000 + 10**9 + i) for i in range(n)],
            )
            yield pd.DataFrame(out, columns=["op", "size", "n", "seconds"])

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            return iter([])

        def close(self):
            pass

    return Probe()


def bench_state(spark, work: Path, sizes: list[int], calls: int, repeat: int) -> str:
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

    from overwindow.spark.adapter import use_rocksdb

    use_rocksdb(spark)
    out_schema = StructType(
        [
            StructField("op", StringType()),
            StructField("size", IntegerType()),
            StructField("n", LongType()),
            StructField("seconds", DoubleType()),
        ]
    )
    got: dict = {}
    for r in range(repeat):
        write_files(work / "state", [rows_table(1, 1)])
        events = spark.readStream.schema(SCHEMA).parquet(str(work / "state")).withWatermark("ts", "1 second")
        df = events.groupBy("k").transformWithStateInPandas(
            state_processor(sizes, calls), out_schema, "Append", "EventTime"
        )
        collected = []
        run(df, "append", work / "chk", lambda d, i: collected.extend(d.collect()))
        for row in collected:
            got.setdefault((row.op, row.size), []).append(row.seconds / row.n * 1e6)
        print(f"state round {r}: {len(collected)} rows", flush=True)
    ops = list(dict.fromkeys(op for op, _ in got))
    rows = []
    for op in ops:
        cells = [op]
        for s in sizes if op not in ("registerTimer", "listTimers (per timer)", "deleteTimer") else [0]:
            v = got.get((op, s))
            cells.append(f"{min(v):.0f}" if v else "")
        rows.append(cells)
    return (
        f"Microseconds per call (per element for put/get/iterator), timed inside one "
        "transformWithStateInPandas "
        f"call on the worker, RocksDB state store, up to {calls:,} calls per point (fewer for large values), "
        f"best of {repeat} runs. Timer rows: one column only.\n\n"
        + table(rows, ["operation"] + [f"{s:,} B" for s in sizes])
    )


# -- timers -------------------------------------------------------------------------------------------


def bench_timers(spark, work: Path, groups: list[int], repeat: int) -> str:
    from overwindow.spark.adapter import use_rocksdb

    use_rocksdb(spark)
    timer_ms = T0_US // 1000 + 60_000  # one minute after the first rows
    variants = {
        "applyInPandasWithState EventTimeTimeout": lambda g, s: aipws_noop(g, s, timer_ms),
        "transformWithStateInPandas registerTimer": lambda g, s: tws_noop(g, s, False, timer_ms),
    }
    res: dict = {}
    for g in groups:
        # file 1: one row per group at T0 (each group sets its timer); file 2: one row an hour later
        # moves the watermark; the no-data batch after it fires every group's timer
        write_files(
            work / f"timers-{g}",
            [rows_table(g, g), rows_table(1, 1, T0_US + 3_600_000_000)],
        )
    for r in range(repeat + 1):
        for g in groups:
            for name, make in variants.items():
                events = (
                    spark.readStream.schema(SCHEMA)
                    .option("maxFilesPerTrigger", 1)
                    .parquet(str(work / f"timers-{g}"))
                    .withWatermark("ts", "1 second")
                )
                prog = run(make(events.groupBy("k"), events.schema), "append", work / "chk")
                durations = [p.batchDuration / 1000 for p in prog]
                if r:
                    res.setdefault((name, g), []).append(durations)
                print(f"timers round {r} {name} {g}: {durations}", flush=True)
    rows = []
    for (name, g), runs in res.items():
        fire = [d[-1] for d in runs]
        first = [d[0] for d in runs]
        rows.append(
            [
                name,
                f"{g:,}",
                f"{min(first):.2f}",
                f"{min(fire):.2f}",
                ", ".join(f"{x:.2f}" for x in fire),
            ]
        )
    return (
        "Groups each set an event-time timer (transformWithStateInPandas: registerTimer; "
        "applyInPandasWithState: setTimeoutTimestamp) in micro-batch 0 (one row per group); micro-batch 1 "
        "(one row an hour later) moves the watermark; in micro-batch 2 (no data) every group's timer fires "
        f"and its function is called with no rows. Seconds per micro-batch, best of {repeat}.\n\n"
        + table(
            rows,
            ["operator", "groups", "batch 0 (set timers) s", "batch 2 (all fire) s", "batch 2, every run"],
        )
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["ipc", "calls", "state", "timers", "all"])
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--rows-per-key", type=int, default=10)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--groups", type=int, nargs="*", default=[2, 1_000, 10_000, 100_000])
    p.add_argument("--timer-groups", type=int, nargs="*", default=[1, 1_000, 10_000, 50_000])
    p.add_argument("--sizes", type=int, nargs="*", default=[16, 1_024, 16_384, 262_144])
    p.add_argument("--calls", type=int, default=2_000)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    reports = []
    if args.what in ("ipc", "all"):
        reports.append(("IPC", bench_ipc(args.keys, args.rows_per_key, max(args.repeat, 3))))
    if args.what != "ipc":
        work = Path(tempfile.mkdtemp(prefix="ow-hosting-"))
        spark = spark_session("overwindow-hosting-costs", work / "warehouse", 10_000)
        try:
            if args.what in ("calls", "all"):
                reports.append(("calls", bench_calls(spark, work, args.rows, args.groups, args.repeat)))
            if args.what in ("state", "all"):
                reports.append(("state", bench_state(spark, work, args.sizes, args.calls, args.repeat)))
            if args.what in ("timers", "all"):
                reports.append(("timers", bench_timers(spark, work, args.timer_groups, args.repeat)))
        finally:
            spark.stop()
            shutil.rmtree(work, ignore_errors=True)
    for name, text in reports:
        print(f"\n### {name}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
