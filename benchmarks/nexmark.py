"""Nexmark's window queries on overwindow and on PyFlink, with equal cores: throughput and latency.

    python benchmarks/nexmark.py --queries q18 --flink-python FLINKENV/bin/python  # one query, or several
    python benchmarks/nexmark.py --events 200000 --queries q19 --latency-seconds 0 --no-write  # a look

``--events`` Nexmark events (default 1,000,000; 92% of them bids, ``nexmark_events.py``) from
``--seed``; their bids are written as ``--files`` JSON lines files (one micro-batch each for Spark,
``maxFilesPerTrigger`` 1) and, joined, as one file for Flink (``nexmark_flink.py``). The queries
(``nexmark_queries.py``: q18, q19, a q6 over bids, a RANGE count) run on overwindow through
``overwindow.sql`` over the file stream with ``withWatermark("dateTime", "4 seconds")``, in every
emit mode the query takes, on the 16 key buckets it chooses (q19: ``keyBuckets=16`` given, its
ORDER BY not the watermarked time), into Spark's ``noop`` sink
(``local[2]``, 2 shuffle partitions, the tests' settings: ``common.spark_session``), with
``trigger(availableNow=True)``; and on PyFlink with parallelism 2 into ``blackhole`` sinks, in the
PyFlink venv (``--flink-python``; without it only overwindow runs). Both engines first run each
query on a tiny input, then ``--warm`` times on the full input (warm-up, untimed: each engine's JVM
compiles its hot code over the first runs; q18 on overwindow went 9,500 -> 16,600 -> 17,300 -> 23,700
bids/s/core over four runs of one input in one session).

Throughput is bids per second per core (2 cores for both), start-up excluded: for overwindow, the
bids of the micro-batches after the first over the time from the first micro-batch's end to the
last one's end (Spark's own progress times); for PyFlink, the extra bids of the full input over a
run on a tiny input, over the extra seconds (the job's start-up and teardown are in both runs).
Nexmark's published figures count all events read, persons and auctions too: divide a bid rate by
0.92 to compare.

Then each engine runs the query fed at a fixed rate, half the slower engine's throughput (over both
cores; the slowest emit mode), for ``--latency-seconds``: end-to-end latency p50 and p99, from a
bid's arrival to the commit of its row (``nexmark_latency.py`` says how each engine is measured).

Each query's figures are appended as one JSON record to ``--results``; the section of
docs/benchmarks/nexmark.md between ``<!-- nexmark:begin -->`` and ``<!-- nexmark:end -->`` is
written from the newest record of each query (unless ``--no-write``), one line per query and emit mode:
``q19: overwindow on_update N ev/s/core, PyFlink M ev/s/core, x R; latency p50 A s p99 B s``.
A query's runs take a few minutes (``--queries`` takes one or several); ``--report`` only writes the
section.
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
import nexmark_latency as nl  # noqa: E402
from common import ROOT, publish, revision, section_head, spark_session  # noqa: E402
from nexmark_queries import KEY_BUCKETS, QUERIES, WATERMARK_S  # noqa: E402

from overwindow.spark import compat  # noqa: E402

BEGIN, END = "<!-- nexmark:begin -->", "<!-- nexmark:end -->"
CORES = 2
RESULTS = ROOT / "benchmarks" / "results" / "nexmark.jsonl"
# Spark alone's runs (run_spark_alone): floor -> its name in the report
FLOORS = {"scan": "scan", "map": "Arrow map", "hosting": "hosting", "own": "own SQL"}


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
    bids_view(spark, folder)
    out = nl.overwindow_sql(spark, query, emit)
    return stream_rate(out, "append" if emit == "on_window_close" else "update", chk, query.name)


def run_spark_alone(spark, query, floor: str, folder: Path, chk: Path) -> dict:
    """The ceiling on Spark, as ``run_overwindow`` measures it: ``floor`` ``"scan"``, the file
    stream alone (the scan and JSON parse every query pays); ``"hosting"``, its bids through a
    pass-through ``applyInPandasWithState`` (``nexmark_latency.pass_through``: what any Python
    operator on Spark pays); ``"map"``, the same shuffle into a stateless ``mapInArrow``
    (``nexmark_latency.map_through``); ``"own"``, Spark's own streaming SQL for the query's rows
    (``query.spark``, update mode)."""
    out = nl.floor_query(spark, query, floor, bids_view(spark, folder))
    return stream_rate(out, "append" if floor in nl.APPENDED else "update", chk, "Spark")


def bids_view(spark, folder: Path):
    """The file stream of ``folder``'s bids, a file a micro-batch, watermarked, as the view ``bids``."""
    events = (
        spark.readStream.schema(ne.BID_DDL)
        .option("maxFilesPerTrigger", 1)
        .json(str(folder))
        .withWatermark("dateTime", f"{WATERMARK_S} seconds")
    )
    events.createOrReplaceTempView("bids")
    return events


