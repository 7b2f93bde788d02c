"""Published worked examples, reproduced exactly (docs/design/design.md, "Worked examples").

* DuckDB's blog post "Windowing in DuckDB" (Richard Wesley, 2021): the 7-day moving average of
  each plant's generation, the printed table verbatim, and the moving IQR checked against DuckDB.
  The input is the bundled sample data ``overwindow/data/plant_generation.csv`` (plants
  波士顿 = Boston and 伍斯特 = Worcester).
* Spark's WindowExec as described in "The Internals of Spark SQL": the ``metrics`` device/level sums over a
  RANGE and a ROWS frame, the ``show`` tables verbatim, and the ``spark.range(0, 13)`` example
  checked against DuckDB.
* RisingWave's article on its OverWindow operator: the batch meaning of its example
  queries on small made-up data (and the article's ts/pk/x table), checked against DuckDB.

DuckDB's default null order differs from Spark's, so every DuckDB query pins NULLS FIRST/LAST.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_DOWN, Decimal
from importlib import resources

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from values_support import same

from overwindow import evaluate

# --- helpers -----------------------------------------------------------------------------------


def duck(table: pa.Table, select: str) -> list:
    """Run ``SELECT <select> FROM t ORDER BY rid`` in DuckDB over the Arrow table (which has ``rid``)."""
    con = duckdb.connect()
    con.register("t", table)
    rows = con.execute(f"SELECT {select} FROM t ORDER BY rid").fetchall()
    con.close()
    return [r[0] if len(r) == 1 else r for r in rows]


def plant_table() -> pa.Table:
    """The bundled sample data, with a row id in file order."""
    path = resources.files("overwindow").joinpath("data/plant_generation.csv")
    with resources.as_file(path) as p:
        df = pd.read_csv(p)
    assert list(df.columns) == ["plant", "date", "mwh"]
    df["date"] = pd.to_datetime(df["date"]).dt.date
    t = pa.Table.from_pandas(df, preserve_index=False)
    t = t.set_column(1, "date", t.column("date").cast(pa.date32()))
    return t.append_column("rid", pa.array(range(t.num_rows), pa.int64()))


# --- DuckDB's windowing blog ---------------------------------------------------------------------

SEVEN_DAYS = (
    "PARTITION BY plant ORDER BY date ASC "
    "RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND INTERVAL 3 DAYS FOLLOWING"
)

# The article's result table ("7 天移动平均值"), as printed.
ARTICLE_MOVING_AVERAGE = [
    ("Boston", "2019-01-02", "517450.75"),
    ("Boston", "2019-01-03", "508793.20"),
    ("Boston", "2019-01-04", "508529.83"),
    ("Boston", "2019-01-05", "523459.85"),
    ("Boston", "2019-01-06", "526067.14"),
    ("Boston", "2019-01-07", "524938.71"),
    ("Boston", "2019-01-08", "518294.57"),
    ("Boston", "2019-01-09", "520665.42"),
    ("Boston", "2019-01-10", "528859.00"),
    ("Boston", "2019-01-11", "532466.66"),
    ("Boston", "2019-01-12", "516352.00"),
    ("Boston", "2019-01-13", "499793.00"),
    ("Worcester", "2019-01-02", "104768.25"),
    ("Worcester", "2019-01-03", "102713.00"),
    ("Worcester", "2019-01-04", "102249.50"),
    ("Worcester", "2019-01-05", "104621.57"),
    ("Worcester", "2019-01-06", "103856.71"),
    ("Worcester", "2019-01-07", "103094.85"),
    ("Worcester", "2019-01-08", "101345.14"),
    ("Worcester", "2019-01-09", "102313.85"),
    ("Worcester", "2019-01-10", "104125.00"),
    ("Worcester", "2019-01-11", "104823.83"),
    ("Worcester", "2019-01-12", "102017.80"),
    ("Worcester", "2019-01-13", "99145.75"),
]

# The article's input table (电厂 日期 兆瓦时), to check the bundled file against.
ARTICLE_INPUT = {
    "Boston": [
        564337,
        507405,
        528523,
        469538,
        474163,
        507213,
        613040,
        582588,
        499506,
        482014,
        486134,
        531518,
    ],
    "Worcester": [118860, 101977, 106054, 92182, 94492, 99932, 118854, 113506, 96644, 93806, 98963, 107170],
}


def test_bundled_plant_data_is_the_article_input():
    t = plant_table()
    rows = list(zip(t.column("plant").to_pylist(), t.column("date").to_pylist(), t.column("mwh").to_pylist()))
    want = [
        (plant, dt.date(2019, 1, 2 + i), v)
        for plant, values in ARTICLE_INPUT.items()
        for i, v in enumerate(values)
    ]
    assert rows == want


def test_seven_day_moving_average_matches_the_article():
    t = plant_table()
    out = evaluate(t, f"avg(mwh) OVER ({SEVEN_DAYS}) AS mwh_7day")
    got = list(
        zip(
            out.column("plant").to_pylist(),
            out.column("date").to_pylist(),
            out.column("mwh_7day").to_pylist(),
        )
    )
    assert len(got) == len(ARTICLE_MOVING_AVERAGE)
    for (plant, date, value), (w_plant, w_date, w_text) in zip(got, ARTICLE_MOVING_AVERAGE):
        assert (plant, date.isoformat()) == (w_plant, w_date)
        # The article prints the averages cut to 2 decimals, not rounded: 3664219 / 7 =
        # 523459.857... is printed 523459.85 and 3194800 / 6 = 532466.666... as 532466.66.
        assert Decimal(repr(value)).quantize(Decimal("0.01"), rounding=ROUND_DOWN) == Decimal(w_text), (
            plant,
            date,
        )
        assert abs(value - float(w_text)) < 0.01


def test_seven_day_moving_average_is_exact():
    """Each frame is the plant's days within 3 of the row's date: the exact mean, correctly rounded."""
    t = plant_table()
    out = evaluate(t, f"avg(mwh) OVER ({SEVEN_DAYS}) AS a").column("a").to_pylist()
    plants, dates, mwh = (t.column(c).to_pylist() for c in ("plant", "date", "mwh"))
    for i, got in enumerate(out):
        frame = [
            mwh[j] for j in range(len(mwh)) if plants[j] == plants[i] and abs((dates[j] - dates[i]).days) <= 3
        ]
        assert got == sum(frame) / len(frame)


def test_seven_day_moving_average_matches_duckdb():
    t = plant_table()
    ours = evaluate(t, f"avg(mwh) OVER ({SEVEN_DAYS}) AS a").column("a").to_pylist()
    theirs = duck(t, f"avg(mwh) OVER ({SEVEN_DAYS})")
    assert all(same(a, b) for a, b in zip(ours, theirs)), (ours, theirs)


def test_seven_day_moving_min_max_share_the_window():
    """The article's follow-up: 7-day min and max beside the average, one sort for all three."""
    t = plant_table()
    out = evaluate(
        t,
        f"avg(mwh) OVER ({SEVEN_DAYS}) AS a",
        f"min(mwh) OVER ({SEVEN_DAYS}) AS lo",
        f"max(mwh) OVER ({SEVEN_DAYS}) AS hi",
    )
    theirs = duck(t, f"min(mwh) OVER ({SEVEN_DAYS}), max(mwh) OVER ({SEVEN_DAYS})")
    assert list(zip(out.column("lo").to_pylist(), out.column("hi").to_pylist())) == theirs
    for lo, a, hi in zip(
        out.column("lo").to_pylist(), out.column("a").to_pylist(), out.column("hi").to_pylist()
    ):
        assert lo <= a <= hi


