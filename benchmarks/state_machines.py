"""State-machine benchmark: the streaming machines driven by ``overwindow.streaming.driver.Driver``,
no Spark.

    python benchmarks/state_machines.py                       # both parts, default sizes
    python benchmarks/state_machines.py --rows 200000         # a quicker workload part
    python benchmarks/state_machines.py --profile             # pyinstrument profiles, printed

(a) Workload: the streaming benchmark's input (``benchmarks/streaming.py``: ``--rows`` rows over
1,000 keys, event times 10 ms apart plus a jitter of up to 5 s, unique ``rid``, ``x`` float64) fed in
10 micro-batches, with a watermark of (largest event time seen so far - 10 s) passed to each batch
(as Spark does: the watermark computed after the previous batch), then one no-data batch. The calls
are the streaming benchmark's ``sum(x) OVER (ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW)``
and ``lag(x) OVER (ORDER BY ts)``, in both emit modes. Reported: seconds spent in ``machine.step``
(summed over every key of every batch) and the Driver's whole time (grouping included).

(b) Per-batch cost vs state size, emit on update, no watermark: 100 keys already hold N rows in
total (in state after one batch); one 1,000-row micro-batch of new events (10 per key, event times
just after the held ones, up to 50 ms of jitter: mostly appends, some land among the last rows) is
fed to the driver; the states are restored before each repeat so every repeat sees the same state.
Baseline: ``overwindow.evaluate`` of the same calls, ``PARTITION BY k``, over the N + 1,000 rows
(recomputing everything), in the same process. Ratio = per-batch time / recompute time.

Timing: best of ``--repeat`` runs (wall time, ``time.perf_counter``).
"""

from __future__ import annotations

import argparse
import importlib
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import overwindow  # noqa: E402
from overwindow.spec import OverWindow  # noqa: E402
from overwindow.streaming.driver import Driver  # noqa: E402

CALLS = (
    "sum(x) OVER (ORDER BY ts ROWS BETWEEN 100 PRECEDING AND CURRENT ROW) AS s100",
    "lag(x) OVER (ORDER BY ts) AS prev_x",
)
SCHEMA = pa.schema([("k", pa.int32()), ("ts", pa.timestamp("us")), ("rid", pa.int64()), ("x", pa.float64())])
T0_US = 1_704_067_200_000_000
DELAY_US = 10_000_000


def make_rows(
    rows: int, keys: int, seed: int, first: int = 0, step_us: int = 10_000, jitter_s: float = 5.0
) -> pa.Table:
    """Row i (numbered from ``first``) arrives i-th with event time step_us * i plus a jitter."""
    rng = np.random.default_rng(seed)
    i = np.arange(first, first + rows, dtype=np.int64)
    ts = T0_US + i * step_us + (rng.uniform(0, jitter_s, rows) * 1e6).astype(np.int64) // 1000 * 1000
    return pa.table(
        {
            "k": rng.integers(0, keys, rows).astype(np.int32),
            "ts": pa.array(ts, pa.timestamp("us")),
            "rid": i,
            "x": np.round(rng.normal(size=rows), 6),
        },
        schema=SCHEMA,
    )


