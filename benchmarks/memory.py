"""Bounded memory: a long stream (10M rows by default) with a watermark, in both emit modes; state
bytes, JVM and Python worker memory sampled after every micro-batch must stay flat after warm-up.

    python benchmarks/memory.py                          # 10M rows, 1,000 keys, 100 Parquet files
    python benchmarks/memory.py --rows 1000000 --files 20 --no-write   # quick run

Data as in benchmarks/streaming.py: event times 1 ms apart in arrival order plus a jitter of up to
2 s; ``withWatermark("ts", "5 seconds")``; calls ``sum(x) OVER (ORDER BY ts ROWS BETWEEN 100
PRECEDING AND CURRENT ROW)`` and ``lag(x)``; one Parquet file per micro-batch; noop sink. Each
mode runs in its own process (a fresh JVM, so the curves do not mix). After every micro-batch:
the state operator's ``memoryUsedBytes`` and ``numRowsTotal`` (from the progress), the JVM's heap
in use right after a forced full collection (``System.gc()``, then ``totalMemory - freeMemory``:
live data) and its resident set (which follows the heap the JVM chose to reserve, up to
``spark.driver.memory``), and the resident set of all
Python worker processes under the JVM (psutil). Flat means: the mean of the last quarter of the
batches is within 1.25x of the mean of the second quarter (the first quarter is warm-up).

Writes benchmarks/results/memory.png and the section of docs/benchmarks/memory.md between
``<!-- memory:begin -->`` and ``<!-- memory:end -->`` (``--no-write`` only prints).

The soak (``--soak``; issue 18): a million distinct keys that come and go, and one hot key, in a
driver of 1 GB (Spark's default, the memory the view sets), window close with ``keyBuckets`` and
``stateTtl``: file f's rows go to keys f*K/F .. (f+1)*K/F - 1 (each key lives in one file, about
100 s of event time) except ``--hot`` of them, which go to key -1 in every file. Without the TTL
every key ever seen keeps its rows; with it, state holds the keys of the last minute or so::

    python benchmarks/memory.py --soak          # 10M rows, 1,000,000 keys + 1 hot key, 100 files
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import ROOT, section_head, spark_session, write_section  # noqa: E402

import overwindow  # noqa: E402

BEGIN, END = "<!-- memory:begin -->", "<!-- memory:end -->"
SOAK_BEGIN, SOAK_END = "<!-- soak:begin -->", "<!-- soak:end -->"
SCHEMA = "k INT, ts TIMESTAMP, rid BIGINT, x DOUBLE"
CALLS = (
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW) AS s100",
    "lag(x) OVER (ORDER BY ts) AS prev_x",
)
MODES = ("on_window_close", "on_update")
SERIES = (
    ("state_mb", "state (memoryUsedBytes), MB"),
    ("jvm_heap_mb", "JVM heap live after GC, MB"),
    ("jvm_rss_mb", "JVM resident, MB"),
    ("python_rss_mb", "Python workers resident, MB"),
)
FLAT = 1.25
PNG = ROOT / "benchmarks" / "results" / "memory.png"
T0_US = 1_704_067_200_000_000


def write_files(folder: Path, rows: int, keys: int, files: int, seed: int, hot: float | None = None) -> None:
    """``hot`` None: keys drawn from all ``keys`` in every file; a fraction: file f's keys from its
    own slice of ``keys`` and that fraction of its rows on the hot key -1 (the soak)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    per = rows // files
    for f in range(files):
        rid = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        jitter = (rng.uniform(0, 2, per) * 1e3).astype(np.int64) * 1_000
        path = folder / f"{f:04d}.parquet"
        if hot is None:
            k = rng.integers(0, keys, per)
        else:
            k = rng.integers(f * keys // files, (f + 1) * keys // files, per)
            k[rng.random(per) < hot] = -1
        pq.write_table(
            pa.table(
                {
                    "k": k.astype(np.int32),
                    "ts": pa.array(T0_US + rid * 1_000 + jitter, pa.timestamp("us")),
                    "rid": rid,
                    "x": rng.integers(0, 1_000, per).astype(np.float64),
                }
            ),
            path,
        )
        os.utime(path, (1_000 + f, 1_000 + f))


def child(mode: str, src: Path, work: Path, out: Path, options: dict) -> None:
    """Runs one mode's stream and writes its samples (one per micro-batch with data) as JSON;
    ``options``: driver memory, and OverWindow's keyBuckets, stateTtl and stateLayout."""
    import psutil

    spark = spark_session(
        f"overwindow-memory-{mode}", work / "warehouse", max_records=100_000, driver_memory=options["memory"]
    )
    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    jvm = psutil.Process(spark._jvm.java.lang.ProcessHandle.current().pid())
    layout = options.get("layout", "whole")
    if layout == "chunked":  # transformWithStateInPandas needs RocksDB
        from overwindow.spark.adapter import use_rocksdb

        use_rocksdb(spark)
    spec = overwindow.OverWindow(
        *CALLS,
        emit=mode,
        rowKey="rid",
        keyBuckets=options["buckets"] or "per key",
        stateTtl=options["ttl"],
        stateLayout=layout,
    )
    events = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
        .withWatermark("ts", "5 seconds")
    )
    query = (
        events.groupBy("k")
        .overWindow(spec)
        .writeStream.format("noop")
        .outputMode("append" if mode == "on_window_close" else "update")
        .option("checkpointLocation", str(work / f"chk-{mode}"))
        .trigger(availableNow=True)
        .start()
    )
    samples, seen, rows = [], -1, 0
    while True:
        done = query.awaitTermination(0.5)
        p = query.lastProgress
        if p is not None and p["batchId"] != seen:
            seen = p["batchId"]
            rows += p["numInputRows"]
            op = p["stateOperators"][0] if p["stateOperators"] else {}
            workers = [c for c in jvm.children(recursive=True) if "python" in _name(c)]
            samples.append(
                {
                    "batch": seen,
                    "rows": rows,
                    "input_rows": p["numInputRows"],
                    "state_mb": op.get("memoryUsedBytes", 0) / 2**20,
                    "state_keys": op.get("numRowsTotal", 0),
                    "jvm_heap_mb": _live_heap(spark, runtime) / 2**20,
                    "jvm_rss_mb": jvm.memory_info().rss / 2**20,
                    "python_rss_mb": sum(_rss(w) for w in workers) / 2**20,
                    "workers": len(workers),
                    "batch_ms": p["batchDuration"],
                }
            )
        if done:
            break
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    spark.stop()
    out.write_text(json.dumps([s for s in samples if s["input_rows"] > 0]))


