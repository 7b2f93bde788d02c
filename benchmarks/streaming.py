"""Streaming benchmark: overwindow on Spark Structured Streaming against a no-op applyInPandasWithState.

    python benchmarks/streaming.py                        # 2M rows, 1,000 keys, 20 Parquet files
    python benchmarks/streaming.py --rows 200000 --no-write   # quick run
    python benchmarks/streaming.py --harness-only --profile   # the Python side alone, no Spark
    python benchmarks/streaming.py --sweep --points 1k 100k   # cardinality sweep (benchmarks/sweep.py)
    python benchmarks/streaming.py --sweep-report             # its results into docs/benchmarks/sweep.md

``--sweep`` runs the cardinality sweep of issue 19 instead (``benchmarks/sweep.py`` says what it
measures): per-entity calls over 1,000 to 1,000,000 keys, dense and sparse, each run appended as a
JSON record to ``--results``; run it point by point (each run holds the Spark lock) and render all
records, PyFlink's too (``benchmarks/flink.py``), with ``--sweep-report``.

One input: ``--rows`` rows over ``--keys`` keys (``k`` int32), event times ``ts`` in arrival order
(10 ms apart on average across all keys) plus a per-row jitter of up to ``--jitter`` seconds, ``rid``
a unique int64 row id, ``x`` float64. It is written as ``--files`` Parquet files with distinct
modification times and read by a Parquet file source with ``trigger(availableNow=True)`` and
``maxFilesPerTrigger`` (``--files-per-trigger``), so the query runs several micro-batches. The
watermark is ``withWatermark("ts", "<--delay> seconds")`` in every variant; the sink is
``format("noop")`` in every variant. Variants, each timed from ``start()`` to the end of
``awaitTermination()``:

- ``passthrough``: ``groupBy("k").applyInPandasWithState`` with a function that yields its input
  chunks unchanged and stores one tiny binary state value per key; append mode, EventTimeTimeout.
  This is the floor Spark imposes on any applyInPandasWithState query here.
- ``passthrough_state``: the same pass-through, its state a blob of 28 bytes (a row's data) per row
  of the call plus 100: the rows window close must hold until the next watermark passes them, plus
  the history ``ROWS 100 PRECEDING`` needs. The floor for carrying that state, without overwindow.
- ``handwritten``: what a user writes today instead: an applyInPandasWithState function for exactly
  these two calls in numpy, emitted on window close (``benchmarks/handwritten.py``).
- ``window_close``: ``groupBy("k").overWindow(OverWindow(SUM, LAG, rowKey="rid", keyBuckets="per key"))``,
  append mode.
- ``on_update``: the same calls with ``emit="on_update"``, update mode.

All variants run in one Spark session (the tests' settings: local[2], 2 shuffle partitions, UTC,
no Arrow fallback) with ``spark.sql.execution.arrow.maxRecordsPerBatch`` = ``--max-records``. Every
variant first runs once on a tiny input and once on the real input (warm-up: JVM code paths, Python
workers; untimed); then, ``--rounds`` times, each runs once on the real input, each run with a fresh
checkpoint; a variant's figure is its median run. Output rows are the sink's ``numOutputRows`` summed
over the query's progress; the state size is the last progress's ``memoryUsedBytes`` and
``numRowsTotal`` of the state operator (and the largest ``numRowsTotal`` seen in any batch).

``--harness`` (or ``--harness-only``) also replays the same micro-batches through the Python side
alone, without Spark: per batch the rows are split by key, each key's slice converted to pandas
(as Spark's worker does), passed to the same function object Spark would call (the pass-through, or
overwindow's adapter ``Runner`` with a stand-in GroupState), and the output converted back to
Arrow. ``--profile`` runs that replay of the two overwindow variants under pyinstrument and prints
the profiles.

The script rewrites the section of docs/benchmarks/streaming.md between ``<!-- streaming:begin -->`` and
``<!-- streaming:end -->`` (use ``--no-write`` to only print).
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sweep  # noqa: E402
from common import Passthrough, passthrough, section_head, spark_session, write_section  # noqa: E402
from handwritten import handwritten, handwritten_window_close  # noqa: E402

import overwindow  # noqa: E402

BEGIN, END = "<!-- streaming:begin -->", "<!-- streaming:end -->"
SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"
CALLS = (
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW) AS s100",
    "lag(x) OVER (ORDER BY ts) AS prev_x",
)
VARIANTS = ("passthrough", "passthrough_state", "handwritten", "window_close", "on_update")
ROW_BYTES, HISTORY = (
    28,
    100,
)  # passthrough_state: bytes of one row's data; rows a ROWS 100 PRECEDING frame keeps
TARGETS = {"window_close": 1.3, "on_update": 2.0}
T0_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z


# -- data ---------------------------------------------------------------------------------------------


def make_data(folder: Path, rows: int, keys: int, files: int, jitter_s: float, seed: int) -> None:
    """Row i arrives i-th; its event time is 10 ms * i plus a jitter in [0, jitter_s) seconds."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    i = np.arange(rows, dtype=np.int64)
    ts = T0_US + i * 10_000 + (rng.uniform(0, jitter_s, rows) * 1e6).astype(np.int64) // 1000 * 1000
    table = pa.table(
        {
            "k": rng.integers(0, keys, rows).astype(np.int32),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "rid": i,
            "x": np.round(rng.normal(size=rows), 6),
        }
    )
    bounds = np.linspace(0, rows, files + 1).astype(np.int64)
    now = time.time()
    for n in range(files):
        path = folder / f"part-{n:04d}.parquet"
        pq.write_table(table.slice(bounds[n], bounds[n + 1] - bounds[n]), path)
        t = now - files + n  # distinct modification times: the source takes files in this order
        os.utime(path, (t, t))


