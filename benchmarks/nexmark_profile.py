"""Where a Nexmark query's time goes on Spark (issue 44): the CPU of the JVM against the Python
workers, and two designs tried at the floor.

    python benchmarks/nexmark_profile.py cpu --queries q18 --runs 3     # overwindow and the floor, in turns
    python benchmarks/nexmark_profile.py packed --queries q18 q19 --runs 3
    python benchmarks/nexmark_profile.py handback --rate 16000 --seconds 40 --runs 3

Not a section writer: the figures go into docs/benchmarks/nexmark.md's notes by hand, with the
command. Over the events ``nexmark.py`` writes (1,000,000 from its seed, 10 files), one Spark
session, runs in turns after one untimed run each:

- ``cpu``: overwindow's query on update (``nexmark_latency.overwindow_sql``) and the pass-through
  hosting with its rows handed back as Arrow (``nexmark_latency.pass_through_arrow``): throughput as
  ``nexmark.py`` measures it, and the CPU seconds the driver's JVM and the Python workers (the
  ``pyspark.daemon`` processes) spent in each run, read from ``/proc`` (Linux) before and after it.
  Profilers for the shares within each: Java Flight Recorder (``jcmd <pid> JFR.start``) on the
  JVM and ``py-spy record --subprocesses`` on the daemon, attached by hand.
- ``packed``: the Arrow pass-through against ``pass_through_packed``, the input rows packed as one
  Arrow IPC stream per bucket by a ``mapInArrow`` before the shuffle (no pandas on the way in).
- ``handback``: the fixed cost per micro-batch of handing rows back as Arrow: a ``rate`` source
  (1,000 keys, strings of 40 and 120 bytes) through the pandas pass-through and the Arrow one, a
  500 ms trigger, the median ``addBatch`` and micro-batch of each run (the first three left out).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nexmark as nx  # noqa: E402
import nexmark_latency as nl  # noqa: E402
from nexmark_queries import KEY_BUCKETS, QUERIES  # noqa: E402


def cpu_seconds() -> dict:
    """CPU seconds (user and system) of this machine's Java processes and PySpark's Python workers,
    from ``/proc``. O(processes)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = {"jvm": 0.0, "python": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        used = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        if b"java" in command.split(b" ")[0]:
            total["jvm"] += used
        elif b"pyspark.daemon" in command:
            total["python"] += used
    return total


def pass_through_packed(events, keys: tuple, chosen: bool):
    """``nexmark_latency.pass_through_arrow`` with its input packed before the shuffle: a
    ``mapInArrow`` sorts each input partition's rows by bucket and writes each bucket's rows as one
    Arrow IPC stream (a binary value beside the bucket columns); the pass-through reads the streams
    (no pandas either way), writes them again as it hands them back. O(1): builds the plan."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType

    from overwindow.spark.grouping import bucket_grouping, bucket_of

    df = bucket_grouping(events, bucket_of(keys, KEY_BUCKETS), KEY_BUCKETS, chosen)._df
    columns, names = nl.grouping_columns(df), events.columns
    schema = to_arrow_schema(events.schema, timezone="UTC")
    packed = StructType([df.schema[c] for c in columns] + [StructField("rows", BinaryType())])
    packed_schema = to_arrow_schema(packed, timezone="UTC")

    def stream(table) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as writer:
            writer.write(table)  # a table or a record batch
        return sink.getvalue().to_pybytes()

    def pack(batches):
        table = pa.Table.from_batches(list(batches))
        if not table.num_rows:
            return
        table = table.take(table.column(columns[0]).to_numpy().argsort(kind="stable"))
        bucket = table.column(columns[0]).to_numpy()
        starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
        ends = np.r_[starts[1:], len(bucket)]
        out = {c: [table.column(c)[int(s)].as_py() for s in starts] for c in columns}
        out["rows"] = [stream(table.select(names).slice(s, e - s)) for s, e in zip(starts, ends)]
        yield pa.RecordBatch.from_pydict(out, schema=packed_schema)

    def call(key, frames, state):
        held = state.get[0] if state.exists else 0
        tables = [pa.ipc.open_stream(b).read_all() for frame in frames for b in frame["rows"]]
        held += sum(t.num_rows for t in tables)
        if tables:
            rows = pa.concat_tables(tables)
            yield pd.DataFrame({"rows": [stream(b) for b in rows.to_batches(max_chunksize=5_000)]})
        state.update((held,))

    def rows(batches):
        for batch in batches:
            for value in batch.column(0):
                yield from pa.ipc.open_stream(value.as_buffer())

    streams = (
        df.mapInArrow(pack, packed)
        .groupBy(*columns)
        .applyInPandasWithState(call, "rows binary", "held long", "update", GroupStateTimeout.NoTimeout)
    )
    return streams.mapInArrow(rows, events.schema)


def throughput_runs(spark, work: Path, builds: dict, queries: list[str], runs: int) -> None:
    """Each query's ``builds`` (name: ``build(query, events)``) over the bids, in turns, ``runs``
    timed runs after an untimed one: bids/s/core and the CPU each run took."""
    for query in (q for q in QUERIES if q.name in queries):
        for n in range(runs + 1):
            for name, build in builds.items():
                events = nx.bids_view(spark, work / "bids")
                before = cpu_seconds()
                r = nx.stream_rate(build(query, events), "update", work / f"chk-{name}-{n}", name)
                after = cpu_seconds()
                used = {k: after[k] - before[k] for k in after}
                timed = "untimed" if n == 0 else f"run {n}"
                print(
                    f"{query.name} {name} {timed}: {r['rate']:,.0f} bids/s/core, {r['seconds']:.1f} s; "
                    f"CPU s: JVM {used['jvm']:.1f}, Python {used['python']:.1f}",
                    flush=True,
                )


def handback_runs(spark, work: Path, rate: int, seconds: float, runs: int) -> None:
    """The pandas and the Arrow pass-through over a ``rate`` source, in turns: medians per run."""
    from pyspark.sql import functions as F

    builds = {"pandas": nl.pass_through, "arrow": nl.pass_through_arrow}
    for n in range(runs):
        for name, build in builds.items():
            events = (
                spark.readStream.format("rate")
                .option("rowsPerSecond", rate)
                .load()
                .select(
                    (F.col("value") % 1000).alias("k"),
                    F.col("value").alias("v"),
                    F.col("timestamp").alias("ts"),
                    F.lit("x" * 40).alias("s"),
                    F.lit("y" * 120).alias("u"),
                )
            )
            q = (
                build(events, ("k",), True)
                .writeStream.format("noop")
                .option("checkpointLocation", str(work / f"chk-{name}-{n}"))
                .outputMode("update")
                .trigger(processingTime="500 milliseconds")
                .start()
            )
            time.sleep(seconds)
            q.stop()
            ran = [p for p in q.recentProgress if p.numInputRows > 0][3:]
            add = statistics.median(p.durationMs.get("addBatch", 0) for p in ran)
            batch = statistics.median(p.batchDuration for p in ran)
            print(f"{name} run {n + 1}: {len(ran)} micro-batches, median addBatch {add:.0f} ms, "
                  f"micro-batch {batch:.0f} ms", flush=True)  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["cpu", "packed", "handback"])
    p.add_argument("--queries", nargs="*", default=["q18"], choices=[q.name for q in QUERIES])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rate", type=int, default=16_000, help="handback: rows a second")
    p.add_argument("--seconds", type=float, default=40.0, help="handback: each run")
    args = p.parse_args(argv)
    from common import spark_session

    from overwindow.spark import compat

    work = Path(tempfile.mkdtemp(prefix="ow-profile-"))
    if args.what != "handback":
        nx.write_inputs(work, 1_000_000, 10, 20240601)
    spark = spark_session("overwindow-nexmark-profile", work / "warehouse", 100_000)
    compat.use_filesystem_checkpoints(spark)
    try:
        arrow = {"hosting, Arrow back": lambda q, ev: nl.pass_through_arrow(ev, q.keys, not q.key_buckets)}
        if args.what == "cpu":
            ours = {"overwindow": lambda q, ev: nl.overwindow_sql(spark, q, "on_update")}
            throughput_runs(spark, work, {**ours, **arrow}, args.queries, args.runs)
        elif args.what == "packed":
            packed = {"packed input": lambda q, ev: pass_through_packed(ev, q.keys, not q.key_buckets)}
            throughput_runs(spark, work, {**arrow, **packed}, args.queries, args.runs)
        else:
            handback_runs(spark, work, args.rate, args.seconds, args.runs)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