def test_seven_day_moving_iqr_matches_duckdb():
    """``quantile_cont("MWh", [0.25, 0.5, 0.75]) OVER seven`` from the article, one list per row."""
    t = plant_table()
    out = evaluate(t, f"quantile_cont(mwh, [0.25, 0.5, 0.75]) OVER ({SEVEN_DAYS}) AS iqr")
    ours = out.column("iqr").to_pylist()
    theirs = duck(t, f"quantile_cont(mwh, [0.25, 0.5, 0.75]) OVER ({SEVEN_DAYS})")
    assert all(same(list(a), list(b)) for a, b in zip(ours, theirs)), (ours, theirs)
    # first Boston row: the frame is 2019-01-02..05 = 469538, 507405, 528523, 564337
    assert ours[0] == [497938.25, 517964.0, 537476.5]


def test_seven_day_window_from_pandas():
    """The same query on a pandas DataFrame read from the bundled CSV (dates as datetime64)."""
    path = resources.files("overwindow").joinpath("data/plant_generation.csv")
    with resources.as_file(path) as p:
        df = pd.read_csv(p, parse_dates=["date"])
    out = evaluate(df, f"avg(mwh) OVER ({SEVEN_DAYS}) AS a")
    assert [round(v, 2) for v in out["a"]][:3] == [517450.75, 508793.2, 508529.83]
    assert list(out.columns) == ["plant", "date", "mwh", "a"]


