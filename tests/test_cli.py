"""The command line: the demo (the README's main job) and `run` on a view file, end to end on Spark.
Values come from the batch evaluator and DuckDB over the same sample."""

import datetime as dt
import json
import os
import sqlite3
import textwrap

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pytest

import overwindow
from overwindow.__main__ import main
from overwindow.pipeline.demo import DATABASE, TABLE, TICK_TABLE, sample_path


def test_demo_keeps_the_plant_and_tick_views_and_draws_the_chart(spark, tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "batch 0:" in printed and "rows in" in printed  # progress lines
    assert (out / "plant_7day.png").stat().st_size > 10_000
    con = sqlite3.connect(out / DATABASE)
    got = {
        (p, d[:10]): (m, a, q1, q3)
        for p, d, m, a, q1, q3 in con.execute(f'SELECT plant, day, mwh, avg_7d, q1_7d, q3_7d FROM "{TABLE}"')
    }
    sample = pv.read_csv(sample_path())
    duck = duckdb.connect()
    duck.register("s", sample)
    want = {
        (p, str(d)): (a, q1, q3)
        for p, d, a, q1, q3 in duck.execute(
            "SELECT plant, date, avg(mwh) OVER w, quantile_cont(mwh, 0.25) OVER w, "
            "quantile_cont(mwh, 0.75) OVER w FROM s "
            "WINDOW w AS (PARTITION BY plant ORDER BY date "
            "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING)"
        ).fetchall()
    }
    # closed: the watermark (last day - 1 day) has passed day + 3 days
    last = max(dt.date.fromisoformat(d) for _, d in want)
    closed = {k for k in want if dt.date.fromisoformat(k[1]) + dt.timedelta(days=4) <= last}
    assert set(got) == closed
    for k in closed:
        np.testing.assert_allclose(got[k][1:], want[k], rtol=1e-9)

    # ticks: DuckDB over the whole file; the view holds every tick at or below the final watermark
    ticks = pv.read_csv(sample_path("stock_ticks"))  # UTC times, compared as plain timestamps
    duck.register(
        "t", ticks.set_column(1, "ts", ticks["ts"].cast(pa.timestamp("us", "UTC")).cast(pa.timestamp("us")))
    )
    want = {
        i: (c, a, v)
        for i, c, a, v in duck.execute(
            "SELECT trade_id, price - lag(price) OVER (PARTITION BY symbol ORDER BY ts), avg(price) OVER w, "
            "sum(volume) OVER w "
            "FROM t WINDOW w AS (PARTITION BY symbol ORDER BY ts "
            "RANGE BETWEEN INTERVAL 5 MINUTES PRECEDING AND CURRENT ROW)"
        ).fetchall()
    }
    watermark = duck.execute("SELECT max(ts) - INTERVAL 30 SECONDS FROM t").fetchone()[0]
    closed = {i for (i,) in duck.execute("SELECT trade_id FROM t WHERE ts <= ?", [watermark]).fetchall()}
    got = {
        i: (c, a, v)
        for i, c, a, v in con.execute(f'SELECT trade_id, change, avg_5m, volume_5m FROM "{TICK_TABLE}"')
    }
    assert set(got) == closed and len(closed) > 4000
    for i in closed:
        assert got[i][0] == (None if want[i][0] is None else pytest.approx(want[i][0], rel=1e-9, abs=1e-9))
        assert got[i][1:] == (pytest.approx(want[i][1], rel=1e-9), want[i][2])


def test_run_a_view_file_then_resume_with_more_files(spark, tmp_path, capsys):
    events = tmp_path / "events"
    events.mkdir()
    view = tmp_path / "prices.toml"
    view.write_text(
        textwrap.dedent("""
        [source]
        format = "files"
        path = "events"
        file_format = "json"
        schema = "stock STRING, ts TIMESTAMP, id BIGINT, price DOUBLE, op STRING"

        [view]
        partition_by = ["stock"]
        calls = [
            "price - lag(price) OVER (ORDER BY ts) AS diff",
            "avg(price) OVER (ORDER BY ts ROWS 2 PRECEDING) AS avg3",
        ]
        emit = "on_update"
        row_key = ["id"]
        op_column = "op"

        [sink]
        kind = "sqlite"
        path = "prices.sqlite"
        table = "price view"
        checkpoint = "chk"
    """)
    )
    rng = np.random.default_rng(4)
    live = {}
    for b in range(2):
        rows = [
            {
                "stock": f"S{i % 3}",
                "ts": f"2024-01-01T00:{b:02d}:{i:02d}",
                "id": b * 100 + i,
                "price": round(float(rng.normal(100, 3)), 2),
                "op": "insert",
            }
            for i in range(30)
        ]
        if b == 1:
            rows.append(dict(rows[0], op="delete"))
        (events / f"f{b}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.utime(events / f"f{b}.json", (1_000 + b, 1_000 + b))
        for r in rows:
            if r["op"] == "delete":
                live.pop(r["id"], None)
            else:
                live[r["id"]] = r
        assert main(["run", str(view), "--once"]) == 0  # each run resumes from the checkpoint
    assert "rows in" in capsys.readouterr().out
    con = sqlite3.connect(tmp_path / "prices.sqlite")
    got = {r[0]: r[1:] for r in con.execute('SELECT id, diff, avg3 FROM "price view"')}
    table = pa.Table.from_pylist([{k: v for k, v in r.items() if k != "op"} for r in live.values()])
    table = table.set_column(1, "ts", table["ts"].cast(pa.timestamp("us")))
    batch = overwindow.evaluate(
        table.sort_by([("ts", "ascending"), ("id", "ascending")]),
        "price - lag(price) OVER (PARTITION BY stock ORDER BY ts) AS diff",
        "avg(price) OVER (PARTITION BY stock ORDER BY ts ROWS 2 PRECEDING) AS avg3",
    )
    assert set(got) == set(live)
    for r in batch.to_pylist():
        d, a = got[r["id"]]
        assert (d is None and r["diff"] is None) or abs(d - r["diff"]) < 1e-9
        assert abs(a - r["avg3"]) < 1e-9


def test_a_bad_view_file_exits_2_with_the_key(tmp_path, capsys):
    view = tmp_path / "v.toml"
    view.write_text('[source]\nformat = "ftp"\n')
    assert main(["run", str(view)]) == 2
    assert "[source] format (line 2): must be one of files, kafka" in capsys.readouterr().err
