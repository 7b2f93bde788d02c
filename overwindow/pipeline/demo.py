"""``overwindow demo``: the main job on embedded defaults.

Two bundled samples are replayed as streams of files into views kept in one SQLite file (emit on
window close):

- the plant output (overwindow/data/plant_daily.csv), one CSV file per month: each plant's 7-day
  moving average and interquartile band (table ``plant_7day``, and a PNG chart);
- a trading day of stock ticks (overwindow/data/stock_ticks.csv), in feed order (a few ticks late)
  in files of 400 ticks: each trade's change from the previous one and the 5-minute moving average
  price and volume per symbol, and (PySpark 4) the trades of all symbols in the minute up to it: a
  view whose windows differ in PARTITION BY, run as one query (table ``ticks_5min``).

At the end a short table of each view is printed, and the time the demo took (Spark's start included).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from importlib import resources

import pyarrow.csv as pv

from overwindow.pipeline.job import run_view
from overwindow.pipeline.view import View, host_chosen
from overwindow.pipeline.view_query import use_query
from overwindow.spark import compat
from overwindow.spec import OverWindow

WINDOW = "ORDER BY day RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING"
CALLS = [
    f"avg(mwh) OVER ({WINDOW}) AS avg_7d",
    f"percentile_cont(0.25) WITHIN GROUP (ORDER BY mwh) OVER ({WINDOW}) AS q1_7d",
    f"percentile_cont(0.75) WITHIN GROUP (ORDER BY mwh) OVER ({WINDOW}) AS q3_7d",
    "mwh - lag(mwh) OVER (ORDER BY day) AS change",
]
TABLE = "plant_7day"
TICK_WINDOW = "ORDER BY ts RANGE BETWEEN INTERVAL 5 MINUTES PRECEDING AND CURRENT ROW"
TICK_CALLS = [
    "price - lag(price) OVER (ORDER BY ts) AS change",
    f"avg(price) OVER ({TICK_WINDOW}) AS avg_5m",
    f"sum(volume) OVER ({TICK_WINDOW}) AS volume_5m",
]
# on PySpark 4 the tick view is this query: the per-symbol windows and one over every symbol
TICK_QUERY = (
    "SELECT symbol, ts, trade_id, price, volume, "
    + ", ".join(c.replace("OVER (", "OVER (PARTITION BY symbol ") for c in TICK_CALLS)
    + ", count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL 1 MINUTE PRECEDING AND CURRENT ROW) AS market_1m"
    + " FROM source"
)
TICK_TABLE = "ticks_5min"
TICKS_PER_FILE = 400
DATABASE = "demo_views.sqlite"


def sample_path(name: str = "plant_daily") -> str:
    return str(resources.files("overwindow").joinpath(f"data/{name}.csv"))


def _write_files(incoming: str, parts: list[tuple[str, object]]) -> int:
    """Each (name, pandas frame) as a CSV file, in order, with increasing modification times (the
    file source takes files in that order)."""
    os.makedirs(incoming, exist_ok=True)
    now = time.time() - len(parts)
    for i, (name, part) in enumerate(parts):
        path = os.path.join(incoming, f"{name}.csv")
        part.to_csv(path, index=False)
        os.utime(path, (now + i, now + i))
    return len(parts)


def replay_files(incoming: str) -> int:
    """Write the plant sample as one CSV file per month, oldest first."""
    table = pv.read_csv(sample_path()).to_pandas()
    months = sorted(set(table["date"].astype(str).str[:7]))
    return _write_files(
        incoming,
        [
            (
                f"plant-{month}",
                table[table["date"].astype(str).str.startswith(month)].rename(columns={"date": "day"}),
            )
            for month in months
        ],
    )


def replay_ticks(incoming: str) -> int:
    """Write the tick sample in feed order (not sorted: late ticks stay late), 400 ticks per file."""
    text = pv.read_csv(
        sample_path("stock_ticks"), convert_options=pv.ConvertOptions(column_types={"ts": "string"})
    ).to_pandas()
    return _write_files(
        incoming,
        [
            (f"ticks-{i // TICKS_PER_FILE:03d}", text.iloc[i : i + TICKS_PER_FILE])
            for i in range(0, len(text), TICKS_PER_FILE)
        ],
    )


def _view(
    out: str,
    name: str,
    schema: str,
    watermark: dict,
    calls: list[str],
    row_key: list[str],
    partition: str,
    table: str,
) -> View:
    return View(
        path=os.path.join(out, f"{name}.toml"),
        source={
            "format": "files",
            "path": os.path.join(out, "incoming", name),
            "file_format": "csv",
            "schema": schema,
            "max_files_per_trigger": 1,
        },
        watermark=watermark,
        partition_by=[partition],
        calls=calls,
        emit="on_window_close",
        row_key=row_key,
        op_column=None,
        sink={"kind": "sqlite", "path": os.path.join(out, DATABASE), "table": table},
        checkpoint=os.path.join(out, "checkpoint", name),
        # hosted as the main job hosts a new checkpoint (view.host_chosen): the demo starts a new one
        spec=OverWindow(*calls, emit="on_window_close", rowKey=row_key).hosted(True, True),
    )


def demo_view(out: str) -> View:
    return _view(
        out,
        "plants",
        "plant STRING, day TIMESTAMP, mwh DOUBLE",
        {"column": "day", "delay": "1 day"},
        CALLS,
        ["plant", "day"],
        "plant",
        TABLE,
    )


def ticks_view(out: str) -> View:
    # ticks arrive up to 20 s late in the feed: a 30 s watermark delay keeps them all
    view = _view(
        out,
        "ticks",
        "symbol STRING, ts TIMESTAMP, trade_id BIGINT, price DOUBLE, volume BIGINT",
        {"column": "ts", "delay": "30 seconds"},
        TICK_CALLS,
        ["trade_id"],
        "symbol",
        TICK_TABLE,
    )
    if compat.version() >= compat.SPARK_4:  # several windows in one query need PySpark 4
        view.options = dict(emit="on_window_close", rowKey=view.row_key)
        use_query(view, TICK_QUERY)
        host_chosen(view)
    return view


def run_demo(out: str, quiet: bool = False, debug: bool = False) -> int:
    started = time.monotonic()
    out = os.path.abspath(out)
    for name in ("incoming", "checkpoint", DATABASE, DATABASE + "-wal", DATABASE + "-shm"):
        path = os.path.join(out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    plants, ticks = demo_view(out), ticks_view(out)
    files = replay_files(plants.source["path"])
    print(
        f"overwindow demo 1/2: {files} monthly files of daily plant output -> {plants.sink['path']} "
        f"(table {TABLE})"
    )
    for call in CALLS:
        print("  " + call)
    run_view(plants, once=True, final=True, quiet=quiet, debug=debug)
    con = sqlite3.connect(plants.sink["path"])
    rows = con.execute(
        f'SELECT plant, day, mwh, avg_7d, q1_7d, q3_7d FROM "{TABLE}" ORDER BY plant, day'
    ).fetchall()
    print(f"\n{len(rows)} rows in the view; the last days of each plant:")
    print(f"{'plant':<10} {'day':<10} {'MWh':>10} {'7-day avg':>12} {'7-day Q1':>12} {'7-day Q3':>12}")
    for plant in sorted({r[0] for r in rows}):
        for r in [r for r in rows if r[0] == plant][-3:]:
            print(f"{r[0]:<10} {r[1][:10]:<10} {r[2]:>10,.0f} {r[3]:>12,.2f} {r[4]:>12,.2f} {r[5]:>12,.2f}")
    chart = os.path.join(out, "plant_7day.png")
    write_chart(rows, chart)

    files = replay_ticks(ticks.source["path"])
    print(
        f"\noverwindow demo 2/2: {files} files of stock ticks in feed order -> {ticks.sink['path']} "
        f"(table {TICK_TABLE})"
    )
    for call in ticks.calls:
        print("  " + call)
    run_view(ticks, once=True, final=True, quiet=quiet, debug=debug)
    market = "market_1m" if ticks.query else "NULL"
    last = con.execute(
        f'SELECT symbol, ts, price, change, avg_5m, volume_5m, {market} FROM "{TICK_TABLE}" t WHERE ts = '
        f'(SELECT max(ts) FROM "{TICK_TABLE}" WHERE symbol = t.symbol) ORDER BY symbol'
    ).fetchall()
    count = con.execute(f'SELECT count(*) FROM "{TICK_TABLE}"').fetchone()[0]
    con.close()
    print(f"\n{count} ticks in the view; the last of each symbol:")
    head = f"{'symbol':<7} {'time':<12} {'price':>9} {'change':>8} {'5-min avg':>10} {'5-min volume':>13}"
    print(head + (f" {'market trades 1 min':>20}" if ticks.query else ""))
    for symbol, ts, price, change, avg, volume, trades in last:
        line = f"{symbol:<7} {ts[11:23]:<12} {price:>9.2f} {change or 0:>+8.2f} {avg:>10.2f} {volume:>13,}"
        print(line + (f" {trades:>20,}" if trades is not None else ""))
    print(
        f"\nchart: {chart}\nviews: {plants.sink['path']} (SQLite, tables {TABLE} and {TICK_TABLE}; "
        "query it while a job runs)"
    )
    print(f"demo took {time.monotonic() - started:.0f} s")
    return 0


def write_chart(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import datetime as dt

    import matplotlib.pyplot as plt

    plants = sorted({r[0] for r in rows})
    fig, axes = plt.subplots(len(plants), 1, figsize=(11, 3.2 * len(plants)), sharex=True)
    for ax, plant in zip(list(getattr(axes, "flat", [axes])), plants):
        mine = [r for r in rows if r[0] == plant]
        days = [dt.date.fromisoformat(r[1][:10]) for r in mine]
        ax.scatter(days, [r[2] for r in mine], s=4, color="0.6", label="daily MWh")
        ax.fill_between(
            days, [r[4] for r in mine], [r[5] for r in mine], alpha=0.3, label="7-day interquartile range"
        )
        ax.plot(days, [r[3] for r in mine], linewidth=1.5, label="7-day moving average")
        ax.set_title(plant)
        ax.set_ylabel("MWh")
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