# --- Spark's WindowExec --------------------------------------------------------------------------


def metrics() -> pa.Table:
    """``Seq((0, 0, 0), (1, 0, 1), (2, 5, 2), (3, 0, 3), (4, 0, 1), (5, 5, 3),
    (6, 5, 0)).toDF("id", "device", "level")``."""
    rows = [(0, 0, 0), (1, 0, 1), (2, 5, 2), (3, 0, 3), (4, 0, 1), (5, 5, 3), (6, 5, 0)]
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int32()),
            "device": pa.array([r[1] for r in rows], pa.int32()),
            "level": pa.array([r[2] for r in rows], pa.int32()),
        }
    )


def by_id(out: pa.Table, column: str) -> dict[int, int]:
    return dict(zip(out.column("id").to_pylist(), out.column(column).to_pylist()))


def test_metrics_range_frame_matches_spark_show():
    out = evaluate(
        metrics(),
        "sum(level) OVER (PARTITION BY device ORDER BY id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) AS sum",
    )
    # sumOverRange.show: | id|device|level|sum|
    show = [(2, 5, 2, 2), (5, 5, 3, 3), (6, 5, 0, 3), (0, 0, 0, 0), (1, 0, 1, 1), (3, 0, 3, 3), (4, 0, 1, 4)]
    assert by_id(out, "sum") == {r[0]: r[3] for r in show}
    assert pa.types.is_int64(out.column("sum").type)  # Spark: sum(cast(level as bigint)) AS sum#15L


def test_metrics_rows_frame_matches_spark_show():
    out = evaluate(
        metrics(),
        "sum(level) OVER (PARTITION BY device ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS sum",
    )
    # sumOverRows.show, with the article's "<-- a difference" rows id 5 and id 3
    show = [(2, 5, 2, 2), (5, 5, 3, 5), (6, 5, 0, 3), (0, 0, 0, 0), (1, 0, 1, 1), (3, 0, 3, 4), (4, 0, 1, 4)]
    assert by_id(out, "sum") == {r[0]: r[3] for r in show}


def test_metrics_both_frames_in_one_call_share_the_sort():
    out = evaluate(
        metrics(),
        "sum(level) OVER (PARTITION BY device ORDER BY id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) "
        "AS by_range",
        "sum(level) OVER (PARTITION BY device ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
        "AS by_rows",
    )
    differ = [
        i
        for i, a, b in zip(
            out.column("id").to_pylist(),
            out.column("by_range").to_pylist(),
            out.column("by_rows").to_pylist(),
        )
        if a != b
    ]
    assert differ == [3, 5]
    # input order and columns are kept
    assert out.column_names == ["id", "device", "level", "by_range", "by_rows"]
    assert out.column("id").to_pylist() == list(range(7))


def test_metrics_against_duckdb():
    t = metrics().append_column("rid", pa.array(range(7)))
    for unit in ("RANGE", "ROWS"):
        over = f"PARTITION BY device ORDER BY id ASC NULLS FIRST {unit} BETWEEN 1 PRECEDING AND CURRENT ROW"
        ours = evaluate(t, f"sum(level) OVER ({over}) AS s").column("s").to_pylist()
        assert ours == duck(t, f"sum(level) OVER ({over})")


