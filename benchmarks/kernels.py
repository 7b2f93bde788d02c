"""Kernel benchmark: the same window queries through ``overwindow.evaluate`` and single-threaded DuckDB.

    python benchmarks/kernels.py                      # 5M rows, 1,000 partitions, best of 3
    python benchmarks/kernels.py --rows 200000 --repeat 1 --no-write   # quick run

Both engines get the same pyarrow Table (columns ``id``, ``k``, ``t``, ``x``) and both return an Arrow
table holding the input columns plus the result column: ``overwindow.evaluate(table, call)`` on one
side, ``con.sql("SELECT *, <call> AS r FROM t").to_arrow_table()`` on the other (``SET threads=1``).
Each query runs once per engine as a warm-up, then ``--repeat`` times per engine, alternating, and
the best time of each is kept. The warm-up results are compared row by row (floats to relative 1e-9).

The script rewrites the section of docs/benchmarks/kernels.md between ``<!-- kernels:begin -->`` and
``<!-- kernels:end -->`` (use ``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import gc
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
from common import section_head, write_section  # noqa: E402

import overwindow  # noqa: E402

BEGIN, END = "<!-- kernels:begin -->", "<!-- kernels:end -->"


@dataclass(frozen=True)
class Query:
    name: str
    sql: str  # the window call, without alias; the same text goes to both engines
    target: float  # overwindow/DuckDB time ratio to meet


# ROWS frames and lag are only deterministic under a total order: ``id`` breaks the ties in ``t``.
# rank and the RANGE frame are deterministic with ties, so they order by ``t`` alone.
ROWS_100 = "PARTITION BY k ORDER BY t, id ROWS BETWEEN 100 PRECEDING AND CURRENT ROW"
QUERIES = [
    Query("rows_sum", f"sum(x) OVER ({ROWS_100})", 1.0),
    Query("rows_min", f"min(x) OVER ({ROWS_100})", 1.0),
    Query("rows_max", f"max(x) OVER ({ROWS_100})", 1.0),
    Query(
        "range_avg", "avg(x) OVER (PARTITION BY k ORDER BY t RANGE BETWEEN 50 PRECEDING AND CURRENT ROW)", 1.0
    ),
    Query("rank", "rank() OVER (PARTITION BY k ORDER BY t)", 1.0),
    Query("lag", "lag(x) OVER (PARTITION BY k ORDER BY t, id)", 1.0),
    Query("rows_median", f"median(x) OVER ({ROWS_100})", 2.0),
]


def make_table(rows: int, partitions: int, seed: int) -> pa.Table:
    """``id`` 0..rows-1 (unique tiebreak), ``k`` one of ``partitions`` keys, ``t`` int64 with about two
    rows per value inside a partition, ``x`` float64 in [0, 1000) (positive, so relative error
    comparisons of sums are meaningful). Row order is random."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, partitions, rows, dtype=np.int64)
    per_partition = max(1, rows // partitions)
    t = rng.integers(0, max(1, per_partition // 2), rows, dtype=np.int64)
    x = rng.uniform(0.0, 1000.0, rows)
    return pa.table({"id": np.arange(rows, dtype=np.int64), "k": k, "t": t, "x": x})


def run_overwindow(table: pa.Table, q: Query) -> pa.Table:
    return overwindow.evaluate(table, f"{q.sql} AS r")


def run_duckdb(con, q: Query) -> pa.Table:
    return con.sql(f"SELECT *, {q.sql} AS r FROM t").to_arrow_table()


def timed(fn) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def compare(ow: pa.Table, dd: pa.Table, n: int) -> tuple[bool, str]:
    """overwindow keeps input order (row i has id i); DuckDB's order is its own, so reorder by id."""
    if ow.num_rows != n or dd.num_rows != n:
        return False, f"row counts {ow.num_rows} / {dd.num_rows}"
    ids = dd.column("id").to_numpy()
    order = np.empty(n, dtype=np.int64)
    order[ids] = np.arange(n)
    a = ow.column("r").combine_chunks()
    b = dd.column("r").combine_chunks().take(pa.array(order))
    a_null, b_null = a.is_null().to_numpy(zero_copy_only=False), b.is_null().to_numpy(zero_copy_only=False)
    if not np.array_equal(a_null, b_null):
        return False, f"NULLs differ in {int((a_null != b_null).sum())} rows"
    va = pc.fill_null(a, 0).to_numpy(zero_copy_only=False).astype(np.float64)
    vb = pc.fill_null(b, 0).to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_floating(a.type) or pa.types.is_floating(b.type):
        scale = np.maximum(np.abs(va), np.abs(vb))
        diff = np.abs(va - vb)
        rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
        worst = float(rel.max()) if n else 0.0
        bad = int((diff > 1e-9 * scale).sum())
        return bad == 0, (
            f"max rel err {worst:.1e}" if bad == 0 else f"{bad} rows differ, max rel err {worst:.1e}"
        )
    bad = int((va != vb).sum())
    return bad == 0, ("exact" if bad == 0 else f"{bad} rows differ")


def render(args, results, total_s: float) -> str:
    n = args.rows
    lines = [
        *section_head(
            BEGIN,
            "Kernels: overwindow vs single-threaded DuckDB",
            "benchmarks/kernels.py",
            args.command,
            total_s,
            "numpy",
            "pyarrow",
            "duckdb",
        ),
        f"- Data: {n:,} rows in {args.partitions:,} partitions (seed {args.seed}); `k` int64 partition key, "
        "`t` int64 with ties (about two rows per value per partition), `x` float64 in [0, 1000), "
        "`id` unique int64 tiebreak; rows in random order.",
        "- Both engines get the same pyarrow Table and return an Arrow table of the input columns plus "
        'the result: `overwindow.evaluate(table, "<call> AS r")` vs '
        '`con.sql("SELECT *, <call> AS r FROM t").to_arrow_table()` after `SET threads=1` and '
        "`con.register('t', table)`. overwindow's result is in input row order; DuckDB's is in its "
        "own (sorted) order, which costs it nothing extra.",
        f"- Timing: one warm-up run per engine, then {args.repeat} runs per engine alternating "
        "overwindow/DuckDB; best of each. Seconds are wall time (`time.perf_counter`).",
        "- Load: other jobs (test suites) were running on this machine at the same time. The ratios "
        "come from one process running the two engines one after the other, query by query, so both "
        "suffer the same background load; the absolute seconds and rows/s are noisier than the ratios.",
        "- Ratio = overwindow seconds / DuckDB seconds (< 1: overwindow faster). Target: ratio <= 1 for "
        "every query except the median, <= 2 for the median.",
        "- Equal: the warm-up results of the two engines compared row by row (matched on `id`; floats "
        "to relative 1e-9, NULLs must match).",
        "",
    ]
    met_all = True
    for r in results:
        q = r["query"]
        met = r["ratio"] <= q.target
        met_all &= met
        lines += [
            f"### `{q.name}`",
            "",
            f"`{q.sql}`",
            "",
            f"| engine | seconds (best of {args.repeat}) | rows/s |",
            "|---|---:|---:|",
            f"| overwindow | {r['ow']:.3f} | {n / r['ow']:,.0f} |",
            f"| DuckDB (1 thread) | {r['dd']:.3f} | {n / r['dd']:,.0f} |",
            "",
            f"Ratio {r['ratio']:.2f} (target <= {q.target:g}): **target {'met' if met else 'MISSED'}**. "
            f"Equal: {'yes' if r['equal'] else 'NO'} ({r['detail']}).",
            "",
        ]
    lines += [
        "### Summary",
        "",
        "| query | overwindow s | DuckDB s | ratio | target | met | equal |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        q = r["query"]
        lines.append(
            f"| {q.name} | {r['ow']:.3f} | {r['dd']:.3f} | {r['ratio']:.2f} | <= {q.target:g} | "
            f"{'yes' if r['ratio'] <= q.target else '**no**'} | {'yes' if r['equal'] else '**no**'} |"
        )
    missed = [r["query"].name for r in results if r["ratio"] > r["query"].target]
    lines += ["", "All targets met." if met_all else f"Targets missed: {', '.join(missed)}.", "", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--partitions", type=int, default=1_000)
    p.add_argument(
        "--repeat", type=int, default=3, help="timed runs per engine after one warm-up (best is kept)"
    )
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--only", nargs="*", help="query names to run (default: all)")
    p.add_argument("--out", type=Path, help="the page to write (default: docs/benchmarks/kernels.md)")
    p.add_argument("--no-write", action="store_true", help="print the section instead of updating its page")
    args = p.parse_args(argv)
    args.command = "python benchmarks/kernels.py" + "".join(
        f" {shlex.quote(a)}" for a in (argv if argv is not None else sys.argv[1:])
    )

    queries = [q for q in QUERIES if not args.only or q.name in args.only]
    started = time.perf_counter()
    table = make_table(args.rows, args.partitions, args.seed)
    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("t", table)

    results = []
    for q in queries:
        _, ow_out = timed(lambda: run_overwindow(table, q))
        _, dd_out = timed(lambda: run_duckdb(con, q))
        equal, detail = compare(ow_out, dd_out, table.num_rows)
        del ow_out, dd_out
        ow_times, dd_times = [], []
        for _ in range(args.repeat):
            ow_times.append(timed(lambda: run_overwindow(table, q))[0])
            dd_times.append(timed(lambda: run_duckdb(con, q))[0])
        ow, dd = min(ow_times), min(dd_times)
        results.append({"query": q, "ow": ow, "dd": dd, "ratio": ow / dd, "equal": equal, "detail": detail})
        print(
            f"{q.name:12s} overwindow {ow:8.3f}s  duckdb {dd:8.3f}s  ratio {ow / dd:6.2f} "
            f"(target <= {q.target:g}: {'met' if ow / dd <= q.target else 'MISSED'})  "
            f"equal: {equal} ({detail})",
            flush=True,
        )

    section = render(args, results, time.perf_counter() - started)
    if args.no_write:
        print(section)
    else:
        print(f"wrote {write_section(section, BEGIN, END, args.out)}")
    return 0 if all(r["equal"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