# -- Spark ----------------------------------------------------------------------------------------------


def build(spark, variant: str, src: str, delay_s: int, files_per_trigger: int):
    """(streaming DataFrame, output mode) of one variant."""
    events = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", files_per_trigger)
        .parquet(src)
        .withWatermark("ts", f"{delay_s} seconds")
    )
    grouped = events.groupBy("k")
    if variant == "passthrough":
        return passthrough(grouped, events.schema, "append"), "append"
    if variant == "passthrough_state":
        return passthrough(grouped, events.schema, "append", ROW_BYTES, HISTORY), "append"
    if variant == "handwritten":
        return handwritten(grouped), "append"
    if variant == "window_close":
        return grouped.overWindow(overwindow.OverWindow(*CALLS, rowKey="rid", keyBuckets="per key")), "append"
    spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="rid", keyBuckets="per key")
    return grouped.overWindow(spec), "update"


def run_query(spark, variant: str, src: str, chk: str, delay_s: int, files_per_trigger: int) -> dict:
    df, mode = build(spark, variant, src, delay_s, files_per_trigger)
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = (
        df.writeStream.format("noop")
        .option("checkpointLocation", chk)
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - started
    if q.exception() is not None:
        raise RuntimeError(f"{variant}: {q.exception()}")
    progress = q.recentProgress
    ops = [p.stateOperators[0] for p in progress if p.stateOperators]
    last = progress[-1]
    return {
        "seconds": seconds,
        "batches": len(progress),
        "data_batches": sum(1 for p in progress if p.numInputRows > 0),
        "input_rows": sum(p.numInputRows for p in progress),
        "output_rows": sum(p.sink.numOutputRows for p in progress),
        "state_bytes": last.stateOperators[0].memoryUsedBytes if last.stateOperators else None,
        "state_rows": last.stateOperators[0].numRowsTotal if last.stateOperators else None,
        "state_rows_max": max((o.numRowsTotal for o in ops), default=None),
        "state_bytes_max": max((o.memoryUsedBytes for o in ops), default=None),
        "dropped": sum(o.numRowsDroppedByWatermark for o in ops),
        "batch_ms": [p.batchDuration for p in progress],
        "load": os.getloadavg()[0],
    }


def run_spark(args, work: Path) -> dict:
    """Each variant ``--rounds`` times, the variants interleaved round by round (so slow phases of the
    machine hit every variant alike); per variant the run with the median seconds, plus every run's."""
    spark = spark_session("overwindow-streaming-benchmark", work / "warehouse", args.max_records)
    spark.sparkContext.addPyFile(str(Path(__file__).with_name("handwritten.py")))  # the workers import it
    runs: dict[str, list[dict]] = {v: [] for v in args.variants}
    try:
        # warm-ups first, so no timed run pays for the JVM's first steps: each variant on a tiny input,
        # then on the data (a JVM that has only seen the tiny input still compiles the paths the data
        # takes during the first full run: that run took 15 s where later ones took 11.6)
        for variant in args.variants:
            run_query(spark, variant, str(work / "tiny"), str(work / f"chk-warm-{variant}"), args.delay, 1)
        for variant in args.variants:
            run_query(
                spark,
                variant,
                str(work / "data"),
                str(work / f"chk-{variant}"),
                args.delay,
                args.files_per_trigger,
            )
        for n in range(args.rounds):
            for variant in args.variants:
                r = run_query(
                    spark,
                    variant,
                    str(work / "data"),
                    str(work / f"chk-{variant}"),
                    args.delay,
                    args.files_per_trigger,
                )
                runs[variant].append(r)
                print(
                    f"round {n + 1} {variant:13s} {r['seconds']:8.2f} s  batches {r['batches']} "
                    f"({r['data_batches']} with data)  in {r['input_rows']:,}  out {r['output_rows']:,}  "
                    f"state {r['state_rows']} rows / {r['state_bytes']:,} B "
                    f"(max {r['state_rows_max']} rows)  dropped {r['dropped']}  batch ms {r['batch_ms']}  "
                    f"load {r['load']:.2f}",
                    flush=True,
                )
    finally:
        spark.stop()
    results = {}
    for variant, rs in runs.items():
        median = sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2]
        results[variant] = dict(median, runs=[r["seconds"] for r in rs], loads=[r["load"] for r in rs])
    return results