def stream_rate(out, mode: str, chk: Path, name: str) -> dict:
    """Runs ``out`` into Spark's ``noop`` sink until its input is read: bids per second per core
    from the first micro-batch's end to the last one's (the first batch's bids left out)."""
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = (
        out.writeStream.format("noop")
        .option("checkpointLocation", str(chk))
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - started
    if q.exception() is not None:
        raise RuntimeError(f"{name} {mode}: {q.exception()}")
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


def run_flink(flink_python: str, work: Path, queries: list[str], bids: int, tiny: int, warm: int) -> dict:
    """PyFlink's runs (``nexmark_flink.py`` in its own venv): per query its seconds and rate."""
    script = Path(__file__).with_name("nexmark_flink.py")
    cmd = [flink_python, str(script), "--bids", str(work / "flink-bids.json")]
    cmd += ["--tiny", str(work / "flink-tiny.json"), "--warm", str(warm), "--queries", *queries]
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


def render(args, records: list[dict]) -> tuple[str, list[str]]:
    """The section from the newest record of each query (``records``: the results file's lines)."""
    newest = {r["query"]: r for r in records}
    named = "; ".join(FLOORS.values())
    lines, rows = (
        [],
        [
            "| query | emit | overwindow bids/s/core | PyFlink bids/s/core | x PyFlink | fixed rate, bids/s "
            "| overwindow latency p50, p99 s | PyFlink latency p50, p99 s | load (throughput; latency) "
            "| overwindow: micro-batches, output rows, s | PyFlink: s (full), s (tiny) "
            f"| Spark alone bids/s/core: {named} "
            "| overwindow's latency run, median micro-batch: bids, s, addBatch s, stateful operator s "
            f"| Spark alone's latency p50, p99 s (median micro-batch s): {named} |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|",
        ],
    )

    def lat(r):
        return f"{r['p50']:.2f}, {r['p99']:.2f}" if r and r.get("measured") else "-"

    def batch(r):
        m = (r or {}).get("micro_batch")
        return f"{m['bids']:,.0f}, {m['s']:.2f}, {m['add_batch_s']:.2f}, {m['state_s']:.2f}" if m else "-"

    def floor_cell(rec):
        floors = rec.get("spark_alone_latency") or {}

        def one(r):
            m = r.get("micro_batch") if r else None
            return lat(r) + (f" ({m['s']:.2f})" if m and r.get("measured") else "")

        return "; ".join(one(floors.get(k)) for k in FLOORS) if floors else "-"

    for query in QUERIES:
        rec = newest.get(query.name)
        if rec is None:
            continue
        f, fl = rec.get("flink"), rec.get("flink_latency")
        for emit, r in rec["overwindow"].items():
            ratio = f"x {r['rate'] / f['rate']:.2f}" if f else "x -"
            flink_rate = f"{f['rate']:,.0f}" if f else "-"
            ol = r.get("latency")
            every = rec.get("trigger", nl.SPARK_TRIGGER)
            said = f"latency p50 {ol['p50']:.2f} s p99 {ol['p99']:.2f} s" if ol else "latency not measured"
            said += f" (trigger {every})" if ol else ""
            if ol and not ol["measured"]:
                said = "latency: no row committed for a measured bid"
            if fl and fl.get("measured"):
                said += f"; PyFlink latency p50 {fl['p50']:.2f} s p99 {fl['p99']:.2f} s"
            alone = rec.get("spark_alone") or {}
            ceiling = "; ".join(f"{alone[k]:,.0f}" if k in alone else "-" for k in FLOORS)
            if alone:
                said += "; Spark alone: " + ", ".join(
                    f"{FLOORS[k]} {alone[k]:,.0f} ev/s/core" for k in FLOORS if k in alone
                )
            floors = (rec.get("spark_alone_latency") or {}).items()
            p99s = [f"{FLOORS[k]} {v['p99']:.2f} s" for k, v in floors if v.get("measured")]
            if p99s:
                said += ", latency p99 " + ", ".join(p99s)
            lines.append(
                f"{query.name}: overwindow {emit} {r['rate']:,.0f} ev/s/core, "
                f"PyFlink {flink_rate} ev/s/core, {ratio}; {said}"
            )
            loads = f"{r['load']:.1f}; " + (f"{ol['load']:.1f}, {fl['load']:.1f}" if ol and fl else "-")
            rows.append(
                f"| {query.name} | {emit} | {r['rate']:,.0f} | {flink_rate} | {ratio[2:]} | "
                f"{rec.get('fixed_rate', 0):,.0f} | {lat(ol)} ({every}) | {lat(fl)} | {loads} | "
                f"{r['batches']}, "
                f"{r['output_rows']:,}, {r['seconds']:.1f} | "
                + (f"{f['seconds']:.1f}, {f['tiny_seconds']:.1f} |" if f else "- |")
                + f" {ceiling if alone else '-'} | {batch(ol)} | {floor_cell(rec)} |"
            )
    commands = list(dict.fromkeys(newest[q.name]["command"] for q in QUERIES if q.name in newest))
    head = section_head(
        BEGIN,
        "Nexmark window queries: overwindow and PyFlink",
        "benchmarks/nexmark.py",
        "`; `".join(commands),
        sum(r["wall_s"] for r in newest.values()),
        "pyspark",
        "pyarrow",
        measured=False,
    )
    first = next(iter(newest.values()))
    measured_at = ", ".join(f"{q} at `{r.get('git', 'not recorded')}`" for q, r in newest.items())
    body = [
        *head,
        f"- Each query's record was measured with overwindow's revision: {measured_at}.",
        "- A command runs one query or several (holding the machine's Spark lock a few minutes a query) and"
        " appends a record per query to `benchmarks/results/nexmark.jsonl`; this section is written from the"
        " newest record of each query. The load average (1 minute) is given beside each figure: on a shared"
        " machine single figures move with it.",
        f"- Throughput input: {first['events']:,} Nexmark events from seed {first['seed']}"
        " (`benchmarks/nexmark_events.py`), their bids in JSON lines files; event times 100 us apart"
        f" (Nexmark's 10,000 events/s), watermark {WATERMARK_S} s.",
        "- overwindow: `overwindow.sql` over the file stream on the key buckets it chooses (16 on the 2"
        " shuffle partitions, spread over them; q19, whose ORDER BY is not the watermarked time,"
        f" `keyBuckets={KEY_BUCKETS}` given: a BIGINT bucket, 7 and 9 of them on the 2 partitions),"
        " local[2], the"
        " checkpoint manager `overwindow run` sets (`compat.use_filesystem_checkpoints`); for the"
        " throughput `maxFilesPerTrigger` 1, availableNow, `noop` sink. PyFlink: apache-flink, parallelism 2,"
        " filesystem source (one JSON file), blackhole sinks.",
        f"- Throughput: bids per second per core (2 cores each), after {first.get('warm_runs', 0)} untimed"
        " runs of the full input on each engine (its JVM's compilation done), start-up excluded: overwindow"
        " from the"
        " first micro-batch's end to the last one's (the first batch's bids left out), PyFlink the full"
        " input's extra bids over a tiny input's run, over the extra seconds. Nexmark's published figures"
        " count all events (bids are 92%).",
        "- Latency (`benchmarks/nexmark_latency.py`): bids fed at the fixed rate (half the slower engine's"
        " measured throughput over both cores, the slowest of the query's emit modes), a file every"
        f" {nl.CHUNK_S:g} s renamed into the watched folder, event times advancing at that rate, for"
        f" {first.get('latency_seconds', 0):g} s; a bid's latency runs from its file's rename to the first"
        " commit of a row for it (overwindow on update: to the commit of the micro-batch that read it, a row"
        " of its own or not, since Spark's update mode writes a key's last row of a micro-batch and a bid"
        " overtaken in it by a later bid of its key gets none): overwindow `foreachBatch` with"
        " `trigger(processingTime=...)` at the interval beside each figure (`--trigger`: a view's"
        f" `[sink] trigger`, `overwindow run`'s default {nl.SPARK_TRIGGER}), committed"
        " when Spark writes the micro-batch's commit log entry; PyFlink `print` sinks, the source watching"
        f" the folder every {nl.FLINK_MONITOR}, committed when the row's line reaches the benchmark. Bids"
        f" arriving in the first {first.get('warmup_s', 0):g} s (start-up) and the last"
        f" {first.get('tail_s', 0):g} s are left out, and bids without a row (PyFlink, overwindow on window"
        " close: outside q19's top 10)."
        " PyFlink's OVER aggregates emit on the watermark (as window close); its one latency is printed"
        " beside both of overwindow's emit modes. Start-up is left out of both as the throughput leaves it"
        " out: the folder starts with two warm-up bids of a key of its own, and the feed starts once the"
        " engine has committed a row for them (PyFlink's job running, overwindow's first micro-batch with"
        " a row run: its Python workers started). The last column: where overwindow's latency run spent"
        " its time, the medians over its micro-batches that read bids of the bids read, the micro-batch's"
        " seconds, Spark's `addBatch` (the plan run: scan, shuffle, stateful operator, sink) and the"
        " stateful operator's own (`allUpdatesTimeMs`, summed over its 2 tasks: the Python calls and"
        " the state store's updates); a micro-batch past the 1 s trigger means they ran back to back.",
        "- Spark alone: the ceiling any operator hosted on Spark works under, measured as overwindow's"
        " throughput and latency in the same command (the latency with the same feed, rate, trigger and"
        " `foreachBatch`, a bid committed with the micro-batch that read it): the file stream alone"
        " (scan: the scan and JSON parse every query pays; no shuffle, no state); the hosting every Python"
        f" operator on Spark pays, the bids grouped by {KEY_BUCKETS} buckets of the query's PARTITION BY"
        " (as overwindow groups them)"
        " columns through an `applyInPandasWithState` function passing them on and keeping a count"
        " (hosting: shuffle, Arrow both ways, the state store; no overwindow); the same shuffle into a"
        " `mapInArrow` function passing the Arrow batches on (Arrow map: no pandas, no state store;"
        " the least a Python operator keeping its state itself would pay; new with this round's"
        " records); and, where Spark has one, Spark's own streaming SQL for the"
        " same rows (q18: `max_by(struct(...), dateTime) ... GROUP BY bidder, auction`, update mode).",
        "",
        *rows,
        "",
        "```text",
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
    p.add_argument("--warm", type=int, default=3, help="untimed runs of the full input first, each engine")
    p.add_argument("--latency-seconds", type=float, default=40.0, help="0: no latency runs")
    p.add_argument("--warmup", type=float, default=10.0, help="latency: seconds left out at the start")
    p.add_argument("--tail", type=float, default=8.0, help="latency: seconds left out at the end")
    p.add_argument("--trigger", default=nl.SPARK_TRIGGER, help="latency: overwindow's processing-time")
    p.add_argument(
        "--rate", type=float, help="latency: bids a second (default: half the slower engine's throughput)"
    )
    p.add_argument(
        "--floors",
        nargs="*",
        default=list(FLOORS),
        choices=list(FLOORS),
        help="Spark alone's runs, throughput and latency (run_spark_alone, nexmark_latency.floor_latency)",
    )
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--workdir", type=Path)
    p.add_argument("--report", action="store_true", help="only write the section from --results")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    args.command = "python benchmarks/nexmark.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:])
    )
    if not args.report:
        run_queries(args)
    records = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    section, lines = render(args, records)
    print("\n".join(lines))
    publish(section, BEGIN, END, not args.no_write)
    return 0


def run_queries(args) -> None:
    """Each query of ``args.queries`` on both engines, its record appended to ``args.results``."""
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ow-nexmark-"))
    try:
        counts = write_inputs(work, args.events, args.files, args.seed)
        spark = spark_session("overwindow-nexmark", work / "warehouse", args.max_records)
        compat.use_filesystem_checkpoints(spark)  # as `overwindow run` commits its checkpoints
        try:
            for query in (q for q in QUERIES if q.name in args.queries):
                record = run_query(args, spark, query, work, counts)
                args.results.parent.mkdir(parents=True, exist_ok=True)
                with open(args.results, "a") as f:
                    f.write(json.dumps(record) + "\n")
        finally:
            spark.stop()
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


def run_query(args, spark, query, work: Path, counts: dict) -> dict:
    """One query on both engines: throughput in each emit mode, then latency at the fixed rate."""
    started = time.perf_counter()
    ow = {}
    for emit in (e for e in query.emits if e in args.emits):
        run_overwindow(spark, query, emit, work / "tiny", work / "chk-warm")
        for n in range(args.warm):
            run_overwindow(spark, query, emit, work / "bids", work / f"chk-warm{n}")
        r = run_overwindow(spark, query, emit, work / "bids", work / "chk")
        r["load"] = os.getloadavg()[0]
        ow[emit] = r
        print(
            f"overwindow {query.name} {emit}: {r['rate']:,.0f} bids/s/core, {r['seconds']:.1f} s, "
            f"in {r['input_rows']:,} out {r['output_rows']:,}, batch ms {r['batch_ms']}, "
            f"load {r['load']:.2f}",
            flush=True,
        )
    alone, run_floors = {}, [f for f in args.floors if f != "own" or query.spark]
    for floor in run_floors:
        for n in range(args.warm + 1):
            r = run_spark_alone(spark, query, floor, work / "bids", work / f"chk-spark{n}")
        alone[floor] = r["rate"]
        print(f"Spark alone, {floor}: {r['rate']:,.0f} bids/s/core, batch ms {r['batch_ms']}", flush=True)
    flink = None
    if args.flink_python:
        runs = run_flink(args.flink_python, work, [query.name], counts["bids"], counts["tiny"], args.warm)
        flink = runs.get(query.name)
        if flink:
            flink["load"] = os.getloadavg()[0]
            print(f"pyflink {query.name}: {flink['rate']:,.0f} bids/s/core, {flink['seconds']:.1f} s")
    rates = [r["rate"] for r in ow.values()] + ([flink["rate"]] if flink else [])
    fixed = args.rate or 0.5 * min(rates) * CORES
    flink_lat, floors = None, {}
    if args.latency_seconds > 0:
        timing = (args.latency_seconds, args.seed, args.warmup, args.tail)
        for emit, r in ow.items():
            r["latency"] = nl.overwindow_latency(
                spark, query, emit, work, fixed, *timing, trigger=args.trigger
            )
            print(f"overwindow {query.name} {emit} at {fixed:,.0f} bids/s: {r['latency']}", flush=True)
        if flink:
            flink_lat = nl.flink_latency(args.flink_python, query, work, fixed, *timing)
            print(f"pyflink {query.name} at {fixed:,.0f} bids/s: {flink_lat}", flush=True)
        for floor in run_floors:
            floors[floor] = nl.floor_latency(spark, query, floor, work, fixed, *timing, trigger=args.trigger)
            print(f"Spark alone, {floor}, at {fixed:,.0f} bids/s: {floors[floor]}", flush=True)
    return {
        "query": query.name,
        "overwindow": ow,
        "flink": flink,
        "spark_alone": alone,
        "fixed_rate": fixed,
        "flink_latency": flink_lat,
        "spark_alone_latency": floors,
        "events": args.events,
        "seed": args.seed,
        "files": args.files,
        "latency_seconds": args.latency_seconds,
        "trigger": args.trigger,
        "warmup_s": args.warmup,
        "warm_runs": args.warm,
        "tail_s": args.tail,
        "command": args.command,
        "git": revision(),
        "wall_s": time.perf_counter() - started,
    }


if __name__ == "__main__":
    sys.exit(main())
