"""What a query of 1, 2 and 4 window groups costs against one window, on the same input and in one
Spark session (issue 16: several windows in one query).

    python benchmarks/multi_window.py                     # 200,000 rows, 1,000 keys, 10 files
    python benchmarks/multi_window.py --rows 50000 --no-write

One input (``benchmarks/streaming.py``'s ``make_data``): ``k`` (int32, ``--keys`` keys), ``ts``
(event time in arrival order, jittered), ``rid`` (unique), ``x``; plus ``j = rid % 97`` and
``m = k % 10``, two more partition keys. Variants, each ``overwindow.select`` of the input columns
and window columns over a Parquet file source (``maxFilesPerTrigger``, ``availableNow``) into the
``noop`` sink, emit on window close (watermark 5 s) and on update (``rowKey="rid"``):

- ``1 window``: ``lag(x)`` and ``avg(x) ROWS 9 PRECEDING`` over ``PARTITION BY k ORDER BY ts``: one
  ``overWindow`` (on the key buckets it chooses without ``keyBuckets``);
- ``2 windows``: those, plus ``sum(x) ROWS 9 PRECEDING`` over ``PARTITION BY j``: the fan-out and
  the row assembly (``overwindow.spark.fanout``);
- ``4 windows``: plus ``count(*) RANGE 5 seconds`` over ``PARTITION BY m`` and ``row_number()``
  over ``PARTITION BY k ORDER BY x`` (on update; on window close ``max(x) ROWS 3 PRECEDING`` over
  no PARTITION BY instead: window close needs the event-time ORDER BY).

Each variant runs once untimed (warm-up), then ``--rounds`` times with a fresh checkpoint; the
figure is the median, reported with its ratio to ``1 window`` of the same emit mode. Rewrites the
section of docs/benchmarks/multi-window.md between ``<!-- multi-window:begin -->`` and
``<!-- multi-window:end -->``.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import publish, section_head, spark_session  # noqa: E402
from streaming import SCHEMA, make_data  # noqa: E402

import overwindow  # noqa: E402

BEGIN, END = "<!-- multi-window:begin -->", "<!-- multi-window:end -->"
BY_K = "PARTITION BY k ORDER BY ts"
WINDOWS = {
    1: [f"lag(x) OVER ({BY_K}) AS prev", f"avg(x) OVER ({BY_K} ROWS 9 PRECEDING) AS avg10"],
    2: ["sum(x) OVER (PARTITION BY j ORDER BY ts ROWS 9 PRECEDING) AS sum_j"],
    4: {
        "on_window_close": [
            "count(*) OVER (PARTITION BY m ORDER BY ts RANGE BETWEEN INTERVAL 5 SECONDS PRECEDING "
            "AND CURRENT ROW) AS n_m",
            "max(x) OVER (ORDER BY ts ROWS 3 PRECEDING) AS max_all",
        ],
        "on_update": [
            "count(*) OVER (PARTITION BY m ORDER BY ts RANGE BETWEEN INTERVAL 5 SECONDS PRECEDING "
            "AND CURRENT ROW) AS n_m",
            "row_number() OVER (PARTITION BY k ORDER BY x) AS rank_x",
        ],
    },
}


def columns(groups: int, emit: str) -> list[str]:
    out = ["k", "ts", "rid", "x", *WINDOWS[1]]
    if groups >= 2:
        out += WINDOWS[2]
    if groups >= 4:
        out += WINDOWS[4][emit]
    return out


def run(spark, src: str, chk: str, groups: int, emit: str, files_per_trigger: int) -> float:
    from pyspark.sql import functions as F

    events = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", files_per_trigger)
        .parquet(src)
        .withWatermark("ts", "5 seconds")
        .withColumns({"j": F.col("rid") % 97, "m": F.col("k") % 10})
    )
    # as a user writes it, without keyBuckets: every group on the buckets overwindow chooses
    options = {} if emit == "on_window_close" else {"emit": emit, "rowKey": "rid"}
    out = overwindow.select(events, *columns(groups, emit), **options)
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = out.writeStream.format("noop").option("checkpointLocation", chk).trigger(availableNow=True)
    q = q.outputMode("append" if groups > 1 or emit == "on_window_close" else "update").start()
    q.awaitTermination()
    if q.exception() is not None:
        raise RuntimeError(f"{groups} windows, {emit}: {q.exception()}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--files-per-trigger", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="ow-multi-"))
    make_data(work / "src", args.rows, args.keys, args.files, jitter_s=2.0, seed=1)
    warm = work / "warm"
    make_data(warm, 2_000, 50, 2, jitter_s=2.0, seed=2)
    spark = spark_session("overwindow-multi-window", work / "warehouse")
    spark.conf.set(
        "spark.sql.streaming.stateStore.providerClass",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    )
    spark.conf.set("spark.sql.streaming.statefulOperator.checkCorrectness.enabled", "false")
    figures: dict = {}
    for emit in ("on_window_close", "on_update"):
        for groups in (1, 2, 4):
            run(spark, str(warm), str(work / "chk"), groups, emit, 1)
            times = [
                run(spark, str(work / "src"), str(work / "chk"), groups, emit, args.files_per_trigger)
                for _ in range(args.rounds)
            ]
            figures[emit, groups] = statistics.median(times), min(times), max(times)
            print(f"{emit} {groups} windows: {figures[emit, groups][0]:.1f} s ({times})", flush=True)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    command = "python benchmarks/multi_window.py" + (" " + shlex.join(argv) if argv else "")
    lines = section_head(
        BEGIN,
        "Several windows in one query: 1, 2 and 4 window groups",
        "benchmarks/multi_window.py",
        command,
        time.perf_counter() - began,
        "pyspark",
        "pyarrow",
    )
    lines += [
        f"- Input: {args.rows:,} rows over {args.keys:,} keys in {args.files} Parquet files, "
        f"{args.files_per_trigger} files per micro-batch; median of {args.rounds} runs after a warm-up",
        "",
        "| emit | windows | window groups | seconds (median; min-max) | x 1 window |",
        "|---|---:|---:|---:|---:|",
    ]
    for emit in ("on_window_close", "on_update"):
        one = figures[emit, 1][0]
        for groups in (1, 2, 4):
            median, low, high = figures[emit, groups]
            n = len(columns(groups, emit)) - 4
            lines.append(
                f"| {emit} | {n} | {groups} | {median:.1f} ({low:.1f}-{high:.1f}) | {median / one:.2f}x |"
            )
    lines += [END]
    publish("\n".join(lines), BEGIN, END, write=not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