def test_spark_range_13_by_id_mod_4():
    """``spark.range(0, 13).withColumn("group", 'id % 4)`` with
    ``sum('id) over Window.partitionBy('group).rangeBetween(-2, currentRow).orderBy('id)``."""
    t = pa.table({"id": pa.array(range(13), pa.int64()), "rid": pa.array(range(13))})
    over = "PARTITION BY id % 4 ORDER BY id ASC NULLS FIRST RANGE BETWEEN 2 PRECEDING AND CURRENT ROW"
    ours = evaluate(t, f"sum(id) OVER ({over}) AS sum").column("sum").to_pylist()
    assert ours == duck(t, f"sum(id) OVER ({over})")
    # ids of a group are 4 apart, so 2 PRECEDING never reaches the previous one: sum = id
    assert ours == list(range(13))
    # ... while 4 PRECEDING does
    wide = evaluate(
        t, "sum(id) OVER (PARTITION BY id % 4 ORDER BY id RANGE BETWEEN 4 PRECEDING AND CURRENT ROW) AS s"
    )
    assert wide.column("s").to_pylist() == [i + (i - 4 if i >= 4 else 0) for i in range(13)]
    assert wide.column("s").to_pylist() == duck(
        t,
        "sum(id) OVER (PARTITION BY id % 4 ORDER BY id ASC NULLS FIRST "
        "RANGE BETWEEN 4 PRECEDING AND CURRENT ROW)",
    )


def test_spark_range_13_with_group_column():
    """The same with ``group`` materialised first, as the article's plan shows (Project id % 4 AS group)."""
    ids = list(range(13))
    t = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "group": pa.array([i % 4 for i in ids], pa.int64()),
            "rid": pa.array(ids),
        }
    )
    over = """PARTITION BY "group" ORDER BY id ASC NULLS FIRST RANGE BETWEEN 2 PRECEDING AND CURRENT ROW"""
    ours = evaluate(
        t, "sum(id) OVER (PARTITION BY `group` ORDER BY id RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS sum"
    )
    assert ours.column("sum").to_pylist() == duck(t, f"sum(id) OVER ({over})")


# --- RisingWave's OverWindow ------------------------------------------------------------------


def stock_prices() -> pa.Table:
    t0 = dt.datetime(2024, 5, 1, 9, 30)
    rows = [  # (stock_id, minutes after t0, price)
        ("AAPL", 0, 180.0),
        ("MSFT", 0, 410.0),
        ("AAPL", 1, 181.5),
        ("AAPL", 3, 181.25),
        ("MSFT", 2, 409.0),
        ("AAPL", 2, None),
        ("MSFT", 5, 412.5),
        ("GOOG", 4, 160.0),
        ("AAPL", 7, 179.0),
    ]
    return pa.table(
        {
            "stock_id": [r[0] for r in rows],
            "event_time": pa.array([t0 + dt.timedelta(minutes=r[1]) for r in rows], pa.timestamp("us")),
            "price": pa.array([r[2] for r in rows], pa.float64()),
            "rid": pa.array(range(len(rows))),
        }
    )


def test_risingwave_price_diff():
    """Example 1: ``price - LAG(price) OVER (PARTITION BY stock_id ORDER BY event_time) AS price_diff``."""
    t = stock_prices()
    ours = evaluate(t, "price - lag(price) OVER (PARTITION BY stock_id ORDER BY event_time) AS price_diff")
    got = ours.column("price_diff").to_pylist()
    theirs = duck(t, "price - lag(price) OVER (PARTITION BY stock_id ORDER BY event_time ASC NULLS FIRST)")
    assert all(same(a, b) for a, b in zip(got, theirs)), (got, theirs)
    # by hand: AAPL 9:30 180.0, 9:31 181.5, 9:32 NULL, 9:33 181.25, 9:37 179.0
    assert got == [None, None, 1.5, None, -1.0, None, 3.5, None, -2.25]


