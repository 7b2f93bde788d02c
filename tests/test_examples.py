"""Every script in examples/ runs, and its output equals the batch evaluator / DuckDB on its data."""

import importlib.util
import os

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pv

import overwindow

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_price_diff(spark, tmp_path):
    ex = load("price_diff")
    got = {r["tick"]: r["price_diff"] for r in ex.run(spark, str(tmp_path))}
    con = duckdb.connect()
    con.register("t", pa.Table.from_pylist(ex.TICKS))
    want = dict(
        con.execute("SELECT tick, price - lag(price) OVER (PARTITION BY stock ORDER BY ts) FROM t").fetchall()
    )
    # the last tick (09:30:30) is above the watermark (09:30:25): its window has not closed
    assert set(got) == set(want) - {7}
    for tick, diff in got.items():
        assert (np.isnan(diff) and want[tick] is None) or diff == want[tick]


def test_previous_orders(spark, tmp_path):
    ex = load("previous_orders")
    got = {r["order_id"]: r["recent_10_orders_avg_amount"] for r in ex.run(spark, str(tmp_path))}
    con = duckdb.connect()
    con.register("t", pa.Table.from_pylist(ex.orders()))
    want = dict(
        con.execute(
            "SELECT order_id, avg(amount) OVER (PARTITION BY user_id ORDER BY order_time "
            "ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) FROM t"
        ).fetchall()
    )
    assert set(got) == {k for k in want if k <= 59 - 1}  # watermark 10:58: the 10:59 order waits
    for k, v in got.items():
        assert (np.isnan(v) and want[k] is None) or abs(v - want[k]) < 1e-9


def test_plant_moving_average(spark, tmp_path):
    ex = load("plant_moving_average")
    rows = ex.run(spark, str(tmp_path))
    sample = pv.read_csv(os.path.join(os.path.dirname(overwindow.__file__), "data", "plant_daily.csv"))
    con = duckdb.connect()
    con.register("s", sample)
    want = {
        (p, str(d)): (a, q)
        for p, d, a, q in con.execute(
            "SELECT plant, date, avg(mwh) OVER w, quantile_cont(mwh, [0.25, 0.5, 0.75]) OVER w FROM s "
            "WINDOW w AS (PARTITION BY plant ORDER BY date "
            "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING)"
        ).fetchall()
    }
    assert len(rows) == len(want) - 2 * 4  # the last 4 days of each plant wait for the watermark
    for r in rows:
        a, q = want[(r["plant"], str(r["day"])[:10])]
        assert abs(r["avg_7d"] - a) < 1e-6 and np.allclose(list(r["iqr_7d"]), q, rtol=1e-9)


def test_cdc_view(spark, tmp_path):
    ex = load("cdc_view")
    view = ex.run(spark, str(tmp_path))
    live = {}
    for batch in ex.CHANGES:
        for r in batch:
            if r["op"] == "d":
                live.pop(r["id"], None)
            else:
                live[r["id"]] = r
    con = duckdb.connect()
    con.register("t", pa.Table.from_pylist(list(live.values())))
    want = {
        (a, i): (b, n)
        for a, i, b, n in con.execute(
            "SELECT account, id, sum(amount) OVER (PARTITION BY account ORDER BY ts), "
            "row_number() OVER (PARTITION BY account ORDER BY ts, id) FROM t"
        ).fetchall()
    }
    assert set(view) == set(want)
    for k, (balance, nth) in want.items():
        assert view[k]["balance"] == balance and view[k]["nth"] == nth