def _live_heap(spark, runtime) -> int:
    """The JVM heap in use right after a full collection: live data, not the garbage a sample
    between collections happens to catch (a full GC per micro-batch; this benchmark times nothing)."""
    spark._jvm.java.lang.System.gc()
    return runtime.totalMemory() - runtime.freeMemory()


def _name(process) -> str:
    try:
        return process.name().lower()
    except Exception:  # a worker that exited between listing and reading
        return ""


def _rss(process) -> int:
    try:
        return process.memory_info().rss
    except Exception:  # a worker that exited between listing and reading
        return 0


def growth(samples: list[dict], key: str) -> float:
    """Mean of the last quarter over the mean of the second quarter (after warm-up)."""
    n = len(samples)
    second = [s[key] for s in samples[n // 4 : n // 2]]
    last = [s[key] for s in samples[3 * n // 4 :]]
    return float(np.mean(last) / max(np.mean(second), 1e-9))


def plot(results: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(len(SERIES), 1, figsize=(9, 2.4 * len(SERIES)), sharex=True)
    for ax, (key, label) in zip(axes, SERIES):
        for mode, samples in results.items():
            ax.plot([s["rows"] / 1e6 for s in samples], [s[key] for s in samples], label=mode, linewidth=1.2)
        ax.set_ylabel(label, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8, loc="lower right")
    axes[-1].set_xlabel("rows processed (millions)")
    fig.suptitle(
        "overwindow: memory along a long stream with a watermark (benchmarks/memory.py)", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--keys", type=int, default=1_000)
    p.add_argument("--files", type=int, default=100)
    p.add_argument("--seed", type=int, default=9)
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--soak", action="store_true", help="the million-key soak (see above)")
    p.add_argument("--hot", type=float, default=0.2, help="the soak: the hot key's share of the rows")
    p.add_argument("--buckets", type=int, help="OverWindow keyBuckets (the soak: 64)")
    p.add_argument("--ttl", help="OverWindow stateTtl (the soak: '30 seconds')")
    p.add_argument("--layout", choices=("whole", "chunked"), default="whole", help="OverWindow stateLayout")
    p.add_argument("--driver-memory", default=None, help="spark.driver.memory (4g; the soak: 1g)")
    p.add_argument(
        "--child", nargs=5, metavar=("MODE", "SRC", "WORK", "OUT", "OPTIONS"), help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    if args.child:
        mode, src, work, out, options = args.child
        child(mode, Path(src), Path(work), Path(out), json.loads(options))
        return 0
    if args.soak:
        args.keys = 1_000_000 if args.keys == 1_000 else args.keys
        args.modes = ["on_window_close"]
        args.buckets, args.ttl = args.buckets or 64, args.ttl or "30 seconds"
    options = {
        "memory": args.driver_memory or ("1g" if args.soak else "4g"),
        "buckets": args.buckets,
        "ttl": args.ttl,
        "layout": args.layout,
    }
    command = shlex.join(["python", "benchmarks/memory.py", *(argv if argv is not None else sys.argv[1:])])
    work = Path(tempfile.mkdtemp(prefix="ow-mem-"))
    started = time.perf_counter()
    results = {}
    try:
        write_files(
            work / "data", args.rows, args.keys, args.files, args.seed, args.hot if args.soak else None
        )
        for mode in args.modes:
            out = work / f"{mode}.json"
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    mode,
                    str(work / "data"),
                    str(work),
                    str(out),
                    json.dumps(options),
                ],
                check=True,
            )
            results[mode] = json.loads(out.read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - started
    begin, end = (SOAK_BEGIN, SOAK_END) if args.soak else (BEGIN, END)
    if args.soak:
        calls = ", ".join(f"`{c}`" for c in CALLS)
        setup = (
            f"- The soak: {args.rows:,} rows in {args.files} Parquet files, one per micro-batch; "
            f"{args.keys:,} distinct keys, each in one file only (about {args.keys // args.files:,} per "
            f"file), and one hot key with {args.hot:.0%} of every file's rows; watermark 5 s; calls "
            f"{calls}; window close with `keyBuckets={args.buckets}`, `stateTtl={args.ttl!r}`; driver "
            f"memory {options['memory']} (`local[2]`: the executors run in the driver's JVM)."
        )
    else:
        setup = (
            f"- {args.rows:,} rows, {args.keys:,} keys, {args.files} Parquet files, one per micro-batch; "
            f"watermark 5 s; calls {', '.join(f'`{c}`' for c in CALLS)}; each mode in a fresh JVM (driver "
            f"memory {options['memory']})."
        )
    lines = [
        *section_head(
            begin,
            "The million-key soak" if args.soak else "Bounded memory along a long stream",
            "benchmarks/memory.py",
            command,
            total,
            "pyspark",
            "pandas",
            "numpy",
            "pyarrow",
        ),
        setup + f" Flat: the mean over the last quarter of the batches within {FLAT:g}x of the mean over "
        "the second quarter (the first quarter is warm-up).",
        "",
        *(() if args.soak else ("![memory along the stream](../../benchmarks/results/memory.png)", "")),
        "| mode | batches | series | at 25% | at 50% | at 100% | last quarter / second quarter | flat |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for mode, samples in results.items():
        n = len(samples)
        for key, label in SERIES:
            g = growth(samples, key)
            lines.append(
                f"| {mode} | {n} | {label} | {samples[n // 4][key]:.1f} | {samples[n // 2][key]:.1f} | "
                f"{samples[-1][key]:.1f} | {g:.2f} | {'yes' if g <= FLAT else '**no**'} |"
            )
    for mode, samples in results.items():
        ms = [s["batch_ms"] for s in samples]
        peak = {key: max(s[key] for s in samples) for key in ("state_keys", "jvm_rss_mb", "python_rss_mb")}
        lines.append(
            f"\n{mode}: state values at the end {samples[-1]['state_keys']:,} (most {peak['state_keys']:,}); "
            f"micro-batch median {np.median(ms) / 1e3:.2f} s, slowest {max(ms) / 1e3:.2f} s; peak JVM "
            f"resident {peak['jvm_rss_mb']:.0f} MB, peak Python workers {peak['python_rss_mb']:.0f} MB."
        )
    lines.append(end)
    section = "\n".join(lines)
    print(section)
    if not args.no_write:
        if not args.soak:
            plot(results, PNG)
        write_section(section, begin, end)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