def orders() -> pa.Table:
    amounts = {  # user -> amounts in order_time order
        "u1": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 110.0, 120.0, 130.0, 5.0],
        "u2": [7.5, None, 2.5],
        "u3": [1e20, 1.0, -1e20, 3.0],
    }
    rows = []
    for user, values in amounts.items():
        for i, v in enumerate(values):
            rows.append((user, i, v))
    rows = rows[::3] + rows[1::3] + rows[2::3]  # interleave the input: the sort must put it back
    t0 = dt.datetime(2024, 1, 1)
    return pa.table(
        {
            "user_id": [r[0] for r in rows],
            "order_time": pa.array([t0 + dt.timedelta(hours=r[1]) for r in rows], pa.timestamp("us")),
            "amount": pa.array([r[2] for r in rows], pa.float64()),
            "rid": pa.array(range(len(rows))),
        }
    )


def test_risingwave_recent_10_orders_avg():
    """Example 2: ``AVG(amount) OVER (PARTITION BY user_id ORDER BY order_time ROWS BETWEEN 10 PRECEDING
    AND 1 PRECEDING) AS recent_10_orders_avg_amount``: the current order is not in its own frame."""
    t = orders()
    over = "PARTITION BY user_id ORDER BY order_time ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING"
    out = evaluate(t, f"avg(amount) OVER ({over}) AS recent_10_orders_avg_amount")
    got = dict(
        zip(
            zip(out.column("user_id").to_pylist(), out.column("order_time").to_pylist()),
            out.column("recent_10_orders_avg_amount").to_pylist(),
        )
    )
    theirs = duck(t, f"avg(amount) OVER ({over.replace('order_time', 'order_time ASC NULLS FIRST')})")
    assert all(
        same(a, b, 1e-6)
        for a, b, u in zip(
            out.column("recent_10_orders_avg_amount").to_pylist(), theirs, out.column("user_id").to_pylist()
        )
        if u != "u3"
    )
    t0 = dt.datetime(2024, 1, 1)
    u1 = [10.0 * (i + 1) for i in range(13)] + [5.0]
    for i in range(14):
        prev = u1[max(0, i - 10) : i]
        assert got[("u1", t0 + dt.timedelta(hours=i))] == (sum(prev) / len(prev) if prev else None)
    assert [got[("u2", t0 + dt.timedelta(hours=i))] for i in range(3)] == [None, 7.5, 7.5]
    # exact sums (DuckDB's double sum gives 0 for 1e20 + 1 - 1e20): the 4th order sees (1e20 + 1 - 1e20) / 3
    assert [got[("u3", t0 + dt.timedelta(hours=i))] for i in range(4)] == [None, 1e20, (1e20 + 1) / 2, 1 / 3]


def risingwave_ts_pk_x(with_insert: bool) -> pa.Table:
    """The article's table (ts, pk, x), before and after inserting ``10:06 102 8``."""
    rows = [("10:00", 100, 5), ("10:02", 101, 3), ("10:10", 103, 9), ("10:17", 104, 0)]
    if with_insert:
        rows.append(("10:06", 102, 8))
    day = dt.date(2024, 1, 1)
    ts = [dt.datetime.combine(day, dt.time.fromisoformat(r[0])) for r in rows]
    return pa.table(
        {
            "p": pa.array([1] * len(rows), pa.int32()),
            "ts": pa.array(ts, pa.timestamp("us")),
            "pk": pa.array([r[1] for r in rows], pa.int32()),
            "x": pa.array([r[2] for r in rows], pa.int32()),
            "rid": pa.array(range(len(rows))),
        }
    )


EOWC_CALLS = [
    "sum(x) OVER (PARTITION BY p ORDER BY ts ROWS 1 PRECEDING) AS s1",
    "sum(x) OVER (PARTITION BY p ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS s2",
    "lead(x, 1) OVER (PARTITION BY p ORDER BY ts) AS next_x",
]


@pytest.mark.parametrize("with_insert", [False, True])
def test_risingwave_three_calls_on_article_data(with_insert):
    t = risingwave_ts_pk_x(with_insert)
    out = evaluate(t, *EOWC_CALLS)
    by_pk = {
        pk: (a, b, c)
        for pk, a, b, c in zip(
            out.column("pk").to_pylist(),
            out.column("s1").to_pylist(),
            out.column("s2").to_pylist(),
            out.column("next_x").to_pylist(),
        )
    }
    if with_insert:
        # ts: 10:00 10:02 10:06 10:10 10:17 / x: 5 3 8 9 0
        assert by_pk == {
            100: (5, 8, 3),
            101: (8, 11, 8),
            102: (11, 17, 9),
            103: (17, 9, 0),
            104: (9, 0, None),
        }
    else:
        assert by_pk == {100: (5, 8, 3), 101: (8, 12, 9), 103: (12, 9, 0), 104: (9, 0, None)}
    theirs = duck(
        t,
        "sum(x) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST ROWS 1 PRECEDING), "
        "sum(x) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING), "
        "lead(x, 1) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST)",
    )
    ours = list(
        zip(out.column("s1").to_pylist(), out.column("s2").to_pylist(), out.column("next_x").to_pylist())
    )
    assert ours == theirs


