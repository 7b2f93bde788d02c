"""Cardinality sweep (issue 19): the same per-entity calls over 1,000 to 1,000,000 keys, dense and sparse.

Run through ``benchmarks/streaming.py --sweep`` (Spark) and ``benchmarks/flink.py`` (PyFlink); both
read the same CSV files, written here from a seed, and append one JSON record per run to a results
file; ``streaming.py --sweep-report`` turns that file into the ``sweep`` section of docs/benchmarks/sweep.md.

Points (``--points``), each a folder of CSV files, one per micro-batch (``k,ts,rid,x``; event times
in arrival order, 1 ms apart across all keys, plus up to ``JITTER_MS`` of jitter):

- ``1k``, ``10k``, ``50k``, ``100k``, ``1m``: dense, ``--batches`` micro-batches of ``--rows-per-batch`` rows,
  every key in every micro-batch (each micro-batch is every key repeated, shuffled). The same rows
  at every point but the key column; a micro-batch holds at least one row per key, so ``1m`` takes
  1,000,000 rows per micro-batch when ``--rows-per-batch`` is smaller (the table says so).
- ``100k-sparse``, ``1m-sparse``, ``3m-sparse``: a first micro-batch with one row for each of
  100,000, 1,000,000 or 3,000,000 keys (it fills the state; not counted in the latencies), then ``--batches``
  micro-batches of ``--sparse-rows`` rows over ``--touched`` keys drawn at random (every drawn key
  gets a row): the same work per micro-batch over 10x more keys held.

The last file holds one row far in the future, so the watermark passes every row and the no-data
micro-batch after it releases whatever window close still holds.

Spark variants (``SPARK_VARIANTS``), all
``groupBy("k")`` on ``withWatermark("ts", "10 seconds")`` into the ``noop`` sink, CSV file source
with ``maxFilesPerTrigger=1``:

- ``passthrough``: the no-op applyInPandasWithState (one byte of state per key, append mode,
  event-time timeouts): the floor of any per-key Python function;
- ``window_close`` / ``on_update``: ``overWindow(OverWindow(*CALLS, rowKey="rid", keyBuckets="per key"))``
  in each mode;
- ``passthrough_bucketed`` / ``tws_passthrough_bucketed``: the same no-op grouped by
  ``pmod(xxhash64(k), 64)``, on applyInPandasWithState and on transformWithStateInPandas (RocksDB;
  one byte of state per bucket): the floors of the two bucketed hostings, Spark's cost per
  micro-batch with any work in Python reduced to nothing;
- ``window_close_bucketed`` / ``on_update_bucketed``: each mode with ``keyBuckets=64`` (one call
  and state per bucket);
- ``window_close_chosen`` / ``on_update_chosen``: each mode without ``keyBuckets``: the hosting
  ``overWindow`` chooses (16 buckets on these 2 shuffle partitions, the watermark bounding both
  modes' state);
- ``window_close_chunked_bucketed``: window close with ``stateLayout="chunked"`` and
  ``keyBuckets=64`` (``transformWithStateInPandas``: a bucket's pending rows in its value, each
  key's history an entry, read only when the key releases rows);
- ``on_update_chunked`` / ``on_update_chunked_bucketed``: emit on update with
  ``stateLayout="chunked"``, per key and with ``keyBuckets=64`` (``transformWithStateInPandas``:
  a group per key, or per bucket with each key's index and chunks entries of its maps), on the
  RocksDB state store, which the other variants do not use.

Reported per run: seconds from ``start()`` to the end of ``awaitTermination()``, rows/s (input
rows over those seconds), and the micro-batch durations (``batchDuration``) of the micro-batches with
data: median and p99 (with a handful of micro-batches the p99 is the slowest one).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

CALLS = (
    "lag(x) OVER (ORDER BY ts) AS prev_x",
    "avg(x) OVER (ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS avg10",
    "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 1 MINUTE PRECEDING AND CURRENT ROW) AS n1m",
)
SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"
POINTS = {
    "1k": (1_000, False),
    "10k": (10_000, False),
    "50k": (50_000, False),
    "100k": (100_000, False),
    "1m": (1_000_000, False),
    "100k-sparse": (100_000, True),
    "1m-sparse": (1_000_000, True),
    "3m-sparse": (3_000_000, True),
}
DELAY_S = 10
JITTER_MS = 5_000
T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
BEGIN, END = "<!-- sweep:begin -->", "<!-- sweep:end -->"


# -- data ------------------------------------------------------------------------------------------


def make_point(
    folder: Path,
    point: str,
    batches: int,
    rows_per_batch: int,
    touched: int,
    sparse_rows: int,
    seed: int = 20240601,
) -> dict:
    """Writes the point's CSV files (one per micro-batch, distinct modification times in order);
    returns a description (keys, rows per micro-batch, total rows)."""
    keys, sparse = POINTS[point]
    rng = np.random.default_rng(seed)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sizes = []
    if sparse:
        # two one-row micro-batches after the fill move the watermark past it: the second releases
        # the fill's rows (a million keys step there, outside the measured micro-batches)
        plan = [("fill", keys), ("advance", 1), ("advance", 1)] + [("touch", sparse_rows)] * batches
    else:
        plan = [("dense", max(rows_per_batch, keys))] * batches
    rid = 0
    x_all = np.round(rng.normal(size=sum(n for _, n in plan)), 3)
    for b, (kind, n) in enumerate(plan):
        if kind == "dense":
            k = np.resize(np.arange(keys, dtype=np.int64), n)
            rng.shuffle(k)
        elif kind == "fill":
            k = rng.permutation(keys)
        elif kind == "advance":
            k = np.zeros(1, np.int64)
        else:
            chosen = rng.choice(keys, touched, replace=False)
            k = chosen[rng.integers(0, touched, n)]
            k[:touched] = chosen
        ts = T0_MS + rid + np.arange(n) + rng.integers(0, JITTER_MS, n)
        write_csv(folder / f"part-{b:04d}.csv", k, ts, np.arange(rid, rid + n), x_all[rid : rid + n])
        sizes.append(n)
        rid += n
    last = T0_MS + rid + 3_600_000  # moves the watermark past every row
    write_csv(
        folder / f"part-{len(plan):04d}.csv",
        np.array([0]),
        np.array([last]),
        np.array([rid]),
        np.array([0.0]),
    )
    now = time.time()
    files = sorted(folder.glob("*.csv"))
    for i, f in enumerate(files):
        os.utime(f, (now - len(files) + i, now - len(files) + i))
    return {"keys": keys, "sparse": sparse, "rows_per_batch": sizes, "rows": rid + 1}


def write_csv(path: Path, k, ts_ms, rid, x) -> None:
    """``k,ts,rid,x`` without a header; ts as ``yyyy-MM-dd HH:mm:ss.SSS`` (UTC), read alike by Spark and
    Flink."""
    stamps = np.datetime_as_string(np.asarray(ts_ms, dtype="datetime64[ms]"), unit="ms")
    text = "\n".join(
        f"{a},{s.replace('T', ' ')},{b},{c!r}"
        for a, s, b, c in zip(k.tolist(), stamps.tolist(), rid.tolist(), x.tolist())
    )
    path.write_text(text + "\n")


# -- Spark -----------------------------------------------------------------------------------------


def spark_variant(grouped, events, name: str):
    """(streaming DataFrame, output mode) of a Spark variant of the sweep."""
    from common import passthrough, tws_passthrough

    import overwindow

    if name == "passthrough":
        return passthrough(grouped, events.schema, "append"), "append"
    if name in ("passthrough_bucketed", "tws_passthrough_bucketed"):  # the floors of the two operators
        from pyspark.sql import functions as F

        bucketed = events.withColumn("b", F.pmod(F.xxhash64("k"), F.lit(BUCKETS)))
        if name == "passthrough_bucketed":
            return passthrough(bucketed.groupBy("b"), bucketed.schema, "append"), "append"
        return tws_passthrough(bucketed.groupBy("b"), bucketed.schema), "update"
    if name == "window_close":
        return grouped.overWindow(overwindow.OverWindow(*CALLS, rowKey="rid", keyBuckets="per key")), "append"
    if name in ("window_close_chosen", "on_update_chosen"):  # no keyBuckets: what overWindow chooses
        emit = "on_window_close" if name.startswith("window_close") else "on_update"
        spec = overwindow.OverWindow(*CALLS, emit=emit, rowKey="rid")
        return grouped.overWindow(spec), "append" if emit == "on_window_close" else "update"
    if name in ("window_close_bucketed", "window_close_chunked_bucketed"):
        layout = "chunked" if "chunked" in name else "whole"
        spec = overwindow.OverWindow(*CALLS, rowKey="rid", keyBuckets=BUCKETS, stateLayout=layout)
        return grouped.overWindow(spec), "append"
    if name == "on_update":
        spec = overwindow.OverWindow(*CALLS, emit="on_update", rowKey="rid", keyBuckets="per key")
        return grouped.overWindow(spec), "update"
    if name in ("on_update_bucketed", "on_update_chunked", "on_update_chunked_bucketed"):
        layout = "chunked" if "chunked" in name else "whole"
        buckets = BUCKETS if name.endswith("bucketed") else "per key"
        spec = overwindow.OverWindow(
            *CALLS, emit="on_update", rowKey="rid", keyBuckets=buckets, stateLayout=layout
        )
        return grouped.overWindow(spec), "update"
    raise ValueError(name)


SPARK_VARIANTS = (
    "passthrough",
    "passthrough_bucketed",
    "tws_passthrough_bucketed",
    "window_close",
    "window_close_bucketed",
    "window_close_chosen",
    "on_update_chosen",
    "window_close_chunked_bucketed",
    "on_update",
    "on_update_bucketed",
    "on_update_chunked",
    "on_update_chunked_bucketed",
)
_STORE = (
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
)


def _state_store(spark, variant: str) -> None:
    """RocksDB for the chunked layout and the transformWithStateInPandas no-op (that operator needs
    it), Spark's default store for the others, as they were measured before. A query keeps the
    store it was started with."""
    from overwindow.spark.adapter import use_rocksdb

    if "chunked" in variant or variant.startswith("tws"):
        use_rocksdb(spark)
    else:
        for key in _STORE:
            spark.conf.unset(key)


BUCKETS = 64  # keyBuckets of the bucketed hosting: 32 calls per shuffle partition and micro-batch


def run_spark_point(spark, src: Path, chk: Path, variant: str) -> dict:
    events = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .option("timestampFormat", "yyyy-MM-dd HH:mm:ss.SSS")
        .csv(str(src))
        .withWatermark("ts", f"{DELAY_S} seconds")
    )
    _state_store(spark, variant)
    df, mode = spark_variant(events.groupBy("k"), events, variant)
    shutil.rmtree(chk, ignore_errors=True)
    started = time.perf_counter()
    q = (
        df.writeStream.format("noop")
        .option("checkpointLocation", str(chk))
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    seconds = time.perf_counter() - started
    if q.exception() is not None:
        raise RuntimeError(f"{variant}: {q.exception()}")
    prog = q.recentProgress
    return {
        "seconds": seconds,
        "batch_ms": [p.batchDuration for p in prog],
        "batch_rows": [p.numInputRows for p in prog],
        "output_rows": sum(p.sink.numOutputRows for p in prog),
        "dropped": sum(o.numRowsDroppedByWatermark for p in prog for o in p.stateOperators),
    }


def latencies(record: dict) -> list[float]:
    """Durations of the micro-batches with data (sparse: without the first, which fills the state;
    the one-row micro-batch that moves the watermark is left out too)."""
    pairs = [(ms, n) for ms, n in zip(record["batch_ms"], record["batch_rows"]) if n > 1]
    return [ms for ms, _ in pairs[1 if record["sparse"] else 0 :]]


def run(args, work: Path) -> None:
    """Every point in ``args.points``: its data, then each variant ``args.rounds`` times (interleaved,
    after one untimed warm-up run of each variant on 100,000 rows), one JSON record per run."""
    from common import spark_session

    spark = spark_session("overwindow-sweep", work / "warehouse", args.max_records)
    try:
        # the warm-up: 100,000 rows in two micro-batches per variant, enough for the JVM's JIT (with
        # 2,000 rows the first point measured ran 1.4-1.7x slower than the same point run second)
        tiny = work / "tiny"
        make_point(tiny, "1k", 2, 50_000, 0, 0)
        for v in args.sweep_variants:
            run_spark_point(spark, tiny, work / "chk-tiny", v)
        for point in args.points:
            src = work / point
            info = make_point(src, point, args.batches, args.rows_per_batch, args.touched, args.sparse_rows)
            for r in range(args.rounds):
                for v in args.sweep_variants:
                    rec = run_spark_point(spark, src, work / f"chk-{point}-{v}", v)
                    rec.update(
                        info,
                        engine="spark",
                        point=point,
                        variant=v,
                        round=r,
                        load=os.getloadavg()[0],
                        command=args.command,
                    )
                    lat = latencies(rec)
                    print(
                        f"sweep {point} {v} round {r}: {rec['seconds']:.1f} s, "
                        f"{info['rows'] / rec['seconds']:,.0f} rows/s, "
                        f"median {statistics.median(lat):.0f} ms, max {max(lat):.0f} ms, "
                        f"out {rec['output_rows']:,}, "
                        f"batches {rec['batch_ms']}, load {rec['load']:.2f}",
                        flush=True,
                    )
                    append(args.results, rec)
                if args.flink_python:
                    run_flink(args, point, r)
            shutil.rmtree(src, ignore_errors=True)
    finally:
        spark.stop()


def run_flink(args, point: str, round_: int) -> None:
    """One round of ``benchmarks/flink.py`` on ``point`` (the same rows, written again from the same
    seed), its records under this command and round, so the report compares within the run. Spark's
    JVM idles meanwhile."""
    flink = Path(__file__).resolve().parent / "flink.py"
    sizes = ["--batches", args.batches, "--rows-per-batch", args.rows_per_batch]
    sizes += ["--touched", args.touched, "--sparse-rows", args.sparse_rows]
    subprocess.run(
        [args.flink_python, flink, "--points", point, *map(str, sizes), "--rounds", "1"]
        + ["--first-round", str(round_), "--results", str(args.results), "--command", args.command],
        check=True,
    )


def append(path: Path, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


# -- report ----------------------------------------------------------------------------------------


def _ratio(runs: list[dict], base: list[dict], med: dict, base_s: float | None) -> str:
    """A variant's seconds over the passthrough's: within each run (same command and round) where the
    passthrough ran beside it, else across runs (marked ``~``)."""
    same = {(b["command"], b["round"]): b["seconds"] for b in base}
    within = [
        r["seconds"] / same[(r["command"], r["round"])] for r in runs if (r["command"], r["round"]) in same
    ]
    if within:
        return f"{statistics.median(within):.2f}"
    return f"~{med['seconds'] / base_s:.2f}" if base_s else ""


def _flink_ratio(runs: list[dict], flink: list[dict]) -> str:
    """PyFlink's seconds for the three calls over a Spark variant's, in the same command and round
    (how many times PyFlink's throughput the variant has), the median over rounds; blank where
    PyFlink did not run beside it."""
    same = {(f["command"], f["round"]): f["seconds"] for f in flink}
    within = [
        same[(r["command"], r["round"])] / r["seconds"] for r in runs if (r["command"], r["round"]) in same
    ]
    return f"{statistics.median(within):.2f}" if within else ""


def render(results: Path, head: list[str]) -> str:
    """The sweep page's section from every record of the results file (Spark and PyFlink runs)."""
    records = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    by: dict = {}
    for r in records:
        by.setdefault((r["point"], r["engine"], r["variant"]), []).append(r)
    commands = list(dict.fromkeys(r["command"] for r in records))
    lines = [*head, "- Runs:", *(f"  - `{c}`" for c in commands)]
    lines += [
        f'- Calls (one query): {", ".join(f"`{c}`" for c in CALLS)}, `groupBy("k")`, `rowKey="rid"`;'
        f" watermark {DELAY_S} s; event times 1 ms apart in arrival order plus up to {JITTER_MS / 1000:g} s"
        " of jitter. Spark: CSV file source, one file per micro-batch, `noop` sink, local[2], 2 shuffle"
        " partitions. PyFlink: the same CSV files, one job per window (`benchmarks/flink.py`).",
        "- Dense points: every key in every micro-batch; sparse: a first micro-batch fills 1,000,000 keys"
        " (left out of the latencies), then each micro-batch touches the given rows over 10,000 keys.",
        "- rows/s: input rows over the run's seconds (start to end, the last no-data micro-batch"
        " included); micro-batch ms: `batchDuration` of the micro-batches with data, median and p99 over"
        " every run of the variant (with a handful of micro-batches the p99 is the slowest).",
        "- ratio to passthrough: the median over runs of the run's seconds over the passthrough's in the"
        " same command and round (the machine's load moves single figures, ratios within a run much"
        " less); `~`: no passthrough ran beside it, the ratio of the median runs of different commands.",
        "- x PyFlink: PyFlink's seconds for the three calls (three jobs) over the variant's, in the same"
        " command and round (`--flink-python`), the median over rounds: the variant's throughput in"
        " multiples of PyFlink's.",
        "",
    ]
    lines += [
        "| point | keys | rows (per micro-batch) | engine | variant | runs, s | rows/s (median run) "
        "| micro-batch ms, median | p99 | ratio to passthrough | x PyFlink | output rows |",
        "|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    order = {p: i for i, p in enumerate(POINTS)}
    for (point, engine, variant), rs in sorted(
        by.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1] != "spark")
    ):
        med = sorted(rs, key=lambda r: r["seconds"])[len(rs) // 2]
        base = by.get((point, "spark", "passthrough"))
        base_s = sorted(b["seconds"] for b in base)[len(base) // 2] if base else None
        lat = [ms for r in rs for ms in latencies(r)] if engine == "spark" else []
        per = sorted(set(med["rows_per_batch"][1:] if med["sparse"] else med["rows_per_batch"]))
        runs = ", ".join(f"{r['seconds']:.1f}" for r in rs)
        sizes = ", ".join(f"{p:,}" for p in per)
        lat_cells = f"{statistics.median(lat):.0f} | {np.percentile(lat, 99):.0f}" if lat else " | "
        ratio = _ratio(rs, base or [], med, base_s)
        flink = by.get((point, "pyflink", "the three calls (three jobs)"), [])
        x_flink = _flink_ratio(rs, flink) if engine == "spark" else ""
        out = f"{med['output_rows']:,}" if med.get("output_rows") is not None else ""
        lines.append(
            f"| {point} | {med['keys']:,} | {med['rows']:,} ({sizes}) | {engine} | {variant} | {runs} | "
            f"{med['rows'] / med['seconds']:,.0f} | {lat_cells} | {ratio} | {x_flink} | {out} |"
        )
    lines += ["", END]
    return "\n".join(lines)
