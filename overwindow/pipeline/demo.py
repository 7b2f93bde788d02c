"""``overwindow demo``: the main job on embedded defaults.

The bundled plant output (overwindow/data/plant_daily.csv) is replayed as a stream of monthly CSV
files; a view keeps each plant's 7-day moving average and interquartile band (emit on window close)
in an SQLite file; at the end a short table is printed and a PNG chart written.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from importlib import resources

import pyarrow.csv as pv

from overwindow.pipeline.job import run_view
from overwindow.pipeline.view import View
from overwindow.spec import OverWindow

WINDOW = "PARTITION BY plant ORDER BY day RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING"
CALLS = [
    f"avg(mwh) OVER ({WINDOW.replace('PARTITION BY plant ', '')}) AS avg_7d",
    f"percentile_cont(0.25) WITHIN GROUP (ORDER BY mwh) OVER ({WINDOW.replace('PARTITION BY plant ', '')}) AS q1_7d",
    f"percentile_cont(0.75) WITHIN GROUP (ORDER BY mwh) OVER ({WINDOW.replace('PARTITION BY plant ', '')}) AS q3_7d",
    "mwh - lag(mwh) OVER (ORDER BY day) AS change",
]
TABLE = "plant_7day"


def sample_path() -> str:
    return str(resources.files("overwindow").joinpath("data/plant_daily.csv"))


def replay_files(incoming: str) -> int:
    """Write the sample as one CSV file per month, oldest first, with increasing modification times."""
    table = pv.read_csv(sample_path()).to_pandas()
    os.makedirs(incoming, exist_ok=True)
    months = sorted(set(table["date"].astype(str).str[:7]))
    now = time.time() - len(months)
    for i, month in enumerate(months):
        part = table[table["date"].astype(str).str.startswith(month)].rename(columns={"date": "day"})
        path = os.path.join(incoming, f"plant-{month}.csv")
        part.to_csv(path, index=False)
        os.utime(path, (now + i, now + i))
    return len(months)


def demo_view(out: str) -> View:
    spec = OverWindow(*CALLS, emit="on_window_close", rowKey=["plant", "day"])
    return View(
        path=os.path.join(out, "demo.toml"),
        source={"format": "files", "path": os.path.join(out, "incoming"), "file_format": "csv",
                "schema": "plant STRING, day TIMESTAMP, mwh DOUBLE", "max_files_per_trigger": 1},
        watermark={"column": "day", "delay": "1 day"},
        partition_by=["plant"], calls=CALLS, emit="on_window_close", row_key=["plant", "day"], op_column=None,
        sink={"kind": "sqlite", "path": os.path.join(out, "plant_view.sqlite"), "table": TABLE},
        checkpoint=os.path.join(out, "checkpoint"), spec=spec)


def run_demo(out: str, quiet: bool = False) -> int:
    out = os.path.abspath(out)
    for name in ("incoming", "checkpoint", "plant_view.sqlite", "plant_view.sqlite-wal", "plant_view.sqlite-shm"):
        path = os.path.join(out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    files = replay_files(os.path.join(out, "incoming"))
    view = demo_view(out)
    print(f"overwindow demo: {files} monthly files of daily plant output -> {view.sink['path']} (table {TABLE})")
    for call in CALLS:
        print("  " + call)
    run_view(view, once=True, quiet=quiet)
    con = sqlite3.connect(view.sink["path"])
    rows = con.execute(f'SELECT plant, day, mwh, avg_7d, q1_7d, q3_7d FROM "{TABLE}" ORDER BY plant, day').fetchall()
    con.close()
    print(f"\n{len(rows)} rows in the view; the last days of each plant:")
    print(f"{'plant':<10} {'day':<10} {'MWh':>10} {'7-day avg':>12} {'7-day Q1':>12} {'7-day Q3':>12}")
    for plant in sorted({r[0] for r in rows}):
        for r in [r for r in rows if r[0] == plant][-3:]:
            print(f"{r[0]:<10} {r[1][:10]:<10} {r[2]:>10,.0f} {r[3]:>12,.2f} {r[4]:>12,.2f} {r[5]:>12,.2f}")
    chart = os.path.join(out, "plant_7day.png")
    write_chart(rows, chart)
    print(f"\nchart: {chart}\nview:  {view.sink['path']} (SQLite; query it while a job runs)")
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
        ax.fill_between(days, [r[4] for r in mine], [r[5] for r in mine], alpha=0.3, label="7-day interquartile range")
        ax.plot(days, [r[3] for r in mine], linewidth=1.5, label="7-day moving average")
        ax.set_title(plant)
        ax.set_ylabel("MWh")
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
