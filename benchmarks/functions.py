"""Every aggregate of the function catalog over a sliding ROWS frame: the batch evaluator's seconds
(the kernels the streaming modes run for each batch's affected frames), as a ratio to ``sum(x)``
over the same frame in the same process, at two frame widths: a kernel that slides (adds the row
entering, drops the row leaving) costs about the same at both; one that recomputes each frame costs
about ``wide / narrow`` times more at the wider one.

    python benchmarks/functions.py                       # rewrites its section of its page
                                                         # (docs/benchmarks/functions.md)
    python benchmarks/functions.py --rows 20000 --no-write

Exits non-zero if a call fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import publish, section_head  # noqa: E402

import overwindow  # noqa: E402
from overwindow.logical.functions import BUILTINS, Kind  # noqa: E402

BEGIN, END = "<!-- functions:begin -->", "<!-- functions:end -->"
# the functions issue 39 brought to windows (the rest were computed before it)
NEW = {
    "collect_list", "collect_set", "listagg", "max_by", "min_by", "corr", "covar_pop", "covar_samp",
    "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx",
    "regr_sxy", "regr_syy", "skewness", "kurtosis", "percentile_approx", "approx_count_distinct",
    "histogram_numeric", "bit_and", "bit_or", "bit_xor", "try_sum", "try_avg",
}  # fmt: skip
# a call per function over the table's columns (x, y DOUBLE with NULLs; i BIGINT; s STRING; b
# BOOLEAN; a ARRAY<BIGINT>); a function not listed is called on x
CALLS = {
    "count_star": "count(*)",
    "count_distinct": "count(DISTINCT i)",
    "bool_and": "bool_and(b)",
    "bool_or": "bool_or(b)",
    "bit_and": "bit_and(i)",
    "bit_or": "bit_or(i)",
    "bit_xor": "bit_xor(i)",
    "percentile_cont": "percentile_cont(0.25) WITHIN GROUP (ORDER BY x)",
    "percentile_disc": "percentile_disc(0.25) WITHIN GROUP (ORDER BY x)",
    "mode": "mode(i)",
    "collect_set": "collect_set(i)",
    "collect_union": "collect_union(a)",
    "listagg": "listagg(s, ',')",
    "max_by": "max_by(s, x)",
    "min_by": "min_by(s, x)",
    "percentile_approx": "percentile_approx(x, 0.5)",
    "approx_count_distinct": "approx_count_distinct(i)",
    "histogram_numeric": "histogram_numeric(x, 5)",
    **{name: f"{name}(y, x)" for name in BUILTINS if name.startswith(("regr_", "covar_", "corr"))},
}


def table(rows: int, partitions: int, seed: int = 20241129) -> pa.Table:
    """``rows`` rows in ``partitions`` partitions, ordered by ``t`` within each."""
    rng = np.random.default_rng(seed)
    x = rng.normal(100, 30, rows)
    y = 2 * x + rng.normal(0, 10, rows)
    null = rng.random(rows) < 0.05
    i = rng.integers(0, 50, rows)
    return pa.table(
        {
            "k": rng.integers(0, partitions, rows),
            "t": np.arange(rows),
            "x": pa.array(x, mask=null),
            "y": pa.array(y, mask=rng.random(rows) < 0.05),
            "i": i,
            "s": pa.array([f"s{v}" for v in i]),
            "b": rng.random(rows) < 0.7,
            "a": pa.array([[int(v), int(v) + 1] for v in i]),
        }
    )


def seconds(data: pa.Table, call: str, width: int, repeat: int) -> float:
    """Best of ``repeat`` runs of the call over ROWS BETWEEN ``width`` PRECEDING AND CURRENT ROW."""
    text = f"{call} OVER (PARTITION BY k ORDER BY t ROWS BETWEEN {width} PRECEDING AND CURRENT ROW) AS r"
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        overwindow.evaluate(data, text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--narrow", type=int, default=10)
    parser.add_argument("--wide", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    data = table(args.rows, args.partitions)
    names = [name for name, f in BUILTINS.items() if f.kind is Kind.AGGREGATE]
    seconds(data, "sum(x)", args.narrow, 1)  # warm-up: imports and first-call costs
    base = {w: seconds(data, "sum(x)", w, args.repeat) for w in (args.narrow, args.wide)}
    rows, failed = [], []
    for name in names:
        call = CALLS.get(name, f"{name}(x)")
        try:
            narrow, wide = (seconds(data, call, w, args.repeat) for w in (args.narrow, args.wide))
        except Exception as error:  # a failing call is reported, not hidden
            failed.append(f"`{call}`: {type(error).__name__}: {error}")
            continue
        rows.append((name, call, narrow, wide))
        print(f"{call}: {narrow:.3f} s, {wide:.3f} s", file=sys.stderr)
    n, w = args.narrow, args.wide
    command = "python benchmarks/functions.py" + "".join(
        f" --{k} {v}"
        for k, v in (("rows", args.rows), ("partitions", args.partitions), ("narrow", n), ("wide", w))
        if v != parser.get_default(k)
    )
    lines = section_head(
        BEGIN,
        "Functions over a sliding frame: every aggregate of the catalog",
        "benchmarks/functions.py",
        command,
        time.perf_counter() - started,
        "numpy",
        "pyarrow",
    )
    lines += [
        f"- Data: {args.rows:,} rows in {args.partitions} partitions, ordered by a unique `t`; `x`, `y` "
        "DOUBLE with 5% NULLs, `i` BIGINT of 50 values, `s` its STRING, `b` BOOLEAN, `a` ARRAY<BIGINT>.",
        f'- Each call: `overwindow.evaluate(table, "<call> OVER (PARTITION BY k ORDER BY t ROWS BETWEEN '
        f'<w> PRECEDING AND CURRENT ROW) AS r")`, best of {args.repeat}; the baseline `sum(x)` over '
        f"the same frame in the same process took {base[n]:.3f} s (w = {n}) and {base[w]:.3f} s (w = {w}).",
        f"- `x sum(x)`: the call's seconds over `sum(x)`'s at the same width. `{w}/{n}`: its seconds at "
        f"w = {w} over w = {n}: about 1 for a kernel that slides, about {w // n} for one that recomputes "
        "each frame. **new**: brought to windows by issue 39.",
        "",
        f"| call | w = {n}: s | x sum(x) | w = {w}: s | x sum(x) | {w}/{n} |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, call, narrow, wide in rows:
        mark = " **new**" if name in NEW else ""
        lines.append(
            f"| `{call}`{mark} | {narrow:.3f} | {narrow / base[n]:.1f} | {wide:.3f} | "
            f"{wide / base[w]:.1f} | {wide / narrow:.1f} |"
        )
    if failed:
        lines += ["", "Failed:", *(f"- {f}" for f in failed)]
    lines.append(END)
    publish("\n".join(lines), BEGIN, END, write=not args.no_write)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
