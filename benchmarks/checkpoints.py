"""Checkpoints on a local disk: Spark's default checkpoint manager against the one overwindow's jobs use.

    python benchmarks/checkpoints.py            # writes its section of docs/benchmarks/streaming.md
    python benchmarks/checkpoints.py --no-write

Spark's default checkpoint manager (``FileContextBasedCheckpointFileManager``) renames each file it
commits through Hadoop's FileContext, which on a local disk, without Hadoop's native library (PySpark's
wheels have none), starts a ``readlink`` process for every rename; ``overwindow run`` sets
``spark.sql.streaming.checkpointFileManagerClass`` to ``FileSystemBasedCheckpointFileManager``
(pipeline/session.py, ``local_spark``), whose rename is one ``rename(2)``. One session (the job's own,
``local_spark``) runs the same small stream with each manager in turn, ``--rounds`` times: ``--files``
JSON files of ``--rows`` rows each, one file a micro-batch (``maxFilesPerTrigger=1``,
``trigger(availableNow=True)``), two window calls on window close into a Parquet file sink (whose
log is committed through the same manager), a fresh checkpoint and output folder per run. Reported:
each variant's median run, the median micro-batch (``triggerExecution``) and the median of the
offset and commit logs' writes (``walCommit`` + ``commitOffsets``), and the ratio to Spark's default.
Starts a JVM: run it when no other Spark job runs on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402

BEGIN, END = "<!-- checkpoints:begin -->", "<!-- checkpoints:end -->"
CALLS = (
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS s10",
    "lag(x) OVER (ORDER BY ts) AS prev_x",
)


def write_files(folder: Path, files: int, rows: int) -> None:
    """``files`` JSON files of ``rows`` rows over 20 keys, event times rising one second a row."""
    folder.mkdir(parents=True)
    for n in range(files):
        with open(folder / f"part-{n:04d}.json", "w") as f:
            for i in range(rows):
                second = n * rows + i
                row = {"k": i % 20, "ts": second * 1_000_000, "rid": second, "x": float(i % 7)}
                f.write(json.dumps(row) + "\n")
        t = time.time() + n  # the file source takes files in modification order
        os.utime(folder / f"part-{n:04d}.json", (t, t))


def run_once(spark, source: Path, work: Path, manager: str) -> dict:
    """One availableNow run of the stream with ``manager``; its wall seconds and per-batch times."""
    import overwindow
    from overwindow.spark.compat import CHECKPOINT_MANAGER

    spark.conf.set(CHECKPOINT_MANAGER, manager)
    events = (
        spark.readStream.schema("k INT, ts BIGINT, rid BIGINT, x DOUBLE")
        .option("maxFilesPerTrigger", 1)
        .json(str(source))
        .selectExpr("k", "timestamp_micros(ts) AS ts", "rid", "x")
        .withWatermark("ts", "10 seconds")
    )
    result = events.groupBy("k").overWindow(overwindow.OverWindow(*CALLS, rowKey="rid"))
    chk = tempfile.mkdtemp(dir=work)
    start = time.perf_counter()
    query = (
        result.writeStream.format("parquet")
        .option("path", os.path.join(chk, "out"))
        .option("checkpointLocation", os.path.join(chk, "chk"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - start
    batches = [p["durationMs"] for p in query.recentProgress]
    return {
        "seconds": seconds,
        "batches": len(batches),
        "batch_ms": statistics.median(b.get("triggerExecution", 0) for b in batches),
        "logs_ms": statistics.median(b.get("walCommit", 0) + b.get("commitOffsets", 0) for b in batches),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3, help="timed runs of each manager, in turns")
    p.add_argument("--no-write", action="store_true", help="print the section instead of updating its page")
    args = p.parse_args()
    began = time.perf_counter()
    from overwindow.pipeline.session import local_spark
    from overwindow.spark.compat import filesystem_checkpoints

    spark = local_spark(app="overwindow-checkpoints")
    ours = filesystem_checkpoints(spark)
    variants = {
        "Spark's default (FileContext)": ours.replace("FileSystemBased", "FileContextBased"),
        "overwindow's jobs (FileSystem)": ours,
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_files(work / "source", args.files, args.rows)
        for manager in variants.values():  # warm-up, untimed: the JVM compiles its paths once
            run_once(spark, work / "source", work, manager)
        runs = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, manager in variants.items():
                runs[name].append(run_once(spark, work / "source", work, manager))
                print(name, runs[name][-1], flush=True)
    base = statistics.median(r["seconds"] for r in runs[next(iter(variants))])
    command = "python benchmarks/checkpoints.py" + (
        f" --files {args.files} --rows {args.rows} --rounds {args.rounds}"
        if (args.files, args.rows, args.rounds) != (20, 200, 3)
        else ""
    )
    lines = common.section_head(
        BEGIN,
        "Checkpoints on a local disk",
        "benchmarks/checkpoints.py",
        command,
        time.perf_counter() - began,
        "pyspark",
    )
    lines += [
        f"- Data: {args.files} JSON files of {args.rows} rows over 20 keys, one file a micro-batch "
        "(`maxFilesPerTrigger=1`, `trigger(availableNow=True)`); "
        f"`OverWindow({', '.join(repr(c) for c in CALLS)}, rowKey='rid')` on window close into a Parquet "
        "file sink; a fresh checkpoint per run.",
        "- Session: `overwindow run`'s own (`local_spark`); each run sets "
        "`spark.sql.streaming.checkpointFileManagerClass`; one untimed run of each first, then "
        f"{args.rounds} rounds in turns. Seconds: wall time from `start()` to the end of "
        "`awaitTermination()`; a micro-batch: its `triggerExecution`; logs: `walCommit` + `commitOffsets`.",
        "",
        "| checkpoint manager | seconds (median) | every run | ratio | micro-batches "
        "| micro-batch ms (median) | logs ms (median) |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for name, results in runs.items():
        seconds = statistics.median(r["seconds"] for r in results)
        every = ", ".join(f"{r['seconds']:.1f}" for r in results)
        lines.append(
            f"| {name} | {seconds:.1f} | {every} | "
            f"{seconds / base:.2f} | {results[0]['batches']} | "
            f"{statistics.median(r['batch_ms'] for r in results):.0f} | "
            f"{statistics.median(r['logs_ms'] for r in results):.0f} |"
        )
    common.publish("\n".join([*lines, END]), BEGIN, END, write=not args.no_write)
    spark.stop()


if __name__ == "__main__":
    main()
