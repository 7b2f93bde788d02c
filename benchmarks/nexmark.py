"""Nexmark's window queries on overwindow and on PyFlink, with equal cores: sustained throughput.

    python benchmarks/nexmark.py --flink-python FLINKENV/bin/python      # rewrites its section
    python benchmarks/nexmark.py --events 200000 --queries q19 --no-write   # a quick look

``--events`` Nexmark events (default 1,000,000; 92% of them bids, ``nexmark_events.py``) from
``--seed``; their bids are written as ``--files`` JSON lines files (one micro-batch each for Spark,
``maxFilesPerTrigger`` 1) and, joined, as one file for Flink (``nexmark_flink.py``). The queries
(``nexmark_queries.py``: q18, q19, a q6 over bids, a RANGE count) run on overwindow through
``overwindow.sql`` over the file stream with ``withWatermark("dateTime", "4 seconds")``, in every
emit mode the query takes, on 16 key buckets (``keyBuckets``), into Spark's ``noop`` sink
(``local[2]``, 2 shuffle partitions, the tests' settings: ``common.spark_session``), with
``trigger(availableNow=True)``; and on PyFlink with parallelism 2 into ``blackhole`` sinks, in the
PyFlink venv (``--flink-python``; without it only overwindow runs). Both engines first run each
query on a tiny input (warm-up, untimed).

Throughput is bids per second per core (2 cores for both), start-up excluded: for overwindow, the
bids of the micro-batches after the first over the time from the first micro-batch's end to the
last one's end (Spark's own progress times); for PyFlink, the extra bids of the full input over a
run on a tiny input, over the extra seconds (the job's start-up and teardown are in both runs).
Nexmark's published figures count all events read, persons and auctions too: divide a bid rate by
0.92 to compare. One line per query and emit mode; the section of BENCHMARKS.md between
``<!-- nexmark:begin -->`` and ``<!-- nexmark:end -->`` is rewritten unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import datetime as dt
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

import nexmark_events as ne  # noqa: E402
from common import publish, section_head, spark_session  # noqa: E402
from nexmark_queries import QUERIES, WATERMARK_S  # noqa: E402

BEGIN, END = "<!-- nexmark:begin -->", "<!-- nexmark:end -->"
CORES = 2
KEY_BUCKETS = 16


def write_inputs(work: Path, events: int, files: int, seed: int) -> dict:
    """The bid files for Spark (``bids/``, ``tiny/``) and Flink (one file each); returns counts."""
    full = ne.bids(ne.events(events, seed))
    tiny = ne.bids(ne.events(2_000, seed + 1))
    paths = ne.write_json_files(full, work / "bids", files)
    tiny_paths = ne.write_json_files(tiny, work / "tiny", 1)
    for name, parts in (("flink-bids.json", paths), ("flink-tiny.json", tiny_paths)):
        with open(work / name, "wb") as f:
            for part in parts:
                f.write(part.read_bytes())
    first = paths[0].read_bytes().count(b"\n")
    return {"bids": full.num_rows, "tiny": tiny.num_rows, "first_file": first}


def _end_s(progress) -> float:
    started = dt.datetime.fromisoformat(progress.timestamp.replace("Z", "+00:00")).timestamp()
    return started + progress.batchDuration / 1000


def run_overwindow(spark, query, emit: str, folder: Path, chk: Path) -> dict:
    """One run of ``query`` in ``emit`` mode over the files of ``folder``; the throughput without
    the first micro-batch (see the module's docstring)."""
    import overwindow

    events = (
        spark.readStream.schema(ne.BID_DDL)
        .option("maxFilesPerTrigger", 1)
        .json(str(folder))
        .withWatermark("dateTime", f"{WATERMARK_S} seconds")
    )
    events.createOrReplaceTempView("bids")
    # 16 key buckets, the count overWindow chooses on 2 shuffle partitions where it chooses buckets;
    # q19 orders by price, not by the watermarked time, and would run a Python call per auction
    out = overwindow.sql(spark, query.overwindow, emit=emit, keyBuckets=KEY_BUCKETS)
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = (
        out.writeStream.format("noop")
        .option("checkpointLocation", str(chk))
        .outputMode("append" if emit == "on_window_close" else "update")
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - started
    if q.exception() is not None:
        raise RuntimeError(f"{query.name} {emit}: {q.exception()}")
    progress = [p for p in q.recentProgress if p.numInputRows > 0 or p.sink.numOutputRows > 0]
    rest = progress[1:]
    span = _end_s(progress[-1]) - _end_s(progress[0]) if rest else float("nan")
    rows = sum(p.numInputRows for p in rest)
    return {
        "seconds": seconds,
        "batches": len(progress),
        "input_rows": sum(p.numInputRows for p in progress),
        "output_rows": sum(p.sink.numOutputRows for p in progress),
        "measured_rows": rows,
        "measured_s": span,
        "rate": rows / span / CORES if rest else float("nan"),
        "batch_ms": [p.batchDuration for p in progress],
    }


def run_flink(flink_python: str, work: Path, queries: list[str], bids: int, tiny: int) -> dict:
    """PyFlink's runs (``nexmark_flink.py`` in its own venv): per query its seconds and rate."""
    script = Path(__file__).with_name("nexmark_flink.py")
    cmd = [flink_python, str(script), "--bids", str(work / "flink-bids.json")]
    cmd += ["--tiny", str(work / "flink-tiny.json"), "--queries", *queries]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"PyFlink failed ({done.returncode}):\n{done.stderr[-3000:]}")
    out = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if "error" in r:
                print(f"pyflink {r['query']}: {r['error']}", flush=True)
                continue
            r["rate"] = (bids - tiny) / (r["seconds"] - r["tiny_seconds"]) / CORES
            out[r["query"]] = r
    return out


def render(args, counts: dict, ow: dict, flink: dict, seconds: float) -> tuple[str, list[str]]:
    lines = []
    rows = ["| query | emit | overwindow bids/s/core | PyFlink bids/s/core | x PyFlink | overwindow: "
            "micro-batches, output rows, s (all) | PyFlink: s (full), s (tiny) |",
            "|---|---|---:|---:|---:|---|---|"]  # fmt: skip
    for query in QUERIES:
        for emit in query.emits:
            r = ow.get((query.name, emit))
            if r is None:
                continue
            f = flink.get(query.name)
            ratio = f"x {r['rate'] / f['rate']:.2f}" if f else "x -"
            flink_rate = f"{f['rate']:,.0f}" if f else "-"
            lines.append(
                f"{query.name}: overwindow {emit} {r['rate']:,.0f} ev/s/core, "
                f"PyFlink {flink_rate} ev/s/core, {ratio}; latency not measured"
            )
            rows.append(
                f"| {query.name} | {emit} | {r['rate']:,.0f} | {flink_rate} | {ratio[2:]} | {r['batches']}, "
                f"{r['output_rows']:,}, {r['seconds']:.1f} | "
                + (f"{f['seconds']:.1f}, {f['tiny_seconds']:.1f} |" if f else "- |")
            )
    head = section_head(
        BEGIN,
        "Nexmark window queries: overwindow and PyFlink",
        "benchmarks/nexmark.py",
        args.command,
        seconds,
        "pyspark",
        "pyarrow",
    )
    flink_note = (
        f"PyFlink: apache-flink in `{args.flink_python}`, parallelism 2, filesystem source (one JSON file), "
        "blackhole sinks."
        if flink
        else "PyFlink: not run (no `--flink-python`)."
    )
    body = [
        *head,
        f"- Input: {args.events:,} Nexmark events from seed {args.seed} (`benchmarks/nexmark_events.py`): "
        f"{counts['bids']:,} bids in {args.files} JSON lines files ({counts['first_file']:,} bids in the "
        f"first); event times 100 us apart (Nexmark's 10,000 events/s), watermark {WATERMARK_S} s.",
        f"- overwindow: `overwindow.sql` over the file stream, `keyBuckets={KEY_BUCKETS}`, "
        "`maxFilesPerTrigger` 1, availableNow, `noop` sink, local[2]. " + flink_note,
        "- Throughput: bids per second per core (2 cores each), start-up excluded: overwindow from the "
        "first micro-batch's end to the last one's (the first batch's bids left out), PyFlink the full "
        "input's extra bids over a tiny input's run, over the extra seconds. Nexmark's published figures "
        "count all events (bids are 92%).",
        "- Latency at a fixed rate: not measured yet.",
        "",
        *rows,
        "",
        "```",
        *lines,
        "```",
        END,
    ]
    return "\n".join(body), lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument(
        "--queries", nargs="*", default=[q.name for q in QUERIES], choices=[q.name for q in QUERIES]
    )
    p.add_argument("--emits", nargs="*", default=["on_window_close", "on_update"])
    p.add_argument("--flink-python", help="a Python with apache-flink (benchmarks/flink.py says how)")
    p.add_argument("--max-records", type=int, default=100_000)
    p.add_argument("--workdir", type=Path)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    args.command = "python benchmarks/nexmark.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:])
    )
    started = time.perf_counter()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ow-nexmark-"))
    ow, flink = {}, {}
    try:
        counts = write_inputs(work, args.events, args.files, args.seed)
        spark = spark_session("overwindow-nexmark", work / "warehouse", args.max_records)
        try:
            for query in QUERIES:
                if query.name not in args.queries:
                    continue
                for emit in (e for e in query.emits if e in args.emits):
                    run_overwindow(spark, query, emit, work / "tiny", work / "chk-warm")
                    r = run_overwindow(spark, query, emit, work / "bids", work / "chk")
                    ow[(query.name, emit)] = r
                    print(
                        f"overwindow {query.name} {emit}: {r['rate']:,.0f} bids/s/core, "
                        f"{r['seconds']:.1f} s, "
                        f"in {r['input_rows']:,} out {r['output_rows']:,}, batch ms {r['batch_ms']}, "
                        f"load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
        finally:
            spark.stop()
        if args.flink_python:
            flink = run_flink(args.flink_python, work, args.queries, counts["bids"], counts["tiny"])
            for name, f in flink.items():
                print(f"pyflink {name}: {f['rate']:,.0f} bids/s/core, {f['seconds']:.1f} s", flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    section, lines = render(args, counts, ow, flink, time.perf_counter() - started)
    print("\n".join(lines))
    publish(section, BEGIN, END, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