class Timed:
    """Wraps a machine's ``step`` to sum the seconds spent inside it."""

    def __init__(self, machine):
        self.seconds = 0.0
        inner = machine.step

        def step(*a, **kw):
            t = time.perf_counter()
            try:
                return inner(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t

        machine.step = step


def machines_at(rev: str):
    """The streaming package ``overwindow/streaming`` as committed at ``rev``, loaded under a private
    name beside the current one (its own imports of ``overwindow.streaming`` rewritten to it; the rest
    of ``overwindow`` is the current one), so one process can time both under the same background
    load. Returns that package's ``driver`` module."""
    name = "_at_" + "".join(c if c.isalnum() else "_" for c in rev) + "_streaming"
    root = Path(tempfile.mkdtemp(prefix="ow_machines_"))
    (root / name).mkdir()
    files = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{rev}:overwindow/streaming"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for file in (f for f in files if f.endswith(".py")):
        src = subprocess.run(
            ["git", "show", f"{rev}:overwindow/streaming/{file}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        # the batch evaluator's module was overwindow/evaluate.py before it was overwindow/evaluator.py
        src = src.replace("from overwindow.evaluate import", "from overwindow.evaluator import")
        (root / name / file).write_text(src.replace("overwindow.streaming", name))
    sys.path.insert(0, str(root))
    return importlib.import_module(f"{name}.driver")


def new_driver(spec: OverWindow, watermarked: bool, driver_module=None) -> tuple[Driver, Timed]:
    """A Driver running the current machines, or those of ``driver_module`` (see ``machines_at``)."""
    driver = (driver_module.Driver if driver_module else Driver)(spec, SCHEMA, ["k"], watermarked=watermarked)
    return driver, Timed(driver.machine)


def workload(emit: str, rows: int, keys: int, batches: int, seed: int, mods=None) -> dict:
    """Part (a): one run of the streaming workload in one emit mode."""
    data = make_rows(rows, keys, seed)
    driver, timed = new_driver(OverWindow(*CALLS, emit=emit, rowKey="rid"), True, mods)
    bounds = np.linspace(0, rows, batches + 1).astype(np.int64)
    watermark, out_rows = None, 0
    started = time.perf_counter()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = data.slice(lo, hi - lo)
        out_rows += driver.feed(part, watermark).num_rows
        top = int(part.column("ts").cast(pa.int64()).to_numpy().max()) - DELAY_US
        watermark = top if watermark is None else max(watermark, top)
    out_rows += driver.feed(None, watermark).num_rows  # the no-data batch: timeouts fire
    return {
        "total": time.perf_counter() - started,
        "step": timed.seconds,
        "out": out_rows,
        "state_rows": driver.state_rows(),
    }


def per_batch(total_state: int, keys: int, repeat: int, seed: int, variants: dict) -> dict:
    """Part (b): one 1,000-row on-update batch into ``keys`` keys holding ``total_state`` rows, for
    each variant (name -> the driver module of ``machines_at``, None for the current one), repeats
    interleaved."""
    spec = OverWindow(*CALLS, emit="on_update", rowKey="rid")
    # each key's rows 10 ms apart on average, like the workload; a 50 ms jitter puts a new row among
    # the last few rows of its key
    step_us = 10_000 // keys
    held = make_rows(total_state, keys, seed, step_us=step_us, jitter_s=0.05)
    batch = make_rows(1_000, keys, seed + 1, first=total_state, step_us=step_us, jitter_s=0.05)
    runs = {}
    for name, mods in variants.items():
        driver, timed = new_driver(spec, False, mods)
        driver.feed(held)
        runs[name] = (driver, timed, dict(driver.states))
    calls = spec.partitioned(("k",))
    everything = pa.concat_tables([held, batch])
    out = {name: {"feed": [], "step": []} for name in variants}
    recompute = []
    for _ in range(repeat):
        for name, (driver, timed, saved) in runs.items():
            driver.states = dict(saved)
            timed.seconds = 0.0
            t = time.perf_counter()
            emitted = driver.feed(batch).num_rows
            out[name]["feed"].append(time.perf_counter() - t)
            out[name]["step"].append(timed.seconds)
            out[name]["out"] = emitted
            out[name]["state_bytes"] = sum(len(s) for s in saved.values())
        t = time.perf_counter()
        overwindow.evaluate(everything, *calls)
        recompute.append(time.perf_counter() - t)
    for r in out.values():
        r["feed"], r["step"], r["recompute"] = min(r["feed"]), min(r["step"]), min(recompute)
    return out


def profile(args) -> None:
    from pyinstrument import Profiler

    for title, run in (
        (
            "(b) one batch, on update, 1M rows held",
            lambda: per_batch(1_000_000, 100, 3, args.seed, {"now": None}),
        ),
        ("(a) workload, on update", lambda: workload("on_update", args.rows, 1_000, 10, args.seed)),
        ("(a) workload, window close", lambda: workload("on_window_close", args.rows, 1_000, 10, args.seed)),
    ):
        p = Profiler(interval=0.001)
        p.start()
        run()
        p.stop()
        print(f"==== {title}")
        print(p.output_text(unicode=False, color=False, show_all=False))


def git_rev() -> str:
    try:
        rev = subprocess.run(
            ["git", "log", "-1", "--format=%h"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "overwindow/streaming"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        return rev + (" + uncommitted changes under overwindow/streaming" if dirty else "")
    except OSError:
        return "unknown"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=2_000_000, help="rows of the workload part")
    p.add_argument("--sizes", default="100000,300000,1000000", help="state sizes of the per-batch part")
    p.add_argument("--repeat", type=int, default=5, help="repeats of the per-batch part")
    p.add_argument("--workload-repeat", type=int, default=1, help="repeats of the workload part")
    p.add_argument("--before", metavar="REV", help="also time the machines as committed at REV, interleaved")
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--profile", action="store_true", help="print pyinstrument profiles instead of timing")
    p.add_argument("--skip-workload", action="store_true")
    args = p.parse_args()
    if args.profile:
        profile(args)
        return
    variants = {"now": None}
    if args.before:
        variants = {f"before ({args.before})": machines_at(args.before), "now": None}
    print(
        f"overwindow at {git_rev()}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"pyarrow {pa.__version__}",
        flush=True,
    )
    print(f"\n(b) per-batch cost, emit on update, 100 keys, one 1,000-row batch (best of {args.repeat})\n")
    print(
        "| machine | rows held | state bytes | Driver.feed s | in step s | recompute s | feed / recompute "
        "| rows emitted |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        for name, r in per_batch(size, 100, args.repeat, args.seed, variants).items():
            print(
                f"| {name} | {size:,} | {r['state_bytes']:,} | {r['feed']:.4f} | {r['step']:.4f} | "
                f"{r['recompute']:.4f} | {r['feed'] / r['recompute']:.3f} | {r['out']:,} |",
                flush=True,
            )
    if args.skip_workload:
        return
    print(
        f"\n(a) workload: {args.rows:,} rows, 1,000 keys, 10 batches + 1 no-data batch, watermark 10 s "
        f"(best of {args.workload_repeat})\n"
    )
    print("| machine | emit | Driver total s | in step s | rows emitted | rows left in state |")
    print("|---|---|---:|---:|---:|---:|")
    for emit in ("on_window_close", "on_update"):
        best = {}
        for _ in range(args.workload_repeat):
            for name, mods in variants.items():
                r = workload(emit, args.rows, 1_000, 10, args.seed, mods)
                if name not in best or r["step"] < best[name]["step"]:
                    best[name] = r
        for name, r in best.items():
            print(
                f"| {name} | {emit} | {r['total']:.2f} | {r['step']:.2f} | {r['out']:,} "
                f"| {r['state_rows']:,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