def spark_schema():
    """SCHEMA as a StructType (built by hand: parsing DDL needs a running session)."""
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StructField, StructType, TimestampType

    return StructType(
        [
            StructField("k", IntegerType()),
            StructField("ts", TimestampType()),
            StructField("rid", LongType()),
            StructField("x", DoubleType()),
        ]
    )


# -- the Python side alone ---------------------------------------------------------------------------


class FakeState:
    """Just enough of pyspark's GroupState for the adapter."""

    def __init__(self, value, wm_ms):
        self.value, self.wm_ms, self.timeout = value, wm_ms, None

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return self.value

    @property
    def hasTimedOut(self):
        return False

    def update(self, value):
        self.value = value

    def getCurrentWatermarkMs(self):
        return self.wm_ms

    def setTimeoutTimestamp(self, ms):
        self.timeout = ms


def function_for(variant: str):
    """The object Spark's workers would call for this variant."""
    if variant == "passthrough":
        return Passthrough()
    if variant == "passthrough_state":
        return Passthrough(ROW_BYTES, HISTORY)
    if variant == "handwritten":
        return handwritten_window_close
    from overwindow.spark.adapter import Runner
    from overwindow.spark.boundary import arrow_schema

    schema = arrow_schema(spark_schema())
    emit = "on_window_close" if variant == "window_close" else "on_update"
    spec = overwindow.OverWindow(*CALLS, emit=emit, rowKey="rid", keyBuckets="per key")
    return Runner(spec, schema, watermarked=True)


def micro_batches(args, work: Path) -> list[pa.Table]:
    files = sorted((work / "data").glob("*.parquet"))
    out = []
    for n in range(0, len(files), args.files_per_trigger):
        t = pa.concat_tables([pq.read_table(f) for f in files[n : n + args.files_per_trigger]])
        out.append(
            t.set_column(1, "ts", t.column("ts").cast(pa.timestamp("us")))
        )  # wall clock, as in pandas UDFs
    return out


