"""One window call, one job on each engine: overwindow against PyFlink at 1,000, 50,000 and 100,000 keys.

    python benchmarks/single_job.py --points 1k --flink-python FLINKENV/bin/python   # one point a run
    python benchmarks/single_job.py --report                    # the section from every run's records

The cardinality sweep (``streaming.py --sweep``) sets overwindow's one query of three calls against
three PyFlink jobs (Flink takes one window per SELECT). Here both engines run the same single call,
``sum(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW)``, as one job
over one CSV file of the sweep's dense rows (``sweep.make_point``: every key in the file, event
times 1 ms apart in arrival order plus up to 5 s of jitter, watermark 10 s; a second file of one
row far in the future moves the watermark past every row): ``1k`` 1,000 keys over 2,000,000 rows,
``50k`` 50,000 over 500,000, ``100k`` 100,000 over 1,000,000 (``--scale`` multiplies the rows).

overwindow: ``groupBy("k").overWindow(OverWindow(call, emit=..., rowKey="rid"))`` with the hosting it
chooses, both emit modes, the file source taking both files in one micro-batch,
``trigger(availableNow=True)``, ``noop`` sink, local[2] (``common.spark_session``). PyFlink: the same
call as one job (``flink.py --jobs "sum ROWS 100 PRECEDING"``), parallelism 2, blackhole sink. Each
engine runs a small input first (warm-up, untimed); seconds are the wall time of the query (start to
termination) and of the job (``execute_sql(...).wait()``), start-up included for both. One JSON
record per run goes to ``--results``; ``--report`` writes the section of
docs/benchmarks/single-job.md between ``<!-- single-job:begin -->`` and ``<!-- single-job:end -->``
from the newest record of each point, engine and mode.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sweep  # noqa: E402
from common import ROOT, publish, section_head  # noqa: E402

CALL = "sum(x) OVER (ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW) AS s100"
FLINK_JOB = "sum ROWS 100 PRECEDING"
POINTS = {"1k": 2_000_000, "50k": 500_000, "100k": 1_000_000}  # rows at each point of the issue
EMITS = ("on_window_close", "on_update")
# Spark alone, the floor any operator hosted on Spark works under (run_floor): the scan, the hosting
FLOORS = ("scan", "hosting", "hosting, Arrow back")
ENGINES = {"overwindow": "overwindow", "spark": "Spark alone"}  # a record's engine as the table names it
RESULTS = ROOT / "benchmarks" / "results" / "single_job.jsonl"
BEGIN, END = "<!-- single-job:begin -->", "<!-- single-job:end -->"


def run_overwindow(spark, src: Path, chk: Path, emit: str) -> dict:
    """One run of the call over ``src`` in ``emit`` mode: seconds, micro-batches, output rows."""
    import overwindow

    spec = overwindow.OverWindow(CALL, emit=emit, rowKey="rid")
    mode = "append" if emit == "on_window_close" else "update"
    return run_spark(spark, src, chk, lambda events: events.groupBy("k").overWindow(spec), mode, emit)


def run_floor(spark, src: Path, chk: Path, floor: str) -> dict:
    """Spark alone over ``src`` (``FLOORS``): the CSV stream into the sink (scan), or through a
    pass-through ``applyInPandasWithState`` over the buckets of ``k`` overwindow chooses here
    (hosting: ``nexmark_latency.pass_through``, 16 buckets on 2 shuffle partitions), or the same
    with its rows handed back as Arrow (``nexmark_latency.pass_through_arrow``)."""
    from nexmark_latency import pass_through, pass_through_arrow

    build = {
        "scan": lambda events: events,
        "hosting": lambda events: pass_through(events, ("k",), True),
        "hosting, Arrow back": lambda events: pass_through_arrow(events, ("k",), True),
    }[floor]
    return run_spark(spark, src, chk, build, "append" if floor == "scan" else "update", floor)


def run_spark(spark, src: Path, chk: Path, build, mode: str, what: str) -> dict:
    """One availableNow run of ``build(events)`` over ``src`` into the ``noop`` sink in output
    ``mode``: seconds (start to termination), micro-batches, output rows."""
    events = (
        spark.readStream.schema(sweep.SCHEMA)
        .option("timestampFormat", "yyyy-MM-dd HH:mm:ss.SSS")
        .csv(str(src))
        .withWatermark("ts", f"{sweep.DELAY_S} seconds")
    )
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = (
        build(events)
        .writeStream.format("noop")
        .option("checkpointLocation", str(chk))
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - started
    if q.exception() is not None:
        raise RuntimeError(f"{what}: {q.exception()}")
    prog = q.recentProgress
    return {
        "seconds": seconds,
        "batch_ms": [p.batchDuration for p in prog],
        "output_rows": sum(p.sink.numOutputRows for p in prog),
    }


def run_flink(flink_python: str, point: str, rows: int, work: Path) -> dict:
    """PyFlink's run of the call at ``point`` (``flink.py``, one round): its seconds."""
    results = work / "flink.jsonl"
    cmd = [flink_python, str(Path(__file__).with_name("flink.py")), "--points", point, "--batches", "1"]
    cmd += ["--rows-per-batch", str(rows), "--rounds", "1", "--jobs", FLINK_JOB, "--results", str(results)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"PyFlink failed ({done.returncode}):\n{done.stderr[-3000:]}")
    (rec,) = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    results.unlink()
    return {"seconds": rec["seconds"]}


