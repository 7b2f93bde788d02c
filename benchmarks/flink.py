"""PyFlink's SQL OVER on the cardinality sweep's input: what users pick instead of overwindow.

    python -m venv FLINKENV && FLINKENV/bin/pip install apache-flink==2.3.0    # a venv of its own
    FLINKENV/bin/python benchmarks/flink.py --points 1k 100k    # one JVM: like Spark, one at a time

Reads the same CSV rows as ``benchmarks/streaming.py --sweep`` (``benchmarks/sweep.py`` writes them
from the same seed and parameters; joined in micro-batch order into one file, see ``one_file``)
through Flink's filesystem source in streaming mode, with the same event-time watermark
(``ts - INTERVAL '10' SECOND``), and computes the sweep's three calls with Flink SQL ``OVER`` into
the ``blackhole`` sink. Flink takes one window per SELECT, and ``LAG``
takes no frame ("ROW/RANGE not allowed with RANK, DENSE_RANK or ROW_NUMBER functions"), so the calls
run as three jobs over the same input: ``LAG(x) OVER (PARTITION BY k ORDER BY ts)``, ``AVG(x)`` over
``ROWS BETWEEN 9 PRECEDING AND CURRENT ROW``, ``COUNT(*)`` over ``RANGE BETWEEN INTERVAL '1' MINUTE
PRECEDING AND CURRENT ROW``; the figure for the three calls is the sum of the three. Flink emits an
OVER row when the watermark passes it, as overwindow's window close does. Local mini-cluster,
parallelism 2 (the machine's 2 cores, as Spark's local[2]), default (heap) state backend. Each job
runs once untimed on a tiny input first (warm-up), then ``--rounds`` times; seconds are the wall
time of ``execute_sql(...).wait()``. One JSON record per run is appended to ``--results``
(``streaming.py --sweep-report`` renders them beside Spark's). This script does not import
overwindow or pyspark: it runs in its own venv. ``streaming.py --sweep --flink-python
FLINKENV/bin/python`` runs it in every round of its own command, after the Spark variants, so that
the report compares the engines within one run.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sweep  # noqa: E402

JOBS = {
    "lag": ("LAG(x) OVER w AS prev_x", "WINDOW w AS (PARTITION BY k ORDER BY ts)", "prev_x DOUBLE"),
    "avg ROWS 9 PRECEDING": (
        "AVG(x) OVER w AS avg10",
        "WINDOW w AS (PARTITION BY k ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW)",
        "avg10 DOUBLE",
    ),
    "count RANGE 1 MINUTE": (
        "COUNT(*) OVER w AS n1m",
        "WINDOW w AS (PARTITION BY k ORDER BY ts "
        "RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW)",
        "n1m BIGINT",
    ),
    "sum ROWS 100 PRECEDING": (  # the single-job comparison (benchmarks/single_job.py), not the sweep's
        "SUM(x) OVER w AS s100",
        "WINDOW w AS (PARTITION BY k ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW)",
        "s100 DOUBLE",
    ),
}
SWEEP_JOBS = ("lag", "avg ROWS 9 PRECEDING", "count RANGE 1 MINUTE")


def table_env():
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "2")
    env.get_config().set("table.exec.resource.default-parallelism", "2")
    return env


def run_job(env, src: Path, job: str, count: bool = False) -> tuple[float, int | None]:
    """Seconds of one job over the CSV folder; with ``count``, also the rows it emits (a second,
    untimed query counting them)."""
    select, window, cols = JOBS[job]
    for t in ("src", "sink"):
        env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS {t}")
    env.execute_sql(
        f"""CREATE TEMPORARY TABLE src (k INT, ts TIMESTAMP(3), rid BIGINT, x DOUBLE,
            WATERMARK FOR ts AS ts - INTERVAL '{sweep.DELAY_S}' SECOND)
            WITH ('connector' = 'filesystem', 'path' = 'file://{src}', 'format' = 'csv')"""
    )
    env.execute_sql(
        f"CREATE TEMPORARY TABLE sink (k INT, ts TIMESTAMP(3), rid BIGINT, x DOUBLE, {cols}) "
        "WITH ('connector' = 'blackhole')"
    )
    started = time.perf_counter()
    env.execute_sql(f"INSERT INTO sink SELECT k, ts, rid, x, {select} FROM src {window}").wait()
    seconds = time.perf_counter() - started
    rows = None
    if count:
        got = env.execute_sql(f"SELECT COUNT(*) FROM (SELECT k, ts, rid, x, {select} FROM src {window})")
        with got.collect() as it:
            rows = max(int(r[0]) for r in it)  # the count as it grows; the last is the largest
    return seconds, rows


def one_file(src: Path) -> Path:
    """The point's CSV files joined, in micro-batch order, into one file (one split, read in order):
    Flink's file source reads several files in no set order, in parallel, and the watermark of a
    later file then drops an earlier file's rows as late (669 of 10,001 rows in a trial run)."""
    out = src.with_name(src.name + "-flink")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    with open(out / "data.csv", "wb") as f:
        for part in sorted(src.glob("*.csv")):
            f.write(part.read_bytes())
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", nargs="*", default=["1k", "10k", "100k"], choices=list(sweep.POINTS))
    p.add_argument("--batches", type=int, default=4)
    p.add_argument("--rows-per-batch", type=int, default=100_000)
    p.add_argument("--touched", type=int, default=10_000)
    p.add_argument("--sparse-rows", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--count", action="store_true", help="also count each job's output rows (untimed)")
    p.add_argument("--jobs", nargs="*", default=list(SWEEP_JOBS), choices=list(JOBS))
    p.add_argument(
        "--command", help="the command recorded with each run (streaming.py --sweep passes its own)"
    )
    p.add_argument("--first-round", type=int, default=0, help="the round number recorded for the first round")
    p.add_argument(
        "--results", type=Path, default=Path(__file__).resolve().parent / "results" / "sweep.jsonl"
    )
    args = p.parse_args(argv)
    command = args.command or "python benchmarks/flink.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv or sys.argv[1:])
    )
    work = Path(tempfile.mkdtemp(prefix="ow-flink-"))
    try:
        env = table_env()
        tiny = work / "tiny"
        sweep.make_point(tiny, "1k", 1, 2_000, 0, 0)
        for job in args.jobs:
            run_job(env, one_file(tiny), job)
        for point in args.points:
            src = work / point
            info = sweep.make_point(
                src, point, args.batches, args.rows_per_batch, args.touched, args.sparse_rows
            )
            src = one_file(src)
            for r in range(args.first_round, args.first_round + args.rounds):
                total, outs = 0.0, []
                for job in args.jobs:
                    seconds, rows = run_job(env, src, job, count=args.count and r == 0)
                    total += seconds
                    outs.append(rows)
                    rec = dict(
                        info,
                        engine="pyflink",
                        point=point,
                        variant=f"job: {job}",
                        round=r,
                        seconds=seconds,
                        output_rows=rows,
                        load=os.getloadavg()[0],
                        command=command,
                    )
                    sweep.append(args.results, rec)
                    print(
                        f"flink {point} {job} round {r}: {seconds:.1f} s, out {rows}, load {rec['load']:.2f}",
                        flush=True,
                    )
                if tuple(args.jobs) != SWEEP_JOBS:
                    continue
                rec = dict(
                    info,
                    engine="pyflink",
                    point=point,
                    variant="the three calls (three jobs)",
                    round=r,
                    seconds=total,
                    output_rows=None,
                    load=os.getloadavg()[0],
                    command=command,
                )
                sweep.append(args.results, rec)
                print(f"flink {point} total round {r}: {total:.1f} s", flush=True)
            shutil.rmtree(src, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