def replay(
    variant: str,
    batches: list[pa.Table],
    delay_s: int,
    timers: dict | None = None,
    max_records: int = 100_000,
    outputs: list | None = None,
) -> dict:
    """Every key of every micro-batch through the variant's function, converted as Spark's worker
    converts (pyspark's own Arrow-to-pandas per column, the columns joined by ``pd.concat``; the
    outputs of many keys joined and converted to Arrow at once, ``--max-records`` rows at a time);
    then one no-data batch for the keys whose event-time timeout the final watermark passed. The
    output record batches are appended to ``outputs`` if given."""
    import pandas as pd
    from pyspark.sql.conversion import ArrowBatchTransformer

    from overwindow.spark.handback import ROWS, decoded

    fn = function_for(variant)
    states: dict = {}
    timeouts: dict = {}
    wm_ms = 0
    out_rows = 0
    pending: list = []  # output frames not yet converted, and their rows
    held = 0
    t = timers if timers is not None else {}
    for key in ("to_pandas", "function", "from_pandas"):
        t.setdefault(key, 0.0)

    def flush():
        nonlocal out_rows, pending, held
        if pending:
            batch = pa.RecordBatch.from_pandas(pd.concat(pending, ignore_index=True), preserve_index=False)
            # overwindow's rows come back as Arrow streams, which the mapInArrow after it opens
            read = list(decoded(iter([batch]))) if batch.schema.names == [ROWS] else [batch]
            out_rows += sum(b.num_rows for b in read)
            if outputs is not None:
                outputs.extend(read)
        pending, held = [], 0

    def call(key, pdfs):
        st = FakeState(states.get(key), wm_ms)
        a = time.perf_counter()
        outs = list(fn((key,), iter(pdfs), st))
        b = time.perf_counter()
        nonlocal held
        pending.extend(o for o in outs if len(o))
        held += sum(len(o) for o in outs)
        if held > max_records:
            flush()
        t["function"] += b - a
        t["from_pandas"] += time.perf_counter() - b
        states[key] = st.value
        timeouts[key] = st.timeout

    for batch in batches:
        order = np.argsort(batch.column("k").to_numpy(), kind="stable")
        batch = batch.take(pa.array(order))
        k = batch.column("k").to_numpy()
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        ends = np.r_[starts[1:], len(k)]
        for s, e in zip(starts.tolist(), ends.tolist()):
            a = time.perf_counter()
            pdf = pd.concat(ArrowBatchTransformer.to_pandas(batch.slice(s, e - s), timezone="UTC"), axis=1)
            t["to_pandas"] += time.perf_counter() - a
            call(int(k[s]), [pdf])
        b = time.perf_counter()
        flush()
        t["from_pandas"] += time.perf_counter() - b
        wm_ms = max(wm_ms, int(batch.column("ts").cast(pa.int64()).to_numpy().max()) // 1000 - delay_s * 1000)
    # the no-data batch: keys whose event-time timeout is at or below the new watermark
    for key, when in list(timeouts.items()):
        if when is not None and when <= wm_ms:
            call(key, [])
    b = time.perf_counter()
    flush()
    t["from_pandas"] += time.perf_counter() - b
    sizes = [len(v[0]) for v in states.values() if v is not None]
    return {"output_rows": out_rows, "state_bytes": int(sum(sizes)), "keys": len(sizes), **t}


def run_harness(args, work: Path) -> dict:
    batches = micro_batches(args, work)
    results = {}
    outputs: dict[str, list] = {}
    for variant in args.variants:
        replay(variant, [b.slice(0, min(2000, b.num_rows)) for b in batches[:2]], args.delay)  # warm-up
        timers: dict = {}
        outputs[variant] = []
        a = time.perf_counter()
        r = replay(variant, batches, args.delay, timers, args.max_records, outputs[variant])
        r["seconds"] = time.perf_counter() - a
        results[variant] = r
        print(
            f"harness {variant:13s} {r['seconds']:7.2f} s  (to_pandas {r['to_pandas']:.2f}, function "
            f"{r['function']:.2f}, from_pandas {r['from_pandas']:.2f})  out {r['output_rows']:,}  "
            f"state {r['state_bytes']:,} B over {r['keys']} keys",
            flush=True,
        )
    if "handwritten" in outputs and "window_close" in outputs:
        results["handwritten"]["check"] = compare_outputs(outputs["handwritten"], outputs["window_close"])
        print(f"harness handwritten vs window_close: {results['handwritten']['check']}", flush=True)
    if args.profile:
        from pyinstrument import Profiler

        for variant in [v for v in args.variants if v != "passthrough"]:
            profiler = Profiler(interval=0.001)
            profiler.start()
            replay(variant, batches, args.delay, max_records=args.max_records)
            profiler.stop()
            print(f"\n===== pyinstrument: {variant} =====")
            print(profiler.output_text(unicode=False, color=False, show_all=False))
    return results


def compare_outputs(mine: list[pa.RecordBatch], theirs: list[pa.RecordBatch]) -> str:
    """Checks that two window-close outputs hold the same rows (by ``rid``) with the same input columns
    and ``prev_x``, and ``s100`` equal up to float rounding; returns the largest ``s100`` difference
    relative to the frame's magnitude. Raises AssertionError on any other difference."""
    a, b = (pa.Table.from_batches(t).sort_by("rid") for t in (mine, theirs))
    assert a.num_rows == b.num_rows, f"{a.num_rows:,} rows against {b.num_rows:,}"
    for name in ("rid", "k", "ts", "x", "prev_x"):
        assert a.column(name).cast(b.schema.field(name).type).equals(b.column(name)), f"column {name} differs"
    s_a, s_b = (t.column("s100").to_numpy() for t in (a, b))
    worst = float(np.max(np.abs(s_a - s_b) / np.maximum(1.0, np.abs(s_b)))) if len(s_b) else 0.0
    return f"same {a.num_rows:,} rows, same lag; sums differ by at most {worst:.1e} (relative)"


# -- report -----------------------------------------------------------------------------------------------


def render(args, spark_results: dict, harness: dict, total_s: float) -> str:
    n_batches = -(-args.files // args.files_per_trigger)
    lines = [
        *section_head(
            BEGIN,
            "Streaming: overwindow on Spark vs a no-op applyInPandasWithState",
            "benchmarks/streaming.py",
            args.command,
            total_s,
            "pyspark",
            "pandas",
            "numpy",
            "pyarrow",
        ),
        f"- Spark: local[2], 2 shuffle partitions, session time zone UTC, Arrow fallback off, "
        f"`spark.sql.execution.arrow.maxRecordsPerBatch={args.max_records}`, HDFS-backed state store "
        "(default).",
        f"- Data: {args.rows:,} rows, {args.keys:,} keys (seed {args.seed}); columns `k INT, ts TIMESTAMP, "
        f"rid BIGINT, x DOUBLE`; row i has event time 10 ms x i plus a jitter in [0, {args.jitter:g}) s, so "
        f"event times are in arrival order up to a few seconds. {args.files} Parquet files, read by a "
        f"Parquet file source with `maxFilesPerTrigger={args.files_per_trigger}` and "
        f"`trigger(availableNow=True)`: {n_batches} micro-batches with data "
        f"(about {args.rows // max(1, n_batches) // max(1, args.keys)} rows per key each), then no-data "
        f'batches as the watermark moves. `withWatermark("ts", "{args.delay} seconds")`; sink '
        '`format("noop")` for every variant.',
        '- Variants (same source, grouping `groupBy("k")`, watermark and sink):',
        "  - `passthrough`: `applyInPandasWithState` whose function yields its input chunks unchanged and "
        "stores a one-byte binary state per key; append mode, `EventTimeTimeout`. The floor Spark imposes.",
        f"  - `passthrough_state`: the same, its state a blob of {ROW_BYTES} bytes (one row's data) per row "
        f"of the call plus {HISTORY}, rewritten every call: about what window close must hold (the rows "
        "waiting for the next watermark, which Spark computes after the batch, plus the history the frame "
        "needs), without overwindow. Window close's ratio to it is overwindow's own cost beyond carrying "
        "that state.",
        "  - `handwritten`: what a user writes today instead: an `applyInPandasWithState` function for "
        "exactly these two calls, in numpy, emitting a row when the watermark passes it "
        "(`benchmarks/handwritten.py`: state an Arrow IPC blob of the waiting rows plus 100 rows of "
        "history; plain float sums). Window close's ratio to it is the cost of overwindow's generality.",
        f'  - `window_close`: `overWindow(OverWindow({", ".join(repr(c) for c in CALLS)}, rowKey="rid", '
        'keyBuckets="per key"))`, '
        "append mode.",
        '  - `on_update`: the same calls with `emit="on_update"`, update mode.',
        "- Timing: one Spark session; every variant first runs once on a tiny input (2,000 rows) and once "
        "on the data, untimed (warm-up: with the tiny input alone, whichever variant ran first on the data "
        "paid for the JVM compiling its paths, 15 s instead of 11.6 for the pass-through), then "
        f"{args.rounds} rounds in which each variant runs once on the data, in the order of the table, each "
        "run with a fresh checkpoint; seconds are wall time from `start()` to the end of "
        "`awaitTermination()` (sink included). The table shows each variant's median run (ratio: median "
        "over the pass-through's median) and every run's seconds; a single run varies by up to a second "
        "here. Output rows: the sink's `numOutputRows` summed over the progress. State: the last "
        "progress's state operator `numRowsTotal` / `memoryUsedBytes` (the HDFS provider's in-memory map, "
        "which keeps a few versions), and the largest `numRowsTotal` of any batch.",
        "- Load: 1-minute load average right after each timed run: "
        + "; ".join(f"{v} {', '.join(f'{x:.2f}' for x in r['loads'])}" for v, r in spark_results.items())
        + f" (on {os.cpu_count()} cores; Spark's JVM and two Python workers alone keep about 2 busy).",
        "",
        "| variant | seconds (median) | every run | ratio to passthrough | target | met | output rows "
        "| state rows (last / max) | state memory bytes (last) | dropped late |",
        "|---|---:|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    base = spark_results.get("passthrough", {}).get("seconds")
    for v, r in spark_results.items():
        ratio = r["seconds"] / base if base else float("nan")
        target = TARGETS.get(v)
        met = "" if target is None else ("yes" if ratio <= target else "**no**")
        lines.append(
            f"| {v} | {r['seconds']:.1f} | {', '.join(f'{x:.1f}' for x in r['runs'])} | {ratio:.2f} | "
            f"{'' if target is None else f'<= {target:g}'} | "
            f"{met} | {r['output_rows']:,} | {r['state_rows']:,} / {r['state_rows_max']:,} | "
            f"{r['state_bytes']:,} | {r['dropped']:,} |"
        )
    lines.append("")
    lines.append("Per-batch durations of the median runs (ms, from the progress, data batches first):")
    lines.append("")
    for v, r in spark_results.items():
        lines.append(f"- `{v}`: {', '.join(str(int(x)) for x in r['batch_ms'])}")
    lines.append("")
    hand = spark_results.get("handwritten", {}).get("seconds")
    if hand and "window_close" in spark_results:
        lines += [
            "Window close against the hand-written function: "
            f"{spark_results['window_close']['seconds'] / hand:.2f}x "
            f"(the hand-written function against the pass-through: {hand / base:.2f}x)."
            if base
            else "",
            "",
        ]
    missed = [
        v for v, r in spark_results.items() if v in TARGETS and base and r["seconds"] / base > TARGETS[v]
    ]
    if base:
        lines += ["All targets met." if not missed else f"Targets missed: {', '.join(missed)}.", ""]
    if harness:
        lines += [
            "### The Python side alone (no Spark)",
            "",
            "The same micro-batches replayed through the function Spark would call, per key, in one "
            "process (`--harness`): the key's rows converted to pandas, the function (the pass-through, or "
            "overwindow's adapter with a stand-in GroupState), its output converted back to Arrow. Spark "
            "runs this work in 2 Python workers, one per shuffle partition.",
            "",
            "| variant | seconds | Arrow -> pandas in | function | pandas -> Arrow out | output rows "
            "| state bytes at end |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for v, r in harness.items():
            lines.append(
                f"| {v} | {r['seconds']:.2f} | {r['to_pandas']:.2f} | {r['function']:.2f} | "
                f"{r['from_pandas']:.2f} | {r['output_rows']:,} | {r['state_bytes']:,} |"
            )
        lines.append("")
        if "check" in harness.get("handwritten", {}):
            lines += [f"Outputs, hand-written against window close: {harness['handwritten']['check']}.", ""]
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--keys", type=int, default=1_000)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--files-per-trigger", type=int, default=2)
    p.add_argument("--jitter", type=float, default=5.0, help="event-time jitter per row, seconds")
    p.add_argument("--delay", type=int, default=10, help="watermark delay, seconds")
    p.add_argument(
        "--max-records", type=int, default=100_000, help="spark.sql.execution.arrow.maxRecordsPerBatch"
    )
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--rounds", type=int, default=3, help="timed runs of every variant, interleaved")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument(
        "--harness", action="store_true", help="also replay the batches through the Python side alone"
    )
    p.add_argument("--harness-only", action="store_true", help="only the Python-side replay (no Spark)")
    p.add_argument("--profile", action="store_true", help="pyinstrument profiles of the Python-side replay")
    p.add_argument("--workdir", type=Path, help="where data and checkpoints go (default: a temporary folder)")
    p.add_argument("--out", type=Path, help="the page to write (default: the topic page holding the markers)")
    p.add_argument("--sweep", action="store_true", help="run the cardinality sweep (benchmarks/sweep.py)")
    p.add_argument("--sweep-report", action="store_true", help="write the sweep section from --results")
    p.add_argument("--points", nargs="*", default=["1k", "10k", "100k"], choices=list(sweep.POINTS))
    p.add_argument(
        "--sweep-variants", nargs="*", default=list(sweep.SPARK_VARIANTS), choices=sweep.SPARK_VARIANTS
    )
    p.add_argument("--batches", type=int, default=4, help="sweep: micro-batches with data")
    p.add_argument("--rows-per-batch", type=int, default=100_000, help="sweep: rows per dense micro-batch")
    p.add_argument("--touched", type=int, default=10_000, help="sweep: keys per sparse micro-batch")
    p.add_argument("--sparse-rows", type=int, default=20_000, help="sweep: rows per sparse micro-batch")
    p.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results" / "sweep.jsonl")
    p.add_argument(
        "--flink-python",
        help="sweep: a Python with apache-flink; each round also runs benchmarks/flink.py",
    )
    p.add_argument("--no-write", action="store_true", help="print the section instead of updating its page")
    args = p.parse_args(argv)
    args.command = "python benchmarks/streaming.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:])
    )

    if args.sweep_report:
        head = section_head(
            sweep.BEGIN,
            "Cardinality sweep: per-entity calls over 1,000 to 1,000,000 keys",
            "benchmarks/streaming.py --sweep-report",
            args.command,
            0,
            "pyspark",
            "pandas",
            "numpy",
            "pyarrow",
        )
        print(f"wrote {write_section(sweep.render(args.results, head), sweep.BEGIN, sweep.END, args.out)}")
        return 0
    started = time.perf_counter()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="ow-stream-bench-"))
    if args.sweep:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        try:
            sweep.run(args, work)
        finally:
            if args.workdir is None:
                shutil.rmtree(work, ignore_errors=True)
        return 0
    try:
        make_data(work / "data", args.rows, args.keys, args.files, args.jitter, args.seed)
        make_data(work / "tiny", 2_000, 10, 2, args.jitter, args.seed + 1)
        spark_results = {} if args.harness_only else run_spark(args, work)
        harness = run_harness(args, work) if (args.harness or args.harness_only or args.profile) else {}
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.harness_only:
        return 0
    section = render(args, spark_results, harness, time.perf_counter() - started)
    if args.no_write:
        print(section)
    else:
        print(f"wrote {write_section(section, BEGIN, END, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
