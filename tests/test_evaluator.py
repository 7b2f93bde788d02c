"""The batch evaluator's contract: input and output types, column order, shared sorting,
expressions over window calls. Values are checked against DuckDB."""

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import overwindow
from overwindow.errors import WindowSpecError
from overwindow.physical import sorting


def _duck(table: pa.Table, select: str) -> pd.DataFrame:
    con = duckdb.connect()
    con.execute("SET threads=1")
    con.register("t", table)
    return con.execute(f"SELECT {select} FROM t ORDER BY rid").df()


@pytest.fixture
def table():
    rng = np.random.default_rng(7)
    n = 200
    return pa.table(
        {
            "rid": np.arange(n),
            "k": rng.integers(0, 5, n),
            "t": rng.integers(0, 40, n),
            "x": rng.normal(size=n).round(3),
        }
    )


def test_pandas_in_pandas_out_keeps_columns_and_order(table):
    df = table.to_pandas().sample(frac=1, random_state=1)
    out = overwindow.evaluate(
        df, "sum(x) OVER (PARTITION BY k ORDER BY t, rid) AS s", "row_number() OVER (ORDER BY rid) AS rn"
    )
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["rid", "k", "t", "x", "s", "rn"]
    assert out.index.equals(df.index)
    pd.testing.assert_frame_equal(out[["rid", "k", "t", "x"]], df)
    expected = _duck(table, "rid, sum(x) OVER (PARTITION BY k ORDER BY t, rid) AS s").set_index("rid")["s"]
    np.testing.assert_allclose(out["s"].to_numpy(), expected.loc[out["rid"]].to_numpy(), rtol=1e-12)
    assert out["rn"].tolist() == (out["rid"] + 1).tolist()


def test_arrow_in_arrow_out(table):
    out = overwindow.evaluate(table, "lag(x, 2, 0.0) OVER (PARTITION BY k ORDER BY t, rid) AS l")
    assert isinstance(out, pa.Table)
    assert out.column_names == table.column_names + ["l"]
    expected = _duck(table, "lag(x, 2, 0.0) OVER (PARTITION BY k ORDER BY t, rid) AS l")["l"]
    np.testing.assert_array_equal(out["l"].to_numpy(), expected.to_numpy())


def test_expression_over_window_calls(table):
    out = overwindow.evaluate(
        table,
        "x - lag(x) OVER (PARTITION BY k ORDER BY t, rid) AS d",
        "2 * avg(x) OVER (PARTITION BY k) + min(x) OVER (PARTITION BY k) AS e",
    )
    exp = _duck(
        table,
        "x - lag(x) OVER (PARTITION BY k ORDER BY t, rid) AS d, "
        "2 * avg(x) OVER (PARTITION BY k) + min(x) OVER (PARTITION BY k) AS e",
    )
    np.testing.assert_allclose(
        out["d"].to_numpy(zero_copy_only=False).astype(float), exp["d"].to_numpy(dtype=float), rtol=1e-12
    )
    np.testing.assert_allclose(out["e"].to_numpy(), exp["e"].to_numpy(), rtol=1e-12)


def test_calls_with_the_same_window_share_one_sort(table, monkeypatch):
    built = []
    original = sorting.Layout.build

    def counting(*a, **kw):
        built.append(1)
        return original(*a, **kw)

    monkeypatch.setattr(sorting.Layout, "build", staticmethod(counting))
    overwindow.evaluate(
        table,
        "sum(x) OVER (PARTITION BY k ORDER BY t) AS a",
        "max(x) OVER (PARTITION BY k ORDER BY t) AS b",
        "rank() OVER (PARTITION BY k ORDER BY t) AS c",
        "min(x) OVER (ORDER BY t) AS d",
    )
    assert len(built) == 2


def test_window_call_objects_and_sql_text_agree(table):
    call = overwindow.parse_window("avg(x) OVER (PARTITION BY k ORDER BY t ROWS 3 PRECEDING) AS a").calls[0]
    by_text = overwindow.evaluate(table, str(call))
    by_object = overwindow.evaluate(table, call)
    assert by_text.equals(by_object)


def test_alias_clashing_with_an_input_column_is_refused(table):
    with pytest.raises(WindowSpecError, match="already exists"):
        overwindow.evaluate(table, "sum(x) OVER () AS x")


def test_unknown_column_is_named(table):
    with pytest.raises(WindowSpecError, match="`nope` does not exist"):
        overwindow.evaluate(table, "sum(nope) OVER () AS s")


def test_empty_input():
    t = pa.table({"k": pa.array([], pa.int64()), "x": pa.array([], pa.float64())})
    out = overwindow.evaluate(t, "sum(x) OVER (PARTITION BY k ORDER BY x) AS s", "median(x) OVER () AS m")
    assert out.num_rows == 0 and out.column_names == ["k", "x", "s", "m"]


def test_first_and_last_value_take_spark_s_ignore_nulls_flag():
    """``first_value(x, true)`` is Spark's spelling of IGNORE NULLS (the SQL reader refused a second
    argument); DuckDB's ``IGNORE NULLS`` is the oracle."""
    import duckdb

    t = pa.table({"t": [1, 2, 3, 4, 5], "x": [None, 2.0, None, 4.0, None]})
    got = overwindow.evaluate(
        t,
        "first_value(x, true) OVER (ORDER BY t) AS f",
        "last_value(x, true) OVER (ORDER BY t) AS l",
        "first_value(x, false) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS g",
    )
    want = (
        duckdb.connect()
        .execute(
            "SELECT first_value(x IGNORE NULLS) OVER (ORDER BY t), "
            "last_value(x IGNORE NULLS) OVER (ORDER BY t), "
            "first_value(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t ORDER BY t"
        )
        .fetchall()
    )
    assert list(zip(*(got[c].to_pylist() for c in ("f", "l", "g")))) == want


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize(
    "unit,frame,before,after",
    [
        ("s", "INTERVAL '36' HOUR PRECEDING AND 1 FOLLOWING", 129_600, 86_400),
        ("s", "CURRENT ROW AND INTERVAL '2' DAY FOLLOWING", 0, 172_800),
        ("us", "1.5 PRECEDING AND INTERVAL '0 00:00:02' DAY TO SECOND FOLLOWING", 1_500_000, 2_000_000),
    ],
)
def test_range_offsets_over_interval_keys(unit, frame, before, after, desc):
    """RANGE over a day-time interval ORDER BY key (INTERVAL DAY in seconds, DAY TO SECOND in
    microseconds): an interval offset, or a number of the key's last field (days, seconds), counts
    the rows the SQL definition puts in each frame."""
    rng = np.random.default_rng(7)
    step = 86_400 if unit == "s" else 500_000
    ticks = [None if rng.random() < 0.1 else int(rng.integers(-6, 7)) * step for _ in range(80)]
    t = pa.table({"k": pa.array(ticks, pa.duration(unit)), "rid": pa.array(range(80), pa.int64())})
    order = "k DESC" if desc else "k"
    got = overwindow.evaluate(t, f"count(*) OVER (ORDER BY {order} RANGE BETWEEN {frame}) AS c")
    lo, hi = (-after, before) if desc else (-before, after)  # the frame's reach, in the key's unit
    nulls = sum(x is None for x in ticks)  # a NULL key's frame: its NULL peers
    inside = [[x is not None and v is not None and v + lo <= x <= v + hi for x in ticks] for v in ticks]
    want = [nulls if v is None else sum(row) for v, row in zip(ticks, inside)]
    assert got.sort_by("rid")["c"].to_pylist() == want