def test_risingwave_insert_changes_exactly_the_affected_rows():
    """The article's walk: inserting 102 between 101 and 103 changes the outputs of rows 101..103
    (first_curr_row..last_curr_row) and no others, for this query's one-row frames."""
    before = evaluate(risingwave_ts_pk_x(False), *EOWC_CALLS)
    after = evaluate(risingwave_ts_pk_x(True), *EOWC_CALLS)

    def rows(t):
        return {
            pk: (a, b, c)
            for pk, a, b, c in zip(
                t.column("pk").to_pylist(),
                t.column("s1").to_pylist(),
                t.column("s2").to_pylist(),
                t.column("next_x").to_pylist(),
            )
        }

    b, a = rows(before), rows(after)
    changed = sorted(pk for pk in a if pk not in b or a[pk] != b[pk])
    assert changed == [101, 102, 103]


def random_stream(seed: int, n: int = 60) -> pa.Table:
    import random

    rnd = random.Random(seed)
    t0 = dt.datetime(2024, 1, 1)
    ts = [t0 + dt.timedelta(seconds=rnd.randrange(0, 3600)) for _ in range(n)]
    return pa.table(
        {
            "p": pa.array([rnd.randrange(3) for _ in range(n)], pa.int64()),
            "ts": pa.array(ts, pa.timestamp("us")),
            "x": pa.array(
                [
                    rnd.choice([None, rnd.randint(-50, 50)]) if rnd.random() < 0.2 else rnd.randint(-50, 50)
                    for _ in range(n)
                ],
                pa.int64(),
            ),
            "rid": pa.array(range(n)),
        }
    )


@pytest.mark.parametrize("seed", range(5))
def test_risingwave_queries_on_random_data_match_duckdb(seed):
    """All the article's calls on made-up data with distinct timestamps (so ROWS frames and lead are
    deterministic in both engines), NULL values and three partitions."""
    t = random_stream(seed)
    # distinct timestamps per partition: ties would make ROWS frames engine-dependent
    keys = list(zip(t.column("p").to_pylist(), t.column("ts").to_pylist()))
    if len(set(keys)) != len(keys):
        pytest.skip("tied timestamps")
    calls = {
        "price_diff": (
            "x - lag(x) OVER (PARTITION BY p ORDER BY ts) AS price_diff",
            "x - lag(x) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST)",
        ),
        "avg10": (
            "avg(x) OVER (PARTITION BY p ORDER BY ts ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING) AS avg10",
            "avg(x) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST "
            "ROWS BETWEEN 10 PRECEDING AND 1 PRECEDING)",
        ),
        "s1": (
            "sum(x) OVER (PARTITION BY p ORDER BY ts ROWS 1 PRECEDING) AS s1",
            "sum(x) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST ROWS 1 PRECEDING)",
        ),
        "s2": (
            "sum(x) OVER (PARTITION BY p ORDER BY ts ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) AS s2",
            "sum(x) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST "
            "ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING)",
        ),
        "lead": (
            "lead(x, 1) OVER (PARTITION BY p ORDER BY ts) AS lead",
            "lead(x, 1) OVER (PARTITION BY p ORDER BY ts ASC NULLS FIRST)",
        ),
    }
    out = evaluate(t, *(ours for ours, _ in calls.values()))
    for name, (_, theirs_sql) in calls.items():
        ours = out.column(name).to_pylist()
        theirs = duck(t, theirs_sql)
        assert all(same(a, b) for a, b in zip(ours, theirs)), (name, ours, theirs)