def render(records: list[dict], head: list[str]) -> str:
    """The section from the newest record of each point, engine and mode."""
    newest = {(r["point"], r["engine"], r["emit"]): r for r in records}
    lines = [
        *head,
        f'- The call: `{CALL.replace(" AS s100", "")}` with `PARTITION BY k` (`groupBy("k")`), one job on'
        " each engine over one CSV file (`benchmarks/sweep.py`'s dense rows, every key in the file,"
        f" watermark {sweep.DELAY_S} s); overwindow one micro-batch with data, the hosting `overWindow`"
        " chooses, `noop` sink, local[2]; PyFlink one job, parallelism 2, blackhole sink. Seconds: the"
        " query's or the job's wall time, start-up included for both, after an untimed warm-up.",
        "- The load average (1 minute) is given beside each figure (on a shared machine figures move with"
        " it); x PyFlink = PyFlink's seconds over overwindow's (> 1: overwindow"
        " faster), both measured in the same command, one right after the other.",
        "- Spark alone (`--floors`, where measured): the same stream, run and sink without overwindow,"
        " the floor any operator hosted on Spark works under: the CSV stream into the sink (scan: no"
        " shuffle, no state), and through a pass-through `applyInPandasWithState` over the 16 buckets"
        " of `k` overwindow chooses here, keeping a count per bucket (hosting: the shuffle, Arrow to"
        " Python and back, the state store). Its x PyFlink is the most any such operator could reach."
        " Hosting, Arrow back (where measured): the same, its rows handed back to Spark as Arrow IPC"
        " streams (a binary value each) that a `mapInArrow` turns back into rows, PySpark's"
        " pandas-to-Arrow output and its padding of the states replaced by the operator's own"
        " conversion to Arrow (which a hosting whose rows are Arrow already would not pay).",
        "",
        "| point | keys | rows | engine | emit | s | rows/s | x PyFlink | load | output rows |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for point in POINTS:
        flink = newest.get((point, "pyflink", "on_window_close"))
        runs = [("overwindow", emit) for emit in EMITS] + [("spark", floor) for floor in FLOORS]
        for engine, what in runs:
            r = newest.get((point, engine, what))
            if r is not None:
                x = f"{flink['seconds'] / r['seconds']:.2f}" if flink else "-"
                lines.append(
                    f"| {point} | {r['keys']:,} | {r['rows']:,} | {ENGINES[engine]} | {what} | "
                    f"{r['seconds']:.1f} | {r['rows'] / r['seconds']:,.0f} | {x} | {r['load']:.1f} | "
                    f"{r['output_rows']:,} |"
                )
        if flink:
            lines.append(
                f"| {point} | {flink['keys']:,} | {flink['rows']:,} | PyFlink | (on the watermark) | "
                f"{flink['seconds']:.1f} | {flink['rows'] / flink['seconds']:,.0f} | | "
                f"{flink['load']:.1f} | |"
            )
    lines += ["", END]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", nargs="*", default=list(POINTS), choices=list(POINTS))
    p.add_argument("--scale", type=float, default=1.0, help="multiplies each point's rows")
    p.add_argument("--emits", nargs="*", default=list(EMITS), choices=EMITS)
    p.add_argument("--floors", action="store_true", help="also Spark alone: the scan, the hosting (two ways)")
    p.add_argument("--flink-python", help="a Python with apache-flink (benchmarks/flink.py says how)")
    p.add_argument("--max-records", type=int, default=10_000)
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--report", action="store_true", help="only write the section from --results")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    command = "python benchmarks/single_job.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:])
    )
    if not args.report:
        run_points(args, command)
    records = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    newest = {(r["point"], r["engine"], r["emit"]): r for r in records}.values()
    head = section_head(
        BEGIN,
        "One call, one job: overwindow and PyFlink at 1,000 to 100,000 keys",
        "benchmarks/single_job.py",
        "`; `".join(dict.fromkeys(r["command"] for r in newest)),
        sum(r["seconds"] for r in newest),  # the runs shown; data and warm-up left out
        "pyspark",
        "pyarrow",
    )
    publish(render(records, head), BEGIN, END, not args.no_write)
    return 0


def run_points(args, command: str) -> None:
    from common import spark_session

    work = Path(tempfile.mkdtemp(prefix="ow-single-"))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    try:
        spark = spark_session("overwindow-single-job", work / "warehouse", args.max_records)
        try:
            sweep.make_point(work / "tiny", "1k", 1, 50_000, 0, 0)
            for emit in args.emits:
                run_overwindow(spark, work / "tiny", work / "chk", emit)
            for floor in FLOORS if args.floors else ():
                run_floor(spark, work / "tiny", work / "chk", floor)
            for point in args.points:
                rows = int(POINTS[point] * args.scale)
                info = sweep.make_point(work / point, point, 1, rows, 0, 0)
                base = {"point": point, "keys": info["keys"], "rows": info["rows"], "command": command}
                runs = []
                for emit in args.emits:
                    r = run_overwindow(spark, work / point, work / "chk", emit)
                    runs.append(dict(base, engine="overwindow", emit=emit, load=os.getloadavg()[0], **r))
                for floor in FLOORS if args.floors else ():
                    r = run_floor(spark, work / point, work / "chk", floor)
                    runs.append(dict(base, engine="spark", emit=floor, load=os.getloadavg()[0], **r))
                if args.flink_python:
                    r = run_flink(args.flink_python, point, rows, work)
                    load = os.getloadavg()[0]
                    runs.append(dict(base, engine="pyflink", emit="on_window_close", load=load, **r))
                with open(args.results, "a") as f:
                    for r in runs:
                        f.write(json.dumps(r) + "\n")
                        said = f"{r['seconds']:.1f} s, load {r['load']:.2f}"
                        print(f"{point} {r['engine']} {r['emit']}: {said}", flush=True)
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
